//! `#[repr(C)]` structs and callback types with the layouts of CUDA 13.5's
//! cuda.h on 64-bit Linux.
//!
//! Field names keep the C spelling so code reads like the CUDA
//! documentation. Byte arrays that C declares as `char` are `u8` here: same
//! size and alignment, and the driver only copies them.

use core::ffi::{c_int, c_uint, c_void};

use crate::enums::*;
use crate::handles::*;
use crate::result::CUresult;

/// `cuStreamAddCallback`'s callback.
pub type CUstreamCallback = Option<unsafe extern "C" fn(hStream: CUstream, status: CUresult, userData: *mut c_void)>;
/// `cuLaunchHostFunc`'s function and a host node's function.
pub type CUhostFn = Option<unsafe extern "C" fn(userData: *mut c_void)>;
/// The block-size-to-dynamic-shared-memory callback of
/// `cuOccupancyMaxPotentialBlockSize`.
pub type CUoccupancyB2DSize = Option<unsafe extern "C" fn(blockSize: c_int) -> usize>;

pub const CU_IPC_HANDLE_SIZE: usize = 64;

/// A device UUID (`cuDeviceGetUuid`), 16 bytes in memory order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CUuuid {
    pub bytes: [u8; 16],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CUipcMemHandle {
    pub reserved: [u8; CU_IPC_HANDLE_SIZE],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CUipcEventHandle {
    pub reserved: [u8; CU_IPC_HANDLE_SIZE],
}

impl Default for CUipcMemHandle {
    fn default() -> Self {
        CUipcMemHandle { reserved: [0; CU_IPC_HANDLE_SIZE] }
    }
}

impl Default for CUipcEventHandle {
    fn default() -> Self {
        CUipcEventHandle { reserved: [0; CU_IPC_HANDLE_SIZE] }
    }
}

/// Legacy device properties (`cuDeviceGetProperties`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUdevprop {
    pub maxThreadsPerBlock: c_int,
    pub maxThreadsDim: [c_int; 3],
    pub maxGridSize: [c_int; 3],
    pub sharedMemPerBlock: c_int,
    pub totalConstantMemory: c_int,
    pub SIMDWidth: c_int,
    pub memPitch: c_int,
    pub regsPerBlock: c_int,
    pub clockRate: c_int,
    pub textureAlign: c_int,
}

/// The argument of `cuMemcpy2D_v2` and friends.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY2D {
    pub srcXInBytes: usize,
    pub srcY: usize,
    pub srcMemoryType: CUmemorytype,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr,
    pub srcArray: CUarray,
    pub srcPitch: usize,
    pub dstXInBytes: usize,
    pub dstY: usize,
    pub dstMemoryType: CUmemorytype,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr,
    pub dstArray: CUarray,
    pub dstPitch: usize,
    pub WidthInBytes: usize,
    pub Height: usize,
}

/// The argument of `cuMemcpy3D_v2` and friends.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY3D {
    pub srcXInBytes: usize,
    pub srcY: usize,
    pub srcZ: usize,
    pub srcLOD: usize,
    pub srcMemoryType: CUmemorytype,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr,
    pub srcArray: CUarray,
    pub reserved0: *mut c_void,
    pub srcPitch: usize,
    pub srcHeight: usize,
    pub dstXInBytes: usize,
    pub dstY: usize,
    pub dstZ: usize,
    pub dstLOD: usize,
    pub dstMemoryType: CUmemorytype,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr,
    pub dstArray: CUarray,
    pub reserved1: *mut c_void,
    pub dstPitch: usize,
    pub dstHeight: usize,
    pub WidthInBytes: usize,
    pub Height: usize,
    pub Depth: usize,
}

