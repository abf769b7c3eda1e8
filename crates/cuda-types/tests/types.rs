use std::ffi::c_void;
use std::mem::{align_of, size_of};

use cuda_types::*;

#[test]
fn enums_and_handles_have_their_c_sizes() {
    assert_eq!(size_of::<CUresult>(), 4);
    assert_eq!(size_of::<CUdevice_attribute>(), 4);
    assert_eq!(size_of::<CUshared_carveout>(), 4);
    assert_eq!(size_of::<CUctx_flags>(), 4);
    assert_eq!(size_of::<CUcontext>(), size_of::<*mut c_void>());
    assert_eq!(size_of::<CUstream>(), size_of::<*mut c_void>());
    assert_eq!(size_of::<CUstreamCallback>(), size_of::<*mut c_void>());
    assert_eq!(size_of::<CUhostFn>(), size_of::<*mut c_void>());
    assert_eq!(size_of::<CUoccupancyB2DSize>(), size_of::<*mut c_void>());
    assert_eq!(size_of::<CUdeviceptr>(), 8);
    assert_eq!(size_of::<CUlaunchAttributeValue>(), 64);
    assert_eq!(align_of::<CUlaunchAttribute>(), 8);
}

#[test]
fn device_attribute_ids() {
    // Spot checks against the ids cudart queries (cudart-contract.md).
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK.0, 1);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE.0, 10);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT.0, 16);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR.0, 75);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR.0, 76);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID.0, 50);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID.0, 33);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID.0, 34);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX.0, 162);
    // Every id from 1 to 161 is named: cudart asks for most of them.
    for id in 1..162 {
        assert!(CUdevice_attribute(id).name().is_some(), "attribute {id} unnamed");
    }
    assert_eq!(
        CUdevice_attribute(8).name(),
        Some("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
        "the first name of an aliased value is the canonical one"
    );
}

#[test]
fn enum_debug_and_flags() {
    assert_eq!(format!("{:?}", CUlimit::CU_LIMIT_STACK_SIZE), "CU_LIMIT_STACK_SIZE");
    assert_eq!(format!("{:?}", CUlimit(1234)), "CUlimit(1234)");
    let f = CUctx_flags::CU_CTX_SCHED_YIELD | CUctx_flags::CU_CTX_MAP_HOST;
    assert!(f.contains(CUctx_flags::CU_CTX_MAP_HOST));
    assert!(!f.contains(CUctx_flags::CU_CTX_SCHED_SPIN));
    assert_eq!((f & CUctx_flags::CU_CTX_SCHED_MASK), CUctx_flags::CU_CTX_SCHED_YIELD);
    assert_eq!(CUshared_carveout::CU_SHAREDMEM_CARVEOUT_DEFAULT.0, -1);
    assert_eq!(CUlibraryOption::CU_LIBRARY_BINARY_IS_PRESERVED.0, 1);
    assert_eq!(CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING.0, 2);
    assert_eq!(CUjit_option::CU_JIT_ERROR_LOG_BUFFER.0, 5);
}

#[test]
fn constants() {
    assert_eq!(CU_STREAM_LEGACY.addr(), 1);
    assert_eq!(CU_STREAM_PER_THREAD.addr(), 2);
    assert!(CUstream::NULL.is_null());
    assert_eq!(CU_LAUNCH_PARAM_END as usize, 0);
    assert_eq!(CU_LAUNCH_PARAM_BUFFER_POINTER as usize, 1);
    assert_eq!(CU_LAUNCH_PARAM_BUFFER_SIZE as usize, 2);
    assert_eq!(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 2);
    assert_eq!(CU_MEMHOSTALLOC_WRITECOMBINED, 4);
    assert_eq!(CU_MEMHOSTREGISTER_READ_ONLY, 8);
}

#[test]
fn launch_attribute_value_members_overlay() {
    let mut v = CUlaunchAttributeValue::default();
    v.clusterDim = CUlaunchAttributeValue_dim3 { x: 2, y: 3, z: 4 };
    let bytes = unsafe { v.pad };
    assert_eq!(&bytes[..12], &[2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]);
    let attr = CUlaunchAttribute { id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, pad: [0; 4], value: v };
    assert_eq!(unsafe { attr.value.clusterDim.z }, 4);
}
