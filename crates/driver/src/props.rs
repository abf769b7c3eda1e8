//! Device descriptions and every `CUdevice_attribute`.
//!
//! A backend describes each device with a [`DeviceProps`]; the driver
//! answers all `cuDeviceGetAttribute` queries from it
//! ([`DeviceProps::attribute`]), so the answers stay consistent with each
//! other (what `cudaGetDeviceProperties` assembles from ~110 queries must
//! agree with what the launch checks enforce).
//!
//! [`DeviceProps::host_cpu`] describes the host CPU as a CUDA device: its
//! name names the CPU, its multiprocessors are the CPU's cores, its memory is
//! the machine's. The compute capability defaults to 8.6 (see
//! [`DEFAULT_COMPUTE_CAPABILITY`]) and is set with the environment variable
//! `ANYCUDA_COMPUTE_CAPABILITY` (`"9.0"`, `"90"`).

use cuda_types::CUdevice_attribute as A;

/// 8.6 (Ampere, GA10x): new enough for everything the CPU backend
/// implements (cp.async, redux, bf16, ldmatrix-free warp-level primitives,
/// 99 KiB of opt-in shared memory), old enough that programs do not take
/// paths for features no CPU backend has (thread-block clusters, TMA,
/// wgmma: 9.0). PTX built for newer architectures (up to sm_90 and beyond)
/// still loads: the driver picks the nearest PTX above the device when none
/// at or below exists (see `crate::Config::ptx_policy`).
pub const DEFAULT_COMPUTE_CAPABILITY: (u32, u32) = (8, 6);

/// Environment variable overriding the reported compute capability.
pub const COMPUTE_CAPABILITY_ENV: &str = "ANYCUDA_COMPUTE_CAPABILITY";

/// What a device is and can do. Field meanings follow the
/// `CU_DEVICE_ATTRIBUTE_*` they answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProps {
    pub name: String,
    pub total_mem: u64,
    pub uuid: [u8; 16],
    pub pci_domain: u32,
    pub pci_bus: u32,
    pub pci_device: u32,
    pub cc_major: u32,
    pub cc_minor: u32,
    pub multiprocessor_count: u32,
    pub clock_rate_khz: u32,
    pub memory_clock_rate_khz: u32,
    pub memory_bus_width: u32,
    pub l2_cache_size: u32,
    pub max_threads_per_block: u32,
    pub max_block_dim: [u32; 3],
    pub max_grid_dim: [u32; 3],
    /// Default per-block limit (48 KiB on every NVIDIA GPU since Kepler).
    pub shared_mem_per_block: u32,
    /// The most a kernel can opt into with
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub shared_mem_per_block_optin: u32,
    pub shared_mem_per_multiprocessor: u32,
    pub reserved_shared_mem_per_block: u32,
    pub total_constant_mem: u32,
    pub warp_size: u32,
    pub regs_per_block: u32,
    pub regs_per_multiprocessor: u32,
    pub max_threads_per_multiprocessor: u32,
    pub max_blocks_per_multiprocessor: u32,
    /// Shares memory with the host (true for the CPU backend).
    pub integrated: bool,
    pub can_map_host_memory: bool,
    pub managed_memory: bool,
    pub concurrent_managed_access: bool,
    /// Kernels may dereference any host pointer (true on the CPU).
    pub pageable_memory_access: bool,
    pub cooperative_launch: bool,
    pub concurrent_kernels: bool,
    pub async_engine_count: u32,
    /// `(least, greatest)` stream priority, as `cuCtxGetStreamPriorityRange`.
    pub stream_priority_range: (i32, i32),
    pub max_persisting_l2_cache_size: u32,
    /// The largest `num_bytes` of an access policy window.
    pub max_access_policy_window_size: u32,
    pub host_numa_id: i32,
    /// The backend implements the virtual memory API (`cuMemCreate`,
    /// `cuMemMap`...; `Backend::vmm_reserve` and friends).
    pub virtual_memory_management: bool,
    /// Virtual memory allocations can be exported as and imported from
    /// POSIX file descriptors (`Backend::vmm_export_fd`).
    pub vmm_posix_fd: bool,
    /// Whether kernels have a run-time limit (`CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT`).
    pub kernel_exec_timeout: bool,
    /// Interprocess event handles work (`Backend::ipc_counters_export`).
    pub ipc_events: bool,
}

