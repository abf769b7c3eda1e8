//! Warps of a block take turns in grid-stride loops (warp mode,
//! `layout::grid_stride_loop`, `warp::TURN_BYTES`): each iteration of the
//! kernels below sums one element and takes the next number of a counter
//! in global memory (a warp's lanes read it together and write it once
//! more; the warps of a block run on one runner, so the numbers show the
//! order in which the block's warps ran their iterations). A warp that ran
//! its whole loop before the next warp started would take every number
//! below the next warp's first; with turns, the block's second warp runs
//! its first iteration before the first warp reaches its last. Both on
//! the warp path (a barrier after the loop) and in the block function of
//! a kernel that never waits. The sums are exact whatever the order:
//! blocks whose last warp is partial, lanes leaving the loop at different
//! iterations, both tiers.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

/// `out[gid] = sum of in[i] for i = gid, gid + grid, ... < n`, with
/// `order[i]` the counter's number at element `i`; TAIL after the loop (a
/// barrier: the kernel waits, so it runs on the warp path).
const KERNEL: &str = r#".version 8.5
.target sm_80
.address_size 64
.visible .entry sum(.param .u64 pin, .param .u64 pout, .param .u64 porder, .param .u64 pcount, .param .u32 n)
{
.reg .b32 %r<16>;
.reg .b64 %rd<16>;
.reg .pred %p<4>;
ld.param.u64 %rd1, [pin];
ld.param.u64 %rd2, [pout];
ld.param.u64 %rd3, [porder];
ld.param.u64 %rd4, [pcount];
ld.param.u32 %r1, [n];
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %ntid.x;
mov.u32 %r4, %tid.x;
mad.lo.u32 %r5, %r2, %r3, %r4;
mov.u32 %r6, %nctaid.x;
mul.lo.u32 %r7, %r6, %r3;
mov.u32 %r8, 0;
mov.u32 %r9, %r5;
setp.ge.u32 %p1, %r9, %r1;
@%p1 bra DONE;
LOOP:
mul.wide.u32 %rd5, %r9, 4;
add.s64 %rd6, %rd1, %rd5;
ld.global.u32 %r10, [%rd6];
add.u32 %r8, %r8, %r10;
ld.volatile.global.u32 %r11, [%rd4];
add.s64 %rd7, %rd3, %rd5;
st.global.u32 [%rd7], %r11;
add.u32 %r12, %r11, 1;
st.volatile.global.u32 [%rd4], %r12;
add.u32 %r9, %r9, %r7;
setp.lt.u32 %p2, %r9, %r1;
@%p2 bra LOOP;
DONE:
TAIL
mul.wide.u32 %rd8, %r5, 4;
add.s64 %rd9, %rd2, %rd8;
st.global.u32 [%rd9], %r8;
ret;
}
"#;

#[test]
fn warps_of_a_block_take_turns_in_grid_stride_loops() {
    let exec = Executor::global();
    for (tier, tail) in [Tier::Fast, Tier::Optimized].into_iter().flat_map(|t| [(t, "bar.sync 0;"), (t, "")]) {
        let options = Options { warp: WarpMode::Always, tier, strict_affine: false, memcheck: false };
        let p = Program::from_source_with(&KERNEL.replace("TAIL", tail), &options).expect("compiles");
        let kernel = p.kernel("sum").expect("kernel");
        assert_eq!(kernel.info.lanes, 32, "runs as warps");
        assert_eq!(kernel.info.needs_scheduler, !tail.is_empty(), "the warp path only with the barrier");
        // (blocks, threads, n): one block of two warps, 64 iterations
        // each; several blocks with a partial last warp and lanes that
        // leave the loop one iteration before the others.
        for (blocks, threads, n) in [(1u32, 64u32, 64 * 64u32), (3, 80, 3 * 80 * 37 + 101)] {
            let what =
                format!("{tier:?}, {}, {blocks} blocks of {threads}, n = {n}", if tail.is_empty() { "no barrier" } else { "barrier" });
            let mut input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
            let grid = (blocks * threads) as usize;
            let mut out = vec![0u32; grid];
            let mut order = vec![u32::MAX; n as usize];
            let mut count = [0u32; 1];
            launch(
                exec,
                kernel,
                [blocks, 1, 1],
                [threads, 1, 1],
                0,
                &mut [
                    Arg::Buf(as_bytes(&mut input)),
                    Arg::Buf(as_bytes(&mut out)),
                    Arg::Buf(as_bytes(&mut order)),
                    Arg::Buf(as_bytes(&mut count)),
                    Arg::U32(n),
                ],
            )
            .expect("packs")
            .expect("runs");
            let want: Vec<u32> = (0..grid).map(|t| (t..n as usize).step_by(grid).fold(0u32, |s, i| s.wrapping_add(input[i]))).collect();
            assert_eq!(out, want, "sums, {what}");
            if blocks == 1 {
                assert_eq!(count[0], 2 * 64, "one number per warp and iteration, {what}");
                // Element 32 is the second warp's first iteration; element
                // 63 * 64 the first warp's last.
                assert!(
                    order[32] < order[63 * 64],
                    "the second warp started ({}) after the first finished its loop ({}), {what}",
                    order[32],
                    order[63 * 64]
                );
                // Each warp's iterations in order.
                for w in 0..2 {
                    let firsts: Vec<u32> = (0..64).map(|k| order[k * 64 + w * 32]).collect();
                    assert!(firsts.windows(2).all(|p| p[0] < p[1]), "warp {w}'s iterations out of order, {what}");
                }
            }
        }
    }
}
