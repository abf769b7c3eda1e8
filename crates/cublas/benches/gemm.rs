//! cuBLAS SGEMM/DGEMM/HGEMM and a cuBLASLt matmul through anycuda's
//! libraries (device memory, the call plus a stream synchronisation, on
//! anycuda's CPU device) against OpenBLAS's `cblas_sgemm`/`cblas_dgemm` on
//! the same shapes in the same run. HGEMM is measured against OpenBLAS
//! SGEMM (OpenBLAS has no f16 product, and the f32 product of the same
//! shape is the work the CPU does for it); the cuBLASLt matmul (f32 with a
//! bias and ReLU epilogue) against OpenBLAS SGEMM followed by the same
//! epilogue in a plain loop; STRSM (left, lower) against `cblas_strsm`;
//! DSYRK against `cblas_dsyrk`; batched LU (`cublasDgetrfBatched`)
//! against OpenBLAS's LAPACK `dgetrf_` called for each matrix.
//!
//! The machine the project runs on is shared, so each shape is measured in
//! rounds that alternate the two libraries; each round takes the best of a
//! few calls of each, and the table gives the median round and the range
//! over rounds, of the speeds and of the ratio (OpenBLAS time / anycuda
//! time: above 1 anycuda is faster). The `(crate)` lines call the `gemm`
//! crate behind the library directly on host memory, the operands as they
//! are: the library's SGEMM as one plain call of the crate; the first line gives the cost of a call apart from its
//! arithmetic.
//!
//! `cargo bench -p anycuda-cublas --bench gemm` (OpenBLAS from Debian's
//! libopenblas-dev, opened at run time). `GEMM_BENCH_ROUNDS` sets the
//! rounds (default 5), `GEMM_BENCH_SHAPES=256,1024` keeps the shapes with
//! those `m` (the rank-k and LU lines: those `n`), `GEMM_BENCH_OPS=HGEMM,DSYRK`
//! the lines of those operations. Debian's OpenBLAS does not recognise every CPU (in
//! virtual machines it may fall back to its generic Prescott kernels);
//! unless OPENBLAS_CORETYPE is set, this picks SkylakeX on CPUs with
//! AVX-512 and Haswell on CPUs with AVX2, its fastest kernels for them.

#[path = "../tests/common/mod.rs"]
mod common;

use std::ffi::c_void;
use std::time::Instant;

type P = *const c_void;
type H = *mut c_void;
type CblasS = unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, f32, *const f32, i32, *const f32, i32, f32, *mut f32, i32);
type CblasD = unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, f64, *const f64, i32, *const f64, i32, f64, *mut f64, i32);
type Gemm = unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32;
type LtMatmul = unsafe extern "C" fn(H, H, P, P, H, P, H, P, P, H, H, H, P, H, usize, H) -> i32;

