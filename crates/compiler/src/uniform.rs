//! Warp-uniform registers of warp mode.
//!
//! Much of what a kernel computes is the same in every thread of a warp:
//! indices and row offsets from `%ctaid`, `%ntid` and the parameters, the
//! products and divisions nvcc builds from them, loop counters of loops
//! every thread runs alike. Warp mode keeps every register as a vector of
//! 32 lanes, so such a value costs 32 lanes of work and, for 64-bit values
//! on hosts with 256-bit vectors, eight registers. This analysis finds the
//! registers whose value is the same in every lane of a warp that can read
//! it; the lowering keeps them as one scalar (broadcast where a vector
//! operation reads it), and knows the shape of any access through them
//! when it compiles (one address for the whole warp).
//!
//! A register is uniform when every write to it
//! - executes in a block every lane of the warp runs together (a
//!   *convergent* block, below), unguarded or under a uniform guard, or is
//!   the register's only write, unguarded, in a block outside every loop
//!   (such a block runs at most once in a warp, so the lanes that run it
//!   compute one value, and the lanes that do not have no value to read:
//!   the values a kernel computes inside `if (i < n)`), and
//! - computes a pure function of uniform operands: immediates, `%ctaid`,
//!   `%nctaid`, `%ntid`, shared variables' and parameters' addresses,
//!   module symbols, uniform registers; or loads from one uniform address
//!   memory no thread writes during the kernel (`ld.param`, `ld.const`,
//!   `ld.global.nc`).
//!
//! Convergent blocks, from how warp mode runs blocks (see `warp.rs`): a
//! warp runs, of the blocks its lanes wait for, the lowest-numbered one
//! first. A branch whose guard is not uniform splits the lanes: forward to
//! block `t` from block `d`, blocks `d+1..t-1` run for some lanes only;
//! backward, blocks `t..=d` do (later iterations of a loop run for the
//! lanes still in it). That interval grows until every branch from inside
//! it lands inside it or on the block just after it (its *join*), or on a
//! block that only returns. Then every lane that left the interval waits at
//! the join, which runs for all of them, lowest first: the blocks of no
//! interval are convergent. Lanes that branch to a block that only
//! returns (`ret` or `exit`, nothing else) read no register again, so such
//! a branch splits nothing, wherever the block lies (the bounds check
//! `if (i >= n) return;`).
//!
//! The analysis is optimistic: it starts from every register uniform and
//! every block convergent and removes what a write or a branch disproves,
//! until nothing changes. Invariant of the result: at every read of a
//! uniform register, every lane of the warp that will read registers again
//! holds the same value. Kernels with indirect branches (`brx.idx`) get no
//! uniform registers.

use crate::warp::BlockGraph;
use ptx::ast::*;
use std::collections::HashMap;

/// The uniform registers and, given them, where lanes diverge.
pub struct Convergence {
    /// Per register: whether it is uniform (see the module notes).
    pub uniform: Vec<bool>,
    /// Per block (`blocks` entries): whether some lanes of a warp may run
    /// it without the others; the complement is the convergent blocks of
    /// the module notes. Invariant: when a warp runs a convergent block,
    /// every lane of it that will read registers again runs that block
    /// with it (no lane waits at another block). Every block of a kernel
    /// with indirect branches counts as divergent.
    pub divergent: Vec<bool>,
}

