//! Which registers an instruction reads and which it writes: the one
//! owner of these facts, for every analysis of the compiler.
//!
//! Invariants (what the analyses rely on):
//! * [`Body::defs`] lists exactly the registers an instruction writes when
//!   it executes (its guard holding): the registers named by its first
//!   operand when that operand is a destination ([`Body::writes_first`]),
//!   and nothing else. PTX has no instruction that writes a register named
//!   by a later operand.
//! * [`Body::uses`] lists every register whose value the instruction may
//!   read: its guard, every register in its other operands (values,
//!   addresses, vectors, texture and call argument lists, negated
//!   predicates). A destination is not a use.
//! * A register can appear more than once (`{%r1, %r1}`); order follows
//!   the operands.
//!
//! Whether the first operand is a destination depends on the opcode and,
//! for opcodes with forms of both kinds, on the form: an address there is
//! a source (`mbarrier.init [a], n` against `mbarrier.arrive s, [a]`,
//! `wmma.store` against `wmma.load`, `multimem.red` against
//! `multimem.ld_reduce`); `bar.red` and `barrier.red` write their first
//! operand, the other barriers read it; `call` writes the registers of its
//! return list (the first operand when it is a parenthesised list) and
//! reads the argument list; `tcgen05` writes its first operand only in
//! the form with a later address (`tcgen05.ld r, [taddr]`; `tcgen05.dealloc
//! taddr, n` reads it).

use crate::ast::{Body, Flag, Instruction, Opcode, Operand, RegId};

/// Opcodes whose first operand is never a destination (a source, an
/// address, a label or a callee), whatever the form.
fn first_operand_never_written(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        St | Red
            | Prefetch
            | Prefetchu
            | Nanosleep
            | Bra
            | Brx
            | Ret
            | Exit
            | Trap
            | Brkpt
            | Membar
            | Fence
            | Pmevent
            | Griddepcontrol
            | Setmaxnreg
            | Discard
            | Applypriority
            | Sust
            | Sured
            | Cp
            | Stmatrix
            | Stackrestore
            | Tensormap
    )
}

