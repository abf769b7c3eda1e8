//! Lane-affine registers of warp mode.
//!
//! Most addresses a kernel computes are a warp-uniform base plus a fixed
//! multiple of the lane number: `base + 4 * tid.x`, a grid-stride index
//! advanced by a uniform step. Warp mode loads such addresses as one
//! vector, but finding that out from the lanes' values costs some thirty
//! vector instructions per access. This analysis finds, when the kernel is
//! compiled, the registers every write of which keeps that form and the
//! multiple (the stride); the lowering then keeps one run-time bit per such
//! register saying whether the form holds in the current warp (it need not:
//! a write by only some of the lanes, an index that wraps, a block whose
//! rows are not whole warps), and an access through a register whose bit
//! is set knows the lanes' shape without looking at them.
//!
//! The bit's meaning, which every write keeps: in each half warp, for the
//! half's first lane (0 or 16) and every lane of it still live, the
//! register's value is the first lane's value plus the stride times the
//! lane's distance from it, in the register's width. Blocks whose rows are
//! half warps (16 threads wide) make `%tid.x` affine only that far; where
//! the rows are whole warps or the block has one dimension, lane 16 also
//! follows lane 0 (the lowering knows which per warp).

use crate::lower::reg_ty;
use ptx::ast::*;
use std::collections::HashMap;

