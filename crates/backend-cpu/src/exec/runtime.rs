//! The runtime functions compiled kernels call (`cpu_abi::runtime`).
//!
//! `ctx.runtime` points to the runner's [`BlockRt`]. On the scheduled path
//! a call that involves other threads records what the thread waits for in
//! its [`Slot`] and suspends the thread's coroutine; the block scheduler
//! resolves the wait, stores the result in the slot and resumes it. Calls
//! that end a thread or the launch suspend and are never resumed (the
//! coroutine is abandoned without unwinding), so these functions hold
//! nothing that needs dropping across a suspension.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use compiler::cpu_abi::BlockCtx;
use corosensei::Yielder;

use super::job::Job;
use super::warp::{self, LaneOp, WarpKind};
use super::LaunchError;

/// Where device output goes.
pub trait OutputSink: Send + Sync {
    /// One `printf` call's output (written as a unit).
    fn stdout(&self, bytes: &[u8]);
    /// An assertion message.
    fn stderr(&self, bytes: &[u8]);
    /// End of a launch that printed.
    fn flush(&self) {}
}

/// The host program's C `stdout`/`stderr`, so that device output
/// interleaves with the program's own `printf` output as with CUDA.
pub(crate) struct CStdio;

extern "C" {
    static mut stdout: *mut libc::FILE;
    static mut stderr: *mut libc::FILE;
}

impl OutputSink for CStdio {
    fn stdout(&self, bytes: &[u8]) {
        // SAFETY: glibc's `stdout` is a valid stream for the life of the
        // process; fwrite locks it, so each call's output stays whole.
        unsafe { libc::fwrite(bytes.as_ptr().cast(), 1, bytes.len(), std::ptr::addr_of!(stdout).read()) };
    }

    fn stderr(&self, bytes: &[u8]) {
        // SAFETY: as above.
        unsafe { libc::fwrite(bytes.as_ptr().cast(), 1, bytes.len(), std::ptr::addr_of!(stderr).read()) };
    }

    fn flush(&self) {
        // SAFETY: as above.
        unsafe { libc::fflush(std::ptr::addr_of!(stdout).read()) };
    }
}

/// What a suspended thread waits for (scheduled path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    None,
    Yield,
    /// `wait` is false for `bar.arrive`.
    Barrier {
        id: u32,
        count: u32,
        site: u32,
        red: Option<(u32, bool)>,
        wait: bool,
    },
    Warp {
        kind: WarpKind,
        site: u32,
        op: LaneOp,
    },
    Exit,
    /// The launch fails with the error stored in `BlockRt::error`.
    Fail,
}

/// One CUDA thread's mailbox (scheduled path).
pub(crate) struct Slot {
    pub yielder: Cell<*const Yielder<(), ()>>,
    pub wait: Cell<Wait>,
    pub result: Cell<u64>,
    /// Usable stack range `[low, high)`, for `is_local`.
    pub stack: Cell<(usize, usize)>,
    pub yields: Cell<u32>,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            yielder: Cell::new(std::ptr::null()),
            wait: Cell::new(Wait::None),
            result: Cell::new(0),
            stack: Cell::new((0, 0)),
            yields: Cell::new(0),
        }
    }
}

/// The runner's state for the block it is running; `BlockCtx::runtime`.
pub(crate) struct BlockRt {
    pub job: *const Job,
    pub scheduled: bool,
    pub ntid: [u32; 3],
    pub nthreads: u32,
    pub block: Cell<[u32; 3]>,
    /// Blocks claimed and not yet counted as finished (fast path).
    pub unfinished: Cell<u64>,
    /// The thread being resumed (scheduled path).
    pub current: Cell<u32>,
    pub slots: Cell<*const Slot>,
    pub fast_yielder: Cell<*const Yielder<(), ()>>,
    pub fast_stack: Cell<(usize, usize)>,
    pub fast_yields: Cell<u32>,
    pub error: Cell<Option<LaunchError>>,
    /// Racecheck's shadow of the block's shared memory (made at the first
    /// shared access of a launch that runs racecheck).
    pub race: std::cell::RefCell<Option<Box<super::shadow::RaceState>>>,
}

impl BlockRt {
    pub(crate) fn new(job: &Job, scheduled: bool) -> BlockRt {
        BlockRt {
            job,
            scheduled,
            ntid: job.block,
            nthreads: job.units,
            block: Cell::new([0; 3]),
            unfinished: Cell::new(0),
            current: Cell::new(0),
            slots: Cell::new(std::ptr::null()),
            fast_yielder: Cell::new(std::ptr::null()),
            fast_stack: Cell::new((0, 0)),
            fast_yields: Cell::new(0),
            error: Cell::new(None),
            race: std::cell::RefCell::new(None),
        }
    }

