//! anycuda's NVRTC (`libnvrtc.so.13`, `libnvrtc.so.12`) and nvJitLink
//! (`libnvJitLink.so.13`), and the code of the `ptxas` stand-in.
//!
//! Programs that compile at run time ask for NVIDIA machine code for the
//! device they see (`--gpu-architecture=sm_86` then `nvrtcGetCUBIN`,
//! `nvJitLinkGetLinkedCubin`, `ptxas -arch=sm_90 -o k.cubin`) and hand it
//! to `cuModuleLoadData`. anycuda runs PTX only, so these libraries stand
//! where NVIDIA's are found and:
//!
//! - forward every NVRTC function to NVIDIA's library, opened at run time
//!   ([`real`]), except that options asking for machine code
//!   (`-arch=sm_XX`, `--gpu-architecture=sm_XX`, `-arch=native`) compile
//!   for the matching virtual architecture (`compute_XX`) instead
//!   ([`options`]), and `nvrtcGetCUBINSize`/`nvrtcGetCUBIN` of such a
//!   program return its PTX: NUL-terminated PTX text, which the driver's
//!   module loader takes wherever a cubin is taken ([`nvrtc`]);
//! - link in nvJitLink ([`jitlink`]): PTX inputs are linked by anycuda at
//!   the PTX level ([`ptxlink`]), LTO-IR inputs by NVIDIA's nvJitLink
//!   (`-lto -ptx`), and the linked PTX is what `nvJitLinkGetLinkedCubin`
//!   returns;
//! - `ptxas` ([`ptxas`]) writes its PTX input where the cubin was asked.
#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod jitlink;
pub mod log;
pub mod nvrtc;
pub mod options;
pub mod ptxas;
pub mod ptxlink;
pub mod real;

/// What anycuda hands back where machine code is asked for: the PTX text
/// with its terminating NUL, as `cuModuleLoadData` takes it. Its length is
/// the size the `...Size` functions report.
pub fn ptx_container(ptx: &str) -> Vec<u8> {
    let text = ptx.trim_end_matches('\0');
    let mut v = Vec::with_capacity(text.len() + 1);
    v.extend_from_slice(text.as_bytes());
    v.push(0);
    v
}
