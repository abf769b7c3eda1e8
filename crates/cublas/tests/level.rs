//! Level-1 and level-2 functions and the triangular solves against
//! straightforward references, for each type, positive and negative
//! increments, host and device pointer modes; stream ordering and pointer
//! mode timing.

mod common;
use common::data::{op_at, T};
use common::{env, Rng};
use num_complex::Complex64 as C64;
use std::ffi::c_void;

type P = *const c_void;
type H = *mut c_void;

const TYPES: [(T, &str); 4] = [(T::S, "S"), (T::D, "D"), (T::C, "C"), (T::Z, "Z")];

fn close(got: C64, want: C64, tol: f64) -> bool {
    (got - want).norm() <= tol
}

/// Element i of a BLAS vector of n elements with increment inc.
fn vidx(i: usize, n: usize, inc: i64) -> usize {
    if inc >= 0 {
        i * inc as usize
    } else {
        (n - 1 - i) * inc.unsigned_abs() as usize
    }
}

fn vlen(n: usize, inc: i64) -> usize {
    (n - 1) * inc.unsigned_abs() as usize + 1
}

/// A scalar argument under a pointer mode: a host pointer, or a copy in
/// device memory.
fn scalar(t: T, v: C64, device: bool, keep: &mut Vec<Vec<u8>>) -> P {
    let e = env();
    let bytes = t.encode(&[v]);
    if device {
        e.upload(&bytes) as P
    } else {
        keep.push(bytes);
        keep.last().map(|b| b.as_ptr().cast()).unwrap_or(std::ptr::null())
    }
}

/// A result location under a pointer mode, and how to read it after the
/// call.
struct Result {
    host: Vec<u8>,
    dev: u64,
}
impl Result {
    fn new(bytes: usize, device: bool) -> Result {
        Result { host: vec![0xAA; bytes], dev: if device { env().upload(&vec![0xAAu8; bytes]) } else { 0 } }
    }
    fn ptr(&mut self) -> H {
        if self.dev != 0 {
            self.dev as H
        } else {
            self.host.as_mut_ptr().cast()
        }
    }
    fn bytes(&self) -> Vec<u8> {
        if self.dev != 0 {
            env().sync();
            env().download(self.dev, self.host.len())
        } else {
            self.host.clone()
        }
    }
}

