//! Warp mode: a kernel lowered so that one call runs the 32 lanes of a warp
//! together. Every PTX register is a vector with one element per lane; an
//! instruction executes for the lanes of the current mask (`<32 x i1>`),
//! and only those lanes' registers change.
//!
//! Control flow. The kernel's PTX basic blocks are numbered in program
//! order. Each lane has the number of the block it executes next (`next`);
//! `live` holds the lanes that have not exited. A block runs for the lanes
//! whose `next` is its number, and blocks run lowest number first, so lanes
//! that diverged meet again at the first block they all reach (where the
//! hardware reconverges them too). Branches that every executing lane takes
//! the same way jump directly, so uniform control flow stays ordinary LLVM
//! control flow (loops remain loops). Every live lane outside the current
//! mask waits for a later block than the current one, so a divergent
//! branch whose lanes partly fall through goes on at the next block, and
//! a backward one whose lanes partly go round at the loop's block; the
//! other divergent ones go through a dispatch block that picks the lowest
//! pending block.
//!
//! Warp collectives become vector operations on the registers. Barriers
//! are runtime calls made once per warp; the executor schedules warps
//! (the `thread` argument is the warp index).
//!
//! Kernels that call functions or use instructions warp mode does not
//! lower run in thread mode instead (`warp_capable`).

use crate::cpu_abi::offsets;
use crate::ir::{self, Ty, V};
use crate::layout::ItemId;
use crate::lower::{op_ty, FnLower, Res};
use ptx::ast::*;
use std::collections::HashMap;
use std::fmt::Write;

/// Lanes of a warp.
pub const W: u32 = 32;

/// The shared helper behind a gather (or, `scatter`, a scatter) of
/// `<W x t>` at `align` where the target has no such instruction: lane by
/// lane in lane order, each lane loading from (storing to) its own
/// address or, when it does not execute, a slot of the helper's own, so
/// that no lane branches. LLVM expands the masked intrinsics into a test
/// and branch per lane, which mispredicts on masks that vary from warp to
/// warp (bitonic's exchanges, taken by a data-dependent half of the lanes:
/// a quarter of its samples were in those branches).
fn lane_by_lane_helper(name: &str, t: &str, align: u32, scatter: bool) -> String {
    let slot_align = align.max(8);
    let mut f = if scatter {
        format!("define internal void @{name}(<{W} x {t}> %v, <{W} x ptr> %p, <{W} x i1> %m) noinline nounwind {{\n")
    } else {
        format!("define internal <{W} x {t}> @{name}(<{W} x ptr> %p, <{W} x i1> %m) noinline nounwind {{\n")
    };
    let _ = writeln!(f, "  %idle = alloca {t}, align {slot_align}");
    let _ = writeln!(f, "  %idle.1 = insertelement <{W} x ptr> poison, ptr %idle, i32 0");
    let _ = writeln!(f, "  %idle.w = shufflevector <{W} x ptr> %idle.1, <{W} x ptr> poison, <{W} x i32> zeroinitializer");
    let _ = writeln!(f, "  %q = select <{W} x i1> %m, <{W} x ptr> %p, <{W} x ptr> %idle.w");
    let mut acc = "poison".to_string();
    for i in 0..W {
        let _ = writeln!(f, "  %q{i} = extractelement <{W} x ptr> %q, i32 {i}");
        if scatter {
            let _ = writeln!(f, "  %x{i} = extractelement <{W} x {t}> %v, i32 {i}");
            let _ = writeln!(f, "  store {t} %x{i}, ptr %q{i}, align {align}");
        } else {
            let _ = writeln!(f, "  %x{i} = load {t}, ptr %q{i}, align {align}");
            let _ = writeln!(f, "  %v{i} = insertelement <{W} x {t}> {acc}, {t} %x{i}, i32 {i}");
            acc = format!("%v{i}");
        }
    }
    if scatter {
        f.push_str("  ret void\n}\n");
    } else {
        let _ = writeln!(f, "  ret <{W} x {t}> {acc}\n}}");
    }
    f
}

/// IR text that reads a value of LLVM type `ty` stored in the frame at
/// `q` into `dst` (`  dst = ...` lines). A lane mask (`<N x i1>`, stored as
/// the N bits of an integer) is read as that integer broadcast to every
/// lane and tested against the lane's bit: x86 without mask registers
/// (AVX2) turned a `<32 x i1>` load whose value lives on past its block
/// into one bit extraction and one byte insertion per lane (stencil's
/// warp code: 960 of its 9,052 instructions; the broadcast and test is
/// eight instructions there, and two tests on AVX-512).
pub(crate) fn frame_load_text(dst: &str, ty: &str, q: &str) -> String {
    let lanes = ty.strip_prefix('<').and_then(|t| t.strip_suffix(" x i1>")).and_then(|n| n.parse::<u32>().ok());
    let Some(n) = lanes.filter(|&n| n > 1 && n <= 64) else {
        return format!("  {dst} = load {ty}, ptr {q}, align 64\n");
    };
    let it = if n > 32 { "i64" } else { "i32" };
    // Lane i's bit, as the signed constant of the integer's width.
    let bit = |i: u32| if n > 32 { (1u64 << i) as i64 } else { i64::from((1u32 << i) as i32) };
    let bits: Vec<String> = (0..n).map(|i| format!("{it} {}", bit(i))).collect();
    format!(
        "  {dst}.w = load {it}, ptr {q}, align 64\n  {dst}.b = insertelement <{n} x {it}> poison, {it} {dst}.w, i32 0\n  {dst}.s = shufflevector <{n} x {it}> {dst}.b, <{n} x {it}> poison, <{n} x i32> zeroinitializer\n  {dst}.a = and <{n} x {it}> {dst}.s, <{}>\n  {dst} = icmp ne <{n} x {it}> {dst}.a, zeroinitializer\n",
        bits.join(", ")
    )
}

/// The per-function state of warp mode.
#[derive(Clone, Debug)]
pub struct WarpState {
    /// The executing lanes (`<32 x i1>` value).
    pub mask: V,
    /// The number of the block being lowered.
    pub block: u32,
    /// The block number each statement index starts, if it starts one.
    pub starts: HashMap<usize, u32>,
    pub label_block: HashMap<LabelId, u32>,
    pub blocks: u32,
    /// Registers whose every write is an unguarded `mov` of the same
    /// immediate: their value is known when the kernel is compiled.
    pub consts: HashMap<RegId, i64>,
    /// How the lanes' values of an address register lie, per access size
    /// (see `FnLower::address_shape`), computed once per block and register
    /// value: the unrolled loops of tiled kernels load many times from one
    /// register plus constant offsets.
    shapes: HashMap<(RegId, u32), Layout>,
    /// Registers no thread ever reads before writing them in the same
    /// block (indexed by register).
    pub block_local: Vec<bool>,
    /// The current instruction has a guard: its writes keep the values of
    /// the executing lanes whose predicate is false, whatever the register.
    pub guarded: bool,
    /// Blocks inside a loop (between a backward branch and its target).
    in_loop: Vec<bool>,
    /// Prefetch slots allocated so far (`stride_prefetch`).
    prefetch_slots: u32,
    /// Where the address shape of a frame-resident register lives, per
    /// access size: computed where the register is written, read where it
    /// addresses memory (`FnLower::address_shape`).
    resident_shapes: HashMap<(RegId, u32), u32>,
    /// Plain-barrier sites that branch to the chaining tail
    /// (`cpu_abi::WarpFn`), by the label they branch from.
    chain_sites: Vec<String>,
    /// Suspension sites and the frame layout.
    frame: Frame,
    /// The code that restores a suspended warp, per resume point.
    resumes: String,
    resume_points: u32,
    /// The current instruction suspended the warp (the mask was recomputed
    /// after it).
    suspended: bool,
    /// Where the affine bit (`crate::affine`) of each register with a lane
    /// stride lives.
    affine: Vec<Option<AffineBit>>,
    /// The affine bit the current instruction gives its destination, from
    /// its operands before it executes (`FnLower::affine_prepare`).
    pending_affine: Option<(RegId, V)>,
    /// Per block: the masks lanes jump to it with, and the labels they jump
    /// from (`FnLower::warp_branch_back`).
    incoming: HashMap<u32, Vec<(String, String)>>,
    /// Address registers whose affine bits the code being lowered runs
    /// under (`FnLower::lower_versioned`): their shapes are constants.
    assumed: Vec<RegId>,
    /// The warp's recent whole-warp stores, for the loads that read them
    /// back (`crate::forwarding`); like `shapes`, valid within a block.
    pub(crate) stored_runs: Vec<crate::forwarding::StoredRun>,
}

/// Where `begin_block` leaves room for the incoming masks of block `k`
/// (a control character: nothing else in the IR has one).
fn incoming_marker(k: u32) -> String {
    format!("\u{1}in{k}\u{1}")
}

/// `text` with each block's incoming-mask marker replaced by its phi
/// edges (none for most blocks), in one pass.
fn fill_incoming(text: &str, incoming: &HashMap<u32, Vec<(String, String)>>) -> String {
    let mut out = String::with_capacity(text.len() + 64 * incoming.len());
    let mut rest = text;
    while let Some(at) = rest.find("\u{1}in") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match (after[..digits].parse::<u32>(), after.as_bytes().get(digits)) {
            (Ok(k), Some(1)) => {
                for (m, l) in incoming.get(&k).map(Vec::as_slice).unwrap_or_default() {
                    let _ = write!(out, ", [{m}, %{l}]");
                }
                rest = &after[digits + 1..];
            }
            _ => {
                out.push_str("\u{1}in");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where a register's affine bit lives: on the stack (saved and restored
/// at suspensions like the register) or, for a frame-resident register,
/// in the frame.
#[derive(Clone, Debug)]
enum AffineBit {
    Stack(String),
    Frame(u32),
}

/// How the lanes of an address register lie (`FnLower::address_layout`).
#[derive(Clone, Debug)]
struct Layout {
    /// [`SHAPE_SCATTERED`], [`SHAPE_HALVES_CONSECUTIVE`] or
    /// [`SHAPE_HALVES_UNIFORM`] (a scalar i32).
    shape: V,
    /// The register is warp-uniform (`crate::uniform`): one address for
    /// the whole warp, known when compiling.
    warp_uniform: bool,
    /// When the register has a lane stride: how far lane 16's address lies
    /// from lane 0's (an i64): 16 strides while its affine bit holds in a
    /// warp affine as a whole (lane 16 itself may have exited with an
    /// older value), else what the lanes hold.
    lane16: Option<V>,
}

/// The operands of a shaped access, as values of the function that emits
/// its paths: the lanes' addresses, the executing lanes, the shape (an
/// i32 scalar), and the addresses of lanes 0 and 16.
struct Shaped {
    ptrs: V,
    mask: V,
    shape: V,
    p0: V,
    p16: V,
}

/// Returns `values` from a helper whose return type is `ret` (the vector
/// itself for one value, a literal structure of them otherwise).
fn shaped_return(out: &mut ir::Body, ret: &str, values: &[V]) {
    match values {
        [v] => out.terminate(format_args!("ret {v}")),
        _ => {
            let mut agg = "poison".to_string();
            for (k, v) in values.iter().enumerate() {
                let x = out.fresh("agg");
                out.op(format_args!("{x} = insertvalue {ret} {agg}, {v}, {k}"));
                agg = x;
            }
            out.terminate(format_args!("ret {ret} {agg}"));
        }
    }
}

impl WarpState {
    /// Whether the block being lowered is convergent ([`Frame::divergent`]):
    /// every lane that reads registers again runs it.
    pub fn block_convergent(&self) -> bool {
        !self.frame.divergent.get(self.block as usize).copied().unwrap_or(true)
    }

    /// The frame slot a register lives in for the whole kernel, if it does:
    /// registers nothing writes once the warp can have suspended and that
    /// some suspension keeps are written to and read from the frame, so
    /// suspending saves and resuming restores nothing for them (loops read
    /// them in place instead of holding them in vector registers); in the
    /// fast tier, also those of [`Frame::resident_when_fast`].
    pub fn resident_slot(&self, r: RegId) -> Option<u32> {
        let at = |v: &Vec<bool>| v.get(r as usize).copied().unwrap_or(false);
        if !(at(&self.frame.stable) || at(&self.frame.resident_when_fast)) {
            return None;
        }
        self.frame.slots.get(&r).copied()
    }

    /// The register changed: what was known of its lanes is not any more.
    pub fn forget_shapes(&mut self, r: RegId) {
        if !self.shapes.is_empty() {
            self.shapes.retain(|&(reg, _), _| reg != r);
        }
        self.stored_runs.retain(|run| run.reg() != r);
    }
}

/// An `ld` or `st` as the warp lowering sees it (`FnLower::memory_access`).
struct MemoryAccess {
    signed: bool,
    ety: Ty,
    size: u32,
    ordered: bool,
    ptrs: V,
    uniform: bool,
    items: Vec<Operand>,
}

/// [`FnLower::address_shape`] codes.
const SHAPE_SCATTERED: i32 = 0;
/// Each half warp (lanes 0-15, 16-31) reads consecutive elements; a whole
/// warp reading consecutive elements is the common case of it.
pub(crate) const SHAPE_HALVES_CONSECUTIVE: i32 = 1;
/// Each half warp reads one address (a row of a 16-wide tile).
const SHAPE_HALVES_UNIFORM: i32 = 2;

/// Where a warp-mode kernel can suspend (see `cpu_abi::WarpFn`) and what
/// it saves there.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// Statement index of each suspension site: the registers saved there.
    pub sites: HashMap<usize, Vec<RegId>>,
    /// Frame offset of every register saved at some site.
    pub slots: HashMap<RegId, u32>,
    /// Registers some suspension site saves and nothing writes once a warp
    /// can have suspended: they live in the frame
    /// (`WarpState::resident_slot`; indexed by register).
    pub stable: Vec<bool>,
    /// Registers that live in the frame in the fast tier although no
    /// suspension needs them there: every register some block reads
    /// before writing it (indexed by register; none in the optimised
    /// tier, whose frame is the smaller for it: each compiled unit states
    /// its frame's size, `KernelInfo::frame_bytes`, and a launch runs one
    /// unit's code throughout).
    ///
    /// A register held in LLVM values across blocks gets a phi at every
    /// block the warp's dispatcher may enter with it live (`dsel`: every
    /// block lanes wait at), since LLVM sees paths from the dispatcher that
    /// skip its writes. Those phis were most of the IR of llama.cpp's
    /// warp-mode kernels (`soft_max_f32`: 2,403 of 4,650 lines, 997 of
    /// them on 32-lane vectors), and LLVM's instruction selection and
    /// register allocation work through each: that kernel compiled in 150
    /// ms, 101 ms with its registers in the frame (a store where written,
    /// a load in each block that reads them). The optimised tier keeps
    /// them in LLVM values: there the loads cost run time (the suite's
    /// `scan_shfl` 7.2 -> 9.1 ms, `histogram` 16 -> 18 ms) and compile
    /// time matters less.
    pub resident_when_fast: Vec<bool>,
    /// Frame offset of each `.local` variable (one copy per lane, lane
    /// after lane): local memory must outlive a suspension.
    pub locals: HashMap<VarId, u32>,
    /// The lane stride of each register, where every write keeps one
    /// (`affine::strides`; indexed by register).
    pub strides: Vec<Option<i64>>,
    /// Registers with the same value in every lane (`uniform::convergence`;
    /// indexed by register): kept as one scalar.
    pub uniform: Vec<bool>,
    /// Per block: whether some lanes of a warp may run it without the
    /// others (`uniform::Convergence::divergent`). In a convergent block
    /// an unguarded write needs no select of the executing lanes: every
    /// lane that reads registers again executes it.
    pub divergent: Vec<bool>,
    /// Frame offset of the affine bit (`affine`) of every register with a
    /// stride and a slot.
    pub affine_bits: HashMap<RegId, u32>,
    /// Shared atomics (by statement) that load their lanes' indices
    /// themselves: their address's form and the load
    /// (`shared_index::sinkable_load`) they replace.
    pub sunk: HashMap<usize, (crate::shared_index::ScaledIndex, usize)>,
    /// The whole frame of a warp.
    pub bytes: u32,
}

/// Byte offsets, in a warp's frame, of the lanes' `live` and `next` state
/// (after the header fields of `cpu_abi::warp_frame`).
const FRAME_LIVE: u32 = 64;
const FRAME_NEXT: u32 = 128;
/// The lanes' `%tid.x`, `.y`, `.z`, computed at the warp's first call.
const FRAME_IDS: u32 = crate::cpu_abi::warp_frame::HEADER_BYTES;
/// Saved registers start here.
const FRAME_REGISTERS: u32 = FRAME_IDS + 3 * 128;

/// The suspension sites of a warp-mode kernel: barriers (not
/// `bar.warp.sync`), `nanosleep`, and the backward branches of loops that
/// may spin on memory.
fn suspension_site(a: &crate::layout::Analysis, item: ItemId, b: &Body, i: usize, inst: &Instruction) -> bool {
    match inst.op {
        Opcode::Bar | Opcode::Barrier => !inst.has(b, Flag::Warp),
        Opcode::Nanosleep => true,
        Opcode::Bra => a.facts.get(&item).is_some_and(|f| f.yield_points.contains(&i) || f.turn_points.contains_key(&i)),
        _ => false,
    }
}

/// Bytes a lane loads in a grid-stride loop (`layout::grid_stride_loop`)
/// before the block's other warps take their turn. In
/// `benches/access-order/grid_stride.c` (one 4-byte load per lane and
/// iteration, no cost to a turn), turns every 4, 8, 16, 32 and 64
/// iterations took 0.63, 0.64, 0.69, 0.85 and 0.94 times as long as whole
/// loops one warp after the other. Here a turn costs a return to the
/// backend and a resume, so fewer win: the program suite's `reduce` (four
/// 4-byte loads per iteration of its unrolled loop; median of 30
/// launches, three alternations) took 3.7-4.0 ms without turns, 3.3-3.5
/// ms turning every 32 bytes, 2.6-3.1 ms every 64, 3.0-3.2 ms every 128.
pub(crate) const TURN_BYTES: u32 = 64;

/// The load a shared atomic at statement `i` makes itself
/// (`shared_index`), given the registers `live` after it: an unguarded
/// `atom` or `red` on shared memory whose 32-bit address register is a
/// constant plus a scaled index loaded in the same straight run, where the
/// index, the scaled index and the address are read by nothing after it.
fn sunk_load(
    a: &crate::layout::Analysis,
    item: ItemId,
    f: &Function,
    b: &Body,
    i: usize,
    inst: &Instruction,
    live: &[bool],
) -> Option<(crate::shared_index::ScaledIndex, usize)> {
    if !matches!(inst.op, Opcode::Atom | Opcode::Red) || inst.guard.is_some() {
        return None;
    }
    if !matches!(inst.space(b), Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster)) {
        return None;
    }
    let args = b.args(inst);
    let address = if inst.op == Opcode::Red { args.first()? } else { args.get(1)? };
    let Some((AddrBase::Reg(r), _)) = address.address() else { return None };
    if crate::lower::reg_ty(f.var(b.regs.get(r as usize)?.var).ty) != Ty::I32 {
        return None;
    }
    let s = crate::shared_index::scaled_index(f, b, i, r, &|v| a.local_shared.get(&(item, v)).copied())?;
    let dead = |r: RegId| !live.get(r as usize).copied().unwrap_or(true);
    if !(dead(s.index) && dead(s.scaled) && dead(s.sum)) {
        return None;
    }
    Some((s, crate::shared_index::sinkable_load(b, i, &s)?))
}

/// The basic blocks of `number_blocks` as a graph: the instruction
/// statements of each block in order, and each block's successors (a
/// branch's target, the next block for a guarded branch or a block that
/// does not end in a branch, return or exit). One entry more than
/// `blocks`, for the code after the last block.
pub(crate) struct BlockGraph {
    pub ranges: Vec<Vec<usize>>,
    pub succ: Vec<Vec<usize>>,
}

pub(crate) fn block_graph(b: &Body, starts: &HashMap<usize, u32>, label_block: &HashMap<LabelId, u32>, blocks: u32) -> BlockGraph {
    let n = blocks as usize + 1;
    let mut ranges: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut current = 0usize;
    for (i, s) in b.statements.iter().enumerate() {
        if let Some(&k) = starts.get(&i) {
            current = k as usize;
        }
        if matches!(s, Statement::Instruction(_)) {
            ranges[current].push(i);
        }
    }
    let inst_at = |i: usize| match &b.statements[i] {
        Statement::Instruction(inst) => Some(inst),
        _ => None,
    };
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for k in 0..n.saturating_sub(1) {
        let last = ranges[k].last().and_then(|&i| inst_at(i));
        let fall = k + 1;
        match last {
            Some(inst) if inst.op == Opcode::Bra => {
                if let Some(Operand::Label(l)) = b.args(inst).first() {
                    if let Some(&t) = label_block.get(l) {
                        succ[k].push(t as usize);
                    }
                }
                if inst.guard.is_some() {
                    succ[k].push(fall);
                }
            }
            Some(inst) if matches!(inst.op, Opcode::Ret | Opcode::Exit) && inst.guard.is_none() => {}
            _ => succ[k].push(fall),
        }
    }
    BlockGraph { ranges, succ }
}

/// Which registers each suspension site must save: those a lane at the
/// site may read later, and those live into any block, where lanes that
/// diverged from the warp wait. Per-thread liveness over the blocks of
/// `number_blocks`.
pub fn frame_layout(a: &crate::layout::Analysis, item: ItemId, f: &Function, tier: crate::Tier) -> Frame {
    let Some(b) = &f.body else { return Frame { bytes: FRAME_REGISTERS, ..Frame::default() } };
    let (starts, label_block, blocks) = FnLower::number_blocks(b);
    let nregs = b.regs.len();
    let n = blocks as usize + 1;
    let BlockGraph { ranges, succ } = block_graph(b, &starts, &label_block, blocks);
    let inst_at = |i: usize| match &b.statements[i] {
        Statement::Instruction(inst) => Some(inst),
        _ => None,
    };
    // Upward-exposed uses and kills per block.
    let (mut uses, mut defs) = (Vec::new(), Vec::new());
    let mut ue = vec![vec![false; nregs]; n];
    let mut kill = vec![vec![false; nregs]; n];
    for k in 0..n {
        for &i in &ranges[k] {
            let Some(inst) = inst_at(i) else { continue };
            let kills = b.def_use(inst, &mut uses, &mut defs);
            for &r in &uses {
                if let Some(x) = ue[k].get_mut(r as usize) {
                    if !kill[k][r as usize] {
                        *x = true;
                    }
                }
            }
            if kills {
                for &r in &defs {
                    if let Some(x) = kill[k].get_mut(r as usize) {
                        *x = true;
                    }
                }
            }
        }
    }
    let mut live_in = ue.clone();
    let mut live_out = vec![vec![false; nregs]; n];
    let mut changed = true;
    while changed {
        changed = false;
        for k in (0..n).rev() {
            for &s2 in &succ[k] {
                for r in 0..nregs {
                    if live_in[s2][r] && !live_out[k][r] {
                        live_out[k][r] = true;
                        changed = true;
                    }
                }
            }
            for r in 0..nregs {
                if live_out[k][r] && !kill[k][r] && !live_in[k][r] {
                    live_in[k][r] = true;
                    changed = true;
                }
            }
        }
    }
    let mut pending = vec![false; nregs];
    for li in &live_in {
        for r in 0..nregs {
            pending[r] |= li[r];
        }
    }
    let crate::uniform::Convergence { uniform, divergent } = crate::uniform::convergence(f, b, &starts, &label_block, blocks);
    let mut frame = Frame { uniform, divergent: divergent.clone(), ..Frame::default() };
    let mut saved = vec![false; nregs];
    for k in 0..n {
        let mut live = live_out[k].clone();
        for &i in ranges[k].iter().rev() {
            let Some(inst) = inst_at(i) else { continue };
            if suspension_site(a, item, b, i, inst) {
                // A spinning branch has moved every lane to a block start.
                let at_site = inst.op != Opcode::Bra;
                // An unguarded site in a convergent block: every lane that
                // reads registers again is here (`uniform::Convergence`), so
                // what it reads later is what is live here. Elsewhere lanes
                // may wait at other blocks, with the registers live there.
                // (In llama.cpp's matrix-vector kernel, whose two barriers
                // are convergent, the loops' registers were saved and
                // restored at both: half its time per block.)
                let converged = at_site && inst.guard.is_none() && !divergent.get(k).copied().unwrap_or(true);
                let regs: Vec<RegId> = (0..nregs)
                    .filter(|&r| if converged { live[r] } else { pending[r] || (at_site && live[r]) })
                    .map(|r| r as RegId)
                    .collect();
                for &r in &regs {
                    saved[r as usize] = true;
                }
                frame.sites.insert(i, regs);
            }
            if let Some(sunk) = sunk_load(a, item, f, b, i, inst, &live) {
                frame.sunk.insert(i, sunk);
            }
            let kills = b.def_use(inst, &mut uses, &mut defs);
            if kills {
                for &r in &defs {
                    if let Some(x) = live.get_mut(r as usize) {
                        *x = false;
                    }
                }
            }
            for &r in &uses {
                if let Some(x) = live.get_mut(r as usize) {
                    *x = true;
                }
            }
        }
    }
    // Statements a warp can execute after it suspended once: the rest of
    // each site's block and every block reachable from there.
    let mut after = vec![false; n];
    let mut work: Vec<usize> = Vec::new();
    let mut written_after = vec![false; nregs];
    for k in 0..n {
        for &i in &ranges[k] {
            let Some(inst) = inst_at(i) else { continue };
            if !frame.sites.contains_key(&i) {
                continue;
            }
            for &j in ranges[k].iter().filter(|&&j| j > i) {
                if let Some(inst) = inst_at(j) {
                    b.def_use(inst, &mut uses, &mut defs);
                    for &r in &defs {
                        if let Some(x) = written_after.get_mut(r as usize) {
                            *x = true;
                        }
                    }
                }
            }
            let _ = inst;
            work.extend(succ[k].iter().copied());
        }
    }
    while let Some(k) = work.pop() {
        if std::mem::replace(&mut after[k], true) {
            continue;
        }
        work.extend(succ[k].iter().copied());
        for &i in &ranges[k] {
            if let Some(inst) = inst_at(i) {
                b.def_use(inst, &mut uses, &mut defs);
                for &r in &defs {
                    if let Some(x) = written_after.get_mut(r as usize) {
                        *x = true;
                    }
                }
            }
        }
    }
    // Stable registers some site saves live in the frame; in the fast
    // tier, every register live into some block too (each gets a slot).
    frame.stable = (0..nregs).map(|r| saved[r] && !written_after[r]).collect();
    frame.resident_when_fast = if tier == crate::Tier::Fast { pending.clone() } else { vec![false; nregs] };
    for r in 0..nregs {
        saved[r] |= frame.resident_when_fast[r];
    }
    for (r, u) in frame.uniform.iter_mut().enumerate() {
        // (One scalar of at most 8 bytes: `b128` registers stay vectors.)
        *u &= crate::lower::reg_ty(f.var(b.regs[r].var).ty).bits() <= 64;
    }
    let mut offset = FRAME_REGISTERS;
    for r in 0..nregs {
        if saved[r] {
            frame.slots.insert(r as RegId, offset);
            let ty = crate::lower::reg_ty(f.var(b.regs[r].var).ty);
            let bytes = if frame.uniform[r] {
                8
            } else if ty == Ty::I1 {
                W / 8
            } else {
                W * ty.bits() / 8
            };
            offset += bytes.div_ceil(64) * 64;
        }
    }
    frame.strides = crate::affine::strides(f, b, &frame.uniform);
    for r in 0..nregs {
        if saved[r] && frame.strides[r].is_some() && !frame.uniform[r] {
            frame.affine_bits.insert(r as RegId, offset);
            offset += 1;
        }
    }
    offset = offset.div_ceil(64) * 64;
    for (vid, d) in f.vars.iter().enumerate() {
        if d.space != StateSpace::Local || f.params.contains(&(vid as VarId)) {
            continue;
        }
        let Some(size) = d.size() else { continue };
        let align = d.alignment().max(64) as u32;
        offset = offset.div_ceil(align) * align;
        frame.locals.insert(vid as VarId, offset);
        let bytes = size.max(1).saturating_mul(u64::from(W));
        offset = offset.saturating_add(u32::try_from(bytes).unwrap_or(u32::MAX).div_ceil(64) * 64);
    }
    frame.bytes = offset;
    frame
}

/// Registers that no thread reads before it has written them in the same
/// block (`starts` as from `number_blocks`). No lane ever needs such a
/// register's value from an earlier block, so a lane that does not execute
/// a write to it loses nothing if the write changes its copy too: its
/// unguarded writes need no mask, and the old value is not kept alive (in
/// an unrolled loop body, dozens of vector registers).
fn block_local_registers(b: &Body, starts: &HashMap<usize, u32>) -> Vec<bool> {
    let mut local = vec![true; b.regs.len()];
    let mut written = vec![false; b.regs.len()];
    let mut touched: Vec<RegId> = Vec::new();
    let mut regs = Vec::new();
    for (i, s) in b.statements.iter().enumerate() {
        if starts.contains_key(&i) {
            for r in touched.drain(..) {
                written[r as usize] = false;
            }
        }
        let Statement::Instruction(inst) = s else { continue };
        regs.clear();
        b.uses(inst, &mut regs);
        for &r in &regs {
            if !written.get(r as usize).copied().unwrap_or(true) {
                local[r as usize] = false;
            }
        }
        // A guarded write leaves the register as it was in some threads.
        if inst.guard.is_none() {
            regs.clear();
            b.defs(inst, &mut regs);
            for &r in &regs {
                if let Some(w) = written.get_mut(r as usize) {
                    *w = true;
                    touched.push(r);
                }
            }
        }
    }
    local
}

/// Registers with a value known at compile time (see [`WarpState::consts`]).
/// nvcc passes the lane offsets and clamps of `shfl` in such registers.
/// The blocks (numbered as `FnLower::number_blocks` does) that lie inside
/// a loop: from the target of a backward branch to the branch.
fn loop_blocks(b: &Body, starts: &HashMap<usize, u32>, label_block: &HashMap<LabelId, u32>, blocks: u32) -> Vec<bool> {
    let mut in_loop = vec![false; blocks as usize + 1];
    let mut block = 0u32;
    for (i, s) in b.statements.iter().enumerate() {
        if let Some(&k) = starts.get(&i) {
            block = k;
        }
        let Statement::Instruction(inst) = s else { continue };
        if inst.op != Opcode::Bra {
            continue;
        }
        if let Some(Operand::Label(l)) = b.args(inst).first().copied() {
            if let Some(&target) = label_block.get(&l) {
                if target <= block {
                    for k in target..=block {
                        in_loop[k as usize] = true;
                    }
                }
            }
        }
    }
    in_loop
}

/// The integer element an `ld`/`st` of type `t` moves per lane and
/// component (predicates as bytes).
fn access_element(t: Type) -> Ty {
    if t == Type::Pred {
        Ty::I8
    } else {
        Ty::int(t.bits())
    }
}

/// Frame header bytes free for the shapes of frame-resident address
/// registers (between the header fields and the lanes' state).
const FRAME_SHAPES: [std::ops::Range<u32>; 2] = [20..64, 68..128];

/// Header slots for the address shapes of frame-resident registers: one
/// per register and access size its loads and stores use, while slots last.
fn resident_shape_slots(b: &Body, w: &WarpState) -> HashMap<(RegId, u32), u32> {
    let mut free = FRAME_SHAPES.iter().flat_map(|r| r.clone().step_by(4));
    let mut slots = HashMap::new();
    for s in &b.statements {
        let Statement::Instruction(inst) = s else { continue };
        let (address, data) = match inst.op {
            Opcode::Ld | Opcode::Ldu => (1, 0),
            Opcode::St => (0, 1),
            _ => continue,
        };
        let args = b.args(inst);
        let (Some(a), Some(d), Some(t)) = (args.get(address), args.get(data), inst.ty(b)) else { continue };
        let Some((AddrBase::Reg(r), _)) = a.address() else { continue };
        if w.resident_slot(r).is_none() {
            continue;
        }
        let n = match d {
            Operand::Vector(l) => b.list(*l).len() as u32,
            _ => 1,
        };
        let key = (r, access_element(t).bits() / 8 * n);
        if slots.contains_key(&key) {
            continue;
        }
        let Some(offset) = free.next() else { break };
        slots.insert(key, offset);
    }
    slots
}

/// Registers every write of which is an unguarded `mov` of one immediate:
/// their value is known when the kernel is compiled.
pub(crate) fn constant_registers(b: &Body) -> HashMap<RegId, i64> {
    let mut value: HashMap<RegId, Option<i64>> = HashMap::new();
    for s in &b.statements {
        let Statement::Instruction(i) = s else { continue };
        let args = b.args(i);
        let Some(&dest) = args.first() else { continue };
        let imm = match (i.op, i.guard, dest, args.get(1)) {
            (Opcode::Mov, None, Operand::Reg(_), Some(Operand::Imm(v))) if args.len() == 2 => Some(*v),
            _ => None,
        };
        let mut written = Vec::new();
        b.defs(i, &mut written);
        for r in written {
            let known = value.entry(r).or_insert(imm);
            if *known != imm {
                *known = None;
            }
        }
    }
    value.into_iter().filter_map(|(r, v)| Some((r, v?))).collect()
}

/// The most blocks × registers a kernel may have to run in warp mode.
const WARP_PHI_BUDGET: usize = 4_096;

/// The most blocks x registers live across blocks a kernel over
/// [`WARP_PHI_BUDGET`] may have and still run in warp mode, when it also
/// has at most [`WARP_FEW_ACCESSES`] memory accesses and warp collectives.
const WARP_CROSS_BUDGET: usize = 8_192;
/// See [`WARP_CROSS_BUDGET`]. 64 admits llama.cpp's fused matrix-vector
/// kernels (`mul_mat_vec_f`/`_q` with bias and gate: 47 blocks, 83
/// registers live across blocks, 59 accesses and collectives), which
/// thread by thread parked every lane at each of their shuffles: 76 µs
/// per block of 128 threads there, 2.8 µs as warps (fast tier), and a
/// small model's generation went from 89 to 12 ms per token. Their cost:
/// 0.73 s fast / 4 s optimised compiles, and on llama.cpp's PTX corpus
/// (fast tier, 1,027 kernels, 103 more of them as warps) a median of 37
/// ms per kernel instead of 21, p90 342 ms instead of 181, the largest
/// 1.4 s. At 16 they ran thread by thread; kernels with ~80 accesses
/// (cub's `DeviceReduceKernel` below) stay out.
const WARP_FEW_ACCESSES: usize = 64;

/// Whether a kernel is small enough for LLVM to compile as warps in
/// reasonable time. Within [`WARP_PHI_BUDGET`] blocks x registers it is.
/// Beyond it, what LLVM's time follows is measured, not derived (release
/// build, one kernel, warp mode against thread mode): a Bezier surface
/// evaluation with nvcc's inlined `powf` (61 blocks, 550 registers of
/// which 85 are read in a block that did not write them first, 6 memory
/// accesses) compiles in 2.5 s (0.18 s thread by thread); cub's
/// `DeviceReduceKernel` (41 blocks, 374 registers, 28 live across blocks,
/// about 80 loads, stores, atomics and shuffles) in 10.5 s (0.56 s), and
/// cub's radix-sort histogram kernel (84 blocks, 511 registers, 82 across
/// blocks, about 120 accesses) did not finish in 5 minutes; a tiled matrix
/// product built with `nvcc -G` (60 blocks, 29 registers across blocks, at
/// most 16 accesses) in 3.7 s (0.1 s, but thread by thread its barriers
/// make it a coroutine per thread). Registers
/// used only inside one block (the temporaries of straight-line
/// arithmetic) get no phis ([`block_local_registers`]), so they do not
/// count; each memory access and collective becomes several blocks of
/// address classification and masking, which is where the compile time
/// goes. So a kernel over the first budget runs as warps only with few
/// accesses and few registers live across blocks.
fn warp_size_ok(b: &Body) -> bool {
    let (starts, _, blocks) = FnLower::number_blocks(b);
    let blocks = blocks as usize;
    if blocks * b.regs.len() <= WARP_PHI_BUDGET {
        return true;
    }
    let accesses = b
        .statements
        .iter()
        .filter(|s| match s {
            Statement::Instruction(i) => match i.op {
                Opcode::Ld => i.space(b) != Some(StateSpace::Param),
                Opcode::Ldu
                | Opcode::St
                | Opcode::Atom
                | Opcode::Red
                | Opcode::Shfl
                | Opcode::Vote
                | Opcode::Match
                | Opcode::Redux
                | Opcode::Bar
                | Opcode::Barrier
                | Opcode::Prefetch
                | Opcode::Cp => true,
                _ => !supported(i.op),
            },
            _ => false,
        })
        .count();
    if accesses > WARP_FEW_ACCESSES {
        return false;
    }
    let cross = block_local_registers(b, &starts).iter().filter(|local| !**local).count();
    blocks * cross <= WARP_CROSS_BUDGET
}

/// Instructions warp mode lowers.
fn supported(op: Opcode) -> bool {
    use Opcode::*;
    !matches!(
        op,
        Call | Brx
            | Alloca
            | Stacksave
            | Stackrestore
            | Isspacep
            | Tex
            | Tld4
            | Txq
            | Suld
            | Sust
            | Sured
            | Suq
            | Wgmma
            | Tcgen05
            | Multimem
            | Tensormap
            | Clusterlaunchcontrol
            | Istypep
            | Mapa
            | Getctarank
    )
}

/// Forms of otherwise supported instructions that warp mode leaves to
/// thread mode: it must agree with what `lower_warp` accepts, as the
/// kernel's description (lanes) is decided here.
fn supported_form(b: &Body, i: &Instruction) -> bool {
    match i.op {
        Opcode::Atom | Opcode::Red => {
            let Some(t) = i.ty(b) else { return true };
            let word = matches!(t.bits(), 32 | 64);
            let float_ok = !t.is_float() || i.flags(b).any(|f| matches!(f, Flag::AddOp | Flag::Exch));
            word && float_ok && i.vector(b).is_none()
        }
        Opcode::Redux => !i.ty(b).is_some_and(|t| t.is_float()),
        Opcode::Bra => matches!(b.args(i).first(), Some(Operand::Label(_))),
        _ => true,
    }
}

/// Why warp mode cannot lower a kernel, if it cannot: it calls functions,
/// is too big for LLVM to compile as warps in reasonable time, or uses an
/// instruction warp mode does not lower. `None` when it can.
pub fn warp_obstacle(a: &crate::layout::Analysis, target: &crate::Target, item: ItemId, f: &Function) -> Option<&'static str> {
    if !target.facts().emulates_threads {
        return Some("the target runs its own warps");
    }
    let Some(b) = &f.body else { return Some("the kernel has no body") };
    if a.reachable(item).len() != 1 {
        return Some("it calls functions");
    }
    // Every block is reachable from the dispatch block and masked writes
    // keep each register's old value live, so after SSA construction a
    // kernel has about one vector phi per register live across blocks per
    // block, and LLVM's compile time grows faster than that
    // (`warp_size_ok`); big kernels stay in thread mode, whose code follows
    // the PTX control flow.
    if !warp_size_ok(b) {
        // The message names the budgets' values.
        const _: () = assert!(WARP_PHI_BUDGET == 4_096 && WARP_FEW_ACCESSES == 64 && WARP_CROSS_BUDGET == 8_192);
        return Some(
            "it has more than 4,096 blocks x registers, and more than 64 memory accesses or 8,192 blocks x registers live across blocks",
        );
    }
    for s in &b.statements {
        match s {
            Statement::Instruction(i) => {
                if !supported(i.op) || !supported_form(b, i) {
                    return Some("it uses an instruction warp mode does not lower");
                }
                // bar.red reduces per thread; warps would need weights.
                if matches!(i.op, Opcode::Bar | Opcode::Barrier) && i.has(b, Flag::Red) {
                    return Some("it uses `bar.red`");
                }
                if matches!(i.op, Opcode::Bar | Opcode::Barrier) && i.scope(b) == Some(Scope::Cluster) {
                    return Some("it uses cluster barriers");
                }
            }
            Statement::BranchTargets { .. } => return Some("it uses indirect branches"),
            Statement::CallTargets { .. } | Statement::CallPrototype { .. } => return Some("it calls functions"),
            Statement::Decl(v) if f.var(*v).space == StateSpace::Param => return Some("it calls functions"),
            _ => {}
        }
    }
    None
}

