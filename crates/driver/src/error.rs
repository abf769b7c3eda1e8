//! The driver's error type.
//!
//! One variant per failure the CUDA driver API distinguishes; the C layer
//! maps each to its `CUresult` in one place. Variants carry enough context
//! for the trace log to say what went wrong, not just which code.

use crate::backend::LaunchFault;

/// Everything a driver operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid value: {0}")]
    InvalidValue(String),
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    #[error("the driver is not initialised (cuInit has not been called)")]
    NotInitialized,
    #[error("the driver is shutting down")]
    Deinitialized,
    #[error("no device")]
    NoDevice,
    #[error("invalid device ordinal {0}")]
    InvalidDevice(i64),
    #[error("invalid context")]
    InvalidContext,
    #[error("the current context has been destroyed or is an inactive primary context")]
    ContextIsDestroyed,
    #[error("invalid handle: {0}")]
    InvalidHandle(String),
    #[error("invalid image: {0}")]
    InvalidImage(String),
    #[error("no kernel image for the device: {0}")]
    NoBinaryForGpu(String),
    #[error("PTX JIT compilation failed: {0}")]
    InvalidPtx(String),
    #[error("unsupported PTX version: {0}")]
    UnsupportedPtxVersion(String),
    #[error("file not found: {0}")]
    FileNotFound(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("not ready")]
    NotReady,
    #[error("not supported: {0}")]
    NotSupported(String),
    #[error("not permitted: {0}")]
    NotPermitted(String),
    #[error("primary context is active; flags cannot be set")]
    PrimaryContextActive,
    #[error("unsupported limit")]
    UnsupportedLimit,
    #[error("host memory already registered")]
    HostMemoryAlreadyRegistered,
    #[error("host memory not registered")]
    HostMemoryNotRegistered,
    #[error("peer access unsupported")]
    PeerAccessUnsupported,
    #[error("peer access is already enabled")]
    PeerAccessAlreadyEnabled,
    #[error("peer access is not enabled")]
    PeerAccessNotEnabled,
    #[error("too many resources requested for launch: {0}")]
    LaunchOutOfResources(String),
    #[error("too many blocks in cooperative launch: {0}")]
    CooperativeLaunchTooLarge(String),
    #[error("operation not permitted in the present state: {0}")]
    IllegalState(String),
    /// The operation is not permitted while a stream capture is in
    /// progress (it would have to run now, or synchronise with captured
    /// work that never executes).
    #[error("operation not permitted during stream capture: {0}")]
    StreamCaptureUnsupported(String),
    /// A capture sequence was invalidated earlier; it must be ended.
    #[error("the stream capture was invalidated: {0}")]
    StreamCaptureInvalidated(String),
    #[error("operation would merge two independent capture sequences: {0}")]
    StreamCaptureMerge(String),
    #[error("capture was not initiated in this stream: {0}")]
    StreamCaptureUnmatched(String),
    #[error("the capture sequence has a fork that was not joined to the origin stream: {0}")]
    StreamCaptureUnjoined(String),
    #[error("dependency on work outside the capture sequence: {0}")]
    StreamCaptureIsolation(String),
    #[error("the legacy stream would depend on a capturing blocking stream: {0}")]
    StreamCaptureImplicit(String),
    #[error("the event was last recorded in a capturing stream: {0}")]
    CapturedEvent(String),
    #[error("capture must be ended on the thread that began it: {0}")]
    StreamCaptureWrongThread(String),
    /// A system call failed (writing a file the application asked for).
    #[error("operating system error: {0}")]
    OperatingSystem(String),
    /// `cuGraphExecUpdate` could not apply the graph.
    #[error("executable graph update failed: {0}")]
    GraphExecUpdateFailure(String),
    /// A kernel faulted; the context is unusable from then on.
    #[error("kernel fault: {0}")]
    Fault(LaunchFault),
    #[error("internal error: {0}")]
    Unknown(String),
}

impl Error {
    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidValue(msg.into())
    }

    pub(crate) fn handle(msg: impl Into<String>) -> Error {
        Error::InvalidHandle(msg.into())
    }

    /// Whether this error poisons the context it happened in (NVIDIA: the
    /// "sticky" errors after which every call on the context fails).
    pub fn is_sticky(&self) -> bool {
        matches!(self, Error::Fault(_))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
