//! CUDA graphs: graphs of nodes (kernel launches, copies, memsets, host
//! functions, events, memory allocation and free, child graphs, empty
//! nodes) and the dependencies between them, built with the node API or by
//! stream capture ([`crate::capture`]), and turned into executable graphs
//! ([`crate::graph_exec`]).
//!
//! A [`Graph`] keeps its nodes in insertion order (the order
//! `cuGraphGetNodes` reports and `cuGraphExecUpdate` pairs nodes by), each
//! with its ordered dependencies and its parameters. Parameters are
//! checked when a node is added or changed, as CUDA checks them: a kernel
//! node's configuration against the device and the function, its
//! arguments copied into a parameter buffer; a copy's or memset's ranges
//! against the memory they name. Node handles are registered driver-wide
//! so that any node handle finds its graph.
//!
//! Memory allocation nodes allocate when they are added: the address is
//! fixed for the graph's life, as CUDA promises, and the memory stays with
//! the graph (and its executable graph) until both are destroyed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use cuda_types::CUgraphNodeType as NT;

use crate::backend::MemsetValue;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::handle::{lock, new_handle, HandleKind};
use crate::launch::{KernelArgs, LaunchConfig};
use crate::memory::Memcpy3D;
use crate::module::Function;
use crate::Driver;

static NEXT_GRAPH_ID: AtomicU32 = AtomicU32::new(1);

/// A host function as a node runs it: callable any number of times, and
/// the C function pointer and user data it came from (for
/// `cuGraphHostNodeGetParams` and for telling nodes apart).
#[derive(Clone)]
pub struct HostFn {
    pub call: Arc<dyn Fn() + Send + Sync>,
    pub fn_ptr: usize,
    pub user_data: usize,
}

impl HostFn {
    /// A host function with no C identity (for callers in Rust).
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> HostFn {
        HostFn { call: Arc::new(f), fn_ptr: 0, user_data: 0 }
    }
}

impl<F: Fn() + Send + Sync + 'static> From<Box<F>> for HostFn {
    fn from(f: Box<F>) -> HostFn {
        HostFn { call: Arc::from(f as Box<dyn Fn() + Send + Sync>), fn_ptr: 0, user_data: 0 }
    }
}

impl std::fmt::Debug for HostFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostFn({:#x}, {:#x})", self.fn_ptr, self.user_data)
    }
}

/// A kernel launch node.
#[derive(Clone)]
pub(crate) struct KernelNode {
    /// The function, in the context the node runs in.
    pub func: Arc<Function>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub cooperative: bool,
    pub priority: i32,
    pub params: Arc<[u8]>,
    /// Launch attributes set with `cuGraphKernelNodeSetAttribute`, by id,
    /// as given (64-byte `CUlaunchAttributeValue`s).
    pub attrs: Vec<(u32, [u8; 64])>,
}

