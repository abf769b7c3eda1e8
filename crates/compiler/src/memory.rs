//! Data movement: `mov`, `ld`, `st`, `cvta`, `isspacep`, `atom`, `red`.

use crate::cpu_abi::offsets;
use crate::ir::{Ty, V};
use crate::lower::{op_ty, FnLower, Res};
use crate::memcheck::Access;
use ptx::ast::*;

fn is_shared(s: Option<StateSpace>) -> bool {
    matches!(s, Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster))
}

/// The LLVM memory ordering of a load/store/atomic, or None for a plain access.
fn ordering(sem: Option<Semantics>, atomic: bool) -> Option<&'static str> {
    match sem {
        Some(Semantics::Acquire) => Some("acquire"),
        Some(Semantics::Release) => Some("release"),
        Some(Semantics::AcqRel) => Some("acq_rel"),
        Some(Semantics::Sc) => Some("seq_cst"),
        Some(Semantics::Relaxed) | Some(Semantics::Mmio) => Some("monotonic"),
        _ if atomic => Some("monotonic"),
        _ => None,
    }
}

/// Whether a plain access's cache operator is one that code communicating
/// between blocks uses: `.cg` (cached in L2 only, where every SM sees the
/// same copy), `.cv` (fetched again each time) and `.wt` (written through).
/// CUB before its move to `.relaxed` accesses published a decoupled
/// look-back tile's 16-byte state with `st.global.cg.v2.u64` and read it
/// with `ld.global.cg.v2.u64`.
pub(crate) fn communicates(inst: &Instruction, b: &Body) -> bool {
    matches!(inst.cache_op(b), Some(CacheOp::Cg | CacheOp::Cv | CacheOp::Wt))
}

/// The integer type of a vector access made as one single-copy access, or
/// None when it is made component by component.
///
/// NVIDIA hardware makes an aligned vector access of up to 16 bytes as one
/// memory transaction, and the synchronisation code of CUB and Thrust
/// relies on it: a decoupled look-back scan publishes a tile's status and
/// value with one `st.relaxed.gpu.v2.u32` and reads them with one
/// `ld.relaxed.gpu.v2.u32`; made as two accesses, a reader can see the new
/// status with the old value, and the scan is wrong. (The PTX memory model
/// itself promises no more than a set of component accesses.) So vector
/// accesses that other threads may observe, volatile, with a memory order
/// or with a cache operator of inter-block communication ([`communicates`]),
/// are made whole: up to 8 bytes as one atomic integer access, 16
/// bytes as one volatile `<2 x i64>` access (a single 16-byte move on
/// x86-64 with AVX and on AMDGPU; an `i128` atomic would be a lock or a
/// library call). Plain accesses stay per component, which the optimiser
/// merges where it pays.
pub(crate) fn single_copy_width(components: usize, size: i64, observed: bool) -> Option<Ty> {
    let total = components as i64 * size;
    (observed && components > 1 && matches!(total, 2 | 4 | 8 | 16)).then(|| Ty::int(total as u32 * 8))
}

impl<'c, 'm> FnLower<'c, 'm> {
    /// One single-copy load of `wide` (see [`single_copy_width`]).
    fn wide_load(&mut self, addr: &V, wide: Ty, order: Option<&str>) -> V {
        if wide == Ty::I128 {
            let v = self.out.def(Ty::I128, format_args!("load volatile <2 x i64>, {addr}, align 16"));
            let w = self.out.def(Ty::I128, format_args!("bitcast <2 x i64> {} to i128", v.s));
            if matches!(order, Some("acquire" | "acq_rel" | "seq_cst")) {
                self.out.op(format_args!("fence acquire"));
            }
            return w;
        }
        let bytes = wide.bits() / 8;
        let o = order.unwrap_or("monotonic");
        self.out.def(wide, format_args!("load atomic {wide}, {addr} {o}, align {bytes}"))
    }

