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
unsafe impl Sync for SendPtr {}

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

// No stream belongs to a green context (anycuda creates none): NULL, once
// the handle is known to name a stream of a context.
api! {
    fn cuStreamGetGreenCtx(hStream: CUstream, phCtx: *mut CUgreenCtx) {
        let out = Out::new(phCtx, "phCtx")?;
        drv()?.stream_get_ctx(s(hStream), false)?;
        out.set(CUgreenCtx::NULL);
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

/// A C host function as the driver runs it (any number of times, from a
/// driver thread, as CUDA's contract allows).
pub(crate) fn host_fn(f: CUhostFn, userData: *mut c_void) -> Result<driver::HostFn, Error> {
    let Some(f) = f else {
        return Err(Error::InvalidValue("fn is NULL".into()));
    };
    let data = SendPtr(userData as usize);
    Ok(driver::HostFn {
        call: std::sync::Arc::new(move || {
            let data = data;
            // SAFETY: the caller's host function, called as the API promises.
            unsafe { f(data.0 as *mut c_void) };
        }),
        fn_ptr: f as usize,
        user_data: userData as usize,
    })
}

fn host_func(hStream: CUstream, ptds: bool, f: CUhostFn, userData: *mut c_void) -> Result<(), Error> {
    let f = host_fn(f, userData)?;
    drv()?.launch_host_func(s(hStream), ptds, f)
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

fn capture_status(st: driver::CaptureStatus) -> CUstreamCaptureStatus {
    match st {
        driver::CaptureStatus::None => CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE,
        driver::CaptureStatus::Active => CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE,
        driver::CaptureStatus::Invalidated => CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_INVALIDATED,
    }
}

/// The dependency arrays `cuStreamGetCaptureInfo` hands out, per stream:
/// valid until the next call on the stream (CUDA's contract), so each
/// call replaces its stream's.
type DepArrays = (Box<[CUgraphNode]>, Box<[CUgraphEdgeData]>);
fn capture_arrays() -> &'static std::sync::Mutex<std::collections::HashMap<u64, DepArrays>> {
    static A: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<u64, DepArrays>>> = std::sync::OnceLock::new();
    A.get_or_init(Default::default)
}

/// Fills the optional outputs of the `cuStreamGetCaptureInfo` forms.
unsafe fn capture_info(
    hStream: CUstream,
    ptds: bool,
    status: *mut CUstreamCaptureStatus,
    id: *mut u64,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
) -> Result<(), Error> {
    let out = Out::new(status, "captureStatus")?;
    if !edges.is_null() && deps.is_null() {
        return Err(Error::InvalidValue("edgeData_out needs dependencies_out".into()));
    }
    let info = drv()?.stream_capture_info(s(hStream), ptds)?;
    out.set(capture_status(info.status));
    set_opt(id, info.id);
    set_opt(graph, CUgraph::from_addr(info.graph as usize));
    set_opt(count, info.deps.len());
    if !deps.is_null() || !edges.is_null() {
        let nodes: Box<[CUgraphNode]> = info.deps.iter().map(|&d| CUgraphNode::from_addr(d as usize)).collect();
        let data: Box<[CUgraphEdgeData]> = vec![CUgraphEdgeData::default(); info.deps.len()].into_boxed_slice();
        let mut arrays = capture_arrays().lock().unwrap_or_else(|e| e.into_inner());
        let slot = arrays.entry(s(hStream)).or_insert_with(|| (Box::new([]), Box::new([])));
        *slot = (nodes, data);
        set_opt(deps, if slot.0.is_empty() { std::ptr::null() } else { slot.0.as_ptr() });
        set_opt(edges, if slot.1.is_empty() { std::ptr::null() } else { slot.1.as_ptr() });
    }
    Ok(())
}

api! {
    fn cuStreamIsCapturing / cuStreamIsCapturing_ptsz [ptds] (hStream: CUstream, captureStatus: *mut CUstreamCaptureStatus) {
        let out = Out::new(captureStatus, "captureStatus")?;
        out.set(capture_status(drv()?.stream_capture_info(s(hStream), ptds)?.status));
        Ok(())
    }
}

api! {
    fn cuStreamGetCaptureInfo / cuStreamGetCaptureInfo_ptsz [ptds] (hStream: CUstream, captureStatus: *mut CUstreamCaptureStatus, id: *mut u64) {
        capture_info(hStream, ptds, captureStatus, id, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
    }
}

api! {
    fn cuStreamGetCaptureInfo_v2 / cuStreamGetCaptureInfo_v2_ptsz [ptds] (hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut u64, graph_out: *mut CUgraph, dependencies_out: *mut *const CUgraphNode, numDependencies_out: *mut usize) {
        capture_info(hStream, ptds, captureStatus_out, id_out, graph_out, dependencies_out, std::ptr::null_mut(), numDependencies_out)
    }
}

api! {
    fn cuStreamGetCaptureInfo_v3 / cuStreamGetCaptureInfo_v3_ptsz [ptds] (hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut u64, graph_out: *mut CUgraph, dependencies_out: *mut *const CUgraphNode, edgeData_out: *mut *const CUgraphEdgeData, numDependencies_out: *mut usize) {
        capture_info(hStream, ptds, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out)
    }
}

api! {
    fn cuStreamBeginCapture_v2 / cuStreamBeginCapture_v2_ptsz [ptds] (hStream: CUstream, mode: CUstreamCaptureMode) {
        drv()?.stream_begin_capture(s(hStream), ptds, mode.0)
    }
}

api! {
    fn cuStreamBeginCapture / cuStreamBeginCapture_ptsz [ptds] (hStream: CUstream) {
        drv()?.stream_begin_capture(s(hStream), ptds, driver::CAPTURE_MODE_GLOBAL)
    }
}

/// Node handles from a C array (NULL only when empty).
pub(crate) unsafe fn node_list(p: *const CUgraphNode, n: usize, what: &str) -> Result<Vec<u64>, Error> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Error::InvalidValue(format!("{what} is NULL with {n} entries")));
    }
    if n > 1 << 24 {
        return Err(Error::InvalidValue(format!("{n} {what}")));
    }
    Ok((0..n).map(|i| p.add(i).read_unaligned().addr() as u64).collect())
}