/// How a kernel runs on the host CPU, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeChoice {
    /// As 32-lane warps (else one thread per call).
    pub warp: bool,
    /// Thread by thread (the fast path) for blocks whose launch meets the
    /// conditions, as warps for the others: the kernel is lowered both
    /// ways and its block function checks the conditions
    /// (`lower::guarded_block_function`).
    pub guarded: Option<crate::lockstep::Conditions>,
    /// Whether the mode gives the results of converged warps in lockstep
    /// (warp mode always does; thread by thread when the lockstep analysis
    /// finds that lanes cannot observe each other's memory effects).
    pub exact: bool,
    /// Thread by thread: the statements before which the warp's lanes meet
    /// (`meet::meeting_points`, one flag per statement), empty when they
    /// need not; a kernel with meetings runs on the thread scheduler.
    pub meetings: Vec<bool>,
    /// The reason, in words.
    pub why: String,
}

/// The execution mode of kernel `item` under `opts` (see
/// [`crate::WarpMode`] and `crate::lockstep`). `src` is the module's text,
/// for positions in the reason (empty: none).
pub fn choose_mode(
    m: &Module,
    src: &str,
    a: &crate::layout::Analysis,
    target: &crate::Target,
    opts: &crate::Options,
    item: ItemId,
    f: &Function,
) -> ModeChoice {
    use crate::lockstep::Verdict;
    if !target.facts().emulates_threads {
        return ModeChoice {
            warp: false,
            guarded: None,
            exact: true,
            meetings: Vec::new(),
            why: "compiled for a GPU, which runs the warps".into(),
        };
    }
    let waits = a.needs_scheduler(item);
    let obstacle = warp_obstacle(a, target, item, f);
    let verdict = crate::lockstep::analyse(m, a, item);
    let explain = |v: &Verdict| if src.is_empty() { format!("{v:?}") } else { v.explain(m, src) };
    let independent = verdict.independent();
    let thread = |why: String| ModeChoice { warp: false, guarded: None, exact: independent, meetings: Vec::new(), why };
    let warp = |why: String| ModeChoice { warp: true, guarded: None, exact: true, meetings: Vec::new(), why };
    let wait_reason = "its threads wait for each other (barriers, warp collectives or spin loops)";
    // Warp mode cannot run it and its lanes may see each other: unless it
    // calls functions, they meet where they could see each other out of
    // step (`meet.rs`).
    let meeting = |o: &str| {
        if independent || a.reachable(item).len() != 1 {
            return None;
        }
        let meetings = f.body.as_ref().map(|b| crate::meet::meeting_points(m, f, b)).unwrap_or_default();
        let count = meetings.iter().filter(|&&x| x).count();
        let why = if count == 0 {
            format!(
                "thread by thread: {}, but on no path does one lane read what another may have written since the warp last \
                 met, or write what it read; warp mode cannot run it ({o})",
                explain(&verdict)
            )
        } else {
            format!(
                "thread by thread, the lanes of a warp meeting before each memory access where they could see each other out of \
                 step, as a GPU's warp in lockstep would ({count} such accesses): {}; warp mode cannot run it ({o})",
                explain(&verdict)
            )
        };
        let meetings = if count == 0 { Vec::new() } else { meetings };
        Some(ModeChoice { warp: false, guarded: None, exact: true, meetings, why })
    };
    match opts.warp {
        crate::WarpMode::Off => thread(format!("thread by thread (ANYCUDA_WARP=0); {}", explain(&verdict))),
        crate::WarpMode::WhereThreadsWait | crate::WarpMode::Always if obstacle.is_some() => {
            let o = obstacle.unwrap_or_default();
            meeting(o).unwrap_or_else(|| thread(format!("thread by thread: warp mode cannot run it ({o}); {}", explain(&verdict))))
        }
        crate::WarpMode::WhereThreadsWait if !waits => {
            thread(format!("thread by thread (ANYCUDA_WARP=wait, no waiting); {}", explain(&verdict)))
        }
        crate::WarpMode::WhereThreadsWait => warp(format!("warp mode: {wait_reason}")),
        crate::WarpMode::Always => warp("warp mode (ANYCUDA_WARP=all)".into()),
        crate::WarpMode::Auto => match (&verdict, waits, obstacle) {
            // Only in the optimised tier: such kernels can take many times
            // longer to compile as warps (llama.cpp's stream-k fixups: 7 ->
            // 178 ms), which a first launch should not wait for.
            (Verdict::Independent(_) | Verdict::IndependentIf(_), false, None)
                if opts.tier == crate::Tier::Optimized && loops_run_alike(f) =>
            {
                warp("warp mode: every lane of a warp goes round its loops alike, which thread by thread would run as scalar code".into())
            }
            (Verdict::Independent(_) | Verdict::IndependentIf(_), false, None)
                if opts.tier == crate::Tier::Optimized && divides_by_wide_registers(f) =>
            {
                warp(
                    "warp mode: it divides by 64-bit values, which thread by thread is a branch and a scalar division per thread, \
                     as warps one vector division by a reciprocal"
                        .into(),
                )
            }
            (Verdict::Independent(_), false, _) => thread(format!("thread by thread, the fast path: {}", explain(&verdict))),
            (Verdict::IndependentIf(c), false, None) => ModeChoice {
                warp: false,
                guarded: Some(c.clone()),
                exact: true,
                meetings: Vec::new(),
                why: format!("thread by thread, the fast path, {}; as 32-lane warps otherwise", c.explain(m)),
            },
            (_, true, None) => warp(format!("warp mode: {wait_reason}")),
            (Verdict::Exchanges(_), false, None) => warp(format!("warp mode: {}", explain(&verdict))),
            (Verdict::Independent(_), true, Some(o)) => {
                thread(format!("thread by thread, one coroutine per thread: {wait_reason}, and warp mode cannot run it ({o})"))
            }
            (_, _, Some(o)) => meeting(o).unwrap_or_else(|| {
                thread(format!(
                    "thread by thread, which is not lockstep within a warp: {}; warp mode would keep the lanes in step but cannot run it \
                 ({o}), and the lanes meet only in the kernel's own code, which calls functions; results match a GPU's only if the \
                 kernel synchronises such exchanges (`__syncwarp`, barriers){}",
                    explain(&verdict),
                    if let Verdict::IndependentIf(_) = verdict { " or its launches meet those conditions" } else { "" }
                ))
            }),
        },
    }
}

/// Whether the body has a loop that ends in a conditional branch back (the
/// form nvcc gives loops) and every such branch has a guard computed alike
/// in every lane (`uniform::data_uniform`): the lanes of a warp go round
/// those loops together. Thread by thread, the loop over a block's threads
/// contains them and LLVM vectorises only innermost loops, so each thread
/// runs them as scalar code; as warps, every iteration is vector code over
/// 32 lanes (a Bezier surface: 165 -> 64 ms). Unconditional branches back
/// are left out: nvcc also places blocks out of line and jumps back from
/// them, and a loop of that form leaves by a forward branch this does not
/// weigh (a grid-stride `while`, whose lanes leave at different times).
pub fn loops_run_alike(f: &Function) -> bool {
    let Some(b) = &f.body else { return false };
    let Some(back) = branches_back(b) else { return false };
    let mut uniform: Option<Vec<bool>> = None;
    let mut any = false;
    for inst in back {
        let Some(g) = inst.guard else { continue };
        let u = uniform.get_or_insert_with(|| crate::uniform::data_uniform(f, b));
        if !u.get(g.reg as usize).copied().unwrap_or(false) {
            return false;
        }
        any = true;
    }
    any
}

/// The `bra` instructions of a body that jump back (to the block they are
/// in or an earlier one, blocks as warp mode numbers them); `None` when a
/// `bra` has no label operand.
fn branches_back<'b>(b: &'b Body) -> Option<Vec<&'b Instruction>> {
    let (starts, label_block, _) = FnLower::number_blocks(b);
    let mut back = Vec::new();
    let mut block = 0;
    for (i, s) in b.statements.iter().enumerate() {
        if let Some(&k) = starts.get(&i) {
            block = k;
        }
        let Statement::Instruction(inst) = s else { continue };
        if inst.op != Opcode::Bra {
            continue;
        }
        let Some(Operand::Label(l)) = b.args(inst).first().copied() else { return None };
        if label_block.get(&l).is_some_and(|&t| t <= block) {
            back.push(inst);
        }
    }
    Some(back)
}

/// Whether a kernel without loops divides by 64-bit registers (`div` or
/// `rem`, `.s64`/`.u64`): the index arithmetic of element-wise kernels,
/// which nvcc compiles as a branch per division to a 32-bit fast path.
/// Thread by thread, the loop over a block's threads then stays scalar
/// code, a branch and a division per thread and division; as warps, a
/// warp's lanes take the fast path together and divide as one vector by a
/// reciprocal computed once (llama.cpp's KV-cache copy, six such divisions
/// per element: about 2.5 times faster as warps).
pub fn divides_by_wide_registers(f: &Function) -> bool {
    let Some(b) = &f.body else { return false };
    if !branches_back(b).is_some_and(|back| back.is_empty()) {
        return false;
    }
    let mut divides = false;
    for s in &b.statements {
        let Statement::Instruction(inst) = s else { continue };
        match inst.op {
            Opcode::Brx => return false,
            Opcode::Div | Opcode::Rem => {
                let wide = matches!(inst.ty(b), Some(Type::S64 | Type::U64));
                divides |= wide && matches!(b.args(inst).get(2), Some(Operand::Reg(_)));
            }
            _ => {}
        }
    }
    divides
}

/// `<0, 1, ..., 31>`
fn lane_ids() -> String {
    let items: Vec<String> = (0..W).map(|i| format!("i32 {i}")).collect();
    format!("<{}>", items.join(", "))
}

