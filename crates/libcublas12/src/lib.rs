//! libcublas.so.12: the symbols of `exports/cublas.txt` (in the
//! `anycuda-cublas` crate), versioned `libcublas.so.12` like NVIDIA's.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use anycuda_cublas::abi::{self, RELEASE_12 as RELEASE};
use std::ffi::{c_int, c_void};

include!(concat!(env!("OUT_DIR"), "/exports.rs"));

pub unsafe extern "C" fn cublasGetVersion_v2(h: *mut c_void, out: *mut c_int) -> c_int {
    abi::get_version(h, out, RELEASE)
}

pub unsafe extern "C" fn cublasGetProperty(kind: c_int, out: *mut c_int) -> c_int {
    abi::get_property(kind, out, RELEASE)
}

pub unsafe extern "C" fn cublasGetCudartVersion() -> usize {
    RELEASE.cudart
}