    /// One single-copy store of `w` (see [`single_copy_width`]).
    fn wide_store(&mut self, addr: &V, w: &V, order: Option<&str>) {
        if w.ty == Ty::I128 {
            if matches!(order, Some("release" | "acq_rel" | "seq_cst")) {
                self.out.op(format_args!("fence release"));
            }
            let v = self.out.def(Ty::I128, format_args!("bitcast {w} to <2 x i64>"));
            self.out.op(format_args!("store volatile <2 x i64> {}, {addr}, align 16", v.s));
            return;
        }
        let bytes = w.ty.bits() / 8;
        let o = order.unwrap_or("monotonic");
        self.out.op(format_args!("store atomic {w}, {addr} {o}, align {bytes}"));
    }

    /// Component `k` of type `ety` of a whole vector value (component 0 in
    /// the low bits: little-endian memory).
    pub(crate) fn component(&mut self, w: &V, ety: Ty, k: usize) -> V {
        let shifted = if k == 0 { w.clone() } else { self.bin("lshr", w, &V::int(w.ty, (k as u32 * ety.bits()) as i128)) };
        self.trunc(&shifted, ety)
    }

    /// The whole vector value of type `wide` from its components.
    pub(crate) fn join_components(&mut self, values: &[V], wide: Ty) -> V {
        let mut w = V::int(wide, 0);
        for (k, v) in values.iter().enumerate() {
            let e = self.zext(v, wide);
            let e = if k == 0 { e } else { self.bin("shl", &e, &V::int(wide, (k as u32 * v.ty.bits()) as i128)) };
            w = if k == 0 { e } else { self.bin("or", &w, &e) };
        }
        w
    }

    pub fn mov(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let Some(t) = inst.ty(self.b) else { return self.invalid("mov needs a type") };
        let ty = if t.is_float() { Ty::int(t.bits()) } else { op_ty(t) };
        if let Some(n) = inst.vector(self.b) {
            // `mov.v4.u32 %v, %w` (vector registers, or lists): element by
            // element, all read before any is written.
            let (Operand::Vector(d), Operand::Vector(s)) = (args[0], args[1]) else {
                return self.invalid(format!("`{}` moves a vector to a vector", self.describe(inst)));
            };
            let (d, s) = (self.b.list(d).to_vec(), self.b.list(s).to_vec());
            if d.len() != n as usize || s.len() != n as usize {
                return self.invalid(format!("`{}` moves {n} elements", self.describe(inst)));
            }
            let mut vals = Vec::new();
            for e in &s {
                vals.push(self.get(e, ty)?);
            }
            for (e, v) in d.iter().zip(vals) {
                self.set(e, v)?;
            }
            return Ok(());
        }
        let v = self.get(&args[1], ty)?;
        if self.has_shadow(&args[0]) {
            self.next_shadow = match args[1] {
                Operand::Reg(_) => self.operand_shadow(&args[1]),
                Operand::Global(_) | Operand::Var(_) => {
                    let a = self.get(&args[1], Ty::Ptr)?;
                    (a.ty == Ty::Ptr).then_some(a)
                }
                _ => None,
            };
        }
        self.set(&args[0], v)
    }

    /// Element type of a memory access: an integer of the type's size
    /// (floats are moved as bits).
    fn mem_ty(t: Type) -> Ty {
        if t == Type::Pred {
            Ty::I8
        } else {
            Ty::int(t.bits())
        }
    }

