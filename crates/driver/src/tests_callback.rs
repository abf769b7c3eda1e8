//! Driver calls from inside host callbacks (see `callback.rs`): what would
//! wait for the callback itself is refused with `NotPermitted` and has no
//! effect; the rest works. Each callback reports through a channel with a
//! deadline, so a deadlock fails the test instead of hanging it.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use crate::mock::MockBackend;
use crate::*;

const PTX: &str = ".version 8.6\n.target sm_86\n.address_size 64\n.visible .entry mock_sleep(.param .u32 ms) { ret; }\n.visible .entry mock_fill_u32(.param .u64 p, .param .u32 v, .param .u32 n) { ret; }\n";

struct Setup {
    d: Arc<Driver>,
    ctx: u64,
    sleep: u64,
    fill: u64,
}

fn setup() -> Setup {
    let d = Arc::new(Driver::new(Arc::new(MockBackend::with_builtins(1)), Config::default()));
    d.init(0).expect("init");
    let ctx = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(ctx).expect("current");
    let mut log = JitLog::default();
    let m = d.module_load(ModuleSource::Ptx(PTX), ModuleOptions::default(), &mut log).expect("load");
    let sleep = d.module_get_function(m, "mock_sleep").expect("fn");
    let fill = d.module_get_function(m, "mock_fill_u32").expect("fn");
    Setup { d, ctx, sleep, fill }
}

fn sleep_on(s: &Setup, stream: u64, ms: u32) {
    let cfg = LaunchConfig { grid: [1; 3], block: [1; 3], shared_bytes: 0, stream, cooperative: false };
    let args = [&ms as *const u32 as *const std::ffi::c_void];
    // SAFETY: one u32 parameter.
    unsafe { s.d.launch_kernel(s.sleep, &cfg, KernelArgs::Pointers(args.as_ptr()), false) }.expect("launch");
}

/// Adds a callback to `stream` that makes `ctx` current and runs `body`;
/// returns what `body` returned, or panics if it did not finish in time.
fn add_callback<T: Send + 'static>(s: &Setup, stream: u64, body: impl FnOnce(&Driver) -> T + Send + 'static) -> mpsc::Receiver<T> {
    let (tx, rx) = mpsc::channel();
    let d = s.d.clone();
    let ctx = s.ctx;
    s.d.stream_add_callback(
        stream,
        false,
        0,
        Box::new(move |_| {
            d.ctx_set_current(ctx).expect("current in callback");
            assert!(crate::in_callback());
            let _ = tx.send(body(&d));
        }),
    )
    .expect("add callback");
    rx
}

/// Holds `stream` (a host function waiting, at most 10 s) until the returned
/// sender is used: what the test enqueues after a callback is then in place
/// before the callback runs.
pub(crate) fn hold(d: &Driver, stream: u64) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    d.launch_host_func(
        stream,
        false,
        Box::new(move || {
            if let Ok(rx) = rx.lock() {
                let _ = rx.recv_timeout(Duration::from_secs(10));
            }
        }),
    )
    .expect("hold the stream");
    tx
}

fn get<T>(rx: mpsc::Receiver<T>) -> T {
    rx.recv_timeout(Duration::from_secs(10)).expect("the callback deadlocked (no answer within 10 s)")
}

fn not_permitted<T: std::fmt::Debug>(r: Result<T>, what: &str) {
    assert!(matches!(r, Err(Error::NotPermitted(_))), "{what}: expected NotPermitted, got {r:?}");
}

#[test]
fn waits_for_the_callbacks_own_stream_or_context_are_refused() {
    let s = setup();
    let d = s.d.clone();
    let stream = d.stream_create(0, 0).expect("stream");
    let buf = d.mem_alloc(64).expect("alloc");
    let after = d.event_create(0).expect("event");
    let before = d.event_create(0).expect("event");
    d.event_record(before, stream, false, 0).expect("record");
    // The callback must not start before `after` is recorded behind it (an
    // event never recorded completes at once).
    let gate = hold(&d, stream);
    let host = [7u8; 64];
    let host_addr = host.as_ptr() as usize;
    let rx = add_callback(&s, stream, move |d| {
        vec![
            ("stream sync", d.stream_synchronize(stream, false)),
            ("ctx sync", d.ctx_synchronize(0)),
            // SAFETY: 64 readable bytes.
            ("sync copy on the legacy stream", unsafe { d.memcpy_htod(buf, host_addr, 64, 0, false, false) }),
            ("sync memset", d.memset(buf, MemsetValue::U8(9), 64, 0, false, false)),
            ("free", d.mem_free(buf)),
            ("event after the callback", d.event_synchronize(after)),
            // Not waiting for the callback: works.
            ("event before the callback", d.event_synchronize(before)),
            ("alloc and free of new memory", d.mem_alloc(32).and_then(|p| d.mem_free_async(p, 0, false))),
            ("async copy", unsafe { d.memcpy_htod(buf, host_addr, 8, stream, false, true) }),
            ("host function on its own stream", d.launch_host_func(stream, false, Box::new(|| {}))),
            ("stream query", d.stream_query(stream, false).or_else(|e| if e == Error::NotReady { Ok(()) } else { Err(e) })),
        ]
    });
    d.event_record(after, stream, false, 0).expect("record after");
    gate.send(()).expect("open the gate");
    let results = get(rx);
    for (what, r) in &results[..6] {
        not_permitted(r.clone(), what);
    }
    for (what, r) in &results[6..] {
        assert_eq!(r, &Ok(()), "{what}");
    }
    d.stream_synchronize(stream, false).expect("sync");
    // The refused calls had no effect: the memory is allocated and neither
    // the synchronous copy nor the memset happened (only the 8-byte async copy).
    assert!(d.pointer_info(buf).is_some(), "refused cuMemFree freed the memory");
    let mut out = [0u8; 64];
    // SAFETY: 64 writable bytes.
    unsafe { d.memcpy_dtoh(out.as_mut_ptr() as usize, buf, 64, 0, false, false) }.expect("dtoh");
    assert_eq!(&out[..8], &[7; 8]);
    assert!(out[8..].iter().all(|&b| b != 9 && b != 7), "a refused copy or memset ran: {out:?}");
    d.mem_free(buf).expect("free after");
}

