//! CUDA graphs, stream capture and the virtual memory API through the
//! built libcuda.so (mock backend): the C structures as C callers fill and
//! read them, the array conventions of the query functions, the result
//! structures, and the error codes.

mod common;
use common::*;
use cuda_types::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::OnceLock;

fn lib() -> &'static Lib {
    static L: OnceLock<Lib> = OnceLock::new();
    L.get_or_init(Lib::open)
}

const STREAM_CAPTURE_UNSUPPORTED: u32 = 900;
const STREAM_CAPTURE_INVALIDATED: u32 = 901;
const STREAM_CAPTURE_IMPLICIT: u32 = 906;
const CAPTURED_EVENT: u32 = 907;
const GRAPH_EXEC_UPDATE_FAILURE: u32 = 910;
const ILLEGAL_STATE: u32 = 401;

/// The tests of this file run one at a time: a global-mode capture forbids
/// every other thread's allocations while it lasts.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// cuInit, the primary context current, the mock module and its fill
/// kernel.
fn setup() -> (Ptr, Ptr) {
    let l = lib();
    api!(l;
        cuInit: fn(u32);
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
        cuCtxSetCurrent: fn(Ptr);
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const std::ffi::c_char);
    );
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, MOCK_PTX.as_ptr().cast()), SUCCESS);
        let mut f = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, m, c"mock_fill_u32".as_ptr()), SUCCESS);
        (c, f)
    }
}

fn fill_params(f: Ptr, args: &mut [*mut c_void; 3]) -> CUDA_KERNEL_NODE_PARAMS {
    CUDA_KERNEL_NODE_PARAMS {
        func: CUfunction(f.cast()),
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: 1,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: args.as_mut_ptr(),
        extra: null_mut(),
        kern: CUkernel::NULL,
        ctx: CUcontext::NULL,
    }
}

