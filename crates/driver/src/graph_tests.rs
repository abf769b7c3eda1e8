//! Graphs, executable graphs and stream capture against the mock backend.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cuda_types::CUgraphNodeType as NT;

use crate::mock::MockBackend;
use crate::*;

const PTX: &str = r#"
.version 8.6
.target sm_86
.address_size 64
.visible .entry mock_fill_u32(.param .u64 p, .param .u32 v, .param .u32 n) { ret; }
.visible .entry mock_sleep(.param .u32 ms) { ret; }
.visible .entry mock_fault() { ret; }
.visible .entry log(.param .u32 id) { ret; }
.visible .entry add(.param .u64 p, .param .u32 v) { ret; }
"#;

struct T {
    d: Driver,
    m: Arc<MockBackend>,
    order: Arc<Mutex<Vec<u32>>>,
    fill: u64,
    sleep: u64,
    log: u64,
    add: u64,
    fault: u64,
}

fn setup() -> T {
    let m = Arc::new(MockBackend::with_builtins(1));
    let order = Arc::new(Mutex::new(Vec::new()));
    let o = order.clone();
    m.register_kernel("log", move |l| {
        o.lock().unwrap_or_else(|e| e.into_inner()).push(l.u32(0));
        Ok(())
    });
    m.register_kernel("add", |l| {
        let p = l.u64(0) as *mut u32;
        // SAFETY: tests pass a live allocation.
        unsafe { *p = (*p).wrapping_add(l.u32(1)) };
        Ok(())
    });
    let d = Driver::new(m.clone(), Config::default());
    d.init(0).expect("init");
    let c = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(c).expect("set current");
    let mut jit = JitLog::default();
    let module = d.module_load(ModuleSource::Ptx(PTX), ModuleOptions::default(), &mut jit).expect("load");
    let f = |n: &str| d.module_get_function(module, n).expect("function");
    let (fill, sleep, log, add, fault) = (f("mock_fill_u32"), f("mock_sleep"), f("log"), f("add"), f("mock_fault"));
    T { d, m, order, fill, sleep, log, add, fault }
}

fn cfg(stream: u64) -> LaunchConfig {
    LaunchConfig { grid: [1, 1, 1], block: [1, 1, 1], shared_bytes: 0, stream, cooperative: false }
}

