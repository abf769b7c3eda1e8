//! Parse throughput and AST memory.
//!
//!   cargo bench -p anycuda-ptx --bench parse
//!
//! Measures, single-threaded, on the largest module of the nvcc corpus
//! (`target/cuda-tests/ptx`, built by `scripts/build-cuda-tests.sh`), on the
//! largest one built without `-G`, and on the hardware-oracle modules
//! (`tests/ptx-oracle`, each parsed on its own):
//! - throughput in MB/s (10^6 bytes of PTX per second; best and median of
//!   repeated runs);
//! - AST memory: the heap bytes the parsed `Module` holds (counted by a
//!   global allocator), per byte of source text.
//!
//! Run without `--bench` (as `cargo test --all-targets` does) it parses each
//! input once and exits, so the benchmark stays buildable and exercised.
//! Extra arguments select inputs by name (`cargo bench --bench parse -- oracle`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live heap bytes and allocation calls.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ptx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            ptx_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "ptx") {
            out.push(p);
        }
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Heap bytes held by the parsed modules of `srcs`, and allocation calls made.
fn ast_bytes(srcs: &[String]) -> (usize, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    let calls = CALLS.load(Ordering::Relaxed);
    let modules: Vec<_> = srcs.iter().map(|s| ptx::parse(s).expect("parses")).collect();
    let held = LIVE.load(Ordering::Relaxed) - before;
    let calls = CALLS.load(Ordering::Relaxed) - calls;
    // The outer Vec of modules is the benchmark's, not the AST's.
    let own = (modules.capacity() * std::mem::size_of::<ptx::ast::Module>()) as isize;
    drop(modules);
    ((held - own).max(0) as usize, calls)
}

/// Parses all of `srcs` repeatedly for about `budget`; returns the sorted
/// wall times of the rounds.
fn time_rounds(srcs: &[String], budget: Duration, min_rounds: usize) -> Vec<Duration> {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < min_rounds || start.elapsed() < budget {
        let t = Instant::now();
        for s in srcs {
            let m = ptx::parse(s).expect("parses");
            std::hint::black_box(&m);
        }
        times.push(t.elapsed());
    }
    times.sort();
    times
}

fn report(name: &str, srcs: &[String], bench: bool) {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
        return;
    }
    let bytes: usize = srcs.iter().map(|s| s.len()).sum();
    // A first parse builds the keyword tables, which are not part of any AST.
    for s in srcs {
        let _ = ptx::parse(s).expect("parses");
    }
    if !bench {
        println!("{name}: {} file(s), {bytes} bytes parse (smoke run; use `cargo bench` for figures)", srcs.len());
        return;
    }
    let (held, calls) = ast_bytes(srcs);
    // PTX_BENCH_ROUNDS=N runs exactly N rounds (for `perf stat` comparisons).
    let fixed: Option<usize> = std::env::var("PTX_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok());
    let times = match fixed {
        Some(n) => time_rounds(srcs, Duration::ZERO, n.max(1)),
        None => time_rounds(srcs, Duration::from_secs(3), 5),
    };
    let mbs = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9);
    let best = times[0];
    let median = times[times.len() / 2];
    println!("{name}: {} file(s), {:.2} MB", srcs.len(), bytes as f64 / 1e6);
    println!(
        "  parse: best {:.1} MB/s ({:.2} ms), median {:.1} MB/s, {} rounds",
        mbs(best),
        best.as_secs_f64() * 1e3,
        mbs(median),
        times.len()
    );
    println!("  AST heap: {:.2} MB = {:.2} bytes per source byte ({} allocations)", held as f64 / 1e6, held as f64 / bytes as f64, calls);
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    // Without `--bench` this is a test-profile smoke run: the oracle only,
    // so that `cargo test --all-targets` stays quick.
    let mut corpus = Vec::new();
    if bench {
        ptx_files(&root().join("target/cuda-tests/ptx"), &mut corpus);
    }
    let largest = corpus.iter().max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()));
    match largest {
        Some(p) => {
            let rel = p.strip_prefix(root()).unwrap_or(p).display().to_string();
            report(&format!("largest corpus module ({rel})"), &[read(p)], bench);
        }
        None if bench => println!("no corpus in target/cuda-tests/ptx (run scripts/build-cuda-tests.sh); oracle only"),
        None => {}
    }
    // Debug sections are most of a `-G` module; the largest module without
    // them shows instruction-dense code.
    let largest_plain =
        corpus.iter().filter(|p| !p.to_string_lossy().contains("-G")).max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()));
    if let Some(p) = largest_plain {
        let rel = p.strip_prefix(root()).unwrap_or(p).display().to_string();
        report(&format!("largest corpus module without -G ({rel})"), &[read(p)], bench);
    }
    let mut oracle = Vec::new();
    ptx_files(&root().join("tests/ptx-oracle"), &mut oracle);
    oracle.sort();
    let srcs: Vec<String> = oracle.iter().map(|p| read(p)).collect();
    report("oracle modules (tests/ptx-oracle)", &srcs, bench);
}