    pub(crate) fn job(&self) -> &Job {
        // SAFETY: the job outlives every block run for it.
        unsafe { &*self.job }
    }

    pub(crate) fn slot(&self) -> &Slot {
        // SAFETY: on the scheduled path `slots` has `nthreads` entries and
        // `current` is the index of the running thread, set before resuming
        // it.
        unsafe { &*self.slots.get().add(self.current.get() as usize) }
    }

    pub(crate) fn thread_coords(&self, linear: u32) -> [u32; 3] {
        if self.job().lanes > 1 {
            // Warp mode: the function runs warp `linear` of the block.
            return [linear, 0, 0];
        }
        let [x, y, _] = self.ntid;
        [linear % x, (linear / x) % y, linear / (x * y)]
    }

    /// The linear index of the calling thread: the scheduler's record on
    /// the scheduled path (it cannot be wrong), the argument otherwise.
    pub(crate) fn thread_index(&self, thread: u32) -> u32 {
        if self.scheduled {
            self.current.get()
        } else {
            thread
        }
    }

    /// Suspends the calling thread with `wait`; returns the slot's result
    /// once resumed.
    fn park(&self, wait: Wait) -> u64 {
        let slot = self.slot();
        slot.wait.set(wait);
        // SAFETY: the yielder was stored by the thread's coroutine when it
        // started and lives as long as the coroutine, which is running this
        // code.
        unsafe { (*slot.yielder.get()).suspend(()) };
        slot.result.get()
    }

    /// Ends the calling thread (scheduled path) or block (fast path) for
    /// good. With `error`, the launch fails.
    pub(crate) fn end(&self, error: Option<LaunchError>) -> ! {
        let failing = error.is_some();
        if failing {
            self.error.set(error);
        }
        loop {
            if self.scheduled {
                let slot = self.slot();
                slot.wait.set(if failing { Wait::Fail } else { Wait::Exit });
                // SAFETY: as in `park`.
                unsafe { (*slot.yielder.get()).suspend(()) };
            } else {
                if !failing {
                    self.error.set(Some(LaunchError::Internal("`exit` called by a kernel compiled without the thread scheduler".into())));
                }
                // SAFETY: the fast-path yielder belongs to the coroutine
                // running this block.
                unsafe { (*self.fast_yielder.get()).suspend(()) };
            }
        }
    }

    /// Fast path: an operation that needs other threads. A block of one
    /// thread can do it alone; anything else means the compiler marked the
    /// kernel wrongly.
    fn fast_path_collective(&self, what: &str) {
        if self.nthreads != 1 {
            self.end(Some(LaunchError::Internal(format!("`{what}` called by a kernel compiled without the thread scheduler"))));
        }
    }

    fn warp_op(&self, kind: WarpKind, site: u32, op: LaneOp, what: &str) -> u64 {
        if self.scheduled {
            return self.park(Wait::Warp { kind, site, op });
        }
        self.fast_path_collective(what);
        let mut ops = [LaneOp::default(); 32];
        ops[0] = op;
        warp::compute(kind, 1, &ops)[0]
    }
}

/// The runner's state behind `ctx`, if `ctx` came from this executor.
///
/// # Safety
/// `ctx` must be null or the context passed to compiled code.
pub(crate) unsafe fn runtime<'a>(ctx: *mut BlockCtx) -> Option<&'a BlockRt> {
    if ctx.is_null() {
        return None;
    }
    // SAFETY: per the contract `ctx` is a live BlockCtx whose `runtime`
    // field we set to a BlockRt that outlives the block.
    unsafe { (*ctx).runtime.cast::<BlockRt>().as_ref() }
}

fn barrier_common(ctx: *mut BlockCtx, id: u32, count: u32, red: Option<(u32, bool)>, wait: bool, site: u32) -> u32 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return 0 };
    if id >= 16 {
        rt.end(Some(LaunchError::Internal(format!("barrier id {id} out of range"))));
    }
    if !rt.scheduled {
        rt.fast_path_collective("bar.sync");
        // popc, and, or over one thread are all its own predicate.
        return red.map_or(0, |(_, pred)| u32::from(pred));
    }
    rt.park(Wait::Barrier { id, count, site, red, wait }) as u32
}

