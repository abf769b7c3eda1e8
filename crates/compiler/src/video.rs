//! Video instructions, exactly as the PTX ISA's pseudocode defines them
//! ("Scalar Video Instructions" and "SIMD Video Instructions").
//!
//! Scalar forms (`vadd`, `vsub`, `vabsdiff`, `vmin`, `vmax`, `vshl`,
//! `vshr`, `vset`): each source is a word, or a byte or halfword picked by
//! its selector, sign- or zero-extended by its type to a 33-bit value; the
//! operation gives a 34-bit value (here an `i64`, `i128` for shifts), which
//! `.sat` clamps to the destination's range (the merged byte or halfword's
//! when the destination has a selector); the result, as the ISA's `.s33`,
//! is then combined with `c` by `.add`/`.min`/`.max` (`c` extended by the
//! destination type's sign) or merged into `c` at the destination's
//! selector, and its low 32 bits written. `vmad` follows its own
//! pseudocode (negations, `.po`, `.shr7`/`.shr15`, 32-bit saturation).
//!
//! SIMD forms (`vadd2` ... `vset4`): each lane's element is picked from
//! the eight bytes (four halfwords) of `{b, a}` by the selectors (defaults
//! `.b3210`/`.h10` for `a` and `.b7654`/`.h32` for `b`), extended by its
//! operand's type; the results are clamped with `.sat`, then either added
//! to `c` for the lanes of the destination's mask (`.add`) or merged: the
//! masked lanes take the result, the others `c`'s element.
//!
//! Everything is plain integer IR on values of either mode (thread or
//! warp), so every target compiles it.

use crate::ir::{Ty, V};
use crate::lower::{FnLower, Res};
use ptx::ast::*;

/// The secondary operation of a scalar video instruction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SecOp {
    None,
    Add,
    Min,
    Max,
}

impl<'c, 'm> FnLower<'c, 'm> {
    pub fn video(&mut self, inst: &Instruction) -> Res<()> {
        use Opcode::*;
        match inst.op {
            Vadd | Vsub | Vabsdiff | Vmin | Vmax | Vshl | Vshr | Vset => self.video_scalar(inst),
            Vmad => self.vmad(inst),
            Vadd2 | Vsub2 | Vavrg2 | Vabsdiff2 | Vmin2 | Vmax2 | Vset2 => self.video_simd(inst, 2),
            Vadd4 | Vsub4 | Vavrg4 | Vabsdiff4 | Vmin4 | Vmax4 | Vset4 => self.video_simd(inst, 4),
            _ => self.unsupported(format!("instruction `{}`", self.describe(inst))),
        }
    }

    /// The `.u32`/`.s32` types of a video instruction, in order; `None`
    /// when one is not `.u32`/`.s32`.
    fn video_types(&self, inst: &Instruction) -> Option<Vec<bool>> {
        inst.types(self.b)
            .map(|t| match t {
                Type::U32 => Some(false),
                Type::S32 => Some(true),
                _ => None,
            })
            .collect()
    }

    /// A register or immediate source and its selector.
    fn video_operand(&mut self, op: &Operand) -> Res<(V, Selector, bool)> {
        match *op {
            Operand::Video { reg, neg, sel } => {
                let v = self.get(&Operand::Reg(reg), Ty::I32)?;
                Ok((v, sel, neg))
            }
            Operand::Reg(_) | Operand::Imm(_) => Ok((self.get(op, Ty::I32)?, Selector::NONE, false)),
            _ => self.invalid("a video instruction's operands are registers, optionally with a selector"),
        }
    }

    /// `partSelectSignExtend`: the word, or the selected byte or halfword,
    /// extended to `to` by the operand's sign.
    fn part_select(&mut self, x: &V, sel: Selector, signed: bool, to: Ty) -> Res<V> {
        if sel.is_none() {
            return Ok(self.extend(x, to, signed));
        }
        let (unit, max) = match sel.unit {
            SelUnit::Byte => (8, 3),
            SelUnit::Half => (16, 1),
        };
        if sel.len != 1 || sel.lanes[0] > max {
            return self.invalid("a scalar video operand's selector is one of .b0, .b1, .b2, .b3, .h0, .h1");
        }
        let k = sel.lanes[0] as u32;
        let sh = self.bin("lshr", x, &V::int(Ty::I32, (k * unit) as i128));
        let part = self.trunc(&sh, Ty::int(unit));
        Ok(self.extend(&part, to, signed))
    }

