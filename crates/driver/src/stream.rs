//! Streams: ordered queues of work that run asynchronously to the host.
//!
//! Each stream with pending work has a worker thread that runs its
//! operations in order; the thread exits after a short idle period and is
//! started again by the next submission, so idle streams cost nothing.
//! Ordering between streams (the legacy default stream's implicit
//! synchronisation, `cuStreamWaitEvent`) is expressed as dependencies: an
//! operation first waits until other streams have completed the work that
//! was submitted to them before it. Dependencies only ever point at work
//! submitted earlier, so they cannot form cycles. A dependency on an event
//! record that is already on a backend queue is waited for by this
//! stream's queue on the device instead, when the backend can
//! ([`BackendQueue::wait_event`]): it waits for work enqueued before it
//! only, so it cannot close a cycle either.
//!
//! Device work goes to the stream's backend queue ([`BackendQueue`]): the
//! worker enqueues copies, memsets, launches and event records and goes on
//! to the next operation without waiting for them, so a GPU runs them back
//! to back while the worker prepares what follows. An operation counts as
//! complete (what synchronisation, queries, events and other streams see)
//! only once the queue has completed it: the worker *drains* the queue —
//! waits for it, takes a fault it reports as the context's sticky error,
//! then counts every operation it had enqueued as complete, in order, and
//! runs what they make visible (event completions) — whenever the queue
//! says it is done, whenever no more work is waiting, after
//! [`MAX_IN_FLIGHT`] operations, and before anything that must see its
//! stream's earlier work finished: host work (callbacks, host functions,
//! stream-ordered frees, waits on values) and operations with
//! dependencies, whose waits could otherwise wait for work this worker has
//! enqueued but not counted. On a backend whose queue runs work where it
//! is enqueued (the CPU's [`crate::backend::ImmediateQueue`]) every
//! operation is complete when it returns, so each is counted at once, as
//! before queues existed.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use crate::backend::BackendQueue;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::handle::lock;

/// Work on a stream. It receives the context's sticky error, if any: work
/// that touches the device is skipped then, host callbacks still run (with
/// the error as their status) and events still complete, so that waiting
/// on them never hangs. Device work is enqueued on the stream's backend
/// queue, the second argument.
pub(crate) type Work = Box<dyn FnOnce(Option<&Error>, &dyn BackendQueue) -> Result<()> + Send>;

/// Whether an operation needs its stream's earlier work complete before it
/// runs (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// Enqueued on the backend queue behind earlier work.
    Device,
    /// Runs on the host once the queue is drained.
    Host,
}

/// Operations enqueued on a backend queue before the worker drains it.
pub(crate) const MAX_IN_FLIGHT: usize = 256;
/// What an operation makes visible once the stream counts it as complete
/// (an event's completion: whoever sees the event complete must also see
/// the stream done with everything before it).
pub(crate) type After = Box<dyn FnOnce() + Send>;

/// How a stream synchronises with the legacy default stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// The context's legacy NULL stream.
    Legacy,
    /// A thread's per-thread default stream (blocking with respect to the
    /// legacy stream).
    PerThread,
    /// Created with `cuStreamCreate`; `blocking` unless created with
    /// `CU_STREAM_NON_BLOCKING`.
    User { blocking: bool },
}

/// Something to wait for before running an operation: `stream` having
/// completed `seq` operations.
#[derive(Clone)]
pub(crate) struct Dep {
    pub stream: Arc<Stream>,
    pub seq: u64,
}

#[derive(Clone)]
pub(crate) enum DepWait {
    Stream(Dep),
    /// An event's record generation (cuStreamWaitEvent).
    Event(Arc<crate::event::Event>, u64),
}

impl DepWait {
    fn wait(&self) {
        match self {
            DepWait::Stream(d) => d.stream.wait_for(d.seq),
            DepWait::Event(e, gen) => e.wait_generation(*gen),
        }
    }

    /// Makes `queue`'s later work wait for this on the device, if the
    /// backend can and what it waits for is an event record already on a
    /// backend queue (`wait`: first blocks until the record is enqueued
    /// or complete). `false` when the host must wait instead; `true` also
    /// when there is nothing left to wait for.
    fn wait_on_device(&self, queue: &dyn BackendQueue, wait: bool) -> bool {
        let DepWait::Event(e, generation) = self else { return false };
        match e.enqueued_mark(*generation, wait) {
            Some(mark) => matches!(queue.wait_event(&*mark), Ok(true)),
            None => wait || e.is_complete_generation(*generation),
        }
    }
}

struct Queue {
    ops: VecDeque<(Vec<DepWait>, Work, Option<After>, OpKind)>,
    submitted: u64,
    completed: u64,
    worker: bool,
    /// A non-sticky failure of asynchronous work, reported (once) by the
    /// next synchronisation.
    error: Option<Error>,
    /// The dependencies of the operation running now (operation
    /// `running_at`), kept so that a host callback's waits can be checked
    /// against them ([`Stream::pending_deps`]).
    running: Vec<DepWait>,
    /// The number of the operation the worker took last (operations
    /// before it may still be on the backend queue).
    running_at: u64,
}

