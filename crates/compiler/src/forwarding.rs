//! Store-to-load forwarding of a warp's own stores (warp mode, host).
//!
//! Warp-synchronous scans and reductions store a whole warp's values and
//! read them back a few lanes over, within the same instructions' run:
//!
//! ```text
//! st.volatile.shared.u32 [%r21+128], %r24;   // s[lane + 32] = v
//! ld.volatile.shared.u32 %r25, [%r21+120];   // s[lane + 30]
//! ```
//!
//! As vector code the load straddles the two 64-byte stores just made, and
//! the processor cannot forward stored data to a load that needs bytes of
//! two stores (or of a store and older memory): the load waits until the
//! stores have reached the cache. In the program suite's block scan a
//! quarter of the scan kernel's samples sat on such loads. When every lane
//! the load reads was written by the warp's recent stores through the same
//! address register, the loaded vector is a shuffle of the stored ones and
//! no load is made.
//!
//! What makes it exact: a record is kept only from a store through an
//! address register of known shape, of single components, that executed
//! with every lane and stored 32 consecutive elements from lane 0's
//! address (checked at run time: `FnLower::run_is_whole`); a load uses the
//! records only when that held for each record it reads (otherwise it
//! loads as before). Records name their address register and are dropped
//! when the register is written, at every instruction that may write,
//! order or wait on memory (any other store included, unless it is itself
//! recorded through the same register), at block starts, suspensions and
//! versioned regions: between a record and a load that uses it no other
//! access can have written those bytes. The warps of a block take turns
//! only at suspensions, and another block's thread writing the same
//! location with plain accesses is a data race, whose loads PTX does not
//! define (ordered accesses never take the shaped path).

use crate::ir::{Ty, V};
use crate::lower::FnLower;
use crate::warp::W;
use ptx::ast::{AddrBase, Instruction, Opcode, Operand, RegId, StateSpace};

/// Records kept at most: a warp scan needs two (the zeroed half warp and
/// the last value store); older ones are rarely read again.
const MAX_RUNS: usize = 8;

/// A store of 32 consecutive elements by a whole warp (see the module).
#[derive(Clone, Debug)]
pub(crate) struct StoredRun {
    /// The address register and the immediate offset of the store.
    reg: RegId,
    offset: i64,
    space: Option<StateSpace>,
    /// The element size in bytes and the stored lanes' values.
    size: u32,
    value: V,
    /// What says, when a load uses the record, whether every lane executed
    /// and the lanes' addresses were lane 0's plus `lane * size`
    /// ([`FnLower::run_is_whole`]): the store's address shape, lane 16's
    /// distance when known, its addresses and its mask (values that
    /// dominate the rest of the block; nothing is computed for a store no
    /// load reads).
    shape: V,
    lane16: Option<V>,
    ptrs: V,
    mask: V,
}

impl StoredRun {
    /// The address register the store went through.
    pub(crate) fn reg(&self) -> RegId {
        self.reg
    }
}

/// Where each lane of a load of `size`-byte elements at `offset` from the
/// register finds its value among `runs` (latest last): the run's index
/// and the element, or None when some lane's bytes are not all in one
/// recorded element.
fn cover(runs: &[StoredRun], offset: i64, size: u32) -> Option<Vec<(usize, u32)>> {
    let size = i64::from(size);
    (0..i64::from(W))
        .map(|lane| {
            let at = offset + lane * size;
            runs.iter().enumerate().rev().find_map(|(k, run)| {
                let rel = at - run.offset;
                (i64::from(run.size) == size && rel >= 0 && rel < i64::from(W) * size && rel % size == 0)
                    .then_some((k, (rel / size) as u32))
            })
        })
        .collect()
}

impl<'c, 'm> FnLower<'c, 'm> {
    fn runs_mut(&mut self) -> Option<&mut Vec<StoredRun>> {
        self.warp.as_mut().map(|w| &mut w.stored_runs)
    }

    /// Drops the records `inst` may invalidate, before it is lowered (a
    /// store that is recorded itself keeps those of its register: see
    /// [`Self::record_run`]).
    pub(crate) fn runs_before(&mut self, inst: &Instruction) {
        let Some(runs) = self.warp.as_ref().map(|w| &w.stored_runs) else { return };
        if runs.is_empty() {
            return;
        }
        // Instructions that compute registers only keep them (their
        // destinations are dropped below); what may write, order or wait
        // on memory ends them all.
        if inst.op != Opcode::St && crate::shared_index::writes_memory(inst.op) {
            if let Some(r) = self.runs_mut() {
                r.clear();
            }
            return;
        }
        let mut defs = Vec::new();
        self.b.defs(inst, &mut defs);
        if let Some(r) = self.runs_mut() {
            r.retain(|run| !defs.contains(&run.reg));
        }
    }

