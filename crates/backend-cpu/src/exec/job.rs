//! One launch in flight: what every runner needs to execute its blocks, and
//! the counters through which they claim and finish them.

use std::alloc::Layout;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use compiler::cpu_abi::{BlockCtx, BlockFn, ThreadFn};

use super::pool::Shared;
use super::{LaunchError, LaunchOptions, LoadedKernel};

/// CUDA's limit on threads per block; the scheduled path sizes its
/// per-thread state by it.
pub(crate) const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// A heap buffer with a chosen alignment (parameter buffers and shared
/// memory hold vectors that compiled code may load with aligned
/// instructions).
pub(crate) struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: plain owned memory; synchronisation of its contents is the
// kernel's business, as on a GPU.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Zeroed; at least one alignment unit so the pointer is always valid.
    pub(crate) fn zeroed(size: usize, align: usize) -> Option<AlignedBuf> {
        let layout = Layout::from_size_align(size.max(align), align).ok()?;
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(AlignedBuf { ptr, layout })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// Launches so far whose atomic adds were privatised (see
/// [`privatised_launches`]).
static PRIVATISED_LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// How many launches of this process gathered their add-only atomics in
/// the runners' private tables (`KernelInfo::privatise` held): a
/// diagnostic, for tests and benchmarks.
pub fn privatised_launches() -> u64 {
    PRIVATISED_LAUNCHES.load(Ordering::Relaxed)
}

pub(crate) struct Job {
    pub id: u64,
    /// The kernel's name, for reports.
    pub kernel_name: String,
    pub shared: Arc<Shared>,
    pub thread_fn: ThreadFn,
    pub block_fn: Option<BlockFn>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub nthreads: u32,
    /// What the scheduler runs per block: threads, or warps for kernels
    /// compiled in warp mode (`KernelInfo::lanes` > 1).
    pub units: u32,
    pub lanes: u32,
    /// Bytes of each warp's frame (warp mode).
    pub frame_bytes: u32,
    pub nblocks: u64,
    pub cooperative: bool,
    /// `KernelInfo::spin_waits`: a block may wait for another one.
    pub spin_waits: bool,
    params: AlignedBuf,
    pub shared_bytes: u32,
    pub dynamic_shared_offset: u32,
    pub dynamic_shared_bytes: u32,
    pub gridid: u64,
    pub envreg: [u32; 32],
    /// The kernel's add-only atomics gather in the runners' private
    /// tables for this launch (`KernelInfo::privatise` holds for it).
    pub privatise: bool,
    _workspace: Option<AlignedBuf>,
    next: AtomicU64,
    finished: AtomicU64,
    failed: AtomicBool,
    error: Mutex<Option<LaunchError>>,
    done_lock: Mutex<()>,
    done: Condvar,
    /// Yields by spinning threads; the monitor adds workers sooner when
    /// blocks are visibly waiting.
    pub yields: AtomicU64,
    pub printed: AtomicBool,
    /// The launch's time limit and when it runs out (`timeout.rs`).
    pub timeout: Option<Duration>,
    pub deadline: Option<Instant>,
    /// Set by the watchdog once the deadline passed: runners interrupted in
    /// `code` abandon their block.
    pub cancel: AtomicBool,
    /// The kernel module's machine code (start, end).
    pub code: Arc<[(usize, usize)]>,
    /// Threads running blocks of a launch with a time limit.
    runners: Mutex<Vec<libc::pthread_t>>,
    /// Device-side launches, streams and events (`devrt.rs`).
    pub devrt: super::devrt::GridRt,
}

/// A thread counted as running blocks of a job until dropped.
pub(crate) struct Runner<'a> {
    job: &'a Job,
    thread: libc::pthread_t,
}

impl Drop for Runner<'_> {
    fn drop(&mut self) {
        let mut runners = self.job.runners.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = runners.iter().position(|&t| t == self.thread) {
            runners.swap_remove(i);
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if crate::memcheck::enabled() {
            crate::memcheck::untrack(self.params.ptr() as u64);
            if let Some(w) = &self._workspace {
                crate::memcheck::untrack(w.ptr() as u64);
            }
        }
    }
}

