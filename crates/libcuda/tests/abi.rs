//! The driver API through the built libcuda.so: every implemented family,
//! including misuse (NULL out-pointers, garbage and destroyed handles,
//! wrong contexts, out-of-range copies), which must return the documented
//! code and never crash.

mod common;
use common::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;
use std::sync::OnceLock;

fn lib() -> &'static Lib {
    static L: OnceLock<Lib> = OnceLock::new();
    L.get_or_init(Lib::open)
}

/// cuInit, then this thread's current context is device 0's primary one.
fn setup() -> Ptr {
    let l = lib();
    api!(l; cuInit: fn(u32); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr););
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
        c
    }
}

const GARBAGE: Ptr = 0x000d_eadb_eef0 as Ptr;

#[test]
fn every_abi_symbol_is_exported() {
    let l = lib();
    let mut missing = Vec::new();
    for s in cuda_types::ABI_SYMBOLS {
        if l.addr(s.name).is_null() {
            missing.push(s.name);
        }
    }
    assert!(missing.is_empty(), "not exported: {missing:?}");
    assert!(cuda_types::ABI_SYMBOLS.len() > 700);
}

#[test]
fn unimplemented_functions_say_so() {
    let l = lib();
    api!(l; cuUserObjectCreate: fn(*mut Ptr, Ptr, Ptr, u32, u32); cuEGLStreamConsumerConnect: fn(*mut Ptr, Ptr););
    let mut g = null_mut();
    unsafe {
        assert_eq!(cuUserObjectCreate(&mut g, null_mut(), null_mut(), 1, 0), NOT_SUPPORTED);
        assert_eq!(cuEGLStreamConsumerConnect(&mut g, null_mut()), NOT_SUPPORTED);
    }
}

#[test]
fn proc_address() {
    let l = lib();
    api!(l;
        cuGetProcAddress_v2: fn(*const c_char, *mut *mut c_void, i32, u64, *mut u32);
        cuGetProcAddress: fn(*const c_char, *mut *mut c_void, i32, u64);
    );
    let get = |name: &CStr, ver: i32, flags: u64| -> (u32, *mut c_void, u32) {
        let mut p = std::ptr::dangling_mut::<c_void>();
        let mut st = 77u32;
        let r = unsafe { cuGetProcAddress_v2(name.as_ptr(), &mut p, ver, flags, &mut st) };
        (r, p, st)
    };
    // cudart's probe.
    assert_eq!(get(c"", 0, 0), (SUCCESS, null_mut(), 1));
    assert_eq!(get(c"cuInit", 2000, 0), (SUCCESS, l.addr("cuInit"), 0));
    assert_eq!(get(c"cuMemAlloc", 3020, 0), (SUCCESS, l.addr("cuMemAlloc_v2"), 0));
    assert_eq!(get(c"cuMemAlloc", 3010, 0), (SUCCESS, l.addr("cuMemAlloc"), 0));
    assert_eq!(get(c"cuCtxGetDevice", 13000, 0), (SUCCESS, l.addr("cuCtxGetDevice_v2"), 0));
    assert_eq!(get(c"cuDevicePrimaryCtxRelease", 7000, 0), (SUCCESS, l.addr("cuDevicePrimaryCtxRelease"), 0));
    assert_eq!(get(c"cuDevicePrimaryCtxRelease", 11000, 0), (SUCCESS, l.addr("cuDevicePrimaryCtxRelease_v2"), 0));
    assert_eq!(get(c"cuMemcpyHtoD", 7000, 2), (SUCCESS, l.addr("cuMemcpyHtoD_v2_ptds"), 0));
    assert_eq!(get(c"cuLaunchKernel", 7000, 2), (SUCCESS, l.addr("cuLaunchKernel_ptsz"), 0));
    assert_eq!(get(c"cuLaunchKernel", 7000, 1), (SUCCESS, l.addr("cuLaunchKernel"), 0));
    assert_eq!(get(c"cuGetProcAddress", 12000, 0), (SUCCESS, l.addr("cuGetProcAddress_v2"), 0));
    assert_eq!(get(c"cuGetExportTable", 3000, 0), (SUCCESS, l.addr("cuGetExportTable"), 0));
    assert_eq!(get(c"cuNoSuchThing", 12000, 0), (SUCCESS, null_mut(), 1));
    assert_eq!(get(c"cuMemAlloc", 1000, 0), (SUCCESS, null_mut(), 2));
    // Newer than the driver, bad flags, NULL arguments.
    let mut driver_version = 0;
    api!(l; cuDriverGetVersion: fn(*mut i32););
    assert_eq!(unsafe { cuDriverGetVersion(&mut driver_version) }, SUCCESS);
    assert_eq!(get(c"cuInit", driver_version + 10, 0).0, INVALID_VALUE);
    assert_eq!(get(c"cuInit", 2000, 8).0, INVALID_VALUE);
    unsafe {
        assert_eq!(cuGetProcAddress_v2(c"cuInit".as_ptr(), null_mut(), 2000, 0, null_mut()), INVALID_VALUE);
        let mut p = null_mut();
        assert_eq!(cuGetProcAddress_v2(std::ptr::null(), &mut p, 2000, 0, null_mut()), INVALID_VALUE);
        // The 4-argument form has no status: unknown names are errors.
        assert_eq!(cuGetProcAddress(c"cuNoSuchThing".as_ptr(), &mut p, 12000, 0), NOT_FOUND);
        assert_eq!(cuGetProcAddress(c"cuDriverGetVersion".as_ptr(), &mut p, 12000, 0), SUCCESS);
        // The pointer is callable.
        let f: unsafe extern "C" fn(*mut i32) -> u32 = std::mem::transmute(p);
        let mut v = 0;
        assert_eq!(f(&mut v), SUCCESS);
        assert_eq!(v, driver_version);
    }
}

