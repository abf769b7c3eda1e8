//! Lane masks carried between basic blocks as 32-bit lanes, for hosts
//! without mask registers (x86 without AVX-512).
//!
//! Warp code holds its lane masks as `<32 x i1>` (and `<16 x i1>` halves).
//! Within a block x86's instruction selection keeps a compare's result as
//! the 32-bit lanes the compare wrote, which a blend or a masked access
//! uses as they are; but a mask that lives on into another block (a phi,
//! or a value used there) is carried in a register of its legal type,
//! `<32 x i8>` on AVX2: packed from the compare's lanes where it is made
//! (two packs and two permutes per 32 lanes) and widened again by every
//! block that uses it (a widening and a shift per eight lanes). In the
//! warp code of a barrier stencil and of a bitonic sort those conversions
//! were a quarter of the instructions executed (AVX2 host, `perf` samples
//! of the kernels' blocks).
//!
//! Carrying only the masks that cross blocks widened was not enough
//! (stencil 336-352 -> 375-418 ms): the legaliser also packs a mask for
//! every `and`, `xor`, `select` or shuffle of masks within a block. So
//! [`widen_masks`] rewrites the optimised IR so that all mask algebra is
//! done on `<N x i32>` all-ones/zero lanes (the mask's *wide form*): a
//! compare's result (or any other mask it does not know how to compute
//! wide, such as a load) is sign-extended right after it, `and`/`or`/
//! `xor`, `select`, `shufflevector`, `insertelement` and phis of masks
//! become the same operations on wide forms, and each other reader of a
//! mask (a blend, a masked access, a reduction, a bitcast to bits) reads
//! `icmp slt wide, 0` made right before it, which instruction selection
//! folds into the instruction that reads the sign bits. Values are
//! unchanged lane for lane: the wide form of `m` is `sext m`, and
//! `icmp slt (sext m), 0` is `m` (poison lanes stay poison).
//!
//! Invariant kept: every instruction still dominates its uses (a wide
//! form sits right after the mask it stands for, whose operands' wide
//! forms sit right after theirs; a wide phi's incoming values are wide
//! forms or extensions at the end of the incoming block; each compare
//! right before its reader).

use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::llvm_sys::core::{
    LLVMGetElementType, LLVMGetIntTypeWidth, LLVMGetMaskValue, LLVMGetNumMaskElements, LLVMGetOperand, LLVMGetTypeKind,
    LLVMGetUndefMaskElem, LLVMGetVectorSize, LLVMTypeOf,
};
use inkwell::llvm_sys::LLVMTypeKind;
use inkwell::module::Module;
use inkwell::types::VectorType;
use inkwell::values::{
    AnyValue, AnyValueEnum, AsValueRef, BasicValue, BasicValueEnum, CallSiteValue, InstructionOpcode, InstructionValue, IntValue, PhiValue,
    VectorValue,
};
use inkwell::IntPredicate;
use std::collections::{HashMap, HashSet};

/// Masks narrower than this stay as they are: a `<8 x i1>` crosses
/// blocks in one register whatever its form.
const MIN_LANES: u32 = 16;

/// The lane count of `v` when it is a vector of `i1` of at least
/// [`MIN_LANES`] lanes.
fn mask_lanes(v: &impl AsValueRef) -> Option<u32> {
    // SAFETY: `v` is a live value of the module being rewritten; these
    // calls only read its type.
    unsafe {
        let t = LLVMTypeOf(v.as_value_ref());
        if LLVMGetTypeKind(t) != LLVMTypeKind::LLVMVectorTypeKind {
            return None;
        }
        let e = LLVMGetElementType(t);
        if LLVMGetTypeKind(e) != LLVMTypeKind::LLVMIntegerTypeKind || LLVMGetIntTypeWidth(e) != 1 {
            return None;
        }
        Some(LLVMGetVectorSize(t)).filter(|&n| n >= MIN_LANES)
    }
}

/// Rewrites every function of `module` as the module documentation says.
/// Returns how many masks were rewritten.
pub fn widen_masks(context: &Context, module: &Module<'_>) -> usize {
    let builder = context.create_builder();
    let mut widened = 0;
    for f in module.get_functions() {
        widened += widen_function(context, &builder, f.get_basic_blocks());
    }
    widened
}

