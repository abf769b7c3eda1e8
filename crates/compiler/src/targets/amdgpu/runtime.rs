//! The runtime functions of [`crate::cpu_abi::runtime`] as LLVM IR
//! for AMD GPUs, with the semantics of the CPU backend
//! (`backend-cpu/src/exec/warp.rs`) where the hardware allows.
//!
//! Lanes of a wavefront run in lock step, so a warp collective involves the
//! lanes of the warp that are active at the instruction (the `exec` mask):
//! lanes of the member mask that took another branch do not wait for each
//! other as they do on NVIDIA GPUs since Volta and on the CPU backend.
//! Every function is `alwaysinline` and `convergent` so that LLVM neither
//! moves the cross-lane operations across control flow nor keeps calls.

use super::{Arch, Family, DYNAMIC_LDS};
use crate::cpu_abi::{bar_red, matching, redux, shfl, vote};
use crate::CompileError;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Functions the AMDGPU runtime library defines in the module, among those
/// the lowering may declare (runtime functions and libm calls).
pub fn defines(name: &str) -> bool {
    DEFINED.contains(&name)
}

const DEFINED: &[&str] = &[
    "__anycuda_barrier",
    "__anycuda_barrier_arrive",
    "__anycuda_barrier_red",
    "__anycuda_warp_sync",
    "__anycuda_shfl",
    "__anycuda_vote",
    "__anycuda_match",
    "__anycuda_redux",
    "__anycuda_activemask",
    "__anycuda_warp_gather",
    "__anycuda_trap",
    "__anycuda_assertfail",
    "__anycuda_yield",
    "__anycuda_clock64",
    "__anycuda_globaltimer",
    "__anycuda_nanosleep",
    "__anycuda_is_local",
    "__anycuda_vprintf",
    "__anycuda_malloc",
    "__anycuda_free",
    "tanhf",
    "tanh",
];

/// Runtime functions with no AMDGPU implementation yet.
const MISSING: &[&str] = &[
    "__anycuda_tex",
    "__anycuda_tex_mip",
    "__anycuda_suld",
    "__anycuda_sust",
    "__anycuda_sured",
    "__anycuda_txq",
    "__anycuda_txq_level",
    "__anycuda_istypep",
    "__anycuda_devrt",
];

/// Attributes of every runtime function.
const ATTRS: &str = "alwaysinline nounwind convergent";

/// Intrinsics the library and the kernel entries call, with their declarations.
const INTRINSICS: &[(&str, &str)] = &[
    ("llvm.amdgcn.workitem.id.x", "declare i32 @llvm.amdgcn.workitem.id.x()"),
    ("llvm.amdgcn.workitem.id.y", "declare i32 @llvm.amdgcn.workitem.id.y()"),
    ("llvm.amdgcn.workitem.id.z", "declare i32 @llvm.amdgcn.workitem.id.z()"),
    ("llvm.amdgcn.workgroup.id.x", "declare i32 @llvm.amdgcn.workgroup.id.x()"),
    ("llvm.amdgcn.workgroup.id.y", "declare i32 @llvm.amdgcn.workgroup.id.y()"),
    ("llvm.amdgcn.workgroup.id.z", "declare i32 @llvm.amdgcn.workgroup.id.z()"),
    ("llvm.amdgcn.dispatch.ptr", "declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()"),
    ("llvm.amdgcn.dispatch.id", "declare i64 @llvm.amdgcn.dispatch.id()"),
    ("llvm.amdgcn.mbcnt.lo", "declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32)"),
    ("llvm.amdgcn.mbcnt.hi", "declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32)"),
    ("llvm.amdgcn.ballot.i32", "declare i32 @llvm.amdgcn.ballot.i32(i1)"),
    ("llvm.amdgcn.ballot.i64", "declare i64 @llvm.amdgcn.ballot.i64(i1)"),
    ("llvm.amdgcn.ds.bpermute", "declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)"),
    ("llvm.amdgcn.s.barrier", "declare void @llvm.amdgcn.s.barrier()"),
    ("llvm.amdgcn.wave.barrier", "declare void @llvm.amdgcn.wave.barrier()"),
    ("llvm.amdgcn.endpgm", "declare void @llvm.amdgcn.endpgm()"),
    ("llvm.amdgcn.s.sleep", "declare void @llvm.amdgcn.s.sleep(i32)"),
    ("llvm.amdgcn.s.memtime", "declare i64 @llvm.amdgcn.s.memtime()"),
    ("llvm.amdgcn.s.memrealtime", "declare i64 @llvm.amdgcn.s.memrealtime()"),
    ("llvm.amdgcn.s.sendmsg.rtn.i64", "declare i64 @llvm.amdgcn.s.sendmsg.rtn.i64(i32)"),
    ("llvm.amdgcn.is.private", "declare i1 @llvm.amdgcn.is.private(ptr)"),
    ("llvm.readcyclecounter", "declare i64 @llvm.readcyclecounter()"),
    ("llvm.trap", "declare void @llvm.trap()"),
    ("llvm.memset.p0.i64", "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)"),
    ("llvm.memcpy.p0.p0.i64", "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)"),
    ("llvm.usub.sat.i32", "declare i32 @llvm.usub.sat.i32(i32, i32)"),
    ("llvm.ctpop.i32", "declare i32 @llvm.ctpop.i32(i32)"),
    ("llvm.ctpop.i64", "declare i64 @llvm.ctpop.i64(i64)"),
    ("llvm.ctlz.i64", "declare i64 @llvm.ctlz.i64(i64, i1)"),
    ("llvm.cttz.i32", "declare i32 @llvm.cttz.i32(i32, i1)"),
    ("llvm.cttz.i64", "declare i64 @llvm.cttz.i64(i64, i1)"),
    ("llvm.umin.i32", "declare i32 @llvm.umin.i32(i32, i32)"),
    ("llvm.umax.i32", "declare i32 @llvm.umax.i32(i32, i32)"),
    ("llvm.smin.i32", "declare i32 @llvm.smin.i32(i32, i32)"),
    ("llvm.smax.i32", "declare i32 @llvm.smax.i32(i32, i32)"),
    ("llvm.fabs.f16", "declare half @llvm.fabs.f16(half)"),
    ("llvm.fabs.f32", "declare float @llvm.fabs.f32(float)"),
    ("llvm.fabs.f64", "declare double @llvm.fabs.f64(double)"),
    ("llvm.sqrt.f32", "declare float @llvm.sqrt.f32(float)"),
    ("llvm.sqrt.f64", "declare double @llvm.sqrt.f64(double)"),
    ("llvm.rint.f64", "declare double @llvm.rint.f64(double)"),
    ("llvm.fma.f64", "declare double @llvm.fma.f64(double, double, double)"),
    ("llvm.ldexp.f64.i32", "declare double @llvm.ldexp.f64.i32(double, i32)"),
    ("llvm.copysign.f64", "declare double @llvm.copysign.f64(double, double)"),
];

/// The runtime library for a module whose lowering declared `decls`.
pub fn runtime_library(arch: &Arch, decls: &BTreeMap<String, String>) -> Result<String, CompileError> {
    if let Some(name) = MISSING.iter().find(|n| decls.contains_key(**n)) {
        // `compile` names the PTX call site first; this is the fallback for
        // callers of the lowering alone.
        return Err(CompileError::Unsupported {
            function: String::new(),
            what: format!("`{}` is not supported on AMDGPU yet", name.trim_start_matches("__anycuda_")),
            line: 0,
            column: 0,
        });
    }
    let mut s = String::from("\n; AMDGPU runtime library\n");
    for (name, decl) in INTRINSICS {
        if !decls.contains_key(*name) {
            s.push_str(decl);
            s.push('\n');
        }
    }
    let _ = writeln!(s, "{DYNAMIC_LDS} = external addrspace(3) global [0 x i8], align 16");
    s.push_str(&lane_helpers(arch));
    let uses_bar_red = decls.contains_key("__anycuda_barrier_red");
    s.push_str(&prologue(uses_bar_red));
    // Faults report through the printf record writer.
    let reports = ["__anycuda_assertfail", "__anycuda_trap"].iter().any(|n| decls.contains_key(*n));
    if reports && !decls.contains_key("__anycuda_vprintf") {
        s.push_str(&vprintf());
    }
    for name in DEFINED {
        if !decls.contains_key(*name) {
            continue;
        }
        let text = match *name {
            "__anycuda_barrier" => barrier("__anycuda_barrier"),
            // No AMD barrier lets a wavefront signal without waiting (before
            // gfx12): arriving is a full barrier, which is right when each
            // wavefront either arrives or waits once per phase, the usual
            // producer/consumer use.
            "__anycuda_barrier_arrive" => barrier("__anycuda_barrier_arrive"),
            "__anycuda_barrier_red" => barrier_red(arch),
            "__anycuda_warp_sync" => warp_sync(),
            "__anycuda_shfl" => shfl(),
            "__anycuda_vote" => vote(),
            "__anycuda_match" => match_sync(),
            "__anycuda_redux" => redux(),
            "__anycuda_activemask" => activemask(),
            "__anycuda_warp_gather" => warp_gather(),
            "__anycuda_trap" => trap(),
            "__anycuda_assertfail" => assertfail(),
            "__anycuda_yield" => yield_(),
            "__anycuda_clock64" => clock64(arch),
            "__anycuda_globaltimer" => globaltimer(arch),
            "__anycuda_nanosleep" => nanosleep(),
            "__anycuda_is_local" => is_local(),
            "__anycuda_vprintf" => vprintf(),
            "__anycuda_malloc" => malloc(),
            "__anycuda_free" => free(),
            "tanhf" => tanhf(),
            "tanh" => tanh(),
            _ => continue,
        };
        s.push_str(&text);
    }
    if decls.contains_key("tanhf") || decls.contains_key("tanh") {
        s.push_str(&tanh_f64());
    }
    Ok(s)
}

