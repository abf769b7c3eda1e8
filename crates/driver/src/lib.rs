//! CUDA driver semantics over a [`Backend`].
//!
//! [`Driver`] implements what NVIDIA's driver API promises — devices and
//! their attributes, primary contexts and per-thread context stacks, memory
//! with its pointer attributes, modules and libraries, streams that run
//! asynchronously to the host with the legacy and per-thread default stream
//! rules, events, launches with their configuration checks, sticky kernel
//! faults — once, for every backend. It knows nothing of the C ABI: handles
//! are `u64`s ([`handle`]), errors are [`Error`]s, and the `libcuda` crate
//! turns both into what C callers expect.
//!
//! A backend ([`Backend`], [`BackendModule`]) only provides memory, code
//! loading and grid execution. [`mock::MockBackend`] is one in host memory
//! whose kernels are Rust closures, for tests.
//!
//! Configuration ([`Config::from_env`]):
//! - `ANYCUDA_DRIVER_VERSION`: what `cuDriverGetVersion` reports
//!   (default 13000: CUDA 13.x cudart needs at least that; it also caps the
//!   versions `cuGetProcAddress` serves).
//! - `ANYCUDA_COMPUTE_CAPABILITY`: the compute capability of CPU devices
//!   (default 8.6, see [`props::DEFAULT_COMPUTE_CAPABILITY`]).
//! - `ANYCUDA_PTX_POLICY`: `strict` (NVIDIA's rule: PTX for an architecture
//!   at or below the device's), `nearest` (default: NVIDIA's pick when there
//!   is one, else the closest newer PTX, so programs built only for newer
//!   GPUs still load) or `any`.
//! - `CUDA_MODULE_LOADING`: `LAZY` (default) or `EAGER`, as with NVIDIA's
//!   driver (what `cuModuleGetLoadingMode` reports).

// Entry points mirror the C API's argument lists.
#![allow(clippy::too_many_arguments)]

pub mod backend;
mod callback;
mod capture;
mod context;
mod error;
mod event;
mod graph;
mod graph_exec;
pub mod handle;
pub mod ipc;
mod launch;
mod memory;
pub mod mock;
mod module;
pub mod peer;
pub mod props;
mod stream;
mod stream_api;
pub mod stream_attr;
pub mod texture;
mod vmm;

#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod queue_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_callback;
#[cfg(test)]
mod texture_tests;
#[cfg(test)]
mod vmm_tests;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use backend::{
    Backend, BackendError, BackendEvent, BackendModule, BackendQueue, DevicePtr, GlobalDesc, HostAddr, HostAllocation, HostEvent, HostSrc,
    ImmediateQueue, KernelDesc, LaunchFault, LaunchParams, MemsetValue, ModuleError, ModuleErrorKind, ModuleOptions, ParamDesc, VmmAccess,
};
pub use callback::in_callback;
pub use capture::{CaptureInfo, CaptureStatus, CAPTURE_MODE_GLOBAL, CAPTURE_MODE_RELAXED, CAPTURE_MODE_THREAD_LOCAL};
pub use context::{ClsDtor, Context, PrimaryState};
pub use error::{Error, Result};
pub use event::Event;
pub use graph::{HostFn, KernelNodeInfo, KernelNodeSpec, MemAllocSpec, MemsetSpec, NodeInfo, NodeInfoIn};
pub use graph_exec::{
    InstantiateFailure, UpdateFailure, INSTANTIATE_AUTO_FREE_ON_LAUNCH, INSTANTIATE_DEVICE_LAUNCH, INSTANTIATE_UPLOAD,
    INSTANTIATE_USE_NODE_PRIORITY,
};
pub use handle::{handle_kind, HandleKind};
pub use launch::{blocks_per_sm, default_func_attribute, func_max_threads};
pub use launch::{FuncAttribute, KernelArgs, LaunchConfig};
pub use memory::{MemLoc, Memcpy2D, Memcpy3D, MemoryType, PointerAttribute, PointerInfo, PoolAttribute};
pub use module::{JitLog, LoadedImage, ModuleSource};
pub use props::DeviceProps;
pub use stream::{Stream, StreamKind};
pub use vmm::{access_flags, access_from_flags, VmmProp, HANDLE_TYPE_POSIX_FD};

use handle::{HandleKind as K, Registry};

/// Driver-wide settings, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// What `cuDriverGetVersion` reports (1000 * major + 10 * minor).
    pub driver_version: i32,
    /// How a fatbin's PTX entry is chosen for a device.
    pub ptx_policy: fatbin::Policy,
    /// `cuModuleGetLoadingMode`'s answer; eager loading also compiles every
    /// library for the current device when it is loaded.
    pub lazy_loading: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            // The API level implemented: CUDA 13.5's driver API. Runtimes
            // check driverVersion >= runtimeVersion.
            driver_version: 13050,
            ptx_policy: fatbin::Policy::Nearest,
            lazy_loading: true,
        }
    }
}

