//! CUDA graphs: graphs and their nodes, executable graphs, graph memory.
//! (Stream capture lives with the streams, in `api_stream`.)

use std::ffi::{c_char, c_uint, c_ulonglong, c_void};

use cuda_types::*;
use driver::{Error, HostFn, KernelNodeSpec, MemAllocSpec, MemLoc, Memcpy3D, MemsetSpec, NodeInfo, NodeInfoIn};

use crate::api_stream::{check_edge_data, host_fn, node_list};
use crate::util::{api, drv, set_opt, Out};

fn g(h: CUgraph) -> u64 {
    h.addr() as u64
}

fn n(h: CUgraphNode) -> u64 {
    h.addr() as u64
}

fn x(h: CUgraphExec) -> u64 {
    h.addr() as u64
}

fn node(h: u64) -> CUgraphNode {
    CUgraphNode::from_addr(h as usize)
}

/// Writes a list of nodes the way the `cuGraphGet*` functions do: with
/// `out` NULL, only the count; else at most `*count` entries, the rest of
/// a longer array NULL, and `*count` set to the number written.
unsafe fn write_nodes(out: *mut CUgraphNode, count: *mut usize, list: &[u64]) -> Result<(), Error> {
    let c = Out::new(count, "numNodes")?;
    if out.is_null() {
        c.set(list.len());
        return Ok(());
    }
    let room = count.read_unaligned();
    for i in 0..room {
        out.add(i).write_unaligned(list.get(i).map(|&h| node(h)).unwrap_or(CUgraphNode::NULL));
    }
    c.set(room.min(list.len()));
    Ok(())
}

/// Default edge data for `n` entries of an optional output array.
unsafe fn write_edge_data(out: *mut CUgraphEdgeData, n: usize) {
    if !out.is_null() {
        for i in 0..n {
            out.add(i).write_unaligned(CUgraphEdgeData::default());
        }
    }
}

unsafe fn kernel_spec_v2<'a>(p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<KernelNodeSpec<'a>, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("nodeParams is NULL".into()));
    }
    let k = p.read_unaligned();
    let (func, ctx) = if k.func.is_null() { (k.kern.addr() as u64, k.ctx.addr() as u64) } else { (k.func.addr() as u64, 0) };
    if func == 0 {
        return Err(Error::InvalidValue("neither func nor kern is set".into()));
    }
    Ok(KernelNodeSpec {
        func,
        ctx,
        grid: [k.gridDimX, k.gridDimY, k.gridDimZ],
        block: [k.blockDimX, k.blockDimY, k.blockDimZ],
        shared_bytes: k.sharedMemBytes,
        args: crate::api_launch::args(k.kernelParams, k.extra)?,
    })
}

unsafe fn kernel_spec_v1<'a>(p: *const CUDA_KERNEL_NODE_PARAMS_v1) -> Result<KernelNodeSpec<'a>, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("nodeParams is NULL".into()));
    }
    let k = p.read_unaligned();
    Ok(KernelNodeSpec {
        func: k.func.addr() as u64,
        ctx: 0,
        grid: [k.gridDimX, k.gridDimY, k.gridDimZ],
        block: [k.blockDimX, k.blockDimY, k.blockDimZ],
        shared_bytes: k.sharedMemBytes,
        args: crate::api_launch::args(k.kernelParams, k.extra)?,
    })
}

unsafe fn memset_spec(p: *const CUDA_MEMSET_NODE_PARAMS, ctx: CUcontext) -> Result<MemsetSpec, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("memsetParams is NULL".into()));
    }
    let m = p.read_unaligned();
    Ok(MemsetSpec {
        dst: m.dst,
        pitch: m.pitch,
        value: m.value,
        element_size: m.elementSize,
        width: m.width,
        height: m.height,
        ctx: ctx.addr() as u64,
    })
}

unsafe fn host_spec(p: *const CUDA_HOST_NODE_PARAMS) -> Result<HostFn, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("nodeParams is NULL".into()));
    }
    let h = p.read_unaligned();
    host_fn(h.fn_, h.userData)
}

unsafe fn alloc_spec(p: *const CUDA_MEM_ALLOC_NODE_PARAMS) -> Result<MemAllocSpec, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("nodeParams is NULL".into()));
    }
    let a = p.read_unaligned();
    if a.accessDescCount > 0 && a.accessDescs.is_null() {
        return Err(Error::InvalidValue("accessDescs is NULL".into()));
    }
    if a.accessDescCount > 64 {
        return Err(Error::InvalidValue(format!("{} access descriptors", a.accessDescCount)));
    }
    let access = (0..a.accessDescCount)
        .map(|i| {
            let d = a.accessDescs.add(i).read_unaligned();
            (d.location.type_.0, d.location.id, d.flags.0)
        })
        .collect();
    Ok(MemAllocSpec {
        alloc_type: a.poolProps.allocType.0,
        handle_types: a.poolProps.handleTypes.0,
        location_type: a.poolProps.location.type_.0,
        device: a.poolProps.location.id,
        access,
        bytesize: a.bytesize,
    })
}

