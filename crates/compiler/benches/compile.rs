//! Compile time per kernel, and where it goes.
//!
//! Every kernel of every module is compiled on its own (its unit: the kernel
//! and the functions it reaches, as the JIT compiles it at first launch),
//! one after the other on one thread, in the tier given (`--tier fast|opt`,
//! default fast: what a first launch waits for). Printed: the distribution of per-kernel times
//! (median, p90, max), the slowest kernels, and the time per compiler
//! phase summed over the corpus. Times are the compiling thread's CPU time
//! (see `compiler::profile`), so other work on the machine changes them
//! little.
//!
//! Corpora: the oracle modules, the nvcc corpus built by
//! scripts/build-cuda-tests.sh, and any directories of `.ptx` files given
//! in `ANYCUDA_BENCH_PTX` (colon-separated).
//!
//! Run: `cargo bench -p anycuda-compiler --bench compile [-- --tier opt] [--target gfx1100] [--only-extra] [--rounds N]`
//! (`--only-extra`: only the directories of `ANYCUDA_BENCH_PTX`;
//! `--rounds N`: each kernel compiled on its own N times, its fastest counted
//! (the phase table sums all of them);
//! `ANYCUDA_BENCH_TSV=PREFIX` writes each corpus's per-kernel times, code
//! sizes, modes (`warp`, `guarded`, `thread`) and names to `PREFIX.<corpus>`;
//! `ANYCUDA_BENCH_ONLY=TEXT` compiles only the kernels whose names contain
//! TEXT, e.g. to profile one; host target only.)
//! (AMDGPU targets compile as the JIT cuts their modules,
//! `compiler::partition`: a kernel that names no variable on its own, the
//! others once with the variables in the shared unit where the module's
//! variable table cannot serve them, or the whole module once when it
//! cannot be cut; the kernels of a unit compiled once are counted with
//! equal shares of its time and code size, labelled `shared` or `module`;
//! a shared unit of variables alone, compiled at the module's load, is in
//! the total and a line of its own.)

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use compiler::profile::{Phase, Profile};
use ptx::ast::{FunctionKind, Item};