/// The argument of `cuMemcpy3DPeer` and `cuMemcpy3DPeerAsync`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY3D_PEER {
    pub srcXInBytes: usize,
    pub srcY: usize,
    pub srcZ: usize,
    pub srcLOD: usize,
    pub srcMemoryType: CUmemorytype,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr,
    pub srcArray: CUarray,
    pub srcContext: CUcontext,
    pub srcPitch: usize,
    pub srcHeight: usize,
    pub dstXInBytes: usize,
    pub dstY: usize,
    pub dstZ: usize,
    pub dstLOD: usize,
    pub dstMemoryType: CUmemorytype,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr,
    pub dstArray: CUarray,
    pub dstContext: CUcontext,
    pub dstPitch: usize,
    pub dstHeight: usize,
    pub WidthInBytes: usize,
    pub Height: usize,
    pub Depth: usize,
}

/// The pre-3.2 `CUDA_MEMCPY2D` taken by the unsuffixed `cuMemcpy2D`,
/// `cuMemcpy2DUnaligned` and `cuMemcpy2DAsync` symbols.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY2D_v1 {
    pub srcXInBytes: c_uint,
    pub srcY: c_uint,
    pub srcMemoryType: CUmemorytype,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr_v1,
    pub srcArray: CUarray,
    pub srcPitch: c_uint,
    pub dstXInBytes: c_uint,
    pub dstY: c_uint,
    pub dstMemoryType: CUmemorytype,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr_v1,
    pub dstArray: CUarray,
    pub dstPitch: c_uint,
    pub WidthInBytes: c_uint,
    pub Height: c_uint,
}

/// The pre-3.2 `CUDA_MEMCPY3D` of the unsuffixed `cuMemcpy3D` symbols.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY3D_v1 {
    pub srcXInBytes: c_uint,
    pub srcY: c_uint,
    pub srcZ: c_uint,
    pub srcLOD: c_uint,
    pub srcMemoryType: CUmemorytype,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr_v1,
    pub srcArray: CUarray,
    pub reserved0: *mut c_void,
    pub srcPitch: c_uint,
    pub srcHeight: c_uint,
    pub dstXInBytes: c_uint,
    pub dstY: c_uint,
    pub dstZ: c_uint,
    pub dstLOD: c_uint,
    pub dstMemoryType: CUmemorytype,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr_v1,
    pub dstArray: CUarray,
    pub reserved1: *mut c_void,
    pub dstPitch: c_uint,
    pub dstHeight: c_uint,
    pub WidthInBytes: c_uint,
    pub Height: c_uint,
    pub Depth: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_ARRAY_DESCRIPTOR {
    pub Width: usize,
    pub Height: usize,
    pub Format: CUarray_format,
    pub NumChannels: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_ARRAY3D_DESCRIPTOR {
    pub Width: usize,
    pub Height: usize,
    pub Depth: usize,
    pub Format: CUarray_format,
    pub NumChannels: c_uint,
    pub Flags: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_ARRAY_DESCRIPTOR_v1 {
    pub Width: c_uint,
    pub Height: c_uint,
    pub Format: CUarray_format,
    pub NumChannels: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_ARRAY3D_DESCRIPTOR_v1 {
    pub Width: c_uint,
    pub Height: c_uint,
    pub Depth: c_uint,
    pub Format: CUarray_format,
    pub NumChannels: c_uint,
    pub Flags: c_uint,
}

/// `CUDA_RESOURCE_DESC`: what a texture or surface object reads. `res` is
/// the C union (array, mipmap, linear, pitch2D), decoded by the driver
/// according to `resType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_RESOURCE_DESC {
    pub resType: c_uint,
    pub _pad: c_uint,
    pub res: [u64; 16],
    pub flags: c_uint,
}

/// `CUDA_TEXTURE_DESC`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CUDA_TEXTURE_DESC {
    pub addressMode: [c_uint; 3],
    pub filterMode: c_uint,
    pub flags: c_uint,
    pub maxAnisotropy: c_uint,
    pub mipmapFilterMode: c_uint,
    pub mipmapLevelBias: f32,
    pub minMipmapLevelClamp: f32,
    pub maxMipmapLevelClamp: f32,
    pub borderColor: [f32; 4],
    pub reserved: [c_int; 12],
}

/// `CUDA_RESOURCE_VIEW_DESC`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUDA_RESOURCE_VIEW_DESC {
    pub format: c_uint,
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub firstMipmapLevel: c_uint,
    pub lastMipmapLevel: c_uint,
    pub firstLayer: c_uint,
    pub lastLayer: c_uint,
    pub reserved: [c_uint; 16],
}