impl<'c, 'm> FnLower<'c, 'm> {
    fn live_slot() -> &'static str {
        "%live.slot"
    }
    fn next_slot() -> &'static str {
        "%next.slot"
    }

    pub(crate) fn mask(&self) -> V {
        self.warp.as_ref().map(|w| w.mask.clone()).unwrap_or_else(|| V::int(Ty::I1, 1))
    }

    fn set_mask(&mut self, m: V) {
        if let Some(w) = self.warp.as_mut() {
            w.mask = m;
        }
    }

    /// Whether any lane of `m` is set (a scalar i1).
    pub fn any(&mut self, m: &V) -> V {
        let f = self.intrinsic_scalar_ret("llvm.vector.reduce.or.v32i1", Ty::I1, &format!("<{W} x i1>"));
        self.out.def_scalar(Ty::I1, format_args!("call i1 {f}({m})"))
    }

    /// Whether every lane of `m` is set (a scalar i1).
    pub fn all(&mut self, m: &V) -> V {
        let f = self.intrinsic_scalar_ret("llvm.vector.reduce.and.v32i1", Ty::I1, &format!("<{W} x i1>"));
        self.out.def_scalar(Ty::I1, format_args!("call i1 {f}({m})"))
    }

    /// Ends the current block with a branch on whether every lane of
    /// `mask` is set and opens the first of the two arms: returns the
    /// labels of that arm, of the other (opened later by the caller) and a
    /// fresh label for a join. With every lane executing, a contiguous
    /// access is a plain vector load or store: the masked forms cost more
    /// than their memory access on x86 (measured: the histogram's two
    /// 16-byte masked loads were a tenth of its loop).
    fn branch_on_full(&mut self, mask: &V) -> (String, String, String) {
        let bits = self.bits(mask);
        let full = self.out.def_scalar(Ty::I1, format_args!("icmp eq {bits}, -1"));
        let (plain, masked, joined) = (self.out.fresh_label("full"), self.out.fresh_label("some"), self.out.fresh_label("fj"));
        self.out.terminate(format_args!("br {full}, label %{plain}, label %{masked}"));
        self.out.label(&plain);
        (plain, masked, joined)
    }

    /// The lanes of each half warp of `m` (low, high) as the low 16 bits
    /// of an i32: tests of a half's lanes on the mask's bits (a reduction
    /// of a `<16 x i1>` half became a store of the mask and a wider reload
    /// that waits for it).
    fn half_bits(&mut self, m: &V) -> [V; 2] {
        let bits = self.bits(m);
        let low = self.out.def_scalar(Ty::I32, format_args!("and {bits}, 65535"));
        let high = self.out.def_scalar(Ty::I32, format_args!("lshr {bits}, 16"));
        [low, high]
    }

    /// The lanes of `m` as the bits of an i32 (scalar).
    pub fn bits(&mut self, m: &V) -> V {
        self.out.def_scalar(Ty::I32, format_args!("bitcast {m} to i32"))
    }

    fn intrinsic_scalar_ret(&mut self, name: &str, ret: Ty, arg: &str) -> String {
        self.cx.declare(name, &format!("declare {} @{name}({arg})", ret.name()));
        format!("@{name}")
    }

    /// The first element of a vector (a scalar).
    pub fn lane0(&mut self, v: &V) -> V {
        self.out.def_scalar(v.ty, format_args!("extractelement {v}, i32 0"))
    }

    // ---- the frame ---------------------------------------------------------------

    /// Numbers the basic blocks: the entry, each label, and the code after
    /// each branch, return or exit.
    pub(crate) fn number_blocks(b: &Body) -> (HashMap<usize, u32>, HashMap<LabelId, u32>, u32) {
        let mut starts = HashMap::new();
        let mut label_block = HashMap::new();
        let mut n = 1u32;
        let mut after_end = false;
        for (i, s) in b.statements.iter().enumerate() {
            match s {
                Statement::Label(l) => {
                    starts.insert(i, n);
                    label_block.insert(*l, n);
                    n += 1;
                    after_end = false;
                }
                Statement::Instruction(inst) => {
                    if after_end {
                        starts.insert(i, n);
                        n += 1;
                        after_end = false;
                    }
                    if matches!(inst.op, Opcode::Bra) || (matches!(inst.op, Opcode::Ret | Opcode::Exit) && inst.guard.is_none()) {
                        after_end = true;
                    }
                }
                _ => {}
            }
        }
        (starts, label_block, n)
    }

    pub fn lower_warp(&mut self) -> Res<String> {
        let _lanes = ir::set_lanes(W);
        let (starts, label_block, blocks) = Self::number_blocks(self.b);
        let consts = constant_registers(self.b);
        let block_local = block_local_registers(self.b, &starts);
        let mut frame = frame_layout(&self.cx.a, self.item, self.f, self.cx.opts.tier);
        if self.cx.opts.memcheck {
            // Checked mode checks every load where it is: no index load is
            // folded into the shared atomic that uses it.
            frame.sunk.clear();
        }
        let in_loop = loop_blocks(self.b, &starts, &label_block, blocks);
        self.warp = Some(WarpState {
            mask: V::int(Ty::I1, 1),
            block: 0,
            starts,
            label_block,
            blocks,
            consts,
            shapes: HashMap::new(),
            block_local,
            guarded: false,
            in_loop,
            prefetch_slots: 0,
            chain_sites: Vec::new(),
            resident_shapes: HashMap::new(),
            frame,
            resumes: String::new(),
            resume_points: 0,
            suspended: false,
            affine: Vec::new(),
            pending_affine: None,
            incoming: HashMap::new(),
            assumed: Vec::new(),
            stored_runs: Vec::new(),
        });
        let shapes = self.warp.as_ref().map(|w| resident_shape_slots(self.b, w)).unwrap_or_default();
        if let Some(w) = self.warp.as_mut() {
            w.resident_shapes = shapes;
        }
        self.exit_label = "wexit".to_string();
        for r in 0..self.b.regs.len() {
            let decl = self.f.var(self.b.regs[r].var);
            let ty = crate::lower::reg_ty(decl.ty);
            let a = if self.uniform_reg(r as RegId) { self.out.alloca(ty.name(), 8) } else { self.out.alloca(&ty.to_string(), 16) };
            self.regs.push(a);
            self.reg_tys.push(ty);
            self.shadows.push(None);
        }
        // Affine bits: in the frame for frame-resident registers, on the
        // stack for the others.
        let mut affine = Vec::with_capacity(self.b.regs.len());
        for r in 0..self.b.regs.len() as RegId {
            let bit = match self.warp.as_ref() {
                Some(w) if w.frame.strides.get(r as usize).copied().flatten().is_some() && !w.frame.uniform[r as usize] => {
                    match (w.resident_slot(r), w.frame.affine_bits.get(&r)) {
                        (Some(_), Some(&offset)) => Some(AffineBit::Frame(offset)),
                        _ => Some(AffineBit::Stack(self.out.alloca("i1", 1))),
                    }
                }
                _ => None,
            };
            affine.push(bit);
        }
        if let Some(w) = self.warp.as_mut() {
            w.affine = affine;
        }
        self.place_warp_variables()?;
        for _ in 0..self.b.labels.len() {
            let l = self.out.fresh_label("L");
            self.labels.push(l);
        }
        let lanes = lane_ids();
        let mut e = String::new();
        let _ = writeln!(e, "  %ntid.x = load i32, ptr %ctx, align 4");
        let _ = writeln!(e, "  %ntid.y.p = getelementptr i8, ptr %ctx, i64 4");
        let _ = writeln!(e, "  %ntid.y = load i32, ptr %ntid.y.p, align 4");
        let _ = writeln!(e, "  %nthreads.p = getelementptr i8, ptr %ctx, i64 {}", offsets::NTHREADS);
        let _ = writeln!(e, "  %nthreads = load i32, ptr %nthreads.p, align 4");
        let _ = writeln!(e, "  %warp = add i32 %tid.x, 0");
        let _ = writeln!(e, "  %wbase = mul i32 %warp, {W}");
        let _ = writeln!(e, "  %wbase.i = insertelement <{W} x i32> poison, i32 %wbase, i32 0");
        let _ = writeln!(e, "  %wbase.v = shufflevector <{W} x i32> %wbase.i, <{W} x i32> poison, <{W} x i32> zeroinitializer");
        let _ = writeln!(e, "  %lane = add <{W} x i32> {lanes}, zeroinitializer");
        let _ = writeln!(e, "  %lin = add <{W} x i32> %wbase.v, %lane");
        let _ = writeln!(e, "  %nt.i = insertelement <{W} x i32> poison, i32 %nthreads, i32 0");
        let _ = writeln!(e, "  %nt.v = shufflevector <{W} x i32> %nt.i, <{W} x i32> poison, <{W} x i32> zeroinitializer");
        let _ = writeln!(e, "  %valid = icmp ult <{W} x i32> %lin, %nt.v");
        let _ = writeln!(e, "  %nx.i = insertelement <{W} x i32> poison, i32 %ntid.x, i32 0");
        let _ = writeln!(e, "  %nx.v = shufflevector <{W} x i32> %nx.i, <{W} x i32> poison, <{W} x i32> zeroinitializer");
        let _ = writeln!(e, "  %ny.i = insertelement <{W} x i32> poison, i32 %ntid.y, i32 0");
        let _ = writeln!(e, "  %ny.v = shufflevector <{W} x i32> %ny.i, <{W} x i32> poison, <{W} x i32> zeroinitializer");
        // Thread ids. When rows of the block are whole warps (ntid.x a
        // multiple of 32), a warp lies in one row: three scalar divisions
        // give its row and the lanes count along it. Otherwise each lane
        // divides.
        // A warp resuming after a suspension reads them back from its frame
        // instead (the divisions cost more than the loads).
        let _ = writeln!(e, "  %resume = load i32, ptr %frame, align 4");
        let _ = writeln!(e, "  %fresh = icmp eq i32 %resume, 0");
        let _ = writeln!(e, "  br i1 %fresh, label %ids.new, label %ids.saved");
        let _ = writeln!(e, "ids.new:");
        if self.cx.a.facts.get(&self.item).is_some_and(|f| !f.turn_points.is_empty()) {
            let _ = writeln!(e, "  %turn.p = getelementptr i8, ptr %frame, i64 {}", crate::cpu_abi::warp_frame::TURN_COUNT);
            let _ = writeln!(e, "  store i32 0, ptr %turn.p, align 4");
        }
        let _ = writeln!(e, "  %nx.low = and i32 %ntid.x, {}", W - 1);
        let _ = writeln!(e, "  %rows = icmp eq i32 %nx.low, 0");
        let _ = writeln!(e, "  br i1 %rows, label %ids.row, label %ids.lane");
        let _ = writeln!(e, "ids.row:");
        // A one-dimensional block (the common case) needs no division.
        let _ = writeln!(e, "  %flat = icmp eq i32 %ntid.x, %nthreads");
        let _ = writeln!(e, "  br i1 %flat, label %ids.flat, label %ids.div");
        let _ = writeln!(e, "ids.div:");
        let _ = writeln!(e, "  %tx0.d = urem i32 %wbase, %ntid.x");
        let _ = writeln!(e, "  %q0 = udiv i32 %wbase, %ntid.x");
        let _ = writeln!(e, "  %ty0.d = urem i32 %q0, %ntid.y");
        let _ = writeln!(e, "  %tz0.d = udiv i32 %q0, %ntid.y");
        let _ = writeln!(e, "  br label %ids.flat");
        let _ = writeln!(e, "ids.flat:");
        let _ = writeln!(e, "  %tx0 = phi i32 [%wbase, %ids.row], [%tx0.d, %ids.div]");
        let _ = writeln!(e, "  %ty0 = phi i32 [0, %ids.row], [%ty0.d, %ids.div]");
        let _ = writeln!(e, "  %tz0 = phi i32 [0, %ids.row], [%tz0.d, %ids.div]");
        let _ = writeln!(e, "  %tx0.i = insertelement <{W} x i32> poison, i32 %tx0, i32 0");
        let _ = writeln!(e, "  %tx0.v = shufflevector <{W} x i32> %tx0.i, <{W} x i32> poison, <{W} x i32> zeroinitializer");
        let _ = writeln!(e, "  %tid.xr = add <{W} x i32> %tx0.v, %lane");
        let _ = writeln!(e, "  %ty0.i = insertelement <{W} x i32> poison, i32 %ty0, i32 0");
        let _ = writeln!(e, "  %tid.yr = shufflevector <{W} x i32> %ty0.i, <{W} x i32> poison, <{W} x i32> zeroinitializer");
        let _ = writeln!(e, "  %tz0.i = insertelement <{W} x i32> poison, i32 %tz0, i32 0");
        let _ = writeln!(e, "  %tid.zr = shufflevector <{W} x i32> %tz0.i, <{W} x i32> poison, <{W} x i32> zeroinitializer");
        let _ = writeln!(e, "  br label %ids.store");
        // Lanes past the block's threads get ids of 0 so that divisions by the
        // block dimensions stay defined.
        let _ = writeln!(e, "ids.lane:");
        // The quotients come from float divisions: for integers below
        // 2^24 the correctly rounded quotient never reaches the next
        // integer, so truncating it is exact (32 integer divisions per
        // dimension would cost a microsecond per warp).
        let _ = writeln!(e, "  %lin.safe = select <{W} x i1> %valid, <{W} x i32> %lin, <{W} x i32> zeroinitializer");
        let _ = writeln!(e, "  %lin.f = uitofp <{W} x i32> %lin.safe to <{W} x float>");
        let _ = writeln!(e, "  %nx.f = uitofp <{W} x i32> %nx.v to <{W} x float>");
        let _ = writeln!(e, "  %q.xf = fdiv <{W} x float> %lin.f, %nx.f");
        let _ = writeln!(e, "  %q.x = fptoui <{W} x float> %q.xf to <{W} x i32>");
        let _ = writeln!(e, "  %q.xn = mul <{W} x i32> %q.x, %nx.v");
        let _ = writeln!(e, "  %tid.xl = sub <{W} x i32> %lin.safe, %q.xn");
        let _ = writeln!(e, "  %q.xf2 = uitofp <{W} x i32> %q.x to <{W} x float>");
        let _ = writeln!(e, "  %ny.f = uitofp <{W} x i32> %ny.v to <{W} x float>");
        let _ = writeln!(e, "  %q.yf = fdiv <{W} x float> %q.xf2, %ny.f");
        let _ = writeln!(e, "  %tid.zl = fptoui <{W} x float> %q.yf to <{W} x i32>");
        let _ = writeln!(e, "  %q.yn = mul <{W} x i32> %tid.zl, %ny.v");
        let _ = writeln!(e, "  %tid.yl = sub <{W} x i32> %q.x, %q.yn");
        let _ = writeln!(e, "  br label %ids.store");
        let _ = writeln!(e, "ids.store:");
        for d in ["x", "y", "z"] {
            let _ = writeln!(e, "  %tid.{d}n = phi <{W} x i32> [%tid.{d}r, %ids.flat], [%tid.{d}l, %ids.lane]");
        }
        for (k, d) in ["x", "y", "z"].into_iter().enumerate() {
            let _ = writeln!(e, "  %tid.{d}np = getelementptr i8, ptr %frame, i64 {}", FRAME_IDS + 128 * k as u32);
            let _ = writeln!(e, "  store <{W} x i32> %tid.{d}n, ptr %tid.{d}np, align 64");
        }
        let _ = writeln!(e, "  br label %ids");
        let _ = writeln!(e, "ids.saved:");
        for (k, d) in ["x", "y", "z"].into_iter().enumerate() {
            let _ = writeln!(e, "  %tid.{d}sp = getelementptr i8, ptr %frame, i64 {}", FRAME_IDS + 128 * k as u32);
            let _ = writeln!(e, "  %tid.{d}s = load <{W} x i32>, ptr %tid.{d}sp, align 64");
        }
        let _ = writeln!(e, "  br label %ids");
        let _ = writeln!(e, "ids:");
        for d in ["x", "y", "z"] {
            let _ = writeln!(e, "  %tid.{d}v = phi <{W} x i32> [%tid.{d}n, %ids.store], [%tid.{d}s, %ids.saved]");
        }
        // `%tid` is affine (stride 1 along x, uniform along y and z) in
        // each half warp when the block's rows are whole half warps or it
        // has one dimension; across the whole warp (`%aff.whole`) when its
        // rows are whole warps or it has one dimension.
        let _ = writeln!(e, "  %aff.nxl = and i32 %ntid.x, {}", W - 1);
        let _ = writeln!(e, "  %aff.rows = icmp eq i32 %aff.nxl, 0");
        let _ = writeln!(e, "  %aff.nxh = and i32 %ntid.x, {}", W / 2 - 1);
        let _ = writeln!(e, "  %aff.halfrows = icmp eq i32 %aff.nxh, 0");
        let _ = writeln!(e, "  %aff.flat = icmp eq i32 %ntid.x, %nthreads");
        let _ = writeln!(e, "  %aff.whole = or i1 %aff.rows, %aff.flat");
        let _ = writeln!(e, "  %aff.ids = or i1 %aff.halfrows, %aff.flat");
        // Local memory lives in the frame, which outlives suspensions;
        // local addresses are offsets from below it.
        let _ = writeln!(e, "  %lanchor.i = ptrtoint ptr %frame to i64");
        let _ = writeln!(e, "  %lbase = sub i64 %lanchor.i, 2147483648");
        let mut start = String::new();
        let _ = writeln!(start, "start:");
        let _ = writeln!(start, "  store <{W} x i1> %valid, ptr {}", Self::live_slot());
        let _ = writeln!(start, "  store <{W} x i32> zeroinitializer, ptr {}", Self::next_slot());
        // Nothing is known of a fresh warp's registers.
        let bits: Vec<AffineBit> = self.warp.as_ref().map(|w| w.affine.iter().flatten().cloned().collect()).unwrap_or_default();
        for (k, bit) in bits.iter().enumerate() {
            match bit {
                AffineBit::Stack(slot) => {
                    let _ = writeln!(start, "  store i1 false, ptr {slot}");
                }
                AffineBit::Frame(offset) => {
                    let _ = writeln!(start, "  %aff.s{k} = getelementptr i8, ptr %frame, i64 {offset}");
                    let _ = writeln!(start, "  store i1 false, ptr %aff.s{k}, align 1");
                }
            }
        }
        let _ = writeln!(start, "  br label %B0");
        // Natural alignment: their loads and stores name none.
        let _ = writeln!(self.out.allocas, "  {} = alloca <{W} x i1>", Self::live_slot());
        let _ = writeln!(self.out.allocas, "  {} = alloca <{W} x i32>", Self::next_slot());

        // Block 0 starts here.
        self.begin_block(0);
        let regions = self.affine_regions();
        let mut i = 0;
        while i < self.b.statements.len() {
            self.stmt = i;
            let start = self.warp.as_ref().and_then(|w| w.starts.get(&i).copied());
            if let Some(k) = start {
                if !self.out.terminated {
                    // Falling into the next block.
                    self.goto_next(k);
                }
                self.begin_block(k);
            }
            if let Some((end, assumed)) = regions.get(&i) {
                self.lower_versioned(i, *end, assumed)?;
                i = *end;
                continue;
            }
            if let Statement::Instruction(inst) = &self.b.statements[i] {
                self.warp_instruction(inst)?;
            }
            i += 1;
        }
        // The block after the last statement: lanes reaching it are done.
        let end = self.warp.as_ref().map_or(1, |w| w.blocks);
        if !self.out.terminated {
            self.goto_next(end);
        }
        self.begin_block(end);
        self.warp_exit_lanes();
        let blocks = end + 1;
        // The dispatcher: run the lowest block some live lane waits for.
        let mut d = String::new();
        let _ = writeln!(d, "dispatch:");
        let _ = writeln!(d, "  %d.live = load <{W} x i1>, ptr {}", Self::live_slot());
        self.cx.declare("llvm.vector.reduce.or.v32i1", "declare i1 @llvm.vector.reduce.or.v32i1(<32 x i1>)");
        self.cx.declare("llvm.vector.reduce.umin.v32i32", "declare i32 @llvm.vector.reduce.umin.v32i32(<32 x i32>)");
        let _ = writeln!(d, "  %d.any = call i1 @llvm.vector.reduce.or.v32i1(<{W} x i1> %d.live)");
        let _ = writeln!(d, "  br i1 %d.any, label %dsel, label %wexit");
        let _ = writeln!(d, "dsel:");
        let _ = writeln!(d, "  %d.next = load <{W} x i32>, ptr {}", Self::next_slot());
        let _ = writeln!(d, "  %d.cand = select <{W} x i1> %d.live, <{W} x i32> %d.next, <{W} x i32> splat (i32 -1)");
        let _ = writeln!(d, "  %d.min = call i32 @llvm.vector.reduce.umin.v32i32(<{W} x i32> %d.cand)");
        let cases: Vec<String> = (0..blocks).map(|k| format!("i32 {k}, label %B{k}")).collect();
        let _ = writeln!(d, "  switch i32 %d.min, label %wexit [ {} ]", cases.join(" "));
        // A finished warp goes on with the next one of the chain too; the
        // block's barrier can then no longer be completed in the compiled
        // code this round.
        let _ = writeln!(d, "wexit:");
        let _ = writeln!(d, "  %x.kind = getelementptr i8, ptr %frame, i64 {}", crate::cpu_abi::warp_frame::KIND);
        let _ = writeln!(d, "  store i32 {}, ptr %x.kind, align 4", crate::cpu_abi::warp_frame::DONE);
        let _ = writeln!(d, "  %x.wrap = getelementptr i8, ptr %ctx, i64 {}", offsets::CHAIN_WRAP);
        let _ = writeln!(d, "  store i32 0, ptr %x.wrap, align 4");
        let _ = writeln!(d, "  br label %chain");
        let sites = self.warp.as_ref().map(|w| w.chain_sites.clone()).unwrap_or_default();
        d.push_str(&chain_tail(&sites));
        // The entry continues where the warp suspended, if it did.
        let (points, resumes) = match self.warp.as_mut() {
            Some(w) => (w.resume_points, std::mem::take(&mut w.resumes)),
            None => (0, String::new()),
        };
        let cases: Vec<String> = (1..=points).map(|k| format!("i32 {k}, label %R{k}")).collect();
        let _ = writeln!(e, "  switch i32 %resume, label %start [ {} ]", cases.join(" "));
        e.push_str(&start);
        d.push_str(&resumes);
        // The masks of direct backward jumps.
        let incoming = self.warp.as_mut().map(|w| std::mem::take(&mut w.incoming)).unwrap_or_default();
        self.out.text = fill_incoming(&self.out.text, &incoming);
        // Every block number has a block (numbering and emission agree), so
        // the switch needs nothing more.
        let missing = String::new();
        let (_, param_bytes) = crate::layout::param_layout(self.f, &self.f.params);
        let mut text = format!(
            "define i32 {}(ptr readonly align 16 dereferenceable({}) %params, ptr align 8 dereferenceable({}) %ctx, i32 %warp.arg, ptr noalias align 64 %frame.arg) #2 {{\nentry:\n",
            ir::global_name(&crate::cpu_abi::KernelSymbols::thread(self.f.name)),
            param_bytes.max(1),
            std::mem::size_of::<crate::cpu_abi::BlockCtx>()
        );
        // Stack slots in the entry block; the rest, which may depend on
        // the warp and its frame, at the top, where chaining comes back.
        let (slots, rest): (Vec<&str>, Vec<&str>) =
            self.out.allocas.lines().partition(|l| l.contains(" = alloca ") || l.trim_start().starts_with("store i64 0, ptr %pf.slot"));
        for l in slots {
            let _ = writeln!(text, "{l}");
        }
        let _ = writeln!(text, "  br label %top\ntop:");
        let _ = writeln!(text, "  %tid.x = phi i32 [%warp.arg, %entry], [%c.next, %chain.go], [0, %chain.wrap]");
        let _ = writeln!(text, "  %frame = phi ptr [%frame.arg, %entry], [%c.frame, %chain.go], [%c.frame0, %chain.wrap]");
        for l in rest {
            let _ = writeln!(text, "{l}");
        }
        text.push_str(&e);
        text.push_str(&self.out.text);
        text.push_str(&missing);
        text.push_str(&d);
        text.push_str("}\n\n");
        Ok(text)
    }

    fn place_warp_variables(&mut self) -> Res<()> {
        for (vid, d) in self.f.vars.iter().enumerate() {
            let vid = vid as VarId;
            // `.global`/`.const` variables declared in the body are module
            // variables (the parser resolves their names to those).
            if matches!(d.space, StateSpace::Reg | StateSpace::Global | StateSpace::Const) {
                continue;
            }
            let loc = if let Some(i) = self.f.params.iter().position(|&p| p == vid) {
                let (layout, _) = crate::layout::param_layout(self.f, &self.f.params);
                let name = self.out.fresh("param");
                let _ = writeln!(self.out.allocas, "  {name} = getelementptr i8, ptr %params, i64 {}", layout[i].offset);
                crate::lower::VarLoc::Ptr(name)
            } else if matches!(d.space, StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster) {
                if crate::layout::is_dynamic_shared(d) {
                    crate::lower::VarLoc::DynShared
                } else {
                    match self.cx.a.local_shared.get(&(self.item, vid)) {
                        Some(&o) => crate::lower::VarLoc::Shared(o),
                        None => return self.invalid(format!("shared variable `{}` has no size", d.name)),
                    }
                }
            } else if d.space == StateSpace::Local {
                let size = match d.size() {
                    Some(s) => s.max(1),
                    None => return self.invalid(format!("variable `{}` has no size", d.name)),
                };
                // One copy per lane, lane after lane, in the frame.
                let _ = size;
                let Some(offset) = self.warp.as_ref().and_then(|w| w.frame.locals.get(&vid).copied()) else {
                    return self.invalid(format!("variable `{}` has no place in the warp frame", d.name));
                };
                let a = self.out.fresh("local");
                let _ = writeln!(self.out.allocas, "  {a} = getelementptr i8, ptr %frame, i64 {offset}");
                crate::lower::VarLoc::Local(a)
            } else {
                return self.unsupported(format!("a `.{}` variable in warp mode (`{}`)", d.space, d.name));
            };
            self.vars.insert(vid, loc);
        }
        Ok(())
    }

    /// Per-lane local-space addresses of a `.local` variable: each lane's
    /// copy, as an offset from the local window.
    pub fn warp_local_address(&mut self, p: &str, v: VarId) -> Res<V> {
        let size = self.f.var(v).size().unwrap_or(1).max(1);
        let ptrs = self.local_lane_pointers(p, size);
        let a = self.out.def(Ty::I64, format_args!("ptrtoint {ptrs} to <{W} x i64>"));
        let base = V::scalar(Ty::I64, "%lbase");
        Ok(self.bin("sub", &a, &base))
    }

    fn local_lane_pointers(&mut self, p: &str, size: u64) -> V {
        let lane = V::new(Ty::I32, "%lane");
        let l64 = self.zext(&lane, Ty::I64);
        let off = self.bin("mul", &l64, &V::int(Ty::I64, size as i128));
        self.out.def(Ty::Ptr, format_args!("getelementptr i8, ptr {p}, {off}"))
    }

    fn begin_block(&mut self, k: u32) {
        self.out.label(&format!("B{k}"));
        let live = self.out.def(Ty::I1, format_args!("load <{W} x i1>, ptr {}", Self::live_slot()));
        let next = self.out.def(Ty::I32, format_args!("load <{W} x i32>, ptr {}", Self::next_slot()));
        let here = self.icmp("eq", &next, &V::int(Ty::I32, k as i128));
        let waiting = self.bin("and", &live, &here);
        // Lanes that jump here directly bring their mask along (see
        // `warp_branch_back`); the incoming edges are filled in at the end.
        self.out.terminate(format_args!("br label %B{k}.m"));
        self.out.label(&format!("B{k}.m"));
        let mask = V::new(Ty::I1, format!("%wm{k}"));
        self.out.op(format_args!("{} = phi <{W} x i1> [{}, %B{k}]{}", mask.s, waiting.s, incoming_marker(k)));
        if let Some(w) = self.warp.as_mut() {
            w.block = k;
            w.mask = mask;
            // Values computed in another block need not dominate this one.
            w.shapes.clear();
            w.stored_runs.clear();
        }
    }

    /// The regions worth lowering twice (`lower_versioned`), by their first
    /// statement: the end of each and the registers assumed affine. A
    /// region is a run of instructions in one block of a loop that neither
    /// branch, suspend nor end lanes, with at least two loads or stores
    /// through registers that have a lane stride and that the region does
    /// not write (the unrolled tile loops of shared-memory kernels).
    fn affine_regions(&self) -> HashMap<usize, (usize, Vec<RegId>)> {
        /// Longer runs are cut, bounding the code lowered twice.
        const MAX_REGION: usize = 512;
        /// Outside loops, the accesses a run needs to be lowered twice
        /// (optimised tier).
        const STRAIGHT_ACCESSES: usize = 4;
        let mut regions = HashMap::new();
        let (b, Some(w)) = (self.b, self.warp.as_ref()) else { return regions };
        let plain = |k: usize| match &b.statements[k] {
            Statement::Instruction(inst) => {
                !suspension_site(&self.cx.a, self.item, b, k, inst)
                    && !matches!(
                        inst.op,
                        Opcode::Bra
                            | Opcode::Brx
                            | Opcode::Ret
                            | Opcode::Exit
                            | Opcode::Trap
                            | Opcode::Brkpt
                            | Opcode::Call
                            | Opcode::Bar
                            | Opcode::Barrier
                            | Opcode::Nanosleep
                    )
            }
            _ => false,
        };
        let (mut uses, mut defs) = (Vec::new(), Vec::new());
        let mut block = 0;
        let mut i = 0;
        while i < b.statements.len() {
            if let Some(&k) = w.starts.get(&i) {
                block = k;
            }
            if !plain(i) {
                i += 1;
                continue;
            }
            let start = i;
            // Per statement of the run: its index, the registers it
            // writes, and the lane-strided register it accesses through.
            let mut run: Vec<(usize, Vec<RegId>, Option<RegId>)> = Vec::new();
            while i < b.statements.len() && plain(i) && (i == start || !w.starts.contains_key(&i)) && i - start < MAX_REGION {
                if let Statement::Instruction(inst) = &b.statements[i] {
                    b.def_use(inst, &mut uses, &mut defs);
                    let address = match inst.op {
                        Opcode::Ld => Some(1),
                        Opcode::St => Some(0),
                        _ => None,
                    };
                    let accessed = match address.and_then(|k| b.args(inst).get(k).copied()) {
                        Some(Operand::AddrReg(r, _))
                            if w.frame.strides.get(r as usize).copied().flatten().is_some() && !self.uniform_reg(r) =>
                        {
                            Some(r)
                        }
                        _ => None,
                    };
                    run.push((i, defs.clone(), accessed));
                }
                i += 1;
            }
            let in_loop = w.in_loop.get(block as usize).copied().unwrap_or(false);
            // Outside loops, optimised tier only: in the fast tier, whose
            // accesses call a shared helper, the second version doubled
            // the code generation time of kernels with such runs for
            // little (cub's radix sort 36 -> 88 ms).
            if !in_loop && !self.shaped_inline() {
                continue;
            }
            let needed = if in_loop { 2 } else { STRAIGHT_ACCESSES };
            // The accesses from `from` on through registers the run does
            // not write from there on.
            let assumed = |from: usize| -> Vec<RegId> {
                let tail = run.iter().filter(|(k, ..)| *k >= from);
                let written: Vec<RegId> = tail.clone().flat_map(|(_, d, _)| d.iter().copied()).collect();
                tail.filter_map(|(_, _, a)| *a).filter(|r| !written.contains(r)).collect()
            };
            let mut region = Some((start, assumed(start))).filter(|(_, a)| a.len() >= needed);
            if region.is_none() && !in_loop {
                // Straight-line code computes its addresses first: start
                // after the last write of a register a later access uses.
                let mut later = Vec::new();
                let cut = run
                    .iter()
                    .rev()
                    .find_map(|(k, d, a)| {
                        if d.iter().any(|r| later.contains(r)) {
                            return Some(k + 1);
                        }
                        later.extend(*a);
                        None
                    })
                    .unwrap_or(start);
                region = Some((cut, assumed(cut))).filter(|(c, a)| *c > start && *c < i && a.len() >= needed);
            }
            if let Some((from, mut addressed)) = region {
                addressed.sort_unstable();
                addressed.dedup();
                regions.insert(from, (i, addressed));
            }
        }
        regions
    }

    /// Lowers statements `start..end` (a region of `affine_regions`) twice:
    /// once for warps in which every register of `assumed` holds its affine
    /// bit, where their accesses know their shapes when compiled (no
    /// switch per access, so the region's loads and arithmetic interleave
    /// freely), and once as usual; the region's entry picks one.
    fn lower_versioned(&mut self, start: usize, end: usize, assumed: &[RegId]) -> Res<()> {
        let mut cond = V::scalar(Ty::I1, "true");
        let mut checked = Vec::with_capacity(assumed.len());
        for &r in assumed {
            // (Every register with a stride has a bit; one without is
            // simply not assumed.)
            let (Some(bit), Some(s)) = (self.affine_bit(r), self.stride(r)) else { continue };
            checked.push(r);
            cond = self.out.def_scalar(Ty::I1, format_args!("and {cond}, {}", bit.s));
            // A 32-bit address widens without sign (`address_layout`).
            if self.reg_tys[r as usize] == Ty::I32 && s != 0 {
                let v = self.load_reg(r);
                let fits = self.lanes_widen(&v, s, false);
                cond = self.out.def_scalar(Ty::I1, format_args!("and {cond}, {}", fits.s));
            }
        }
        let (fast, slow, join) = (self.out.fresh_label("vaff"), self.out.fresh_label("vcls"), self.out.fresh_label("vjoin"));
        self.out.terminate(format_args!("br {cond}, label %{fast}, label %{slow}"));
        let Some((mask, shapes)) = self.warp.as_ref().map(|w| (w.mask.clone(), w.shapes.clone())) else {
            return self.invalid("warp state missing");
        };
        for (label, assume) in [(&fast, true), (&slow, false)] {
            self.out.label(label);
            if !assume {
                self.strict_affine_trap();
            }
            if let Some(w) = self.warp.as_mut() {
                w.mask = mask.clone();
                w.shapes = shapes.clone();
                w.stored_runs.clear();
                w.assumed = if assume { checked.clone() } else { Vec::new() };
            }
            for k in start..end {
                self.stmt = k;
                if let Statement::Instruction(inst) = &self.b.statements[k] {
                    self.warp_instruction(inst)?;
                }
            }
            if self.out.terminated {
                return self.invalid("a versioned region ended its block");
            }
            self.out.terminate(format_args!("br label %{join}"));
        }
        self.out.label(&join);
        // Values of either version do not reach past the join.
        if let Some(w) = self.warp.as_mut() {
            w.mask = mask;
            w.shapes = shapes;
            w.stored_runs.clear();
            w.assumed.clear();
        }
        Ok(())
    }

    /// The executing lanes continue at block `k` (the next one in order).
    fn goto_next(&mut self, k: u32) {
        let mask = self.mask();
        self.set_next(&mask, k);
        self.out.terminate(format_args!("br label %B{k}"));
    }

    fn set_next(&mut self, lanes: &V, k: u32) {
        self.set_next_to(lanes, &V::int(Ty::I32, k as i128));
    }

    /// `lanes` continue at block `to` (a block number, per lane or one).
    fn set_next_to(&mut self, lanes: &V, to: &V) {
        let next = self.out.def(Ty::I32, format_args!("load <{W} x i32>, ptr {}", Self::next_slot()));
        let n = self.select(lanes, to, &next);
        self.out.op(format_args!("store {n}, ptr {}", Self::next_slot()));
    }

    /// The executing lanes (`mask`) all jump forward to block `target`:
    /// there directly when no other live lane waits (they would wait for a
    /// later block than this one, and maybe an earlier one than the
    /// target), else through the dispatch.
    fn jump_forward(&mut self, mask: &V, target: u32) {
        let live = self.out.def(Ty::I1, format_args!("load <{W} x i1>, ptr {}", Self::live_slot()));
        let diff = self.bin("xor", &live, mask);
        let any_other = self.any(&diff);
        self.out.terminate(format_args!("br {any_other}, label %dispatch, label %B{target}"));
    }

    /// Suspends the warp at the current statement (a suspension site of
    /// `frame_layout`): says why in the frame, saves the site's registers
    /// and the lanes' state, and returns to the backend. Called again, the
    /// warp restores them and continues after the site, or at the dispatch
    /// block when `to_dispatch` (every lane is at a block start).
    fn warp_suspend(&mut self, kind: u32, id: &V, count: &V, to_dispatch: bool, chain: bool) -> Res<()> {
        use crate::cpu_abi::warp_frame as wf;
        let stmt = self.stmt;
        let Some(w) = self.warp.as_mut() else { return self.invalid("warp state missing") };
        let Some(saves) = w.frame.sites.get(&stmt).cloned() else {
            return self.invalid("a suspension point the frame layout does not know");
        };
        w.resume_points += 1;
        let point = w.resume_points;
        let slots: Vec<(RegId, u32)> = saves.iter().map(|r| (*r, w.frame.slots.get(r).copied().unwrap_or(0))).collect();
        let field = |out: &mut ir::Body, offset: usize| -> String {
            let p = out.fresh("fp");
            out.op(format_args!("{p} = getelementptr i8, ptr %frame, i64 {offset}"));
            p
        };
        let p = field(&mut self.out, wf::KIND);
        self.out.op(format_args!("store i32 {kind}, ptr {p}, align 4"));
        let p = field(&mut self.out, wf::BARRIER_ID);
        self.out.op(format_args!("store {id}, ptr {p}, align 4"));
        let p = field(&mut self.out, wf::BARRIER_COUNT);
        self.out.op(format_args!("store {count}, ptr {p}, align 4"));
        let mut restore = format!("R{point}:\n");
        // Registers resident in the frame (`WarpState::resident_slot`) are
        // there already; the others go there and come back.
        let resident: Vec<RegId> = match self.warp.as_ref() {
            Some(w) => slots.iter().map(|s| s.0).filter(|&r| w.resident_slot(r).is_some()).collect(),
            None => Vec::new(),
        };
        for &(r, offset) in slots.iter().filter(|s| !resident.contains(&s.0)) {
            let v = if self.uniform_reg(r) { self.load_uniform_reg(r) } else { self.load_reg(r) };
            let p = field(&mut self.out, offset as usize);
            self.out.op(format_args!("store {v}, ptr {p}, align 64"));
            let t = v.type_name();
            let (q, x) = (self.out.fresh("rp"), self.out.fresh("rv"));
            let _ = writeln!(restore, "  {q} = getelementptr i8, ptr %frame, i64 {offset}");
            restore.push_str(&frame_load_text(&x, &t, &q));
            let _ = writeln!(restore, "  store {t} {x}, ptr {}", self.regs[r as usize]);
        }
        // Affine bits go with their registers; the others' registers are
        // not restored, so nothing is known of them.
        let bits: Vec<(RegId, String, Option<u32>)> = match self.warp.as_ref() {
            Some(w) => w
                .affine
                .iter()
                .enumerate()
                .filter_map(|(r, bit)| match bit {
                    Some(AffineBit::Stack(slot)) => {
                        let r = r as RegId;
                        let saved = slots.iter().any(|s| s.0 == r);
                        Some((r, slot.clone(), if saved { w.frame.affine_bits.get(&r).copied() } else { None }))
                    }
                    _ => None,
                })
                .collect(),
            None => Vec::new(),
        };
        for (_, slot, offset) in bits {
            match offset {
                Some(offset) => {
                    let v = self.out.def_scalar(Ty::I1, format_args!("load i1, ptr {slot}"));
                    let p = field(&mut self.out, offset as usize);
                    self.out.op(format_args!("store {v}, ptr {p}, align 1"));
                    let (q, x) = (self.out.fresh("rp"), self.out.fresh("rv"));
                    let _ = writeln!(restore, "  {q} = getelementptr i8, ptr %frame, i64 {offset}");
                    let _ = writeln!(restore, "  {x} = load i1, ptr {q}, align 1");
                    let _ = writeln!(restore, "  store i1 {x}, ptr {slot}");
                }
                None => {
                    let _ = writeln!(restore, "  store i1 false, ptr {slot}");
                }
            }
        }
        for (slot, offset, t) in
            [(Self::live_slot(), FRAME_LIVE, format!("<{W} x i1>")), (Self::next_slot(), FRAME_NEXT, format!("<{W} x i32>"))]
        {
            let v = self.out.fresh("st");
            self.out.op(format_args!("{v} = load {t}, ptr {slot}"));
            let p = field(&mut self.out, offset as usize);
            self.out.op(format_args!("store {t} {v}, ptr {p}, align 64"));
            let (q, x) = (self.out.fresh("rp"), self.out.fresh("rv"));
            let _ = writeln!(restore, "  {q} = getelementptr i8, ptr %frame, i64 {offset}");
            restore.push_str(&frame_load_text(&x, &t, &q));
            let _ = writeln!(restore, "  store {t} {x}, ptr {slot}");
        }
        self.out.op(format_args!("store i32 {point}, ptr %frame, align 4"));
        if chain {
            // Go on with the next warp when the backend allows it.
            let site = self.out.fresh_label("chainsite");
            self.out.terminate(format_args!("br label %{site}"));
            self.out.label(&site);
            self.out.terminate(format_args!("br label %chain"));
            if let Some(w) = self.warp.as_mut() {
                w.chain_sites.push(site);
            }
        } else {
            self.out.terminate(format_args!("ret i32 {}", wf::SUSPENDED));
        }
        let after = format!("C{point}");
        let _ = writeln!(restore, "  br label %{}", if to_dispatch { "dispatch" } else { after.as_str() });
        if let Some(w) = self.warp.as_mut() {
            w.resumes.push_str(&restore);
        }
        if !to_dispatch {
            // Values computed before the suspension are gone: the lanes
            // executing this block are recomputed from the restored state.
            self.out.label(&after);
            let k = self.warp.as_ref().map_or(0, |w| w.block);
            let live = self.out.def(Ty::I1, format_args!("load <{W} x i1>, ptr {}", Self::live_slot()));
            let next = self.out.def(Ty::I32, format_args!("load <{W} x i32>, ptr {}", Self::next_slot()));
            let here = self.icmp("eq", &next, &V::int(Ty::I32, k as i128));
            let mask = self.bin("and", &live, &here);
            if let Some(w) = self.warp.as_mut() {
                w.mask = mask;
                w.shapes.clear();
                w.stored_runs.clear();
                w.suspended = true;
            }
        }
        Ok(())
    }

    /// The executing lanes are finished.
    fn warp_exit_lanes(&mut self) {
        let mask = self.mask();
        let live = self.out.def(Ty::I1, format_args!("load <{W} x i1>, ptr {}", Self::live_slot()));
        let not = self.bin("xor", &mask, &V::int(Ty::I1, 1));
        let l2 = self.bin("and", &live, &not);
        self.out.op(format_args!("store {l2}, ptr {}", Self::live_slot()));
        self.out.terminate(format_args!("br label %dispatch"));
    }

    fn warp_instruction(&mut self, inst: &Instruction) -> Res<()> {
        let r = self.warp_guarded_instruction(inst);
        self.forget_written_flushes(inst);
        r
    }

    fn warp_guarded_instruction(&mut self, inst: &Instruction) -> Res<()> {
        self.next_shadow = None;
        self.runs_before(inst);
        if let Some(w) = self.warp.as_mut() {
            w.suspended = false;
        }
        let saved = self.mask();
        if let Some(g) = inst.guard {
            if inst.op == Opcode::Bra && self.uniform_reg(g.reg) && self.warp.as_ref().is_some_and(|w| w.block_convergent()) {
                if let Some(done) = self.warp_branch_uniform(inst, g.reg, g.negate)? {
                    return Ok(done);
                }
            }
            let p = self.load_reg(g.reg);
            let p = if g.negate { self.bin("xor", &p, &V::int(Ty::I1, 1)) } else { p };
            let m = self.bin("and", &saved, &p);
            if inst.op == Opcode::Bra {
                return self.warp_branch(inst, m);
            }
            if matches!(inst.op, Opcode::Ret | Opcode::Exit) {
                // Some lanes finish here; the others go on in this block.
                let live = self.out.def(Ty::I1, format_args!("load <{W} x i1>, ptr {}", Self::live_slot()));
                let not = self.bin("xor", &m, &V::int(Ty::I1, 1));
                let l2 = self.bin("and", &live, &not);
                self.out.op(format_args!("store {l2}, ptr {}", Self::live_slot()));
                let rest = self.bin("and", &saved, &not);
                self.set_mask(rest);
                return Ok(());
            }
            self.set_mask(m);
            if let Some(w) = self.warp.as_mut() {
                w.guarded = true;
            }
            let r = self.warp_dispatch(inst);
            if let Some(w) = self.warp.as_mut() {
                w.guarded = false;
            }
            // After a suspension `saved` no longer exists; the recomputed
            // mask stands for it.
            if !self.warp.as_ref().is_some_and(|w| w.suspended) {
                self.set_mask(saved);
            }
            return r;
        }
        match inst.op {
            Opcode::Bra => self.warp_branch(inst, saved),
            Opcode::Ret | Opcode::Exit => {
                self.warp_exit_lanes();
                Ok(())
            }
            _ => self.warp_dispatch(inst),
        }
    }

    /// `bra` taken by the lanes of `taken`; the rest of the executing lanes
    /// fall through to the next block.
    fn warp_branch(&mut self, inst: &Instruction, taken: V) -> Res<()> {
        let Some(Operand::Label(l)) = self.b.args(inst).first().copied() else {
            return self.unsupported("an indirect branch");
        };
        let (k, target) = match self.warp.as_ref() {
            Some(w) => (w.block, w.label_block.get(&l).copied().unwrap_or(0)),
            None => return self.invalid("warp state missing"),
        };
        let fall_block = k + 1;
        let mask = self.mask();
        let not_taken = self.bin("xor", &taken, &V::int(Ty::I1, 1));
        let falls = self.bin("and", &mask, &not_taken);
        let spins = target <= k && self.cx.a.facts.get(&self.item).is_some_and(|f| f.yield_points.contains(&self.stmt));
        let turn = self.cx.a.facts.get(&self.item).and_then(|f| f.turn_points.get(&self.stmt).copied());
        if let Some(every) = turn.filter(|_| target <= k && !spins) {
            return self.warp_branch_turn(target, every, &mask, &taken, &falls);
        }
        if target <= k && !spins {
            let any_taken = self.any(&taken);
            return self.warp_branch_back(target, &mask, &taken, &any_taken, &falls);
        }
        self.set_next(&taken, target);
        self.set_next(&falls, fall_block);
        let any_taken = self.any(&taken);
        // Everyone falls through: continue in order.
        let t = self.out.fresh_label("taken");
        self.out.terminate(format_args!("br {any_taken}, label %{t}, label %B{fall_block}"));
        self.out.label(&t);
        if spins {
            // A loop that may wait for memory another warp or block writes:
            // the other warps run before the next iteration.
            let zero = V::scalar(Ty::I32, "0");
            return self.warp_suspend(crate::cpu_abi::warp_frame::YIELD, &zero, &zero, true, false);
        }
        // Some lanes fall through: the next block is the lowest pending one
        // (every other live lane waits for a later block than this one), so
        // the warp goes on there without the dispatch's search.
        let any_falls = self.any(&falls);
        let jumps = self.out.fresh_label("jumps");
        self.out.terminate(format_args!("br {any_falls}, label %B{fall_block}, label %{jumps}"));
        self.out.label(&jumps);
        // Everyone jumps: directly, when no other lane waits for an earlier
        // block than the target.
        self.jump_forward(&mask, target);
        Ok(())
    }

    /// A forward branch on a uniform predicate in a convergent block: every
    /// executing lane goes the same way, so the warp goes on at the next
    /// block or (unless other lanes wait for an earlier block) the target,
    /// the executing lanes' next block set with one select: no tests of
    /// which lanes take it or fall through. (llama.cpp's kernels test their
    /// parameters in their first blocks: whether an index table or a fused
    /// gate is given.) `None` for branches this does not handle (backward
    /// ones, loops that may spin or take turns), lowered as usual.
    fn warp_branch_uniform(&mut self, inst: &Instruction, pred: RegId, negate: bool) -> Res<Option<()>> {
        let Some(Operand::Label(l)) = self.b.args(inst).first().copied() else {
            return Ok(None);
        };
        let (k, target) = match self.warp.as_ref() {
            Some(w) => (w.block, w.label_block.get(&l).copied().unwrap_or(0)),
            None => return Ok(None),
        };
        if target <= k {
            return Ok(None);
        }
        let p = self.load_uniform_reg(pred);
        let taken = if negate { self.out.def_scalar(Ty::I1, format_args!("xor {p}, true")) } else { p };
        let fall_block = k + 1;
        let to = self.out.def_scalar(Ty::I32, format_args!("select {taken}, i32 {target}, i32 {fall_block}"));
        // The executing lanes' next block. (Live lanes that read no
        // register again, such as lanes waiting at a block that only
        // returns, need not run a convergent block: they keep theirs.)
        let to = self.vec(to);
        let mask = self.mask();
        self.set_next_to(&mask, &to);
        // Falling through, the next block is the lowest pending one.
        let t = self.out.fresh_label("utaken");
        self.out.terminate(format_args!("br {taken}, label %{t}, label %B{fall_block}"));
        self.out.label(&t);
        self.jump_forward(&mask, target);
        Ok(Some(()))
    }

    /// The backward branch of a grid-stride loop: every `every`th time
    /// some lane takes it, the warp suspends
    /// ([`crate::cpu_abi::warp_frame::TURN`]) so that the block's other
    /// warps run their iterations first, and resumes at the loop's block
    /// through the dispatch; otherwise as `warp_branch_back`.
    fn warp_branch_turn(&mut self, target: u32, every: u32, mask: &V, taken: &V, falls: &V) -> Res<()> {
        use crate::cpu_abi::warp_frame as wf;
        let k = self.warp.as_ref().map_or(0, |w| w.block);
        let p = self.out.fresh("turnp");
        self.out.op(format_args!("{p} = getelementptr i8, ptr %frame, i64 {}", wf::TURN_COUNT));
        let count = self.out.def_scalar(Ty::I32, format_args!("load i32, ptr {p}, align 4"));
        let next = self.out.def_scalar(Ty::I32, format_args!("add {count}, 1"));
        let due = self.out.def_scalar(Ty::I1, format_args!("icmp uge {next}, {every}"));
        let kept = self.out.def_scalar(Ty::I32, format_args!("select {due}, i32 0, {next}"));
        self.out.op(format_args!("store {kept}, ptr {p}, align 4"));
        let any_taken = self.any(taken);
        let turn = self.out.def_scalar(Ty::I1, format_args!("and {due}, {}", any_taken.s));
        let (t, stay) = (self.out.fresh_label("turn"), self.out.fresh_label("stay"));
        self.out.terminate(format_args!("br {turn}, label %{t}, label %{stay}"));
        self.out.label(&t);
        self.set_next(taken, target);
        self.set_next(falls, k + 1);
        let zero = V::scalar(Ty::I32, "0");
        self.warp_suspend(wf::TURN, &zero, &zero, true, false)?;
        self.out.label(&stay);
        self.warp_branch_back(target, mask, taken, &any_taken, falls)
    }

    /// A backward branch (a loop's). When every executing lane takes it,
    /// they are the only lanes of the target block (no lane waits for an
    /// earlier block than the lowest one, this block), so they jump there
    /// with their mask, and a loop back to its own block leaves the lanes'
    /// next block as it is. Otherwise as `warp_branch`. `any_taken`: the
    /// caller's test of whether some lane takes it.
    fn warp_branch_back(&mut self, target: u32, mask: &V, taken: &V, any_taken: &V, falls: &V) -> Res<()> {
        let k = self.warp.as_ref().map_or(0, |w| w.block);
        let any_falls = self.any(falls);
        let (t, none, direct, split) =
            (self.out.fresh_label("taken"), self.out.fresh_label("none"), self.out.fresh_label("back"), self.out.fresh_label("split"));
        self.out.terminate(format_args!("br {any_taken}, label %{t}, label %{none}"));
        self.out.label(&none);
        self.set_next(falls, k + 1);
        self.out.terminate(format_args!("br label %B{}", k + 1));
        self.out.label(&t);
        self.out.terminate(format_args!("br {any_falls}, label %{split}, label %{direct}"));
        self.out.label(&direct);
        if target != k {
            self.set_next(mask, target);
        }
        self.out.terminate(format_args!("br label %B{target}.m"));
        if let Some(w) = self.warp.as_mut() {
            w.incoming.entry(target).or_default().push((mask.s.clone(), direct));
        }
        // Some lanes loop, the others leave: the loop's block is the lowest
        // pending one (every other live lane waits for a block after this
        // one), entered with the lanes waiting there.
        self.out.label(&split);
        self.set_next(taken, target);
        self.set_next(falls, k + 1);
        self.out.terminate(format_args!("br label %B{target}"));
        Ok(())
    }

    fn warp_dispatch(&mut self, inst: &Instruction) -> Res<()> {
        use Opcode::*;
        self.affine_prepare(inst)?;
        match inst.op {
            Ld | Ldu => self.warp_ld(inst),
            St => self.warp_st(inst),
            Atom | Red => self.warp_atom(inst),
            Bar | Barrier => self.warp_barrier(inst),
            Shfl => self.warp_shfl(inst),
            Vote => self.warp_vote(inst),
            Match => self.warp_match(inst),
            Redux => self.warp_redux(inst),
            Activemask => {
                let args = self.b.args(inst);
                let m = self.mask();
                let bits = self.bits(&m);
                self.set(&args[0], bits)
            }
            Elect => self.warp_elect(inst),
            Trap | Brkpt => {
                let m = self.mask();
                let any = self.any(&m);
                let t = self.out.fresh_label("trap");
                let c = self.out.fresh_label("notrap");
                self.out.terminate(format_args!("br {any}, label %{t}, label %{c}"));
                self.out.label(&t);
                let bits = self.bits(&m);
                let f = self.intrinsic_scalar_ret("llvm.cttz.i32", Ty::I32, "i32, i1");
                let first = self.out.def_scalar(Ty::I32, format_args!("call i32 {f}({bits}, i1 false)"));
                let lin = self.out.def_scalar(Ty::I32, format_args!("add i32 %wbase, {}", first.s));
                let place = self.source_place();
                self.cx.declare_runtime(&crate::cpu_abi::runtime::TRAP);
                self.out.op(format_args!("call void @__anycuda_trap(ptr %ctx, {lin}, ptr {place})"));
                self.out.terminate(format_args!("unreachable"));
                self.out.label(&c);
                Ok(())
            }
            Nanosleep => {
                // The sleep lets the other warps run (0 to 2 ns of the
                // requested time are both within the PTX definition).
                let zero = V::scalar(Ty::I32, "0");
                self.warp_suspend(crate::cpu_abi::warp_frame::YIELD, &zero, &zero, false, false)
            }
            Cvta => self.warp_cvta(inst),
            // Plain arithmetic of uniform registers: one scalar for the
            // warp, as thread-by-thread code computes it.
            _ if self.scalar_uniform(inst) => {
                let _scalar = ir::set_lanes(1);
                self.dispatch_shared(inst)
            }
            // Everything else works lane by lane through the shared lowering.
            _ => {
                let _ = self.kernel;
                self.dispatch_shared(inst)
            }
        }
    }

    // ---- lane-affine registers (`crate::affine`) ----------------------------------------

    // ---- warp-uniform registers (`crate::uniform`) ---------------------------------------

    /// Whether `inst` is plain arithmetic that writes only uniform
    /// registers from uniform registers, immediates and block indices:
    /// lowered as thread-by-thread code, one scalar for the warp, rather
    /// than as 32 lanes of which the first executing one is kept (LLVM does
    /// not fold that extraction, at a lane known only at run time, back
    /// into scalar arithmetic: each such write cost a broadcast, four
    /// 64-byte stores and a load in `mul_mat_vec_f`).
    fn scalar_uniform(&self, inst: &Instruction) -> bool {
        // (`cvta` never comes here: warp mode lowers it apart.)
        if !crate::uniform::plain_arithmetic(self.b, inst) {
            return false;
        }
        let mut defs = Vec::new();
        self.b.defs(inst, &mut defs);
        if defs.is_empty() || !defs.iter().all(|&r| self.uniform_reg(r)) {
            return false;
        }
        self.b.args(inst).iter().skip(1).all(|op| match *op {
            Operand::Reg(r) | Operand::NotReg(r) => self.uniform_reg(r),
            Operand::Imm(_) | Operand::F32(_) | Operand::F64(_) => true,
            Operand::Special(SpecialReg::Ctaid | SpecialReg::Nctaid | SpecialReg::Ntid, _) => true,
            _ => false,
        })
    }

    /// Whether register `r` is kept as one scalar for the whole warp.
    pub fn uniform_reg(&self, r: RegId) -> bool {
        self.warp.as_ref().is_some_and(|w| w.frame.uniform.get(r as usize).copied().unwrap_or(false))
    }

    /// Where a uniform register's scalar lives: its frame slot if it is
    /// frame-resident, else its stack slot.
    fn uniform_slot(&mut self, r: RegId) -> String {
        match self.warp.as_ref().and_then(|w| w.resident_slot(r)) {
            Some(offset) => self.frame_ptr(offset),
            None => self.regs[r as usize].clone(),
        }
    }

    /// A uniform register's scalar value.
    pub fn load_uniform_reg(&mut self, r: RegId) -> V {
        let ty = self.reg_tys[r as usize];
        let p = self.uniform_slot(r);
        self.out.def_scalar(ty, format_args!("load {}, ptr {p}, align 8", ty.name()))
    }

    /// Writes uniform register `r` from `v` (of the register's type) as the
    /// executing lanes `mask` compute it: the value of the first executing
    /// lane (every one computes the same; lanes outside the mask may not,
    /// a division's, say), or the old value when no lane executes (a false
    /// uniform guard).
    pub fn store_uniform_reg(&mut self, r: RegId, v: V, mask: &V) {
        self.forget_flushes(r);
        let ty = self.reg_tys[r as usize];
        let guarded = self.warp.as_ref().is_some_and(|w| w.guarded);
        let s = if v.lanes == 1 && guarded {
            // Under a uniform guard that may be false for the whole warp.
            let mb = self.bits(mask);
            let old = self.load_uniform_reg(r);
            let any = self.out.def_scalar(Ty::I1, format_args!("icmp ne {mb}, 0"));
            self.out.def_scalar(ty, format_args!("select {any}, {v}, {old}"))
        } else if v.lanes == 1 {
            v
        } else {
            let mb = self.bits(mask);
            let cttz = "llvm.cttz.i32";
            self.cx.declare(cttz, "declare i32 @llvm.cttz.i32(i32, i1)");
            let first = self.out.def_scalar(Ty::I32, format_args!("call i32 @{cttz}({mb}, i1 false)"));
            if !guarded && self.warp.as_ref().is_some_and(|w| w.block_convergent()) {
                // A convergent block runs with the lanes that read
                // registers again (`uniform::Convergence`), so some lane
                // executes the write: no need to keep the old value for a
                // write by none (for frame-resident registers, a load and a
                // select per write: the parameters of llama.cpp's
                // `mul_mat_vec_f`, loaded in its first block). The lane
                // index stays in range for LLVM even so.
                let lane = self.out.def_scalar(Ty::I32, format_args!("and {first}, {}", W - 1));
                self.out.def_scalar(ty, format_args!("extractelement {v}, {lane}"))
            } else {
                let x = self.out.def_scalar(ty, format_args!("extractelement {v}, {first}"));
                let old = self.load_uniform_reg(r);
                let any = self.out.def_scalar(Ty::I1, format_args!("icmp ne {mb}, 0"));
                self.out.def_scalar(ty, format_args!("select {any}, {x}, {old}"))
            }
        };
        let p = self.uniform_slot(r);
        self.out.op(format_args!("store {s}, ptr {p}, align 8"));
    }

    /// Where code runs that a warp whose affine bits hold never needs:
    /// traps when compiled for tests with `Options::strict_affine`.
    fn strict_affine_trap(&mut self) {
        if self.cx.opts.strict_affine {
            self.cx.declare("llvm.trap", "declare void @llvm.trap()");
            self.out.op(format_args!("call void @llvm.trap()"));
        }
    }

    /// A pointer to byte `offset` of the warp's frame.
    pub fn frame_ptr(&mut self, offset: u32) -> String {
        let q = self.out.fresh("fr");
        self.out.op(format_args!("{q} = getelementptr i8, ptr %frame, i64 {offset}"));
        q
    }

    /// A register of type `ty` (in the current mode) read from the frame
    /// at `q` (see [`frame_load_text`]).
    pub fn load_frame_value(&mut self, ty: Ty, q: &str) -> V {
        let v = V::new(ty, self.out.fresh("t"));
        self.out.op(format_args!("{}", frame_load_text(&v.s, &v.type_name(), q).trim()));
        v
    }

    /// Where affine bit `bit` is, as a pointer.
    fn affine_bit_ptr(&mut self, bit: &AffineBit) -> String {
        match bit {
            AffineBit::Stack(slot) => slot.clone(),
            AffineBit::Frame(offset) => self.frame_ptr(*offset),
        }
    }

    /// The affine bit of register `r`, loaded, if it has one.
    fn affine_bit(&mut self, r: RegId) -> Option<V> {
        let bit = self.warp.as_ref()?.affine.get(r as usize)?.clone()?;
        let q = self.affine_bit_ptr(&bit);
        Some(self.out.def_scalar(Ty::I1, format_args!("load i1, ptr {q}, align 1")))
    }

    /// Whether register `r` holds its affine form as an address of lane
    /// stride `stride`: its affine bit `bit` and, for a 32-bit register
    /// that moves from lane to lane, that its lanes (`value`, else the
    /// register's) widen to 64 bits without one wrapping (an address
    /// widens without sign).
    fn affine_address(&mut self, r: RegId, bit: V, stride: i64, value: Option<&V>) -> V {
        if self.reg_tys[r as usize] != Ty::I32 || stride == 0 {
            return bit;
        }
        let fits = match value {
            Some(v) => self.lanes_widen(v, stride, false),
            None => {
                let v = self.load_reg(r);
                self.lanes_widen(&v, stride, false)
            }
        };
        self.out.def_scalar(Ty::I1, format_args!("and {bit}, {}", fits.s))
    }

    fn stride(&self, r: RegId) -> Option<i64> {
        self.warp.as_ref()?.frame.strides.get(r as usize).copied().flatten()
    }

    /// Whether the 32-bit values `x0 + stride * k` of lanes k = 0..`lanes`
    /// widen (signed or not) to `x0' + stride * k` in 64 bits: no lane
    /// wraps.
    fn widens(&mut self, x0: &V, stride: i64, signed: bool, lanes: i64) -> V {
        let span = lanes * stride;
        let (lo, hi) = if signed { (i32::MIN as i64, i32::MAX as i64) } else { (0, u32::MAX as i64) };
        // The lanes run from x0 to x0 + span: x0 must leave that room.
        let (pred, limit) =
            if stride >= 0 { (if signed { "sle" } else { "ule" }, hi - span) } else { (if signed { "sge" } else { "uge" }, lo - span) };
        if limit < lo || limit > hi {
            return V::scalar(Ty::I1, "false");
        }
        self.out.def_scalar(Ty::I1, format_args!("icmp {pred} {x0}, {}", limit as u32 as i32))
    }

    /// Whether the 32-bit lanes `v` of stride `stride` widen without a
    /// lane wrapping: from lane 0 across the warp (where lane 16 follows
    /// lane 0) and from lane 16 across the upper half (where it does not).
    fn lanes_widen(&mut self, v: &V, stride: i64, signed: bool) -> V {
        let x0 = self.lane0(v);
        let x16 = self.out.def_scalar(Ty::I32, format_args!("extractelement {v}, i32 16"));
        let whole = self.widens(&x0, stride, signed, 31);
        let upper = self.widens(&x16, stride, signed, 15);
        self.out.def_scalar(Ty::I1, format_args!("and {whole}, {}", upper.s))
    }

    /// Before an instruction that writes a register with a lane stride:
    /// whether its result keeps the affine form, from its operands' bits
    /// (and, where it widens 32-bit lanes, that none wraps). The write
    /// itself decides the rest (`affine_written`).
    fn affine_prepare(&mut self, inst: &Instruction) -> Res<()> {
        let Some(w) = self.warp.as_mut() else { return Ok(()) };
        w.pending_affine = None;
        let args = self.b.args(inst);
        let Some(&Operand::Reg(dest)) = args.first() else { return Ok(()) };
        if !self.b.writes_first(inst) || self.stride(dest).is_none() || self.uniform_reg(dest) {
            return Ok(());
        }
        let Some(form) = crate::affine::form(self.f, self.b, inst) else { return Ok(()) };
        let sources: &[usize] = match inst.op {
            Opcode::Ld => &[],
            Opcode::Mov | Opcode::Cvt | Opcode::Cvta | Opcode::And | Opcode::Shr => &[1],
            Opcode::Mad => &[1, 2, 3],
            _ => &[1, 2],
        };
        let mut flag = V::scalar(Ty::I1, "true");
        // The lane-varying source of an `xor` and its stride.
        let mut flipped: Option<(Operand, i64)> = None;
        for &k in sources {
            let op = args[k];
            let (bit, stride) = match op {
                Operand::Imm(_) | Operand::Global(_) => (None, 0),
                Operand::Var(v) if crate::affine::uniform_var(self.f, v) => (None, 0),
                Operand::Special(SpecialReg::Tid, c) => (Some(V::scalar(Ty::I1, "%aff.ids")), if c == 0 { 1 } else { 0 }),
                Operand::Special(sr, _) => match crate::affine::special_stride(sr) {
                    Some(st) => (None, st),
                    None => (Some(V::scalar(Ty::I1, "false")), 0),
                },
                Operand::Reg(r) if self.uniform_reg(r) => (None, 0),
                Operand::Reg(r) => match (self.affine_bit(r), self.stride(r)) {
                    (Some(bit), Some(st)) => (Some(bit), st),
                    _ => (Some(V::scalar(Ty::I1, "false")), 0),
                },
                _ => (Some(V::scalar(Ty::I1, "false")), 0),
            };
            if let Some(bit) = bit {
                flag = self.out.def_scalar(Ty::I1, format_args!("and {flag}, {}", bit.s));
            }
            if stride != 0 && form == crate::affine::Form::Flipped {
                flipped = Some((op, stride));
            }
            // The 32-bit operands of a widening form must not wrap.
            if let crate::affine::Form::Widened { signed } = form {
                if k <= 2 && stride != 0 {
                    let v = self.get(&op, Ty::I32)?;
                    let v = self.vec(v);
                    let ok = self.lanes_widen(&v, stride, signed);
                    flag = self.out.def_scalar(Ty::I1, format_args!("and {flag}, {}", ok.s));
                }
            }
            // A field or a shift of lane-varying values keeps its stride
            // only while no lane's field wraps or carries (`affine::field`,
            // `affine::shifted_stride`).
            if matches!(form, crate::affine::Form::Masked { .. } | crate::affine::Form::Shifted { .. }) && stride != 0 {
                let v = self.get(&op, Ty::I32)?;
                let v = self.vec(v);
                let ok = self.field_keeps_lanes(&v, form, stride);
                flag = self.out.def_scalar(Ty::I1, format_args!("and {flag}, {}", ok.s));
            }
        }
        if let Some((x, stride)) = flipped {
            let other = if args[1] == x { args[2] } else { args[1] };
            let ok = self.flip_keeps_lanes(&x, &other, stride, self.reg_tys[dest as usize])?;
            flag = self.out.def_scalar(Ty::I1, format_args!("and {flag}, {}", ok.s));
        }
        if let Some(w) = self.warp.as_mut() {
            w.pending_affine = Some((dest, flag));
        }
        Ok(())
    }

    /// Whether `x ^ u` keeps the lanes of `x` (affine, of positive `stride`
    /// up to `affine::MAX_FLIPPED_STRIDE`) affine, `u` the same in each
    /// half (stride 0): the lanes' values `x0 + stride * k` of a warp (or
    /// of each half, from its first lane, where lane 16 does not follow
    /// lane 0) lie between the first and the last, so they share every bit
    /// above the highest one in which those two differ; `u` must have no
    /// bit at or below it. Then every lane's value changes by the same
    /// amount. The last lane's value is computed from the first (a lane not
    /// live may hold anything); one that wraps around differs from the
    /// first in the top bit, so only `u = 0` passes.
    fn flip_keeps_lanes(&mut self, x: &Operand, u: &Operand, stride: i64, ty: Ty) -> Res<V> {
        let xv = self.get(x, ty)?;
        let xv = self.vec(xv);
        let uv = self.get(u, ty)?;
        let uv = self.vec(uv);
        let bits = if ty == Ty::I64 { 64 } else { 32 };
        let ctlz = format!("llvm.ctlz.i{bits}");
        self.cx.declare(&ctlz, &format!("declare i{bits} @{ctlz}(i{bits}, i1)"));
        let x0 = self.lane0(&xv);
        let x16 = self.out.def_scalar(ty, format_args!("extractelement {xv}, i32 16"));
        let u0 = self.lane0(&uv);
        let u16 = self.out.def_scalar(ty, format_args!("extractelement {uv}, i32 16"));
        let mut clear = |first: &V, lanes: i64, u: &V| -> V {
            let last = self.out.def_scalar(ty, format_args!("add {first}, {}", lanes * stride));
            let differ = self.out.def_scalar(ty, format_args!("xor {first}, {}", last.s));
            let zeros = self.out.def_scalar(ty, format_args!("call i{bits} @{ctlz}({differ}, i1 false)"));
            // Ones at and below the highest differing bit (none when the
            // lanes are equal: `lshr` by the width would be poison).
            let ones = self.out.def_scalar(ty, format_args!("lshr i{bits} -1, {}", zeros.s));
            let same = self.out.def_scalar(Ty::I1, format_args!("icmp eq {differ}, 0"));
            let span = self.out.def_scalar(ty, format_args!("select {same}, i{bits} 0, {ones}"));
            let hit = self.out.def_scalar(ty, format_args!("and {u}, {}", span.s));
            self.out.def_scalar(Ty::I1, format_args!("icmp eq {hit}, 0"))
        };
        let whole = clear(&x0, 31, &u0);
        let low = clear(&x0, 15, &u0);
        let high = clear(&x16, 15, &u16);
        let halves = self.out.def_scalar(Ty::I1, format_args!("and {low}, {}", high.s));
        Ok(self.out.def_scalar(Ty::I1, format_args!("select i1 %aff.whole, {whole}, {halves}")))
    }

    /// Whether `x & mask` or `x >> shift` (`form`) of the 32-bit lanes `v`,
    /// affine with the (non-zero) `stride`, is affine with the stride
    /// `affine::strides` gave its result. Where lane 16 follows lane 0
    /// (`%aff.whole`) the whole warp must keep it, from lane 0's value;
    /// otherwise each half from its first lane's.
    fn field_keeps_lanes(&mut self, v: &V, form: crate::affine::Form, stride: i64) -> V {
        // The lanes' values in the bits `bits`, read as a number, grow by
        // `step` per lane: the first lane's may be at most `bits - n *
        // step` for the `n` lanes after it to stay within them.
        let (bits, step): (u64, u64) = match form {
            crate::affine::Form::Masked { mask } => match crate::affine::field(mask, stride) {
                Some((j, w)) => (((1u64 << w) - 1) << j, 1 << j),
                None => return V::scalar(Ty::I1, "false"),
            },
            crate::affine::Form::Shifted { shift, signed } => match crate::affine::shifted_stride(stride, shift) {
                // Divided exactly: no lane may wrap.
                Some(s) if s != 0 => return self.lanes_widen(v, stride, signed),
                Some(_) => ((1u64 << shift) - 1, stride as u64),
                None => return V::scalar(Ty::I1, "false"),
            },
            _ => return V::scalar(Ty::I1, "false"),
        };
        let x0 = self.lane0(v);
        let x16 = self.out.def_scalar(Ty::I32, format_args!("extractelement {v}, i32 16"));
        let mut within = |x: &V, n: u64| -> V {
            match bits.checked_sub(n * step) {
                Some(limit) => {
                    let low = self.out.def_scalar(Ty::I32, format_args!("and {x}, {}", bits as u32 as i32));
                    self.out.def_scalar(Ty::I1, format_args!("icmp ule {low}, {}", limit as u32 as i32))
                }
                None => V::scalar(Ty::I1, "false"),
            }
        };
        let whole = within(&x0, 31);
        let low = within(&x0, 15);
        let high = within(&x16, 15);
        let halves = self.out.def_scalar(Ty::I1, format_args!("and {low}, {}", high.s));
        self.out.def_scalar(Ty::I1, format_args!("select i1 %aff.whole, {whole}, {halves}"))
    }

    /// Register `r` is written, by the executing lanes only when `mask` is
    /// given: its affine bit becomes the one its instruction prepared, kept
    /// only if the write reaches every live lane and lane 0.
    pub fn affine_written(&mut self, r: RegId, mask: Option<&V>) {
        if self.uniform_reg(r) {
            return;
        }
        let Some(bit) = self.warp.as_ref().and_then(|w| w.affine.get(r as usize).cloned().flatten()) else { return };
        let pending = self.warp.as_mut().and_then(|w| w.pending_affine.take_if(|(d, _)| *d == r)).map(|(_, f)| f);
        let mut flag = pending.unwrap_or_else(|| V::scalar(Ty::I1, "false"));
        let q = self.affine_bit_ptr(&bit);
        if let Some(mask) = mask {
            let mb = self.bits(mask);
            if flag.s != "false" {
                let live = self.out.def(Ty::I1, format_args!("load <{W} x i1>, ptr {}", Self::live_slot()));
                let lb = self.bits(&live);
                let all = self.out.def_scalar(Ty::I1, format_args!("icmp eq {mb}, {}", lb.s));
                // The half warps' first lanes (0 and 16) give their bases:
                // lane 0 must be written, and lane 16 unless no lane of the
                // upper half is.
                let low = self.out.def_scalar(Ty::I32, format_args!("and {mb}, 1"));
                let first = self.out.def_scalar(Ty::I1, format_args!("icmp ne {low}, 0"));
                let upper = self.out.def_scalar(Ty::I32, format_args!("lshr {mb}, 16"));
                let bit16 = self.out.def_scalar(Ty::I32, format_args!("and {upper}, 1"));
                let has16 = self.out.def_scalar(Ty::I1, format_args!("icmp ne {bit16}, 0"));
                let none = self.out.def_scalar(Ty::I1, format_args!("icmp eq {upper}, 0"));
                let none_or_16 = self.out.def_scalar(Ty::I1, format_args!("or {has16}, {}", none.s));
                let bases = self.out.def_scalar(Ty::I1, format_args!("and {first}, {}", none_or_16.s));
                let both = self.out.def_scalar(Ty::I1, format_args!("and {all}, {}", bases.s));
                flag = self.out.def_scalar(Ty::I1, format_args!("and {flag}, {}", both.s));
            }
            // No lane writes (a guard false in every lane): the register,
            // and so its bit, stay as they were.
            let old = self.out.def_scalar(Ty::I1, format_args!("load i1, ptr {q}, align 1"));
            let none = self.out.def_scalar(Ty::I1, format_args!("icmp eq {mb}, 0"));
            flag = self.out.def_scalar(Ty::I1, format_args!("select {none}, {old}, {flag}"));
        }
        self.out.op(format_args!("store {flag}, ptr {q}, align 1"));
    }

    // ---- memory --------------------------------------------------------------------

    /// Where an address operand points, per lane (`<32 x ptr>`) or, when all
    /// lanes use the same address (a variable, a symbol: always valid
    /// memory), as one scalar pointer.
    pub(crate) fn warp_address(&mut self, op: &Operand, space: Option<StateSpace>) -> Res<(V, bool)> {
        let Some((base, off)) = op.address() else {
            return self.invalid("expected an address `[...]`");
        };
        let shared = matches!(space, Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster));
        let local = space == Some(StateSpace::Local);
        match base {
            AddrBase::Var(v) => match self.vars.get(&v).cloned() {
                Some(crate::lower::VarLoc::Local(p)) => {
                    let size = self.f.var(v).size().unwrap_or(1).max(1);
                    let ptrs = self.local_lane_pointers(&p, size);
                    let p2 = self.out.def(Ty::Ptr, format_args!("getelementptr i8, {ptrs}, i64 {off}"));
                    Ok((p2, false))
                }
                Some(crate::lower::VarLoc::Ptr(p)) => {
                    let p2 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr {p}, i64 {off}"));
                    Ok((p2, true))
                }
                Some(crate::lower::VarLoc::Shared(o)) => {
                    let sb = self.shared_base();
                    let p2 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {sb}, i64 {}", o as i64 + off));
                    Ok((p2, true))
                }
                Some(crate::lower::VarLoc::DynShared) => {
                    let o = self.ctx_field(offsets::DYNAMIC_SHARED_OFFSET, Ty::I32);
                    let o = self.out.def_scalar(Ty::I64, format_args!("zext {o} to i64"));
                    let sb = self.shared_base();
                    let p1 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {sb}, {o}"));
                    let p2 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p1}, i64 {off}"));
                    Ok((p2, true))
                }
                None => self.invalid(format!("`{}` is not addressable", self.f.var(v).name)),
            },
            AddrBase::Global(s) => {
                let a = self.symbol_address_value(s)?;
                if a.ty == Ty::Ptr {
                    let p2 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {a}, i64 {off}"));
                    return Ok((p2, true));
                }
                // A shared variable's window offset (uniform).
                let a = if a.lanes > 1 { self.lane0(&a) } else { a };
                let sb = self.shared_base();
                let p1 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {sb}, {a}"));
                let p2 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p1}, i64 {off}"));
                Ok((p2, true))
            }
            AddrBase::None => {
                if shared {
                    let sb = self.shared_base();
                    let p2 = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {sb}, i64 {off}"));
                    return Ok((p2, true));
                }
                // An absolute address: per lane, so that masked-off lanes do
                // not touch it.
                let base = if local { V::scalar(Ty::I64, "%lbase") } else { V::scalar(Ty::I64, "0") };
                let a = self.bin("add", &base, &V::int(Ty::I64, off as i128));
                Ok((self.out.def(Ty::Ptr, format_args!("inttoptr {a} to <{W} x ptr>")), false))
            }
            AddrBase::Reg(r) => {
                let v = self.load_reg(r);
                let v64 = self.convert(v, Ty::I64, false);
                let a = self.bin("add", &v64, &V::int(Ty::I64, off as i128));
                if shared {
                    let sb = self.shared_base();
                    return Ok((self.out.def(Ty::Ptr, format_args!("getelementptr i8, {sb}, {a}")), false));
                }
                let a = if local { self.bin("add", &a, &V::scalar(Ty::I64, "%lbase")) } else { a };
                Ok((self.out.def(Ty::Ptr, format_args!("inttoptr {a} to <{W} x ptr>")), false))
            }
        }
    }

    /// How the lanes of address register `r` lie for accesses of `size`
    /// bytes. Every lane is compared, executing or not, so the shape holds
    /// for any mask, and for the register plus any constant offset; a
    /// register whose lane stride is 0 or `size` (`crate::affine`) needs no
    /// comparing while its affine bit holds.
    fn address_layout(&mut self, r: RegId, size: u32) -> Layout {
        if self.uniform_reg(r) {
            // One address for the whole warp, known when compiling.
            return Layout {
                shape: V::scalar(Ty::I32, SHAPE_HALVES_UNIFORM.to_string()),
                lane16: Some(V::scalar(Ty::I64, "0")),
                warp_uniform: true,
            };
        }
        if let Some(l) = self.warp.as_ref().and_then(|w| w.shapes.get(&(r, size)).cloned()) {
            return l;
        }
        let stride = self.stride(r).filter(|&s| s == 0 || s == i64::from(size));
        if let Some(s) = stride.filter(|_| self.warp.as_ref().is_some_and(|w| w.assumed.contains(&r))) {
            // The region's entry checked the bit (`lower_versioned`).
            let shape = V::scalar(Ty::I32, if s == 0 { SHAPE_HALVES_UNIFORM } else { SHAPE_HALVES_CONSECUTIVE }.to_string());
            let half_apart = self.lane_distance(r);
            let lane16 = self.out.def_scalar(Ty::I64, format_args!("select i1 %aff.whole, i64 {}, {}", 16 * s, half_apart));
            let layout = Layout { shape, lane16: Some(lane16), warp_uniform: false };
            if let Some(w) = self.warp.as_mut() {
                w.shapes.insert((r, size), layout.clone());
            }
            return layout;
        }
        let known = match stride {
            Some(s) => self.affine_bit(r).map(|bit| (bit, s)),
            None => None,
        };
        let layout = match known {
            Some((bit, s)) => {
                let ok = self.affine_address(r, bit, s, None);
                let known_shape = if s == 0 { SHAPE_HALVES_UNIFORM } else { SHAPE_HALVES_CONSECUTIVE };
                let (fv, hv, sv, j) =
                    (self.out.fresh_label("aff"), self.out.fresh_label("affh"), self.out.fresh_label("cls"), self.out.fresh_label("shj"));
                self.out.terminate(format_args!("br {ok}, label %{fv}, label %{sv}"));
                // Lane 16 follows lane 0 when the warp is affine as a whole;
                // otherwise (rows of a half warp) it starts its own half.
                self.out.label(&fv);
                self.out.terminate(format_args!("br i1 %aff.whole, label %{j}, label %{hv}"));
                self.out.label(&hv);
                let half_apart = self.lane_distance(r);
                self.out.terminate(format_args!("br label %{j}"));
                self.out.label(&sv);
                self.strict_affine_trap();
                let looked = self.lane_shape(r, size);
                let apart = self.lane_distance(r);
                self.out.terminate(format_args!("br label %{j}"));
                self.out.label(&j);
                let shape = self
                    .out
                    .def_scalar(Ty::I32, format_args!("phi i32 [{known_shape}, %{fv}], [{known_shape}, %{hv}], [{}, %{sv}]", looked.s));
                let lane16 = self
                    .out
                    .def_scalar(Ty::I64, format_args!("phi i64 [{}, %{fv}], [{}, %{hv}], [{}, %{sv}]", 16 * s, half_apart.s, apart.s));
                Layout { shape, lane16: Some(lane16), warp_uniform: false }
            }
            None => Layout { shape: self.lane_shape(r, size), lane16: None, warp_uniform: false },
        };
        if let Some(w) = self.warp.as_mut() {
            w.shapes.insert((r, size), layout.clone());
        }
        layout
    }

    /// How far lane 16's value of register `r` lies from lane 0's, as
    /// 64-bit addresses (zero-extended, like `warp_address`).
    fn lane_distance(&mut self, r: RegId) -> V {
        let v = self.load_reg(r);
        let v = self.convert(v, Ty::I64, false);
        let x0 = self.lane0(&v);
        let x16 = self.out.def_scalar(Ty::I64, format_args!("extractelement {v}, i32 16"));
        self.out.def_scalar(Ty::I64, format_args!("sub {x16}, {}", x0.s))
    }

    /// The shape of register `r`'s lanes from the lanes themselves (or
    /// from the frame, for a frame-resident register).
    fn lane_shape(&mut self, r: RegId, size: u32) -> V {
        match self.warp.as_ref().and_then(|w| w.resident_shapes.get(&(r, size)).copied()) {
            Some(offset) => {
                let q = self.frame_ptr(offset);
                self.out.def_scalar(Ty::I32, format_args!("load i32, ptr {q}, align 4"))
            }
            None => {
                let v = self.load_reg(r);
                self.classify_lanes(v, size)
            }
        }
    }

    /// The addresses of lanes 0 and 16 of an access of `layout` (lane 16's
    /// from lane 0's when the register has a lane stride: no vector of
    /// addresses is needed for it).
    fn half_bases(&mut self, ptrs: &V, layout: &Layout) -> (V, V) {
        let p0 = self.out.def_scalar(Ty::Ptr, format_args!("extractelement {ptrs}, i32 0"));
        let p16 = match &layout.lane16 {
            Some(d) => self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p0}, {d}")),
            None => self.out.def_scalar(Ty::Ptr, format_args!("extractelement {ptrs}, i32 16")),
        };
        (p0, p16)
    }

    /// [`Self::address_layout`]'s shape of a register value.
    fn classify_lanes(&mut self, v: V, size: u32) -> V {
        let a = self.convert(v, Ty::I64, false);
        let halves: Vec<String> = (0..W).map(|i| format!("i32 {}", if i < 16 { 0 } else { 16 })).collect();
        let half = self.out.def(Ty::I64, format_args!("shufflevector {a}, <{W} x i64> poison, <{W} x i32> <{}>", halves.join(", ")));
        let d = self.bin("sub", &a, &half);
        let steps: Vec<String> = (0..W).map(|i| format!("i64 {}", (i % 16) * size)).collect();
        let consecutive = self.icmp("eq", &d, &V::new(Ty::I64, format!("<{}>", steps.join(", "))));
        let consecutive = self.all(&consecutive);
        let uniform = self.icmp("eq", &d, &V::int(Ty::I64, 0));
        let uniform = self.all(&uniform);
        let u = self.out.def_scalar(Ty::I32, format_args!("select {uniform}, i32 {SHAPE_HALVES_UNIFORM}, i32 {SHAPE_SCATTERED}"));
        self.out.def_scalar(Ty::I32, format_args!("select {consecutive}, i32 {SHAPE_HALVES_CONSECUTIVE}, {u}"))
    }

    /// Writes the address shapes of a frame-resident register's new value
    /// to their header slots.
    pub fn store_resident_shapes(&mut self, r: RegId, v: &V) {
        let slots: Vec<(u32, u32)> = match self.warp.as_ref() {
            Some(w) if !w.resident_shapes.is_empty() => {
                w.resident_shapes.iter().filter(|((reg, _), _)| *reg == r).map(|(&(_, size), &offset)| (size, offset)).collect()
            }
            _ => return,
        };
        for (size, offset) in slots {
            // An access of this size reads the shape only where the
            // register's affine bit fails it (`address_layout`): classify
            // the lanes only then. (In llama.cpp's `mul_mat_vec_f`, whose
            // shared-memory address `4 * tid` is written once per warp,
            // the classification was a tenth of the code before the loop.)
            let known = match self.stride(r) {
                Some(s) if s == 0 || s == i64::from(size) => self.affine_bit(r).map(|bit| (bit, s)),
                _ => None,
            };
            let skip = known.map(|(bit, s)| {
                let ok = self.affine_address(r, bit, s, Some(v));
                let (look, done) = (self.out.fresh_label("rsh"), self.out.fresh_label("rshj"));
                self.out.terminate(format_args!("br {ok}, label %{done}, label %{look}"));
                self.out.label(&look);
                done
            });
            let shape = self.classify_lanes(v.clone(), size);
            let q = self.frame_ptr(offset);
            self.out.op(format_args!("store {shape}, ptr {q}, align 4"));
            if let Some(done) = skip {
                self.out.terminate(format_args!("br label %{done}"));
                self.out.label(&done);
            }
        }
    }

    /// How an address operand's lanes lie, when its base is a register.
    fn operand_layout(&mut self, op: &Operand, size: u32) -> Option<Layout> {
        match op.address()? {
            (AddrBase::Reg(r), _) => Some(self.address_layout(r, size)),
            _ => None,
        }
    }

    /// The lanes of `m` in the low (`false`) or high half warp, as a
    /// `<16 x i1>`.
    fn half_mask(&mut self, m: &V, high: bool) -> String {
        let idx: Vec<String> = (0..16).map(|i| format!("i32 {}", i + if high { 16 } else { 0 })).collect();
        let h = self.out.fresh("half");
        self.out.op(format_args!("{h} = shufflevector {m}, <{W} x i1> poison, <16 x i32> <{}>", idx.join(", ")));
        h
    }

    /// Whether a load from `space` in the current block gets a
    /// [`Self::stride_prefetch`]: in a loop, from global, constant or
    /// generic memory, on a target where it pays, in the optimised tier.
    /// The fast tier's code runs a kernel's first launches only (it is
    /// replaced once they have run about three times its compile time,
    /// `jit::TIER_UP_WARP_COMPILE_RATIO`), and the prefetch's twenty-odd
    /// instructions per load were a fifth of the IR of llama.cpp's warp-mode
    /// `mul_mat_vec_q` kernels (most of them lookups into quantisation
    /// tables, whose lane 0 moves by no stride at all).
    fn stride_prefetches(&self, space: Option<StateSpace>) -> bool {
        let in_loop = self.warp.as_ref().is_some_and(|w| w.in_loop.get(w.block as usize).copied().unwrap_or(false));
        in_loop
            && self.cx.facts.prefetch
            && self.cx.opts.tier == crate::Tier::Optimized
            && matches!(space, None | Some(StateSpace::Global | StateSpace::Const))
    }

    /// Prefetches what a load in a loop will read some iterations ahead,
    /// from the distance lane 0's address moved since the last iteration.
    /// A warp runs a whole loop before the next warp starts, so the loop of
    /// a grid-stride kernel jumps by the grid's width every iteration: too
    /// far for the hardware's prefetchers, which then leave every load a
    /// miss to memory. `bytes`: what the warp reads per iteration.
    fn stride_prefetch(&mut self, ptrs: &V, bytes: u32) {
        const ITERATIONS_AHEAD: u32 = 16;
        const SAME_SET_AHEAD: u32 = 8;
        const NEAR: i64 = 1 << 20;
        let k = self.warp.as_mut().map_or(0, |w| {
            w.prefetch_slots += 1;
            w.prefetch_slots
        });
        let slot = format!("%pf.slot{k}");
        // The first iteration sees a distance from 0: far, so no prefetch.
        let _ = writeln!(self.out.allocas, "  {slot} = alloca i64, align 8");
        let _ = writeln!(self.out.allocas, "  store i64 0, ptr {slot}, align 8");
        self.cx.declare("llvm.prefetch.p0", "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)");
        let p0 = self.out.def_scalar(Ty::Ptr, format_args!("extractelement {ptrs}, i32 0"));
        let cur = self.out.def_scalar(Ty::I64, format_args!("ptrtoint {p0} to i64"));
        // The slot stays in memory (volatile: not promoted to a register).
        // Promoted, its value was live through the whole function (the
        // warps' chaining loop carries it) with a phi at every join: 577
        // phis in llama.cpp's `mul_mat_q_stream_k_fixup` for 21 sites.
        let last = self.out.def_scalar(Ty::I64, format_args!("load volatile i64, ptr {slot}, align 8"));
        self.out.op(format_args!("store volatile {cur}, ptr {slot}, align 8"));
        let stride = self.out.def_scalar(Ty::I64, format_args!("sub {cur}, {}", last.s));
        let biased = self.out.def_scalar(Ty::I64, format_args!("add {stride}, {NEAR}"));
        let near = self.out.def_scalar(Ty::I1, format_args!("icmp ult {biased}, {}", 2 * NEAR));
        // A stride of whole 4 KiB pages puts every line in one set of the
        // level-1 cache (12 or fewer ways): a line fetched further ahead
        // than that would be gone again when the load comes.
        let low = self.out.def_scalar(Ty::I64, format_args!("and {stride}, 4095"));
        let paged = self.out.def_scalar(Ty::I1, format_args!("icmp eq {low}, 0"));
        // Powers of two: the distance is a shift of the stride.
        let shift = self.out.def_scalar(
            Ty::I64,
            format_args!("select {paged}, i64 {}, i64 {}", SAME_SET_AHEAD.trailing_zeros(), ITERATIONS_AHEAD.trailing_zeros()),
        );
        let ahead = self.out.def_scalar(Ty::I64, format_args!("shl {stride}, {}", shift.s));
        let dist = self.out.def_scalar(Ty::I64, format_args!("select {near}, {ahead}, i64 0"));
        let target = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p0}, {dist}"));
        // Twice what this warp reads: the next warp's loop (the block's
        // next 32 threads, or the next block's first) reads the lines
        // after this warp's at each iteration, and would otherwise miss on
        // its first ITERATIONS_AHEAD iterations, which no prefetch covers
        // (the distance is known from the second iteration on). Measured
        // on the program suite's grid-stride `reduce` (16M floats, a 512
        // KiB stride, 128 iterations per warp; optimised tier, median of
        // 50, alternating): 3.0-3.4 -> 2.0-2.2 ms; stencil, scan_shfl and
        // histogram unchanged.
        for line in 0..(2 * bytes).div_ceil(64).clamp(1, 4) {
            let at = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {target}, i64 {}", line * 64));
            self.out.op(format_args!("call void @llvm.prefetch.p0({at}, i32 0, i32 3, i32 1)"));
        }
    }

    /// Whether a gather or scatter of `ety`'s elements stays inline: where
    /// the target has the instruction (`TargetFacts::inline_gathers`: AVX-512
    /// gathers and scatters 32- and 64-bit elements only). LLVM expands a
    /// 32-lane access of 8- or 16-bit elements into a test, branch and
    /// scalar access per lane, so those call the shared helper on every
    /// host: inline, the 32 16-bit scatters of llama.cpp's bf16 `mul_mat_f`
    /// were a third of its code generation time (1.76 s against 1.15 s
    /// without them, `llc -O1`, AVX-512 host).
    fn inline_gather(&self, ety: Ty) -> bool {
        self.cx.facts.inline_gathers && ety.bits() >= 32
    }

    /// A masked gather (`intrinsic`, declared) of `ptrs` under `mask`: the
    /// intrinsic inline where the target gathers in one instruction,
    /// otherwise a call of one shared helper per type and alignment (see
    /// [`Self::inline_gather`]).
    fn gather(&mut self, intrinsic: &str, ptrs: &V, mask: &V, ety: Ty, align: u32) -> V {
        if self.inline_gather(ety) {
            return self.out.def(ety, format_args!("call {ety} @{intrinsic}({ptrs}, i32 {align}, {mask}, {ety} poison)"));
        }
        let name = format!("__anycuda_wgather_{}_a{align}", ety.suffix());
        self.cx.helper(&name, || lane_by_lane_helper(&name, ety.name(), align, false));
        self.out.def(ety, format_args!("call {ety} @{name}({ptrs}, {mask})"))
    }

    /// A masked load (`intrinsic`, declared) of `wide` elements of `ety`'s
    /// type at `p` under the `<wide x i1>` mask `mask`, as a value name.
    /// Elements of 8 or 16 bits on a target without masked loads of them
    /// (`TargetFacts::inline_gathers` false: AVX2 has them for 32 and 64
    /// bits only, and LLVM expands the rest into a test and branch per
    /// element) call one shared helper, which loads the whole vector
    /// unmasked when some element is loaded and the vector lies within
    /// one 4 KiB page (an element loaded maps that page, so no byte of it
    /// can fault; the other elements' values are never used), and falls
    /// back to the masked load otherwise.
    fn masked_half_load(&mut self, intrinsic: &str, p: &V, mask: &str, wide: u32, ety: Ty, align: u32) -> String {
        let t = ety.name();
        let x = self.out.fresh("vl");
        if self.cx.facts.inline_gathers || ety.bits() >= 32 {
            self.out
                .op(format_args!("{x} = call <{wide} x {t}> @{intrinsic}({p}, i32 {align}, <{wide} x i1> {mask}, <{wide} x {t}> poison)"));
            return x;
        }
        let bytes = wide * ety.bits() / 8;
        let name = format!("__anycuda_wmaskload_v{wide}{}_a{align}", ety.scalar_suffix());
        let or = format!("llvm.vector.reduce.or.v{wide}i1");
        self.cx.declare(&or, &format!("declare i1 @{or}(<{wide} x i1>)"));
        let text = format!(
            "define internal <{wide} x {t}> @{name}(ptr %p, <{wide} x i1> %m) noinline nounwind {{
entry:
  %any = call i1 @{or}(<{wide} x i1> %m)
  %a = ptrtoint ptr %p to i64
  %in = and i64 %a, 4095
  %end = add i64 %in, {bytes}
  %fits = icmp ule i64 %end, 4096
  %whole = and i1 %any, %fits
  br i1 %whole, label %plain, label %masked
plain:
  %v = load <{wide} x {t}>, ptr %p, align {align}
  ret <{wide} x {t}> %v
masked:
  %w = call <{wide} x {t}> @{intrinsic}(ptr %p, i32 {align}, <{wide} x i1> %m, <{wide} x {t}> poison)
  ret <{wide} x {t}> %w
}}
"
        );
        self.cx.helper(&name, || text);
        self.out.op(format_args!("{x} = call <{wide} x {t}> @{name}({p}, <{wide} x i1> {mask})"));
        x
    }

    /// A masked scatter (`intrinsic`, declared) of `v` to `ptrs` under
    /// `mask`, inline or through a shared helper as [`Self::gather`].
    fn scatter(&mut self, intrinsic: &str, v: &V, ptrs: &V, mask: &V, align: u32) {
        if self.inline_gather(v.ty) {
            self.out.op(format_args!("call void @{intrinsic}({v}, {ptrs}, i32 {align}, {mask})"));
            return;
        }
        let ety = v.ty;
        let name = format!("__anycuda_wscatter_{}_a{align}", ety.suffix());
        self.cx.helper(&name, || lane_by_lane_helper(&name, ety.name(), align, true));
        self.out.op(format_args!("call void @{name}({v}, {ptrs}, {mask})"));
    }

    /// Loads through a warp-uniform address register: `n` components of
    /// `size` bytes, each loaded once if some lane executes, for every lane.
    fn warp_uniform_load(&mut self, ptrs: &V, mask: &V, ety: Ty, size: u32, n: u32) -> Vec<V> {
        let t = ety.name();
        let st = ety.scalar_suffix();
        let l1 = format!("llvm.masked.load.v1{st}.p0");
        self.cx.declare(&l1, &format!("declare <1 x {t}> @{l1}(ptr, i32, <1 x i1>, <1 x {t}>)"));
        let any = self.any(mask);
        let one = self.out.def_scalar(Ty::I1, format_args!("insertelement <1 x i1> poison, {any}, i32 0"));
        let p0 = self.out.def_scalar(Ty::Ptr, format_args!("extractelement {ptrs}, i32 0"));
        (0..n)
            .map(|k| {
                let pk = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p0}, i64 {}", k * size));
                let x = self.out.fresh("u");
                self.out.op(format_args!("{x} = call <1 x {t}> @{l1}({pk}, i32 {}, <1 x i1> {}, <1 x {t}> poison)", size.min(16), one.s));
                let s = self.out.def_scalar(ety, format_args!("extractelement <1 x {t}> {x}, i32 0"));
                self.vec(s)
            })
            .collect()
    }

    /// Loads by a register address of known shape, `n` components of
    /// `size` bytes per lane (`ld.v2`/`.v4`: the shape is for a lane stride
    /// of `n * size`): two 16-lane vector loads split into components
    /// (masked only when some lane does not execute), scalar loads per half
    /// warp, or gathers, chosen by the shape.
    fn shaped_load(&mut self, ptrs: &V, layout: &Layout, ety: Ty, size: u32, n: u32) -> Vec<V> {
        let mask = self.mask();
        if layout.warp_uniform {
            return self.warp_uniform_load(ptrs, &mask, ety, size, n);
        }
        let (p0, p16) = self.half_bases(ptrs, layout);
        let access = Shaped { ptrs: ptrs.clone(), mask, shape: layout.shape.clone(), p0, p16 };
        self.shaped_load_paths(&access, ety, size, n)
    }

    /// Whether shaped loads and stores learn their addresses' shape when
    /// compiling (affine registers, versioned regions) and choose their
    /// path inline (the optimised tier), or call a shared helper per type
    /// that classifies the lanes' addresses and chooses at run time (the
    /// fast tier). Inline, the shape's computation and the paths (three
    /// for a load, two for a store, each with a masked variant) were
    /// about half of the fast tier's code generation time in warp kernels
    /// with many accesses: llama.cpp's 72 warp-mode `mul_mat_f` kernels
    /// (AVX-512 host) 51.7 s, 24.1 s with a plain gather or scatter
    /// instead; `mul_mat_q_stream_k_fixup` 245 -> 145 ms. The helper
    /// costs the fast tier's code a call and a classification per access;
    /// the optimised tier, which hot kernels reach, keeps them inline.
    fn shaped_inline(&self) -> bool {
        self.cx.opts.tier == crate::Tier::Optimized
    }

    /// Whether an access through `address` learns its shape at run time,
    /// in the fast tier's helper: a register not the same for the whole
    /// warp, nor assumed affine in a versioned region (whose shape is
    /// known when compiling: one path, inline).
    fn shape_at_run_time(&mut self, address: &Operand) -> bool {
        match address.address() {
            Some((AddrBase::Reg(r), _)) => {
                !self.shaped_inline() && !self.uniform_reg(r) && !self.warp.as_ref().is_some_and(|w| w.assumed.contains(&r))
            }
            _ => false,
        }
    }

    /// What the fast tier's helper is told of an access's shape through
    /// register address `address` with a lane stride of `stride` bytes
    /// (an i32 scalar): [`SHAPE_HALVES_CONSECUTIVE`] when the register has
    /// that lane stride and the warp holds its affine bit (as a whole, and
    /// a 32-bit address widens without wrap, as `address_layout` asks),
    /// so that the helper goes straight to the consecutive path; -1 (look
    /// at the lanes) otherwise. Classifying every access's lanes in the
    /// helper made the program suite's shared-memory stencil run 1.65
    /// times as long in the fast tier as with the paths inline (1.45 times
    /// with the hint); the consecutive path inline beside the call (1.35
    /// times) gave back a quarter to two fifths of what the helper saves
    /// in compile time.
    fn shape_hint(&mut self, address: &Operand, stride: u32) -> V {
        let known = match address.address() {
            Some((AddrBase::Reg(r), _)) if self.stride(r) == Some(i64::from(stride)) => self.affine_bit(r).map(|bit| (r, bit)),
            _ => None,
        };
        let Some((r, bit)) = known else { return V::scalar(Ty::I32, "-1") };
        let mut cond = self.out.def_scalar(Ty::I1, format_args!("and {bit}, %aff.whole"));
        if self.reg_tys[r as usize] == Ty::I32 {
            let v = self.load_reg(r);
            let fits = self.lanes_widen(&v, i64::from(stride), false);
            cond = self.out.def_scalar(Ty::I1, format_args!("and {cond}, {}", fits.s));
        }
        self.out.def_scalar(Ty::I32, format_args!("select {cond}, i32 {SHAPE_HALVES_CONSECUTIVE}, i32 -1"))
    }

    /// A load of `n` components of `size` bytes per lane through the fast
    /// tier's helper (see [`Self::shaped_inline`]), with the shape `hint`
    /// of [`Self::shape_hint`].
    fn shaped_load_call(&mut self, ptrs: &V, hint: &V, ety: Ty, size: u32, n: u32) -> Vec<V> {
        let t = ety.name();
        let ret = if n == 1 { format!("<{W} x {t}>") } else { format!("{{ {} }}", vec![format!("<{W} x {t}>"); n as usize].join(", ")) };
        let name = format!("__anycuda_wld_shaped_{}_s{size}_n{n}", ety.scalar_suffix());
        let call = self.shaped_helper(&name, &ret, ptrs, hint, &[], size * n, |this, a, _| {
            let values = this.shaped_load_paths(a, ety, size, n);
            shaped_return(&mut this.out, &ret, &values);
        });
        let r = self.out.fresh("shl");
        self.out.op(format_args!("{r} = call {ret} {call}"));
        if n == 1 {
            return vec![V::new(ety, r)];
        }
        (0..n).map(|k| self.out.def(ety, format_args!("extractvalue {ret} {r}, {k}"))).collect()
    }

    /// A store of `values` (components of `size` bytes per lane) through
    /// the fast tier's helper (see [`Self::shaped_inline`]), with the
    /// shape `hint` of [`Self::shape_hint`].
    fn shaped_store_call(&mut self, ptrs: &V, hint: &V, values: &[V], size: u32) {
        let Some(first) = values.first() else { return };
        let ety = first.ty;
        let n = values.len() as u32;
        let name = format!("__anycuda_wst_shaped_{}_s{size}_n{n}", ety.scalar_suffix());
        let extra: Vec<(String, V)> = values.iter().enumerate().map(|(k, v)| (format!("v{k}"), v.clone())).collect();
        let call = self.shaped_helper(&name, "void", ptrs, hint, &extra, size * n, |this, a, vals| {
            this.shaped_store_paths(a, vals, size);
            this.out.terminate(format_args!("ret void"));
        });
        self.out.op(format_args!("call void {call}"));
    }

    /// Emits (once per module) the helper `name`, which learns the shape
    /// of the lanes' addresses (`%p`, a lane stride of `stride` bytes)
    /// from the hint (`%hint`, [`Self::shape_hint`]) or else from the
    /// lanes, and runs what `body` writes with them and the executing
    /// lanes (`%m`) as its operands; `extra`: more parameters (name,
    /// argument), which `body` receives as values. Returns the callee and
    /// arguments of its call.
    #[allow(clippy::too_many_arguments)]
    fn shaped_helper(
        &mut self,
        name: &str,
        ret: &str,
        ptrs: &V,
        hint: &V,
        extra: &[(String, V)],
        stride: u32,
        body: impl FnOnce(&mut Self, &Shaped, &[V]),
    ) -> String {
        let values: Vec<V> = extra.iter().map(|(pname, v)| V::new(v.ty, format!("%{pname}"))).collect();
        let declared: Vec<String> = values.iter().map(|v| format!(", {v}")).collect();
        let params = format!("<{W} x ptr> %p, <{W} x i1> %m, i32 %hint{}", declared.concat());
        self.define_helper(name, ret, &params, |this| {
            let p = V::new(Ty::Ptr, "%p");
            let p0 = this.out.def_scalar(Ty::Ptr, format_args!("extractelement {p}, i32 0"));
            // A hinted shape: lane 16 (which may have exited with an older
            // value) lies 16 strides on.
            let (known, look, join) = (this.out.fresh_label("hint"), this.out.fresh_label("look"), this.out.fresh_label("shape"));
            let hinted = this.out.def_scalar(Ty::I1, format_args!("icmp sge i32 %hint, 0"));
            this.out.terminate(format_args!("br {hinted}, label %{known}, label %{look}"));
            this.out.label(&known);
            let q16 = this.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p0}, i64 {}", 16 * stride));
            this.out.terminate(format_args!("br label %{join}"));
            this.out.label(&look);
            let lanes = this.out.def(Ty::I64, format_args!("ptrtoint {p} to <{W} x i64>"));
            let looked = this.classify_lanes(lanes, stride);
            let l16 = this.out.def_scalar(Ty::Ptr, format_args!("extractelement {p}, i32 16"));
            this.out.terminate(format_args!("br label %{join}"));
            this.out.label(&join);
            let shape = this.out.def_scalar(Ty::I32, format_args!("phi i32 [%hint, %{known}], [{}, %{look}]", looked.s));
            let p16 = this.out.def_scalar(Ty::Ptr, format_args!("phi ptr [{}, %{known}], [{}, %{look}]", q16.s, l16.s));
            let params = Shaped { ptrs: p, mask: V::new(Ty::I1, "%m"), shape, p0, p16 };
            body(this, &params, &values);
        });
        let args: Vec<String> = extra.iter().map(|(_, v)| format!(", {v}")).collect();
        let mask = self.mask();
        format!("@{name}({ptrs}, {mask}, {hint}{})", args.concat())
    }

    /// The paths of a shaped load: one vector load per half warp when the
    /// halves are consecutive (masked when some lane does not execute),
    /// scalar loads per half when they are uniform, gathers otherwise.
    fn shaped_load_paths(&mut self, a: &Shaped, ety: Ty, size: u32, n: u32) -> Vec<V> {
        let Shaped { ptrs, mask, shape, p0, p16 } = a;
        let sfx = ety.suffix();
        let t = ety.name();
        let g = format!("llvm.masked.gather.{sfx}.v{W}p0");
        self.cx.declare(&g, &format!("declare {ety} @{g}(<{W} x ptr>, i32, <{W} x i1>, {ety})"));
        let st = ety.scalar_suffix();
        let wide = 16 * n;
        let lw = format!("llvm.masked.load.v{wide}{st}.p0");
        self.cx.declare(&lw, &format!("declare <{wide} x {t}> @{lw}(ptr, i32, <{wide} x i1>, <{wide} x {t}>)"));
        let l1 = format!("llvm.masked.load.v1{st}.p0");
        self.cx.declare(&l1, &format!("declare <1 x {t}> @{l1}(ptr, i32, <1 x i1>, <1 x {t}>)"));
        let (lo, hi) = (self.half_mask(mask, false), self.half_mask(mask, true));
        let (cv, uv, gv, j) =
            (self.out.fresh_label("hld"), self.out.fresh_label("uld"), self.out.fresh_label("gld"), self.out.fresh_label("ldj"));
        self.out.terminate(format_args!(
            "switch {shape}, label %{gv} [ i32 {SHAPE_HALVES_CONSECUTIVE}, label %{cv} i32 {SHAPE_HALVES_UNIFORM}, label %{uv} ]"
        ));
        let align = size.min(16);
        let list = |items: &mut dyn Iterator<Item = u32>| items.map(|i| format!("i32 {i}")).collect::<Vec<_>>().join(", ");
        let concat = list(&mut (0..W));
        // Consecutive halves: one vector load per half warp (each lane's
        // components side by side), then the components apart.
        self.out.label(&cv);
        let repeat = list(&mut (0..wide).map(|e| e / n));
        let (plain, masked, joined) = self.branch_on_full(mask);
        // Component k of lane i is element i * n + k of its half's vector.
        let components = |this: &mut Self, lo: &str, hi: &str| -> Vec<V> {
            (0..n)
                .map(|k| {
                    let idx = list(&mut (0..W).map(|i| if i < 16 { i * n + k } else { wide + (i - 16) * n + k }));
                    this.out.def(ety, format_args!("shufflevector <{wide} x {t}> {lo}, <{wide} x {t}> {hi}, <{W} x i32> <{idx}>"))
                })
                .collect()
        };
        // Every lane executing: one plain load per half. (Halves side by
        // side need no load of their own: LLVM splits a whole warp's load
        // into the same two or four register loads.)
        let mut apart = Vec::new();
        for p in [p0, p16] {
            let x = self.out.fresh("vp");
            self.out.op(format_args!("{x} = load <{wide} x {t}>, {p}, align {align}"));
            apart.push(x);
        }
        let apart = components(self, &apart[0], &apart[1]);
        self.out.terminate(format_args!("br label %{joined}"));
        self.out.label(&masked);
        let mut loaded = Vec::new();
        for (p, m) in [(p0, &lo), (p16, &hi)] {
            let mr = self.out.fresh("mrep");
            self.out.op(format_args!("{mr} = shufflevector <16 x i1> {m}, <16 x i1> poison, <{wide} x i32> <{repeat}>"));
            let x = self.masked_half_load(&lw, p, &mr, wide, ety, align);
            loaded.push(x);
        }
        let loaded = components(self, &loaded[0], &loaded[1]);
        self.out.terminate(format_args!("br label %{joined}"));
        self.out.label(&joined);
        let consecutive: Vec<V> = (0..n as usize)
            .map(|k| self.out.def(ety, format_args!("phi {ety} [{}, %{plain}], [{}, %{masked}]", apart[k].s, loaded[k].s)))
            .collect();
        self.out.terminate(format_args!("br label %{j}"));
        // Uniform halves: scalar loads per half that has executing lanes.
        self.out.label(&uv);
        // Whether each half has an executing lane.
        let mut anys = Vec::new();
        for half in self.half_bits(mask) {
            let any = self.out.def_scalar(Ty::I1, format_args!("icmp ne {half}, 0"));
            let one = self.out.fresh("one");
            self.out.op(format_args!("{one} = insertelement <1 x i1> poison, {any}, i32 0"));
            anys.push(one);
        }
        let mut uniform = Vec::new();
        for k in 0..n {
            let mut halves = Vec::new();
            for (p, one) in [(p0, &anys[0]), (p16, &anys[1])] {
                let pk = self.out.fresh("pk");
                self.out.op(format_args!("{pk} = getelementptr i8, {p}, i64 {}", k * size));
                let x = self.out.fresh("u");
                self.out.op(format_args!("{x} = call <1 x {t}> @{l1}(ptr {pk}, i32 {align}, <1 x i1> {one}, <1 x {t}> poison)"));
                let splat = self.out.fresh("us");
                self.out.op(format_args!("{splat} = shufflevector <1 x {t}> {x}, <1 x {t}> poison, <16 x i32> zeroinitializer"));
                halves.push(splat);
            }
            uniform.push(
                self.out.def(ety, format_args!("shufflevector <16 x {t}> {}, <16 x {t}> {}, <{W} x i32> <{concat}>", halves[0], halves[1])),
            );
        }
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&gv);
        let mut gathered = Vec::new();
        for k in 0..n {
            let pk = self.component_pointer(ptrs, false, size, k as usize);
            gathered.push(self.gather(&g, &pk, mask, ety, align));
        }
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&j);
        (0..n as usize)
            .map(|k| {
                self.out.def(
                    ety,
                    format_args!("phi {ety} [{}, %{joined}], [{}, %{uv}], [{}, %{gv}]", consecutive[k].s, uniform[k].s, gathered[k].s),
                )
            })
            .collect()
    }

    /// Stores by a register address of known shape, `n` components of
    /// `size` bytes per lane (the shape is for a lane stride of
    /// `n * size`): one vector store per half warp with each lane's
    /// components side by side when the halves are consecutive (masked
    /// only when some lane does not execute), the last executing lane's
    /// value per half when each half has one address, scatters otherwise
    /// (lanes of one address store in lane order).
    fn shaped_store(&mut self, ptrs: &V, layout: &Layout, values: &[V], size: u32) {
        let mask = self.mask();
        let (p0, p16) = self.half_bases(ptrs, layout);
        let access = Shaped { ptrs: ptrs.clone(), mask, shape: layout.shape.clone(), p0, p16 };
        self.shaped_store_paths(&access, values, size);
    }

    /// The paths of a shaped store: one vector store per half warp with
    /// each lane's components side by side when the halves are consecutive
    /// (masked only when some lane does not execute), one scalar store per
    /// half when each half has one address, scatters otherwise.
    fn shaped_store_paths(&mut self, a: &Shaped, values: &[V], size: u32) {
        let Shaped { ptrs, mask, shape, p0, p16 } = a;
        let Some(first) = values.first() else { return };
        let ety = first.ty;
        let n = values.len() as u32;
        let wide = 16 * n;
        let sfx = ety.suffix();
        let t = ety.name();
        let s = format!("llvm.masked.scatter.{sfx}.v{W}p0");
        self.cx.declare(&s, &format!("declare void @{s}({ety}, <{W} x ptr>, i32, <{W} x i1>)"));
        let sw = format!("llvm.masked.store.v{wide}{}.p0", ety.scalar_suffix());
        self.cx.declare(&sw, &format!("declare void @{sw}(<{wide} x {t}>, ptr, i32, <{wide} x i1>)"));
        let (cv, uv, gv, j) =
            (self.out.fresh_label("hst"), self.out.fresh_label("ust"), self.out.fresh_label("sst"), self.out.fresh_label("stj"));
        self.out.terminate(format_args!(
            "switch {shape}, label %{gv} [ i32 {SHAPE_HALVES_CONSECUTIVE}, label %{cv} i32 {SHAPE_HALVES_UNIFORM}, label %{uv} ]"
        ));
        let align = size.min(16);
        let list = |items: &mut dyn Iterator<Item = u32>| items.map(|i| format!("i32 {i}")).collect::<Vec<_>>().join(", ");
        self.out.label(&cv);
        // Every component in one vector, component after component.
        let mut parts: Vec<(String, u32)> = values.iter().map(|v| (v.s.clone(), W)).collect();
        while parts.len() > 1 {
            let mut joined = Vec::new();
            for pair in parts.chunks(2) {
                match pair {
                    [(a, la), (b, lb)] => {
                        let c = self.out.fresh("cat");
                        let idx = list(&mut (0..la + lb));
                        self.out.op(format_args!("{c} = shufflevector <{la} x {t}> {a}, <{lb} x {t}> {b}, <{} x i32> <{idx}>", la + lb));
                        joined.push((c, la + lb));
                    }
                    [single] => joined.push(single.clone()),
                    _ => {}
                }
            }
            parts = joined;
        }
        let (all, total) = parts.pop().unwrap_or_default();
        let repeat = list(&mut (0..wide).map(|e| e / n));
        let mut halves = Vec::new();
        for (p, high) in [(p0, false), (p16, true)] {
            let base = if high { 16 } else { 0 };
            // Element e of the half: component e % n of lane e / n.
            let idx = list(&mut (0..wide).map(|e| (e % n) * W + base + e / n));
            let part = self.out.fresh("part");
            self.out.op(format_args!("{part} = shufflevector <{total} x {t}> {all}, <{total} x {t}> poison, <{wide} x i32> <{idx}>"));
            halves.push((p, high, part));
        }
        let (_, masked, _) = self.branch_on_full(mask);
        for (p, _, part) in &halves {
            self.out.op(format_args!("store <{wide} x {t}> {part}, {p}, align {align}"));
        }
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&masked);
        for (p, high, part) in &halves {
            let m = self.half_mask(mask, *high);
            let mr = self.out.fresh("mrep");
            self.out.op(format_args!("{mr} = shufflevector <16 x i1> {m}, <16 x i1> poison, <{wide} x i32> <{repeat}>"));
            if self.cx.facts.inline_gathers || ety.bits() >= 32 {
                self.out.op(format_args!("call void @{sw}(<{wide} x {t}> {part}, {p}, i32 {align}, <{wide} x i1> {mr})"));
            } else {
                // Masked stores of 8- and 16-bit elements: one shared
                // helper (see `masked_half_load`), never a wider store.
                let name = format!("__anycuda_wmaskstore_v{wide}{}_a{align}", ety.scalar_suffix());
                let text = format!(
                    "define internal void @{name}(<{wide} x {t}> %v, ptr %p, <{wide} x i1> %m) noinline nounwind {{\n  call void @{sw}(<{wide} x {t}> %v, ptr %p, i32 {align}, <{wide} x i1> %m)\n  ret void\n}}\n"
                );
                self.cx.helper(&name, || text);
                self.out.op(format_args!("call void @{name}(<{wide} x {t}> {part}, {p}, <{wide} x i1> {mr})"));
            }
        }
        self.out.terminate(format_args!("br label %{j}"));
        // One address per half: what a scatter would leave there, the
        // value of the half's last executing lane (lanes store in order, so
        // the high half's store comes second).
        self.out.label(&uv);
        let ctlz = self.intrinsic_scalar_ret("llvm.ctlz.i32", Ty::I32, "i32, i1");
        let halves = self.half_bits(mask);
        for ((p, high), half) in [(p0, false), (p16, true)].into_iter().zip(halves) {
            let any = self.out.def_scalar(Ty::I1, format_args!("icmp ne {half}, 0"));
            let (put, next) = (self.out.fresh_label("uput"), self.out.fresh_label("unext"));
            self.out.terminate(format_args!("br {any}, label %{put}, label %{next}"));
            self.out.label(&put);
            let zeros = self.out.def_scalar(Ty::I32, format_args!("call i32 {ctlz}({half}, i1 true)"));
            let last = self.out.def_scalar(Ty::I32, format_args!("sub i32 {}, {}", if high { 47 } else { 31 }, zeros.s));
            for (k, v) in values.iter().enumerate() {
                let x = self.out.def_scalar(ety, format_args!("extractelement {v}, {last}"));
                let pk = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p}, i64 {}", k as u32 * size));
                self.out.op(format_args!("store {x}, {pk}, align {align}"));
            }
            self.out.terminate(format_args!("br label %{next}"));
            self.out.label(&next);
        }
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&gv);
        for (k, v) in values.iter().enumerate() {
            let pk = self.component_pointer(ptrs, false, size, k);
            self.scatter(&s, v, &pk, mask, align);
        }
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&j);
    }

    /// Loads `ety` for the executing lanes at per-lane or uniform addresses.
    fn warp_load(&mut self, ptrs: &V, uniform: bool, ety: Ty, size: u32, ordered: bool) -> V {
        let mask = self.mask();
        if uniform {
            // One load for all lanes (the address is valid memory).
            let v = if ety == Ty::I128 {
                // One 16-byte move (see `memory::single_copy_width`).
                let v = self.out.def_scalar(ety, format_args!("load volatile <2 x i64>, {ptrs}, align 16"));
                self.out.def_scalar(ety, format_args!("bitcast <2 x i64> {} to i128", v.s))
            } else {
                let vol = if ordered { "volatile " } else { "" };
                self.out.def_scalar(ety, format_args!("load {vol}{}, {ptrs}, align {}", ety.name(), size.min(8)))
            };
            let _ = mask;
            return self.vec(v);
        }
        if ordered {
            let name = format!("__anycuda_wload_{}", ety.name());
            let text = per_lane_load(&name, ety, size);
            self.cx.helper(&name, || text);
            return self.out.def(ety, format_args!("call {ety} @{name}({ptrs}, {mask})"));
        }
        let sfx = ety.suffix();
        let g = format!("llvm.masked.gather.{sfx}.v{W}p0");
        self.cx.declare(&g, &format!("declare {ety} @{g}(<{W} x ptr>, i32, <{W} x i1>, {ety})"));
        let l = format!("llvm.masked.load.{sfx}.p0");
        self.cx.declare(&l, &format!("declare {ety} @{l}(ptr, i32, <{W} x i1>, {ety})"));
        // Consecutive addresses (lane i at p0 + i*size) load as one vector.
        let p0 = self.out.def_scalar(Ty::Ptr, format_args!("extractelement {ptrs}, i32 0"));
        let steps: Vec<String> = (0..W).map(|i| format!("i64 {}", i * size)).collect();
        let expect = self.out.def(Ty::Ptr, format_args!("getelementptr i8, {p0}, <{W} x i64> <{}>", steps.join(", ")));
        let same = self.out.def(Ty::I1, format_args!("icmp eq {ptrs}, {}", expect.s));
        let contiguous = self.all(&same);
        let (cv, gv, j) = (self.out.fresh_label("vld"), self.out.fresh_label("gld"), self.out.fresh_label("ldj"));
        self.out.terminate(format_args!("br {contiguous}, label %{cv}, label %{gv}"));
        self.out.label(&cv);
        let a = self.out.def(ety, format_args!("call {ety} @{l}({p0}, i32 {}, {mask}, {ety} poison)", size.min(16)));
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&gv);
        let b = self.gather(&g, ptrs, &mask, ety, size.min(16));
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&j);
        self.out.def(ety, format_args!("phi {ety} [{}, %{cv}], [{}, %{gv}]", a.s, b.s))
    }

    fn warp_store(&mut self, ptrs: &V, uniform: bool, v: &V, size: u32, ordered: bool) {
        let mask = self.mask();
        let ety = v.ty;
        if uniform || ordered {
            let ptrs = if uniform { self.vec(ptrs.clone()) } else { ptrs.clone() };
            let name = format!("__anycuda_wstore_{}", ety.name());
            let text = per_lane_store(&name, ety, size);
            self.cx.helper(&name, || text);
            self.out.op(format_args!("call void @{name}({ptrs}, {v}, {mask})"));
            return;
        }
        let sfx = ety.suffix();
        let s = format!("llvm.masked.scatter.{sfx}.v{W}p0");
        self.cx.declare(&s, &format!("declare void @{s}({ety}, <{W} x ptr>, i32, <{W} x i1>)"));
        let st = format!("llvm.masked.store.{sfx}.p0");
        self.cx.declare(&st, &format!("declare void @{st}({ety}, ptr, i32, <{W} x i1>)"));
        let p0 = self.out.def_scalar(Ty::Ptr, format_args!("extractelement {ptrs}, i32 0"));
        let steps: Vec<String> = (0..W).map(|i| format!("i64 {}", i * size)).collect();
        let expect = self.out.def(Ty::Ptr, format_args!("getelementptr i8, {p0}, <{W} x i64> <{}>", steps.join(", ")));
        let same = self.out.def(Ty::I1, format_args!("icmp eq {ptrs}, {}", expect.s));
        let contiguous = self.all(&same);
        let (cv, gv, j) = (self.out.fresh_label("vst"), self.out.fresh_label("sst"), self.out.fresh_label("stj"));
        self.out.terminate(format_args!("br {contiguous}, label %{cv}, label %{gv}"));
        self.out.label(&cv);
        self.out.op(format_args!("call void @{st}({v}, {p0}, i32 {}, {mask})", size.min(16)));
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&gv);
        self.scatter(&s, v, ptrs, &mask, size.min(16));
        self.out.terminate(format_args!("br label %{j}"));
        self.out.label(&j);
    }

    /// The address of component `k` of a vector access of `size`-byte
    /// elements.
    fn component_pointer(&mut self, ptrs: &V, uniform: bool, size: u32, k: usize) -> V {
        if k == 0 {
            ptrs.clone()
        } else if uniform {
            self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {ptrs}, i64 {}", size as usize * k))
        } else {
            self.out.def(Ty::Ptr, format_args!("getelementptr i8, {ptrs}, i64 {}", size as usize * k))
        }
    }

    /// What `ld` and `st` share: the element type, whether the access is
    /// ordered (volatile, relaxed, `ordering`, sc, mmio), the lanes'
    /// addresses from operand `address`, and the data operands of operand
    /// `data` (the components of a vector access).
    fn memory_access(&mut self, inst: &Instruction, address: usize, data: usize, ordering: Semantics) -> Res<MemoryAccess> {
        let b = self.b;
        let args = b.args(inst);
        let Some(t) = inst.ty(b) else { return self.invalid(format!("`{}` needs a type", inst.op.as_str())) };
        let ety = access_element(t);
        // Volatile, relaxed, acquire and release accesses to the block's
        // own shared memory are plain ones here. In PTX, `.volatile` keeps
        // an access from being cached in a register, removed or merged,
        // and keeps volatile accesses in program order (it behaves as
        // `.relaxed.sys`); `.relaxed` and `.acquire`/`.release` with a
        // scope make an access morally strong, so it can synchronise with
        // other threads' accesses to the same location. What can tell such
        // an access from a plain one is only another thread accessing the
        // location meanwhile, or ordering against the thread's other
        // accesses that another thread observes. `.shared::cta` memory is
        // reachable by the threads of the block only, and in warp mode they
        // all run on the calling OS thread: the lanes of a warp execute
        // each instruction together, and the block's warps take turns only
        // at suspension points (barriers, the back edges of loops that may
        // spin, `nanosleep`), where the warp function returns or calls the
        // next warp, and LLVM cannot move a memory access across either.
        // So every access to the window is made, and seen, by one OS
        // thread in the order the warps execute them, which plain LLVM
        // loads and stores keep (values and order within a thread); a
        // release and the acquire that reads it are on that same thread,
        // where program order already makes everything before the release
        // visible after the acquire; and no thread of another block can
        // read the location to observe an order of it against global
        // accesses, which keep their own semantics. A loop that spins on
        // such a location still suspends at its back edge
        // (`layout::loop_may_spin` reads the semantics from the PTX), which
        // is where another warp gets to store to it. Warp-synchronous code
        // (the unrolled last-warp reduction, block scans over `volatile`
        // shared arrays) then takes the vector paths of plain accesses.
        // `.shared::cluster` may name another block's window: kept ordered.
        let block_private = self.cx.facts.block_on_one_thread && matches!(inst.space(b), Some(StateSpace::Shared | StateSpace::SharedCta));
        let ordered = !block_private
            && inst
                .semantics(b)
                .is_some_and(|s| s == ordering || matches!(s, Semantics::Volatile | Semantics::Relaxed | Semantics::Sc | Semantics::Mmio));
        let (ptrs, uniform) = self.warp_address(&args[address], inst.space(b))?;
        let items = match args[data] {
            Operand::Vector(l) => b.list(l).to_vec(),
            other => vec![other],
        };
        let access = if inst.op == Opcode::St { crate::memcheck::Access::Write } else { crate::memcheck::Access::Read };
        self.check_lanes(&ptrs, uniform, inst.space(b), ety.bits() / 8 * items.len() as u32, access);
        Ok(MemoryAccess { signed: t.is_signed(), ety, size: ety.bits() / 8, ordered, ptrs, uniform, items })
    }

    fn warp_ld(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        if self.warp.as_ref().is_some_and(|w| w.frame.sunk.values().any(|&(_, l)| l == self.stmt)) {
            // The shared atomic that reads this value loads it itself
            // (`Frame::sunk`); nothing else reads the register before it
            // is written again. (Zeros keep the dead code defined.)
            let Some(t) = inst.ty(self.b) else { return self.invalid("ld needs a type") };
            return self.set_ext(&args[0], V::new(access_element(t), "zeroinitializer"), t.is_signed());
        }
        let MemoryAccess { signed, ety, size, ordered, ptrs, uniform, items: dests } =
            self.memory_access(inst, 1, 0, Semantics::Acquire)?;
        let n = dests.len() as u32;
        // A register address of known shape: all components at once.
        let observed = ordered || crate::memory::communicates(inst, self.b);
        let shaped = !uniform && !observed && matches!(n, 1 | 2 | 4 | 8);
        let at_run_time = shaped && self.shape_at_run_time(&args[1]);
        let layout = if shaped && !at_run_time { self.operand_layout(&args[1], size * n) } else { None };
        let prefetch = self.stride_prefetches(inst.space(self.b));
        let wide = crate::memory::single_copy_width(dests.len(), i64::from(size), observed);
        let values = match (wide, layout) {
            (Some(wide), _) => {
                let w = self.warp_load(&ptrs, uniform, wide, wide.bits() / 8, true);
                (0..dests.len()).map(|k| self.component(&w, ety, k)).collect()
            }
            (None, None) if at_run_time => {
                if prefetch {
                    self.stride_prefetch(&ptrs, W * size * n);
                }
                let hint = self.shape_hint(&args[1], size * n);
                self.shaped_load_call(&ptrs, &hint, ety, size, n)
            }
            (None, Some(layout)) => {
                if prefetch {
                    self.stride_prefetch(&ptrs, W * size * n);
                }
                let space = inst.space(self.b);
                match if n == 1 { self.forwarded(&args[1], space, ety, size) } else { None } {
                    Some((whole, value)) => {
                        let (fw, ld, j) = (self.out.fresh_label("fwd"), self.out.fresh_label("fld"), self.out.fresh_label("fwj"));
                        self.out.terminate(format_args!("br {whole}, label %{fw}, label %{ld}"));
                        self.out.label(&ld);
                        let loaded = self.shaped_load(&ptrs, &layout, ety, size, n);
                        let end = self.out.fresh_label("flde");
                        self.out.terminate(format_args!("br label %{end}"));
                        self.out.label(&end);
                        self.out.terminate(format_args!("br label %{j}"));
                        self.out.label(&fw);
                        self.out.terminate(format_args!("br label %{j}"));
                        self.out.label(&j);
                        let v = self.out.def(ety, format_args!("phi {ety} [{}, %{fw}], [{}, %{end}]", value.s, loaded[0].s));
                        vec![v]
                    }
                    None => self.shaped_load(&ptrs, &layout, ety, size, n),
                }
            }
            (None, None) => {
                let mut values = Vec::new();
                for k in 0..dests.len() {
                    let p = self.component_pointer(&ptrs, uniform, size, k);
                    values.push(self.warp_load(&p, uniform, ety, size, ordered));
                }
                values
            }
        };
        for (d, v) in dests.iter().zip(values) {
            if !matches!(d, Operand::Sink) {
                self.set_ext(d, v, signed)?;
            }
        }
        Ok(())
    }

    fn warp_st(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let MemoryAccess { ety, size, ordered, ptrs, uniform, items: srcs, .. } = self.memory_access(inst, 0, 1, Semantics::Release)?;
        let n = srcs.len() as u32;
        // A register address of known shape: all components at once (not
        // with `_` components, which must leave memory alone).
        let observed = ordered || crate::memory::communicates(inst, self.b);
        let whole = !uniform && !observed && matches!(n, 1 | 2 | 4 | 8) && !srcs.iter().any(|s| matches!(s, Operand::Sink));
        let space = inst.space(self.b);
        if whole && self.shape_at_run_time(&args[0]) {
            let mut values = Vec::new();
            for s in &srcs {
                values.push(self.get(s, ety)?);
            }
            let hint = self.shape_hint(&args[0], size * n);
            self.shaped_store_call(&ptrs, &hint, &values, size);
            self.record_run(&args[0], space, None);
            return Ok(());
        }
        if let Some(layout) = if whole { self.operand_layout(&args[0], size * n) } else { None } {
            let mut values = Vec::new();
            for s in &srcs {
                values.push(self.get(s, ety)?);
            }
            self.shaped_store(&ptrs, &layout, &values, size);
            let run = match values.as_slice() {
                [v] => Some((v.clone(), size, layout.shape.clone(), layout.lane16.clone(), ptrs.clone())),
                _ => None,
            };
            self.record_run(&args[0], space, run);
            return Ok(());
        }
        self.record_run(&args[0], space, None);
        let complete = !srcs.iter().any(|s| matches!(s, Operand::Sink));
        if let Some(wide) = crate::memory::single_copy_width(srcs.len(), i64::from(size), observed && complete) {
            let mut values = Vec::new();
            for s in &srcs {
                values.push(self.get(s, ety)?);
            }
            let w = self.join_components(&values, wide);
            self.warp_store(&ptrs, uniform, &w, wide.bits() / 8, true);
            return Ok(());
        }
        for (k, s) in srcs.iter().enumerate() {
            if matches!(s, Operand::Sink) {
                continue;
            }
            let v = self.get(s, ety)?;
            let p = self.component_pointer(&ptrs, uniform, size, k);
            self.warp_store(&p, uniform, &v, size, ordered);
        }
        Ok(())
    }

    fn warp_cvta(&mut self, inst: &Instruction) -> Res<()> {
        // The shared lowering is lane-clean except for the local window,
        // which is the same for every lane.
        self.dispatch_shared(inst)
    }

    /// Atomics, lane after lane in lane order (one lane at a time, like a
    /// serialisation of the warp's requests).
    fn warp_atom(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let Some(t) = inst.ty(b) else { return self.invalid("atom needs a type") };
        let is_red = inst.op == Opcode::Red;
        let (addr_op, srcs) = if is_red { (&args[0], &args[1..]) } else { (&args[1], &args[2..]) };
        let space = inst.space(b);
        let cpu_shared = self.cx.facts.block_on_one_thread
            && matches!(space, Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster));
        let op = inst.flags(b).find(|f| {
            matches!(
                f,
                Flag::AddOp | Flag::Exch | Flag::Cas | Flag::MinOp | Flag::MaxOp | Flag::Inc | Flag::Dec | Flag::And | Flag::Or | Flag::Xor
            )
        });
        let Some(op) = op else { return self.invalid("atom needs an operation") };
        if self.memcheck_lanes_on() {
            let (p, uniform) = self.warp_address(addr_op, space)?;
            self.check_lanes(&p, uniform, space, t.size(), crate::memcheck::Access::ReadWrite);
        }
        let float = t.is_float();
        let ty = if float { op_ty(t) } else { Ty::int(t.bits()) };
        if !matches!(ty, Ty::I32 | Ty::I64 | Ty::Float | Ty::Double) || (float && !matches!(op, Flag::AddOp | Flag::Exch)) {
            return self.unsupported(format!("`{}` in warp mode", self.describe(inst)));
        }
        let a = self.get(&srcs[0], ty)?;
        if self.cx.privatised(self.item, self.f, self.stmt) {
            // Adds gathered in the runner's table (`privatise.rs`).
            let [_, inner] = crate::privatise::register_helpers(self.cx, t.bits());
            let (name, text) = crate::privatise::warp_add_helper(t.bits(), &inner);
            self.cx.helper(&name, || text);
            self.cx.declare("llvm.vector.reduce.and.v32i1", "declare i1 @llvm.vector.reduce.and.v32i1(<32 x i1>)");
            let table = self.ctx_field(crate::cpu_abi::offsets::PRIVATE_ADDS, Ty::Ptr);
            let join = match self.cx.private_loaded(self.item, self.f, self.stmt) {
                Some(form) => self.loaded_private_adds(&form, &a, &table, t.bits(), &inner)?,
                None => None,
            };
            let (ptrs, uniform) = self.warp_address(addr_op, space)?;
            let ptrs = if uniform { self.vec(ptrs) } else { ptrs };
            let mask = self.mask();
            let _ = self.out.def(ty, format_args!("call {ty} @{name}({ptrs}, {a}, {mask}, {table})"));
            if let Some(join) = join {
                self.out.terminate(format_args!("br label %{join}"));
                self.out.label(&join);
            }
            if !is_red {
                self.set(&args[0], V::new(ty, "zeroinitializer"))?;
            }
            return Ok(());
        }
        let c = if op == Flag::Cas { self.get(&srcs[1], ty)? } else { V::new(ty, "zeroinitializer") };
        let call = AtomicCall { op, ty, signed: t.is_signed(), plain: cpu_shared, a, c };
        if cpu_shared && matches!(op, Flag::MinOp | Flag::MaxOp) {
            let f = match (op, call.signed) {
                (Flag::MinOp, true) => "smin",
                (Flag::MinOp, false) => "umin",
                (_, true) => "smax",
                _ => "umax",
            };
            let t = ty.name();
            self.cx.declare(&format!("llvm.{f}.{t}"), &format!("declare {t} @llvm.{f}.{t}({t}, {t})"));
        }
        if cpu_shared {
            self.cx.declare("llvm.vector.reduce.and.v32i1", "declare i1 @llvm.vector.reduce.and.v32i1(<32 x i1>)");
        }
        let old = match addr_op.address() {
            // A 32-bit shared address register: base and offsets, or base
            // and scaled indices (see `plain_per_lane_atomic`).
            Some((AddrBase::Reg(r), off)) if cpu_shared && self.reg_tys.get(r as usize) == Some(&Ty::I32) => {
                // The frame layout decided which atomics load their indices
                // (and skipped those loads); the form is the one it found.
                let sunk = self.warp.as_ref().and_then(|w| w.frame.sunk.get(&self.stmt).copied());
                let scaled = match sunk {
                    Some((s, _)) => Some(s),
                    None => {
                        let (item, offsets) = (self.item, &self.cx.a.local_shared);
                        crate::shared_index::scaled_index(self.f, b, self.stmt, r, &|v| offsets.get(&(item, v)).copied())
                    }
                };
                match (scaled, sunk) {
                    (Some(s), Some((_, ld))) => self.sunk_shared_atomic(&s, ld, off, &call)?,
                    (Some(s), None) => {
                        let x = self.load_reg(s.index);
                        let base = self.shared_at(off + i64::from(s.base));
                        self.atomic_call(&call, LaneAddresses::Scaled { index: x.ty, shift: s.shift }, &format!("{base}, {x}"))
                    }
                    (None, _) => {
                        let x = self.load_reg(r);
                        let base = self.shared_at(off);
                        self.atomic_call(&call, LaneAddresses::Offsets, &format!("{base}, {x}"))
                    }
                }
            }
            _ => {
                let (ptrs, uniform) = self.warp_address(addr_op, space)?;
                let ptrs = if uniform { self.vec(ptrs) } else { ptrs };
                self.atomic_call(&call, LaneAddresses::Pointers, &ptrs.to_string())
            }
        };
        if !is_red {
            self.set(&args[0], old)?;
        }
        Ok(())
    }

    /// `offset` bytes into the shared window.
    fn shared_at(&mut self, offset: i64) -> V {
        let sb = self.shared_base();
        self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {sb}, i64 {offset}"))
    }

    /// Calls the helper that performs `call`'s atomic lane after lane, with
    /// the lanes' addresses passed as `lanes` says (`addresses`: those
    /// arguments); returns the old values.
    fn atomic_call(&mut self, call: &AtomicCall, lanes: LaneAddresses, addresses: &str) -> V {
        let AtomicCall { op, ty, signed, plain, a, c } = call;
        let name = format!(
            "__anycuda_watom_{}_{}_{}{}{}",
            op.as_str(),
            ty.name(),
            if *signed { "s" } else { "u" },
            if *plain { "_plain" } else { "" },
            lanes.suffix()
        );
        let text = per_lane_atomic(&name, *op, *ty, *signed, *plain, lanes);
        self.cx.helper(&name, || text);
        let mask = self.mask();
        self.out.def(*ty, format_args!("call {ty} @{name}({addresses}, {a}, {c}, {mask})"))
    }

    /// The lanes of a privatised add whose index a load just before read
    /// (`privatise::LoadedIndex`): for a whole warp whose load read
    /// consecutive elements, through one base, with a table, each lane
    /// loads its index, forms its address and adds to the table, with no
    /// vector of addresses in between. Ends the current block with the
    /// branch between that path and the caller's general one, opens the
    /// latter and returns the label joining the two; `None` (nothing
    /// emitted) when the load's lanes have no known layout.
    fn loaded_private_adds(
        &mut self,
        form: &crate::privatise::LoadedIndex,
        a: &V,
        table: &V,
        bits: u32,
        inner: &str,
    ) -> Res<Option<String>> {
        let b = self.b;
        let Some(Statement::Instruction(ld)) = b.statements.get(form.load_at) else {
            return self.invalid("an index load is not an instruction");
        };
        let largs = b.args(ld);
        let lety = access_element(form.load);
        let size = lety.bits() / 8;
        let (ptrs, uniform) = self.warp_address(&largs[1], ld.space(b))?;
        let layout = if uniform { None } else { self.operand_layout(&largs[1], size) };
        let Some(layout) = layout else { return Ok(None) };
        let (p0, p16) = self.half_bases(&ptrs, &layout);
        let mask = self.mask();
        let mbits = self.bits(&mask);
        let full = self.out.def_scalar(Ty::I1, format_args!("icmp eq {mbits}, -1"));
        let shape = layout.shape.clone();
        let consecutive = self.out.def_scalar(Ty::I1, format_args!("icmp eq {shape}, {SHAPE_HALVES_CONSECUTIVE}"));
        let next = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p0}, i64 {}", 16 * size));
        let adjacent = self.out.def_scalar(Ty::I1, format_args!("icmp eq {p16}, {}", next.s));
        let base = self.get(&Operand::Reg(form.base), Ty::I64)?;
        let base = self.vec(base);
        let b0 = self.lane0(&base);
        let same = self.icmp("eq", &base, &b0);
        let one_base = self.all(&same);
        let have = self.out.def_scalar(Ty::I1, format_args!("icmp ne {table}, null"));
        let start = self.out.def_scalar(Ty::I64, format_args!("add {b0}, {}", form.offset));
        // Byte indices go to the table's window, whose entries' addresses
        // must be aligned.
        let window = crate::privatise::window_serves(bits, form);
        let low = self.out.def_scalar(Ty::I64, format_args!("and {start}, {}", if window { bits / 8 - 1 } else { 0 }));
        let aligned = self.out.def_scalar(Ty::I1, format_args!("icmp eq {low}, 0"));
        let mut direct = full;
        for c in [consecutive, adjacent, one_base, have, aligned] {
            direct = self.out.def_scalar(Ty::I1, format_args!("and {direct}, {}", c.s));
        }
        let (own, vector, joined) = (self.out.fresh_label("own"), self.out.fresh_label("vec"), self.out.fresh_label("ownj"));
        self.out.terminate(format_args!("br {direct}, label %{own}, label %{vector}"));
        self.out.label(&own);
        let name = if window {
            crate::privatise::warp_window_add_helper(self.cx, bits, form)
        } else {
            let (name, text) = crate::privatise::warp_loaded_add_helper(bits, form, lety, inner);
            self.cx.helper(&name, || text);
            name
        };
        self.out.op(format_args!("call void @{name}({table}, {start}, {p0}, {a})"));
        self.out.terminate(format_args!("br label %{joined}"));
        self.out.label(&vector);
        Ok(Some(joined))
    }

    /// A shared atomic addressed by a scaled index that a load in the same
    /// run read (`Frame::sunk`; the load itself was not lowered): a whole
    /// warp reading consecutive elements has each lane load its own index
    /// where its read-modify-write needs it, as a thread would, with no
    /// vector of indices in between; any other warp loads the indices as
    /// the load would have and goes on as for a scaled index.
    fn sunk_shared_atomic(&mut self, s: &crate::shared_index::ScaledIndex, ld_at: usize, off: i64, call: &AtomicCall) -> Res<V> {
        let b = self.b;
        let Some(Statement::Instruction(ld)) = b.statements.get(ld_at) else {
            return self.invalid("a moved load is not an instruction");
        };
        let largs = b.args(ld);
        let Some(lt) = ld.ty(b) else { return self.invalid("ld needs a type") };
        let lety = access_element(lt);
        let size = lety.bits() / 8;
        let lsigned = lt.is_signed();
        let index = self.reg_tys[s.index as usize];
        let base = self.shared_at(off + i64::from(s.base));
        let scaled = LaneAddresses::Scaled { index, shift: s.shift };
        let (ptrs, uniform) = self.warp_address(&largs[1], ld.space(b))?;
        let layout = if uniform { None } else { self.operand_layout(&largs[1], size) };
        let Some(layout) = layout else {
            let v = self.warp_load(&ptrs, uniform, lety, size, false);
            let x = self.convert(v, index, lsigned);
            return Ok(self.atomic_call(call, scaled, &format!("{base}, {x}")));
        };
        // What `warp_ld` does for a load in a loop.
        if self.stride_prefetches(ld.space(b)) {
            self.stride_prefetch(&ptrs, W * size);
        }
        let (p0, p16) = self.half_bases(&ptrs, &layout);
        let mask = self.mask();
        let bits = self.bits(&mask);
        let full = self.out.def_scalar(Ty::I1, format_args!("icmp eq {bits}, -1"));
        let shape = layout.shape.clone();
        let consecutive = self.out.def_scalar(Ty::I1, format_args!("icmp eq {shape}, {SHAPE_HALVES_CONSECUTIVE}"));
        let next = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, {p0}, i64 {}", 16 * size));
        let adjacent = self.out.def_scalar(Ty::I1, format_args!("icmp eq {p16}, {}", next.s));
        let both = self.out.def_scalar(Ty::I1, format_args!("and {full}, {}", consecutive.s));
        let direct = self.out.def_scalar(Ty::I1, format_args!("and {both}, {}", adjacent.s));
        let (own, vector, loaded, joined) =
            (self.out.fresh_label("own"), self.out.fresh_label("vec"), self.out.fresh_label("vecl"), self.out.fresh_label("ownj"));
        self.out.terminate(format_args!("br {direct}, label %{own}, label %{vector}"));
        self.out.label(&own);
        let lanes = LaneAddresses::Loaded { load: lety, signed: lsigned, index, shift: s.shift };
        let first = self.atomic_call(call, lanes, &format!("{base}, {p0}"));
        self.out.terminate(format_args!("br label %{joined}"));
        self.out.label(&vector);
        let v = self.shaped_load(&ptrs, &layout, lety, size, 1).pop().unwrap_or_else(|| V::new(lety, "zeroinitializer"));
        let x = self.convert(v, index, lsigned);
        self.out.terminate(format_args!("br label %{loaded}"));
        self.out.label(&loaded);
        let second = self.atomic_call(call, scaled, &format!("{base}, {x}"));
        self.out.terminate(format_args!("br label %{joined}"));
        self.out.label(&joined);
        let ty = call.ty;
        Ok(self.out.def(ty, format_args!("phi {ty} [{}, %{own}], [{}, %{loaded}]", first.s, second.s)))
    }

    // ---- barriers and warp collectives ----------------------------------------------------

    fn warp_barrier(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        if inst.has(b, Flag::Warp) {
            // The lanes of a warp run together: nothing to wait for (but
            // racecheck orders their shared accesses by it).
            if self.memcheck_lanes_on() {
                let lanes = self.participants(args, 0)?;
                let bits = self.bits(&lanes);
                self.race_sync(crate::cpu_abi::memcheck::SYNC_WARP, Some(bits));
            }
            return Ok(());
        }
        let id = match args.first() {
            Some(a) => {
                let v = self.get(a, Ty::I32)?;
                self.lane0(&v)
            }
            None => V::scalar(Ty::I32, "0"),
        };
        // Barrier counts are in threads, warps take part whole.
        let count = match args.get(1) {
            Some(a) => {
                let v = self.get(a, Ty::I32)?;
                let v = self.lane0(&v);
                let r = self.out.def_scalar(Ty::I32, format_args!("add {v}, {}", W - 1));
                self.out.def_scalar(Ty::I32, format_args!("udiv i32 {}, {W}", r.s))
            }
            None => V::scalar(Ty::I32, "0"),
        };
        let kind = if inst.has(b, Flag::Arrive) { crate::cpu_abi::warp_frame::ARRIVE } else { crate::cpu_abi::warp_frame::BARRIER };
        // `bar.sync 0` of every thread: the next warp may go on in the same call.
        let plain =
            kind == crate::cpu_abi::warp_frame::BARRIER && args.len() <= 1 && args.first().is_none_or(|a| self.constant(a) == Some(0));
        self.warp_suspend(kind, &id, &count, false, plain)?;
        if self.memcheck_lanes_on() {
            let mask = self.mask();
            let bits = self.bits(&mask);
            self.race_sync(crate::cpu_abi::memcheck::SYNC_BLOCK, Some(bits));
        }
        Ok(())
    }

    /// The member mask operand at `i` intersected with the executing lanes,
    /// as a lane mask vector.
    fn participants(&mut self, args: &[Operand], i: usize) -> Res<V> {
        let mask = self.mask();
        let Some(op) = args.get(i) else { return Ok(mask) };
        let mm = self.get(op, Ty::I32)?;
        let bit = self.bin("shl", &V::int(Ty::I32, 1), &V::new(Ty::I32, "%lane"));
        let has = self.bin("and", &mm, &bit);
        let inm = self.icmp("ne", &has, &V::int(Ty::I32, 0));
        Ok(self.bin("and", &mask, &inm))
    }

    /// Each lane's group for a warp-wide operation with a member mask
    /// operand at `i`: its member mask restricted to the lanes executing
    /// the instruction (all of them when there is no mask). Lanes may pass
    /// different masks (a tile of 4 lanes passes its own 4 bits), so the
    /// group is a vector.
    fn groups(&mut self, args: &[Operand], i: usize) -> Res<V> {
        let mask = self.mask();
        let active = self.bits(&mask);
        let active = self.vec(active);
        let Some(op) = args.get(i) else { return Ok(active) };
        let mm = self.get(op, Ty::I32)?;
        Ok(self.bin("and", &mm, &active))
    }

    /// Whether every executing lane names the same group (a scalar i1).
    fn uniform_groups(&mut self, groups: &V) -> V {
        let mask = self.mask();
        let (lo_in, hi_in) = (self.select(&mask, groups, &V::int(Ty::I32, -1)), self.select(&mask, groups, &V::int(Ty::I32, 0)));
        for op in ["umin", "umax"] {
            let name = format!("llvm.vector.reduce.{op}.v{W}i32");
            self.cx.declare(&name, &format!("declare i32 @{name}(<{W} x i32>)"));
        }
        let lo = self.out.def_scalar(Ty::I32, format_args!("call i32 @llvm.vector.reduce.umin.v{W}i32({lo_in})"));
        let hi = self.out.def_scalar(Ty::I32, format_args!("call i32 @llvm.vector.reduce.umax.v{W}i32({hi_in})"));
        self.out.def_scalar(Ty::I1, format_args!("icmp eq {lo}, {}", hi.s))
    }

    /// `v[idx[i]]` for each lane (idx in 0..32).
    fn permute(&mut self, v: &V, idx: &V) -> V {
        let ty = v.ty;
        let tmp = self.out.alloca(&ty.to_string(), 16);
        self.out.op(format_args!("store {v}, ptr {tmp}"));
        let i64v = self.zext(idx, Ty::I64);
        let ptrs = self.out.def(Ty::Ptr, format_args!("getelementptr {}, ptr {tmp}, {i64v}", ty.name()));
        let sfx = ty.suffix();
        let g = format!("llvm.masked.gather.{sfx}.v{W}p0");
        self.cx.declare(&g, &format!("declare {ty} @{g}(<{W} x ptr>, i32, <{W} x i1>, {ty})"));
        self.out.def(ty, format_args!("call {ty} @{g}({ptrs}, i32 4, <{W} x i1> splat (i1 true), {ty} poison)"))
    }

    /// The value of an operand when the kernel is compiled, if known.
    fn constant(&self, op: &Operand) -> Option<i64> {
        match op {
            Operand::Imm(v) => Some(*v),
            Operand::Reg(r) => self.warp.as_ref()?.consts.get(r).copied(),
            _ => None,
        }
    }

    fn warp_shfl(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        if let (Some(bc), Some(cc)) = (self.constant(&args[2]), self.constant(&args[3])) {
            return self.warp_shfl_constant(inst, bc as u32, cc as u32);
        }
        let a = self.get(&args[1], Ty::I32)?;
        let bv = self.get(&args[2], Ty::I32)?;
        let c = self.get(&args[3], Ty::I32)?;
        let lane = V::new(Ty::I32, "%lane");
        let bval = self.bin("and", &bv, &V::int(Ty::I32, 31));
        let cval = self.bin("and", &c, &V::int(Ty::I32, 31));
        let seg = self.bin("lshr", &c, &V::int(Ty::I32, 8));
        let seg = self.bin("and", &seg, &V::int(Ty::I32, 31));
        let nseg = self.bin("xor", &seg, &V::int(Ty::I32, -1));
        let lo = self.bin("and", &lane, &seg);
        let hi_part = self.bin("and", &cval, &nseg);
        let max_lane = self.bin("or", &lo, &hi_part);
        let (j, p) = if inst.has(b, Flag::Up) {
            let j = self.bin("sub", &lane, &bval);
            (j.clone(), self.icmp("sge", &j, &max_lane))
        } else if inst.has(b, Flag::Down) {
            let j = self.bin("add", &lane, &bval);
            (j.clone(), self.icmp("sle", &j, &max_lane))
        } else if inst.has(b, Flag::Bfly) {
            let j = self.bin("xor", &lane, &bval);
            (j.clone(), self.icmp("sle", &j, &max_lane))
        } else {
            let bn = self.bin("and", &bval, &nseg);
            let j = self.bin("or", &lo, &bn);
            (j.clone(), self.icmp("sle", &j, &max_lane))
        };
        let src = self.select(&p, &j, &lane);
        let src = self.bin("and", &src, &V::int(Ty::I32, 31));
        let d = self.permute(&a, &src);
        match args[0] {
            Operand::PredPair(dr, q) => {
                self.set(&Operand::Reg(dr), d)?;
                self.set(&Operand::Reg(q), p)
            }
            other => self.set(&other, d),
        }
    }

    /// `shfl` whose lane operand and clamp are known: every lane's source is
    /// known, so the exchange is one constant vector shuffle.
    fn warp_shfl_constant(&mut self, inst: &Instruction, bc: u32, cc: u32) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let a = self.get(&args[1], Ty::I32)?;
        let (bval, cval, seg) = (bc & 31, cc & 31, (cc >> 8) & 31);
        let mut sources = Vec::with_capacity(W as usize);
        let mut valid = Vec::with_capacity(W as usize);
        for lane in 0..W as i32 {
            let (lo, max_lane) = (lane & seg as i32, (lane & seg as i32) | (cval & !seg) as i32);
            let (j, p) = if inst.has(b, Flag::Up) {
                let j = lane - bval as i32;
                (j, j >= max_lane)
            } else if inst.has(b, Flag::Down) {
                let j = lane + bval as i32;
                (j, j <= max_lane)
            } else if inst.has(b, Flag::Bfly) {
                let j = lane ^ bval as i32;
                (j, j <= max_lane)
            } else {
                let j = lo | (bval & !seg) as i32;
                (j, j <= max_lane)
            };
            sources.push(format!("i32 {}", if p { j & 31 } else { lane }));
            valid.push(format!("i1 {}", u8::from(p)));
        }
        let d = self.out.def(Ty::I32, format_args!("shufflevector {a}, <{W} x i32> poison, <{W} x i32> <{}>", sources.join(", ")));
        let p = V::new(Ty::I1, format!("<{}>", valid.join(", ")));
        match args[0] {
            Operand::PredPair(dr, q) => {
                self.set(&Operand::Reg(dr), d)?;
                self.set(&Operand::Reg(q), p)
            }
            other => self.set(&other, d),
        }
    }

    fn warp_vote(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let p = self.get(&args[1], Ty::I1)?;
        let part = self.participants(args, 2)?;
        let groups = self.groups(args, 2)?;
        let yes = self.bin("and", &p, &part);
        let ybits = self.bits(&yes);
        // Each lane votes among its own group.
        let mine = self.bin("and", &groups, &ybits);
        let r = if inst.has(b, Flag::Ballot) {
            mine
        } else {
            let all = self.icmp("eq", &mine, &groups);
            let any = self.icmp("ne", &mine, &V::int(Ty::I32, 0));
            if inst.has(b, Flag::All) {
                all
            } else if inst.has(b, Flag::Any) {
                any
            } else {
                let none = self.bin("xor", &any, &V::int(Ty::I1, 1));
                self.bin("or", &all, &none)
            }
        };
        self.set(&args[0], r)
    }

    fn warp_match(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let t = inst.ty(b).unwrap_or(Type::B32);
        let ty = Ty::int(t.bits());
        let v = self.get(&args[1], ty)?;
        // For each lane: the lanes of its group holding the same value.
        let pbits_v = self.groups(args, 2)?;
        let mut acc = V::int(Ty::I32, 0);
        for j in 0..W {
            let vj = self.out.def_scalar(ty, format_args!("extractelement {v}, i32 {j}"));
            let eq = self.icmp("eq", &v, &vj);
            let bit = self.select(&eq, &V::int(Ty::I32, 1i128 << j), &V::int(Ty::I32, 0));
            acc = self.bin("or", &acc, &bit);
        }
        let same = self.bin("and", &acc, &pbits_v);
        if inst.has(b, Flag::All) {
            // Every participant equal: the mask, else 0.
            let eq_all = self.icmp("eq", &same, &pbits_v);
            let m = self.select(&eq_all, &pbits_v, &V::int(Ty::I32, 0));
            return match args[0] {
                Operand::PredPair(d, q) => {
                    self.set(&Operand::Reg(d), m)?;
                    self.set(&Operand::Reg(q), eq_all)
                }
                other => self.set(&other, m),
            };
        }
        self.set(&args[0], same)
    }

    fn warp_redux(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let t = inst.ty(b).unwrap_or(Type::U32);
        if t.is_float() {
            return self.unsupported(format!("`{}`", self.describe(inst)));
        }
        let v = self.get(&args[1], Ty::I32)?;
        let part = self.participants(args, 2)?;
        let signed = t.is_signed();
        let (op, identity): (&str, i128) = if inst.has(b, Flag::AddOp) {
            ("add", 0)
        } else if inst.has(b, Flag::MinOp) {
            if signed {
                ("smin", i32::MAX as i128)
            } else {
                ("umin", -1)
            }
        } else if inst.has(b, Flag::MaxOp) {
            if signed {
                ("smax", i32::MIN as i128)
            } else {
                ("umax", 0)
            }
        } else if inst.has(b, Flag::And) {
            ("and", -1)
        } else if inst.has(b, Flag::Or) {
            ("or", 0)
        } else {
            ("xor", 0)
        };
        let groups = self.groups(args, 2)?;
        let uniform = self.uniform_groups(&groups);
        let (one, per_lane, join) = (self.out.fresh_label("rdx1"), self.out.fresh_label("rdxn"), self.out.fresh_label("rdxj"));
        self.out.terminate(format_args!("br {uniform}, label %{one}, label %{per_lane}"));
        // One group: one reduction over the vector.
        self.out.label(&one);
        let x = self.select(&part, &v, &V::int(Ty::I32, identity));
        let name = format!("llvm.vector.reduce.{op}.v{W}i32");
        self.cx.declare(&name, &format!("declare i32 @{name}(<{W} x i32>)"));
        let r = self.out.def_scalar(Ty::I32, format_args!("call i32 @{name}({x})"));
        let r1 = self.vec(r);
        self.out.terminate(format_args!("br label %{join}"));
        // Several groups (tiles): each lane folds in the lanes of its group.
        self.out.label(&per_lane);
        let mut acc = V::int(Ty::I32, identity);
        for j in 0..W {
            let vj = self.out.def_scalar(Ty::I32, format_args!("extractelement {v}, i32 {j}"));
            let bit = self.bin("and", &groups, &V::int(Ty::I32, 1i128 << j));
            let has = self.icmp("ne", &bit, &V::int(Ty::I32, 0));
            let folded = if matches!(op, "add" | "and" | "or" | "xor") {
                self.bin(op, &acc, &vj)
            } else {
                let f = format!("llvm.{op}.v{W}i32");
                self.cx.declare(&f, &format!("declare <{W} x i32> @{f}(<{W} x i32>, <{W} x i32>)"));
                let (a, vjv) = (self.vec(acc.clone()), self.vec(vj));
                self.out.def(Ty::I32, format_args!("call <{W} x i32> @{f}({a}, {vjv})"))
            };
            acc = self.select(&has, &folded, &acc);
        }
        let rn = self.vec(acc);
        self.out.terminate(format_args!("br label %{join}"));
        self.out.label(&join);
        let r = self.out.def(Ty::I32, format_args!("phi <{W} x i32> [{}, %{one}], [{}, %{per_lane}]", r1.s, rn.s));
        self.set(&args[0], r)
    }

    fn warp_elect(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let part = self.participants(args, 1)?;
        let bits = self.bits(&part);
        let f = self.intrinsic_scalar_ret("llvm.cttz.i32", Ty::I32, "i32, i1");
        let leader = self.out.def_scalar(Ty::I32, format_args!("call i32 {f}({bits}, i1 false)"));
        let lv = self.vec(leader);
        let is = self.icmp("eq", &V::new(Ty::I32, "%lane"), &lv);
        match args[0] {
            Operand::PredPair(d, p) => {
                self.set(&Operand::Reg(d), lv)?;
                self.set(&Operand::Reg(p), is)
            }
            Operand::SinkPred(p) => self.set(&Operand::Reg(p), is),
            other => self.set(&other, lv),
        }
    }

    /// Special registers in warp mode: per-lane ids are vectors, block facts
    /// are scalars broadcast to the lanes.
    pub fn warp_special(&mut self, s: SpecialReg, c: u8) -> Option<V> {
        use SpecialReg::*;
        Some(match s {
            Tid => V::new(Ty::I32, ["%tid.xv", "%tid.yv", "%tid.zv"][c as usize % 3]),
            Laneid => V::new(Ty::I32, "%lane"),
            Warpid => self.vec(V::scalar(Ty::I32, "%warp")),
            LanemaskEq | LanemaskLe | LanemaskLt | LanemaskGe | LanemaskGt => {
                let lane = V::new(Ty::I32, "%lane");
                let bit = self.bin("shl", &V::int(Ty::I32, 1), &lane);
                match s {
                    LanemaskEq => bit,
                    LanemaskLt => self.bin("sub", &bit, &V::int(Ty::I32, 1)),
                    LanemaskLe => {
                        let lt = self.bin("sub", &bit, &V::int(Ty::I32, 1));
                        self.bin("or", &lt, &bit)
                    }
                    LanemaskGe => self.bin("sub", &V::int(Ty::I32, 0), &bit),
                    _ => {
                        let ge = self.bin("sub", &V::int(Ty::I32, 0), &bit);
                        self.bin("xor", &ge, &bit)
                    }
                }
            }
            _ => return None,
        })
    }
}