#[test]
fn graphs_through_the_c_abi() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_, f) = setup();
    let l = lib();
    api!(l;
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuStreamCreate: fn(*mut Ptr, u32);
        cuStreamSynchronize: fn(Ptr);
        cuGraphCreate: fn(*mut Ptr, u32);
        cuGraphDestroy: fn(Ptr);
        cuGraphAddKernelNode_v2: fn(*mut Ptr, Ptr, *const Ptr, usize, *const CUDA_KERNEL_NODE_PARAMS);
        cuGraphKernelNodeGetParams_v2: fn(Ptr, *mut CUDA_KERNEL_NODE_PARAMS);
        cuGraphAddMemsetNode: fn(*mut Ptr, Ptr, *const Ptr, usize, *const CUDA_MEMSET_NODE_PARAMS, Ptr);
        cuGraphMemsetNodeGetParams: fn(Ptr, *mut CUDA_MEMSET_NODE_PARAMS);
        cuGraphAddNode: fn(*mut Ptr, Ptr, *const Ptr, usize, *mut CUgraphNodeParams);
        cuGraphNodeGetParams: fn(Ptr, *mut CUgraphNodeParams);
        cuGraphGetNodes: fn(Ptr, *mut Ptr, *mut usize);
        cuGraphGetEdges_v2: fn(Ptr, *mut Ptr, *mut Ptr, *mut CUgraphEdgeData, *mut usize);
        cuGraphNodeGetType: fn(Ptr, *mut u32);
        cuGraphInstantiateWithParams: fn(*mut Ptr, Ptr, *mut CUDA_GRAPH_INSTANTIATE_PARAMS);
        cuGraphInstantiateWithFlags: fn(*mut Ptr, Ptr, u64);
        cuGraphLaunch: fn(Ptr, Ptr);
        cuGraphExecUpdate_v2: fn(Ptr, Ptr, *mut CUgraphExecUpdateResultInfo);
        cuGraphExecDestroy: fn(Ptr);
        cuGraphAddDependencies: fn(Ptr, *const Ptr, *const Ptr, usize);
        cuGraphDebugDotPrint: fn(Ptr, *const std::ffi::c_char, u32);
        cuGraphAddEmptyNode: fn(*mut Ptr, Ptr, *const Ptr, usize);
    );
    unsafe {
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, 64), SUCCESS);
        let mut s = null_mut();
        assert_eq!(cuStreamCreate(&mut s, 1), SUCCESS);
        let mut g = null_mut();
        assert_eq!(cuGraphCreate(null_mut(), 0), INVALID_VALUE);
        assert_eq!(cuGraphCreate(&mut g, 0), SUCCESS);
        // memset -> fill(p, 7, 4), and a generic-API fill(p + 16, 9, 2).
        let ms = CUDA_MEMSET_NODE_PARAMS { dst: p, pitch: 0, value: 0xab, elementSize: 1, width: 64, height: 1 };
        let mut m = null_mut();
        assert_eq!(cuGraphAddMemsetNode(&mut m, g, std::ptr::null(), 0, &ms, null_mut()), SUCCESS);
        let bad = CUDA_MEMSET_NODE_PARAMS { elementSize: 3, ..ms };
        let mut x = null_mut();
        assert_eq!(cuGraphAddMemsetNode(&mut x, g, std::ptr::null(), 0, &bad, null_mut()), INVALID_VALUE);
        let (mut v, mut n) = (7u32, 4u32);
        let mut args: [*mut c_void; 3] = [(&mut p as *mut u64).cast(), (&mut v as *mut u32).cast(), (&mut n as *mut u32).cast()];
        let kp = fill_params(f, &mut args);
        let mut k = null_mut();
        assert_eq!(cuGraphAddKernelNode_v2(&mut k, g, &m, 1, &kp), SUCCESS);
        assert_eq!(cuGraphAddKernelNode_v2(&mut x, g, &m, 1, std::ptr::null()), INVALID_VALUE);
        assert_eq!(cuGraphAddKernelNode_v2(&mut x, g, std::ptr::null(), 1, &kp), INVALID_VALUE, "NULL dependencies with a count");
        let mut q = p + 16;
        let (mut v2, mut n2) = (9u32, 2u32);
        let mut args2: [*mut c_void; 3] = [(&mut q as *mut u64).cast(), (&mut v2 as *mut u32).cast(), (&mut n2 as *mut u32).cast()];
        let mut gp: CUgraphNodeParams = std::mem::zeroed();
        gp.type_ = CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL;
        gp.params.kernel = fill_params(f, &mut args2);
        let mut k2 = null_mut();
        assert_eq!(cuGraphAddNode(&mut k2, g, &k, 1, &mut gp), SUCCESS);
        gp.reserved0[1] = 1;
        assert_eq!(cuGraphAddNode(&mut x, g, &k, 1, &mut gp), INVALID_VALUE, "reserved bytes must be zero");
        let mut ty = 99u32;
        assert_eq!(cuGraphNodeGetType(k2, &mut ty), SUCCESS);
        assert_eq!(ty, 0, "CU_GRAPH_NODE_TYPE_KERNEL");

        // Parameters come back: the kernel's arguments through the array.
        let mut got: CUDA_KERNEL_NODE_PARAMS = std::mem::zeroed();
        assert_eq!(cuGraphKernelNodeGetParams_v2(k, &mut got), SUCCESS);
        assert_eq!((got.gridDimX, got.blockDimX, got.sharedMemBytes), (1, 1, 0));
        assert_eq!(*(*got.kernelParams as *const u64), p);
        assert_eq!(*(*got.kernelParams.add(1) as *const u32), 7);
        assert!(got.extra.is_null());
        assert_eq!(cuGraphKernelNodeGetParams_v2(m, &mut got), INVALID_VALUE, "not a kernel node");
        let mut gms: CUDA_MEMSET_NODE_PARAMS = std::mem::zeroed();
        assert_eq!(cuGraphMemsetNodeGetParams(m, &mut gms), SUCCESS);
        assert_eq!((gms.dst, gms.value, gms.elementSize, gms.width), (p, 0xab, 1, 64));
        let mut gg: CUgraphNodeParams = std::mem::zeroed();
        assert_eq!(cuGraphNodeGetParams(k2, &mut gg), SUCCESS);
        assert_eq!(gg.type_, CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL);
        assert_eq!(*(*gg.params.kernel.kernelParams as *const u64), p + 16);

        // Array conventions: count only; a bigger array gets NULLs and the
        // real count; a smaller one is filled and keeps its size.
        let mut count = 0usize;
        assert_eq!(cuGraphGetNodes(g, null_mut(), &mut count), SUCCESS);
        assert_eq!(count, 3);
        assert_eq!(cuGraphGetNodes(g, null_mut(), null_mut()), INVALID_VALUE);
        let mut nodes = [GARBAGE_NODE; 5];
        count = 5;
        assert_eq!(cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut count), SUCCESS);
        assert_eq!(count, 3);
        assert_eq!(&nodes[..3], &[m, k, k2]);
        assert!(nodes[3].is_null() && nodes[4].is_null());
        let mut two = [null_mut(); 2];
        count = 2;
        assert_eq!(cuGraphGetNodes(g, two.as_mut_ptr(), &mut count), SUCCESS);
        assert_eq!((count, two), (2, [m, k]));
        let (mut from, mut to) = ([null_mut(); 4], [null_mut(); 4]);
        let mut data = [CUgraphEdgeData { from_port: 9, ..Default::default() }; 4];
        count = 4;
        assert_eq!(cuGraphGetEdges_v2(g, from.as_mut_ptr(), to.as_mut_ptr(), data.as_mut_ptr(), &mut count), SUCCESS);
        assert_eq!(count, 2);
        assert_eq!((from[0], to[0], from[1], to[1]), (m, k, k, k2));
        assert_eq!(data[0], CUgraphEdgeData::default(), "default edges");
        assert_eq!(cuGraphAddDependencies(g, &k, &k2, 1), INVALID_VALUE, "the edge exists");

        // Instantiate with parameters: the result structure.
        let mut ex = null_mut();
        let mut ip = CUDA_GRAPH_INSTANTIATE_PARAMS {
            flags: 0,
            hUploadStream: CUstream::NULL,
            hErrNode_out: CUgraphNode(GARBAGE.cast()),
            result_out: CUgraphInstantiateResult(77),
        };
        assert_eq!(cuGraphInstantiateWithParams(&mut ex, g, &mut ip), SUCCESS);
        assert_eq!(ip.result_out, CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_SUCCESS);
        assert!(ip.hErrNode_out.is_null());
        assert_eq!(cuGraphLaunch(ex, s), SUCCESS);
        assert_eq!(cuStreamSynchronize(s), SUCCESS);
        let mut back = [0u32; 16];
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), p, 64), SUCCESS);
        assert_eq!(&back[..6], &[7, 7, 7, 7, 9, 9]);
        assert_eq!(back[6], 0xabab_abab);
        assert_eq!(cuGraphLaunch(GARBAGE, s), INVALID_VALUE);
        assert_eq!(cuGraphInstantiateWithFlags(&mut x, g, 0x100), INVALID_VALUE, "unknown flag");

        // A failed update says why and where.
        let mut g2 = null_mut();
        assert_eq!(cuGraphCreate(&mut g2, 0), SUCCESS);
        let mut e = null_mut();
        assert_eq!(cuGraphAddEmptyNode(&mut e, g2, std::ptr::null(), 0), SUCCESS);
        let mut info = CUgraphExecUpdateResultInfo {
            result: CUgraphExecUpdateResult(77),
            errorNode: CUgraphNode::NULL,
            errorFromNode: CUgraphNode::NULL,
        };
        assert_eq!(cuGraphExecUpdate_v2(ex, g2, &mut info), GRAPH_EXEC_UPDATE_FAILURE);
        assert_eq!(info.result, CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
        assert_eq!(cuGraphExecUpdate_v2(ex, g, &mut info), SUCCESS, "its own graph fits");
        assert_eq!(info.result, CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS);

        // The DOT file.
        let path = std::env::temp_dir().join(format!("anycuda-graph-{}.dot", std::process::id()));
        let cpath = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("path");
        assert_eq!(cuGraphDebugDotPrint(g, cpath.as_ptr(), 1), SUCCESS);
        let dot = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert!(dot.contains("digraph") && dot.contains("mock_fill_u32") && dot.matches(" -> ").count() == 2, "{dot}");
        assert_eq!(cuGraphDebugDotPrint(g, c"/nonexistent-dir/x.dot".as_ptr(), 0), 304, "CUDA_ERROR_OPERATING_SYSTEM");

        assert_eq!(cuGraphExecDestroy(ex), SUCCESS);
        assert_eq!(cuGraphExecDestroy(ex), INVALID_VALUE);
        assert_eq!(cuGraphDestroy(g), SUCCESS);
        assert_eq!(cuGraphDestroy(g2), SUCCESS);
        assert_eq!(cuGraphDestroy(g), INVALID_VALUE);
    }
}

