//! Executable graphs: instantiation, launch, update, per-node parameter
//! changes.
//!
//! An executable graph keeps a copy of its graph's nodes (child graphs as
//! nested levels), so the graph may change or go afterwards. Launching one
//! queues a single operation on the stream: it runs the nodes one after
//! another in an order that respects every dependency (ties in insertion
//! order), on the stream's worker thread. Every kernel already uses every
//! core, so independent branches running side by side would only compete
//! for them; running them in sequence is one of the orders CUDA allows.
//! What a launch needs is prepared once and reused until a parameter
//! changes ([`Plan`]): kernels with their parameter buffers and code,
//! host functions, events. Only copies and memsets are checked again at
//! each launch (their memory may have been freed since), and events get
//! their record generations; a graph of kernels costs one queue operation
//! and a loop, where the same work issued directly costs a checked launch
//! and a queue operation per kernel.
//!
//! Launches of one executable graph are ordered after each other even on
//! different streams, as CUDA orders them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use cuda_types::CUgraphExecUpdateResult as UR;

use crate::backend::{BackendModule, BackendQueue, LaunchParams};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::graph::{Graph, GraphData, GraphMem, MemsetNode, NodeInfoIn, NodeParams};
use crate::handle::lock;
use crate::memory::{CopyPlan, MemLoc, MemsetPlan};
use crate::stream::{Dep, DepWait, Stream};
use crate::Driver;

static NEXT_EXEC_ID: AtomicU32 = AtomicU32::new(1);

/// `CUDA_GRAPH_INSTANTIATE_FLAG_*`.
pub const INSTANTIATE_AUTO_FREE_ON_LAUNCH: u64 = 1;
pub const INSTANTIATE_UPLOAD: u64 = 2;
pub const INSTANTIATE_DEVICE_LAUNCH: u64 = 4;
pub const INSTANTIATE_USE_NODE_PRIORITY: u64 = 8;

#[derive(Clone)]
pub(crate) enum ExecKind {
    Op(NodeParams),
    Child(ExecGraph),
}

#[derive(Clone)]
pub(crate) struct ExecNode {
    kind: ExecKind,
    /// Positions of its dependencies in its level.
    deps: Vec<usize>,
    enabled: bool,
}

#[derive(Clone, Default)]
pub(crate) struct ExecGraph {
    nodes: Vec<ExecNode>,
}

pub(crate) struct GraphExec {
    pub handle: u64,
    pub id: u32,
    pub flags: u64,
    st: Mutex<ExecState>,
}

struct ExecState {
    tree: ExecGraph,
    /// Node handle of the graph it was instantiated from -> its position:
    /// indices into the levels from the top.
    map: HashMap<u64, Vec<usize>>,
    /// The same for the graph of the latest `cuGraphExecUpdate` (only the
    /// latest: an application updating at every step must not grow it).
    update_map: HashMap<u64, Vec<usize>>,
    plan: Option<Arc<Plan>>,
    /// The latest launch: later ones wait for it.
    last: Option<(Arc<Stream>, u64)>,
}

/// One kernel of a plan.
struct KernelStep {
    code: Arc<dyn BackendModule>,
    index: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    cooperative: bool,
    params: Arc<[u8]>,
}

enum Step {
    Kernel(KernelStep),
    Copy(crate::memory::Memcpy3D),
    Memset(MemsetNode),
    Host(Arc<dyn Fn() + Send + Sync>),
    Record(Arc<Event>),
    Wait(Arc<Event>),
    Alloc(Arc<GraphMem>),
    Free(u64),
}

/// What a launch runs, in order.
struct Plan {
    steps: Vec<Step>,
    /// The contexts of the nodes that run in one (kernels, copies, memsets).
    ctxs: Vec<u64>,
    /// Copies and memsets (checked at each launch).
    checked: usize,
    events: usize,
    allocs: Vec<Arc<GraphMem>>,
}

/// Why an instantiation failed: the error, the node at fault and the
/// `CUgraphInstantiateResult`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstantiateFailure {
    pub error: Error,
    pub node: u64,
    pub result: u32,
}

/// Why `cuGraphExecUpdate` refused: the `CUgraphExecUpdateResult`, the
/// node of the new graph at fault and, for an edge, its other end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateFailure {
    pub result: u32,
    pub node: u64,
    pub from: u64,
    pub reason: String,
}