#[test]
fn export_tables() {
    let primary = setup();
    let l = lib();
    api!(l; cuGetExportTable: fn(*mut *const c_void, *const [u8; 16]); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuDevicePrimaryCtxRelease: fn(i32););
    let table = |id: [u8; 16]| -> *const usize {
        let mut t = std::ptr::null();
        assert_eq!(unsafe { cuGetExportTable(&mut t, &id) }, SUCCESS, "{id:02x?}");
        assert!(!t.is_null());
        t.cast()
    };
    let cudart = table([0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9]);
    let hooks = table([0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66]);
    let cls = table([0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93]);
    let integrity = table([0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2]);
    let wrapper = table([0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e]);
    for id in [
        [0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9],
        [0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc],
        [0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2],
    ] {
        table(id);
    }
    unsafe {
        let mut t = std::ptr::null();
        assert_eq!(cuGetExportTable(&mut t, &[0u8; 16]), INVALID_VALUE);
        assert_eq!(cuGetExportTable(null_mut(), &[0u8; 16]), INVALID_VALUE);
        assert_eq!(*cudart, 0x68);
        assert!(*hooks > 0x30);
        // CUDART_INTERFACE slot 2: the primary context, not retained.
        let slot2: unsafe extern "C" fn(*mut Ptr, i32) -> u32 = std::mem::transmute(*cudart.add(2));
        let mut c = null_mut();
        assert_eq!(slot2(&mut c, 0), SUCCESS);
        assert_eq!(c, primary);
        assert_eq!(slot2(null_mut(), 0), INVALID_VALUE);
        assert_eq!(slot2(&mut c, 99), INVALID_DEVICE);
        let slot12: unsafe extern "C" fn() -> u32 = std::mem::transmute(*cudart.add(12));
        assert_eq!(slot12(), SUCCESS);
        // Tools hooks hand out buffers of the sizes cudart needs.
        for (slot, min) in [(2, 0x236), (6, 0xd)] {
            let f: unsafe extern "C" fn(*mut *mut c_void, *mut usize) -> u32 = std::mem::transmute(*hooks.add(slot));
            let (mut b, mut n) = (null_mut(), 0usize);
            assert_eq!(f(&mut b, &mut n), SUCCESS);
            assert!(!b.is_null() && n > min, "slot {slot}: {n}");
        }
        // Context-local storage.
        let insert: unsafe extern "C" fn(Ptr, Ptr, Ptr, Option<unsafe extern "C" fn(Ptr, Ptr, Ptr)>) -> u32 = std::mem::transmute(*cls);
        let remove: unsafe extern "C" fn(Ptr, Ptr) -> u32 = std::mem::transmute(*cls.add(1));
        let get: unsafe extern "C" fn(*mut Ptr, Ptr, Ptr) -> u32 = std::mem::transmute(*cls.add(2));
        let key = 0x5151 as Ptr;
        let mut v = null_mut();
        assert_eq!(get(&mut v, null_mut(), key), INVALID_HANDLE);
        assert_eq!(insert(null_mut(), key, 0x77 as Ptr, None), SUCCESS);
        assert_eq!(get(&mut v, null_mut(), key), SUCCESS);
        assert_eq!(v, 0x77 as Ptr);
        assert_eq!(get(&mut v, primary, key), SUCCESS);
        assert_eq!(remove(null_mut(), key), SUCCESS);
        assert_eq!(get(&mut v, null_mut(), key), INVALID_HANDLE);
        assert_eq!(get(&mut v, GARBAGE, key), INVALID_CONTEXT);
        let no_ctx = std::thread::spawn(move || {
            let mut v = null_mut();
            get(&mut v, null_mut(), 0x1 as Ptr)
        })
        .join()
        .expect("thread");
        assert_eq!(no_ctx, INVALID_CONTEXT);
        // Context wrapper.
        let w2: unsafe extern "C" fn(Ptr, *mut u32, *mut Ptr) -> u32 = std::mem::transmute(*wrapper.add(2));
        let mut wrapped = 5u32;
        let mut un = null_mut();
        assert_eq!(w2(primary, &mut wrapped, &mut un), SUCCESS);
        assert_eq!(wrapped, 0);
        // Integrity: the constant answer for runtime versions ending in 0.
        let check: unsafe extern "C" fn(u32, u64, *mut [u8; 16]) -> u32 = std::mem::transmute(*integrity.add(1));
        let mut out = [0u8; 16];
        assert_eq!(check(13050, 1_700_000_000, &mut out), SUCCESS);
        assert_eq!(out, [0x5c, 0x67, 0xcb, 0x03, 0x1c, 0x18, 0x41, 0x33, 0xe8, 0xd1, 0x4c, 0x1f, 0xaa, 0x83, 0xd3, 0x8e]);
        assert_eq!(check(12091, 1_700_000_000, &mut out), SUCCESS);
        assert_eq!(out[7], 0x18);
        assert_eq!(check(13052, 1_700_000_000, &mut out), SUCCESS);
        let first = out;
        assert_eq!(check(13052, 1_700_000_001, &mut out), SUCCESS);
        assert_ne!(first, out, "the HMAC covers the time");
        assert_eq!(check(13052, 1, null_mut()), INVALID_VALUE);
    }
}

#[test]
fn error_names_and_strings() {
    let l = lib();
    api!(l; cuGetErrorName: fn(u32, *mut *const c_char); cuGetErrorString: fn(u32, *mut *const c_char););
    unsafe {
        let mut s: *const c_char = std::ptr::null();
        assert_eq!(cuGetErrorName(1, &mut s), SUCCESS);
        assert_eq!(CStr::from_ptr(s).to_str(), Ok("CUDA_ERROR_INVALID_VALUE"));
        assert_eq!(cuGetErrorString(700, &mut s), SUCCESS);
        assert_eq!(CStr::from_ptr(s).to_str(), Ok("an illegal memory access was encountered"));
        assert_eq!(cuGetErrorName(12345, &mut s), INVALID_VALUE);
        assert!(s.is_null());
        assert_eq!(cuGetErrorString(12345, &mut s), INVALID_VALUE);
        assert_eq!(cuGetErrorName(0, null_mut()), INVALID_VALUE);
    }
}

#[test]
fn devices() {
    setup();
    let l = lib();
    api!(l;
        cuDeviceGetCount: fn(*mut i32);
        cuDeviceGet: fn(*mut i32, i32);
        cuDeviceGetName: fn(*mut c_char, i32, i32);
        cuDeviceTotalMem_v2: fn(*mut usize, i32);
        cuDeviceGetAttribute: fn(*mut i32, u32, i32);
        cuDeviceGetUuid_v2: fn(*mut [u8; 16], i32);
        cuDeviceGetPCIBusId: fn(*mut c_char, i32, i32);
        cuDeviceGetByPCIBusId: fn(*mut i32, *const c_char);
        cuDeviceComputeCapability: fn(*mut i32, *mut i32, i32);
        cuDeviceGetProperties: fn(*mut [i32; 14], i32);
        cuDeviceCanAccessPeer: fn(*mut i32, i32, i32);
        cuDeviceGetDefaultMemPool: fn(*mut Ptr, i32);
    );
    unsafe {
        let mut n = 0;
        assert_eq!(cuDeviceGetCount(&mut n), SUCCESS);
        assert_eq!(n, 1);
        assert_eq!(cuDeviceGetCount(null_mut()), INVALID_VALUE);
        let mut d = -1;
        assert_eq!(cuDeviceGet(&mut d, 0), SUCCESS);
        assert_eq!(d, 0);
        assert_eq!(cuDeviceGet(&mut d, 1), INVALID_DEVICE);
        assert_eq!(cuDeviceGet(&mut d, -1), INVALID_DEVICE);
        assert_eq!(cuDeviceGet(null_mut(), 0), INVALID_VALUE);
        let mut name = [0 as c_char; 256];
        assert_eq!(cuDeviceGetName(name.as_mut_ptr(), 256, 0), SUCCESS);
        let full = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        assert!(full.starts_with("anycuda CPU: "), "{full}");
        assert_eq!(cuDeviceGetName(name.as_mut_ptr(), 8, 0), SUCCESS);
        assert_eq!(CStr::from_ptr(name.as_ptr()).to_bytes(), &full.as_bytes()[..7]);
        assert_eq!(cuDeviceGetName(name.as_mut_ptr(), 0, 0), INVALID_VALUE);
        assert_eq!(cuDeviceGetName(null_mut(), 10, 0), INVALID_VALUE);
        assert_eq!(cuDeviceGetName(name.as_mut_ptr(), 10, 3), INVALID_DEVICE);
        let mut mem = 0usize;
        assert_eq!(cuDeviceTotalMem_v2(&mut mem, 0), SUCCESS);
        assert!(mem > 1 << 26);
        let mut v = 0;
        for (attr, want) in [(10u32, 32), (1, 1024), (4, 64), (41, 1)] {
            assert_eq!(cuDeviceGetAttribute(&mut v, attr, 0), SUCCESS);
            assert_eq!(v, want, "attribute {attr}");
        }
        for attr in 1..162u32 {
            assert_eq!(cuDeviceGetAttribute(&mut v, attr, 0), SUCCESS, "attribute {attr}");
        }
        assert_eq!(cuDeviceGetAttribute(&mut v, 0, 0), INVALID_VALUE);
        assert_eq!(cuDeviceGetAttribute(&mut v, 5000, 0), INVALID_VALUE);
        assert_eq!(cuDeviceGetAttribute(&mut v, 10, 7), INVALID_DEVICE);
        assert_eq!(cuDeviceGetAttribute(null_mut(), 10, 0), INVALID_VALUE);
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        assert_eq!(cuDeviceGetUuid_v2(&mut a, 0), SUCCESS);
        assert_eq!(cuDeviceGetUuid_v2(&mut b, 0), SUCCESS);
        assert_eq!(a, b);
        assert_ne!(a, [0; 16]);
        let mut bus = [0 as c_char; 32];
        assert_eq!(cuDeviceGetPCIBusId(bus.as_mut_ptr(), 32, 0), SUCCESS);
        assert_eq!(cuDeviceGetByPCIBusId(&mut d, bus.as_ptr()), SUCCESS);
        assert_eq!(d, 0);
        assert_eq!(cuDeviceGetByPCIBusId(&mut d, c"nonsense".as_ptr()), INVALID_VALUE);
        assert_eq!(cuDeviceGetByPCIBusId(&mut d, std::ptr::null()), INVALID_VALUE);
        let (mut ma, mut mi) = (0, 0);
        assert_eq!(cuDeviceComputeCapability(&mut ma, &mut mi, 0), SUCCESS);
        assert!(ma * 10 + mi >= 50);
        let mut props = [0i32; 14];
        assert_eq!(cuDeviceGetProperties(&mut props, 0), SUCCESS);
        assert_eq!(props[0], 1024);
        assert_eq!(cuDeviceCanAccessPeer(&mut v, 0, 0), SUCCESS);
        let mut pool = null_mut();
        assert_eq!(cuDeviceGetDefaultMemPool(&mut pool, 0), SUCCESS);
        assert!(!pool.is_null());
    }
}

