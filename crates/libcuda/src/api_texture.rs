//! CUDA arrays, mipmapped arrays, array copies, texture and surface
//! objects.

use std::ffi::{c_char, c_int, c_uint, c_void};

use cuda_types::*;
use driver::texture::{ArrayDesc, Resource, TextureDesc, ViewDesc};
use driver::{Error, MemLoc, Memcpy3D};

use crate::util::{api, cstr, drv, Out};

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
        let res = resource(&r)?;
        if matches!(res, Resource::Mipmapped(_)) && tex.max_anisotropy > 1 {
            tracing::warn!(
                "cuTexObjectCreate: maxAnisotropy {} over a mipmapped array: anisotropic filtering is not implemented; \
                 tex.grad picks its level from the longer gradient, as isotropic filtering does",
                tex.max_anisotropy
            );
        }
        let h = drv()?.tex_object_create(res, &tex, view)?;
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

// ---- module texture and surface references (the legacy API) ----

fn tr(h: CUtexref) -> u64 {
    h.addr() as u64
}

api! {
    fn cuModuleGetTexRef(pTexRef: *mut CUtexref, hmod: CUmodule, name: *const c_char) {
        let out = Out::new(pTexRef, "pTexRef")?;
        let name = cstr(name, "name")?;
        let h = drv()?.module_get_texref(hmod.addr() as u64, name, false)?;
        out.set(CUtexref(h as *mut _));
        Ok(())
    }
}

api! {
    fn cuTexRefCreate(pTexRef: *mut CUtexref) {
        let out = Out::new(pTexRef, "pTexRef")?;
        let h = drv()?.texref_create()?;
        out.set(CUtexref(h as *mut _));
        Ok(())
    }
}

api! {
    fn cuTexRefDestroy(hTexRef: CUtexref) {
        drv()?.texref_destroy(tr(hTexRef))
    }
}

api! {
    fn cuModuleGetSurfRef(pSurfRef: *mut CUsurfref, hmod: CUmodule, name: *const c_char) {
        let out = Out::new(pSurfRef, "pSurfRef")?;
        let name = cstr(name, "name")?;
        let h = drv()?.module_get_texref(hmod.addr() as u64, name, true)?;
        out.set(CUsurfref(h as *mut _));
        Ok(())
    }
}

/// `CU_TRSA_OVERRIDE_FORMAT`: the only flag of `cuTexRefSetArray`.
const TRSA_OVERRIDE_FORMAT: c_uint = 1;

