//! The host CPU as a driver backend: host memory, modules compiled by the
//! compiler (through the disk cache) and loaded into the process, launches
//! on the executor.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use driver::backend::{
    Backend, BackendError, BackendModule, DevicePtr, GlobalDesc, HostAddr, HostAllocation, KernelDesc, LaunchFault, LaunchParams,
    MemsetValue, ModuleError, ModuleErrorKind, ModuleOptions, SharedCounters, VmmAccess,
};
use driver::props::DeviceProps;

use crate::exec::{Executor, LaunchError, LaunchOptions, LoadedKernel};
use crate::loader::LoadedModule;

/// Environment variable: how many devices the CPU backend presents
/// (default 1, at most [`MAX_DEVICES`]).
pub const DEVICES_ENV: &str = "ANYCUDA_CPU_DEVICES";

/// The most devices `ANYCUDA_CPU_DEVICES` may ask for.
pub const MAX_DEVICES: usize = 16;

/// The device count `ANYCUDA_CPU_DEVICES` asks for: `None` when unset;
/// a value that is not a number from 1 to [`MAX_DEVICES`] is refused
/// with the reason.
pub fn device_count_from(value: Option<&str>) -> Result<Option<usize>, String> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else { return Ok(None) };
    match v.parse::<usize>() {
        Ok(n) if (1..=MAX_DEVICES).contains(&n) => Ok(Some(n)),
        _ => Err(format!("{DEVICES_ENV}={v} is not a device count from 1 to {MAX_DEVICES}")),
    }
}

/// The devices `CUDA_VISIBLE_DEVICES` (`value`, when set) leaves visible,
/// as indices into `uuids` (the devices there are), in its order: a comma
/// list of device indices or `GPU-` followed by a unique prefix of a
/// device's UUID; as with NVIDIA's driver, an entry that names no device
/// (or one already listed) hides it and every entry after it, so an empty
/// value or `-1` leaves none.
pub fn visible_devices(value: Option<&str>, uuids: &[[u8; 16]]) -> Vec<usize> {
    let Some(value) = value else { return (0..uuids.len()).collect() };
    let hex = |u: &[u8; 16]| u.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut out: Vec<usize> = Vec::new();
    for item in value.split(',').map(str::trim) {
        let found = if let Ok(i) = item.parse::<usize>() {
            (i < uuids.len()).then_some(i)
        } else if let Some(prefix) = item.strip_prefix("GPU-").map(|p| p.replace('-', "").to_ascii_lowercase()).filter(|p| !p.is_empty()) {
            let matching: Vec<usize> = (0..uuids.len()).filter(|&i| hex(&uuids[i]).starts_with(&prefix)).collect();
            (matching.len() == 1).then(|| matching[0])
        } else {
            None
        };
        match found {
            Some(i) if !out.contains(&i) => out.push(i),
            _ => break,
        }
    }
    out
}

