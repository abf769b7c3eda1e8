//! Directed rounding computed in round-to-nearest arithmetic.
//!
//! PTX's `.rz/.rm/.rp` operations are lowered to small helpers
//! (`__anycuda_{op}_{format}_{mode}`). The plain form sets the rounding
//! mode around one constrained intrinsic. This module writes the other
//! form: round to nearest, which every target does natively, then step to
//! the neighbour on the side of the exact result. The sign of an exact
//! error term says on which side the exact result lies: the error of a sum
//! (TwoSum), of a product (`fma(a, b, -p)`, or the product of the f32
//! operands in double, which is exact), of a quotient (`a - q*b`), of a
//! root (`x - s*s`), of a conversion (`a - int(q)`).
//!
//! Two users:
//! - AMDGPU: LLVM 19 selects constrained `fadd`/`fsub`/`fmul`/`fma` (and f16
//!   `sqrt`) there, but has no lowering for constrained `fdiv`, `sqrt` and
//!   `sitofp`/`uitofp` from i64: it stops with a fatal error. Those helpers
//!   are replaced by these forms ([`amdgpu_replacement`]).
//! - The host without AVX-512 (whose instructions embed the rounding mode):
//!   changing x86's rounding mode (`fldcw` and `ldmxcsr`, twice per
//!   operation) serialises the pipeline. A thread-mode interval-arithmetic
//!   kernel (`benches/programs/interval`) spent nine tenths of its time in
//!   those four instructions; every scalar helper this module can write is
//!   written this way there ([`round_to_nearest_form`]).
//!
//! Every form is checked bit for bit against the constrained operation it
//! stands for, on the host, over values chosen near zero, one, the largest
//! finite value, the subnormal boundary, and near-cancelling pairs.

use std::fmt::Write;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Rz,
    Rm,
    Rp,
}

#[derive(Clone, Copy)]
struct Format {
    ty: &'static str,
    ity: &'static str,
    /// Bits of +infinity; the largest finite value is one less.
    inf: u64,
    /// Bits of the sign.
    sign: u64,
}

const F16: Format = Format { ty: "half", ity: "i16", inf: 0x7c00, sign: 0x8000 };
const F32: Format = Format { ty: "float", ity: "i32", inf: 0x7f80_0000, sign: 0x8000_0000 };
const F64: Format = Format { ty: "double", ity: "i64", inf: 0x7ff0_0000_0000_0000, sign: 0x8000_0000_0000_0000 };

/// The helper `name` of the lowering written in round-to-nearest
/// arithmetic (same name and signature), where this module has such a form:
/// `fadd`, `fsub`, `fmul` of f32 and f64, `fma` of f32, `fdiv` of f16, f32
/// and f64, `sqrt` of f32 and f64, and i64/u64 to f64 conversions. Vector
/// helpers (warp mode) have no such form.
pub fn round_to_nearest_form(name: &str) -> Option<String> {
    let rest = name.strip_prefix("__anycuda_")?;
    let mut parts = rest.split('_');
    let (op, ty, mode) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let mode = match mode {
        "rz" => Mode::Rz,
        "rm" => Mode::Rm,
        "rp" => Mode::Rp,
        _ => return None,
    };
    let fmt = match ty {
        "f16" => F16,
        "f32" => F32,
        "f64" => F64,
        _ => return None,
    };
    match op {
        "fadd" | "fsub" if ty != "f16" => Some(add(name, fmt, mode, op == "fsub")),
        "fmul" if ty == "f32" => Some(mul_f32(name, mode)),
        "fmul" if ty == "f64" => Some(mul_f64(name, mode)),
        "fma" if ty == "f32" => Some(fma_f32(name, mode)),
        "fdiv" => Some(div(name, fmt, mode)),
        "sqrt" if ty != "f16" => Some(sqrt(name, fmt, mode)),
        "sitofp" if ty == "f64" => Some(int_to_f64(name, true, mode)),
        "uitofp" if ty == "f64" => Some(int_to_f64(name, false, mode)),
        _ => None,
    }
}

/// The intrinsics the forms of [`round_to_nearest_form`] call, as
/// `(name, declaration)`.
pub const INTRINSICS: [(&str, &str); 6] = [
    ("llvm.fabs.f32", "declare float @llvm.fabs.f32(float)"),
    ("llvm.fabs.f64", "declare double @llvm.fabs.f64(double)"),
    ("llvm.fma.f32", "declare float @llvm.fma.f32(float, float, float)"),
    ("llvm.fma.f64", "declare double @llvm.fma.f64(double, double, double)"),
    ("llvm.sqrt.f32", "declare float @llvm.sqrt.f32(float)"),
    ("llvm.sqrt.f64", "declare double @llvm.sqrt.f64(double)"),
];

/// A definition replacing the lowering's helper `name` when AMDGPU cannot
/// compile the original: only `fdiv`, `sqrt` (not f16) and the i64/u64 to
/// f64 conversions; the others keep the constrained form, which AMDGPU
/// selects (its rounding mode is a field of the `MODE` register that one
/// instruction sets).
pub fn amdgpu_replacement(name: &str) -> Option<String> {
    let op = name.strip_prefix("__anycuda_")?.split('_').next()?;
    if matches!(op, "fdiv" | "sqrt" | "sitofp" | "uitofp") {
        round_to_nearest_form(name)
    } else {
        None
    }
}

