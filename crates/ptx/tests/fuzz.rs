//! A bounded, deterministic fuzz run inside `cargo test`: seeded mutations
//! (byte flips, insertions, deletions, truncations, line and token splices,
//! numeric extremes) of the oracle and syntax modules go through the parser.
//! Every input must come back as a module or as diagnostics — no panic —
//! within a time bound, with heap use bounded by its size; every module
//! that parses must print to PTX that parses to the same tree.
//!
//! `PTX_FUZZ_ITERATIONS` changes the number of inputs (default 3000) and
//! `PTX_FUZZ_SEED` the seed. A failing input is written to the test's
//! temporary folder and named in the failure.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Tracks live and peak heap bytes while `TRACK` is set.
struct Peak;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static TRACK: AtomicBool = AtomicBool::new(false);

fn note(delta: isize) {
    let now = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
    if TRACK.load(Ordering::Relaxed) {
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size() as isize);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        note(-(l.size() as isize));
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size() as isize);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note(n as isize - l.size() as isize);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Peak = Peak;

/// xorshift64*: small, seeded, reproducible.
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
    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [root.join("tests/syntax"), root.join("../../tests/ptx-oracle")] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
            .collect();
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).expect("readable");
            out.push((f.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string(), bytes));
        }
    }
    out
}

/// The seed's module header (up to the first item) and a run of whole
/// module items (each starting at a line that begins with `.`) of at most
/// about `max` bytes, so that inputs stay small enough for thousands of
/// debug-build parses and, unmutated, still parse.
fn window(rng: &mut Rng, seed: &[u8], max: usize) -> Vec<u8> {
    let is_item = |line: &[u8]| {
        [&b".visible"[..], b".entry", b".func", b".weak", b".extern", b".global", b".const", b".shared", b".section"]
            .iter()
            .any(|p| line.starts_with(p))
    };
    let mut starts = Vec::new();
    let mut pos = 0;
    for line in seed.split(|b| *b == b'\n') {
        if is_item(line) {
            starts.push(pos);
        }
        pos += line.len() + 1;
    }
    let Some(&first) = starts.first() else { return seed.to_vec() };
    let mut out = seed[..first].to_vec();
    let k = rng.below(starts.len());
    let begin = starts[k];
    let mut end = starts.get(k + 1).copied().unwrap_or(seed.len());
    for &next in &starts[k + 1..] {
        if next - begin > max {
            break;
        }
        end = next;
    }
    out.extend_from_slice(&seed[begin..end.min(seed.len())]);
    out
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    ":",
    ".",
    "|",
    "!",
    "@",
    "+",
    "-",
    "<",
    ">",
    "=",
    "_",
    "%r1",
    "%p1",
    "%rd1",
    "%tid.x",
    "$L__BB0_1",
    ".reg",
    ".b32",
    ".u64",
    ".f32",
    ".pred",
    ".param",
    ".shared",
    ".global",
    ".local",
    ".const",
    ".entry",
    ".func",
    ".visible",
    ".extern",
    ".weak",
    ".align 8",
    ".v4",
    ".ptr",
    ".attribute(.managed)",
    ".loc 1 2 3",
    ".file 1 \"x\"",
    ".pragma \"p\";",
    ".section .debug_info {",
    ".branchtargets",
    ".calltargets",
    ".callprototype",
    "_ (.param .b32 _)",
    "generic(",
    "0f3F800000",
    "0d3FF0000000000000",
    "0x7fffffffffffffff",
    "18446744073709551615U",
    "99999999999999999999999",
    "-0",
    "0b101",
    "017",
    "1.5e308",
    "1e-999",
    "WARP_SZ",
    "%r<4000000000>",
    "[4294967296]",
    "<99999999999>",
    "\"",
    "/*",
    "*/",
    "//",
    "\n",
    "é",
    "\u{0}",
    "ld.global.u32",
    "bra",
    "call",
    "ret;",
    "mov.b64",
    "setp.eq.s32",
    "tex.2d.v4.f32.f32",
    "-%r1",
    "%r1.b0",
    ".h10",
    "{%r1, %r2}|%p1",
    "_|%p1",
    "0xFF(",
    ".m16n8k16",
    ".x4",
    "::",
    ".cta_group::1",
];

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, donors: &[(String, Vec<u8>)]) {
    let n = 1 + rng.below(2) + rng.below(2);
    for _ in 0..n {
        let len = input.len();
        match rng.below(10) {
            // flip a bit
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            // overwrite a byte with a punctuation or random byte
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = *rng.pick(b"{}()[];,:.|!@+-<>=_%$\"/*\n 0123456789abcdefx\x00\xff");
            }
            // delete a range
            2 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(64)).min(len);
                input.drain(i..j);
            }
            // truncate
            3 => {
                let i = rng.below(len + 1);
                input.truncate(i);
            }
            // insert a token
            4..=6 => {
                let i = rng.below(len + 1);
                let t = rng.pick(TOKENS).as_bytes();
                input.splice(i..i, t.iter().copied());
            }
            // duplicate a range
            7 if len > 0 => {
                let i = rng.below(len);
                let j = (i + 1 + rng.below(256)).min(len);
                let piece = input[i..j].to_vec();
                let k = rng.below(input.len() + 1);
                input.splice(k..k, piece);
            }
            // a deep run of an opening character: nesting must not
            // overflow the stack
            8 if rng.below(8) == 0 => {
                // after a comma (an operand or initializer) or at a line start
                // (a block), where the run is read as nesting
                let (c, after) = *rng.pick(&[(b'(', b','), (b'-', b','), (b'~', b','), (b'{', b','), (b'{', b'\n'), (b'[', b',')]);
                let spots: Vec<usize> = input.iter().enumerate().filter(|(_, b)| **b == after).map(|(i, _)| i + 1).collect();
                if !spots.is_empty() {
                    let i = *rng.pick(&spots);
                    let n = 100 + rng.below(5000);
                    input.splice(i..i, std::iter::repeat_n(c, n));
                }
            }
            // splice a line from another seed
            8 => {
                let (_, donor) = rng.pick(donors);
                let lines: Vec<&[u8]> = donor.split(|b| *b == b'\n').collect();
                let line = rng.pick(&lines);
                let i = rng.below(len + 1);
                let mut piece = line.to_vec();
                piece.push(b'\n');
                input.splice(i..i, piece);
            }
            // swap two ranges' lines
            _ => {
                let lines: Vec<Vec<u8>> = input.split(|b| *b == b'\n').map(|l| l.to_vec()).collect();
                if lines.len() > 2 {
                    let mut lines = lines;
                    let a = rng.below(lines.len());
                    let b = rng.below(lines.len());
                    lines.swap(a, b);
                    *input = lines.join(&b'\n');
                }
            }
        }
    }
}