#[test]
fn waits_on_independent_work_run_and_dependent_work_is_found_transitively() {
    let s = setup();
    let d = s.d.clone();
    let cb_stream = d.stream_create(1, 0).expect("non-blocking stream");
    let other = d.stream_create(1, 0).expect("non-blocking stream");
    let waiter = d.stream_create(1, 0).expect("non-blocking stream");
    let ev = d.event_create(0).expect("event");
    // `other` has 100 ms of unrelated work; `waiter` waits for an event
    // recorded on the callback's stream after the callback.
    let gate = hold(&d, cb_stream);
    let rx = add_callback(&s, cb_stream, move |d| {
        let t = std::time::Instant::now();
        let independent = d.stream_synchronize(other, false);
        let waited = t.elapsed();
        let dependent = d.stream_synchronize(waiter, false);
        // A synchronous copy on the legacy stream: the callback's stream is
        // non-blocking, so the copy does not wait for it.
        let v = [1u8; 16];
        let p = d.mem_alloc(16).expect("alloc");
        // SAFETY: 16 readable bytes.
        let legacy_copy = unsafe { d.memcpy_htod(p, v.as_ptr() as usize, 16, 0, false, false) };
        (independent, waited, dependent, legacy_copy)
    });
    d.event_record(ev, cb_stream, false, 0).expect("record");
    d.stream_wait_event(waiter, ev, false, 0).expect("wait event");
    // Launched last, so that the callback starts right after it.
    sleep_on(&s, other, 100);
    gate.send(()).expect("open the gate");
    let (independent, waited, dependent, legacy_copy) = get(rx);
    assert_eq!(independent, Ok(()));
    assert!(waited >= Duration::from_millis(50), "the independent stream was not waited for: {waited:?}");
    not_permitted(dependent, "a stream waiting for an event after the callback");
    assert_eq!(legacy_copy, Ok(()));
    d.ctx_synchronize(0).expect("ctx sync");
}

#[test]
fn the_legacy_stream_waits_for_a_blocking_callback_stream() {
    let s = setup();
    let d = s.d.clone();
    let blocking = d.stream_create(0, 0).expect("blocking stream");
    let rx = add_callback(&s, blocking, move |d| {
        let legacy_sync = d.stream_synchronize(0, false);
        let v = [1u8; 16];
        let p = d.mem_alloc(16).expect("alloc");
        // SAFETY: 16 readable bytes.
        let copy = unsafe { d.memcpy_htod(p, v.as_ptr() as usize, 16, 0, false, false) };
        (legacy_sync, copy)
    });
    // Legacy-stream work submitted after the callback waits for it.
    sleep_on(&s, 0, 1);
    let (legacy_sync, copy) = get(rx);
    not_permitted(legacy_sync, "legacy stream sync");
    not_permitted(copy, "a synchronous copy on the legacy stream");
    d.ctx_synchronize(0).expect("ctx sync");
    // Outside callbacks nothing is refused.
    assert!(!crate::in_callback());
    let p = d.mem_alloc(16).expect("alloc");
    let fill = s.fill;
    let (v, n) = (5u32, 4u32);
    let cfg = LaunchConfig { grid: [1; 3], block: [4, 1, 1], shared_bytes: 0, stream: blocking, cooperative: false };
    let args = [&p as *const u64 as *const std::ffi::c_void, &v as *const u32 as *const _, &n as *const u32 as *const _];
    // SAFETY: parameters of mock_fill_u32.
    unsafe { d.launch_kernel(fill, &cfg, KernelArgs::Pointers(args.as_ptr()), false) }.expect("launch");
    d.stream_synchronize(blocking, false).expect("sync");
    d.mem_free(p).expect("free");
}

#[test]
fn context_teardown_from_a_callback_is_refused() {
    let s = setup();
    let d = s.d.clone();
    let stream = d.stream_create(0, 0).expect("stream");
    let rx = add_callback(&s, stream, move |d| (d.primary_ctx_reset(0), d.primary_ctx_release(0)));
    let (reset, release) = get(rx);
    not_permitted(reset, "cuDevicePrimaryCtxReset");
    not_permitted(release, "releasing the last reference");
    d.stream_synchronize(stream, false).expect("the context lives on");
    assert!(d.mem_alloc(16).is_ok());
}
