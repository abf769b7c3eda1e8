//! Checked mode (`Options::memcheck`, `ANYCUDA_MEMCHECK=1`): every memory
//! access of a kernel is tested before it happens.
//!
//! The block context keeps, per state space, a cache of the last range an
//! access was found in (`[low, length]`, two u64; local memory's is in
//! each function's frame, empty at entry). An access of `size` bytes at `a` is good without a call when
//! `a - low < length`, `a - low + size <= length` and `a` is a multiple of
//! `size` (for power-of-two sizes: PTX requires natural alignment, of the
//! whole vector for `.v2`/`.v4`). Otherwise the code calls
//! `__anycuda_memcheck` (`cpu_abi::runtime::MEMCHECK`), which looks the
//! address up in the state space's windows (the live allocations, the
//! block's shared window, the thread's local memory), refills the cache on
//! success, and on failure reports the access and ends the launch. A loop
//! over one allocation thus pays two compares and a mask test per access.
//!
//! In warp mode the same test runs on the 32 lanes' addresses as vectors,
//! and only lanes that execute the access count; a warp with a lane that
//! fails it calls `__anycuda_memcheck_warp` with all the lanes' addresses.
//!
//! Unchecked compiles never reach this module: every hook returns at once
//! when the option is off, so their code is what it was.

use std::fmt::Write;

use crate::cpu_abi::{memcheck as mc, runtime};
use crate::ir::{Ty, V};
use crate::lower::FnLower;
use ptx::ast::*;

/// What an access does to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    /// Atomics and reductions.
    ReadWrite,
    /// An `mbarrier` object's word, read, written or both: checked as the
    /// access it is, but a synchronisation object, not data, for racecheck.
    Barrier(BarrierAccess),
}

/// What an `mbarrier` operation does to its word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierAccess {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    /// The same access to an `mbarrier` object.
    pub fn barrier(self) -> Access {
        match self {
            Access::Read => Access::Barrier(BarrierAccess::Read),
            Access::Write => Access::Barrier(BarrierAccess::Write),
            Access::ReadWrite => Access::Barrier(BarrierAccess::ReadWrite),
            b @ Access::Barrier(_) => b,
        }
    }
}

impl<'c, 'm> FnLower<'c, 'm> {
    /// Whether this function's accesses are checked: checked mode, the host
    /// target, thread mode (checked mode compiles every kernel thread by
    /// thread).
    pub fn memcheck_on(&self) -> bool {
        self.cx.opts.memcheck && self.cx.facts.checked_mode && self.warp.is_none()
    }

    /// Checks an access of `size` bytes at pointer `p` in `space` (None:
    /// generic). Parameter space is not checked (its addresses come from
    /// the parameter buffer and call frames the compiler lays out).
    pub fn check_access(&mut self, p: &V, space: Option<StateSpace>, size: u32, access: Access) {
        if !self.memcheck_on() || size == 0 {
            return;
        }
        let Some((code, info)) = access_info(space, size, access) else { return };
        let cache = self.memcheck_cache(code as usize);
        let place = self.source_place();
        let a = self.out.def_scalar(Ty::I64, format_args!("ptrtoint {p} to i64"));
        let low = self.out.def_scalar(Ty::I64, format_args!("load i64, ptr {cache}, align 8"));
        let lenp = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr {cache}, i64 8"));
        let len = self.out.def_scalar(Ty::I64, format_args!("load i64, {lenp}, align 8"));
        let d = self.out.def_scalar(Ty::I64, format_args!("sub {a}, {}", low.s));
        let inside = self.out.def_scalar(Ty::I1, format_args!("icmp ult {d}, {}", len.s));
        let end = self.out.def_scalar(Ty::I64, format_args!("add {d}, {size}"));
        let fits = self.out.def_scalar(Ty::I1, format_args!("icmp ule {end}, {}", len.s));
        let mut ok = self.out.def_scalar(Ty::I1, format_args!("and {inside}, {}", fits.s));
        if size > 1 && size.is_power_of_two() {
            let low_bits = self.out.def_scalar(Ty::I64, format_args!("and {a}, {}", size - 1));
            let aligned = self.out.def_scalar(Ty::I1, format_args!("icmp eq {low_bits}, 0"));
            ok = self.out.def_scalar(Ty::I1, format_args!("and {ok}, {}", aligned.s));
        }
        self.thread_check_calls(&ok, &a, &V::int(Ty::I32, i128::from(info)), &cache, &place);
    }