#[test]
fn contexts() {
    let primary = setup();
    let l = lib();
    api!(l;
        cuCtxCreate_v2: fn(*mut Ptr, u32, i32);
        cuCtxDestroy_v2: fn(Ptr);
        cuCtxPushCurrent_v2: fn(Ptr);
        cuCtxPopCurrent_v2: fn(*mut Ptr);
        cuCtxGetCurrent: fn(*mut Ptr);
        cuCtxSetCurrent: fn(Ptr);
        cuCtxGetDevice: fn(*mut i32);
        cuCtxGetDevice_v2: fn(*mut i32, Ptr);
        cuCtxSynchronize: fn();
        cuCtxSynchronize_v2: fn(Ptr);
        cuCtxGetLimit: fn(*mut usize, u32);
        cuCtxSetLimit: fn(u32, usize);
        cuCtxGetFlags: fn(*mut u32);
        cuCtxGetApiVersion: fn(Ptr, *mut u32);
        cuCtxGetStreamPriorityRange: fn(*mut i32, *mut i32);
        cuCtxGetId: fn(Ptr, *mut u64);
        cuDevicePrimaryCtxGetState: fn(i32, *mut u32, *mut i32);
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
        cuDevicePrimaryCtxRelease: fn(i32);
        cuDevicePrimaryCtxSetFlags_v2: fn(i32, u32);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemFree_v2: fn(u64);
    );
    unsafe {
        let mut c = null_mut();
        assert_eq!(cuCtxGetCurrent(&mut c), SUCCESS);
        assert_eq!(c, primary);
        let mut mine = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut mine, 0, 0), SUCCESS);
        assert_eq!(cuCtxCreate_v2(null_mut(), 0, 0), INVALID_VALUE);
        assert_eq!(cuCtxCreate_v2(&mut c, 0, 5), INVALID_DEVICE);
        assert_eq!(cuCtxCreate_v2(&mut c, 0xff00, 0), INVALID_VALUE);
        assert_eq!(cuCtxGetCurrent(&mut c), SUCCESS);
        assert_eq!(c, mine, "cuCtxCreate makes the new context current");
        let (mut a, mut b) = (0u64, 0u64);
        assert_eq!(cuCtxGetId(mine, &mut a), SUCCESS);
        assert_eq!(cuCtxGetId(primary, &mut b), SUCCESS);
        assert_ne!(a, b);
        let mut d = -1;
        assert_eq!(cuCtxGetDevice(&mut d), SUCCESS);
        assert_eq!(d, 0);
        assert_eq!(cuCtxGetDevice_v2(&mut d, primary), SUCCESS);
        assert_eq!(cuCtxGetDevice_v2(&mut d, GARBAGE), INVALID_CONTEXT);
        assert_eq!(cuCtxGetDevice(null_mut()), INVALID_VALUE);
        let mut popped = null_mut();
        assert_eq!(cuCtxPopCurrent_v2(&mut popped), SUCCESS);
        assert_eq!(popped, mine);
        assert_eq!(cuCtxPushCurrent_v2(mine), SUCCESS);
        assert_eq!(cuCtxPushCurrent_v2(GARBAGE), INVALID_CONTEXT);
        assert_eq!(cuCtxSetCurrent(GARBAGE), INVALID_CONTEXT);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        assert_eq!(cuCtxSynchronize_v2(mine), SUCCESS);
        assert_eq!(cuCtxSynchronize_v2(GARBAGE), INVALID_CONTEXT);
        let mut v = 0usize;
        assert_eq!(cuCtxGetLimit(&mut v, 0), SUCCESS);
        assert_eq!(v, 1024);
        assert_eq!(cuCtxSetLimit(0, 8192), SUCCESS);
        assert_eq!(cuCtxGetLimit(&mut v, 0), SUCCESS);
        assert_eq!(v, 8192);
        assert_eq!(cuCtxGetLimit(&mut v, 7), UNSUPPORTED_LIMIT);
        assert_eq!(cuCtxGetLimit(&mut v, 77), INVALID_VALUE);
        assert_eq!(cuCtxGetLimit(null_mut(), 0), INVALID_VALUE);
        let mut f = 99u32;
        assert_eq!(cuCtxGetFlags(&mut f), SUCCESS);
        assert_eq!(cuCtxGetApiVersion(mine, &mut f), SUCCESS);
        let (mut lo, mut hi) = (9, 9);
        assert_eq!(cuCtxGetStreamPriorityRange(&mut lo, &mut hi), SUCCESS);
        assert!(hi <= lo);
        assert_eq!(cuCtxGetStreamPriorityRange(null_mut(), null_mut()), SUCCESS);
        // Destroyed: gone for handle-taking calls; the stack entry of
        // another thread sees CONTEXT_IS_DESTROYED.
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, 64), SUCCESS);
        assert_eq!(cuCtxDestroy_v2(mine), SUCCESS);
        assert_eq!(cuCtxDestroy_v2(mine), INVALID_CONTEXT);
        assert_eq!(cuMemFree_v2(p), INVALID_VALUE, "its memory went with it");
        assert_eq!(cuCtxPushCurrent_v2(mine), INVALID_CONTEXT);
        assert_eq!(cuCtxGetCurrent(&mut c), SUCCESS);
        assert_eq!(c, primary);
        let mut other = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut other, 0, 0), SUCCESS);
        let o = other as usize;
        let r = std::thread::spawn(move || cuCtxDestroy_v2(o as Ptr)).join().expect("thread");
        assert_eq!(r, SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut p, 64), CONTEXT_IS_DESTROYED);
        assert_eq!(cuCtxPopCurrent_v2(null_mut()), SUCCESS);
        // Primary context state.
        let (mut flags, mut active) = (0u32, 0i32);
        assert_eq!(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active), SUCCESS);
        assert_eq!(active, 1);
        assert_eq!(cuDevicePrimaryCtxGetState(3, &mut flags, &mut active), INVALID_DEVICE);
        assert_eq!(cuDevicePrimaryCtxGetState(0, null_mut(), &mut active), INVALID_VALUE);
        assert_eq!(cuDevicePrimaryCtxSetFlags_v2(0, 0x4), SUCCESS);
        assert_eq!(cuDevicePrimaryCtxSetFlags_v2(0, 0x1000), INVALID_VALUE);
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(c, primary);
        assert_eq!(cuDevicePrimaryCtxRelease(0), SUCCESS);
        assert_eq!(cuDevicePrimaryCtxRelease(9), INVALID_DEVICE);
    }
}