impl T {
    fn order(&self) -> Vec<u32> {
        std::mem::take(&mut *self.order.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn launch_log(&self, stream: u64, id: u32) -> Result<()> {
        let args = [&id as *const u32 as *const std::ffi::c_void];
        // SAFETY: one pointer per parameter, to a value of its size.
        unsafe { self.d.launch_kernel(self.log, &cfg(stream), KernelArgs::Pointers(args.as_ptr()), false) }
    }

    fn launch_add(&self, stream: u64, p: u64, v: u32) -> Result<()> {
        let args = [&p as *const u64 as *const std::ffi::c_void, &v as *const u32 as *const std::ffi::c_void];
        // SAFETY: as above.
        unsafe { self.d.launch_kernel(self.add, &cfg(stream), KernelArgs::Pointers(args.as_ptr()), false) }
    }

    fn log_node(&self, g: u64, deps: &[u64], id: u32) -> Result<u64> {
        let buf = id.to_le_bytes();
        let spec = KernelNodeSpec { func: self.log, ctx: 0, grid: [1; 3], block: [1; 3], shared_bytes: 0, args: KernelArgs::Buffer(&buf) };
        self.d.graph_add_node(g, deps, NodeInfoIn::Kernel(spec))
    }

    fn add_node(&self, g: u64, deps: &[u64], p: u64, v: u32) -> Result<u64> {
        let mut buf = p.to_le_bytes().to_vec();
        buf.extend_from_slice(&v.to_le_bytes());
        let spec = KernelNodeSpec { func: self.add, ctx: 0, grid: [1; 3], block: [1; 3], shared_bytes: 0, args: KernelArgs::Buffer(&buf) };
        self.d.graph_add_node(g, deps, NodeInfoIn::Kernel(spec))
    }

    fn read_u32(&self, p: u64) -> u32 {
        let mut b = [0u8; 4];
        self.d.read_device(p, &mut b).expect("read");
        u32::from_le_bytes(b)
    }

    fn write_u32(&self, p: u64, v: u32) {
        // SAFETY: a host value, valid for the synchronous copy.
        unsafe { self.d.memcpy_htod(p, &v as *const u32 as usize, 4, 0, false, false) }.expect("write");
    }

    fn instantiate(&self, g: u64) -> u64 {
        self.d.graph_instantiate(g, 0).map_err(|f| f.error).expect("instantiate")
    }
}

/// Whether `order` runs each edge's source before its destination.
fn respects(order: &[u32], edges: &[(u32, u32)]) -> bool {
    let pos = |x: u32| order.iter().position(|&y| y == x);
    edges.iter().all(|&(a, b)| matches!((pos(a), pos(b)), (Some(i), Some(j)) if i < j))
}

#[test]
fn a_diamond_built_with_the_node_api_runs_in_dependency_order() {
    let t = setup();
    let g = t.d.graph_create(0).expect("graph");
    assert!(matches!(t.d.graph_create(1), Err(Error::InvalidValue(_))));
    // 1 -> {2, 3} -> 4 -> 5, with 5 added first (its edge comes later) and
    // 3 before 2: insertion order alone would be wrong.
    let z = t.log_node(g, &[], 5).expect("z");
    let a = t.log_node(g, &[], 1).expect("a");
    let c = t.log_node(g, &[a], 3).expect("c");
    let b = t.log_node(g, &[a], 2).expect("b");
    let e = t.d.graph_add_node(g, &[], NodeInfoIn::Empty).expect("empty");
    let dnode = t.log_node(g, &[b, c, e], 4).expect("d");
    assert!(matches!(t.log_node(g, &[a, a], 9), Err(Error::InvalidValue(_))), "duplicate dependency");
    assert!(matches!(t.log_node(g, &[0xdead_0000], 9), Err(Error::InvalidValue(_))), "not a node");
    assert_eq!(t.d.graph_nodes(g), Ok(vec![z, a, c, b, e, dnode]));
    assert_eq!(t.d.graph_root_nodes(g), Ok(vec![z, a, e]));
    t.d.graph_add_dependencies(g, &[dnode], &[z]).expect("late edge");
    assert_eq!(t.d.graph_root_nodes(g), Ok(vec![a, e]));
    assert_eq!(t.d.graph_node_dependencies(dnode), Ok(vec![b, c, e]));
    assert_eq!(t.d.graph_node_dependents(a), Ok(vec![c, b]));
    assert_eq!(t.d.graph_node_type(e), Ok(NT::CU_GRAPH_NODE_TYPE_EMPTY));
    assert_eq!(t.d.graph_node_type(a), Ok(NT::CU_GRAPH_NODE_TYPE_KERNEL));
    assert_eq!(t.d.graph_edges(g).map(|v| v.len()), Ok(6));
    let x = t.instantiate(g);
    let s = t.d.stream_create(1, 0).expect("stream");
    let before = t.m.launches.load(Ordering::Relaxed);
    for _ in 0..3 {
        t.d.graph_launch(x, s, false).expect("launch");
    }
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.m.launches.load(Ordering::Relaxed) - before, 15, "five kernels, three launches");
    let order = t.order();
    for run in order.chunks(5) {
        assert!(respects(run, &[(1, 2), (1, 3), (2, 4), (3, 4), (4, 5)]), "{order:?}");
    }
    // Edges: duplicates, self-edges and missing edges are refused.
    assert!(matches!(t.d.graph_add_dependencies(g, &[a], &[b]), Err(Error::InvalidValue(_))), "exists");
    assert!(matches!(t.d.graph_add_dependencies(g, &[a], &[a]), Err(Error::InvalidValue(_))), "self");
    assert!(matches!(t.d.graph_remove_dependencies(g, &[b], &[a]), Err(Error::InvalidValue(_))), "no such edge");
    t.d.graph_remove_dependencies(g, &[e], &[dnode]).expect("remove");
    assert_eq!(t.d.graph_node_dependencies(dnode), Ok(vec![b, c]));
    // A cycle cannot be instantiated.
    t.d.graph_add_dependencies(g, &[dnode], &[a]).expect("edge back");
    let f = t.d.graph_instantiate(g, 0).expect_err("cycle");
    assert!(matches!(f.error, Error::InvalidValue(_)));
    assert_eq!(f.result, 2, "CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE");
    // Destroying a node removes its edges; the executable graph is a copy.
    t.d.graph_destroy_node(dnode).expect("destroy node");
    assert_eq!(t.d.graph_node_dependents(b), Ok(vec![]));
    assert!(t.d.graph_node_type(dnode).is_err());
    t.d.graph_destroy(g).expect("destroy graph");
    assert!(t.d.graph_nodes(g).is_err());
    t.d.graph_launch(x, s, false).expect("the executable graph outlives its graph");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.order().len(), 5);
    t.d.graph_exec_destroy(x).expect("destroy exec");
    assert!(t.d.graph_launch(x, s, false).is_err());
}

