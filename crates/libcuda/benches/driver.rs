//! Driver-level costs through the built `libcuda.so` (dlopen, C ABI, CPU
//! backend), as a CUDA program pays them:
//!
//! - `cuLaunchKernel` overhead: an empty kernel, one block of 32 threads,
//!   each launch followed by `cuStreamSynchronize` (round trip), and 1000
//!   launches followed by one synchronize (issue cost, queued); 1000
//!   launches of 64 blocks (the worker pool's hand-offs).
//! - Module load: `cuModuleLoadData` cold (a cache miss: parse, compile,
//!   store) and warm (from the kernel cache), for a small module and for
//!   the biggest module of the PTX oracle. Each cold load gets a text with a
//!   unique trailing comment, so its cache key is new while the work is the
//!   same.
//! - `cuMemcpyHtoD`/`DtoH`/`DtoD` bandwidth at 1 MiB and 256 MiB, against
//!   the host's `memcpy` of the same sizes measured in the same run.
//!
//! Prints a markdown table. Run with
//! `cargo bench -p anycuda-libcuda --bench driver`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Lib, Ptr, SUCCESS};
use std::ffi::{c_void, CString};
use std::hint::black_box;
use std::path::PathBuf;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

type Dptr = u64;

const SMALL_PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry empty()
{
    ret;
}

.visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .u32 %r<6>;
    .reg .u64 %rd<10>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd4, %r5, 4;
    add.s64 %rd5, %rd1, %rd4;
    add.s64 %rd6, %rd2, %rd4;
    add.s64 %rd7, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5];
    ld.global.f32 %f2, [%rd6];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}
";

#[allow(non_snake_case, clippy::type_complexity)]
struct Api {
    cuInit: unsafe extern "C" fn(u32) -> u32,
    cuDevicePrimaryCtxRetain: unsafe extern "C" fn(*mut Ptr, i32) -> u32,
    cuCtxSetCurrent: unsafe extern "C" fn(Ptr) -> u32,
    cuStreamSynchronize: unsafe extern "C" fn(Ptr) -> u32,
    cuModuleLoadData: unsafe extern "C" fn(*mut Ptr, *const c_void) -> u32,
    cuModuleUnload: unsafe extern "C" fn(Ptr) -> u32,
    cuModuleGetFunction: unsafe extern "C" fn(*mut Ptr, Ptr, *const std::ffi::c_char) -> u32,
    cuMemAlloc_v2: unsafe extern "C" fn(*mut Dptr, usize) -> u32,
    cuMemFree_v2: unsafe extern "C" fn(Dptr) -> u32,
    cuMemcpyHtoD_v2: unsafe extern "C" fn(Dptr, *const c_void, usize) -> u32,
    cuMemcpyDtoH_v2: unsafe extern "C" fn(*mut c_void, Dptr, usize) -> u32,
    cuMemcpyDtoD_v2: unsafe extern "C" fn(Dptr, Dptr, usize) -> u32,
    cuLaunchKernel: unsafe extern "C" fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void) -> u32,
}

impl Api {
    fn new(l: &Lib) -> Api {
        Api {
            cuInit: l.f("cuInit"),
            cuDevicePrimaryCtxRetain: l.f("cuDevicePrimaryCtxRetain"),
            cuCtxSetCurrent: l.f("cuCtxSetCurrent"),
            cuStreamSynchronize: l.f("cuStreamSynchronize"),
            cuModuleLoadData: l.f("cuModuleLoadData"),
            cuModuleUnload: l.f("cuModuleUnload"),
            cuModuleGetFunction: l.f("cuModuleGetFunction"),
            cuMemAlloc_v2: l.f("cuMemAlloc_v2"),
            cuMemFree_v2: l.f("cuMemFree_v2"),
            cuMemcpyHtoD_v2: l.f("cuMemcpyHtoD_v2"),
            cuMemcpyDtoH_v2: l.f("cuMemcpyDtoH_v2"),
            cuMemcpyDtoD_v2: l.f("cuMemcpyDtoD_v2"),
            cuLaunchKernel: l.f("cuLaunchKernel"),
        }
    }
}

