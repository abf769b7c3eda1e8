//! Every executable built from `tests/cuda` by `scripts/build-cuda-tests.sh`
//! (unmodified nvcc output: static and shared cudart 13.x, cudart 12.x,
//! LZ4-compressed and uncompressed fatbins) runs on the built
//! `libcuda.so.1` and passes its own checks: exit status 0 and a last line
//! `PASS <name>`, plus the exact stdout where an `.expected` file exists.

mod common;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Programs using features not implemented yet. They must fail cleanly
/// (their own error report naming the unsupported operation, no crash);
/// when one starts passing, this list must shrink.
const UNSUPPORTED: &[(&str, &str)] = &[];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Exe {
    name: String,
    variant: String,
    path: PathBuf,
    expected: Option<PathBuf>,
    cudart: String,
}

fn manifest() -> Vec<Exe> {
    let out = root().join("target/cuda-tests");
    let text = std::fs::read_to_string(out.join("manifest.tsv")).unwrap_or_else(|e| {
        panic!("{}: {e}: run scripts/build-cuda-tests.sh first (scripts/test.sh does)", out.join("manifest.tsv").display())
    });
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            // Programs linked with cuBLAS (flags "libs:...") run in the
            // cuBLAS crate's tests, which have its libraries.
            (f.len() >= 6 && f[2] == "exe" && !f.get(6).is_some_and(|x| x.contains("libs:"))).then(|| Exe {
                name: f[0].to_string(),
                variant: f[1].to_string(),
                path: out.join(f[3]),
                expected: (f[4] != "-").then(|| out.join(f[4])),
                cudart: f[5].to_string(),
            })
        })
        .collect()
}

/// A directory with `libcuda.so.1` -> the library of this build, made
/// once per test process (its tests run in parallel threads).
fn driver_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("programs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let link = dir.join("libcuda.so.1");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(common::lib_path(), &link).expect("symlink");
        dir
    })
    .clone()
}

fn run(exe: &Exe, lib_dir: &Path, cache: &Path) -> Result<(), String> {
    run_with(exe, lib_dir, cache, &[]).map(|_| ())
}

