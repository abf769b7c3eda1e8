//! Rounding an f64 to a smaller float format, exactly, in every rounding
//! mode: once in Rust (for constants, and as the reference in tests) and once
//! as generated IR (for values computed at run time). Both follow the same
//! branch-free integer algorithm, so the tests of one check the other's
//! reasoning.
//!
//! Conversions that go through f64 first are exact when the f64 is exact or
//! rounded to odd (53 bits leave more than two guard bits for every target
//! here), which is how callers use it.

/// A binary floating-point format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub exp_bits: u32,
    pub man_bits: u32,
    /// The format has infinities (e4m3 has none).
    pub has_inf: bool,
    /// The NaN a conversion produces (NVIDIA's canonical NaN).
    pub nan: u64,
    /// Extra low zero bits of the result encoding (tf32 keeps the f32 layout).
    pub shift: u32,
}

pub const F32: Format = Format { exp_bits: 8, man_bits: 23, has_inf: true, nan: 0x7fff_ffff, shift: 0 };
pub const HALF: Format = Format { exp_bits: 5, man_bits: 10, has_inf: true, nan: 0x7fff, shift: 0 };
pub const BF16: Format = Format { exp_bits: 8, man_bits: 7, has_inf: true, nan: 0x7fff, shift: 0 };
pub const TF32: Format = Format { exp_bits: 8, man_bits: 10, has_inf: true, nan: 0x7fff_ffff, shift: 13 };
pub const E4M3: Format = Format { exp_bits: 4, man_bits: 3, has_inf: false, nan: 0x7f, shift: 0 };
pub const E5M2: Format = Format { exp_bits: 5, man_bits: 2, has_inf: true, nan: 0x7f, shift: 0 };

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Rn,
    Rz,
    Rm,
    Rp,
    /// Round to nearest, ties away from zero.
    Rna,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Rn => "rn",
            Mode::Rz => "rz",
            Mode::Rm => "rm",
            Mode::Rp => "rp",
            Mode::Rna => "rna",
        }
    }
}

impl Format {
    fn bias(&self) -> i64 {
        (1i64 << (self.exp_bits - 1)) - 1
    }
    fn emin(&self) -> i64 {
        1 - self.bias()
    }
    /// The encoding of +infinity, or of the first value past the largest
    /// finite one for formats without infinities.
    fn overflow_enc(&self) -> u64 {
        if self.has_inf {
            ((1u64 << self.exp_bits) - 1) << self.man_bits
        } else {
            // e4m3: S.1111.111 is NaN, so S.1111.110 is the largest finite.
            (1u64 << (self.exp_bits + self.man_bits)) - 1
        }
    }
    fn sign_bit(&self) -> u64 {
        1u64 << (self.exp_bits + self.man_bits)
    }
    pub fn name(&self) -> String {
        format!("e{}m{}{}", self.exp_bits, self.man_bits, if self.shift != 0 { "s" } else { "" })
    }
}