/// A helper loading from each executing lane's address in lane order
/// (volatile: another thread may be writing).
fn per_lane_load(name: &str, ety: Ty, size: u32) -> String {
    let t = ety.name();
    // 16 bytes as one move (see `memory::single_copy_width`).
    let load = if ety == Ty::I128 {
        "  %v2 = load volatile <2 x i64>, ptr %pi, align 16\n  %v = bitcast <2 x i64> %v2 to i128".to_string()
    } else {
        format!("  %v = load volatile {t}, ptr %pi, align {size}")
    };
    format!(
        "define internal <{W} x {t}> @{name}(<{W} x ptr> %p, <{W} x i1> %m) #0 {{
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %cont]
  %acc = phi <{W} x {t}> [zeroinitializer, %entry], [%acc2, %cont]
  %on = extractelement <{W} x i1> %m, i32 %i
  br i1 %on, label %do, label %cont
do:
  %pi = extractelement <{W} x ptr> %p, i32 %i
{load}
  %acc1 = insertelement <{W} x {t}> %acc, {t} %v, i32 %i
  br label %cont
cont:
  %acc2 = phi <{W} x {t}> [%acc, %loop], [%acc1, %do]
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, {W}
  br i1 %more, label %loop, label %done
done:
  ret <{W} x {t}> %acc2
}}
"
    )
}

