//! The warp path: kernels compiled in warp mode whose warps wait for each
//! other (barriers, spin loops). A warp's function returns when it must
//! wait, having saved its state in a frame of its own (`cpu_abi::WarpFn`),
//! so the warps of a block take turns by plain calls: no coroutine per
//! warp, no stack switch per barrier. One coroutine per runner and launch
//! exists only so that a fault, trap or deadlock can abandon a block, as on
//! the fast path.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use compiler::cpu_abi::{warp_frame, BlockCtx, WarpFn};

use super::job::Job;
use super::local::Local;
use super::LaunchError;

/// Blocks a runner reports finished at once. Reporting is a locked
/// instruction that waits for the block's stores to drain, and with one
/// report per block it was the runner loop's most sampled instruction in
/// llama.cpp's generation (matrix-vector kernels of 256 blocks of about
/// half a microsecond). Sixteen such blocks take microseconds, so the
/// pool's monitor, which looks for progress every half stall period, still
/// sees a launch progress.
const FINISH_BATCH: u64 = 16;

/// Barrier ids of a block (`bar.sync 0..15`).
const BARRIERS: usize = 16;

/// 64 bytes, the alignment of a warp's frame.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WarpState {
    Ready,
    AtBarrier(u8),
    Done,
}

#[derive(Default)]
struct Barrier {
    arrived: u32,
    /// Warps expected; 0: every warp that has not finished.
    count: u32,
    waiters: Vec<u32>,
}

/// One runner's scheduling state, reused from block to block.
#[derive(Default)]
pub(crate) struct Warps {
    frames: Vec<Line>,
    lines_per_warp: usize,
    state: Vec<WarpState>,
    /// Barriers each warp arrived at without waiting (`bar.arrive`), as
    /// bits: such an arrival stops counting when the warp finishes.
    arrived_only: Vec<u16>,
    barriers: Vec<Barrier>,
    ready: VecDeque<u32>,
    yielded: Vec<u32>,
    live: u32,
    /// Some warp of the block used `bar.arrive`.
    any_arrived_only: bool,
    /// Bit `id` set: barrier `id` has arrivals (a finishing warp only
    /// looks at those).
    busy: u32,
}

impl Warps {
    /// Prepares for a block of `warps` warps; fails when their frames
    /// (registers and local memory) do not fit in memory.
    fn reset(&mut self, warps: usize, frame_bytes: usize) -> Result<(), LaunchError> {
        self.lines_per_warp = frame_bytes.div_ceil(64).max(1);
        let too_big = || LaunchError::OutOfResources(format!("{warps} warp frames of {frame_bytes} bytes"));
        let lines = warps.checked_mul(self.lines_per_warp).ok_or_else(too_big)?;
        if self.frames.len() < lines {
            self.frames.try_reserve(lines - self.frames.len()).map_err(|_| too_big())?;
            self.frames.resize(lines, Line([0; 64]));
        }
        for w in 0..warps {
            // Only the resume point must be 0: everything else is written
            // before it is read.
            self.frames[w * self.lines_per_warp].0[warp_frame::RESUME..warp_frame::RESUME + 4].fill(0);
        }
        self.state.clear();
        self.state.resize(warps, WarpState::Ready);
        self.arrived_only.clear();
        self.arrived_only.resize(warps, 0);
        self.barriers.resize_with(BARRIERS, Barrier::default);
        for b in &mut self.barriers {
            b.arrived = 0;
            b.count = 0;
            b.waiters.clear();
        }
        self.ready.clear();
        self.ready.extend(0..warps as u32);
        self.yielded.clear();
        self.live = warps as u32;
        self.any_arrived_only = false;
        self.busy = 0;
        Ok(())
    }

    fn frame(&mut self, w: u32) -> *mut u8 {
        self.frames[w as usize * self.lines_per_warp..].as_mut_ptr().cast()
    }

