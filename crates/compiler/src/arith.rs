//! Integer, bit and floating-point arithmetic.

use crate::ir::{self, Ty, V, VF32, VF64, VI1};
use crate::lower::{op_ty, FnLower, Res};
use crate::softfloat::{self, Format, Mode};
use ptx::ast::*;

/// `ceil(2^64 / d)` of a 32-bit `d` (0 for `d = 1`, where it is 2^64, and
/// for `d = 0`), the reciprocal of [`FnLower::quotient_by_reciprocal`]. A
/// function apart, `speculatable` and reading no memory, so that LLVM
/// hoists its call out of loops like an arithmetic instruction (a `udiv`
/// may trap, and is hoisted only where it runs anyway).
const RECIPROCAL_U32: &str = "__anycuda_reciprocal_u32";

/// Floating-point behaviour modifiers of one instruction.
#[derive(Clone, Copy, Debug)]
pub struct FMods {
    pub ftz: bool,
    pub sat: bool,
    pub relu: bool,
    pub round: Option<Rounding>,
}

impl<'c, 'm> FnLower<'c, 'm> {
    pub fn fmods(&self, inst: &Instruction) -> FMods {
        FMods {
            ftz: inst.has(self.b, Flag::Ftz),
            sat: inst.has(self.b, Flag::Sat),
            relu: inst.has(self.b, Flag::Relu),
            round: inst.rounding(self.b),
        }
    }

    pub fn intrinsic(&mut self, name: &str, ret: Ty, args: &[Ty]) -> String {
        let params: Vec<String> = args.iter().map(|t| t.to_string()).collect();
        self.cx.declare(name, &format!("declare {ret} @{name}({})", params.join(", ")));
        format!("@{name}")
    }

    /// Whether this code goes through LLVM's fast instruction selector:
    /// thread-by-thread host code of the fast tier (`targets::host`:
    /// `OptimizationLevel::None`; warp-mode code takes the `Less` code
    /// generator). That selector handles a basic block until its first
    /// instruction it has no rule for, and the whole block from there goes
    /// through SelectionDAG, about four times as slow: llama.cpp's
    /// thread-by-thread `mul_mat_vec_q` units are a few large blocks, each
    /// with an `fabs`, `copysign`, `umin` or f16 widening somewhere (LLVM
    /// 19's `-pass-remarks-missed=sdagisel`; `llc -O0` on one unit's IR:
    /// 147 ms, 38 ms without them). It misses `fma` and the roundings
    /// (`floor`, `trunc`, `rint`...) too, but float code has those in its
    /// inner loops, where a call each made the fast tier's code 1.5-2 times
    /// as slow (the suite's `bezier`, 79 `fma` and 16 roundings in its
    /// `powf`: 358 -> 690 ms with both as calls, 530 ms with the roundings
    /// alone), while the matrix-vector units compiled as fast with them
    /// inline: they stay.
    pub(crate) fn fast_isel_code(&self) -> bool {
        self.cx.target == crate::Target::HostCpu && self.cx.opts.tier == crate::Tier::Fast && self.warp.is_none() && ir::lanes() == 1
    }

    /// Intrinsics the fast selector misses that are a few operations it
    /// has rules for, written so in its code ([`Self::fast_isel_code`]):
    /// `fabs` and `copysign` on the bits, integer `min`/`max` a compare
    /// and a select. Float code uses them in its inner loops (the suite's
    /// `bezier` 20 `abs`), where a call each cost a third of the time.
    fn fast_isel_inline(&mut self, name: &str, a: &V, b: Option<&V>) -> Option<V> {
        if !self.fast_isel_code() || a.lanes != 1 {
            return None;
        }
        let base = name.strip_prefix("llvm.")?.split('.').next()?;
        let float_bits = |s: &mut Self, v: &V| s.cast_bits(v, v.ty.as_int());
        match (base, b) {
            ("fabs", None) if matches!(a.ty, Ty::Float | Ty::Double) => {
                let it = a.ty.as_int();
                let bits = float_bits(self, a);
                let mag = self.bin("and", &bits, &V::int(it, (1i128 << (it.bits() - 1)) - 1));
                Some(self.cast_bits(&mag, a.ty))
            }
            ("copysign", Some(b)) if matches!(a.ty, Ty::Float | Ty::Double) && b.ty == a.ty => {
                let it = a.ty.as_int();
                let sign_bit = 1i128 << (it.bits() - 1);
                let (x, y) = (float_bits(self, a), float_bits(self, b));
                let mag = self.bin("and", &x, &V::int(it, sign_bit - 1));
                let sign = self.bin("and", &y, &V::int(it, sign_bit));
                let r = self.bin("or", &mag, &sign);
                Some(self.cast_bits(&r, a.ty))
            }
            ("umin" | "umax" | "smin" | "smax", Some(b)) if matches!(a.ty, Ty::I8 | Ty::I16 | Ty::I32 | Ty::I64) && b.ty == a.ty => {
                let pred = match base {
                    "umin" => "ult",
                    "umax" => "ugt",
                    "smin" => "slt",
                    _ => "sgt",
                };
                let take_a = self.icmp(pred, a, b);
                Some(self.select(&take_a, a, b))
            }
            _ => None,
        }
    }

    /// An f16 value (`x`, scalar or lanes) widened to f32, exactly. In code
    /// for the fast selector ([`Self::fast_isel_code`]), which has no rule
    /// for `half`, a helper widens the value's bits when they are at hand.
    pub(crate) fn half_to_f32(&mut self, x: &V) -> V {
        if self.fast_isel_code() && x.lanes == 1 {
            if let Some(bits) = self.bitcasts.get(&x.s).filter(|b| b.ty == Ty::I16 && b.lanes == 1).cloned() {
                let name = "__anycuda_fi.h2f";
                self.cx.helper(name, || {
                    format!("define internal float @{name}(i16 %h) noinline nounwind {{\nentry:\n  %x = bitcast i16 %h to half\n  %r = fpext half %x to float\n  ret float %r\n}}\n")
                });
                return self.out.def(Ty::Float, format_args!("call float @{name}({bits})"));
            }
        }
        self.out.def(Ty::Float, format_args!("fpext {x} to {VF32}"))
    }

    /// An intrinsic taking a value and a constant i1 flag (ctlz, cttz, abs).
    pub fn intrinsic_immarg(&mut self, name: &str, ty: Ty) -> String {
        self.cx.declare(name, &format!("declare {ty} @{name}({ty}, i1)"));
        format!("@{name}")
    }

    pub fn call1(&mut self, name: &str, a: &V) -> V {
        let name = &crate::ir::lane_name(name);
        let a = &self.vec(a.clone());
        if let Some(r) = self.fast_isel_inline(name, a, None) {
            return r;
        }
        let f = self.intrinsic(name, a.ty, &[a.ty]);
        self.out.def(a.ty, format_args!("call {} {f}({a})", a.ty))
    }

    pub fn call2(&mut self, name: &str, a: &V, b: &V) -> V {
        let name = &crate::ir::lane_name(name);
        let (a, b) = (&self.vec(a.clone()), &self.vec(b.clone()));
        if let Some(r) = self.fast_isel_inline(name, a, Some(b)) {
            return r;
        }
        let f = self.intrinsic(name, a.ty, &[a.ty, b.ty]);
        self.out.def(a.ty, format_args!("call {} {f}({a}, {b})", a.ty))
    }

    pub fn call3(&mut self, name: &str, a: &V, b: &V, c: &V) -> V {
        let name = &crate::ir::lane_name(name);
        let (a, b, c) = (&self.vec(a.clone()), &self.vec(b.clone()), &self.vec(c.clone()));
        let f = self.intrinsic(name, a.ty, &[a.ty, b.ty, c.ty]);
        self.out.def(a.ty, format_args!("call {} {f}({a}, {b}, {c})", a.ty))
    }

    pub fn select(&mut self, c: &V, a: &V, b: &V) -> V {
        let (c, a, b) = (&self.vec(c.clone()), &self.vec(a.clone()), &self.vec(b.clone()));
        self.out.def(a.ty, format_args!("select {c}, {a}, {b}"))
    }

    pub fn icmp(&mut self, pred: &str, a: &V, b: &V) -> V {
        let (a, b) = (&self.vec(a.clone()), &self.vec(b.clone()));
        self.out.def(Ty::I1, format_args!("icmp {pred} {a}, {}", b.s))
    }

    pub fn fcmp(&mut self, pred: &str, a: &V, b: &V) -> V {
        let (a, b) = (self.vec(a.clone()), self.vec(b.clone()));
        if matches!(a.ty, Ty::Half | Ty::Bfloat) && !self.cx.facts.half_compares {
            if let Some(r) = self.fcmp_16_bits(pred, &a, &b) {
                return r;
            }
        }
        self.out.def(Ty::I1, format_args!("fcmp {pred} {a}, {}", b.s))
    }

    /// `fcmp` of 16-bit floats on their bits, for targets without such
    /// compares: x86 code compared 32 lanes one at a time (a compare of
    /// the f32 widenings does not help: instruction combining narrows it
    /// back). Outside NaNs, the bits as sign and magnitude order the
    /// values, with -0 equal to +0. `None` for a predicate it does not
    /// know (the float compare is then made as written).
    fn fcmp_16_bits(&mut self, pred: &str, a: &V, b: &V) -> Option<V> {
        // (integer compare of the keys, whether a NaN operand makes it
        // false (ordered) or true); `ord` and `uno` test NaNs alone.
        let (int_pred, ordered) = match pred {
            "oeq" => (Some("eq"), true),
            "ogt" => (Some("sgt"), true),
            "oge" => (Some("sge"), true),
            "olt" => (Some("slt"), true),
            "ole" => (Some("sle"), true),
            "one" => (Some("ne"), true),
            "ord" => (None, true),
            "ueq" => (Some("eq"), false),
            "ugt" => (Some("sgt"), false),
            "uge" => (Some("sge"), false),
            "ult" => (Some("slt"), false),
            "ule" => (Some("sle"), false),
            "une" => (Some("ne"), false),
            "uno" => (None, false),
            _ => return None,
        };
        let nan_a = self.is_nan_16(a);
        let nan_b = self.is_nan_16(b);
        let unordered = self.bin("or", &nan_a, &nan_b);
        let numbers = if ordered { Some(self.bin("xor", &unordered, &V::int(Ty::I1, 1))) } else { None };
        let Some(int_pred) = int_pred else {
            return Some(numbers.unwrap_or(unordered));
        };
        let ka = self.order_key_16(a);
        let kb = self.order_key_16(b);
        let c = self.icmp(int_pred, &ka, &kb);
        Some(match numbers {
            Some(both) => self.bin("and", &c, &both),
            None => self.bin("or", &c, &unordered),
        })
    }

    /// A 16-bit float's value order as an i32 (NaNs excluded): the
    /// magnitude, negated for a set sign bit (so -0 and +0 are both 0).
    fn order_key_16(&mut self, v: &V) -> V {
        let bits = self.bitcast(v, Ty::I16);
        let bits = self.zext(&bits, Ty::I32);
        let magnitude = self.bin("and", &bits, &V::int(Ty::I32, 0x7fff));
        let negated = self.bin("sub", &V::int(Ty::I32, 0), &magnitude);
        let negative = self.icmp("ugt", &bits, &V::int(Ty::I32, 0x7fff));
        self.select(&negative, &negated, &magnitude)
    }

    /// Whether 16-bit float values are NaN, on their bits: a NaN's
    /// magnitude lies above infinity's.
    pub fn is_nan_16(&mut self, v: &V) -> V {
        let infinity = if v.ty == Ty::Half { 0x7c00 } else { 0x7f80 };
        let bits = self.bitcast(v, Ty::I16);
        let magnitude = self.bin("and", &bits, &V::int(Ty::I16, 0x7fff));
        self.icmp("ugt", &magnitude, &V::int(Ty::I16, infinity))
    }

    pub fn bin(&mut self, op: &str, a: &V, b: &V) -> V {
        let (a, b) = (&self.vec(a.clone()), &self.vec(b.clone()));
        self.out.def(a.ty, format_args!("{op} {a}, {}", b.s))
    }

    /// The truncated quotient `x / y` of 32-bit integers (`y` neither 0
    /// nor, when signed, -1) through one `f64` division: `vdivpd` on eight
    /// lanes at a time instead of a `div` per lane. Exact: both operands
    /// convert exactly; with `t = x / y` and `q = trunc(t)`, `q` is an
    /// integer below 2^32 (representable), and `|t|` lies at least `1 / |y|`
    /// below `|q| + 1`, while the doubles next to `|q| + 1` lie within
    /// `(|q| + 1) 2^-52`, which is smaller since `|y| (|q| + 1) <= |x| + |y|
    /// < 2^33 < 2^52`; so the rounded quotient lies in `[|q|, |q| + 1)` and
    /// truncates to `q`.
    pub fn lanes_quotient_i32(&mut self, x: &V, y: &V, signed: bool) -> V {
        let (x, y) = (&self.vec(x.clone()), &self.vec(y.clone()));
        let (to, back) = if signed { ("sitofp", "fptosi") } else { ("uitofp", "fptoui") };
        let xd = self.out.def(Ty::Double, format_args!("{to} {x} to {VF64}"));
        let yd = self.out.def(Ty::Double, format_args!("{to} {y} to {VF64}"));
        let qd = self.out.def(Ty::Double, format_args!("fdiv {xd}, {}", yd.s));
        self.out.def(Ty::I32, format_args!("{back} {qd} to {}", Ty::I32))
    }

    /// The divisor of a 32-bit division as one scalar, when many quotients
    /// share it and its reciprocal is computed once for them: in warp mode,
    /// a uniform register (one value per warp instruction); thread by
    /// thread (optimised host code), a block-invariant register, whose
    /// reciprocal LLVM hoists out of the loop over the block's threads.
    /// `y` is the divisor as read.
    fn shared_divisor(&mut self, op: &Operand, y: &V) -> Option<V> {
        let Operand::Reg(r) = *op else { return None };
        if self.reg_tys.get(r as usize) != Some(&Ty::I32) {
            return None;
        }
        if crate::ir::lanes() > 1 {
            return self.uniform_reg(r).then(|| self.load_uniform_reg(r));
        }
        self.invariant.get(r as usize).copied().unwrap_or(false).then(|| y.clone())
    }

