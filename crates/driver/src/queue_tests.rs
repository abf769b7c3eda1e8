//! Streams through backend queues: the mock's queues run their work only
//! when the driver synchronises them, so these tests fail if the driver
//! counts work complete (events, other streams, host functions, the
//! legacy stream) before its queue has run it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::mock::{MockBackend, QueuedOp};
use crate::*;

const PTX: &str = r#"
.version 8.6
.target sm_86
.address_size 64
.visible .entry mock_fill_u32(.param .u64 p, .param .u32 v, .param .u32 n) { ret; }
.visible .entry mock_copy_u32(.param .u64 d, .param .u64 s, .param .u32 n) { ret; }
.visible .entry mock_sleep(.param .u32 ms) { ret; }
.visible .entry mock_fault() { ret; }
"#;

struct T {
    d: Driver,
    mock: Arc<MockBackend>,
    fill: u64,
    copy: u64,
    sleep: u64,
    fault: u64,
}

fn setup() -> T {
    let mock = Arc::new(MockBackend::with_builtins(1));
    let d = Driver::new(mock.clone(), Config::default());
    d.init(0).expect("init");
    let c = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(c).expect("set current");
    let mut log = JitLog::default();
    let m = d.module_load(ModuleSource::Ptx(PTX), ModuleOptions::default(), &mut log).expect("module load");
    let f = |n| d.module_get_function(m, n).expect("function");
    let (fill, copy, sleep, fault) = (f("mock_fill_u32"), f("mock_copy_u32"), f("mock_sleep"), f("mock_fault"));
    T { d, mock, fill, copy, sleep, fault }
}

impl T {
    fn launch(&self, f: u64, args: &[*const std::ffi::c_void], stream: u64) {
        let cfg = LaunchConfig { grid: [1; 3], block: [1; 3], shared_bytes: 0, stream, cooperative: false };
        // SAFETY: the pointers point to values of the parameters' sizes.
        unsafe { self.d.launch_kernel(f, &cfg, KernelArgs::Pointers(args.as_ptr()), false) }.expect("launch");
    }

    fn fill(&self, p: u64, v: u32, n: u32, stream: u64) {
        self.launch(self.fill, &[&p as *const u64 as *const _, &v as *const u32 as *const _, &n as *const u32 as *const _], stream);
    }

    fn copy(&self, dst: u64, src: u64, n: u32, stream: u64) {
        self.launch(self.copy, &[&dst as *const u64 as *const _, &src as *const u64 as *const _, &n as *const u32 as *const _], stream);
    }

    fn sleep(&self, ms: u32, stream: u64) {
        self.launch(self.sleep, &[&ms as *const u32 as *const _], stream);
    }

    fn read(&self, p: u64, n: usize) -> Vec<u32> {
        let mut out = vec![0u32; n];
        // SAFETY: `out` holds n words.
        unsafe { self.d.memcpy_dtoh(out.as_mut_ptr() as usize, p, n * 4, 0, false, false) }.expect("dtoh");
        out
    }