    fn field(&mut self, w: u32, offset: usize) -> u32 {
        let line = &self.frames[w as usize * self.lines_per_warp];
        u32::from_le_bytes([line.0[offset], line.0[offset + 1], line.0[offset + 2], line.0[offset + 3]])
    }

    /// Runs the warps of one block until all have finished.
    fn run_block(&mut self, job: &Job, ctx: *mut BlockCtx, warp_fn: WarpFn, block: [u32; 3]) -> Result<(), LaunchError> {
        let mut spin_rounds = 0u32;
        let stride = u32::try_from(self.lines_per_warp * 64)
            .map_err(|_| LaunchError::OutOfResources(format!("warp frames of {} bytes", self.lines_per_warp * 64)))?;
        loop {
            let mut progress = false;
            while let Some(first) = self.ready.pop_front() {
                // The ready warps that follow in order may run in the same
                // call, each going on when the one before waits at a plain
                // barrier (the WarpFn contract).
                let mut end = first + 1;
                while self.ready.front() == Some(&end) {
                    self.ready.pop_front();
                    end += 1;
                }
                // The whole block in the chain, nobody at barrier 0: the
                // compiled code completes plain barriers by itself.
                let wrap = first == 0 && end as usize == self.state.len() && self.live == end && self.barriers[0].arrived == 0;
                let frame = self.frame(first);
                // SAFETY: `ctx` is the runner's block context; the WarpFn
                // contract: the frames of warps `first..end` lie `stride`
                // bytes apart, each the kernel's `frame_bytes`, 64-byte
                // aligned, and belong to those warps.
                let (r, round, w) = unsafe {
                    (*ctx).chain_end = end;
                    (*ctx).frame_stride = stride;
                    (*ctx).chain_first = first;
                    (*ctx).chain_last = first;
                    (*ctx).chain_wrap = u32::from(wrap);
                    let r = warp_fn(job.params(), ctx, first, frame);
                    (r, (*ctx).chain_first, (*ctx).chain_last)
                };
                if round > w || w >= end || (round != first && !wrap) {
                    return Err(LaunchError::Internal(format!("warp chain of {first}..{end} ended at warps {round}..{w}")));
                }
                if round != first || w != first {
                    progress = true;
                }
                if w > round {
                    if !(round..w).any(|c| self.field(c, warp_frame::KIND) == warp_frame::DONE) {
                        self.arrive_chain(round, w);
                    } else {
                        // Finishing warps change what completes the barrier:
                        // one event after the other, in order.
                        for c in round..w {
                            if self.field(c, warp_frame::KIND) == warp_frame::DONE {
                                self.finish(c);
                            } else {
                                self.arrive(c, 0, 0, true);
                            }
                        }
                    }
                }
                // The warps the chain did not reach run next, in order.
                for c in (w + 1..end).rev() {
                    self.ready.push_front(c);
                }
                if r == warp_frame::FINISHED {
                    progress = true;
                    self.finish(w);
                    continue;
                }
                let kind = self.field(w, warp_frame::KIND);
                let id = self.field(w, warp_frame::BARRIER_ID);
                let count = self.field(w, warp_frame::BARRIER_COUNT);
                match kind {
                    warp_frame::BARRIER | warp_frame::ARRIVE => {
                        progress = true;
                        if id as usize >= BARRIERS {
                            return Err(LaunchError::Internal(format!("barrier id {id} out of range")));
                        }
                        self.arrive(w, id as usize, count, kind == warp_frame::BARRIER);
                    }
                    warp_frame::YIELD => self.yielded.push(w),
                    warp_frame::TURN => {
                        progress = true;
                        self.yielded.push(w);
                    }
                    other => return Err(LaunchError::Internal(format!("warp {w} suspended for an unknown reason {other}"))),
                }
            }
            if self.live == 0 {
                return Ok(());
            }
            if self.yielded.is_empty() {
                return Err(LaunchError::Deadlock { block, description: self.describe_deadlock() });
            }
            // Warps spin on memory: the others ran first. When nothing but
            // spinning happened, the memory is another block's or the
            // host's: give the core away, more and more patiently.
            if progress {
                spin_rounds = 0;
            } else {
                job.yields.fetch_add(1, Ordering::Relaxed);
                if job.failed() {
                    return Err(LaunchError::Internal("launch cancelled".into()));
                }
                spin_rounds = spin_rounds.saturating_add(1);
                if spin_rounds < 16 {
                    std::thread::yield_now();
                } else {
                    let micros = 1u64 << (spin_rounds - 16).min(10);
                    std::thread::sleep(Duration::from_micros(micros.min(1000)));
                }
            }
            self.ready.extend(self.yielded.drain(..));
        }
    }

