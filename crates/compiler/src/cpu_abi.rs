//! The contract between kernels compiled for the host CPU and the CPU
//! backend that runs them.
//!
//! A compiled module is a relocatable object. For each PTX kernel it defines
//! two functions (see [`KernelSymbols`]):
//!
//! * `thread(params, ctx, tid_x, tid_y, tid_z)` runs one thread to
//!   completion (or until it suspends inside a runtime call, see below);
//!   in warp mode it is a [`WarpFn`] running the 32 lanes of one warp;
//! * `block(params, ctx)` runs every thread of the block, one after the
//!   other, and exists only for kernels whose threads never wait for each
//!   other (`KernelInfo::needs_scheduler` is false).
//!
//! `params` (16-byte aligned) points to the kernel's parameter buffer laid out as
//! [`KernelInfo::params`] says; `ctx` points to the block's [`BlockCtx`],
//! shared by all threads of the block.
//!
//! Compiled code calls the runtime functions listed in [`runtime`];
//! the backend defines them when it loads the object. Every runtime call
//! that involves other threads (barriers, warp collectives) may suspend the
//! calling thread; the backend runs such kernels with one coroutine per
//! thread. `thread` is the linear thread index in the block
//! (`x + y*ntid.x + z*ntid.x*ntid.y`); `site` identifies the instruction
//! (unique per module, increasing in program order) so that lanes arriving
//! at the same instruction can be grouped.

use std::ffi::c_void;

/// Per-block state read by compiled code. Field offsets are part of the ABI.
#[repr(C)]
#[derive(Debug)]
pub struct BlockCtx {
    pub ntid: [u32; 3],
    /// `ntid.x * ntid.y * ntid.z`
    pub nthreads: u32,
    pub ctaid: [u32; 3],
    pub smid: u32,
    pub nctaid: [u32; 3],
    pub nsmid: u32,
    /// Base of the block's shared memory window: static variables first,
    /// then the dynamic part. Shared-space addresses are offsets from here.
    pub shared: *mut u8,
    /// Size of the whole window (static + dynamic).
    pub shared_bytes: u32,
    /// Offset of the dynamic part (`extern .shared` arrays) in the window.
    pub dynamic_shared_offset: u32,
    pub dynamic_shared_bytes: u32,
    /// Targets whose `exit` in a called function returns
    /// (`TargetFacts::exit_returns`, AMD GPUs): set to 1 by that `exit`;
    /// callers stop after a call that left it set. Unused on the host.
    pub exited: u32,
    pub gridid: u64,
    /// `%envreg0`..`%envreg31`; cooperative launches put the grid-sync
    /// workspace address ([`GRID_SYNC_WORKSPACE`] zeroed bytes) in envreg1
    /// (high 32 bits) / envreg2 (low 32 bits), as cooperative groups reads it.
    pub envreg: [u32; 32],
    /// Owned by the backend; compiled code only passes `ctx` back.
    pub runtime: *mut c_void,
    /// Warp chaining (see [`WarpFn`]): warps below `chain_end` after the
    /// called one may run in the same call, each frame `frame_stride`
    /// bytes after the previous; `chain_last` is the warp that ran last and
    /// `chain_first` the first of the barrier round it ran in. With
    /// `chain_wrap` set, the last warp's arrival completes the barrier and
    /// warp 0 goes on.
    pub chain_end: u32,
    pub frame_stride: u32,
    pub chain_first: u32,
    pub chain_last: u32,
    pub chain_wrap: u32,
    /// Checked mode: the shadow-memory tools this launch runs
    /// ([`check_tools`] bits; 0: memcheck alone). Checked code calls
    /// [`runtime::SHADOW`] for each access while it is not zero.
    pub check_tools: u32,
    /// Checked mode (`Options::memcheck`): [`MEMCHECK_SLOTS`] `[low, length]`
    /// ranges an access was last found in, for all the threads the runner
    /// runs (zero: none; see [`runtime::MEMCHECK`]). Each checked
    /// instruction uses one slot, chosen when compiled, so that accesses to
    /// different buffers do not evict each other.
    pub memcheck: [[u64; 2]; MEMCHECK_SLOTS],
    /// The runner's table of privatised adds (`privatise.rs`), or null:
    /// a launch whose `KernelInfo::privatise` condition does not hold
    /// makes every atomic on memory.
    pub private_adds: *mut PrivateAdds,
    /// Targets whose printf writes records for the host
    /// (`TargetFacts::printf_records`, AMD GPUs): the launch's record
    /// buffer (`printf_records` layout), or null; unused on the host.
    pub printf_records: *mut u8,
    /// Targets whose device `malloc` runs in compiled code
    /// (AMD GPUs): the device's heap
    /// (`device_heap` layout), or null; unused on the host.
    pub heap: *mut u8,
    /// Targets whose code objects cannot see each other's variables
    /// (`TargetFacts::links_units` false, AMD GPUs): the module's
    /// [`KernelSymbols::VARIABLE_TABLE`], the address of each of its
    /// `.global`/`.const` variables in `ModuleInfo::globals` order, which
    /// the code of kernels compiled apart reads them through; null where
    /// the module has none. Unused on the host (its units link).
    pub variables: *const u64,
}

/// Bytes of the zeroed grid-sync workspace a cooperative launch passes in
/// [`BlockCtx::envreg`] (cooperative groups' `grid.sync()` counts the
/// arriving blocks in its first word).
pub const GRID_SYNC_WORKSPACE: usize = 256;

/// Slots of [`PrivateAdds`] (a power of two).
pub const PRIVATE_SLOTS: usize = 1024;

/// Entries of [`PrivateAdds::window`]: one per value of a byte.
pub const PRIVATE_WINDOW: usize = 256;

/// Pending integer adds of privatised atomics (`privatise.rs`), one
/// table per runner: direct-mapped by address (`(address >> 2) %
/// PRIVATE_SLOTS`), each slot a key (the address, plus 1 for a 64-bit
/// add; 0: empty) and the sum of the adds not yet made. Compiled code
/// fills it; the backend applies it ([`PrivateAdds::flush`]) when a block
/// ends. `list[..used]` are the occupied slots.
///
/// Besides the slots, a window for warps whose lanes index one base by
/// the bytes they loaded (`privatise::warp_window_add_helper`): entry `i`
/// is for the address `base + (i << window_shift)`, where `base` is
/// `window_key` less its low bit (set for 64-bit adds; 0: no window).
/// `window_taken[i]` is 0 until an add on memory at that address
/// succeeded, then 1; `window[i]` is the sum of the adds not yet made
/// there. `window_list[..window_used]` are the entries taken. Compiled
/// code moves the window to another base after making its pending adds.
#[repr(C)]
pub struct PrivateAdds {
    pub used: u32,
    pub _pad: u32,
    pub list: [u16; PRIVATE_SLOTS],
    pub slots: [[u64; 2]; PRIVATE_SLOTS],
    pub window_key: u64,
    pub window_shift: u32,
    pub window_used: u32,
    pub window_list: [u8; PRIVATE_WINDOW],
    pub window_taken: [u8; PRIVATE_WINDOW],
    pub window: [u64; PRIVATE_WINDOW],
}

