//! Executing kernel launches on the host's cores.
//!
//! A launch becomes a [`Job`]: blocks are claimed in increasing linear
//! index order from a shared atomic counter by the launching thread and by
//! the workers of a persistent pool (one per core). A block runs either
//!
//! * on the fast path, when the kernel's threads never wait for each other:
//!   the compiled `block` function runs the whole block inside one
//!   coroutine per worker (so a fault can abandon it), or
//! * on the scheduled path: one coroutine per CUDA thread, switched at
//!   barriers, warp collectives and yields by a per-block scheduler
//!   ([`sched`]), or
//! * on the warp path, for kernels compiled in warp mode whose warps wait
//!   for each other: warp functions that return at barriers and are called
//!   again to continue ([`warps`]).
//!
//! Blocks may wait for each other (spinning on flags, grid-wide sync); a
//! monitor thread adds workers when no block has finished for a while and
//! blocks remain unclaimed, and cooperative launches get a worker per
//! block from the start.
//!
//! A launch may have a time limit ([`ExecutorConfig::launch_timeout`]); a
//! watchdog ends launches that run past it ([`timeout`]).

mod devrt;
mod fast;
mod fault;
mod job;
mod local;
mod pool;
pub mod runtime;
mod sched;
mod shadow;
mod texture;
mod timeout;
mod warp;
mod warps;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use compiler::cpu_abi::{BlockFn, ThreadFn};
use compiler::KernelInfo;
use thiserror::Error;

use crate::heap::{DeviceHeap, DEFAULT_HEAP_LIMIT};
use crate::loader::LoadedModule;

pub use devrt::{KernelResolver, DEFAULT_PENDING_LAUNCHES, MAX_DEPTH};
pub use job::privatised_launches;
pub use runtime::OutputSink;

/// Why a launch failed. Every variant leaves the process and the executor
/// usable; the driver maps them to CUDA error codes.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LaunchError {
    #[error("invalid launch configuration: {0}")]
    InvalidConfiguration(String),
    #[error("illegal memory access at address {address:#x}")]
    IllegalAddress { address: u64 },
    #[error("misaligned memory access at address {address:#x}")]
    MisalignedAddress { address: u64 },
    #[error("illegal instruction at {address:#x}")]
    IllegalInstruction { address: u64 },
    #[error("stack overflow in block {block:?} (fault at {address:#x})")]
    StackOverflow { address: u64, block: [u32; 3] },
    #[error("trap in block {block:?}, thread {thread:?}, at {place}")]
    Trap { block: [u32; 3], thread: [u32; 3], place: String },
    #[error("assertion failed in block {block:?}, thread {thread:?}: {message}")]
    Assert { block: [u32; 3], thread: [u32; 3], message: String },
    #[error("deadlock in block {block:?}: {description}")]
    Deadlock { block: [u32; 3], description: String },
    #[error("out of resources: {0}")]
    OutOfResources(String),
    /// The launch ran longer than [`ExecutorConfig::launch_timeout`].
    #[error("the launch ran longer than its time limit of {limit:?} (ANYCUDA_LAUNCH_TIMEOUT)")]
    Timeout { limit: Duration },
    #[error("internal error: {0}")]
    Internal(String),
    /// The kernel asked for something this engine does not do (said in
    /// the message): the launch fails rather than guess.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Checked mode (`ANYCUDA_MEMCHECK`) found a bad access; `report` says
    /// which (kernel, block, thread, address, size, direction, PTX line).
    #[error("{report}")]
    Memcheck { address: u64, misaligned: bool, report: String },
}

/// A kernel ready to launch: its compiled functions and description.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    pub thread: ThreadFn,
    pub block: Option<BlockFn>,
    pub info: KernelInfo,
    /// Where the module's machine code lies (start, end): a launch that
    /// runs past its time limit is interrupted only there (see
    /// `timeout.rs`). Empty for kernels not compiled by the compiler, which
    /// can then only be stopped where they yield.
    pub code: Arc<[(usize, usize)]>,
}

