//! Stream capture: work issued to a capturing stream is recorded into a
//! graph instead of running.
//!
//! A capture sequence ([`Capture`]) starts on one stream
//! (`cuStreamBeginCapture`) and owns the graph being built. Each stream
//! taking part holds its dependency set: the nodes the next operation
//! captured on it depends on; capturing an operation adds a node with
//! those dependencies and makes it the set. Other streams join through
//! events (fork: an event recorded on a capturing stream remembers the
//! recording stream's set; a stream waiting on it joins with that set) and
//! must be joined back into the origin stream before the capture ends
//! (their sets must be ancestors of the origin's).
//!
//! What cannot be captured is refused as CUDA refuses it, and invalidates
//! the capture where CUDA does (the capture must still be ended, and
//! `cuStreamEndCapture` then reports the invalidation):
//! - synchronous work, queries and synchronisation of a capturing stream
//!   (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`);
//! - work on the legacy stream while a blocking stream of its context is
//!   capturing: it would depend on work that never runs
//!   (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`);
//! - "potentially unsafe" calls (allocation, freeing, synchronous copies
//!   and memsets, context synchronisation) from a thread whose capture
//!   interaction mode forbids them (`cuThreadExchangeStreamCaptureMode`:
//!   global mode forbids them during this thread's non-relaxed captures
//!   and any other thread's global ones, thread-local mode during this
//!   thread's non-relaxed captures, relaxed mode never);
//! - waiting on an event recorded outside the capture (`_ISOLATION`), on
//!   one of another capture (`_MERGE`); querying or synchronising an event
//!   recorded in a capture (`CUDA_ERROR_CAPTURED_EVENT`).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::graph::{Graph, NodeParams};
use crate::handle::lock;
use crate::stream::{Stream, StreamKind};
use crate::Driver;

/// `CUstreamCaptureMode`.
pub const CAPTURE_MODE_GLOBAL: u32 = 0;
pub const CAPTURE_MODE_THREAD_LOCAL: u32 = 1;
pub const CAPTURE_MODE_RELAXED: u32 = 2;

static NEXT_CAPTURE_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's capture interaction mode.
    static THREAD_MODE: Cell<u32> = const { Cell::new(CAPTURE_MODE_GLOBAL) };
}

/// A stream's capture status (`CUstreamCaptureStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureStatus {
    None,
    Active,
    Invalidated,
}

/// What `cuStreamGetCaptureInfo` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureInfo {
    pub status: CaptureStatus,
    /// Unique over the process's life; 0 when not capturing.
    pub id: u64,
    pub graph: u64,
    pub deps: Vec<u64>,
}

pub(crate) struct Capture {
    pub id: u64,
    pub graph: Arc<Graph>,
    pub mode: u32,
    pub thread: ThreadId,
    pub origin: u64,
    /// Captured into a graph the application made
    /// (`cuStreamBeginCaptureToGraph`): not destroyed when the capture
    /// fails.
    pub user_graph: bool,
    st: Mutex<CaptureState>,
}

#[derive(Default)]
struct CaptureState {
    invalid: Option<String>,
    streams: Vec<Weak<Stream>>,
}

impl Capture {
    fn invalid(&self) -> Option<String> {
        lock(&self.st).invalid.clone()
    }

    fn invalidate(&self, why: &str) {
        let mut st = lock(&self.st);
        if st.invalid.is_none() {
            st.invalid = Some(why.to_string());
        }
    }
}

/// A stream's part in a capture.
pub(crate) struct StreamCapture {
    pub cap: Arc<Capture>,
    /// The nodes the next captured operation depends on.
    pub deps: Vec<u64>,
}

/// An event recorded in a capture: the recording stream's dependency set
/// at that point.
pub(crate) struct CapturedRecord {
    pub cap: Weak<Capture>,
    pub nodes: Vec<u64>,
}

impl Driver {
    /// The capture `s` takes part in, if any.
    pub(crate) fn capturing(&self, s: &Stream) -> Option<Arc<Capture>> {
        if self.active_captures.load(Ordering::Acquire) == 0 {
            return None;
        }
        lock(&s.capture).as_ref().map(|c| c.cap.clone())
    }

    fn live_captures(&self) -> Vec<Arc<Capture>> {
        lock(&self.captures).clone()
    }

