//! libnvrtc.so.12: the functions of `anycuda_nvrtc::nvrtc` for NVIDIA's
//! NVRTC 12, under the names of `exports/nvrtc.txt` (in the
//! `anycuda-nvrtc` crate), versioned `libnvrtc.so.12` like NVIDIA's.

use anycuda_nvrtc::nvrtc::{Flavor, SPEC_12};
use anycuda_nvrtc::real::{Real, Spec};
use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/exports.rs"));

/// NVIDIA's libnvrtc.so.12.
pub struct Lib;

impl Flavor for Lib {
    const SPEC: Spec = SPEC_12;
    fn cell() -> &'static OnceLock<Option<Real>> {
        static CELL: OnceLock<Option<Real>> = OnceLock::new();
        &CELL
    }
}
