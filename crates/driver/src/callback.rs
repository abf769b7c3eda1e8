//! Driver calls made from inside a stream callback or host function.
//!
//! A host callback (`cuStreamAddCallback`, `cuLaunchHostFunc`) runs on its
//! stream's worker thread, in stream order: until it returns, its stream
//! cannot go on, and neither can anything that waits for the stream. A call
//! from the callback that waits for such work would wait for itself.
//! CUDA documents that host functions must not call the API and that such
//! calls may return `CUDA_ERROR_NOT_PERMITTED`; anycuda returns it exactly
//! for the calls that would wait for the callback, before they have any
//! effect, and lets the rest work:
//!
//! - `cuStreamSynchronize` of the callback's stream, or of any stream whose
//!   unfinished work waits (through the legacy stream's implicit
//!   synchronisation or `cuStreamWaitEvent`, transitively) for the
//!   callback's stream at or past the callback;
//! - `cuEventSynchronize` of an event whose pending record is such work;
//! - `cuCtxSynchronize` and everything that synchronises the context
//!   (`cuMemFree`, `cuMemFreeHost`, `cuCtxDestroy`, releasing or resetting
//!   the primary context) when the context has such work, which includes
//!   the callback's own context;
//! - synchronous copies and memsets whose operation would wait for such
//!   work.
//!
//! Everything else (launches, asynchronous copies, allocation, queries,
//! waits on unrelated streams and events) runs as from any thread.
//!
//! The check walks the dependencies the streams already hold: each
//! unfinished operation's explicit dependencies (streams at an operation
//! number, events at a record) and its position in its stream. They only
//! ever point to work submitted earlier, so the walk ends.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::{Arc, Weak};

use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::stream::{DepWait, Stream};

/// The callback the current thread is running: its stream and operation.
#[derive(Clone)]
struct Site {
    stream: Weak<Stream>,
    seq: u64,
}

thread_local! {
    static CURRENT: RefCell<Option<Site>> = const { RefCell::new(None) };
}

/// Runs `f`, a host callback of `stream`, marking the thread as inside it.
pub(crate) fn run<R>(stream: &Weak<Stream>, f: impl FnOnce() -> R) -> R {
    let seq = stream.upgrade().map_or(0, |s| s.running_seq());
    let outer = CURRENT.with(|c| c.replace(Some(Site { stream: stream.clone(), seq })));
    struct Restore(Option<Site>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            let _ = CURRENT.try_with(|c| *c.borrow_mut() = prev);
        }
    }
    let _restore = Restore(outer);
    f()
}

/// Whether the calling thread is inside a host callback.
pub fn in_callback() -> bool {
    // At thread or process exit the thread-local may be gone: no callback
    // runs then.
    CURRENT.try_with(|c| c.borrow().is_some()).unwrap_or(false)
}

fn current() -> Option<(Arc<Stream>, u64)> {
    let site = CURRENT.try_with(|c| c.borrow().clone()).ok()??;
    Some((site.stream.upgrade()?, site.seq))
}

fn refuse(what: &str) -> Error {
    Error::NotPermitted(format!(
        "{what} from a stream callback or host function would wait for the callback itself (CUDA: host functions must not call \
         the API)"
    ))
}

/// Whether `stream` reaching operation `seq` waits for operation `k` of
/// `cb` (the running callback).
fn waits_for(stream: &Arc<Stream>, seq: u64, cb: &Arc<Stream>, k: u64, seen: &mut HashSet<(usize, u64)>) -> bool {
    if Arc::ptr_eq(stream, cb) {
        return seq >= k;
    }
    if !seen.insert((Arc::as_ptr(stream) as usize, seq)) {
        return false;
    }
    let (deps, completed) = stream.pending_deps(seq);
    if completed >= seq {
        return false;
    }
    deps.iter().any(|d| match d {
        DepWait::Stream(dep) => waits_for(&dep.stream, dep.seq, cb, k, seen),
        DepWait::Event(ev, generation) => ev.site(*generation).is_some_and(|(s, n)| waits_for(&s, n, cb, k, seen)),
    })
}

/// `Err(NotPermitted)` when the calling thread runs a host callback and
/// waiting for `stream` to complete operation `seq` would wait for it.
pub(crate) fn check_wait(stream: &Arc<Stream>, seq: u64, what: &str) -> Result<()> {
    match current() {
        Some((cb, k)) if waits_for(stream, seq, &cb, k, &mut HashSet::new()) => Err(refuse(what)),
        _ => Ok(()),
    }
}

/// [`check_wait`] for everything submitted to `stream` so far.
pub(crate) fn check_stream(stream: &Arc<Stream>, what: &str) -> Result<()> {
    if !in_callback() {
        return Ok(());
    }
    check_wait(stream, stream.submitted(), what)
}

/// [`check_wait`] for record `generation` of `event`.
pub(crate) fn check_event(event: &Event, generation: u64, what: &str) -> Result<()> {
    if !in_callback() {
        return Ok(());
    }
    match event.site(generation) {
        Some((s, n)) => check_wait(&s, n, what),
        None => Ok(()),
    }
}

/// [`check_wait`] for all work of `ctx` (what `Context::synchronize` waits
/// for).
pub(crate) fn check_context(ctx: &Context, what: &str) -> Result<()> {
    if !in_callback() {
        return Ok(());
    }
    if let Ok(l) = ctx.legacy_stream() {
        check_stream(&l, what)?;
    }
    for s in ctx.streams() {
        check_stream(&s, what)?;
    }
    Ok(())
}

/// [`check_wait`] for a new operation on `stream` with dependencies
/// `deps`, before it is submitted: it waits for the stream's earlier work
/// and for its dependencies.
pub(crate) fn check_new_op(stream: &Arc<Stream>, deps: &[DepWait], what: &str) -> Result<()> {
    let Some((cb, k)) = current() else { return Ok(()) };
    let mut seen = HashSet::new();
    let earlier = stream.submitted();
    let blocked = (Arc::ptr_eq(stream, &cb) && earlier + 1 >= k)
        || (earlier > 0 && waits_for(stream, earlier, &cb, k, &mut seen))
        || deps.iter().any(|d| match d {
            DepWait::Stream(dep) => waits_for(&dep.stream, dep.seq, &cb, k, &mut seen),
            DepWait::Event(ev, generation) => ev.site(*generation).is_some_and(|(s, n)| waits_for(&s, n, &cb, k, &mut seen)),
        });
    if blocked {
        Err(refuse(what))
    } else {
        Ok(())
    }
}
