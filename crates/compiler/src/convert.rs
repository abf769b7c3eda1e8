//! Conversions (`cvt`) and comparisons (`setp`, `set`, `selp`, `slct`).

use crate::ir::{Ty, V, VF32, VF64, VI64};
use crate::lower::{op_ty, FnLower, Res};
use crate::softfloat::{self, Format, Mode};
use ptx::ast::*;

fn small_format(t: Type) -> Option<Format> {
    match t {
        Type::F16 | Type::F16x2 => Some(softfloat::HALF),
        Type::Bf16 | Type::Bf16x2 => Some(softfloat::BF16),
        Type::F32 => Some(softfloat::F32),
        Type::Tf32 => Some(softfloat::TF32),
        Type::E4m3 | Type::E4m3x2 => Some(softfloat::E4M3),
        Type::E5m2 | Type::E5m2x2 => Some(softfloat::E5M2),
        _ => None,
    }
}

fn is_float(t: Type) -> bool {
    matches!(t, Type::F16 | Type::Bf16 | Type::F32 | Type::F64 | Type::Tf32)
}

impl<'c, 'm> FnLower<'c, 'm> {
    /// `cvt.pack.sat.{u16,s16}.s32.b32 d, a, b` and
    /// `cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b, c`: `a` and `b`
    /// clamped to the narrow type's range, `b` in the low `n` bits of `d`
    /// and `a` above it; with `c`, the rest of `d` is `c`'s low bits
    /// shifted up by `2n` (PTX ISA, "cvt.pack").
    fn cvt_pack(&mut self, inst: &Instruction, types: &[Type]) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let (bits, signed) = match types.first() {
            Some(Type::U16) => (16u32, false),
            Some(Type::S16) => (16, true),
            Some(Type::U8) => (8, false),
            Some(Type::S8) => (8, true),
            Some(Type::U4) => (4, false),
            Some(Type::S4) => (4, true),
            Some(Type::U2) => (2, false),
            Some(Type::S2) => (2, true),
            _ => {
                return self.invalid(format!("`{}`: cvt.pack converts to .u16, .s16, .u8, .s8, .u4, .s4, .u2 or .s2", self.describe(inst)))
            }
        };
        if !inst.has(b, Flag::Sat) || types.len() != 3 || types[1] != Type::S32 || !matches!(types[2], Type::B32 | Type::U32 | Type::S32) {
            return self.invalid(format!("`{}`: the form is cvt.pack.sat.<type>.s32.b32", self.describe(inst)));
        }
        let with_c = bits < 16;
        if args.len() != if with_c { 4 } else { 3 } {
            return self.invalid(format!("`{}` takes {} operands", self.describe(inst), if with_c { 4 } else { 3 }));
        }
        let (lo, hi) = if signed { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
        let mask = V::int(Ty::I32, (1i128 << bits) - 1);
        let mut fields = Vec::new();
        for src in [&args[2], &args[1]] {
            let x = self.get(src, Ty::I32)?;
            let x = self.call2("llvm.smax.i32", &x, &V::int(Ty::I32, lo));
            let x = self.call2("llvm.smin.i32", &x, &V::int(Ty::I32, hi));
            fields.push(self.bin("and", &x, &mask));
        }
        let a = self.bin("shl", &fields[1], &V::int(Ty::I32, bits as i128));
        let mut d = self.bin("or", &fields[0], &a);
        if with_c {
            let c = self.get(&args[3], Ty::I32)?;
            let c = self.bin("shl", &c, &V::int(Ty::I32, 2 * bits as i128));
            d = self.bin("or", &d, &c);
        }
        self.set(&args[0], d)
    }

