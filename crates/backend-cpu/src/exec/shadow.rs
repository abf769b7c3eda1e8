//! The shadow tools of checked mode: initcheck (reads of device memory
//! nothing wrote) and racecheck (shared-memory hazards between the
//! synchronisations of a block). Checked code calls [`__anycuda_shadow`]
//! after the bounds check of each access while the launch runs a tool
//! (`BlockCtx::check_tools`), and [`__anycuda_race_sync`] after each
//! barrier and `bar.warp.sync`. Both report on the program's stderr and
//! return: like compute-sanitizer's tools, they do not end the launch.
//!
//! Racecheck keeps, per byte of the block's shared memory, the last write
//! and the first and last read since the accessing thread's last barrier,
//! each as (thread, the thread's barrier count, its `bar.warp.sync` count,
//! atomic or not, where). Two accesses of different threads are ordered
//! when the barrier counts differ (a block barrier lies between them: every
//! thread that goes on passed the same barriers), or, for threads of one
//! warp, when their warp-sync counts differ (a `__syncwarp` lies between
//! them); otherwise a write and another access of the same byte are a
//! hazard, unless both are atomics. A block's shadow is reused by the next
//! block the same runner runs (a generation number tells stale entries).

use std::ffi::c_char;

use compiler::cpu_abi::check_tools::{INITCHECK, RACECHECK};
use compiler::cpu_abi::memcheck as mc;
use compiler::cpu_abi::BlockCtx;

use super::runtime::{c_text, runtime, BlockRt};

/// One access recorded in racecheck's shadow.
#[derive(Clone, Copy, Default)]
struct Access {
    /// Linear thread index + 1 (0: none).
    thread: u32,
    epoch: u32,
    warp_epoch: u32,
    mbarrier_epoch: u32,
    atomic: bool,
    place: usize,
}

#[derive(Clone, Copy, Default)]
struct Byte {
    generation: u32,
    write: Access,
    first_read: Access,
    last_read: Access,
}

/// Racecheck's state for the block a runner runs.
pub(crate) struct RaceState {
    generation: u32,
    block: [u32; 3],
    /// Per thread: block barriers passed, `bar.warp.sync`s passed,
    /// mbarrier arrivals made.
    epochs: Vec<(u32, u32, u32)>,
    bytes: Vec<Byte>,
}

impl RaceState {
    /// The state for the block `rt` runs now, made or reset for it.
    fn for_block<'a>(slot: &'a mut Option<Box<RaceState>>, rt: &BlockRt, shared_bytes: usize) -> &'a mut RaceState {
        let block = rt.block.get();
        let state =
            slot.get_or_insert_with(|| Box::new(RaceState { generation: 0, block: [u32::MAX; 3], epochs: Vec::new(), bytes: Vec::new() }));
        if state.block != block || state.generation == 0 {
            state.block = block;
            state.generation = state.generation.wrapping_add(1).max(1);
            state.epochs.clear();
            // Every thread of the block (`nthreads` counts warps in warp mode).
            let [x, y, z] = rt.ntid;
            state.epochs.resize((x * y * z) as usize, (0, 0, 0));
        }
        if state.bytes.len() < shared_bytes {
            state.bytes.resize(shared_bytes, Byte::default());
        }
        state
    }
}

/// Checked mode with shadow tools: one thread's access that passed the
/// bounds check.
///
/// # Safety
/// As for `__anycuda_memcheck`; `place` is a NUL-terminated string.
pub unsafe extern "C" fn __anycuda_shadow(ctx: *mut BlockCtx, thread: u32, address: u64, access: u32, place: *const c_char) {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return };
    // SAFETY: as above.
    unsafe { shadow_one(rt, ctx, rt.thread_index(thread), address, access, place) };
}

/// [`__anycuda_shadow`] for the lanes `mask` of the warp whose first thread
/// is `first`, at `addresses[lane]`.
///
/// # Safety
/// As for [`__anycuda_shadow`]; `addresses` points to 32 u64.
pub unsafe extern "C" fn __anycuda_shadow_warp(
    ctx: *mut BlockCtx,
    first: u32,
    addresses: *const u8,
    mask: u32,
    access: u32,
    place: *const c_char,
) {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return };
    for lane in 0..32u32 {
        if mask & (1 << lane) != 0 {
            // SAFETY: per the contract, 32 addresses.
            let address = unsafe { addresses.cast::<u64>().add(lane as usize).read_unaligned() };
            // SAFETY: as above.
            unsafe { shadow_one(rt, ctx, first + lane, address, access, place) };
        }
    }
}

