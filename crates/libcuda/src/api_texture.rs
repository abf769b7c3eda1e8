//! CUDA arrays, mipmapped arrays, array copies, texture and surface
//! objects.

use std::ffi::{c_uint, c_void};

use cuda_types::*;
use driver::texture::{ArrayDesc, Resource, TextureDesc, ViewDesc};
use driver::{Error, MemLoc, Memcpy3D};

use crate::util::{api, drv, Out};

fn arr(h: CUarray) -> u64 {
    h.addr() as u64
}

fn to_array(h: u64) -> CUarray {
    CUarray(h as *mut _)
}

fn desc3d(d: &CUDA_ARRAY3D_DESCRIPTOR) -> ArrayDesc {
    ArrayDesc { width: d.Width, height: d.Height, depth: d.Depth, format: d.Format.0, channels: d.NumChannels, flags: d.Flags }
}

unsafe fn read<T: Copy>(p: *const T, what: &str) -> Result<T, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue(format!("{what} is NULL")));
    }
    Ok(p.read_unaligned())
}

api! {
    fn cuArrayCreate_v2(pHandle: *mut CUarray, pAllocateArray: *const CUDA_ARRAY_DESCRIPTOR) {
        let out = Out::new(pHandle, "pHandle")?;
        let d = read(pAllocateArray, "pAllocateArray")?;
        let h = drv()?.array_create(&ArrayDesc { width: d.Width, height: d.Height, depth: 0, format: d.Format.0, channels: d.NumChannels, flags: 0 })?;
        out.set(to_array(h));
        Ok(())
    }
}

api! {
    fn cuArray3DCreate_v2(pHandle: *mut CUarray, pAllocateArray: *const CUDA_ARRAY3D_DESCRIPTOR) {
        let out = Out::new(pHandle, "pHandle")?;
        let d = read(pAllocateArray, "pAllocateArray")?;
        let h = drv()?.array_create(&desc3d(&d))?;
        out.set(to_array(h));
        Ok(())
    }
}

api! {
    fn cuArrayGetDescriptor_v2(pArrayDescriptor: *mut CUDA_ARRAY_DESCRIPTOR, hArray: CUarray) {
        let out = Out::new(pArrayDescriptor, "pArrayDescriptor")?;
        let d = drv()?.array_descriptor(arr(hArray))?;
        out.set(CUDA_ARRAY_DESCRIPTOR { Width: d.width, Height: d.height, Format: CUarray_format(d.format), NumChannels: d.channels });
        Ok(())
    }
}

api! {
    fn cuArray3DGetDescriptor_v2(pArrayDescriptor: *mut CUDA_ARRAY3D_DESCRIPTOR, hArray: CUarray) {
        let out = Out::new(pArrayDescriptor, "pArrayDescriptor")?;
        let d = drv()?.array_descriptor(arr(hArray))?;
        out.set(CUDA_ARRAY3D_DESCRIPTOR {
            Width: d.width,
            Height: d.height,
            Depth: d.depth,
            Format: CUarray_format(d.format),
            NumChannels: d.channels,
            Flags: d.flags,
        });
        Ok(())
    }
}

api! {
    fn cuArrayDestroy(hArray: CUarray) {
        drv()?.array_destroy(arr(hArray))
    }
}

api! {
    fn cuArrayGetSparseProperties(sparseProperties: *mut c_void, array: CUarray) {
        Out::new(sparseProperties, "sparseProperties")?;
        drv()?.array(arr(array))?;
        // Only sparse arrays have sparse properties; none can be created.
        Err(Error::InvalidValue("the array was not created with CUDA_ARRAY3D_SPARSE".into()))
    }
}

api! {
    fn cuArrayGetMemoryRequirements(memoryRequirements: *mut c_void, array: CUarray, device: CUdevice) {
        Out::new(memoryRequirements, "memoryRequirements")?;
        let d = drv()?;
        d.device_get(device)?;
        d.array(arr(array))?;
        Err(Error::InvalidValue("the array was not created with CUDA_ARRAY3D_DEFERRED_MAPPING".into()))
    }
}