#[test]
fn capture_records_instead_of_running_and_the_graph_replays_it() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("stream");
    let p = t.d.mem_alloc(64).expect("alloc");
    let mut host = [0u32; 4];
    let hp = host.as_mut_ptr();
    let calls = Arc::new(AtomicU32::new(0));
    let before = t.m.launches.load(Ordering::Relaxed);
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    assert_eq!(t.d.stream_capture_info(s, false).map(|i| i.status), Ok(CaptureStatus::Active));
    t.d.memset(p, MemsetValue::U32(5), 4, s, false, true).expect("memset");
    t.launch_add(s, p, 10).expect("add");
    let c2 = calls.clone();
    t.d.launch_host_func(
        s,
        false,
        HostFn::new(move || {
            c2.fetch_add(1, Ordering::SeqCst);
        }),
    )
    .expect("host");
    // SAFETY: `host` lives until the graph's launches are synchronised.
    unsafe { t.d.memcpy_dtoh(hp as usize, p, 16, s, false, true) }.expect("copy");
    let info = t.d.stream_capture_info(s, false).expect("info");
    assert_eq!(info.deps.len(), 1, "the copy is the stream's dependency set");
    assert_eq!(t.m.launches.load(Ordering::Relaxed), before, "nothing ran");
    assert_eq!(t.read_u32(p), 0);
    let g = t.d.stream_end_capture(s, false).expect("end");
    assert_eq!(t.d.stream_capture_info(s, false).map(|i| i.status), Ok(CaptureStatus::None));
    assert_eq!(info.graph, g);
    let types: Vec<NT> = t.d.graph_nodes(g).expect("nodes").iter().map(|n| t.d.graph_node_type(*n).expect("type")).collect();
    assert_eq!(
        types,
        vec![NT::CU_GRAPH_NODE_TYPE_MEMSET, NT::CU_GRAPH_NODE_TYPE_KERNEL, NT::CU_GRAPH_NODE_TYPE_HOST, NT::CU_GRAPH_NODE_TYPE_MEMCPY]
    );
    let nodes = t.d.graph_nodes(g).expect("nodes");
    assert_eq!(t.d.graph_node_dependencies(nodes[3]), Ok(vec![nodes[2]]), "a chain");
    let x = t.instantiate(g);
    for round in 1..=2 {
        t.d.graph_launch(x, s, false).expect("launch");
        t.d.stream_synchronize(s, false).expect("sync");
        // SAFETY: the graph's copy wrote it; the stream is synchronised.
        let got = unsafe { [hp.read(), hp.add(1).read()] };
        assert_eq!(got, [15, 5], "memset then add, copied back (round {round})");
        assert_eq!(calls.load(Ordering::SeqCst), round);
    }
}

#[test]
fn forked_streams_join_back_and_unjoined_forks_fail_the_capture() {
    let t = setup();
    let (s1, s2) = (t.d.stream_create(1, 0).expect("s1"), t.d.stream_create(1, 0).expect("s2"));
    let (fork, join) = (t.d.event_create(2).expect("event"), t.d.event_create(2).expect("event"));
    t.d.stream_begin_capture(s1, false, CAPTURE_MODE_GLOBAL).expect("begin");
    t.launch_log(s1, 1).expect("a");
    t.d.event_record(fork, s1, false, 0).expect("fork");
    assert!(matches!(t.d.event_query(fork), Err(Error::CapturedEvent(_))), "a captured event cannot be queried");
    assert!(matches!(t.d.event_synchronize(fork), Err(Error::CapturedEvent(_))));
    t.d.stream_wait_event(s2, fork, false, 0).expect("s2 joins the capture");
    assert_eq!(t.d.stream_capture_info(s2, false).map(|i| i.status), Ok(CaptureStatus::Active));
    t.launch_log(s2, 2).expect("b on s2");
    t.launch_log(s1, 3).expect("c on s1");
    assert!(matches!(t.d.stream_end_capture(s2, false), Err(Error::StreamCaptureUnmatched(_))), "not the origin");
    t.d.event_record(join, s2, false, 0).expect("join");
    t.d.stream_wait_event(s1, join, false, 0).expect("s1 waits for s2");
    t.launch_log(s1, 4).expect("d");
    let g = t.d.stream_end_capture(s1, false).expect("end");
    assert_eq!(t.d.stream_capture_info(s2, false).map(|i| i.status), Ok(CaptureStatus::None), "s2 left the capture");
    let n = t.d.graph_nodes(g).expect("nodes");
    assert_eq!(n.len(), 4);
    let mut edges = t.d.graph_edges(g).expect("edges");
    edges.sort();
    let mut want = vec![(n[0], n[1]), (n[0], n[2]), (n[1], n[3]), (n[2], n[3])];
    want.sort();
    assert_eq!(edges, want, "a -> b, a -> c, {{b, c}} -> d");
    let x = t.instantiate(g);
    t.d.graph_launch(x, s1, false).expect("launch");
    t.d.stream_synchronize(s1, false).expect("sync");
    let order = t.order();
    assert!(respects(&order, &[(1, 2), (1, 3), (2, 4), (3, 4)]), "{order:?}");

    // A fork that does work and never joins back.
    t.d.stream_begin_capture(s1, false, CAPTURE_MODE_GLOBAL).expect("begin");
    t.launch_log(s1, 1).expect("a");
    t.d.event_record(fork, s1, false, 0).expect("fork");
    t.d.stream_wait_event(s2, fork, false, 0).expect("join the capture");
    t.launch_log(s2, 2).expect("work never joined");
    assert!(matches!(t.d.stream_end_capture(s1, false), Err(Error::StreamCaptureUnjoined(_))));
    assert_eq!(t.d.stream_capture_info(s2, false).map(|i| i.status), Ok(CaptureStatus::None), "the capture ended anyway");
    // An event recorded outside the capture cannot be waited on in it.
    let outside = t.d.event_create(0).expect("event");
    t.d.event_record(outside, s2, false, 0).expect("record");
    t.d.stream_begin_capture(s1, false, CAPTURE_MODE_GLOBAL).expect("begin");
    assert!(matches!(t.d.stream_wait_event(s1, outside, false, 0), Err(Error::StreamCaptureIsolation(_))));
    assert!(matches!(t.d.stream_end_capture(s1, false), Err(Error::StreamCaptureInvalidated(_))));
    // Unless it is captured as an external wait node.
    t.d.stream_begin_capture(s1, false, CAPTURE_MODE_GLOBAL).expect("begin");
    t.d.stream_wait_event(s1, outside, false, 1).expect("external wait");
    t.d.event_record(outside, s1, false, 1).expect("external record");
    let g = t.d.stream_end_capture(s1, false).expect("end");
    let types: Vec<NT> = t.d.graph_nodes(g).expect("nodes").iter().map(|n| t.d.graph_node_type(*n).expect("type")).collect();
    assert_eq!(types, vec![NT::CU_GRAPH_NODE_TYPE_WAIT_EVENT, NT::CU_GRAPH_NODE_TYPE_EVENT_RECORD]);
    assert!(matches!(t.d.stream_wait_event(s1, outside, false, 1), Err(Error::InvalidValue(_))), "external outside capture");
}

