//! `ex2.approx`, `lg2.approx`, `sin.approx`, `cos.approx` and
//! `tanh.approx` (f32, with and without `.ftz`; f16 `ex2`) are computed
//! in double precision and rounded once (`FnLower::exp2_f32`, `log2_f32`,
//! `sin_f32`, `cos_f32`, `tanh_f32`):
//! vector code in warp mode instead of a libm call per lane. Checked against the functions in f64 rounded to the result
//! type, within one unit in the last place (the PTX ISA allows two), over
//! special values, subnormal operands and results, the overflow and
//! underflow edges and a sweep of bit patterns; lane by lane in warp mode
//! (thread mode, both tiers) and for a warp-uniform operand (one scalar
//! for the warp).

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use half::f16;
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry m(.param .u64 pin, .param .u64 pout, .param .f32 pu)
{
.reg .b32 %r<8>;
.reg .b16 %h<4>;
.reg .f32 %f<16>;
.reg .b64 %rd<8>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
ld.param.f32 %f9, [pu];
mov.u32 %r0, %ctaid.x;
mov.u32 %r1, %ntid.x;
mov.u32 %r2, %tid.x;
mad.lo.u32 %r3, %r0, %r1, %r2;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd0, %rd2;
ld.global.f32 %f0, [%rd3];
ex2.approx.f32 %f1, %f0;
ex2.approx.ftz.f32 %f2, %f0;
lg2.approx.f32 %f3, %f0;
lg2.approx.ftz.f32 %f4, %f0;
cvt.rn.f16.f32 %h0, %f0;
ex2.approx.f16 %h1, %h0;
cvt.u32.u16 %r4, %h1;
ex2.approx.ftz.f32 %f10, %f9;
lg2.approx.f32 %f11, %f9;
sin.approx.f32 %f5, %f0;
cos.approx.f32 %f6, %f0;
sin.approx.ftz.f32 %f7, %f0;
cos.approx.ftz.f32 %f8, %f0;
sin.approx.f32 %f12, %f9;
tanh.approx.f32 %f13, %f0;
mul.wide.u32 %rd4, %r3, 52;
add.u64 %rd5, %rd1, %rd4;
st.global.f32 [%rd5], %f1;
st.global.f32 [%rd5+4], %f2;
st.global.f32 [%rd5+8], %f3;
st.global.f32 [%rd5+12], %f4;
st.global.u32 [%rd5+16], %r4;
st.global.f32 [%rd5+20], %f10;
st.global.f32 [%rd5+24], %f11;
st.global.f32 [%rd5+28], %f5;
st.global.f32 [%rd5+32], %f6;
st.global.f32 [%rd5+36], %f7;
st.global.f32 [%rd5+40], %f8;
st.global.f32 [%rd5+44], %f12;
st.global.f32 [%rd5+48], %f13;
ret;
}
"#;

const OUTS: usize = 13;

fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// `f` of `x` in f64, rounded to f32 (`ftz`: operand and result flushed),
/// as bits; NaN results as the canonical NaN.
fn want(f: fn(f64) -> f64, x: f32, ftz: bool) -> u32 {
    let x = if ftz { flush(x) } else { x };
    let r = f(f64::from(x)) as f32;
    let r = if ftz { flush(r) } else { r };
    if r.is_nan() {
        0x7fff_ffff
    } else {
        r.to_bits()
    }
}

/// Whether `got` is `want` or its neighbour in the same direction from
/// zero (one unit in the last place), for results of the same sign.
fn within_ulp(got: u32, want: u32) -> bool {
    if got == want {
        return true;
    }
    let (g, w) = (f32::from_bits(got), f32::from_bits(want));
    if w == 0.0 {
        // A zero is exact, its sign included.
        return false;
    }
    if g.is_nan() || w.is_nan() || g.is_infinite() || w.is_infinite() || (g.is_sign_negative() != w.is_sign_negative() && g != 0.0) {
        return false;
    }
    (got & 0x7fff_ffff).abs_diff(want & 0x7fff_ffff) <= 1
}

