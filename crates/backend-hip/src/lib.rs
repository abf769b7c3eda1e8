//! AMD GPUs as a driver backend, through the HIP runtime.
//!
//! The runtime (`libamdhip64.so`, ROCm 6 or 7; ROCm 5 with
//! `ANYCUDA_HIP_ARCH`) is loaded when the backend starts ([`api`]);
//! nothing of ROCm is needed to build anycuda. Every HIP device is a CUDA
//! device (warp size 32 whatever the wavefront size: a CUDA warp is half a
//! wave64). Kernels come from the shared JIT (`crates/jit`) compiled for
//! the device's processor (`gcnArchName`, with its features). Code
//! objects cannot share variables, so a module's variables are one code
//! object, the shared unit, loaded with `hipModuleLoadData` when the
//! module is loaded (its variables need addresses then), with a table of
//! their addresses whose address every launch passes in the kernarg tail
//! (`compiler::Partition::variable_table`); every kernel is a code object
//! of its own, compiled and loaded at its first launch, as on the CPU
//! (the JIT compiles the module's other kernels in the background
//! meanwhile; `compiler::partition`). Where the table cannot serve the
//! module (texture references, `.extern` variables, function addresses
//! in initialisers), the kernels that name variables (in their code or in
//! functions they call) are in the shared unit's code object instead.
//!
//! This layer is thin: memory, module loading and synchronous copies map
//! to HIP calls. Each driver stream has a queue ([`HipQueue`]): a HIP
//! stream created non-blocking (the driver orders its streams itself, the
//! legacy stream included, so HIP's null stream must not add implicit
//! synchronisation), on which the driver's stream worker enqueues copies
//! (`hipMemcpyAsync`), memsets (`hipMemsetD*Async`), launches
//! (`hipModuleLaunchKernel`) and event records (`hipEventRecord`), so the
//! GPU runs them back to back, asynchronously to the host. Stream and
//! event semantics (ordering between streams, the legacy stream, host
//! functions, callbacks, capture and graphs) are the driver's, the same as
//! on the CPU; host functions run on the driver's stream thread once the
//! queue has drained (ROCm 5.2 has no `hipLaunchHostFunc`).

pub mod api;
mod heap;
mod printf;

use std::any::Any;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex, OnceLock};

use driver::backend::{
    Backend, BackendError, BackendEvent, BackendModule, BackendQueue, DevicePtr, GlobalDesc, HostAddr, HostAllocation, HostSrc, KernelDesc,
    LaunchFault, LaunchParams, MemsetValue, ModuleError, ModuleErrorKind, ModuleOptions,
};
use driver::props::DeviceProps;

use api::{attr, Hip};

/// One HIP device as anycuda sees it.
struct Device {
    props: DeviceProps,
    /// The compiler's target for this device (`gfx90a:sramecc+:xnack-`).
    arch: String,
    jit: Arc<jit::Jit>,
}

/// The HIP backend: every device of the loaded runtime.
pub struct HipBackend {
    hip: Arc<Hip>,
    devices: Vec<Device>,
    /// Host allocations made with `hipHostMalloc`: host address -> device address.
    host: Mutex<HashMap<usize, u64>>,
    /// Each device's device-printf records.
    printf: Arc<printf::PrintfBuffers>,
    /// Each device's heap for device `malloc`.
    heaps: Arc<heap::DeviceHeaps>,
}

/// Why the backend cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the HIP runtime cannot be loaded: {0}")]
    NoRuntime(String),
    #[error("the HIP runtime has no device: {0}")]
    NoDevice(String),
}

