//! Asynchronous copies (`cp.async`) and the `mbarrier` family.
//!
//! `cp.async` copies at issue time. That is exact: the PTX memory model
//! makes the copy's writes observable to the issuing thread only once
//! `cp.async.wait_group`/`wait_all` or an `mbarrier` that tracks it says the
//! copy completed, and to other threads only through a later
//! synchronisation, so a program cannot tell an early completion from a
//! late one (reading the destination earlier is a data race). The sizes
//! are exact: `cp-size` bytes land at the destination, the first
//! `src-size` of them read from the source and the rest zero ("the
//! remaining bytes ... are filled with zeros"), and no byte past `src-size`
//! is read (`src-size` 0 with an out-of-range source is the usual way to
//! pad a tile). With `ignore-src` true nothing is read. The groups then
//! have nothing left to wait for: `commit_group`, `wait_group` and
//! `wait_all` are no-ops, and `cp.async.mbarrier.arrive` performs its
//! arrive-on at once (with `.noinc`, an arrival counted against the
//! expected count; without it "the pending count of the mbarrier object is
//! incremented by 1 prior to the asynchronous arrive-on operation", which
//! leaves the object as it was).
//!
//! An mbarrier is a 64-bit word in shared memory, laid out here as
//! * bits 0-20: the pending arrival count of the current phase,
//! * bits 21-41: the expected arrival count (`init`'s count, less drops),
//! * bits 42-62: the transaction count (21-bit two's complement),
//! * bit 63: the parity of the current phase.
//!
//! Every update is an atomic read-modify-write (a compare-and-swap loop, so
//! targets whose lanes run concurrently see the same object) that returns
//! the word before it: that is the opaque `state` of `arrive`, whose bits
//! 0-20 are what `pending_count` returns ("the pending count of the mbarrier
//! object prior to the arrive-on operation from which the state register
//! was obtained"). A phase completes when its pending count and its
//! transaction count are both zero: the parity flips, the pending count
//! becomes the expected count and the transaction count zero.
//! `test_wait`/`try_wait` with a state are true when the current parity
//! differs from the state's, `.parity` forms when it differs from the
//! operand's (the phase of that parity is the preceding one, so it has
//! completed). `try_wait` never blocks; the loops that poll it are spin
//! loops (`layout::loop_may_spin`), which yield to the other threads or
//! warps of the block at their back edge. In warp mode the lanes of a warp
//! update an mbarrier one after another, in lane order.

use crate::ir::{Ty, V};
use crate::lower::{FnLower, Res};
use ptx::ast::*;

/// Fields of the mbarrier word.
const COUNT_MASK: i64 = (1 << 21) - 1;

impl<'c, 'm> FnLower<'c, 'm> {
    /// `cp.async...` and `mbarrier...`.
    pub fn async_copy(&mut self, inst: &Instruction) -> Res<()> {
        match inst.op {
            Opcode::Cp => self.cp_async(inst),
            Opcode::Mbarrier => self.mbarrier(inst),
            _ => self.unsupported(format!("instruction `{}`", self.describe(inst))),
        }
    }

    /// The lanes an instruction acts for: the warp's mask, or true.
    fn acting(&mut self) -> V {
        if self.warp.is_some() {
            self.mask()
        } else {
            V::int(Ty::I1, 1)
        }
    }

    /// Each lane's pointer for an address operand in `space`.
    fn lane_pointer(&mut self, op: &Operand, space: Option<StateSpace>) -> Res<V> {
        if self.warp.is_some() {
            let (p, uniform) = self.warp_address(op, space)?;
            return Ok(if uniform { self.vec(p) } else { p });
        }
        self.address(op, space)
    }