    pub fn cvt(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let types: Vec<Type> = inst.types(b).collect();
        if inst.has(b, Flag::Pack) {
            return self.cvt_pack(inst, &types);
        }
        if types.len() != 2 {
            return self.invalid("cvt needs a destination and a source type");
        }
        let (dt, st) = (types[0], types[1]);
        let ftz = inst.has(b, Flag::Ftz);
        let sat = inst.has(b, Flag::Sat);
        let relu = inst.has(b, Flag::Relu);
        let satfinite = inst.has(b, Flag::Satfinite);
        let rnd = inst.rounding(b);

        // Packed results from two f32 sources: the first goes to the upper half.
        if matches!(dt, Type::F16x2 | Type::Bf16x2 | Type::E4m3x2 | Type::E5m2x2) && st == Type::F32 {
            let Some(fmt) = small_format(dt) else {
                return self.unsupported(format!("conversion to .{dt}"));
            };
            let half_bits = if matches!(dt, Type::E4m3x2 | Type::E5m2x2) { 8 } else { 16 };
            let mut parts = Vec::new();
            for (k, src) in [&args[1], &args[2]].into_iter().enumerate() {
                let x = self.get(src, Ty::Float)?;
                let x = if ftz { self.flush(&x) } else { x };
                let d = self.out.def(Ty::Double, format_args!("fpext {x} to {VF64}"));
                let d = if relu { self.relu_double(&d) } else { d };
                let name = self.round_helper(fmt, Self::mode_of(rnd), satfinite);
                let rt = if half_bits == 8 { Ty::I8 } else { Ty::I16 };
                let r = self.call_helper(&name, rt, &[Ty::Double], &[&d]);
                let wide = if half_bits == 8 { Ty::I16 } else { Ty::I32 };
                let z = self.zext(&r, wide);
                let shift = if k == 0 { half_bits } else { 0 };
                parts.push(self.bin("shl", &z, &V::int(wide, shift)));
            }
            let r = self.bin("or", &parts[0], &parts[1]);
            return self.set(&args[0], r);
        }
        if matches!(st, Type::E4m3x2 | Type::E5m2x2) && dt == Type::F16x2 {
            // Unpack two fp8 values to f16 (exact).
            let x = self.get(&args[1], Ty::I16)?;
            let mut parts = Vec::new();
            for k in 0..2 {
                let sh = self.bin("lshr", &x, &V::int(Ty::I16, 8 * k));
                let byte = self.trunc(&sh, Ty::I8);
                let d = self.fp8_to_double(&byte, st == Type::E4m3x2);
                let h = self.round_to(&d, Ty::Half, Mode::Rn);
                let hb = self.bitcast(&h, Ty::I16);
                let z = self.zext(&hb, Ty::I32);
                parts.push(self.bin("shl", &z, &V::int(Ty::I32, 16 * k)));
            }
            let r = self.bin("or", &parts[0], &parts[1]);
            return self.set(&args[0], r);
        }
        if !is_float(dt) && !is_float(st) {
            return self.cvt_int_int(args, dt, st, sat);
        }
        if is_float(dt) && is_float(st) {
            return self.cvt_float_float(inst, args, dt, st, rnd, ftz, sat, relu, satfinite);
        }
        if is_float(dt) {
            return self.cvt_int_float(args, dt, st, rnd, sat);
        }
        self.cvt_float_int(args, dt, st, rnd, ftz)
    }

    fn relu_double(&mut self, d: &V) -> V {
        // Negative values and -0 become +0; NaN stays NaN.
        let le = self.fcmp("ole", d, &V::f64(0));
        self.select(&le, &V::f64(0), d)
    }

    fn cvt_int_int(&mut self, args: &[Operand], dt: Type, st: Type, sat: bool) -> Res<()> {
        let sty = Ty::int(st.bits());
        let dty = Ty::int(dt.bits());
        let x = self.get(&args[1], sty)?;
        if !sat {
            let r = if dty.bits() < sty.bits() {
                self.trunc(&x, dty)
            } else if st.is_signed() {
                self.sext(&x, dty)
            } else {
                self.zext(&x, dty)
            };
            return self.set_ext(&args[0], r, dt.is_signed());
        }
        // Saturate into the destination's range, computed in 128 bits.
        let w = Ty::I128;
        let xw = if st.is_signed() { self.sext(&x, w) } else { self.zext(&x, w) };
        let (lo, hi): (i128, i128) =
            if dt.is_signed() { (-(1i128 << (dt.bits() - 1)), (1i128 << (dt.bits() - 1)) - 1) } else { (0, (1i128 << dt.bits()) - 1) };
        let c1 = self.call2(&format!("llvm.smax.{}", w.suffix()), &xw, &V::int(w, lo));
        let c2 = self.call2(&format!("llvm.smin.{}", w.suffix()), &c1, &V::int(w, hi));
        let r = self.trunc(&c2, dty);
        self.set_ext(&args[0], r, dt.is_signed())
    }

