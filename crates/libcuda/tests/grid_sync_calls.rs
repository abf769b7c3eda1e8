//! The device runtime's cooperative-groups functions
//! (`cudaCGGetIntrinsicHandle`, `cudaCGSynchronize`: numba-cuda's
//! `cuda.cg.this_grid().sync()`) through the built libcuda.so on the CPU
//! backend: `ptx/grid_sync_calls.ptx` declares them and defines them
//! nowhere; loaded alone or through `cuLink*`, anycuda's device library
//! supplies them, and in a cooperative launch every barrier holds across
//! blocks. Outside a cooperative launch the barrier cannot be kept and the
//! launch fails instead of giving wrong results.

mod common;
use common::*;
use std::ffi::{c_char, c_void};
use std::ptr::null_mut;

const PTX: &str = include_str!("../../../ptx/grid_sync_calls.ptx");

/// CUjitInputType's PTX.
const IN_PTX: u32 = 1;
/// cudaCGScopeGrid.
const SCOPE_GRID: u32 = 1;

/// Runs `phases` on a `gx` x `gy` grid of `block` threads and returns the
/// launch's and the synchronisation's results and `out`.
fn run(l: &Lib, module: Ptr, (gx, gy, block): (u32, u32, u32), cooperative: bool, scope: u32) -> (u32, u32, Vec<u32>) {
    api!(l; cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char); cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemsetD32_v2: fn(u64, u32, usize); cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize); cuMemFree_v2: fn(u64);
        cuCtxSynchronize: fn(););
    let launch: unsafe extern "C" fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void) -> u32 =
        l.f("cuLaunchKernel");
    let cooperative_launch: unsafe extern "C" fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void) -> u32 =
        l.f("cuLaunchCooperativeKernel");
    let n = (gx * gy * block) as usize;
    unsafe {
        let mut f = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, module, c"phases".as_ptr()), SUCCESS);
        let (mut a, mut out) = (0u64, 0u64);
        assert_eq!(cuMemAlloc_v2(&mut a, 4 * n), SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut out, 4 * n), SUCCESS);
        assert_eq!(cuMemsetD32_v2(out, 0xdead, n), SUCCESS);
        let mut scope = scope;
        let mut args: [*mut c_void; 3] = [(&mut a as *mut u64).cast(), (&mut out as *mut u64).cast(), (&mut scope as *mut u32).cast()];
        let r = if cooperative {
            cooperative_launch(f, gx, gy, 1, block, 1, 1, 0, null_mut(), args.as_mut_ptr())
        } else {
            launch(f, gx, gy, 1, block, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut())
        };
        let s = cuCtxSynchronize();
        let mut host = vec![0u32; n];
        if s == SUCCESS {
            assert_eq!(cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), out, 4 * n), SUCCESS);
            assert_eq!(cuMemFree_v2(a), SUCCESS);
            assert_eq!(cuMemFree_v2(out), SUCCESS);
        }
        (r, s, host)
    }
}

fn expected(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| 2 * i).collect()
}

/// One test, in order: the last step leaves the context with a sticky
/// error.
#[test]
fn grid_barriers_of_the_device_runtime_hold_across_blocks() {
    let l = Lib::open_cpu();
    api!(l; cuInit: fn(u32); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr);
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuLinkCreate_v2: fn(u32, *mut u32, *mut *mut c_void, *mut Ptr);
        cuLinkAddData_v2: fn(Ptr, u32, *mut c_void, usize, *const c_char, u32, *mut u32, *mut *mut c_void);
        cuLinkComplete: fn(Ptr, *mut *mut c_void, *mut usize); cuLinkDestroy: fn(Ptr); cuDevicePrimaryCtxReset_v2: fn(i32););
    let image = format!("{PTX}\0");
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);

        // Loaded alone: the module is linked with anycuda's device library.
        let mut alone = null_mut();
        assert_eq!(cuModuleLoadData(&mut alone, image.as_ptr().cast()), SUCCESS);
        for shape in [(8, 1, 64), (3, 2, 32), (1, 1, 128)] {
            let (r, s, out) = run(&l, alone, shape, true, SCOPE_GRID);
            assert_eq!((r, s), (SUCCESS, SUCCESS), "{shape:?}");
            assert_eq!(out, expected((shape.0 * shape.1 * shape.2) as usize), "{shape:?}");
        }
        // Many rounds of one grid's barrier: launch after launch reuses
        // nothing, and inside a launch the word's phases repeat.
        for _ in 0..3 {
            let (r, s, out) = run(&l, alone, (16, 1, 32), true, SCOPE_GRID);
            assert_eq!((r, s, out), (SUCCESS, SUCCESS, expected(512)));
        }

        // Through cuLink*, as numba-cuda's linker (or nvJitLink) does.
        let mut link = null_mut();
        assert_eq!(cuLinkCreate_v2(0, null_mut(), null_mut(), &mut link), SUCCESS);
        assert_eq!(
            cuLinkAddData_v2(link, IN_PTX, image.as_ptr() as *mut c_void, image.len(), c"grid.ptx".as_ptr(), 0, null_mut(), null_mut()),
            SUCCESS
        );
        let (mut cubin, mut size) = (null_mut(), 0usize);
        assert_eq!(cuLinkComplete(link, &mut cubin, &mut size), SUCCESS);
        let mut linked = null_mut();
        assert_eq!(cuModuleLoadData(&mut linked, cubin), SUCCESS);
        assert_eq!(cuLinkDestroy(link), SUCCESS);
        let (r, s, out) = run(&l, linked, (6, 1, 64), true, SCOPE_GRID);
        assert_eq!((r, s, out), (SUCCESS, SUCCESS, expected(384)));

        // A scope without a handle (cudaCGScopeMultiGrid), and a grid that
        // was not launched cooperatively: the barrier traps.
        // The trap is sticky: the primary context is reset in between.
        let (r, s, _) = run(&l, alone, (4, 1, 32), true, 2);
        assert_eq!(r, SUCCESS);
        assert_eq!(s, LAUNCH_FAILED, "a barrier without a handle");
        assert_eq!(cuDevicePrimaryCtxReset_v2(0), SUCCESS);
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
        let mut again = null_mut();
        assert_eq!(cuModuleLoadData(&mut again, image.as_ptr().cast()), SUCCESS);
        let (r, s, _) = run(&l, again, (4, 1, 32), false, SCOPE_GRID);
        assert_eq!(r, SUCCESS);
        assert_eq!(s, LAUNCH_FAILED, "a grid barrier in a launch that is not cooperative");
    }
}
