//! Warp-uniform registers (`compiler::uniform`): warp mode keeps values
//! every lane of a warp shares as one scalar. Checked against a model of
//! the kernel written here, in thread mode and in warp mode, both tiers,
//! over blocks whose last warp is partial, where the shared values are
//! written by lanes that exclude lane 0, under a uniform guard that is
//! false in some warps, by a division whose idle lanes do not compute,
//! loaded through a uniform address by part of a warp, kept across a
//! barrier, and read inside a loop only some lanes run.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry u(.param .u64 pin, .param .u64 pout, .param .u32 pn)
{
.reg .b32 %r<32>;
.reg .b64 %rd<16>;
.reg .pred %p<8>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
ld.param.u32 %r0, [pn];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %tid.x;
mad.lo.u32 %r4, %r1, %r2, %r3;
setp.ge.u32 %p0, %r4, %r0;
@%p0 bra DONE;
mul.wide.u32 %rd2, %r4, 4;
add.u64 %rd3, %rd0, %rd2;
ld.global.u32 %r5, [%rd3];
mul.lo.u32 %r6, %r1, %r2;
mul.wide.u32 %rd4, %r6, 4;
add.u64 %rd5, %rd0, %rd4;
ld.global.nc.u32 %r7, [%rd5];
mul.hi.u32 %r8, %r7, -1431655765;
setp.lt.u32 %p1, %r7, -2147483648;
selp.b32 %r9, %r8, %r7, %p1;
mov.u32 %r10, 11;
@%p1 mov.u32 %r10, 22;
and.b32 %r15, %r7, 7;
add.u32 %r21, %r15, 1;
and.b32 %r11, %r3, 1;
setp.eq.u32 %p2, %r11, 0;
mov.u32 %r12, 0;
mov.u32 %r14, 0;
@%p2 bra EVEN;
xor.b32 %r13, %r9, %r1;
div.u32 %r20, %r9, %r21;
add.u32 %r12, %r13, %r5;
add.u32 %r12, %r12, %r20;
mul.wide.u32 %rd6, %r1, 4;
add.u64 %rd7, %rd0, %rd6;
ld.global.nc.u32 %r14, [%rd7];
EVEN:
bar.sync 0;
mov.u32 %r16, 0;
mov.u32 %r17, 0;
LOOP:
add.u32 %r17, %r17, %r16;
add.u32 %r16, %r16, 1;
setp.le.u32 %p3, %r16, %r15;
@%p3 bra LOOP;
and.b32 %r18, %r5, 15;
mov.u32 %r19, 0;
DL:
setp.eq.u32 %p4, %r18, 0;
@%p4 bra DLX;
add.u32 %r19, %r19, %r9;
sub.u32 %r18, %r18, 1;
bra.uni DL;
DLX:
mul.wide.u32 %rd8, %r4, 28;
add.u64 %rd9, %rd1, %rd8;
st.global.u32 [%rd9], %r9;
st.global.u32 [%rd9+4], %r10;
st.global.u32 [%rd9+8], %r12;
st.global.u32 [%rd9+12], %r14;
st.global.u32 [%rd9+16], %r17;
st.global.u32 [%rd9+20], %r19;
st.global.u32 [%rd9+24], %r7;
DONE:
ret;
}
"#;

const OUTS: usize = 7;

/// What thread `i` (block `c`, thread `t` of blocks of `ntid`) writes.
fn model(input: &[u32], i: usize, ntid: usize) -> [u32; OUTS] {
    let (c, t) = (i / ntid, i % ntid);
    let a = input[i];
    let r7 = input[c * ntid];
    let r8 = ((u64::from(r7) * 0xaaaa_aaab) >> 32) as u32;
    let p1 = r7 < 0x8000_0000;
    let r9 = if p1 { r8 } else { r7 };
    let r10 = if p1 { 22 } else { 11 };
    let r15 = r7 & 7;
    let odd = t & 1 == 1;
    let r12 = if odd { (r9 ^ c as u32).wrapping_add(a).wrapping_add(r9 / (r15 + 1)) } else { 0 };
    let r14 = if odd { input[c] } else { 0 };
    let r17 = (0..=r15).sum::<u32>();
    let r19 = (a & 15).wrapping_mul(r9);
    [r9, r10, r12, r14, r17, r19, r7]
}

#[test]
fn warp_uniform_values_match_the_model_in_every_mode() {
    let exec = Executor::global();
    // Two launches: blocks of 64 threads, the last block 8 threads short
    // of whole (its second warp has no live lanes, its first eight), and
    // blocks of 96.
    for (n, ntid, seed) in [(200usize, 64usize, 1u64), (300, 96, 7)] {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let input: Vec<u32> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u32
            })
            .collect();
        let expected: Vec<u32> = (0..n).flat_map(|i| model(&input, i, ntid)).collect();
        // Both halves of the uniform guard and of the sign test occur.
        assert!(
            input.iter().step_by(ntid).any(|&v| v < 0x8000_0000) && input.iter().step_by(ntid).any(|&v| v >= 0x8000_0000) || n < 4 * ntid
        );
        for warp in [WarpMode::Off, WarpMode::Always] {
            for tier in [Tier::Fast, Tier::Optimized] {
                let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                    .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
                let k = p.kernel("u").expect("kernel `u`");
                assert_eq!(k.info.lanes, if warp == WarpMode::Always { 32 } else { 1 }, "{warp:?}");
                let mut inp = input.clone();
                let mut out = vec![0xcdcd_cdcdu32; n * OUTS];
                launch(
                    exec,
                    k,
                    [n.div_ceil(ntid) as u32, 1, 1],
                    [ntid as u32, 1, 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out)), Arg::U32(n as u32)],
                )
                .expect("arguments")
                .expect("launch");
                for i in 0..n {
                    let (g, e) = (&out[i * OUTS..(i + 1) * OUTS], &expected[i * OUTS..(i + 1) * OUTS]);
                    assert_eq!(g, e, "thread {i} ({warp:?}, {tier:?}, blocks of {ntid})");
                }
            }
        }
    }
}
