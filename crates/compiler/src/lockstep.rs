//! Whether the lanes of a warp can observe each other's memory effects:
//! the analysis behind the choice between running a kernel thread by
//! thread and running it as 32-lane warps (`warp::warp_capable`).
//!
//! On a GPU the lanes of a converged warp execute each instruction
//! together: a value one lane stores is there for every other lane of the
//! warp at the next instruction, and a lane's load sees nothing the others
//! store after it. A great deal of CUDA code relies on that without any
//! barrier (warp-synchronous reductions over `volatile` shared memory,
//! transposes through a shared tile, values exchanged through global
//! memory). Warp mode keeps it by construction: every instruction runs for
//! all lanes before the next one starts. Thread by thread (the fast path:
//! each thread runs to its end before the next one starts) does not: lane
//! 1 sees everything lane 0 stored in the whole kernel and nothing lane 2
//! will store. The two orders give the same results exactly when no lane
//! reads or overwrites a location another lane of its warp writes; this
//! module decides, from the PTX alone and conservatively, when that is so.
//!
//! # The rule
//!
//! A kernel is [`Verdict::Independent`] when, in its body and in every
//! function it can reach (calls, indirect calls):
//!
//! 1. nothing touches shared memory: no instruction has a `.shared` state
//!    space (loads, stores, atomics, `cvta`, `cp.async`, `mbarrier`,
//!    `ldmatrix`, `mapa`...) and no operand names a `.shared` variable
//!    (which is the only way to form a generic address into the block's
//!    shared memory);
//! 2. no instruction has memory effects the analysis does not model
//!    (surfaces, bulk and tensor copies, `multimem`, `discard`, ...);
//! 3. for every instruction `W` that writes global or generic memory (`st`,
//!    `red`, `atom`) and every instruction `X` that reads it (`ld` and
//!    `ldu` of global or generic memory other than the read-only forms,
//!    `atom`) or writes it, the pair cannot order differently between the
//!    two executions:
//!    - `W` and `X` are both `red` with the same commutative integer
//!      operation and type (`add`, `and`, `or`, `xor`, `min`, `max`): no
//!      lane sees a value, and the final memory does not depend on the
//!      order; or
//!    - `X` is `W` itself, executed at most once per thread (in the
//!      kernel's body, outside every loop): its lanes then run it in lane
//!      order either way, which is an order the GPU's single instruction
//!      may take too.
//!
//! Read-only loads never see another lane's store: `ld.const`,
//! `ld.param`, `ld.local` (a thread's own memory), `ld.global.nc` and
//! `ldu` (the program promises the data does not change during the
//! kernel), texture fetches.
//!
//! Everything else is [`Verdict::Exchanges`], with the instruction (and
//! the other one of the pair) that made it so. The analysis makes no
//! assumption about where pointers point: two pointer parameters may name
//! overlapping memory, so a load through one may read what a store through
//! the other writes, and a kernel that loads and stores global memory is
//! `Exchanges` even when each thread touches only its own element.
//!
//! Invariants (tests below): the verdict depends on the PTX text only;
//! adding an instruction never turns `Exchanges` into `Independent`;
//! `Independent` implies that running the kernel thread by thread in any
//! order of threads gives the memory contents and values of running it
//! as converged warps in lockstep.

use crate::layout::{Analysis, ItemId};
use ptx::ast::*;
use std::fmt::Write;

/// An instruction of the module: the function (item index) and statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub item: ItemId,
    pub statement: usize,
}

/// What the analysis concludes about a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Thread by thread gives the results of converged warps; the text
    /// says why.
    Independent(&'static str),
    /// Thread by thread gives the results of converged warps when the
    /// launch meets the conditions (checked when a block starts).
    IndependentIf(Conditions),
    /// Lanes of a warp may observe each other's memory effects.
    Exchanges(Exchange),
}

/// Run-time conditions under which a kernel's lanes cannot observe each
/// other's memory effects (see "Conditions" in the module's notes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// The kernel (item index) the conditions are about.
    pub kernel: ItemId,
    /// The block has one dimension (`%ntid.y` and `%ntid.z` are 1), so the
    /// lanes of a warp have consecutive `%tid.x`.
    pub one_dimensional: bool,
    /// Pairs of bases whose distance must keep the lanes apart.
    pub apart: Vec<Apart>,
}

/// `d = (a + a_offset) - (b + b_offset)`, the distance between the same
/// lane's addresses of two accesses through bases `a` and `b`, must be 0
/// (when `equal` allows it), or at least `min` in magnitude and at least
/// `min` away from `wrap` in magnitude (where lanes whose 32-bit index
/// wrapped would meet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apart {
    pub a: Base,
    pub a_offset: i64,
    pub b: Base,
    pub b_offset: i64,
    pub equal: bool,
    pub min: u64,
    pub wrap: u64,
}

impl Apart {
    /// Whether a distance `d` keeps the lanes apart.
    pub fn holds(&self, d: i64) -> bool {
        let a = d.unsigned_abs();
        (d == 0 && self.equal) || (a >= self.min && a.abs_diff(self.wrap) >= self.min)
    }
}

/// A warp-uniform 64-bit value an address is formed from, known when a
/// block starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Base {
    /// No base: the address is its index and offset.
    None,
    /// A 64-bit kernel parameter (`ld.param.u64` of it).
    Param(VarId),
    /// A module variable's address.
    Symbol(SymbolId),
}

/// Why a kernel's lanes may observe each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub kind: ExchangeKind,
    /// The instruction.
    pub at: Site,
    /// The other instruction of a pair, when there is one (and it is not
    /// `at` itself).
    pub with: Option<Site>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeKind {
    /// The instruction uses the block's shared memory.
    SharedMemory,
    /// The instruction has memory effects the analysis does not model.
    Unmodelled,
    /// A write another lane's access (`with`) may see or overwrite.
    GlobalPair,
    /// A write or atomic that may run more than once per thread: another
    /// lane's instance of it may come between two of this lane's.
    RepeatedWrite,
}

