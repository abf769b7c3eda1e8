//! Shared-memory addresses built as a constant base plus a small index
//! times a power of two: `&bins[byte]` is `mov.u32 %r1, bins;
//! mul.wide.u16 %r2, %rs1, 4; add.s32 %r3, %r1, %r2`.
//!
//! Warp mode runs a warp's shared atomics lane after lane, each lane's
//! read-modify-write addressed from the shared base plus the lane's
//! offset. When the offset is known to be such a sum, the lane can take
//! the index itself and let the read-modify-write scale it (`incl
//! (base,index,4)`), and the vector instructions that widened, scaled and
//! offset the indices for the whole warp are not needed. This module finds
//! the form when the kernel is compiled; the sum must provably not wrap
//! around 32 bits, as the index is then added in 64-bit arithmetic.

use ptx::ast::*;

/// An address register's value, as the lowering can rebuild it at a given
/// statement: `base + (index << shift)`, with no wrap-around in 32 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaledIndex {
    /// Where the sum starts in the shared window.
    pub base: u32,
    /// The register holding the index (16 or 32 bits wide, its value
    /// zero-extended).
    pub index: RegId,
    pub shift: u32,
    /// The statements writing the sum and the scaled index (`add` and
    /// `mul`/`shl`), and the registers they write.
    pub sum_at: usize,
    pub sum: RegId,
    pub scaled_at: usize,
    pub scaled: RegId,
}

/// The form of the 32-bit register `addr` as read at statement `at`, if
/// the straight run of instructions before `at` builds it as a
/// [`ScaledIndex`] and leaves the index as it was. `shared_offset` gives a
/// `.shared` variable's offset in the window.
pub fn scaled_index(f: &Function, b: &Body, at: usize, addr: RegId, shared_offset: &dyn Fn(VarId) -> Option<u32>) -> Option<ScaledIndex> {
    let sum_at = last_write(b, at, addr)?;
    let sum = instruction(b, sum_at)?;
    let args = b.args(sum);
    let t = sum.ty(b)?;
    if sum.op != Opcode::Add || args.len() != 3 || !t.is_integer() || t.bits() != 32 || sum.has(b, Flag::Sat) || sum.has(b, Flag::Cc) {
        return None;
    }
    for (base_op, scaled_op) in [(args[1], args[2]), (args[2], args[1])] {
        let Some(base) = constant(f, b, base_op, shared_offset) else { continue };
        let Operand::Reg(scaled) = scaled_op else { continue };
        let Some((scaled_at, index, shift, bound)) = scaled_register(f, b, sum_at, scaled) else { continue };
        // The index must still hold at `at` what the scaling read.
        if last_write(b, at, index).is_some_and(|w| w > scaled_at) {
            continue;
        }
        let top = u64::from(base) + (bound << shift);
        if top <= u64::from(u32::MAX) {
            return Some(ScaledIndex { base, index, shift, sum_at, sum: addr, scaled_at, scaled });
        }
    }
    None
}

