//! The device's memory under a limit (`ANYCUDA_DEVICE_MEMORY=64M`): the
//! device's total memory and `cuMemGetInfo` report it, device, pinned host,
//! managed and stream-ordered allocations are counted against it, and one
//! past it fails with `CUDA_ERROR_OUT_OF_MEMORY` (the process lives on and
//! the context stays usable).

mod common;
use common::*;
use std::ffi::c_void;
use std::ptr::null_mut;

const MIB: usize = 1 << 20;

#[test]
fn allocations_are_counted_against_the_device_memory_limit() {
    std::env::set_var("ANYCUDA_DEVICE_MEMORY", "64M");
    let l = Lib::open_cpu();
    api!(l;
        cuInit: fn(u32); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr);
        cuDeviceTotalMem_v2: fn(*mut usize, i32); cuMemGetInfo_v2: fn(*mut usize, *mut usize);
        cuMemAlloc_v2: fn(*mut u64, usize); cuMemFree_v2: fn(u64);
        cuMemAllocHost_v2: fn(*mut *mut c_void, usize); cuMemHostAlloc: fn(*mut *mut c_void, usize, u32); cuMemFreeHost: fn(*mut c_void);
        cuMemAllocManaged: fn(*mut u64, usize, u32);
        cuMemAllocAsync: fn(*mut u64, usize, Ptr); cuMemFreeAsync: fn(u64, Ptr); cuStreamSynchronize: fn(Ptr);
        cuMemsetD8_v2: fn(u64, u8, usize); cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
    );
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
        let mut total = 0;
        assert_eq!(cuDeviceTotalMem_v2(&mut total, 0), SUCCESS);
        assert_eq!(total, 64 * MIB);
        let info = || {
            let (mut free, mut total) = (0, 0);
            assert_eq!(cuMemGetInfo_v2(&mut free, &mut total), SUCCESS);
            assert_eq!(total, 64 * MIB);
            free
        };
        assert_eq!(info(), 64 * MIB);

        // Device memory.
        let mut big = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut big, 1 << 30), OUT_OF_MEMORY, "1 GiB on a 64 MiB device");
        assert_eq!(cuMemAlloc_v2(&mut big, 40 * MIB), SUCCESS);
        assert_eq!(info(), 24 * MIB);
        let mut d = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut d, 30 * MIB), OUT_OF_MEMORY);
        assert_eq!(info(), 24 * MIB, "a failed allocation takes nothing");

        // Pinned host memory, both entry points.
        let mut h = null_mut();
        assert_eq!(cuMemAllocHost_v2(&mut h, 30 * MIB), OUT_OF_MEMORY);
        assert_eq!(cuMemHostAlloc(&mut h, 30 * MIB, 0), OUT_OF_MEMORY);
        assert_eq!(cuMemHostAlloc(&mut h, 16 * MIB, 0), SUCCESS);
        assert_eq!(info(), 8 * MIB);

        // Managed memory.
        let mut m = 0u64;
        assert_eq!(cuMemAllocManaged(&mut m, 16 * MIB, 1), OUT_OF_MEMORY);
        assert_eq!(cuMemAllocManaged(&mut m, 8 * MIB, 1), SUCCESS);
        assert_eq!(info(), 0);
        assert_eq!(cuMemAlloc_v2(&mut d, 1), OUT_OF_MEMORY);

        // Stream-ordered allocation.
        let mut a = 0u64;
        assert_eq!(cuMemAllocAsync(&mut a, MIB, null_mut()), OUT_OF_MEMORY);

        // The context still works: memory can be used and given back.
        assert_eq!(cuMemsetD8_v2(big, 0x5a, 40 * MIB), SUCCESS);
        let mut back = [0u8; 16];
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), big + (40 * MIB - 16) as u64, 16), SUCCESS);
        assert_eq!(back, [0x5a; 16]);
        assert_eq!(cuMemFree_v2(big), SUCCESS);
        assert_eq!(cuMemFreeHost(h), SUCCESS);
        assert_eq!(cuMemFree_v2(m), SUCCESS);
        assert_eq!(info(), 64 * MIB);
        assert_eq!(cuMemAllocAsync(&mut a, 48 * MIB, null_mut()), SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut d, 32 * MIB), OUT_OF_MEMORY, "stream-ordered memory counts too");
        assert_eq!(cuMemFreeAsync(a, null_mut()), SUCCESS);
        assert_eq!(cuStreamSynchronize(null_mut()), SUCCESS);
    }
}
