//! The stream API on top of [`crate::stream`]: creation, the default
//! streams, submission with the legacy stream's implicit synchronisation,
//! queries, callbacks.

use std::sync::{Arc, Mutex};

use cuda_types::{CU_STREAM_LEGACY, CU_STREAM_PER_THREAD};

use crate::backend::BackendQueue;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::handle::lock;
use crate::stream::{Dep, DepWait, OpKind, Stream, StreamKind, Work};
use crate::Driver;

/// Device work: enqueues on the stream's backend queue.
pub(crate) type DeviceWork = Box<dyn FnOnce(&dyn BackendQueue) -> Result<()> + Send>;

/// A host function run in stream order; receives the stream's status.
pub type HostCallback = Box<dyn FnOnce(Result<()>) + Send>;

/// What new work on `stream` waits for under the legacy stream's rules:
/// on the legacy stream, the blocking streams' unfinished work; on a
/// blocking stream, the legacy stream's.
fn implicit_deps(ctx: &Context, stream: &Arc<Stream>) -> Result<Vec<DepWait>> {
    let mut deps = Vec::new();
    match stream.kind() {
        StreamKind::Legacy => {
            for s in ctx.streams() {
                if s.is_blocking() {
                    if let Some(seq) = s.pending_tail() {
                        deps.push(DepWait::Stream(Dep { stream: s, seq }));
                    }
                }
            }
        }
        _ if stream.is_blocking() => {
            let legacy = ctx.legacy_stream()?;
            if let Some(seq) = legacy.pending_tail() {
                deps.push(DepWait::Stream(Dep { stream: legacy, seq }));
            }
        }
        _ => {}
    }
    Ok(deps)
}

impl Driver {
    /// Resolves a stream argument: 0 is the default stream (per-thread when
    /// `ptds`, i.e. for the `_ptsz`/`_ptds` entry points, else legacy),
    /// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD` are what they say, and
    /// anything else must be a live stream. Returns the stream's context,
    /// checked for sticky errors.
    pub(crate) fn resolve_stream(&self, h: u64, ptds: bool) -> Result<(Arc<Context>, Arc<Stream>)> {
        self.check_init()?;
        let (ctx, s) = self.resolve_stream_alive(h, ptds)?;
        if let Some(e) = ctx.sticky_error() {
            return Err(e);
        }
        Ok((ctx, s))
    }

    pub(crate) fn resolve_stream_alive(&self, h: u64, ptds: bool) -> Result<(Arc<Context>, Arc<Stream>)> {
        let legacy = CU_STREAM_LEGACY.addr() as u64;
        let per_thread = CU_STREAM_PER_THREAD.addr() as u64;
        if h == 0 || h == legacy || h == per_thread {
            let ctx = self.current_ctx_alive()?;
            let use_pt = h == per_thread || (h == 0 && ptds);
            let s = if use_pt { self.per_thread_stream(&ctx)? } else { ctx.legacy_stream()? };
            return Ok((ctx, s));
        }
        let s = self.streams.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a live stream")))?;
        let ctx = s.ctx.upgrade().filter(|c| c.is_active() && self.contexts.get(c.handle).is_some()).ok_or(Error::ContextIsDestroyed)?;
        Ok((ctx, s))
    }

    /// Queues device `work` on `stream`, after `deps` and after whatever
    /// the legacy-stream rules require.
    pub(crate) fn submit(&self, ctx: &Context, stream: &Arc<Stream>, deps: Vec<DepWait>, work: Work) -> Result<u64> {
        self.submit_then(ctx, stream, deps, work, None, OpKind::Device)
    }

    /// Queues host `work` on `stream`: it runs once the stream's earlier
    /// work has completed.
    pub(crate) fn submit_host(&self, ctx: &Context, stream: &Arc<Stream>, work: Work) -> Result<u64> {
        self.submit_then(ctx, stream, Vec::new(), work, None, OpKind::Host)
    }

    /// [`Self::submit`], with `after` run once the stream counts the work
    /// as complete.
    pub(crate) fn submit_then(
        &self,
        ctx: &Context,
        stream: &Arc<Stream>,
        mut deps: Vec<DepWait>,
        work: Work,
        after: Option<crate::stream::After>,
        kind: OpKind,
    ) -> Result<u64> {
        // Work reaching a capturing stream here could not be captured
        // (the operations that can be captured become graph nodes before
        // this point); nor may the legacy stream wait for a capturing one.
        self.refuse_if_capturing(stream, "work that cannot be captured")?;
        if stream.kind() == StreamKind::Legacy {
            self.refuse_legacy_implicit(ctx, "work", true)?;
        }
        let _g = lock(&ctx.submit_lock);
        deps.extend(implicit_deps(ctx, stream)?);
        stream.push(deps, work, after, kind)
    }