    fn arrive(&mut self, w: u32, id: usize, count: u32, wait: bool) {
        let barrier = &mut self.barriers[id];
        if barrier.arrived == 0 {
            barrier.count = count;
        }
        barrier.arrived += 1;
        self.busy |= 1 << id;
        if wait {
            barrier.waiters.push(w);
            self.state[w as usize] = WarpState::AtBarrier(id as u8);
        } else {
            self.arrived_only[w as usize] |= 1 << id;
            self.any_arrived_only = true;
            self.ready.push_front(w);
        }
        self.check(id);
    }

    /// Warps `first..end` arrived, in order, at a plain `bar.sync 0`.
    fn arrive_chain(&mut self, first: u32, end: u32) {
        let barrier = &mut self.barriers[0];
        if barrier.count != 0 && barrier.arrived != 0 {
            // Barrier 0 is counting a thread count: warp after warp.
            for c in first..end {
                self.arrive(c, 0, 0, true);
            }
            return;
        }
        // Counting every warp: the chain cannot complete it, since the
        // warp that ended the chain has not arrived.
        barrier.count = 0;
        barrier.arrived += end - first;
        barrier.waiters.extend(first..end);
        if end > first {
            self.busy |= 1;
        }
        for c in first..end {
            self.state[c as usize] = WarpState::AtBarrier(0);
        }
        self.check(0);
    }

    fn finish(&mut self, w: u32) {
        self.state[w as usize] = WarpState::Done;
        self.live -= 1;
        let arrived = std::mem::take(&mut self.arrived_only[w as usize]);
        // Barriers nobody waits at: one warp fewer changes nothing there.
        let mut busy = self.busy;
        while busy != 0 {
            let id = busy.trailing_zeros() as usize;
            busy &= busy - 1;
            let barrier = &mut self.barriers[id];
            if arrived & (1 << id) != 0 && barrier.count == 0 {
                barrier.arrived -= 1;
                if barrier.arrived == 0 {
                    self.busy &= !(1 << id);
                }
            }
            if barrier.count == 0 {
                self.check(id);
            }
        }
    }

    /// Releases barrier `id` if every expected warp has arrived.
    fn check(&mut self, id: usize) {
        let barrier = &mut self.barriers[id];
        let expected = if barrier.count == 0 { self.live } else { barrier.count };
        if barrier.arrived == 0 || barrier.arrived < expected {
            return;
        }
        for &w in &barrier.waiters {
            self.state[w as usize] = WarpState::Ready;
            self.ready.push_back(w);
        }
        barrier.waiters.clear();
        barrier.arrived = 0;
        self.busy &= !(1 << id);
        if self.any_arrived_only {
            for bits in &mut self.arrived_only {
                *bits &= !(1 << id);
            }
        }
    }

    fn describe_deadlock(&self) -> String {
        let mut parts = Vec::new();
        for (w, s) in self.state.iter().enumerate() {
            if let WarpState::AtBarrier(id) = s {
                let b = &self.barriers[*id as usize];
                let expected = if b.count == 0 { self.live } else { b.count };
                parts.push(format!("warp {w} waits at barrier {id} ({} of {expected} warps arrived)", b.arrived));
            }
        }
        format!("{}; {} warps have not finished", parts.join(", "), self.live)
    }
}

