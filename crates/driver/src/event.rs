//! Events: markers recorded into streams.
//!
//! A record is an operation of its stream: it enqueues a backend event on
//! the stream's queue ([`crate::backend::BackendQueue::record`]), and the
//! driver's event completes when the stream counts the record complete.
//! Elapsed times are the backend events' (the GPU's clock on HIP; the
//! host's clock when the record was enqueued on the CPU, where that is
//! when the work before it finished).

use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use cuda_types::{CUevent_flags, CUevent_record_flags, CUevent_wait_flags};

use crate::backend::{BackendEvent, SharedCounters, IPC_PAYLOAD};
use crate::error::{Error, Result};
use crate::handle::lock;
use crate::stream::{DepWait, Stream};
use crate::Driver;

/// The first bytes of every interprocess event handle anycuda makes.
pub const IPC_EVENT_MAGIC: [u8; 8] = *b"anycIPE1";

pub struct Event {
    pub(crate) handle: u64,
    pub(crate) ctx_handle: u64,
    pub(crate) flags: u32,
    st: Mutex<EventState>,
    cv: Condvar,
    /// Set while the event's latest record was made in a capturing
    /// stream.
    pub(crate) captured: Mutex<Option<crate::capture::CapturedRecord>>,
    /// An interprocess event's counters, shared with the processes that
    /// have it (set when a handle is first made, or when the event is
    /// opened from one). Generations then come from them, so records in
    /// any process are numbered in one sequence, and the event is
    /// complete when `completed` reaches `recorded`.
    shared: OnceLock<Arc<dyn SharedCounters>>,
    /// The interprocess handle made for this event (the same every time).
    ipc_handle: OnceLock<[u8; 64]>,
}

#[derive(Default)]
struct EventState {
    /// Records made (each `cuEventRecord` is one generation).
    recorded: u64,
    /// The newest generation whose stream position has been reached.
    completed: u64,
    /// When the newest completed generation completed.
    time: Option<Instant>,
    /// Where the records not yet completed sit: generation, stream and the
    /// record's operation number (for checks of a host callback's waits).
    sites: Vec<(u64, Weak<Stream>, u64)>,
    /// Backend events of records not yet completed, by generation.
    marks: Vec<(u64, Arc<dyn BackendEvent>)>,
    /// The backend event of the newest completed generation, if it had
    /// one (elapsed times come from it).
    mark: Option<Arc<dyn BackendEvent>>,
}

impl Event {
    pub fn flags(&self) -> u32 {
        self.flags
    }

    fn timing_disabled(&self) -> bool {
        self.flags & CUevent_flags::CU_EVENT_DISABLE_TIMING.0 != 0
    }

    pub(crate) fn complete(&self, generation: u64) {
        if let Some(c) = self.shared.get() {
            c.completed().fetch_max(generation, SeqCst);
        }
        let mut s = lock(&self.st);
        if generation > s.completed {
            s.completed = generation;
            s.time = Some(Instant::now());
            s.mark = s.marks.iter().find(|(g, _)| *g == generation).map(|(_, m)| m.clone());
            s.marks.retain(|(g, _)| *g > generation);
        }
        drop(s);
        self.cv.notify_all();
    }