    #[allow(clippy::too_many_arguments)]
    fn cvt_float_float(
        &mut self,
        inst: &Instruction,
        args: &[Operand],
        dt: Type,
        st: Type,
        rnd: Option<Rounding>,
        ftz: bool,
        sat: bool,
        relu: bool,
        satfinite: bool,
    ) -> Res<()> {
        let sty = op_ty(st);
        let x = if st == Type::Tf32 {
            let v = self.get(&args[1], Ty::I32)?;
            self.bitcast(&v, Ty::Float)
        } else {
            self.get(&args[1], sty)?
        };
        let x = if ftz && matches!(st, Type::F32) { self.flush(&x) } else { x };
        let int_round = matches!(rnd, Some(Rounding::Rni | Rounding::Rzi | Rounding::Rmi | Rounding::Rpi));
        if dt == st && int_round {
            // Round to an integral value in the same format.
            let f = match rnd {
                Some(Rounding::Rni) => "llvm.roundeven",
                Some(Rounding::Rzi) => "llvm.trunc",
                Some(Rounding::Rmi) => "llvm.floor",
                _ => "llvm.ceil",
            };
            let r = if matches!(sty, Ty::Half | Ty::Bfloat) {
                let f32v = self.out.def(Ty::Float, format_args!("fpext {x} to {VF32}"));
                let r = self.call1(&format!("{f}.f32"), &f32v);
                let d = self.out.def(Ty::Double, format_args!("fpext {r} to {VF64}"));
                self.round_to(&d, sty, Mode::Rn)
            } else {
                self.call1(&format!("{f}.{}", sty.suffix()), &x)
            };
            let r = if sat { self.saturate(&r) } else { r };
            let r = if ftz { self.flush(&r) } else { r };
            let r = self.canonical_nan(&r);
            return self.set(&args[0], r);
        }
        if int_round {
            return self.invalid(format!("`{}`: integer rounding between different float types", self.describe(inst)));
        }
        let r: V = match dt {
            Type::F64 => {
                let d = if sty == Ty::Double { x } else { self.out.def(Ty::Double, format_args!("fpext {x} to {VF64}")) };
                if sat {
                    self.saturate(&d)
                } else {
                    d
                }
            }
            // One IEEE rounding to nearest even, as LLVM's `fptrunc` does it
            // (`vcvtsd2ss`; the software rounding below cost dozens of
            // 64-bit integer operations per lane), or an exact widening.
            Type::F32
                if !relu
                    && !sat
                    && !satfinite
                    && (matches!(sty, Ty::Half | Ty::Bfloat) || (sty == Ty::Double && Self::mode_of(rnd) == Mode::Rn)) =>
            {
                let r = match sty {
                    Ty::Double => self.out.def(Ty::Float, format_args!("fptrunc {x} to {VF32}")),
                    Ty::Half => self.half_to_f32(&x),
                    _ => self.widen_bf16(&x),
                };
                let r = if sty == Ty::Double {
                    self.canonical_nan(&r)
                } else {
                    // NaN-ness tested on the source's bits: instruction
                    // combining turns a NaN test of the widened value into
                    // a 16-bit float compare, which x86 code makes lane by
                    // lane.
                    let nan = self.is_nan_16(&x);
                    self.select(&nan, &V::float_bits(Ty::Float, 0x7fff_ffff), &r)
                };
                if ftz {
                    self.flush(&r)
                } else {
                    r
                }
            }
            Type::F16 | Type::Bf16 if sty == Ty::Float && Self::mode_of(rnd) == Mode::Rn && !relu && !sat && !satfinite => {
                let r = self.narrow_float_rn(&x, if dt == Type::F16 { Ty::Half } else { Ty::Bfloat });
                self.canonical_nan(&r)
            }
            Type::F32 | Type::F16 | Type::Bf16 | Type::Tf32 => {
                let Some(fmt) = small_format(dt) else {
                    return self.unsupported(format!("conversion to .{dt}"));
                };
                let d = if sty == Ty::Double { x.clone() } else { self.out.def(Ty::Double, format_args!("fpext {x} to {VF64}")) };
                let d = if relu { self.relu_double(&d) } else { d };
                let d = if sat { self.saturate(&d) } else { d };
                let mode = Self::mode_of(rnd);
                let name = self.round_helper(fmt, mode, satfinite);
                let (it, ft) = match dt {
                    Type::F32 => (Ty::I32, Ty::Float),
                    Type::Tf32 => (Ty::I32, Ty::I32),
                    Type::F16 => (Ty::I16, Ty::Half),
                    _ => (Ty::I16, Ty::Bfloat),
                };
                let bits = self.call_helper(&name, it, &[Ty::Double], &[&d]);
                let bits = if dt == Type::Tf32 {
                    // A NaN keeps its sign and upper mantissa bits (low 13 cleared).
                    let xb = self.bitcast(&x, Ty::I32);
                    let kept = self.bin("and", &xb, &V::int(Ty::I32, 0xffff_e000u32 as i128));
                    let isnan = self.fcmp("uno", &x, &x);
                    self.select(&isnan, &kept, &bits)
                } else {
                    bits
                };
                let r = self.bitcast(&bits, ft);
                if ftz && dt == Type::F32 {
                    self.flush(&r)
                } else {
                    r
                }
            }
            _ => return self.unsupported(format!("`{}`", self.describe(inst))),
        };
        self.set(&args[0], r)
    }