impl LoadedKernel {
    /// Finds the kernel's functions in a loaded module.
    ///
    /// # Safety
    /// The module must have been compiled for the host by `compiler`, with
    /// `info` describing the kernel as the compiler reported it.
    pub unsafe fn from_module(module: &LoadedModule, info: KernelInfo) -> Option<LoadedKernel> {
        use compiler::cpu_abi::KernelSymbols;
        let thread = module.symbol(&KernelSymbols::thread(&info.name))?;
        let block = if info.needs_scheduler { None } else { module.symbol(&KernelSymbols::block(&info.name)) };
        // SAFETY: the caller guarantees these symbols are the kernel's
        // functions with the `cpu_abi` signatures.
        unsafe {
            Some(LoadedKernel {
                thread: std::mem::transmute::<usize, ThreadFn>(thread),
                block: block.map(|address| std::mem::transmute::<usize, BlockFn>(address)),
                info,
                code: module.code_ranges().into(),
            })
        }
    }
}

/// Per-launch choices.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    /// `cuLaunchCooperativeKernel`: every block runs concurrently, and the
    /// grid-sync workspace is passed in `%envreg1`/`%envreg2`.
    pub cooperative: bool,
    /// `cudaLimitDevRuntimePendingLaunchCount`: device-side launches that
    /// may wait to start at once (`None`: CUDA's default, 2048).
    pub pending_launch_limit: Option<u64>,
}

/// How an [`Executor`] runs kernels.
#[derive(Clone)]
pub struct ExecutorConfig {
    /// Threads that run a launch's blocks (`%nsmid`): the launching thread
    /// and `workers - 1` persistent pool threads; 0 means one per core.
    pub workers: usize,
    /// Upper bound on all worker threads, including those added so that
    /// blocks waiting for each other make progress.
    pub max_workers: usize,
    /// Stack of each CUDA thread on the scheduled path (virtual memory,
    /// committed as used).
    pub thread_stack_size: usize,
    /// Stack of a worker running whole blocks on the fast path.
    pub block_stack_size: usize,
    /// Device `malloc` heap limit.
    pub heap_limit: usize,
    /// Time without any finished block after which more workers are added
    /// while blocks wait (spin) for each other.
    pub stall_timeout: Duration,
    /// Where device `printf` and assertion messages go; C's `stdout` and
    /// `stderr` when `None`.
    pub output: Option<Arc<dyn OutputSink>>,
    /// A launch running longer than this fails with
    /// [`LaunchError::Timeout`]; `None` (the default): no limit, as on a GPU
    /// without a display watchdog. `ANYCUDA_LAUNCH_TIMEOUT` sets it for
    /// [`Executor::global`].
    pub launch_timeout: Option<Duration>,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            workers: 0,
            max_workers: 1024,
            thread_stack_size: 256 << 10,
            block_stack_size: 16 << 20,
            heap_limit: DEFAULT_HEAP_LIMIT,
            stall_timeout: Duration::from_millis(20),
            output: None,
            launch_timeout: None,
        }
    }
}

impl std::fmt::Debug for ExecutorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorConfig")
            .field("workers", &self.workers)
            .field("max_workers", &self.max_workers)
            .field("thread_stack_size", &self.thread_stack_size)
            .field("block_stack_size", &self.block_stack_size)
            .field("heap_limit", &self.heap_limit)
            .field("stall_timeout", &self.stall_timeout)
            .field("launch_timeout", &self.launch_timeout)
            .finish_non_exhaustive()
    }
}

/// Runs launches; owns the worker pool and the device heap.
pub struct Executor {
    shared: Arc<pool::Shared>,
}

impl Executor {
    pub fn new(config: ExecutorConfig) -> Executor {
        fault::install();
        if config.launch_timeout.is_some() {
            fault::install_interrupt();
        }
        Executor { shared: pool::Shared::new(config) }
    }