pub struct Stream {
    pub(crate) handle: u64,
    pub(crate) ctx: Weak<Context>,
    pub(crate) ctx_handle: u64,
    pub(crate) kind: StreamKind,
    pub(crate) flags: u32,
    pub(crate) priority: i32,
    q: Mutex<Queue>,
    cv: Condvar,
    /// The capture sequence this stream takes part in, if any.
    pub(crate) capture: Mutex<Option<crate::capture::StreamCapture>>,
    /// Where the worker enqueues device work.
    queue: Arc<dyn BackendQueue>,
}

/// How long a worker thread waits for more work before exiting.
const IDLE_EXIT: Duration = Duration::from_millis(250);

impl Stream {
    pub(crate) fn new(
        handle: u64,
        ctx: &Arc<Context>,
        kind: StreamKind,
        flags: u32,
        priority: i32,
        queue: Arc<dyn BackendQueue>,
    ) -> Stream {
        Stream {
            handle,
            ctx: Arc::downgrade(ctx),
            ctx_handle: ctx.handle,
            kind,
            flags,
            priority,
            q: Mutex::new(Queue {
                ops: VecDeque::new(),
                submitted: 0,
                completed: 0,
                worker: false,
                error: None,
                running: Vec::new(),
                running_at: 0,
            }),
            cv: Condvar::new(),
            capture: Mutex::new(None),
            queue,
        }
    }

    pub fn handle(&self) -> u64 {
        self.handle
    }

    pub fn kind(&self) -> StreamKind {
        self.kind
    }

    pub fn flags(&self) -> u32 {
        self.flags
    }

    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// Whether work on this stream waits for the legacy stream (and the
    /// legacy stream for it).
    pub(crate) fn is_blocking(&self) -> bool {
        matches!(self.kind, StreamKind::PerThread | StreamKind::User { blocking: true })
    }

    /// The number of operations submitted so far, if some are unfinished.
    pub(crate) fn pending_tail(&self) -> Option<u64> {
        let q = lock(&self.q);
        (q.completed < q.submitted).then_some(q.submitted)
    }

    /// Appends work; returns its sequence number (wait for it with
    /// [`Stream::wait_for`]).
    pub(crate) fn push(self: &Arc<Self>, deps: Vec<DepWait>, work: Work, after: Option<After>, kind: OpKind) -> Result<u64> {
        let mut q = lock(&self.q);
        q.ops.push_back((deps, work, after, kind));
        q.submitted += 1;
        let seq = q.submitted;
        if !q.worker {
            let me = self.clone();
            let spawned = std::thread::Builder::new().name("anycuda-stream".into()).spawn(move || me.run());
            match spawned {
                Ok(_) => q.worker = true,
                Err(e) => {
                    q.ops.pop_back();
                    q.submitted -= 1;
                    return Err(Error::OutOfMemory(format!("cannot start a stream thread: {e}")));
                }
            }
        }
        drop(q);
        self.cv.notify_all();
        Ok(seq)
    }

    /// Waits for the backend queue and counts what was enqueued on it as
    /// complete (see the module documentation).
    fn drain(&self, in_flight: &mut Vec<Option<After>>, ctx: Option<&Arc<Context>>) {
        if in_flight.is_empty() {
            return;
        }
        if let Err(fault) = self.queue.synchronize() {
            if let Some(c) = ctx {
                c.set_sticky(Error::Fault(fault));
            }
        }
        lock(&self.q).completed += in_flight.len() as u64;
        self.cv.notify_all();
        for after in in_flight.drain(..).flatten() {
            after();
        }
    }

