//! Meeting points: where a kernel run thread by thread makes the lanes of
//! a warp meet, so that their memory effects are ordered as a GPU's warp
//! in lockstep orders them.
//!
//! Thread by thread, one coroutine per thread runs until it suspends (a
//! barrier, a warp collective); between suspensions lane 0 runs its whole
//! stretch of code before lane 1 starts it. A GPU's warp runs each
//! instruction for all its converged lanes before the next, so where a
//! lane reads shared memory another lane of its warp wrote in the same
//! stretch, or writes what another lane read there (llama.cpp's
//! FlashAttention kernels read a tile in one iteration and overwrite it in
//! the next with no barrier between, relying on that order), the two
//! orders give different results. Warp mode keeps the order by
//! construction; a kernel too big for it runs thread by thread with a
//! meeting before each memory access that could observe such a reordering:
//! the lanes of the warp wait there for each other (`activemask`'s
//! scheduling: the point completes when every live lane reached it, or,
//! when nothing else can run, with the lanes that did), which is where a
//! converged warp would be.
//!
//! [`meeting_points`] is a pure function of the body: a forward data-flow
//! analysis over statements whose state is, per memory class (shared,
//! global; a generic address is both), which kinds of access (read, write,
//! atomic) some lane may have made since the warp last met. A barrier or a
//! warp collective is a meeting; an access that conflicts with the state
//! (a read after a write, a write after a read, an atomic after a plain
//! read or write and the reverse: atomics do not race with atomics, and
//! plain writes after plain writes are left unordered, see [`conflicts`])
//! gets a meeting before it. Invariant: on every path through the body,
//! between a read and a write of one class, or an atomic and a plain
//! access, there is a meeting or a barrier. A body without any meeting
//! runs thread by thread as it would in lockstep, and needs none.
//! Read-only memory (`.nc`, `ldu`, constants, parameters, textures) and
//! local memory cannot be exchanged through and are ignored.

use crate::lockstep::{is_shared, label_positions, names_shared};
use ptx::ast::*;

const READ: u8 = 1;
const WRITE: u8 = 2;
const ATOMIC: u8 = 4;
/// The bits of the global class; the shared class's are the low three.
const GLOBAL: u8 = 3;

/// What one instruction does, for the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Nothing that orders or touches exchangeable memory.
    Other,
    /// The warp's lanes (or the block's threads) meet here.
    Meet,
    /// A memory access: the kinds it is checked as and the state bits it
    /// adds (shared in the low three, global in the next three; they
    /// differ only for `cp.async`). `after_meeting`: the instruction is a
    /// warp collective that accesses memory after its lanes met
    /// (`ldmatrix`, `wmma.load`...).
    Access { check: u8, adds: u8, after_meeting: bool },
}

fn class_bits(shared: bool, global: bool, kind: u8) -> u8 {
    (if shared { kind } else { 0 }) | (if global { kind << GLOBAL } else { 0 })
}

fn step(m: &Module, f: &Function, b: &Body, inst: &Instruction) -> Step {
    use Opcode::*;
    let space = inst.space(b);
    let shared = inst.spaces(b).any(is_shared) || b.args(inst).iter().any(|a| names_shared(m, f, b, a));
    // Where the access may land: `.shared`, `.global`, or a generic
    // address (either).
    let (to_shared, to_global) = if shared {
        (true, false)
    } else {
        match space {
            None => (true, true),
            Some(StateSpace::Global) => (false, true),
            Some(_) => (false, false),
        }
    };
    let access = |kind: u8, after_meeting: bool| {
        let bits = class_bits(to_shared, to_global, kind);
        if bits == 0 && !after_meeting {
            Step::Other
        } else {
            Step::Access { check: bits, adds: bits, after_meeting }
        }
    };
    let global_access = |kind: u8| {
        let bits = class_bits(false, true, kind);
        Step::Access { check: bits, adds: bits, after_meeting: false }
    };
    match inst.op {
        Bar | Barrier => {
            // An arrival does not wait for anyone.
            if inst.has(b, Flag::Arrive) {
                Step::Other
            } else {
                Step::Meet
            }
        }
        Shfl | Vote | Match | Redux | Activemask | Elect => Step::Meet,
        Mma => Step::Meet,
        Ld if inst.has(b, Flag::Nc) => Step::Other,
        Ld => access(READ, false),
        Ldu | Prefetch | Prefetchu | Tex | Tld4 | Txq | Suq => Step::Other,
        St => access(WRITE, false),
        Atom | Red | Mbarrier => access(ATOMIC, false),
        Ldmatrix => access(READ, true),
        Stmatrix => access(WRITE, true),
        Wmma if inst.has(b, Flag::MmaOp) => Step::Meet,
        Wmma if inst.has(b, Flag::Load) => access(READ, true),
        Wmma => access(WRITE, true),
        // `cp.async` reads global memory when issued and writes shared
        // memory at some point before the issuing thread's wait: it must
        // not overtake an earlier access of another lane, but nothing may
        // read or write its bytes before a wait and a barrier (a race on a
        // GPU too), so it adds no shared-memory state of its own.
        Cp if inst.has(b, Flag::CommitGroup) || inst.has(b, Flag::WaitGroup) || inst.has(b, Flag::WaitAll) => Step::Other,
        Cp => Step::Access {
            check: class_bits(true, false, WRITE) | class_bits(false, true, READ),
            adds: class_bits(false, true, READ),
            after_meeting: false,
        },
        Suld => global_access(READ),
        Sust => global_access(WRITE),
        Sured => global_access(ATOMIC),
        _ => Step::Other,
    }
}