#[test]
fn operations_that_cannot_be_captured_invalidate_the_capture() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("non-blocking stream");
    let blocking = t.d.stream_create(0, 0).expect("blocking stream");
    let p = t.d.mem_alloc(64).expect("alloc");
    let ended = |s: u64| t.d.stream_end_capture(s, false);

    assert!(matches!(t.d.stream_begin_capture(0, false, 0), Err(Error::StreamCaptureUnsupported(_))), "legacy stream");
    assert!(matches!(ended(s), Err(Error::IllegalState(_))), "not capturing");
    assert!(matches!(t.d.stream_begin_capture(s, false, 3), Err(Error::InvalidValue(_))), "mode");

    // Synchronising or querying the capturing stream.
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    assert!(matches!(t.d.stream_begin_capture(s, false, 0), Err(Error::IllegalState(_))), "already capturing");
    assert!(matches!(t.d.stream_synchronize(s, false), Err(Error::StreamCaptureUnsupported(_))));
    assert_eq!(t.d.stream_capture_info(s, false).map(|i| i.status), Ok(CaptureStatus::Invalidated));
    assert!(matches!(t.launch_log(s, 1), Err(Error::StreamCaptureInvalidated(_))), "later work reports it");
    assert!(matches!(ended(s), Err(Error::StreamCaptureInvalidated(_))));
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    assert!(matches!(t.d.stream_query(s, false), Err(Error::StreamCaptureUnsupported(_))));
    assert!(matches!(ended(s), Err(Error::StreamCaptureInvalidated(_))));
    // Work that cannot be captured (a stream callback).
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    assert!(matches!(t.d.stream_add_callback(s, false, 0, Box::new(|_| {})), Err(Error::StreamCaptureUnsupported(_))));
    assert!(matches!(ended(s), Err(Error::StreamCaptureInvalidated(_))));

    // Potentially unsafe calls, by capture mode.
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    assert!(matches!(t.d.mem_alloc(16), Err(Error::StreamCaptureUnsupported(_))), "cuMemAlloc in a global capture");
    assert!(matches!(ended(s), Err(Error::StreamCaptureInvalidated(_))));
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_RELAXED).expect("begin relaxed");
    let q = t.d.mem_alloc(16).expect("relaxed allows it");
    t.d.mem_free(q).expect("free");
    t.d.ctx_synchronize(0).expect("context synchronisation too");
    t.launch_log(s, 1).expect("kernel");
    assert_eq!(t.d.graph_nodes(ended(s).expect("end")).map(|n| n.len()), Ok(1));
    // Another thread: forbidden during a global capture unless its own
    // mode is relaxed; a thread-local capture does not concern it.
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let c = t.d.primary_ctx_handle(0).expect("ctx");
            t.d.ctx_set_current(c).expect("current");
            assert_eq!(t.d.thread_exchange_capture_mode(CAPTURE_MODE_RELAXED), Ok(CAPTURE_MODE_GLOBAL));
            let q = t.d.mem_alloc(16).expect("a relaxed thread may allocate");
            t.d.mem_free(q).expect("free");
            assert_eq!(t.d.thread_exchange_capture_mode(CAPTURE_MODE_GLOBAL), Ok(CAPTURE_MODE_RELAXED));
            assert!(matches!(t.d.mem_alloc(16), Err(Error::StreamCaptureUnsupported(_))));
        });
    });
    assert!(matches!(ended(s), Err(Error::StreamCaptureInvalidated(_))), "the other thread's call invalidated it");
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_THREAD_LOCAL).expect("begin thread-local");
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let c = t.d.primary_ctx_handle(0).expect("ctx");
            t.d.ctx_set_current(c).expect("current");
            let q = t.d.mem_alloc(16).expect("another thread is not concerned");
            t.d.mem_free(q).expect("free");
        });
    });
    assert!(matches!(t.d.mem_alloc(16), Err(Error::StreamCaptureUnsupported(_))), "the capturing thread is");
    assert!(matches!(ended(s), Err(Error::StreamCaptureInvalidated(_))));
    assert!(matches!(t.d.thread_exchange_capture_mode(7), Err(Error::InvalidValue(_))));

    // Ending from another thread.
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    let other = std::thread::scope(|sc| sc.spawn(|| t.d.stream_end_capture(s, false)).join());
    assert!(matches!(other, Ok(Err(Error::StreamCaptureWrongThread(_)))));
    ended(s).expect("the capturing thread ends it");
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_RELAXED).expect("begin relaxed");
    let other = std::thread::scope(|sc| sc.spawn(|| t.d.stream_end_capture(s, false)).join());
    assert!(matches!(other, Ok(Ok(_))), "any thread ends a relaxed capture");

    // The legacy stream and a capturing blocking stream.
    t.d.stream_begin_capture(blocking, false, CAPTURE_MODE_RELAXED).expect("begin");
    assert!(matches!(t.d.stream_capture_info(0, false), Err(Error::StreamCaptureImplicit(_))), "querying legacy");
    assert_eq!(t.d.stream_capture_info(blocking, false).map(|i| i.status), Ok(CaptureStatus::Active), "not invalidated by the query");
    assert!(matches!(t.d.memset(p, MemsetValue::U8(1), 4, 0, false, true), Err(Error::StreamCaptureImplicit(_))));
    let ev = t.d.event_create(0).expect("event");
    assert!(matches!(t.d.event_record(ev, 0, false, 0), Err(Error::StreamCaptureImplicit(_))));
    assert_eq!(t.d.event_synchronize(ev), Ok(()), "a refused record leaves nothing to wait for");
    assert!(matches!(ended(blocking), Err(Error::StreamCaptureInvalidated(_))));
    // A non-blocking stream's capture leaves the legacy stream usable.
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_RELAXED).expect("begin");
    t.d.memset(p, MemsetValue::U8(1), 4, 0, false, false).expect("legacy work runs");
    ended(s).expect("end");
}

