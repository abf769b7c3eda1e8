//! The HIP runtime's C API, loaded at run time.
//!
//! One table lists every function the backend calls, with its C
//! signature; [`Hip::load`] resolves them all from `libamdhip64.so` and
//! fails, naming the first missing symbol, if any is absent (every name
//! here exists in ROCm 5.x to 7.x, except `hipGetDevicePropertiesR0600`,
//! which ROCm 6 introduced and which is optional). Enum values and struct
//! offsets are ROCm's (`hip_runtime_api.h`).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

pub type HipError = c_int;
pub const HIP_SUCCESS: HipError = 0;
pub const HIP_ERROR_NO_DEVICE: HipError = 100;
pub const HIP_ERROR_NOT_READY: HipError = 600;
pub const HIP_ERROR_ILLEGAL_ADDRESS: HipError = 700;
pub const HIP_ERROR_LAUNCH_OUT_OF_RESOURCES: HipError = 701;
pub const HIP_ERROR_LAUNCH_TIMEOUT: HipError = 702;
pub const HIP_ERROR_ASSERT: HipError = 710;
pub const HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED: HipError = 704;
pub const HIP_ERROR_PEER_ACCESS_NOT_ENABLED: HipError = 705;
pub const HIP_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: HipError = 720;
pub const HIP_ERROR_OUT_OF_MEMORY: HipError = 2;

pub type Stream = *mut c_void;
pub type Module = *mut c_void;
pub type Function = *mut c_void;
pub type Event = *mut c_void;

/// `hipMemcpyKind`.
pub const MEMCPY_HOST_TO_DEVICE: c_int = 1;
pub const MEMCPY_DEVICE_TO_HOST: c_int = 2;
pub const MEMCPY_DEVICE_TO_DEVICE: c_int = 3;

/// `hipStreamNonBlocking`: no implicit synchronisation with the null
/// stream (the driver orders its streams itself).
pub const STREAM_NON_BLOCKING: c_uint = 0x1;
/// `hipEventDefault`.
pub const EVENT_DEFAULT: c_uint = 0x0;

/// `hipHostMalloc` / `hipHostRegister` flags.
pub const HOST_MALLOC_MAPPED: c_uint = 0x2;
pub const HOST_REGISTER_MAPPED: c_uint = 0x2;
/// `hipMemAttachGlobal`.
pub const MEM_ATTACH_GLOBAL: c_uint = 0x1;

/// `hipModuleLaunchKernel`'s `extra` markers.
pub const LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = std::ptr::without_provenance_mut(0x01);
pub const LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = std::ptr::without_provenance_mut(0x02);
pub const LAUNCH_PARAM_END: *mut c_void = std::ptr::without_provenance_mut(0x03);

/// `hipDeviceAttribute_t` values (ROCm 6; unchanged since 5.0 for these).
pub mod attr {
    pub const CLOCK_RATE: i32 = 5;
    pub const CONCURRENT_KERNELS: i32 = 8;
    pub const COOPERATIVE_LAUNCH: i32 = 10;
    pub const INTEGRATED: i32 = 16;
    pub const L2_CACHE_SIZE: i32 = 19;
    pub const COMPUTE_CAPABILITY_MAJOR: i32 = 23;
    pub const MANAGED_MEMORY: i32 = 24;
    pub const MAX_THREADS_PER_BLOCK: i32 = 56;
    pub const MAX_THREADS_PER_MULTIPROCESSOR: i32 = 57;
    pub const MEMORY_BUS_WIDTH: i32 = 59;
    pub const MEMORY_CLOCK_RATE: i32 = 60;
    pub const MULTIPROCESSOR_COUNT: i32 = 63;
    pub const PCI_BUS_ID: i32 = 67;
    pub const PCI_DEVICE_ID: i32 = 68;
    pub const PCI_DOMAIN_ID: i32 = 69;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: i32 = 74;
    pub const WARP_SIZE: i32 = 87;
}

/// `hipModuleLaunchCooperativeKernel(f, grid x/y/z, block x/y/z,
/// sharedMemBytes, stream, kernelParams)`.
pub type LaunchCooperative =
    unsafe extern "C" fn(Function, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Stream, *mut *mut c_void) -> HipError;