/// A `CUDA_MEMCPY3D` describing `c` (the form the driver keeps).
fn memcpy3d_out(c: &Memcpy3D) -> CUDA_MEMCPY3D {
    let side = |l: MemLoc| -> (CUmemorytype, *const c_void, CUdeviceptr, CUarray) {
        match l {
            MemLoc::Host(h) => (CUmemorytype::CU_MEMORYTYPE_HOST, h as *const c_void, 0, CUarray::NULL),
            MemLoc::Device(d) => (CUmemorytype::CU_MEMORYTYPE_DEVICE, std::ptr::null(), d, CUarray::NULL),
            MemLoc::Unified(u) => (CUmemorytype::CU_MEMORYTYPE_UNIFIED, std::ptr::null(), u, CUarray::NULL),
            MemLoc::Array(a) => (CUmemorytype::CU_MEMORYTYPE_ARRAY, std::ptr::null(), 0, CUarray::from_addr(a as usize)),
        }
    };
    let (st, sh, sd, sa) = side(c.src);
    let (dt, dh, dd, da) = side(c.dst);
    CUDA_MEMCPY3D {
        srcXInBytes: c.src_x,
        srcY: c.src_y,
        srcZ: c.src_z,
        srcLOD: c.src_lod,
        srcMemoryType: st,
        srcHost: sh,
        srcDevice: sd,
        srcArray: sa,
        reserved0: std::ptr::null_mut(),
        srcPitch: c.src_pitch,
        srcHeight: c.src_height,
        dstXInBytes: c.dst_x,
        dstY: c.dst_y,
        dstZ: c.dst_z,
        dstLOD: c.dst_lod,
        dstMemoryType: dt,
        dstHost: dh as *mut c_void,
        dstDevice: dd,
        dstArray: da,
        reserved1: std::ptr::null_mut(),
        dstPitch: c.dst_pitch,
        dstHeight: c.dst_height,
        WidthInBytes: c.width,
        Height: c.height,
        Depth: c.depth,
    }
}

fn kernel_out(info: &driver::KernelNodeInfo) -> CUDA_KERNEL_NODE_PARAMS {
    CUDA_KERNEL_NODE_PARAMS {
        func: CUfunction::from_addr(info.func as usize),
        gridDimX: info.grid[0],
        gridDimY: info.grid[1],
        gridDimZ: info.grid[2],
        blockDimX: info.block[0],
        blockDimY: info.block[1],
        blockDimZ: info.block[2],
        sharedMemBytes: info.shared_bytes,
        kernelParams: info.args as *mut *mut c_void,
        extra: std::ptr::null_mut(),
        kern: CUkernel::from_addr(info.kernel as usize),
        ctx: CUcontext::from_addr(info.ctx as usize),
    }
}

fn memset_out(m: &MemsetSpec) -> CUDA_MEMSET_NODE_PARAMS {
    CUDA_MEMSET_NODE_PARAMS { dst: m.dst, pitch: m.pitch, value: m.value, elementSize: m.element_size, width: m.width, height: m.height }
}

/// The node's parameters, if it is of the type `what` names (`pick`
/// takes them apart).
fn params_of<T>(h: CUgraphNode, what: &str, pick: impl FnOnce(NodeInfo) -> Option<T>) -> Result<T, Error> {
    let info = drv()?.graph_node_params(n(h))?;
    pick(info).ok_or_else(|| Error::InvalidValue(format!("node {:#x} is not a {what} node", n(h))))
}

fn add(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, deps: &[u64], info: NodeInfoIn<'_>) -> Result<(), Error> {
    let out = Out::new(phGraphNode, "phGraphNode")?;
    out.set(node(drv()?.graph_add_node(g(hGraph), deps, info)?));
    Ok(())
}

// ---- graphs ----

api! {
    fn cuGraphCreate(phGraph: *mut CUgraph, flags: c_uint) {
        let out = Out::new(phGraph, "phGraph")?;
        out.set(CUgraph::from_addr(drv()?.graph_create(flags)? as usize));
        Ok(())
    }
}

api! {
    fn cuGraphDestroy(hGraph: CUgraph) {
        drv()?.graph_destroy(g(hGraph))
    }
}

api! {
    fn cuGraphClone(phGraphClone: *mut CUgraph, originalGraph: CUgraph) {
        let out = Out::new(phGraphClone, "phGraphClone")?;
        out.set(CUgraph::from_addr(drv()?.graph_clone(g(originalGraph))? as usize));
        Ok(())
    }
}

api! {
    fn cuGraphNodeFindInClone(phNode: *mut CUgraphNode, hOriginalNode: CUgraphNode, hClonedGraph: CUgraph) {
        let out = Out::new(phNode, "phNode")?;
        out.set(node(drv()?.graph_node_find_in_clone(n(hOriginalNode), g(hClonedGraph))?));
        Ok(())
    }
}

api! {
    fn cuGraphGetNodes(hGraph: CUgraph, nodes: *mut CUgraphNode, numNodes: *mut usize) {
        write_nodes(nodes, numNodes, &drv()?.graph_nodes(g(hGraph))?)
    }
}

api! {
    fn cuGraphGetRootNodes(hGraph: CUgraph, rootNodes: *mut CUgraphNode, numRootNodes: *mut usize) {
        write_nodes(rootNodes, numRootNodes, &drv()?.graph_root_nodes(g(hGraph))?)
    }
}

unsafe fn get_edges(
    hGraph: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    numEdges: *mut usize,
) -> Result<(), Error> {
    let c = Out::new(numEdges, "numEdges")?;
    let edges = drv()?.graph_edges(g(hGraph))?;
    if from.is_null() && to.is_null() {
        if !data.is_null() {
            return Err(Error::InvalidValue("edgeData without from and to".into()));
        }
        c.set(edges.len());
        return Ok(());
    }
    if from.is_null() || to.is_null() {
        return Err(Error::InvalidValue("from and to must both be given".into()));
    }
    let room = numEdges.read_unaligned();
    for i in 0..room {
        let (f, t) = edges.get(i).map(|&(f, t)| (node(f), node(t))).unwrap_or((CUgraphNode::NULL, CUgraphNode::NULL));
        from.add(i).write_unaligned(f);
        to.add(i).write_unaligned(t);
    }
    write_edge_data(data, room);
    c.set(room.min(edges.len()));
    Ok(())
}

api! {
    fn cuGraphGetEdges(hGraph: CUgraph, from: *mut CUgraphNode, to: *mut CUgraphNode, numEdges: *mut usize) {
        get_edges(hGraph, from, to, std::ptr::null_mut(), numEdges)
    }
}

api! {
    fn cuGraphGetEdges_v2(hGraph: CUgraph, from: *mut CUgraphNode, to: *mut CUgraphNode, edgeData: *mut CUgraphEdgeData, numEdges: *mut usize) {
        get_edges(hGraph, from, to, edgeData, numEdges)
    }
}