impl Verdict {
    /// Independent without conditions.
    pub fn independent(&self) -> bool {
        matches!(self, Verdict::Independent(_))
    }

    /// The verdict in words, with source positions (`src` is the module's
    /// text).
    pub fn explain(&self, m: &Module, src: &str) -> String {
        match self {
            Verdict::Independent(why) => (*why).to_string(),
            Verdict::IndependentIf(c) => format!("no lane can see or overwrite what another lane of its warp stores {}", c.explain(m)),
            Verdict::Exchanges(e) => {
                let lines = ptx::LineIndex::new(src);
                let at = describe_site(m, &lines, e.at);
                match (e.kind, e.with) {
                    (ExchangeKind::SharedMemory, _) => {
                        format!("{at} uses shared memory, which the lanes of a warp may exchange values through")
                    }
                    (ExchangeKind::Unmodelled, _) => format!("{at} has memory effects the lockstep analysis does not model"),
                    (ExchangeKind::RepeatedWrite, _) => {
                        format!("{at} writes global memory and may run more than once per thread, between another lane's runs of it")
                    }
                    (ExchangeKind::GlobalPair, Some(w)) => {
                        let other = describe_site(m, &lines, w);
                        format!("{at} may write global memory that {other} of another lane of the warp accesses")
                    }
                    (ExchangeKind::GlobalPair, None) => format!("{at} may write global memory another lane accesses"),
                }
            }
        }
    }
}

impl Conditions {
    /// The conditions in words.
    pub fn explain(&self, m: &Module) -> String {
        let mut parts = Vec::new();
        if self.one_dimensional {
            parts.push("the block has one dimension".to_string());
        }
        for ap in &self.apart {
            let name = |b: Base, off: i64| {
                let n = match b {
                    Base::None => "0".to_string(),
                    Base::Param(v) => match m.items.get(self.kernel as usize) {
                        Some(Item::Function(f)) if (v as usize) < f.vars.len() => f.var(v).name.to_string(),
                        _ => format!("parameter {v}"),
                    },
                    Base::Symbol(s) => m.symbols.get(s as usize).map_or_else(|| format!("symbol {s}"), |sym| sym.name.to_string()),
                };
                if off == 0 {
                    format!("`{n}`")
                } else {
                    format!("`{n}{off:+}`")
                }
            };
            let (a, b) = (name(ap.a, ap.a_offset), name(ap.b, ap.b_offset));
            if ap.equal {
                parts.push(format!("{a} and {b} are equal or at least {} bytes apart", ap.min));
            } else {
                parts.push(format!("{a} and {b} are at least {} bytes apart", ap.min));
            }
        }
        format!("when {}", parts.join(" and "))
    }
}

fn describe_site(m: &Module, lines: &ptx::LineIndex, s: Site) -> String {
    let Some(Item::Function(f)) = m.items.get(s.item as usize) else { return "an instruction".into() };
    let Some(b) = &f.body else { return "an instruction".into() };
    let Some(Statement::Instruction(inst)) = b.statements.get(s.statement) else { return "an instruction".into() };
    let mut text = inst.op.as_str().to_string();
    for md in b.mods(inst) {
        let _ = match md {
            Modifier::Type(t) => write!(text, ".{t}"),
            Modifier::Space(sp) => write!(text, ".{sp}"),
            Modifier::Sem(sm) => write!(text, ".{sm}"),
            Modifier::Scope(sc) => write!(text, ".{sc}"),
            Modifier::Vec(n) => write!(text, ".v{n}"),
            Modifier::Flag(fl) => write!(text, ".{fl}"),
            _ => Ok(()),
        };
    }
    let (line, column) = lines.line_col(b.span(s.statement).start);
    format!("`{text}` at {line}:{column} (in `{}`)", f.name)
}

/// How an instruction touches memory, as far as the rule cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// No memory another thread can see, or read-only memory.
    None,
    /// The block's shared memory.
    Shared,
    /// Effects the analysis does not model.
    Unmodelled,
    /// Reads global or generic memory that may change during the kernel.
    Read,
    /// Writes global or generic memory; `commutes` names the operation
    /// and type of a `red` whose order does not matter.
    Write { reads: bool, commutes: Option<(Flag, Type)> },
}

fn is_shared(s: StateSpace) -> bool {
    matches!(s, StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster)
}

/// Whether an operand names a `.shared` variable (of the function or of
/// the module).
fn names_shared(m: &Module, f: &Function, b: &Body, op: &Operand) -> bool {
    match *op {
        Operand::Var(v) | Operand::AddrVar(v, _) | Operand::VarOffset(v, _) => f.vars.get(v as usize).is_some_and(|d| is_shared(d.space)),
        Operand::Global(s) | Operand::AddrGlobal(s, _) | Operand::GlobalOffset(s, _) => {
            m.symbols.get(s as usize).is_some_and(|sym| sym.kind == SymbolKind::Variable)
                && m.variable(s).is_some_and(|v| is_shared(v.decl.space))
        }
        Operand::Vector(l) | Operand::Paren(l) | Operand::Bracket(l) | Operand::VectorPred(l, _) => {
            b.list(l).iter().any(|o| names_shared(m, f, b, o))
        }
        _ => false,
    }
}

/// The integer `red` operations whose order does not change the result.
fn commuting(b: &Body, inst: &Instruction) -> Option<(Flag, Type)> {
    let t = inst.ty(b)?;
    if t.is_float() || inst.vector(b).is_some() {
        return None;
    }
    let op = inst.flags(b).find(|f| matches!(f, Flag::AddOp | Flag::And | Flag::Or | Flag::Xor | Flag::MinOp | Flag::MaxOp))?;
    Some((op, t))
}

