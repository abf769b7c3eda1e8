//! The built `anycuda` executable, run as a user would.
//!
//! `anycuda run` needs the cdylib of the same build: this package depends
//! on `anycuda-libcuda`, so cargo builds `libcuda.so` (into the profile's
//! `deps` directory) before the `anycuda` binary these tests run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn anycuda() -> Command {
    Command::new(env!("CARGO_BIN_EXE_anycuda"))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory of this test under cargo's scratch space.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// `anycuda run` with its link directory and the kernel cache kept inside
/// the test's scratch directory.
fn run_cmd(dir: &Path) -> Command {
    let mut c = anycuda();
    c.arg("run")
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("ANYCUDA_CACHE_DIR", dir.join("kernels"))
        .env_remove("ANYCUDA_LIBRARY")
        .env("ANYCUDA_BACKEND", "cpu")
        .env_remove("ANYCUDA_LOG");
    c
}

/// `anycuda memcheck` with the given arguments (`--tool ...`), its link
/// directory and kernel cache inside the test's scratch directory.
fn memcheck_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = anycuda();
    c.arg("memcheck")
        .args(args)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("ANYCUDA_CACHE_DIR", dir.join("kernels"))
        .env_remove("ANYCUDA_LIBRARY")
        .env_remove("ANYCUDA_MEMCHECK")
        .env("ANYCUDA_BACKEND", "cpu")
        .env_remove("ANYCUDA_LOG");
    c
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn info_prints_a_device() {
    let o = anycuda().arg("info").output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "anycuda info failed: {err}");
    for want in [
        "driver version: 13.",
        "backend: cpu",
        "kernel cache: ",
        "devices: 1",
        "device 0: anycuda CPU",
        "compute capability:",
        "multiprocessors:",
        "warp size:                 32",
        "shared memory per block:   48 KiB",
        "max threads per block:     1024",
        "memory:",
    ] {
        assert!(out.contains(want), "no `{want}` in:\n{out}");
    }
}

/// Several CPU devices, and CUDA_VISIBLE_DEVICES choosing and ordering
/// them (a device keeps its PCI bus id: device 0 is the third one).
#[test]
fn info_shows_the_visible_cpu_devices() {
    let o = anycuda().arg("info").env("ANYCUDA_CPU_DEVICES", "3").env("CUDA_VISIBLE_DEVICES", "2,0").output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("devices: 2\n"), "{out}");
    let buses: Vec<&str> = out.lines().filter_map(|l| l.trim().strip_prefix("PCI bus id:")).map(str::trim).collect();
    assert_eq!(buses, ["0000:ae:00.0", "0000:ac:00.0"], "{out}");
}

#[test]
fn ptx_compiles_every_kernel_of_an_oracle_module() {
    let file = root().join("tests/ptx-oracle/threads.ptx");
    let src = std::fs::read_to_string(&file).expect("oracle module");
    let kernels = src.lines().filter(|l| l.contains(".entry ")).count();
    assert!(kernels > 10);
    let o = anycuda().arg("ptx").arg(&file).output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "exit {:?}:\n{out}{err}", o.status);
    let ok = out.lines().filter(|l| l.starts_with("  kernel ") && l.contains(": ok (")).count();
    assert_eq!(ok, kernels, "{out}");
    assert!(out.contains(&format!("ok: {kernels} kernel(s) compile")), "{out}");
    assert!(out.contains("parameters: .u64 pin, .u64 pout, .u64 pout2, .u32 pn (28 bytes)"), "{out}");
    assert!(out.contains("static shared memory: "), "{out}");
}

const BROKEN: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry good(.param .u64 p, .param .u32 n)
{
    .reg .u64 %rd<2>;
    .reg .u32 %r<2>;
    ld.param.u64 %rd0, [p];
    ld.param.u32 %r0, [n];
    st.global.u32 [%rd0], %r0;
    ret;
}

.visible .entry bad(.param .u64 p)
{
    .reg .u64 %rd<2>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd0, [p];
    wgmma.fence.sync.aligned;
    ret;
}
";