/// `bar.sync`/`barrier.sync id, count`.
///
/// # Safety
/// Only for compiled kernel code running under this executor.
pub unsafe extern "C" fn __anycuda_barrier(ctx: *mut BlockCtx, _thread: u32, id: u32, count: u32, site: u32) {
    barrier_common(ctx, id, count, None, true, site);
}

/// `bar.arrive id, count`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_barrier_arrive(ctx: *mut BlockCtx, _thread: u32, id: u32, count: u32, site: u32) {
    barrier_common(ctx, id, count, None, false, site);
}

/// `bar.red.op id, count, pred`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_barrier_red(
    ctx: *mut BlockCtx,
    _thread: u32,
    id: u32,
    count: u32,
    op: u32,
    pred: u32,
    site: u32,
) -> u32 {
    barrier_common(ctx, id, count, Some((op, pred != 0)), true, site)
}

/// `bar.warp.sync mask`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_warp_sync(ctx: *mut BlockCtx, _thread: u32, mask: u32, site: u32) {
    // SAFETY: called from compiled code with its ctx.
    if let Some(rt) = unsafe { runtime(ctx) } {
        rt.warp_op(WarpKind::Sync, site, LaneOp { mask, ..LaneOp::default() }, "bar.warp.sync");
    }
}

/// `shfl.sync.mode`: the value in the low 32 bits, the predicate in bit 32.
///
/// # Safety
/// As for [`__anycuda_barrier`].
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __anycuda_shfl(
    ctx: *mut BlockCtx,
    _thread: u32,
    mode: u32,
    value: u32,
    b: u32,
    c: u32,
    mask: u32,
    site: u32,
) -> u64 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return u64::from(value) };
    rt.warp_op(WarpKind::Shfl, site, LaneOp { mode, value: u64::from(value), b, c, mask }, "shfl.sync")
}

/// `vote.sync.mode`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_vote(ctx: *mut BlockCtx, _thread: u32, mode: u32, pred: u32, mask: u32, site: u32) -> u32 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return 0 };
    let op = LaneOp { mode, value: u64::from(pred != 0), mask, ..LaneOp::default() };
    rt.warp_op(WarpKind::Vote, site, op, "vote.sync") as u32
}

/// `match.sync.mode`: the lane mask in the low 32 bits, for `all` the
/// predicate in bit 32.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_match(ctx: *mut BlockCtx, _thread: u32, mode: u32, value: u64, mask: u32, site: u32) -> u64 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return 0 };
    rt.warp_op(WarpKind::Match, site, LaneOp { mode, value, mask, ..LaneOp::default() }, "match.sync")
}

/// `redux.sync.op`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_redux(ctx: *mut BlockCtx, _thread: u32, op: u32, value: u32, mask: u32, site: u32) -> u32 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return value };
    let lane_op = LaneOp { mode: op, value: u64::from(value), mask, ..LaneOp::default() };
    rt.warp_op(WarpKind::Redux, site, lane_op, "redux.sync") as u32
}

/// `activemask`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_activemask(ctx: *mut BlockCtx, _thread: u32, site: u32) -> u32 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return 1 };
    rt.warp_op(WarpKind::ActiveMask, site, LaneOp::default(), "activemask") as u32
}

/// The largest fragment exchange a lane may hand over (the biggest
/// `mma` has 24 registers of 8 bytes).
const GATHER_MAX_BYTES: u32 = 1024;

/// Warp matrix instructions: every lane's `bytes` bytes at `src`, lane
/// after lane (`cpu_abi::runtime`).
///
/// # Safety
/// As for [`__anycuda_barrier`]; `src` points to `bytes` readable bytes.
pub unsafe extern "C" fn __anycuda_warp_gather(
    ctx: *mut BlockCtx,
    _thread: u32,
    src: *const u8,
    bytes: u32,
    _scratch: *mut u8,
    site: u32,
) -> *const u8 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return src };
    if bytes > GATHER_MAX_BYTES {
        rt.end(Some(LaunchError::Internal(format!("a warp exchange of {bytes} bytes per lane"))));
    }
    let op = LaneOp { value: src as u64, b: bytes, mask: u32::MAX, ..LaneOp::default() };
    if rt.scheduled {
        return rt.park(Wait::Warp { kind: WarpKind::Gather, site, op }) as usize as *const u8;
    }
    rt.fast_path_collective("a warp matrix instruction");
    // A block of one thread: its lane alone.
    thread_local! {
        static ALONE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut ops = [LaneOp::default(); 32];
    ops[0] = op;
    ALONE.with(|buf| {
        let mut buf = buf.borrow_mut();
        // SAFETY: lane 0's address is `src`, readable per the contract.
        unsafe { warp::gather(1, &ops, bytes as usize, &mut buf) };
        buf.as_ptr()
    })
}