/// How a mask's wide form is made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `sext` of the mask itself, right after it (the mask stays).
    Source,
    /// The same operation on its operands' wide forms (the mask goes).
    Translated,
}

fn kind_of(x: InstructionValue<'_>) -> Kind {
    match x.get_opcode() {
        InstructionOpcode::And
        | InstructionOpcode::Or
        | InstructionOpcode::Xor
        | InstructionOpcode::Select
        | InstructionOpcode::ShuffleVector
        | InstructionOpcode::InsertElement
        | InstructionOpcode::Phi => Kind::Translated,
        _ => Kind::Source,
    }
}

/// Operand `k` of `x` when it is an integer or a vector of integers
/// (the only operands this rewrite reads or replaces; inkwell's own
/// accessor does not take every operand kind, such as a call's callee
/// or metadata).
fn operand<'ctx>(x: InstructionValue<'ctx>, k: u32) -> Option<BasicValueEnum<'ctx>> {
    // SAFETY: `x` is a live instruction and `k` below its operand count;
    // the operand is wrapped only when its type is one `BasicValueEnum`
    // takes as an integer or vector value.
    unsafe {
        if k >= x.get_num_operands() {
            return None;
        }
        let v = LLVMGetOperand(x.as_value_ref(), k);
        if v.is_null() {
            return None;
        }
        match LLVMGetTypeKind(LLVMTypeOf(v)) {
            LLVMTypeKind::LLVMIntegerTypeKind | LLVMTypeKind::LLVMVectorTypeKind => Some(BasicValueEnum::new(v)),
            _ => None,
        }
    }
}

/// The mask instruction `v` is, if it is one.
fn mask_instruction<'ctx>(v: BasicValueEnum<'ctx>) -> Option<InstructionValue<'ctx>> {
    v.as_instruction_value().filter(|i| mask_lanes(i).is_some())
}

struct Widen<'a, 'ctx> {
    context: &'ctx Context,
    builder: &'a Builder<'ctx>,
    wide: HashMap<InstructionValue<'ctx>, VectorValue<'ctx>>,
    /// The instructions this rewrite made.
    made: HashSet<InstructionValue<'ctx>>,
}