#[test]
fn memory() {
    setup();
    let l = lib();
    api!(l;
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemFree_v2: fn(u64);
        cuMemAllocPitch_v2: fn(*mut u64, *mut usize, usize, usize, u32);
        cuMemGetInfo_v2: fn(*mut usize, *mut usize);
        cuMemGetAddressRange_v2: fn(*mut u64, *mut usize, u64);
        cuMemcpyHtoD_v2: fn(u64, *const c_void, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuMemcpyDtoD_v2: fn(u64, u64, usize);
        cuMemcpy: fn(u64, u64, usize);
        cuMemcpyHtoD_v2_ptds: fn(u64, *const c_void, usize);
        cuMemsetD8_v2: fn(u64, u8, usize);
        cuMemsetD16_v2: fn(u64, u16, usize);
        cuMemsetD32_v2: fn(u64, u32, usize);
        cuMemsetD2D32_v2: fn(u64, usize, u32, usize, usize);
        cuMemcpy2D_v2: fn(*const [u64; 16]);
        cuMemcpy3D_v2: fn(*const [u64; 25]);
        cuMemHostAlloc: fn(*mut Ptr, usize, u32);
        cuMemAllocHost_v2: fn(*mut Ptr, usize);
        cuMemFreeHost: fn(Ptr);
        cuMemHostGetDevicePointer_v2: fn(*mut u64, Ptr, u32);
        cuMemHostGetFlags: fn(*mut u32, Ptr);
        cuMemHostRegister_v2: fn(Ptr, usize, u32);
        cuMemHostUnregister: fn(Ptr);
        cuMemAllocManaged: fn(*mut u64, usize, u32);
        cuPointerGetAttribute: fn(*mut c_void, u32, u64);
        cuPointerGetAttributes: fn(u32, *const u32, *const *mut c_void, u64);
    );
    unsafe {
        let mut a = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut a, 4096), SUCCESS);
        assert_eq!(a % 256, 0);
        assert_eq!(cuMemAlloc_v2(&mut a, 0), INVALID_VALUE);
        assert_eq!(cuMemAlloc_v2(null_mut(), 16), INVALID_VALUE);
        let mut b = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut b, 4096), SUCCESS);
        let src: Vec<u32> = (0..1024).collect();
        let mut dst = vec![0u32; 1024];
        assert_eq!(cuMemcpyHtoD_v2(a, src.as_ptr().cast(), 4096), SUCCESS);
        assert_eq!(cuMemcpyDtoD_v2(b, a, 4096), SUCCESS);
        assert_eq!(cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), b, 4096), SUCCESS);
        assert_eq!(src, dst);
        assert_eq!(cuMemcpyHtoD_v2_ptds(a, src.as_ptr().cast(), 16), SUCCESS);
        // Out of range and unknown pointers.
        assert_eq!(cuMemcpyHtoD_v2(a + 8, src.as_ptr().cast(), 4096), INVALID_VALUE);
        assert_eq!(cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), 0x1000, 4), INVALID_VALUE);
        assert_eq!(cuMemcpyDtoD_v2(b, a, 4097), INVALID_VALUE);
        assert_eq!(cuMemcpyHtoD_v2(a, std::ptr::null(), 4), INVALID_VALUE);
        assert_eq!(cuMemcpyHtoD_v2(a, std::ptr::null(), 0), SUCCESS, "empty copies are fine");
        // Unified copies.
        let mut word = 0u32;
        assert_eq!(cuMemcpy(&mut word as *mut u32 as u64, a + 40, 4), SUCCESS);
        assert_eq!(word, 10);
        // Memsets.
        assert_eq!(cuMemsetD32_v2(a, 0xdeadbeef, 1024), SUCCESS);
        assert_eq!(cuMemsetD16_v2(a + 2, 0x1234, 1), SUCCESS);
        assert_eq!(cuMemsetD8_v2(a + 4095, 7, 1), SUCCESS);
        assert_eq!(cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), a, 4096), SUCCESS);
        assert_eq!(dst[0], 0x1234_beef);
        assert_eq!(dst[1023], 0x07ad_beef);
        assert_eq!(cuMemsetD32_v2(a + 2, 0, 1), INVALID_VALUE, "misaligned");
        assert_eq!(cuMemsetD8_v2(a, 0, 4097), INVALID_VALUE);
        // Address ranges and info.
        let (mut base, mut size) = (0u64, 0usize);
        assert_eq!(cuMemGetAddressRange_v2(&mut base, &mut size, a + 100), SUCCESS);
        assert_eq!((base, size), (a, 4096));
        assert_eq!(cuMemGetAddressRange_v2(null_mut(), &mut size, a), SUCCESS);
        assert_eq!(cuMemGetAddressRange_v2(&mut base, &mut size, 0x10), NOT_FOUND);
        let (mut free, mut total) = (0usize, 0usize);
        assert_eq!(cuMemGetInfo_v2(&mut free, &mut total), SUCCESS);
        assert!(free <= total && total > 0);
        assert_eq!(cuMemGetInfo_v2(null_mut(), &mut total), INVALID_VALUE);
        // Pitched memory and 2-D / 3-D copies.
        let (mut p, mut pitch) = (0u64, 0usize);
        assert_eq!(cuMemAllocPitch_v2(&mut p, &mut pitch, 40, 8, 4), SUCCESS);
        assert!(pitch >= 40);
        assert_eq!(cuMemAllocPitch_v2(&mut p, &mut pitch, 40, 8, 3), INVALID_VALUE);
        assert_eq!(cuMemsetD2D32_v2(p, pitch, 5, 10, 8), SUCCESS);
        let host: Vec<u8> = (0..40 * 8).map(|i| i as u8).collect();
        // CUDA_MEMCPY2D as 16 words: srcX, srcY, srcType, srcHost, srcDevice,
        // srcArray, srcPitch, dstX, dstY, dstType, dstHost, dstDevice,
        // dstArray, dstPitch, width, height.
        let c2 = [0, 0, 1, host.as_ptr() as u64, 0, 0, 40, 0, 0, 2, 0, p, 0, pitch as u64, 40, 8];
        assert_eq!(cuMemcpy2D_v2(&c2), SUCCESS);
        let mut row = [0u8; 40];
        assert_eq!(cuMemcpyDtoH_v2(row.as_mut_ptr().cast(), p + 3 * pitch as u64, 40), SUCCESS);
        assert_eq!(&row[..], &host[120..160]);
        let mut bad = c2;
        bad[15] = 9;
        assert_eq!(cuMemcpy2D_v2(&bad), INVALID_VALUE, "rows beyond the allocation");
        let mut bad = c2;
        bad[2] = 7;
        assert_eq!(cuMemcpy2D_v2(&bad), INVALID_VALUE, "unknown memory type");
        assert_eq!(cuMemcpy2D_v2(std::ptr::null()), INVALID_VALUE);
        // CUDA_MEMCPY3D: a device-to-host copy of a 4x2x1 box.
        let mut out = [0u8; 8];
        let mut c3 = [0u64; 25];
        c3[0] = 2; // srcXInBytes
        c3[1] = 1; // srcY
        c3[4] = 2; // srcMemoryType
        c3[6] = p; // srcDevice
        c3[9] = pitch as u64; // srcPitch
        c3[10] = 8; // srcHeight
        c3[15] = 1; // dstMemoryType
        c3[16] = out.as_mut_ptr() as u64; // dstHost
        c3[20] = 4; // dstPitch
        c3[21] = 2; // dstHeight
        c3[22] = 4; // WidthInBytes
        c3[23] = 2; // Height
        c3[24] = 1; // Depth
        assert_eq!(cuMemcpy3D_v2(&c3), SUCCESS);
        assert_eq!(&out[..4], &host[42..46]);
        assert_eq!(&out[4..], &host[82..86]);
        // Page-locked and registered host memory.
        let mut h = null_mut();
        assert_eq!(cuMemHostAlloc(&mut h, 1024, 2), SUCCESS);
        let mut dp = 0u64;
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut dp, h, 0), SUCCESS);
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut dp, h, 1), INVALID_VALUE);
        let mut fl = 0u32;
        assert_eq!(cuMemHostGetFlags(&mut fl, h), SUCCESS);
        assert_eq!(fl, 2);
        assert_eq!(cuMemcpyHtoD_v2(dp, src.as_ptr().cast(), 16), SUCCESS);
        assert_eq!(*(h as *const u32).add(3), 3);
        assert_eq!(cuMemFreeHost(h), SUCCESS);
        assert_eq!(cuMemFreeHost(h), INVALID_VALUE);
        assert_eq!(cuMemAllocHost_v2(&mut h, 64), SUCCESS);
        assert_eq!(cuMemFreeHost(h), SUCCESS);
        let mut buf = vec![0u8; 8192];
        let bp = buf.as_mut_ptr() as Ptr;
        assert_eq!(cuMemHostRegister_v2(bp, 8192, 0), SUCCESS);
        assert_eq!(cuMemHostRegister_v2(bp, 8192, 0), HOST_MEMORY_ALREADY_REGISTERED);
        assert_eq!(cuMemHostRegister_v2(bp, 8192, 0x100), INVALID_VALUE);
        assert_eq!(cuMemHostUnregister(bp), SUCCESS);
        assert_eq!(cuMemHostUnregister(bp), HOST_MEMORY_NOT_REGISTERED);
        // Managed memory is usable from the host directly.
        let mut m = 0u64;
        assert_eq!(cuMemAllocManaged(&mut m, 64, 1), SUCCESS);
        assert_eq!(cuMemAllocManaged(&mut m, 64, 0), INVALID_VALUE);
        assert_eq!(cuMemsetD8_v2(m, 0x11, 64), SUCCESS);
        assert_eq!(*(m as *const u8).add(63), 0x11);
        // Pointer attributes, single and several.
        let mut t = 0u32;
        assert_eq!(cuPointerGetAttribute((&mut t as *mut u32).cast(), 2, a + 1), SUCCESS);
        assert_eq!(t, 2, "device memory");
        assert_eq!(cuPointerGetAttribute((&mut t as *mut u32).cast(), 8, m), SUCCESS);
        assert_eq!(t, 1, "managed");
        let mut hp = 0u64;
        assert_eq!(cuPointerGetAttribute((&mut hp as *mut u64).cast(), 4, a), INVALID_VALUE, "no host pointer");
        assert_eq!(cuPointerGetAttribute((&mut t as *mut u32).cast(), 2, buf.as_ptr() as u64), INVALID_VALUE, "unknown pointer");
        assert_eq!(cuPointerGetAttribute(null_mut(), 2, a), INVALID_VALUE);
        assert_eq!(cuPointerGetAttribute((&mut t as *mut u32).cast(), 999, a), INVALID_VALUE);
        let attrs = [2u32, 3, 4, 8, 9];
        let (mut ty, mut dptr, mut hptr, mut managed, mut ord) = (9u32, 9u64, 9u64, 9u32, 9i32);
        let data: [*mut c_void; 5] = [
            (&mut ty as *mut u32).cast(),
            (&mut dptr as *mut u64).cast(),
            (&mut hptr as *mut u64).cast(),
            (&mut managed as *mut u32).cast(),
            (&mut ord as *mut i32).cast(),
        ];
        assert_eq!(cuPointerGetAttributes(5, attrs.as_ptr(), data.as_ptr(), a + 8), SUCCESS);
        assert_eq!((ty, dptr, hptr, managed, ord), (2, a + 8, 0, 0, 0));
        assert_eq!(cuPointerGetAttributes(5, attrs.as_ptr(), data.as_ptr(), buf.as_ptr() as u64), SUCCESS);
        assert_eq!((ty, dptr, hptr, managed), (0, 0, 0, 0), "unknown pointers read as zeros");
        // Frees.
        assert_eq!(cuMemFree_v2(a), SUCCESS);
        assert_eq!(cuMemFree_v2(a), INVALID_VALUE, "double free");
        assert_eq!(cuMemFree_v2(b + 1), INVALID_VALUE);
        assert_eq!(cuMemFree_v2(b), SUCCESS);
        assert_eq!(cuMemFree_v2(m), SUCCESS);
        assert_eq!(cuMemFree_v2(p), SUCCESS);
    }
}

