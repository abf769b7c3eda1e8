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
//! Compiled code calls the runtime functions listed in [`RUNTIME_SYMBOLS`];
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
    pub _pad: u32,
    pub gridid: u64,
    /// `%envreg0`..`%envreg31`; cooperative launches put the grid-sync
    /// workspace address in envreg1 (high 32 bits) / envreg2 (low 32 bits),
    /// as cooperative groups reads it.
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
    pub _pad2: u32,
}

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
    pub const GRIDID: usize = offset_of!(BlockCtx, gridid);
    pub const ENVREG: usize = offset_of!(BlockCtx, envreg);
    pub const CHAIN_END: usize = offset_of!(BlockCtx, chain_end);
    pub const FRAME_STRIDE: usize = offset_of!(BlockCtx, frame_stride);
    pub const CHAIN_FIRST: usize = offset_of!(BlockCtx, chain_first);
    pub const CHAIN_LAST: usize = offset_of!(BlockCtx, chain_last);
    pub const CHAIN_WRAP: usize = offset_of!(BlockCtx, chain_wrap);
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

/// The runtime functions compiled code may call, with their C signatures.
/// `ctx` is `*mut BlockCtx`; `thread` the linear thread index; `site` the
/// instruction's id. Functions marked "never returns" end the calling thread.
pub const RUNTIME_SYMBOLS: &[(&str, &str)] = &[
    // Block barriers. `count` 0 means every thread of the block.
    ("__anycuda_barrier", "void (ctx, u32 thread, u32 id, u32 count, u32 site)"),
    ("__anycuda_barrier_arrive", "void (ctx, u32 thread, u32 id, u32 count, u32 site)"),
    ("__anycuda_barrier_red", "u32 (ctx, u32 thread, u32 id, u32 count, u32 op, u32 pred, u32 site)"),
    // Warp collectives.
    ("__anycuda_warp_sync", "void (ctx, u32 thread, u32 mask, u32 site)"),
    // Returns the value in the low 32 bits and the predicate in bit 32.
    ("__anycuda_shfl", "u64 (ctx, u32 thread, u32 mode, u32 value, u32 b, u32 c, u32 mask, u32 site)"),
    ("__anycuda_vote", "u32 (ctx, u32 thread, u32 mode, u32 pred, u32 mask, u32 site)"),
    // Returns the lane mask in the low 32 bits and, for `all`, the predicate in bit 32.
    ("__anycuda_match", "u64 (ctx, u32 thread, u32 mode, u64 value, u32 mask, u32 site)"),
    ("__anycuda_redux", "u32 (ctx, u32 thread, u32 op, u32 value, u32 mask, u32 site)"),
    ("__anycuda_activemask", "u32 (ctx, u32 thread, u32 site)"),
    // Warp matrix instructions: every lane of the warp hands over `bytes`
    // bytes at `src`; returns the address of all 32 lanes' bytes, lane
    // after lane (lanes that are not there read as zeros), valid until the
    // warp's next collective. `scratch` (32 * `bytes`, or null) is memory
    // of the caller an implementation may gather into and return.
    ("__anycuda_warp_gather", "ptr (ctx, u32 thread, ptr src, u32 bytes, ptr scratch, u32 site)"),
    // Thread termination (never return).
    ("__anycuda_exit", "void (ctx, u32 thread)"),
    ("__anycuda_trap", "void (ctx, u32 thread)"),
    ("__anycuda_assertfail", "void (ctx, u32 thread, ptr message, ptr file, u32 line, ptr function, u64 char_size)"),
    // Lets other threads run (inserted in loops that may spin on memory).
    ("__anycuda_yield", "void (ctx, u32 thread)"),
    // printf: `args` is the packed argument buffer of CUDA's vprintf.
    ("__anycuda_vprintf", "i32 (ctx, u32 thread, ptr format, ptr args)"),
    ("__anycuda_malloc", "ptr (ctx, u64 size)"),
    ("__anycuda_free", "void (ctx, ptr)"),
    ("__anycuda_clock64", "u64 (ctx)"),
    ("__anycuda_globaltimer", "u64 (ctx)"),
    ("__anycuda_nanosleep", "void (ctx, u32 ns)"),
    // Whether a generic address points into the calling thread's local memory.
    ("__anycuda_is_local", "u32 (ctx, u32 thread, u64 address)"),
];

/// Symbol names of a kernel's functions in the object.
pub struct KernelSymbols;

impl KernelSymbols {
    pub fn thread(kernel: &str) -> String {
        format!("__anycuda_thread.{kernel}")
    }
    pub fn block(kernel: &str) -> String {
        format!("__anycuda_block.{kernel}")
    }
    /// The object symbol of a module-scope variable.
    pub fn global(name: &str) -> String {
        format!("__anycuda_global.{name}")
    }
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
    /// The warp finished and the chain went on (see [`super::WarpFn`]).
    pub const DONE: u32 = 4;
}

/// Signature of a kernel's `thread` function.
pub type ThreadFn = unsafe extern "C" fn(params: *const u8, ctx: *mut BlockCtx, x: u32, y: u32, z: u32);
/// Signature of a kernel's `block` function.
pub type BlockFn = unsafe extern "C" fn(params: *const u8, ctx: *mut BlockCtx);