const GARBAGE: Ptr = 0x000d_eadb_eef0 as Ptr;
const GARBAGE_NODE: Ptr = 0x000d_eadb_eef0 as Ptr;

#[test]
fn capture_through_the_c_abi() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_, f) = setup();
    let l = lib();
    api!(l;
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuStreamCreate: fn(*mut Ptr, u32);
        cuEventCreate: fn(*mut Ptr, u32);
        cuEventRecord: fn(Ptr, Ptr);
        cuEventQuery: fn(Ptr);
        cuStreamBeginCapture_v2: fn(Ptr, u32);
        cuStreamEndCapture: fn(Ptr, *mut Ptr);
        cuStreamIsCapturing: fn(Ptr, *mut u32);
        cuStreamGetCaptureInfo_v3: fn(Ptr, *mut u32, *mut u64, *mut Ptr, *mut *const Ptr, *mut *const CUgraphEdgeData, *mut usize);
        cuStreamGetCaptureInfo_v2: fn(Ptr, *mut u32, *mut u64, *mut Ptr, *mut *const Ptr, *mut usize);
        cuStreamUpdateCaptureDependencies: fn(Ptr, *mut Ptr, usize, u32);
        cuThreadExchangeStreamCaptureMode: fn(*mut u32);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuMemsetD32Async: fn(u64, u32, usize, Ptr);
        cuStreamSynchronize: fn(Ptr);
        cuGraphDestroy: fn(Ptr);
        cuGraphAddEmptyNode: fn(*mut Ptr, Ptr, *const Ptr, usize);
    );
    unsafe {
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, 64), SUCCESS);
        let (mut s, mut blocking) = (null_mut(), null_mut());
        assert_eq!(cuStreamCreate(&mut s, 1), SUCCESS);
        assert_eq!(cuStreamCreate(&mut blocking, 0), SUCCESS);
        let mut st = 9u32;
        assert_eq!(cuStreamIsCapturing(s, null_mut()), INVALID_VALUE);
        assert_eq!(cuStreamBeginCapture_v2(s, 0), SUCCESS);
        let (mut v, mut n) = (3u32, 2u32);
        let mut args: [*mut c_void; 3] = [(&mut p as *mut u64).cast(), (&mut v as *mut u32).cast(), (&mut n as *mut u32).cast()];
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuMemsetD32Async(p + 32, 5, 2, s), SUCCESS);
        // v3: the dependency array stays valid until the next call on the
        // stream; edge data parallels it.
        let (mut id, mut graph, mut deps, mut edges, mut count) = (0u64, null_mut(), std::ptr::null(), std::ptr::null(), 0usize);
        assert_eq!(cuStreamGetCaptureInfo_v3(s, &mut st, &mut id, &mut graph, &mut deps, &mut edges, &mut count), SUCCESS);
        assert_eq!((st, count), (1, 1));
        assert!(id != 0 && !graph.is_null() && !deps.is_null() && !edges.is_null());
        assert_eq!(*edges, CUgraphEdgeData::default());
        let last = *deps;
        assert_eq!(cuStreamGetCaptureInfo_v3(s, &mut st, null_mut(), null_mut(), null_mut(), &mut edges, null_mut()), INVALID_VALUE);
        let mut e = null_mut();
        assert_eq!(cuGraphAddEmptyNode(&mut e, graph, &last, 1), SUCCESS);
        assert_eq!(cuStreamUpdateCaptureDependencies(s, &mut e, 1, 1), SUCCESS);
        assert_eq!(cuStreamUpdateCaptureDependencies(s, &mut e, 1, 2), INVALID_VALUE, "unknown flags");
        let mut deps2: *const Ptr = std::ptr::null();
        assert_eq!(cuStreamGetCaptureInfo_v2(s, &mut st, null_mut(), null_mut(), &mut deps2, &mut count), SUCCESS);
        assert_eq!((count, *deps2), (1, e));
        let mut ev = null_mut();
        assert_eq!(cuEventCreate(&mut ev, 0), SUCCESS);
        assert_eq!(cuEventRecord(ev, s), SUCCESS);
        assert_eq!(cuEventQuery(ev), CAPTURED_EVENT);
        // cuMemAlloc in a global capture: refused, and the capture is lost.
        let mut q = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut q, 16), STREAM_CAPTURE_UNSUPPORTED);
        assert_eq!(cuStreamIsCapturing(s, &mut st), SUCCESS);
        assert_eq!(st, 2, "CU_STREAM_CAPTURE_STATUS_INVALIDATED");
        let mut g = GARBAGE;
        assert_eq!(cuStreamEndCapture(s, &mut g), STREAM_CAPTURE_INVALIDATED);
        assert!(g.is_null());
        assert_eq!(cuStreamEndCapture(s, &mut g), ILLEGAL_STATE, "no longer capturing");
        // The thread's mode: exchanged, validated.
        let mut mode = 2u32;
        assert_eq!(cuThreadExchangeStreamCaptureMode(&mut mode), SUCCESS);
        assert_eq!(mode, 0);
        assert_eq!(cuStreamBeginCapture_v2(s, 0), SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut q, 16), SUCCESS, "this thread is relaxed now");
        assert_eq!(cuStreamEndCapture(s, &mut g), SUCCESS);
        assert_eq!(cuGraphDestroy(g), SUCCESS);
        let mut bad = 3u32;
        assert_eq!(cuThreadExchangeStreamCaptureMode(&mut bad), INVALID_VALUE);
        assert_eq!(cuThreadExchangeStreamCaptureMode(&mut mode), SUCCESS);
        // The legacy stream while a blocking stream captures.
        assert_eq!(cuStreamBeginCapture_v2(blocking, 2), SUCCESS);
        assert_eq!(cuStreamIsCapturing(null_mut(), &mut st), STREAM_CAPTURE_IMPLICIT);
        assert_eq!(cuStreamIsCapturing(1usize as Ptr, &mut st), STREAM_CAPTURE_IMPLICIT, "CU_STREAM_LEGACY");
        assert_eq!(cuStreamIsCapturing(2usize as Ptr, &mut st), SUCCESS, "CU_STREAM_PER_THREAD is not the legacy stream");
        assert_eq!(cuMemsetD32Async(p, 1, 1, null_mut()), STREAM_CAPTURE_IMPLICIT);
        assert_eq!(cuStreamEndCapture(blocking, &mut g), STREAM_CAPTURE_INVALIDATED);
        assert_eq!(cuStreamBeginCapture_v2(null_mut(), 0), STREAM_CAPTURE_UNSUPPORTED, "the legacy stream");
        assert_eq!(cuStreamBeginCapture_v2(s, 9), INVALID_VALUE);
        assert_eq!(cuStreamSynchronize(s), SUCCESS);
    }
}

