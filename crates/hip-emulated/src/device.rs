//! The one device the double pretends to be: an RDNA3 gfx1100 (wave32,
//! default) or a CDNA2 gfx90a (wave64), chosen with
//! `ANYCUDA_HIP_EMULATED_ARCH`, with attributes of the real parts (Radeon RX
//! 7900 XTX, Instinct MI210) and an allocation limit of its own.

use std::ffi::c_char;

use crate::error::{fail, Result, INVALID_VALUE};

/// The emulated processors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Gfx1100,
    Gfx90a,
}

/// Device memory the double hands out in all (`hipDeviceTotalMem`).
pub const TOTAL_MEMORY: usize = 4 << 30;
/// LDS per work-group.
pub const LDS_BYTES: u32 = 64 << 10;
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

impl Arch {
    /// From `ANYCUDA_HIP_EMULATED_ARCH` (`gfx1100` when unset).
    pub fn from_env() -> std::result::Result<Arch, String> {
        match std::env::var("ANYCUDA_HIP_EMULATED_ARCH") {
            Err(_) => Ok(Arch::Gfx1100),
            Ok(v) => match v.trim() {
                "" | "gfx1100" => Ok(Arch::Gfx1100),
                "gfx90a" => Ok(Arch::Gfx90a),
                other => Err(format!("ANYCUDA_HIP_EMULATED_ARCH={other}: the emulated device is gfx1100 or gfx90a")),
            },
        }
    }

    pub fn wave64(self) -> bool {
        self == Arch::Gfx90a
    }

    pub fn wave_size(self) -> u32 {
        if self.wave64() {
            64
        } else {
            32
        }
    }

    /// `gcnArchName`: the target-id with the features the device has.
    pub fn gcn_arch_name(self) -> &'static str {
        match self {
            Arch::Gfx1100 => "gfx1100",
            Arch::Gfx90a => "gfx90a:sramecc+:xnack-",
        }
    }

    pub fn marketing_name(self) -> &'static str {
        match self {
            Arch::Gfx1100 => "AMD Radeon RX 7900 XTX (emulated)",
            Arch::Gfx90a => "AMD Instinct MI210 (emulated)",
        }
    }

    /// `EF_AMDGPU_MACH` of the processor's code objects.
    pub fn elf_mach(self) -> u32 {
        match self {
            Arch::Gfx1100 => 0x041,
            Arch::Gfx90a => 0x03f,
        }
    }

    /// The emulator's name for the instruction set.
    pub fn emulator_arch(self) -> &'static str {
        match self {
            Arch::Gfx1100 => "rdna3",
            Arch::Gfx90a => "cdna",
        }
    }

    fn version(self) -> (i32, i32) {
        match self {
            Arch::Gfx1100 => (11, 0),
            Arch::Gfx90a => (9, 0),
        }
    }

    /// Compute units as HIP counts them (work-group processors on RDNA).
    fn multiprocessors(self) -> i32 {
        match self {
            Arch::Gfx1100 => 48,
            Arch::Gfx90a => 104,
        }
    }

    fn clock_khz(self) -> i32 {
        match self {
            Arch::Gfx1100 => 2_482_000,
            Arch::Gfx90a => 1_700_000,
        }
    }

    fn memory_clock_khz(self) -> i32 {
        match self {
            Arch::Gfx1100 => 1_250_000,
            Arch::Gfx90a => 1_600_000,
        }
    }

    fn bus_width(self) -> i32 {
        match self {
            Arch::Gfx1100 => 384,
            Arch::Gfx90a => 4096,
        }
    }

    fn l2_bytes(self) -> i32 {
        match self {
            Arch::Gfx1100 => 6 << 20,
            Arch::Gfx90a => 8 << 20,
        }
    }

    fn max_threads_per_cu(self) -> i32 {
        match self {
            Arch::Gfx1100 => 2048,
            Arch::Gfx90a => 2048,
        }
    }

    /// PCI location of device `ordinal`: domain, bus, device (one bus per
    /// device, from 3).
    pub fn pci(self, ordinal: i32) -> (i32, i32, i32) {
        (0, 3 + ordinal, 0)
    }

    /// A fixed UUID per processor and device (the bytes of an ASCII tag).
    pub fn uuid(self, ordinal: i32) -> [u8; 16] {
        let mut u = *b"anycuda-hip-emu0";
        if ordinal > 0 {
            u[14] = b'0' + ordinal as u8;
        }
        u[15] = match self {
            Arch::Gfx1100 => b'1',
            Arch::Gfx90a => b'2',
        };
        u
    }
}