fn name_from(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl HipBackend {
    /// Loads the runtime and describes its devices.
    pub fn start() -> Result<HipBackend, StartError> {
        let hip = Hip::load().map_err(StartError::NoRuntime)?;
        // SAFETY: plain calls with valid out-pointers.
        unsafe {
            hip.check((hip.init)(0), "hipInit").map_err(StartError::NoDevice)?;
            let mut version = 0;
            if (hip.runtime_get_version)(&mut version) == api::HIP_SUCCESS {
                tracing::debug!("HIP runtime version {version}");
            }
            let mut n = 0;
            hip.check((hip.get_device_count)(&mut n), "hipGetDeviceCount").map_err(StartError::NoDevice)?;
            if n <= 0 {
                return Err(StartError::NoDevice("hipGetDeviceCount reports 0 devices".into()));
            }
            let mut devices = Vec::new();
            for d in 0..n {
                devices.push(describe(&hip, d).map_err(StartError::NoDevice)?);
            }
            let hip = Arc::new(hip);
            let printf = Arc::new(printf::PrintfBuffers::new(hip.clone(), devices.len()));
            let heaps = Arc::new(heap::DeviceHeaps::new(hip.clone(), devices.len()));
            Ok(HipBackend { hip, devices, host: Mutex::new(HashMap::new()), printf, heaps })
        }
    }

    /// The compiler target of device `d`.
    pub fn arch(&self, d: usize) -> Option<&str> {
        self.devices.get(d).map(|x| x.arch.as_str())
    }

    fn set_device(&self, d: usize) -> Result<(), BackendError> {
        // SAFETY: a plain call; the driver checked the index.
        let e = unsafe { (self.hip.set_device)(d as i32) };
        self.hip.check(e, "hipSetDevice").map_err(BackendError::Other)
    }

    fn mem_error(&self, e: api::HipError, what: &str, size: usize) -> BackendError {
        if e == api::HIP_ERROR_OUT_OF_MEMORY {
            BackendError::OutOfMemory(size)
        } else {
            BackendError::Other(format!("{what}: {}", self.hip.error_string(e)))
        }
    }
}

/// The description of HIP device `d`.
///
/// # Safety
/// `hip` must be an initialised runtime and `d` one of its devices.
unsafe fn describe(hip: &Hip, d: i32) -> Result<Device, String> {
    let get = |a: i32| -> i32 {
        let mut v = 0;
        // SAFETY: valid out-pointer.
        if unsafe { (hip.device_get_attribute)(&mut v, a, d) } == api::HIP_SUCCESS {
            v
        } else {
            0
        }
    };
    let mut name = [0u8; 256];
    // SAFETY: the buffer is as long as we say.
    unsafe { hip.check((hip.device_get_name)(name.as_mut_ptr().cast(), name.len() as i32, d), "hipDeviceGetName")? };
    let mut total = 0usize;
    // SAFETY: valid out-pointer.
    unsafe { hip.check((hip.device_total_mem)(&mut total, d), "hipDeviceTotalMem")? };
    let mut uuid = [0u8; 16];
    let arch = match (std::env::var("ANYCUDA_HIP_ARCH"), hip.get_device_properties_r0600) {
        (Ok(a), _) if !a.is_empty() => a,
        (_, Some(props)) => {
            let mut buf = vec![0u8; api::props_r0600::BUFFER];
            // SAFETY: the buffer is larger than the struct.
            unsafe { hip.check(props(buf.as_mut_ptr(), d), "hipGetDevicePropertiesR0600")? };
            uuid.copy_from_slice(&buf[api::props_r0600::UUID..api::props_r0600::UUID + 16]);
            name_from(&buf[api::props_r0600::GCN_ARCH_NAME..api::props_r0600::GCN_ARCH_NAME + 256])
        }
        (_, None) => return Err("this HIP runtime predates ROCm 6 (no hipGetDevicePropertiesR0600): set ANYCUDA_HIP_ARCH to the device's gcnArchName (e.g. gfx90a)".into()),
    };
    let target = compiler::Target::Amdgpu { arch: arch.clone() };
    if compiler::target_fingerprint(&target).ends_with("|invalid") {
        return Err(format!("device {d} is `{arch}`, a processor this compiler does not know"));
    }
    let cc = driver::props::compute_capability_from_env().unwrap_or(driver::props::DEFAULT_COMPUTE_CAPABILITY);
    let mut props = DeviceProps::generic(&name_from(&name), cc);
    props.total_mem = total as u64;
    props.uuid = uuid;
    let positive = |v: i32, default: u32| if v > 0 { v as u32 } else { default };
    props.multiprocessor_count = positive(get(attr::MULTIPROCESSOR_COUNT), 1);
    props.clock_rate_khz = positive(get(attr::CLOCK_RATE), props.clock_rate_khz);
    props.memory_clock_rate_khz = positive(get(attr::MEMORY_CLOCK_RATE), props.memory_clock_rate_khz);
    props.memory_bus_width = positive(get(attr::MEMORY_BUS_WIDTH), props.memory_bus_width);
    props.l2_cache_size = positive(get(attr::L2_CACHE_SIZE), props.l2_cache_size);
    props.max_threads_per_block = positive(get(attr::MAX_THREADS_PER_BLOCK), 1024).min(1024);
    props.max_threads_per_multiprocessor = positive(get(attr::MAX_THREADS_PER_MULTIPROCESSOR), props.max_threads_per_multiprocessor);
    let lds = positive(get(attr::MAX_SHARED_MEMORY_PER_BLOCK), 65536);
    props.shared_mem_per_block = lds.min(49152);
    props.shared_mem_per_block_optin = lds;
    props.shared_mem_per_multiprocessor = props.shared_mem_per_multiprocessor.max(lds);
    props.reserved_shared_mem_per_block = 0;
    props.pci_bus = get(attr::PCI_BUS_ID).max(0) as u32;
    props.pci_device = get(attr::PCI_DEVICE_ID).max(0) as u32;
    props.pci_domain = get(attr::PCI_DOMAIN_ID).max(0) as u32;
    props.integrated = get(attr::INTEGRATED) != 0;
    props.managed_memory = get(attr::MANAGED_MEMORY) != 0;
    // Cooperative launches need `hipModuleLaunchCooperativeKernel` (ROCm 6).
    props.cooperative_launch = hip.module_launch_cooperative_kernel.is_some() && get(attr::COOPERATIVE_LAUNCH) != 0;
    props.concurrent_kernels = get(attr::CONCURRENT_KERNELS) != 0;
    // A CUDA warp is 32 lanes on every AMD GPU (half a wave64).
    props.warp_size = 32;
    let jit = jit::Jit::new(target, jit::JitConfig::from_env());
    tracing::info!("HIP device {d}: {} ({arch})", props.name);
    Ok(Device { props, arch, jit })
}

impl Backend for HipBackend {
    fn name(&self) -> &str {
        "hip"
    }

    fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn device_props(&self, device: usize) -> DeviceProps {
        self.devices.get(device).map(|d| d.props.clone()).unwrap_or_else(|| DeviceProps::generic("missing", (8, 6)))
    }

    fn mem_info(&self, device: usize) -> (u64, u64) {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        if self.set_device(device).is_ok() && unsafe { (self.hip.mem_get_info)(&mut free, &mut total) } == api::HIP_SUCCESS {
            (free as u64, total as u64)
        } else {
            (0, self.device_props(device).total_mem)
        }
    }

    fn can_access_peer(&self, device: usize, peer: usize) -> bool {
        let mut can = 0;
        // SAFETY: valid out-pointer; the driver checked both indices.
        let e = unsafe { (self.hip.device_can_access_peer)(&mut can, device as i32, peer as i32) };
        e == api::HIP_SUCCESS && can != 0
    }

    fn enable_peer_access(&self, device: usize, peer: usize) -> Result<(), BackendError> {
        self.set_device(device)?;
        // SAFETY: a plain call on the current device.
        let e = unsafe { (self.hip.device_enable_peer_access)(peer as i32, 0) };
        if e == api::HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            // Enabled outside anycuda (another library of the process).
            return Ok(());
        }
        self.hip.check(e, &format!("hipDeviceEnablePeerAccess (device {device} to {peer})")).map_err(|m| {
            tracing::error!("{m}");
            BackendError::Other(m)
        })
    }

    fn disable_peer_access(&self, device: usize, peer: usize) -> Result<(), BackendError> {
        self.set_device(device)?;
        // SAFETY: a plain call on the current device.
        let e = unsafe { (self.hip.device_disable_peer_access)(peer as i32) };
        if e == api::HIP_ERROR_PEER_ACCESS_NOT_ENABLED {
            return Ok(());
        }
        self.hip.check(e, &format!("hipDeviceDisablePeerAccess (device {device} to {peer})")).map_err(|m| {
            tracing::error!("{m}");
            BackendError::Other(m)
        })
    }

    fn alloc(&self, device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.set_device(device)?;
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let e = unsafe { (self.hip.malloc)(&mut p, size) };
        if e != api::HIP_SUCCESS {
            return Err(self.mem_error(e, "hipMalloc", size));
        }
        Ok(p as DevicePtr)
    }

    fn free(&self, _device: usize, ptr: DevicePtr) -> Result<(), BackendError> {
        // SAFETY: the driver frees only what `alloc` returned.
        let e = unsafe { (self.hip.free)(ptr as *mut c_void) };
        self.hip.check(e, "hipFree").map_err(BackendError::Other)
    }

    fn alloc_host(&self, size: usize, _flags: u32) -> Result<HostAllocation, BackendError> {
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let e = unsafe { (self.hip.host_malloc)(&mut p, size, api::HOST_MALLOC_MAPPED) };
        if e != api::HIP_SUCCESS {
            return Err(self.mem_error(e, "hipHostMalloc", size));
        }
        let mut d = std::ptr::null_mut();
        // SAFETY: `p` is mapped host memory.
        let e = unsafe { (self.hip.host_get_device_pointer)(&mut d, p, 0) };
        let device = if e == api::HIP_SUCCESS { d as u64 } else { p as u64 };
        if let Ok(mut h) = self.host.lock() {
            h.insert(p as usize, device);
        }
        Ok(HostAllocation { host: p as HostAddr, device })
    }

    fn free_host(&self, host: HostAddr) -> Result<(), BackendError> {
        if let Ok(mut h) = self.host.lock() {
            h.remove(&host);
        }
        // SAFETY: the driver frees only what `alloc_host` returned.
        let e = unsafe { (self.hip.host_free)(host as *mut c_void) };
        self.hip.check(e, "hipHostFree").map_err(BackendError::Other)
    }

    fn register_host(&self, host: HostAddr, size: usize, _flags: u32) -> Result<DevicePtr, BackendError> {
        // SAFETY: the driver checked the range is the caller's memory.
        let e = unsafe { (self.hip.host_register)(host as *mut c_void, size, api::HOST_REGISTER_MAPPED) };
        if e != api::HIP_SUCCESS {
            return Err(self.mem_error(e, "hipHostRegister", size));
        }
        let mut d = std::ptr::null_mut();
        // SAFETY: `host` is registered.
        let e = unsafe { (self.hip.host_get_device_pointer)(&mut d, host as *mut c_void, 0) };
        Ok(if e == api::HIP_SUCCESS { d as u64 } else { host as u64 })
    }

    fn unregister_host(&self, host: HostAddr) -> Result<(), BackendError> {
        // SAFETY: the driver unregisters only what it registered.
        let e = unsafe { (self.hip.host_unregister)(host as *mut c_void) };
        self.hip.check(e, "hipHostUnregister").map_err(BackendError::Other)
    }

    fn alloc_managed(&self, device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.set_device(device)?;
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let e = unsafe { (self.hip.malloc_managed)(&mut p, size, api::MEM_ATTACH_GLOBAL) };
        if e != api::HIP_SUCCESS {
            return Err(self.mem_error(e, "hipMallocManaged", size));
        }
        Ok(p as DevicePtr)
    }

    fn free_managed(&self, ptr: DevicePtr) -> Result<(), BackendError> {
        // SAFETY: as for `free`.
        let e = unsafe { (self.hip.free)(ptr as *mut c_void) };
        self.hip.check(e, "hipFree").map_err(BackendError::Other)
    }

    fn copy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError> {
        // SAFETY: the driver checked the destination range.
        let e = unsafe { (self.hip.memcpy)(dst as *mut c_void, src.as_ptr().cast(), src.len(), api::MEMCPY_HOST_TO_DEVICE) };
        self.hip.check(e, "hipMemcpy").map_err(BackendError::Other)
    }

    fn copy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<(), BackendError> {
        // SAFETY: the driver checked the source range.
        let e = unsafe { (self.hip.memcpy)(dst.as_mut_ptr().cast(), src as *const c_void, dst.len(), api::MEMCPY_DEVICE_TO_HOST) };
        self.hip.check(e, "hipMemcpy").map_err(BackendError::Other)
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        // SAFETY: the driver checked both ranges.
        let e = unsafe { (self.hip.memcpy)(dst as *mut c_void, src as *const c_void, len, api::MEMCPY_DEVICE_TO_DEVICE) };
        self.hip.check(e, "hipMemcpy").map_err(BackendError::Other)
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        let p = dst as *mut c_void;
        // SAFETY: the driver checked the range.
        let e = unsafe {
            match value {
                MemsetValue::U8(v) => (self.hip.memset_d8)(p, v, count),
                MemsetValue::U16(v) => (self.hip.memset_d16)(p, v, count),
                MemsetValue::U32(v) => (self.hip.memset_d32)(p, v as i32, count),
            }
        };
        self.hip.check(e, "hipMemset").map_err(BackendError::Other)
    }

    fn create_queue(&self, device: usize, priority: i32) -> Result<Option<Arc<dyn BackendQueue>>, BackendError> {
        self.set_device(device)?;
        let mut stream = std::ptr::null_mut();
        // SAFETY: valid out-pointer; HIP clamps the priority to its range.
        let e = unsafe { (self.hip.stream_create_with_priority)(&mut stream, api::STREAM_NON_BLOCKING, priority) };
        if e != api::HIP_SUCCESS {
            return Err(self.mem_error(e, "hipStreamCreateWithPriority", 0));
        }
        Ok(Some(Arc::new(HipQueue { hip: self.hip.clone(), device, stream, keep: Mutex::new(Vec::new()), printf: self.printf.clone() })))
    }

    fn load_module(&self, device: usize, ptx: &str, options: &ModuleOptions) -> Result<Arc<dyn BackendModule>, ModuleError> {
        let dev = self.devices.get(device).ok_or_else(|| other(format!("no HIP device {device}")))?;
        self.set_device(device).map_err(|e| other(e.to_string()))?;
        HipModule::load(self.hip.clone(), self.printf.clone(), self.heaps.clone(), device, &dev.jit, ptx, options)
            .map(|m| Arc::new(m) as Arc<dyn BackendModule>)
    }
}