    fn extend(&mut self, v: &V, to: Ty, signed: bool) -> V {
        if signed {
            self.sext(v, to)
        } else {
            self.zext(v, to)
        }
    }

    /// Clamps `v` (of type `ty`) to `[lo, hi]`, signed.
    fn clamp(&mut self, v: &V, lo: i128, hi: i128) -> V {
        let ty = v.ty;
        let s = ty.suffix();
        let v = self.call2(&format!("llvm.smax.{s}"), v, &V::int(ty, lo));
        self.call2(&format!("llvm.smin.{s}"), &v, &V::int(ty, hi))
    }

    fn video_scalar(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let op = inst.op;
        let args: Vec<Operand> = b.args(inst).to_vec();
        let Some(types) = self.video_types(inst) else {
            return self.invalid(format!("`{}`: video instructions take .u32 and .s32 types", self.describe(inst)));
        };
        // vset has no destination type: its result is unsigned.
        let (dsigned, asigned, bsigned) = match (op, types.as_slice()) {
            (Opcode::Vset, [a, bb]) => (false, *a, *bb),
            (Opcode::Vshl | Opcode::Vshr, [d, a, false]) => (*d, *a, false),
            (Opcode::Vshl | Opcode::Vshr, [_, _, true]) => {
                return self.invalid(format!("`{}`: the shift amount's type is .u32", self.describe(inst)))
            }
            (Opcode::Vset, _) => return self.invalid(format!("`{}` takes two types (.atype.btype)", self.describe(inst))),
            (_, [d, a, bb]) => (*d, *a, *bb),
            _ => return self.invalid(format!("`{}` takes three types (.dtype.atype.btype)", self.describe(inst))),
        };
        let sat = inst.has(b, Flag::Sat);
        if sat && op == Opcode::Vset {
            return self.invalid("`vset` has no `.sat`");
        }
        let flags: Vec<Flag> = inst.flags(b).collect();
        let secops: Vec<SecOp> = flags
            .iter()
            .filter_map(|f| match f {
                Flag::AddOp => Some(SecOp::Add),
                Flag::MinOp => Some(SecOp::Min),
                Flag::MaxOp => Some(SecOp::Max),
                _ => None,
            })
            .collect();
        if secops.len() > 1 {
            return self.invalid(format!("`{}`: at most one secondary operation", self.describe(inst)));
        }
        let secop = secops.first().copied().unwrap_or(SecOp::None);
        let (dreg, dsel) = match args.first() {
            Some(&Operand::Reg(r)) => (r, Selector::NONE),
            Some(&Operand::Video { reg, neg: false, sel }) => (reg, sel),
            _ => return self.invalid("a video instruction's destination is a register, optionally with a selector"),
        };
        let merge = !dsel.is_none();
        let want = if merge || secop != SecOp::None { 4 } else { 3 };
        if args.len() != want {
            return self.invalid(format!(
                "`{}` takes {want} operands{}",
                self.describe(inst),
                if merge { " (a destination selector merges into `c`)" } else { "" }
            ));
        }
        if merge && secop != SecOp::None {
            return self.invalid(format!("`{}`: a destination selector and a secondary operation exclude each other", self.describe(inst)));
        }
        let (merge_bits, merge_shift) = if merge {
            let (unit, max) = match dsel.unit {
                SelUnit::Byte => (8u32, 3u8),
                SelUnit::Half => (16, 1),
            };
            if dsel.len != 1 || dsel.lanes[0] > max {
                return self.invalid("a scalar video destination's selector is one of .b0, .b1, .b2, .b3, .h0, .h1");
            }
            (unit, unit * dsel.lanes[0] as u32)
        } else {
            (32, 0)
        };
        let (a, asel, an) = self.video_operand(&args[1])?;
        let (bv, bsel, bn) = self.video_operand(&args[2])?;
        if an || bn {
            return self.invalid(format!("`{}`: only `vmad` negates operands", self.describe(inst)));
        }
        let ta = self.part_select(&a, asel, asigned, Ty::I64)?;
        let tb = self.part_select(&bv, bsel, bsigned, Ty::I64)?;
        let i64t = Ty::I64;
        let mut tmp = match op {
            Opcode::Vadd => self.bin("add", &ta, &tb),
            Opcode::Vsub => self.bin("sub", &ta, &tb),
            Opcode::Vabsdiff => {
                let d = self.bin("sub", &ta, &tb);
                let n = self.bin("sub", &V::int(i64t, 0), &d);
                let neg = self.icmp("slt", &d, &V::int(i64t, 0));
                self.select(&neg, &n, &d)
            }
            Opcode::Vmin => self.call2("llvm.smin.i64", &ta, &tb),
            Opcode::Vmax => self.call2("llvm.smax.i64", &ta, &tb),
            Opcode::Vset => {
                let Some(cmp) = inst.cmp(b) else {
                    return self.invalid("`vset` needs a comparison (.eq, .ne, .lt, .le, .gt, .ge)");
                };
                let pred = match cmp {
                    CmpOp::Eq => "eq",
                    CmpOp::Ne => "ne",
                    CmpOp::Lt => "slt",
                    CmpOp::Le => "sle",
                    CmpOp::Gt => "sgt",
                    CmpOp::Ge => "sge",
                    other => return self.invalid(format!("`vset` compares with .eq, .ne, .lt, .le, .gt or .ge, not .{other}")),
                };
                let c = self.icmp(pred, &ta, &tb);
                self.zext(&c, i64t)
            }
            _ => {
                // vshl, vshr: the amount is unsigned; `.clamp` caps it at
                // 32, `.wrap` keeps its low five bits.
                let clamp = flags.contains(&Flag::Clamp);
                let wrap = flags.contains(&Flag::Wrap);
                if clamp == wrap {
                    return self.invalid(format!("`{}` needs one of .clamp and .wrap", self.describe(inst)));
                }
                let n = if clamp { self.call2("llvm.umin.i64", &tb, &V::int(i64t, 32)) } else { self.bin("and", &tb, &V::int(i64t, 31)) };
                let wide = self.sext(&ta, Ty::I128);
                let n = self.zext(&n, Ty::I128);
                let r = if op == Opcode::Vshl {
                    self.bin("shl", &wide, &n)
                } else {
                    // Signed values shift in their sign, unsigned ones zeros
                    // (both are their exact value in 128 bits).
                    self.bin("ashr", &wide, &n)
                };
                // Saturation sees the exact value; afterwards only its low
                // 33 bits matter.
                let r = if sat {
                    let (lo, hi) = sat_range(dsigned, merge_bits);
                    self.clamp(&r, lo, hi)
                } else {
                    r
                };
                let r = self.trunc(&r, i64t);
                return self.video_finish(&args, dreg, r, dsigned, secop, merge, merge_bits, merge_shift);
            }
        };
        if sat {
            let (lo, hi) = sat_range(dsigned, merge_bits);
            tmp = self.clamp(&tmp, lo, hi);
        }
        self.video_finish(&args, dreg, tmp, dsigned, secop, merge, merge_bits, merge_shift)
    }

