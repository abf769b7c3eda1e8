//! `cublasStatus_t` and the error type every entry point returns.

use std::fmt;

pub type Status = i32;
pub const SUCCESS: Status = 0;
pub const NOT_INITIALIZED: Status = 1;
pub const ALLOC_FAILED: Status = 3;
pub const INVALID_VALUE: Status = 7;
pub const ARCH_MISMATCH: Status = 8;
pub const MAPPING_ERROR: Status = 11;
pub const EXECUTION_FAILED: Status = 13;
pub const INTERNAL_ERROR: Status = 14;
pub const NOT_SUPPORTED: Status = 15;
pub const LICENSE_ERROR: Status = 16;

/// `(status, name, description)`: the texts NVIDIA's `cublasGetStatusName`
/// and `cublasGetStatusString` return.
pub const STATUSES: &[(Status, &str, &str)] = &[
    (SUCCESS, "CUBLAS_STATUS_SUCCESS", "success"),
    (NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"),
    (ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"),
    (INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed to the function"),
    (ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH", "the function requires an architectural feature absent from the device"),
    (MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"),
    (EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED", "the function failed to launch on the GPU"),
    (INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"),
    (NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED", "the requested functionality is not supported"),
    (LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR", "the license check failed"),
];

/// A failed call: the status it returns and why (for the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub why: String,
}

impl Error {
    pub fn new(status: Status, why: impl Into<String>) -> Error {
        Error { status, why: why.into() }
    }
    pub fn invalid(why: impl Into<String>) -> Error {
        Error::new(INVALID_VALUE, why)
    }
    pub fn unsupported(why: impl Into<String>) -> Error {
        Error::new(NOT_SUPPORTED, why)
    }
    pub fn not_initialized(why: impl Into<String>) -> Error {
        Error::new(NOT_INITIALIZED, why)
    }
    pub fn execution(why: impl Into<String>) -> Error {
        Error::new(EXECUTION_FAILED, why)
    }
    pub fn internal(why: impl Into<String>) -> Error {
        Error::new(INTERNAL_ERROR, why)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", name(self.status), self.why)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub fn name(s: Status) -> &'static str {
    STATUSES.iter().find(|e| e.0 == s).map(|e| e.1).unwrap_or("unrecognized status")
}

pub fn description(s: Status) -> &'static str {
    STATUSES.iter().find(|e| e.0 == s).map(|e| e.2).unwrap_or("unrecognized status")
}

/// Fails with `INVALID_VALUE` and `why` unless `ok`.
pub fn check(ok: bool, why: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(why()))
    }
}
