//! What checking a module image's memory costs (`Image::from_ptr_checked`
//! with the kernel's answer, `readable::ProcessMemory`) against reading it
//! unchecked (`Image::from_ptr`), on the fatbins nvcc put in the project's
//! test programs (`scripts/build-cuda-tests.sh` builds them into
//! `target/cuda-tests`): the header walk alone, and the walk plus decoding
//! the PTX a device of compute capability 8.6 gets.
//!
//! Run with `cargo bench -p anycuda-libcuda --bench images`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Median time of `f` over 5 rounds of `reps` calls.
fn time(reps: u32, mut f: impl FnMut()) -> Duration {
    let mut samples: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed() / reps
        })
        .collect();
    samples.sort();
    samples[2]
}

/// Every fatbin (magic, then a size that fits) in an executable's bytes.
fn fatbins(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 16 <= bytes.len() {
        if bytes[i..i + 4] == fatbin::FATBIN_MAGIC.to_le_bytes() {
            if let Ok(n) = fatbin::fatbin_size(&bytes[i..]) {
                if n as usize <= bytes.len() - i && fatbin::Fatbin::parse(&bytes[i..]).is_ok() {
                    out.push((i, n as usize));
                    i += n as usize;
                    continue;
                }
            }
        }
        i += 8;
    }
    out
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/cuda-tests/bin/static");
    println!("| fatbin | walk, unchecked | walk, checked | walk + PTX, unchecked | walk + PTX, checked |");
    println!("|---|---:|---:|---:|---:|");
    for name in ["vector_add", "cub_device", "thrust_basic"] {
        let Ok(bytes) = std::fs::read(dir.join(name)) else {
            println!("| {name}: not built (run scripts/build-cuda-tests.sh) | | | | |");
            continue;
        };
        for (off, len) in fatbins(&bytes) {
            let p = bytes[off..].as_ptr().cast();
            // SAFETY (each closure): `p` is a whole fatbin inside `bytes`.
            let walk = |checked: bool| {
                move || {
                    let img = unsafe {
                        if checked {
                            fatbin::Image::from_ptr_checked(p, &cuda::readable::ProcessMemory)
                        } else {
                            fatbin::Image::from_ptr(p)
                        }
                    };
                    black_box(img.ok().and_then(|i| i.fatbin().map(|f| f.entries().len())));
                }
            };
            let ptx = |checked: bool| {
                move || {
                    let img = unsafe {
                        if checked {
                            fatbin::Image::from_ptr_checked(p, &cuda::readable::ProcessMemory)
                        } else {
                            fatbin::Image::from_ptr(p)
                        }
                    };
                    black_box(img.ok().and_then(|i| i.ptx(86, fatbin::Policy::Nearest).ok().map(|p| p.text.len())));
                }
            };
            let us = |d: Duration| format!("{:.1} µs", d.as_secs_f64() * 1e6);
            println!(
                "| {name}, {len} bytes | {} | {} | {} | {} |",
                us(time(2000, walk(false))),
                us(time(2000, walk(true))),
                us(time(20, ptx(false))),
                us(time(20, ptx(true)))
            );
        }
    }
}