api! {
    fn cuGraphNodeGetDependencies(hNode: CUgraphNode, dependencies: *mut CUgraphNode, numDependencies: *mut usize) {
        write_nodes(dependencies, numDependencies, &drv()?.graph_node_dependencies(n(hNode))?)
    }
}

api! {
    fn cuGraphNodeGetDependencies_v2(hNode: CUgraphNode, dependencies: *mut CUgraphNode, edgeData: *mut CUgraphEdgeData, numDependencies: *mut usize) {
        let list = drv()?.graph_node_dependencies(n(hNode))?;
        if !dependencies.is_null() {
            write_edge_data(edgeData, numDependencies.read_unaligned());
        }
        write_nodes(dependencies, numDependencies, &list)
    }
}

api! {
    fn cuGraphNodeGetDependentNodes(hNode: CUgraphNode, dependentNodes: *mut CUgraphNode, numDependentNodes: *mut usize) {
        write_nodes(dependentNodes, numDependentNodes, &drv()?.graph_node_dependents(n(hNode))?)
    }
}

api! {
    fn cuGraphNodeGetDependentNodes_v2(hNode: CUgraphNode, dependentNodes: *mut CUgraphNode, edgeData: *mut CUgraphEdgeData, numDependentNodes: *mut usize) {
        let list = drv()?.graph_node_dependents(n(hNode))?;
        if !dependentNodes.is_null() {
            write_edge_data(edgeData, numDependentNodes.read_unaligned());
        }
        write_nodes(dependentNodes, numDependentNodes, &list)
    }
}

api! {
    fn cuGraphAddDependencies(hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, numDependencies: usize) {
        let (f, t) = (node_list(from, numDependencies, "from")?, node_list(to, numDependencies, "to")?);
        drv()?.graph_add_dependencies(g(hGraph), &f, &t)
    }
}

api! {
    fn cuGraphAddDependencies_v2(hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, edgeData: *const CUgraphEdgeData, numDependencies: usize) {
        check_edge_data(edgeData, numDependencies)?;
        let (f, t) = (node_list(from, numDependencies, "from")?, node_list(to, numDependencies, "to")?);
        drv()?.graph_add_dependencies(g(hGraph), &f, &t)
    }
}

api! {
    fn cuGraphRemoveDependencies(hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, numDependencies: usize) {
        let (f, t) = (node_list(from, numDependencies, "from")?, node_list(to, numDependencies, "to")?);
        drv()?.graph_remove_dependencies(g(hGraph), &f, &t)
    }
}

api! {
    fn cuGraphRemoveDependencies_v2(hGraph: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, edgeData: *const CUgraphEdgeData, numDependencies: usize) {
        check_edge_data(edgeData, numDependencies)?;
        let (f, t) = (node_list(from, numDependencies, "from")?, node_list(to, numDependencies, "to")?);
        drv()?.graph_remove_dependencies(g(hGraph), &f, &t)
    }
}

api! {
    fn cuGraphDestroyNode(hNode: CUgraphNode) {
        drv()?.graph_destroy_node(n(hNode))
    }
}

api! {
    fn cuGraphNodeGetType(hNode: CUgraphNode, type_: *mut CUgraphNodeType) {
        let out = Out::new(type_, "type")?;
        out.set(drv()?.graph_node_type(n(hNode))?);
        Ok(())
    }
}

api! {
    fn cuGraphNodeGetContainingGraph(hNode: CUgraphNode, phGraph: *mut CUgraph) {
        let out = Out::new(phGraph, "phGraph")?;
        out.set(CUgraph::from_addr(drv()?.graph_node_graph(n(hNode))? as usize));
        Ok(())
    }
}

api! {
    fn cuGraphNodeGetLocalId(hNode: CUgraphNode, nodeId: *mut c_uint) {
        let out = Out::new(nodeId, "nodeId")?;
        out.set(drv()?.graph_node_local_id(n(hNode))?);
        Ok(())
    }
}

api! {
    fn cuGraphNodeGetToolsId(hNode: CUgraphNode, toolsNodeId: *mut c_ulonglong) {
        let out = Out::new(toolsNodeId, "toolsNodeId")?;
        let d = drv()?;
        let graph = d.graph_node_graph(n(hNode))?;
        out.set(((d.graph_id(graph)? as u64) << 32) | d.graph_node_local_id(n(hNode))? as u64);
        Ok(())
    }
}

api! {
    fn cuGraphGetId(hGraph: CUgraph, graphId: *mut c_uint) {
        let out = Out::new(graphId, "graphId")?;
        out.set(drv()?.graph_id(g(hGraph))?);
        Ok(())
    }
}

api! {
    fn cuGraphDebugDotPrint(hGraph: CUgraph, path: *const c_char, flags: c_uint) {
        let p = crate::util::cstr(path, "path")?;
        let dot = drv()?.graph_debug_dot(g(hGraph), flags)?;
        std::fs::write(p, dot).map_err(|e| Error::OperatingSystem(format!("cannot write {p}: {e}")))
    }
}

// ---- kernel nodes ----

api! {
    fn cuGraphAddKernelNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v1) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::Kernel(kernel_spec_v1(nodeParams)?))
    }
}

api! {
    fn cuGraphAddKernelNode_v2(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_KERNEL_NODE_PARAMS) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::Kernel(kernel_spec_v2(nodeParams)?))
    }
}

