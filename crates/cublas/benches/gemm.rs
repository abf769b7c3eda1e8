//! cuBLAS SGEMM/DGEMM/HGEMM through anycuda's libcublas (device memory,
//! the call plus a stream synchronisation, on anycuda's CPU device) against
//! OpenBLAS's `cblas_sgemm`/`cblas_dgemm` on the same shapes in the same
//! run (HGEMM against OpenBLAS SGEMM: OpenBLAS has no f16 product, and the
//! f32 product of the same shape is the work the CPU does for it).
//!
//! `cargo bench -p anycuda-cublas --bench gemm` (OpenBLAS from Debian's
//! libopenblas-dev, opened at run time). Debian's OpenBLAS does not
//! recognise every CPU (in virtual machines it may fall back to its
//! generic Prescott kernels); unless OPENBLAS_CORETYPE is set, this picks
//! SkylakeX on CPUs with AVX-512 and Haswell on CPUs with AVX2, its fastest
//! kernels for them.

#[path = "../tests/common/mod.rs"]
mod common;

use std::ffi::c_void;
use std::time::Instant;

type P = *const c_void;
type H = *mut c_void;
type CblasS = unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, f32, *const f32, i32, *const f32, i32, f32, *mut f32, i32);
type CblasD = unsafe extern "C" fn(i32, i32, i32, i32, i32, i32, f64, *const f64, i32, *const f64, i32, f64, *mut f64, i32);
type Gemm = unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32;

fn best_of(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
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
    let e = common::env();
    let h = e.handle();
    let sgemm: Gemm = e.blas.f("cublasSgemm_v2");
    let dgemm: Gemm = e.blas.f("cublasDgemm_v2");
    let hgemm: Gemm = e.blas.f("cublasHgemm");
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("threads: {threads}, OPENBLAS_CORETYPE={}", std::env::var("OPENBLAS_CORETYPE").unwrap_or_default());
    println!("{:<6} {:>5} {:>12} {:>12} {:>7}", "op", "n", "cuBLAS GF/s", "OpenBLAS", "ratio");
    for n in [256usize, 512, 1024, 2048] {
        let flops = 2.0 * (n * n * n) as f64;
        let reps = ((4e10 / flops) as usize).clamp(3, 50);
        let nn = n as i32;
        let af: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect();
        let mut cf = vec![0f32; n * n];
        let (da, dc) = (e.upload(&af), e.upload(&cf));
        let (one, zero) = (1f32, 0f32);
        let t_ours = best_of(reps, || unsafe {
            assert_eq!(
                sgemm(
                    h,
                    0,
                    0,
                    nn,
                    nn,
                    nn,
                    (&one as *const f32).cast(),
                    da as P,
                    nn,
                    da as P,
                    nn,
                    (&zero as *const f32).cast(),
                    dc as H,
                    nn
                ),
                0
            );
            e.sync();
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        let t_ref = best_of(reps, || unsafe {
            sgemm_ref(102, 111, 111, nn, nn, nn, 1.0, af.as_ptr(), nn, af.as_ptr(), nn, 0.0, cf.as_mut_ptr(), nn)
        });
        println!("{:<6} {:>5} {:>12.1} {:>12.1} {:>7.2}", "SGEMM", n, flops / t_ours / 1e9, flops / t_ref / 1e9, t_ref / t_ours);
        let ad: Vec<f64> = af.iter().map(|&x| x as f64).collect();
        let mut cd = vec![0f64; n * n];
        let (dda, ddc) = (e.upload(&ad), e.upload(&cd));
        let (oned, zerod) = (1f64, 0f64);
        let t_ours_d = best_of(reps, || unsafe {
            assert_eq!(
                dgemm(
                    h,
                    0,
                    0,
                    nn,
                    nn,
                    nn,
                    (&oned as *const f64).cast(),
                    dda as P,
                    nn,
                    dda as P,
                    nn,
                    (&zerod as *const f64).cast(),
                    ddc as H,
                    nn
                ),
                0
            );
            e.sync();
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        let t_ref_d = best_of(reps, || unsafe {
            dgemm_ref(102, 111, 111, nn, nn, nn, 1.0, ad.as_ptr(), nn, ad.as_ptr(), nn, 0.0, cd.as_mut_ptr(), nn)
        });
        println!("{:<6} {:>5} {:>12.1} {:>12.1} {:>7.2}", "DGEMM", n, flops / t_ours_d / 1e9, flops / t_ref_d / 1e9, t_ref_d / t_ours_d);
        let ah: Vec<half::f16> = af.iter().map(|&x| half::f16::from_f32(x)).collect();
        let (dha, dhc) = (e.upload(&ah), e.upload(&vec![half::f16::ZERO; n * n]));
        let (oneh, zeroh) = (half::f16::ONE, half::f16::ZERO);
        let t_ours_h = best_of(reps, || unsafe {
            assert_eq!(
                hgemm(
                    h,
                    0,
                    0,
                    nn,
                    nn,
                    nn,
                    (&oneh as *const half::f16).cast(),
                    dha as P,
                    nn,
                    dha as P,
                    nn,
                    (&zeroh as *const half::f16).cast(),
                    dhc as H,
                    nn
                ),
                0
            );
            e.sync();
        });
        println!("{:<6} {:>5} {:>12.1} {:>12.1} {:>7.2}", "HGEMM", n, flops / t_ours_h / 1e9, flops / t_ref / 1e9, t_ref / t_ours_h);
        for p in [da, dc, dda, ddc, dha, dhc] {
            e.free(p);
        }
    }
    e.destroy(h);
}
