//! `CUresult`: the status code every driver API function returns.

use core::ffi::CStr;
use core::fmt;

/// A CUDA driver API status code (`enum cudaError_enum` in C).
///
/// A newtype over the raw value rather than a Rust enum: codes cross the C
/// boundary in both directions (callbacks receive them, `cuGetErrorName`
/// is asked about arbitrary integers) and an out-of-range Rust enum would be
/// undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CUresult(pub u32);

// A `&'static CStr` from a string literal, checked at compile time.
macro_rules! cstr {
    ($s:expr) => {
        const {
            match CStr::from_bytes_with_nul(concat!($s, "\0").as_bytes()) {
                Ok(c) => c,
                Err(_) => panic!("interior NUL"),
            }
        }
    };
}

macro_rules! results {
    ($($name:ident = $value:literal => $text:literal,)*) => {
        #[allow(non_upper_case_globals)]
        impl CUresult {
            $(pub const $name: CUresult = CUresult($value);)*

            /// Every code CUDA 13.x defines, in ascending order.
            pub const ALL: &'static [CUresult] = &[$(CUresult($value)),*];

            /// The code's C name, as `cuGetErrorName` returns it
            /// (`"CUDA_ERROR_INVALID_VALUE"`); `None` for a code CUDA does not
            /// define, where the driver answers CUDA_ERROR_INVALID_VALUE and
            /// sets the string to NULL.
            pub const fn name(self) -> Option<&'static CStr> {
                match self.0 {
                    $($value => Some(cstr!(stringify!($name))),)*
                    _ => None,
                }
            }

            /// The text `cuGetErrorString` returns (`"invalid argument"`);
            /// `None` for a code CUDA does not define, like [`CUresult::name`].
            pub const fn description(self) -> Option<&'static CStr> {
                match self.0 {
                    $($value => Some(cstr!($text)),)*
                    _ => None,
                }
            }
        }
    };
}