api! {
    fn cuGraphKernelNodeGetParams(hNode: CUgraphNode, nodeParams: *mut CUDA_KERNEL_NODE_PARAMS_v1) {
        let out = Out::new(nodeParams, "nodeParams")?;
        let k = params_of(hNode, "kernel", |i| match i { NodeInfo::Kernel(k) => Some(k), _ => None })?;
        let v = kernel_out(&k);
        out.set(CUDA_KERNEL_NODE_PARAMS_v1 {
            func: v.func,
            gridDimX: v.gridDimX,
            gridDimY: v.gridDimY,
            gridDimZ: v.gridDimZ,
            blockDimX: v.blockDimX,
            blockDimY: v.blockDimY,
            blockDimZ: v.blockDimZ,
            sharedMemBytes: v.sharedMemBytes,
            kernelParams: v.kernelParams,
            extra: v.extra,
        });
        Ok(())
    }
}

api! {
    fn cuGraphKernelNodeGetParams_v2(hNode: CUgraphNode, nodeParams: *mut CUDA_KERNEL_NODE_PARAMS) {
        let out = Out::new(nodeParams, "nodeParams")?;
        let k = params_of(hNode, "kernel", |i| match i { NodeInfo::Kernel(k) => Some(k), _ => None })?;
        out.set(kernel_out(&k));
        Ok(())
    }
}

api! {
    fn cuGraphKernelNodeSetParams(hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v1) {
        drv()?.graph_node_set_params(n(hNode), NodeInfoIn::Kernel(kernel_spec_v1(nodeParams)?))
    }
}

api! {
    fn cuGraphKernelNodeSetParams_v2(hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS) {
        drv()?.graph_node_set_params(n(hNode), NodeInfoIn::Kernel(kernel_spec_v2(nodeParams)?))
    }
}

api! {
    fn cuGraphKernelNodeGetAttribute(hNode: CUgraphNode, attr: CUkernelNodeAttrID, value_out: *mut CUkernelNodeAttrValue) {
        if value_out.is_null() {
            return Err(Error::InvalidValue("value_out is NULL".into()));
        }
        let v = drv()?.graph_kernel_node_attribute(n(hNode), attr.0)?;
        std::ptr::copy_nonoverlapping(v.as_ptr(), value_out.cast::<u8>(), 64);
        Ok(())
    }
}

api! {
    fn cuGraphKernelNodeSetAttribute(hNode: CUgraphNode, attr: CUkernelNodeAttrID, value: *const CUkernelNodeAttrValue) {
        if value.is_null() {
            return Err(Error::InvalidValue("value is NULL".into()));
        }
        let mut v = [0u8; 64];
        std::ptr::copy_nonoverlapping(value.cast::<u8>(), v.as_mut_ptr(), 64);
        drv()?.graph_kernel_node_set_attribute(n(hNode), attr.0, v)
    }
}

api! {
    fn cuGraphKernelNodeCopyAttributes(dst: CUgraphNode, src: CUgraphNode) {
        drv()?.graph_kernel_node_copy_attributes(n(dst), n(src))
    }
}

// ---- memcpy, memset, host, empty, child, event and memory nodes ----

api! {
    fn cuGraphAddMemcpyNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, copyParams: *const CUDA_MEMCPY3D, ctx: CUcontext) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        let copy = crate::api_memory::copy3d(copyParams)?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::Memcpy { ctx: ctx.addr() as u64, copy })
    }
}

api! {
    fn cuGraphMemcpyNodeGetParams(hNode: CUgraphNode, nodeParams: *mut CUDA_MEMCPY3D) {
        let out = Out::new(nodeParams, "nodeParams")?;
        let copy = params_of(hNode, "memcpy", |i| match i { NodeInfo::Memcpy { copy, .. } => Some(copy), _ => None })?;
        out.set(memcpy3d_out(&copy));
        Ok(())
    }
}

api! {
    fn cuGraphMemcpyNodeSetParams(hNode: CUgraphNode, nodeParams: *const CUDA_MEMCPY3D) {
        let copy = crate::api_memory::copy3d(nodeParams)?;
        let ctx = params_of(hNode, "memcpy", |i| match i { NodeInfo::Memcpy { ctx, .. } => Some(ctx), _ => None })?;
        drv()?.graph_node_set_params(n(hNode), NodeInfoIn::Memcpy { ctx, copy })
    }
}

api! {
    fn cuGraphAddMemsetNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, memsetParams: *const CUDA_MEMSET_NODE_PARAMS, ctx: CUcontext) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::Memset(memset_spec(memsetParams, ctx)?))
    }
}

api! {
    fn cuGraphMemsetNodeGetParams(hNode: CUgraphNode, nodeParams: *mut CUDA_MEMSET_NODE_PARAMS) {
        let out = Out::new(nodeParams, "nodeParams")?;
        let m = params_of(hNode, "memset", |i| match i { NodeInfo::Memset(m) => Some(m), _ => None })?;
        out.set(memset_out(&m));
        Ok(())
    }
}

api! {
    fn cuGraphMemsetNodeSetParams(hNode: CUgraphNode, nodeParams: *const CUDA_MEMSET_NODE_PARAMS) {
        let old = params_of(hNode, "memset", |i| match i { NodeInfo::Memset(old) => Some(old), _ => None })?;
        let spec = memset_spec(nodeParams, CUcontext::from_addr(old.ctx as usize))?;
        drv()?.graph_node_set_params(n(hNode), NodeInfoIn::Memset(spec))
    }
}

api! {
    fn cuGraphAddHostNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *const CUDA_HOST_NODE_PARAMS) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::Host(host_spec(nodeParams)?))
    }
}

api! {
    fn cuGraphHostNodeGetParams(hNode: CUgraphNode, nodeParams: *mut CUDA_HOST_NODE_PARAMS) {
        let out = Out::new(nodeParams, "nodeParams")?;
        let f = params_of(hNode, "host", |i| match i { NodeInfo::Host(f) => Some(f), _ => None })?;
        out.set(CUDA_HOST_NODE_PARAMS {
            fn_: std::mem::transmute::<usize, CUhostFn>(f.fn_ptr),
            userData: f.user_data as *mut c_void,
        });
        Ok(())
    }
}