impl UpdateFailure {
    fn new(result: UR, node: u64, reason: impl Into<String>) -> UpdateFailure {
        UpdateFailure { result: result.0, node, from: 0, reason: reason.into() }
    }
}

fn build_level(data: &GraphData, path: &mut Vec<usize>, map: &mut HashMap<u64, Vec<usize>>) -> Result<ExecGraph, InstantiateFailure> {
    if data.topological_order().is_none() {
        let node = data.nodes.first().map(|n| n.handle).unwrap_or(0);
        return Err(InstantiateFailure {
            error: Error::invalid("the graph's dependencies form a cycle"),
            node,
            result: cuda_types::CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE.0,
        });
    }
    let mut nodes = Vec::with_capacity(data.nodes.len());
    for (i, n) in data.nodes.iter().enumerate() {
        path.push(i);
        map.insert(n.handle, path.clone());
        let kind = match &n.params {
            NodeParams::Graph(child) => {
                let st = lock(&child.st);
                ExecKind::Child(build_level(&st, path, map)?)
            }
            p => ExecKind::Op(p.clone()),
        };
        path.pop();
        let deps = n.deps.iter().filter_map(|h| data.index.get(h).copied()).collect();
        nodes.push(ExecNode { kind, deps, enabled: true });
    }
    Ok(ExecGraph { nodes })
}

