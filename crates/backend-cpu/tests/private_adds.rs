//! Add-only global atomics gathered in the runners' private tables
//! (`compiler/src/privatise.rs`): a histogram's counts are exact in thread
//! and warp mode, whichever path runs the blocks, and the tables are used
//! exactly when the kernel and the launch allow it; kernels whose threads
//! could see the adds mid-launch (a last block summing the bins after a
//! fence, a load of the bins, buffers passed overlapping), float adds and
//! checked runs keep their atomics on memory.
//!
//! Whether a launch privatised is read from
//! `backend_cpu::exec::privatised_launches()`, a process-wide count: the
//! tests take turns (`TURN`) so that no other test's launch moves it.

use std::sync::{Arc, Mutex};

use backend_cpu::exec::privatised_launches;
use backend_cpu::CpuBackend;
use compiler::WarpMode;
use driver::backend::{Backend, BackendModule, LaunchParams, ModuleOptions};

static TURN: Mutex<()> = Mutex::new(());

const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// nvcc's code (`-O3`) for `for (long i = blockIdx.x * blockDim.x +
/// threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&hist[d[i]],
/// 1u);` with `ATOM` for the atomic (`%rd16`: the bin's address) and
/// `START` at the kernel's start.
fn histogram(atom: &str, start: &str) -> String {
    format!(
        "{HEAD}.visible .entry hg(.param .u64 d, .param .u64 n, .param .u64 hist)
{{
.reg .pred %p<3>; .reg .b32 %r<7>; .reg .b64 %rd<18>; .reg .f32 %f<2>;
{start}
ld.param.u64 %rd8, [d];
ld.param.u64 %rd9, [n];
ld.param.u64 %rd10, [hist];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
cvt.u64.u32 %rd1, %r2;
mul.wide.u32 %rd11, %r1, %r2;
mov.u32 %r3, %tid.x;
cvt.u64.u32 %rd12, %r3;
add.s64 %rd17, %rd11, %rd12;
setp.ge.s64 %p1, %rd17, %rd9;
@%p1 bra DONE;
mov.u32 %r4, %nctaid.x;
cvt.u64.u32 %rd13, %r4;
mul.lo.s64 %rd3, %rd13, %rd1;
cvta.to.global.u64 %rd4, %rd8;
cvta.to.global.u64 %rd5, %rd10;
LOOP:
add.s64 %rd14, %rd4, %rd17;
ld.global.u8 %r5, [%rd14];
mul.wide.u32 %rd15, %r5, {scale};
add.s64 %rd16, %rd5, %rd15;
{atom}
add.s64 %rd17, %rd17, %rd3;
setp.lt.s64 %p2, %rd17, %rd9;
@%p2 bra LOOP;
DONE:
ret;
}}
",
        scale = if atom.contains("64") { 8 } else { 4 }
    )
}

/// The bytes: a quarter of them in 16 bins, as the benchmark's.
fn bytes(n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| {
            let h = i.wrapping_mul(2654435761).rotate_left(13) ^ i;
            if h & 3 == 0 {
                (h >> 24 & 15) as u8
            } else {
                (h >> 8) as u8
            }
        })
        .collect()
}

fn counts(d: &[u8]) -> Vec<u64> {
    let mut c = vec![0u64; 256];
    for &b in d {
        c[usize::from(b)] += 1;
    }
    c
}

struct Run {
    backend: Arc<CpuBackend>,
    module: Arc<dyn BackendModule>,
}

fn load(ptx: &str, warp: WarpMode, memcheck: bool) -> Run {
    let mut config = jit::JitConfig::uncached(compiler::Tier::Fast);
    config.options.warp = warp;
    config.options.memcheck = memcheck;
    let backend = Arc::new(CpuBackend::with_jit(config));
    let module = backend.load_module(0, ptx, &ModuleOptions { target: 80, ..Default::default() }).expect("the module loads");
    Run { backend, module }
}

