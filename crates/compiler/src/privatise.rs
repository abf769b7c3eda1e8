//! Privatisation of add-only global atomics (CPU engine).
//!
//! `atomicAdd(&hist[data[i]], 1)` with an unused result, run by every lane
//! of a grid, is a locked read-modify-write per lane on a handful of cache
//! lines that the runners' cores fight over. When nothing else in the
//! launch can see those locations before the launch ends, the adds can be
//! gathered in a private table per runner (block after block) and applied
//! to memory with real atomics when the block ends: integer addition
//! commutes, so the memory holds the same sums, and no thread of the
//! launch can tell when they arrived.
//!
//! What qualifies ([`plan`]):
//! - a candidate is an integer `atom.add`/`red.add` (`.u32`, `.s32`,
//!   `.u64`) on global or generic memory whose result register no other
//!   instruction names (so nothing reads the old value), without `.acquire`/`.release`/`.acq_rel`/`.sc` and not of
//!   `.sys` scope; all candidates of a kernel have one width (adds of two
//!   widths to overlapping bytes do not commute);
//! - the kernel has no calls, indirect branches, fences (`membar`,
//!   `fence`), ordered accesses, or instructions whose memory effects are
//!   not modelled here (textures, surfaces, bulk and asynchronous copies,
//!   `mbarrier`, ...): each could make the delayed adds observable;
//! - every candidate's address, and the address of every other access of
//!   global or generic memory (loads, stores, other atomics), is a
//!   computation [`Val`] this module follows: kernel parameters, launch
//!   values, constants, ring operations, widenings, loaded bytes and
//!   halfwords (`[0, 255]`), masks, unknown 32-bit values (their whole
//!   range) and loop counters bounded by their loop's comparison.
//!
//! Then at launch [`Guard::holds`] computes, with the launch's parameter
//! values and extents, the bytes each candidate may touch and the bytes
//! each other access may touch over the whole launch, and privatises only
//! when no other access can reach a byte a candidate can. A launch it
//! cannot prove that for (the same kernel called with overlapping
//! buffers) runs the atomics on memory, as before; the choice is a table
//! pointer in the block context (`cpu_abi::BlockCtx::private_adds`), null
//! for such a launch.
//!
//! Loop counters: a register with one initial write and one step `r = r +
//! s` is below `n` where the access reads it when every way into the
//! access's straight-line code (the fall-through from before its label,
//! every branch to the label) passes a comparison `r < n` (`setp` on the
//! register, in the same straight-line code as the branch, neither written
//! in between) and nothing writes `r` from the label to the access. For an
//! unsigned comparison that bounds the register in `[0, n)`. For a signed
//! one the step must also run only below the bound (its own straight-line
//! code guarded the same way), the step be non-negative, the initial value
//! fit the signed range and `n + step` not pass it: then the exact values
//! never wrap and lie in `[init, n)` at the access.
//!
//! Warp mode: an add whose address is a base plus an index loaded just
//! before ([`LoadedIndex`]) is made lane by lane from the load's
//! addresses for whole warps whose load read consecutive elements
//! (`warp_loaded_add_helper`), byte indices through the table's window
//! (`warp_window_add_helper`, `cpu_abi::PrivateAdds`); other warps, and
//! every other add, take the vector of the lanes' addresses
//! (`warp_add_helper`).
//!
//! Checked runs (`Options::memcheck`) keep every atomic as it is, so the
//! checking tools see each access where it happens.

use crate::lockstep::{is_shared, names_shared, ring_range, Launch, Ring};
use ptx::ast::*;

/// One step of a value's computation, in postfix order, over exact
/// integers: leaves push an interval, operations pop their operands. A
/// register holds its computation's exact value modulo 2^bits, so ring
/// operations need no range; the operations that read a register as an
/// integer ([`Val::Wide`], [`Val::Counter`], [`Val::Read`]) check that the
/// interval fits what they read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Val {
    Const(i64),
    /// The kernel parameter at byte offset `at`, `bytes` (4 or 8) wide.
    Param {
        at: u32,
        bytes: u8,
        signed: bool,
    },
    /// A launch value and its dimension.
    Special(Launch, u8),
    /// Some value in `[lo, hi]` (a loaded byte, an unknown register).
    Within(i64, i64),
    Add,
    Sub,
    Mul,
    /// A 32-bit register widened to 64 bits: its exact value when that
    /// fits the range the widening reads, else any value of that range.
    Wide {
        signed: bool,
    },
    /// A `bits`-wide register read as signed or unsigned: the exact value
    /// shifted by a multiple of 2^bits into that range; fails when the
    /// interval does not map as a whole.
    Read {
        bits: u8,
        signed: bool,
    },
    /// A loop counter where an access reads it: pops the bound, the step
    /// and the initial value (see the module's notes).
    Counter {
        bits: u8,
        signed: bool,
    },
}

/// Bytes an access may touch over a launch: `[address, address + bytes)`
/// for every value of its address computation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    pub address: Vec<Val>,
    pub bytes: u64,
}

/// The launch condition of a kernel's privatised atomics: no byte of a
/// target may be a byte of another access.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guard {
    pub targets: Vec<Region>,
    pub others: Vec<Region>,
}

/// A kernel's privatised atomics (statement indices of its body) and the
/// condition under which a launch may privatise them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub sites: Vec<usize>,
    pub bytes: u32,
    pub guard: Guard,
    /// The sites whose address is a base plus an index loaded just
    /// before (by statement), for warp mode's lane-by-lane adds.
    pub loaded: Vec<(usize, LoadedIndex)>,
}

/// A privatised add addressed as `base + (widen(index) << shift) +
/// offset`, the index read by a load in the same straight run of
/// instructions (`atomicAdd(&hist[data[i]], 1)`: `ld.global.u8 %r5,
/// [%rd14]; mul.wide.u32 %rd15, %r5, 4; add.s64 %rd16, %rd5, %rd15; atom
/// [%rd16]`). Warp mode can then have each lane load its index and form
/// its address where its add needs it, instead of the warp building a
/// vector of 32 addresses and each lane extracting its own.
///
/// Invariant (what [`Cx::loaded_index`] checks): at the atomic, the
/// load's address register and `base` hold what they held for the load
/// and the `add` (nothing writes them in between), nothing in between
/// writes memory, orders it or leaves the run (the same load there reads
/// the same bytes, as the warp's own lanes cannot write them in between
/// and another runner's concurrent store would be a race the program
/// already has), and nothing but the next link reads the index, the
/// scaled index or the sum (no instruction anywhere else names them), so
/// the value the warp loaded is not needed for anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadedIndex {
    /// The load's statement and type (its value extended to 32 bits by
    /// the type's signedness, as it writes the index register).
    pub load_at: usize,
    pub load: Type,
    /// `mul.wide.s32` (sign-extending the index) rather than `.u32`.
    pub widen_signed: bool,
    pub shift: u32,
    /// The 64-bit register holding the base.
    pub base: RegId,
    /// The atomic's address offset.
    pub offset: i64,
}

/// What the lowering needs of a kernel's [`Plan`]: its sites, and those
/// with a [`LoadedIndex`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sites {
    pub sites: Vec<usize>,
    pub loaded: Vec<(usize, LoadedIndex)>,
}

/// Magnitude beyond which an interval is not computed.
const BOUND: i128 = 1 << 100;

/// The interval of `ops`' exact value for a launch, or `None` when an
/// operand is unknown or a reading check fails.
pub fn value_range(ops: &[Val], param: &dyn Fn(u32, u8, bool) -> Option<i128>, grid: [u32; 3], block: [u32; 3]) -> Option<(i128, i128)> {
    let mut stack: Vec<(i128, i128)> = Vec::with_capacity(8);
    for op in ops {
        let v = match op {
            Val::Const(c) => (i128::from(*c), i128::from(*c)),
            Val::Param { at, bytes, signed } => {
                let x = param(*at, *bytes, *signed)?;
                (x, x)
            }
            Val::Within(lo, hi) => (i128::from(*lo), i128::from(*hi)),
            Val::Special(l, d) => crate::lockstep::launch_range(*l, *d, grid, block)?,
            Val::Add | Val::Sub | Val::Mul => {
                let y = stack.pop()?;
                let x = stack.pop()?;
                let ring = match op {
                    Val::Add => Ring::Add,
                    Val::Sub => Ring::Sub,
                    _ => Ring::Mul,
                };
                ring_range(ring, x, y)?
            }
            Val::Wide { signed } => {
                let x = stack.pop()?;
                read(x, 32, *signed).unwrap_or(if *signed { (-(1 << 31), (1 << 31) - 1) } else { (0, (1 << 32) - 1) })
            }
            Val::Read { bits, signed } => read(stack.pop()?, u32::from(*bits), *signed)?,
            Val::Counter { bits, signed } => {
                let (n, s, i) = (stack.pop()?, stack.pop()?, stack.pop()?);
                let bits = u32::from(*bits);
                if *signed {
                    let half = 1i128 << (bits - 1);
                    let fits = |v: (i128, i128)| v.0 >= -half && v.1 < half;
                    (fits(i) && fits(n) && s.0 >= 0 && n.1 + s.1 <= half).then_some(())?;
                    (i.0, (n.1 - 1).max(i.0))
                } else {
                    (n.0 >= 0 && n.1 < 1i128 << bits).then_some(())?;
                    (0, (n.1 - 1).max(0))
                }
            }
        };
        if v.0 < -BOUND || v.1 > BOUND {
            return None;
        }
        stack.push(v);
    }
    match stack[..] {
        [v] => Some(v),
        _ => None,
    }
}

