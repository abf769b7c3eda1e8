//! `hipError_t`: ROCm's codes (`hip_runtime_api.h`), names and messages.

use std::ffi::CStr;

/// A HIP error code other than `hipSuccess`, with the reason for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HipError {
    pub code: i32,
    pub why: String,
}

pub type Result<T> = std::result::Result<T, HipError>;

pub const SUCCESS: i32 = 0;
pub const INVALID_VALUE: i32 = 1;
pub const OUT_OF_MEMORY: i32 = 2;
pub const INVALID_MEMCPY_DIRECTION: i32 = 21;
pub const INVALID_DEVICE_FUNCTION: i32 = 98;
pub const NO_DEVICE: i32 = 100;
pub const INVALID_DEVICE: i32 = 101;
pub const INVALID_IMAGE: i32 = 200;
pub const NO_BINARY_FOR_GPU: i32 = 209;
pub const SHARED_OBJECT_INIT_FAILED: i32 = 303;
pub const OPERATING_SYSTEM: i32 = 304;
pub const INVALID_HANDLE: i32 = 400;
pub const NOT_FOUND: i32 = 500;
pub const ILLEGAL_ADDRESS: i32 = 700;
pub const PEER_ACCESS_ALREADY_ENABLED: i32 = 704;
pub const PEER_ACCESS_NOT_ENABLED: i32 = 705;
pub const HOST_MEMORY_ALREADY_REGISTERED: i32 = 712;
pub const HOST_MEMORY_NOT_REGISTERED: i32 = 713;
pub const LAUNCH_FAILURE: i32 = 719;
pub const COOPERATIVE_LAUNCH_TOO_LARGE: i32 = 720;
pub const NOT_SUPPORTED: i32 = 801;
pub const UNKNOWN: i32 = 999;