macro_rules! hip_api {
    ($( $field:ident = $name:literal : fn($($arg:ty),*) ;)*) => {
        /// The loaded runtime: one function pointer per entry point.
        pub struct Hip {
            _lib: libloading::Library,
            $( pub $field: unsafe extern "C" fn($($arg),*) -> HipError, )*
            /// ROCm 6 and later.
            pub get_device_properties_r0600: Option<unsafe extern "C" fn(*mut u8, c_int) -> HipError>,
            /// ROCm 6 and later (`hipModuleLaunchCooperativeKernel`):
            /// without it, devices say they have no cooperative launch.
            pub module_launch_cooperative_kernel: Option<LaunchCooperative>,
            pub get_error_string: unsafe extern "C" fn(HipError) -> *const c_char,
        }

        /// Every symbol [`Hip`] binds (tests check them against real runtimes).
        pub const SYMBOLS: &[&str] = &[$($name,)* "hipGetErrorString"];

        impl Hip {
            /// # Safety
            /// `lib` must be a HIP runtime whose symbols have ROCm's signatures.
            unsafe fn bind(lib: libloading::Library) -> Result<Hip, String> {
                // SAFETY: the caller vouches for the signatures.
                unsafe {
                    $( let $field = *lib.get::<unsafe extern "C" fn($($arg),*) -> HipError>(concat!($name, "\0").as_bytes())
                        .map_err(|e| format!("{}: {e}", $name))?; )*
                    let get_device_properties_r0600 =
                        lib.get::<unsafe extern "C" fn(*mut u8, c_int) -> HipError>(b"hipGetDevicePropertiesR0600\0").ok().map(|s| *s);
                    let module_launch_cooperative_kernel =
                        lib.get::<LaunchCooperative>(b"hipModuleLaunchCooperativeKernel\0").ok().map(|s| *s);
                    let get_error_string = *lib
                        .get::<unsafe extern "C" fn(HipError) -> *const c_char>(b"hipGetErrorString\0")
                        .map_err(|e| format!("hipGetErrorString: {e}"))?;
                    Ok(Hip { _lib: lib, $($field,)* get_device_properties_r0600, module_launch_cooperative_kernel, get_error_string })
                }
            }
        }
    };
}