impl Default for PrivateAdds {
    fn default() -> Self {
        PrivateAdds {
            used: 0,
            _pad: 0,
            list: [0; PRIVATE_SLOTS],
            slots: [[0; 2]; PRIVATE_SLOTS],
            window_key: 0,
            window_shift: 0,
            window_used: 0,
            window_list: [0; PRIVATE_WINDOW],
            window_taken: [0; PRIVATE_WINDOW],
            window: [0; PRIVATE_WINDOW],
        }
    }
}

impl PrivateAdds {
    /// Whether any add waits in the table (in a slot or the window).
    pub fn pending(&self) -> bool {
        self.used != 0 || self.window_used != 0
    }

    /// Makes every pending add with an atomic add on memory and empties
    /// the table.
    ///
    /// # Safety
    /// Every key's address must be valid for an atomic access of its
    /// width: compiled code only enters an aligned address after an
    /// atomic add on it succeeded.
    pub unsafe fn flush(&mut self) {
        let used = (self.used as usize).min(PRIVATE_SLOTS);
        for k in 0..used {
            let slot = &mut self.slots[usize::from(self.list[k]) % PRIVATE_SLOTS];
            let [key, delta] = *slot;
            *slot = [0, 0];
            if key == 0 || delta == 0 {
                continue;
            }
            // SAFETY: the caller's contract (aligned, valid for atomics).
            unsafe { add_at(key, (key & !1) as usize, delta) };
        }
        self.used = 0;
        let base = (self.window_key & !1) as usize;
        let used = (self.window_used as usize).min(PRIVATE_WINDOW);
        for k in 0..used {
            let i = usize::from(self.window_list[k]);
            self.window_taken[i] = 0;
            let delta = std::mem::take(&mut self.window[i]);
            if delta != 0 {
                let address = base.wrapping_add(i << (self.window_shift % 64));
                // SAFETY: as for the slots: an entry is taken only after
                // an atomic add at its address succeeded.
                unsafe { add_at(self.window_key, address, delta) };
            }
        }
        self.window_used = 0;
    }

    /// Empties the table without making its adds (those of a block that
    /// failed: the launch reports the failure, and nothing writes memory
    /// after it).
    pub fn discard(&mut self) {
        let used = (self.used as usize).min(PRIVATE_SLOTS);
        for k in 0..used {
            self.slots[usize::from(self.list[k]) % PRIVATE_SLOTS] = [0, 0];
        }
        self.used = 0;
        let used = (self.window_used as usize).min(PRIVATE_WINDOW);
        for k in 0..used {
            let i = usize::from(self.window_list[k]);
            self.window_taken[i] = 0;
            self.window[i] = 0;
        }
        self.window_used = 0;
    }
}

/// Adds `delta` at `address` with an atomic of the width `key` says (its
/// low bit: 64 bits).
///
/// # Safety
/// `address` must be valid and aligned for an atomic access of that width.
unsafe fn add_at(key: u64, address: usize, delta: u64) {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    // SAFETY: the caller's contract.
    unsafe {
        if key & 1 == 1 {
            AtomicU64::from_ptr(address as *mut u64).fetch_add(delta, Ordering::Relaxed);
        } else {
            AtomicU32::from_ptr(address as *mut u32).fetch_add(delta as u32, Ordering::Relaxed);
        }
    }
}

/// The number of range caches in [`BlockCtx::memcheck`].
pub const MEMCHECK_SLOTS: usize = 16;

/// Byte offsets of [`BlockCtx`] fields, for code generation.
pub mod offsets {
    use super::BlockCtx;
    use std::mem::offset_of;
    pub const NTID: usize = offset_of!(BlockCtx, ntid);
    pub const NTHREADS: usize = offset_of!(BlockCtx, nthreads);
    pub const CTAID: usize = offset_of!(BlockCtx, ctaid);
    pub const SMID: usize = offset_of!(BlockCtx, smid);
    pub const NCTAID: usize = offset_of!(BlockCtx, nctaid);
    pub const NSMID: usize = offset_of!(BlockCtx, nsmid);
    pub const SHARED: usize = offset_of!(BlockCtx, shared);
    pub const SHARED_BYTES: usize = offset_of!(BlockCtx, shared_bytes);
    pub const DYNAMIC_SHARED_OFFSET: usize = offset_of!(BlockCtx, dynamic_shared_offset);
    pub const DYNAMIC_SHARED_BYTES: usize = offset_of!(BlockCtx, dynamic_shared_bytes);
    pub const EXITED: usize = offset_of!(BlockCtx, exited);
    pub const GRIDID: usize = offset_of!(BlockCtx, gridid);
    pub const ENVREG: usize = offset_of!(BlockCtx, envreg);
    pub const CHAIN_END: usize = offset_of!(BlockCtx, chain_end);
    pub const FRAME_STRIDE: usize = offset_of!(BlockCtx, frame_stride);
    pub const CHAIN_FIRST: usize = offset_of!(BlockCtx, chain_first);
    pub const CHAIN_LAST: usize = offset_of!(BlockCtx, chain_last);
    pub const CHAIN_WRAP: usize = offset_of!(BlockCtx, chain_wrap);
    pub const MEMCHECK: usize = offset_of!(BlockCtx, memcheck);
    pub const CHECK_TOOLS: usize = offset_of!(BlockCtx, check_tools);
    pub const PRIVATE_ADDS: usize = offset_of!(BlockCtx, private_adds);
    pub const PRINTF_RECORDS: usize = offset_of!(BlockCtx, printf_records);
    pub const HEAP: usize = offset_of!(BlockCtx, heap);
    pub const VARIABLES: usize = offset_of!(BlockCtx, variables);
    pub const PRIVATE_USED: usize = offset_of!(super::PrivateAdds, used);
    pub const PRIVATE_LIST: usize = offset_of!(super::PrivateAdds, list);
    pub const PRIVATE_SLOTS: usize = offset_of!(super::PrivateAdds, slots);
    pub const PRIVATE_WINDOW_KEY: usize = offset_of!(super::PrivateAdds, window_key);
    pub const PRIVATE_WINDOW_SHIFT: usize = offset_of!(super::PrivateAdds, window_shift);
    pub const PRIVATE_WINDOW_USED: usize = offset_of!(super::PrivateAdds, window_used);
    pub const PRIVATE_WINDOW_LIST: usize = offset_of!(super::PrivateAdds, window_list);
    pub const PRIVATE_WINDOW_TAKEN: usize = offset_of!(super::PrivateAdds, window_taken);
    pub const PRIVATE_WINDOW: usize = offset_of!(super::PrivateAdds, window);
}