/// The L2 access policy window of a launch or stream attribute.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUaccessPolicyWindow {
    pub base_ptr: *mut c_void,
    pub num_bytes: usize,
    pub hitRatio: f32,
    pub hitProp: CUaccessProperty,
    pub missProp: CUaccessProperty,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUlaunchMemSyncDomainMap {
    pub default_: u8,
    pub remote: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUlaunchAttributeValue_dim3 {
    pub x: c_uint,
    pub y: c_uint,
    pub z: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttributeValue_programmaticEvent {
    pub event: CUevent,
    pub flags: c_int,
    pub triggerAtBlockStart: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttributeValue_launchCompletionEvent {
    pub event: CUevent,
    pub flags: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttributeValue_deviceUpdatableKernelNode {
    pub deviceUpdatable: c_int,
    pub devNode: CUgraphDeviceNode,
}

/// The value of a launch, stream or kernel-node attribute; which member is
/// meaningful depends on the attribute id. Always 64 bytes, so a driver
/// may copy it whole whatever the id.
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUlaunchAttributeValue {
    pub pad: [u8; 64],
    pub accessPolicyWindow: CUaccessPolicyWindow,
    pub cooperative: c_int,
    pub syncPolicy: CUsynchronizationPolicy,
    pub clusterDim: CUlaunchAttributeValue_dim3,
    pub clusterSchedulingPolicyPreference: CUclusterSchedulingPolicy,
    pub programmaticStreamSerializationAllowed: c_int,
    pub programmaticEvent: CUlaunchAttributeValue_programmaticEvent,
    pub launchCompletionEvent: CUlaunchAttributeValue_launchCompletionEvent,
    pub priority: c_int,
    pub memSyncDomainMap: CUlaunchMemSyncDomainMap,
    pub memSyncDomain: CUlaunchMemSyncDomain,
    pub preferredClusterDim: CUlaunchAttributeValue_dim3,
    pub deviceUpdatableKernelNode: CUlaunchAttributeValue_deviceUpdatableKernelNode,
    pub sharedMemCarveout: c_uint,
    pub nvlinkUtilCentricScheduling: c_uint,
    pub portableClusterSizeMode: CUlaunchAttributePortableClusterMode,
    pub sharedMemoryMode: CUsharedMemoryMode,
}

impl Default for CUlaunchAttributeValue {
    fn default() -> Self {
        CUlaunchAttributeValue { pad: [0; 64] }
    }
}

impl core::fmt::Debug for CUlaunchAttributeValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Which member is live depends on the attribute id, so only the raw
        // bytes can be shown; every bit pattern of `pad` is valid.
        f.debug_struct("CUlaunchAttributeValue").field("pad", unsafe { &self.pad }).finish()
    }
}

pub type CUstreamAttrValue = CUlaunchAttributeValue;
pub type CUkernelNodeAttrValue = CUlaunchAttributeValue;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUlaunchAttribute {
    pub id: CUlaunchAttributeID,
    pub pad: [u8; 4],
    pub value: CUlaunchAttributeValue,
}

/// The launch description of `cuLaunchKernelEx`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchConfig {
    pub gridDimX: c_uint,
    pub gridDimY: c_uint,
    pub gridDimZ: c_uint,
    pub blockDimX: c_uint,
    pub blockDimY: c_uint,
    pub blockDimZ: c_uint,
    pub sharedMemBytes: c_uint,
    pub hStream: CUstream,
    pub attrs: *mut CUlaunchAttribute,
    pub numAttrs: c_uint,
}

/// One device of `cuLaunchCooperativeKernelMultiDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_LAUNCH_PARAMS {
    pub function: CUfunction,
    pub gridDimX: c_uint,
    pub gridDimY: c_uint,
    pub gridDimZ: c_uint,
    pub blockDimX: c_uint,
    pub blockDimY: c_uint,
    pub blockDimZ: c_uint,
    pub sharedMemBytes: c_uint,
    pub hStream: CUstream,
    pub kernelParams: *mut *mut c_void,
}

