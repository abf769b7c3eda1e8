//! Whether the lanes of a warp can observe each other's memory effects:
//! the analysis behind the choice between running a kernel thread by
//! thread and running it as 32-lane warps (`warp::choose_mode`).
//!
//! On a GPU the lanes of a converged warp execute each instruction
//! together: a value one lane stores is there for every other lane of the
//! warp at the next instruction, and a lane's load sees nothing the others
//! store after it. A great deal of CUDA code relies on that without any
//! barrier (warp-synchronous reductions over `volatile` shared memory,
//! transposes through a shared tile, values exchanged through global
//! memory). Warp mode keeps it by construction: every instruction runs for
//! all lanes before the next one starts. Thread by thread (the fast path:
//! each thread runs to its end before the next one starts) does not: lane
//! 1 sees everything lane 0 stored in the whole kernel and nothing lane 2
//! will store. The two orders give the same results exactly when no lane
//! reads or overwrites a location another lane of its warp writes; this
//! module decides, from the PTX alone and conservatively, when that is so.
//!
//! # The rule
//!
//! A kernel is [`Verdict::Independent`] when, in its body and in every
//! function it can reach (calls, indirect calls):
//!
//! 1. nothing touches shared memory: no instruction has a `.shared` state
//!    space (loads, stores, atomics, `cvta`, `cp.async`, `mbarrier`,
//!    `ldmatrix`, `mapa`...) and no operand names a `.shared` variable
//!    (which is the only way to form a generic address into the block's
//!    shared memory);
//! 2. no instruction has memory effects the analysis does not model
//!    (surfaces, bulk and tensor copies, `multimem`, `discard`, ...);
//! 3. for every instruction `W` that writes global or generic memory (`st`,
//!    `red`, `atom`) and every instruction `X` that reads it (`ld` and
//!    `ldu` of global or generic memory other than the read-only forms,
//!    `atom`) or writes it, the pair cannot order differently between the
//!    two executions:
//!    - `W` and `X` are both `red` with the same commutative integer
//!      operation and type (`add`, `and`, `or`, `xor`, `min`, `max`): no
//!      lane sees a value, and the final memory does not depend on the
//!      order; or
//!    - `X` is `W` itself, executed at most once per thread (in the
//!      kernel's body, outside every loop): its lanes then run it in lane
//!      order either way, which is an order the GPU's single instruction
//!      may take too; or
//!    - the two addresses keep the lanes apart, always or under launch
//!      conditions (below).
//!
//! Read-only loads never see another lane's store: `ld.const`,
//! `ld.param`, `ld.local` (a thread's own memory), `ld.global.nc` and
//! `ldu` (the program promises the data does not change during the
//! kernel), texture fetches.
//!
//! Everything else is [`Verdict::Exchanges`], with the instruction (and
//! the other one of the pair) that made it so. The analysis makes no
//! assumption about where pointers point: two pointer parameters may name
//! overlapping memory, so a load through one may read what a store through
//! the other writes; where only the launch can tell, the verdict is
//! [`Verdict::IndependentIf`] with the conditions to check.
//!
//! # Conditions
//!
//! Addresses are followed in the kernel's own body only, as `base + scale
//! * widen(index) + offset` ([`Form`]): `base` a 64-bit kernel parameter
//! or a module variable, `index` a 32-bit register widened to 64 bits
//! with or without its sign, `scale` and `offset` constants. A register
//! read by an instruction is followed through the write that reaches it
//! for certain: the last write before it with no label in between, or
//! else the register's only write in the body; the write must be
//! unguarded and write that register alone (`Forms`).
//!
//! - **Per warp** ([`Apart`]): when both accesses use the same index
//!   write, holding a warp-uniform value plus `%tid.x`, lanes of a warp
//!   with one-dimensional blocks have consecutive indices, and the
//!   distance `d` between the bases plus offsets decides: each lane its
//!   own element (`d = 0`, `|scale|` at least the access size), or `|d|`
//!   at least `31 |scale| + size` away from 0 and from `|scale| 2^32`
//!   (where lanes whose index wrapped would meet). Within one base `d` is
//!   known when compiled; between two bases the launch checks it, and
//!   that the block has one dimension.
//! - **Launch ranges** ([`Disjoint`]): otherwise (different scales or
//!   sizes, different indices, a uniform address against an indexed one,
//!   a block of any shape), when each index's value is a computation the
//!   analysis follows — `%tid`, `%ntid`, `%ctaid`, `%nctaid`, 32-bit
//!   parameters and constants combined by `add`, `sub`, `neg`, `mul.lo`,
//!   `mad.lo`, `shl` by a constant and 32-bit `cvt`: the ring operations
//!   modulo 2^32, [`Op`] — the two accesses' bytes over the whole launch
//!   must not overlap. At launch, interval arithmetic over `%tid.d` in
//!   `[0, ntid.d)` and `%ctaid.d` in `[0, nctaid.d)`, with the
//!   parameters' values, bounds each index's exact integer value
//!   ([`value_range`]); the register holds that value modulo 2^32, so it
//!   is the register's value only when the whole interval fits the
//!   widening's range (`[-2^31, 2^31)` signed, `[0, 2^32)` unsigned), and
//!   the check fails otherwise. Each access then touches bytes within
//!   `[base + offset + min(scale * lo, scale * hi), base + offset +
//!   max(scale * lo, scale * hi) + size)`, which must lie in `[0, 2^64)`;
//!   the condition holds when the two ranges do not overlap (touching is
//!   apart). No thread then reads or writes a byte any thread writes
//!   through the other access, whatever the order of threads. Two
//!   accesses through one base and the same index never get this
//!   condition (their overlap is known when compiled).
//!
//!   The computations followed go beyond the ring operations where the
//!   launch can check what they need: `mul.hi.u32`, `shr.u32` and
//!   widenings ([`Op::Wide`]) require their operands' exact values in
//!   the 32-bit range the instruction reads (then the registers hold
//!   them); a remainder `x - q * d` whose `q` is
//!   `(mul.hi.u32(x, m) + x) >> s` of the same `x` (CUDA's division by a divisor known at
//!   launch, llama.cpp's `fastdiv`) is `x mod d`, in `[0, d)`, when the
//!   launch's `m`, `s` and `d` make `q` the exact quotient for the whole
//!   interval of `x` ([`fast_division_exact`]); 32-bit fields of
//!   aggregate parameters (`uint3`) are read at their offsets. An
//!   address may also be a warp-uniform base plus a 64-bit offset summed
//!   from such values times strides from parameters (several indices,
//!   [`SpanIndex::wide`]), or a `selp` whose predicate the access's
//!   straight-line code passed an exit on (an optional operand's null
//!   check; also from the code of the access's single way in, and
//!   through `or.pred`). A 32-bit loop counter read where no single
//!   write reaches it is bounded by its loop ([`Op::Under`]): every way
//!   into the access's straight-line code (branches to its label,
//!   falling in) passes an unsigned comparison proving `i < b` for a
//!   launch constant `b`, or comes from code entered with that bound
//!   that does not write the counter.
//!
//!   64-bit values are followed too: a 64-bit parameter is its low word
//!   plus its high word (signed) times 2^32; `add`, `sub`, `mul.lo` and
//!   `shl` of 64-bit registers are ring operations modulo 2^64; a
//!   `div.s64` / `div.u64` is [`Op::Div`] and a `rem.s64`, or `x - q *
//!   d` with `q` that division of the same `x` and `d`, is [`Op::Mod`]:
//!   at launch both need `x` in `[0, 2^63)` and `d` in `[1, 2^63)` over
//!   the whole interval (then the registers are the exact values and
//!   truncation is flooring); a `selp` is [`Op::Either`], the hull of
//!   its two operands. *Divisions with a 32-bit fast path*: where a
//!   register read has two writes, nvcc's code for a 64-bit `x / d` or
//!   `x % d` (`((x | d) & 0xffffffff00000000) == 0` branching to a
//!   `div.u32` of the truncated operands, widened; the `div.s64` side
//!   branching past it to the join), the register holds the 64-bit
//!   side's value (`Forms::diamond`). Invariant: every write of the
//!   register writes that value — the fast path is entered only when the
//!   test of the same `x` and `d` held (its one way in is the branch on
//!   the test; nothing falls into it), so both fit 32 bits, and there
//!   the 32-bit quotient and remainder are the 64-bit ones — and every
//!   way to the read passes one of the two writes (no branch from
//!   outside the code from the join to the read enters it but at the
//!   join, which only the two sides reach). Values compared for
//!   equality (the remainder's quotient, a register's value in two
//!   places) must *name* a value: neither [`Op::Under`] nor
//!   [`Op::Either`], whose choice may differ between two reads of equal
//!   computations. An early exit on a signed 64-bit comparison
//!   (`if (i >= n) return;`) caps the value of a 64-bit register where it is
//!   read ([`Op::Min`], `Forms::exit_bound64`). Invariant: every way to
//!   the read passes the exit without taking it — no branch from
//!   outside the statements from the exit to the read targets a label
//!   among them, the exit's own branch included — and the register and
//!   the bound hold the values the comparison saw.
//! - **Stores in loops** ([`Injective`]): a store that may run several
//!   times per thread cannot be paired with itself by the rules above.
//!   Each thread's own runs of it keep their order either way, so what
//!   must hold is that no two threads write the same byte. The store's
//!   address must be a warp-uniform base plus a sum of terms, each a
//!   coordinate times a stride times a factor (`add.s64`, `shl.b64` by a
//!   constant, `cvt.u64.u32` and `mul.wide.u32` by a launch constant), whose coordinates
//!   determine the thread: a grid-stride counter (`for (i = ctaid.d *
//!   ntid.d + tid.d; i < n; i += ntid.d * nctaid.d)`, two writes, the step
//!   right after the access's read in its straight-line code) or a
//!   global index `ctaid.d * ntid.d + tid.d` gives `ctaid.d` and `tid.d`;
//!   a fast-division remainder and quotient of one global index give
//!   that index; `%tid.d` or `%ctaid.d` alone itself. At launch: every
//!   part of the thread's index no coordinate gives has extent 1; a
//!   counter's `n + step <= 2^32` (so a counter below `n` never wraps
//!   when stepped, and its value is `start + k * step` with `start` in
//!   `[0, step)`, which the value determines); each coordinate's range
//!   lies in `[0, 2^32)` and each stride is exact and positive; taken in
//!   increasing byte stride, each stride is at least the bytes all
//!   smaller terms span (mixed radix), so distinct coordinate tuples
//!   touch distinct bytes; and the addresses lie in `[0, 2^64)`. Then
//!   two threads' coordinates differ and so do all their bytes.
//!
//!   *64-bit loops and strides*: a term may also be a 64-bit coordinate
//!   times a 64-bit launch constant (`mul.lo.s64` by a stride read from a
//!   parameter), a coordinate widened with its sign (`cvt.s64.s32`,
//!   `mul.wide.s32`: the widening stays in the coordinate's computation,
//!   so the launch check fails unless the value lies in `[-2^31, 2^31)`,
//!   where the widened register is the value), or a 64-bit grid-stride
//!   counter (`for (size_t i = ...; i < n; i += ...)`,
//!   `Forms::counter64`): two writes as above, the start a global index
//!   `ctaid.d * ntid.d + tid.d` with step `ntid.d * nctaid.d`, or a block
//!   index `ctaid.d` with step `nctaid.d` (then only `ctaid.d` is given),
//!   leaves and products widened without sign, and every way into the
//!   read's straight-line code passing a 64-bit comparison `i < n`, signed
//!   or not. Invariant: with `n` in `[1, 2^32]` and `n + step <= 2^32`
//!   (checked at launch) the start lies in `[0, step)` (so no 32-bit part
//!   of it wrapped), and every value lies in `[0, 2^32)` — each step
//!   follows a read that passed `i < n` — where signed and unsigned
//!   comparisons of the registers are those of the values; so the counter
//!   is `start + k * step`, in `[0, n)` where read, and names its start.
//!   A coordinate's widenings are left out only to recognise what it
//!   names (a global index, `%ctaid.d`), never in the launch check.
//!   Where no such form is found, the store is examined again with the
//!   values of 64-bit grid-stride counters followed where read (`[0,
//!   n)`, their conditions added to the store's; the analysis' caches are
//!   set aside meanwhile, so no other access sees those values): then the
//!   quotient and remainder of one fast division of a truncated counter
//!   (`z / n`, `z % n` of `(uint32_t) z`) name the counter's value, and
//!   with it its start (`Forms::split_counter`). Invariant: the remainder
//!   is `x - q * d` of the very `q` the other coordinate holds, `d` exact
//!   at launch, so `x = q * d + r` modulo 2^32; the counter is below 2^32
//!   under its condition, so `x` is its value; and `q`, `r` and their
//!   widenings come from one value of `x`: each has one write, all in one
//!   stretch of straight-line code without branch, exit or call.
//!   Likewise a value's quotient and remainder by a power of two name it
//!   (`digits`): `(x + y) >> k` beside `x - ((x + y) & -2^k)`, which is
//!   `((x + y) mod 2^k) - y` (`Forms::low_bits`, so its range is that of
//!   a remainder), give `x` back as `2^k a + b`; and arithmetic shifts
//!   right by constants are followed as logical ones of values the launch
//!   check keeps in `[0, 2^31)`.
//!
//!   *Stores through one address* (`joint_stores`): stores that read the
//!   same write of one address register at different constant offsets
//!   (`y[l]` and `y[l + 32]` unrolled: `st [%rd+0]`, `[%rd+128]`, `[%rd+4]`,
//!   ...) are each other's pairs; each alone decomposes as above, into the
//!   same terms, and together they get one condition over the union of
//!   their bytes ([`Injective::more`]): the stores' intervals, which must
//!   not overlap, are a pattern the terms translate, in increasing stride,
//!   and no two translates may overlap (a stride at least the pattern's
//!   extent keeps them apart, as the mixed radix above; a smaller one,
//!   `tid % 8` strided 16 bytes beside stores 128 bytes apart, is checked
//!   interval by interval). Then every pair of a coordinate tuple and a
//!   store touches bytes of its own, and two threads never meet through
//!   any of the stores.
//!
//!   *A thread's own cell* (`own_cell`): a load or store run once per
//!   thread that touches only bytes a store run once writes through the
//!   same write of the same address register (`x = out[i]; out[i] = f(x)`
//!   with a 64-bit `i`, which the per-warp rule cannot follow) is paired
//!   with that store under the store's condition above: no two threads
//!   write a byte in common through the store, and each thread's access
//!   lies within its own store's bytes, so no thread touches a byte
//!   another writes. Where the per-warp rule follows the addresses it
//!   decides alone.
//!
//!   *Loop bounds across loops* ([`Forms::bound_at`]): a loop counter's
//!   bound is proved on every way into the loop's code, where code
//!   reached again while being examined (a cycle that does not write the
//!   counter: an outer loop's counter around an inner loop) adds no way
//!   in; an exit passed before a branch into the code counts as for a
//!   fall into it; and a counter started as a copy (`mov i, s`) of a
//!   register checked before the copy (`if (blockIdx.y < n)` tested once,
//!   before an outer loop) is below the bound when every way to the copy
//!   passes the check's edge (`Forms::copy_checked`). A 64-bit counter's
//!   step may lie after an inner loop when that code is entered under the
//!   same bound, and writes after which the read never runs are not its
//!   writes. A start capped by an exit it passed (`Op::Min`, `uncapped`)
//!   names the same value. nvcc's signed 64-bit division by `2^k`
//!   (`shr.s64` of `x` plus its sign's bias) is [`Op::Div`] by `2^k`,
//!   which the launch check requires `x` in `[0, 2^63)` for, where the
//!   bias is 0; its 64-bit remainder `x - 2^k * ((x + bias) >> k)` of a
//!   32-bit `x` widened with its sign is the coordinate `((x + bias) mod
//!   2^k) - bias` (`Forms::low_bits64`), which names `x` with the
//!   quotient as the 32-bit form does.
//!
//! A condition anything unknown leaves undecided (a parameter past the
//! buffer, a variable not found, an interval past [`RANGE_BOUND`]) fails:
//! a failed check costs speed only, the launch running the lockstep
//! version.
//!
//! Invariants (tests below): the verdict depends on the PTX text only;
//! adding an instruction that writes no register the others read never
//! turns `Exchanges` into `Independent` and never removes a condition; `Independent` implies that running the
//! kernel thread by thread in any order of threads gives the memory
//! contents and values of running it as converged warps in lockstep, and
//! `IndependentIf` implies it for every launch its conditions hold for.

use crate::layout::{Analysis, ItemId};
use ptx::ast::*;
use std::fmt::Write;

/// An instruction of the module: the function (item index) and statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub item: ItemId,
    pub statement: usize,
}

/// What the analysis concludes about a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Thread by thread gives the results of converged warps; the text
    /// says why.
    Independent(&'static str),
    /// Thread by thread gives the results of converged warps when the
    /// launch meets the conditions (checked when a block starts).
    IndependentIf(Conditions),
    /// Lanes of a warp may observe each other's memory effects.
    Exchanges(Exchange),
}

/// Run-time conditions under which a kernel's lanes cannot observe each
/// other's memory effects (see "Conditions" in the module's notes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// The kernel (item index) the conditions are about.
    pub kernel: ItemId,
    /// The block has one dimension (`%ntid.y` and `%ntid.z` are 1), so the
    /// lanes of a warp have consecutive `%tid.x`.
    pub one_dimensional: bool,
    /// Pairs of bases whose distance must keep the lanes apart.
    pub apart: Vec<Apart>,
    /// Pairs of accesses whose bytes over the whole launch must not
    /// overlap.
    pub disjoint: Vec<Disjoint<Base, VarId>>,
    /// Stores in loops whose threads must write disjoint bytes.
    pub injective: Vec<Injective<Base, VarId>>,
}

/// `d = (a + a_offset) - (b + b_offset)`, the distance between the same
/// lane's addresses of two accesses through bases `a` and `b`, must be 0
/// (when `equal` allows it), or at least `min` in magnitude and at least
/// `min` away from `wrap` in magnitude (where lanes whose 32-bit index
/// wrapped would meet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apart {
    pub a: Base,
    pub a_offset: i64,
    pub b: Base,
    pub b_offset: i64,
    pub equal: bool,
    pub min: u64,
    pub wrap: u64,
}

impl Apart {
    /// Whether a distance `d` keeps the lanes apart.
    pub fn holds(&self, d: i64) -> bool {
        let a = d.unsigned_abs();
        (d == 0 && self.equal) || (a >= self.min && a.abs_diff(self.wrap) >= self.min)
    }
}

/// A warp-uniform 64-bit value an address is formed from, known when a
/// block starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Base {
    /// No base: the address is its index and offset.
    None,
    /// A 64-bit kernel parameter (`ld.param.u64` of it).
    Param(VarId),
    /// A module variable's address.
    Symbol(SymbolId),
}

/// A value of the launch a kernel's index computations start from: the
/// thread's index in its block (`%tid`), the block's size (`%ntid`), the
/// block's index in the grid (`%ctaid`), the grid's size (`%nctaid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Launch {
    Tid,
    Ntid,
    Ctaid,
    Nctaid,
}

/// One step of a 32-bit integer value's computation, in postfix order: a
/// leaf pushes a value, an operation pops two and pushes the result. The
/// operations are those of the ring of integers modulo 2^32 (addition,
/// subtraction, multiplication), so the 32-bit register holding the value
/// equals the exact integer result modulo 2^32, whichever representative
/// of each leaf is taken. `P` names a 32-bit kernel parameter (its
/// variable in the analysis, its byte offset in a launch guard).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op<P> {
    Const(i64),
    /// A 32-bit kernel parameter, read as signed or unsigned.
    Param {
        at: P,
        signed: bool,
    },
    /// The 32-bit field at byte `field` of a kernel parameter (a member
    /// of a `uint3` or of another aggregate passed by value).
    Field {
        at: P,
        field: u32,
        signed: bool,
    },
    /// A launch value and its dimension (0 = x, 1 = y, 2 = z).
    Special(Launch, u8),
    Add,
    Sub,
    Mul,
    /// A 32-bit register widened to 64 bits (`cvt`, `mul.wide`), with or
    /// without its sign: the register is the exact value only when that
    /// lies in the range the widening reads (`[-2^31, 2^31)` signed, `[0,
    /// 2^32)` unsigned), so the computation fails otherwise; after it the
    /// 64-bit value is exact.
    Wide {
        signed: bool,
    },
    /// `mul.hi.u32`: pops `y`, `x`, pushes `floor(x * y / 2^32)`. Both
    /// must lie in `[0, 2^32)` (then the registers are the exact values,
    /// and the result is exact).
    MulHi,
    /// `shr.u32`: pops `k`, `x`, pushes `floor(x / 2^k)`; `x` must lie in
    /// `[0, 2^32)` and `k` in `[0, 31]`.
    Shr,
    /// The remainder `x - q * d` of a division by multiply-high and shift,
    /// `q = (mul.hi.u32(x, m) + x) >> s` (CUDA's fast division by a divisor
    /// known at launch): pops `d`, `s`, `m`, `x`. When the launch's `m`, `s`
    /// and `d` make `q` the exact quotient `floor(x / d)` for every `x` of
    /// the interval ([`fast_division_exact`]), the remainder is `x mod d`,
    /// in `[0, d)`; otherwise the computation fails.
    Rem,
    /// A 32-bit register known to be below `b` (unsigned) where it is
    /// read: pops `b`, pushes `[0, b)` (a loop counter bounded by its
    /// loop's conditions, `Forms::counter_bound`); fails when `b` may
    /// be 0. Unlike the other operations its value changes from one
    /// iteration to the next: a computation with it bounds values, it
    /// does not name one.
    Under,
    /// `div.s64` / `div.u64`: pops `d`, `x`, pushes `x / d`. Both must lie
    /// in `[0, 2^63)` and `d` be at least 1: then the 64-bit registers
    /// are the exact values (signed or not) and the quotient is exact
    /// (truncating and flooring agree).
    Div,
    /// The remainder `x - (x / d) * d` of such a division (`rem.s64`, or
    /// the product of its quotient subtracted): pops `d`, `x`, pushes
    /// `x mod d`, in `[0, min(x, d - 1)]`, under the conditions of
    /// [`Op::Div`].
    Mod,
    /// `selp`: pops `b`, `a`, pushes one of the two (whichever the
    /// predicate picks): a value between the smaller and the larger.
    Either,
    /// A 64-bit register's value `x` read where an exit passed proves `x
    /// <= n` (`if (i >= n) return;`): pops `n`, `x`, pushes `x` with its
    /// upper end capped at `n` (the same value; fails when no `x` of the
    /// interval is at most `n`).
    Min,
}

/// Whether `q(x) = floor((floor(x * m / 2^32) + x) / 2^s)`, computed in
/// 32-bit registers, is `floor(x / d)` for every `x` in `[0, top]`.
///
/// The 32-bit sum must not wrap: `floor(top * m / 2^32) + top < 2^32`
/// (it grows with `x`). Then `q(x) = floor(x * M / 2^k)` with `M = 2^32 +
/// m`, `k = 32 + s` (nested floors of divisions by powers of two). With
/// `e = M * d - 2^k >= 0`, `x * M / 2^k = x / d + x * e / (d * 2^k)`:
/// at least `x / d`, so `q(x) >= floor(x / d)`; and writing `x = q * d +
/// r`, `r <= d - 1`, it is below `q + 1` when `r + x * e / 2^k < d`, which
/// `x * e < 2^k` ensures. So `top * e < 2^k` suffices.
pub fn fast_division_exact(m: i128, s: i128, d: i128, top: i128) -> bool {
    if !(0..1 << 32).contains(&m) || !(0..32).contains(&s) || !(1..1 << 32).contains(&d) || !(0..1 << 32).contains(&top) {
        return false;
    }
    let k = 32 + s;
    let e = ((1i128 << 32) + m) * d - (1i128 << k);
    ((top * m) >> 32) + top < 1 << 32 && e >= 0 && top * e < 1i128 << k
}

/// The bytes one access may touch over a whole launch: `base + offset +
/// scale * widen(index) + [0, bytes)` for every value the 32-bit `index`
/// takes in the launch (no index: the same address in every thread).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span<B, P> {
    pub base: B,
    pub offset: i64,
    pub index: Option<SpanIndex<P>>,
    pub bytes: u64,
}

/// The index of a [`Span`]: its computation, how it is widened to 64
/// bits (`signed`: with its sign) and the scale it is multiplied by.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanIndex<P> {
    pub value: Vec<Op<P>>,
    pub signed: bool,
    /// The value is a 64-bit register's (an offset [`Op::Wide`] builds
    /// from 32-bit values), not a 32-bit register widened: the register
    /// equals the exact value modulo 2^64, so the address is exact when
    /// the bytes lie in `[0, 2^64)`, and `signed` is not used.
    pub wide: bool,
    pub scale: i64,
    /// A value the index is below (`true`: at most) wherever the access
    /// runs, compared as the widening reads it: an early exit (`if (i >=
    /// n) return;`) the access's straight-line code passed.
    pub below: Option<(Vec<Op<P>>, bool)>,
}

/// A store that may run several times per thread (in a loop) whose
/// threads must never write the same byte (see "Stores in loops" in the
/// module's notes): its address is `base + offset + sum of factor *
/// stride * coordinate` over [`Term`]s, `bytes` wide.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Injective<B, P> {
    pub base: B,
    pub offset: i64,
    pub bytes: u64,
    pub terms: Vec<Term<P>>,
    /// Launch extents that must be 1 (`Ntid` or `Nctaid`, dimension): the
    /// parts of a thread's index no coordinate determines.
    pub single: Vec<(Launch, u8)>,
    /// Grid-stride counters' `(bound, step)`: `bound + step <= 2^32`, so a
    /// counter below its bound never wraps when stepped.
    pub nowrap: Vec<NoWrap<P>>,
    /// Further stores through the same address register, written by the
    /// same instruction, at their own constant `(offset, bytes)` (offsets
    /// counted as `offset` is): the condition is then about the union of
    /// all of them ("Stores through one address" in the module's notes).
    pub more: Vec<(i64, u64)>,
}

/// Most byte intervals [`Injective::holds`] enumerates for a coordinate
/// whose stride is smaller than the bytes the smaller terms and the
/// stores' offsets span: llama.cpp's dequantising stores need at most
/// 128 (q6_K: 32 values of `tid % 32` times four stores 128 bytes
/// apart; q4_K 16), and a launch check of 4,096 intervals (sorted once)
/// stays far below a block's run time.
const MAX_PATTERN: i128 = 4096;

/// A grid-stride counter's bound and step (see [`Injective::nowrap`]).
pub type NoWrap<P> = (Vec<Op<P>>, Vec<Op<P>>);

/// A way into a label's code ([`Forms::bound_at`]): the branching or
/// falling statement, the branch's guard and the value it has when taken,
/// and whether it is the fall.
type WayIn = (usize, Option<(RegId, bool)>, bool);

/// A 64-bit grid-stride counter ([`Forms::counter64`]): the parts of the
/// thread's index it names, and its bound and step.
type Counter64 = (Vec<(Launch, u8)>, NoWrap<VarId>);

/// One term of an [`Injective`] address: a 32-bit coordinate (widened
/// without sign; its computation bounds it) times a launch constant
/// `stride` times `factor`. (Or a 64-bit coordinate, or one widened with
/// its sign, whose computation ends in the widening: see "64-bit loops
/// and strides" in the module's notes.)
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Term<P> {
    pub coord: Vec<Op<P>>,
    pub stride: Vec<Op<P>>,
    pub factor: i64,
}

impl<B, P> Injective<B, P> {
    /// Whether, for this launch, no two threads write the same byte: the
    /// single extents are 1, the counters cannot wrap, each coordinate
    /// lies in `[lo, hi]` within `[0, 2^32)` with an exact positive byte
    /// stride `c`, and taken in increasing `c` each stride is at least
    /// the bytes all smaller terms span (`bytes + sum of c * (hi - lo)`),
    /// so distinct coordinate tuples give disjoint bytes; the addresses
    /// must lie in `[0, 2^64)` (then the 64-bit registers are exact).
    ///
    /// With further stores ([`Injective::more`]) the bytes a tuple's
    /// stores touch are a set of intervals, the *pattern* (initially the
    /// stores' own, which must not overlap). Each term, in increasing
    /// `c`, replaces the pattern by its translates by `k * c`, `k` in
    /// `[0, hi - lo]`: when `c` is at least the pattern's extent they
    /// cannot overlap and their hull stands for them (a superset: what
    /// keeps the hull's translates apart keeps the pattern's apart), as
    /// without further stores; otherwise the translates are enumerated
    /// (at most [`MAX_PATTERN`] intervals) and must not overlap.
    /// Invariant, by induction over the terms: distinct pairs of a tuple
    /// of the terms taken so far and a store touch disjoint bytes of the
    /// pattern; so at the end distinct threads (distinct tuples) do.
    pub fn holds(
        &self,
        base: &dyn Fn(&B) -> Option<u64>,
        param: &dyn Fn(&P, u32, bool) -> Option<i64>,
        grid: [u32; 3],
        block: [u32; 3],
    ) -> bool {
        self.check(base, param, grid, block).is_some()
    }

    fn check(
        &self,
        base: &dyn Fn(&B) -> Option<u64>,
        param: &dyn Fn(&P, u32, bool) -> Option<i64>,
        grid: [u32; 3],
        block: [u32; 3],
    ) -> Option<()> {
        for &(l, d) in &self.single {
            let n = match l {
                Launch::Ntid => *block.get(d as usize)?,
                Launch::Nctaid => *grid.get(d as usize)?,
                _ => return None,
            };
            (n == 1).then_some(())?;
        }
        for (bound, step) in &self.nowrap {
            let (b, s) = (value_range(bound, param, grid, block)?, value_range(step, param, grid, block)?);
            (s.0 >= 1 && b.1 + s.1 <= 1 << 32).then_some(())?;
        }
        let mut start = i128::from(base(&self.base)?) + i128::from(self.offset);
        let mut steps = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            let (lo, hi) = value_range(&t.coord, param, grid, block)?;
            let (s0, s1) = value_range(&t.stride, param, grid, block)?;
            (lo >= 0 && hi < 1 << 32 && s0 == s1).then_some(())?;
            let c = s0.checked_mul(i128::from(t.factor))?;
            (c.abs() <= RANGE_BOUND).then_some(())?;
            start = start.checked_add(c.checked_mul(lo)?)?;
            if hi > lo {
                (c > 0).then_some(())?;
                steps.push((c, hi - lo));
            }
        }
        steps.sort();
        let low = self.more.iter().map(|&(o, _)| o).fold(self.offset, i64::min);
        start = start.checked_add(i128::from(low) - i128::from(self.offset))?;
        let mut pattern: Vec<(i128, i128)> = std::iter::once((self.offset, self.bytes))
            .chain(self.more.iter().copied())
            .map(|(o, n)| (i128::from(o) - i128::from(low), i128::from(o) - i128::from(low) + i128::from(n)))
            .collect();
        pattern = disjoint_union(pattern)?;
        for (c, n) in steps {
            let span = pattern.last()?.1;
            if c >= span {
                pattern = vec![(0, span.checked_add(c.checked_mul(n)?)?)];
            } else {
                ((n + 1).checked_mul(pattern.len() as i128)? <= MAX_PATTERN).then_some(())?;
                let shifted = (0..=n).flat_map(|k| pattern.iter().map(move |&(a, b)| (a + k * c, b + k * c))).collect();
                pattern = disjoint_union(shifted)?;
            }
            (pattern.last()?.1 <= 1 << 64).then_some(())?;
        }
        let span = pattern.last()?.1;
        (start >= 0 && start + span <= 1 << 64).then_some(())
    }

    /// The same condition with bases and parameters named otherwise.
    pub fn map<B2, P2>(&self, fb: &dyn Fn(&B) -> B2, fp: &dyn Fn(&P) -> P2) -> Injective<B2, P2> {
        let ops = |v: &[Op<P>]| map_ops(v, fp);
        Injective {
            base: fb(&self.base),
            offset: self.offset,
            bytes: self.bytes,
            terms: self.terms.iter().map(|t| Term { coord: ops(&t.coord), stride: ops(&t.stride), factor: t.factor }).collect(),
            single: self.single.clone(),
            nowrap: self.nowrap.iter().map(|(b, s)| (ops(b), ops(s))).collect(),
            more: self.more.clone(),
        }
    }
}

/// Half-open intervals `[a, b)` sorted and merged where they touch, or
/// `None` when two overlap (or one is empty).
fn disjoint_union(mut v: Vec<(i128, i128)>) -> Option<Vec<(i128, i128)>> {
    v.sort_unstable();
    let mut out: Vec<(i128, i128)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        (a < b).then_some(())?;
        match out.last_mut() {
            Some(last) if a < last.1 => return None,
            Some(last) if a == last.1 => last.1 = b,
            _ => out.push((a, b)),
        }
    }
    Some(out)
}

/// A computation with parameters named otherwise.
pub fn map_ops<P, P2>(v: &[Op<P>], fp: &dyn Fn(&P) -> P2) -> Vec<Op<P2>> {
    v.iter()
        .map(|op| match op {
            Op::Const(c) => Op::Const(*c),
            Op::Param { at, signed } => Op::Param { at: fp(at), signed: *signed },
            Op::Field { at, field, signed } => Op::Field { at: fp(at), field: *field, signed: *signed },
            Op::Special(l, d) => Op::Special(*l, *d),
            Op::Add => Op::Add,
            Op::Sub => Op::Sub,
            Op::Mul => Op::Mul,
            Op::Wide { signed } => Op::Wide { signed: *signed },
            Op::MulHi => Op::MulHi,
            Op::Shr => Op::Shr,
            Op::Rem => Op::Rem,
            Op::Under => Op::Under,
            Op::Div => Op::Div,
            Op::Mod => Op::Mod,
            Op::Either => Op::Either,
            Op::Min => Op::Min,
        })
        .collect()
}

/// Two accesses whose bytes over the whole launch must not overlap (see
/// "Launch ranges" in the module's notes).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Disjoint<B, P> {
    pub a: Span<B, P>,
    pub b: Span<B, P>,
}

/// The exact values a launch value takes over a launch of `grid` blocks
/// of `block` threads: `%tid.d` in `[0, block[d])`, `%ctaid.d` in
/// `[0, grid[d])`, `%ntid.d` and `%nctaid.d` exactly; `None` for a
/// dimension of 0 or one past the third.
pub(crate) fn launch_range(l: Launch, d: u8, grid: [u32; 3], block: [u32; 3]) -> Option<(i128, i128)> {
    let (b, g) = (i128::from(*block.get(d as usize)?), i128::from(*grid.get(d as usize)?));
    if b == 0 || g == 0 {
        return None;
    }
    Some(match l {
        Launch::Tid => (0, b - 1),
        Launch::Ntid => (b, b),
        Launch::Ctaid => (0, g - 1),
        Launch::Nctaid => (g, g),
    })
}

/// A ring operation of interval arithmetic ([`ring_range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ring {
    Add,
    Sub,
    Mul,
}

/// The exact range of `x op y` for `x` and `y` in their (inclusive)
/// ranges; `None` when a bound of a product does not fit an `i128`.
pub(crate) fn ring_range(op: Ring, x: (i128, i128), y: (i128, i128)) -> Option<(i128, i128)> {
    Some(match op {
        Ring::Add => (x.0.checked_add(y.0)?, x.1.checked_add(y.1)?),
        Ring::Sub => (x.0.checked_sub(y.1)?, x.1.checked_sub(y.0)?),
        Ring::Mul => {
            let p = [x.0.checked_mul(y.0)?, x.0.checked_mul(y.1)?, x.1.checked_mul(y.0)?, x.1.checked_mul(y.1)?];
            (*p.iter().min()?, *p.iter().max()?)
        }
    })
}

/// Magnitude beyond which a launch range is not computed (the condition
/// then fails): products of two such bounds fit in an `i128`.
pub const RANGE_BOUND: i128 = 1 << 62;

