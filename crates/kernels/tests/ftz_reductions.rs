//! A warp's shuffle reduction with `add.ftz.f32`, in the shape of
//! llama.cpp's matrix-vector kernels: the sums that the shuffles move
//! between lanes are already flushed and NaN-blind, so the compiler skips
//! flushing them again (`arith::flushed_registers`) and lets them keep the
//! host's NaN until the chain ends (`arith::nan_blind_registers`). Checked
//! against a model of the PTX rules in every mode and tier, over subnormal
//! operands, sums that become subnormal, and NaNs with payloads.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry r(.param .u64 pin, .param .u64 pout)
{
.reg .b32 %r<24>;
.reg .f32 %f<24>;
.reg .b64 %rd<8>;
.reg .pred %p<8>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd2, %r0, 8;
add.u64 %rd3, %rd0, %rd2;
ld.global.f32 %f0, [%rd3];
ld.global.f32 %f1, [%rd3+4];
add.ftz.f32 %f2, %f0, %f1;
mov.b32 %r1, %f2;
shfl.sync.bfly.b32 %r2|%p0, %r1, 16, 31, -1;
mov.b32 %f3, %r2;
add.ftz.f32 %f4, %f2, %f3;
mov.b32 %r3, %f4;
shfl.sync.bfly.b32 %r4|%p1, %r3, 8, 31, -1;
mov.b32 %f5, %r4;
add.ftz.f32 %f6, %f4, %f5;
mov.b32 %r5, %f6;
shfl.sync.bfly.b32 %r6|%p2, %r5, 4, 31, -1;
mov.b32 %f7, %r6;
add.ftz.f32 %f8, %f6, %f7;
mov.b32 %r7, %f8;
shfl.sync.bfly.b32 %r8|%p3, %r7, 2, 31, -1;
mov.b32 %f9, %r8;
add.ftz.f32 %f10, %f8, %f9;
mov.b32 %r9, %f10;
shfl.sync.bfly.b32 %r10|%p4, %r9, 1, 31, -1;
mov.b32 %f11, %r10;
add.ftz.f32 %f12, %f10, %f11;
mul.wide.u32 %rd4, %r0, 12;
add.u64 %rd5, %rd1, %rd4;
st.global.f32 [%rd5], %f2;
st.global.f32 [%rd5+4], %f6;
st.global.f32 [%rd5+8], %f12;
ret;
}
"#;

/// `.ftz`: a subnormal becomes a zero of its sign.
fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        if x.is_sign_negative() {
            -0.0
        } else {
            0.0
        }
    } else {
        x
    }
}

/// `add.ftz.f32` as PTX defines it: operands and result flushed, any NaN
/// result the canonical one.
fn add_ftz(a: f32, b: f32) -> u32 {
    let r = flush(flush(a) + flush(b));
    if r.is_nan() {
        0x7fff_ffff
    } else {
        r.to_bits()
    }
}

/// Runs kernel `name` of `src` as one block of `threads` threads over
/// `input` and returns the `outs` words each thread stores.
fn run_block(src: &str, name: &str, warp: WarpMode, tier: Tier, input: &mut [u8], threads: usize, outs: usize) -> Vec<u32> {
    let p = Program::from_source_with(src, &Options { warp, tier, strict_affine: false, memcheck: false })
        .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
    let k = p.kernel(name).unwrap_or_else(|e| panic!("kernel `{name}`: {e}"));
    let mut out = vec![0xcdcd_cdcdu32; outs * threads];
    launch(Executor::global(), k, [1, 1, 1], [threads as u32, 1, 1], 0, &mut [Arg::Buf(input), Arg::Buf(as_bytes(&mut out))])
        .expect("arguments")
        .expect("launch");
    out
}