static CALLBACKS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn stream_callback(_s: Ptr, status: u32, user: Ptr) {
    CALLBACKS.lock().map(|mut v| v.push((status, user as usize))).unwrap_or(());
}

unsafe extern "C" fn host_fn(user: Ptr) {
    *(user as *mut u32) += 1;
}

#[test]
fn streams_and_events() {
    setup();
    let l = lib();
    api!(l;
        cuStreamCreate: fn(*mut Ptr, u32);
        cuStreamCreateWithPriority: fn(*mut Ptr, u32, i32);
        cuStreamDestroy_v2: fn(Ptr);
        cuStreamQuery: fn(Ptr);
        cuStreamSynchronize: fn(Ptr);
        cuStreamGetPriority: fn(Ptr, *mut i32);
        cuStreamGetFlags: fn(Ptr, *mut u32);
        cuStreamGetCtx: fn(Ptr, *mut Ptr);
        cuStreamGetGreenCtx: fn(Ptr, *mut Ptr);
        cuStreamWaitEvent: fn(Ptr, Ptr, u32);
        cuStreamAddCallback: fn(Ptr, Option<unsafe extern "C" fn(Ptr, u32, Ptr)>, Ptr, u32);
        cuLaunchHostFunc: fn(Ptr, Option<unsafe extern "C" fn(Ptr)>, Ptr);
        cuStreamIsCapturing: fn(Ptr, *mut u32);
        cuStreamBeginCapture_v2: fn(Ptr, u32);
        cuStreamEndCapture: fn(Ptr, *mut Ptr);
        cuGraphDestroy: fn(Ptr);
        cuEventCreate: fn(*mut Ptr, u32);
        cuEventDestroy_v2: fn(Ptr);
        cuEventRecord: fn(Ptr, Ptr);
        cuEventQuery: fn(Ptr);
        cuEventSynchronize: fn(Ptr);
        cuEventElapsedTime_v2: fn(*mut f32, Ptr, Ptr);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemcpyHtoDAsync_v2: fn(u64, *const c_void, usize, Ptr);
        cuMemcpyDtoHAsync_v2: fn(*mut c_void, u64, usize, Ptr);
        cuMemsetD32Async: fn(u64, u32, usize, Ptr);
        cuMemAllocHost_v2: fn(*mut Ptr, usize);
        cuMemAllocAsync: fn(*mut u64, usize, Ptr);
        cuMemFreeAsync: fn(u64, Ptr);
    );
    unsafe {
        let (mut s, mut s2) = (null_mut(), null_mut());
        assert_eq!(cuStreamCreate(&mut s, 0), SUCCESS);
        assert_eq!(cuStreamCreateWithPriority(&mut s2, 1, -3), SUCCESS);
        assert_eq!(cuStreamCreate(&mut s, 4), INVALID_VALUE);
        assert_eq!(cuStreamCreate(null_mut(), 0), INVALID_VALUE);
        let mut pr = 0;
        assert_eq!(cuStreamGetPriority(s2, &mut pr), SUCCESS);
        assert_eq!(pr, -3);
        let mut fl = 9;
        assert_eq!(cuStreamGetFlags(s2, &mut fl), SUCCESS);
        assert_eq!(fl, 1);
        assert_eq!(cuStreamGetFlags(null_mut(), &mut fl), SUCCESS, "the NULL stream");
        assert_eq!(cuStreamGetFlags(1 as Ptr, &mut fl), SUCCESS, "CU_STREAM_LEGACY");
        assert_eq!(cuStreamGetFlags(2 as Ptr, &mut fl), SUCCESS, "CU_STREAM_PER_THREAD");
        let mut c = null_mut();
        assert_eq!(cuStreamGetCtx(s, &mut c), SUCCESS);
        assert!(!c.is_null());
        // No green contexts: every stream answers NULL (NVIDIA's cuBLAS asks).
        let mut g = 0x1 as Ptr;
        assert_eq!(cuStreamGetGreenCtx(s, &mut g), SUCCESS);
        assert!(g.is_null());
        g = 0x1 as Ptr;
        assert_eq!(cuStreamGetGreenCtx(null_mut(), &mut g), SUCCESS, "the NULL stream");
        assert!(g.is_null());
        assert_eq!(cuStreamGetGreenCtx(s, null_mut()), INVALID_VALUE);
        // Async work in order; pinned memory for the device-to-host copy.
        let mut d = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut d, 4096), SUCCESS);
        let mut pinned = null_mut();
        assert_eq!(cuMemAllocHost_v2(&mut pinned, 4096), SUCCESS);
        let (mut e0, mut e1) = (null_mut(), null_mut());
        assert_eq!(cuEventCreate(&mut e0, 0), SUCCESS);
        assert_eq!(cuEventCreate(&mut e1, 0), SUCCESS);
        assert_eq!(cuEventCreate(&mut e1, 0x40), INVALID_VALUE);
        assert_eq!(cuEventCreate(&mut e1, 0), SUCCESS);
        assert_eq!(cuEventRecord(e0, s), SUCCESS);
        assert_eq!(cuMemsetD32Async(d, 0xabcd, 1024, s), SUCCESS);
        assert_eq!(cuMemcpyDtoHAsync_v2(pinned, d, 4096, s), SUCCESS);
        let mut counter = 0u32;
        assert_eq!(cuLaunchHostFunc(s, Some(host_fn), (&mut counter as *mut u32).cast()), SUCCESS);
        assert_eq!(cuLaunchHostFunc(s, None, null_mut()), INVALID_VALUE);
        assert_eq!(cuStreamAddCallback(s, Some(stream_callback), 0x42 as Ptr, 0), SUCCESS);
        assert_eq!(cuStreamAddCallback(s, Some(stream_callback), 0x42 as Ptr, 1), INVALID_VALUE);
        assert_eq!(cuEventRecord(e1, s), SUCCESS);
        assert_eq!(cuStreamWaitEvent(s2, e1, 0), SUCCESS);
        assert_eq!(cuStreamWaitEvent(s2, e1, 7), INVALID_VALUE);
        assert_eq!(cuStreamSynchronize(s2), SUCCESS);
        assert_eq!(cuEventQuery(e1), SUCCESS, "s2 waited for e1");
        assert_eq!(cuStreamSynchronize(s), SUCCESS);
        assert_eq!(cuStreamQuery(s), SUCCESS);
        assert_eq!(counter, 1);
        assert_eq!(*(pinned as *const u32).add(1023), 0xabcd);
        assert!(CALLBACKS.lock().map(|v| v.contains(&(SUCCESS, 0x42))).unwrap_or(false));
        let mut ms = -1.0f32;
        assert_eq!(cuEventSynchronize(e1), SUCCESS);
        assert_eq!(cuEventElapsedTime_v2(&mut ms, e0, e1), SUCCESS);
        assert!(ms >= 0.0);
        assert_eq!(cuEventElapsedTime_v2(null_mut(), e0, e1), INVALID_VALUE);
        // Stream-ordered allocation.
        let mut a = 0u64;
        assert_eq!(cuMemAllocAsync(&mut a, 256, s), SUCCESS);
        assert_eq!(cuMemcpyHtoDAsync_v2(a, pinned, 256, s), SUCCESS);
        assert_eq!(cuMemFreeAsync(a, s), SUCCESS);
        assert_eq!(cuMemFreeAsync(a, s), INVALID_VALUE);
        assert_eq!(cuMemAllocAsync(&mut a, 256, GARBAGE), INVALID_HANDLE);
        assert_eq!(cuStreamSynchronize(s), SUCCESS);
        // Capture (graphs have their own tests): nothing captures until
        // asked to.
        let mut st = 9u32;
        assert_eq!(cuStreamIsCapturing(s2, &mut st), SUCCESS);
        assert_eq!(st, 0);
        // Relaxed: a global capture would forbid other tests' threads to
        // allocate meanwhile. On the non-blocking stream: while a blocking
        // stream captures, legacy-stream work of other tests' threads
        // fails (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, as CUDA answers) and
        // invalidates the capture.
        assert_eq!(cuStreamBeginCapture_v2(s2, 2), SUCCESS);
        assert_eq!(cuStreamIsCapturing(s2, &mut st), SUCCESS);
        assert_eq!(st, 1);
        let mut g = GARBAGE;
        assert_eq!(cuStreamEndCapture(s2, &mut g), SUCCESS);
        assert!(!g.is_null());
        assert_eq!(cuGraphDestroy(g), SUCCESS);
        // Garbage and destroyed handles.
        assert_eq!(cuStreamQuery(GARBAGE), INVALID_HANDLE);
        assert_eq!(cuStreamSynchronize(GARBAGE), INVALID_HANDLE);
        assert_eq!(cuEventQuery(GARBAGE), INVALID_HANDLE);
        assert_eq!(cuEventRecord(GARBAGE, s), INVALID_HANDLE);
        assert_eq!(cuEventRecord(e0, GARBAGE), INVALID_HANDLE);
        assert_eq!(cuStreamDestroy_v2(s), SUCCESS);
        assert_eq!(cuStreamDestroy_v2(s), INVALID_HANDLE);
        assert_eq!(cuStreamQuery(s), INVALID_HANDLE);
        assert_eq!(cuStreamDestroy_v2(null_mut()), INVALID_HANDLE);
        assert_eq!(cuEventDestroy_v2(e0), SUCCESS);
        assert_eq!(cuEventDestroy_v2(e0), INVALID_HANDLE);
        assert_eq!(cuEventSynchronize(e0), INVALID_HANDLE);
        assert_eq!(cuStreamWaitEvent(s2, e0, 0), INVALID_HANDLE);
        assert_eq!(cuStreamDestroy_v2(s2), SUCCESS);
    }
}