impl Run {
    /// Launches kernel 0 with `params` (64-bit words); whether it
    /// privatised.
    fn launch(&self, params: &[u64], grid: u32, block: u32) -> bool {
        let params: Vec<u8> = params.iter().flat_map(|a| a.to_le_bytes()).collect();
        let before = privatised_launches();
        let launch = LaunchParams {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            dynamic_shared_bytes: 0,
            params: &params,
            cooperative: false,
            pending_launch_limit: 2048,
            heap_limit: 8 << 20,
            printf_fifo_size: 1 << 20,
        };
        self.module.launch(0, &launch).expect("the launch succeeds");
        privatised_launches() - before > 0
    }

    fn alloc_with(&self, bytes: &[u8]) -> u64 {
        let p = self.backend.alloc(0, bytes.len().max(1)).expect("alloc");
        self.backend.copy_htod(p, bytes).expect("copy");
        p
    }

    fn read(&self, p: u64, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        self.backend.copy_dtoh(&mut out, p).expect("copy");
        out
    }
}

fn words32(b: &[u8]) -> Vec<u64> {
    b.chunks(4).map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap()))).collect()
}

fn words64(b: &[u8]) -> Vec<u64> {
    b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

const MODES: [WarpMode; 2] = [WarpMode::Off, WarpMode::Always];

#[test]
fn histogram_counts_are_exact_and_privatised() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = 300_001;
    let data = bytes(n);
    for atom in ["atom.global.add.u32 %r6, [%rd16], 1;", "red.global.add.u32 [%rd16], 1;", "red.global.add.u64 [%rd16], 1;"] {
        // `bar.sync` at the start sends thread mode through the scheduler.
        for start in ["", "bar.sync 0;"] {
            for warp in MODES {
                let run = load(&histogram(atom, start), warp, false);
                let wide = atom.contains("u64");
                let d = run.alloc_with(&data);
                let hist = run.alloc_with(&vec![0u8; if wide { 2048 } else { 1024 }]);
                let what = format!("{atom} {start} {warp:?}");
                // Twice: the tables start empty for the second launch.
                for round in 1..=2u64 {
                    assert!(run.launch(&[d, n as u64, hist], 37, 96), "{what}: privatised");
                    let raw = run.read(hist, if wide { 2048 } else { 1024 });
                    let got = if wide { words64(&raw) } else { words32(&raw) };
                    let want: Vec<u64> = counts(&data).iter().map(|c| c * round).collect();
                    assert_eq!(got, want, "{what}, launch {round}");
                }
            }
        }
    }
}

#[test]
fn overlapping_buffers_keep_the_atomics_on_memory() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = 100_000usize;
    let data = bytes(n);
    for warp in MODES {
        let run = load(&histogram("atom.global.add.u32 %r6, [%rd16], 1;", ""), warp, false);
        let mut buf = data.clone();
        buf.extend([0u8; 1024]);
        let d = run.alloc_with(&buf);
        // Bins right after the bytes: apart, privatised, exact.
        assert!(run.launch(&[d, n as u64, d + n as u64], 16, 128), "{warp:?}");
        assert_eq!(words32(&run.read(d + n as u64, 1024)), counts(&data), "{warp:?}");
        // The same kernel with bins over the bytes' last word: the
        // launch reads what the atomics write, so they stay on memory.
        assert!(!run.launch(&[d, n as u64, d + n as u64 - 4], 16, 128), "{warp:?}");
        // Bins over the first bytes.
        assert!(!run.launch(&[d + 1020, n as u64 - 1020, d], 16, 128), "{warp:?}");
    }
}

