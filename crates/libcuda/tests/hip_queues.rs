//! The HIP backend's queues on the HIP runtime's test double (emulated
//! gfx1100): every driver stream is a HIP stream of its own, and copies,
//! memsets, launches and event records are enqueued on it (the double
//! traces the stream of every operation), never made synchronously or on
//! HIP's null stream; the driver's ordering, host functions and event
//! timing hold on top.

mod common;
mod hip_emulated;
mod oracle_run;

use common::*;
use std::ffi::c_void;

/// `p[tid.x] = v`.
const FILL_PTX: &str = concat!(
    ".version 7.0\n.target sm_70\n.address_size 64\n",
    ".visible .entry fill(.param .u64 p, .param .u32 v) {\n",
    "  .reg .b64 %rd<5>;\n  .reg .b32 %r<3>;\n",
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [v];\n",
    "  cvta.to.global.u64 %rd2, %rd1;\n",
    "  mov.u32 %r2, %tid.x;\n  mul.wide.u32 %rd3, %r2, 4;\n  add.s64 %rd4, %rd2, %rd3;\n",
    "  st.global.u32 [%rd4], %r1;\n  ret;\n}\n\0"
);

/// Trace operations (`crates/hip-emulated/src/api.rs`, `op`).
const MEMCPY: u64 = 1;
const MEMSET: u64 = 2;
const LAUNCH: u64 = 3;
const RECORD: u64 = 4;
/// `hipModuleLoadData`: a kernel's code object, loaded at its first
/// launch; not a stream operation.
const MODULE_LOAD: u64 = 7;

fn trace(lib: &Lib) -> Vec<(u64, u64)> {
    let path = std::ffi::CString::new(hip_emulated::hip_library().to_string_lossy().as_bytes()).expect("path");
    // SAFETY: the double is loaded already (the HIP backend opened it);
    // this only finds it again.
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    assert!(!h.is_null(), "the HIP backend did not load the double");
    // SAFETY: looking up the double's trace function, of this signature.
    let f: unsafe extern "C" fn(*mut u64, usize) -> usize =
        unsafe { std::mem::transmute(libc::dlsym(h, c"anycuda_hip_emulated_trace".as_ptr())) };
    let _ = lib;
    // SAFETY: NULL with capacity 0.
    let n = unsafe { f(std::ptr::null_mut(), 0) };
    let mut buf = vec![0u64; 2 * n];
    // SAFETY: room for n pairs.
    let n = unsafe { f(buf.as_mut_ptr(), n) }.min(n);
    buf[..2 * n].chunks_exact(2).map(|c| (c[0], c[1])).collect()
}

