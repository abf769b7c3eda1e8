//! Streams and events.

use std::ffi::{c_int, c_uint, c_void};

use cuda_types::*;
use driver::Error;

use crate::util::{api, drv, set_opt, Out};

fn s(h: CUstream) -> u64 {
    h.addr() as u64
}

fn e(h: CUevent) -> u64 {
    h.addr() as u64
}

/// A C pointer that travels to a stream thread (the API's contract says
/// the callee may use it there).
#[derive(Clone, Copy)]
struct SendPtr(usize);
// SAFETY: only carried across threads, used as CUDA's contract allows.
unsafe impl Send for SendPtr {}

api! {
    fn cuStreamCreate(phStream: *mut CUstream, Flags: c_uint) {
        let out = Out::new(phStream, "phStream")?;
        out.set(CUstream::from_addr(drv()?.stream_create(Flags, 0)? as usize));
        Ok(())
    }
}

api! {
    fn cuStreamCreateWithPriority(phStream: *mut CUstream, flags: c_uint, priority: c_int) {
        let out = Out::new(phStream, "phStream")?;
        out.set(CUstream::from_addr(drv()?.stream_create(flags, priority)? as usize));
        Ok(())
    }
}

api! {
    fn cuStreamDestroy_v2(hStream: CUstream) {
        drv()?.stream_destroy(s(hStream))
    }
}

api! {
    fn cuStreamDestroy(hStream: CUstream) {
        drv()?.stream_destroy(s(hStream))
    }
}

api! {
    fn cuStreamQuery / cuStreamQuery_ptsz [ptds] (hStream: CUstream) {
        drv()?.stream_query(s(hStream), ptds)
    }
}

api! {
    fn cuStreamSynchronize / cuStreamSynchronize_ptsz [ptds] (hStream: CUstream) {
        drv()?.stream_synchronize(s(hStream), ptds)
    }
}

api! {
    fn cuStreamGetPriority / cuStreamGetPriority_ptsz [ptds] (hStream: CUstream, priority: *mut c_int) {
        let out = Out::new(priority, "priority")?;
        out.set(drv()?.stream_get_priority(s(hStream), ptds)?);
        Ok(())
    }
}

api! {
    fn cuStreamGetFlags / cuStreamGetFlags_ptsz [ptds] (hStream: CUstream, flags: *mut c_uint) {
        let out = Out::new(flags, "flags")?;
        out.set(drv()?.stream_get_flags(s(hStream), ptds)?);
        Ok(())
    }
}

api! {
    fn cuStreamGetId / cuStreamGetId_ptsz [ptds] (hStream: CUstream, streamId: *mut u64) {
        let out = Out::new(streamId, "streamId")?;
        out.set(drv()?.stream_get_id(s(hStream), ptds)?);
        Ok(())
    }
}

api! {
    fn cuStreamGetCtx / cuStreamGetCtx_ptsz [ptds] (hStream: CUstream, pctx: *mut CUcontext) {
        let out = Out::new(pctx, "pctx")?;
        out.set(CUcontext::from_addr(drv()?.stream_get_ctx(s(hStream), ptds)? as usize));
        Ok(())
    }
}

api! {
    fn cuStreamGetCtx_v2 / cuStreamGetCtx_v2_ptsz [ptds] (hStream: CUstream, pCtx: *mut CUcontext, pGreenCtx: *mut CUgreenCtx) {
        let out = Out::new(pCtx, "pCtx")?;
        out.set(CUcontext::from_addr(drv()?.stream_get_ctx(s(hStream), ptds)? as usize));
        set_opt(pGreenCtx, CUgreenCtx::NULL);
        Ok(())
    }
}

api! {
    fn cuStreamGetDevice / cuStreamGetDevice_ptsz [ptds] (hStream: CUstream, device: *mut CUdevice) {
        let out = Out::new(device, "device")?;
        out.set(drv()?.stream_get_device(s(hStream), ptds)?);
        Ok(())
    }
}

api! {
    fn cuStreamWaitEvent / cuStreamWaitEvent_ptsz [ptds] (hStream: CUstream, hEvent: CUevent, Flags: c_uint) {
        drv()?.stream_wait_event(s(hStream), e(hEvent), ptds, Flags)
    }
}