/// Whether an access adding `bits` conflicts with `state`: within a class,
/// a read after a write or atomic, a write after a read or atomic, an
/// atomic after a plain read or write. A plain write after a plain write
/// is not a conflict: the order differs only where two lanes store to the
/// same bytes through different instructions with nothing reading them
/// between (a race by CUDA's memory model), and meeting there cost a ray
/// tracer's three colour stores half its speed (60 -> 90 ms).
fn conflicts(state: u8, bits: u8) -> bool {
    [0, GLOBAL].into_iter().any(|shift| {
        let (s, a) = ((state >> shift) & 7, (bits >> shift) & 7);
        (a & READ != 0 && s & (WRITE | ATOMIC) != 0)
            || (a & WRITE != 0 && s & (READ | ATOMIC) != 0)
            || (a & ATOMIC != 0 && s & (READ | WRITE) != 0)
    })
}

/// The statements of `b` (a function of `m`) before which a thread-by-thread
/// run makes the warp's lanes meet: one flag per statement, true only on
/// instructions. See the module's description for the invariant.
pub fn meeting_points(m: &Module, f: &Function, b: &Body) -> Vec<bool> {
    let n = b.statements.len();
    let label_at = label_positions(b);
    let steps: Vec<Step> =
        b.statements.iter().map(|s| if let Statement::Instruction(i) = s { step(m, f, b, i) } else { Step::Other }).collect();
    // Successors of each statement.
    let successors = |i: usize, out: &mut Vec<usize>| {
        out.clear();
        let Statement::Instruction(inst) = &b.statements[i] else {
            if i + 1 < n {
                out.push(i + 1);
            }
            return;
        };
        let unconditional = inst.guard.is_none();
        match inst.op {
            Opcode::Bra => {
                if let Some(Operand::Label(l)) = b.args(inst).first() {
                    out.extend(label_at.get(l).copied());
                }
                if !unconditional && i + 1 < n {
                    out.push(i + 1);
                }
            }
            // Any label may be an indirect branch's target.
            Opcode::Brx => {
                out.extend(label_at.values().copied());
                if !unconditional && i + 1 < n {
                    out.push(i + 1);
                }
            }
            Opcode::Ret | Opcode::Exit | Opcode::Trap if unconditional => {}
            _ => {
                if i + 1 < n {
                    out.push(i + 1);
                }
            }
        }
    };
    let mut state_in: Vec<Option<u8>> = vec![None; n];
    let mut meet = vec![false; n];
    let mut work: Vec<usize> = Vec::new();
    if n > 0 {
        state_in[0] = Some(0);
        work.push(0);
    }
    let mut next = Vec::new();
    while let Some(i) = work.pop() {
        let state = state_in[i].unwrap_or(0);
        let out = match steps[i] {
            Step::Other => state,
            Step::Meet => 0,
            Step::Access { check, adds, after_meeting } => {
                if after_meeting {
                    adds
                } else if conflicts(state, check) {
                    meet[i] = true;
                    adds
                } else if meet[i] {
                    // Met before: stays a meeting (the state only grows).
                    adds
                } else {
                    state | adds
                }
            }
        };
        successors(i, &mut next);
        for &s in &next {
            let merged = state_in[s].map_or(out, |old| old | out);
            if state_in[s] != Some(merged) {
                state_in[s] = Some(merged);
                work.push(s);
            }
        }
    }
    meet
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(body: &str) -> Vec<String> {
        let src = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\
             .reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n.reg .pred %p<4>;\n.shared .align 4 .b8 s[1024];\n{body}\n}}\n"
        );
        let m = ptx::parse(&src).expect("parses");
        let Some(Item::Function(f)) = m.items.iter().find(|i| matches!(i, Item::Function(_))) else { panic!("no kernel") };
        let b = f.body.as_ref().expect("a body");
        let flags = meeting_points(&m, f, b);
        flags
            .iter()
            .enumerate()
            .filter(|(_, &x)| x)
            .map(|(i, _)| match &b.statements[i] {
                Statement::Instruction(inst) => format!("{:?}", inst.op),
                _ => "?".into(),
            })
            .collect()
    }

    #[test]
    fn a_read_after_a_write_of_another_lane_meets_first() {
        // s[tid] = x; y = s[tid ^ 1]: the load meets, the store does not.
        let p = points(
            "mov.u32 %r1, %tid.x;\nshl.b32 %r2, %r1, 2;\nmov.u32 %r3, s;\nadd.s32 %r4, %r3, %r2;\nst.shared.u32 [%r4], %r1;\n\
             xor.b32 %r5, %r2, 4;\nadd.s32 %r6, %r3, %r5;\nld.shared.u32 %r7, [%r6];\nret;",
        );
        assert_eq!(p, ["Ld"]);
    }

    #[test]
    fn a_barrier_between_needs_no_meeting() {
        let p = points("mov.u32 %r3, s;\nst.shared.u32 [%r3], 1;\nbar.sync 0;\nld.shared.u32 %r7, [%r3+4];\nret;");
        assert!(p.is_empty(), "{p:?}");
        // __syncwarp and shuffles are meetings too.
        let p = points("mov.u32 %r3, s;\nst.shared.u32 [%r3], 1;\nbar.warp.sync -1;\nld.shared.u32 %r7, [%r3+4];\nret;");
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn a_loop_that_reads_then_overwrites_meets_at_the_write() {
        // The FlashAttention shape: read the tile, go round, overwrite it
        // in the next iteration with no barrier.
        let p = points(
            "mov.u32 %r3, s;\nmov.u32 %r1, 0;\n$L:\nld.shared.u32 %r7, [%r3];\nst.global.u32 [%rd1], %r7;\n\
             st.shared.u32 [%r3+4], %r1;\nbar.sync 0;\nld.shared.u32 %r6, [%r3+8];\nadd.s32 %r1, %r1, 1;\n\
             setp.lt.u32 %p1, %r1, 4;\n@%p1 bra $L;\nret;",
        );
        // After the barrier: ld (read) -> back edge -> ld (read) -> st.global
        // -> st.shared (write after read: meets).
        assert_eq!(p, ["St"]);
    }

    #[test]
    fn reads_alone_and_read_only_memory_never_meet() {
        let p = points(
            "mov.u32 %r3, s;\nld.shared.u32 %r1, [%r3];\nld.shared.u32 %r2, [%r3+4];\nld.global.nc.u32 %r4, [%rd1];\n\
             ld.param.u64 %rd2, [p];\nld.global.u32 %r5, [%rd2];\nret;",
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn classes_are_apart_and_generic_addresses_are_both() {
        // A global store then a shared load: different memory.
        let p = points("mov.u32 %r3, s;\nst.global.u32 [%rd1], 1;\nld.shared.u32 %r1, [%r3];\nret;");
        assert!(p.is_empty(), "{p:?}");
        // A global store then a generic load: may be the same bytes.
        let p = points("st.global.u32 [%rd1], 1;\nld.u32 %r1, [%rd2];\nret;");
        assert_eq!(p, ["Ld"]);
    }

    #[test]
    fn async_copies_wait_for_earlier_reads_only() {
        // A read of the tile, then a copy into it: the copy must not
        // overtake another lane's read.
        let p = points(
            "mov.u32 %r3, s;\nld.shared.u32 %r1, [%r3];\ncp.async.ca.shared.global [%r3], [%rd1], 4;\ncp.async.commit_group;\n\
             cp.async.wait_group 0;\nret;",
        );
        assert_eq!(p, ["Cp"], "only the copy meets, not the commit or the wait");
        // Copies one after another: their writes are unordered until a
        // wait on a GPU too.
        let p = points(
            "mov.u32 %r3, s;\ncp.async.ca.shared.global [%r3], [%rd1], 4;\ncp.async.ca.shared.global [%r3+4], [%rd1+4], 4;\n\
             cp.async.wait_all;\nbar.sync 0;\nld.shared.u32 %r1, [%r3];\nret;",
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn stores_after_stores_do_not_meet() {
        // A pixel's three colours: plain writes one after another.
        let p = points("st.global.f32 [%rd1], 0f3F800000;\nst.global.f32 [%rd1+4], 0f3F800000;\nst.global.f32 [%rd1+8], 0f3F800000;\nret;");
        assert!(p.is_empty(), "{p:?}");
        // But a store after an atomic of another lane does.
        let p = points("atom.global.add.u32 %r1, [%rd1], 1;\nst.global.u32 [%rd1], 0;\nret;");
        assert_eq!(p, ["St"]);
    }

    #[test]
    fn atomics_do_not_meet_atomics() {
        let p = points("mov.u32 %r3, s;\natom.shared.add.u32 %r1, [%r3], 1;\natom.shared.add.u32 %r2, [%r3], 1;\nret;");
        assert!(p.is_empty(), "{p:?}");
        let p = points("mov.u32 %r3, s;\natom.shared.add.u32 %r1, [%r3], 1;\nld.shared.u32 %r2, [%r3];\nret;");
        assert_eq!(p, ["Ld"]);
    }
}