/// Rounds the f64 with bits `x` to `fmt` in `mode`. `satfinite` turns
/// overflow into the largest finite value (and infinities too), as the
/// `.satfinite` conversions do. NaN becomes the format's canonical NaN.
pub fn f64_to_small_sat(x: u64, fmt: Format, mode: Mode, satfinite: bool) -> u64 {
    let sign = x >> 63;
    let exp = ((x >> 52) & 0x7ff) as i64;
    let man = x & ((1u64 << 52) - 1);
    let sgn_out = if sign != 0 { fmt.sign_bit() } else { 0 };
    if exp == 0x7ff {
        if man != 0 {
            return fmt.nan << fmt.shift;
        }
        if satfinite || !fmt.has_inf {
            return (sgn_out | (fmt.overflow_enc() - 1)) << fmt.shift;
        }
        return (sgn_out | fmt.overflow_enc()) << fmt.shift;
    }
    let (sig, e) = if exp == 0 { (man, -1022i64) } else { (man | (1u64 << 52), exp - 1023) };
    let m = fmt.man_bits as i64;
    let emin = fmt.emin();
    let eq = e.max(emin);
    let shift = (eq - m - e + 52).clamp(0, 63) as u32;
    let q = sig >> shift;
    let rem = sig & ((1u64 << shift).wrapping_sub(1));
    let half = if shift == 0 { 0 } else { 1u64 << (shift - 1) };
    let inexact = rem != 0;
    let up = match mode {
        Mode::Rn => rem > half || (rem == half && inexact && q & 1 == 1),
        Mode::Rna => inexact && rem >= half,
        Mode::Rz => false,
        Mode::Rm => inexact && sign != 0,
        Mode::Rp => inexact && sign == 0,
    };
    let enc = (((eq - emin) as u64) << fmt.man_bits) + q + up as u64;
    if enc >= fmt.overflow_enc() {
        let to_inf = fmt.has_inf
            && !satfinite
            && match mode {
                Mode::Rn | Mode::Rna => true,
                Mode::Rz => false,
                Mode::Rm => sign != 0,
                Mode::Rp => sign == 0,
            };
        let mag = if to_inf { fmt.overflow_enc() } else { fmt.overflow_enc() - 1 };
        return (sgn_out | mag) << fmt.shift;
    }
    (sgn_out | enc) << fmt.shift
}

pub fn f64_to_small(x: u64, fmt: Format, mode: Mode) -> u64 {
    f64_to_small_sat(x, fmt, mode, false)
}