/// Lane helpers: the lane in the wavefront, the first lane of the caller's
/// warp in the wavefront, a ballot over the caller's warp and a read of
/// another lane of the warp.
fn lane_helpers(arch: &Arch) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "define internal i32 @__anycuda_amd.lane() {ATTRS} {{");
    s.push_str("  %lo = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)\n");
    if arch.wave64 {
        s.push_str("  %l = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %lo)\n  ret i32 %l\n}\n");
    } else {
        s.push_str("  ret i32 %lo\n}\n");
    }
    let _ = writeln!(s, "define internal i32 @__anycuda_amd.warp_base() {ATTRS} {{");
    if arch.wave64 {
        s.push_str("  %l = call i32 @__anycuda_amd.lane()\n  %b = and i32 %l, 32\n  ret i32 %b\n}\n");
    } else {
        s.push_str("  ret i32 0\n}\n");
    }
    // A ballot over the whole wavefront, as wide as the wavefront.
    let wt = if arch.wave64 { "i64" } else { "i32" };
    let _ = writeln!(s, "define internal {wt} @__anycuda_amd.wave_ballot(i1 %p) {ATTRS} {{");
    let _ = writeln!(s, "  %b = call {wt} @llvm.amdgcn.ballot.{wt}(i1 %p)\n  ret {wt} %b\n}}");
    let _ = writeln!(s, "define internal i32 @__anycuda_amd.ballot(i1 %p) {ATTRS} {{");
    if arch.wave64 {
        s.push_str(
            "  %b = call i64 @__anycuda_amd.wave_ballot(i1 %p)
  %base = call i32 @__anycuda_amd.warp_base()
  %sh = zext i32 %base to i64
  %w = lshr i64 %b, %sh
  %r = trunc i64 %w to i32
  ret i32 %r
}
",
        );
    } else {
        s.push_str("  %b = call i32 @__anycuda_amd.wave_ballot(i1 %p)\n  ret i32 %b\n}\n");
    }
    let _ = writeln!(s, "define internal i32 @__anycuda_amd.from_lane(i32 %k, i32 %v) {ATTRS} {{");
    s.push_str(
        "  %base = call i32 @__anycuda_amd.warp_base()
  %src = add i32 %base, %k
  %addr = shl i32 %src, 2
  %r = call i32 @llvm.amdgcn.ds.bpermute(i32 %addr, i32 %v)
  ret i32 %r
}
",
    );
    s
}

/// Called by every kernel entry before the kernel body. `bar.red` counts
/// in an LDS word that must start at zero; LDS is not initialised, so the
/// first thread clears it and the block waits for that once.
fn prologue(uses_bar_red: bool) -> String {
    let mut s = format!("define internal void @__anycuda_amd.prologue(i32 %lin) {ATTRS} {{\nentry:\n");
    if uses_bar_red {
        s.push_str(
            "  %first = icmp eq i32 %lin, 0
  br i1 %first, label %clear, label %sync
clear:
  store atomic i32 0, ptr addrspace(3) @__anycuda_amd.bar_red syncscope(\"workgroup\") monotonic, align 4
  br label %sync
sync:
  fence syncscope(\"workgroup\") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope(\"workgroup\") acquire
",
        );
    }
    s.push_str("  ret void\n}\n");
    if uses_bar_red {
        s.push_str("@__anycuda_amd.bar_red = internal addrspace(3) global i32 poison, align 4\n");
    }
    s
}

/// The fences around `s_barrier` make the block's memory operations
/// before the barrier visible to every thread after it, as `bar.sync` does.
const BLOCK_BARRIER: &str = "  fence syncscope(\"workgroup\") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope(\"workgroup\") acquire
";

/// `bar.sync`/`barrier.sync` of the whole block: every wavefront takes
/// part, whatever the id (the lowering refuses thread counts and
/// `bar.arrive` on AMD GPUs; an id out of range traps, as it fails the
/// launch on the CPU).
fn barrier(name: &str) -> String {
    format!(
        "define internal void @{name}(ptr %ctx, i32 %thread, i32 %id, i32 %count, i32 %site) {ATTRS} {{
entry:
  %bad = icmp uge i32 %id, 16
  br i1 %bad, label %trap, label %ok
trap:
  call void @llvm.trap()
  unreachable
ok:
{BLOCK_BARRIER}  ret void
}}
"
    )
}

/// `bar.red.{{popc,and,or}}`: every wavefront adds the count of its lanes
/// that decide the result (true predicates for popc/or, false ones for
/// and) to an LDS counter, the block waits, reads the total, waits again
/// and takes its contribution back, which leaves the counter at zero for
/// the next `bar.red` without electing a thread that must still be alive.
fn barrier_red(arch: &Arch) -> String {
    let wt = if arch.wave64 { "i64" } else { "i32" };
    let count = |v: &str, out: &str| {
        if arch.wave64 {
            format!("  {out}.w = call i64 @llvm.ctpop.i64(i64 {v})\n  {out} = trunc i64 {out}.w to i32\n")
        } else {
            format!("  {out} = call i32 @llvm.ctpop.i32(i32 {v})\n")
        }
    };
    let mut s = format!(
        "define internal i32 @__anycuda_barrier_red(ptr %ctx, i32 %thread, i32 %id, i32 %count, i32 %op, i32 %pred, i32 %site) {ATTRS} {{
entry:
  %bad = icmp uge i32 %id, 16
  br i1 %bad, label %trap, label %ok
trap:
  call void @llvm.trap()
  unreachable
ok:
  %p = icmp ne i32 %pred, 0
  %is.and = icmp eq i32 %op, {and}
  %decides = xor i1 %p, %is.and
  %active = call {wt} @__anycuda_amd.wave_ballot(i1 true)
  %votes = call {wt} @__anycuda_amd.wave_ballot(i1 %decides)
",
        and = bar_red::AND
    );
    s.push_str(&count("%votes", "%mine"));
    let _ = write!(
        s,
        "  %leader.lane = call {wt} @llvm.cttz.{wt}({wt} %active, i1 true)
  %lane.w = call i32 @__anycuda_amd.lane()
  %lane = {widen} i32 %lane.w to {wt}
  %leader = icmp eq {wt} %lane, %leader.lane
  br i1 %leader, label %add, label %wait
add:
  %old = atomicrmw add ptr addrspace(3) @__anycuda_amd.bar_red, i32 %mine syncscope(\"workgroup\") monotonic, align 4
  br label %wait
wait:
{BLOCK_BARRIER}  %total = load atomic i32, ptr addrspace(3) @__anycuda_amd.bar_red syncscope(\"workgroup\") monotonic, align 4
{BLOCK_BARRIER}  br i1 %leader, label %undo, label %done
undo:
  %old2 = atomicrmw sub ptr addrspace(3) @__anycuda_amd.bar_red, i32 %mine syncscope(\"workgroup\") monotonic, align 4
  br label %done
done:
  %is.popc = icmp eq i32 %op, {popc}
  %none = icmp eq i32 %total, 0
  %some = icmp ne i32 %total, 0
  %flag = select i1 %is.and, i1 %none, i1 %some
  %flag.i = zext i1 %flag to i32
  %r = select i1 %is.popc, i32 %total, i32 %flag.i
  ret i32 %r
}}
",
        popc = bar_red::POPC,
        widen = if arch.wave64 { "zext" } else { "bitcast" }
    );
    s
}

/// `bar.warp.sync`: the lanes of a wavefront are always together; the
/// fences order their memory operations as `__syncwarp` promises.
fn warp_sync() -> String {
    format!(
        "define internal void @__anycuda_warp_sync(ptr %ctx, i32 %thread, i32 %mask, i32 %site) {ATTRS} {{
  fence syncscope(\"wavefront\") release
  call void @llvm.amdgcn.wave.barrier()
  fence syncscope(\"wavefront\") acquire
  ret void
}}
"
    )
}

/// `shfl.sync`: the source lane and range test of the PTX pseudo-code; a
/// source lane that is not active gives the caller's own value, as on
/// the CPU backend.
/// Every lane's `bytes` bytes into the caller's `scratch`, lane after
/// lane: word by word, each lane reading the 32 lanes' word with
/// `ds_bpermute` (a warp's lanes run this together: `bytes` is the same
/// for all of them).
fn warp_gather() -> String {
    format!(
        "define internal ptr @__anycuda_warp_gather(ptr %ctx, i32 %thread, ptr %src, i32 %bytes, ptr %scratch, i32 %site) {ATTRS} {{
entry:
  %words = lshr i32 %bytes, 2
  %none = icmp eq i32 %words, 0
  br i1 %none, label %done, label %word
word:
  %w = phi i32 [0, %entry], [%w1, %next]
  %wo = shl i32 %w, 2
  %sp = getelementptr i8, ptr %src, i32 %wo
  %v = load i32, ptr %sp, align 4
  br label %lane
lane:
  %k = phi i32 [0, %word], [%k1, %lane]
  %got = call i32 @__anycuda_amd.from_lane(i32 %k, i32 %v)
  %row = mul i32 %k, %bytes
  %at = add i32 %row, %wo
  %dp = getelementptr i8, ptr %scratch, i32 %at
  store i32 %got, ptr %dp, align 4
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, 32
  br i1 %more, label %lane, label %next
next:
  %w1 = add i32 %w, 1
  %wmore = icmp ult i32 %w1, %words
  br i1 %wmore, label %word, label %done
done:
  ret ptr %scratch
}}
"
    )
}