fn hex(v: f64) -> String {
    format!("0x{:016X}", v.to_bits())
}

/// Appends `%res` (as bits `%res.b`): `%q` moved one step toward the exact
/// result where `mode` asks for it. `%above`/`%below` say where the exact
/// result lies. Where `%q` is infinite or zero, `%above`/`%below` must
/// point away from it only when the step gives the mode's answer (from an
/// infinity the largest finite value, from a zero the smallest subnormal).
fn step(s: &mut String, f: Format, mode: Mode) {
    let ity = f.ity;
    let _ = writeln!(s, "  %qb = bitcast {} %q to {ity}", f.ty);
    let _ = writeln!(s, "  %qneg = icmp slt {ity} %qb, 0");
    let _ = writeln!(s, "  %qinc = add {ity} %qb, 1\n  %qdec = sub {ity} %qb, 1");
    let _ = writeln!(s, "  %up = select i1 %qneg, {ity} %qdec, {ity} %qinc");
    let _ = writeln!(s, "  %down = select i1 %qneg, {ity} %qinc, {ity} %qdec");
    match mode {
        Mode::Rp => {
            let _ = writeln!(s, "  %res.b = select i1 %above, {ity} %up, {ity} %qb");
        }
        Mode::Rm => {
            let _ = writeln!(s, "  %res.b = select i1 %below, {ity} %down, {ity} %qb");
        }
        Mode::Rz => {
            s.push_str("  %qpos = xor i1 %qneg, true\n");
            s.push_str("  %in.pos = and i1 %below, %qpos\n  %in.neg = and i1 %above, %qneg\n");
            s.push_str("  %inward = or i1 %in.pos, %in.neg\n");
            let _ = writeln!(s, "  %res.b = select i1 %inward, {ity} %qdec, {ity} %qb");
        }
    }
}

/// `a / b` rounded by `mode`.
fn div(name: &str, f: Format, mode: Mode) -> String {
    let (ty, ity) = (f.ty, f.ity);
    let mut s = format!("define internal {ty} @{name}({ty} %a, {ty} %b) alwaysinline nounwind {{\n");
    if f.ty == "half" {
        // The f32 quotient rounded to f16 is the correctly rounded f16
        // quotient (24 >= 2*11 + 2 bits).
        s.push_str("  %a.s = fpext half %a to float\n  %b.s = fpext half %b to float\n");
        s.push_str("  %q.s = fdiv float %a.s, %b.s\n  %q = fptrunc float %q.s to half\n");
    } else {
        let _ = writeln!(s, "  %q = fdiv {ty} %a, %b");
    }
    // The remainder of the rounded quotient is exact: in double for the
    // narrower formats, and for double itself once tiny dividends (whose
    // remainder could underflow) are scaled up by 2^128.
    if f.ty == "double" {
        let _ = writeln!(s, "  %a.abs = call double @llvm.fabs.f64(double %a)");
        let _ = writeln!(s, "  %tiny = fcmp olt double %a.abs, {}", hex(2f64.powi(-900)));
        let _ = writeln!(s, "  %scale = select i1 %tiny, double {}, double 1.0", hex(2f64.powi(128)));
        s.push_str("  %ad = fmul double %a, %scale\n  %qd = fmul double %q, %scale\n");
        s.push_str("  %nq = fneg double %qd\n  %r = call double @llvm.fma.f64(double %nq, double %b, double %ad)\n");
    } else {
        let _ = writeln!(s, "  %ad = fpext {ty} %a to double\n  %bd = fpext {ty} %b to double\n  %qd = fpext {ty} %q to double");
        s.push_str("  %nq = fneg double %qd\n  %r = call double @llvm.fma.f64(double %nq, double %bd, double %ad)\n");
    }
    s.push_str("  %rpos = fcmp ogt double %r, 0.0\n  %rneg = fcmp olt double %r, 0.0\n");
    let _ = writeln!(s, "  %bneg = fcmp olt {ty} %b, 0.0");
    s.push_str("  %above = select i1 %bneg, i1 %rneg, i1 %rpos\n  %below = select i1 %bneg, i1 %rpos, i1 %rneg\n");
    step(&mut s, f, mode);
    // Results the remainder cannot judge: exact infinities, zeros and NaN
    // come back as they are; a finite quotient that rounded to infinity
    // or to zero is clamped by the mode.
    let (inf, max, sign) = (f.inf, f.inf - 1, f.sign);
    let _ = writeln!(s, "  %qa = call {ty} @llvm.fabs.{sfx}({ty} %q)", sfx = suffix(f));
    let _ = writeln!(s, "  %aa = call {ty} @llvm.fabs.{sfx}({ty} %a)", sfx = suffix(f));
    let _ = writeln!(s, "  %ba = call {ty} @llvm.fabs.{sfx}({ty} %b)", sfx = suffix(f));
    let inf_c = format!("0x{:016X}", f64::INFINITY.to_bits());
    let _ = writeln!(s, "  %qinf = fcmp oeq {ty} %qa, {inf_c}");
    let _ = writeln!(s, "  %qzero = fcmp oeq {ty} %q, 0.0");
    let _ = writeln!(s, "  %afin = fcmp one {ty} %aa, {inf_c}");
    let _ = writeln!(s, "  %bfin = fcmp one {ty} %ba, {inf_c}");
    let _ = writeln!(s, "  %anz = fcmp one {ty} %a, 0.0");
    let _ = writeln!(s, "  %bnz = fcmp one {ty} %b, 0.0");
    s.push_str("  %fin = and i1 %afin, %bfin\n  %bok = and i1 %fin, %bnz\n");
    s.push_str("  %over = and i1 %qinf, %bok\n  %aok = and i1 %fin, %anz\n  %under = and i1 %qzero, %aok\n");
    // Overflow: toward zero gives the largest finite value, away from zero
    // infinity (the rounded quotient). Underflow: the smallest subnormal
    // away from zero, the rounded zero toward it.
    let (over_pos, over_neg, under_pos, under_neg) = match mode {
        Mode::Rz => (max, sign | max, 0, sign),
        Mode::Rp => (inf, sign | max, 1, sign),
        Mode::Rm => (max, sign | inf, 0, sign | 1),
    };
    let _ = writeln!(s, "  %over.b = select i1 %qneg, {ity} {}, {ity} {}", over_neg as i64, over_pos as i64);
    let _ = writeln!(s, "  %under.b = select i1 %qneg, {ity} {}, {ity} {}", under_neg as i64, under_pos as i64);
    s.push_str("  %plain = or i1 %qinf, %qzero\n");
    let _ = writeln!(s, "  %qnan = fcmp uno {ty} %q, 0.0");
    s.push_str("  %keep = or i1 %plain, %qnan\n");
    let _ = writeln!(s, "  %b1 = select i1 %keep, {ity} %qb, {ity} %res.b");
    let _ = writeln!(s, "  %b2 = select i1 %under, {ity} %under.b, {ity} %b1");
    let _ = writeln!(s, "  %b3 = select i1 %over, {ity} %over.b, {ity} %b2");
    let _ = writeln!(s, "  %res = bitcast {ity} %b3 to {ty}\n  ret {ty} %res\n}}");
    s
}

