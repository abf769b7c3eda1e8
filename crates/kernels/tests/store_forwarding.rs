//! Store-to-load forwarding of a warp's own stores (`compiler::forwarding`):
//! a warp-synchronous scan in `volatile` shared memory, then loads that
//! must not be forwarded, or only partly: after a store through another
//! register that overlaps, after a store through a fixed address or an
//! atomic, after a store only some lanes made, after the address register
//! was rewritten, after a byte store into the recorded words, after a
//! float store over them (forwarded as its bits), through lane addresses
//! that are not consecutive or consecutive by half warps only, and under
//! a guard. Checked against a simulation of the warp's shared memory
//! written here, in warp mode (the default mode's choice and forced), both
//! tiers, with whole warps, a half warp, and two-dimensional blocks.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry fwd(.param .u64 pin, .param .u64 pout)
{
.reg .b32 %r<48>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
.reg .f32 %f<2>;
.shared .align 16 .b32 s[512];
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %tid.x;
mov.u32 %r1, %tid.y;
mov.u32 %r2, %ntid.x;
mad.lo.u32 %r3, %r1, %r2, %r0;
mov.u32 %r4, %ctaid.x;
mov.u32 %r5, %ntid.y;
mul.lo.u32 %r6, %r2, %r5;
mad.lo.u32 %r7, %r4, %r6, %r3;
mul.wide.u32 %rd2, %r7, 4;
add.u64 %rd3, %rd0, %rd2;
ld.global.u32 %r8, [%rd3];
and.b32 %r9, %r3, 31;
shr.u32 %r10, %r3, 5;
mov.u32 %r11, s;
shl.b32 %r12, %r10, 9;
add.u32 %r13, %r11, %r12;
shl.b32 %r14, %r9, 2;
add.u32 %r15, %r13, %r14;
mov.u32 %r16, 0;
st.volatile.shared.u32 [%r15], %r16;
st.volatile.shared.u32 [%r15+64], %r16;
st.volatile.shared.u32 [%r15+128], %r8;
ld.volatile.shared.u32 %r17, [%r15+124];
add.u32 %r8, %r8, %r17;
st.volatile.shared.u32 [%r15+128], %r8;
ld.volatile.shared.u32 %r17, [%r15+120];
add.u32 %r8, %r8, %r17;
st.volatile.shared.u32 [%r15+128], %r8;
ld.volatile.shared.u32 %r17, [%r15+112];
add.u32 %r8, %r8, %r17;
st.volatile.shared.u32 [%r15+128], %r8;
ld.volatile.shared.u32 %r17, [%r15+96];
add.u32 %r8, %r8, %r17;
st.volatile.shared.u32 [%r15+128], %r8;
ld.volatile.shared.u32 %r17, [%r15+64];
add.u32 %r8, %r8, %r17;
st.volatile.shared.u32 [%r15+128], %r8;
setp.lt.u32 %p2, %r9, 20;
mov.u32 %r31, 0;
@%p2 ld.volatile.shared.u32 %r31, [%r15+120];
setp.eq.u32 %p3, %r10, 0;
mov.u32 %r34, 777;
@%p3 st.volatile.shared.u32 [s+148], %r34;
ld.volatile.shared.u32 %r33, [%r15+124];
st.volatile.shared.u32 [%r15+128], %r8;
mov.u32 %r36, 555;
@%p3 atom.shared.exch.b32 %r35, [s+156], %r36;
ld.volatile.shared.u32 %r37, [%r15+128];
add.u32 %r21, %r15, 8;
add.u32 %r22, %r9, 1000;
st.volatile.shared.u32 [%r21+128], %r22;
ld.volatile.shared.u32 %r23, [%r15+124];
st.volatile.shared.u32 [%r15+128], %r8;
and.b32 %r18, %r9, 1;
setp.eq.u32 %p0, %r18, 1;
mul.lo.u32 %r19, %r8, 3;
@%p0 st.volatile.shared.u32 [%r15+128], %r19;
ld.volatile.shared.u32 %r20, [%r15+128];
add.u32 %r24, %r8, 7;
mov.u32 %r25, %r15;
st.volatile.shared.u32 [%r25+128], %r24;
add.u32 %r25, %r25, 4;
ld.volatile.shared.u32 %r26, [%r25+128];
xor.b32 %r27, %r9, 1;
shl.b32 %r28, %r27, 2;
add.u32 %r29, %r13, %r28;
add.u32 %r32, %r8, 100;
st.volatile.shared.u32 [%r29+256], %r32;
st.volatile.shared.u32 [%r29+384], %r8;
setp.ne.u32 %p1, %r9, 1;
mov.u32 %r30, 0;
@%p1 ld.volatile.shared.u32 %r30, [%r29+380];
and.b32 %r40, %r9, 15;
shr.u32 %r41, %r9, 4;
shl.b32 %r42, %r40, 2;
shl.b32 %r43, %r41, 7;
add.u32 %r44, %r13, %r42;
add.u32 %r44, %r44, %r43;
add.u32 %r45, %r8, 300;
add.u32 %r46, %r8, 200;
st.volatile.shared.u32 [%r44], %r45;
st.volatile.shared.u32 [%r44+64], %r46;
ld.volatile.shared.u32 %r38, [%r44+60];
st.volatile.shared.u32 [%r15+128], %r8;
st.volatile.shared.u8 [%r15+129], %r9;
ld.volatile.shared.u32 %r39, [%r15+128];
st.volatile.shared.u32 [%r15+64], %r8;
st.volatile.shared.u32 [%r15+128], %r8;
cvt.rn.f32.u32 %f0, %r9;
st.volatile.shared.f32 [%r15+132], %f0;
ld.volatile.shared.u32 %r47, [%r15+124];
mul.wide.u32 %rd4, %r7, 44;
add.u64 %rd5, %rd1, %rd4;
st.global.u32 [%rd5], %r8;
st.global.u32 [%rd5+4], %r31;
st.global.u32 [%rd5+8], %r20;
st.global.u32 [%rd5+12], %r23;
st.global.u32 [%rd5+16], %r26;
st.global.u32 [%rd5+20], %r30;
st.global.u32 [%rd5+24], %r33;
st.global.u32 [%rd5+28], %r37;
st.global.u32 [%rd5+32], %r38;
st.global.u32 [%rd5+36], %r39;
st.global.u32 [%rd5+40], %r47;
ret;
}
"#;

