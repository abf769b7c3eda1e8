//! Compile time per kernel: every oracle module, and every module of the
//! nvcc corpus built by scripts/build-cuda-tests.sh (when present).
//!
//! Run: `cargo bench -p anycuda-compiler --bench compile`

use std::path::{Path, PathBuf};
use std::time::Instant;

fn modules(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "ptx")).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn measure(label: &str, files: &[PathBuf]) {
    println!("\n{label}\n");
    println!("| module | kernels | parse | lower to IR | compile (IR + O2 + object) | per kernel |");
    println!("|---|---|---|---|---|---|");
    let (mut total_ms, mut total_kernels) = (0.0, 0usize);
    for path in files {
        let src = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(_) => continue,
        };
        let t = Instant::now();
        let module = match ptx::parse(&src) {
            Ok(m) => m,
            Err(e) => {
                println!("| {} | parse error: {} |", path.display(), e.0.len());
                continue;
            }
        };
        let parse_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let ir = compiler::emit_ir(&module, &src);
        let lower_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let result = compiler::compile(&module, &src, &compiler::Target::HostCpu);
        let compile_ms = t.elapsed().as_secs_f64() * 1e3;
        let kernels = module.kernels().count().max(1);
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        match (ir, result) {
            (Ok(_), Ok(_)) => {
                total_ms += compile_ms;
                total_kernels += kernels;
                println!(
                    "| {name} | {kernels} | {parse_ms:.2} ms | {lower_ms:.2} ms | {compile_ms:.1} ms | {:.2} ms |",
                    compile_ms / kernels as f64
                );
            }
            (_, Err(e)) | (Err(e), _) => println!("| {name} | {kernels} | {parse_ms:.2} ms | - | not compiled: {e} | - |"),
        }
    }
    if total_kernels > 0 {
        println!("\ntotal: {total_kernels} kernels in {total_ms:.0} ms, {:.2} ms per kernel", total_ms / total_kernels as f64);
    }
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    measure("oracle modules (tests/ptx-oracle)", &modules(&root.join("tests/ptx-oracle")));
    let corpus = root.join("target/cuda-tests/ptx/sm_80");
    let files = modules(&corpus);
    if files.is_empty() {
        println!("\nnvcc corpus not built (scripts/build-cuda-tests.sh)");
    } else {
        measure("nvcc corpus, sm_80 (target/cuda-tests/ptx/sm_80)", &files);
    }
}