/// What each of the 32 lanes stores: its first sum, the sum after two
/// butterfly steps and the warp's total.
fn model(input: &[f32]) -> Vec<u32> {
    let mut v: Vec<u32> = (0..32).map(|l| add_ftz(input[2 * l], input[2 * l + 1])).collect();
    let first = v.clone();
    let mut after_two = Vec::new();
    for (step, m) in [16usize, 8, 4, 2, 1].into_iter().enumerate() {
        v = (0..32).map(|l| add_ftz(f32::from_bits(v[l]), f32::from_bits(v[l ^ m]))).collect();
        if step == 1 {
            after_two = v.clone();
        }
    }
    (0..32).flat_map(|l| [first[l], after_two[l], v[l]]).collect()
}

#[test]
fn ftz_shuffle_reductions_follow_the_ptx_rules_in_every_mode() {
    let exec = Executor::global();
    let tiny = f32::MIN_POSITIVE;
    let cases: Vec<Vec<f32>> = vec![
        // Subnormal operands, flushed before adding.
        (0..64)
            .map(|i| {
                if i % 3 == 0 {
                    1e-39
                } else if i % 3 == 1 {
                    -3e-40
                } else {
                    tiny * (i as f32)
                }
            })
            .collect(),
        // Normal operands whose sums are subnormal: flushed after adding,
        // at the first sum and inside the reduction (a sum of two lanes).
        (0..64).map(|i| if i % 2 == 0 { tiny * 1.5 } else { -tiny * (1.25 + (i % 5) as f32 * 0.0625) }).collect(),
        // NaNs with payloads in some lanes, infinities of both signs.
        (0..64)
            .map(|i| match i % 11 {
                0 => f32::from_bits(0x7fc0_1234),
                5 => f32::from_bits(0xffa0_0001),
                7 => f32::INFINITY,
                9 => f32::NEG_INFINITY,
                _ => i as f32 * 0.5 - 7.0,
            })
            .collect(),
        // Ordinary values.
        (0..64).map(|i| (i as f32 * 0.37).sin() * 1000.0).collect(),
    ];
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
            let k = p.kernel("r").expect("kernel `r`");
            for (c, input) in cases.iter().enumerate() {
                let mut inp = input.clone();
                let mut out = vec![0xcdcd_cdcdu32; 32 * 3];
                launch(exec, k, [1, 1, 1], [32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))])
                    .expect("arguments")
                    .expect("launch");
                let want = model(input);
                for l in 0..32 {
                    assert_eq!(
                        &out[3 * l..3 * l + 3],
                        &want[3 * l..3 * l + 3],
                        "case {c}, lane {l} ({warp:?}, {tier:?}): got {:x?}",
                        &out[3 * l..3 * l + 3]
                    );
                }
            }
        }
    }
}

/// A device function with `.reg` parameters and results: what the caller
/// passes is flushed by the callee's `.ftz` add (the parameter holds no
/// known-flushed value), and the NaN it returns is the canonical one (the
/// caller stores its bits).
const CALLS: &str = r#".version 8.5
.target sm_90
.address_size 64
.func (.reg .f32 r) twice(.reg .f32 a)
{
add.ftz.f32 r, a, a;
ret;
}
.func (.reg .f32 r) plus(.reg .f32 a, .reg .f32 b)
{
add.f32 r, a, b;
ret;
}
.visible .entry c(.param .u64 pin, .param .u64 pout)
{
.reg .f32 %f<8>;
.reg .b64 %rd<8>;
.reg .b32 %r<4>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd2, %r0, 8;
add.u64 %rd3, %rd0, %rd2;
ld.global.f32 %f0, [%rd3];
ld.global.f32 %f1, [%rd3+4];
call (%f2), twice, (%f0);
call (%f3), plus, (%f0, %f1);
add.u64 %rd4, %rd1, %rd2;
st.global.f32 [%rd4], %f2;
st.global.f32 [%rd4+4], %f3;
ret;
}
"#;

