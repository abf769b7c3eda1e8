//! Contexts: primary contexts, created contexts, the per-thread context
//! stack, limits and configuration, context-local storage, sticky errors.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use cuda_types::{CUctx_flags, CUlimit};

use crate::error::{Error, Result};
use crate::handle::{lock, new_handle, HandleKind};
use crate::stream::{Stream, StreamKind};
use crate::Driver;

/// Called when a context-local storage entry's context is destroyed.
pub type ClsDtor = Box<dyn FnOnce() + Send>;

pub(crate) struct ClsEntry {
    pub value: usize,
    pub dtor: Option<ClsDtor>,
}

/// The limits of `cuCtxSetLimit`, with NVIDIA's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub stack_size: u64,
    pub printf_fifo_size: u64,
    pub malloc_heap_size: u64,
    pub dev_runtime_sync_depth: u64,
    pub dev_runtime_pending_launch_count: u64,
    pub max_l2_fetch_granularity: u64,
    pub persisting_l2_cache_size: u64,
    /// A kernel that calls device `malloc`/`free` has been launched: the
    /// heap size can no longer change (`cuCtxSetLimit` refuses it).
    pub malloc_heap_fixed: bool,
    /// The same for device `printf` and the FIFO size.
    pub printf_fifo_fixed: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            stack_size: 1024,
            printf_fifo_size: 1 << 20,
            malloc_heap_size: 8 << 20,
            dev_runtime_sync_depth: 2,
            dev_runtime_pending_launch_count: 2048,
            max_l2_fetch_granularity: 128,
            persisting_l2_cache_size: 0,
            malloc_heap_fixed: false,
            printf_fifo_fixed: false,
        }
    }
}

pub(crate) struct CtxState {
    /// False for a primary context that is not retained.
    pub active: bool,
    /// Primary: retain count. Created: `cuCtxAttach` count (starts at 1).
    pub refcount: u32,
    pub flags: u32,
    pub limits: Limits,
    pub cache_config: u32,
    pub shared_config: u32,
    /// Every user and per-thread stream of the context.
    pub streams: Vec<Weak<Stream>>,
    pub cls: HashMap<usize, ClsEntry>,
    /// Bumped at every teardown so per-thread streams of an earlier life
    /// of a primary context are not reused.
    pub generation: u64,
    /// Contexts whose memory this one was given access to
    /// (`cuCtxEnablePeerAccess`), with their devices.
    pub peers: std::collections::HashMap<u64, usize>,
}

pub struct Context {
    pub(crate) handle: u64,
    pub(crate) device: usize,
    pub(crate) primary: bool,
    pub(crate) id: u64,
    pub(crate) st: Mutex<CtxState>,
    sticky: Mutex<Option<Error>>,
    /// Serialises submissions that involve the legacy stream's implicit
    /// dependencies, so two threads cannot create a wait cycle.
    pub(crate) submit_lock: Mutex<()>,
    legacy: OnceLock<Arc<Stream>>,
}

/// What `cuDevicePrimaryCtxGetState` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrimaryState {
    pub flags: u32,
    pub active: bool,
}

static NEXT_CTX_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The context stack of this thread, per driver instance.
    static STACKS: RefCell<HashMap<u64, Vec<u64>>> = RefCell::new(HashMap::new());
    /// This thread's per-thread default streams, per (driver, context,
    /// context generation).
    static PER_THREAD: RefCell<HashMap<(u64, u64, u64), Arc<Stream>>> = RefCell::new(HashMap::new());
}

fn with_stack<R>(driver: u64, f: impl FnOnce(&mut Vec<u64>) -> R) -> R {
    STACKS.with(|s| f(s.borrow_mut().entry(driver).or_default()))
}

const VALID_CTX_FLAGS: u32 = CUctx_flags::CU_CTX_SCHED_MASK.0
    | CUctx_flags::CU_CTX_MAP_HOST.0
    | CUctx_flags::CU_CTX_LMEM_RESIZE_TO_MAX.0
    | CUctx_flags::CU_CTX_COREDUMP_ENABLE.0
    | CUctx_flags::CU_CTX_USER_COREDUMP_ENABLE.0
    | CUctx_flags::CU_CTX_SYNC_MEMOPS.0;