    pub fn ld(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let Some(t) = inst.ty(b) else { return self.invalid("ld needs a type") };
        let space = inst.space(b);
        let ety = Self::mem_ty(t);
        let size = (ety.bits() / 8) as i64;
        let addr = self.address(&args[1], space)?;
        let volatile = inst.semantics(b) == Some(Semantics::Volatile);
        let order = ordering(inst.semantics(b), false);
        let dests: Vec<Operand> = match args[0] {
            Operand::Vector(l) => b.list(l).to_vec(),
            other => vec![other],
        };
        self.check_access(&addr, space, size as u32 * dests.len() as u32, Access::Read);
        if let Some(wide) = single_copy_width(dests.len(), size, order.is_some() || volatile || communicates(inst, b)) {
            let w = self.wide_load(&addr, wide, order);
            for (k, d) in dests.iter().enumerate() {
                if matches!(d, Operand::Sink) {
                    continue;
                }
                let v = self.component(&w, ety, k);
                self.set_ext(d, v, t.is_signed())?;
            }
            return Ok(());
        }
        for (k, d) in dests.iter().enumerate() {
            let p = if k == 0 {
                addr.clone()
            } else {
                self.out.def(Ty::Ptr, format_args!("getelementptr i8, {addr}, i64 {}", size * k as i64))
            };
            let v = match order {
                Some(o) if ety.bits() <= 64 => self.out.def(ety, format_args!("load atomic {ety}, {p} {o}, align {size}")),
                _ => {
                    let vol = if volatile { "volatile " } else { "" };
                    self.out.def(ety, format_args!("load {vol}{ety}, {p}, align {}", size.min(8)))
                }
            };
            if matches!(d, Operand::Sink) {
                continue;
            }
            self.set_ext(d, v, t.is_signed())?;
        }
        Ok(())
    }

    pub fn st(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let Some(t) = inst.ty(b) else { return self.invalid("st needs a type") };
        let space = inst.space(b);
        let ety = Self::mem_ty(t);
        let size = (ety.bits() / 8) as i64;
        let addr = self.address(&args[0], space)?;
        let volatile = inst.semantics(b) == Some(Semantics::Volatile);
        let order = ordering(inst.semantics(b), false);
        let srcs: Vec<Operand> = match args[1] {
            Operand::Vector(l) => b.list(l).to_vec(),
            other => vec![other],
        };
        self.check_access(&addr, space, size as u32 * srcs.len() as u32, Access::Write);
        let complete = !srcs.iter().any(|s| matches!(s, Operand::Sink));
        if let Some(wide) = single_copy_width(srcs.len(), size, complete && (order.is_some() || volatile || communicates(inst, b))) {
            let mut values = Vec::new();
            for s in &srcs {
                values.push(self.get(s, ety)?);
            }
            let w = self.join_components(&values, wide);
            self.wide_store(&addr, &w, order);
            return Ok(());
        }
        for (k, s) in srcs.iter().enumerate() {
            if matches!(s, Operand::Sink) {
                continue;
            }
            let v = self.get(s, ety)?;
            let p = if k == 0 {
                addr.clone()
            } else {
                self.out.def(Ty::Ptr, format_args!("getelementptr i8, {addr}, i64 {}", size * k as i64))
            };
            match order {
                Some(o) if ety.bits() <= 64 => self.out.op(format_args!("store atomic {v}, {p} {o}, align {size}")),
                _ => {
                    let vol = if volatile { "volatile " } else { "" };
                    self.out.op(format_args!("store {vol}{v}, {p}, align {}", size.min(8)))
                }
            }
        }
        Ok(())
    }

    pub fn cvta(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let Some(t) = inst.ty(b) else { return self.invalid("cvta needs a type") };
        let ty = Ty::int(t.bits());
        let to = inst.has(b, Flag::To);
        let space = inst.space(b);
        let x = self.get(&args[1], Ty::I64)?;
        let r = if is_shared(space) {
            let base = self.shared_base();
            let base = self.out.def_scalar(Ty::I64, format_args!("ptrtoint {base} to i64"));
            if to {
                self.bin("sub", &x, &base)
            } else {
                self.bin("add", &x, &base)
            }
        } else if space == Some(StateSpace::Local) {
            let lbase = V::scalar(Ty::I64, "%lbase");
            self.bin(if to { "sub" } else { "add" }, &x, &lbase)
        } else {
            // Global, const and param addresses are host addresses.
            x
        };
        let r = self.convert(r, ty, false);
        // A host address keeps its pointer shadow: generic to global/const/param,
        // and global to generic.
        let keeps_shadow = if to { space == Some(StateSpace::Global) } else { !is_shared(space) && space != Some(StateSpace::Local) };
        if ty == Ty::I64 && self.has_shadow(&args[0]) && keeps_shadow {
            self.next_shadow = self.operand_shadow(&args[1]);
        }
        self.set(&args[0], r)
    }

