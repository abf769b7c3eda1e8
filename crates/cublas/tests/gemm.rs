//! Every GEMM entry point against the f64 reference (`common::data`), for
//! every transpose pair, padded and tight leading dimensions, host and
//! device scalars, beta zero (C full of NaN, which must not be read) and
//! not, single, strided-batched and pointer-array-batched calls, 32- and
//! 64-bit integer variants; the matrix padding and the gaps between batch
//! matrices must stay untouched.

mod common;
use common::data::{reference, OPS, T};
use common::{env, Rng};
use num_complex::Complex64 as C64;
use std::ffi::c_void;

type P = *const c_void;
type H = *mut c_void;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Batch {
    One,
    Strided,
    Pointers,
}

#[derive(Debug, Clone, Copy)]
enum Api {
    /// `cublas<t>gemm` and friends, `_64` when the flag is set.
    Typed(&'static str, bool),
    /// `cublasGemmEx` and friends with a compute type.
    Ex(i32, bool),
}

#[derive(Debug, Clone, Copy)]
struct Case {
    at: T,
    ct: T,
    scale: T,
    /// Unit roundoff of the arithmetic.
    u: f64,
    m: usize,
    n: usize,
    k: usize,
    ta: i32,
    tb: i32,
    pad: usize,
    device: bool,
    beta_zero: bool,
    batch: Batch,
    count: usize,
    api: Api,
}

const SENTINEL: f64 = 7.0;

fn name(api: Api, batch: Batch) -> String {
    match api {
        Api::Typed(p, w) => {
            let base = match (p, batch) {
                ("H", Batch::One) => "cublasHgemm".to_string(),
                (p, Batch::One) => format!("cublas{p}gemm_v2"),
                (p, Batch::Strided) => format!("cublas{p}gemmStridedBatched"),
                (p, Batch::Pointers) => format!("cublas{p}gemmBatched"),
            };
            if w {
                format!("{base}_64")
            } else {
                base
            }
        }
        Api::Ex(_, w) => {
            let base = match batch {
                Batch::One => "cublasGemmEx",
                Batch::Strided => "cublasGemmStridedBatchedEx",
                Batch::Pointers => "cublasGemmBatchedEx",
            };
            if w {
                format!("{base}_64")
            } else {
                base.to_string()
            }
        }
    }
}

/// Runs one case; returns a description of the first mismatch.
fn run(c: Case, seed: u64) -> Result<(), String> {
    let e = env();
    let mut rng = Rng::new(seed);
    let (ar, ac) = if c.ta == 0 { (c.m, c.k) } else { (c.k, c.m) };
    let (br, bc) = if c.tb == 0 { (c.k, c.n) } else { (c.n, c.k) };
    let (lda, ldb, ldc) = (ar.max(1) + c.pad, br.max(1) + c.pad, c.m.max(1) + c.pad);
    // Matrices of a batch lie `stride` elements apart, with a gap.
    let (sa, sb, sc) = (lda * ac + 5, ldb * bc + 3, ldc * c.n + 7);
    let count = c.count;
    let fill = |t: T, len: usize, rng: &mut Rng| -> Vec<C64> {
        let mut v = t.random(len, rng);
        for x in v.iter_mut() {
            if rng.next() > 0.8 {
                *x = C64::new(SENTINEL, 0.0);
            }
        }
        v
    };
    let a = fill(c.at, sa * count, &mut rng);
    let b = fill(c.at, sb * count, &mut rng);
    let mut cm: Vec<C64> = vec![C64::new(SENTINEL, 0.0); sc * count];
    for bi in 0..count {
        for j in 0..c.n {
            for i in 0..c.m {
                cm[bi * sc + i + j * ldc] = if c.beta_zero {
                    C64::new(f64::NAN, f64::NAN)
                } else {
                    c.ct.round(C64::new(rng.next(), if c.ct.complex() { rng.next() } else { 0.0 }))
                };
            }
        }
    }
    // Integer scalars for integer products.
    let int = c.scale == T::I32;
    let alpha = if int { C64::new(3.0, 0.0) } else { c.scale.round(C64::new(0.75, if c.scale.complex() { 0.25 } else { 0.0 })) };
    let beta = if c.beta_zero {
        C64::new(0.0, 0.0)
    } else if int {
        C64::new(-2.0, 0.0)
    } else {
        c.scale.round(C64::new(-0.5, if c.scale.complex() { 0.125 } else { 0.0 }))
    };
    let da = e.upload(&c.at.encode(&a));
    let db = e.upload(&c.at.encode(&b));
    let dc = e.upload(&c.ct.encode(&cm));
    let h = e.handle();
    e.pointer_mode(h, c.device);
    let (ha, hb) = (c.scale.encode(&[alpha]), c.scale.encode(&[beta]));
    let (pa, pb): (P, P) = if c.device { (e.upload(&ha) as P, e.upload(&hb) as P) } else { (ha.as_ptr().cast(), hb.as_ptr().cast()) };
    let (arr_a, arr_b, arr_c) = if c.batch == Batch::Pointers {
        let ptrs = |base: u64, stride: usize, t: T| -> Vec<u64> { (0..count).map(|i| base + (i * stride * t.size()) as u64).collect() };
        (e.upload(&ptrs(da, sa, c.at)), e.upload(&ptrs(db, sb, c.at)), e.upload(&ptrs(dc, sc, c.ct)))
    } else {
        (0, 0, 0)
    };
    let (ma, mb, mc) = if c.batch == Batch::Pointers { (arr_a as P, arr_b as P, arr_c as H) } else { (da as P, db as P, dc as H) };
    let fname = name(c.api, c.batch);
    let (m, n, k) = (c.m, c.n, c.k);
    let st = unsafe {
        match (c.api, c.batch) {
            (Api::Typed(_, false), Batch::One) => {
                e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32>(&fname)(
                    h, c.ta, c.tb, m as i32, n as i32, k as i32, pa, ma, lda as i32, mb, ldb as i32, pb, mc, ldc as i32,
                )
            }
            (Api::Typed(_, true), Batch::One) => {
                e.blas.f::<unsafe extern "C" fn(H, i32, i32, i64, i64, i64, P, P, i64, P, i64, P, H, i64) -> i32>(&fname)(
                    h, c.ta, c.tb, m as i64, n as i64, k as i64, pa, ma, lda as i64, mb, ldb as i64, pb, mc, ldc as i64,
                )
            }
            (Api::Typed(_, false), Batch::Pointers) => {
                e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32, i32) -> i32>(&fname)(
                    h,
                    c.ta,
                    c.tb,
                    m as i32,
                    n as i32,
                    k as i32,
                    pa,
                    ma,
                    lda as i32,
                    mb,
                    ldb as i32,
                    pb,
                    mc,
                    ldc as i32,
                    count as i32,
                )
            }
            (Api::Typed(_, true), Batch::Pointers) => {
                e.blas.f::<unsafe extern "C" fn(H, i32, i32, i64, i64, i64, P, P, i64, P, i64, P, H, i64, i64) -> i32>(&fname)(
                    h,
                    c.ta,
                    c.tb,
                    m as i64,
                    n as i64,
                    k as i64,
                    pa,
                    ma,
                    lda as i64,
                    mb,
                    ldb as i64,
                    pb,
                    mc,
                    ldc as i64,
                    count as i64,
                )
            }
            (Api::Typed(_, false), Batch::Strided) => {
                e.blas
                    .f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, i64, P, i32, i64, P, H, i32, i64, i32) -> i32>(&fname)(
                    h,
                    c.ta,
                    c.tb,
                    m as i32,
                    n as i32,
                    k as i32,
                    pa,
                    ma,
                    lda as i32,
                    sa as i64,
                    mb,
                    ldb as i32,
                    sb as i64,
                    pb,
                    mc,
                    ldc as i32,
                    sc as i64,
                    count as i32,
                )
            }
            (Api::Typed(_, true), Batch::Strided) => {
                e.blas
                    .f::<unsafe extern "C" fn(H, i32, i32, i64, i64, i64, P, P, i64, i64, P, i64, i64, P, H, i64, i64, i64) -> i32>(&fname)(
                    h,
                    c.ta,
                    c.tb,
                    m as i64,
                    n as i64,
                    k as i64,
                    pa,
                    ma,
                    lda as i64,
                    sa as i64,
                    mb,
                    ldb as i64,
                    sb as i64,
                    pb,
                    mc,
                    ldc as i64,
                    sc as i64,
                    count as i64,
                )
            }
            (Api::Ex(ct, false), Batch::One) => {
                e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, i32, P, i32, i32, P, H, i32, i32, i32, i32) -> i32>(
                    &fname,
                )(
                    h,
                    c.ta,
                    c.tb,
                    m as i32,
                    n as i32,
                    k as i32,
                    pa,
                    ma,
                    c.at.cuda(),
                    lda as i32,
                    mb,
                    c.at.cuda(),
                    ldb as i32,
                    pb,
                    mc,
                    c.ct.cuda(),
                    ldc as i32,
                    ct,
                    -1,
                )
            }
            (Api::Ex(ct, true), Batch::One) => {
                e.blas.f::<unsafe extern "C" fn(H, i32, i32, i64, i64, i64, P, P, i32, i64, P, i32, i64, P, H, i32, i64, i32, i32) -> i32>(
                    &fname,
                )(
                    h,
                    c.ta,
                    c.tb,
                    m as i64,
                    n as i64,
                    k as i64,
                    pa,
                    ma,
                    c.at.cuda(),
                    lda as i64,
                    mb,
                    c.at.cuda(),
                    ldb as i64,
                    pb,
                    mc,
                    c.ct.cuda(),
                    ldc as i64,
                    ct,
                    99,
                )
            }
            (Api::Ex(ct, false), Batch::Pointers) => e.blas.f::<unsafe extern "C" fn(
                H,
                i32,
                i32,
                i32,
                i32,
                i32,
                P,
                P,
                i32,
                i32,
                P,
                i32,
                i32,
                P,
                H,
                i32,
                i32,
                i32,
                i32,
                i32,
            ) -> i32>(&fname)(
                h,
                c.ta,
                c.tb,
                m as i32,
                n as i32,
                k as i32,
                pa,
                ma,
                c.at.cuda(),
                lda as i32,
                mb,
                c.at.cuda(),
                ldb as i32,
                pb,
                mc,
                c.ct.cuda(),
                ldc as i32,
                count as i32,
                ct,
                -1,
            ),
            (Api::Ex(ct, true), Batch::Pointers) => e.blas.f::<unsafe extern "C" fn(
                H,
                i32,
                i32,
                i64,
                i64,
                i64,
                P,
                P,
                i32,
                i64,
                P,
                i32,
                i64,
                P,
                H,
                i32,
                i64,
                i64,
                i32,
                i32,
            ) -> i32>(&fname)(
                h,
                c.ta,
                c.tb,
                m as i64,
                n as i64,
                k as i64,
                pa,
                ma,
                c.at.cuda(),
                lda as i64,
                mb,
                c.at.cuda(),
                ldb as i64,
                pb,
                mc,
                c.ct.cuda(),
                ldc as i64,
                count as i64,
                ct,
                -1,
            ),
            (Api::Ex(ct, false), Batch::Strided) => e.blas.f::<unsafe extern "C" fn(
                H,
                i32,
                i32,
                i32,
                i32,
                i32,
                P,
                P,
                i32,
                i32,
                i64,
                P,
                i32,
                i32,
                i64,
                P,
                H,
                i32,
                i32,
                i64,
                i32,
                i32,
                i32,
            ) -> i32>(&fname)(
                h,
                c.ta,
                c.tb,
                m as i32,
                n as i32,
                k as i32,
                pa,
                ma,
                c.at.cuda(),
                lda as i32,
                sa as i64,
                mb,
                c.at.cuda(),
                ldb as i32,
                sb as i64,
                pb,
                mc,
                c.ct.cuda(),
                ldc as i32,
                sc as i64,
                count as i32,
                ct,
                -1,
            ),
            (Api::Ex(ct, true), Batch::Strided) => e.blas.f::<unsafe extern "C" fn(
                H,
                i32,
                i32,
                i64,
                i64,
                i64,
                P,
                P,
                i32,
                i64,
                i64,
                P,
                i32,
                i64,
                i64,
                P,
                H,
                i32,
                i64,
                i64,
                i64,
                i32,
                i32,
            ) -> i32>(&fname)(
                h,
                c.ta,
                c.tb,
                m as i64,
                n as i64,
                k as i64,
                pa,
                ma,
                c.at.cuda(),
                lda as i64,
                sa as i64,
                mb,
                c.at.cuda(),
                ldb as i64,
                sb as i64,
                pb,
                mc,
                c.ct.cuda(),
                ldc as i64,
                sc as i64,
                count as i64,
                ct,
                -1,
            ),
        }
    };
    if st != 0 {
        return Err(format!("{fname} returned {st}"));
    }
    e.sync();
    let got = c.ct.decode(&e.download::<u8>(dc, sc * count * c.ct.size()));
    let mut result = Ok(());
    'check: for bi in 0..count {
        let rf = reference(m, n, k, alpha, &a[bi * sa..], lda, c.ta, &b[bi * sb..], ldb, c.tb, beta, &cm[bi * sc..], ldc, c.u, c.ct.eps());
        for idx in 0..sc {
            let (i, j) = (idx % ldc, idx / ldc);
            let g = got[bi * sc + idx];
            if i < m && j < n {
                let (r, tol) = rf[i + j * m];
                // NaN compares false: a NaN result fails.
                if (g - r).norm().partial_cmp(&tol) != Some(std::cmp::Ordering::Less) && (g - r).norm() != tol {
                    result = Err(format!("{fname} {c:?}: batch {bi} C[{i},{j}] = {g}, want {r} (tolerance {tol:e})"));
                    break 'check;
                }
            } else if g != C64::new(SENTINEL, 0.0) {
                result = Err(format!("{fname} {c:?}: batch {bi} element {idx} outside the product changed to {g}"));
                break 'check;
            }
        }
    }
    e.destroy(h);
    for p in [da, db, dc, arr_a, arr_b, arr_c] {
        if p != 0 {
            e.free(p);
        }
    }
    if c.device {
        e.free(pa as u64);
        e.free(pb as u64);
    }
    result
}