fn shfl() -> String {
    format!(
        "define internal i64 @__anycuda_shfl(ptr %ctx, i32 %thread, i32 %mode, i32 %value, i32 %b, i32 %c, i32 %mask, i32 %site) {ATTRS} {{
  %wlane = call i32 @__anycuda_amd.lane()
  %lane = and i32 %wlane, 31
  %bval = and i32 %b, 31
  %cval = and i32 %c, 31
  %c8 = lshr i32 %c, 8
  %seg = and i32 %c8, 31
  %nseg = xor i32 %seg, -1
  %min = and i32 %lane, %seg
  %chi = and i32 %cval, %nseg
  %max = or i32 %min, %chi
  %j.up = sub i32 %lane, %bval
  %ok.up = icmp sge i32 %j.up, %max
  %j.down = add i32 %lane, %bval
  %ok.down = icmp ule i32 %j.down, %max
  %j.bfly = xor i32 %lane, %bval
  %ok.bfly = icmp ule i32 %j.bfly, %max
  %bhi = and i32 %bval, %nseg
  %j.idx = or i32 %min, %bhi
  %ok.idx = icmp ule i32 %j.idx, %max
  %is.up = icmp eq i32 %mode, {up}
  %is.down = icmp eq i32 %mode, {down}
  %is.bfly = icmp eq i32 %mode, {bfly}
  %j1 = select i1 %is.bfly, i32 %j.bfly, i32 %j.idx
  %ok1 = select i1 %is.bfly, i1 %ok.bfly, i1 %ok.idx
  %j2 = select i1 %is.down, i32 %j.down, i32 %j1
  %ok2 = select i1 %is.down, i1 %ok.down, i1 %ok1
  %j = select i1 %is.up, i32 %j.up, i32 %j2
  %ok = select i1 %is.up, i1 %ok.up, i1 %ok2
  %src = select i1 %ok, i32 %j, i32 %lane
  %active = call i32 @__anycuda_amd.ballot(i1 true)
  %got = call i32 @__anycuda_amd.from_lane(i32 %src, i32 %value)
  %bits = lshr i32 %active, %src
  %has = trunc i32 %bits to i1
  %v = select i1 %has, i32 %got, i32 %value
  %v64 = zext i32 %v to i64
  %ok64 = zext i1 %ok to i64
  %okhi = shl i64 %ok64, 32
  %r = or i64 %v64, %okhi
  ret i64 %r
}}
",
        up = shfl::UP,
        down = shfl::DOWN,
        bfly = shfl::BFLY
    )
}

/// `vote.sync`: over the active lanes of the member mask.
fn vote() -> String {
    format!(
        "define internal i32 @__anycuda_vote(ptr %ctx, i32 %thread, i32 %mode, i32 %pred, i32 %mask, i32 %site) {ATTRS} {{
  %active = call i32 @__anycuda_amd.ballot(i1 true)
  %members = and i32 %active, %mask
  %p = icmp ne i32 %pred, 0
  %preds = call i32 @__anycuda_amd.ballot(i1 %p)
  %ballot = and i32 %preds, %members
  %all = icmp eq i32 %ballot, %members
  %any = icmp ne i32 %ballot, 0
  %none = icmp eq i32 %ballot, 0
  %uni = or i1 %none, %all
  %is.all = icmp eq i32 %mode, {all}
  %is.any = icmp eq i32 %mode, {any}
  %is.uni = icmp eq i32 %mode, {uni}
  %f1 = select i1 %is.uni, i1 %uni, i1 false
  %f2 = select i1 %is.any, i1 %any, i1 %f1
  %f = select i1 %is.all, i1 %all, i1 %f2
  %fi = zext i1 %f to i32
  %is.ballot = icmp eq i32 %mode, {ballot}
  %r = select i1 %is.ballot, i32 %ballot, i32 %fi
  ret i32 %r
}}
",
        all = vote::ALL,
        any = vote::ANY,
        uni = vote::UNI,
        ballot = vote::BALLOT
    )
}

/// `match.sync`: compares with each lane of the warp in turn.
fn match_sync() -> String {
    format!(
        "define internal i64 @__anycuda_match(ptr %ctx, i32 %thread, i32 %mode, i64 %value, i32 %mask, i32 %site) {ATTRS} {{
entry:
  %active = call i32 @__anycuda_amd.ballot(i1 true)
  %members = and i32 %active, %mask
  %lo = trunc i64 %value to i32
  %hi.w = lshr i64 %value, 32
  %hi = trunc i64 %hi.w to i32
  br label %loop
loop:
  %k = phi i32 [ 0, %entry ], [ %k1, %loop ]
  %same = phi i32 [ 0, %entry ], [ %same1, %loop ]
  %olo = call i32 @__anycuda_amd.from_lane(i32 %k, i32 %lo)
  %ohi = call i32 @__anycuda_amd.from_lane(i32 %k, i32 %hi)
  %elo = icmp eq i32 %olo, %lo
  %ehi = icmp eq i32 %ohi, %hi
  %eq = and i1 %elo, %ehi
  %bit = shl i32 1, %k
  %inm = and i32 %members, %bit
  %member = icmp ne i32 %inm, 0
  %take = and i1 %eq, %member
  %add = select i1 %take, i32 %bit, i32 0
  %same1 = or i32 %same, %add
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, 32
  br i1 %more, label %loop, label %done
done:
  %is.all = icmp eq i32 %mode, {all}
  %whole = icmp eq i32 %same1, %members
  %m64 = zext i32 %members to i64
  %mp = or i64 %m64, 4294967296
  %r.all = select i1 %whole, i64 %mp, i64 0
  %r.any = zext i32 %same1 to i64
  %r = select i1 %is.all, i64 %r.all, i64 %r.any
  ret i64 %r
}}
",
        all = matching::ALL
    )
}

/// `redux.sync`: folds the values of the member lanes in lane order.
fn redux() -> String {
    format!(
        "define internal i32 @__anycuda_redux(ptr %ctx, i32 %thread, i32 %op, i32 %value, i32 %mask, i32 %site) {ATTRS} {{
entry:
  %active = call i32 @__anycuda_amd.ballot(i1 true)
  %members = and i32 %active, %mask
  %is.add = icmp eq i32 %op, {add}
  %is.minu = icmp eq i32 %op, {minu}
  %is.maxu = icmp eq i32 %op, {maxu}
  %is.mins = icmp eq i32 %op, {mins}
  %is.maxs = icmp eq i32 %op, {maxs}
  %is.and = icmp eq i32 %op, {and}
  %is.or = icmp eq i32 %op, {or}
  %i1 = select i1 %is.minu, i32 -1, i32 0
  %i2 = select i1 %is.mins, i32 2147483647, i32 %i1
  %i3 = select i1 %is.maxs, i32 -2147483648, i32 %i2
  %init = select i1 %is.and, i32 -1, i32 %i3
  br label %loop
loop:
  %k = phi i32 [ 0, %entry ], [ %k1, %loop ]
  %acc = phi i32 [ %init, %entry ], [ %acc1, %loop ]
  %v = call i32 @__anycuda_amd.from_lane(i32 %k, i32 %value)
  %r.add = add i32 %acc, %v
  %r.minu = call i32 @llvm.umin.i32(i32 %acc, i32 %v)
  %r.maxu = call i32 @llvm.umax.i32(i32 %acc, i32 %v)
  %r.mins = call i32 @llvm.smin.i32(i32 %acc, i32 %v)
  %r.maxs = call i32 @llvm.smax.i32(i32 %acc, i32 %v)
  %r.and = and i32 %acc, %v
  %r.or = or i32 %acc, %v
  %r.xor = xor i32 %acc, %v
  %s1 = select i1 %is.or, i32 %r.or, i32 %r.xor
  %s2 = select i1 %is.and, i32 %r.and, i32 %s1
  %s3 = select i1 %is.maxs, i32 %r.maxs, i32 %s2
  %s4 = select i1 %is.mins, i32 %r.mins, i32 %s3
  %s5 = select i1 %is.maxu, i32 %r.maxu, i32 %s4
  %s6 = select i1 %is.minu, i32 %r.minu, i32 %s5
  %next = select i1 %is.add, i32 %r.add, i32 %s6
  %bit = shl i32 1, %k
  %inm = and i32 %members, %bit
  %member = icmp ne i32 %inm, 0
  %acc1 = select i1 %member, i32 %next, i32 %acc
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, 32
  br i1 %more, label %loop, label %done
done:
  ret i32 %acc1
}}
",
        add = redux::ADD,
        minu = redux::MIN_U32,
        maxu = redux::MAX_U32,
        mins = redux::MIN_S32,
        maxs = redux::MAX_S32,
        and = redux::AND,
        or = redux::OR
    )
}