    /// An integer as a double rounded to odd (exact when it fits in 53 bits).
    fn int_to_double_odd(&mut self, x: &V, signed: bool) -> V {
        let x64 = if signed { self.sext(x, Ty::I64) } else { self.zext(x, Ty::I64) };
        if x.ty.bits() <= 32 {
            return if signed {
                self.out.def(Ty::Double, format_args!("sitofp {x64} to {VF64}"))
            } else {
                self.out.def(Ty::Double, format_args!("uitofp {x64} to {VF64}"))
            };
        }
        let (mag, neg) = if signed {
            let n = self.icmp("slt", &x64, &V::int(Ty::I64, 0));
            let m = self.bin("sub", &V::int(Ty::I64, 0), &x64);
            (self.select(&n, &m, &x64), Some(n))
        } else {
            (x64, None)
        };
        let fname = self.intrinsic_immarg(&format!("llvm.ctlz.{}", Ty::I64.suffix()), Ty::I64);
        let lz = self.out.def(Ty::I64, format_args!("call {VI64} {fname}({mag}, i1 false)"));
        let len = self.bin("sub", &V::int(Ty::I64, 64), &lz);
        let k = self.bin("sub", &len, &V::int(Ty::I64, 53));
        let k = self.call2("llvm.smax.i64", &k, &V::int(Ty::I64, 0));
        let kept = self.bin("lshr", &mag, &k);
        let one = self.bin("shl", &V::int(Ty::I64, 1), &k);
        let low = self.bin("sub", &one, &V::int(Ty::I64, 1));
        let dropped = self.bin("and", &mag, &low);
        let sticky = self.icmp("ne", &dropped, &V::int(Ty::I64, 0));
        let sz = self.zext(&sticky, Ty::I64);
        let odd = self.bin("or", &kept, &sz);
        let d = self.out.def(Ty::Double, format_args!("uitofp {odd} to {VF64}"));
        // Scale by 2^k exactly.
        let e = self.bin("add", &k, &V::int(Ty::I64, 1023));
        let e = self.bin("shl", &e, &V::int(Ty::I64, 52));
        let scale = self.bitcast(&e, Ty::Double);
        let d = self.bin("fmul", &d, &scale);
        match neg {
            Some(n) => {
                let nd = self.out.def(Ty::Double, format_args!("fneg {d}"));
                self.select(&n, &nd, &d)
            }
            None => d,
        }
    }