api! {
    fn cuMipmappedArrayGetSparseProperties(sparseProperties: *mut c_void, mipmap: CUmipmappedArray) {
        Out::new(sparseProperties, "sparseProperties")?;
        drv()?.mipmapped_array(mipmap.addr() as u64)?;
        Err(Error::InvalidValue("the mipmapped array was not created with CUDA_ARRAY3D_SPARSE".into()))
    }
}

api! {
    fn cuMipmappedArrayGetMemoryRequirements(memoryRequirements: *mut c_void, mipmap: CUmipmappedArray, device: CUdevice) {
        Out::new(memoryRequirements, "memoryRequirements")?;
        let d = drv()?;
        d.device_get(device)?;
        d.mipmapped_array(mipmap.addr() as u64)?;
        Err(Error::InvalidValue("the mipmapped array was not created with CUDA_ARRAY3D_DEFERRED_MAPPING".into()))
    }
}

api! {
    fn cuMipmappedArrayCreate(pHandle: *mut CUmipmappedArray, pMipmappedArrayDesc: *const CUDA_ARRAY3D_DESCRIPTOR, numMipmapLevels: c_uint) {
        let out = Out::new(pHandle, "pHandle")?;
        let d = read(pMipmappedArrayDesc, "pMipmappedArrayDesc")?;
        let h = drv()?.mipmapped_array_create(&desc3d(&d), numMipmapLevels)?;
        out.set(CUmipmappedArray(h as *mut _));
        Ok(())
    }
}

api! {
    fn cuMipmappedArrayGetLevel(pLevelArray: *mut CUarray, hMipmappedArray: CUmipmappedArray, level: c_uint) {
        let out = Out::new(pLevelArray, "pLevelArray")?;
        let h = drv()?.mipmapped_array_level(hMipmappedArray.addr() as u64, level)?;
        out.set(to_array(h));
        Ok(())
    }
}

api! {
    fn cuMipmappedArrayDestroy(hMipmappedArray: CUmipmappedArray) {
        drv()?.mipmapped_array_destroy(hMipmappedArray.addr() as u64)
    }
}

// ---- copies between arrays and memory: one row of bytes ----

fn row_copy(dst: MemLoc, dst_x: usize, src: MemLoc, src_x: usize, bytes: usize) -> Memcpy3D {
    Memcpy3D {
        src,
        src_x,
        src_y: 0,
        src_z: 0,
        src_lod: 0,
        src_pitch: 0,
        src_height: 0,
        dst,
        dst_x,
        dst_y: 0,
        dst_z: 0,
        dst_lod: 0,
        dst_pitch: 0,
        dst_height: 0,
        width: bytes,
        height: 1,
        depth: 1,
    }
}

