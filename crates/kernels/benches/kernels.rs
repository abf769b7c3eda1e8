//! Kernel throughput against native Rust versions of the same work, on one
//! core and on all cores; launch overhead; compile time per kernel.
//!
//! Run: `cargo bench -p anycuda-kernels --bench kernels` (needs the CUDA
//! toolkit from scripts/toolkit.sh to turn kernels.cu into PTX).
//!
//! Both sides read and write the same kind of memory: device allocations
//! (`backend_cpu::memory`), as a real program's kernels do.

use backend_cpu::{Executor, ExecutorConfig};
use kernels::{launch, Arg, DeviceVec, Program};
use std::path::PathBuf;
use std::time::Instant;

fn nvcc_ptx() -> String {
    let toolkit = std::env::var("ANYCUDA_TOOLKIT").map(PathBuf::from).unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        PathBuf::from(home).join(".cache/anycuda/toolkit-2")
    });
    let nvcc = toolkit.join("bin/nvcc");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/kernels.cu");
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-kernels.ptx");
    let status = std::process::Command::new(&nvcc)
        .args(["-ptx", "-arch=sm_80", "-O3", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/toolkit.sh)", nvcc.display()));
    assert!(status.success(), "nvcc failed");
    std::fs::read_to_string(&out).expect("nvcc output")
}

/// Runs of each side per measurement.
const REPS: usize = 7;

/// Best wall times of `reps` runs of `a` and of `b`, in seconds, after one
/// warm-up of each: the two alternate, so that both see the same moments
/// of a shared machine (its load comes and goes over seconds).
fn best_pair<A: FnMut(), B: FnMut()>(reps: usize, a: &mut A, b: &mut B) -> (f64, f64) {
    a();
    b();
    let mut best = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps {
        let t = Instant::now();
        a();
        best.0 = best.0.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        b();
        best.1 = best.1.min(t.elapsed().as_secs_f64());
    }
    best
}

/// Best wall time of `reps` runs after one warm-up, in seconds.
fn best<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Splits `0..n` into `parts` ranges and runs `f` on each in parallel: the
/// first on this thread, the others on threads of their own, as a launch
/// runs blocks on the launching thread and `parts - 1` pool threads. (On a
/// shared machine one core can be slower than the other for a whole
/// process; the one-core figures of both sides must come from the same
/// thread.)
fn par<F: Fn(std::ops::Range<usize>) + Sync>(n: usize, parts: usize, f: F) {
    let chunk = n.div_ceil(parts.max(1));
    let range = |p: usize| (p * chunk).min(n)..((p + 1) * chunk).min(n);
    std::thread::scope(|s| {
        for p in 1..parts {
            let r = range(p);
            let f = &f;
            s.spawn(move || f(r));
        }
        f(range(0));
    });
}

struct Row {
    name: &'static str,
    native: [f64; 2],
    ours: [f64; 2],
}

/// Runs the benchmarks whose name contains the first argument (all without one).
fn selected(name: &str) -> bool {
    std::env::args().skip(1).find(|a| !a.starts_with('-')).is_none_or(|f| name.contains(&f))
}