    /// Thread mode's checked-access tail: the runtime check of the access
    /// at `a` (its `info` word, an i32 operand) when the inline test `ok`
    /// failed, then the shadow tools' call when the launch runs them.
    fn thread_check_calls(&mut self, ok: &V, a: &V, info: &V, cache: &str, place: &str) {
        self.cx.declare("llvm.expect.i1", "declare i1 @llvm.expect.i1(i1, i1)");
        let likely = self.out.def_scalar(Ty::I1, format_args!("call i1 @llvm.expect.i1({ok}, i1 true)"));
        let miss = self.out.fresh_label("mcmiss");
        let good = self.out.fresh_label("mcok");
        self.out.terminate(format_args!("br {likely}, label %{good}, label %{miss}"));
        self.out.label(&miss);
        self.cx.declare_runtime(&runtime::MEMCHECK);
        self.out.op(format_args!("call void @{}(ptr %ctx, i32 %lin, {a}, {info}, ptr {cache}, ptr {place})", runtime::MEMCHECK.name));
        self.out.terminate(format_args!("br label %{good}"));
        self.out.label(&good);
        // The shadow tools (initcheck, racecheck), when the launch runs them.
        let tools = self.check_tools_on();
        let shadow = self.out.fresh_label("mcshadow");
        let done = self.out.fresh_label("mcdone");
        self.out.terminate(format_args!("br {tools}, label %{shadow}, label %{done}"));
        self.out.label(&shadow);
        self.cx.declare_runtime(&runtime::SHADOW);
        self.out.op(format_args!("call void @{}(ptr %ctx, i32 %lin, {a}, {info}, ptr {place})", runtime::SHADOW.name));
        self.out.terminate(format_args!("br label %{done}"));
        self.out.label(&done);
    }

    /// Whether the launch runs shadow tools ([`crate::cpu_abi::BlockCtx::check_tools`]
    /// not zero), an i1 marked unlikely.
    fn check_tools_on(&mut self) -> V {
        let p = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr %ctx, i64 {}", crate::cpu_abi::offsets::CHECK_TOOLS));
        let t = self.out.def_scalar(Ty::I32, format_args!("load i32, {p}, align 4"));
        let on = self.out.def_scalar(Ty::I1, format_args!("icmp ne {t}, 0"));
        self.cx.declare("llvm.expect.i1", "declare i1 @llvm.expect.i1(i1, i1)");
        self.out.def_scalar(Ty::I1, format_args!("call i1 @llvm.expect.i1({on}, i1 false)"))
    }

    /// Racecheck: the executing threads (lanes `lanes` of the warp in warp
    /// mode) passed a synchronisation of `kind` (`memcheck::SYNC_*`).
    /// Nothing unless checked, and a test of the launch's tools at run time.
    pub fn race_sync(&mut self, kind: u32, lanes: Option<V>) {
        if !(self.memcheck_on() || self.memcheck_lanes_on()) {
            return;
        }
        let tools = self.check_tools_on();
        let call = self.out.fresh_label("mcsync");
        let done = self.out.fresh_label("mcsyncd");
        self.out.terminate(format_args!("br {tools}, label %{call}, label %{done}"));
        self.out.label(&call);
        self.cx.declare_runtime(&runtime::RACE_SYNC);
        match lanes {
            Some(bits) => self.out.op(format_args!(
                "call void @{}(ptr %ctx, i32 %wbase, {bits}, i32 {})",
                runtime::RACE_SYNC.name,
                kind | mc::SYNC_LANES
            )),
            None => self.out.op(format_args!("call void @{}(ptr %ctx, i32 %lin, i32 1, i32 {kind})", runtime::RACE_SYNC.name)),
        }
        self.out.terminate(format_args!("br label %{done}"));
        self.out.label(&done);
    }

