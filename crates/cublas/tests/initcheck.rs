//! Under the memory checker's initcheck, a cuBLAS result counts as
//! written: a kernel reading C after `cublasSgemm` (beta = 0, so C was
//! never written before) is not reported, while the same kernel reading
//! memory nothing wrote is. The checker's reports go to stderr, so the test
//! runs itself as a child process with `ANYCUDA_MEMCHECK=initcheck`.

mod common;
use common::*;
use std::ffi::c_void;
use std::ptr::null_mut;

const CHILD: &str = "ANYCUDA_CUBLAS_INITCHECK_CHILD";
const MARK: &str = "--- now a read of memory nothing wrote";

const COPY: &str = ".version 7.0
.target sm_70
.address_size 64
.visible .entry copy(.param .u64 src, .param .u64 dst, .param .u32 n)
{
    .reg .pred %p;
    .reg .b32 %r<2>;
    .reg .b64 %rd<5>;
    .reg .f32 %f;
    ld.param.u64 %rd0, [src];
    ld.param.u64 %rd1, [dst];
    ld.param.u32 %r0, [n];
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p, %r1, %r0;
    @%p ret;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd0, %rd2;
    add.s64 %rd4, %rd1, %rd2;
    ld.global.f32 %f, [%rd3];
    st.global.f32 [%rd4], %f;
    ret;
}
\0";

/// The child: a GEMM into unwritten C, a kernel reading C, then the same
/// kernel reading an unwritten buffer.
fn child() {
    let e = env();
    let n = 8usize;
    let a = e.upload(&vec![1.0f32; n * n]);
    let b = e.upload(&vec![2.0f32; n * n]);
    let c = e.alloc(4 * n * n);
    let d = e.alloc(4 * n * n);
    let unwritten = e.alloc(4 * n * n);
    let h = e.handle();
    unsafe {
        type Sgemm =
            unsafe extern "C" fn(*mut c_void, i32, i32, i32, i32, i32, *const f32, u64, i32, u64, i32, *const f32, u64, i32) -> i32;
        let sgemm: Sgemm = e.blas.f("cublasSgemm_v2");
        let (alpha, beta) = (1.0f32, 0.0f32);
        let n = n as i32;
        assert_eq!(sgemm(h, 0, 0, n, n, n, &alpha, a, n, b, n, &beta, c, n), 0);
        let load: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> i32 = e.cuda.f("cuModuleLoadData");
        let get: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const i8) -> i32 = e.cuda.f("cuModuleGetFunction");
        type Launch =
            unsafe extern "C" fn(*mut c_void, u32, u32, u32, u32, u32, u32, u32, *mut c_void, *mut *mut c_void, *mut *mut c_void) -> i32;
        let launch: Launch = e.cuda.f("cuLaunchKernel");
        let (mut m, mut f) = (null_mut(), null_mut());
        assert_eq!(load(&mut m, COPY.as_ptr().cast()), 0);
        assert_eq!(get(&mut f, m, c"copy".as_ptr()), 0);
        let run = |src: u64| {
            let (mut src, mut dst, mut count) = (src, d, (n * n) as u32);
            let mut args: [*mut c_void; 3] =
                [(&mut src as *mut u64).cast(), (&mut dst as *mut u64).cast(), (&mut count as *mut u32).cast()];
            assert_eq!(launch(f, 1, 1, 1, 64, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()), 0);
            e.sync();
        };
        run(c);
        assert_eq!(e.download::<f32>(d, 1)[0], 16.0, "the GEMM ran");
        eprintln!("{MARK}");
        run(unwritten);
    }
}

#[test]
fn a_cublas_result_counts_as_written_for_initcheck() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let exe = std::env::current_exe().expect("test executable");
    let out = std::process::Command::new(exe)
        .args(["--exact", "a_cublas_result_counts_as_written_for_initcheck", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("ANYCUDA_MEMCHECK", "initcheck")
        .output()
        .expect("child runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stderr}");
    let (before, after) = stderr.split_once(MARK).unwrap_or_else(|| panic!("no marker in:\n{stderr}"));
    assert!(!before.contains("anycuda initcheck"), "the GEMM's result was reported as unwritten:\n{before}");
    assert!(after.contains("uninitialized __global__ memory read"), "initcheck did not run:\n{after}");
}
