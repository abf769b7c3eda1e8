//! Computes the compiler's source revision: a hash of the sources that
//! determine generated code (this crate and the PTX front end). Compiled
//! code cached on disk is keyed by it, so a cache entry stays valid across
//! rebuilds of the same sources and is never reused after they change.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dirs = [root.join("src"), root.join("../ptx/src")];
    let mut all = Vec::new();
    for d in &dirs {
        println!("cargo:rerun-if-changed={}", d.display());
        files(d, &mut all);
    }
    all.sort();
    let mut h = blake3::Hasher::new();
    for f in &all {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        h.update(rel.to_string_lossy().as_bytes());
        h.update(&std::fs::read(f).unwrap_or_default());
    }
    let hex = h.finalize().to_hex();
    println!("cargo:rustc-env=ANYCUDA_COMPILER_REVISION={}", &hex[..32]);
}
