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
}

impl<'c, 'm> FnLower<'c, 'm> {
    /// Whether this function's accesses are checked: checked mode, the host
    /// target, thread mode (checked mode compiles every kernel thread by
    /// thread).
    pub fn memcheck_on(&self) -> bool {
        self.cx.opts.memcheck && matches!(self.cx.target, crate::Target::HostCpu) && self.warp.is_none()
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
        let place = self.memcheck_place();
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
        self.cx.declare("llvm.expect.i1", "declare i1 @llvm.expect.i1(i1, i1)");
        let likely = self.out.def_scalar(Ty::I1, format_args!("call i1 @llvm.expect.i1({ok}, i1 true)"));
        let miss = self.out.fresh_label("mcmiss");
        let good = self.out.fresh_label("mcok");
        self.out.terminate(format_args!("br {likely}, label %{good}, label %{miss}"));
        self.out.label(&miss);
        self.cx.declare_runtime(&runtime::MEMCHECK);
        self.out.op(format_args!("call void @{}(ptr %ctx, i32 %lin, {a}, i32 {info}, ptr {cache}, ptr {place})", runtime::MEMCHECK.name));
        self.out.terminate(format_args!("br label %{good}"));
        self.out.label(&good);
    }

    /// Whether this warp-mode function's accesses are checked.
    pub fn memcheck_lanes_on(&self) -> bool {
        self.cx.opts.memcheck && matches!(self.cx.target, crate::Target::HostCpu) && self.warp.is_some()
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
        let place = self.memcheck_place();
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
        let lanes = match &self.memcheck_caches[5] {
            Some(l) => l.clone(),
            None => {
                let l = self.out.alloca(&format!("[{n} x i64]"), 8);
                self.memcheck_caches[5] = Some(l.clone());
                l
            }
        };
        self.out.op(format_args!("store {a}, ptr {lanes}, align 8"));
        let bits = self.bits(&mask);
        self.cx.declare_runtime(&runtime::MEMCHECK_WARP);
        self.out.op(format_args!(
            "call void @{}(ptr %ctx, i32 %wbase, ptr {lanes}, {bits}, i32 {info}, ptr {cache}, ptr {place}, ptr %frame)",
            runtime::MEMCHECK_WARP.name
        ));
        self.out.terminate(format_args!("br label %{good}"));
        self.out.label(&good);
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
    fn memcheck_place(&mut self) -> String {
        let (line, _) = self.cx.lines.line_col(self.span().start);
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
    };
    Some((code, size.min(mc::SIZE_MASK) | dir | (code << mc::SPACE_SHIFT)))
}