api! {
    fn cuTexRefSetArray(hTexRef: CUtexref, hArray: CUarray, Flags: c_uint) {
        if Flags != TRSA_OVERRIDE_FORMAT {
            return Err(Error::InvalidValue(format!("flags {Flags:#x} (must be CU_TRSA_OVERRIDE_FORMAT)")));
        }
        let d = drv()?;
        let a = d.array(arr(hArray))?;
        d.texref_update(tr(hTexRef), false, |st| {
            st.bound = Some(Resource::Array(a.handle));
            (st.format, st.channels) = (a.desc.format, a.desc.channels);
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetMipmappedArray(hTexRef: CUtexref, hMipmappedArray: CUmipmappedArray, Flags: c_uint) {
        if Flags != TRSA_OVERRIDE_FORMAT {
            return Err(Error::InvalidValue(format!("flags {Flags:#x} (must be CU_TRSA_OVERRIDE_FORMAT)")));
        }
        let d = drv()?;
        let m = d.mipmapped_array(hMipmappedArray.addr() as u64)?;
        d.texref_update(tr(hTexRef), false, |st| {
            st.bound = Some(Resource::Mipmapped(m.handle));
            (st.format, st.channels) = (m.desc.format, m.desc.channels);
            Ok(())
        })
    }
}

/// Binds linear memory as NVIDIA's driver does: the reference starts at
/// `dptr` rounded down to the texture alignment, and the offset of `dptr`
/// from there (in bytes) is returned for the kernel to add.
unsafe fn set_address(ByteOffset: *mut usize, hTexRef: CUtexref, dptr: CUdeviceptr, bytes: usize) -> Result<(), Error> {
    let d = drv()?;
    let base = dptr & !255;
    let offset = (dptr - base) as usize;
    let size = bytes.checked_add(offset).ok_or_else(|| Error::InvalidValue("size overflows".into()))?;
    d.texref_update(tr(hTexRef), false, |st| {
        st.bound = (dptr != 0).then_some(Resource::Linear { ptr: base, format: st.format, channels: st.channels, size });
        Ok(())
    })?;
    crate::util::set_opt(ByteOffset, offset);
    Ok(())
}

api! {
    fn cuTexRefSetAddress_v2(ByteOffset: *mut usize, hTexRef: CUtexref, dptr: CUdeviceptr, bytes: usize) {
        set_address(ByteOffset, hTexRef, dptr, bytes)
    }
}

unsafe fn set_address_2d(hTexRef: CUtexref, desc: *const CUDA_ARRAY_DESCRIPTOR, dptr: CUdeviceptr, Pitch: usize) -> Result<(), Error> {
    let a = read(desc, "desc")?;
    drv()?.texref_update(tr(hTexRef), false, |st| {
        (st.format, st.channels) = (a.Format.0, a.NumChannels);
        st.bound = Some(Resource::Pitch2D {
            ptr: dptr,
            format: a.Format.0,
            channels: a.NumChannels,
            width: a.Width,
            height: a.Height,
            pitch: Pitch,
        });
        Ok(())
    })
}

api! {
    fn cuTexRefSetAddress2D_v3(hTexRef: CUtexref, desc: *const CUDA_ARRAY_DESCRIPTOR, dptr: CUdeviceptr, Pitch: usize) {
        set_address_2d(hTexRef, desc, dptr, Pitch)
    }
}

api! {
    fn cuTexRefSetAddress2D_v2(hTexRef: CUtexref, desc: *const CUDA_ARRAY_DESCRIPTOR, dptr: CUdeviceptr, Pitch: usize) {
        set_address_2d(hTexRef, desc, dptr, Pitch)
    }
}

api! {
    fn cuTexRefSetFormat(hTexRef: CUtexref, fmt: CUarray_format, NumPackedComponents: c_int) {
        let channels = c_uint::try_from(NumPackedComponents).map_err(|_| Error::InvalidValue(format!("{NumPackedComponents} components")))?;
        drv()?.texref_update(tr(hTexRef), false, |st| {
            (st.format, st.channels) = (fmt.0, channels);
            match &mut st.bound {
                Some(Resource::Linear { format, channels: c, .. }) | Some(Resource::Pitch2D { format, channels: c, .. }) => {
                    (*format, *c) = (fmt.0, channels);
                }
                _ => {}
            }
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetAddressMode(hTexRef: CUtexref, dim: c_int, am: c_uint) {
        let dim = usize::try_from(dim).ok().filter(|d| *d < 3).ok_or_else(|| Error::InvalidValue(format!("dimension {dim}")))?;
        if am > 3 {
            return Err(Error::InvalidValue(format!("address mode {am}")));
        }
        drv()?.texref_update(tr(hTexRef), false, |st| {
            st.texture.address[dim] = am;
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetFilterMode(hTexRef: CUtexref, fm: c_uint) {
        if fm > 1 {
            return Err(Error::InvalidValue(format!("filter mode {fm}")));
        }
        drv()?.texref_update(tr(hTexRef), false, |st| {
            st.texture.filter = fm;
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetFlags(hTexRef: CUtexref, Flags: c_uint) {
        drv()?.texref_update(tr(hTexRef), false, |st| {
            st.texture.flags = Flags;
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetBorderColor(hTexRef: CUtexref, pBorderColor: *const f32) {
        let c = read(pBorderColor.cast::<[f32; 4]>(), "pBorderColor")?;
        drv()?.texref_update(tr(hTexRef), false, |st| {
            st.texture.border = c;
            Ok(())
        })
    }
}

api! {
    fn cuTexRefGetAddress_v2(pdptr: *mut CUdeviceptr, hTexRef: CUtexref) {
        let out = Out::new(pdptr, "pdptr")?;
        match drv()?.texref_state(tr(hTexRef), false)?.bound {
            Some(Resource::Linear { ptr, .. } | Resource::Pitch2D { ptr, .. }) => {
                out.set(ptr);
                Ok(())
            }
            _ => Err(Error::InvalidValue("the texture reference is not bound to memory".into())),
        }
    }
}

api! {
    fn cuTexRefGetArray(phArray: *mut CUarray, hTexRef: CUtexref) {
        let out = Out::new(phArray, "phArray")?;
        match drv()?.texref_state(tr(hTexRef), false)?.bound {
            Some(Resource::Array(h)) => {
                out.set(to_array(h));
                Ok(())
            }
            _ => Err(Error::InvalidValue("the texture reference is not bound to an array".into())),
        }
    }
}

api! {
    fn cuTexRefGetAddressMode(pam: *mut c_uint, hTexRef: CUtexref, dim: c_int) {
        let out = Out::new(pam, "pam")?;
        let dim = usize::try_from(dim).ok().filter(|d| *d < 3).ok_or_else(|| Error::InvalidValue(format!("dimension {dim}")))?;
        out.set(drv()?.texref_state(tr(hTexRef), false)?.texture.address[dim]);
        Ok(())
    }
}

api! {
    fn cuTexRefGetFilterMode(pfm: *mut c_uint, hTexRef: CUtexref) {
        let out = Out::new(pfm, "pfm")?;
        out.set(drv()?.texref_state(tr(hTexRef), false)?.texture.filter);
        Ok(())
    }
}

api! {
    fn cuTexRefGetFlags(pFlags: *mut c_uint, hTexRef: CUtexref) {
        let out = Out::new(pFlags, "pFlags")?;
        out.set(drv()?.texref_state(tr(hTexRef), false)?.texture.flags);
        Ok(())
    }
}

api! {
    fn cuTexRefGetFormat(pFormat: *mut CUarray_format, pNumChannels: *mut c_int, hTexRef: CUtexref) {
        let st = drv()?.texref_state(tr(hTexRef), false)?;
        crate::util::set_opt(pFormat, CUarray_format(st.format));
        crate::util::set_opt(pNumChannels, st.channels as c_int);
        Ok(())
    }
}

api! {
    fn cuTexRefGetBorderColor(pBorderColor: *mut f32, hTexRef: CUtexref) {
        let out = Out::new(pBorderColor.cast::<[f32; 4]>(), "pBorderColor")?;
        out.set(drv()?.texref_state(tr(hTexRef), false)?.texture.border);
        Ok(())
    }
}

api! {
    fn cuTexRefSetMipmapFilterMode(hTexRef: CUtexref, fm: c_uint) {
        if fm > 1 {
            return Err(Error::InvalidValue(format!("mipmap filter mode {fm}")));
        }
        drv()?.texref_update(tr(hTexRef), false, |st| {
            st.texture.mipmap_filter = fm;
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetMipmapLevelBias(hTexRef: CUtexref, bias: f32) {
        drv()?.texref_update(tr(hTexRef), false, |st| {
            st.texture.mipmap_bias = bias;
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetMipmapLevelClamp(hTexRef: CUtexref, minMipmapLevelClamp: f32, maxMipmapLevelClamp: f32) {
        drv()?.texref_update(tr(hTexRef), false, |st| {
            (st.texture.min_lod, st.texture.max_lod) = (minMipmapLevelClamp, maxMipmapLevelClamp);
            Ok(())
        })
    }
}

api! {
    fn cuTexRefSetMaxAnisotropy(hTexRef: CUtexref, maxAniso: c_uint) {
        if maxAniso > 16 {
            tracing::warn!("cuTexRefSetMaxAnisotropy: {maxAniso} is more than 16; anisotropic filtering is not implemented either way");
        }
        drv()?.texref_update(tr(hTexRef), false, |st| {
            st.texture.max_anisotropy = maxAniso;
            Ok(())
        })
    }
}

api! {
    fn cuTexRefGetMipmapFilterMode(pfm: *mut c_uint, hTexRef: CUtexref) {
        let out = Out::new(pfm, "pfm")?;
        out.set(drv()?.texref_state(tr(hTexRef), false)?.texture.mipmap_filter);
        Ok(())
    }
}

api! {
    fn cuTexRefGetMipmapLevelBias(pbias: *mut f32, hTexRef: CUtexref) {
        let out = Out::new(pbias, "pbias")?;
        out.set(drv()?.texref_state(tr(hTexRef), false)?.texture.mipmap_bias);
        Ok(())
    }
}

api! {
    fn cuTexRefGetMipmapLevelClamp(pminMipmapLevelClamp: *mut f32, pmaxMipmapLevelClamp: *mut f32, hTexRef: CUtexref) {
        let min = Out::new(pminMipmapLevelClamp, "pminMipmapLevelClamp")?;
        let max = Out::new(pmaxMipmapLevelClamp, "pmaxMipmapLevelClamp")?;
        let t = drv()?.texref_state(tr(hTexRef), false)?.texture;
        min.set(t.min_lod);
        max.set(t.max_lod);
        Ok(())
    }
}

api! {
    fn cuTexRefGetMaxAnisotropy(pmaxAniso: *mut c_int, hTexRef: CUtexref) {
        let out = Out::new(pmaxAniso, "pmaxAniso")?;
        out.set(drv()?.texref_state(tr(hTexRef), false)?.texture.max_anisotropy as c_int);
        Ok(())
    }
}

api! {
    fn cuTexRefGetMipmappedArray(phMipmappedArray: *mut CUmipmappedArray, hTexRef: CUtexref) {
        let out = Out::new(phMipmappedArray, "phMipmappedArray")?;
        match drv()?.texref_state(tr(hTexRef), false)?.bound {
            Some(Resource::Mipmapped(h)) => {
                out.set(CUmipmappedArray(h as *mut _));
                Ok(())
            }
            _ => Err(Error::InvalidValue("the texture reference is not bound to a mipmapped array".into())),
        }
    }
}

api! {
    fn cuSurfRefSetArray(hSurfRef: CUsurfref, hArray: CUarray, Flags: c_uint) {
        if Flags != 0 {
            return Err(Error::InvalidValue(format!("flags {Flags:#x} (must be 0)")));
        }
        let d = drv()?;
        let a = d.array(arr(hArray))?;
        d.texref_update(hSurfRef.addr() as u64, true, |st| {
            st.bound = Some(Resource::Array(a.handle));
            Ok(())
        })
    }
}

api! {
    fn cuSurfRefGetArray(phArray: *mut CUarray, hSurfRef: CUsurfref) {
        let out = Out::new(phArray, "phArray")?;
        match drv()?.texref_state(hSurfRef.addr() as u64, true)?.bound {
            Some(Resource::Array(h)) => {
                out.set(to_array(h));
                Ok(())
            }
            _ => Err(Error::InvalidValue("the surface reference is not bound to an array".into())),
        }
    }
}