impl KernelNode {
    pub(crate) fn new(func: Arc<Function>, cfg: &LaunchConfig, params: Vec<u8>) -> KernelNode {
        KernelNode {
            func,
            grid: cfg.grid,
            block: cfg.block,
            shared_bytes: cfg.shared_bytes,
            cooperative: cfg.cooperative,
            priority: 0,
            params: params.into(),
            attrs: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemcpyNode {
    pub ctx: u64,
    pub copy: Memcpy3D,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemsetNode {
    pub ctx: u64,
    pub dst: u64,
    pub pitch: usize,
    pub value: MemsetValue,
    /// Elements per row.
    pub width: usize,
    pub height: usize,
}

/// Memory of an allocation node: allocated when the node is added, freed
/// when neither a graph nor an executable graph refers to it any more.
pub(crate) struct GraphMem {
    pub addr: u64,
    pub size: usize,
    pub device: usize,
    /// `(location type, device, CUmemAccess_flags)` of the node's
    /// access descriptors, as given.
    pub access: Vec<(u32, i32, u32)>,
    /// Allocated by a launch and not freed since (by a free node, a
    /// `cuMemFree[Async]`, or an auto-free relaunch).
    pub live: AtomicBool,
    /// The graph holding a free node for it, if any.
    pub freed_by: Mutex<Option<u64>>,
}

#[derive(Clone)]
pub(crate) enum NodeParams {
    Kernel(KernelNode),
    Memcpy(MemcpyNode),
    Memset(MemsetNode),
    Host(HostFn),
    /// A child graph, owned by the node.
    Graph(Arc<Graph>),
    Empty,
    EventRecord(Arc<Event>),
    EventWait(Arc<Event>),
    MemAlloc(Arc<GraphMem>),
    MemFree(u64),
}

impl NodeParams {
    pub(crate) fn node_type(&self) -> NT {
        match self {
            NodeParams::Kernel(_) => NT::CU_GRAPH_NODE_TYPE_KERNEL,
            NodeParams::Memcpy(_) => NT::CU_GRAPH_NODE_TYPE_MEMCPY,
            NodeParams::Memset(_) => NT::CU_GRAPH_NODE_TYPE_MEMSET,
            NodeParams::Host(_) => NT::CU_GRAPH_NODE_TYPE_HOST,
            NodeParams::Graph(_) => NT::CU_GRAPH_NODE_TYPE_GRAPH,
            NodeParams::Empty => NT::CU_GRAPH_NODE_TYPE_EMPTY,
            NodeParams::EventRecord(_) => NT::CU_GRAPH_NODE_TYPE_EVENT_RECORD,
            NodeParams::EventWait(_) => NT::CU_GRAPH_NODE_TYPE_WAIT_EVENT,
            NodeParams::MemAlloc(_) => NT::CU_GRAPH_NODE_TYPE_MEM_ALLOC,
            NodeParams::MemFree(_) => NT::CU_GRAPH_NODE_TYPE_MEM_FREE,
        }
    }

    fn is_mem_node(&self) -> bool {
        matches!(self, NodeParams::MemAlloc(_) | NodeParams::MemFree(_))
    }
}

/// A node as its graph holds it.
#[derive(Clone)]
pub(crate) struct NodeData {
    pub handle: u64,
    pub local_id: u32,
    /// Dependencies, in the order they were added.
    pub deps: Vec<u64>,
    pub params: NodeParams,
}

#[derive(Default)]
pub(crate) struct GraphData {
    /// In insertion order.
    pub nodes: Vec<NodeData>,
    /// Node handle -> position in `nodes`.
    pub index: HashMap<u64, usize>,
    next_local_id: u32,
}

impl GraphData {
    pub(crate) fn node(&self, h: u64) -> Option<&NodeData> {
        self.index.get(&h).and_then(|&i| self.nodes.get(i))
    }

    fn node_mut(&mut self, h: u64) -> Option<&mut NodeData> {
        self.index.get(&h).copied().and_then(move |i| self.nodes.get_mut(i))
    }

    fn reindex(&mut self) {
        self.index = self.nodes.iter().enumerate().map(|(i, n)| (n.handle, i)).collect();
    }

    /// Whether it (or a child graph in it) has allocation or free nodes.
    pub(crate) fn has_mem_nodes(&self) -> bool {
        self.nodes.iter().any(|n| match &n.params {
            NodeParams::Graph(g) => lock(&g.st).has_mem_nodes(),
            p => p.is_mem_node(),
        })
    }

    /// The nodes that depend on `h`, in insertion order.
    pub(crate) fn dependents(&self, h: u64) -> Vec<u64> {
        self.nodes.iter().filter(|n| n.deps.contains(&h)).map(|n| n.handle).collect()
    }

    /// Positions in an order where every node follows its dependencies
    /// (ties broken by insertion order); `None` when the edges form a
    /// cycle.
    pub(crate) fn topological_order(&self) -> Option<Vec<usize>> {
        let n = self.nodes.len();
        let mut indegree = vec![0usize; n];
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, node) in self.nodes.iter().enumerate() {
            for d in &node.deps {
                let &j = self.index.get(d)?;
                indegree[i] += 1;
                out[j].push(i);
            }
        }
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> =
            (0..n).filter(|&i| indegree[i] == 0).map(std::cmp::Reverse).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(std::cmp::Reverse(i)) = ready.pop() {
            order.push(i);
            for &k in &out[i] {
                indegree[k] -= 1;
                if indegree[k] == 0 {
                    ready.push(std::cmp::Reverse(k));
                }
            }
        }
        (order.len() == n).then_some(order)
    }

    /// Every node `from` reaches by following dependencies backwards
    /// (its ancestors), itself included.
    pub(crate) fn ancestors(&self, from: &[u64]) -> HashSet<u64> {
        let mut seen: HashSet<u64> = HashSet::new();
        let mut queue: VecDeque<u64> = from.iter().copied().collect();
        while let Some(h) = queue.pop_front() {
            if !seen.insert(h) {
                continue;
            }
            if let Some(n) = self.node(h) {
                queue.extend(n.deps.iter().copied());
            }
        }
        seen
    }
}

pub(crate) struct Graph {
    pub handle: u64,
    pub id: u32,
    pub st: Mutex<GraphData>,
    /// The child graph node that owns this graph (it cannot be destroyed
    /// on its own).
    pub owner: Mutex<Option<u64>>,
    /// Executable graphs instantiated from it and alive (graphs with
    /// memory nodes allow one at a time).
    pub execs: Mutex<Vec<Weak<crate::graph_exec::GraphExec>>>,
}

/// A node handle's graph.
pub(crate) struct NodeRef {
    pub graph: Weak<Graph>,
}

/// What `cuGraphKernelNodeGetParams` reports. `args` points at an array
/// of one pointer per parameter, into a copy of the node's arguments that
/// the driver owns until the node's parameters change or it is destroyed.
#[derive(Debug, Clone, Copy)]
pub struct KernelNodeInfo {
    /// The function in the node's context (`CUfunction`).
    pub func: u64,
    /// The library kernel it is the function of (`CUkernel`), or 0.
    pub kernel: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: usize,
    pub ctx: u64,
}

/// What a kernel node is made from (`CUDA_KERNEL_NODE_PARAMS`).
#[derive(Debug, Clone, Copy)]
pub struct KernelNodeSpec<'a> {
    /// A `CUfunction` or `CUkernel`.
    pub func: u64,
    /// The context a `CUkernel` is resolved in (0: the current one).
    pub ctx: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: KernelArgs<'a>,
}

/// What a memset node is made from (`CUDA_MEMSET_NODE_PARAMS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemsetSpec {
    pub dst: u64,
    pub pitch: usize,
    pub value: u32,
    pub element_size: u32,
    pub width: usize,
    pub height: usize,
    /// 0: the current context.
    pub ctx: u64,
}

/// What a memory allocation node is made from and reports
/// (`CUDA_MEM_ALLOC_NODE_PARAMS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemAllocSpec {
    /// `poolProps.allocType`, `.handleTypes`, `.location`.
    pub alloc_type: u32,
    pub handle_types: u32,
    pub location_type: u32,
    pub device: i32,
    /// `(location type, device, CUmemAccess_flags)`.
    pub access: Vec<(u32, i32, u32)>,
    pub bytesize: usize,
}

/// The parameters of a node, for the generic node API and the `Get`
/// functions; child graphs and events by handle.
#[derive(Debug, Clone)]
pub enum NodeInfo {
    Kernel(KernelNodeInfo),
    Memcpy { ctx: u64, copy: Memcpy3D },
    Memset(MemsetSpec),
    Host(HostFn),
    Graph(u64),
    Empty,
    EventRecord(u64),
    EventWait(u64),
    MemAlloc { spec: MemAllocSpec, dptr: u64 },
    MemFree(u64),
}