impl Config {
    /// The defaults, overridden by the environment variables listed in the
    /// [crate documentation](crate).
    pub fn from_env() -> Config {
        let mut c = Config::default();
        if let Some(v) = std::env::var("ANYCUDA_DRIVER_VERSION").ok().and_then(|v| v.trim().parse::<i32>().ok()).filter(|v| *v >= 2000) {
            c.driver_version = v;
        }
        if let Ok(p) = std::env::var("ANYCUDA_PTX_POLICY") {
            match p.trim().to_ascii_lowercase().as_str() {
                "strict" => c.ptx_policy = fatbin::Policy::Strict,
                "any" => c.ptx_policy = fatbin::Policy::Any,
                _ => c.ptx_policy = fatbin::Policy::Nearest,
            }
        }
        if let Ok(m) = std::env::var("CUDA_MODULE_LOADING") {
            c.lazy_loading = !m.trim().eq_ignore_ascii_case("EAGER");
        }
        c
    }
}

static NEXT_DRIVER_ID: AtomicU64 = AtomicU64::new(1);

/// One instance of the driver: the state behind every handle.
pub struct Driver {
    id: u64,
    backend: Arc<dyn Backend>,
    config: Config,
    initialized: AtomicBool,
    devices: OnceLock<Vec<DeviceProps>>,
    primaries: OnceLock<Vec<Arc<Context>>>,
    init_lock: Mutex<()>,
    contexts: Registry<Context>,
    streams: Registry<Stream>,
    events: Registry<Event>,
    modules: Registry<module::Module>,
    functions: Registry<module::Function>,
    libraries: Registry<module::Library>,
    kernels: Registry<module::Kernel>,
    pools: Registry<memory::MemPool>,
    links: Registry<module::LinkState>,
    mem: memory::MemTable,
    default_pools: OnceLock<Vec<u64>>,
    current_pools: Mutex<Vec<u64>>,
    vmm: Mutex<vmm::VmmState>,
    graphs: Registry<graph::Graph>,
    graph_nodes: Registry<graph::NodeRef>,
    graph_execs: Registry<graph_exec::GraphExec>,
    /// Kernel node arguments handed out by `cuGraphKernelNodeGetParams`.
    exposed_args: Mutex<std::collections::HashMap<u64, graph::ExposedArgs>>,
    /// Cloned node -> the node it was cloned from.
    clone_origins: Mutex<std::collections::HashMap<u64, u64>>,
    /// Memory of allocation nodes.
    graph_mem: Mutex<Vec<Arc<graph::GraphMem>>>,
    /// Capture sequences in progress, and how many.
    captures: Mutex<Vec<Arc<capture::Capture>>>,
    active_captures: AtomicUsize,
    /// High-water marks of graph memory: used, reserved.
    graph_mem_high: [AtomicU64; 2],
    /// CUDA arrays, texture and surface objects.
    textures: texture::State,
    /// Interprocess memory handles opened here.
    ipc: ipc::Imports,
    /// Attributes set on streams.
    stream_attrs: stream_attr::StreamAttrs,
    /// How many contexts of each device have peer access to a context of
    /// each other device (`peer::PeerLinks`).
    peer_links: peer::PeerLinks,
}

