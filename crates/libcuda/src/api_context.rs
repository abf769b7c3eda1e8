//! Contexts and primary contexts.

use std::ffi::{c_int, c_uint, c_void};

use cuda_types::*;
use driver::Error;

use crate::util::{api, drv, set_opt, Out};

fn ctx(h: u64) -> CUcontext {
    CUcontext::from_addr(h as usize)
}

fn raw(c: CUcontext) -> u64 {
    c.addr() as u64
}

api! {
    fn cuCtxCreate_v2(pctx: *mut CUcontext, flags: c_uint, dev: CUdevice) {
        let out = Out::new(pctx, "pctx")?;
        out.set(ctx(drv()?.ctx_create(flags, dev)?));
        Ok(())
    }
}

api! {
    fn cuCtxCreate_v3(pctx: *mut CUcontext, paramsArray: *mut c_void, numParams: c_int, flags: c_uint, dev: CUdevice) {
        let out = Out::new(pctx, "pctx")?;
        if numParams < 0 || (numParams > 0 && paramsArray.is_null()) {
            return Err(Error::InvalidValue("bad execution affinity parameters".into()));
        }
        if numParams > 0 {
            return Err(Error::NotSupported("execution affinity".into()));
        }
        out.set(ctx(drv()?.ctx_create(flags, dev)?));
        Ok(())
    }
}

api! {
    fn cuCtxCreate_v4(pctx: *mut CUcontext, ctxCreateParams: *mut c_void, flags: c_uint, dev: CUdevice) {
        let out = Out::new(pctx, "pctx")?;
        if !ctxCreateParams.is_null() {
            // struct { CUexecAffinityParam *p; int n; CUctxCigParam *cig; }
            let p = ctxCreateParams.cast::<u8>();
            let n = p.add(8).cast::<c_int>().read_unaligned();
            let cig = p.add(16).cast::<*const c_void>().read_unaligned();
            if n != 0 || !cig.is_null() {
                return Err(Error::NotSupported("execution affinity and CIG contexts".into()));
            }
        }
        out.set(ctx(drv()?.ctx_create(flags, dev)?));
        Ok(())
    }
}

api! {
    fn cuCtxDestroy_v2(ctx_: CUcontext) {
        drv()?.ctx_destroy(raw(ctx_))
    }
}

api! {
    fn cuCtxDestroy(ctx_: CUcontext) {
        drv()?.ctx_destroy(raw(ctx_))
    }
}

api! {
    fn cuCtxAttach(pctx: *mut CUcontext, flags: c_uint) {
        let out = Out::new(pctx, "pctx")?;
        out.set(ctx(drv()?.ctx_attach(flags)?));
        Ok(())
    }
}

api! {
    fn cuCtxDetach(ctx_: CUcontext) {
        drv()?.ctx_detach(raw(ctx_))
    }
}

api! {
    fn cuCtxPushCurrent_v2(ctx_: CUcontext) {
        drv()?.ctx_push(raw(ctx_))
    }
}

api! {
    fn cuCtxPushCurrent(ctx_: CUcontext) {
        drv()?.ctx_push(raw(ctx_))
    }
}

api! {
    fn cuCtxPopCurrent_v2(pctx: *mut CUcontext) {
        let h = drv()?.ctx_pop()?;
        set_opt(pctx, ctx(h));
        Ok(())
    }
}

api! {
    fn cuCtxPopCurrent(pctx: *mut CUcontext) {
        let h = drv()?.ctx_pop()?;
        set_opt(pctx, ctx(h));
        Ok(())
    }
}

api! {
    fn cuCtxSetCurrent(ctx_: CUcontext) {
        drv()?.ctx_set_current(raw(ctx_))
    }
}

api! {
    fn cuCtxGetCurrent(pctx: *mut CUcontext) {
        let out = Out::new(pctx, "pctx")?;
        out.set(ctx(drv()?.ctx_get_current()?.unwrap_or(0)));
        Ok(())
    }
}

api! {
    fn cuCtxGetDevice(device: *mut CUdevice) {
        let out = Out::new(device, "device")?;
        out.set(drv()?.ctx_get_device(0)?);
        Ok(())
    }
}

api! {
    fn cuCtxGetDevice_v2(device: *mut CUdevice, ctx_: CUcontext) {
        let out = Out::new(device, "device")?;
        out.set(drv()?.ctx_get_device(raw(ctx_))?);
        Ok(())
    }
}

api! {
    fn cuCtxGetFlags(flags: *mut c_uint) {
        let out = Out::new(flags, "flags")?;
        out.set(drv()?.ctx_get_flags()?);
        Ok(())
    }
}