fn inputs() -> Vec<f32> {
    let mut v: Vec<f32> = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffa0_0001),
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::from_bits(0x0040_0000),
        f32::from_bits(0x807f_ffff),
        f32::MIN_POSITIVE,
        1.0,
        -1.0,
        2.0,
        0.5,
        3.0,
        f32::from_bits(0x3f80_0001),
        f32::from_bits(0x3f7f_ffff),
        127.0,
        127.99999,
        128.0,
        129.0,
        1000.0,
        -125.0,
        -126.0,
        -126.5,
        -127.0,
        -140.25,
        -149.0,
        -149.5,
        -150.0,
        -150.5,
        -151.0,
        -152.0,
        -200.0,
        1e-8,
        -1e-8,
        1e-30,
        f32::MAX,
        f32::MIN,
        0.3,
        -0.7,
        std::f32::consts::PI,
        std::f32::consts::FRAC_PI_2,
        -std::f32::consts::FRAC_PI_4,
        3.0 * std::f32::consts::FRAC_PI_2,
        1e6,
        -1048576.0,
        1048577.0,
        3e7,
        -1e20,
        12345.678,
        9.5367e-7,
        -9.5e-7,
        1e-5,
        0.5493,
        -8.0,
        9.1,
        20.0,
    ];
    // Arguments next to large multiples of pi, where sin is small and
    // the reduction must keep pi/2's low parts.
    let mut m = 170_000u32;
    while v.len() < 70 && m < 400_000 {
        let x = (f64::from(m) * std::f64::consts::PI) as f32;
        if f64::from(x).sin().abs() < 2e-4 {
            v.push(x);
            v.push(-x);
        }
        m += 1;
    }
    // Bit patterns of every exponent and sign, and the range ex2 is
    // usually asked for (softmax: -30..0).
    let mut s: u32 = 0x1234_5678;
    while v.len() < 4096 {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let x = if v.len().is_multiple_of(2) { f32::from_bits(s) } else { (s >> 8) as f32 / (1u32 << 24) as f32 * 300.0 - 160.0 };
        v.push(x);
    }
    v
}

#[test]
fn approximate_math_is_within_one_ulp_of_the_function_in_every_mode() {
    let exec = Executor::global();
    let xs = inputs();
    let uniform: [f32; 4] = [-3.25, f32::from_bits(0x0000_0100), -0.0, 10.5];
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
            let k = p.kernel("m").expect("kernel `m`");
            for u in uniform {
                let mut inp = xs.clone();
                let mut out = vec![0xcdcd_cdcdu32; OUTS * xs.len()];
                launch(
                    exec,
                    k,
                    [(xs.len() / 128) as u32, 1, 1],
                    [128, 1, 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out)), Arg::F32(u)],
                )
                .expect("arguments")
                .expect("launch");
                for (i, &x) in xs.iter().enumerate() {
                    let got = &out[OUTS * i..OUTS * i + OUTS];
                    let what = |n: &str| format!("{n}({x:e} = {:#x}) ({warp:?}, {tier:?})", x.to_bits());
                    for (k, f, ftz, name) in [
                        (0, f64::exp2 as fn(f64) -> f64, false, "ex2"),
                        (1, f64::exp2, true, "ex2.ftz"),
                        (2, f64::log2, false, "lg2"),
                        (3, f64::log2, true, "lg2.ftz"),
                    ] {
                        let w = want(f, x, ftz);
                        assert!(within_ulp(got[k], w), "{}: {:#x}, want {w:#x}", what(name), got[k]);
                    }
                    for (k, f, ftz, name) in [
                        (7, f64::sin as fn(f64) -> f64, false, "sin"),
                        (8, f64::cos, false, "cos"),
                        (9, f64::sin, true, "sin.ftz"),
                        (10, f64::cos, true, "cos.ftz"),
                        (12, f64::tanh, false, "tanh"),
                    ] {
                        let w = want(f, x, ftz);
                        assert!(within_ulp(got[k], w), "{}: {:#x}, want {w:#x}", what(name), got[k]);
                    }
                    // f16: the operand rounded to f16, the result within one
                    // f16 ulp of 2^x rounded to f16.
                    let h = f16::from_f32(x);
                    let wh = f16::from_f64(f64::from(h.to_f32()).exp2());
                    let gh = f16::from_bits(got[4] as u16);
                    let ok = (wh.is_nan() && gh.to_bits() == 0x7fff)
                        || gh == wh
                        || (!gh.is_nan()
                            && gh.is_sign_negative() == wh.is_sign_negative()
                            && (gh.to_bits() & 0x7fff).abs_diff(wh.to_bits() & 0x7fff) <= 1);
                    assert!(ok, "{}: {:#06x}, want {:#06x}", what("ex2.f16"), gh.to_bits(), wh.to_bits());
                    // The warp-uniform operand.
                    assert!(within_ulp(got[5], want(f64::exp2, u, true)), "ex2.ftz of uniform {u:e}: {:#x}", got[5]);
                    assert!(within_ulp(got[6], want(f64::log2, u, false)), "lg2 of uniform {u:e}: {:#x}", got[6]);
                    assert!(within_ulp(got[11], want(f64::sin, u, false)), "sin of uniform {u:e}: {:#x}", got[11]);
                }
            }
        }
    }
}