/// `exit` (never returns).
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_exit(ctx: *mut BlockCtx, _thread: u32) {
    // SAFETY: called from compiled code with its ctx.
    if let Some(rt) = unsafe { runtime(ctx) } {
        rt.end(None);
    }
}

/// `trap` (never returns): the launch fails, and its error names `place`
/// (the function and PTX line the compiler wrote).
///
/// # Safety
/// As for [`__anycuda_barrier`]; `place` is a C string (or null).
pub unsafe extern "C" fn __anycuda_trap(ctx: *mut BlockCtx, thread: u32, place: *const c_char) {
    // SAFETY: called from compiled code with its ctx.
    if let Some(rt) = unsafe { runtime(ctx) } {
        let thread = rt.thread_coords(rt.thread_index(thread));
        // SAFETY: per the contract.
        let place = unsafe { c_text(place) };
        rt.end(Some(LaunchError::Trap { block: rt.block.get(), thread, place }));
    }
}

/// Reads a C string from kernel memory (a bad pointer faults, which ends
/// the launch like any kernel fault). Null reads as `(null)`.
///
/// # Safety
/// `ptr` is read as a NUL-terminated string.
pub(crate) unsafe fn c_text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return "(null)".into();
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

/// `__assertfail` (never returns): prints CUDA's message and fails the
/// launch.
///
/// # Safety
/// As for [`__anycuda_barrier`]; the strings are read from kernel memory.
pub unsafe extern "C" fn __anycuda_assertfail(
    ctx: *mut BlockCtx,
    thread: u32,
    message: *const c_char,
    file: *const c_char,
    line: u32,
    function: *const c_char,
    _char_size: u64,
) {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return };
    // Everything owned is dropped or moved into the error before the
    // thread ends (its stack is abandoned, not unwound).
    let error = {
        // SAFETY: the strings come from the kernel.
        let (message, file, function) = unsafe { (c_text(message), c_text(file), c_text(function)) };
        let block = rt.block.get();
        let thread = rt.thread_coords(rt.thread_index(thread));
        let text = format!(
            "{file}:{line}: {function}: block: [{},{},{}], thread: [{},{},{}] Assertion `{message}` failed.\n",
            block[0], block[1], block[2], thread[0], thread[1], thread[2]
        );
        rt.job().shared.output.stderr(text.as_bytes());
        LaunchError::Assert { block, thread, message }
    };
    rt.end(Some(error));
}

/// How many `yield` calls a thread makes before it actually switches: the
/// compiler may put them in every loop that might spin, and a spinning
/// thread loses nothing by running a few more iterations.
const YIELD_EVERY: u32 = 8;

/// Lets other threads run (spin loops).
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_yield(ctx: *mut BlockCtx, _thread: u32) {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return };
    if rt.scheduled {
        let slot = rt.slot();
        let count = slot.yields.get().wrapping_add(1);
        slot.yields.set(count);
        if count.is_multiple_of(YIELD_EVERY) {
            rt.park(Wait::Yield);
        }
    } else {
        fast_path_yield(rt);
    }
}

fn fast_path_yield(rt: &BlockRt) {
    let count = rt.fast_yields.get().wrapping_add(1);
    rt.fast_yields.set(count);
    if count.is_multiple_of(256) {
        let job = rt.job();
        job.yields.fetch_add(1, Ordering::Relaxed);
        if job.failed() {
            rt.end(Some(LaunchError::Internal("launch cancelled".into())));
        }
        std::thread::yield_now();
    }
}