fn effect(m: &Module, f: &Function, b: &Body, inst: &Instruction) -> Effect {
    if inst.spaces(b).any(is_shared) || b.args(inst).iter().any(|a| names_shared(m, f, b, a)) {
        return Effect::Shared;
    }
    let global = || matches!(inst.space(b), None | Some(StateSpace::Global));
    use Opcode::*;
    match inst.op {
        // `.nc`: read-only for the kernel's lifetime.
        Ld if global() && !inst.has(b, Flag::Nc) => Effect::Read,
        Ld | Ldu => Effect::None,
        St if global() => Effect::Write { reads: false, commutes: None },
        St => Effect::None,
        Red if global() => Effect::Write { reads: false, commutes: commuting(b, inst) },
        Atom if global() => Effect::Write { reads: true, commutes: None },
        Red | Atom => Effect::Unmodelled,
        // The matrix forms read and write through their own addresses;
        // they are warp collectives, which run as warps anyway.
        Wmma if !inst.has(b, Flag::MmaOp) => Effect::Unmodelled,
        Cp | Suld | Sust | Sured | Multimem | Tensormap | Tcgen05 | Wgmma | Discard | Clusterlaunchcontrol | Mbarrier | Ldmatrix
        | Stmatrix | Mapa | Getctarank => Effect::Unmodelled,
        _ => Effect::None,
    }
}