#[test]
fn ptx_reports_a_kernel_that_does_not_compile() {
    let dir = scratch("broken");
    let file = dir.join("broken.ptx");
    std::fs::write(&file, BROKEN).expect("write");
    let o = anycuda().arg("ptx").arg(&file).output().expect("anycuda runs");
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("kernel good: ok ("), "{out}");
    let want = format!("kernel bad: error: {}:20:5: unsupported: instruction `wgmma.fence.sync.aligned`", file.display());
    assert!(out.contains(&want), "no `{want}` in:\n{out}");
    assert!(out.contains("FAILED: 1 of 2 kernel(s) do not compile"), "{out}");
}

#[test]
fn ptx_reports_parse_errors_and_missing_files() {
    let dir = scratch("parse");
    let file = dir.join("bad.ptx");
    std::fs::write(&file, ".version 8.0\n.target sm_80\n.visible .entry x( { ret; }\n").expect("write");
    let missing = dir.join("missing.ptx");
    let good = root().join("tests/ptx-oracle/f64.ptx");
    let o = anycuda().arg("ptx").arg(&file).arg(&missing).arg(&good).output().expect("anycuda runs");
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("{}:3:20: ", file.display())), "{out}");
    assert!(out.contains(&format!("{}: No such file", missing.display())), "{out}");
    // The other files are still checked.
    assert!(out.contains(&format!("{}: ok: ", good.display())), "{out}");
}

#[test]
fn ptx_emits_ir_and_compiles_for_amdgpu() {
    let dir = scratch("ir");
    let file = dir.join("good.ptx");
    let good = BROKEN.split(".visible .entry bad").next().expect("first kernel");
    std::fs::write(&file, good).expect("write");
    let o = anycuda().arg("ptx").arg("--emit-ir").arg(&file).output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("define ") && out.contains("good"), "no IR on stdout:\n{out}");
    assert!(err.contains("kernel good: ok ("), "the report goes to stderr with --emit-ir:\n{err}");
    let o = anycuda().arg("ptx").arg("--emit-obj").arg(&dir).arg(&file).output().expect("anycuda runs");
    assert!(o.status.success(), "{}", text(&o).1);
    let object = std::fs::read(dir.join("good.ptx.o")).expect("the object is written");
    assert!(object.starts_with(b"\x7fELF"), "not an ELF object");
    assert!(object.windows(4).any(|w| w == b"good"), "the kernel's symbol is missing");
    let o = anycuda().args(["ptx", "--target", "gfx1100"]).arg(&file).output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("compiling for gfx1100") && out.contains("kernel good: ok ("), "{out}");
    let o = anycuda().args(["ptx", "--target", "gfx12345x"]).arg(&file).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("gfx12345x"));
}

#[test]
fn run_executes_a_cuda_program_on_anycuda() {
    let exe = root().join("target/cuda-tests/bin/static/vector_add");
    assert!(
        exe.is_file(),
        "{} is missing: build the CUDA test programs with scripts/build-cuda-tests.sh (scripts/test.sh does)",
        exe.display()
    );
    let dir = scratch("vector-add");
    let o = run_cmd(&dir).arg("--").arg(&exe).output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "exit {:?}\n{out}{err}", o.status);
    assert_eq!(out.lines().last(), Some("PASS vector_add"), "{out}{err}");
}

#[test]
fn run_sets_up_the_environment_and_keeps_the_exit_status() {
    let dir = scratch("env");
    let script = "echo \"$LD_LIBRARY_PATH\"; echo \"$ANYCUDA_LOG\"; echo \"$1\"; exit 7";
    let o = run_cmd(&dir)
        .args(["--log", "trace", "--", "sh", "-c", script, "sh", "--not-an-anycuda-flag"])
        .env("LD_LIBRARY_PATH", "/somewhere/else")
        .output()
        .expect("anycuda runs");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(7), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    let (first, rest) = lines[0].split_once(':').expect("a prepended directory");
    assert_eq!(rest, "/somewhere/else");
    assert!(Path::new(first).starts_with(dir.join("cache")), "{first}");
    let link = Path::new(first).join("libcuda.so.1");
    let target = std::fs::read_link(&link).expect("libcuda.so.1 is a symlink");
    assert!(target.is_file() && target.ends_with("libcuda.so"), "{}", target.display());
    assert_eq!(lines[1], "trace");
    assert_eq!(lines[2], "--not-an-anycuda-flag");
}

