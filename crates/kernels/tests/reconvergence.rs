//! Where the lanes of a warp run together again after a divergent branch
//! (warp mode, `compiler::warp`): at the first block they all reach, with
//! the lanes that wait for a later block kept apart until then. Observed
//! with `activemask` in each block of an if-then, of a nested diamond whose
//! two inner paths meet at different blocks, and of a loop whose lanes
//! leave after different counts, then with a shuffle after the loop.
//! Checked against a model of the lowest-block-first order, both tiers,
//! blocks of whole warps and a block whose second warp is half live.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry r(.param .u64 pout)
{
.reg .b32 %r<32>;
.reg .b64 %rd<4>;
.reg .pred %p<4>;
ld.param.u64 %rd0, [pout];
mov.u32 %r0, %tid.x;
and.b32 %r1, %r0, 31;
mov.u32 %r10, 0;
mov.u32 %r12, 0;
mov.u32 %r13, 0;
mov.u32 %r14, 0;
setp.lt.u32 %p0, %r1, 10;
@%p0 bra J1;
activemask.b32 %r10;
J1:
activemask.b32 %r11;
rem.u32 %r2, %r1, 3;
setp.eq.u32 %p1, %r2, 0;
@%p1 bra FAR;
activemask.b32 %r12;
and.b32 %r3, %r1, 1;
setp.eq.u32 %p2, %r3, 0;
@%p2 bra FAR2;
activemask.b32 %r13;
FAR:
activemask.b32 %r14;
FAR2:
activemask.b32 %r15;
and.b32 %r4, %r1, 3;
mov.u32 %r5, 0;
mov.u32 %r16, 0;
LOOP:
activemask.b32 %r6;
xor.b32 %r7, %r16, %r6;
shl.b32 %r16, %r7, 1;
add.u32 %r16, %r16, %r6;
add.u32 %r5, %r5, 1;
setp.le.u32 %p3, %r5, %r4;
@%p3 bra LOOP;
activemask.b32 %r17;
add.u32 %r8, %r1, 1;
and.b32 %r8, %r8, 31;
shfl.sync.idx.b32 %r18, %r16, %r8, 31, %r17;
mul.wide.u32 %rd1, %r0, 36;
add.u64 %rd2, %rd0, %rd1;
st.global.u32 [%rd2], %r10;
st.global.u32 [%rd2+4], %r11;
st.global.u32 [%rd2+8], %r12;
st.global.u32 [%rd2+12], %r13;
st.global.u32 [%rd2+16], %r14;
st.global.u32 [%rd2+20], %r15;
st.global.u32 [%rd2+24], %r16;
st.global.u32 [%rd2+28], %r17;
st.global.u32 [%rd2+32], %r18;
ret;
}
"#;

const OUTS: usize = 9;

/// The lanes of `live` for which `f` holds, as a mask.
fn lanes(live: u32, f: impl Fn(u32) -> bool) -> u32 {
    (0..32).filter(|&l| live & (1 << l) != 0 && f(l)).fold(0, |m, l| m | (1 << l))
}

/// What each lane of a warp whose live lanes are `live` writes.
fn model(live: u32) -> Vec<[u32; OUTS]> {
    let then = |l: u32| l >= 10;
    let mid = |l: u32| !l.is_multiple_of(3);
    let mid2 = |l: u32| !l.is_multiple_of(3) && l % 2 == 1;
    let far = |l: u32| l.is_multiple_of(3) || mid2(l);
    // The loop's value: lane l goes round (l & 3) + 1 times, each time
    // with the lanes still in the loop.
    let looped = |l: u32| {
        (0..=(l & 3)).fold(0u32, |v, i| {
            let m = lanes(live, |k| k & 3 >= i);
            ((v ^ m) << 1).wrapping_add(m)
        })
    };
    (0..32)
        .map(|l| {
            let only = |on: bool, m: u32| if on { m } else { 0 };
            let src = (l + 1) % 32;
            // A source lane outside the mask gives the lane's own value
            // (nothing to read); the model checks whole warps for it.
            let shuffled = if live & (1 << src) != 0 { looped(src) } else { looped(l) };
            [
                only(then(l), lanes(live, then)),
                live,
                only(mid(l), lanes(live, mid)),
                only(mid2(l), lanes(live, mid2)),
                only(far(l), lanes(live, far)),
                live,
                looped(l),
                live,
                shuffled,
            ]
        })
        .collect()
}

#[test]
fn lanes_run_together_again_at_the_first_block_they_all_reach() {
    let exec = Executor::global();
    for ntid in [64u32, 48] {
        let n = ntid as usize;
        let mut expected = Vec::new();
        for w in 0..n.div_ceil(32) {
            let count = (n - 32 * w).min(32);
            let live = if count == 32 { u32::MAX } else { (1u32 << count) - 1 };
            expected.extend(model(live).into_iter().take(count));
        }
        for tier in [Tier::Fast, Tier::Optimized] {
            let options = Options { warp: WarpMode::Always, tier, strict_affine: false, memcheck: false };
            let p = Program::from_source_with(KERNEL, &options).unwrap_or_else(|e| panic!("compiles ({tier:?}): {e}"));
            let k = p.kernel("r").expect("kernel `r`");
            assert_eq!(k.info.lanes, 32, "runs as warps");
            let mut out = vec![0xcdcd_cdcdu32; n * OUTS];
            launch(exec, k, [1, 1, 1], [ntid, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("arguments").expect("launch");
            for (t, e) in expected.iter().enumerate() {
                let g = &out[t * OUTS..(t + 1) * OUTS];
                // The shuffle's source may be outside a partial warp.
                let checked = if (t / 32 + 1) * 32 <= n { OUTS } else { OUTS - 1 };
                assert_eq!(&g[..checked], &e[..checked], "thread {t} ({tier:?}, blocks of {ntid})");
            }
        }
    }
}