api! {
    fn cuStreamAddCallback / cuStreamAddCallback_ptsz [ptds] (hStream: CUstream, callback: CUstreamCallback, userData: *mut c_void, flags: c_uint) {
        let Some(cb) = callback else {
            return Err(Error::InvalidValue("callback is NULL".into()));
        };
        let data = SendPtr(userData as usize);
        let handle = SendPtr(hStream.addr());
        drv()?.stream_add_callback(s(hStream), ptds, flags, Box::new(move |status| {
            let code = match &status {
                Ok(()) => CUresult::CUDA_SUCCESS,
                Err(err) => crate::errors::code(err),
            };
            let (data, handle) = (data, handle);
            // SAFETY: the caller's callback, called as the API promises.
            unsafe { cb(CUstream::from_addr(handle.0), code, data.0 as *mut c_void) };
        }))
    }
}

fn host_func(hStream: CUstream, ptds: bool, f: CUhostFn, userData: *mut c_void) -> Result<(), Error> {
    let Some(f) = f else {
        return Err(Error::InvalidValue("fn is NULL".into()));
    };
    let data = SendPtr(userData as usize);
    drv()?.launch_host_func(
        s(hStream),
        ptds,
        Box::new(move || {
            let data = data;
            // SAFETY: the caller's host function, called as the API promises.
            unsafe { f(data.0 as *mut c_void) };
        }),
    )
}

api! {
    fn cuLaunchHostFunc / cuLaunchHostFunc_ptsz [ptds] (hStream: CUstream, fn_: CUhostFn, userData: *mut c_void) {
        host_func(hStream, ptds, fn_, userData)
    }
}

api! {
    fn cuLaunchHostFunc_v2 / cuLaunchHostFunc_v2_ptsz [ptds] (hStream: CUstream, fn_: CUhostFn, userData: *mut c_void, syncMode: c_uint) {
        if syncMode > 1 {
            return Err(Error::InvalidValue(format!("unknown sync mode {syncMode}")));
        }
        host_func(hStream, ptds, fn_, userData)
    }
}

api! {
    fn cuStreamAttachMemAsync / cuStreamAttachMemAsync_ptsz [ptds] (hStream: CUstream, dptr: CUdeviceptr, length: usize, flags: c_uint) {
        drv()?.stream_attach_mem(s(hStream), ptds, dptr, length, flags)
    }
}

