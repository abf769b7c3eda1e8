//! The interface between the driver core and the machines that run CUDA
//! code (the host CPU, AMD GPUs through HIP).
//!
//! A backend is thin: it owns memory, loads PTX into something it can run,
//! and runs kernel grids, copies and memsets in order on queues
//! ([`BackendQueue`], one per driver stream: a GPU's streams) or, if it
//! has none, where they are enqueued ([`ImmediateQueue`]). Everything CUDA
//! defines on top — contexts, streams and their ordering, events, handle
//! validation, argument checking, error codes — lives in the driver, once,
//! so every backend behaves alike.
//!
//! Addresses are plain integers: device addresses are [`DevicePtr`]s in the
//! unified virtual address space the driver reports (on the CPU backend they
//! are host addresses); host addresses are [`HostAddr`]s. The driver never
//! dereferences a device address itself; it goes through
//! [`Backend::copy_htod`] and friends.

use std::sync::Arc;

use crate::props::DeviceProps;

/// A device address.
pub type DevicePtr = u64;
/// A host address (kept as an integer so that descriptors stay `Send`).
pub type HostAddr = usize;

/// Failures of backend memory operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("out of memory ({0} bytes requested)")]
    OutOfMemory(usize),
    /// Out of memory, with the reason (the device's limit, the system's).
    #[error("out of memory: {why}")]
    Exhausted { requested: usize, why: String },
    #[error("address {addr:#x}+{len} is not backend memory")]
    InvalidAddress { addr: u64, len: usize },
    #[error("not supported by this backend: {0}")]
    NotSupported(String),
    /// A handle (e.g. an interprocess memory handle) names nothing usable.
    #[error("invalid handle: {0}")]
    InvalidHandle(String),
    #[error("{0}")]
    Other(String),
}

/// The bytes of an interprocess memory handle that are the backend's.
pub const IPC_PAYLOAD: usize = 48;

/// Two counters in memory that several processes map: an interprocess
/// event's newest record generation and newest completed generation
/// (`crate::event`). Both only grow.
pub trait SharedCounters: Send + Sync {
    fn recorded(&self) -> &std::sync::atomic::AtomicU64;
    fn completed(&self) -> &std::sync::atomic::AtomicU64;
}

/// The value and element size of a memset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemsetValue {
    U8(u8),
    U16(u16),
    U32(u32),
}

impl MemsetValue {
    pub fn element_size(self) -> usize {
        match self {
            MemsetValue::U8(_) => 1,
            MemsetValue::U16(_) => 2,
            MemsetValue::U32(_) => 4,
        }
    }

    /// `count` elements of this value, as bytes (for host-side memsets).
    pub fn fill(self, dst: &mut [u8]) {
        match self {
            MemsetValue::U8(v) => dst.fill(v),
            MemsetValue::U16(v) => {
                for c in dst.chunks_exact_mut(2) {
                    c.copy_from_slice(&v.to_ne_bytes());
                }
            }
            MemsetValue::U32(v) => {
                for c in dst.chunks_exact_mut(4) {
                    c.copy_from_slice(&v.to_ne_bytes());
                }
            }
        }
    }
}

/// Page-locked host memory and the device address it is mapped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostAllocation {
    pub host: HostAddr,
    /// Where kernels see it (equal to `host` on backends with a shared
    /// address space, such as the CPU).
    pub device: DevicePtr,
}

/// Options of a module load, from the JIT options of `cuModuleLoadDataEx`,
/// `cuLinkCreate` and `cuLibraryLoadData`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleOptions {
    /// The compute capability (major * 10 + minor) the code is for.
    pub target: u32,
    pub max_registers: Option<u32>,
    pub threads_per_block: Option<u32>,
    pub optimization_level: Option<u32>,
    pub generate_debug_info: bool,
    pub generate_line_info: bool,
    pub verbose: bool,
    /// `CU_JIT_FTZ`, `CU_JIT_PREC_DIV`, `CU_JIT_PREC_SQRT`, `CU_JIT_FMA`
    /// when given.
    pub ftz: Option<bool>,
    pub prec_div: Option<bool>,
    pub prec_sqrt: Option<bool>,
    pub fma: Option<bool>,
    /// Where the PTX came from, for messages ("fatbin entry 2 (compute_86)").
    pub source: String,
}