fn check_ctx_flags(flags: u32) -> Result<()> {
    if flags & !VALID_CTX_FLAGS != 0 {
        return Err(Error::invalid(format!("unknown context flags {flags:#x}")));
    }
    // At most one scheduling policy.
    let sched = flags & CUctx_flags::CU_CTX_SCHED_MASK.0;
    if sched.count_ones() > 1 {
        return Err(Error::invalid(format!("conflicting scheduling flags {sched:#x}")));
    }
    Ok(())
}

impl Context {
    /// The context's limits for launches of `kernels`, noting that the
    /// heap or the printf FIFO is in use by then if one of them uses it.
    pub(crate) fn limits_for_launch<'k>(&self, kernels: impl IntoIterator<Item = &'k crate::backend::KernelDesc>) -> Limits {
        let mut st = lock(&self.st);
        for k in kernels {
            st.limits.malloc_heap_fixed |= k.calls_malloc;
            st.limits.printf_fifo_fixed |= k.calls_printf;
        }
        st.limits
    }

    pub(crate) fn create(driver: &Driver, device: usize, flags: u32, primary: bool) -> Result<Arc<Context>> {
        let queue = driver.new_queue(device, 0)?;
        let ctx = driver.contexts.insert_with(|h| Context {
            handle: h,
            device,
            primary,
            id: NEXT_CTX_ID.fetch_add(1, Ordering::Relaxed),
            st: Mutex::new(CtxState {
                active: !primary,
                refcount: u32::from(!primary),
                flags,
                limits: Limits::default(),
                cache_config: 0,
                shared_config: 0,
                streams: Vec::new(),
                cls: HashMap::new(),
                generation: 0,
                peers: std::collections::HashMap::new(),
            }),
            sticky: Mutex::new(None),
            submit_lock: Mutex::new(()),
            legacy: OnceLock::new(),
        });
        let legacy = Arc::new(Stream::new(new_handle(HandleKind::Stream), &ctx, StreamKind::Legacy, 0, 0, queue));
        let _ = ctx.legacy.set(legacy);
        Ok(ctx)
    }

    pub fn handle(&self) -> u64 {
        self.handle
    }

    pub fn device(&self) -> usize {
        self.device
    }

    pub fn is_primary(&self) -> bool {
        self.primary
    }

    pub(crate) fn legacy_stream(&self) -> Result<Arc<Stream>> {
        self.legacy.get().cloned().ok_or_else(|| Error::Unknown("context without a legacy stream".into()))
    }

    pub(crate) fn is_active(&self) -> bool {
        lock(&self.st).active
    }

    pub fn sticky_error(&self) -> Option<Error> {
        lock(&self.sticky).clone()
    }

    pub(crate) fn set_sticky(&self, e: Error) {
        let mut s = lock(&self.sticky);
        if s.is_none() {
            *s = Some(e);
        }
    }

    /// Live streams of the context (user and per-thread).
    pub(crate) fn streams(&self) -> Vec<Arc<Stream>> {
        let mut st = lock(&self.st);
        st.streams.retain(|w| w.strong_count() > 0);
        st.streams.iter().filter_map(|w| w.upgrade()).collect()
    }

    /// Waits for all work of the context.
    pub(crate) fn synchronize(&self) -> Result<()> {
        let mut first = None;
        if let Ok(l) = self.legacy_stream() {
            if let Err(e) = l.synchronize() {
                first.get_or_insert(e);
            }
        }
        for s in self.streams() {
            if let Err(e) = s.synchronize() {
                first.get_or_insert(e);
            }
        }
        if let Some(e) = self.sticky_error() {
            return Err(e);
        }
        first.map_or(Ok(()), Err)
    }
}

