//! Kernel launches and occupancy.

use std::ffi::{c_int, c_uint, c_void};

use cuda_types::*;
use driver::{Error, KernelArgs, LaunchConfig};

use crate::util::{api, drv, Out};

/// The parameter buffer of the `extra` form:
/// `{CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
/// &size, CU_LAUNCH_PARAM_END}` in any order.
unsafe fn extra_buffer<'a>(extra: *mut *mut c_void) -> Result<&'a [u8], Error> {
    let mut buf: Option<*const u8> = None;
    let mut size: Option<usize> = None;
    let mut i = 0usize;
    loop {
        if i > 64 {
            return Err(Error::InvalidValue("extra is not terminated by CU_LAUNCH_PARAM_END".into()));
        }
        let tag = extra.add(i).read_unaligned() as usize;
        match tag {
            CU_LAUNCH_PARAM_END_AS_INT => break,
            CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT => {
                buf = Some(extra.add(i + 1).read_unaligned() as *const u8);
                i += 2;
            }
            CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT => {
                let p = extra.add(i + 1).read_unaligned() as *const usize;
                if p.is_null() {
                    return Err(Error::InvalidValue("CU_LAUNCH_PARAM_BUFFER_SIZE points to NULL".into()));
                }
                size = Some(p.read_unaligned());
                i += 2;
            }
            other => return Err(Error::InvalidValue(format!("unknown entry {other:#x} in extra"))),
        }
    }
    match (buf, size) {
        (Some(b), Some(n)) if !b.is_null() || n == 0 => {
            if n == 0 {
                Ok(&[])
            } else {
                Ok(std::slice::from_raw_parts(b, n))
            }
        }
        (None, None) => Ok(&[]),
        _ => Err(Error::InvalidValue("extra needs both a buffer pointer and its size".into())),
    }
}

pub(crate) unsafe fn args<'a>(kernelParams: *mut *mut c_void, extra: *mut *mut c_void) -> Result<KernelArgs<'a>, Error> {
    match (kernelParams.is_null(), extra.is_null()) {
        (false, false) => Err(Error::InvalidValue("both kernelParams and extra are given".into())),
        (false, true) => Ok(KernelArgs::Pointers(kernelParams as *const *const c_void)),
        (true, false) => Ok(KernelArgs::Buffer(extra_buffer(extra)?)),
        (true, true) => Ok(KernelArgs::None),
    }
}

api! {
    fn cuLaunchKernel / cuLaunchKernel_ptsz [ptds] (f: CUfunction, gridDimX: c_uint, gridDimY: c_uint, gridDimZ: c_uint, blockDimX: c_uint, blockDimY: c_uint, blockDimZ: c_uint, sharedMemBytes: c_uint, hStream: CUstream, kernelParams: *mut *mut c_void, extra: *mut *mut c_void) {
        let d = drv()?;
        let a = args(kernelParams, extra)?;
        let cfg = LaunchConfig {
            grid: [gridDimX, gridDimY, gridDimZ],
            block: [blockDimX, blockDimY, blockDimZ],
            shared_bytes: sharedMemBytes,
            stream: hStream.addr() as u64,
            cooperative: false,
        };
        d.launch_kernel(f.addr() as u64, &cfg, a, ptds)
    }
}

api! {
    fn cuLaunchCooperativeKernel / cuLaunchCooperativeKernel_ptsz [ptds] (f: CUfunction, gridDimX: c_uint, gridDimY: c_uint, gridDimZ: c_uint, blockDimX: c_uint, blockDimY: c_uint, blockDimZ: c_uint, sharedMemBytes: c_uint, hStream: CUstream, kernelParams: *mut *mut c_void) {
        let d = drv()?;
        let a = args(kernelParams, std::ptr::null_mut())?;
        let cfg = LaunchConfig {
            grid: [gridDimX, gridDimY, gridDimZ],
            block: [blockDimX, blockDimY, blockDimZ],
            shared_bytes: sharedMemBytes,
            stream: hStream.addr() as u64,
            cooperative: true,
        };
        d.launch_kernel(f.addr() as u64, &cfg, a, ptds)
    }
}