/// A memory location: a device, the host, or a host NUMA node.
///
/// In C the `id` shares its four bytes with a `localized` struct
/// (`unsigned char deviceId, localityDomainId`) used by
/// `CU_MEM_LOCATION_TYPE_DEVICE_LOCALITY_DOMAIN`; [`CUmemLocation::localized`]
/// reads those two bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUmemLocation {
    pub type_: CUmemLocationType,
    pub id: c_int,
}

impl CUmemLocation {
    /// `(deviceId, localityDomainId)` of the C union's `localized` member.
    pub fn localized(self) -> (u8, u8) {
        let b = self.id.to_ne_bytes();
        (b[0], b[1])
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUmemAccessDesc {
    pub location: CUmemLocation,
    pub flags: CUmemAccess_flags,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUmemAllocationProp_allocFlags {
    pub compressionType: u8,
    pub gpuDirectRDMACapable: u8,
    pub usage: u16,
    pub reserved: [u8; 4],
}

/// The properties of a `cuMemCreate` allocation.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemAllocationProp {
    pub type_: CUmemAllocationType,
    pub requestedHandleTypes: CUmemAllocationHandleType,
    pub location: CUmemLocation,
    pub win32HandleMetaData: *mut c_void,
    pub allocFlags: CUmemAllocationProp_allocFlags,
}

/// The properties of a memory pool (`cuMemPoolCreate`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemPoolProps {
    pub allocType: CUmemAllocationType,
    pub handleTypes: CUmemAllocationHandleType,
    pub location: CUmemLocation,
    pub win32SecurityAttributes: *mut c_void,
    pub maxSize: usize,
    pub usage: u16,
    pub gpuDirectRDMACapable: u8,
    pub reserved: [u8; 53],
}

/// Kernel node parameters of the CUDA 10.0 ABI (`cuGraphAddKernelNode`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_KERNEL_NODE_PARAMS_v1 {
    pub func: CUfunction,
    pub gridDimX: c_uint,
    pub gridDimY: c_uint,
    pub gridDimZ: c_uint,
    pub blockDimX: c_uint,
    pub blockDimY: c_uint,
    pub blockDimZ: c_uint,
    pub sharedMemBytes: c_uint,
    pub kernelParams: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

/// Kernel node parameters (`cuGraphAddKernelNode_v2`); `kern` and `ctx` are
/// used when `func` is NULL.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_KERNEL_NODE_PARAMS {
    pub func: CUfunction,
    pub gridDimX: c_uint,
    pub gridDimY: c_uint,
    pub gridDimZ: c_uint,
    pub blockDimX: c_uint,
    pub blockDimY: c_uint,
    pub blockDimZ: c_uint,
    pub sharedMemBytes: c_uint,
    pub kernelParams: *mut *mut c_void,
    pub extra: *mut *mut c_void,
    pub kern: CUkernel,
    pub ctx: CUcontext,
}
pub type CUDA_KERNEL_NODE_PARAMS_v2 = CUDA_KERNEL_NODE_PARAMS;
/// Same layout as v2; the generic node API (`CUgraphNodeParams`) uses it.
pub type CUDA_KERNEL_NODE_PARAMS_v3 = CUDA_KERNEL_NODE_PARAMS;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMSET_NODE_PARAMS {
    pub dst: CUdeviceptr,
    pub pitch: usize,
    pub value: c_uint,
    pub elementSize: c_uint,
    pub width: usize,
    pub height: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_HOST_NODE_PARAMS {
    pub fn_: CUhostFn,
    pub userData: *mut c_void,
}

/// Host node parameters of the generic node API; C overlays `ctx` with a
/// green context (`CUgreenCtx gCtx`) in an anonymous union.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_HOST_NODE_PARAMS_v2 {
    pub fn_: CUhostFn,
    pub userData: *mut c_void,
    pub syncMode: c_uint,
    pub ctx: CUcontext,
}

