//! `cublas<t>geam` and `cublas<t>dgmm` against references: every type and
//! transpose, host and device scalars, `beta == 0` with NaN in B (not
//! read), in-place forms, `incx` 0 and negative, and the argument checks.

mod common;
use common::data::{op_at, T};
use common::{env, Rng};
use num_complex::Complex64 as C64;
use std::ffi::c_void;

type P = *const c_void;
type H = *mut c_void;
type Geam = unsafe extern "C" fn(H, i32, i32, i32, i32, P, P, i32, P, P, i32, H, i32) -> i32;
type Dgmm = unsafe extern "C" fn(H, i32, i32, i32, P, i32, P, i32, H, i32) -> i32;

const TYPES: [(T, &str); 4] = [(T::S, "S"), (T::D, "D"), (T::C, "C"), (T::Z, "Z")];
const INVALID: i32 = 7;

fn scalar(t: T, v: C64, device: bool, keep: &mut Vec<Vec<u8>>) -> P {
    let bytes = t.encode(&[v]);
    if device {
        env().upload(&bytes) as P
    } else {
        keep.push(bytes);
        keep.last().map(|b| b.as_ptr().cast()).unwrap_or(std::ptr::null())
    }
}

#[test]
fn geam_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let mut seed = 7000;
    let (m, n) = (7usize, 5usize);
    for (t, p) in TYPES {
        let geam = e.blas.f::<Geam>(&format!("cublas{p}geam"));
        let ops: &[i32] = if t.complex() { &[0, 1, 2] } else { &[0, 1] };
        for &ta in ops {
            for &tb in ops {
                for device in [false, true] {
                    for beta_zero in [false, true] {
                        seed += 1;
                        let mut rng = Rng::new(seed);
                        e.pointer_mode(h, device);
                        let rows = |op: i32| if op == 0 { m } else { n };
                        let cols = |op: i32| if op == 0 { n } else { m };
                        let (lda, ldb, ldc) = (rows(ta) + 2, rows(tb) + 1, m + 3);
                        let a = t.random(lda * cols(ta), &mut rng);
                        let mut b = t.random(ldb * cols(tb), &mut rng);
                        if beta_zero {
                            b.iter_mut().for_each(|v| *v = C64::new(f64::NAN, f64::NAN));
                        }
                        let c0 = t.random(ldc * n, &mut rng);
                        let alpha = t.round(C64::new(1.5, if t.complex() { -0.25 } else { 0.0 }));
                        let beta =
                            if beta_zero { C64::new(0.0, 0.0) } else { t.round(C64::new(-0.5, if t.complex() { 2.0 } else { 0.0 })) };
                        let mut keep = Vec::new();
                        let (pa, pb) = (scalar(t, alpha, device, &mut keep), scalar(t, beta, device, &mut keep));
                        let (da, db, dc) = (e.upload(&t.encode(&a)), e.upload(&t.encode(&b)), e.upload(&t.encode(&c0)));
                        let (mi, ni) = (m as i32, n as i32);
                        let st = unsafe { geam(h, ta, tb, mi, ni, pa, da as P, lda as i32, pb, db as P, ldb as i32, dc as H, ldc as i32) };
                        e.sync();
                        let got = t.decode(&e.download::<u8>(dc, c0.len() * t.size()));
                        'check: for j in 0..n {
                            for i in 0..ldc {
                                let idx = i + j * ldc;
                                let want = if i < m {
                                    let bv = if beta_zero { C64::new(0.0, 0.0) } else { beta * op_at(&b, ldb, tb, i, j) };
                                    alpha * op_at(&a, lda, ta, i, j) + bv
                                } else {
                                    c0[idx]
                                };
                                let tol = 4.0 * t.eps() * (want.norm() + 1.0);
                                if st != 0 || (got[idx] - want).norm() > tol || got[idx].re.is_nan() {
                                    failures.push(format!(
                                        "{p}geam ta={ta} tb={tb} device={device} beta0={beta_zero}: status {st}, C[{i},{j}] = {}, want {want}",
                                        got[idx]
                                    ));
                                    break 'check;
                                }
                            }
                        }
                    }
                }
            }
        }
        // In place: C = A (untransposed, lda = ldc), B transposed.
        e.pointer_mode(h, false);
        let mut rng = Rng::new(seed + 500);
        let ld = m + 1;
        let a = t.random(ld * n, &mut rng);
        let b = t.random(n * m, &mut rng);
        let (da, db) = (e.upload(&t.encode(&a)), e.upload(&t.encode(&b)));
        let mut keep = Vec::new();
        let (one, two) = (scalar(t, C64::new(1.0, 0.0), false, &mut keep), scalar(t, C64::new(2.0, 0.0), false, &mut keep));
        let st = unsafe { geam(h, 0, 1, m as i32, n as i32, one, da as P, ld as i32, two, db as P, n as i32, da as H, ld as i32) };
        e.sync();
        let got = t.decode(&e.download::<u8>(da, a.len() * t.size()));
        for j in 0..n {
            for i in 0..m {
                let want = a[i + j * ld] + C64::new(2.0, 0.0) * b[j + i * n];
                if st != 0 || (got[i + j * ld] - want).norm() > 4.0 * t.eps() * (want.norm() + 1.0) {
                    failures.push(format!("{p}geam in place: status {st}, C[{i},{j}] = {}, want {want}", got[i + j * ld]));
                }
            }
        }
        // Not in place: C = A transposed overlaps A.
        let st = unsafe { geam(h, 1, 0, n as i32, n as i32, one, da as P, ld as i32, two, db as P, n as i32, da as H, ld as i32) };
        if st != INVALID {
            failures.push(format!("{p}geam with C = A transposed: status {st}, want CUBLAS_STATUS_INVALID_VALUE"));
        }
        // Checks: ldc < m, bad transa.
        let st = unsafe { geam(h, 0, 0, m as i32, n as i32, one, da as P, ld as i32, two, da as P, ld as i32, db as H, m as i32 - 1) };
        let st2 = unsafe { geam(h, 7, 0, m as i32, n as i32, one, da as P, ld as i32, two, da as P, ld as i32, db as H, ld as i32) };
        if st != INVALID || st2 != INVALID {
            failures.push(format!("{p}geam checks: ldc < m gave {st}, transa = 7 gave {st2}"));
        }
    }
    e.destroy(h);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(10)].join("\n"));
}

