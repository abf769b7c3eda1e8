//! `ANYCUDA_LAUNCH_TIMEOUT` on the CPU backend: a launch that runs longer
//! than the limit ends with `CUDA_ERROR_LAUNCH_TIMEOUT`, sticky for its
//! context as on NVIDIA's driver, whichever way the kernel runs: whole
//! blocks (fast path), warps (warp mode), scheduled threads (thread mode),
//! in a loop without any yield (interrupted by a signal in its own code) or
//! in a spin loop that yields. A launch within the limit is unaffected.
//! Each wait has a deadline of its own, so a launch that is never ended
//! fails the test instead of hanging it.

mod common;
use common::*;
use std::ffi::{c_char, c_void};
use std::ptr::null_mut;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LAUNCH_TIMEOUT: u32 = 702;
const LIMIT: Duration = Duration::from_millis(500);

const PTX: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    // for (;;) {}: compiles to a jump to itself.
    ".visible .entry spin(.param .u64 out)\n{\n .reg .u32 %r;\n mov.u32 %r, %tid.x;\nL:\n add.u32 %r, %r, 1;\n bra L;\n}\n",
    // A barrier (warp mode), then the same loop.
    ".visible .entry spin_after_barrier(.param .u64 out)\n{\n .reg .u32 %r;\n mov.u32 %r, %tid.x;\n bar.sync 0;\nL:\n add.u32 %r, %r, 1;\n bra L;\n}\n",
    // The loop in a called function, after a barrier (thread mode).
    ".func forever(.param .b32 x)\n{\n .reg .u32 %r;\n ld.param.u32 %r, [x];\nL:\n add.u32 %r, %r, 1;\n bra L;\n}\n",
    ".visible .entry spin_in_call(.param .u64 out)\n{\n .reg .u32 %r;\n mov.u32 %r, %tid.x;\n bar.sync 0;\n {\n .param .b32 p;\n st.param.b32 [p], %r;\n call forever, (p);\n }\n ret;\n}\n",
    // Waits for a flag nobody sets (a spin loop: it yields).
    ".visible .entry wait_flag(.param .u64 flag)\n{\n .reg .u32 %v;\n .reg .u64 %a;\n .reg .pred %p;\n ld.param.u64 %a, [flag];\nL:\n ld.volatile.global.u32 %v, [%a];\n setp.eq.u32 %p, %v, 0;\n @%p bra L;\n ret;\n}\n",
    // About 200 ms of sleeping, then a store: within the limit.
    ".visible .entry nap(.param .u64 out)\n{\n .reg .u32 %i;\n .reg .u64 %a;\n .reg .pred %p;\n ld.param.u64 %a, [out];\n mov.u32 %i, 0;\nL:\n nanosleep.u32 1000000;\n add.u32 %i, %i, 1;\n setp.lt.u32 %p, %i, 200;\n @%p bra L;\n st.global.u32 [%a], %i;\n ret;\n}\n",
    "\0"
);

type LaunchFn = unsafe extern "C" fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void) -> u32;

struct Api {
    ctx_create: unsafe extern "C" fn(*mut Ptr, u32, i32) -> u32,
    ctx_destroy: unsafe extern "C" fn(Ptr) -> u32,
    ctx_sync: unsafe extern "C" fn() -> u32,
    load: unsafe extern "C" fn(*mut Ptr, *const c_void) -> u32,
    function: unsafe extern "C" fn(*mut Ptr, Ptr, *const c_char) -> u32,
    launch: LaunchFn,
    alloc: unsafe extern "C" fn(*mut u64, usize) -> u32,
    memset: unsafe extern "C" fn(u64, u8, usize) -> u32,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> u32,
}