    /// Records `params` as the next node of `s`'s capture.
    pub(crate) fn capture_node(&self, s: &Stream, cap: &Arc<Capture>, mut params: NodeParams) -> Result<u64> {
        if let Some(why) = cap.invalid() {
            return Err(Error::StreamCaptureInvalidated(why));
        }
        if let NodeParams::Kernel(k) = &mut params {
            // Kernel nodes keep the priority of the stream they were
            // captured from.
            k.priority = s.priority();
        }
        let mut sc = lock(&s.capture);
        let sc = sc.as_mut().filter(|c| Arc::ptr_eq(&c.cap, cap)).ok_or_else(|| Error::Unknown("capture state vanished".into()))?;
        let node = self.add_node(&cap.graph, &sc.deps, params)?;
        sc.deps = vec![node];
        Ok(node)
    }

    /// Marks `cap` invalidated (the first reason is kept and reported by
    /// later calls and `cuStreamEndCapture`).
    pub(crate) fn invalidate_capture(&self, cap: &Capture, why: &str) {
        cap.invalidate(why);
    }

    /// Refuses an operation that would run, query or synchronise work of
    /// a capturing stream; invalidates the capture.
    pub(crate) fn refuse_if_capturing(&self, s: &Stream, what: &str) -> Result<()> {
        if let Some(cap) = self.capturing(s) {
            let why = format!("{what} on a capturing stream");
            self.invalidate_capture(&cap, &why);
            return Err(Error::StreamCaptureUnsupported(why));
        }
        Ok(())
    }

    /// Refuses work on the legacy stream of `ctx` while a blocking stream
    /// of it captures: the legacy stream would wait for work that never
    /// runs. Invalidates those captures.
    pub(crate) fn refuse_legacy_implicit(&self, ctx: &crate::context::Context, what: &str, invalidate: bool) -> Result<()> {
        if self.active_captures.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let mut found = None;
        for s in ctx.streams() {
            if s.is_blocking() {
                if let Some(cap) = self.capturing(&s) {
                    if invalidate {
                        self.invalidate_capture(&cap, &format!("{what} on the legacy stream while a blocking stream captures"));
                    }
                    found = Some(s.handle);
                }
            }
        }
        match found {
            Some(h) => {
                Err(Error::StreamCaptureImplicit(format!("{what} on the legacy stream would depend on stream {h:#x}, which is capturing")))
            }
            None => Ok(()),
        }
    }

    /// Refuses a potentially unsafe call (one that allocates, frees or
    /// synchronises outside stream order) where this thread's capture
    /// interaction mode forbids it, and invalidates the captures that
    /// forbid it.
    pub(crate) fn check_capture_safe(&self, what: &str) -> Result<()> {
        if self.active_captures.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let me = std::thread::current().id();
        let mode = THREAD_MODE.with(|m| m.get());
        let offending: Vec<Arc<Capture>> = self
            .live_captures()
            .into_iter()
            .filter(|c| match mode {
                CAPTURE_MODE_GLOBAL => {
                    (c.thread == me && c.mode != CAPTURE_MODE_RELAXED) || (c.thread != me && c.mode == CAPTURE_MODE_GLOBAL)
                }
                CAPTURE_MODE_THREAD_LOCAL => c.thread == me && c.mode != CAPTURE_MODE_RELAXED,
                _ => false,
            })
            .collect();
        if offending.is_empty() {
            return Ok(());
        }
        let why = format!(
            "{what} is not permitted while stream capture {} is in progress (capture mode {}, this thread's mode {}; \
             cuThreadExchangeStreamCaptureMode or a relaxed capture allows it)",
            offending[0].id, offending[0].mode, mode
        );
        for c in &offending {
            self.invalidate_capture(c, &why);
        }
        Err(Error::StreamCaptureUnsupported(why))
    }

    /// `cuThreadExchangeStreamCaptureMode`: sets this thread's mode,
    /// returns the previous one.
    pub fn thread_exchange_capture_mode(&self, mode: u32) -> Result<u32> {
        if mode > CAPTURE_MODE_RELAXED {
            return Err(Error::invalid(format!("unknown capture mode {mode}")));
        }
        Ok(THREAD_MODE.with(|m| m.replace(mode)))
    }

    /// `cuStreamBeginCapture[_v2]`.
    pub fn stream_begin_capture(&self, h: u64, ptds: bool, mode: u32) -> Result<()> {
        self.begin_capture(h, ptds, mode, None, &[])
    }