/// `x` (exact values of a `bits`-wide register) as the register reads.
fn read(x: (i128, i128), bits: u32, signed: bool) -> Option<(i128, i128)> {
    let m = 1i128 << bits;
    let lo = if signed { -(m / 2) } else { 0 };
    // The shift k * 2^bits that moves x.0 into [lo, lo + m).
    let k = (x.0 - lo).div_euclid(m);
    let (a, b) = (x.0 - k * m, x.1 - k * m);
    (b < lo + m).then_some((a, b))
}

impl Region {
    /// The bytes `[start, end)` the access may touch, within `[0, 2^64)`
    /// (only then are the 64-bit registers the exact values).
    pub fn bytes_for(&self, param: &dyn Fn(u32, u8, bool) -> Option<i128>, grid: [u32; 3], block: [u32; 3]) -> Option<(i128, i128)> {
        let (lo, hi) = value_range(&self.address, param, grid, block)?;
        let end = hi + i128::from(self.bytes);
        (lo >= 0 && end <= 1 << 64).then_some((lo, end))
    }
}

impl Guard {
    /// Whether a launch with this parameter buffer and these extents may
    /// privatise: every target's bytes and every other access's bytes are
    /// known and do not overlap. Anything unknown fails (costing speed
    /// only).
    pub fn holds(&self, params: &[u8], grid: [u32; 3], block: [u32; 3]) -> bool {
        let param = |at: u32, bytes: u8, signed: bool| -> Option<i128> {
            let at = at as usize;
            let b = params.get(at..at.checked_add(usize::from(bytes))?)?;
            Some(match (b.len(), signed) {
                (4, false) => i128::from(u32::from_le_bytes(b.try_into().ok()?)),
                (4, true) => i128::from(i32::from_le_bytes(b.try_into().ok()?)),
                (8, false) => i128::from(u64::from_le_bytes(b.try_into().ok()?)),
                (8, true) => i128::from(i64::from_le_bytes(b.try_into().ok()?)),
                _ => return None,
            })
        };
        let mut targets = Vec::with_capacity(self.targets.len());
        for t in &self.targets {
            match t.bytes_for(&param, grid, block) {
                Some(r) => targets.push(r),
                None => return false,
            }
        }
        self.others.iter().all(|o| match o.bytes_for(&param, grid, block) {
            Some(o) => targets.iter().all(|t| t.1 <= o.0 || o.1 <= t.0),
            None => false,
        })
    }
}

/// Whether an instruction kind keeps a kernel from privatising: its
/// memory effects are not modelled, it orders memory, or it leaves the
/// kernel's own code.
fn disqualifies(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        Call | Brx
            | Fence
            | Membar
            | Tex
            | Tld4
            | Suld
            | Sust
            | Sured
            | Cp
            | Multimem
            | Tensormap
            | Tcgen05
            | Wgmma
            | Wmma
            | Discard
            | Clusterlaunchcontrol
            | Mbarrier
            | Ldmatrix
            | Stmatrix
            | Mapa
            | Getctarank
            | Griddepcontrol
            | Alloca
            | Stacksave
            | Stackrestore
    )
}

/// Registers an instruction writes.
fn writes(b: &Body, inst: &Instruction) -> Vec<RegId> {
    let mut out = Vec::new();
    b.defs(inst, &mut out);
    out
}

struct Cx<'a> {
    m: &'a Module<'a>,
    b: &'a Body<'a>,
    /// Each register's writing statements.
    defs: std::collections::HashMap<RegId, Vec<usize>>,
    /// Byte offset of each kernel parameter variable.
    params: std::collections::HashMap<VarId, u32>,
    /// How many instructions name each register (as an operand or a
    /// guard).
    mentions: std::collections::HashMap<RegId, u32>,
    /// The branches to each label.
    branches: std::collections::HashMap<LabelId, Vec<usize>>,
    /// Steps of value following left: a computation that would take more
    /// (a deep web of registers) is unknown.
    budget: std::cell::Cell<u32>,
}

/// Value-following steps one kernel's plan may take.
const BUDGET: u32 = 20_000;

const DEPTH: u32 = 24;