/// The environment a program's source asks for with `//@ run-env: K=V ...`
/// (e.g. `ANYCUDA_CPU_DEVICES=2` for a program that needs two devices).
fn source_env(name: &str) -> Vec<(String, String)> {
    let src = std::fs::read_to_string(root().join("tests/cuda").join(format!("{name}.cu"))).unwrap_or_default();
    src.lines()
        .filter_map(|l| l.strip_prefix("//@ run-env:"))
        .flat_map(|v| v.split_whitespace().filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// [`run`] with more environment variables; returns the program's stderr.
fn run_with(exe: &Exe, lib_dir: &Path, cache: &Path, env: &[(&str, &str)]) -> Result<String, String> {
    let out = Command::new(&exe.path)
        .env("LD_LIBRARY_PATH", lib_dir)
        .env("ANYCUDA_CACHE_DIR", cache)
        .env("ANYCUDA_BACKEND", "cpu")
        .env_remove("ANYCUDA_LOG")
        .env_remove("ANYCUDA_MEMCHECK")
        .envs(source_env(&exe.name))
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("cannot run: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let tail: String = stdout.lines().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" | ");
    if let Some((_, error)) = UNSUPPORTED.iter().find(|(n, _)| *n == exe.name) {
        return if out.status.code() == Some(1) && (stdout.contains(error) || stderr.contains(error)) {
            Ok(stderr)
        } else {
            Err(format!("expected a clean failure with {error}, got {:?}: {tail} {stderr}", out.status))
        };
    }
    if !out.status.success() {
        return Err(format!("exit {:?}: {tail}\n{}", out.status, stderr.chars().take(600).collect::<String>()));
    }
    let want = format!("PASS {}", exe.name);
    if stdout.lines().last() != Some(want.as_str()) {
        return Err(format!("last line is not `{want}`: {tail}"));
    }
    if let Some(expected) = &exe.expected {
        let want = std::fs::read_to_string(expected).map_err(|e| format!("{}: {e}", expected.display()))?;
        if stdout != want {
            return Err(format!("stdout differs from {}:\n--- got ---\n{stdout}--- want ---\n{want}", expected.display()));
        }
    }
    Ok(stderr)
}

#[test]
fn cuda_programs_pass_on_the_cpu() {
    let exes = manifest();
    assert!(exes.len() >= 70, "the manifest lists {} executables", exes.len());
    let variants: std::collections::BTreeSet<&str> = exes.iter().map(|e| e.cudart.as_str()).collect();
    for cudart in ["static", "libcudart.so.13", "libcudart.so.12"] {
        assert!(variants.contains(cudart), "no executable uses the {cudart} cudart");
    }
    let lib_dir = driver_dir();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("programs-cache-{}", std::process::id()));
    let queue = Mutex::new(exes.iter().collect::<VecDeque<_>>());
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(exe) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                    if let Err(e) = run(exe, &lib_dir, &cache) {
                        if let Ok(mut f) = failures.lock() {
                            f.push(format!("{}/{}: {e}", exe.variant, exe.name));
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_default();
    let _ = std::fs::remove_dir_all(&cache);
    assert!(failures.is_empty(), "{} of {} programs failed:\n{}", failures.len(), exes.len(), failures.join("\n"));
}

/// `ANYCUDA_LOG=debug` says how each kernel runs and why, one line per
/// kernel as the JIT compiles it (the JIT's `tracing` events reach the
/// log), and warp-synchronous code gets the GPU's results by default.
#[test]
fn the_log_says_which_mode_each_kernel_runs_in_and_why() {
    let exe = manifest().into_iter().find(|e| e.name == "warp_sync" && e.variant == "static").expect("warp_sync is built");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("modes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("log");
    let out = Command::new(&exe.path)
        .env("LD_LIBRARY_PATH", driver_dir())
        .env("ANYCUDA_CACHE_DIR", "off")
        .env("ANYCUDA_LOG", "debug")
        .env("ANYCUDA_LOG_FILE", &log)
        .env_remove("ANYCUDA_WARP")
        .env_remove("ANYCUDA_BACKEND")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.ends_with("PASS warp_sync\n"), "{stdout}");
    let text = std::fs::read_to_string(&log).expect("log written");
    let _ = std::fs::remove_dir_all(&dir);
    let line = |kernel: &str| text.lines().find(|l| l.contains(&format!("kernel `{kernel}` runs"))).unwrap_or_default().to_string();
    let dct = line("_Z6dct8x8PKfPf");
    assert!(dct.starts_with("[anycuda Debug] JIT:") && dct.contains("runs warp mode") && dct.contains("uses shared memory"), "{text}");
    let exchange = line("_Z8exchangePViPi");
    assert!(exchange.contains("runs warp mode") && exchange.contains("`st.volatile.global.u32` at "), "{text}");
    let saxpy = line("_Z5saxpyifPKfPf");
    assert!(saxpy.contains("thread by thread, the fast path, when the block has one dimension"), "{text}");
    // Loads and stores of different sizes: the launch's byte ranges.
    let widen = line("_Z5wideniPKiPx");
    assert!(widen.contains("thread by thread, the fast path, when the bytes at") && widen.contains("do not overlap"), "{text}");
    assert!(line("_Z9reduce256PKiPi").contains("its threads wait for each other"), "{text}");
}

/// `ANYCUDA_LOG_FILE` is never opened through a symbolic link: whoever can
/// write the log's directory cannot make the driver append to another of
/// the user's files. The program runs on, without the log.
#[test]
fn the_log_file_is_not_reached_through_a_symbolic_link() {
    let exe = manifest().into_iter().find(|e| e.name == "warp_sync" && e.variant == "static").expect("warp_sync is built");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("log-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let victim = dir.join("victim");
    std::fs::write(&victim, "the user's file\n").expect("write");
    let link = dir.join("log");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    let out = Command::new(&exe.path)
        .env("LD_LIBRARY_PATH", driver_dir())
        .env("ANYCUDA_CACHE_DIR", "off")
        .env("ANYCUDA_LOG", "debug")
        .env("ANYCUDA_LOG_FILE", &link)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let victim_text = std::fs::read_to_string(&victim).expect("read");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success() && stdout.ends_with("PASS warp_sync\n"), "{stdout}");
    assert_eq!(victim_text, "the user's file\n");
}

/// Checked mode (`ANYCUDA_MEMCHECK=1`): `memcheck_errors` makes each kind of
/// memory error in turn; each fails the launch with the CUDA error NVIDIA's
/// driver gives (the program checks it, sticky, and prints PASS) and is
/// reported on stderr with the kernel, thread, block, access and the
/// source line from the PTX's `.loc` (the program is built with -lineinfo).
#[test]
fn memcheck_reports_each_kind_of_error_where_it_happens() {
    let exe = manifest().into_iter().find(|e| e.name == "memcheck_errors" && e.variant == "static").expect("memcheck_errors is built");
    let src = std::fs::read_to_string(root().join("tests/cuda/memcheck_errors.cu")).expect("source");
    let line = |tag: &str| src.lines().position(|l| l.contains(tag)).expect("tagged line") + 1;
    let lib_dir = driver_dir();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("memcheck-cache-{}", std::process::id()));
    let cases = [
        (
            "read",
            "invalid __global__ read of size 4 bytes",
            "_Z5scalePKfPfi",
            line("LINE_SCALE"),
            "thread (8,0,0) in block (1,0,0)",
            "is 0 bytes past the end of a 160-byte device allocation",
        ),
        (
            "write",
            "invalid __global__ write of size 4 bytes",
            "_Z8store_atPcx",
            line("LINE_STORE"),
            "thread (0,0,0) in block (0,0,0)",
            "is 0 bytes past the end of a 64-byte device allocation",
        ),
        (
            "freed",
            "invalid __global__ write of size 4 bytes",
            "_Z8store_atPcx",
            line("LINE_STORE"),
            "thread (0,0,0)",
            "is 8 bytes inside a 64-byte device allocation",
        ),
        (
            "shared",
            "invalid __shared__ write of size 4 bytes",
            "_Z10shared_sumPi",
            line("LINE_SHARED"),
            "thread (32,0,0) in block (0,0,0)",
            "(offset 128) is out of bounds: the block has 128 bytes of shared memory",
        ),
        (
            "misaligned",
            "invalid __global__ write of size 4 bytes",
            "_Z8store_atPcx",
            line("LINE_STORE"),
            "thread (0,0,0)",
            "is misaligned (not a multiple of 4)",
        ),
        (
            "null",
            "invalid __global__ write of size 4 bytes",
            "_Z8store_atPcx",
            line("LINE_STORE"),
            "thread (0,0,0)",
            "address 0x10 is a null pointer plus 16",
        ),
    ];
    let mut failures = Vec::new();
    for (mode, access, kernel, line, thread, why) in cases {
        let out = Command::new(&exe.path)
            .arg(mode)
            .env("LD_LIBRARY_PATH", &lib_dir)
            .env("ANYCUDA_CACHE_DIR", &cache)
            .env("ANYCUDA_BACKEND", "cpu")
            .env("ANYCUDA_MEMCHECK", "1")
            .env_remove("ANYCUDA_LOG")
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let place = format!("memcheck_errors.cu:{line}:");
        let wants = [access, kernel, place.as_str(), thread, why];
        if !out.status.success() || !stdout.ends_with("PASS memcheck_errors\n") || wants.iter().any(|w| !stderr.contains(w)) {
            failures.push(format!("{mode}: want {wants:?}\n{stdout}{stderr}"));
        }
        if stderr.matches("anycuda memcheck:").count() != 1 {
            failures.push(format!("{mode}: one report expected:\n{stderr}"));
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Checked mode reports nothing for correct programs: every program of
/// `tests/cuda` (static cudart) passes in checked mode with no report, but
/// `error_illegal_address`, whose wild store is reported as well as failing.
#[test]
fn correct_programs_pass_in_memcheck_mode_without_a_report() {
    let exes: Vec<Exe> = manifest().into_iter().filter(|e| e.variant == "static").collect();
    assert!(exes.len() >= 55, "{} static programs", exes.len());
    let lib_dir = driver_dir();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("memcheck-all-cache-{}", std::process::id()));
    let queue = Mutex::new(exes.iter().collect::<VecDeque<_>>());
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(exe) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                    let r = run_with(exe, &lib_dir, &cache, &[("ANYCUDA_MEMCHECK", "1")]);
                    let problem = match r {
                        Err(e) => Some(e),
                        Ok(stderr) if exe.name == "error_illegal_address" => (!stderr
                            .contains("anycuda memcheck: invalid __global__ write of size 4 bytes"))
                        .then(|| format!("no report: {stderr}")),
                        Ok(stderr) => stderr.contains("anycuda memcheck").then(|| format!("reported: {stderr}")),
                    };
                    if let (Some(p), Ok(mut f)) = (problem, failures.lock()) {
                        f.push(format!("{}: {p}", exe.name));
                    }
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&cache);
    let failures = failures.into_inner().unwrap_or_default();
    assert!(failures.is_empty(), "{} of {} programs failed in memcheck mode:\n{}", failures.len(), exes.len(), failures.join("\n"));
}

/// initcheck and racecheck (`ANYCUDA_MEMCHECK=initcheck,racecheck`):
/// `checker_errors` makes a kernel read of an unwritten word, a
/// device-to-host copy of unwritten bytes (reported with `initcheck-host`
/// only) and a shared-memory race in turn; each is reported on stderr with
/// the kernel, thread, block and source line, and the launch goes on (the
/// program checks its results and prints PASS), as compute-sanitizer's
/// tools do.
#[test]
fn initcheck_and_racecheck_report_each_kind_of_error_where_it_happens() {
    let exe = manifest().into_iter().find(|e| e.name == "checker_errors" && e.variant == "static").expect("checker_errors is built");
    let src = std::fs::read_to_string(root().join("tests/cuda/checker_errors.cu")).expect("source");
    let line = |tag: &str| src.lines().position(|l| l.contains(tag)).expect("tagged line") + 1;
    let lib_dir = driver_dir();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("checkers-cache-{}", std::process::id()));
    let read = format!("checker_errors.cu:{}:", line("LINE_READ"));
    let write = format!("checker_errors.cu:{}:", line("LINE_WRITE"));
    let neighbour = format!("checker_errors.cu:{}:", line("LINE_NEIGHBOUR"));
    let cases: [(&str, &str, &str, Vec<&str>); 6] = [
        ("none", "initcheck-host,racecheck", "", vec![]),
        ("copy_back", "initcheck,racecheck", "", vec![]),
        (
            "uninit",
            "initcheck,racecheck",
            "anycuda initcheck",
            vec!["uninitialized __global__ memory read of size 4 bytes", "_Z8sum_intoPKiPii", &read, "by thread (31,0,0) in block (1,0,0)"],
        ),
        (
            "copy_back",
            "initcheck-host",
            "anycuda initcheck",
            vec!["read by the host API (device-to-host copy)", "256 of the 512 bytes copied", "were never written"],
        ),
        (
            "race",
            "initcheck,racecheck",
            "anycuda racecheck",
            vec!["read-after-write hazard on __shared__ memory", "_Z6rotatePii", &neighbour, &write],
        ),
        ("race", "initcheck", "", vec![]),
    ];
    let mut failures = Vec::new();
    for (mode, tools, tool, wants) in cases {
        let out = Command::new(&exe.path)
            .arg(mode)
            .env("LD_LIBRARY_PATH", &lib_dir)
            .env("ANYCUDA_CACHE_DIR", &cache)
            .env("ANYCUDA_BACKEND", "cpu")
            .env("ANYCUDA_MEMCHECK", tools)
            .env_remove("ANYCUDA_LOG")
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() || !stdout.ends_with("PASS checker_errors\n") || wants.iter().any(|w| !stderr.contains(w)) {
            failures.push(format!("{mode} ({tools}): want {wants:?}\n{stdout}{stderr}"));
        }
        // Only the tool that should report does, and memcheck says nothing.
        for other in ["anycuda initcheck", "anycuda racecheck", "anycuda memcheck"] {
            if other != tool && stderr.contains(other) {
                failures.push(format!("{mode} ({tools}): unexpected `{other}` report:\n{stderr}"));
            }
        }
        if mode == "uninit" && stderr.matches("anycuda initcheck").count() != 1 {
            failures.push(format!("{mode}: one report expected (once per place and launch):\n{stderr}"));
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// initcheck and racecheck report nothing for correct programs: every
/// program of `tests/cuda` (static cudart) passes with both tools and no
/// report, but `error_illegal_address`, whose wild store memcheck reports,
/// and `warp_sync`, whose kernels exchange data between the lanes of a
/// warp through memory with no `__syncwarp` (implicit warp-synchronous
/// code, which racecheck reports from Volta on, as compute-sanitizer's
/// does): its reports must be hazards between two threads of one warp.
#[test]
fn correct_programs_pass_under_initcheck_and_racecheck_without_a_report() {
    let exes: Vec<Exe> = manifest().into_iter().filter(|e| e.variant == "static").collect();
    assert!(exes.len() >= 55, "{} static programs", exes.len());
    let lib_dir = driver_dir();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("checkers-all-cache-{}", std::process::id()));
    let queue = Mutex::new(exes.iter().collect::<VecDeque<_>>());
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(exe) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                    let r = run_with(exe, &lib_dir, &cache, &[("ANYCUDA_MEMCHECK", "initcheck,racecheck")]);
                    let problem = match r {
                        Err(e) => Some(e),
                        Ok(stderr) if exe.name == "warp_sync" => (stderr.contains("anycuda initcheck")
                            || !racecheck_reports_within_warps(&stderr))
                        .then(|| format!("reported more than intra-warp hazards: {stderr}")),
                        Ok(stderr) if stderr.contains("anycuda initcheck") || stderr.contains("anycuda racecheck") => {
                            Some(format!("reported: {stderr}"))
                        }
                        Ok(stderr) if exe.name != "error_illegal_address" && stderr.contains("anycuda memcheck") => {
                            Some(format!("reported: {stderr}"))
                        }
                        Ok(_) => None,
                    };
                    if let (Some(p), Ok(mut f)) = (problem, failures.lock()) {
                        f.push(format!("{}: {p}", exe.name));
                    }
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&cache);
    let failures = failures.into_inner().unwrap_or_default();
    assert!(
        failures.is_empty(),
        "{} of {} programs failed under initcheck and racecheck:\n{}",
        failures.len(),
        exes.len(),
        failures.join("\n")
    );
}

/// Whether every racecheck report of `stderr` (there is one at least)
/// names two threads of one warp (blocks of one dimension).
fn racecheck_reports_within_warps(stderr: &str) -> bool {
    let reports: Vec<&str> = stderr.split("========= anycuda racecheck:").skip(1).collect();
    let x = |s: &str| s.split_once("by thread (").and_then(|(_, r)| r.split_once(',')).and_then(|(n, _)| n.parse::<u32>().ok());
    !reports.is_empty()
        && reports.iter().all(|r| {
            let Some((_, second)) = r.split_once("unordered with") else { return false };
            matches!((x(r), x(second)), (Some(a), Some(b)) if a / 32 == b / 32)
        })
}