/// The smallest and largest exact integer values of `ops` over a launch
/// of `grid` blocks of `block` threads (interval arithmetic over
/// `%tid.d` in `[0, block[d])`, `%ctaid.d` in `[0, grid[d])`, `%ntid.d`
/// and `%nctaid.d` exactly), or `None` when an operand is unknown, a
/// dimension is 0, the program is malformed or an intermediate bound
/// passes [`RANGE_BOUND`].
pub fn value_range<P>(
    ops: &[Op<P>],
    param: &dyn Fn(&P, u32, bool) -> Option<i64>,
    grid: [u32; 3],
    block: [u32; 3],
) -> Option<(i128, i128)> {
    let mut stack: Vec<(i128, i128)> = Vec::with_capacity(8);
    let u32s = |v: (i128, i128)| v.0 >= 0 && v.1 < 1 << 32;
    for op in ops {
        let v = match op {
            Op::Const(c) => (i128::from(*c), i128::from(*c)),
            Op::Param { at, signed } => {
                let x = i128::from(param(at, 0, *signed)?);
                (x, x)
            }
            Op::Field { at, field, signed } => {
                let x = i128::from(param(at, *field, *signed)?);
                (x, x)
            }
            Op::Wide { signed } => {
                let x = stack.pop()?;
                let fits = if *signed { x.0 >= -(1 << 31) && x.1 < 1 << 31 } else { u32s(x) };
                fits.then_some(x)?
            }
            Op::MulHi => {
                let (y, x) = (stack.pop()?, stack.pop()?);
                (u32s(x) && u32s(y)).then_some(((x.0 * y.0) >> 32, (x.1 * y.1) >> 32))?
            }
            Op::Shr => {
                let (k, x) = (stack.pop()?, stack.pop()?);
                (u32s(x) && k.0 >= 0 && k.1 < 32).then_some((x.0 >> k.1, x.1 >> k.0))?
            }
            Op::Under => {
                let b = stack.pop()?;
                (b.0 >= 1 && b.1 <= 1 << 32).then_some((0, b.1 - 1))?
            }
            Op::Rem => {
                let (d, s, m, x) = (stack.pop()?, stack.pop()?, stack.pop()?, stack.pop()?);
                let exact = d.0 == d.1 && s.0 == s.1 && m.0 == m.1 && x.0 >= 0 && fast_division_exact(m.0, s.0, d.0, x.1);
                exact.then_some(())?;
                let d = d.0;
                if x.0 / d == x.1 / d {
                    (x.0 % d, x.1 % d)
                } else {
                    (0, d - 1)
                }
            }
            Op::Div | Op::Mod => {
                let (d, x) = (stack.pop()?, stack.pop()?);
                let fits = |v: (i128, i128)| v.1 < 1 << 63;
                (x.0 >= 0 && d.0 >= 1 && fits(x) && fits(d)).then_some(())?;
                if matches!(op, Op::Div) {
                    (x.0 / d.1, x.1 / d.0)
                } else if d.0 == d.1 && x.0 / d.0 == x.1 / d.0 {
                    (x.0 % d.0, x.1 % d.0)
                } else {
                    (0, x.1.min(d.1 - 1))
                }
            }
            Op::Either => {
                let (b, a) = (stack.pop()?, stack.pop()?);
                (a.0.min(b.0), a.1.max(b.1))
            }
            Op::Min => {
                let (n, x) = (stack.pop()?, stack.pop()?);
                let top = x.1.min(n.1);
                (top >= x.0).then_some((x.0, top))?
            }
            Op::Special(l, d) => launch_range(*l, *d, grid, block)?,
            Op::Add | Op::Sub | Op::Mul => {
                let y = stack.pop()?;
                let x = stack.pop()?;
                let ring = match op {
                    Op::Add => Ring::Add,
                    Op::Sub => Ring::Sub,
                    _ => Ring::Mul,
                };
                ring_range(ring, x, y)?
            }
        };
        if v.0 < -RANGE_BOUND || v.1 > RANGE_BOUND {
            return None;
        }
        stack.push(v);
    }
    match stack[..] {
        [v] => Some(v),
        _ => None,
    }
}

impl<B, P> Span<B, P> {
    /// The bytes `[start, end)` the access may touch over the launch, given
    /// its base's address; `None` when the index may wrap in 32 bits or
    /// where it is widened, or the addresses wrap around 2^64.
    pub fn launch_bytes(
        &self,
        base: u64,
        param: &dyn Fn(&P, u32, bool) -> Option<i64>,
        grid: [u32; 3],
        block: [u32; 3],
    ) -> Option<(i128, i128)> {
        let start = i128::from(base) + i128::from(self.offset);
        let (lo, hi) = match &self.index {
            None => (start, start),
            Some(ix) => {
                let (lo, hi) = value_range(&ix.value, param, grid, block)?;
                // The register holds the exact value modulo 2^32: it is the
                // exact value only when that fits the widening's range.
                let fits = if ix.wide {
                    true
                } else if ix.signed {
                    lo >= -(1 << 31) && hi < 1 << 31
                } else {
                    lo >= 0 && hi < 1 << 32
                };
                if !fits {
                    return None;
                }
                // Only then does the comparison see the exact value.
                let hi = match &ix.below {
                    Some((bound, inclusive)) => {
                        let (_, top) = value_range(bound, param, grid, block)?;
                        hi.min(if *inclusive { top } else { top - 1 }).max(lo)
                    }
                    None => hi,
                };
                let (p, q) = (i128::from(ix.scale) * lo, i128::from(ix.scale) * hi);
                (start + p.min(q), start + p.max(q))
            }
        };
        let end = hi + i128::from(self.bytes);
        (lo >= 0 && end <= 1 << 64).then_some((lo, end))
    }
}

impl<B, P> Disjoint<B, P> {
    /// Whether the two accesses' bytes over the launch are known not to
    /// overlap; `base` gives a base's address.
    pub fn holds(
        &self,
        base: &dyn Fn(&B) -> Option<u64>,
        param: &dyn Fn(&P, u32, bool) -> Option<i64>,
        grid: [u32; 3],
        block: [u32; 3],
    ) -> bool {
        let range = |s: &Span<B, P>| s.launch_bytes(base(&s.base)?, param, grid, block);
        match (range(&self.a), range(&self.b)) {
            (Some(a), Some(b)) => a.1 <= b.0 || b.1 <= a.0,
            _ => false,
        }
    }

    /// The same condition with bases and parameters named otherwise.
    pub fn map<B2, P2>(&self, fb: &dyn Fn(&B) -> B2, fp: &dyn Fn(&P) -> P2) -> Disjoint<B2, P2> {
        let ops = |v: &[Op<P>]| map_ops(v, fp);
        let span = |s: &Span<B, P>| Span {
            base: fb(&s.base),
            offset: s.offset,
            index: s.index.as_ref().map(|ix| SpanIndex {
                value: ops(&ix.value),
                signed: ix.signed,
                wide: ix.wide,
                scale: ix.scale,
                below: ix.below.as_ref().map(|(v, inclusive)| (ops(v), *inclusive)),
            }),
            bytes: s.bytes,
        };
        Disjoint { a: span(&self.a), b: span(&self.b) }
    }
}

/// Why a kernel's lanes may observe each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub kind: ExchangeKind,
    /// The instruction.
    pub at: Site,
    /// The other instruction of a pair, when there is one (and it is not
    /// `at` itself).
    pub with: Option<Site>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeKind {
    /// The instruction uses the block's shared memory.
    SharedMemory,
    /// The instruction has memory effects the analysis does not model.
    Unmodelled,
    /// A write another lane's access (`with`) may see or overwrite.
    GlobalPair,
    /// A write or atomic that may run more than once per thread: another
    /// lane's instance of it may come between two of this lane's.
    RepeatedWrite,
}

impl Verdict {
    /// Independent without conditions.
    pub fn independent(&self) -> bool {
        matches!(self, Verdict::Independent(_))
    }

    /// The verdict in words, with source positions (`src` is the module's
    /// text).
    pub fn explain(&self, m: &Module, src: &str) -> String {
        match self {
            Verdict::Independent(why) => (*why).to_string(),
            Verdict::IndependentIf(c) => format!("no lane can see or overwrite what another lane of its warp stores {}", c.explain(m)),
            Verdict::Exchanges(e) => {
                let lines = ptx::LineIndex::new(src);
                let at = describe_site(m, &lines, e.at);
                match (e.kind, e.with) {
                    (ExchangeKind::SharedMemory, _) => {
                        format!("{at} uses shared memory, which the lanes of a warp may exchange values through")
                    }
                    (ExchangeKind::Unmodelled, _) => format!("{at} has memory effects the lockstep analysis does not model"),
                    (ExchangeKind::RepeatedWrite, _) => {
                        format!("{at} writes global memory and may run more than once per thread, between another lane's runs of it")
                    }
                    (ExchangeKind::GlobalPair, Some(w)) => {
                        let other = describe_site(m, &lines, w);
                        format!("{at} may write global memory that {other} of another lane of the warp accesses")
                    }
                    (ExchangeKind::GlobalPair, None) => format!("{at} may write global memory another lane accesses"),
                }
            }
        }
    }
}

impl Conditions {
    /// The conditions in words.
    pub fn explain(&self, m: &Module) -> String {
        let mut parts = Vec::new();
        if self.one_dimensional {
            parts.push("the block has one dimension".to_string());
        }
        let base_name = |b: Base| match b {
            Base::None => "0".to_string(),
            Base::Param(v) => match m.items.get(self.kernel as usize) {
                Some(Item::Function(f)) if (v as usize) < f.vars.len() => f.var(v).name.to_string(),
                _ => format!("parameter {v}"),
            },
            Base::Symbol(s) => m.symbols.get(s as usize).map_or_else(|| format!("symbol {s}"), |sym| sym.name.to_string()),
        };
        for ap in &self.apart {
            let name = |b: Base, off: i64| {
                let n = base_name(b);
                if off == 0 {
                    format!("`{n}`")
                } else {
                    format!("`{n}{off:+}`")
                }
            };
            let (a, b) = (name(ap.a, ap.a_offset), name(ap.b, ap.b_offset));
            if ap.equal {
                parts.push(format!("{a} and {b} are equal or at least {} bytes apart", ap.min));
            } else {
                parts.push(format!("{a} and {b} are at least {} bytes apart", ap.min));
            }
        }
        let span = |sp: &Span<Base, VarId>| {
            let mut t = base_name(sp.base);
            if sp.offset != 0 {
                let _ = write!(t, " {} {}", if sp.offset < 0 { '-' } else { '+' }, sp.offset.unsigned_abs());
            }
            if let Some(ix) = &sp.index {
                let _ = write!(t, " + {} * index", ix.scale);
            }
            format!("`{t}` ({} bytes)", sp.bytes)
        };
        for d in &self.disjoint {
            parts.push(format!("the bytes at {} and at {} over the whole launch do not overlap", span(&d.a), span(&d.b)));
        }
        for inj in &self.injective {
            let mut t = base_name(inj.base);
            if inj.offset != 0 {
                let _ = write!(t, " {} {}", if inj.offset < 0 { '-' } else { '+' }, inj.offset.unsigned_abs());
            }
            parts.push(format!(
                "the {} bytes a store writes at `{t}` plus {} index term(s) are never the same for two threads",
                inj.bytes,
                inj.terms.len()
            ));
        }
        if parts.is_empty() {
            return "whatever the launch".to_string();
        }
        format!("when {}", parts.join(" and "))
    }
}

fn describe_site(m: &Module, lines: &ptx::LineIndex, s: Site) -> String {
    let Some(Item::Function(f)) = m.items.get(s.item as usize) else { return "an instruction".into() };
    let Some(b) = &f.body else { return "an instruction".into() };
    let Some(Statement::Instruction(inst)) = b.statements.get(s.statement) else { return "an instruction".into() };
    let mut text = inst.op.as_str().to_string();
    for md in b.mods(inst) {
        let _ = match md {
            Modifier::Type(t) => write!(text, ".{t}"),
            Modifier::Space(sp) => write!(text, ".{sp}"),
            Modifier::Sem(sm) => write!(text, ".{sm}"),
            Modifier::Scope(sc) => write!(text, ".{sc}"),
            Modifier::Vec(n) => write!(text, ".v{n}"),
            Modifier::Flag(fl) => write!(text, ".{fl}"),
            _ => Ok(()),
        };
    }
    let (line, column) = lines.line_col(b.span(s.statement).start);
    format!("`{text}` at {line}:{column} (in `{}`)", f.name)
}

/// How an instruction touches memory, as far as the rule cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// No memory another thread can see, or read-only memory.
    None,
    /// The block's shared memory.
    Shared,
    /// Effects the analysis does not model.
    Unmodelled,
    /// Reads global or generic memory that may change during the kernel.
    Read,
    /// Writes global or generic memory; `commutes` names the operation
    /// and type of a `red` whose order does not matter.
    Write { reads: bool, commutes: Option<(Flag, Type)> },
}

pub(crate) fn is_shared(s: StateSpace) -> bool {
    matches!(s, StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster)
}

/// Whether an operand names a `.shared` variable (of the function or of
/// the module).
pub(crate) fn names_shared(m: &Module, f: &Function, b: &Body, op: &Operand) -> bool {
    match *op {
        Operand::Var(v) | Operand::AddrVar(v, _) | Operand::VarOffset(v, _) => f.vars.get(v as usize).is_some_and(|d| is_shared(d.space)),
        Operand::Global(s) | Operand::AddrGlobal(s, _) | Operand::GlobalOffset(s, _) => {
            m.symbols.get(s as usize).is_some_and(|sym| sym.kind == SymbolKind::Variable)
                && m.variable(s).is_some_and(|v| is_shared(v.decl.space))
        }
        Operand::Vector(l) | Operand::Paren(l) | Operand::Bracket(l) | Operand::VectorPred(l, _) => {
            b.list(l).iter().any(|o| names_shared(m, f, b, o))
        }
        _ => false,
    }
}

/// The integer `red` operations whose order does not change the result.
fn commuting(b: &Body, inst: &Instruction) -> Option<(Flag, Type)> {
    let t = inst.ty(b)?;
    if t.is_float() || inst.vector(b).is_some() {
        return None;
    }
    let op = inst.flags(b).find(|f| matches!(f, Flag::AddOp | Flag::And | Flag::Or | Flag::Xor | Flag::MinOp | Flag::MaxOp))?;
    Some((op, t))
}

fn effect(m: &Module, f: &Function, b: &Body, inst: &Instruction) -> Effect {
    if inst.spaces(b).any(is_shared) || b.args(inst).iter().any(|a| names_shared(m, f, b, a)) {
        return Effect::Shared;
    }
    let global = || matches!(inst.space(b), None | Some(StateSpace::Global));
    use Opcode::*;
    match inst.op {
        // `.nc`: read-only for the kernel's lifetime.
        Ld if global() && !inst.has(b, Flag::Nc) => Effect::Read,
        Ld | Ldu => Effect::None,
        St if global() => Effect::Write { reads: false, commutes: None },
        St => Effect::None,
        Red if global() => Effect::Write { reads: false, commutes: commuting(b, inst) },
        Atom if global() => Effect::Write { reads: true, commutes: None },
        Red | Atom => Effect::Unmodelled,
        // The matrix forms read and write through their own addresses;
        // they are warp collectives, which run as warps anyway.
        Wmma if !inst.has(b, Flag::MmaOp) => Effect::Unmodelled,
        Cp | Suld | Sust | Sured | Multimem | Tensormap | Tcgen05 | Wgmma | Discard | Clusterlaunchcontrol | Mbarrier | Ldmatrix
        | Stmatrix | Mapa | Getctarank => Effect::Unmodelled,
        _ => Effect::None,
    }
}

/// The statement index of each label of a body.
pub(crate) fn label_positions(b: &Body) -> std::collections::HashMap<LabelId, usize> {
    b.statements
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Statement::Label(l) => Some((*l, i)),
            _ => None,
        })
        .collect()
}