impl DeviceProps {
    /// A device with NVIDIA-like limits for compute capability
    /// `major.minor`, the rest filled with neutral values; backends start
    /// from this and set what they know.
    pub fn generic(name: &str, (major, minor): (u32, u32)) -> DeviceProps {
        // (shared per SM, opt-in per block, threads per SM, blocks per SM),
        // as NVIDIA's tuning guides list them per architecture.
        let (smem_sm, optin, threads_sm, blocks_sm) = match (major, minor) {
            (0..=4, _) => (49152, 49152, 2048, 16),
            (5, 0) | (6, 0) => (65536, 49152, 2048, 32),
            (5, _) | (6, _) => (98304, 49152, 2048, 32),
            (7, 5) => (65536, 65536, 1024, 16),
            (7, _) => (98304, 97280, 2048, 32),
            (8, 0) => (167936, 166912, 2048, 32),
            (8, 9) => (102400, 101376, 1536, 24),
            (8, _) => (102400, 101376, 1536, 16),
            (12, _) => (102400, 101376, 1536, 24),
            _ => (233472, 232448, 2048, 32),
        };
        DeviceProps {
            name: name.to_string(),
            total_mem: 8 << 30,
            uuid: [0; 16],
            pci_domain: 0,
            pci_bus: 0,
            pci_device: 0,
            cc_major: major,
            cc_minor: minor,
            multiprocessor_count: 1,
            clock_rate_khz: 1_000_000,
            memory_clock_rate_khz: 1_000_000,
            memory_bus_width: 64,
            l2_cache_size: 4 << 20,
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
            shared_mem_per_block: 49152,
            shared_mem_per_block_optin: optin,
            shared_mem_per_multiprocessor: smem_sm,
            reserved_shared_mem_per_block: if major >= 8 { 1024 } else { 0 },
            total_constant_mem: 65536,
            warp_size: 32,
            regs_per_block: 65536,
            regs_per_multiprocessor: 65536,
            max_threads_per_multiprocessor: threads_sm,
            max_blocks_per_multiprocessor: blocks_sm,
            integrated: false,
            can_map_host_memory: true,
            managed_memory: true,
            concurrent_managed_access: true,
            pageable_memory_access: false,
            cooperative_launch: true,
            concurrent_kernels: true,
            async_engine_count: 2,
            stream_priority_range: (0, -5),
            max_persisting_l2_cache_size: 0,
            max_access_policy_window_size: 0,
            host_numa_id: 0,
            virtual_memory_management: false,
            vmm_posix_fd: false,
            kernel_exec_timeout: false,
            ipc_events: false,
        }
    }

    /// The host CPU as a CUDA device, `ordinal` being its device number.
    pub fn host_cpu(ordinal: u32) -> DeviceProps {
        let cc = compute_capability_from_env().unwrap_or(DEFAULT_COMPUTE_CAPABILITY);
        let cpu = cpu_model_name().unwrap_or_else(|| "host processor".to_string());
        let mut p = DeviceProps::generic(&format!("anycuda CPU: {cpu}"), cc);
        p.total_mem = mem_total_bytes().unwrap_or(8 << 30);
        p.multiprocessor_count = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
        if let Some(mhz) = cpu_mhz() {
            p.clock_rate_khz = (mhz * 1000.0) as u32;
        }
        if let Some(kb) = cpu_cache_kb() {
            p.l2_cache_size = kb.saturating_mul(1024);
        }
        // Persisting accesses and access policy windows are hints with no
        // effect on the CPU; the sizes are Ampere's and Hopper's (three
        // quarters of L2 may persist; windows of 128 MiB - 4 KiB), so
        // programs that size their windows from them run.
        p.max_persisting_l2_cache_size = p.l2_cache_size / 4 * 3;
        p.max_access_policy_window_size = 134_213_632;
        p.uuid = machine_uuid(ordinal);
        // A bus number that is clearly not a real GPU's slot, but a valid one.
        p.pci_bus = 0xac + ordinal;
        p.integrated = true;
        p.pageable_memory_access = true;
        p.async_engine_count = 1;
        p
    }

    /// `major * 10 + minor`.
    pub fn compute_capability(&self) -> u32 {
        self.cc_major * 10 + self.cc_minor
    }

    /// `"0000:ac:00.0"`, as `cuDeviceGetPCIBusId` writes it.
    pub fn pci_bus_id(&self) -> String {
        format!("{:04x}:{:02x}:{:02x}.0", self.pci_domain, self.pci_bus, self.pci_device)
    }

