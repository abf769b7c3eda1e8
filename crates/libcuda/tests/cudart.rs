//! Unmodified NVIDIA cudart (13.x static and shared, 12.x shared) on the
//! built library: programs are compiled with the toolkit's nvcc (installed
//! by scripts/toolkit.sh under $ANYCUDA_TOOLKIT) and run with
//! LD_LIBRARY_PATH pointing at a directory whose libcuda.so.1 is the built
//! libcuda.so. Builds are cached under cargo's CARGO_TARGET_TMPDIR, keyed
//! by the source, the flags and the toolkit path.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn toolkit() -> PathBuf {
    if let Some(t) = std::env::var_os("ANYCUDA_TOOLKIT") {
        return PathBuf::from(t);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    cache.join("anycuda/toolkit")
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The toolkit's cudart flavours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cudart {
    Static13,
    Shared13,
    Shared12,
}

fn build(source: &str, cudart: Cudart, extra: &[&str]) -> PathBuf {
    let tk = toolkit();
    let nvcc = tk.join("bin/nvcc");
    assert!(nvcc.exists(), "no nvcc at {}: run scripts/toolkit.sh (or set ANYCUDA_TOOLKIT)", nvcc.display());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda").join(source);
    let text = std::fs::read(&src).expect("source");
    let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    match cudart {
        Cudart::Static13 => {}
        Cudart::Shared13 => args.extend(["-cudart".into(), "shared".into()]),
        Cudart::Shared12 => args.extend([
            "-cudart".into(),
            "none".into(),
            format!("-I{}", tk.join("cu12/include").display()),
            format!("-L{}", tk.join("cu12/lib").display()),
            "-l:libcudart.so.12".into(),
        ]),
    }
    let key = fnv(&[text.as_slice(), args.join(" ").as_bytes(), tk.to_string_lossy().as_bytes()].concat());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cudart");
    std::fs::create_dir_all(&dir).expect("build dir");
    let exe = dir.join(format!("{}-{:?}-{key:016x}", source.trim_end_matches(".cu"), cudart));
    if exe.exists() {
        return exe;
    }
    let tmp = exe.with_extension("tmp");
    let out = Command::new(&nvcc).arg(&src).arg("-o").arg(&tmp).args(&args).output().expect("run nvcc");
    assert!(out.status.success(), "nvcc {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    std::fs::rename(&tmp, &exe).expect("rename");
    exe
}

/// A directory holding `libcuda.so.1` -> the built library, made once per
/// test process (the tests run concurrently and must not replace the link
/// under each other's feet).
fn driver_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("libcuda-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let link = dir.join("libcuda.so.1");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(common::lib_path(), &link).expect("symlink");
        dir
    })
    .clone()
}

fn run(exe: &Path, cudart: Cudart, args: &[&str]) -> String {
    let tk = toolkit();
    let runtime = match cudart {
        Cudart::Static13 => None,
        Cudart::Shared13 => Some(tk.join("lib")),
        Cudart::Shared12 => Some(tk.join("cu12/lib")),
    };
    let mut path = driver_dir().to_string_lossy().into_owned();
    if let Some(r) = runtime {
        path = format!("{path}:{}", r.display());
    }
    let out = Command::new(exe)
        .args(args)
        .env("LD_LIBRARY_PATH", path)
        .env_remove("ANYCUDA_LOG")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .output()
        .expect("run test program");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?} ({cudart:?}) failed with {:?}:\n{stdout}\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn bootstrap(cudart: Cudart) {
    let exe = build("bootstrap.cu", cudart, &["-arch=sm_80"]);
    let out = run(&exe, cudart, &[]);
    assert!(out.contains("PASS bootstrap"), "{out}");
}

#[test]
fn bootstrap_static_cudart_13() {
    bootstrap(Cudart::Static13);
}

#[test]
fn bootstrap_shared_cudart_13() {
    bootstrap(Cudart::Shared13);
}

#[test]
fn bootstrap_cudart_12() {
    bootstrap(Cudart::Shared12);
}

#[test]
fn kernels_through_cudart_13() {
    let exe = build("kernels.cu", Cudart::Static13, &["-arch=sm_80"]);
    let out = run(&exe, Cudart::Static13, &[]);
    assert!(out.contains("PASS kernels"), "{out}");
}

#[test]
fn kernels_through_cudart_12() {
    let exe = build("kernels.cu", Cudart::Shared12, &["-arch=sm_80"]);
    let out = run(&exe, Cudart::Shared12, &[]);
    assert!(out.contains("PASS kernels"), "{out}");
}

#[test]
fn kernels_with_lz4_compressed_ptx_for_a_newer_arch() {
    // Only compute_90 PTX: loads on the default 8.6 device under the
    // nearest-PTX policy.
    let exe = build("kernels.cu", Cudart::Static13, &["-gencode", "arch=compute_90,code=compute_90", "--compress-mode=speed"]);
    let out = run(&exe, Cudart::Static13, &[]);
    assert!(out.contains("PASS kernels"), "{out}");
}

#[test]
fn sass_only_binaries_have_no_kernel_image() {
    let exe = build("kernels.cu", Cudart::Static13, &["-gencode", "arch=compute_80,code=sm_80"]);
    let out = run(&exe, Cudart::Static13, &["sass-only"]);
    assert!(out.contains("PASS kernels sass-only"), "{out}");
}