/// Edge data must be default (zero): no node type defines ports.
pub(crate) unsafe fn check_edge_data(p: *const CUgraphEdgeData, n: usize) -> Result<(), Error> {
    if p.is_null() {
        return Ok(());
    }
    for i in 0..n {
        let e = p.add(i).read_unaligned();
        if e != CUgraphEdgeData::default() {
            return Err(Error::NotSupported(format!(
                "edge data (ports {}/{}, type {}): only default edges are supported",
                e.from_port, e.to_port, e.type_
            )));
        }
    }
    Ok(())
}

api! {
    fn cuStreamBeginCaptureToGraph / cuStreamBeginCaptureToGraph_ptsz [ptds] (hStream: CUstream, hGraph: CUgraph, dependencies: *const CUgraphNode, dependencyData: *const CUgraphEdgeData, numDependencies: usize, mode: CUstreamCaptureMode) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        check_edge_data(dependencyData, numDependencies)?;
        drv()?.stream_begin_capture_to_graph(s(hStream), ptds, hGraph.addr() as u64, &deps, mode.0)
    }
}

api! {
    fn cuStreamEndCapture / cuStreamEndCapture_ptsz [ptds] (hStream: CUstream, phGraph: *mut CUgraph) {
        let out = Out::new(phGraph, "phGraph")?;
        let r = drv()?.stream_end_capture(s(hStream), ptds);
        out.set(CUgraph::from_addr(*r.as_ref().unwrap_or(&0) as usize));
        r.map(|_| ())
    }
}

api! {
    fn cuStreamUpdateCaptureDependencies / cuStreamUpdateCaptureDependencies_ptsz [ptds] (hStream: CUstream, dependencies: *mut CUgraphNode, numDependencies: usize, flags: c_uint) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        drv()?.stream_update_capture_dependencies(s(hStream), ptds, &deps, flags)
    }
}

api! {
    fn cuStreamUpdateCaptureDependencies_v2 / cuStreamUpdateCaptureDependencies_v2_ptsz [ptds] (hStream: CUstream, dependencies: *mut CUgraphNode, dependencyData: *const CUgraphEdgeData, numDependencies: usize, flags: c_uint) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        check_edge_data(dependencyData, numDependencies)?;
        drv()?.stream_update_capture_dependencies(s(hStream), ptds, &deps, flags)
    }
}

api! {
    fn cuThreadExchangeStreamCaptureMode(mode: *mut CUstreamCaptureMode) {
        if mode.is_null() {
            return Err(Error::InvalidValue("mode is NULL".into()));
        }
        let new = mode.read_unaligned();
        let old = drv()?.thread_exchange_capture_mode(new.0)?;
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

// ---- stream attributes ----

api! {
    fn cuStreamSetAttribute / cuStreamSetAttribute_ptsz [ptds] (hStream: CUstream, attr: CUstreamAttrID, value: *const CUstreamAttrValue) {
        if value.is_null() {
            return Err(Error::InvalidValue("value is NULL".into()));
        }
        // SAFETY: a CUstreamAttrValue the caller passed (64 bytes, any alignment read).
        let v: [u8; 64] = unsafe { value.cast::<[u8; 64]>().read_unaligned() };
        drv()?.stream_set_attribute(s(hStream), ptds, attr.0, &v)
    }
}

api! {
    fn cuStreamGetAttribute / cuStreamGetAttribute_ptsz [ptds] (hStream: CUstream, attr: CUstreamAttrID, value_out: *mut CUstreamAttrValue) {
        if value_out.is_null() {
            return Err(Error::InvalidValue("value_out is NULL".into()));
        }
        let v = drv()?.stream_get_attribute(s(hStream), ptds, attr.0)?;
        // SAFETY: the caller's CUstreamAttrValue (64 bytes).
        unsafe { value_out.cast::<[u8; 64]>().write_unaligned(v) };
        Ok(())
    }
}

api! {
    fn cuStreamCopyAttributes / cuStreamCopyAttributes_ptsz [ptds] (dst: CUstream, src: CUstream) {
        drv()?.stream_copy_attributes(s(dst), s(src), ptds)
    }
}
