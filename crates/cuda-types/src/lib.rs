//! The CUDA driver API's C types, enums, constants and symbol table, as
//! NVIDIA's CUDA 13.5 `cuda.h` defines them, for anycuda's `libcuda.so.1`.
//!
//! - [`CUresult`] with every error code, its C name and the driver's
//!   description (`cuGetErrorName` / `cuGetErrorString`).
//! - Handles ([`CUcontext`], [`CUstream`], ...) as distinct transparent
//!   pointer newtypes; [`CUdeviceptr`] and [`CUdevice`] as integers.
//! - Enums and flag sets as transparent integer newtypes with the C names
//!   as associated constants ([`CUdevice_attribute`], [`CUjit_option`], ...).
//! - `#[repr(C)]` structs with layouts checked at compile time
//!   ([`CUDA_MEMCPY3D`], [`CUlaunchConfig`], ...).
//! - The symbol table of every driver API function and the ABI symbols
//!   behind it ([`symbols`], [`for_each_api!`], [`for_each_abi_symbol!`],
//!   [`resolve`]).
//!
//! Names keep their C spelling so that code reads like NVIDIA's
//! documentation. Nothing here depends on NVIDIA's headers or libraries.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

pub mod constants;
pub mod enums;
pub mod handles;
pub mod result;
pub mod structs;
pub mod symbols;

pub use constants::*;
pub use enums::*;
pub use handles::*;
pub use result::CUresult;
pub use structs::*;
pub use symbols::{
    abi_symbol, api_function, resolve, AbiSymbol, ApiFunction, ApiVersion, PerThreadVariant, Resolution, ABI_SYMBOLS, API_FUNCTIONS,
};