/// A memcpy node of the generic node API (`CUgraphNodeParams::memcpy`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMCPY_NODE_PARAMS {
    pub flags: c_int,
    pub reserved: c_int,
    pub copyCtx: CUcontext,
    pub copyParams: CUDA_MEMCPY3D,
}

/// A memset node of the generic node API: [`CUDA_MEMSET_NODE_PARAMS`] and
/// the context to run in.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEMSET_NODE_PARAMS_v2 {
    pub dst: CUdeviceptr,
    pub pitch: usize,
    pub value: c_uint,
    pub elementSize: c_uint,
    pub width: usize,
    pub height: usize,
    pub ctx: CUcontext,
}

/// A child graph node of the generic node API.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_CHILD_GRAPH_NODE_PARAMS {
    pub graph: CUgraph,
    pub ownership: CUgraphChildGraphNodeOwnership,
}

/// An event record node; C overlays `ctx` with a green context.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_EVENT_RECORD_NODE_PARAMS {
    pub event: CUevent,
    pub ctx: CUcontext,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_EVENT_WAIT_NODE_PARAMS {
    pub event: CUevent,
}

/// A memory allocation node (`cuGraphAddMemAllocNode`); `dptr` is written
/// by the driver. The v1 and v2 layouts are the same.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEM_ALLOC_NODE_PARAMS {
    pub poolProps: CUmemPoolProps,
    pub accessDescs: *const CUmemAccessDesc,
    pub accessDescCount: usize,
    pub bytesize: usize,
    pub dptr: CUdeviceptr,
}
pub type CUDA_MEM_ALLOC_NODE_PARAMS_v1 = CUDA_MEM_ALLOC_NODE_PARAMS;
pub type CUDA_MEM_ALLOC_NODE_PARAMS_v2 = CUDA_MEM_ALLOC_NODE_PARAMS;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_MEM_FREE_NODE_PARAMS {
    pub dptr: CUdeviceptr,
}

/// The node-type-specific part of [`CUgraphNodeParams`].
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUgraphNodeParams_params {
    pub reserved1: [i64; 29],
    pub kernel: CUDA_KERNEL_NODE_PARAMS_v3,
    pub memcpy: CUDA_MEMCPY_NODE_PARAMS,
    pub memset: CUDA_MEMSET_NODE_PARAMS_v2,
    pub host: CUDA_HOST_NODE_PARAMS_v2,
    pub graph: CUDA_CHILD_GRAPH_NODE_PARAMS,
    pub eventWait: CUDA_EVENT_WAIT_NODE_PARAMS,
    pub eventRecord: CUDA_EVENT_RECORD_NODE_PARAMS,
    pub alloc: CUDA_MEM_ALLOC_NODE_PARAMS_v2,
    pub free: CUDA_MEM_FREE_NODE_PARAMS,
    pub asBytes: [u8; 232],
}

/// The generic node API's parameters (`cuGraphAddNode`,
/// `cuGraphNodeSetParams`): the node type and its parameters.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUgraphNodeParams {
    pub type_: CUgraphNodeType,
    pub reserved0: [c_int; 3],
    pub params: CUgraphNodeParams_params,
    pub reserved2: i64,
}