/// The CPU backend: one device, or several (`ANYCUDA_CPU_DEVICES`), whose
/// memory is the process's memory. Several devices share the host's cores
/// and one memory budget (each reports all of it as its total and what is
/// left of it as free), and each can access the others' memory (it is
/// the same memory): peer access is supported between any two.
pub struct CpuBackend {
    /// One description per device (they differ in UUID and PCI bus).
    props: Vec<DeviceProps>,
    /// Live allocations made by this backend: address -> size.
    allocations: Mutex<BTreeMap<u64, usize>>,
    /// The device's memory size and what is allocated of it.
    budget: crate::limit::Budget,
    jit: Arc<jit::Jit>,
    /// Physical allocations of the virtual memory API.
    vmm: crate::vmm::VirtualMemory,
    /// Allocations shared with other processes, and theirs mapped here.
    ipc_exports: crate::ipc::Exports,
    ipc_imports: crate::ipc::Imports,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl CpuBackend {
    /// The backend, its JIT configured from the environment.
    pub fn new() -> CpuBackend {
        CpuBackend::with(jit::JitConfig::from_env(), crate::limit::Budget::from_system())
    }

    /// What this backend's JIT has compiled and found in the cache.
    pub fn jit_stats(&self) -> jit::JitStats {
        self.jit.stats()
    }

    /// A backend whose JIT works as `config` says.
    pub fn with_jit(config: jit::JitConfig) -> CpuBackend {
        CpuBackend::with(config, crate::limit::Budget::from_system())
    }

    /// A backend whose device has the memory `budget` describes (see
    /// [`crate::limit`]).
    pub fn with_budget(budget: crate::limit::Budget) -> CpuBackend {
        CpuBackend::with(jit::JitConfig::from_env(), budget)
    }

    /// A backend with this JIT configuration and memory budget.
    pub fn with(config: jit::JitConfig, budget: crate::limit::Budget) -> CpuBackend {
        let count = match device_count_from(std::env::var(DEVICES_ENV).ok().as_deref()) {
            Ok(n) => n.unwrap_or(1),
            Err(why) => {
                tracing::warn!("{why}; presenting 1 device");
                1
            }
        };
        CpuBackend::with_devices(config, budget, count)
    }

    /// A backend presenting `count` devices (1 to [`MAX_DEVICES`]), of
    /// which `CUDA_VISIBLE_DEVICES` (when set) keeps some, in its order.
    pub fn with_devices(config: jit::JitConfig, budget: crate::limit::Budget, count: usize) -> CpuBackend {
        let uuids: Vec<[u8; 16]> = (0..count.clamp(1, MAX_DEVICES) as u32).map(driver::props::machine_uuid).collect();
        let visible = visible_devices(std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(), &uuids);
        let props = visible
            .into_iter()
            .map(|ordinal| ordinal as u32)
            .map(|ordinal| {
                let mut props = DeviceProps::host_cpu(ordinal);
                props.multiprocessor_count = Executor::global().multiprocessors();
                props.kernel_exec_timeout = Executor::global().launch_timeout().is_some();
                props.total_mem = budget.total();
                props.virtual_memory_management = true;
                props.vmm_posix_fd = true;
                props.ipc_events = true;
                props
            })
            .collect();
        let jit = jit::Jit::new(compiler::Target::HostCpu, config);
        CpuBackend {
            props,
            allocations: Mutex::new(BTreeMap::new()),
            budget,
            jit,
            vmm: crate::vmm::VirtualMemory::default(),
            ipc_exports: crate::ipc::Exports::default(),
            ipc_imports: crate::ipc::Imports::default(),
        }
    }

    fn allocate(&self, size: usize, kind: crate::memcheck::Kind) -> Result<u64, BackendError> {
        let size = size.max(1);
        self.budget.reserve(size as u64).map_err(|why| BackendError::Exhausted { requested: size, why })?;
        let Some(p) = crate::memory::allocate(size) else {
            self.budget.release(size as u64);
            return Err(BackendError::Exhausted { requested: size, why: "the system refused the memory".into() });
        };
        let addr = p as u64;
        self.allocations.lock().unwrap_or_else(|e| e.into_inner()).insert(addr, size);
        crate::memcheck::track(addr, size as u64, kind);
        Ok(addr)
    }

    fn release(&self, addr: u64) -> Result<(), BackendError> {
        let size = self
            .allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&addr)
            .ok_or(BackendError::InvalidAddress { addr, len: 0 })?;
        crate::memcheck::untrack(addr);
        self.ipc_exports.forget(addr);
        // SAFETY: `addr` came from `allocate` with this size and was live.
        unsafe { crate::memory::release(addr as *mut u8, size) };
        self.budget.release(size as u64);
        Ok(())
    }
}