/// `hipDeviceArch_t`: 17 one-bit fields in one `unsigned`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct DeviceArchFlags(pub u32);

/// `hipDeviceProp_tR0600` (ROCm 6.0 and later), field for field.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DevicePropR0600 {
    pub name: [c_char; 256],
    pub uuid: [u8; 16],
    pub luid: [c_char; 8],
    pub luid_device_node_mask: u32,
    pub total_global_mem: usize,
    pub shared_mem_per_block: usize,
    pub regs_per_block: i32,
    pub warp_size: i32,
    pub mem_pitch: usize,
    pub max_threads_per_block: i32,
    pub max_threads_dim: [i32; 3],
    pub max_grid_size: [i32; 3],
    pub clock_rate: i32,
    pub total_const_mem: usize,
    pub major: i32,
    pub minor: i32,
    pub texture_alignment: usize,
    pub texture_pitch_alignment: usize,
    pub device_overlap: i32,
    pub multi_processor_count: i32,
    pub kernel_exec_timeout_enabled: i32,
    pub integrated: i32,
    pub can_map_host_memory: i32,
    pub compute_mode: i32,
    pub max_texture_1d: i32,
    pub max_texture_1d_mipmap: i32,
    pub max_texture_1d_linear: i32,
    pub max_texture_2d: [i32; 2],
    pub max_texture_2d_mipmap: [i32; 2],
    pub max_texture_2d_linear: [i32; 3],
    pub max_texture_2d_gather: [i32; 2],
    pub max_texture_3d: [i32; 3],
    pub max_texture_3d_alt: [i32; 3],
    pub max_texture_cubemap: i32,
    pub max_texture_1d_layered: [i32; 2],
    pub max_texture_2d_layered: [i32; 3],
    pub max_texture_cubemap_layered: [i32; 2],
    pub max_surface_1d: i32,
    pub max_surface_2d: [i32; 2],
    pub max_surface_3d: [i32; 3],
    pub max_surface_1d_layered: [i32; 2],
    pub max_surface_2d_layered: [i32; 3],
    pub max_surface_cubemap: i32,
    pub max_surface_cubemap_layered: [i32; 2],
    pub surface_alignment: usize,
    pub concurrent_kernels: i32,
    pub ecc_enabled: i32,
    pub pci_bus_id: i32,
    pub pci_device_id: i32,
    pub pci_domain_id: i32,
    pub tcc_driver: i32,
    pub async_engine_count: i32,
    pub unified_addressing: i32,
    pub memory_clock_rate: i32,
    pub memory_bus_width: i32,
    pub l2_cache_size: i32,
    pub persisting_l2_cache_max_size: i32,
    pub max_threads_per_multi_processor: i32,
    pub stream_priorities_supported: i32,
    pub global_l1_cache_supported: i32,
    pub local_l1_cache_supported: i32,
    pub shared_mem_per_multiprocessor: usize,
    pub regs_per_multiprocessor: i32,
    pub managed_memory: i32,
    pub is_multi_gpu_board: i32,
    pub multi_gpu_board_group_id: i32,
    pub host_native_atomic_supported: i32,
    pub single_to_double_precision_perf_ratio: i32,
    pub pageable_memory_access: i32,
    pub concurrent_managed_access: i32,
    pub compute_preemption_supported: i32,
    pub can_use_host_pointer_for_registered_mem: i32,
    pub cooperative_launch: i32,
    pub cooperative_multi_device_launch: i32,
    pub shared_mem_per_block_optin: usize,
    pub pageable_memory_access_uses_host_page_tables: i32,
    pub direct_managed_mem_access_from_host: i32,
    pub max_blocks_per_multi_processor: i32,
    pub access_policy_max_window_size: i32,
    pub reserved_shared_mem_per_block: usize,
    pub host_register_supported: i32,
    pub sparse_hip_array_supported: i32,
    pub host_register_read_only_supported: i32,
    pub timeline_semaphore_interop_supported: i32,
    pub memory_pools_supported: i32,
    pub gpu_direct_rdma_supported: i32,
    pub gpu_direct_rdma_flush_writes_options: u32,
    pub gpu_direct_rdma_writes_ordering: i32,
    pub memory_pool_supported_handle_types: u32,
    pub deferred_mapping_hip_array_supported: i32,
    pub ipc_event_supported: i32,
    pub cluster_launch: i32,
    pub unified_function_pointers: i32,
    pub reserved: [i32; 63],
    pub hip_reserved: [i32; 32],
    pub gcn_arch_name: [c_char; 256],
    pub max_shared_memory_per_multi_processor: usize,
    pub clock_instruction_rate: i32,
    pub arch: DeviceArchFlags,
    pub hdp_mem_flush_cntl: *mut u32,
    pub hdp_reg_flush_cntl: *mut u32,
    pub cooperative_multi_device_unmatched_func: i32,
    pub cooperative_multi_device_unmatched_grid_dim: i32,
    pub cooperative_multi_device_unmatched_block_dim: i32,
    pub cooperative_multi_device_unmatched_shared_mem: i32,
    pub is_large_bar: i32,
    pub asic_revision: i32,
}