impl Driver {
    fn primaries(&self) -> &[Arc<Context>] {
        self.primaries.get().map(|v| v.as_slice()).unwrap_or(&[])
    }

    fn primary(&self, dev: i32) -> Result<&Arc<Context>> {
        self.check_init()?;
        usize::try_from(dev).ok().and_then(|d| self.primaries().get(d)).ok_or(Error::InvalidDevice(dev as i64))
    }

    /// A context by handle, for calls that name one explicitly.
    pub(crate) fn ctx_by_handle(&self, h: u64) -> Result<Arc<Context>> {
        self.contexts.get(h).ok_or(Error::InvalidContext)
    }

    /// The handle on top of this thread's stack, whatever its state.
    pub fn ctx_get_current(&self) -> Result<Option<u64>> {
        self.check_init()?;
        Ok(with_stack(self.id, |s| s.last().copied()))
    }

    /// The current context, usable for work: present, alive, active and
    /// not poisoned by a kernel fault.
    pub fn current_ctx(&self) -> Result<Arc<Context>> {
        let ctx = self.current_ctx_alive()?;
        if let Some(e) = ctx.sticky_error() {
            return Err(e);
        }
        Ok(ctx)
    }

    /// The current context, alive and active, sticky errors ignored.
    pub(crate) fn current_ctx_alive(&self) -> Result<Arc<Context>> {
        self.check_init()?;
        let h = with_stack(self.id, |s| s.last().copied()).ok_or(Error::InvalidContext)?;
        let ctx = self.contexts.get(h).ok_or(Error::ContextIsDestroyed)?;
        if !ctx.is_active() {
            return Err(Error::ContextIsDestroyed);
        }
        Ok(ctx)
    }

    /// An explicit context argument where NULL means the current one.
    pub(crate) fn ctx_or_current(&self, h: u64) -> Result<Arc<Context>> {
        if h == 0 {
            return self.current_ctx_alive();
        }
        self.check_init()?;
        let ctx = self.ctx_by_handle(h)?;
        if !ctx.is_active() {
            return Err(Error::ContextIsDestroyed);
        }
        Ok(ctx)
    }

    /// `cuCtxCreate`: a new context, pushed onto this thread's stack.
    pub fn ctx_create(&self, flags: u32, dev: i32) -> Result<u64> {
        self.device_props(dev)?;
        check_ctx_flags(flags)?;
        let ctx = Context::create(self, dev as usize, flags, false)?;
        with_stack(self.id, |s| s.push(ctx.handle));
        Ok(ctx.handle)
    }

    /// `cuCtxDestroy`.
    pub fn ctx_destroy(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let ctx = self.ctx_by_handle(h)?;
        if ctx.primary {
            return Err(Error::InvalidContext);
        }
        crate::callback::check_context(&ctx, "cuCtxDestroy")?;
        self.teardown(&ctx);
        self.contexts.remove(h);
        with_stack(self.id, |s| {
            if s.last() == Some(&h) {
                s.pop();
            }
        });
        Ok(())
    }

    /// `cuCtxAttach`: increments a created context's usage count.
    pub fn ctx_attach(&self, flags: u32) -> Result<u64> {
        if flags != 0 {
            return Err(Error::invalid("cuCtxAttach flags must be 0"));
        }
        let ctx = self.current_ctx_alive()?;
        lock(&ctx.st).refcount += 1;
        Ok(ctx.handle)
    }

    /// `cuCtxDetach`: decrements the usage count, destroying at zero.
    pub fn ctx_detach(&self, h: u64) -> Result<()> {
        self.check_init()?;
        let ctx = self.ctx_by_handle(h)?;
        if ctx.primary {
            return Err(Error::InvalidContext);
        }
        let left = {
            let mut st = lock(&ctx.st);
            st.refcount = st.refcount.saturating_sub(1);
            st.refcount
        };
        if left == 0 {
            self.ctx_destroy(h)?;
        }
        Ok(())
    }

