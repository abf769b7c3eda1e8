//! Memory: allocation, host memory, copies, memsets, pointer attributes,
//! pools.

use std::ffi::{c_uint, c_ushort, c_void};

use cuda_types::*;
use driver::{Error, MemLoc, Memcpy2D, Memcpy3D, MemsetValue, PointerAttribute, PoolAttribute};

use crate::util::{api, drv, set_opt, Out};

fn s(h: CUstream) -> u64 {
    h.addr() as u64
}

api! {
    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) {
        let (f, t) = (Out::new(free, "free")?, Out::new(total, "total")?);
        let (a, b) = drv()?.mem_get_info()?;
        f.set(a as usize);
        t.set(b as usize);
        Ok(())
    }
}

api! {
    fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize) {
        let out = Out::new(dptr, "dptr")?;
        out.set(drv()?.mem_alloc(bytesize)?);
        Ok(())
    }
}

api! {
    fn cuMemAllocPitch_v2(dptr: *mut CUdeviceptr, pPitch: *mut usize, WidthInBytes: usize, Height: usize, ElementSizeBytes: c_uint) {
        let (d, p) = (Out::new(dptr, "dptr")?, Out::new(pPitch, "pPitch")?);
        let (ptr, pitch) = drv()?.mem_alloc_pitch(WidthInBytes, Height, ElementSizeBytes)?;
        d.set(ptr);
        p.set(pitch);
        Ok(())
    }
}

api! {
    fn cuMemFree_v2(dptr: CUdeviceptr) {
        drv()?.mem_free(dptr)
    }
}

api! {
    fn cuMemGetAddressRange_v2(pbase: *mut CUdeviceptr, psize: *mut usize, dptr: CUdeviceptr) {
        let (base, size) = drv()?.mem_get_address_range(dptr)?;
        set_opt(pbase, base);
        set_opt(psize, size);
        Ok(())
    }
}

api! {
    fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytesize: usize) {
        let out = Out::new(pp, "pp")?;
        out.set(drv()?.mem_host_alloc(bytesize, 0)? as *mut c_void);
        Ok(())
    }
}

api! {
    fn cuMemHostAlloc(pp: *mut *mut c_void, bytesize: usize, Flags: c_uint) {
        let out = Out::new(pp, "pp")?;
        out.set(drv()?.mem_host_alloc(bytesize, Flags)? as *mut c_void);
        Ok(())
    }
}

api! {
    fn cuMemFreeHost(p: *mut c_void) {
        drv()?.mem_free_host(p as usize)
    }
}

api! {
    fn cuMemHostGetDevicePointer_v2(pdptr: *mut CUdeviceptr, p: *mut c_void, Flags: c_uint) {
        let out = Out::new(pdptr, "pdptr")?;
        out.set(drv()?.mem_host_get_device_pointer(p as usize, Flags)?);
        Ok(())
    }
}

api! {
    fn cuMemHostGetFlags(pFlags: *mut c_uint, p: *mut c_void) {
        let out = Out::new(pFlags, "pFlags")?;
        out.set(drv()?.mem_host_get_flags(p as usize)?);
        Ok(())
    }
}

api! {
    fn cuMemHostRegister_v2(p: *mut c_void, bytesize: usize, Flags: c_uint) {
        drv()?.mem_host_register(p as usize, bytesize, Flags)
    }
}

api! {
    fn cuMemHostRegister(p: *mut c_void, bytesize: usize, Flags: c_uint) {
        drv()?.mem_host_register(p as usize, bytesize, Flags)
    }
}

api! {
    fn cuMemHostUnregister(p: *mut c_void) {
        drv()?.mem_host_unregister(p as usize)
    }
}

api! {
    fn cuMemAllocManaged(dptr: *mut CUdeviceptr, bytesize: usize, flags: c_uint) {
        let out = Out::new(dptr, "dptr")?;
        out.set(drv()?.mem_alloc_managed(bytesize, flags)?);
        Ok(())
    }
}

// ---- copies ----