/// A helper storing each executing lane's value in lane order.
fn per_lane_store(name: &str, ety: Ty, size: u32) -> String {
    let t = ety.name();
    let store = if ety == Ty::I128 {
        "  %vi2 = bitcast i128 %vi to <2 x i64>\n  store volatile <2 x i64> %vi2, ptr %pi, align 16".to_string()
    } else {
        format!("  store volatile {t} %vi, ptr %pi, align {size}")
    };
    format!(
        "define internal void @{name}(<{W} x ptr> %p, <{W} x {t}> %v, <{W} x i1> %m) #0 {{
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %cont]
  %on = extractelement <{W} x i1> %m, i32 %i
  br i1 %on, label %do, label %cont
do:
  %pi = extractelement <{W} x ptr> %p, i32 %i
  %vi = extractelement <{W} x {t}> %v, i32 %i
{store}
  br label %cont
cont:
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, {W}
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"
    )
}

/// A helper performing an atomic operation for each executing lane in lane
/// order, returning the old values. `plain` uses a non-atomic
/// read-modify-write (shared memory on the CPU, where a block runs on one
/// OS thread).
/// A warp's atomics on memory only its block's OS thread touches (shared
/// memory on the CPU): straight-line code, lane after lane, in order. Lanes
/// outside the mask work on a scratch slot instead of branching around.
/// The tail of a warp function that goes on with the next warp
/// (`cpu_abi::WarpFn` chaining), entered from the plain-barrier `sites`
/// (the warp suspended) and from `wexit` (it finished). With no next warp
/// it completes the barrier by restarting warp 0 when the backend allows
/// it, and otherwise returns the warp's status.
fn chain_tail(sites: &[String]) -> String {
    use crate::cpu_abi::warp_frame as wf;
    let mut t = String::from("chain:\n");
    let mut status = format!("  %c.status = phi i32 [{}, %wexit]", wf::FINISHED);
    for site in sites {
        let _ = write!(status, ", [{}, %{site}]", wf::SUSPENDED);
    }
    let _ = writeln!(t, "{status}");
    let _ = writeln!(t, "  %c.endp = getelementptr i8, ptr %ctx, i64 {}", offsets::CHAIN_END);
    let _ = writeln!(t, "  %c.end = load i32, ptr %c.endp, align 4");
    let _ = writeln!(t, "  %c.next = add i32 %warp, 1");
    let _ = writeln!(t, "  %c.more = icmp ult i32 %c.next, %c.end");
    let _ = writeln!(t, "  %c.stridep = getelementptr i8, ptr %ctx, i64 {}", offsets::FRAME_STRIDE);
    let _ = writeln!(t, "  %c.stride32 = load i32, ptr %c.stridep, align 4");
    let _ = writeln!(t, "  %c.stride = zext i32 %c.stride32 to i64");
    let _ = writeln!(t, "  br i1 %c.more, label %chain.go, label %chain.last");
    let _ = writeln!(t, "chain.go:");
    let _ = writeln!(t, "  %c.frame = getelementptr i8, ptr %frame, i64 %c.stride");
    let _ = writeln!(t, "  %c.lastp = getelementptr i8, ptr %ctx, i64 {}", offsets::CHAIN_LAST);
    let _ = writeln!(t, "  store i32 %c.next, ptr %c.lastp, align 4");
    let _ = writeln!(t, "  br label %top");
    // The last warp arrived: when the chain holds the whole block (a
    // finishing warp clears the flag), the barrier completes and warp 0
    // goes on.
    let _ = writeln!(t, "chain.last:");
    let _ = writeln!(t, "  %c.wrapp = getelementptr i8, ptr %ctx, i64 {}", offsets::CHAIN_WRAP);
    let _ = writeln!(t, "  %c.wrap = load i32, ptr %c.wrapp, align 4");
    let _ = writeln!(t, "  %c.wraps = icmp ne i32 %c.wrap, 0");
    let _ = writeln!(t, "  br i1 %c.wraps, label %chain.wrap, label %chain.ret");
    let _ = writeln!(t, "chain.wrap:");
    let _ = writeln!(t, "  %c.index = zext i32 %warp to i64");
    let _ = writeln!(t, "  %c.back = mul i64 %c.stride, %c.index");
    let _ = writeln!(t, "  %c.neg = sub i64 0, %c.back");
    let _ = writeln!(t, "  %c.frame0 = getelementptr i8, ptr %frame, i64 %c.neg");
    for (k, offset) in [offsets::CHAIN_FIRST, offsets::CHAIN_LAST].into_iter().enumerate() {
        let _ = writeln!(t, "  %c.zp{k} = getelementptr i8, ptr %ctx, i64 {offset}");
        let _ = writeln!(t, "  store i32 0, ptr %c.zp{k}, align 4");
    }
    let _ = writeln!(t, "  br label %top");
    let _ = writeln!(t, "chain.ret:");
    let _ = writeln!(t, "  ret i32 %c.status");
    t
}