impl Body<'_> {
    /// Whether `inst`'s first operand is a destination (see the module
    /// notes for the forms).
    pub fn writes_first(&self, inst: &Instruction) -> bool {
        let args = self.args(inst);
        let Some(first) = args.first() else { return false };
        if first.address().is_some() {
            return false;
        }
        match inst.op {
            Opcode::Bar | Opcode::Barrier => inst.has(self, Flag::Red),
            Opcode::Call => matches!(first, Operand::Paren(_)),
            Opcode::Tcgen05 => args[1..].iter().any(|a| a.address().is_some()),
            op => !first_operand_never_written(op),
        }
    }

    /// Appends the registers `op` names (in any role) to `out`.
    pub fn operand_registers(&self, op: Operand, out: &mut Vec<RegId>) {
        match op {
            Operand::Reg(r)
            | Operand::NotReg(r)
            | Operand::RegComponent(r, _)
            | Operand::AddrReg(r, _)
            | Operand::SinkPred(r)
            | Operand::Video { reg: r, .. } => out.push(r),
            Operand::PredPair(p, q) => out.extend([p, q]),
            Operand::Vector(l) | Operand::Paren(l) | Operand::Bracket(l) => {
                for &o in self.list(l) {
                    self.operand_registers(o, out);
                }
            }
            Operand::VectorPred(l, p) => {
                for &o in self.list(l) {
                    self.operand_registers(o, out);
                }
                out.push(p);
            }
            Operand::Special(..)
            | Operand::Var(_)
            | Operand::Global(_)
            | Operand::Label(_)
            | Operand::Imm(_)
            | Operand::F32(_)
            | Operand::F64(_)
            | Operand::AddrVar(..)
            | Operand::AddrGlobal(..)
            | Operand::AddrImm(_)
            | Operand::Sink
            | Operand::GlobalOffset(..)
            | Operand::VarOffset(..) => {}
        }
    }

    /// The registers `inst` writes, appended to `out`.
    pub fn defs(&self, inst: &Instruction, out: &mut Vec<RegId>) {
        if self.writes_first(inst) {
            if let Some(&first) = self.args(inst).first() {
                self.operand_registers(first, out);
            }
        }
    }

    /// The registers `inst` may read (its guard first), appended to `out`.
    pub fn uses(&self, inst: &Instruction, out: &mut Vec<RegId>) {
        if let Some(g) = inst.guard {
            out.push(g.reg);
        }
        let skip = usize::from(self.writes_first(inst));
        for &op in &self.args(inst)[skip..] {
            self.operand_registers(op, out);
        }
    }

    /// [`Body::uses`] and [`Body::defs`] of `inst` into cleared vectors;
    /// returns whether the write is unconditional (no guard).
    pub fn def_use(&self, inst: &Instruction, uses: &mut Vec<RegId>, defs: &mut Vec<RegId>) -> bool {
        uses.clear();
        defs.clear();
        self.uses(inst, uses);
        self.defs(inst, defs);
        inst.guard.is_none()
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::{Body, Instruction, Statement};

    /// Defs and uses of each instruction of a kernel body, by register name.
    fn facts(body: &str) -> Vec<(Vec<String>, Vec<String>)> {
        let src = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.func (.reg .b32 r) f(.reg .b32 a) {{ mov.b32 r, a; ret; }}\n\
             .visible .entry k(.param .u64 p) {{\n.reg .b32 %r<20>;\n.reg .b64 %rd<20>;\n.reg .pred %p<8>;\n.shared .b64 bar;\n{body}\nret;\n}}"
        );
        let m = crate::parse(&src).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
        let k = m.kernels().next().expect("the kernel");
        let b: &Body = k.body.as_ref().expect("a body");
        let name = |r: u32| crate::reg_name(k, b, r);
        let mut out = Vec::new();
        for s in &b.statements {
            let Statement::Instruction(i) = s else { continue };
            let i: &Instruction = i;
            let (mut uses, mut defs) = (Vec::new(), Vec::new());
            b.def_use(i, &mut uses, &mut defs);
            out.push((defs.into_iter().map(name).collect(), uses.into_iter().map(name).collect()));
        }
        out.pop(); // the closing `ret`
        out
    }

    fn one(body: &str) -> (Vec<String>, Vec<String>) {
        let mut f = facts(body);
        assert_eq!(f.len(), 1, "{body}");
        f.remove(0)
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn destinations_and_sources_of_plain_instructions() {
        assert_eq!(one("add.s32 %r1, %r2, %r3;"), (names(&["%r1"]), names(&["%r2", "%r3"])));
        assert_eq!(one("@!%p1 add.s32 %r1, %r1, 4;"), (names(&["%r1"]), names(&["%p1", "%r1"])));
        assert_eq!(one("setp.lt.s32 %p1|%p2, %r1, %r2;"), (names(&["%p1", "%p2"]), names(&["%r1", "%r2"])));
        assert_eq!(one("selp.b32 %r1, %r2, %r3, !%p1;").1, names(&["%r2", "%r3", "%p1"]));
        assert_eq!(one("ld.global.v2.u32 {%r1, %r2}, [%rd1+8];"), (names(&["%r1", "%r2"]), names(&["%rd1"])));
        assert_eq!(one("st.global.v2.u32 [%rd1], {%r1, %r2};"), (names(&[]), names(&["%rd1", "%r1", "%r2"])));
        assert_eq!(one("atom.global.add.u32 %r1, [%rd1], %r2;"), (names(&["%r1"]), names(&["%rd1", "%r2"])));
        assert_eq!(one("red.global.add.u32 [%rd1], %r2;"), (names(&[]), names(&["%rd1", "%r2"])));
        assert_eq!(one("mov.u32 %r1, %tid.x;"), (names(&["%r1"]), names(&[])));
    }

    #[test]
    fn forms_whose_first_operand_is_a_source() {
        // Barriers read their id and count; the reductions write a result.
        assert_eq!(one("bar.sync %r1, %r2;"), (names(&[]), names(&["%r1", "%r2"])));
        assert_eq!(one("bar.red.popc.u32 %r3, 0, %p1;"), (names(&["%r3"]), names(&["%p1"])));
        assert_eq!(one("barrier.red.or.pred %p2, 1, %p1;"), (names(&["%p2"]), names(&["%p1"])));
        // mbarrier: an address first is a source.
        assert_eq!(one("mbarrier.init.shared.b64 [bar], %r1;"), (names(&[]), names(&["%r1"])));
        assert_eq!(one("mbarrier.arrive.shared.b64 %rd1, [bar];"), (names(&["%rd1"]), names(&[])));
        assert_eq!(one("mbarrier.test_wait.shared.b64 %p1, [bar], %rd1;"), (names(&["%p1"]), names(&["%rd1"])));
        // Calls write their return list and read their arguments.
        assert_eq!(one("call.uni (%r1), f, (%r2);"), (names(&["%r1"]), names(&["%r2"])));
        assert_eq!(one("nanosleep.u32 %r1;"), (names(&[]), names(&["%r1"])));
    }

    #[test]
    fn texture_destinations_with_a_predicate() {
        let (defs, uses) = one("tex.2d.v4.f32.f32 {%r1, %r2, %r3, %r4}|%p1, [%rd1, {%r5, %r6}];");
        assert_eq!(defs, names(&["%r1", "%r2", "%r3", "%r4", "%p1"]));
        assert_eq!(uses, names(&["%rd1", "%r5", "%r6"]));
    }
}