/// What kind of failure a module load is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleErrorKind {
    /// The PTX is malformed or uses something the backend cannot compile
    /// (CUDA_ERROR_INVALID_PTX).
    InvalidPtx,
    /// The PTX ISA version is newer than the backend knows
    /// (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
    UnsupportedPtxVersion,
    /// Resource exhaustion while compiling (CUDA_ERROR_OUT_OF_MEMORY).
    OutOfMemory,
    /// Anything else (CUDA_ERROR_UNKNOWN).
    Other,
}

/// A failed module load. `log` goes to the caller's JIT error log buffer,
/// so it should name the construct, position and reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{log}")]
pub struct ModuleError {
    pub kind: ModuleErrorKind,
    pub log: String,
}

impl ModuleError {
    pub fn invalid_ptx(log: impl Into<String>) -> ModuleError {
        ModuleError { kind: ModuleErrorKind::InvalidPtx, log: log.into() }
    }
}

/// Where one kernel parameter lives in the parameter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamDesc {
    pub offset: u32,
    pub size: u32,
    pub align: u32,
}

/// What the driver needs to know about a kernel of a loaded module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDesc {
    /// The PTX entry name (mangled for C++).
    pub name: String,
    pub params: Vec<ParamDesc>,
    /// Size of the whole parameter buffer.
    pub param_bytes: u32,
    pub static_shared_bytes: u32,
    pub const_bytes: u32,
    pub local_bytes: u32,
    /// Registers per thread reported to occupancy queries.
    pub num_regs: u32,
    /// `.reqntid`: the block must have exactly these dimensions.
    pub reqntid: Option<[u32; 3]>,
    /// `.maxntid`: the block may have at most this many threads.
    pub maxntid: Option<[u32; 3]>,
    /// `.minnctapersm`, if given.
    pub min_blocks_per_sm: Option<u32>,
    /// The PTX ISA version, major * 10 + minor (`.version 8.6` -> 86).
    pub ptx_version: u32,
    /// The architecture the code was compiled for, major * 10 + minor.
    pub binary_version: u32,
    /// The kernel may call device `malloc`/`free`: launching it fixes the
    /// context's `CU_LIMIT_MALLOC_HEAP_SIZE`.
    pub calls_malloc: bool,
    /// The kernel may call device `printf`: launching it fixes
    /// `CU_LIMIT_PRINTF_FIFO_SIZE`.
    pub calls_printf: bool,
}

impl KernelDesc {
    /// A kernel with no parameters and no special requirements.
    pub fn simple(name: &str) -> KernelDesc {
        KernelDesc {
            name: name.to_string(),
            params: Vec::new(),
            param_bytes: 0,
            static_shared_bytes: 0,
            const_bytes: 0,
            local_bytes: 0,
            num_regs: 32,
            reqntid: None,
            maxntid: None,
            min_blocks_per_sm: None,
            ptx_version: 0,
            binary_version: 0,
            calls_malloc: false,
            calls_printf: false,
        }
    }

    /// The most threads a block of this kernel may have, given the device's
    /// limit: `.maxntid`/`.reqntid` when present.
    pub fn max_threads_per_block(&self, device_limit: u32) -> u32 {
        let product = |d: [u32; 3]| d.iter().map(|&x| x.max(1)).product::<u32>();
        let mut m = device_limit;
        if let Some(d) = self.maxntid {
            m = m.min(product(d));
        }
        if let Some(d) = self.reqntid {
            m = m.min(product(d));
        }
        m
    }
}

/// A module-scope variable (`.global`, `.const`) of a loaded module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalDesc {
    pub name: String,
    pub address: DevicePtr,
    pub size: usize,
    pub constant: bool,
    /// `.attribute(.managed)`: `cuLibraryGetManaged` finds it.
    pub managed: bool,
}

/// One grid to run.
#[derive(Debug, Clone, Copy)]
pub struct LaunchParams<'a> {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
    /// The parameter buffer, laid out as [`KernelDesc::params`] says.
    pub params: &'a [u8],
    /// All blocks must be resident at once (grid-wide synchronisation).
    pub cooperative: bool,
    /// The context's `CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT`: how many
    /// device-side launches may wait to start at once.
    pub pending_launch_limit: u64,
    /// The context's `CU_LIMIT_MALLOC_HEAP_SIZE`: bytes device `malloc`
    /// may hold at once (allocations past it return null).
    pub heap_limit: u64,
    /// The context's `CU_LIMIT_PRINTF_FIFO_SIZE`: bytes of device `printf`
    /// output kept between two synchronisations, for backends that buffer
    /// it (later output is dropped).
    pub printf_fifo_size: u64,
}