fn best_of(reps: usize, f: &mut dyn FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Alternating rounds of `ours` and `theirs`; prints one table line.
fn compare(label: &str, shape: &str, flops: f64, rounds: usize, ours: &mut dyn FnMut(), theirs: &mut dyn FnMut()) {
    // GEMM_BENCH_OPS=HGEMM,DSYRK: only the lines of those operations.
    if let Ok(ops) = std::env::var("GEMM_BENCH_OPS") {
        if !ops.split(',').any(|o| o.trim().eq_ignore_ascii_case(label)) {
            return;
        }
    }
    let reps = ((2e10 / flops) as usize).clamp(1, 30);
    ours();
    theirs();
    let (mut to, mut tt, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        // Alternate which goes first, so that neither always follows the
        // other's cache and frequency state.
        let (a, b) = if r % 2 == 0 {
            let a = best_of(reps, ours);
            (a, best_of(reps, theirs))
        } else {
            let b = best_of(reps, theirs);
            (best_of(reps, ours), b)
        };
        to.push(flops / a / 1e9);
        tt.push(flops / b / 1e9);
        ratio.push(b / a);
    }
    let range = |v: &[f64]| {
        let lo = v.iter().cloned().fold(f64::MAX, f64::min);
        let hi = v.iter().cloned().fold(f64::MIN, f64::max);
        (lo, hi)
    };
    let (ol, oh) = range(&to);
    let (tl, th) = range(&tt);
    let (rl, rh) = range(&ratio);
    println!(
        "{label:<8} {shape:<18} {:>7.1} ({ol:>5.1}-{oh:<5.1}) {:>7.1} ({tl:>5.1}-{th:<5.1}) {:>5.2} ({rl:.2}-{rh:.2})",
        median(&mut to),
        median(&mut tt),
        median(&mut ratio)
    );
}

fn main() {
    if std::env::var_os("OPENBLAS_CORETYPE").is_none() {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                std::env::set_var("OPENBLAS_CORETYPE", "SkylakeX");
            } else if std::arch::is_x86_feature_detected!("avx2") {
                std::env::set_var("OPENBLAS_CORETYPE", "Haswell");
            }
        }
    }
    let blas = unsafe { libc::dlopen(c"libopenblas.so.0".as_ptr(), libc::RTLD_NOW) };
    if blas.is_null() {
        eprintln!("gemm bench: libopenblas.so.0 not found (install libopenblas-dev; scripts/setup.sh does)");
        std::process::exit(1);
    }
    let sgemm_ref: CblasS = unsafe { std::mem::transmute(libc::dlsym(blas, c"cblas_sgemm".as_ptr())) };
    let dgemm_ref: CblasD = unsafe { std::mem::transmute(libc::dlsym(blas, c"cblas_dgemm".as_ptr())) };
    let rounds: usize = std::env::var("GEMM_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).max(1);
    let e = common::env();
    let h = e.handle();
    let sgemm: Gemm = e.blas.f("cublasSgemm_v2");
    let dgemm: Gemm = e.blas.f("cublasDgemm_v2");
    let hgemm: Gemm = e.blas.f("cublasHgemm");
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let var = |v: &str| std::env::var(v).unwrap_or_else(|_| "unset".into());
    println!(
        "CPUs: {threads}, RAYON_NUM_THREADS={}, OPENBLAS_NUM_THREADS={}, OPENBLAS_CORETYPE={}, {rounds} alternating rounds per line",
        var("RAYON_NUM_THREADS"),
        var("OPENBLAS_NUM_THREADS"),
        var("OPENBLAS_CORETYPE")
    );
    println!("GF/s: median round (range); ratio = OpenBLAS time / anycuda time");
    // What a call costs besides its arithmetic: a 1 x 1 x 1 SGEMM (the
    // checks, the host function on the stream, the synchronisation).
    {
        let (d1, one, zero) = (e.upload(&[1f32; 1]), 1f32, 0f32);
        let mut x = [1f32; 1];
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..rounds {
            ours.push(best_of(200, &mut || unsafe {
                assert_eq!(
                    sgemm(h, 0, 0, 1, 1, 1, (&one as *const f32).cast(), d1 as P, 1, d1 as P, 1, (&zero as *const f32).cast(), d1 as H, 1),
                    0
                );
                e.sync();
            }));
            theirs.push(best_of(200, &mut || unsafe {
                sgemm_ref(102, 111, 111, 1, 1, 1, 1.0, x.as_ptr(), 1, x.as_ptr(), 1, 0.0, x.as_mut_ptr(), 1)
            }));
        }
        println!(
            "call overhead (1x1x1 SGEMM plus synchronisation): anycuda {:.1} us, OpenBLAS {:.2} us (median of {rounds} best-of-200)",
            median(&mut ours) * 1e6,
            median(&mut theirs) * 1e6
        );
        e.free(d1);
    }
    println!("{:<8} {:<18} {:>21} {:>21} {:>16}", "op", "m x n x k (ops)", "anycuda", "OpenBLAS", "ratio");
    // (m, n, k, transa, transb): square products, and the shapes of a
    // linear layer (a weight times a block of tokens, weight transposed).
    let shapes = [
        (256, 256, 256, 0, 0),
        (512, 512, 512, 0, 0),
        (1024, 1024, 1024, 0, 0),
        (2048, 2048, 2048, 0, 0),
        (1024, 1024, 1024, 1, 0),
        (4096, 64, 1024, 1, 0),
        (1024, 512, 4096, 0, 1),
    ];
    // GEMM_BENCH_SHAPES=256,1024: only the shapes whose m is listed.
    let only: Option<Vec<usize>> =
        std::env::var("GEMM_BENCH_SHAPES").ok().map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    for (m, n, k, ta, tb) in shapes {
        if only.as_ref().is_some_and(|o| !o.contains(&m)) {
            continue;
        }
        let flops = 2.0 * (m * n * k) as f64;
        let shape = format!("{m}x{n}x{k} {}{}", if ta == 1 { "T" } else { "N" }, if tb == 1 { "T" } else { "N" });
        let (lda, ldb, ldc) = (if ta == 1 { k } else { m }, if tb == 1 { n } else { k }, m);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        let (cta, ctb) = (if ta == 1 { 112 } else { 111 }, if tb == 1 { 112 } else { 111 });
        let af: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect();
        let bf: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5).collect();
        let mut cf = vec![0f32; m * n];
        let (da, db, dc) = (e.upload(&af), e.upload(&bf), e.upload(&cf));
        let (one, zero) = (1f32, 0f32);
        compare(
            "SGEMM",
            &shape,
            flops,
            rounds,
            &mut || unsafe {
                let st = sgemm(
                    h,
                    ta,
                    tb,
                    mi,
                    ni,
                    ki,
                    (&one as *const f32).cast(),
                    da as P,
                    lda as i32,
                    db as P,
                    ldb as i32,
                    (&zero as *const f32).cast(),
                    dc as H,
                    ldc as i32,
                );
                assert_eq!(st, 0);
                e.sync();
            },
            &mut || unsafe {
                sgemm_ref(
                    102,
                    cta,
                    ctb,
                    mi,
                    ni,
                    ki,
                    1.0,
                    af.as_ptr(),
                    lda as i32,
                    bf.as_ptr(),
                    ldb as i32,
                    0.0,
                    cf.as_mut_ptr(),
                    ldc as i32,
                )
            },
        );
        // The gemm crate called directly on host memory, the operands as
        // they are: the library's SGEMM as one plain call of the crate.
        let mut cg = vec![0f32; m * n];
        let (ars, acs) = if ta == 1 { (lda as isize, 1) } else { (1, lda as isize) };
        let (brs, bcs) = if tb == 1 { (ldb as isize, 1) } else { (1, ldb as isize) };
        compare(
            "(crate)",
            &shape,
            flops,
            rounds,
            &mut || unsafe {
                gemm::gemm::<f32>(
                    m,
                    n,
                    k,
                    cg.as_mut_ptr(),
                    ldc as isize,
                    1,
                    false,
                    af.as_ptr(),
                    acs,
                    ars,
                    bf.as_ptr(),
                    bcs,
                    brs,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    gemm::Parallelism::Rayon(0),
                )
            },
            &mut || unsafe {
                sgemm_ref(
                    102,
                    cta,
                    ctb,
                    mi,
                    ni,
                    ki,
                    1.0,
                    af.as_ptr(),
                    lda as i32,
                    bf.as_ptr(),
                    ldb as i32,
                    0.0,
                    cf.as_mut_ptr(),
                    ldc as i32,
                )
            },
        );
        let ah: Vec<half::f16> = af.iter().map(|&x| half::f16::from_f32(x)).collect();
        let bh: Vec<half::f16> = bf.iter().map(|&x| half::f16::from_f32(x)).collect();
        let (dha, dhb, dhc) = (e.upload(&ah), e.upload(&bh), e.upload(&vec![half::f16::ZERO; m * n]));
        let (oneh, zeroh) = (half::f16::ONE, half::f16::ZERO);
        compare(
            "HGEMM",
            &shape,
            flops,
            rounds,
            &mut || unsafe {
                let st = hgemm(
                    h,
                    ta,
                    tb,
                    mi,
                    ni,
                    ki,
                    (&oneh as *const half::f16).cast(),
                    dha as P,
                    lda as i32,
                    dhb as P,
                    ldb as i32,
                    (&zeroh as *const half::f16).cast(),
                    dhc as H,
                    ldc as i32,
                );
                assert_eq!(st, 0);
                e.sync();
            },
            &mut || unsafe {
                sgemm_ref(
                    102,
                    cta,
                    ctb,
                    mi,
                    ni,
                    ki,
                    1.0,
                    af.as_ptr(),
                    lda as i32,
                    bf.as_ptr(),
                    ldb as i32,
                    0.0,
                    cf.as_mut_ptr(),
                    ldc as i32,
                )
            },
        );
        // The cuBLASLt matmul with a bias and ReLU (PyTorch's fused
        // linear layer) against SGEMM plus the same epilogue.
        let bias: Vec<f32> = (0..m).map(|i| (i % 7) as f32 * 0.1 - 0.3).collect();
        let dbias = e.upload(&bias);
        let lt = lt_setup(e, m, n, k, ta, tb, dbias);
        let matmul: LtMatmul = e.lt.f("cublasLtMatmul");
        compare(
            "Lt+bias",
            &shape,
            flops,
            rounds,
            &mut || unsafe {
                let st = matmul(
                    lt.h,
                    lt.desc,
                    (&one as *const f32).cast(),
                    da as P,
                    lt.a,
                    db as P,
                    lt.b,
                    (&zero as *const f32).cast(),
                    dc as P,
                    lt.c,
                    dc as H,
                    lt.c,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                );
                assert_eq!(st, 0);
                e.sync();
            },
            &mut || unsafe {
                sgemm_ref(
                    102,
                    cta,
                    ctb,
                    mi,
                    ni,
                    ki,
                    1.0,
                    af.as_ptr(),
                    lda as i32,
                    bf.as_ptr(),
                    ldb as i32,
                    0.0,
                    cf.as_mut_ptr(),
                    ldc as i32,
                );
                for col in cf.chunks_mut(m) {
                    for (v, b) in col.iter_mut().zip(&bias) {
                        *v = (*v + b).max(0.0);
                    }
                }
            },
        );
        lt.destroy(e);
        if m * n * k <= 1 << 30 {
            let ad: Vec<f64> = af.iter().map(|&x| x as f64).collect();
            let bd: Vec<f64> = bf.iter().map(|&x| x as f64).collect();
            let mut cd = vec![0f64; m * n];
            let (dda, ddb, ddc) = (e.upload(&ad), e.upload(&bd), e.upload(&cd));
            let (oned, zerod) = (1f64, 0f64);
            compare(
                "DGEMM",
                &shape,
                flops,
                rounds,
                &mut || unsafe {
                    let st = dgemm(
                        h,
                        ta,
                        tb,
                        mi,
                        ni,
                        ki,
                        (&oned as *const f64).cast(),
                        dda as P,
                        lda as i32,
                        ddb as P,
                        ldb as i32,
                        (&zerod as *const f64).cast(),
                        ddc as H,
                        ldc as i32,
                    );
                    assert_eq!(st, 0);
                    e.sync();
                },
                &mut || unsafe {
                    dgemm_ref(
                        102,
                        cta,
                        ctb,
                        mi,
                        ni,
                        ki,
                        1.0,
                        ad.as_ptr(),
                        lda as i32,
                        bd.as_ptr(),
                        ldb as i32,
                        0.0,
                        cd.as_mut_ptr(),
                        ldc as i32,
                    )
                },
            );
            for p in [dda, ddb, ddc] {
                e.free(p);
            }
        }
        for p in [da, db, dc, dha, dhb, dhc, dbias] {
            e.free(p);
        }
    }
    // Triangular solves (left, lower, not transposed): the blocked solve
    // against OpenBLAS's cblas_strsm. B is restored from a copy before each
    // solve on both sides (the copy is timed on both).
    let strsm: unsafe extern "C" fn(H, i32, i32, i32, i32, i32, i32, P, P, i32, H, i32) -> i32 = e.blas.f("cublasStrsm_v2");
    let strsm_ref: unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, i32, f32, *const f32, i32, *mut f32, i32) =
        unsafe { std::mem::transmute(libc::dlsym(blas, c"cblas_strsm".as_ptr())) };
    let memcpy_dtod: unsafe extern "C" fn(u64, u64, usize) -> i32 = e.cuda.f("cuMemcpyDtoD_v2");
    for (m, n) in [(512usize, 512usize), (1024, 1024)] {
        if only.as_ref().is_some_and(|o| !o.contains(&m)) {
            continue;
        }
        let a: Vec<f32> =
            (0..m * m).map(|i| if i % (m + 1) == 0 { 2.0 + (i % 3) as f32 } else { ((i * 7) % 13) as f32 / 13.0 / m as f32 }).collect();
        let b0: Vec<f32> = (0..m * n).map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5).collect();
        let mut bh = b0.clone();
        let (da, db, db0) = (e.upload(&a), e.upload(&b0), e.upload(&b0));
        let one = 1f32;
        compare(
            "STRSM",
            &format!("{m}x{n} LLNN"),
            (m * m * n) as f64,
            rounds,
            &mut || unsafe {
                assert_eq!(memcpy_dtod(db, db0, m * n * 4), 0);
                assert_eq!(strsm(h, 0, 0, 0, 0, m as i32, n as i32, (&one as *const f32).cast(), da as P, m as i32, db as H, m as i32), 0);
                e.sync();
            },
            &mut || unsafe {
                bh.copy_from_slice(&b0);
                strsm_ref(102, 141, 122, 111, 131, m as i32, n as i32, 1.0, a.as_ptr(), m as i32, bh.as_mut_ptr(), m as i32);
            },
        );
        for p in [da, db, db0] {
            e.free(p);
        }
    }
    // Rank-k updates: DSYRK (C = A A^T or A^T A, lower triangle, C read
    // with beta = 1) against cblas_dsyrk; n^2 k operations counted
    // (the triangle's n (n + 1) k / 2 multiply-adds, two operations each).
    let dsyrk: unsafe extern "C" fn(H, i32, i32, i32, i32, P, P, i32, P, H, i32) -> i32 = e.blas.f("cublasDsyrk_v2");
    let dsyrk_ref: unsafe extern "C" fn(i32, i32, i32, i32, i32, f64, *const f64, i32, f64, *mut f64, i32) =
        unsafe { std::mem::transmute(libc::dlsym(blas, c"cblas_dsyrk".as_ptr())) };
    for (n, k) in [(1024usize, 1024usize)] {
        if only.as_ref().is_some_and(|o| !o.contains(&n)) {
            continue;
        }
        let a: Vec<f64> = (0..n * k).map(|i| ((i * 7) % 13) as f64 / 13.0 - 0.5).collect();
        let mut c: Vec<f64> = (0..n * n).map(|i| ((i * 5) % 11) as f64 / 11.0 - 0.5).collect();
        let (da, dc) = (e.upload(&a), e.upload(&c));
        let (one, beta) = (1f64, 1f64);
        for trans in [0, 1] {
            let lda = if trans == 0 { n } else { k };
            compare(
                "DSYRK",
                &format!("{n}x{k} L{}", if trans == 0 { "N" } else { "T" }),
                (n * n * k) as f64,
                rounds,
                &mut || unsafe {
                    let st = dsyrk(
                        h,
                        0,
                        trans,
                        n as i32,
                        k as i32,
                        (&one as *const f64).cast(),
                        da as P,
                        lda as i32,
                        (&beta as *const f64).cast(),
                        dc as H,
                        n as i32,
                    );
                    assert_eq!(st, 0);
                    e.sync();
                },
                &mut || unsafe {
                    dsyrk_ref(
                        102,
                        122,
                        if trans == 0 { 111 } else { 112 },
                        n as i32,
                        k as i32,
                        1.0,
                        a.as_ptr(),
                        lda as i32,
                        1.0,
                        c.as_mut_ptr(),
                        n as i32,
                    )
                },
            );
        }
        for p in [da, dc] {
            e.free(p);
        }
    }
    // Batched LU with partial pivoting: cublasDgetrfBatched against
    // OpenBLAS's LAPACK dgetrf_ called for each matrix; the matrices are
    // restored from a copy before each factorisation on both sides (the
    // copy is timed on both); 2/3 n^3 operations per matrix counted.
    let dgetrf: unsafe extern "C" fn(H, i32, u64, i32, u64, u64, i32) -> i32 = e.blas.f("cublasDgetrfBatched");
    let getrf_sym = unsafe { libc::dlsym(blas, c"dgetrf_".as_ptr()) };
    if getrf_sym.is_null() {
        println!("DGETRF: OpenBLAS's LAPACK (dgetrf_) not found in libopenblas.so.0; no batched LU lines");
    } else {
        let dgetrf_ref: unsafe extern "C" fn(*const i32, *const i32, *mut f64, *const i32, *mut i32, *mut i32) =
            unsafe { std::mem::transmute(getrf_sym) };
        for (count, n) in [(100usize, 32usize), (10, 256)] {
            if only.as_ref().is_some_and(|o| !o.contains(&n)) {
                continue;
            }
            let nn = n * n;
            // A general matrix (pivoting happens), nonsingular.
            let a0: Vec<f64> = (0..count * nn)
                .map(|i| ((i * 7 + i / nn) % 13) as f64 / 13.0 - 0.5 + if i % nn % (n + 1) == 0 { 0.25 } else { 0.0 })
                .collect();
            let mut ah = a0.clone();
            let (da, da0) = (e.upload(&a0), e.upload(&a0));
            let ptrs: Vec<u64> = (0..count).map(|i| da + (i * nn * 8) as u64).collect();
            let dptrs = e.upload(&ptrs);
            let (dpiv, dinfo) = (e.upload(&vec![0i32; count * n]), e.upload(&vec![0i32; count]));
            let mut piv = vec![0i32; n];
            let ni = n as i32;
            compare(
                "DGETRF",
                &format!("{count} x {n}x{n} batch"),
                (count * 2 * n * n * n) as f64 / 3.0,
                rounds,
                &mut || unsafe {
                    assert_eq!(memcpy_dtod(da, da0, count * nn * 8), 0);
                    assert_eq!(dgetrf(h, ni, dptrs, ni, dpiv, dinfo, count as i32), 0);
                    e.sync();
                },
                &mut || unsafe {
                    ah.copy_from_slice(&a0);
                    for m in ah.chunks_mut(nn) {
                        let mut info = 0;
                        dgetrf_ref(&ni, &ni, m.as_mut_ptr(), &ni, piv.as_mut_ptr(), &mut info);
                        assert_eq!(info, 0);
                    }
                },
            );
            let info: Vec<i32> = e.download(dinfo, count);
            assert!(info.iter().all(|&i| i == 0), "DGETRF: a matrix of the benchmark was singular: {info:?}");
            for p in [da, da0, dptrs, dpiv, dinfo] {
                e.free(p);
            }
        }
    }
    e.destroy(h);
}