#[test]
fn exec_update_takes_new_parameters_or_says_what_changed() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("stream");
    let p = t.d.mem_alloc(16).expect("alloc");
    let capture = |v: u32, extra: bool| {
        t.d.stream_begin_capture(s, false, CAPTURE_MODE_RELAXED).expect("begin");
        t.d.memset(p, MemsetValue::U32(0), 1, s, false, true).expect("memset");
        t.launch_add(s, p, v).expect("add");
        if extra {
            t.launch_log(s, 7).expect("log");
        }
        t.d.stream_end_capture(s, false).expect("end")
    };
    let g1 = capture(3, false);
    let x = t.instantiate(g1);
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.read_u32(p), 3);
    let g2 = capture(40, false);
    t.d.graph_exec_update(x, g2).expect("same topology");
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.read_u32(p), 40, "the new argument");
    let g3 = capture(5, true);
    let f = t.d.graph_exec_update(x, g3).expect_err("a node more");
    assert_eq!(f.result, 2, "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED");
    // Same shape, another node type.
    let g4 = t.d.graph_create(0).expect("graph");
    let m = t.d.graph_add_node(g4, &[], NodeInfoIn::Empty).expect("empty");
    t.add_node(g4, &[m], p, 1).expect("add");
    let f = t.d.graph_exec_update(x, g4).expect_err("type changed");
    assert_eq!(f.result, 3, "CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED");
    assert_eq!(f.node, m);
    // Same types, different edges.
    let g5 = t.d.graph_create(0).expect("graph");
    let spec = MemsetSpec { dst: p, pitch: 0, value: 0, element_size: 4, width: 1, height: 1, ctx: 0 };
    t.d.graph_add_node(g5, &[], NodeInfoIn::Memset(spec)).expect("memset");
    t.add_node(g5, &[], p, 1).expect("add without the edge");
    let f = t.d.graph_exec_update(x, g5).expect_err("edge missing");
    assert_eq!(f.result, 2);
    // After the failures the executable graph is unchanged.
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.read_u32(p), 40);
}