#[test]
fn level1_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let mut seed = 0;
    for (t, p) in TYPES {
        let rt = match t {
            T::C => T::S,
            T::Z => T::D,
            x => x,
        };
        let u = t.eps();
        for n in [1usize, 17, 100] {
            for (incx, incy) in [(1i64, 1i64), (2, 3), (-2, 1), (3, -1)] {
                for device in [false, true] {
                    seed += 1;
                    let mut rng = Rng::new(seed);
                    e.pointer_mode(h, device);
                    let x = t.random(vlen(n, incx), &mut rng);
                    let y = t.random(vlen(n, incy), &mut rng);
                    let dx = e.upload(&t.encode(&x));
                    let dy = e.upload(&t.encode(&y));
                    let alpha = t.round(C64::new(0.625, if t.complex() { -0.375 } else { 0.0 }));
                    let mut keep = Vec::new();
                    let pa = scalar(t, alpha, device, &mut keep);
                    let xs: Vec<C64> = (0..n).map(|i| x[vidx(i, n, incx)]).collect();
                    let ys: Vec<C64> = (0..n).map(|i| y[vidx(i, n, incy)]).collect();
                    let tag = format!("{p} n={n} incx={incx} incy={incy} device={device}");
                    unsafe {
                        // dot (and dotc for complex)
                        let dots: Vec<(String, bool)> = if t.complex() {
                            vec![(format!("cublas{p}dotu_v2"), false), (format!("cublas{p}dotc_v2"), true)]
                        } else {
                            vec![(format!("cublas{p}dot_v2"), false)]
                        };
                        for (f, conj) in dots {
                            let mut r = Result::new(t.size(), device);
                            let st = e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, P, i32, H) -> i32>(&f)(
                                h,
                                n as i32,
                                dx as P,
                                incx as i32,
                                dy as P,
                                incy as i32,
                                r.ptr(),
                            );
                            let want: C64 = xs.iter().zip(&ys).map(|(a, b)| if conj { a.conj() * b } else { a * b }).sum();
                            let mag: f64 = xs.iter().zip(&ys).map(|(a, b)| a.norm() * b.norm()).sum();
                            let got = t.decode(&r.bytes())[0];
                            if st != 0 || !close(got, want, 2.0 * (n as f64 + 2.0) * u * mag) {
                                failures.push(format!("{f} {tag}: status {st}, got {got}, want {want}"));
                            }
                        }
                        // nrm2, asum: real results
                        for (f, want) in [
                            (
                                if t.complex() {
                                    format!("cublas{}nrm2_v2", if t == T::C { "Sc" } else { "Dz" })
                                } else {
                                    format!("cublas{p}nrm2_v2")
                                },
                                xs.iter().map(|v| v.norm_sqr()).sum::<f64>().sqrt(),
                            ),
                            (
                                if t.complex() {
                                    format!("cublas{}asum_v2", if t == T::C { "Sc" } else { "Dz" })
                                } else {
                                    format!("cublas{p}asum_v2")
                                },
                                xs.iter().map(|v| v.re.abs() + v.im.abs()).sum::<f64>(),
                            ),
                        ] {
                            let mut r = Result::new(rt.size(), device);
                            let st =
                                e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, H) -> i32>(&f)(h, n as i32, dx as P, incx as i32, r.ptr());
                            let got = rt.decode(&r.bytes())[0];
                            // BLAS: a non-positive increment gives 0.
                            let want = if incx <= 0 { 0.0 } else { want };
                            if st != 0 || !close(got, C64::new(want, 0.0), 2.0 * (n as f64 + 2.0) * u * want.abs() + 1e-300) {
                                failures.push(format!("{f} {tag}: status {st}, got {got}, want {want}"));
                            }
                        }
                        // iamax / iamin (1-based, first of equals), also _64
                        for (f, min) in
                            [(format!("cublasI{}amax_v2", p.to_lowercase()), false), (format!("cublasI{}amin_v2", p.to_lowercase()), true)]
                        {
                            let mag: Vec<f64> = xs.iter().map(|v| v.re.abs() + v.im.abs()).collect();
                            let mut best = 0;
                            for i in 1..n {
                                if (min && mag[i] < mag[best]) || (!min && mag[i] > mag[best]) {
                                    best = i;
                                }
                            }
                            let want = if incx <= 0 { 0 } else { best as i64 + 1 };
                            let mut r = Result::new(4, device);
                            let st =
                                e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, H) -> i32>(&f)(h, n as i32, dx as P, incx as i32, r.ptr());
                            let got = i32::from_le_bytes(r.bytes()[..4].try_into().unwrap()) as i64;
                            let mut r64 = Result::new(8, device);
                            let st64 = e.blas.f::<unsafe extern "C" fn(H, i64, P, i64, H) -> i32>(&format!("{f}_64"))(
                                h,
                                n as i64,
                                dx as P,
                                incx,
                                r64.ptr(),
                            );
                            let got64 = i64::from_le_bytes(r64.bytes()[..8].try_into().unwrap());
                            if st != 0 || st64 != 0 || got != want || got64 != want {
                                failures.push(format!("{f} {tag}: status {st}/{st64}, got {got}/{got64}, want {want}"));
                            }
                        }
                        // axpy on a copy of y
                        let dy2 = e.upload(&t.encode(&y));
                        let st = e.blas.f::<unsafe extern "C" fn(H, i32, P, P, i32, H, i32) -> i32>(&format!("cublas{p}axpy_v2"))(
                            h,
                            n as i32,
                            pa,
                            dx as P,
                            incx as i32,
                            dy2 as H,
                            incy as i32,
                        );
                        e.sync();
                        let got = t.decode(&e.download::<u8>(dy2, y.len() * t.size()));
                        for i in 0..n {
                            let want = ys[i] + alpha * xs[i];
                            if st != 0 || !close(got[vidx(i, n, incy)], want, 4.0 * u * (ys[i].norm() + (alpha * xs[i]).norm())) {
                                failures.push(format!("axpy {tag}: status {st}, element {i} {} want {want}", got[vidx(i, n, incy)]));
                                break;
                            }
                        }
                        // copy and swap
                        let dy3 = e.upload(&t.encode(&y));
                        let st = e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, H, i32) -> i32>(&format!("cublas{p}copy_v2"))(
                            h,
                            n as i32,
                            dx as P,
                            incx as i32,
                            dy3 as H,
                            incy as i32,
                        );
                        e.sync();
                        let got = t.decode(&e.download::<u8>(dy3, y.len() * t.size()));
                        if st != 0 || (0..n).any(|i| got[vidx(i, n, incy)] != xs[i]) {
                            failures.push(format!("copy {tag}: status {st}"));
                        }
                        let dx4 = e.upload(&t.encode(&x));
                        let dy4 = e.upload(&t.encode(&y));
                        let st = e.blas.f::<unsafe extern "C" fn(H, i32, H, i32, H, i32) -> i32>(&format!("cublas{p}swap_v2"))(
                            h,
                            n as i32,
                            dx4 as H,
                            incx as i32,
                            dy4 as H,
                            incy as i32,
                        );
                        e.sync();
                        let gx = t.decode(&e.download::<u8>(dx4, x.len() * t.size()));
                        let gy = t.decode(&e.download::<u8>(dy4, y.len() * t.size()));
                        if st != 0 || (0..n).any(|i| gx[vidx(i, n, incx)] != ys[i] || gy[vidx(i, n, incy)] != xs[i]) {
                            failures.push(format!("swap {tag}: status {st}"));
                        }
                        // scal (and the real-scalar complex forms)
                        let mut scals = vec![(format!("cublas{p}scal_v2"), t, alpha)];
                        if t.complex() {
                            scals.push((
                                if t == T::C { "cublasCsscal_v2".into() } else { "cublasZdscal_v2".into() },
                                rt,
                                C64::new(-1.5, 0.0),
                            ));
                        }
                        for (f, at, a) in scals {
                            let mut keep2 = Vec::new();
                            let ps = scalar(at, a, device, &mut keep2);
                            let dx5 = e.upload(&t.encode(&x));
                            let st = e.blas.f::<unsafe extern "C" fn(H, i32, P, H, i32) -> i32>(&f)(h, n as i32, ps, dx5 as H, incx as i32);
                            e.sync();
                            let got = t.decode(&e.download::<u8>(dx5, x.len() * t.size()));
                            for i in 0..n {
                                let want = if incx <= 0 { xs[i] } else { a * xs[i] };
                                if st != 0 || !close(got[vidx(i, n, incx)], want, 4.0 * u * want.norm()) {
                                    failures.push(format!("{f} {tag}: status {st}, element {i}"));
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    e.destroy(h);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(10)].join("\n"));
}

#[test]
fn reductions_of_nothing_give_zero_and_extreme_norms_do_not_overflow() {
    let e = env();
    let h = e.handle();
    unsafe {
        let x = e.upload(&[1e300f64, 1e300, -1e300]);
        let mut r = 0f64;
        assert_eq!(e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, *mut f64) -> i32>("cublasDnrm2_v2")(h, 3, x as P, 1, &mut r), 0);
        assert!((r - 3f64.sqrt() * 1e300).abs() <= 1e286, "{r}");
        let mut r = 5.0f64;
        assert_eq!(e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, *mut f64) -> i32>("cublasDasum_v2")(h, 0, x as P, 1, &mut r), 0);
        assert_eq!(r, 0.0);
        let mut i = 9i32;
        assert_eq!(e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, *mut i32) -> i32>("cublasIdamax_v2")(h, 0, x as P, 1, &mut i), 0);
        assert_eq!(i, 0);
    }
    e.destroy(h);
}

