//! CUDA's device runtime on the CPU (dynamic parallelism, CDP2): kernels
//! that launch kernels, device-side streams and events, device-side
//! `cudaMemcpyAsync`/`cudaMemsetAsync` and their 2-D and 3-D forms, the
//! per-thread last error, device-side `cudaMalloc`.
//!
//! The schedule: a grid's device-side launches are recorded while its
//! blocks run and start once every block of the grid has finished, in the
//! order they were made (each one with all of its own descendants before
//! the next), then its tail launches in order; device-side copies and
//! memsets are work of their stream like launches, so they take their
//! place in that order. This is one of the
//! schedules a GPU may take: CDP2 has no device-side wait, so a parent
//! cannot observe whether its children have run; launches into one stream
//! run in order (all of them do); a child sees every store its parent made
//! before the launch (and the rest of the parent's, which the programming
//! model allows); a tail launch runs after the grid and all its other
//! work; and a grid is complete, for the host's streams, events and
//! synchronisation, only once all its descendants are. Device-side events
//! and `cudaStreamWaitEvent` then order nothing that is not already
//! ordered, so they only check their handles.

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use compiler::cpu_abi::devrt::{Op, STREAM_FIRE_AND_FORGET, STREAM_TAIL_LAUNCH};
use compiler::cpu_abi::BlockCtx;

use super::job::{AlignedBuf, Job, MAX_THREADS_PER_BLOCK};
use super::LoadedKernel;

/// CUDA's nesting limit for device-side launches: a grid at depth 24
/// cannot launch (`cudaErrorLaunchMaxDepthExceeded`).
pub const MAX_DEPTH: u32 = 24;

/// The default of `cudaLimitDevRuntimePendingLaunchCount`.
pub const DEFAULT_PENDING_LAUNCHES: u64 = 2048;

/// What the device runtime needs from the module the launching kernel
/// belongs to.
pub trait KernelResolver: Sync {
    /// The kernel whose address (its `thread` function, which is what
    /// compiled code takes as a kernel's address) is `address`.
    fn kernel(&self, address: usize) -> Option<LoadedKernel>;
    /// `cudaDeviceGetAttribute` (a `cudaDeviceAttr`, numbered as the
    /// driver's `CUdevice_attribute`).
    fn attribute(&self, attr: u32) -> Option<i32>;
    /// A `CUfunction_attribute` of the kernel at `address`, as the host
    /// would read it before changing any (device-side
    /// `cudaFuncGetAttributes`).
    fn func_attribute(&self, address: usize, attr: u32) -> Option<i32>;
    /// Blocks of the kernel at `address` that fit on one multiprocessor
    /// (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`).
    fn occupancy(&self, address: usize, block_threads: u32, dynamic_shared: u32) -> Option<u32>;
}

/// `cudaError_t` values the device runtime returns.
pub mod err {
    pub const SUCCESS: u32 = 0;
    pub const INVALID_VALUE: u32 = 1;
    pub const MEMORY_ALLOCATION: u32 = 2;
    pub const INVALID_CONFIGURATION: u32 = 9;
    pub const INVALID_PITCH_VALUE: u32 = 12;
    pub const INVALID_MEMCPY_DIRECTION: u32 = 21;
    pub const LAUNCH_MAX_DEPTH_EXCEEDED: u32 = 65;
    pub const LAUNCH_PENDING_COUNT_EXCEEDED: u32 = 69;
    pub const INVALID_DEVICE_FUNCTION: u32 = 98;
    pub const INVALID_DEVICE: u32 = 101;
    pub const UNSUPPORTED_LIMIT: u32 = 215;
    pub const INVALID_RESOURCE_HANDLE: u32 = 400;
    pub const NOT_SUPPORTED: u32 = 801;
}

/// A launch made by a kernel, waiting for its grid to finish.
pub(crate) struct ChildLaunch {
    pub kernel: LoadedKernel,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub params: AlignedBuf,
    pub param_len: usize,
}

/// Work a kernel gave its device-side streams, waiting for its grid to
/// finish.
pub(crate) enum ChildWork {
    Launch(Box<ChildLaunch>),
    /// `extent` (bytes per row, rows, slices) from `src` to `dst`.
    Copy {
        dst: Pitched,
        src: Pitched,
        extent: [u64; 3],
    },
    /// `extent` (bytes per row, rows, slices) of `value` at `dst`.
    Set {
        dst: Pitched,
        value: u8,
        extent: [u64; 3],
    },
}