/// What a warp's atomic does, for its per-lane helper.
struct AtomicCall {
    op: Flag,
    ty: Ty,
    signed: bool,
    /// Plain read-modify-writes (shared memory on the CPU).
    plain: bool,
    a: V,
    c: V,
}

/// How the lanes' addresses reach a warp's plain atomics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LaneAddresses {
    /// `<32 x ptr> %p`.
    Pointers,
    /// A base pointer and 32-bit byte offsets (`ptr %p, <32 x i32> %x`), so
    /// that each lane is one extract and one read-modify-write with the
    /// base in the addressing mode, instead of a vector of 64-bit pointers.
    Offsets,
    /// A base pointer and indices the read-modify-write scales
    /// (`shared_index`): lane `k` at `%p + (%x[k] << shift)`.
    Scaled { index: Ty, shift: u32 },
    /// A base pointer and where the lanes' indices lie in memory, lane
    /// after lane (`ptr %p, ptr %q`): lane `k` loads its index, a `load`
    /// extended to `index` as the load would have, at `%q + k * size`.
    /// Only for warps whose every lane executes.
    Loaded { load: Ty, signed: bool, index: Ty, shift: u32 },
}

impl LaneAddresses {
    fn suffix(self) -> String {
        match self {
            LaneAddresses::Pointers => String::new(),
            LaneAddresses::Offsets => "_idx".into(),
            LaneAddresses::Scaled { index, shift } => format!("_{}x{}", index.name(), 1u32 << shift),
            LaneAddresses::Loaded { load, signed, index, shift } => {
                format!("_ld{}{}_{}x{}", if signed { "s" } else { "u" }, load.name(), index.name(), 1u32 << shift)
            }
        }
    }
}