/// Statements of a body that may run more than once per call: those
/// inside a loop, i.e. between the target of a backward branch and the
/// branch (every cycle of the control flow contains such a range), or
/// every statement if the body has an indirect branch.
fn repeated(b: &Body, label_at: &std::collections::HashMap<LabelId, usize>) -> Vec<bool> {
    let n = b.statements.len();
    let mut out = vec![false; n];
    for (i, s) in b.statements.iter().enumerate() {
        let Statement::Instruction(inst) = s else { continue };
        match inst.op {
            Opcode::Brx => return vec![true; n],
            Opcode::Bra => {
                if let Some(Operand::Label(l)) = b.args(inst).first() {
                    if let Some(&t) = label_at.get(l) {
                        if t <= i {
                            out[t..=i].iter_mut().for_each(|x| *x = true);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The bytes a load or store touches relative to one register value: the
/// register, the write of it the access reads (`Forms::reach`), the
/// address operand's constant offset and the bytes accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    reg: RegId,
    write: usize,
    offset: i64,
    bytes: u64,
}

impl Cell {
    /// Every byte of `self` is a byte of `other` for the same register
    /// value.
    fn within(&self, other: &Cell) -> bool {
        let (a, b) = (i128::from(self.offset), i128::from(other.offset));
        self.reg == other.reg && self.write == other.write && a >= b && a + i128::from(self.bytes) <= b + i128::from(other.bytes)
    }
}

struct Access {
    at: Site,
    effect: Effect,
    /// Runs at most once per thread.
    once: bool,
    /// Where each lane's access lies, if the kernel's own code forms the
    /// address in a way [`Forms`] follows; and the bytes accessed.
    form: Option<Form>,
    bytes: u64,
    /// The bytes it touches over a launch, when its index's computation
    /// is known.
    span: Option<Span<Base, VarId>>,
    /// For a store: the condition keeping threads' bytes apart, when its
    /// address decomposes ([`Forms::injective`]).
    injective: Option<Injective<Base, VarId>>,
    /// For a store in the kernel's body: its address register and the
    /// write of it the store reads.
    address: Option<(RegId, usize)>,
    /// For a load or store in the kernel's body: its address register, the
    /// write of it the access reads, and its constant offset and bytes.
    cell: Option<Cell>,
    /// The stores through the same address it is one of, when their union
    /// keeps threads' bytes apart (an index into the joint conditions).
    group: Option<usize>,
}

/// A lane's address: `base + scale * widen(index) + offset`, where `index`
/// is a 32-bit register, widened to 64 bits with (`signed`) or without
/// sign extension, that holds a warp-uniform value plus `%tid.x` (`lane`)
/// or a value [`Forms::value`] follows (or both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Form {
    pub base: Base,
    pub index: Option<Index>,
    pub offset: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Index {
    /// The statement whose write the register holds.
    pub def: usize,
    pub signed: bool,
    pub scale: i64,
    pub lane: bool,
}

/// Longest index computation followed (operations of [`Op`]).
const MAX_VALUE_OPS: usize = 256;

/// How an immediate operand is read into a computation.
#[derive(Clone, Copy)]
enum Imm {
    /// A 32-bit ring operation's: the representative nearest 0.
    S32,
    /// An unsigned 32-bit operation's.
    U32,
    /// A 64-bit operation's.
    B64,
}

/// Scales beyond this are not followed (products must not overflow).
const MAX_SCALE: i64 = 1 << 20;

/// The forms of a kernel body's registers, from their definitions. A
/// register read at a statement is followed through the write that
/// reaches it for certain: the last write before the statement with no
/// label in between (straight-line code: every execution of the statement
/// has just executed that write), or else the register's only write in
/// the whole body. The write must be unguarded (a guarded write leaves
/// some lanes' old value) and write the register alone (not a vector or
/// a pair). Such a write's value is a function of what its own operands
/// hold where it stands, so equal writes mean equal values (a register
/// whose reaching write reads itself, a loop counter, is neither uniform
/// nor an index: its value changes). Results are kept per write
/// (statement index).
struct Forms<'a> {
    f: &'a Function<'a>,
    b: &'a Body<'a>,
    m: &'a Module<'a>,
    /// The one unguarded write of each register, if it has one.
    single: Vec<Option<usize>>,
    /// The statements writing each register, in order.
    writes: Vec<Vec<usize>>,
    /// Per statement: the index of the last label at or before it (0 when none).
    region: Vec<usize>,
    /// Per statement: whether it may run more than once per call ([`repeated`]).
    rep: Vec<bool>,
    /// The statement index of each label ([`label_positions`]).
    label_at: std::collections::HashMap<LabelId, usize>,
    uniform: std::collections::HashMap<usize, bool>,
    lane: std::collections::HashMap<usize, bool>,
    forms: std::collections::HashMap<usize, Option<Form>>,
    values: std::collections::HashMap<usize, Option<Vec<Op<VarId>>>>,
    visiting: std::collections::HashSet<(u8, usize)>,
    /// The exits on signed 64-bit comparisons, by register compared
    /// (built when first needed, [`Forms::exit_bound64`]).
    exits64: Option<std::collections::HashMap<RegId, Vec<usize>>>,
    /// While a store in a loop is examined with 64-bit counters in its
    /// values ([`Forms::injective_with_counters`]): the launch conditions
    /// of the counters read.
    counters64: Option<Vec<NoWrap<VarId>>>,
}

impl<'a> Forms<'a> {
    fn new(m: &'a Module<'a>, f: &'a Function<'a>, b: &'a Body<'a>) -> Forms<'a> {
        let mut count = vec![0u32; b.regs.len()];
        let mut single = vec![None; b.regs.len()];
        let mut writes = vec![Vec::new(); b.regs.len()];
        let mut region = vec![0; b.statements.len()];
        let mut last_label = 0;
        let mut regs = Vec::new();
        for (i, s) in b.statements.iter().enumerate() {
            if let Statement::Label(_) = s {
                last_label = i;
            }
            region[i] = last_label;
            let Statement::Instruction(inst) = s else { continue };
            regs.clear();
            b.defs(inst, &mut regs);
            for &r in &regs {
                if let Some(c) = count.get_mut(r as usize) {
                    // A guarded write leaves some lanes' old value.
                    *c += if inst.guard.is_some() { 2 } else { 1 };
                    single[r as usize] = Some(i);
                    writes[r as usize].push(i);
                }
            }
        }
        for (r, c) in count.iter().enumerate() {
            if *c != 1 {
                single[r] = None;
            }
        }
        let label_at = label_positions(b);
        Forms {
            f,
            b,
            m,
            single,
            writes,
            region,
            rep: repeated(b, &label_at),
            label_at,
            uniform: Default::default(),
            lane: Default::default(),
            forms: Default::default(),
            values: Default::default(),
            visiting: Default::default(),
            exits64: None,
            counters64: None,
        }
    }

    /// The write (statement index) whose value `r` holds when statement
    /// `at` reads it, if one does for certain.
    fn reach(&self, r: RegId, at: usize) -> Option<usize> {
        let w = self.writes.get(r as usize)?;
        let k = w.partition_point(|&p| p < at);
        let i = match k.checked_sub(1).map(|k| w[k]) {
            Some(i) if i >= *self.region.get(at)? => i,
            _ => self.single.get(r as usize).copied()??,
        };
        let Statement::Instruction(inst) = self.b.statements.get(i)? else { return None };
        (inst.guard.is_none() && matches!(self.b.args(inst).first(), Some(Operand::Reg(d)) if *d == r)).then_some(i)
    }

    /// The instruction at statement `i`.
    fn def(&self, i: usize) -> Option<&'a Instruction> {
        match self.b.statements.get(i)? {
            Statement::Instruction(inst) => Some(inst),
            _ => None,
        }
    }

    fn guard(&mut self, kind: u8, i: usize) -> bool {
        self.visiting.insert((kind, i))
    }

    /// The same value in every lane of a warp (read at statement `at`).
    fn uniform_operand(&mut self, op: &Operand, at: usize) -> bool {
        match *op {
            Operand::Imm(_) | Operand::F32(_) | Operand::F64(_) => true,
            Operand::Special(s, _) => matches!(
                s,
                SpecialReg::Ntid
                    | SpecialReg::Ctaid
                    | SpecialReg::Nctaid
                    | SpecialReg::Gridid
                    | SpecialReg::Envreg(_)
                    | SpecialReg::DynamicSmemSize
                    | SpecialReg::TotalSmemSize
            ),
            Operand::Reg(r) => self.reach(r, at).is_some_and(|i| self.uniform(i)),
            Operand::Global(s) | Operand::GlobalOffset(s, _) => self.m.variable(s).is_some(),
            _ => false,
        }
    }

    fn uniform(&mut self, i: usize) -> bool {
        if let Some(&u) = self.uniform.get(&i) {
            return u;
        }
        if !self.guard(0, i) {
            return false;
        }
        let u = match self.def(i) {
            Some(inst) => {
                use Opcode::*;
                let args = self.b.args(inst);
                match inst.op {
                    Ld => inst.space(self.b) == Some(StateSpace::Param) && self.f.kind == FunctionKind::Entry,
                    Mov | Add | Sub | Mul | Mad | Shl | Shr | And | Or | Xor | Not | Neg | Cvt | Cvta | Min | Max | Div | Rem => {
                        args[1..].iter().all(|a| self.uniform_operand(a, i))
                    }
                    _ => false,
                }
            }
            None => false,
        };
        self.uniform.insert(i, u);
        u
    }

    /// A 32-bit register equal to a warp-uniform value plus `%tid.x`.
    fn lane_index(&mut self, op: &Operand, at: usize) -> bool {
        let Operand::Reg(r) = *op else { return false };
        self.reach(r, at).is_some_and(|i| self.lane(i))
    }

    fn lane(&mut self, i: usize) -> bool {
        if let Some(&l) = self.lane.get(&i) {
            return l;
        }
        if !self.guard(1, i) {
            return false;
        }
        let l = match self.def(i) {
            Some(inst) if inst.ty(self.b).is_some_and(|t| t.bits() == 32) => {
                let args = self.b.args(inst);
                match (inst.op, args) {
                    (Opcode::Mov, [_, Operand::Special(SpecialReg::Tid, 0)]) => true,
                    (Opcode::Mov, [_, a @ Operand::Reg(_)]) => self.lane_index(a, i),
                    (Opcode::Add, [_, a, b]) if !inst.has(self.b, Flag::Sat) => {
                        (self.lane_index(a, i) && self.uniform_operand(b, i)) || (self.uniform_operand(a, i) && self.lane_index(b, i))
                    }
                    (Opcode::Mad, [_, a, b, c]) if inst.has(self.b, Flag::LoHalf) => {
                        self.uniform_operand(a, i) && self.uniform_operand(b, i) && self.lane_index(c, i)
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        self.lane.insert(i, l);
        l
    }

    fn operand_form(&mut self, op: &Operand, at: usize) -> Option<Form> {
        match *op {
            Operand::Reg(r) => self.form(self.reach(r, at)?),
            Operand::Imm(v) => Some(Form { base: Base::None, index: None, offset: v }),
            Operand::Global(s) if self.m.variable(s).is_some() => Some(Form { base: Base::Symbol(s), index: None, offset: 0 }),
            Operand::GlobalOffset(s, o) if self.m.variable(s).is_some() => Some(Form { base: Base::Symbol(s), index: None, offset: o }),
            _ => None,
        }
    }

    fn widened(&mut self, x: &Operand, at: usize, signed: bool, scale: i64) -> Option<Form> {
        let Operand::Reg(r) = *x else { return None };
        let def = self.reach(r, at)?;
        let lane = self.lane(def);
        let known = lane || self.value(def).is_some();
        (known && scale != 0 && scale.abs() <= MAX_SCALE).then_some(Form {
            base: Base::None,
            index: Some(Index { def, signed, scale, lane }),
            offset: 0,
        })
    }

    /// The computation of the 32-bit value written at statement `i` from
    /// launch values, 32-bit kernel parameters and constants through ring
    /// operations (`mov`, `add`, `sub`, `neg`, `mul.lo`, `mad.lo`, `shl`
    /// by a constant, `cvt` between 32-bit integer types), in postfix
    /// order.
    fn value(&mut self, i: usize) -> Option<Vec<Op<VarId>>> {
        if let Some(v) = self.values.get(&i) {
            return v.clone();
        }
        if !self.guard(3, i) {
            return None;
        }
        let mut out = Vec::new();
        let v = self.compute_value(i, &mut out).filter(|_| out.len() <= MAX_VALUE_OPS).map(|_| out);
        self.values.insert(i, v.clone());
        v
    }

    /// Pushes the computation of an operand read at statement `at`;
    /// immediates are taken as `imm` reads them (any representative of
    /// the register's value modulo its width will do for ring operations;
    /// the unsigned one for the operations that need it).
    fn value_operand_as(&mut self, op: &Operand, at: usize, imm: Imm, out: &mut Vec<Op<VarId>>) -> Option<()> {
        match *op {
            Operand::Imm(v) => out.push(Op::Const(match imm {
                Imm::S32 => i64::from(v as i32),
                Imm::U32 => i64::from(v as u32),
                Imm::B64 => v,
            })),
            Operand::Special(s, d) if d < 3 => out.push(Op::Special(
                match s {
                    SpecialReg::Tid => Launch::Tid,
                    SpecialReg::Ntid => Launch::Ntid,
                    SpecialReg::Ctaid => Launch::Ctaid,
                    SpecialReg::Nctaid => Launch::Nctaid,
                    _ => return None,
                },
                d,
            )),
            Operand::Reg(r) => match self.reach(r, at) {
                Some(i) => {
                    out.extend(self.value(i)?);
                    if let Some(n) = self.exit_bound64(r, at) {
                        out.extend(n);
                        out.push(Op::Min);
                    }
                }
                None => match self.diamond(r, at) {
                    Some(v) => out.extend(v),
                    None => match self.counter_bound(r, at) {
                        Some(v) => {
                            out.extend(v);
                            out.push(Op::Under);
                        }
                        None => out.extend(self.counter_value64(r, at)?),
                    },
                },
            },
            _ => return None,
        }
        (out.len() <= MAX_VALUE_OPS).then_some(())
    }

    /// A bound `b` (a computation of the launch alone) with `r < b`
    /// (unsigned, 32 bits) wherever statement `at` reads `r`: `at`'s
    /// straight-line code starts at a label, writes no `r` before `at`,
    /// and `r < b` holds on entering it ([`Forms::bound_at`]): a loop's
    /// entry check and back edge (`for (i = ...; i < n; i += step)`).
    fn counter_bound(&mut self, r: RegId, at: usize) -> Option<Vec<Op<VarId>>> {
        if crate::affine::register_bits(self.f, self.b, r)? != 32 {
            return None;
        }
        let head = *self.region.get(at)?;
        if self.writes.get(r as usize)?.iter().any(|&w| w > head && w < at) {
            return None;
        }
        let mut visiting = Vec::new();
        self.bound_at(r, head, &mut visiting)
    }

    /// A bound `b` with `r < b` whenever control enters the straight-line
    /// code starting at label statement `head`: every way in keeps it —
    /// a branch to the label or the fall into it from the code before —
    /// either because a comparison of `r`'s value there proves it (a
    /// branch taken only when it holds, an exit passed that leaves unless
    /// it holds, in the branch's or the fall's straight-line code after
    /// the last write of `r`; a copy checked before, [`Forms::copy_checked`])
    /// or because it held when entering the code the branch or fall
    /// comes from, which writes no `r` before it.
    fn bound_at(&mut self, r: RegId, head: usize, visiting: &mut Vec<usize>) -> Option<Vec<Op<VarId>>> {
        self.bound_on_entry(r, head, visiting)?
    }

    /// [`Forms::bound_at`], where code reached again while being examined
    /// (a cycle of code writing no `r`) adds no way in: `Some(None)` when
    /// every way in is such a cycle. Invariant (induction over the
    /// execution): if every way into the heads examined that is not such
    /// a cycle enters with `r < b`, every entry does, since a cycle
    /// enters with the `r` of an earlier entry; the ways in of every head
    /// examined must agree on `b`, which names a launch value.
    fn bound_on_entry(&mut self, r: RegId, head: usize, visiting: &mut Vec<usize>) -> Option<Option<Vec<Op<VarId>>>> {
        let b = self.b;
        let Some(Statement::Label(_)) = b.statements.get(head) else { return None };
        // The labels of the run ending at `head` (nothing between them):
        // a branch to any of them enters `head`'s code.
        let first = (0..=head).rev().take_while(|&k| matches!(b.statements.get(k), Some(Statement::Label(_)))).last()?;
        let labels: Vec<LabelId> = (first..=head)
            .filter_map(|k| match b.statements.get(k) {
                Some(Statement::Label(l)) => Some(*l),
                _ => None,
            })
            .collect();
        if visiting.contains(&head) {
            return Some(None);
        }
        if visiting.len() > 16 {
            return None;
        }
        visiting.push(head);
        let writes = self.writes.get(r as usize)?.clone();
        let clean = |from: usize, to: usize| !writes.iter().any(|&w| w >= from && w < to);
        let mut entries: Vec<(usize, Option<(RegId, bool)>)> = Vec::new();
        for (j, st) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = st else { continue };
            if inst.op == Opcode::Brx {
                return None;
            }
            if inst.op == Opcode::Bra && matches!(b.args(inst).first(), Some(Operand::Label(l)) if labels.contains(l)) {
                // Taken when the guard is true (false when negated).
                entries.push((j, inst.guard.map(|g| (g.reg, !g.negate))));
            }
        }
        let mut bound: Option<Vec<Op<VarId>>> = None;
        let mut agree = |v: Option<Vec<Op<VarId>>>| -> bool {
            let Some(v) = v else { return true };
            if v.contains(&Op::Under) {
                return false;
            }
            match &bound {
                Some(x) => *x == v,
                None => {
                    bound = Some(v);
                    true
                }
            }
        };
        // Falling into the label from the code before it: the way in from
        // its last instruction, unless that always leaves.
        let fall = (0..first).rev().find_map(|j| match b.statements.get(j) {
            Some(Statement::Instruction(inst)) => Some((j, inst)),
            _ => None,
        });
        // (No instruction before the label: the body's start falls in,
        // where nothing is known.)
        let (j, inst) = fall?;
        let mut ways: Vec<WayIn> = entries.into_iter().map(|(j, g)| (j, g, false)).collect();
        if !(inst.guard.is_none() && matches!(inst.op, Opcode::Bra | Opcode::Ret | Opcode::Exit)) {
            ways.push((j, None, true));
        }
        for (j, guard, falls) in ways {
            // The branch's own guard (a fall through a guarded branch
            // needs the guard false: not used).
            if let Some(v) = guard.and_then(|(g, truth)| self.implies(g, j, truth, r, j)) {
                if !agree(Some(v)) {
                    return None;
                }
                continue;
            }
            // An exit passed in the straight-line code before, after the
            // last write of `r` (the fall's own instruction included).
            let start = *self.region.get(j)?;
            let upto = if falls { j } else { j.checked_sub(1)? };
            let found = (start..=upto).rev().find_map(|k| match b.statements.get(k) {
                Some(Statement::Instruction(e)) if matches!(e.op, Opcode::Bra | Opcode::Ret | Opcode::Exit) && (k != j || falls) => {
                    let g = e.guard?;
                    if !clean(k, if falls { head } else { j }) {
                        return None;
                    }
                    self.implies(g.reg, k, g.negate, r, k)
                }
                _ => None,
            });
            let v = match found {
                Some(v) => Some(v),
                None if clean(start, if falls { head } else { j }) => self.bound_on_entry(r, start, visiting)?,
                None if falls => Some(self.copy_checked(r, start, head)?),
                None => return None,
            };
            if !agree(v) {
                return None;
            }
        }
        visiting.pop();
        Some(bound)
    }

    /// A bound `b` with `r < b` on falling into label statement `head`
    /// from the straight-line code starting at `start`, when the last
    /// write of `r` there is an unguarded copy `mov r, s` of a register
    /// checked before the copy: an edge of a guarded branch (taken or
    /// not) whose predicate then proves `s < b` ([`Forms::implies`])
    /// dominates the copy ([`Forms::edge_dominates`]), and `s` holds the
    /// same value at the branch and at the copy ([`Forms::same_value`]);
    /// `b` must name a value. (`for (i = blockIdx.y; i < n; ...)` inside
    /// an outer loop, entered where nvcc tested `blockIdx.y < n` once
    /// before the outer loop.) Invariant: every execution reaching the
    /// copy took that edge, where `s < b` held, and neither changed since;
    /// the code from the copy to `head` writes no `r` and has no label,
    /// so falling into `head` passed the copy.
    fn copy_checked(&mut self, r: RegId, start: usize, head: usize) -> Option<Vec<Op<VarId>>> {
        let w = *self.writes.get(r as usize)?.iter().rev().find(|&&w| w >= start && w < head)?;
        let copy = self.def(w)?;
        let [_, Operand::Reg(src)] = self.b.args(copy) else { return None };
        let src = *src;
        (copy.op == Opcode::Mov && copy.guard.is_none() && src != r).then_some(())?;
        let branches: Vec<(usize, RegId, bool)> = self
            .b
            .statements
            .iter()
            .enumerate()
            .filter_map(|(j, st)| match st {
                Statement::Instruction(i) if i.op == Opcode::Bra => i.guard.map(|g| (j, g.reg, g.negate)),
                _ => None,
            })
            .collect();
        for (j, g, negate) in branches {
            // Taken when the guard's value is `!negate`.
            for taken in [true, false] {
                let Some(v) = self.implies(g, j, taken != negate, src, j) else { continue };
                if names_value(&v) && self.same_value(src, j, w) && self.edge_dominates(j, taken, w) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// Whether every way from the body's start to statement `w` passes
    /// the edge of the branch at statement `j` that is taken (`taken`)
    /// or falls through: `w` is unreachable once that edge is removed.
    /// Ways are followed over statements (falling through, branch
    /// targets, guarded exits falling through); an indirect branch or a
    /// label not found makes every statement reachable.
    fn edge_dominates(&self, j: usize, taken: bool, w: usize) -> bool {
        !self.reachable(0, Some((j, taken)), w)
    }

    /// Whether statement `to` can run after control reaches statement
    /// `from`, without the edge `without` (a branch's statement, and
    /// whether its taken edge or its fall through is removed). Ways are
    /// followed over statements (falling through, branch targets, guarded
    /// exits falling through); an indirect branch or a label not found
    /// reaches everything.
    fn reachable(&self, from: usize, without: Option<(usize, bool)>, to: usize) -> bool {
        let b = self.b;
        let n = b.statements.len();
        let label_at = &self.label_at;
        let mut seen = vec![false; n];
        let mut stack = vec![from];
        while let Some(i) = stack.pop() {
            if i >= n || seen[i] {
                continue;
            }
            seen[i] = true;
            if i == to {
                return true;
            }
            let Statement::Instruction(inst) = &b.statements[i] else {
                stack.push(i + 1);
                continue;
            };
            match inst.op {
                Opcode::Brx => return true,
                Opcode::Bra => {
                    let Some(&t) = (match b.args(inst).first() {
                        Some(Operand::Label(l)) => label_at.get(l),
                        _ => None,
                    }) else {
                        return true;
                    };
                    if without != Some((i, true)) {
                        stack.push(t);
                    }
                    if inst.guard.is_some() && without != Some((i, false)) {
                        stack.push(i + 1);
                    }
                }
                Opcode::Ret | Opcode::Exit => {
                    if inst.guard.is_some() {
                        stack.push(i + 1);
                    }
                }
                _ => stack.push(i + 1),
            }
        }
        false
    }

    /// When predicate `p`, read at statement `at`, is `truth`: a bound `b`
    /// with `r < b` (unsigned) for the value `r` holds at statement
    /// `rat`, from a `setp` of 32-bit unsigned integers and `and.pred` /
    /// `or.pred` of such.
    fn implies(&mut self, p: RegId, at: usize, truth: bool, r: RegId, rat: usize) -> Option<Vec<Op<VarId>>> {
        let k = self.reach(p, at)?;
        let inst = self.def(k)?;
        let b = self.b;
        match (inst.op, b.args(inst)) {
            (Opcode::And | Opcode::Or, [_, Operand::Reg(x), Operand::Reg(y)]) if inst.ty(b) == Some(Type::Pred) => {
                // `and` true: both true; `or` false: both false.
                if (inst.op == Opcode::And) != truth {
                    return None;
                }
                let (x, y) = (*x, *y);
                match self.implies(x, k, truth, r, rat) {
                    Some(v) => Some(v),
                    None => self.implies(y, k, truth, r, rat),
                }
            }
            (Opcode::Setp, [_, x, y]) if inst.ty(b).is_some_and(|t| t.bits() == 64) => self.implies64(inst, k, truth, (x, y), r, rat),
            (Opcode::Setp, [_, x, y]) => {
                let ty = inst.ty(b)?;
                if ty.bits() != 32 || !ty.is_integer() || ty.is_signed() || ty.is_float() {
                    return None;
                }
                // The comparison that holds, as `x CMP y`.
                let cmp = match (inst.cmp(b)?, truth) {
                    (CmpOp::Lt | CmpOp::Lo, true) | (CmpOp::Ge | CmpOp::Hs, false) => CmpOp::Lt,
                    (CmpOp::Gt | CmpOp::Hi, true) | (CmpOp::Le | CmpOp::Ls, false) => CmpOp::Gt,
                    _ => return None,
                };
                // `r < other`: `r` on the left of `<` or the right of `>`.
                let (mine, other) = if cmp == CmpOp::Lt { (x, y) } else { (y, x) };
                if !matches!(*mine, Operand::Reg(m) if m == r && self.same_value(r, k, rat)) {
                    return None;
                }
                let mut v = Vec::new();
                self.value_operand_as(other, k, Imm::U32, &mut v)?;
                Some(v)
            }
            _ => None,
        }
    }

    /// [`Forms::implies`] for a `setp` of 64-bit integers (`inst`, at
    /// statement `k`, operands `xy`), signed or not: a bound `b` with `r <
    /// b` *as the comparison reads both* for the 64-bit register `r` (none
    /// for a 32-bit one). Only [`Forms::counter64`] uses it, whose launch
    /// condition keeps `r` and `b` in `[0, 2^32]`, where signed and
    /// unsigned comparisons of the registers are those of the values.
    fn implies64(
        &mut self,
        inst: &Instruction,
        k: usize,
        truth: bool,
        xy: (&Operand, &Operand),
        r: RegId,
        rat: usize,
    ) -> Option<Vec<Op<VarId>>> {
        let b = self.b;
        let ty = inst.ty(b)?;
        if !ty.is_integer() || ty.is_float() || crate::affine::register_bits(self.f, b, r)? != 64 {
            return None;
        }
        let cmp = match (inst.cmp(b)?, truth) {
            (CmpOp::Lt | CmpOp::Lo, true) | (CmpOp::Ge | CmpOp::Hs, false) => CmpOp::Lt,
            (CmpOp::Gt | CmpOp::Hi, true) | (CmpOp::Le | CmpOp::Ls, false) => CmpOp::Gt,
            _ => return None,
        };
        let (mine, other) = if cmp == CmpOp::Lt { xy } else { (xy.1, xy.0) };
        if !matches!(*mine, Operand::Reg(m) if m == r && self.same_value(r, k, rat)) {
            return None;
        }
        let mut v = Vec::new();
        self.value_operand_as(other, k, Imm::B64, &mut v)?;
        Some(v)
    }

    /// A 64-bit grid-stride loop's counter `r` read at `at` (`for (size_t
    /// i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x *
    /// gridDim.x)`, or `for (int64_t i = blockIdx.y; i < n; i +=
    /// gridDim.y)`): the parts of the thread's index its value determines,
    /// and the bound and step for [`Injective::nowrap`]. As
    /// [`Forms::counter`]: two writes, the start before the loop's label,
    /// the step after `at` in `at`'s straight-line code (the first write
    /// of `r` there); every way into that code passes a comparison `r <
    /// n` (64-bit, signed or not: [`Forms::implies64`]). The start is a
    /// global index `ctaid.d * ntid.d + tid.d` with step `ntid.d *
    /// nctaid.d`, or a block index `ctaid.d` with step `nctaid.d`, each
    /// leaf or product widened without sign. Invariant, under the launch
    /// condition `n + step <= 2^32` (`n` at least 1): the start lies in
    /// `[0, step)` (below `2^32`, so no 32-bit part of it wrapped); each
    /// step follows a read with `r < n`, so every value lies in `[0,
    /// 2^32)`, where the 64-bit comparison, signed or not, is that of the
    /// values; so `r` is `start + k * step`, in `[0, n)` where read, and
    /// determines the start and with it `ctaid.d` (and `tid.d`).
    fn counter64(&mut self, r: RegId, at: usize) -> Option<Counter64> {
        if self.reach(r, at).is_some() || crate::affine::register_bits(self.f, self.b, r)? != 64 {
            return None;
        }
        let head = *self.region.get(at)?;
        if self.writes.get(r as usize)?.iter().any(|&w| w > head && w < at) {
            return None;
        }
        let mut visiting = Vec::new();
        let bound = self.bound_at(r, head, &mut visiting)?;
        let all = self.writes.get(r as usize)?.clone();
        // Writes after which the read never runs cannot be the value it
        // reads, nor the value the step adds to (the step reaches the read).
        let writes: Vec<usize> = all.iter().copied().filter(|&w| self.reachable(w + 1, None, at)).collect();
        let [w0, w1] = writes[..] else { return None };
        if w0 >= head || w1 <= at {
            return None;
        }
        let h1 = *self.region.get(w1)?;
        if h1 != head {
            // The step in other straight-line code (after an inner loop):
            // entered with the same bound, no write of `r` before the step.
            if h1 <= at || all.iter().any(|&w| w > h1 && w < w1) {
                return None;
            }
            let mut visiting = Vec::new();
            (self.bound_at(r, h1, &mut visiting)? == bound).then_some(())?;
        }
        let (start, step) = (self.def(w0)?, self.def(w1)?);
        if start.guard.is_some()
            || step.guard.is_some()
            || step.op != Opcode::Add
            || step.has(self.b, Flag::Sat)
            || step.ty(self.b)?.bits() != 64
        {
            return None;
        }
        let start = unwidened(uncapped(&self.value(w0)?));
        let [_, x, y] = self.b.args(step) else { return None };
        let other = match (x, y) {
            (Operand::Reg(a), o) if *a == r => o,
            (o, Operand::Reg(a)) if *a == r => o,
            _ => return None,
        };
        let s = self.value64(other, w1)?;
        let plain = unwidened(&s);
        if let Some(d) = global_index(&start) {
            let grid = |a, b| vec![Op::Special(a, d), Op::Special(b, d), Op::Mul];
            (plain == grid(Launch::Ntid, Launch::Nctaid) || plain == grid(Launch::Nctaid, Launch::Ntid))
                .then_some((vec![(Launch::Ctaid, d), (Launch::Tid, d)], (bound, s)))
        } else if let [Op::Special(Launch::Ctaid, d)] = start[..] {
            (plain == [Op::Special(Launch::Nctaid, d)]).then_some((vec![(Launch::Ctaid, d)], (bound, s)))
        } else {
            None
        }
    }

    fn value_operand(&mut self, op: &Operand, at: usize, out: &mut Vec<Op<VarId>>) -> Option<()> {
        self.value_operand_as(op, at, Imm::S32, out)
    }

    /// The computation of a 64-bit register's value read at statement
    /// `at` (a 32-bit register's would hold it modulo 2^32 only).
    fn value64(&mut self, op: &Operand, at: usize) -> Option<Vec<Op<VarId>>> {
        let Operand::Reg(r) = *op else { return None };
        (crate::affine::register_bits(self.f, self.b, r)? == 64).then_some(())?;
        self.value(self.reach(r, at)?)
    }

    /// The statement writing the value register `r` holds at `at`, if it
    /// is an unguarded instruction with opcode `op`.
    fn def_of(&self, r: &Operand, at: usize, op: Opcode) -> Option<(usize, &'a Instruction)> {
        let Operand::Reg(r) = *r else { return None };
        let i = self.reach(r, at)?;
        let inst = self.def(i)?;
        (inst.op == op && inst.guard.is_none()).then_some((i, inst))
    }

    /// Whether register `r` holds the same value at statements `a1` and
    /// `a2`: one straight-line stretch with no write of `r` from the
    /// earlier read up to the later, or the same write reaching both when
    /// that write's value is a function of the launch alone (no
    /// [`Op::Under`]; a loop runs such a write to the same value each
    /// time).
    fn same_value(&mut self, r: RegId, a1: usize, a2: usize) -> bool {
        let (lo, hi) = (a1.min(a2), a1.max(a2));
        let Some(w) = self.writes.get(r as usize) else { return false };
        let straight = self.region.get(lo).is_some_and(|x| Some(x) == self.region.get(hi)) && !w.iter().any(|&p| p >= lo && p < hi);
        if straight {
            return true;
        }
        match (self.reach(r, a1), self.reach(r, a2)) {
            (Some(x), Some(y)) if x == y => self.value(x).is_some_and(|v| names_value(&v)),
            _ => false,
        }
    }

    /// Whether operand `o` read at `at` is the value register `x.0` holds
    /// at statement `x.1`.
    fn is_write(&mut self, o: &Operand, at: usize, x: (RegId, usize)) -> bool {
        matches!(*o, Operand::Reg(r) if r == x.0 && self.same_value(r, at, x.1))
    }

    /// `q`, read at `at`, as `(mul.hi.u32(x, m) + x) >> s` with `x` the
    /// write `xdef`: the multiplier and shift operands, each with the
    /// statement reading it.
    fn fast_quotient(&mut self, q: &Operand, at: usize, xdef: (RegId, usize)) -> Option<[(Operand, usize); 2]> {
        let u32_op =
            |inst: &Instruction| inst.ty(self.b).is_some_and(|t| t.bits() == 32 && t.is_integer() && !t.is_signed() && !t.is_float());
        let (si, shr) = self.def_of(q, at, Opcode::Shr)?;
        let [_, t, s] = self.b.args(shr) else { return None };
        if !u32_op(shr) {
            return None;
        }
        let (ai, add) = self.def_of(t, si, Opcode::Add)?;
        let [_, y, z] = self.b.args(add) else { return None };
        if add.ty(self.b)?.bits() != 32 || add.has(self.b, Flag::Sat) {
            return None;
        }
        let h = if self.is_write(z, ai, xdef) {
            y
        } else if self.is_write(y, ai, xdef) {
            z
        } else {
            return None;
        };
        let (hi, mulhi) = self.def_of(h, ai, Opcode::Mul)?;
        if !mulhi.has(self.b, Flag::HiHalf) || !u32_op(mulhi) {
            return None;
        }
        let [_, u, v] = self.b.args(mulhi) else { return None };
        let m = if self.is_write(u, hi, xdef) {
            v
        } else if self.is_write(v, hi, xdef) {
            u
        } else {
            return None;
        };
        Some([(*m, hi), (*s, si)])
    }

    /// `x - q * d` (statement `i`, operands `x` and `p`) with `q` a fast
    /// quotient of the same `x` ([`Op::Rem`]).
    fn remainder(&mut self, i: usize, x: &Operand, p: &Operand, out: &mut Vec<Op<VarId>>) -> Option<()> {
        let Operand::Reg(xr) = *x else { return None };
        let xdef = (xr, i);
        let (mi, mul) = self.def_of(p, i, Opcode::Mul)?;
        if !mul.has(self.b, Flag::LoHalf) || mul.ty(self.b)?.bits() != 32 {
            return None;
        }
        let [_, u, v] = self.b.args(mul) else { return None };
        let (quotient, d) = match (self.fast_quotient(u, mi, xdef), self.fast_quotient(v, mi, xdef)) {
            (Some(q), _) => (q, v),
            (None, Some(q)) => (q, u),
            _ => return None,
        };
        let [(m, at_m), (s, at_s)] = quotient;
        let mut ops = Vec::new();
        self.value_operand_as(x, i, Imm::U32, &mut ops)?;
        self.value_operand_as(&m, at_m, Imm::U32, &mut ops)?;
        self.value_operand_as(&s, at_s, Imm::U32, &mut ops)?;
        self.value_operand_as(d, mi, Imm::U32, &mut ops)?;
        ops.push(Op::Rem);
        out.extend(ops);
        Some(())
    }

    /// `x - (q & -2^k)` (statement `i`, operands `x` and `p`, 32 bits)
    /// with `q` the same value as `x`, or `x + y` (nvcc's `x % 2^k` of a
    /// signed `x`, `y` the bias of its sign): `(q mod 2^k) - y`
    /// ([`Op::Mod`], which needs `q` in `[0, 2^63)`). The registers agree
    /// modulo 2^32: `q & -2^k` is `q - (q mod 2^k)` there, as `2^k`
    /// divides 2^32.
    fn low_bits(&mut self, i: usize, x: &Operand, p: &Operand, out: &mut Vec<Op<VarId>>) -> Option<()> {
        let Operand::Reg(xr) = *x else { return None };
        let (ai, and) = self.def_of(p, i, Opcode::And)?;
        let [_, q, Operand::Imm(mask)] = self.b.args(and) else { return None };
        let k = (1..32).find(|k| (*mask as i32) == (-1i32 << k))?;
        (and.ty(self.b)?.bits() == 32).then_some(())?;
        let mut ops = Vec::new();
        if self.is_write(q, ai, (xr, i)) {
            self.value_operand_as(x, i, Imm::U32, &mut ops)?;
            ops.extend([Op::Const(1 << k), Op::Mod]);
        } else {
            let (si, add) = self.def_of(q, ai, Opcode::Add)?;
            let [_, u, v] = self.b.args(add) else { return None };
            (add.ty(self.b)?.bits() == 32 && !add.has(self.b, Flag::Sat)).then_some(())?;
            let y = if self.is_write(u, si, (xr, i)) {
                v
            } else if self.is_write(v, si, (xr, i)) {
                u
            } else {
                return None;
            };
            self.value_operand_as(q, ai, Imm::U32, &mut ops)?;
            ops.extend([Op::Const(1 << k), Op::Mod]);
            self.value_operand_as(y, si, Imm::U32, &mut ops)?;
            ops.push(Op::Sub);
        }
        out.extend(ops);
        Some(())
    }

    /// `w - m` (statement `i`, 64 bits) with `w` a 32-bit `x` widened with
    /// its sign (`cvt.s64.s32`), `m = q * 2^k` (`mul.wide.s32` by the
    /// constant) and `q = (x + y) >> k` (`shr.s32`, nvcc's signed `x /
    /// 2^k` with its sign's bias `y`), `x` the same value in both: the
    /// computation `((x + y) mod 2^k) - y`, as [`Forms::low_bits`] gives
    /// for the 32-bit form, with `x` and `x + y` checked in `[-2^31,
    /// 2^31)` (`Op::Wide`) and `x + y` at least 0 (`Op::Mod`). Invariant:
    /// where the launch check passes, `w` is `x`, `q` is `floor((x + y) /
    /// 2^k)` (an arithmetic shift of a value not negative), so `w - m =
    /// x - 2^k floor((x + y) / 2^k) = ((x + y) mod 2^k) - y` exactly (no
    /// 64-bit wrap: every value is below `2^31` in magnitude).
    fn low_bits64(&mut self, i: usize, w: &Operand, p: &Operand) -> Option<Vec<Op<VarId>>> {
        let (ci, cvt) = self.def_of(w, i, Opcode::Cvt)?;
        (cvt.types(self.b).take(2).eq([Type::S64, Type::S32]) && cvt.rounding(self.b).is_none()).then_some(())?;
        let [_, x @ Operand::Reg(xr)] = self.b.args(cvt) else { return None };
        let (mi, mul) = self.def_of(p, i, Opcode::Mul)?;
        (mul.has(self.b, Flag::Wide) && mul.ty(self.b) == Some(Type::S32)).then_some(())?;
        let [_, q, Operand::Imm(m)] = self.b.args(mul) else { return None };
        let k = (1..31).find(|k| *m == 1i64 << k)?;
        let (si, shr) = self.def_of(q, mi, Opcode::Shr)?;
        (shr.ty(self.b) == Some(Type::S32)).then_some(())?;
        let [_, a, Operand::Imm(k2)] = self.b.args(shr) else { return None };
        (*k2 == k).then_some(())?;
        let (ai, add) = self.def_of(a, si, Opcode::Add)?;
        (add.ty(self.b)?.bits() == 32 && !add.has(self.b, Flag::Sat)).then_some(())?;
        let [_, u, v] = self.b.args(add) else { return None };
        let y = if self.is_write(u, ai, (*xr, ci)) {
            v
        } else if self.is_write(v, ai, (*xr, ci)) {
            u
        } else {
            return None;
        };
        let (mut out, mut yv) = (Vec::new(), Vec::new());
        self.value_operand_as(x, ci, Imm::S32, &mut out)?;
        out.push(Op::Wide { signed: true });
        self.value_operand_as(y, ai, Imm::S32, &mut yv)?;
        out.extend(yv.iter().copied());
        out.extend([Op::Add, Op::Wide { signed: true }, Op::Const(1 << k), Op::Mod]);
        out.extend(yv);
        out.push(Op::Sub);
        (out.len() <= MAX_VALUE_OPS).then_some(out)
    }

    /// `x - m` (statement `i`, 64 bits) with `m = q * d` (`mul.lo`,
    /// either order) and `q` the value `x / d` ([`Op::Div`]) of the same
    /// `x` and `d`: `x mod d` ([`Op::Mod`]). Equal computations are equal
    /// values (none has [`Op::Under`], which would bound a value rather
    /// than name it).
    fn remainder64(&mut self, i: usize, x: &Operand, p: &Operand, out: &mut Vec<Op<VarId>>) -> Option<()> {
        let (mi, mul) = self.def_of(p, i, Opcode::Mul)?;
        if !mul.has(self.b, Flag::LoHalf) || mul.ty(self.b)?.bits() != 64 {
            return None;
        }
        let [_, u, v] = self.b.args(mul) else { return None };
        let mut xs = Vec::new();
        self.value_operand_as(x, i, Imm::B64, &mut xs)?;
        for (q, d) in [(u, v), (v, u)] {
            let (mut qs, mut ds) = (Vec::new(), Vec::new());
            if self.value_operand_as(q, mi, Imm::B64, &mut qs).is_none() || self.value_operand_as(d, mi, Imm::B64, &mut ds).is_none() {
                continue;
            }
            let quotient: Vec<Op<VarId>> = xs.iter().chain(&ds).copied().chain([Op::Div]).collect();
            if qs == quotient && names_value(&qs) {
                out.extend(xs);
                out.extend(ds);
                out.push(Op::Mod);
                return (out.len() <= MAX_VALUE_OPS).then_some(());
            }
        }
        None
    }

    /// The value of 64-bit register `r` read at statement `at` where two
    /// writes may reach it: the two sides of a 64-bit division's 32-bit
    /// fast path, as nvcc emits `x / d` and `x % d` for 64-bit operands
    /// (see "Divisions with a 32-bit fast path" in the module's notes):
    ///
    /// ```text
    ///     or.b64 t, x, d; and.b64 u, t, -4294967296; setp.eq.s64 p, u, 0;
    ///     @p bra L32;
    ///     div.s64 r, x, d;          (or r = x - (x / d) * d)
    ///     bra.uni JOIN;
    /// L32:
    ///     cvt.u32.u64 a, d; cvt.u32.u64 b, x; div.u32 c, b, a;
    ///     cvt.u64.u32 r, c;         (or r = cvt(b - c * a))
    /// JOIN:  ... reads r
    /// ```
    ///
    /// On the fast path `x` and `d` lie in `[0, 2^32)`, so the 32-bit
    /// quotient and remainder are the 64-bit ones, and `r` holds the
    /// 64-bit side's value ([`Op::Div`], [`Op::Mod`]) whichever way came.
    fn diamond(&mut self, r: RegId, at: usize) -> Option<Vec<Op<VarId>>> {
        let b = self.b;
        if crate::affine::register_bits(self.f, b, r)? != 64 {
            return None;
        }
        let [w1, w2] = self.writes.get(r as usize)?[..] else { return None };
        let unguarded_only = |i: usize| {
            matches!(b.statements.get(i), Some(Statement::Instruction(inst))
                if inst.guard.is_none() && matches!(b.args(inst).first(), Some(Operand::Reg(d)) if *d == r))
        };
        if !unguarded_only(w1) || !unguarded_only(w2) {
            return None;
        }
        let widens = |i: usize| {
            matches!(b.statements.get(i), Some(Statement::Instruction(inst))
            if inst.op == Opcode::Cvt && inst.rounding(b).is_none() && {
                let mut t = inst.types(b);
                (t.next(), t.next()) == (Some(Type::U64), Some(Type::U32))
            })
        };
        let (w64, w32) = match (widens(w1), widens(w2)) {
            (false, true) => (w1, w2),
            (true, false) => (w2, w1),
            _ => return None,
        };
        let is_branch = |inst: &Instruction| matches!(inst.op, Opcode::Bra | Opcode::Brx | Opcode::Ret | Opcode::Exit);
        let branches_in = |from: usize, to: usize| {
            (from..to).any(|k| matches!(b.statements.get(k), Some(Statement::Instruction(inst)) if is_branch(inst)))
        };
        let label_of = |head: usize| match b.statements.get(head) {
            Some(Statement::Label(l)) => Some(*l),
            _ => None,
        };
        // Every branch to a label (statements), failing on `brx`.
        let branches_to = |head: usize| -> Option<Vec<usize>> {
            let label = label_of(head)?;
            let mut out = Vec::new();
            for (j, st) in b.statements.iter().enumerate() {
                let Statement::Instruction(inst) = st else { continue };
                if inst.op == Opcode::Brx {
                    return None;
                }
                if inst.op == Opcode::Bra && matches!(b.args(inst).first(), Some(Operand::Label(l)) if *l == label) {
                    out.push(j);
                }
            }
            Some(out)
        };
        // The join: the label after the fast path. The read lies in code
        // only the join enters: no branch from outside the statements
        // from the join to the read targets a label among them but the
        // join's (so every way to the read passes the join, and so one of
        // the two writes, the only ones of `r`).
        let join = (w32..at).find(|&k| matches!(b.statements.get(k), Some(Statement::Label(_))))?;
        for (j, st) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = st else { continue };
            if inst.op == Opcode::Brx {
                return None;
            }
            if inst.op != Opcode::Bra || (join..=at).contains(&j) {
                continue;
            }
            let Some(Operand::Label(l)) = b.args(inst).first() else { return None };
            let into = (join + 1..=at).any(|k| matches!(b.statements.get(k), Some(Statement::Label(m)) if m == l));
            if into {
                return None;
            }
        }
        // The fast path: straight-line code from its label to the join's,
        // with no branch (so whoever runs its end ran `w32`).
        let fast = *self.region.get(w32)?;
        if fast == 0 || *self.region.get(join.checked_sub(1)?)? != fast || branches_in(fast, join) {
            return None;
        }
        // The join: reached only by falling from the fast path and by one
        // unguarded branch right after `w64` in `w64`'s straight-line code.
        let [j64] = branches_to(join)?[..] else { return None };
        let slow = *self.region.get(w64)?;
        let bra64 = match b.statements.get(j64) {
            Some(Statement::Instruction(inst)) => inst.guard.is_none() && inst.op == Opcode::Bra,
            _ => false,
        };
        if !bra64 || j64 <= w64 || *self.region.get(j64)? != slow || branches_in(w64, j64) {
            return None;
        }
        // The fast path is entered only by a branch `@p bra` before `w64`
        // in the same straight-line code (the code before its label ends
        // in the unguarded branch to the join).
        let [jp] = branches_to(fast)?[..] else { return None };
        if fast != j64 + 1 || jp >= w64 || *self.region.get(jp)? != slow || branches_in(jp + 1, w64) {
            return None;
        }
        let guard = match b.statements.get(jp) {
            Some(Statement::Instruction(inst)) => inst.guard?,
            _ => return None,
        };
        if guard.negate {
            return None;
        }
        // `p = ((x | d) & 0xffffffff00000000) == 0`.
        let (x, d) = self.fits_u32_test(guard.reg, jp)?;
        if !self.same_division(w64, w32, x, d) && !self.same_division(w64, w32, d, x) {
            return None;
        }
        let v = self.value(w64)?;
        names_value(&v).then_some(v)
    }

    /// Whether statement `w64` writes the 64-bit quotient `x / d` of the
    /// values registers `x` and `d` hold at the test (`(register,
    /// statement)`), and `w32` its 32-bit fast path, widened
    /// (`cvt.u64.u32` of `div.u32` of the two truncated); or both the
    /// remainder `x - q * d` of that quotient ([`Forms::diamond`]).
    fn same_division(&mut self, w64: usize, w32: usize, x: (RegId, usize), d: (RegId, usize)) -> bool {
        let b = self.b;
        let (Some(side64), Some(side32)) = (self.def(w64), self.def(w32)) else { return false };
        let [_, c32] = b.args(side32) else { return false };
        let same = |f: &mut Self, o: &Operand, at: usize, want: (RegId, usize)| f.is_write(o, at, want);
        let quotient64 = |f: &mut Self, inst: &Instruction, at: usize| -> bool {
            let ty = inst.ty(b);
            inst.op == Opcode::Div
                && matches!(ty, Some(Type::S64 | Type::U64))
                && matches!(b.args(inst), [_, xo, dop] if same(f, xo, at, x) && same(f, dop, at, d))
        };
        // `cvt.u32.u64` of the value `v` holds at the test.
        let narrow = |f: &mut Self, o: &Operand, at: usize, v: (RegId, usize)| -> bool {
            let Some((ci, cvt)) = f.def_of(o, at, Opcode::Cvt) else { return false };
            let mut t = cvt.types(b);
            (t.next(), t.next()) == (Some(Type::U32), Some(Type::U64))
                && cvt.rounding(b).is_none()
                && matches!(b.args(cvt), [_, src] if same(f, src, ci, v))
        };
        // `div.u32 c, narrow(x), narrow(d)`.
        let quotient32 = |f: &mut Self, o: &Operand, at: usize| -> bool {
            let Some((qi, q)) = f.def_of(o, at, Opcode::Div) else { return false };
            q.ty(b) == Some(Type::U32) && matches!(b.args(q), [_, xo, dop] if narrow(f, xo, qi, x) && narrow(f, dop, qi, d))
        };
        let ok = if quotient64(self, side64, w64) {
            quotient32(self, c32, w32)
        } else {
            // The remainders: `x - q * d` on both sides.
            let rem64 = side64.op == Opcode::Sub
                && side64.ty(b).is_some_and(|t| t.bits() == 64 && t.is_integer())
                && match b.args(side64) {
                    [_, xo, m] if same(self, xo, w64, x) => match self.def_of(m, w64, Opcode::Mul) {
                        Some((mi, mul)) if mul.has(b, Flag::LoHalf) && mul.ty(b).is_some_and(|t| t.bits() == 64) => {
                            let [_, u, v] = b.args(mul) else { return false };
                            let quotient =
                                |f: &mut Self, q: &Operand| f.def_of(q, mi, Opcode::Div).is_some_and(|(qi, qd)| quotient64(f, qd, qi));
                            (quotient(self, u) && same(self, v, mi, d)) || (quotient(self, v) && same(self, u, mi, d))
                        }
                        _ => false,
                    },
                    _ => false,
                };
            let rem32 = match self.def_of(c32, w32, Opcode::Sub) {
                Some((si, sub)) if sub.ty(b).is_some_and(|t| t.bits() == 32 && t.is_integer()) => match b.args(sub) {
                    [_, xo, m] if narrow(self, xo, si, x) => match self.def_of(m, si, Opcode::Mul) {
                        Some((mi, mul)) if mul.has(b, Flag::LoHalf) && mul.ty(b).is_some_and(|t| t.bits() == 32) => {
                            let [_, u, v] = b.args(mul) else { return false };
                            (quotient32(self, u, mi) && narrow(self, v, mi, d)) || (quotient32(self, v, mi) && narrow(self, u, mi, d))
                        }
                        _ => false,
                    },
                    _ => false,
                },
                _ => false,
            };
            rem64 && rem32
        };
        ok
    }

    /// A bound `n` with `r <= n` for 64-bit register `r` where statement
    /// `at` reads it: the nearest exit before `at` (a guarded `bra`,
    /// `ret` or `exit`) whose predicate is a signed 64-bit comparison of
    /// `r`'s value there with a value [`Forms::value`] follows, not taken
    /// only when `r < n` or `r <= n` holds, and which every way to `at`
    /// passes: no branch from outside the statements from the exit to
    /// `at` targets a label among them, nor does the exit itself (so the
    /// last run of the exit before `at` was not taken).
    fn exit_bound64(&mut self, r: RegId, at: usize) -> Option<Vec<Op<VarId>>> {
        if crate::affine::register_bits(self.f, self.b, r)? != 64 {
            return None;
        }
        let b = self.b;
        if self.exits64.is_none() {
            let mut map: std::collections::HashMap<RegId, Vec<usize>> = Default::default();
            for (j, st) in b.statements.iter().enumerate() {
                let Statement::Instruction(inst) = st else { continue };
                let Some(g) = inst.guard else { continue };
                if !matches!(inst.op, Opcode::Bra | Opcode::Ret | Opcode::Exit) {
                    continue;
                }
                let Some((_, setp)) = self.def_of(&Operand::Reg(g.reg), j, Opcode::Setp) else { continue };
                if setp.ty(b) != Some(Type::S64) {
                    continue;
                }
                for o in b.args(setp).iter().skip(1) {
                    if let Operand::Reg(x) = *o {
                        map.entry(x).or_default().push(j);
                    }
                }
            }
            self.exits64 = Some(map);
        }
        let candidates = self.exits64.as_ref()?.get(&r)?.clone();
        let j = candidates.into_iter().filter(|&j| j < at).max()?;
        let Statement::Instruction(exit) = b.statements.get(j)? else { return None };
        let guard = exit.guard?;
        let (k, setp) = self.def_of(&Operand::Reg(guard.reg), j, Opcode::Setp)?;
        let [_, x, y] = b.args(setp) else { return None };
        let is_r = |f: &mut Self, o: &Operand| matches!(*o, Operand::Reg(q) if q == r && f.same_value(r, k, at) && f.same_value(r, k, j));
        let cmp = setp.cmp(b)?;
        // The comparison as `r CMP other`.
        let (holds, other) = if is_r(self, x) {
            (cmp, y)
        } else if is_r(self, y) {
            let flipped = match cmp {
                CmpOp::Lt => CmpOp::Gt,
                CmpOp::Le => CmpOp::Ge,
                CmpOp::Gt => CmpOp::Lt,
                CmpOp::Ge => CmpOp::Le,
                _ => return None,
            };
            (flipped, x)
        } else {
            return None;
        };
        // Not taken: the predicate is `negate`; what then holds of `r`.
        let kept = match (holds, guard.negate) {
            (c @ (CmpOp::Lt | CmpOp::Le), true) => c,
            (CmpOp::Ge, false) => CmpOp::Lt,
            (CmpOp::Gt, false) => CmpOp::Le,
            _ => return None,
        };
        // Every way to `at` passes the exit, not taken.
        let label_at = |l: &LabelId| (j + 1..=at).any(|q| matches!(b.statements.get(q), Some(Statement::Label(m)) if m == l));
        for (q, st) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = st else { continue };
            if inst.op == Opcode::Brx {
                return None;
            }
            if inst.op != Opcode::Bra || ((j + 1..=at).contains(&q)) {
                continue;
            }
            let Some(Operand::Label(l)) = b.args(inst).first() else { return None };
            if label_at(l) {
                return None;
            }
        }
        let mut n = Vec::new();
        self.value_operand_as(other, k, Imm::B64, &mut n)?;
        if !names_value(&n) {
            return None;
        }
        if kept == CmpOp::Lt {
            n.extend([Op::Const(1), Op::Sub]);
        }
        (n.len() <= MAX_VALUE_OPS).then_some(n)
    }

    /// For predicate `p` read at statement `at`: the registers (with the
    /// statement reading them) `x` and `d` when `p` is `((x | d) &
    /// 0xffffffff00000000) == 0` (both in `[0, 2^32)` as unsigned 64-bit
    /// values).
    fn fits_u32_test(&mut self, p: RegId, at: usize) -> Option<((RegId, usize), (RegId, usize))> {
        let b = self.b;
        let (si, setp) = self.def_of(&Operand::Reg(p), at, Opcode::Setp)?;
        if setp.cmp(b)? != CmpOp::Eq || setp.ty(b)?.bits() != 64 || !setp.ty(b)?.is_integer() {
            return None;
        }
        let u = match b.args(setp) {
            [_, u, Operand::Imm(0)] | [_, Operand::Imm(0), u] => *u,
            _ => return None,
        };
        let (ai, and) = self.def_of(&u, si, Opcode::And)?;
        if and.ty(b)?.bits() != 64 {
            return None;
        }
        let t = match b.args(and) {
            [_, t, Operand::Imm(-4294967296)] | [_, Operand::Imm(-4294967296), t] => *t,
            _ => return None,
        };
        let (oi, or) = self.def_of(&t, ai, Opcode::Or)?;
        if or.ty(b)?.bits() != 64 {
            return None;
        }
        match b.args(or) {
            [_, Operand::Reg(x), Operand::Reg(d)] => Some(((*x, oi), (*d, oi))),
            _ => None,
        }
    }

    fn compute_value(&mut self, i: usize, out: &mut Vec<Op<VarId>>) -> Option<()> {
        let inst = self.def(i)?;
        let b = self.b;
        let args = b.args(inst);
        let Some(&Operand::Reg(r)) = args.first() else { return None };
        let bits = crate::affine::register_bits(self.f, self.b, r)?;
        let ty = inst.ty(b)?;
        if !ty.is_integer() || ty.is_float() || inst.has(b, Flag::Sat) {
            return None;
        }
        // The operation's width: the register's, or half of it for `.wide`.
        let wide = inst.has(b, Flag::Wide);
        if inst.op != Opcode::Cvt && ty.bits() != if wide { bits / 2 } else { bits } {
            return None;
        }
        let imm = if bits == 64 { Imm::B64 } else { Imm::S32 };
        let unsigned = !ty.is_signed();
        match (inst.op, args) {
            (Opcode::Ld, [_, Operand::AddrVar(v, field)])
                if inst.space(b) == Some(StateSpace::Param)
                    && self.f.kind == FunctionKind::Entry
                    && self.f.params.contains(v)
                    && bits == 32 =>
            {
                let signed = ty.is_signed();
                let field = u32::try_from(*field).ok()?;
                let size = self.f.vars.get(*v as usize)?.size()?;
                (field % 4 == 0 && u64::from(field) + 4 <= size).then_some(())?;
                out.push(if field == 0 { Op::Param { at: *v, signed } } else { Op::Field { at: *v, field, signed } });
            }
            (Opcode::Mov, [_, a]) => self.value_operand_as(a, i, imm, out)?,
            (Opcode::Cvt, [_, a]) if inst.rounding(b).is_none() => {
                let mut types = inst.types(b);
                let (dst, src) = (types.next()?, types.next()?);
                if !dst.is_integer() || !src.is_integer() || dst.bits() != bits {
                    return None;
                }
                match (dst.bits(), src.bits()) {
                    (32, 32) => self.value_operand(a, i, out)?,
                    // Truncation keeps the value modulo 2^32.
                    (32, 64) => self.value_operand_as(a, i, Imm::B64, out)?,
                    (64, 32) if dst.is_signed() == src.is_signed() => {
                        self.value_operand(a, i, out)?;
                        out.push(Op::Wide { signed: src.is_signed() });
                    }
                    _ => return None,
                }
            }
            (Opcode::Neg, [_, a]) => {
                out.push(Op::Const(0));
                self.value_operand_as(a, i, imm, out)?;
                out.push(Op::Sub);
            }
            (Opcode::Sub, [_, x, p]) if bits == 32 && self.remainder(i, x, p, out).is_some() => {}
            (Opcode::Sub, [_, x, p]) if bits == 32 && self.low_bits(i, x, p, out).is_some() => {}
            (Opcode::Sub, [_, x, p]) if bits == 64 && self.remainder64(i, x, p, out).is_some() => {}
            (Opcode::Add | Opcode::Sub, [_, a, c]) => {
                self.value_operand_as(a, i, imm, out)?;
                self.value_operand_as(c, i, imm, out)?;
                out.push(if inst.op == Opcode::Add { Op::Add } else { Op::Sub });
            }
            (Opcode::Mul, [_, a, c]) if inst.has(b, Flag::LoHalf) => {
                self.value_operand_as(a, i, imm, out)?;
                self.value_operand_as(c, i, imm, out)?;
                out.push(Op::Mul);
            }
            (Opcode::Mul, [_, a, c]) if wide && bits == 64 => {
                let (w, k) = if unsigned { (Imm::U32, false) } else { (Imm::S32, true) };
                self.value_operand_as(a, i, w, out)?;
                out.push(Op::Wide { signed: k });
                self.value_operand_as(c, i, w, out)?;
                out.push(Op::Wide { signed: k });
                out.push(Op::Mul);
            }
            (Opcode::Mul, [_, a, c]) if inst.has(b, Flag::HiHalf) && bits == 32 && unsigned => {
                self.value_operand_as(a, i, Imm::U32, out)?;
                self.value_operand_as(c, i, Imm::U32, out)?;
                out.push(Op::MulHi);
            }
            (Opcode::Mad, [_, a, c, d]) if inst.has(b, Flag::LoHalf) => {
                self.value_operand_as(a, i, imm, out)?;
                self.value_operand_as(c, i, imm, out)?;
                out.push(Op::Mul);
                self.value_operand_as(d, i, imm, out)?;
                out.push(Op::Add);
            }
            (Opcode::Mad, [_, a, c, d]) if wide && bits == 64 => {
                let (w, k) = if unsigned { (Imm::U32, false) } else { (Imm::S32, true) };
                self.value_operand_as(a, i, w, out)?;
                out.push(Op::Wide { signed: k });
                self.value_operand_as(c, i, w, out)?;
                out.push(Op::Wide { signed: k });
                out.push(Op::Mul);
                self.value_operand_as(d, i, Imm::B64, out)?;
                out.push(Op::Add);
            }
            (Opcode::Shl, [_, a, Operand::Imm(k)]) if (0..i64::from(bits)).contains(k) => {
                self.value_operand_as(a, i, imm, out)?;
                out.push(Op::Const(if bits == 32 { i64::from((1u32 << *k) as i32) } else { (1u64 << *k) as i64 }));
                out.push(Op::Mul);
            }
            // Logical shift right (`.u32`, `.b32`; not the arithmetic `.s32`).
            (Opcode::Shr, [_, a, k]) if bits == 32 && unsigned => {
                self.value_operand_as(a, i, Imm::U32, out)?;
                self.value_operand_as(k, i, Imm::U32, out)?;
                out.push(Op::Shr);
            }
            // Arithmetic shift right by a constant: a logical one of a value
            // in `[0, 2^31)` (the widening with sign admits `[-2^31, 2^31)`,
            // the shift `[0, 2^32)`): nvcc's signed `x / 2^k` of a value
            // known not negative (its sign's bias is then 0).
            (Opcode::Shr, [_, a, Operand::Imm(k)]) if bits == 32 && ty.is_signed() && (0..32).contains(k) => {
                self.value_operand_as(a, i, Imm::S32, out)?;
                out.extend([Op::Wide { signed: true }, Op::Const(*k), Op::Shr]);
            }
            // A 64-bit shift right by a constant `k`: `x / 2^k` as
            // [`Op::Div`], whose launch check keeps `x` in `[0, 2^63)`,
            // where the register is the value and both shifts floor.
            // nvcc's signed `x / 2^k` (`shr.s64 q, x + ((x >> 63) >>> (64
            // - k)), k`, `Forms::sign_biased`) is the same for such `x`:
            // its bias is 0.
            (Opcode::Shr, [_, a, Operand::Imm(k)]) if bits == 64 && (0..63).contains(k) => {
                let x = if ty.is_signed() { self.sign_biased(a, i, *k).unwrap_or(*a) } else { *a };
                self.value_operand_as(&x, i, Imm::B64, out)?;
                out.extend([Op::Const(1 << *k), Op::Div]);
            }
            // `x & -2^k`: `2^k * floor(x / 2^k)` of `x` in `[0, 2^32)`.
            (Opcode::And, [_, a, Operand::Imm(mask)]) if bits == 32 && (1..32).any(|k| (*mask as i32) == (-1i32 << k)) => {
                let k = (!(*mask as i32)).count_ones();
                self.value_operand_as(a, i, Imm::U32, out)?;
                out.extend([Op::Const(i64::from(k)), Op::Shr, Op::Const(1 << k), Op::Mul]);
            }
            // A 64-bit parameter: its low word unsigned plus its high word
            // (signed) times 2^32, the signed value of the register.
            (Opcode::Ld, [_, Operand::AddrVar(v, 0)])
                if inst.space(b) == Some(StateSpace::Param)
                    && self.f.kind == FunctionKind::Entry
                    && self.f.params.contains(v)
                    && bits == 64
                    && self.f.vars.get(*v as usize)?.size()? == 8 =>
            {
                out.extend([
                    Op::Param { at: *v, signed: false },
                    Op::Field { at: *v, field: 4, signed: true },
                    Op::Const(1 << 32),
                    Op::Mul,
                    Op::Add,
                ]);
            }
            (Opcode::Div | Opcode::Rem, [_, x, d]) if bits == 64 => {
                self.value_operand_as(x, i, Imm::B64, out)?;
                self.value_operand_as(d, i, Imm::B64, out)?;
                out.push(if inst.op == Opcode::Div { Op::Div } else { Op::Mod });
            }
            (Opcode::Selp, [_, x, y, _]) if bits == 64 || bits == 32 => {
                self.value_operand_as(x, i, imm, out)?;
                self.value_operand_as(y, i, imm, out)?;
                out.push(Op::Either);
            }
            _ => return None,
        }
        (out.len() <= MAX_VALUE_OPS).then_some(())
    }

    /// For `s`, read at statement `at` by `shr.s64 q, s, k`: the `x` of
    /// nvcc's signed division by `2^k`, `s = x + ((x >> 63) >>> (64 -
    /// k))` (`shr.s64` by 63, then `shr.u64`), both reads of `x` the same
    /// write ([`Forms::same_value`]). For `x` in `[0, 2^63)` the bias is
    /// 0, so `s` is `x` (the caller's [`Op::Div`] checks the range).
    fn sign_biased(&mut self, s: &Operand, at: usize, k: i64) -> Option<Operand> {
        let (ai, add) = self.def_of(s, at, Opcode::Add)?;
        (add.ty(self.b)?.bits() == 64).then_some(())?;
        let [_, y, z] = self.b.args(add) else { return None };
        for (x, t) in [(y, z), (z, y)] {
            let Operand::Reg(xr) = *x else { continue };
            let Some((ti, tu)) = self.def_of(t, ai, Opcode::Shr) else { continue };
            let [_, u, Operand::Imm(sh)] = self.b.args(tu) else { continue };
            if tu.ty(self.b) != Some(Type::U64) || *sh != 64 - k {
                continue;
            }
            let Some((ui, su)) = self.def_of(u, ti, Opcode::Shr) else { continue };
            let [_, Operand::Reg(xr2), Operand::Imm(63)] = self.b.args(su) else { continue };
            if su.ty(self.b) == Some(Type::S64) && *xr2 == xr && self.same_value(xr, ui, ai) {
                return Some(*x);
            }
        }
        None
    }

    fn sum(a: Form, b: Form) -> Option<Form> {
        let base = match (a.base, b.base) {
            (x, Base::None) | (Base::None, x) => x,
            _ => return None,
        };
        let index = match (a.index, b.index) {
            (x, None) | (None, x) => x,
            _ => return None,
        };
        Some(Form { base, index, offset: a.offset.checked_add(b.offset)? })
    }

    /// The form of the 64-bit value written at statement `i`.
    fn form(&mut self, i: usize) -> Option<Form> {
        if let Some(f) = self.forms.get(&i) {
            return *f;
        }
        if !self.guard(2, i) {
            return None;
        }
        let form = self.compute_form(i);
        self.forms.insert(i, form);
        form
    }

    fn compute_form(&mut self, i: usize) -> Option<Form> {
        let inst = self.def(i)?;
        let b = self.b;
        let args = b.args(inst);
        let ty = inst.ty(b)?;
        let signed_src = |t: Type| t.is_signed();
        match (inst.op, args) {
            (Opcode::Ld, [_, Operand::AddrVar(v, 0)])
                if inst.space(b) == Some(StateSpace::Param)
                    && self.f.kind == FunctionKind::Entry
                    && self.f.params.contains(v)
                    && ty.bits() == 64 =>
            {
                Some(Form { base: Base::Param(*v), index: None, offset: 0 })
            }
            (Opcode::Mov, [_, a]) if ty.bits() == 64 => self.operand_form(a, i),
            // Generic and global addresses are the same on the host.
            (Opcode::Cvta, [_, a]) if inst.spaces(b).all(|s| s == StateSpace::Global) && ty.bits() == 64 => self.operand_form(a, i),
            (Opcode::Add, [_, a, c]) if ty.bits() == 64 => Forms::sum(self.operand_form(a, i)?, self.operand_form(c, i)?),
            (Opcode::Sub, [_, a, Operand::Imm(v)]) if ty.bits() == 64 => {
                let f = self.operand_form(a, i)?;
                Some(Form { offset: f.offset.checked_sub(*v)?, ..f })
            }
            (Opcode::Mul, [_, x, Operand::Imm(s)]) if inst.has(b, Flag::Wide) && ty.bits() == 32 => self.widened(x, i, signed_src(ty), *s),
            (Opcode::Mad, [_, x, Operand::Imm(s), c]) if inst.has(b, Flag::Wide) && ty.bits() == 32 => {
                Forms::sum(self.widened(x, i, signed_src(ty), *s)?, self.operand_form(c, i)?)
            }
            (Opcode::Cvt, [_, x]) if ty.bits() == 64 => {
                let src = inst.types(b).nth(1)?;
                (src.bits() == 32 && src.is_signed() == ty.is_signed()).then_some(())?;
                self.widened(x, i, src.is_signed(), 1)
            }
            (Opcode::Shl, [_, a, Operand::Imm(k)]) if ty.bits() == 64 && (0..=20).contains(k) => {
                let f = self.operand_form(a, i)?;
                let ix = f.index?;
                (f.base == Base::None && f.offset == 0).then_some(())?;
                let scale = ix.scale.checked_shl(*k as u32)?;
                (scale.abs() <= MAX_SCALE).then_some(Form { index: Some(Index { scale, ..ix }), ..f })
            }
            (Opcode::Mul, [_, a, Operand::Imm(k)]) if ty.bits() == 64 && inst.has(b, Flag::LoHalf) => {
                let f = self.operand_form(a, i)?;
                let ix = f.index?;
                (f.base == Base::None && f.offset == 0).then_some(())?;
                let scale = ix.scale.checked_mul(*k)?;
                (scale != 0 && scale.abs() <= MAX_SCALE).then_some(Form { index: Some(Index { scale, ..ix }), ..f })
            }
            _ => None,
        }
    }

    /// The bytes an access (at statement `at`) of `bytes` bytes at `form`
    /// touches over a launch, when its index's computation is known.
    fn span(&mut self, form: Form, bytes: u64, at: usize) -> Option<Span<Base, VarId>> {
        let index = match form.index {
            Some(i) => {
                let below = self.below(i.def, i.signed, at);
                Some(SpanIndex { value: self.value(i.def)?, signed: i.signed, wide: false, scale: i.scale, below })
            }
            None => None,
        };
        Some(Span { base: form.base, offset: form.offset, index, bytes })
    }

    /// A value the index written at statement `def` is below (`true`: at
    /// most) when statement `at` runs: the nearest guarded branch, `ret`
    /// or `exit` before `at` in its straight-line code, whose predicate is
    /// a 32-bit `setp` comparing that index with a value [`Forms::value`]
    /// follows, in the signedness `signed` (the widening's). Reaching `at`
    /// means the exit was not taken, so the comparison came out the way
    /// that keeps the thread.
    fn below(&mut self, def: usize, signed: bool, at: usize) -> Option<(Vec<Op<VarId>>, bool)> {
        let b = self.b;
        // A write whose value changes between runs (a loop counter's
        // bound in it) may be compared in one run and used in another.
        if !names_value(&self.value(def)?) {
            return None;
        }
        let start = *self.region.get(at)?;
        let (j, guard) = (start..at).rev().find_map(|j| match b.statements.get(j) {
            Some(Statement::Instruction(inst)) if matches!(inst.op, Opcode::Bra | Opcode::Ret | Opcode::Exit) => inst.guard.map(|g| (j, g)),
            _ => None,
        })?;
        let k = self.reach(guard.reg, j)?;
        let setp = self.def(k)?;
        let ty = setp.ty(b)?;
        if setp.op != Opcode::Setp || ty.bits() != 32 || !ty.is_integer() || ty.is_float() {
            return None;
        }
        let (cmp, cmp_signed) = match setp.cmp(b)? {
            CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge if ty.is_signed() => (setp.cmp(b)?, true),
            CmpOp::Lt | CmpOp::Lo => (CmpOp::Lt, false),
            CmpOp::Le | CmpOp::Ls => (CmpOp::Le, false),
            CmpOp::Gt | CmpOp::Hi => (CmpOp::Gt, false),
            CmpOp::Ge | CmpOp::Hs => (CmpOp::Ge, false),
            _ => return None,
        };
        if cmp_signed != signed {
            return None;
        }
        let [_, x, y] = b.args(setp) else { return None };
        let is_index = |forms: &Self, o: &Operand| matches!(*o, Operand::Reg(r) if forms.reach(r, k) == Some(def));
        // The comparison that holds on the way to `at`, as `index CMP other`.
        let (holds, other) = match (is_index(self, x), is_index(self, y)) {
            (true, false) => (cmp, y),
            (false, true) => {
                let flipped = match cmp {
                    CmpOp::Lt => CmpOp::Gt,
                    CmpOp::Le => CmpOp::Ge,
                    CmpOp::Gt => CmpOp::Lt,
                    _ => CmpOp::Le,
                };
                (flipped, x)
            }
            _ => return None,
        };
        // The exit is taken when the predicate is true (or false, negated).
        let kept = match (holds, guard.negate) {
            (c, true) => c,
            (CmpOp::Lt, false) => CmpOp::Ge,
            (CmpOp::Le, false) => CmpOp::Gt,
            (CmpOp::Gt, false) => CmpOp::Le,
            (_, false) => CmpOp::Lt,
        };
        let inclusive = match kept {
            CmpOp::Lt => false,
            CmpOp::Le => true,
            _ => return None,
        };
        let mut value = Vec::new();
        self.value_operand(other, k, &mut value)?;
        Some((value, inclusive))
    }

    /// Where the address operand of the access at statement `at` lies, and
    /// its size in bytes.
    fn access(&mut self, inst: &Instruction, at: usize) -> Option<(Form, u64)> {
        let b = self.b;
        let args = b.args(inst);
        let (address, data) = match inst.op {
            Opcode::Ld | Opcode::Atom => (args.get(1)?, args.first()?),
            Opcode::St => (args.first()?, args.get(1)?),
            Opcode::Red => (args.first()?, args.get(1)?),
            _ => return None,
        };
        let n = match data {
            Operand::Vector(l) => b.list(*l).len() as u64,
            _ => 1,
        };
        let t = inst.ty(b)?;
        let bytes = (u64::from(t.bits()) / 8).max(1) * n;
        let form = match address.address()? {
            (AddrBase::Reg(r), off) => {
                let f = self.form(self.reach(r, at)?)?;
                Form { offset: f.offset.checked_add(off)?, ..f }
            }
            (AddrBase::Global(s), off) if self.m.variable(s).is_some() => Form { base: Base::Symbol(s), index: None, offset: off },
            _ => return None,
        };
        Some((form, bytes))
    }

    /// The bytes an access (at statement `at`) touches over a launch when
    /// its address is `base + value` (a 64-bit `add` of a warp-uniform
    /// base and a 64-bit offset [`Forms::value`] follows: several indices
    /// with strides from parameters, remainders), which [`Form`] cannot
    /// say.
    fn offset_span(&mut self, inst: &Instruction, at: usize) -> Option<Span<Base, VarId>> {
        let b = self.b;
        let args = b.args(inst);
        let (address, data) = match inst.op {
            Opcode::Ld | Opcode::Atom => (args.get(1)?, args.first()?),
            Opcode::St | Opcode::Red => (args.first()?, args.get(1)?),
            _ => return None,
        };
        let n = match data {
            Operand::Vector(l) => b.list(*l).len() as u64,
            _ => 1,
        };
        let bytes = (u64::from(inst.ty(b)?.bits()) / 8).max(1) * n;
        let (AddrBase::Reg(r), off) = address.address()? else { return None };
        let (base, value) = self.base_plus_offset(&Operand::Reg(r), at, at, 0)?;
        let index = SpanIndex { value, signed: false, wide: true, scale: 1, below: None };
        Some(Span { base: base.base, offset: base.offset.checked_add(off)?, index: Some(index), bytes })
    }

    /// For a plain load or store at statement `at` ([`Cell`]): its address
    /// register, the write of it the access reads, its offset and bytes.
    fn cell(&self, inst: &Instruction, at: usize) -> Option<Cell> {
        let b = self.b;
        let args = b.args(inst);
        let (address, data) = match inst.op {
            Opcode::St => (args.first()?, args.get(1)?),
            Opcode::Ld => (args.get(1)?, args.first()?),
            _ => return None,
        };
        let n = match data {
            Operand::Vector(l) => b.list(*l).len() as u64,
            _ => 1,
        };
        let bytes = (u64::from(inst.ty(b)?.bits()) / 8).max(1) * n;
        let (AddrBase::Reg(r), offset) = address.address()? else { return None };
        Some(Cell { reg: r, write: self.reach(r, at)?, offset, bytes })
    }

    /// For a store at statement `at`: its address register and the write
    /// of it the store reads.
    fn store_address(&self, inst: &Instruction, at: usize) -> Option<(RegId, usize)> {
        (inst.op == Opcode::St).then_some(())?;
        let (AddrBase::Reg(r), _) = self.b.args(inst).first()?.address()? else { return None };
        Some((r, self.reach(r, at)?))
    }

    /// The condition under which no two threads write the same byte
    /// through the store at statement `at`, however often each runs it:
    /// its address is `base + sum of terms` ([`Forms::terms`]), and the
    /// coordinates together determine the thread (a grid-stride counter
    /// or a global index `ctaid.d * ntid.d + tid.d` determines `ctaid.d`
    /// and `tid.d`; a fast-division remainder and quotient of the same
    /// value determine that value; `%tid.d` or `%ctaid.d` alone itself);
    /// the parts of the thread's index nothing determines must have
    /// extent 1 at launch.
    fn injective(&mut self, inst: &Instruction, at: usize) -> Option<Injective<Base, VarId>> {
        let b = self.b;
        let args = b.args(inst);
        let (address, data) = match inst.op {
            Opcode::St => (args.first()?, args.get(1)?),
            _ => return None,
        };
        let n = match data {
            Operand::Vector(l) => b.list(*l).len() as u64,
            _ => 1,
        };
        let bytes = (u64::from(inst.ty(b)?.bits()) / 8).max(1) * n;
        let (AddrBase::Reg(r), off) = address.address()? else { return None };
        let i = self.reach(r, at)?;
        let add = self.def(i)?;
        let [_, x, y] = b.args(add) else { return None };
        if add.op != Opcode::Add || add.ty(b)?.bits() != 64 {
            return None;
        }
        let pure = |f: Option<Form>| f.filter(|f| f.index.is_none() && f.base != Base::None);
        let (base, rest) = match pure(self.operand_form(x, i)) {
            Some(f) => (f, y),
            None => (pure(self.operand_form(y, i))?, x),
        };
        let mut raw = Vec::new();
        self.terms(rest, i, 1, &mut raw, 0)?;
        let mut known: Vec<(Launch, u8)> = Vec::new();
        let mut nowrap = Vec::new();
        let mut terms = Vec::new();
        let programs: Vec<Vec<Op<VarId>>> = raw.iter().map(|t| unwiden_coord(&t.coord)).collect();
        for t in &raw {
            let core = unwiden_coord(&t.coord);
            match self.counter(t.reg, t.read) {
                Some((d, bound_step)) => {
                    known.extend([(Launch::Ctaid, d), (Launch::Tid, d)]);
                    nowrap.push(bound_step);
                }
                None => {
                    if let Some((parts, bound_step)) = self.counter64(t.reg, t.read) {
                        known.extend(parts);
                        nowrap.push(bound_step);
                    } else if let Some(d) = global_index(&core) {
                        known.extend([(Launch::Ctaid, d), (Launch::Tid, d)]);
                    } else if let [Op::Special(l @ (Launch::Tid | Launch::Ctaid), d)] = core[..] {
                        known.push((l, d));
                    } else if let Some(d) = divided(&core, &programs) {
                        known.extend([(Launch::Ctaid, d), (Launch::Tid, d)]);
                    } else if let Some(parts) = self.split_counter(t, &raw, &mut nowrap) {
                        known.extend(parts);
                    } else if let Some(parts) = digits(&core, &programs) {
                        known.extend(parts);
                    }
                }
            }
            terms.push(Term { coord: t.coord.clone(), stride: t.stride.clone(), factor: t.factor });
        }
        let mut single = Vec::new();
        for d in 0..3u8 {
            if !known.contains(&(Launch::Tid, d)) {
                single.push((Launch::Ntid, d));
            }
            if !known.contains(&(Launch::Ctaid, d)) {
                single.push((Launch::Nctaid, d));
            }
        }
        Some(Injective { base: base.base, offset: base.offset.checked_add(off)?, bytes, terms, single, nowrap, more: Vec::new() })
    }

    /// The terms of a 64-bit offset read at statement `read`, times
    /// `factor`: sums (`add.s64`), shifts left by constants, and 32-bit
    /// coordinates widened without sign (`cvt.u64.u32`, stride 1) or
    /// multiplied by a launch constant (`mul.wide.u32`).
    fn terms(&mut self, op: &Operand, read: usize, factor: i64, out: &mut Vec<RawTerm>, depth: u32) -> Option<()> {
        let Operand::Reg(r) = *op else { return None };
        (depth <= 16 && out.len() <= 16).then_some(())?;
        if self.reach(r, read).is_none() {
            // A 64-bit grid-stride counter, stride 1.
            let coord = self.coordinate64(op, read)?;
            out.push(RawTerm { coord, stride: vec![Op::Const(1)], factor, reg: r, read });
            return Some(());
        }
        let i = self.reach(r, read)?;
        let inst = self.def(i)?;
        let b = self.b;
        let ty = inst.ty(b)?;
        match (inst.op, b.args(inst)) {
            // A 32-bit coordinate widened with its sign (`cvt.s64.s32`):
            // the widening in the coordinate's computation makes the
            // launch check fail unless the value lies in `[-2^31, 2^31)`.
            (Opcode::Cvt, [_, x @ Operand::Reg(xr)]) if inst.types(b).take(2).eq([Type::S64, Type::S32]) && inst.rounding(b).is_none() => {
                let mut coord = Vec::new();
                self.value_operand_as(x, i, Imm::S32, &mut coord)?;
                coord.push(Op::Wide { signed: true });
                out.push(RawTerm { coord, stride: vec![Op::Const(1)], factor, reg: *xr, read: i });
                Some(())
            }
            // `mul.wide.u32` / `.s32` of a coordinate by a launch
            // constant (no thread coordinate, loop bound or choice), both
            // widened (`.s32`: with their signs).
            (Opcode::Mul, [_, x, y]) if inst.has(b, Flag::Wide) && matches!(ty, Type::U32 | Type::S32) => {
                let signed = ty == Type::S32;
                let imm = if signed { Imm::S32 } else { Imm::U32 };
                let (mut vx, mut vy) = (Vec::new(), Vec::new());
                self.value_operand_as(x, i, imm, &mut vx)?;
                self.value_operand_as(y, i, imm, &mut vy)?;
                if signed {
                    vx.push(Op::Wide { signed: true });
                    vy.push(Op::Wide { signed: true });
                }
                let (coord, stride, reg) = if launch_constant(&vy) {
                    (vx, vy, x)
                } else if launch_constant(&vx) {
                    (vy, vx, y)
                } else {
                    return None;
                };
                let Operand::Reg(reg) = *reg else { return None };
                out.push(RawTerm { coord, stride, factor, reg, read: i });
                Some(())
            }
            // `mul.lo.s64` / `.u64` of a 64-bit coordinate by a 64-bit
            // launch constant (a stride read from a parameter): both
            // registers hold their values modulo 2^64, so the product does.
            (Opcode::Mul, [_, x, y]) if inst.has(b, Flag::LoHalf) && ty.bits() == 64 && ty.is_integer() && !ty.is_float() => {
                let constant = |f: &mut Self, o: &Operand| f.value64(o, i).filter(|v| launch_constant(v));
                let (coord, stride, reg) = if let Some(s) = constant(self, y) {
                    (self.coordinate64(x, i)?, s, x)
                } else {
                    let s = constant(self, x)?;
                    (self.coordinate64(y, i)?, s, y)
                };
                let Operand::Reg(reg) = *reg else { return None };
                out.push(RawTerm { coord, stride, factor, reg, read: i });
                Some(())
            }
            (Opcode::Add, [_, x, y]) if ty.bits() == 64 && ty.is_integer() => {
                self.terms(x, i, factor, out, depth + 1)?;
                self.terms(y, i, factor, out, depth + 1)
            }
            // nvcc's 64-bit `x % 2^k` beside `x / 2^k` ([`Forms::low_bits64`]).
            (Opcode::Sub, [_, x @ Operand::Reg(xr), p]) if ty.bits() == 64 && ty.is_integer() => {
                let coord = self.low_bits64(i, x, p)?;
                out.push(RawTerm { coord, stride: vec![Op::Const(1)], factor, reg: *xr, read: i });
                Some(())
            }
            (Opcode::Shl, [_, x, Operand::Imm(k)]) if ty.bits() == 64 && (0..32).contains(k) => {
                self.terms(x, i, factor.checked_mul(1 << *k)?, out, depth + 1)
            }
            (Opcode::Cvt, [_, x]) => {
                let mut types = inst.types(b);
                let (dst, src) = (types.next()?, types.next()?);
                (dst == Type::U64 && src == Type::U32 && inst.rounding(b).is_none()).then_some(())?;
                let Operand::Reg(xr) = *x else { return None };
                let mut coord = Vec::new();
                self.value_operand_as(x, i, Imm::U32, &mut coord)?;
                out.push(RawTerm { coord, stride: vec![Op::Const(1)], factor, reg: xr, read: i });
                Some(())
            }
            _ => None,
        }
    }

    /// A 64-bit grid-stride counter's value where statement `at` reads it,
    /// `[0, n)` ([`Forms::counter64`]), only while a store in a loop is
    /// examined: its launch condition goes to `counters64`, which the
    /// store's [`Injective`] carries.
    fn counter_value64(&mut self, r: RegId, at: usize) -> Option<Vec<Op<VarId>>> {
        self.counters64.as_ref()?;
        let (_, (mut bound, step)) = self.counter64(r, at)?;
        self.counters64.as_mut()?.push((bound.clone(), step));
        bound.push(Op::Under);
        Some(bound)
    }

    /// [`Forms::injective`], and when that finds nothing, again with the
    /// values of 64-bit grid-stride counters followed (a fast division of
    /// a truncated counter: `z / n`, `z % n`), their launch conditions
    /// added to the store's. The values followed so are kept apart: the
    /// caches (and the record of what they were computed for) are set
    /// aside while it runs and put back after.
    fn injective_with_counters(&mut self, inst: &Instruction, at: usize) -> Option<Injective<Base, VarId>> {
        if let Some(found) = self.injective(inst, at) {
            return Some(found);
        }
        let saved = (
            std::mem::take(&mut self.values),
            std::mem::take(&mut self.forms),
            std::mem::take(&mut self.uniform),
            std::mem::take(&mut self.lane),
            std::mem::take(&mut self.visiting),
        );
        self.counters64 = Some(Vec::new());
        let found = self.injective(inst, at);
        let counters = self.counters64.take().unwrap_or_default();
        (self.values, self.forms, self.uniform, self.lane, self.visiting) = saved;
        let mut found = found?;
        for c in counters {
            if !found.nowrap.contains(&c) {
                found.nowrap.push(c);
            }
        }
        Some(found)
    }

    /// For a coordinate register `reg` read at `read` that holds (widened
    /// by a `cvt` or not) a fast-division quotient `q = (mul.hi.u32(x, m) +
    /// x) >> s` or remainder `x - q * d`: whether it is the remainder, the
    /// write of `q` and the write of `x` it reads.
    fn split_source(&mut self, reg: RegId, read: usize, depth: u32) -> Option<(bool, usize, usize)> {
        let w = self.reach(reg, read)?;
        let inst = self.def(w)?;
        let b = self.b;
        match (inst.op, b.args(inst)) {
            (Opcode::Cvt, [_, Operand::Reg(x)]) if depth == 0 && inst.rounding(b).is_none() => {
                let mut types = inst.types(b);
                let (dst, src) = (types.next()?, types.next()?);
                (dst.bits() == 64 && src.bits() == 32 && dst.is_integer() && src.is_integer()).then_some(())?;
                self.split_source(*x, w, depth + 1)
            }
            (Opcode::Shr, [_, t, _]) => {
                let (ai, add) = self.def_of(t, w, Opcode::Add)?;
                let [_, y, z] = b.args(add) else { return None };
                for c in [y, z] {
                    let Operand::Reg(xr) = *c else { continue };
                    if self.fast_quotient(&Operand::Reg(reg), read, (xr, ai)).is_some() {
                        return Some((false, w, self.reach(xr, ai)?));
                    }
                }
                None
            }
            (Opcode::Sub, [_, Operand::Reg(xr), p]) if inst.ty(b)?.bits() == 32 => {
                let xr = *xr;
                let (mi, mul) = self.def_of(p, w, Opcode::Mul)?;
                (mul.has(b, Flag::LoHalf) && mul.ty(b)?.bits() == 32).then_some(())?;
                let [_, u, v] = b.args(mul) else { return None };
                for q in [u, v] {
                    let Operand::Reg(qr) = *q else { continue };
                    if self.fast_quotient(q, mi, (xr, w)).is_some() {
                        return Some((true, self.reach(qr, mi)?, self.reach(xr, w)?));
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// The parts of the thread's index that the coordinate term `t`
    /// names together with another term of `raw`: `t` the quotient `q`
    /// and the other the remainder `x - q * d` of one fast division (or
    /// the other way round), of `x` a 64-bit grid-stride counter
    /// truncated (`cvt.u32.u64`, [`Forms::counter64`]). Invariant: `x =
    /// q * d + r` modulo 2^32 with `d` exact at launch (the remainder's
    /// check), so the pair names `x`, below 2^32 under the counter's
    /// condition (added to `nowrap`), and with it the counter's start;
    /// and the two are the same `x`'s: `q`, the remainder and their
    /// widenings each have one write, all in one stretch of
    /// straight-line code with no branch or exit, so every run of it
    /// writes all of them from one value of `x` (read the same there,
    /// [`Forms::fast_quotient`]).
    fn split_counter(&mut self, t: &RawTerm, raw: &[RawTerm], nowrap: &mut Vec<NoWrap<VarId>>) -> Option<Vec<(Launch, u8)>> {
        let (rem, qw, xw) = self.split_source(t.reg, t.read, 0)?;
        let partner = raw.iter().find_map(|o| {
            let (orem, oqw, oxw) = self.split_source(o.reg, o.read, 0)?;
            (orem != rem && oqw == qw && oxw == xw).then_some(o)
        })?;
        // One exit-free stretch of straight-line code writes them all.
        let mut stmts = Vec::new();
        for term in [t, partner] {
            let mut reg = term.reg;
            let mut read = term.read;
            for _ in 0..2 {
                let w = self.reach(reg, read)?;
                (self.writes.get(reg as usize)?.len() == 1).then_some(())?;
                stmts.push(w);
                let inst = self.def(w)?;
                match (inst.op, self.b.args(inst)) {
                    (Opcode::Cvt, [_, Operand::Reg(x)]) => {
                        (reg, read) = (*x, w);
                    }
                    _ => break,
                }
            }
        }
        stmts.push(qw);
        let (lo, hi) = (*stmts.iter().min()?, *stmts.iter().max()?);
        let head = *self.region.get(lo)?;
        (self.region.get(hi) == Some(&head)).then_some(())?;
        let exits = (lo..=hi).any(|j| match self.b.statements.get(j) {
            Some(Statement::Instruction(e)) => matches!(e.op, Opcode::Bra | Opcode::Brx | Opcode::Ret | Opcode::Exit | Opcode::Call),
            _ => true,
        });
        (!exits).then_some(())?;
        // `x`: a 64-bit grid-stride counter truncated.
        let xinst = self.def(xw)?;
        let [_, Operand::Reg(c)] = self.b.args(xinst) else { return None };
        let c = *c;
        let mut types = xinst.types(self.b);
        let (dst, src) = (types.next()?, types.next()?);
        (xinst.op == Opcode::Cvt
            && dst.bits() == 32
            && src.bits() == 64
            && dst.is_integer()
            && src.is_integer()
            && xinst.rounding(self.b).is_none())
        .then_some(())?;
        let (parts, bound_step) = self.counter64(c, xw)?;
        nowrap.push(bound_step);
        Some(parts)
    }

    /// The computation of a 64-bit coordinate read at statement `at`: its
    /// register's value, or for a 64-bit grid-stride counter
    /// ([`Forms::counter64`]) `[0, n)`, which holds under the counter's
    /// launch condition (the caller adds it to [`Injective::nowrap`]).
    fn coordinate64(&mut self, x: &Operand, at: usize) -> Option<Vec<Op<VarId>>> {
        let Operand::Reg(r) = *x else { return None };
        if self.reach(r, at).is_some() {
            return self.value64(x, at);
        }
        let (_, (mut bound, _)) = self.counter64(r, at)?;
        bound.push(Op::Under);
        Some(bound)
    }

    /// A grid-stride loop's counter `r` read at `at`: its dimension, the
    /// bound of its values there and its step. `r` has two writes: before
    /// the loop's label the global index of dimension `d` (`ctaid.d *
    /// ntid.d + tid.d`, the start), and after `at` in `at`'s straight-line
    /// code, the first write of `r` there, `r += ntid.d * nctaid.d` (so
    /// each step follows a read below the bound: with `bound + step <=
    /// 2^32` it never wraps, and every value is `start + k * step` with
    /// `start` in `[0, step)`, which the value determines).
    fn counter(&mut self, r: RegId, at: usize) -> Option<(u8, NoWrap<VarId>)> {
        if self.reach(r, at).is_some() {
            return None;
        }
        let bound = self.counter_bound(r, at)?;
        let head = *self.region.get(at)?;
        let [w0, w1] = self.writes.get(r as usize)?[..] else { return None };
        if w0 >= head || w1 <= at || self.region.get(w1) != Some(&head) {
            return None;
        }
        let (start, step) = (self.def(w0)?, self.def(w1)?);
        if start.guard.is_some() || step.guard.is_some() || step.op != Opcode::Add || step.has(self.b, Flag::Sat) {
            return None;
        }
        let start = self.value(w0)?;
        let d = global_index(&start)?;
        let [_, x, y] = self.b.args(step) else { return None };
        let other = match (x, y) {
            (Operand::Reg(a), o) if *a == r => o,
            (o, Operand::Reg(a)) if *a == r => o,
            _ => return None,
        };
        let mut s = Vec::new();
        self.value_operand(other, w1, &mut s)?;
        let grid = |a, b| vec![Op::Special(a, d), Op::Special(b, d), Op::Mul];
        (s == grid(Launch::Ntid, Launch::Nctaid) || s == grid(Launch::Nctaid, Launch::Ntid)).then_some((d, (bound, s)))
    }

    /// A 64-bit operand read at statement `read` as a warp-uniform base
    /// plus a 64-bit offset [`Forms::value`] follows, for the access at
    /// statement `access`: sums (`add.s64`) of the two, and a `selp`
    /// whose predicate's exit the access's straight-line code passed.
    fn base_plus_offset(&mut self, op: &Operand, read: usize, access: usize, depth: u32) -> Option<(Form, Vec<Op<VarId>>)> {
        if depth > 8 {
            return None;
        }
        if let Some(f) = self.operand_form(op, read).filter(|f| f.index.is_none() && f.base != Base::None) {
            return Some((f, vec![Op::Const(0)]));
        }
        let Operand::Reg(r) = *op else { return None };
        let i = self.reach(r, read)?;
        let inst = self.def(i)?;
        let b = self.b;
        match (inst.op, b.args(inst)) {
            (Opcode::Add, [_, x, y]) if inst.ty(b)?.bits() == 64 => {
                let (base, mut value, other) = match self.base_plus_offset(x, i, access, depth + 1) {
                    Some((f, v)) => (f, v, y),
                    None => {
                        let (f, v) = self.base_plus_offset(y, i, access, depth + 1)?;
                        (f, v, x)
                    }
                };
                value.extend(self.value64(other, i)?);
                value.push(Op::Add);
                (value.len() <= MAX_VALUE_OPS).then_some((base, value))
            }
            (Opcode::Selp, [_, x, y, p]) => {
                let chosen = if self.exit_passed(p, i, access)? { y } else { x };
                self.base_plus_offset(chosen, i, access, depth + 1)
            }
            _ => None,
        }
    }

    /// For the predicate `p` read at statement `at` (a `selp`), where
    /// statement `access` runs: `Some(true)` when `p` is known false
    /// there, `Some(false)` when known true, because the code before
    /// `access` passed an exit that leaves unless so. Searched in
    /// `access`'s straight-line code and, while that code has a single
    /// way in (one unguarded branch, no fall into its label), in the
    /// code of that branch. Within `at`'s own straight-line code `p` is
    /// the same value wherever the same write reaches it; elsewhere only
    /// when that write and `at` run at most once (outside every loop),
    /// and then an exit on an `or.pred` of `p` (leaving when true) or an
    /// `and.pred` (leaving when false) tells `p` too.
    fn exit_passed(&mut self, p: &Operand, at: usize, access: usize) -> Option<bool> {
        let Operand::Reg(pr) = *p else { return None };
        let w = self.reach(pr, at)?;
        let once = !*self.rep.get(w)? && !*self.rep.get(at)?;
        let home = *self.region.get(at)?;
        let mut end = access;
        for _ in 0..8 {
            let start = *self.region.get(end)?;
            if !once && (start != home || at > end) {
                return None;
            }
            let found = (start..end).rev().find_map(|j| match self.b.statements.get(j) {
                Some(Statement::Instruction(inst)) if matches!(inst.op, Opcode::Bra | Opcode::Ret | Opcode::Exit) => {
                    // Not taken: the guard's value is `negate`.
                    let g = inst.guard?;
                    if once {
                        self.pred_value(g.reg, j, g.negate, pr, w, 0)
                    } else {
                        (g.reg == pr && self.reach(pr, j) == Some(w)).then_some(g.negate)
                    }
                }
                _ => None,
            });
            if let Some(value) = found {
                return Some(!value);
            }
            end = self.single_entry(start)?;
        }
        None
    }

    /// When predicate `q` read at statement `at` is `value`: the value of
    /// predicate `p` as its write `w` set it, if that follows.
    fn pred_value(&self, q: RegId, at: usize, value: bool, p: RegId, w: usize, depth: u32) -> Option<bool> {
        let k = self.reach(q, at)?;
        if q == p && k == w {
            return Some(value);
        }
        let inst = self.def(k)?;
        let b = self.b;
        match (inst.op, b.args(inst)) {
            (Opcode::Or | Opcode::And, [_, Operand::Reg(x), Operand::Reg(y)])
                if inst.ty(b) == Some(Type::Pred) && (inst.op == Opcode::And) == value && depth < 8 =>
            {
                self.pred_value(*x, k, value, p, w, depth + 1).or_else(|| self.pred_value(*y, k, value, p, w, depth + 1))
            }
            _ => None,
        }
    }

    /// The one way into the straight-line code starting at label
    /// statement `head`: an unguarded branch (its statement), when no
    /// other branch targets the label and the code before it does not
    /// fall into it.
    fn single_entry(&self, head: usize) -> Option<usize> {
        let b = self.b;
        let Some(Statement::Label(label)) = b.statements.get(head) else { return None };
        let mut from = None;
        for (j, st) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = st else { continue };
            if inst.op == Opcode::Brx {
                return None;
            }
            if inst.op == Opcode::Bra && matches!(b.args(inst).first(), Some(Operand::Label(l)) if l == label) {
                if from.is_some() || inst.guard.is_some() {
                    return None;
                }
                from = Some(j);
            }
        }
        let prev = (0..head).rev().find_map(|j| match b.statements.get(j) {
            Some(Statement::Instruction(inst)) => Some(inst),
            _ => None,
        });
        let falls = prev.is_none_or(|i| i.guard.is_some() || !matches!(i.op, Opcode::Bra | Opcode::Ret | Opcode::Exit));
        if falls {
            return None;
        }
        from
    }
}

/// Whether `x` touches, once per thread, only bytes the store `w` (run
/// once per thread, with a known [`Injective`] condition) writes through
/// the same value of the same address register ([`Cell::within`]). Under
/// that condition no thread writes through `w` a byte another thread
/// writes through it, so no thread's `x` touches a byte another thread's
/// `w` writes. Both run once: the register holds one value per thread,
/// the one both use, and the condition's coordinates range over the
/// whole launch (no loop bound is involved).
///
/// Only for addresses the per-warp rule cannot follow (no [`Form`]: a
/// 64-bit index sum such as `(long)blockIdx.x * blockDim.x + threadIdx.x`):
/// where it can, it decides when compiled, and an overlap it finds (8-byte
/// elements 4 bytes apart, an index that is not the lane) stays an exchange.
fn own_cell(w: &Access, x: &Access) -> bool {
    w.once
        && x.once
        && w.form.is_none()
        && x.form.is_none()
        && w.injective.is_some()
        && matches!((x.cell, w.cell), (Some(cx), Some(cw)) if cx.within(&cw))
}

/// Gives the stores of `accesses` run once whose bytes another access run
/// once also touches through the same register value ([`own_cell`]) their
/// [`Injective`] condition, which stores run once need for nothing else.
fn own_cell_stores(forms: &mut Forms, b: &Body, accesses: &mut [Access]) {
    for k in 0..accesses.len() {
        let Some(w) = accesses.get(k) else { return };
        let shared = matches!(w.effect, Effect::Write { .. })
            && w.once
            && w.form.is_none()
            && w.injective.is_none()
            && accesses
                .iter()
                .enumerate()
                .any(|(j, x)| j != k && x.once && matches!((x.cell, w.cell), (Some(cx), Some(cw)) if cx.within(&cw)));
        if !shared {
            continue;
        }
        let found = match b.statements.get(w.at.statement) {
            Some(Statement::Instruction(inst)) => forms.injective_with_counters(inst, w.at.statement),
            _ => None,
        };
        if let Some(w) = accesses.get_mut(k) {
            w.injective = found;
        }
    }
}

/// Stores through one address (see "Stores through one address" in the
/// module's notes): the stores among `accesses` (of the kernel's body
/// `b`) that read the same write of the same address register, each at
/// its constant offset, when each decomposes ([`Forms::injective`]; also
/// for stores run once, which need no condition of their own) into the
/// same base, terms and single extents and their bytes do not overlap,
/// get one condition over their union, pushed to `joints`; their `group`
/// names it. Invariant: the stores' addresses are the one register value
/// plus their offsets wherever they run, so the union's condition (every
/// pair of a coordinate tuple and a store touches its own bytes) keeps
/// any two threads' bytes apart through any of them.
fn joint_stores(forms: &mut Forms, b: &Body, accesses: &mut [Access], joints: &mut Vec<Injective<Base, VarId>>) {
    let mut by_address: std::collections::BTreeMap<(RegId, usize), Vec<usize>> = Default::default();
    for (k, x) in accesses.iter().enumerate() {
        if let (Some(address), Effect::Write { .. }) = (x.address, x.effect) {
            by_address.entry(address).or_default().push(k);
        }
    }
    for members in by_address.into_values().filter(|m| m.len() >= 2) {
        for &k in &members {
            let Some(x) = accesses.get(k) else { return };
            if x.injective.is_none() && x.once {
                let found = match b.statements.get(x.at.statement) {
                    Some(Statement::Instruction(inst)) => forms.injective_with_counters(inst, x.at.statement),
                    _ => None,
                };
                if let Some(x) = accesses.get_mut(k) {
                    x.injective = found;
                }
            }
        }
        let injs: Option<Vec<&Injective<Base, VarId>>> = members.iter().map(|&k| accesses.get(k)?.injective.as_ref()).collect();
        let Some((first, rest)) = injs.as_deref().and_then(|v| v.split_first()) else { continue };
        if !rest.iter().all(|j| j.base == first.base && j.terms == first.terms && j.single == first.single) {
            continue;
        }
        let mut joint = (*first).clone();
        joint.more = rest.iter().map(|j| (j.offset, j.bytes)).collect();
        for j in rest {
            for c in &j.nowrap {
                if !joint.nowrap.contains(c) {
                    joint.nowrap.push(c.clone());
                }
            }
        }
        // Stores that overlap never qualify (known now).
        let pieces = std::iter::once((joint.offset, joint.bytes))
            .chain(joint.more.iter().copied())
            .map(|(o, n)| (i128::from(o), i128::from(o) + i128::from(n)))
            .collect();
        if disjoint_union(pieces).is_none() {
            continue;
        }
        let g = joints.len();
        joints.push(joint);
        for &k in &members {
            if let Some(x) = accesses.get_mut(k) {
                x.group = Some(g);
            }
        }
    }
}

/// A computation without its final cap ([`Op::Min`] pops `n` and `x`
/// and pushes `x`, its interval capped by an exit passed): `x`'s
/// computation, the same value; `v` itself when it ends otherwise.
fn uncapped(v: &[Op<VarId>]) -> &[Op<VarId>] {
    let [rest @ .., Op::Min] = v else { return v };
    // Walk back over `n`: the operations still to be matched against
    // the values they pop, until `n` is one whole value.
    let mut need = 1i64;
    for (k, op) in rest.iter().enumerate().rev() {
        need += match op {
            Op::Const(_) | Op::Param { .. } | Op::Field { .. } | Op::Special(..) => -1,
            Op::Wide { .. } | Op::Under => 0,
            Op::Rem => 3,
            Op::Add | Op::Sub | Op::Mul | Op::MulHi | Op::Shr | Op::Div | Op::Mod | Op::Either | Op::Min => 1,
        };
        if need == 0 {
            return rest.get(..k).unwrap_or(v);
        }
    }
    v
}

/// Whether a computation names one value (a function of the launch and
/// the thread, the same wherever the same write is read): neither a
/// loop's bound ([`Op::Under`]) nor a choice between two ([`Op::Either`]),
/// which bound a value whose choice may differ from one run to the next.
fn names_value(v: &[Op<VarId>]) -> bool {
    !v.iter().any(|o| matches!(o, Op::Under | Op::Either))
}

/// A term of a store's address as [`Forms::terms`] finds it: the
/// coordinate's register and the statement reading it.
struct RawTerm {
    coord: Vec<Op<VarId>>,
    stride: Vec<Op<VarId>>,
    factor: i64,
    reg: RegId,
    read: usize,
}

/// Whether `v` is the same in every thread and every iteration (a
/// computation of launch constants: no `%tid`, `%ctaid` or loop bound).
fn launch_constant(v: &[Op<VarId>]) -> bool {
    !v.iter().any(|o| matches!(o, Op::Special(Launch::Tid | Launch::Ctaid, _) | Op::Under | Op::Either))
}

/// `v` without its widenings without sign (`cvt.u64.u32`, `mul.wide.u32`
/// of the leaves or of a 32-bit part): the form a 64-bit value of launch
/// values is compared in, where the launch condition that needs the form
/// also keeps every part in `[0, 2^32)` (so no widening changed a value).
fn unwidened(v: &[Op<VarId>]) -> Vec<Op<VarId>> {
    v.iter().copied().filter(|o| *o != Op::Wide { signed: false }).collect()
}

/// A coordinate's computation without its widenings (with or without
/// sign), to name the value it widens: [`Injective::holds`] evaluates the
/// whole computation, which fails unless each widened value lies in the
/// range its widening reads, and then each widening keeps its value.
fn unwiden_coord(v: &[Op<VarId>]) -> Vec<Op<VarId>> {
    v.iter().copied().filter(|o| !matches!(o, Op::Wide { .. })).collect()
}

/// The dimension `d` when `v` computes `ctaid.d * ntid.d + tid.d` (the
/// factors in either order, or `tid.d` first).
fn global_index(v: &[Op<VarId>]) -> Option<u8> {
    let d = v.iter().find_map(|o| match o {
        Op::Special(_, d) => Some(*d),
        _ => None,
    })?;
    let (c, n, t) = (Op::Special(Launch::Ctaid, d), Op::Special(Launch::Ntid, d), Op::Special(Launch::Tid, d));
    let forms = [[c, n, Op::Mul, t, Op::Add], [n, c, Op::Mul, t, Op::Add], [t, c, n, Op::Mul, Op::Add], [t, n, c, Op::Mul, Op::Add]];
    forms.iter().any(|f| v == f).then_some(d)
}

/// The parts of the thread's index two coordinates name together: `a =
/// q >> k` and `b = (q mod 2^k) - y` with `q = x + y` (or `b = q mod 2^k`
/// with `q = x`; `v` either of the two), every computation naming a value
/// (no [`Op::Under`] or [`Op::Either`]), and `x` `%tid.d`, `%ctaid.d` or a
/// global index: nvcc's `tid / 8` as `(tid + bias) >> 3` beside `tid % 8`
/// as `tid - ((tid + bias) & -8)` ([`Forms::low_bits`]). Invariant: where
/// the launch check passes, each coordinate's exact value is its
/// computation's, and `2^k a + b = q - y = x`, so the two determine `x`
/// whatever `y` is (the same value in both: equal computations naming
/// values). Computations are compared without their widenings
/// ([`unwiden_coord`]).
fn digits(v: &[Op<VarId>], others: &[Vec<Op<VarId>>]) -> Option<Vec<(Launch, u8)>> {
    let names = |x: &[Op<VarId>]| -> Option<Vec<(Launch, u8)>> {
        if let [Op::Special(l @ (Launch::Tid | Launch::Ctaid), d)] = x[..] {
            return Some(vec![(l, d)]);
        }
        global_index(x).map(|d| vec![(Launch::Ctaid, d), (Launch::Tid, d)])
    };
    // `a` = `[q, k, Shr]` and `b` = `[q, 2^k, Mod]` or `[q, 2^k, Mod, y,
    // Sub]` with `q` = `[x, y, Add]` (either order): `2^k a + b = q - y =
    // x` ([`Forms::low_bits`]).
    let low = |b: &[Op<VarId>], a: &[Op<VarId>]| -> Option<Vec<(Launch, u8)>> {
        let [q @ .., Op::Const(k), Op::Shr] = a else { return None };
        let m = Op::Const(1i64.checked_shl(u32::try_from(*k).ok()?)?);
        (names_value(a) && names_value(b)).then_some(())?;
        if let [bq @ .., mm, Op::Mod] = b {
            return (bq == q && *mm == m).then_some(()).and_then(|_| names(q));
        }
        let [rest @ .., Op::Sub] = b else { return None };
        let pre: Vec<Op<VarId>> = q.iter().copied().chain([m, Op::Mod]).collect();
        let y = rest.strip_prefix(pre.as_slice())?;
        let [inner @ .., Op::Add] = q else { return None };
        let x = inner.strip_suffix(y).or_else(|| inner.strip_prefix(y))?;
        (!y.is_empty()).then_some(())?;
        names(x)
    };
    others.iter().filter(|o| o.as_slice() != v).find_map(|o| low(v, o).or_else(|| low(o, v)))
}

/// The dimension of a global index `x` when `v` is `x`'s fast-division
/// remainder and `others` holds its quotient by the same constants (or
/// `v` the quotient and `others` the remainder): the two determine `x`.
fn divided(v: &[Op<VarId>], others: &[Vec<Op<VarId>>]) -> Option<u8> {
    // The remainder `[x, m, s, d, Rem]`, with `x` a global index (5 ops)
    // and `m`, `s`, `d` one leaf each.
    let quotients = |rem: &[Op<VarId>]| -> Option<(u8, Vec<Vec<Op<VarId>>>)> {
        let [x @ .., m, s, _, Op::Rem] = rem else { return None };
        let d = global_index(x)?;
        let mut out = Vec::new();
        for (a, b) in [(x.to_vec(), vec![*m]), (vec![*m], x.to_vec())] {
            let hi: Vec<_> = a.iter().chain(&b).copied().chain([Op::MulHi]).collect();
            for sum in [[hi.clone(), x.to_vec()].concat(), [x.to_vec(), hi.clone()].concat()] {
                out.push([sum, vec![Op::Add, *s, Op::Shr]].concat());
            }
        }
        Some((d, out))
    };
    if let Some((d, qs)) = quotients(v) {
        return others.iter().any(|o| qs.contains(o)).then_some(d);
    }
    others.iter().find_map(|o| quotients(o).filter(|(_, qs)| qs.iter().any(|q| q == v)).map(|(d, _)| d))
}

/// What keeps two accesses' lanes apart, when something does: nothing
/// needed, or a run-time condition, given that the lanes of a warp have
/// consecutive `%tid.x` when the accesses are indexed (`Some(true)` in the
/// second field).
fn apart(w: &Access, x: &Access) -> Option<(Option<Apart>, bool)> {
    let (fw, fx) = (w.form?, x.form?);
    let m = w.bytes.max(x.bytes);
    let indexed = match (fw.index, fx.index) {
        (Some(a), Some(b)) if a == b && a.lane => true,
        (None, None) => false,
        _ => return None,
    };
    // With one index (consecutive %tid.x, so lanes differ by k in 1..31,
    // or by k +- 2^32 where the 32-bit value wraps between them; widened
    // values never differ by more), lane i's address minus lane j's is
    // d + scale * (i - j): never within m of 0 when d = 0 and |scale| >=
    // m, or when |d| is at least 31 |scale| + m away from both 0 and
    // |scale| 2^32. Without an index every lane accesses the same
    // address: apart when |d| >= m.
    let (equal, min, wrap) = match fw.index {
        Some(i) => (i.scale.unsigned_abs() >= m, 31 * i.scale.unsigned_abs() + m, i.scale.unsigned_abs() << 32),
        None => (false, m, 0),
    };
    if fw.base == fx.base {
        let d = fw.offset.checked_sub(fx.offset)?;
        let ok = Apart { a: fw.base, a_offset: 0, b: fx.base, b_offset: 0, equal, min, wrap }.holds(d);
        return ok.then_some((None, indexed));
    }
    // The condition is symmetric: one order of the two for each pair.
    let (a, b) = if (fw.base, fw.offset) <= (fx.base, fx.offset) { (fw, fx) } else { (fx, fw) };
    Some((Some(Apart { a: a.base, a_offset: a.offset, b: b.base, b_offset: b.offset, equal, min, wrap }), indexed))
}

/// The launch condition keeping two accesses apart when [`apart`] finds
/// none: their bytes over the launch must not overlap. None for two
/// accesses through one base and one index (their overlap is known when
/// compiled).
fn disjoint(w: &Access, x: &Access) -> Option<Disjoint<Base, VarId>> {
    let (sw, sx) = (w.span.as_ref()?, x.span.as_ref()?);
    if sw.base == sx.base {
        let same_reg = matches!((w.form?.index, x.form?.index), (Some(a), Some(b)) if a.def == b.def);
        let same_value = matches!((&sw.index, &sx.index), (Some(a), Some(b)) if a.value == b.value);
        if same_reg || same_value || (sw.index.is_none() && sx.index.is_none()) {
            return None;
        }
    }
    // One order of the two for each pair.
    let (a, b) = if sw <= sx { (sw, sx) } else { (sx, sw) };
    Some(Disjoint { a: a.clone(), b: b.clone() })
}

/// The verdict for kernel `kernel` (an item index) of `m`.
pub fn analyse(m: &Module, a: &Analysis, kernel: ItemId) -> Verdict {
    let mut accesses = Vec::new();
    let mut joints: Vec<Injective<Base, VarId>> = Vec::new();
    for item in a.reachable(kernel) {
        let Some(Item::Function(f)) = m.items.get(item as usize) else { continue };
        let Some(b) = &f.body else { continue };
        let mut forms = Forms::new(m, f, b);
        let rep = forms.rep.clone();
        for (i, s) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = s else { continue };
            let at = Site { item, statement: i };
            match effect(m, f, b, inst) {
                Effect::None => {}
                Effect::Shared => return Verdict::Exchanges(Exchange { kind: ExchangeKind::SharedMemory, at, with: None }),
                Effect::Unmodelled => return Verdict::Exchanges(Exchange { kind: ExchangeKind::Unmodelled, at, with: None }),
                e => {
                    // Only the kernel's own registers are followed.
                    let (form, bytes) =
                        if item == kernel { forms.access(inst, i).map_or((None, 0), |(f, n)| (Some(f), n)) } else { (None, 0) };
                    let span = match form.and_then(|f| forms.span(f, bytes, i)) {
                        None if item == kernel => forms.offset_span(inst, i),
                        span => span,
                    };
                    let once = item == kernel && !rep[i];
                    let injective = if item == kernel && !once { forms.injective_with_counters(inst, i) } else { None };
                    let address = if item == kernel { forms.store_address(inst, i) } else { None };
                    let cell = if item == kernel { forms.cell(inst, i) } else { None };
                    accesses.push(Access { at, effect: e, once, form, bytes, span, injective, address, cell, group: None })
                }
            }
        }
        if item == kernel {
            joint_stores(&mut forms, b, &mut accesses, &mut joints);
            own_cell_stores(&mut forms, b, &mut accesses);
        }
    }
    if !accesses.iter().any(|x| matches!(x.effect, Effect::Write { .. })) {
        return Verdict::Independent("no shared memory, and nothing written to global memory");
    }
    let mut conditions = Conditions { kernel, ..Conditions::default() };
    for w in accesses.iter().filter(|x| matches!(x.effect, Effect::Write { .. })) {
        let Effect::Write { commutes: wc, .. } = w.effect else { continue };
        for x in &accesses {
            let harmless = if x.at == w.at {
                w.once || wc.is_some()
            } else {
                matches!(x.effect, Effect::Write { reads: false, commutes: Some(c) } if Some(c) == wc)
            };
            if harmless {
                continue;
            }
            match apart(w, x) {
                Some((need, indexed)) => {
                    conditions.one_dimensional |= indexed;
                    if let Some(ap) = need {
                        if !conditions.apart.contains(&ap) {
                            conditions.apart.push(ap);
                        }
                    }
                }
                None => match disjoint(w, x) {
                    Some(d) => {
                        if !conditions.disjoint.contains(&d) {
                            conditions.disjoint.push(d);
                        }
                    }
                    // A store in a loop: no two threads may write a byte
                    // in common (each thread's own instances run in its
                    // order either way).
                    None if x.at == w.at && w.injective.is_some() => {
                        let joint = w.group.and_then(|g| joints.get(g));
                        if let Some(inj) = joint.or(w.injective.as_ref()) {
                            if !conditions.injective.contains(inj) {
                                conditions.injective.push(inj.clone());
                            }
                        }
                    }
                    // A load or store of bytes a store run once writes
                    // through the same register value (`x = p[i]; p[i] =
                    // f(x)`): each thread touches only its own bytes when
                    // no two threads write a byte in common.
                    None if own_cell(w, x) => {
                        if let Some(inj) = w.injective.as_ref() {
                            if !conditions.injective.contains(inj) {
                                conditions.injective.push(inj.clone());
                            }
                        }
                    }
                    // Two stores through one address: no two threads may
                    // write a byte in common through either.
                    None if w.group.is_some() && w.group == x.group => {
                        if let Some(inj) = w.group.and_then(|g| joints.get(g)) {
                            if !conditions.injective.contains(inj) {
                                conditions.injective.push(inj.clone());
                            }
                        }
                    }
                    None => {
                        let kind = if x.at == w.at { ExchangeKind::RepeatedWrite } else { ExchangeKind::GlobalPair };
                        let with = (x.at != w.at).then_some(x.at);
                        return Verdict::Exchanges(Exchange { kind, at: w.at, with });
                    }
                },
            }
        }
    }
    if !conditions.one_dimensional && conditions.apart.is_empty() && conditions.disjoint.is_empty() && conditions.injective.is_empty() {
        return Verdict::Independent("no shared memory, and no global memory a lane writes is read or written by another instruction");
    }
    Verdict::IndependentIf(conditions)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

    fn parse(body: &str) -> (String, ItemId) {
        let src = format!("{HEAD}{body}");
        let m = ptx::parse(&src).expect("test PTX parses");
        let k = m.items.iter().position(|it| matches!(it, Item::Function(f) if f.kind == FunctionKind::Entry)).expect("a kernel") as ItemId;
        (src, k)
    }

    /// The verdict for the first kernel of `body` (PTX after the header).
    fn verdict(body: &str) -> Verdict {
        let (src, k) = parse(body);
        let m = ptx::parse(&src).expect("test PTX parses");
        analyse(&m, &Analysis::new(&m), k)
    }

    /// A kernel with pointers `p` and `q`, `%r1` = `%tid.x`, `%rd4` =
    /// `p + 4 * tid` and `%rd5` = `q + 4 * tid`, then `lines`.
    fn kernel(lines: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 p, .param .u64 q)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<8>;\n\
             .reg .b64 %rd<16>;\nld.param.u64 %rd1, [p];\nld.param.u64 %rd2, [q];\nmov.u32 %r1, %tid.x;\n\
             mul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd1, %rd3;\nadd.s64 %rd5, %rd2, %rd3;\n{lines}\nret;\n}}\n"
        )
    }

    fn kind(v: &Verdict) -> Option<ExchangeKind> {
        match v {
            Verdict::Exchanges(e) => Some(e.kind),
            _ => None,
        }
    }

    fn conditions(v: &Verdict) -> Conditions {
        match v {
            Verdict::IndependentIf(c) => c.clone(),
            other => panic!("expected conditions, got {other:?}"),
        }
    }

    /// The parameters `p` and `q` of [`kernel`] (their variable ids).
    const P: Base = Base::Param(0);
    const Q: Base = Base::Param(1);

    #[test]
    fn read_only_kernels_and_single_stores_are_independent() {
        // Loads only.
        assert!(verdict(&kernel("ld.global.f32 %f1, [%rd4];\nld.f32 %f2, [%rd5];")).independent());
        // One store per thread, outside loops, whatever it reads through
        // read-only forms.
        assert!(verdict(&kernel(
            "ld.global.nc.f32 %f1, [%rd4];\nldu.global.f32 %f2, [%rd4+4];\nadd.f32 %f3, %f1, %f2;\nst.global.f32 [%rd5], %f3;"
        ))
        .independent());
        // The same atomic once per thread: lane order is one of the orders
        // the GPU's single instruction may take.
        assert!(verdict(&kernel("atom.global.add.u32 %r2, [%rd1], 1;")).independent());
        // Local and parameter memory are the thread's own.
        assert!(verdict(&kernel(
            ".local .align 4 .b8 buf[16];\nst.local.u32 [buf], %r1;\nld.local.u32 %r2, [buf];\nst.global.u32 [%rd4], %r2;"
        ))
        .independent());
    }

    #[test]
    fn commuting_reductions_are_independent() {
        let v = verdict(&kernel(
            "$L1:\nred.global.add.u32 [%rd1], 1;\nred.global.add.u32 [%rd2+8], %r1;\nadd.u32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 9;\n@%p1 bra $L1;",
        ));
        assert!(v.independent(), "{v:?}");
        // Different operations do not commute with each other.
        let v = verdict(&kernel("red.global.add.u32 [%rd1], 1;\nred.global.max.u32 [%rd1], %r1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // (Through two pointers: unless they are apart.)
        let c = conditions(&verdict(&kernel("red.global.add.u32 [%rd1], 1;\nred.global.max.u32 [%rd2], %r1;")));
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: false, min: 4, wrap: 0 }]);
        // Nor do float additions (rounding depends on the order).
        let v = verdict(&kernel("$L1:\nred.global.add.f32 [%rd1], 1.0;\nbra $L1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::RepeatedWrite));
    }

    #[test]
    fn own_elements_through_two_pointers_need_them_apart() {
        // saxpy: the load through `q` may read what another lane's store
        // through `p` writes unless the pointers are equal (each lane its
        // own element) or far enough apart; both lanes' addresses move by
        // 4 bytes per lane, so 31 * 4 + 4 bytes keep 32 lanes apart.
        let v =
            verdict(&kernel("ld.global.f32 %f1, [%rd5];\nld.global.f32 %f2, [%rd4];\nadd.f32 %f3, %f1, %f2;\nst.global.f32 [%rd4], %f3;"));
        let c = conditions(&v);
        assert!(c.one_dimensional);
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: true, min: 128, wrap: 4 << 32 }]);
        // Through one pointer, each lane its own element: no distance to
        // check, only that the lanes have consecutive %tid.x.
        let c = conditions(&verdict(&kernel("ld.global.f32 %f1, [%rd4];\nadd.f32 %f2, %f1, %f1;\nst.global.f32 [%rd4], %f2;")));
        assert!(c.one_dimensional && c.apart.is_empty());
        // Generic addressing and `cvta.to.global` are the same.
        let c = conditions(&verdict(&kernel(
            "cvta.to.global.u64 %rd6, %rd2;\nadd.s64 %rd7, %rd6, %rd3;\nld.u32 %r2, [%rd7+8];\nst.u32 [%rd4], %r2;",
        )));
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 8, equal: true, min: 128, wrap: 4 << 32 }]);
        // Vector accesses: 16 bytes per lane.
        let c = conditions(&verdict(&kernel(
            "mul.wide.u32 %rd6, %r1, 16;\nadd.s64 %rd7, %rd1, %rd6;\nadd.s64 %rd8, %rd2, %rd6;\nld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd8];\n\
             st.global.v4.u32 [%rd7], {%r2, %r3, %r4, %r5};",
        )));
        assert_eq!(c.apart, vec![Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: true, min: 31 * 16 + 16, wrap: 16 << 32 }]);
    }

    #[test]
    fn distances_near_a_wrapped_lane_do_not_keep_lanes_apart() {
        let ap = Apart { a: P, a_offset: 0, b: Q, b_offset: 0, equal: true, min: 128, wrap: 4 << 32 };
        for (d, ok) in [
            (0i64, true),
            (4, false),
            (-124, false),
            (128, true),
            (-128, true),
            (1 << 31, true),
            (1 << 33, true),
            ((4 << 32) - 128, true),
            ((4 << 32) - 127, false),
            (4 << 32, false),
            (-(4 << 32) + 60, false),
            ((4 << 32) + 128, true),
            (1 << 40, true),
        ] {
            assert_eq!(ap.holds(d), ok, "{d}");
        }
        // Every distance the check accepts keeps every pair of lanes whose
        // 32-bit indices differ by 1..31, wrapped or not, at least 4 bytes
        // apart.
        for d in [0i64, 128, 1000, (4 << 32) - 128, (4 << 32) + 128, -(4 << 32) - 128, 1 << 40] {
            assert!(ap.holds(d));
            for k in (-31i64..=31).filter(|&k| k != 0) {
                for wrapped in [k, k + (1 << 32), k - (1 << 32)] {
                    assert!((d + 4 * wrapped).unsigned_abs() >= 4, "d {d}, lanes {wrapped} apart");
                }
            }
        }
    }

    #[test]
    fn neighbours_through_one_pointer_exchange() {
        // An in-place stencil: lane i reads what lane i + 1 writes.
        let v = verdict(&kernel("ld.global.f32 %f1, [%rd4+4];\nst.global.f32 [%rd4], %f1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // Far enough apart within one pointer: known when compiled.
        let c = conditions(&verdict(&kernel("ld.global.f32 %f1, [%rd4+4096];\nst.global.f32 [%rd4], %f1;")));
        assert!(c.one_dimensional && c.apart.is_empty());
        // Elements smaller than the lanes' step overlap: 8-byte accesses 4
        // bytes apart.
        let v = verdict(&kernel("ld.global.u64 %rd9, [%rd4];\nst.global.u64 [%rd4], %rd9;"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
    }

    #[test]
    fn addresses_the_analysis_cannot_follow_exchange() {
        // Another lane's element (index ^ 1).
        let v = verdict(&kernel(
            "st.global.u32 [%rd4], %r1;\nxor.b32 %r2, %r1, 1;\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.u32 %r3, [%rd7];",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // An index loaded from memory.
        let v = verdict(&kernel(
            "ld.global.u32 %r2, [%rd5];\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nst.global.u32 [%rd7], %r1;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // A register written twice (here by a guarded write) is not followed.
        let v = verdict(&kernel(
            "setp.lt.u32 %p1, %r1, 4;\nmov.u64 %rd6, %rd4;\n@%p1 mov.u64 %rd6, %rd5;\nld.global.u32 %r2, [%rd6];\nst.global.u32 [%rd4], %r2;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // Every lane at one address: lanes overwrite each other's stores.
        let v = verdict(&kernel("st.global.u32 [%rd1], %r1;\nld.global.u32 %r2, [%rd1];"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // Two uniform addresses far enough apart never meet.
        assert!(verdict(&kernel("st.global.u32 [%rd1], %r1;\nld.global.u32 %r2, [%rd1+4];")).independent());
        // Volatile loads are loads.
        let v = verdict(&kernel("st.global.u32 [%rd4], %r1;\nld.volatile.global.u32 %r2, [%rd4+4];"));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
    }

    /// Whether `d` holds for pointers `p` and `q` (parameters 0 and 1),
    /// 32-bit parameters read from `ints` by variable id, and a launch of
    /// `grid` blocks of `block` threads.
    fn launch_holds(d: &Disjoint<Base, VarId>, p: u64, q: u64, ints: &[(VarId, u32)], grid: [u32; 3], block: [u32; 3]) -> bool {
        let fields: Vec<(VarId, u32, u32)> = ints.iter().map(|&(v, x)| (v, 0, x)).collect();
        launch_holds_fields(d, p, q, &fields, grid, block)
    }

    /// [`launch_holds`] with 32-bit parameters given as (parameter, byte
    /// within it, value).
    fn launch_holds_fields(d: &Disjoint<Base, VarId>, p: u64, q: u64, ints: &[(VarId, u32, u32)], grid: [u32; 3], block: [u32; 3]) -> bool {
        let base = |b: &Base| match b {
            Base::None => Some(0),
            Base::Param(0) => Some(p),
            Base::Param(1) => Some(q),
            _ => None,
        };
        let param = |v: &VarId, field: u32, signed: bool| {
            ints.iter().find(|(w, f, _)| w == v && *f == field).map(|&(_, _, x)| if signed { i64::from(x as i32) } else { i64::from(x) })
        };
        d.holds(&base, &param, grid, block)
    }

    /// CUDA's fast-division constants for a divisor (as llama.cpp's
    /// `init_fastdiv_values` makes them): `(m, s)` with `s = ceil(log2
    /// d)` and `m = floor(2^32 (2^s - d) / d) + 1`.
    fn magic(d: u32) -> (u32, u32) {
        let s = 32 - (d - 1).leading_zeros();
        let m = ((1u64 << 32) * ((1u64 << s) - u64::from(d)) / u64::from(d) + 1) as u32;
        (m, s)
    }

    /// The quotient the PTX computes: `(mul.hi.u32(x, m) + x) >> s` in
    /// 32-bit registers.
    fn fast_quotient(x: u32, m: u32, s: u32) -> u32 {
        let hi = ((u64::from(x) * u64::from(m)) >> 32) as u32;
        hi.wrapping_add(x).wrapping_shr(s)
    }

    #[test]
    fn fast_division_is_exact_only_when_proved() {
        // Soundness: wherever the check says exact, every x up to the top
        // divides exactly (all small constant triples, every x).
        let mut accepted = 0;
        for d in 1u32..=40 {
            for s in 0u32..=7 {
                for m in (0u32..=600).chain([u32::MAX / 3, u32::MAX / 2, u32::MAX - 1, u32::MAX]) {
                    for top in [0u32, 1, 7, 50, 300, 2000] {
                        if fast_division_exact(i128::from(m), i128::from(s), i128::from(d), i128::from(top)) {
                            accepted += 1;
                            for x in 0..=top {
                                assert_eq!(fast_quotient(x, m, s), x / d, "x {x} m {m} s {s} d {d}");
                            }
                        }
                    }
                }
            }
        }
        assert!(accepted > 1000, "{accepted}");
        // llama.cpp's constants pass for the indices its kernels divide
        // (below 2^31), and fail where the 32-bit sum wraps.
        for d in [1u32, 2, 3, 7, 64, 4096, 5120, 151_936, (1 << 31) - 1] {
            let (m, s) = magic(d);
            assert!(fast_division_exact(i128::from(m), i128::from(s), i128::from(d), (1 << 31) - 1), "d {d}");
            for x in [0u32, 1, d - 1, d, d.wrapping_mul(3).min((1 << 31) - 1), (1 << 31) - 1] {
                assert_eq!(fast_quotient(x, m, s), x / d);
            }
        }
        let (m, s) = magic(7);
        assert!(!fast_division_exact(i128::from(m), i128::from(s), 7, u32::MAX.into()), "the sum wraps near 2^32");
        // Constants of another divisor, or one too small, are refused.
        let (m5, s5) = magic(5);
        assert!(!fast_division_exact(i128::from(m5), i128::from(s5), 7, 1000));
        assert!(!fast_division_exact(i128::from(m - 1), i128::from(s), 7, 1000));
        assert!(!fast_division_exact(i128::from(m), i128::from(s), 0, 1000));
        assert!(!fast_division_exact(i128::from(m), 32, 7, 1000));
    }

    #[test]
    fn remainder_ranges_match_every_thread() {
        // x = %tid.x, its remainder by d (constants from the parameter
        // `p`'s fields), over one block of n threads: the interval is
        // exactly the remainders' (or [0, d) when x crosses a multiple).
        let prog = vec![
            Op::Special(Launch::Tid, 0),
            Op::Field { at: 0u32, field: 0, signed: false },
            Op::Field { at: 0, field: 4, signed: false },
            Op::Field { at: 0, field: 8, signed: false },
            Op::Rem,
        ];
        for d in [1u32, 3, 7, 32, 100] {
            let (m, s) = magic(d);
            let fields = [m, s, d];
            let param = |_: &u32, field: u32, _: bool| fields.get(field as usize / 4).map(|&x| i64::from(x));
            for n in [1u32, 2, 5, 31, 64, 300] {
                let (lo, hi) = value_range(&prog, &param, [1, 1, 1], [n, 1, 1]).expect("bounded");
                let rems: Vec<u32> = (0..n).map(|x| x - fast_quotient(x, m, s) * d).collect();
                let (min, max) = (*rems.iter().min().unwrap_or(&0), *rems.iter().max().unwrap_or(&0));
                assert!(lo <= i128::from(min) && i128::from(max) <= hi && hi < i128::from(d), "d {d} n {n}: {lo}..{hi}");
            }
            // The constants of another divisor prove nothing.
            let wrong = [magic(d + 1).0, magic(d + 1).1, d];
            let param = |_: &u32, field: u32, _: bool| wrong.get(field as usize / 4).map(|&x| i64::from(x));
            if d > 1 {
                assert_eq!(value_range(&prog, &param, [1, 1, 1], [300, 1, 1]), None, "d {d}");
            }
        }
        // A multiply-high and shift on their own are exact intervals.
        let (m, s) = magic(12);
        let q = vec![
            Op::Special(Launch::Tid, 0),
            Op::Const(i64::from(m)),
            Op::MulHi,
            Op::Special(Launch::Tid, 0),
            Op::Add,
            Op::Const(i64::from(s)),
            Op::Shr,
        ];
        let none = |_: &u32, _: u32, _: bool| None;
        assert_eq!(value_range(&q, &none, [1, 1, 1], [100, 1, 1]), Some((0, 99 / 12)));
        // Past 2^32 a 32-bit register is not the exact value.
        let big = vec![Op::Const(1 << 32), Op::Const(3), Op::MulHi];
        assert_eq!(value_range(&big, &none, [1, 1, 1], [1, 1, 1]), None);
        let neg = vec![Op::Const(-1), Op::Wide { signed: false }];
        assert_eq!(value_range(&neg, &none, [1, 1, 1], [1, 1, 1]), None);
        assert_eq!(value_range(&[Op::Const(-1), Op::Wide { signed: true }], &none, [1, 1, 1], [1, 1, 1]), Some((-1, -1)));
    }

    #[test]
    fn sixty_four_bit_divisions_and_selections_range_every_value() {
        // x = ctaid.x * ntid.x + tid.x over the launch, d a 64-bit
        // parameter (words 0 and 4 of `p`): the intervals hold every
        // thread's x / d and x % d.
        let x = [Op::Special(Launch::Ctaid, 0), Op::Special(Launch::Ntid, 0), Op::Mul, Op::Special(Launch::Tid, 0), Op::Add];
        let d64 =
            [Op::Param { at: 0u32, signed: false }, Op::Field { at: 0, field: 4, signed: true }, Op::Const(1 << 32), Op::Mul, Op::Add];
        let prog = |last: Op<u32>| -> Vec<Op<u32>> { x.iter().chain(&d64).copied().chain([last]).collect() };
        let words = |d: i64| {
            move |_: &u32, field: u32, signed: bool| -> Option<i64> {
                let w = if field == 0 { d as u32 } else { (d >> 32) as u32 };
                Some(if signed { i64::from(w as i32) } else { i64::from(w) })
            }
        };
        for d in [1i64, 3, 7, 60, 64, 1000, (1 << 32) + 5] {
            for (grid, block) in [(1u32, 1u32), (1, 37), (4, 128), (3, 100)] {
                let n = i64::from(grid * block);
                let (q, r) = (
                    value_range(&prog(Op::Div), &words(d), [grid, 1, 1], [block, 1, 1]),
                    value_range(&prog(Op::Mod), &words(d), [grid, 1, 1], [block, 1, 1]),
                );
                let ((q0, q1), (r0, r1)) = (q.expect("bounded"), r.expect("bounded"));
                for i in 0..n {
                    assert!((q0..=q1).contains(&i128::from(i / d)), "d {d} n {n}: {i} / d outside {q0}..{q1}");
                    assert!((r0..=r1).contains(&i128::from(i % d)), "d {d} n {n}: {i} % d outside {r0}..{r1}");
                }
                assert!(r1 < i128::from(d) && r1 < i128::from(n), "d {d} n {n}: {r0}..{r1}");
            }
        }
        // Nothing is claimed for a divisor that may be 0 or negative, or
        // a dividend that may be negative (truncation is not flooring).
        for d in [0i64, -3, -(1 << 40)] {
            assert_eq!(value_range(&prog(Op::Div), &words(d), [1, 1, 1], [8, 1, 1]), None, "d {d}");
            assert_eq!(value_range(&prog(Op::Mod), &words(d), [1, 1, 1], [8, 1, 1]), None, "d {d}");
        }
        let below = [Op::Special(Launch::Tid, 0), Op::Const(4), Op::Sub, Op::Const(3), Op::Div];
        assert_eq!(value_range(&below, &words(1), [1, 1, 1], [8, 1, 1]), None);
        // A selection lies between its two operands' extremes.
        let pick = [Op::Special(Launch::Tid, 0), Op::Const(100), Op::Special(Launch::Tid, 0), Op::Sub, Op::Either];
        assert_eq!(value_range(&pick, &words(1), [1, 1, 1], [8, 1, 1]), Some((0, 100)));
        // An exit's bound caps the interval; a bound below every value
        // (no thread passes the exit) gives none.
        let capped = |n: i64| [Op::Special(Launch::Tid, 0), Op::Const(5), Op::Add, Op::Const(n), Op::Min];
        assert_eq!(value_range(&capped(7), &words(1), [1, 1, 1], [8, 1, 1]), Some((5, 7)));
        assert_eq!(value_range(&capped(100), &words(1), [1, 1, 1], [8, 1, 1]), Some((5, 12)));
        assert_eq!(value_range(&capped(4), &words(1), [1, 1, 1], [8, 1, 1]), None);
    }

    /// `dst[i] = src[(i / n) * stride + i % n]` with `i = blockIdx.x *
    /// blockDim.x + threadIdx.x` and 64-bit `n` and `stride` (parameters
    /// 2 and 3), the division as nvcc emits it for 64-bit operands: a
    /// 32-bit fast path when both fit, the quotient and remainder merged
    /// from the two sides at the join.
    const DIAMOND: &str = ".visible .entry k(.param .u64 dst, .param .u64 src, .param .u64 n, .param .u64 stride)\n{\n\
        .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<4>;\n.reg .b64 %rd<40>;\n\
        ld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [src];\nld.param.u64 %rd3, [n];\nld.param.u64 %rd4, [stride];\n\
        mov.u32 %r1, %ntid.x;\nmov.u32 %r2, %ctaid.x;\nmul.wide.u32 %rd5, %r1, %r2;\nmov.u32 %r3, %tid.x;\ncvt.u64.u32 %rd6, %r3;\n\
        add.s64 %rd7, %rd5, %rd6;\nor.b64 %rd8, %rd7, %rd3;\nand.b64 %rd9, %rd8, -4294967296;\nsetp.eq.s64 %p1, %rd9, 0;\n\
        @%p1 bra $L__fast;\ndiv.s64 %rd30, %rd7, %rd3;\nmul.lo.s64 %rd10, %rd30, %rd3;\nsub.s64 %rd31, %rd7, %rd10;\n\
        bra.uni $L__join;\n$L__fast:\ncvt.u32.u64 %r4, %rd3;\ncvt.u32.u64 %r5, %rd7;\ndiv.u32 %r6, %r5, %r4;\n\
        mul.lo.s32 %r7, %r6, %r4;\nsub.s32 %r8, %r5, %r7;\ncvt.u64.u32 %rd30, %r6;\ncvt.u64.u32 %rd31, %r8;\n$L__join:\n\
        mul.lo.s64 %rd11, %rd30, %rd4;\nadd.s64 %rd12, %rd11, %rd31;\nshl.b64 %rd13, %rd12, 2;\nadd.s64 %rd14, %rd2, %rd13;\n\
        ld.global.f32 %f1, [%rd14];\nshl.b64 %rd15, %rd7, 2;\nadd.s64 %rd16, %rd1, %rd15;\nst.global.f32 [%rd16], %f1;\nret;\n}\n";

    /// [`launch_holds_fields`] for [`DIAMOND`]'s 64-bit `n` and `stride`.
    fn diamond_holds(d: &Disjoint<Base, VarId>, dst: u64, src: u64, n: i64, stride: i64, grid: u32) -> bool {
        let words = |v: VarId, x: i64| [(v, 0, x as u32), (v, 4, (x >> 32) as u32)];
        let f: Vec<(VarId, u32, u32)> = words(2, n).into_iter().chain(words(3, stride)).collect();
        launch_holds_fields(d, dst, src, &f, [grid, 1, 1], [128, 1, 1])
    }

    #[test]
    fn divisions_with_a_32_bit_fast_path_are_one_quotient() {
        let d = only_disjoint(&verdict(DIAMOND));
        // 4 blocks of 128: i < 512, rows of 60 (i / 60 <= 8, i % 60 < 60),
        // src rows 100 elements apart: src's bytes [0, 4 * (8 * 100 +
        // 60)), dst's [0, 2048).
        let p = 0x10_0000u64;
        let src_bytes = 4 * (8 * 100 + 60);
        assert!(diamond_holds(&d, p, p + 2048, 60, 100, 4), "src right after dst");
        assert!(!diamond_holds(&d, p, p + 2044, 60, 100, 4), "one element of overlap");
        assert!(diamond_holds(&d, p + src_bytes, p, 60, 100, 4), "dst right after src");
        assert!(!diamond_holds(&d, p + src_bytes - 4, p, 60, 100, 4), "dst's first element in src's last row");
        assert!(!diamond_holds(&d, p + src_bytes, p, 60, 100, 5), "one more block reaches dst");
        // A divisor past 32 bits takes the 64-bit side: one row.
        assert!(diamond_holds(&d, p + 2048, p, (1 << 32) + 60, 100, 4));
        // A divisor that may be 0 or negative proves nothing.
        assert!(!diamond_holds(&d, p, p + (1 << 30), 0, 100, 4));
        assert!(!diamond_holds(&d, p, p + (1 << 30), -60, 100, 4));
    }

    #[test]
    fn divisions_whose_sides_differ_are_not_merged() {
        // Each change leaves a side that computes something else than the
        // other, or a way to the read that neither side's write covers.
        let cases = [
            // The test checks another value than the divisor.
            ("or.b64 %rd8, %rd7, %rd3;", "or.b64 %rd8, %rd7, %rd4;"),
            // The test checks the low words.
            ("and.b64 %rd9, %rd8, -4294967296;", "and.b64 %rd9, %rd8, 4294967295;"),
            // The fast path runs when the operands do not fit.
            ("@%p1 bra $L__fast;", "@!%p1 bra $L__fast;"),
            // The 32-bit side divides another value.
            ("cvt.u32.u64 %r5, %rd7;", "cvt.u32.u64 %r5, %rd4;"),
            // A signed 32-bit division reads values past 2^31 as negative.
            ("div.u32 %r6, %r5, %r4;", "div.s32 %r6, %r5, %r4;"),
            // The 64-bit side divides by another value.
            ("div.s64 %rd30, %rd7, %rd3;", "div.s64 %rd30, %rd7, %rd4;"),
            // The remainder subtracts another multiple.
            ("mul.lo.s64 %rd10, %rd30, %rd3;", "mul.lo.s64 %rd10, %rd30, %rd4;"),
            // A second way into the fast path, with no test of the operands.
            ("or.b64 %rd8,", "setp.eq.s64 %p2, %rd4, 0;\n@%p2 bra $L__fast;\nor.b64 %rd8,"),
            // A way to the read past both sides (the remainder unwritten).
            ("or.b64 %rd8,", "setp.eq.s64 %p2, %rd4, 0;\n@%p2 bra $L__mid;\nor.b64 %rd8,"),
        ];
        for (from, to) in cases {
            let mut src = DIAMOND.replace(from, to);
            if to.contains("$L__mid") {
                src = src.replace("add.s64 %rd12,", "$L__mid:\nadd.s64 %rd12,");
            }
            assert_ne!(src, DIAMOND);
            assert_eq!(kind(&verdict(&src)), Some(ExchangeKind::GlobalPair), "{to}");
        }
    }

    /// [`DIAMOND`] behind `if (i >= k) return;` (`k` a 64-bit parameter,
    /// variable 4), `change` applied to the exit's lines.
    fn diamond_exit(change: &dyn Fn(String) -> String) -> String {
        let exit = change("ld.param.u64 %rd17, [k];\nsetp.ge.s64 %p3, %rd7, %rd17;\n@%p3 bra $L__done;\n".to_string());
        DIAMOND
            .replace(".param .u64 stride)", ".param .u64 stride, .param .u64 k)")
            .replace("add.s64 %rd7, %rd5, %rd6;\n", &format!("add.s64 %rd7, %rd5, %rd6;\n{exit}"))
            .replace("ret;\n}", "$L__done:\nret;\n}")
    }

    /// Whether `d` holds for [`diamond_exit`]'s kernel: `n` 64, `stride`
    /// 100, `k`, 4 blocks of 128.
    fn exit_holds(d: &Disjoint<Base, VarId>, dst: u64, src: u64, k: i64) -> bool {
        let words = |v: VarId, x: i64| [(v, 0, x as u32), (v, 4, (x >> 32) as u32)];
        let f: Vec<(VarId, u32, u32)> = [words(2, 64), words(3, 100), words(4, k)].concat();
        launch_holds_fields(d, dst, src, &f, [4, 1, 1], [128, 1, 1])
    }

    #[test]
    fn an_early_exit_bounds_64_bit_values() {
        let d = only_disjoint(&verdict(&diamond_exit(&|e| e)));
        let p = 0x10_0000u64;
        // i <= 447: dst's bytes [0, 1792); i / 64 <= 6, src's [0, 4 * (600
        // + 64)) = [0, 2656).
        assert!(exit_holds(&d, p, p + 1792, 448));
        assert!(!exit_holds(&d, p, p + 1788, 448));
        assert!(exit_holds(&d, p + 2656, p, 448));
        assert!(!exit_holds(&d, p + 2652, p, 448));
        // A bound past the grid leaves the grid's: i <= 511, dst [0, 2048).
        assert!(exit_holds(&d, p, p + 2048, 1 << 40));
        assert!(!exit_holds(&d, p, p + 1792, 1 << 40));
        // An exit the reads may bypass, or one that does not bound `i`
        // from above on the way through, bounds nothing.
        let cases: [&dyn Fn(String) -> String; 5] = [
            &|e| format!("setp.eq.s64 %p2, %rd4, 0;\n@%p2 bra $L__in;\n{e}$L__in:\n"),
            &|e| e.replace("@%p3 bra", "@!%p3 bra"),
            &|e| e.replace("setp.ge.s64 %p3, %rd7,", "setp.le.s64 %p3, %rd7,"),
            &|e| e.replace("setp.ge.s64 %p3, %rd7,", "setp.ge.s64 %p3, %rd4,"),
            &|e| e.replace("setp.ge.s64", "setp.ge.u64"),
        ];
        for (n, change) in cases.iter().enumerate() {
            let src = diamond_exit(change);
            let d = only_disjoint(&verdict(&src));
            assert!(!exit_holds(&d, p, p + 1792, 448), "case {n}");
            assert!(exit_holds(&d, p, p + 2048, 448), "case {n}: the grid's bound");
        }
        // An exit whose branch lands between it and the reads does not
        // leave: taken, `i` may be anything.
        let inside = diamond_exit(&|e| e.replace("$L__done", "$L__in") + "$L__in:\n");
        let d = only_disjoint(&verdict(&inside));
        assert!(!exit_holds(&d, p, p + 1792, 448));
    }

    #[test]
    fn selections_bound_values_but_never_equate_them() {
        // x % d written as x - (x' / d) * d where x and x' select between
        // the same two values on different predicates: equal computations,
        // not equal values, so no remainder is claimed.
        let src = DIAMOND.replace(
            "shl.b64 %rd13, %rd12, 2;",
            "setp.lt.u32 %p2, %r3, 7;\nsetp.lt.u32 %p3, %r3, 9;\nselp.b64 %rd20, %rd7, %rd4, %p2;\nselp.b64 %rd21, %rd7, %rd4, %p3;\n\
             div.s64 %rd22, %rd21, %rd3;\nmul.lo.s64 %rd23, %rd22, %rd3;\nsub.s64 %rd12, %rd20, %rd23;\nshl.b64 %rd13, %rd12, 2;",
        );
        let d = only_disjoint(&verdict(&src));
        let load = if d.a.base == Base::Param(1) { &d.a } else { &d.b };
        let ops = &load.index.as_ref().expect("indexed").value;
        assert!(ops.contains(&Op::Either) && !ops.contains(&Op::Mod), "{ops:?}");
    }

    /// A kernel unravelling `i = blockIdx.x * blockDim.x + threadIdx.x`
    /// into `(i / d, i % d)` with fast-division constants from the `uint3`
    /// parameter `c` (`m`, `s`, `d`) and `REM` as the remainder's
    /// computation (`%r9`, from the quotient `%r8`), then `dst[(i / d) *
    /// stride + i % d] = src[i % d]` (f32; `dst`, `src` and `stride` as
    /// parameters, the address a 64-bit sum).
    fn unravel_kernel(rem: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 dst, .param .u64 src, .param .align 4 .b8 c[12], .param .u32 stride)\n{{\n\
             .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<4>;\n.reg .b64 %rd<16>;\n\
             ld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [src];\nld.param.u32 %r1, [c];\nld.param.u32 %r2, [c+4];\n\
             ld.param.u32 %r3, [c+8];\nld.param.u32 %r4, [stride];\nmov.u32 %r5, %ctaid.x;\nmov.u32 %r6, %ntid.x;\n\
             mov.u32 %r7, %tid.x;\nmad.lo.s32 %r10, %r5, %r6, %r7;\nmul.hi.u32 %r11, %r10, %r1;\nadd.s32 %r12, %r11, %r10;\n\
             shr.u32 %r8, %r12, %r2;\n{rem}\nmul.wide.u32 %rd3, %r8, %r4;\ncvt.u64.u32 %rd4, %r9;\nadd.s64 %rd5, %rd3, %rd4;\n\
             shl.b64 %rd6, %rd5, 2;\ncvta.to.global.u64 %rd7, %rd1;\nadd.s64 %rd8, %rd7, %rd6;\nmul.wide.u32 %rd9, %r9, 4;\n\
             cvta.to.global.u64 %rd10, %rd2;\nadd.s64 %rd11, %rd10, %rd9;\nld.global.f32 %f1, [%rd11];\nst.global.f32 [%rd8], %f1;\n\
             ret;\n}}\n"
        )
    }

    const REMAINDER: &str = "mul.lo.s32 %r13, %r8, %r3;\nsub.s32 %r9, %r10, %r13;";

    /// `for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; STEP)
    /// dst[i] = src[i];` (f32, unsigned 32-bit `i`; `STEP` the counter's
    /// update, `%r7` = `blockDim.x * gridDim.x`).
    fn grid_stride_kernel(step: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 dst, .param .u64 src, .param .u32 n)\n{{\n.reg .pred %p<8>;\n.reg .b32 %r<16>;\n\
             .reg .f32 %f<4>;\n.reg .b64 %rd<16>;\nld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [src];\nld.param.u32 %r1, [n];\n\
             mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\nmad.lo.s32 %r5, %r3, %r2, %r4;\n\
             mov.u32 %r6, %nctaid.x;\nmul.lo.s32 %r7, %r3, %r6;\nsetp.ge.u32 %p1, %r5, %r1;\n@%p1 bra $L__done;\n\
             cvta.to.global.u64 %rd3, %rd1;\ncvta.to.global.u64 %rd4, %rd2;\n$L__loop:\ncvt.u64.u32 %rd5, %r5;\n\
             shl.b64 %rd6, %rd5, 2;\nadd.s64 %rd7, %rd4, %rd6;\nld.global.f32 %f1, [%rd7];\nadd.s64 %rd8, %rd3, %rd6;\n\
             st.global.f32 [%rd8], %f1;\n{step}\nsetp.lt.u32 %p2, %r5, %r1;\n@%p2 bra $L__loop;\n$L__done:\nret;\n}}\n"
        )
    }

    const GRID_STEP: &str = "add.s32 %r5, %r5, %r7;";

    #[test]
    fn grid_stride_loops_store_each_element_from_one_thread() {
        let c = conditions(&verdict(&grid_stride_kernel(GRID_STEP)));
        assert!(c.apart.is_empty() && !c.one_dimensional, "{c:?}");
        assert_eq!((c.disjoint.len(), c.injective.len()), (1, 1), "{c:?}");
        let holds = |dst: u64, src: u64, n: u32, grid: [u32; 3], block: [u32; 3]| {
            let base = |b: &Base| match b {
                Base::Param(0) => Some(dst),
                Base::Param(1) => Some(src),
                _ => None,
            };
            let param = |v: &VarId, field: u32, _: bool| (*v == 2 && field == 0).then_some(i64::from(n));
            c.disjoint.iter().all(|d| d.holds(&base, &param, grid, block))
                && c.injective.iter().all(|d| d.holds(&base, &param, grid, block))
        };
        let p = 0x10_0000u64;
        let (g, b) = ([4, 1, 1], [128, 1, 1]);
        // 1000 floats, 512 threads: every element from one thread.
        assert!(holds(p, p + 4000, 1000, g, b), "src right after dst");
        assert!(!holds(p, p + 3996, 1000, g, b), "one element of overlap");
        // Rows of threads (y) or layers of blocks (z) would store the same
        // elements: the index does not tell them apart.
        assert!(!holds(p, p + 4000, 1000, g, [128, 2, 1]));
        assert!(!holds(p, p + 4000, 1000, [4, 1, 2], b));
        // A bound so close to 2^32 that a step could wrap the counter.
        assert!(!holds(p, p + (1 << 40), u32::MAX - 100, g, b));
        assert!(holds(p, p + (1 << 40), u32::MAX - 512, g, b));
        // Stepping by one: every thread walks the same elements from its
        // own start; only a launch of one thread keeps them apart.
        let c1 = conditions(&verdict(&grid_stride_kernel("add.s32 %r5, %r5, 1;")));
        let one = |grid: [u32; 3], block: [u32; 3]| {
            let base = |b: &Base| match b {
                Base::Param(0) => Some(p),
                Base::Param(1) => Some(p + 4000),
                _ => None,
            };
            let param = |v: &VarId, _: u32, _: bool| (*v == 2).then_some(1000);
            c1.injective.iter().all(|d| d.holds(&base, &param, grid, block))
        };
        assert!(!c1.injective.is_empty());
        assert!(!one(g, b) && !one([1, 1, 1], [2, 1, 1]) && one([1, 1, 1], [1, 1, 1]));
        // The counter stored through a remainder of itself (`dst[i % 4]`)
        // is not injective: no launch of more than one thread passes.
        let rem = grid_stride_kernel(GRID_STEP).replace(
            "add.s64 %rd8, %rd3, %rd6;",
            "and.b32 %r9, %r5, 3;\ncvt.u64.u32 %rd9, %r9;\nshl.b64 %rd10, %rd9, 2;\nadd.s64 %rd8, %rd3, %rd10;",
        );
        match verdict(&rem) {
            Verdict::IndependentIf(c) => {
                let base = |_: &Base| Some(p);
                let param = |_: &VarId, _: u32, _: bool| Some(1000);
                assert!(!c.injective.iter().all(|d| d.holds(&base, &param, g, b)), "{c:?}");
            }
            v => assert!(matches!(v, Verdict::Exchanges(_)), "{v:?}"),
        }
        // Without the loop's entry check the counter's first value is not
        // bounded: nothing is followed.
        let open = grid_stride_kernel(GRID_STEP).replace("@%p1 bra $L__done;", "");
        assert!(matches!(kind(&verdict(&open)), Some(ExchangeKind::GlobalPair | ExchangeKind::RepeatedWrite)));
    }

    /// The launch guard a unit of the first kernel of `src` carries (what
    /// the backend checks before each launch: parameters by byte offset),
    /// in the fast tier (the optimised one runs the diamond kernel, which
    /// divides by 64-bit values, as warps).
    fn unit_guard(src: &str) -> crate::LaunchGuard {
        let (src, k) = parse(src);
        let m = ptx::parse(&src).expect("test PTX parses");
        let info = crate::layout::describe_unit(
            &m,
            &Analysis::new(&m),
            &crate::Target::HostCpu,
            &crate::Options { tier: crate::Tier::Fast, ..crate::Options::default() },
            crate::Unit::Kernel(k),
        );
        let kernel = info.kernels.first().expect("the kernel");
        assert_eq!(kernel.lanes, 1, "thread by thread");
        kernel.lockstep_guard.clone().expect("a launch guard")
    }

    #[test]
    fn launch_guards_read_parameter_fields_at_their_offsets() {
        // The unravelling kernel: dst at 0, src at 8, c (m, s, d) at 16,
        // 20, 24, stride at 28.
        let g = unit_guard(&unravel_kernel(REMAINDER));
        let (m, s) = magic(60);
        let p = 0x10_0000u64;
        let params = |src: u64, m: u32| -> Vec<u8> {
            [
                p.to_le_bytes().to_vec(),
                src.to_le_bytes().to_vec(),
                m.to_le_bytes().to_vec(),
                s.to_le_bytes().to_vec(),
                60u32.to_le_bytes().to_vec(),
                100u32.to_le_bytes().to_vec(),
            ]
            .concat()
        };
        let no = |_: &str| None;
        assert!(g.holds(&params(p + 4 * 860, m), [4, 1, 1], [128, 1, 1], &no));
        assert!(!g.holds(&params(p + 4 * 859, m), [4, 1, 1], [128, 1, 1], &no));
        assert!(!g.holds(&params(p + 4 * 860, m - 1), [4, 1, 1], [128, 1, 1], &no));
        assert!(!g.holds(&params(p + 4 * 860, m)[..28], [4, 1, 1], [128, 1, 1], &no), "a parameter past the buffer");
        // The grid-stride loop: dst at 0, src at 8, n at 16.
        let g = unit_guard(&grid_stride_kernel(GRID_STEP));
        assert_eq!(g.injective.len(), 1);
        let params = |src: u64, n: u32| [p.to_le_bytes().to_vec(), src.to_le_bytes().to_vec(), n.to_le_bytes().to_vec()].concat();
        assert!(g.holds(&params(p + 4000, 1000), [4, 1, 1], [128, 1, 1], &no));
        assert!(!g.holds(&params(p + 3996, 1000), [4, 1, 1], [128, 1, 1], &no));
        assert!(!g.holds(&params(p + 4000, 1000), [4, 1, 1], [128, 2, 1], &no));
    }

    #[test]
    fn launch_guards_read_64_bit_parameters_as_their_two_words() {
        // The diamond kernel: dst at 0, src at 8, n at 16, stride at 24.
        let g = unit_guard(DIAMOND);
        let p = 0x10_0000u64;
        let params = |src: u64, n: i64, stride: i64| -> Vec<u8> {
            [p.to_le_bytes(), src.to_le_bytes(), n.to_le_bytes(), stride.to_le_bytes()].concat()
        };
        let no = |_: &str| None;
        let launch = |b: &[u8], grid: u32| g.holds(b, [grid, 1, 1], [128, 1, 1], &no);
        assert!(launch(&params(p + 2048, 60, 100), 4));
        assert!(!launch(&params(p + 2044, 60, 100), 4));
        assert!(!launch(&params(p + 2048, 60, 100), 5), "one more block reaches src");
        // Rows of 512: one row, src's bytes [0, 2048) whatever the stride.
        assert!(launch(&params(p + 2048, 512, 1 << 40), 4));
        // The high word counts: n = 2^32 + 60 is one row too.
        assert!(launch(&params(p + 2048, (1 << 32) + 60, 1 << 40), 4));
        // src below dst: its 9 rows of 100 end where dst starts, rows of
        // 2^32 + 100 reach far past it.
        assert!(launch(&params(p - 3440, 60, 100), 4));
        assert!(!launch(&params(p - 3440, 60, (1 << 32) + 100), 4), "a stride past 32 bits reaches dst");
        assert!(!launch(&params(p + 2048, 0, 100), 4), "division by 0");
        assert!(!launch(&params(p + 2048, 60, 100)[..28], 4), "a parameter past the buffer");
    }

    /// `dst[i] = src[i] + (opt ? opt[i] : 0)` in a grid-stride loop
    /// whose body is split into labelled blocks (the optional operand's
    /// load on a branch of its own), `COMBINE` making `%p5` from `%p3`
    /// (`opt` is null) and `%p4` (`src` is null), `BACK` the back edge.
    fn optional_operand_kernel(combine: &str, back: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 dst, .param .u64 src, .param .u32 n, .param .u64 opt)\n{{\n.reg .pred %p<8>;\n\
             .reg .b32 %r<16>;\n.reg .f32 %f<4>;\n.reg .b64 %rd<20>;\nld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [src];\n\
             ld.param.u32 %r1, [n];\nld.param.u64 %rd11, [opt];\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\n\
             mov.u32 %r4, %tid.x;\nmad.lo.s32 %r5, %r3, %r2, %r4;\nmov.u32 %r6, %nctaid.x;\nmul.lo.s32 %r7, %r3, %r6;\n\
             setp.ge.u32 %p1, %r5, %r1;\n@%p1 bra $L__done;\ncvta.to.global.u64 %rd3, %rd1;\ncvta.to.global.u64 %rd4, %rd2;\n\
             cvta.to.global.u64 %rd12, %rd11;\nsetp.eq.s64 %p3, %rd11, 0;\nselp.b64 %rd13, 0, %rd12, %p3;\n\
             setp.eq.s64 %p4, %rd2, 0;\n{combine}\n$L__loop:\n@%p5 bra $L__zero;\nbra.uni $L__load;\n$L__zero:\n\
             mov.f32 %f2, 0f00000000;\nbra.uni $L__body;\n$L__load:\ncvt.u64.u32 %rd14, %r5;\nshl.b64 %rd15, %rd14, 2;\n\
             add.s64 %rd16, %rd13, %rd15;\nld.global.f32 %f2, [%rd16];\n$L__body:\ncvt.u64.u32 %rd5, %r5;\n\
             shl.b64 %rd6, %rd5, 2;\nadd.s64 %rd7, %rd4, %rd6;\nld.global.f32 %f1, [%rd7];\nadd.f32 %f1, %f1, %f2;\n\
             add.s64 %rd8, %rd3, %rd6;\nst.global.f32 [%rd8], %f1;\nadd.s32 %r5, %r5, %r7;\n{back}\n$L__done:\nret;\n}}\n"
        )
    }

    #[test]
    fn loop_bodies_of_several_blocks_and_optional_operands() {
        let good = optional_operand_kernel("or.pred %p5, %p3, %p4;", "setp.lt.u32 %p2, %r5, %r1;\n@%p2 bra $L__loop;");
        let c = conditions(&verdict(&good));
        assert_eq!((c.disjoint.len(), c.injective.len()), (2, 1), "{c:?}");
        let p = 0x10_0000u64;
        let holds = |dst: u64, src: u64, opt: u64| {
            let base = |b: &Base| match b {
                Base::Param(0) => Some(dst),
                Base::Param(1) => Some(src),
                Base::Param(3) => Some(opt),
                _ => None,
            };
            let param = |v: &VarId, field: u32, _: bool| (*v == 2 && field == 0).then_some(1000);
            let (g, b) = ([4, 1, 1], [128, 1, 1]);
            c.disjoint.iter().all(|d| d.holds(&base, &param, g, b)) && c.injective.iter().all(|d| d.holds(&base, &param, g, b))
        };
        assert!(holds(p, p + 4000, p + 8000));
        assert!(!holds(p, p + 4000, p + 3996), "opt overlaps dst");
        assert!(!holds(p, p + 3996, p + 8000), "src overlaps dst");
        // `and.pred`: `%p5` false does not say `opt` is non-null, so the
        // select may give 0.
        let and = optional_operand_kernel("and.pred %p5, %p3, %p4;", "setp.lt.u32 %p2, %r5, %r1;\n@%p2 bra $L__loop;");
        assert_eq!(kind(&verdict(&and)), Some(ExchangeKind::GlobalPair));
        // A back edge that does not compare the counter with the bound.
        let unbounded = optional_operand_kernel("or.pred %p5, %p3, %p4;", "setp.lt.u32 %p2, %r7, %r1;\n@%p2 bra $L__loop;");
        assert!(matches!(verdict(&unbounded), Verdict::Exchanges(_)));
    }

    /// `for (int64_t i = START; i < n; i += STEP) dst[ROW * pitch + i] =
    /// tid;` with 64-bit `i`, `n` and `pitch` (`%rd6` the counter, `%rd9`
    /// the step, `%rd11` the row's offset; `%r1`-`%r3` = `ctaid.x`,
    /// `ntid.x`, `tid.x`). `start`, `step` and `row` replace the lines
    /// computing them; `cmp` is the loop's comparison type.
    fn grid_stride64_kernel(start: &str, step: &str, row: &str, cmp: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 dst, .param .u64 n, .param .u64 pitch)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<8>;\n\
             .reg .b64 %rd<16>;\nld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [n];\nld.param.u64 %rd3, [pitch];\n\
             mov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\nmov.u32 %r3, %tid.x;\n{start}\nsetp.ge.{cmp} %p1, %rd6, %rd2;\n\
             @%p1 bra $L__done;\nmov.u32 %r4, %nctaid.x;\ncvt.u64.u32 %rd7, %r4;\ncvt.u64.u32 %rd8, %r2;\n{step}\n\
             mov.u32 %r5, %ctaid.y;\n{row}\ncvta.to.global.u64 %rd12, %rd1;\n$L__loop:\nadd.s64 %rd13, %rd11, %rd6;\n\
             shl.b64 %rd14, %rd13, 2;\nadd.s64 %rd15, %rd12, %rd14;\nst.global.u32 [%rd15], %r3;\nadd.s64 %rd6, %rd6, %rd9;\n\
             setp.lt.{cmp} %p2, %rd6, %rd2;\n@%p2 bra $L__loop;\n$L__done:\nret;\n}}\n"
        )
    }

    const START_GLOBAL: &str = "mul.wide.u32 %rd4, %r1, %r2;\ncvt.u64.u32 %rd5, %r3;\nadd.s64 %rd6, %rd4, %rd5;";
    const STEP_GRID: &str = "mul.lo.s64 %rd9, %rd7, %rd8;";
    const ROW_SIGNED: &str = "cvt.s64.s32 %rd10, %r5;\nmul.lo.s64 %rd11, %rd10, %rd3;";

    #[test]
    fn sixty_four_bit_grid_stride_loops_store_each_element_from_one_thread() {
        // Every thread's stores, simulated as the PTX computes them (64-bit
        // registers wrapping, comparisons signed or not): whether two
        // threads write the same byte.
        type Start = dyn Fn(u64, u64, u64) -> u64;
        let collide =
            |start: &Start, step: u64, row: &dyn Fn(u64) -> u64, signed: bool, n: u64, pitch: u64, grid: [u32; 3], block: [u32; 3]| {
                let below = |i: u64| if signed { (i as i64) < (n as i64) } else { i < n };
                let mut seen = std::collections::HashMap::new();
                for cz in 0..grid[2] as u64 {
                    for cy in 0..grid[1] as u64 {
                        for cx in 0..grid[0] as u64 {
                            for tz in 0..block[2] as u64 {
                                for ty in 0..block[1] as u64 {
                                    for tx in 0..block[0] as u64 {
                                        let me = (cz, cy, cx, tz, ty, tx);
                                        let mut i = start(cx, u64::from(block[0]), tx);
                                        let mut runs = 0;
                                        while below(i) {
                                            let at = row(cy).wrapping_mul(pitch).wrapping_add(i).wrapping_mul(4);
                                            for byte in at..at + 4 {
                                                if *seen.entry(byte).or_insert(me) != me {
                                                    return true;
                                                }
                                            }
                                            i = i.wrapping_add(step);
                                            runs += 1;
                                            assert!(runs < 4096, "a test launch that runs too long");
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                false
            };
        let global = |cx: u64, ntid: u64, tx: u64| cx * ntid + tx;
        let check = |src: &str, start: &Start, step: &dyn Fn([u32; 3], [u32; 3]) -> u64, row: &dyn Fn(u64) -> u64, signed: bool| {
            let c = match verdict(src) {
                Verdict::IndependentIf(c) => c,
                v => {
                    assert!(matches!(v, Verdict::Exchanges(_)), "{v:?}");
                    return 0;
                }
            };
            assert!(!c.injective.is_empty(), "{c:?}");
            let mut passed = 0;
            let ns: [u64; 7] = [0, 1, 7, 40, 64, (-5i64) as u64, 1 << 40];
            let pitches: [u64; 6] = [0, 8, 39, 40, 64, (-64i64) as u64];
            let launches = [
                ([2, 1, 1], [4, 1, 1]),
                ([3, 2, 1], [4, 1, 1]),
                ([2, 2, 1], [8, 1, 1]),
                ([2, 2, 1], [4, 2, 1]),
                ([2, 1, 2], [4, 1, 1]),
                ([1, 3, 1], [1, 1, 1]),
            ];
            for n in ns {
                for pitch in pitches {
                    for (grid, block) in launches {
                        let param = |v: &VarId, field: u32, signed: bool| {
                            let x = match v {
                                1 => n,
                                2 => pitch,
                                _ => return None,
                            };
                            Some(match (field, signed) {
                                (0, false) => i64::from(x as u32),
                                (0, true) => i64::from(x as u32 as i32),
                                (4, true) => i64::from((x >> 32) as u32 as i32),
                                (4, false) => i64::from((x >> 32) as u32),
                                _ => return None,
                            })
                        };
                        let base = |b: &Base| (*b == P).then_some(0x1000_0000u64);
                        let holds = c.injective.iter().all(|d| d.holds(&base, &param, grid, block));
                        if n == 1 << 40 {
                            // Too long to simulate: a bound this far from
                            // 2^32 must fail the check (a step could wrap).
                            assert!(!holds, "n = 2^40 passed: {c:?}");
                            continue;
                        }
                        if holds {
                            passed += 1;
                            assert!(
                                !collide(start, step(grid, block), row, signed, n, pitch, grid, block),
                                "n {n} pitch {pitch} {grid:?} {block:?} passed, threads collide: {c:?}"
                            );
                        }
                    }
                }
            }
            passed
        };
        let grid_step = |g: [u32; 3], b: [u32; 3]| u64::from(g[0]) * u64::from(b[0]);
        let signed_row = |cy: u64| cy as u32 as i32 as i64 as u64;
        // The loop of `size_t`/`int64_t` counters: it applies (some launches
        // pass) and no launch that passes has two threads on one byte.
        for cmp in ["s64", "u64"] {
            let k = grid_stride64_kernel(START_GLOBAL, STEP_GRID, ROW_SIGNED, cmp);
            assert!(check(&k, &global, &grid_step, &signed_row, cmp == "s64") > 0, "{cmp}");
        }
        // The start widened as a 32-bit sum, the row widened without sign,
        // the step's product in 32 bits then widened.
        let k = grid_stride64_kernel(
            "mad.lo.s32 %r6, %r1, %r2, %r3;\ncvt.u64.u32 %rd6, %r6;",
            "mul.lo.s32 %r7, %r4, %r2;\ncvt.u64.u32 %rd9, %r7;",
            "cvt.u64.u32 %rd10, %r5;\nmul.lo.s64 %rd11, %rd3, %rd10;",
            "s64",
        );
        assert!(check(&k, &global, &grid_step, &|cy| cy, true) > 0);
        // A block index stepped by the grid's extent: each block's threads
        // all write the same elements, so only blocks of one thread pass.
        let k = grid_stride64_kernel("cvt.u64.u32 %rd6, %r1;", "mov.u64 %rd9, %rd7;", ROW_SIGNED, "s64");
        assert!(check(&k, &|cx, _, _| cx, &|g, _| u64::from(g[0]), &signed_row, true) > 0);
        // Where the rule must not apply: steps that let threads meet (by
        // one; by the block's size only), a start not the thread's own.
        for (start, step) in
            [(START_GLOBAL, "mov.u64 %rd9, 1;"), (START_GLOBAL, "mov.u64 %rd9, %rd8;"), ("cvt.u64.u32 %rd6, %r3;", STEP_GRID)]
        {
            let k = grid_stride64_kernel(start, step, ROW_SIGNED, "s64");
            let start_of = move |cx: u64, ntid: u64, tx: u64| match start {
                START_GLOBAL => cx * ntid + tx,
                _ => tx,
            };
            let step_of = move |g: [u32; 3], b: [u32; 3]| match step {
                STEP_GRID => u64::from(g[0]) * u64::from(b[0]),
                "mov.u64 %rd9, 1;" => 1,
                _ => u64::from(b[0]),
            };
            check(&k, &start_of, &step_of, &signed_row, true);
        }
        // A counter with a third write (reset inside the loop) is no
        // grid-stride counter.
        let k = grid_stride64_kernel(START_GLOBAL, STEP_GRID, ROW_SIGNED, "s64")
            .replace("st.global.u32 [%rd15], %r3;", "st.global.u32 [%rd15], %r3;\nselp.b64 %rd6, %rd6, 0, %p1;");
        assert!(matches!(verdict(&k), Verdict::Exchanges(_)) || conditions(&verdict(&k)).injective.is_empty());
    }

    /// `for (int64_t z = blockIdx.z; z < nz; z += gridDim.z) dst[(z / d) *
    /// s2 + (z % d) * s3 + threadIdx.x] = ...;` with CUDA's fast division
    /// of the truncated counter (`c` = `{m, s, d}`), the quotient `%r10`
    /// and the remainder `%r12` widened with their signs; `between` goes
    /// between the two, `rem` computes the remainder.
    fn split_counter_kernel(between: &str, rem: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 dst, .param .u64 nz, .param .align 4 .b8 c[12], .param .u64 s2, .param .u64 s3)\n{{\n\
             .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<24>;\nld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [nz];\n\
             ld.param.u32 %r1, [c];\nld.param.u32 %r2, [c+4];\nld.param.u32 %r3, [c+8];\nld.param.u64 %rd3, [s2];\n\
             ld.param.u64 %rd4, [s3];\nmov.u32 %r4, %ctaid.z;\ncvt.u64.u32 %rd5, %r4;\nsetp.le.s64 %p1, %rd2, %rd5;\n\
             @%p1 bra $L__done;\nmov.u32 %r5, %nctaid.z;\ncvt.u64.u32 %rd6, %r5;\nmov.u32 %r6, %tid.x;\n\
             cvt.u64.u32 %rd7, %r6;\ncvta.to.global.u64 %rd8, %rd1;\n$L__loop:\ncvt.u32.u64 %r7, %rd5;\n\
             mul.hi.u32 %r8, %r7, %r1;\nadd.s32 %r9, %r8, %r7;\nshr.u32 %r10, %r9, %r2;\n{between}\n{rem}\n\
             cvt.s64.s32 %rd9, %r10;\nmul.lo.s64 %rd10, %rd9, %rd3;\ncvt.s64.s32 %rd11, %r12;\nmul.lo.s64 %rd12, %rd11, %rd4;\n\
             add.s64 %rd13, %rd10, %rd12;\nadd.s64 %rd14, %rd13, %rd7;\nshl.b64 %rd15, %rd14, 2;\nadd.s64 %rd16, %rd8, %rd15;\n\
             st.global.u32 [%rd16], %r6;\nadd.s64 %rd5, %rd5, %rd6;\nsetp.lt.s64 %p2, %rd5, %rd2;\n@%p2 bra $L__loop;\n\
             $L__done:\nret;\n}}\n"
        )
    }

    const SPLIT_REM: &str = "mul.lo.s32 %r11, %r10, %r3;\nsub.s32 %r12, %r7, %r11;";

    #[test]
    fn quotient_and_remainder_of_a_truncated_counter_name_it() {
        // Every thread's stores as the PTX computes them: whether two
        // threads write the same byte. `plus` is added to `x` for the
        // remainder (the variant computing it from another value), `more`
        // to the quotient's shift (the variant whose quotient coordinate is
        // another division's).
        let collide = |d: u32, (plus, more): (u32, u32), nz: u64, s2: u64, s3: u64, grid: [u32; 3], block: [u32; 3]| {
            let (m, sh) = magic(d);
            let mut seen = std::collections::HashMap::new();
            for cz in 0..grid[2] {
                for cy in 0..grid[1] {
                    for cx in 0..grid[0] {
                        for ty in 0..block[1] * block[2] {
                            for tx in 0..block[0] {
                                let me = (cz, cy, cx, ty, tx);
                                let mut z = u64::from(cz);
                                while (z as i64) < (nz as i64) {
                                    let x = z as u32;
                                    let q = fast_quotient(x, m, sh + more);
                                    let r = x.wrapping_add(plus).wrapping_sub(fast_quotient(x, m, sh).wrapping_mul(d));
                                    let wide = |v: u32| v as i32 as i64 as u64;
                                    let at = wide(q)
                                        .wrapping_mul(s2)
                                        .wrapping_add(wide(r).wrapping_mul(s3))
                                        .wrapping_add(u64::from(tx))
                                        .wrapping_mul(4);
                                    for byte in at..at + 4 {
                                        if *seen.entry(byte).or_insert(me) != me {
                                            return true;
                                        }
                                    }
                                    z = z.wrapping_add(u64::from(grid[2]));
                                }
                            }
                        }
                    }
                }
            }
            false
        };
        let run = |src: &str, plus: (u32, u32)| -> (usize, bool) {
            let c = match verdict(src) {
                Verdict::IndependentIf(c) => c,
                v => {
                    assert!(matches!(v, Verdict::Exchanges(_)), "{v:?}");
                    return (0, false);
                }
            };
            let (mut passed, mut many_blocks) = (0, false);
            for d in [1u32, 3, 4] {
                let (m, sh) = magic(d);
                for nz in [0u64, 1, 6, 12, u64::MAX] {
                    for s2 in [4u64, 12, 16] {
                        for s3 in [1u64, 4, 8] {
                            for (grid, block) in [
                                ([1, 1, 1], [4, 1, 1]),
                                ([1, 1, 3], [4, 1, 1]),
                                ([1, 1, 5], [1, 1, 1]),
                                ([2, 1, 3], [4, 1, 1]),
                                ([1, 1, 2], [4, 2, 1]),
                            ] {
                                let param = |v: &VarId, field: u32, signed: bool| {
                                    let x = match (v, field) {
                                        (1, 0 | 4) => nz,
                                        (2, 0) => return Some(i64::from(m)),
                                        (2, 4) => return Some(i64::from(sh)),
                                        (2, 8) => return Some(i64::from(d)),
                                        (3, 0 | 4) => s2,
                                        (4, 0 | 4) => s3,
                                        _ => return None,
                                    };
                                    let w = if field == 0 { x as u32 } else { (x >> 32) as u32 };
                                    Some(if signed { i64::from(w as i32) } else { i64::from(w) })
                                };
                                let base = |b: &Base| (*b == P).then_some(0x1000_0000u64);
                                if c.injective.iter().all(|i| i.holds(&base, &param, grid, block)) {
                                    passed += 1;
                                    many_blocks |= grid[2] > 1;
                                    assert!(
                                        !collide(d, plus, nz, s2, s3, grid, block),
                                        "d {d} nz {nz} s2 {s2} s3 {s3} {grid:?} {block:?}: {c:?}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
            (passed, many_blocks)
        };
        // The rule applies: launches of several blocks along z pass, and
        // none of the launches that pass has two threads on one byte.
        assert!(run(&split_counter_kernel("", SPLIT_REM), (0, 0)).1);
        // Where it must not: a remainder of another value (`x + 1`), or a
        // way out between the quotient and the remainder (the pair may
        // then come from two values of the counter). Blocks along z are
        // then not told apart, and no launch of several passes.
        let other = "add.s32 %r13, %r7, 1;\nmul.lo.s32 %r11, %r10, %r3;\nsub.s32 %r12, %r13, %r11;";
        assert!(!run(&split_counter_kernel("", other), (1, 0)).1);
        let exit = "setp.eq.u32 %p3, %r10, 7;\n@%p3 bra $L__done;";
        assert!(!run(&split_counter_kernel(exit, SPLIT_REM), (0, 0)).1);
        // A quotient coordinate from another division of the same `x` (one
        // more bit of shift) with the remainder of the first: the pair
        // does not name `x`.
        let another = split_counter_kernel("add.s32 %r15, %r2, 1;\nshr.u32 %r14, %r9, %r15;", SPLIT_REM)
            .replace("cvt.s64.s32 %rd9, %r10;", "cvt.s64.s32 %rd9, %r14;");
        assert!(!run(&another, (0, 1)).1);
    }

    /// `for (int64_t ib = blockIdx.y; ib < n; ib += gridDim.y) dst[ib * pitch
    /// + 64 * (tid / 8) + 4 * (tid % 8)] = tid;` as nvcc writes the signed
    /// division and remainder (`%r5`, `%r7`); `digits` replaces the lines
    /// computing them from `%r4` = `tid + bias`.
    fn digits_kernel(digits: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 dst, .param .u64 n, .param .u64 pitch)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n\
             .reg .b64 %rd<16>;\nld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [n];\nld.param.u64 %rd3, [pitch];\n\
             mov.u32 %r1, %tid.x;\nshr.s32 %r2, %r1, 31;\nshr.u32 %r3, %r2, 29;\nadd.s32 %r4, %r1, %r3;\n{digits}\n\
             mul.wide.s32 %rd4, %r5, 64;\nmul.wide.s32 %rd5, %r7, 4;\nadd.s64 %rd6, %rd4, %rd5;\nmov.u32 %r8, %ctaid.y;\n\
             cvt.u64.u32 %rd7, %r8;\nsetp.le.s64 %p1, %rd2, %rd7;\n@%p1 bra $L__done;\nmov.u32 %r9, %nctaid.y;\n\
             cvt.u64.u32 %rd8, %r9;\ncvta.to.global.u64 %rd9, %rd1;\n$L__loop:\nmul.lo.s64 %rd10, %rd7, %rd3;\n\
             add.s64 %rd11, %rd10, %rd6;\nshl.b64 %rd12, %rd11, 2;\nadd.s64 %rd13, %rd9, %rd12;\nst.global.u32 [%rd13], %r1;\n\
             add.s64 %rd7, %rd7, %rd8;\nsetp.lt.s64 %p2, %rd7, %rd2;\n@%p2 bra $L__loop;\n$L__done:\nret;\n}}\n"
        )
    }

    #[test]
    fn a_value_and_its_quotient_by_a_power_of_two_name_it() {
        // `split(tid)` = the two coordinates the PTX computes.
        // The widest block that passes (0: none).
        let run = |src: &str, split: &dyn Fn(u64) -> (u64, u64)| -> u32 {
            let c = match verdict(src) {
                Verdict::IndependentIf(c) => c,
                v => {
                    assert!(matches!(v, Verdict::Exchanges(_)), "{v:?}");
                    return 0;
                }
            };
            let mut widest = 0;
            for n in [0u64, 1, 4, 7] {
                for pitch in [0u64, 16, 64, 256, 512] {
                    for (grid, block) in [
                        ([1, 3, 1], [32, 1, 1]),
                        ([1, 2, 1], [8, 1, 1]),
                        ([1, 4, 1], [1, 1, 1]),
                        ([2, 2, 1], [8, 1, 1]),
                        ([1, 2, 1], [8, 2, 1]),
                    ] {
                        let param = |v: &VarId, field: u32, signed: bool| {
                            let x = match v {
                                1 => n,
                                2 => pitch,
                                _ => return None,
                            };
                            let w = if field == 0 { x as u32 } else { (x >> 32) as u32 };
                            Some(if signed { i64::from(w as i32) } else { i64::from(w) })
                        };
                        let base = |b: &Base| (*b == P).then_some(0x1000_0000u64);
                        if !c.injective.iter().all(|i| i.holds(&base, &param, grid, block)) {
                            continue;
                        }
                        widest = widest.max(block[0]);
                        let mut seen = std::collections::HashMap::new();
                        for cy in 0..grid[1] {
                            for cx in 0..grid[0] {
                                for ty in 0..block[1] {
                                    for tx in 0..block[0] {
                                        let (a, b) = split(u64::from(tx));
                                        let mut ib = u64::from(cy);
                                        while ib < n {
                                            let at = (ib * pitch + 64 * a + 4 * b) * 4;
                                            for byte in at..at + 4 {
                                                let me = (cy, cx, ty, tx);
                                                assert_eq!(
                                                    *seen.entry(byte).or_insert(me),
                                                    me,
                                                    "n {n} pitch {pitch} {grid:?} {block:?}: {c:?}"
                                                );
                                            }
                                            ib += u64::from(grid[1]);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            widest
        };
        // `tid / 8` and `tid % 8` name `tid`: blocks of many threads pass
        // (the remainder's range is `[0, 8)`, not the difference's).
        let eight = "shr.s32 %r5, %r4, 3;\nand.b32 %r6, %r4, -8;\nsub.s32 %r7, %r1, %r6;";
        assert_eq!(run(&digits_kernel(eight), &|t| (t / 8, t % 8)), 32);
        // Not when the remainder is by another power of two (`tid / 8`
        // beside `tid % 4`), nor of another value (`(tid + 1) % 8`-like).
        let four = "shr.s32 %r5, %r4, 3;\nand.b32 %r6, %r4, -4;\nsub.s32 %r7, %r1, %r6;";
        assert!(run(&digits_kernel(four), &|t| (t / 8, t % 4)) <= 1);
        let other = "shr.s32 %r5, %r4, 3;\nand.b32 %r6, %r4, -8;\nadd.s32 %r10, %r1, 1;\nsub.s32 %r7, %r10, %r6;";
        assert!(run(&digits_kernel(other), &|t| (t / 8, t % 8 + 1)) <= 1);
    }

    #[test]
    fn injective_terms_need_each_stride_past_the_smaller_ones() {
        // Coordinates i in [0, 10) (stride 4 bytes) and j in [0, 3)
        // (stride `s` bytes), 4-byte stores: apart when s >= 40.
        let inj = |s: i64| Injective::<Base, VarId> {
            base: Base::None,
            offset: 64,
            bytes: 4,
            terms: vec![
                Term { coord: vec![Op::Const(10), Op::Under], stride: vec![Op::Const(1)], factor: 4 },
                Term { coord: vec![Op::Const(3), Op::Under], stride: vec![Op::Const(s)], factor: 1 },
            ],
            single: vec![],
            nowrap: vec![],
            more: vec![],
        };
        let none = |_: &VarId, _: u32, _: bool| None;
        let zero = |_: &Base| Some(0);
        let one = [1, 1, 1];
        for s in [40, 41, 1000] {
            assert!(inj(s).holds(&zero, &none, one, one), "{s}");
        }
        for s in [39, 4, 0, -40] {
            assert!(!inj(s).holds(&zero, &none, one, one), "{s}");
        }
        // Brute force: with s = 40 every (i, j) has its own 4 bytes.
        let mut seen = std::collections::HashSet::new();
        for i in 0..10i64 {
            for j in 0..3i64 {
                for k in 0..4 {
                    assert!(seen.insert(4 * i + 40 * j + k));
                }
            }
        }
        // The addresses must fit below 2^64.
        let far = |_: &Base| Some(u64::MAX - 100);
        assert!(!inj(40).holds(&far, &none, one, one));
    }

    #[test]
    fn a_select_the_access_passed_the_exit_of_picks_its_operand() {
        // `src ? src + i % d : 0`, the access skipped when `src` is null
        // (llama.cpp's optional operands).
        let with = |exit: &str| {
            unravel_kernel(REMAINDER)
                .replace(
                    "add.s64 %rd11, %rd10, %rd9;",
                    &format!("setp.eq.s64 %p1, %rd2, 0;\nselp.b64 %rd12, 0, %rd10, %p1;\n{exit}add.s64 %rd11, %rd12, %rd9;"),
                )
                .replace("ret;\n}", "$L__done:\nret;\n}")
        };
        let d = only_disjoint(&verdict(&with("@%p1 bra $L__done;\n")));
        let (m, s) = magic(60);
        let f = [(2, 0, m), (2, 4, s), (2, 8, 60), (3, 0, 100)];
        let p = 0x10_0000u64;
        assert!(launch_holds_fields(&d, p, p + 4 * 860, &f, [4, 1, 1], [128, 1, 1]));
        assert!(!launch_holds_fields(&d, p, p + 4 * 859, &f, [4, 1, 1], [128, 1, 1]));
        // Without the exit, or with it taken on the other value, the
        // select may give 0: not followed.
        for exit in ["", "@!%p1 bra $L__done;\n"] {
            assert_eq!(kind(&verdict(&with(exit))), Some(ExchangeKind::GlobalPair), "{exit:?}");
        }
    }

    #[test]
    fn unravelled_indices_get_launch_ranges() {
        let d = only_disjoint(&verdict(&unravel_kernel(REMAINDER)));
        // The parameters: dst 0, src 1, c 2 (m, s, d), stride 3.
        let launch = |dst: u64, src: u64, div: u32, constants: (u32, u32), stride: u32, grid: u32| {
            let (m, s) = constants;
            launch_holds_fields(&d, dst, src, &[(2, 0, m), (2, 4, s), (2, 8, div), (3, 0, stride)], [grid, 1, 1], [128, 1, 1])
        };
        // 4 blocks of 128: i < 512, rows of 60 (i % 60 < 60, i / 60 <= 8),
        // dst rows 100 elements apart: dst's bytes [0, 4 * (8 * 100 + 60)),
        // src's [0, 240).
        let p = 0x10_0000u64;
        let dst_bytes = 4 * (8 * 100 + 60);
        assert!(launch(p, p + dst_bytes, 60, magic(60), 100, 4), "src right after dst");
        assert!(!launch(p, p + dst_bytes - 4, 60, magic(60), 100, 4), "src's first element in dst's last row");
        assert!(launch(p + 240, p, 60, magic(60), 100, 4), "dst right after src");
        assert!(!launch(p + 236, p, 60, magic(60), 100, 4), "one element of overlap");
        assert!(!launch(p, p + dst_bytes, 60, magic(61), 100, 4), "constants of another divisor");
        assert!(!launch(p, p + dst_bytes, 60, (magic(60).0 - 1, magic(60).1), 100, 4), "a multiplier too small");
        assert!(!launch(p, p + dst_bytes, 60, magic(60), 100, 5), "one more block reaches src");
        // Rows of 64: the shift alone divides, and the ranges shrink.
        assert!(launch(p, p + 4 * (7 * 100 + 64), 64, magic(64), 100, 4));
        assert!(!launch(p, p + 4 * (7 * 100 + 64) - 4, 64, magic(64), 100, 4));
        // The same kernel through a plain 64-bit sum of an unrelated
        // register gives no remainder: `x - q * d` with `x` another value
        // than the quotient's (here `i + 1`) ranges below 0, and the
        // launch check fails.
        let other = "add.s32 %r14, %r10, 1;\nmul.lo.s32 %r13, %r8, %r3;\nsub.s32 %r9, %r14, %r13;";
        let d2 = only_disjoint(&verdict(&unravel_kernel(other)));
        let (m, s) = magic(60);
        let f = [(2, 0, m), (2, 4, s), (2, 8, 60), (3, 0, 100)];
        assert!(!launch_holds_fields(&d2, p, p + (1 << 30), &f, [4, 1, 1], [128, 1, 1]));
        // An arithmetic shift (`shr.s32`) is no fast division.
        let arith = unravel_kernel(REMAINDER).replace("shr.u32 %r8", "shr.s32 %r8");
        assert_eq!(kind(&verdict(&arith)), Some(ExchangeKind::GlobalPair));
    }

    /// The one launch-range condition of a kernel's verdict.
    fn only_disjoint(v: &Verdict) -> Disjoint<Base, VarId> {
        let c = conditions(v);
        assert!(c.apart.is_empty() && !c.one_dimensional && c.disjoint.len() == 1, "{c:?}");
        c.disjoint[0].clone()
    }

    /// `out[i] = (double)in[i]` with `i = blockIdx.x * blockDim.x +
    /// threadIdx.x`: 4-byte loads through `q`, 8-byte stores through `p`.
    const WIDEN: &str = "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.s32 %r4, %r2, %r3, %r1;\nmul.wide.s32 %rd6, %r4, 4;\n\
                         add.s64 %rd7, %rd2, %rd6;\nld.global.f32 %f1, [%rd7];\nmul.wide.s32 %rd8, %r4, 8;\nadd.s64 %rd9, %rd1, %rd8;\n\
                         cvt.f64.f32 %fd1, %f1;\nst.global.f64 [%rd9], %fd1;";

    fn widen_kernel(lines: &str) -> String {
        kernel(&format!(".reg .f64 %fd<4>;\n{lines}"))
    }

    #[test]
    fn different_strides_need_disjoint_ranges_over_the_launch() {
        let d = only_disjoint(&verdict(&widen_kernel(WIDEN)));
        let idx = vec![Op::Special(Launch::Ctaid, 0), Op::Special(Launch::Ntid, 0), Op::Mul, Op::Special(Launch::Tid, 0), Op::Add];
        let span = |base, scale, bytes| Span {
            base,
            offset: 0,
            index: Some(SpanIndex { value: idx.clone(), signed: true, wide: false, scale, below: None }),
            bytes,
        };
        assert_eq!(d, Disjoint { a: span(P, 8, 8), b: span(Q, 4, 4) });
        // 4 blocks of 256 threads: `out` (p) covers 8192 bytes, `in` (q) 4096.
        let (g, b) = ([4, 1, 1], [256, 1, 1]);
        let p = 0x10_0000u64;
        assert!(launch_holds(&d, p, p + 8192, &[], g, b), "in just past out: touching ranges");
        assert!(!launch_holds(&d, p, p + 8191, &[], g, b), "one byte of overlap");
        assert!(launch_holds(&d, p + 4096, p, &[], g, b), "out just past in");
        assert!(!launch_holds(&d, p + 4095, p, &[], g, b), "one byte of overlap below");
        assert!(!launch_holds(&d, p, p, &[], g, b), "in place");
        assert!(!launch_holds(&d, p, p + 8192, &[], [5, 1, 1], b), "one more block reaches in");
        assert!(launch_holds(&d, p, p + 8192, &[], [4, 7, 3], b), "grid rows and layers repeat the same indices");
        // The index is signed 32-bit: a launch whose index passes 2^31 - 1
        // wraps (negative elements), which the check refuses rather than
        // follow; up to 2^31 threads it holds.
        let far = 1u64 << 40;
        assert!(launch_holds(&d, p, p + far, &[], [1 << 22, 1, 1], [512, 1, 1]));
        assert!(!launch_holds(&d, p, p + far, &[], [(1 << 22) + 1, 1, 1], [512, 1, 1]), "index wraps");
        // Addresses that would wrap around 2^64.
        assert!(!launch_holds(&d, u64::MAX - 4096, p, &[], g, b));
        // An unknown base fails.
        assert!(!d.holds(&|_| None, &|_, _, _| None, g, b));
    }

    #[test]
    fn negative_offsets_and_scales_bound_the_range_from_below() {
        // out[-i - 1] written as bytes from in[i] read as words: the store's
        // range lies below `p`.
        let d = only_disjoint(&verdict(&kernel(
            "neg.s32 %r2, %r1;\ncvt.s64.s32 %rd6, %r2;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.u32 %r3, [%rd5];\nst.global.u8 [%rd7+-1], %r3;",
        )));
        let (g, b) = ([1, 1, 1], [64, 1, 1]);
        let p = 0x10_0000u64;
        // Stores cover [p - 64, p), loads [q, q + 256).
        assert!(launch_holds(&d, p, p, &[], g, b), "loads from p up, stores below it");
        assert!(launch_holds(&d, p + 256 + 64, p, &[], g, b), "loads end where stores start");
        assert!(!launch_holds(&d, p + 256 + 63, p, &[], g, b), "one byte of overlap");
        assert!(!launch_holds(&d, 32, p, &[], g, b), "stores below address 0");
    }

    #[test]
    fn two_dimensional_indices_and_parameters_bound_the_range() {
        // out[y * n + x] = in[x] with x = tid.x, y = tid.y + ctaid.y *
        // ntid.y, n a 32-bit parameter: no one-dimensional block needed.
        let src = ".visible .entry k(.param .u64 p, .param .u64 q, .param .u32 n)\n{\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n\
                   ld.param.u64 %rd1, [p];\nld.param.u64 %rd2, [q];\nld.param.u32 %r9, [n];\nmov.u32 %r1, %tid.x;\n\
                   mov.u32 %r2, %tid.y;\nmov.u32 %r3, %ctaid.y;\nmov.u32 %r4, %ntid.y;\nmad.lo.s32 %r5, %r3, %r4, %r2;\n\
                   mad.lo.s32 %r6, %r5, %r9, %r1;\nmul.wide.u32 %rd3, %r6, 2;\nadd.s64 %rd4, %rd1, %rd3;\n\
                   mul.wide.u32 %rd5, %r1, 4;\nadd.s64 %rd6, %rd2, %rd5;\nld.global.u32 %r7, [%rd6];\nst.global.u16 [%rd4], %r7;\nret;\n}\n";
        let d = only_disjoint(&verdict(src));
        let n = 2; // the variable id of `n`
        let (g, b) = ([1, 3, 1], [16, 4, 1]);
        let p = 0x10_0000u64;
        // Rows of 16 elements: stores cover 2 * (11 * 16 + 15 + 1) = 384 bytes.
        assert!(launch_holds(&d, p, p + 384, &[(n, 16)], g, b));
        assert!(!launch_holds(&d, p, p + 382, &[(n, 16)], g, b), "one element of overlap");
        assert!(!launch_holds(&d, p, p + 384, &[(n, 17)], g, b), "wider rows reach in");
        assert!(!launch_holds(&d, p, p + 384, &[], g, b), "a parameter the launch does not give");
        // n = 2^31 - 1 (unsigned index): 11 * n + 15 fits 32 bits? No: wraps.
        assert!(!launch_holds(&d, p, p + (1 << 40), &[(n, i32::MAX as u32)], g, b), "index wraps");
    }

    /// [`WIDEN`] behind `if (i >= n) return;` in the form `exit` (a
    /// parameter `n`, variable id 2).
    fn bounded_widen(exit: &str, between: &str) -> String {
        let body = WIDEN.replace("mul.wide.s32 %rd6", &format!("ld.param.u32 %r9, [n];\n{exit}\n{between}mul.wide.s32 %rd6"));
        format!(
            ".visible .entry k(.param .u64 p, .param .u64 q, .param .u32 n)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<8>;\n\
             .reg .f64 %fd<4>;\n.reg .b64 %rd<16>;\nld.param.u64 %rd1, [p];\nld.param.u64 %rd2, [q];\nmov.u32 %r1, %tid.x;\n{body}\n\
             $Ldone:\nret;\n}}\n"
        )
    }

    #[test]
    fn an_early_exit_bounds_the_index() {
        let (g, b) = ([4, 1, 1], [256, 1, 1]);
        let p = 0x10_0000u64;
        let n = 2;
        for exit in [
            "setp.ge.s32 %p1, %r4, %r9;\n@%p1 bra $Ldone;",
            "setp.lt.s32 %p1, %r4, %r9;\n@!%p1 bra $Ldone;",
            "setp.le.s32 %p1, %r9, %r4;\n@%p1 bra $Ldone;",
            "setp.ge.s32 %p1, %r4, %r9;\n@%p1 ret;",
        ] {
            let d = only_disjoint(&verdict(&bounded_widen(exit, "")));
            // 1000 of the launch's 1024 threads pass: `out` covers 8000 bytes.
            assert!(launch_holds(&d, p, p + 8000, &[(n, 1000)], g, b), "{exit}");
            assert!(!launch_holds(&d, p, p + 7999, &[(n, 1000)], g, b), "{exit}: one byte of overlap");
            assert!(!launch_holds(&d, p, p + 8000, &[(n, 1001)], g, b), "{exit}: one element more");
            // A bound past the launch's threads does not widen the range.
            assert!(launch_holds(&d, p, p + 8192, &[(n, 5000)], g, b), "{exit}");
            assert!(!launch_holds(&d, p, p + 8191, &[(n, 5000)], g, b), "{exit}");
            // The bound is a parameter the launch must give.
            assert!(!launch_holds(&d, p, p + 8192, &[], g, b), "{exit}");
        }
        // `i <= n`: one element more.
        let d = only_disjoint(&verdict(&bounded_widen("setp.gt.s32 %p1, %r4, %r9;\n@%p1 bra $Ldone;", "")));
        assert!(launch_holds(&d, p, p + 8008, &[(n, 1000)], g, b));
        assert!(!launch_holds(&d, p, p + 8007, &[(n, 1000)], g, b));
        // No bound: an unsigned comparison of a sign-extended index (a
        // negative index passes it), an exit another path can jump past,
        // an exit the branch takes the other way round, a comparison of
        // another register.
        for (exit, between) in [
            ("setp.ge.u32 %p1, %r4, %r9;\n@%p1 bra $Ldone;", ""),
            ("setp.ge.s32 %p1, %r4, %r9;\n@%p1 bra $Ldone;", "$L2:\n"),
            ("setp.lt.s32 %p1, %r4, %r9;\n@%p1 bra $Ldone;", ""),
            ("setp.ge.s32 %p1, %r2, %r9;\n@%p1 bra $Ldone;", ""),
        ] {
            let d = only_disjoint(&verdict(&bounded_widen(exit, between)));
            assert!(!launch_holds(&d, p, p + 8000, &[(n, 1000)], g, b), "{exit} {between}");
            assert!(launch_holds(&d, p, p + 8192, &[(n, 1000)], g, b), "{exit} {between}");
        }
    }

    #[test]
    fn reused_registers_are_followed_within_straight_line_code() {
        // The oracle's style: one register for every address, rewritten
        // before each access.
        let body = "mul.wide.u32 %rd9, %r1, 8;\nld.param.u64 %rd6, [q];\ncvta.to.global.u64 %rd6, %rd6;\nadd.s64 %rd6, %rd6, %rd3;\n\
                    ld.global.u32 %r2, [%rd6];\nld.param.u64 %rd6, [p];\ncvta.to.global.u64 %rd6, %rd6;\nadd.s64 %rd6, %rd6, %rd9;\n\
                    st.global.u64 [%rd6], %rd9;";
        let d = only_disjoint(&verdict(&kernel(body)));
        assert_eq!((d.a.base, d.b.base), (P, Q), "{d:?}");
        // A label between the write and the access: another path may reach
        // it with another value.
        let v = verdict(&kernel(&body.replace("st.global.u64", "$L1:\nst.global.u64")));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // A guarded write in between.
        let v = verdict(&kernel(&body.replace("st.global.u64", "setp.eq.u32 %p1, %r1, 0;\n@%p1 mov.u64 %rd6, %rd2;\nst.global.u64")));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
    }

    #[test]
    fn indices_the_range_cannot_bound_exchange() {
        for (index, why) in [
            ("shr.s32 %r2, %r1, %r1;", "an arithmetic shift right by a register is not followed"),
            ("mul.hi.s32 %r2, %r1, 7;", "nor a signed multiply-high"),
            ("add.sat.s32 %r2, %r1, 1;", "saturation"),
            ("ld.global.u32 %r2, [%rd5+1024];", "an index read from memory"),
            ("mov.u32 %r2, %laneid;", "a special register outside the launch's shape"),
        ] {
            let v = verdict(&kernel(&format!(
                "{index}\nmul.wide.u32 %rd6, %r2, 8;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.u32 %r3, [%rd5];\nst.global.u64 [%rd7], %rd6;"
            )));
            assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair), "{why}");
        }
        // A logical shift right is followed (exact on values in [0, 2^32)).
        let v = verdict(&kernel(
            "shr.u32 %r2, %r1, 1;\nmul.wide.u32 %rd6, %r2, 8;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.u32 %r3, [%rd5];\nst.global.u64 [%rd7], %rd6;",
        ));
        let d = only_disjoint(&v);
        // 64 threads: p's bytes [0, 8 * 32), q's [0, 4 * 64).
        assert!(launch_holds(&d, 0x1000, 0x1000 + 256, &[], [1, 1, 1], [64, 1, 1]));
        assert!(!launch_holds(&d, 0x1000, 0x1000 + 248, &[], [1, 1, 1], [64, 1, 1]));
        // An arithmetic one by a constant is followed where the value is
        // not negative, and fails the launch check where it may be.
        let shifted = |pre: &str| {
            only_disjoint(&verdict(&kernel(&format!(
                "{pre}\nmul.wide.u32 %rd6, %r2, 8;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.u32 %r3, [%rd5];\nst.global.u64 [%rd7], %rd6;"
            ))))
        };
        let d = shifted("shr.s32 %r2, %r1, 1;");
        assert!(launch_holds(&d, 0x1000, 0x1000 + 256, &[], [1, 1, 1], [64, 1, 1]));
        assert!(!launch_holds(&d, 0x1000, 0x1000 + 248, &[], [1, 1, 1], [64, 1, 1]));
        let d = shifted("neg.s32 %r4, %r1;\nshr.s32 %r2, %r4, 1;");
        assert!(!launch_holds(&d, 0x1000, 0x10_0000, &[], [1, 1, 1], [64, 1, 1]));
        assert!(launch_holds(&d, 0x1000, 0x10_0000, &[], [1, 1, 1], [1, 1, 1]));
        // Values past 2^31 are negative to the arithmetic shift.
        let d = shifted("add.s32 %r4, %r1, 2147483647;\nshr.s32 %r2, %r4, 1;");
        assert!(!launch_holds(&d, 0x1000, 0x1_0000_0000_0000, &[], [1, 1, 1], [64, 1, 1]));
        assert!(launch_holds(&d, 0x1000, 0x1_0000_0000_0000, &[], [1, 1, 1], [1, 1, 1]));
    }

    #[test]
    fn lane_indices_are_a_uniform_value_plus_tid_x() {
        // blockIdx.x * blockDim.x + threadIdx.x, widened with its sign.
        let c = conditions(&verdict(&kernel(
            "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.s32 %r4, %r2, %r3, %r1;\nmul.wide.s32 %rd6, %r4, 4;\n\
             add.s64 %rd7, %rd1, %rd6;\nadd.s64 %rd8, %rd2, %rd6;\nld.global.f32 %f1, [%rd8];\nst.global.f32 [%rd7], %f1;",
        )));
        assert_eq!(c.apart.len(), 1);
        // Twice the thread index is not one lane per element: only the
        // launch's ranges can keep the two apart.
        let c = conditions(&verdict(&kernel(
            "shl.b32 %r2, %r1, 1;\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.f32 %f1, [%rd5];\nst.global.f32 [%rd7], %f1;",
        )));
        assert!(c.apart.is_empty() && !c.one_dimensional && c.disjoint.len() == 1, "{c:?}");
        // %tid.y is not the lane.
        let v = verdict(&kernel(
            "mov.u32 %r2, %tid.y;\nmul.wide.u32 %rd6, %r2, 4;\nadd.s64 %rd7, %rd1, %rd6;\nld.global.f32 %f1, [%rd7];\nst.global.f32 [%rd7], %f1;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair));
        // A loop counter is written by an instruction that reads it: not an index.
        let v = verdict(&kernel(
            "mov.u32 %r2, 0;\n$L1:\nadd.s32 %r3, %r1, %r2;\nmul.wide.u32 %rd6, %r3, 4;\nadd.s64 %rd7, %rd1, %rd6;\nst.global.u32 [%rd7], %r1;\n\
             add.s32 %r2, %r2, 32;\nsetp.lt.u32 %p1, %r2, 256;\n@%p1 bra $L1;",
        ));
        assert_eq!(kind(&v), Some(ExchangeKind::RepeatedWrite));
    }

    #[test]
    fn a_store_in_a_loop_may_exchange_with_itself() {
        // The same address every iteration: each lane its own.
        let c = conditions(&verdict(&kernel(
            "$L1:\nst.global.u32 [%rd4], %r2;\nadd.u32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 9;\n@%p1 bra $L1;",
        )));
        assert!(c.one_dimensional && c.apart.is_empty());
        // Every lane's one address, repeatedly.
        let v = verdict(&kernel("$L1:\nst.global.u32 [%rd1], %r2;\nadd.u32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, 9;\n@%p1 bra $L1;"));
        assert_eq!(kind(&v), Some(ExchangeKind::RepeatedWrite));
        // Forward branches make no loop.
        let v = verdict(&kernel("setp.lt.u32 %p1, %r1, 9;\n@%p1 bra $L1;\nst.global.u32 [%rd1], %r1;\n$L1:"));
        assert!(v.independent(), "{v:?}");
    }

    #[test]
    fn shared_memory_in_any_form_may_exchange() {
        let shared = |lines: &str| kind(&verdict(&kernel(&format!(".shared .align 4 .b8 s[128];\n{lines}"))));
        assert_eq!(shared("st.shared.u32 [s], %r1;"), Some(ExchangeKind::SharedMemory));
        assert_eq!(shared("ld.shared.u32 %r2, [s];"), Some(ExchangeKind::SharedMemory));
        // A generic address formed from a shared variable.
        assert_eq!(shared("mov.u64 %rd6, s;\ncvta.shared.u64 %rd7, %rd6;\nld.u32 %r2, [%rd7];"), Some(ExchangeKind::SharedMemory));
        assert_eq!(shared("atom.shared.add.u32 %r2, [%rd4], 1;"), Some(ExchangeKind::SharedMemory));
        // Declared but unused: nothing to exchange through.
        assert_eq!(shared("ld.global.u32 %r2, [%rd4];"), None);
        // Module-level dynamic shared memory.
        let v = verdict(&format!(".extern .shared .align 16 .b8 dyn[];\n{}", kernel("mov.u64 %rd6, dyn;\nst.u32 [%rd6], %r1;")));
        assert_eq!(kind(&v), Some(ExchangeKind::SharedMemory));
    }

    #[test]
    fn called_functions_count_and_never_run_once() {
        let src = format!(
            ".func f(.param .b64 a)\n{{\n.reg .b64 %rd<3>;\nld.param.u64 %rd1, [a];\nst.global.u32 [%rd1], 0;\nret;\n}}\n{}",
            kernel("{\n.param .b64 arg;\nst.param.b64 [arg], %rd4;\ncall f, (arg);\n}")
        );
        assert_eq!(kind(&verdict(&src)), Some(ExchangeKind::RepeatedWrite));
        let src =
            format!(".func g()\n{{\n.reg .b32 %r<2>;\n.shared .align 4 .b32 t;\nst.shared.u32 [t], 1;\nret;\n}}\n{}", kernel("call g;"));
        assert_eq!(kind(&verdict(&src)), Some(ExchangeKind::SharedMemory));
    }

    #[test]
    fn unmodelled_memory_instructions_may_exchange() {
        let v = verdict(&kernel("sust.b.1d.b32.trap [%rd4, {%r1}], {%r1};"));
        assert_eq!(kind(&v), Some(ExchangeKind::Unmodelled));
    }

    #[test]
    fn adding_an_instruction_never_makes_a_kernel_independent() {
        let base = "ld.global.f32 %f1, [%rd4+4];\nst.global.f32 [%rd4], %f1;";
        assert_eq!(kind(&verdict(&kernel(base))), Some(ExchangeKind::GlobalPair));
        for extra in [
            "ld.global.nc.f32 %f2, [%rd5];",
            "red.global.add.u32 [%rd4], 1;",
            "st.local.u32 [%rd4], %r1;",
            "add.f32 %f2, %f1, %f1;",
            "ldu.global.f32 %f2, [%rd5];",
            "st.global.f32 [%rd5], %f1;",
            "ld.global.f32 %f2, [%rd4];",
        ] {
            assert!(matches!(verdict(&kernel(&format!("{base}\n{extra}"))), Verdict::Exchanges(_)), "{extra}");
            assert!(matches!(verdict(&kernel(&format!("{extra}\n{base}"))), Verdict::Exchanges(_)), "{extra}");
        }
        // Conditions only accumulate.
        let base = "ld.global.f32 %f1, [%rd5];\nst.global.f32 [%rd4], %f1;";
        let c0 = conditions(&verdict(&kernel(base)));
        for extra in ["ld.global.f32 %f2, [%rd5+512];", "st.global.f32 [%rd4+1024], %f1;"] {
            let c = conditions(&verdict(&kernel(&format!("{base}\n{extra}"))));
            assert!(c.one_dimensional && c0.apart.iter().all(|a| c.apart.contains(a)), "{extra}: {c:?}");
        }
    }

    #[test]
    fn explanations_name_the_instructions_and_positions() {
        let (src, k) = parse(&kernel("ld.global.f32 %f1, [%rd4+4];\nst.global.f32 [%rd4], %f1;"));
        let m = ptx::parse(&src).expect("parses");
        let text = analyse(&m, &Analysis::new(&m), k).explain(&m, &src);
        assert!(text.contains("`st.global.f32` at 17:1"), "{text}");
        assert!(text.contains("`ld.global.f32` at 16:1"), "{text}");
        let (src, k) = parse(&kernel("ld.global.f32 %f1, [%rd5];\nst.global.f32 [%rd4], %f1;"));
        let m = ptx::parse(&src).expect("parses");
        let text = analyse(&m, &Analysis::new(&m), k).explain(&m, &src);
        assert!(text.contains("one dimension") && text.contains("`p` and `q` are equal or at least 128 bytes apart"), "{text}");
    }

    /// Brute force for [`Injective::holds`] with further stores: the
    /// address `tid.x * c1 + ctaid.x * c2 + piece` for every thread and
    /// piece `(offset, bytes)`; whether two threads touch a byte in common.
    fn pattern_collides(c1: u64, c2: u64, pieces: &[(i64, u64)], grid: u32, block: u32) -> bool {
        let mut owner = std::collections::HashMap::new();
        for cx in 0..u64::from(grid) {
            for tx in 0..u64::from(block) {
                for &(o, n) in pieces {
                    let at = tx * c1 + cx * c2 + o as u64;
                    for byte in at..at + n {
                        if *owner.entry(byte).or_insert((cx, tx)) != (cx, tx) {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }

    #[test]
    fn stores_through_one_address_check_the_union_of_their_bytes() {
        let tid = vec![Op::Special(Launch::Tid, 0)];
        let ctaid = vec![Op::Special(Launch::Ctaid, 0)];
        let cond = |c1: i64, c2: i64, pieces: &[(i64, u64)]| Injective::<Base, VarId> {
            base: P,
            offset: pieces[0].0,
            bytes: pieces[0].1,
            terms: vec![
                Term { coord: tid.clone(), stride: vec![Op::Const(c1)], factor: 1 },
                Term { coord: ctaid.clone(), stride: vec![Op::Const(1)], factor: c2 },
            ],
            single: vec![],
            nowrap: vec![],
            more: pieces[1..].to_vec(),
        };
        let base = |b: &Base| (*b == P).then_some(0x1000u64);
        let no_param = |_: &VarId, _: u32, _: bool| None;
        // llama.cpp's q4_K rows: `tid % 8` strided 16 bytes, stores at 0-12
        // and 128-140; `tid / 8` 256 bytes (here the block, 8 threads).
        let q4k: Vec<(i64, u64)> = [0, 128, 4, 132, 8, 136, 12, 140].iter().map(|&o| (o, 4)).collect();
        let c = cond(16, 256, &q4k);
        assert!(c.holds(&base, &no_param, [4, 1, 1], [8, 1, 1]));
        // A ninth thread writes the first one's upper run.
        assert!(!c.holds(&base, &no_param, [4, 1, 1], [9, 1, 1]));
        assert!(pattern_collides(16, 256, &q4k, 4, 9));
        // Every shape, every launch: passing implies no collision, and
        // the interleaved shapes (a stride below the pieces' extent) pass.
        let shapes: [&[(i64, u64)]; 7] = [
            &[(0, 4)],
            &[(0, 4), (8, 4)],
            &[(0, 4), (4, 4), (128, 4)],
            &[(0, 4), (16, 4)],
            &[(4, 4), (0, 2)],
            &[(0, 2), (64, 8), (32, 4)],
            &[(-8, 4), (0, 4)],
        ];
        let (mut passed, mut interleaved) = (0, 0);
        for pieces in shapes {
            for c1 in [4i64, 8, 12, 16, 32] {
                for c2 in [16i64, 64, 128, 256, 512] {
                    for grid in [1u32, 2, 3] {
                        for block in [1u32, 2, 4, 8, 9] {
                            let c = cond(c1, c2, pieces);
                            if !c.holds(&base, &no_param, [grid, 1, 1], [block, 1, 1]) {
                                continue;
                            }
                            passed += 1;
                            let extent = pieces.iter().map(|&(o, n)| o + n as i64).max().unwrap_or(0)
                                - pieces.iter().map(|&(o, _)| o).min().unwrap_or(0);
                            interleaved += usize::from(block > 1 && c1 < extent);
                            let shifted: Vec<(i64, u64)> = pieces.iter().map(|&(o, n)| (o + 64, n)).collect();
                            assert!(
                                !pattern_collides(c1 as u64, c2 as u64, &shifted, grid, block),
                                "{pieces:?} c1 {c1} c2 {c2} grid {grid} block {block} passed, threads collide"
                            );
                        }
                    }
                }
            }
        }
        assert!(passed > 100 && interleaved > 10, "{passed} {interleaved}");
        // Stores that overlap each other never pass.
        let c = cond(64, 1024, &[(0, 4), (2, 4)]);
        assert!(!c.holds(&base, &no_param, [1, 1, 1], [1, 1, 1]));
    }

    /// A 64-bit grid-stride loop over elements of `16` bytes (`dst[i]`, `i`
    /// the global index) storing `stores` through `%rd15`.
    fn joint_kernel(stores: &str) -> String {
        format!(
            ".visible .entry k(.param .u64 dst, .param .u64 n)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<20>;\n\
             ld.param.u64 %rd1, [dst];\nld.param.u64 %rd2, [n];\nmov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\n\
             mov.u32 %r3, %tid.x;\nmul.wide.u32 %rd4, %r1, %r2;\ncvt.u64.u32 %rd5, %r3;\nadd.s64 %rd6, %rd4, %rd5;\n\
             setp.ge.s64 %p1, %rd6, %rd2;\n@%p1 bra $L__done;\nmov.u32 %r4, %nctaid.x;\ncvt.u64.u32 %rd7, %r4;\n\
             cvt.u64.u32 %rd8, %r2;\nmul.lo.s64 %rd9, %rd7, %rd8;\ncvta.to.global.u64 %rd12, %rd1;\n$L__loop:\n\
             shl.b64 %rd14, %rd6, 4;\nadd.s64 %rd15, %rd12, %rd14;\n{stores}\nadd.s64 %rd6, %rd6, %rd9;\n\
             setp.lt.s64 %p2, %rd6, %rd2;\n@%p2 bra $L__loop;\n$L__done:\nret;\n}}\n"
        )
    }

    #[test]
    fn stores_through_one_address_are_kept_apart_together() {
        // Whether two threads of `joint_kernel` write a byte in common,
        // simulated: pieces at `16 * i` plus their offsets.
        let collide = |pieces: &[(u64, u64)], n: u64, grid: u32, block: u32| {
            let mut owner = std::collections::HashMap::new();
            for cx in 0..u64::from(grid) {
                for tx in 0..u64::from(block) {
                    let mut i = cx * u64::from(block) + tx;
                    while (i as i64) < n as i64 {
                        for &(o, len) in pieces {
                            for byte in 16 * i + o..16 * i + o + len {
                                if *owner.entry(byte).or_insert((cx, tx)) != (cx, tx) {
                                    return true;
                                }
                            }
                        }
                        i += u64::from(grid) * u64::from(block);
                    }
                }
            }
            false
        };
        let check = |stores: &str, pieces: &[(u64, u64)]| -> Option<usize> {
            let c = match verdict(&joint_kernel(stores)) {
                Verdict::IndependentIf(c) => c,
                _ => return None,
            };
            let mut passed = 0;
            for n in [0u64, 1, 5, 40, (-3i64) as u64] {
                for grid in [1u32, 2, 3] {
                    for block in [1u32, 4, 8] {
                        let param = |v: &VarId, field: u32, signed: bool| match (v, field, signed) {
                            (1, 0, false) => Some(i64::from(n as u32)),
                            (1, 4, true) => Some(i64::from((n >> 32) as u32 as i32)),
                            _ => None,
                        };
                        let base = |b: &Base| (*b == P).then_some(0x1000_0000u64);
                        if c.injective.iter().all(|d| d.holds(&base, &param, [grid, 1, 1], [block, 1, 1])) && c.disjoint.is_empty() {
                            passed += 1;
                            assert!(!collide(pieces, n, grid, block), "{stores}: n {n} {grid}x{block} passed, threads collide");
                        }
                    }
                }
            }
            Some(passed)
        };
        // Accepted: two, three or four words of an element, in any order.
        for (stores, pieces) in [
            ("st.global.u32 [%rd15], %r3;\nst.global.u32 [%rd15+8], %r3;", &[(0, 4), (8, 4)][..]),
            ("st.global.u32 [%rd15+12], %r3;\nst.global.u32 [%rd15], %r3;\nst.global.u32 [%rd15+4], %r3;", &[(12, 4), (0, 4), (4, 4)][..]),
        ] {
            let passed = check(stores, pieces);
            assert!(passed.is_some_and(|p| p > 10), "{stores}: {passed:?}");
        }
        // Offsets reaching the next element's stride: no launch of more
        // than one thread passes (and none that passes collides).
        let stores = "st.global.u32 [%rd15], %r3;\nst.global.u32 [%rd15+16], %r3;";
        if let Some(c) = check(stores, &[(0, 4), (16, 4)]) {
            let v = conditions(&verdict(&joint_kernel(stores)));
            let param = |v: &VarId, field: u32, _: bool| (*v == 1).then_some(if field == 0 { 40 } else { 0 });
            let base = |b: &Base| (*b == P).then_some(0x1000_0000u64);
            assert!(!v.injective.iter().all(|d| d.holds(&base, &param, [1, 1, 1], [2, 1, 1])), "{c}");
        }
        // Not applied: overlapping stores, a store through another
        // register (a copy of the address), the register rewritten
        // between the stores.
        for stores in [
            "st.global.u32 [%rd15], %r3;\nst.global.u32 [%rd15+2], %r3;",
            "st.global.u32 [%rd15], %r3;\nmov.b64 %rd16, %rd15;\nst.global.u32 [%rd16+8], %r3;",
            "st.global.u32 [%rd15], %r3;\nadd.s64 %rd15, %rd15, 4;\nst.global.u32 [%rd15+4], %r3;",
        ] {
            let v = verdict(&joint_kernel(stores));
            assert_eq!(kind(&v), Some(ExchangeKind::GlobalPair), "{stores}: {v:?}");
        }
    }

    /// llama.cpp's `k_get_rows_kq` loops: `for (z = blockIdx.z; z < nz; z
    /// += gridDim.z) for (ib = blockIdx.y; ib < ne00 / 256; ib +=
    /// gridDim.y) dst[z * s2 + ib * 256 + threadIdx.x] = ...;` as nvcc
    /// compiles them: `ne00 / 256` signed (`shr.s64` with a sign bias),
    /// `blockIdx.y < ne00 / 256` tested once before the outer loop (an
    /// empty outer loop otherwise), the inner counter a copy of
    /// `blockIdx.y`, the outer step after the inner loop. `change` edits
    /// the text.
    fn rows_kernel(change: &dyn Fn(String) -> String) -> String {
        change(
            ".visible .entry k(.param .u64 dst, .param .u64 ne00, .param .u64 nz, .param .u64 s2)\n{\n.reg .pred %p<8>;\n\
             .reg .b32 %r<16>;\n.reg .b64 %rd<80>;\nld.param.u64 %rd20, [dst];\nld.param.u64 %rd21, [ne00];\n\
             ld.param.u64 %rd3, [nz];\nld.param.u64 %rd22, [s2];\nshr.s64 %rd10, %rd21, 63;\nshr.u64 %rd11, %rd10, 56;\n\
             add.s64 %rd12, %rd21, %rd11;\nshr.s64 %rd1, %rd12, 8;\nmov.u32 %r1, %ctaid.z;\ncvt.u64.u32 %rd74, %r1;\n\
             setp.le.s64 %p1, %rd3, %rd74;\n@%p1 bra $L__done;\nmov.u32 %r2, %ctaid.y;\ncvt.u64.u32 %rd4, %r2;\n\
             setp.gt.s64 %p2, %rd1, %rd4;\nmov.u32 %r3, %nctaid.z;\ncvt.u64.u32 %rd5, %r3;\nmov.u32 %r4, %tid.x;\n\
             cvt.u64.u32 %rd8, %r4;\n@%p2 bra $L__body;\nbra.uni $L__empty;\n$L__body:\ncvta.to.global.u64 %rd13, %rd20;\n\
             mov.u32 %r5, %nctaid.y;\ncvt.u64.u32 %rd15, %r5;\n$L__outer:\nmul.lo.s64 %rd19, %rd74, %rd22;\n\
             mov.u64 %rd76, %rd4;\n$L__inner:\nshl.b64 %rd69, %rd76, 8;\nadd.s64 %rd70, %rd19, %rd69;\n\
             add.s64 %rd71, %rd70, %rd8;\nshl.b64 %rd72, %rd71, 2;\nadd.s64 %rd73, %rd13, %rd72;\nst.global.u32 [%rd73], %r4;\n\
             add.s64 %rd76, %rd76, %rd15;\nsetp.lt.s64 %p6, %rd76, %rd1;\n@%p6 bra $L__inner;\nadd.s64 %rd74, %rd74, %rd5;\n\
             setp.lt.s64 %p7, %rd74, %rd3;\n@%p7 bra $L__outer;\nbra.uni $L__done;\n$L__empty:\nadd.s64 %rd74, %rd74, %rd5;\n\
             setp.lt.s64 %p3, %rd74, %rd3;\n@%p3 bra $L__empty;\n$L__done:\nret;\n}\n"
                .to_string(),
        )
    }

    #[test]
    fn a_loop_entered_through_a_checked_copy_is_bounded() {
        // The kernel simulated as its PTX computes (signed 64-bit
        // comparisons, nvcc's signed division): whether two threads write
        // a byte in common.
        let collide = |elem: &dyn Fn(u64) -> u64, ne00: i64, nz: i64, s2: u64, grid: [u32; 3], block: u32| {
            let nsb = (ne00.wrapping_add(((ne00 >> 63) as u64 >> 56) as i64)) >> 8;
            let mut owner = std::collections::HashMap::new();
            for (cz, cy, cx) in (0..u64::from(grid[2]))
                .flat_map(|z| (0..u64::from(grid[1])).flat_map(move |y| (0..u64::from(grid[0])).map(move |x| (z, y, x))))
            {
                {
                    for tx in 0..u64::from(block) {
                        let me = (cz, cy, cx, tx);
                        let mut z = cz;
                        if (z as i64) >= nz || nsb <= cy as i64 {
                            continue;
                        }
                        loop {
                            let mut ib = cy;
                            loop {
                                let at = z.wrapping_mul(s2).wrapping_add(ib << 8).wrapping_add(elem(tx)).wrapping_mul(4);
                                for byte in at..at + 4 {
                                    if *owner.entry(byte).or_insert(me) != me {
                                        return true;
                                    }
                                }
                                ib += u64::from(grid[1]);
                                if (ib as i64) >= nsb {
                                    break;
                                }
                            }
                            z += u64::from(grid[2]);
                            if (z as i64) >= nz {
                                break;
                            }
                        }
                    }
                }
            }
            false
        };
        let check_elem = |src: &str, elem: &dyn Fn(u64) -> u64| -> Option<usize> {
            let c = match verdict(src) {
                Verdict::IndependentIf(c) => c,
                _ => return None,
            };
            if c.injective.is_empty() {
                return None;
            }
            let mut passed = 0;
            for ne00 in [0i64, 256, 1024, 1000, -512] {
                for nz in [1i64, 3] {
                    for s2 in [64u64, 1024, 4096] {
                        for (grid, block) in [([1, 1, 1], 64), ([1, 2, 2], 64), ([1, 3, 1], 256), ([1, 2, 2], 300), ([2, 1, 1], 8)] {
                            let param = |v: &VarId, field: u32, _: bool| {
                                let x = match v {
                                    1 => ne00 as u64,
                                    2 => nz as u64,
                                    3 => s2,
                                    _ => return None,
                                };
                                Some(if field == 0 { i64::from(x as u32) } else { i64::from((x >> 32) as u32 as i32) })
                            };
                            let base = |b: &Base| (*b == P).then_some(0x1000_0000u64);
                            if c.injective.iter().all(|d| d.holds(&base, &param, grid, [block, 1, 1])) {
                                passed += 1;
                                assert!(
                                    !collide(elem, ne00, nz, s2, grid, block),
                                    "ne00 {ne00} nz {nz} s2 {s2} {grid:?} {block} passed, threads collide: {c:?}"
                                );
                            }
                        }
                    }
                }
            }
            Some(passed)
        };
        let check = |src: &str| check_elem(src, &|tx| tx);
        let same = |s: String| s;
        let passed = check(&rows_kernel(&same));
        assert!(passed.is_some_and(|p| p > 20), "{passed:?}");
        // The check made at every outer iteration instead, skipping to the
        // outer step (q5_K's shape): the copy's value is capped by the
        // exit, and still names `blockIdx.y`.
        let inside = |s: String| {
            s.replace("@%p2 bra $L__body;\nbra.uni $L__empty;\n", "")
                .replace("$L__outer:\n", "$L__outer:\nsetp.le.s64 %p2, %rd1, %rd4;\n@%p2 bra $L__step;\n")
                .replace("add.s64 %rd74, %rd74, %rd5;\nsetp.lt.s64 %p7", "$L__step:\nadd.s64 %rd74, %rd74, %rd5;\nsetp.lt.s64 %p7")
                .replace("setp.gt.s64 %p2, %rd1, %rd4;\n", "")
        };
        let passed = check(&rows_kernel(&inside));
        assert!(passed.is_some_and(|p| p > 20), "{passed:?}");
        // Not applied: the copy reachable without the check (the branch
        // past the loops removed), the loop entered where no copy was
        // made, the checked register rewritten between
        // the check and the copy, a bias that is not the sign's.
        let changes: [&dyn Fn(String) -> String; 4] = [
            &|s: String| s.replace("bra.uni $L__empty;\n$L__body:", "$L__body:"),
            // A way into the inner loop through a label just before its
            // own, from code that never made the copy.
            &|s: String| {
                s.replace("$L__inner:", "$L__extra:\n$L__inner:")
                    .replace("$L__empty:\n", "$L__empty:\nsetp.eq.s64 %p5, %rd74, 7;\n@%p5 bra $L__extra;\n")
            },
            &|s: String| s.replace("mov.u64 %rd76, %rd4;", "add.s64 %rd4, %rd4, %rd15;\nmov.u64 %rd76, %rd4;"),
            &|s: String| s.replace("shr.u64 %rd11, %rd10, 56;", "shr.u64 %rd11, %rd10, 57;"),
        ];
        for change in changes {
            let src = rows_kernel(change);
            assert_eq!(check(&src), None, "{src}");
        }
    }

    /// `out[i] += sums[blockIdx.x]` for `i = blockIdx.x * 256 + threadIdx.x`
    /// (64-bit), as nvcc writes it: the load and the store of `out[i]`
    /// read one register value.
    const OWN_CELL: &str = ".visible .entry k(.param .u64 p, .param .u64 q, .param .u64 n)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<6>;\n\
        .reg .b64 %rd<14>;\nld.param.u64 %rd3, [p];\nld.param.u64 %rd4, [q];\nld.param.u64 %rd5, [n];\nmov.u32 %r1, %ctaid.x;\n\
        cvt.u64.u32 %rd1, %r1;\nmul.wide.u32 %rd6, %r1, 256;\nmov.u32 %r2, %tid.x;\ncvt.u64.u32 %rd7, %r2;\nadd.s64 %rd2, %rd6, %rd7;\n\
        setp.ge.s64 %p1, %rd2, %rd5;\n@%p1 bra $L__done;\ncvta.to.global.u64 %rd8, %rd4;\nshl.b64 %rd9, %rd1, 2;\n\
        add.s64 %rd10, %rd8, %rd9;\ncvta.to.global.u64 %rd11, %rd3;\nshl.b64 %rd12, %rd2, 2;\nadd.s64 %rd13, %rd11, %rd12;\n\
        ld.global.u32 %r3, [%rd13];\nld.global.u32 %r4, [%rd10];\nadd.s32 %r5, %r3, %r4;\nst.global.u32 [%rd13], %r5;\n\
        $L__done:\nret;\n}\n";

    #[test]
    fn a_load_of_the_bytes_the_thread_then_stores_needs_only_the_store_injective() {
        let c = conditions(&verdict(OWN_CELL));
        assert_eq!((c.injective.len(), c.disjoint.len()), (1, 1), "{c:?}");
        let p = 1u64 << 32;
        let holds = |q: u64, grid: [u32; 3], block: [u32; 3]| {
            let base = |b: &Base| match b {
                Base::Param(0) => Some(p),
                Base::Param(1) => Some(q),
                _ => None,
            };
            // n = 16384, a 64-bit parameter read as two 32-bit fields.
            let param = |v: &VarId, field: u32, _: bool| match (*v, field) {
                (2, 0) => Some(16384),
                (2, 4) => Some(0),
                _ => None,
            };
            c.injective.iter().all(|d| d.holds(&base, &param, grid, block))
                && c.disjoint.iter().all(|d| d.holds(&base, &param, grid, block))
        };
        let (g, b) = ([64, 1, 1], [256, 1, 1]);
        assert!(holds(p + (1 << 20), g, b));
        // Blocks of 512 threads: thread 256 of block 0 and thread 0 of
        // block 1 load and store the same element.
        assert!(!holds(p + (1 << 20), g, [512, 1, 1]));
        // The sums inside the output: a store may change what another
        // thread loads through `q`.
        assert!(!holds(p + 4 * 100, g, b));
        // A second store through the register, in a loop, or a load at
        // another offset keeps the pair an exchange.
        let shifted = OWN_CELL.replace("ld.global.u32 %r3, [%rd13];", "ld.global.u32 %r3, [%rd13+4];");
        assert_eq!(kind(&verdict(&shifted)), Some(ExchangeKind::GlobalPair));
    }

    #[test]
    fn conditions_on_stores_in_loops_are_said_in_words() {
        let k = grid_stride64_kernel(START_GLOBAL, STEP_GRID, ROW_SIGNED, "s64");
        let (src, _) = parse(&k);
        let m = ptx::parse(&src).expect("test PTX parses");
        let c = conditions(&verdict(&k));
        assert!(!c.injective.is_empty());
        let text = c.explain(&m);
        assert!(text.contains("bytes a store writes at `"), "{text}");
        assert!(text.contains("are never the same for two threads"), "{text}");
    }

    #[test]
    fn a_label_just_before_a_loop_is_a_way_into_it() {
        // The grid-stride loop applies; a branch to a second label right
        // before the loop's own, taken before the check `i < n`, enters
        // the loop with any `i`: no bound, no condition.
        let k = grid_stride64_kernel(START_GLOBAL, STEP_GRID, ROW_SIGNED, "s64");
        assert!(!conditions(&verdict(&k)).injective.is_empty());
        let k = k
            .replace("$L__loop:", "$L__extra:\n$L__loop:")
            .replace("setp.ge.s64 %p1, %rd6, %rd2;", "setp.eq.s64 %p3, %rd6, 7;\n@%p3 bra $L__extra;\nsetp.ge.s64 %p1, %rd6, %rd2;");
        let v = verdict(&k);
        assert_eq!(kind(&v), Some(ExchangeKind::RepeatedWrite), "{v:?}");
    }

    /// [`rows_kernel`] with the element `(tid % 32) + 64 * (tid / 32)`
    /// computed as nvcc does for `int64_t` (q2_K's and q6_K's rows): the
    /// signed quotient `(tid + bias) >> 5` in 32 bits, the remainder as
    /// `tid - 32 * quotient` in 64; `change` edits those lines.
    fn digits64_kernel(change: &dyn Fn(String) -> String) -> String {
        let digits = change(
            "shr.s32 %r11, %r4, 31;\nshr.u32 %r12, %r11, 27;\nadd.s32 %r13, %r4, %r12;\nshr.s32 %r14, %r13, 5;\n\
             cvt.s64.s32 %rd30, %r4;\nmul.wide.s32 %rd31, %r14, 32;\nsub.s64 %rd32, %rd30, %rd31;\n\
             mul.wide.s32 %rd33, %r14, 64;\nadd.s64 %rd8, %rd32, %rd33;"
                .to_string(),
        );
        rows_kernel(&|s: String| s.replace("cvt.u64.u32 %rd8, %r4;", &digits))
    }

    #[test]
    fn a_64_bit_remainder_by_a_power_of_two_names_its_value_with_the_quotient() {
        let v = verdict(&digits64_kernel(&|s: String| s));
        let c = conditions(&v);
        assert_eq!(c.injective.len(), 1, "{c:?}");
        // The launch check against every thread's stores: `tid % 32`
        // strided 1 and `tid / 32` strided 64 pass up to 128 threads (four
        // quotients within the 256 elements of a block of the row), fail
        // beyond.
        let base = |b: &Base| (*b == P).then_some(0x1000_0000u64);
        let param = |ne00: i64| {
            move |v: &VarId, field: u32, _: bool| {
                let x = match v {
                    1 => ne00 as u64,
                    2 => 2,
                    3 => 4096,
                    _ => return None,
                };
                Some(if field == 0 { i64::from(x as u32) } else { i64::from((x >> 32) as u32 as i32) })
            }
        };
        let holds = |block: u32| c.injective.iter().all(|d| d.holds(&base, &param(1024), [1, 2, 2], [block, 1, 1]));
        assert!(holds(32) && holds(128));
        assert!(!holds(129) && !holds(256));
        // Not applied: a quotient by another power than the product's, a
        // remainder of another register than the quotient's, a product
        // by a constant that is not a power of two.
        let changes: [&dyn Fn(String) -> String; 3] = [
            &|s: String| s.replace("shr.s32 %r14, %r13, 5;", "shr.s32 %r14, %r13, 4;"),
            &|s: String| s.replace("cvt.s64.s32 %rd30, %r4;", "cvt.s64.s32 %rd30, %r11;"),
            &|s: String| s.replace("mul.wide.s32 %rd31, %r14, 32;", "mul.wide.s32 %rd31, %r14, 31;"),
        ];
        for change in changes {
            let src = digits64_kernel(change);
            assert!(matches!(verdict(&src), Verdict::Exchanges(_)), "{src}");
        }
    }
}