/// The printf record buffer of targets whose printf writes records for the
/// host to decode (`TargetFacts::printf_records`; [`BlockCtx::printf_records`]):
/// a header, then records from [`printf_records::RECORDS`] on, each a
/// multiple of 8 bytes: `u32` size of the record, `u32` format length
/// (with [`printf_records::STDERR`] for text meant for standard error),
/// `u32` argument bytes, `u32` count of `%s` strings; the format's bytes
/// (no NUL), padded to 8; the packed arguments, padded to 8; per `%s`
/// argument in order, `u32` length ([`printf_records::NULL_STRING`] for a
/// null pointer), `u32` 0 and the string's bytes (no NUL), padded to 8.
/// `crate::printf::decode_records` reads them. Failed assertions write
/// their message as a record to standard error and set
/// [`printf_records::ASSERTED`] in the header's flags; traps write where
/// they happened as a record for the host's error
/// ([`printf_records::FAULT`]) and set [`printf_records::TRAPPED`].
pub mod printf_records {
    /// `u32`: bytes of records reserved so far (may pass the capacity:
    /// those that did not fit were dropped).
    pub const USED: usize = 0;
    /// `u32`: records dropped for want of room.
    pub const DROPPED: usize = 4;
    /// `u32`: what happened on the device since the host last read the
    /// buffer ([`ASSERTED`], [`TRAPPED`]).
    pub const FLAGS: usize = 8;
    /// `u32`: bytes of room for records after the header.
    pub const CAPACITY: usize = 12;
    /// Where records start.
    pub const RECORDS: usize = 16;
    /// A record's fixed part.
    pub const RECORD_HEADER: usize = 16;
    /// The length of a `%s` argument that is a null pointer.
    pub const NULL_STRING: u32 = u32::MAX;
    /// Bytes of a `%s` string copied at most (longer ones are cut).
    pub const MAX_STRING: u32 = 4096;
    /// In a record's format length: the text goes to standard error.
    pub const STDERR: u32 = 1 << 31;
    /// In a record's format length: the text describes a fault, for the
    /// error the host reports, not for the program's output.
    pub const FAULT: u32 = 1 << 30;
    /// In the header's flags: a thread failed an assertion.
    pub const ASSERTED: u32 = 1;
    /// In the header's flags: a thread executed `trap`.
    pub const TRAPPED: u32 = 2;
    /// Where a `trap` happened, with its arguments: block x/y/z, thread
    /// x/y/z, the place the compiler wrote (function and PTX line). The
    /// host's own traps say the same.
    pub const TRAP_FORMAT: &str = "trap in block [%u, %u, %u], thread [%u, %u, %u], at %s";
    /// What a failed assertion prints (CUDA's words), with its arguments:
    /// file, line, function, block x/y/z, thread x/y/z, message.
    pub const ASSERT_FORMAT: &str = "%s:%d: %s: block: [%d,%d,%d], thread: [%d,%d,%d] Assertion `%s` failed.\n";
}

/// The device heap of targets whose `malloc` runs in compiled code
/// (AMD GPUs; [`BlockCtx::heap`]): a header, then the
/// arena, from which blocks are carved in order ([`device_heap::BUMP`])
/// and to which freed blocks return on one free list per size class
/// ([`device_heap::class_of`]), lock-free: every update is a
/// compare-and-swap, so the lanes of a wavefront, which cannot wait for
/// each other, never wait for a lock. A list head is a block's offset in
/// the arena in units of 16 bytes (0: empty; the arena's first 16 bytes
/// are never handed out) in its low [`device_heap::OFFSET_BITS`] bits and
/// a count of the head's changes above them, so that a head that left and
/// came back is not taken for the one a pop read (ABA). Each block starts
/// with a 16-byte header: `u32` class, `u32` state ([`device_heap::ALLOCATED`]
/// or [`device_heap::FREED`]: a block freed twice is freed once), `u64` the
/// next free block's head word; `malloc` returns the bytes after it.
pub mod device_heap {
    /// `u64`: bytes of the arena carved so far (starts at 16).
    pub const BUMP: usize = 0;
    /// `u64`: the arena's size in bytes (`cudaLimitMallocHeapSize`).
    pub const ARENA_BYTES: usize = 8;
    /// `u64` per size class: the head of its free list.
    pub const HEADS: usize = 16;
    /// Size classes (blocks up to 2^41 bytes, larger than any heap).
    pub const CLASSES: usize = 160;
    /// Where the arena starts.
    pub const ARENA: usize = HEADS + 8 * CLASSES;
    /// A block's header.
    pub const BLOCK_HEADER: usize = 16;
    /// Offset of a block's state in its header.
    pub const STATE: usize = 4;
    /// Offset of a block's free-list link in its header.
    pub const NEXT: usize = 8;
    /// A block's state while allocated.
    pub const ALLOCATED: u32 = 0xa110_c8ed;
    /// A block's state once freed.
    pub const FREED: u32 = 0xf7ee_b10c;
    /// Bits of a list head that hold the block's offset (in 16-byte units).
    pub const OFFSET_BITS: u32 = 38;
    /// Requests above this many bytes fail at once (null).
    pub const MAX_REQUEST: u64 = 1 << 40;

    /// The size class of a request of `bytes` and the size of its blocks
    /// (header included): up to 64 bytes, a class per 16 bytes; then four
    /// classes per power of two, so a block wastes at most a quarter of
    /// its size. The AMD runtime's `malloc` computes the same in IR.
    pub fn class_of(bytes: u64) -> Option<(u32, u64)> {
        if bytes > MAX_REQUEST {
            return None;
        }
        // 16-byte units, header included.
        let units = bytes.div_ceil(16) + 1;
        if units <= 4 {
            return Some((units as u32 - 1, units * 16));
        }
        let p = 63 - (units - 1).leading_zeros();
        let step = 1u64 << (p - 2);
        let j = (units - (1 << p)).div_ceil(step);
        Some((4 * (p - 1) + j as u32 - 1, ((1 << p) + j * step) * 16))
    }
}

/// The bits of [`BlockCtx::check_tools`]: the tools of checked mode beyond
/// memcheck (`ANYCUDA_MEMCHECK=initcheck`, `racecheck`).
pub mod check_tools {
    /// Reads of device memory nothing wrote since it was allocated.
    pub const INITCHECK: u32 = 1;
    /// Shared-memory hazards between the barriers of a block.
    pub const RACECHECK: u32 = 2;
    /// With initcheck, device-to-host copies of unwritten bytes too (off by
    /// default: copying back a whole buffer, struct padding included, is
    /// common and harmless, and compute-sanitizer's initcheck reports the
    /// GPU's accesses).
    pub const INITCHECK_HOST: u32 = 4;
}

/// `shfl.sync` modes (argument `mode` of `__anycuda_shfl`).
pub mod shfl {
    pub const UP: u32 = 0;
    pub const DOWN: u32 = 1;
    pub const BFLY: u32 = 2;
    pub const IDX: u32 = 3;
}