fn suffix(f: Format) -> &'static str {
    match f.ty {
        "half" => "f16",
        "float" => "f32",
        _ => "f64",
    }
}

/// The bits of the results a finite operation that rounded to infinity
/// gives in `mode`, as `(positive, negative)`: toward zero the largest
/// finite value, away from zero infinity.
fn overflow_bits(f: Format, mode: Mode) -> (u64, u64) {
    let (inf, max, sign) = (f.inf, f.inf - 1, f.sign);
    match mode {
        Mode::Rz => (max, sign | max),
        Mode::Rp => (inf, sign | max),
        Mode::Rm => (max, sign | inf),
    }
}

/// Appends `%overflow` (i1): `%q` is infinite while `%a` and `%b` are
/// finite.
fn overflowed(s: &mut String, f: Format) {
    let (ty, sfx) = (f.ty, suffix(f));
    let inf = format!("0x{:016X}", f64::INFINITY.to_bits());
    for x in ["q", "a", "b"] {
        let _ = writeln!(s, "  %{x}.abs = call {ty} @llvm.fabs.{sfx}({ty} %{x})");
    }
    let _ = writeln!(s, "  %qinf = fcmp oeq {ty} %q.abs, {inf}");
    let _ = writeln!(s, "  %afin = fcmp one {ty} %a.abs, {inf}\n  %bfin = fcmp one {ty} %b.abs, {inf}");
    s.push_str("  %fin = and i1 %afin, %bfin\n  %overflow = and i1 %qinf, %fin\n");
}