#[test]
fn dgmm_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let (m, n) = (6usize, 4usize);
    for (k, (t, p)) in TYPES.into_iter().enumerate() {
        let dgmm = e.blas.f::<Dgmm>(&format!("cublas{p}dgmm"));
        for side in [0, 1] {
            for incx in [1i64, 2, -1, 0] {
                for in_place in [false, true] {
                    let mut rng = Rng::new(8000 + k as u64 * 100 + side as u64 * 10 + (incx + 2) as u64 + in_place as u64 * 50);
                    let (lda, ldc) = (m + 2, if in_place { m + 2 } else { m + 1 });
                    // CUBLAS_SIDE_LEFT (0): diag(x) A, x of m elements.
                    let len = if side == 0 { m } else { n };
                    let xlen = if incx == 0 { 1 } else { (len - 1) * incx.unsigned_abs() as usize + 1 };
                    let a = t.random(lda * n, &mut rng);
                    let x = t.random(xlen, &mut rng);
                    let c0 = t.random(ldc * n, &mut rng);
                    let (da, dx) = (e.upload(&t.encode(&a)), e.upload(&t.encode(&x)));
                    let dc = if in_place { da } else { e.upload(&t.encode(&c0)) };
                    let st = unsafe { dgmm(h, side, m as i32, n as i32, da as P, lda as i32, dx as P, incx as i32, dc as H, ldc as i32) };
                    e.sync();
                    let got = t.decode(&e.download::<u8>(dc, ldc * n * t.size()));
                    let xi = |i: usize| match incx {
                        0 => x[0],
                        d if d > 0 => x[i * d as usize],
                        d => x[(len - 1 - i) * d.unsigned_abs() as usize],
                    };
                    'check: for j in 0..n {
                        for i in 0..ldc {
                            let want = if i < m {
                                a[i + j * lda] * xi(if side == 0 { i } else { j })
                            } else if in_place {
                                a[i + j * lda]
                            } else {
                                c0[i + j * ldc]
                            };
                            if st != 0 || (got[i + j * ldc] - want).norm() > 2.0 * t.eps() * want.norm() {
                                failures.push(format!(
                                    "{p}dgmm side={side} incx={incx} in_place={in_place}: status {st}, C[{i},{j}] = {}, want {want}",
                                    got[i + j * ldc]
                                ));
                                break 'check;
                            }
                        }
                    }
                }
            }
        }
        // Checks: bad side, lda < m.
        let d = e.upload(&t.encode(&vec![C64::new(1.0, 0.0); m * n]));
        let st = unsafe { dgmm(h, 2, m as i32, n as i32, d as P, m as i32, d as P, 1, d as H, m as i32) };
        let st2 = unsafe { dgmm(h, 0, m as i32, n as i32, d as P, m as i32 - 1, d as P, 1, d as H, m as i32) };
        if st != INVALID || st2 != INVALID {
            failures.push(format!("{p}dgmm checks: side = 2 gave {st}, lda < m gave {st2}"));
        }
    }
    e.destroy(h);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(10)].join("\n"));
}
