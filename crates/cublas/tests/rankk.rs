//! The rank-k updates (`syrk`, `herk`, `syr2k`, `her2k`, `syrkx`, `herkx`,
//! 32- and 64-bit entry points) against a complex128 reference: every
//! type, triangle and operation, host and device scalars, the other
//! triangle untouched, `beta = 0` not reading `C` (NaN there), and the
//! argument errors.

mod common;
use common::data::{op_at, T};
use common::{env, Rng};
use num_complex::Complex64 as C64;
use std::ffi::c_void;

type P = *const c_void;
type H = *mut c_void;

type One = unsafe extern "C" fn(H, i32, i32, i32, i32, P, P, i32, P, H, i32) -> i32;
type One64 = unsafe extern "C" fn(H, i32, i32, i64, i64, P, P, i64, P, H, i64) -> i32;
type Two = unsafe extern "C" fn(H, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32;
type Two64 = unsafe extern "C" fn(H, i32, i32, i64, i64, P, P, i64, P, i64, P, H, i64) -> i32;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Syrk,
    Herk,
    Syr2k,
    Her2k,
    Syrkx,
    Herkx,
}

impl Kind {
    fn herm(self) -> bool {
        matches!(self, Kind::Herk | Kind::Her2k | Kind::Herkx)
    }
    fn has_b(self) -> bool {
        !matches!(self, Kind::Syrk | Kind::Herk)
    }
    fn name(self, p: &str) -> String {
        match self {
            Kind::Syrk => format!("cublas{p}syrk_v2"),
            Kind::Herk => format!("cublas{p}herk_v2"),
            Kind::Syr2k => format!("cublas{p}syr2k_v2"),
            Kind::Her2k => format!("cublas{p}her2k_v2"),
            Kind::Syrkx => format!("cublas{p}syrkx"),
            Kind::Herkx => format!("cublas{p}herkx"),
        }
    }
}

/// The real type of a type's Hermitian scalars.
fn real(t: T) -> T {
    match t {
        T::C => T::S,
        T::Z => T::D,
        t => t,
    }
}

/// Whether `(i, j)` is in the named triangle (the diagonal is in both).
fn in_triangle(uplo: i32, i: usize, j: usize) -> bool {
    if uplo == 0 {
        i >= j
    } else {
        i <= j
    }
}

/// A scalar argument: host bytes or a device copy.
fn scalar(t: T, v: C64, device: bool, keep: &mut Vec<Vec<u8>>) -> P {
    let bytes = t.encode(&[v]);
    if device {
        env().upload(&bytes) as P
    } else {
        keep.push(bytes);
        keep.last().map(|b| b.as_ptr().cast()).unwrap_or(std::ptr::null())
    }
}

/// The reference: the named triangle of the `n x n` result (zero
/// elsewhere) and, per element, the magnitude of its terms (for the error
/// bound).
#[allow(clippy::too_many_arguments)]
fn reference(
    kind: Kind,
    uplo: i32,
    trans: i32,
    n: usize,
    k: usize,
    alpha: C64,
    a: &[C64],
    lda: usize,
    b: &[C64],
    ldb: usize,
    beta: C64,
    c: &[C64],
    ldc: usize,
) -> (Vec<C64>, Vec<f64>) {
    let mut out = vec![C64::new(0.0, 0.0); n * n];
    let mut mag = vec![0.0; n * n];
    let h = kind.herm();
    // op(X)(i, p); the right factor's element (p, j) is op(Y)(j, p),
    // conjugated when Hermitian.
    let x = |m: &[C64], ld: usize, i: usize, p: usize| op_at(m, ld, trans, i, p);
    let y = |m: &[C64], ld: usize, p: usize, j: usize| {
        let v = op_at(m, ld, trans, j, p);
        if h {
            v.conj()
        } else {
            v
        }
    };
    let (bm, bld) = if kind.has_b() { (b, ldb) } else { (a, lda) };
    for j in 0..n {
        for i in (0..n).filter(|&i| in_triangle(uplo, i, j)) {
            let mut s = C64::new(0.0, 0.0);
            let mut m = 0.0;
            for p in 0..k {
                let t = alpha * x(a, lda, i, p) * y(bm, bld, p, j);
                s += t;
                m += t.norm();
                if matches!(kind, Kind::Syr2k | Kind::Her2k) {
                    let a2 = if h { alpha.conj() } else { alpha };
                    let t = a2 * x(bm, bld, i, p) * y(a, lda, p, j);
                    s += t;
                    m += t.norm();
                }
            }
            if beta != C64::new(0.0, 0.0) {
                s += beta * c[i + j * ldc];
                m += (beta * c[i + j * ldc]).norm();
            }
            if h && i == j {
                s = C64::new(s.re, 0.0);
            }
            out[i + j * n] = s;
            mag[i + j * n] = m;
        }
    }
    (out, mag)
}

