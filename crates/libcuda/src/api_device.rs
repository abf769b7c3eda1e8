//! Initialisation, versions, error strings, devices.

use std::ffi::{c_char, c_int, c_uint};

use cuda_types::*;
use driver::Error;

use crate::util::{api, cstr, drv, write_cstr, Out};

api! {
    fn cuInit(Flags: c_uint) {
        crate::driver().init(Flags)
    }
}

api! {
    fn cuDriverGetVersion(driverVersion: *mut c_int) {
        let out = Out::new(driverVersion, "driverVersion")?;
        out.set(crate::driver().driver_version());
        Ok(())
    }
}

fn error_text(error: CUresult, pStr: *mut *const c_char, name: bool) -> Result<(), Error> {
    let out = Out::new(pStr, "pStr")?;
    let s = if name { error.name() } else { error.description() };
    match s {
        Some(s) => {
            out.set(s.as_ptr());
            Ok(())
        }
        None => {
            out.set(std::ptr::null());
            Err(Error::InvalidValue(format!("unknown CUresult {}", error.0)))
        }
    }
}

api! {
    fn cuGetErrorName(error: CUresult, pStr: *mut *const c_char) {
        error_text(error, pStr, true)
    }
}

api! {
    fn cuGetErrorString(error: CUresult, pStr: *mut *const c_char) {
        error_text(error, pStr, false)
    }
}

api! {
    fn cuDeviceGetCount(count: *mut c_int) {
        let out = Out::new(count, "count")?;
        out.set(drv()?.device_count()?);
        Ok(())
    }
}

api! {
    fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) {
        let out = Out::new(device, "device")?;
        out.set(drv()?.device_get(ordinal)?);
        Ok(())
    }
}

api! {
    fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) {
        let p = drv()?.device_props(dev)?;
        write_cstr(name, len, &p.name)
    }
}

api! {
    fn cuDeviceGetUuid(uuid: *mut CUuuid, dev: CUdevice) {
        let out = Out::new(uuid, "uuid")?;
        out.set(CUuuid { bytes: drv()?.device_props(dev)?.uuid });
        Ok(())
    }
}

api! {
    fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, dev: CUdevice) {
        let out = Out::new(uuid, "uuid")?;
        out.set(CUuuid { bytes: drv()?.device_props(dev)?.uuid });
        Ok(())
    }
}

api! {
    fn cuDeviceGetLuid(luid: *mut c_char, deviceNodeMask: *mut c_uint, dev: CUdevice) {
        drv()?.device_props(dev)?;
        let _ = (luid, deviceNodeMask);
        Err(Error::NotSupported("LUIDs exist on Windows only".into()))
    }
}

api! {
    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) {
        let out = Out::new(bytes, "bytes")?;
        out.set(drv()?.device_props(dev)?.total_mem as usize);
        Ok(())
    }
}

api! {
    fn cuDeviceGetAttribute(pi: *mut c_int, attrib: CUdevice_attribute, dev: CUdevice) {
        let out = Out::new(pi, "pi")?;
        out.set(drv()?.device_attribute(attrib, dev)?);
        Ok(())
    }
}

api! {
    fn cuDeviceGetProperties(prop: *mut CUdevprop, dev: CUdevice) {
        let out = Out::new(prop, "prop")?;
        let p = drv()?.device_props(dev)?;
        let i = |v: u32| v.min(i32::MAX as u32) as i32;
        out.set(CUdevprop {
            maxThreadsPerBlock: i(p.max_threads_per_block),
            maxThreadsDim: p.max_block_dim.map(i),
            maxGridSize: p.max_grid_dim.map(i),
            sharedMemPerBlock: i(p.shared_mem_per_block),
            totalConstantMemory: i(p.total_constant_mem),
            SIMDWidth: i(p.warp_size),
            memPitch: i32::MAX,
            regsPerBlock: i(p.regs_per_block),
            clockRate: i(p.clock_rate_khz),
            textureAlign: 512,
        });
        Ok(())
    }
}

