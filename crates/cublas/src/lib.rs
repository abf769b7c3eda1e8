//! anycuda's cuBLAS and cuBLASLt: NVIDIA's C ABI over a backend that
//! computes where the device is (the host CPU today).
//!
//! Layers, top down:
//! - `abi` / `lt`: the C symbols (named as NVIDIA's; the shared-object
//!   crates export them with NVIDIA's sonames and symbol versions).
//! - `blas`, `handle`: argument checks in cuBLAS's order and with its
//!   statuses, handles, pointer modes (host scalars read at the call,
//!   device scalars in stream order), memory checks against the driver.
//! - `backend`: the seam; `cpu`: the host implementation, queued on the
//!   handle's stream with `cuLaunchHostFunc`.
//! - `cuda`: the public driver API of the loaded `libcuda.so.1`.

pub mod abi;
pub mod backend;
pub mod blas;
pub mod cpu;
pub mod cuda;
pub mod handle;
pub mod log;
pub mod logger;
pub mod lt;
pub mod lu;
pub mod matmul;
pub mod product;
pub mod rankk;
pub mod status;
pub mod types;
pub mod unsupported;