/// Where a copy's or memset's rows are: row `y` of slice `z` starts at
/// `base + z * slice + y * pitch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pitched {
    pub base: u64,
    pub pitch: u64,
    pub slice: u64,
}

impl Pitched {
    /// One row of `pitch` bytes per row (a 1-D or 2-D operand).
    fn rows(base: u64, pitch: u64) -> Pitched {
        Pitched { base, pitch, slice: 0 }
    }
    /// Row `y` of slice `z`; wrapping, as a GPU's address arithmetic: the
    /// row is then checked against the allocations before it is touched.
    fn row(&self, y: u64, z: u64) -> u64 {
        self.base.wrapping_add(z.wrapping_mul(self.slice)).wrapping_add(y.wrapping_mul(self.pitch))
    }
}

impl ChildWork {
    /// Runs a copy or memset (launches are the executor's): the bytes must
    /// lie in memory kernels may access (device, pinned or managed
    /// allocations), else the launch fails at the first bad address, as a
    /// GPU's copy engine would fault.
    pub(crate) fn run_memory(&self) -> Result<(), super::LaunchError> {
        let check = |at: &Pitched, [width, height, depth]: [u64; 3]| -> Result<(), super::LaunchError> {
            for z in 0..depth {
                for y in 0..height {
                    let row = at.row(y, z);
                    if crate::memcheck::containing(row, width).is_none() {
                        return Err(super::LaunchError::IllegalAddress { address: row });
                    }
                }
            }
            Ok(())
        };
        match *self {
            ChildWork::Launch(_) => Ok(()),
            ChildWork::Copy { dst, src, extent } => {
                check(&src, extent)?;
                check(&dst, extent)?;
                let [width, height, depth] = extent;
                for z in 0..depth {
                    for y in 0..height {
                        let (d, s) = (dst.row(y, z), src.row(y, z));
                        // SAFETY: both rows lie in live allocations (checked
                        // above); `copy` allows them to overlap.
                        unsafe { std::ptr::copy(s as *const u8, d as *mut u8, width as usize) };
                        crate::memcheck::copied(d, s, width);
                    }
                }
                Ok(())
            }
            ChildWork::Set { dst, value, extent } => {
                check(&dst, extent)?;
                let [width, height, depth] = extent;
                for z in 0..depth {
                    for y in 0..height {
                        let d = dst.row(y, z);
                        // SAFETY: the row lies in a live allocation (checked above).
                        unsafe { std::ptr::write_bytes(d as *mut u8, value, width as usize) };
                        crate::memcheck::host_wrote(d, width);
                    }
                }
                Ok(())
            }
        }
    }
}

/// A parameter buffer handed out and not yet launched.
struct Buffer {
    buf: AlignedBuf,
    len: usize,
    /// `cudaGetParameterBufferV2`: the kernel and configuration.
    v2: Option<(LoadedKernel, [u32; 3], [u32; 3], u32)>,
}

#[derive(Default)]
struct GridState {
    launches: Vec<ChildWork>,
    tails: Vec<ChildWork>,
    buffers: HashMap<usize, Buffer>,
    streams: HashSet<u64>,
    events: HashSet<u64>,
    next_handle: u64,
    /// Per thread (linear block, linear thread): the last error.
    last_error: HashMap<(u64, u32), u32>,
}