const OUTS: usize = 11;

/// A warp's 128 words of shared memory; reading a word nothing wrote is a
/// defect of the test kernel.
struct Words([Option<u32>; 128]);

impl Words {
    fn get(&self, i: usize) -> u32 {
        self.0[i].unwrap_or_else(|| panic!("the kernel reads s[{i}] before writing it"))
    }
}

/// What each lane of one warp of `v.len()` lanes writes (`first_warp`: the
/// block's first, which also stores to a fixed word), the warp's
/// instructions simulated one after the other over its words.
fn model(v: &[u32], first_warp: bool) -> Vec<[u32; OUTS]> {
    let n = v.len();
    let mut m = Words([None; 128]);
    let lanes = 0..n;
    // Each store: every lane's word, then written in lane order.
    let store = |m: &mut Words, at: &dyn Fn(usize) -> Option<(usize, u32)>| {
        let writes: Vec<(usize, u32)> = lanes.clone().filter_map(at).collect();
        for (i, x) in writes {
            m.0[i] = Some(x);
        }
    };
    store(&mut m, &|l| Some((l, 0)));
    store(&mut m, &|l| Some((l + 16, 0)));
    let mut x: Vec<u32> = v.to_vec();
    store(&mut m, &|l| Some((l + 32, x[l])));
    for d in [1, 2, 4, 8, 16] {
        let read: Vec<u32> = lanes.clone().map(|l| m.get(l + 32 - d)).collect();
        for l in lanes.clone() {
            x[l] = x[l].wrapping_add(read[l]);
        }
        store(&mut m, &|l| Some((l + 32, x[l])));
    }
    let r31: Vec<u32> = lanes.clone().map(|l| if l < 20 { m.get(l + 30) } else { 0 }).collect();
    if first_warp {
        m.0[37] = Some(777);
    }
    let r33: Vec<u32> = lanes.clone().map(|l| m.get(l + 31)).collect();
    store(&mut m, &|l| Some((l + 32, x[l])));
    if first_warp {
        m.0[39] = Some(555);
    }
    let r37: Vec<u32> = lanes.clone().map(|l| m.get(l + 32)).collect();
    store(&mut m, &|l| Some((l + 34, l as u32 + 1000)));
    let r23: Vec<u32> = lanes.clone().map(|l| m.get(l + 31)).collect();
    store(&mut m, &|l| Some((l + 32, x[l])));
    store(&mut m, &|l| (l & 1 == 1).then(|| (l + 32, x[l].wrapping_mul(3))));
    let r20: Vec<u32> = lanes.clone().map(|l| m.get(l + 32)).collect();
    store(&mut m, &|l| Some((l + 32, x[l].wrapping_add(7))));
    let r26: Vec<u32> = lanes.clone().map(|l| m.get(l + 33)).collect();
    store(&mut m, &|l| Some(((l ^ 1) + 64, x[l].wrapping_add(100))));
    store(&mut m, &|l| Some(((l ^ 1) + 96, x[l])));
    let r30: Vec<u32> = lanes.clone().map(|l| if l != 1 { m.get((l ^ 1) + 95) } else { 0 }).collect();
    // Two rows of a half warp each, 32 words apart.
    let row = |l: usize| (l & 15) + (l >> 4) * 32;
    store(&mut m, &|l| Some((row(l), x[l].wrapping_add(300))));
    store(&mut m, &|l| Some((row(l) + 16, x[l].wrapping_add(200))));
    let r38: Vec<u32> = lanes.clone().map(|l| m.get(row(l) + 15)).collect();
    // A byte stored into each lane's word of a recorded run.
    store(&mut m, &|l| Some((l + 32, x[l])));
    let words: Vec<u32> = lanes.clone().map(|l| (m.get(l + 32) & !0xff00) | (l as u32) << 8).collect();
    store(&mut m, &|l| Some((l + 32, words[l])));
    let r39: Vec<u32> = lanes.clone().map(|l| m.get(l + 32)).collect();
    // Words, then floats one word on over them.
    store(&mut m, &|l| Some((l + 16, x[l])));
    store(&mut m, &|l| Some((l + 32, x[l])));
    store(&mut m, &|l| Some((l + 33, (l as f32).to_bits())));
    let r47: Vec<u32> = lanes.clone().map(|l| m.get(l + 31)).collect();
    lanes.map(|l| [x[l], r31[l], r20[l], r23[l], r26[l], r30[l], r33[l], r37[l], r38[l], r39[l], r47[l]]).collect()
}