fn activemask() -> String {
    format!(
        "define internal i32 @__anycuda_activemask(ptr %ctx, i32 %thread, i32 %site) {ATTRS} {{
  %active = call i32 @__anycuda_amd.ballot(i1 true)
  ret i32 %active
}}
"
    )
}

/// A failed `assert`: its message (CUDA's words,
/// `printf_records::ASSERT_FORMAT`) as a record for standard error, the
/// buffer's [`ASSERTED`](crate::cpu_abi::printf_records::ASSERTED) flag,
/// and the end of the wavefront (`s_endpgm`): the host reports the
/// assertion when it synchronises (`CUDA_ERROR_ASSERT`). Ended wavefronts
/// no longer count at barriers, so the rest of the grid runs to its end.
fn assertfail() -> String {
    use crate::cpu_abi::printf_records as pr;
    let stores = "  store ptr %file, ptr %a, align 8
  %line.p = getelementptr i8, ptr %a, i64 8
  store i32 %line, ptr %line.p, align 4
  %function.p = getelementptr i8, ptr %a, i64 16
  store ptr %function, ptr %function.p, align 8
  %message.p = getelementptr i8, ptr %a, i64 48
  store ptr %message, ptr %message.p, align 8
";
    fault_report(
        "assert",
        "@__anycuda_assertfail(ptr %ctx, i32 %thread, ptr %message, ptr %file, i32 %line, ptr %function, i64 %char_size)",
        FaultReport { format: pr::ASSERT_FORMAT, stream: pr::STDERR, flag: pr::ASSERTED, ids_at: 24, stores },
        "call void @llvm.amdgcn.endpgm()",
    )
}

/// `trap`: where it happened (`printf_records::TRAP_FORMAT`: the block,
/// the thread, the PTX function and line) as a record for the host's
/// error, the buffer's [`TRAPPED`](crate::cpu_abi::printf_records::TRAPPED)
/// flag and the end of the wavefront: the host's next synchronisation
/// fails with `CUDA_ERROR_LAUNCH_FAILED`, sticky, as CUDA's does, and the
/// process lives on. Without a buffer, `s_trap`, after which the HSA
/// runtime fails the queue.
fn trap() -> String {
    use crate::cpu_abi::printf_records as pr;
    let stores = "  %place.p = getelementptr i8, ptr %a, i64 24
  store ptr %place, ptr %place.p, align 8
";
    fault_report(
        "trap",
        "@__anycuda_trap(ptr %ctx, i32 %thread, ptr %place)",
        FaultReport { format: pr::TRAP_FORMAT, stream: pr::FAULT, flag: pr::TRAPPED, ids_at: 0, stores },
        "call void @llvm.trap()",
    )
}

/// What [`fault_report`] writes: the record's `format`, for `stream` (a
/// bit of its format length), the header's `flag`, where the block's and
/// the thread's coordinates go in the argument block (six `u32` from
/// `ids_at`), and the stores of the other arguments into `%a`.
struct FaultReport<'a> {
    format: &'a str,
    stream: u32,
    flag: u32,
    ids_at: usize,
    stores: &'a str,
}