#[test]
fn concurrent_runs_share_one_link_directory() {
    let dir = scratch("concurrent");
    let children: Vec<_> = (0..8)
        .map(|_| {
            run_cmd(&dir).args(["--", "sh", "-c", "echo \"$LD_LIBRARY_PATH\""]).stdout(std::process::Stdio::piped()).spawn().expect("spawn")
        })
        .collect();
    let mut dirs = std::collections::BTreeSet::new();
    for c in children {
        let o = c.wait_with_output().expect("wait");
        assert!(o.status.success());
        let path = String::from_utf8_lossy(&o.stdout).trim().to_string();
        dirs.insert(path.split(':').next().unwrap_or_default().to_string());
    }
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let d = PathBuf::from(dirs.into_iter().next().unwrap_or_default());
    let mut names: Vec<String> =
        std::fs::read_dir(&d).expect("link directory").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    // The driver under both names, and anycuda's cuBLAS, NVRTC and
    // nvJitLink under NVIDIA's names where the build made them (cargo
    // builds them as this crate's dependencies).
    let cublas = [
        "libcublas.so.12",
        "libcublas.so.13",
        "libcublasLt.so.12",
        "libcublasLt.so.13",
        "libnvrtc.so.13",
        "libnvrtc.so.12",
        "libnvJitLink.so.13",
    ];
    let (driver, others): (Vec<&String>, Vec<&String>) = names.iter().partition(|n| n.starts_with("libcuda.so"));
    assert_eq!(driver, ["libcuda.so", "libcuda.so.1"], "{names:?}");
    for n in others {
        assert!(cublas.contains(&n.as_str()), "unexpected {n} in {names:?}");
        assert!(d.join(n).canonicalize().is_ok_and(|t| t.is_file()), "{n} does not lead to a library");
    }
}

#[test]
fn run_sets_up_run_time_compilation() {
    let dir = scratch("nvrtc");
    let o = run_cmd(&dir)
        .env_remove("TRITON_PTXAS_PATH")
        .env("LD_PRELOAD", "")
        .args([
            "--",
            "sh",
            "-c",
            "d=\"${LD_LIBRARY_PATH%%:*}\"; for n in libnvrtc.so.13 libnvrtc.so.12 libnvJitLink.so.13; do readlink \"$d/$n\"; done; echo \"$TRITON_PTXAS_PATH\"; echo \"$LD_PRELOAD\"",
        ])
        .output()
        .expect("run");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    // Preloaded (Python's loaders take an already-loaded library first),
    // from the link directory.
    let preload: Vec<&str> = lines[4].split(':').collect();
    assert_eq!(preload.len(), 3, "{out}");
    for (p, name) in preload.iter().zip(["libnvrtc.so.13", "libnvrtc.so.12", "libnvJitLink.so.13"]) {
        assert!(p.ends_with(&format!("/{name}")) && Path::new(p).is_file(), "{p}");
    }
    for (line, file) in lines.iter().zip(["libnvrtc.so", "libnvrtc12.so", "libnvjitlink.so"]) {
        assert!(line.ends_with(&format!("/{file}")), "{line} is not anycuda's {file}");
    }
    // Triton's ptxas: anycuda's, answering --version as ptxas does.
    assert_eq!(lines[3], env!("CARGO_BIN_EXE_ptxas"));
    let v = Command::new(lines[3]).arg("--version").env_remove("ANYCUDA_DRIVER_VERSION").output().expect("ptxas --version");
    assert!(String::from_utf8_lossy(&v.stdout).contains("Cuda compilation tools, release 13.5, V13.5.0"), "{v:?}");
}

/// Python's CUDA packages (`cuda-pathfinder`, behind cuda-bindings,
/// numba-cuda and CuPy) take an NVRTC or nvJitLink already loaded in the
/// process before NVIDIA's wheels: under `run`, the one already loaded is
/// anycuda's (it lacks the symbol only NVIDIA's exports), and answers.
#[test]
fn run_makes_pythons_loaders_find_anycudas_run_time_compilers() {
    let dir = scratch("pathfinder");
    let script = r#"
import ctypes, os
for name, marker in (("libnvrtc.so.13", "__nvrtcCPEx"), ("libnvJitLink.so.13", "__nvJitLinkAPI")):
    lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD)
    print(name, "nvidia" if hasattr(lib, marker) else "anycuda")
