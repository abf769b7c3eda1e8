//! Warp-synchronous programs (`ptx/warp_sync.ptx`): lanes of a warp that
//! exchange values through memory without barriers get the results of a
//! GPU, whose converged warps execute each instruction for all lanes at
//! once, in the default execution mode (`WarpMode::Auto`) and in warp mode,
//! in both compiler tiers; kernels whose lanes cannot observe each other
//! keep the fast path.

use backend_cpu::{Executor, LoadedKernel};
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

fn exec() -> &'static Executor {
    Executor::global()
}

fn program(warp: WarpMode, tier: Tier) -> Program {
    Program::from_file_with("warp_sync.ptx", &Options { warp, tier, strict_affine: false, memcheck: false })
        .expect("warp_sync.ptx compiles")
}

/// The modes and tiers that must give a GPU's results.
fn exact_configurations() -> Vec<(WarpMode, Tier)> {
    let mut v = Vec::new();
    for warp in [WarpMode::Auto, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            v.push((warp, tier));
        }
    }
    v
}

fn runs_as_warps(k: &LoadedKernel) -> bool {
    k.info.lanes == 32
}

fn runs_on_the_fast_path(k: &LoadedKernel) -> bool {
    k.info.lanes == 1 && !k.info.needs_scheduler
}

fn input(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761).rotate_left(7) ^ 0x5bd1_e995).collect()
}

#[test]
fn shared_memory_transpose_without_barriers() {
    for (warp, tier) in exact_configurations() {
        let p = program(warp, tier);
        let k = p.kernel("transpose_tile").expect("kernel");
        assert!(runs_as_warps(k), "{warp:?}");
        for threads in [256u32, 96, 32] {
            let blocks = 5u32;
            let n = (blocks * threads) as usize;
            let mut inp = input(n);
            let mut out = vec![0u32; n];
            launch(exec(), k, [blocks, 1, 1], [threads, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))])
                .expect("params")
                .expect("launch");
            for g in 0..n {
                let lane = g % 32;
                let want = inp[g - lane + (lane & 3) * 8 + (lane >> 2)];
                assert_eq!(out[g], want, "thread {g}, blocks of {threads}, {warp:?} {tier:?}");
            }
        }
    }
}

#[test]
fn shared_memory_butterfly_without_barriers() {
    for (warp, tier) in exact_configurations() {
        let p = program(warp, tier);
        let k = p.kernel("butterfly_sum").expect("kernel");
        assert!(runs_as_warps(k), "{warp:?}");
        let (blocks, threads) = (4u32, 256u32);
        let n = (blocks * threads) as usize;
        let mut inp = input(n);
        let mut out = vec![0u32; n];
        launch(exec(), k, [blocks, 1, 1], [threads, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for g in 0..n {
            let first = g - g % 32;
            let want = inp[first..first + 32].iter().fold(0u32, |a, &v| a.wrapping_add(v));
            assert_eq!(out[g], want, "thread {g}, {warp:?} {tier:?}");
        }
    }
}

fn block_sums(inp: &[u32], per_block: usize) -> Vec<u32> {
    inp.chunks(per_block).map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v))).collect()
}

