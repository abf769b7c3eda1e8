//! Directed rounding without the operations LLVM 19 cannot select for
//! AMDGPU.
//!
//! The lowering rounds `.rz/.rm/.rp` operations through small `strictfp`
//! helpers that set the rounding mode around a constrained intrinsic. The
//! AMDGPU backend selects constrained `fadd`/`fsub`/`fmul`/`fma` (and f16
//! `sqrt`), but has no lowering for constrained `fdiv`, `sqrt` and
//! `sitofp`/`uitofp` from i64: it stops with a fatal error. Those helpers are
//! replaced here by ones that round to nearest, which AMDGPU does
//! correctly, and then step to the neighbour on the side of the exact
//! result: the sign of the exact remainder (`a - q*b`, `x - s*s`, `a -
//! int(q)`) says on which side of the rounded result the exact one lies.

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

/// A definition replacing the lowering's helper `name` (same name and
/// signature), when AMDGPU cannot compile the original.
pub fn replacement(name: &str) -> Option<String> {
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
        "fdiv" => Some(div(name, fmt, mode)),
        "sqrt" if ty != "f16" => Some(sqrt(name, fmt, mode)),
        "sitofp" if ty == "f64" => Some(int_to_f64(name, true, mode)),
        "uitofp" if ty == "f64" => Some(int_to_f64(name, false, mode)),
        _ => None,
    }
}

fn hex(v: f64) -> String {
    format!("0x{:016X}", v.to_bits())
}

/// Appends `%res` (as bits `%res.b`): `%q` moved one step toward the exact
/// result where `mode` asks for it. `%above`/`%below` say where the exact
/// result lies; `%q` must be finite and non-zero.
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
        assert!(replacement("__anycuda_fdiv_f32_rz").is_some());
        assert!(replacement("__anycuda_sqrt_f64_rp").is_some());
        assert!(replacement("__anycuda_sitofp_f64_rm").is_some());
        assert!(replacement("__anycuda_uitofp_f64_rz").is_some());
        assert!(replacement("__anycuda_fadd_f32_rz").is_none());
        assert!(replacement("__anycuda_sqrt_f16_rz").is_none());
        assert!(replacement("__anycuda_fdiv_f32_rn").is_none());
        assert!(replacement("__anycuda_round_e8m23_rz").is_none());
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

    /// The replacements, run on the host, agree bit for bit with the
    /// constrained operations they stand for.
    #[test]
    fn replacements_round_like_the_constrained_operations() {
        crate::targets::host::init().expect("native target");
        let mut ir = String::from(
            "declare void @llvm.set.rounding(i32)
declare double @llvm.fma.f64(double, double, double)
declare half @llvm.fabs.f16(half)
declare float @llvm.fabs.f32(float)
declare double @llvm.fabs.f64(double)
declare float @llvm.sqrt.f32(float)
declare double @llvm.sqrt.f64(double)
declare half @llvm.experimental.constrained.fdiv.f16(half, half, metadata, metadata)
declare float @llvm.experimental.constrained.fdiv.f32(float, float, metadata, metadata)
declare double @llvm.experimental.constrained.fdiv.f64(double, double, metadata, metadata)
declare float @llvm.experimental.constrained.sqrt.f32(float, metadata, metadata)
declare double @llvm.experimental.constrained.sqrt.f64(double, metadata, metadata)
declare double @llvm.experimental.constrained.sitofp.f64.i64(i64, metadata, metadata)
declare double @llvm.experimental.constrained.uitofp.f64.i64(i64, metadata, metadata)
",
        );
        let formats = [("f16", "half", "i16"), ("f32", "float", "i32"), ("f64", "double", "i64")];
        for (m, k) in MODES {
            for (sfx, ty, ity) in formats {
                let name = format!("__anycuda_fdiv_{sfx}_{m}");
                ir.push_str(&replacement(&name).expect("fdiv"));
                ir.push_str(&wrapper(&name, ty, ity, 2));
                ir.push_str(&reference("fdiv", sfx, ty, k, &format!("{ty} %a, {ty} %b"), &format!("{ty} %a, {ty} %b")));
                ir.push_str(&wrapper(&format!("ref_fdiv_{sfx}_{k}"), ty, ity, 2));
                if sfx != "f16" {
                    let name = format!("__anycuda_sqrt_{sfx}_{m}");
                    ir.push_str(&replacement(&name).expect("sqrt"));
                    ir.push_str(&wrapper(&name, ty, ity, 1));
                    ir.push_str(&reference("sqrt", sfx, ty, k, &format!("{ty} %a"), &format!("{ty} %a")));
                    ir.push_str(&wrapper(&format!("ref_sqrt_{sfx}_{k}"), ty, ity, 1));
                }
            }
            for op in ["sitofp", "uitofp"] {
                let name = format!("__anycuda_{op}_f64_{m}");
                ir.push_str(&replacement(&name).expect("conversion"));
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
        type F2 = unsafe extern "C" fn(u64, u64) -> u64;
        type F1 = unsafe extern "C" fn(u64) -> u64;
        for (m, k) in MODES {
            for (sfx, width, mant, n) in [("f16", 16u32, 10u32, 300usize), ("f32", 32, 23, 600), ("f64", 64, 52, 600)] {
                let xs = samples(width, mant, n, &mut rng);
                let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
                // SAFETY: the wrappers take and return integers of the
                // format's width, passed in 64-bit registers.
                let (ours, theirs) = unsafe {
                    (
                        ee.get_function::<F2>(&format!("t.__anycuda_fdiv_{sfx}_{m}")).expect("ours"),
                        ee.get_function::<F2>(&format!("t.ref_fdiv_{sfx}_{k}")).expect("reference"),
                    )
                };
                for (i, &a) in xs.iter().enumerate() {
                    for &b in xs.iter().skip(i % 7).step_by(7) {
                        // SAFETY: as above.
                        let (x, y) = unsafe { (ours.call(a, b) & mask, theirs.call(a, b) & mask) };
                        if x != y && !(is_nan(x, width, mant) && is_nan(y, width, mant)) {
                            failures.push(format!("fdiv.{sfx}.{m}({a:#x}, {b:#x}) = {x:#x}, expected {y:#x}"));
                        }
                    }
                }
                if sfx == "f16" {
                    continue;
                }
                // SAFETY: as above.
                let (ours, theirs) = unsafe {
                    (
                        ee.get_function::<F1>(&format!("t.__anycuda_sqrt_{sfx}_{m}")).expect("ours"),
                        ee.get_function::<F1>(&format!("t.ref_sqrt_{sfx}_{k}")).expect("reference"),
                    )
                };
                for &a in &xs {
                    // SAFETY: as above.
                    let (x, y) = unsafe { (ours.call(a) & mask, theirs.call(a) & mask) };
                    if x != y && !(is_nan(x, width, mant) && is_nan(y, width, mant)) {
                        failures.push(format!("sqrt.{sfx}.{m}({a:#x}) = {x:#x}, expected {y:#x}"));
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
                    if x != y {
                        failures.push(format!("{op}.{m}({a:#x}) = {x:#x}, expected {y:#x}"));
                    }
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} mismatches:\n{}",
            failures.len(),
            failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}