impl<'a> Cx<'a> {
    fn new(m: &'a Module<'a>, b: &'a Body<'a>, params: std::collections::HashMap<VarId, u32>) -> Cx<'a> {
        let mut defs: std::collections::HashMap<RegId, Vec<usize>> = std::collections::HashMap::new();
        let mut branches: std::collections::HashMap<LabelId, Vec<usize>> = std::collections::HashMap::new();
        let mut mentions: std::collections::HashMap<RegId, u32> = std::collections::HashMap::new();
        for (i, s) in b.statements.iter().enumerate() {
            if let Statement::Instruction(inst) = s {
                for r in writes(b, inst) {
                    defs.entry(r).or_default().push(i);
                }
                let mut named: Vec<RegId> = inst.guard.map(|g| g.reg).into_iter().collect();
                for &a in b.args(inst) {
                    b.operand_registers(a, &mut named);
                }
                named.sort_unstable();
                named.dedup();
                for r in named {
                    *mentions.entry(r).or_default() += 1;
                }
                if inst.op == Opcode::Bra {
                    if let Some(Operand::Label(l)) = b.args(inst).first() {
                        branches.entry(*l).or_default().push(i);
                    }
                }
            }
        }
        Cx { m, b, defs, params, mentions, branches, budget: std::cell::Cell::new(BUDGET) }
    }

    fn inst(&self, at: usize) -> Option<&'a Instruction> {
        match self.b.statements.get(at) {
            Some(Statement::Instruction(i)) => Some(i),
            _ => None,
        }
    }

    /// The exact value of a `bits`-wide operand read at statement `at`,
    /// or `None` when unknown. 32-bit and narrower values fall back to
    /// their whole range, which is always true.
    fn value(&self, op: &Operand, bits: u32, at: usize, depth: u32) -> Option<Vec<Val>> {
        let known = self.value_known(op, bits, at, depth);
        match known {
            Some(v) => Some(v),
            None if bits <= 32 => Some(vec![Val::Within(0, (1i64 << bits) - 1)]),
            None => None,
        }
    }

    fn value_known(&self, op: &Operand, bits: u32, at: usize, depth: u32) -> Option<Vec<Val>> {
        if depth > DEPTH || self.budget.get() == 0 {
            return None;
        }
        self.budget.set(self.budget.get() - 1);
        match *op {
            Operand::Imm(c) => Some(vec![Val::Const(c)]),
            Operand::Special(s, d) => {
                let l = match s {
                    SpecialReg::Tid => Launch::Tid,
                    SpecialReg::Ntid => Launch::Ntid,
                    SpecialReg::Ctaid => Launch::Ctaid,
                    SpecialReg::Nctaid => Launch::Nctaid,
                    _ => return None,
                };
                Some(vec![Val::Special(l, d)])
            }
            Operand::Reg(r) => {
                let defs = self.defs.get(&r)?;
                match defs[..] {
                    [w] => self.written(w, r, bits, depth + 1),
                    _ => self.counter(r, bits, at, depth + 1),
                }
            }
            _ => None,
        }
    }

    /// The value statement `w` writes to `r` (its only write).
    fn written(&self, w: usize, r: RegId, bits: u32, depth: u32) -> Option<Vec<Val>> {
        let b = self.b;
        let inst = self.inst(w)?;
        let args = b.args(inst);
        if args.first() != Some(&Operand::Reg(r)) {
            return None;
        }
        let t = inst.ty(b)?;
        let tb = t.bits();
        let v = |op: &Operand, bits: u32| self.value(op, bits, w, depth);
        let bin = |o: Val| -> Option<Vec<Val>> {
            let mut x = v(args.get(1)?, tb)?;
            x.extend(v(args.get(2)?, tb)?);
            x.push(o);
            Some(x)
        };
        // Only ring operations of the register's own width are followed:
        // their result is the exact value modulo 2^bits.
        let ring =
            tb == bits && matches!(t, Type::B32 | Type::U32 | Type::S32 | Type::B64 | Type::U64 | Type::S64) && !inst.has(b, Flag::Sat);
        use Opcode::*;
        match inst.op {
            Ld if inst.space(b) == Some(StateSpace::Param) && inst.vector(b).is_none() => {
                let Some(Operand::AddrVar(p, off)) = args.get(1) else { return None };
                let at = self.params.get(p)?.checked_add(u32::try_from(*off).ok()?)?;
                match (tb, bits) {
                    (64, 64) => Some(vec![Val::Param { at, bytes: 8, signed: false }]),
                    (32, 32) => Some(vec![Val::Param { at, bytes: 4, signed: t.is_signed() }]),
                    _ => None,
                }
            }
            Ld | Ldu if inst.vector(b).is_none() && tb <= 16 && bits <= 32 => {
                // A byte or halfword loaded into a wider register is
                // extended by the load's type.
                let h = 1i64 << tb;
                Some(vec![if t.is_signed() { Val::Within(-h / 2, h / 2 - 1) } else { Val::Within(0, h - 1) }])
            }
            Mov if ring || (tb == bits && matches!(t, Type::B32 | Type::B64 | Type::U32 | Type::U64 | Type::S32 | Type::S64)) => {
                v(args.get(1)?, bits)
            }
            Cvta if bits == 64 && inst.space(b) == Some(StateSpace::Global) => v(args.get(1)?, 64),
            Add if ring => bin(Val::Add),
            Sub if ring => bin(Val::Sub),
            Mul if ring && !inst.has(b, Flag::HiHalf) && !inst.has(b, Flag::Wide) => bin(Val::Mul),
            Mad if ring && !inst.has(b, Flag::HiHalf) && !inst.has(b, Flag::Wide) => {
                let mut x = bin(Val::Mul)?;
                x.extend(v(args.get(3)?, tb)?);
                x.push(Val::Add);
                Some(x)
            }
            Shl if tb == bits => {
                let Some(Operand::Imm(k)) = args.get(2) else { return None };
                if !(0..i64::from(bits)).contains(k) || *k > 62 {
                    return None;
                }
                let mut x = v(args.get(1)?, bits)?;
                x.extend([Val::Const(1 << k), Val::Mul]);
                Some(x)
            }
            And if tb == bits && bits <= 32 => {
                // A mask keeps the register in [0, mask].
                let mask = match (args.get(1), args.get(2)) {
                    (_, Some(Operand::Imm(k))) | (Some(Operand::Imm(k)), _) => *k & ((1i64 << bits) - 1),
                    _ => return None,
                };
                (mask < 1i64 << (bits - 1)).then(|| vec![Val::Within(0, mask)])
            }
            Mul | Mad if bits == 64 && tb == 32 && inst.has(b, Flag::Wide) => {
                let s = t.is_signed();
                let mut x = v(args.get(1)?, 32)?;
                x.push(Val::Wide { signed: s });
                x.extend(v(args.get(2)?, 32)?);
                x.extend([Val::Wide { signed: s }, Val::Mul]);
                if inst.op == Mad {
                    x.extend(v(args.get(3)?, 64)?);
                    x.push(Val::Add);
                }
                Some(x)
            }
            Cvt => {
                let mut ts = inst.types(b);
                let (dst, src) = (ts.next()?, ts.next()?);
                if dst.bits() != bits || src.is_float() || dst.is_float() || inst.rounding(b).is_some() || inst.has(b, Flag::Sat) {
                    return None;
                }
                match (dst.bits(), src.bits()) {
                    (64, 32) => {
                        let mut x = v(args.get(1)?, 32)?;
                        x.push(Val::Wide { signed: src.is_signed() });
                        Some(x)
                    }
                    (32, 8 | 16) => {
                        let h = 1i64 << src.bits();
                        Some(vec![if src.is_signed() { Val::Within(-h / 2, h / 2 - 1) } else { Val::Within(0, h - 1) }])
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A loop counter `r` where statement `at` reads it (module notes).
    fn counter(&self, r: RegId, bits: u32, at: usize, depth: u32) -> Option<Vec<Val>> {
        let b = self.b;
        let defs = self.defs.get(&r)?;
        let (mut init, mut step) = (None, None);
        for &w in defs {
            let inst = self.inst(w)?;
            let args = b.args(inst);
            let t = inst.ty(b)?;
            let is_step = inst.op == Opcode::Add
                && t.bits() == bits
                && !t.is_float()
                && args.first() == Some(&Operand::Reg(r))
                && (args.get(1) == Some(&Operand::Reg(r)) || args.get(2) == Some(&Operand::Reg(r)));
            if is_step {
                let other = if args.get(1) == Some(&Operand::Reg(r)) { args.get(2)? } else { args.get(1)? };
                if step.replace((w, self.value_known(other, bits, w, depth)?)).is_some() {
                    return None;
                }
            } else if init.replace(self.written(w, r, bits, depth)?).is_some() {
                return None;
            }
        }
        let ((w, s), i) = (step?, init?);
        let (n, signed) = self.bounded(r, bits, at, depth)?;
        if signed && self.bounded(r, bits, w, depth)? != (n.clone(), true) {
            return None;
        }
        let mut x = i;
        x.extend(s);
        x.extend(n);
        x.push(Val::Counter { bits: bits as u8, signed });
        Some(x)
    }

    /// The bound `n` (read as the comparison reads it) and signedness of
    /// a comparison `r < n` that every way into statement `at`'s
    /// straight-line code passes, with `r` unwritten from there to `at`.
    fn bounded(&self, r: RegId, bits: u32, at: usize, depth: u32) -> Option<(Vec<Val>, bool)> {
        let b = self.b;
        // Back to the label.
        let mut i = at;
        let label = loop {
            i = i.checked_sub(1)?;
            match &b.statements[i] {
                Statement::Label(l) => break *l,
                Statement::Instruction(inst) if writes(b, inst).contains(&r) => return None,
                _ => {}
            }
        };
        let mut found: Option<(Vec<Val>, bool)> = None;
        let mut agree = |g: (Vec<Val>, bool)| -> Option<()> {
            match &found {
                Some(f) if *f != g => None,
                Some(_) => Some(()),
                None => {
                    found = Some(g);
                    Some(())
                }
            }
        };
        // The fall-through into the label.
        let mut j = i;
        loop {
            j = j.checked_sub(1)?;
            match &b.statements[j] {
                Statement::Label(_) => return None,
                Statement::Instruction(inst) => {
                    let leaves = matches!(inst.op, Opcode::Bra | Opcode::Ret | Opcode::Exit);
                    if leaves && inst.guard.is_none() {
                        break; // no fall-through
                    }
                    if leaves {
                        // Falls through when the guard is false.
                        let g = inst.guard?;
                        agree(self.compare(r, bits, g.reg, !g.negate, j, depth)?)?;
                        break;
                    }
                    if writes(b, inst).contains(&r) {
                        return None;
                    }
                }
                _ => {}
            }
        }
        // Every branch to the label.
        for &k in self.branches.get(&label).map(Vec::as_slice).unwrap_or_default() {
            let Some(Statement::Instruction(inst)) = b.statements.get(k) else { return None };
            let g = inst.guard?;
            agree(self.compare(r, bits, g.reg, g.negate, k, depth)?)?;
        }
        found
    }

    /// For a branch at `at` on predicate `p`: the bound of `r < n` that
    /// holds on the way taken when `p` is `!ge` (`ge` false: `p` must say
    /// `r < n`; `ge` true: `p` must say `r >= n`).
    fn compare(&self, r: RegId, bits: u32, p: RegId, ge: bool, at: usize, depth: u32) -> Option<(Vec<Val>, bool)> {
        let b = self.b;
        let mut i = at;
        loop {
            i = i.checked_sub(1)?;
            match &b.statements[i] {
                Statement::Label(_) => return None,
                Statement::Instruction(inst) => {
                    let w = writes(b, inst);
                    if w.contains(&r) {
                        return None;
                    }
                    if !w.contains(&p) {
                        continue;
                    }
                    let args = b.args(inst);
                    if inst.op != Opcode::Setp || args.len() != 3 || args[0] != Operand::Reg(p) || inst.guard.is_some() {
                        return None;
                    }
                    let t = inst.ty(b)?;
                    if t.is_float() || t.bits() != bits {
                        return None;
                    }
                    let signed = t.is_signed();
                    let (x, y) = (&args[1], &args[2]);
                    let me = Operand::Reg(r);
                    // `r < n` as (r, n, lt) or (n, r, gt); `r >= n` as (r, n, ge) or (n, r, le).
                    let (n, says_lt) = match inst.cmp(b)? {
                        CmpOp::Lt | CmpOp::Lo if *x == me => (y, true),
                        CmpOp::Gt | CmpOp::Hi if *y == me => (x, true),
                        CmpOp::Ge | CmpOp::Hs if *x == me => (y, false),
                        CmpOp::Le | CmpOp::Ls if *y == me => (x, false),
                        _ => return None,
                    };
                    if signed && matches!(inst.cmp(b)?, CmpOp::Lo | CmpOp::Hi | CmpOp::Hs | CmpOp::Ls) {
                        return None;
                    }
                    if says_lt == ge {
                        return None;
                    }
                    let mut v = self.value_known(n, bits, i, depth)?;
                    v.push(Val::Read { bits: bits as u8, signed });
                    return Some((v, signed));
                }
                _ => {}
            }
        }
    }

    /// The [`LoadedIndex`] form of the candidate `inst` at statement
    /// `at`, when its address is one (see the type's invariant).
    fn loaded_index(&self, f: &Function, at: usize, inst: &Instruction) -> Option<LoadedIndex> {
        use crate::shared_index::{last_write, writes_memory};
        let b = self.b;
        let reg_bits = |r: RegId| Some(crate::lower::reg_ty(f.var(b.regs.get(r as usize)?.var).ty).bits());
        // Read by the next link only: named by its write and one reader.
        let single_use = |r: RegId| self.mentions.get(&r) == Some(&2) && self.defs.get(&r).is_some_and(|d| d.len() == 1);
        if inst.guard.is_some() {
            return None;
        }
        let args = b.args(inst);
        let address = if inst.op == Opcode::Red { args.first()? } else { args.get(1)? };
        let Operand::AddrReg(sum, offset) = *address else { return None };
        let sum_at = last_write(b, at, sum)?;
        let add = self.inst(sum_at)?;
        let (t, aargs) = (add.ty(b)?, b.args(add));
        if add.op != Opcode::Add || aargs.len() != 3 || t.is_float() || t.bits() != 64 || add.has(b, Flag::Sat) || add.has(b, Flag::Cc) {
            return None;
        }
        for (x, y) in [(aargs[1], aargs[2]), (aargs[2], aargs[1])] {
            let (Operand::Reg(base), Operand::Reg(scaled)) = (x, y) else { continue };
            if base == sum || base == scaled || reg_bits(base)? != 64 {
                continue;
            }
            let Some(scaled_at) = last_write(b, sum_at, scaled) else { continue };
            let Some(mul) = self.inst(scaled_at) else { continue };
            let (Some(mt), margs) = (mul.ty(b), b.args(mul)) else { continue };
            if mul.op != Opcode::Mul || !mul.has(b, Flag::Wide) || !matches!(mt, Type::U32 | Type::S32) || margs.len() != 3 {
                continue;
            }
            let (index, scale) = match (margs[1], margs[2]) {
                (Operand::Reg(r), Operand::Imm(c)) | (Operand::Imm(c), Operand::Reg(r)) => (r, c),
                _ => continue,
            };
            if !matches!(scale, 1 | 2 | 4 | 8) || reg_bits(index)? != 32 {
                continue;
            }
            let Some(load_at) = last_write(b, scaled_at, index) else { continue };
            let Some(ld) = self.inst(load_at) else { continue };
            let (Some(lt), largs) = (ld.ty(b), b.args(ld)) else { continue };
            let weak = matches!(ld.semantics(b), None | Some(Semantics::Weak)) && ld.cache_op(b) != Some(CacheOp::Cv);
            let space = matches!(ld.space(b), Some(StateSpace::Global | StateSpace::Const));
            if ld.op != Opcode::Ld || largs.len() != 2 || largs[0] != Operand::Reg(index) || ld.vector(b).is_some() {
                continue;
            }
            if !weak || !space || !lt.is_integer() || lt.bits() > 32 {
                continue;
            }
            let Operand::AddrReg(from, _) = largs[1] else { continue };
            if !(single_use(index) && single_use(scaled) && single_use(sum)) {
                continue;
            }
            let kept = (load_at + 1..at).all(|j| {
                self.inst(j).is_some_and(|i| {
                    let w = writes(b, i);
                    let changes_base = j > sum_at && w.contains(&base);
                    !(writes_memory(i.op) || w.contains(&from) || changes_base)
                })
            });
            if kept {
                return Some(LoadedIndex {
                    load_at,
                    load: lt,
                    widen_signed: mt.is_signed(),
                    shift: (scale as u64).trailing_zeros(),
                    base,
                    offset,
                });
            }
        }
        None
    }

    /// The address region of an address operand accessed `bytes` wide.
    fn region(&self, op: &Operand, bytes: u64, at: usize) -> Option<Region> {
        let mut address = match *op {
            Operand::AddrReg(r, off) => {
                let mut v = self.value_known(&Operand::Reg(r), 64, at, 0)?;
                v.extend([Val::Const(off), Val::Add]);
                v
            }
            Operand::AddrImm(a) => vec![Val::Const(a)],
            _ => return None,
        };
        address.shrink_to_fit();
        Some(Region { address, bytes })
    }
}

/// The privatisable atomics of kernel `f` and their launch condition, or
/// `None` when it has none or the kernel does something that keeps them
/// from being privatised (module notes).
pub fn plan(m: &Module, f: &Function) -> Option<Plan> {
    let b = f.body.as_ref()?;
    let (infos, _) = crate::layout::param_layout(f, &f.params);
    let params = f.params.iter().zip(&infos).map(|(v, p)| (*v, p.offset)).collect();
    // Candidates first (most kernels have none, and then nothing else is
    // looked at).
    let any = b
        .statements
        .iter()
        .any(|s| matches!(s, Statement::Instruction(inst) if matches!(inst.op, Opcode::Atom | Opcode::Red) && inst.has(b, Flag::AddOp)));
    if !any {
        return None;
    }
    let cx = Cx::new(m, b, params);
    let mut sites = Vec::new();
    let mut loaded = Vec::new();
    let mut width = None;
    let mut guard = Guard::default();
    for (i, s) in b.statements.iter().enumerate() {
        let Statement::Instruction(inst) = s else { continue };
        if disqualifies(inst.op) {
            return None;
        }
        if matches!(inst.semantics(b), Some(Semantics::Acquire | Semantics::Release | Semantics::AcqRel | Semantics::Sc | Semantics::Mmio))
        {
            return None;
        }
        let args = b.args(inst);
        if inst.spaces(b).any(is_shared) || args.iter().any(|a| names_shared(cx.m, f, b, a)) {
            continue;
        }
        let global = matches!(inst.space(b), None | Some(StateSpace::Global));
        use Opcode::*;
        let (addr, bytes) = match inst.op {
            Ld | Ldu | St if !global => continue,
            Ld | Ldu | St => {
                let t = inst.ty(b)?;
                let n = u64::from(inst.vector(b).unwrap_or(1).max(1));
                let addr = if inst.op == St { args.first()? } else { args.get(1)? };
                (addr, u64::from(t.size()) * n)
            }
            Atom | Red if !global => return None,
            Atom | Red => {
                let t = inst.ty(b)?;
                let is_red = inst.op == Red;
                let addr = if is_red { args.first()? } else { args.get(1)? };
                let candidate = inst.has(b, Flag::AddOp)
                    && matches!(t, Type::U32 | Type::S32 | Type::U64 | Type::S64)
                    && inst.vector(b).is_none()
                    && inst.scope(b) != Some(Scope::Sys)
                    && matches!(inst.semantics(b), None | Some(Semantics::Relaxed))
                    && (is_red
                        || matches!(args.first(), Some(Operand::Sink))
                        || matches!(args.first(), Some(Operand::Reg(d)) if cx.mentions.get(d) == Some(&1)));
                if candidate {
                    let region = cx.region(addr, u64::from(t.size()), i)?;
                    if *width.get_or_insert(t.size()) != t.size() {
                        return None;
                    }
                    sites.push(i);
                    if let Some(l) = cx.loaded_index(f, i, inst) {
                        loaded.push((i, l));
                    }
                    if !guard.targets.contains(&region) {
                        guard.targets.push(region);
                    }
                    continue;
                }
                (addr, u64::from(t.size()) * u64::from(inst.vector(b).unwrap_or(1).max(1)))
            }
            _ => continue,
        };
        let region = cx.region(addr, bytes, i)?;
        if !guard.others.contains(&region) {
            guard.others.push(region);
        }
    }
    (!sites.is_empty()).then(|| Plan { sites, bytes: width.unwrap_or(4), guard, loaded })
}

/// [`plan`] where the target and options allow privatising: the host CPU,
/// unchecked code.
pub fn plan_for(m: &Module, f: &Function, target: &crate::Target, opts: &crate::Options) -> Option<Plan> {
    (target.facts().private_adds && !opts.memcheck && f.kind == FunctionKind::Entry).then(|| plan(m, f)).flatten()
}

/// Adds [`add_helpers`]' helpers of `bits`-wide adds to the module and
/// returns their names.
pub(crate) fn register_helpers(cx: &mut crate::lower::ModuleCx, bits: u32) -> [String; 2] {
    let [(name, text), (inner, inner_text)] = add_helpers(bits);
    cx.declare("llvm.expect.i1", "declare i1 @llvm.expect.i1(i1, i1)");
    cx.helper(&inner, || inner_text);
    cx.helper(&name, || text);
    [name, inner]
}

/// [`plan_for`]'s sites, as the lowering reads them (none without a plan).
pub fn sites_for(m: &Module, f: &Function, target: &crate::Target, opts: &crate::Options) -> Sites {
    plan_for(m, f, target, opts).map(|p| Sites { sites: p.sites, loaded: p.loaded }).unwrap_or_default()
}

/// The IR helpers that add `v` (`iN`, N = `bits`) at `p`: into the table
/// `t` when there is one and `p` is aligned, else (and for the first add
/// of an address the table takes in, so that a bad address faults where
/// the atomic would) with an atomic add on memory. Both return 0 (the
/// atomic's result is unused). The first (name, text) takes a null `t`;
/// the second, for callers that tested it, does not: its hit path is a
/// slot's address, a compare and an add.
pub(crate) fn add_helpers(bits: u32) -> [(String, String); 2] {
    use crate::cpu_abi::{offsets, PRIVATE_SLOTS};
    let name = format!("__anycuda_private_add_i{bits}");
    let inner = format!("__anycuda_private_add_nn_i{bits}");
    let size = bits / 8;
    let (wide, key_bit) = if bits == 64 { ("add i64 %v, 0", 1) } else { ("zext i32 %v to i64", 0) };
    let outer = format!(
        "define internal i{bits} @{name}(ptr %t, ptr %p, i{bits} %v) alwaysinline {{
entry:
  %none = icmp eq ptr %t, null
  br i1 %none, label %mem, label %table
table:
  %r = call i{bits} @{inner}(ptr %t, ptr %p, i{bits} %v)
  ret i{bits} 0
mem:
  %x = atomicrmw add ptr %p, i{bits} %v monotonic, align {size}
  ret i{bits} 0
}}
"
    );
    // Keys are aligned addresses (a misaligned one never enters), so a
    // hit needs no alignment test: the slot is `(a >> 2) % SLOTS`, at
    // byte `((a << 2) & (SLOTS - 1) << 4)` of the slots.
    let text = format!(
        "define internal i{bits} @{inner}(ptr %t, ptr %p, i{bits} %v) alwaysinline {{
entry:
  %a = ptrtoint ptr %p to i64
  %key = or i64 %a, {key_bit}
  %a4 = shl i64 %a, 2
  %o16 = and i64 %a4, {slot_bytes_mask}
  %o = add i64 %o16, {slots}
  %slot = getelementptr i8, ptr %t, i64 %o
  %dp = getelementptr i8, ptr %slot, i64 8
  %k = load i64, ptr %slot, align 8
  %same = icmp eq i64 %k, %key
  %hit = call i1 @llvm.expect.i1(i1 %same, i1 true)
  br i1 %hit, label %add, label %miss
add:
  %d = load i64, ptr %dp, align 8
  %vz = {wide}
  %d1 = add i64 %d, %vz
  store i64 %d1, ptr %dp, align 8
  ret i{bits} 0
miss:
  %mis = and i64 %a, {mask}
  %odd = icmp ne i64 %mis, 0
  br i1 %odd, label %mem, label %check
check:
  %empty = icmp eq i64 %k, 0
  br i1 %empty, label %fresh, label %evict
fresh:
  %up = getelementptr i8, ptr %t, i64 {used}
  %u = load i32, ptr %up, align 4
  %u64 = zext i32 %u to i64
  %lb = shl i64 %u64, 1
  %lo = add i64 %lb, {list}
  %lp = getelementptr i8, ptr %t, i64 %lo
  %s64 = lshr i64 %o16, 4
  %st = trunc i64 %s64 to i16
  store i16 %st, ptr %lp, align 2
  %u1 = add i32 %u, 1
  store i32 %u1, ptr %up, align 4
  br label %take
evict:
  %od = load i64, ptr %dp, align 8
  %oa = and i64 %k, -2
  %op = inttoptr i64 %oa to ptr
  %o1 = and i64 %k, 1
  %w = icmp ne i64 %o1, 0
  br i1 %w, label %ev64, label %ev32
ev64:
  %x64 = atomicrmw add ptr %op, i64 %od monotonic, align 8
  br label %take
ev32:
  %od32 = trunc i64 %od to i32
  %x32 = atomicrmw add ptr %op, i32 %od32 monotonic, align 4
  br label %take
take:
  store i64 %key, ptr %slot, align 8
  store i64 0, ptr %dp, align 8
  br label %mem
mem:
  %r = atomicrmw add ptr %p, i{bits} %v monotonic, align {size}
  ret i{bits} 0
}}
",
        mask = size - 1,
        slot_bytes_mask = (PRIVATE_SLOTS - 1) << 4,
        slots = offsets::PRIVATE_SLOTS,
        used = offsets::PRIVATE_USED,
        list = offsets::PRIVATE_LIST,
    );
    [(name, outer), (inner, text)]
}