fn c_string<const N: usize>(s: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (o, b) in out.iter_mut().zip(s.bytes().take(N - 1)) {
        *o = b as c_char;
    }
    out
}

/// Work-groups of `threads` work-items and `lds` bytes of LDS the device
/// holds at once (`hipModuleLaunchCooperativeKernel`'s limit): per compute
/// unit as many as its work-item slots and its LDS allow, whole wavefronts
/// counted, at least one.
pub fn resident_groups(arch: Arch, threads: u64, lds: u64) -> u64 {
    let wave = u64::from(arch.wave_size());
    let slots = threads.div_ceil(wave).max(1) * wave;
    let by_threads = arch.max_threads_per_cu() as u64 / slots;
    let by_lds = u64::from(LDS_BYTES).checked_div(lds).unwrap_or(u64::MAX);
    arch.multiprocessors() as u64 * by_threads.min(by_lds).max(1)
}

/// The values behind the attributes and the properties.
pub fn properties(arch: Arch, ordinal: i32) -> DevicePropR0600 {
    let (major, minor) = arch.version();
    let (domain, bus, dev) = arch.pci(ordinal);
    // SAFETY: every field is an integer, an array of them or a raw pointer,
    // for which all-zero bytes are a valid value.
    let mut p: DevicePropR0600 = unsafe { std::mem::zeroed() };
    p.name = c_string(arch.marketing_name());
    p.uuid = arch.uuid(ordinal);
    p.total_global_mem = TOTAL_MEMORY;
    p.shared_mem_per_block = LDS_BYTES as usize;
    p.regs_per_block = 65536;
    p.warp_size = arch.wave_size() as i32;
    p.mem_pitch = i32::MAX as usize;
    p.max_threads_per_block = MAX_THREADS_PER_BLOCK as i32;
    p.max_threads_dim = [1024, 1024, 1024];
    p.max_grid_size = [i32::MAX, i32::MAX, i32::MAX];
    p.clock_rate = arch.clock_khz();
    p.total_const_mem = TOTAL_MEMORY;
    p.major = major;
    p.minor = minor;
    p.texture_alignment = 256;
    p.texture_pitch_alignment = 256;
    p.device_overlap = 1;
    p.multi_processor_count = arch.multiprocessors();
    p.can_map_host_memory = 1;
    p.max_texture_1d = 16384;
    p.max_texture_1d_linear = i32::MAX;
    p.max_texture_2d = [16384, 16384];
    p.max_texture_3d = [16384, 16384, 8192];
    p.surface_alignment = 256;
    p.concurrent_kernels = 1;
    p.ecc_enabled = i32::from(arch == Arch::Gfx90a);
    p.pci_bus_id = bus;
    p.pci_device_id = dev;
    p.pci_domain_id = domain;
    p.async_engine_count = 2;
    p.unified_addressing = 1;
    p.memory_clock_rate = arch.memory_clock_khz();
    p.memory_bus_width = arch.bus_width();
    p.l2_cache_size = arch.l2_bytes();
    p.max_threads_per_multi_processor = arch.max_threads_per_cu();
    p.cooperative_launch = 1;
    p.stream_priorities_supported = 1;
    p.global_l1_cache_supported = 1;
    p.local_l1_cache_supported = 1;
    p.shared_mem_per_multiprocessor = LDS_BYTES as usize;
    p.regs_per_multiprocessor = 65536;
    p.managed_memory = 1;
    p.host_native_atomic_supported = 1;
    p.concurrent_managed_access = 1;
    p.can_use_host_pointer_for_registered_mem = 1;
    p.shared_mem_per_block_optin = LDS_BYTES as usize;
    p.direct_managed_mem_access_from_host = 0;
    p.max_blocks_per_multi_processor = 32;
    p.host_register_supported = 1;
    p.gcn_arch_name = c_string(arch.gcn_arch_name());
    p.max_shared_memory_per_multi_processor = LDS_BYTES as usize;
    // The real-time counter: 100 MHz.
    p.clock_instruction_rate = 100_000;
    p.arch = DeviceArchFlags((1 << 17) - 1 - (1 << 16) - (1 << 14));
    p.is_large_bar = 1;
    p
}