/// `a + b` (`a - b` when `sub`) rounded by `mode`: the sum rounded to
/// nearest, `q`, and its exact error `e = a + b - q` by Fast2Sum (exact
/// whenever `q` is finite, subnormal sums included, since the error of a
/// sum is always representable). `e > 0`: the exact sum
/// lies above `q`. A sum that rounded to infinity from finite operands is
/// clamped by the mode; an exact zero sum is -0 toward minus infinity
/// unless both operands are +0 (IEEE 754's rule), +0 otherwise as to
/// nearest.
fn add(name: &str, f: Format, mode: Mode, sub: bool) -> String {
    let (ty, ity) = (f.ty, f.ity);
    let mut s = if sub {
        let mut s = format!("define internal {ty} @{name}({ty} %a, {ty} %b0) alwaysinline nounwind {{\n");
        let _ = writeln!(s, "  %b = fneg {ty} %b0");
        s
    } else {
        format!("define internal {ty} @{name}({ty} %a, {ty} %b) alwaysinline nounwind {{\n")
    };
    let _ = writeln!(s, "  %q = fadd {ty} %a, %b");
    // Fast2Sum on the operands ordered by magnitude: `z = q - x` is exact
    // and cannot overflow (Knuth's branch-free TwoSum can, for operands
    // near the largest finite value).
    let sfx = suffix(f);
    let _ = writeln!(s, "  %a.m = call {ty} @llvm.fabs.{sfx}({ty} %a)\n  %b.m = call {ty} @llvm.fabs.{sfx}({ty} %b)");
    let _ = writeln!(s, "  %a.big = fcmp oge {ty} %a.m, %b.m");
    let _ = writeln!(s, "  %x = select i1 %a.big, {ty} %a, {ty} %b\n  %y = select i1 %a.big, {ty} %b, {ty} %a");
    let _ = writeln!(s, "  %z = fsub {ty} %q, %x\n  %e = fsub {ty} %y, %z");
    let _ = writeln!(s, "  %above = fcmp ogt {ty} %e, 0.0\n  %below = fcmp olt {ty} %e, 0.0");
    // An infinite or NaN sum has a NaN error: neither above nor below.
    step(&mut s, f, mode);
    overflowed(&mut s, f);
    let (pos, neg) = overflow_bits(f, mode);
    let _ = writeln!(s, "  %over.b = select i1 %qneg, {ity} {}, {ity} {}", neg as i64, pos as i64);
    let _ = writeln!(s, "  %b1 = select i1 %overflow, {ity} %over.b, {ity} %res.b");
    if mode == Mode::Rm {
        let _ = writeln!(s, "  %qzero = fcmp oeq {ty} %q, 0.0");
        let _ = writeln!(s, "  %a.i = bitcast {ty} %a to {ity}\n  %b.i = bitcast {ty} %b to {ity}");
        let _ = writeln!(s, "  %ab.i = or {ity} %a.i, %b.i\n  %zero.b = and {ity} %ab.i, {}", f.sign as i64);
        let _ = writeln!(s, "  %b2 = select i1 %qzero, {ity} %zero.b, {ity} %b1");
    } else {
        let _ = writeln!(s, "  %b2 = or {ity} %b1, 0");
    }
    let _ = writeln!(s, "  %res = bitcast {ity} %b2 to {ty}\n  ret {ty} %res\n}}");
    s
}

/// `a * b` of f32 rounded by `mode`: the product of the operands in double
/// is exact (24 + 24 significant bits, exponents far inside double's
/// range), so the f32 product rounded to nearest compares with it exactly.
/// Infinities from finite operands, underflows to zero and subnormal
/// results need nothing more: the step from an infinity toward the exact
/// product is the largest finite value, from a zero the smallest
/// subnormal.
fn mul_f32(name: &str, mode: Mode) -> String {
    let mut s = format!("define internal float @{name}(float %a, float %b) alwaysinline nounwind {{\n");
    s.push_str("  %ad = fpext float %a to double\n  %bd = fpext float %b to double\n  %pd = fmul double %ad, %bd\n");
    s.push_str("  %q = fptrunc double %pd to float\n  %qd = fpext float %q to double\n");
    s.push_str("  %above = fcmp olt double %qd, %pd\n  %below = fcmp ogt double %qd, %pd\n");
    step(&mut s, F32, mode);
    s.push_str("  %res = bitcast i32 %res.b to float\n  ret float %res\n}\n");
    s
}

/// `a * b` of f64 rounded by `mode`. The error of the product rounded to
/// nearest, `fma(a, b, -q)`, is exact while `|q| >= 2^-960` (the error of a
/// product is representable unless the product's exponent is below
/// `emin + p - 1 = -970`). For tinier products only the error's sign
/// matters, and it survives rounding as long as the error does not
/// underflow to zero: the smaller operand (below 2^-484, so no overflow)
/// is scaled by 2^1000, and the larger one too when the scaled product is
/// still below 2^-900 (then `q` is zero and the larger operand below
/// 2^-826); `q` is scaled alike, exactly. The scaled error is then a
/// multiple of at least 2^-1006 or a product of normal numbers: never a
/// rounded zero. Zero operands give NaN errors (zero times a scaled
/// infinity) or zero: no step, the signed zero is exact.
fn mul_f64(name: &str, mode: Mode) -> String {
    let mut s = "define internal double @NAME(double %a, double %b) alwaysinline nounwind {\n".replace("NAME", name);
    s.push_str("  %q = fmul double %a, %b\n");
    s.push_str("  %a.abs = call double @llvm.fabs.f64(double %a)\n  %b.abs = call double @llvm.fabs.f64(double %b)\n");
    s.push_str("  %a.small = fcmp olt double %a.abs, %b.abs\n");
    s.push_str("  %m = select i1 %a.small, double %a, double %b\n  %mm = select i1 %a.small, double %b, double %a\n");
    s.push_str("  %qa = call double @llvm.fabs.f64(double %q)\n");
    let big = hex(2f64.powi(1000));
    let _ = writeln!(s, "  %tiny = fcmp olt double %qa, {}", hex(2f64.powi(-960)));
    let _ = writeln!(s, "  %s1 = select i1 %tiny, double {big}, double 1.0");
    s.push_str("  %m1 = fmul double %m, %s1\n  %p1 = fmul double %m1, %mm\n");
    s.push_str("  %p1a = call double @llvm.fabs.f64(double %p1)\n");
    let _ = writeln!(s, "  %small2 = fcmp olt double %p1a, {}", hex(2f64.powi(-900)));
    s.push_str("  %tiny2 = and i1 %tiny, %small2\n");
    let _ = writeln!(s, "  %s2 = select i1 %tiny2, double {big}, double 1.0");
    s.push_str("  %mm1 = fmul double %mm, %s2\n  %q1 = fmul double %q, %s1\n  %q2 = fmul double %q1, %s2\n");
    s.push_str("  %nq = fneg double %q2\n  %r = call double @llvm.fma.f64(double %m1, double %mm1, double %nq)\n");
    s.push_str("  %above = fcmp ogt double %r, 0.0\n  %below = fcmp olt double %r, 0.0\n");
    step(&mut s, F64, mode);
    s.push_str("  %res = bitcast i64 %res.b to double\n  ret double %res\n}\n");
    s
}