/// The warp-mode helper for a whole warp's adds addressed by loaded
/// indices (`LoadedIndex`; `load`: the load's element): lane `k` loads its
/// index at `%q + k * size`, extends it as the load and the widening do,
/// and adds its `%a` at `%base + (index << shift)` through the table
/// (`inner`, `add_helpers`' second).
pub(crate) fn warp_loaded_add_helper(bits: u32, form: &LoadedIndex, load: crate::ir::Ty, inner: &str) -> (String, String) {
    use std::fmt::Write;
    let w = crate::warp::W;
    let (l, size) = (load.name(), load.bits() / 8);
    let lext = if form.load.is_signed() { "sext" } else { "zext" };
    let wext = if form.widen_signed { "sext" } else { "zext" };
    let name = format!(
        "__anycuda_wprivate_add_i{bits}_ld{}{l}_{}x{}",
        if form.load.is_signed() { "s" } else { "u" },
        if form.widen_signed { "s" } else { "u" },
        1u32 << form.shift
    );
    let mut text = format!("define internal void @{name}(ptr %t, i64 %base, ptr %q, <{w} x i{bits}> %a) alwaysinline {{\nentry:\n");
    for k in 0..w {
        let _ = writeln!(text, "  %q{k} = getelementptr i8, ptr %q, i64 {}", k * size);
        let _ = writeln!(text, "  %l{k} = load {l}, ptr %q{k}, align 1");
        if load.bits() == 32 {
            let _ = writeln!(text, "  %x{k} = add i32 %l{k}, 0");
        } else {
            let _ = writeln!(text, "  %x{k} = {lext} {l} %l{k} to i32");
        }
        let _ = writeln!(text, "  %w{k} = {wext} i32 %x{k} to i64");
        let _ = writeln!(text, "  %o{k} = shl i64 %w{k}, {}", form.shift);
        let _ = writeln!(text, "  %s{k} = add i64 %base, %o{k}");
        let _ = writeln!(text, "  %p{k} = inttoptr i64 %s{k} to ptr");
        let _ = writeln!(text, "  %a{k} = extractelement <{w} x i{bits}> %a, i32 {k}");
        let _ = writeln!(text, "  %r{k} = call i{bits} @{inner}(ptr %t, ptr %p{k}, i{bits} %a{k})");
    }
    text.push_str("  ret void\n}\n");
    (name, text)
}