/// Each thread adds its byte's bin, then `__threadfence()`, then counts
/// itself with an `atomicAdd` whose result it reads; the last thread to
/// arrive sums the bins into `total` (the threadFenceReduction pattern).
const LAST_SUMS: &str = ".visible .entry last(.param .u64 d, .param .u32 n, .param .u64 hist, .param .u64 count, .param .u64 total)
{
.reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<16>;
ld.param.u64 %rd1, [d];
ld.param.u32 %r1, [n];
ld.param.u64 %rd2, [hist];
ld.param.u64 %rd3, [count];
ld.param.u64 %rd4, [total];
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %ntid.x;
mov.u32 %r4, %tid.x;
mad.lo.s32 %r5, %r2, %r3, %r4;
setp.ge.u32 %p1, %r5, %r1;
@%p1 bra DONE;
cvt.u64.u32 %rd5, %r5;
add.s64 %rd6, %rd1, %rd5;
ld.global.u8 %r6, [%rd6];
mul.wide.u32 %rd7, %r6, 4;
add.s64 %rd8, %rd2, %rd7;
red.global.add.u32 [%rd8], 1;
FENCE
atom.global.add.u32 %r7, [%rd3], 1;
add.u32 %r8, %r1, -1;
setp.ne.u32 %p2, %r7, %r8;
@%p2 bra DONE;
mov.u32 %r9, 0;
mov.u32 %r10, 0;
SUM:
mul.wide.u32 %rd9, %r10, 4;
add.s64 %rd10, %rd2, %rd9;
ld.volatile.global.u32 %r11, [%rd10];
add.u32 %r9, %r9, %r11;
add.u32 %r10, %r10, 1;
setp.lt.u32 %p3, %r10, 256;
@%p3 bra SUM;
st.global.u32 [%rd4], %r9;
DONE:
ret;
}
";

#[test]
fn a_last_block_that_sums_the_bins_sees_every_add() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = 200_000usize;
    let data = bytes(n);
    // With the fence (as CUDA requires), and without it: either way the
    // kernel reads the bins, so nothing is privatised.
    for fence in ["membar.gl;", ""] {
        for warp in MODES {
            let run = load(&format!("{HEAD}{}", LAST_SUMS.replace("FENCE", fence)), warp, false);
            let d = run.alloc_with(&data);
            let hist = run.alloc_with(&[0u8; 1024]);
            let count = run.alloc_with(&[0u8; 4]);
            let total = run.alloc_with(&[0u8; 4]);
            let params: [u64; 5] = [d, n as u64, hist, count, total];
            // `n` is a 32-bit parameter: the low half of the second word,
            // the rest of the buffer as the kernel lays it out.
            let mut buf: Vec<u8> = Vec::new();
            buf.extend(params[0].to_le_bytes());
            buf.extend((n as u32).to_le_bytes());
            buf.extend([0; 4]);
            for p in &params[2..] {
                buf.extend(p.to_le_bytes());
            }
            let before = privatised_launches();
            let launch = LaunchParams {
                grid: [(n as u32).div_ceil(128), 1, 1],
                block: [128, 1, 1],
                dynamic_shared_bytes: 0,
                params: &buf,
                cooperative: false,
                pending_launch_limit: 2048,
                heap_limit: 8 << 20,
                printf_fifo_size: 1 << 20,
            };
            run.module.launch(0, &launch).expect("the launch succeeds");
            assert_eq!(privatised_launches(), before, "{fence} {warp:?}: not privatised");
            assert_eq!(words32(&run.read(hist, 1024)), counts(&data), "{fence} {warp:?}");
            // (Without the fence CUDA promises nothing; on the host the
            // atomics are ordered all the same, and the sum is whole.)
            assert_eq!(words32(&run.read(total, 4)), vec![n as u64], "{fence} {warp:?}: the last thread saw every add");
        }
    }
}

#[test]
fn float_adds_and_checked_runs_stay_on_memory() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = 50_000usize;
    let data = bytes(n);
    for warp in MODES {
        let run = load(&histogram("red.global.add.f32 [%rd16], 0f3F800000;", ""), warp, false);
        let d = run.alloc_with(&data);
        let hist = run.alloc_with(&[0u8; 1024]);
        assert!(!run.launch(&[d, n as u64, hist], 16, 128), "{warp:?}: float adds");
        let got: Vec<u64> = run.read(hist, 1024).chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as u64).collect();
        assert_eq!(got, counts(&data), "{warp:?}");

        let run = load(&histogram("atom.global.add.u32 %r6, [%rd16], 1;", ""), warp, true);
        let d = run.alloc_with(&data);
        let hist = run.alloc_with(&[0u8; 1024]);
        assert!(!run.launch(&[d, n as u64, hist], 16, 128), "{warp:?}: checked");
        assert_eq!(words32(&run.read(hist, 1024)), counts(&data), "{warp:?}: checked");
    }
}

