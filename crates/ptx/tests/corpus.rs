//! Every module of the nvcc-generated corpus (`scripts/build-cuda-tests.sh`
//! writes it to `target/cuda-tests/ptx/`) parses, prints and parses back to
//! the same tree.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/cuda-tests/ptx")
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

/// Parses, prints and re-parses one module; the error says what failed.
fn check(path: &Path) -> Result<usize, String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("unreadable: {e}"))?;
    let module = ptx::parse(&src).map_err(|d| {
        let first: Vec<String> = d.0.iter().take(5).map(|d| format!("  {d}")).collect();
        format!("{} error(s):\n{}", d.0.len(), first.join("\n"))
    })?;
    let printed = ptx::print(&module);
    let again = ptx::parse(&printed).map_err(|d| {
        let first: Vec<String> = d.0.iter().take(5).map(|d| format!("  {d}")).collect();
        format!("printed module does not parse:\n{}", first.join("\n"))
    })?;
    if module != again {
        return Err("printed module parses to a different tree".into());
    }
    Ok(src.len())
}

#[test]
fn corpus_modules_parse_and_round_trip() {
    let dir = corpus_dir();
    let mut files = Vec::new();
    ptx_files(&dir, &mut files);
    assert!(!files.is_empty(), "no PTX corpus in {}: run scripts/build-cuda-tests.sh first (scripts/test.sh does)", dir.display());
    // PTX_CORPUS_FILTER=text checks only the modules whose path contains it.
    if let Ok(filter) = std::env::var("PTX_CORPUS_FILTER") {
        files.retain(|p| p.to_string_lossy().contains(&filter));
    }
    files.sort();
    // Largest first, so the threads finish together.
    files.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).map_or(0, |m| m.len())));
    let next = AtomicUsize::new(0);
    let bytes = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { return };
                match check(path) {
                    Ok(n) => {
                        bytes.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(e) => failures.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{}: {e}", path.display())),
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    failures.sort();
    assert!(failures.is_empty(), "{} of {} corpus modules fail:\n{}", failures.len(), files.len(), failures.join("\n"));
    eprintln!("{} corpus modules, {} bytes: all parse and round-trip", files.len(), bytes.into_inner());
}