/// Whether [`warp_window_add_helper`] serves a [`LoadedIndex`] of
/// `bits`-wide adds: the index is a byte (so the window's 256 entries
/// cover it) and the step between entries a multiple of the add's size
/// (so an aligned base keeps every entry's address aligned).
pub(crate) fn window_serves(bits: u32, form: &LoadedIndex) -> bool {
    matches!(form.load, Type::U8 | Type::B8) && (1u32 << form.shift) >= bits / 8
}

/// The warp-mode helper for a whole warp's adds at an aligned `%base`
/// indexed by the bytes lane after lane at `%q` (a [`LoadedIndex`]
/// [`window_serves`]), through the table's window (`cpu_abi::PrivateAdds`):
/// moved to this base first if it is at another (making its pending adds,
/// `__anycuda_private_window_seat`); then each lane's add goes to its
/// byte's entry when an add on memory at that address has succeeded, and
/// otherwise to memory, after which the entry is taken. The hit path of
/// a lane: load its byte, test the entry's flag, add. Once all 256 entries
/// are taken (a block soon takes every byte value it reads), one test of
/// the count serves the warp and each lane loads its byte and adds
/// (`histogram` of the program suite: 21.2 -> 16.1 ms).
pub(crate) fn warp_window_add_helper(cx: &mut crate::lower::ModuleCx, bits: u32, form: &LoadedIndex) -> String {
    use crate::cpu_abi::offsets;
    use std::fmt::Write;
    let w = crate::warp::W;
    let seat = "__anycuda_private_window_seat";
    cx.helper(seat, || {
        format!(
            "define internal void @{seat}(ptr %t, i64 %key, i32 %shift) noinline {{
entry:
  %kp = getelementptr i8, ptr %t, i64 {key}
  %ok = load i64, ptr %kp, align 8
  %sp = getelementptr i8, ptr %t, i64 {shift}
  %os = load i32, ptr %sp, align 4
  %os64 = zext i32 %os to i64
  %up = getelementptr i8, ptr %t, i64 {used}
  %n = load i32, ptr %up, align 4
  %w = getelementptr i8, ptr %t, i64 {window}
  %tk = getelementptr i8, ptr %t, i64 {taken}
  %lst = getelementptr i8, ptr %t, i64 {list}
  %obase = and i64 %ok, -2
  %o1 = and i64 %ok, 1
  %wide = icmp ne i64 %o1, 0
  %none = icmp eq i32 %n, 0
  br i1 %none, label %set, label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %next]
  %iz = zext i32 %i to i64
  %lp = getelementptr i8, ptr %lst, i64 %iz
  %x8 = load i8, ptr %lp, align 1
  %x = zext i8 %x8 to i64
  %tp = getelementptr i8, ptr %tk, i64 %x
  store i8 0, ptr %tp, align 1
  %ep = getelementptr i64, ptr %w, i64 %x
  %d = load i64, ptr %ep, align 8
  store i64 0, ptr %ep, align 8
  %pend = icmp ne i64 %d, 0
  br i1 %pend, label %add, label %next
add:
  %off = shl i64 %x, %os64
  %ad = add i64 %obase, %off
  %p = inttoptr i64 %ad to ptr
  br i1 %wide, label %a64, label %a32
a64:
  %r64 = atomicrmw add ptr %p, i64 %d monotonic, align 8
  br label %next
a32:
  %d32 = trunc i64 %d to i32
  %r32 = atomicrmw add ptr %p, i32 %d32 monotonic, align 4
  br label %next
next:
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %n
  br i1 %more, label %loop, label %set
set:
  store i64 %key, ptr %kp, align 8
  store i32 %shift, ptr %sp, align 4
  store i32 0, ptr %up, align 4
  ret void
}}
",
            key = offsets::PRIVATE_WINDOW_KEY,
            shift = offsets::PRIVATE_WINDOW_SHIFT,
            used = offsets::PRIVATE_WINDOW_USED,
            window = offsets::PRIVATE_WINDOW,
            taken = offsets::PRIVATE_WINDOW_TAKEN,
            list = offsets::PRIVATE_WINDOW_LIST,
        )
    });
    let name = format!("__anycuda_wprivate_window_i{bits}_x{}", 1u32 << form.shift);
    let (size, key_bit, shift) = (bits / 8, u32::from(bits == 64), form.shift);
    // Lane `k`'s byte (`%{p}l{k}`, as an index `%{p}x{k}`) and value to
    // add (`%{p}a{k}`), the names prefixed by `p`.
    let lane_byte = |p: &str, k: u32| -> String {
        format!(
            "  %{p}q{k} = getelementptr i8, ptr %q, i64 {k}
  %{p}l{k} = load i8, ptr %{p}q{k}, align 1
  %{p}x{k} = zext i8 %{p}l{k} to i64
  %{p}a{k} = extractelement <{w} x i{bits}> %a, i32 {k}
"
        )
    };
    // Lane `k`'s value `a` added to the window's entry `x` (the names
    // prefixed by `p`), then on to block `next`.
    let add_to_entry = |p: &str, k: u32, x: &str, a: &str, next: &str| -> String {
        let widen = if bits == 64 { format!("add i64 {a}, 0") } else { format!("zext i32 {a} to i64") };
        format!(
            "  %{p}ep{k} = getelementptr i64, ptr %w, i64 {x}
  %{p}e{k} = load i64, ptr %{p}ep{k}, align 8
  %{p}az{k} = {widen}
  %{p}n{k} = add i64 %{p}e{k}, %{p}az{k}
  store i64 %{p}n{k}, ptr %{p}ep{k}, align 8
  br label %{next}
"
        )
    };
    let mut text = format!(
        "define internal void @{name}(ptr %t, i64 %base, ptr %q, <{w} x i{bits}> %a) alwaysinline {{
entry:
  %key = or i64 %base, {key_bit}
  %kp = getelementptr i8, ptr %t, i64 {kpos}
  %k = load i64, ptr %kp, align 8
  %sp = getelementptr i8, ptr %t, i64 {spos}
  %s = load i32, ptr %sp, align 4
  %key.same = icmp eq i64 %k, %key
  %shift.same = icmp eq i32 %s, {shift}
  %same0 = and i1 %key.same, %shift.same
  %same = call i1 @llvm.expect.i1(i1 %same0, i1 true)
  br i1 %same, label %lanes, label %seat
seat:
  call void @{seat}(ptr %t, i64 %key, i32 {shift})
  br label %lanes
lanes:
  %w = getelementptr i8, ptr %t, i64 {wpos}
  %tk = getelementptr i8, ptr %t, i64 {tpos}
  %up = getelementptr i8, ptr %t, i64 {upos}
  %lst = getelementptr i8, ptr %t, i64 {lpos}
  %u.all = load i32, ptr %up, align 4
  %full0 = icmp eq i32 %u.all, {entries}
  %full = call i1 @llvm.expect.i1(i1 %full0, i1 true)
  br i1 %full, label %taken0, label %lane0
",
        entries = crate::cpu_abi::PRIVATE_WINDOW,
        kpos = offsets::PRIVATE_WINDOW_KEY,
        spos = offsets::PRIVATE_WINDOW_SHIFT,
        wpos = offsets::PRIVATE_WINDOW,
        tpos = offsets::PRIVATE_WINDOW_TAKEN,
        upos = offsets::PRIVATE_WINDOW_USED,
        lpos = offsets::PRIVATE_WINDOW_LIST,
    );
    for k in 0..w {
        let next = k + 1;
        let _ = write!(
            text,
            "lane{k}:
{byte}  %tp{k} = getelementptr i8, ptr %tk, i64 %x{k}
  %tv{k} = load i8, ptr %tp{k}, align 1
  %on0.{k} = icmp ne i8 %tv{k}, 0
  %on{k} = call i1 @llvm.expect.i1(i1 %on0.{k}, i1 true)
  br i1 %on{k}, label %hit{k}, label %first{k}
hit{k}:
{hit}first{k}:
  %o{k} = shl i64 %x{k}, {shift}
  %s{k} = add i64 %base, %o{k}
  %p{k} = inttoptr i64 %s{k} to ptr
  %m{k} = atomicrmw add ptr %p{k}, i{bits} %a{k} monotonic, align {size}
  store i8 1, ptr %tp{k}, align 1
  %u{k} = load i32, ptr %up, align 4
  %uz{k} = zext i32 %u{k} to i64
  %lq{k} = getelementptr i8, ptr %lst, i64 %uz{k}
  store i8 %l{k}, ptr %lq{k}, align 1
  %u1.{k} = add i32 %u{k}, 1
  store i32 %u1.{k}, ptr %up, align 4
  br label %lane{next}
",
            byte = lane_byte("", k),
            hit = add_to_entry("", k, &format!("%x{k}"), &format!("%a{k}"), &format!("lane{next}")),
        );
    }
    // Every entry taken (the common case once a block has run a while):
    // no lane needs its flag tested.
    for k in 0..w {
        let next = k + 1;
        let _ = write!(
            text,
            "taken{k}:
{byte}{add}",
            byte = lane_byte("f", k),
            add = add_to_entry("f", k, &format!("%fx{k}"), &format!("%fa{k}"), &format!("taken{next}")),
        );
    }
    let _ = write!(text, "lane{w}:\n  ret void\ntaken{w}:\n  ret void\n}}\n");
    cx.helper(&name, || text);
    name
}