    /// Checks an access of `count` bytes at `p`, a count known only at
    /// run time (`cp.async`'s register `src-size`, or its `ignore-src`
    /// predicate), clamped to `max`: exactly the bytes accessed, none when
    /// it is 0. Thread by thread, or each executing lane with its own
    /// count in warp mode.
    pub fn check_access_sized(&mut self, p: &V, space: Option<StateSpace>, count: &V, max: u32, access: Access) {
        let lanes = self.memcheck_lanes_on();
        if !(self.memcheck_on() || lanes) || max == 0 {
            return;
        }
        let Some((code, info)) = access_info(space, 0, access) else { return };
        let cache = self.memcheck_cache(code as usize);
        let place = self.source_place();
        self.cx.declare("llvm.expect.i1", "declare i1 @llvm.expect.i1(i1, i1)");
        // k = min(count, max), a 64-bit value per lane.
        let count = self.vec(count.clone());
        let k32 = self.call2("llvm.umin.i32", &count, &V::int(Ty::I32, i128::from(max)));
        let k = self.zext(&k32, Ty::I64);
        let a = if lanes {
            let n = crate::ir::lanes();
            let p = self.vec(p.clone());
            self.out.def(Ty::I64, format_args!("ptrtoint {p} to <{n} x i64>"))
        } else {
            self.out.def_scalar(Ty::I64, format_args!("ptrtoint {p} to i64"))
        };
        let low = self.out.def_scalar(Ty::I64, format_args!("load i64, ptr {cache}, align 8"));
        let lenp = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr {cache}, i64 8"));
        let len = self.out.def_scalar(Ty::I64, format_args!("load i64, {lenp}, align 8"));
        let d = self.bin("sub", &a, &low);
        let inside = self.icmp("ult", &d, &len);
        let end = self.bin("add", &d, &k);
        let fits = self.icmp("ule", &end, &len);
        let ok = self.bin("and", &inside, &fits);
        // Natural alignment when the count is a power of two, as for a
        // constant size.
        let km1 = self.bin("sub", &k, &V::int(Ty::I64, 1));
        let kk = self.bin("and", &k, &km1);
        let pow2 = self.icmp("eq", &kk, &V::int(Ty::I64, 0));
        let ak = self.bin("and", &a, &km1);
        let aligned = self.icmp("eq", &ak, &V::int(Ty::I64, 0));
        let not_pow2 = self.bin("xor", &pow2, &V::int(Ty::I1, 1));
        let align_ok = self.bin("or", &not_pow2, &aligned);
        let ok = self.bin("and", &ok, &align_ok);
        let zero = self.icmp("eq", &k, &V::int(Ty::I64, 0));
        let ok = self.bin("or", &ok, &zero);
        if !lanes {
            let info = self.bin("or", &k32, &V::int(Ty::I32, i128::from(info)));
            self.thread_check_calls(&ok, &a, &info, &cache, &place);
            return;
        }
        let miss = self.out.fresh_label("mcmiss");
        let good = self.out.fresh_label("mcok");
        // Warp mode: the lanes that execute and access at least a byte.
        let mask = self.mask();
        let mask = self.vec(mask);
        let some = self.bin("xor", &zero, &V::int(Ty::I1, 1));
        let active = self.bin("and", &mask, &some);
        let bad = self.bin("xor", &ok, &V::int(Ty::I1, 1));
        let bad = self.bin("and", &bad, &active);
        let any = self.any(&bad);
        let unlikely = self.out.def_scalar(Ty::I1, format_args!("call i1 @llvm.expect.i1({any}, i1 false)"));
        self.out.terminate(format_args!("br {unlikely}, label %{miss}, label %{good}"));
        self.out.label(&miss);
        let buf = self.memcheck_lanes();
        self.out.op(format_args!("store {a}, ptr {buf}, align 8"));
        // One call per count the failing lanes have (a few at most).
        self.cx.declare_runtime(&runtime::MEMCHECK_WARP);
        self.per_access_size(&bad, &k32, max, |bits, size| {
            format!(
                "call void @{}(ptr %ctx, i32 %wbase, ptr {buf}, {bits}, i32 {}, ptr {cache}, ptr {place}, ptr %frame)",
                runtime::MEMCHECK_WARP.name,
                info | size
            )
        });
        self.out.terminate(format_args!("br label %{good}"));
        self.out.label(&good);
        let tools = self.check_tools_on();
        let shadow = self.out.fresh_label("mcshadow");
        let done = self.out.fresh_label("mcdone");
        self.out.terminate(format_args!("br {tools}, label %{shadow}, label %{done}"));
        self.out.label(&shadow);
        self.out.op(format_args!("store {a}, ptr {buf}, align 8"));
        self.cx.declare_runtime(&runtime::SHADOW_WARP);
        self.per_access_size(&active, &k32, max, |bits, size| {
            format!("call void @{}(ptr %ctx, i32 %wbase, ptr {buf}, {bits}, i32 {}, ptr {place})", runtime::SHADOW_WARP.name, info | size)
        });
        self.out.terminate(format_args!("br label %{done}"));
        self.out.label(&done);
    }