/// Parses one input; on a module, prints and re-parses it. Returns the
/// peak heap bytes used and whether it parsed, or what went wrong.
fn run_one(src: &str) -> Result<(isize, bool), String> {
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    TRACK.store(true, Ordering::Relaxed);
    let result = std::panic::catch_unwind(|| match ptx::parse(src) {
        Ok(module) => {
            let printed = ptx::print(&module);
            match ptx::parse(&printed) {
                Ok(again) if again == module => Ok(true),
                Ok(_) => Err(format!("printed module parses to a different tree:\n{printed}")),
                Err(d) => Err(format!("printed module does not parse: {d}\n{printed}")),
            }
        }
        Err(diags) => {
            if diags.0.is_empty() {
                return Err("an error without diagnostics".to_string());
            }
            for d in &diags.0 {
                if d.span.start as usize > src.len() || d.span.end < d.span.start || d.line == 0 || d.column == 0 {
                    return Err(format!("diagnostic out of the input: {d:?}"));
                }
            }
            Ok(false)
        }
    });
    TRACK.store(false, Ordering::Relaxed);
    let peak = PEAK.load(Ordering::Relaxed);
    match result {
        Ok(Ok(parsed)) => Ok((peak, parsed)),
        Ok(Err(e)) => Err(e),
        Err(p) => {
            Err(format!("panic: {}", p.downcast_ref::<String>().map(String::as_str).or(p.downcast_ref::<&str>().copied()).unwrap_or("?")))
        }
    }
}

fn save(name: &str, input: &[u8]) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::write(&path, input);
    path
}

#[test]
fn mutated_modules_never_panic_hang_or_blow_up() {
    let iterations: usize = std::env::var("PTX_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(3000);
    let seed: u64 = std::env::var("PTX_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_1e55_f00d);
    let seeds = seeds();
    assert!(seeds.len() >= 16, "{} seeds", seeds.len());
    // The parse runs on a worker so that a hang fails the test instead of
    // stalling it.
    let (to_worker, inputs) = mpsc::channel::<Vec<u8>>();
    let (to_main, results) = mpsc::channel::<Result<(isize, bool), String>>();
    let worker = std::thread::spawn(move || {
        for input in inputs {
            let src = String::from_utf8_lossy(&input).into_owned();
            if to_main.send(run_one(&src)).is_err() {
                return;
            }
        }
    });
    let mut rng = Rng(seed | 1);
    let started = Instant::now();
    let (mut parsed_bytes, mut slowest, mut modules) = (0usize, Duration::ZERO, 0usize);
    for k in 0..iterations {
        let (name, seed_bytes) = rng.pick(&seeds).clone();
        let mut input = window(&mut rng, &seed_bytes, 3000);
        if k % 10 != 0 {
            mutate(&mut rng, &mut input, &seeds);
        }
        let t = Instant::now();
        to_worker.send(input.clone()).expect("worker alive");
        // Generous for a debug build on a busy machine; a parse is linear.
        let outcome = results.recv_timeout(Duration::from_secs(10));
        let took = t.elapsed();
        slowest = slowest.max(took);
        let file = format!("fuzz-failure-{k}.ptx");
        match outcome {
            Err(_) => panic!("input {k} (from {name}) did not finish in 10 s: {}", save(&file, &input).display()),
            Ok(Err(e)) => panic!("input {k} (from {name}): {e}\ninput: {}", save(&file, &input).display()),
            Ok(Ok((peak, parsed))) => {
                modules += parsed as usize;
                // Heap is linear in the input: the tree, the printed text and
                // its re-parse. A declaration such as `%r<4000000000>` or
                // `[99999999999]` must not allocate per member.
                let bound = 256 * input.len() as isize + (1 << 20);
                assert!(
                    peak <= bound,
                    "input {k} (from {name}) used {peak} bytes of heap for {} bytes: {}",
                    input.len(),
                    save(&file, &input).display()
                );
            }
        }
        parsed_bytes += input.len();
    }
    drop(to_worker);
    let _ = worker.join();
    eprintln!(
        "{iterations} inputs ({modules} parsed and round-tripped), {parsed_bytes} bytes in {:.1} s (slowest {:.0} ms), seed {seed}",
        started.elapsed().as_secs_f64(),
        slowest.as_secs_f64() * 1e3
    );
}