/// `a * b + c` of f32 rounded by `mode`. In double, `a*b` is exact and
/// TwoSum gives `t + e = a*b + c` exactly. With `q` the f32 result rounded
/// to nearest (`llvm.fma.f32`), `t - q` is exact (Sterbenz: a non-zero `q`
/// lies within a factor of two of `t`; a zero `q` subtracts nothing), so
/// `(t - q) + e` has the sign of the exact `a*b + c - q` (every value here
/// is a multiple of 2^-298, far above double's underflow). An exact zero
/// result is -0 toward minus infinity unless `a*b` and `c` are both +0.
fn fma_f32(name: &str, mode: Mode) -> String {
    let mut s = format!("define internal float @{name}(float %a, float %b, float %c) alwaysinline nounwind {{\n");
    s.push_str("  %ad = fpext float %a to double\n  %bd = fpext float %b to double\n  %cd = fpext float %c to double\n");
    s.push_str("  %ab = fmul double %ad, %bd\n  %t = fadd double %ab, %cd\n");
    s.push_str("  %tv = fsub double %t, %ab\n  %tu = fsub double %t, %tv\n");
    s.push_str("  %cr = fsub double %cd, %tv\n  %abr = fsub double %ab, %tu\n  %e = fadd double %abr, %cr\n");
    s.push_str("  %q = call float @llvm.fma.f32(float %a, float %b, float %c)\n  %qd = fpext float %q to double\n");
    s.push_str("  %d1 = fsub double %t, %qd\n  %d = fadd double %d1, %e\n");
    s.push_str("  %above = fcmp ogt double %d, 0.0\n  %below = fcmp olt double %d, 0.0\n");
    step(&mut s, F32, mode);
    if mode == Mode::Rm {
        s.push_str("  %qzero = fcmp oeq float %q, 0.0\n  %dzero = fcmp oeq double %d, 0.0\n  %exact0 = and i1 %qzero, %dzero\n");
        s.push_str("  %a.i = bitcast float %a to i32\n  %b.i = bitcast float %b to i32\n  %c.i = bitcast float %c to i32\n");
        s.push_str("  %ab.i = xor i32 %a.i, %b.i\n  %abc.i = or i32 %ab.i, %c.i\n");
        let _ = writeln!(s, "  %zero.b = and i32 %abc.i, {}", F32.sign as i64);
        s.push_str("  %b1 = select i1 %exact0, i32 %zero.b, i32 %res.b\n");
    } else {
        s.push_str("  %b1 = or i32 %res.b, 0\n");
    }
    s.push_str("  %res = bitcast i32 %b1 to float\n  ret float %res\n}\n");
    s
}

/// `sqrt(x)` rounded by `mode`.
fn sqrt(name: &str, f: Format, mode: Mode) -> String {
    let (ty, ity) = (f.ty, f.ity);
    let sfx = suffix(f);
    let param = if f.ty == "double" { "%x0" } else { "%x" };
    let mut s = format!("define internal {ty} @{name}({ty} {param}) alwaysinline nounwind {{\n");
    if f.ty == "double" {
        // x - s*s of a tiny x could underflow: scale by 2^128 (the root by
        // 2^64), which is exact both ways since roots are never subnormal.
        let _ = writeln!(s, "  %tiny = fcmp olt double %x0, {}", hex(2f64.powi(-900)));
        let _ = writeln!(s, "  %up.s = select i1 %tiny, double {}, double 1.0", hex(2f64.powi(128)));
        let _ = writeln!(s, "  %down.s = select i1 %tiny, double {}, double 1.0", hex(2f64.powi(-64)));
        s.push_str("  %x = fmul double %x0, %up.s\n");
    }
    let _ = writeln!(s, "  %q = call {ty} @llvm.sqrt.{sfx}({ty} %x)");
    if f.ty == "double" {
        s.push_str("  %nq = fneg double %q\n  %r = call double @llvm.fma.f64(double %nq, double %q, double %x)\n");
    } else {
        let _ = writeln!(s, "  %xd = fpext {ty} %x to double\n  %qd = fpext {ty} %q to double");
        s.push_str("  %nq = fneg double %qd\n  %r = call double @llvm.fma.f64(double %nq, double %qd, double %xd)\n");
    }
    s.push_str("  %above = fcmp ogt double %r, 0.0\n  %below = fcmp olt double %r, 0.0\n");
    step(&mut s, f, mode);
    // Zeros, infinity, NaN (and negative inputs, which give NaN) are exact.
    let _ = writeln!(s, "  %pos = fcmp ogt {ty} %x, 0.0");
    let _ = writeln!(s, "  %fin = fcmp one {ty} %x, 0x{:016X}", f64::INFINITY.to_bits());
    s.push_str("  %normal = and i1 %pos, %fin\n");
    let _ = writeln!(s, "  %b = select i1 %normal, {ity} %res.b, {ity} %qb");
    let _ = writeln!(s, "  %res = bitcast {ity} %b to {ty}");
    if f.ty == "double" {
        s.push_str("  %res.u = fmul double %res, %down.s\n  ret double %res.u\n}\n");
    } else {
        let _ = writeln!(s, "  ret {ty} %res\n}}");
    }
    s
}