/// Where `scaled` is last written before `at` and its index register,
/// shift and largest index: `index * 2^shift` or `index << shift` of an
/// index whose value is below a bound known when the kernel is compiled.
fn scaled_register(f: &Function, b: &Body, at: usize, scaled: RegId) -> Option<(usize, RegId, u32, u64)> {
    let k = last_write(b, at, scaled)?;
    let inst = instruction(b, k)?;
    let args = b.args(inst);
    let t = inst.ty(b)?;
    if args.len() != 3 || !t.is_integer() {
        return None;
    }
    let power = |op: Operand| match op {
        Operand::Imm(c) if c > 0 && (c as u64).is_power_of_two() && c <= 8 => Some(c.trailing_zeros()),
        _ => None,
    };
    let (index, shift) = match inst.op {
        // 16 bits times 2^k into 32 bits: the index is at most 0xffff.
        Opcode::Mul if inst.has(b, Flag::Wide) && t.bits() == 16 && !t.is_signed() => match (args[1], args[2]) {
            (Operand::Reg(i), c) | (c, Operand::Reg(i)) if power(c).is_some() => (i, power(c)?),
            _ => return None,
        },
        Opcode::Mul if inst.has(b, Flag::LoHalf) && t.bits() == 32 => match (args[1], args[2]) {
            (Operand::Reg(i), c) | (c, Operand::Reg(i)) if power(c).is_some() => (i, power(c)?),
            _ => return None,
        },
        Opcode::Shl if t.bits() == 32 => match (args[1], args[2]) {
            (Operand::Reg(i), Operand::Imm(s)) if (0..=3).contains(&s) => (i, s as u32),
            _ => return None,
        },
        _ => return None,
    };
    let bits = crate::lower::reg_ty(f.var(b.regs.get(index as usize)?.var).ty).bits();
    let bound = match bits {
        16 if inst.op == Opcode::Mul && inst.has(b, Flag::Wide) => 0xffff,
        32 => index_bound(b, k, index)?,
        _ => return None,
    };
    Some((k, index, shift, bound))
}

/// The statement of a load the atomic at `at` (addressed by `s`) can make
/// itself, lane after lane, instead of the warp making it as a vector
/// first: the index's last write, a weak scalar load of global or constant
/// memory into the index register, whose address registers stay as they
/// are until `at`, with no write to memory, fence or barrier in between,
/// and whose value nothing reads but the scaling. The caller checks that
/// the index, the scaled index and the sum are dead after `at`.
pub fn sinkable_load(b: &Body, at: usize, s: &ScaledIndex) -> Option<usize> {
    let k = last_write(b, at, s.index)?;
    let ld = instruction(b, k)?;
    let args = b.args(ld);
    let t = ld.ty(b)?;
    let weak = matches!(ld.semantics(b), None | Some(Semantics::Weak)) && ld.cache_op(b) != Some(CacheOp::Cv);
    let space = matches!(ld.space(b), Some(StateSpace::Global | StateSpace::Const));
    if ld.op != Opcode::Ld || args.len() != 2 || args[0] != Operand::Reg(s.index) || !weak || !space || !t.is_integer() || t.bits() > 32 {
        return None;
    }
    let Some((AddrBase::Reg(address), _)) = args[1].address() else { return None };
    let (mut uses, mut defs) = (Vec::new(), Vec::new());
    for j in k + 1..at {
        let inst = instruction(b, j)?;
        if writes_memory(inst.op) {
            return None;
        }
        b.def_use(inst, &mut uses, &mut defs);
        if defs.contains(&address) {
            return None;
        }
        // The chain's registers are read by the next link only.
        for (r, reader) in [(s.index, s.scaled_at), (s.scaled, s.sum_at), (s.sum, at)] {
            if uses.contains(&r) && j != reader {
                return None;
            }
        }
    }
    Some(k)
}

/// Instructions that write memory, order it or wait: a load moved past one
/// could read another value, and a value stored before one may not be
/// there after it (`crate::forwarding`). (`wmma.store`, `discard`, which
/// leaves memory undefined, and `clusterlaunchcontrol.try_cancel`, which
/// writes its response to shared memory, count.)
pub(crate) fn writes_memory(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        St | Atom
            | Wmma
            | Discard
            | Clusterlaunchcontrol
            | Red
            | Fence
            | Membar
            | Bar
            | Barrier
            | Call
            | Cp
            | Mbarrier
            | Sust
            | Sured
            | Multimem
            | Stmatrix
            | Tcgen05
            | Wgmma
            | Tensormap
            | Griddepcontrol
            | Nanosleep
            | Alloca
            | Stackrestore
            | Bra
            | Brx
            | Ret
            | Exit
            | Trap
    )
}