/// One grid's device-runtime state ([`Job::devrt`]).
pub(crate) struct GridRt {
    resolver: Option<*const (dyn KernelResolver + 'static)>,
    pub depth: u32,
    pub pending_limit: u64,
    state: Mutex<Option<Box<GridState>>>,
}

// SAFETY: the resolver is `Sync` and outlives the launch (see `new`);
// everything else is behind the mutex.
unsafe impl Send for GridRt {}
// SAFETY: as above.
unsafe impl Sync for GridRt {}

impl GridRt {
    /// # Safety
    /// `resolver` must outlive every use of the grid's runtime: the launch
    /// it belongs to, which [`super::Executor::launch_with`] runs to
    /// completion before returning.
    pub(crate) unsafe fn new(resolver: Option<&dyn KernelResolver>, depth: u32, pending_limit: u64) -> GridRt {
        // SAFETY: lifetime erased per the contract.
        let resolver = resolver.map(|r| unsafe { std::mem::transmute::<&dyn KernelResolver, &'static dyn KernelResolver>(r) } as *const _);
        GridRt { resolver, depth, pending_limit, state: Mutex::new(None) }
    }

    fn resolver(&self) -> Option<&dyn KernelResolver> {
        // SAFETY: see `new`.
        self.resolver.map(|r| unsafe { &*r })
    }

    fn with<R>(&self, f: impl FnOnce(&mut GridState) -> R) -> R {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(s.get_or_insert_with(|| Box::new(GridState { next_handle: 0x100, ..GridState::default() })))
    }

    /// The grid's launches, in the order they run: the others, then the
    /// tail launches. Parameter buffers never launched are freed.
    pub(crate) fn take_children(&self) -> Vec<ChildWork> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut state) = state else { return Vec::new() };
        for b in state.buffers.values() {
            crate::memcheck::untrack(b.buf.ptr() as u64);
        }
        let mut all = std::mem::take(&mut state.launches);
        all.append(&mut state.tails);
        all
    }
}

fn block_linear(job: &Job, b: [u32; 3]) -> u64 {
    u64::from(b[0]) + u64::from(job.grid[0]) * (u64::from(b[1]) + u64::from(job.grid[1]) * u64::from(b[2]))
}

/// Reads the argument words.
struct Args(*const u64);

impl Args {
    fn at(&self, i: usize) -> u64 {
        // SAFETY: the compiled call passes as many words as the function's
        // table entry declares, which is what the caller reads.
        unsafe { self.0.add(i).read() }
    }
    fn u32(&self, i: usize) -> u32 {
        self.at(i) as u32
    }
    fn dim3(&self, i: usize) -> [u32; 3] {
        [self.u32(i), self.u32(i + 1), self.u32(i + 2)]
    }
}

/// Writes a result through a pointer the kernel passed (a bad pointer
/// faults, which ends the launch like any kernel fault).
fn store<T>(p: u64, v: T) -> u32 {
    if p == 0 {
        return err::INVALID_VALUE;
    }
    // SAFETY: the kernel passed this address for the result.
    unsafe { (p as *mut T).write_unaligned(v) };
    crate::memcheck::host_wrote(p, std::mem::size_of::<T>() as u64);
    err::SUCCESS
}

/// Checks a child launch's configuration as CUDA does.
fn check_config(kernel: &LoadedKernel, grid: [u32; 3], block: [u32; 3], shared: u32) -> Result<(), String> {
    let threads = block.iter().try_fold(1u32, |a, &d| a.checked_mul(d));
    if grid.contains(&0) || block.contains(&0) {
        return Err(format!("grid {grid:?} or block {block:?} has a zero dimension"));
    }
    if grid[1] > 65535 || grid[2] > 65535 || grid[0] > i32::MAX as u32 {
        return Err(format!("grid {grid:?} exceeds the device's limits"));
    }
    if block[0] > 1024 || block[1] > 1024 || block[2] > 64 || threads.is_none_or(|t| t > MAX_THREADS_PER_BLOCK) {
        return Err(format!("block {block:?} exceeds the device's limits"));
    }
    if let Some(req) = kernel.info.reqntid {
        if req != block {
            return Err(format!("block {block:?}; kernel `{}` requires {req:?} (.reqntid)", kernel.info.name));
        }
    }
    if let (Some(t), Some(max)) = (threads, kernel.info.maxntid) {
        let max = max.iter().product::<u32>();
        if t > max {
            return Err(format!("block of {t} threads; kernel `{}` allows {max} (.maxntid)", kernel.info.name));
        }
    }
    let total = u64::from(kernel.info.static_shared_bytes) + u64::from(shared);
    if total > 48 << 10 {
        return Err(format!("{total} bytes of shared memory per block (48 KiB without an opt-in, which device code cannot give)"));
    }
    Ok(())
}

/// `__anycuda_devrt`: one device-runtime function.
///
/// # Safety
/// Called from compiled code with its ctx and the argument words of `op`.
pub unsafe extern "C" fn __anycuda_devrt(ctx: *mut BlockCtx, thread: u32, op: u32, args: *const u8) -> u64 {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { super::runtime::runtime(ctx) }) else { return u64::from(err::NOT_SUPPORTED) };
    let job = rt.job();
    let key = (block_linear(job, rt.block.get()), rt.thread_index(thread));
    let Some(op) = Op::from_u32(op) else { return u64::from(err::NOT_SUPPORTED) };
    let args = Args(args.cast());
    let g = &job.devrt;
    let result: u64 = match op {
        Op::GetParameterBuffer => param_buffer(job, args.at(0), args.at(1), None).map_or(0, |p| p as u64),
        Op::GetParameterBufferV2 => match g.resolver().and_then(|r| r.kernel(args.at(0) as usize)) {
            Some(k) => {
                let len = k.info.param_bytes as usize;
                param_buffer(job, 64, len as u64, Some((k, args.dim3(1), args.dim3(4), args.u32(7)))).map_or(0, |p| p as u64)
            }
            None => {
                tracing::warn!("device-side launch from kernel `{}`: {:#x} is not a kernel of its module", job.kernel_name, args.at(0));
                g.with(|s| s.last_error.insert(key, err::INVALID_DEVICE_FUNCTION));
                0
            }
        },
        Op::LaunchDevice => {
            let config = g.resolver().and_then(|r| r.kernel(args.at(0) as usize)).map(|k| (k, args.dim3(2), args.dim3(5), args.u32(8)));
            match config {
                Some(c) => u64::from(launch(job, args.at(1), Some(c), args.at(9))),
                None => u64::from(err::INVALID_DEVICE_FUNCTION),
            }
        }
        Op::LaunchDeviceV2 => u64::from(launch(job, args.at(0), None, args.at(1))),
        Op::StreamCreateWithFlags => {
            if args.u32(1) != 1 {
                // Device streams must be cudaStreamNonBlocking.
                u64::from(err::INVALID_VALUE)
            } else {
                let h = g.with(|s| {
                    s.next_handle += 1;
                    let h = s.next_handle << 4;
                    s.streams.insert(h);
                    h
                });
                u64::from(store(args.at(0), h))
            }
        }
        Op::StreamDestroy => {
            let h = args.at(0);
            u64::from(if g.with(|s| s.streams.remove(&h)) { err::SUCCESS } else { err::INVALID_RESOURCE_HANDLE })
        }
        Op::StreamWaitEvent => {
            let (stream, event) = (args.at(0), args.at(1));
            let ok = g.with(|s| valid_stream(s, stream) && stream != STREAM_TAIL_LAUNCH && s.events.contains(&event));
            u64::from(if ok { err::SUCCESS } else { err::INVALID_RESOURCE_HANDLE })
        }
        Op::EventCreateWithFlags => {
            // Device events must be created with cudaEventDisableTiming.
            if args.u32(1) != 2 {
                u64::from(err::INVALID_VALUE)
            } else {
                let h = g.with(|s| {
                    s.next_handle += 1;
                    let h = (s.next_handle << 4) | 1;
                    s.events.insert(h);
                    h
                });
                u64::from(store(args.at(0), h))
            }
        }
        Op::EventRecord | Op::EventRecordWithFlags => {
            let (event, stream) = (args.at(0), args.at(1));
            let ok = g.with(|s| s.events.contains(&event) && valid_stream(s, stream));
            u64::from(if ok { err::SUCCESS } else { err::INVALID_RESOURCE_HANDLE })
        }
        Op::EventDestroy => {
            let h = args.at(0);
            u64::from(if g.with(|s| s.events.remove(&h)) { err::SUCCESS } else { err::INVALID_RESOURCE_HANDLE })
        }
        Op::GetLastError => return u64::from(g.with(|s| s.last_error.remove(&key)).unwrap_or(err::SUCCESS)),
        Op::PeekAtLastError => return u64::from(g.with(|s| s.last_error.get(&key).copied()).unwrap_or(err::SUCCESS)),
        Op::GetErrorString => return error_text(args.u32(0), false).as_ptr() as u64,
        Op::GetErrorName => return error_text(args.u32(0), true).as_ptr() as u64,
        Op::Malloc => {
            let size = args.at(1);
            let block = job.shared.heap.alloc(size);
            if block.is_null() {
                store(args.at(0), 0u64);
                u64::from(err::MEMORY_ALLOCATION)
            } else {
                crate::memcheck::track(block as u64, size, crate::memcheck::Kind::Heap);
                u64::from(store(args.at(0), block as u64))
            }
        }
        Op::Free => {
            let p = args.at(0);
            crate::memcheck::untrack(p);
            // SAFETY: `ctx` is the block's live context; its cached ranges
            // may hold the freed block.
            unsafe { (*ctx).memcheck = [[0; 2]; compiler::cpu_abi::MEMCHECK_SLOTS] };
            job.shared.heap.free(p as *mut u8);
            u64::from(err::SUCCESS)
        }
        Op::GetDevice => u64::from(store(args.at(0), 0i32)),
        Op::GetDeviceCount => u64::from(store(args.at(0), 1i32)),
        Op::DeviceGetAttribute => {
            if args.u32(2) != 0 {
                u64::from(err::INVALID_DEVICE)
            } else {
                match g.resolver().and_then(|r| r.attribute(args.u32(1))) {
                    Some(v) => u64::from(store(args.at(0), v)),
                    None => u64::from(err::INVALID_VALUE),
                }
            }
        }
        Op::DeviceGetLimit => {
            let v = match args.u32(1) {
                0 => Some(job.shared.thread_stack_size.load(Ordering::Relaxed) as u64),
                2 => Some(job.shared.heap.limit() as u64),
                4 => Some(g.pending_limit),
                _ => None,
            };
            match v {
                Some(v) => u64::from(store(args.at(0), v)),
                None => u64::from(err::UNSUPPORTED_LIMIT),
            }
        }
        Op::RuntimeGetVersion => u64::from(store(args.at(0), 13000i32)),
        Op::MemcpyAsync => {
            let work = ChildWork::Copy { dst: Pitched::rows(args.at(0), 0), src: Pitched::rows(args.at(1), 0), extent: [args.at(2), 1, 1] };
            u64::from(memory_work(job, work, args.at(4), Some(args.u32(3))))
        }
        Op::Memcpy2DAsync => {
            let work = ChildWork::Copy {
                dst: Pitched::rows(args.at(0), args.at(1)),
                src: Pitched::rows(args.at(2), args.at(3)),
                extent: [args.at(4), args.at(5), 1],
            };
            u64::from(memory_work(job, work, args.at(7), Some(args.u32(6))))
        }
        Op::MemsetAsync => {
            let work = ChildWork::Set { dst: Pitched::rows(args.at(0), 0), value: args.u32(1) as u8, extent: [args.at(2), 1, 1] };
            u64::from(memory_work(job, work, args.at(3), None))
        }
        Op::Memset2DAsync => {
            let work = ChildWork::Set {
                dst: Pitched::rows(args.at(0), args.at(1)),
                value: args.u32(2) as u8,
                extent: [args.at(3), args.at(4), 1],
            };
            u64::from(memory_work(job, work, args.at(5), None))
        }
        Op::Memcpy3DAsync => match copy_3d(job, args.at(0)) {
            Ok((work, kind)) => u64::from(memory_work(job, work, args.at(1), Some(kind))),
            Err(e) => u64::from(e),
        },
        Op::Memset3DAsync => {
            // (cudaPitchedPtr {ptr, pitch, xsize, ysize}, value, cudaExtent {width, height, depth}, stream)
            let (ptr, pitch, ysize) = (args.at(0), args.at(1), args.at(3));
            let extent = [args.at(5), args.at(6), args.at(7)];
            match check_3d(job, "cudaMemset3DAsync", pitch, ysize, [0, 0], extent) {
                Ok(()) => {
                    let work = ChildWork::Set {
                        dst: Pitched { base: ptr, pitch, slice: pitch.wrapping_mul(ysize) },
                        value: args.u32(4) as u8,
                        extent,
                    };
                    u64::from(memory_work(job, work, args.at(8), None))
                }
                Err(e) => u64::from(e),
            }
        }
        Op::FuncGetAttributes => u64::from(func_attributes(g, args.at(0), args.at(1) as usize)),
        Op::OccupancyMaxActiveBlocksPerMultiprocessor | Op::OccupancyMaxActiveBlocksPerMultiprocessorWithFlags => {
            let flags = if op == Op::OccupancyMaxActiveBlocksPerMultiprocessor { 0 } else { args.u32(4) };
            let (func, threads, dynamic) = (args.at(1) as usize, args.u32(2) as i32, args.at(3));
            let blocks = match (u32::try_from(threads), u32::try_from(dynamic)) {
                (Ok(t), Ok(d)) if flags <= 1 => g.resolver().and_then(|r| r.occupancy(func, t, d)).ok_or(err::INVALID_DEVICE_FUNCTION),
                _ => Err(err::INVALID_VALUE),
            };
            match blocks {
                Ok(n) => u64::from(store(args.at(0), n as i32)),
                Err(e) => u64::from(e),
            }
        }
    };
    // Calls returning cudaError_t set the thread's last error on failure.
    let returns_error = !matches!(op, Op::GetParameterBuffer | Op::GetParameterBufferV2);
    if returns_error && result != 0 {
        g.with(|s| s.last_error.insert(key, result as u32));
    }
    result
}