/// `hipDeviceAttribute_t` values (ROCm 6).
pub mod attr {
    pub const ECC_ENABLED: i32 = 0;
    pub const ACCESS_POLICY_MAX_WINDOW_SIZE: i32 = 1;
    pub const ASYNC_ENGINE_COUNT: i32 = 2;
    pub const CAN_MAP_HOST_MEMORY: i32 = 3;
    pub const CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: i32 = 4;
    pub const CLOCK_RATE: i32 = 5;
    pub const COMPUTE_MODE: i32 = 6;
    pub const COMPUTE_PREEMPTION_SUPPORTED: i32 = 7;
    pub const CONCURRENT_KERNELS: i32 = 8;
    pub const CONCURRENT_MANAGED_ACCESS: i32 = 9;
    pub const COOPERATIVE_LAUNCH: i32 = 10;
    pub const COOPERATIVE_MULTI_DEVICE_LAUNCH: i32 = 11;
    pub const DEVICE_OVERLAP: i32 = 12;
    pub const DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: i32 = 13;
    pub const GLOBAL_L1_CACHE_SUPPORTED: i32 = 14;
    pub const HOST_NATIVE_ATOMIC_SUPPORTED: i32 = 15;
    pub const INTEGRATED: i32 = 16;
    pub const IS_MULTI_GPU_BOARD: i32 = 17;
    pub const KERNEL_EXEC_TIMEOUT: i32 = 18;
    pub const L2_CACHE_SIZE: i32 = 19;
    pub const LOCAL_L1_CACHE_SUPPORTED: i32 = 20;
    pub const COMPUTE_CAPABILITY_MAJOR: i32 = 23;
    pub const MANAGED_MEMORY: i32 = 24;
    pub const MAX_BLOCKS_PER_MULTIPROCESSOR: i32 = 25;
    pub const MAX_BLOCK_DIM_X: i32 = 26;
    pub const MAX_BLOCK_DIM_Y: i32 = 27;
    pub const MAX_BLOCK_DIM_Z: i32 = 28;
    pub const MAX_GRID_DIM_X: i32 = 29;
    pub const MAX_GRID_DIM_Y: i32 = 30;
    pub const MAX_GRID_DIM_Z: i32 = 31;
    pub const MAX_TEXTURE_1D_WIDTH: i32 = 39;
    pub const MAX_TEXTURE_1D_LINEAR: i32 = 41;
    pub const MAX_TEXTURE_2D_WIDTH: i32 = 43;
    pub const MAX_TEXTURE_2D_HEIGHT: i32 = 44;
    pub const MAX_TEXTURE_3D_WIDTH: i32 = 49;
    pub const MAX_TEXTURE_3D_HEIGHT: i32 = 50;
    pub const MAX_TEXTURE_3D_DEPTH: i32 = 51;
    pub const MAX_THREADS_PER_BLOCK: i32 = 56;
    pub const MAX_THREADS_PER_MULTIPROCESSOR: i32 = 57;
    pub const MAX_PITCH: i32 = 58;
    pub const MEMORY_BUS_WIDTH: i32 = 59;
    pub const MEMORY_CLOCK_RATE: i32 = 60;
    pub const COMPUTE_CAPABILITY_MINOR: i32 = 61;
    pub const MULTI_GPU_BOARD_GROUP_ID: i32 = 62;
    pub const MULTIPROCESSOR_COUNT: i32 = 63;
    pub const PAGEABLE_MEMORY_ACCESS: i32 = 65;
    pub const PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: i32 = 66;
    pub const PCI_BUS_ID: i32 = 67;
    pub const PCI_DEVICE_ID: i32 = 68;
    pub const PCI_DOMAIN_ID: i32 = 69;
    pub const PERSISTING_L2_CACHE_MAX_SIZE: i32 = 70;
    pub const MAX_REGISTERS_PER_BLOCK: i32 = 71;
    pub const MAX_REGISTERS_PER_MULTIPROCESSOR: i32 = 72;
    pub const RESERVED_SHARED_MEM_PER_BLOCK: i32 = 73;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: i32 = 74;
    pub const SHARED_MEM_PER_BLOCK_OPTIN: i32 = 75;
    pub const SHARED_MEM_PER_MULTIPROCESSOR: i32 = 76;
    pub const SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: i32 = 77;
    pub const STREAM_PRIORITIES_SUPPORTED: i32 = 78;
    pub const SURFACE_ALIGNMENT: i32 = 79;
    pub const TCC_DRIVER: i32 = 80;
    pub const TEXTURE_ALIGNMENT: i32 = 81;
    pub const TEXTURE_PITCH_ALIGNMENT: i32 = 82;
    pub const TOTAL_CONSTANT_MEMORY: i32 = 83;
    pub const TOTAL_GLOBAL_MEM: i32 = 84;
    pub const UNIFIED_ADDRESSING: i32 = 85;
    pub const WARP_SIZE: i32 = 87;
    pub const MEMORY_POOLS_SUPPORTED: i32 = 88;
    pub const VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: i32 = 89;
    pub const HOST_REGISTER_SUPPORTED: i32 = 90;
    pub const CLOCK_INSTRUCTION_RATE: i32 = 10000;
    pub const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: i32 = 10002;
    pub const COOPERATIVE_MULTI_DEVICE_UNMATCHED_FUNC: i32 = 10007;
    pub const COOPERATIVE_MULTI_DEVICE_UNMATCHED_GRID_DIM: i32 = 10008;
    pub const COOPERATIVE_MULTI_DEVICE_UNMATCHED_BLOCK_DIM: i32 = 10009;
    pub const COOPERATIVE_MULTI_DEVICE_UNMATCHED_SHARED_MEM: i32 = 10010;
    pub const IS_LARGE_BAR: i32 = 10011;
    pub const ASIC_REVISION: i32 = 10012;
    pub const CAN_USE_STREAM_WAIT_VALUE: i32 = 10013;
    pub const IMAGE_SUPPORT: i32 = 10014;
    pub const PHYSICAL_MULTIPROCESSOR_COUNT: i32 = 10015;
    pub const FINE_GRAIN_SUPPORT: i32 = 10016;
    pub const WALL_CLOCK_RATE: i32 = 10017;
}