    /// Runs device `work` in stream order and waits for it (and the
    /// stream's earlier work) to complete; returns its result.
    pub(crate) fn run_sync(&self, ctx: &Context, stream: &Arc<Stream>, work: DeviceWork) -> Result<()> {
        if crate::callback::in_callback() {
            crate::callback::check_new_op(stream, &implicit_deps(ctx, stream)?, "a synchronous operation")?;
        }
        let slot: Arc<Mutex<Option<Result<()>>>> = Arc::new(Mutex::new(None));
        let out = slot.clone();
        let seq = self.submit(
            ctx,
            stream,
            Vec::new(),
            Box::new(move |sticky, queue| {
                let r = match sticky {
                    Some(e) => Err(e.clone()),
                    None => work(queue).and_then(|()| queue.synchronize().map_err(Error::Fault)),
                };
                let ret = match &r {
                    Err(e) if e.is_sticky() => Err(e.clone()),
                    _ => Ok(()),
                };
                *lock(&out) = Some(r);
                ret
            }),
        )?;
        stream.wait_for(seq);
        let r = lock(&slot).take();
        r.unwrap_or_else(|| Err(Error::Unknown("synchronous work did not run".into())))
    }

    /// Queues device work that is skipped once the context is poisoned.
    pub(crate) fn run_async(&self, ctx: &Context, stream: &Arc<Stream>, work: DeviceWork) -> Result<()> {
        self.submit(
            ctx,
            stream,
            Vec::new(),
            Box::new(move |sticky, queue| match sticky {
                Some(_) => Ok(()),
                None => work(queue),
            }),
        )?;
        Ok(())
    }

    /// Queues host work (run after the stream's earlier work has
    /// completed) that is skipped once the context is poisoned.
    pub(crate) fn run_host_async(&self, ctx: &Context, stream: &Arc<Stream>, work: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        self.submit_host(
            ctx,
            stream,
            Box::new(move |sticky, _| match sticky {
                Some(_) => Ok(()),
                None => work(),
            }),
        )?;
        Ok(())
    }

    /// `cuStreamCreateWithPriority` (`cuStreamCreate`: priority 0).
    pub fn stream_create(&self, flags: u32, priority: i32) -> Result<u64> {
        if flags & !1 != 0 {
            return Err(Error::invalid(format!("unknown stream flags {flags:#x}")));
        }
        let ctx = self.current_ctx()?;
        let (least, greatest) = self.device_props(ctx.device as i32)?.stream_priority_range;
        let priority = priority.clamp(greatest, least);
        let queue = self.new_queue(ctx.device, priority)?;
        let s = self.streams.insert_with(|h| Stream::new(h, &ctx, StreamKind::User { blocking: flags & 1 == 0 }, flags, priority, queue));
        lock(&ctx.st).streams.push(Arc::downgrade(&s));
        Ok(s.handle())
    }