/// The uniform registers of a function and the blocks where its lanes may
/// diverge. `starts`, `label_block` and `blocks` number the blocks as warp
/// mode does.
pub fn convergence(f: &Function, b: &Body, starts: &HashMap<usize, u32>, label_block: &HashMap<LabelId, u32>, blocks: u32) -> Convergence {
    let nregs = b.regs.len();
    let inst_at = |i: usize| match &b.statements[i] {
        Statement::Instruction(inst) => Some(inst),
        _ => None,
    };
    if b.statements.iter().any(|s| matches!(s, Statement::Instruction(i) if i.op == Opcode::Brx)) {
        return Convergence { uniform: vec![false; nregs], divergent: vec![true; blocks as usize] };
    }
    let BlockGraph { ranges, succ } = crate::warp::block_graph(b, starts, label_block, blocks);
    let n = blocks as usize;
    let returns_only = returns_only(b, &ranges, n);
    // Blocks inside a loop (from a backward branch's target to the
    // branch): the only ones that can run more than once in a warp.
    let mut in_loop = vec![false; n + 1];
    for (k, targets) in succ.iter().enumerate().take(n) {
        for &t in targets.iter().filter(|&&t| t <= k) {
            for l in &mut in_loop[t..=k] {
                *l = true;
            }
        }
    }
    let writes = write_counts(b);
    let mut defs = Vec::new();
    let mut uniform = vec![true; nregs];
    loop {
        let mut divergent = divergent_blocks(b, &ranges, &succ, &returns_only, &uniform, n);
        let mut changed = false;
        for (k, range) in ranges.iter().enumerate().take(n) {
            for &i in range {
                let Some(inst) = inst_at(i) else { continue };
                defs.clear();
                b.defs(inst, &mut defs);
                if defs.is_empty() {
                    continue;
                }
                // The register's only write, in a block that runs at most
                // once: the lanes that run it compute one value, and the
                // others have none to read.
                let once = !in_loop[k] && inst.guard.is_none() && defs.iter().all(|&r| writes.get(r as usize) == Some(&1));
                let ok = (!divergent[k] || once)
                    && inst.guard.is_none_or(|g| uniform.get(g.reg as usize).copied().unwrap_or(false))
                    && uniform_result(f, b, inst, &uniform);
                if !ok {
                    changed |= clear(&mut uniform, &defs);
                }
            }
        }
        if !changed {
            // The blocks of the uniform registers found: what is divergent
            // given them.
            divergent.truncate(n);
            return Convergence { uniform, divergent };
        }
    }
}

/// Per register: whether every write to it, wherever it runs, computes
/// a pure function of operands of this kind (unguarded or under such a
/// guard): the registers [`convergence`] finds uniform before it looks at where
/// lanes diverge. Lanes that ran the same writes equally often hold the
/// same value, but lanes that left a loop at different times do not: a
/// hint for choosing how to run a kernel (`warp::loops_run_alike`), never
/// a fact the lowering may rely on.
pub fn data_uniform(f: &Function, b: &Body) -> Vec<bool> {
    let mut uniform = vec![true; b.regs.len()];
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
            let ok =
                inst.guard.is_none_or(|g| uniform.get(g.reg as usize).copied().unwrap_or(false)) && uniform_result(f, b, inst, &uniform);
            if !ok {
                changed |= clear(&mut uniform, &defs);
            }
        }
        if !changed {
            return uniform;
        }
    }
}

/// Per register of a kernel: whether it is *block-invariant*, for code
/// that runs a block's threads one after another: written by exactly one
/// instruction, unguarded, that computes a pure function of immediates,
/// `%ctaid`, `%nctaid`, `%ntid`, the kernel's parameters (`ld.param`) and
/// other block-invariant registers. Every thread of a block that reads such
/// a register reads the same value, and in the IR it is one SSA value
/// computed from loop-invariant inputs, so LLVM can hoist what is computed
/// from it alone out of the loop over the block's threads (a division's
/// reciprocal, `arith.rs`). Unlike [`convergence`], no write may repeat (a
/// loop counter every thread runs alike is the same in all threads but
/// changes inside the thread loop) and no other memory is read (loads LLVM
/// cannot prove unaliased by the kernel's stores are not hoisted). A
/// device function's parameters differ per call: only kernels have any.
pub fn block_invariant(f: &Function, b: &Body) -> Vec<bool> {
    let nregs = b.regs.len();
    if f.kind != FunctionKind::Entry {
        return vec![false; nregs];
    }
    let mut invariant: Vec<bool> = write_counts(b).iter().map(|&w| w == 1).collect();
    let mut defs = Vec::new();
    loop {
        let mut changed = false;
        for s in &b.statements {
            let Statement::Instruction(inst) = s else { continue };
            defs.clear();
            b.defs(inst, &mut defs);
            if defs.is_empty() || !defs.iter().any(|&r| invariant.get(r as usize).copied().unwrap_or(false)) {
                continue;
            }
            let loads_other_memory = inst.op == Opcode::Ld && inst.space(b) != Some(StateSpace::Param);
            let ok = inst.guard.is_none() && !loads_other_memory && uniform_result(f, b, inst, &invariant);
            if !ok {
                changed |= clear(&mut invariant, &defs);
            }
        }
        if !changed {
            return invariant;
        }
    }
}