impl Job {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        shared: &Arc<Shared>,
        kernel: &LoadedKernel,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        params: &[u8],
        options: &LaunchOptions,
        devrt: super::devrt::GridRt,
    ) -> Result<Arc<Job>, LaunchError> {
        let info = &kernel.info;
        if grid.contains(&0) || block.contains(&0) {
            return Err(LaunchError::InvalidConfiguration(format!("grid {grid:?} or block {block:?} has a zero dimension")));
        }
        let nthreads = block.iter().try_fold(1u32, |acc, &d| acc.checked_mul(d)).filter(|&n| n <= MAX_THREADS_PER_BLOCK);
        let Some(nthreads) = nthreads else {
            return Err(LaunchError::InvalidConfiguration(format!("block {block:?} has more than {MAX_THREADS_PER_BLOCK} threads")));
        };
        let nblocks = grid.iter().map(|&d| u64::from(d)).product::<u64>();
        let co_resident = shared.config.max_workers.max(shared.nsmid as usize) as u64 + 1;
        if options.cooperative && nblocks > co_resident {
            return Err(LaunchError::InvalidConfiguration(format!(
                "cooperative launch of {nblocks} blocks; at most {co_resident} can run at once"
            )));
        }
        if (params.len() as u64) < u64::from(info.param_bytes) {
            return Err(LaunchError::InvalidConfiguration(format!(
                "kernel {} takes {} bytes of parameters, {} given",
                info.name,
                info.param_bytes,
                params.len()
            )));
        }
        let shared_bytes = if dynamic_shared == 0 {
            Some(info.static_shared_bytes)
        } else {
            info.dynamic_shared_offset.checked_add(dynamic_shared).map(|end| end.max(info.static_shared_bytes))
        };
        let Some(shared_bytes) = shared_bytes else {
            return Err(LaunchError::InvalidConfiguration(format!("{dynamic_shared} bytes of dynamic shared memory")));
        };
        let param_buf = AlignedBuf::zeroed(params.len(), 64).ok_or_else(|| LaunchError::OutOfResources("parameter buffer".into()))?;
        // SAFETY: the buffer holds at least `params.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(params.as_ptr(), param_buf.ptr(), params.len()) };
        let mut envreg = [0u32; 32];
        let workspace = if options.cooperative {
            let buf = AlignedBuf::zeroed(compiler::cpu_abi::GRID_SYNC_WORKSPACE, 64)
                .ok_or_else(|| LaunchError::OutOfResources("grid sync workspace".into()))?;
            let address = buf.ptr() as u64;
            // Cooperative groups reads the grid workspace as
            // (envreg1 << 32) | envreg2.
            envreg[1] = (address >> 32) as u32;
            envreg[2] = address as u32;
            Some(buf)
        } else {
            None
        };
        if crate::memcheck::enabled() {
            // Kernels may read the parameter buffer through generic
            // addresses, and cooperative groups use the workspace.
            crate::memcheck::track(param_buf.ptr() as u64, params.len() as u64, crate::memcheck::Kind::LaunchData);
            if let Some(w) = &workspace {
                crate::memcheck::track(w.ptr() as u64, compiler::cpu_abi::GRID_SYNC_WORKSPACE as u64, crate::memcheck::Kind::LaunchData);
            }
        }
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let privatise = info.privatise.as_ref().is_some_and(|g| g.holds(params, grid, block));
        if info.privatise.is_some() {
            tracing::trace!(
                "kernel `{}`: {}",
                info.name,
                if privatise { "atomic adds privatised" } else { "atomic adds on memory (buffers may overlap)" }
            );
        }
        if privatise {
            PRIVATISED_LAUNCHES.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Arc::new(Job {
            id,
            kernel_name: kernel.info.name.clone(),
            shared: shared.clone(),
            thread_fn: kernel.thread,
            block_fn: if info.needs_scheduler { None } else { kernel.block },
            grid,
            block,
            nthreads,
            units: if info.lanes > 1 { nthreads.div_ceil(info.lanes) } else { nthreads },
            lanes: info.lanes.max(1),
            frame_bytes: info.frame_bytes,
            nblocks,
            cooperative: options.cooperative,
            spin_waits: info.spin_waits,
            params: param_buf,
            shared_bytes,
            dynamic_shared_offset: info.dynamic_shared_offset,
            dynamic_shared_bytes: dynamic_shared,
            gridid: id,
            envreg,
            privatise,
            _workspace: workspace,
            next: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            done_lock: Mutex::new(()),
            done: Condvar::new(),
            yields: AtomicU64::new(0),
            printed: AtomicBool::new(false),
            timeout: shared.config.launch_timeout,
            deadline: shared.config.launch_timeout.and_then(|t| Instant::now().checked_add(t)),
            cancel: AtomicBool::new(false),
            code: kernel.code.clone(),
            runners: Mutex::new(Vec::new()),
            devrt,
        }))
    }

    /// Counts the calling thread as running blocks of this job (for a
    /// launch with a time limit) until the guard is dropped.
    pub(crate) fn runner(&self) -> Runner<'_> {
        super::fault::unblock_interrupt();
        // SAFETY: pthread_self has no preconditions.
        let thread = unsafe { libc::pthread_self() };
        self.runners.lock().unwrap_or_else(|p| p.into_inner()).push(thread);
        Runner { job: self, thread }
    }

    /// Sends the interrupt signal to every thread running blocks of this
    /// job. The lock keeps each of them inside the job (so alive) meanwhile.
    pub(crate) fn interrupt_runners(&self) {
        let runners = self.runners.lock().unwrap_or_else(|p| p.into_inner());
        for &thread in runners.iter() {
            super::fault::interrupt(thread);
        }
    }

    pub(crate) fn params(&self) -> *const u8 {
        self.params.ptr()
    }

    /// The next block to run, in increasing linear order.
    pub(crate) fn claim(&self) -> Option<u64> {
        if self.next.load(Ordering::Relaxed) >= self.nblocks {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        (index < self.nblocks).then_some(index)
    }

    /// The next run of blocks to execute: about an eighth of each runner's
    /// share of what is left, at most 32 blocks, so that runners finish
    /// together while claims stay rare.
    pub(crate) fn claim_run(&self) -> Option<std::ops::Range<u64>> {
        let next = self.next.load(Ordering::Relaxed);
        if next >= self.nblocks {
            return None;
        }
        let runners = u64::from(self.shared.nsmid.max(1));
        // Once a block has spun (it waits for another block, which the
        // compiler should have sent to the scheduled path), one at a time:
        // a run must not hold back the block someone waits for.
        let len = if self.yields.load(Ordering::Relaxed) > 0 { 1 } else { ((self.nblocks - next) / (8 * runners)).clamp(1, 32) };
        let start = self.next.fetch_add(len, Ordering::Relaxed);
        (start < self.nblocks).then(|| start..(start + len).min(self.nblocks))
    }

    pub(crate) fn has_unclaimed(&self) -> bool {
        self.next.load(Ordering::Relaxed) < self.nblocks
    }

    pub(crate) fn finished_blocks(&self) -> u64 {
        self.finished.load(Ordering::Relaxed)
    }

    pub(crate) fn block_index(&self, linear: u64) -> [u32; 3] {
        let gx = u64::from(self.grid[0]);
        let gy = u64::from(self.grid[1]);
        [(linear % gx) as u32, ((linear / gx) % gy) as u32, (linear / (gx * gy)) as u32]
    }

    /// Marks claimed blocks as done (run, failed or skipped).
    pub(crate) fn finish_blocks(&self, count: u64) {
        if count == 0 {
            return;
        }
        // Release: the kernel's writes become visible to the launching
        // thread, which reads `finished` with Acquire.
        if self.finished.fetch_add(count, Ordering::AcqRel) + count >= self.nblocks {
            let _guard = self.done_lock.lock().unwrap_or_else(|p| p.into_inner());
            self.done.notify_all();
        }
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Records the launch's first error and stops handing out blocks; the
    /// blocks nobody claimed yet count as done.
    pub(crate) fn fail(&self, error: LaunchError) {
        {
            let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                tracing::debug!(job = self.id, "launch failed: {error}");
                *slot = Some(error);
            }
        }
        self.failed.store(true, Ordering::Relaxed);
        let before = self.next.swap(self.nblocks, Ordering::Relaxed);
        if before < self.nblocks {
            self.finish_blocks(self.nblocks - before);
        }
    }

    /// Blocks until every block has finished.
    pub(crate) fn wait(&self) {
        for _ in 0..200 {
            if self.finished.load(Ordering::Acquire) >= self.nblocks {
                return;
            }
            std::hint::spin_loop();
        }
        let mut guard = self.done_lock.lock().unwrap_or_else(|p| p.into_inner());
        while self.finished.load(Ordering::Acquire) < self.nblocks {
            guard = self.done.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub(crate) fn take_error(&self) -> Option<LaunchError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// A block context for this launch with everything but the block index.
    pub(crate) fn block_ctx(&self, smid: u32, shared: *mut u8, runtime: *mut std::ffi::c_void) -> BlockCtx {
        BlockCtx {
            ntid: self.block,
            nthreads: self.nthreads,
            ctaid: [0; 3],
            smid,
            nctaid: self.grid,
            nsmid: self.shared.nsmid,
            shared,
            shared_bytes: self.shared_bytes,
            dynamic_shared_offset: self.dynamic_shared_offset,
            dynamic_shared_bytes: self.dynamic_shared_bytes,
            exited: 0,
            gridid: self.gridid,
            envreg: self.envreg,
            runtime,
            chain_end: 0,
            frame_stride: 0,
            chain_first: 0,
            chain_last: 0,
            chain_wrap: 0,
            check_tools: crate::memcheck::tools(),
            memcheck: [[0; 2]; compiler::cpu_abi::MEMCHECK_SLOTS],
            private_adds: std::ptr::null_mut(),
            printf_records: std::ptr::null_mut(),
            heap: std::ptr::null_mut(),
            variables: std::ptr::null(),
        }
    }
}