/// Every code of ROCm 6's `hipError_t`: value, name, message.
const TABLE: &[(i32, &CStr, &CStr)] = &[
    (0, c"hipSuccess", c"no error"),
    (1, c"hipErrorInvalidValue", c"invalid argument"),
    (2, c"hipErrorOutOfMemory", c"out of memory"),
    (3, c"hipErrorNotInitialized", c"initialization error"),
    (4, c"hipErrorDeinitialized", c"driver shutting down"),
    (5, c"hipErrorProfilerDisabled", c"profiler disabled while using external profiling tool"),
    (6, c"hipErrorProfilerNotInitialized", c"profiler is not initialized"),
    (7, c"hipErrorProfilerAlreadyStarted", c"profiler already started"),
    (8, c"hipErrorProfilerAlreadyStopped", c"profiler already stopped"),
    (9, c"hipErrorInvalidConfiguration", c"invalid configuration argument"),
    (12, c"hipErrorInvalidPitchValue", c"invalid pitch argument"),
    (13, c"hipErrorInvalidSymbol", c"invalid device symbol"),
    (17, c"hipErrorInvalidDevicePointer", c"invalid device pointer"),
    (21, c"hipErrorInvalidMemcpyDirection", c"invalid copy direction for memcpy"),
    (35, c"hipErrorInsufficientDriver", c"driver version is insufficient for runtime version"),
    (52, c"hipErrorMissingConfiguration", c"__global__ function call is not configured"),
    (53, c"hipErrorPriorLaunchFailure", c"unspecified launch failure in prior launch"),
    (98, c"hipErrorInvalidDeviceFunction", c"invalid device function"),
    (100, c"hipErrorNoDevice", c"no ROCm-capable device is detected"),
    (101, c"hipErrorInvalidDevice", c"invalid device ordinal"),
    (200, c"hipErrorInvalidImage", c"device kernel image is invalid"),
    (201, c"hipErrorInvalidContext", c"invalid device context"),
    (202, c"hipErrorContextAlreadyCurrent", c"context is already current context"),
    (205, c"hipErrorMapFailed", c"mapping of buffer object failed"),
    (206, c"hipErrorUnmapFailed", c"unmapping of buffer object failed"),
    (207, c"hipErrorArrayIsMapped", c"array is mapped"),
    (208, c"hipErrorAlreadyMapped", c"resource already mapped"),
    (209, c"hipErrorNoBinaryForGpu", c"no kernel image is available for execution on the device"),
    (210, c"hipErrorAlreadyAcquired", c"resource already acquired"),
    (211, c"hipErrorNotMapped", c"resource not mapped"),
    (212, c"hipErrorNotMappedAsArray", c"resource not mapped as array"),
    (213, c"hipErrorNotMappedAsPointer", c"resource not mapped as pointer"),
    (214, c"hipErrorECCNotCorrectable", c"uncorrectable ECC error encountered"),
    (215, c"hipErrorUnsupportedLimit", c"limit is not supported on this architecture"),
    (216, c"hipErrorContextAlreadyInUse", c"exclusive-thread device already in use by a different thread"),
    (217, c"hipErrorPeerAccessUnsupported", c"peer access is not supported between these two devices"),
    (218, c"hipErrorInvalidKernelFile", c"invalid kernel file"),
    (219, c"hipErrorInvalidGraphicsContext", c"invalid OpenGL or DirectX context"),
    (300, c"hipErrorInvalidSource", c"device kernel image is invalid"),
    (301, c"hipErrorFileNotFound", c"file not found"),
    (302, c"hipErrorSharedObjectSymbolNotFound", c"shared object symbol not found"),
    (303, c"hipErrorSharedObjectInitFailed", c"shared object initialization failed"),
    (304, c"hipErrorOperatingSystem", c"OS call failed or operation not supported on this OS"),
    (400, c"hipErrorInvalidHandle", c"invalid resource handle"),
    (401, c"hipErrorIllegalState", c"the operation cannot be performed in the present state"),
    (500, c"hipErrorNotFound", c"named symbol not found"),
    (600, c"hipErrorNotReady", c"device not ready"),
    (700, c"hipErrorIllegalAddress", c"an illegal memory access was encountered"),
    (701, c"hipErrorLaunchOutOfResources", c"too many resources requested for launch"),
    (702, c"hipErrorLaunchTimeOut", c"the launch timed out and was terminated"),
    (704, c"hipErrorPeerAccessAlreadyEnabled", c"peer access is already enabled"),
    (705, c"hipErrorPeerAccessNotEnabled", c"peer access has not been enabled"),
    (708, c"hipErrorSetOnActiveProcess", c"cannot set while device is active in this process"),
    (709, c"hipErrorContextIsDestroyed", c"context is destroyed"),
    (710, c"hipErrorAssert", c"device-side assert triggered"),
    (712, c"hipErrorHostMemoryAlreadyRegistered", c"part or all of the requested memory range is already mapped"),
    (713, c"hipErrorHostMemoryNotRegistered", c"pointer does not correspond to a registered memory region"),
    (719, c"hipErrorLaunchFailure", c"unspecified launch failure"),
    (720, c"hipErrorCooperativeLaunchTooLarge", c"too many blocks in cooperative launch"),
    (801, c"hipErrorNotSupported", c"operation not supported"),
    (900, c"hipErrorStreamCaptureUnsupported", c"operation not permitted when stream is capturing"),
    (901, c"hipErrorStreamCaptureInvalidated", c"operation failed due to a previous error during capture"),
    (902, c"hipErrorStreamCaptureMerge", c"operation would result in a merge of separate capture sequences"),
    (903, c"hipErrorStreamCaptureUnmatched", c"capture was not ended in the same stream as it began"),
    (904, c"hipErrorStreamCaptureUnjoined", c"capturing stream has unjoined work"),
    (905, c"hipErrorStreamCaptureIsolation", c"dependency created on uncaptured work in another stream"),
    (906, c"hipErrorStreamCaptureImplicit", c"operation would make the legacy stream depend on a capturing blocking stream"),
    (907, c"hipErrorCapturedEvent", c"operation not permitted on an event last recorded in a capturing stream"),
    (908, c"hipErrorStreamCaptureWrongThread", c"attempt to terminate a thread-local capture sequence from another thread"),
    (
        910,
        c"hipErrorGraphExecUpdateFailure",
        c"the graph update was not performed because it included changes which violated constraints specific to instantiated graph update",
    ),
    (999, c"hipErrorUnknown", c"unknown error"),
    (1052, c"hipErrorRuntimeMemory", c"runtime memory call returned error"),
    (1053, c"hipErrorRuntimeOther", c"runtime call other than memory returned error"),
];

fn entry(code: i32) -> Option<&'static (i32, &'static CStr, &'static CStr)> {
    TABLE.iter().find(|(c, _, _)| *c == code)
}

/// `hipGetErrorName`: the enumerator's name; unknown codes are `hipErrorUnknown`, as in ROCm.
pub fn name(code: i32) -> &'static CStr {
    entry(code).map_or(c"hipErrorUnknown", |e| e.1)
}

/// `hipGetErrorString`.
pub fn message(code: i32) -> &'static CStr {
    entry(code).map_or(c"unknown error", |e| e.2)
}

impl HipError {
    pub fn new(code: i32, why: impl Into<String>) -> HipError {
        HipError { code, why: why.into() }
    }
}

/// `Err(HipError)` with a reason.
macro_rules! fail {
    ($code:expr, $($t:tt)*) => {
        return Err($crate::error::HipError::new($code, format!($($t)*)))
    };
}
pub(crate) use fail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_messages_follow_rocm() {
        assert_eq!(name(INVALID_VALUE), c"hipErrorInvalidValue");
        assert_eq!(name(LAUNCH_FAILURE), c"hipErrorLaunchFailure");
        assert_eq!(name(NO_BINARY_FOR_GPU), c"hipErrorNoBinaryForGpu");
        assert_eq!(name(12345), c"hipErrorUnknown");
        assert_eq!(message(SUCCESS), c"no error");
        assert_eq!(message(OUT_OF_MEMORY), c"out of memory");
        // Codes are unique.
        let mut codes: Vec<i32> = TABLE.iter().map(|e| e.0).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), TABLE.len());
    }
}
