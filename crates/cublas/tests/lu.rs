//! The batched LU routines (`getrfBatched` with and without pivoting,
//! `getrsBatched`, `getriBatched`, `matinvBatched`) for every type against
//! complex128 references: the factors reproduce the matrix, pivots are
//! 1-based and partial pivoting's (|L| <= 1), solves and inverses satisfy
//! their equations, zero pivots give `info = i`, and bad arguments give
//! `CUBLAS_STATUS_INVALID_VALUE` (and getrsBatched's host info `-i`).

mod common;
use common::data::T;
use common::{env, Rng};
use num_complex::Complex64 as C64;
use std::ffi::c_void;

type P = *const c_void;
type H = *mut c_void;
type Getrf = unsafe extern "C" fn(H, i32, P, i32, *mut i32, *mut i32, i32) -> i32;
type Getrs = unsafe extern "C" fn(H, i32, i32, i32, P, i32, *const i32, P, i32, *mut i32, i32) -> i32;
type Getri = unsafe extern "C" fn(H, i32, P, i32, *const i32, P, i32, *mut i32, i32) -> i32;
type Matinv = unsafe extern "C" fn(H, i32, P, i32, P, i32, *mut i32, i32) -> i32;

const TYPES: [(T, &str); 4] = [(T::S, "S"), (T::D, "D"), (T::C, "C"), (T::Z, "Z")];
const BATCH: usize = 3;

/// `n x n` matrices (leading dimension `ld`): random, or diagonally
/// dominant (for factoring without pivots); matrix `singular` (if any)
/// has column 2 zero.
fn matrices(t: T, n: usize, ld: usize, dominant: bool, singular: Option<usize>, rng: &mut Rng) -> Vec<Vec<C64>> {
    (0..BATCH)
        .map(|b| {
            let mut a = t.random(ld * n, rng);
            if dominant {
                for i in 0..n {
                    a[i + i * ld] = t.round(a[i + i * ld] + C64::new(n as f64 + 2.0, 0.0));
                }
            }
            if singular == Some(b) && n > 2 {
                for i in 0..n {
                    a[i + 2 * ld] = C64::new(0.0, 0.0);
                }
            }
            a
        })
        .collect()
}

/// Uploads each matrix and an array of their device addresses.
fn upload_all(t: T, ms: &[Vec<C64>]) -> (Vec<u64>, u64) {
    let e = env();
    let ptrs: Vec<u64> = ms.iter().map(|m| e.upload(&t.encode(m))).collect();
    let arr = e.upload(&ptrs);
    (ptrs, arr)
}

fn download(t: T, p: u64, len: usize) -> Vec<C64> {
    t.decode(&env().download::<u8>(p, len * t.size()))
}

/// `P^T L U` from packed factors and 1-based pivots (none: identity).
fn reconstruct(f: &[C64], ld: usize, n: usize, piv: Option<&[i32]>) -> Vec<C64> {
    let mut m = vec![C64::new(0.0, 0.0); n * n];
    for j in 0..n {
        for i in 0..n {
            let mut s = C64::new(0.0, 0.0);
            for p in 0..=i.min(j) {
                let l = if p == i { C64::new(1.0, 0.0) } else { f[i + p * ld] };
                s += l * f[p + j * ld];
            }
            m[i + j * n] = s;
        }
    }
    if let Some(piv) = piv {
        // Undo the swaps, last first: A = P^T (L U).
        for j in (0..n).rev() {
            let p = piv[j] as usize - 1;
            for c in 0..n {
                m.swap(j + c * n, p + c * n);
            }
        }
    }
    m
}