api! {
    fn cuGraphHostNodeSetParams(hNode: CUgraphNode, nodeParams: *const CUDA_HOST_NODE_PARAMS) {
        drv()?.graph_node_set_params(n(hNode), NodeInfoIn::Host(host_spec(nodeParams)?))
    }
}

api! {
    fn cuGraphAddEmptyNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::Empty)
    }
}

api! {
    fn cuGraphAddChildGraphNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, childGraph: CUgraph) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::Graph { graph: g(childGraph), moved: false })
    }
}

api! {
    fn cuGraphChildGraphNodeGetGraph(hNode: CUgraphNode, phGraph: *mut CUgraph) {
        let out = Out::new(phGraph, "phGraph")?;
        let child = params_of(hNode, "child graph", |i| match i { NodeInfo::Graph(child) => Some(child), _ => None })?;
        out.set(CUgraph::from_addr(child as usize));
        Ok(())
    }
}

api! {
    fn cuGraphAddEventRecordNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, event: CUevent) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::EventRecord(event.addr() as u64))
    }
}

api! {
    fn cuGraphEventRecordNodeGetEvent(hNode: CUgraphNode, event_out: *mut CUevent) {
        let out = Out::new(event_out, "event_out")?;
        let e = params_of(hNode, "event record", |i| match i { NodeInfo::EventRecord(e) => Some(e), _ => None })?;
        out.set(CUevent::from_addr(e as usize));
        Ok(())
    }
}

api! {
    fn cuGraphEventRecordNodeSetEvent(hNode: CUgraphNode, event: CUevent) {
        drv()?.graph_node_set_params(n(hNode), NodeInfoIn::EventRecord(event.addr() as u64))
    }
}

api! {
    fn cuGraphAddEventWaitNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, event: CUevent) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::EventWait(event.addr() as u64))
    }
}

api! {
    fn cuGraphEventWaitNodeGetEvent(hNode: CUgraphNode, event_out: *mut CUevent) {
        let out = Out::new(event_out, "event_out")?;
        let e = params_of(hNode, "event wait", |i| match i { NodeInfo::EventWait(e) => Some(e), _ => None })?;
        out.set(CUevent::from_addr(e as usize));
        Ok(())
    }
}

api! {
    fn cuGraphEventWaitNodeSetEvent(hNode: CUgraphNode, event: CUevent) {
        drv()?.graph_node_set_params(n(hNode), NodeInfoIn::EventWait(event.addr() as u64))
    }
}

/// Writes an allocation node's parameters; the access descriptors are
/// kept per node so the pointer stays valid while it lives.
unsafe fn alloc_out(out: *mut CUDA_MEM_ALLOC_NODE_PARAMS, hNode: CUgraphNode, spec: &MemAllocSpec, dptr: u64) {
    static DESCS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<u64, Box<[CUmemAccessDesc]>>>> =
        std::sync::OnceLock::new();
    let descs: Box<[CUmemAccessDesc]> = spec
        .access
        .iter()
        .map(|&(t, d, f)| CUmemAccessDesc { location: CUmemLocation { type_: CUmemLocationType(t), id: d }, flags: CUmemAccess_flags(f) })
        .collect();
    let mut map = DESCS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    let kept = map.entry(n(hNode)).or_insert(descs);
    let mut props: CUmemPoolProps = std::mem::zeroed();
    props.allocType = CUmemAllocationType(spec.alloc_type);
    props.handleTypes = CUmemAllocationHandleType(spec.handle_types);
    props.location = CUmemLocation { type_: CUmemLocationType(spec.location_type), id: spec.device };
    out.write_unaligned(CUDA_MEM_ALLOC_NODE_PARAMS {
        poolProps: props,
        accessDescs: if kept.is_empty() { std::ptr::null() } else { kept.as_ptr() },
        accessDescCount: kept.len(),
        bytesize: spec.bytesize,
        dptr,
    });
}

api! {
    fn cuGraphAddMemAllocNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *mut CUDA_MEM_ALLOC_NODE_PARAMS) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        let spec = alloc_spec(nodeParams)?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::MemAlloc(spec))?;
        let NodeInfo::MemAlloc { dptr, .. } = drv()?.graph_node_params(n(phGraphNode.read_unaligned()))? else {
            return Err(Error::Unknown("allocation node without an allocation".into()));
        };
        (*nodeParams).dptr = dptr;
        Ok(())
    }
}

api! {
    fn cuGraphMemAllocNodeGetParams(hNode: CUgraphNode, params_out: *mut CUDA_MEM_ALLOC_NODE_PARAMS) {
        Out::new(params_out, "params_out")?;
        let (spec, dptr) = params_of(hNode, "memory allocation", |i| match i { NodeInfo::MemAlloc { spec, dptr } => Some((spec, dptr)), _ => None })?;
        alloc_out(params_out, hNode, &spec, dptr);
        Ok(())
    }
}

api! {
    fn cuGraphAddMemFreeNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, dptr: CUdeviceptr) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add(phGraphNode, hGraph, &deps, NodeInfoIn::MemFree(dptr))
    }
}

api! {
    fn cuGraphMemFreeNodeGetParams(hNode: CUgraphNode, dptr_out: *mut CUdeviceptr) {
        let out = Out::new(dptr_out, "dptr_out")?;
        let p = params_of(hNode, "memory free", |i| match i { NodeInfo::MemFree(p) => Some(p), _ => None })?;
        out.set(p);
        Ok(())
    }
}

// ---- the generic node API ----