#[test]
fn kernel_parameters_change_on_the_node_or_only_on_the_executable_graph() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("stream");
    let (p, q) = (t.d.mem_alloc(16).expect("alloc"), t.d.mem_alloc(16).expect("alloc"));
    let g = t.d.graph_create(0).expect("graph");
    let k = t.add_node(g, &[], p, 2).expect("add");
    let NodeInfo::Kernel(info) = t.d.graph_node_params(k).expect("params") else { panic!("not a kernel node") };
    assert_eq!((info.grid, info.block, info.shared_bytes), ([1; 3], [1; 3], 0));
    // llama.cpp's way: replace one entry of the pointer array the driver
    // handed out, then give the array back.
    let args = info.args as *mut *const std::ffi::c_void;
    // SAFETY: the driver's array of two pointers, valid until the node's
    // parameters change.
    let first = unsafe { *(*args as *const u64) };
    assert_eq!(first, p, "the array points at the node's arguments");
    unsafe { *args = &q as *const u64 as *const std::ffi::c_void };
    let spec = KernelNodeSpec { func: t.add, ctx: 0, grid: [1; 3], block: [1; 3], shared_bytes: 0, args: KernelArgs::Pointers(args as _) };
    t.d.graph_node_set_params(k, NodeInfoIn::Kernel(spec)).expect("set params");
    let x = t.instantiate(g);
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!((t.read_u32(p), t.read_u32(q)), (0, 2), "the node adds to q now");
    // Changing the executable graph leaves the graph alone.
    let mut buf = p.to_le_bytes().to_vec();
    buf.extend_from_slice(&100u32.to_le_bytes());
    let spec = KernelNodeSpec { func: t.add, ctx: 0, grid: [1; 3], block: [1; 3], shared_bytes: 0, args: KernelArgs::Buffer(&buf) };
    t.d.graph_exec_node_set_params(x, k, NodeInfoIn::Kernel(spec)).expect("exec set params");
    assert_eq!(t.d.exec_kernel_params(x, k).map(|v| v[..8].to_vec()), Ok(p.to_le_bytes().to_vec()));
    let NodeInfo::Kernel(info) = t.d.graph_node_params(k).expect("params") else { panic!("not a kernel node") };
    // SAFETY: as above.
    assert_eq!(unsafe { *(*(info.args as *const *const u64)) }, q, "the graph still has q");
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!((t.read_u32(p), t.read_u32(q)), (100, 2));
    // Not a kernel's parameters for a kernel node; a node of no graph.
    assert!(t.d.graph_exec_node_set_params(x, k, NodeInfoIn::Empty).is_err());
    assert!(t.d.graph_exec_node_set_params(x, 0x4b_dead_0000, NodeInfoIn::Empty).is_err());
    // Disabled nodes do nothing.
    t.d.graph_node_set_enabled(x, k, false).expect("disable");
    assert_eq!(t.d.graph_node_get_enabled(x, k), Ok(false));
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.read_u32(p), 100);
    // Attributes.
    let mut v = [0u8; 64];
    v[..4].copy_from_slice(&7i32.to_ne_bytes());
    t.d.graph_kernel_node_set_attribute(k, 8, v).expect("priority");
    assert_eq!(t.d.graph_kernel_node_attribute(k, 8).map(|a| a[0]), Ok(7));
}

#[test]
fn child_graphs_clones_and_the_dot_print() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("stream");
    let child = t.d.graph_create(0).expect("child");
    let c1 = t.log_node(child, &[], 10).expect("c1");
    t.log_node(child, &[c1], 11).expect("c2");
    let g = t.d.graph_create(0).expect("graph");
    let a = t.log_node(g, &[], 1).expect("a");
    let node = t.d.graph_add_node(g, &[a], NodeInfoIn::Graph { graph: child, moved: false }).expect("child node");
    t.log_node(g, &[node], 2).expect("b");
    // The node holds a copy: changing the original changes nothing.
    t.log_node(child, &[], 99).expect("late");
    let NodeInfo::Graph(embedded) = t.d.graph_node_params(node).expect("params") else { panic!("not a child node") };
    assert_eq!(t.d.graph_nodes(embedded).map(|n| n.len()), Ok(2));
    assert!(matches!(t.d.graph_destroy(embedded), Err(Error::InvalidValue(_))), "the node owns it");
    let x = t.instantiate(g);
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.order(), vec![1, 10, 11, 2]);
    let clone = t.d.graph_clone(g).expect("clone");
    let ca = t.d.graph_node_find_in_clone(a, clone).expect("find");
    assert_ne!(ca, a);
    assert_eq!(t.d.graph_node_type(ca), Ok(NT::CU_GRAPH_NODE_TYPE_KERNEL));
    t.d.graph_destroy(g).expect("destroy the original");
    let xc = t.instantiate(clone);
    t.d.graph_launch(xc, s, false).expect("launch the clone");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.order(), vec![1, 10, 11, 2]);
    let dot = t.d.graph_debug_dot(clone, 1).expect("dot");
    assert!(dot.starts_with("digraph"));
    assert_eq!(dot.matches("kernel").count(), 4, "{dot}");
    assert_eq!(dot.matches(" -> ").count(), 3, "{dot}");
    // Capture into the executable graph of a capture: a child graph node.
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    t.d.graph_launch(xc, s, false).expect("launch during capture");
    t.launch_log(s, 3).expect("after");
    let outer = t.d.stream_end_capture(s, false).expect("end");
    let types: Vec<NT> = t.d.graph_nodes(outer).expect("nodes").iter().map(|n| t.d.graph_node_type(*n).expect("type")).collect();
    assert_eq!(types, vec![NT::CU_GRAPH_NODE_TYPE_GRAPH, NT::CU_GRAPH_NODE_TYPE_KERNEL]);
    let xo = t.instantiate(outer);
    t.d.graph_launch(xo, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.order(), vec![1, 10, 11, 2, 3]);
}