api! {
    fn cuDeviceComputeCapability(major: *mut c_int, minor: *mut c_int, dev: CUdevice) {
        let (a, b) = (Out::new(major, "major")?, Out::new(minor, "minor")?);
        let p = drv()?.device_props(dev)?;
        a.set(p.cc_major as i32);
        b.set(p.cc_minor as i32);
        Ok(())
    }
}

api! {
    fn cuDeviceGetPCIBusId(pciBusId: *mut c_char, len: c_int, dev: CUdevice) {
        let p = drv()?.device_props(dev)?;
        write_cstr(pciBusId, len, &p.pci_bus_id())
    }
}

api! {
    fn cuDeviceGetByPCIBusId(dev: *mut CUdevice, pciBusId: *const c_char) {
        let out = Out::new(dev, "dev")?;
        let id = cstr(pciBusId, "pciBusId")?;
        out.set(drv()?.device_by_pci_bus_id(id)?);
        Ok(())
    }
}

api! {
    fn cuDeviceCanAccessPeer(canAccessPeer: *mut c_int, dev: CUdevice, peerDev: CUdevice) {
        let out = Out::new(canAccessPeer, "canAccessPeer")?;
        out.set(c_int::from(drv()?.can_access_peer(dev, peerDev)?));
        Ok(())
    }
}

api! {
    fn cuDeviceGetP2PAttribute(value: *mut c_int, attrib: CUdevice_P2PAttribute, srcDevice: CUdevice, dstDevice: CUdevice) {
        let out = Out::new(value, "value")?;
        out.set(drv()?.p2p_attribute(attrib.0 as i32, srcDevice, dstDevice)?);
        Ok(())
    }
}

api! {
    fn cuDeviceGetDefaultMemPool(pool_out: *mut CUmemoryPool, dev: CUdevice) {
        let out = Out::new(pool_out, "pool_out")?;
        out.set(CUmemoryPool::from_addr(drv()?.device_default_mem_pool(dev)? as usize));
        Ok(())
    }
}

api! {
    fn cuDeviceGetMemPool(pool: *mut CUmemoryPool, dev: CUdevice) {
        let out = Out::new(pool, "pool")?;
        out.set(CUmemoryPool::from_addr(drv()?.device_get_mem_pool(dev)? as usize));
        Ok(())
    }
}

api! {
    fn cuDeviceSetMemPool(dev: CUdevice, pool: CUmemoryPool) {
        drv()?.device_set_mem_pool(dev, pool.addr() as u64)
    }
}

api! {
    fn cuDeviceGetTexture1DLinearMaxWidth(maxWidthInElements: *mut usize, format: CUarray_format, numChannels: c_uint, dev: CUdevice) {
        let out = Out::new(maxWidthInElements, "maxWidthInElements")?;
        drv()?.device_props(dev)?;
        if !matches!(numChannels, 1 | 2 | 4) {
            return Err(Error::InvalidValue("numChannels must be 1, 2 or 4".into()));
        }
        let _ = format;
        out.set(1 << 28);
        Ok(())
    }
}

api! {
    fn cuDeviceGetExecAffinitySupport(pi: *mut c_int, typ: c_uint, dev: CUdevice) {
        let out = Out::new(pi, "pi")?;
        drv()?.device_props(dev)?;
        if typ != 0 {
            return Err(Error::InvalidValue("unknown affinity type".into()));
        }
        out.set(0);
        Ok(())
    }
}

api! {
    fn cuFlushGPUDirectRDMAWrites(target: c_uint, scope: c_uint) {
        drv()?;
        if target != 0 || scope > 200 {
            return Err(Error::InvalidValue("unknown target or scope".into()));
        }
        Ok(())
    }
}

api! {
    fn cuProfilerStart() {
        drv()?.current_ctx()?;
        Ok(())
    }
}

api! {
    fn cuProfilerStop() {
        drv()?.current_ctx()?;
        Ok(())
    }
}