    /// `cuStreamBeginCaptureToGraph`: capture into an existing graph, the
    /// first node depending on `deps`.
    pub fn stream_begin_capture_to_graph(&self, h: u64, ptds: bool, graph: u64, deps: &[u64], mode: u32) -> Result<()> {
        let g = self.graph(graph)?;
        {
            let st = lock(&g.st);
            for d in deps {
                if st.node(*d).is_none() {
                    return Err(Error::invalid(format!("dependency {d:#x} is not a node of graph {graph:#x}")));
                }
            }
        }
        self.begin_capture(h, ptds, mode, Some(g), deps)
    }

    fn begin_capture(&self, h: u64, ptds: bool, mode: u32, into: Option<Arc<Graph>>, deps: &[u64]) -> Result<()> {
        let (_, s) = self.resolve_stream(h, ptds)?;
        if mode > CAPTURE_MODE_RELAXED {
            return Err(Error::invalid(format!("unknown capture mode {mode}")));
        }
        if s.kind() == StreamKind::Legacy {
            return Err(Error::StreamCaptureUnsupported(
                "the legacy stream cannot be captured (use a created stream or the per-thread default stream)".into(),
            ));
        }
        let mut sc = lock(&s.capture);
        if sc.is_some() {
            return Err(Error::IllegalState(format!("stream {:#x} is already capturing", s.handle)));
        }
        let user_graph = into.is_some();
        let graph = match into {
            Some(g) => g,
            None => self.new_graph(),
        };
        let cap = Arc::new(Capture {
            id: NEXT_CAPTURE_ID.fetch_add(1, Ordering::Relaxed),
            graph,
            mode,
            thread: std::thread::current().id(),
            origin: s.handle,
            user_graph,
            st: Mutex::new(CaptureState { invalid: None, streams: Vec::new() }),
        });
        lock(&cap.st).streams.push(Arc::downgrade(&s));
        *sc = Some(StreamCapture { cap: cap.clone(), deps: deps.to_vec() });
        lock(&self.captures).push(cap);
        self.active_captures.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Ends `cap`: every stream leaves it. Returns the other streams'
    /// dependency sets and the origin's.
    fn terminate_capture(&self, cap: &Arc<Capture>) -> (Vec<u64>, Vec<Vec<u64>>) {
        let streams = std::mem::take(&mut lock(&cap.st).streams);
        let (mut origin, mut others) = (Vec::new(), Vec::new());
        for s in streams.iter().filter_map(|w| w.upgrade()) {
            let mut sc = lock(&s.capture);
            if sc.as_ref().is_some_and(|c| Arc::ptr_eq(&c.cap, cap)) {
                if let Some(c) = sc.take() {
                    if s.handle == cap.origin {
                        origin = c.deps;
                    } else {
                        others.push(c.deps);
                    }
                }
            }
        }
        let mut all = lock(&self.captures);
        let before = all.len();
        all.retain(|c| !Arc::ptr_eq(c, cap));
        if all.len() < before {
            self.active_captures.fetch_sub(1, Ordering::AcqRel);
        }
        (origin, others)
    }

    /// `cuStreamEndCapture`: the captured graph.
    pub fn stream_end_capture(&self, h: u64, ptds: bool) -> Result<u64> {
        self.check_init()?;
        let (_, s) = self.resolve_stream_any(h, ptds)?;
        let cap = lock(&s.capture)
            .as_ref()
            .map(|c| c.cap.clone())
            .ok_or_else(|| Error::IllegalState(format!("stream {h:#x} is not capturing")))?;
        if cap.origin != s.handle {
            return Err(Error::StreamCaptureUnmatched(format!("the capture began on stream {:#x}; it must be ended there", cap.origin)));
        }
        if cap.mode != CAPTURE_MODE_RELAXED && cap.thread != std::thread::current().id() {
            return Err(Error::StreamCaptureWrongThread(format!(
                "capture {} (mode {}) must be ended by the thread that began it",
                cap.id, cap.mode
            )));
        }
        let (origin, others) = self.terminate_capture(&cap);
        let failure = if let Some(why) = cap.invalid() {
            Some(Error::StreamCaptureInvalidated(why))
        } else {
            let st = lock(&cap.graph.st);
            let joined = st.ancestors(&origin);
            others.iter().flatten().find(|n| st.node(**n).is_some() && !joined.contains(n)).map(|n| {
                Error::StreamCaptureUnjoined(format!("node {n:#x} of a forked stream was never joined back into the origin stream"))
            })
        };
        match failure {
            Some(e) => {
                if !cap.user_graph {
                    self.drop_graph(&cap.graph);
                }
                Err(e)
            }
            None => Ok(cap.graph.handle),
        }
    }

    /// The stream, sticky errors ignored (ending a capture after a fault
    /// must still work).
    fn resolve_stream_any(&self, h: u64, ptds: bool) -> Result<(Arc<crate::context::Context>, Arc<Stream>)> {
        match self.resolve_stream(h, ptds) {
            Err(e) if e.is_sticky() => self.resolve_stream_alive(h, ptds),
            r => r,
        }
    }

    /// `cuStreamIsCapturing` and `cuStreamGetCaptureInfo`.
    pub fn stream_capture_info(&self, h: u64, ptds: bool) -> Result<CaptureInfo> {
        self.check_init()?;
        let (ctx, s) = self.resolve_stream_any(h, ptds)?;
        if s.kind() == StreamKind::Legacy {
            self.refuse_legacy_implicit(&ctx, "a capture query", false)?;
        }
        let sc = lock(&s.capture);
        Ok(match sc.as_ref() {
            None => CaptureInfo { status: CaptureStatus::None, id: 0, graph: 0, deps: Vec::new() },
            Some(c) => CaptureInfo {
                status: if c.cap.invalid().is_some() { CaptureStatus::Invalidated } else { CaptureStatus::Active },
                id: c.cap.id,
                graph: c.cap.graph.handle,
                deps: c.deps.clone(),
            },
        })
    }

    /// `cuStreamUpdateCaptureDependencies`: `flags` 0 adds `deps` to the
    /// stream's set, 1 replaces it.
    pub fn stream_update_capture_dependencies(&self, h: u64, ptds: bool, deps: &[u64], flags: u32) -> Result<()> {
        self.check_init()?;
        if flags > 1 {
            return Err(Error::invalid(format!("unknown flags {flags:#x}")));
        }
        let (_, s) = self.resolve_stream(h, ptds)?;
        let mut sc = lock(&s.capture);
        let c = sc.as_mut().ok_or_else(|| Error::IllegalState(format!("stream {h:#x} is not capturing")))?;
        if let Some(why) = c.cap.invalid() {
            return Err(Error::StreamCaptureInvalidated(why));
        }
        {
            let st = lock(&c.cap.graph.st);
            for d in deps {
                if st.node(*d).is_none() {
                    return Err(Error::invalid(format!("{d:#x} is not a node of the graph being captured")));
                }
            }
        }
        if flags == 1 {
            c.deps.clear();
        }
        for d in deps {
            if !c.deps.contains(d) {
                c.deps.push(*d);
            }
        }
        Ok(())
    }

    /// Whether graph `h` is being captured into.
    pub(crate) fn graph_is_capturing(&self, h: u64) -> bool {
        self.active_captures.load(Ordering::Acquire) > 0 && self.live_captures().iter().any(|c| c.graph.handle == h)
    }

    /// Drops a destroyed node from the dependency sets of streams
    /// capturing into its graph.
    pub(crate) fn forget_capture_dependency(&self, graph: u64, node: u64) {
        if self.active_captures.load(Ordering::Acquire) == 0 {
            return;
        }
        for c in self.live_captures().iter().filter(|c| c.graph.handle == graph) {
            let streams = lock(&c.st).streams.clone();
            for s in streams.iter().filter_map(|w| w.upgrade()) {
                if let Some(sc) = lock(&s.capture).as_mut() {
                    sc.deps.retain(|d| *d != node);
                }
            }
        }
    }

    /// A stream going away during a capture: the capture is invalidated;
    /// if it began there, it ends (nothing could end it any more).
    pub(crate) fn capture_stream_destroyed(&self, s: &Stream) {
        let Some(cap) = self.capturing(s) else { return };
        self.invalidate_capture(&cap, "a stream taking part in the capture was destroyed");
        if cap.origin == s.handle {
            self.terminate_capture(&cap);
            if !cap.user_graph {
                self.drop_graph(&cap.graph);
            }
        } else {
            *lock(&s.capture) = None;
        }
    }

    // ---- events in captures ----

    /// `cuEventRecord[WithFlags]` on a capturing stream: the event
    /// remembers the stream's dependency set (to fork other streams), or,
    /// with `CU_EVENT_RECORD_EXTERNAL`, becomes an event record node.
    pub(crate) fn capture_event_record(&self, ev: &Arc<Event>, s: &Stream, cap: &Arc<Capture>, external: bool) -> Result<()> {
        if external {
            self.capture_node(s, cap, NodeParams::EventRecord(ev.clone()))?;
            return Ok(());
        }
        if let Some(why) = cap.invalid() {
            return Err(Error::StreamCaptureInvalidated(why));
        }
        let nodes = lock(&s.capture).as_ref().map(|c| c.deps.clone()).unwrap_or_default();
        *lock(&ev.captured) = Some(CapturedRecord { cap: Arc::downgrade(cap), nodes });
        Ok(())
    }

    /// `cuStreamWaitEvent` where a capture is involved (the stream
    /// captures or the event was recorded in a capture). `Ok(true)`: done;
    /// `Ok(false)`: an ordinary wait.
    pub(crate) fn capture_wait_event(&self, s: &Arc<Stream>, ev: &Arc<Event>, external: bool) -> Result<bool> {
        let mine = self.capturing(s);
        let theirs = lock(&ev.captured).as_ref().map(|r| (r.cap.upgrade(), r.nodes.clone()));
        if external {
            let Some(cap) = mine else {
                return Err(Error::invalid("CU_EVENT_WAIT_EXTERNAL is only valid during stream capture"));
            };
            self.capture_node(s, &cap, NodeParams::EventWait(ev.clone()))?;
            return Ok(true);
        }
        let live = |c: &Option<Arc<Capture>>| c.as_ref().filter(|c| self.live_captures().iter().any(|l| Arc::ptr_eq(l, c))).cloned();
        match (mine, theirs) {
            (None, None) => Ok(false),
            (Some(cap), None) => {
                if ev.recorded_generation() == 0 {
                    // An event never recorded stands for no work.
                    return Ok(true);
                }
                let why = format!("stream {:#x} waits on event {:#x}, recorded outside the capture", s.handle, ev.handle);
                self.invalidate_capture(&cap, &why);
                Err(Error::StreamCaptureIsolation(why))
            }
            (mine, Some((c, nodes))) => match (mine, live(&c)) {
                (Some(m), Some(c)) if Arc::ptr_eq(&m, &c) => {
                    if let Some(why) = m.invalid() {
                        return Err(Error::StreamCaptureInvalidated(why));
                    }
                    if let Some(sc) = lock(&s.capture).as_mut() {
                        for n in nodes {
                            if !sc.deps.contains(&n) {
                                sc.deps.push(n);
                            }
                        }
                        // A node another one of the set depends on already
                        // adds nothing (joins make no redundant edges).
                        let st = lock(&m.graph.st);
                        let covered: std::collections::HashSet<u64> =
                            sc.deps.iter().flat_map(|d| st.node(*d).map(|n| st.ancestors(&n.deps)).unwrap_or_default()).collect();
                        sc.deps.retain(|d| !covered.contains(d));
                    }
                    Ok(true)
                }
                (Some(m), Some(c)) => {
                    let why = format!("stream {:#x} of capture {} waits on an event of capture {}", s.handle, m.id, c.id);
                    self.invalidate_capture(&m, &why);
                    self.invalidate_capture(&c, &why);
                    Err(Error::StreamCaptureMerge(why))
                }
                (Some(m), None) => {
                    let why = format!("stream {:#x} waits on event {:#x}, recorded in a capture that has ended", s.handle, ev.handle);
                    self.invalidate_capture(&m, &why);
                    Err(Error::StreamCaptureIsolation(why))
                }
                (None, Some(c)) => {
                    if s.kind() == StreamKind::Legacy {
                        return Err(Error::StreamCaptureImplicit("the legacy stream cannot join a capture".into()));
                    }
                    if let Some(why) = c.invalid() {
                        return Err(Error::StreamCaptureInvalidated(why));
                    }
                    // Fork: the stream joins the capture.
                    *lock(&s.capture) = Some(crate::capture::StreamCapture { cap: c.clone(), deps: nodes });
                    lock(&c.st).streams.push(Arc::downgrade(s));
                    Ok(true)
                }
                (None, None) => Err(Error::CapturedEvent(format!(
                    "event {:#x} was last recorded in a capture that has ended; record it again first",
                    ev.handle
                ))),
            },
        }
    }

    /// Refuses queries and synchronisation of an event last recorded in a
    /// capture.
    pub(crate) fn refuse_captured_event(&self, ev: &Event, what: &str) -> Result<()> {
        if lock(&ev.captured).is_some() {
            return Err(Error::CapturedEvent(format!("{what} of event {:#x}, last recorded in a capturing stream", ev.handle)));
        }
        Ok(())
    }
}