fn base(at: T, ct: T, scale: T, u: f64, api: Api) -> Case {
    Case { at, ct, scale, u, m: 7, n: 5, k: 9, ta: 0, tb: 0, pad: 0, device: false, beta_zero: false, batch: Batch::One, count: 1, api }
}

/// All transposes x padding x pointer mode x beta for one kind of call.
fn sweep(c0: Case, batches: &[Batch]) {
    let mut failures = Vec::new();
    let mut seed = 1;
    let ops: &[i32] = &OPS;
    for &batch in batches {
        for &ta in ops {
            for &tb in ops {
                for pad in [0, 3] {
                    for device in [false, true] {
                        for beta_zero in [false, true] {
                            seed += 1;
                            let count = if batch == Batch::One { 1 } else { 3 };
                            let c = Case { ta, tb, pad, device, beta_zero, batch, count, ..c0 };
                            if let Err(e) = run(c, seed) {
                                failures.push(e);
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures, first: {}", failures.len(), failures[0]);
}

const ALL: [Batch; 3] = [Batch::One, Batch::Strided, Batch::Pointers];
const U32: f64 = 1.0 / (1u64 << 24) as f64;
const U64: f64 = 1.0 / (1u64 << 53) as f64;

#[test]
fn sgemm_family() {
    sweep(base(T::S, T::S, T::S, U32, Api::Typed("S", false)), &ALL);
    sweep(base(T::S, T::S, T::S, U32, Api::Typed("S", true)), &ALL);
}

#[test]
fn dgemm_family() {
    sweep(base(T::D, T::D, T::D, U64, Api::Typed("D", false)), &ALL);
    sweep(base(T::D, T::D, T::D, U64, Api::Typed("D", true)), &ALL);
}

#[test]
fn cgemm_and_zgemm_families() {
    sweep(base(T::C, T::C, T::C, U32, Api::Typed("C", false)), &ALL);
    sweep(base(T::Z, T::Z, T::Z, U64, Api::Typed("Z", true)), &ALL);
}

#[test]
fn hgemm_family() {
    // f16 in and out, f16 scalars; the arithmetic is f32 (at least as
    // precise as CUBLAS_COMPUTE_16F asks).
    sweep(base(T::H, T::H, T::H, U32, Api::Typed("H", false)), &ALL);
    sweep(base(T::H, T::H, T::H, U32, Api::Typed("H", true)), &[Batch::One]);
}

const COMPUTE_16F: i32 = 64;
const COMPUTE_32F: i32 = 68;
const COMPUTE_32F_PEDANTIC: i32 = 69;
const COMPUTE_64F: i32 = 70;
const COMPUTE_32F_FAST_16F: i32 = 74;
const COMPUTE_32F_FAST_TF32: i32 = 77;
const COMPUTE_32I: i32 = 72;

#[test]
fn gemm_ex_type_combinations() {
    // (A and B, C, scale, compute) as cuBLAS's table lists them.
    let combos = [
        (T::H, T::H, T::H, COMPUTE_16F),
        (T::H, T::H, T::S, COMPUTE_32F),
        (T::BF, T::BF, T::S, COMPUTE_32F),
        (T::H, T::S, T::S, COMPUTE_32F),
        (T::BF, T::S, T::S, COMPUTE_32F_PEDANTIC),
        (T::S, T::S, T::S, COMPUTE_32F),
        (T::S, T::S, T::S, COMPUTE_32F_FAST_16F),
        (T::S, T::S, T::S, COMPUTE_32F_FAST_TF32),
        (T::C, T::C, T::C, COMPUTE_32F),
        (T::D, T::D, T::D, COMPUTE_64F),
        (T::Z, T::Z, T::Z, COMPUTE_64F),
        (T::I8, T::S, T::S, COMPUTE_32F),
        (T::I8, T::I32, T::I32, COMPUTE_32I),
    ];
    for (i, (ab, c, scale, compute)) in combos.into_iter().enumerate() {
        // Integer products are exact.
        let u = match ab {
            T::D | T::Z => U64,
            T::I8 if c == T::I32 => 0.0,
            _ => U32,
        };
        let batches: &[Batch] = if i % 2 == 0 { &ALL } else { &[Batch::One] };
        sweep(base(ab, c, scale, u, Api::Ex(compute, i % 3 == 0)), batches);
    }
}

#[test]
fn large_and_many_products() {
    // Big enough for the parallel, blocked paths; many small products for
    // the one-product-per-thread path.
    for (m, n, k, count, batch) in
        [(130, 70, 150, 1, Batch::One), (67, 129, 300, 2, Batch::Strided), (8, 8, 8, 200, Batch::Pointers), (16, 4, 33, 64, Batch::Strided)]
    {
        for (t, u, p) in [(T::S, U32, "S"), (T::D, U64, "D"), (T::H, U32, "H")] {
            let c = Case { m, n, k, count, batch, ta: 1, tb: 0, pad: 1, ..base(t, t, t, u, Api::Typed(p, false)) };
            run(c, 99).unwrap();
        }
    }
}

#[test]
fn skinny_products_with_a_transposed() {
    // op(A) stored row-major with few result columns: the product runs a
    // block of rows at a time on transposed copies (f32, f16, bf16 A),
    // with partial blocks and tiles at every edge; f64 (which runs on the
    // gemm crate directly) on the same shapes.
    let mut failures = Vec::new();
    for (m, n, k) in [(300, 5, 37), (520, 64, 130), (263, 256, 9)] {
        for (t, ct, scale, api, u) in [
            (T::S, T::S, T::S, Api::Typed("S", false), U32),
            (T::H, T::H, T::H, Api::Typed("H", false), U32),
            (T::BF, T::BF, T::S, Api::Ex(COMPUTE_32F, false), U32),
            (T::H, T::S, T::S, Api::Ex(COMPUTE_32F, true), U32),
            (T::D, T::D, T::D, Api::Typed("D", false), U64),
        ] {
            for ta in [1, 2] {
                for tb in [0, 1] {
                    for beta_zero in [false, true] {
                        for (batch, count) in [(Batch::One, 1), (Batch::Strided, 2)] {
                            // The large shape once per type (several
                            // blocks, run in parallel).
                            if m == 520 && (ta, tb, beta_zero, count) != (1, 0, false, 2) {
                                continue;
                            }
                            let c = Case { m, n, k, ta, tb, beta_zero, batch, count, pad: 1, ..base(t, ct, scale, u, api) };
                            if let Err(e) = run(c, (m + n + k) as u64) {
                                failures.push(e);
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures, first: {}", failures.len(), failures[0]);
}

#[test]
fn f16_products_with_a_transposed_in_column_blocks() {
    // op(A) an f16 matrix stored row-major, too many result columns for
    // the chunked product: A is widened by a transposition into a
    // column-major copy, 256 rows of op(A) per task, with partial blocks
    // and tiles at the edges.
    let mut failures = Vec::new();
    for (m, n, k) in [(520, 300, 70), (257, 260, 9)] {
        for (ct, scale, api) in [(T::H, T::H, Api::Typed("H", false)), (T::S, T::S, Api::Ex(COMPUTE_32F, true))] {
            for (ta, tb, beta_zero, batch, count) in [(1, 0, false, Batch::One, 1), (2, 1, true, Batch::Strided, 2)] {
                let c = Case { m, n, k, ta, tb, beta_zero, batch, count, pad: 1, ..base(T::H, ct, scale, U32, api) };
                if let Err(e) = run(c, (m * n + k) as u64) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures, first: {}", failures.len(), failures[0]);
}

#[test]
fn empty_shapes_and_alpha_zero() {
    // k = 0 and alpha = 0 give beta C without reading A or B.
    for k in [0, 4] {
        let c = Case { k, ..base(T::S, T::S, T::S, U32, Api::Typed("S", false)) };
        run(c, 5).unwrap();
    }
}
