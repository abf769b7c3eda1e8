//! Every oracle case, compiled by the compiler and run by the CPU backend,
//! gives the results recorded on NVIDIA hardware.

use backend_cpu::{LaunchOptions, LoadedKernel};
use std::collections::HashMap;

struct Family {
    _module: backend_cpu::LoadedModule,
    kernels: HashMap<String, LoadedKernel>,
}

fn load_family(name: &str, warp_mode: bool) -> Result<Family, String> {
    let src = oracle::module_source(name)?;
    let module = ptx::parse(&src).map_err(|d| d.to_string())?;
    let opts =
        compiler::Options { warp: if warp_mode { compiler::WarpMode::Always } else { compiler::WarpMode::Off }, strict_affine: false };
    let compiled = compiler::compile_with_options(&module, &src, &compiler::Target::HostCpu, &opts).map_err(|e| e.to_string())?;
    let loaded = backend_cpu::load(&compiled.object).map_err(|e| e.to_string())?;
    let mut kernels = HashMap::new();
    for info in compiled.info.kernels {
        let name = info.name.clone();
        // SAFETY: the object and its description come from the same compile.
        let k = unsafe { LoadedKernel::from_module(&loaded, info) }.ok_or_else(|| format!("{name}: symbols missing"))?;
        kernels.insert(name, k);
    }
    Ok(Family { _module: loaded, kernels })
}

fn run(case: &oracle::Case, kernel: &LoadedKernel) -> Result<(), String> {
    let launch = case.launch()?;
    let mut buffers: Vec<Vec<u8>> = launch
        .buffers
        .iter()
        .map(|b| {
            // Room past the end so a wrong index shows up as a mismatch, not a fault.
            let mut v = b.clone();
            v.reserve(64);
            v
        })
        .collect();
    let info = &kernel.info;
    if info.params.len() != launch.args.len() {
        return Err(format!("kernel has {} parameters, case passes {}", info.params.len(), launch.args.len()));
    }
    let mut params = vec![0u8; info.param_bytes as usize];
    for (p, a) in info.params.iter().zip(&launch.args) {
        let bytes = match a {
            oracle::Arg::Buffer(i) => (buffers[*i].as_mut_ptr() as u64).to_le_bytes().to_vec(),
            oracle::Arg::U32(v) => v.to_le_bytes().to_vec(),
        };
        let at = p.offset as usize;
        params[at..at + bytes.len().min(p.size as usize)].copy_from_slice(&bytes[..bytes.len().min(p.size as usize)]);
    }
    // SAFETY: the parameters point to live buffers sized as the case says.
    unsafe { backend_cpu::launch(kernel, launch.grid, launch.block, launch.shared, &params, &LaunchOptions::default()) }
        .map_err(|e| format!("launch failed: {e}"))?;
    let results: Vec<Vec<u8>> = launch.outputs.iter().map(|&i| buffers[i].clone()).collect();
    drop(buffers.drain(..));
    case.check(&results)
}

/// Kernels compiled in warp mode where they allow it (the default).
#[test]
fn oracle_cases_match_the_hardware_in_warp_mode() {
    run_all(true);
}

/// Every kernel compiled one thread per call (the mode kernels that warp
/// mode does not cover use).
#[test]
fn oracle_cases_match_the_hardware_in_thread_mode() {
    run_all(false);
}

fn run_all(warp_mode: bool) {
    let oracle = oracle::load().expect("oracle loads");
    let mut families: HashMap<String, Result<Family, String>> = HashMap::new();
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in &oracle.cases {
        let fam = families.entry(case.family.clone()).or_insert_with(|| load_family(&case.family, warp_mode));
        let result = match fam {
            Err(e) => Err(format!("family does not load: {e}")),
            Ok(f) => match f.kernels.get(&case.kernel) {
                None => Err("kernel not found".to_string()),
                Some(k) => run(case, k),
            },
        };
        match result {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("{}/{}: {e}", case.family, case.kernel)),
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("FAIL {f}");
        }
    }
    eprintln!("oracle ({} mode): {passed} passed, {} failed", if warp_mode { "warp" } else { "thread" }, failures.len());
    assert!(failures.is_empty(), "{} of {} oracle cases fail", failures.len(), oracle.cases.len());
}