/// Racecheck: threads passed a synchronisation (see
/// `cpu_abi::runtime::RACE_SYNC`). `kind` has [`SYNC_LANES`] when the
/// caller is a warp-mode function: then `lanes` are lanes of the warp whose
/// first thread is `thread`; otherwise `thread` is the calling thread.
///
/// # Safety
/// As for `__anycuda_memcheck`.
pub unsafe extern "C" fn __anycuda_race_sync(ctx: *mut BlockCtx, thread: u32, lanes: u32, kind: u32) {
    // SAFETY: called from compiled code with its ctx.
    let Some(rt) = (unsafe { runtime(ctx) }) else { return };
    // SAFETY: `ctx` is the block's live context.
    let (tools, shared_bytes) = unsafe { ((*ctx).check_tools, (*ctx).shared_bytes as usize) };
    if tools & RACECHECK == 0 {
        return;
    }
    let Ok(mut slot) = rt.race.try_borrow_mut() else { return };
    let state = RaceState::for_block(&mut slot, rt, shared_bytes);
    let threads: Vec<u32> = if kind & SYNC_LANES != 0 {
        (0..32).filter(|l| lanes & (1 << l) != 0).map(|l| thread + l).collect()
    } else {
        vec![rt.thread_index(thread)]
    };
    for t in threads {
        if let Some(e) = state.epochs.get_mut(t as usize) {
            match kind & !SYNC_LANES {
                mc::SYNC_WARP => e.1 = e.1.wrapping_add(1),
                mc::SYNC_MBARRIER => e.2 = e.2.wrapping_add(1),
                _ => e.0 = e.0.wrapping_add(1),
            }
        }
    }
}

/// The flag of [`__anycuda_race_sync`]'s `kind` for calls from warp-mode
/// functions.
pub(crate) const SYNC_LANES: u32 = compiler::cpu_abi::memcheck::SYNC_LANES;

/// # Safety
/// As for [`__anycuda_shadow`].
unsafe fn shadow_one(rt: &BlockRt, ctx: *mut BlockCtx, linear: u32, address: u64, access: u32, place: *const c_char) {
    let size = u64::from(access & mc::SIZE_MASK);
    if size == 0 {
        return;
    }
    let space = (access >> mc::SPACE_SHIFT) & 0xf;
    // SAFETY: `ctx` is the block's live context.
    let (tools, shared_base, shared_bytes, grid) =
        unsafe { ((*ctx).check_tools, (*ctx).shared as u64, u64::from((*ctx).shared_bytes), (*ctx).gridid) };
    let in_shared = address >= shared_base && address - shared_base < shared_bytes;
    let read = access & mc::READ != 0;
    let write = access & mc::WRITE != 0;
    if tools & RACECHECK != 0 && (space == mc::SHARED || space == mc::GENERIC) && in_shared && access & mc::SYNC_OBJECT == 0 {
        let offset = address - shared_base;
        let n = size.min(shared_bytes - offset);
        race_access(rt, grid, linear, offset, n, read, write, place, shared_bytes as usize);
    }
    if tools & INITCHECK != 0 && !in_shared && matches!(space, mc::GLOBAL | mc::GENERIC) {
        if let Some((count, first, start, len)) = crate::memcheck::kernel_access(address, size, read, write) {
            if crate::memcheck::first_report(("kernel", grid, place as usize, start)) {
                // SAFETY: a constant string of the compiled code.
                let where_ = unsafe { c_text(place) };
                let what = if space == mc::GLOBAL { "__global__" } else { "generic (global)" };
                let kind = if write { "atomic" } else { "read" };
                let report = format!(
                    "========= anycuda initcheck: uninitialized {what} memory {kind} of size {size} bytes\n\
                     =========     at kernel {} in {where_}\n\
                     =========     by thread {} in block {}\n\
                     =========     address {address:#x}: {count} of its bytes were never written, the first at {first:#x}, {} bytes into a {len}-byte device allocation at {start:#x}\n",
                    rt.job().kernel_name,
                    coords(rt, linear),
                    triple(rt.block.get()),
                    first - start,
                );
                emit(rt, &report);
            }
        }
    }
}