    /// The value of a device attribute; `None` for attributes CUDA does not
    /// define (the driver then answers CUDA_ERROR_INVALID_VALUE).
    pub fn attribute(&self, attr: A) -> Option<i32> {
        let b = |x: bool| x as i32;
        let i = |x: u32| x.min(i32::MAX as u32) as i32;
        let cc = self.compute_capability();
        let v = match attr {
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK => i(self.max_threads_per_block),
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X => i(self.max_block_dim[0]),
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y => i(self.max_block_dim[1]),
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z => i(self.max_block_dim[2]),
            A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X => i(self.max_grid_dim[0]),
            A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y => i(self.max_grid_dim[1]),
            A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z => i(self.max_grid_dim[2]),
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK => i(self.shared_mem_per_block),
            A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY => i(self.total_constant_mem),
            A::CU_DEVICE_ATTRIBUTE_WARP_SIZE => i(self.warp_size),
            A::CU_DEVICE_ATTRIBUTE_MAX_PITCH => i32::MAX,
            A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK => i(self.regs_per_block),
            A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE => i(self.clock_rate_khz),
            A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT => 512,
            A::CU_DEVICE_ATTRIBUTE_GPU_OVERLAP => 1,
            A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => i(self.multiprocessor_count),
            A::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT => b(self.kernel_exec_timeout),
            A::CU_DEVICE_ATTRIBUTE_INTEGRATED => b(self.integrated),
            A::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY => b(self.can_map_host_memory),
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_MODE => 0,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH => 131072,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH => 131072,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT => 65536,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH => 16384,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT => 16384,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH => 16384,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS => 2048,
            A::CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT => 512,
            A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS => b(self.concurrent_kernels),
            A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED => 0,
            A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID => i(self.pci_bus),
            A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID => i(self.pci_device),
            A::CU_DEVICE_ATTRIBUTE_TCC_DRIVER => 0,
            A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE => i(self.memory_clock_rate_khz),
            A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH => i(self.memory_bus_width),
            A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE => i(self.l2_cache_size),
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR => i(self.max_threads_per_multiprocessor),
            A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT => i(self.async_engine_count),
            A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING => 1,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS => 2048,
            A::CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER => 1,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE => 8192,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE => 8192,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE => 32768,
            A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID => i(self.pci_domain),
            A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT => 32,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS => 2046,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH => 131072,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT => 65536,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH => 16384,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT => 16384,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH => 16384,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS => 2048,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS => 2048,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS => 2046,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH => 268435456,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH => 131072,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT => 65000,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH => 2097120,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT => 32768,
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => i(self.cc_major),
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR => i(self.cc_minor),
            A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH => 32768,
            A::CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED => 1,
            A::CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED => 1,
            A::CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED => 1,
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR => i(self.shared_mem_per_multiprocessor),
            A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR => i(self.regs_per_multiprocessor),
            A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY => b(self.managed_memory),
            A::CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD => 0,
            A::CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED => b(self.integrated),
            A::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO => 2,
            A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS => b(self.pageable_memory_access),
            A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS => b(self.concurrent_managed_access),
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED => 1,
            A::CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM => b(self.integrated),
            A::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 => 0,
            A::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1 => 0,
            A::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1 => 0,
            A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH => b(self.cooperative_launch),
            A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH => 0,
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => i(self.shared_mem_per_block_optin),
            A::CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED => 1,
            A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES => b(self.pageable_memory_access),
            A::CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST => b(self.integrated),
            A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED => b(self.virtual_memory_management),
            A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED => b(self.vmm_posix_fd),
            A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR => i(self.max_blocks_per_multiprocessor),
            A::CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE => i(self.max_persisting_l2_cache_size),
            A::CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE => i(self.max_access_policy_window_size),
            A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK => i(self.reserved_shared_mem_per_block),
            A::CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED => 1,
            A::CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED => 1,
            A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS => 0,
            A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING => 0,
            A::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES => 0,
            A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH => 0,
            A::CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS => 0,
            A::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR => 0,
            A::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED => i32::from(self.ipc_events),
            A::CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT => 1,
            A::CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS => 0,
            A::CU_DEVICE_ATTRIBUTE_NUMA_CONFIG => 0,
            A::CU_DEVICE_ATTRIBUTE_NUMA_ID => -1,
            A::CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_MPS_ENABLED => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID => self.host_numa_id,
            A::CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK => 0,
            A::CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH => 0,
            A::CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED => 0,
            // (device id << 16) | vendor id, with a vendor id no PCI vendor
            // uses for GPUs, so nothing mistakes the device for real hardware.
            A::CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID => (cc as i32) << 16 | 0x1d0f,
            A::CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_ATOMIC_REDUCTION_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT => 1,
            A::CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK => 0,
            A::CU_DEVICE_ATTRIBUTE_D3D12_CIG_STREAMS_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_DMA_BUF_MMAP_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_MULTICAST_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_COUNTED_OPS_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_ACCESS_ON_OWNER_DEVICE_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_MULTIPROCESSOR_COUNT => i(self.multiprocessor_count),
            A::CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_SUPPORTED_HANDLE_TYPES => 0,
            A::CU_DEVICE_ATTRIBUTE_VULKAN_CIG_STREAMS_SUPPORTED => 0,
            A::CU_DEVICE_ATTRIBUTE_TENSOR_MAP_LARGE_TENSOR_MIN_SIZE => 0,
            A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_LOCALIZED_MEMORY_SUPPORTED => 0,
            _ => return None,
        };
        Some(v)
    }
}

