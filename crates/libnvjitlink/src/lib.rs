//! libnvJitLink.so.13: the functions of `anycuda_nvrtc::jitlink` under the
//! names of `exports/nvJitLink.txt` (in the `anycuda-nvrtc` crate),
//! versioned `libnvJitLink.so.13` like NVIDIA's.

include!(concat!(env!("OUT_DIR"), "/exports.rs"));