    /// The truncated quotient `x / d` of 32-bit integers whose divisor `d`
    /// is a scalar many quotients share (not 0, nor -1 when signed: the
    /// caller replaces those results), through its reciprocal `M =
    /// ceil(2^64 / |d|)`, computed once by a call LLVM may hoist
    /// ([`RECIPROCAL_U32`]), and per quotient `floor(|x| M / 2^64)` from two
    /// 32x32->64-bit products: `M = Mh 2^32 + Ml`, `floor((|x| Mh +
    /// floor(|x| Ml / 2^32)) / 2^32)`, whose sum stays below 2^64.
    ///
    /// Exact for every `|x| < 2^32` and `2 <= |d| < 2^32`: with the excess
    /// `e = M |d| - 2^64` in `[0, |d|)`, `|x| M / 2^64 = |x| / |d| + |x| e /
    /// (|d| 2^64)`, and `|x| e < 2^64` keeps the excess below `1 / |d|`; writing
    /// `|x| = q |d| + r` with `r <= |d| - 1`, the sum is at least `q` and
    /// below `q + (r + 1) / |d| <= q + 1`. `|d| = 1` (M would be 2^64)
    /// takes `|x|`; a signed quotient takes the sign of `x` times `d`.
    pub fn quotient_by_reciprocal(&mut self, x: &V, d: &V, signed: bool) -> V {
        let ud = if signed {
            let neg = self.out.def_scalar(Ty::I1, format_args!("icmp slt i32 {}, 0", d.s));
            let minus = self.out.def_scalar(Ty::I32, format_args!("sub i32 0, {}", d.s));
            self.out.def_scalar(Ty::I32, format_args!("select i1 {}, i32 {}, i32 {}", neg.s, minus.s, d.s))
        } else {
            d.clone()
        };
        self.cx.helper(RECIPROCAL_U32, || {
            format!(
                "define internal i64 @{RECIPROCAL_U32}(i32 %d) noinline nounwind willreturn speculatable memory(none) {{
  %w = zext i32 %d to i64
  %z = icmp eq i64 %w, 0
  %s = select i1 %z, i64 1, i64 %w
  %q = udiv i64 -1, %s
  %m = add i64 %q, 1
  ret i64 %m
}}
"
            )
        });
        let m = self.out.def_scalar(Ty::I64, format_args!("call i64 @{RECIPROCAL_U32}(i32 {})", ud.s));
        let m_lo = self.out.def_scalar(Ty::I64, format_args!("and i64 {}, 4294967295", m.s));
        let m_hi = self.out.def_scalar(Ty::I64, format_args!("lshr i64 {}, 32", m.s));
        let by_one = self.out.def_scalar(Ty::I1, format_args!("icmp eq i32 {}, 1", ud.s));
        let zero = V::int(Ty::I32, 0);
        let ux = if signed {
            let neg = self.icmp("slt", x, &zero);
            let minus = self.bin("sub", &zero, x);
            self.select(&neg, &minus, x)
        } else {
            x.clone()
        };
        let wide = self.zext(&ux, Ty::I64);
        let low = self.bin("mul", &wide, &m_lo);
        let high = self.bin("mul", &wide, &m_hi);
        let carry = self.bin("lshr", &low, &V::int(Ty::I64, 32));
        let sum = self.bin("add", &high, &carry);
        let q = self.bin("lshr", &sum, &V::int(Ty::I64, 32));
        let q = self.trunc(&q, Ty::I32);
        let q = self.select(&by_one, &ux, &q);
        if !signed {
            return q;
        }
        let signs = self.bin("xor", x, d);
        let neg = self.icmp("slt", &signs, &zero);
        let minus = self.bin("sub", &zero, &q);
        self.select(&neg, &minus, &q)
    }

    pub fn bitcast(&mut self, v: &V, to: Ty) -> V {
        let v = self.vec(v.clone());
        self.cast_bits(&v, to)
    }

    pub fn zext(&mut self, v: &V, to: Ty) -> V {
        let v = &self.vec(v.clone());
        if v.ty == to {
            return v.clone();
        }
        self.out.def(to, format_args!("zext {v} to {to}"))
    }

    pub fn sext(&mut self, v: &V, to: Ty) -> V {
        let v = &self.vec(v.clone());
        if v.ty == to {
            return v.clone();
        }
        self.out.def(to, format_args!("sext {v} to {to}"))
    }

    pub fn trunc(&mut self, v: &V, to: Ty) -> V {
        let v = &self.vec(v.clone());
        if v.ty == to {
            return v.clone();
        }
        self.out.def(to, format_args!("trunc {v} to {to}"))
    }

    fn ext(&mut self, v: &V, to: Ty, signed: bool) -> V {
        if signed {
            self.sext(v, to)
        } else {
            self.zext(v, to)
        }
    }

    // ---- dispatch -------------------------------------------------------------

    pub fn arith(&mut self, inst: &Instruction) -> Res<()> {
        let Some(t) = inst.ty(self.b) else {
            return self.invalid(format!("`{}` needs a type", inst.op));
        };
        match t {
            Type::F32 | Type::F64 => self.float_op(inst, t),
            Type::F16 | Type::Bf16 | Type::F16x2 | Type::Bf16x2 => self.half_op(inst, t),
            _ => self.int_op(inst, t),
        }
    }

    // ---- integers ------------------------------------------------------------------

    fn int_op(&mut self, inst: &Instruction, t: Type) -> Res<()> {
        use Opcode::*;
        let b = self.b;
        let args = b.args(inst);
        let ty = op_ty(t);
        let signed = t.is_signed();
        if matches!(t, Type::S16x2 | Type::U16x2) {
            return self.int_x2(inst, t);
        }
        match inst.op {
            Add | Sub => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                let cc = inst.has(b, Flag::Cc);
                let r = if ty == Ty::I1 {
                    self.bin("xor", &x, &y)
                } else if inst.has(b, Flag::Sat) {
                    let f = if inst.op == Add { "llvm.sadd.sat.i32" } else { "llvm.ssub.sat.i32" };
                    self.call2(f, &x, &y)
                } else if cc {
                    let f = if inst.op == Add {
                        format!("llvm.uadd.with.overflow.{}", ty.suffix())
                    } else {
                        format!("llvm.usub.with.overflow.{}", ty.suffix())
                    };
                    self.cx.declare(&f, &format!("declare {{{ty}, {VI1}}} @{f}({ty}, {ty})"));
                    let s = self.out.def(ty, format_args!("call {{{ty}, {VI1}}} @{f}({x}, {y})"));
                    let v = self.out.def(ty, format_args!("extractvalue {{{ty}, {VI1}}} {}, 0", s.s));
                    let mut c = self.out.def(Ty::I1, format_args!("extractvalue {{{ty}, {VI1}}} {}, 1", s.s));
                    if inst.op == Sub {
                        // The hardware subtracts as `a + !b + 1`: CC.CF is
                        // that sum's carry, the borrow's complement.
                        c = self.bin("xor", &c, &V::int(Ty::I1, 1));
                    }
                    self.set_carry(&c);
                    v
                } else {
                    self.bin(if inst.op == Add { "add" } else { "sub" }, &x, &y)
                };
                if ty == Ty::I64 && self.has_shadow(&args[0]) {
                    // Keep the address as base pointer + offset.
                    let (base, offset) = if let Some(p) = self.operand_shadow(&args[1]) {
                        (Some(p), if inst.op == Add { y.clone() } else { self.bin("sub", &V::int(Ty::I64, 0), &y) })
                    } else if inst.op == Add {
                        (self.operand_shadow(&args[2]), x.clone())
                    } else {
                        (None, y.clone())
                    };
                    if let Some(p) = base {
                        self.next_shadow = Some(self.out.def(Ty::Ptr, format_args!("getelementptr i8, {p}, {offset}")));
                    }
                }
                self.set(&args[0], r)
            }
            Addc | Subc => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                let mut cin = self.get_carry();
                if inst.op == Subc {
                    // `subc` is `a + !b + CC.CF` on the hardware: it
                    // subtracts `b` and the complement of the flag (the
                    // borrow `sub.cc` left), and its carry out is again the
                    // complement of its borrow out, so chains of either
                    // kind and mixed chains give the hardware's values.
                    cin = self.bin("xor", &cin, &V::int(Ty::I1, 1));
                }
                let cz = self.zext(&cin, ty);
                let (r, cout) = if inst.op == Addc {
                    let f = format!("llvm.uadd.with.overflow.{}", ty.suffix());
                    self.cx.declare(&f, &format!("declare {{{ty}, {VI1}}} @{f}({ty}, {ty})"));
                    let s1 = self.out.def(ty, format_args!("call {{{ty}, {VI1}}} @{f}({x}, {y})"));
                    let v1 = self.out.def(ty, format_args!("extractvalue {{{ty}, {VI1}}} {}, 0", s1.s));
                    let c1 = self.out.def(Ty::I1, format_args!("extractvalue {{{ty}, {VI1}}} {}, 1", s1.s));
                    let s2 = self.out.def(ty, format_args!("call {{{ty}, {VI1}}} @{f}({v1}, {cz})"));
                    let v2 = self.out.def(ty, format_args!("extractvalue {{{ty}, {VI1}}} {}, 0", s2.s));
                    let c2 = self.out.def(Ty::I1, format_args!("extractvalue {{{ty}, {VI1}}} {}, 1", s2.s));
                    (v2, self.bin("or", &c1, &c2))
                } else {
                    let f = format!("llvm.usub.with.overflow.{}", ty.suffix());
                    self.cx.declare(&f, &format!("declare {{{ty}, {VI1}}} @{f}({ty}, {ty})"));
                    let s1 = self.out.def(ty, format_args!("call {{{ty}, {VI1}}} @{f}({x}, {y})"));
                    let v1 = self.out.def(ty, format_args!("extractvalue {{{ty}, {VI1}}} {}, 0", s1.s));
                    let c1 = self.out.def(Ty::I1, format_args!("extractvalue {{{ty}, {VI1}}} {}, 1", s1.s));
                    let s2 = self.out.def(ty, format_args!("call {{{ty}, {VI1}}} @{f}({v1}, {cz})"));
                    let v2 = self.out.def(ty, format_args!("extractvalue {{{ty}, {VI1}}} {}, 0", s2.s));
                    let c2 = self.out.def(Ty::I1, format_args!("extractvalue {{{ty}, {VI1}}} {}, 1", s2.s));
                    let borrow = self.bin("or", &c1, &c2);
                    (v2, self.bin("xor", &borrow, &V::int(Ty::I1, 1)))
                };
                if inst.has(b, Flag::Cc) {
                    self.set_carry(&cout);
                }
                self.set(&args[0], r)
            }
            Mul | Mad | Madc => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                let hi = inst.has(b, Flag::HiHalf);
                let wide = inst.has(b, Flag::Wide);
                let prod = if wide || hi {
                    let w = Ty::int(ty.bits() * 2);
                    let xw = self.ext(&x, w, signed);
                    let yw = self.ext(&y, w, signed);
                    let p = self.bin("mul", &xw, &yw);
                    if wide {
                        p
                    } else {
                        let sh = self.bin(if signed { "ashr" } else { "lshr" }, &p, &V::int(w, ty.bits() as i128));
                        self.trunc(&sh, ty)
                    }
                } else {
                    self.bin("mul", &x, &y)
                };
                if inst.op == Mul {
                    return self.set(&args[0], prod);
                }
                let c = self.get(&args[3], prod.ty)?;
                if inst.has(b, Flag::Sat) {
                    // mad.hi.sat.s32: saturate the 32-bit sum.
                    let r = self.call2("llvm.sadd.sat.i32", &prod, &c);
                    return self.set(&args[0], r);
                }
                let pty = prod.ty;
                if inst.op == Madc || inst.has(b, Flag::Cc) {
                    let f = format!("llvm.uadd.with.overflow.{}", pty.suffix());
                    self.cx.declare(&f, &format!("declare {{{pty}, {VI1}}} @{f}({pty}, {pty})"));
                    let s1 = self.out.def(pty, format_args!("call {{{pty}, {VI1}}} @{f}({prod}, {c})"));
                    let mut v = self.out.def(pty, format_args!("extractvalue {{{pty}, {VI1}}} {}, 0", s1.s));
                    let mut carry = self.out.def(Ty::I1, format_args!("extractvalue {{{pty}, {VI1}}} {}, 1", s1.s));
                    if inst.op == Madc {
                        let cin = self.get_carry();
                        let cz = self.zext(&cin, pty);
                        let s2 = self.out.def(pty, format_args!("call {{{pty}, {VI1}}} @{f}({v}, {cz})"));
                        v = self.out.def(pty, format_args!("extractvalue {{{pty}, {VI1}}} {}, 0", s2.s));
                        let c2 = self.out.def(Ty::I1, format_args!("extractvalue {{{pty}, {VI1}}} {}, 1", s2.s));
                        carry = self.bin("or", &carry, &c2);
                    }
                    if inst.has(b, Flag::Cc) {
                        self.set_carry(&carry);
                    }
                    return self.set(&args[0], v);
                }
                let r = self.bin("add", &prod, &c);
                self.set(&args[0], r)
            }
            Mul24 | Mad24 => {
                let x = self.get(&args[1], Ty::I32)?;
                let y = self.get(&args[2], Ty::I32)?;
                // Operands are the low 24 bits, sign-extended for .s32.
                let (x24, y24) = if signed {
                    let a = self.bin("shl", &x, &V::int(Ty::I32, 8));
                    let a = self.bin("ashr", &a, &V::int(Ty::I32, 8));
                    let c = self.bin("shl", &y, &V::int(Ty::I32, 8));
                    let c = self.bin("ashr", &c, &V::int(Ty::I32, 8));
                    (a, c)
                } else {
                    (self.bin("and", &x, &V::int(Ty::I32, 0xFF_FFFF)), self.bin("and", &y, &V::int(Ty::I32, 0xFF_FFFF)))
                };
                let xw = self.ext(&x24, Ty::I64, signed);
                let yw = self.ext(&y24, Ty::I64, signed);
                let p = self.bin("mul", &xw, &yw);
                let r = if inst.has(b, Flag::HiHalf) {
                    let s = self.bin("lshr", &p, &V::int(Ty::I64, 16));
                    self.trunc(&s, Ty::I32)
                } else {
                    self.trunc(&p, Ty::I32)
                };
                let r = if inst.op == Mad24 {
                    let c = self.get(&args[3], Ty::I32)?;
                    if inst.has(b, Flag::Sat) {
                        self.call2("llvm.sadd.sat.i32", &r, &c)
                    } else {
                        self.bin("add", &r, &c)
                    }
                } else {
                    r
                };
                self.set(&args[0], r)
            }
            Sad => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                let c = self.get(&args[3], ty)?;
                let lt = self.icmp(if signed { "slt" } else { "ult" }, &x, &y);
                let d1 = self.bin("sub", &x, &y);
                let d2 = self.bin("sub", &y, &x);
                let d = self.select(&lt, &d2, &d1);
                let r = self.bin("add", &d, &c);
                self.set(&args[0], r)
            }
            Div | Rem => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                // Division by zero and INT_MIN / -1 must not trap; the values
                // below are what NVIDIA hardware returns for division by zero.
                let zero = V::int(ty, 0);
                let isz = self.icmp("eq", &y, &zero);
                let one = V::int(ty, 1);
                let mut safe_y = self.select(&isz, &one, &y);
                let mut overflow = None;
                if signed {
                    let m1 = self.icmp("eq", &y, &V::int(ty, -1));
                    safe_y = self.select(&m1, &one, &safe_y);
                    overflow = Some(m1);
                }
                // A divisor every thread shares: one reciprocal for all
                // their quotients (`quotient_by_reciprocal`).
                let shared = if ty == Ty::I32 { self.shared_divisor(&args[2], &y) } else { None };
                // Warp mode: x86 has no vector integer division, and LLVM
                // splits `<32 x i32>` divisions into 32 `div`s with the lane
                // extractions around them; see `lanes_quotient_i32`.
                let by_double = shared.is_none() && ty == Ty::I32 && crate::ir::lanes() > 1;
                let q = if inst.op == Div {
                    let q = if let Some(d) = &shared {
                        self.quotient_by_reciprocal(&x, d, signed)
                    } else if by_double {
                        self.lanes_quotient_i32(&x, &safe_y, signed)
                    } else {
                        self.bin(if signed { "sdiv" } else { "udiv" }, &x, &safe_y)
                    };
                    let q = match &overflow {
                        Some(m1) => {
                            let n = self.bin("sub", &zero, &x);
                            self.select(m1, &n, &q)
                        }
                        None => q,
                    };
                    let by_zero = if signed {
                        // -1 for a non-negative dividend, 1 for a negative one.
                        let neg = self.icmp("slt", &x, &zero);
                        self.select(&neg, &one, &V::int(ty, -1))
                    } else {
                        V::int(ty, -1)
                    };
                    self.select(&isz, &by_zero, &q)
                } else {
                    let r = if shared.is_some() || by_double {
                        // x - q y: exact, as |q y| <= |x| (truncated quotient).
                        let q = match &shared {
                            Some(d) => self.quotient_by_reciprocal(&x, d, signed),
                            None => self.lanes_quotient_i32(&x, &safe_y, signed),
                        };
                        let qy = self.bin("mul", &q, &safe_y);
                        self.bin("sub", &x, &qy)
                    } else {
                        self.bin(if signed { "srem" } else { "urem" }, &x, &safe_y)
                    };
                    let r = match &overflow {
                        Some(m1) => self.select(m1, &zero, &r),
                        None => r,
                    };
                    self.select(&isz, &x, &r)
                };
                self.set(&args[0], q)
            }
            Abs => {
                let x = self.get(&args[1], ty)?;
                let f = format!("llvm.abs.{}", ty.suffix());
                let fname = self.intrinsic_immarg(&f, ty);
                let r = self.out.def(ty, format_args!("call {ty} {fname}({x}, i1 false)"));
                self.set(&args[0], r)
            }
            Neg => {
                let x = self.get(&args[1], ty)?;
                let r = self.bin("sub", &V::int(ty, 0), &x);
                self.set(&args[0], r)
            }
            Min | Max => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                let f = match (inst.op, signed) {
                    (Min, true) => "smin",
                    (Min, false) => "umin",
                    (_, true) => "smax",
                    (_, false) => "umax",
                };
                let mut r = self.call2(&format!("llvm.{f}.{}", ty.suffix()), &x, &y);
                if args.len() == 4 {
                    let z = self.get(&args[3], ty)?;
                    r = self.call2(&format!("llvm.{f}.{}", ty.suffix()), &r, &z);
                }
                if inst.has(b, Flag::Relu) {
                    r = self.call2(&format!("llvm.smax.{}", ty.suffix()), &r, &V::int(ty, 0));
                }
                self.set(&args[0], r)
            }
            Popc | Clz => {
                let x = self.get(&args[1], ty)?;
                let r = if inst.op == Popc {
                    self.call1(&format!("llvm.ctpop.{}", ty.suffix()), &x)
                } else {
                    let fname = self.intrinsic_immarg(&format!("llvm.ctlz.{}", ty.suffix()), ty);
                    self.out.def(ty, format_args!("call {ty} {fname}({x}, i1 false)"))
                };
                let r = self.trunc(&r, Ty::I32);
                let r = self.zext(&r, Ty::I32);
                self.set(&args[0], r)
            }
            Bfind => {
                let x = self.get(&args[1], ty)?;
                let bits = ty.bits() as i128;
                // Signed: find the most significant bit that differs from the sign.
                let v = if signed {
                    let s = self.bin("ashr", &x, &V::int(ty, bits - 1));
                    self.bin("xor", &x, &s)
                } else {
                    x
                };
                let fname = self.intrinsic_immarg(&format!("llvm.ctlz.{}", ty.suffix()), ty);
                let lz = self.out.def(ty, format_args!("call {ty} {fname}({v}, i1 false)"));
                let lz = self.trunc(&lz, Ty::I32);
                let lz = self.zext(&lz, Ty::I32);
                let none = self.icmp("eq", &v, &V::int(ty, 0));
                let r = if inst.has(b, Flag::Shiftamt) { lz } else { self.bin("sub", &V::int(Ty::I32, bits - 1), &lz) };
                let r = self.select(&none, &V::int(Ty::I32, -1), &r);
                self.set(&args[0], r)
            }
            Brev => {
                let x = self.get(&args[1], ty)?;
                let r = self.call1(&format!("llvm.bitreverse.{}", ty.suffix()), &x);
                self.set(&args[0], r)
            }
            Bfe => {
                let x = self.get(&args[1], ty)?;
                let pos = self.get(&args[2], Ty::I32)?;
                let len = self.get(&args[3], Ty::I32)?;
                let r = self.bfe(&x, &pos, &len, signed);
                self.set(&args[0], r)
            }
            Bfi => {
                let f = self.get(&args[1], ty)?;
                let base = self.get(&args[2], ty)?;
                let pos = self.get(&args[3], Ty::I32)?;
                let len = self.get(&args[4], Ty::I32)?;
                let r = self.bfi(&f, &base, &pos, &len);
                self.set(&args[0], r)
            }
            Fns => {
                let mask = self.get(&args[1], Ty::I32)?;
                let base = self.get(&args[2], Ty::I32)?;
                let off = self.get(&args[3], Ty::I32)?;
                let r = self.fns(&mask, &base, &off);
                self.set(&args[0], r)
            }
            Szext => {
                let x = self.get(&args[1], Ty::I32)?;
                let pos = self.get(&args[2], Ty::I32)?;
                let n = if inst.has(b, Flag::Clamp) {
                    self.call2("llvm.umin.i32", &pos, &V::int(Ty::I32, 32))
                } else {
                    self.bin("and", &pos, &V::int(Ty::I32, 31))
                };
                // Keep the low n bits, extended from bit n-1; n == 0 gives 0.
                let is0 = self.icmp("eq", &n, &V::int(Ty::I32, 0));
                let is32 = self.icmp("uge", &n, &V::int(Ty::I32, 32));
                let sh = self.bin("sub", &V::int(Ty::I32, 32), &n);
                let sh = self.call2("llvm.umin.i32", &sh, &V::int(Ty::I32, 31));
                let l = self.bin("shl", &x, &sh);
                let r = self.bin(if signed { "ashr" } else { "lshr" }, &l, &sh);
                let r = self.select(&is32, &x, &r);
                let r = self.select(&is0, &V::int(Ty::I32, 0), &r);
                self.set(&args[0], r)
            }
            Bmsk => {
                let a = self.get(&args[1], Ty::I32)?;
                let bb = self.get(&args[2], Ty::I32)?;
                let (a, bb) = if inst.has(b, Flag::Clamp) {
                    (self.call2("llvm.umin.i32", &a, &V::int(Ty::I32, 32)), self.call2("llvm.umin.i32", &bb, &V::int(Ty::I32, 32)))
                } else {
                    (self.bin("and", &a, &V::int(Ty::I32, 31)), self.bin("and", &bb, &V::int(Ty::I32, 31)))
                };
                // Mask of bb bits starting at a, cut at bit 32.
                let a64 = self.zext(&a, Ty::I64);
                let b64 = self.zext(&bb, Ty::I64);
                let ones = self.bin("shl", &V::int(Ty::I64, 1), &b64);
                let ones = self.bin("sub", &ones, &V::int(Ty::I64, 1));
                let m = self.bin("shl", &ones, &a64);
                let r = self.trunc(&m, Ty::I32);
                self.set(&args[0], r)
            }
            Dp4a | Dp2a => self.dot(inst),
            And | Or | Xor => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                let op = match inst.op {
                    And => "and",
                    Or => "or",
                    _ => "xor",
                };
                let r = self.bin(op, &x, &y);
                self.set(&args[0], r)
            }
            Not => {
                let x = self.get(&args[1], ty)?;
                let r = self.bin("xor", &x, &V::int(ty, -1));
                self.set(&args[0], r)
            }
            Cnot => {
                let x = self.get(&args[1], ty)?;
                let z = self.icmp("eq", &x, &V::int(ty, 0));
                let r = self.zext(&z, ty);
                self.set(&args[0], r)
            }
            Lop3 => {
                let x = self.get(&args[1], Ty::I32)?;
                let y = self.get(&args[2], Ty::I32)?;
                let z = self.get(&args[3], Ty::I32)?;
                let lut = self.get(&args[4], Ty::I32)?;
                let r = self.lop3(&x, &y, &z, &lut);
                self.set(&args[0], r)
            }
            Shf => {
                let lo = self.get(&args[1], Ty::I32)?;
                let hi = self.get(&args[2], Ty::I32)?;
                let n = self.get(&args[3], Ty::I32)?;
                let left = inst.has(b, Flag::L);
                let r = if inst.has(b, Flag::Clamp) {
                    let n = self.call2("llvm.umin.i32", &n, &V::int(Ty::I32, 32));
                    let cat_hi = self.zext(&hi, Ty::I64);
                    let cat_hi = self.bin("shl", &cat_hi, &V::int(Ty::I64, 32));
                    let cat_lo = self.zext(&lo, Ty::I64);
                    let cat = self.bin("or", &cat_hi, &cat_lo);
                    let n64 = self.zext(&n, Ty::I64);
                    if left {
                        let s = self.bin("shl", &cat, &n64);
                        let s = self.bin("lshr", &s, &V::int(Ty::I64, 32));
                        self.trunc(&s, Ty::I32)
                    } else {
                        let s = self.bin("lshr", &cat, &n64);
                        self.trunc(&s, Ty::I32)
                    }
                } else if left {
                    self.call3("llvm.fshl.i32", &hi, &lo, &n)
                } else {
                    self.call3("llvm.fshr.i32", &hi, &lo, &n)
                };
                self.set(&args[0], r)
            }
            Shl | Shr => {
                let x = self.get(&args[1], ty)?;
                let n = self.get(&args[2], Ty::I32)?;
                let bits = ty.bits() as i128;
                // Shift amounts past the width give 0 (or the sign for shr.s).
                let nn = self.call2("llvm.umin.i32", &n, &V::int(Ty::I32, bits - 1));
                let nt = if ty.bits() > 32 { self.zext(&nn, ty) } else { self.trunc(&nn, ty) };
                let big = self.icmp("uge", &n, &V::int(Ty::I32, bits));
                let r = if inst.op == Shl {
                    let s = self.bin("shl", &x, &nt);
                    self.select(&big, &V::int(ty, 0), &s)
                } else if signed {
                    self.bin("ashr", &x, &nt)
                } else {
                    let s = self.bin("lshr", &x, &nt);
                    self.select(&big, &V::int(ty, 0), &s)
                };
                self.set(&args[0], r)
            }
            Prmt => self.prmt(inst),
            _ => self.unsupported(format!("`{}`", self.describe(inst))),
        }
    }

    /// `add.s16x2` and friends: the same operation on both 16-bit halves.
    fn int_x2(&mut self, inst: &Instruction, t: Type) -> Res<()> {
        let args = self.b.args(inst);
        let signed = t == Type::S16x2;
        let x = self.get(&args[1], Ty::I32)?;
        let y = self.get(&args[2], Ty::I32)?;
        let mut halves = Vec::new();
        for k in 0..2 {
            let xs = self.bin("lshr", &x, &V::int(Ty::I32, 16 * k));
            let xh = self.trunc(&xs, Ty::I16);
            let ys = self.bin("lshr", &y, &V::int(Ty::I32, 16 * k));
            let yh = self.trunc(&ys, Ty::I16);
            let r = match inst.op {
                Opcode::Add => self.bin("add", &xh, &yh),
                Opcode::Sub => self.bin("sub", &xh, &yh),
                Opcode::Min | Opcode::Max => {
                    let f = match (inst.op, signed) {
                        (Opcode::Min, true) => "smin",
                        (Opcode::Min, false) => "umin",
                        (_, true) => "smax",
                        _ => "umax",
                    };
                    let mut r = self.call2(&format!("llvm.{f}.i16"), &xh, &yh);
                    if inst.has(self.b, Flag::Relu) {
                        r = self.call2("llvm.smax.i16", &r, &V::int(Ty::I16, 0));
                    }
                    r
                }
                _ => return self.unsupported(format!("`{}`", self.describe(inst))),
            };
            let z = self.zext(&r, Ty::I32);
            halves.push(self.bin("shl", &z, &V::int(Ty::I32, 16 * k)));
        }
        let r = self.bin("or", &halves[0], &halves[1]);
        self.set(&args[0], r)
    }

    /// PTX `bfe`: bits `pos..pos+len` of x (fewer past the top), the rest
    /// filled with 0 or, for signed types, with bit min(pos+len-1, msb).
    fn bfe(&mut self, x: &V, pos: &V, len: &V, signed: bool) -> V {
        let ty = x.ty;
        let bits = ty.bits() as i128;
        // 32-bit forms read the low 8 bits of pos and len; NVIDIA hardware
        // reads the whole 32-bit operands for the 64-bit forms.
        let (p, l) = if bits == 32 {
            (self.bin("and", pos, &V::int(Ty::I32, 0xff)), self.bin("and", len, &V::int(Ty::I32, 0xff)))
        } else {
            (pos.clone(), len.clone())
        };
        let pos_big = self.icmp("uge", &p, &V::int(Ty::I32, bits));
        // k = number of field bits that come from x.
        let room = self.bin("sub", &V::int(Ty::I32, bits), &p);
        let k = self.call2("llvm.umin.i32", &l, &room);
        let k = self.select(&pos_big, &V::int(Ty::I32, 0), &k);
        let kw = if bits > 32 { self.zext(&k, ty) } else { self.trunc(&k, ty) };
        let kc = self.call2(&format!("llvm.umin.{}", ty.suffix()), &kw, &V::int(ty, bits - 1));
        let one = self.bin("shl", &V::int(ty, 1), &kc);
        let mask = self.bin("sub", &one, &V::int(ty, 1));
        let full = self.icmp("uge", &k, &V::int(Ty::I32, bits));
        let mask = self.select(&full, &V::int(ty, -1), &mask);
        let pw = if bits > 32 { self.zext(&p, ty) } else { self.trunc(&p, ty) };
        let pc = self.call2(&format!("llvm.umin.{}", ty.suffix()), &pw, &V::int(ty, bits - 1));
        let shifted = self.bin("lshr", x, &pc);
        let field = self.bin("and", &shifted, &mask);
        let field = self.select(&pos_big, &V::int(ty, 0), &field);
        let lz = self.icmp("eq", &l, &V::int(Ty::I32, 0));
        if !signed {
            return self.select(&lz, &V::int(ty, 0), &field);
        }
        // min(pos + len - 1, msb), without 32-bit overflow.
        let p64 = self.zext(&p, Ty::I64);
        let l64 = self.zext(&l, Ty::I64);
        let pl = self.bin("add", &p64, &l64);
        let top = self.bin("sub", &pl, &V::int(Ty::I64, 1));
        let top = self.call2("llvm.umin.i64", &top, &V::int(Ty::I64, bits - 1));
        let topw = if bits > 32 { top } else { self.trunc(&top, ty) };
        let sb = self.bin("lshr", x, &topw);
        let sb = self.bin("and", &sb, &V::int(ty, 1));
        let neg = self.icmp("ne", &sb, &V::int(ty, 0));
        let inv = self.bin("xor", &mask, &V::int(ty, -1));
        let ext = self.bin("or", &field, &inv);
        let r = self.select(&neg, &ext, &field);
        self.select(&lz, &V::int(ty, 0), &r)
    }

    fn bfi(&mut self, f: &V, base: &V, pos: &V, len: &V) -> V {
        let ty = f.ty;
        let bits = ty.bits() as i128;
        let (p, l) = if bits == 32 {
            (self.bin("and", pos, &V::int(Ty::I32, 0xff)), self.bin("and", len, &V::int(Ty::I32, 0xff)))
        } else {
            (pos.clone(), len.clone())
        };
        let pw = if bits > 32 { self.zext(&p, ty) } else { self.trunc(&p, ty) };
        let lw = if bits > 32 { self.zext(&l, ty) } else { self.trunc(&l, ty) };
        let lc = self.call2(&format!("llvm.umin.{}", ty.suffix()), &lw, &V::int(ty, bits - 1));
        let one = self.bin("shl", &V::int(ty, 1), &lc);
        let m = self.bin("sub", &one, &V::int(ty, 1));
        let len_big = self.icmp("uge", &l, &V::int(Ty::I32, bits));
        let m = self.select(&len_big, &V::int(ty, -1), &m);
        let pc = self.call2(&format!("llvm.umin.{}", ty.suffix()), &pw, &V::int(ty, bits - 1));
        let ms = self.bin("shl", &m, &pc);
        let fs = self.bin("shl", f, &pc);
        let fs = self.bin("and", &fs, &ms);
        let inv = self.bin("xor", &ms, &V::int(ty, -1));
        let kept = self.bin("and", base, &inv);
        let r = self.bin("or", &kept, &fs);
        let pos_big = self.icmp("uge", &p, &V::int(Ty::I32, bits));
        let lz = self.icmp("eq", &l, &V::int(Ty::I32, 0));
        let none = self.bin("or", &pos_big, &lz);
        self.select(&none, base, &r)
    }

    /// `fns`: the position of the n-th set bit of `mask` from `base`
    /// (forwards for offset > 0, backwards for offset < 0), or 0xffffffff.
    fn fns(&mut self, mask: &V, base: &V, off: &V) -> V {
        let name = "__anycuda_fns";
        self.cx.helper(name, || {
            "define internal i32 @__anycuda_fns(i32 %mask, i32 %base, i32 %off) #0 {
entry:
  %b = and i32 %base, 31
  %fwd = icmp sgt i32 %off, 0
  %isz = icmp eq i32 %off, 0
  br i1 %isz, label %zero, label %loop
zero:
  %bit = lshr i32 %mask, %b
  %set = and i32 %bit, 1
  %has = icmp ne i32 %set, 0
  %zr = select i1 %has, i32 %b, i32 -1
  ret i32 %zr
loop:
  %pos = phi i32 [%b, %entry], [%next, %cont]
  %left = phi i32 [%off, %entry], [%left2, %cont]
  %inr = icmp ult i32 %pos, 32
  br i1 %inr, label %body, label %fail
body:
  %bb = lshr i32 %mask, %pos
  %s = and i32 %bb, 1
  %hit = icmp ne i32 %s, 0
  %dec = select i1 %fwd, i32 -1, i32 1
  %left1 = add i32 %left, %dec
  %left2 = select i1 %hit, i32 %left1, i32 %left
  %done = icmp eq i32 %left2, 0
  %done2 = and i1 %done, %hit
  br i1 %done2, label %found, label %cont
cont:
  %step = select i1 %fwd, i32 1, i32 -1
  %next = add i32 %pos, %step
  br label %loop
found:
  ret i32 %pos
fail:
  ret i32 -1
}
"
            .to_string()
        });
        self.call_helper(name, Ty::I32, &[Ty::I32, Ty::I32, Ty::I32], &[mask, base, off])
    }

    fn dot(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let types: Vec<Type> = inst.types(self.b).collect();
        let (at, bt) = (types.first().copied().unwrap_or(Type::U32), types.get(1).copied().unwrap_or(Type::U32));
        let a = self.get(&args[1], Ty::I32)?;
        let bv = self.get(&args[2], Ty::I32)?;
        let c = self.get(&args[3], Ty::I32)?;
        let mut acc = c;
        if inst.op == Opcode::Dp4a {
            if let Some(sum) = self.dp4a_pairs(&a, &bv, at.is_signed(), bt.is_signed()) {
                let s = self.bin("add", &acc, &sum);
                return self.set(&args[0], s);
            }
            for k in 0..4 {
                let x = self.byte_of(&a, k, 8, at.is_signed());
                let y = self.byte_of(&bv, k, 8, bt.is_signed());
                let p = self.bin("mul", &x, &y);
                acc = self.bin("add", &acc, &p);
            }
        } else {
            // dp2a: a's two 16-bit halves with two bytes of b (low or high pair).
            let hi = inst.has(self.b, Flag::HiHalf);
            for k in 0..2 {
                let x = self.byte_of(&a, k, 16, at.is_signed());
                let y = self.byte_of(&bv, k + if hi { 2 } else { 0 }, 8, bt.is_signed());
                let p = self.bin("mul", &x, &y);
                acc = self.bin("add", &acc, &p);
            }
        }
        self.set(&args[0], acc)
    }

    /// `dp4a`'s four byte products of each lane summed, in warp mode on a
    /// target with a pairwise multiply-add ([`TargetFacts::pair_dot_bits`],
    /// x86 `pmaddwd`): each operand's bytes are extended to 16 bits in
    /// place, the even bytes (0 and 2 of each lane) and the odd ones (1
    /// and 3) apart, and one multiply-add of each gives a lane two of its
    /// products summed. Exact for every signedness: a byte extends to a
    /// 16-bit value of either sign, a product is at most 65,025 in
    /// magnitude and two of them fit 32 bits. As four extractions,
    /// products and sums per operand pair on 32-lane vectors, the 16
    /// `dp4a` of llama.cpp's q4_0 matrix-vector kernel were a quarter of
    /// its compile time (fast tier: 119 ms, 101 ms this way).
    ///
    /// [`TargetFacts::pair_dot_bits`]: crate::targets::TargetFacts::pair_dot_bits
    fn dp4a_pairs(&mut self, a: &V, b: &V, a_signed: bool, b_signed: bool) -> Option<V> {
        let n = crate::ir::lanes();
        let (f, ins, outs) = crate::targets::pair_dot_intrinsic(self.cx.facts.pair_dot_bits)?;
        let halves = 2 * n;
        if n == 1 || !halves.is_multiple_of(ins) || !(halves / ins).is_power_of_two() {
            // (Checked before any code is written.)
            return None;
        }
        let a = self.vec(a.clone());
        let b = self.vec(b.clone());
        // The even and odd bytes of a value, each extended in its 16 bits.
        let bytes = |this: &mut Self, v: &V, signed: bool| -> [String; 2] {
            let w = this.out.fresh("h");
            this.out.op(format_args!("{w} = bitcast {v} to <{halves} x i16>"));
            let (even, odd) = (this.out.fresh("h"), this.out.fresh("h"));
            if signed {
                let t = this.out.fresh("h");
                this.out.op(format_args!("{t} = shl <{halves} x i16> {w}, splat (i16 8)"));
                this.out.op(format_args!("{even} = ashr <{halves} x i16> {t}, splat (i16 8)"));
                this.out.op(format_args!("{odd} = ashr <{halves} x i16> {w}, splat (i16 8)"));
            } else {
                this.out.op(format_args!("{even} = and <{halves} x i16> {w}, splat (i16 255)"));
                this.out.op(format_args!("{odd} = lshr <{halves} x i16> {w}, splat (i16 8)"));
            }
            [even, odd]
        };
        let xa = bytes(self, &a, a_signed);
        let xb = bytes(self, &b, b_signed);
        self.cx.declare(f, &format!("declare <{outs} x i32> @{f}(<{ins} x i16>, <{ins} x i16>)"));
        let mut sum: Option<V> = None;
        for (x, y) in xa.iter().zip(&xb) {
            let r = self.in_native_parts(f, ("i16", ins), ("i32", outs), halves, &[x, y], "")?;
            let v = V::new(Ty::I32, r);
            sum = Some(match sum {
                None => v,
                Some(s) => self.bin("add", &s, &v),
            });
        }
        sum
    }

    /// Calls the target intrinsic `f`, whose operands are vectors of `ins`
    /// elements (`(type, count)`) and whose result has `outs`, on operands
    /// `args` of `total` elements each (a whole number of `ins`, a power of
    /// two of them; `rest`: the call's further arguments, as written after
    /// the vectors): on each native-width part in turn, then the parts'
    /// results put back together pairwise. The whole result, or `None` for
    /// a `total` that does not split so.
    fn in_native_parts(&mut self, f: &str, ins: (&str, u32), outs: (&str, u32), total: u32, args: &[&str], rest: &str) -> Option<String> {
        let ((ity, ins), (oty, outs)) = (ins, outs);
        if ins == 0 || !total.is_multiple_of(ins) || !(total / ins).is_power_of_two() {
            return None;
        }
        let mut results: Vec<String> = Vec::new();
        for p in 0..total / ins {
            let take: Vec<String> = (p * ins..(p + 1) * ins).map(|i| format!("i32 {i}")).collect();
            let take = take.join(", ");
            let mut parts = Vec::with_capacity(args.len());
            for x in args {
                let xs = self.out.fresh("t");
                self.out.op(format_args!("{xs} = shufflevector <{total} x {ity}> {x}, <{total} x {ity}> poison, <{ins} x i32> <{take}>"));
                parts.push(format!("<{ins} x {ity}> {xs}"));
            }
            let r = self.out.fresh("t");
            self.out.op(format_args!("{r} = call <{outs} x {oty}> @{f}({}{rest})", parts.join(", ")));
            results.push(r);
        }
        let mut width = outs;
        while results.len() > 1 {
            let all: Vec<String> = (0..2 * width).map(|i| format!("i32 {i}")).collect();
            let all = all.join(", ");
            let mut joined = Vec::with_capacity(results.len() / 2);
            for pair in results.chunks(2) {
                let t = self.out.fresh("t");
                self.out.op(format_args!(
                    "{t} = shufflevector <{width} x {oty}> {}, <{width} x {oty}> {}, <{} x i32> <{all}>",
                    pair[0],
                    pair[1],
                    2 * width
                ));
                joined.push(t);
            }
            results = joined;
            width *= 2;
        }
        results.pop()
    }

    /// Field `k` of `width` bits of a 32-bit value, extended to 32 bits.
    fn byte_of(&mut self, v: &V, k: i128, width: u32, signed: bool) -> V {
        let s = self.bin("lshr", v, &V::int(Ty::I32, k * width as i128));
        let t = self.trunc(&s, Ty::int(width));
        self.ext(&t, Ty::I32, signed)
    }

    fn lop3(&mut self, a: &V, b: &V, c: &V, lut: &V) -> V {
        // result = OR over the 8 minterms whose LUT bit is set.
        let na = self.bin("xor", a, &V::int(Ty::I32, -1));
        let nb = self.bin("xor", b, &V::int(Ty::I32, -1));
        let nc = self.bin("xor", c, &V::int(Ty::I32, -1));
        let mut acc = V::int(Ty::I32, 0);
        for i in 0..8 {
            // LUT index i = (a<<2)|(b<<1)|c as in the PTX definition
            // (a = 0xF0, b = 0xCC, c = 0xAA).
            let x = if i & 4 != 0 { a.clone() } else { na.clone() };
            let y = if i & 2 != 0 { b.clone() } else { nb.clone() };
            let z = if i & 1 != 0 { c.clone() } else { nc.clone() };
            let t = self.bin("and", &x, &y);
            let t = self.bin("and", &t, &z);
            let bit = self.bin("lshr", lut, &V::int(Ty::I32, i));
            let bit = self.bin("and", &bit, &V::int(Ty::I32, 1));
            let m = self.bin("sub", &V::int(Ty::I32, 0), &bit);
            let t = self.bin("and", &t, &m);
            acc = self.bin("or", &acc, &t);
        }
        acc
    }

    fn prmt(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let a = self.get(&args[1], Ty::I32)?;
        let bv = self.get(&args[2], Ty::I32)?;
        let c = self.get(&args[3], Ty::I32)?;
        let mode = inst.flags(self.b).find(|f| matches!(f, Flag::F4e | Flag::B4e | Flag::Rc8 | Flag::Ecl | Flag::Ecr | Flag::Rc16));
        if mode.is_none() {
            if let Some(r) = self.prmt_shuffled(&a, &bv, &c) {
                return self.set(&args[0], r);
            }
        }
        let a64 = self.zext(&a, Ty::I64);
        let b64 = self.zext(&bv, Ty::I64);
        let bh = self.bin("shl", &b64, &V::int(Ty::I64, 32));
        let cat = self.bin("or", &bh, &a64);
        let mut r = V::int(Ty::I32, 0);
        for k in 0..4i128 {
            let byte = if let Some(m) = mode {
                // Mode selectors use the low 2 bits of c.
                let s = self.bin("and", &c, &V::int(Ty::I32, 3));
                let idx = match m {
                    Flag::F4e => {
                        let t = self.bin("add", &s, &V::int(Ty::I32, k));
                        self.bin("and", &t, &V::int(Ty::I32, 7))
                    }
                    Flag::B4e => {
                        let t = self.bin("sub", &s, &V::int(Ty::I32, k));
                        self.bin("and", &t, &V::int(Ty::I32, 7))
                    }
                    Flag::Rc8 => s.clone(),
                    Flag::Ecl => {
                        // Edge clamp left: bytes below s replicate s.
                        let own = V::int(Ty::I32, k);
                        let lt = self.icmp("ult", &own, &s);
                        self.select(&lt, &s, &own)
                    }
                    Flag::Ecr => {
                        // Edge clamp right: bytes above s replicate s.
                        let own = V::int(Ty::I32, k);
                        let gt = self.icmp("ugt", &own, &s);
                        self.select(&gt, &s, &own)
                    }
                    _ => {
                        // rc16: replicate the 16-bit half selected by c[0].
                        let h = self.bin("and", &c, &V::int(Ty::I32, 1));
                        let h2 = self.bin("shl", &h, &V::int(Ty::I32, 1));
                        self.bin("or", &h2, &V::int(Ty::I32, k & 1))
                    }
                };
                let sh = self.bin("mul", &idx, &V::int(Ty::I32, 8));
                let sh = self.zext(&sh, Ty::I64);
                let v = self.bin("lshr", &cat, &sh);
                let v = self.trunc(&v, Ty::I32);
                self.bin("and", &v, &V::int(Ty::I32, 0xff))
            } else {
                let sel = self.bin("lshr", &c, &V::int(Ty::I32, 4 * k));
                let idx = self.bin("and", &sel, &V::int(Ty::I32, 7));
                let sign = self.bin("and", &sel, &V::int(Ty::I32, 8));
                let sh = self.bin("mul", &idx, &V::int(Ty::I32, 8));
                let sh = self.zext(&sh, Ty::I64);
                let v = self.bin("lshr", &cat, &sh);
                let v = self.trunc(&v, Ty::I32);
                let v = self.bin("and", &v, &V::int(Ty::I32, 0xff));
                // Sign replication: the byte's msb copied to all 8 bits.
                let msb = self.bin("lshr", &v, &V::int(Ty::I32, 7));
                let rep = self.bin("mul", &msb, &V::int(Ty::I32, 0xff));
                let has_sign = self.icmp("ne", &sign, &V::int(Ty::I32, 0));
                self.select(&has_sign, &rep, &v)
            };
            let placed = self.bin("shl", &byte, &V::int(Ty::I32, 8 * k));
            r = self.bin("or", &r, &placed);
        }
        self.set(&args[0], r)
    }

    /// `prmt`'s default mode in warp mode on a target with a byte shuffle
    /// ([`TargetFacts::byte_shuffle_bits`], x86 `pshufb`): each result
    /// byte's selector nibble becomes an index into its lane's four bytes
    /// of `a` and of `b` (a shuffle's 128-bit lane holds four PTX lanes);
    /// the index of the operand the nibble does not name has its top bit
    /// set, which makes the shuffle give 0 there, so the two shuffles'
    /// results combine with an or. A nibble's bit 3 then replaces its byte
    /// by the byte's sign. As a 64-bit shift of the two operands per byte,
    /// llama.cpp's table lookups (`get_int_from_table_16`: 16 `prmt` with
    /// selectors from data in its iq4_nl matrix-vector kernel) were half of
    /// that kernel's compile time.
    ///
    /// [`TargetFacts::byte_shuffle_bits`]: crate::targets::TargetFacts::byte_shuffle_bits
    fn prmt_shuffled(&mut self, a: &V, b: &V, c: &V) -> Option<V> {
        let n = crate::ir::lanes();
        let (f, width) = crate::targets::byte_shuffle_intrinsic(self.cx.facts.byte_shuffle_bits)?;
        let bytes = 4 * n;
        if n == 1 || !bytes.is_multiple_of(width) || !(bytes / width).is_power_of_two() {
            // (Checked before any code is written.)
            return None;
        }
        let (a, b, c) = (self.vec(a.clone()), self.vec(b.clone()), self.vec(c.clone()));
        // Nibble k of the selector in byte k.
        let mut nib = self.bin("and", &c, &V::int(Ty::I32, 0xf));
        for k in 1..4 {
            let field = self.bin("and", &c, &V::int(Ty::I32, 0xf << (4 * k)));
            let moved = self.bin("shl", &field, &V::int(Ty::I32, 4 * k));
            nib = self.bin("or", &nib, &moved);
        }
        // Byte (nibble & 3) of the lane's word: lane j's word starts at
        // byte 4 * (j % 4) of its 128-bit lane.
        let lane_base: Vec<String> = (0..n).map(|j| format!("i32 {}", (4 * (j % 4)) * 0x0101_0101)).collect();
        let lane_base = V::new(Ty::I32, format!("<{}>", lane_base.join(", ")));
        let within = self.bin("and", &nib, &V::int(Ty::I32, 0x0303_0303));
        let index = self.bin("or", &within, &lane_base);
        // Bit 2 of a nibble names `b`: 0x80 in the index of `a`'s byte.
        let names_b = self.bin("and", &nib, &V::int(Ty::I32, 0x0404_0404));
        let not_a = self.bin("shl", &names_b, &V::int(Ty::I32, 5));
        let from_a = self.bin("or", &index, &not_a);
        let from_b = self.bin("xor", &from_a, &V::int(Ty::I32, 0x8080_8080u32 as i32 as i128));
        self.cx.declare(f, &format!("declare <{width} x i8> @{f}(<{width} x i8>, <{width} x i8>)"));
        let mut picked = Vec::new();
        for (v, idx) in [(&a, &from_a), (&b, &from_b)] {
            let (vb, ib) = (self.out.fresh("h"), self.out.fresh("h"));
            self.out.op(format_args!("{vb} = bitcast {v} to <{bytes} x i8>"));
            self.out.op(format_args!("{ib} = bitcast {idx} to <{bytes} x i8>"));
            picked.push(self.in_native_parts(f, ("i8", width), ("i8", width), bytes, &[&vb, &ib], "")?);
        }
        let (r, sign_bits, neg, signs, nibs, rep, out) = (
            self.out.fresh("h"),
            self.out.fresh("h"),
            self.out.fresh("h"),
            self.out.fresh("h"),
            self.out.fresh("h"),
            self.out.fresh("h"),
            self.out.fresh("h"),
        );
        self.out.op(format_args!("{r} = or <{bytes} x i8> {}, {}", picked[0], picked[1]));
        // Bit 3 of a nibble: the byte's sign in all its bits.
        let sign = self.bin("and", &nib, &V::int(Ty::I32, 0x0808_0808));
        self.out.op(format_args!("{sign_bits} = bitcast {sign} to <{bytes} x i8>"));
        self.out.op(format_args!("{neg} = icmp slt <{bytes} x i8> {r}, zeroinitializer"));
        self.out.op(format_args!("{signs} = sext <{bytes} x i1> {neg} to <{bytes} x i8>"));
        self.out.op(format_args!("{nibs} = icmp ne <{bytes} x i8> {sign_bits}, zeroinitializer"));
        self.out.op(format_args!("{rep} = select <{bytes} x i1> {nibs}, <{bytes} x i8> {signs}, <{bytes} x i8> {r}"));
        self.out.op(format_args!("{out} = bitcast <{bytes} x i8> {rep} to <{n} x i32>"));
        Some(V::new(Ty::I32, out))
    }

    pub fn get_carry(&mut self) -> V {
        let p = self.carry_slot();
        self.out.def(Ty::I1, format_args!("load {VI1}, ptr {p}"))
    }

    fn set_carry(&mut self, c: &V) {
        let p = self.carry_slot();
        let c = match self.warp.as_ref().map(|w| w.mask.clone()) {
            Some(mask) => {
                let old = self.out.def(Ty::I1, format_args!("load {VI1}, ptr {p}"));
                self.select(&mask, c, &old)
            }
            None => c.clone(),
        };
        self.out.op(format_args!("store {c}, ptr {p}"));
    }

    fn carry_slot(&mut self) -> String {
        if let Some(c) = &self.carry {
            return c.clone();
        }
        let a = self.out.alloca(&Ty::I1.to_string(), 1);
        // The carry flag starts clear.
        self.out.allocas.push_str(&format!("  store {}, ptr {a}\n", V::int(Ty::I1, 0)));
        self.carry = Some(a.clone());
        a
    }

    // ---- f32 / f64 -------------------------------------------------------------------

    /// The largest subnormal boundary (smallest normal) of a type, as bits.
    fn min_normal(ty: Ty) -> u64 {
        match ty {
            Ty::Half => 0x0400,
            Ty::Bfloat => 0x0080,
            Ty::Float => 0x0080_0000,
            _ => 0x0010_0000_0000_0000,
        }
    }

    /// Register `r` read as `ty` and flushed, computed once per IR block
    /// while the register keeps its value: the operands llama.cpp's
    /// quantised matrix kernels scale by (`mul.ftz`/`fma.rn.ftz` by one
    /// loaded scale, dozens of times) were flushed at every use, a fifth of
    /// their IR. A value from an earlier block may not dominate this one
    /// (a guarded instruction's arm, a label, a resumed warp), so the
    /// block is part of the key's validity; writes drop the register's
    /// entries (`store_reg`, and after each instruction by its
    /// destinations).
    pub fn memo_flush(&mut self, r: RegId, ty: Ty) -> Res<V> {
        let lanes = crate::ir::lanes();
        let block = self.out.block;
        if let Some((at, v)) = self.flushes.get(&(r, lanes, ty)) {
            if *at == block {
                return Ok(v.clone());
            }
        }
        let v = self.get(&Operand::Reg(r), ty)?;
        let f = self.flush(&v);
        // The flush itself emits no label: `f` is defined in `block`.
        if self.out.block == block {
            self.flushes.insert((r, lanes, ty), (block, f.clone()));
        }
        Ok(f)
    }

    /// Register `r` changed: its flushed values are stale.
    pub fn forget_flushes(&mut self, r: RegId) {
        if !self.flushes.is_empty() {
            self.flushes.retain(|&(reg, _, _), _| reg != r);
        }
    }

    /// Drops the flushed values of the registers `inst` writes (whatever
    /// path its lowering wrote them by).
    pub fn forget_written_flushes(&mut self, inst: &Instruction) {
        if self.flushes.is_empty() {
            return;
        }
        let mut defs = Vec::new();
        self.b.defs(inst, &mut defs);
        for r in defs {
            self.forget_flushes(r);
        }
    }

    /// Flushes a subnormal to a zero of the same sign.
    pub fn flush(&mut self, v: &V) -> V {
        let ty = v.ty;
        let it = ty.as_int();
        let bits = self.bitcast(v, it);
        let sign_mask = 1i128 << (ty.bits() - 1);
        let mag = self.bin("and", &bits, &V::int(it, sign_mask - 1));
        let sub = self.icmp("ult", &mag, &V::int(it, Self::min_normal(ty) as i128));
        let sign = self.bin("and", &bits, &V::int(it, sign_mask));
        let r = self.select(&sub, &sign, &bits);
        self.bitcast(&r, ty)
    }

    /// Whether a result of format `t` written to `dest` may keep the host's NaN
    /// payload (see [`nan_blind_registers`]).
    fn nan_blind_dest(&self, dest: &Operand, t: Type) -> bool {
        matches!(*dest, Operand::Reg(r) if self.nan_blind.get(r as usize).is_some_and(|x| x.blind_to(t)))
    }

    /// NVIDIA returns one canonical NaN for f32 and 16-bit float results.
    pub fn canonical_nan(&mut self, v: &V) -> V {
        match v.ty {
            Ty::Float => {
                let isnan = self.fcmp("uno", v, v);
                let n = V::float_bits(v.ty, 0x7fff_ffff);
                self.select(&isnan, &n, v)
            }
            Ty::Half | Ty::Bfloat => {
                // On the bits (as a float compare, x86 code made it 32
                // scalar compares per warp-mode value: 90 % of llama.cpp's
                // f16 `mul_mat_vec_f` in generation).
                let isnan = self.is_nan_16(v);
                let bits = self.bitcast(v, Ty::I16);
                let r = self.select(&isnan, &V::int(Ty::I16, 0x7fff), &bits);
                self.bitcast(&r, v.ty)
            }
            _ => v.clone(),
        }
    }

    /// PTX's `.sat`: clamps to [+0, 1], and -0 and NaN give +0.
    ///
    /// On AMDGPU the clamp is made on the value's bits. LLVM turns the
    /// float form below into the hardware's clamp modifier, and what that
    /// modifier does with -0 is not stated by AMD's ISA documents (an
    /// instruction-set emulator keeps -0, where PTX wants +0); integer
    /// compares are never folded into it, and are exact whatever the
    /// hardware does. The host keeps the float form, which its instructions
    /// implement as written.
    pub(crate) fn saturate(&mut self, v: &V) -> V {
        if !self.cx.facts.float_clamp_saturates {
            return self.saturate_bits(v);
        }
        let zero = V::float_bits(v.ty, 0);
        let one = V::float_bits(v.ty, float_one_bits(v.ty));
        let gt0 = self.fcmp("ogt", v, &zero);
        let lo = self.select(&gt0, v, &zero);
        let lt1 = self.fcmp("olt", &lo, &one);
        self.select(&lt1, &lo, &one)
    }

    /// [`Self::saturate`] on the bits: as a signed integer, every negative
    /// value and -0 is below 1 (zero's own bits are 0), NaNs are above
    /// infinity's bits, and the positive floats are ordered as their bits.
    fn saturate_bits(&mut self, v: &V) -> V {
        let it = v.ty.as_int();
        let b = self.bitcast(v, it);
        let zero = V::int(it, 0);
        let one = V::int(it, float_one_bits(v.ty) as i128);
        let inf = V::int(it, float_inf_bits(v.ty) as i128);
        let below = self.icmp("slt", &b, &V::int(it, 1));
        let nan = self.icmp("sgt", &b, &inf);
        let to_zero = self.bin("or", &below, &nan);
        let big = self.icmp("sge", &b, &one);
        let capped = self.select(&big, &one, &b);
        let r = self.select(&to_zero, &zero, &capped);
        self.bitcast(&r, v.ty)
    }

    /// A directed-rounding operation: on a host with AVX-512F one
    /// instruction with the rounding mode embedded ([`Self::rounded_avx512`]);
    /// on other hosts, for scalars, round to nearest corrected by the sign
    /// of the exact error ([`crate::directed`]); elsewhere a small strictfp
    /// helper that sets the rounding mode around one constrained operation.
    pub(crate) fn rounded(&mut self, op: &str, args: &[&V], mode: Rounding) -> V {
        if let Some(v) = self.rounded_avx512(op, args, mode) {
            return v;
        }
        let ty = args[0].ty;
        let rm = match mode {
            Rounding::Rz => 0,
            Rounding::Rp => 2,
            Rounding::Rm => 3,
            _ => 1,
        };
        let name = format!("__anycuda_{op}_{}_{}", ty.suffix(), mode);
        let call_args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        if !self.cx.facts.cheap_rounding_mode_switch {
            if let Some(text) = crate::directed::round_to_nearest_form(&name) {
                for (intr, decl) in crate::directed::INTRINSICS {
                    self.cx.declare(intr, decl);
                }
                self.cx.helper(&name, || text);
                return self.out.def(ty, format_args!("call {ty} @{name}({})", call_args.join(", ")));
            }
        }
        let n = args.len();
        let params: Vec<String> = (0..n).map(|i| format!("{ty} %a{i}")).collect();
        let pass: Vec<String> = (0..n).map(|i| format!("{ty} %a{i}")).collect();
        let intr = format!("llvm.experimental.constrained.{op}.{}", ty.suffix());
        let tys: Vec<String> = (0..n).map(|_| ty.to_string()).collect();
        self.cx.declare(&intr, &format!("declare {ty} @{intr}({}, metadata, metadata)", tys.join(", ")));
        self.cx.declare("llvm.set.rounding", "declare void @llvm.set.rounding(i32)");
        let text = format!(
            "define internal {ty} @{name}({}) #1 {{\n  call void @llvm.set.rounding(i32 {rm}) #1\n  %r = call {ty} @{intr}({}, metadata !\"round.dynamic\", metadata !\"fpexcept.ignore\") #1\n  call void @llvm.set.rounding(i32 1) #1\n  ret {ty} %r\n}}\n",
            params.join(", "),
            pass.join(", ")
        );
        self.cx.helper(&name, || text);
        self.out.def(ty, format_args!("call {ty} @{name}({})", call_args.join(", ")))
    }

    /// `op` (`fadd`, `fsub`, `fmul`, `fdiv`, `sqrt`, `fma`) of f32 or f64
    /// with directed rounding as AVX-512's instructions with an embedded
    /// rounding mode (`vaddss {rd-sae}`: the result is the exact one rounded
    /// in that direction, without exceptions, as PTX's `.rm`/`.rp`/`.rz`
    /// define it), scalar or, in warp mode, on 512-bit pieces of the lanes.
    /// The helper of [`Self::rounded`] switches the x87 and SSE rounding
    /// modes twice per operation (`fldcw` and `ldmxcsr`, each about as
    /// costly as a pipeline flush); these are single instructions. `None`
    /// where the target is not a host with AVX-512F or the form has no
    /// such instruction.
    fn rounded_avx512(&mut self, op: &str, args: &[&V], mode: Rounding) -> Option<V> {
        use std::fmt::Write as _;
        if !self.cx.facts.embedded_rounding {
            return None;
        }
        let ty = args[0].ty;
        let (elem, (s, p), wide) = match ty {
            Ty::Float => ("float", ("ss", "ps"), 16u32),
            Ty::Double => ("double", ("sd", "pd"), 8u32),
            _ => return None,
        };
        // _MM_FROUND_TO_{NEG_INF,POS_INF,ZERO} | _MM_FROUND_NO_EXC
        let imm = match mode {
            Rounding::Rm => 9,
            Rounding::Rp => 10,
            Rounding::Rz => 11,
            _ => return None,
        };
        let base = match op {
            "fadd" => "add",
            "fsub" => "sub",
            "fmul" => "mul",
            "fdiv" => "div",
            "sqrt" => "sqrt",
            "fma" => "fma",
            _ => return None,
        };
        let arity = if base == "sqrt" {
            1
        } else if base == "fma" {
            3
        } else {
            2
        };
        if args.len() != arity || args.iter().any(|a| a.ty != ty || a.lanes != args[0].lanes) {
            return None;
        }
        let n = args[0].lanes;
        self.out.terminated = false;
        if n == 1 {
            if base == "fma" {
                let name = format!("llvm.x86.avx512.vfmadd.{}", ty.scalar_suffix());
                self.cx.declare(&name, &format!("declare {elem} @{name}({elem}, {elem}, {elem}, i32)"));
                let r = self.out.fresh("t");
                let _ = writeln!(
                    self.out.text,
                    "  {r} = call {elem} @{name}({elem} {}, {elem} {}, {elem} {}, i32 {imm})",
                    args[0].s, args[1].s, args[2].s
                );
                return Some(V::scalar(ty, r));
            }
            // The masked scalar forms: the low element of the result, the
            // others (and the masked-off case, never taken: mask -1) from
            // the pass-through operand.
            let vt = format!("<{} x {elem}>", 128 / ty.bits());
            let name =
                if base == "sqrt" { format!("llvm.x86.avx512.mask.sqrt.{s}") } else { format!("llvm.x86.avx512.mask.{base}.{s}.round") };
            self.cx.declare(&name, &format!("declare {vt} @{name}({vt}, {vt}, {vt}, i8, i32)"));
            let x = self.out.fresh("t");
            let _ = writeln!(self.out.text, "  {x} = insertelement {vt} poison, {elem} {}, i64 0", args[0].s);
            let y = if arity == 2 {
                let y = self.out.fresh("t");
                let _ = writeln!(self.out.text, "  {y} = insertelement {vt} poison, {elem} {}, i64 0", args[1].s);
                y
            } else {
                x.clone()
            };
            let r = self.out.fresh("t");
            let _ = writeln!(self.out.text, "  {r} = call {vt} @{name}({vt} {x}, {vt} {y}, {vt} {x}, i8 -1, i32 {imm})");
            let e = self.out.fresh("t");
            let _ = writeln!(self.out.text, "  {e} = extractelement {vt} {r}, i64 0");
            return Some(V::scalar(ty, e));
        }
        if !n.is_multiple_of(wide) || !(n / wide).is_power_of_two() {
            return None;
        }
        let vt = format!("<{wide} x {elem}>");
        let name = match base {
            "fma" => format!("llvm.x86.avx512.vfmadd.{p}.512"),
            _ => format!("llvm.x86.avx512.{base}.{p}.512"),
        };
        let params = vec![vt.as_str(); arity].join(", ");
        self.cx.declare(&name, &format!("declare {vt} @{name}({params}, i32)"));
        let operands: Vec<&str> = args.iter().map(|a| a.s.as_str()).collect();
        let r = self.in_native_parts(&name, (elem, wide), (elem, wide), n, &operands, &format!(", i32 {imm}"))?;
        Some(V { ty, s: r, lanes: n })
    }

    fn directed(r: Option<Rounding>) -> Option<Rounding> {
        match r {
            Some(m @ (Rounding::Rz | Rounding::Rm | Rounding::Rp)) => Some(m),
            _ => None,
        }
    }

    fn float_op(&mut self, inst: &Instruction, t: Type) -> Res<()> {
        use Opcode::*;
        let b = self.b;
        let args = b.args(inst);
        let ty = op_ty(t);
        let fm = self.fmods(inst);
        let ftz = fm.ftz;
        let src = |s: &mut Self, i: usize| -> Res<V> {
            // Registers that hold no subnormal need no flush ([`flushed_registers`]).
            let flushed = t == Type::F32 && matches!(args[i], Operand::Reg(r) if s.flushed.get(r as usize).copied().unwrap_or(false));
            if !ftz || flushed {
                return s.get(&args[i], ty);
            }
            match args[i] {
                Operand::Reg(r) => s.memo_flush(r, ty),
                _ => {
                    let v = s.get(&args[i], ty)?;
                    Ok(s.flush(&v))
                }
            }
        };
        // An f32 result that only ever feeds operations whose results do
        // not depend on which NaN it is ([`nan_blind_registers`]) keeps
        // whatever NaN the host produced: the NaN becomes canonical where
        // the chain ends (the accumulation of an unrolled dot product then
        // costs one fix-up instead of one per step).
        let blind = t == Type::F32 && self.nan_blind_dest(&args[0], t);
        let finish = |s: &mut Self, v: V| -> V {
            let v = if fm.sat { s.saturate(&v) } else { v };
            let v = if ftz { s.flush(&v) } else { v };
            if blind {
                v
            } else {
                s.canonical_nan(&v)
            }
        };
        let dir = Self::directed(fm.round);
        match inst.op {
            Add | Sub | Mul => {
                let x = src(self, 1)?;
                let y = src(self, 2)?;
                let op = match inst.op {
                    Add => "fadd",
                    Sub => "fsub",
                    _ => "fmul",
                };
                let r = match dir {
                    Some(m) => self.rounded(op, &[&x, &y], m),
                    None => self.bin(op, &x, &y),
                };
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Fma | Mad => {
                let x = src(self, 1)?;
                let y = src(self, 2)?;
                let z = src(self, 3)?;
                let r = match dir {
                    Some(m) => self.rounded("fma", &[&x, &y, &z], m),
                    None => self.call3(&format!("llvm.fma.{}", ty.suffix()), &x, &y, &z),
                };
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Div if inst.has(b, Flag::Approx) && ty == Ty::Float => {
                // Within the documented error everywhere except where the
                // hardware's a * (1/b) underflows: for |b| >= 2^126 it gives
                // a * 0 (0, or NaN for an infinite or NaN a).
                let x = src(self, 1)?;
                let y = src(self, 2)?;
                let q = self.bin("fdiv", &x, &y);
                let ay = self.call1("llvm.fabs.f32", &y);
                let big = self.fcmp("oge", &ay, &V::f32(0x7e80_0000));
                let sy = self.call2("llvm.copysign.f32", &V::f32(0), &y);
                let z = self.bin("fmul", &x, &sy);
                let r = self.select(&big, &z, &q);
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Div => {
                let x = src(self, 1)?;
                let y = src(self, 2)?;
                let r = match dir {
                    Some(m) => self.rounded("fdiv", &[&x, &y], m),
                    None => self.bin("fdiv", &x, &y),
                };
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Rcp => {
                let x = src(self, 1)?;
                let x = if ty == Ty::Double && inst.has(b, Flag::Approx) {
                    // The hardware approximation ignores the low 32 bits.
                    let bits = self.bitcast(&x, Ty::I64);
                    let hi = self.bin("and", &bits, &V::int(Ty::I64, -0x1_0000_0000));
                    self.bitcast(&hi, Ty::Double)
                } else {
                    x
                };
                let one = if ty == Ty::Float { V::f32(0x3f80_0000) } else { V::f64(0x3ff0_0000_0000_0000) };
                let r = match dir {
                    Some(m) => self.rounded("fdiv", &[&one, &x], m),
                    None => self.bin("fdiv", &one, &x),
                };
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Sqrt => {
                let x = src(self, 1)?;
                let r = match dir {
                    Some(m) => self.rounded("sqrt", &[&x], m),
                    None => self.call1(&format!("llvm.sqrt.{}", ty.suffix()), &x),
                };
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Rsqrt => {
                let x = src(self, 1)?;
                let s = self.call1(&format!("llvm.sqrt.{}", ty.suffix()), &x);
                let one = if ty == Ty::Float { V::f32(0x3f80_0000) } else { V::f64(0x3ff0_0000_0000_0000) };
                let r = self.bin("fdiv", &one, &s);
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Sin | Cos | Lg2 | Ex2 => {
                let x = src(self, 1)?;
                let r = if ty == Ty::Float {
                    self.approx_f32(inst.op, &x)
                } else {
                    let f = match inst.op {
                        Sin => "llvm.sin",
                        Cos => "llvm.cos",
                        Lg2 => "llvm.log2",
                        _ => "llvm.exp2",
                    };
                    self.call1(&format!("{f}.{}", ty.suffix()), &x)
                };
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Tanh => {
                let x = src(self, 1)?;
                let r = if ty == Ty::Float { self.approx_f32(Tanh, &x) } else { self.libm1("tanh", &x) };
                let r = finish(self, r);
                self.set(&args[0], r)
            }
            Abs | Neg => {
                let x = src(self, 1)?;
                let r = if inst.op == Abs {
                    self.call1(&format!("llvm.fabs.{}", ty.suffix()), &x)
                } else {
                    self.out.def(ty, format_args!("fneg {x}"))
                };
                let r = if ftz { self.flush(&r) } else { r };
                let r = if blind {
                    r
                } else if ty == Ty::Double {
                    // NaN operands come back quieted with their sign unchanged.
                    let isnan = self.fcmp("uno", &x, &x);
                    let xb = self.bitcast(&x, Ty::I64);
                    let q = self.bin("or", &xb, &V::int(Ty::I64, 1 << 51));
                    let q = self.bitcast(&q, Ty::Double);
                    self.select(&isnan, &q, &r)
                } else {
                    self.canonical_nan(&r)
                };
                self.set(&args[0], r)
            }
            Min | Max => {
                let x = src(self, 1)?;
                let y = src(self, 2)?;
                let mut r = self.fminmax(&x, &y, inst.op == Min, inst.has(b, Flag::NaN));
                if args.len() == 4 {
                    let z = src(self, 3)?;
                    r = self.fminmax(&r, &z, inst.op == Min, inst.has(b, Flag::NaN));
                }
                if inst.has(b, Flag::Xorsign) {
                    // |result| with the sign of a xor b.
                    let it = ty.as_int();
                    let xa = self.bitcast(&x, it);
                    let ya = self.bitcast(&y, it);
                    let sx = self.bin("xor", &xa, &ya);
                    let sm = V::int(it, 1i128 << (ty.bits() - 1));
                    let s = self.bin("and", &sx, &sm);
                    let rb = self.bitcast(&r, it);
                    let mag = self.bin("and", &rb, &V::int(it, (1i128 << (ty.bits() - 1)) - 1));
                    let v = self.bin("or", &mag, &s);
                    r = self.bitcast(&v, ty);
                }
                let r = if fm.relu { self.relu(&r) } else { r };
                let r = if ftz { self.flush(&r) } else { r };
                let r = if blind { r } else { self.canonical_nan(&r) };
                self.set(&args[0], r)
            }
            Copysign => {
                let x = self.get(&args[1], ty)?;
                let y = self.get(&args[2], ty)?;
                let r = self.call2(&format!("llvm.copysign.{}", ty.suffix()), &y, &x);
                self.set(&args[0], r)
            }
            Testp => {
                let x = self.get(&args[1], ty)?;
                let r = self.testp(inst, &x)?;
                self.set(&args[0], r)
            }
            _ => self.unsupported(format!("`{}`", self.describe(inst))),
        }
    }

    /// `op` (`ex2`, `lg2`, `sin`, `cos`, `tanh`: their `.approx` forms) of
    /// an f32 `x`: the target's instructions where they are within PTX's
    /// bounds (`TargetFacts::native_approx_math`), else this lowering's own
    /// double-precision helpers.
    fn approx_f32(&mut self, op: Opcode, x: &V) -> V {
        use Opcode::*;
        if self.cx.facts.native_approx_math {
            return match op {
                Ex2 => self.call1("llvm.exp2.f32", x),
                Lg2 => self.call1("llvm.log2.f32", x),
                Sin => self.call1("llvm.sin.f32", x),
                Cos => self.call1("llvm.cos.f32", x),
                _ => self.libm1("tanhf", x),
            };
        }
        match op {
            Ex2 => self.exp2_f32(x),
            Lg2 => self.log2_f32(x),
            Sin => self.sin_f32(x),
            Cos => self.cos_f32(x),
            _ => self.tanh_f32(x),
        }
    }

    /// `2^x` of an f32 `x` (`ex2.approx`): a call of a helper defined
    /// once per module for the lane count (see [`Self::exp2_f32_body`]).
    fn exp2_f32(&mut self, x: &V) -> V {
        self.pure_f32_helper("exp2", x, Self::exp2_f32_body)
    }

    /// `2^d` of a double `d` that is not NaN, as a double: `d` clamped to
    /// [-152, 130] (the f32 results beyond are 0 or infinity), `d = n +
    /// f` with `n` the nearest integer, `2^f` for `|f| <= 1/2` by its
    /// Taylor series to the power `degree` (truncation below
    /// `0.347^(degree+1) / (degree+1)!` relative), times `2^n` from its
    /// exponent bits (exact: a normal double's exponent).
    fn exp2_f64(&mut self, d: &V, degree: usize) -> V {
        let lo = self.call2("llvm.maxnum.f64", d, &V::f64((-152f64).to_bits()));
        let c = self.call2("llvm.minnum.f64", &lo, &V::f64(130f64.to_bits()));
        let n = self.call1("llvm.rint.f64", &c);
        let f = self.bin("fsub", &c, &n);
        // ln(2)^k / k!, k = degree down to 0.
        let ln2 = std::f64::consts::LN_2;
        let mut coef = vec![1f64; degree + 1];
        for k in 1..=degree {
            coef[k] = coef[k - 1] * ln2 / k as f64;
        }
        let mut p = V::f64(coef[degree].to_bits());
        for k in (0..degree).rev() {
            p = self.call3("llvm.fma.f64", &p, &f, &V::f64(coef[k].to_bits()));
        }
        let ni = self.out.def(Ty::I64, format_args!("fptosi {n} to {}", Ty::I64));
        let biased = self.bin("add", &ni, &V::int(Ty::I64, 1023));
        let exp_bits = self.bin("shl", &biased, &V::int(Ty::I64, 52));
        let scale = self.bitcast(&exp_bits, Ty::Double);
        self.bin("fmul", &p, &scale)
    }

    /// `tanh(x)` of an f32 `x` (`tanh.approx`), as [`Self::exp2_f32`]:
    /// `sign(x) (1 - 2 / (e^(2|x|) + 1))` in double precision, `e^(2|x|)`
    /// by [`Self::exp2_f64`] to the 9th power, and `x` itself for `|x| <
    /// 2^-20` (`tanh x = x (1 - x^2/3 ...)`). The subtraction cancels only
    /// for small `|x|`, where `2^f` is `e^(2|x|)` itself with `f` small and
    /// its series' truncation (`f^10`) far below the result; from `|x| =
    /// 0.17` (`f` up to 1/2) the result is above 0.17 and the 1e-11
    /// truncation far below its ulp. Within 0.5001 ulp, where PTX allows
    /// 2^-10.9 relative.
    fn tanh_f32(&mut self, x: &V) -> V {
        self.pure_f32_helper("tanh", x, Self::tanh_f32_body)
    }

    fn tanh_f32_body(&mut self, x: &V) -> V {
        let xv = self.vec(x.clone());
        let d = self.out.def(Ty::Double, format_args!("fpext {xv} to {VF64}"));
        let a = self.call1("llvm.fabs.f64", &d);
        // A NaN lane computes with 0 and takes its NaN back at the end.
        let nan = self.fcmp("uno", &xv, &xv);
        let a = self.select(&nan, &V::f64(0f64.to_bits()), &a);
        let y = self.bin("fmul", &a, &V::f64((2.0 * std::f64::consts::LOG2_E).to_bits()));
        let t = self.exp2_f64(&y, 9);
        let one = V::f64(1f64.to_bits());
        let t1 = self.bin("fadd", &t, &one);
        let q = self.bin("fdiv", &V::f64(2f64.to_bits()), &t1);
        let r = self.bin("fsub", &one, &q);
        let r = self.call2("llvm.copysign.f64", &r, &d);
        let small = self.fcmp("olt", &a, &V::f64((2f64).powi(-20).to_bits()));
        let r = self.select(&small, &d, &r);
        let r = self.out.def(Ty::Float, format_args!("fptrunc {r} to {VF32}"));
        self.select(&nan, &xv, &r)
    }

    /// `log2(x)` of an f32 `x` (`lg2.approx`), as [`Self::exp2_f32`]
    /// (see [`Self::log2_f32_body`]).
    fn log2_f32(&mut self, x: &V) -> V {
        self.pure_f32_helper("log2", x, Self::log2_f32_body)
    }

    /// `sin(x)` of an f32 `x` (`sin.approx`), as [`Self::exp2_f32`] (see
    /// [`Self::sin_cos_f32_body`]).
    fn sin_f32(&mut self, x: &V) -> V {
        self.pure_f32_helper("sin", x, |s, x| s.sin_cos_f32_body(x, false))
    }

    /// `cos(x)` of an f32 `x` (`cos.approx`), as [`Self::sin_f32`].
    fn cos_f32(&mut self, x: &V) -> V {
        self.pure_f32_helper("cos", x, |s, x| s.sin_cos_f32_body(x, true))
    }

    /// The body of `sin(x)` (`cos(x)` when `cos`) of an f32 `x`: when
    /// every lane's `|x|` is at most 2^20, in double precision and rounded
    /// once: `x = k pi/2 + r` with `k` the nearest integer to `x 2/pi` and
    /// `r` by three fused steps with pi/2 split into three doubles (the
    /// products are exact, so `r` is good to about 2^-53 relative for
    /// these `k`), `sin r` and `cos r` for `|r| <= pi/4` by their series to
    /// `r^11` and `r^12` (truncation below 1e-11), chosen and negated by
    /// the quadrant `k mod 4` (plus one for the cosine): within 0.5001
    /// ulp, where PTX allows 2^-20.5 absolute. Other lanes (larger, infinite
    /// or NaN operands: rare) take libm's `sinf`/`cosf` for the whole
    /// warp.
    fn sin_cos_f32_body(&mut self, x: &V, cos: bool) -> V {
        let xv = self.vec(x.clone());
        let ax = self.call1("llvm.fabs.f32", &xv);
        // Ordered: a NaN lane is not small.
        let small = self.fcmp("ole", &ax, &V::f32(0x4980_0000));
        let all_small = if xv.lanes > 1 { self.all(&small) } else { small };
        let (fast, slow, join) = (self.out.fresh_label("fast"), self.out.fresh_label("slow"), self.out.fresh_label("join"));
        self.out.terminate(format_args!("br {all_small}, label %{fast}, label %{slow}"));
        self.out.label(&fast);
        let d = self.out.def(Ty::Double, format_args!("fpext {xv} to {VF64}"));
        let k = self.bin("fmul", &d, &V::f64(std::f64::consts::FRAC_2_PI.to_bits()));
        let k = self.call1("llvm.rint.f64", &k);
        let nk = self.bin("fsub", &V::f64(0f64.to_bits()), &k);
        // pi/2 = P1 + P2 + P3 (each the rounding of what is left).
        let p1 = std::f64::consts::FRAC_PI_2;
        let (p2, p3) = (6.123_233_995_736_766e-17_f64, -1.497_384_904_859_260_6e-33_f64);
        let mut r = d;
        for p in [p1, p2, p3] {
            r = self.call3("llvm.fma.f64", &nk, &V::f64(p.to_bits()), &r);
        }
        let z = self.bin("fmul", &r, &r);
        // sin r = r + r z (S1 + z (S2 + ...)), cos r = 1 + z (C1 + z (...)).
        let fact = |n: u32| (1..=n).map(f64::from).product::<f64>();
        let mut ps = V::f64((-1.0 / fact(11)).to_bits());
        for n in [9u32, 7, 5, 3] {
            let c = if n % 4 == 1 { 1.0 / fact(n) } else { -1.0 / fact(n) };
            ps = self.call3("llvm.fma.f64", &ps, &z, &V::f64(c.to_bits()));
        }
        let rz = self.bin("fmul", &r, &z);
        let sin_r = self.call3("llvm.fma.f64", &rz, &ps, &r);
        let mut pc = V::f64((1.0 / fact(12)).to_bits());
        for n in [10u32, 8, 6, 4, 2] {
            let c = if n % 4 == 0 { 1.0 / fact(n) } else { -1.0 / fact(n) };
            pc = self.call3("llvm.fma.f64", &pc, &z, &V::f64(c.to_bits()));
        }
        let cos_r = self.call3("llvm.fma.f64", &z, &pc, &V::f64(1f64.to_bits()));
        let ki = self.out.def(Ty::I64, format_args!("fptosi {k} to {}", Ty::I64));
        let q = self.bin("add", &ki, &V::int(Ty::I64, i128::from(cos)));
        let odd = self.bin("and", &q, &V::int(Ty::I64, 1));
        let odd = self.icmp("ne", &odd, &V::int(Ty::I64, 0));
        let v = self.select(&odd, &cos_r, &sin_r);
        let half = self.bin("and", &q, &V::int(Ty::I64, 2));
        let neg = self.icmp("ne", &half, &V::int(Ty::I64, 0));
        let minus = self.out.def(Ty::Double, format_args!("fneg {v}"));
        let v = self.select(&neg, &minus, &v);
        let quick = self.out.def(Ty::Float, format_args!("fptrunc {v} to {VF32}"));
        // The reduction gives -0 a positive r: sin(-0) is -0.
        let quick = if cos {
            quick
        } else {
            let zero = self.fcmp("oeq", &xv, &V::f32(0));
            self.select(&zero, &xv, &quick)
        };
        self.out.terminate(format_args!("br label %{join}"));
        self.out.label(&slow);
        let libm = self.call1(if cos { "llvm.cos.f32" } else { "llvm.sin.f32" }, &xv);
        self.out.terminate(format_args!("br label %{join}"));
        self.out.label(&join);
        let t = xv.type_name();
        self.out.def(Ty::Float, format_args!("phi {t} [{}, %{fast}], [{}, %{slow}]", quick.s, libm.s))
    }

    /// `body(x)` of an f32 `x` through `__anycuda_{what}_f32` (one lane)
    /// or `__anycuda_{what}_v32f32` (a warp's lanes), defined once per
    /// module: the fast tier calls it (inline, each warp-mode use cost its
    /// code generator about as much as the rest of a small kernel), the
    /// optimised tier's inliner takes it in (thread-by-thread loops then
    /// vectorise).
    fn pure_f32_helper(&mut self, what: &str, x: &V, body: impl FnOnce(&mut Self, &V) -> V) -> V {
        let x = self.vec(x.clone());
        let t = x.type_name();
        let name = if x.lanes > 1 { format!("__anycuda_{what}_v{}f32", x.lanes) } else { format!("__anycuda_{what}_f32") };
        self.define_pure_helper(&name, &t, &format!("{t} %x"), |this| {
            let r = body(this, &V { ty: Ty::Float, s: "%x".into(), lanes: x.lanes });
            this.out.terminate(format_args!("ret {r}"));
        });
        self.out.def(Ty::Float, format_args!("call {t} @{name}({x})"))
    }

    /// The body of `2^x` of an f32 `x`, in double precision and
    /// rounded once: `x = n + f` with `n` the nearest integer (after
    /// clamping `x` to [-152, 130], beyond which the result is 0 or
    /// infinity whatever the rest), `2^f` for `|f| <= 1/2` by its Taylor
    /// series to the 9th power (truncation below 1e-11 relative), times
    /// `2^n` built from its exponent bits (exact: `n` is a double's normal
    /// exponent), then one `fptrunc`, which also gives subnormal results,
    /// 0 and infinity their rounding. Within 0.5001 ulp, so inside the
    /// documented 2 ulp of `ex2.approx.f32`. Vector code in warp mode,
    /// where `llvm.exp2` became 32 calls of libm's `exp2f` per
    /// instruction, with the warp's vector registers spilled around each.
    fn exp2_f32_body(&mut self, x: &V) -> V {
        let xv = self.vec(x.clone());
        let d = self.out.def(Ty::Double, format_args!("fpext {xv} to {VF64}"));
        let r = self.exp2_f64(&d, 9);
        let r = self.out.def(Ty::Float, format_args!("fptrunc {r} to {VF32}"));
        // A NaN operand went through the clamp as -152; it is the result.
        let nan = self.fcmp("uno", x, x);
        self.select(&nan, x, &r)
    }

    /// The body of `log2(x)` of an f32 `x` (`lg2.approx`), in double precision and
    /// rounded once: `x` widened (f32 subnormals are normal doubles) is
    /// `m 2^e` with `m` in [sqrt(1/2), sqrt(2)), and `ln(m) = 2 atanh(s)`,
    /// `s = (m - 1) / (m + 1)` (`|s| <= 0.172`), by its series to `s^13`
    /// (truncation below 2e-12); `e + ln(m) log2(e)` then one `fptrunc`.
    /// Within 0.5001 ulp (the documented bound is 2^-22 absolute).
    /// Negative operands give NaN, zeros -infinity, +infinity itself.
    fn log2_f32_body(&mut self, x: &V) -> V {
        let xv = self.vec(x.clone());
        let d = self.out.def(Ty::Double, format_args!("fpext {xv} to {VF64}"));
        let bits = self.bitcast(&d, Ty::I64);
        let biased = self.bin("lshr", &bits, &V::int(Ty::I64, 52));
        let biased = self.bin("and", &biased, &V::int(Ty::I64, 0x7ff));
        let e = self.bin("sub", &biased, &V::int(Ty::I64, 1023));
        let frac = self.bin("and", &bits, &V::int(Ty::I64, 0x000f_ffff_ffff_ffff));
        let m_bits = self.bin("or", &frac, &V::int(Ty::I64, 0x3ff0_0000_0000_0000));
        let m = self.bitcast(&m_bits, Ty::Double);
        let big = self.fcmp("ogt", &m, &V::f64(std::f64::consts::SQRT_2.to_bits()));
        let half = self.bin("fmul", &m, &V::f64(0.5f64.to_bits()));
        let m = self.select(&big, &half, &m);
        let e1 = self.bin("add", &e, &V::int(Ty::I64, 1));
        let e = self.select(&big, &e1, &e);
        let one = V::f64(1f64.to_bits());
        let num = self.bin("fsub", &m, &one);
        let den = self.bin("fadd", &m, &one);
        let s = self.bin("fdiv", &num, &den);
        let z = self.bin("fmul", &s, &s);
        // 1 + z/3 + z^2/5 + ... + z^6/13
        let mut q = V::f64((1f64 / 13.0).to_bits());
        for k in (0..6).rev() {
            q = self.call3("llvm.fma.f64", &q, &z, &V::f64((1f64 / (2 * k + 1) as f64).to_bits()));
        }
        // log2(m) = 2 s q / ln(2)
        let sq = self.bin("fmul", &s, &q);
        let l = self.bin("fmul", &sq, &V::f64((2.0 * std::f64::consts::LOG2_E).to_bits()));
        let ef = self.out.def(Ty::Double, format_args!("sitofp {e} to {VF64}"));
        let r = self.bin("fadd", &ef, &l);
        let r = self.out.def(Ty::Float, format_args!("fptrunc {r} to {VF32}"));
        let zero = V::f32(0);
        let is_zero = self.fcmp("oeq", x, &zero);
        let r = self.select(&is_zero, &V::f32(0xff80_0000), &r);
        let inf = self.fcmp("oeq", x, &V::f32(0x7f80_0000));
        let r = self.select(&inf, x, &r);
        // Negative (and NaN, `ult`) operands: NaN.
        let neg = self.fcmp("ult", x, &zero);
        self.select(&neg, &V::f32(0x7fff_ffff), &r)
    }

    fn libm1(&mut self, name: &str, x: &V) -> V {
        let ty = x.ty;
        self.cx.declare(name, &format!("declare {} @{name}({})", ty.name(), ty.name()));
        self.call_helper(name, ty, &[ty], &[x])
    }

    fn relu(&mut self, v: &V) -> V {
        // Negative results become +0; NaN stays NaN.
        let zero = V::float_bits(v.ty, 0);
        let le = self.fcmp("ole", v, &zero);
        self.select(&le, &zero, v)
    }

    /// PTX min/max: a NaN operand yields the other one (both NaN: NaN),
    /// unless `nan` (`.NaN`) propagates it; -0 is below +0.
    fn fminmax(&mut self, x: &V, y: &V, min: bool, nan: bool) -> V {
        let ty = x.ty;
        let it = ty.as_int();
        let lt = self.fcmp(if min { "olt" } else { "ogt" }, x, y);
        let pick = self.select(&lt, x, y);
        // Equal values (including +0 / -0): combine the sign bits.
        let eq = self.fcmp("oeq", x, y);
        let xb = self.bitcast(x, it);
        let yb = self.bitcast(y, it);
        let comb = self.bin(if min { "or" } else { "and" }, &xb, &yb);
        let comb = self.bitcast(&comb, ty);
        let r = self.select(&eq, &comb, &pick);
        let xn = self.fcmp("uno", x, x);
        let yn = self.fcmp("uno", y, y);
        let canon = V::float_bits(
            ty,
            match ty {
                Ty::Float => 0x7fff_ffff,
                Ty::Double => 0x7fff_ffff_ffff_ffff,
                _ => 0x7fff,
            },
        );
        if nan {
            let any = self.bin("or", &xn, &yn);
            self.select(&any, &canon, &r)
        } else {
            let r = self.select(&yn, x, &r);
            let r = self.select(&xn, y, &r);
            let both = self.bin("and", &xn, &yn);
            self.select(&both, &canon, &r)
        }
    }

    fn testp(&mut self, inst: &Instruction, x: &V) -> Res<V> {
        let ty = x.ty;
        let abs = self.call1(&format!("llvm.fabs.{}", ty.suffix()), x);
        let inf = V::float_bits(
            ty,
            match ty {
                Ty::Float => 0x7f80_0000,
                Ty::Double => 0x7ff0_0000_0000_0000,
                Ty::Half => 0x7c00,
                _ => 0x7f80,
            },
        );
        let min_normal = V::float_bits(ty, Self::min_normal(ty));
        let zero = V::float_bits(ty, 0);
        let flag = inst
            .flags(self.b)
            .find(|f| matches!(f, Flag::Finite | Flag::Infinite | Flag::Number | Flag::Notanumber | Flag::Normal | Flag::Subnormal));
        Ok(match flag {
            Some(Flag::Finite) => self.fcmp("olt", &abs, &inf),
            Some(Flag::Infinite) => self.fcmp("oeq", &abs, &inf),
            Some(Flag::Number) => self.fcmp("ord", x, x),
            Some(Flag::Notanumber) => self.fcmp("uno", x, x),
            Some(Flag::Normal) => {
                // Zero counts as normal on NVIDIA hardware.
                let a = self.fcmp("oge", &abs, &min_normal);
                let z = self.fcmp("oeq", &abs, &zero);
                let a = self.bin("or", &a, &z);
                let c = self.fcmp("olt", &abs, &inf);
                self.bin("and", &a, &c)
            }
            Some(Flag::Subnormal) => {
                let a = self.fcmp("olt", &abs, &min_normal);
                let c = self.fcmp("one", &abs, &zero);
                self.bin("and", &a, &c)
            }
            _ => return self.invalid("testp needs one of .finite .infinite .number .notanumber .normal .subnormal"),
        })
    }

    // ---- f16 / bf16 (scalar and x2) -------------------------------------------------------

    pub fn round_helper(&mut self, fmt: Format, mode: Mode, satfinite: bool) -> String {
        let (name, text) = softfloat::ir_helper(fmt, mode, satfinite);
        self.cx.declare("llvm.smin.i64", "declare i64 @llvm.smin.i64(i64, i64)");
        self.cx.declare("llvm.smax.i64", "declare i64 @llvm.smax.i64(i64, i64)");
        self.cx.helper(&name, || text);
        name
    }

    /// Rounds an f32 value to nearest even into a 16-bit float type. f16:
    /// LLVM's `fptrunc`, the IEEE conversion (one instruction per 16 lanes
    /// with F16C or AVX-512 and on AMD GPUs; the software rounding of a
    /// 32-lane warp's values was a fifth of llama.cpp's generation time with
    /// an f16 KV cache). bf16, the upper half of an f32's bits: the lower
    /// half rounded away on the bits (adding 0x7fff plus the kept half's
    /// lowest bit carries into the kept half exactly when rounding to
    /// nearest even goes up, through the exponent too: to the smallest
    /// normal, to infinity), a NaN made the canonical one.
    pub fn narrow_float_rn(&mut self, f: &V, ty: Ty) -> V {
        if ty == Ty::Half {
            return self.out.def(Ty::Half, format_args!("fptrunc {f} to {}", Ty::Half));
        }
        let b = self.bitcast(f, Ty::I32);
        let kept = self.bin("lshr", &b, &V::int(Ty::I32, 16));
        let lsb = self.bin("and", &kept, &V::int(Ty::I32, 1));
        let bias = self.bin("add", &lsb, &V::int(Ty::I32, 0x7fff));
        let up = self.bin("add", &b, &bias);
        let r = self.bin("lshr", &up, &V::int(Ty::I32, 16));
        let h = self.trunc(&r, Ty::I16);
        let isnan = self.fcmp("uno", f, f);
        let h = self.select(&isnan, &V::int(Ty::I16, 0x7fff), &h);
        self.bitcast(&h, Ty::Bfloat)
    }

    /// A bf16 value as f32: its bits are the upper half of the f32's.
    pub fn widen_bf16(&mut self, h: &V) -> V {
        let b = self.bitcast(h, Ty::I16);
        let w = self.zext(&b, Ty::I32);
        let w = self.bin("shl", &w, &V::int(Ty::I32, 16));
        self.bitcast(&w, Ty::Float)
    }

    /// Rounds an exact (or rounded-to-odd) double to a 16-bit float type.
    pub fn round_to(&mut self, d: &V, ty: Ty, mode: Mode) -> V {
        let fmt = if ty == Ty::Half { softfloat::HALF } else { softfloat::BF16 };
        let name = self.round_helper(fmt, mode, false);
        let bits = self.call_helper(&name, Ty::I16, &[Ty::Double], &[d]);
        self.bitcast(&bits, ty)
    }

    pub fn mode_of(r: Option<Rounding>) -> Mode {
        match r {
            Some(Rounding::Rz) => Mode::Rz,
            Some(Rounding::Rm) => Mode::Rm,
            Some(Rounding::Rp) => Mode::Rp,
            Some(Rounding::Rna) => Mode::Rna,
            _ => Mode::Rn,
        }
    }

    fn half_op(&mut self, inst: &Instruction, t: Type) -> Res<()> {
        let args = self.b.args(inst);
        let packed = matches!(t, Type::F16x2 | Type::Bf16x2);
        let ety = if matches!(t, Type::F16 | Type::F16x2) { Ty::Half } else { Ty::Bfloat };
        if inst.op == Opcode::Testp || inst.op == Opcode::Copysign {
            return self.unsupported(format!("`{}`", self.describe(inst)));
        }
        // A result that only feeds readers blind to which NaN it is stays
        // the host's NaN (a `half2` dot product's products feed its sums).
        let blind = self.nan_blind_dest(&args[0], t);
        let n_src = args.len() - 1;
        let mut srcs = Vec::new();
        for i in 1..=n_src {
            let v = self.get(&args[i], if packed { Ty::I32 } else { ety })?;
            srcs.push(v);
        }
        if !packed {
            let r = self.half_scalar(inst, &srcs, ety, blind)?;
            return self.set(&args[0], r);
        }
        if Self::pairs_in_one_operation(inst, self.fmods(inst)) {
            // Both halves in one operation on twice the lanes: the register's
            // bits as `<2 x half>` (`<64 x half>` in warp mode), the halves
            // interleaved as they lie in the register. Unpacking each half
            // (a shift and a truncation), then packing the results again (two
            // extensions, a shift and an or) cost more than the operation
            // itself: llama.cpp's f16 matrix-vector kernel accumulates in
            // `half2`.
            let n = ir::lanes();
            let srcs: Vec<V> = srcs.into_iter().map(|s| self.vec(s)).collect();
            let r = {
                let _pairs = ir::set_lanes(2 * n);
                let hs: Vec<V> = srcs.iter().map(|s| self.out.def(ety, format_args!("bitcast {s} to {ety}"))).collect();
                self.half_scalar(inst, &hs, ety, blind)?
            };
            let r = self.out.def(Ty::I32, format_args!("bitcast {r} to {}", Ty::I32));
            return self.set(&args[0], r);
        }
        let mut parts = Vec::new();
        for k in 0..2 {
            let mut hs = Vec::new();
            for s in &srcs {
                let sh = self.bin("lshr", s, &V::int(Ty::I32, 16 * k));
                let h = self.trunc(&sh, Ty::I16);
                hs.push(self.bitcast(&h, ety));
            }
            let r = self.half_scalar(inst, &hs, ety, blind)?;
            let ri = self.bitcast(&r, Ty::I16);
            let z = self.zext(&ri, Ty::I32);
            parts.push(self.bin("shl", &z, &V::int(Ty::I32, 16 * k)));
        }
        let r = self.bin("or", &parts[0], &parts[1]);
        self.set(&args[0], r)
    }

    /// Whether a packed 16-bit operation computes its halves with the same
    /// code at any lane count: the operations of [`Self::half_scalar`] that
    /// call no helper (those are written for the mode's lane count).
    fn pairs_in_one_operation(inst: &Instruction, fm: FMods) -> bool {
        match inst.op {
            Opcode::Add | Opcode::Sub | Opcode::Mul => Self::mode_of(fm.round) == Mode::Rn,
            Opcode::Neg | Opcode::Abs => true,
            _ => false,
        }
    }

    /// `blind`: the result only feeds readers that cannot tell NaNs apart
    /// ([`nan_blind_registers`]), so it need not be the canonical one.
    fn half_scalar(&mut self, inst: &Instruction, s: &[V], ety: Ty, blind: bool) -> Res<V> {
        use Opcode::*;
        let fm = self.fmods(inst);
        let mode = Self::mode_of(fm.round);
        let src: Vec<V> = s.iter().map(|v| if fm.ftz { self.flush(v) } else { v.clone() }).collect();
        let wide = |s: &mut Self, v: &V| s.out.def(Ty::Double, format_args!("fpext {v} to {VF64}"));
        let r = match inst.op {
            Add | Sub | Mul => {
                let op = match inst.op {
                    Add => "fadd",
                    Sub => "fsub",
                    _ => "fmul",
                };
                if mode == Mode::Rn {
                    // In f32, then rounded to f16 or bf16: rounding twice gives
                    // the correctly rounded result for +, - and * when the
                    // intermediate format has at least 2p + 2 bits of precision
                    // for p-bit operands (Figueroa, "When is double rounding
                    // innocuous?", 1995): 24 >= 2 * 11 + 2 (f16), 2 * 8 + 2
                    // (bf16). The exponent range cannot get in the way: f16
                    // sums and products are exact in f32 wherever they are
                    // subnormal in f16; bf16 sums are multiples of bf16's
                    // smallest subnormal, exact on f32's finer grid there, and a
                    // bf16 product below f32's normal range has at most 16
                    // significant bits, so its f32 rounding cannot land on a
                    // bf16 midpoint from the wrong side (unit tests of both).
                    let f = |s: &mut Self, v: &V| {
                        if ety == Ty::Half {
                            s.half_to_f32(v)
                        } else {
                            s.widen_bf16(v)
                        }
                    };
                    let x = f(self, &src[0]);
                    let y = f(self, &src[1]);
                    let r = self.bin(op, &x, &y);
                    self.narrow_float_rn(&r, ety)
                } else {
                    // Exact in double, then one rounding.
                    let x = wide(self, &src[0]);
                    let y = wide(self, &src[1]);
                    let d = self.bin(op, &x, &y);
                    self.round_to(&d, ety, mode)
                }
            }
            Fma | Mad => {
                let x = wide(self, &src[0]);
                let y = wide(self, &src[1]);
                let z = wide(self, &src[2]);
                let d = self.fma_round_to_odd(&x, &y, &z);
                self.round_to(&d, ety, mode)
            }
            Neg | Abs => {
                let xb = self.bitcast(&src[0], Ty::I16);
                let r = if inst.op == Neg {
                    self.bin("xor", &xb, &V::int(Ty::I16, 0x8000))
                } else {
                    self.bin("and", &xb, &V::int(Ty::I16, 0x7fff))
                };
                self.bitcast(&r, ety)
            }
            Min | Max => {
                let x = wide(self, &src[0]);
                let y = wide(self, &src[1]);
                let r = self.fminmax(&x, &y, inst.op == Min, inst.has(self.b, Flag::NaN));
                let r = self.round_to(&r, ety, Mode::Rn);
                let r = if inst.has(self.b, Flag::Xorsign) {
                    let xb = self.bitcast(&src[0], Ty::I16);
                    let yb = self.bitcast(&src[1], Ty::I16);
                    let sx = self.bin("xor", &xb, &yb);
                    let sgn = self.bin("and", &sx, &V::int(Ty::I16, 0x8000));
                    let rb = self.bitcast(&r, Ty::I16);
                    let mag = self.bin("and", &rb, &V::int(Ty::I16, 0x7fff));
                    let v = self.bin("or", &mag, &sgn);
                    self.bitcast(&v, ety)
                } else {
                    r
                };
                return Ok(if fm.relu { self.relu(&r) } else { r });
            }
            Ex2 | Tanh | Sin | Cos | Lg2 | Rcp | Sqrt | Rsqrt => {
                let x = if src[0].ty == Ty::Half {
                    self.half_to_f32(&src[0])
                } else {
                    self.out.def(Ty::Float, format_args!("fpext {} to {VF32}", src[0]))
                };
                let f = match inst.op {
                    Ex2 | Sin | Cos | Lg2 | Tanh => self.approx_f32(inst.op, &x),
                    Sqrt => self.call1("llvm.sqrt.f32", &x),
                    Rcp => self.bin("fdiv", &V::f32(0x3f80_0000), &x),
                    Rsqrt => {
                        let q = self.call1("llvm.sqrt.f32", &x);
                        self.bin("fdiv", &V::f32(0x3f80_0000), &q)
                    }
                    _ => self.approx_f32(Tanh, &x),
                };
                self.narrow_float_rn(&f, ety)
            }
            _ => return self.unsupported(format!("`{}`", self.describe(inst))),
        };
        let r = if fm.sat { self.saturate(&r) } else { r };
        let r = if fm.relu { self.relu(&r) } else { r };
        let r = if fm.ftz { self.flush(&r) } else { r };
        Ok(if blind { r } else { self.canonical_nan(&r) })
    }

    /// fma in double rounded to odd, so that a second rounding to a narrower
    /// format is exact: the neighbours below and above the exact value are
    /// computed with directed rounding, and the odd one is kept when they differ.
    pub fn fma_round_to_odd(&mut self, x: &V, y: &V, z: &V) -> V {
        let lo = self.rounded("fma", &[x, y, z], Rounding::Rm);
        let hi = self.rounded("fma", &[x, y, z], Rounding::Rp);
        let lb = self.bitcast(&lo, Ty::I64);
        let odd = self.bin("and", &lb, &V::int(Ty::I64, 1));
        let is_odd = self.icmp("ne", &odd, &V::int(Ty::I64, 0));
        let same = self.fcmp("oeq", &lo, &hi);
        let nan = self.fcmp("uno", &lo, &lo);
        let odd_pick = self.select(&is_odd, &lo, &hi);
        // Exact results (and NaN) come from the round-to-nearest fma, which
        // also gives an exact zero its correct sign.
        let rn = self.call3("llvm.fma.f64", x, y, z);
        let exact = self.bin("or", &same, &nan);
        self.select(&exact, &rn, &odd_pick)
    }
}

/// The float format in which an instruction reads its register sources
/// without depending on which NaN they hold, only on whether they hold one:
/// the operations lowered with a canonical NaN result (f32 `add`, `sub`,
/// `mul`, `fma`, `mad`, `div`, `rcp`, `sqrt`, `rsqrt`, `sin`, `cos`,
/// `lg2`, `ex2`, `tanh`, `abs`, `neg`, `min`, `max`; the same on f16,
/// bf16 and their pairs but for `div` (none) and `min`/`max`, which
/// [`FnLower::half_op`] rounds through a helper: a NaN operand only decides
/// that the result is NaN), comparisons (`setp`, `set`) and class tests
/// (`testp`), which see NaN-ness alone. Not `min`/`max` with `.xorsign`
/// (the result's sign comes from the operands' sign bits, NaN or not), nor
/// anything that moves bits (`mov`, `selp`, `copysign`, conversions,
/// stores).
fn reads_nan_blind(b: &Body, inst: &Instruction) -> Option<Type> {
    use Opcode::*;
    let t = inst.ty(b)?;
    let blind = match t {
        Type::F32 => match inst.op {
            Add | Sub | Mul | Fma | Mad | Div | Rcp | Sqrt | Rsqrt | Sin | Cos | Lg2 | Ex2 | Tanh | Abs | Neg | Setp | Set | Testp => true,
            Min | Max => !inst.has(b, Flag::Xorsign),
            _ => false,
        },
        Type::F16 | Type::F16x2 | Type::Bf16 | Type::Bf16x2 => {
            matches!(inst.op, Add | Sub | Mul | Fma | Mad | Rcp | Sqrt | Rsqrt | Sin | Cos | Lg2 | Ex2 | Tanh | Abs | Neg | Setp | Set)
        }
        _ => false,
    };
    blind.then_some(t)
}

/// Which NaN a register may hold as far as its readers can tell
/// ([`nan_blind_registers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanReaders {
    /// Nothing reads it.
    None,
    /// Only instructions that read it as this float format without seeing
    /// which NaN it is ([`reads_nan_blind`]), directly or through copies.
    BlindAs(Type),
    /// Some reader could see the payload, or reads it as another format.
    See,
}

impl NanReaders {
    /// Whether a result of format `t` written to the register may be any
    /// NaN where PTX has the canonical one.
    pub fn blind_to(self, t: Type) -> bool {
        self == NanReaders::None || self == NanReaders::BlindAs(t)
    }

    fn meet(self, other: NanReaders) -> NanReaders {
        match (self, other) {
            (NanReaders::None, x) | (x, NanReaders::None) => x,
            (NanReaders::BlindAs(a), NanReaders::BlindAs(b)) if a == b => self,
            _ => NanReaders::See,
        }
    }
}

/// Registers read only as register sources of the instructions of
/// [`reads_nan_blind`] of one float format, or copied (`mov`, `selp`, the
/// value `shfl` moves to another lane) into such registers. Those
/// instructions' results do not depend on which NaN such a source holds, so
/// a value of that format in one of these registers may be any NaN where
/// PTX has the canonical one: nothing can tell them apart. The format
/// matters: the halves of an f32 NaN with another payload may be numbers
/// as an f16 pair. A device function's `.reg` results are read by its
/// caller: never blind.
///
/// A greatest fixpoint: every register starts unread and moves down the
/// lattice `None` > `BlindAs(format)` > `See` at each read, or at each
/// copy into a register that moved; each pass over the body only moves
/// registers down, so it ends after at most two passes per copy in the
/// longest chain of copies, plus one.
pub fn nan_blind_registers(f: &Function, b: &Body) -> Vec<NanReaders> {
    let mut readers: Vec<NanReaders> =
        b.regs.iter().map(|r| if f.returns.contains(&r.var) { NanReaders::See } else { NanReaders::None }).collect();
    let mut reads: Vec<(RegId, NanReaders)> = Vec::new();
    let mut regs = Vec::new();
    loop {
        let mut changed = false;
        for s in &b.statements {
            let Statement::Instruction(inst) = s else { continue };
            let args = b.args(inst);
            let consumer = reads_nan_blind(b, inst);
            // A copy's sources are read as its destination is.
            let copy_to = match (inst.op, args.first()) {
                (Opcode::Mov | Opcode::Selp, Some(&Operand::Reg(d)))
                | (Opcode::Shfl, Some(&Operand::PredPair(d, _) | &Operand::Reg(d))) => {
                    Some(readers.get(d as usize).copied().unwrap_or(NanReaders::See))
                }
                _ => None,
            };
            let copied = if inst.op == Opcode::Selp { 1..3 } else { 1..2 };
            reads.clear();
            regs.clear();
            if let Some(g) = inst.guard {
                regs.push(g.reg);
            }
            let first_is_dest = b.writes_first(inst);
            for (k, &op) in args.iter().enumerate() {
                if k == 0 && first_is_dest {
                    continue;
                }
                if let Operand::Reg(r) = op {
                    // A plain register source of such an operation is the
                    // one reading that cannot observe a payload.
                    if let Some(t) = consumer.filter(|_| k > 0) {
                        reads.push((r, NanReaders::BlindAs(t)));
                        continue;
                    }
                    if let Some(dest) = copy_to.filter(|_| copied.contains(&k)) {
                        reads.push((r, dest));
                        continue;
                    }
                }
                b.operand_registers(op, &mut regs);
            }
            reads.extend(regs.iter().map(|&r| (r, NanReaders::See)));
            for &(r, how) in &reads {
                if let Some(x) = readers.get_mut(r as usize) {
                    let met = x.meet(how);
                    changed |= met != *x;
                    *x = met;
                }
            }
        }
        if !changed {
            return readers;
        }
    }
}

/// Registers every write to which leaves an f32 that is not subnormal: the
/// results of f32 arithmetic with `.ftz` (`add`, `sub`, `mul`, `fma`,
/// `mad`, `div`, `rcp`, `sqrt`, `rsqrt`, `sin`, `cos`, `lg2`, `ex2`,
/// `tanh`, `abs`, `neg`, `min`, `max`: [`FnLower::float_op`] flushes them
/// last but for the canonical NaN, which is not subnormal), conversions to
/// f32 of integers and of f16 values (never subnormal), and 32-bit
/// copies of such registers or of constants that are not subnormal (`mov`,
/// `selp`, the value `shfl` moves between lanes). An `.ftz` operation need
/// not flush such a source again: the shuffle reductions of llama.cpp's
/// kernels read each step's sum back as an operand of the next.
///
/// A device function's `.reg` parameters hold what its caller passed:
/// never flushed.
///
/// A greatest fixpoint, as [`nan_blind_registers`]: every other register
/// starts flushed and loses it at a write that may leave a subnormal, or at
/// a copy of a register that lost it.
pub fn flushed_registers(f: &Function, b: &Body) -> Vec<bool> {
    use Opcode::*;
    let mut flushed: Vec<bool> = b.regs.iter().map(|r| !f.params.contains(&r.var)).collect();
    let mut defs = Vec::new();
    loop {
        let mut changed = false;
        for s in &b.statements {
            let Statement::Instruction(inst) = s else { continue };
            defs.clear();
            b.defs(inst, &mut defs);
            if defs.is_empty() {
                continue;
            }
            let args = b.args(inst);
            let source = |op: &Operand| match *op {
                Operand::Reg(r) => flushed.get(r as usize).copied().unwrap_or(false),
                Operand::Imm(v) => !is_subnormal_f32(v as u32),
                Operand::F32(bits) => !is_subnormal_f32(bits),
                _ => false,
            };
            let ty = inst.ty(b);
            let bits32 = ty.is_some_and(|t| t.bits() == 32);
            let ok = |r: RegId| match inst.op {
                Add | Sub | Mul | Fma | Mad | Div | Rcp | Sqrt | Rsqrt | Sin | Cos | Lg2 | Ex2 | Tanh | Abs | Neg | Min | Max => {
                    ty == Some(Type::F32) && inst.has(b, Flag::Ftz)
                }
                // An integer converted to f32 is zero or at least 1 in
                // magnitude, and an f16 value (the smallest subnormal f16
                // is 2^-24) is a normal f32: llama.cpp's quantised matrix
                // kernels scale each `cvt.rn.f32.s32` of an integer dot
                // product by `mul.ftz`/`fma.rn.ftz`.
                Cvt => {
                    let mut types = inst.types(b);
                    use Type::{F16, S16, S32, S64, S8, U16, U32, U64, U8};
                    matches!((types.next(), types.next()), (Some(Type::F32), Some(U8 | U16 | U32 | U64 | S8 | S16 | S32 | S64 | F16)))
                }
                Mov if bits32 && args.len() == 2 => source(&args[1]),
                Selp if bits32 && args.len() == 4 => source(&args[1]) && source(&args[2]),
                // The data register of `shfl` (not its predicate).
                Shfl => {
                    matches!(args.first(), Some(&Operand::PredPair(d, _)) | Some(&Operand::Reg(d)) if d == r)
                        && args.get(1).is_some_and(source)
                }
                _ => false,
            };
            let lost: Vec<RegId> = defs.iter().copied().filter(|&r| flushed.get(r as usize) == Some(&true) && !ok(r)).collect();
            for r in lost {
                flushed[r as usize] = false;
                changed = true;
            }
        }
        if !changed {
            return flushed;
        }
    }
}

fn is_subnormal_f32(bits: u32) -> bool {
    bits & 0x7fff_ffff != 0 && bits & 0x7f80_0000 == 0
}

/// The bits of 1.0 in a float type.
pub(crate) fn float_one_bits(ty: Ty) -> u64 {
    match ty {
        Ty::Float => 0x3f80_0000,
        Ty::Double => 0x3ff0_0000_0000_0000,
        Ty::Half => 0x3c00,
        _ => 0x3f80,
    }
}

/// The bits of +infinity in a float type.
pub(crate) fn float_inf_bits(ty: Ty) -> u64 {
    match ty {
        Ty::Float => 0x7f80_0000,
        Ty::Double => 0x7ff0_0000_0000_0000,
        Ty::Half => 0x7c00,
        _ => 0x7f80,
    }
}

#[cfg(test)]
mod tests {
    use super::nan_blind_registers;

    /// The NaN-blind registers of a kernel, by name.
    fn blind_names(body: &str) -> Vec<String> {
        let src = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\
             .reg .pred %p<8>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .f32 %f<40>;\n\
             ld.param.u64 %rd1, [p];\nld.global.f32 %f1, [%rd1];\n{body}\nret;\n}}\n"
        );
        let module = ptx::parse(&src).expect("test PTX parses");
        let f = module.functions().next().expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        nan_blind_registers(f, b)
            .into_iter()
            .enumerate()
            .filter(|&(_, readers)| readers.blind_to(ptx::ast::Type::F32))
            .map(|(r, _)| ptx::reg_name(f, b, r as ptx::ast::RegId))
            // The products under test.
            .filter(|name| name.len() == 4 && name.starts_with("%f1"))
            .collect()
    }

    #[test]
    fn products_read_only_by_operations_with_canonical_results_or_by_comparisons_are_blind() {
        // %f10..%f19: each a product read by one instruction of another kind.
        let readers = [
            "div.rn.f32 %f20, %f10, %f1;",
            "rcp.approx.ftz.f32 %f21, %f11;",
            "sqrt.rn.f32 %f22, %f12;",
            "ex2.approx.ftz.f32 %f23, %f13;",
            "abs.f32 %f24, %f14;",
            "neg.f32 %f25, %f15;",
            "max.f32 %f26, %f16, %f1;",
            "setp.lt.f32 %p1, %f17, %f1;",
            "testp.notanumber.f32 %p2, %f18;",
            "lg2.approx.f32 %f27, %f19;",
        ];
        let mut body = String::new();
        for (k, r) in readers.iter().enumerate() {
            body.push_str(&format!("mul.f32 %f1{k}, %f1, %f1;\n{r}\n"));
        }
        let mut want: Vec<String> = (0..10).map(|k| format!("%f1{k}")).collect();
        want.sort();
        let mut got = blind_names(&body);
        got.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn copies_pass_blindness_back_from_their_destinations() {
        // %f10 -> mov -> selp -> %f22 read by add: blind all along; %f11 ->
        // mov -> %f23 stored: seen; %f12 selp'd with %f13 into %f24, which
        // is moved to an integer register: both seen.
        let body = "setp.ne.u64 %p1, %rd1, 0;
mul.f32 %f10, %f1, %f1;
mov.f32 %f21, %f10;
selp.f32 %f22, %f21, %f1, %p1;
add.f32 %f30, %f22, %f1;
mul.f32 %f11, %f1, %f1;
mov.f32 %f23, %f11;
st.global.f32 [%rd1], %f23;
mul.f32 %f12, %f1, %f1;
mul.f32 %f13, %f1, %f1;
selp.f32 %f24, %f12, %f13, %p1;
mov.b32 %r1, %f24;
st.global.u32 [%rd1], %r1;";
        assert_eq!(blind_names(body), vec!["%f10".to_string()]);
    }

    #[test]
    fn a_shuffled_value_is_blind_when_the_lanes_that_receive_it_are() {
        // %f10 moves to another lane and is added there: blind; %f11 moves
        // and is stored: seen.
        let body = "mul.f32 %f10, %f1, %f1;
mov.b32 %r1, %f10;
shfl.sync.bfly.b32 %r2|%p1, %r1, 16, 31, -1;
mov.b32 %f20, %r2;
add.f32 %f21, %f10, %f20;
mul.f32 %f11, %f1, %f1;
mov.b32 %r3, %f11;
shfl.sync.down.b32 %r4, %r3, 1, 31, -1;
st.global.u32 [%rd1], %r4;";
        assert_eq!(blind_names(body), vec!["%f10".to_string()]);
    }

    /// The registers of a kernel that never hold an f32 subnormal, by name.
    fn flushed_names(body: &str) -> Vec<String> {
        let src = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\
             .reg .pred %p<8>;\n.reg .b16 %rs<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .f32 %f<40>;\n.reg .f64 %fd<4>;\n\
             ld.param.u64 %rd1, [p];\nld.global.f32 %f1, [%rd1];\nld.global.b16 %rs1, [%rd1];\nld.global.f64 %fd1, [%rd1];\n{body}\nret;\n}}\n"
        );
        let module = ptx::parse(&src).expect("test PTX parses");
        let f = module.functions().next().expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        super::flushed_registers(f, b)
            .into_iter()
            .enumerate()
            .filter(|&(_, flushed)| flushed)
            .map(|(r, _)| ptx::reg_name(f, b, r as ptx::ast::RegId))
            // The registers the body writes.
            .filter(|name| body.contains(&format!(" {name},")) || body.contains(&format!(" {name}|")))
            .collect()
    }

    #[test]
    fn flushed_registers_hold_ftz_results_and_their_copies_only() {
        let body = "add.ftz.f32 %f10, %f1, %f1;
mov.b32 %r1, %f10;
shfl.sync.bfly.b32 %r2|%p1, %r1, 16, 31, -1;
mov.b32 %f11, %r2;
fma.rn.ftz.f32 %f12, %f11, %f10, %f1;
mov.f32 %f13, 0f00000000;
setp.ne.u64 %p2, %rd1, 0;
selp.f32 %f14, %f12, %f13, %p2;
add.f32 %f20, %f1, %f1;
mov.f32 %f21, %f10;
@%p2 mov.f32 %f21, %f20;
mov.f32 %f22, 0f00000001;
selp.f32 %f23, %f12, %f22, %p2;
ld.global.f32 %f24, [%rd1];
cvt.ftz.f32.f16 %f25, %rs1;
cvt.f32.bf16 %f26, %rs1;
cvt.rn.f32.f64 %f27, %fd1;
cvt.rn.f32.s32 %f28, %r1;
cvt.rz.f32.u64 %f29, %rd1;
cvt.rn.f32.s16 %f30, %rs1;";
        let mut got = flushed_names(body);
        got.sort();
        // Not: a result without .ftz (%f20), a register one of whose writes
        // copies it (%f21), a subnormal constant (%f22) and its selection
        // (%f23), loads (%f24), conversions of bf16 values (%f26: bf16 has
        // f32's exponent range) and of f64 ones (%f27).
        let mut want: Vec<String> =
            ["%f10", "%r1", "%r2", "%f11", "%f12", "%f13", "%f14", "%f25", "%f28", "%f29", "%f30"].iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn a_device_functions_register_parameters_are_not_flushed_and_its_register_results_not_blind() {
        let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
                   .func (.reg .f32 r) f(.reg .f32 a)\n{\n.reg .f32 %f<4>;\n\
                   add.ftz.f32 %f1, a, a;\nmul.ftz.f32 r, %f1, %f1;\nret;\n}\n";
        let module = ptx::parse(src).expect("test PTX parses");
        let f = module.functions().next().expect("a function");
        let b = f.body.as_ref().expect("a body");
        let named = |flags: Vec<bool>| -> Vec<String> {
            flags.into_iter().enumerate().filter(|&(_, x)| x).map(|(r, _)| ptx::reg_name(f, b, r as ptx::ast::RegId)).collect()
        };
        // `a` holds what the caller passed (a subnormal, maybe); `r` and
        // `%f1` are `.ftz` results.
        let mut flushed = named(super::flushed_registers(f, b));
        flushed.sort();
        assert_eq!(flushed, ["%f1", "r"]);
        // The caller reads `r`'s bits; `%f1` only feeds a multiplication.
        let blind = named(nan_blind_registers(f, b).into_iter().map(|x| x.blind_to(ptx::ast::Type::F32)).collect());
        assert!(blind.contains(&"%f1".to_string()) && !blind.contains(&"r".to_string()), "{blind:?}");
    }

    #[test]
    fn products_whose_bits_or_sign_a_reader_sees_are_not_blind() {
        let readers = [
            "mov.b32 %r1, %f10;\nst.global.u32 [%rd1], %r1;",
            "selp.f32 %f20, %f11, %f1, %p1;\nst.global.f32 [%rd1], %f20;",
            "copysign.f32 %f21, %f12, %f1;",
            "max.xorsign.abs.f32 %f22, %f13, %f1;",
            "st.global.f32 [%rd1], %f14;",
            "cvt.f64.f32 %rd2, %f15;",
            "cvt.rni.f32.f32 %f23, %f16;",
        ];
        let mut body = String::from("setp.ne.u64 %p1, %rd1, 0;\n");
        for (k, r) in readers.iter().enumerate() {
            body.push_str(&format!("mul.f32 %f1{k}, %f1, %f1;\n{r}\n"));
        }
        assert_eq!(blind_names(&body), Vec::<String>::new());
    }
}