    /// For each access size `1..=max` that lanes of `lanes` (a lane
    /// vector of i1) have in `k32`, the runtime call `call(bits, size)`
    /// makes for those lanes (`bits`: their mask), skipped when none has
    /// it.
    fn per_access_size(&mut self, lanes: &V, k32: &V, max: u32, call: impl Fn(&V, u32) -> String) {
        for size in 1..=max {
            let is = self.icmp("eq", k32, &V::int(Ty::I32, i128::from(size)));
            let these = self.bin("and", lanes, &is);
            let bits = self.bits(&these);
            let at = self.out.fresh_label("mcsz");
            let next = self.out.fresh_label("mcszn");
            let has = self.out.def_scalar(Ty::I1, format_args!("icmp ne {bits}, 0"));
            self.out.terminate(format_args!("br {has}, label %{at}, label %{next}"));
            self.out.label(&at);
            self.out.op(format_args!("{}", call(&bits, size)));
            self.out.terminate(format_args!("br label %{next}"));
            self.out.label(&next);
        }
    }

    /// Whether this warp-mode function's accesses are checked.
    pub fn memcheck_lanes_on(&self) -> bool {
        self.cx.opts.memcheck && self.cx.facts.checked_mode && self.warp.is_some()
    }

    /// Warp mode: checks the access of `size` bytes each executing lane
    /// makes at its pointer of `ptrs` (one pointer for all lanes when
    /// `uniform`). The same inline test runs on all lanes as vectors; a
    /// lane that fails it sends the warp's addresses to
    /// `__anycuda_memcheck_warp`.
    pub fn check_lanes(&mut self, ptrs: &V, uniform: bool, space: Option<StateSpace>, size: u32, access: Access) {
        if !self.memcheck_lanes_on() || size == 0 {
            return;
        }
        let Some((code, info)) = access_info(space, size, access) else { return };
        let cache = self.memcheck_cache(code as usize);
        let place = self.source_place();
        let n = crate::ir::lanes();
        let a = if uniform {
            let s = self.out.def_scalar(Ty::I64, format_args!("ptrtoint {ptrs} to i64"));
            self.vec(s)
        } else {
            self.out.def(Ty::I64, format_args!("ptrtoint {ptrs} to <{n} x i64>"))
        };
        let low = self.out.def_scalar(Ty::I64, format_args!("load i64, ptr {cache}, align 8"));
        let lenp = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr {cache}, i64 8"));
        let len = self.out.def_scalar(Ty::I64, format_args!("load i64, {lenp}, align 8"));
        let low = self.vec(low);
        let len = self.vec(len);
        let d = self.out.def(Ty::I64, format_args!("sub {a}, {}", low.s));
        let inside = self.out.def(Ty::I1, format_args!("icmp ult {d}, {}", len.s));
        let end = self.out.def(Ty::I64, format_args!("add {d}, {}", V::int(Ty::I64, i128::from(size)).s));
        let fits = self.out.def(Ty::I1, format_args!("icmp ule {end}, {}", len.s));
        let mut ok = self.out.def(Ty::I1, format_args!("and {inside}, {}", fits.s));
        if size > 1 && size.is_power_of_two() {
            let low_bits = self.out.def(Ty::I64, format_args!("and {a}, {}", V::int(Ty::I64, i128::from(size - 1)).s));
            let aligned = self.out.def(Ty::I1, format_args!("icmp eq {low_bits}, zeroinitializer"));
            ok = self.out.def(Ty::I1, format_args!("and {ok}, {}", aligned.s));
        }
        let bad = self.out.def(Ty::I1, format_args!("xor {ok}, {}", V::int(Ty::I1, 1).s));
        let mask = self.mask();
        let mask = self.vec(mask);
        let bad = self.out.def(Ty::I1, format_args!("and {bad}, {}", mask.s));
        let any = self.any(&bad);
        self.cx.declare("llvm.expect.i1", "declare i1 @llvm.expect.i1(i1, i1)");
        let unlikely = self.out.def_scalar(Ty::I1, format_args!("call i1 @llvm.expect.i1({any}, i1 false)"));
        let miss = self.out.fresh_label("mcmiss");
        let good = self.out.fresh_label("mcok");
        self.out.terminate(format_args!("br {unlikely}, label %{miss}, label %{good}"));
        self.out.label(&miss);
        let lanes = self.memcheck_lanes();
        self.out.op(format_args!("store {a}, ptr {lanes}, align 8"));
        let bits = self.bits(&mask);
        self.cx.declare_runtime(&runtime::MEMCHECK_WARP);
        self.out.op(format_args!(
            "call void @{}(ptr %ctx, i32 %wbase, ptr {lanes}, {bits}, i32 {info}, ptr {cache}, ptr {place}, ptr %frame)",
            runtime::MEMCHECK_WARP.name
        ));
        self.out.terminate(format_args!("br label %{good}"));
        self.out.label(&good);
        let tools = self.check_tools_on();
        let shadow = self.out.fresh_label("mcshadow");
        let done = self.out.fresh_label("mcdone");
        self.out.terminate(format_args!("br {tools}, label %{shadow}, label %{done}"));
        self.out.label(&shadow);
        let lanes = self.memcheck_lanes();
        self.out.op(format_args!("store {a}, ptr {lanes}, align 8"));
        let mask = self.mask();
        let bits = self.bits(&mask);
        self.cx.declare_runtime(&runtime::SHADOW_WARP);
        self.out.op(format_args!(
            "call void @{}(ptr %ctx, i32 %wbase, ptr {lanes}, {bits}, i32 {info}, ptr {place})",
            runtime::SHADOW_WARP.name
        ));
        self.out.terminate(format_args!("br label %{done}"));
        self.out.label(&done);
    }

