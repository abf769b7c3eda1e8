//! `#define` constants of cuda.h.

use core::ffi::c_void;

use crate::enums::CUdriverProcAddress_flags;
use crate::handles::{CUdevice, CUstream};

/// The header version this crate describes (`CUDA_VERSION` of cuda.h).
pub const CUDA_VERSION: u32 = 13050;

/// Stream tag: the legacy default stream, whatever the caller's
/// compilation mode.
pub const CU_STREAM_LEGACY: CUstream = CUstream::from_addr(0x1);
/// Stream tag: the calling thread's per-thread default stream.
pub const CU_STREAM_PER_THREAD: CUstream = CUstream::from_addr(0x2);

// Markers in the `extra` array of cuLaunchKernel: pointers that are really
// small integers.
pub const CU_LAUNCH_PARAM_END_AS_INT: usize = 0x00;
pub const CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT: usize = 0x01;
pub const CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT: usize = 0x02;
pub const CU_LAUNCH_PARAM_END: *mut c_void = CU_LAUNCH_PARAM_END_AS_INT as *mut c_void;
pub const CU_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT as *mut c_void;
pub const CU_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT as *mut c_void;

// cuMemHostAlloc flags.
pub const CU_MEMHOSTALLOC_PORTABLE: u32 = 0x01;
pub const CU_MEMHOSTALLOC_DEVICEMAP: u32 = 0x02;
pub const CU_MEMHOSTALLOC_WRITECOMBINED: u32 = 0x04;

// cuMemHostRegister flags.
pub const CU_MEMHOSTREGISTER_PORTABLE: u32 = 0x01;
pub const CU_MEMHOSTREGISTER_DEVICEMAP: u32 = 0x02;
pub const CU_MEMHOSTREGISTER_IOMEMORY: u32 = 0x04;
pub const CU_MEMHOSTREGISTER_READ_ONLY: u32 = 0x08;

// cuGetProcAddress flags, typed as its `cuuint64_t flags` parameter.
pub const CU_GET_PROC_ADDRESS_DEFAULT: u64 = CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT.0 as u64;
pub const CU_GET_PROC_ADDRESS_LEGACY_STREAM: u64 = CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_LEGACY_STREAM.0 as u64;
pub const CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: u64 =
    CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.0 as u64;

/// Device id meaning "the host" in memory advice and prefetch calls.
pub const CU_DEVICE_CPU: CUdevice = -1;
pub const CU_DEVICE_INVALID: CUdevice = -2;

// cuArray3DCreate flags.
pub const CUDA_ARRAY3D_LAYERED: u32 = 0x01;
pub const CUDA_ARRAY3D_2DARRAY: u32 = 0x01;
pub const CUDA_ARRAY3D_SURFACE_LDST: u32 = 0x02;
pub const CUDA_ARRAY3D_CUBEMAP: u32 = 0x04;
pub const CUDA_ARRAY3D_TEXTURE_GATHER: u32 = 0x08;
pub const CUDA_ARRAY3D_DEPTH_TEXTURE: u32 = 0x10;
pub const CUDA_ARRAY3D_COLOR_ATTACHMENT: u32 = 0x20;
pub const CUDA_ARRAY3D_SPARSE: u32 = 0x40;
pub const CUDA_ARRAY3D_DEFERRED_MAPPING: u32 = 0x80;
pub const CUDA_ARRAY3D_VIDEO_ENCODE_DECODE: u32 = 0x100;

// cuLaunchCooperativeKernelMultiDevice flags.
pub const CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC: u32 = 0x01;
pub const CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC: u32 = 0x02;

// Graph edge ports of kernel nodes.
pub const CU_GRAPH_KERNEL_NODE_PORT_DEFAULT: u8 = 0;
pub const CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC: u8 = 1;
pub const CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER: u8 = 2;

// Texture reference flags.
pub const CU_TRSA_OVERRIDE_FORMAT: u32 = 0x01;
pub const CU_TRSF_READ_AS_INTEGER: u32 = 0x01;
pub const CU_TRSF_NORMALIZED_COORDINATES: u32 = 0x02;
pub const CU_TRSF_SRGB: u32 = 0x10;
pub const CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION: u32 = 0x20;
pub const CU_TRSF_SEAMLESS_CUBEMAP: u32 = 0x40;