/// A node description from `CUgraphNodeParams`.
unsafe fn generic_in<'a>(p: *const CUgraphNodeParams) -> Result<NodeInfoIn<'a>, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue("nodeParams is NULL".into()));
    }
    let np = p.read_unaligned();
    if np.reserved0 != [0; 3] || np.reserved2 != 0 {
        return Err(Error::InvalidValue("reserved fields of CUgraphNodeParams must be zero".into()));
    }
    let u = np.params;
    use CUgraphNodeType as T;
    Ok(match np.type_ {
        T::CU_GRAPH_NODE_TYPE_KERNEL => NodeInfoIn::Kernel(kernel_spec_v2(&u.kernel)?),
        T::CU_GRAPH_NODE_TYPE_MEMCPY => {
            let m = u.memcpy;
            if m.flags != 0 || m.reserved != 0 {
                return Err(Error::InvalidValue("memcpy node flags must be zero".into()));
            }
            NodeInfoIn::Memcpy { ctx: m.copyCtx.addr() as u64, copy: crate::api_memory::copy3d(&m.copyParams)? }
        }
        T::CU_GRAPH_NODE_TYPE_MEMSET => {
            let m = u.memset;
            NodeInfoIn::Memset(MemsetSpec {
                dst: m.dst,
                pitch: m.pitch,
                value: m.value,
                element_size: m.elementSize,
                width: m.width,
                height: m.height,
                ctx: m.ctx.addr() as u64,
            })
        }
        T::CU_GRAPH_NODE_TYPE_HOST => {
            let h = u.host;
            if h.syncMode > 1 {
                return Err(Error::InvalidValue(format!("unknown host node sync mode {}", h.syncMode)));
            }
            NodeInfoIn::Host(host_fn(h.fn_, h.userData)?)
        }
        T::CU_GRAPH_NODE_TYPE_GRAPH => {
            let c = u.graph;
            let moved = match c.ownership {
                CUgraphChildGraphNodeOwnership::CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE => false,
                CUgraphChildGraphNodeOwnership::CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE => true,
                o => return Err(Error::InvalidValue(format!("unknown child graph ownership {}", o.0))),
            };
            NodeInfoIn::Graph { graph: g(c.graph), moved }
        }
        T::CU_GRAPH_NODE_TYPE_EMPTY => NodeInfoIn::Empty,
        T::CU_GRAPH_NODE_TYPE_WAIT_EVENT => NodeInfoIn::EventWait(u.eventWait.event.addr() as u64),
        T::CU_GRAPH_NODE_TYPE_EVENT_RECORD => NodeInfoIn::EventRecord(u.eventRecord.event.addr() as u64),
        T::CU_GRAPH_NODE_TYPE_MEM_ALLOC => NodeInfoIn::MemAlloc(alloc_spec(&u.alloc)?),
        T::CU_GRAPH_NODE_TYPE_MEM_FREE => NodeInfoIn::MemFree(u.free.dptr),
        t => return Err(Error::NotSupported(format!("graph nodes of type {t:?}"))),
    })
}

unsafe fn add_generic(
    phGraphNode: *mut CUgraphNode,
    hGraph: CUgraph,
    deps: &[u64],
    nodeParams: *mut CUgraphNodeParams,
) -> Result<(), Error> {
    let info = generic_in(nodeParams)?;
    let alloc = matches!(info, NodeInfoIn::MemAlloc(_));
    add(phGraphNode, hGraph, deps, info)?;
    if alloc {
        if let NodeInfo::MemAlloc { dptr, .. } = drv()?.graph_node_params(n(phGraphNode.read_unaligned()))? {
            (*nodeParams).params.alloc.dptr = dptr;
        }
    }
    Ok(())
}

api! {
    fn cuGraphAddNode(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, numDependencies: usize, nodeParams: *mut CUgraphNodeParams) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        add_generic(phGraphNode, hGraph, &deps, nodeParams)
    }
}

api! {
    fn cuGraphAddNode_v2(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, dependencyData: *const CUgraphEdgeData, numDependencies: usize, nodeParams: *mut CUgraphNodeParams) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        check_edge_data(dependencyData, numDependencies)?;
        add_generic(phGraphNode, hGraph, &deps, nodeParams)
    }
}

api! {
    fn cuGraphAddNode_v3(phGraphNode: *mut CUgraphNode, hGraph: CUgraph, dependencies: *const CUgraphNode, dependencyData: *const CUgraphEdgeData, numDependencies: usize, nodeParams: *mut CUgraphNodeParams) {
        let deps = node_list(dependencies, numDependencies, "dependencies")?;
        check_edge_data(dependencyData, numDependencies)?;
        add_generic(phGraphNode, hGraph, &deps, nodeParams)
    }
}

api! {
    fn cuGraphNodeSetParams(hNode: CUgraphNode, nodeParams: *mut CUgraphNodeParams) {
        drv()?.graph_node_set_params(n(hNode), generic_in(nodeParams)?)
    }
}

api! {
    fn cuGraphNodeSetParams_v2(hNode: CUgraphNode, nodeParams: *mut CUgraphNodeParams) {
        drv()?.graph_node_set_params(n(hNode), generic_in(nodeParams)?)
    }
}

