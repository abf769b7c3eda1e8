//! Programs that compile at run time, built here with the toolkit
//! ($ANYCUDA_TOOLKIT, scripts/toolkit.sh) from `tests/programs`, run on
//! anycuda's driver with anycuda's libnvrtc/libnvJitLink under NVIDIA's
//! names (as `anycuda run` arranges) in front of NVIDIA's libraries.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn toolkit() -> PathBuf {
    let t = PathBuf::from(std::env::var_os("ANYCUDA_TOOLKIT").expect("ANYCUDA_TOOLKIT is not set: source scripts/env.sh"));
    assert!(t.join("nvrtc/lib/libnvrtc.so.13").is_file(), "{}: no NVRTC; run scripts/toolkit.sh", t.display());
    t
}

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// A cdylib cargo built for the tests (in `deps`, or one level up).
fn built(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for dir in [deps.clone(), deps.parent().map(Path::to_path_buf).unwrap_or_default()] {
        if dir.join(name).exists() {
            return dir.join(name);
        }
    }
    panic!("{name} not found next to {}", exe.display());
}

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nvrtc-programs-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch directory");
        d
    })
}

/// anycuda's libraries under NVIDIA's names.
fn shim_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = scratch().join("lib");
        std::fs::create_dir_all(&d).expect("lib directory");
        for (name, file) in [
            ("libcuda.so.1", "libcuda.so"),
            ("libnvrtc.so.13", "libnvrtc.so"),
            ("libnvrtc.so.12", "libnvrtc12.so"),
            ("libnvJitLink.so.13", "libnvjitlink.so"),
        ] {
            std::os::unix::fs::symlink(built(file), d.join(name)).expect("symlink");
        }
        d
    })
}

fn check_build(what: &str, o: std::io::Result<Output>) {
    let o = o.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(o.status.success(), "{what} failed:\n{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
}

/// A C program of `tests/programs` built with cc against the toolkit's
/// headers and NVIDIA's libraries (`12`: NVRTC 12.9's).
fn c_program(src: &str, v12: bool) -> PathBuf {
    let tk = toolkit();
    let exe = scratch().join(format!("{}{}", src.trim_end_matches(".c"), if v12 { "-12" } else { "" }));
    let (include, libdir, nvrtc) = if v12 {
        (tk.join("cu12/include"), tk.join("cu12/nvrtc/lib"), "-l:libnvrtc.so.12")
    } else {
        (tk.join("include"), tk.join("nvrtc/lib"), "-l:libnvrtc.so.13")
    };
    let mut c = Command::new("cc");
    c.arg("-O1").arg("-Wall").arg("-I").arg(&include).arg("-I").arg(sources()).arg(sources().join(src)).arg("-o").arg(&exe);
    c.arg("-L").arg(&libdir).arg(nvrtc);
    if src == "nvjitlink.c" {
        c.arg("-l:libnvJitLink.so.13");
    }
    c.arg("-ldl");
    check_build(src, c.output());
    exe
}

fn nvrtc_driver() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| c_program("nvrtc_driver.c", false))
}

fn nvrtc_driver_12() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| c_program("nvrtc_driver.c", true))
}

fn nvjitlink() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| c_program("nvjitlink.c", false))
}

/// Runs `exe` on anycuda; `env` adds or (empty value) removes variables.
fn run(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, String, String) {
    let tk = toolkit();
    let mut c = Command::new(exe);
    c.args(args)
        .env("LD_LIBRARY_PATH", shim_dir())
        .env("ANYCUDA_NVRTC_LIBRARY", tk.join("nvrtc/lib/libnvrtc.so.13"))
        .env("ANYCUDA_NVRTC12_LIBRARY", tk.join("cu12/nvrtc/lib/libnvrtc.so.12"))
        .env("ANYCUDA_NVJITLINK_LIBRARY", tk.join("nvrtc/lib"))
        .env("ANYCUDA_BACKEND", "cpu")
        .env("ANYCUDA_CACHE_DIR", scratch().join("kernels"))
        .env_remove("ANYCUDA_LOG")
        .env_remove("ANYCUDA_COMPUTE_CAPABILITY");
    for (k, v) in env {
        if v.is_empty() {
            c.env_remove(k);
        } else {
            c.env(k, v);
        }
    }
    let o = c.output().expect("run");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, out, err)
}

fn assert_pass(what: &str, (o, out, err): &(Output, String, String)) {
    assert!(o.status.success() && out.lines().last() == Some("PASS"), "{what}: {:?}\n{out}\n{err}", o.status);
}