/// `cudaFuncGetAttributes`: fills the `cudaFuncAttributes` at `out` (140
/// bytes in CUDA 12 and 13: three `size_t`, then `int`s in the order of
/// `CUfunction_attribute` 0 and 4-13, then 15 and 14, then reserved
/// words, written as zeros).
fn func_attributes(g: &GridRt, out: u64, func: usize) -> u32 {
    let Some(r) = g.resolver() else { return err::INVALID_DEVICE_FUNCTION };
    let Some(max_threads) = r.func_attribute(func, 0) else { return err::INVALID_DEVICE_FUNCTION };
    if out == 0 {
        return err::INVALID_VALUE;
    }
    let a = |attr: u32| r.func_attribute(func, attr).unwrap_or(0);
    let mut bytes = [0u8; 140];
    for (k, attr) in [1u32, 2, 3].into_iter().enumerate() {
        bytes[8 * k..8 * k + 8].copy_from_slice(&(a(attr).max(0) as u64).to_le_bytes());
    }
    let ints = [max_threads, a(4), a(5), a(6), a(7), a(8), a(9), a(10), a(11), a(12), a(13), a(15), a(14)];
    for (k, v) in ints.into_iter().enumerate() {
        bytes[24 + 4 * k..28 + 4 * k].copy_from_slice(&v.to_le_bytes());
    }
    // SAFETY: the kernel passed the address of its cudaFuncAttributes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out as *mut u8, bytes.len()) };
    crate::memcheck::host_wrote(out, bytes.len() as u64);
    err::SUCCESS
}

