//! The backend against real HIP runtimes on a machine without an AMD GPU:
//! every symbol it binds exists in ROCm's runtime, and without a device it
//! says so instead of failing later.

use backend_hip::{api, HipBackend, StartError};

/// Debian's ROCm 5.2 runtime (`libamdhip64-5`, installed by
/// scripts/setup.sh).
const DEBIAN_ROCM: &str = "libamdhip64.so.5";

#[test]
fn every_bound_symbol_exists_in_rocm_runtimes() {
    // SAFETY: loading the HIP runtime runs its initialisers, as any HIP
    // program does; no GPU is needed for that.
    let lib = unsafe { libloading::Library::new(DEBIAN_ROCM) }
        .unwrap_or_else(|e| panic!("{DEBIAN_ROCM}: {e} (scripts/setup.sh installs libamdhip64-5)"));
    let missing: Vec<&str> = api::SYMBOLS
        .iter()
        .copied()
        // SAFETY: only looking the symbol up.
        .filter(|name| unsafe { lib.get::<*const ()>(format!("{name}\0").as_bytes()) }.is_err())
        .collect();
    assert!(missing.is_empty(), "not in {DEBIAN_ROCM}: {missing:?}");
    assert!(api::SYMBOLS.len() >= 25, "the table lists {} symbols", api::SYMBOLS.len());
}

#[test]
fn without_a_device_or_a_runtime_the_backend_does_not_start() {
    // One process, one environment: both cases in order.
    std::env::set_var("ANYCUDA_HIP_LIBRARY", "libanycuda-no-such-runtime.so");
    match HipBackend::start() {
        Err(StartError::NoRuntime(why)) => assert!(why.contains("libanycuda-no-such-runtime.so"), "{why}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a missing runtime started"),
    }
    std::env::set_var("ANYCUDA_HIP_LIBRARY", DEBIAN_ROCM);
    match HipBackend::start() {
        Err(StartError::NoDevice(why)) => assert!(!why.is_empty()),
        Err(e) => panic!("wrong error: {e}"),
        Ok(b) => panic!("a machine without an AMD GPU has {} HIP devices", driver::Backend::device_count(&b)),
    }
}