hip_api! {
    init = "hipInit": fn(c_uint);
    driver_get_version = "hipDriverGetVersion": fn(*mut c_int);
    runtime_get_version = "hipRuntimeGetVersion": fn(*mut c_int);
    get_device_count = "hipGetDeviceCount": fn(*mut c_int);
    set_device = "hipSetDevice": fn(c_int);
    device_get_attribute = "hipDeviceGetAttribute": fn(*mut c_int, c_int, c_int);
    device_get_name = "hipDeviceGetName": fn(*mut c_char, c_int, c_int);
    device_total_mem = "hipDeviceTotalMem": fn(*mut usize, c_int);
    mem_get_info = "hipMemGetInfo": fn(*mut usize, *mut usize);
    malloc = "hipMalloc": fn(*mut *mut c_void, usize);
    free = "hipFree": fn(*mut c_void);
    host_malloc = "hipHostMalloc": fn(*mut *mut c_void, usize, c_uint);
    host_free = "hipHostFree": fn(*mut c_void);
    host_register = "hipHostRegister": fn(*mut c_void, usize, c_uint);
    host_unregister = "hipHostUnregister": fn(*mut c_void);
    host_get_device_pointer = "hipHostGetDevicePointer": fn(*mut *mut c_void, *mut c_void, c_uint);
    malloc_managed = "hipMallocManaged": fn(*mut *mut c_void, usize, c_uint);
    memcpy = "hipMemcpy": fn(*mut c_void, *const c_void, usize, c_int);
    memset_d8 = "hipMemsetD8": fn(*mut c_void, u8, usize);
    memset_d16 = "hipMemsetD16": fn(*mut c_void, u16, usize);
    memset_d32 = "hipMemsetD32": fn(*mut c_void, c_int, usize);
    module_load_data = "hipModuleLoadData": fn(*mut Module, *const c_void);
    module_unload = "hipModuleUnload": fn(Module);
    module_get_function = "hipModuleGetFunction": fn(*mut Function, Module, *const c_char);
    module_get_global = "hipModuleGetGlobal": fn(*mut *mut c_void, *mut usize, Module, *const c_char);
    module_launch_kernel = "hipModuleLaunchKernel":
        fn(Function, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Stream, *mut *mut c_void, *mut *mut c_void);
    device_synchronize = "hipDeviceSynchronize": fn();
    stream_create_with_priority = "hipStreamCreateWithPriority": fn(*mut Stream, c_uint, c_int);
    stream_destroy = "hipStreamDestroy": fn(Stream);
    stream_synchronize = "hipStreamSynchronize": fn(Stream);
    stream_query = "hipStreamQuery": fn(Stream);
    memcpy_async = "hipMemcpyAsync": fn(*mut c_void, *const c_void, usize, c_int, Stream);
    memset_d8_async = "hipMemsetD8Async": fn(*mut c_void, u8, usize, Stream);
    memset_d16_async = "hipMemsetD16Async": fn(*mut c_void, u16, usize, Stream);
    memset_d32_async = "hipMemsetD32Async": fn(*mut c_void, c_int, usize, Stream);
    event_create_with_flags = "hipEventCreateWithFlags": fn(*mut Event, c_uint);
    event_destroy = "hipEventDestroy": fn(Event);
    event_record = "hipEventRecord": fn(Event, Stream);
    event_query = "hipEventQuery": fn(Event);
    stream_wait_event = "hipStreamWaitEvent": fn(Stream, Event, c_uint);
    event_elapsed_time = "hipEventElapsedTime": fn(*mut f32, Event, Event);
    get_last_error = "hipGetLastError": fn();
    device_can_access_peer = "hipDeviceCanAccessPeer": fn(*mut c_int, c_int, c_int);
    device_enable_peer_access = "hipDeviceEnablePeerAccess": fn(c_int, c_uint);
    device_disable_peer_access = "hipDeviceDisablePeerAccess": fn(c_int);
}

/// Byte offsets in ROCm 6's `hipDeviceProp_tR0600`.
pub mod props_r0600 {
    pub const UUID: usize = 256;
    /// The struct is 1472 bytes in ROCm 6.0-7.x; a larger buffer is passed.
    pub const GCN_ARCH_NAME: usize = 1160;
    pub const BUFFER: usize = 4096;
}

impl Hip {
    /// Loads the HIP runtime: `ANYCUDA_HIP_LIBRARY` if set, else
    /// `libamdhip64.so` (ROCm's unversioned link), then the versioned
    /// names of ROCm 7, 6 and 5.
    pub fn load() -> Result<Hip, String> {
        let candidates: Vec<String> = match std::env::var("ANYCUDA_HIP_LIBRARY") {
            Ok(p) if !p.is_empty() => vec![p],
            _ => ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"].iter().map(|s| s.to_string()).collect(),
        };
        let mut errors = Vec::new();
        for name in &candidates {
            // SAFETY: loading a library runs its initialisers; the HIP
            // runtime's are the ones any HIP program runs.
            match unsafe { libloading::Library::new(name) } {
                // SAFETY: a library that calls itself libamdhip64 has HIP's
                // signatures.
                Ok(lib) => return unsafe { Hip::bind(lib) }.map_err(|e| format!("{name}: {e}")),
                Err(e) => errors.push(format!("{name}: {e}")),
            }
        }
        Err(errors.join("; "))
    }

    /// The runtime's message for an error code.
    pub fn error_string(&self, e: HipError) -> String {
        // SAFETY: hipGetErrorString returns a static string (or null).
        let p = unsafe { (self.get_error_string)(e) };
        if p.is_null() {
            return format!("HIP error {e}");
        }
        // SAFETY: a NUL-terminated static string.
        format!("{} ({e})", unsafe { CStr::from_ptr(p) }.to_string_lossy())
    }

    /// `Ok` for `hipSuccess`, else the message.
    pub fn check(&self, e: HipError, what: &str) -> Result<(), String> {
        if e == HIP_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what}: {}", self.error_string(e)))
        }
    }
}