/// Benchmarks stop at the first failing call: numbers of a broken run mean nothing.
fn ok(what: &str, r: u32) {
    if r != SUCCESS {
        eprintln!("driver bench: {what} returned CUresult {r}");
        std::process::exit(1);
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.2} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{model}, {cpus} logical CPUs")
}

/// Loads PTX text; the time of `cuModuleLoadData` alone.
fn load(api: &Api, text: &str) -> (Ptr, Duration) {
    let c = CString::new(text).unwrap_or_default();
    let mut m = null_mut();
    let t = Instant::now();
    // SAFETY: NUL-terminated PTX text, valid out-pointer.
    let r = unsafe { (api.cuModuleLoadData)(&mut m, c.as_ptr().cast()) };
    let d = t.elapsed();
    ok("cuModuleLoadData", r);
    (m, d)
}

fn unload(api: &Api, m: Ptr) {
    // SAFETY: a module loaded by `load`.
    ok("cuModuleUnload", unsafe { (api.cuModuleUnload)(m) });
}

/// The text with a comment no earlier load has had: a cache miss.
fn fresh(text: &str, n: usize) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{text}\n// anycuda driver bench {} {n} {nanos}\n", std::process::id())
}

/// (cold median, warm median) of loading `text`.
fn module_load(api: &Api, text: &str, cold_runs: usize, warm_runs: usize) -> (Duration, Duration) {
    let mut cold = Vec::new();
    for n in 0..cold_runs {
        let (m, d) = load(api, &fresh(text, n));
        cold.push(d);
        unload(api, m);
    }
    // Stored by this first load.
    let text = fresh(text, usize::MAX);
    let (m, _) = load(api, &text);
    unload(api, m);
    let mut warm = Vec::new();
    for _ in 0..warm_runs {
        let (m, d) = load(api, &text);
        warm.push(d);
        unload(api, m);
    }
    (median(cold), median(warm))
}

fn biggest_oracle_module() -> (String, String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ptx-oracle");
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
                .filter_map(|p| Some((std::fs::metadata(&p).ok()?.len(), p)))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let Some((_, path)) = files.pop() else {
        eprintln!("driver bench: no PTX in {}", dir.display());
        std::process::exit(1);
    };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    (path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), text)
}

