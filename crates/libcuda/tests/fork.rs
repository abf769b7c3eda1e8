//! `fork()` with the library loaded: a child forked after `cuInit` gets
//! `CUDA_ERROR_NOT_INITIALIZED` from every call that needs the driver (as
//! with NVIDIA's driver), immediately, even while the parent's streams are
//! busy; a child forked before `cuInit` uses CUDA normally; the parent is
//! unaffected. A child that hangs is killed by its own alarm, which fails
//! the test.

mod common;
use common::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;

/// Runs `f` in a forked child (with a 20 s alarm) and returns its exit
/// status: the number `f` returns, or a description of the signal.
fn in_child(f: impl FnOnce() -> i32) -> Result<i32, String> {
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            libc::alarm(20);
            let code = f();
            libc::_exit(code);
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        if libc::WIFEXITED(status) {
            Ok(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            Err(if sig == libc::SIGALRM {
                "the child hung (killed by its alarm)".into()
            } else {
                format!("the child died of signal {sig}")
            })
        } else {
            Err(format!("status {status:#x}"))
        }
    }
}

const NOT_INITIALIZED_CODE: u32 = NOT_INITIALIZED;

#[test]
fn fork_before_and_after_init() {
    let log = std::env::temp_dir().join(format!("anycuda-fork-test-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    std::env::set_var("ANYCUDA_LOG", "debug");
    std::env::set_var("ANYCUDA_LOG_FILE", &log);
    let l = Lib::open();
    api!(l;
        cuInit: fn(u32); cuDriverGetVersion: fn(*mut i32); cuGetErrorString: fn(u32, *mut *const c_char);
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr); cuCtxGetCurrent: fn(*mut Ptr);
        cuCtxSynchronize: fn(); cuStreamCreate: fn(*mut Ptr, u32); cuStreamSynchronize: fn(Ptr); cuStreamQuery: fn(Ptr);
        cuMemAlloc_v2: fn(*mut u64, usize); cuMemFree_v2: fn(u64); cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuModuleLoadData: fn(*mut Ptr, *const c_void); cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuGraphCreate: fn(*mut Ptr, u32);
    );
    // Fills n u32s at p with v on stream s (mock_fill_u32), or sleeps ms.
    let setup = || unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, MOCK_PTX.as_ptr().cast()), SUCCESS);
        let (mut fill, mut sleep) = (null_mut(), null_mut());
        assert_eq!(cuModuleGetFunction(&mut fill, m, c"mock_fill_u32".as_ptr()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut sleep, m, c"mock_sleep".as_ptr()), SUCCESS);
        let mut s = null_mut();
        assert_eq!(cuStreamCreate(&mut s, 0), SUCCESS);
        (fill, sleep, s)
    };
    let fill_and_check = |fill: Ptr, s: Ptr, v: u32| -> bool {
        unsafe {
            let mut d = 0u64;
            if cuMemAlloc_v2(&mut d, 64 * 4) != SUCCESS {
                return false;
            }
            let n = 64u32;
            let mut params: [*mut c_void; 3] =
                [(&d as *const u64).cast_mut().cast(), (&v as *const u32).cast_mut().cast(), (&n as *const u32).cast_mut().cast()];
            if cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, s, params.as_mut_ptr(), null_mut()) != SUCCESS
                || cuStreamSynchronize(s) != SUCCESS
            {
                return false;
            }
            let mut h = [0u32; 64];
            let ok = cuMemcpyDtoH_v2(h.as_mut_ptr().cast(), d, 256) == SUCCESS && h.iter().all(|&x| x == v);
            ok && cuMemFree_v2(d) == SUCCESS
        }
    };

    // Forked before cuInit: the child starts CUDA itself and uses it.
    let r = in_child(|| {
        let (fill, _, s) = setup();
        if fill_and_check(fill, s, 7) {
            0
        } else {
            1
        }
    });
    assert_eq!(r, Ok(0), "a child forked before cuInit uses CUDA");

    // Initialised, with a stream busy in a worker thread at the fork.
    let (fill, sleep, s) = setup();
    assert!(fill_and_check(fill, s, 3));
    let ms = 300u32;
    let mut params: [*mut c_void; 1] = [(&ms as *const u32).cast_mut().cast()];
    unsafe { assert_eq!(cuLaunchKernel(sleep, 1, 1, 1, 1, 1, 1, 0, s, params.as_mut_ptr(), null_mut()), SUCCESS) };
    let r = in_child(|| unsafe {
        let mut version = 0;
        let mut text: *const c_char = std::ptr::null();
        let mut d = 0u64;
        let mut c = null_mut();
        let mut g = null_mut();
        let checks = [
            cuStreamSynchronize(s) == NOT_INITIALIZED_CODE,
            cuCtxSynchronize() == NOT_INITIALIZED_CODE,
            cuStreamQuery(s) == NOT_INITIALIZED_CODE,
            cuMemAlloc_v2(&mut d, 256) == NOT_INITIALIZED_CODE,
            cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, params.as_mut_ptr(), null_mut()) == NOT_INITIALIZED_CODE,
            cuInit(0) == NOT_INITIALIZED_CODE,
            cuCtxGetCurrent(&mut c) == NOT_INITIALIZED_CODE,
            cuGraphCreate(&mut g, 0) == NOT_INITIALIZED_CODE,
            // What needs no driver state still answers.
            cuDriverGetVersion(&mut version) == SUCCESS && version > 0,
            cuGetErrorString(NOT_INITIALIZED_CODE, &mut text) == SUCCESS
                && !text.is_null()
                && CStr::from_ptr(text).to_str() == Ok("initialization error"),
        ];
        match checks.iter().position(|ok| !ok) {
            None => 0,
            Some(i) => 10 + i as i32,
        }
    });
    assert_eq!(r, Ok(0), "child forked after cuInit (exit status 10 + i: check i failed)");
    // The parent goes on.
    unsafe { assert_eq!(cuStreamSynchronize(s), SUCCESS) };
    assert!(fill_and_check(fill, s, 9));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert!(text.contains("cuStreamSynchronize: CUDA was initialised before this process was forked"), "the child's log line: {text}");
}