    /// The secondary operation or merge of a scalar video instruction, on
    /// the (saturated) intermediate `tmp` (an `i64`), and the write.
    #[allow(clippy::too_many_arguments)]
    fn video_finish(
        &mut self,
        args: &[Operand],
        dreg: RegId,
        tmp: V,
        dsigned: bool,
        secop: SecOp,
        merge: bool,
        merge_bits: u32,
        merge_shift: u32,
    ) -> Res<()> {
        let i64t = Ty::I64;
        // The intermediate is a `.s33` value from here on.
        let sh = self.bin("shl", &tmp, &V::int(i64t, 31));
        let tmp = self.bin("ashr", &sh, &V::int(i64t, 31));
        let d = if merge {
            let c = self.get(&args[3], Ty::I32)?;
            let t32 = self.trunc(&tmp, Ty::I32);
            let field = ((1u64 << merge_bits) - 1) as u32;
            let t = self.bin("and", &t32, &V::int(Ty::I32, field as i128));
            let t = self.bin("shl", &t, &V::int(Ty::I32, merge_shift as i128));
            let keep = !(field << merge_shift);
            let c = self.bin("and", &c, &V::int(Ty::I32, keep as i128));
            self.bin("or", &t, &c)
        } else if secop != SecOp::None {
            let c = self.get(&args[3], Ty::I32)?;
            let c = self.extend(&c, i64t, dsigned);
            let r = match secop {
                SecOp::Add => self.bin("add", &tmp, &c),
                SecOp::Min => self.call2("llvm.smin.i64", &tmp, &c),
                _ => self.call2("llvm.smax.i64", &tmp, &c),
            };
            self.trunc(&r, Ty::I32)
        } else {
            self.trunc(&tmp, Ty::I32)
        };
        self.set(&Operand::Reg(dreg), d)
    }

