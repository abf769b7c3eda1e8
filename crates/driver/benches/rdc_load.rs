//! What loading an `nvcc -rdc=true` program costs for CUDA's device
//! runtime (`libcudadevrt`), whose PTX nvcc puts in every such program.
//!
//!   cargo bench -p anycuda-driver --bench rdc_load
//!
//! Reads the fatbins of `target/cuda-tests/bin/static/dynamic_parallelism`
//! (built by `scripts/build-cuda-tests.sh`) and, for each translation
//! unit's PTX, times (best of 20, single-threaded) decompressing it, the
//! text test the driver uses to leave the device runtime out of the link
//! (`ptx::is_device_runtime_text`) and parsing it, which the driver did
//! before to recognise it. Without `--bench` (as `cargo test
//! --all-targets` runs it) each step runs once.

use std::time::{Duration, Instant};

fn best<T>(rounds: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..rounds {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        last = Some(r);
    }
    (best, last.expect("at least one round"))
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let rounds = if bench { 20 } else { 1 };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/cuda-tests/bin/static/dynamic_parallelism");
    let Ok(bytes) = std::fs::read(&path) else {
        println!("no {} (run scripts/build-cuda-tests.sh)", path.display());
        return;
    };
    let fatbins = fatbin::host_object_fatbins(&bytes).expect("the program's fatbins");
    for f in fatbins {
        let Ok(fb) = fatbin::Fatbin::parse(f) else { continue };
        for e in fb.entries() {
            if e.ptx_text().is_err() {
                continue;
            }
            let (decode, text) = best(rounds, || e.ptx_text().expect("decodes").into_owned());
            let (test, runtime) = best(rounds, || ptx::is_device_runtime_text(&text));
            let (parse, parsed) = best(rounds, || ptx::parse(&text).is_ok_and(|m| ptx::is_device_runtime(&m)));
            assert_eq!(runtime, parsed, "the text test and the parsed module disagree");
            println!(
                "{} PTX, {} bytes ({:?}): decompress {:.3} ms, text test {:.3} ms, parse {:.3} ms ({:.0}x the text test)",
                if runtime { "device runtime" } else { "program" },
                text.len(),
                e.compression(),
                decode.as_secs_f64() * 1e3,
                test.as_secs_f64() * 1e3,
                parse.as_secs_f64() * 1e3,
                parse.as_secs_f64() / test.as_secs_f64().max(1e-9)
            );
        }
    }
}