/// `cuGraphInstantiateWithParams`'s in/out argument.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_GRAPH_INSTANTIATE_PARAMS {
    pub flags: u64,
    pub hUploadStream: CUstream,
    pub hErrNode_out: CUgraphNode,
    pub result_out: CUgraphInstantiateResult,
}

/// What `cuGraphExecUpdate` (v2) reports.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUgraphExecUpdateResultInfo {
    pub result: CUgraphExecUpdateResult,
    pub errorNode: CUgraphNode,
    pub errorFromNode: CUgraphNode,
}

/// The annotation of a graph edge (CUDA 12.3 `_v2` graph functions).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUgraphEdgeData {
    pub from_port: u8,
    pub to_port: u8,
    pub type_: u8,
    pub reserved: [u8; 5],
}

// Sizes, alignments and offsets of cuda.h's definitions, measured with a C
// compiler on x86-64 Linux (LP64; aarch64 agrees).
macro_rules! assert_layout {
    ($t:ty, size $size:literal, align $align:literal $(, $field:ident @ $off:literal)* $(,)?) => {
        const _: () = {
            assert!(core::mem::size_of::<$t>() == $size);
            assert!(core::mem::align_of::<$t>() == $align);
            $(assert!(core::mem::offset_of!($t, $field) == $off);)*
        };
    };
}