#[test]
fn modules_functions_and_launches() {
    setup();
    let l = lib();
    api!(l;
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleLoadDataEx: fn(*mut Ptr, *const c_void, u32, *const u32, *mut *mut c_void);
        cuModuleLoad: fn(*mut Ptr, *const c_char);
        cuModuleUnload: fn(Ptr);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuModuleGetGlobal_v2: fn(*mut u64, *mut usize, Ptr, *const c_char);
        cuModuleGetFunctionCount: fn(*mut u32, Ptr);
        cuModuleEnumerateFunctions: fn(*mut Ptr, u32, Ptr);
        cuModuleGetLoadingMode: fn(*mut u32);
        cuFuncGetAttribute: fn(*mut i32, u32, Ptr);
        cuFuncSetAttribute: fn(Ptr, u32, i32);
        cuFuncGetName: fn(*mut *const c_char, Ptr);
        cuFuncGetParamInfo: fn(Ptr, usize, *mut usize, *mut usize);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuLaunchKernelEx: fn(*const [u64; 7], Ptr, *mut *mut c_void, *mut *mut c_void);
        cuLaunchCooperativeKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void);
        cuOccupancyMaxActiveBlocksPerMultiprocessor: fn(*mut i32, Ptr, i32, usize);
        cuOccupancyMaxPotentialBlockSize: fn(*mut i32, *mut i32, Ptr, Option<unsafe extern "C" fn(i32) -> usize>, usize, i32);
        cuCtxSynchronize: fn();
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuMemcpyHtoD_v2: fn(u64, *const c_void, usize);
    );
    unsafe {
        let mut mode = 0;
        assert_eq!(cuModuleGetLoadingMode(&mut mode), SUCCESS);
        assert!(mode == 1 || mode == 2);
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, MOCK_PTX.as_ptr().cast()), SUCCESS);
        assert_eq!(cuModuleLoadData(null_mut(), MOCK_PTX.as_ptr().cast()), INVALID_VALUE);
        assert_eq!(cuModuleLoadData(&mut m as *mut Ptr, std::ptr::null()), INVALID_VALUE);
        let mut n = 0u32;
        assert_eq!(cuModuleGetFunctionCount(&mut n, m), SUCCESS);
        assert_eq!(n, 5);
        let mut fs = [null_mut(); 5];
        assert_eq!(cuModuleEnumerateFunctions(fs.as_mut_ptr(), 5, m), SUCCESS);
        let mut f = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, m, c"mock_fill_u32".as_ptr()), SUCCESS);
        assert_eq!(f, fs[0]);
        assert_eq!(cuModuleGetFunction(&mut f, m, c"missing".as_ptr()), NOT_FOUND);
        assert_eq!(cuModuleGetFunction(&mut f, GARBAGE, c"mock_fill_u32".as_ptr()), INVALID_HANDLE);
        assert_eq!(cuModuleGetFunction(&mut f, m, c"mock_fill_u32".as_ptr()), SUCCESS);
        let mut name: *const c_char = std::ptr::null();
        assert_eq!(cuFuncGetName(&mut name, f), SUCCESS);
        assert_eq!(CStr::from_ptr(name).to_str(), Ok("mock_fill_u32"));
        let (mut off, mut size) = (0usize, 0usize);
        assert_eq!(cuFuncGetParamInfo(f, 2, &mut off, &mut size), SUCCESS);
        assert_eq!((off, size), (12, 4));
        assert_eq!(cuFuncGetParamInfo(f, 3, &mut off, &mut size), INVALID_VALUE);
        let (mut g, mut gs) = (0u64, 0usize);
        assert_eq!(cuModuleGetGlobal_v2(&mut g, &mut gs, m, c"counter".as_ptr()), SUCCESS);
        assert_eq!(gs, 4);
        assert_eq!(cuModuleGetGlobal_v2(null_mut(), &mut gs, m, c"counter".as_ptr()), SUCCESS);
        assert_eq!(cuModuleGetGlobal_v2(&mut g, &mut gs, m, c"nope".as_ptr()), NOT_FOUND);
        let v = 5u32;
        assert_eq!(cuMemcpyHtoD_v2(g, (&v as *const u32).cast(), 4), SUCCESS);
        // Launch with kernelParams.
        let mut buf = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut buf, 64), SUCCESS);
        let (val, cnt) = (0x1234u32, 16u32);
        let mut params: [*mut c_void; 3] =
            [(&buf as *const u64).cast_mut().cast(), (&val as *const u32).cast_mut().cast(), (&cnt as *const u32).cast_mut().cast()];
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut out = [0u32; 16];
        assert_eq!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), buf, 64), SUCCESS);
        assert_eq!(out, [0x1234; 16]);
        // Launch with the extra form.
        let mut pb = [0u8; 16];
        pb[..8].copy_from_slice(&buf.to_le_bytes());
        pb[8..12].copy_from_slice(&7u32.to_le_bytes());
        pb[12..16].copy_from_slice(&2u32.to_le_bytes());
        let mut pbsize = 16usize;
        let mut extra: [*mut c_void; 5] = [1 as Ptr, pb.as_mut_ptr().cast(), 2 as Ptr, (&mut pbsize as *mut usize).cast(), null_mut()];
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), null_mut(), extra.as_mut_ptr()), SUCCESS);
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), extra.as_mut_ptr()),
            INVALID_VALUE,
            "both forms"
        );
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), null_mut(), null_mut()), INVALID_VALUE, "no arguments");
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        assert_eq!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), buf, 8), SUCCESS);
        assert_eq!(&out[..3], &[7, 7, 0x1234]);
        // Bad configurations.
        for (g, b) in [
            ([0, 1, 1], [1, 1, 1]),
            ([1, 1, 1], [0, 1, 1]),
            ([1, 1, 1], [2048, 1, 1]),
            ([1, 1, 1], [32, 32, 2]),
            ([1, 70000, 1], [1, 1, 1]),
            ([1, 1, 1], [1, 1, 65]),
        ] {
            assert_eq!(
                cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], 0, null_mut(), params.as_mut_ptr(), null_mut()),
                INVALID_VALUE,
                "{g:?} {b:?}"
            );
        }
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 1 << 20, null_mut(), params.as_mut_ptr(), null_mut()),
            INVALID_VALUE,
            "shared memory"
        );
        assert_eq!(cuLaunchKernel(GARBAGE, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), INVALID_HANDLE);
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, GARBAGE, params.as_mut_ptr(), null_mut()), INVALID_HANDLE);
        let mut limited = null_mut();
        assert_eq!(cuModuleGetFunction(&mut limited, m, c"limited".as_ptr()), SUCCESS);
        assert_eq!(cuLaunchKernel(limited, 1, 1, 1, 128, 1, 1, 0, null_mut(), null_mut(), null_mut()), LAUNCH_OUT_OF_RESOURCES);
        // Attributes and occupancy.
        let mut v = 0;
        assert_eq!(cuFuncGetAttribute(&mut v, 0, limited), SUCCESS);
        assert_eq!(v, 64);
        assert_eq!(cuFuncGetAttribute(&mut v, 99, f), INVALID_VALUE);
        assert_eq!(cuFuncGetAttribute(null_mut(), 0, f), INVALID_VALUE);
        assert_eq!(cuFuncSetAttribute(f, 8, 65536), SUCCESS);
        assert_eq!(cuFuncGetAttribute(&mut v, 8, f), SUCCESS);
        assert_eq!(v, 65536);
        assert_eq!(cuFuncSetAttribute(f, 8, 1 << 24), INVALID_VALUE);
        assert_eq!(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut v, f, 256, 0), SUCCESS);
        assert!(v >= 1);
        let (mut grid, mut block) = (0, 0);
        assert_eq!(cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, f, None, 0, 0), SUCCESS);
        assert!(block >= 32 && grid >= 1);
        // Cooperative launches: within and beyond the resident limit.
        let mut per_sm = 0;
        assert_eq!(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut per_sm, f, 1024, 0), SUCCESS);
        let sms = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
        assert_eq!(cuLaunchCooperativeKernel(f, per_sm as u32 * sms, 1, 1, 1024, 1, 1, 0, null_mut(), params.as_mut_ptr()), SUCCESS);
        assert_eq!(
            cuLaunchCooperativeKernel(f, per_sm as u32 * sms + 1, 1, 1, 1024, 1, 1, 0, null_mut(), params.as_mut_ptr()),
            COOPERATIVE_LAUNCH_TOO_LARGE
        );
        // cuLaunchKernelEx with a cooperative attribute: CUlaunchConfig
        // (7 words with numAttrs) and one CUlaunchAttribute (72 bytes).
        let mut attr = [0u64; 9];
        attr[0] = 2; // CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attr[1] = 1; // value.cooperative
        let cfg: [u64; 7] = [1 | (1 << 32), 1 | (32 << 32), 1 | (1 << 32), 0, 0, attr.as_ptr() as u64, 1];
        assert_eq!(cuLaunchKernelEx(&cfg, f, params.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuLaunchKernelEx(std::ptr::null(), f, params.as_mut_ptr(), null_mut()), INVALID_VALUE);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        // JIT error logs.
        let mut log = [0u8; 256];
        let opts = [5u32, 6];
        let mut vals: [*mut c_void; 2] = [log.as_mut_ptr().cast(), 256 as Ptr];
        let mut bad = null_mut();
        assert_eq!(cuModuleLoadDataEx(&mut bad, c"not ptx at all".as_ptr().cast(), 2, opts.as_ptr(), vals.as_mut_ptr()), INVALID_PTX);
        let text = CStr::from_bytes_until_nul(&log).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(text.contains("anycuda") && text.len() > 10, "log: {text}");
        assert_eq!(vals[1] as usize, text.len() + 1, "the size option reports what was written");
        assert_eq!(cuModuleLoadDataEx(&mut bad, MOCK_PTX.as_ptr().cast(), 1, opts.as_ptr(), null_mut()), INVALID_VALUE);
        assert_eq!(cuModuleLoad(&mut bad, c"/nonexistent/anycuda.ptx".as_ptr()), FILE_NOT_FOUND);
        let ptx_file = std::env::temp_dir().join(format!("anycuda-test-{}.ptx", std::process::id()));
        std::fs::write(&ptx_file, MOCK_PTX.trim_end_matches('\0')).expect("write ptx");
        let path = std::ffi::CString::new(ptx_file.to_string_lossy().as_bytes()).expect("path");
        assert_eq!(cuModuleLoad(&mut bad, path.as_ptr()), SUCCESS);
        let _ = std::fs::remove_file(&ptx_file);
        assert_eq!(cuModuleUnload(bad), SUCCESS);
        // Unloading invalidates the module's functions.
        assert_eq!(cuModuleUnload(m), SUCCESS);
        assert_eq!(cuModuleUnload(m), INVALID_HANDLE);
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), INVALID_HANDLE);
        assert_eq!(cuFuncGetAttribute(&mut v, 0, f), INVALID_HANDLE);
    }
}