api! {
    fn cuCtxSetFlags(flags: c_uint) {
        drv()?.ctx_set_flags(flags)
    }
}

api! {
    fn cuCtxGetId(ctx_: CUcontext, ctxId: *mut u64) {
        let out = Out::new(ctxId, "ctxId")?;
        out.set(drv()?.ctx_get_id(raw(ctx_))?);
        Ok(())
    }
}

api! {
    fn cuCtxGetApiVersion(ctx_: CUcontext, version: *mut c_uint) {
        let out = Out::new(version, "version")?;
        out.set(drv()?.ctx_get_api_version(raw(ctx_))?);
        Ok(())
    }
}

api! {
    fn cuCtxSynchronize() {
        drv()?.ctx_synchronize(0)
    }
}

api! {
    fn cuCtxSynchronize_v2(ctx_: CUcontext) {
        drv()?.ctx_synchronize(raw(ctx_))
    }
}

api! {
    fn cuCtxGetLimit(pvalue: *mut usize, limit: CUlimit) {
        let out = Out::new(pvalue, "pvalue")?;
        out.set(drv()?.ctx_get_limit(limit)? as usize);
        Ok(())
    }
}

api! {
    fn cuCtxSetLimit(limit: CUlimit, value: usize) {
        drv()?.ctx_set_limit(limit, value as u64)
    }
}

api! {
    fn cuCtxGetCacheConfig(pconfig: *mut CUfunc_cache) {
        let out = Out::new(pconfig, "pconfig")?;
        out.set(CUfunc_cache(drv()?.ctx_get_cache_config()?));
        Ok(())
    }
}

api! {
    fn cuCtxSetCacheConfig(config: CUfunc_cache) {
        drv()?.ctx_set_cache_config(config.0)
    }
}

api! {
    fn cuCtxGetSharedMemConfig(pConfig: *mut CUsharedconfig) {
        let out = Out::new(pConfig, "pConfig")?;
        out.set(CUsharedconfig(drv()?.ctx_get_shared_mem_config()?));
        Ok(())
    }
}

api! {
    fn cuCtxSetSharedMemConfig(config: CUsharedconfig) {
        drv()?.ctx_set_shared_mem_config(config.0)
    }
}

api! {
    fn cuCtxGetStreamPriorityRange(leastPriority: *mut c_int, greatestPriority: *mut c_int) {
        let (least, greatest) = drv()?.ctx_get_stream_priority_range()?;
        set_opt(leastPriority, least);
        set_opt(greatestPriority, greatest);
        Ok(())
    }
}

api! {
    fn cuCtxResetPersistingL2Cache() {
        drv()?.current_ctx()?;
        Ok(())
    }
}

api! {
    fn cuCtxEnablePeerAccess(peerContext: CUcontext, Flags: c_uint) {
        drv()?.ctx_enable_peer_access(raw(peerContext), Flags)
    }
}

api! {
    fn cuCtxDisablePeerAccess(peerContext: CUcontext) {
        drv()?.ctx_disable_peer_access(raw(peerContext))
    }
}

// ---- primary contexts ----

api! {
    fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) {
        let out = Out::new(pctx, "pctx")?;
        out.set(ctx(drv()?.primary_ctx_retain(dev)?));
        Ok(())
    }
}

api! {
    fn cuDevicePrimaryCtxRelease(dev: CUdevice) {
        drv()?.primary_ctx_release(dev)
    }
}

api! {
    fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) {
        drv()?.primary_ctx_release(dev)
    }
}

api! {
    fn cuDevicePrimaryCtxReset(dev: CUdevice) {
        drv()?.primary_ctx_reset(dev)
    }
}

api! {
    fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) {
        drv()?.primary_ctx_reset(dev)
    }
}

api! {
    fn cuDevicePrimaryCtxSetFlags(dev: CUdevice, flags: c_uint) {
        drv()?.primary_ctx_set_flags(dev, flags, true)
    }
}

api! {
    fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: c_uint) {
        drv()?.primary_ctx_set_flags(dev, flags, false)
    }
}

api! {
    fn cuDevicePrimaryCtxGetState(dev: CUdevice, flags: *mut c_uint, active: *mut c_int) {
        let (f, a) = (Out::new(flags, "flags")?, Out::new(active, "active")?);
        let s = drv()?.primary_ctx_get_state(dev)?;
        f.set(s.flags);
        a.set(s.active as c_int);
        Ok(())
    }
}