impl Drop for CpuBackend {
    fn drop(&mut self) {
        let addrs: Vec<u64> = self.allocations.lock().map(|a| a.keys().copied().collect()).unwrap_or_default();
        for a in addrs {
            let _ = self.release(a);
        }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn device_count(&self) -> usize {
        self.props.len()
    }

    fn device_props(&self, device: usize) -> DeviceProps {
        self.props.get(device).cloned().unwrap_or_else(|| DeviceProps::host_cpu(0))
    }

    fn can_access_peer(&self, device: usize, peer: usize) -> bool {
        device != peer && device < self.props.len() && peer < self.props.len()
    }

    fn ipc_export(&self, base: DevicePtr, size: usize) -> Result<[u8; driver::backend::IPC_PAYLOAD], BackendError> {
        self.ipc_exports.export(base, size)
    }

    fn ipc_import(&self, _device: usize, payload: &[u8; driver::backend::IPC_PAYLOAD]) -> Result<(DevicePtr, usize), BackendError> {
        self.ipc_imports.import(payload)
    }

    fn ipc_close(&self, ptr: DevicePtr) -> Result<(), BackendError> {
        self.ipc_imports.close(ptr)
    }

    fn ipc_counters_export(&self) -> Result<(Arc<dyn SharedCounters>, [u8; driver::backend::IPC_PAYLOAD]), BackendError> {
        crate::ipc::CounterPage::export()
    }

    fn ipc_counters_import(&self, payload: &[u8; driver::backend::IPC_PAYLOAD]) -> Result<Arc<dyn SharedCounters>, BackendError> {
        crate::ipc::CounterPage::import(payload)
    }

    fn mem_info(&self, _device: usize) -> (u64, u64) {
        (self.budget.free(), self.budget.total())
    }

    fn alloc(&self, _device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.allocate(size, crate::memcheck::Kind::Device)
    }

    fn free(&self, _device: usize, ptr: DevicePtr) -> Result<(), BackendError> {
        self.release(ptr)
    }

    fn alloc_host(&self, size: usize, _flags: u32) -> Result<HostAllocation, BackendError> {
        // Host memory is device memory here: pinned or not, same address.
        let a = self.allocate(size, crate::memcheck::Kind::PinnedHost)?;
        Ok(HostAllocation { host: a as HostAddr, device: a })
    }

    fn free_host(&self, host: HostAddr) -> Result<(), BackendError> {
        self.release(host as u64)
    }

    fn register_host(&self, host: HostAddr, size: usize, _flags: u32) -> Result<DevicePtr, BackendError> {
        crate::memcheck::track(host as u64, size as u64, crate::memcheck::Kind::RegisteredHost);
        Ok(host as DevicePtr)
    }

    fn unregister_host(&self, host: HostAddr) -> Result<(), BackendError> {
        crate::memcheck::untrack(host as u64);
        Ok(())
    }

    fn alloc_managed(&self, _device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.allocate(size, crate::memcheck::Kind::Managed)
    }

    fn free_managed(&self, ptr: DevicePtr) -> Result<(), BackendError> {
        self.release(ptr)
    }

    fn copy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError> {
        // SAFETY: the driver checked that the destination range lies in one
        // live allocation; host and device share the address space.
        unsafe { std::ptr::copy(src.as_ptr(), dst as *mut u8, src.len()) };
        crate::memcheck::host_wrote(dst, src.len() as u64);
        Ok(())
    }

    fn copy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<(), BackendError> {
        crate::memcheck::host_read(src, dst.len() as u64, "device-to-host copy");
        // SAFETY: as for copy_htod.
        unsafe { std::ptr::copy(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        // SAFETY: as for copy_htod; `copy` allows overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
        crate::memcheck::copied(dst, src, len as u64);
        Ok(())
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        let len = count.checked_mul(value.element_size()).ok_or(BackendError::InvalidAddress { addr: dst, len: count })?;
        // SAFETY: the driver checked the range.
        let bytes = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, len) };
        value.fill(bytes);
        crate::memcheck::host_wrote(dst, len as u64);
        Ok(())
    }

    fn load_module(&self, device: usize, ptx: &str, options: &ModuleOptions) -> Result<Arc<dyn BackendModule>, ModuleError> {
        CpuModule::load(&self.jit, ptx, options).map(|mut m| {
            m.props = Some(self.device_props(device));
            Arc::new(m) as Arc<dyn BackendModule>
        })
    }

    fn vmm_granularity(&self, _device: usize) -> usize {
        crate::vmm::GRANULARITY
    }

    fn vmm_reserve(&self, size: usize, align: usize, hint: DevicePtr) -> Result<DevicePtr, BackendError> {
        crate::vmm::reserve(size, align, hint)
    }

    fn vmm_unreserve(&self, addr: DevicePtr, size: usize) -> Result<(), BackendError> {
        crate::vmm::unreserve(addr, size)
    }

    fn vmm_create(&self, _device: usize, size: usize) -> Result<u64, BackendError> {
        // Physical memory counts against the device's like any allocation
        // (reservations hold none).
        self.budget.reserve(size as u64).map_err(|why| BackendError::Exhausted { requested: size, why })?;
        self.vmm.create(size).inspect_err(|_| self.budget.release(size as u64))
    }

    fn vmm_release(&self, mem: u64) -> Result<(), BackendError> {
        let counted = self.vmm.release(mem)?;
        self.budget.release(counted as u64);
        Ok(())
    }

    fn vmm_map(&self, addr: DevicePtr, size: usize, mem: u64, offset: usize) -> Result<(), BackendError> {
        self.vmm.map(addr, size, mem, offset)?;
        crate::memcheck::track(addr, size as u64, crate::memcheck::Kind::Mapped);
        Ok(())
    }

    fn vmm_unmap(&self, addr: DevicePtr, size: usize) -> Result<(), BackendError> {
        crate::vmm::unmap(addr, size)?;
        crate::memcheck::untrack_within(addr, size as u64);
        Ok(())
    }

    fn vmm_set_access(&self, addr: DevicePtr, size: usize, access: VmmAccess) -> Result<(), BackendError> {
        crate::vmm::set_access(addr, size, access)
    }

    fn vmm_export_fd(&self, mem: u64) -> Result<i32, BackendError> {
        self.vmm.export_fd(mem)
    }

    fn vmm_import_fd(&self, _device: usize, fd: i32) -> Result<(u64, usize), BackendError> {
        // The memory is the exporter's and counted where it was created.
        self.vmm.import_fd(fd)
    }
}

/// A module loaded for the host. Its kernels compile when first launched
/// (through the JIT, which owns tiers and the cache); each kernel's code is
/// linked on its own, against the unit that holds the module's variables.
pub struct CpuModule {
    jit: Arc<jit::JitModule>,
    kernels: Vec<KernelDesc>,
    globals: Vec<GlobalDesc>,
    /// The shared unit (the variables; for a module that does not split,
    /// the whole module); none when it is empty.
    shared: Option<LoadedModule>,
    /// The variables' symbols, defined in every kernel unit's link.
    shared_symbols: Vec<(String, usize)>,
    /// Per kernel: the code launches use now.
    /// Read by every launch (from the launching thread and the stream's),
    /// written when better code arrives: a reader-writer lock, so
    /// launches do not contend.
    code: Vec<std::sync::RwLock<Option<Arc<KernelCode>>>>,
    /// Per kernel: its lockstep version, loaded at the first launch its
    /// code's `lockstep_guard` does not hold for.
    lockstep: Vec<std::sync::OnceLock<Result<Arc<KernelCode>, ModuleError>>>,
    info: String,
    /// The device's properties, for device-side `cudaDeviceGetAttribute`.
    props: Option<DeviceProps>,
}

impl Drop for CpuModule {
    fn drop(&mut self) {
        for g in &self.globals {
            crate::memcheck::untrack(g.address);
        }
    }
}

/// One kernel's loaded code.
struct KernelCode {
    kernel: LoadedKernel,
    tier: compiler::Tier,
    /// The kernel's own unit (none when it lives in the shared unit).
    _unit: Option<LoadedModule>,
}

fn other(log: String) -> ModuleError {
    ModuleError { kind: ModuleErrorKind::Other, log }
}

/// Links a unit's code into the process (`extra`: the symbols it takes
/// from the module's shared unit), with the helpers it calls, which the
/// JIT compiles (or takes from its cache) once per process.
fn link(module: &jit::JitModule, code: &jit::Compiled, extra: &[(String, usize)]) -> Result<LoadedModule, ModuleError> {
    let compile = |h: &compiler::HelperCode| module.jit().helper_object(h).map_err(|e| e.log);
    crate::loader::load_linked(&code.object, &code.helpers, extra, &compile).map_err(|e| other(e.to_string()))
}

impl CpuModule {
    pub fn load(jit: &Arc<jit::Jit>, ptx: &str, options: &ModuleOptions) -> Result<CpuModule, ModuleError> {
        let module = jit.load(ptx, options)?;
        let shared_code = module.shared()?;
        let shared = if shared_code.object.is_empty() { None } else { Some(link(&module, &shared_code, &[])?) };
        let global_prefix = compiler::cpu_abi::KernelSymbols::global("");
        let shared_symbols: Vec<(String, usize)> = shared
            .iter()
            .flat_map(|m| m.symbols())
            .filter(|(name, _)| name.starts_with(&global_prefix))
            .map(|(n, a)| (n.to_string(), a))
            .collect();
        let info = module.info();
        let kernels = module.kernel_descs(options);
        let mut globals = Vec::new();
        for g in &info.globals {
            let address = shared
                .as_ref()
                .and_then(|m| m.symbol(&compiler::cpu_abi::KernelSymbols::global(&g.name)))
                .ok_or_else(|| other(format!("variable `{}` missing from its object", g.name)))?;
            globals.push(GlobalDesc {
                name: g.name.clone(),
                address: address as u64,
                size: g.size as usize,
                constant: g.constant,
                managed: g.managed,
            });
        }
        let from = if module.described_from_cache() { " (described from the cache)" } else { "" };
        let note = if module.splits() {
            format!("anycuda: module loaded{from}; each kernel compiles when first launched, or comes from the cache")
        } else {
            format!("anycuda: module loaded{from} and compiled for the host as one unit ({:?})", shared_code.tier)
        };
        let code = info.kernels.iter().map(|_| std::sync::RwLock::new(None)).collect();
        let lockstep = info.kernels.iter().map(|_| std::sync::OnceLock::new()).collect();
        for g in &globals {
            crate::memcheck::track(g.address, g.size as u64, crate::memcheck::Kind::Variable);
        }
        Ok(CpuModule { jit: module, kernels, globals, shared, shared_symbols, code, lockstep, info: note, props: None })
    }