pub(crate) fn run(job: &Arc<Job>, local: &mut Local, smid: u32) {
    // SAFETY: for kernels compiled in warp mode (`lanes` > 1) the `thread`
    // symbol has the WarpFn signature (cpu_abi).
    let warp_fn: WarpFn = unsafe { std::mem::transmute::<compiler::cpu_abi::ThreadFn, WarpFn>(job.thread_fn) };
    let shared_len = job.shared_bytes as usize;
    let mut warps = local.warps.take().unwrap_or_default();
    let warps_ptr: *mut Warps = &mut warps;
    super::fast::run_in_coroutine(job, local, smid, move |rt, job, ctx, shared| {
        // SAFETY: `warps` outlives the coroutine (`run_in_coroutine`
        // returns before it is put back) and only this thread uses it.
        let warps = unsafe { &mut *warps_ptr };
        // Blocks that may wait for each other (a loop that spins on memory,
        // a cooperative launch's grid barrier) are claimed one at a time,
        // so that none is held while another runs; the others in runs, as
        // on the fast path (one contended claim per run instead of one
        // per block: llama.cpp's matrix-vector kernels run thousands of
        // one-row blocks). Finished blocks are reported [`FINISH_BATCH`]
        // at a time (`unfinished` counts them and the run's unstarted ones
        // meanwhile, so that an abandoned run still reports them).
        let one_at_a_time = job.spin_waits || job.cooperative;
        let mut done = 0;
        let mut run = 0..0;
        loop {
            if run.is_empty() {
                match if one_at_a_time { job.claim().map(|i| i..i + 1) } else { job.claim_run() } {
                    Some(r) => run = r,
                    None => break,
                }
            }
            let index = run.start;
            run.start += 1;
            let left = run.end - run.start;
            rt.unfinished.set(done + 1 + left);
            if !job.failed() {
                let block = job.block_index(index);
                rt.block.set(block);
                // SAFETY: `ctx` is the runner's context and `shared` holds
                // `shared_len` bytes (`run_in_coroutine`).
                unsafe {
                    (*ctx).ctaid = block;
                    std::ptr::write_bytes(shared, 0, shared_len);
                }
                let result =
                    warps.reset(job.units as usize, job.frame_bytes as usize).and_then(|()| warps.run_block(job, ctx, warp_fn, block));
                // SAFETY: `ctx` is the runner's context, its table the runner's.
                unsafe { super::local::flush_block_adds(ctx) };
                if let Err(error) = result {
                    rt.end(Some(error));
                }
            }
            done += 1;
            rt.unfinished.set(done + left);
            if done == FINISH_BATCH {
                rt.unfinished.set(left);
                job.finish_blocks(done);
                done = 0;
            }
        }
        rt.unfinished.set(0);
        job.finish_blocks(done);
    });
    local.warps = Some(warps);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_barrier_of_every_warp_waits_for_all_that_have_not_finished() {
        let mut w = Warps::default();
        w.reset(3, 256).expect("frames");
        w.ready.clear();
        w.arrive(0, 0, 0, true);
        assert_eq!(w.state[0], WarpState::AtBarrier(0));
        w.finish(2);
        assert!(w.ready.is_empty(), "one of two live warps arrived");
        w.arrive(1, 0, 0, true);
        assert_eq!(w.ready.iter().copied().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(w.state[..2], [WarpState::Ready, WarpState::Ready]);
    }

    #[test]
    fn a_finishing_warp_completes_a_barrier_the_others_wait_at() {
        let mut w = Warps::default();
        w.reset(2, 256).expect("frames");
        w.ready.clear();
        w.arrive(0, 3, 0, true);
        w.finish(1);
        assert_eq!(w.ready.iter().copied().collect::<Vec<_>>(), vec![0]);
    }

    /// Bit `id` of `busy` is set exactly when barrier `id` has arrivals.
    fn busy_matches(w: &Warps) -> bool {
        (0..BARRIERS).all(|id| (w.busy >> id & 1 == 1) == (w.barriers[id].arrived > 0))
    }

    #[test]
    fn finishing_warps_see_every_barrier_with_arrivals() {
        let mut w = Warps::default();
        w.reset(4, 256).expect("frames");
        w.ready.clear();
        w.arrive(0, 0, 0, true);
        w.arrive(1, 5, 0, false);
        w.arrive_chain(2, 3);
        assert!(busy_matches(&w) && w.busy == 0b100001, "{:b}", w.busy);
        // Warp 1's early arrival stops counting; barrier 0 still waits.
        w.finish(1);
        assert!(busy_matches(&w) && w.busy == 0b1, "{:b}", w.busy);
        // The last warp finishing completes barrier 0.
        w.finish(3);
        assert!(busy_matches(&w) && w.busy == 0, "{:b}", w.busy);
        assert_eq!(w.ready.iter().copied().collect::<Vec<_>>(), vec![1, 0, 2]);
    }

    #[test]
    fn counted_barriers_release_at_their_count() {
        let mut w = Warps::default();
        w.reset(4, 256).expect("frames");
        w.ready.clear();
        w.arrive(0, 1, 2, true);
        assert!(w.ready.is_empty());
        w.arrive(3, 1, 2, false);
        // The arriving warp goes on at once, the waiting one is released.
        assert_eq!(w.ready.iter().copied().collect::<Vec<_>>(), vec![3, 0]);
    }

    #[test]
    fn an_early_arrival_of_a_finished_warp_no_longer_counts() {
        let mut w = Warps::default();
        w.reset(3, 256).expect("frames");
        w.ready.clear();
        w.arrive(0, 0, 0, false);
        w.ready.clear();
        w.finish(0);
        w.arrive(1, 0, 0, true);
        assert!(w.ready.is_empty(), "warp 2 has not arrived");
        w.arrive(2, 0, 0, true);
        assert_eq!(w.ready.len(), 2);
    }

    #[test]
    fn a_chain_of_plain_arrivals_waits_at_barrier_0_until_the_last_warp() {
        let mut w = Warps::default();
        w.reset(4, 256).expect("frames");
        w.ready.clear();
        w.arrive_chain(0, 3);
        assert!(w.ready.is_empty());
        assert_eq!(w.state[..3], [WarpState::AtBarrier(0); 3]);
        assert_eq!(w.barriers[0].arrived, 3);
        w.arrive(3, 0, 0, true);
        assert_eq!(w.ready.iter().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(w.barriers[0].arrived, 0);
    }

    #[test]
    fn a_chain_into_a_counted_barrier_0_arrives_warp_by_warp() {
        // Warp 3 opened barrier 0 with a count of 2 warps: the chain's first
        // arrival completes it, the second opens the next round.
        let mut w = Warps::default();
        w.reset(4, 256).expect("frames");
        w.ready.clear();
        w.arrive(3, 0, 2, true);
        w.arrive_chain(0, 2);
        assert_eq!(w.ready.iter().copied().collect::<Vec<_>>(), vec![3, 0]);
        assert_eq!(w.state[1], WarpState::AtBarrier(0));
        assert_eq!(w.barriers[0].arrived, 1);
    }

    #[test]
    fn frames_too_big_for_memory_are_an_error() {
        let mut w = Warps::default();
        assert!(matches!(w.reset(usize::MAX / 2, 1 << 20), Err(LaunchError::OutOfResources(_))));
        assert!(matches!(w.reset(1 << 20, 1 << 40), Err(LaunchError::OutOfResources(_))));
    }

    #[test]
    fn deadlocks_name_the_waiting_warps() {
        let mut w = Warps::default();
        w.reset(2, 256).expect("frames");
        w.ready.clear();
        w.arrive(0, 5, 2, true);
        w.finish(1);
        let d = w.describe_deadlock();
        assert!(d.contains("warp 0 waits at barrier 5 (1 of 2 warps arrived)"), "{d}");
    }
}
