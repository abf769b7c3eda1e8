//! `fork()` after CUDA is initialised.
//!
//! A forked child has a copy of the driver's memory but none of its threads
//! (stream workers, the executor's pool) and possibly locks that a thread of
//! the parent held at the moment of the fork: any driver call that waited for
//! a worker or took such a lock would hang forever. NVIDIA's driver does not
//! support CUDA in a child forked after `cuInit` either: there every call
//! fails with `CUDA_ERROR_NOT_INITIALIZED` ("initialization error",
//! cudart's `cudaErrorInitializationError`). anycuda does the same: a
//! `pthread_atfork` child handler marks the process, and every entry point
//! then fails with that code before it touches the driver. The calls that
//! need no driver state keep working ([`ALLOWED`]: the version, error
//! strings, symbol and export-table lookup), so a runtime in the child can
//! still report the error. A child forked before `cuInit` (or before the
//! driver was first used) starts CUDA afresh, as on NVIDIA's driver.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use cuda_types::CUresult;

static FORKED: AtomicBool = AtomicBool::new(false);

/// Entry points that still work in a forked child: they read constants.
const ALLOWED: &[&str] =
    &["cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuGetProcAddress", "cuGetProcAddress_v2", "cuGetExportTable"];

/// Registers the fork handler (once; called when the driver is created).
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a handler that only reads and stores atomics.
        let r = unsafe { libc::pthread_atfork(None, None, Some(child)) };
        if r != 0 {
            crate::trace::log(crate::trace::Level::Warn, &format!("pthread_atfork failed ({r}): CUDA in a forked child may hang"));
        }
    });
}

/// Runs in the child right after `fork()`. Only atomics: the child of a
/// multi-threaded process may call async-signal-safe functions only.
extern "C" fn child() {
    if crate::driver_initialized() {
        FORKED.store(true, Ordering::Release);
    }
}

/// Whether this process is a child forked after CUDA was initialised.
pub fn forked() -> bool {
    FORKED.load(Ordering::Acquire)
}

/// The code an entry point returns instead of running, in a forked child.
pub(crate) fn refuse(name: &str) -> Option<CUresult> {
    (forked() && !ALLOWED.contains(&name)).then_some(CUresult::CUDA_ERROR_NOT_INITIALIZED)
}

/// The log line for a refused call.
pub(crate) fn reason(name: &str) -> String {
    format!("{name}: CUDA was initialised before this process was forked; a forked child cannot use it (CUDA_ERROR_NOT_INITIALIZED, as NVIDIA's driver)")
}