#[test]
fn libraries_and_kernel_handles() {
    setup();
    let l = lib();
    api!(l;
        cuLibraryLoadData: fn(*mut Ptr, *const c_void, *mut u32, *mut *mut c_void, u32, *mut u32, *mut *mut c_void, u32);
        cuLibraryUnload: fn(Ptr);
        cuLibraryGetKernel: fn(*mut Ptr, Ptr, *const c_char);
        cuLibraryGetKernelCount: fn(*mut u32, Ptr);
        cuLibraryEnumerateKernels: fn(*mut Ptr, u32, Ptr);
        cuLibraryGetModule: fn(*mut Ptr, Ptr);
        cuLibraryGetGlobal: fn(*mut u64, *mut usize, Ptr, *const c_char);
        cuKernelGetFunction: fn(*mut Ptr, Ptr);
        cuKernelGetName: fn(*mut *const c_char, Ptr);
        cuKernelGetAttribute: fn(*mut i32, u32, Ptr, i32);
        cuKernelGetParamInfo: fn(Ptr, usize, *mut usize, *mut usize);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags: fn(*mut i32, Ptr, i32, usize, u32);
        cuCtxSynchronize: fn();
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
    );
    unsafe {
        let mut lb = null_mut();
        let mut lopt = [1u32];
        let mut lval: [*mut c_void; 1] = [1 as Ptr];
        assert_eq!(
            cuLibraryLoadData(&mut lb, MOCK_PTX.as_ptr().cast(), null_mut(), null_mut(), 0, lopt.as_mut_ptr(), lval.as_mut_ptr(), 1),
            SUCCESS
        );
        let mut bad_opt = [9u32];
        let mut other = null_mut();
        assert_eq!(
            cuLibraryLoadData(&mut other, MOCK_PTX.as_ptr().cast(), null_mut(), null_mut(), 0, bad_opt.as_mut_ptr(), lval.as_mut_ptr(), 1),
            INVALID_VALUE
        );
        let mut n = 0u32;
        assert_eq!(cuLibraryGetKernelCount(&mut n, lb), SUCCESS);
        assert_eq!(n, 5);
        let mut ks = [null_mut(); 5];
        assert_eq!(cuLibraryEnumerateKernels(ks.as_mut_ptr(), 5, lb), SUCCESS);
        let mut k = null_mut();
        assert_eq!(cuLibraryGetKernel(&mut k, lb, c"mock_fill_u32".as_ptr()), SUCCESS);
        assert_eq!(k, ks[0]);
        assert_eq!(cuLibraryGetKernel(&mut k, lb, c"nope".as_ptr()), NOT_FOUND);
        assert_eq!(cuLibraryGetKernel(&mut k, GARBAGE, c"nope".as_ptr()), INVALID_HANDLE);
        assert_eq!(cuLibraryGetKernel(&mut k, lb, c"mock_fill_u32".as_ptr()), SUCCESS);
        let mut name: *const c_char = std::ptr::null();
        assert_eq!(cuKernelGetName(&mut name, k), SUCCESS);
        assert_eq!(CStr::from_ptr(name).to_str(), Ok("mock_fill_u32"));
        let (mut o, mut s) = (0, 0);
        assert_eq!(cuKernelGetParamInfo(k, 1, &mut o, &mut s), SUCCESS);
        assert_eq!((o, s), (8, 4));
        let mut v = 0;
        assert_eq!(cuKernelGetAttribute(&mut v, 0, k, 0), SUCCESS);
        assert_eq!(v, 1024);
        assert_eq!(cuKernelGetAttribute(&mut v, 0, k, 4), INVALID_DEVICE);
        assert_eq!(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&mut v, k, 128, 0, 0), SUCCESS);
        assert!(v > 0);
        // The 12.x path: module, then function; the 13.x path: the kernel
        // handle itself.
        let (mut md, mut f1, mut f2) = (null_mut(), null_mut(), null_mut());
        assert_eq!(cuLibraryGetModule(&mut md, lb), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut f1, md, c"mock_fill_u32".as_ptr()), SUCCESS);
        assert_eq!(cuKernelGetFunction(&mut f2, k), SUCCESS);
        assert_eq!(f1, f2);
        let (mut g, mut gs) = (0u64, 0usize);
        assert_eq!(cuLibraryGetGlobal(&mut g, &mut gs, lb, c"counter".as_ptr()), SUCCESS);
        assert_eq!(gs, 4);
        let mut buf = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut buf, 16), SUCCESS);
        let (val, cnt) = (3u32, 4u32);
        let mut params: [*mut c_void; 3] =
            [(&buf as *const u64).cast_mut().cast(), (&val as *const u32).cast_mut().cast(), (&cnt as *const u32).cast_mut().cast()];
        assert_eq!(cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut out = [0u32; 4];
        assert_eq!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), buf, 16), SUCCESS);
        assert_eq!(out, [3; 4]);
        assert_eq!(cuLibraryUnload(lb), SUCCESS);
        assert_eq!(cuLibraryUnload(lb), INVALID_HANDLE);
        assert_eq!(cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), INVALID_HANDLE);
        assert_eq!(cuKernelGetFunction(&mut f2, k), INVALID_HANDLE);
    }
}