/// The arguments of a kernel node as `cuGraphKernelNodeGetParams` hands
/// them out: a copy of the parameter buffer and an array of pointers into
/// it. Both stay where they are until dropped; C may write through them
/// (llama.cpp replaces entries of the pointer array and passes it back to
/// `cuGraphKernelNodeSetParams`), so they are only touched through raw
/// pointers.
pub(crate) struct ExposedArgs {
    bytes: *mut u8,
    bytes_len: usize,
    ptrs: *mut usize,
    ptrs_len: usize,
}

// SAFETY: plain heap memory owned by this value.
unsafe impl Send for ExposedArgs {}
unsafe impl Sync for ExposedArgs {}

impl ExposedArgs {
    fn new(node: &KernelNode) -> ExposedArgs {
        let bytes: Box<[u8]> = node.params.to_vec().into_boxed_slice();
        let bytes_len = bytes.len();
        let bytes = Box::into_raw(bytes) as *mut u8;
        let ptrs: Box<[usize]> = node.func.desc.params.iter().map(|p| bytes as usize + p.offset as usize).collect();
        let ptrs_len = ptrs.len();
        let ptrs = Box::into_raw(ptrs) as *mut usize;
        ExposedArgs { bytes, bytes_len, ptrs, ptrs_len }
    }
}

impl Drop for ExposedArgs {
    fn drop(&mut self) {
        // SAFETY: both came from Box::into_raw of slices of these lengths.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.bytes, self.bytes_len)));
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptrs, self.ptrs_len)));
        }
    }
}

fn no_such_node(h: u64) -> Error {
    Error::invalid(format!("{h:#x} is not a node of a live graph"))
}

impl Driver {
    // ---- graphs ----

