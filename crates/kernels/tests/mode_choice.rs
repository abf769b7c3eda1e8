//! How a kernel whose threads are independent is run: thread by thread
//! (the loop over a block's threads, which LLVM vectorises when its body
//! has no loop of its own), or, in the optimised tier, as warps when every
//! lane goes round the kernel's loops alike (`warp::loops_run_alike`), so
//! that the loops' iterations are vector code, and kernels without loops
//! that divide by 64-bit values (`warp::divides_by_wide_registers`). Both
//! give the model's results.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

/// Horner's rule per thread over `n` coefficients (a loop every lane runs
/// `n` times), then a loop whose count depends on the thread (`x & 7`).
const KERNELS: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry horner(.param .u64 pc, .param .u64 pout, .param .u32 pn)
{
.reg .pred %p<3>;
.reg .b32 %r<16>;
.reg .b64 %rd<8>;
ld.param.u64 %rd0, [pc];
ld.param.u64 %rd1, [pout];
ld.param.u32 %r0, [pn];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %tid.x;
mad.lo.u32 %r4, %r1, %r2, %r3;
mul.lo.u32 %r5, %r4, 2654435761;
mov.u32 %r6, 0;
mov.u32 %r7, 0;
setp.eq.u32 %p0, %r0, 0;
@%p0 bra DONE;
LOOP:
mul.wide.u32 %rd2, %r7, 4;
add.u64 %rd3, %rd0, %rd2;
ld.global.nc.u32 %r8, [%rd3];
mad.lo.u32 %r6, %r6, %r5, %r8;
add.u32 %r7, %r7, 1;
setp.lt.u32 %p1, %r7, %r0;
@%p1 bra LOOP;
DONE:
mul.wide.u32 %rd4, %r4, 4;
add.u64 %rd5, %rd1, %rd4;
st.global.u32 [%rd5], %r6;
ret;
}
.visible .entry own_count(.param .u64 pout)
{
.reg .pred %p<2>;
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [pout];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %tid.x;
mad.lo.u32 %r4, %r1, %r2, %r3;
and.b32 %r5, %r4, 7;
mov.u32 %r6, 1;
LOOP:
mul.lo.u32 %r6, %r6, 3;
sub.u32 %r5, %r5, 1;
setp.ne.u32 %p1, %r5, -1;
@%p1 bra LOOP;
mul.wide.u32 %rd2, %r4, 4;
add.u64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r6;
ret;
}
.visible .entry wide_index(.param .u64 pout, .param .u64 pd)
{
.reg .pred %p<2>;
.reg .b32 %r<12>;
.reg .b64 %rd<12>;
ld.param.u64 %rd1, [pout];
ld.param.u64 %rd2, [pd];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %tid.x;
mad.lo.u32 %r4, %r1, %r2, %r3;
cvt.u64.u32 %rd3, %r4;
mul.lo.u64 %rd3, %rd3, 2654435761;
or.b64 %rd4, %rd3, %rd2;
and.b64 %rd5, %rd4, -4294967296;
setp.eq.s64 %p1, %rd5, 0;
@%p1 bra FAST;
div.u64 %rd6, %rd3, %rd2;
bra.uni JOIN;
FAST:
cvt.u32.u64 %r5, %rd2;
cvt.u32.u64 %r6, %rd3;
div.u32 %r7, %r6, %r5;
cvt.u64.u32 %rd6, %r7;
JOIN:
mul.lo.u64 %rd7, %rd6, %rd2;
sub.u64 %rd8, %rd3, %rd7;
xor.b64 %rd9, %rd8, %rd6;
mul.wide.u32 %rd10, %r4, 8;
add.u64 %rd11, %rd1, %rd10;
st.global.u64 [%rd11], %rd9;
ret;
}
"#;

#[test]
fn loops_every_lane_runs_alike_run_as_warps_in_the_optimised_tier() {
    let exec = Executor::global();
    let coefficients: Vec<u32> = (0..37u32).map(|k| k.wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995).collect();
    let (blocks, ntid) = (5u32, 96u32);
    let n = (blocks * ntid) as usize;
    let horner: Vec<u32> = (0..n as u32)
        .map(|i| {
            let x = i.wrapping_mul(2_654_435_761);
            coefficients.iter().fold(0u32, |acc, &c| acc.wrapping_mul(x).wrapping_add(c))
        })
        .collect();
    let own: Vec<u32> = (0..n as u32).map(|i| 3u32.pow((i & 7) + 1)).collect();
    for (tier, horner_lanes) in [(Tier::Fast, 1), (Tier::Optimized, 32)] {
        let options = Options { warp: WarpMode::Auto, tier, strict_affine: false, memcheck: false };
        let p = Program::from_source_with(KERNELS, &options).unwrap_or_else(|e| panic!("compiles ({tier:?}): {e}"));
        let k = p.kernel("horner").expect("kernel `horner`");
        assert_eq!(k.info.lanes, horner_lanes, "{tier:?}: how horner runs");
        for count in [coefficients.len(), 0] {
            let mut c = coefficients.clone();
            let mut out = vec![0xdead_beefu32; n];
            launch(
                exec,
                k,
                [blocks, 1, 1],
                [ntid, 1, 1],
                0,
                &mut [Arg::Buf(as_bytes(&mut c)), Arg::Buf(as_bytes(&mut out)), Arg::U32(count as u32)],
            )
            .expect("arguments")
            .expect("launch");
            let expected: Vec<u32> = if count == 0 { vec![0; n] } else { horner.clone() };
            assert_eq!(out, expected, "{tier:?}, {count} coefficients");
        }
        // A loop whose count is the thread's own stays thread by thread.
        let k = p.kernel("own_count").expect("kernel `own_count`");
        assert_eq!(k.info.lanes, 1, "{tier:?}: how own_count runs");
        let mut out = vec![0u32; n];
        launch(exec, k, [blocks, 1, 1], [ntid, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("arguments").expect("launch");
        assert_eq!(out, own, "{tier:?}");
    }
}

/// An element-wise kernel whose index arithmetic divides by a 64-bit
/// parameter through nvcc's 32-bit fast path: thread by thread in the fast
/// tier, as warps in the optimised one, both exact on either path.
#[test]
fn wide_divisions_without_loops_run_as_warps_in_the_optimised_tier() {
    let exec = Executor::global();
    let (blocks, ntid) = (4u32, 96u32);
    let n = (blocks * ntid) as usize;
    for (tier, lanes) in [(Tier::Fast, 1), (Tier::Optimized, 32)] {
        let options = Options { warp: WarpMode::Auto, tier, strict_affine: false, memcheck: false };
        let p = Program::from_source_with(KERNELS, &options).unwrap_or_else(|e| panic!("compiles ({tier:?}): {e}"));
        let k = p.kernel("wide_index").expect("kernel `wide_index`");
        assert_eq!(k.info.lanes, lanes, "{tier:?}: how wide_index runs");
        // 1000: most lanes take the fast path, the rest (products past
        // 2^32) the 64-bit one; 2^33 + 7: every lane the 64-bit one.
        for d in [1000u64, (1 << 33) + 7, 3] {
            let mut out = vec![0u64; n];
            launch(exec, k, [blocks, 1, 1], [ntid, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out)), Arg::U64(d)])
                .expect("arguments")
                .expect("launch");
            let expected: Vec<u64> = (0..n as u64)
                .map(|i| {
                    let x = i * 2_654_435_761;
                    (x % d) ^ (x / d)
                })
                .collect();
            assert_eq!(out, expected, "{tier:?}, divisor {d}");
        }
    }
}