#[test]
fn unrolled_volatile_reduction_of_a_single_warp() {
    for (warp, tier) in exact_configurations() {
        let p = program(warp, tier);
        let k = p.kernel("reduce_one_warp").expect("kernel");
        assert!(runs_as_warps(k), "{warp:?}");
        let blocks = 37u32;
        let mut inp = input(blocks as usize * 64);
        let mut out = vec![0u32; blocks as usize];
        launch(exec(), k, [blocks, 1, 1], [32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        assert_eq!(out, block_sums(&inp, 64), "{warp:?} {tier:?}");
    }
}

#[test]
fn last_warp_reduction_after_barriers() {
    for (warp, tier) in exact_configurations() {
        let p = program(warp, tier);
        let k = p.kernel("reduce_last_warp").expect("kernel");
        assert!(runs_as_warps(k), "{warp:?}");
        let blocks = 19u32;
        let mut inp = input(blocks as usize * 256);
        let mut out = vec![0u32; blocks as usize];
        launch(exec(), k, [blocks, 1, 1], [256, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        assert_eq!(out, block_sums(&inp, 256), "{warp:?} {tier:?}");
    }
}

/// OUT = M X M^T for each 8x8 tile (row-major), M[r][n] = r*n + r + 1,
/// in wrapping 32-bit arithmetic.
fn transform8x8(x: &[u32]) -> Vec<u32> {
    let m = |r: usize, n: usize| (r * n + r + 1) as u32;
    let mut out = vec![0u32; x.len()];
    for (t, tile) in x.chunks(64).enumerate() {
        let mut mx = [[0u32; 8]; 8];
        for r in 0..8 {
            for c in 0..8 {
                mx[r][c] = (0..8).fold(0u32, |a, n| a.wrapping_add(m(r, n).wrapping_mul(tile[n * 8 + c])));
            }
        }
        for c in 0..8 {
            for k in 0..8 {
                out[t * 64 + c * 8 + k] = (0..8).fold(0u32, |a, n| a.wrapping_add(m(k, n).wrapping_mul(mx[c][n])));
            }
        }
    }
    out
}

#[test]
fn separable_8x8_transform_writing_columns_and_reading_rows() {
    for (warp, tier) in exact_configurations() {
        let p = program(warp, tier);
        let k = p.kernel("transform8x8").expect("kernel");
        assert!(runs_as_warps(k), "{warp:?}");
        let tiles = 48usize;
        let mut inp = input(tiles * 64);
        let mut out = vec![0u32; tiles * 64];
        launch(exec(), k, [(tiles / 8) as u32, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        assert_eq!(out, transform8x8(&inp), "{warp:?} {tier:?}");
    }
}

#[test]
fn exchange_through_global_memory() {
    for (warp, tier) in exact_configurations() {
        let p = program(warp, tier);
        let k = p.kernel("exchange_global").expect("kernel");
        assert!(runs_as_warps(k), "{warp:?}");
        let (blocks, threads) = (6u32, 128u32);
        let n = (blocks * threads) as usize;
        let mut buf = vec![0u32; n];
        let mut out = vec![0u32; n];
        launch(exec(), k, [blocks, 1, 1], [threads, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut buf)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for (g, v) in out.iter().enumerate() {
            assert_eq!(*v, ((g ^ 1) * 3 + 1) as u32, "thread {g}, {warp:?} {tier:?}");
        }
    }
}

#[test]
fn kernels_whose_lanes_cannot_observe_each_other_keep_the_fast_path() {
    for tier in [Tier::Fast, Tier::Optimized] {
        let p = program(WarpMode::Auto, tier);
        let (blocks, threads) = (7u32, 192u32);
        let n = (blocks * threads) as usize;

        let k = p.kernel("fill_index").expect("kernel");
        assert!(runs_on_the_fast_path(k));
        let mut out = vec![0u32; n];
        launch(exec(), k, [blocks, 1, 1], [threads, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        assert!(out.iter().enumerate().all(|(g, &v)| v == 2 * g as u32));

        let k = p.kernel("scale_readonly").expect("kernel");
        assert!(runs_on_the_fast_path(k));
        let mut inp: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
        let mut out = vec![0f32; n];
        launch(
            exec(),
            k,
            [blocks, 1, 1],
            [threads, 1, 1],
            0,
            &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out)), Arg::F32(3.0)],
        )
        .expect("params")
        .expect("launch");
        assert!(out.iter().zip(&inp).all(|(o, i)| *o == i * 3.0));

        let k = p.kernel("count_classes").expect("kernel");
        assert!(runs_on_the_fast_path(k));
        let mut inp = input(5000);
        let len = inp.len() as u32;
        let mut counts = vec![0u32; 8];
        launch(exec(), k, [3, 1, 1], [128, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut counts)), Arg::U32(len)])
            .expect("params")
            .expect("launch");
        let mut want = [0u32; 8];
        inp.iter().for_each(|v| want[(v & 7) as usize] += 1);
        assert_eq!(counts, want);
    }
}

#[test]
fn explicit_modes_still_choose_as_told() {
    // `ANYCUDA_WARP=0`: thread by thread everywhere; `wait`: warps only
    // where threads wait (the barrier reduction), as before the analysis.
    let p = program(WarpMode::Off, Tier::Fast);
    for name in ["transpose_tile", "reduce_last_warp", "fill_index"] {
        assert_eq!(p.kernel(name).expect("kernel").info.lanes, 1, "{name}");
    }
    let p = program(WarpMode::WhereThreadsWait, Tier::Fast);
    assert_eq!(p.kernel("transpose_tile").expect("kernel").info.lanes, 1);
    assert_eq!(p.kernel("reduce_last_warp").expect("kernel").info.lanes, 32);
}

/// Runs `axpy` over `buf` with `x` and `y` at element offsets `xo` and
/// `yo`, `n` elements, in blocks of `block` threads.
fn axpy(k: &LoadedKernel, buf: &mut [f32], xo: usize, yo: usize, n: usize, block: [u32; 3]) {
    let per_block = (block[0] * block[1] * block[2]) as usize;
    let base = buf.as_mut_ptr();
    // SAFETY: both views lie inside `buf`, which outlives the launch; the
    // kernel may write through the overlap, as the test intends.
    let (x, y) = unsafe { (std::slice::from_raw_parts_mut(base.add(xo), n), std::slice::from_raw_parts_mut(base.add(yo), n)) };
    launch(
        exec(),
        k,
        [n.div_ceil(per_block) as u32, 1, 1],
        block,
        0,
        &mut [Arg::Buf(as_bytes(x)), Arg::Buf(as_bytes(y)), Arg::F32(2.0), Arg::U32(n as u32)],
    )
    .expect("params")
    .expect("launch");
}

#[test]
fn own_element_kernels_run_thread_by_thread_when_the_launch_allows_and_as_warps_otherwise() {
    for tier in [Tier::Fast, Tier::Optimized] {
        let p = program(WarpMode::Auto, tier);
        let k = p.kernel("axpy").expect("kernel");
        assert!(runs_on_the_fast_path(k), "the block function chooses per launch");
        let start: Vec<f32> = (0..4096).map(|i| (i % 97) as f32).collect();

        // Separate arrays, far apart: the fast path's results.
        let mut buf = start.clone();
        axpy(k, &mut buf, 0, 2048, 2048, [256, 1, 1]);
        assert!((0..2048).all(|i| buf[2048 + i] == 2.0 * start[i] + start[2048 + i]), "{tier:?}");

        // x and y the same array: each lane reads and writes its own element.
        let mut buf = start.clone();
        axpy(k, &mut buf, 0, 0, 1024, [128, 1, 1]);
        assert!((0..1024).all(|i| buf[i] == 3.0 * start[i]), "{tier:?}");

        // y one element past x, in one warp: lane i reads x[i] = y[i - 1],
        // which lane i - 1 stores. A converged warp loads every x before
        // storing any y; one thread after another would see the stores.
        let mut buf = start.clone();
        axpy(k, &mut buf, 0, 1, 32, [32, 1, 1]);
        for i in 0..32 {
            assert_eq!(buf[1 + i], 2.0 * start[i] + start[1 + i], "element {i}, {tier:?}");
        }

        // A block of 16 x 2 threads: the kernel indexes with %tid.x only,
        // so both rows of the warp update the same 16 elements together,
        // each once as a converged warp does (thread by thread would add
        // twice).
        let mut buf = start.clone();
        axpy(k, &mut buf, 0, 2048, 16, [16, 2, 1]);
        for i in 0..16 {
            assert_eq!(buf[2048 + i], 2.0 * start[i] + start[2048 + i], "element {i}, {tier:?}");
        }
    }
}

/// Runs `widen` over `buf` (as 32-bit words) with `in` at word `io` and
/// `out` at word `oo`, `n` elements, in blocks of `block` threads.
fn widen(k: &LoadedKernel, buf: &mut [i32], io: usize, oo: usize, n: usize, block: u32) {
    let base = buf.as_mut_ptr();
    // SAFETY: both views lie inside `buf`, which outlives the launch; the
    // kernel may write through the overlap, as the test intends.
    let (inp, out) = unsafe { (std::slice::from_raw_parts_mut(base.add(io), n), std::slice::from_raw_parts_mut(base.add(oo), 2 * n)) };
    launch(
        exec(),
        k,
        [n.div_ceil(block as usize) as u32, 1, 1],
        [block, 1, 1],
        0,
        &mut [Arg::Buf(as_bytes(inp)), Arg::Buf(as_bytes(out)), Arg::U32(n as u32)],
    )
    .expect("params")
    .expect("launch");
}

fn word_pairs(buf: &[i32], at: usize, n: usize) -> Vec<i64> {
    (0..n).map(|i| (buf[at + 2 * i] as u32 as i64) | ((buf[at + 2 * i + 1] as i64) << 32)).collect()
}

#[test]
fn different_strides_run_thread_by_thread_when_the_launch_ranges_are_apart_and_as_warps_otherwise() {
    for tier in [Tier::Fast, Tier::Optimized] {
        let p = program(WarpMode::Auto, tier);
        let k = p.kernel("widen").expect("kernel");
        assert!(runs_on_the_fast_path(k), "the block function chooses per launch");
        let start: Vec<i32> = (0..3 * 4096).map(|i| i * 7 - 3000).collect();

        // `out` just past `in` (8 blocks of 256 threads): the ranges touch.
        let mut buf = start.clone();
        widen(k, &mut buf, 0, 2048, 2048, 256);
        assert_eq!(word_pairs(&buf, 2048, 2048), start[..2048].iter().map(|&v| i64::from(v)).collect::<Vec<_>>(), "{tier:?}");

        // `out` over `in`, one warp: lane i stores over what lanes 2i and
        // 2i + 1 load. A converged warp loads every element first; thread
        // by thread, lane 1 would load the high word lane 0 stored.
        let mut buf = start.clone();
        widen(k, &mut buf, 0, 0, 32, 32);
        assert_eq!(word_pairs(&buf, 0, 32), start[..32].iter().map(|&v| i64::from(v)).collect::<Vec<_>>(), "{tier:?}");

        // `out` starting at `in`'s last element: lane 0's store covers the
        // element lane 31 loads.
        let mut buf = start.clone();
        widen(k, &mut buf, 64, 64 + 31, 32, 32);
        assert_eq!(word_pairs(&buf, 64 + 31, 32), start[64..96].iter().map(|&v| i64::from(v)).collect::<Vec<_>>(), "{tier:?}");
    }
}

/// The padding's loads (`too_big_for_warp_mode_with`).
const PAD_LOADS: usize = 70;

/// Seventy branches over loads of a buffer of zeros (`%rd3`), adding them
/// to `%r6`: enough blocks, registers and accesses (more than warp mode's
/// 64) that warp mode refuses the kernel as too big. `load` is the loads'
/// instruction. Registers `%r30`-`%r179` and predicates `%p0`-`%p69` are
/// the padding's.
fn too_big_for_warp_mode_with(load: &str) -> String {
    let mut pad = String::new();
    for k in 0..PAD_LOADS {
        pad.push_str(&format!(
            "{load} %r{a}, [%rd3+{off}];\nsetp.eq.u32 %p{k}, %r{a}, 0;\n@%p{k} bra $SKIP{k};\n\
             add.u32 %r6, %r6, %r{a};\nmul.lo.u32 %r{b}, %r6, %r{a};\nxor.b32 %r6, %r6, %r{b};\n$SKIP{k}:\n",
            a = 30 + k,
            b = 110 + k,
            off = 4 * k
        ));
    }
    pad
}

/// A kernel `name(inp, out, pad)` whose body starts by loading its
/// global index's element of `inp` (with `load`) into `%r5`, plus the
/// padding, then runs `rest`; `%r1` is `%tid.x`, `%r4` the global index,
/// `%rd4` its byte offset, `%rd2` the output.
fn too_big_kernel(name: &str, load: &str, rest: &str) -> String {
    let pad = too_big_for_warp_mode_with(load);
    format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n\
         .visible .entry {name}(.param .u64 inp, .param .u64 out, .param .u64 pad)\n{{\n\
         .reg .b32 %r<200>;\n.reg .b64 %rd<20>;\n.reg .pred %p<80>;\n.shared .align 4 .b32 s[1024];\n\
         ld.param.u64 %rd1, [inp];\nld.param.u64 %rd2, [out];\nld.param.u64 %rd3, [pad];\n\
         mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.s32 %r4, %r2, %r3, %r1;\n\
         mul.wide.u32 %rd4, %r4, 4;\nadd.s64 %rd5, %rd1, %rd4;\n{load} %r5, [%rd5];\nmov.u32 %r6, 0;\n\
         {pad}add.u32 %r5, %r5, %r6;\n{rest}\n}}\n"
    )
}

/// Launches `k(inp, out, pad)` on `blocks` x `threads` with `pad`
/// holding a zero for each of the padding's loads.
fn launch_too_big(k: &LoadedKernel, blocks: u32, threads: u32, inp: &mut [u32], out: &mut [u32]) {
    let mut zeros = vec![0u32; PAD_LOADS];
    launch(
        exec(),
        k,
        [blocks, 1, 1],
        [threads, 1, 1],
        0,
        &mut [Arg::Buf(as_bytes(inp)), Arg::Buf(as_bytes(out)), Arg::Buf(as_bytes(&mut zeros))],
    )
    .expect("params")
    .expect("launch");
}

/// A kernel too big for warp mode whose lanes exchange values through
/// shared memory with no barrier, in the shape of llama.cpp's
/// FlashAttention tiles: each round every lane stores its value, reads its
/// neighbour's, and the next round overwrites the tile. Thread by thread
/// the lanes meet before the load (a read after another lane's write) and
/// before the store (the next round's write after the last round's reads),
/// so the results are a GPU's warp in lockstep: every lane reads its
/// neighbour's value of the same round.
#[test]
fn a_kernel_too_big_for_warp_mode_keeps_its_lanes_in_step_through_shared_memory() {
    let src = too_big_kernel(
        "rotate_rounds",
        "ld.global.u32",
        "and.b32 %r7, %r1, 31;\nand.b32 %r8, %r1, -32;\nadd.u32 %r10, %r7, 1;\nand.b32 %r10, %r10, 31;\nadd.u32 %r10, %r10, %r8;\n\
         mov.u32 %r11, s;\nshl.b32 %r12, %r1, 2;\nadd.u32 %r20, %r11, %r12;\nshl.b32 %r13, %r10, 2;\nadd.u32 %r21, %r11, %r13;\n\
         mov.u32 %r9, 0;\n$ROUND:\nst.shared.u32 [%r20], %r5;\nld.shared.u32 %r22, [%r21];\nmad.lo.u32 %r5, %r22, 3, %r9;\n\
         add.u32 %r9, %r9, 1;\nsetp.lt.u32 %p79, %r9, 4;\n@%p79 bra $ROUND;\n\
         add.s64 %rd6, %rd2, %rd4;\nst.global.u32 [%rd6], %r5;\nret;",
    );
    // Every mode but `ANYCUDA_WARP=0` keeps the lanes in step.
    let configurations = [
        (WarpMode::Auto, Tier::Fast),
        (WarpMode::Auto, Tier::Optimized),
        (WarpMode::WhereThreadsWait, Tier::Fast),
        (WarpMode::Always, Tier::Fast),
    ];
    for (warp, tier) in configurations {
        let p =
            Program::from_source_with(&src, &Options { warp, tier, strict_affine: false, memcheck: false }).expect("the kernel compiles");
        let k = p.kernel("rotate_rounds").expect("kernel");
        assert!(k.info.lanes == 1 && k.info.needs_scheduler, "thread by thread on the scheduler: {:?}", k.info);
        let (blocks, threads) = (3u32, 128u32);
        let n = (blocks * threads) as usize;
        let inp = input(n);
        let mut out = vec![0u32; n];
        launch_too_big(k, blocks, threads, &mut inp.clone(), &mut out);
        // The warp in lockstep: every round, all lanes store, then all read.
        let mut want = inp.clone();
        for round in 0..4u32 {
            let tile = want.clone();
            for g in 0..n {
                let neighbour = (g & !31) | ((g + 1) & 31);
                want[g] = tile[neighbour].wrapping_mul(3).wrapping_add(round);
            }
        }
        assert_eq!(out, want, "{warp:?} {tier:?}");
    }
}

/// A lane that spins until another lane of its warp sets a flag, in a
/// kernel whose lanes meet: the flag's writer meets first (its read after
/// its write), and the spinning lane never gets there. The meeting goes on
/// with the lanes that reached it once every runnable thread only spins,
/// as a GPU's diverged warp runs its other path, instead of waiting
/// forever.
#[test]
fn a_meeting_does_not_wait_for_a_lane_that_spins_on_it() {
    let src = too_big_kernel(
        "spin_on_a_lane",
        "ld.global.u32",
        "and.b32 %r7, %r1, 31;\nshr.u32 %r8, %r1, 5;\nshl.b32 %r8, %r8, 4;\nmov.u32 %r11, s;\nadd.u32 %r11, %r11, %r8;\n\
         setp.eq.u32 %p70, %r7, 0;\n@%p70 bra $SPIN;\nsetp.eq.u32 %p71, %r7, 1;\n@%p71 bra $PRODUCE;\nbra $DONE;\n\
         $PRODUCE:\nst.shared.u32 [%r11+8], %r5;\nld.shared.u32 %r23, [%r11+8];\nadd.u32 %r5, %r23, 1;\n\
         st.volatile.shared.u32 [%r11], 1;\nbra $DONE;\n\
         $SPIN:\nld.volatile.shared.u32 %r24, [%r11];\nsetp.eq.u32 %p72, %r24, 0;\n@%p72 bra $SPIN;\n\
         ld.shared.u32 %r5, [%r11+8];\n\
         $DONE:\nadd.s64 %rd6, %rd2, %rd4;\nst.global.u32 [%rd6], %r5;\nret;",
    );
    let p = Program::from_source_with(&src, &Options { warp: WarpMode::Auto, tier: Tier::Fast, strict_affine: false, memcheck: false })
        .expect("the kernel compiles");
    let k = p.kernel("spin_on_a_lane").expect("kernel");
    assert!(k.info.lanes == 1 && k.info.needs_scheduler, "thread by thread on the scheduler: {:?}", k.info);
    let (blocks, threads) = (2u32, 64u32);
    let n = (blocks * threads) as usize;
    let inp = input(n);
    let mut out = vec![0u32; n];
    launch_too_big(k, blocks, threads, &mut inp.clone(), &mut out);
    for g in 0..n {
        let want = match g % 32 {
            0 => inp[g + 1],
            1 => inp[g].wrapping_add(1),
            _ => inp[g],
        };
        assert_eq!(out[g], want, "thread {g}");
    }
}

/// A kernel too big for warp mode that stores twice through an index it
/// loads (the lockstep analysis cannot keep one lane's second store from
/// another lane's first, as in a ray tracer's colour stores) but reads
/// only read-only memory: no lane can read what another wrote or
/// overwrite what another read, so no meeting is needed and it keeps the
/// fast path, with a GPU's results.
#[test]
fn a_kernel_too_big_for_warp_mode_without_conflicting_accesses_keeps_the_fast_path() {
    let src = too_big_kernel(
        "scatter",
        "ld.global.nc.u32",
        "mul.wide.u32 %rd6, %r5, 8;\nadd.s64 %rd7, %rd2, %rd6;\nst.global.u32 [%rd7], %r4;\nadd.u32 %r7, %r4, 1000;\n\
         st.global.u32 [%rd7+4], %r7;\nret;",
    );
    let p = Program::from_source_with(&src, &Options { warp: WarpMode::Auto, tier: Tier::Fast, strict_affine: false, memcheck: false })
        .expect("the kernel compiles");
    let k = p.kernel("scatter").expect("kernel");
    assert!(runs_on_the_fast_path(k), "{:?}", k.info);
    let (blocks, threads) = (3u32, 64u32);
    let n = (blocks * threads) as usize;
    // A permutation: out[2 perm[g]] = g, out[2 perm[g] + 1] = g + 1000.
    let mut perm: Vec<u32> = (0..n as u32).map(|g| (g * 37 + 11) % n as u32).collect();
    let mut out = vec![u32::MAX; 2 * n];
    launch_too_big(k, blocks, threads, &mut perm, &mut out);
    for g in 0..n {
        let at = 2 * perm[g] as usize;
        assert_eq!((out[at], out[at + 1]), (g as u32, g as u32 + 1000), "thread {g}");
    }
}