api! {
    fn cuStreamIsCapturing / cuStreamIsCapturing_ptsz [ptds] (hStream: CUstream, captureStatus: *mut CUstreamCaptureStatus) {
        let out = Out::new(captureStatus, "captureStatus")?;
        drv()?.stream_is_capturing(s(hStream), ptds)?;
        out.set(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
        Ok(())
    }
}

api! {
    fn cuStreamGetCaptureInfo / cuStreamGetCaptureInfo_ptsz [ptds] (hStream: CUstream, captureStatus: *mut CUstreamCaptureStatus, id: *mut u64) {
        let out = Out::new(captureStatus, "captureStatus")?;
        drv()?.stream_is_capturing(s(hStream), ptds)?;
        out.set(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
        set_opt(id, 0);
        Ok(())
    }
}

api! {
    fn cuStreamGetCaptureInfo_v2 / cuStreamGetCaptureInfo_v2_ptsz [ptds] (hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut u64, graph_out: *mut CUgraph, dependencies_out: *mut *const CUgraphNode, numDependencies_out: *mut usize) {
        let out = Out::new(captureStatus_out, "captureStatus_out")?;
        drv()?.stream_is_capturing(s(hStream), ptds)?;
        out.set(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
        set_opt(id_out, 0);
        set_opt(graph_out, CUgraph::NULL);
        set_opt(dependencies_out, std::ptr::null());
        set_opt(numDependencies_out, 0);
        Ok(())
    }
}

api! {
    fn cuStreamGetCaptureInfo_v3 / cuStreamGetCaptureInfo_v3_ptsz [ptds] (hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut u64, graph_out: *mut CUgraph, dependencies_out: *mut *const CUgraphNode, edgeData_out: *mut *const c_void, numDependencies_out: *mut usize) {
        let out = Out::new(captureStatus_out, "captureStatus_out")?;
        drv()?.stream_is_capturing(s(hStream), ptds)?;
        out.set(CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
        set_opt(id_out, 0);
        set_opt(graph_out, CUgraph::NULL);
        set_opt(dependencies_out, std::ptr::null());
        set_opt(edgeData_out, std::ptr::null());
        set_opt(numDependencies_out, 0);
        Ok(())
    }
}

api! {
    fn cuStreamBeginCapture_v2 / cuStreamBeginCapture_v2_ptsz [ptds] (hStream: CUstream, mode: CUstreamCaptureMode) {
        drv()?.stream_is_capturing(s(hStream), ptds)?;
        let _ = mode;
        Err(Error::NotSupported("stream capture (CUDA graphs) is not implemented yet".into()))
    }
}

api! {
    fn cuStreamBeginCapture / cuStreamBeginCapture_ptsz [ptds] (hStream: CUstream) {
        drv()?.stream_is_capturing(s(hStream), ptds)?;
        Err(Error::NotSupported("stream capture (CUDA graphs) is not implemented yet".into()))
    }
}

api! {
    fn cuThreadExchangeStreamCaptureMode(mode: *mut CUstreamCaptureMode) {
        thread_local! {
            static MODE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
        }
        if mode.is_null() {
            return Err(Error::InvalidValue("mode is NULL".into()));
        }
        let new = mode.read_unaligned();
        if new.0 > 2 {
            return Err(Error::InvalidValue(format!("unknown capture mode {}", new.0)));
        }
        let old = MODE.with(|m| m.replace(new.0));
        mode.write_unaligned(CUstreamCaptureMode(old));
        Ok(())
    }
}

api! {
    fn cuStreamWriteValue32_v2 / cuStreamWriteValue32_v2_ptsz [ptds] (stream: CUstream, addr: CUdeviceptr, value: u32, flags: c_uint) {
        if flags > 1 {
            return Err(Error::InvalidValue("unknown flags".into()));
        }
        drv()?.stream_write_value(s(stream), ptds, addr, value as u64, false)
    }
}

api! {
    fn cuStreamWriteValue64_v2 / cuStreamWriteValue64_v2_ptsz [ptds] (stream: CUstream, addr: CUdeviceptr, value: u64, flags: c_uint) {
        if flags > 1 {
            return Err(Error::InvalidValue("unknown flags".into()));
        }
        drv()?.stream_write_value(s(stream), ptds, addr, value, true)
    }
}

api! {
    fn cuStreamWaitValue32_v2 / cuStreamWaitValue32_v2_ptsz [ptds] (stream: CUstream, addr: CUdeviceptr, value: u32, flags: c_uint) {
        drv()?.stream_wait_value(s(stream), ptds, addr, value as u64, flags, false)
    }
}

api! {
    fn cuStreamWaitValue64_v2 / cuStreamWaitValue64_v2_ptsz [ptds] (stream: CUstream, addr: CUdeviceptr, value: u64, flags: c_uint) {
        drv()?.stream_wait_value(s(stream), ptds, addr, value, flags, true)
    }
}

// ---- events ----

api! {
    fn cuEventCreate(phEvent: *mut CUevent, Flags: c_uint) {
        let out = Out::new(phEvent, "phEvent")?;
        out.set(CUevent::from_addr(drv()?.event_create(Flags)? as usize));
        Ok(())
    }
}

api! {
    fn cuEventDestroy_v2(hEvent: CUevent) {
        drv()?.event_destroy(e(hEvent))
    }
}

api! {
    fn cuEventDestroy(hEvent: CUevent) {
        drv()?.event_destroy(e(hEvent))
    }
}

api! {
    fn cuEventRecord / cuEventRecord_ptsz [ptds] (hEvent: CUevent, hStream: CUstream) {
        drv()?.event_record(e(hEvent), s(hStream), ptds, 0)
    }
}

api! {
    fn cuEventRecordWithFlags / cuEventRecordWithFlags_ptsz [ptds] (hEvent: CUevent, hStream: CUstream, flags: c_uint) {
        drv()?.event_record(e(hEvent), s(hStream), ptds, flags)
    }
}

api! {
    fn cuEventQuery(hEvent: CUevent) {
        drv()?.event_query(e(hEvent))
    }
}

api! {
    fn cuEventSynchronize(hEvent: CUevent) {
        drv()?.event_synchronize(e(hEvent))
    }
}

api! {
    fn cuEventElapsedTime(pMilliseconds: *mut f32, hStart: CUevent, hEnd: CUevent) {
        let out = Out::new(pMilliseconds, "pMilliseconds")?;
        out.set(drv()?.event_elapsed_time(e(hStart), e(hEnd))?);
        Ok(())
    }
}

api! {
    fn cuEventElapsedTime_v2(pMilliseconds: *mut f32, hStart: CUevent, hEnd: CUevent) {
        let out = Out::new(pMilliseconds, "pMilliseconds")?;
        out.set(drv()?.event_elapsed_time(e(hStart), e(hEnd))?);
        Ok(())
    }
}