#[test]
fn register_parameters_are_flushed_and_register_results_canonical() {
    // Subnormals whose doubles are normal: only flushing the parameter
    // gives 0.
    let pairs: [(f32, f32); 4] =
        [(1.1e-38, 1.0), (-6e-39, 2.0), (f32::from_bits(0x7fc0_1234), 1.0), (f32::from_bits(0xffa0_0001), f32::from_bits(0x7f90_0002))];
    let want = |a: f32, b: f32| {
        let canon = |x: f32| if x.is_nan() { 0x7fff_ffff } else { x.to_bits() };
        [add_ftz(a, a), canon(a + b)]
    };
    for tier in [Tier::Fast, Tier::Optimized] {
        let mut inp: Vec<f32> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
        let out = run_block(CALLS, "c", WarpMode::Off, tier, as_bytes(&mut inp), pairs.len(), 2);
        for (t, &(a, b)) in pairs.iter().enumerate() {
            assert_eq!(out[2 * t..2 * t + 2], want(a, b), "thread {t} ({tier:?})");
        }
    }
}

/// Conversions to f32 as `.ftz` operands: the compiler does not flush the
/// results of integer and f16 conversions again (they are never
/// subnormal), but must flush a bf16 conversion's (bf16 has f32's
/// exponent range, so its subnormals stay subnormal).
const CONVERSIONS: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry c(.param .u64 pin, .param .u64 pout)
{
.reg .b16 %rs<4>;
.reg .b32 %r<8>;
.reg .f32 %f<16>;
.reg .b64 %rd<8>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd2, %r0, 8;
add.u64 %rd3, %rd0, %rd2;
ld.global.b16 %rs0, [%rd3];
ld.global.u32 %r1, [%rd3+4];
cvt.f32.bf16 %f0, %rs0;
cvt.f32.f16 %f1, %rs0;
cvt.rn.f32.s32 %f2, %r1;
mul.ftz.f32 %f3, %f0, 0f3F800000;
mul.ftz.f32 %f4, %f1, 0f3F800000;
fma.rn.ftz.f32 %f5, %f2, 0f00800000, %f0;
add.u64 %rd4, %rd1, %rd2;
add.u64 %rd4, %rd4, %rd2;
st.global.f32 [%rd4], %f3;
st.global.f32 [%rd4+4], %f4;
st.global.f32 [%rd4+8], %f5;
st.global.f32 [%rd4+12], %f2;
ret;
}
"#;

/// An f16's value as an f32 (exact).
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((h >> 10) & 0x1f), f32::from(h & 0x3ff));
    sign * match e {
        0 => m * 2f32.powi(-24),
        31 if m == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        _ => (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

#[test]
fn conversions_to_f32_are_flushed_as_ftz_operands_only_where_they_can_be_subnormal() {
    // 16-bit patterns that are bf16 subnormals and f16 subnormals or
    // normals; integers whose products by 2^-126 are subnormal, normal and
    // zero.
    let cases: [(u16, i32); 8] =
        [(0x0001, 1), (0x007f, -1), (0x8040, 3), (0x03ff, 0), (0x0400, 1 << 24), (0x3c00, -7), (0x8001, i32::MAX), (0x7bff, 2)];
    let canon = |x: f32| if x.is_nan() { 0x7fff_ffff } else { x.to_bits() };
    let want = |h: u16, i: i32| {
        let bf = f32::from_bits(u32::from(h) << 16);
        let int = i as f32;
        // fma.rn.ftz: operands flushed, the exact sum rounded once, the
        // result flushed (the products here are exact in f64).
        let fma = (f64::from(flush(int)) * f64::from(f32::from_bits(0x0080_0000)) + f64::from(flush(bf))) as f32;
        [canon(flush(flush(bf) * 1.0)), canon(flush(flush(f16_value(h)) * 1.0)), canon(flush(fma)), canon(int)]
    };
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let mut inp: Vec<u32> = cases.iter().flat_map(|&(h, i)| [u32::from(h), i as u32]).collect();
            let out = run_block(CONVERSIONS, "c", warp, tier, as_bytes(&mut inp), cases.len(), 4);
            for (t, &(h, i)) in cases.iter().enumerate() {
                assert_eq!(out[4 * t..4 * t + 4], want(h, i), "thread {t}: {h:#06x}, {i} ({warp:?}, {tier:?})");
            }
        }
    }
}