/// Why a kernel did not complete. Every fault is sticky: the context it ran
/// in is unusable afterwards, as on NVIDIA hardware.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchFault {
    #[error("illegal address {address:#x}: {detail}")]
    IllegalAddress { address: u64, detail: String },
    #[error("illegal instruction: {0}")]
    IllegalInstruction(String),
    #[error("misaligned address {address:#x}: {detail}")]
    MisalignedAddress { address: u64, detail: String },
    #[error("trap: {0}")]
    Trap(String),
    #[error("device-side assert: {0}")]
    Assert(String),
    /// Threads wait for each other in a way that can never complete.
    #[error("deadlock: {0}")]
    Deadlock(String),
    #[error("out of resources: {0}")]
    OutOfResources(String),
    #[error("hardware stack error: {0}")]
    StackOverflow(String),
    #[error("launch timed out: {0}")]
    Timeout(String),
    #[error("launch failed: {0}")]
    Failed(String),
}

/// What a device may do with a range of the virtual memory API
/// (`CUmemAccess_flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum VmmAccess {
    /// No access: touching the range faults (every mapping starts so).
    #[default]
    None,
    Read,
    ReadWrite,
}

/// A machine that runs CUDA code.
///
/// Object-safe and shared between threads: the driver calls it from API
/// threads and from stream worker threads concurrently. Device indices
/// are `0..device_count()`; the driver checks them before calling.
pub trait Backend: Send + Sync {
    /// A short name for logs ("cpu", "hip", "mock").
    fn name(&self) -> &str;

    fn device_count(&self) -> usize;

    /// The device's description; called once per device at `cuInit`.
    fn device_props(&self, device: usize) -> DeviceProps;

    /// `(free, total)` bytes of device memory.
    fn mem_info(&self, device: usize) -> (u64, u64);

    /// Whether kernels on `device` can access memory of `peer` (a
    /// different device of this backend) once peer access is enabled.
    fn can_access_peer(&self, _device: usize, _peer: usize) -> bool {
        false
    }

    /// Kernels on `device` may access memory of `peer` from now on (a pair
    /// `can_access_peer` accepted). The driver calls it when the first
    /// context of `device` enables access to a context of `peer`, and
    /// [`Backend::disable_peer_access`] when the last one disables it or is
    /// destroyed: CUDA enables peer access per context, GPU runtimes per
    /// device. A backend whose devices share one memory does nothing.
    fn enable_peer_access(&self, _device: usize, _peer: usize) -> Result<(), BackendError> {
        Ok(())
    }

    /// Undoes [`Backend::enable_peer_access`].
    fn disable_peer_access(&self, _device: usize, _peer: usize) -> Result<(), BackendError> {
        Ok(())
    }

    /// Interprocess memory (`cuIpcGetMemHandle`): makes the device
    /// allocation at `base` (`size` bytes) shareable with other processes
    /// (its contents and address stay) and returns what another process
    /// needs to map it.
    fn ipc_export(&self, _base: DevicePtr, _size: usize) -> Result<[u8; IPC_PAYLOAD], BackendError> {
        Err(BackendError::NotSupported("interprocess memory handles".into()))
    }

    /// Maps memory another process exported (`cuIpcOpenMemHandle`) for
    /// `device`; returns its address here and its size.
    fn ipc_import(&self, _device: usize, _payload: &[u8; IPC_PAYLOAD]) -> Result<(DevicePtr, usize), BackendError> {
        Err(BackendError::NotSupported("interprocess memory handles".into()))
    }