impl<'ctx> Widen<'_, 'ctx> {
    fn note(&mut self, v: impl BasicValue<'ctx>) {
        if let Some(i) = v.as_instruction_value() {
            self.made.insert(i);
        }
    }

    /// The wide form of mask `v` at the builder's position: its wide
    /// form if it is a mask instruction that has one, else (a constant,
    /// an argument) its extension there. `None` while a mask instruction
    /// has none yet.
    fn wide_of(&mut self, v: BasicValueEnum<'ctx>) -> Option<VectorValue<'ctx>> {
        if let Some(i) = mask_instruction(v) {
            return self.wide.get(&i).copied();
        }
        let BasicValueEnum::VectorValue(m) = v else { return None };
        let wt = self.context.i32_type().vec_type(m.get_type().get_size());
        let w = self.builder.build_int_s_extend(m, wt, "wk").ok()?;
        self.note(w);
        Some(w)
    }

    /// The narrow mask read from wide form `w` right before `at`.
    fn narrow_before(&mut self, w: VectorValue<'ctx>, at: InstructionValue<'ctx>) -> Option<VectorValue<'ctx>> {
        self.builder.position_before(&at);
        let n = self.builder.build_int_compare(IntPredicate::SLT, w, w.get_type().const_zero(), "wn").ok()?;
        self.note(n);
        Some(n)
    }

    /// Whether any (`all` false) or every lane of wide form `w` is set, as
    /// an `i1` made right before `at`: the lanes folded in halves with
    /// `or` (`and`) down to eight, whose sign bits are then tested at once
    /// (`vmovmskps` on AVX2, where a `<32 x i1>` reduction packed the
    /// lanes to bytes with two packs and three permutes first).
    fn reduce_before(&mut self, w: VectorValue<'ctx>, all: bool, at: InstructionValue<'ctx>) -> Option<IntValue<'ctx>> {
        let b = self.builder;
        b.position_before(&at);
        let i32t = self.context.i32_type();
        let mut v = w;
        let mut n = w.get_type().get_size();
        while n > 8 && n.is_multiple_of(2) {
            let half = |from: u32| {
                VectorType::const_vector(&(from..from + n / 2).map(|k| i32t.const_int(u64::from(k), false)).collect::<Vec<_>>())
            };
            let poison = v.get_type().get_poison();
            let lo = b.build_shuffle_vector(v, poison, half(0), "wl").ok()?;
            let hi = b.build_shuffle_vector(v, poison, half(n / 2), "wh").ok()?;
            v = if all { b.build_and(lo, hi, "wr").ok()? } else { b.build_or(lo, hi, "wr").ok()? };
            self.note(lo);
            self.note(hi);
            self.note(v);
            n /= 2;
        }
        let signs = b.build_int_compare(IntPredicate::SLT, v, v.get_type().const_zero(), "ws").ok()?;
        let bits_type = self.context.custom_width_int_type(std::num::NonZeroU32::new(n)?).ok()?;
        let bits = b.build_bit_cast(signs, bits_type, "wb").ok()?.into_int_value();
        let r = if all {
            b.build_int_compare(IntPredicate::EQ, bits, bits_type.const_all_ones(), "wq").ok()?
        } else {
            b.build_int_compare(IntPredicate::NE, bits, bits_type.const_zero(), "wq").ok()?
        };
        self.note(signs);
        self.note(bits);
        self.note(r);
        Some(r)
    }

    /// Replaces reader `u` when all it does with its mask is reduce it: a
    /// call of `llvm.vector.reduce.or`/`.and`, or a bitcast of the mask to
    /// bits that only compares (`eq`/`ne`) with 0 or with all ones (what
    /// the optimiser makes of those reductions). The replaced instructions
    /// go to `dead`. Whether it replaced `u`.
    fn reduce_reader(&mut self, u: InstructionValue<'ctx>, dead: &mut Vec<InstructionValue<'ctx>>) -> bool {
        let Some(m) = operand(u, 0).and_then(mask_instruction) else { return false };
        let Some(&wm) = self.wide.get(&m) else { return false };
        match u.get_opcode() {
            InstructionOpcode::Call => {
                let Ok(call) = CallSiteValue::try_from(u) else { return false };
                let Some(callee) = call.get_called_fn_value() else { return false };
                let name = callee.get_name().to_string_lossy();
                let all = if name.starts_with("llvm.vector.reduce.or.") {
                    false
                } else if name.starts_with("llvm.vector.reduce.and.") {
                    true
                } else {
                    return false;
                };
                let AnyValueEnum::IntValue(old) = u.as_any_value_enum() else { return false };
                let Some(r) = self.reduce_before(wm, all, u) else { return false };
                old.replace_all_uses_with(r);
                dead.push(u);
                true
            }
            InstructionOpcode::BitCast => {
                // Each compare of the bits: (reduction, negated).
                let mut tests = Vec::new();
                let mut use_ = u.get_first_use();
                while let Some(x) = use_ {
                    use_ = x.get_next_use();
                    let AnyValueEnum::IntValue(c) = x.get_user() else { return false };
                    let Some(ci) = c.as_instruction() else { return false };
                    let Some(pred) = ci.get_icmp_predicate() else { return false };
                    let Some(BasicValueEnum::IntValue(k)) = operand(ci, 1) else { return false };
                    let Some(k) = k.get_sign_extended_constant() else { return false };
                    let same = matches!(operand(ci, 0), Some(v) if v.as_value_ref() == u.as_value_ref());
                    let test = match (pred, k) {
                        (IntPredicate::EQ, 0) => (false, true),
                        (IntPredicate::NE, 0) => (false, false),
                        (IntPredicate::EQ, -1) => (true, false),
                        (IntPredicate::NE, -1) => (true, true),
                        _ => return false,
                    };
                    if !same {
                        return false;
                    }
                    tests.push((ci, c, test));
                }
                if tests.is_empty() {
                    return false;
                }
                for (ci, c, (all, negate)) in tests {
                    let Some(mut r) = self.reduce_before(wm, all, ci) else { return false };
                    if negate {
                        let Ok(n) = self.builder.build_not(r, "wt") else { return false };
                        self.note(n);
                        r = n;
                    }
                    c.replace_all_uses_with(r);
                    dead.push(ci);
                }
                dead.push(u);
                true
            }
            _ => false,
        }
    }

    /// Makes the wide form of translated mask `x` right after it, if its
    /// operands' wide forms exist; whether it did.
    fn translate(&mut self, x: InstructionValue<'ctx>) -> bool {
        let Some(next) = x.get_next_instruction() else { return false };
        let ops: Vec<Option<BasicValueEnum<'ctx>>> = (0..x.get_num_operands()).map(|k| operand(x, k)).collect();
        let ready = |w: &Self, v: &Option<BasicValueEnum<'ctx>>| match v.and_then(mask_instruction) {
            Some(i) => w.wide.contains_key(&i),
            None => true,
        };
        if !ops.iter().all(|v| ready(self, v)) {
            return false;
        }
        self.builder.position_before(&next);
        let b = self.builder;
        let w: Option<VectorValue<'ctx>> = match x.get_opcode() {
            InstructionOpcode::And | InstructionOpcode::Or | InstructionOpcode::Xor => {
                let (Some(Some(l)), Some(Some(r))) = (ops.first(), ops.get(1)) else { return false };
                let (Some(l), Some(r)) = (self.wide_of(*l), self.wide_of(*r)) else { return false };
                b.position_before(&next);
                match x.get_opcode() {
                    InstructionOpcode::And => b.build_and(l, r, "wa").ok(),
                    InstructionOpcode::Or => b.build_or(l, r, "wo").ok(),
                    _ => b.build_xor(l, r, "wx").ok(),
                }
            }
            InstructionOpcode::Select => {
                let (Some(Some(c)), Some(Some(t)), Some(Some(e))) = (ops.first(), ops.get(1), ops.get(2)) else { return false };
                let (Some(t), Some(e)) = (self.wide_of(*t), self.wide_of(*e)) else { return false };
                let w = match *c {
                    BasicValueEnum::IntValue(c) => b.build_select(c, t, e, "ws").ok(),
                    BasicValueEnum::VectorValue(_) => {
                        let Some(cw) = self.wide_of(*c) else { return false };
                        let Some(cn) = self.narrow_before(cw, next) else { return false };
                        b.build_select(cn, t, e, "ws").ok()
                    }
                    _ => None,
                };
                w.map(|w| w.into_vector_value())
            }
            InstructionOpcode::ShuffleVector => {
                let (Some(Some(l)), Some(Some(r))) = (ops.first(), ops.get(1)) else { return false };
                let (Some(l), Some(r)) = (self.wide_of(*l), self.wide_of(*r)) else { return false };
                let i32t = self.context.i32_type();
                // SAFETY: `x` is a live shufflevector instruction; these
                // calls read its constant mask.
                let mask: Vec<BasicValueEnum<'ctx>> = unsafe {
                    let n = LLVMGetNumMaskElements(x.as_value_ref());
                    (0..n)
                        .map(|k| {
                            let e = LLVMGetMaskValue(x.as_value_ref(), k);
                            if e == LLVMGetUndefMaskElem() {
                                i32t.get_poison().into()
                            } else {
                                i32t.const_int(e as u64, false).into()
                            }
                        })
                        .collect()
                };
                let mask = VectorType::const_vector(&mask);
                b.position_before(&next);
                b.build_shuffle_vector(l, r, mask, "wf").ok()
            }
            InstructionOpcode::InsertElement => {
                let (Some(Some(v)), Some(Some(BasicValueEnum::IntValue(e))), Some(Some(BasicValueEnum::IntValue(k)))) =
                    (ops.first(), ops.get(1), ops.get(2))
                else {
                    return false;
                };
                let Some(v) = self.wide_of(*v) else { return false };
                b.position_before(&next);
                let Ok(e) = b.build_int_s_extend(*e, self.context.i32_type(), "we") else { return false };
                self.note(e);
                b.build_insert_element(v, e, *k, "wi").ok()
            }
            _ => None,
        };
        let Some(w) = w else { return false };
        self.note(w);
        self.wide.insert(x, w);
        true
    }
}

