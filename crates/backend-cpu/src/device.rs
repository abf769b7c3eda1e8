//! The host CPU as a driver backend: host memory, modules compiled by the
//! compiler (through the disk cache) and loaded into the process, launches
//! on the executor.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use driver::backend::{
    Backend, BackendError, BackendModule, DevicePtr, GlobalDesc, HostAddr, HostAllocation, KernelDesc, LaunchFault, LaunchParams,
    MemsetValue, ModuleError, ModuleErrorKind, ModuleOptions, ParamDesc, VmmAccess,
};
use driver::props::DeviceProps;

use crate::exec::{Executor, LaunchError, LaunchOptions, LoadedKernel};
use crate::loader::LoadedModule;

/// The CPU backend: one device, whose memory is the process's memory.
pub struct CpuBackend {
    props: DeviceProps,
    /// Live allocations made by this backend: address -> size.
    allocations: Mutex<BTreeMap<u64, usize>>,
    cache_dir: Option<std::path::PathBuf>,
    /// Physical allocations of the virtual memory API.
    vmm: crate::vmm::VirtualMemory,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl CpuBackend {
    pub fn new() -> CpuBackend {
        let mut props = DeviceProps::host_cpu(0);
        props.multiprocessor_count = Executor::global().multiprocessors();
        props.virtual_memory_management = true;
        props.vmm_posix_fd = true;
        CpuBackend {
            props,
            allocations: Mutex::new(BTreeMap::new()),
            cache_dir: crate::cache::default_dir(),
            vmm: crate::vmm::VirtualMemory::default(),
        }
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
        (total.saturating_sub(self.allocated() + self.vmm.physical_bytes()), total)
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
        CpuModule::load(ptx, options, self.cache_dir.as_deref()).map(|m| Arc::new(m) as Arc<dyn BackendModule>)
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
        self.vmm.create(size)
    }

    fn vmm_release(&self, mem: u64) -> Result<(), BackendError> {
        self.vmm.release(mem)
    }

    fn vmm_map(&self, addr: DevicePtr, size: usize, mem: u64, offset: usize) -> Result<(), BackendError> {
        self.vmm.map(addr, size, mem, offset)
    }

    fn vmm_unmap(&self, addr: DevicePtr, size: usize) -> Result<(), BackendError> {
        crate::vmm::unmap(addr, size)
    }

    fn vmm_set_access(&self, addr: DevicePtr, size: usize, access: VmmAccess) -> Result<(), BackendError> {
        crate::vmm::set_access(addr, size, access)
    }

    fn vmm_export_fd(&self, mem: u64) -> Result<i32, BackendError> {
        self.vmm.export_fd(mem)
    }

    fn vmm_import_fd(&self, _device: usize, fd: i32) -> Result<(u64, usize), BackendError> {
        self.vmm.import_fd(fd)
    }
}

/// A module compiled for the host and loaded into the process.
pub struct CpuModule {
    kernels: Vec<KernelDesc>,
    loaded: Vec<LoadedKernel>,
    globals: Vec<GlobalDesc>,
    info: String,
    // Keeps the code alive as long as the kernels above may run.
    _module: LoadedModule,
}

fn invalid(log: String) -> ModuleError {
    ModuleError { kind: ModuleErrorKind::InvalidPtx, log }
}

impl CpuModule {
    pub fn load(ptx: &str, options: &ModuleOptions, cache_dir: Option<&std::path::Path>) -> Result<CpuModule, ModuleError> {
        let target = compiler::Target::HostCpu;
        let opts = compiler::Options::default();
        let fingerprint = compiler::target_fingerprint(&target);
        let key = crate::cache::key(ptx, &fingerprint, &opts.fingerprint());
        let mut note = String::new();
        // A cache hit needs neither the parser nor LLVM.
        let entry = match cache_dir.and_then(|d| crate::cache::load_entry(d, &key)) {
            Some(e) => {
                note.push_str("anycuda: compiled code loaded from the cache");
                e
            }
            None => {
                let module = ptx::parse(ptx).map_err(|d| invalid(format!("PTX syntax errors:\n{d}")))?;
                if (module.version.major, module.version.minor) > (9, 9) {
                    return Err(ModuleError {
                        kind: ModuleErrorKind::UnsupportedPtxVersion,
                        log: format!("PTX ISA {}.{} is newer than this compiler knows", module.version.major, module.version.minor),
                    });
                }
                let t = std::time::Instant::now();
                let compiled = compiler::compile_with_options(&module, ptx, &target, &opts).map_err(|e| invalid(e.to_string()))?;
                note.push_str(&format!(
                    "anycuda: compiled {} kernel(s) for the host in {:.1} ms",
                    compiled.info.kernels.len(),
                    t.elapsed().as_secs_f64() * 1e3
                ));
                let entry =
                    crate::cache::Entry { info: compiled.info, target_sm: module.target.sm().unwrap_or(0), object: compiled.object };
                if let Some(dir) = cache_dir {
                    if let Err(e) = crate::cache::store_entry(dir, &key, &entry) {
                        tracing::warn!("cannot write the kernel cache in {}: {e}", dir.display());
                    }
                }
                entry
            }
        };
        let info = entry.info;
        let object = entry.object;
        let target_sm = entry.target_sm;
        let loaded_module = crate::loader::load(&object).map_err(|e| ModuleError { kind: ModuleErrorKind::Other, log: e.to_string() })?;
        let mut kernels = Vec::new();
        let mut loaded = Vec::new();
        // As NVIDIA reports them: the virtual architecture the PTX targets
        // (80 for compute_80, not the PTX ISA version), and the architecture
        // the code was compiled for (the device's, for JIT-compiled code).
        // Libraries such as CUB dispatch on the first.
        let ptx_version = if target_sm != 0 { target_sm } else { options.target };
        let binary_version = options.target;
        for k in &info.kernels {
            // SAFETY: the object was compiled from this module (or is a cache
            // entry whose key covers the module text and compiler revision).
            let lk = unsafe { LoadedKernel::from_module(&loaded_module, k.clone()) }
                .ok_or_else(|| ModuleError { kind: ModuleErrorKind::Other, log: format!("kernel `{}` missing from its object", k.name) })?;
            loaded.push(lk);
            kernels.push(KernelDesc {
                name: k.name.clone(),
                params: k.params.iter().map(|p| ParamDesc { offset: p.offset, size: p.size, align: p.align }).collect(),
                param_bytes: k.param_bytes,
                static_shared_bytes: k.static_shared_bytes,
                const_bytes: info.globals.iter().filter(|g| g.constant).map(|g| g.size as u32).sum(),
                local_bytes: k.local_bytes,
                num_regs: 32,
                reqntid: k.reqntid,
                maxntid: k.maxntid,
                min_blocks_per_sm: None,
                ptx_version,
                binary_version,
            });
        }
        let mut globals = Vec::new();
        for g in &info.globals {
            let address = loaded_module.symbol(&compiler::cpu_abi::KernelSymbols::global(&g.name)).ok_or_else(|| ModuleError {
                kind: ModuleErrorKind::Other,
                log: format!("variable `{}` missing from its object", g.name),
            })?;
            globals.push(GlobalDesc {
                name: g.name.clone(),
                address: address as u64,
                size: g.size as usize,
                constant: g.constant,
                managed: g.managed,
            });
        }
        Ok(CpuModule { kernels, loaded, globals, info: note, _module: loaded_module })
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

    fn launch(&self, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        let k = self.loaded.get(kernel).ok_or_else(|| LaunchFault::Failed(format!("no kernel {kernel}")))?;
        let options = LaunchOptions { cooperative: launch.cooperative };
        // SAFETY: the module is alive (self holds it) and the driver built the
        // parameter buffer from this kernel's layout; what the pointers in it
        // point to is the program's business, and faults are caught.
        let r = unsafe { Executor::global().launch(k, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.params, &options) };
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