    fn log(&self) -> Vec<QueuedOp> {
        self.mock.queue_log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The queue the operations named `what` ran on, in order.
    fn queues_of(&self, what: &str) -> Vec<u64> {
        self.log().into_iter().filter(|o| o.what == what).map(|o| o.queue).collect()
    }
}

/// Reads a u32 of mock device memory (host memory) directly.
fn peek(p: u64) -> u32 {
    // SAFETY: a live mock allocation of at least 4 bytes.
    unsafe { (p as *const u32).read_volatile() }
}

#[test]
fn each_stream_enqueues_on_a_queue_of_its_own_in_order() {
    let t = setup();
    let (s1, s2) = (t.d.stream_create(1, 0).expect("s1"), t.d.stream_create(1, 0).expect("s2"));
    let buf = t.d.mem_alloc(64).expect("alloc");
    t.fill(buf, 1, 4, s1);
    t.d.memset(buf + 16, MemsetValue::U32(2), 4, s2, false, true).expect("memset");
    let staged = [3u32; 4];
    // SAFETY: `staged` is 16 bytes (pageable: snapshotted at the call).
    unsafe { t.d.memcpy_htod(buf + 32, staged.as_ptr() as usize, 16, s1, false, true) }.expect("htod");
    t.d.memcpy_dtod(buf + 48, buf + 32, 16, s1, false, true).expect("dtod");
    t.d.ctx_synchronize(0).expect("sync");
    assert_eq!(t.read(buf, 16), [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3]);
    let on = |what: &str| t.queues_of(what);
    let q1 = on("launch mock_fill_u32")[0];
    assert_eq!(on("htod"), [q1]);
    assert_eq!(on("dtod"), [q1]);
    let q2 = on("memset")[0];
    assert_ne!(q1, q2, "two streams share a queue");
    // s1's operations ran in stream order.
    let s1_ops: Vec<String> = t.log().into_iter().filter(|o| o.queue == q1).map(|o| o.what).collect();
    assert_eq!(s1_ops, ["launch mock_fill_u32", "htod", "dtod"]);
    // The legacy stream has its own queue too.
    t.d.memset(buf, MemsetValue::U32(9), 1, 0, false, true).expect("legacy memset");
    t.d.ctx_synchronize(0).expect("sync");
    let legacy = *on("memset").last().expect("logged");
    assert!(legacy != q1 && legacy != q2);
}

#[test]
fn a_stream_waiting_on_an_event_sees_the_work_before_the_record() {
    let t = setup();
    let (s1, s2) = (t.d.stream_create(1, 0).expect("s1"), t.d.stream_create(1, 0).expect("s2"));
    let (a, b) = (t.d.mem_alloc(16).expect("a"), t.d.mem_alloc(16).expect("b"));
    let ev = t.d.event_create(0).expect("event");
    t.sleep(100, s1);
    t.fill(a, 7, 4, s1);
    t.d.event_record(ev, s1, false, 0).expect("record");
    t.d.stream_wait_event(s2, ev, false, 0).expect("wait");
    t.copy(b, a, 4, s2);
    t.d.stream_synchronize(s2, false).expect("sync s2");
    assert_eq!(t.read(b, 4), [7; 4], "s2 copied before s1's fill ran");
    assert_eq!(t.d.event_query(ev), Ok(()));
    // In the queues' own order: s1's fill and record before s2's copy.
    let log = t.log();
    let at = |what: &str| log.iter().position(|o| o.what == what).expect("logged");
    assert!(at("launch mock_fill_u32") < at("record") && at("record") < at("launch mock_copy_u32"));
    assert_ne!(log[at("record")].queue, log[at("launch mock_copy_u32")].queue);
}

#[test]
fn the_legacy_stream_waits_for_blocking_streams_queues_and_they_for_it() {
    let t = setup();
    let blocking = t.d.stream_create(0, 0).expect("blocking");
    let (a, b, c) = (t.d.mem_alloc(16).expect("a"), t.d.mem_alloc(16).expect("b"), t.d.mem_alloc(16).expect("c"));
    t.sleep(100, blocking);
    t.fill(a, 5, 4, blocking);
    // Legacy work after the blocking stream's...
    t.copy(b, a, 4, 0);
    // ...and blocking-stream work after the legacy stream's.
    t.copy(c, b, 4, blocking);
    t.d.stream_synchronize(blocking, false).expect("sync");
    assert_eq!(t.read(b, 4), [5; 4], "the legacy stream ran before the blocking stream's work");
    assert_eq!(t.read(c, 4), [5; 4], "the blocking stream ran before the legacy stream's work");
    // A non-blocking stream's work does not hold the legacy stream up.
    let nonblocking = t.d.stream_create(1, 0).expect("non-blocking");
    t.sleep(300, nonblocking);
    let started = std::time::Instant::now();
    t.fill(a, 6, 4, 0);
    t.d.stream_synchronize(0, false).expect("legacy sync");
    assert!(started.elapsed() < Duration::from_millis(250), "legacy waited for a non-blocking stream");
    assert_eq!(t.read(a, 4), [6; 4]);
    t.d.ctx_synchronize(0).expect("sync");
}

#[test]
fn host_functions_and_callbacks_run_after_the_device_work_before_them() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("s");
    let a = t.d.mem_alloc(16).expect("a");
    let seen = Arc::new(Mutex::new(Vec::new()));
    t.sleep(50, s);
    t.fill(a, 11, 4, s);
    let s2 = seen.clone();
    t.d.launch_host_func(s, false, Box::new(move || s2.lock().map(|mut v| v.push(peek(a))).unwrap_or(()))).expect("host fn");
    t.fill(a, 12, 4, s);
    let s3 = seen.clone();
    t.d.stream_add_callback(s, false, 0, Box::new(move |st| s3.lock().map(|mut v| v.push(peek(a) + st.map_or(100, |_| 0))).unwrap_or(())))
        .expect("callback");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(*seen.lock().expect("lock"), [11, 12]);
}