/// Device `printf`: CUDA's `vprintf(format, args)`.
///
/// Returns the number of arguments consumed, which is what CUDA's device
/// printf returns (not the character count of C's printf); -1 for a null
/// format. `layout` (from the compiler, for a constant format; else null)
/// bounds the reads of `args` to the bytes the format was compiled for.
///
/// # Safety
/// As for [`__anycuda_barrier`]; `format` and `args` are read from kernel
/// memory; `layout` is null or the compiler's table.
pub unsafe extern "C" fn __anycuda_vprintf(
    ctx: *mut BlockCtx,
    _thread: u32,
    format: *const c_char,
    args: *const u8,
    layout: *const u8,
) -> i32 {
    if format.is_null() {
        return -1;
    }
    // SAFETY: the compiler's table starts with the buffer's size.
    let args_len = (!layout.is_null()).then(|| unsafe { layout.cast::<u32>().read_unaligned() } as usize);
    // SAFETY: the kernel passes a NUL-terminated format and its packed
    // argument buffer.
    let (text, consumed) = unsafe {
        let format = CStr::from_ptr(format).to_bytes();
        compiler::printf::format_packed(format, args, args_len)
    };
    // SAFETY: called from compiled code with its ctx.
    match unsafe { runtime(ctx) } {
        Some(rt) => {
            let job = rt.job();
            job.shared.output.stdout(&text);
            job.printed.store(true, Ordering::Relaxed);
        }
        None => CStdio.stdout(&text),
    }
    consumed
}

/// Device `malloc`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_malloc(ctx: *mut BlockCtx, size: u64) -> *mut c_void {
    // SAFETY: called from compiled code with its ctx.
    match unsafe { runtime(ctx) } {
        Some(rt) => {
            let block = rt.job().shared.heap.alloc(size);
            if !block.is_null() {
                crate::memcheck::track(block as u64, size, crate::memcheck::Kind::Heap);
            }
            block.cast()
        }
        None => std::ptr::null_mut(),
    }
}

/// Device `free`.
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_free(ctx: *mut BlockCtx, block: *mut c_void) {
    // SAFETY: called from compiled code with its ctx.
    if let Some(rt) = unsafe { runtime(ctx) } {
        crate::memcheck::untrack(block as u64);
        // The block's cached ranges may hold the freed block.
        // SAFETY: `ctx` is the block's live context.
        unsafe { (*ctx).memcheck = [[0; 2]; compiler::cpu_abi::MEMCHECK_SLOTS] };
        rt.job().shared.heap.free(block.cast());
    }
}

fn epoch() -> &'static (Instant, u64) {
    static EPOCH: OnceLock<(Instant, u64)> = OnceLock::new();
    EPOCH.get_or_init(|| {
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        (Instant::now(), unix)
    })
}

/// `%clock64`: the time-stamp counter where there is one (monotonic and
/// constant-rate on current x86 processors), nanoseconds otherwise.
///
/// # Safety
/// Any arguments.
pub unsafe extern "C" fn __anycuda_clock64(_ctx: *mut BlockCtx) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc is available on every x86_64 processor.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        epoch().0.elapsed().as_nanos() as u64
    }
}

/// `%globaltimer`: nanoseconds since the Unix epoch, never going backwards.
///
/// # Safety
/// Any arguments.
pub unsafe extern "C" fn __anycuda_globaltimer(_ctx: *mut BlockCtx) -> u64 {
    let (start, unix) = *epoch();
    unix.wrapping_add(start.elapsed().as_nanos() as u64)
}

/// `nanosleep.u32 t`: on the scheduled path other threads of the block run
/// meanwhile (sleeps usually sit in spin-wait loops).
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_nanosleep(ctx: *mut BlockCtx, ns: u32) {
    // SAFETY: called from compiled code with its ctx.
    let rt = unsafe { runtime(ctx) };
    if let Some(rt) = rt.filter(|rt| rt.scheduled) {
        rt.park(Wait::Yield);
        return;
    }
    if let Some(rt) = rt {
        fast_path_yield(rt);
    }
    // PTX allows sleeping anywhere in [0, 2t]; t is at most 1 ms.
    let ns = ns.min(1_000_000);
    if ns >= 20_000 {
        std::thread::sleep(Duration::from_nanos(u64::from(ns)));
    } else {
        std::hint::spin_loop();
    }
}

/// Whether `address` is in the calling thread's local memory (its stack).
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub unsafe extern "C" fn __anycuda_is_local(ctx: *mut BlockCtx, _thread: u32, address: u64) -> u32 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return 0 };
    let (low, high) = if rt.scheduled { rt.slot().stack.get() } else { rt.fast_stack.get() };
    u32::from(address >= low as u64 && address < high as u64)
}

/// Ends the launch with an illegal memory access at `address` (a runtime
/// function that found a bad address or handle).
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub(crate) unsafe fn illegal_address(ctx: *mut BlockCtx, address: u64) {
    // SAFETY: called from a runtime function with the kernel's ctx.
    if let Some(rt) = unsafe { runtime(ctx) } {
        rt.end(Some(LaunchError::IllegalAddress { address }));
    }
}