    /// Unmaps what [`Backend::ipc_import`] mapped (`cuIpcCloseMemHandle`).
    fn ipc_close(&self, _ptr: DevicePtr) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("interprocess memory handles".into()))
    }

    /// Interprocess events (`cuIpcGetEventHandle`): a new pair of
    /// [`SharedCounters`] that other processes can open with the returned
    /// payload.
    fn ipc_counters_export(&self) -> Result<(Arc<dyn SharedCounters>, [u8; IPC_PAYLOAD]), BackendError> {
        Err(BackendError::NotSupported("interprocess events".into()))
    }

    /// Opens counters another process exported (`cuIpcOpenEventHandle`).
    fn ipc_counters_import(&self, _payload: &[u8; IPC_PAYLOAD]) -> Result<Arc<dyn SharedCounters>, BackendError> {
        Err(BackendError::NotSupported("interprocess events".into()))
    }

    /// Device memory, aligned to at least 256 bytes. `size > 0`.
    fn alloc(&self, device: usize, size: usize) -> Result<DevicePtr, BackendError>;

    /// Frees what [`Backend::alloc`] returned.
    fn free(&self, device: usize, ptr: DevicePtr) -> Result<(), BackendError>;

    /// Page-locked host memory, mapped into the device's address space.
    fn alloc_host(&self, size: usize, flags: u32) -> Result<HostAllocation, BackendError>;

    fn free_host(&self, host: HostAddr) -> Result<(), BackendError>;

    /// Makes existing host memory device-accessible; returns its device
    /// address.
    fn register_host(&self, host: HostAddr, size: usize, flags: u32) -> Result<DevicePtr, BackendError>;

    fn unregister_host(&self, host: HostAddr) -> Result<(), BackendError>;

    /// Managed memory: accessible from the host and the device at the same
    /// address.
    fn alloc_managed(&self, device: usize, size: usize) -> Result<DevicePtr, BackendError>;

    fn free_managed(&self, ptr: DevicePtr) -> Result<(), BackendError>;

    /// Host to device. The driver has checked that the range lies in one
    /// allocation.
    fn copy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError>;

    /// Device to host.
    fn copy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<(), BackendError>;

    /// Device to device; the ranges may overlap.
    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError>;

    /// `count` elements of `value` at `dst`.
    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError>;

    /// Compiles (or prepares) PTX for `device`. Called once per module and
    /// device; may be slow.
    fn load_module(&self, device: usize, ptx: &str, options: &ModuleOptions) -> Result<Arc<dyn BackendModule>, ModuleError>;

    /// A new queue of device work on `device` for one of the driver's
    /// streams (its priority as `cuStreamCreateWithPriority` clamped it:
    /// lower is more urgent). `None` (the default) means the backend runs
    /// work where it is enqueued: the driver then uses an
    /// [`ImmediateQueue`], which calls [`Backend::copy_htod`] and friends
    /// and [`BackendModule::launch`] on the stream's worker thread.
    fn create_queue(&self, _device: usize, _priority: i32) -> Result<Option<Arc<dyn BackendQueue>>, BackendError> {
        Ok(None)
    }

    // ---- virtual memory management ----
    //
    // `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`
    // and friends. The driver checks every argument against CUDA's rules
    // and keeps all the bookkeeping (reservations, physical allocations
    // and their handles, mappings, access); a backend only provides
    // address space, physical memory and the mapping between them, and
    // says it does by setting `DeviceProps::virtual_memory_management`.
    // The defaults refuse with `NotSupported`, so a backend without the
    // API needs nothing here.

    /// The granularity of physical allocations, mappings and their
    /// offsets, in bytes: a power of two and a multiple of the host page
    /// size.
    fn vmm_granularity(&self, _device: usize) -> usize {
        2 << 20
    }

    /// Reserves `size` bytes of device address space (a multiple of the
    /// host page size), aligned to `align` (a power of two, at least the
    /// granularity); at `hint` when that is not 0 and the range there is
    /// free, elsewhere otherwise. A reservation holds no memory: reserving
    /// tens of GiB must cost nothing. Device accesses to a reserved range
    /// that is not mapped fault.
    fn vmm_reserve(&self, _size: usize, _align: usize, _hint: DevicePtr) -> Result<DevicePtr, BackendError> {
        Err(BackendError::NotSupported("virtual memory management".into()))
    }

    /// Gives back a reservation, exactly as [`Backend::vmm_reserve`]
    /// returned it. The driver has unmapped everything in it.
    fn vmm_unreserve(&self, _addr: DevicePtr, _size: usize) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("virtual memory management".into()))
    }

    /// Allocates `size` bytes (a multiple of the granularity) of physical
    /// memory on `device` that can be mapped at any number of addresses,
    /// all seeing the same bytes. Returns an id of the backend's choosing.
    fn vmm_create(&self, _device: usize, _size: usize) -> Result<u64, BackendError> {
        Err(BackendError::NotSupported("virtual memory management".into()))
    }

    /// Frees a physical allocation. The driver calls it once no mapping
    /// uses the memory and the application has released every handle to
    /// it; the memory must then go back to the system.
    fn vmm_release(&self, _mem: u64) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("virtual memory management".into()))
    }

    /// Maps `size` bytes of allocation `mem`, from byte `offset`, at
    /// `addr`: a reserved, unmapped range; all three are multiples of the
    /// granularity and the range lies within the allocation. A new
    /// mapping is inaccessible until [`Backend::vmm_set_access`].
    fn vmm_map(&self, _addr: DevicePtr, _size: usize, _mem: u64, _offset: usize) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("virtual memory management".into()))
    }

    /// Unmaps one range exactly as [`Backend::vmm_map`] mapped it; the
    /// range stays reserved (and faults again on access). The driver has
    /// waited for the device work that may use it.
    fn vmm_unmap(&self, _addr: DevicePtr, _size: usize) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("virtual memory management".into()))
    }

    /// Sets what devices may do with a range made of whole mappings. Once
    /// a range allows reading (writing), the driver's copies and memsets
    /// read (write) it with [`Backend::copy_htod`] and friends, and kernels
    /// use it like memory from [`Backend::alloc`].
    fn vmm_set_access(&self, _addr: DevicePtr, _size: usize, _access: VmmAccess) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("virtual memory management".into()))
    }

    /// A new file descriptor sharing physical allocation `mem`
    /// (`cuMemExportToShareableHandle`, `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`);
    /// the caller owns it. Backends that implement it set
    /// `DeviceProps::vmm_posix_fd`.
    fn vmm_export_fd(&self, _mem: u64) -> Result<i32, BackendError> {
        Err(BackendError::NotSupported("shareable virtual memory handles".into()))
    }

    /// A physical allocation sharing the memory behind file descriptor `fd`
    /// (one [`Backend::vmm_export_fd`] made, in this process or another);
    /// returns its id and size. `fd` stays the caller's.
    fn vmm_import_fd(&self, _device: usize, _fd: i32) -> Result<(u64, usize), BackendError> {
        Err(BackendError::NotSupported("shareable virtual memory handles".into()))
    }
}