fn main() {
    let src = nvcc_ptx();
    let t = Instant::now();
    let prog = Program::from_source(&src).expect("benchmark kernels compile");
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let one = Executor::new(ExecutorConfig { workers: 1, max_workers: 64, ..ExecutorConfig::default() });
    let all = Executor::new(ExecutorConfig::default());
    let execs = [&one, &all];
    let cores = [1, threads()];
    let mut rows = Vec::new();

    // saxpy, memory-bound: one thread per element, and a grid-stride loop
    // over 1024 blocks.
    for (kernel, name, grid) in
        [("saxpy", "saxpy (16M floats)", None), ("saxpy_grid", "saxpy, grid-stride loop (16M floats)", Some(1024u32))]
    {
        if !selected("saxpy") {
            break;
        }
        let n = 1usize << 24;
        let x = DeviceVec::from_slice(&(0..n).map(|i| (i % 1000) as f32 * 0.5).collect::<Vec<f32>>());
        let mut y = DeviceVec::from_slice(&(0..n).map(|i| (i % 7) as f32).collect::<Vec<f32>>());
        let a = 2.5f32;
        let k = prog.kernel(kernel).expect("saxpy");
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        for (c, exec) in execs.iter().enumerate() {
            let mut xs = DeviceVec::from_slice(&x);
            let yp = y.as_mut_ptr() as usize;
            let mut ours_run = || {
                launch(
                    exec,
                    k,
                    [grid.unwrap_or((n as u32).div_ceil(256)), 1, 1],
                    [256, 1, 1],
                    0,
                    &mut [Arg::U32(n as u32), Arg::F32(a), xs.arg(), y.arg()],
                )
                .expect("params")
                .expect("launch");
            };
            let parts = cores[c];
            let mut native_run = || {
                par(n, parts, |r| {
                    // SAFETY: ranges are disjoint.
                    let ys = unsafe { std::slice::from_raw_parts_mut((yp as *mut f32).add(r.start), r.len()) };
                    for (yi, xi) in ys.iter_mut().zip(&x[r]) {
                        *yi += a * xi;
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
        }
        rows.push(Row { name, native, ours });
    }

    // Shared-memory tiled SGEMM.
    if selected("sgemm") {
        let n = 512usize;
        let a = DeviceVec::from_slice(&(0..n * n).map(|i| ((i * 7) % 13) as f32 * 0.25).collect::<Vec<f32>>());
        let b = DeviceVec::from_slice(&(0..n * n).map(|i| ((i * 5) % 11) as f32 * 0.5).collect::<Vec<f32>>());
        let k = prog.kernel("sgemm_tiled").expect("sgemm");
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        let mut reference = DeviceVec::from_slice(&vec![0f32; n * n]);
        for (c, exec) in execs.iter().enumerate() {
            let (mut aa, mut bb) = (DeviceVec::from_slice(&a), DeviceVec::from_slice(&b));
            let mut cc = DeviceVec::from_slice(&vec![0f32; n * n]);
            let mut ours_run = || {
                launch(
                    exec,
                    k,
                    [(n / 16) as u32, (n / 16) as u32, 1],
                    [16, 16, 1],
                    0,
                    &mut [Arg::U32(n as u32), aa.arg(), bb.arg(), cc.arg()],
                )
                .expect("params")
                .expect("launch");
            };
            let parts = cores[c];
            let rp = reference.as_mut_ptr() as usize;
            let mut native_run = || {
                par(n, parts, |rows| {
                    for i in rows {
                        // SAFETY: each row is written by one thread.
                        let crow = unsafe { std::slice::from_raw_parts_mut((rp as *mut f32).add(i * n), n) };
                        crow.iter_mut().for_each(|v| *v = 0.0);
                        for kk in 0..n {
                            let aik = a[i * n + kk];
                            for (cv, bv) in crow.iter_mut().zip(&b[kk * n..kk * n + n]) {
                                *cv += aik * bv;
                            }
                        }
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
            let err = cc.iter().zip(reference.iter()).map(|(x, y)| (x - y).abs() / y.abs().max(1.0)).fold(0f32, f32::max);
            assert!(err < 1e-3, "sgemm result differs: {err}");
        }
        rows.push(Row { name: "SGEMM 512, 16x16 shared tiles", native, ours });
    }

    // Matrix-vector products, one block of 128 threads per row: short
    // rows (the per-token products of a small language model, where the
    // per-block cost decides) and long ones.
    for (rows_n, cols, name) in [
        (4096usize, 256usize, "matrix-vector 4096x256, block per row, shuffles + barrier"),
        (4096, 4096, "matrix-vector 4096x4096, block per row, shuffles + barrier"),
    ] {
        if !selected("matvec") {
            break;
        }
        let a = DeviceVec::from_slice(&(0..rows_n * cols).map(|i| ((i * 7) % 13) as f32 * 0.125).collect::<Vec<f32>>());
        let x = DeviceVec::from_slice(&(0..cols).map(|i| ((i * 5) % 11) as f32 * 0.25).collect::<Vec<f32>>());
        let k = prog.kernel("matvec_rows").expect("matvec");
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        for (c, exec) in execs.iter().enumerate() {
            let (mut aa, mut xx) = (DeviceVec::from_slice(&a), DeviceVec::from_slice(&x));
            let mut y = DeviceVec::from_slice(&vec![0f32; rows_n]);
            let mut ours_run = || {
                launch(exec, k, [rows_n as u32, 1, 1], [128, 1, 1], 0, &mut [Arg::U32(cols as u32), aa.arg(), xx.arg(), y.arg()])
                    .expect("params")
                    .expect("launch");
            };
            let parts = cores[c];
            let mut reference = vec![0f32; rows_n];
            let rp = reference.as_mut_ptr() as usize;
            let (av, xv) = (&a, &x);
            let mut native_run = || {
                par(rows_n, parts, |rows| {
                    for i in rows {
                        let row = &av[i * cols..(i + 1) * cols];
                        let mut acc = [0f32; 8];
                        for (ch, xc) in row.chunks(8).zip(xv.chunks(8)) {
                            for ((s, p), q) in acc.iter_mut().zip(ch).zip(xc) {
                                *s += p * q;
                            }
                        }
                        // SAFETY: each row's result is written by one thread.
                        unsafe { *(rp as *mut f32).add(i) = acc.iter().sum() };
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
            let err = y.iter().zip(&reference).map(|(p, q)| (p - q).abs() / q.abs().max(1.0)).fold(0f32, f32::max);
            assert!(err < 1e-4, "matrix-vector result differs: {err}");
        }
        rows.push(Row { name, native, ours });
    }

    // Block reduction with warp shuffles.
    if selected("reduce") {
        let n = 1usize << 24;
        let x = DeviceVec::from_slice(&(0..n).map(|i| ((i % 100) as f32) * 0.01).collect::<Vec<f32>>());
        let k = prog.kernel("reduce_sum").expect("reduce");
        let blocks = n.div_ceil(256 * 8);
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        for (c, exec) in execs.iter().enumerate() {
            let mut xs = DeviceVec::from_slice(&x);
            let mut partial = DeviceVec::from_slice(&vec![0f32; blocks]);
            let mut ours_run = || {
                launch(exec, k, [blocks as u32, 1, 1], [256, 1, 1], 0, &mut [Arg::U32(n as u32), xs.arg(), partial.arg()])
                    .expect("params")
                    .expect("launch");
            };
            let parts = cores[c];
            let sums = std::sync::Mutex::new(0f64);
            let mut native_run = || {
                par(n, parts, |r| {
                    let mut acc = [0f32; 8];
                    for ch in x[r].chunks(8) {
                        for (a, v) in acc.iter_mut().zip(ch) {
                            *a += v;
                        }
                    }
                    if let Ok(mut s) = sums.lock() {
                        *s += acc.iter().sum::<f32>() as f64;
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
            let total: f64 = partial.iter().map(|&v| v as f64).sum();
            let want: f64 = x.iter().map(|&v| v as f64).sum();
            assert!((total - want).abs() / want < 1e-4, "reduction {total} vs {want}");
        }
        rows.push(Row { name: "sum reduction, warp shuffles (16M floats)", native, ours });
    }

    // Histogram with shared-memory atomics.
    if selected("histogram") {
        let n = 1usize << 26;
        let data = DeviceVec::from_slice(&(0..n).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<u8>>());
        let k = prog.kernel("histogram").expect("histogram");
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        for (c, exec) in execs.iter().enumerate() {
            let mut d = DeviceVec::from_slice(&data);
            let mut bins = DeviceVec::from_slice(&[0u32; 256]);
            let mut ours_run = || {
                bins.iter_mut().for_each(|b| *b = 0);
                launch(exec, k, [256, 1, 1], [256, 1, 1], 0, &mut [Arg::U32(n as u32), d.arg(), bins.arg()])
                    .expect("params")
                    .expect("launch");
            };
            let parts = cores[c];
            let merged = std::sync::Mutex::new(vec![0u32; 256]);
            let mut native_run = || {
                par(n, parts, |r| {
                    let mut h = [0u32; 256];
                    for &v in &data[r] {
                        h[v as usize] += 1;
                    }
                    if let Ok(mut m) = merged.lock() {
                        for (a, b) in m.iter_mut().zip(h) {
                            *a += b;
                        }
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
            assert_eq!(bins.iter().map(|&b| b as usize).sum::<usize>(), n);
        }
        rows.push(Row { name: "histogram, shared atomics (64M bytes)", native, ours });
    }

    // Barrier inside a loop.
    if selected("smooth") {
        let blocks = 1024usize;
        let iters = 100u32;
        let input = DeviceVec::from_slice(&(0..blocks * 256).map(|i| (i % 17) as f32).collect::<Vec<f32>>());
        let k = prog.kernel("smooth").expect("smooth");
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        let mut reference = DeviceVec::from_slice(&vec![0f32; blocks * 256]);
        for (c, exec) in execs.iter().enumerate() {
            let mut inp = DeviceVec::from_slice(&input);
            let mut out = DeviceVec::from_slice(&vec![0f32; blocks * 256]);
            let mut ours_run = || {
                launch(exec, k, [blocks as u32, 1, 1], [256, 1, 1], 0, &mut [Arg::U32(iters), inp.arg(), out.arg()])
                    .expect("params")
                    .expect("launch");
            };
            let parts = cores[c];
            let rp = reference.as_mut_ptr() as usize;
            let mut native_run = || {
                par(blocks, parts, |r| {
                    for b in r {
                        let mut s = [0f32; 258];
                        s[1..257].copy_from_slice(&input[b * 256..b * 256 + 256]);
                        let mut t = [0f32; 258];
                        for _ in 0..iters {
                            for i in 0..256 {
                                t[i + 1] = (s[i] + s[i + 1] + s[i + 2]) * (1.0 / 3.0);
                            }
                            s[1..257].copy_from_slice(&t[1..257]);
                        }
                        // SAFETY: each block's slice is written by one thread.
                        let o = unsafe { std::slice::from_raw_parts_mut((rp as *mut f32).add(b * 256), 256) };
                        o.copy_from_slice(&s[1..257]);
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
            let err = out.iter().zip(reference.iter()).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            assert!(err < 1e-4, "smooth result differs: {err}");
        }
        rows.push(Row { name: "3-point smoothing, barrier in loop (100 iters)", native, ours });
    }

    // Block scan over volatile shared memory, barriers in the loop: 6656
    // blocks of 256 threads, each an inclusive scan of its 256 values.
    // The same without `volatile` (plain shared accesses), for comparison.
    for (kernel, name) in [
        ("block_scan", "block scan, volatile shared, barriers in loop (6656x256)"),
        ("block_scan_plain", "block scan, same without volatile (6656x256)"),
    ] {
        if !selected("scan") {
            break;
        }
        let blocks = 6656usize;
        let n = blocks * 256;
        let input = DeviceVec::from_slice(&(0..n).map(|i| (i as u32).wrapping_mul(2654435761) >> 20).collect::<Vec<u32>>());
        let k = prog.kernel(kernel).expect("block_scan");
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        let mut reference = DeviceVec::from_slice(&vec![0u32; n]);
        for (c, exec) in execs.iter().enumerate() {
            let mut inp = DeviceVec::from_slice(&input);
            let mut out = DeviceVec::from_slice(&vec![0u32; n]);
            let mut ours_run = || {
                launch(exec, k, [blocks as u32, 1, 1], [256, 1, 1], 0, &mut [Arg::U32(n as u32), inp.arg(), out.arg()])
                    .expect("params")
                    .expect("launch");
            };
            let parts = cores[c];
            let rp = reference.as_mut_ptr() as usize;
            let mut native_run = || {
                par(blocks, parts, |r| {
                    for b in r {
                        // SAFETY: each block's slice is written by one thread.
                        let o = unsafe { std::slice::from_raw_parts_mut((rp as *mut u32).add(b * 256), 256) };
                        let mut acc = 0u32;
                        for (o, &v) in o.iter_mut().zip(&input[b * 256..b * 256 + 256]) {
                            acc = acc.wrapping_add(v);
                            *o = acc;
                        }
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
            assert!(out.iter().eq(reference.iter()), "block scan result differs");
        }
        rows.push(Row { name, native, ours });
    }

    // Tensor-core GEMM (wmma m16n16k16, f16 inputs, f32 accumulators)
    // against the same product in f32 on the same converted inputs. The
    // inputs are small integers, so both give identical results whatever
    // the order of the additions.
    if selected("wmma") {
        let n = 256usize;
        let av: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 9) as f32 - 4.0).collect();
        let bv: Vec<f32> = (0..n * n).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
        let a16: Vec<u16> = av.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
        let b16: Vec<u16> = bv.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
        let k = prog.kernel("wmma_gemm").expect("wmma_gemm");
        let mut native = [0.0; 2];
        let mut ours = [0.0; 2];
        let mut reference = DeviceVec::from_slice(&vec![0f32; n * n]);
        for (c, exec) in execs.iter().enumerate() {
            let (mut aa, mut bb) = (DeviceVec::from_slice(&a16), DeviceVec::from_slice(&b16));
            let mut cc = DeviceVec::from_slice(&vec![0f32; n * n]);
            let mut ours_run = || {
                launch(
                    exec,
                    k,
                    [(n / 32) as u32, (n / 32) as u32, 1],
                    [128, 1, 1],
                    0,
                    &mut [Arg::U32(n as u32), aa.arg(), bb.arg(), cc.arg()],
                )
                .expect("params")
                .expect("launch");
            };
            let parts = cores[c];
            let rp = reference.as_mut_ptr() as usize;
            let (a, b) = (&av, &bv);
            let mut native_run = || {
                par(n, parts, |rows| {
                    for i in rows {
                        // SAFETY: each row is written by one thread.
                        let crow = unsafe { std::slice::from_raw_parts_mut((rp as *mut f32).add(i * n), n) };
                        crow.iter_mut().for_each(|v| *v = 0.0);
                        for kk in 0..n {
                            let aik = a[i * n + kk];
                            for (cv, bv) in crow.iter_mut().zip(&b[kk * n..kk * n + n]) {
                                *cv += aik * bv;
                            }
                        }
                    }
                });
            };
            (ours[c], native[c]) = best_pair(REPS, &mut ours_run, &mut native_run);
            assert!(cc.iter().zip(reference.iter()).all(|(x, y)| x == y), "wmma GEMM result differs");
        }
        rows.push(Row { name: "wmma GEMM 256, f16 in, f32 out, 16x16x16 tiles", native, ours });
    }

    // Launch overhead of an empty kernel.
    let empty = prog.kernel("empty").expect("empty");
    let reps = 2000;
    let small = best(3, || {
        for _ in 0..reps {
            launch(&all, empty, [1, 1, 1], [32, 1, 1], 0, &mut []).expect("params").expect("launch");
        }
    }) / reps as f64;
    let wide = best(3, || {
        for _ in 0..200 {
            launch(&all, empty, [1000, 1, 1], [256, 1, 1], 0, &mut []).expect("params").expect("launch");
        }
    }) / 200.0;

    // A barrier round trip: 1024 blocks of 8 warps, 100 barriers each.
    let bars = prog.kernel("barriers").expect("barriers");
    let barrier_ns = best(5, || {
        launch(&one, bars, [1024, 1, 1], [256, 1, 1], 0, &mut [Arg::U32(100)]).expect("params").expect("launch");
    }) * 1e9
        / (1024.0 * 8.0 * 100.0);

    println!("machine: {} ({} cores)", cpu_name(), threads());
    println!();
    println!("| kernel | native 1 core | anycuda 1 core | ratio | native {n} cores | anycuda {n} cores | ratio |", n = threads());
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.2}x | {:.2} ms | {:.2} ms | {:.2}x |",
            r.name,
            r.native[0] * 1e3,
            r.ours[0] * 1e3,
            r.native[0] / r.ours[0],
            r.native[1] * 1e3,
            r.ours[1] * 1e3,
            r.native[1] / r.ours[1]
        );
    }
    println!();
    println!("empty kernel launch, 1 block of 32 threads: {:.2} us", small * 1e6);
    println!("empty kernel launch, 1000 blocks of 256 threads: {:.2} us", wide * 1e6);
    println!("block barrier, 1 core: {barrier_ns:.2} ns per warp and barrier (1024 blocks of 256 threads, 100 barriers)");
    let kernels = src.matches(".entry ").count();
    println!("compile time of the benchmark module ({kernels} kernels, parse + lower + O2 + codegen + load): {compile_ms:.1} ms");
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into())
}