/// How many instructions write each register.
fn write_counts(b: &Body) -> Vec<u32> {
    let mut writes = vec![0u32; b.regs.len()];
    let mut defs = Vec::new();
    for s in &b.statements {
        if let Statement::Instruction(inst) = s {
            defs.clear();
            b.defs(inst, &mut defs);
            for &r in &defs {
                if let Some(w) = writes.get_mut(r as usize) {
                    *w += 1;
                }
            }
        }
    }
    writes
}

/// Clears the flags of `regs`; whether any was set.
fn clear(flags: &mut [bool], regs: &[RegId]) -> bool {
    let mut changed = false;
    for &r in regs {
        if let Some(u) = flags.get_mut(r as usize) {
            changed |= std::mem::replace(u, false);
        }
    }
    changed
}

/// Per block, whether it only returns (`ret` or `exit`, unguarded,
/// nothing else); entry `n` stands for the end of the kernel.
fn returns_only(b: &Body, ranges: &[Vec<usize>], n: usize) -> Vec<bool> {
    (0..=n)
        .map(|k| {
            k == n
                || matches!(ranges[k].as_slice(), [i] if matches!(&b.statements[*i],
                    Statement::Instruction(inst) if matches!(inst.op, Opcode::Ret | Opcode::Exit) && inst.guard.is_none()))
        })
        .collect()
}

/// The blocks some lanes of a warp may run without the others (the
/// intervals of the module notes), given the uniform registers so far.
fn divergent_blocks(b: &Body, ranges: &[Vec<usize>], succ: &[Vec<usize>], returns_only: &[bool], uniform: &[bool], n: usize) -> Vec<bool> {
    let mut divergent = vec![false; n + 1];
    for k in 0..n {
        let Some(Statement::Instruction(inst)) = ranges[k].last().map(|&i| &b.statements[i]) else { continue };
        let Some(g) = inst.guard.filter(|_| inst.op == Opcode::Bra) else { continue };
        if uniform.get(g.reg as usize).copied().unwrap_or(false) {
            continue;
        }
        let Some(&t) = succ[k].first() else { continue };
        // Lanes that leave for a block that only returns split nothing.
        if returns_only[t] || returns_only[k + 1] {
            continue;
        }
        let (mut s, mut e) = if t > k { (k + 1, t - 1) } else { (t, k) };
        if s > e {
            continue;
        }
        // Grow until closed (the bounds of one pass are those it started with).
        loop {
            let (s0, e0) = (s, e);
            for targets in &succ[s0..=e0] {
                for &x in targets.iter().filter(|&&x| !returns_only[x]) {
                    e = e.max(x.saturating_sub(1));
                    s = s.min(x);
                }
            }
            if (s, e) == (s0, e0) {
                break;
            }
        }
        for d in &mut divergent[s..=e] {
            *d = true;
        }
    }
    divergent
}

/// Whether `inst`, run by every lane with uniform source operands, writes
/// the same value in every lane.
fn uniform_result(f: &Function, b: &Body, inst: &Instruction, uniform: &[bool]) -> bool {
    use Opcode::*;
    let args = b.args(inst);
    let Some(dest) = args.first() else { return false };
    if !matches!(dest, Operand::Reg(_) | Operand::PredPair(..)) {
        return false;
    }
    let pure = match inst.op {
        Ld => read_only_load(f, b, inst),
        _ => plain_arithmetic(b, inst),
    };
    pure && args[1..].iter().all(|&op| uniform_operand(f, op, uniform))
}