    /// Warp mode: a frame slot for the 32 lanes' addresses.
    fn memcheck_lanes(&mut self) -> String {
        match &self.memcheck_caches[5] {
            Some(l) => l.clone(),
            None => {
                let n = crate::ir::lanes();
                let l = self.out.alloca(&format!("[{n} x i64]"), 8);
                self.memcheck_caches[5] = Some(l.clone());
                l
            }
        }
    }

    /// The cache of the next checked instruction accessing state space
    /// `code`: one of the block context's slots, in turn (shared by every
    /// thread the runner runs, so a kernel's threads find the range their
    /// neighbours found, and accesses to different buffers do not evict
    /// each other), except for local memory, which is each thread's own:
    /// one cache in the function's frame, emptied at entry.
    fn memcheck_cache(&mut self, code: usize) -> String {
        if code == mc::LOCAL as usize {
            if let Some(c) = &self.memcheck_caches[code] {
                return c.clone();
            }
            let c = self.out.alloca("[2 x i64]", 8);
            let _ = writeln!(self.out.allocas, "  store [2 x i64] zeroinitializer, ptr {c}, align 8");
            self.memcheck_caches[code] = Some(c.clone());
            return c;
        }
        let slot = self.memcheck_slot % crate::cpu_abi::MEMCHECK_SLOTS;
        self.memcheck_slot += 1;
        let c = self.out.fresh("mcc");
        let _ = writeln!(self.out.allocas, "  {c} = getelementptr i8, ptr %ctx, i64 {}", crate::cpu_abi::offsets::MEMCHECK + 16 * slot);
        c
    }