/// `vote.sync` modes.
pub mod vote {
    pub const ALL: u32 = 0;
    pub const ANY: u32 = 1;
    pub const UNI: u32 = 2;
    pub const BALLOT: u32 = 3;
}

/// `match.sync` modes.
pub mod matching {
    pub const ANY: u32 = 0;
    pub const ALL: u32 = 1;
}

/// `redux.sync` operations.
pub mod redux {
    pub const ADD: u32 = 0;
    pub const MIN_U32: u32 = 1;
    pub const MAX_U32: u32 = 2;
    pub const MIN_S32: u32 = 3;
    pub const MAX_S32: u32 = 4;
    pub const AND: u32 = 5;
    pub const OR: u32 = 6;
    pub const XOR: u32 = 7;
}

/// `bar.red` operations.
pub mod bar_red {
    pub const POPC: u32 = 0;
    pub const AND: u32 = 1;
    pub const OR: u32 = 2;
}

/// Texture and surface instructions: the operation word of
/// `__anycuda_tex`, `__anycuda_suld`/`sust` and `__anycuda_txq`.
pub mod tex {
    /// Geometry (bits 0..3) of `tex`/`tld4` and `suld`/`sust`.
    pub const D1: u32 = 1;
    pub const D2: u32 = 2;
    pub const D3: u32 = 3;
    pub const A1D: u32 = 4;
    pub const A2D: u32 = 5;
    pub const CUBE: u32 = 6;
    pub const ACUBE: u32 = 7;
    pub const GEOMETRY_MASK: u32 = 0xf;
    /// `tex`: the coordinates are `.s32` texel indices.
    pub const INT_COORDS: u32 = 0x10;
    /// `tex`: the result type (bits 5..6).
    pub const RESULT_SHIFT: u32 = 5;
    pub const RESULT_F32: u32 = 0;
    pub const RESULT_S32: u32 = 1;
    pub const RESULT_U32: u32 = 2;
    /// `tld4`: the component plus one (bits 8..10); 0 for `tex`.
    pub const GATHER_SHIFT: u32 = 8;
    /// `tex.grad` (bit 11; `tex.level` without it).
    pub const GRAD: u32 = 0x800;
    /// `suld`/`sust`: log2 of the element's bytes (bits 4..5), log2 of the
    /// vector length (bits 6..7), the out-of-range mode (bits 8..9).
    pub const SIZE_SHIFT: u32 = 4;
    pub const VEC_SHIFT: u32 = 6;
    pub const CLAMP_SHIFT: u32 = 8;
    pub const TRAP: u32 = 0;
    pub const CLAMP: u32 = 1;
    pub const ZERO: u32 = 2;
    /// `sust.p`/`sured.p` (bit 10): the x coordinate counts samples, and
    /// the data's type follows the surface's format.
    pub const FORMATTED: u32 = 0x400;
    /// `sured`: the reduction (bits 11..13) and whether `.min`/`.max`
    /// compare as signed (bit 14; for `sured.p`, the format says).
    pub const RED_SHIFT: u32 = 11;
    pub const RED_ADD: u32 = 0;
    pub const RED_MIN: u32 = 1;
    pub const RED_MAX: u32 = 2;
    pub const RED_AND: u32 = 3;
    pub const RED_OR: u32 = 4;
    pub const RED_SIGNED: u32 = 0x4000;
    /// `istypep`'s kinds.
    pub const IS_TEXTURE: u32 = 0;
    pub const IS_SAMPLER: u32 = 1;
    pub const IS_SURFACE: u32 = 2;
    /// `txq`/`suq` queries.
    pub const Q_WIDTH: u32 = 0;
    pub const Q_HEIGHT: u32 = 1;
    pub const Q_DEPTH: u32 = 2;
    pub const Q_ARRAY_SIZE: u32 = 3;
    pub const Q_NUM_MIPMAP_LEVELS: u32 = 4;
    pub const Q_NORMALIZED_COORDS: u32 = 5;
    pub const Q_FILTER_MODE: u32 = 6;
    pub const Q_ADDR_MODE_0: u32 = 7;
    pub const Q_NUM_SAMPLES: u32 = 10;
}

/// The C types of runtime functions' parameters and results. Each is one
/// LLVM type ([`AbiTy::llvm`]) and one Rust type ([`runtime_types`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiTy {
    /// No result.
    Void,
    /// `*mut BlockCtx`.
    Ctx,
    U32,
    I32,
    U64,
    /// `*const u8`
    Bytes,
    /// `*mut u8`
    BytesMut,
    /// `*const c_char`: a NUL-terminated string.
    Str,
    /// `*mut c_void`: heap memory.
    Mem,
}

impl AbiTy {
    /// The LLVM IR type.
    pub fn llvm(self) -> &'static str {
        match self {
            AbiTy::Void => "void",
            AbiTy::U32 | AbiTy::I32 => "i32",
            AbiTy::U64 => "i64",
            AbiTy::Ctx | AbiTy::Bytes | AbiTy::BytesMut | AbiTy::Str | AbiTy::Mem => "ptr",
        }
    }
}

/// A runtime function: its symbol and C signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeFn {
    pub name: &'static str,
    pub params: &'static [AbiTy],
    pub ret: AbiTy,
    /// Never returns (ends the calling thread).
    pub noreturn: bool,
}

impl RuntimeFn {
    /// The LLVM declaration every lowering of a call uses.
    pub fn declaration(&self) -> String {
        let params: Vec<&str> = self.params.iter().map(|p| p.llvm()).collect();
        let attrs = if self.noreturn { " noreturn" } else { "" };
        format!("declare {} @{}({}){attrs}", self.ret.llvm(), self.name, params.join(", "))
    }
}

macro_rules! abi_rust_ty {
    (Ctx) => { *mut BlockCtx };
    (U32) => { u32 };
    (I32) => { i32 };
    (U64) => { u64 };
    (Bytes) => { *const u8 };
    (BytesMut) => { *mut u8 };
    (Str) => { *const std::ffi::c_char };
    (Mem) => { *mut c_void };
}