/// The largest value a 32-bit index can have as last written before `at`,
/// when that write bounds it: a mask, a zero-extension of 8 or 16 bits, or
/// a zero-extending load of as many.
fn index_bound(b: &Body, at: usize, index: RegId) -> Option<u64> {
    let inst = instruction(b, last_write(b, at, index)?)?;
    let args = b.args(inst);
    let t = inst.ty(b)?;
    let narrow = |t: Type| (t.is_integer() && !t.is_signed() && t.bits() <= 16).then(|| (1u64 << t.bits()) - 1);
    match inst.op {
        Opcode::And if args.len() == 3 && t.bits() == 32 => match (args[1], args[2]) {
            (Operand::Imm(m), _) | (_, Operand::Imm(m)) if (0..=0xffff).contains(&m) => Some(m as u64),
            _ => None,
        },
        Opcode::Cvt if args.len() == 2 && !inst.has(b, Flag::Sat) => {
            let mut types = inst.types(b);
            let (to, from) = (types.next()?, types.next()?);
            if to.bits() == 32 && to.is_integer() {
                narrow(from)
            } else {
                None
            }
        }
        Opcode::Ld if args.len() == 2 && matches!(args[0], Operand::Reg(_)) => narrow(t),
        _ => None,
    }
}

/// An operand's value when the kernel is compiled, as a window offset: an
/// immediate, a `.shared` variable's address, or a register every write of
/// which is an unguarded `mov` of one such value.
fn constant(f: &Function, b: &Body, op: Operand, shared_offset: &dyn Fn(VarId) -> Option<u32>) -> Option<u32> {
    let direct = |op: Operand| match op {
        Operand::Imm(v) => u32::try_from(v).ok(),
        Operand::Var(v) if crate::affine::uniform_var(f, v) && f.var(v).space != StateSpace::Param => shared_offset(v),
        _ => None,
    };
    let Operand::Reg(r) = op else { return direct(op) };
    let mut value = None;
    for s in &b.statements {
        let Statement::Instruction(inst) = s else { continue };
        if !writes(b, inst, r) {
            continue;
        }
        let args = b.args(inst);
        let v = match (inst.op, inst.guard, args) {
            (Opcode::Mov, None, [Operand::Reg(_), src]) => direct(*src)?,
            _ => return None,
        };
        if value.is_some_and(|x| x != v) {
            return None;
        }
        value = Some(v);
    }
    value
}

/// The statement of the last write of `r` before statement `at`, in the
/// straight run of unconditional, non-branching instructions that ends
/// there; `None` when the run has none or a guarded one.
pub(crate) fn last_write(b: &Body, at: usize, r: RegId) -> Option<usize> {
    for k in (0..at).rev() {
        let Statement::Instruction(inst) = b.statements.get(k)? else { return None };
        if matches!(
            inst.op,
            Opcode::Bra | Opcode::Brx | Opcode::Call | Opcode::Ret | Opcode::Exit | Opcode::Trap | Opcode::Bar | Opcode::Barrier
        ) {
            return None;
        }
        if writes(b, inst, r) {
            return inst.guard.is_none().then_some(k);
        }
    }
    None
}

fn writes(b: &Body, inst: &Instruction, r: RegId) -> bool {
    let mut regs = Vec::new();
    b.defs(inst, &mut regs);
    regs.contains(&r)
}