    /// `cuCtxPushCurrent`.
    pub fn ctx_push(&self, h: u64) -> Result<()> {
        self.check_init()?;
        self.ctx_by_handle(h)?;
        with_stack(self.id, |s| s.push(h));
        Ok(())
    }

    /// `cuCtxPopCurrent`: returns the popped handle.
    pub fn ctx_pop(&self) -> Result<u64> {
        self.check_init()?;
        with_stack(self.id, |s| s.pop()).ok_or(Error::InvalidContext)
    }

    /// `cuCtxSetCurrent`: replaces the top of the stack; 0 pops.
    pub fn ctx_set_current(&self, h: u64) -> Result<()> {
        self.check_init()?;
        if h == 0 {
            with_stack(self.id, |s| s.pop());
            return Ok(());
        }
        self.ctx_by_handle(h)?;
        with_stack(self.id, |s| {
            s.pop();
            s.push(h);
        });
        Ok(())
    }

    /// `cuCtxGetDevice` (`ctx` 0: the current context).
    pub fn ctx_get_device(&self, ctx: u64) -> Result<i32> {
        Ok(self.ctx_or_current(ctx)?.device as i32)
    }

    pub fn ctx_get_flags(&self) -> Result<u32> {
        Ok(lock(&self.current_ctx_alive()?.st).flags)
    }

    /// `cuCtxSetFlags`: replaces the current context's flags.
    pub fn ctx_set_flags(&self, flags: u32) -> Result<()> {
        check_ctx_flags(flags)?;
        let ctx = self.current_ctx_alive()?;
        lock(&ctx.st).flags = flags;
        Ok(())
    }

    /// `cuCtxGetId`: unique for the life of the process.
    pub fn ctx_get_id(&self, ctx: u64) -> Result<u64> {
        Ok(self.ctx_or_current(ctx)?.id)
    }

    /// `cuCtxGetApiVersion`.
    pub fn ctx_get_api_version(&self, ctx: u64) -> Result<u32> {
        self.ctx_or_current(ctx)?;
        Ok(3020)
    }

    /// `cuCtxSynchronize` (`ctx` 0: the current one).
    pub fn ctx_synchronize(&self, ctx: u64) -> Result<()> {
        let ctx = self.ctx_or_current(ctx)?;
        crate::callback::check_context(&ctx, "cuCtxSynchronize")?;
        self.check_capture_safe("cuCtxSynchronize")?;
        ctx.synchronize()
    }

    fn limit_slot(limit: CUlimit) -> Result<fn(&mut Limits) -> &mut u64> {
        Ok(match limit {
            CUlimit::CU_LIMIT_STACK_SIZE => |l| &mut l.stack_size,
            CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE => |l| &mut l.printf_fifo_size,
            CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE => |l| &mut l.malloc_heap_size,
            CUlimit::CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH => |l| &mut l.dev_runtime_sync_depth,
            CUlimit::CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT => |l| &mut l.dev_runtime_pending_launch_count,
            CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY => |l| &mut l.max_l2_fetch_granularity,
            CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE => |l| &mut l.persisting_l2_cache_size,
            l if l.0 < CUlimit::CU_LIMIT_MAX.0 => return Err(Error::UnsupportedLimit),
            l => return Err(Error::invalid(format!("unknown limit {}", l.0))),
        })
    }

    pub fn ctx_get_limit(&self, limit: CUlimit) -> Result<u64> {
        let ctx = self.current_ctx_alive()?;
        let slot = Self::limit_slot(limit)?;
        let mut st = lock(&ctx.st);
        Ok(*slot(&mut st.limits))
    }