fn plain_per_lane_atomic(name: &str, t: &str, size: u32, lane_body: &str, lanes: LaneAddresses) -> String {
    let index = match lanes {
        LaneAddresses::Pointers | LaneAddresses::Loaded { .. } => None,
        LaneAddresses::Offsets => Some(Ty::I32.name()),
        LaneAddresses::Scaled { index, .. } => Some(index.name()),
    };
    let addresses = match (index, lanes) {
        (_, LaneAddresses::Loaded { .. }) => "ptr %p, ptr %q".to_string(),
        (Some(x), _) => format!("ptr %p, <{W} x {x}> %x"),
        (None, _) => format!("<{W} x ptr> %p"),
    };
    let mut text = format!(
        "define internal <{W} x {t}> @{name}({addresses}, <{W} x {t}> %a, <{W} x {t}> %c, <{W} x i1> %m) #2 {{\nentry:\n  %scratch = alloca {t}, align {size}\n"
    );
    if let Some(x) = index {
        // The offsets go through the stack: a scalar load per lane is one
        // micro-op where extracting a lane from a vector register is two,
        // and the lanes' read-modify-writes are all this code does. (The
        // accesses are volatile so that LLVM does not turn them back into
        // extracts.)
        let _ = writeln!(text, "  %xs = alloca <{W} x {x}>, align 64");
        let _ = writeln!(text, "  store volatile <{W} x {x}> %x, ptr %xs, align 64");
    }
    // A converged warp (the common case) goes lane after lane without
    // testing each lane's bit.
    let paths: &[(&str, bool)] = if matches!(lanes, LaneAddresses::Loaded { .. }) {
        let _ = writeln!(text, "  br label %full");
        &[("full", false)]
    } else {
        let _ = writeln!(text, "  %all = call i1 @llvm.vector.reduce.and.v{W}i1(<{W} x i1> %m)");
        let _ = writeln!(text, "  br i1 %all, label %full, label %some");
        &[("full", false), ("some", true)]
    };
    for &(label, masked) in paths {
        let _ = writeln!(text, "{label}:");
        let mut acc = "poison".to_string();
        for k in 0..W {
            // Every local name of the lane's body gets the path's and the
            // lane's suffix.
            let body = lane_body.split('%').enumerate().fold(String::new(), |mut out, (i, part)| {
                if i == 0 {
                    out.push_str(part);
                } else {
                    let end = part.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(part.len());
                    let _ = write!(out, "%{}.{label}{k}{}", &part[..end], &part[end..]);
                }
                out
            });
            if let LaneAddresses::Loaded { load, signed, index, shift } = lanes {
                let (l, x, size) = (load.name(), index.name(), load.bits() / 8);
                let _ = writeln!(text, "  %ql.{label}{k} = getelementptr i8, ptr %q, i64 {}", k * size);
                let _ = writeln!(text, "  %xl.{label}{k} = load {l}, ptr %ql.{label}{k}, align {size}");
                if load == index {
                    let _ = writeln!(text, "  %xi.{label}{k} = add {x} %xl.{label}{k}, 0");
                } else {
                    let ext = if signed { "sext" } else { "zext" };
                    let _ = writeln!(text, "  %xi.{label}{k} = {ext} {l} %xl.{label}{k} to {x}");
                }
                let _ = writeln!(text, "  %xz.{label}{k} = zext {x} %xi.{label}{k} to i64");
                let _ = writeln!(text, "  %xo.{label}{k} = shl nuw nsw i64 %xz.{label}{k}, {shift}");
                let _ = writeln!(text, "  %pl.{label}{k} = getelementptr i8, ptr %p, i64 %xo.{label}{k}");
            } else if let Some(x) = index {
                let _ = writeln!(text, "  %xp.{label}{k} = getelementptr {x}, ptr %xs, i32 {k}");
                let _ = writeln!(text, "  %xi.{label}{k} = load volatile {x}, ptr %xp.{label}{k}");
                let _ = writeln!(text, "  %xz.{label}{k} = zext {x} %xi.{label}{k} to i64");
                let shift = match lanes {
                    LaneAddresses::Scaled { shift, .. } => shift,
                    _ => 0,
                };
                let _ = writeln!(text, "  %xo.{label}{k} = shl nuw nsw i64 %xz.{label}{k}, {shift}");
                let _ = writeln!(text, "  %pl.{label}{k} = getelementptr i8, ptr %p, i64 %xo.{label}{k}");
            } else {
                let _ = writeln!(text, "  %pl.{label}{k} = extractelement <{W} x ptr> %p, i32 {k}");
            }
            if masked {
                let _ = writeln!(text, "  %on.{label}{k} = extractelement <{W} x i1> %m, i32 {k}");
                let _ = writeln!(text, "  %pi.{label}{k} = select i1 %on.{label}{k}, ptr %pl.{label}{k}, ptr %scratch");
            } else {
                let _ = writeln!(text, "  %pi.{label}{k} = getelementptr i8, ptr %pl.{label}{k}, i64 0");
            }
            let _ = writeln!(text, "  %ai.{label}{k} = extractelement <{W} x {t}> %a, i32 {k}");
            let _ = writeln!(text, "  %ci.{label}{k} = extractelement <{W} x {t}> %c, i32 {k}");
            let _ = writeln!(text, "{body}");
            let _ = writeln!(text, "  %acc.{label}{k} = insertelement <{W} x {t}> {acc}, {t} %old.{label}{k}, i32 {k}");
            acc = format!("%acc.{label}{k}");
        }
        let _ = writeln!(text, "  ret <{W} x {t}> {acc}");
    }
    text.push_str("}\n\n");
    text
}

