//! `libcuda.so.1`: NVIDIA's CUDA driver API as a C ABI, over anycuda's
//! [`driver`].
//!
//! - Every ABI symbol of [`cuda_types::for_each_abi_symbol!`] is exported
//!   ([`exports`]); implemented ones do the work, the rest return
//!   `CUDA_ERROR_NOT_SUPPORTED` and log their name once.
//! - `cuGetProcAddress`/`_v2` hand out those symbols by API name and
//!   version, as NVIDIA's driver does ([`proc_address`]).
//! - `cuGetExportTable` serves the private tables NVIDIA's cudart needs
//!   ([`export_tables`]), including the integrity check.
//! - Each function checks its arguments, maps [`driver::Error`]s to
//!   `CUresult`s in one place ([`errors::code`]), never lets a panic cross
//!   into C (it becomes `CUDA_ERROR_UNKNOWN`), and is thread-safe.
//!
//! Logging ([`trace`]): `ANYCUDA_LOG` = `off` (default), `error`, `warn`
//! (unimplemented functions, once each), `info`, `debug` (every failing
//! call with the reason), `trace` (every call with its arguments and
//! result); `ANYCUDA_LOG_FILE` appends to a file instead of stderr.
//!
//! The backend: [`backend()`] picks it with `ANYCUDA_BACKEND` (`cpu`, the
//! default, or `mock` for the driver's tests).

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

pub mod errors;
pub mod export_tables;
pub mod exports;
pub mod md2;
pub mod proc_address;
pub mod trace;
mod util;

mod api_context;
mod api_device;
mod api_graph;
mod api_launch;
mod api_memory;
mod api_module;
mod api_stream;
mod api_vmm;

use std::sync::{Arc, OnceLock};

use driver::{Backend, Config, Driver};

static DRIVER: OnceLock<Driver> = OnceLock::new();

/// Environment variable choosing the backend: `cpu` (the default) runs
/// kernels on the host's cores; `mock` is the driver's test backend (host
/// memory, kernels are named Rust closures).
pub const BACKEND_ENV: &str = "ANYCUDA_BACKEND";

/// The backend this library runs on.
pub fn backend() -> Arc<dyn Backend> {
    match std::env::var(BACKEND_ENV).as_deref() {
        Ok("mock") => Arc::new(driver::mock::MockBackend::with_builtins(1)),
        Ok(other) if other != "cpu" && !other.is_empty() => {
            trace::log(trace::Level::Warn, &format!("{BACKEND_ENV}={other} is not a backend of this build; using the CPU"));
            Arc::new(backend_cpu::CpuBackend::new())
        }
        _ => Arc::new(backend_cpu::CpuBackend::new()),
    }
}

/// The process's driver instance, created on first use.
pub fn driver() -> &'static Driver {
    DRIVER.get_or_init(|| Driver::new(backend(), Config::from_env()))
}