static HOST_SAW: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn read_pinned(p: Ptr) {
    // SAFETY: the test passes its pinned buffer, written by the copy
    // enqueued before this host function.
    HOST_SAW.store(unsafe { *(p as *const u32).add(5) }, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn streams_enqueue_on_hip_streams_of_their_own() {
    let lib = hip_emulated::library("gfx1100");
    assert!(hip_emulated::device_name(lib).contains("emulated"));
    api!(lib;
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
        cuCtxSetCurrent: fn(Ptr);
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const std::ffi::c_char);
        cuStreamCreate: fn(*mut Ptr, u32);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemAllocHost_v2: fn(*mut Ptr, usize);
        cuEventCreate: fn(*mut Ptr, u32);
        cuEventRecord: fn(Ptr, Ptr);
        cuEventSynchronize: fn(Ptr);
        cuEventElapsedTime_v2: fn(*mut f32, Ptr, Ptr);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuMemcpyDtoHAsync_v2: fn(*mut c_void, u64, usize, Ptr);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuMemsetD32Async: fn(u64, u32, usize, Ptr);
        cuStreamWaitEvent: fn(Ptr, Ptr, u32);
        cuLaunchHostFunc: fn(Ptr, Option<unsafe extern "C" fn(Ptr)>, Ptr);
        cuStreamSynchronize: fn(Ptr);
    );
    let null = std::ptr::null_mut::<c_void>();
    let (mut ctx, mut module, mut fill, mut s1, mut s2, mut start, mut end) = (null, null, null, null, null, null, null);
    let (mut d, mut d2, mut pinned) = (0u64, 0u64, null);
    // SAFETY: driver calls with valid out-pointers and buffers of the
    // sizes given.
    unsafe {
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(ctx), SUCCESS);
        assert_eq!(cuModuleLoadData(&mut module, FILL_PTX.as_ptr().cast()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut fill, module, c"fill".as_ptr()), SUCCESS);
        assert_eq!(cuStreamCreate(&mut s1, 1), SUCCESS);
        assert_eq!(cuStreamCreate(&mut s2, 1), SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut d, 256), SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut d2, 256), SUCCESS);
        assert_eq!(cuMemAllocHost_v2(&mut pinned, 256), SUCCESS);
        assert_eq!(cuEventCreate(&mut start, 0), SUCCESS);
        assert_eq!(cuEventCreate(&mut end, 0), SUCCESS);
        let before = trace(lib).len();

        // s1: record, launch, record, copy back into pinned memory, then a
        // host function that reads it.
        assert_eq!(cuEventRecord(start, s1), SUCCESS);
        let mut v = 0x5eed_u32;
        let mut args = [(&mut d as *mut u64).cast::<c_void>(), (&mut v as *mut u32).cast::<c_void>()];
        assert_eq!(cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, s1, args.as_mut_ptr(), std::ptr::null_mut()), SUCCESS);
        assert_eq!(cuEventRecord(end, s1), SUCCESS);
        assert_eq!(cuMemcpyDtoHAsync_v2(pinned, d, 256, s1), SUCCESS);
        assert_eq!(cuLaunchHostFunc(s1, Some(read_pinned), pinned), SUCCESS);
        // s2: after s1's launch (the event), a memset.
        assert_eq!(cuStreamWaitEvent(s2, end, 0), SUCCESS);
        assert_eq!(cuMemsetD32Async(d2, 7, 64, s2), SUCCESS);
        assert_eq!(cuStreamSynchronize(s1), SUCCESS);
        assert_eq!(cuStreamSynchronize(s2), SUCCESS);

        let got = std::slice::from_raw_parts(pinned as *const u32, 64);
        assert!(got.iter().all(|&x| x == 0x5eed), "the kernel's result did not reach pinned memory: {:x?}", &got[..4]);
        assert_eq!(HOST_SAW.load(std::sync::atomic::Ordering::SeqCst), 0x5eed, "the host function ran before the copy");
        let mut back = [0u32; 64];
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d2, 256), SUCCESS);
        assert_eq!(back, [7; 64]);
        assert_eq!(cuEventSynchronize(end), SUCCESS);
        let mut ms = -1f32;
        assert_eq!(cuEventElapsedTime_v2(&mut ms, start, end), SUCCESS);
        assert!(ms >= 0.0 && ms.is_finite(), "elapsed {ms} ms");

        let ops: Vec<(u64, u64)> = trace(lib)[before..].iter().copied().filter(|&(_, op)| op != MODULE_LOAD).collect();
        let of = |op: u64| ops.iter().filter(|e| e.1 == op).map(|e| e.0).collect::<Vec<_>>();
        for &(stream, op) in &ops {
            assert!(stream != 0 && stream != u64::MAX, "operation {op} went to {stream:#x}, not a stream of its own: {ops:x?}");
        }
        let (launches, records, copies, memsets) = (of(LAUNCH), of(RECORD), of(MEMCPY), of(MEMSET));
        assert_eq!(launches.len(), 1, "{ops:x?}");
        let q1 = launches[0];
        assert_eq!(records, [q1, q1], "the records went elsewhere: {ops:x?}");
        assert_eq!(memsets.len(), 1, "{ops:x?}");
        assert_ne!(memsets[0], q1, "two streams share a HIP stream: {ops:x?}");
        // The async copy on s1, then the synchronous copy on the legacy
        // stream's HIP stream.
        assert_eq!(copies.len(), 2, "{ops:x?}");
        assert_eq!(copies[0], q1);
        assert!(copies[1] != q1 && copies[1] != memsets[0], "{ops:x?}");
        // In enqueue order on s1: record, launch, record, copy.
        let s1_ops: Vec<u64> = ops.iter().filter(|e| e.0 == q1).map(|e| e.1).collect();
        assert_eq!(s1_ops, [RECORD, LAUNCH, RECORD, MEMCPY]);
    }
}