    /// `vmad.dtype.atype.btype{.po}{.sat}{.shr7,.shr15} d, {-}a, {-}b, {-}c`.
    fn vmad(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args: Vec<Operand> = b.args(inst).to_vec();
        let Some(types) = self.video_types(inst) else {
            return self.invalid(format!("`{}`: video instructions take .u32 and .s32 types", self.describe(inst)));
        };
        let [_, asigned, bsigned] = types.as_slice() else {
            return self.invalid(format!("`{}` takes three types (.dtype.atype.btype)", self.describe(inst)));
        };
        let (asigned, bsigned) = (*asigned, *bsigned);
        if args.len() != 4 {
            return self.invalid(format!("`{}` takes 4 operands", self.describe(inst)));
        }
        let dreg = match args[0] {
            Operand::Reg(r) => r,
            _ => return self.invalid("`vmad`'s destination is a register"),
        };
        let po = inst.has(b, Flag::Po);
        let sat = inst.has(b, Flag::Sat);
        let shift = match (inst.has(b, Flag::Shr7), inst.has(b, Flag::Shr15)) {
            (false, false) => 0,
            (true, false) => 7,
            (false, true) => 15,
            _ => return self.invalid("`vmad` takes one of .shr7 and .shr15"),
        };
        let (a, asel, an) = self.video_operand(&args[1])?;
        let (bv, bsel, bn) = self.video_operand(&args[2])?;
        let (c, csel, cn) = self.video_operand(&args[3])?;
        if !csel.is_none() {
            return self.invalid("`vmad`'s `c` has no selector");
        }
        let prod_neg = an ^ bn;
        if po && (an || bn || cn) {
            return self.invalid("`vmad.po` negates no operand");
        }
        if prod_neg && cn {
            return self.invalid("`vmad` negates either the product or `c`, not both");
        }
        let signed_final = asigned || bsigned || prod_neg || cn;
        let t = Ty::I128;
        let ta = self.part_select(&a, asel, asigned, t)?;
        let tb = self.part_select(&bv, bsel, bsigned, t)?;
        let mut tmp = self.bin("mul", &ta, &tb);
        let mut c = c;
        let lsb = if po {
            1
        } else if prod_neg {
            tmp = self.bin("xor", &tmp, &V::int(t, -1));
            1
        } else if cn {
            c = self.bin("xor", &c, &V::int(Ty::I32, -1));
            1
        } else {
            0
        };
        let c128 = self.extend(&c, t, signed_final);
        let s = self.bin("add", &tmp, &c128);
        let s = self.bin("add", &s, &V::int(t, lsb));
        let s = if shift > 0 { self.bin(if signed_final { "ashr" } else { "lshr" }, &s, &V::int(t, shift)) } else { s };
        // `result` is the low 64 bits.
        let r = self.trunc(&s, Ty::I64);
        let r = if sat {
            if signed_final {
                self.clamp(&r, i32::MIN as i128, i32::MAX as i128)
            } else {
                self.call2("llvm.umin.i64", &r, &V::int(Ty::I64, u32::MAX as i128))
            }
        } else {
            r
        };
        let d = self.trunc(&r, Ty::I32);
        self.set(&Operand::Reg(dreg), d)
    }

