//! The host CPU as a driver backend: host memory, modules compiled by the
//! compiler (through the disk cache) and loaded into the process, launches
//! on the executor.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use driver::backend::{
    Backend, BackendError, BackendModule, DevicePtr, GlobalDesc, HostAddr, HostAllocation, KernelDesc, LaunchFault, LaunchParams,
    MemsetValue, ModuleError, ModuleErrorKind, ModuleOptions, ParamDesc,
};
use driver::props::DeviceProps;

use crate::exec::{Executor, LaunchError, LaunchOptions, LoadedKernel};
use crate::loader::LoadedModule;

/// The CPU backend: one device, whose memory is the process's memory.
pub struct CpuBackend {
    props: DeviceProps,
    /// Live allocations made by this backend: address -> size.
    allocations: Mutex<BTreeMap<u64, usize>>,
    jit: Arc<jit::Jit>,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl CpuBackend {
    /// The backend, its JIT configured from the environment.
    pub fn new() -> CpuBackend {
        CpuBackend::with_jit(jit::JitConfig::from_env())
    }

    /// What this backend's JIT has compiled and found in the cache.
    pub fn jit_stats(&self) -> jit::JitStats {
        self.jit.stats()
    }

    pub fn with_jit(config: jit::JitConfig) -> CpuBackend {
        let mut props = DeviceProps::host_cpu(0);
        props.multiprocessor_count = Executor::global().multiprocessors();
        let jit = jit::Jit::new(compiler::Target::HostCpu, config);
        CpuBackend { props, allocations: Mutex::new(BTreeMap::new()), jit }
    }

    fn allocated(&self) -> u64 {
        self.allocations.lock().map(|a| a.values().map(|&s| s as u64).sum()).unwrap_or(0)
    }

    fn allocate(&self, size: usize) -> Result<u64, BackendError> {
        let p = crate::memory::allocate(size).ok_or(BackendError::OutOfMemory(size))?;
        let addr = p as u64;
        if let Ok(mut a) = self.allocations.lock() {
            a.insert(addr, size.max(1));
        }
        Ok(addr)
    }

    fn release(&self, addr: u64) -> Result<(), BackendError> {
        let size = self.allocations.lock().ok().and_then(|mut a| a.remove(&addr)).ok_or(BackendError::InvalidAddress { addr, len: 0 })?;
        // SAFETY: `addr` came from `allocate` with this size and was live.
        unsafe { crate::memory::release(addr as *mut u8, size) };
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
        1
    }

    fn device_props(&self, _device: usize) -> DeviceProps {
        self.props.clone()
    }

    fn mem_info(&self, _device: usize) -> (u64, u64) {
        let total = self.props.total_mem;
        (total.saturating_sub(self.allocated()), total)
    }

    fn alloc(&self, _device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.allocate(size)
    }

    fn free(&self, _device: usize, ptr: DevicePtr) -> Result<(), BackendError> {
        self.release(ptr)
    }

    fn alloc_host(&self, size: usize, _flags: u32) -> Result<HostAllocation, BackendError> {
        // Host memory is device memory here: pinned or not, same address.
        let a = self.allocate(size)?;
        Ok(HostAllocation { host: a as HostAddr, device: a })
    }

    fn free_host(&self, host: HostAddr) -> Result<(), BackendError> {
        self.release(host as u64)
    }

    fn register_host(&self, host: HostAddr, _size: usize, _flags: u32) -> Result<DevicePtr, BackendError> {
        Ok(host as DevicePtr)
    }

    fn unregister_host(&self, _host: HostAddr) -> Result<(), BackendError> {
        Ok(())
    }

    fn alloc_managed(&self, _device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.allocate(size)
    }

    fn free_managed(&self, ptr: DevicePtr) -> Result<(), BackendError> {
        self.release(ptr)
    }

    fn copy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError> {
        // SAFETY: the driver checked that the destination range lies in one
        // live allocation; host and device share the address space.
        unsafe { std::ptr::copy(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }

    fn copy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<(), BackendError> {
        // SAFETY: as for copy_htod.
        unsafe { std::ptr::copy(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        // SAFETY: as for copy_htod; `copy` allows overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
        Ok(())
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        let len = count.checked_mul(value.element_size()).ok_or(BackendError::InvalidAddress { addr: dst, len: count })?;
        // SAFETY: the driver checked the range.
        let bytes = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, len) };
        value.fill(bytes);
        Ok(())
    }

    fn load_module(&self, _device: usize, ptx: &str, options: &ModuleOptions) -> Result<Arc<dyn BackendModule>, ModuleError> {
        CpuModule::load(&self.jit, ptx, options).map(|m| Arc::new(m) as Arc<dyn BackendModule>)
    }
}

/// A module loaded for the host. Its kernels compile when first launched
/// (through the JIT, which owns tiers and the cache); each kernel's code is
/// linked on its own, against the unit that holds the module's variables.
pub struct CpuModule {
    jit: Arc<jit::JitModule>,
    kernels: Vec<KernelDesc>,
    globals: Vec<GlobalDesc>,
    /// The variables' unit (or, for a module that does not split, the
    /// whole module); none when the module has no variables.
    shared: Option<LoadedModule>,
    /// The variables' symbols, defined in every kernel unit's link.
    shared_symbols: Vec<(String, usize)>,
    /// Per kernel: the code launches use now.
    code: Vec<Mutex<Option<Arc<KernelCode>>>>,
    info: String,
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

impl CpuModule {
    pub fn load(jit: &Arc<jit::Jit>, ptx: &str, options: &ModuleOptions) -> Result<CpuModule, ModuleError> {
        let module = jit.load(ptx, options)?;
        let shared_code = module.shared()?;
        let shared = if shared_code.object.is_empty() {
            None
        } else {
            Some(crate::loader::load(&shared_code.object).map_err(|e| other(e.to_string()))?)
        };
        let global_prefix = compiler::cpu_abi::KernelSymbols::global("");
        let shared_symbols: Vec<(String, usize)> = shared
            .iter()
            .flat_map(|m| m.symbols())
            .filter(|(name, _)| name.starts_with(&global_prefix))
            .map(|(n, a)| (n.to_string(), a))
            .collect();
        // As NVIDIA reports them: the virtual architecture the PTX targets
        // (80 for compute_80, not the PTX ISA version), and the architecture
        // the code was compiled for (the device's, for JIT-compiled code).
        // Libraries such as CUB dispatch on the first.
        let target_sm = module.target_sm();
        let ptx_version = if target_sm != 0 { target_sm } else { options.target };
        let binary_version = options.target;
        let info = module.info();
        let const_bytes: u32 = info.globals.iter().filter(|g| g.constant).map(|g| g.size as u32).sum();
        let kernels = info
            .kernels
            .iter()
            .map(|k| KernelDesc {
                name: k.name.clone(),
                params: k.params.iter().map(|p| ParamDesc { offset: p.offset, size: p.size, align: p.align }).collect(),
                param_bytes: k.param_bytes,
                static_shared_bytes: k.static_shared_bytes,
                const_bytes,
                local_bytes: k.local_bytes,
                num_regs: 32,
                reqntid: k.reqntid,
                maxntid: k.maxntid,
                min_blocks_per_sm: None,
                ptx_version,
                binary_version,
            })
            .collect();
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
        let code = info.kernels.iter().map(|_| Mutex::new(None)).collect();
        Ok(CpuModule { jit: module, kernels, globals, shared, shared_symbols, code, info: note })
    }

    /// The code kernel `k`'s launches use now: compiled (or taken from the
    /// cache) at its first launch, replaced once faster code is ready.
    fn code(&self, k: usize) -> Result<Arc<KernelCode>, ModuleError> {
        let slot = self.code.get(k).ok_or_else(|| other(format!("no kernel {k}")))?;
        let current = slot.lock().map_err(|_| other("kernel code lock poisoned".into()))?.clone();
        if let Some(c) = &current {
            if c.tier == compiler::Tier::Optimized || !self.jit.splits() {
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
        let (kernel, unit) = if self.jit.splits() {
            let unit = crate::loader::load_with(&compiled.object, &self.shared_symbols).map_err(|e| other(e.to_string()))?;
            // SAFETY: the object is this kernel's unit, compiled for the host.
            let kernel = unsafe { LoadedKernel::from_module(&unit, info) };
            (kernel, Some(unit))
        } else {
            let whole = self.shared.as_ref().ok_or_else(|| other("the module's code is missing".into()))?;
            // SAFETY: the shared unit is the whole module, compiled for the host.
            (unsafe { LoadedKernel::from_module(whole, info) }, None)
        };
        let kernel = kernel.ok_or_else(|| other(format!("kernel `{name}` missing from its object")))?;
        let code = Arc::new(KernelCode { kernel, tier: compiled.tier, _unit: unit });
        if let Ok(mut s) = slot.lock() {
            // Another launch may have loaded the same or better code meanwhile.
            match &*s {
                Some(c) if c.tier >= code.tier => return Ok(c.clone()),
                _ => *s = Some(code.clone()),
            }
        }
        Ok(code)
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
        let code = self.code(kernel).map_err(|e| LaunchFault::Failed(e.log))?;
        let options = LaunchOptions { cooperative: launch.cooperative };
        let start = std::time::Instant::now();
        // SAFETY: the code is alive (`code` holds it) and the driver built the
        // parameter buffer from this kernel's layout; what the pointers in it
        // point to is the program's business, and faults are caught.
        let r = unsafe {
            Executor::global().launch(&code.kernel, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.params, &options)
        };
        self.jit.record_run(kernel, start.elapsed());
        r.map_err(|e| match e {
            LaunchError::IllegalAddress { address } => LaunchFault::IllegalAddress { address, detail: e.to_string() },
            LaunchError::MisalignedAddress { address } => LaunchFault::MisalignedAddress { address, detail: e.to_string() },
            LaunchError::IllegalInstruction { .. } => LaunchFault::IllegalInstruction(e.to_string()),
            LaunchError::StackOverflow { .. } => LaunchFault::StackOverflow(e.to_string()),
            LaunchError::Trap { .. } => LaunchFault::Trap(e.to_string()),
            LaunchError::Assert { .. } => LaunchFault::Assert(e.to_string()),
            LaunchError::Deadlock { .. } => LaunchFault::Deadlock(e.to_string()),
            LaunchError::OutOfResources(_) | LaunchError::InvalidConfiguration(_) => LaunchFault::OutOfResources(e.to_string()),
            LaunchError::Internal(_) => LaunchFault::Failed(e.to_string()),
        })
    }
}
