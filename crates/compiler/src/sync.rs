//! Barriers and warp collectives: calls into the runtime, which may suspend
//! the calling thread until the other participants arrive.

use crate::cpu_abi::{bar_red, matching, redux, shfl, vote};
use crate::ir::{Ty, V};
use crate::lower::{FnLower, Res};
use ptx::ast::*;

const FULL_MASK: i128 = 0xffff_ffff;

impl<'c, 'm> FnLower<'c, 'm> {
    fn site(&mut self) -> u32 {
        let s = self.cx.next_site;
        self.cx.next_site += 1;
        s
    }

    /// The member mask operand at `i`, or all lanes for the legacy forms.
    fn mask_arg(&mut self, args: &[Operand], i: usize) -> Res<V> {
        match args.get(i) {
            Some(op) => self.get(op, Ty::I32),
            None => Ok(V::int(Ty::I32, FULL_MASK)),
        }
    }

    pub fn barrier(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        if inst.has(b, Flag::Warp) {
            let mask = self.mask_arg(args, 0)?;
            let site = self.site();
            self.cx.declare_runtime(&crate::cpu_abi::runtime::WARP_SYNC);
            self.out.op(format_args!("call void @__anycuda_warp_sync(ptr %ctx, i32 %lin, {mask}, i32 {site})"));
            self.race_sync(crate::cpu_abi::memcheck::SYNC_WARP, None);
            return Ok(());
        }
        if inst.scope(b) == Some(Scope::Cluster) {
            // A cluster is one block here: waiting for the cluster is waiting
            // for the whole block, as barrier 0 without a count does (the
            // runtimes have barriers 0-15 only; a program that waits at
            // the cluster barrier in some threads and at barrier 0 in
            // others would hang on hardware); arriving alone needs no
            // action.
            if inst.has(b, Flag::Arrive) {
                return Ok(());
            }
            let site = self.site();
            self.cx.declare_runtime(&crate::cpu_abi::runtime::BARRIER);
            self.out.op(format_args!("call void @__anycuda_barrier(ptr %ctx, i32 %lin, i32 0, i32 0, i32 {site})"));
            self.race_sync(crate::cpu_abi::memcheck::SYNC_BLOCK, None);
            return Ok(());
        }
        // AMD GPUs have one barrier per workgroup (`s_barrier`), which every
        // wavefront of the block must reach: a barrier for part of the
        // block (a thread count) or an arrival that does not wait cannot be
        // built on it, and on wave64 two warps share a wavefront, so one
        // cannot wait for the other. Refused rather than run wrong.
        let counted = if inst.has(b, Flag::Red) { args.len() == 4 } else { args.len() >= 2 };
        if !self.cx.facts.partial_barriers && (counted || inst.has(b, Flag::Arrive)) {
            let form =
                if inst.has(b, Flag::Arrive) { "an arrival without waiting (`bar.arrive`)" } else { "a barrier with a thread count" };
            return self.unsupported(format!(
                "{form} (a named barrier for part of the block) on AMD GPUs: their one barrier per workgroup waits for every wavefront"
            ));
        }
        if inst.has(b, Flag::Red) {
            // bar.red.op.type d, a{, b}, {!}c
            let id = self.get(&args[1], Ty::I32)?;
            let (count, pred) = if args.len() == 4 {
                (self.get(&args[2], Ty::I32)?, self.get(&args[3], Ty::I1)?)
            } else {
                (V::int(Ty::I32, 0), self.get(&args[2], Ty::I1)?)
            };
            let op = if inst.has(b, Flag::Popc) {
                bar_red::POPC
            } else if inst.has(b, Flag::And) {
                bar_red::AND
            } else if inst.has(b, Flag::Or) {
                bar_red::OR
            } else {
                return self.invalid("bar.red needs .popc, .and or .or");
            };
            let p = self.zext(&pred, Ty::I32);
            let site = self.site();
            self.cx.declare_runtime(&crate::cpu_abi::runtime::BARRIER_RED);
            let r = self.out.def(
                Ty::I32,
                format_args!("call i32 @__anycuda_barrier_red(ptr %ctx, i32 %lin, {id}, {count}, i32 {op}, {p}, i32 {site})"),
            );
            self.race_sync(crate::cpu_abi::memcheck::SYNC_BLOCK, None);
            let r = if op == bar_red::POPC { r } else { self.icmp("ne", &r, &V::int(Ty::I32, 0)) };
            return self.set(&args[0], r);
        }
        let id = match args.first() {
            Some(a) => self.get(a, Ty::I32)?,
            None => V::int(Ty::I32, 0),
        };
        let count = match args.get(1) {
            Some(a) => self.get(a, Ty::I32)?,
            None => V::int(Ty::I32, 0),
        };
        let site = self.site();
        let rt = if inst.has(b, Flag::Arrive) { crate::cpu_abi::runtime::BARRIER_ARRIVE } else { crate::cpu_abi::runtime::BARRIER };
        self.cx.declare_runtime(&rt);
        let f = rt.name;
        self.out.op(format_args!("call void @{f}(ptr %ctx, i32 %lin, {id}, {count}, i32 {site})"));
        self.race_sync(crate::cpu_abi::memcheck::SYNC_BLOCK, None);
        Ok(())
    }