    /// `vop2`/`vop4` and `vset2`/`vset4` with `lanes` elements.
    fn video_simd(&mut self, inst: &Instruction, lanes: u32) -> Res<()> {
        use Opcode::*;
        let b = self.b;
        let op = inst.op;
        let args: Vec<Operand> = b.args(inst).to_vec();
        let is_set = matches!(op, Vset2 | Vset4);
        let Some(types) = self.video_types(inst) else {
            return self.invalid(format!("`{}`: video instructions take .u32 and .s32 types", self.describe(inst)));
        };
        let (dsigned, asigned, bsigned) = match (is_set, types.as_slice()) {
            (true, [a, bb]) => (false, *a, *bb),
            (false, [d, a, bb]) => (*d, *a, *bb),
            (true, _) => return self.invalid(format!("`{}` takes two types (.atype.btype)", self.describe(inst))),
            (false, _) => return self.invalid(format!("`{}` takes three types (.dtype.atype.btype)", self.describe(inst))),
        };
        let sat = inst.has(b, Flag::Sat);
        let add = inst.has(b, Flag::AddOp);
        if inst.has(b, Flag::MinOp) || inst.has(b, Flag::MaxOp) {
            return self.invalid(format!("`{}`: SIMD video instructions accumulate with .add only", self.describe(inst)));
        }
        if sat && (add || is_set) {
            return self.invalid(format!("`{}`: .sat is not allowed here", self.describe(inst)));
        }
        if args.len() != 4 {
            return self.invalid(format!("`{}` takes 4 operands", self.describe(inst)));
        }
        let width = 32 / lanes;
        let unit = if lanes == 2 { SelUnit::Half } else { SelUnit::Byte };
        let (dreg, mask) = match args[0] {
            Operand::Reg(r) => (r, (1u32 << lanes) - 1),
            Operand::Video { reg, neg: false, sel }
                if sel.unit == unit && sel.len >= 1 && sel.lanes().iter().all(|&l| (l as u32) < lanes) =>
            {
                (reg, sel.lanes().iter().fold(0u32, |m, &l| m | 1 << l))
            }
            _ => {
                return self.invalid(format!(
                    "`{}`: the destination mask is {}",
                    self.describe(inst),
                    if lanes == 2 { "one of .h0, .h1, .h10" } else { "bytes such as .b0, .b10, .b3210" }
                ))
            }
        };
        let (a, asel, an) = self.video_operand(&args[1])?;
        let (bv, bsel, bn) = self.video_operand(&args[2])?;
        let (c, csel, cn) = self.video_operand(&args[3])?;
        if an || bn || cn || !csel.is_none() {
            return self.invalid(format!("`{}`: operands are not negated and `c` has no selector", self.describe(inst)));
        }
        // Lane i's source element, from the selectors (written from the
        // highest lane down).
        let default_a: Vec<u8> = (0..lanes as u8).rev().collect();
        let default_b: Vec<u8> = (lanes as u8..2 * lanes as u8).rev().collect();
        let pick = |sel: Selector, default: &[u8]| -> Option<Vec<u8>> {
            let digits: Vec<u8> = if sel.is_none() {
                default.to_vec()
            } else if sel.unit == unit && sel.len as u32 == lanes {
                sel.lanes().to_vec()
            } else {
                return None;
            };
            Some(digits.into_iter().rev().collect())
        };
        let (Some(asrc), Some(bsrc)) = (pick(asel, &default_a), pick(bsel, &default_b)) else {
            return self.invalid(format!(
                "`{}`: source selectors are {}",
                self.describe(inst),
                if lanes == 2 { ".hxy with x, y in 0..3" } else { ".bxyzw with x, y, z, w in 0..7" }
            ));
        };
        // The eight bytes (four halfwords) of {b, a}.
        let a64 = self.zext(&a, Ty::I64);
        let b64 = self.zext(&bv, Ty::I64);
        let bhi = self.bin("shl", &b64, &V::int(Ty::I64, 32));
        let pool = self.bin("or", &a64, &bhi);
        let et = Ty::int(width);
        let i32t = Ty::I32;
        let mut results = Vec::new();
        for i in 0..lanes as usize {
            let mut elems = Vec::new();
            for (src, signed) in [(asrc[i], asigned), (bsrc[i], bsigned)] {
                let sh = self.bin("lshr", &pool, &V::int(Ty::I64, (src as u32 * width) as i128));
                let e = self.trunc(&sh, et);
                elems.push(self.extend(&e, i32t, signed));
            }
            let (va, vb) = (&elems[0], &elems[1]);
            let t = match op {
                Vadd2 | Vadd4 => self.bin("add", va, vb),
                Vsub2 | Vsub4 => self.bin("sub", va, vb),
                Vavrg2 | Vavrg4 => {
                    // (s + 1) >> 1 when s >= 0, else s >> 1 (arithmetic).
                    let s = self.bin("add", va, vb);
                    let up = self.bin("add", &s, &V::int(i32t, 1));
                    let nonneg = self.icmp("sge", &s, &V::int(i32t, 0));
                    let s = self.select(&nonneg, &up, &s);
                    self.bin("ashr", &s, &V::int(i32t, 1))
                }
                Vabsdiff2 | Vabsdiff4 => {
                    let d = self.bin("sub", va, vb);
                    let n = self.bin("sub", &V::int(i32t, 0), &d);
                    let neg = self.icmp("slt", &d, &V::int(i32t, 0));
                    self.select(&neg, &n, &d)
                }
                Vmin2 | Vmin4 => self.call2("llvm.smin.i32", va, vb),
                Vmax2 | Vmax4 => self.call2("llvm.smax.i32", va, vb),
                _ => {
                    let Some(cmp) = inst.cmp(b) else {
                        return self.invalid(format!("`{}` needs a comparison (.eq, .ne, .lt, .le, .gt, .ge)", self.describe(inst)));
                    };
                    let pred = match cmp {
                        CmpOp::Eq => "eq",
                        CmpOp::Ne => "ne",
                        CmpOp::Lt => "slt",
                        CmpOp::Le => "sle",
                        CmpOp::Gt => "sgt",
                        CmpOp::Ge => "sge",
                        other => return self.invalid(format!("`{}` compares with .eq, .ne, .lt, .le, .gt or .ge, not .{other}", op)),
                    };
                    let c = self.icmp(pred, va, vb);
                    self.zext(&c, i32t)
                }
            };
            let t = if sat {
                let (lo, hi) = sat_range(dsigned, width);
                self.clamp(&t, lo, hi)
            } else {
                t
            };
            results.push(t);
        }
        let mut d = if add { c.clone() } else { V::int(i32t, 0) };
        let field = (1u64 << width) - 1;
        for (i, t) in results.iter().enumerate() {
            let masked = mask & (1 << i) != 0;
            if add {
                if masked {
                    d = self.bin("add", &d, t);
                }
            } else {
                let shift = V::int(i32t, (i as u32 * width) as i128);
                let part = if masked {
                    let e = self.bin("and", t, &V::int(i32t, field as i128));
                    self.bin("shl", &e, &shift)
                } else {
                    self.bin("and", &c, &V::int(i32t, (field << (i as u32 * width)) as i128))
                };
                d = self.bin("or", &d, &part);
            }
        }
        self.set(&Operand::Reg(dreg), d)
    }
}

/// The range `.sat` clamps to: a signed or unsigned `bits`-bit integer.
fn sat_range(signed: bool, bits: u32) -> (i128, i128) {
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}