fn clamp(v: usize) -> i32 {
    v.min(i32::MAX as usize) as i32
}

/// `hipDeviceGetAttribute`. Attributes with no meaning on this device
/// (textures, surfaces, Windows LUIDs) are refused with
/// `hipErrorInvalidValue`, as ROCm refuses unknown ones.
pub fn attribute(arch: Arch, ordinal: i32, a: i32) -> Result<i32> {
    use attr::*;
    let p = properties(arch, ordinal);
    Ok(match a {
        ECC_ENABLED => p.ecc_enabled,
        ACCESS_POLICY_MAX_WINDOW_SIZE => p.access_policy_max_window_size,
        ASYNC_ENGINE_COUNT => p.async_engine_count,
        CAN_MAP_HOST_MEMORY => p.can_map_host_memory,
        CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM => p.can_use_host_pointer_for_registered_mem,
        CLOCK_RATE => p.clock_rate,
        COMPUTE_MODE => p.compute_mode,
        COMPUTE_PREEMPTION_SUPPORTED => p.compute_preemption_supported,
        CONCURRENT_KERNELS => p.concurrent_kernels,
        CONCURRENT_MANAGED_ACCESS => p.concurrent_managed_access,
        COOPERATIVE_LAUNCH => p.cooperative_launch,
        COOPERATIVE_MULTI_DEVICE_LAUNCH => p.cooperative_multi_device_launch,
        DEVICE_OVERLAP => p.device_overlap,
        DIRECT_MANAGED_MEM_ACCESS_FROM_HOST => p.direct_managed_mem_access_from_host,
        GLOBAL_L1_CACHE_SUPPORTED => p.global_l1_cache_supported,
        HOST_NATIVE_ATOMIC_SUPPORTED => p.host_native_atomic_supported,
        INTEGRATED => p.integrated,
        IS_MULTI_GPU_BOARD => p.is_multi_gpu_board,
        KERNEL_EXEC_TIMEOUT => p.kernel_exec_timeout_enabled,
        L2_CACHE_SIZE => p.l2_cache_size,
        LOCAL_L1_CACHE_SUPPORTED => p.local_l1_cache_supported,
        COMPUTE_CAPABILITY_MAJOR => p.major,
        MANAGED_MEMORY => p.managed_memory,
        MAX_BLOCKS_PER_MULTIPROCESSOR => p.max_blocks_per_multi_processor,
        MAX_BLOCK_DIM_X => p.max_threads_dim[0],
        MAX_BLOCK_DIM_Y => p.max_threads_dim[1],
        MAX_BLOCK_DIM_Z => p.max_threads_dim[2],
        MAX_GRID_DIM_X => p.max_grid_size[0],
        MAX_GRID_DIM_Y => p.max_grid_size[1],
        MAX_GRID_DIM_Z => p.max_grid_size[2],
        MAX_TEXTURE_1D_WIDTH => p.max_texture_1d,
        MAX_TEXTURE_1D_LINEAR => p.max_texture_1d_linear,
        MAX_TEXTURE_2D_WIDTH => p.max_texture_2d[0],
        MAX_TEXTURE_2D_HEIGHT => p.max_texture_2d[1],
        MAX_TEXTURE_3D_WIDTH => p.max_texture_3d[0],
        MAX_TEXTURE_3D_HEIGHT => p.max_texture_3d[1],
        MAX_TEXTURE_3D_DEPTH => p.max_texture_3d[2],
        MAX_THREADS_PER_BLOCK => p.max_threads_per_block,
        MAX_THREADS_PER_MULTIPROCESSOR => p.max_threads_per_multi_processor,
        MAX_PITCH => clamp(p.mem_pitch),
        MEMORY_BUS_WIDTH => p.memory_bus_width,
        MEMORY_CLOCK_RATE => p.memory_clock_rate,
        COMPUTE_CAPABILITY_MINOR => p.minor,
        MULTI_GPU_BOARD_GROUP_ID => p.multi_gpu_board_group_id,
        MULTIPROCESSOR_COUNT => p.multi_processor_count,
        PAGEABLE_MEMORY_ACCESS => p.pageable_memory_access,
        PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES => p.pageable_memory_access_uses_host_page_tables,
        PCI_BUS_ID => p.pci_bus_id,
        PCI_DEVICE_ID => p.pci_device_id,
        PCI_DOMAIN_ID => p.pci_domain_id,
        PERSISTING_L2_CACHE_MAX_SIZE => p.persisting_l2_cache_max_size,
        MAX_REGISTERS_PER_BLOCK => p.regs_per_block,
        MAX_REGISTERS_PER_MULTIPROCESSOR => p.regs_per_multiprocessor,
        RESERVED_SHARED_MEM_PER_BLOCK => clamp(p.reserved_shared_mem_per_block),
        MAX_SHARED_MEMORY_PER_BLOCK => clamp(p.shared_mem_per_block),
        SHARED_MEM_PER_BLOCK_OPTIN => clamp(p.shared_mem_per_block_optin),
        SHARED_MEM_PER_MULTIPROCESSOR => clamp(p.shared_mem_per_multiprocessor),
        SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO => p.single_to_double_precision_perf_ratio,
        STREAM_PRIORITIES_SUPPORTED => p.stream_priorities_supported,
        SURFACE_ALIGNMENT => clamp(p.surface_alignment),
        TCC_DRIVER => p.tcc_driver,
        TEXTURE_ALIGNMENT => clamp(p.texture_alignment),
        TEXTURE_PITCH_ALIGNMENT => clamp(p.texture_pitch_alignment),
        TOTAL_CONSTANT_MEMORY => clamp(p.total_const_mem),
        TOTAL_GLOBAL_MEM => clamp(p.total_global_mem),
        UNIFIED_ADDRESSING => p.unified_addressing,
        WARP_SIZE => p.warp_size,
        MEMORY_POOLS_SUPPORTED => p.memory_pools_supported,
        VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED => 0,
        HOST_REGISTER_SUPPORTED => p.host_register_supported,
        CLOCK_INSTRUCTION_RATE => p.clock_instruction_rate,
        MAX_SHARED_MEMORY_PER_MULTIPROCESSOR => clamp(p.max_shared_memory_per_multi_processor),
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_FUNC => p.cooperative_multi_device_unmatched_func,
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_GRID_DIM => p.cooperative_multi_device_unmatched_grid_dim,
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_BLOCK_DIM => p.cooperative_multi_device_unmatched_block_dim,
        COOPERATIVE_MULTI_DEVICE_UNMATCHED_SHARED_MEM => p.cooperative_multi_device_unmatched_shared_mem,
        IS_LARGE_BAR => p.is_large_bar,
        ASIC_REVISION => p.asic_revision,
        CAN_USE_STREAM_WAIT_VALUE => 0,
        IMAGE_SUPPORT => 0,
        PHYSICAL_MULTIPROCESSOR_COUNT => p.multi_processor_count,
        FINE_GRAIN_SUPPORT => 1,
        WALL_CLOCK_RATE => p.clock_instruction_rate,
        _ => fail!(INVALID_VALUE, "hipDeviceGetAttribute: attribute {a} is not one this device reports"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn property_struct_has_rocm6_layout() {
        // Offsets of ROCm 6's hipDeviceProp_tR0600 on x86-64.
        assert_eq!(offset_of!(DevicePropR0600, uuid), 256);
        assert_eq!(offset_of!(DevicePropR0600, total_global_mem), 288);
        assert_eq!(offset_of!(DevicePropR0600, warp_size), 308);
        assert_eq!(offset_of!(DevicePropR0600, multi_processor_count), 388);
        assert_eq!(offset_of!(DevicePropR0600, pci_bus_id), 584);
        assert_eq!(offset_of!(DevicePropR0600, gcn_arch_name), 1160);
        assert_eq!(std::mem::size_of::<DevicePropR0600>(), 1472);
    }

    #[test]
    fn cooperative_grids_are_bounded_by_work_item_slots_and_lds() {
        // gfx1100: 48 units of 2048 work-item slots; 128 threads = 4 waves of 32.
        assert_eq!(resident_groups(Arch::Gfx1100, 128, 0), 48 * 16);
        // 100 threads still take 4 whole wavefronts.
        assert_eq!(resident_groups(Arch::Gfx1100, 100, 0), 48 * 16);
        // 40 KiB of LDS: one group per unit.
        assert_eq!(resident_groups(Arch::Gfx1100, 128, 40 << 10), 48);
        // gfx90a: 104 units; 128 threads = 2 waves of 64.
        assert_eq!(resident_groups(Arch::Gfx90a, 128, 0), 104 * 16);
        assert_eq!(resident_groups(Arch::Gfx90a, 1024, 0), 104 * 2);
    }

    #[test]
    fn attributes_follow_the_properties() {
        for arch in [Arch::Gfx1100, Arch::Gfx90a] {
            assert_eq!(attribute(arch, 0, attr::WARP_SIZE), Ok(arch.wave_size() as i32));
            assert_eq!(attribute(arch, 0, attr::MAX_SHARED_MEMORY_PER_BLOCK), Ok(65536));
            assert_eq!(attribute(arch, 0, attr::PCI_BUS_ID), Ok(3));
            assert!(attribute(arch, 0, attr::MULTIPROCESSOR_COUNT).is_ok_and(|n| n > 0));
            assert_eq!(attribute(arch, 0, 21).map_err(|e| e.code), Err(INVALID_VALUE), "LUID");
        }
        assert_eq!(attribute(Arch::Gfx90a, 0, attr::COMPUTE_CAPABILITY_MAJOR), Ok(9));
        assert_eq!(attribute(Arch::Gfx1100, 0, attr::COMPUTE_CAPABILITY_MAJOR), Ok(11));
    }
}