/// `|A X - B|` within the residual bound of a backward-stable solve.
#[allow(clippy::too_many_arguments)]
fn residual_ok(
    t: T,
    n: usize,
    a: impl Fn(usize, usize) -> C64,
    x: impl Fn(usize, usize) -> C64,
    b: impl Fn(usize, usize) -> C64,
    cols: usize,
) -> Option<String> {
    for j in 0..cols {
        for i in 0..n {
            let (mut s, mut mag) = (C64::new(0.0, 0.0), 0.0);
            for p in 0..n {
                s += a(i, p) * x(p, j);
                mag += (a(i, p) * x(p, j)).norm();
            }
            let tol = 64.0 * n as f64 * t.eps() * (mag + b(i, j).norm());
            let ok = (s - b(i, j)).norm() <= tol;
            if !ok {
                return Some(format!("({i},{j}): {s} vs {}", b(i, j)));
            }
        }
    }
    None
}

#[test]
fn getrf_getrs_getri_matinv_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let mut pivoted = 0;
    let mut seed = 7000;
    for (t, p) in TYPES {
        let getrf = e.blas.f::<Getrf>(&format!("cublas{p}getrfBatched"));
        let getrs = e.blas.f::<Getrs>(&format!("cublas{p}getrsBatched"));
        let getri = e.blas.f::<Getri>(&format!("cublas{p}getriBatched"));
        let matinv = e.blas.f::<Matinv>(&format!("cublas{p}matinvBatched"));
        // 70: blocked (panels of 32, 32 and 6 columns).
        for n in [1usize, 3, 8, 17, 70] {
            for pivot in [true, false] {
                seed += 1;
                let mut rng = Rng::new(seed);
                let ld = n + 2;
                let a = matrices(t, n, ld, !pivot, None, &mut rng);
                let (ptrs, arr) = upload_all(t, &a);
                let dpiv = e.upload(&vec![-7i32; n * BATCH]);
                let dinfo = e.upload(&[-7i32; BATCH]);
                let what = format!("{p}getrfBatched n={n} pivot={pivot}");
                let st = unsafe {
                    getrf(
                        h,
                        n as i32,
                        arr as P,
                        ld as i32,
                        if pivot { dpiv as *mut i32 } else { std::ptr::null_mut() },
                        dinfo as *mut i32,
                        BATCH as i32,
                    )
                };
                e.sync();
                if st != 0 {
                    failures.push(format!("{what}: status {st}"));
                    continue;
                }
                let info: Vec<i32> = e.download(dinfo, BATCH);
                let piv: Vec<i32> = e.download(dpiv, n * BATCH);
                if !pivot && piv.iter().any(|&v| v != -7) {
                    failures.push(format!("{what}: pivots written without a pivot array"));
                }
                let factors: Vec<Vec<C64>> = ptrs.iter().map(|&d| download(t, d, ld * n)).collect();
                for b in 0..BATCH {
                    if info[b] != 0 {
                        failures.push(format!("{what}[{b}]: info {}", info[b]));
                        continue;
                    }
                    let pv = &piv[b * n..(b + 1) * n];
                    if pivot {
                        for (j, &v) in pv.iter().enumerate() {
                            if v < j as i32 + 1 || v > n as i32 {
                                failures.push(format!("{what}[{b}]: pivot {j} = {v}"));
                            }
                            pivoted += (v != j as i32 + 1) as usize;
                        }
                        // Partial pivoting: |L(i, j)| <= 1 (the pivot is the
                        // largest by |re| + |im|, so complex quotients stay
                        // within sqrt(2)).
                        let bound = if t.complex() { 2f64.sqrt() } else { 1.0 };
                        for j in 0..n {
                            for i in j + 1..n {
                                let l = factors[b][i + j * ld];
                                if l.norm() > bound * (1.0 + 4.0 * t.eps()) {
                                    failures.push(format!("{what}[{b}]: |L({i},{j})| = {l}"));
                                }
                            }
                        }
                    }
                    let lu = reconstruct(&factors[b], ld, n, pivot.then_some(pv));
                    let (mut err, mut mag) = (0.0f64, 0.0f64);
                    for j in 0..n {
                        for i in 0..n {
                            err = err.max((lu[i + j * n] - a[b][i + j * ld]).norm());
                            mag = mag.max(a[b][i + j * ld].norm());
                        }
                    }
                    if err > 64.0 * n as f64 * t.eps() * mag.max(1.0) * 4.0 {
                        failures.push(format!("{what}[{b}]: |P^T L U - A| = {err}"));
                    }
                    // The padding rows are untouched.
                    if factors[b][n + (n - 1) * ld] != a[b][n + (n - 1) * ld] {
                        failures.push(format!("{what}[{b}]: padding changed"));
                    }
                }
                let piv_arg: *const i32 = if pivot { dpiv as *const i32 } else { std::ptr::null() };
                // Solves with the factors: op(A) X = B, every operation.
                for trans in [0, 1, 2] {
                    let nrhs = 2;
                    let ldb = n + 1;
                    let bs: Vec<Vec<C64>> = (0..BATCH).map(|_| t.random(ldb * nrhs, &mut rng)).collect();
                    let (bptrs, barr) = upload_all(t, &bs);
                    let mut info = 99i32;
                    let st = unsafe {
                        getrs(h, trans, n as i32, nrhs as i32, arr as P, ld as i32, piv_arg, barr as P, ldb as i32, &mut info, BATCH as i32)
                    };
                    e.sync();
                    if st != 0 || info != 0 {
                        failures.push(format!("{p}getrsBatched n={n} trans={trans}: status {st}, info {info}"));
                        continue;
                    }
                    for b in 0..BATCH {
                        let x = download(t, bptrs[b], ldb * nrhs);
                        let opa = |i: usize, j: usize| common::data::op_at(&a[b], ld, trans, i, j);
                        if let Some(why) = residual_ok(t, n, opa, |i, j| x[i + j * ldb], |i, j| bs[b][i + j * ldb], nrhs) {
                            failures.push(format!("{p}getrsBatched n={n} pivot={pivot} trans={trans}[{b}]: {why}"));
                        }
                    }
                }
                // Inverses from the factors.
                let cs: Vec<Vec<C64>> = (0..BATCH).map(|_| vec![C64::new(0.0, 0.0); ld * n]).collect();
                let (cptrs, carr) = upload_all(t, &cs);
                let dinfo2 = e.upload(&[-7i32; BATCH]);
                let st =
                    unsafe { getri(h, n as i32, arr as P, ld as i32, piv_arg, carr as P, ld as i32, dinfo2 as *mut i32, BATCH as i32) };
                e.sync();
                let info2: Vec<i32> = e.download(dinfo2, BATCH);
                for b in 0..BATCH {
                    let c = download(t, cptrs[b], ld * n);
                    let eye = |i: usize, j: usize| C64::new((i == j) as i32 as f64, 0.0);
                    if st != 0 || info2[b] != 0 {
                        failures.push(format!("{p}getriBatched n={n} pivot={pivot}[{b}]: status {st}, info {}", info2[b]));
                    } else if let Some(why) = residual_ok(t, n, |i, j| a[b][i + j * ld], |i, j| c[i + j * ld], eye, n) {
                        failures.push(format!("{p}getriBatched n={n} pivot={pivot}[{b}]: A C != I at {why}"));
                    }
                }
                // matinvBatched on the original matrices (cuBLAS's takes
                // n <= 32).
                if pivot && n <= 32 {
                    let (_, arr2) = upload_all(t, &a);
                    let (iptrs, iarr) = upload_all(t, &cs);
                    let dinfo3 = e.upload(&[-7i32; BATCH]);
                    let st = unsafe { matinv(h, n as i32, arr2 as P, ld as i32, iarr as P, ld as i32, dinfo3 as *mut i32, BATCH as i32) };
                    e.sync();
                    let info3: Vec<i32> = e.download(dinfo3, BATCH);
                    for b in 0..BATCH {
                        let c = download(t, iptrs[b], ld * n);
                        let eye = |i: usize, j: usize| C64::new((i == j) as i32 as f64, 0.0);
                        if st != 0 || info3[b] != 0 {
                            failures.push(format!("{p}matinvBatched n={n}[{b}]: status {st}, info {}", info3[b]));
                        } else if let Some(why) = residual_ok(t, n, |i, j| a[b][i + j * ld], |i, j| c[i + j * ld], eye, n) {
                            failures.push(format!("{p}matinvBatched n={n}[{b}]: A Ainv != I at {why}"));
                        }
                    }
                }
            }
        }
    }
    e.destroy(h);
    assert!(pivoted > 20, "only {pivoted} row exchanges: pivoting was not exercised");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(12)].join("\n"));
}