jl = ctypes.CDLL("libnvJitLink.so.13", mode=os.RTLD_NOLOAD)
major, minor = ctypes.c_uint(), ctypes.c_uint()
print("nvJitLinkVersion", jl.nvJitLinkVersion(ctypes.byref(major), ctypes.byref(minor)), major.value)
"#;
    let o = run_cmd(&dir)
        .env("LD_PRELOAD", "")
        .env("ANYCUDA_NVJITLINK_LIBRARY", dir.join("none"))
        .args(["--", "python3", "-c", script])
        .output()
        .expect("run");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(out, "libnvrtc.so.13 anycuda\nlibnvJitLink.so.13 anycuda\nnvJitLinkVersion 0 13\n", "{err}");
}

#[test]
fn ptxas_takes_tritons_command_line() {
    let dir = scratch("ptxas");
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { ret; }\n";
    std::fs::write(dir.join("k.ptx"), ptx).expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_ptxas"))
        .args(["-lineinfo", "-v", "--fmad=false", "--opt-level", "3", "--gpu-name=sm_90a"])
        .arg(dir.join("k.ptx"))
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .expect("ptxas");
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("for sm_90a"), "{err}");
    assert_eq!(std::fs::read(dir.join("k.cubin")).expect("output"), format!("{ptx}\0").into_bytes());
    let o = Command::new(env!("CARGO_BIN_EXE_ptxas")).args(["--frobnicate", "k.ptx"]).output().expect("ptxas");
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("ptxas fatal   : Unknown option '--frobnicate'"));
}

#[test]
fn run_of_a_missing_program_exits_127() {
    let dir = scratch("missing");
    let o = run_cmd(&dir).args(["--", "/nonexistent"]).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(127));
    assert!(text(&o).1.contains("/nonexistent: no such file"), "{}", text(&o).1);
    let o = run_cmd(&dir).args(["--", "anycuda-no-such-command"]).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(127));
    assert!(text(&o).1.contains("anycuda-no-such-command: command not found"), "{}", text(&o).1);
    // Found but not executable: 126, as a shell says.
    let file = dir.join("data.txt");
    std::fs::write(&file, "not a program").expect("write");
    let o = run_cmd(&dir).arg("--").arg(&file).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(126));
}

#[test]
fn run_names_a_missing_library() {
    let dir = scratch("nolib");
    let o = run_cmd(&dir).env("ANYCUDA_LIBRARY", "/nonexistent/libcuda.so").args(["--", "true"]).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(125));
    let err = text(&o).1;
    assert!(err.contains("ANYCUDA_LIBRARY=/nonexistent/libcuda.so"), "{err}");
    // An explicit library is used as given.
    let lib = dir.join("mylib");
    std::fs::create_dir_all(&lib).expect("dir");
    std::fs::write(lib.join("libcuda.so.1"), b"").expect("write");
    let o = run_cmd(&dir)
        .env("ANYCUDA_LIBRARY", &lib)
        .args(["--", "sh", "-c", "readlink \"${LD_LIBRARY_PATH%%:*}/libcuda.so.1\""])
        .output()
        .expect("anycuda runs");
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(text(&o).0.trim(), lib.join("libcuda.so.1").canonicalize().expect("canonical").to_string_lossy());
}

#[test]
fn run_without_a_program_is_a_usage_error() {
    let o = anycuda().arg("run").output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(2));
    let o = anycuda().args(["run", "--log", "loud", "--", "true"]).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("loud"));
}

/// `anycuda memcheck` runs a program in checked mode: a kernel's store just
/// past its allocation is reported on stderr and fails with
/// cudaErrorIllegalAddress (the program expects it and prints PASS).
#[test]
fn memcheck_reports_a_store_past_an_allocation() {
    let exe = root().join("target/cuda-tests/bin/static/memcheck_errors");
    assert!(exe.exists(), "{} is missing: build the CUDA test programs with scripts/build-cuda-tests.sh", exe.display());
    let dir = scratch("memcheck");
    let o = memcheck_cmd(&dir, &[]).arg("--").arg(&exe).arg("write").output().expect("anycuda runs");
    let (out, err) = text(&o);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success() && out.ends_with("PASS memcheck_errors\n"), "{out}{err}");
    assert!(err.contains("anycuda memcheck: invalid") && err.contains("write of size 4 bytes"), "{err}");
    assert!(err.contains("0 bytes past the end of a 64-byte device allocation"), "{err}");
}