api! {
    fn cuGraphNodeGetParams(hNode: CUgraphNode, nodeParams: *mut CUgraphNodeParams) {
        Out::new(nodeParams, "nodeParams")?;
        let info = drv()?.graph_node_params(n(hNode))?;
        let mut out: CUgraphNodeParams = std::mem::zeroed();
        use CUgraphNodeType as T;
        match info {
            NodeInfo::Kernel(k) => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_KERNEL;
                out.params.kernel = kernel_out(&k);
            }
            NodeInfo::Memcpy { ctx, copy } => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_MEMCPY;
                out.params.memcpy = CUDA_MEMCPY_NODE_PARAMS { flags: 0, reserved: 0, copyCtx: CUcontext::from_addr(ctx as usize), copyParams: memcpy3d_out(&copy) };
            }
            NodeInfo::Memset(m) => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_MEMSET;
                out.params.memset = CUDA_MEMSET_NODE_PARAMS_v2 {
                    dst: m.dst,
                    pitch: m.pitch,
                    value: m.value,
                    elementSize: m.element_size,
                    width: m.width,
                    height: m.height,
                    ctx: CUcontext::from_addr(m.ctx as usize),
                };
            }
            NodeInfo::Host(f) => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_HOST;
                out.params.host = CUDA_HOST_NODE_PARAMS_v2 {
                    fn_: std::mem::transmute::<usize, CUhostFn>(f.fn_ptr),
                    userData: f.user_data as *mut c_void,
                    syncMode: 0,
                    ctx: CUcontext::NULL,
                };
            }
            NodeInfo::Graph(c) => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_GRAPH;
                out.params.graph = CUDA_CHILD_GRAPH_NODE_PARAMS {
                    graph: CUgraph::from_addr(c as usize),
                    ownership: CUgraphChildGraphNodeOwnership::CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE,
                };
            }
            NodeInfo::Empty => out.type_ = T::CU_GRAPH_NODE_TYPE_EMPTY,
            NodeInfo::EventRecord(e) => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_EVENT_RECORD;
                out.params.eventRecord = CUDA_EVENT_RECORD_NODE_PARAMS { event: CUevent::from_addr(e as usize), ctx: CUcontext::NULL };
            }
            NodeInfo::EventWait(e) => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_WAIT_EVENT;
                out.params.eventWait = CUDA_EVENT_WAIT_NODE_PARAMS { event: CUevent::from_addr(e as usize) };
            }
            NodeInfo::MemAlloc { spec, dptr } => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_MEM_ALLOC;
                let mut a: CUDA_MEM_ALLOC_NODE_PARAMS = std::mem::zeroed();
                alloc_out(&mut a, hNode, &spec, dptr);
                out.params.alloc = a;
            }
            NodeInfo::MemFree(p) => {
                out.type_ = T::CU_GRAPH_NODE_TYPE_MEM_FREE;
                out.params.free = CUDA_MEM_FREE_NODE_PARAMS { dptr: p };
            }
        }
        nodeParams.write_unaligned(out);
        Ok(())
    }
}

// ---- executable graphs ----

fn instantiate(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, flags: u64) -> Result<u64, Error> {
    let out = Out::new(phGraphExec, "phGraphExec")?;
    let h = drv()?.graph_instantiate(g(hGraph), flags).map_err(|f| f.error)?;
    out.set(CUgraphExec::from_addr(h as usize));
    Ok(h)
}

/// The pre-CUDA 12 form: an error node and a log buffer.
unsafe fn instantiate_v1(
    phGraphExec: *mut CUgraphExec,
    hGraph: CUgraph,
    phErrorNode: *mut CUgraphNode,
    logBuffer: *mut c_char,
    bufferSize: usize,
) -> Result<(), Error> {
    let out = Out::new(phGraphExec, "phGraphExec")?;
    match drv()?.graph_instantiate(g(hGraph), 0) {
        Ok(h) => {
            out.set(CUgraphExec::from_addr(h as usize));
            set_opt(phErrorNode, CUgraphNode::NULL);
            if !logBuffer.is_null() && bufferSize > 0 {
                *logBuffer = 0;
            }
            Ok(())
        }
        Err(f) => {
            set_opt(phErrorNode, node(f.node));
            if !logBuffer.is_null() && bufferSize > 0 {
                let _ = crate::util::write_cstr(logBuffer, bufferSize.min(i32::MAX as usize) as i32, &f.error.to_string());
            }
            Err(f.error)
        }
    }
}

api! {
    fn cuGraphInstantiate(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, phErrorNode: *mut CUgraphNode, logBuffer: *mut c_char, bufferSize: usize) {
        instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize)
    }
}

api! {
    fn cuGraphInstantiate_v2(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, phErrorNode: *mut CUgraphNode, logBuffer: *mut c_char, bufferSize: usize) {
        instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize)
    }
}

api! {
    fn cuGraphInstantiateWithFlags(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, flags: c_ulonglong) {
        if flags & driver::INSTANTIATE_UPLOAD != 0 {
            return Err(Error::InvalidValue("CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD needs cuGraphInstantiateWithParams".into()));
        }
        instantiate(phGraphExec, hGraph, flags).map(|_| ())
    }
}

api! {
    fn cuGraphInstantiateWithParams / cuGraphInstantiateWithParams_ptsz [ptds] (phGraphExec: *mut CUgraphExec, hGraph: CUgraph, instantiateParams: *mut CUDA_GRAPH_INSTANTIATE_PARAMS) {
        if instantiateParams.is_null() {
            return Err(Error::InvalidValue("instantiateParams is NULL".into()));
        }
        let p = instantiateParams.read_unaligned();
        let out = Out::new(phGraphExec, "phGraphExec")?;
        let d = drv()?;
        let set = |result: u32, errnode: u64| {
            let mut q = instantiateParams.read_unaligned();
            q.result_out = CUgraphInstantiateResult(result);
            q.hErrNode_out = node(errnode);
            instantiateParams.write_unaligned(q);
        };
        match d.graph_instantiate(g(hGraph), p.flags) {
            Ok(h) => {
                out.set(CUgraphExec::from_addr(h as usize));
                set(0, 0);
                if p.flags & driver::INSTANTIATE_UPLOAD != 0 {
                    d.graph_upload(h, p.hUploadStream.addr() as u64, ptds)?;
                }
                Ok(())
            }
            Err(f) => {
                set(f.result, f.node);
                Err(f.error)
            }
        }
    }
}

api! {
    fn cuGraphExecDestroy(hGraphExec: CUgraphExec) {
        drv()?.graph_exec_destroy(x(hGraphExec))
    }
}

api! {
    fn cuGraphExecGetFlags(hGraphExec: CUgraphExec, flags: *mut cuuint64_t) {
        let out = Out::new(flags, "flags")?;
        out.set(drv()?.graph_exec_flags(x(hGraphExec))?);
        Ok(())
    }
}

api! {
    fn cuGraphExecGetId(hGraphExec: CUgraphExec, graphId: *mut c_uint) {
        let out = Out::new(graphId, "graphId")?;
        out.set(drv()?.graph_exec_id(x(hGraphExec))?);
        Ok(())
    }
}