#[test]
fn nvrtc_cubin_for_sm_80_runs() {
    let r = run(nvrtc_driver(), &["--gpu-architecture=sm_80", "cubin"], &[]);
    assert_pass("sm_80 cubin", &r);
    // The size nvrtcGetCUBINSize reported is what nvrtcGetCUBIN wrote.
    assert!(r.1.contains("last byte 0"), "{}", r.1);
    assert!(r.1.contains("saxpy: 1000 results correct") && r.1.contains("(scale<int>): 32 results correct"), "{}", r.1);
}

#[test]
fn nvrtc_ptx_for_compute_80_runs() {
    assert_pass("compute_80 PTX", &run(nvrtc_driver(), &["-arch=compute_80", "ptx"], &[]));
}

#[test]
fn nvrtc_cubin_for_sm_90_runs_on_a_9_0_device() {
    let r = run(nvrtc_driver(), &["-arch=sm_90", "cubin"], &[("ANYCUDA_COMPUTE_CAPABILITY", "9.0")]);
    assert_pass("sm_90 cubin", &r);
    assert!(r.1.contains("compute capability 9.0"), "{}", r.1);
}

#[test]
fn nvrtc_native_architecture_is_the_devices() {
    let r = run(nvrtc_driver(), &["-arch=native", "cubin"], &[("ANYCUDA_COMPUTE_CAPABILITY", "8.9"), ("ANYCUDA_LOG", "debug")]);
    assert_pass("native cubin", &r);
    assert!(r.2.contains("native asked for; compiled for compute_89"), "{}", r.2);
}

#[test]
fn nvrtc_12_cubin_runs() {
    let r = run(nvrtc_driver_12(), &["-arch=sm_86", "cubin"], &[]);
    assert_pass("NVRTC 12 sm_86 cubin", &r);
    assert!(r.1.contains("NVRTC 12.9"), "{}", r.1);
}

#[test]
fn nvrtc_cubin_of_a_virtual_architecture_is_nvidias_answer() {
    // NVIDIA's NVRTC makes no machine code for compute_XX: the cubin size
    // is 0, and anycuda's says the same.
    let (o, out, _) = run(nvrtc_driver(), &["-arch=compute_80", "cubin"], &[]);
    assert!(!o.status.success() && out.contains("FAIL nvrtcGetCUBINSize: no code for -arch=compute_80"), "{out}");
}

#[test]
fn nvrtc_missing_is_an_error_code_and_a_log_line() {
    let (o, out, err) = run(
        nvrtc_driver(),
        &["-arch=sm_80", "cubin"],
        &[("ANYCUDA_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13"), ("ANYCUDA_LOG", "error")],
    );
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("nvrtcVersion(&major, &minor) -> 11 (NVRTC_ERROR_INTERNAL_ERROR)"), "{out}");
    assert!(err.contains("NVIDIA's NVRTC 13 (libnvrtc.so.13) not found: tried /nonexistent/libnvrtc.so.13 (no such file)"), "{err}");
}

#[test]
fn nvrtc_is_found_on_the_library_path_past_anycudas() {
    // No variable: the library path is searched. anycuda's own file comes
    // first under NVIDIA's name (the link directory), then a copy of it
    // (not NVIDIA's: it lacks NVIDIA's internal symbol), then NVIDIA's.
    let tk = toolkit();
    let fake = scratch().join("fake-nvrtc");
    std::fs::create_dir_all(&fake).expect("dir");
    std::fs::copy(built("libnvrtc.so"), fake.join("libnvrtc.so.13")).expect("copy");
    let path = format!("{}:{}:{}", shim_dir().display(), fake.display(), tk.join("nvrtc/lib").display());
    let r = run(
        nvrtc_driver(),
        &["-arch=sm_80", "cubin"],
        &[("ANYCUDA_NVRTC_LIBRARY", ""), ("LD_LIBRARY_PATH", &path), ("ANYCUDA_LOG", "debug")],
    );
    assert_pass("NVRTC from the library path", &r);
    assert!(r.2.contains(&format!("NVRTC 13: using NVIDIA's library {}", tk.join("nvrtc/lib/libnvrtc.so.13").display())), "{}", r.2);
    // Without NVIDIA's on the path: the log says what was tried and why.
    let path = format!("{}:{}", shim_dir().display(), fake.display());
    let (o, out, err) = run(
        nvrtc_driver(),
        &["-arch=sm_80", "cubin"],
        &[("ANYCUDA_NVRTC_LIBRARY", ""), ("LD_LIBRARY_PATH", &path), ("ANYCUDA_LOG", "error")],
    );
    assert!(!o.status.success(), "{out}");
    assert!(err.contains("(not NVIDIA's: no __nvrtcCPEx)") && err.contains("set ANYCUDA_NVRTC_LIBRARY"), "{err}");
}