#[test]
fn zero_pivots_give_info() {
    let e = env();
    let h = e.handle();
    for (t, p) in TYPES {
        let n = 5usize;
        let ld = n;
        let mut rng = Rng::new(77);
        // Matrix 1 has column 2 zero: U(3, 3) is exactly zero, info = 3.
        let a = matrices(t, n, ld, true, Some(1), &mut rng);
        for pivot in [true, false] {
            let (_, arr) = upload_all(t, &a);
            let dpiv = e.upload(&vec![0i32; n * BATCH]);
            let dinfo = e.upload(&[-7i32; BATCH]);
            let piv = if pivot { dpiv as *mut i32 } else { std::ptr::null_mut() };
            let st = unsafe {
                e.blas.f::<Getrf>(&format!("cublas{p}getrfBatched"))(h, n as i32, arr as P, ld as i32, piv, dinfo as *mut i32, BATCH as i32)
            };
            e.sync();
            assert_eq!(st, 0);
            assert_eq!(e.download::<i32>(dinfo, BATCH), vec![0, 3, 0], "{p}getrfBatched pivot={pivot}");
            // getriBatched reports the zero pivot of the factors.
            let (_, carr) = upload_all(t, &vec![vec![C64::new(0.0, 0.0); ld * n]; BATCH]);
            let dinfo2 = e.upload(&[-7i32; BATCH]);
            let st = unsafe {
                e.blas.f::<Getri>(&format!("cublas{p}getriBatched"))(
                    h,
                    n as i32,
                    arr as P,
                    ld as i32,
                    piv,
                    carr as P,
                    ld as i32,
                    dinfo2 as *mut i32,
                    BATCH as i32,
                )
            };
            e.sync();
            assert_eq!(st, 0);
            assert_eq!(e.download::<i32>(dinfo2, BATCH), vec![0, 3, 0], "{p}getriBatched pivot={pivot}");
        }
        // matinvBatched on the singular matrix.
        let (_, arr) = upload_all(t, &a);
        let (_, iarr) = upload_all(t, &vec![vec![C64::new(0.0, 0.0); ld * n]; BATCH]);
        let dinfo = e.upload(&[-7i32; BATCH]);
        let st = unsafe {
            e.blas.f::<Matinv>(&format!("cublas{p}matinvBatched"))(
                h,
                n as i32,
                arr as P,
                ld as i32,
                iarr as P,
                ld as i32,
                dinfo as *mut i32,
                BATCH as i32,
            )
        };
        e.sync();
        assert_eq!(st, 0);
        assert_eq!(e.download::<i32>(dinfo, BATCH), vec![0, 3, 0], "{p}matinvBatched");
    }
    e.destroy(h);
}

