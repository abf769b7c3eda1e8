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
//! The backend: [`backend()`] picks it with `ANYCUDA_BACKEND` (`hip`, `cpu`,
//! or `mock` for the driver's tests); by default the HIP backend when a HIP
//! runtime with an AMD GPU is present, else the CPU.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

pub mod errors;
pub mod export_tables;
pub mod exports;
pub mod fork;
pub mod md2;
pub mod proc_address;
pub mod readable;
pub mod trace;
mod util;

mod api_context;
mod api_device;
mod api_graph;
mod api_launch;
mod api_memory;
mod api_module;
mod api_stream;
mod api_texture;
mod api_vmm;

use std::sync::{Arc, OnceLock};

use driver::{Backend, Config, Driver};

static DRIVER: OnceLock<Driver> = OnceLock::new();

/// Environment variable choosing the backend: `hip` runs kernels on AMD
/// GPUs through the HIP runtime; `cpu` on the host's cores; `mock` is the
/// driver's test backend (host memory, kernels are named Rust closures).
/// Unset: HIP when its runtime loads and has a device, else the CPU.
pub const BACKEND_ENV: &str = "ANYCUDA_BACKEND";

/// The backend this library runs on, and why, for the log.
pub fn backend() -> Arc<dyn Backend> {
    let (backend, why): (Arc<dyn Backend>, String) = match std::env::var(BACKEND_ENV).as_deref() {
        Ok("mock") => (Arc::new(driver::mock::MockBackend::with_builtins(1)), format!("{BACKEND_ENV}=mock")),
        Ok("cpu") => (Arc::new(backend_cpu::CpuBackend::new()), format!("{BACKEND_ENV}=cpu")),
        Ok("hip") => match backend_hip::HipBackend::start() {
            Ok(b) => (Arc::new(b), format!("{BACKEND_ENV}=hip")),
            Err(e) => {
                // Asked for explicitly: no silent fallback to another machine.
                trace::log(trace::Level::Error, &format!("{BACKEND_ENV}=hip: {e}; no CUDA device is available"));
                (Arc::new(driver::backend::NoDevices), format!("{BACKEND_ENV}=hip, which failed: {e}"))
            }
        },
        Ok(other) if !other.is_empty() => {
            trace::log(trace::Level::Warn, &format!("{BACKEND_ENV}={other} is not a backend of this build; using the CPU"));
            (Arc::new(backend_cpu::CpuBackend::new()), format!("{BACKEND_ENV}={other} is unknown"))
        }
        _ => match backend_hip::HipBackend::start() {
            Ok(b) => (Arc::new(b), "an AMD GPU was found through HIP".into()),
            Err(e) => (Arc::new(backend_cpu::CpuBackend::new()), format!("no AMD GPU ({e})")),
        },
    };
    let devices: Vec<String> = (0..backend.device_count()).map(|d| format!("{d}: {}", backend.device_props(d).name)).collect();
    trace::log(trace::Level::Info, &format!("backend: {} ({why}); devices: {}", backend.name(), devices.join(", ")));
    backend
}

/// The process's driver instance, created on first use.
pub fn driver() -> &'static Driver {
    DRIVER.get_or_init(|| {
        fork::install();
        Driver::new(backend(), Config::from_env())
    })
}

/// Whether the driver exists and `cuInit` succeeded (reads atomics only).
fn driver_initialized() -> bool {
    DRIVER.get().is_some_and(Driver::is_initialized)
}