fn modules(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "ptx")).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn measure(label: &str, files: &[PathBuf], target: &compiler::Target, opts: &compiler::Options, rounds: usize) {
    println!("\n## {label}\n");
    let mut times: Vec<(Duration, String, usize)> = Vec::new();
    // Kernels compiled as 32-lane warps, and thread-by-thread kernels with
    // launch conditions (`KernelInfo::lockstep_guard`).
    let (mut warps, mut guarded) = (0usize, 0usize);
    let mut helpers: std::collections::BTreeMap<String, compiler::HelperCode> = Default::default();
    // AMDGPU: shared units of variables alone, one per module that has one.
    let mut load_units: Vec<Duration> = Vec::new();
    let mut profile = Profile::default();
    let only_named = std::env::var("ANYCUDA_BENCH_ONLY").ok();
    let (mut parse, mut analyse, mut failed, mut ptx_bytes) = (Duration::ZERO, Duration::ZERO, 0usize, 0usize);
    compiler::profile::take();
    for path in files {
        let Ok(src) = std::fs::read_to_string(path) else { continue };
        ptx_bytes += src.len();
        let t = Instant::now();
        let Ok(module) = ptx::parse(&src) else {
            println!("{}: does not parse", path.display());
            continue;
        };
        parse += t.elapsed();
        // Once per module, as the JIT does.
        let t = compiler::profile::thread_cpu_time();
        let analysis = compiler::analyse(&module);
        analyse += compiler::profile::thread_cpu_time().saturating_sub(t);
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        // The kernels compiled as units of their own, as the JIT cuts the
        // module (`compiler::partition`): on the host all of them; on
        // AMDGPU all of them too where the variable table serves the
        // module, else those that name no variable, the others in the
        // shared unit with the variables, or the whole module as one unit.
        let apart: Option<Vec<u32>> = if matches!(target, compiler::Target::HostCpu) {
            None
        } else {
            let partition = compiler::partition(&module, target, &analysis);
            let apart = partition.as_ref().map(|p| p.apart.clone()).unwrap_or_default();
            // The unit holding the kernels not compiled apart, compiled
            // once; each of those kernels is counted with an equal share
            // of its time and code.
            let (unit, label) = if partition.is_some() { (compiler::Unit::Shared, "shared") } else { (compiler::Unit::Module, "module") };
            let kernels: Vec<&str> = module
                .items
                .iter()
                .enumerate()
                .filter_map(|(i, it)| match it {
                    Item::Function(f) if f.kind == FunctionKind::Entry && f.body.is_some() && !apart.contains(&(i as u32)) => Some(f.name),
                    _ => None,
                })
                .collect();
            // A shared unit of variables alone (with their table) is
            // compiled at the module's load: counted apart, in the total.
            let table = partition.as_ref().is_some_and(|p| p.variable_table);
            if !kernels.is_empty() || table {
                let t = compiler::profile::thread_cpu_time();
                let r = compiler::compile_unit_analysed(&module, &src, target, opts, unit, &analysis);
                let d = compiler::profile::thread_cpu_time().saturating_sub(t);
                let n = kernels.len();
                match r {
                    Ok(_) if n == 0 => load_units.push(d),
                    Ok(c) => {
                        for k in &kernels {
                            times.push((d / n as u32, format!("{label}\t{name}: {k}"), c.object.len() / n));
                        }
                    }
                    Err(_) => failed += kernels.len(),
                }
            }
            Some(apart)
        };
        for (idx, item) in module.items.iter().enumerate() {
            let Item::Function(f) = item else { continue };
            if f.kind != FunctionKind::Entry || f.body.is_none() {
                continue;
            }
            if apart.as_ref().is_some_and(|a| !a.contains(&(idx as u32))) {
                continue;
            }
            if only_named.as_deref().is_some_and(|n| !f.name.contains(n)) {
                continue;
            }
            let unit = compiler::Unit::Kernel(idx as u32);
            // The fastest of `rounds` compiles: on a shared machine the
            // same compile's CPU time moves by 10-30 % from minute to
            // minute, more than most changes it is to measure.
            let (mut d, mut r) = (Duration::MAX, None);
            for _ in 0..rounds {
                let t = compiler::profile::thread_cpu_time();
                let this = compiler::compile_unit_analysed(&module, &src, target, opts, unit, &analysis);
                d = d.min(compiler::profile::thread_cpu_time().saturating_sub(t));
                r.get_or_insert(this);
            }
            let Some(r) = r else { continue };
            match r {
                Ok(c) => {
                    let info = c.info.kernels.iter().find(|k| k.name == f.name);
                    let mode = match info {
                        Some(k) if k.lanes > 1 => "warp",
                        Some(k) if k.lockstep_guard.is_some() => "guarded",
                        _ => "thread",
                    };
                    warps += usize::from(mode == "warp");
                    guarded += usize::from(mode == "guarded");
                    for h in c.helpers {
                        helpers.entry(h.ir.clone()).or_insert(h);
                    }
                    times.push((d, format!("{mode}\t{name}: {}", f.name), c.object.len()))
                }
                Err(_) => failed += 1,
            }
        }
        profile.add(&compiler::profile::take());
    }
    // The helpers the units call, each compiled once, as a process does
    // (`CompiledModule::helpers`): part of the total, not of any kernel.
    let t = compiler::profile::thread_cpu_time();
    let helper_count = helpers.len();
    for h in helpers.values() {
        if compiler::compile_helper(target, h).is_err() {
            println!("helper `{}` does not compile", h.name);
        }
    }
    let helper_time = compiler::profile::thread_cpu_time().saturating_sub(t);
    compiler::profile::take();
    times.sort_by_key(|t| t.0);
    // Every kernel's time, for a closer look at a distribution.
    if let Ok(path) = std::env::var("ANYCUDA_BENCH_TSV") {
        let rows: String = times.iter().map(|(d, name, bytes)| format!("{:.3}\t{bytes}\t{name}\n", ms(*d))).collect();
        let _ = std::fs::write(format!("{path}.{}", label.replace(['/', ' ', '(', ')', ','], "_")), rows);
    }
    let only: Vec<Duration> = times.iter().map(|t| t.0).collect();
    let total: Duration = only.iter().sum::<Duration>() + helper_time + load_units.iter().sum::<Duration>();
    println!(
        "{} kernels ({} failed), {:.1} MB of PTX, parsed in {:.0} ms, modules analysed in {:.0} ms; per kernel: median {:.1} ms, p90 {:.1} ms, max {:.1} ms; total {:.2} s",
        times.len(),
        failed,
        ptx_bytes as f64 / 1e6,
        ms(parse),
        ms(analyse),
        ms(percentile(&only, 0.5)),
        ms(percentile(&only, 0.9)),
        ms(percentile(&only, 1.0)),
        total.as_secs_f64()
    );
    if let Some(max) = load_units.iter().max() {
        println!(
            "{} modules' variables (and their address table) compiled at load, {:.0} ms in all, at most {:.0} ms (in the total)",
            load_units.len(),
            ms(load_units.iter().sum()),
            ms(*max)
        );
    }
    if matches!(target, compiler::Target::HostCpu) {
        println!("{warps} kernels as 32-lane warps, {guarded} thread by thread under launch conditions");
        println!("{helper_count} helpers compiled once for all units in {:.0} ms (in the total)", ms(helper_time));
    }
    println!("\n| phase | time | share |\n|---|---|---|");
    let all = profile.total().max(Duration::from_nanos(1));
    for p in Phase::ALL {
        let d = profile.get(p);
        println!("| {} | {:.0} ms | {:.1} % |", p.name(), ms(d), 100.0 * d.as_secs_f64() / all.as_secs_f64());
    }
    println!("\nslowest kernels:\n");
    for (d, name, bytes) in times.iter().rev().take(5) {
        let short: String = name.replace('\t', " ").chars().take(100).collect();
        println!("- {:.0} ms, {bytes} bytes of code: {short}", ms(*d));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let target = match args.iter().position(|a| a == "--target").and_then(|i| args.get(i + 1)) {
        Some(arch) if arch != "host" => compiler::Target::Amdgpu { arch: arch.clone() },
        _ => compiler::Target::HostCpu,
    };
    let tier = match args.iter().position(|a| a == "--tier").and_then(|i| args.get(i + 1)).map(String::as_str) {
        Some("opt") => compiler::Tier::Optimized,
        _ => compiler::Tier::Fast,
    };
    let opts = compiler::Options { tier, ..compiler::Options::default() };
    let rounds = match args.iter().position(|a| a == "--rounds").and_then(|i| args.get(i + 1)) {
        Some(n) => match n.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("--rounds takes a positive count, not `{n}`");
                std::process::exit(2);
            }
        },
        None => 1,
    };
    println!("target: {target:?}, tier: {tier:?}, each kernel's fastest of {rounds} compile(s)");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let builtin = !args.iter().any(|a| a == "--only-extra");
    if builtin {
        builtin_corpora(&root, &target, &opts, rounds);
    }
    if let Ok(extra) = std::env::var("ANYCUDA_BENCH_PTX") {
        for dir in extra.split(':').filter(|d| !d.is_empty()) {
            measure(dir, &modules(Path::new(dir)), &target, &opts, rounds);
        }
    }
}

fn builtin_corpora(root: &Path, target: &compiler::Target, opts: &compiler::Options, rounds: usize) {
    measure("oracle modules (tests/ptx-oracle)", &modules(&root.join("tests/ptx-oracle")), target, opts, rounds);
    let corpus = root.join("target/cuda-tests/ptx/sm_80");
    let files = modules(&corpus);
    if files.is_empty() {
        println!("\nnvcc corpus not built (scripts/build-cuda-tests.sh)");
    } else {
        measure("nvcc corpus, sm_80 (target/cuda-tests/ptx/sm_80)", &files, target, opts, rounds);
    }
}