// Descriptions are the strings NVIDIA's driver returns (read from driver
// 555.58 through cuGetErrorString). Codes newer than that driver carry the
// text NVIDIA's CUDA 13.5 runtime gives the same code (`// runtime`; the
// runtime and the driver agree on every code both know), or, marked
// `// unobserved`, a text of ours until a newer driver is asked.
results! {
    CUDA_SUCCESS = 0 => "no error",
    CUDA_ERROR_INVALID_VALUE = 1 => "invalid argument",
    CUDA_ERROR_OUT_OF_MEMORY = 2 => "out of memory",
    CUDA_ERROR_NOT_INITIALIZED = 3 => "initialization error",
    CUDA_ERROR_DEINITIALIZED = 4 => "driver shutting down",
    CUDA_ERROR_PROFILER_DISABLED = 5 => "profiler disabled while using external profiling tool",
    CUDA_ERROR_PROFILER_NOT_INITIALIZED = 6 => "profiler not initialized: call cudaProfilerInitialize()",
    CUDA_ERROR_PROFILER_ALREADY_STARTED = 7 => "profiler already started",
    CUDA_ERROR_PROFILER_ALREADY_STOPPED = 8 => "profiler already stopped",
    CUDA_ERROR_STUB_LIBRARY = 34 => "CUDA driver is a stub library",
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36 => "API call is not supported in the installed CUDA driver", // runtime
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46 => "CUDA-capable device(s) is/are busy or unavailable",
    CUDA_ERROR_MULTICAST_RESOURCE_FULL = 47 => "multicast resource is full", // unobserved
    CUDA_ERROR_NO_DEVICE = 100 => "no CUDA-capable device is detected",
    CUDA_ERROR_INVALID_DEVICE = 101 => "invalid device ordinal",
    CUDA_ERROR_DEVICE_NOT_LICENSED = 102 => "device doesn't have valid Grid license",
    CUDA_ERROR_INVALID_IMAGE = 200 => "device kernel image is invalid",
    CUDA_ERROR_INVALID_CONTEXT = 201 => "invalid device context",
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT = 202 => "context already current",
    CUDA_ERROR_MAP_FAILED = 205 => "mapping of buffer object failed",
    CUDA_ERROR_UNMAP_FAILED = 206 => "unmapping of buffer object failed",
    CUDA_ERROR_ARRAY_IS_MAPPED = 207 => "array is mapped",
    CUDA_ERROR_ALREADY_MAPPED = 208 => "resource already mapped",
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209 => "no kernel image is available for execution on the device",
    CUDA_ERROR_ALREADY_ACQUIRED = 210 => "resource already acquired",
    CUDA_ERROR_NOT_MAPPED = 211 => "resource not mapped",
    CUDA_ERROR_NOT_MAPPED_AS_ARRAY = 212 => "resource not mapped as array",
    CUDA_ERROR_NOT_MAPPED_AS_POINTER = 213 => "resource not mapped as pointer",
    CUDA_ERROR_ECC_UNCORRECTABLE = 214 => "uncorrectable ECC error encountered",
    CUDA_ERROR_UNSUPPORTED_LIMIT = 215 => "limit is not supported on this architecture",
    CUDA_ERROR_CONTEXT_ALREADY_IN_USE = 216 => "exclusive-thread device already in use by a different thread",
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217 => "peer access is not supported between these two devices",
    CUDA_ERROR_INVALID_PTX = 218 => "a PTX JIT compilation failed",
    CUDA_ERROR_INVALID_GRAPHICS_CONTEXT = 219 => "invalid OpenGL or DirectX context",
    CUDA_ERROR_NVLINK_UNCORRECTABLE = 220 => "uncorrectable NVLink error detected during the execution",
    CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221 => "PTX JIT compiler library not found",
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222 => "the provided PTX was compiled with an unsupported toolchain.",
    CUDA_ERROR_JIT_COMPILATION_DISABLED = 223 => "PTX JIT compilation was disabled",
    CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY = 224 => "the provided execution affinity is not supported",
    CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC = 225 => "the provided PTX contains unsupported call to cudaDeviceSynchronize",
    CUDA_ERROR_CONTAINED = 226 => "Invalid access of peer GPU memory over nvlink or a hardware error", // runtime
    CUDA_ERROR_INSUFFICIENT_LOADER_VERSION = 227 => "Loader version is insufficient for fatbin", // runtime
    CUDA_ERROR_INVALID_SOURCE = 300 => "device kernel image is invalid",
    CUDA_ERROR_FILE_NOT_FOUND = 301 => "file not found",
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302 => "shared object symbol not found",
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED = 303 => "shared object initialization failed",
    CUDA_ERROR_OPERATING_SYSTEM = 304 => "OS call failed or operation not supported on this OS",
    CUDA_ERROR_INVALID_HANDLE = 400 => "invalid resource handle",
    CUDA_ERROR_ILLEGAL_STATE = 401 => "the operation cannot be performed in the present state",
    CUDA_ERROR_LOSSY_QUERY = 402 => "attempted introspection would be semantically lossy",
    CUDA_ERROR_NOT_FOUND = 500 => "named symbol not found",
    CUDA_ERROR_NOT_READY = 600 => "device not ready",
    CUDA_ERROR_ILLEGAL_ADDRESS = 700 => "an illegal memory access was encountered",
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701 => "too many resources requested for launch",
    CUDA_ERROR_LAUNCH_TIMEOUT = 702 => "the launch timed out and was terminated",
    CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING = 703 => "launch uses incompatible texturing mode",
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704 => "peer access is already enabled",
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705 => "peer access has not been enabled",
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708 => "cannot set while device is active in this process",
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709 => "context is destroyed",
    CUDA_ERROR_ASSERT = 710 => "device-side assert triggered",
    CUDA_ERROR_TOO_MANY_PEERS = 711 => "peer mapping resources exhausted",
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712 => "part or all of the requested memory range is already mapped",
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713 => "pointer does not correspond to a registered memory region",
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714 => "hardware stack error",
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715 => "an illegal instruction was encountered",
    CUDA_ERROR_MISALIGNED_ADDRESS = 716 => "misaligned address",
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717 => "operation not supported on global/shared address space",
    CUDA_ERROR_INVALID_PC = 718 => "invalid program counter",
    CUDA_ERROR_LAUNCH_FAILED = 719 => "unspecified launch failure",
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720 => "too many blocks in cooperative launch",
    CUDA_ERROR_TENSOR_MEMORY_LEAK = 721 => "tensor memory not completely freed", // runtime
    CUDA_ERROR_NOT_PERMITTED = 800 => "operation not permitted",
    CUDA_ERROR_NOT_SUPPORTED = 801 => "operation not supported",
    CUDA_ERROR_SYSTEM_NOT_READY = 802 => "system not yet initialized",
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803 => "system has unsupported display driver / cuda driver combination",
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804 => "forward compatibility was attempted on non supported HW",
    CUDA_ERROR_MPS_CONNECTION_FAILED = 805 => "MPS client failed to connect to the MPS control daemon or the MPS server",
    CUDA_ERROR_MPS_RPC_FAILURE = 806 => "the remote procedural call between the MPS server and the MPS client failed",
    CUDA_ERROR_MPS_SERVER_NOT_READY = 807 => "MPS server is not ready to accept new MPS client requests",
    CUDA_ERROR_MPS_MAX_CLIENTS_REACHED = 808 => "the hardware resources required to create MPS client have been exhausted",
    CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED = 809 => "the hardware resources required to support device connections have been exhausted",
    CUDA_ERROR_MPS_CLIENT_TERMINATED = 810 => "the MPS client has been terminated by the server",
    CUDA_ERROR_CDP_NOT_SUPPORTED = 811 => "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it",
    CUDA_ERROR_CDP_VERSION_MISMATCH = 812 => "unsupported interaction between different versions of CUDA Dynamic Parallelism",
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900 => "operation not permitted when stream is capturing",
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901 => "operation failed due to a previous error during capture",
    CUDA_ERROR_STREAM_CAPTURE_MERGE = 902 => "operation would result in a merge of separate capture sequences",
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903 => "capture was not ended in the same stream as it began",
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904 => "capturing stream has unjoined work",
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905 => "dependency created on uncaptured work in another stream",
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906 => "operation would make the legacy stream depend on a capturing blocking stream",
    CUDA_ERROR_CAPTURED_EVENT = 907 => "operation not permitted on an event last recorded in a capturing stream",
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908 => "attempt to terminate a thread-local capture sequence from another thread",
    CUDA_ERROR_TIMEOUT = 909 => "wait operation timed out",
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910 => "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update",
    CUDA_ERROR_EXTERNAL_DEVICE = 911 => "an async error has occured in external entity outside of CUDA",
    CUDA_ERROR_INVALID_CLUSTER_SIZE = 912 => "a kernel launch error has occurred due to cluster misconfiguration",
    CUDA_ERROR_FUNCTION_NOT_LOADED = 913 => "the function handle is not loaded when calling an API that requires a loaded function",
    CUDA_ERROR_INVALID_RESOURCE_TYPE = 914 => "one or more resources passed in are not valid resource types for the operation",
    CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION = 915 => "one or more resources are insufficient or non-applicable for the operation",
    CUDA_ERROR_KEY_ROTATION = 916 => "an error occurred during the key rotation sequence", // unobserved
    CUDA_ERROR_STREAM_DETACHED = 917 => "API call not permitted since the green context associated with the stream has been destroyed", // runtime
    CUDA_ERROR_GRAPH_RECAPTURE_FAILURE = 918 => "recapturing to the source graph failed and had to be terminated", // runtime
    CUDA_ERROR_FABRIC_NOT_READY = 919 => "GPU fabric is not ready within the probe wait budget; application may retry (see CUDA_FABRIC_INIT_TIMEOUT_MS)", // runtime
    CUDA_ERROR_UNKNOWN = 999 => "unknown error",
}

impl CUresult {
    pub const fn is_success(self) -> bool {
        self.0 == 0
    }

    /// `Ok(())` for CUDA_SUCCESS, so `?` can carry driver errors.
    pub const fn result(self) -> Result<(), CUresult> {
        if self.0 == 0 {
            Ok(())
        } else {
            Err(self)
        }
    }
}

impl From<Result<(), CUresult>> for CUresult {
    fn from(r: Result<(), CUresult>) -> Self {
        match r {
            Ok(()) => CUresult::CUDA_SUCCESS,
            Err(e) => e,
        }
    }
}

impl fmt::Debug for CUresult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n.to_str().unwrap_or("?")),
            None => write!(f, "CUresult({})", self.0),
        }
    }
}

impl fmt::Display for CUresult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self.description()) {
            (Some(n), Some(d)) => write!(f, "{} ({})", n.to_string_lossy(), d.to_string_lossy()),
            _ => write!(f, "unknown CUDA error {}", self.0),
        }
    }
}

impl std::error::Error for CUresult {}