#[test]
fn an_event_completes_after_the_work_before_it_and_times_it() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("s");
    let a = t.d.mem_alloc(16).expect("a");
    let (start, end) = (t.d.event_create(0).expect("start"), t.d.event_create(0).expect("end"));
    t.d.event_record(start, s, false, 0).expect("record");
    t.sleep(150, s);
    t.fill(a, 3, 4, s);
    t.d.event_record(end, s, false, 0).expect("record");
    t.d.event_synchronize(end).expect("event sync");
    // The event's completion implies the work before it ran.
    assert_eq!(peek(a), 3);
    assert_eq!(t.d.stream_query(s, false), Ok(()));
    let ms = t.d.event_elapsed_time(start, end).expect("elapsed");
    assert!((140.0..5000.0).contains(&ms), "elapsed {ms} ms");
    assert_eq!(t.queues_of("record").len(), 2, "records go to the backend queue");
}

#[test]
fn an_asynchronous_fault_found_when_the_queue_drains_is_sticky() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("s");
    let a = t.d.mem_alloc(16).expect("a");
    t.fill(a, 1, 4, s);
    t.d.stream_synchronize(s, false).expect("sync");
    t.sleep(50, s);
    t.launch(t.fault, &[], s);
    // The fault is found when the queue drains (the worker drains as soon
    // as it runs out of work), usually after the next two calls; if it
    // was found before, they return it instead.
    let (p, v, n) = (a, 2u32, 4u32);
    let cfg = LaunchConfig { grid: [1; 3], block: [1; 3], shared_bytes: 0, stream: s, cooperative: false };
    let args = [&p as *const u64 as *const std::ffi::c_void, &v as *const u32 as *const _, &n as *const u32 as *const _];
    // SAFETY: the pointers point to values of the parameters' sizes.
    let filled = unsafe { t.d.launch_kernel(t.fill, &cfg, KernelArgs::Pointers(args.as_ptr()), false) };
    let ran = Arc::new(AtomicU32::new(0));
    let r2 = ran.clone();
    let added = t.d.stream_add_callback(s, false, 0, Box::new(move |st| r2.store(if st.is_err() { 2 } else { 1 }, Ordering::SeqCst)));
    for r in [&filled, &added] {
        assert!(matches!(r, Ok(()) | Err(Error::Fault(LaunchFault::IllegalAddress { .. }))), "{r:?}");
    }
    assert!(matches!(t.d.stream_synchronize(s, false), Err(Error::Fault(LaunchFault::IllegalAddress { .. }))));
    if added.is_ok() {
        assert_eq!(ran.load(Ordering::SeqCst), 2, "the callback did not see the fault as its status");
    }
    assert_eq!(peek(a), 1, "work behind a fault ran");
    assert!(matches!(t.d.ctx_synchronize(0), Err(Error::Fault(_))), "not sticky");
}