api! {
    fn cuMemcpyAtoH_v2 / cuMemcpyAtoH_v2_ptds [ptds] (dstHost: *mut c_void, srcArray: CUarray, srcOffset: usize, ByteCount: usize) {
        let c = row_copy(MemLoc::Host(dstHost as usize), 0, MemLoc::Array(arr(srcArray)), srcOffset, ByteCount);
        drv()?.memcpy_3d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyAtoHAsync_v2 / cuMemcpyAtoHAsync_v2_ptsz [ptds] (dstHost: *mut c_void, srcArray: CUarray, srcOffset: usize, ByteCount: usize, hStream: CUstream) {
        let c = row_copy(MemLoc::Host(dstHost as usize), 0, MemLoc::Array(arr(srcArray)), srcOffset, ByteCount);
        drv()?.memcpy_3d(&c, hStream.addr() as u64, ptds, true)
    }
}

api! {
    fn cuMemcpyHtoA_v2 / cuMemcpyHtoA_v2_ptds [ptds] (dstArray: CUarray, dstOffset: usize, srcHost: *const c_void, ByteCount: usize) {
        let c = row_copy(MemLoc::Array(arr(dstArray)), dstOffset, MemLoc::Host(srcHost as usize), 0, ByteCount);
        drv()?.memcpy_3d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyHtoAAsync_v2 / cuMemcpyHtoAAsync_v2_ptsz [ptds] (dstArray: CUarray, dstOffset: usize, srcHost: *const c_void, ByteCount: usize, hStream: CUstream) {
        let c = row_copy(MemLoc::Array(arr(dstArray)), dstOffset, MemLoc::Host(srcHost as usize), 0, ByteCount);
        drv()?.memcpy_3d(&c, hStream.addr() as u64, ptds, true)
    }
}

api! {
    fn cuMemcpyAtoD_v2 / cuMemcpyAtoD_v2_ptds [ptds] (dstDevice: CUdeviceptr, srcArray: CUarray, srcOffset: usize, ByteCount: usize) {
        let c = row_copy(MemLoc::Device(dstDevice), 0, MemLoc::Array(arr(srcArray)), srcOffset, ByteCount);
        drv()?.memcpy_3d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyDtoA_v2 / cuMemcpyDtoA_v2_ptds [ptds] (dstArray: CUarray, dstOffset: usize, srcDevice: CUdeviceptr, ByteCount: usize) {
        let c = row_copy(MemLoc::Array(arr(dstArray)), dstOffset, MemLoc::Device(srcDevice), 0, ByteCount);
        drv()?.memcpy_3d(&c, 0, ptds, false)
    }
}

api! {
    fn cuMemcpyAtoA_v2 / cuMemcpyAtoA_v2_ptds [ptds] (dstArray: CUarray, dstOffset: usize, srcArray: CUarray, srcOffset: usize, ByteCount: usize) {
        let c = row_copy(MemLoc::Array(arr(dstArray)), dstOffset, MemLoc::Array(arr(srcArray)), srcOffset, ByteCount);
        drv()?.memcpy_3d(&c, 0, ptds, false)
    }
}

// ---- texture and surface objects ----

fn resource(r: &CUDA_RESOURCE_DESC) -> Result<Resource, Error> {
    let u = &r.res;
    Ok(match r.resType {
        0 => Resource::Array(u[0]),
        1 => Resource::Mipmapped(u[0]),
        2 => Resource::Linear { ptr: u[0], format: u[1] as u32, channels: (u[1] >> 32) as u32, size: u[2] as usize },
        3 => Resource::Pitch2D {
            ptr: u[0],
            format: u[1] as u32,
            channels: (u[1] >> 32) as u32,
            width: u[2] as usize,
            height: u[3] as usize,
            pitch: u[4] as usize,
        },
        t => return Err(Error::InvalidValue(format!("unknown resource type {t}"))),
    })
}

fn resource_desc(r: &Resource) -> CUDA_RESOURCE_DESC {
    let mut d = CUDA_RESOURCE_DESC::default();
    match *r {
        Resource::Array(h) => d.res[0] = h,
        Resource::Mipmapped(h) => {
            d.resType = 1;
            d.res[0] = h;
        }
        Resource::Linear { ptr, format, channels, size } => {
            d.resType = 2;
            d.res[..3].copy_from_slice(&[ptr, u64::from(format) | u64::from(channels) << 32, size as u64]);
        }
        Resource::Pitch2D { ptr, format, channels, width, height, pitch } => {
            d.resType = 3;
            d.res[..5].copy_from_slice(&[ptr, u64::from(format) | u64::from(channels) << 32, width as u64, height as u64, pitch as u64]);
        }
    }
    d
}

api! {
    fn cuTexObjectCreate(pTexObject: *mut CUtexObject, pResDesc: *const CUDA_RESOURCE_DESC, pTexDesc: *const CUDA_TEXTURE_DESC, pResViewDesc: *const CUDA_RESOURCE_VIEW_DESC) {
        let out = Out::new(pTexObject, "pTexObject")?;
        let r = read(pResDesc, "pResDesc")?;
        let t = read(pTexDesc, "pTexDesc")?;
        if r.flags != 0 {
            return Err(Error::InvalidValue(format!("resource flags {:#x} (must be 0)", r.flags)));
        }
        let tex = TextureDesc {
            address: t.addressMode,
            filter: t.filterMode,
            flags: t.flags,
            max_anisotropy: t.maxAnisotropy,
            mipmap_filter: t.mipmapFilterMode,
            mipmap_bias: t.mipmapLevelBias,
            min_lod: t.minMipmapLevelClamp,
            max_lod: t.maxMipmapLevelClamp,
            border: t.borderColor,
        };
        let view = if pResViewDesc.is_null() {
            None
        } else {
            let v = pResViewDesc.read_unaligned();
            Some(ViewDesc {
                format: v.format,
                width: v.width,
                height: v.height,
                depth: v.depth,
                first_level: v.firstMipmapLevel,
                last_level: v.lastMipmapLevel,
                first_layer: v.firstLayer,
                last_layer: v.lastLayer,
            })
        };
        let h = drv()?.tex_object_create(resource(&r)?, &tex, view)?;
        out.set(h);
        Ok(())
    }
}

api! {
    fn cuTexObjectDestroy(texObject: CUtexObject) {
        drv()?.tex_object_destroy(texObject, false)
    }
}

api! {
    fn cuTexObjectGetResourceDesc(pResDesc: *mut CUDA_RESOURCE_DESC, texObject: CUtexObject) {
        let out = Out::new(pResDesc, "pResDesc")?;
        let o = drv()?.tex_object(texObject, false)?;
        out.set(resource_desc(&o.resource));
        Ok(())
    }
}

api! {
    fn cuTexObjectGetTextureDesc(pTexDesc: *mut CUDA_TEXTURE_DESC, texObject: CUtexObject) {
        let out = Out::new(pTexDesc, "pTexDesc")?;
        let o = drv()?.tex_object(texObject, false)?;
        let t = o.texture.unwrap_or_default();
        out.set(CUDA_TEXTURE_DESC {
            addressMode: t.address,
            filterMode: t.filter,
            flags: t.flags,
            maxAnisotropy: t.max_anisotropy,
            mipmapFilterMode: t.mipmap_filter,
            mipmapLevelBias: t.mipmap_bias,
            minMipmapLevelClamp: t.min_lod,
            maxMipmapLevelClamp: t.max_lod,
            borderColor: t.border,
            reserved: [0; 12],
        });
        Ok(())
    }
}

api! {
    fn cuTexObjectGetResourceViewDesc(pResViewDesc: *mut CUDA_RESOURCE_VIEW_DESC, texObject: CUtexObject) {
        let out = Out::new(pResViewDesc, "pResViewDesc")?;
        let o = drv()?.tex_object(texObject, false)?;
        let v = o.view.ok_or_else(|| Error::InvalidValue("the texture object was created without a resource view".into()))?;
        out.set(CUDA_RESOURCE_VIEW_DESC {
            format: v.format,
            width: v.width,
            height: v.height,
            depth: v.depth,
            firstMipmapLevel: v.first_level,
            lastMipmapLevel: v.last_level,
            firstLayer: v.first_layer,
            lastLayer: v.last_layer,
            reserved: [0; 16],
        });
        Ok(())
    }
}

api! {
    fn cuSurfObjectCreate(pSurfObject: *mut CUsurfObject, pResDesc: *const CUDA_RESOURCE_DESC) {
        let out = Out::new(pSurfObject, "pSurfObject")?;
        let r = read(pResDesc, "pResDesc")?;
        let h = drv()?.surf_object_create(resource(&r)?)?;
        out.set(h);
        Ok(())
    }
}

api! {
    fn cuSurfObjectDestroy(surfObject: CUsurfObject) {
        drv()?.tex_object_destroy(surfObject, true)
    }
}

api! {
    fn cuSurfObjectGetResourceDesc(pResDesc: *mut CUDA_RESOURCE_DESC, surfObject: CUsurfObject) {
        let out = Out::new(pResDesc, "pResDesc")?;
        let o = drv()?.tex_object(surfObject, true)?;
        out.set(resource_desc(&o.resource));
        Ok(())
    }
}
