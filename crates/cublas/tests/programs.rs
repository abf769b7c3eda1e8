//! The CUDA programs of `tests/cuda` linked with NVIDIA's `-lcublas`
//! (manifest flags `libs:cublas`; built by `scripts/build-cuda-tests.sh`)
//! run with anycuda's driver and anycuda's libcublas under NVIDIA's names,
//! pass their own checks, and prove which libcublas they loaded: each
//! prints `loaded: PATH` for the file holding `cublasSgemm_v2` (programs
//! linked with `-lcublasLt`: `cublasLtMatmul`), which must be this
//! build's.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn cublas_programs_load_anycuda_cublas_and_pass() {
    let out = root().join("target/cuda-tests");
    let text = std::fs::read_to_string(out.join("manifest.tsv")).unwrap_or_else(|e| {
        panic!("{}: {e}: run scripts/build-cuda-tests.sh first (scripts/test.sh does)", out.join("manifest.tsv").display())
    });
    let exes: Vec<(String, String, PathBuf, bool)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() >= 7 && f[2] == "exe" && f[6].contains("libs:cublas"))
                .then(|| (f[0].to_string(), f[5].to_string(), out.join(f[3]), f[6].split_whitespace().any(|t| t == "libs:cublasLt")))
        })
        .collect();
    let cudarts: std::collections::BTreeSet<&str> = exes.iter().map(|e| e.1.as_str()).collect();
    for want in ["static", "libcudart.so.13", "libcudart.so.12"] {
        assert!(cudarts.contains(want), "no cuBLAS program with the {want} cudart in the manifest");
    }
    // The library directory `anycuda run` makes: NVIDIA's names, anycuda's files.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cublas-programs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let links = [
        ("libcuda.so.1", "libcuda.so"),
        ("libcublas.so.13", "libcublas.so"),
        ("libcublas.so.12", "libcublas12.so"),
        ("libcublasLt.so.13", "libcublasLt.so"),
        ("libcublasLt.so.12", "libcublasLt12.so"),
    ];
    for (name, file) in links {
        let _ = std::fs::remove_file(dir.join(name));
        std::os::unix::fs::symlink(common::built(file), dir.join(name)).expect("symlink");
    }
    let cache = dir.join("kernels");
    let mut failures = Vec::new();
    for (name, cudart, path, lt) in &exes {
        let o = Command::new(path)
            .env("LD_LIBRARY_PATH", &dir)
            .env("ANYCUDA_CACHE_DIR", &cache)
            .env("ANYCUDA_BACKEND", "cpu")
            .env_remove("ANYCUDA_LOG")
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let ok = o.status.success() && stdout.lines().last() == Some(format!("PASS {name}").as_str());
        // Which file the program's cublasSgemm_v2 (cublasLtMatmul for
        // cuBLASLt programs) came from.
        let file = match (*lt, cudart == "libcudart.so.12") {
            (false, false) => "libcublas.so",
            (false, true) => "libcublas12.so",
            (true, false) => "libcublasLt.so",
            (true, true) => "libcublasLt12.so",
        };
        let want = std::fs::canonicalize(common::built(file)).expect("built");
        let loaded =
            stdout.lines().find_map(|l| l.strip_prefix("loaded: ")).map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)));
        if !ok {
            failures.push(format!("{cudart}/{name}: {:?}\n{stdout}\n{}", o.status, stderr.chars().take(2000).collect::<String>()));
        } else if loaded.as_deref() != Some(want.as_path()) {
            failures.push(format!("{cudart}/{name}: loaded {loaded:?}, not anycuda's {}", want.display()));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