impl Driver {
    pub fn new(backend: Arc<dyn Backend>, config: Config) -> Driver {
        Driver {
            id: NEXT_DRIVER_ID.fetch_add(1, Ordering::Relaxed),
            backend,
            config,
            initialized: AtomicBool::new(false),
            devices: OnceLock::new(),
            primaries: OnceLock::new(),
            init_lock: Mutex::new(()),
            contexts: Registry::new(K::Context),
            streams: Registry::new(K::Stream),
            events: Registry::new(K::Event),
            modules: Registry::new(K::Module),
            functions: Registry::new(K::Function),
            libraries: Registry::new(K::Library),
            kernels: Registry::new(K::Kernel),
            pools: Registry::new(K::MemPool),
            links: Registry::new(K::LinkState),
            mem: memory::MemTable::default(),
            default_pools: OnceLock::new(),
            current_pools: Mutex::new(Vec::new()),
            vmm: Mutex::new(vmm::VmmState::default()),
            graphs: Registry::new(K::Graph),
            graph_nodes: Registry::new(K::GraphNode),
            graph_execs: Registry::new(K::GraphExec),
            exposed_args: Mutex::new(std::collections::HashMap::new()),
            clone_origins: Mutex::new(std::collections::HashMap::new()),
            graph_mem: Mutex::new(Vec::new()),
            captures: Mutex::new(Vec::new()),
            active_captures: AtomicUsize::new(0),
            graph_mem_high: [AtomicU64::new(0), AtomicU64::new(0)],
            textures: texture::State::default(),
            ipc: ipc::Imports::default(),
            stream_attrs: stream_attr::StreamAttrs::default(),
            peer_links: peer::PeerLinks::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The backend queue of a new stream on `device`.
    pub(crate) fn new_queue(&self, device: usize, priority: i32) -> Result<Arc<dyn BackendQueue>> {
        match self.backend.create_queue(device, priority) {
            Ok(Some(q)) => Ok(q),
            Ok(None) => Ok(Arc::new(ImmediateQueue::new(self.backend.clone()))),
            Err(e) => Err(memory::backend_err(e)),
        }
    }

    /// `cuDriverGetVersion`; needs no `cuInit`.
    pub fn driver_version(&self) -> i32 {
        self.config.driver_version
    }

    /// `cuInit(flags)`: flags must be 0. Idempotent.
    pub fn init(&self, flags: u32) -> Result<()> {
        if flags != 0 {
            return Err(Error::invalid(format!("cuInit flags must be 0, got {flags}")));
        }
        let _g = handle::lock(&self.init_lock);
        if self.initialized.load(Ordering::Acquire) {
            return Ok(());
        }
        let n = self.backend.device_count();
        if n == 0 {
            // As NVIDIA's driver on a machine without a GPU.
            return Err(Error::NoDevice);
        }
        let devices: Vec<DeviceProps> = (0..n).map(|d| self.backend.device_props(d)).collect();
        let primaries = (0..n).map(|d| context::Context::create(self, d, 0, true)).collect::<Result<Vec<_>>>()?;
        let pools = (0..n).map(|d| self.create_pool_internal(d)).collect();
        let _ = self.devices.set(devices);
        let _ = self.primaries.set(primaries);
        let _ = self.default_pools.set(pools);
        *handle::lock(&self.current_pools) = self.default_pools.get().cloned().unwrap_or_default();
        self.initialized.store(true, Ordering::Release);
        Ok(())
    }

    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    pub(crate) fn check_init(&self) -> Result<()> {
        if self.is_initialized() {
            Ok(())
        } else {
            Err(Error::NotInitialized)
        }
    }

    fn devices(&self) -> &[DeviceProps] {
        self.devices.get().map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// `cuDeviceGetCount`.
    pub fn device_count(&self) -> Result<i32> {
        self.check_init()?;
        Ok(self.devices().len() as i32)
    }

    /// `cuDeviceGet`: the ordinal itself, once checked.
    pub fn device_get(&self, ordinal: i32) -> Result<i32> {
        self.device_props(ordinal).map(|_| ordinal)
    }

    /// The description of device `dev`.
    pub fn device_props(&self, dev: i32) -> Result<&DeviceProps> {
        self.check_init()?;
        usize::try_from(dev).ok().and_then(|d| self.devices().get(d)).ok_or(Error::InvalidDevice(dev as i64))
    }

    /// `cuDeviceGetAttribute`.
    pub fn device_attribute(&self, attr: cuda_types::CUdevice_attribute, dev: i32) -> Result<i32> {
        let p = self.device_props(dev)?;
        p.attribute(attr).ok_or_else(|| Error::invalid(format!("unknown device attribute {}", attr.0)))
    }

    /// `cuDeviceGetByPCIBusId`: `[domain:]bus:device[.function]`, hex.
    pub fn device_by_pci_bus_id(&self, id: &str) -> Result<i32> {
        self.check_init()?;
        let parse = |s: &str| u32::from_str_radix(s.trim(), 16).ok();
        let id = id.trim();
        let (head, _function) = id.rsplit_once('.').unwrap_or((id, "0"));
        let parts: Vec<&str> = head.split(':').collect();
        let (domain, bus, dev) = match parts.as_slice() {
            [d, b, v] => (parse(d), parse(b), parse(v)),
            [b, v] => (Some(0), parse(b), parse(v)),
            _ => (None, None, None),
        };
        let (Some(domain), Some(bus), Some(dev)) = (domain, bus, dev) else {
            return Err(Error::invalid(format!("malformed PCI bus id {id:?}")));
        };
        self.devices()
            .iter()
            .position(|p| p.pci_domain == domain && p.pci_bus == bus && p.pci_device == dev)
            .map(|i| i as i32)
            .ok_or(Error::InvalidDevice(-1))
    }

    /// `cuMemGetInfo` for the current context's device.
    pub fn mem_get_info(&self) -> Result<(u64, u64)> {
        let ctx = self.current_ctx()?;
        Ok(self.backend.mem_info(ctx.device))
    }

    /// `cuModuleGetLoadingMode`.
    pub fn module_loading_lazy(&self) -> Result<bool> {
        self.check_init()?;
        Ok(self.config.lazy_loading)
    }
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").field("backend", &self.backend.name()).field("initialized", &self.is_initialized()).finish()
    }
}
