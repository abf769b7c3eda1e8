//! Before cuInit, only a few entry points work (its own process: the
//! driver stays initialised once cuInit succeeds).

mod common;
use common::*;
use std::ffi::{c_char, c_void};

#[test]
fn calls_before_cuinit() {
    let lib = Lib::open();
    api!(lib;
        cuInit: fn(u32);
        cuDriverGetVersion: fn(*mut i32);
        cuDeviceGetCount: fn(*mut i32);
        cuDeviceGet: fn(*mut i32, i32);
        cuCtxGetCurrent: fn(*mut Ptr);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuCtxCreate_v2: fn(*mut Ptr, u32, i32);
        cuStreamCreate: fn(*mut Ptr, u32);
        cuGetErrorName: fn(u32, *mut *const c_char);
        cuGetProcAddress_v2: fn(*const c_char, *mut *mut c_void, i32, u64, *mut u32);
        cuModuleGetLoadingMode: fn(*mut u32);
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
    );
    unsafe {
        let mut v = 0;
        assert_eq!(cuDriverGetVersion(&mut v), SUCCESS);
        // CUDA 13.x (the minor version follows the API level implemented).
        assert!((13000..14000).contains(&v) && v % 10 == 0, "driver version {v}");
        let mut n = -1;
        assert_eq!(cuDeviceGetCount(&mut n), NOT_INITIALIZED);
        assert_eq!(cuDeviceGet(&mut n, 0), NOT_INITIALIZED);
        let mut c: Ptr = std::ptr::null_mut();
        assert_eq!(cuCtxGetCurrent(&mut c), NOT_INITIALIZED);
        assert_eq!(cuCtxCreate_v2(&mut c, 0, 0), NOT_INITIALIZED);
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), NOT_INITIALIZED);
        assert_eq!(cuStreamCreate(&mut c, 0), NOT_INITIALIZED);
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, 16), NOT_INITIALIZED);
        let mut m = 0u32;
        assert_eq!(cuModuleGetLoadingMode(&mut m), NOT_INITIALIZED);
        let mut s: *const c_char = std::ptr::null();
        assert_eq!(cuGetErrorName(3, &mut s), SUCCESS);
        let mut f: *mut c_void = std::ptr::null_mut();
        let mut st = 9u32;
        assert_eq!(cuGetProcAddress_v2(c"cuInit".as_ptr(), &mut f, 2000, 0, &mut st), SUCCESS);
        assert_eq!(f, lib.addr("cuInit"));
        assert_eq!(cuInit(1), INVALID_VALUE);
        assert_eq!(cuDeviceGetCount(&mut n), NOT_INITIALIZED);
        assert_eq!(cuInit(0), SUCCESS);
        assert_eq!(cuDeviceGetCount(&mut n), SUCCESS);
        assert!(n >= 1);
    }
}