#[cfg(target_pointer_width = "64")]
mod layout {
    use super::*;
    assert_layout!(CUuuid, size 16, align 1, bytes @ 0);
    assert_layout!(CUipcMemHandle, size 64, align 1, reserved @ 0);
    assert_layout!(CUipcEventHandle, size 64, align 1, reserved @ 0);
    assert_layout!(CUdevprop, size 56, align 4, maxThreadsPerBlock @ 0, maxThreadsDim @ 4, maxGridSize @ 16, sharedMemPerBlock @ 28, totalConstantMemory @ 32, SIMDWidth @ 36, memPitch @ 40, regsPerBlock @ 44, clockRate @ 48, textureAlign @ 52);
    assert_layout!(CUDA_MEMCPY2D, size 128, align 8, srcXInBytes @ 0, srcY @ 8, srcMemoryType @ 16, srcHost @ 24, srcDevice @ 32, srcArray @ 40, srcPitch @ 48, dstXInBytes @ 56, dstY @ 64, dstMemoryType @ 72, dstHost @ 80, dstDevice @ 88, dstArray @ 96, dstPitch @ 104, WidthInBytes @ 112, Height @ 120);
    assert_layout!(CUDA_MEMCPY3D, size 200, align 8, srcXInBytes @ 0, srcY @ 8, srcZ @ 16, srcLOD @ 24, srcMemoryType @ 32, srcHost @ 40, srcDevice @ 48, srcArray @ 56, reserved0 @ 64, srcPitch @ 72, srcHeight @ 80, dstXInBytes @ 88, dstY @ 96, dstZ @ 104, dstLOD @ 112, dstMemoryType @ 120, dstHost @ 128, dstDevice @ 136, dstArray @ 144, reserved1 @ 152, dstPitch @ 160, dstHeight @ 168, WidthInBytes @ 176, Height @ 184, Depth @ 192);
    assert_layout!(CUDA_MEMCPY3D_PEER, size 200, align 8, srcXInBytes @ 0, srcY @ 8, srcZ @ 16, srcLOD @ 24, srcMemoryType @ 32, srcHost @ 40, srcDevice @ 48, srcArray @ 56, srcContext @ 64, srcPitch @ 72, srcHeight @ 80, dstXInBytes @ 88, dstY @ 96, dstZ @ 104, dstLOD @ 112, dstMemoryType @ 120, dstHost @ 128, dstDevice @ 136, dstArray @ 144, dstContext @ 152, dstPitch @ 160, dstHeight @ 168, WidthInBytes @ 176, Height @ 184, Depth @ 192);
    assert_layout!(CUDA_MEMCPY2D_v1, size 96, align 8, srcXInBytes @ 0, srcY @ 4, srcMemoryType @ 8, srcHost @ 16, srcDevice @ 24, srcArray @ 32, srcPitch @ 40, dstXInBytes @ 44, dstY @ 48, dstMemoryType @ 52, dstHost @ 56, dstDevice @ 64, dstArray @ 72, dstPitch @ 80, WidthInBytes @ 84, Height @ 88);
    assert_layout!(CUDA_MEMCPY3D_v1, size 144, align 8, srcXInBytes @ 0, srcY @ 4, srcZ @ 8, srcLOD @ 12, srcMemoryType @ 16, srcHost @ 24, srcDevice @ 32, srcArray @ 40, reserved0 @ 48, srcPitch @ 56, srcHeight @ 60, dstXInBytes @ 64, dstY @ 68, dstZ @ 72, dstLOD @ 76, dstMemoryType @ 80, dstHost @ 88, dstDevice @ 96, dstArray @ 104, reserved1 @ 112, dstPitch @ 120, dstHeight @ 124, WidthInBytes @ 128, Height @ 132, Depth @ 136);
    assert_layout!(CUDA_ARRAY_DESCRIPTOR, size 24, align 8, Width @ 0, Height @ 8, Format @ 16, NumChannels @ 20);
    assert_layout!(CUDA_ARRAY3D_DESCRIPTOR, size 40, align 8, Width @ 0, Height @ 8, Depth @ 16, Format @ 24, NumChannels @ 28, Flags @ 32);
    assert_layout!(CUDA_ARRAY_DESCRIPTOR_v1, size 16, align 4, Width @ 0, Height @ 4, Format @ 8, NumChannels @ 12);
    assert_layout!(CUDA_ARRAY3D_DESCRIPTOR_v1, size 24, align 4, Width @ 0, Height @ 4, Depth @ 8, Format @ 12, NumChannels @ 16, Flags @ 20);
    assert_layout!(CUDA_RESOURCE_DESC, size 144, align 8, resType @ 0, res @ 8, flags @ 136);
    assert_layout!(CUDA_TEXTURE_DESC, size 104, align 4, addressMode @ 0, filterMode @ 12, flags @ 16, maxAnisotropy @ 20, mipmapFilterMode @ 24, mipmapLevelBias @ 28, minMipmapLevelClamp @ 32, maxMipmapLevelClamp @ 36, borderColor @ 40, reserved @ 56);
    assert_layout!(CUDA_RESOURCE_VIEW_DESC, size 112, align 8, format @ 0, width @ 8, height @ 16, depth @ 24, firstMipmapLevel @ 32, lastMipmapLevel @ 36, firstLayer @ 40, lastLayer @ 44, reserved @ 48);
    assert_layout!(CUaccessPolicyWindow, size 32, align 8, base_ptr @ 0, num_bytes @ 8, hitRatio @ 16, hitProp @ 20, missProp @ 24);
    assert_layout!(CUlaunchMemSyncDomainMap, size 2, align 1, default_ @ 0, remote @ 1);
    assert_layout!(CUlaunchAttributeValue, size 64, align 8, pad @ 0);
    assert_layout!(CUlaunchAttribute, size 72, align 8, id @ 0, pad @ 4, value @ 8);
    assert_layout!(CUlaunchConfig, size 56, align 8, gridDimX @ 0, gridDimY @ 4, gridDimZ @ 8, blockDimX @ 12, blockDimY @ 16, blockDimZ @ 20, sharedMemBytes @ 24, hStream @ 32, attrs @ 40, numAttrs @ 48);
    assert_layout!(CUDA_LAUNCH_PARAMS, size 56, align 8, function @ 0, gridDimX @ 8, gridDimY @ 12, gridDimZ @ 16, blockDimX @ 20, blockDimY @ 24, blockDimZ @ 28, sharedMemBytes @ 32, hStream @ 40, kernelParams @ 48);
    assert_layout!(CUmemLocation, size 8, align 4, type_ @ 0, id @ 4);
    assert_layout!(CUmemAccessDesc, size 12, align 4, location @ 0, flags @ 8);
    assert_layout!(CUmemAllocationProp, size 32, align 8, type_ @ 0, requestedHandleTypes @ 4, location @ 8, win32HandleMetaData @ 16, allocFlags @ 24);
    assert_layout!(CUmemPoolProps, size 88, align 8, allocType @ 0, handleTypes @ 4, location @ 8, win32SecurityAttributes @ 16, maxSize @ 24, usage @ 32, gpuDirectRDMACapable @ 34, reserved @ 35);
    assert_layout!(CUDA_KERNEL_NODE_PARAMS_v1, size 56, align 8, func @ 0, gridDimX @ 8, gridDimY @ 12, gridDimZ @ 16, blockDimX @ 20, blockDimY @ 24, blockDimZ @ 28, sharedMemBytes @ 32, kernelParams @ 40, extra @ 48);
    assert_layout!(CUDA_KERNEL_NODE_PARAMS, size 72, align 8, func @ 0, gridDimX @ 8, gridDimY @ 12, gridDimZ @ 16, blockDimX @ 20, blockDimY @ 24, blockDimZ @ 28, sharedMemBytes @ 32, kernelParams @ 40, extra @ 48, kern @ 56, ctx @ 64);
    assert_layout!(CUDA_MEMSET_NODE_PARAMS, size 40, align 8, dst @ 0, pitch @ 8, value @ 16, elementSize @ 20, width @ 24, height @ 32);
    assert_layout!(CUDA_HOST_NODE_PARAMS, size 16, align 8, fn_ @ 0, userData @ 8);
    assert_layout!(CUDA_HOST_NODE_PARAMS_v2, size 32, align 8, fn_ @ 0, userData @ 8, syncMode @ 16, ctx @ 24);
    assert_layout!(CUDA_MEMCPY_NODE_PARAMS, size 216, align 8, flags @ 0, reserved @ 4, copyCtx @ 8, copyParams @ 16);
    assert_layout!(CUDA_MEMSET_NODE_PARAMS_v2, size 48, align 8, dst @ 0, pitch @ 8, value @ 16, elementSize @ 20, width @ 24, height @ 32, ctx @ 40);
    assert_layout!(CUDA_CHILD_GRAPH_NODE_PARAMS, size 16, align 8, graph @ 0, ownership @ 8);
    assert_layout!(CUDA_EVENT_RECORD_NODE_PARAMS, size 16, align 8, event @ 0, ctx @ 8);
    assert_layout!(CUDA_EVENT_WAIT_NODE_PARAMS, size 8, align 8, event @ 0);
    assert_layout!(CUDA_MEM_ALLOC_NODE_PARAMS, size 120, align 8, poolProps @ 0, accessDescs @ 88, accessDescCount @ 96, bytesize @ 104, dptr @ 112);
    assert_layout!(CUDA_MEM_FREE_NODE_PARAMS, size 8, align 8, dptr @ 0);
    assert_layout!(CUgraphNodeParams_params, size 232, align 8);
    assert_layout!(CUgraphNodeParams, size 256, align 8, type_ @ 0, reserved0 @ 4, params @ 16, reserved2 @ 248);
    assert_layout!(CUDA_GRAPH_INSTANTIATE_PARAMS, size 32, align 8, flags @ 0, hUploadStream @ 8, hErrNode_out @ 16, result_out @ 24);
    assert_layout!(CUgraphExecUpdateResultInfo, size 24, align 8, result @ 0, errorNode @ 8, errorFromNode @ 16);
    assert_layout!(CUgraphEdgeData, size 8, align 1, from_port @ 0, to_port @ 1, type_ @ 2, reserved @ 3);
}
