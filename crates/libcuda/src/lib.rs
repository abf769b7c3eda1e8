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
//! The backend: [`backend()`] picks it (today the host-memory mock, which
//! runs no kernels; the CPU backend plugs in there).

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
mod api_launch;
mod api_memory;
mod api_module;
mod api_stream;

use std::sync::{Arc, OnceLock};

use driver::{Backend, Config, Driver};

static DRIVER: OnceLock<Driver> = OnceLock::new();

/// The backend this library runs on. `ANYCUDA_BACKEND` will choose between
/// backends once there are several; today it is the host-memory mock
/// (memory, streams and events work; kernels fail to launch with a message
/// naming them).
pub fn backend() -> Arc<dyn Backend> {
    Arc::new(driver::mock::MockBackend::with_builtins(1))
}

/// The process's driver instance, created on first use.
pub fn driver() -> &'static Driver {
    DRIVER.get_or_init(|| Driver::new(backend(), Config::from_env()))
}