/// The fault a failed launch or synchronisation reports.
fn fault(hip: &Hip, e: api::HipError) -> LaunchFault {
    match e {
        api::HIP_ERROR_ILLEGAL_ADDRESS => LaunchFault::IllegalAddress { address: 0, detail: hip.error_string(e) },
        api::HIP_ERROR_ASSERT => LaunchFault::Assert(hip.error_string(e)),
        api::HIP_ERROR_LAUNCH_TIMEOUT => LaunchFault::Timeout(hip.error_string(e)),
        api::HIP_ERROR_LAUNCH_OUT_OF_RESOURCES => LaunchFault::OutOfResources(hip.error_string(e)),
        _ => LaunchFault::Failed(hip.error_string(e)),
    }
}

/// A driver stream's queue: a non-blocking HIP stream.
pub struct HipQueue {
    hip: Arc<Hip>,
    device: usize,
    stream: api::Stream,
    /// What enqueued work needs alive until it completes: owned copy
    /// sources, the modules of launches (a module must not be unloaded
    /// under a running kernel). Dropped once the stream is known idle.
    keep: Mutex<Vec<Box<dyn Any + Send + Sync>>>,
    /// Device printf's records, printed when the queue is synchronised.
    printf: Arc<printf::PrintfBuffers>,
}