fn widen_function<'ctx>(context: &'ctx Context, builder: &Builder<'ctx>, blocks: Vec<BasicBlock<'ctx>>) -> usize {
    let mut masks: Vec<InstructionValue<'ctx>> = Vec::new();
    for bb in &blocks {
        let mut i = bb.get_first_instruction();
        while let Some(x) = i {
            i = x.get_next_instruction();
            if mask_lanes(&x).is_some() {
                masks.push(x);
            }
        }
    }
    if masks.is_empty() {
        return 0;
    }
    let mut w = Widen { context, builder, wide: HashMap::new(), made: HashSet::new() };
    let i32t = context.i32_type();
    // Phis first (they break the cycles of loops), then the sources.
    let mut phis: Vec<(PhiValue<'ctx>, u32)> = Vec::new();
    for &x in &masks {
        let Some(n) = mask_lanes(&x) else { continue };
        if x.get_opcode() == InstructionOpcode::Phi {
            let Ok(p) = PhiValue::try_from(x) else { continue };
            builder.position_before(&x);
            let Ok(wp) = builder.build_phi(i32t.vec_type(n), "wp") else { continue };
            w.note(wp.as_basic_value());
            w.wide.insert(x, wp.as_basic_value().into_vector_value());
            phis.push((p, n));
        }
    }
    let mut sources: HashSet<InstructionValue<'ctx>> = HashSet::new();
    let mut pending: Vec<InstructionValue<'ctx>> = Vec::new();
    for &x in &masks {
        match kind_of(x) {
            Kind::Translated if x.get_opcode() == InstructionOpcode::Phi => {}
            Kind::Translated => pending.push(x),
            Kind::Source => {
                sources.insert(x);
            }
        }
    }
    let source_wide = |w: &mut Widen<'_, 'ctx>, x: InstructionValue<'ctx>| {
        let (Some(next), Some(n)) = (x.get_next_instruction(), mask_lanes(&x)) else { return };
        let AnyValueEnum::VectorValue(m) = x.as_any_value_enum() else { return };
        builder.position_before(&next);
        if let Ok(e) = builder.build_int_s_extend(m, i32t.vec_type(n), "wz") {
            w.note(e);
            w.wide.insert(x, e);
        }
    };
    for &x in &masks {
        if sources.contains(&x) {
            source_wide(&mut w, x);
        }
    }
    // The translated masks, each once its operands' wide forms exist;
    // any left (a cycle outside a phi, in unreachable code) become
    // sources.
    loop {
        let before = pending.len();
        pending.retain(|&x| !w.translate(x));
        if pending.is_empty() {
            break;
        }
        if pending.len() == before {
            for &x in &pending {
                sources.insert(x);
                source_wide(&mut w, x);
            }
            break;
        }
    }
    // The wide phis' incoming values.
    for (p, n) in &phis {
        let Some(wp) = w.wide.get(&p.as_instruction()).and_then(|v| v.as_instruction()).and_then(|i| PhiValue::try_from(i).ok()) else {
            continue;
        };
        for k in 0..p.count_incoming() {
            let Some((val, from)) = p.get_incoming(k) else { continue };
            let known = mask_instruction(val).and_then(|i| w.wide.get(&i).copied());
            let v = match known {
                Some(v) => v,
                None => {
                    let (Some(t), BasicValueEnum::VectorValue(m)) = (from.get_terminator(), val) else { continue };
                    builder.position_before(&t);
                    let Ok(e) = builder.build_int_s_extend(m, i32t.vec_type(*n), "wk") else { continue };
                    w.note(e);
                    e
                }
            };
            wp.add_incoming(&[(&v as &dyn BasicValue<'ctx>, from)]);
        }
    }
    // Every other reader of a mask reads it narrowed right before it.
    let translated: HashSet<InstructionValue<'ctx>> = masks.iter().copied().filter(|x| !sources.contains(x)).collect();
    let mut dead: Vec<InstructionValue<'ctx>> = Vec::new();
    for bb in &blocks {
        let mut i = bb.get_first_instruction();
        while let Some(u) = i {
            i = u.get_next_instruction();
            if translated.contains(&u) || w.made.contains(&u) {
                continue;
            }
            if w.reduce_reader(u, &mut dead) {
                continue;
            }
            for k in 0..u.get_num_operands() {
                let Some(m) = operand(u, k).and_then(mask_instruction) else { continue };
                let Some(&wm) = w.wide.get(&m) else { continue };
                if let Some(n) = w.narrow_before(wm, u) {
                    u.set_operand(k, n);
                }
            }
        }
    }
    // Readers replaced by reductions of wide forms.
    for x in dead {
        x.erase_from_basic_block();
    }
    // The translated masks are read by nothing but each other now.
    for &x in &translated {
        if let AnyValueEnum::VectorValue(v) = x.as_any_value_enum() {
            v.replace_all_uses_with(v.get_type().get_poison());
        }
    }
    for &x in &translated {
        x.erase_from_basic_block();
    }
    masks.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::OptimizationLevel;

    /// A loop whose lane mask is a phi updated by compares, `xor`, a
    /// `select` on a scalar, a shuffle of two masks, an `insertelement`
    /// and an `and` with a constant, read by a blend, a bitcast to bits, a
    /// reduction, a masked load and a half-mask shuffle.
    fn ir() -> String {
        let reverse: Vec<String> = (0..32).map(|i| format!("i32 {}", if i % 3 == 0 { 31 - i } else { 32 + i })).collect();
        let pattern: Vec<String> = (0..32).map(|i| format!("i1 {}", if i % 5 == 1 { "false" } else { "true" })).collect();
        let low: Vec<String> = (0..16).map(|i| format!("i32 {}", 2 * i + 1)).collect();
        format!(
            "declare i1 @llvm.vector.reduce.or.v32i1(<32 x i1>)
declare i1 @llvm.vector.reduce.and.v32i1(<32 x i1>)
declare <32 x i32> @llvm.masked.load.v32i32.p0(ptr, i32, <32 x i1>, <32 x i32>)

define void @f(ptr %a, ptr %b, ptr %out, i32 %rounds) {{
entry:
  %va = load <32 x i32>, ptr %a, align 4
  %vb = load <32 x i32>, ptr %b, align 4
  %m0 = icmp slt <32 x i32> %va, %vb
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %body]
  %m = phi <32 x i1> [%m0, %entry], [%m3, %body]
  %acc = phi <32 x i32> [zeroinitializer, %entry], [%acc1, %body]
  %c = icmp ult i32 %i, %rounds
  br i1 %c, label %body, label %done
body:
  %k = insertelement <32 x i32> poison, i32 %i, i32 0
  %ks = shufflevector <32 x i32> %k, <32 x i32> poison, <32 x i32> zeroinitializer
  %t = add <32 x i32> %va, %ks
  %m1 = icmp ugt <32 x i32> %t, %vb
  %m2 = xor <32 x i1> %m, %m1
  %sc = icmp eq i32 %i, 2
  %m2b = select i1 %sc, <32 x i1> %m1, <32 x i1> %m2
  %rev = shufflevector <32 x i1> %m2b, <32 x i1> %m, <32 x i32> <{}>
  %ins = insertelement <32 x i1> %rev, i1 %sc, i32 5
  %m3 = and <32 x i1> %ins, <{}>
  %sel = select <32 x i1> %m3, <32 x i32> %t, <32 x i32> %acc
  %acc1 = add <32 x i32> %sel, %ks
  %i1 = add i32 %i, 1
  br label %loop
done:
  store <32 x i32> %acc, ptr %out, align 1
  %bits = bitcast <32 x i1> %m to i32
  %o1 = getelementptr i8, ptr %out, i64 128
  store i32 %bits, ptr %o1, align 1
  %any = call i1 @llvm.vector.reduce.or.v32i1(<32 x i1> %m)
  %anyz = zext i1 %any to i32
  %o2 = getelementptr i8, ptr %out, i64 132
  store i32 %anyz, ptr %o2, align 1
  %ml = call <32 x i32> @llvm.masked.load.v32i32.p0(ptr %b, i32 4, <32 x i1> %m, <32 x i32> zeroinitializer)
  %o3 = getelementptr i8, ptr %out, i64 136
  store <32 x i32> %ml, ptr %o3, align 1
  %h = shufflevector <32 x i1> %m, <32 x i1> poison, <16 x i32> <{}>
  %hb = bitcast <16 x i1> %h to i16
  %o4 = getelementptr i8, ptr %out, i64 264
  store i16 %hb, ptr %o4, align 1
  %b2 = bitcast <32 x i1> %m to i32
  %full = icmp eq i32 %b2, -1
  %none = icmp eq i32 %b2, 0
  %some = icmp ne i32 %b2, 0
  %notfull = icmp ne i32 %b2, -1
  %all = call i1 @llvm.vector.reduce.and.v32i1(<32 x i1> %m)
  %t1 = zext i1 %full to i8
  %t2 = zext i1 %none to i8
  %t3 = zext i1 %some to i8
  %t4 = zext i1 %notfull to i8
  %t5 = zext i1 %all to i8
  %o5 = getelementptr i8, ptr %out, i64 266
  store i8 %t1, ptr %o5, align 1
  %o6 = getelementptr i8, ptr %out, i64 267
  store i8 %t2, ptr %o6, align 1
  %o7 = getelementptr i8, ptr %out, i64 268
  store i8 %t3, ptr %o7, align 1
  %o8 = getelementptr i8, ptr %out, i64 269
  store i8 %t4, ptr %o8, align 1
  %o9 = getelementptr i8, ptr %out, i64 270
  store i8 %t5, ptr %o9, align 1
  ret void
}}
",
            reverse.join(", "),
            pattern.join(", "),
            low.join(", ")
        )
    }

    type Kernel = unsafe extern "C" fn(*const u32, *const u32, *mut u8, u32);

    fn run(widen: bool, a: &[u32; 32], b: &[u32; 32], rounds: u32) -> Vec<u8> {
        crate::targets::host::init().expect("native target");
        let context = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(ir().as_bytes(), "masks");
        let module = context.create_module_from_ir(buf).expect("parses");
        if widen {
            assert!(widen_masks(&context, &module) > 0, "masks to rewrite");
            module.verify().unwrap_or_else(|e| panic!("verifies after the rewrite: {e}\n{}", module.print_to_string()));
            let text = module.print_to_string().to_string();
            for op in [
                "phi <32 x i1>",
                "xor <32 x i1>",
                "and <32 x i1>",
                "select i1 %sc, <32 x i1>",
                "call i1 @llvm.vector.reduce.and.v32i1(",
                "icmp eq i32 %b2",
            ] {
                assert!(!text.contains(op), "`{op}` left:\n{text}");
            }
        }
        let ee = module.create_jit_execution_engine(OptimizationLevel::Default).expect("jit");
        let mut out = vec![0u8; 272];
        // SAFETY: `f` has the signature of `Kernel`; it reads 128 bytes at
        // each of `a` and `b` and writes 271 bytes of `out`.
        unsafe {
            let f = ee.get_function::<Kernel>("f").expect("f");
            f.call(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), rounds);
        }
        out
    }

    #[test]
    fn widened_masks_compute_what_the_narrow_ones_do() {
        let mut seed = 0x2545_f491u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed % 64
        };
        for rounds in 0..6 {
            let a: [u32; 32] = std::array::from_fn(|_| next());
            let b: [u32; 32] = std::array::from_fn(|_| next());
            assert_eq!(run(true, &a, &b, rounds), run(false, &a, &b, rounds), "{rounds} rounds");
        }
        // Every lane set, then none: the reductions' other answers.
        let a: [u32; 32] = std::array::from_fn(|i| i as u32);
        let b: [u32; 32] = std::array::from_fn(|i| i as u32 + 1);
        let full = run(true, &a, &b, 0);
        assert_eq!(&full[266..271], &[1, 0, 1, 0, 1], "every lane set");
        assert_eq!(full, run(false, &a, &b, 0));
        let none = run(true, &a, &a, 0);
        assert_eq!(&none[266..271], &[0, 1, 0, 1, 0], "no lane set");
        assert_eq!(none, run(false, &a, &a, 0));
    }
}