/// A module loaded by a backend. Dropping it releases its code and globals.
pub trait BackendModule: Send + Sync {
    /// The module's kernels (`.entry`), in PTX order.
    fn kernels(&self) -> &[KernelDesc];

    /// The module's variables.
    fn globals(&self) -> &[GlobalDesc];

    /// Messages of a successful load, for the JIT info log.
    fn info_log(&self) -> String {
        String::new()
    }

    /// Makes kernel `kernel`'s code ready to run, compiling it if the
    /// backend compiles lazily. Called on the launching thread before a
    /// launch is queued, so that a kernel that cannot be compiled fails
    /// its launch call (`CUDA_ERROR_INVALID_PTX` with the compiler's
    /// message) instead of a later synchronisation. Blocks only for this
    /// kernel's compile.
    fn prepare(&self, _kernel: usize) -> Result<(), ModuleError> {
        Ok(())
    }

    /// Runs the whole grid of kernel `kernel` (an index into
    /// [`BackendModule::kernels`]) and returns when every block has
    /// finished. The driver has validated the configuration against the
    /// device's limits and the kernel's requirements.
    fn launch(&self, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault>;

    /// Enqueues a grid on `queue`, a queue of this module's backend (its
    /// [`BackendQueue::launch`] calls this, so the module can reach its
    /// backend's queue type through [`BackendQueue::as_any`]). The default
    /// runs the grid now with [`BackendModule::launch`], which is right for
    /// backends whose queues run work where it is enqueued.
    fn enqueue_launch(&self, _queue: &dyn BackendQueue, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        self.launch(kernel, launch)
    }
}

/// The source of a host-to-device copy on a [`BackendQueue`].
#[derive(Debug)]
pub enum HostSrc {
    /// Bytes the queue owns: the driver's snapshot of pageable memory (or
    /// of a value), which the queue keeps until the copy has completed.
    Owned(Vec<u8>),
    /// Host memory the application keeps valid and unchanged until its
    /// stream reaches the copy (page-locked or registered memory, as CUDA
    /// requires of asynchronous copies).
    Borrowed { addr: HostAddr, len: usize },
}

impl HostSrc {
    pub fn len(&self) -> usize {
        match self {
            HostSrc::Owned(v) => v.len(),
            HostSrc::Borrowed { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_ptr(&self) -> *const u8 {
        match self {
            HostSrc::Owned(v) => v.as_ptr(),
            HostSrc::Borrowed { addr, .. } => *addr as *const u8,
        }
    }

    /// The bytes.
    ///
    /// # Safety
    /// A borrowed source must be valid for reads of its length.
    pub unsafe fn bytes(&self) -> &[u8] {
        match self {
            HostSrc::Owned(v) => v,
            // SAFETY: the caller's contract.
            HostSrc::Borrowed { addr, len } => unsafe { std::slice::from_raw_parts(*addr as *const u8, *len) },
        }
    }
}

/// An ordered queue of device work on one device: what a GPU calls a
/// stream (`hipStream_t`). Each driver stream owns one and is the only
/// one to enqueue on it, from its worker thread, in stream order.
///
/// Enqueueing returns once the work is queued; errors found then (a bad
/// range, a launch the runtime refuses) are returned at once. Work runs
/// in enqueue order, asynchronously to the host; [`BackendQueue::query`]
/// and [`BackendQueue::synchronize`] observe its completion, and
/// `synchronize` reports a fault of any work since the last
/// synchronisation (faults are sticky: the driver poisons the context).
/// Everything the driver's streams define on top — ordering between
/// streams, the legacy stream, host functions and callbacks, events as
/// CUDA sees them, capture and graphs — stays in the driver.
///
/// Lifetimes: a queue keeps what its pending work needs (owned copy
/// sources, the modules of pending launches) until that work completes;
/// the parameter buffer of a launch is copied when it is enqueued.
/// Device memory and borrowed host memory are the driver's and the
/// application's to keep alive (the driver frees device memory only after
/// the work that may use it: `cuMemFree` synchronises, `cuMemFreeAsync`
/// drains its stream's queue first).
pub trait BackendQueue: Send + Sync {
    /// For backends to find their own queue type behind the trait object.
    fn as_any(&self) -> &dyn std::any::Any;

    /// Host to device.
    fn copy_htod(&self, dst: DevicePtr, src: HostSrc) -> Result<(), BackendError>;

    /// Device to host: `dst` stays valid until the copy completes (the
    /// driver synchronises before returning to the application when `dst`
    /// is pageable).
    fn copy_dtoh(&self, dst: HostAddr, src: DevicePtr, len: usize) -> Result<(), BackendError>;

    /// Device to device; the ranges may overlap.
    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError>;

    /// `count` elements of `value` at `dst`.
    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError>;

    /// One grid of kernel `kernel` of `module` (a module of this queue's
    /// backend and device), configured as [`BackendModule::launch`] says.
    fn launch(&self, module: &Arc<dyn BackendModule>, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault>;

    /// An event that completes when everything enqueued so far has, and
    /// then knows when that was (for `cuEventElapsedTime`).
    fn record(&self) -> Result<Arc<dyn BackendEvent>, BackendError>;

    /// Whether [`BackendQueue::wait_event`] can wait on the device (the
    /// driver does not look for records to wait for otherwise).
    fn waits_on_device(&self) -> bool {
        false
    }

    /// Makes the work enqueued after this call wait, on the device, for
    /// `event` (a [`BackendQueue::record`] of this backend, on any of its
    /// queues) to complete: `cuStreamWaitEvent` without the host waiting.
    /// `Ok(false)` when the backend cannot (the default: the driver's
    /// stream thread then waits on the host).
    fn wait_event(&self, _event: &dyn BackendEvent) -> Result<bool, BackendError> {
        Ok(false)
    }

    /// Whether everything enqueued has completed without a fault (after a
    /// fault: `false`, and `synchronize` reports it).
    fn query(&self) -> bool;

    /// Waits for everything enqueued; the first fault since the last
    /// synchronisation, if any.
    fn synchronize(&self) -> Result<(), LaunchFault>;
}

/// A point in a [`BackendQueue`]: what [`BackendQueue::record`] returns
/// (`hipEvent_t` on HIP).
pub trait BackendEvent: Send + Sync {
    fn as_any(&self) -> &dyn std::any::Any;

    /// Whether the work before the record has completed.
    fn query(&self) -> bool;

    /// Milliseconds from this event to `end`, both completed and of the
    /// same backend; `None` when the backend cannot say.
    fn elapsed_ms(&self, end: &dyn BackendEvent) -> Option<f32>;
}

/// The queue of a backend that runs work where it is enqueued (the CPU,
/// whose kernels already use every core): each operation calls the
/// backend synchronously on the calling thread — the driver stream's
/// worker — so it has completed when it is enqueued, and events take their
/// time when recorded. This keeps such backends exactly as fast as
/// before queues existed.
pub struct ImmediateQueue {
    backend: Arc<dyn Backend>,
}

impl ImmediateQueue {
    pub fn new(backend: Arc<dyn Backend>) -> ImmediateQueue {
        ImmediateQueue { backend }
    }
}

/// The event of an [`ImmediateQueue`]: complete when recorded.
pub struct HostEvent {
    pub at: std::time::Instant,
}

impl BackendEvent for HostEvent {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn query(&self) -> bool {
        true
    }

    fn elapsed_ms(&self, end: &dyn BackendEvent) -> Option<f32> {
        let end = end.as_any().downcast_ref::<HostEvent>()?;
        let ms = if end.at >= self.at {
            end.at.duration_since(self.at).as_secs_f64() * 1e3
        } else {
            -(self.at.duration_since(end.at).as_secs_f64() * 1e3)
        };
        Some(ms as f32)
    }
}

impl BackendQueue for ImmediateQueue {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn copy_htod(&self, dst: DevicePtr, src: HostSrc) -> Result<(), BackendError> {
        // SAFETY: a borrowed source is valid until its stream reaches the
        // copy (the contract of `HostSrc::Borrowed`), which is now.
        self.backend.copy_htod(dst, unsafe { src.bytes() })
    }

    fn copy_dtoh(&self, dst: HostAddr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        // SAFETY: the destination is valid until the copy completes, now.
        let dst = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, len) };
        self.backend.copy_dtoh(dst, src)
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        self.backend.copy_dtod(dst, src, len)
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        self.backend.memset(dst, value, count)
    }

    fn launch(&self, module: &Arc<dyn BackendModule>, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        module.launch(kernel, launch)
    }

    fn record(&self) -> Result<Arc<dyn BackendEvent>, BackendError> {
        Ok(Arc::new(HostEvent { at: std::time::Instant::now() }))
    }

    fn query(&self) -> bool {
        true
    }

    fn synchronize(&self) -> Result<(), LaunchFault> {
        Ok(())
    }
}

/// A backend with no devices: what the driver runs on when the backend it
/// was asked for cannot start (`cuInit` then fails with
/// `CUDA_ERROR_NO_DEVICE`, as NVIDIA's driver on a machine without a GPU).
/// The driver calls nothing but `name` and `device_count` on it.
pub struct NoDevices;

impl Backend for NoDevices {
    fn name(&self) -> &str {
        "none"
    }
    fn device_count(&self) -> usize {
        0
    }
    fn device_props(&self, _device: usize) -> DeviceProps {
        DeviceProps::generic("none", crate::props::DEFAULT_COMPUTE_CAPABILITY)
    }
    fn mem_info(&self, _device: usize) -> (u64, u64) {
        (0, 0)
    }
    fn alloc(&self, _device: usize, _size: usize) -> Result<DevicePtr, BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn free(&self, _device: usize, _ptr: DevicePtr) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn alloc_host(&self, _size: usize, _flags: u32) -> Result<HostAllocation, BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn free_host(&self, _host: HostAddr) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn register_host(&self, _host: HostAddr, _size: usize, _flags: u32) -> Result<DevicePtr, BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn unregister_host(&self, _host: HostAddr) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn alloc_managed(&self, _device: usize, _size: usize) -> Result<DevicePtr, BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn free_managed(&self, _ptr: DevicePtr) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn copy_htod(&self, _dst: DevicePtr, _src: &[u8]) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn copy_dtoh(&self, _dst: &mut [u8], _src: DevicePtr) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn copy_dtod(&self, _dst: DevicePtr, _src: DevicePtr, _len: usize) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn memset(&self, _dst: DevicePtr, _value: MemsetValue, _count: usize) -> Result<(), BackendError> {
        Err(BackendError::NotSupported("no device".into()))
    }
    fn load_module(&self, _device: usize, _ptx: &str, _options: &ModuleOptions) -> Result<Arc<dyn BackendModule>, ModuleError> {
        Err(ModuleError { kind: ModuleErrorKind::Other, log: "no device".into() })
    }
}