    /// The process-wide executor with the default configuration.
    pub fn global() -> &'static Executor {
        static GLOBAL: OnceLock<Executor> = OnceLock::new();
        GLOBAL.get_or_init(|| Executor::new(ExecutorConfig { launch_timeout: timeout::from_env(), ..ExecutorConfig::default() }))
    }

    /// The time limit of every launch, if any.
    pub fn launch_timeout(&self) -> Option<Duration> {
        self.shared.config.launch_timeout
    }

    /// `%nsmid`: the number of pool workers (the "multiprocessors").
    pub fn multiprocessors(&self) -> u32 {
        self.shared.nsmid
    }

    pub fn heap(&self) -> &DeviceHeap {
        &self.shared.heap
    }

    /// Stack size of each CUDA thread on the scheduled path
    /// (`cudaLimitStackSize`, though CUDA's default of 1 KiB is far too
    /// small for code compiled for the CPU).
    pub fn set_thread_stack_size(&self, bytes: usize) {
        self.shared.thread_stack_size.store(bytes.max(16 << 10), std::sync::atomic::Ordering::Relaxed);
    }

    pub fn thread_stack_size(&self) -> usize {
        self.shared.thread_stack_size.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs a launch to completion.
    ///
    /// # Safety
    /// `kernel` must hold compiled functions of a module that stays loaded
    /// during the call, and `params` must be a parameter buffer laid out as
    /// `kernel.info` says, whose pointers are valid for what the kernel does
    /// with them.
    pub unsafe fn launch(
        &self,
        kernel: &LoadedKernel,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        params: &[u8],
        options: &LaunchOptions,
    ) -> Result<(), LaunchError> {
        // SAFETY: forwarded contract.
        unsafe { self.launch_with(kernel, grid, block, dynamic_shared, params, options, None) }
    }

    /// [`Executor::launch`] for a kernel that may launch kernels of its
    /// module (dynamic parallelism, see `devrt.rs`): `resolver` finds them
    /// by address. Returns once the grid and every grid it launched, at
    /// every depth, has finished; the first failure among them is the
    /// launch's.
    ///
    /// # Safety
    /// As for [`Executor::launch`], for the module's kernels too.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch_with(
        &self,
        kernel: &LoadedKernel,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        params: &[u8],
        options: &LaunchOptions,
        resolver: Option<&dyn KernelResolver>,
    ) -> Result<(), LaunchError> {
        // SAFETY: forwarded contract.
        unsafe { self.launch_grid(kernel, grid, block, dynamic_shared, params, options, resolver, 0) }
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_grid(
        &self,
        kernel: &LoadedKernel,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        params: &[u8],
        options: &LaunchOptions,
        resolver: Option<&dyn KernelResolver>,
        depth: u32,
    ) -> Result<(), LaunchError> {
        let limit = options.pending_launch_limit.unwrap_or(DEFAULT_PENDING_LAUNCHES);
        // SAFETY: the resolver outlives this call, which runs the grid and
        // its children to completion.
        let devrt = unsafe { devrt::GridRt::new(resolver, depth, limit) };
        let job = job::Job::new(&self.shared, kernel, grid, block, dynamic_shared, params, options, devrt)?;
        let grid_job = job.clone();
        let r = pool::run_launch(&self.shared, job);
        let children = grid_job.devrt.take_children();
        drop(grid_job);
        let mut r = r;
        let child_options = LaunchOptions { cooperative: false, ..options.clone() };
        for work in children {
            let devrt::ChildWork::Launch(c) = work else {
                if r.is_ok() {
                    r = work.run_memory();
                }
                continue;
            };
            self.shared.pending_launches.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            if r.is_err() {
                continue;
            }
            // SAFETY: the parameter buffer holds `param_len` bytes.
            let params = unsafe { std::slice::from_raw_parts(c.params.ptr(), c.param_len) };
            // SAFETY: a kernel of the same module, per the contract.
            r = unsafe { self.launch_grid(&c.kernel, c.grid, c.block, c.shared_bytes, params, &child_options, resolver, depth + 1) };
        }
        r
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

/// [`Executor::launch`] on [`Executor::global`].
///
/// # Safety
/// As for [`Executor::launch`].
pub unsafe fn launch(
    kernel: &LoadedKernel,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared: u32,
    params: &[u8],
    options: &LaunchOptions,
) -> Result<(), LaunchError> {
    // SAFETY: forwarded contract.
    unsafe { Executor::global().launch(kernel, grid, block, dynamic_shared, params, options) }
}