fn valid_stream(s: &GridState, h: u64) -> bool {
    h == 0 || h == STREAM_TAIL_LAUNCH || h == STREAM_FIRE_AND_FORGET || s.streams.contains(&h)
}

type Config = (LoadedKernel, [u32; 3], [u32; 3], u32);

/// A parameter buffer of `len` bytes aligned to `align` (at least 64).
fn param_buffer(job: &Job, align: u64, len: u64, v2: Option<Config>) -> Option<*mut c_void> {
    let align = align.clamp(64, 4096).next_power_of_two() as usize;
    let len = usize::try_from(len).ok().filter(|&l| l <= 1 << 20)?;
    let buf = AlignedBuf::zeroed(len.max(1), align)?;
    let p = buf.ptr();
    crate::memcheck::track(p as u64, len.max(1) as u64, crate::memcheck::Kind::LaunchData);
    job.devrt.with(|s| s.buffers.insert(p as usize, Buffer { buf, len, v2 }));
    Some(p.cast())
}

/// `cudaLaunchDevice(V2)`: checks and records the launch.
fn launch(job: &Job, buffer: u64, config: Option<Config>, stream: u64) -> u32 {
    let g = &job.devrt;
    let name = &job.kernel_name;
    let taken = g.with(|s| {
        if !valid_stream(s, stream) {
            return Err(err::INVALID_RESOURCE_HANDLE);
        }
        s.buffers.remove(&(buffer as usize)).ok_or(err::INVALID_VALUE)
    });
    let b = match taken {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("device-side launch from kernel `{name}`: a bad stream ({stream:#x}) or parameter buffer ({buffer:#x})");
            return e;
        }
    };
    crate::memcheck::untrack(b.buf.ptr() as u64);
    let Some((kernel, grid, block, shared)) = config.or(b.v2) else {
        return err::INVALID_VALUE;
    };
    if let Err(why) = check_config(&kernel, grid, block, shared) {
        tracing::warn!("device-side launch of `{}` from kernel `{name}`: {why} (cudaErrorInvalidConfiguration)", kernel.info.name);
        return err::INVALID_CONFIGURATION;
    }
    if b.len < kernel.info.param_bytes as usize {
        return err::INVALID_VALUE;
    }
    if g.depth >= MAX_DEPTH {
        tracing::warn!(
            "device-side launch of `{}` from kernel `{name}` at nesting depth {} (cudaErrorLaunchMaxDepthExceeded)",
            kernel.info.name,
            g.depth
        );
        return err::LAUNCH_MAX_DEPTH_EXCEEDED;
    }
    let pending = &job.shared.pending_launches;
    if pending.fetch_add(1, Ordering::AcqRel) >= g.pending_limit {
        pending.fetch_sub(1, Ordering::AcqRel);
        tracing::warn!(
            "device-side launch of `{}` from kernel `{name}`: {} launches pending (cudaLimitDevRuntimePendingLaunchCount; cudaErrorLaunchPendingCountExceeded)",
            kernel.info.name,
            g.pending_limit
        );
        return err::LAUNCH_PENDING_COUNT_EXCEEDED;
    }
    let child = ChildWork::Launch(Box::new(ChildLaunch { kernel, grid, block, shared_bytes: shared, params: b.buf, param_len: b.len }));
    g.with(|s| if stream == STREAM_TAIL_LAUNCH { s.tails.push(child) } else { s.launches.push(child) });
    err::SUCCESS
}