    pub fn ctx_set_limit(&self, limit: CUlimit, value: u64) -> Result<()> {
        let ctx = self.current_ctx()?;
        let slot = Self::limit_slot(limit)?;
        let props = self.device_props(ctx.device as i32)?;
        let value = match limit {
            CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY => {
                if value > 128 {
                    return Err(Error::invalid("L2 fetch granularity above 128"));
                }
                value
            }
            CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE => value.min(props.max_persisting_l2_cache_size as u64),
            // NVIDIA rounds the stack size up to a multiple of 16 bytes.
            CUlimit::CU_LIMIT_STACK_SIZE => value.div_ceil(16) * 16,
            _ => value,
        };
        let mut st = lock(&ctx.st);
        // CUDA's rule (the documentation of cuCtxSetLimit): the heap and
        // the printf FIFO are set up for the first kernel that uses them.
        if limit == CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE && st.limits.malloc_heap_fixed {
            return Err(Error::invalid("the malloc heap size cannot change once a kernel that calls malloc or free has been launched"));
        }
        if limit == CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE && st.limits.printf_fifo_fixed {
            return Err(Error::invalid("the printf FIFO size cannot change once a kernel that calls printf has been launched"));
        }
        *slot(&mut st.limits) = value;
        Ok(())
    }

    pub fn ctx_get_cache_config(&self) -> Result<u32> {
        Ok(lock(&self.current_ctx_alive()?.st).cache_config)
    }

    pub fn ctx_set_cache_config(&self, config: u32) -> Result<()> {
        if config > 3 {
            return Err(Error::invalid(format!("unknown cache config {config}")));
        }
        let ctx = self.current_ctx()?;
        lock(&ctx.st).cache_config = config;
        Ok(())
    }

    pub fn ctx_get_shared_mem_config(&self) -> Result<u32> {
        Ok(lock(&self.current_ctx_alive()?.st).shared_config)
    }

    pub fn ctx_set_shared_mem_config(&self, config: u32) -> Result<()> {
        if config > 2 {
            return Err(Error::invalid(format!("unknown shared memory config {config}")));
        }
        let ctx = self.current_ctx()?;
        lock(&ctx.st).shared_config = config;
        Ok(())
    }

    /// `(least, greatest)` priority.
    pub fn ctx_get_stream_priority_range(&self) -> Result<(i32, i32)> {
        let ctx = self.current_ctx_alive()?;
        Ok(self.device_props(ctx.device as i32)?.stream_priority_range)
    }

    // ---- primary contexts ----

    /// The primary context of `dev` without retaining it (CUDART_INTERFACE
    /// slot 2): the handle `cuDevicePrimaryCtxRetain` will return.
    pub fn primary_ctx_handle(&self, dev: i32) -> Result<u64> {
        Ok(self.primary(dev)?.handle)
    }

    pub fn primary_ctx_retain(&self, dev: i32) -> Result<u64> {
        let ctx = self.primary(dev)?;
        let mut st = lock(&ctx.st);
        st.refcount += 1;
        st.active = true;
        Ok(ctx.handle)
    }

    pub fn primary_ctx_release(&self, dev: i32) -> Result<()> {
        let ctx = self.primary(dev)?.clone();
        if lock(&ctx.st).refcount == 1 {
            crate::callback::check_context(&ctx, "releasing the primary context")?;
        }
        let now_zero = {
            let mut st = lock(&ctx.st);
            if st.refcount == 0 {
                return Err(Error::InvalidContext);
            }
            st.refcount -= 1;
            st.refcount == 0
        };
        if now_zero {
            self.teardown(&ctx);
            lock(&ctx.st).active = false;
        }
        Ok(())
    }

    /// `cuDevicePrimaryCtxReset`: destroys everything in the context; it
    /// becomes inactive until retained again.
    pub fn primary_ctx_reset(&self, dev: i32) -> Result<()> {
        let ctx = self.primary(dev)?.clone();
        crate::callback::check_context(&ctx, "cuDevicePrimaryCtxReset")?;
        self.teardown(&ctx);
        let mut st = lock(&ctx.st);
        st.active = false;
        st.refcount = 0;
        Ok(())
    }

