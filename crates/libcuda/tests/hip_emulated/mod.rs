//! anycuda's whole AMD path without an AMD GPU: the built `libcuda.so` on
//! its HIP backend, which loads the HIP runtime's test double
//! (`crates/hip-emulated`, built as `libamdhip64.so` in the same target
//! directory), which runs each kernel's AMD code object on the AMD ISA
//! emulator. `libcuda.so.1` -> driver -> `backend-hip` -> HIP ->
//! emulated gfx1100 (wave32) or gfx90a (wave64).
//!
//! One test executable serves one architecture: the library reads its
//! backend, and the double its architecture, once per process.
#![allow(dead_code)]

use crate::common::*;
use crate::oracle_run::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The HIP runtime's test double, built beside `libcuda.so`.
pub fn hip_library() -> PathBuf {
    let dir = lib_path().parent().expect("target directory").to_path_buf();
    for d in [dir.clone(), dir.parent().map(Path::to_path_buf).unwrap_or_default()] {
        let p = d.join("libamdhip64.so");
        if p.exists() {
            return p;
        }
    }
    panic!(
        "libamdhip64.so (crates/hip-emulated) not found beside {}: build the workspace (cargo test --workspace builds it)",
        dir.display()
    );
}

/// The environment that puts the library on the emulated device.
pub fn environment(arch: &str) -> Vec<(&'static str, String)> {
    vec![
        ("ANYCUDA_BACKEND", "hip".to_string()),
        ("ANYCUDA_HIP_LIBRARY", hip_library().to_string_lossy().into_owned()),
        ("ANYCUDA_HIP_EMULATED_ARCH", arch.to_string()),
        ("ANYCUDA_CACHE_DIR", "off".to_string()),
    ]
}