macro_rules! runtime_functions {
    ($( $(#[$doc:meta])* $id:ident = $name:literal : fn($($p:ident),*) $(-> $r:ident)? $(, $noreturn:ident)? ;)*) => {
        /// The runtime functions compiled code may call: one table from which
        /// the lowering's declarations are generated ([`RuntimeFn::declaration`]),
        /// the host's definitions are typed ([`runtime_types`]: the CPU backend
        /// registers each definition as its type, so a signature that differs
        /// does not compile), and the AMDGPU runtime library is checked (its
        /// tests compare each definition with the table).
        pub mod runtime {
            use super::{AbiTy, RuntimeFn};
            $(
                $(#[$doc])*
                pub const $id: RuntimeFn = RuntimeFn {
                    name: $name,
                    params: &[$(AbiTy::$p),*],
                    ret: runtime_functions!(@ret $($r)?),
                    noreturn: runtime_functions!(@noreturn $($noreturn)?),
                };
            )*
            /// Every entry.
            pub const ALL: &[RuntimeFn] = &[$($id),*];
        }

        /// The Rust function type of each runtime function, for backends that
        /// define them in Rust.
        #[allow(non_camel_case_types)]
        pub mod runtime_types {
            #[allow(unused_imports)]
            use super::{BlockCtx, c_void};
            $( pub type $id = unsafe extern "C" fn($(abi_rust_ty!($p)),*) $(-> abi_rust_ty!($r))?; )*
        }
    };
    (@ret) => { AbiTy::Void };
    (@ret $r:ident) => { AbiTy::$r };
    (@noreturn) => { false };
    (@noreturn noreturn) => { true };
}

runtime_functions! {
    /// `bar.sync`: `count` 0 means every thread of the block.
    BARRIER = "__anycuda_barrier": fn(Ctx, U32, U32, U32, U32);
    /// `bar.arrive`.
    BARRIER_ARRIVE = "__anycuda_barrier_arrive": fn(Ctx, U32, U32, U32, U32);
    /// `bar.red`: (ctx, thread, id, count, op, pred, site).
    BARRIER_RED = "__anycuda_barrier_red": fn(Ctx, U32, U32, U32, U32, U32, U32) -> U32;
    /// `bar.warp.sync`: (ctx, thread, mask, site).
    WARP_SYNC = "__anycuda_warp_sync": fn(Ctx, U32, U32, U32);
    /// `shfl.sync`: (ctx, thread, mode, value, b, c, mask, site); the value
    /// in the low 32 bits and the predicate in bit 32.
    SHFL = "__anycuda_shfl": fn(Ctx, U32, U32, U32, U32, U32, U32, U32) -> U64;
    /// `vote.sync`: (ctx, thread, mode, pred, mask, site).
    VOTE = "__anycuda_vote": fn(Ctx, U32, U32, U32, U32, U32) -> U32;
    /// `match.sync`: (ctx, thread, mode, value, mask, site); the lane mask in
    /// the low 32 bits and, for `all`, the predicate in bit 32.
    MATCH = "__anycuda_match": fn(Ctx, U32, U32, U64, U32, U32) -> U64;
    /// `redux.sync`: (ctx, thread, op, value, mask, site).
    REDUX = "__anycuda_redux": fn(Ctx, U32, U32, U32, U32, U32) -> U32;
    /// `activemask`: (ctx, thread, site).
    ACTIVEMASK = "__anycuda_activemask": fn(Ctx, U32, U32) -> U32;
    /// Warp matrix instructions: every lane of the warp hands over `bytes`
    /// bytes at `src`; returns the address of all 32 lanes' bytes, lane
    /// after lane (lanes that are not there read as zeros), valid until the
    /// warp's next collective. `scratch` (32 * `bytes`, or null) is memory
    /// of the caller an implementation may gather into and return.
    /// (ctx, thread, src, bytes, scratch, site).
    WARP_GATHER = "__anycuda_warp_gather": fn(Ctx, U32, Bytes, U32, BytesMut, U32) -> Bytes;
    /// `exit` in a called function: ends the thread.
    EXIT = "__anycuda_exit": fn(Ctx, U32), noreturn;
    /// `trap`: (ctx, thread, place: the function and PTX line, as the
    /// memory checker's reports name them).
    TRAP = "__anycuda_trap": fn(Ctx, U32, Str), noreturn;
    /// A failed `assert`: (ctx, thread, message, file, line, function, char size).
    ASSERTFAIL = "__anycuda_assertfail": fn(Ctx, U32, Str, Str, U32, Str, U64), noreturn;
    /// Lets other threads run (inserted in loops that may spin on memory).
    YIELD = "__anycuda_yield": fn(Ctx, U32);
    /// printf: (ctx, thread, format, args, layout): `args` is the packed
    /// argument buffer of CUDA's vprintf; `layout`, where the format is a
    /// constant string, is `i32`s: the buffer's bytes, the arguments'
    /// count, the count of `%s` arguments and their offsets
    /// (`printf::ArgLayout`); null otherwise.
    VPRINTF = "__anycuda_vprintf": fn(Ctx, U32, Str, Bytes, Bytes) -> I32;
    /// Device-side `malloc`.
    MALLOC = "__anycuda_malloc": fn(Ctx, U64) -> Mem;
    /// Device-side `free`.
    FREE = "__anycuda_free": fn(Ctx, Mem);
    /// `%clock64`.
    CLOCK64 = "__anycuda_clock64": fn(Ctx) -> U64;
    /// `%globaltimer`.
    GLOBALTIMER = "__anycuda_globaltimer": fn(Ctx) -> U64;
    /// `nanosleep`.
    NANOSLEEP = "__anycuda_nanosleep": fn(Ctx, U32);
    /// Whether a generic address points into the calling thread's local
    /// memory: (ctx, thread, address).
    IS_LOCAL = "__anycuda_is_local": fn(Ctx, U32, U64) -> U32;
    /// `tex`/`tld4` through a texture object: (ctx, thread, handle, op
    /// ([`tex`]), the four coordinate words as written, out: 4 x u32).
    /// Returns 1 (the texel is resident).
    TEX = "__anycuda_tex": fn(Ctx, U32, U64, U32, U32, U32, U32, U32, BytesMut) -> U32;
    /// `tex.level`/`tex.grad`: as [`TEX`], with `lod` (7 x u32): the level
    /// of detail (f32), or with [`tex::GRAD`] in `op` the derivatives along
    /// x and then y (3 x f32 each).
    TEX_MIP = "__anycuda_tex_mip": fn(Ctx, U32, U64, U32, U32, U32, U32, U32, Bytes, BytesMut) -> U32;
    /// `suld.b`: (ctx, thread, handle, op, coordinates, out).
    SULD = "__anycuda_suld": fn(Ctx, U32, U64, U32, U32, U32, U32, U32, BytesMut);
    /// `sust.b` and `sust.p`: (ctx, thread, handle, op, coordinates, data).
    SUST = "__anycuda_sust": fn(Ctx, U32, U64, U32, U32, U32, U32, U32, Bytes);
    /// `istypep`: (ctx, thread, value, kind ([`tex::IS_TEXTURE`]...)): 1
    /// when `value` is the handle of a live object of that kind.
    ISTYPEP = "__anycuda_istypep": fn(Ctx, U32, U64, U32) -> U32;
    /// `sured`: (ctx, thread, handle, op, coordinates, value).
    SURED = "__anycuda_sured": fn(Ctx, U32, U64, U32, U32, U32, U32, U32, U64);
    /// `txq`/`suq`: (ctx, thread, handle, query).
    TXQ = "__anycuda_txq": fn(Ctx, U32, U64, U32) -> U32;
    /// `txq.level`: (ctx, thread, handle, query, level): the width, height
    /// or depth of one mipmap level.
    TXQ_LEVEL = "__anycuda_txq_level": fn(Ctx, U32, U64, U32, U32) -> U32;
    /// Checked mode (`Options::memcheck`): an access the inline test could
    /// not prove good, (ctx, thread, address, access, cache, where).
    /// `access` packs the size, direction and state space ([`memcheck`]);
    /// `cache` is the caller's `[low, length]` pair of u64, which a good
    /// access sets to the range it lies in (the allocation, shared window
    /// or local memory) for the next inline tests; `where` names the
    /// function and the PTX line. A bad access ends the launch and does not
    /// return.
    MEMCHECK = "__anycuda_memcheck": fn(Ctx, U32, U64, U32, BytesMut, Str);
    /// [`MEMCHECK`] for a warp (warp mode): (ctx, first thread of the warp,
    /// the 32 lanes' addresses as u64, the lanes that access, access,
    /// cache, where, the warp's frame, which holds its local memory).
    MEMCHECK_WARP = "__anycuda_memcheck_warp": fn(Ctx, U32, Bytes, U32, U32, BytesMut, Str, Bytes);
    /// Checked mode with shadow tools on ([`BlockCtx::check_tools`]): an
    /// access that passed the bounds check, for initcheck (global reads of
    /// bytes nothing wrote) and racecheck (shared-memory hazards): (ctx,
    /// thread, address, access (as for [`MEMCHECK`]), where). Reports and
    /// returns; it never ends the launch.
    SHADOW = "__anycuda_shadow": fn(Ctx, U32, U64, U32, Str);
    /// [`SHADOW`] for a warp: (ctx, first thread of the warp, the 32 lanes'
    /// addresses as u64, the lanes that access, access, where).
    SHADOW_WARP = "__anycuda_shadow_warp": fn(Ctx, U32, Bytes, U32, U32, Str);
    /// Racecheck: the threads of `lanes` (bit i: thread `thread + i`) have
    /// passed a synchronisation `kind` ([`memcheck::SYNC_BLOCK`]: a block
    /// barrier; [`memcheck::SYNC_WARP`]: `bar.warp.sync`): (ctx, thread,
    /// lanes, kind).
    RACE_SYNC = "__anycuda_race_sync": fn(Ctx, U32, U32, U32);
    /// The device runtime (dynamic parallelism: launches, streams and
    /// events from kernels): (ctx, thread, operation ([`devrt::Op`]), the
    /// call's arguments as u64 words, [`devrt::Arg`] by [`devrt::Arg`]).
    /// Returns the function's result (a `cudaError_t` or a pointer).
    DEVICE_RUNTIME = "__anycuda_devrt": fn(Ctx, U32, U32, Bytes) -> U64;
}

/// The `access` argument of [`runtime::MEMCHECK`]: bits 0-15 the size in
/// bytes, then the direction bits, then the state space in bits 20-23.
pub mod memcheck {
    pub const SIZE_MASK: u32 = 0xffff;
    pub const READ: u32 = 1 << 16;
    pub const WRITE: u32 = 1 << 17;
    /// The access is to a synchronisation object (an `mbarrier`): racecheck
    /// leaves it out.
    pub const SYNC_OBJECT: u32 = 1 << 18;
    pub const SPACE_SHIFT: u32 = 20;
    /// Generic: global, shared or local, whichever window the address is in.
    pub const GENERIC: u32 = 0;
    pub const GLOBAL: u32 = 1;
    pub const SHARED: u32 = 2;
    pub const LOCAL: u32 = 3;
    pub const CONST: u32 = 4;
    /// [`super::runtime::RACE_SYNC`]'s kinds.
    pub const SYNC_BLOCK: u32 = 0;
    pub const SYNC_WARP: u32 = 1;
    /// An arrival on an `mbarrier` (the writes before it are ordered before
    /// the reads of threads that waited for the phase).
    pub const SYNC_MBARRIER: u32 = 2;
    /// With a kind: the caller is a warp-mode function, `lanes` are lanes of
    /// the warp whose first thread is `thread`.
    pub const SYNC_LANES: u32 = 4;
}

/// Symbol names of a kernel's functions in the object.
pub struct KernelSymbols;

impl KernelSymbols {
    pub fn thread(kernel: &str) -> String {
        format!("__anycuda_thread.{kernel}")
    }
    pub fn block(kernel: &str) -> String {
        format!("__anycuda_block.{kernel}")
    }
    /// The warp version of a kernel whose block function runs its threads
    /// one by one when the launch allows, and as warps otherwise
    /// (internal to the object).
    pub fn lockstep(kernel: &str) -> String {
        format!("__anycuda_lockstep.{kernel}")
    }
    /// The object symbol of a module-scope variable.
    pub fn global(name: &str) -> String {
        format!("__anycuda_global.{name}")
    }
    /// Where units cannot link (`TargetFacts::links_units` false), the
    /// shared unit's table of the module's variable addresses
    /// ([`BlockCtx::variables`]).
    pub const VARIABLE_TABLE: &'static str = "__anycuda_variables";
}

/// Signature of the `thread` function of a warp-mode kernel
/// (`KernelInfo::lanes` == 32): it runs the 32 lanes of warp `warp` until
/// they have all finished (returns [`warp_frame::FINISHED`]) or until the
/// warp must wait for the others ([`warp_frame::SUSPENDED`]: at a barrier,
/// or yielding in a spin loop). A suspended warp has saved what it needs in
/// its `frame` (`KernelInfo::frame_bytes`, 64-byte aligned) and says why
/// there; called again with the same frame, it continues where it stopped.
/// The backend zeroes [`warp_frame::RESUME`] before a warp's first call.
///
/// Chaining: when a warp suspends at a plain `bar.sync 0` (every thread,
/// barrier 0) and `warp + 1 < ctx.chain_end`, the function goes on with
/// warp `warp + 1` (its frame `ctx.frame_stride` bytes further) instead of
/// returning, and writes the warp it goes on with in `ctx.chain_last`.
/// When `warp + 1 == chain_end` and `ctx.chain_wrap` is set, every warp of
/// the block has arrived: the barrier completes and warp 0 goes on, with
/// `chain_first` and `chain_last` set to 0. A warp that finishes with
/// `warp + 1 < chain_end` writes [`warp_frame::DONE`] in its frame's kind,
/// clears `chain_wrap` and goes on with `warp + 1` as well. On return, each
/// warp from `chain_first` to `chain_last` (excluded) has either arrived at
/// barrier 0 and waits there (kind [`warp_frame::BARRIER`]) or finished
/// (kind `DONE`); the return value is `chain_last`'s. The backend sets
/// `chain_end` only over warps that are ready to run, in order, sets
/// `chain_wrap` only when those are all the block's warps and barrier 0
/// has no arrivals, and sets `chain_first` and `chain_last` to `warp`
/// before the call.
pub type WarpFn = unsafe extern "C" fn(params: *const u8, ctx: *mut BlockCtx, warp: u32, frame: *mut u8) -> u32;

/// The layout of a warp's frame (byte offsets of `u32` fields) and the
/// values of its fields.
pub mod warp_frame {
    /// 0: start from the beginning; otherwise where to continue.
    pub const RESUME: usize = 0;
    /// Why the warp suspended: [`BARRIER`], [`ARRIVE`] or [`YIELD`].
    pub const KIND: usize = 4;
    /// The barrier's id and expected count in warps (0: all warps).
    pub const BARRIER_ID: usize = 8;
    pub const BARRIER_COUNT: usize = 12;
    /// Iterations of a grid-stride loop since the warp last let the
    /// others take a turn (compiled code only: set at the warp's first
    /// call, counted at the loop's backward branch).
    pub const TURN_COUNT: usize = 16;
    /// Where the compiled code keeps the lanes' state and registers.
    pub const HEADER_BYTES: u32 = 256;

    pub const FINISHED: u32 = 0;
    pub const SUSPENDED: u32 = 1;

    /// `bar.sync`: wait until the barrier completes.
    pub const BARRIER: u32 = 1;
    /// `bar.arrive`: count the arrival and go on.
    pub const ARRIVE: u32 = 2;
    /// A spin loop or `nanosleep`: let the other warps run first.
    pub const YIELD: u32 = 3;
    /// A grid-stride loop: the warp made progress and lets the block's
    /// other warps take their turn (queued behind them like [`YIELD`],
    /// but never a sign of waiting).
    pub const TURN: u32 = 5;
    /// The warp finished and the chain went on (see [`super::WarpFn`]).
    pub const DONE: u32 = 4;
}

/// Signature of a kernel's `thread` function.
pub type ThreadFn = unsafe extern "C" fn(params: *const u8, ctx: *mut BlockCtx, x: u32, y: u32, z: u32);
/// Signature of a kernel's `block` function.
pub type BlockFn = unsafe extern "C" fn(params: *const u8, ctx: *mut BlockCtx);

/// CUDA's device runtime as compiled code calls it: each function of
/// `libcudadevrt` that PTX may call (CDP2's `__cudaCDP2*` names, and the
/// plain names PTX written by hand and older compilers use) is one
/// operation of [`runtime::DEVICE_RUNTIME`]. The kernel's call to the
/// extern `.func` is lowered to that runtime call; libcudadevrt's own
/// definitions are never linked.
pub mod devrt {
    /// How an argument is passed in the words array: a 32-bit or 64-bit
    /// scalar takes one word (zero-extended); a `dim3` (`.b8[12]`) three;
    /// a structure of `n` 64-bit fields passed by value (`.align 8
    /// .b8[8n]`: `cudaPitchedPtr` has four, `cudaExtent` three) `n`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Arg {
        U32,
        U64,
        Dim3,
        Fields64(u8),
    }

    impl Arg {
        /// The words the argument takes in the array.
        pub const fn words(self) -> usize {
            match self {
                Arg::U32 | Arg::U64 => 1,
                Arg::Dim3 => 3,
                Arg::Fields64(n) => n as usize,
            }
        }
    }

    /// What the function returns.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Ret {
        /// `cudaError_t` (32 bits).
        Error,
        /// A pointer (64 bits).
        Ptr,
    }

    /// The operations.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(u32)]
    pub enum Op {
        GetParameterBuffer = 1,
        GetParameterBufferV2,
        LaunchDevice,
        LaunchDeviceV2,
        StreamCreateWithFlags,
        StreamDestroy,
        StreamWaitEvent,
        EventCreateWithFlags,
        EventRecord,
        EventRecordWithFlags,
        EventDestroy,
        GetLastError,
        PeekAtLastError,
        GetErrorString,
        GetErrorName,
        Malloc,
        Free,
        GetDevice,
        GetDeviceCount,
        DeviceGetAttribute,
        DeviceGetLimit,
        FuncGetAttributes,
        OccupancyMaxActiveBlocksPerMultiprocessor,
        OccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
        RuntimeGetVersion,
        MemcpyAsync,
        Memcpy2DAsync,
        MemsetAsync,
        Memset2DAsync,
        Memcpy3DAsync,
        Memset3DAsync,
    }

    impl Op {
        /// Every operation, for the backend's dispatch.
        pub const ALL: [Op; 31] = [
            Op::GetParameterBuffer,
            Op::GetParameterBufferV2,
            Op::LaunchDevice,
            Op::LaunchDeviceV2,
            Op::StreamCreateWithFlags,
            Op::StreamDestroy,
            Op::StreamWaitEvent,
            Op::EventCreateWithFlags,
            Op::EventRecord,
            Op::EventRecordWithFlags,
            Op::EventDestroy,
            Op::GetLastError,
            Op::PeekAtLastError,
            Op::GetErrorString,
            Op::GetErrorName,
            Op::Malloc,
            Op::Free,
            Op::GetDevice,
            Op::GetDeviceCount,
            Op::DeviceGetAttribute,
            Op::DeviceGetLimit,
            Op::FuncGetAttributes,
            Op::OccupancyMaxActiveBlocksPerMultiprocessor,
            Op::OccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
            Op::RuntimeGetVersion,
            Op::MemcpyAsync,
            Op::Memcpy2DAsync,
            Op::MemsetAsync,
            Op::Memset2DAsync,
            Op::Memcpy3DAsync,
            Op::Memset3DAsync,
        ];

        pub fn from_u32(v: u32) -> Option<Op> {
            Op::ALL.iter().copied().find(|o| *o as u32 == v)
        }
    }

    use Arg::{Dim3, Fields64, U32, U64};

    /// A device-runtime function: its operation, the PTX declaration's
    /// parameters and its result.
    #[derive(Clone, Copy, Debug)]
    pub struct Function {
        /// The name after `__cudaCDP2` (and the plain CUDA name after `cuda`).
        pub name: &'static str,
        pub op: Op,
        pub args: &'static [Arg],
        pub ret: Ret,
    }

    const fn f(name: &'static str, op: Op, args: &'static [Arg], ret: Ret) -> Function {
        Function { name, op, args, ret }
    }

    /// The functions, by their CUDA name without the `cuda` prefix.
    pub const FUNCTIONS: &[Function] = &[
        f("GetParameterBuffer", Op::GetParameterBuffer, &[U64, U64], Ret::Ptr),
        f("GetParameterBufferV2", Op::GetParameterBufferV2, &[U64, Dim3, Dim3, U32], Ret::Ptr),
        f("LaunchDevice", Op::LaunchDevice, &[U64, U64, Dim3, Dim3, U32, U64], Ret::Error),
        f("LaunchDevice_ptsz", Op::LaunchDevice, &[U64, U64, Dim3, Dim3, U32, U64], Ret::Error),
        f("LaunchDeviceV2", Op::LaunchDeviceV2, &[U64, U64], Ret::Error),
        f("LaunchDeviceV2_ptsz", Op::LaunchDeviceV2, &[U64, U64], Ret::Error),
        f("StreamCreateWithFlags", Op::StreamCreateWithFlags, &[U64, U32], Ret::Error),
        f("StreamDestroy", Op::StreamDestroy, &[U64], Ret::Error),
        f("StreamWaitEvent", Op::StreamWaitEvent, &[U64, U64, U32], Ret::Error),
        f("StreamWaitEvent_ptsz", Op::StreamWaitEvent, &[U64, U64, U32], Ret::Error),
        f("EventCreateWithFlags", Op::EventCreateWithFlags, &[U64, U32], Ret::Error),
        f("EventRecord", Op::EventRecord, &[U64, U64], Ret::Error),
        f("EventRecord_ptsz", Op::EventRecord, &[U64, U64], Ret::Error),
        f("EventRecordWithFlags", Op::EventRecordWithFlags, &[U64, U64, U32], Ret::Error),
        f("EventRecordWithFlags_ptsz", Op::EventRecordWithFlags, &[U64, U64, U32], Ret::Error),
        f("EventDestroy", Op::EventDestroy, &[U64], Ret::Error),
        f("GetLastError", Op::GetLastError, &[], Ret::Error),
        f("PeekAtLastError", Op::PeekAtLastError, &[], Ret::Error),
        f("GetErrorString", Op::GetErrorString, &[U32], Ret::Ptr),
        f("GetErrorName", Op::GetErrorName, &[U32], Ret::Ptr),
        f("Malloc", Op::Malloc, &[U64, U64], Ret::Error),
        f("Free", Op::Free, &[U64], Ret::Error),
        f("GetDevice", Op::GetDevice, &[U64], Ret::Error),
        f("GetDeviceCount", Op::GetDeviceCount, &[U64], Ret::Error),
        f("DeviceGetAttribute", Op::DeviceGetAttribute, &[U64, U32, U32], Ret::Error),
        f("DeviceGetLimit", Op::DeviceGetLimit, &[U64, U32], Ret::Error),
        f("FuncGetAttributes", Op::FuncGetAttributes, &[U64, U64], Ret::Error),
        f("OccupancyMaxActiveBlocksPerMultiprocessor", Op::OccupancyMaxActiveBlocksPerMultiprocessor, &[U64, U64, U32, U64], Ret::Error),
        f(
            "OccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
            Op::OccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
            &[U64, U64, U32, U64, U32],
            Ret::Error,
        ),
        f("RuntimeGetVersion", Op::RuntimeGetVersion, &[U64], Ret::Error),
        // (dst, src, count, kind, stream)
        f("MemcpyAsync", Op::MemcpyAsync, &[U64, U64, U64, U32, U64], Ret::Error),
        f("MemcpyAsync_ptsz", Op::MemcpyAsync, &[U64, U64, U64, U32, U64], Ret::Error),
        // (dst, dpitch, src, spitch, width, height, kind, stream)
        f("Memcpy2DAsync", Op::Memcpy2DAsync, &[U64, U64, U64, U64, U64, U64, U32, U64], Ret::Error),
        f("Memcpy2DAsync_ptsz", Op::Memcpy2DAsync, &[U64, U64, U64, U64, U64, U64, U32, U64], Ret::Error),
        // (dst, value, count, stream)
        f("MemsetAsync", Op::MemsetAsync, &[U64, U32, U64, U64], Ret::Error),
        f("MemsetAsync_ptsz", Op::MemsetAsync, &[U64, U32, U64, U64], Ret::Error),
        // (dst, pitch, value, width, height, stream)
        f("Memset2DAsync", Op::Memset2DAsync, &[U64, U64, U32, U64, U64, U64], Ret::Error),
        f("Memset2DAsync_ptsz", Op::Memset2DAsync, &[U64, U64, U32, U64, U64, U64], Ret::Error),
        // (const cudaMemcpy3DParms *, stream)
        f("Memcpy3DAsync", Op::Memcpy3DAsync, &[U64, U64], Ret::Error),
        f("Memcpy3DAsync_ptsz", Op::Memcpy3DAsync, &[U64, U64], Ret::Error),
        // (cudaPitchedPtr, value, cudaExtent, stream), the structures by value
        f("Memset3DAsync", Op::Memset3DAsync, &[Fields64(4), U32, Fields64(3), U64], Ret::Error),
        f("Memset3DAsync_ptsz", Op::Memset3DAsync, &[Fields64(4), U32, Fields64(3), U64], Ret::Error),
    ];

    /// The device-runtime function a PTX name calls: `__cudaCDP2X` (what
    /// nvcc emits for CUDA 12 and later) or `cudaX` (PTX written against
    /// the programming guide's PTX interface, which documents
    /// `cudaLaunchDevice(V2)` and `cudaGetParameterBuffer(V2)`).
    pub fn lookup(name: &str) -> Option<&'static Function> {
        let rest = name.strip_prefix("__cudaCDP2").or_else(|| name.strip_prefix("cuda"))?;
        FUNCTIONS.iter().find(|f| f.name == rest)
    }

    /// Every PTX name [`lookup`] accepts.
    pub fn ptx_names() -> impl Iterator<Item = String> {
        FUNCTIONS.iter().flat_map(|f| [format!("__cudaCDP2{}", f.name), format!("cuda{}", f.name)])
    }

    /// The special stream handles of device code.
    pub const STREAM_TAIL_LAUNCH: u64 = 3;
    pub const STREAM_FIRE_AND_FORGET: u64 = 4;
}

