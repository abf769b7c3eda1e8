//! 16-bit float arithmetic in the shape of llama.cpp's f16 matrix-vector
//! kernel: a dot product of `half2` values accumulated in `half2`. Packed
//! `add`, `sub` and `mul` compute both halves in one operation on twice
//! the lanes (`FnLower::half_op`), and a result read only by operations
//! that cannot tell NaNs apart keeps the host's NaN
//! (`arith::nan_blind_registers`, now per float format): the products feed
//! the sums, the sums feed the next sums, and the NaN becomes the canonical
//! one where the chain is stored. An f32 product read both by an f32 add
//! and, through a `mov`, as an f16 pair is not blind: its halves as f16
//! would differ between the host's NaN and the canonical one. Checked
//! against `half`'s IEEE arithmetic with PTX's canonical NaN, in every mode
//! and tier, over NaNs with payloads, infinities, products that overflow
//! or become subnormal, and ordinary values.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use half::f16;
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry dot(.param .u64 pin, .param .u64 pout)
{
.reg .b32 %r<32>;
.reg .b16 %h<8>;
.reg .f32 %f<8>;
.reg .b64 %rd<8>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd2, %r0, 48;
add.u64 %rd3, %rd0, %rd2;
ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd3];
ld.global.v4.b32 {%r5, %r6, %r7, %r8}, [%rd3+16];
ld.global.v2.f32 {%f0, %f1}, [%rd3+32];
mov.b32 %r9, 0;
mul.f16x2 %r10, %r1, %r5;
add.f16x2 %r9, %r9, %r10;
mul.f16x2 %r11, %r2, %r6;
add.f16x2 %r9, %r9, %r11;
mul.f16x2 %r12, %r3, %r7;
sub.f16x2 %r9, %r9, %r12;
neg.f16x2 %r13, %r4;
mul.f16x2 %r14, %r13, %r8;
add.f16x2 %r9, %r9, %r14;
abs.f16x2 %r15, %r9;
mul.f16x2 %r16, %r15, %r1;
mul.f32 %f2, %f0, %f1;
add.f32 %f3, %f2, %f0;
mov.b32 %r17, %f2;
mov.b32 %r18, 0x3c003c00;
add.f16x2 %r19, %r17, %r18;
mov.b32 {%h0, %h1}, %r1;
mov.b32 {%h2, %h3}, %r5;
mul.f16 %h4, %h0, %h2;
add.f16 %h5, %h4, %h1;
mul.wide.u32 %rd4, %r0, 20;
add.u64 %rd5, %rd1, %rd4;
st.global.b32 [%rd5], %r9;
st.global.b32 [%rd5+4], %r16;
st.global.b32 [%rd5+8], %r19;
st.global.f32 [%rd5+12], %f3;
st.global.b16 [%rd5+16], %h5;
st.global.b16 [%rd5+18], %h4;
ret;
}
"#;

/// An f16 result as PTX gives it: any NaN is the canonical one.
fn canonical(x: f16) -> u16 {
    if x.is_nan() {
        0x7fff
    } else {
        x.to_bits()
    }
}

/// An f16 operation rounded to nearest even from the exact f32 result
/// (sums and products of f16 values round correctly through f32).
fn op(a: u16, b: u16, f: impl Fn(f32, f32) -> f32) -> u16 {
    canonical(f16::from_f32(f(f16::from_bits(a).to_f32(), f16::from_bits(b).to_f32())))
}

/// Both halves of an f16 pair.
fn pair(a: u32, b: u32, f: impl Fn(f32, f32) -> f32) -> u32 {
    let lo = op(a as u16, b as u16, &f);
    let hi = op((a >> 16) as u16, (b >> 16) as u16, &f);
    u32::from(lo) | u32::from(hi) << 16
}

fn f32_canonical(x: f32) -> u32 {
    if x.is_nan() {
        0x7fff_ffff
    } else {
        x.to_bits()
    }
}

/// What one thread stores, from its eight pairs and two f32 values.
fn model(pairs: &[u32], f: [f32; 2]) -> [u32; 5] {
    let mul = |a: f32, b: f32| a * b;
    let add = |a: f32, b: f32| a + b;
    let sub = |a: f32, b: f32| a - b;
    let mut acc = pair(0, pair(pairs[0], pairs[4], mul), add);
    acc = pair(acc, pair(pairs[1], pairs[5], mul), add);
    acc = pair(acc, pair(pairs[2], pairs[6], mul), sub);
    acc = pair(acc, pair(pairs[3] ^ 0x8000_8000, pairs[7], mul), add);
    let abs = acc & 0x7fff_7fff;
    let scaled = pair(abs, pairs[0], mul);
    // The f32 product as PTX holds it: the canonical NaN, whose halves
    // are both NaN as f16.
    let product = f32_canonical(f[0] * f[1]);
    let as_pairs = pair(product, 0x3c00_3c00, add);
    let sum = f32_canonical(f32::from_bits(product) + f[0]);
    let h4 = op(pairs[0] as u16, pairs[4] as u16, mul);
    let h5 = op(h4, (pairs[0] >> 16) as u16, add);
    [acc, scaled, as_pairs, sum, u32::from(h5) | u32::from(h4) << 16]
}

/// Special and ordinary f16 values.
const HALVES: [u16; 16] = [
    0x7e00, // NaN
    0xfd55, // NaN with a payload, negative
    0x7c01, // signalling NaN
    0x7c00, // +inf
    0xfc00, // -inf
    0x0000, // +0
    0x8000, // -0
    0x7bff, // largest finite: its square overflows
    0x0001, // smallest subnormal
    0x0400, // smallest normal: its square is 0
    0x3c00, // 1
    0xbc00, // -1
    0x3555, // 1/3
    0x4248, // 3.14
    0x2e66, // 0.1
    0x5640, // 100
];

#[test]
fn half_pair_dot_products_follow_the_ptx_rules_in_every_mode() {
    let exec = Executor::global();
    let threads = 64usize;
    let f32s = [f32::INFINITY, 0.0, -0.0, 1.5, f32::from_bits(0x7fc0_1234), -3.0, f32::NEG_INFINITY, 1e30];
    let mut words = Vec::new();
    let mut pairs = Vec::new();
    let mut floats = Vec::new();
    for t in 0..threads {
        let ps: Vec<u32> = (0..8)
            .map(|k| {
                let lo = HALVES[(t * 3 + k * 5) % 16];
                let hi = HALVES[(t * 7 + k * 11 + 1) % 16];
                u32::from(lo) | u32::from(hi) << 16
            })
            .collect();
        // Every pair of special f32 values, inf * 0 among them: a NaN
        // the host makes with its own payload.
        let f = [f32s[t % 8], f32s[t / 8 % 8]];
        words.extend_from_slice(&ps);
        words.extend(f.map(f32::to_bits));
        // Padding: each thread's vectors aligned to 16 bytes.
        words.extend([0, 0]);
        pairs.push(ps);
        floats.push(f);
    }
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
            let k = p.kernel("dot").expect("kernel `dot`");
            let mut input = words.clone();
            let mut out = vec![0xcdcd_cdcdu32; 5 * threads];
            launch(exec, k, [1, 1, 1], [threads as u32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
                .expect("arguments")
                .expect("launch");
            for t in 0..threads {
                let want = model(&pairs[t], floats[t]);
                assert_eq!(
                    &out[5 * t..5 * t + 5],
                    &want,
                    "thread {t} ({warp:?}, {tier:?}): pairs {:08x?}, floats {:?}",
                    pairs[t],
                    floats[t]
                );
            }
        }
    }
}