    pub(crate) fn wait_generation(&self, generation: u64) {
        if let Some(c) = self.shared.get() {
            // Another process may complete it: no condition variable
            // reaches here, so the counter is polled, spinning briefly
            // and then sleeping up to a millisecond between looks.
            crate::stream::spin_until(|| c.completed().load(SeqCst) >= generation);
            let mut nap = Duration::from_micros(20);
            while c.completed().load(SeqCst) < generation {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(1));
            }
            return;
        }
        crate::stream::spin_until(|| lock(&self.st).completed >= generation);
        let mut s = lock(&self.st);
        while s.completed < generation {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Notes the backend event that record `generation` enqueued.
    pub(crate) fn set_mark(&self, generation: u64, mark: Arc<dyn BackendEvent>) {
        let mut s = lock(&self.st);
        if generation > s.completed {
            s.marks.push((generation, mark));
        }
        drop(s);
        // Stream threads may wait for the record to be enqueued
        // (`Event::enqueued_mark`).
        self.cv.notify_all();
    }

    /// Whether record `generation` has completed.
    pub(crate) fn is_complete_generation(&self, generation: u64) -> bool {
        match self.shared.get() {
            Some(c) => c.completed().load(SeqCst) >= generation,
            None => lock(&self.st).completed >= generation,
        }
    }

    /// The backend event of record `generation` if it is enqueued and not
    /// complete yet; `None` once it is complete (or for an interprocess
    /// event, whose records other processes make). With `wait`, blocks
    /// until one or the other.
    pub(crate) fn enqueued_mark(&self, generation: u64, wait: bool) -> Option<Arc<dyn BackendEvent>> {
        if self.shared.get().is_some() {
            if wait {
                self.wait_generation(generation);
            }
            return None;
        }
        let mark = |s: &EventState| s.marks.iter().find(|(g, _)| *g == generation).map(|(_, m)| m.clone());
        let mut s = lock(&self.st);
        loop {
            if s.completed >= generation {
                return None;
            }
            if let Some(m) = mark(&s) {
                return Some(m);
            }
            if !wait {
                return None;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A new record generation, for a record made outside
    /// [`Driver::event_record`] (an event record node of a graph).
    pub(crate) fn begin_record(&self) -> u64 {
        *lock(&self.captured) = None;
        let mut st = lock(&self.st);
        self.next_generation(&mut st)
    }

    /// Numbers a new record (the state locked).
    fn next_generation(&self, st: &mut EventState) -> u64 {
        st.recorded = match self.shared.get() {
            Some(c) => c.recorded().fetch_add(1, SeqCst) + 1,
            None => st.recorded + 1,
        };
        st.recorded
    }

    /// Whether the latest record (in any process, for an interprocess
    /// event) has completed.
    fn is_complete(&self) -> bool {
        match self.shared.get() {
            Some(c) => c.completed().load(SeqCst) >= c.recorded().load(SeqCst),
            None => {
                let s = lock(&self.st);
                s.completed >= s.recorded
            }
        }
    }

    /// The stream and operation number of record `generation`, while it
    /// has not completed.
    pub(crate) fn site(&self, generation: u64) -> Option<(Arc<Stream>, u64)> {
        let st = lock(&self.st);
        if generation <= st.completed {
            return None;
        }
        st.sites.iter().find(|(g, _, _)| *g == generation).and_then(|(_, s, seq)| Some((s.upgrade()?, *seq)))
    }

    /// The latest record's generation (0: never recorded).
    pub(crate) fn recorded_generation(&self) -> u64 {
        match self.shared.get() {
            Some(c) => c.recorded().load(SeqCst),
            None => lock(&self.st).recorded,
        }
    }
}

impl Driver {
    pub fn event_create(&self, flags: u32) -> Result<u64> {
        self.check_init()?;
        let all =
            CUevent_flags::CU_EVENT_BLOCKING_SYNC.0 | CUevent_flags::CU_EVENT_DISABLE_TIMING.0 | CUevent_flags::CU_EVENT_INTERPROCESS.0;
        if flags & !all != 0 {
            return Err(Error::invalid(format!("unknown event flags {flags:#x}")));
        }
        if flags & CUevent_flags::CU_EVENT_INTERPROCESS.0 != 0 && flags & CUevent_flags::CU_EVENT_DISABLE_TIMING.0 == 0 {
            return Err(Error::invalid("CU_EVENT_INTERPROCESS requires CU_EVENT_DISABLE_TIMING"));
        }
        let ctx = self.current_ctx()?;
        Ok(self.new_event(ctx.handle, flags, None).handle)
    }

    fn new_event(&self, ctx_handle: u64, flags: u32, shared: Option<Arc<dyn SharedCounters>>) -> Arc<Event> {
        let cell = OnceLock::new();
        if let Some(c) = shared {
            let _ = cell.set(c);
        }
        self.events.insert_with(|h| Event {
            handle: h,
            ctx_handle,
            flags,
            st: Mutex::new(EventState::default()),
            cv: Condvar::new(),
            captured: Mutex::new(None),
            shared: cell,
            ipc_handle: OnceLock::new(),
        })
    }

    /// `cuIpcGetEventHandle`: a handle other processes open with
    /// [`Driver::ipc_open_event_handle`]. 64 bytes: [`IPC_EVENT_MAGIC`],
    /// the exporting process's id (u32, little-endian), 4 zero bytes, then
    /// the backend's payload for the shared counters.
    pub fn ipc_get_event_handle(&self, h: u64) -> Result<[u8; 64]> {
        self.check_init()?;
        let ev = self.event(h)?;
        if ev.flags & CUevent_flags::CU_EVENT_INTERPROCESS.0 == 0 {
            return Err(Error::invalid("the event was not created with CU_EVENT_INTERPROCESS"));
        }
        // The state stays locked while the counters take over from it, so
        // no record is numbered in between.
        let st = lock(&ev.st);
        if let Some(handle) = ev.ipc_handle.get() {
            return Ok(*handle);
        }
        let (counters, payload) = self.backend.ipc_counters_export().map_err(crate::memory::backend_err)?;
        counters.recorded().store(st.recorded, SeqCst);
        counters.completed().store(st.completed, SeqCst);
        let _ = ev.shared.set(counters);
        let mut handle = [0u8; 64];
        handle[..8].copy_from_slice(&IPC_EVENT_MAGIC);
        handle[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        handle[16..16 + IPC_PAYLOAD].copy_from_slice(&payload);
        let _ = ev.ipc_handle.set(handle);
        Ok(handle)
    }

    /// `cuIpcOpenEventHandle`: an event of the current context that
    /// shares the exporter's records (flags `CU_EVENT_INTERPROCESS |
    /// CU_EVENT_DISABLE_TIMING`), destroyed with `cuEventDestroy`.
    pub fn ipc_open_event_handle(&self, handle: &[u8; 64]) -> Result<u64> {
        self.check_init()?;
        let ctx = self.current_ctx()?;
        if handle[..8] != IPC_EVENT_MAGIC {
            return Err(Error::invalid("not an interprocess event handle of anycuda's"));
        }
        let mut payload = [0u8; IPC_PAYLOAD];
        payload.copy_from_slice(&handle[16..16 + IPC_PAYLOAD]);
        let counters = self.backend.ipc_counters_import(&payload).map_err(crate::memory::backend_err)?;
        let flags = CUevent_flags::CU_EVENT_INTERPROCESS.0 | CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
        Ok(self.new_event(ctx.handle, flags, Some(counters)).handle)
    }

    pub(crate) fn event(&self, h: u64) -> Result<Arc<Event>> {
        self.events.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a live event")))
    }

    pub fn event_destroy(&self, h: u64) -> Result<()> {
        self.check_init()?;
        // Pending records still complete; they hold the event alive.
        self.events.remove(h).map(|_| ()).ok_or_else(|| Error::handle(format!("{h:#x} is not a live event")))
    }

    /// `cuEventRecord(event, stream)`; `ptds` says what the NULL stream
    /// means.
    pub fn event_record(&self, h: u64, stream: u64, ptds: bool, flags: u32) -> Result<()> {
        self.check_init()?;
        if flags & !1 != 0 {
            return Err(Error::invalid(format!("unknown event record flags {flags:#x}")));
        }
        let ev = self.event(h)?;
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        if ctx.handle != ev.ctx_handle {
            return Err(Error::handle("the event and the stream belong to different contexts"));
        }
        let external = flags & CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL.0 != 0;
        if let Some(cap) = self.capturing(&s) {
            return self.capture_event_record(&ev, &s, &cap, external);
        }
        if external {
            return Err(Error::invalid("CU_EVENT_RECORD_EXTERNAL is only valid during stream capture"));
        }
        if s.kind() == crate::stream::StreamKind::Legacy {
            // Refused before the record exists: a record that is never
            // submitted would never complete.
            self.refuse_legacy_implicit(&ctx, "cuEventRecord", true)?;
        }
        *lock(&ev.captured) = None;
        // The state stays locked until the record's site is noted, so no
        // one sees the generation without it.
        let mut st = lock(&ev.st);
        let generation = ev.next_generation(&mut st);
        let e2 = ev.clone();
        // The event completes after the stream has counted the record, so
        // that a stream query after an event synchronisation sees the
        // stream done.
        let after: crate::stream::After = Box::new(move || e2.complete(generation));
        let e3 = ev.clone();
        let record: crate::stream::Work = Box::new(move |_, queue| {
            // The backend event gives elapsed times (without one, the time
            // is the host's at completion) and lets other streams wait for
            // the record on the device (`BackendQueue::wait_event`), which
            // events made without timing are for too.
            if let Ok(m) = queue.record() {
                e3.set_mark(generation, m);
            }
            Ok(())
        });
        let seq = match self.submit_then(&ctx, &s, Vec::new(), record, Some(after), crate::stream::OpKind::Device) {
            Ok(seq) => seq,
            Err(e) => {
                // The record will never run: it completes now, so that no
                // one waits for it.
                if generation > st.completed {
                    st.completed = generation;
                    st.time = Some(Instant::now());
                }
                if let Some(c) = ev.shared.get() {
                    c.completed().fetch_max(generation, SeqCst);
                }
                drop(st);
                ev.cv.notify_all();
                return Err(e);
            }
        };
        let done = st.completed;
        st.sites.retain(|(g, _, _)| *g > done);
        st.sites.push((generation, Arc::downgrade(&s), seq));
        Ok(())
    }

    pub fn event_query(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let ev = self.event(h)?;
        self.refuse_captured_event(&ev, "cuEventQuery")?;
        if ev.is_complete() {
            Ok(())
        } else {
            Err(Error::NotReady)
        }
    }

    pub fn event_synchronize(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let ev = self.event(h)?;
        self.refuse_captured_event(&ev, "cuEventSynchronize")?;
        let g = ev.recorded_generation();
        crate::callback::check_event(&ev, g, "cuEventSynchronize")?;
        ev.wait_generation(g);
        match self.contexts.get(ev.ctx_handle).and_then(|c| c.sticky_error()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Milliseconds from `start` to `end`.
    pub fn event_elapsed_time(&self, start: u64, end: u64) -> Result<f32> {
        self.check_init()?;
        let a = self.event(start)?;
        let b = self.event(end)?;
        self.refuse_captured_event(&a, "cuEventElapsedTime")?;
        self.refuse_captured_event(&b, "cuEventElapsedTime")?;
        if a.timing_disabled() || b.timing_disabled() {
            return Err(Error::handle("an event was created with CU_EVENT_DISABLE_TIMING"));
        }
        let (sa, sb) = (lock(&a.st).clone_state(), lock(&b.st).clone_state());
        let (ma, mb) = (lock(&a.st).mark.clone(), lock(&b.st).mark.clone());
        if sa.0 == 0 || sb.0 == 0 {
            return Err(Error::handle("an event has not been recorded"));
        }
        let (Some(ta), Some(tb)) = (sa.2, sb.2) else {
            return Err(Error::NotReady);
        };
        if sa.1 < sa.0 || sb.1 < sb.0 {
            return Err(Error::NotReady);
        }
        if let (Some(ma), Some(mb)) = (&ma, &mb) {
            if let Some(ms) = ma.elapsed_ms(&**mb) {
                return Ok(ms);
            }
        }
        let ms = if tb >= ta { tb.duration_since(ta).as_secs_f64() * 1e3 } else { -(ta.duration_since(tb).as_secs_f64() * 1e3) };
        Ok(ms as f32)
    }

    /// `cuStreamWaitEvent`: later work on `stream` waits for the event's
    /// latest record.
    pub fn stream_wait_event(&self, stream: u64, h: u64, ptds: bool, flags: u32) -> Result<()> {
        self.check_init()?;
        if flags & !1 != 0 {
            return Err(Error::invalid(format!("unknown wait flags {flags:#x}")));
        }
        let ev = self.event(h)?;
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        let external = flags & CUevent_wait_flags::CU_EVENT_WAIT_EXTERNAL.0 != 0;
        if self.capture_wait_event(&s, &ev, external)? {
            return Ok(());
        }
        let generation = ev.recorded_generation();
        if generation == 0 {
            return Ok(());
        }
        self.submit(&ctx, &s, vec![DepWait::Event(ev, generation)], Box::new(|_, _| Ok(())))?;
        Ok(())
    }
}

impl EventState {
    fn clone_state(&self) -> (u64, u64, Option<Instant>) {
        (self.recorded, self.completed, self.time)
    }
}
