//! What running kernels on the HIP test double costs, through its C API:
//! the emulator's start (first `hipModuleLoadData`), a kernel's first
//! launch (the emulator compiles each new instruction form) and later
//! launches, for gfx1100 and gfx90a, against the same PTX on anycuda's CPU
//! backend in the same run. Each architecture runs in a child process (the
//! library chooses its device once per process), twice: with an empty
//! emulator compile cache, then with the cache the first run filled.
//!
//! `cargo bench -p anycuda-hip-emulated --bench emulator`

#[path = "../tests/common/mod.rs"]
mod common;

use common::Args;
use std::process::Command;
use std::time::{Duration, Instant};

const CHILD: &str = "HIP_EMULATED_BENCH_ARCH";

fn kernel_src(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels").join(format!("{name}.ptx"));
    std::fs::read_to_string(&p).expect("kernel source")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The workloads: (kernel, grid, block, work-items).
struct Work {
    name: &'static str,
    grid: [u32; 3],
    block: [u32; 3],
}

const N: u32 = 4096;
const MATMUL_N: u32 = 64;
const WORK: [Work; 3] = [
    Work { name: "vector_add", grid: [N / 256, 1, 1], block: [256, 1, 1] },
    Work { name: "tiled_matmul", grid: [MATMUL_N / 16, MATMUL_N / 16, 1], block: [16, 16, 1] },
    Work { name: "warp_ops", grid: [1, 1, 1], block: [64, 1, 1] },
];

fn args_for(h: &common::Hip, name: &str) -> Args {
    match name {
        "vector_add" => {
            let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
            let (da, db, dc) = (h.upload(&a), h.upload(&a), h.alloc(N as usize * 4));
            Args::new().ptr(&da).ptr(&db).ptr(&dc).u32(N)
        }
        "tiled_matmul" => {
            let a: Vec<f32> = (0..MATMUL_N * MATMUL_N).map(|i| (i % 7) as f32).collect();
            let (da, db, dc) = (h.upload(&a), h.upload(&a), h.alloc((MATMUL_N * MATMUL_N) as usize * 4));
            Args::new().ptr(&da).ptr(&db).ptr(&dc).u32(MATMUL_N)
        }
        _ => Args::new().ptr(&h.alloc(9 * 64 * 4)),
    }
}

/// One architecture, in its own process: prints one line per figure.
fn child(arch: &'static str) {
    let h = common::hip(arch);
    let objects: Vec<Vec<u8>> = WORK.iter().map(|w| common::compile(&kernel_src(w.name), &h.gcn_arch_name)).collect();
    let t = Instant::now();
    let first = h.load_object(&objects[0]);
    println!("start {arch} {:.0}", ms(t.elapsed()));
    let mut modules = vec![first];
    for o in &objects[1..] {
        modules.push(h.load_object(o));
    }
    for (w, m) in WORK.iter().zip(&modules) {
        let f = h.function(m, w.name);
        let args = args_for(h, w.name);
        let t = Instant::now();
        h.run(f, w.grid, w.block, 0, &args);
        let first = ms(t.elapsed());
        let warm: Vec<f64> = (0..3)
            .map(|_| {
                let t = Instant::now();
                h.run(f, w.grid, w.block, 0, &args);
                ms(t.elapsed())
            })
            .collect();
        // The library logs the instructions (per wavefront) each launch ran.
        let log = std::fs::read_to_string(&h.log).unwrap_or_default();
        let tag = format!("`{}` grid", w.name);
        let steps = log
            .lines()
            .rev()
            .find(|l| l.contains(&tag))
            .and_then(|l| l.split(": ").last())
            .and_then(|s| s.split(' ').next())
            .unwrap_or("0")
            .to_string();
        println!("launch {arch} {} {first:.1} {:.1} {steps}", w.name, median(warm));
    }
}

/// The same launches on anycuda's CPU backend.
fn cpu_reference() -> Vec<(&'static str, f64)> {
    use kernels::{as_bytes, launch, Arg, Program};
    let exec = backend_cpu::Executor::global();
    WORK.iter()
        .map(|w| {
            let p = Program::from_source(&kernel_src(w.name)).expect("compiles for the host");
            let k = p.kernel(w.name).expect("kernel");
            let n = (N.max(MATMUL_N * MATMUL_N)) as usize;
            let (mut a, mut b, mut c) = (vec![1f32; n], vec![1f32; n], vec![0f32; n]);
            let mut out = vec![0u32; 9 * 64];
            let mut times = Vec::new();
            for _ in 0..5 {
                let mut args: Vec<Arg> = match w.name {
                    "vector_add" => vec![Arg::Buf(as_bytes(&mut a)), Arg::Buf(as_bytes(&mut b)), Arg::Buf(as_bytes(&mut c)), Arg::U32(N)],
                    "tiled_matmul" => {
                        vec![Arg::Buf(as_bytes(&mut a)), Arg::Buf(as_bytes(&mut b)), Arg::Buf(as_bytes(&mut c)), Arg::U32(MATMUL_N)]
                    }
                    _ => vec![Arg::Buf(as_bytes(&mut out))],
                };
                let t = Instant::now();
                launch(exec, k, w.grid, w.block, 0, &mut args).expect("arguments").expect("launch");
                times.push(ms(t.elapsed()));
            }
            (w.name, median(times))
        })
        .collect()
}

fn main() {
    if let Ok(arch) = std::env::var(CHILD) {
        child(if arch == "gfx90a" { "gfx90a" } else { "gfx1100" });
        return;
    }
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("emulator-bench-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&cache);
    let exe = std::env::current_exe().expect("exe");
    let cpu = cpu_reference();
    println!("| run | device | emulator start | kernel | first launch | later launch | wave instructions | CPU backend | ratio |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for run in ["empty compile cache", "filled compile cache"] {
        for arch in ["gfx1100", "gfx90a"] {
            let out = Command::new(&exe).env(CHILD, arch).env("CACHEDB", &cache).output().expect("child runs");
            assert!(out.status.success(), "{arch}: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8_lossy(&out.stdout);
            let start = text.lines().find_map(|l| l.strip_prefix(&format!("start {arch} "))).unwrap_or("?").to_string();
            for l in text.lines().filter_map(|l| l.strip_prefix(&format!("launch {arch} "))) {
                let f: Vec<&str> = l.split(' ').collect();
                let reference = cpu.iter().find(|(n, _)| *n == f[0]).map_or(f64::NAN, |r| r.1);
                let later: f64 = f[2].parse().unwrap_or(f64::NAN);
                println!(
                    "| {run} | {arch} | {start} ms | {} | {} ms | {} ms | {} | {reference:.3} ms | {:.0}x |",
                    f[0],
                    f[1],
                    f[2],
                    f[3],
                    later / reference
                );
            }
        }
    }
    let _ = std::fs::remove_file(&cache);
}