/// Ends the launch because the kernel asked for something this engine does
/// not do (`what` says what).
///
/// # Safety
/// As for [`__anycuda_barrier`].
pub(crate) unsafe fn unsupported(ctx: *mut BlockCtx, what: String) {
    // SAFETY: called from a runtime function with the kernel's ctx.
    if let Some(rt) = unsafe { runtime(ctx) } {
        rt.end(Some(LaunchError::Unsupported(what)));
    }
}

/// Checked mode: an access the compiled code's inline test could not prove
/// good (see `compiler/src/memcheck.rs`). A good one refills the caller's
/// cache with the range it lies in; a bad one is reported on the program's
/// stderr (as compute-sanitizer reports) and ends the launch with
/// `CUDA_ERROR_ILLEGAL_ADDRESS`, or `CUDA_ERROR_MISALIGNED_ADDRESS` for an
/// address that is not a multiple of the access size.
///
/// # Safety
/// As for [`__anycuda_barrier`]; `cache` points to two u64, `place` to a
/// NUL-terminated string.
pub unsafe extern "C" fn __anycuda_memcheck(
    ctx: *mut BlockCtx,
    thread: u32,
    address: u64,
    access: u32,
    cache: *mut u8,
    place: *const c_char,
) {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return };
    // SAFETY: per the contract.
    unsafe { memcheck_one(rt, ctx, rt.thread_index(thread), address, access, cache, place, (0, 0)) };
}

/// [`__anycuda_memcheck`] for the lanes of a warp (warp mode): each lane of
/// `mask` accessed `addresses[lane]`; `first` is the warp's first thread
/// and `frame` its frame, where its local memory lies.
///
/// # Safety
/// As for [`__anycuda_memcheck`]; `addresses` points to 32 u64.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __anycuda_memcheck_warp(
    ctx: *mut BlockCtx,
    first: u32,
    addresses: *const u8,
    mask: u32,
    access: u32,
    cache: *mut u8,
    place: *const c_char,
    frame: *const u8,
) {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return };
    let frame = (frame as u64, u64::from(rt.job().frame_bytes));
    for lane in 0..32u32 {
        if mask & (1 << lane) == 0 {
            continue;
        }
        // SAFETY: per the contract, 32 addresses.
        let address = unsafe { addresses.cast::<u64>().add(lane as usize).read_unaligned() };
        // SAFETY: per the contract.
        unsafe { memcheck_one(rt, ctx, first + lane, address, access, cache, place, frame) };
    }
}

/// Checks one thread's access; reports it and ends the launch when bad.
/// `frame` is a warp's frame (holding its local memory), or empty.
///
/// # Safety
/// As for [`__anycuda_memcheck`].
#[allow(clippy::too_many_arguments)]
unsafe fn memcheck_one(
    rt: &BlockRt,
    ctx: *mut BlockCtx,
    linear: u32,
    address: u64,
    access: u32,
    cache: *mut u8,
    place: *const c_char,
    frame: (u64, u64),
) {
    use compiler::cpu_abi::memcheck as mc;
    let size = u64::from(access & mc::SIZE_MASK);
    let space = (access >> mc::SPACE_SHIFT) & 0xf;
    // SAFETY: `ctx` is the block's live context.
    let (shared_base, shared_bytes) = unsafe { ((*ctx).shared as u64, u64::from((*ctx).shared_bytes)) };
    let (low, high) = if rt.scheduled { rt.slot().stack.get() } else { rt.fast_stack.get() };
    let shared = (shared_base, shared_bytes);
    let stack = (low as u64, (high as u64).saturating_sub(low as u64));
    let holds = |(start, len): (u64, u64)| address >= start && address.checked_add(size).is_some_and(|end| end <= start + len);
    let local = if holds(frame) { Some(frame) } else { holds(stack).then_some(stack) };
    let found = match space {
        mc::SHARED => holds(shared).then_some(shared),
        mc::LOCAL => local,
        mc::GLOBAL | mc::CONST => crate::memcheck::containing(address, size).map(|r| (r.start, r.len)),
        _ => {
            if holds(shared) {
                Some(shared)
            } else if local.is_some() {
                local
            } else {
                crate::memcheck::containing(address, size).map(|r| (r.start, r.len))
            }
        }
    };
    let misaligned = size > 1 && size.is_power_of_two() && !address.is_multiple_of(size);
    if let (Some((start, len)), false) = (found, misaligned) {
        // The generic cache is the block's, shared by its threads: a
        // thread's local memory is not cached there, so that another
        // thread's access to it is still looked at.
        if space != mc::GENERIC || found != local {
            // SAFETY: per the contract, `cache` is the caller's two u64.
            unsafe {
                cache.cast::<u64>().write_unaligned(start);
                cache.cast::<u64>().add(1).write_unaligned(len);
            }
        }
        return;
    }
    let block = rt.block.get();
    let [x, y, _] = rt.ntid;
    let thread = [linear % x.max(1), (linear / x.max(1)) % y.max(1), linear / (x.max(1) * y.max(1))];
    // SAFETY: `place` is a constant string of the compiled code.
    let place = unsafe { c_text(place) };
    let what = match space {
        mc::SHARED => "__shared__",
        mc::LOCAL => "__local__",
        mc::GLOBAL => "__global__",
        mc::CONST => "__constant__",
        _ => "generic",
    };
    let dir = match access & (mc::READ | mc::WRITE) {
        x if x == mc::READ | mc::WRITE => "atomic",
        mc::WRITE => "write",
        _ => "read",
    };
    let why = if misaligned && found.is_some() {
        format!("address {address:#x} is misaligned (not a multiple of {size})")
    } else {
        describe_bad_address(address, size, space, shared, stack)
    };
    let report = format!(
        "========= anycuda memcheck: invalid {what} {dir} of size {size} bytes\n\
         =========     at kernel {} in {place}\n\
         =========     by thread ({},{},{}) in block ({},{},{})\n\
         =========     {why}\n",
        rt.job().kernel_name,
        thread[0],
        thread[1],
        thread[2],
        block[0],
        block[1],
        block[2],
    );
    rt.job().shared.output.stderr(report.as_bytes());
    let report = report.lines().map(|l| l.trim_start_matches('=').trim()).collect::<Vec<_>>().join("; ");
    rt.end(Some(LaunchError::Memcheck { address, misaligned: misaligned && found.is_some(), report }));
}