    /// `cuStreamDestroy`: returns at once; queued work still completes.
    pub fn stream_destroy(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let s = self.streams.remove(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a live stream")))?;
        self.capture_stream_destroyed(&s);
        Ok(())
    }

    pub fn stream_query(&self, h: u64, ptds: bool) -> Result<()> {
        let (ctx, s) = self.resolve_stream(h, ptds)?;
        self.refuse_if_capturing(&s, "cuStreamQuery")?;
        if s.kind() == StreamKind::Legacy {
            self.refuse_legacy_implicit(&ctx, "cuStreamQuery", true)?;
        }
        if s.is_idle() {
            Ok(())
        } else {
            Err(Error::NotReady)
        }
    }

    pub fn stream_synchronize(&self, h: u64, ptds: bool) -> Result<()> {
        let (ctx, s) = self.resolve_stream(h, ptds)?;
        crate::callback::check_stream(&s, "cuStreamSynchronize")?;
        self.refuse_if_capturing(&s, "cuStreamSynchronize")?;
        if s.kind() == StreamKind::Legacy {
            self.refuse_legacy_implicit(&ctx, "cuStreamSynchronize", true)?;
        }
        let r = s.synchronize();
        if let Some(e) = ctx.sticky_error() {
            return Err(e);
        }
        r
    }

    pub fn stream_get_priority(&self, h: u64, ptds: bool) -> Result<i32> {
        Ok(self.resolve_stream_alive_checked(h, ptds)?.1.priority())
    }

    pub fn stream_get_flags(&self, h: u64, ptds: bool) -> Result<u32> {
        Ok(self.resolve_stream_alive_checked(h, ptds)?.1.flags())
    }

    pub fn stream_get_ctx(&self, h: u64, ptds: bool) -> Result<u64> {
        Ok(self.resolve_stream_alive_checked(h, ptds)?.0.handle)
    }

    pub fn stream_get_device(&self, h: u64, ptds: bool) -> Result<i32> {
        Ok(self.resolve_stream_alive_checked(h, ptds)?.0.device as i32)
    }

    pub fn stream_get_id(&self, h: u64, ptds: bool) -> Result<u64> {
        Ok(self.resolve_stream_alive_checked(h, ptds)?.1.handle())
    }

    fn resolve_stream_alive_checked(&self, h: u64, ptds: bool) -> Result<(Arc<Context>, Arc<Stream>)> {
        self.check_init()?;
        self.resolve_stream_alive(h, ptds)
    }

    /// `cuStreamAddCallback` (flags must be 0): the callback runs on a
    /// driver thread after preceding work, with the stream's status.
    pub fn stream_add_callback(&self, h: u64, ptds: bool, flags: u32, cb: HostCallback) -> Result<()> {
        if flags != 0 {
            return Err(Error::invalid("cuStreamAddCallback flags must be 0"));
        }
        let (ctx, s) = self.resolve_stream(h, ptds)?;
        let me = Arc::downgrade(&s);
        self.submit_host(
            &ctx,
            &s,
            Box::new(move |sticky, _| {
                let status = match sticky {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                };
                crate::callback::run(&me, || cb(status));
                Ok(())
            }),
        )?;
        Ok(())
    }

    /// `cuLaunchHostFunc`: runs `f` in stream order (not after a fault);
    /// in a capture, a host node.
    pub fn launch_host_func(&self, h: u64, ptds: bool, f: impl Into<crate::graph::HostFn>) -> Result<()> {
        let f = f.into();
        let (ctx, s) = self.resolve_stream(h, ptds)?;
        if let Some(cap) = self.capturing(&s) {
            return self.capture_node(&s, &cap, crate::graph::NodeParams::Host(f)).map(|_| ());
        }
        let me = Arc::downgrade(&s);
        self.run_host_async(
            &ctx,
            &s,
            Box::new(move || {
                crate::callback::run(&me, || (f.call)());
                Ok(())
            }),
        )
    }

    /// `cuStreamAttachMemAsync`: memory is always accessible; only checks.
    pub fn stream_attach_mem(&self, h: u64, ptds: bool, ptr: u64, len: usize, flags: u32) -> Result<()> {
        if !(flags == 1 || flags == 2 || flags == 4) {
            return Err(Error::invalid(format!("unknown attach flags {flags:#x}")));
        }
        self.resolve_stream(h, ptds)?;
        let info = self.pointer_info(ptr);
        match info {
            Some(i) if i.is_managed => {
                if len != 0 && len as u64 != i.range_size {
                    return Err(Error::invalid("length must be 0 or the allocation's size"));
                }
                Ok(())
            }
            _ => Err(Error::invalid("not managed memory")),
        }
    }

    /// `cuStreamWriteValue32/64`: writes `value` to device memory in
    /// stream order.
    pub fn stream_write_value(&self, h: u64, ptds: bool, addr: u64, value: u64, wide: bool) -> Result<()> {
        let n = if wide { 8 } else { 4 };
        let (ctx, s) = self.resolve_stream(h, ptds)?;
        let dst = self.resolve_device(addr, n)?;
        self.run_async(
            &ctx,
            &s,
            Box::new(move |queue| {
                let bytes = value.to_le_bytes();
                crate::memory::enqueue_owned(queue, dst, bytes[..n].to_vec())
            }),
        )
    }

    /// `cuStreamWaitValue32/64`: later work waits until the condition on
    /// the value at `addr` holds.
    pub fn stream_wait_value(&self, h: u64, ptds: bool, addr: u64, value: u64, flags: u32, wide: bool) -> Result<()> {
        let n = if wide { 8 } else { 4 };
        let cond = flags & 0x3;
        if flags & !(0x3 | 0x4000_0000) != 0 {
            return Err(Error::invalid(format!("unknown wait flags {flags:#x}")));
        }
        let (ctx, s) = self.resolve_stream(h, ptds)?;
        let src = self.resolve_device_src(addr, n)?;
        let backend = self.backend.clone();
        self.run_host_async(
            &ctx,
            &s,
            Box::new(move || loop {
                let mut buf = [0u8; 8];
                crate::memory::copy_to_host(&*backend, &mut buf[..n], src)?;
                let v = u64::from_le_bytes(buf);
                let ok = if wide {
                    match cond {
                        0 => (v.wrapping_sub(value) as i64) >= 0,
                        1 => v == value,
                        2 => v & value != 0,
                        _ => !(v | value) != 0,
                    }
                } else {
                    let (v, w) = (v as u32, value as u32);
                    match cond {
                        0 => (v.wrapping_sub(w) as i32) >= 0,
                        1 => v == w,
                        2 => v & w != 0,
                        _ => !(v | w) != 0,
                    }
                };
                if ok {
                    return Ok(());
                }
                std::thread::yield_now();
            }),
        )
    }
}