/// Launches `name` (grid x block) in a new context with a zeroed buffer as
/// its parameter and waits for it; returns the synchronisation's result,
/// how long it took, and the result of a later call in the context.
fn run(api: &'static Api, name: &'static std::ffi::CStr, grid: u32, block: u32) -> (u32, Duration, u32, u32) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || unsafe {
        let mut ctx = null_mut();
        assert_eq!((api.ctx_create)(&mut ctx, 0, 0), SUCCESS);
        let mut m = null_mut();
        assert_eq!((api.load)(&mut m, PTX.as_ptr().cast()), SUCCESS);
        let mut f = null_mut();
        assert_eq!((api.function)(&mut f, m, name.as_ptr()), SUCCESS, "{name:?}");
        let mut buf = 0u64;
        assert_eq!((api.alloc)(&mut buf, 4096), SUCCESS);
        assert_eq!((api.memset)(buf, 0, 4096), SUCCESS);
        let mut params: [*mut c_void; 1] = [(&buf as *const u64).cast_mut().cast()];
        let t = Instant::now();
        let launched = (api.launch)(f, grid, 1, 1, block, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut());
        assert_eq!(launched, SUCCESS, "launches are asynchronous");
        let synced = (api.ctx_sync)();
        let took = t.elapsed();
        let mut later = 0u64;
        let after = (api.alloc)(&mut later, 16);
        let mut out = 0u32;
        let read = if synced == SUCCESS { (api.dtoh)((&mut out as *mut u32).cast(), buf, 4) } else { 0 };
        assert_eq!((api.ctx_destroy)(ctx), SUCCESS, "a context with a timed-out launch can be destroyed");
        let _ = tx.send((synced, took, after, if read == SUCCESS { out } else { u32::MAX }));
    });
    rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{name:?}: the launch was never ended"))
}

#[test]
fn launches_past_the_limit_end_with_a_sticky_launch_timeout() {
    std::env::set_var("ANYCUDA_LAUNCH_TIMEOUT", format!("{}", LIMIT.as_secs_f64()));
    let l = Lib::open_cpu();
    api!(l; cuInit: fn(u32); cuDeviceGetAttribute: fn(*mut i32, i32, i32););
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut v = 0;
        assert_eq!(cuDeviceGetAttribute(&mut v, 17, 0), SUCCESS); // KERNEL_EXEC_TIMEOUT
        assert_eq!(v, 1, "the device reports a run-time limit");
    }
    let api: &'static Api = Box::leak(Box::new(Api {
        ctx_create: l.f("cuCtxCreate_v2"),
        ctx_destroy: l.f("cuCtxDestroy_v2"),
        ctx_sync: l.f("cuCtxSynchronize"),
        load: l.f("cuModuleLoadData"),
        function: l.f("cuModuleGetFunction"),
        launch: l.f("cuLaunchKernel"),
        alloc: l.f("cuMemAlloc_v2"),
        memset: l.f("cuMemsetD8_v2"),
        dtoh: l.f("cuMemcpyDtoH_v2"),
    }));
    for (name, grid, block, what) in [
        (c"spin", 1, 1, "one block without yields (fast path)"),
        (c"spin", 64, 256, "64 blocks without yields (fast path)"),
        (c"spin_after_barrier", 8, 128, "warps without yields (warp mode)"),
        (c"spin_in_call", 4, 64, "scheduled threads in a called function (thread mode)"),
        (c"wait_flag", 4, 32, "a spin loop that yields"),
    ] {
        let (synced, took, after, _) = run(api, name, grid, block);
        assert_eq!(synced, LAUNCH_TIMEOUT, "{what}");
        assert_eq!(after, LAUNCH_TIMEOUT, "{what}: the error is sticky");
        assert!(took >= LIMIT.mul_f32(0.9), "{what}: ended after {took:?}, before the limit");
        assert!(took < LIMIT + Duration::from_secs(5), "{what}: ended only after {took:?}");
    }
    // Within the limit, in a fresh context: unaffected.
    let (synced, took, after, out) = run(api, c"nap", 1, 1);
    assert_eq!((synced, after, out), (SUCCESS, SUCCESS, 200), "a 200 ms launch under a 500 ms limit ({took:?})");
}