    pub fn shfl(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let mode = if inst.has(b, Flag::Up) {
            shfl::UP
        } else if inst.has(b, Flag::Down) {
            shfl::DOWN
        } else if inst.has(b, Flag::Bfly) {
            shfl::BFLY
        } else if inst.has(b, Flag::Idx) {
            shfl::IDX
        } else {
            return self.invalid("shfl needs .up, .down, .bfly or .idx");
        };
        let a = self.get(&args[1], Ty::I32)?;
        let bb = self.get(&args[2], Ty::I32)?;
        let c = self.get(&args[3], Ty::I32)?;
        let mask = self.mask_arg(args, 4)?;
        let site = self.site();
        self.cx.declare_runtime(&crate::cpu_abi::runtime::SHFL);
        let r = self
            .out
            .def(Ty::I64, format_args!("call i64 @__anycuda_shfl(ptr %ctx, i32 %lin, i32 {mode}, {a}, {bb}, {c}, {mask}, i32 {site})"));
        let v = self.trunc(&r, Ty::I32);
        let p = self.bin("lshr", &r, &V::int(Ty::I64, 32));
        let p = self.trunc(&p, Ty::I1);
        match args[0] {
            Operand::PredPair(d, q) => {
                self.set(&Operand::Reg(d), v)?;
                self.set(&Operand::Reg(q), p)
            }
            other => self.set(&other, v),
        }
    }

    pub fn vote(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let mode = if inst.has(b, Flag::All) {
            vote::ALL
        } else if inst.has(b, Flag::Any) {
            vote::ANY
        } else if inst.has(b, Flag::Uni) {
            vote::UNI
        } else if inst.has(b, Flag::Ballot) {
            vote::BALLOT
        } else {
            return self.invalid("vote needs .all, .any, .uni or .ballot");
        };
        let p = self.get(&args[1], Ty::I1)?;
        let p = self.zext(&p, Ty::I32);
        let mask = self.mask_arg(args, 2)?;
        let site = self.site();
        self.cx.declare_runtime(&crate::cpu_abi::runtime::VOTE);
        let r = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_vote(ptr %ctx, i32 %lin, i32 {mode}, {p}, {mask}, i32 {site})"));
        let r = if mode == vote::BALLOT { r } else { self.icmp("ne", &r, &V::int(Ty::I32, 0)) };
        self.set(&args[0], r)
    }