api! {
    fn cuGraphLaunch / cuGraphLaunch_ptsz [ptds] (hGraphExec: CUgraphExec, hStream: CUstream) {
        drv()?.graph_launch(x(hGraphExec), hStream.addr() as u64, ptds)
    }
}

api! {
    fn cuGraphUpload / cuGraphUpload_ptsz [ptds] (hGraphExec: CUgraphExec, hStream: CUstream) {
        drv()?.graph_upload(x(hGraphExec), hStream.addr() as u64, ptds)
    }
}

api! {
    fn cuGraphExecUpdate_v2(hGraphExec: CUgraphExec, hGraph: CUgraph, resultInfo: *mut CUgraphExecUpdateResultInfo) {
        let out = Out::new(resultInfo, "resultInfo")?;
        match drv()?.graph_exec_update(x(hGraphExec), g(hGraph)) {
            Ok(()) => {
                out.set(CUgraphExecUpdateResultInfo {
                    result: CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS,
                    errorNode: CUgraphNode::NULL,
                    errorFromNode: CUgraphNode::NULL,
                });
                Ok(())
            }
            Err(f) => {
                out.set(CUgraphExecUpdateResultInfo { result: CUgraphExecUpdateResult(f.result), errorNode: node(f.node), errorFromNode: node(f.from) });
                Err(Error::GraphExecUpdateFailure(f.reason))
            }
        }
    }
}

api! {
    fn cuGraphExecUpdate(hGraphExec: CUgraphExec, hGraph: CUgraph, hErrorNode_out: *mut CUgraphNode, updateResult_out: *mut CUgraphExecUpdateResult) {
        let out = Out::new(updateResult_out, "updateResult_out")?;
        match drv()?.graph_exec_update(x(hGraphExec), g(hGraph)) {
            Ok(()) => {
                out.set(CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS);
                set_opt(hErrorNode_out, CUgraphNode::NULL);
                Ok(())
            }
            Err(f) => {
                out.set(CUgraphExecUpdateResult(f.result));
                set_opt(hErrorNode_out, node(f.node));
                Err(Error::GraphExecUpdateFailure(f.reason))
            }
        }
    }
}

api! {
    fn cuGraphExecKernelNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS_v1) {
        drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), NodeInfoIn::Kernel(kernel_spec_v1(nodeParams)?))
    }
}

api! {
    fn cuGraphExecKernelNodeSetParams_v2(hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_KERNEL_NODE_PARAMS) {
        drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), NodeInfoIn::Kernel(kernel_spec_v2(nodeParams)?))
    }
}

api! {
    fn cuGraphExecMemcpyNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, copyParams: *const CUDA_MEMCPY3D, ctx: CUcontext) {
        let copy = crate::api_memory::copy3d(copyParams)?;
        drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), NodeInfoIn::Memcpy { ctx: ctx.addr() as u64, copy })
    }
}

api! {
    fn cuGraphExecMemsetNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, memsetParams: *const CUDA_MEMSET_NODE_PARAMS, ctx: CUcontext) {
        drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), NodeInfoIn::Memset(memset_spec(memsetParams, ctx)?))
    }
}

api! {
    fn cuGraphExecHostNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const CUDA_HOST_NODE_PARAMS) {
        drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), NodeInfoIn::Host(host_spec(nodeParams)?))
    }
}

api! {
    fn cuGraphExecChildGraphNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, childGraph: CUgraph) {
        drv()?.graph_exec_child_set_params(x(hGraphExec), n(hNode), g(childGraph))
    }
}

api! {
    fn cuGraphExecEventRecordNodeSetEvent(hGraphExec: CUgraphExec, hNode: CUgraphNode, event: CUevent) {
        drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), NodeInfoIn::EventRecord(event.addr() as u64))
    }
}

api! {
    fn cuGraphExecEventWaitNodeSetEvent(hGraphExec: CUgraphExec, hNode: CUgraphNode, event: CUevent) {
        drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), NodeInfoIn::EventWait(event.addr() as u64))
    }
}

api! {
    fn cuGraphExecNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *mut CUgraphNodeParams) {
        match generic_in(nodeParams)? {
            NodeInfoIn::Graph { graph, .. } => drv()?.graph_exec_child_set_params(x(hGraphExec), n(hNode), graph),
            info => drv()?.graph_exec_node_set_params(x(hGraphExec), n(hNode), info),
        }
    }
}

api! {
    fn cuGraphNodeSetEnabled(hGraphExec: CUgraphExec, hNode: CUgraphNode, isEnabled: c_uint) {
        drv()?.graph_node_set_enabled(x(hGraphExec), n(hNode), isEnabled != 0)
    }
}

api! {
    fn cuGraphNodeGetEnabled(hGraphExec: CUgraphExec, hNode: CUgraphNode, isEnabled: *mut c_uint) {
        let out = Out::new(isEnabled, "isEnabled")?;
        out.set(drv()?.graph_node_get_enabled(x(hGraphExec), n(hNode))? as c_uint);
        Ok(())
    }
}

// ---- graph memory ----

api! {
    fn cuDeviceGraphMemTrim(device: CUdevice) {
        drv()?.device_graph_mem_trim(device)
    }
}

api! {
    fn cuDeviceGetGraphMemAttribute(device: CUdevice, attr: CUgraphMem_attribute, value: *mut c_void) {
        let out = Out::new(value.cast::<u64>(), "value")?;
        out.set(drv()?.device_graph_mem_attribute(device, attr.0)?);
        Ok(())
    }
}

api! {
    fn cuDeviceSetGraphMemAttribute(device: CUdevice, attr: CUgraphMem_attribute, value: *mut c_void) {
        if value.is_null() {
            return Err(Error::InvalidValue("value is NULL".into()));
        }
        drv()?.device_set_graph_mem_attribute(device, attr.0, value.cast::<u64>().read_unaligned())
    }
}
