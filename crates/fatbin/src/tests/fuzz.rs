//! Seeded mutation testing: valid images, mutated, fed to every reader.
//! Deterministic (fixed seeds), bounded, and run by `cargo test`; a panic
//! reports the seed, iteration and input so it can be turned into a test.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::raw_ptr::Guarded;
use super::writer::{cubin, elf, entries, fatbin, ptx, Item};
use super::{fake_sass, mixed, PTX80, PTX90};
use crate::*;

/// xorshift64*: tiny, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn corpus() -> Vec<Vec<u8>> {
    vec![
        mixed(),
        super::concat_fatbin(Codec::Zstd, true),
        super::concat_fatbin(Codec::Lz4, false),
        entries(vec![elf(86, &fake_sass(96)), elf(75, &fake_sass(40)).zstd()]),
        entries(vec![ptx(80, PTX80).named("a.cu").options("-g").lz4(), ptx(90, PTX90)]),
        fatbin(&[Item::Concat { members: vec![ptx(80, PTX80), elf(80, &fake_sass(50))], codec: Codec::Zstd }]),
        cubin(EM_CUDA, 86, &fake_sass(64)),
        b"\n.version 9.5\n.target sm_80\n\0".to_vec(),
    ]
}

const INTERESTING: [u64; 16] = [0, 1, 7, 8, 0x10, 0x40, 0x48, 0x50, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x7fff_ffff, 0xffff_ffff, u64::MAX];

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            v.push(rng.next() as u8);
        }
        // Headers hold the interesting fields: aim there half the time.
        let len = v.len();
        let at = if rng.below(2) == 0 { rng.below(len.min(400)) } else { rng.below(len) };
        match rng.below(8) {
            0 => v[at] ^= 1 << rng.below(8),
            1 => v[at] = rng.next() as u8,
            2 | 3 => {
                let val = match rng.below(3) {
                    0 => INTERESTING[rng.below(INTERESTING.len())],
                    1 => (len as u64 + rng.below(17) as u64).saturating_sub(8),
                    _ => rng.next(),
                };
                let width = [2usize, 4, 8][rng.below(3)];
                let at = at & !(width - 1);
                let bytes = val.to_le_bytes();
                for (i, byte) in bytes.iter().take(width).enumerate() {
                    if let Some(b) = v.get_mut(at + i) {
                        *b = *byte;
                    }
                }
            }
            4 => v.truncate(at),
            5 => {
                let n = 1 + rng.below(16);
                let end = (at + n).min(len);
                v.drain(at..end);
            }
            6 => {
                let n = 1 + rng.below(16);
                for _ in 0..n {
                    v.insert(at, rng.next() as u8);
                }
            }
            _ => {
                let src = rng.below(len);
                let n = rng.below(32).min(len - src).min(len - at);
                v.copy_within(src..src + n, at);
            }
        }
    }
    v
}

/// Calls every reader on `bytes`; only panics matter.
fn exercise(bytes: &[u8]) {
    let _ = Wrapper::parse(bytes);
    let _ = fatbin_size(bytes);
    let _ = Cubin::parse(bytes);
    if let Ok(fb) = Fatbin::parse(bytes) {
        for e in fb.entries() {
            let _ = e.data();
            let _ = e.ptx_text();
            let _ = (e.identifier(), e.jit_options(), e.arch_name(), e.ptx_version());
        }
        let _ = fb.sass_archs();
    }
    if let Ok(img) = Image::parse(bytes) {
        select_all(&img);
    }
    // The same bytes behind a pointer, ending where readable memory ends.
    let g = Guarded::new(bytes);
    if let Ok(img) = g.checked() {
        select_all(&img);
    }
}

fn select_all(img: &Image<'_>) {
    for policy in [Policy::Strict, Policy::Nearest, Policy::Any] {
        for target in [0, 52, 75, 86, 90, 100, u32::MAX] {
            let _ = img.ptx(target, policy);
        }
    }
}

/// Every image of the corpus cut at every length: from bytes and from a
/// pointer whose memory ends at the cut, an error or (text only) a
/// shorter text, never a read past the cut or a panic.
#[test]
fn corpus_cut_at_every_offset() {
    for img in corpus() {
        let is_text = !matches!(Image::parse(&img), Ok(Image::Fatbin { .. } | Image::Cubin(_)));
        for n in 0..img.len() {
            let cut = &img[..n];
            exercise(cut);
            let g = Guarded::new(cut);
            let r = g.checked();
            if !is_text {
                assert!(matches!(r, Err(Error::Unreadable { .. })), "cut at {n} of {}: {r:?}", img.len());
            }
        }
    }
}

fn run(seed: u64, iterations: usize) {
    let corpus = corpus();
    for c in &corpus {
        exercise(c);
    }
    let mut rng = Rng(seed);
    for i in 0..iterations {
        let base = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base);
        if catch_unwind(AssertUnwindSafe(|| exercise(&input))).is_err() {
            panic!("panic on mutated input (seed {seed:#x}, iteration {i}, {} bytes): {:02x?}", input.len(), input);
        }
    }
}

#[test]
fn mutated_images_never_panic_seed_a() {
    run(0x9E37_79B9_7F4A_7C15, 25_000);
}

#[test]
fn mutated_images_never_panic_seed_b() {
    run(0xD1B5_4A32_D192_ED03, 25_000);
}