/// The library of this process on the emulated `arch`, loaded once.
pub fn library(arch: &'static str) -> &'static Lib {
    static LIB: OnceLock<(&'static str, Lib)> = OnceLock::new();
    let (chosen, lib) = LIB.get_or_init(|| {
        for (k, v) in environment(arch) {
            std::env::set_var(k, v);
        }
        std::env::remove_var("ANYCUDA_LOG");
        (arch, Lib::open_hip())
    });
    assert_eq!(*chosen, arch, "one architecture per test executable");
    lib
}

/// `cuDeviceGetName` of device 0: the double names its devices
/// "... (emulated)", so a test that sees it knows the HIP path ran.
pub fn device_name(lib: &Lib) -> String {
    crate::api!(lib; cuInit: fn(u32); cuDeviceGetName: fn(*mut u8, i32, i32););
    let mut name = [0u8; 256];
    // SAFETY: plain driver calls with a buffer of the size given.
    unsafe {
        assert_eq!(cuInit(0), SUCCESS, "cuInit on the HIP backend");
        assert_eq!(cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, 0), SUCCESS);
    }
    std::ffi::CStr::from_bytes_until_nul(&name).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Oracle cases whose emulated results differ from the hardware's because
/// of errors of the emulator that its README lists (found by running the
/// oracle through it; the CPU backend passes every one of them, and the
/// code for them is what the AMD target emits for every other case). Each
/// must still fail here: when the emulator is fixed, the list shrinks.
const EMULATOR_ERRORS: &[(&str, &str)] = &[
    ("int_arith/mul24_lo_s32", MUL24),
    ("int_arith/mul24_hi_s32", MUL24),
    ("int_arith/mad24_lo_s32", MUL24),
    ("int_arith/mul24_lo_u32", MUL24),
    ("int_arith/mul24_hi_u32", MUL24),
    ("int_arith/mad24_lo_u32", MUL24),
    ("f32/div_rn_f32", DIV),
    ("f32/rcp_rn_f32", DIV),
    ("f32/div_rz_f32", DIV),
    ("f32/rcp_rz_f32", DIV),
    ("f32/div_rm_f32", DIV),
    ("f32/rcp_rm_f32", DIV),
    ("f32/div_rp_f32", DIV),
    ("f32/rcp_rp_f32", DIV),
    ("f32/div_rn_ftz_f32", DIV),
    ("f32/div_approx_f32", DIV),
    ("f32/div_full_f32", DIV),
    ("f32/rcp_approx_f32", DIV),
    ("f64/div_rn_f64", DIV),
    ("f64/rcp_rn_f64", DIV),
    ("f64/div_rz_f64", DIV),
    ("f64/rcp_rz_f64", DIV),
    ("f64/div_rm_f64", DIV),
    ("f64/rcp_rm_f64", DIV),
    ("f64/div_rp_f64", DIV),
    ("f64/rcp_rp_f64", DIV),
    ("f32/cos_approx_f32", "v_cos_f32 on a large argument (the emulator's sin/cos)"),
    ("f32/lg2_approx_f32", LOG),
    ("f32/lg2_approx_ftz_f32", LOG),
    ("cvt/cvt_rni_s32_f32", RNDNE),
    ("cvt/cvt_rni_s64_f16", RNDNE),
    ("cvt/cvt_rni_f16_f16", RNDNE),
    ("cvt/cvt_rni_f32_f32", RNDNE),
    ("cvt/cvt_rni_f64_f64", RNDNE),
];
const MUL24: &str = "v_mul_i32_i24 and relatives do not truncate their operands to 24 bits";
const DIV: &str = "v_div_scale-based division and reciprocals with denormal operands or results";
const LOG: &str = "v_log_f32 off by 1 ulp";
const RNDNE: &str = "v_rndne on large odd values and -0";

/// The same on gfx90a only (CDNA2's tables in the emulator).
const EMULATOR_ERRORS_GFX90A: &[(&str, &str)] = &[
    ("int_arith/div_s16", MAD_F32),
    ("int_arith/rem_s16", MAD_F32),
    ("int_arith/div_s16_by_zero", MAD_F32),
    ("int_arith/rem_s16_by_zero", MAD_F32),
    ("int_arith/div_u16", MAD_F32),
    ("int_arith/rem_u16", MAD_F32),
    ("int_arith/div_u16_by_zero", MAD_F32),
    ("int_arith/rem_u16_by_zero", MAD_F32),
    ("int_arith/add_sat_s32", SAT_ADD),
    ("int_arith/sub_sat_s32", SAT_ADD),
    ("int_arith/mad_hi_sat_s32", SAT_ADD),
];
const MAD_F32: &str = "v_mad_f32 is missing from the emulator's gfx90a tables (it cannot decode it)";
const SAT_ADD: &str = "saturating signed adds on gfx90a";

/// Every oracle case on the emulated device, through the C ABI: each gives
/// the hardware's result but for the emulator's listed errors.
pub fn oracle_cases(arch: &'static str) {
    let lib = library(arch);
    let name = device_name(lib);
    assert!(name.ends_with("(emulated)"), "device 0 is {name:?}, not the emulated AMD GPU");
    let api = Api::new(lib);
    let oracle = oracle::load().expect("oracle loads");
    let known: Vec<(&str, &str)> =
        EMULATOR_ERRORS.iter().chain(if arch == "gfx90a" { EMULATOR_ERRORS_GFX90A } else { &[] }).copied().collect();
    let (passed, failures) = run_cases(&api, &oracle, &["cold"], false);
    let mut unexpected = Vec::new();
    let mut failed_known = std::collections::HashSet::new();
    for f in &failures {
        let case = f.split(' ').next().unwrap_or_default();
        match known.iter().find(|(k, _)| *k == case) {
            Some((k, why)) => {
                eprintln!("known emulator error ({why}): {f}");
                failed_known.insert(*k);
            }
            None => unexpected.push(f.clone()),
        }
    }
    eprintln!(
        "oracle on emulated {arch} through libcuda.so: {passed} passed, {} failed ({} known emulator errors)",
        failures.len(),
        failed_known.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} of {} cases fail on emulated {arch}:\n{}",
        unexpected.len(),
        oracle.cases.len(),
        unexpected.join("\n")
    );
    let fixed: Vec<&str> = known.iter().map(|(k, _)| *k).filter(|k| !failed_known.contains(k)).collect();
    assert!(fixed.is_empty(), "listed as emulator errors, but they pass now: take them off the list: {fixed:?}");
    assert_eq!(passed + failures.len(), oracle.cases.len());
    assert!(passed >= oracle.cases.len() - known.len());
}

/// Programs of `tests/cuda` (nvcc output, NVIDIA's static cudart) run on
/// the emulated GPU: block barriers, shuffles and votes with partial masks,
/// warp-synchronous code, cooperative groups, atomics (32/64-bit, scoped),
/// shared memory, 2-D/3-D grids, local arrays, device function calls
/// through pointers, module variables (`__constant__`, `__device__`),
/// half/bfloat16/double arithmetic, streams, events, callbacks, graphs,
/// 2-D/3-D copies, managed and host memory, device printf (its output
/// compared with `printf_kernel.expected`), a failed device assertion
/// (`cudaErrorAssert`, sticky, and its message on standard error:
/// [`STDERR_LINES`]), two GPUs with peer access (`multi_device`), grid
/// barriers of a cooperative launch (`coop_grid_sync`).
///
/// Not here, and why: `dynamic_shared` asks for 96 KiB of shared memory per
/// block (gfx1100 and gfx90a have 64 KiB: the driver refuses, as it
/// should); `async_copy` (reads a
/// clock with `s_sendmsg_rtn_b64`, which the emulator lacks);
/// `dynamic_parallelism` (HIP cannot launch kernels from the device: a
/// compile error that names the device-runtime function); `vmm` (the HIP
/// backend has no virtual memory management yet); `barriers` (its
/// producer/consumer warps use named barriers with thread counts and
/// `bar.arrive`, which the compiler refuses for AMD GPUs: their one
/// workgroup barrier waits for every wavefront, and on gfx90a two warps
/// share a wavefront; before the refusal this ran wrong on gfx90a).
pub const PROGRAMS: &[&str] = &[
    "warp_shuffle",
    "warp_vote",
    "warp_sync",
    "coop_groups",
    "coop_coalesced",
    "atomics_int",
    "atomics_64",
    "atomics_scope",
    "grid2d",
    "grid3d",
    "local_memory",
    "func_pointers",
    "constant_memory",
    "reduce_block",
    "reduce_warp",
    "matmul_tiled",
    "histogram",
    "interblock_sync",
    "templates",
    "fp16",
    "bf16",
    "math_float",
    "math_double",
    "inline_ptx",
    "cub_block",
    "wmma_gemm",
    "streams_events",
    "per_thread_stream",
    "stream_callbacks",
    "graph_capture",
    "graph_nodes",
    "memcpy_2d_3d",
    "managed_memory",
    "host_memory",
    "driver_api",
    "device_info",
    "printf_kernel",
    "device_assert",
    "device_trap",
    "exit_in_function",
    "printf_fifo",
    "device_malloc",
    "multi_device",
    "coop_grid_sync",
    "mma_ldmatrix",
];

/// Programs of [`PROGRAMS`] that fail on one emulated architecture because
/// of an error of the emulator its README lists, and must still fail
/// there (when the emulator is fixed, the entry goes): `mma_ldmatrix`'s
/// `.satfinite` s8 `mma` ends in a saturating signed add (`v_add_i32 ...
/// clamp`), which the emulator gets wrong on gfx90a; gfx1100 runs the same
/// code right (ldmatrix, the f16 and s8 `mma`, movmatrix: the lanes read
/// each other's registers).
pub const KNOWN_EMULATOR_ERRORS: &[(&str, &str)] = &[("mma_ldmatrix", "gfx90a")];

/// Environment a program of [`PROGRAMS`] needs beyond [`environment`].
pub const RUN_ENV: &[(&str, &str, &str)] = &[
    // Two emulated GPUs: per-device memory, streams and modules, peer access
    // enabled through the driver (the double fails a launch whose arguments
    // point into another device's memory without it) and peer copies.
    ("multi_device", "ANYCUDA_HIP_EMULATED_DEVICES", "2"),
];

/// Lines a program of [`PROGRAMS`] must write to standard error: what the
/// device reported, in CUDA's words.
pub const STDERR_LINES: &[(&str, &str)] = &[(
    "device_assert",
    "tests/cuda/device_assert.cu:10: void checks(const int *, int, int): block: [1,0,0], thread: [13,0,0] Assertion `p[i] != bad` failed.",
)];

/// Text a program's anycuda log must hold: what the backend reported.
/// (`device_trap`'s log names where the trap happened, but the message is
/// garbled on the emulator, whose unaligned global stores write to the
/// dword below: the compiler's constant copies of the message use them,
/// as the AMDHSA ABI allows.)
pub const LOG_LINES: &[(&str, &str)] = &[
    // 200 records of 64 bytes in a 4096-byte buffer: 64 fit.
    ("printf_fifo", "136 call(s) on HIP device 0 did not fit in the 4096-byte printf buffer (cudaLimitPrintfFifoSize)"),
    ("device_trap", "trap in block ["),
];

/// Each program of [`PROGRAMS`] passes its own checks on the emulated `arch`.
pub fn programs(arch: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = root.join("target/cuda-tests");
    let manifest = std::fs::read_to_string(out.join("manifest.tsv"))
        .unwrap_or_else(|e| panic!("{}: {e}: run scripts/build-cuda-tests.sh first (scripts/test.sh does)", out.display()));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hip-programs-{arch}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let link = dir.join("libcuda.so.1");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(lib_path(), &link).expect("symlink");
    // Two at a time: each process starts its own emulator (seconds), and
    // the machines that run the tests have at least two cores.
    let queue = std::sync::Mutex::new(PROGRAMS.iter());
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(name) = queue.lock().unwrap_or_else(|e| e.into_inner()).next().copied() else { break };
                let known = KNOWN_EMULATOR_ERRORS.contains(&(name, arch));
                match run_program(&out, &manifest, &dir, arch, name) {
                    Err(why) if !known => failures.lock().unwrap_or_else(|e| e.into_inner()).push(why),
                    Ok(()) if known => failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{name} passes on emulated {arch}, where it is listed as a known emulator error")),
                    _ => {}
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} of {} programs fail on emulated {arch}:\n{}", failures.len(), PROGRAMS.len(), failures.join("\n"));
}

/// Runs one program on the emulated `arch`; `Err` says why it failed.
fn run_program(out: &Path, manifest: &str, dir: &Path, arch: &str, name: &str) -> Result<(), String> {
    let (exe, expected) = manifest
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() >= 4 && f[0] == name && f[1] == "static" && f[2] == "exe")
        .map(|f| (out.join(f[3]), f.get(4).filter(|e| **e != "-").map(|e| out.join(e))))
        .ok_or_else(|| format!("{name} (static) is not in the manifest"))?;
    let log = dir.join(format!("{name}.log"));
    let run = Command::new(&exe)
        .envs(environment(arch))
        .envs(RUN_ENV.iter().filter(|(n, _, _)| *n == name).map(|(_, k, v)| (*k, *v)))
        .env("LD_LIBRARY_PATH", dir)
        .env("ANYCUDA_LOG", "info")
        .env("ANYCUDA_LOG_FILE", &log)
        .output()
        .map_err(|e| format!("{name}: {e}"))?;
    let stdout = String::from_utf8_lossy(&run.stdout);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    if !(run.status.success() && stdout.ends_with(&format!("PASS {name}\n"))) {
        return Err(format!(
            "{name}: {}\n--- stdout (end)\n{}\n--- stderr (end)\n{}\n--- log (end)\n{}",
            run.status,
            tail(&stdout),
            tail(&String::from_utf8_lossy(&run.stderr)),
            tail(&text)
        ));
    }
    // The exact output, where the program has an `.expected` file (device
    // printf's text among the host's).
    if let Some(expected) = expected {
        let want = std::fs::read_to_string(&expected).map_err(|e| format!("{}: {e}", expected.display()))?;
        if stdout != want {
            return Err(format!("{name}: stdout differs from {}:\n--- got ---\n{stdout}--- want ---\n{want}", expected.display()));
        }
    }
    let stderr = String::from_utf8_lossy(&run.stderr);
    for (_, line) in STDERR_LINES.iter().filter(|(n, _)| *n == name) {
        if !stderr.lines().any(|l| l == *line) {
            return Err(format!("{name}: stderr lacks `{line}`:\n{}", tail(&stderr)));
        }
    }
    for (_, want) in LOG_LINES.iter().filter(|(n, _)| *n == name) {
        if !text.contains(want) {
            return Err(format!("{name}: its log lacks `{want}`:\n{}", tail(&text)));
        }
    }
    // The log's backend line names the devices: the emulated one, not the CPU.
    if !text.lines().any(|l| l.contains("backend: hip") && l.contains("(emulated)")) {
        return Err(format!("{name} passed, but its log does not show the emulated device:\n{}", tail(&text)));
    }
    Ok(())
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