#[test]
fn memory_nodes_allocate_once_and_must_be_freed_between_launches() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("stream");
    let spec = MemAllocSpec { alloc_type: 1, handle_types: 0, location_type: 1, device: 0, access: Vec::new(), bytesize: 256 };
    // alloc -> add -> free: relaunchable.
    let g = t.d.graph_create(0).expect("graph");
    let a = t.d.graph_add_node(g, &[], NodeInfoIn::MemAlloc(spec.clone())).expect("alloc");
    let NodeInfo::MemAlloc { dptr, .. } = t.d.graph_node_params(a).expect("params") else { panic!("not an alloc node") };
    assert!(t.d.pointer_info(dptr).is_some(), "the address is known at once");
    let k = t.add_node(g, &[a], dptr, 1).expect("use");
    t.d.graph_add_node(g, &[k], NodeInfoIn::MemFree(dptr)).expect("free");
    assert!(matches!(t.d.graph_add_node(g, &[], NodeInfoIn::MemFree(dptr)), Err(Error::InvalidValue(_))), "freed twice");
    assert!(matches!(t.d.graph_add_node(g, &[], NodeInfoIn::MemFree(0x1234_0000)), Err(Error::InvalidValue(_))), "not graph memory");
    assert!(matches!(t.d.graph_clone(g), Err(Error::NotSupported(_))));
    assert!(matches!(t.d.graph_destroy_node(k), Err(Error::NotSupported(_))));
    let x = t.instantiate(g);
    assert!(matches!(t.d.graph_instantiate(g, 0).map_err(|f| f.error), Err(Error::NotSupported(_))), "one at a time");
    for _ in 0..2 {
        t.d.graph_launch(x, s, false).expect("launch");
    }
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.d.device_graph_mem_attribute(0, 2), Ok(256), "reserved");
    // alloc without free: the allocation outlives the launch.
    let g2 = t.d.graph_create(0).expect("graph");
    let a2 = t.d.graph_add_node(g2, &[], NodeInfoIn::MemAlloc(spec.clone())).expect("alloc");
    let NodeInfo::MemAlloc { dptr: p2, .. } = t.d.graph_node_params(a2).expect("params") else { panic!("not an alloc node") };
    t.add_node(g2, &[a2], p2, 5).expect("use");
    let x2 = t.instantiate(g2);
    t.d.graph_launch(x2, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.read_u32(p2), 5, "readable after the launch");
    assert_eq!(t.d.device_graph_mem_attribute(0, 0), Ok(256), "in use");
    assert!(matches!(t.d.graph_launch(x2, s, false), Err(Error::InvalidValue(_))), "not freed yet");
    t.d.mem_free_async(p2, s, false).expect("free it in stream order");
    t.d.graph_launch(x2, s, false).expect("launch again");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.read_u32(p2), 10);
    // With auto-free, relaunching frees.
    t.d.graph_exec_destroy(x2).expect("destroy");
    let x3 = t.d.graph_instantiate(g2, INSTANTIATE_AUTO_FREE_ON_LAUNCH).map_err(|f| f.error).expect("instantiate");
    t.d.graph_launch(x3, s, false).expect("launch");
    t.d.graph_launch(x3, s, false).expect("auto-freed");
    t.d.stream_synchronize(s, false).expect("sync");
    // Captured stream-ordered allocation.
    t.d.stream_begin_capture(s, false, CAPTURE_MODE_GLOBAL).expect("begin");
    let q = t.d.mem_alloc_async(64, None, s, false).expect("alloc node");
    t.launch_add(s, q, 9).expect("use");
    t.d.mem_free_async(q, s, false).expect("free node");
    let gc = t.d.stream_end_capture(s, false).expect("end");
    let types: Vec<NT> = t.d.graph_nodes(gc).expect("nodes").iter().map(|n| t.d.graph_node_type(*n).expect("type")).collect();
    assert_eq!(types, vec![NT::CU_GRAPH_NODE_TYPE_MEM_ALLOC, NT::CU_GRAPH_NODE_TYPE_KERNEL, NT::CU_GRAPH_NODE_TYPE_MEM_FREE]);
    // Memory goes when nothing refers to it.
    let before = t.m.allocated_bytes();
    t.d.graph_exec_destroy(x3).expect("destroy");
    t.d.graph_destroy(g2).expect("destroy");
    assert_eq!(t.m.allocated_bytes(), before - 256);
}

#[test]
fn event_nodes_and_launch_ordering_across_streams() {
    let t = setup();
    let (s1, s2) = (t.d.stream_create(1, 0).expect("s1"), t.d.stream_create(1, 0).expect("s2"));
    let ev = t.d.event_create(0).expect("event");
    let p = t.d.mem_alloc(16).expect("alloc");
    // A graph that sleeps, then records the event.
    let g = t.d.graph_create(0).expect("graph");
    let ms = 150u32.to_le_bytes();
    let spec = KernelNodeSpec { func: t.sleep, ctx: 0, grid: [1; 3], block: [1; 3], shared_bytes: 0, args: KernelArgs::Buffer(&ms) };
    let k = t.d.graph_add_node(g, &[], NodeInfoIn::Kernel(spec)).expect("sleep");
    t.d.graph_add_node(g, &[k], NodeInfoIn::EventRecord(ev)).expect("record");
    let x = t.instantiate(g);
    t.d.graph_launch(x, s1, false).expect("launch");
    assert_eq!(t.d.event_query(ev), Err(Error::NotReady), "recorded by the running graph");
    // A graph on s2 that waits for the event, then adds.
    let g2 = t.d.graph_create(0).expect("graph");
    let w = t.d.graph_add_node(g2, &[], NodeInfoIn::EventWait(ev)).expect("wait");
    t.add_node(g2, &[w], p, 1).expect("add");
    let x2 = t.instantiate(g2);
    t.d.graph_launch(x2, s2, false).expect("launch");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(t.read_u32(p), 0, "still waiting for the first graph");
    t.d.event_synchronize(ev).expect("sync");
    t.d.stream_synchronize(s2, false).expect("sync");
    assert_eq!(t.read_u32(p), 1);
    // Launches of one executable graph are ordered even on two streams.
    let start = std::time::Instant::now();
    t.d.graph_launch(x, s1, false).expect("launch");
    t.d.graph_launch(x, s2, false).expect("launch");
    t.d.stream_synchronize(s2, false).expect("sync");
    assert!(start.elapsed() >= Duration::from_millis(290), "the second launch waited for the first: {:?}", start.elapsed());
    t.write_u32(p, 0);
}