/// `cudaMemcpyKind`s device code may use: device to device, and default
/// (unified addressing tells).
const MEMCPY_DEVICE_TO_DEVICE: u32 = 3;
const MEMCPY_DEFAULT: u32 = 4;

/// Reads the `cudaMemcpy3DParms` a device-side `cudaMemcpy3DAsync` points
/// to (CUDA 12 and 13, 160 bytes: `srcArray`, `srcPos` {x, y, z},
/// `srcPtr` {ptr, pitch, xsize, ysize}, `dstArray`, `dstPos`, `dstPtr`,
/// `extent` {width, height, depth}, then `kind`): the copy, with the
/// positions folded into the operands (x in bytes, y in rows, z in
/// slices of `pitch * ysize` bytes), and the kind. A NULL pointer is
/// `cudaErrorInvalidValue`; so is a CUDA array operand, which the device
/// runtime here does not support (said in the log).
fn copy_3d(job: &Job, p: u64) -> Result<(ChildWork, u32), u32> {
    if p == 0 {
        return Err(err::INVALID_VALUE);
    }
    // SAFETY: the kernel passed the address of its parameter structure; a
    // bad address faults, which ends the launch like any kernel fault.
    let w = |i: u64| unsafe { (p.wrapping_add(8 * i) as *const u64).read_unaligned() };
    let extent = [w(16), w(17), w(18)];
    let side = |array: u64, pos: u64, ptr: u64| -> Result<(u64, Pitched), u32> {
        let (x, y, z) = (w(pos), w(pos + 1), w(pos + 2));
        let (base, pitch, ysize) = (w(ptr), w(ptr + 1), w(ptr + 3));
        check_3d(job, "cudaMemcpy3DAsync", pitch, ysize, [x, y], extent)?;
        let slice = pitch.wrapping_mul(ysize);
        let base = base.wrapping_add(x).wrapping_add(y.wrapping_mul(pitch)).wrapping_add(z.wrapping_mul(slice));
        Ok((w(array), Pitched { base, pitch, slice }))
    };
    let (src_array, src) = side(0, 1, 4)?;
    let (dst_array, dst) = side(8, 9, 12)?;
    // SAFETY: as above, the 32-bit kind after the extent.
    let kind = unsafe { (p.wrapping_add(8 * 19) as *const u32).read_unaligned() };
    if src_array != 0 || dst_array != 0 {
        tracing::warn!(
            "device-side cudaMemcpy3DAsync in kernel `{}`: a CUDA array operand, which anycuda's device runtime does not support (cudaErrorInvalidValue)",
            job.kernel_name
        );
        return Err(err::INVALID_VALUE);
    }
    Ok((ChildWork::Copy { dst, src, extent }, kind))
}