/// Warp mode's lane-by-lane adds of indices loaded just before (the
/// table's window for bytes, its slots for wider and signed indices),
/// against the vector of addresses they replace where a warp is partial,
/// the base misaligned or the window must move between two bases: exact
/// in both modes, launch after launch.
#[test]
fn loaded_indices_count_exactly_in_every_path() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = 150_001usize;
    let red = "red.global.add.u32 [%rd16], 1;";
    let base = histogram(red, "");
    let data = bytes(n);
    let byte_counts = counts(&data);
    // 16-bit indices in [0, 4096) (more bins than the table's slots),
    // the element `i` at `d + 2 i`.
    let halves: Vec<u16> = (0..n as u32).map(|i| (i.wrapping_mul(2654435761).rotate_left(7) % 4096) as u16).collect();
    let half_kernel = base
        .replace("add.s64 %rd14, %rd4, %rd17;", "shl.b64 %rd2, %rd17, 1;\nadd.s64 %rd14, %rd4, %rd2;")
        .replace("ld.global.u8", "ld.global.u16");
    let mut half_counts = vec![0u64; 4096];
    for &h in &halves {
        half_counts[usize::from(h)] += 1;
    }
    // Signed bytes, bins around the base.
    let signed_kernel = base.replace("ld.global.u8", "ld.global.s8").replace("mul.wide.u32", "mul.wide.s32");
    let mut signed_counts = vec![0u64; 256];
    for &b in &data {
        signed_counts[(i32::from(b as i8) + 128) as usize] += 1;
    }
    // A second histogram at another base, from its own load: the window
    // moves between the two every iteration.
    let two_kernel = base
        .replace(".param .u64 hist)", ".param .u64 hist, .param .u64 hist2)")
        .replace("ld.param.u64 %rd10, [hist];", "ld.param.u64 %rd10, [hist];\nld.param.u64 %rd0, [hist2];\ncvta.to.global.u64 %rd2, %rd0;")
        .replace(
            "add.s64 %rd17, %rd17, %rd3;",
            "ld.global.u8 %r6, [%rd14];\nmul.wide.u32 %rd7, %r6, 4;\nadd.s64 %rd6, %rd2, %rd7;\nred.global.add.u32 [%rd6], 1;\nadd.s64 %rd17, %rd17, %rd3;",
        );
    for warp in MODES {
        for (kernel, what) in [(&base, "bytes"), (&half_kernel, "halves"), (&signed_kernel, "signed"), (&two_kernel, "two bases")] {
            let run = load(kernel, warp, false);
            let (input, bins, offset, want): (Vec<u8>, usize, u64, &[u64]) = match what {
                "halves" => (halves.iter().flat_map(|h| h.to_le_bytes()).collect(), 65536 * 4, 0, &half_counts),
                "signed" => (data.clone(), 1024, 512, &signed_counts),
                _ => (data.clone(), 1024, 0, &byte_counts),
            };
            let d = run.alloc_with(&input);
            let hist = run.alloc_with(&vec![0u8; bins]);
            let hist2 = run.alloc_with(&vec![0u8; 1024]);
            // Blocks of whole warps, then blocks whose last warp is partial.
            for (round, block) in [(1u64, 96u32), (2, 100)] {
                let what = format!("{what} {warp:?} block {block}");
                assert!(run.launch(&[d, n as u64, hist + offset, hist2], 37, block), "{what}: privatised");
                let got = words32(&run.read(hist, want.len() * 4));
                assert_eq!(got, want.iter().map(|c| c * round).collect::<Vec<_>>(), "{what}");
                if what.starts_with("two") {
                    assert_eq!(words32(&run.read(hist2, 1024)), got, "{what}: the second histogram");
                }
            }
        }
        // A base that is not 4-byte aligned: no window, the same counts.
        // (No bin across a cache line: the host makes such a locked add
        // very slow.)
        let run = load(&base, warp, false);
        let near: Vec<u8> = data.iter().map(|&b| if b % 16 == 15 { b - 1 } else { b }).collect();
        let d = run.alloc_with(&near);
        let hist = run.alloc_with(&[0u8; 1028]);
        assert!(run.launch(&[d, n as u64, hist + 2], 37, 96), "{warp:?}: misaligned, privatised");
        assert_eq!(words32(&run.read(hist + 2, 1024)), counts(&near), "{warp:?}: misaligned");
    }
}
