//! The cuBLAS functions anycuda does not implement
//! (`exports/cublas-unsupported.txt`): exported so that programs linked
//! against NVIDIA's library load, and failing clearly when called. Each
//! logs a warning the first time it is called (then at trace level), and
//! returns what tells its caller it failed: `CUBLAS_STATUS_NOT_SUPPORTED`
//! for `cublasStatus_t` functions; the legacy API's (`cublas.h`, no
//! handle), whose routines return `void` or their result, record the
//! error for `cublasGetError` and return NaN (or index 0, which is never a
//! valid 1-based index).

use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::c_int;
use std::sync::Mutex;

use crate::log::{log, Level};
use crate::status::{Status, NOT_SUPPORTED, SUCCESS};

/// A legacy `cuComplex` result.
#[repr(C)]
pub struct C32 {
    pub re: f32,
    pub im: f32,
}

/// A legacy `cuDoubleComplex` result.
#[repr(C)]
pub struct C64 {
    pub re: f64,
    pub im: f64,
}

thread_local! {
    /// The legacy API's error, which `cublasGetError` returns and clears.
    static LEGACY_ERROR: Cell<Status> = const { Cell::new(SUCCESS) };
}

/// `cublasGetError` (legacy API): the last error of a legacy call on this
/// thread, reset to `CUBLAS_STATUS_SUCCESS`.
pub fn take_legacy_error() -> Status {
    LEGACY_ERROR.with(|e| e.replace(SUCCESS))
}

fn report(name: &'static str) {
    static SEEN: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let first = SEEN.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashSet::new).insert(name);
    let level = if first { Level::Warn } else { Level::Trace };
    log(level, &format!("{name} is not implemented by anycuda's cuBLAS (CUBLAS_STATUS_NOT_SUPPORTED)"));
}

/// A `cublasStatus_t` function.
pub fn status(name: &'static str) -> c_int {
    report(name);
    NOT_SUPPORTED
}

/// A legacy routine returning `void` or `cublasStatus_t`.
pub fn legacy(name: &'static str) -> c_int {
    report(name);
    LEGACY_ERROR.with(|e| e.set(NOT_SUPPORTED));
    NOT_SUPPORTED
}

pub fn legacy_f32(name: &'static str) -> f32 {
    legacy(name);
    f32::NAN
}

pub fn legacy_f64(name: &'static str) -> f64 {
    legacy(name);
    f64::NAN
}

pub fn legacy_c32(name: &'static str) -> C32 {
    legacy(name);
    C32 { re: f32::NAN, im: f32::NAN }
}

pub fn legacy_c64(name: &'static str) -> C64 {
    legacy(name);
    C64 { re: f64::NAN, im: f64::NAN }
}

pub fn legacy_index(name: &'static str) -> c_int {
    legacy(name);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_calls_leave_an_error_that_is_taken_once() {
        assert_eq!(take_legacy_error(), SUCCESS);
        assert_eq!(status("cublasXtCreate"), NOT_SUPPORTED);
        assert_eq!(take_legacy_error(), SUCCESS, "a cublasStatus_t function leaves no legacy error");
        assert!(legacy_f32("cublasSdot").is_nan());
        assert_eq!(take_legacy_error(), NOT_SUPPORTED);
        assert_eq!(take_legacy_error(), SUCCESS);
        assert_eq!(legacy_index("cublasIsamax"), 0);
        let c = legacy_c64("cublasZdotu");
        assert!(c.re.is_nan() && c.im.is_nan());
        assert_eq!(take_legacy_error(), NOT_SUPPORTED);
    }
}
