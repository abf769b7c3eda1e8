//! Dynamic parallelism through the built libcuda.so on the CPU backend:
//! the hand-written kernels of `ptx/device_launch.ptx` launch kernels with
//! the device runtime's PTX interface (both parameter-buffer forms), and
//! the limits (`CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT`, the nesting
//! depth) give their errors at the device-side launch.

mod common;
use common::*;
use std::ffi::{c_char, c_void};
use std::ptr::null_mut;
use std::sync::{Mutex, OnceLock};

fn lib() -> &'static Lib {
    static L: OnceLock<Lib> = OnceLock::new();
    L.get_or_init(Lib::open_cpu)
}

/// The tests share the device-wide pending-launch count and the context's
/// limit: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: u32 = 4;

struct Module(Ptr);
// SAFETY: a module handle is a plain value the driver checks.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

fn module() -> Ptr {
    static M: OnceLock<Module> = OnceLock::new();
    M.get_or_init(|| {
        let l = lib();
        api!(l; cuInit: fn(u32); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr);
            cuModuleLoadData: fn(*mut Ptr, *const c_void););
        let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx/device_launch.ptx")).expect("device_launch.ptx");
        let image = format!("{src}\0");
        unsafe {
            assert_eq!(cuInit(0), SUCCESS);
            let mut c = null_mut();
            assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
            assert_eq!(cuCtxSetCurrent(c), SUCCESS);
            let mut m = null_mut();
            assert_eq!(cuModuleLoadData(&mut m, image.as_ptr().cast()), SUCCESS);
            Module(m)
        }
    })
    .0
}

fn current() {
    let l = lib();
    api!(l; cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr););
    module();
    unsafe {
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
    }
}

/// Runs `kernel<<<grid, block>>>` with the given u64/u32 arguments and
/// returns the launch's and the synchronisation's results.
fn launch(kernel: &str, grid: u32, block: u32, args: &mut [*mut c_void]) -> (u32, u32) {
    let l = lib();
    api!(l; cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuCtxSynchronize: fn(););
    let name = std::ffi::CString::new(kernel).expect("name");
    unsafe {
        let mut f = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, module(), name.as_ptr()), SUCCESS);
        let r = cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut());
        (r, cuCtxSynchronize())
    }
}

fn alloc_zeroed(bytes: usize) -> u64 {
    let l = lib();
    api!(l; cuMemAlloc_v2: fn(*mut u64, usize); cuMemsetD8_v2: fn(u64, u8, usize););
    let mut p = 0u64;
    unsafe {
        assert_eq!(cuMemAlloc_v2(&mut p, bytes), SUCCESS);
        assert_eq!(cuMemsetD8_v2(p, 0, bytes), SUCCESS);
    }
    p
}

fn read_u32(p: u64, n: usize) -> Vec<u32> {
    let l = lib();
    api!(l; cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize););
    let mut v = vec![0u32; n];
    unsafe { assert_eq!(cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), p, n * 4), SUCCESS) };
    v
}

fn set_pending_limit(n: usize) {
    let l = lib();
    api!(l; cuCtxSetLimit: fn(u32, usize); cuCtxGetLimit: fn(*mut usize, u32););
    unsafe {
        assert_eq!(cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, n), SUCCESS);
        let mut v = 0usize;
        assert_eq!(cuCtxGetLimit(&mut v, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT), SUCCESS);
        assert_eq!(v, n);
    }
}

#[test]
fn both_launch_interfaces_run_the_child_grid() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    current();
    for (kernel, threads, value) in [("parent_v2", 64usize, 7u32), ("parent_v1", 4, 5)] {
        let mut out = alloc_zeroed(4 * 80);
        let mut status = alloc_zeroed(4);
        // The status word starts as a value no launch returns.
        let l = lib();
        api!(l; cuMemsetD32_v2: fn(u64, u32, usize););
        unsafe { assert_eq!(cuMemsetD32_v2(status, 0xdead, 1), SUCCESS) };
        let mut args = [(&mut out as *mut u64).cast(), (&mut status as *mut u64).cast()];
        // The parent has 32 threads; only thread 0 launches.
        assert_eq!(launch(kernel, 1, 32, &mut args), (SUCCESS, SUCCESS), "{kernel}");
        assert_eq!(read_u32(status, 1), vec![0], "{kernel}: cudaLaunchDevice's result");
        let v = read_u32(out, 1 + threads);
        assert_eq!(v[0], value * threads as u32, "{kernel}: the child's threads all ran once");
        assert!(v[1..].iter().all(|&x| x == value), "{kernel}: {v:?}");
    }
}

#[test]
fn the_pending_launch_count_limit_refuses_launches_past_it() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    current();
    for limit in [8usize, 2048] {
        set_pending_limit(limit);
        let mut counts = alloc_zeroed(16);
        let mut count = 100u32;
        let mut args = [(&mut counts as *mut u64).cast(), (&mut count as *mut u32).cast()];
        assert_eq!(launch("launcher", 1, 1, &mut args), (SUCCESS, SUCCESS));
        let c = read_u32(counts, 4);
        // Children start only once their parent grid has finished, so
        // exactly `limit` launches wait at once.
        let ok = limit.min(100) as u32;
        assert_eq!(c, vec![ok, 100 - ok, 0, ok], "limit {limit}: succeeded, refused, other errors, children run");
    }
}

#[test]
fn nesting_stops_at_depth_24() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    current();
    let mut out = alloc_zeroed(8);
    let mut depth = 0u32;
    let mut args = [(&mut out as *mut u64).cast(), (&mut depth as *mut u32).cast()];
    assert_eq!(launch("nest", 1, 1, &mut args), (SUCCESS, SUCCESS));
    // The host's grid is depth 0; a grid at depth 24 cannot launch
    // (cudaErrorLaunchMaxDepthExceeded, 65).
    assert_eq!(read_u32(out, 2), vec![24, 65]);
}