/// The IR helper implementing [`f64_to_small_sat`]: `define internal iN
/// @name(double %x)`. Returns the helper's name and text.
pub fn ir_helper(fmt: Format, mode: Mode, satfinite: bool) -> (String, String) {
    let bits = fmt.exp_bits + fmt.man_bits + 1 + fmt.shift;
    let out_bits = if bits <= 8 {
        8
    } else if bits <= 16 {
        16
    } else {
        32
    };
    let name = format!("__anycuda_round_{}_{}{}", fmt.name(), mode.name(), if satfinite { "_satfinite" } else { "" });
    let m = fmt.man_bits as i64;
    let emin = fmt.emin();
    let sign_bit = fmt.sign_bit();
    let ovf = fmt.overflow_enc();
    let up = match mode {
        Mode::Rn => "  %gt = icmp ugt i64 %rem, %half\n  %eqh = icmp eq i64 %rem, %half\n  %odd = trunc i64 %q to i1\n  %tie = and i1 %eqh, %odd\n  %tie2 = and i1 %tie, %inexact\n  %up = or i1 %gt, %tie2\n".to_string(),
        Mode::Rna => "  %ge = icmp uge i64 %rem, %half\n  %up = and i1 %ge, %inexact\n".to_string(),
        Mode::Rz => "  %up = or i1 false, false\n".to_string(),
        Mode::Rm => "  %up = and i1 %inexact, %neg\n".to_string(),
        Mode::Rp => "  %pos = xor i1 %neg, true\n  %up = and i1 %inexact, %pos\n".to_string(),
    };
    let to_inf = if !fmt.has_inf || satfinite {
        "  %toinf = or i1 false, false\n".to_string()
    } else {
        match mode {
            Mode::Rn | Mode::Rna => "  %toinf = or i1 true, true\n".to_string(),
            Mode::Rz => "  %toinf = or i1 false, false\n".to_string(),
            Mode::Rm => "  %toinf = or i1 %neg, %neg\n".to_string(),
            Mode::Rp => "  %toinf = xor i1 %neg, true\n".to_string(),
        }
    };
    let inf_mag = if fmt.has_inf && !satfinite { ovf } else { ovf - 1 };
    let text = format!(
        "define internal i{out_bits} @{name}(double %x) #0 {{
entry:
  %b = bitcast double %x to i64
  %neg = icmp slt i64 %b, 0
  %exp = lshr i64 %b, 52
  %exp1 = and i64 %exp, 2047
  %man = and i64 %b, 4503599627370495
  %sgn = select i1 %neg, i64 {sign_bit}, i64 0
  %isden = icmp eq i64 %exp1, 0
  %manh = or i64 %man, 4503599627370496
  %sig = select i1 %isden, i64 %man, i64 %manh
  %eb = sub i64 %exp1, 1023
  %e = select i1 %isden, i64 -1022, i64 %eb
  %ltmin = icmp slt i64 %e, {emin}
  %eq = select i1 %ltmin, i64 {emin}, i64 %e
  %s0 = sub i64 %eq, %e
  %s1 = add i64 %s0, {s_const}
  %s2 = call i64 @llvm.smin.i64(i64 %s1, i64 63)
  %shift = call i64 @llvm.smax.i64(i64 %s2, i64 0)
  %q = lshr i64 %sig, %shift
  %one = shl i64 1, %shift
  %mask = sub i64 %one, 1
  %rem = and i64 %sig, %mask
  %half = lshr i64 %one, 1
  %inexact = icmp ne i64 %rem, 0
{up}  %upz = zext i1 %up to i64
  %eoff = sub i64 %eq, {emin}
  %ebits = shl i64 %eoff, {m}
  %enc0 = add i64 %ebits, %q
  %enc = add i64 %enc0, %upz
  %ovf = icmp uge i64 %enc, {ovf}
{to_inf}  %omag = select i1 %toinf, i64 {ovf}, i64 {max_fin}
  %mag = select i1 %ovf, i64 %omag, i64 %enc
  %isspecial = icmp eq i64 %exp1, 2047
  %isnan0 = icmp ne i64 %man, 0
  %isnan = and i1 %isspecial, %isnan0
  %isinf0 = icmp eq i64 %man, 0
  %isinf = and i1 %isspecial, %isinf0
  %m1 = select i1 %isinf, i64 {inf_mag}, i64 %mag
  %r0 = or i64 %sgn, %m1
  %r1 = select i1 %isnan, i64 {nan}, i64 %r0
  %r2 = shl i64 %r1, {shift}
  %r = trunc i64 %r2 to i{out_bits}
  ret i{out_bits} %r
}}
",
        s_const = 52 - m,
        max_fin = ovf - 1,
        nan = fmt.nan,
        shift = fmt.shift,
    );
    (name, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_f16(x: f64, mode: Mode) -> u16 {
        f64_to_small(x.to_bits(), HALF, mode) as u16
    }

    /// An f16 value's exact double.
    fn from_f16(h: u16) -> f64 {
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let e = i32::from((h >> 10) & 0x1f);
        let m = f64::from(h & 0x3ff);
        sign * match e {
            0 => m * 2f64.powi(-24),
            31 if m == 0.0 => f64::INFINITY,
            31 => f64::NAN,
            _ => (1024.0 + m) * 2f64.powi(e - 25),
        }
    }

    /// Pairs of 16-bit operands for `check`: every value against the 300
    /// first of those at, above and below `bases` (either sign), then 3
    /// million random pairs from `seed`.
    fn pairs(bases: &[u16], seed: u64, check: impl Fn(u16, u16)) {
        let mut others: Vec<u16> = Vec::new();
        for &base in bases {
            for d in 0..25u16 {
                others.push(base.wrapping_add(d));
                others.push(base.wrapping_add(d) | 0x8000);
                others.push(base.wrapping_sub(d) | 0x8000);
            }
        }
        others.truncate(300);
        for a in 0..=u16::MAX {
            for &b in &others {
                check(a, b);
            }
        }
        let mut r = seed;
        for _ in 0..3_000_000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            check(r as u16, (r >> 16) as u16);
        }
    }

    /// What the lowering of f16 `add`, `sub` and `mul` relies on (its
    /// fast form computes in f32, then rounds to f16): rounding the f32
    /// result again gives the correctly rounded result of the exact one.
    /// Every f16 operand against 300 others (boundaries, subnormals, ties),
    /// and 3 million random pairs.
    #[test]
    fn f16_arithmetic_through_f32_rounds_correctly() {
        let check = |a: u16, b: u16| {
            let (x, y) = (from_f16(a), from_f16(b));
            if x.is_nan() || y.is_nan() {
                return;
            }
            for (k, exact) in [x + y, x - y, x * y].into_iter().enumerate() {
                let via = match k {
                    0 => (x as f32 + y as f32) as f64,
                    1 => (x as f32 - y as f32) as f64,
                    _ => (x as f32 * y as f32) as f64,
                };
                let want = to_f16(exact, Mode::Rn);
                let got = to_f16(via, Mode::Rn);
                assert_eq!(got, want, "op {k} of {a:#06x} and {b:#06x}");
            }
        };
        pairs(
            &[0x0000, 0x0001, 0x03ff, 0x0400, 0x1000, 0x3bff, 0x3c00, 0x3c01, 0x4000, 0x6000, 0x7bff, 0x7c00],
            0x9e37_79b9_7f4a_7c15,
            check,
        );
    }

    /// The bits' rounding of f32 to bf16 that the lowering emits
    /// (`narrow_float_rn`).
    fn bf16_of_f32_bits(b: u32) -> u16 {
        if f32::from_bits(b).is_nan() {
            return 0x7fff;
        }
        (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
    }

    fn to_bf16(x: f64) -> u16 {
        f64_to_small(x.to_bits(), BF16, Mode::Rn) as u16
    }

    /// Every f32 whose low half is at or next to a rounding boundary, every
    /// exponent and sign: the bits' rounding is the correct one.
    #[test]
    fn f32_to_bf16_on_the_bits_rounds_to_nearest_even() {
        for hi in 0..=u16::MAX {
            for lo in [0u32, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234, 0xc000] {
                let b = (u32::from(hi) << 16) | lo;
                let x = f32::from_bits(b);
                let want = if x.is_nan() { 0x7fff } else { to_bf16(f64::from(x)) };
                assert_eq!(bf16_of_f32_bits(b), want, "{b:#010x}");
            }
        }
    }

    /// bf16 `add`, `sub` and `mul` computed in f32, then rounded on the
    /// bits, against the correctly rounded exact results (exact in double):
    /// every bf16 operand against 300 others, and 3 million random pairs.
    #[test]
    fn bf16_arithmetic_through_f32_rounds_correctly() {
        let check = |a: u16, b: u16| {
            let (x, y) = (f32::from_bits(u32::from(a) << 16), f32::from_bits(u32::from(b) << 16));
            if x.is_nan() || y.is_nan() {
                return;
            }
            let (dx, dy) = (f64::from(x), f64::from(y));
            for (k, (exact, via)) in [(dx + dy, x + y), (dx - dy, x - y), (dx * dy, x * y)].into_iter().enumerate() {
                // A product beyond double's range cannot come from bf16
                // operands (|x * y| < 2^256).
                let want = if exact.is_nan() { 0x7fff } else { to_bf16(exact) };
                assert_eq!(bf16_of_f32_bits(via.to_bits()), want, "op {k} of {a:#06x} and {b:#06x}");
            }
        };
        pairs(
            &[0x0000, 0x0001, 0x007f, 0x0080, 0x0100, 0x3f7f, 0x3f80, 0x3f81, 0x4000, 0x7f00, 0x7f7f, 0x7f80],
            0x2545_f491_4f6c_dd1d,
            check,
        );
    }

    #[test]
    fn half_rounding() {
        assert_eq!(to_f16(1.0, Mode::Rn), 0x3C00);
        assert_eq!(to_f16(-2.0, Mode::Rn), 0xC000);
        assert_eq!(to_f16(65504.0, Mode::Rn), 0x7BFF);
        assert_eq!(to_f16(65520.0, Mode::Rn), 0x7C00); // ties to even at the top: overflow
        assert_eq!(to_f16(65519.0, Mode::Rn), 0x7BFF);
        assert_eq!(to_f16(1e6, Mode::Rz), 0x7BFF);
        assert_eq!(to_f16(-1e6, Mode::Rp), 0xFBFF);
        assert_eq!(to_f16(-1e6, Mode::Rm), 0xFC00);
        assert_eq!(to_f16(f64::INFINITY, Mode::Rz), 0x7C00);
        assert_eq!(to_f16(f64::NAN, Mode::Rn), 0x7FFF);
        assert_eq!(to_f16(5.960464477539063e-8, Mode::Rn), 0x0001); // smallest subnormal
        assert_eq!(to_f16(2.9e-8, Mode::Rn), 0x0000);
        assert_eq!(to_f16(3.0e-8, Mode::Rn), 0x0001);
        assert_eq!(to_f16(1e-30, Mode::Rp), 0x0001);
        assert_eq!(to_f16(-1e-30, Mode::Rp), 0x8000);
        assert_eq!(to_f16(-1e-30, Mode::Rm), 0x8001);
        assert_eq!(to_f16(1.0 + 1.0 / 2048.0, Mode::Rn), 0x3C00); // tie to even
        assert_eq!(to_f16(1.0 + 3.0 / 2048.0, Mode::Rn), 0x3C02);
        assert_eq!(to_f16(1.0 + 1.0 / 2048.0, Mode::Rna), 0x3C01);
        assert_eq!(to_f16(-0.0, Mode::Rn), 0x8000);
    }

    #[test]
    fn f32_matches_hardware_round_to_nearest() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            let ours = f64_to_small(x, F32, Mode::Rn) as u32;
            let hw = v as f32;
            if hw.is_nan() {
                assert_eq!(ours, 0x7fff_ffff);
            } else {
                assert_eq!(ours, hw.to_bits(), "{v:e}");
            }
        }
    }

    #[test]
    fn directed_modes_bracket_the_value() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            if !v.is_finite() || v.abs() > 1e38 {
                continue;
            }
            let lo = f32::from_bits(f64_to_small(x, F32, Mode::Rm) as u32) as f64;
            let hi = f32::from_bits(f64_to_small(x, F32, Mode::Rp) as u32) as f64;
            let z = f32::from_bits(f64_to_small(x, F32, Mode::Rz) as u32) as f64;
            assert!(lo <= v && v <= hi, "{v:e} {lo:e} {hi:e}");
            assert!(z.abs() <= v.abs());
            assert!(z == lo || z == hi);
        }
    }

    #[test]
    fn fp8_and_tf32() {
        assert_eq!(f64_to_small_sat(448.0f64.to_bits(), E4M3, Mode::Rn, true), 0x7E);
        assert_eq!(f64_to_small_sat(1000.0f64.to_bits(), E4M3, Mode::Rn, true), 0x7E);
        assert_eq!(f64_to_small_sat((-1000.0f64).to_bits(), E4M3, Mode::Rn, true), 0xFE);
        assert_eq!(f64_to_small_sat(1.0f64.to_bits(), E4M3, Mode::Rn, true), 0x38);
        assert_eq!(f64_to_small_sat(57344.0f64.to_bits(), E5M2, Mode::Rn, true), 0x7B);
        assert_eq!(f64_to_small_sat(1e6f64.to_bits(), E5M2, Mode::Rn, true), 0x7B);
        assert_eq!(f64_to_small_sat(1e6f64.to_bits(), E5M2, Mode::Rn, false), 0x7C);
        // tf32 keeps 10 mantissa bits in the f32 layout, ties away from zero.
        let x = f32::from_bits(0x3F80_1000) as f64; // 1 + 2^-11: a tie at 10 bits
        assert_eq!(f64_to_small(x.to_bits(), TF32, Mode::Rna), 0x3F80_2000);
    }
}