#[test]
fn a_fault_in_a_graph_is_sticky_and_events_still_complete() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("stream");
    let ev = t.d.event_create(0).expect("event");
    let g = t.d.graph_create(0).expect("graph");
    let spec = KernelNodeSpec { func: t.fault, ctx: 0, grid: [1; 3], block: [1; 3], shared_bytes: 0, args: KernelArgs::None };
    let f = t.d.graph_add_node(g, &[], NodeInfoIn::Kernel(spec)).expect("fault");
    let l = t.log_node(g, &[f], 1).expect("after");
    t.d.graph_add_node(g, &[l], NodeInfoIn::EventRecord(ev)).expect("record");
    let x = t.instantiate(g);
    t.d.graph_launch(x, s, false).expect("launch");
    assert!(matches!(t.d.stream_synchronize(s, false), Err(Error::Fault(_))));
    assert!(t.order().is_empty(), "nothing after the fault ran");
    assert!(matches!(t.d.event_synchronize(ev), Err(Error::Fault(_))), "the event completed; the context is poisoned");
    let _ = t.fill;
}

#[test]
fn the_per_thread_stream_captures_and_capture_can_extend_a_graph() {
    let t = setup();
    let p = t.d.mem_alloc(16).expect("alloc");
    // The per-thread default stream (ptds: stream 0 means it).
    t.d.stream_begin_capture(0, true, CAPTURE_MODE_RELAXED).expect("begin on the per-thread stream");
    assert_eq!(t.d.stream_capture_info(0, true).map(|i| i.status), Ok(CaptureStatus::Active));
    assert!(
        matches!(t.d.stream_capture_info(0, false), Err(Error::StreamCaptureImplicit(_))),
        "the legacy stream synchronises with the per-thread stream, which captures"
    );
    let v = 4u32;
    // SAFETY: a host value valid for the call; it is captured, not run.
    assert!(
        matches!(unsafe { t.d.memcpy_htod(p, &v as *const u32 as usize, 4, 0, true, false) }, Err(Error::StreamCaptureUnsupported(_))),
        "a synchronous copy on the capturing per-thread stream"
    );
    assert!(matches!(t.d.stream_end_capture(0, true), Err(Error::StreamCaptureInvalidated(_))));
    t.d.stream_begin_capture(0, true, CAPTURE_MODE_RELAXED).expect("begin");
    // SAFETY: as above; the asynchronous form is captured.
    unsafe { t.d.memcpy_htod(p, &v as *const u32 as usize, 4, 0, true, true) }.expect("captured copy");
    let g = t.d.stream_end_capture(0, true).expect("end");
    assert_eq!(t.d.graph_nodes(g).map(|n| n.len()), Ok(1));
    assert_eq!(t.read_u32(p), 0, "not run");

    // Capture into an existing graph, after one of its nodes.
    let s = t.d.stream_create(1, 0).expect("stream");
    let first = t.log_node(g, &[], 1).expect("node");
    t.d.stream_begin_capture_to_graph(s, false, g, &[first], CAPTURE_MODE_GLOBAL).expect("begin to graph");
    assert!(matches!(t.d.graph_destroy(g), Err(Error::InvalidValue(_))), "not while capturing into it");
    t.launch_log(s, 2).expect("captured");
    assert_eq!(t.d.stream_end_capture(s, false), Ok(g), "the same graph");
    let nodes = t.d.graph_nodes(g).expect("nodes");
    assert_eq!(nodes.len(), 3);
    assert_eq!(t.d.graph_node_dependencies(nodes[2]), Ok(vec![first]));
    // A failed capture into it leaves it to its owner.
    t.d.stream_begin_capture_to_graph(s, false, g, &[], CAPTURE_MODE_GLOBAL).expect("begin");
    assert!(t.d.stream_synchronize(s, false).is_err());
    assert!(matches!(t.d.stream_end_capture(s, false), Err(Error::StreamCaptureInvalidated(_))));
    assert_eq!(t.d.graph_nodes(g).map(|n| n.len()), Ok(3), "the graph is still there");
    let x = t.instantiate(g);
    t.d.graph_launch(x, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(t.read_u32(p), 4);
    assert_eq!(t.order(), vec![1, 2]);
    assert!(matches!(t.d.stream_begin_capture_to_graph(s, false, g, &[0x4b_0000_0010], 0), Err(Error::InvalidValue(_))));
}
