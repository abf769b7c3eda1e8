//! The program suite of `benches/programs` (see its README): every CUDA
//! program, built by `scripts/bench-programs.sh build` (nvcc, unmodified
//! cudart), runs at its small size (`//@ small:` in its `.cu`) on the built
//! `libcuda.so.1` and must pass its own check against the host; its OpenMP
//! version must pass too, and both must print the same checksum (within the
//! `//@ tolerance:` of the `.cu`, exactly where none is given).

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The value of a `//@ key: value` line of a source file.
fn directive(src: &str, key: &str) -> Option<String> {
    let prefix = format!("//@ {key}:");
    src.lines().find_map(|l| l.strip_prefix(&prefix)).map(|v| v.trim().to_string())
}

/// The value of the line `KEY name value` of a program's output.
fn field(out: &str, key: &str, name: &str) -> Option<f64> {
    let prefix = format!("{key} {name} ");
    out.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|v| v.trim().parse().ok())
}

struct Run {
    stdout: String,
    stderr: String,
    ok: bool,
}

fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        ok: out.status.success(),
    }
}

/// True when a and b agree to the relative tolerance (absolute below 1).
fn agree(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn every_program_passes_on_the_cpu_and_agrees_with_its_openmp_version() {
    let src_dir = root().join("benches/programs");
    let bin = root().join("target/bench-programs");
    let mut names: Vec<String> = std::fs::read_dir(&src_dir)
        .expect("benches/programs")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 9, "benches/programs has {} programs", names.len());

    let lib_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-programs-{}", std::process::id()));
    std::fs::create_dir_all(&lib_dir).expect("dir");
    let link = lib_dir.join("libcuda.so.1");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(common::lib_path(), &link).expect("symlink");
    let cache = lib_dir.join("cache");

    let mut failures = Vec::new();
    for name in &names {
        let src = std::fs::read_to_string(src_dir.join(name).join(format!("{name}.cu"))).expect("the program's .cu");
        let small = directive(&src, "small").unwrap_or_else(|| panic!("{name}.cu has no `//@ small:` line"));
        let tol: f64 = directive(&src, "tolerance").map_or(0.0, |t| t.parse().expect("tolerance"));
        let (cuda, omp) = (bin.join("cuda").join(name), bin.join("omp").join(name));
        for exe in [&cuda, &omp] {
            assert!(exe.exists(), "{}: run scripts/bench-programs.sh build first (scripts/test.sh does)", exe.display());
        }
        let c = run(Command::new(&cuda)
            .args([small.as_str(), "1"])
            .env("LD_LIBRARY_PATH", &lib_dir)
            .env("ANYCUDA_BACKEND", "cpu")
            .env("ANYCUDA_CACHE_DIR", &cache)
            .env_remove("ANYCUDA_LOG")
            .env_remove("ANYCUDA_WARP"));
        let o = run(Command::new(&omp).args([small.as_str(), "1"]).env("OMP_NUM_THREADS", "2"));
        let pass = format!("PASS {name}");
        for (side, r) in [("anycuda", &c), ("OpenMP", &o)] {
            if !r.ok || !r.stdout.lines().any(|l| l == pass) {
                failures.push(format!("{name} ({side}): {}{}", r.stdout, r.stderr.chars().take(600).collect::<String>()));
            }
        }
        match (field(&c.stdout, "CHECK", name), field(&o.stdout, "CHECK", name)) {
            (Some(a), Some(b)) if agree(a, b, tol) => {}
            (a, b) => failures.push(format!("{name}: checksums differ: anycuda {a:?}, OpenMP {b:?} (tolerance {tol})")),
        }
        // Every program times its work and says so.
        for (side, r) in [("anycuda", &c), ("OpenMP", &o)] {
            if field(&r.stdout, "TIME", name).is_none() {
                failures.push(format!("{name} ({side}): no TIME line: {}", r.stdout));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&lib_dir);
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