/// The stride of each register (indexed by register; in the register's
/// width, read as signed), or `None` for registers some write leaves
/// without one. Registers `uniform` marks (`crate::uniform`) have stride
/// 0 whatever writes them.
pub fn strides(f: &Function, b: &Body, uniform: &[bool]) -> Vec<Option<i64>> {
    let consts = crate::warp::constant_registers(b);
    let n = b.regs.len();
    let is_uniform = |r: usize| uniform.get(r).copied().unwrap_or(false);
    let mut state: Vec<Lattice> = (0..n).map(|r| if is_uniform(r) { Lattice::Stride(0) } else { Lattice::Unknown }).collect();
    // Optimistic iteration: a register's stride is the one all its writes
    // agree on, assuming what is known so far of their operands.
    loop {
        let mut changed = false;
        for s in &b.statements {
            let Statement::Instruction(inst) = s else { continue };
            let args = b.args(inst);
            let mut defs = Vec::new();
            b.defs(inst, &mut defs);
            for r in defs {
                if is_uniform(r as usize) {
                    continue;
                }
                let write = match args.first() {
                    Some(&Operand::Reg(d)) if d == r => transfer(f, b, inst, &state, &consts),
                    _ => Lattice::Varying,
                };
                let Some(slot) = state.get_mut(r as usize) else { continue };
                let merged = slot.merge(write);
                if merged != *slot {
                    *slot = merged;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    state
        .iter()
        .enumerate()
        .map(|(r, s)| match (s, register_bits(f, b, r as RegId)) {
            (Lattice::Stride(s), Some(_)) => Some(*s),
            _ => None,
        })
        .collect()
}

/// What is known of a register's writes so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lattice {
    /// No write seen yet (or only writes whose operands are not known yet).
    Unknown,
    Stride(i64),
    Varying,
}

impl Lattice {
    fn merge(self, other: Lattice) -> Lattice {
        match (self, other) {
            (Lattice::Unknown, x) | (x, Lattice::Unknown) => x,
            (Lattice::Stride(a), Lattice::Stride(b)) if a == b => Lattice::Stride(a),
            _ => Lattice::Varying,
        }
    }
}

/// The width of an integer register of 32 or 64 bits, the ones tracked.
pub fn register_bits(f: &Function, b: &Body, r: RegId) -> Option<u32> {
    let reg = b.regs.get(r as usize)?;
    match reg_ty(f.var(reg.var).ty) {
        crate::ir::Ty::I32 => Some(32),
        crate::ir::Ty::I64 => Some(64),
        _ => None,
    }
}

/// A stride in `bits`-bit arithmetic, read as signed.
pub fn normalize(s: i64, bits: u32) -> i64 {
    if bits == 32 {
        s as i32 as i64
    } else {
        s
    }
}

/// The instruction forms that keep the affine form, and how a source
/// operand enters them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The result is the operands' values combined by the operation in the
    /// result's width (`mov`, `add`, `sub`, `mul.lo`, `mad.lo`, `shl` by an
    /// immediate, `cvta`, truncating or same-width `cvt`, `ld.param`).
    Plain,
    /// 32-bit operands widened to 64 bits first (`cvt` to a wider type,
    /// `mul.wide`, the product of `mad.wide`), sign-extended when `signed`:
    /// the form survives only when no lane's value wraps around.
    Widened { signed: bool },
    /// A 32-bit `and` with an immediate `mask` (`tid & 31`, `(tid << 2) &
    /// 124`): for an operand of stride `2^j`, the mask's bits from `j` up
    /// must be one run of at least four bits (`field`); the lanes then keep
    /// the stride while their field does not wrap, which the lowering
    /// checks. The mask's bits below `j` keep what every lane of a half
    /// shares.
    Masked { mask: u32 },
    /// A 32-bit `shr` by an immediate `shift` (`tid >> 5`), arithmetic when
    /// `signed`: a stride divisible by `2^shift` is divided (the lanes'
    /// values must not wrap); a stride small enough that the lanes of a
    /// half warp share every bit from `shift` up gives stride 0 (their low
    /// bits must not carry into bit `shift`) (`shifted_stride`).
    Shifted { shift: u32, signed: bool },
    /// An `xor` of a lane-varying operand of positive stride (at most
    /// `MAX_FLIPPED_STRIDE`) with a value every lane of a half shares
    /// (`i ^ j` of a bitonic step): the lanes keep the stride while the
    /// shared value has no bit set where the lanes' values differ, which
    /// the lowering checks.
    Flipped,
}

/// The largest stride an `xor` keeps (`Form::Flipped`): 31 strides stay
/// below half the range of a 32-bit register, so the lanes of a warp whose
/// values wrap around differ in the top bit.
pub const MAX_FLIPPED_STRIDE: i64 = 1 << 24;

/// For `x & mask` with `x` of lane stride `stride`: the lowest bit `j` of
/// the stride (a positive power of two) and the width `w` of the run of
/// ones the mask has from bit `j` up, when that run exists and holds at
/// least a half warp's 16 lanes. The result then has the same stride while
/// every lane's field `(x >> j) & (2^w - 1)` stays within `[0, 2^w)` from
/// its half's first lane on.
pub fn field(mask: u32, stride: i64) -> Option<(u32, u32)> {
    if stride <= 0 || stride.count_ones() != 1 || stride >= 1 << 32 {
        return None;
    }
    let j = stride.trailing_zeros();
    let hi = u64::from(mask) >> j;
    let w = hi.trailing_ones();
    (w >= 4 && hi == (1u64 << w) - 1).then_some((j, w))
}

/// For `x >> shift` with `x` of lane stride `stride` (positive): the
/// result's stride. A stride divisible by `2^shift` is divided exactly
/// (when no lane's value wraps); one with `15 * stride < 2^shift` leaves
/// every lane of a half warp the same high bits (when the first lane's low
/// bits leave room for the others' increments): stride 0.
pub fn shifted_stride(stride: i64, shift: u32) -> Option<i64> {
    if stride <= 0 || !(1..32).contains(&shift) {
        return None;
    }
    let unit = 1i64 << shift;
    if stride % unit == 0 {
        Some(stride / unit)
    } else if 15 * stride < unit {
        Some(0)
    } else {
        None
    }
}

/// How an instruction writing its first operand, a 32- or 64-bit register,
/// keeps the affine form: the form and which operands are its lane-varying
/// inputs, or `None` when it does not keep it.
pub fn form(f: &Function, b: &Body, inst: &Instruction) -> Option<Form> {
    let args = b.args(inst);
    let dest = match args.first() {
        Some(&Operand::Reg(r)) => r,
        _ => return None,
    };
    let dbits = register_bits(f, b, dest)?;
    let t = inst.ty(b)?;
    let int = t.is_integer() && !t.is_float();
    let plain_ok = |k: usize| operand_width_ok(f, b, args.get(k), dbits);
    match inst.op {
        Opcode::Mov if args.len() == 2 && int && t.bits() == dbits => plain_ok(1).then_some(Form::Plain),
        Opcode::Add | Opcode::Sub if args.len() == 3 && int && t.bits() == dbits && !inst.has(b, Flag::Sat) && !inst.has(b, Flag::Cc) => {
            (plain_ok(1) && plain_ok(2)).then_some(Form::Plain)
        }
        Opcode::Mul | Opcode::Mad if int && inst.has(b, Flag::LoHalf) && t.bits() == dbits => {
            let n = if inst.op == Opcode::Mul { 3 } else { 4 };
            (args.len() == n && (1..n).all(plain_ok)).then_some(Form::Plain)
        }
        Opcode::Mul | Opcode::Mad if int && inst.has(b, Flag::Wide) && t.bits() == 32 && dbits == 64 => {
            let n = if inst.op == Opcode::Mul { 3 } else { 4 };
            let ok = args.len() == n
                && operand_width_ok(f, b, args.get(1), 32)
                && operand_width_ok(f, b, args.get(2), 32)
                && (n == 3 || operand_width_ok(f, b, args.get(3), 64));
            ok.then_some(Form::Widened { signed: t.is_signed() })
        }
        Opcode::Shl if args.len() == 3 && t.bits() == dbits && matches!(args[2], Operand::Imm(k) if (0..dbits as i64).contains(&k)) => {
            plain_ok(1).then_some(Form::Plain)
        }
        Opcode::Cvta if args.len() == 2 && t.bits() == dbits => operand_width_ok(f, b, args.get(1), 64).then_some(Form::Plain),
        Opcode::And if args.len() == 3 && dbits == 32 && int && t.bits() == 32 => match args[2] {
            Operand::Imm(m) => plain_ok(1).then_some(Form::Masked { mask: m as u32 }),
            _ => None,
        },
        Opcode::Xor if args.len() == 3 && int && t.bits() == dbits => (plain_ok(1) && plain_ok(2)).then_some(Form::Flipped),
        Opcode::Shr if args.len() == 3 && dbits == 32 && t.bits() == 32 && int => match args[2] {
            Operand::Imm(k) if (1..32).contains(&k) => plain_ok(1).then_some(Form::Shifted { shift: k as u32, signed: t.is_signed() }),
            _ => None,
        },
        Opcode::Cvt if args.len() == 2 && inst.rounding(b).is_none() && !inst.has(b, Flag::Sat) => {
            let mut types = inst.types(b);
            let (to, from) = (types.next()?, types.next()?);
            if !(to.is_integer() && from.is_integer()) || to.bits() != dbits || !matches!(from.bits(), 32 | 64) {
                return None;
            }
            if !operand_width_ok(f, b, args.get(1), from.bits()) {
                return None;
            }
            if from.bits() < to.bits() {
                Some(Form::Widened { signed: from.is_signed() })
            } else {
                Some(Form::Plain)
            }
        }
        Opcode::Ld if args.len() == 2 && t.bits() == dbits && inst.space(b) == Some(StateSpace::Param) => {
            // A kernel parameter: the same value in every lane.
            match args[1].address() {
                Some((AddrBase::Var(v), _)) if f.params.contains(&v) => Some(Form::Plain),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether a source operand can enter a `bits`-wide affine computation: an
/// immediate, a uniform special register, a symbol's address, a shared
/// variable's or kernel parameter's address, or a register of that width.
fn operand_width_ok(f: &Function, b: &Body, op: Option<&Operand>, bits: u32) -> bool {
    match op {
        Some(Operand::Imm(_)) => true,
        Some(Operand::Reg(r)) => register_bits(f, b, *r) == Some(bits),
        Some(Operand::Special(s, _)) => special_stride(*s).is_some() && bits == 32,
        Some(Operand::Global(_)) => true,
        Some(&Operand::Var(v)) => uniform_var(f, v),
        _ => false,
    }
}

/// Whether a function variable's address is the same in every lane: a
/// `.shared` variable (an offset in the block's window) or a kernel
/// parameter, unlike a `.local` one (each lane's own memory).
pub fn uniform_var(f: &Function, v: VarId) -> bool {
    matches!(f.var(v).space, StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster)
        || (f.var(v).space == StateSpace::Param && f.params.contains(&v))
}

/// The stride of a special register's lanes: `%tid.x` and `%laneid` count
/// with the lane (`%tid.x` only when the block's rows are whole half warps
/// or the block has one dimension, which the lowering checks when the warp
/// starts); the others are uniform.
pub fn special_stride(s: SpecialReg) -> Option<i64> {
    use SpecialReg::*;
    match s {
        Tid | Laneid => Some(1),
        Ntid | Ctaid | Nctaid => Some(0),
        _ => None,
    }
}

/// The stride of a source operand, as far as known.
fn operand_stride(f: &Function, op: Operand, state: &[Lattice]) -> Lattice {
    match op {
        Operand::Imm(_) | Operand::Global(_) => Lattice::Stride(0),
        Operand::Var(v) if uniform_var(f, v) => Lattice::Stride(0),
        Operand::Special(s, c) => match (s, c) {
            (SpecialReg::Tid, 1 | 2) => Lattice::Stride(0),
            _ => special_stride(s).map_or(Lattice::Varying, Lattice::Stride),
        },
        Operand::Reg(r) => state.get(r as usize).copied().unwrap_or(Lattice::Varying),
        _ => Lattice::Varying,
    }
}

/// A source operand's value when the kernel is compiled, if known.
fn operand_constant(op: Operand, consts: &HashMap<RegId, i64>) -> Option<i64> {
    match op {
        Operand::Imm(v) => Some(v),
        Operand::Reg(r) => consts.get(&r).copied(),
        _ => None,
    }
}

/// The stride a write gives its destination.
fn transfer(f: &Function, b: &Body, inst: &Instruction, state: &[Lattice], consts: &HashMap<RegId, i64>) -> Lattice {
    let Some(form) = form(f, b, inst) else { return Lattice::Varying };
    let args = b.args(inst);
    let Some(dbits) = args.first().and_then(|d| match d {
        Operand::Reg(r) => register_bits(f, b, *r),
        _ => None,
    }) else {
        return Lattice::Varying;
    };
    let s = |k: usize| args.get(k).map_or(Lattice::Varying, |&a| operand_stride(f, a, state));
    // The product of operands 1 and 2: affine when one factor is uniform
    // and the other uniform too or a constant of the compile.
    let product = || -> Lattice {
        match (s(1), s(2)) {
            (Lattice::Unknown, _) | (_, Lattice::Unknown) => Lattice::Unknown,
            (Lattice::Stride(0), Lattice::Stride(0)) => Lattice::Stride(0),
            (Lattice::Stride(a), Lattice::Stride(0)) => match operand_constant(args[2], consts) {
                Some(c) => Lattice::Stride(a.wrapping_mul(c)),
                None => Lattice::Varying,
            },
            (Lattice::Stride(0), Lattice::Stride(b2)) => match operand_constant(args[1], consts) {
                Some(c) => Lattice::Stride(b2.wrapping_mul(c)),
                None => Lattice::Varying,
            },
            _ => Lattice::Varying,
        }
    };
    let sum = |x: Lattice, y: Lattice, sub: bool| -> Lattice {
        match (x, y) {
            (Lattice::Unknown, _) | (_, Lattice::Unknown) => Lattice::Unknown,
            (Lattice::Stride(a), Lattice::Stride(b2)) => Lattice::Stride(if sub { a.wrapping_sub(b2) } else { a.wrapping_add(b2) }),
            _ => Lattice::Varying,
        }
    };
    let result = match inst.op {
        Opcode::Mov | Opcode::Cvta | Opcode::Cvt => s(1),
        Opcode::Ld => Lattice::Stride(0),
        Opcode::Add => sum(s(1), s(2), false),
        Opcode::Sub => sum(s(1), s(2), true),
        Opcode::Shl => match (s(1), args.get(2)) {
            (Lattice::Stride(a), Some(Operand::Imm(k))) => Lattice::Stride(a.wrapping_shl(*k as u32)),
            (x, _) => x,
        },
        Opcode::Mul => product(),
        Opcode::Mad => sum(product(), s(3), false),
        // Lanes of equal values give equal results; a lane-varying operand
        // keeps a stride only in the forms `field` / `shifted_stride`
        // describe, whose run-time conditions the lowering checks.
        Opcode::And | Opcode::Shr => match (s(1), form) {
            (Lattice::Stride(0), _) => Lattice::Stride(0),
            (Lattice::Stride(a), Form::Masked { mask }) => field(mask, a).map_or(Lattice::Varying, |_| Lattice::Stride(a)),
            (Lattice::Stride(a), Form::Shifted { shift, .. }) => shifted_stride(a, shift).map_or(Lattice::Varying, Lattice::Stride),
            (Lattice::Stride(_), _) => Lattice::Varying,
            (x, _) => x,
        },
        Opcode::Xor => match (s(1), s(2)) {
            (Lattice::Unknown, _) | (_, Lattice::Unknown) => Lattice::Unknown,
            (Lattice::Stride(0), Lattice::Stride(0)) => Lattice::Stride(0),
            (Lattice::Stride(a), Lattice::Stride(0)) | (Lattice::Stride(0), Lattice::Stride(a))
                if (1..=MAX_FLIPPED_STRIDE).contains(&a) =>
            {
                Lattice::Stride(a)
            }
            _ => Lattice::Varying,
        },
        _ => Lattice::Varying,
    };
    // A widened operand keeps its (signed) stride; the lanes' values must
    // then not wrap, which the lowering checks.
    match result {
        Lattice::Stride(x) => Lattice::Stride(normalize(x, dbits)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The strides of a kernel's registers, by name (`%r3`), for the
    /// registers that have one.
    fn named_strides(src: &str) -> HashMap<String, i64> {
        let module = ptx::parse(src).expect("test PTX parses");
        let f = module.functions().next().expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        strides(f, b, &[]).into_iter().enumerate().filter_map(|(r, s)| Some((ptx::reg_name(f, b, r as RegId), s?))).collect()
    }

    const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .pred %q<3>;
.reg .b16 %rs<2>;
.reg .b32 %r<20>;
.reg .b64 %rd<12>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r3, %ctaid.x;
mov.u32 %r4, %ntid.x;
mad.lo.s32 %r5, %r3, %r4, %r2;
mul.lo.s32 %r6, %r4, %r3;
mov.u32 %r7, 12;
mul.lo.s32 %r8, %r2, %r7;
shl.b32 %r9, %r2, 3;
mul.lo.s32 %r10, %r2, %r4;
LOOP:
cvt.s64.s32 %rd2, %r5;
add.s64 %rd3, %rd1, %rd2;
ld.global.u8 %rs1, [%rd3];
cvt.u32.u16 %r11, %rs1;
add.s32 %r5, %r5, %r6;
setp.lt.s32 %q1, %r5, %r1;
@%q1 bra LOOP;
mul.wide.s32 %rd4, %r2, 4;
mad.wide.u32 %rd5, %r2, 8, %rd1;
sub.s32 %r12, %r7, %r2;
mov.u32 %r13, %r2;
@%q1 mov.u32 %r13, %r8;
add.sat.s32 %r14, %r2, 1;
cvt.u32.u64 %r15, %rd5;
ret;
}
"#;

    #[test]
    fn strides_follow_the_lane_through_arithmetic_loops_and_widening() {
        let s = named_strides(KERNEL);
        let want = [
            ("%rd1", 0),
            ("%r1", 0),
            ("%r2", 1),
            ("%r3", 0),
            ("%r4", 0),
            // The grid-stride index: its loop step is uniform.
            ("%r5", 1),
            ("%r6", 0),
            ("%r7", 0),
            ("%r8", 12),
            ("%r9", 8),
            ("%rd2", 1),
            ("%rd3", 1),
            ("%rd4", 4),
            ("%rd5", 8),
            ("%r12", -1),
            ("%r15", 8),
        ];
        for (name, stride) in want {
            assert_eq!(s.get(name), Some(&stride), "{name} in {s:?}");
        }
        // A product with a uniform factor unknown when compiling, a value
        // read from memory, two writes of different strides, a saturating
        // add: no stride.
        for name in ["%r10", "%r11", "%r13", "%r14"] {
            assert!(!s.contains_key(name), "{name} has no stride: {s:?}");
        }
    }

    #[test]
    fn fields_shifts_and_flips_of_the_lane_keep_a_stride_where_the_lanes_can_stay_apart() {
        let s = named_strides(
            r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 n)
{
.reg .b32 %r<30>;
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
and.b32 %r3, %r2, 31;
shl.b32 %r4, %r2, 2;
and.b32 %r5, %r4, 124;
and.b32 %r6, %r4, 127;
shr.u32 %r7, %r2, 5;
shr.s32 %r8, %r2, 4;
shl.b32 %r9, %r2, 6;
shr.u32 %r10, %r9, 2;
and.b32 %r11, %r1, 12;
shr.u32 %r12, %r1, 3;
and.b32 %r20, %r2, 7;
and.b32 %r21, %r2, 30;
shr.u32 %r22, %r2, 3;
mul.lo.s32 %r23, %r2, 3;
and.b32 %r24, %r23, 31;
and.b32 %r25, %r4, 28;
and.b32 %r13, %r4, 60;
shr.u32 %r26, %r4, 5;
and.b32 %r27, %r2, %r1;
xor.b32 %r14, %r2, %r1;
xor.b32 %r15, %r1, 5;
xor.b32 %r16, %r9, %r1;
xor.b32 %r28, %r2, %r2;
shl.b32 %r17, %r2, 25;
xor.b32 %r29, %r17, %r1;
ret;
}
"#,
        );
        let want = [
            // The lane's field and four times it: the stride stays.
            ("%r3", 1),
            ("%r5", 4),
            // Bits below the stride's lowest are what a half shares.
            ("%r6", 4),
            // The warp's number, and a half warp's: the same in a half.
            ("%r7", 0),
            ("%r8", 0),
            // A stride divisible by the shift's unit is divided.
            ("%r10", 16),
            // Four bits hold a half warp's lanes.
            ("%r13", 4),
            // Flipped by a uniform value (checked when run).
            ("%r14", 1),
            ("%r15", 0),
            ("%r16", 64),
            // Fields and shifts of uniform values.
            ("%r11", 0),
            ("%r12", 0),
        ];
        for (name, stride) in want {
            assert_eq!(s.get(name), Some(&stride), "{name} in {s:?}");
        }
        // Fields too narrow for a half warp (3 bits), a mask whose run does
        // not start at the stride's bit, a shift whose half warp spans two
        // values (15 > 8), a stride that is not a power of two, a field of
        // 4 * lane 3 bits wide from bit 2 (too narrow), a shift of stride
        // 4 by 5 (15 * 4 > 32), a mask that is not a constant, an `xor` of
        // two lane-varying values, one of a stride over 2^24: no stride.
        for name in ["%r20", "%r21", "%r22", "%r24", "%r25", "%r26", "%r27", "%r28", "%r29"] {
            assert!(!s.contains_key(name), "{name} has no stride: {s:?}");
        }
        assert_eq!(field(124, 4), Some((2, 5)));
        assert_eq!(field(0xffff_ffff, 1), Some((0, 32)));
        assert_eq!(field(28, 4), None, "bits 2-4: three bits");
        assert_eq!(field(31, 2), Some((1, 4)), "bits 1-4");
        assert_eq!(field(0x7c | 0x100, 4), None, "a gap in the run");
        assert_eq!(field(31, -1), None);
        assert_eq!(shifted_stride(1, 5), Some(0));
        assert_eq!(shifted_stride(2, 5), Some(0), "15 * 2 < 32");
        assert_eq!(shifted_stride(3, 5), None, "45 > 32, not divisible");
        assert_eq!(shifted_stride(64, 2), Some(16));
        assert_eq!(shifted_stride(-4, 2), None);
    }

    #[test]
    fn shared_variables_and_parameters_are_uniform_local_ones_are_not() {
        let s = named_strides(
            r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<6>;
.reg .b64 %rd<4>;
.shared .align 4 .b8 tile[1024];
.local .align 4 .b8 scratch[64];
mov.u32 %r1, tile;
mov.u32 %r2, %tid.x;
shl.b32 %r3, %r2, 2;
add.s32 %r4, %r1, %r3;
mov.u64 %rd1, scratch;
mov.u64 %rd2, p;
ret;
}
"#,
        );
        assert_eq!(s.get("%r1"), Some(&0), "{s:?}");
        assert_eq!(s.get("%r4"), Some(&4), "{s:?}");
        assert_eq!(s.get("%rd2"), Some(&0), "{s:?}");
        assert!(!s.contains_key("%rd1"), "a local variable's address is each lane's own: {s:?}");
    }

    #[test]
    fn widening_forms_know_their_signedness() {
        let module = ptx::parse(KERNEL).expect("parses");
        let f = module.functions().next().expect("kernel");
        let b = f.body.as_ref().expect("body");
        let forms: Vec<Option<Form>> = b
            .statements
            .iter()
            .filter_map(|s| match s {
                Statement::Instruction(i) if matches!(i.op, Opcode::Cvt | Opcode::Mul | Opcode::Mad) => Some(form(f, b, i)),
                _ => None,
            })
            .collect();
        assert!(forms.contains(&Some(Form::Widened { signed: true })), "{forms:?}");
        assert!(forms.contains(&Some(Form::Widened { signed: false })), "{forms:?}");
        assert_eq!(normalize(0xffff_ffff, 32), -1);
        assert_eq!(normalize(1 << 40, 64), 1 << 40);
    }
}