/// A runtime function (`signature`: name and parameters) that reports a
/// fault of its thread through the record buffer and ends the wavefront;
/// `no_buffer`: what it does instead where the kernel has no buffer.
/// Needs the record writer of [`vprintf`].
fn fault_report(kind: &str, signature: &str, r: FaultReport, no_buffer: &str) -> String {
    use crate::cpu_abi::{offsets, printf_records as pr};
    let layout = crate::printf::layout(r.format.as_bytes());
    let mut table = vec![layout.bytes, layout.count, layout.strings.len() as u32];
    table.extend(&layout.strings);
    let table_text: Vec<String> = table.iter().map(|v| format!("i32 {v}")).collect();
    let literal = crate::ir::c_bytes(format!("{}\0", r.format).as_bytes());
    let mut ids = String::new();
    for (k, (name, intrinsic)) in ["bx", "by", "bz", "tx", "ty", "tz"]
        .iter()
        .zip(["workgroup.id.x", "workgroup.id.y", "workgroup.id.z", "workitem.id.x", "workitem.id.y", "workitem.id.z"])
        .enumerate()
    {
        let _ = write!(
            ids,
            "  %{name} = call i32 @llvm.amdgcn.{intrinsic}()\n  %{name}.p = getelementptr i8, ptr %a, i64 {}\n  store i32 %{name}, ptr %{name}.p, align 4\n",
            r.ids_at + 4 * k
        );
    }
    let (records_field, flags) = (offsets::PRINTF_RECORDS, pr::FLAGS);
    format!(
        "@__anycuda_amd.{kind}_format = internal unnamed_addr constant [{n} x i8] {literal}, align 1
@__anycuda_amd.{kind}_layout = internal unnamed_addr constant [{k} x i32] [{table}], align 4

define internal void {signature} noreturn {ATTRS} {{
  %a.p = alloca [{bytes} x i8], align 8, addrspace(5)
  %a = addrspacecast ptr addrspace(5) %a.p to ptr
{stores}{ids}  %buf.p = getelementptr i8, ptr %ctx, i64 {records_field}
  %buf = load ptr, ptr %buf.p, align 8
  %nobuf = icmp eq ptr %buf, null
  br i1 %nobuf, label %none, label %report
report:
  %r = call i32 @__anycuda_amd.record(ptr %ctx, ptr @__anycuda_amd.{kind}_format, ptr %a, ptr @__anycuda_amd.{kind}_layout, i32 {stream})
  %flags.p = getelementptr i8, ptr %buf, i64 {flags}
  %old = atomicrmw or ptr %flags.p, i32 {flag} syncscope(\"agent\") monotonic, align 4
  call void @llvm.amdgcn.endpgm()
  unreachable
none:
  {no_buffer}
  unreachable
}}
",
        n = r.format.len() + 1,
        k = table.len(),
        table = table_text.join(", "),
        bytes = layout.bytes,
        stores = r.stores,
        stream = r.stream as i32,
        flag = r.flag,
    )
}

/// Device printf: the call's record (`cpu_abi::printf_records`: the
/// format, the packed arguments as many bytes as the compiler's layout
/// says, each `%s` string) appended to the launch's record buffer, which
/// the backend decodes and prints when it synchronises; a record that does
/// not fit is dropped and counted. Returns the argument count, or -1 (no
/// buffer, no format or layout, or dropped).
fn vprintf() -> String {
    use crate::cpu_abi::{offsets, printf_records as pr};
    let (records_field, max) = (offsets::PRINTF_RECORDS, pr::MAX_STRING);
    let (used, dropped, capacity, records) = (pr::USED, pr::DROPPED, pr::CAPACITY, pr::RECORDS);
    let (header, null_string) = (pr::RECORD_HEADER, pr::NULL_STRING as i32);
    format!(
        "define internal i32 @__anycuda_amd.strlen(ptr %s) {ATTRS} {{
entry:
  br label %loop
loop:
  %n = phi i32 [0, %entry], [%n1, %next]
  %full = icmp uge i32 %n, {max}
  br i1 %full, label %done, label %body
body:
  %p = getelementptr i8, ptr %s, i32 %n
  %c = load i8, ptr %p, align 1
  %z = icmp eq i8 %c, 0
  br i1 %z, label %done, label %next
next:
  %n1 = add i32 %n, 1
  br label %loop
done:
  ret i32 %n
}}

define internal ptr @__anycuda_amd.string_arg(ptr %args, ptr %layout, i32 %i) {ATTRS} {{
  %k = add i32 %i, 3
  %off.p = getelementptr i32, ptr %layout, i32 %k
  %off = load i32, ptr %off.p, align 4
  %slot = getelementptr i8, ptr %args, i32 %off
  %sp = load ptr, ptr %slot, align 1
  ret ptr %sp
}}

define internal i32 @__anycuda_vprintf(ptr %ctx, i32 %thread, ptr %format, ptr %args, ptr %layout) {ATTRS} {{
  %r = call i32 @__anycuda_amd.record(ptr %ctx, ptr %format, ptr %args, ptr %layout, i32 0)
  ret i32 %r
}}

define internal i32 @__anycuda_amd.record(ptr %ctx, ptr %format, ptr %args, ptr %layout, i32 %flags) {ATTRS} {{
entry:
  %buf.p = getelementptr i8, ptr %ctx, i64 {records_field}
  %buf = load ptr, ptr %buf.p, align 8
  %nobuf = icmp eq ptr %buf, null
  %nofmt = icmp eq ptr %format, null
  %nolayout = icmp eq ptr %layout, null
  %no1 = or i1 %nobuf, %nofmt
  %no = or i1 %no1, %nolayout
  br i1 %no, label %fail, label %measure
measure:
  %flen = call i32 @__anycuda_amd.strlen(ptr %format)
  %abytes = load i32, ptr %layout, align 4
  %count.p = getelementptr i8, ptr %layout, i64 4
  %count = load i32, ptr %count.p, align 4
  %ns.p = getelementptr i8, ptr %layout, i64 8
  %ns = load i32, ptr %ns.p, align 4
  br label %slen
slen:
  %i = phi i32 [0, %measure], [%i1, %slen.next]
  %room = phi i32 [0, %measure], [%room1, %slen.next]
  %more = icmp ult i32 %i, %ns
  br i1 %more, label %slen.body, label %reserve
slen.body:
  %sp = call ptr @__anycuda_amd.string_arg(ptr %args, ptr %layout, i32 %i)
  %isnull = icmp eq ptr %sp, null
  br i1 %isnull, label %slen.next, label %slen.len
slen.len:
  %l = call i32 @__anycuda_amd.strlen(ptr %sp)
  br label %slen.next
slen.next:
  %len = phi i32 [0, %slen.body], [%l, %slen.len]
  %len7 = add i32 %len, 7
  %lenp = and i32 %len7, -8
  %r = add i32 %lenp, 8
  %room1 = add i32 %room, %r
  %i1 = add i32 %i, 1
  br label %slen
reserve:
  %f7 = add i32 %flen, 7
  %fpad = and i32 %f7, -8
  %a7 = add i32 %abytes, 7
  %apad = and i32 %a7, -8
  %s1 = add i32 {header}, %fpad
  %s2 = add i32 %s1, %apad
  %size = add i32 %s2, %room
  %used.p = getelementptr i8, ptr %buf, i64 {used}
  %off = atomicrmw add ptr %used.p, i32 %size syncscope(\"agent\") monotonic, align 4
  %cap.p = getelementptr i8, ptr %buf, i64 {capacity}
  %cap = load i32, ptr %cap.p, align 4
  %off64 = zext i32 %off to i64
  %size64 = zext i32 %size to i64
  %end = add i64 %off64, %size64
  %cap64 = zext i32 %cap to i64
  %fits = icmp ule i64 %end, %cap64
  br i1 %fits, label %write, label %drop
drop:
  %dropped.p = getelementptr i8, ptr %buf, i64 {dropped}
  %d = atomicrmw add ptr %dropped.p, i32 1 syncscope(\"agent\") monotonic, align 4
  br label %fail
write:
  %rec.off = add i64 %off64, {records}
  %rec = getelementptr i8, ptr %buf, i64 %rec.off
  store i32 %size, ptr %rec, align 8
  %h1 = getelementptr i8, ptr %rec, i64 4
  %flen.flags = or i32 %flen, %flags
  store i32 %flen.flags, ptr %h1, align 4
  %h2 = getelementptr i8, ptr %rec, i64 8
  store i32 %abytes, ptr %h2, align 8
  %h3 = getelementptr i8, ptr %rec, i64 12
  store i32 %ns, ptr %h3, align 4
  %fdst = getelementptr i8, ptr %rec, i64 {header}
  %flen64 = zext i32 %flen to i64
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %fdst, ptr align 1 %format, i64 %flen64, i1 false)
  %s1.64 = zext i32 %s1 to i64
  %adst = getelementptr i8, ptr %rec, i64 %s1.64
  %abytes64 = zext i32 %abytes to i64
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %adst, ptr align 1 %args, i64 %abytes64, i1 false)
  %s2.64 = zext i32 %s2 to i64
  %sbase = getelementptr i8, ptr %rec, i64 %s2.64
  br label %scopy
scopy:
  %j = phi i32 [0, %write], [%j1, %scopy.next]
  %at = phi ptr [%sbase, %write], [%at.next, %scopy.next]
  %more2 = icmp ult i32 %j, %ns
  br i1 %more2, label %scopy.body, label %done
scopy.body:
  %str = call ptr @__anycuda_amd.string_arg(ptr %args, ptr %layout, i32 %j)
  %at.pad = getelementptr i8, ptr %at, i64 4
  store i32 0, ptr %at.pad, align 4
  %isnull2 = icmp eq ptr %str, null
  br i1 %isnull2, label %scopy.null, label %scopy.copy
scopy.null:
  store i32 {null_string}, ptr %at, align 8
  br label %scopy.next
scopy.copy:
  %l2 = call i32 @__anycuda_amd.strlen(ptr %str)
  store i32 %l2, ptr %at, align 8
  %dst = getelementptr i8, ptr %at, i64 8
  %l2.64 = zext i32 %l2 to i64
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %dst, ptr align 1 %str, i64 %l2.64, i1 false)
  br label %scopy.next
scopy.next:
  %len2 = phi i32 [0, %scopy.null], [%l2, %scopy.copy]
  %len2.7 = add i32 %len2, 7
  %len2.p = and i32 %len2.7, -8
  %adv = add i32 %len2.p, 8
  %adv64 = zext i32 %adv to i64
  %at.next = getelementptr i8, ptr %at, i64 %adv64
  %j1 = add i32 %j, 1
  br label %scopy
done:
  ret i32 %count
fail:
  ret i32 -1
}}
"
    )
}

/// Wavefronts are scheduled by the hardware: spinning threads need not
/// give way.
fn yield_() -> String {
    format!("define internal void @__anycuda_yield(ptr %ctx, i32 %thread) {ATTRS} {{\n  ret void\n}}\n")
}

/// The real-time clock, 100 MHz on AMD GPUs.
fn realtime(arch: &Arch) -> &'static str {
    match arch.family {
        Family::Gfx9 | Family::Gfx10 => "  %t = call i64 @llvm.amdgcn.s.memrealtime()\n",
        // MSG_RTN_GET_REALTIME; s_memrealtime is gone since gfx11.
        Family::Gfx11 | Family::Gfx12 => "  %t = call i64 @llvm.amdgcn.s.sendmsg.rtn.i64(i32 131)\n",
    }
}

/// `%clock64`: the shader clock where it is 64 bits wide. gfx11's cycle
/// counter has 20 bits and would wrap within a millisecond, so there the
/// real-time clock stands in (monotonic, in 10 ns steps).
fn clock64(arch: &Arch) -> String {
    let read = match arch.family {
        Family::Gfx9 | Family::Gfx10 => "  %t = call i64 @llvm.amdgcn.s.memtime()\n",
        Family::Gfx11 => realtime(arch),
        Family::Gfx12 => "  %t = call i64 @llvm.readcyclecounter()\n",
    };
    format!("define internal i64 @__anycuda_clock64(ptr %ctx) {ATTRS} {{\n{read}  ret i64 %t\n}}\n")
}

/// `%globaltimer`: nanoseconds from the 100 MHz real-time clock (counting
/// from an unspecified origin, not the Unix epoch).
fn globaltimer(arch: &Arch) -> String {
    format!(
        "define internal i64 @__anycuda_globaltimer(ptr %ctx) {ATTRS} {{\n{}  %ns = mul i64 %t, 10\n  ret i64 %ns\n}}\n",
        realtime(arch)
    )
}

/// `nanosleep`: `s_sleep 1` waits about 64 clocks, some 30 to 60 ns; PTX
/// allows any time in [0, 2t] and t is at most 1 ms.
fn nanosleep() -> String {
    format!(
        "define internal void @__anycuda_nanosleep(ptr %ctx, i32 %ns) {ATTRS} {{
entry:
  %t = call i32 @llvm.umin.i32(i32 %ns, i32 1000000)
  %n = lshr i32 %t, 5
  %none = icmp eq i32 %n, 0
  br i1 %none, label %done, label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  call void @llvm.amdgcn.s.sleep(i32 1)
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"
    )
}