    /// The code kernel `k`'s launches use now: compiled (or taken from the
    /// cache) at its first launch, replaced once faster code is ready.
    fn code(&self, k: usize) -> Result<Arc<KernelCode>, ModuleError> {
        let slot = self.code.get(k).ok_or_else(|| other(format!("no kernel {k}")))?;
        let current = slot.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(c) = &current {
            if c.tier == compiler::Tier::Optimized || !self.jit.compiled_apart(k) {
                return Ok(c.clone());
            }
        }
        let compiled = self.jit.kernel(k)?;
        if let Some(c) = &current {
            if c.tier >= compiled.tier {
                return Ok(c.clone());
            }
        }
        let name = &self.kernels[k].name;
        let info = compiled
            .info
            .kernels
            .iter()
            .find(|i| &i.name == name)
            .cloned()
            .ok_or_else(|| other(format!("kernel `{name}` missing from its compiled unit")))?;
        let (kernel, unit) = if self.jit.compiled_apart(k) {
            let unit = link(&self.jit, &compiled, &self.shared_symbols)?;
            // SAFETY: the object is this kernel's unit, compiled for the host.
            let kernel = unsafe { LoadedKernel::from_module(&unit, info) };
            (kernel, Some(unit))
        } else {
            let whole = self.shared.as_ref().ok_or_else(|| other("the module's code is missing".into()))?;
            // SAFETY: the shared unit (the whole module, or the part that
            // holds this kernel), compiled for the host.
            (unsafe { LoadedKernel::from_module(whole, info) }, None)
        };
        let kernel = kernel.ok_or_else(|| other(format!("kernel `{name}` missing from its object")))?;
        let code = Arc::new(KernelCode { kernel, tier: compiled.tier, _unit: unit });
        let mut s = slot.write().unwrap_or_else(|e| e.into_inner());
        // Another launch may have loaded the same or better code meanwhile.
        match &*s {
            Some(c) if c.tier >= code.tier => Ok(c.clone()),
            _ => {
                *s = Some(code.clone());
                Ok(code)
            }
        }
    }
}

impl CpuModule {
    /// The code for a launch with these parameters: the kernel's current
    /// code, or its lockstep version when the code is thread by thread
    /// under conditions this launch does not meet (overlapping buffers,
    /// a 2-D block).
    fn code_for(&self, k: usize, launch: &LaunchParams<'_>) -> Result<Arc<KernelCode>, ModuleError> {
        let code = self.code(k)?;
        let Some(guard) = &code.kernel.info.lockstep_guard else { return Ok(code) };
        let global = |name: &str| self.globals.iter().find(|g| g.name == name).map(|g| g.address);
        if guard.holds(launch.params, launch.grid, launch.block, &global) {
            return Ok(code);
        }
        let slot = self.lockstep.get(k).ok_or_else(|| other(format!("no kernel {k}")))?;
        slot.get_or_init(|| {
            let name = &self.kernels[k].name;
            tracing::debug!("kernel `{name}`: a launch its thread-by-thread code is not exact for; running it as warps in lockstep");
            let compiled = self.jit.lockstep(k)?;
            let info = compiled
                .info
                .kernels
                .iter()
                .find(|i| &i.name == name)
                .cloned()
                .ok_or_else(|| other(format!("kernel `{name}` missing from its lockstep unit")))?;
            let unit = link(&self.jit, &compiled, &self.shared_symbols)?;
            // SAFETY: the object is this kernel's unit, compiled for the host.
            let kernel = unsafe { LoadedKernel::from_module(&unit, info) }
                .ok_or_else(|| other(format!("kernel `{name}` missing from its lockstep object")))?;
            Ok(Arc::new(KernelCode { kernel, tier: compiled.tier, _unit: Some(unit) }))
        })
        .clone()
    }
}

impl BackendModule for CpuModule {
    fn kernels(&self) -> &[KernelDesc] {
        &self.kernels
    }