    pub(crate) fn new_graph(&self) -> Arc<Graph> {
        self.graphs.insert_with(|h| Graph {
            handle: h,
            id: NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed),
            st: Mutex::new(GraphData::default()),
            owner: Mutex::new(None),
            execs: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn graph(&self, h: u64) -> Result<Arc<Graph>> {
        self.graphs.get(h).ok_or_else(|| Error::invalid(format!("{h:#x} is not a live graph")))
    }

    /// The graph holding node `h`.
    pub(crate) fn graph_of_node(&self, h: u64) -> Result<Arc<Graph>> {
        self.graph_nodes.get(h).and_then(|r| r.graph.upgrade()).ok_or_else(|| no_such_node(h))
    }

    /// `cuGraphCreate` (flags must be 0).
    pub fn graph_create(&self, flags: u32) -> Result<u64> {
        self.check_init()?;
        if flags != 0 {
            return Err(Error::invalid(format!("cuGraphCreate flags must be 0, got {flags:#x}")));
        }
        Ok(self.new_graph().handle)
    }

    /// Unregisters a graph, its nodes and its child graphs.
    pub(crate) fn drop_graph(&self, g: &Graph) {
        let nodes = std::mem::take(&mut *lock(&g.st));
        for n in &nodes.nodes {
            self.forget_node(n);
        }
        self.graphs.remove(g.handle);
        drop(nodes);
        self.collect_graph_mem();
    }

    fn forget_node(&self, n: &NodeData) {
        self.graph_nodes.remove(n.handle);
        lock(&self.exposed_args).remove(&n.handle);
        lock(&self.clone_origins).remove(&n.handle);
        if let NodeParams::Graph(child) = &n.params {
            self.drop_graph(child);
        }
    }

    /// `cuGraphDestroy`.
    pub fn graph_destroy(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let g = self.graph(h)?;
        if let Some(node) = *lock(&g.owner) {
            return Err(Error::invalid(format!("graph {h:#x} belongs to child graph node {node:#x}; destroy that node or its graph")));
        }
        if self.graph_is_capturing(h) {
            return Err(Error::invalid(format!("graph {h:#x} is being captured into; end the capture first")));
        }
        self.drop_graph(&g);
        Ok(())
    }

    /// Frees graph allocations nothing refers to any more.
    pub(crate) fn collect_graph_mem(&self) {
        let dead: Vec<Arc<GraphMem>> = {
            let mut all = lock(&self.graph_mem);
            let (dead, live): (Vec<_>, Vec<_>) = std::mem::take(&mut *all).into_iter().partition(|m| Arc::strong_count(m) == 1);
            *all = live;
            dead
        };
        for m in dead {
            self.mem.remove_graph_mem(m.addr);
            let _ = self.backend.free(m.device, m.addr);
        }
    }

    // ---- adding nodes ----

    fn check_deps(g: &GraphData, deps: &[u64]) -> Result<()> {
        for (i, d) in deps.iter().enumerate() {
            if g.node(*d).is_none() {
                return Err(Error::invalid(format!("dependency {d:#x} is not a node of this graph")));
            }
            if deps[..i].contains(d) {
                return Err(Error::invalid(format!("dependency {d:#x} is listed twice")));
            }
        }
        Ok(())
    }

    /// Adds a node with checked parameters to `g`.
    pub(crate) fn add_node(&self, g: &Arc<Graph>, deps: &[u64], params: NodeParams) -> Result<u64> {
        let mut st = lock(&g.st);
        Self::check_deps(&st, deps)?;
        if params.is_mem_node() && lock(&g.owner).is_some() {
            return Err(Error::NotSupported("memory nodes cannot be added to a graph owned by a child graph node".into()));
        }
        let h = new_handle(HandleKind::GraphNode);
        if let NodeParams::Graph(child) = &params {
            *lock(&child.owner) = Some(h);
        }
        if let NodeParams::MemFree(p) = &params {
            self.claim_graph_free(*p, g.handle)?;
        }
        let local_id = st.next_local_id;
        st.next_local_id += 1;
        let at = st.nodes.len();
        st.nodes.push(NodeData { handle: h, local_id, deps: deps.to_vec(), params });
        st.index.insert(h, at);
        drop(st);
        self.graph_nodes.insert_existing(h, NodeRef { graph: Arc::downgrade(g) });
        Ok(h)
    }

    /// A kernel node's parameters from the application's description.
    ///
    /// # Safety
    /// With [`KernelArgs::Pointers`], the array must hold one valid pointer
    /// per kernel parameter, each to a value of the parameter's size.
    pub(crate) unsafe fn kernel_node(&self, spec: &KernelNodeSpec<'_>) -> Result<KernelNode> {
        let func = if spec.ctx != 0 && crate::handle::handle_kind(spec.func) == Some(HandleKind::Kernel) {
            // The kernel's function in the given context.
            self.ctx_by_handle(spec.ctx)?;
            self.ctx_push(spec.ctx)?;
            let r = self.resolve_function(spec.func);
            let _ = self.ctx_pop();
            r?
        } else {
            self.resolve_function(spec.func)?
        };
        let props = self.device_props(func.device as i32)?.clone();
        let attrs = *lock(&func.attrs);
        // Compiled now if it was not, so that a kernel that cannot be
        // compiled fails here (as its direct launch would), not at a launch
        // of the graph.
        func.code.prepare(func.index).map_err(crate::module::module_error)?;
        let cfg = LaunchConfig { grid: spec.grid, block: spec.block, shared_bytes: spec.shared_bytes, stream: 0, cooperative: false };
        self.check_config(&props, &func.desc, &attrs, &cfg)?;
        // SAFETY: the caller's contract.
        let params = unsafe { crate::launch::build_params(&func.desc, spec.args) }?;
        Ok(KernelNode::new(func, &cfg, params))
    }

    pub(crate) fn memset_node(&self, spec: &MemsetSpec) -> Result<MemsetNode> {
        let value = match spec.element_size {
            1 => MemsetValue::U8(spec.value as u8),
            2 => MemsetValue::U16(spec.value as u16),
            4 => MemsetValue::U32(spec.value),
            e => return Err(Error::invalid(format!("memset element size {e} is not 1, 2 or 4"))),
        };
        let ctx = self.ctx_or_current(spec.ctx)?;
        if spec.width == 0 || spec.height == 0 {
            return Err(Error::invalid("a memset node sets at least one element"));
        }
        self.plan_memset(spec.dst, spec.pitch, value, spec.width, spec.height)?;
        Ok(MemsetNode { ctx: ctx.handle, dst: spec.dst, pitch: spec.pitch, value, width: spec.width, height: spec.height })
    }

    pub(crate) fn memcpy_node(&self, ctx: u64, copy: &Memcpy3D) -> Result<MemcpyNode> {
        let ctx = self.ctx_or_current(ctx)?;
        if self.plan_copy(copy)?.is_none() {
            return Err(Error::invalid("a memcpy node copies at least one byte"));
        }
        Ok(MemcpyNode { ctx: ctx.handle, copy: *copy })
    }

    /// Allocates a memory node's memory; returns it (with its address).
    pub(crate) fn mem_alloc_node(&self, spec: &MemAllocSpec) -> Result<Arc<GraphMem>> {
        if spec.alloc_type != 1 {
            return Err(Error::invalid(format!("allocation type {} is not CU_MEM_ALLOCATION_TYPE_PINNED", spec.alloc_type)));
        }
        if spec.location_type != 1 {
            return Err(Error::NotSupported(format!("allocation node location type {} (devices only)", spec.location_type)));
        }
        if spec.handle_types != 0 {
            return Err(Error::invalid("allocation nodes cannot be exported (handleTypes must be CU_MEM_HANDLE_TYPE_NONE)"));
        }
        self.device_props(spec.device)?;
        let n = self.device_count()?;
        for &(ty, d, f) in &spec.access {
            if ty != 1 || d < 0 || d >= n || crate::vmm::access_from_flags(f).is_none() {
                return Err(Error::invalid(format!("access descriptor (type {ty}, device {d}, flags {f:#x})")));
            }
        }
        if spec.bytesize == 0 {
            return Err(Error::invalid("an allocation node allocates at least one byte"));
        }
        let addr = self.backend.alloc(spec.device as usize, spec.bytesize).map_err(crate::memory::backend_err)?;
        self.mem.insert_graph_mem(addr, spec.bytesize, spec.device as usize);
        let m = Arc::new(GraphMem {
            addr,
            size: spec.bytesize,
            device: spec.device as usize,
            access: spec.access.clone(),
            live: AtomicBool::new(false),
            freed_by: Mutex::new(None),
        });
        lock(&self.graph_mem).push(m.clone());
        self.note_graph_mem_use();
        Ok(m)
    }

    /// The graph allocation that starts at `ptr`.
    pub(crate) fn graph_mem_at(&self, ptr: u64) -> Option<Arc<GraphMem>> {
        lock(&self.graph_mem).iter().find(|m| m.addr == ptr).cloned()
    }

    /// Checks that `ptr` can get a free node in graph `g` and records it.
    fn claim_graph_free(&self, ptr: u64, g: u64) -> Result<()> {
        let m = self.graph_mem_at(ptr).ok_or_else(|| Error::invalid(format!("{ptr:#x} was not returned by a memory allocation node")))?;
        let mut by = lock(&m.freed_by);
        if by.is_some() {
            return Err(Error::invalid(format!("{ptr:#x} already has a free node")));
        }
        *by = Some(g);
        Ok(())
    }

    /// `cuGraphAdd*Node`: adds a node whose parameters the application
    /// described.
    pub fn graph_add_node(&self, graph: u64, deps: &[u64], info: NodeInfoIn<'_>) -> Result<u64> {
        self.check_init()?;
        let g = self.graph(graph)?;
        let params = self.node_params_from(info, &g)?;
        self.add_node(&g, deps, params)
    }

    /// Parameters from an application description.
    fn node_params_from(&self, info: NodeInfoIn<'_>, into: &Arc<Graph>) -> Result<NodeParams> {
        Ok(match info {
            // SAFETY: the caller's contract on the argument pointers.
            NodeInfoIn::Kernel(spec) => NodeParams::Kernel(unsafe { self.kernel_node(&spec) }?),
            NodeInfoIn::Memcpy { ctx, copy } => NodeParams::Memcpy(self.memcpy_node(ctx, &copy)?),
            NodeInfoIn::Memset(spec) => NodeParams::Memset(self.memset_node(&spec)?),
            NodeInfoIn::Host(f) => NodeParams::Host(f),
            NodeInfoIn::Graph { graph, moved } => {
                let child = self.graph(graph)?;
                if Arc::ptr_eq(&child, into) {
                    return Err(Error::invalid("a graph cannot be its own child"));
                }
                if lock(&child.owner).is_some() {
                    return Err(Error::invalid(format!("graph {graph:#x} already belongs to a child graph node")));
                }
                if moved {
                    if !lock(&child.execs).iter().all(|e| e.strong_count() == 0) || self.graph_is_capturing(graph) {
                        return Err(Error::invalid("a graph with executable graphs or a capture in progress cannot be moved"));
                    }
                    NodeParams::Graph(child)
                } else {
                    if lock(&child.st).has_mem_nodes() {
                        return Err(Error::invalid(
                            "a graph with memory allocation or free nodes can only become a child graph by moving it \
                             (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)",
                        ));
                    }
                    NodeParams::Graph(self.clone_graph(&child)?)
                }
            }
            NodeInfoIn::Empty => NodeParams::Empty,
            NodeInfoIn::EventRecord(e) => NodeParams::EventRecord(self.event(e)?),
            NodeInfoIn::EventWait(e) => NodeParams::EventWait(self.event(e)?),
            NodeInfoIn::MemAlloc(spec) => {
                if lock(&into.owner).is_some() {
                    return Err(Error::NotSupported("memory nodes cannot be added to a child graph".into()));
                }
                NodeParams::MemAlloc(self.mem_alloc_node(&spec)?)
            }
            NodeInfoIn::MemFree(p) => NodeParams::MemFree(p),
        })
    }

    /// `cuGraphClone`: a deep copy (child graphs included), with new node
    /// handles.
    pub fn graph_clone(&self, h: u64) -> Result<u64> {
        self.check_init()?;
        let g = self.graph(h)?;
        if lock(&g.st).has_mem_nodes() {
            return Err(Error::NotSupported("graphs with memory allocation or free nodes cannot be cloned".into()));
        }
        Ok(self.clone_graph(&g)?.handle)
    }

    /// A new graph with copies of `g`'s nodes; returns it. Records, for
    /// `cuGraphNodeFindInClone`, which node each copy came from.
    pub(crate) fn clone_graph(&self, g: &Graph) -> Result<Arc<Graph>> {
        let data: Vec<NodeData> = lock(&g.st).nodes.clone();
        let new = self.new_graph();
        let mut map: HashMap<u64, u64> = HashMap::new();
        for n in &data {
            map.insert(n.handle, new_handle(HandleKind::GraphNode));
        }
        let mut nodes = Vec::with_capacity(data.len());
        for n in data {
            let params = match n.params {
                NodeParams::Graph(child) => {
                    let c = self.clone_graph(&child)?;
                    *lock(&c.owner) = map.get(&n.handle).copied();
                    NodeParams::Graph(c)
                }
                p => p,
            };
            let Some(&handle) = map.get(&n.handle) else { continue };
            let deps = n.deps.iter().filter_map(|d| map.get(d).copied()).collect();
            nodes.push(NodeData { handle, local_id: n.local_id, deps, params });
            lock(&self.clone_origins).insert(handle, n.handle);
        }
        {
            let mut st = lock(&new.st);
            st.next_local_id = nodes.iter().map(|n| n.local_id + 1).max().unwrap_or(0);
            st.nodes = nodes;
            st.reindex();
        }
        for h in map.values() {
            self.graph_nodes.insert_existing(*h, NodeRef { graph: Arc::downgrade(&new) });
        }
        Ok(new)
    }

    /// `cuGraphNodeFindInClone`: the node of clone `cloned` copied from
    /// `original`.
    pub fn graph_node_find_in_clone(&self, original: u64, cloned: u64) -> Result<u64> {
        self.check_init()?;
        let g = self.graph(cloned)?;
        let st = lock(&g.st);
        let origins = lock(&self.clone_origins);
        st.nodes
            .iter()
            .find(|n| origins.get(&n.handle) == Some(&original))
            .map(|n| n.handle)
            .ok_or_else(|| Error::invalid(format!("graph {cloned:#x} has no clone of node {original:#x}")))
    }

    // ---- structure ----

    /// `cuGraphGetNodes`.
    pub fn graph_nodes(&self, h: u64) -> Result<Vec<u64>> {
        self.check_init()?;
        Ok(lock(&self.graph(h)?.st).nodes.iter().map(|n| n.handle).collect())
    }

    /// `cuGraphGetRootNodes`: nodes without dependencies.
    pub fn graph_root_nodes(&self, h: u64) -> Result<Vec<u64>> {
        self.check_init()?;
        Ok(lock(&self.graph(h)?.st).nodes.iter().filter(|n| n.deps.is_empty()).map(|n| n.handle).collect())
    }

    /// `cuGraphGetEdges`: (from, to) pairs, by node then dependency order.
    pub fn graph_edges(&self, h: u64) -> Result<Vec<(u64, u64)>> {
        self.check_init()?;
        let g = self.graph(h)?;
        let st = lock(&g.st);
        Ok(st.nodes.iter().flat_map(|n| n.deps.iter().map(move |d| (*d, n.handle))).collect())
    }

    /// `cuGraphNodeGetDependencies`.
    pub fn graph_node_dependencies(&self, node: u64) -> Result<Vec<u64>> {
        self.check_init()?;
        let g = self.graph_of_node(node)?;
        let st = lock(&g.st);
        st.node(node).map(|n| n.deps.clone()).ok_or_else(|| no_such_node(node))
    }

    /// `cuGraphNodeGetDependentNodes`.
    pub fn graph_node_dependents(&self, node: u64) -> Result<Vec<u64>> {
        self.check_init()?;
        let g = self.graph_of_node(node)?;
        let st = lock(&g.st);
        st.node(node).ok_or_else(|| no_such_node(node))?;
        Ok(st.dependents(node))
    }

    /// `cuGraphNodeGetType`.
    pub fn graph_node_type(&self, node: u64) -> Result<NT> {
        self.check_init()?;
        let g = self.graph_of_node(node)?;
        let st = lock(&g.st);
        st.node(node).map(|n| n.params.node_type()).ok_or_else(|| no_such_node(node))
    }

    /// `cuGraphNodeGetContainingGraph`.
    pub fn graph_node_graph(&self, node: u64) -> Result<u64> {
        self.check_init()?;
        Ok(self.graph_of_node(node)?.handle)
    }

    /// `cuGraphNodeGetLocalId`: the node's number within its graph.
    pub fn graph_node_local_id(&self, node: u64) -> Result<u32> {
        self.check_init()?;
        let g = self.graph_of_node(node)?;
        let st = lock(&g.st);
        st.node(node).map(|n| n.local_id).ok_or_else(|| no_such_node(node))
    }

    /// `cuGraphGetId`.
    pub fn graph_id(&self, h: u64) -> Result<u32> {
        self.check_init()?;
        Ok(self.graph(h)?.id)
    }

    fn edge_graph(&self, graph: u64, from: &[u64], to: &[u64]) -> Result<Arc<Graph>> {
        if from.len() != to.len() {
            return Err(Error::invalid("from and to differ in length"));
        }
        self.graph(graph)
    }

    /// `cuGraphAddDependencies`: edges `from[i] -> to[i]`.
    pub fn graph_add_dependencies(&self, graph: u64, from: &[u64], to: &[u64]) -> Result<()> {
        self.check_init()?;
        let g = self.edge_graph(graph, from, to)?;
        let mut st = lock(&g.st);
        for (i, (&f, &t)) in from.iter().zip(to).enumerate() {
            if st.node(f).is_none() || st.node(t).is_none() {
                return Err(Error::invalid(format!("edge {i}: {f:#x} -> {t:#x} names a node outside the graph")));
            }
            if f == t {
                return Err(Error::invalid(format!("edge {i}: a node cannot depend on itself")));
            }
            let dup = st.node(t).is_some_and(|n| n.deps.contains(&f)) || from[..i].iter().zip(&to[..i]).any(|(a, b)| (*a, *b) == (f, t));
            if dup {
                return Err(Error::invalid(format!("edge {i}: {f:#x} -> {t:#x} already exists")));
            }
        }
        for (&f, &t) in from.iter().zip(to) {
            if let Some(n) = st.node_mut(t) {
                n.deps.push(f);
            }
        }
        Ok(())
    }

    /// `cuGraphRemoveDependencies`.
    pub fn graph_remove_dependencies(&self, graph: u64, from: &[u64], to: &[u64]) -> Result<()> {
        self.check_init()?;
        let g = self.edge_graph(graph, from, to)?;
        let mut st = lock(&g.st);
        if st.has_mem_nodes() {
            return Err(Error::NotSupported("edges of a graph with memory allocation or free nodes cannot be removed".into()));
        }
        for (i, (&f, &t)) in from.iter().zip(to).enumerate() {
            if !st.node(t).is_some_and(|n| n.deps.contains(&f)) {
                return Err(Error::invalid(format!("edge {i}: there is no edge {f:#x} -> {t:#x}")));
            }
        }
        for (&f, &t) in from.iter().zip(to) {
            if let Some(n) = st.node_mut(t) {
                n.deps.retain(|d| *d != f);
            }
        }
        Ok(())
    }

    /// `cuGraphDestroyNode`: the node and its edges.
    pub fn graph_destroy_node(&self, node: u64) -> Result<()> {
        self.check_init()?;
        let g = self.graph_of_node(node)?;
        let mut st = lock(&g.st);
        if st.has_mem_nodes() {
            return Err(Error::NotSupported("nodes of a graph with memory allocation or free nodes cannot be destroyed".into()));
        }
        let i = *st.index.get(&node).ok_or_else(|| no_such_node(node))?;
        let n = st.nodes.remove(i);
        for m in st.nodes.iter_mut() {
            m.deps.retain(|d| *d != node);
        }
        st.reindex();
        drop(st);
        self.forget_capture_dependency(g.handle, node);
        self.forget_node(&n);
        Ok(())
    }

    // ---- node parameters ----

    /// The parameters of node `node`, with its graph locked.
    fn with_node<R>(&self, node: u64, f: impl FnOnce(&mut NodeData) -> Result<R>) -> Result<R> {
        self.check_init()?;
        let g = self.graph_of_node(node)?;
        let mut st = lock(&g.st);
        let n = st.node_mut(node).ok_or_else(|| no_such_node(node))?;
        f(n)
    }

    /// `cuGraph*NodeGetParams` and `cuGraphNodeGetParams`.
    pub fn graph_node_params(&self, node: u64) -> Result<NodeInfo> {
        let params = self.with_node(node, |n| Ok(n.params.clone()))?;
        Ok(self.node_info(node, &params))
    }

    pub(crate) fn node_info(&self, node: u64, p: &NodeParams) -> NodeInfo {
        match p {
            NodeParams::Kernel(k) => {
                let mut exposed = lock(&self.exposed_args);
                let e = exposed.entry(node).or_insert_with(|| ExposedArgs::new(k));
                NodeInfo::Kernel(KernelNodeInfo {
                    func: k.func.handle,
                    kernel: k.func.kernel.unwrap_or(0),
                    grid: k.grid,
                    block: k.block,
                    shared_bytes: k.shared_bytes,
                    args: e.ptrs as usize,
                    ctx: k.func.ctx,
                })
            }
            NodeParams::Memcpy(m) => NodeInfo::Memcpy { ctx: m.ctx, copy: m.copy },
            NodeParams::Memset(m) => NodeInfo::Memset(MemsetSpec {
                dst: m.dst,
                pitch: m.pitch,
                value: match m.value {
                    MemsetValue::U8(v) => v as u32,
                    MemsetValue::U16(v) => v as u32,
                    MemsetValue::U32(v) => v,
                },
                element_size: m.value.element_size() as u32,
                width: m.width,
                height: m.height,
                ctx: m.ctx,
            }),
            NodeParams::Host(f) => NodeInfo::Host(f.clone()),
            NodeParams::Graph(g) => NodeInfo::Graph(g.handle),
            NodeParams::Empty => NodeInfo::Empty,
            NodeParams::EventRecord(e) => NodeInfo::EventRecord(e.handle),
            NodeParams::EventWait(e) => NodeInfo::EventWait(e.handle),
            NodeParams::MemAlloc(m) => NodeInfo::MemAlloc {
                spec: MemAllocSpec {
                    alloc_type: 1,
                    handle_types: 0,
                    location_type: 1,
                    device: m.device as i32,
                    access: m.access.clone(),
                    bytesize: m.size,
                },
                dptr: m.addr,
            },
            NodeParams::MemFree(p) => NodeInfo::MemFree(*p),
        }
    }

    /// New parameters for a node from an application description; the
    /// node's type cannot change, nor can memory and child graph nodes.
    pub(crate) fn params_for_update(&self, old: &NodeParams, info: NodeInfoIn<'_>, graph: &Arc<Graph>) -> Result<NodeParams> {
        let new = match (old, info) {
            (NodeParams::Kernel(k), NodeInfoIn::Kernel(spec)) => {
                // SAFETY: the caller's contract on the argument pointers.
                let mut n = unsafe { self.kernel_node(&spec) }?;
                n.attrs = k.attrs.clone();
                n.cooperative = k.cooperative;
                n.priority = k.priority;
                NodeParams::Kernel(n)
            }
            (NodeParams::MemAlloc(_), _) | (NodeParams::MemFree(_), _) => {
                return Err(Error::invalid("memory allocation and free nodes cannot be changed"))
            }
            (NodeParams::Graph(_), _) => return Err(Error::invalid("a child graph node's graph is changed through the graph itself")),
            (_, info) => self.node_params_from(info, graph)?,
        };
        if new.node_type() != old.node_type() {
            return Err(Error::invalid(format!("a {:?} node cannot take {:?} parameters", old.node_type(), new.node_type())));
        }
        Ok(new)
    }

    /// `cuGraph*NodeSetParams` and `cuGraphNodeSetParams`.
    pub fn graph_node_set_params(&self, node: u64, info: NodeInfoIn<'_>) -> Result<()> {
        self.check_init()?;
        let g = self.graph_of_node(node)?;
        let old = self.with_node(node, |n| Ok(n.params.clone()))?;
        // Checked before the graph is locked again: a kernel's argument
        // pointers may point into this node's exposed copy.
        let new = self.params_for_update(&old, info, &g)?;
        self.with_node(node, |n| {
            n.params = new;
            Ok(())
        })?;
        lock(&self.exposed_args).remove(&node);
        Ok(())
    }

    /// `cuGraphKernelNodeGetAttribute`: the raw 64-byte value of a launch
    /// attribute (zeros when never set, except the ones a launch sets).
    pub fn graph_kernel_node_attribute(&self, node: u64, id: u32) -> Result<[u8; 64]> {
        self.with_node(node, |n| {
            let NodeParams::Kernel(k) = &n.params else {
                return Err(Error::invalid(format!("node {node:#x} is not a kernel node")));
            };
            if let Some((_, v)) = k.attrs.iter().find(|(i, _)| *i == id) {
                return Ok(*v);
            }
            let mut v = [0u8; 64];
            match id {
                // CU_LAUNCH_ATTRIBUTE_COOPERATIVE, _PRIORITY
                2 => v[..4].copy_from_slice(&(k.cooperative as i32).to_ne_bytes()),
                8 => v[..4].copy_from_slice(&k.priority.to_ne_bytes()),
                _ => {}
            }
            Ok(v)
        })
    }

    /// `cuGraphKernelNodeSetAttribute`.
    pub fn graph_kernel_node_set_attribute(&self, node: u64, id: u32, value: [u8; 64]) -> Result<()> {
        if !(1..=20).contains(&id) {
            return Err(Error::invalid(format!("unknown launch attribute {id}")));
        }
        self.with_node(node, |n| {
            let NodeParams::Kernel(k) = &mut n.params else {
                return Err(Error::invalid(format!("node {node:#x} is not a kernel node")));
            };
            let i32_at0 = i32::from_ne_bytes([value[0], value[1], value[2], value[3]]);
            match id {
                2 => k.cooperative = i32_at0 != 0,
                8 => k.priority = i32_at0,
                // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: only 1x1x1 (or 0).
                4 => {
                    let d: Vec<u32> = value[..12].chunks(4).map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
                    if d.iter().any(|&x| x > 1) {
                        return Err(Error::NotSupported("thread block clusters".into()));
                    }
                }
                _ => {}
            }
            k.attrs.retain(|(i, _)| *i != id);
            k.attrs.push((id, value));
            Ok(())
        })
    }

    /// `cuGraphKernelNodeCopyAttributes`: `dst` takes `src`'s attributes.
    pub fn graph_kernel_node_copy_attributes(&self, dst: u64, src: u64) -> Result<()> {
        let (attrs, coop, prio) = self.with_node(src, |n| match &n.params {
            NodeParams::Kernel(k) => Ok((k.attrs.clone(), k.cooperative, k.priority)),
            _ => Err(Error::invalid(format!("node {src:#x} is not a kernel node"))),
        })?;
        self.with_node(dst, |n| match &mut n.params {
            NodeParams::Kernel(k) => {
                k.attrs = attrs;
                k.cooperative = coop;
                k.priority = prio;
                Ok(())
            }
            _ => Err(Error::invalid(format!("node {dst:#x} is not a kernel node"))),
        })
    }

    /// `cuGraphDebugDotPrint`: the graph in Graphviz's DOT language.
    pub fn graph_debug_dot(&self, h: u64, flags: u32) -> Result<String> {
        self.check_init()?;
        let g = self.graph(h)?;
        let mut out = String::from("digraph anycuda_graph {\n    compound=true;\n    node [shape=record];\n");
        self.dot_graph(&g, flags, &mut out, 1);
        out.push_str("}\n");
        Ok(out)
    }

    fn dot_graph(&self, g: &Graph, flags: u32, out: &mut String, depth: usize) {
        let verbose = flags & 1 != 0;
        let pad = "    ".repeat(depth);
        let st = lock(&g.st);
        let _ = writeln!(out, "{pad}subgraph cluster_{} {{\n{pad}    label=\"graph {}\";", g.id, g.id);
        for n in &st.nodes {
            let name = format!("n{:x}", n.handle);
            let (kind, detail) = match &n.params {
                NodeParams::Kernel(k) => (
                    "kernel",
                    format!(
                        "{}\\ngrid ({},{},{}) block ({},{},{}) shared {}{}",
                        k.func.desc.name,
                        k.grid[0],
                        k.grid[1],
                        k.grid[2],
                        k.block[0],
                        k.block[1],
                        k.block[2],
                        k.shared_bytes,
                        if k.cooperative { " cooperative" } else { "" }
                    ),
                ),
                NodeParams::Memcpy(m) => (
                    "memcpy",
                    format!("{:?} -\\> {:?}\\n{}x{}x{} bytes", m.copy.src, m.copy.dst, m.copy.width, m.copy.height, m.copy.depth),
                ),
                NodeParams::Memset(m) => ("memset", format!("{:#x} = {:?}\\n{}x{} elements", m.dst, m.value, m.width, m.height)),
                NodeParams::Host(f) => ("host", format!("fn {:#x} data {:#x}", f.fn_ptr, f.user_data)),
                NodeParams::Graph(c) => ("graph", format!("graph {}", c.id)),
                NodeParams::Empty => ("empty", String::new()),
                NodeParams::EventRecord(e) => ("event record", format!("event {:#x}", e.handle)),
                NodeParams::EventWait(e) => ("event wait", format!("event {:#x}", e.handle)),
                NodeParams::MemAlloc(m) => ("mem alloc", format!("{:#x}, {} bytes", m.addr, m.size)),
                NodeParams::MemFree(p) => ("mem free", format!("{p:#x}")),
            };
            let label = if verbose && !detail.is_empty() {
                format!("{{{} {}|{}}}", kind, n.local_id, detail.replace('"', "'"))
            } else {
                format!("{} {}", kind, n.local_id)
            };
            let _ = writeln!(out, "{pad}    {name} [label=\"{label}\"];");
            if let NodeParams::Graph(c) = &n.params {
                self.dot_graph(c, flags, out, depth + 1);
            }
        }
        for n in &st.nodes {
            for d in &n.deps {
                let _ = writeln!(out, "{pad}    n{d:x} -> n{:x};", n.handle);
            }
        }
        let _ = writeln!(out, "{pad}}}");
    }
}

/// A node's parameters as the application describes them.
#[derive(Debug, Clone)]
pub enum NodeInfoIn<'a> {
    Kernel(KernelNodeSpec<'a>),
    Memcpy {
        ctx: u64,
        copy: Memcpy3D,
    },
    Memset(MemsetSpec),
    Host(HostFn),
    /// A child graph: cloned into the node, or moved (the node owns the
    /// graph from then on).
    Graph {
        graph: u64,
        moved: bool,
    },
    Empty,
    EventRecord(u64),
    EventWait(u64),
    MemAlloc(MemAllocSpec),
    MemFree(u64),
}

impl Driver {
    /// Bytes of graph memory (reserved: every allocation node's memory;
    /// used: what launches have allocated and not freed), noting the
    /// highs.
    fn graph_mem_usage(&self) -> (u64, u64) {
        let all = lock(&self.graph_mem);
        let reserved: u64 = all.iter().map(|m| m.size as u64).sum();
        let used: u64 = all.iter().filter(|m| m.live.load(Ordering::Acquire)).map(|m| m.size as u64).sum();
        self.graph_mem_high[0].fetch_max(used, Ordering::AcqRel);
        self.graph_mem_high[1].fetch_max(reserved, Ordering::AcqRel);
        (used, reserved)
    }

    /// Records the current graph memory use in the high-water marks.
    pub(crate) fn note_graph_mem_use(&self) {
        self.graph_mem_usage();
    }

    /// `cuDeviceGetGraphMemAttribute`.
    pub fn device_graph_mem_attribute(&self, dev: i32, attr: u32) -> Result<u64> {
        self.device_props(dev)?;
        let (used, reserved) = self.graph_mem_usage();
        Ok(match attr {
            0 => used,
            1 => self.graph_mem_high[0].load(Ordering::Acquire),
            2 => reserved,
            3 => self.graph_mem_high[1].load(Ordering::Acquire),
            _ => return Err(Error::invalid(format!("unknown graph memory attribute {attr}"))),
        })
    }

    /// `cuDeviceSetGraphMemAttribute`: only the high-water marks, and only
    /// to 0 (which resets them to the current use).
    pub fn device_set_graph_mem_attribute(&self, dev: i32, attr: u32, value: u64) -> Result<()> {
        self.device_props(dev)?;
        let (used, reserved) = self.graph_mem_usage();
        match (attr, value) {
            (1, 0) => self.graph_mem_high[0].store(used, Ordering::Release),
            (3, 0) => self.graph_mem_high[1].store(reserved, Ordering::Release),
            _ => return Err(Error::invalid(format!("graph memory attribute {attr} cannot be set to {value}"))),
        }
        Ok(())
    }

    /// `cuDeviceGraphMemTrim`: graph memory is held only while a graph or
    /// executable graph uses it, so there is no cache to trim.
    pub fn device_graph_mem_trim(&self, dev: i32) -> Result<()> {
        self.device_props(dev)?;
        self.collect_graph_mem();
        Ok(())
    }
}