/// Where a bad address lies, for a memcheck report.
fn describe_bad_address(address: u64, size: u64, space: u32, shared: (u64, u64), local: (u64, u64)) -> String {
    use compiler::cpu_abi::memcheck as mc;
    let end = address.saturating_add(size);
    if space == mc::SHARED {
        let offset = address.wrapping_sub(shared.0) as i64;
        return format!("shared address {offset:#x} (offset {offset}) is out of bounds: the block has {} bytes of shared memory", shared.1);
    }
    if space == mc::GENERIC && address >= shared.0 && address - shared.0 < shared.1 + 4096 {
        let offset = address - shared.0;
        return format!(
            "generic address {address:#x} is shared memory offset {offset}, out of bounds: the block has {} bytes of shared memory",
            shared.1
        );
    }
    if space == mc::LOCAL {
        return format!("address {address:#x} is outside the thread's local memory [{:#x}, {:#x})", local.0, local.0 + local.1);
    }
    if address < 4096 {
        return format!("address {address:#x} is a null pointer plus {address}: no allocation holds it");
    }
    if let Some(r) = crate::memcheck::freed(address) {
        if crate::memcheck::containing(address, 1).is_none() {
            return format!(
                "address {address:#x} is {} bytes inside a {}-byte {} at {:#x} that was freed",
                address - r.start,
                r.len,
                r.kind.describe(),
                r.start
            );
        }
    }
    let (below, above) = crate::memcheck::neighbours(address);
    match (below, above) {
        (Some(b), _) if address < b.end() => format!(
            "address {address:#x} is {} bytes inside a {}-byte {} at {:#x}, but the access ends {} bytes past its end",
            address - b.start,
            b.len,
            b.kind.describe(),
            b.start,
            end - b.end()
        ),
        (Some(b), _) if address - b.end() < 1 << 20 => format!(
            "address {address:#x} is {} bytes past the end of a {}-byte {} at {:#x}",
            address - b.end(),
            b.len,
            b.kind.describe(),
            b.start
        ),
        (_, Some(a)) if a.start - address < 1 << 20 => {
            format!("address {address:#x} is {} bytes before a {}-byte {} at {:#x}", a.start - address, a.len, a.kind.describe(), a.start)
        }
        _ => format!("address {address:#x} is out of bounds: no allocation holds it"),
    }
}