/// Statements of a body that may run more than once per call: those
/// inside a loop, i.e. between the target of a backward branch and the
/// branch (every cycle of the control flow contains such a range), or
/// every statement if the body has an indirect branch.
fn repeated(b: &Body) -> Vec<bool> {
    let n = b.statements.len();
    let mut label_at = std::collections::HashMap::new();
    for (i, s) in b.statements.iter().enumerate() {
        if let Statement::Label(l) = s {
            label_at.insert(*l, i);
        }
    }
    let mut out = vec![false; n];
    for (i, s) in b.statements.iter().enumerate() {
        let Statement::Instruction(inst) = s else { continue };
        match inst.op {
            Opcode::Brx => return vec![true; n],
            Opcode::Bra => {
                if let Some(Operand::Label(l)) = b.args(inst).first() {
                    if let Some(&t) = label_at.get(l) {
                        if t <= i {
                            out[t..=i].iter_mut().for_each(|x| *x = true);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

struct Access {
    at: Site,
    effect: Effect,
    /// Runs at most once per thread.
    once: bool,
    /// Where each lane's access lies, if the kernel's own code forms the
    /// address in a way [`Forms`] follows; and the bytes accessed.
    form: Option<Form>,
    bytes: u64,
}

/// A lane's address: `base + scale * widen(index) + offset`, where `index`
/// is a 32-bit register holding a warp-uniform value plus `%tid.x`,
/// widened to 64 bits with (`signed`) or without sign extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Form {
    pub base: Base,
    pub index: Option<Index>,
    pub offset: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Index {
    pub reg: RegId,
    pub signed: bool,
    pub scale: i64,
}

/// Scales beyond this are not followed (products must not overflow).
const MAX_SCALE: i64 = 1 << 20;

/// The forms of a kernel body's registers, from their definitions. Only
/// registers written by exactly one unguarded instruction are followed:
/// such a register holds, wherever a lane reads it, the value that one
/// instruction computed from its operands, so equal registers mean equal
/// values (a register whose only write reads itself, a loop counter, is
/// neither uniform nor an index: its value changes).
struct Forms<'a> {
    f: &'a Function<'a>,
    b: &'a Body<'a>,
    m: &'a Module<'a>,
    /// The one unguarded write of each register, if it has one.
    def: Vec<Option<usize>>,
    uniform: std::collections::HashMap<RegId, bool>,
    lane: std::collections::HashMap<RegId, bool>,
    forms: std::collections::HashMap<RegId, Option<Form>>,
    visiting: std::collections::HashSet<(u8, RegId)>,
}

impl<'a> Forms<'a> {
    fn new(m: &'a Module<'a>, f: &'a Function<'a>, b: &'a Body<'a>) -> Forms<'a> {
        let mut count = vec![0u32; b.regs.len()];
        let mut def = vec![None; b.regs.len()];
        let mut regs = Vec::new();
        for (i, s) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = s else { continue };
            if !crate::warp::writes_first(b, inst) {
                continue;
            }
            let Some(&d) = b.args(inst).first() else { continue };
            regs.clear();
            crate::warp::operand_registers(b, d, &mut regs);
            for &r in &regs {
                if let Some(c) = count.get_mut(r as usize) {
                    // A guarded write leaves some lanes' old value.
                    *c += if inst.guard.is_some() { 2 } else { 1 };
                    def[r as usize] = Some(i);
                }
            }
        }
        for (r, c) in count.iter().enumerate() {
            if *c != 1 {
                def[r] = None;
            }
        }
        Forms {
            f,
            b,
            m,
            def,
            uniform: Default::default(),
            lane: Default::default(),
            forms: Default::default(),
            visiting: Default::default(),
        }
    }

    /// The single defining instruction of `r`, if its destination is `r`
    /// itself (not a vector or pair).
    fn def(&self, r: RegId) -> Option<&'a Instruction> {
        let i = (*self.def.get(r as usize)?)?;
        let Statement::Instruction(inst) = &self.b.statements[i] else { return None };
        matches!(self.b.args(inst).first(), Some(Operand::Reg(d)) if *d == r).then_some(inst)
    }

    fn guard(&mut self, kind: u8, r: RegId) -> bool {
        self.visiting.insert((kind, r))
    }

    /// The same value in every lane of a warp.
    fn uniform_operand(&mut self, op: &Operand) -> bool {
        match *op {
            Operand::Imm(_) | Operand::F32(_) | Operand::F64(_) => true,
            Operand::Special(s, _) => matches!(
                s,
                SpecialReg::Ntid
                    | SpecialReg::Ctaid
                    | SpecialReg::Nctaid
                    | SpecialReg::Gridid
                    | SpecialReg::Envreg(_)
                    | SpecialReg::DynamicSmemSize
                    | SpecialReg::TotalSmemSize
            ),
            Operand::Reg(r) => self.uniform(r),
            Operand::Global(s) | Operand::GlobalOffset(s, _) => self.m.variable(s).is_some(),
            _ => false,
        }
    }

    fn uniform(&mut self, r: RegId) -> bool {
        if let Some(&u) = self.uniform.get(&r) {
            return u;
        }
        if !self.guard(0, r) {
            return false;
        }
        let u = match self.def(r) {
            Some(inst) => {
                use Opcode::*;
                let args = self.b.args(inst);
                match inst.op {
                    Ld => inst.space(self.b) == Some(StateSpace::Param) && self.f.kind == FunctionKind::Entry,
                    Mov | Add | Sub | Mul | Mad | Shl | Shr | And | Or | Xor | Not | Neg | Cvt | Cvta | Min | Max | Div | Rem => {
                        args[1..].iter().all(|a| self.uniform_operand(a))
                    }
                    _ => false,
                }
            }
            None => false,
        };
        self.uniform.insert(r, u);
        u
    }

    /// A 32-bit register equal to a warp-uniform value plus `%tid.x`.
    fn lane_index(&mut self, op: &Operand) -> bool {
        let Operand::Reg(r) = *op else { return false };
        if let Some(&l) = self.lane.get(&r) {
            return l;
        }
        if !self.guard(1, r) {
            return false;
        }
        let l = match self.def(r) {
            Some(inst) if inst.ty(self.b).is_some_and(|t| t.bits() == 32) => {
                let args = self.b.args(inst);
                match (inst.op, args) {
                    (Opcode::Mov, [_, Operand::Special(SpecialReg::Tid, 0)]) => true,
                    (Opcode::Mov, [_, a @ Operand::Reg(_)]) => self.lane_index(a),
                    (Opcode::Add, [_, a, b]) => {
                        (self.lane_index(a) && self.uniform_operand(b)) || (self.uniform_operand(a) && self.lane_index(b))
                    }
                    (Opcode::Mad, [_, a, b, c]) if inst.has(self.b, Flag::LoHalf) => {
                        self.uniform_operand(a) && self.uniform_operand(b) && self.lane_index(c)
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        self.lane.insert(r, l);
        l
    }

    fn operand_form(&mut self, op: &Operand) -> Option<Form> {
        match *op {
            Operand::Reg(r) => self.form(r),
            Operand::Imm(v) => Some(Form { base: Base::None, index: None, offset: v }),
            Operand::Global(s) if self.m.variable(s).is_some() => Some(Form { base: Base::Symbol(s), index: None, offset: 0 }),
            Operand::GlobalOffset(s, o) if self.m.variable(s).is_some() => Some(Form { base: Base::Symbol(s), index: None, offset: o }),
            _ => None,
        }
    }

    fn widened(&mut self, x: &Operand, signed: bool, scale: i64) -> Option<Form> {
        let Operand::Reg(reg) = *x else { return None };
        (self.lane_index(x) && scale != 0 && scale.abs() <= MAX_SCALE).then_some(Form {
            base: Base::None,
            index: Some(Index { reg, signed, scale }),
            offset: 0,
        })
    }

    fn sum(a: Form, b: Form) -> Option<Form> {
        let base = match (a.base, b.base) {
            (x, Base::None) | (Base::None, x) => x,
            _ => return None,
        };
        let index = match (a.index, b.index) {
            (x, None) | (None, x) => x,
            _ => return None,
        };
        Some(Form { base, index, offset: a.offset.checked_add(b.offset)? })
    }

    /// The form of a 64-bit register.
    fn form(&mut self, r: RegId) -> Option<Form> {
        if let Some(f) = self.forms.get(&r) {
            return *f;
        }
        if !self.guard(2, r) {
            return None;
        }
        let form = self.compute_form(r);
        self.forms.insert(r, form);
        form
    }

    fn compute_form(&mut self, r: RegId) -> Option<Form> {
        let inst = self.def(r)?;
        let b = self.b;
        let args = b.args(inst);
        let ty = inst.ty(b)?;
        let signed_src = |t: Type| t.is_signed();
        match (inst.op, args) {
            (Opcode::Ld, [_, Operand::AddrVar(v, 0)])
                if inst.space(b) == Some(StateSpace::Param)
                    && self.f.kind == FunctionKind::Entry
                    && self.f.params.contains(v)
                    && ty.bits() == 64 =>
            {
                Some(Form { base: Base::Param(*v), index: None, offset: 0 })
            }
            (Opcode::Mov, [_, a]) if ty.bits() == 64 => self.operand_form(a),
            // Generic and global addresses are the same on the host.
            (Opcode::Cvta, [_, a]) if inst.spaces(b).all(|s| s == StateSpace::Global) && ty.bits() == 64 => self.operand_form(a),
            (Opcode::Add, [_, a, c]) if ty.bits() == 64 => Forms::sum(self.operand_form(a)?, self.operand_form(c)?),
            (Opcode::Sub, [_, a, Operand::Imm(v)]) if ty.bits() == 64 => {
                let f = self.operand_form(a)?;
                Some(Form { offset: f.offset.checked_sub(*v)?, ..f })
            }
            (Opcode::Mul, [_, x, Operand::Imm(s)]) if inst.has(b, Flag::Wide) && ty.bits() == 32 => self.widened(x, signed_src(ty), *s),
            (Opcode::Mad, [_, x, Operand::Imm(s), c]) if inst.has(b, Flag::Wide) && ty.bits() == 32 => {
                Forms::sum(self.widened(x, signed_src(ty), *s)?, self.operand_form(c)?)
            }
            (Opcode::Cvt, [_, x]) if ty.bits() == 64 => {
                let src = inst.types(b).nth(1)?;
                (src.bits() == 32 && src.is_signed() == ty.is_signed()).then_some(())?;
                self.widened(x, src.is_signed(), 1)
            }
            (Opcode::Shl, [_, a, Operand::Imm(k)]) if ty.bits() == 64 && (0..=20).contains(k) => {
                let f = self.operand_form(a)?;
                let i = f.index?;
                (f.base == Base::None && f.offset == 0).then_some(())?;
                let scale = i.scale.checked_shl(*k as u32)?;
                (scale.abs() <= MAX_SCALE).then_some(Form { index: Some(Index { scale, ..i }), ..f })
            }
            (Opcode::Mul, [_, a, Operand::Imm(k)]) if ty.bits() == 64 && inst.has(b, Flag::LoHalf) => {
                let f = self.operand_form(a)?;
                let i = f.index?;
                (f.base == Base::None && f.offset == 0).then_some(())?;
                let scale = i.scale.checked_mul(*k)?;
                (scale != 0 && scale.abs() <= MAX_SCALE).then_some(Form { index: Some(Index { scale, ..i }), ..f })
            }
            _ => None,
        }
    }

    /// Where an access's address operand lies, and its size in bytes.
    fn access(&mut self, inst: &Instruction) -> Option<(Form, u64)> {
        let b = self.b;
        let args = b.args(inst);
        let (address, data) = match inst.op {
            Opcode::Ld | Opcode::Atom => (args.get(1)?, args.first()?),
            Opcode::St => (args.first()?, args.get(1)?),
            Opcode::Red => (args.first()?, args.get(1)?),
            _ => return None,
        };
        let n = match data {
            Operand::Vector(l) => b.list(*l).len() as u64,
            _ => 1,
        };
        let t = inst.ty(b)?;
        let bytes = (u64::from(t.bits()) / 8).max(1) * n;
        let form = match address.address()? {
            (AddrBase::Reg(r), off) => {
                let f = self.form(r)?;
                Form { offset: f.offset.checked_add(off)?, ..f }
            }
            (AddrBase::Global(s), off) if self.m.variable(s).is_some() => Form { base: Base::Symbol(s), index: None, offset: off },
            _ => return None,
        };
        Some((form, bytes))
    }
}

/// What keeps two accesses' lanes apart, when something does: nothing
/// needed, or a run-time condition, given that the lanes of a warp have
/// consecutive `%tid.x` when the accesses are indexed (`Some(true)` in the
/// second field).
fn apart(w: &Access, x: &Access) -> Option<(Option<Apart>, bool)> {
    let (fw, fx) = (w.form?, x.form?);
    let m = w.bytes.max(x.bytes);
    let indexed = match (fw.index, fx.index) {
        (Some(a), Some(b)) if a == b => true,
        (None, None) => false,
        _ => return None,
    };
    // With one index (consecutive %tid.x, so lanes differ by k in 1..31,
    // or by k +- 2^32 where the 32-bit value wraps between them; widened
    // values never differ by more), lane i's address minus lane j's is
    // d + scale * (i - j): never within m of 0 when d = 0 and |scale| >=
    // m, or when |d| is at least 31 |scale| + m away from both 0 and
    // |scale| 2^32. Without an index every lane accesses the same
    // address: apart when |d| >= m.
    let (equal, min, wrap) = match fw.index {
        Some(i) => (i.scale.unsigned_abs() >= m, 31 * i.scale.unsigned_abs() + m, i.scale.unsigned_abs() << 32),
        None => (false, m, 0),
    };
    if fw.base == fx.base {
        let d = fw.offset.checked_sub(fx.offset)?;
        let ok = Apart { a: fw.base, a_offset: 0, b: fx.base, b_offset: 0, equal, min, wrap }.holds(d);
        return ok.then_some((None, indexed));
    }
    // The condition is symmetric: one order of the two for each pair.
    let (a, b) = if (fw.base, fw.offset) <= (fx.base, fx.offset) { (fw, fx) } else { (fx, fw) };
    Some((Some(Apart { a: a.base, a_offset: a.offset, b: b.base, b_offset: b.offset, equal, min, wrap }), indexed))
}

/// The verdict for kernel `kernel` (an item index) of `m`.
pub fn analyse(m: &Module, a: &Analysis, kernel: ItemId) -> Verdict {
    let mut accesses = Vec::new();
    for item in a.reachable(kernel) {
        let Some(Item::Function(f)) = m.items.get(item as usize) else { continue };
        let Some(b) = &f.body else { continue };
        let rep = repeated(b);
        let mut forms = Forms::new(m, f, b);
        for (i, s) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = s else { continue };
            let at = Site { item, statement: i };
            match effect(m, f, b, inst) {
                Effect::None => {}
                Effect::Shared => return Verdict::Exchanges(Exchange { kind: ExchangeKind::SharedMemory, at, with: None }),
                Effect::Unmodelled => return Verdict::Exchanges(Exchange { kind: ExchangeKind::Unmodelled, at, with: None }),
                e => {
                    // Only the kernel's own registers are followed.
                    let (form, bytes) =
                        if item == kernel { forms.access(inst).map_or((None, 0), |(f, n)| (Some(f), n)) } else { (None, 0) };
                    accesses.push(Access { at, effect: e, once: item == kernel && !rep[i], form, bytes })
                }
            }
        }
    }
    if !accesses.iter().any(|x| matches!(x.effect, Effect::Write { .. })) {
        return Verdict::Independent("no shared memory, and nothing written to global memory");
    }
    let mut conditions = Conditions { kernel, ..Conditions::default() };
    for w in accesses.iter().filter(|x| matches!(x.effect, Effect::Write { .. })) {
        let Effect::Write { commutes: wc, .. } = w.effect else { continue };
        for x in &accesses {
            let harmless = if x.at == w.at {
                w.once || wc.is_some()
            } else {
                matches!(x.effect, Effect::Write { reads: false, commutes: Some(c) } if Some(c) == wc)
            };
            if harmless {
                continue;
            }
            match apart(w, x) {
                Some((need, indexed)) => {
                    conditions.one_dimensional |= indexed;
                    if let Some(ap) = need {
                        if !conditions.apart.contains(&ap) {
                            conditions.apart.push(ap);
                        }
                    }
                }
                None => {
                    let kind = if x.at == w.at { ExchangeKind::RepeatedWrite } else { ExchangeKind::GlobalPair };
                    let with = (x.at != w.at).then_some(x.at);
                    return Verdict::Exchanges(Exchange { kind, at: w.at, with });
                }
            }
        }
    }
    if !conditions.one_dimensional && conditions.apart.is_empty() {
        return Verdict::Independent("no shared memory, and no global memory a lane writes is read or written by another instruction");
    }
    Verdict::IndependentIf(conditions)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

    fn parse(body: &str) -> (String, ItemId) {
        let src = format!("{HEAD}{body}");
        let m = ptx::parse(&src).expect("test PTX parses");
        let k = m.items.iter().position(|it| matches!(it, Item::Function(f) if f.kind == FunctionKind::Entry)).expect("a kernel") as ItemId;
        (src, k)
    }

    /// The verdict for the first kernel of `body` (PTX after the header).
    fn verdict(body: &str) -> Verdict {
        let (src, k) = parse(body);
        let m = ptx::parse(&src).expect("test PTX parses");
        analyse(&m, &Analysis::new(&m), k)
    }

    /// A kernel with pointers `p` and `q`, `%r1` = `%tid.x`, `%rd4` =
    /// `p + 4 * tid` and `%rd5` = `q + 4 * tid`, then `lines`.
    fn kernel(lines: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 p, .param .u64 q)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<8>;\n\
             .reg .b64 %rd<16>;\nld.param.u64 %rd1, [p];\nld.param.u64 %rd2, [q];\nmov.u32 %r1, %tid.x;\n\
             mul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd1, %rd3;\nadd.s64 %rd5, %rd2, %rd3;\n{lines}\nret;\n}}\n"
        )
    }

    fn kind(v: &Verdict) -> Option<ExchangeKind> {
        match v {
            Verdict::Exchanges(e) => Some(e.kind),
            _ => None,
        }
    }

    fn conditions(v: &Verdict) -> Conditions {
        match v {
            Verdict::IndependentIf(c) => c.clone(),
            other => panic!("expected conditions, got {other:?}"),
        }
    }

    /// The parameters `p` and `q` of [`kernel`] (their variable ids).
    const P: Base = Base::Param(0);
    const Q: Base = Base::Param(1);

    #[test]
    fn read_only_kernels_and_single_stores_are_independent() {
        // Loads only.
        assert!(verdict(&kernel("ld.global.f32 %f1, [%rd4];\nld.f32 %f2, [%rd5];")).independent());
        // One store per thread, outside loops, whatever it reads through
        // read-only forms.
        assert!(verdict(&kernel(
            "ld.global.nc.f32 %f1, [%rd4];\nldu.global.f32 %f2, [%rd4+4];\nadd.f32 %f3, %f1, %f2;\nst.global.f32 [%rd5], %f3;"
        ))
        .independent());
        // The same atomic once per thread: lane order is one of the orders
        // the GPU's single instruction may take.
        assert!(verdict(&kernel("atom.global.add.u32 %r2, [%rd1], 1;")).independent());
        // Local and parameter memory are the thread's own.
        assert!(verdict(&kernel(
            ".local .align 4 .b8 buf[16];\nst.local.u32 [buf], %r1;\nld.local.u32 %r2, [buf];\nst.global.u32 [%rd4], %r2;"
        ))
        .independent());
    }

    #[test]
    fn commuting_reductions_are_independent() {
        let v = verdict(&kernel(
            "$L1:\nred.global.add.u32 [%rd1], 1;\nred.global.add.u32 [%rd2+8], %r1;\nadd.u32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 9;\n@%p1 bra $L1;",
        ));
        assert!(v.independent(), "{v:?}");
        // Different operations do not commute with each other.
        let v = verdict(&kernel("red.global.add.u32 [%rd1], 1;\nred.global.max.u32 [%rd1], %r1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // (Through two pointers: unless they are apart.)
        let c = conditions(&verdict(&kernel("red.global.add.u32 [%rd1], 1;\nred.global.max.u32 [%rd2], %r1;")));
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: false, min: 4, wrap: 0 }]);
        // Nor do float additions (rounding depends on the order).
        let v = verdict(&kernel("$L1:\nred.global.add.f32 [%rd1], 1.0;\nbra $L1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::RepeatedWrite));
    }

    #[test]
    fn own_elements_through_two_pointers_need_them_apart() {
        // saxpy: the load through `q` may read what another lane's store
        // through `p` writes unless the pointers are equal (each lane its
        // own element) or far enough apart; both lanes' addresses move by
        // 4 bytes per lane, so 31 * 4 + 4 bytes keep 32 lanes apart.
        let v =
            verdict(&kernel("ld.global.f32 %f1, [%rd5];\nld.global.f32 %f2, [%rd4];\nadd.f32 %f3, %f1, %f2;\nst.global.f32 [%rd4], %f3;"));
        let c = conditions(&v);
        assert!(c.one_dimensional);
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: true, min: 128, wrap: 4 << 32 }]);
        // Through one pointer, each lane its own element: no distance to
        // check, only that the lanes have consecutive %tid.x.
        let c = conditions(&verdict(&kernel("ld.global.f32 %f1, [%rd4];\nadd.f32 %f2, %f1, %f1;\nst.global.f32 [%rd4], %f2;")));
        assert!(c.one_dimensional && c.apart.is_empty());
        // Generic addressing and `cvta.to.global` are the same.
        let c = conditions(&verdict(&kernel(
            "cvta.to.global.u64 %rd6, %rd2;\nadd.s64 %rd7, %rd6, %rd3;\nld.u32 %r2, [%rd7+8];\nst.u32 [%rd4], %r2;",
        )));
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 8, equal: true, min: 128, wrap: 4 << 32 }]);
        // Vector accesses: 16 bytes per lane.
        let c = conditions(&verdict(&kernel(
            "mul.wide.u32 %rd6, %r1, 16;\nadd.s64 %rd7, %rd1, %rd6;\nadd.s64 %rd8, %rd2, %rd6;\nld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd8];\n\
             st.global.v4.u32 [%rd7], {%r2, %r3, %r4, %r5};",
        )));
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: true, min: 31 * 16 + 16, wrap: 16 << 32 }]);
    }

    #[test]
    fn distances_near_a_wrapped_lane_do_not_keep_lanes_apart() {
        let ap = Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: true, min: 128, wrap: 4 << 32 };
        for (d, ok) in [
            (0i64, true),
            (4, false),
            (-124, false),
            (128, true),
            (-128, true),
            (1 << 31, true),
            (1 << 33, true),
            ((4 << 32) - 128, true),
            ((4 << 32) - 127, false),
            (4 << 32, false),
            (-(4 << 32) + 60, false),
            ((4 << 32) + 128, true),
            (1 << 40, true),
        ] {
            assert_eq!(ap.holds(d), ok, "{d}");
        }
        // Every distance the check accepts keeps every pair of lanes whose
        // 32-bit indices differ by 1..31, wrapped or not, at least 4 bytes
        // apart.
        for d in [0i64, 128, 1000, (4 << 32) - 128, (4 << 32) + 128, -(4 << 32) - 128, 1 << 40] {
            assert!(ap.holds(d));
            for k in (-31i64..=31).filter(|&k| k != 0) {
                for wrapped in [k, k + (1 << 32), k - (1 << 32)] {
                    assert!((d + 4 * wrapped).unsigned_abs() >= 4, "d {d}, lanes {wrapped} apart");
                }
            }
        }
    }

    #[test]
    fn neighbours_through_one_pointer_exchange() {
        // An in-place stencil: lane i reads what lane i + 1 writes.
        let v = verdict(&kernel("ld.global.f32 %f1, [%rd4+4];\nst.global.f32 [%rd4], %f1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // Far enough apart within one pointer: known when compiled.
        let c = conditions(&verdict(&kernel("ld.global.f32 %f1, [%rd4+4096];\nst.global.f32 [%rd4], %f1;")));
        assert!(c.one_dimensional && c.apart.is_empty());
        // Elements smaller than the lanes' step overlap: 8-byte accesses 4
        // bytes apart.
        let v = verdict(&kernel("ld.global.u64 %rd9, [%rd4];\nst.global.u64 [%rd4], %rd9;"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
    }

    #[test]
    fn addresses_the_analysis_cannot_follow_exchange() {
        // Another lane's element (index ^ 1).
        let v = verdict(&kernel(
            "st.global.u32 [%rd4], %r1;\nxor.b32 %r2, %r1, 1;\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.u32 %r3, [%rd7];",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // An index loaded from memory.
        let v = verdict(&kernel(
            "ld.global.u32 %r2, [%rd5];\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nst.global.u32 [%rd7], %r1;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // A register written twice (here by a guarded write) is not followed.
        let v = verdict(&kernel(
            "setp.lt.u32 %p1, %r1, 4;\nmov.u64 %rd6, %rd4;\n@%p1 mov.u64 %rd6, %rd5;\nld.global.u32 %r2, [%rd6];\nst.global.u32 [%rd4], %r2;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // Every lane at one address: lanes overwrite each other's stores.
        let v = verdict(&kernel("st.global.u32 [%rd1], %r1;\nld.global.u32 %r2, [%rd1];"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // Two uniform addresses far enough apart never meet.
        assert!(verdict(&kernel("st.global.u32 [%rd1], %r1;\nld.global.u32 %r2, [%rd1+4];")).independent());
        // Volatile loads are loads.
        let v = verdict(&kernel("st.global.u32 [%rd4], %r1;\nld.volatile.global.u32 %r2, [%rd4+4];"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
    }

    #[test]
    fn lane_indices_are_a_uniform_value_plus_tid_x() {
        // blockIdx.x * blockDim.x + threadIdx.x, widened with its sign.
        let c = conditions(&verdict(&kernel(
            "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.s32 %r4, %r2, %r3, %r1;\nmul.wide.s32 %rd6, %r4, 4;\n\
             add.s64 %rd7, %rd1, %rd6;\nadd.s64 %rd8, %rd2, %rd6;\nld.global.f32 %f1, [%rd8];\nst.global.f32 [%rd7], %f1;",
        )));
        assert_eq!(c.apart.len(), 1);
        // Twice the thread index is not one lane per element.
        let v = verdict(&kernel(
            "shl.b32 %r2, %r1, 1;\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.f32 %f1, [%rd5];\nst.global.f32 [%rd7], %f1;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // %tid.y is not the lane.
        let v = verdict(&kernel(
            "mov.u32 %r2, %tid.y;\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.f32 %f1, [%rd7];\nst.global.f32 [%rd7], %f1;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // A loop counter is written by an instruction that reads it: not an index.
        let v = verdict(&kernel(
            "mov.u32 %r2, 0;\n$L1:\nadd.s32 %r3, %r1, %r2;\nmul.wide.u32 %rd6, %r3, 4;\nadd.s64 %rd7, %rd1, %rd6;\nst.global.u32 [%rd7], %r1;\n\
             add.s32 %r2, %r2, 32;\nsetp.lt.u32 %p1, %r2, 256;\n@%p1 bra $L1;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::RepeatedWrite));
    }

    #[test]
    fn a_store_in_a_loop_may_exchange_with_itself() {
        // The same address every iteration: each lane its own.
        let c = conditions(&verdict(&kernel(
            "$L1:\nst.global.u32 [%rd4], %r2;\nadd.u32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 9;\n@%p1 bra $L1;",
        )));
        assert!(c.one_dimensional && c.apart.is_empty());
        // Every lane's one address, repeatedly.
        let v = verdict(&kernel("$L1:\nst.global.u32 [%rd1], %r2;\nadd.u32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 9;\n@%p1 bra $L1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::RepeatedWrite));
        // Forward branches make no loop.
        let v = verdict(&kernel("setp.lt.u32 %p1, %r1, 9;\n@%p1 bra $L1;\nst.global.u32 [%rd1], %r1;\n$L1:"));
        assert!(v.independent(), "{v:?}");
    }

    #[test]
    fn shared_memory_in_any_form_may_exchange() {
        let shared = |lines: &str| kind(&verdict(&kernel(&format!(".shared .align 4 .b8 s[128];\n{lines}"))));
        assert_eq!(shared("st.shared.u32 [s], %r1;"), Some(ExchangeKind::SharedMemory));
        assert_eq!(shared("ld.shared.u32 %r2, [s];"), Some(ExchangeKind::SharedMemory));
        // A generic address formed from a shared variable.
        assert_eq!(shared("mov.u64 %rd6, s;\ncvta.shared.u64 %rd7, %rd6;\nld.u32 %r2, [%rd7];"), Some(ExchangeKind::SharedMemory));
        assert_eq!(shared("atom.shared.add.u32 %r2, [%rd4], 1;"), Some(ExchangeKind::SharedMemory));
        // Declared but unused: nothing to exchange through.
        assert_eq!(shared("ld.global.u32 %r2, [%rd4];"), None);
        // Module-level dynamic shared memory.
        let v = verdict(&format!(".extern .shared .align 16 .b8 dyn[];\n{}", kernel("mov.u64 %rd6, dyn;\nst.u32 [%rd6], %r1;")));
        assert_eq!(kind(&v), Some(ExchangeKind::SharedMemory));
    }

    #[test]
    fn called_functions_count_and_never_run_once() {
        let src = format!(
            ".func f(.param .b64 a)\n{{\n.reg .b64 %rd<3>;\nld.param.u64 %rd1, [a];\nst.global.u32 [%rd1], 0;\nret;\n}}\n{}",
            kernel("{\n.param .b64 arg;\nst.param.b64 [arg], %rd4;\ncall f, (arg);\n}")
        );
        assert_eq!(kind(&verdict(&src)), Some(ExchangeKind::RepeatedWrite));
        let src =
            format!(".func g()\n{{\n.reg .b32 %r<2>;\n.shared .align 4 .b32 t;\nst.shared.u32 [t], 1;\nret;\n}}\n{}", kernel("call g;"));
        assert_eq!(kind(&verdict(&src)), Some(ExchangeKind::SharedMemory));
    }

    #[test]
    fn unmodelled_memory_instructions_may_exchange() {
        let v = verdict(&kernel("sust.b.1d.b32.trap [%rd4, {%r1}], {%r1};"));
        assert_eq!(kind(&v), Some(ExchangeKind::Unmodelled));
    }

    #[test]
    fn adding_an_instruction_never_makes_a_kernel_independent() {
        let base = "ld.global.f32 %f1, [%rd4+4];\nst.global.f32 [%rd4], %f1;";
        assert_eq!(kind(&verdict(&kernel(base))), Some(ExchangeKind::GlobalPair));
        for extra in [
            "ld.global.nc.f32 %f2, [%rd5];",
            "red.global.add.u32 [%rd4], 1;",
            "st.local.u32 [%rd4], %r1;",
            "add.f32 %f2, %f1, %f1;",
            "ldu.global.f32 %f2, [%rd5];",
            "st.global.f32 [%rd5], %f1;",
            "ld.global.f32 %f2, [%rd4];",
        ] {
            assert!(matches!(verdict(&kernel(&format!("{base}\n{extra}"))), Verdict::Exchanges(_)), "{extra}");
            assert!(matches!(verdict(&kernel(&format!("{extra}\n{base}"))), Verdict::Exchanges(_)), "{extra}");
        }
        // Conditions only accumulate.
        let base = "ld.global.f32 %f1, [%rd5];\nst.global.f32 [%rd4], %f1;";
        let c0 = conditions(&verdict(&kernel(base)));
        for extra in ["ld.global.f32 %f2, [%rd5+512];", "st.global.f32 [%rd4+1024], %f1;"] {
            let c = conditions(&verdict(&kernel(&format!("{base}\n{extra}"))));
            assert!(c.one_dimensional && c0.apart.iter().all(|a| c.apart.contains(a)), "{extra}: {c:?}");
        }
    }

    #[test]
    fn explanations_name_the_instructions_and_positions() {
        let (src, k) = parse(&kernel("ld.global.f32 %f1, [%rd4+4];\nst.global.f32 [%rd4], %f1;"));
        let m = ptx::parse(&src).expect("parses");
        let text = analyse(&m, &Analysis::new(&m), k).explain(&m, &src);
        assert!(text.contains("`st.global.f32` at 17:1"), "{text}");
        assert!(text.contains("`ld.global.f32` at 16:1"), "{text}");
        let (src, k) = parse(&kernel("ld.global.f32 %f1, [%rd5];\nst.global.f32 [%rd4], %f1;"));
        let m = ptx::parse(&src).expect("parses");
        let text = analyse(&m, &Analysis::new(&m), k).explain(&m, &src);
        assert!(text.contains("one dimension") && text.contains("`p` and `q` are equal or at least 128 bytes apart"), "{text}");
    }
}