/// The rows of a 3-D copy's or memset's operand, as the host's
/// `cuMemcpy3D` checks them: with several rows or slices, a pitch of at
/// least the row (from the operand's x position on); with several slices,
/// a height (`ysize`, which may be 0 for one slice) of at least the rows
/// (from its y position on). Otherwise `cudaErrorInvalidValue`, said in
/// the log.
fn check_3d(job: &Job, what: &str, pitch: u64, ysize: u64, [x, y]: [u64; 2], [width, height, depth]: [u64; 3]) -> Result<(), u32> {
    if width == 0 || height == 0 || depth == 0 {
        return Ok(());
    }
    let row_fits = x.checked_add(width).is_some_and(|end| end <= pitch);
    let rows_fit = y.checked_add(height).is_some_and(|end| end <= ysize);
    if (height > 1 || depth > 1) && !row_fits || depth > 1 && !rows_fit {
        tracing::warn!(
            "device-side {what} in kernel `{}`: {depth} slices of {height} rows of {width} bytes from row {y}, byte {x}, do not fit a pitch of {pitch} bytes and a height of {ysize} rows (cudaErrorInvalidValue)",
            job.kernel_name
        );
        return Err(err::INVALID_VALUE);
    }
    Ok(())
}

/// Device-side copies and memsets (`cudaMemcpyAsync`, `cudaMemsetAsync`
/// and their 2-D and 3-D forms): checks the arguments as CUDA does and
/// records the work in its stream. Empty work succeeds and records
/// nothing.
fn memory_work(job: &Job, work: ChildWork, stream: u64, kind: Option<u32>) -> u32 {
    let g = &job.devrt;
    let name = &job.kernel_name;
    if let Some(kind) = kind {
        if kind != MEMCPY_DEVICE_TO_DEVICE && kind != MEMCPY_DEFAULT {
            tracing::warn!("device-side copy in kernel `{name}`: kind {kind}; device code copies device to device only (cudaErrorInvalidMemcpyDirection)");
            return err::INVALID_MEMCPY_DIRECTION;
        }
    }
    let (extent, sides) = match work {
        ChildWork::Copy { dst, src, extent } => (extent, [dst, src]),
        ChildWork::Set { dst, extent, .. } => (extent, [dst, dst]),
        ChildWork::Launch(_) => return err::INVALID_VALUE,
    };
    let [width, height, depth] = extent;
    if height > 1 && sides.iter().any(|s| s.pitch < width) {
        tracing::warn!(
            "device-side copy or memset in kernel `{name}`: rows of {width} bytes with pitches {:?} (cudaErrorInvalidPitchValue)",
            sides.map(|s| s.pitch)
        );
        return err::INVALID_PITCH_VALUE;
    }
    if !g.with(|s| valid_stream(s, stream)) {
        return err::INVALID_RESOURCE_HANDLE;
    }
    if width == 0 || height == 0 || depth == 0 {
        return err::SUCCESS;
    }
    g.with(|s| if stream == STREAM_TAIL_LAUNCH { s.tails.push(work) } else { s.launches.push(work) });
    err::SUCCESS
}