    pub fn match_sync(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let mode = if inst.has(b, Flag::All) { matching::ALL } else { matching::ANY };
        let t = inst.ty(b).unwrap_or(Type::B32);
        let v = self.get(&args[1], Ty::int(t.bits()))?;
        let v = self.zext(&v, Ty::I64);
        let mask = self.mask_arg(args, 2)?;
        let site = self.site();
        self.cx.declare_runtime(&crate::cpu_abi::runtime::MATCH);
        let r = self.out.def(Ty::I64, format_args!("call i64 @__anycuda_match(ptr %ctx, i32 %lin, i32 {mode}, {v}, {mask}, i32 {site})"));
        let m = self.trunc(&r, Ty::I32);
        let p = self.bin("lshr", &r, &V::int(Ty::I64, 32));
        let p = self.trunc(&p, Ty::I1);
        match args[0] {
            Operand::PredPair(d, q) => {
                self.set(&Operand::Reg(d), m)?;
                self.set(&Operand::Reg(q), p)
            }
            other => self.set(&other, m),
        }
    }

    pub fn redux(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let t = inst.ty(b).unwrap_or(Type::U32);
        if t.is_float() {
            return self.unsupported(format!("`{}`", self.describe(inst)));
        }
        let signed = t.is_signed();
        let op = if inst.has(b, Flag::AddOp) {
            redux::ADD
        } else if inst.has(b, Flag::MinOp) {
            if signed {
                redux::MIN_S32
            } else {
                redux::MIN_U32
            }
        } else if inst.has(b, Flag::MaxOp) {
            if signed {
                redux::MAX_S32
            } else {
                redux::MAX_U32
            }
        } else if inst.has(b, Flag::And) {
            redux::AND
        } else if inst.has(b, Flag::Or) {
            redux::OR
        } else if inst.has(b, Flag::Xor) {
            redux::XOR
        } else {
            return self.invalid("redux needs an operation");
        };
        let v = self.get(&args[1], Ty::I32)?;
        let mask = self.mask_arg(args, 2)?;
        let site = self.site();
        self.cx.declare_runtime(&crate::cpu_abi::runtime::REDUX);
        let r = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_redux(ptr %ctx, i32 %lin, i32 {op}, {v}, {mask}, i32 {site})"));
        self.set(&args[0], r)
    }

    pub fn activemask(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let site = self.site();
        self.cx.declare_runtime(&crate::cpu_abi::runtime::ACTIVEMASK);
        let r = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_activemask(ptr %ctx, i32 %lin, i32 {site})"));
        self.set(&args[0], r)
    }

    /// A meeting of the warp's lanes (`meet.rs`): `activemask`'s
    /// scheduling, its result unused. Code after a branch or `ret` that
    /// nothing reaches has no lanes to meet.
    pub fn meet_lanes(&mut self) {
        if self.out.terminated {
            return;
        }
        let site = self.site();
        self.cx.declare_runtime(&crate::cpu_abi::runtime::ACTIVEMASK);
        self.out.op(format_args!("call i32 @__anycuda_activemask(ptr %ctx, i32 %lin, i32 {site})"));
    }

    /// `elect.sync d|p, mask`: the lowest participating lane is the leader.
    pub fn elect(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let mask = self.mask_arg(args, 1)?;
        let site = self.site();
        self.cx.declare_runtime(&crate::cpu_abi::runtime::VOTE);
        let ballot = self
            .out
            .def(Ty::I32, format_args!("call i32 @__anycuda_vote(ptr %ctx, i32 %lin, i32 {}, i32 1, {mask}, i32 {site})", vote::BALLOT));
        let f = self.intrinsic("llvm.cttz.i32", Ty::I32, &[Ty::I32, Ty::I1]);
        let leader = self.out.def(Ty::I32, format_args!("call i32 {f}({ballot}, i1 false)"));
        let lane = self.out.def(Ty::I32, format_args!("and i32 %lin, 31"));
        let is = self.icmp("eq", &lane, &leader);
        match args[0] {
            Operand::PredPair(d, p) => {
                self.set(&Operand::Reg(d), leader)?;
                self.set(&Operand::Reg(p), is)
            }
            // `_|%p`: only whether this thread is the leader.
            Operand::SinkPred(p) => self.set(&Operand::Reg(p), is),
            other => self.set(&other, leader),
        }
    }
}
