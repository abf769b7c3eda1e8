//! The PTX oracle (instruction results recorded on an NVIDIA H200) through
//! the C ABI of the built library, on the CPU backend, the way a driver-API
//! program runs it: `cuModuleLoadData` of each family's PTX text,
//! `cuModuleGetFunction`, `cuMemAlloc`/`cuMemcpyHtoD` of the inputs, outputs
//! preset with `cuMemsetD8` (0xCD, as on the hardware run), `cuLaunchKernel`,
//! `cuCtxSynchronize`, `cuMemcpyDtoH`, and the oracle's comparison.
//!
//! Every case runs twice: once on modules compiled at load (an empty kernel
//! cache) and once on modules loaded again, which must come from the cache;
//! each pass passes the parameters of half the cases through `kernelParams`
//! and of the other half through the `extra` buffer, swapped between the
//! passes, so every case sees both forms.
//!
//! This file is its own test executable because the library reads its
//! backend and cache directory from the environment once per process.

mod common;
mod oracle_run;
use common::*;
use oracle_run::*;
use std::path::PathBuf;

/// A fresh, private kernel cache: the first pass must compile.
fn cache_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("oracle-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn oracle_cases_match_the_hardware_through_the_c_abi() {
    let cache = cache_dir();
    // Read by the library when its driver starts (cuInit below), before
    // any other thread of this test executable exists.
    std::env::set_var("ANYCUDA_CACHE_DIR", &cache);
    std::env::remove_var("ANYCUDA_LOG");
    let lib = Lib::open_cpu();
    let api = Api::new(&lib);
    let oracle = oracle::load().expect("oracle loads");
    assert!(oracle.cases.len() >= 847, "the oracle has {} cases", oracle.cases.len());
    let (passed, failures) = run_cases(&api, &oracle, &["cold", "warm"], true);
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    eprintln!("oracle through libcuda.so: {passed} passed, {} failed (each case cold and warm)", failures.len());
    assert!(failures.is_empty(), "{} of {} case runs fail", failures.len(), 2 * oracle.cases.len());
    assert_eq!(passed, 2 * oracle.cases.len());
    let _ = std::fs::remove_dir_all(&cache);
}