fn triple(v: [u32; 3]) -> String {
    format!("({},{},{})", v[0], v[1], v[2])
}

/// A linear thread index as `(x,y,z)`.
fn coords(rt: &BlockRt, linear: u32) -> String {
    let [x, y, _] = rt.ntid;
    let (x, y) = (x.max(1), y.max(1));
    triple([linear % x, (linear / x) % y, linear / (x * y)])
}

fn emit(rt: &BlockRt, report: &str) {
    crate::memcheck::record(report);
    rt.job().shared.output.stderr(report.as_bytes());
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hazard {
    ReadAfterWrite,
    WriteAfterWrite,
    WriteAfterRead,
}

impl Hazard {
    fn describe(self) -> &'static str {
        match self {
            Hazard::ReadAfterWrite => "read-after-write",
            Hazard::WriteAfterWrite => "write-after-write",
            Hazard::WriteAfterRead => "write-after-read",
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn race_access(
    rt: &BlockRt,
    grid: u64,
    linear: u32,
    offset: u64,
    size: u64,
    read: bool,
    write: bool,
    place: *const c_char,
    shared_bytes: usize,
) {
    let Ok(mut slot) = rt.race.try_borrow_mut() else { return };
    let state = RaceState::for_block(&mut slot, rt, shared_bytes);
    let generation = state.generation;
    let (epoch, warp_epoch, mbarrier_epoch) = state.epochs.get(linear as usize).copied().unwrap_or((0, 0, 0));
    let me = Access { thread: linear + 1, epoch, warp_epoch, mbarrier_epoch, atomic: read && write, place: place as usize };
    // Whether an earlier access `a` is unordered with this one: another
    // thread's, with no barrier, mbarrier arrival or (in one warp)
    // `__syncwarp` between them, and not two atomics or an atomic and a
    // plain read (which reads a whole value: the read of a
    // compare-and-swap loop).
    let races = |a: &Access, a_reads: bool| {
        a.thread != 0
            && a.thread != me.thread
            && a.epoch == epoch
            && a.mbarrier_epoch == mbarrier_epoch
            && ((a.thread - 1) / 32 != linear / 32 || a.warp_epoch == warp_epoch)
            && !(a.atomic && (me.atomic || !write))
            && !(a_reads && me.atomic)
    };
    let mut found: Option<(Hazard, Access, u64)> = None;
    for at in offset..offset + size {
        let Some(b) = state.bytes.get_mut(at as usize) else { break };
        if b.generation != generation {
            *b = Byte { generation, ..Byte::default() };
        }
        if found.is_none() {
            if races(&b.write, false) {
                let h = if write { Hazard::WriteAfterWrite } else { Hazard::ReadAfterWrite };
                found = Some((h, b.write, at));
            } else if write {
                if let Some(r) = [b.first_read, b.last_read].into_iter().find(|r| races(r, true)) {
                    found = Some((Hazard::WriteAfterRead, r, at));
                }
            }
        }
        if write {
            b.write = me;
        }
        if read {
            if b.first_read.thread == 0 || b.first_read.epoch != epoch {
                b.first_read = me;
            }
            b.last_read = me;
        }
    }
    drop(slot);
    let Some((hazard, other, at)) = found else { return };
    if !crate::memcheck::first_report(("race", grid, hazard.describe(), place as usize, other.place)) {
        return;
    }
    // SAFETY: constant strings of the compiled code.
    let (here, there) = unsafe { (c_text(place), c_text(other.place as *const c_char)) };
    let (now, before) = match hazard {
        Hazard::ReadAfterWrite => ("read", "write"),
        Hazard::WriteAfterWrite => ("write", "write"),
        Hazard::WriteAfterRead => ("write", "read"),
    };
    let now = if me.atomic { "atomic" } else { now };
    let before = if other.atomic { "atomic" } else { before };
    let report = format!(
        "========= anycuda racecheck: {} hazard on __shared__ memory at offset {at:#x} in block {}\n\
         =========     {now} by thread {} at kernel {} in {here}\n\
         =========     unordered with the {before} by thread {} in {there} (no barrier between them)\n",
        hazard.describe(),
        triple(rt.block.get()),
        coords(rt, linear),
        rt.job().kernel_name,
        coords(rt, other.thread - 1),
    );
    emit(rt, &report);
}