    fn cvt_int_float(&mut self, args: &[Operand], dt: Type, st: Type, rnd: Option<Rounding>, sat: bool) -> Res<()> {
        let sty = Ty::int(st.bits());
        let x = self.get(&args[1], sty)?;
        let signed = st.is_signed();
        let mode = Self::mode_of(rnd);
        let r = if dt == Type::F64 {
            if st.bits() <= 32 || mode == Mode::Rn {
                let op = if signed { "sitofp" } else { "uitofp" };
                self.out.def(Ty::Double, format_args!("{op} {x} to {VF64}"))
            } else {
                self.int_to_double_directed(&x, signed, rnd.unwrap_or(Rounding::Rn))
            }
        } else if dt == Type::F32 && mode == Mode::Rn && st.bits() <= 32 {
            // An integer of at most 32 bits converts to f32 with one
            // rounding to nearest even: LLVM's `sitofp`/`uitofp` (x86
            // `cvtsi2ss` from a 64-bit register, AMDGPU `v_cvt_f32_[iu]32`).
            // The general path below (exact double, then a rounding call)
            // gives the same bits; this is the form every dequantising
            // kernel uses, so it stays a single instruction.
            let op = if signed { "sitofp" } else { "uitofp" };
            self.out.def(Ty::Float, format_args!("{op} {x} to {VF32}"))
        } else {
            let d = self.int_to_double_odd(&x, signed);
            let Some(fmt) = small_format(dt) else {
                return self.unsupported(format!("conversion to .{dt}"));
            };
            let name = self.round_helper(fmt, mode, false);
            let (it, ft) = match dt {
                Type::F32 => (Ty::I32, Ty::Float),
                Type::F16 => (Ty::I16, Ty::Half),
                Type::Bf16 => (Ty::I16, Ty::Bfloat),
                _ => (Ty::I32, Ty::I32),
            };
            let bits = self.call_helper(&name, it, &[Ty::Double], &[&d]);
            self.bitcast(&bits, ft)
        };
        let r = if sat { self.saturate(&r) } else { r };
        self.set(&args[0], r)
    }

    fn int_to_double_directed(&mut self, x: &V, signed: bool, mode: Rounding) -> V {
        let rm = match mode {
            Rounding::Rz => 0,
            Rounding::Rp => 2,
            _ => 3,
        };
        let op = if signed { "sitofp" } else { "uitofp" };
        let name = format!("__anycuda_{op}_f64_{mode}");
        if !self.cx.facts.cheap_rounding_mode_switch {
            if let Some(text) = crate::directed::round_to_nearest_form(&name) {
                self.cx.helper(&name, || text);
                return self.call_helper(&name, Ty::Double, &[Ty::I64], &[x]);
            }
        }
        let intr = format!("llvm.experimental.constrained.{op}.f64.i64");
        self.cx.declare(&intr, &format!("declare double @{intr}(i64, metadata, metadata)"));
        self.cx.declare("llvm.set.rounding", "declare void @llvm.set.rounding(i32)");
        let text = format!(
            "define internal double @{name}(i64 %a) #1 {{\n  call void @llvm.set.rounding(i32 {rm}) #1\n  %r = call double @{intr}(i64 %a, metadata !\"round.dynamic\", metadata !\"fpexcept.ignore\") #1\n  call void @llvm.set.rounding(i32 1) #1\n  ret double %r\n}}\n"
        );
        self.cx.helper(&name, || text);
        self.call_helper(&name, Ty::Double, &[Ty::I64], &[x])
    }

    fn cvt_float_int(&mut self, args: &[Operand], dt: Type, st: Type, rnd: Option<Rounding>, ftz: bool) -> Res<()> {
        let sty = op_ty(st);
        let x = self.get(&args[1], sty)?;
        let x = if ftz && st == Type::F32 { self.flush(&x) } else { x };
        // 16-bit floats convert exactly to f32 first.
        let x = match sty {
            Ty::Half => self.half_to_f32(&x),
            Ty::Bfloat => self.out.def(Ty::Float, format_args!("fpext {x} to {VF32}")),
            _ => x,
        };
        let toward_zero = matches!(rnd, Some(Rounding::Rzi) | Some(Rounding::Rz));
        let dty = Ty::int(dt.bits());
        let expand = self.cx.target == crate::Target::HostCpu && (x.lanes > 1 || self.fast_isel_code());
        let f = match rnd {
            Some(Rounding::Rni) | Some(Rounding::Rn) | None => "llvm.roundeven",
            Some(Rounding::Rzi) | Some(Rounding::Rz) => "llvm.trunc",
            Some(Rounding::Rmi) | Some(Rounding::Rm) => "llvm.floor",
            _ => "llvm.ceil",
        };
        // The plain conversion truncates: rounding toward zero first is
        // needed only by the saturating intrinsic's form.
        let r = if expand && toward_zero { x } else { self.call1(&format!("{f}.{}", x.ty.suffix()), &x) };
        // Saturating conversion; NaN gives 0.
        let v = if expand {
            self.float_to_int_saturating(&r, dty, dt.is_signed())
        } else {
            let op = if dt.is_signed() { "fptosi" } else { "fptoui" };
            let intr = format!("llvm.{op}.sat.{}.{}", dty.suffix(), r.ty.suffix());
            self.cx.declare(&intr, &format!("declare {dty} @{intr}({})", r.ty));
            self.out.def(dty, format_args!("call {dty} @{intr}({r})"))
        };
        // NaN: the saturating conversion gives 0, which is what NVIDIA returns
        // from f32/f16/bf16 to integers of up to 32 bits; from f64, and to
        // 64-bit integers, it returns the sign bit alone.
        let v = if st == Type::F64 || dt.bits() == 64 {
            let isnan = self.fcmp("uno", &r, &r);
            self.select(&isnan, &V::int(dty, 1i128 << (dt.bits() - 1)), &v)
        } else {
            v
        };
        self.set_ext(&args[0], v, dt.is_signed())
    }