// SAFETY: HIP streams may be used from any thread; the driver enqueues
// from one thread at a time.
unsafe impl Send for HipQueue {}
// SAFETY: as above.
unsafe impl Sync for HipQueue {}

impl HipQueue {
    /// The HIP stream (for tests and diagnostics).
    pub fn stream(&self) -> api::Stream {
        self.stream
    }

    fn keep(&self, what: Box<dyn Any + Send + Sync>) {
        if let Ok(mut k) = self.keep.lock() {
            k.push(what);
        }
    }

    fn idle(&self) {
        if let Ok(mut k) = self.keep.lock() {
            k.clear();
        }
    }

    fn copy(&self, dst: *mut c_void, src: *const c_void, len: usize, kind: i32) -> Result<(), BackendError> {
        // SAFETY: the driver checked the device ranges; host ranges stay
        // valid until the copy completes (see `BackendQueue`).
        let e = unsafe { (self.hip.memcpy_async)(dst, src, len, kind, self.stream) };
        self.hip.check(e, "hipMemcpyAsync").map_err(BackendError::Other)
    }
}

impl Drop for HipQueue {
    fn drop(&mut self) {
        // SAFETY: the stream is ours; its work finishes before it goes.
        unsafe {
            let _ = (self.hip.stream_synchronize)(self.stream);
            let _ = (self.hip.stream_destroy)(self.stream);
        }
    }
}

/// A HIP event recorded on a [`HipQueue`].
pub struct HipEvent {
    hip: Arc<Hip>,
    event: api::Event,
}

// SAFETY: HIP events may be used from any thread.
unsafe impl Send for HipEvent {}
// SAFETY: as above.
unsafe impl Sync for HipEvent {}

impl Drop for HipEvent {
    fn drop(&mut self) {
        // SAFETY: the event is ours.
        let _ = unsafe { (self.hip.event_destroy)(self.event) };
    }
}

impl BackendEvent for HipEvent {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn query(&self) -> bool {
        // SAFETY: a live event.
        unsafe { (self.hip.event_query)(self.event) != api::HIP_ERROR_NOT_READY }
    }

    fn elapsed_ms(&self, end: &dyn BackendEvent) -> Option<f32> {
        let end = end.as_any().downcast_ref::<HipEvent>()?;
        let mut ms = 0f32;
        // SAFETY: two live events of this runtime, both recorded.
        let e = unsafe { (self.hip.event_elapsed_time)(&mut ms, self.event, end.event) };
        (e == api::HIP_SUCCESS).then_some(ms)
    }
}