    fn globals(&self) -> &[GlobalDesc] {
        &self.globals
    }

    fn info_log(&self) -> String {
        self.info.clone()
    }

    fn prepare(&self, kernel: usize) -> Result<(), ModuleError> {
        self.code(kernel).map(|_| ())
    }

    fn launch(&self, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        let code = self.code_for(kernel, launch).map_err(|e| LaunchFault::Failed(e.log))?;
        let options = LaunchOptions { cooperative: launch.cooperative, pending_launch_limit: Some(launch.pending_launch_limit) };
        // The context's heap limit as of this launch (the heap is the
        // process's: CPU devices share the host's memory).
        Executor::global().heap().set_limit(usize::try_from(launch.heap_limit).unwrap_or(usize::MAX));
        let start = std::time::Instant::now();
        // SAFETY: the code is alive (`code` holds it) and the driver built the
        // parameter buffer from this kernel's layout; what the pointers in it
        // point to is the program's business, and faults are caught. Child
        // grids are kernels of this module, which outlives the call.
        let r = unsafe {
            Executor::global().launch_with(
                &code.kernel,
                launch.grid,
                launch.block,
                launch.dynamic_shared_bytes,
                launch.params,
                &options,
                Some(self as &dyn crate::exec::KernelResolver),
            )
        };
        self.jit.record_run(kernel, start.elapsed());
        r.map_err(|e| match e {
            LaunchError::IllegalAddress { address } => LaunchFault::IllegalAddress { address, detail: e.to_string() },
            LaunchError::Memcheck { address, misaligned: false, .. } => LaunchFault::IllegalAddress { address, detail: e.to_string() },
            LaunchError::Memcheck { address, misaligned: true, .. } => LaunchFault::MisalignedAddress { address, detail: e.to_string() },
            LaunchError::MisalignedAddress { address } => LaunchFault::MisalignedAddress { address, detail: e.to_string() },
            LaunchError::IllegalInstruction { .. } => LaunchFault::IllegalInstruction(e.to_string()),
            LaunchError::StackOverflow { .. } => LaunchFault::StackOverflow(e.to_string()),
            LaunchError::Trap { .. } => LaunchFault::Trap(e.to_string()),
            LaunchError::Assert { .. } => LaunchFault::Assert(e.to_string()),
            LaunchError::Deadlock { .. } => LaunchFault::Deadlock(e.to_string()),
            LaunchError::OutOfResources(_) | LaunchError::InvalidConfiguration(_) => LaunchFault::OutOfResources(e.to_string()),
            LaunchError::Timeout { .. } => LaunchFault::Timeout(e.to_string()),
            LaunchError::Internal(_) | LaunchError::Unsupported(_) => LaunchFault::Failed(e.to_string()),
        })
    }
}

impl crate::exec::KernelResolver for CpuModule {
    /// Kernels of this module launched from the device: a module that takes
    /// a kernel's address compiles as one unit, so every kernel's `thread`
    /// function (the address the code takes) lives in the same object.
    fn kernel(&self, address: usize) -> Option<LoadedKernel> {
        self.code(self.kernel_index(address)?).ok().map(|c| c.kernel.clone())
    }