#[test]
fn virtual_memory_through_the_c_abi() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    setup();
    let l = lib();
    api!(l;
        cuDeviceGetAttribute: fn(*mut i32, u32, i32);
        cuMemGetAllocationGranularity: fn(*mut usize, *const CUmemAllocationProp, u32);
        cuMemAddressReserve: fn(*mut u64, usize, usize, u64, u64);
        cuMemAddressFree: fn(u64, usize);
        cuMemCreate: fn(*mut u64, usize, *const CUmemAllocationProp, u64);
        cuMemRelease: fn(u64);
        cuMemMap: fn(u64, usize, usize, u64, u64);
        cuMemUnmap: fn(u64, usize);
        cuMemSetAccess: fn(u64, usize, *const CUmemAccessDesc, usize);
        cuMemGetAccess: fn(*mut u64, *const CUmemLocation, u64);
        cuMemRetainAllocationHandle: fn(*mut u64, *mut c_void);
        cuMemGetAllocationPropertiesFromHandle: fn(*mut CUmemAllocationProp, u64);
        cuMemcpyHtoD_v2: fn(u64, *const c_void, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuPointerGetAttribute: fn(*mut c_void, u32, u64);
    );
    unsafe {
        let mut supported = 0;
        assert_eq!(cuDeviceGetAttribute(&mut supported, 102, 0), SUCCESS);
        assert_eq!(supported, 1, "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
        let location = CUmemLocation { type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: 0 };
        let prop = CUmemAllocationProp {
            type_: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            requestedHandleTypes: CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            location,
            win32HandleMetaData: null_mut(),
            allocFlags: CUmemAllocationProp_allocFlags::default(),
        };
        let mut gran = 0usize;
        assert_eq!(cuMemGetAllocationGranularity(&mut gran, &prop, 0), SUCCESS);
        assert_eq!(gran, 2 << 20);
        assert_eq!(cuMemGetAllocationGranularity(&mut gran, std::ptr::null(), 0), INVALID_VALUE);
        assert_eq!(cuMemGetAllocationGranularity(null_mut(), &prop, 0), INVALID_VALUE);
        let mut r = 0u64;
        assert_eq!(cuMemAddressReserve(&mut r, 32 << 30, 0, 0, 0), SUCCESS);
        let mut h = 0u64;
        assert_eq!(cuMemCreate(&mut h, gran, &prop, 0), SUCCESS);
        let exported = CUmemAllocationProp { requestedHandleTypes: CUmemAllocationHandleType(1), ..prop };
        let mut h2 = 0u64;
        assert_eq!(cuMemCreate(&mut h2, gran, &exported, 0), NOT_SUPPORTED, "shareable handles are not offered");
        assert_eq!(cuMemMap(r, gran, 0, h, 0), SUCCESS);
        let data = [1u32, 2, 3, 4];
        assert_eq!(cuMemcpyHtoD_v2(r, data.as_ptr().cast(), 16), INVALID_VALUE, "no access yet");
        let desc = CUmemAccessDesc { location, flags: CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
        assert_eq!(cuMemSetAccess(r, gran, std::ptr::null(), 1), INVALID_VALUE);
        assert_eq!(cuMemSetAccess(r, gran, &desc, 1), SUCCESS);
        let mut flags = 0u64;
        assert_eq!(cuMemGetAccess(&mut flags, &location, r + 8), SUCCESS);
        assert_eq!(flags, 3);
        assert_eq!(cuMemcpyHtoD_v2(r + 100, data.as_ptr().cast(), 16), SUCCESS);
        let mut back = [0u32; 4];
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), r + 100, 16), SUCCESS);
        assert_eq!(back, data);
        let mut mem_type = 0u32;
        assert_eq!(cuPointerGetAttribute((&mut mem_type as *mut u32).cast(), 2, r + 100), SUCCESS);
        assert_eq!(mem_type, 2, "CU_MEMORYTYPE_DEVICE");
        let mut again = 0u64;
        assert_eq!(cuMemRetainAllocationHandle(&mut again, (r + 5) as *mut c_void), SUCCESS);
        assert_eq!(again, h);
        assert_eq!(cuMemRelease(again), SUCCESS);
        let mut got: CUmemAllocationProp = std::mem::zeroed();
        assert_eq!(cuMemGetAllocationPropertiesFromHandle(&mut got, h), SUCCESS);
        assert_eq!((got.type_, got.location), (prop.type_, location));
        assert_eq!(cuMemAddressFree(r, 32 << 30), INVALID_VALUE, "still mapped");
        assert_eq!(cuMemUnmap(r, gran), SUCCESS);
        assert_eq!(cuMemRelease(h), SUCCESS);
        assert_eq!(cuMemRelease(h), INVALID_VALUE);
        assert_eq!(cuMemAddressFree(r, 32 << 30), SUCCESS);
    }
}
