//! Per-runner resources, kept between launches: coroutine stacks, the
//! shared-memory window and the scheduler's bookkeeping.

use std::cell::RefCell;

use corosensei::stack::{Stack, StackPointer};

use super::fault::{page_size, GUARD_BYTES};
use super::job::AlignedBuf;
use super::sched::SchedState;

/// Stacks kept for reuse per runner beyond one block's worth.
const MAX_POOLED_STACKS: usize = 1024;

/// A coroutine stack: `size` usable bytes above a 64 KiB inaccessible guard
/// region, reserved as virtual memory (pages are committed when touched).
/// The large guard catches frames that skip past a single guard page.
pub(crate) struct GuardedStack {
    mapping: usize,
    len: usize,
    /// Bytes left unused at the top. Stacks are mapped at multiples of
    /// their (large, power-of-two-ish) size, so without an offset the hot
    /// top of every stack falls into the same cache sets and thousands of
    /// thread switches thrash them.
    color: usize,
}

/// Distinct top offsets for 1024 consecutive stacks: one page plus one
/// cache line apart, modulo 64 KiB.
const COLOR_STEP: usize = 4096 + 64;
const COLOR_SPAN: usize = 64 << 10;

impl GuardedStack {
    pub(crate) fn new(size: usize) -> std::io::Result<GuardedStack> {
        let page = page_size();
        let size = size.max(16 << 10).div_ceil(page) * page + COLOR_SPAN;
        let len = size + GUARD_BYTES.div_ceil(page) * page;
        static NEXT_COLOR: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let color = NEXT_COLOR.fetch_add(1, std::sync::atomic::Ordering::Relaxed).wrapping_mul(COLOR_STEP) % COLOR_SPAN;
        // SAFETY: a fresh private anonymous mapping; only its upper `size`
        // bytes are made accessible.
        unsafe {
            let mapping = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if mapping == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let stack = GuardedStack { mapping: mapping as usize, len, color };
            if libc::mprotect(mapping.cast::<u8>().add(len - size).cast(), size, libc::PROT_READ | libc::PROT_WRITE) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// Usable bytes (at least what was asked for).
    pub(crate) fn size(&self) -> usize {
        self.len - GUARD_BYTES.div_ceil(page_size()) * page_size() - COLOR_SPAN
    }

    /// Lowest address of the mapping (the guard's bottom).
    pub(crate) fn lowest(&self) -> usize {
        self.mapping
    }

    /// Lowest usable address.
    pub(crate) fn usable_low(&self) -> usize {
        self.mapping + GUARD_BYTES.div_ceil(page_size()) * page_size()
    }

    /// Where the stack starts (grows down from).
    pub(crate) fn top(&self) -> usize {
        self.mapping + self.len - self.color
    }
}

impl Drop for GuardedStack {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and no coroutine runs on it any more
        // (stacks are only dropped once their coroutine finished or was
        // reset).
        unsafe { libc::munmap(self.mapping as *mut libc::c_void, self.len) };
    }
}

// SAFETY: `base` is page aligned (so 16-byte aligned), `limit` includes the
// guard region below the usable memory, which is at least 16 KiB.
unsafe impl Stack for GuardedStack {
    fn base(&self) -> StackPointer {
        // The color is a multiple of 64, so the base stays 16-byte aligned.
        StackPointer::new(self.top()).unwrap_or(StackPointer::MIN)
    }

    fn limit(&self) -> StackPointer {
        StackPointer::new(self.mapping).unwrap_or(StackPointer::MIN)
    }
}

#[derive(Default)]
pub(crate) struct Local {
    fast_stack: Option<GuardedStack>,
    thread_stacks: Vec<GuardedStack>,
    shared: Option<AlignedBuf>,
    pub sched: Option<Box<SchedState>>,
    pub warps: Option<super::warps::Warps>,
    /// The runner's table of privatised atomic adds (see `privatise.rs`
    /// in the compiler), allocated on first use.
    private_adds: Option<Box<compiler::cpu_abi::PrivateAdds>>,
}

impl Local {
    /// The table a launch that privatises its adds gives its blocks
    /// (`BlockCtx::private_adds`), or null for one that does not.
    pub(crate) fn private_adds(&mut self, privatise: bool) -> *mut compiler::cpu_abi::PrivateAdds {
        if !privatise {
            return std::ptr::null_mut();
        }
        let table = self.private_adds.get_or_insert_with(Box::default);
        &mut **table
    }

    /// Drops the adds still pending in the runner's table: those of a
    /// block that was abandoned (a fault, a trap, a time limit), whose
    /// launch reports the failure; nothing writes memory after it.
    pub(crate) fn discard_private_adds(&mut self) {
        if let Some(t) = &mut self.private_adds {
            t.discard();
        }
    }

    /// The shared-memory window, at least `bytes` long, zeroed.
    pub(crate) fn shared_window(&mut self, bytes: usize) -> Option<*mut u8> {
        if self.shared.as_ref().is_none_or(|buf| buf.len() < bytes) {
            self.shared = None;
            self.shared = Some(AlignedBuf::zeroed(bytes.max(4096), 256)?);
        }
        self.shared.as_ref().map(|buf| buf.ptr())
    }

    pub(crate) fn take_fast_stack(&mut self, size: usize) -> std::io::Result<GuardedStack> {
        match self.fast_stack.take() {
            Some(stack) if stack.size() >= size => Ok(stack),
            _ => GuardedStack::new(size),
        }
    }

    pub(crate) fn put_fast_stack(&mut self, stack: GuardedStack) {
        self.fast_stack = Some(stack);
    }

    pub(crate) fn take_thread_stack(&mut self, size: usize) -> std::io::Result<GuardedStack> {
        while let Some(stack) = self.thread_stacks.pop() {
            if stack.size() == size.max(16 << 10).div_ceil(page_size()) * page_size() {
                return Ok(stack);
            }
            // The configured size changed: drop stacks of the old size.
        }
        GuardedStack::new(size)
    }

    pub(crate) fn put_thread_stack(&mut self, stack: GuardedStack) {
        if self.thread_stacks.len() < MAX_POOLED_STACKS {
            self.thread_stacks.push(stack);
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(Local::default());
}

/// Runs `f` with this thread's resources; `None` if they are in use
/// further up the stack (a launch from inside kernel code).
pub(crate) fn with_local<R>(f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    LOCAL.try_with(|local| local.try_borrow_mut().ok().map(|mut local| f(&mut local))).ok().flatten()
}

/// Makes a block's pending privatised adds on memory, once the block has
/// ended: before the launch can complete and before anything after it can
/// look.
///
/// # Safety
/// `ctx` is a live block context whose `private_adds` is null or the
/// runner's table.
pub(crate) unsafe fn flush_block_adds(ctx: *mut compiler::cpu_abi::BlockCtx) {
    // SAFETY: the caller's contract; the table's keys are valid for
    // atomics (`PrivateAdds::flush`).
    unsafe {
        let t = (*ctx).private_adds;
        if !t.is_null() && (*t).pending() {
            (*t).flush();
        }
    }
}