api! {
    fn cuMemcpy / cuMemcpy_ptds [ptds] (dst: CUdeviceptr, src: CUdeviceptr, ByteCount: usize) {
        drv()?.memcpy(dst, src, ByteCount, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyAsync / cuMemcpyAsync_ptsz [ptds] (dst: CUdeviceptr, src: CUdeviceptr, ByteCount: usize, hStream: CUstream) {
        drv()?.memcpy(dst, src, ByteCount, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemcpyHtoD_v2 / cuMemcpyHtoD_v2_ptds [ptds] (dstDevice: CUdeviceptr, srcHost: *const c_void, ByteCount: usize) {
        drv()?.memcpy_htod(dstDevice, srcHost as usize, ByteCount, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyHtoDAsync_v2 / cuMemcpyHtoDAsync_v2_ptsz [ptds] (dstDevice: CUdeviceptr, srcHost: *const c_void, ByteCount: usize, hStream: CUstream) {
        drv()?.memcpy_htod(dstDevice, srcHost as usize, ByteCount, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemcpyDtoH_v2 / cuMemcpyDtoH_v2_ptds [ptds] (dstHost: *mut c_void, srcDevice: CUdeviceptr, ByteCount: usize) {
        drv()?.memcpy_dtoh(dstHost as usize, srcDevice, ByteCount, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyDtoHAsync_v2 / cuMemcpyDtoHAsync_v2_ptsz [ptds] (dstHost: *mut c_void, srcDevice: CUdeviceptr, ByteCount: usize, hStream: CUstream) {
        drv()?.memcpy_dtoh(dstHost as usize, srcDevice, ByteCount, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemcpyDtoD_v2 / cuMemcpyDtoD_v2_ptds [ptds] (dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, ByteCount: usize) {
        drv()?.memcpy_dtod(dstDevice, srcDevice, ByteCount, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyDtoDAsync_v2 / cuMemcpyDtoDAsync_v2_ptsz [ptds] (dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, ByteCount: usize, hStream: CUstream) {
        drv()?.memcpy_dtod(dstDevice, srcDevice, ByteCount, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemcpyPeer / cuMemcpyPeer_ptds [ptds] (dstDevice: CUdeviceptr, dstContext: CUcontext, srcDevice: CUdeviceptr, srcContext: CUcontext, ByteCount: usize) {
        drv()?.memcpy_peer(dstDevice, dstContext.addr() as u64, srcDevice, srcContext.addr() as u64, ByteCount, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyPeerAsync / cuMemcpyPeerAsync_ptsz [ptds] (dstDevice: CUdeviceptr, dstContext: CUcontext, srcDevice: CUdeviceptr, srcContext: CUcontext, ByteCount: usize, hStream: CUstream) {
        drv()?.memcpy_peer(dstDevice, dstContext.addr() as u64, srcDevice, srcContext.addr() as u64, ByteCount, s(hStream), ptds, true)
    }
}

fn loc(t: CUmemorytype, host: usize, dev: CUdeviceptr, array: CUarray) -> Result<MemLoc, Error> {
    Ok(match t {
        CUmemorytype::CU_MEMORYTYPE_HOST => MemLoc::Host(host),
        CUmemorytype::CU_MEMORYTYPE_DEVICE => MemLoc::Device(dev),
        CUmemorytype::CU_MEMORYTYPE_UNIFIED => MemLoc::Unified(dev),
        CUmemorytype::CU_MEMORYTYPE_ARRAY => MemLoc::Array(array.addr() as u64),
        other => return Err(Error::InvalidValue(format!("unknown memory type {}", other.0))),
    })
}

unsafe fn copy2d(p: *const CUDA_MEMCPY2D) -> Result<Memcpy2D, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("pCopy is NULL".into()));
    }
    let c = p.read_unaligned();
    Ok(Memcpy2D {
        src: loc(c.srcMemoryType, c.srcHost as usize, c.srcDevice, c.srcArray)?,
        src_x: c.srcXInBytes,
        src_y: c.srcY,
        src_pitch: c.srcPitch,
        dst: loc(c.dstMemoryType, c.dstHost as usize, c.dstDevice, c.dstArray)?,
        dst_x: c.dstXInBytes,
        dst_y: c.dstY,
        dst_pitch: c.dstPitch,
        width: c.WidthInBytes,
        height: c.Height,
    })
}

/// The copy a `CUDA_MEMCPY3D` or a `CUDA_MEMCPY3D_PEER` describes: the
/// two structures name these fields alike.
macro_rules! memcpy3d_of {
    ($c:expr) => {{
        let c = $c;
        Ok(Memcpy3D {
            src: loc(c.srcMemoryType, c.srcHost as usize, c.srcDevice, c.srcArray)?,
            src_x: c.srcXInBytes,
            src_y: c.srcY,
            src_z: c.srcZ,
            src_lod: c.srcLOD,
            src_pitch: c.srcPitch,
            src_height: c.srcHeight,
            dst: loc(c.dstMemoryType, c.dstHost as usize, c.dstDevice, c.dstArray)?,
            dst_x: c.dstXInBytes,
            dst_y: c.dstY,
            dst_z: c.dstZ,
            dst_lod: c.dstLOD,
            dst_pitch: c.dstPitch,
            dst_height: c.dstHeight,
            width: c.WidthInBytes,
            height: c.Height,
            depth: c.Depth,
        })
    }};
}

pub(crate) unsafe fn copy3d(p: *const CUDA_MEMCPY3D) -> Result<Memcpy3D, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("pCopy is NULL".into()));
    }
    let c = p.read_unaligned();
    memcpy3d_of!(c)
}

unsafe fn copy3d_peer(p: *const CUDA_MEMCPY3D_PEER) -> Result<Memcpy3D, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("pCopy is NULL".into()));
    }
    let c = p.read_unaligned();
    let d = drv()?;
    for h in [c.srcContext, c.dstContext] {
        d.ctx_get_device(h.addr() as u64).map_err(|_| Error::InvalidContext)?;
    }
    memcpy3d_of!(c)
}

api! {
    fn cuMemcpy2D_v2 / cuMemcpy2D_v2_ptds [ptds] (pCopy: *const CUDA_MEMCPY2D) {
        let c = copy2d(pCopy)?;
        drv()?.memcpy_2d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpy2DUnaligned_v2 / cuMemcpy2DUnaligned_v2_ptds [ptds] (pCopy: *const CUDA_MEMCPY2D) {
        let c = copy2d(pCopy)?;
        drv()?.memcpy_2d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpy2DAsync_v2 / cuMemcpy2DAsync_v2_ptsz [ptds] (pCopy: *const CUDA_MEMCPY2D, hStream: CUstream) {
        let c = copy2d(pCopy)?;
        drv()?.memcpy_2d(&c, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemcpy3D_v2 / cuMemcpy3D_v2_ptds [ptds] (pCopy: *const CUDA_MEMCPY3D) {
        let c = copy3d(pCopy)?;
        drv()?.memcpy_3d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpy3DAsync_v2 / cuMemcpy3DAsync_v2_ptsz [ptds] (pCopy: *const CUDA_MEMCPY3D, hStream: CUstream) {
        let c = copy3d(pCopy)?;
        drv()?.memcpy_3d(&c, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemcpy3DPeer / cuMemcpy3DPeer_ptds [ptds] (pCopy: *const CUDA_MEMCPY3D_PEER) {
        let c = copy3d_peer(pCopy)?;
        drv()?.memcpy_3d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpy3DPeerAsync / cuMemcpy3DPeerAsync_ptsz [ptds] (pCopy: *const CUDA_MEMCPY3D_PEER, hStream: CUstream) {
        let c = copy3d_peer(pCopy)?;
        drv()?.memcpy_3d(&c, s(hStream), ptds, true)
    }
}

// ---- memset ----

api! {
    fn cuMemsetD8_v2 / cuMemsetD8_v2_ptds [ptds] (dstDevice: CUdeviceptr, uc: u8, N: usize) {
        drv()?.memset(dstDevice, MemsetValue::U8(uc), N, 0, ptds, false)
    }
}

api! {
    fn cuMemsetD16_v2 / cuMemsetD16_v2_ptds [ptds] (dstDevice: CUdeviceptr, us: c_ushort, N: usize) {
        drv()?.memset(dstDevice, MemsetValue::U16(us), N, 0, ptds, false)
    }
}

api! {
    fn cuMemsetD32_v2 / cuMemsetD32_v2_ptds [ptds] (dstDevice: CUdeviceptr, ui: c_uint, N: usize) {
        drv()?.memset(dstDevice, MemsetValue::U32(ui), N, 0, ptds, false)
    }
}

api! {
    fn cuMemsetD8Async / cuMemsetD8Async_ptsz [ptds] (dstDevice: CUdeviceptr, uc: u8, N: usize, hStream: CUstream) {
        drv()?.memset(dstDevice, MemsetValue::U8(uc), N, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemsetD16Async / cuMemsetD16Async_ptsz [ptds] (dstDevice: CUdeviceptr, us: c_ushort, N: usize, hStream: CUstream) {
        drv()?.memset(dstDevice, MemsetValue::U16(us), N, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemsetD32Async / cuMemsetD32Async_ptsz [ptds] (dstDevice: CUdeviceptr, ui: c_uint, N: usize, hStream: CUstream) {
        drv()?.memset(dstDevice, MemsetValue::U32(ui), N, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemsetD2D8_v2 / cuMemsetD2D8_v2_ptds [ptds] (dstDevice: CUdeviceptr, dstPitch: usize, uc: u8, Width: usize, Height: usize) {
        drv()?.memset_2d(dstDevice, dstPitch, MemsetValue::U8(uc), Width, Height, 0, ptds, false)
    }
}

api! {
    fn cuMemsetD2D16_v2 / cuMemsetD2D16_v2_ptds [ptds] (dstDevice: CUdeviceptr, dstPitch: usize, us: c_ushort, Width: usize, Height: usize) {
        drv()?.memset_2d(dstDevice, dstPitch, MemsetValue::U16(us), Width, Height, 0, ptds, false)
    }
}

api! {
    fn cuMemsetD2D32_v2 / cuMemsetD2D32_v2_ptds [ptds] (dstDevice: CUdeviceptr, dstPitch: usize, ui: c_uint, Width: usize, Height: usize) {
        drv()?.memset_2d(dstDevice, dstPitch, MemsetValue::U32(ui), Width, Height, 0, ptds, false)
    }
}

api! {
    fn cuMemsetD2D8Async / cuMemsetD2D8Async_ptsz [ptds] (dstDevice: CUdeviceptr, dstPitch: usize, uc: u8, Width: usize, Height: usize, hStream: CUstream) {
        drv()?.memset_2d(dstDevice, dstPitch, MemsetValue::U8(uc), Width, Height, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemsetD2D16Async / cuMemsetD2D16Async_ptsz [ptds] (dstDevice: CUdeviceptr, dstPitch: usize, us: c_ushort, Width: usize, Height: usize, hStream: CUstream) {
        drv()?.memset_2d(dstDevice, dstPitch, MemsetValue::U16(us), Width, Height, s(hStream), ptds, true)
    }
}

api! {
    fn cuMemsetD2D32Async / cuMemsetD2D32Async_ptsz [ptds] (dstDevice: CUdeviceptr, dstPitch: usize, ui: c_uint, Width: usize, Height: usize, hStream: CUstream) {
        drv()?.memset_2d(dstDevice, dstPitch, MemsetValue::U32(ui), Width, Height, s(hStream), ptds, true)
    }
}

// ---- pointer attributes ----

unsafe fn write_attr(data: *mut c_void, attr: CUpointer_attribute, v: Option<PointerAttribute>) -> Result<(), Error> {
    let size = PointerAttribute::size_of(attr).ok_or_else(|| Error::InvalidValue(format!("unknown pointer attribute {}", attr.0)))?;
    let raw = v.map(|v| v.to_u64()).unwrap_or(0);
    if size == 4 {
        data.cast::<u32>().write_unaligned(raw as u32);
    } else {
        data.cast::<u64>().write_unaligned(raw);
    }
    Ok(())
}

api! {
    fn cuPointerGetAttribute(data: *mut c_void, attribute: CUpointer_attribute, ptr: CUdeviceptr) {
        if data.is_null() {
            return Err(Error::InvalidValue("data is NULL".into()));
        }
        let v = drv()?.pointer_attribute(attribute, ptr)?;
        write_attr(data, attribute, Some(v))
    }
}

api! {
    fn cuPointerGetAttributes(numAttributes: c_uint, attributes: *mut CUpointer_attribute, data: *mut *mut c_void, ptr: CUdeviceptr) {
        if numAttributes == 0 || attributes.is_null() || data.is_null() {
            return Err(Error::InvalidValue("no attributes requested".into()));
        }
        let d = drv()?;
        for i in 0..numAttributes as usize {
            let attr = attributes.add(i).read_unaligned();
            let slot = data.add(i).read_unaligned();
            if slot.is_null() {
                return Err(Error::InvalidValue(format!("data[{i}] is NULL")));
            }
            // Unlike the single form, unknown pointers and inapplicable
            // attributes give zero values, not errors.
            let v = match d.pointer_attribute(attr, ptr) {
                Ok(v) => Some(v),
                Err(Error::NotInitialized) => return Err(Error::NotInitialized),
                Err(_) => None,
            };
            write_attr(slot, attr, v)?;
        }
        Ok(())
    }
}

api! {
    fn cuPointerSetAttribute(value: *const c_void, attribute: CUpointer_attribute, ptr: CUdeviceptr) {
        if value.is_null() {
            return Err(Error::InvalidValue("value is NULL".into()));
        }
        if attribute != CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS {
            return Err(Error::InvalidValue(format!("pointer attribute {} cannot be set", attribute.0)));
        }
        let v = value.cast::<u32>().read_unaligned();
        drv()?.pointer_set_sync_memops(ptr, v != 0)
    }
}

// ---- stream-ordered allocation and pools ----

api! {
    fn cuMemAllocAsync / cuMemAllocAsync_ptsz [ptds] (dptr: *mut CUdeviceptr, bytesize: usize, hStream: CUstream) {
        let out = Out::new(dptr, "dptr")?;
        out.set(drv()?.mem_alloc_async(bytesize, None, s(hStream), ptds)?);
        Ok(())
    }
}

api! {
    fn cuMemAllocFromPoolAsync / cuMemAllocFromPoolAsync_ptsz [ptds] (dptr: *mut CUdeviceptr, bytesize: usize, pool: CUmemoryPool, hStream: CUstream) {
        let out = Out::new(dptr, "dptr")?;
        out.set(drv()?.mem_alloc_async(bytesize, Some(pool.addr() as u64), s(hStream), ptds)?);
        Ok(())
    }
}

api! {
    fn cuMemFreeAsync / cuMemFreeAsync_ptsz [ptds] (dptr: CUdeviceptr, hStream: CUstream) {
        drv()?.mem_free_async(dptr, s(hStream), ptds)
    }
}

api! {
    fn cuMemPoolCreate(pool: *mut CUmemoryPool, poolProps: *const CUmemPoolProps) {
        let out = Out::new(pool, "pool")?;
        if poolProps.is_null() {
            return Err(Error::InvalidValue("poolProps is NULL".into()));
        }
        let p = poolProps.read_unaligned();
        if p.allocType != CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED {
            return Err(Error::NotSupported("pools of other than pinned device memory".into()));
        }
        if p.location.type_ != CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE {
            return Err(Error::InvalidValue("pool location must be a device".into()));
        }
        out.set(CUmemoryPool::from_addr(drv()?.mem_pool_create(p.location.id)? as usize));
        Ok(())
    }
}

api! {
    fn cuMemPoolDestroy(pool: CUmemoryPool) {
        drv()?.mem_pool_destroy(pool.addr() as u64)
    }
}

api! {
    fn cuMemPoolTrimTo(pool: CUmemoryPool, minBytesToKeep: usize) {
        drv()?.mem_pool_trim(pool.addr() as u64, minBytesToKeep)
    }
}

api! {
    fn cuMemPoolGetAttribute(pool: CUmemoryPool, attr: CUmemPool_attribute, value: *mut c_void) {
        if value.is_null() {
            return Err(Error::InvalidValue("value is NULL".into()));
        }
        match drv()?.mem_pool_get_attribute(pool.addr() as u64, attr.0)? {
            PoolAttribute::Int(v) => value.cast::<i32>().write_unaligned(v),
            PoolAttribute::U64(v) => value.cast::<u64>().write_unaligned(v),
        }
        Ok(())
    }
}

api! {
    fn cuMemPoolSetAttribute(pool: CUmemoryPool, attr: CUmemPool_attribute, value: *mut c_void) {
        if value.is_null() {
            return Err(Error::InvalidValue("value is NULL".into()));
        }
        let v = if attr.0 <= 3 {
            value.cast::<i32>().read_unaligned() as u64
        } else {
            value.cast::<u64>().read_unaligned()
        };
        drv()?.mem_pool_set_attribute(pool.addr() as u64, attr.0, v)
    }
}

// ---- managed memory hints: everything is resident everywhere ----

api! {
    fn cuMemPrefetchAsync / cuMemPrefetchAsync_ptsz [ptds] (devPtr: CUdeviceptr, count: usize, dstDevice: CUdevice, hStream: CUstream) {
        let d = drv()?;
        if dstDevice != CU_DEVICE_CPU {
            d.device_props(dstDevice)?;
        }
        d.mem_check_managed_range(devPtr, count)?;
        d.stream_query(s(hStream), ptds).or_else(|e| if matches!(e, Error::NotReady) { Ok(()) } else { Err(e) })
    }
}

api! {
    fn cuMemPrefetchAsync_v2 / cuMemPrefetchAsync_v2_ptsz [ptds] (devPtr: CUdeviceptr, count: usize, location: CUmemLocation, flags: c_uint, hStream: CUstream) {
        let d = drv()?;
        if flags != 0 {
            return Err(Error::InvalidValue("flags must be 0".into()));
        }
        if location.type_ == CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE {
            d.device_props(location.id)?;
        }
        d.mem_check_managed_range(devPtr, count)?;
        d.stream_query(s(hStream), ptds).or_else(|e| if matches!(e, Error::NotReady) { Ok(()) } else { Err(e) })
    }
}

api! {
    fn cuMemAdvise(devPtr: CUdeviceptr, count: usize, advice: CUmem_advise, device: CUdevice) {
        let d = drv()?;
        if advice.0 == 0 || advice.0 > 6 {
            return Err(Error::InvalidValue(format!("unknown advice {}", advice.0)));
        }
        if device != CU_DEVICE_CPU {
            d.device_props(device)?;
        }
        d.mem_check_managed_range(devPtr, count)
    }
}

api! {
    fn cuMemAdvise_v2(devPtr: CUdeviceptr, count: usize, advice: CUmem_advise, location: CUmemLocation) {
        let d = drv()?;
        if advice.0 == 0 || advice.0 > 6 {
            return Err(Error::InvalidValue(format!("unknown advice {}", advice.0)));
        }
        if location.type_ == CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE {
            d.device_props(location.id)?;
        }
        d.mem_check_managed_range(devPtr, count)
    }
}

// ---- interprocess memory ----

api! {
    fn cuIpcGetMemHandle(pHandle: *mut CUipcMemHandle, dptr: CUdeviceptr) {
        let out = Out::new(pHandle, "pHandle")?;
        out.set(CUipcMemHandle { reserved: drv()?.ipc_get_mem_handle(dptr)? });
        Ok(())
    }
}

api! {
    fn cuIpcOpenMemHandle_v2(pdptr: *mut CUdeviceptr, handle: CUipcMemHandle, Flags: c_uint) {
        let out = Out::new(pdptr, "pdptr")?;
        out.set(drv()?.ipc_open_mem_handle(&handle.reserved, Flags)?);
        Ok(())
    }
}

api! {
    fn cuIpcOpenMemHandle(pdptr: *mut CUdeviceptr, handle: CUipcMemHandle, Flags: c_uint) {
        let out = Out::new(pdptr, "pdptr")?;
        out.set(drv()?.ipc_open_mem_handle(&handle.reserved, Flags)?);
        Ok(())
    }
}

api! {
    fn cuIpcCloseMemHandle(dptr: CUdeviceptr) {
        drv()?.ipc_close_mem_handle(dptr)
    }
}

// ---- interprocess events ----

api! {
    fn cuIpcGetEventHandle(pHandle: *mut CUipcEventHandle, event: CUevent) {
        let out = Out::new(pHandle, "pHandle")?;
        out.set(CUipcEventHandle { reserved: drv()?.ipc_get_event_handle(event.addr() as u64)? });
        Ok(())
    }
}

api! {
    fn cuIpcOpenEventHandle(phEvent: *mut CUevent, handle: CUipcEventHandle) {
        let out = Out::new(phEvent, "phEvent")?;
        out.set(CUevent::from_addr(drv()?.ipc_open_event_handle(&handle.reserved)? as usize));
        Ok(())
    }
}