impl BackendQueue for HipQueue {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn copy_htod(&self, dst: DevicePtr, src: HostSrc) -> Result<(), BackendError> {
        self.copy(dst as *mut c_void, src.as_ptr().cast(), src.len(), api::MEMCPY_HOST_TO_DEVICE)?;
        if let HostSrc::Owned(bytes) = src {
            self.keep(Box::new(bytes));
        }
        Ok(())
    }

    fn copy_dtoh(&self, dst: HostAddr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        self.copy(dst as *mut c_void, src as *const c_void, len, api::MEMCPY_DEVICE_TO_HOST)
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        self.copy(dst as *mut c_void, src as *const c_void, len, api::MEMCPY_DEVICE_TO_DEVICE)
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        let p = dst as *mut c_void;
        // SAFETY: the driver checked the range.
        let e = unsafe {
            match value {
                MemsetValue::U8(v) => (self.hip.memset_d8_async)(p, v, count, self.stream),
                MemsetValue::U16(v) => (self.hip.memset_d16_async)(p, v, count, self.stream),
                MemsetValue::U32(v) => (self.hip.memset_d32_async)(p, v as i32, count, self.stream),
            }
        };
        self.hip.check(e, "hipMemsetAsync").map_err(BackendError::Other)
    }

    fn launch(&self, module: &Arc<dyn BackendModule>, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        module.enqueue_launch(self, kernel, launch)?;
        self.keep(Box::new(module.clone()));
        Ok(())
    }

    fn record(&self) -> Result<Arc<dyn BackendEvent>, BackendError> {
        // An event belongs to the calling thread's current device.
        // SAFETY: a plain call.
        let e = unsafe { (self.hip.set_device)(self.device as i32) };
        self.hip.check(e, "hipSetDevice").map_err(BackendError::Other)?;
        let mut event = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let e = unsafe { (self.hip.event_create_with_flags)(&mut event, api::EVENT_DEFAULT) };
        self.hip.check(e, "hipEventCreateWithFlags").map_err(BackendError::Other)?;
        let ev = HipEvent { hip: self.hip.clone(), event };
        // SAFETY: a live event and stream.
        let e = unsafe { (self.hip.event_record)(event, self.stream) };
        self.hip.check(e, "hipEventRecord").map_err(BackendError::Other)?;
        Ok(Arc::new(ev))
    }

    fn waits_on_device(&self) -> bool {
        true
    }

    fn wait_event(&self, event: &dyn BackendEvent) -> Result<bool, BackendError> {
        let Some(event) = event.as_any().downcast_ref::<HipEvent>() else { return Ok(false) };
        // SAFETY: a live stream and a live, recorded event of this runtime
        // (the caller holds it); HIP waits for the record made before the
        // call, across devices too.
        let e = unsafe { (self.hip.stream_wait_event)(self.stream, event.event, 0) };
        self.hip.check(e, "hipStreamWaitEvent").map_err(|m| {
            // The driver's stream thread waits on the host instead.
            tracing::warn!("{m}; waiting on the host");
            BackendError::Other(m)
        })?;
        Ok(true)
    }

    fn query(&self) -> bool {
        // SAFETY: a live stream.
        let e = unsafe { (self.hip.stream_query)(self.stream) };
        // Not done, or failed (`synchronize` reports the failure).
        if e != api::HIP_SUCCESS {
            return false;
        }
        self.idle();
        // The driver's synchronisations end with a query that finds the
        // queue idle: device printf's output and failed assertions are
        // taken here too (waiting for the device only after a launch of a
        // module that may print); `synchronize` reports the assertion.
        self.printf.drain(self.device);
        !self.printf.fault_pending(self.device)
    }

    fn synchronize(&self) -> Result<(), LaunchFault> {
        // SAFETY: a live stream.
        let e = unsafe { (self.hip.stream_synchronize)(self.stream) };
        self.idle();
        if e == api::HIP_SUCCESS {
            self.printf.drain(self.device);
            self.printf.take_fault(self.device)
        } else {
            Err(fault(&self.hip, e))
        }
    }
}

fn other(log: String) -> ModuleError {
    ModuleError { kind: ModuleErrorKind::Other, log }
}

/// A module loaded on a HIP device: the shared code object, and one per
/// kernel compiled apart (see the crate notes).
pub struct HipModule {
    hip: Arc<Hip>,
    printf: Arc<printf::PrintfBuffers>,
    /// The PTX may call `vprintf` or `__assertfail` or trap (it names
    /// them; a name in a comment only costs the buffer): its kernels get
    /// the device's printf buffer.
    prints: bool,
    /// The device's heaps: a kernel that may call `malloc` or `free`
    /// (`KernelDesc::calls_malloc`) gets its device's.
    heaps: Arc<heap::DeviceHeaps>,
    device: usize,
    jit: Arc<jit::JitModule>,
    /// The shared unit's code object: the whole module, or the variables
    /// (with their table, or with the kernels that name them; none where
    /// there are no variables and no such kernels).
    module: Option<api::Module>,
    kernels: Vec<KernelDesc>,
    /// Each kernel's function: looked up in the shared code object at
    /// load, or, for a kernel compiled apart, in its own code object at
    /// its first launch (an error is kept and reported again at each
    /// launch).
    functions: Vec<OnceLock<Result<api::Function, String>>>,
    /// A kernel compiled apart whose first code was the fast tier's: its
    /// function in the optimised code object, loaded once the JIT has
    /// compiled it (in the background, asked for at the first launch:
    /// GPU launches are not timed).
    optimised: Vec<OnceLock<Result<api::Function, String>>>,
    /// The code objects of kernels compiled apart, unloaded with the
    /// module.
    kernel_objects: Mutex<Vec<api::Module>>,
    globals: Vec<GlobalDesc>,
    /// The shared code object's variable table
    /// (`compiler::Partition::variable_table`), which kernels compiled
    /// apart read the module's variables through; 0 where there is none.
    variables: u64,
    info: String,
}