/// A cuBLASLt handle, an f32 matmul descriptor with a bias and ReLU
/// epilogue, and the layouts of A, B and C = D.
struct LtSetup {
    h: H,
    desc: H,
    a: H,
    b: H,
    c: H,
}

fn lt_setup(e: &common::Env, m: usize, n: usize, k: usize, ta: i32, tb: i32, bias: u64) -> LtSetup {
    unsafe {
        let create: unsafe extern "C" fn(*mut H) -> i32 = e.lt.f("cublasLtCreate");
        let desc_create: unsafe extern "C" fn(*mut H, i32, i32) -> i32 = e.lt.f("cublasLtMatmulDescCreate");
        let desc_set: unsafe extern "C" fn(H, i32, P, usize) -> i32 = e.lt.f("cublasLtMatmulDescSetAttribute");
        let layout: unsafe extern "C" fn(*mut H, i32, u64, u64, i64) -> i32 = e.lt.f("cublasLtMatrixLayoutCreate");
        let mut s = LtSetup {
            h: std::ptr::null_mut(),
            desc: std::ptr::null_mut(),
            a: std::ptr::null_mut(),
            b: std::ptr::null_mut(),
            c: std::ptr::null_mut(),
        };
        assert_eq!(create(&mut s.h), 0);
        assert_eq!(desc_create(&mut s.desc, 68, 0), 0);
        assert_eq!(desc_set(s.desc, 3, (&ta as *const i32).cast(), 4), 0);
        assert_eq!(desc_set(s.desc, 4, (&tb as *const i32).cast(), 4), 0);
        assert_eq!(desc_set(s.desc, 7, (&6u32 as *const u32).cast(), 4), 0);
        assert_eq!(desc_set(s.desc, 8, (&bias as *const u64).cast(), 8), 0);
        let (ar, ac) = if ta == 1 { (k, m) } else { (m, k) };
        let (br, bc) = if tb == 1 { (n, k) } else { (k, n) };
        assert_eq!(layout(&mut s.a, 0, ar as u64, ac as u64, ar as i64), 0);
        assert_eq!(layout(&mut s.b, 0, br as u64, bc as u64, br as i64), 0);
        assert_eq!(layout(&mut s.c, 0, m as u64, n as u64, m as i64), 0);
        s
    }
}

impl LtSetup {
    fn destroy(&self, e: &common::Env) {
        unsafe {
            let ld: unsafe extern "C" fn(H) -> i32 = e.lt.f("cublasLtMatrixLayoutDestroy");
            let dd: unsafe extern "C" fn(H) -> i32 = e.lt.f("cublasLtMatmulDescDestroy");
            let d: unsafe extern "C" fn(H) -> i32 = e.lt.f("cublasLtDestroy");
            for l in [self.a, self.b, self.c] {
                ld(l);
            }
            dd(self.desc);
            d(self.h);
        }
    }
}
