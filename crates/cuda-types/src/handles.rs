//! Handles: opaque pointers to driver objects, and the integer handles.

use core::ffi::c_void;
use core::fmt;

macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident($target:ident);)*) => {$(
        /// The object behind a handle; never constructed, only pointed to.
        #[repr(C)]
        pub struct $target {
            _opaque: [u8; 0],
        }

        $(#[$doc])*
        ///
        /// A distinct type per handle kind (C only has distinct pointer
        /// types), transparent over the pointer so it passes through the C
        /// ABI unchanged. The driver decides what the pointer means; nothing
        /// here dereferences it.
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub *mut $target);

        impl $name {
            pub const NULL: $name = $name(core::ptr::null_mut());

            pub fn is_null(self) -> bool {
                self.0.is_null()
            }

            /// The handle's address, e.g. as a key in the driver's tables.
            pub fn addr(self) -> usize {
                self.0 as usize
            }

            /// A handle that carries `addr` (which may be a small tag such
            /// as `CU_STREAM_LEGACY` rather than a real address).
            pub const fn from_addr(addr: usize) -> $name {
                $name(addr as *mut $target)
            }

            pub fn as_ptr(self) -> *mut c_void {
                self.0.cast()
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::NULL
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0 as usize)
            }
        }

        // A handle is an identifier handed between threads by the API's
        // contract; the objects it names are synchronised by the driver.
        unsafe impl Send for $name {}
        unsafe impl Sync for $name {}
    )*};
}

handles! {
    /// A context (`struct CUctx_st *`).
    CUcontext(CUctx_st);
    /// A loaded module (`struct CUmod_st *`).
    CUmodule(CUmod_st);
    /// A function of a loaded module (`struct CUfunc_st *`).
    CUfunction(CUfunc_st);
    /// A context-independent library (`struct CUlib_st *`).
    CUlibrary(CUlib_st);
    /// A kernel of a library (`struct CUkern_st *`); CUDA 13.x cudart passes
    /// these wherever a CUfunction is expected.
    CUkernel(CUkern_st);
    CUarray(CUarray_st);
    CUmipmappedArray(CUmipmappedArray_st);
    CUtexref(CUtexref_st);
    CUsurfref(CUsurfref_st);
    CUevent(CUevent_st);
    /// A stream; besides real streams it may be NULL (the default stream)
    /// or one of the tags [`CU_STREAM_LEGACY`](crate::CU_STREAM_LEGACY) and
    /// [`CU_STREAM_PER_THREAD`](crate::CU_STREAM_PER_THREAD).
    CUstream(CUstream_st);
    CUgraphicsResource(CUgraphicsResource_st);
    CUexternalMemory(CUextMemory_st);
    CUexternalSemaphore(CUextSemaphore_st);
    CUgraph(CUgraph_st);
    CUgraphNode(CUgraphNode_st);
    CUgraphExec(CUgraphExec_st);
    CUmemoryPool(CUmemPoolHandle_st);
    CUuserObject(CUuserObject_st);
    CUgraphDeviceNode(CUgraphDeviceUpdatableNode_st);
    CUasyncCallbackHandle(CUasyncCallbackEntry_st);
    CUgreenCtx(CUgreenCtx_st);
    CUlinkState(CUlinkState_st);
    CUcheckpointOperationHandle(CUIcheckpointOperation_st);
    CUcoredumpCallbackHandle(CUcoredumpCallbackEntry_st);
    CUdevResourceDesc(CUdevResourceDesc_st);
    CUlogsCallbackHandle(CUlogsCallbackEntry_st);
}

/// A device address. 64 bits on every platform anycuda targets (C:
/// `unsigned long long` when `__LP64__`).
pub type CUdeviceptr = u64;
pub type CUdeviceptr_v2 = u64;
/// The 32-bit device address of the pre-3.2 ABI (`cuMemAlloc` without
/// `_v2`).
pub type CUdeviceptr_v1 = u32;
/// A device ordinal.
pub type CUdevice = i32;
pub type CUdevice_v1 = i32;
pub type CUtexObject = u64;
pub type CUsurfObject = u64;
pub type CUmemGenericAllocationHandle = u64;
pub type CUgraphConditionalHandle = u64;
pub type CUlogicalEndpointId = u32;
pub type CUlogIterator = u32;
pub type cuuint32_t = u32;
pub type cuuint64_t = u64;