// SAFETY: HIP module and function handles may be used from any thread.
unsafe impl Send for HipModule {}
// SAFETY: as above; launches only read the handles.
unsafe impl Sync for HipModule {}

impl HipModule {
    fn load(
        hip: Arc<Hip>,
        printf: Arc<printf::PrintfBuffers>,
        heaps: Arc<heap::DeviceHeaps>,
        device: usize,
        jit: &Arc<jit::Jit>,
        ptx: &str,
        options: &ModuleOptions,
    ) -> Result<HipModule, ModuleError> {
        let module = jit.load(ptx, options)?;
        let info = module.info().clone();
        let split = module.splits();
        let mut loaded = HipModule {
            hip: hip.clone(),
            printf,
            prints: ["vprintf", "__assertfail", "trap", "brkpt"].iter().any(|w| ptx.contains(w)),
            heaps,
            device,
            jit: module.clone(),
            module: None,
            kernels: module.kernel_descs(options),
            functions: (0..info.kernels.len()).map(|_| OnceLock::new()).collect(),
            optimised: (0..info.kernels.len()).map(|_| OnceLock::new()).collect(),
            kernel_objects: Mutex::new(Vec::new()),
            globals: Vec::new(),
            variables: 0,
            info: String::new(),
        };
        let code = module.shared()?;
        let apart = (0..info.kernels.len()).filter(|&k| module.compiled_apart(k)).count();
        if split && code.object.is_empty() {
            // Every kernel loads at its first launch; nothing to load now.
            loaded.info = format!("anycuda: module compiled for {:?}, kernel by kernel, on HIP device {device}", jit.target());
            return Ok(loaded);
        }
        let handle = load_code_object(&hip, &code.object).map_err(other)?;
        loaded.module = Some(handle);
        for (k, (desc, slot)) in info.kernels.iter().zip(&loaded.functions).enumerate() {
            if !module.compiled_apart(k) {
                let _ = slot.set(Ok(get_function(&hip, handle, &desc.name).map_err(other)?));
            }
        }
        for g in &info.globals {
            // The code object names a module variable as the compiler's
            // symbol table says, which is not its PTX name.
            let (address, size) = module_global(&hip, handle, &compiler::cpu_abi::KernelSymbols::global(&g.name)).map_err(other)?;
            loaded.globals.push(GlobalDesc { name: g.name.clone(), address, size, constant: g.constant, managed: g.managed });
        }
        if module.variable_table() {
            loaded.variables = module_global(&hip, handle, compiler::cpu_abi::KernelSymbols::VARIABLE_TABLE).map_err(other)?.0;
        }
        loaded.info = if apart > 0 && loaded.variables != 0 && apart == info.kernels.len() {
            format!(
                "anycuda: module compiled for {:?} on HIP device {device}: the variables in one code object, read through its \
                 variable table; {apart} kernel(s) each in a code object of its own (compiled at its first launch)",
                jit.target()
            )
        } else if apart > 0 {
            format!(
                "anycuda: module compiled for {:?} on HIP device {device}: the variables and {} kernel(s) in one code object, \
                 {apart} kernel(s) each in a code object of its own (compiled at its first launch)",
                jit.target(),
                info.kernels.len() - apart
            )
        } else {
            format!("anycuda: module compiled for {:?} and loaded on HIP device {device}", jit.target())
        };
        Ok(loaded)
    }
}

/// The address and size of the variable `symbol` of a loaded code object.
fn module_global(hip: &Hip, module: api::Module, symbol: &str) -> Result<(u64, usize), String> {
    let name = CString::new(symbol).map_err(|_| format!("variable name {symbol:?} has a NUL"))?;
    let (mut p, mut size) = (std::ptr::null_mut(), 0usize);
    // SAFETY: valid module handle and name.
    let e = unsafe { (hip.module_get_global)(&mut p, &mut size, module, name.as_ptr()) };
    hip.check(e, &format!("hipModuleGetGlobal({symbol})"))?;
    Ok((p as u64, size))
}

/// Loads a code object with `hipModuleLoadData`.
fn load_code_object(hip: &Hip, object: &[u8]) -> Result<api::Module, String> {
    let mut handle = std::ptr::null_mut();
    // SAFETY: the code object stays alive for the call (HIP copies it).
    let e = unsafe { (hip.module_load_data)(&mut handle, object.as_ptr().cast()) };
    hip.check(e, "hipModuleLoadData")?;
    Ok(handle)
}

/// The kernel named `name` in a loaded code object.
fn get_function(hip: &Hip, module: api::Module, name: &str) -> Result<api::Function, String> {
    let c = CString::new(name).map_err(|_| format!("kernel name {name:?} has a NUL"))?;
    let mut f = std::ptr::null_mut();
    // SAFETY: valid module handle and name.
    let e = unsafe { (hip.module_get_function)(&mut f, module, c.as_ptr()) };
    hip.check(e, &format!("hipModuleGetFunction({name})"))?;
    Ok(f)
}