fn per_lane_atomic(name: &str, op: Flag, ty: Ty, signed: bool, plain: bool, lanes: LaneAddresses) -> String {
    let t = ty.name();
    let size = ty.bits() / 8;
    let float = ty.is_float();
    let body = if plain {
        let compute = match op {
            Flag::AddOp if float => format!("%new = fadd {t} %old, %ai"),
            Flag::AddOp => format!("%new = add {t} %old, %ai"),
            Flag::Exch => format!("%new = select i1 true, {t} %ai, {t} %ai"),
            Flag::And => format!("%new = and {t} %old, %ai"),
            Flag::Or => format!("%new = or {t} %old, %ai"),
            Flag::Xor => format!("%new = xor {t} %old, %ai"),
            Flag::MinOp => format!("%new = call {t} @llvm.{}.{t}({t} %old, {t} %ai)", if signed { "smin" } else { "umin" }),
            Flag::MaxOp => format!("%new = call {t} @llvm.{}.{t}({t} %old, {t} %ai)", if signed { "smax" } else { "umax" }),
            Flag::Inc => format!("%ge = icmp uge {t} %old, %ai\n  %inc = add {t} %old, 1\n  %new = select i1 %ge, {t} 0, {t} %inc"),
            Flag::Dec => format!("%z = icmp eq {t} %old, 0\n  %gt = icmp ugt {t} %old, %ai\n  %w = or i1 %z, %gt\n  %dec = sub {t} %old, 1\n  %new = select i1 %w, {t} %ai, {t} %dec"),
            _ => format!("%eq = icmp eq {t} %old, %ai\n  %new = select i1 %eq, {t} %ci, {t} %old"),
        };
        let lane_body = format!("  %old = load {t}, ptr %pi, align {size}\n  {compute}\n  store {t} %new, ptr %pi, align {size}");
        return plain_per_lane_atomic(name, t, size, &lane_body, lanes);
    } else {
        let rmw = match op {
            Flag::AddOp if float => "fadd",
            Flag::AddOp => "add",
            Flag::Exch => "xchg",
            Flag::And => "and",
            Flag::Or => "or",
            Flag::Xor => "xor",
            Flag::MinOp => {
                if signed {
                    "min"
                } else {
                    "umin"
                }
            }
            Flag::MaxOp => {
                if signed {
                    "max"
                } else {
                    "umax"
                }
            }
            Flag::Inc => "uinc_wrap",
            Flag::Dec => "udec_wrap",
            _ => "",
        };
        if op == Flag::Cas {
            format!("  %r = cmpxchg ptr %pi, {t} %ai, {t} %ci monotonic monotonic, align {size}\n  %old = extractvalue {{{t}, i1}} %r, 0")
        } else {
            format!("  %old = atomicrmw {rmw} ptr %pi, {t} %ai monotonic, align {size}")
        }
    };
    format!(
        "define internal <{W} x {t}> @{name}(<{W} x ptr> %p, <{W} x {t}> %a, <{W} x {t}> %c, <{W} x i1> %m) #0 {{
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %cont]
  %acc = phi <{W} x {t}> [zeroinitializer, %entry], [%acc2, %cont]
  %on = extractelement <{W} x i1> %m, i32 %i
  br i1 %on, label %do, label %cont
do:
  %pi = extractelement <{W} x ptr> %p, i32 %i
  %ai = extractelement <{W} x {t}> %a, i32 %i
  %ci = extractelement <{W} x {t}> %c, i32 %i
{body}
  %acc1 = insertelement <{W} x {t}> %acc, {t} %old, i32 %i
  br label %cont
cont:
  %acc2 = phi <{W} x {t}> [%acc, %loop], [%acc1, %do]
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, {W}
  br i1 %more, label %loop, label %done
done:
  ret <{W} x {t}> %acc2
}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registers `frame_layout` saves at the kernel's barriers, by
    /// name, in statement order.
    fn saved_at_barriers(body: &str) -> Vec<Vec<String>> {
        let src = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p, .param .u32 n)\n{{\n\
             .reg .pred %p<8>;\n.reg .b32 %r<40>;\n.reg .b64 %rd<40>;\n.reg .f32 %f<8>;\n.shared .align 4 .b8 s[128];\n{body}\n}}\n"
        );
        let m = ptx::parse(&src).expect("test PTX parses");
        let a = crate::layout::Analysis::new(&m);
        let (item, f) = m
            .items
            .iter()
            .enumerate()
            .find_map(|(i, it)| match it {
                Item::Function(f) => Some((i as ItemId, f)),
                _ => None,
            })
            .expect("a kernel");
        let b = f.body.as_ref().expect("a body");
        let frame = frame_layout(&a, item, f, crate::Tier::Optimized);
        let mut sites: Vec<(&usize, &Vec<RegId>)> = frame.sites.iter().collect();
        sites.sort();
        sites.into_iter().map(|(_, regs)| regs.iter().map(|&r| ptx::reg_name(f, b, r)).collect()).collect()
    }

    /// A loop before the barrier: its counter and accumulator are live into
    /// the loop's block, dead at the barrier.
    const LOOP_THEN_BARRIER: &str = "ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r3, 0;
mov.f32 %f1, 0f00000000;
LOOP:
cvt.rn.f32.u32 %f2, %r3;
add.f32 %f1, %f1, %f2;
add.s32 %r3, %r3, 1;
setp.lt.u32 %p1, %r3, %r2;
@%p1 bra LOOP;
mov.b32 %r4, %f1;
shl.b32 %r5, %r2, 2;
mov.u32 %r6, s;
add.s32 %r7, %r6, %r5;
st.shared.u32 [%r7], %r4;
BARRIER
ld.shared.u32 %r8, [%r6];
add.s32 %r9, %r8, %r1;
ld.param.u64 %rd1, [p];
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r9;
ret;";

    #[test]
    fn a_barrier_every_lane_reaches_together_saves_what_is_live_there() {
        let sites = saved_at_barriers(&LOOP_THEN_BARRIER.replace("BARRIER", "bar.sync 0;"));
        assert_eq!(sites.len(), 1, "{sites:?}");
        for r in ["%r1", "%r2", "%r6"] {
            assert!(sites[0].contains(&r.to_string()), "{r} is read after the barrier: {sites:?}");
        }
        for r in ["%r3", "%f1", "%f2", "%r4", "%r5", "%r7"] {
            assert!(!sites[0].contains(&r.to_string()), "{r} is dead at the barrier: {sites:?}");
        }
    }

    /// A barrier some lanes branch around: they wait at another block,
    /// and what they read there stays in the frame although the barrier's
    /// own lanes never read it again.
    #[test]
    fn a_barrier_where_lanes_may_wait_elsewhere_keeps_what_they_may_read() {
        let sites = saved_at_barriers(
            "mov.u32 %r2, %tid.x;
mul.lo.u32 %r10, %r2, 3;
ld.param.u64 %rd1, [p];
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
setp.lt.u32 %p2, %r2, 16;
@%p2 bra SKIP;
bar.sync 0;
st.global.u32 [%rd3], %r2;
bra.uni END;
SKIP:
st.global.u32 [%rd3], %r10;
END:
ret;",
        );
        assert_eq!(sites.len(), 1, "{sites:?}");
        for r in ["%r10", "%rd3"] {
            assert!(sites[0].contains(&r.to_string()), "{r} is kept: {sites:?}");
        }
    }
}