#[test]
fn loads_of_a_warps_own_stores_match_the_simulation_in_every_mode() {
    let exec = Executor::global();
    // Blocks of two whole warps; of 48 threads (the second warp is a half
    // warp: its stores never cover 32 lanes); two-dimensional blocks of
    // 8 x 8 threads (warps of consecutive linear thread indices).
    for (blocks, ntid, seed) in [(3u32, [64u32, 1], 1u64), (2, [48, 1], 5), (2, [8, 8], 9)] {
        let per_block = (ntid[0] * ntid[1]) as usize;
        let n = blocks as usize * per_block;
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let input: Vec<u32> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as u32
            })
            .collect();
        let mut expected = Vec::new();
        for b in 0..blocks as usize {
            for w in (0..per_block).step_by(32) {
                let lanes = 32.min(per_block - w);
                let first = b * per_block + w;
                expected.extend(model(&input[first..first + lanes], w == 0).into_iter().flatten());
            }
        }
        // The default mode runs the kernel as warps (its lanes read each
        // other's shared stores); thread by thread the scan would not be
        // lockstep.
        for warp in [WarpMode::Auto, WarpMode::Always] {
            for tier in [Tier::Fast, Tier::Optimized] {
                let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                    .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
                let k = p.kernel("fwd").expect("kernel `fwd`");
                assert_eq!(k.info.lanes, 32, "{warp:?}");
                let mut inp = input.clone();
                let mut out = vec![0xcdcd_cdcdu32; n * OUTS];
                launch(
                    exec,
                    k,
                    [blocks, 1, 1],
                    [ntid[0], ntid[1], 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))],
                )
                .expect("arguments")
                .expect("launch");
                for i in 0..n {
                    let (g, e) = (&out[i * OUTS..(i + 1) * OUTS], &expected[i * OUTS..(i + 1) * OUTS]);
                    assert_eq!(g, e, "thread {i} ({warp:?}, {tier:?}, blocks of {ntid:?})");
                }
            }
        }
    }
}