fn instruction<'b>(b: &'b Body, k: usize) -> Option<&'b Instruction> {
    match b.statements.get(k)? {
        Statement::Instruction(i) => Some(i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form of the address of the kernel's last `atom`, with every
    /// `.shared` variable at offset 64.
    fn form_of(body_text: &str) -> Option<(u32, String, u32)> {
        let src = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .pred %q<3>;\n.reg .b16 %rs<4>;\n.reg .b32 %r<20>;\n.reg .b64 %rd<8>;\n.shared .align 4 .b8 bins[1024];\n{body_text}\nret;\n}}\n"
        );
        let module = ptx::parse(&src).expect("test PTX parses");
        let f = module.functions().next().expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        let at = b.statements.iter().rposition(|s| matches!(s, Statement::Instruction(i) if i.op == Opcode::Atom)).expect("an atom");
        let Statement::Instruction(atom) = &b.statements[at] else { return None };
        let Some((AddrBase::Reg(addr), _)) = b.args(atom)[1].address() else { return None };
        let s = scaled_index(f, b, at, addr, &|_| Some(64))?;
        Some((s.base, ptx::reg_name(f, b, s.index), s.shift))
    }

    const LOAD: &str = "ld.param.u64 %rd1, [p];\nld.global.u8 %rs1, [%rd1];\nmov.u32 %r1, bins;\n";

    #[test]
    fn a_byte_scaled_into_a_shared_array() {
        let body = format!("{LOAD}mul.wide.u16 %r2, %rs1, 4;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&body), Some((64, "%rs1".into(), 2)));
        // Either order of the sum; an immediate base.
        let body = format!("{LOAD}mul.wide.u16 %r2, %rs1, 8;\nadd.s32 %r3, %r2, 16;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&body), Some((16, "%rs1".into(), 3)));
    }

    #[test]
    fn a_32_bit_index_needs_a_bound() {
        let masked = format!("{LOAD}cvt.u32.u16 %r5, %rs1;\nand.b32 %r6, %r5, 255;\nshl.b32 %r2, %r6, 2;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&masked), Some((64, "%r6".into(), 2)));
        let widened =
            format!("{LOAD}cvt.u32.u16 %r6, %rs1;\nmul.lo.s32 %r2, %r6, 4;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&widened), Some((64, "%r6".into(), 2)));
        let loaded = "ld.param.u64 %rd1, [p];\nld.global.u8 %r6, [%rd1];\nmov.u32 %r1, bins;\nshl.b32 %r2, %r6, 2;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;";
        assert_eq!(form_of(loaded), Some((64, "%r6".into(), 2)));
        // A 32-bit index of any value, or a sign-extended one, could wrap.
        let any = "ld.param.u64 %rd1, [p];\nld.global.u32 %r6, [%rd1];\nmov.u32 %r1, bins;\nshl.b32 %r2, %r6, 2;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;";
        assert_eq!(form_of(any), None);
        let signed =
            format!("{LOAD}cvt.s32.s16 %r6, %rs1;\nshl.b32 %r2, %r6, 2;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&signed), None);
    }

    #[test]
    fn the_index_must_hold_at_the_atomic_and_the_run_be_straight() {
        // The index rewritten after the sum.
        let moved =
            format!("{LOAD}mul.wide.u16 %r2, %rs1, 4;\nadd.s32 %r3, %r1, %r2;\nadd.u16 %rs1, %rs1, 1;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&moved), None);
        let moved_before_the_sum =
            format!("{LOAD}mul.wide.u16 %r2, %rs1, 4;\nadd.u16 %rs1, %rs1, 1;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&moved_before_the_sum), None);
        // The sum under a guard, or across a label.
        let guarded = format!(
            "{LOAD}setp.eq.u16 %q1, %rs1, 0;\nmul.wide.u16 %r2, %rs1, 4;\n@%q1 add.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;"
        );
        assert_eq!(form_of(&guarded), None);
        let labelled = format!("{LOAD}mul.wide.u16 %r2, %rs1, 4;\nadd.s32 %r3, %r1, %r2;\n$L1:\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&labelled), None);
        // A base register written twice with different values; a sum that
        // could pass 2^32; a scale that is no power of two.
        let two_bases =
            format!("{LOAD}mov.u32 %r1, 0;\nmul.wide.u16 %r2, %rs1, 4;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&two_bases), None);
        let high = format!("{LOAD}mul.wide.u16 %r2, %rs1, 8;\nadd.s32 %r3, %r2, 4294443024;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&high), None);
        let odd = format!("{LOAD}mul.wide.u16 %r2, %rs1, 6;\nadd.s32 %r3, %r1, %r2;\natom.shared.add.u32 %r4, [%r3], 1;");
        assert_eq!(form_of(&odd), None);
    }
}