    pub fn isspacep(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let space = inst.space(b);
        let a = self.get(&args[1], Ty::I64)?;
        let in_shared = {
            let base = self.shared_base();
            let base = self.out.def_scalar(Ty::I64, format_args!("ptrtoint {base} to i64"));
            let size = self.ctx_field(offsets::SHARED_BYTES, Ty::I32);
            let size = self.zext(&size, Ty::I64);
            let off = self.bin("sub", &a, &base);
            self.icmp("ult", &off, &size)
        };
        self.cx.declare_runtime(&crate::cpu_abi::runtime::IS_LOCAL);
        let loc = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_is_local(ptr %ctx, i32 %lin, {a})"));
        let in_local = self.icmp("ne", &loc, &V::int(Ty::I32, 0));
        let r = match space {
            Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster) => in_shared,
            Some(StateSpace::Local) => in_local,
            Some(StateSpace::Global) | Some(StateSpace::Const) => {
                let either = self.bin("or", &in_shared, &in_local);
                self.bin("xor", &either, &V::int(Ty::I1, 1))
            }
            Some(StateSpace::Param | StateSpace::ParamEntry) => V::int(Ty::I1, 0),
            _ => return self.unsupported(format!("`{}`", self.describe(inst))),
        };
        self.set(&args[0], r)
    }

    pub fn atom(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let Some(t) = inst.ty(b) else { return self.invalid("atom needs a type") };
        if inst.vector(b).is_some() {
            return self.unsupported(format!("vector atomics `{}`", self.describe(inst)));
        }
        let is_red = inst.op == Opcode::Red;
        let (addr_op, srcs) = if is_red { (&args[0], &args[1..]) } else { (&args[1], &args[2..]) };
        let space = inst.space(b);
        let addr = self.address(addr_op, space)?;
        self.check_access(&addr, space, t.size(), Access::ReadWrite);
        let order = ordering(inst.semantics(b), true).unwrap_or("monotonic");
        let op = inst.flags(b).find(|f| {
            matches!(
                f,
                Flag::AddOp | Flag::Exch | Flag::Cas | Flag::MinOp | Flag::MaxOp | Flag::Inc | Flag::Dec | Flag::And | Flag::Or | Flag::Xor
            )
        });
        let Some(op) = op else { return self.invalid("atom needs an operation") };
        if matches!(t, Type::F16x2 | Type::Bf16x2) {
            return self.atom_x2(inst, t, &addr, srcs, op);
        }
        let fty = op_ty(t);
        let ity = Ty::int(t.bits());
        let size = t.size();
        if self.cx.privatised(self.item, self.f, self.stmt) {
            // An add gathered in the runner's table (`privatise.rs`).
            let [name, _] = crate::privatise::register_helpers(self.cx, t.bits());
            let table = self.ctx_field(crate::cpu_abi::offsets::PRIVATE_ADDS, Ty::Ptr);
            let v = self.get(&srcs[0], ity)?;
            let zero = self.out.def(ity, format_args!("call {ity} @{name}({table}, {addr}, {v})"));
            if !is_red {
                self.set(&args[0], zero)?;
            }
            return Ok(());
        }
        if self.cx.facts.block_on_one_thread && is_shared(space) {
            // On the CPU a block's threads take turns on one OS thread and
            // switch only inside runtime calls, so no other thread can see
            // shared memory between this load and store: a plain
            // read-modify-write is atomic for them.
            if let Some(old) = self.shared_rmw(t, op, &addr, srcs)? {
                if !is_red {
                    self.set(&args[0], old)?;
                }
                return Ok(());
            }
        }
        let old: V = match op {
            Flag::Cas => {
                let cmp = self.get(&srcs[0], ity)?;
                let new = self.get(&srcs[1], ity)?;
                let fail = if order == "release" || order == "acq_rel" { "monotonic" } else { order };
                let fail = if fail == "release" { "monotonic" } else { fail };
                let r = self.out.def(ity, format_args!("cmpxchg {addr}, {cmp}, {new} {order} {fail}, align {size}"));
                self.out.def(ity, format_args!("extractvalue {{{ity}, i1}} {}, 0", r.s))
            }
            _ => {
                let float = t.is_float();
                let (rmw, vty) = match op {
                    Flag::AddOp if float => ("fadd", fty),
                    Flag::AddOp => ("add", ity),
                    Flag::Exch => ("xchg", ity),
                    Flag::And => ("and", ity),
                    Flag::Or => ("or", ity),
                    Flag::Xor => ("xor", ity),
                    Flag::Inc => ("uinc_wrap", ity),
                    Flag::Dec => ("udec_wrap", ity),
                    Flag::MinOp if float => return self.atom_float_minmax(inst, t, &addr, srcs, true),
                    Flag::MaxOp if float => return self.atom_float_minmax(inst, t, &addr, srcs, false),
                    Flag::MinOp if t.is_signed() => ("min", ity),
                    Flag::MaxOp if t.is_signed() => ("max", ity),
                    Flag::MinOp => ("umin", ity),
                    _ => ("umax", ity),
                };
                let v = self.get(&srcs[0], vty)?;
                self.out.def(vty, format_args!("atomicrmw {rmw} {addr}, {v} {order}, align {size}"))
            }
        };
        if !is_red {
            self.set(&args[0], old)?;
        }
        Ok(())
    }

    /// A non-atomic read-modify-write of shared memory (see `atom`); None for
    /// the operations left to the atomic path.
    fn shared_rmw(&mut self, t: Type, op: Flag, addr: &V, srcs: &[Operand]) -> Res<Option<V>> {
        let float = t.is_float();
        let ty = if float { op_ty(t) } else { Ty::int(t.bits()) };
        if !matches!(ty, Ty::I32 | Ty::I64 | Ty::Float | Ty::Double) || (float && op != Flag::AddOp) {
            return Ok(None);
        }
        let size = t.size();
        let old = self.out.def(ty, format_args!("load {ty}, {addr}, align {size}"));
        let new = match op {
            Flag::Cas => {
                let cmp = self.get(&srcs[0], ty)?;
                let val = self.get(&srcs[1], ty)?;
                let eq = self.icmp("eq", &old, &cmp);
                self.select(&eq, &val, &old)
            }
            Flag::AddOp if float => {
                let v = self.get(&srcs[0], ty)?;
                self.bin("fadd", &old, &v)
            }
            _ => {
                let v = self.get(&srcs[0], ty)?;
                match op {
                    Flag::AddOp => self.bin("add", &old, &v),
                    Flag::Exch => v,
                    Flag::And => self.bin("and", &old, &v),
                    Flag::Or => self.bin("or", &old, &v),
                    Flag::Xor => self.bin("xor", &old, &v),
                    Flag::MinOp => self.call2(&format!("llvm.{}.{ty}", if t.is_signed() { "smin" } else { "umin" }), &old, &v),
                    Flag::MaxOp => self.call2(&format!("llvm.{}.{ty}", if t.is_signed() { "smax" } else { "umax" }), &old, &v),
                    Flag::Inc => {
                        // old >= v ? 0 : old + 1
                        let ge = self.icmp("uge", &old, &v);
                        let inc = self.bin("add", &old, &V::int(ty, 1));
                        self.select(&ge, &V::int(ty, 0), &inc)
                    }
                    Flag::Dec => {
                        // (old == 0 || old > v) ? v : old - 1
                        let z = self.icmp("eq", &old, &V::int(ty, 0));
                        let gt = self.icmp("ugt", &old, &v);
                        let wrap = self.bin("or", &z, &gt);
                        let dec = self.bin("sub", &old, &V::int(ty, 1));
                        self.select(&wrap, &v, &dec)
                    }
                    _ => return Ok(None),
                }
            }
        };
        self.out.op(format_args!("store {new}, {addr}, align {size}"));
        Ok(Some(old))
    }

    /// An atomic read-modify-write as a compare-and-swap loop on the bits.
    fn cas_loop(&mut self, addr: &V, ity: Ty, size: u32, f: &mut dyn FnMut(&mut Self, &V) -> Res<V>) -> Res<V> {
        let start = self.out.def(ity, format_args!("load atomic {ity}, {addr} monotonic, align {size}"));
        let pre = self.out.fresh_label("caspre");
        let head = self.out.fresh_label("cas");
        let done = self.out.fresh_label("casdone");
        self.out.terminate(format_args!("br label %{pre}"));
        self.out.label(&pre);
        self.out.terminate(format_args!("br label %{head}"));
        self.out.label(&head);
        let cur_name = self.out.fresh("cur");
        let next_name = self.out.fresh("seen");
        let latch = self.out.fresh_label("caslatch");
        self.out.op(format_args!("{cur_name} = phi {ity} [{}, %{pre}], [{next_name}, %{latch}]", start.s));
        let cur = V::new(ity, cur_name);
        let new = f(self, &cur)?;
        let r = self.out.def(ity, format_args!("cmpxchg {addr}, {cur}, {new} monotonic monotonic, align {size}"));
        self.out.terminate(format_args!("br label %{latch}"));
        self.out.label(&latch);
        self.out.op(format_args!("{next_name} = extractvalue {{{ity}, i1}} {}, 0", r.s));
        let ok = self.out.def(Ty::I1, format_args!("extractvalue {{{ity}, i1}} {}, 1", r.s));
        self.out.terminate(format_args!("br {ok}, label %{done}, label %{head}"));
        self.out.label(&done);
        Ok(cur)
    }

    fn atom_x2(&mut self, inst: &Instruction, t: Type, addr: &V, srcs: &[Operand], op: Flag) -> Res<()> {
        let ety = if t == Type::F16x2 { Ty::Half } else { Ty::Bfloat };
        let v = self.get(&srcs[0], Ty::I32)?;
        let is_red = inst.op == Opcode::Red;
        let old = self.cas_loop(addr, Ty::I32, 4, &mut |s, cur| {
            let mut parts = Vec::new();
            for k in 0..2 {
                let a = s.bin("lshr", cur, &V::int(Ty::I32, 16 * k));
                let a = s.trunc(&a, Ty::I16);
                let a = s.bitcast(&a, ety);
                let bb = s.bin("lshr", &v, &V::int(Ty::I32, 16 * k));
                let bb = s.trunc(&bb, Ty::I16);
                let bb = s.bitcast(&bb, ety);
                let r = match op {
                    Flag::AddOp => {
                        let x = s.out.def(Ty::Double, format_args!("fpext {a} to double"));
                        let y = s.out.def(Ty::Double, format_args!("fpext {bb} to double"));
                        let d = s.bin("fadd", &x, &y);
                        s.round_to(&d, ety, crate::softfloat::Mode::Rn)
                    }
                    _ => return s.unsupported("this packed atomic operation"),
                };
                let ri = s.bitcast(&r, Ty::I16);
                let z = s.zext(&ri, Ty::I32);
                parts.push(s.bin("shl", &z, &V::int(Ty::I32, 16 * k)));
            }
            Ok(s.bin("or", &parts[0], &parts[1]))
        })?;
        if !is_red {
            let args = self.b.args(inst);
            self.set(&args[0], old)?;
        }
        Ok(())
    }

    fn atom_float_minmax(&mut self, inst: &Instruction, t: Type, addr: &V, srcs: &[Operand], min: bool) -> Res<()> {
        let fty = op_ty(t);
        let ity = Ty::int(t.bits());
        let v = self.get(&srcs[0], fty)?;
        let old = self.cas_loop(addr, ity, t.size(), &mut |s, cur| {
            let c = s.bitcast(cur, fty);
            let lt = s.fcmp(if min { "olt" } else { "ogt" }, &v, &c);
            let r = s.select(&lt, &v, &c);
            Ok(s.bitcast(&r, ity))
        })?;
        if inst.op == Opcode::Atom {
            let args = self.b.args(inst);
            self.set(&args[0], old)?;
        }
        Ok(())
    }
}