    /// `llvm.fpto[su]i.sat` of `x` (f32 or f64, scalar or lanes) written as
    /// compares, selects and a plain conversion of a value in range: the
    /// same results (NaN 0, out of range the nearest bound; the plain
    /// conversion truncates). x86's code generator has no vector form of
    /// the intrinsic and converts lane by lane, about 230 instructions
    /// for 32 lanes of f32 -> s32 against 23 for this (`llc -O1`,
    /// AVX-512; 41 with AVX2), and the fast instruction selector has no
    /// rule for it at all ([`Self::fast_isel_code`]); llama.cpp's
    /// `k_get_rows_float` as warps was a third these conversions.
    pub(crate) fn float_to_int_saturating(&mut self, x: &V, dty: Ty, signed: bool) -> V {
        let bits = dty.bits() as i32;
        let (lo, hi) = if signed { (-(2f64.powi(bits - 1)), 2f64.powi(bits - 1)) } else { (0.0, 2f64.powi(bits)) };
        // Powers of two: exact in either float type.
        let constant = |v: f64| if x.ty == Ty::Float { V::f32((v as f32).to_bits()) } else { V::f64(v.to_bits()) };
        let at_least_lo = self.fcmp("oge", x, &constant(lo));
        let below_hi = self.fcmp("olt", x, &constant(hi));
        let in_range = self.bin("and", &at_least_lo, &below_hi);
        let safe = self.select(&in_range, x, &constant(0.0));
        let op = if signed { "fptosi" } else { "fptoui" };
        let v = self.out.def(dty, format_args!("{op} {safe} to {dty}"));
        let max = if signed { (1i128 << (bits - 1)) - 1 } else { (1i128 << bits) - 1 };
        let too_big = self.fcmp("oge", x, &constant(hi));
        let v = self.select(&too_big, &V::int(dty, max), &v);
        if signed {
            let too_small = self.fcmp("olt", x, &constant(lo));
            self.select(&too_small, &V::int(dty, -(1i128 << (bits - 1))), &v)
        } else {
            v
        }
    }