/// `isspacep.local`: local variables live in the private aperture.
fn is_local() -> String {
    format!(
        "define internal i32 @__anycuda_is_local(ptr %ctx, i32 %thread, i64 %address) {ATTRS} {{
  %p = inttoptr i64 %address to ptr
  %b = call i1 @llvm.amdgcn.is.private(ptr %p)
  %r = zext i1 %b to i32
  ret i32 %r
}}
"
    )
}

fn tanhf() -> String {
    "define internal float @tanhf(float %x) alwaysinline nounwind {
  %d = fpext float %x to double
  %t = call double @__anycuda_amd.tanh(double %d)
  %r = fptrunc double %t to float
  ret float %r
}
"
    .to_string()
}

fn tanh() -> String {
    "define internal double @tanh(double %x) alwaysinline nounwind {
  %t = call double @__anycuda_amd.tanh(double %x)
  ret double %t
}
"
    .to_string()
}

fn hex(v: f64) -> String {
    format!("0x{:016X}", v.to_bits())
}

/// tanh in double precision: tanh|x| = e / (e + 2) with e = expm1(2|x|),
/// expm1 from a Cody-Waite reduction by ln 2 and a Taylor polynomial on
/// |r| <= ln2/2 (truncation below 1e-18 relative). No libm on the device.
fn tanh_f64() -> String {
    let ln2 = std::f64::consts::LN_2;
    // The high part of ln 2 has trailing zero bits so that k * LN2_HI is exact.
    let ln2_hi = f64::from_bits(0x3FE6_2E42_FEE0_0000);
    let ln2_lo = ln2 - ln2_hi;
    let mut s = String::from(
        "define internal double @__anycuda_amd.tanh(double %x) alwaysinline nounwind {
  %a = call double @llvm.fabs.f64(double %x)
  %big = fcmp ogt double %a, 22.0
  %nan = fcmp uno double %x, 0.0
  %out = or i1 %big, %nan
  %y0 = fmul double %a, 2.0
  %y = select i1 %out, double 0.0, double %y0
",
    );
    let _ = writeln!(s, "  %q = fmul double %y, {}", hex(1.0 / ln2));
    s.push_str("  %kf = call double @llvm.rint.f64(double %q)\n  %k = fptosi double %kf to i32\n  %nkf = fneg double %kf\n");
    let _ = writeln!(s, "  %r1 = call double @llvm.fma.f64(double %nkf, double {}, double %y)", hex(ln2_hi));
    let _ = writeln!(s, "  %r = call double @llvm.fma.f64(double %nkf, double {}, double %r1)", hex(ln2_lo));
    // Horner from r^14/14! down: p = r + r^2/2! + ... + r^14/14!.
    let mut coef = [0f64; 15];
    let mut f = 1.0f64;
    for (n, c) in coef.iter_mut().enumerate().skip(1) {
        f *= n as f64;
        *c = 1.0 / f;
    }
    let _ = writeln!(s, "  %h14 = fmul double %r, {}", hex(coef[14]));
    for n in (1..14).rev() {
        let _ = writeln!(s, "  %g{n} = fadd double %h{}, {}", n + 1, hex(coef[n]));
        let _ = writeln!(s, "  %h{n} = fmul double %g{n}, %r");
    }
    s.push_str(
        "  %s = call double @llvm.ldexp.f64.i32(double 1.0, i32 %k)
  %sm1 = fsub double %s, 1.0
  %e = call double @llvm.fma.f64(double %s, double %h1, double %sm1)
  %d = fadd double %e, 2.0
  %t = fdiv double %e, %d
  %t1 = select i1 %big, double 1.0, double %t
  %t2 = call double @llvm.copysign.f64(double %t1, double %x)
  %res = select i1 %nan, double %x, double %t2
  ret double %res
}
",
    );
    s
}

