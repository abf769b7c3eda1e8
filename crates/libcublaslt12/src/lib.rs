//! libcublasLt.so.12: the symbols of `exports/cublasLt.txt` (in the
//! `anycuda-cublas` crate), versioned `libcublasLt.so.12` like NVIDIA's.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use anycuda_cublas::abi::RELEASE_12 as RELEASE;
use anycuda_cublas::lt;
use std::ffi::c_int;

include!(concat!(env!("OUT_DIR"), "/exports.rs"));

pub unsafe extern "C" fn cublasLtGetVersion() -> usize {
    RELEASE.version() as usize
}

pub unsafe extern "C" fn cublasLtGetProperty(kind: c_int, out: *mut c_int) -> c_int {
    lt::get_property(kind, out, RELEASE)
}

pub unsafe extern "C" fn cublasLtGetCudartVersion() -> usize {
    RELEASE.cudart
}