#[test]
fn nvrtc_through_cudart_runs() {
    let tk = toolkit();
    let exe = scratch().join("nvrtc_cudart");
    let mut c = Command::new(tk.join("bin/nvcc"));
    c.arg("-arch=sm_80").arg(sources().join("nvrtc_cudart.cu")).arg("-o").arg(&exe);
    c.arg("-L").arg(tk.join("nvrtc/lib")).arg("-l:libnvrtc.so.13");
    check_build("nvrtc_cudart.cu", c.output());
    let r = run(&exe, &[], &[]);
    assert_pass("cudart + NVRTC", &r);
    assert!(r.1.contains("compiling for --gpu-architecture=sm_86"), "{}", r.1);
}

#[test]
fn nvjitlink_links_ptx_inputs() {
    let r = run(nvjitlink(), &["ptx"], &[]);
    assert_pass("nvJitLink PTX", &r);
    assert!(r.1.contains("caller: n=1000") && r.1.contains("last byte 0"), "{}", r.1);
}

#[test]
fn nvjitlink_links_lto_ir_and_mixed_inputs() {
    for mode in ["lto", "mixed"] {
        let r = run(nvjitlink(), &[mode], &[]);
        assert_pass(mode, &r);
        assert!(r.1.contains("caller: n=1000"), "{mode}: {}", r.1);
    }
}

#[test]
fn nvjitlink_links_a_fatbin_file_and_an_input_of_any_type() {
    let tk = toolkit();
    let fatbin = scratch().join("callee.fatbin");
    let mut c = Command::new(tk.join("bin/nvcc"));
    c.args(["-fatbin", "-rdc=true", "-gencode", "arch=compute_80,code=compute_80"]).arg(sources().join("callee.cu")).arg("-o").arg(&fatbin);
    check_build("callee.cu", c.output());
    let r = run(nvjitlink(), &["fatbin", fatbin.to_str().expect("utf-8 path")], &[]);
    assert_pass("fatbin", &r);
    assert!(r.1.contains("caller: n=1000"), "{}", r.1);
    // A missing file: nvJitLinkAddFile fails, saying why.
    let (o, out, _) = run(nvjitlink(), &["fatbin", "/nonexistent/callee.fatbin"], &[]);
    assert!(
        !o.status.success() && out.contains("cannot read /nonexistent/callee.fatbin") && out.contains("FAIL nvJitLinkAddData -> 3"),
        "{out}"
    );
}

/// Host objects (`nvcc -dc`) and archives of them, as numba-cuda passes
/// CUDA's `libcudadevrt.a`: an archive member is linked only when it
/// defines something still undefined (the archive's other member calls a
/// function nothing defines, which would fail the link if it were taken).
#[test]
fn nvjitlink_links_host_objects_and_archives() {
    let tk = toolkit();
    let dc = |src: &Path, out: &Path| {
        let mut c = Command::new(tk.join("bin/nvcc"));
        // callee.cu is written for NVRTC: the host compilation needs stdio.h.
        c.args(["-dc", "-include", "stdio.h", "-gencode", "arch=compute_80,code=compute_80"]).arg(src).arg("-o").arg(out);
        check_build(&src.display().to_string(), c.output());
    };
    let object = scratch().join("callee.o");
    dc(&sources().join("callee.cu"), &object);
    let unused_src = scratch().join("unused.cu");
    std::fs::write(&unused_src, "extern __device__ int missing(int);\n__global__ void unused(int *p) { *p = missing(1); }\n")
        .expect("write");
    let unused = scratch().join("unused.o");
    dc(&unused_src, &unused);
    let archive = scratch().join("libcallee.a");
    let _ = std::fs::remove_file(&archive);
    check_build("ar", Command::new("ar").arg("rcs").arg(&archive).arg(&unused).arg(&object).output());
    for (mode, file) in [("object", &object), ("library", &archive)] {
        let r = run(nvjitlink(), &[mode, file.to_str().expect("utf-8 path")], &[("ANYCUDA_NVJITLINK_LIBRARY", "/nonexistent")]);
        assert_pass(mode, &r);
        assert!(r.1.contains("caller: n=1000"), "{mode}: {}", r.1);
    }
    // The unused member alone: its undefined function is a link error.
    let r = run(nvjitlink(), &["object", unused.to_str().expect("utf-8 path")], &[("ANYCUDA_NVJITLINK_LIBRARY", "/nonexistent")]);
    assert!(!r.0.status.success() && r.1.contains("missing"), "{}", r.1);
}