    /// After a store: records it when it can be forwarded from (a shaped
    /// store of single components: its value, shape, lane 16's distance
    /// and addresses), and drops every record it may have overwritten.
    pub(crate) fn record_run(&mut self, address: &Operand, space: Option<StateSpace>, stored: Option<(V, u32, V, Option<V>, V)>) {
        let mask = self.mask();
        let Some(runs) = self.runs_mut() else { return };
        let (Some((AddrBase::Reg(reg), offset)), Some((value, size, shape, lane16, ptrs))) =
            (address.address(), stored.filter(|(v, ..)| v.lanes == W))
        else {
            runs.clear();
            return;
        };
        // Another register may point anywhere. Through the same register,
        // a record keeps what this store leaves alone, or what lies on
        // the same grid of elements (the lookup takes the latest record
        // first); one this store overwrites in part of an element (a byte
        // into a word's run, a word into a byte's) goes.
        let end = offset + i64::from(W * size);
        runs.retain(|run| {
            let overlaps = run.offset < end && offset < run.offset + i64::from(W * run.size);
            let same_grid = run.size == size && (run.offset - offset) % i64::from(size) == 0 && run.offset != offset;
            run.reg == reg && run.space == space && (!overlaps || same_grid)
        });
        if runs.len() == MAX_RUNS {
            runs.remove(0);
        }
        runs.push(StoredRun { reg, offset, space, size, value, shape, lane16, ptrs, mask });
    }

    /// The i1 that says a recorded store wrote 32 consecutive elements with
    /// every lane executing: the shape consecutive, lane 16 sixteen
    /// elements after lane 0, the mask full.
    fn run_is_whole(&mut self, run: &StoredRun) -> V {
        let consecutive = self.out.def_scalar(Ty::I1, format_args!("icmp eq {}, {}", run.shape, crate::warp::SHAPE_HALVES_CONSECUTIVE));
        let apart = match &run.lane16 {
            Some(d) => d.clone(),
            None => {
                let p0 = self.out.def_scalar(Ty::Ptr, format_args!("extractelement {}, i32 0", run.ptrs));
                let p16 = self.out.def_scalar(Ty::Ptr, format_args!("extractelement {}, i32 16", run.ptrs));
                let a0 = self.out.def_scalar(Ty::I64, format_args!("ptrtoint {p0} to i64"));
                let a16 = self.out.def_scalar(Ty::I64, format_args!("ptrtoint {p16} to i64"));
                self.out.def_scalar(Ty::I64, format_args!("sub {a16}, {}", a0.s))
            }
        };
        let joined = self.out.def_scalar(Ty::I1, format_args!("icmp eq {apart}, {}", 16 * run.size));
        // Every lane executing.
        let full = self.all(&run.mask);
        let both = self.out.def_scalar(Ty::I1, format_args!("and {consecutive}, {}", joined.s));
        self.out.def_scalar(Ty::I1, format_args!("and {both}, {}", full.s))
    }

    /// The value a load of `ety` at `address` reads, from the warp's
    /// recorded stores, when they cover every lane: `Some((whole, value))`,
    /// valid where the i1 `whole` holds at run time (the caller loads
    /// otherwise).
    pub(crate) fn forwarded(&mut self, address: &Operand, space: Option<StateSpace>, ety: Ty, size: u32) -> Option<(V, V)> {
        let Some((AddrBase::Reg(reg), offset)) = address.address() else { return None };
        let runs: Vec<StoredRun> =
            self.warp.as_ref()?.stored_runs.iter().filter(|run| run.reg == reg && run.space == space).cloned().collect();
        let lanes = cover(&runs, offset, size)?;
        let mut used: Vec<usize> = lanes.iter().map(|&(k, _)| k).collect();
        used.sort_unstable();
        used.dedup();
        // Accesses are made as integers of their size (an `.f32` store is
        // an i32 one), so the latest store of each lane's element has the
        // load's type; checked after the lookup, never by leaving a newer
        // record out of it.
        if used.iter().any(|&k| runs[k].value.ty != ety) {
            return None;
        }
        let t = ety.name();
        // Lanes taken so far are at their own index in the accumulator;
        // each further run is the second operand of one shuffle.
        let mut acc: Option<V> = None;
        let mut whole: Option<V> = None;
        for &k in &used {
            let run = &runs[k];
            let idx: Vec<String> = lanes
                .iter()
                .enumerate()
                .map(|(i, &(src, e))| {
                    if src == k {
                        format!("i32 {}", W + e)
                    } else if src < k {
                        // Placed by an earlier run (`used` is ascending).
                        format!("i32 {i}")
                    } else {
                        "i32 poison".to_string()
                    }
                })
                .collect();
            let first = acc.as_ref().map_or_else(|| format!("<{W} x {t}> poison"), |a| a.to_string());
            acc = Some(self.out.def(ety, format_args!("shufflevector {first}, {}, <{W} x i32> <{}>", run.value, idx.join(", "))));
            let this = self.run_is_whole(run);
            whole = Some(match whole {
                None => this,
                Some(w) => self.out.def_scalar(Ty::I1, format_args!("and {w}, {}", this.s)),
            });
        }
        Some((whole?, acc?))
    }
}