    /// `cuDevicePrimaryCtxSetFlags`; `v1` gives the pre-11.0 behaviour of
    /// refusing while the context is active.
    pub fn primary_ctx_set_flags(&self, dev: i32, flags: u32, v1: bool) -> Result<()> {
        let ctx = self.primary(dev)?;
        check_ctx_flags(flags)?;
        let mut st = lock(&ctx.st);
        if v1 && st.active {
            return Err(Error::PrimaryContextActive);
        }
        st.flags = flags;
        Ok(())
    }

    pub fn primary_ctx_get_state(&self, dev: i32) -> Result<PrimaryState> {
        let ctx = self.primary(dev)?;
        let st = lock(&ctx.st);
        Ok(PrimaryState { flags: st.flags, active: st.active })
    }

    /// Destroys everything a context owns: waits for its work, then frees
    /// streams, events, modules, memory and context-local storage.
    pub(crate) fn teardown(&self, ctx: &Arc<Context>) {
        let _ = ctx.synchronize();
        let h = ctx.handle;
        self.streams.remove_where(|s| s.ctx_handle == h);
        self.events.remove_where(|e| e.ctx_handle == h);
        self.unload_modules_of(h);
        self.free_memory_of(h);
        let cls: Vec<ClsEntry> = {
            let mut st = lock(&ctx.st);
            st.streams.clear();
            st.limits = Limits::default();
            st.cache_config = 0;
            st.shared_config = 0;
            st.generation += 1;
            let peers: Vec<usize> = st.peers.drain().map(|(_, device)| device).collect();
            drop(st);
            for device in peers {
                // A failure is the backend's to log; the context goes anyway.
                let _ = self.peer_links.unlink(self.backend().as_ref(), ctx.device, device);
            }
            let mut st = lock(&ctx.st);
            st.cls.drain().map(|(_, v)| v).collect()
        };
        for e in cls {
            if let Some(d) = e.dtor {
                d();
            }
        }
        *lock(&ctx.sticky) = None;
    }

    // ---- context-local storage (the CLS export table) ----

    fn cls_ctx(&self, ctx: u64) -> Result<Arc<Context>> {
        if ctx == 0 {
            self.check_init()?;
            let h = with_stack(self.id, |s| s.last().copied()).ok_or(Error::InvalidContext)?;
            self.contexts.get(h).ok_or(Error::InvalidContext)
        } else {
            self.ctx_by_handle(ctx)
        }
    }

    pub fn cls_insert(&self, ctx: u64, key: usize, value: usize, dtor: Option<ClsDtor>) -> Result<()> {
        let ctx = self.cls_ctx(ctx)?;
        let old = lock(&ctx.st).cls.insert(key, ClsEntry { value, dtor });
        drop(old);
        Ok(())
    }

    pub fn cls_remove(&self, ctx: u64, key: usize) -> Result<()> {
        let ctx = self.cls_ctx(ctx)?;
        let old = lock(&ctx.st).cls.remove(&key);
        old.map(|_| ()).ok_or_else(|| Error::handle("no such context-local storage key"))
    }

    pub fn cls_get(&self, ctx: u64, key: usize) -> Result<usize> {
        let ctx = self.cls_ctx(ctx)?;
        let st = lock(&ctx.st);
        st.cls.get(&key).map(|e| e.value).ok_or_else(|| Error::handle("no such context-local storage key"))
    }

    // ---- per-thread default streams ----

    /// This thread's per-thread default stream in `ctx`.
    pub(crate) fn per_thread_stream(&self, ctx: &Arc<Context>) -> Result<Arc<Stream>> {
        let generation = lock(&ctx.st).generation;
        let key = (self.id, ctx.handle, generation);
        if let Some(s) = PER_THREAD.with(|m| m.borrow().get(&key).cloned()) {
            return Ok(s);
        }
        let queue = self.new_queue(ctx.device, 0)?;
        let s = Arc::new(Stream::new(new_handle(HandleKind::Stream), ctx, StreamKind::PerThread, 0, 0, queue));
        lock(&ctx.st).streams.push(Arc::downgrade(&s));
        PER_THREAD.with(|m| m.borrow_mut().insert(key, s.clone()));
        Ok(s)
    }
}