/// One register as the `.ftz` operand of several operations (the compiler
/// flushes it once per IR block, `FnLower::memo_flush`), rewritten in
/// between by a load, a `mov` and a guarded `mov`, and read under a guard
/// and after it.
const REUSED: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry u(.param .u64 pin, .param .u64 pout)
{
.reg .b32 %r<4>;
.reg .f32 %f<16>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd2, %r0, 16;
add.u64 %rd3, %rd0, %rd2;
add.u64 %rd4, %rd1, %rd2;
add.u64 %rd4, %rd4, %rd2;
ld.global.f32 %f0, [%rd3];
ld.global.f32 %f1, [%rd3+4];
mul.ftz.f32 %f2, %f0, %f1;
fma.rn.ftz.f32 %f3, %f0, %f1, %f2;
ld.global.f32 %f0, [%rd3+8];
mul.ftz.f32 %f4, %f0, %f1;
setp.gt.f32 %p0, %f1, 0f00000000;
@%p0 mul.ftz.f32 %f5, %f0, 0f3F800000;
@!%p0 mov.f32 %f5, 0f3F800000;
mul.ftz.f32 %f6, %f0, 0f40000000;
mov.f32 %f0, %f1;
mul.ftz.f32 %f7, %f0, 0f3F800000;
ld.global.f32 %f8, [%rd3+12];
@%p0 mov.f32 %f0, %f8;
mul.ftz.f32 %f9, %f0, 0f3F800000;
st.global.f32 [%rd4], %f2;
st.global.f32 [%rd4+4], %f3;
st.global.f32 [%rd4+8], %f4;
st.global.f32 [%rd4+12], %f5;
st.global.f32 [%rd4+16], %f6;
st.global.f32 [%rd4+20], %f7;
st.global.f32 [%rd4+24], %f9;
st.global.f32 [%rd4+28], 0f00000000;
ret;
}
"#;

#[test]
fn a_register_read_by_several_ftz_operations_is_flushed_as_it_is_at_each() {
    // Scale, x, the scale's second value, a replacement: subnormal and
    // normal in each place, x of both signs.
    let sub = f32::from_bits(0x0040_0000);
    let cases: [[f32; 4]; 6] = [
        [sub, 3.0, 1.5, sub],
        [1.5, 3.0, sub, -sub],
        [-sub, -2.0, 2.5, sub],
        [2.0, 1e-30, -sub, 4.0],
        [sub, -1e-30, sub, 7.0],
        [1e-20, 1e-20, 1e-19, -sub],
    ];
    let canon = |x: f32| if x.is_nan() { 0x7fff_ffff } else { x.to_bits() };
    let mul = |a: f32, b: f32| flush(flush(a) * flush(b));
    let want = |[s, x, s2, y]: [f32; 4]| {
        let f2 = mul(s, x);
        let f3 = flush((f64::from(flush(s)) * f64::from(flush(x)) + f64::from(f2)) as f32);
        let positive = x > 0.0;
        let f5 = if positive { mul(s2, 1.0) } else { 1.0 };
        let f9 = if positive { mul(y, 1.0) } else { mul(x, 1.0) };
        [f2, f3, mul(s2, x), f5, mul(s2, 2.0), mul(x, 1.0), f9, 0.0].map(canon)
    };
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let mut inp: Vec<f32> = cases.iter().flatten().copied().collect();
            let out = run_block(REUSED, "u", warp, tier, as_bytes(&mut inp), cases.len(), 8);
            for (t, &c) in cases.iter().enumerate() {
                assert_eq!(out[8 * t..8 * t + 8], want(c), "thread {t}: {c:?} ({warp:?}, {tier:?})");
            }
        }
    }
}