fn topo(g: &ExecGraph) -> Vec<usize> {
    let n = g.nodes.len();
    let mut indegree: Vec<usize> = g.nodes.iter().map(|x| x.deps.len()).collect();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, x) in g.nodes.iter().enumerate() {
        for &d in &x.deps {
            if let Some(o) = out.get_mut(d) {
                o.push(i);
            }
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
    order
}

fn plan_level(g: &ExecGraph, plan: &mut Plan) {
    for i in topo(g) {
        let node = &g.nodes[i];
        match &node.kind {
            ExecKind::Child(c) => plan_level(c, plan),
            ExecKind::Op(p) => {
                let step = match p {
                    NodeParams::Kernel(k) if node.enabled => {
                        plan.ctxs.push(k.func.ctx);
                        Step::Kernel(KernelStep {
                            code: k.func.code.clone(),
                            index: k.func.index,
                            grid: k.grid,
                            block: k.block,
                            shared_bytes: k.shared_bytes,
                            cooperative: k.cooperative,
                            params: k.params.clone(),
                        })
                    }
                    NodeParams::Memcpy(m) if node.enabled => {
                        plan.ctxs.push(m.ctx);
                        plan.checked += 1;
                        Step::Copy(m.copy)
                    }
                    NodeParams::Memset(m) if node.enabled => {
                        plan.ctxs.push(m.ctx);
                        plan.checked += 1;
                        Step::Memset(*m)
                    }
                    NodeParams::Host(f) => Step::Host(f.call.clone()),
                    NodeParams::EventRecord(e) => {
                        plan.events += 1;
                        Step::Record(e.clone())
                    }
                    NodeParams::EventWait(e) => {
                        plan.events += 1;
                        Step::Wait(e.clone())
                    }
                    NodeParams::MemAlloc(m) => {
                        plan.allocs.push(m.clone());
                        Step::Alloc(m.clone())
                    }
                    NodeParams::MemFree(p) => Step::Free(*p),
                    _ => continue,
                };
                plan.steps.push(step);
            }
        }
    }
}

fn build_plan(tree: &ExecGraph) -> Plan {
    let mut plan = Plan { steps: Vec::new(), ctxs: Vec::new(), checked: 0, events: 0, allocs: Vec::new() };
    plan_level(tree, &mut plan);
    plan.ctxs.sort_unstable();
    plan.ctxs.dedup();
    plan
}

/// What a launch resolved: copy and memset plans, event generations.
enum Prepared {
    Copy(Option<CopyPlan>),
    Memset(Option<MemsetPlan>),
}

/// Runs a launch of an executable graph on its stream's queue: device
/// nodes are enqueued in order; event records, event waits and host nodes
/// first wait for what was enqueued before them (a fault found then fails
/// the launch like a fault of its own).
fn run_plan(
    plan: &Plan,
    prepared: &[Prepared],
    gens: &[u64],
    queue: &dyn BackendQueue,
    sticky: Option<&Error>,
    limits: crate::context::Limits,
) -> Result<()> {
    let mut failed: Option<Error> = sticky.cloned();
    let (mut p, mut g) = (0, 0);
    let drain = |failed: &mut Option<Error>| {
        if let Err(f) = queue.synchronize() {
            failed.get_or_insert(Error::Fault(f));
        }
    };
    for step in &plan.steps {
        match step {
            Step::Record(e) => {
                if let Some(&gen) = gens.get(g) {
                    if let Ok(m) = queue.record() {
                        e.set_mark(gen, m);
                    }
                    drain(&mut failed);
                    e.complete(gen);
                }
                g += 1;
                continue;
            }
            Step::Wait(e) => {
                if let (Some(&gen), None) = (gens.get(g), &failed) {
                    drain(&mut failed);
                    e.wait_generation(gen);
                }
                g += 1;
                continue;
            }
            Step::Host(_) if failed.is_none() => drain(&mut failed),
            _ => {}
        }
        let r = match step {
            Step::Kernel(k) if failed.is_none() => {
                let lp = LaunchParams {
                    grid: k.grid,
                    block: k.block,
                    dynamic_shared_bytes: k.shared_bytes,
                    params: &k.params,
                    cooperative: k.cooperative,
                    pending_launch_limit: limits.dev_runtime_pending_launch_count,
                    heap_limit: limits.malloc_heap_size,
                    printf_fifo_size: limits.printf_fifo_size,
                };
                queue.launch(&k.code, k.index, &lp).map_err(Error::Fault)
            }
            Step::Copy(_) => {
                let r = match (prepared.get(p), &failed) {
                    (Some(Prepared::Copy(Some(c))), None) => c.enqueue(queue),
                    _ => Ok(()),
                };
                p += 1;
                r
            }
            Step::Memset(_) => {
                let r = match (prepared.get(p), &failed) {
                    (Some(Prepared::Memset(Some(m))), None) => m.enqueue(queue),
                    _ => Ok(()),
                };
                p += 1;
                r
            }
            Step::Host(f) if failed.is_none() => {
                f();
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = r {
            failed.get_or_insert(e);
        }
    }
    match (failed, sticky) {
        (Some(_), Some(_)) => Ok(()),
        (Some(e), None) => Err(e),
        (None, _) => Ok(()),
    }
}

/// The position of `path` in `tree`.
fn node_at<'a>(tree: &'a mut ExecGraph, path: &[usize]) -> Option<&'a mut ExecNode> {
    let (&last, upper) = path.split_last()?;
    let mut level = tree;
    for &i in upper {
        match &mut level.nodes.get_mut(i)?.kind {
            ExecKind::Child(c) => level = c,
            ExecKind::Op(_) => return None,
        }
    }
    level.nodes.get_mut(last)
}

/// Whether an executable node may take `new` in place of `old`, as
/// `cuGraphExecUpdate` and the `cuGraphExec*SetParams` functions allow.
fn check_update(old: &NodeParams, new: &NodeParams, node: u64) -> std::result::Result<(), UpdateFailure> {
    if old.node_type() != new.node_type() {
        return Err(UpdateFailure::new(UR::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, node, "the node's type changed"));
    }
    match (old, new) {
        (NodeParams::Kernel(a), NodeParams::Kernel(b)) => {
            if a.func.ctx != b.func.ctx {
                return Err(UpdateFailure::new(
                    UR::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE,
                    node,
                    "the kernel's function belongs to another context",
                ));
            }
            if a.cooperative != b.cooperative {
                return Err(UpdateFailure::new(
                    UR::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED,
                    node,
                    "a cooperative kernel node cannot become a non-cooperative one or the reverse",
                ));
            }
        }
        (NodeParams::Memcpy(a), NodeParams::Memcpy(b)) => {
            let kind = |l: MemLoc| std::mem::discriminant(&l);
            if kind(a.copy.src) != kind(b.copy.src) || kind(a.copy.dst) != kind(b.copy.dst) || a.ctx != b.ctx {
                return Err(UpdateFailure::new(
                    UR::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED,
                    node,
                    "a memcpy node's memory types or context changed",
                ));
            }
        }
        (NodeParams::Memset(a), NodeParams::Memset(b)) => {
            let two_d = a.height > 1 || b.height > 1;
            let shape = (a.pitch, a.width, a.height, a.value.element_size()) != (b.pitch, b.width, b.height, b.value.element_size());
            if a.ctx != b.ctx || (two_d && shape) || a.value.element_size() != b.value.element_size() {
                return Err(UpdateFailure::new(
                    UR::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED,
                    node,
                    "a 2-D memset node may change only its address and value",
                ));
            }
        }
        (NodeParams::MemAlloc(a), NodeParams::MemAlloc(b)) if !Arc::ptr_eq(a, b) => {
            return Err(UpdateFailure::new(
                UR::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED,
                node,
                "memory allocation nodes cannot be updated",
            ));
        }
        (NodeParams::MemFree(a), NodeParams::MemFree(b)) if a != b => {
            return Err(UpdateFailure::new(UR::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED, node, "memory free nodes cannot be updated"));
        }
        _ => {}
    }
    Ok(())
}

/// `tree` with the parameters of `data` (a topologically identical graph),
/// and the node handles of `data` mapped to their positions.
fn updated_level(
    tree: &ExecGraph,
    data: &GraphData,
    path: &mut Vec<usize>,
    map: &mut HashMap<u64, Vec<usize>>,
) -> std::result::Result<ExecGraph, UpdateFailure> {
    if tree.nodes.len() != data.nodes.len() {
        return Err(UpdateFailure::new(
            UR::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
            0,
            format!("{} nodes, the executable graph has {}", data.nodes.len(), tree.nodes.len()),
        ));
    }
    let mut out = ExecGraph { nodes: Vec::with_capacity(tree.nodes.len()) };
    for (i, (old, new)) in tree.nodes.iter().zip(&data.nodes).enumerate() {
        let deps: Vec<usize> = new.deps.iter().filter_map(|h| data.index.get(h).copied()).collect();
        if deps.len() != old.deps.len() {
            return Err(UpdateFailure::new(
                UR::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
                new.handle,
                format!("node {} has {} dependencies, its counterpart {}", i, deps.len(), old.deps.len()),
            ));
        }
        for (k, (&d, &o)) in deps.iter().zip(&old.deps).enumerate() {
            if d != o {
                let mut f = UpdateFailure::new(
                    UR::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
                    new.handle,
                    format!("dependency {k} of node {i} is node {d}, its counterpart's is node {o}"),
                );
                f.from = new.deps[k];
                return Err(f);
            }
        }
        path.push(i);
        map.insert(new.handle, path.clone());
        let kind = match (&old.kind, &new.params) {
            (ExecKind::Child(c), NodeParams::Graph(g)) => {
                let st = lock(&g.st);
                ExecKind::Child(updated_level(c, &st, path, map)?)
            }
            (ExecKind::Child(_), _) | (ExecKind::Op(_), NodeParams::Graph(_)) => {
                return Err(UpdateFailure::new(UR::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, new.handle, "the node's type changed"))
            }
            (ExecKind::Op(p), q) => {
                check_update(p, q, new.handle)?;
                ExecKind::Op(q.clone())
            }
        };
        path.pop();
        out.nodes.push(ExecNode { kind, deps, enabled: old.enabled });
    }
    Ok(out)
}

impl Driver {
    pub(crate) fn graph_exec(&self, h: u64) -> Result<Arc<GraphExec>> {
        self.graph_execs.get(h).ok_or_else(|| Error::invalid(format!("{h:#x} is not a live executable graph")))
    }

    /// `cuGraphInstantiateWithFlags` / `WithParams`: an executable graph,
    /// or why not.
    pub fn graph_instantiate(&self, graph: u64, flags: u64) -> std::result::Result<u64, InstantiateFailure> {
        use cuda_types::CUgraphInstantiateResult as IR;
        let fail = |error: Error| InstantiateFailure { error, node: 0, result: IR::CUDA_GRAPH_INSTANTIATE_ERROR.0 };
        self.check_init().map_err(fail)?;
        let all = INSTANTIATE_AUTO_FREE_ON_LAUNCH | INSTANTIATE_UPLOAD | INSTANTIATE_DEVICE_LAUNCH | INSTANTIATE_USE_NODE_PRIORITY;
        if flags & !all != 0 {
            return Err(fail(Error::invalid(format!("unknown instantiate flags {flags:#x}"))));
        }
        if flags & INSTANTIATE_DEVICE_LAUNCH != 0 && flags & INSTANTIATE_AUTO_FREE_ON_LAUNCH != 0 {
            return Err(fail(Error::invalid("CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH cannot be combined with AUTO_FREE_ON_LAUNCH")));
        }
        let g = self.graph(graph).map_err(fail)?;
        if lock(&g.owner).is_some() {
            return Err(fail(Error::invalid("a graph moved into a child graph node cannot be instantiated on its own")));
        }
        let (tree, map) = {
            let st = lock(&g.st);
            if st.has_mem_nodes() && lock(&g.execs).iter().any(|e| e.strong_count() > 0) {
                return Err(fail(Error::NotSupported(
                    "a graph with memory allocation or free nodes can have one executable graph at a time".into(),
                )));
            }
            let mut map = HashMap::new();
            let tree = build_level(&st, &mut Vec::new(), &mut map)?;
            (tree, map)
        };
        let ex = self.graph_execs.insert_with(|h| GraphExec {
            handle: h,
            id: NEXT_EXEC_ID.fetch_add(1, Ordering::Relaxed),
            flags,
            st: Mutex::new(ExecState { tree, map, update_map: HashMap::new(), plan: None, last: None }),
        });
        let mut execs = lock(&g.execs);
        execs.retain(|e| e.strong_count() > 0);
        execs.push(Arc::downgrade(&ex));
        Ok(ex.handle)
    }

    /// `cuGraphExecDestroy`: a launch in flight still completes.
    pub fn graph_exec_destroy(&self, h: u64) -> Result<()> {
        self.check_init()?;
        self.graph_execs.remove(h).ok_or_else(|| Error::invalid(format!("{h:#x} is not a live executable graph")))?;
        self.collect_graph_mem();
        Ok(())
    }

    /// `cuGraphExecGetFlags`.
    pub fn graph_exec_flags(&self, h: u64) -> Result<u64> {
        self.check_init()?;
        Ok(self.graph_exec(h)?.flags)
    }

    /// `cuGraphExecGetId`.
    pub fn graph_exec_id(&self, h: u64) -> Result<u32> {
        self.check_init()?;
        Ok(self.graph_exec(h)?.id)
    }

    /// `cuGraphUpload`: prepares the launch plan; nothing else to move.
    pub fn graph_upload(&self, h: u64, stream: u64, ptds: bool) -> Result<()> {
        let (_, s) = self.resolve_stream(stream, ptds)?;
        let ex = self.graph_exec(h)?;
        if self.capturing(&s).is_some() {
            return Err(Error::StreamCaptureUnsupported("cuGraphUpload into a capturing stream".into()));
        }
        let mut st = lock(&ex.st);
        if st.plan.is_none() {
            st.plan = Some(Arc::new(build_plan(&st.tree)));
        }
        Ok(())
    }

    /// `cuGraphLaunch`.
    pub fn graph_launch(&self, h: u64, stream: u64, ptds: bool) -> Result<()> {
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        let ex = self.graph_exec(h)?;
        if s.kind() == crate::stream::StreamKind::Legacy {
            // Refused before event records and allocations are counted.
            self.refuse_legacy_implicit(&ctx, "cuGraphLaunch", true)?;
        }
        if let Some(cap) = self.capturing(&s) {
            // Captured as a child graph node running what the executable
            // graph holds.
            let tree = lock(&ex.st).tree.clone();
            let g = self.graph_from_exec(&tree)?;
            return self.capture_node(&s, &cap, NodeParams::Graph(g)).map(|_| ());
        }
        let mut st = lock(&ex.st);
        let plan = match &st.plan {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(build_plan(&st.tree));
                st.plan = Some(p.clone());
                p
            }
        };
        if let Some(other) = plan.ctxs.iter().find(|&&c| c != ctx.handle) {
            return Err(Error::invalid(format!(
                "the graph's nodes belong to context {other:#x}; it was launched into a stream of context {:#x}",
                ctx.handle
            )));
        }
        // Memory allocation nodes: an allocation still live from the
        // previous launch must have been freed.
        if ex.flags & INSTANTIATE_AUTO_FREE_ON_LAUNCH == 0 {
            if let Some(m) = plan.allocs.iter().find(|m| m.live.load(Ordering::Acquire)) {
                return Err(Error::invalid(format!(
                    "the allocation at {:#x} from the graph's previous launch is not freed (free it, or instantiate with \
                     CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)",
                    m.addr
                )));
            }
        }
        let mut prepared = Vec::with_capacity(plan.checked);
        let mut gens = Vec::with_capacity(plan.events);
        for step in &plan.steps {
            match step {
                Step::Copy(c) => prepared.push(Prepared::Copy(self.plan_copy(c)?)),
                Step::Memset(m) => prepared.push(Prepared::Memset(self.plan_memset(m.dst, m.pitch, m.value, m.width, m.height)?)),
                _ => {}
            }
        }
        for step in &plan.steps {
            match step {
                Step::Record(e) => gens.push(e.begin_record()),
                Step::Wait(e) => gens.push(e.recorded_generation()),
                Step::Alloc(m) => m.live.store(true, Ordering::Release),
                Step::Free(p) => {
                    if let Some(m) = self.graph_mem_at(*p) {
                        m.live.store(false, Ordering::Release);
                    }
                }
                _ => {}
            }
        }
        if !plan.allocs.is_empty() {
            self.note_graph_mem_use();
        }
        let deps = match &st.last {
            Some((ls, seq)) if !Arc::ptr_eq(ls, &s) => vec![DepWait::Stream(Dep { stream: ls.clone(), seq: *seq })],
            _ => Vec::new(),
        };
        let run = plan.clone();
        let gens2 = gens.clone();
        let kernels = plan.steps.iter().filter_map(|step| match step {
            Step::Kernel(k) => k.code.kernels().get(k.index),
            _ => None,
        });
        let limits = ctx.limits_for_launch(kernels);
        match self.submit(&ctx, &s, deps, Box::new(move |sticky, queue| run_plan(&run, &prepared, &gens2, queue, sticky, limits))) {
            Ok(seq) => {
                st.last = Some((s, seq));
                Ok(())
            }
            Err(e) => {
                // Nothing will run: the records complete at once, so that
                // no one waits for them forever.
                let mut g = gens.iter();
                for step in &plan.steps {
                    match step {
                        Step::Record(ev) => {
                            if let Some(&gen) = g.next() {
                                ev.complete(gen);
                            }
                        }
                        Step::Wait(_) => {
                            g.next();
                        }
                        Step::Alloc(m) => m.live.store(false, Ordering::Release),
                        _ => {}
                    }
                }
                Err(e)
            }
        }
    }

    /// A graph with the nodes of an executable graph (for launching one
    /// into a capturing stream).
    fn graph_from_exec(&self, tree: &ExecGraph) -> Result<Arc<Graph>> {
        let g = self.new_graph();
        let mut handles = Vec::with_capacity(tree.nodes.len());
        for n in &tree.nodes {
            let params = match &n.kind {
                ExecKind::Op(p) if !n.enabled && matches!(p, NodeParams::Kernel(_) | NodeParams::Memcpy(_) | NodeParams::Memset(_)) => {
                    NodeParams::Empty
                }
                ExecKind::Op(p) => p.clone(),
                ExecKind::Child(c) => NodeParams::Graph(self.graph_from_exec(c)?),
            };
            let deps: Vec<u64> = n.deps.iter().filter_map(|&d| handles.get(d).copied()).collect();
            handles.push(self.add_node(&g, &deps, params)?);
        }
        Ok(g)
    }

    /// `cuGraphExecUpdate`: takes the parameters of `graph`, which must
    /// have the executable graph's topology.
    pub fn graph_exec_update(&self, exec: u64, graph: u64) -> std::result::Result<(), UpdateFailure> {
        let err = |e: Error| UpdateFailure::new(UR::CU_GRAPH_EXEC_UPDATE_ERROR, 0, e.to_string());
        self.check_init().map_err(err)?;
        let ex = self.graph_exec(exec).map_err(err)?;
        let g = self.graph(graph).map_err(err)?;
        let mut st = lock(&ex.st);
        let mut map = HashMap::new();
        let tree = {
            let data = lock(&g.st);
            updated_level(&st.tree, &data, &mut Vec::new(), &mut map)?
        };
        st.tree = tree;
        st.update_map = map;
        st.plan = None;
        Ok(())
    }

    /// The executable node of `node` (a node of the graph `exec` was
    /// instantiated or updated from), changed by `f`.
    fn with_exec_node<R>(&self, exec: u64, node: u64, f: impl FnOnce(&mut ExecNode) -> Result<R>) -> Result<R> {
        self.check_init()?;
        let ex = self.graph_exec(exec)?;
        let mut st = lock(&ex.st);
        let path = st
            .map
            .get(&node)
            .or_else(|| st.update_map.get(&node))
            .cloned()
            .ok_or_else(|| Error::invalid(format!("{node:#x} is not a node of this executable graph")))?;
        let n = node_at(&mut st.tree, &path).ok_or_else(|| Error::invalid(format!("{node:#x} is not a node of this executable graph")))?;
        let r = f(n)?;
        st.plan = None;
        Ok(r)
    }

    /// `cuGraphExec{Kernel,Memcpy,Memset,Host}NodeSetParams`,
    /// `cuGraphExecEvent{Record,Wait}NodeSetEvent`,
    /// `cuGraphExecNodeSetParams`.
    pub fn graph_exec_node_set_params(&self, exec: u64, node: u64, info: NodeInfoIn<'_>) -> Result<()> {
        let g = self.graph_of_node(node)?;
        let old = self.with_exec_node(exec, node, |n| match &n.kind {
            ExecKind::Op(p) => Ok(p.clone()),
            ExecKind::Child(_) => Err(Error::invalid("child graph nodes take cuGraphExecChildGraphNodeSetParams")),
        })?;
        let new = self.params_for_update(&old, info, &g)?;
        check_update(&old, &new, node).map_err(|f| Error::invalid(f.reason))?;
        self.with_exec_node(exec, node, |n| {
            n.kind = ExecKind::Op(new);
            Ok(())
        })
    }

    /// `cuGraphExecChildGraphNodeSetParams`: the child level takes the
    /// parameters of `child` (same topology).
    pub fn graph_exec_child_set_params(&self, exec: u64, node: u64, child: u64) -> Result<()> {
        let g = self.graph(child)?;
        let data = lock(&g.st);
        if data.has_mem_nodes() {
            return Err(Error::invalid("a child graph with memory nodes cannot be updated"));
        }
        self.with_exec_node(exec, node, |n| match &n.kind {
            ExecKind::Child(c) => {
                let mut map = HashMap::new();
                let level = updated_level(c, &data, &mut Vec::new(), &mut map).map_err(|f| Error::invalid(f.reason))?;
                n.kind = ExecKind::Child(level);
                Ok(())
            }
            ExecKind::Op(_) => Err(Error::invalid(format!("{node:#x} is not a child graph node"))),
        })
    }

    /// `cuGraphNodeSetEnabled`: kernel, memcpy and memset nodes only.
    pub fn graph_node_set_enabled(&self, exec: u64, node: u64, enabled: bool) -> Result<()> {
        self.with_exec_node(exec, node, |n| match &n.kind {
            ExecKind::Op(NodeParams::Kernel(_) | NodeParams::Memcpy(_) | NodeParams::Memset(_)) => {
                n.enabled = enabled;
                Ok(())
            }
            _ => Err(Error::invalid("only kernel, memcpy and memset nodes can be disabled")),
        })
    }

    /// `cuGraphNodeGetEnabled`.
    pub fn graph_node_get_enabled(&self, exec: u64, node: u64) -> Result<bool> {
        self.with_exec_node(exec, node, |n| match &n.kind {
            ExecKind::Op(NodeParams::Kernel(_) | NodeParams::Memcpy(_) | NodeParams::Memset(_)) => Ok(n.enabled),
            _ => Err(Error::invalid("only kernel, memcpy and memset nodes can be disabled")),
        })
    }

    /// For tests: the executable graph's kernel node parameters.
    #[cfg(test)]
    pub(crate) fn exec_kernel_params(&self, exec: u64, node: u64) -> Result<Vec<u8>> {
        self.with_exec_node(exec, node, |n| match &n.kind {
            ExecKind::Op(NodeParams::Kernel(k)) => Ok(k.params.to_vec()),
            _ => Err(Error::invalid("not a kernel node")),
        })
    }
}