    fn run(self: Arc<Self>) {
        // Operations enqueued on the backend queue and not yet counted as
        // complete, with what each makes visible then.
        let mut in_flight: Vec<Option<After>> = Vec::new();
        loop {
            let mut q = lock(&self.q);
            let (deps, work, after, kind) = loop {
                if let Some(op) = q.ops.pop_front() {
                    q.running = op.0.clone();
                    q.running_at = q.submitted - q.ops.len() as u64;
                    break op;
                }
                // Work often follows work at once (a launch after a copy):
                // look again for a moment before sleeping, as waking a
                // sleeping thread costs several microseconds.
                drop(q);
                spin_until(|| !lock(&self.q).ops.is_empty());
                q = lock(&self.q);
                if !q.ops.is_empty() {
                    continue;
                }
                let (g, timeout) = self.cv.wait_timeout(q, IDLE_EXIT).unwrap_or_else(|e| e.into_inner());
                q = g;
                if timeout.timed_out() && q.ops.is_empty() {
                    q.worker = false;
                    return;
                }
            };
            drop(q);
            let ctx = self.ctx.upgrade();
            // Waits on event records already on a backend queue go to this
            // stream's queue when the backend can wait on the device, so
            // neither this thread nor the GPU's pipeline stops for them.
            // Any other wait is the host's, after draining: what it waits
            // for may itself wait for this stream's enqueued work to be
            // counted. A wait on a record not enqueued yet waits (after
            // the drain) for it to be enqueued, then on the device.
            let host: Vec<&DepWait> = if kind == OpKind::Device && self.queue.waits_on_device() {
                deps.iter().filter(|d| !d.wait_on_device(&*self.queue, false)).collect()
            } else {
                deps.iter().collect()
            };
            if kind == OpKind::Host || !host.is_empty() {
                self.drain(&mut in_flight, ctx.as_ref());
            }
            for d in host {
                if !(kind == OpKind::Device && self.queue.waits_on_device() && d.wait_on_device(&*self.queue, true)) {
                    d.wait();
                }
            }
            let sticky = ctx.as_ref().and_then(|c| c.sticky_error());
            let queue = &*self.queue;
            let result = catch_unwind(AssertUnwindSafe(|| work(sticky.as_ref(), queue)))
                .unwrap_or_else(|_| Err(Error::Unknown("panic in stream work".into())));
            // Work the queue has already completed (all of it, on a queue
            // that runs work where it is enqueued) counts at once.
            let done = in_flight.is_empty() && self.queue.query();
            let mut q = lock(&self.q);
            if let Err(e) = result {
                if e.is_sticky() {
                    if let Some(c) = &ctx {
                        c.set_sticky(e);
                    }
                } else if q.error.is_none() {
                    q.error = Some(e);
                }
            }
            q.running.clear();
            if done {
                q.completed += 1;
                drop(q);
                self.cv.notify_all();
                if let Some(after) = after {
                    after();
                }
                continue;
            }
            let idle = q.ops.is_empty();
            drop(q);
            in_flight.push(after);
            if idle || in_flight.len() >= MAX_IN_FLIGHT || self.queue.query() {
                self.drain(&mut in_flight, ctx.as_ref());
            }
        }
    }

    /// Blocks until `seq` operations have completed.
    pub(crate) fn wait_for(&self, seq: u64) {
        // Short work (an empty kernel, a small copy) ends within
        // microseconds: spin briefly before sleeping, as the CUDA driver's
        // default scheduling does.
        spin_until(|| lock(&self.q).completed >= seq);
        let mut q = lock(&self.q);
        while q.completed < seq {
            q = self.cv.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits for everything submitted so far; returns (and clears) the
    /// first asynchronous error.
    pub(crate) fn synchronize(&self) -> Result<()> {
        let seq = lock(&self.q).submitted;
        self.wait_for(seq);
        match lock(&self.q).error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The dependencies of the unfinished operations up to number `upto`
    /// (the running one's included), and how many operations have
    /// completed.
    pub(crate) fn pending_deps(&self, upto: u64) -> (Vec<DepWait>, u64) {
        let q = lock(&self.q);
        let mut out = Vec::new();
        if q.running_at <= upto && q.completed < q.running_at {
            out.extend(q.running.iter().cloned());
        }
        // Queued operations are numbered after the running one.
        let first_queued = q.submitted - q.ops.len() as u64 + 1;
        for (i, (deps, _, _, _)) in q.ops.iter().enumerate() {
            if first_queued + i as u64 > upto {
                break;
            }
            out.extend(deps.iter().cloned());
        }
        (out, q.completed)
    }

    /// The number of the operation running now (valid on the worker
    /// thread, inside that operation).
    pub(crate) fn running_seq(&self) -> u64 {
        lock(&self.q).running_at
    }

    /// The number of operations submitted so far.
    pub(crate) fn submitted(&self) -> u64 {
        lock(&self.q).submitted
    }

    /// Whether all submitted work has completed.
    pub(crate) fn is_idle(&self) -> bool {
        let q = lock(&self.q);
        q.completed == q.submitted
    }
}

/// How long a thread polls before it sleeps on a condition variable.
const SPIN: std::time::Duration = std::time::Duration::from_micros(20);

/// Polls `done` for up to [`SPIN`]; whether it became true.
pub(crate) fn spin_until(mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= SPIN {
            return false;
        }
        // Between polls the thread yields its core rather than spinning on
        // it: what a synchronising thread waits for is often work that
        // occupies every core (a kernel's blocks, a cuBLAS product on the
        // library's pool), which a spinning poller slows down. Measured on
        // the 2-vCPU development machine: `cublasSgemm` 256x256x256 plus
        // the synchronisation, 2,000 calls, median 178-182 µs spinning
        // against 156-172 µs yielding (the `gemm` crate's own product,
        // called directly: 118-121 µs); in the cuBLAS benchmark against
        // OpenBLAS, SGEMM 256 0.58/0.70x -> 1.21/1.17x, HGEMM 256 0.53x ->
        // 0.93/0.84x; the empty-launch round trip unchanged (2.9-3.4 µs).
        std::thread::yield_now();
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("handle", &format_args!("{:#x}", self.handle)).field("kind", &self.kind).finish()
    }
}