#[test]
fn nvjitlink_refuses_machine_code_inputs() {
    let r = run(nvjitlink(), &["cubin-input"], &[]);
    assert_pass("cubin input", &r);
    assert!(r.1.contains("error log: anycuda: input machine.cubin is NVIDIA machine code"), "{}", r.1);
}

#[test]
fn nvjitlink_links_ptx_without_nvidias_library() {
    let missing = [("ANYCUDA_NVJITLINK_LIBRARY", "/nonexistent")];
    assert_pass("PTX link without NVIDIA's nvJitLink", &run(nvjitlink(), &["ptx"], &missing));
    // LTO-IR needs it: nvJitLinkCreate is anycuda's, AddData says why.
    let (o, out, _) = run(nvjitlink(), &["lto"], &missing);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("only NVIDIA's nvJitLink can link") && out.contains("FAIL nvJitLinkAddData -> 3"), "{out}");
}

const SAXPY_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry saxpy(.param .f32 a, .param .u64 x, .param .u64 y, .param .u32 n)
{
    .reg .pred %p;
    .reg .f32 %f<5>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<6>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    ld.param.u32 %r1, [n];
    setp.ge.s32 %p, %r4, %r1;
    @%p bra DONE;
    ld.param.f32 %f1, [a];
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mul.wide.s32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    ld.global.f32 %f3, [%rd5];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd5], %f4;
DONE:
    ret;
}
"#;

#[test]
fn ptxas_writes_what_the_driver_loads() {
    let dir = scratch().join("ptxas");
    std::fs::create_dir_all(&dir).expect("dir");
    let src = dir.join("saxpy.ptx");
    std::fs::write(&src, SAXPY_PTX).expect("write");
    let bin = dir.join("saxpy.cubin");
    // Triton's command line (the `ptxas` executable of the anycuda-cli
    // crate runs this function; its own test runs the executable).
    let args: Vec<String> =
        ["-lineinfo", "-v", "--fmad=false", "--gpu-name=sm_90a", src.to_str().expect("utf-8"), "-o", bin.to_str().expect("utf-8")]
            .iter()
            .map(|s| s.to_string())
            .collect();
    assert_eq!(anycuda_nvrtc::ptxas::main(&args), 0);
    let written = std::fs::read(&bin).expect("output");
    assert_eq!(written.last(), Some(&0));
    assert_pass("ptxas output", &run(nvrtc_driver(), &[bin.to_str().expect("utf-8 path"), "file"], &[]));
}

#[test]
fn ptxas_refuses_what_is_not_ptx() {
    let dir = scratch().join("ptxas-errors");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("bad.ptx"), "this is not PTX").expect("write");
    let args = [dir.join("bad.ptx").display().to_string(), "-o".into(), dir.join("bad.o").display().to_string()];
    assert_eq!(anycuda_nvrtc::ptxas::main(&args), 1);
    assert!(!dir.join("bad.o").exists());
    let args = ["--no-such-option".to_string(), dir.join("bad.ptx").display().to_string()];
    assert_eq!(anycuda_nvrtc::ptxas::main(&args), 1);
}

/// The dynamic symbols (name, version) a shared object defines.
fn exports(path: &Path) -> Vec<(String, String)> {
    let o = Command::new("nm").args(["-D", "--defined-only"]).arg(path).output().expect("nm");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter_map(|s| s.split_once("@@").map(|(n, v)| (n.to_string(), v.to_string())))
        .collect()
}

#[test]
fn exports_are_nvidias_names_and_versions() {
    let tk = toolkit();
    for (file, soname, nvidia) in [
        ("libnvrtc.so", "libnvrtc.so.13", tk.join("nvrtc/lib/libnvrtc.so.13")),
        ("libnvrtc12.so", "libnvrtc.so.12", tk.join("cu12/nvrtc/lib/libnvrtc.so.12")),
        ("libnvjitlink.so", "libnvJitLink.so.13", tk.join("nvrtc/lib/libnvJitLink.so.13")),
    ] {
        let ours = exports(&built(file));
        let theirs: std::collections::HashMap<String, String> = exports(&nvidia).into_iter().collect();
        assert!(ours.len() > 20, "{file}: {ours:?}");
        for (n, v) in &ours {
            assert_eq!(v, soname, "{file}: {n}");
            assert_eq!(theirs.get(n), Some(v), "{file}: {n}@{v} is not in NVIDIA's {soname}");
        }
        // Every function of NVIDIA's but its internal entry points.
        let names: std::collections::HashSet<&String> = ours.iter().map(|(n, _)| n).collect();
        for n in theirs.keys().filter(|n| !n.starts_with("__nvrtc") && *n != "__nvJitLinkAPI") {
            assert!(names.contains(n), "{file}: NVIDIA's {n} is missing");
        }
    }
}