#[test]
fn kernel_faults_are_sticky_per_context() {
    let l = lib();
    setup();
    api!(l;
        cuCtxCreate_v2: fn(*mut Ptr, u32, i32);
        cuCtxDestroy_v2: fn(Ptr);
        cuCtxSynchronize: fn();
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuStreamCreate: fn(*mut Ptr, u32);
        cuCtxPopCurrent_v2: fn(*mut Ptr);
        cuCtxPushCurrent_v2: fn(Ptr);
    );
    unsafe {
        // A context of its own: the fault must not poison the others.
        let mut c = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut c, 0, 0), SUCCESS);
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, MOCK_PTX.as_ptr().cast()), SUCCESS);
        let mut f = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, m, c"mock_fault".as_ptr()), SUCCESS);
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), null_mut(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), ILLEGAL_ADDRESS);
        assert_eq!(cuCtxSynchronize(), ILLEGAL_ADDRESS);
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, 16), ILLEGAL_ADDRESS);
        let mut s = null_mut();
        assert_eq!(cuStreamCreate(&mut s, 0), ILLEGAL_ADDRESS);
        // A kernel the mock cannot run fails the same way, in another
        // context.
        let mut popped = null_mut();
        assert_eq!(cuCtxPopCurrent_v2(&mut popped), SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut p, 16), SUCCESS, "the primary context is healthy");
        assert_eq!(cuCtxPushCurrent_v2(c), SUCCESS);
        assert_eq!(cuCtxDestroy_v2(c), SUCCESS);
        let mut c2 = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut c2, 0, 0), SUCCESS);
        assert_eq!(cuModuleLoadData(&mut m, MOCK_PTX.as_ptr().cast()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut f, m, c"limited".as_ptr()), SUCCESS);
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), null_mut(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), LAUNCH_FAILED);
        assert_eq!(cuCtxDestroy_v2(c2), SUCCESS);
    }
}

#[test]
fn wrong_context() {
    setup();
    let l = lib();
    api!(l;
        cuCtxCreate_v2: fn(*mut Ptr, u32, i32);
        cuCtxDestroy_v2: fn(Ptr);
        cuCtxPopCurrent_v2: fn(*mut Ptr);
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuStreamCreate: fn(*mut Ptr, u32);
    );
    unsafe {
        let mut c = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut c, 0, 0), SUCCESS);
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, MOCK_PTX.as_ptr().cast()), SUCCESS);
        let mut f = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, m, c"mock_sleep".as_ptr()), SUCCESS);
        let mut popped = null_mut();
        assert_eq!(cuCtxPopCurrent_v2(&mut popped), SUCCESS);
        let mut s = null_mut();
        assert_eq!(cuStreamCreate(&mut s, 0), SUCCESS, "a stream of the primary context");
        let ms = 1u32;
        let mut params: [*mut c_void; 1] = [(&ms as *const u32).cast_mut().cast()];
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params.as_mut_ptr(), null_mut()), INVALID_HANDLE);
        assert_eq!(cuCtxDestroy_v2(c), SUCCESS);
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params.as_mut_ptr(), null_mut()), INVALID_HANDLE);
    }
}