    fn attribute(&self, attr: u32) -> Option<i32> {
        self.props.as_ref()?.attribute(cuda_types::CUdevice_attribute(attr))
    }

    fn func_attribute(&self, address: usize, attr: u32) -> Option<i32> {
        let desc = &self.kernels[self.kernel_index(address)?];
        driver::default_func_attribute(self.props.as_ref()?, desc, cuda_types::CUfunction_attribute(attr))
    }

    fn occupancy(&self, address: usize, block_threads: u32, dynamic_shared: u32) -> Option<u32> {
        let desc = &self.kernels[self.kernel_index(address)?];
        Some(driver::blocks_per_sm(self.props.as_ref()?, desc, block_threads, dynamic_shared))
    }
}

impl CpuModule {
    /// The index of the kernel whose `thread` function is at `address`.
    fn kernel_index(&self, address: usize) -> Option<usize> {
        (0..self.kernels.len()).find(|&k| self.code(k).is_ok_and(|c| c.kernel.thread as usize == address))
    }
}

#[cfg(test)]
mod device_count_tests {
    use super::*;

    #[test]
    fn the_device_count_is_a_number_from_1_to_the_maximum() {
        assert_eq!(device_count_from(None), Ok(None));
        assert_eq!(device_count_from(Some(" ")), Ok(None));
        assert_eq!(device_count_from(Some("1")), Ok(Some(1)));
        assert_eq!(device_count_from(Some(" 4 ")), Ok(Some(4)));
        assert_eq!(device_count_from(Some("16")), Ok(Some(MAX_DEVICES)));
        for bad in ["0", "17", "-1", "two", "2.5"] {
            assert!(device_count_from(Some(bad)).is_err_and(|e| e.contains(DEVICES_ENV)), "{bad}");
        }
    }