/// An i64 (or u64) converted to double, rounded by `mode`.
fn int_to_f64(name: &str, signed: bool, mode: Mode) -> String {
    let (conv, back, lt, gt, limit) =
        if signed { ("sitofp", "fptosi", "slt", "sgt", 2f64.powi(63)) } else { ("uitofp", "fptoui", "ult", "ugt", 2f64.powi(64)) };
    let mut s = format!("define internal double @{name}(i64 %a) alwaysinline nounwind {{\n");
    let _ = writeln!(s, "  %q = {conv} i64 %a to double");
    // The rounded value is an integer; only 2^63 (2^64) is out of range
    // for the way back, and it lies above every input.
    let _ = writeln!(s, "  %big = fcmp oge double %q, {}", hex(limit));
    let _ = writeln!(s, "  %back = {back} double %q to i64");
    let _ = writeln!(s, "  %gt = icmp {gt} i64 %a, %back\n  %lt = icmp {lt} i64 %a, %back");
    s.push_str("  %above = select i1 %big, i1 false, i1 %gt\n  %below = select i1 %big, i1 true, i1 %lt\n");
    step(&mut s, F64, mode);
    s.push_str("  %res = bitcast i64 %res.b to double\n  ret double %res\n}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::OptimizationLevel;

    #[test]
    fn only_the_operations_amdgpu_lacks_are_replaced() {
        assert!(amdgpu_replacement("__anycuda_fdiv_f32_rz").is_some());
        assert!(amdgpu_replacement("__anycuda_sqrt_f64_rp").is_some());
        assert!(amdgpu_replacement("__anycuda_sitofp_f64_rm").is_some());
        assert!(amdgpu_replacement("__anycuda_uitofp_f64_rz").is_some());
        assert!(amdgpu_replacement("__anycuda_fadd_f32_rz").is_none());
        assert!(amdgpu_replacement("__anycuda_fmul_f64_rm").is_none());
        assert!(amdgpu_replacement("__anycuda_sqrt_f16_rz").is_none());
        assert!(amdgpu_replacement("__anycuda_fdiv_f32_rn").is_none());
        assert!(amdgpu_replacement("__anycuda_round_e8m23_rz").is_none());
    }

    #[test]
    fn the_host_forms_cover_scalar_helpers_only() {
        for name in ["__anycuda_fadd_f32_rz", "__anycuda_fsub_f64_rm", "__anycuda_fmul_f64_rp", "__anycuda_fma_f32_rm"] {
            assert!(round_to_nearest_form(name).is_some(), "{name}");
        }
        // Vector helpers (warp mode), f64 fma and f16 sums keep the
        // constrained form.
        for name in ["__anycuda_fadd_v32f32_rz", "__anycuda_fma_f64_rm", "__anycuda_fadd_f16_rp", "__anycuda_fma_f16_rz"] {
            assert!(round_to_nearest_form(name).is_none(), "{name}");
        }
    }

    const MODES: [(&str, u32); 3] = [("rz", 0), ("rp", 2), ("rm", 3)];

    /// What the lowering computes on the host: the operation under the
    /// dynamic rounding mode, through a constrained intrinsic.
    fn reference(op: &str, sfx: &str, ty: &str, mode: u32, params: &str, args: &str) -> String {
        format!(
            "define {ty} @ref_{op}_{sfx}_{mode}({params}) strictfp {{\n  call void @llvm.set.rounding(i32 {mode}) strictfp\n  %r = call {ty} @llvm.experimental.constrained.{op}.{sfx}({args}, metadata !\"round.dynamic\", metadata !\"fpexcept.ignore\") strictfp\n  call void @llvm.set.rounding(i32 1) strictfp\n  ret {ty} %r\n}}\n"
        )
    }

    /// An integer-typed wrapper, so that the test calls no half-typed function.
    fn wrapper(name: &str, ty: &str, ity: &str, args: usize) -> String {
        let params: Vec<String> = (0..args).map(|i| format!("{ity} %i{i}")).collect();
        let mut s = format!("define {ity} @t.{name}({}) {{\n", params.join(", "));
        let mut call = Vec::new();
        for i in 0..args {
            s.push_str(&format!("  %f{i} = bitcast {ity} %i{i} to {ty}\n"));
            call.push(format!("{ty} %f{i}"));
        }
        s.push_str(&format!("  %r = call {ty} @{name}({})\n  %b = bitcast {ty} %r to {ity}\n  ret {ity} %b\n}}\n", call.join(", ")));
        s
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Interesting bit patterns of a format with `bits` bits: random ones,
    /// and values near zero, one, the largest finite value and the
    /// subnormal boundary, with both signs.
    fn samples(bits: u32, mant: u32, n: usize, rng: &mut Rng) -> Vec<u64> {
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let exp_bits = bits - 1 - mant;
        let bias = (1u64 << (exp_bits - 1)) - 1;
        let one = bias << mant;
        let inf = ((1u64 << exp_bits) - 1) << mant;
        let min_normal = 1u64 << mant;
        let mut v = vec![
            0,
            1,
            2,
            min_normal - 1,
            min_normal,
            min_normal + 1,
            one - 1,
            one,
            one + 1,
            inf - 1,
            inf - 2,
            inf,
            inf + 1,
            3 << (mant - 1),
        ];
        for i in 0..n {
            let r = rng.next() & mask;
            v.push(match i % 4 {
                0 => r,
                // Exponents near the bias: ordinary values.
                1 => (r & ((1 << mant) - 1)) | ((bias - 4 + (r >> 60) % 9) << mant),
                // Tiny and huge magnitudes.
                2 => r & ((1u64 << (mant + 3)) - 1),
                _ => (r & ((1 << mant) - 1)) | ((((1u64 << exp_bits) - 4) + (r >> 61) % 3) << mant),
            });
        }
        let sign = 1u64 << (bits - 1);
        let neg: Vec<u64> = v.iter().map(|x| x | sign).collect();
        v.extend(neg);
        v
    }

    fn is_nan(bits: u64, width: u32, mant: u32) -> bool {
        let exp_mask = ((1u64 << (width - 1 - mant)) - 1) << mant;
        bits & exp_mask == exp_mask && bits & ((1 << mant) - 1) != 0
    }

    /// A format as (suffix, LLVM type, integer type, width, mantissa bits).
    type Fmt = (&'static str, &'static str, &'static str, u32, u32);

    /// The operations with a round-to-nearest form: name, arity, formats.
    const OPS: [(&str, usize, &[Fmt]); 6] = [
        ("fadd", 2, &[F32T, F64T]),
        ("fsub", 2, &[F32T, F64T]),
        ("fmul", 2, &[F32T, F64T]),
        ("fdiv", 2, &[F16T, F32T, F64T]),
        ("sqrt", 1, &[F32T, F64T]),
        ("fma", 3, &[F32T]),
    ];
    const F16T: Fmt = ("f16", "half", "i16", 16, 10);
    const F32T: Fmt = ("f32", "float", "i32", 32, 23);
    const F64T: Fmt = ("f64", "double", "i64", 64, 52);

    /// Operand tuples for an operation of `arity` over `xs`: pairs across
    /// the samples, near-cancelling pairs (the other sign, the last bit
    /// flipped), and for `fma` addends that cancel the product rounded to
    /// nearest, exactly or within one unit in the last place.
    fn operands(arity: usize, xs: &[u64], width: u32, rng: &mut Rng) -> Vec<[u64; 3]> {
        let sign = 1u64 << (width - 1);
        let mut v = Vec::new();
        match arity {
            1 => v.extend(xs.iter().map(|&a| [a, 0, 0])),
            2 => {
                for (i, &a) in xs.iter().enumerate() {
                    v.extend(xs.iter().skip(i % 7).step_by(7).map(|&b| [a, b, 0]));
                    v.push([a, a ^ sign ^ 1, 0]);
                    v.push([a, a ^ sign, 0]);
                    v.push([a, a ^ 1, 0]);
                }
            }
            _ => {
                for (i, &a) in xs.iter().enumerate() {
                    for &b in xs.iter().skip(i % 11).step_by(11) {
                        let c = xs[(rng.next() % xs.len() as u64) as usize];
                        v.push([a, b, c]);
                        let p = (f32::from_bits(a as u32) * f32::from_bits(b as u32)).to_bits() as u64 ^ sign;
                        v.extend([
                            [a, b, p],
                            [a, b, p.wrapping_add(1) & (sign | (sign - 1))],
                            [a, b, p.wrapping_sub(1) & (sign | (sign - 1))],
                        ]);
                    }
                }
            }
        }
        v
    }

    /// The round-to-nearest forms, run on the host, agree bit for bit with
    /// the constrained operations they stand for, in every mode.
    #[test]
    fn round_to_nearest_forms_round_like_the_constrained_operations() {
        crate::targets::host::init().expect("native target");
        let mut ir = String::from("declare void @llvm.set.rounding(i32)\ndeclare half @llvm.fabs.f16(half)\n");
        for (_, decl) in INTRINSICS {
            ir.push_str(decl);
            ir.push('\n');
        }
        for (op, arity, formats) in OPS {
            for &(sfx, ty, _, _, _) in formats {
                let tys = vec![ty; arity].join(", ");
                let _ = writeln!(ir, "declare {ty} @llvm.experimental.constrained.{op}.{sfx}({tys}, metadata, metadata)");
            }
        }
        for op in ["sitofp", "uitofp"] {
            let _ = writeln!(ir, "declare double @llvm.experimental.constrained.{op}.f64.i64(i64, metadata, metadata)");
        }
        for (m, k) in MODES {
            for (op, arity, formats) in OPS {
                for &(sfx, ty, ity, _, _) in formats {
                    let name = format!("__anycuda_{op}_{sfx}_{m}");
                    ir.push_str(&round_to_nearest_form(&name).unwrap_or_else(|| panic!("{name} has a form")));
                    ir.push_str(&wrapper(&name, ty, ity, arity));
                    let params: Vec<String> = (0..arity).map(|i| format!("{ty} %a{i}")).collect();
                    let params = params.join(", ");
                    ir.push_str(&reference(op, sfx, ty, k, &params, &params));
                    ir.push_str(&wrapper(&format!("ref_{op}_{sfx}_{k}"), ty, ity, arity));
                }
            }
            for op in ["sitofp", "uitofp"] {
                let name = format!("__anycuda_{op}_f64_{m}");
                ir.push_str(&round_to_nearest_form(&name).expect("conversion"));
                ir.push_str(&format!(
                    "define i64 @t.{name}(i64 %a) {{\n  %r = call double @{name}(i64 %a)\n  %b = bitcast double %r to i64\n  ret i64 %b\n}}\n"
                ));
                ir.push_str(&reference(op, "f64.i64", "double", k, "i64 %a", "i64 %a"));
                ir.push_str(&format!(
                    "define i64 @t.ref_{op}_f64_{k}(i64 %a) {{\n  %r = call double @ref_{op}_f64.i64_{k}(i64 %a)\n  %b = bitcast double %r to i64\n  ret i64 %b\n}}\n"
                ));
            }
        }
        let context = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "directed");
        let module = context.create_module_from_ir(buf).expect("parses");
        module.verify().expect("verifies");
        let ee = module.create_jit_execution_engine(OptimizationLevel::Default).expect("jit");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut failures = Vec::new();
        let mut checked = 0usize;
        type F3 = unsafe extern "C" fn(u64, u64, u64) -> u64;
        type F1 = unsafe extern "C" fn(u64) -> u64;
        for (m, k) in MODES {
            for (op, arity, formats) in OPS {
                for &(sfx, _, _, width, mant) in formats {
                    let n = if width == 16 { 300 } else { 600 };
                    let xs = samples(width, mant, n, &mut rng);
                    let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
                    // SAFETY: the wrappers take one to three integers of
                    // the format's width and return one, all in 64-bit
                    // registers; extra arguments are ignored by the callee.
                    let (ours, theirs) = unsafe {
                        (
                            ee.get_function::<F3>(&format!("t.__anycuda_{op}_{sfx}_{m}")).expect("ours"),
                            ee.get_function::<F3>(&format!("t.ref_{op}_{sfx}_{k}")).expect("reference"),
                        )
                    };
                    for [a, b, c] in operands(arity, &xs, width, &mut rng) {
                        // SAFETY: as above.
                        let (x, y) = unsafe { (ours.call(a, b, c) & mask, theirs.call(a, b, c) & mask) };
                        checked += 1;
                        if x != y && !(is_nan(x, width, mant) && is_nan(y, width, mant)) {
                            failures.push(format!("{op}.{sfx}.{m}({a:#x}, {b:#x}, {c:#x}) = {x:#x}, expected {y:#x}"));
                        }
                    }
                }
            }
            for op in ["sitofp", "uitofp"] {
                // SAFETY: i64 in, double bits out.
                let (ours, theirs) = unsafe {
                    (
                        ee.get_function::<F1>(&format!("t.__anycuda_{op}_f64_{m}")).expect("ours"),
                        ee.get_function::<F1>(&format!("t.ref_{op}_f64_{k}")).expect("reference"),
                    )
                };
                let mut ints = vec![0u64, 1, u64::MAX, i64::MAX as u64, i64::MIN as u64, (1 << 53) + 1, (1 << 54) + 3, u64::MAX - 1];
                for i in 0..4000 {
                    let r = rng.next();
                    ints.push(r >> (i % 64));
                    ints.push((r >> (i % 64)).wrapping_neg());
                }
                for &a in &ints {
                    // SAFETY: as above.
                    let (x, y) = unsafe { (ours.call(a), theirs.call(a)) };
                    checked += 1;
                    if x != y {
                        failures.push(format!("{op}.{m}({a:#x}) = {x:#x}, expected {y:#x}"));
                    }
                }
            }
        }
        assert!(checked > 5_000_000, "only {checked} cases");
        assert!(
            failures.is_empty(),
            "{} mismatches:\n{}",
            failures.len(),
            failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}