api! {
    fn cuLaunchKernelEx / cuLaunchKernelEx_ptsz [ptds] (config: *const CUlaunchConfig, f: CUfunction, kernelParams: *mut *mut c_void, extra: *mut *mut c_void) {
        if config.is_null() {
            return Err(Error::InvalidValue("config is NULL".into()));
        }
        let c = config.read_unaligned();
        if c.numAttrs > 0 && c.attrs.is_null() {
            return Err(Error::InvalidValue("attrs is NULL".into()));
        }
        let mut cooperative = false;
        for i in 0..c.numAttrs as usize {
            let at = c.attrs.add(i).read_unaligned();
            use CUlaunchAttributeID as A;
            match at.id {
                A::CU_LAUNCH_ATTRIBUTE_COOPERATIVE => cooperative = at.value.cooperative != 0,
                A::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION | A::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION => {
                    let dim = at.value.clusterDim;
                    if (dim.x, dim.y, dim.z) != (1, 1, 1) && (dim.x, dim.y, dim.z) != (0, 0, 0) {
                        return Err(Error::NotSupported("thread block clusters".into()));
                    }
                }
                A::CU_LAUNCH_ATTRIBUTE_IGNORE
                | A::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
                | A::CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY
                | A::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
                | A::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
                | A::CU_LAUNCH_ATTRIBUTE_PRIORITY
                | A::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP
                | A::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN
                | A::CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
                | A::CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING
                | A::CU_LAUNCH_ATTRIBUTE_PORTABLE_CLUSTER_SIZE_MODE
                | A::CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE => {}
                A::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
                | A::CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT
                | A::CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE => {
                    return Err(Error::NotSupported(format!("launch attribute {:?}", at.id)));
                }
                other => return Err(Error::InvalidValue(format!("unknown launch attribute {}", other.0))),
            }
        }
        let d = drv()?;
        let a = args(kernelParams, extra)?;
        let cfg = LaunchConfig {
            grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
            block: [c.blockDimX, c.blockDimY, c.blockDimZ],
            shared_bytes: c.sharedMemBytes,
            stream: c.hStream.addr() as u64,
            cooperative,
        };
        d.launch_kernel(f.addr() as u64, &cfg, a, ptds)
    }
}

api! {
    fn cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks: *mut c_int, func: CUfunction, blockSize: c_int, dynamicSMemSize: usize) {
        let out = Out::new(numBlocks, "numBlocks")?;
        out.set(drv()?.occupancy_max_active_blocks(func.addr() as u64, blockSize, dynamicSMemSize, 0)?);
        Ok(())
    }
}

api! {
    fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks: *mut c_int, func: CUfunction, blockSize: c_int, dynamicSMemSize: usize, flags: c_uint) {
        let out = Out::new(numBlocks, "numBlocks")?;
        out.set(drv()?.occupancy_max_active_blocks(func.addr() as u64, blockSize, dynamicSMemSize, flags)?);
        Ok(())
    }
}

unsafe fn potential(
    minGridSize: *mut c_int,
    blockSize: *mut c_int,
    func: CUfunction,
    b2d: CUoccupancyB2DSize,
    dynamicSMemSize: usize,
    blockSizeLimit: c_int,
    flags: c_uint,
) -> Result<(), Error> {
    let (g, b) = (Out::new(minGridSize, "minGridSize")?, Out::new(blockSize, "blockSize")?);
    let cb = b2d.map(|f| move |bs: i32| unsafe { f(bs) });
    let cb_ref: Option<&dyn Fn(i32) -> usize> = cb.as_ref().map(|c| c as &dyn Fn(i32) -> usize);
    let (grid, block) = drv()?.occupancy_max_potential_block_size(func.addr() as u64, cb_ref, dynamicSMemSize, blockSizeLimit, flags)?;
    g.set(grid);
    b.set(block);
    Ok(())
}

api! {
    fn cuOccupancyMaxPotentialBlockSize(minGridSize: *mut c_int, blockSize: *mut c_int, func: CUfunction, blockSizeToDynamicSMemSize: CUoccupancyB2DSize, dynamicSMemSize: usize, blockSizeLimit: c_int) {
        potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit, 0)
    }
}

api! {
    fn cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize: *mut c_int, blockSize: *mut c_int, func: CUfunction, blockSizeToDynamicSMemSize: CUoccupancyB2DSize, dynamicSMemSize: usize, blockSizeLimit: c_int, flags: c_uint) {
        potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit, flags)
    }
}

api! {
    fn cuOccupancyAvailableDynamicSMemPerBlock(dynamicSmemSize: *mut usize, func: CUfunction, numBlocks: c_int, blockSize: c_int) {
        let out = Out::new(dynamicSmemSize, "dynamicSmemSize")?;
        out.set(drv()?.occupancy_available_dynamic_smem(func.addr() as u64, numBlocks, blockSize)?);
        Ok(())
    }
}