/// Whether `inst` computes its results from its operands alone: no memory,
/// no other lanes, no carry flag.
pub fn plain_arithmetic(b: &Body, inst: &Instruction) -> bool {
    use Opcode::*;
    matches!(
        inst.op,
        Mov | Cvt
            | Cvta
            | Add
            | Sub
            | Mul
            | Mad
            | Mul24
            | Mad24
            | Div
            | Rem
            | Abs
            | Neg
            | Min
            | Max
            | Sad
            | Popc
            | Clz
            | Bfind
            | Brev
            | Bfe
            | Bfi
            | Szext
            | Bmsk
            | And
            | Or
            | Xor
            | Not
            | Cnot
            | Lop3
            | Shf
            | Shl
            | Shr
            | Prmt
            | Selp
            | Slct
            | Setp
            | Set
            | Fma
            | Copysign
    ) && !inst.has(b, Flag::Cc)
}

/// An `ld` of memory no thread writes while the kernel runs.
fn read_only_load(f: &Function, b: &Body, inst: &Instruction) -> bool {
    match inst.space(b) {
        Some(StateSpace::Param) => match b.args(inst).get(1).and_then(|a| a.address()) {
            Some((AddrBase::Var(v), _)) => f.params.contains(&v),
            _ => false,
        },
        Some(StateSpace::Const) => true,
        Some(StateSpace::Global) => inst.has(b, Flag::Nc),
        _ => false,
    }
}

