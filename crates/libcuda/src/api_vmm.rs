//! The virtual memory management API (`cuMemAddressReserve`,
//! `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`...).

use std::ffi::{c_ulonglong, c_void};

use cuda_types::*;
use driver::{Error, VmmProp};

use crate::util::{api, drv, Out};

/// The properties the driver checks, from the C struct.
unsafe fn read_prop(prop: *const CUmemAllocationProp) -> Result<VmmProp, Error> {
    if prop.is_null() {
        return Err(Error::InvalidValue("prop is NULL".into()));
    }
    let p = prop.read_unaligned();
    Ok(VmmProp {
        alloc_type: p.type_.0,
        handle_types: p.requestedHandleTypes.0,
        location_type: p.location.type_.0,
        device: p.location.id,
        gpu_direct_rdma: p.allocFlags.gpuDirectRDMACapable,
        usage: p.allocFlags.usage,
    })
}

api! {
    fn cuMemGetAllocationGranularity(granularity: *mut usize, prop: *const CUmemAllocationProp, option: CUmemAllocationGranularity_flags) {
        let out = Out::new(granularity, "granularity")?;
        let p = read_prop(prop)?;
        out.set(drv()?.mem_get_allocation_granularity(&p, option.0)?);
        Ok(())
    }
}

api! {
    fn cuMemAddressReserve(ptr: *mut CUdeviceptr, size: usize, alignment: usize, addr: CUdeviceptr, flags: c_ulonglong) {
        let out = Out::new(ptr, "ptr")?;
        out.set(drv()?.mem_address_reserve(size, alignment, addr, flags)?);
        Ok(())
    }
}

api! {
    fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) {
        drv()?.mem_address_free(ptr, size)
    }
}

api! {
    fn cuMemCreate(handle: *mut CUmemGenericAllocationHandle, size: usize, prop: *const CUmemAllocationProp, flags: c_ulonglong) {
        let out = Out::new(handle, "handle")?;
        let p = read_prop(prop)?;
        out.set(drv()?.mem_create(size, &p, flags)?);
        Ok(())
    }
}

api! {
    fn cuMemRelease(handle: CUmemGenericAllocationHandle) {
        drv()?.mem_release(handle)
    }
}

api! {
    fn cuMemMap(ptr: CUdeviceptr, size: usize, offset: usize, handle: CUmemGenericAllocationHandle, flags: c_ulonglong) {
        drv()?.mem_map(ptr, size, offset, handle, flags)
    }
}

api! {
    fn cuMemUnmap(ptr: CUdeviceptr, size: usize) {
        drv()?.mem_unmap(ptr, size)
    }
}

api! {
    fn cuMemSetAccess(ptr: CUdeviceptr, size: usize, desc: *const CUmemAccessDesc, count: usize) {
        if count > 0 && desc.is_null() {
            return Err(Error::InvalidValue("desc is NULL".into()));
        }
        if count > 4096 {
            return Err(Error::InvalidValue(format!("{count} access descriptors")));
        }
        let descs: Vec<(u32, i32, u32)> = (0..count)
            .map(|i| {
                let d = desc.add(i).read_unaligned();
                (d.location.type_.0, d.location.id, d.flags.0)
            })
            .collect();
        drv()?.mem_set_access(ptr, size, &descs)
    }
}

api! {
    fn cuMemGetAccess(flags: *mut c_ulonglong, location: *const CUmemLocation, ptr: CUdeviceptr) {
        let out = Out::new(flags, "flags")?;
        if location.is_null() {
            return Err(Error::InvalidValue("location is NULL".into()));
        }
        let l = location.read_unaligned();
        out.set(drv()?.mem_get_access(l.type_.0, l.id, ptr)? as c_ulonglong);
        Ok(())
    }
}

api! {
    fn cuMemGetAllocationPropertiesFromHandle(prop: *mut CUmemAllocationProp, handle: CUmemGenericAllocationHandle) {
        let out = Out::new(prop, "prop")?;
        let p = drv()?.mem_allocation_properties(handle)?;
        out.set(CUmemAllocationProp {
            type_: CUmemAllocationType(p.alloc_type),
            requestedHandleTypes: CUmemAllocationHandleType(p.handle_types),
            location: CUmemLocation { type_: CUmemLocationType(p.location_type), id: p.device },
            win32HandleMetaData: std::ptr::null_mut(),
            allocFlags: CUmemAllocationProp_allocFlags {
                compressionType: 0,
                gpuDirectRDMACapable: p.gpu_direct_rdma,
                usage: p.usage,
                reserved: [0; 4],
            },
        });
        Ok(())
    }
}

api! {
    fn cuMemExportToShareableHandle(shareableHandle: *mut c_void, handle: CUmemGenericAllocationHandle, handleType: CUmemAllocationHandleType, flags: c_ulonglong) {
        let out = Out::new(shareableHandle.cast::<i32>(), "shareableHandle")?;
        out.set(drv()?.mem_export_to_shareable_handle(handle, handleType.0, flags)?);
        Ok(())
    }
}

api! {
    fn cuMemImportFromShareableHandle(handle: *mut CUmemGenericAllocationHandle, osHandle: *mut c_void, shHandleType: CUmemAllocationHandleType) {
        let out = Out::new(handle, "handle")?;
        // A POSIX file descriptor travels in the pointer's value.
        let fd = i32::try_from(osHandle as usize).map_err(|_| Error::InvalidValue(format!("{osHandle:?} is not a file descriptor")))?;
        out.set(drv()?.mem_import_from_shareable_handle(fd, shHandleType.0)?);
        Ok(())
    }
}

api! {
    fn cuMemRetainAllocationHandle(handle: *mut CUmemGenericAllocationHandle, addr: *mut c_void) {
        let out = Out::new(handle, "handle")?;
        out.set(drv()?.mem_retain_allocation_handle(addr as u64)?);
        Ok(())
    }
}