/// `anycuda memcheck --tool racecheck` adds racecheck: a shared-memory race
/// is reported on stderr and the program goes on to pass; an unknown tool
/// is a usage error.
#[test]
fn memcheck_tool_racecheck_reports_a_shared_memory_race() {
    let exe = root().join("target/cuda-tests/bin/static/checker_errors");
    assert!(exe.exists(), "{} is missing: build the CUDA test programs with scripts/build-cuda-tests.sh", exe.display());
    let dir = scratch("racecheck");
    let o = memcheck_cmd(&dir, &["--tool", "racecheck"]).arg("--").arg(&exe).arg("race").output().expect("anycuda runs");
    let (out, err) = text(&o);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success() && out.ends_with("PASS checker_errors\n"), "{out}{err}");
    assert!(err.contains("anycuda racecheck: read-after-write hazard on __shared__ memory"), "{err}");
    assert!(!err.contains("anycuda initcheck"), "initcheck was not asked for: {err}");
    let o = anycuda().args(["memcheck", "--tool", "synccheck", "--", "true"]).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(2));
}

/// `anycuda extract` writes a program's PTX under cuobjdump's names, and
/// the PTX lines racecheck reports are lines of that file: the racing
/// store and load of `checker_errors race`. `--list` names the entries
/// without writing; a file without device code is an error.
#[test]
fn extract_writes_the_ptx_whose_lines_racecheck_names() {
    let exe = root().join("target/cuda-tests/bin/static/checker_errors");
    assert!(exe.exists(), "{} is missing: build the CUDA test programs with scripts/build-cuda-tests.sh", exe.display());
    let dir = scratch("extract");
    let o = anycuda().args(["extract", "--list"]).arg(&exe).output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let ptx_line = out.lines().find(|l| l.contains(": PTX compute_")).unwrap_or_else(|| panic!("no PTX entry listed: {out}"));
    assert!(ptx_line.contains("(PTX ISA ") && ptx_line.ends_with(".ptx"), "{ptx_line}");
    assert_eq!(std::fs::read_dir(&dir).expect("scratch").count(), 0, "--list wrote files");

    let out_dir = dir.join("code");
    let o = anycuda().args(["extract", "--out"]).arg(&out_dir).arg(&exe).output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let ptx_path = out.lines().find(|l| l.ends_with(".ptx")).unwrap_or_else(|| panic!("no PTX written: {out}"));
    assert!(ptx_path.starts_with(out_dir.to_str().expect("utf-8 path")), "{ptx_path}");
    assert!(Path::new(ptx_path).file_name().is_some_and(|n| n.to_string_lossy().starts_with("checker_errors.")), "{ptx_path}");
    let ptx = std::fs::read_to_string(ptx_path).expect("the written PTX");
    assert!(ptx.contains(".entry _Z6rotatePii"), "{ptx}");

    let o = memcheck_cmd(&dir, &["--tool", "racecheck"]).arg("--").arg(&exe).arg("race").output().expect("anycuda runs");
    let (_, err) = text(&o);
    // "read by thread (0,0,0) ... (PTX line 96, ...)" and "unordered with
    // the write by thread ... (PTX line 79, ...)".
    let line_of = |role: &str| -> usize {
        let at = err.find(role).unwrap_or_else(|| panic!("no `{role}` in the report: {err}"));
        let rest = &err[at..];
        let n = rest.find("(PTX line ").map(|i| &rest[i + "(PTX line ".len()..]).unwrap_or_else(|| panic!("no PTX line: {rest}"));
        n[..n.find(',').unwrap_or(n.len())].parse().unwrap_or_else(|e| panic!("PTX line of {role}: {e}: {rest}"))
    };
    let lines: Vec<&str> = ptx.lines().collect();
    let read = lines[line_of("read by thread") - 1].trim();
    let write = lines[line_of("with the write by thread") - 1].trim();
    assert!(read.starts_with("ld.shared."), "the racing read's line is `{read}`");
    assert!(write.starts_with("st.shared."), "the racing write's line is `{write}`");

    let o = anycuda().args(["extract", "--list"]).arg(root().join("README.md")).output().expect("anycuda runs");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("README.md: not a fatbin"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `anycuda extract --list` reads the same device code from an `ar`
/// archive holding the program (entries named after the member) and from
/// the program's fatbin alone, as a file of its own.
#[test]
fn extract_reads_archives_and_bare_fatbins() {
    let exe = root().join("target/cuda-tests/bin/static/checker_errors");
    assert!(exe.exists(), "{} is missing: build the CUDA test programs with scripts/build-cuda-tests.sh", exe.display());
    let bytes = std::fs::read(&exe).expect("the program");
    let dir = scratch("extract-forms");
    let list = |path: &Path| {
        let o = anycuda().args(["extract", "--list"]).arg(path).output().expect("anycuda runs");
        let (out, err) = text(&o);
        assert!(o.status.success(), "{}: {out}{err}", path.display());
        out.lines()
            .filter(|l| l.contains(": PTX compute_"))
            .map(|l| l.split_once(": fatbin").map_or(l, |(_, r)| r).to_string())
            .collect::<Vec<_>>()
    };
    let from_program = list(&exe);
    assert!(!from_program.is_empty());

    // An archive of one member, `prog.o`, in the common `ar` format.
    let mut archive = b"!<arch>\n".to_vec();
    archive.extend_from_slice(format!("{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", "prog.o/", 0, 0, 0, 644, bytes.len()).as_bytes());
    archive.extend_from_slice(&bytes);
    if bytes.len() % 2 == 1 {
        archive.push(b'\n');
    }
    let ar = dir.join("libprog.a");
    std::fs::write(&ar, &archive).expect("archive written");
    let from_archive = list(&ar);
    let renamed: Vec<String> = from_program.iter().map(|l| l.replace("checker_errors.", "libprog.a.prog.o.")).collect();
    assert_eq!(from_archive, renamed);

    // The fatbin holding the PTX, cut out of the program by its header
    // (magic, version, header size, then the size of its entries).
    let magic = 0xBA55_ED50u32.to_le_bytes();
    let starts: Vec<usize> = (0..bytes.len().saturating_sub(16)).filter(|&i| i % 8 == 0 && bytes[i..i + 4] == magic).collect();
    let with_ptx = starts
        .iter()
        .filter_map(|&at| {
            let header = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
            let size = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().expect("8 bytes")) as usize;
            bytes.get(at..at.checked_add(header)?.checked_add(size)?)
        })
        .find(|f| {
            let path = dir.join("probe.fatbin");
            std::fs::write(&path, f).expect("fatbin written");
            !list(&path).is_empty()
        })
        .expect("a fatbin with PTX in the program");
    let path = dir.join("kernels.fatbin");
    std::fs::write(&path, with_ptx).expect("fatbin written");
    let from_fatbin = list(&path);
    let stripped = |v: &[String]| v.iter().map(|l| l.split(": ").nth(1).unwrap_or_default().to_string()).collect::<Vec<_>>();
    assert_eq!(stripped(&from_fatbin), stripped(&from_program), "the same PTX entry");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ptx_compiles_in_the_tier_asked_for() {
    let dir = scratch("tier");
    let file = dir.join("warp.ptx");
    // A barrier (the kernel runs as warps) and a load through an index
    // loaded from memory: the fast tier's code calls the shared helper
    // that chooses the load's path, the optimised tier's chooses inline.
    std::fs::write(
        &file,
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<6>;\n\
         ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.u64 %rd3, %rd1, %rd2;\nld.global.u32 %r2, [%rd3];\n\
         bar.sync 0;\nmul.wide.u32 %rd4, %r2, 4;\nadd.u64 %rd5, %rd1, %rd4;\nld.global.u32 %r3, [%rd5];\nst.global.u32 [%rd3], %r3;\nret;\n}\n",
    )
    .expect("write");
    let ir = |tier: Option<&str>| {
        let mut c = anycuda();
        c.arg("ptx").arg("--emit-ir");
        if let Some(t) = tier {
            c.args(["--tier", t]);
        }
        let o = c.arg(&file).output().expect("anycuda runs");
        let (out, err) = text(&o);
        assert!(o.status.success(), "{tier:?}: {err}");
        assert!(err.contains("kernel k: ok ("), "{tier:?}: {err}");
        out
    };
    assert!(ir(Some("fast")).contains("call <32 x i32> @__anycuda_wld_shaped_i32_s4_n1("), "{}", ir(Some("fast")));
    for tier in [None, Some("opt")] {
        let out = ir(tier);
        assert!(out.contains("define ") && !out.contains("_shaped_"), "{tier:?}:\n{out}");
    }
    let o = anycuda().args(["ptx", "--tier", "slow"]).arg(&file).output().expect("anycuda runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--tier slow"), "{}", text(&o).1);
}