/// `cudaGetErrorString`/`cudaGetErrorName` for the codes the device
/// runtime returns (NUL-terminated).
fn error_text(code: u32, name: bool) -> &'static str {
    let (n, s) = match code {
        err::SUCCESS => ("cudaSuccess\0", "no error\0"),
        err::INVALID_VALUE => ("cudaErrorInvalidValue\0", "invalid argument\0"),
        err::MEMORY_ALLOCATION => ("cudaErrorMemoryAllocation\0", "out of memory\0"),
        err::INVALID_CONFIGURATION => ("cudaErrorInvalidConfiguration\0", "invalid configuration argument\0"),
        err::INVALID_PITCH_VALUE => ("cudaErrorInvalidPitchValue\0", "invalid pitch argument\0"),
        err::INVALID_MEMCPY_DIRECTION => ("cudaErrorInvalidMemcpyDirection\0", "invalid copy direction for memcpy\0"),
        err::LAUNCH_MAX_DEPTH_EXCEEDED => ("cudaErrorLaunchMaxDepthExceeded\0", "launch would exceed maximum depth of nested launches\0"),
        err::LAUNCH_PENDING_COUNT_EXCEEDED => {
            ("cudaErrorLaunchPendingCountExceeded\0", "launch would exceed the device runtime's pending launch count\0")
        }
        err::INVALID_DEVICE_FUNCTION => ("cudaErrorInvalidDeviceFunction\0", "invalid device function\0"),
        err::INVALID_DEVICE => ("cudaErrorInvalidDevice\0", "invalid device ordinal\0"),
        err::UNSUPPORTED_LIMIT => ("cudaErrorUnsupportedLimit\0", "unsupported limit\0"),
        err::INVALID_RESOURCE_HANDLE => ("cudaErrorInvalidResourceHandle\0", "invalid resource handle\0"),
        err::NOT_SUPPORTED => ("cudaErrorNotSupported\0", "operation not supported\0"),
        _ => ("cudaErrorUnknown\0", "unrecognized error code\0"),
    };
    if name {
        n
    } else {
        s
    }
}