impl Drop for HipModule {
    fn drop(&mut self) {
        let objects = std::mem::take(self.kernel_objects.get_mut().unwrap_or_else(|e| e.into_inner()));
        for handle in self.module.into_iter().chain(objects) {
            // SAFETY: the handle came from hipModuleLoadData and no launch
            // of it can still run (the driver drops modules after their
            // work).
            let _ = unsafe { (self.hip.module_unload)(handle) };
        }
    }
}

impl HipModule {
    /// Kernel `k`'s function, loading its own code object at the first
    /// call for a kernel compiled apart; once the optimised code of a kernel
    /// whose first code was the fast tier's is ready, its function in that
    /// code (a code object that does not load is reported once, and the
    /// first code goes on running).
    fn function(&self, k: usize) -> Result<api::Function, String> {
        let slot = self.functions.get(k).ok_or_else(|| format!("no kernel {k}"))?;
        let optimised = self.optimised.get(k).ok_or_else(|| format!("no kernel {k}"))?;
        if let Some(Ok(f)) = optimised.get() {
            return Ok(*f);
        }
        let first = slot
            .get_or_init(|| {
                let code = self.jit.kernel(k).map_err(|e| e.log)?;
                let f = self.load_function(k, &code)?;
                if code.tier == compiler::Tier::Optimized {
                    let _ = optimised.set(Ok(f));
                } else {
                    self.jit.promote(k);
                }
                Ok(f)
            })
            .clone()?;
        // A kernel of the shared unit, or one whose optimised code did not load.
        if !self.jit.compiled_apart(k) || optimised.get().is_some() {
            return Ok(first);
        }
        // The optimised code, if the JIT has it now.
        match self.jit.kernel(k) {
            Ok(code) if code.tier == compiler::Tier::Optimized => {
                let loaded = optimised.get_or_init(|| {
                    self.load_function(k, &code).inspect_err(|e| {
                        tracing::warn!("kernel {k}: its optimised code did not load ({e}); its first code goes on running")
                    })
                });
                Ok(*loaded.as_ref().unwrap_or(&first))
            }
            _ => Ok(first),
        }
    }

    /// Kernel `k`'s function in `code`, a code object of its own loaded
    /// (and unloaded with the module).
    fn load_function(&self, k: usize, code: &jit::Compiled) -> Result<api::Function, String> {
        let name = self.kernels.get(k).map(|d| d.name.clone()).ok_or_else(|| format!("no kernel {k}"))?;
        let handle = load_code_object(&self.hip, &code.object)?;
        if let Ok(mut objects) = self.kernel_objects.lock() {
            objects.push(handle);
        }
        get_function(&self.hip, handle, &name)
    }
}

impl BackendModule for HipModule {
    fn kernels(&self) -> &[KernelDesc] {
        &self.kernels
    }

    fn globals(&self) -> &[GlobalDesc] {
        &self.globals
    }

    /// Compiles and loads the code object of a kernel compiled apart, so
    /// that a kernel that cannot be compiled fails its launch call.
    fn prepare(&self, kernel: usize) -> Result<(), ModuleError> {
        if self.jit.compiled_apart(kernel) {
            self.jit.kernel(kernel)?;
        }
        self.function(kernel).map(|_| ()).map_err(other)
    }

    fn info_log(&self) -> String {
        self.info.clone()
    }

    fn launch(&self, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        // A cooperative launch's workspace lives until the device is idle.
        let _workspace = self.launch_on(kernel, launch, std::ptr::null_mut())?;
        // SAFETY: a plain call.
        match unsafe { (self.hip.device_synchronize)() } {
            api::HIP_SUCCESS => {
                self.printf.drain(self.device);
                self.printf.take_fault(self.device)
            }
            e => Err(fault(&self.hip, e)),
        }
    }

    fn enqueue_launch(&self, queue: &dyn BackendQueue, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        match queue.as_any().downcast_ref::<HipQueue>() {
            Some(q) if q.device == self.device => {
                if let Some(workspace) = self.launch_on(kernel, launch, q.stream)? {
                    q.keep(Box::new(workspace));
                }
                Ok(())
            }
            Some(q) => {
                Err(LaunchFault::Failed(format!("a module of HIP device {} launched on a queue of device {}", self.device, q.device)))
            }
            None => self.launch(kernel, launch),
        }
    }
}

/// A cooperative launch's grid-sync workspace
/// (`compiler::cpu_abi::GRID_SYNC_WORKSPACE` bytes of device memory,
/// zeroed on the launch's stream before it): freed when dropped, which the
/// queue does once its work has completed.
struct GridWorkspace {
    hip: Arc<Hip>,
    address: *mut c_void,
}

// SAFETY: a device address, usable from any thread.
unsafe impl Send for GridWorkspace {}
// SAFETY: as above.
unsafe impl Sync for GridWorkspace {}

impl GridWorkspace {
    /// A zeroed workspace for a launch on `stream` (of the current device).
    fn new(hip: &Arc<Hip>, stream: api::Stream) -> Result<GridWorkspace, LaunchFault> {
        let bytes = compiler::cpu_abi::GRID_SYNC_WORKSPACE;
        let mut address = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let e = unsafe { (hip.malloc)(&mut address, bytes) };
        hip.check(e, "hipMalloc (a cooperative launch's grid-sync workspace)").map_err(LaunchFault::OutOfResources)?;
        let w = GridWorkspace { hip: hip.clone(), address };
        // SAFETY: `bytes` bytes of the allocation, ordered before the launch on its stream.
        let e = unsafe { (hip.memset_d8_async)(address, 0, bytes, stream) };
        hip.check(e, "hipMemsetD8Async (the grid-sync workspace)").map_err(LaunchFault::Failed)?;
        Ok(w)
    }
}