    /// An fp8 byte as a double (exact).
    fn fp8_to_double(&mut self, byte: &V, e4m3: bool) -> V {
        let (fmt_e, fmt_m, bias) = if e4m3 { (4u32, 3u32, 7i64) } else { (5, 2, 15) };
        let x = self.zext(byte, Ty::I64);
        let sign = self.bin("lshr", &x, &V::int(Ty::I64, 7));
        let e = self.bin("lshr", &x, &V::int(Ty::I64, fmt_m as i128));
        let e = self.bin("and", &e, &V::int(Ty::I64, (1 << fmt_e) - 1));
        let m = self.bin("and", &x, &V::int(Ty::I64, (1 << fmt_m) - 1));
        let mf = self.out.def(Ty::Double, format_args!("uitofp {m} to {VF64}"));
        // Normal: (1 + m/2^M) * 2^(e-bias); subnormal: m/2^M * 2^(1-bias).
        let is_sub = self.icmp("eq", &e, &V::int(Ty::I64, 0));
        let implicit = self.select(&is_sub, &V::f64(0), &V::f64(1.0f64.to_bits()));
        let frac = self.bin("fmul", &mf, &V::f64((1.0f64 / (1u64 << fmt_m) as f64).to_bits()));
        let sig = self.bin("fadd", &implicit, &frac);
        let ee = self.select(&is_sub, &V::int(Ty::I64, 1), &e);
        let exp = self.bin("add", &ee, &V::int(Ty::I64, 1023 - bias as i128));
        let exp = self.bin("shl", &exp, &V::int(Ty::I64, 52));
        let scale = self.bitcast(&exp, Ty::Double);
        let mag = self.bin("fmul", &sig, &scale);
        // Specials: e4m3 has NaN at S.1111.111; e5m2 has inf/NaN at e = 31.
        let mag = if e4m3 {
            let low7 = self.bin("and", &x, &V::int(Ty::I64, 0x7f));
            let is_nan = self.icmp("eq", &low7, &V::int(Ty::I64, 0x7f));
            self.select(&is_nan, &V::f64(f64::NAN.to_bits()), &mag)
        } else {
            let top = self.icmp("eq", &e, &V::int(Ty::I64, 31));
            let mz = self.icmp("eq", &m, &V::int(Ty::I64, 0));
            let special = self.select(&mz, &V::f64(f64::INFINITY.to_bits()), &V::f64(f64::NAN.to_bits()));
            self.select(&top, &special, &mag)
        };
        let neg = self.icmp("ne", &sign, &V::int(Ty::I64, 0));
        let n = self.out.def(Ty::Double, format_args!("fneg {mag}"));
        self.select(&neg, &n, &mag)
    }

    // ---- comparisons -------------------------------------------------------------

    fn compare(&mut self, cmp: CmpOp, t: Type, x: &V, y: &V) -> Res<V> {
        use CmpOp::*;
        if is_float(t) || matches!(t, Type::F16x2 | Type::Bf16x2) {
            let p = match cmp {
                Eq => "oeq",
                Ne => "one",
                Lt => "olt",
                Le => "ole",
                Gt => "ogt",
                Ge => "oge",
                Equ => "ueq",
                Neu => "une",
                Ltu => "ult",
                Leu => "ule",
                Gtu => "ugt",
                Geu => "uge",
                Num => "ord",
                Nan => "uno",
                _ => return self.invalid(format!("`.{cmp}` compares integers")),
            };
            return Ok(self.fcmp(p, x, y));
        }
        let signed = t.is_signed();
        let p = match cmp {
            Eq => "eq",
            Ne => "ne",
            Lt if signed => "slt",
            Le if signed => "sle",
            Gt if signed => "sgt",
            Ge if signed => "sge",
            Lt | Lo => "ult",
            Le | Ls => "ule",
            Gt | Hi => "ugt",
            Ge | Hs => "uge",
            _ => return self.invalid(format!("`.{cmp}` compares floating-point values")),
        };
        Ok(self.icmp(p, x, y))
    }