#[test]
fn zero_pivots_give_info_in_blocked_factorisations() {
    // 70 columns: the blocked factorisation, the zero pivot in its first
    // panel; the other matrices of the batch factor without one.
    let e = env();
    let h = e.handle();
    for (t, p) in TYPES {
        let n = 70usize;
        let ld = n + 1;
        let mut rng = Rng::new(78);
        let a = matrices(t, n, ld, true, Some(1), &mut rng);
        for pivot in [true, false] {
            let (_, arr) = upload_all(t, &a);
            let dpiv = e.upload(&vec![0i32; n * BATCH]);
            let dinfo = e.upload(&[-7i32; BATCH]);
            let piv = if pivot { dpiv as *mut i32 } else { std::ptr::null_mut() };
            let st = unsafe {
                e.blas.f::<Getrf>(&format!("cublas{p}getrfBatched"))(h, n as i32, arr as P, ld as i32, piv, dinfo as *mut i32, BATCH as i32)
            };
            e.sync();
            assert_eq!(st, 0);
            assert_eq!(e.download::<i32>(dinfo, BATCH), vec![0, 3, 0], "{p}getrfBatched n={n} pivot={pivot}");
        }
    }
    e.destroy(h);
}

#[test]
fn batched_lu_argument_errors() {
    let e = env();
    let h = e.handle();
    let arr = e.upload(&[0u64; 4]);
    let piv = e.upload(&[0i32; 64]) as *mut i32;
    let info = e.upload(&[0i32; 4]) as *mut i32;
    let getrf = e.blas.f::<Getrf>("cublasSgetrfBatched");
    let getrs = e.blas.f::<Getrs>("cublasDgetrsBatched");
    let getri = e.blas.f::<Getri>("cublasCgetriBatched");
    let matinv = e.blas.f::<Matinv>("cublasZmatinvBatched");
    let a = arr as P;
    unsafe {
        for (what, st) in [
            ("getrf n < 0", getrf(h, -1, a, 4, piv, info, 1)),
            ("getrf lda < n", getrf(h, 4, a, 3, piv, info, 1)),
            ("getrf batch < 0", getrf(h, 4, a, 4, piv, info, -1)),
            ("getri n < 0", getri(h, -1, a, 4, piv, a, 4, info, 1)),
            ("getri lda < n", getri(h, 4, a, 3, piv, a, 4, info, 1)),
            ("getri ldc < n", getri(h, 4, a, 4, piv, a, 3, info, 1)),
            ("getri batch < 0", getri(h, 4, a, 4, piv, a, 4, info, -1)),
            ("matinv n > 32", matinv(h, 33, a, 33, a, 33, info, 1)),
            ("matinv lda < n", matinv(h, 4, a, 3, a, 4, info, 1)),
            ("matinv lda_inv < n", matinv(h, 4, a, 4, a, 3, info, 1)),
            ("matinv batch < 0", matinv(h, 4, a, 4, a, 4, info, -1)),
        ] {
            assert_eq!(st, 7, "{what}: want CUBLAS_STATUS_INVALID_VALUE");
        }
        // getrsBatched: the host info names the bad parameter.
        for (what, args, pos) in [
            ("trans", (5, 4, 1, 4, 4, 1), -2),
            ("n < 0", (0, -1, 1, 4, 4, 1), -3),
            ("nrhs < 0", (0, 4, -1, 4, 4, 1), -4),
            ("lda < n", (0, 4, 1, 3, 4, 1), -6),
            ("ldb < n", (0, 4, 1, 4, 3, 1), -9),
            ("batch < 0", (0, 4, 1, 4, 4, -1), -11),
        ] {
            let mut hinfo = 1234;
            let (tr, n, nrhs, lda, ldb, batch) = args;
            let st = getrs(h, tr, n, nrhs, a, lda, piv, a, ldb, &mut hinfo, batch);
            assert_eq!((st, hinfo), (7, pos), "getrsBatched {what}");
        }
        // Nothing to do: success (and info 0 for getrs).
        assert_eq!(getrf(h, 0, a, 1, piv, info, 1), 0);
        let mut hinfo = 1234;
        assert_eq!(getrs(h, 0, 4, 1, a, 4, piv, a, 4, &mut hinfo, 0), 0);
        assert_eq!(hinfo, 0);
    }
    e.sync();
    e.destroy(h);
}