#[test]
fn rank_k_updates_against_reference() {
    let e = env();
    let h = e.handle();
    let mut failures = Vec::new();
    let mut checked = 0usize;
    let mut seed = 9000;
    let kinds = [Kind::Syrk, Kind::Herk, Kind::Syr2k, Kind::Her2k, Kind::Syrkx, Kind::Herkx];
    for (t, p) in [(T::S, "S"), (T::D, "D"), (T::C, "C"), (T::Z, "Z")] {
        for kind in kinds {
            if kind.herm() && !t.complex() {
                continue;
            }
            // The operations each takes: N and T (and C on real types, where
            // it is T) for the symmetric ones, N and C for the Hermitian.
            let ops: &[i32] = if kind.herm() {
                &[0, 2]
            } else if t.complex() {
                &[0, 1]
            } else {
                &[0, 1, 2]
            };
            for &trans in ops {
                for uplo in [0, 1] {
                    // (device scalars, 64-bit entry, n, k, beta zero, alpha
                    // zero): small ones; one and three panels of 128 (the
                    // last partial), each split into diagonal blocks of 64
                    // and less; five panels, which two or more threads share
                    // (k = 3, k = 1, alpha zero; f64 and c64 only, below);
                    // k = 0.
                    for (device, wide, n, k, beta_zero, alpha_zero) in [
                        (false, false, 5usize, 3usize, false, false),
                        (true, false, 6, 4, false, false),
                        (false, true, 7, 2, true, false),
                        (true, true, 4, 5, true, false),
                        (false, false, 200, 9, false, false),
                        (false, false, 300, 7, true, false),
                        (false, false, 520, 3, false, false),
                        (true, true, 515, 1, true, false),
                        (false, false, 513, 2, false, true),
                        (false, false, 5, 0, false, false),
                        (false, false, 260, 0, false, false),
                    ] {
                        // The panels shared between threads run the same
                        // code for every type: checked on the real and the
                        // complex double types (the reference is slow).
                        if n > 400 && !matches!(t, T::D | T::Z) {
                            continue;
                        }
                        seed += 1;
                        let mut rng = Rng::new(seed);
                        e.pointer_mode(h, device);
                        let (rows, cols) = if trans == 0 { (n, k) } else { (k, n) };
                        let (lda, ldb, ldc) = (rows.max(1) + 2, rows.max(1) + 1, n + 3);
                        let a = t.random(lda * cols.max(1), &mut rng);
                        let b = t.random(ldb * cols.max(1), &mut rng);
                        let mut c = t.random(ldc * n, &mut rng);
                        // Hermitian C: a real diagonal on entry, as BLAS
                        // requires.
                        if kind.herm() {
                            for i in 0..n {
                                c[i + i * ldc].im = 0.0;
                            }
                        }
                        let alpha = if alpha_zero {
                            C64::new(0.0, 0.0)
                        } else if kind == Kind::Herk {
                            C64::new(1.25, 0.0)
                        } else {
                            t.round(C64::new(1.25, if t.complex() { -0.75 } else { 0.0 }))
                        };
                        let beta = if beta_zero {
                            C64::new(0.0, 0.0)
                        } else if kind.herm() {
                            C64::new(-0.5, 0.0)
                        } else {
                            t.round(C64::new(-0.5, if t.complex() { 0.25 } else { 0.0 }))
                        };
                        // beta = 0: the named triangle of C holds NaN, which
                        // must not be read.
                        let mut c_in = c.clone();
                        if beta_zero {
                            for j in 0..n {
                                for i in 0..n {
                                    if in_triangle(uplo, i, j) {
                                        c_in[i + j * ldc] = C64::new(f64::NAN, f64::NAN);
                                    }
                                }
                            }
                        }
                        let (want, mag) = reference(kind, uplo, trans, n, k, alpha, &a, lda, &b, ldb, beta, &c, ldc);
                        let dc_bytes = t.encode(&c_in);
                        let (da, db, dc) = (e.upload(&t.encode(&a)), e.upload(&t.encode(&b)), e.upload(&dc_bytes));
                        let mut keep = Vec::new();
                        let alpha_t = if kind == Kind::Herk { real(t) } else { t };
                        let beta_t = if kind.herm() { real(t) } else { t };
                        let pa = scalar(alpha_t, alpha, device, &mut keep);
                        let pb = scalar(beta_t, beta, device, &mut keep);
                        let name = kind.name(p);
                        let st = unsafe {
                            match (kind.has_b(), wide) {
                                (false, false) => e.blas.f::<One>(&name)(
                                    h, uplo, trans, n as i32, k as i32, pa, da as P, lda as i32, pb, dc as H, ldc as i32,
                                ),
                                (false, true) => e.blas.f::<One64>(&format!("{name}_64"))(
                                    h, uplo, trans, n as i64, k as i64, pa, da as P, lda as i64, pb, dc as H, ldc as i64,
                                ),
                                (true, false) => e.blas.f::<Two>(&name)(
                                    h, uplo, trans, n as i32, k as i32, pa, da as P, lda as i32, db as P, ldb as i32, pb, dc as H,
                                    ldc as i32,
                                ),
                                (true, true) => e.blas.f::<Two64>(&format!("{name}_64"))(
                                    h, uplo, trans, n as i64, k as i64, pa, da as P, lda as i64, db as P, ldb as i64, pb, dc as H,
                                    ldc as i64,
                                ),
                            }
                        };
                        e.sync();
                        let got_bytes = e.download::<u8>(dc, dc_bytes.len());
                        let got = t.decode(&got_bytes);
                        let size = t.size();
                        let what = format!("{name} uplo={uplo} trans={trans} n={n} k={k} device={device} wide={wide} beta0={beta_zero} alpha0={alpha_zero}");
                        if st != 0 {
                            failures.push(format!("{what}: status {st}"));
                            continue;
                        }
                        for j in 0..n {
                            for i in 0..ldc {
                                let g = got[i + j * ldc];
                                let in_tri = i < n && in_triangle(uplo, i, j);
                                checked += 1;
                                if !in_tri {
                                    // The other triangle and the padding rows
                                    // keep their bits.
                                    let before = c_in[i + j * ldc];
                                    let bytes = (i + j * ldc) * size..(i + j * ldc + 1) * size;
                                    if got_bytes[bytes.clone()] != dc_bytes[bytes] {
                                        failures.push(format!("{what}: ({i},{j}) outside the triangle changed: {before} -> {g}"));
                                    }
                                    continue;
                                }
                                let w = want[i + j * n];
                                let tol = 4.0 * (2 * k + 2) as f64 * t.eps() * mag[i + j * n] + 2.0 * t.eps() * w.norm();
                                let ok = (g - w).norm() <= tol;
                                if !ok || (kind.herm() && i == j && g.im != 0.0) {
                                    failures.push(format!("{what}: ({i},{j}) = {g}, want {w}"));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    e.destroy(h);
    assert!(checked > 100_000, "only {checked} elements checked");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(12)].join("\n"));
}

#[test]
fn rank_k_argument_errors() {
    let e = env();
    let h = e.handle();
    let (n, k) = (4usize, 3usize);
    let a = e.upload(&vec![0.5f32; 64]);
    let c = e.upload(&vec![1.0f32; 64]);
    let one = [1.0f32];
    let pa: P = one.as_ptr().cast();
    let syrk = e.blas.f::<One>("cublasSsyrk_v2");
    let cherk = e.blas.f::<One>("cublasCherk_v2");
    let csyrk = e.blas.f::<One>("cublasCsyrk_v2");
    let ssyr2k = e.blas.f::<Two>("cublasSsyr2k_v2");
    let (n, k) = (n as i32, k as i32);
    unsafe {
        // Valid call first.
        assert_eq!(syrk(h, 0, 0, n, k, pa, a as P, n, pa, c as H, n), 0);
        let bad = [
            ("uplo", syrk(h, 2, 0, n, k, pa, a as P, n, pa, c as H, n)),
            ("trans", syrk(h, 0, 3, n, k, pa, a as P, n, pa, c as H, n)),
            ("n < 0", syrk(h, 0, 0, -1, k, pa, a as P, n, pa, c as H, n)),
            ("k < 0", syrk(h, 0, 0, n, -1, pa, a as P, n, pa, c as H, n)),
            ("lda < n (N)", syrk(h, 0, 0, n, k, pa, a as P, n - 1, pa, c as H, n)),
            ("lda < k (T)", syrk(h, 0, 1, n, k, pa, a as P, k - 1, pa, c as H, n)),
            ("ldc < n", syrk(h, 0, 0, n, k, pa, a as P, n, pa, c as H, n - 1)),
            ("alpha NULL", syrk(h, 0, 0, n, k, std::ptr::null(), a as P, n, pa, c as H, n)),
            ("beta NULL", syrk(h, 0, 0, n, k, pa, a as P, n, std::ptr::null(), c as H, n)),
            ("herk with T", cherk(h, 0, 1, n, k, pa, a as P, n, pa, c as H, n)),
            ("complex syrk with C", csyrk(h, 0, 2, n, k, pa, a as P, n, pa, c as H, n)),
            ("ldb < n", ssyr2k(h, 0, 0, n, k, pa, a as P, n, a as P, n - 1, pa, c as H, n)),
            ("A not in device memory", syrk(h, 0, 0, n, k, pa, one.as_ptr() as P, n, pa, c as H, n)),
        ];
        for (what, st) in bad {
            assert_eq!(st, 7, "{what}: want CUBLAS_STATUS_INVALID_VALUE");
        }
        // n = 0 is a no-op that succeeds.
        assert_eq!(syrk(h, 0, 0, 0, k, pa, a as P, 1, pa, c as H, 1), 0);
    }
    e.sync();
    e.destroy(h);
}