/// Addresses of the runtime functions, by `cpu_abi` name.
pub(crate) fn symbols() -> [(&'static str, usize); 35] {
    use compiler::cpu_abi::{runtime, runtime_types};
    // Each definition is cast to the table's type for it: a definition whose
    // signature differs from the table does not compile.
    [
        (runtime::BARRIER.name, __anycuda_barrier as runtime_types::BARRIER as usize),
        (runtime::BARRIER_ARRIVE.name, __anycuda_barrier_arrive as runtime_types::BARRIER_ARRIVE as usize),
        (runtime::BARRIER_RED.name, __anycuda_barrier_red as runtime_types::BARRIER_RED as usize),
        (runtime::WARP_SYNC.name, __anycuda_warp_sync as runtime_types::WARP_SYNC as usize),
        (runtime::SHFL.name, __anycuda_shfl as runtime_types::SHFL as usize),
        (runtime::VOTE.name, __anycuda_vote as runtime_types::VOTE as usize),
        (runtime::MATCH.name, __anycuda_match as runtime_types::MATCH as usize),
        (runtime::REDUX.name, __anycuda_redux as runtime_types::REDUX as usize),
        (runtime::ACTIVEMASK.name, __anycuda_activemask as runtime_types::ACTIVEMASK as usize),
        (runtime::WARP_GATHER.name, __anycuda_warp_gather as runtime_types::WARP_GATHER as usize),
        (runtime::EXIT.name, __anycuda_exit as runtime_types::EXIT as usize),
        (runtime::TRAP.name, __anycuda_trap as runtime_types::TRAP as usize),
        (runtime::ASSERTFAIL.name, __anycuda_assertfail as runtime_types::ASSERTFAIL as usize),
        (runtime::YIELD.name, __anycuda_yield as runtime_types::YIELD as usize),
        (runtime::VPRINTF.name, __anycuda_vprintf as runtime_types::VPRINTF as usize),
        (runtime::MALLOC.name, __anycuda_malloc as runtime_types::MALLOC as usize),
        (runtime::FREE.name, __anycuda_free as runtime_types::FREE as usize),
        (runtime::CLOCK64.name, __anycuda_clock64 as runtime_types::CLOCK64 as usize),
        (runtime::GLOBALTIMER.name, __anycuda_globaltimer as runtime_types::GLOBALTIMER as usize),
        (runtime::NANOSLEEP.name, __anycuda_nanosleep as runtime_types::NANOSLEEP as usize),
        (runtime::IS_LOCAL.name, __anycuda_is_local as runtime_types::IS_LOCAL as usize),
        (runtime::TEX.name, super::texture::__anycuda_tex as runtime_types::TEX as usize),
        (runtime::TEX_MIP.name, super::texture::__anycuda_tex_mip as runtime_types::TEX_MIP as usize),
        (runtime::SULD.name, super::texture::__anycuda_suld as runtime_types::SULD as usize),
        (runtime::SUST.name, super::texture::__anycuda_sust as runtime_types::SUST as usize),
        (runtime::ISTYPEP.name, super::texture::__anycuda_istypep as runtime_types::ISTYPEP as usize),
        (runtime::SURED.name, super::texture::__anycuda_sured as runtime_types::SURED as usize),
        (runtime::TXQ.name, super::texture::__anycuda_txq as runtime_types::TXQ as usize),
        (runtime::TXQ_LEVEL.name, super::texture::__anycuda_txq_level as runtime_types::TXQ_LEVEL as usize),
        (runtime::MEMCHECK.name, __anycuda_memcheck as runtime_types::MEMCHECK as usize),
        (runtime::MEMCHECK_WARP.name, __anycuda_memcheck_warp as runtime_types::MEMCHECK_WARP as usize),
        (runtime::SHADOW.name, super::shadow::__anycuda_shadow as runtime_types::SHADOW as usize),
        (runtime::SHADOW_WARP.name, super::shadow::__anycuda_shadow_warp as runtime_types::SHADOW_WARP as usize),
        (runtime::RACE_SYNC.name, super::shadow::__anycuda_race_sync as runtime_types::RACE_SYNC as usize),
        (runtime::DEVICE_RUNTIME.name, super::devrt::__anycuda_devrt as runtime_types::DEVICE_RUNTIME as usize),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_abi_symbol_is_defined() {
        let ours: Vec<&str> = super::symbols().iter().map(|(name, _)| *name).collect();
        let abi: Vec<&str> = compiler::cpu_abi::runtime::ALL.iter().map(|f| f.name).collect();
        for name in &abi {
            assert!(ours.contains(name), "{name} is not implemented");
        }
        assert_eq!(ours.len(), abi.len(), "runtime symbols not in the ABI: {ours:?}");
    }
}