#[test]
fn graphs_replay_through_the_queue() {
    let t = setup();
    let s = t.d.stream_create(1, 0).expect("s");
    let (a, b) = (t.d.mem_alloc(16).expect("a"), t.d.mem_alloc(16).expect("b"));
    let seen = Arc::new(AtomicU32::new(0));
    t.d.stream_begin_capture(s, false, 0).expect("begin capture");
    t.sleep(50, s);
    t.fill(a, 21, 4, s);
    let s2 = seen.clone();
    t.d.launch_host_func(s, false, Box::new(move || s2.store(peek(a), Ordering::SeqCst))).expect("host node");
    t.copy(b, a, 4, s);
    let g = t.d.stream_end_capture(s, false).expect("end capture");
    let exec = t.d.graph_instantiate(g, 0).map_err(|e| format!("{e:?}")).expect("instantiate");
    t.d.graph_launch(exec, s, false).expect("launch");
    t.d.stream_synchronize(s, false).expect("sync");
    assert_eq!(seen.load(Ordering::SeqCst), 21, "the host node ran before the kernel before it");
    assert_eq!(t.read(b, 4), [21; 4]);
    assert!(t.queues_of("launch mock_copy_u32").len() == 1);
}

#[test]
fn a_callback_may_wait_for_an_event_recorded_before_work_that_waits_for_it() {
    // Stream t has a kernel and a record of `e` on its queue, not yet
    // counted complete, while its worker holds the next operation, a wait
    // for `f`, which comes after s's callback. The callback may wait for
    // `e`: nothing before `e` waits for the callback.
    let t = setup();
    let (s, u) = (t.d.stream_create(1, 0).expect("s"), t.d.stream_create(1, 0).expect("t"));
    let (e, f) = (t.d.event_create(0).expect("e"), t.d.event_create(0).expect("f"));
    t.sleep(30, s);
    let result = Arc::new(Mutex::new(None));
    let r2 = result.clone();
    let d = &t.d as *const Driver as usize;
    t.d.stream_add_callback(
        s,
        false,
        0,
        Box::new(move |_| {
            // SAFETY: the test synchronises the streams before the driver
            // goes.
            let d = unsafe { &*(d as *const Driver) };
            let r = d.event_synchronize(e);
            r2.lock().map(|mut v| *v = Some(r)).unwrap_or(());
        }),
    )
    .expect("callback");
    t.d.event_record(f, s, false, 0).expect("record f");
    t.sleep(100, u);
    t.d.event_record(e, u, false, 0).expect("record e");
    t.d.stream_wait_event(u, f, false, 0).expect("wait f");
    t.d.stream_synchronize(u, false).expect("sync u");
    t.d.stream_synchronize(s, false).expect("sync s");
    assert_eq!(*result.lock().expect("lock"), Some(Ok(())));
}

#[test]
fn a_wait_on_a_record_already_on_a_queue_is_made_by_the_waiting_queue() {
    let t = setup();
    let (s1, s2) = (t.d.stream_create(1, 0).expect("s1"), t.d.stream_create(1, 0).expect("s2"));
    let (a, b) = (t.d.mem_alloc(16).expect("a"), t.d.mem_alloc(16).expect("b"));
    // Events made only to order streams, without timing, are waited on
    // the device too.
    let ev = t.d.event_create(cuda_types::CUevent_flags::CU_EVENT_DISABLE_TIMING.0).expect("event");
    // s1 is held until everything is submitted: s2's thread then finds the
    // record not yet on s1's queue and waits for it to be enqueued (not
    // run: s1's queue runs its 400 ms launch first).
    let release = crate::tests_callback::hold(&t.d, s1);
    t.sleep(400, s1);
    t.fill(a, 7, 4, s1);
    t.d.event_record(ev, s1, false, 0).expect("record");
    t.d.stream_wait_event(s2, ev, false, 0).expect("wait");
    t.copy(b, a, 4, s2);
    release.send(()).expect("release s1");
    t.d.stream_synchronize(s2, false).expect("sync s2");
    assert_eq!(t.read(b, 4), [7; 4], "s2 copied before s1's fill ran");
    let log = t.log();
    let at = |what: &str| log.iter().position(|o| o.what == what).expect("logged");
    let q2 = log[at("launch mock_copy_u32")].queue;
    let s2_ops: Vec<&str> = log.iter().filter(|o| o.queue == q2).map(|o| o.what.as_str()).collect();
    assert_eq!(s2_ops, ["wait", "launch mock_copy_u32"], "s2's queue did not wait for the record itself");
    assert!(at("record") < at("launch mock_copy_u32"), "s2's copy ran before s1's record");
    t.d.ctx_synchronize(0).expect("sync");
}