impl Drop for GridWorkspace {
    fn drop(&mut self) {
        // SAFETY: ours; the launch that used it has completed.
        let _ = unsafe { (self.hip.free)(self.address) };
    }
}

impl HipModule {
    /// Enqueues a launch on `stream` (the null stream when null); a
    /// cooperative one returns its workspace, which must live until the
    /// launch has completed.
    fn launch_on(&self, kernel: usize, launch: &LaunchParams<'_>, stream: api::Stream) -> Result<Option<GridWorkspace>, LaunchFault> {
        let f = self.function(kernel).map_err(LaunchFault::Failed)?;
        // SAFETY: a plain call.
        let e = unsafe { (self.hip.set_device)(self.device as i32) };
        self.hip.check(e, "hipSetDevice").map_err(LaunchFault::Failed)?;
        // The kernel's parameters, then the addresses of the device's
        // printf records for a module that may print and of its heap for a
        // module that may allocate, else null, the grid-sync workspace and
        // the module's variable table (`compiler::targets::amdgpu::kernarg_tail`).
        let (records, _launching) = if self.prints {
            let (p, gate) = self.printf.launching(self.device, launch.printf_fifo_size).map_err(LaunchFault::Failed)?;
            (p, Some(gate))
        } else {
            (0, None)
        };
        let param_bytes = self.kernels.get(kernel).map_or(launch.params.len(), |k| k.param_bytes as usize);
        let mut params = launch.params.get(..param_bytes).unwrap_or(launch.params).to_vec();
        // The heap is made at the first launch of a kernel that uses it,
        // with the limit of then, which the driver then keeps fixed.
        let heap = if self.kernels.get(kernel).is_some_and(|k| k.calls_malloc) {
            self.heaps.heap(self.device, launch.heap_limit).map_err(LaunchFault::Failed)?
        } else {
            0
        };
        let tail = compiler::targets::amdgpu::kernarg_tail(param_bytes);
        params.resize(tail.bytes, 0);
        params[tail.printf_records..tail.printf_records + 8].copy_from_slice(&records.to_le_bytes());
        params[tail.heap..tail.heap + 8].copy_from_slice(&heap.to_le_bytes());
        let workspace = if launch.cooperative { Some(GridWorkspace::new(&self.hip, stream)?) } else { None };
        let address = workspace.as_ref().map_or(0, |w| w.address as u64);
        params[tail.grid_workspace..tail.grid_workspace + 8].copy_from_slice(&address.to_le_bytes());
        params[tail.variables..tail.variables + 8].copy_from_slice(&self.variables.to_le_bytes());
        let [gx, gy, gz] = launch.grid;
        let [bx, by, bz] = launch.block;
        if launch.cooperative {
            let Some(cooperative) = self.hip.module_launch_cooperative_kernel else {
                return Err(LaunchFault::Failed("this HIP runtime has no hipModuleLaunchCooperativeKernel (ROCm 6 and later)".into()));
            };
            // The code object's explicit arguments, each from its bytes:
            // the PTX parameters (one block) if any, then the tail's addresses.
            let base = params.as_mut_ptr();
            let mut args: Vec<*mut c_void> = Vec::with_capacity(5);
            if param_bytes > 0 {
                args.push(base.cast());
            }
            for at in [tail.printf_records, tail.heap, tail.grid_workspace, tail.variables] {
                // SAFETY: `at` + 8 lies within `params` (resized to the tail).
                args.push(unsafe { base.add(at) }.cast());
            }
            // SAFETY: as for `hipModuleLaunchKernel` below; HIP copies each
            // argument (its size from the code object) when it enqueues.
            let e = unsafe { cooperative(f, gx, gy, gz, bx, by, bz, launch.dynamic_shared_bytes, stream, args.as_mut_ptr()) };
            return match e {
                api::HIP_SUCCESS => Ok(workspace),
                api::HIP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => Err(LaunchFault::OutOfResources(format!(
                    "hipModuleLaunchCooperativeKernel: {} (the device cannot hold the {} blocks at once)",
                    self.hip.error_string(e),
                    u64::from(gx) * u64::from(gy) * u64::from(gz)
                ))),
                e => Err(match fault(&self.hip, e) {
                    LaunchFault::Failed(m) => LaunchFault::Failed(format!("hipModuleLaunchCooperativeKernel: {m}")),
                    f => f,
                }),
            };
        }
        let mut size = params.len();
        let mut extra = [
            api::LAUNCH_PARAM_BUFFER_POINTER,
            params.as_mut_ptr().cast::<c_void>(),
            api::LAUNCH_PARAM_BUFFER_SIZE,
            (&mut size as *mut usize).cast::<c_void>(),
            api::LAUNCH_PARAM_END,
        ];
        // SAFETY: the function belongs to this module; the parameter buffer
        // is laid out as the kernel's kernarg segment (the compiler's AMD
        // entry takes the packed PTX parameter buffer) and outlives the call
        // (HIP copies it when the launch is enqueued).
        let e = unsafe {
            (self.hip.module_launch_kernel)(
                f,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                launch.dynamic_shared_bytes,
                stream,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        if e == api::HIP_SUCCESS {
            return Ok(None);
        }
        // A fault the runtime reports at the launch (an earlier kernel's, or
        // one it found enqueueing this one) is the same fault as at a
        // synchronisation.
        Err(match fault(&self.hip, e) {
            LaunchFault::Failed(m) => LaunchFault::Failed(format!("hipModuleLaunchKernel: {m}")),
            f => f,
        })
    }
}