    /// A constant string naming the current instruction for reports: the
    /// function, the PTX line and, when the PTX has `.loc`, the source
    /// position it gives.
    /// A constant string naming where the current instruction is: its
    /// function and PTX line, and the source line of the last `.loc`
    /// (memory checker reports, traps).
    pub(crate) fn source_place(&mut self) -> String {
        let (line, _) = self.cx.lines().line_col(self.span().start);
        let mut text = format!("{} (PTX line {line}", self.f.name);
        let loc = self.b.statements[..self.stmt.min(self.b.statements.len())].iter().rev().find_map(|s| match s {
            Statement::Loc { file, line, column, .. } => Some((*file, *line, *column)),
            _ => None,
        });
        if let Some((file, l, c)) = loc {
            let name = self.cx.m.items.iter().find_map(|i| match i {
                Item::File { index, name, .. } if *index == file => Some(*name),
                _ => None,
            });
            match name {
                Some(n) => {
                    let _ = write!(text, ", {n}:{l}");
                }
                None => {
                    let _ = write!(text, ", file {file} line {l}");
                }
            }
            if c > 0 {
                let _ = write!(text, ":{c}");
            }
        }
        text.push(')');
        let name = format!("__anycuda_mcplace.{}.{line}", self.f.name);
        let mut bytes = String::new();
        for b in text.bytes() {
            if b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ' {
                bytes.push(b as char);
            } else {
                let _ = write!(bytes, "\\{b:02X}");
            }
        }
        let def = format!("@\"{name}\" = private unnamed_addr constant [{} x i8] c\"{bytes}\\00\", align 1", text.len() + 1);
        self.cx.helper(&name, || def);
        format!("@\"{name}\"")
    }
}

/// The state space's code and the runtime's `access` argument; None for
/// parameter space, which is not checked.
fn access_info(space: Option<StateSpace>, size: u32, access: Access) -> Option<(u32, u32)> {
    let code = match space {
        None => mc::GENERIC,
        Some(StateSpace::Global) => mc::GLOBAL,
        Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster) => mc::SHARED,
        Some(StateSpace::Local) => mc::LOCAL,
        Some(StateSpace::Const) => mc::CONST,
        _ => return None,
    };
    let dir = match access {
        Access::Read => mc::READ,
        Access::Write => mc::WRITE,
        Access::ReadWrite => mc::READ | mc::WRITE,
        Access::Barrier(BarrierAccess::Read) => mc::READ | mc::SYNC_OBJECT,
        Access::Barrier(BarrierAccess::Write) => mc::WRITE | mc::SYNC_OBJECT,
        Access::Barrier(BarrierAccess::ReadWrite) => mc::READ | mc::WRITE | mc::SYNC_OBJECT,
    };
    Some((code, size.min(mc::SIZE_MASK) | dir | (code << mc::SPACE_SHIFT)))
}