/// The warp collectives and tanh run on the host, the lane intrinsics
/// replaced by a recorded tape: for each lane in turn, the ballots it
/// sees and the values of the other lanes it reads, in call order.
/// Results are compared with the PTX semantics the CPU backend implements.
/// Device `malloc` on the device's heap (`cpu_abi::device_heap`): the
/// request's size class (as `device_heap::class_of`), then a block popped
/// from the class's free list or carved from the arena, each with a
/// compare-and-swap retried until it holds; null when the arena is used up,
/// the request is larger than any heap, or the launch has no heap.
fn malloc() -> String {
    use crate::cpu_abi::{device_heap as dh, offsets};
    let (heap_field, max, heads, arena, next, state) = (offsets::HEAP, dh::MAX_REQUEST, dh::HEADS, dh::ARENA, dh::NEXT, dh::STATE);
    let (arena_bytes, allocated, header) = (dh::ARENA_BYTES, dh::ALLOCATED as i32, dh::BLOCK_HEADER);
    let mask = (1u64 << dh::OFFSET_BITS) - 1;
    let swap = swap_head("%nextoff");
    format!(
        "define internal ptr @__anycuda_malloc(ptr %ctx, i64 %size) {ATTRS} {{
entry:
  %h.f = getelementptr i8, ptr %ctx, i64 {heap_field}
  %h.g = load ptr, ptr %h.f, align 8
  %noheap = icmp eq ptr %h.g, null
  %big = icmp ugt i64 %size, {max}
  %no = or i1 %noheap, %big
  br i1 %no, label %fail, label %class
class:
  %h = addrspacecast ptr %h.g to ptr addrspace(1)
  %s15 = add i64 %size, 15
  %u0 = lshr i64 %s15, 4
  %units = add i64 %u0, 1
  %small = icmp ule i64 %units, 4
  %um1 = sub i64 %units, 1
  %lz = call i64 @llvm.ctlz.i64(i64 %um1, i1 false)
  %p = sub i64 63, %lz
  %pm2 = sub i64 %p, 2
  %pm2c = select i1 %small, i64 0, i64 %pm2
  %step = shl i64 1, %pm2c
  %pc = select i1 %small, i64 2, i64 %p
  %pow = shl i64 1, %pc
  %over = sub i64 %units, %pow
  %stepm1 = sub i64 %step, 1
  %o2 = add i64 %over, %stepm1
  %j = lshr i64 %o2, %pm2c
  %pm1 = sub i64 %pc, 1
  %c4 = shl i64 %pm1, 2
  %cj = add i64 %c4, %j
  %cbig = sub i64 %cj, 1
  %jstep = mul i64 %j, %step
  %ubig = add i64 %pow, %jstep
  %class.n = select i1 %small, i64 %um1, i64 %cbig
  %bunits = select i1 %small, i64 %units, i64 %ubig
  %bytes = shl i64 %bunits, 4
  %head.o0 = shl i64 %class.n, 3
  %head.o = add i64 %head.o0, {heads}
  %head.p = getelementptr i8, ptr addrspace(1) %h, i64 %head.o
  %arena = getelementptr i8, ptr addrspace(1) %h, i64 {arena}
  br label %pop
pop:
  %head = load atomic i64, ptr addrspace(1) %head.p syncscope(\"agent\") acquire, align 8
  %hoff = and i64 %head, {mask}
  %empty = icmp eq i64 %hoff, 0
  br i1 %empty, label %carve, label %take
take:
  %hb = shl i64 %hoff, 4
  %blk = getelementptr i8, ptr addrspace(1) %arena, i64 %hb
  %next.p = getelementptr i8, ptr addrspace(1) %blk, i64 {next}
  %next = load atomic i64, ptr addrspace(1) %next.p syncscope(\"agent\") monotonic, align 8
  %nextoff = and i64 %next, {mask}
{swap}  br i1 %ok, label %got, label %pop
carve:
  %used = load atomic i64, ptr addrspace(1) %h syncscope(\"agent\") monotonic, align 8
  %cap.p = getelementptr i8, ptr addrspace(1) %h, i64 {arena_bytes}
  %cap = load i64, ptr addrspace(1) %cap.p, align 8
  %end = add i64 %used, %bytes
  %fits = icmp ule i64 %end, %cap
  br i1 %fits, label %claim, label %fail
claim:
  %cx2 = cmpxchg ptr addrspace(1) %h, i64 %used, i64 %end syncscope(\"agent\") monotonic monotonic, align 8
  %ok2 = extractvalue {{ i64, i1 }} %cx2, 1
  br i1 %ok2, label %carved, label %pop
carved:
  %blk2 = getelementptr i8, ptr addrspace(1) %arena, i64 %used
  br label %got
got:
  %b = phi ptr addrspace(1) [%blk, %take], [%blk2, %carved]
  %class32 = trunc i64 %class.n to i32
  store i32 %class32, ptr addrspace(1) %b, align 16
  %st.p = getelementptr i8, ptr addrspace(1) %b, i64 {state}
  store atomic i32 {allocated}, ptr addrspace(1) %st.p syncscope(\"agent\") monotonic, align 4
  %pay = getelementptr i8, ptr addrspace(1) %b, i64 {header}
  %r = addrspacecast ptr addrspace(1) %pay to ptr
  ret ptr %r
fail:
  ret ptr null
}}
"
    )
}

/// The compare-and-swap of a free list's head `%head` (read from
/// `%head.p`) for the block at offset `offset` (16-byte units), with the
/// head's change count one more (`device_heap::OFFSET_BITS`); `%ok` says
/// whether it held.
fn swap_head(offset: &str) -> String {
    let bits = crate::cpu_abi::device_heap::OFFSET_BITS;
    format!(
        "  %tag = lshr i64 %head, {bits}
  %tag1 = add i64 %tag, 1
  %tag1s = shl i64 %tag1, {bits}
  %new = or i64 %tag1s, {offset}
  %cx = cmpxchg ptr addrspace(1) %head.p, i64 %head, i64 %new syncscope(\"agent\") acq_rel monotonic, align 8
  %ok = extractvalue {{ i64, i1 }} %cx, 1
"
    )
}

/// Device `free`: a block of the heap in the allocated state becomes freed
/// (one compare-and-swap, so a second `free` of it does nothing) and is
/// pushed on its class's free list. Null, pointers that are not a block of
/// the heap and blocks freed already are ignored, as on the host.
fn free() -> String {
    use crate::cpu_abi::{device_heap as dh, offsets};
    let (heap_field, heads, arena, next, state, classes) = (offsets::HEAP, dh::HEADS, dh::ARENA, dh::NEXT, dh::STATE, dh::CLASSES);
    let (allocated, freed, header) = (dh::ALLOCATED as i32, dh::FREED as i32, dh::BLOCK_HEADER);
    let first = 2 * dh::BLOCK_HEADER;
    let swap = swap_head("%units");
    format!(
        "define internal void @__anycuda_free(ptr %ctx, ptr %p) {ATTRS} {{
entry:
  %h.f = getelementptr i8, ptr %ctx, i64 {heap_field}
  %h.g = load ptr, ptr %h.f, align 8
  %noheap = icmp eq ptr %h.g, null
  %nop = icmp eq ptr %p, null
  %no = or i1 %noheap, %nop
  br i1 %no, label %done, label %range
range:
  %h = addrspacecast ptr %h.g to ptr addrspace(1)
  %arena = getelementptr i8, ptr addrspace(1) %h, i64 {arena}
  %pi = ptrtoint ptr %p to i64
  %ai = ptrtoint ptr addrspace(1) %arena to i64
  %off = sub i64 %pi, %ai
  %used = load atomic i64, ptr addrspace(1) %h syncscope(\"agent\") monotonic, align 8
  %lo = icmp uge i64 %off, {first}
  %hi = icmp ult i64 %off, %used
  %rem = and i64 %off, 15
  %aligned = icmp eq i64 %rem, 0
  %in1 = and i1 %lo, %hi
  %in = and i1 %in1, %aligned
  br i1 %in, label %mark, label %done
mark:
  %boff = sub i64 %off, {header}
  %b = getelementptr i8, ptr addrspace(1) %arena, i64 %boff
  %st.p = getelementptr i8, ptr addrspace(1) %b, i64 {state}
  %mark.cx = cmpxchg ptr addrspace(1) %st.p, i32 {allocated}, i32 {freed} syncscope(\"agent\") monotonic monotonic, align 4
  %marked = extractvalue {{ i32, i1 }} %mark.cx, 1
  br i1 %marked, label %sized, label %done
sized:
  %class = load i32, ptr addrspace(1) %b, align 16
  %known = icmp ult i32 %class, {classes}
  br i1 %known, label %list, label %done
list:
  %class64 = zext i32 %class to i64
  %head.o0 = shl i64 %class64, 3
  %head.o = add i64 %head.o0, {heads}
  %head.p = getelementptr i8, ptr addrspace(1) %h, i64 %head.o
  %units = lshr i64 %boff, 4
  %next.p = getelementptr i8, ptr addrspace(1) %b, i64 {next}
  br label %push
push:
  %head = load atomic i64, ptr addrspace(1) %head.p syncscope(\"agent\") monotonic, align 8
  store atomic i64 %head, ptr addrspace(1) %next.p syncscope(\"agent\") monotonic, align 8
{swap}  br i1 %ok, label %done, label %push
done:
  ret void
}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every runtime function the lowering may call on AMDGPU is defined
    /// here or refused by name: those left are the CPU backend's own
    /// (`exit` becomes a flag on AMDGPU; the memory checker's functions
    /// exist only in the checked mode of the CPU backend).
    #[test]
    fn every_runtime_function_is_defined_or_refused() {
        let cpu_only = [
            "__anycuda_exit",
            "__anycuda_memcheck",
            "__anycuda_memcheck_warp",
            "__anycuda_shadow",
            "__anycuda_shadow_warp",
            "__anycuda_race_sync",
        ];
        let unaccounted: Vec<&str> = crate::cpu_abi::runtime::ALL
            .iter()
            .map(|f| f.name)
            .filter(|n| !DEFINED.contains(n) && !MISSING.contains(n) && !cpu_only.contains(n))
            .collect();
        assert!(unaccounted.is_empty(), "neither defined nor refused on AMDGPU: {unaccounted:?}");
        let mut decls = BTreeMap::new();
        decls.insert("__anycuda_sured".to_string(), String::new());
        let e = runtime_library(&Arch::parse("gfx1100").expect("arch"), &decls).expect_err("refused");
        assert!(e.to_string().contains("`sured` is not supported on AMDGPU"), "{e}");
    }
}

#[cfg(test)]
mod lane_tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::execution_engine::ExecutionEngine;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::OptimizationLevel;
    use std::cell::RefCell;

    #[derive(Default)]
    struct Tape {
        lane: u32,
        ballots: Vec<u32>,
        next_ballot: usize,
        /// Values of all 32 lanes, one table per source operand read by
        /// `from_lane`, used in turn.
        tables: Vec<[u32; 32]>,
        next_table: usize,
    }

    thread_local! {
        static TAPE: RefCell<Tape> = RefCell::new(Tape::default());
    }

    extern "C" fn stub_lane() -> u32 {
        TAPE.with(|t| t.borrow().lane)
    }

    extern "C" fn stub_ballot(_p: u8) -> u32 {
        TAPE.with(|t| {
            let mut t = t.borrow_mut();
            let b = t.ballots[t.next_ballot % t.ballots.len()];
            t.next_ballot += 1;
            b
        })
    }

    extern "C" fn stub_from_lane(k: u32, _v: u32) -> u32 {
        TAPE.with(|t| {
            let mut t = t.borrow_mut();
            let v = t.tables[t.next_table % t.tables.len()][(k & 31) as usize];
            t.next_table += 1;
            v
        })
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 16) as u32
        }
    }

    fn lanes(mask: u32) -> impl Iterator<Item = u32> {
        (0..32).filter(move |l| mask & (1 << l) != 0)
    }

    /// PTX `shfl.sync` source lane and range test.
    fn shfl_source(lane: u32, mode: u32, b: u32, c: u32) -> (u32, bool) {
        let (bval, cval, seg) = (b & 31, c & 31, (c >> 8) & 31);
        let max = (lane & seg) | (cval & !seg);
        let min = lane & seg;
        let (j, ok) = match mode {
            shfl::UP => (lane as i32 - bval as i32, lane as i32 - bval as i32 >= max as i32),
            shfl::DOWN => ((lane + bval) as i32, lane + bval <= max),
            shfl::BFLY => ((lane ^ bval) as i32, lane ^ bval <= max),
            _ => ((min | (bval & !seg)) as i32, (min | (bval & !seg)) <= max),
        };
        if ok {
            (j as u32, true)
        } else {
            (lane, false)
        }
    }

    fn engine<'c>(context: &'c Context, text: &str) -> ExecutionEngine<'c> {
        crate::targets::host::init().expect("native target");
        let ir = format!(
            "declare i32 @__anycuda_amd.lane()
declare i32 @__anycuda_amd.ballot(i1)
declare i32 @__anycuda_amd.from_lane(i32, i32)
declare i32 @llvm.umin.i32(i32, i32)
declare i32 @llvm.umax.i32(i32, i32)
declare i32 @llvm.smin.i32(i32, i32)
declare i32 @llvm.smax.i32(i32, i32)
declare double @llvm.fabs.f64(double)
declare double @llvm.rint.f64(double)
declare double @llvm.fma.f64(double, double, double)
declare double @llvm.ldexp.f64.i32(double, i32)
declare double @llvm.copysign.f64(double, double)
{text}"
        );
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "runtime");
        let module = context.create_module_from_ir(buf).expect("parses");
        module.verify().expect("verifies");
        let ee = module.create_jit_execution_engine(OptimizationLevel::Default).expect("jit");
        for (name, addr) in [
            ("__anycuda_amd.lane", stub_lane as *const () as usize),
            ("__anycuda_amd.ballot", stub_ballot as *const () as usize),
            ("__anycuda_amd.from_lane", stub_from_lane as *const () as usize),
        ] {
            let f = module.get_function(name).expect("stub declaration");
            ee.add_global_mapping(&f, addr);
        }
        ee
    }

    fn run_lane(lane: u32, ballots: Vec<u32>, tables: Vec<[u32; 32]>) {
        TAPE.with(|t| *t.borrow_mut() = Tape { lane, ballots, tables, ..Tape::default() });
    }

    #[test]
    fn warp_collectives_follow_the_ptx_semantics() {
        let context = Context::create();
        let text = [shfl(), vote(), match_sync(), redux(), activemask()].concat();
        let ee = engine(&context, &text);
        type Shfl = unsafe extern "C" fn(*mut u8, u32, u32, u32, u32, u32, u32, u32) -> u64;
        type Vote = unsafe extern "C" fn(*mut u8, u32, u32, u32, u32, u32) -> u32;
        type Match = unsafe extern "C" fn(*mut u8, u32, u32, u64, u32, u32) -> u64;
        type Active = unsafe extern "C" fn(*mut u8, u32, u32) -> u32;
        // SAFETY: the signatures are those of cpu_abi::runtime.
        let (f_shfl, f_vote, f_match, f_redux, f_active) = unsafe {
            (
                ee.get_function::<Shfl>("__anycuda_shfl").expect("shfl"),
                ee.get_function::<Vote>("__anycuda_vote").expect("vote"),
                ee.get_function::<Match>("__anycuda_match").expect("match"),
                ee.get_function::<Vote>("__anycuda_redux").expect("redux"),
                ee.get_function::<Active>("__anycuda_activemask").expect("activemask"),
            )
        };
        let null = std::ptr::null_mut();
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let mut failures = Vec::new();
        for round in 0..400 {
            let active = match round % 4 {
                0 => u32::MAX,
                1 => rng.next() | 1,
                2 => 0x0000_ffff,
                _ => rng.next() & rng.next() | (1 << (round % 32)),
            };
            let mask = if round % 3 == 0 { u32::MAX } else { rng.next() | active };
            let values: [u32; 32] = std::array::from_fn(|_| if round % 2 == 0 { rng.next() % 4 } else { rng.next() });
            let high: [u32; 32] = std::array::from_fn(|l| if round % 5 == 0 { l as u32 % 2 } else { 0 });
            let preds: [u32; 32] = std::array::from_fn(|_| rng.next() % 2);
            let mode = round % 4;
            let b = rng.next() % 40;
            let c = match round % 3 {
                0 => 0x1f,
                1 => ((32 - (1 << (rng.next() % 6))) << 8) | if mode == shfl::UP { 0 } else { 0x1f },
                _ => rng.next() & 0x1f1f,
            };
            let ballot = lanes(active).filter(|&l| preds[l as usize] != 0).fold(0, |a, l| a | 1 << l);
            for lane in lanes(active) {
                let i = lane as usize;
                // shfl
                run_lane(lane, vec![active], vec![values]);
                // SAFETY: ctx is never read.
                let got = unsafe { f_shfl.call(null, lane, mode, values[i], b, c, mask, 0) };
                let (src, ok) = shfl_source(lane, mode, b, c);
                let v = if active & (1 << src) != 0 { values[src as usize] } else { values[i] };
                let want = u64::from(v) | (u64::from(ok) << 32);
                if got != want {
                    failures.push(format!("shfl mode {mode} b {b} c {c:#x} lane {lane} active {active:#x}: {got:#x} != {want:#x}"));
                }
                // vote, every mode
                let members = active & mask;
                let bal = ballot & members;
                for vmode in 0..4 {
                    run_lane(lane, vec![active, ballot], vec![]);
                    // SAFETY: as above.
                    let got = unsafe { f_vote.call(null, lane, vmode, preds[i], mask, 0) };
                    let want = match vmode {
                        vote::ALL => u32::from(bal == members),
                        vote::ANY => u32::from(bal != 0),
                        vote::UNI => u32::from(bal == 0 || bal == members),
                        _ => bal,
                    };
                    if got != want {
                        failures.push(format!("vote {vmode} lane {lane}: {got:#x} != {want:#x}"));
                    }
                }
                // match.any / match.all over 64-bit values
                let value = |l: usize| u64::from(values[l]) | (u64::from(high[l]) << 32);
                let same = lanes(members).filter(|&o| value(o as usize) == value(i)).fold(0u32, |a, o| a | 1 << o);
                for mmode in [matching::ANY, matching::ALL] {
                    run_lane(lane, vec![active], vec![values, high]);
                    // SAFETY: as above.
                    let got = unsafe { f_match.call(null, lane, mmode, value(i), mask, 0) };
                    let want = if mmode == matching::ALL {
                        if same == members {
                            u64::from(members) | 1 << 32
                        } else {
                            0
                        }
                    } else {
                        u64::from(same)
                    };
                    if got != want {
                        failures.push(format!("match {mmode} lane {lane} members {members:#x}: {got:#x} != {want:#x}"));
                    }
                }
                // redux, every operation
                for op in 0..8 {
                    run_lane(lane, vec![active], vec![values]);
                    // SAFETY: as above.
                    let got = unsafe { f_redux.call(null, lane, op, values[i], mask, 0) };
                    let vs = lanes(members).map(|l| values[l as usize]);
                    let want = match op {
                        redux::ADD => vs.fold(0u32, u32::wrapping_add),
                        redux::MIN_U32 => vs.min().unwrap_or(u32::MAX),
                        redux::MAX_U32 => vs.max().unwrap_or(0),
                        redux::MIN_S32 => vs.map(|v| v as i32).min().unwrap_or(i32::MAX) as u32,
                        redux::MAX_S32 => vs.map(|v| v as i32).max().unwrap_or(i32::MIN) as u32,
                        redux::AND => vs.fold(u32::MAX, |a, v| a & v),
                        redux::OR => vs.fold(0, |a, v| a | v),
                        _ => vs.fold(0, |a, v| a ^ v),
                    };
                    if got != want {
                        failures.push(format!("redux {op} lane {lane} members {members:#x}: {got:#x} != {want:#x}"));
                    }
                }
                run_lane(lane, vec![active], vec![]);
                // SAFETY: as above.
                let got = unsafe { f_active.call(null, lane, 0) };
                if got != active {
                    failures.push(format!("activemask lane {lane}: {got:#x} != {active:#x}"));
                }
            }
        }
        assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(20)].join("\n"));
    }

    #[test]
    fn tanh_is_accurate_without_libm() {
        let context = Context::create();
        let text = [tanh(), tanhf(), tanh_f64()].concat();
        let ee = engine(&context, &text);
        // SAFETY: double -> double and float -> float.
        let (f64_tanh, f32_tanh) = unsafe {
            (
                ee.get_function::<unsafe extern "C" fn(f64) -> f64>("tanh").expect("tanh"),
                ee.get_function::<unsafe extern "C" fn(f32) -> f32>("tanhf").expect("tanhf"),
            )
        };
        let mut rng = Rng(42);
        let mut worst = (0u64, 0f64);
        let mut inputs: Vec<f64> =
            vec![0.0, -0.0, 1e-300, 5e-324, 0.125, 0.3466, 0.35, 0.55, 1.0, 2.5, 19.0, 22.0, 22.5, 40.0, 1e300, f64::INFINITY, f64::NAN];
        for _ in 0..20000 {
            let e = (rng.next() % 64) as i32 - 50;
            let m = 1.0 + f64::from(rng.next()) / f64::from(u32::MAX);
            inputs.push(m * 2f64.powi(e));
        }
        let neg: Vec<f64> = inputs.iter().map(|x| -x).collect();
        inputs.extend(neg);
        for &x in &inputs {
            // SAFETY: a pure function.
            let got = unsafe { f64_tanh.call(x) };
            let want = x.tanh();
            if want.is_nan() {
                assert!(got.is_nan(), "tanh({x}) = {got}");
                continue;
            }
            assert_eq!(got.is_sign_negative(), want.is_sign_negative(), "sign of tanh({x})");
            let ulps = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
            if ulps > worst.0 {
                worst = (ulps, x);
            }
            let xf = x as f32;
            // SAFETY: a pure function.
            let gf = unsafe { f32_tanh.call(xf) };
            let wf = (xf as f64).tanh() as f32;
            let ulps32 = (gf.to_bits() as i64 - wf.to_bits() as i64).unsigned_abs();
            assert!(ulps32 <= 1 || (gf.is_nan() && wf.is_nan()), "tanhf({xf:e}) = {gf:e}, expected {wf:e}");
        }
        assert!(worst.0 <= 4, "tanh is {} ulp off at {:e}", worst.0, worst.1);
    }
}