#[test]
fn gemv_and_ger_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let mut seed = 100;
    for (t, p) in TYPES {
        let u = t.eps();
        for trans in [0, 1, 2] {
            for (incx, incy) in [(1i64, 1i64), (2, -3)] {
                for device in [false, true] {
                    for beta_zero in [false, true] {
                        seed += 1;
                        let mut rng = Rng::new(seed);
                        e.pointer_mode(h, device);
                        let (m, n, lda) = (9usize, 6usize, 11usize);
                        let (lx, ly) = if trans == 0 { (n, m) } else { (m, n) };
                        let a = t.random(lda * n, &mut rng);
                        let x = t.random(vlen(lx, incx), &mut rng);
                        let mut y = t.random(vlen(ly, incy), &mut rng);
                        if beta_zero {
                            for i in 0..ly {
                                y[vidx(i, ly, incy)] = C64::new(f64::NAN, 0.0);
                            }
                        }
                        let alpha = t.round(C64::new(1.25, if t.complex() { 0.5 } else { 0.0 }));
                        let beta = if beta_zero { C64::new(0.0, 0.0) } else { t.round(C64::new(-0.75, 0.0)) };
                        let mut keep = Vec::new();
                        let (pa, pb) = (scalar(t, alpha, device, &mut keep), scalar(t, beta, device, &mut keep));
                        let (da, dx, dy) = (e.upload(&t.encode(&a)), e.upload(&t.encode(&x)), e.upload(&t.encode(&y)));
                        let st = unsafe {
                            e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32>(&format!(
                                "cublas{p}gemv_v2"
                            ))(
                                h, trans, m as i32, n as i32, pa, da as P, lda as i32, dx as P, incx as i32, pb, dy as H, incy as i32
                            )
                        };
                        e.sync();
                        let got = t.decode(&e.download::<u8>(dy, y.len() * t.size()));
                        for i in 0..ly {
                            let mut s = C64::new(0.0, 0.0);
                            let mut mag = 0.0;
                            for j in 0..lx {
                                let aij = op_at(&a, lda, trans, i, j);
                                let xj = x[vidx(j, lx, incx)];
                                s += aij * xj;
                                mag += aij.norm() * xj.norm();
                            }
                            let yi = if beta_zero { C64::new(0.0, 0.0) } else { beta * y[vidx(i, ly, incy)] };
                            let want = alpha * s + yi;
                            let tol = 2.0 * (lx as f64 + 4.0) * u * (alpha.norm() * mag + yi.norm());
                            if st != 0 || !close(got[vidx(i, ly, incy)], want, tol) {
                                failures.push(format!("{p}gemv trans={trans} incx={incx} incy={incy} device={device} beta0={beta_zero}: status {st}, y[{i}] = {}, want {want}", got[vidx(i, ly, incy)]));
                                break;
                            }
                        }
                        // ger / geru / gerc
                        let gers: Vec<(String, bool)> = if t.complex() {
                            vec![(format!("cublas{p}geru_v2"), false), (format!("cublas{p}gerc_v2"), true)]
                        } else {
                            vec![(format!("cublas{p}ger_v2"), false)]
                        };
                        for (f, conj) in gers {
                            let (gx, gy) = (t.random(vlen(m, incx), &mut rng), t.random(vlen(n, incy), &mut rng));
                            let (dgx, dgy, da2) = (e.upload(&t.encode(&gx)), e.upload(&t.encode(&gy)), e.upload(&t.encode(&a)));
                            let st = unsafe {
                                e.blas.f::<unsafe extern "C" fn(H, i32, i32, P, P, i32, P, i32, H, i32) -> i32>(&f)(
                                    h,
                                    m as i32,
                                    n as i32,
                                    pa,
                                    dgx as P,
                                    incx as i32,
                                    dgy as P,
                                    incy as i32,
                                    da2 as H,
                                    lda as i32,
                                )
                            };
                            e.sync();
                            let got = t.decode(&e.download::<u8>(da2, a.len() * t.size()));
                            'g: for j in 0..n {
                                for i in 0..lda {
                                    let idx = i + j * lda;
                                    let want = if i < m {
                                        let yj = gy[vidx(j, n, incy)];
                                        a[idx] + alpha * gx[vidx(i, m, incx)] * if conj { yj.conj() } else { yj }
                                    } else {
                                        a[idx]
                                    };
                                    if st != 0 || !close(got[idx], want, 4.0 * u * (a[idx].norm() + 4.0)) {
                                        failures.push(format!(
                                            "{f} incx={incx} incy={incy} device={device}: status {st}, A[{i},{j}] = {}, want {want}",
                                            got[idx]
                                        ));
                                        break 'g;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    e.destroy(h);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(10)].join("\n"));
}

/// A well-conditioned triangular matrix: unit-ish diagonal, small
/// off-diagonal entries.
fn triangular(t: T, n: usize, lda: usize, rng: &mut Rng) -> Vec<C64> {
    let mut a = t.random(lda * n, rng);
    for j in 0..n {
        for i in 0..n {
            if i == j {
                a[i + j * lda] = t.round(C64::new(2.0 + a[i + j * lda].re.abs(), 0.0));
            } else {
                a[i + j * lda] = t.round(a[i + j * lda] * 0.25);
            }
        }
    }
    a
}

#[test]
fn trsm_and_trsm_batched_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let mut seed = 500;
    for (t, p) in TYPES {
        for side in [0, 1] {
            for uplo in [0, 1] {
                for trans in [0, 1, 2] {
                    for diag in [0, 1] {
                        // Small systems, and ones of several diagonal blocks
                        // (the solve splits its rows in halves down to
                        // blocks of 64) with products between them.
                        for (device, batched, m, n) in [
                            (false, false, 7usize, 5usize),
                            (true, false, 7, 5),
                            (false, true, 7, 5),
                            (true, true, 7, 5),
                            (false, false, 80, 72),
                            // Several levels of the recursive split.
                            (false, false, 200, 6),
                            (false, false, 6, 200),
                        ] {
                            seed += 1;
                            let mut rng = Rng::new(seed);
                            e.pointer_mode(h, device);
                            let na = if side == 0 { m } else { n };
                            let (lda, ldb) = (na + 2, m + 1);
                            let count: usize = if batched { 3 } else { 1 };
                            let alpha = t.round(C64::new(1.5, if t.complex() { -0.5 } else { 0.0 }));
                            let mut keep = Vec::new();
                            let pa = scalar(t, alpha, device, &mut keep);
                            let mut problems = Vec::new();
                            let mut dev = Vec::new();
                            for _ in 0..count {
                                let a = triangular(t, na, lda, &mut rng);
                                let b = t.random(ldb * n, &mut rng);
                                dev.push((e.upload(&t.encode(&a)), e.upload(&t.encode(&b))));
                                problems.push((a, b));
                            }
                            let st = unsafe {
                                if batched {
                                    let arr_a = e.upload(&dev.iter().map(|d| d.0).collect::<Vec<u64>>());
                                    let arr_b = e.upload(&dev.iter().map(|d| d.1).collect::<Vec<u64>>());
                                    e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, i32, P, P, i32, H, i32, i32) -> i32>(
                                        &format!("cublas{p}trsmBatched"),
                                    )(
                                        h,
                                        side,
                                        uplo,
                                        trans,
                                        diag,
                                        m as i32,
                                        n as i32,
                                        pa,
                                        arr_a as P,
                                        lda as i32,
                                        arr_b as H,
                                        ldb as i32,
                                        count as i32,
                                    )
                                } else {
                                    e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i64, i64, P, P, i64, H, i64) -> i32>(&format!(
                                        "cublas{p}trsm_v2_64"
                                    ))(
                                        h,
                                        side,
                                        uplo,
                                        trans,
                                        diag,
                                        m as i64,
                                        n as i64,
                                        pa,
                                        dev[0].0 as P,
                                        lda as i64,
                                        dev[0].1 as H,
                                        ldb as i64,
                                    )
                                }
                            };
                            e.sync();
                            for (bi, (a, b)) in problems.iter().enumerate() {
                                let x = t.decode(&e.download::<u8>(dev[bi].1, b.len() * t.size()));
                                // op(A) as the solve sees it: the triangle and the diagonal.
                                let opa = |i: usize, j: usize| -> C64 {
                                    let (si, sj) = if trans == 0 { (i, j) } else { (j, i) };
                                    let stored_lower = si >= sj;
                                    if i == j && diag == 1 {
                                        return C64::new(1.0, 0.0);
                                    }
                                    if si != sj && stored_lower != (uplo == 0) {
                                        return C64::new(0.0, 0.0);
                                    }
                                    op_at(a, lda, trans, i, j)
                                };
                                // Check the residual: op(A) X (or X op(A)) = alpha B.
                                for j in 0..n {
                                    for i in 0..m {
                                        let mut s = C64::new(0.0, 0.0);
                                        let mut mag = 0.0;
                                        if side == 0 {
                                            for p2 in 0..m {
                                                s += opa(i, p2) * x[p2 + j * ldb];
                                                mag += (opa(i, p2) * x[p2 + j * ldb]).norm();
                                            }
                                        } else {
                                            for p2 in 0..n {
                                                s += x[i + p2 * ldb] * opa(p2, j);
                                                mag += (x[i + p2 * ldb] * opa(p2, j)).norm();
                                            }
                                        }
                                        let want = alpha * b[i + j * ldb];
                                        // A backward-stable solve's residual: a few
                                        // ulps per term of the row.
                                        let tol = 8.0 * (na as f64 + 2.0) * t.eps() * (mag + want.norm());
                                        if st != 0 || !close(s, want, tol) {
                                            failures.push(format!("{p}trsm side={side} uplo={uplo} trans={trans} diag={diag} device={device} batched={batched}: status {st}, residual at [{i},{j}] {s} vs {want}"));
                                        }
                                    }
                                    // The row of padding stays.
                                    if x[m + j * ldb] != b[m + j * ldb] {
                                        failures.push(format!("{p}trsm: padding changed"));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    e.destroy(h);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(10)].join("\n"));
}

type HostFn = unsafe extern "C" fn(*mut c_void);

unsafe extern "C" fn slow_write(p: *mut c_void) {
    // Runs on the stream before the BLAS call: it must see A as written
    // here, and alpha (device mode) as written here.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let args = &*(p as *const (u64, u64));
    *(args.0 as *mut f32) = 2.0;
    *(args.1 as *mut f32) = 3.0;
}

#[test]
fn work_is_ordered_on_the_handle_stream() {
    let e = env();
    let h = e.handle();
    unsafe {
        let mut stream: H = std::ptr::null_mut();
        assert_eq!(e.cuda.f::<unsafe extern "C" fn(*mut H, u32) -> i32>("cuStreamCreate")(&mut stream, 1), 0);
        assert_eq!(e.blas.f::<unsafe extern "C" fn(H, H) -> i32>("cublasSetStream_v2")(h, stream), 0);
        let mut got: H = std::ptr::null_mut();
        assert_eq!(e.blas.f::<unsafe extern "C" fn(H, *mut H) -> i32>("cublasGetStream_v2")(h, &mut got), 0);
        assert_eq!(got, stream);
        // 1x1 products: C = alpha * A * B.
        let a = e.upload(&[1.0f32]);
        let b = e.upload(&[5.0f32]);
        let c = e.upload(&[0.0f32]);
        let alpha_dev = e.upload(&[1.0f32]);
        let args = Box::leak(Box::new((a, alpha_dev)));
        let launch = e.cuda.f::<unsafe extern "C" fn(H, HostFn, *mut c_void) -> i32>("cuLaunchHostFunc");
        assert_eq!(launch(stream, slow_write, (args as *mut (u64, u64)).cast()), 0);
        // Device mode: alpha is read in stream order (3, written by the
        // host function), as is A (2).
        e.pointer_mode(h, true);
        let beta_dev = e.upload(&[0.0f32]);
        let sgemm = e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32>("cublasSgemm_v2");
        assert_eq!(sgemm(h, 0, 0, 1, 1, 1, alpha_dev as P, a as P, 1, b as P, 1, beta_dev as P, c as H, 1), 0);
        assert_eq!(e.cuda.f::<unsafe extern "C" fn(H) -> i32>("cuStreamSynchronize")(stream), 0);
        assert_eq!(e.download::<f32>(c, 1)[0], 30.0);
        // Host mode: alpha is read when the call is made, even though the
        // product runs later.
        *(a as *mut f32) = 1.0;
        *(alpha_dev as *mut f32) = 1.0;
        e.pointer_mode(h, false);
        let mut alpha_host = 4.0f32;
        let beta_host = 0.0f32;
        assert_eq!(launch(stream, slow_write, (args as *mut (u64, u64)).cast()), 0);
        assert_eq!(
            sgemm(h, 0, 0, 1, 1, 1, (&alpha_host as *const f32).cast(), a as P, 1, b as P, 1, (&beta_host as *const f32).cast(), c as H, 1),
            0
        );
        alpha_host = 100.0;
        let _ = alpha_host;
        // Not yet run: the host function still sleeps.
        assert_eq!(e.download::<f32>(c, 1)[0], 30.0, "the product ran before the work queued ahead of it");
        assert_eq!(e.cuda.f::<unsafe extern "C" fn(H) -> i32>("cuStreamSynchronize")(stream), 0);
        assert_eq!(e.download::<f32>(c, 1)[0], 4.0 * 2.0 * 5.0);
        // A host-mode reduction result is there when the call returns.
        assert_eq!(launch(stream, slow_write, (args as *mut (u64, u64)).cast()), 0);
        let mut dot = 0f32;
        assert_eq!(
            e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, P, i32, *mut f32) -> i32>("cublasSdot_v2")(
                h, 1, a as P, 1, b as P, 1, &mut dot
            ),
            0
        );
        assert_eq!(dot, 10.0);
        e.destroy(h);
        assert_eq!(e.cuda.f::<unsafe extern "C" fn(H) -> i32>("cuStreamDestroy_v2")(stream), 0);
    }
}

/// The `...Ex` level-1 functions (cuBLAS's mixed-precision table: 16-bit
/// vectors execute in f32) against an f64 reference, and the type
/// combinations outside the table.
#[test]
fn ex_functions_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let mut seed = 500;
    // (vector type, execution type, norm type)
    let types = [(T::H, T::S, T::H), (T::BF, T::S, T::BF), (T::S, T::S, T::S), (T::D, T::D, T::D), (T::C, T::C, T::S), (T::Z, T::Z, T::D)];
    type DotEx = unsafe extern "C" fn(H, i32, P, i32, i32, P, i32, i32, H, i32, i32) -> i32;
    type AxpyEx = unsafe extern "C" fn(H, i32, P, i32, P, i32, i32, H, i32, i32, i32) -> i32;
    type Nrm2Ex = unsafe extern "C" fn(H, i32, P, i32, i32, H, i32, i32) -> i32;
    type ScalEx = unsafe extern "C" fn(H, i32, P, i32, H, i32, i32, i32) -> i32;
    let dot: DotEx = e.blas.f("cublasDotEx");
    let dotc: DotEx = e.blas.f("cublasDotcEx");
    let axpy: AxpyEx = e.blas.f("cublasAxpyEx");
    let nrm2: Nrm2Ex = e.blas.f("cublasNrm2Ex");
    let scal: ScalEx = e.blas.f("cublasScalEx");
    for (t, ex, rt) in types {
        for n in [1usize, 33] {
            for (incx, incy) in [(1i64, 1i64), (2, -1)] {
                for device in [false, true] {
                    seed += 1;
                    let mut rng = Rng::new(seed);
                    e.pointer_mode(h, device);
                    let x = t.random(vlen(n, incx), &mut rng);
                    let y = t.random(vlen(n, incy), &mut rng);
                    let (dx, dy) = (e.upload(&t.encode(&x)), e.upload(&t.encode(&y)));
                    let xs: Vec<C64> = (0..n).map(|i| x[vidx(i, n, incx)]).collect();
                    let ys: Vec<C64> = (0..n).map(|i| y[vidx(i, n, incy)]).collect();
                    let alpha = ex.round(C64::new(0.625, if ex.complex() { -0.375 } else { 0.0 }));
                    let mut keep = Vec::new();
                    let pa = scalar(ex, alpha, device, &mut keep);
                    let tag = format!("{t:?} n={n} incx={incx} incy={incy} device={device}");
                    let u = 2f64.powi(-24);
                    unsafe {
                        // dot and dotc
                        for (f, conj) in [(dot, false), (dotc, true)] {
                            let mut r = Result::new(t.size(), device);
                            let st = f(
                                h,
                                n as i32,
                                dx as P,
                                t.cuda(),
                                incx as i32,
                                dy as P,
                                t.cuda(),
                                incy as i32,
                                r.ptr(),
                                t.cuda(),
                                ex.cuda(),
                            );
                            let want: C64 = xs.iter().zip(&ys).map(|(a, b)| if conj { a.conj() * b } else { a * b }).sum();
                            let mag: f64 = xs.iter().zip(&ys).map(|(a, b)| a.norm() * b.norm()).sum();
                            let got = t.decode(&r.bytes())[0];
                            if st != 0 || !close(got, want, 2.0 * t.eps() * want.norm() + (n as f64 + 2.0) * u * mag + 1e-300) {
                                failures.push(format!("{tag} dot(conj={conj}): status {st}, {got} want {want}"));
                            }
                        }
                        // nrm2
                        let mut r = Result::new(rt.size(), device);
                        let st = nrm2(h, n as i32, dx as P, t.cuda(), incx as i32, r.ptr(), rt.cuda(), ex.cuda());
                        let want = xs.iter().map(|a| a.norm_sqr()).sum::<f64>().sqrt();
                        let got = rt.decode(&r.bytes())[0];
                        if st != 0 || !close(got, C64::new(want, 0.0), 2.0 * rt.eps() * want + 4.0 * u * want + 1e-300) {
                            failures.push(format!("{tag} nrm2: status {st}, {got} want {want}"));
                        }
                        // axpy: y = alpha x + y, then scal: x = alpha x.
                        let st =
                            axpy(h, n as i32, pa, ex.cuda(), dx as P, t.cuda(), incx as i32, dy as H, t.cuda(), incy as i32, ex.cuda());
                        let st2 = scal(h, n as i32, pa, ex.cuda(), dx as H, t.cuda(), incx as i32, ex.cuda());
                        e.sync();
                        let gy = t.decode(&e.download::<u8>(dy, y.len() * t.size()));
                        let gx = t.decode(&e.download::<u8>(dx, x.len() * t.size()));
                        if st != 0 || st2 != 0 {
                            failures.push(format!("{tag} axpy/scal: status {st}/{st2}"));
                        }
                        for i in 0..n {
                            let wy = alpha * xs[i] + ys[i];
                            let wx = alpha * xs[i];
                            let (py, px) = (vidx(i, n, incy), vidx(i, n, incx));
                            if !close(
                                gy[py],
                                wy,
                                2.0 * t.eps() * wy.norm() + 4.0 * u * (alpha.norm() * xs[i].norm() + ys[i].norm()) + 1e-300,
                            ) {
                                failures.push(format!("{tag} axpy y[{i}] = {}, want {wy}", gy[py]));
                            }
                            if !close(gx[px], wx, 2.0 * t.eps() * wx.norm() + 4.0 * u * wx.norm() + 1e-300) {
                                failures.push(format!("{tag} scal x[{i}] = {}, want {wx}", gx[px]));
                            }
                        }
                    }
                    e.free(dx);
                    e.free(dy);
                    if device {
                        e.free(pa as u64);
                    }
                }
            }
        }
    }
    e.pointer_mode(h, false);
    // Outside cuBLAS's table: NOT_SUPPORTED; not a type at all: INVALID_VALUE.
    let dx = e.upload(&[0u8; 64]);
    let mut r = [0u8; 16];
    let one = 1f32;
    unsafe {
        let rp: H = r.as_mut_ptr().cast();
        let (hh, s, d, i8t) = (T::H.cuda(), T::S.cuda(), T::D.cuda(), 3);
        assert_eq!(dot(h, 4, dx as P, hh, 1, dx as P, hh, 1, rp, s, s), 15, "f16 dot with an f32 result");
        assert_eq!(dot(h, 4, dx as P, hh, 1, dx as P, hh, 1, rp, hh, hh), 15, "f16 execution");
        assert_eq!(dot(h, 4, dx as P, s, 1, dx as P, d, 1, rp, s, s), 15, "x and y of different types");
        assert_eq!(dot(h, 4, dx as P, i8t, 1, dx as P, i8t, 1, rp, i8t, s), 15, "8-bit integers");
        assert_eq!(dot(h, 4, dx as P, 99, 1, dx as P, 99, 1, rp, 99, s), 7, "not a cudaDataType");
        assert_eq!(nrm2(h, 4, dx as P, T::C.cuda(), 1, rp, T::C.cuda(), T::C.cuda()), 15, "complex norm type");
        assert_eq!(axpy(h, 4, (&one as *const f32).cast(), hh, dx as P, hh, 1, dx as H, hh, 1, s), 15, "f16 alpha");
        assert_eq!(scal(h, 4, (&one as *const f32).cast(), d, dx as H, s, 1, s), 15, "f64 alpha for f32 x");
        assert_eq!(dot(std::ptr::null_mut(), 4, dx as P, s, 1, dx as P, s, 1, rp, s, s), 1, "NULL handle");
        assert_eq!(nrm2(h, 4, dx as P, s, 1, std::ptr::null_mut(), s, s), 7, "NULL result");
    }
    e.free(dx);
    e.destroy(h);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Work captured into a CUDA graph (as llama.cpp captures its matmuls)
/// runs at every launch of the graph, each time on the data there then;
/// capturing the same calls again (a graph per token) and destroying the
/// old graphs leaves the new ones working.
#[test]
fn captured_work_runs_at_every_graph_launch() {
    let e = env();
    let h = e.handle();
    type Sgemm = unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32;
    type Saxpy = unsafe extern "C" fn(H, i32, P, P, i32, H, i32) -> i32;
    unsafe {
        let mut stream: H = std::ptr::null_mut();
        assert_eq!(e.cuda.f::<unsafe extern "C" fn(*mut H, u32) -> i32>("cuStreamCreate")(&mut stream, 1), 0);
        assert_eq!(e.blas.f::<unsafe extern "C" fn(H, H) -> i32>("cublasSetStream_v2")(h, stream), 0);
        e.pointer_mode(h, false);
        let sgemm = e.blas.f::<Sgemm>("cublasSgemm_v2");
        let saxpy = e.blas.f::<Saxpy>("cublasSaxpy_v2");
        let begin = e.cuda.f::<unsafe extern "C" fn(H, u32) -> i32>("cuStreamBeginCapture_v2");
        let end = e.cuda.f::<unsafe extern "C" fn(H, *mut H) -> i32>("cuStreamEndCapture");
        let instantiate = e.cuda.f::<unsafe extern "C" fn(*mut H, H, u64) -> i32>("cuGraphInstantiateWithFlags");
        let launch = e.cuda.f::<unsafe extern "C" fn(H, H) -> i32>("cuGraphLaunch");
        let sync = e.cuda.f::<unsafe extern "C" fn(H) -> i32>("cuStreamSynchronize");
        let destroy_graph = e.cuda.f::<unsafe extern "C" fn(H) -> i32>("cuGraphDestroy");
        let destroy_exec = e.cuda.f::<unsafe extern "C" fn(H) -> i32>("cuGraphExecDestroy");
        // C = A B (2x2), then y += 2 C[:, 0].
        let (a, b, c, y) =
            (e.upload(&[1.0f32, 2.0, 3.0, 4.0]), e.upload(&[1.0f32, 0.0, 0.0, 1.0]), e.upload(&[0.0f32; 4]), e.upload(&[0.0f32; 2]));
        let (one, zero, two) = (1.0f32, 0.0f32, 2.0f32);
        let p = |v: &f32| (v as *const f32).cast::<c_void>();
        for round in 0..3 {
            // Relaxed, as llama.cpp captures: the other tests of this
            // process allocate meanwhile, which a global-mode capture forbids.
            assert_eq!(begin(stream, 2), 0);
            assert_eq!(sgemm(h, 0, 0, 2, 2, 2, p(&one), a as P, 2, b as P, 2, p(&zero), c as H, 2), 0);
            assert_eq!(saxpy(h, 2, p(&two), c as P, 1, y as H, 1), 0);
            let mut graph: H = std::ptr::null_mut();
            assert_eq!(end(stream, &mut graph), 0);
            let mut exec: H = std::ptr::null_mut();
            assert_eq!(instantiate(&mut exec, graph, 0), 0);
            assert_eq!(destroy_graph(graph), 0, "the executable graph outlives its graph");
            // Nothing ran at capture.
            assert_eq!(e.download::<f32>(y, 2), [0.0, 0.0], "round {round}");
            for k in 1..=3u8 {
                // New B before each launch: B = k I.
                let bk = [f32::from(k), 0.0, 0.0, f32::from(k)];
                e.cuda.f::<unsafe extern "C" fn(u64, *const c_void, usize) -> i32>("cuMemcpyHtoD_v2")(b, bk.as_ptr().cast(), 16);
                assert_eq!(launch(exec, stream), 0);
                assert_eq!(sync(stream), 0);
                assert_eq!(e.download::<f32>(c, 4), [f32::from(k), 2.0 * f32::from(k), 3.0 * f32::from(k), 4.0 * f32::from(k)]);
                let y_now = e.download::<f32>(y, 2);
                let sum: f32 = (1..=k).map(f32::from).sum();
                assert_eq!(y_now, [2.0 * sum, 4.0 * sum], "round {round}, launch {k}");
            }
            assert_eq!(destroy_exec(exec), 0);
            let zeros = [0.0f32; 2];
            e.cuda.f::<unsafe extern "C" fn(u64, *const c_void, usize) -> i32>("cuMemcpyHtoD_v2")(y, zeros.as_ptr().cast(), 8);
        }
        e.destroy(h);
        assert_eq!(e.cuda.f::<unsafe extern "C" fn(H) -> i32>("cuStreamDestroy_v2")(stream), 0);
    }
}