    #[test]
    fn cuda_visible_devices_keeps_devices_in_its_order_up_to_the_first_bad_entry() {
        let u: Vec<[u8; 16]> = (0..3u8).map(|i| [i * 0x11 + 0x10; 16]).collect();
        assert_eq!(visible_devices(None, &u), [0, 1, 2]);
        assert_eq!(visible_devices(Some("2,0"), &u), [2, 0]);
        assert_eq!(visible_devices(Some(" 1 , 2 "), &u), [1, 2]);
        assert_eq!(visible_devices(Some("1,7,0"), &u), [1], "an index past the devices hides the rest");
        assert_eq!(visible_devices(Some("0,0,1"), &u), [0], "a repeated device hides the rest");
        assert_eq!(visible_devices(Some(""), &u), Vec::<usize>::new());
        assert_eq!(visible_devices(Some("-1"), &u), Vec::<usize>::new());
        // UUIDs: GPU- and a unique prefix, dashes ignored.
        assert_eq!(visible_devices(Some("GPU-3232-32,GPU-10"), &u), [2, 0]);
        assert_eq!(visible_devices(Some("GPU-"), &u), Vec::<usize>::new());
        assert_eq!(visible_devices(Some("MIG-10"), &u), Vec::<usize>::new());
    }

    #[test]
    fn devices_differ_in_identity_and_are_each_others_peers() {
        let b = CpuBackend::with_devices(jit::JitConfig::uncached(compiler::Tier::Fast), crate::limit::Budget::from_system(), 3);
        assert_eq!(b.device_count(), 3);
        let ids: std::collections::HashSet<_> = (0..3).map(|d| (b.device_props(d).uuid, b.device_props(d).pci_bus)).collect();
        assert_eq!(ids.len(), 3);
        assert!(b.can_access_peer(0, 2) && b.can_access_peer(2, 1));
        assert!(!b.can_access_peer(1, 1) && !b.can_access_peer(0, 3));
        assert_eq!(
            CpuBackend::with_devices(jit::JitConfig::uncached(compiler::Tier::Fast), crate::limit::Budget::from_system(), 1).device_count(),
            1
        );
    }
}