/// The warp-mode helper: an add of each executing lane, in lane order,
/// through the table (`add_helpers`' second, `inner`) or, without one,
/// on memory; returns zeros. A converged warp (the common case) goes lane
/// after lane with constant lane indices, without testing each lane's
/// bit.
pub(crate) fn warp_add_helper(bits: u32, inner: &str) -> (String, String) {
    use std::fmt::Write;
    let w = crate::warp::W;
    let name = format!("__anycuda_wprivate_add_i{bits}");
    let size = bits / 8;
    let mut text = format!(
        "define internal <{w} x i{bits}> @{name}(<{w} x ptr> %p, <{w} x i{bits}> %a, <{w} x i1> %m, ptr %t) alwaysinline {{
entry:
  %none = icmp eq ptr %t, null
  %all = call i1 @llvm.vector.reduce.and.v{w}i1(<{w} x i1> %m)
  %fast = select i1 %none, i1 false, i1 %all
  br i1 %fast, label %full, label %loop
full:
"
    );
    for k in 0..w {
        let _ = writeln!(text, "  %p{k} = extractelement <{w} x ptr> %p, i32 {k}");
        let _ = writeln!(text, "  %a{k} = extractelement <{w} x i{bits}> %a, i32 {k}");
        let _ = writeln!(text, "  %r{k} = call i{bits} @{inner}(ptr %t, ptr %p{k}, i{bits} %a{k})");
    }
    let _ = write!(
        text,
        "  ret <{w} x i{bits}> zeroinitializer
loop:
  %i = phi i32 [0, %entry], [%i1, %cont]
  %on = extractelement <{w} x i1> %m, i32 %i
  br i1 %on, label %do, label %cont
do:
  %pi = extractelement <{w} x ptr> %p, i32 %i
  %ai = extractelement <{w} x i{bits}> %a, i32 %i
  br i1 %none, label %mem, label %table
table:
  %r = call i{bits} @{inner}(ptr %t, ptr %pi, i{bits} %ai)
  br label %cont
mem:
  %x = atomicrmw add ptr %pi, i{bits} %ai monotonic, align {size}
  br label %cont
cont:
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, {w}
  br i1 %more, label %loop, label %done
done:
  ret <{w} x i{bits}> zeroinitializer
}}
"
    );
    (name, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

    fn plan_of(body: &str) -> Option<Plan> {
        let src = format!("{HEAD}{body}");
        let m = ptx::parse(&src).expect("test PTX parses");
        let f = m.kernels().next().expect("a kernel");
        plan(&m, f)
    }

    /// nvcc's code for `for (long i = global index; i < n; i += grid
    /// width) atomicAdd(&hist[d[i]], 1u);` (`d`, `n`, `hist`), with `ATOM`
    /// for the atomic and `EXTRA` before the loop's end.
    fn histogram(atom: &str, extra: &str) -> String {
        format!(
            ".visible .entry hg(.param .u64 d, .param .u64 n, .param .u64 hist)
{{
.reg .pred %p<3>; .reg .b32 %r<7>; .reg .b64 %rd<18>; .reg .f32 %f<2>;
ld.param.u64 %rd8, [d];
ld.param.u64 %rd9, [n];
ld.param.u64 %rd10, [hist];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
cvt.u64.u32 %rd1, %r2;
mul.wide.u32 %rd11, %r1, %r2;
mov.u32 %r3, %tid.x;
cvt.u64.u32 %rd12, %r3;
add.s64 %rd17, %rd11, %rd12;
setp.ge.s64 %p1, %rd17, %rd9;
@%p1 bra DONE;
mov.u32 %r4, %nctaid.x;
cvt.u64.u32 %rd13, %r4;
mul.lo.s64 %rd3, %rd13, %rd1;
cvta.to.global.u64 %rd4, %rd8;
cvta.to.global.u64 %rd5, %rd10;
LOOP:
add.s64 %rd14, %rd4, %rd17;
ld.global.u8 %r5, [%rd14];
mul.wide.u32 %rd15, %r5, 4;
add.s64 %rd16, %rd5, %rd15;
{atom}
{extra}
add.s64 %rd17, %rd17, %rd3;
setp.lt.s64 %p2, %rd17, %rd9;
@%p2 bra LOOP;
DONE:
ret;
}}
"
        )
    }

    const ADD: &str = "atom.global.add.u32 %r6, [%rd16], 1;";

    fn params(d: u64, n: u64, hist: u64) -> Vec<u8> {
        [d, n, hist].iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    const GRID: [u32; 3] = [256, 1, 1];
    const BLOCK: [u32; 3] = [256, 1, 1];

    #[test]
    fn the_histogram_privatises_for_separate_buffers_only() {
        let p = plan_of(&histogram(ADD, "")).expect("a plan");
        assert_eq!(p.sites.len(), 1);
        assert_eq!(p.bytes, 4);
        let g = &p.guard;
        // The bins: hist + [0, 1024); the bytes: d + [0, n).
        assert!(g.holds(&params(0x10000, 1 << 20, 0x10000 + (1 << 20)), GRID, BLOCK), "touching is fine");
        assert!(g.holds(&params(0x10000 + 1024, 1 << 20, 0x10000), GRID, BLOCK), "bins just before the bytes");
        assert!(!g.holds(&params(0x10000, 1 << 20, 0x10000 + (1 << 20) - 1), GRID, BLOCK), "the last byte is a bin's");
        assert!(!g.holds(&params(0x10000 + 1023, 1 << 20, 0x10000), GRID, BLOCK), "the first byte is a bin's");
        assert!(!g.holds(&params(0x10000, 1 << 20, 0x10000), GRID, BLOCK), "the same buffer");
        // A bound whose counter could wrap past 2^63 proves nothing.
        assert!(!g.holds(&params(0x10000, (1 << 63) - 10, 1 << 62), GRID, BLOCK));
        // A parameter buffer too short proves nothing.
        assert!(!g.holds(&params(0x10000, 1 << 20, 1 << 30)[..20], GRID, BLOCK));
    }

    #[test]
    fn atomics_that_others_could_see_are_not_privatised() {
        // The old value is read.
        assert_eq!(plan_of(&histogram(ADD, "st.global.u32 [%rd14], %r6;")), None);
        // Ordered, system-scoped, float, other operations.
        for atom in [
            "atom.acq_rel.gpu.global.add.u32 %r6, [%rd16], 1;",
            "atom.release.gpu.global.add.u32 %r6, [%rd16], 1;",
            "red.sys.global.add.u32 [%rd16], 1;",
            "red.global.add.f32 [%rd16], 0f3F800000;",
            "atom.global.exch.b32 %r6, [%rd16], 1;",
            "red.global.max.u32 [%rd16], 1;",
        ] {
            assert_eq!(plan_of(&histogram(atom, "")), None, "{atom}");
        }
        // A fence or a call anywhere in the kernel.
        assert_eq!(plan_of(&histogram(ADD, "membar.gl;")), None);
        assert_eq!(plan_of(&histogram(ADD, "fence.acq_rel.gpu;")), None);
        // Two widths.
        assert_eq!(plan_of(&histogram(ADD, "red.global.add.u64 [%rd16], 1;")), None);
        // `red` and relaxed atomics are candidates.
        assert!(plan_of(&histogram("red.global.add.u32 [%rd16], 1;", "")).is_some());
        assert!(plan_of(&histogram("atom.relaxed.gpu.global.add.u32 %r6, [%rd16], 1;", "")).is_some());
        assert!(plan_of(&histogram("red.global.add.u64 [%rd16], 1;", "")).is_some());
    }

    #[test]
    fn a_kernel_that_reads_the_bins_never_privatises() {
        // Reading the bin it adds to: the load's bytes are the bins'.
        let p = plan_of(&histogram(ADD, "ld.global.u32 %r4, [%rd16];")).expect("a plan");
        for (d, hist) in [(0x10000, 1 << 30), (1 << 30, 0x10000)] {
            assert!(!p.guard.holds(&params(d, 1 << 20, hist), GRID, BLOCK));
        }
        // A load through an address the analysis cannot bound: no plan.
        assert_eq!(plan_of(&histogram(ADD, "ld.global.u64 %rd2, [%rd16];\nld.global.u32 %r4, [%rd2];")), None);
    }

    #[test]
    fn a_32_bit_counter_is_bounded_by_its_loop() {
        // `for (int i = global index; i < n; i += width) atomicAdd(&hist[d[i] & 63], 1)`
        let body = ".visible .entry hg(.param .u64 d, .param .u32 n, .param .u64 hist)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [d];
ld.param.u32 %r1, [n];
ld.param.u64 %rd2, [hist];
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %ntid.x;
mov.u32 %r4, %tid.x;
mad.lo.s32 %r5, %r2, %r3, %r4;
mov.u32 %r6, %nctaid.x;
mul.lo.s32 %r7, %r6, %r3;
setp.ge.s32 %p1, %r5, %r1;
@%p1 bra DONE;
LOOP:
cvt.s64.s32 %rd3, %r5;
add.s64 %rd4, %rd1, %rd3;
ld.global.u8 %r8, [%rd4];
and.b32 %r9, %r8, 63;
mul.wide.u32 %rd5, %r9, 4;
add.s64 %rd6, %rd2, %rd5;
red.global.add.u32 [%rd6], 1;
add.s32 %r5, %r5, %r7;
setp.lt.s32 %p2, %r5, %r1;
@%p2 bra LOOP;
DONE:
ret;
}
";
        let p = plan_of(body).expect("a plan");
        let params = |d: u64, n: u32, hist: u64| {
            let mut v = d.to_le_bytes().to_vec();
            v.extend(n.to_le_bytes());
            v.extend([0; 4]);
            v.extend(hist.to_le_bytes());
            v
        };
        assert!(p.guard.holds(&params(0x10000, 1 << 20, 0x10000 + (1 << 20)), GRID, BLOCK));
        assert!(p.guard.holds(&params(0x10000 + 256, 1 << 20, 0x10000), GRID, BLOCK), "64 bins");
        assert!(!p.guard.holds(&params(0x10000 + 255, 1 << 20, 0x10000), GRID, BLOCK));
        assert!(!p.guard.holds(&params(0x10000, 1 << 20, 0x10000 + (1 << 20) - 4), GRID, BLOCK));
        // n + step past 2^31: the counter may wrap to negative indices.
        assert!(!p.guard.holds(&params(1 << 40, i32::MAX as u32, 1 << 20), GRID, BLOCK));
        // Bins just below the bytes: apart only if the index is never negative.
        let below = params(1 << 40, 1 << 20, (1 << 40) - 4096);
        assert!(p.guard.holds(&below, GRID, BLOCK));
        // The same loop entered without its comparison: no bound.
        let open = body.replace("@%p1 bra DONE;", "");
        let p = plan_of(&open).expect("a plan");
        assert!(!p.guard.holds(&below, GRID, BLOCK));
        // A counter the loop writes before the access: no bound.
        let p = plan_of(&body.replace("LOOP:\n", "LOOP:\nadd.s32 %r5, %r5, 1;\n")).expect("a plan");
        assert!(!p.guard.holds(&below, GRID, BLOCK));
        // A step in code the comparison does not guard: the signed
        // counter may wrap.
        let p = plan_of(&body.replace("add.s32 %r5, %r5, %r7;\n", "bra STEP;\nSTEP:\nadd.s32 %r5, %r5, %r7;\n")).expect("a plan");
        assert!(!p.guard.holds(&below, GRID, BLOCK));
    }

    /// The [`LoadedIndex`] form of the kernel's first `atom` or `red`,
    /// looked for directly (with or without a launch condition).
    fn loaded_of(body: &str) -> Option<LoadedIndex> {
        let src = format!("{HEAD}{body}");
        let m = ptx::parse(&src).expect("test PTX parses");
        let f = m.kernels().next().expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        let cx = Cx::new(&m, b, Default::default());
        let (at, inst) = b.statements.iter().enumerate().find_map(|(i, s)| match s {
            Statement::Instruction(inst) if matches!(inst.op, Opcode::Atom | Opcode::Red) => Some((i, inst)),
            _ => None,
        })?;
        cx.loaded_index(f, at, inst)
    }

    #[test]
    fn a_loaded_index_is_taken_only_where_nothing_else_needs_it() {
        let h = histogram(ADD, "");
        let form = loaded_of(&h).expect("the histogram's form");
        assert_eq!((form.load, form.widen_signed, form.shift, form.offset), (Type::U8, false, 2, 0));
        let p = plan_of(&h).expect("a plan");
        assert_eq!(p.loaded, vec![(p.sites[0], form)], "the plan carries it");
        // Other shapes of the same computation.
        let with = |from: &str, to: &str| {
            assert!(h.contains(from), "{from}");
            loaded_of(&h.replace(from, to))
        };
        let mul = "mul.wide.u32 %rd15, %r5, 4;";
        let sum = "add.s64 %rd16, %rd5, %rd15;";
        assert_eq!(with(mul, "mul.wide.s32 %rd15, %r5, 8;").map(|f| (f.widen_signed, f.shift)), Some((true, 3)));
        assert_eq!(with(mul, "mul.wide.u32 %rd15, 2, %r5;").map(|f| f.shift), Some(1));
        assert_eq!(with("ld.global.u8", "ld.global.s16").map(|f| f.load), Some(Type::S16));
        assert_eq!(with("ld.global.u8", "ld.const.u32").map(|f| f.load), Some(Type::U32));
        assert_eq!(with("[%rd16], 1;", "[%rd16+8], 1;").map(|f| f.offset), Some(8));
        assert!(with(sum, "add.s64 %rd16, %rd15, %rd5;").is_some());
        assert!(with(mul, &format!("add.s64 %rd5, %rd5, 0;\n{mul}")).is_some(), "the base written before the sum reads it");
        assert_eq!(loaded_of(&histogram("red.global.add.u64 [%rd16], 1;", "")).map(|f| f.base), Some(form.base));
        // Where it must not apply.
        for (from, to, why) in [
            ("DONE:", "st.global.u32 [%rd4], %r5;\nDONE:", "the index read elsewhere"),
            ("DONE:", "st.global.u64 [%rd4], %rd15;\nDONE:", "the scaled index read elsewhere"),
            ("DONE:", "st.global.u64 [%rd4], %rd16;\nDONE:", "the sum read elsewhere"),
            (sum, &format!("st.global.u32 [%rd4], %r1;\n{sum}"), "a store between the load and the atomic"),
            (sum, &format!("membar.gl;\n{sum}"), "a fence in between"),
            (mul, &format!("{mul}\nadd.s64 %rd14, %rd14, 1;"), "the load's address changed in between"),
            (sum, &format!("{sum}\nadd.s64 %rd5, %rd5, 4;"), "the base changed after the sum"),
            (sum, &format!("bra NEXT;\nNEXT:\n{sum}"), "not one straight run"),
            ("ld.global.u8", "ld.volatile.global.u8", "a volatile load"),
            ("ld.global.u8", "ld.global.cv.u8", "a load that must see others' stores"),
            ("ld.global.u8", "ld.u8", "a generic load"),
            ("ld.global.u8", "ld.shared.u8", "a shared load"),
            ("ld.global.u8 %r5, [%rd14];", "ld.global.u8 %r5, [%rd14];\nadd.u32 %r5, %r5, 1;", "the index changed after the load"),
            (mul, "mul.wide.u32 %rd15, %r5, 3;", "a scale that is no power of two"),
            (mul, "mul.wide.u32 %rd15, %r5, 16;", "a scale past 8"),
            (mul, "cvt.u64.u32 %rd15, %r5;", "no scaling multiply"),
            (mul, "mul.wide.u32 %rd15, %r5, %r4;", "a scale in a register"),
            (sum, "sub.s64 %rd16, %rd5, %rd15;", "no sum"),
            (sum, "add.s64 %rd16, %rd15, %rd15;", "no base"),
            ("atom.global", "@%p1 atom.global", "a guarded atomic"),
        ] {
            assert!(h.contains(from), "{from}");
            assert_eq!(loaded_of(&h.replace(from, to)), None, "{why}");
        }
    }

    #[test]
    fn warp_mode_adds_loaded_indices_lane_by_lane() {
        let ir = |body: &str| {
            let src = format!("{HEAD}{body}");
            let m = ptx::parse(&src).expect("test PTX parses");
            let opts = crate::Options { warp: crate::WarpMode::Always, ..Default::default() };
            crate::emit_ir_with_options(&m, &src, &opts).expect("the kernel compiles")
        };
        let h = histogram(ADD, "");
        // Bytes: the window, for 32-bit adds 4 bytes apart and 64-bit 8.
        assert!(ir(&h).contains("call void @__anycuda_wprivate_window_i32_x4("));
        let wide = histogram("red.global.add.u64 [%rd16], 1;", "").replace("%r5, 4;", "%r5, 8;");
        assert!(ir(&wide).contains("call void @__anycuda_wprivate_window_i64_x8("));
        // Wider or signed indices: a lane's index and the slots.
        let half = h.replace("ld.global.u8", "ld.global.u16");
        assert!(ir(&half).contains("call void @__anycuda_wprivate_add_i32_ldui16_ux4("));
        let signed = h.replace("ld.global.u8", "ld.global.s8").replace("mul.wide.u32", "mul.wide.s32");
        assert!(ir(&signed).contains("call void @__anycuda_wprivate_add_i32_ldsi8_sx4("));
        // No such form: the vector of addresses only.
        let used = ir(&histogram(ADD, "st.global.u32 [%rd4], %r5;"));
        assert!(used.contains("@__anycuda_wprivate_add_i32(") && !used.contains("_ld") && !used.contains("window"));
        // Thread mode: one add per thread, through the slots.
        let src = format!("{HEAD}{h}");
        let m = ptx::parse(&src).expect("test PTX parses");
        let opts = crate::Options { warp: crate::WarpMode::Off, ..Default::default() };
        let thread = crate::emit_ir_with_options(&m, &src, &opts).expect("the kernel compiles");
        assert!(thread.contains("call i32 @__anycuda_private_add_i32(") && !thread.contains("window"));
    }

    #[test]
    fn a_deep_web_of_registers_is_given_up_on() {
        // Each address register twice the one before: following both
        // operands all the way would take 2^40 steps.
        let mut lines = String::from("ld.param.u64 %rd1, [p];\n");
        for k in 1..41 {
            lines.push_str(&format!("add.s64 %rd{}, %rd{k}, %rd{k};\n", k + 1));
        }
        let body = format!(".visible .entry k(.param .u64 p)\n{{\n.reg .b64 %rd<48>;\n{lines}red.global.add.u32 [%rd41], 1;\nret;\n}}\n");
        let start = std::time::Instant::now();
        assert_eq!(plan_of(&body), None);
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        // Short enough to follow: privatised, bins at 2^3 p.
        let short = body.replace("[%rd41]", "[%rd4]");
        let p = plan_of(&short).expect("a plan");
        assert!(p.guard.holds(&(1u64 << 20).to_le_bytes(), GRID, BLOCK));
        assert_eq!(p.guard.targets[0].bytes_for(&|_, _, _| Some(1 << 20), GRID, BLOCK), Some((8 << 20, (8 << 20) + 4)));
    }

    #[test]
    fn registers_read_as_the_instruction_reads_them() {
        let top = (1i128 << 64) - 1;
        assert_eq!(read((0, top), 64, false), Some((0, top)));
        assert_eq!(read((1 << 63, top), 64, true), Some((-(1 << 63), -1)));
        assert_eq!(read(((1 << 63) - 1, 1 << 63), 64, true), None);
        assert_eq!(read((-1, 3), 32, false), None);
        assert_eq!(read((-1, -1), 32, false), Some(((1 << 32) - 1, (1 << 32) - 1)));
        let wide = |lo, hi, signed| value_range(&[Val::Within(lo, hi), Val::Wide { signed }], &|_, _, _| None, GRID, BLOCK);
        assert_eq!(wide(0, 255, false), Some((0, 255)));
        assert_eq!(wide(-1, 255, false), Some((0, (1 << 32) - 1)), "not the exact value: the whole range");
        assert_eq!(wide(-1, 255, true), Some((-1, 255)));
    }
}