/// Parses `ANYCUDA_COMPUTE_CAPABILITY` (`"8.6"`, `"86"`, `"sm_86"`, `"10.0"`).
pub fn compute_capability_from_env() -> Option<(u32, u32)> {
    parse_compute_capability(&std::env::var(COMPUTE_CAPABILITY_ENV).ok()?)
}

pub fn parse_compute_capability(s: &str) -> Option<(u32, u32)> {
    let s = s.trim();
    let s = s.strip_prefix("sm_").or_else(|| s.strip_prefix("compute_")).unwrap_or(s);
    let (major, minor) = match s.split_once('.') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let n: u32 = s.parse().ok()?;
            (n / 10, n % 10)
        }
    };
    if (3..=20).contains(&major) && minor <= 9 {
        Some((major, minor))
    } else {
        None
    }
}

fn proc_field(path: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn cpu_model_name() -> Option<String> {
    let name = proc_field("/proc/cpuinfo", "model name").or_else(|| proc_field("/proc/cpuinfo", "Model"))?;
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    (!name.is_empty()).then_some(name)
}

fn cpu_mhz() -> Option<f64> {
    proc_field("/proc/cpuinfo", "cpu MHz")?.parse().ok()
}

fn cpu_cache_kb() -> Option<u32> {
    let v = proc_field("/proc/cpuinfo", "cache size")?;
    v.split_whitespace().next()?.parse().ok()
}

fn mem_total_bytes() -> Option<u64> {
    let v = proc_field("/proc/meminfo", "MemTotal")?;
    let kb: u64 = v.split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

/// FNV-1a, 64 bits: stable across Rust versions, unlike std's hashers.
pub(crate) fn fnv1a64(seed: u64, data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A UUID that is the same every time on this machine and differs between
/// machines: derived from the systemd/D-Bus machine id (or the host name),
/// the device ordinal and a fixed tag, in RFC 4122 version-5 layout.
pub fn machine_uuid(ordinal: u32) -> [u8; 16] {
    let id = ["/etc/machine-id", "/var/lib/dbus/machine-id", "/proc/sys/kernel/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let mut data = b"anycuda-device\0".to_vec();
    data.extend_from_slice(id.trim().as_bytes());
    data.extend_from_slice(&ordinal.to_le_bytes());
    let a = fnv1a64(0x5bd1_e995, &data).to_le_bytes();
    let b = fnv1a64(0x9e37_79b9_7f4a_7c15, &data).to_le_bytes();
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&a);
    u[8..].copy_from_slice(&b);
    u[6] = (u[6] & 0x0f) | 0x50;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_compute_capabilities() {
        assert_eq!(parse_compute_capability("8.6"), Some((8, 6)));
        assert_eq!(parse_compute_capability("90"), Some((9, 0)));
        assert_eq!(parse_compute_capability("sm_75"), Some((7, 5)));
        assert_eq!(parse_compute_capability("10.0"), Some((10, 0)));
        assert_eq!(parse_compute_capability("x"), None);
        assert_eq!(parse_compute_capability("1.0"), None);
    }

    #[test]
    fn host_cpu_is_plausible() {
        let p = DeviceProps::host_cpu(0);
        assert!(p.name.starts_with("anycuda CPU: "), "{}", p.name);
        assert!(p.multiprocessor_count >= 1);
        assert!(p.total_mem > 0);
        assert_eq!(p.uuid, DeviceProps::host_cpu(0).uuid, "UUID must be stable");
        assert_ne!(p.uuid, DeviceProps::host_cpu(1).uuid);
        assert_eq!(p.attribute(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE), Some(32));
        assert_eq!(p.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z), Some(64));
        assert_eq!(p.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), Some(i32::MAX));
        assert_eq!(p.attribute(A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING), Some(1));
        assert_eq!(p.attribute(A(0)), None);
        assert_eq!(p.attribute(A::CU_DEVICE_ATTRIBUTE_MAX), None);
        assert_eq!(p.pci_bus_id().len(), 12);
    }

    #[test]
    fn every_defined_attribute_has_a_value() {
        let p = DeviceProps::host_cpu(0);
        for (name, a) in A::NAMED {
            if *a == A::CU_DEVICE_ATTRIBUTE_MAX {
                continue;
            }
            assert!(p.attribute(*a).is_some(), "{name} has no value");
        }
    }
}