#[cfg(test)]
mod tests {
    use super::device_heap::*;

    #[test]
    fn heap_classes_step_by_16_bytes_then_by_quarters_of_a_power_of_two() {
        // Header included: 16 bytes, then one class per 16 bytes to 64.
        assert_eq!(class_of(0), Some((0, 16)));
        assert_eq!(class_of(1), Some((1, 32)));
        assert_eq!(class_of(16), Some((1, 32)));
        assert_eq!(class_of(48), Some((3, 64)));
        // 65..80 bytes with the header: 5 units, the first class of 2^2.
        assert_eq!(class_of(49), Some((4, 80)));
        assert_eq!(class_of(112), Some((7, 128)));
        // 9 units: class 8, 10 units.
        assert_eq!(class_of(113), Some((8, 160)));
        // 20 MiB: between 2^20 and 2^21 units, the second quarter step.
        assert_eq!(class_of(20 << 20), Some((4 * 19 + 1, 24 << 20)));
        assert_eq!(class_of(MAX_REQUEST + 1), None);
        // Every request fits its block, wastes under a quarter of it past
        // 64 bytes, and classes grow with the size.
        let mut last = (0, 0);
        for bytes in (0..5000u64).chain([1 << 20, (1 << 20) + 1, 3 << 30, MAX_REQUEST]) {
            let (class, size) = class_of(bytes).expect("a class");
            assert!(size >= bytes + BLOCK_HEADER as u64 && size.is_multiple_of(16), "{bytes}: {size}");
            assert!(size <= 64 || (size - bytes - 16) * 4 < size, "{bytes}: {size}");
            assert!((class as usize) < CLASSES && class >= last.0 && size >= last.1, "{bytes}");
            last = (class, size);
        }
    }
}