    /// `setp` and `set`.
    pub fn setp(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let Some(cmp) = inst.cmp(b) else {
            return self.invalid("setp/set needs a comparison");
        };
        let types: Vec<Type> = inst.types(b).collect();
        let (dt, st) = if inst.op == Opcode::Set {
            (types.first().copied(), types.get(1).copied().unwrap_or(Type::U32))
        } else {
            (None, types.first().copied().unwrap_or(Type::U32))
        };
        let ftz = inst.has(b, Flag::Ftz);
        let bool_op = inst.flags(b).find(|f| matches!(f, Flag::And | Flag::Or | Flag::Xor));
        let combine = |s: &mut Self, v: V| -> Res<V> {
            match (bool_op, args.get(3)) {
                (Some(op), Some(c)) => {
                    let cv = s.get(c, Ty::I1)?;
                    let name = match op {
                        Flag::And => "and",
                        Flag::Or => "or",
                        _ => "xor",
                    };
                    Ok(s.bin(name, &v, &cv))
                }
                _ => Ok(v),
            }
        };
        if matches!(st, Type::F16x2 | Type::Bf16x2) {
            let ety = if st == Type::F16x2 { Ty::Half } else { Ty::Bfloat };
            let x = self.get(&args[1], Ty::I32)?;
            let y = self.get(&args[2], Ty::I32)?;
            let mut res = Vec::new();
            for k in 0..2 {
                let xs = self.bin("lshr", &x, &V::int(Ty::I32, 16 * k));
                let xh = self.trunc(&xs, Ty::I16);
                let xh = self.bitcast(&xh, ety);
                let ys = self.bin("lshr", &y, &V::int(Ty::I32, 16 * k));
                let yh = self.trunc(&ys, Ty::I16);
                let yh = self.bitcast(&yh, ety);
                let (xh, yh) = if ftz { (self.flush(&xh), self.flush(&yh)) } else { (xh, yh) };
                let c = self.compare(cmp, st, &xh, &yh)?;
                res.push(combine(self, c)?);
            }
            if inst.op == Opcode::Set {
                // Each half is 1.0 or 0.0 (f16x2) or all ones / zero.
                let mut parts = Vec::new();
                for (k, r) in res.iter().enumerate() {
                    let one = if dt == Some(Type::F16x2) {
                        0x3c00
                    } else if dt == Some(Type::Bf16x2) {
                        0x3f80
                    } else {
                        0xffff
                    };
                    let v = self.select(r, &V::int(Ty::I16, one), &V::int(Ty::I16, 0));
                    let z = self.zext(&v, Ty::I32);
                    parts.push(self.bin("shl", &z, &V::int(Ty::I32, 16 * k as i128)));
                }
                let r = self.bin("or", &parts[0], &parts[1]);
                return self.set(&args[0], r);
            }
            // p gets the lower halves, q the upper.
            return match args[0] {
                Operand::PredPair(p, q) => {
                    self.set(&Operand::Reg(p), res[0].clone())?;
                    self.set(&Operand::Reg(q), res[1].clone())
                }
                _ => self.invalid("setp on .f16x2 writes a predicate pair `p|q`"),
            };
        }
        let ty = op_ty(st);
        let x = self.get(&args[1], ty)?;
        let y = self.get(&args[2], ty)?;
        let (x, y) = if ftz && is_float(st) { (self.flush(&x), self.flush(&y)) } else { (x, y) };
        let c = self.compare(cmp, st, &x, &y)?;
        let r = combine(self, c.clone())?;
        if inst.op == Opcode::Set {
            let d = dt.unwrap_or(Type::U32);
            let v = if d == Type::F32 {
                self.select(&r, &V::f32(0x3f80_0000), &V::f32(0))
            } else {
                let dty = Ty::int(d.bits());
                self.select(&r, &V::int(dty, -1), &V::int(dty, 0))
            };
            return self.set(&args[0], v);
        }
        match args[0] {
            Operand::PredPair(p, q) => {
                self.set(&Operand::Reg(p), r)?;
                let nc = self.bin("xor", &c, &V::int(Ty::I1, 1));
                let qv = combine(self, nc)?;
                self.set(&Operand::Reg(q), qv)
            }
            other => self.set(&other, r),
        }
    }

    pub fn selp(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let Some(t) = inst.ty(self.b) else { return self.invalid("selp needs a type") };
        let ty = op_ty(t);
        let x = self.get(&args[1], ty)?;
        let y = self.get(&args[2], ty)?;
        let c = self.get(&args[3], Ty::I1)?;
        let r = self.select(&c, &x, &y);
        self.set(&args[0], r)
    }

    pub fn slct(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let types: Vec<Type> = inst.types(self.b).collect();
        let (dt, ct) = (types.first().copied().unwrap_or(Type::B32), types.get(1).copied().unwrap_or(Type::S32));
        let ty = op_ty(dt);
        let x = self.get(&args[1], ty)?;
        let y = self.get(&args[2], ty)?;
        let ge = if ct == Type::F32 {
            let c = self.get(&args[3], Ty::Float)?;
            let c = if inst.has(self.b, Flag::Ftz) { self.flush(&c) } else { c };
            self.fcmp("oge", &c, &V::f32(0))
        } else {
            let c = self.get(&args[3], Ty::I32)?;
            self.icmp("sge", &c, &V::int(Ty::I32, 0))
        };
        let r = self.select(&ge, &x, &y);
        self.set(&args[0], r)
    }
}