    fn cp_async(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        if !inst.has(b, Flag::Async) || inst.has(b, Flag::Bulk) || inst.has(b, Flag::Tensor) || inst.has(b, Flag::Reduce) {
            return self.unsupported(format!("instruction `{}`", self.describe(inst)));
        }
        if inst.has(b, Flag::CommitGroup) || inst.has(b, Flag::WaitGroup) || inst.has(b, Flag::WaitAll) {
            return Ok(());
        }
        let args = b.args(inst);
        if inst.has(b, Flag::Mbarrier) {
            if !inst.has(b, Flag::Arrive) {
                return self.unsupported(format!("instruction `{}`", self.describe(inst)));
            }
            let space = inst.space(b);
            let p = self.mbar_pointer(&args[0], space, crate::memcheck::Access::ReadWrite)?;
            self.race_mbarrier_arrival();
            if !inst.has(b, Flag::Noinc) {
                // Incremented, then arrived at: the object is unchanged.
                return Ok(());
            }
            let on = self.acting();
            self.mbar_update(&p, &V::int(Ty::I32, 1), &V::int(Ty::I32, 0), &V::int(Ty::I32, 0), &on);
            return Ok(());
        }
        let cache = inst.cache_op(b);
        if !matches!(cache, Some(CacheOp::Ca | CacheOp::Cg)) {
            return self.unsupported(format!("`{}` (cp.async needs .ca or .cg)", self.describe(inst)));
        }
        if args.len() < 3 {
            return self.invalid("cp.async takes [dst], [src], cp-size");
        }
        let Operand::Imm(size) = args[2] else { return self.invalid("cp.async's cp-size must be a constant") };
        if !matches!(size, 4 | 8 | 16) || cache == Some(CacheOp::Cg) && size != 16 {
            return self.invalid(format!("cp.async size {size} (.ca copies 4, 8 or 16 bytes, .cg 16)"));
        }
        // The operands after cp-size: src-size or ignore-src, then the
        // cache policy when `.L2::cache_hint` says there is one.
        let mut rest: Vec<Operand> = args[3..].to_vec();
        if inst.has(b, Flag::L2CacheHint) {
            rest.pop();
        }
        let (count, on) = match rest.first() {
            None => (V::int(Ty::I32, size as i128), self.acting()),
            Some(op @ (Operand::Reg(_) | Operand::NotReg(_))) if self.is_predicate(op) => {
                // ignore-src: zeros instead of the source.
                let ignore = self.get(op, Ty::I1)?;
                let keep = self.bin("xor", &ignore, &V::int(Ty::I1, 1));
                let n = self.zext(&keep, Ty::I32);
                let n = self.bin("mul", &n, &V::int(Ty::I32, size as i128));
                (n, self.acting())
            }
            Some(op) => (self.get(op, Ty::I32)?, self.acting()),
        };
        let dst_space = inst.spaces(b).next();
        let src_space = inst.spaces(b).nth(1);
        let dst = self.lane_pointer(&args[0], dst_space)?;
        let src = self.lane_pointer(&args[1], src_space)?;
        // Checked mode: the destination's bytes, and exactly the source's
        // bytes read (the count, when a register, checked as it is at run
        // time; none for 0).
        let known = match rest.first() {
            None => Some(size),
            Some(Operand::Imm(n)) => Some((*n).clamp(0, size)),
            Some(_) => None,
        };
        if self.warp.is_some() {
            self.check_lanes(&dst, false, dst_space, size as u32, crate::memcheck::Access::Write);
            if let Some(n) = known {
                self.check_lanes(&src, false, src_space, n as u32, crate::memcheck::Access::Read);
            }
        } else {
            self.check_access(&dst, dst_space, size as u32, crate::memcheck::Access::Write);
            if let Some(n) = known {
                self.check_access(&src, src_space, n as u32, crate::memcheck::Access::Read);
            }
        }
        if known.is_none() {
            let acting = self.zext(&on, Ty::I32);
            let read = self.bin("mul", &count, &acting);
            self.check_access_sized(&src, src_space, &read, size as u32, crate::memcheck::Access::Read);
        }
        let name = "__anycuda_cp_async";
        self.cx.declare("llvm.memcpy.p0.p0.i32", "declare void @llvm.memcpy.p0.p0.i32(ptr, ptr, i32, i1)");
        self.cx.declare("llvm.memset.p0.i32", "declare void @llvm.memset.p0.i32(ptr, i8, i32, i1)");
        self.cx.declare("llvm.umin.i32", "declare i32 @llvm.umin.i32(i32, i32)");
        self.cx.helper(name, || {
            // The first min(n, size) bytes from the source, zeros after.
            format!(
                "define internal i1 @{name}(ptr %dst, ptr %src, i32 %size, i32 %n, i1 %on) #0 {{
entry:
  br i1 %on, label %go, label %done
go:
  %k = call i32 @llvm.umin.i32(i32 %n, i32 %size)
  call void @llvm.memcpy.p0.p0.i32(ptr align 1 %dst, ptr align 1 %src, i32 %k, i1 false)
  %tail = getelementptr i8, ptr %dst, i32 %k
  %z = sub i32 %size, %k
  call void @llvm.memset.p0.i32(ptr align 1 %tail, i8 0, i32 %z, i1 false)
  br label %done
done:
  ret i1 true
}}
"
            )
        });
        let size_v = V::int(Ty::I32, size as i128);
        let _ = self.call_helper(name, Ty::I1, &[Ty::Ptr, Ty::Ptr, Ty::I32, Ty::I32, Ty::I1], &[&dst, &src, &size_v, &count, &on]);
        Ok(())
    }

    fn is_predicate(&self, op: &Operand) -> bool {
        match *op {
            Operand::Reg(r) | Operand::NotReg(r) => self.reg_tys.get(r as usize) == Some(&Ty::I1),
            _ => false,
        }
    }

    /// Applies an update to the mbarrier at `p` for the lanes of `on`:
    /// `arrive` arrivals, `drop` fewer expected arrivals, `tx` more
    /// pending transaction bytes; returns the word before it.
    fn mbar_update(&mut self, p: &V, arrive: &V, drop: &V, tx: &V, on: &V) -> V {
        let name = "__anycuda_mbar_update";
        self.cx.helper(name, || {
            format!(
                "define internal i64 @{name}(ptr %p, i32 %arrive, i32 %drop, i32 %tx, i1 %on) #0 {{
entry:
  br i1 %on, label %start, label %off
off:
  ret i64 0
start:
  %o0 = load atomic i64, ptr %p monotonic, align 8
  br label %loop
loop:
  %old = phi i64 [%o0, %start], [%seen, %loop]
  %pend = and i64 %old, {COUNT_MASK}
  %exp.s = lshr i64 %old, 21
  %exp = and i64 %exp.s, {COUNT_MASK}
  %tx.s = lshr i64 %old, 42
  %txo = and i64 %tx.s, {COUNT_MASK}
  %ph = lshr i64 %old, 63
  %a = zext i32 %arrive to i64
  %d = zext i32 %drop to i64
  %t = sext i32 %tx to i64
  %pend1 = sub i64 %pend, %a
  %pend1m = and i64 %pend1, {COUNT_MASK}
  %exp1 = sub i64 %exp, %d
  %exp1m = and i64 %exp1, {COUNT_MASK}
  %tx1 = add i64 %txo, %t
  %tx1m = and i64 %tx1, {COUNT_MASK}
  %p0 = icmp eq i64 %pend1m, 0
  %t0 = icmp eq i64 %tx1m, 0
  %done = and i1 %p0, %t0
  %pendf = select i1 %done, i64 %exp1m, i64 %pend1m
  %dz = zext i1 %done to i64
  %phf = xor i64 %ph, %dz
  %e.s = shl i64 %exp1m, 21
  %t.s = shl i64 %tx1m, 42
  %ph.s = shl i64 %phf, 63
  %n1 = or i64 %pendf, %e.s
  %n2 = or i64 %n1, %t.s
  %new = or i64 %n2, %ph.s
  %pair = cmpxchg ptr %p, i64 %old, i64 %new acq_rel monotonic, align 8
  %seen = extractvalue {{ i64, i1 }} %pair, 0
  %ok = extractvalue {{ i64, i1 }} %pair, 1
  br i1 %ok, label %out, label %loop
out:
  ret i64 %old
}}
"
            )
        });
        self.call_helper(name, Ty::I64, &[Ty::Ptr, Ty::I32, Ty::I32, Ty::I32, Ty::I1], &[p, arrive, drop, tx, on])
    }

    /// Each lane's pointer to the mbarrier at `op`, checked in checked
    /// mode as an 8-byte `access`.
    fn mbar_pointer(&mut self, op: &Operand, space: Option<StateSpace>, access: crate::memcheck::Access) -> Res<V> {
        let p = self.lane_pointer(op, space)?;
        let access = access.barrier();
        if self.warp.is_none() {
            self.check_access(&p, space, 8, access);
        } else {
            self.check_lanes(&p, false, space, 8, access);
        }
        Ok(p)
    }

    fn mbarrier(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let space = inst.space(b);
        let on = self.acting();
        let zero = V::int(Ty::I32, 0);
        if inst.has(b, Flag::PendingCount) {
            let s = self.get(&args[1], Ty::I64)?;
            let c = self.bin("and", &s, &V::int(Ty::I64, COUNT_MASK as i128));
            let c = self.trunc(&c, Ty::I32);
            return self.set(&args[0], c);
        }
        if inst.has(b, Flag::Init) {
            let p = self.mbar_pointer(&args[0], space, crate::memcheck::Access::Write)?;
            let count = self.get(&args[1], Ty::I32)?;
            let c = self.zext(&count, Ty::I64);
            let c = self.bin("and", &c, &V::int(Ty::I64, COUNT_MASK as i128));
            let e = self.bin("shl", &c, &V::int(Ty::I64, 21));
            let word = self.bin("or", &c, &e);
            self.mbar_store(&p, &word, &on);
            return Ok(());
        }
        if inst.has(b, Flag::Inval) {
            let p = self.mbar_pointer(&args[0], space, crate::memcheck::Access::Write)?;
            self.mbar_store(&p, &V::int(Ty::I64, 0), &on);
            return Ok(());
        }
        if inst.has(b, Flag::TestWait) || inst.has(b, Flag::TryWait) {
            let p = self.mbar_pointer(&args[1], space, crate::memcheck::Access::Read)?;
            let phase = self.mbar_phase(&p, &on);
            let waited = if inst.has(b, Flag::Parity) {
                let q = self.get(&args[2], Ty::I32)?;
                let q = self.bin("and", &q, &V::int(Ty::I32, 1));
                self.zext(&q, Ty::I64)
            } else {
                let s = self.get(&args[2], Ty::I64)?;
                self.bin("lshr", &s, &V::int(Ty::I64, 63))
            };
            let complete = self.icmp("ne", &phase, &waited);
            return match args[0] {
                Operand::PredPair(d, _) => self.set(&Operand::Reg(d), complete),
                other => self.set(&other, complete),
            };
        }
        if inst.has(b, Flag::Arrive) || inst.has(b, Flag::ArriveDrop) {
            let p = self.mbar_pointer(&args[1], space, crate::memcheck::Access::ReadWrite)?;
            let drop = inst.has(b, Flag::ArriveDrop);
            // `.expect_tx`: the third operand is a transaction count and
            // one arrival is made; otherwise it is the arrival count.
            let (count, tx) = if inst.has(b, Flag::ExpectTx) {
                let tx = match args.get(2) {
                    Some(t) => self.get(t, Ty::I32)?,
                    None => return self.invalid("mbarrier.arrive.expect_tx needs a transaction count"),
                };
                (V::int(Ty::I32, 1), tx)
            } else {
                let c = match args.get(2) {
                    Some(c) => self.get(c, Ty::I32)?,
                    None => V::int(Ty::I32, 1),
                };
                (c, zero.clone())
            };
            let d = if drop { count.clone() } else { zero };
            let old = self.mbar_update(&p, &count, &d, &tx, &on);
            self.race_mbarrier_arrival();
            return match args[0] {
                Operand::Sink => Ok(()),
                other => self.set(&other, old),
            };
        }
        if inst.has(b, Flag::ExpectTx) || inst.has(b, Flag::CompleteTx) {
            let p = self.mbar_pointer(&args[0], space, crate::memcheck::Access::ReadWrite)?;
            let n = self.get(&args[1], Ty::I32)?;
            let tx = if inst.has(b, Flag::CompleteTx) { self.bin("sub", &V::int(Ty::I32, 0), &n) } else { n };
            let _ = self.mbar_update(&p, &zero, &zero, &tx, &on);
            return Ok(());
        }
        self.unsupported(format!("instruction `{}`", self.describe(inst)))
    }

    /// Racecheck: the executing threads arrived on an mbarrier.
    fn race_mbarrier_arrival(&mut self) {
        let lanes = if self.warp.is_some() {
            let mask = self.mask();
            Some(self.bits(&mask))
        } else {
            None
        };
        self.race_sync(crate::cpu_abi::memcheck::SYNC_MBARRIER, lanes);
    }

    fn mbar_store(&mut self, p: &V, word: &V, on: &V) {
        let name = "__anycuda_mbar_store";
        self.cx.helper(name, || {
            format!(
                "define internal i1 @{name}(ptr %p, i64 %w, i1 %on) #0 {{
entry:
  br i1 %on, label %go, label %done
go:
  store atomic i64 %w, ptr %p release, align 8
  br label %done
done:
  ret i1 true
}}
"
            )
        });
        let _ = self.call_helper(name, Ty::I1, &[Ty::Ptr, Ty::I64, Ty::I1], &[p, word, on]);
    }

    /// The parity of the current phase, as an i64 0 or 1.
    fn mbar_phase(&mut self, p: &V, on: &V) -> V {
        let name = "__anycuda_mbar_phase";
        self.cx.helper(name, || {
            format!(
                "define internal i64 @{name}(ptr %p, i1 %on) #0 {{
entry:
  br i1 %on, label %go, label %done
go:
  %w = load atomic i64, ptr %p acquire, align 8
  %ph = lshr i64 %w, 63
  br label %done
done:
  %r = phi i64 [0, %entry], [%ph, %go]
  ret i64 %r
}}
"
            )
        });
        self.call_helper(name, Ty::I64, &[Ty::Ptr, Ty::I1], &[p, on])
    }
}