/// Median time of `reps` runs of `f`.
fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn gbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn main() {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("driver-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    std::env::set_var("ANYCUDA_CACHE_DIR", &cache);
    std::env::remove_var("ANYCUDA_LOG");
    let lib = Lib::open_cpu();
    let api = Api::new(&lib);
    let mut ctx = null_mut();
    // SAFETY: plain driver calls with valid out-pointers.
    unsafe {
        ok("cuInit", (api.cuInit)(0));
        ok("cuDevicePrimaryCtxRetain", (api.cuDevicePrimaryCtxRetain)(&mut ctx, 0));
        ok("cuCtxSetCurrent", (api.cuCtxSetCurrent)(ctx));
    }
    let mut rows: Vec<(String, String)> = Vec::new();

    // Launch overhead.
    let (module, _) = load(&api, SMALL_PTX);
    let mut f = null_mut();
    // SAFETY: a loaded module and a NUL-terminated name.
    ok("cuModuleGetFunction", unsafe { (api.cuModuleGetFunction)(&mut f, module, c"empty".as_ptr()) });
    let launch = || {
        // SAFETY: a kernel without parameters.
        ok("cuLaunchKernel", unsafe { (api.cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, null_mut(), null_mut(), null_mut()) });
    };
    let sync = || {
        // SAFETY: the legacy default stream.
        ok("cuStreamSynchronize", unsafe { (api.cuStreamSynchronize)(null_mut()) });
    };
    for _ in 0..200 {
        launch();
        sync();
    }
    let round_trip = time(5000, || {
        launch();
        sync();
    });
    rows.push(("`cuLaunchKernel` + `cuStreamSynchronize`, empty kernel, 1 block of 32 threads (median)".into(), us(round_trip)));
    let batch = time(10, || {
        for _ in 0..1000 {
            launch();
        }
        sync();
    });
    rows.push(("1000 × `cuLaunchKernel` then one `cuStreamSynchronize`, per launch (median of 10)".into(), us(batch / 1000)));
    // Several blocks: the launch goes through the worker pool.
    let launch64 = || {
        // SAFETY: a kernel without parameters.
        ok("cuLaunchKernel", unsafe { (api.cuLaunchKernel)(f, 64, 1, 1, 128, 1, 1, 0, null_mut(), null_mut(), null_mut()) });
    };
    let batch64 = time(10, || {
        for _ in 0..1000 {
            launch64();
        }
        sync();
    });
    rows.push((
        "1000 × `cuLaunchKernel` of 64 blocks of 128 threads then one `cuStreamSynchronize`, per launch (median of 10)".into(),
        us(batch64 / 1000),
    ));
    unload(&api, module);

    // Module load.
    let (small_cold, small_warm) = module_load(&api, SMALL_PTX, 10, 200);
    rows.push((
        format!("`cuModuleLoadData` small module (2 kernels, {} bytes), cold: compile (median of 10)", SMALL_PTX.len()),
        ms(small_cold),
    ));
    rows.push(("`cuModuleLoadData` small module, warm: from the cache (median of 200)".into(), ms(small_warm)));
    let (name, big) = biggest_oracle_module();
    let kernels = big.lines().filter(|l| l.contains(".entry ")).count();
    let (big_cold, big_warm) = module_load(&api, &big, 3, 50);
    rows.push((
        format!("`cuModuleLoadData` oracle {name} ({kernels} kernels, {} KiB), cold: compile (median of 3)", big.len() / 1024),
        ms(big_cold),
    ));
    rows.push((format!("`cuModuleLoadData` oracle {name}, warm: from the cache (median of 50)"), ms(big_warm)));

    // Bandwidth.
    let mut bw: Vec<(String, [f64; 4])> = Vec::new();
    for (label, size, reps) in [("1 MiB", 1usize << 20, 500), ("256 MiB", 256usize << 20, 8)] {
        let mut d0: Dptr = 0;
        let mut d1: Dptr = 0;
        // SAFETY: valid out-pointers.
        unsafe {
            ok("cuMemAlloc", (api.cuMemAlloc_v2)(&mut d0, size));
            ok("cuMemAlloc", (api.cuMemAlloc_v2)(&mut d1, size));
        }
        // Touched, so page faults are not part of any copy.
        let src: Vec<u8> = (0..size).map(|i| i as u8).collect();
        let mut dst = vec![1u8; size];
        let mut host_dst = vec![2u8; size];
        // SAFETY (the closures): buffers of `size` bytes on both sides.
        let htod = time(reps, || ok("cuMemcpyHtoD", unsafe { (api.cuMemcpyHtoD_v2)(d0, src.as_ptr().cast(), size) }));
        let dtoh = time(reps, || ok("cuMemcpyDtoH", unsafe { (api.cuMemcpyDtoH_v2)(dst.as_mut_ptr().cast(), d0, size) }));
        let dtod = time(reps, || ok("cuMemcpyDtoD", unsafe { (api.cuMemcpyDtoD_v2)(d1, d0, size) }));
        let host = time(reps, || unsafe {
            libc::memcpy(black_box(host_dst.as_mut_ptr()).cast(), black_box(src.as_ptr()).cast(), size);
        });
        assert!(dst == src && host_dst == src, "a copy lost data");
        // SAFETY: allocated above, freed once.
        unsafe {
            ok("cuMemFree", (api.cuMemFree_v2)(d0));
            ok("cuMemFree", (api.cuMemFree_v2)(d1));
        }
        bw.push((label.to_string(), [gbps(size, htod), gbps(size, dtoh), gbps(size, dtod), gbps(size, host)]));
    }

    println!("## anycuda driver benchmarks (libcuda.so through the C ABI, CPU backend)\n");
    println!("Machine: {}\n", machine());
    println!("| measurement | time |");
    println!("|---|---:|");
    for (k, v) in &rows {
        println!("| {k} | {v} |");
    }
    println!();
    println!("| copy size | `cuMemcpyHtoD` | `cuMemcpyDtoH` | `cuMemcpyDtoD` | host `memcpy` |");
    println!("|---|---:|---:|---:|---:|");
    for (label, v) in &bw {
        println!("| {label} | {:.1} GB/s | {:.1} GB/s | {:.1} GB/s | {:.1} GB/s |", v[0], v[1], v[2], v[3]);
    }
    let _ = std::fs::remove_dir_all(&cache);
}