/// Whether a source operand has the same value in every lane.
fn uniform_operand(f: &Function, op: Operand, uniform: &[bool]) -> bool {
    let reg = |r: RegId| uniform.get(r as usize).copied().unwrap_or(false);
    match op {
        Operand::Reg(r) | Operand::NotReg(r) | Operand::AddrReg(r, _) => reg(r),
        Operand::Imm(_) | Operand::F32(_) | Operand::F64(_) | Operand::Global(_) | Operand::GlobalOffset(..) => true,
        Operand::AddrGlobal(..) | Operand::AddrImm(_) => true,
        Operand::Var(v) | Operand::VarOffset(v, _) | Operand::AddrVar(v, _) => crate::affine::uniform_var(f, v),
        Operand::Special(s, _) => matches!(s, SpecialReg::Ctaid | SpecialReg::Nctaid | SpecialReg::Ntid),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The uniform registers of a kernel, by name.
    fn uniform_names(src: &str) -> Vec<String> {
        let module = ptx::parse(src).expect("test PTX parses");
        let f = module.functions().next().expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        let (starts, label_block, blocks) = crate::lower::FnLower::number_blocks(b);
        convergence(f, b, &starts, &label_block, blocks)
            .uniform
            .into_iter()
            .enumerate()
            .filter(|&(_, u)| u)
            .map(|(r, _)| ptx::reg_name(f, b, r as RegId))
            .collect()
    }

    fn kernel(body: &str) -> String {
        format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p, .param .u32 n)\n{{\n\
             .reg .pred %p<8>;\n.reg .b32 %r<40>;\n.reg .b64 %rd<40>;\n.reg .f32 %f<8>;\n{body}\n}}\n"
        )
    }

    #[test]
    fn values_of_parameters_and_block_indices_are_uniform_lane_values_are_not() {
        let u = uniform_names(&kernel(
            "ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %ntid.x;
mul.lo.s32 %r4, %r2, %r3;
mul.hi.u32 %r5, %r4, %r1;
shr.u32 %r6, %r5, 3;
setp.eq.s32 %p1, %r6, 0;
selp.b32 %r7, %r6, %r1, %p1;
cvt.s64.s32 %rd2, %r7;
mul.wide.s32 %rd3, %r7, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.nc.u32 %r8, [%rd4];
ld.global.u32 %r9, [%rd4];
mov.u32 %r10, %tid.x;
add.s32 %r11, %r4, %r10;
setp.lt.s32 %p2, %r11, %r1;
selp.b32 %r12, 1, 2, %p2;
mov.u32 %r13, %laneid;
ret;",
        ));
        for r in ["%rd1", "%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%p1", "%r7", "%rd2", "%rd3", "%rd4", "%r8"] {
            assert!(u.contains(&r.to_string()), "{r} is uniform: {u:?}");
        }
        // A load other threads' stores may change, lane-dependent values.
        for r in ["%r9", "%r10", "%r11", "%p2", "%r12", "%r13"] {
            assert!(!u.contains(&r.to_string()), "{r} is not uniform: {u:?}");
        }
    }

    #[test]
    fn writes_where_lanes_diverge_are_not_uniform_and_the_join_is_convergent() {
        let u = uniform_names(&kernel(
            "ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
setp.lt.s32 %p1, %r2, %r1;
mov.u32 %r3, 1;
mov.u32 %r4, 0;
@%p1 bra A;
mov.u32 %r3, 2;
add.s32 %r4, %r4, 7;
mov.u32 %r7, 5;
A:
mov.u32 %r5, 9;
add.s32 %r6, %r5, %r1;
ret;",
        ));
        // (%r7: its only write, which every lane that runs it runs alike.)
        for r in ["%r1", "%r5", "%r6", "%r7"] {
            assert!(u.contains(&r.to_string()), "{r} is uniform: {u:?}");
        }
        // Written again by the lanes that did not branch only.
        for r in ["%r3", "%r4"] {
            assert!(!u.contains(&r.to_string()), "{r} is not uniform: {u:?}");
        }
    }

    /// [`data_uniform`] looks at what registers are computed from, not at
    /// where lanes diverge: the counters of a loop some lanes leave early
    /// are computed alike (a hint), a lane's index or a value written under
    /// its guard are not.
    #[test]
    fn data_uniform_registers_are_computed_alike_wherever_they_run() {
        let src = kernel(
            "ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r3, 0;
mov.u32 %r7, 5;
L:
add.s32 %r3, %r3, 1;
setp.lt.s32 %p1, %r3, %r2;
@%p1 bra L;
setp.lt.s32 %p2, %r3, %r1;
@%p1 mov.u32 %r7, 6;
add.s32 %r8, %r2, %r1;
ret;",
        );
        let module = ptx::parse(&src).expect("test PTX parses");
        let f = module.functions().next().expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        let names: Vec<String> =
            data_uniform(f, b).into_iter().enumerate().filter(|&(_, u)| u).map(|(r, _)| ptx::reg_name(f, b, r as RegId)).collect();
        for r in ["%r1", "%r3", "%p2"] {
            assert!(names.contains(&r.to_string()), "{r} is computed alike: {names:?}");
        }
        for r in ["%r2", "%p1", "%r7", "%r8"] {
            assert!(!names.contains(&r.to_string()), "{r} is not: {names:?}");
        }
        // (The convergence-aware analysis keeps the counter apart.)
        assert!(!uniform_names(&src).contains(&"%r3".to_string()));
    }

    #[test]
    fn a_loop_some_lanes_leave_early_keeps_nothing_it_writes_uniform() {
        let u = uniform_names(&kernel(
            "ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r3, 0;
mov.u32 %r4, 0;
L:
add.s32 %r3, %r3, 1;
add.s32 %r4, %r4, 2;
setp.lt.s32 %p1, %r3, %r2;
@%p1 bra L;
mov.u32 %r5, 3;
M:
add.s32 %r6, %r6, %r1;
setp.lt.s32 %p2, %r6, 100;
@%p2 bra M;
ret;",
        ));
        // The first loop's exit depends on the lane: its counters differ
        // after it. The second loop runs alike in every lane.
        for r in ["%r3", "%r4", "%p1"] {
            assert!(!u.contains(&r.to_string()), "{r} is not uniform: {u:?}");
        }
        for r in ["%r1", "%r5", "%r6", "%p2"] {
            assert!(u.contains(&r.to_string()), "{r} is uniform: {u:?}");
        }
    }

    #[test]
    fn an_early_return_splits_nothing_but_a_branch_past_the_join_does() {
        // The bounds check: lanes out of range return.
        let u = uniform_names(&kernel(
            "ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
setp.ge.s32 %p1, %r2, %r1;
@%p1 bra DONE;
mov.u32 %r3, %ctaid.x;
add.s32 %r4, %r3, %r1;
DONE:
ret;",
        ));
        assert!(u.contains(&"%r4".to_string()), "{u:?}");
        // A lane that branches from inside the divergent part past its end
        // waits there while block B runs: B is not convergent.
        let u = uniform_names(&kernel(
            "ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
setp.ge.s32 %p1, %r2, %r1;
setp.ge.s32 %p2, %r2, 5;
mov.u32 %r4, 0;
@%p1 bra B;
@%p2 bra C;
mov.u32 %r3, 1;
B:
mov.u32 %r4, 2;
C:
mov.u32 %r5, 3;
ret;",
        ));
        assert!(!u.contains(&"%r4".to_string()), "{u:?}");
        assert!(u.contains(&"%r5".to_string()), "{u:?}");
    }

    /// The block-invariant registers of a kernel (or function), by name.
    fn invariant_names(src: &str) -> Vec<String> {
        let module = ptx::parse(src).expect("test PTX parses");
        let f = module.functions().next().expect("a function");
        let b = f.body.as_ref().expect("a body");
        block_invariant(f, b).into_iter().enumerate().filter(|&(_, u)| u).map(|(r, _)| ptx::reg_name(f, b, r as RegId)).collect()
    }

    #[test]
    fn block_invariant_registers_are_written_once_from_parameters_and_block_indices() {
        let u = invariant_names(&kernel(
            "ld.param.u32 %r1, [n];
mov.u32 %r2, %ntid.x;
mov.u32 %r3, %ctaid.x;
mul.lo.s32 %r4, %r1, %r2;
add.s32 %r5, %r4, %r3;
mov.u32 %r6, %tid.x;
add.s32 %r7, %r5, %r6;
setp.ge.u32 %p1, %r7, %r1;
@%p1 bra DONE;
mul.lo.s32 %r8, %r5, 3;
ld.param.u64 %rd1, [p];
ld.global.u32 %r9, [%rd1];
add.s32 %r10, %r9, %r1;
ld.const.u32 %r11, [%rd1];
mov.u32 %r12, 0;
LOOP:
add.s32 %r12, %r12, %r1;
setp.lt.u32 %p2, %r12, 100;
@%p2 bra LOOP;
mov.u32 %r13, 1;
@%p2 mov.u32 %r14, %r1;
DONE:
ret;",
        ));
        for r in ["%r1", "%r2", "%r3", "%r4", "%r5", "%r8", "%rd1", "%r13"] {
            assert!(u.contains(&r.to_string()), "{r} should be block-invariant: {u:?}");
        }
        // Lane values, loaded memory (global and constant), a loop counter
        // every thread runs alike, and guarded writes are not.
        for r in ["%r6", "%r7", "%r9", "%r10", "%r11", "%r12", "%r14"] {
            assert!(!u.contains(&r.to_string()), "{r} should not be block-invariant: {u:?}");
        }
    }

    #[test]
    fn device_functions_have_no_block_invariant_registers() {
        let u = invariant_names(
            ".version 8.0\n.target sm_80\n.address_size 64\n.func f(.param .u32 n)\n{\n.reg .b32 %r<4>;\n\
             ld.param.u32 %r1, [n];\nmov.u32 %r2, %ntid.x;\nmul.lo.s32 %r3, %r1, %r2;\nret;\n}\n",
        );
        assert!(u.is_empty(), "{u:?}");
    }

    #[test]
    fn guards_must_be_uniform_and_uniform_guards_keep_uniformity() {
        let u = uniform_names(&kernel(
            "ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
setp.lt.s32 %p1, %r2, %r1;
setp.lt.s32 %p2, %r1, 8;
mov.u32 %r3, 0;
@%p1 mov.u32 %r3, 1;
mov.u32 %r4, 0;
@%p2 mov.u32 %r4, 1;
ret;",
        ));
        assert!(!u.contains(&"%r3".to_string()), "{u:?}");
        assert!(u.contains(&"%r4".to_string()), "{u:?}");
    }
}
