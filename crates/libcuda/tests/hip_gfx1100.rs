//! anycuda's AMD path end to end on an emulated gfx1100 (RDNA3, wave32): the oracle's
//! cases through the C ABI and CUDA programs built by nvcc, on the built
//! `libcuda.so`'s HIP backend over the HIP runtime's test double, which
//! runs the compiled AMD code objects on the AMD ISA emulator. Same
//! results as the hardware recorded them, and as the CPU backend gives.

mod common;
mod hip_emulated;
mod hip_matrix;
mod oracle_run;

#[test]
fn oracle_cases_match_the_hardware_on_emulated_gfx1100() {
    hip_emulated::oracle_cases("gfx1100");
}

#[test]
fn cuda_programs_pass_on_emulated_gfx1100() {
    hip_emulated::programs("gfx1100");
}

#[test]
fn mma_forms_match_the_model_on_emulated_gfx1100() {
    hip_matrix::mma_products("gfx1100");
}
