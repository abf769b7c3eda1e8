//! The scheduled path: one coroutine per CUDA thread, and a scheduler per
//! block that switches between them.
//!
//! Threads run in a round-robin queue until they suspend in a runtime call.
//! Barriers complete as soon as their last participant arrives (threads
//! that exited count as arrived for barriers of the whole block). A warp
//! collective completes as soon as every lane its mask names is parked at
//! the same instruction; when nothing can run any more, the lowest waiting
//! instruction of each warp is resolved with the lanes that reached it
//! (plus mask lanes waiting at another instruction of the same kind),
//! which is how divergent lanes reconverge. If even that is impossible,
//! the block is deadlocked and the launch fails saying who waits where.

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use compiler::cpu_abi::{bar_red, BlockCtx};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::fault::{self, FpState, RunEnd, TrapSlot};
use super::job::Job;
use super::local::{GuardedStack, Local};
use super::runtime::{BlockRt, Slot, Wait};
use super::warp::{self, lanes, LaneOp, WarpKind};
use super::LaunchError;

type ThreadCoroutine = Coroutine<(), (), RunEnd, GuardedStack>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ready,
    AtBarrier(u8),
    AtWarp,
    Exited,
}

#[derive(Default)]
struct Barrier {
    arrived: u32,
    /// Thread count of the current phase; 0 = all threads of the block.
    count: u32,
    waiters: Vec<u32>,
    /// Threads that arrived without waiting (`bar.arrive`).
    arrivals: Vec<u32>,
    popc: u32,
    all: bool,
    any: bool,
    op: Option<u32>,
}

/// Reusable per-runner scheduler storage.
#[derive(Default)]
pub(crate) struct SchedState {
    slots: Vec<Slot>,
    coroutines: Vec<Option<ThreadCoroutine>>,
    /// Lowest address of each thread's stack mapping, for fault handling.
    limits: Vec<usize>,
    state: Vec<State>,
    arrived_only: Vec<u16>,
    run: VecDeque<u32>,
    warp_live: Vec<u32>,
    warp_parked: Vec<u32>,
    barriers: [Barrier; 16],
    /// Barriers with arrivals in their current phase.
    active_barriers: u16,
    live: u32,
    /// Consecutive yields with no other event in between.
    streak: usize,
    /// Rounds in which every runnable thread only yielded.
    spin_rounds: u32,
    /// Per warp, the snapshot of its last matrix exchange.
    snapshots: Vec<Vec<u8>>,
}

struct Env<'a> {
    job: &'a Job,
    rt: &'a BlockRt,
    block: [u32; 3],
    fp: FpState,
    trap: &'a TrapSlot,
}

/// Claims and runs blocks of `job` until none are left.
pub(crate) fn run(job: &Arc<Job>, local: &mut Local, smid: u32) {
    let Some(shared) = local.shared_window(job.shared_bytes as usize) else {
        job.fail(LaunchError::OutOfResources(format!("{} bytes of shared memory", job.shared_bytes)));
        return;
    };
    let mut state = local.sched.take().unwrap_or_default();
    state.prepare_slots(job.units as usize);
    let rt = BlockRt::new(job, true);
    rt.slots.set(state.slots.as_ptr());
    let mut ctx = job.block_ctx(smid, shared, (&rt as *const BlockRt).cast_mut().cast());
    ctx.private_adds = local.private_adds(job.privatise);
    let fp = FpState::save();
    let trap = TrapSlot::default();
    if job.deadline.is_some() {
        trap.watch(&job.cancel, &job.code);
    }
    let _registration = fault::register(&trap);
    while let Some(index) = job.claim() {
        let block = job.block_index(index);
        rt.block.set(block);
        ctx.ctaid = block;
        // SAFETY: the window holds at least `shared_bytes` bytes.
        unsafe { std::ptr::write_bytes(shared, 0, job.shared_bytes as usize) };
        let env = Env { job, rt: &rt, block, fp, trap: &trap };
        let result = state.run_block(&env, local, &mut ctx);
        // SAFETY: `ctx` is this runner's, its table the runner's.
        unsafe { super::local::flush_block_adds(&mut ctx) };
        if let Err(error) = result {
            tracing::debug!(block = ?block, "block failed: {error}");
            job.fail(error);
        }
        job.finish_blocks(1);
    }
    local.sched = Some(state);
}

impl SchedState {
    fn prepare_slots(&mut self, n: usize) {
        if self.slots.len() < n {
            self.slots.resize_with(n, Slot::default);
        }
    }

    fn run_block(&mut self, env: &Env, local: &mut Local, ctx: &mut BlockCtx) -> Result<(), LaunchError> {
        self.reset(env.job.units as usize);
        let result = self.schedule(env, local, ctx);
        self.release_threads(local);
        result
    }

    fn reset(&mut self, n: usize) {
        self.state.clear();
        self.state.resize(n, State::Ready);
        self.arrived_only.clear();
        self.arrived_only.resize(n, 0);
        self.run.clear();
        self.run.extend(0..n as u32);
        let warps = n.div_ceil(32);
        self.warp_live.clear();
        self.warp_live.extend((0..warps).map(|w| {
            let lanes_here = (n - w * 32).min(32);
            if lanes_here == 32 {
                u32::MAX
            } else {
                (1u32 << lanes_here) - 1
            }
        }));
        self.warp_parked.clear();
        self.warp_parked.resize(warps, 0);
        for barrier in &mut self.barriers {
            barrier.arrived = 0;
            barrier.waiters.clear();
            barrier.arrivals.clear();
        }
        self.active_barriers = 0;
        self.live = n as u32;
        self.streak = 0;
        self.spin_rounds = 0;
        self.coroutines.clear();
        self.coroutines.resize_with(n, || None);
        self.limits.clear();
        self.limits.resize(n, 0);
    }

    /// Creates thread `t`'s coroutine when it first runs, so that threads
    /// that finish without suspending hand their (cache-hot) stack straight
    /// to the next thread.
    fn start_thread(&mut self, env: &Env, local: &mut Local, ctx: &mut BlockCtx, t: u32) -> Result<(), LaunchError> {
        let job = env.job;
        let stack_size = job.shared.thread_stack_size.load(Ordering::Relaxed);
        let stack = local
            .take_thread_stack(stack_size)
            .map_err(|error| LaunchError::OutOfResources(format!("stack for thread {t} of a block of {}: {error}", job.nthreads)))?;
        let slot = env.rt_slot(t);
        slot.wait.set(Wait::None);
        slot.result.set(0);
        slot.yields.set(0);
        slot.stack.set((stack.usable_low(), stack.top()));
        self.limits[t as usize] = stack.lowest();
        let slot_ptr: *const Slot = slot;
        let ctx_ptr: *mut BlockCtx = ctx;
        let params = job.params();
        let thread_fn = job.thread_fn;
        let [x, y, z] = env.rt.thread_coords(t);
        self.coroutines[t as usize] = Some(Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| -> RunEnd {
            // SAFETY: the slot, context and parameters outlive the
            // coroutine (it is finished or reset before `run_block`
            // returns); the kernel function has the ThreadFn contract.
            unsafe {
                (*slot_ptr).yielder.set(yielder);
                thread_fn(params, ctx_ptr, x, y, z);
            }
            Ok(())
        }));
        Ok(())
    }

    /// Returns a finished (or abandoned) thread's stack to the pool.
    fn retire_thread(&mut self, local: &mut Local, t: u32) {
        if let Some(mut coroutine) = self.coroutines[t as usize].take() {
            if !coroutine.done() {
                // SAFETY: the thread is abandoned mid-way (exit, failure or
                // never started); its stack holds only JIT frames and
                // runtime frames that own nothing, so skipping their
                // destructors is fine.
                unsafe { coroutine.force_reset() };
            }
            local.put_thread_stack(coroutine.into_stack());
        }
    }

    fn release_threads(&mut self, local: &mut Local) {
        for t in 0..self.coroutines.len() {
            self.retire_thread(local, t as u32);
        }
    }

    fn schedule(&mut self, env: &Env, local: &mut Local, ctx: &mut BlockCtx) -> Result<(), LaunchError> {
        loop {
            while let Some(t) = self.run.pop_front() {
                if self.coroutines[t as usize].is_none() {
                    self.start_thread(env, local, ctx, t)?;
                }
                if self.step(env, t)? {
                    self.retire_thread(local, t);
                }
            }
            if self.live == 0 {
                return Ok(());
            }
            if !self.resolve_stalled_warps(env) {
                return Err(LaunchError::Deadlock { block: env.block, description: self.describe_deadlock(env) });
            }
        }
    }

    /// Resumes thread `t` until it suspends; returns whether it is gone.
    fn step(&mut self, env: &Env, t: u32) -> Result<bool, LaunchError> {
        let index = t as usize;
        env.rt.current.set(t);
        let Some(coroutine) = self.coroutines[index].as_mut() else {
            return Err(LaunchError::Internal(format!("thread {t} has no coroutine")));
        };
        env.trap.arm(coroutine.trap_handler(), self.limits[index]);
        let result = coroutine.resume(());
        env.trap.disarm();
        match result {
            CoroutineResult::Return(Ok(())) => {
                self.streak = 0;
                self.exit(env, t);
                Ok(true)
            }
            CoroutineResult::Return(Err(fault)) => {
                env.fp.restore();
                let thread = env.rt.thread_coords(t);
                tracing::debug!(block = ?env.block, ?thread, "fault: {fault:?}");
                Err(fault.into_error(env.block, env.job.timeout))
            }
            CoroutineResult::Yield(()) => match env.rt_slot(t).wait.get() {
                Wait::Yield => self.on_yield(env, t).map(|()| false),
                Wait::Barrier { id, count, red, wait, .. } => {
                    self.progress();
                    self.arrive(env, t, id as usize, count, red, wait);
                    Ok(false)
                }
                Wait::Warp { .. } => {
                    self.progress();
                    self.park_warp(env, t);
                    Ok(false)
                }
                Wait::Exit => {
                    self.progress();
                    self.exit(env, t);
                    Ok(true)
                }
                Wait::Fail => {
                    env.fp.restore();
                    Err(env.rt.error.take().unwrap_or_else(|| LaunchError::Internal("thread failed".into())))
                }
                Wait::None => Err(LaunchError::Internal(format!("thread {t} suspended without a reason"))),
            },
        }
    }

    fn progress(&mut self) {
        self.streak = 0;
        self.spin_rounds = 0;
    }

    fn on_yield(&mut self, env: &Env, t: u32) -> Result<(), LaunchError> {
        self.run.push_back(t);
        self.streak += 1;
        if self.streak < self.run.len() {
            return Ok(());
        }
        // Every runnable thread yielded since anything else happened: they
        // spin. Lanes parked where their warp meets (`activemask`, the
        // compiler's meetings) may be what they wait for: a GPU's warp
        // runs its diverged paths in turn, so those lanes go on with the
        // lanes that reached the meeting.
        self.streak = 0;
        if self.resolve_stalled_warps(env) {
            self.spin_rounds = 0;
            return Ok(());
        }
        // Otherwise they wait for memory another block (or the host)
        // writes. Give the other OS threads the core, more and more
        // patiently.
        env.job.yields.fetch_add(1, Ordering::Relaxed);
        if env.job.failed() {
            return Err(LaunchError::Internal("launch cancelled".into()));
        }
        self.spin_rounds = self.spin_rounds.saturating_add(1);
        if self.spin_rounds < 16 {
            std::thread::yield_now();
        } else {
            let micros = 1u64 << (self.spin_rounds - 16).min(10);
            std::thread::sleep(Duration::from_micros(micros.min(1000)));
        }
        Ok(())
    }

    fn exit(&mut self, env: &Env, t: u32) {
        let index = t as usize;
        self.state[index] = State::Exited;
        self.live -= 1;
        let warp = index / 32;
        self.warp_live[warp] &= !(1 << (t % 32));
        // An early `bar.arrive` of a thread that exits no longer counts
        // for barriers of the whole block: it is counted as exited instead.
        let arrived = std::mem::take(&mut self.arrived_only[index]);
        for id in lanes(u32::from(arrived)) {
            let barrier = &mut self.barriers[id as usize];
            if barrier.count == 0 {
                barrier.arrived -= 1;
                barrier.arrivals.retain(|&other| other != t);
                if barrier.arrived == 0 {
                    self.active_barriers &= !(1 << id);
                }
            }
        }
        for id in lanes(u32::from(self.active_barriers)) {
            if self.barriers[id as usize].count == 0 {
                self.check_barrier(env, id as usize);
            }
        }
    }

    fn arrive(&mut self, env: &Env, t: u32, id: usize, count: u32, red: Option<(u32, bool)>, wait: bool) {
        let barrier = &mut self.barriers[id];
        if barrier.arrived == 0 {
            barrier.count = count;
            barrier.popc = 0;
            barrier.all = true;
            barrier.any = false;
            barrier.op = None;
        }
        barrier.arrived += 1;
        self.active_barriers |= 1 << id;
        if let Some((op, pred)) = red {
            barrier.op = Some(op);
            barrier.popc += u32::from(pred);
            barrier.all &= pred;
            barrier.any |= pred;
        }
        if wait {
            barrier.waiters.push(t);
            self.state[t as usize] = State::AtBarrier(id as u8);
        } else {
            barrier.arrivals.push(t);
            self.arrived_only[t as usize] |= 1 << id;
            self.run.push_front(t);
        }
        self.check_barrier(env, id);
    }

    fn check_barrier(&mut self, env: &Env, id: usize) {
        let barrier = &mut self.barriers[id];
        if barrier.arrived == 0 {
            return;
        }
        let expected = if barrier.count == 0 { self.live } else { barrier.count };
        if barrier.arrived < expected {
            return;
        }
        let result = match barrier.op {
            Some(bar_red::POPC) => barrier.popc,
            Some(bar_red::AND) => u32::from(barrier.all),
            Some(bar_red::OR) => u32::from(barrier.any),
            _ => 0,
        };
        for &t in &barrier.waiters {
            env.rt_slot(t).result.set(u64::from(result));
            self.state[t as usize] = State::Ready;
            self.run.push_back(t);
        }
        for &t in &barrier.arrivals {
            self.arrived_only[t as usize] &= !(1 << id);
        }
        barrier.waiters.clear();
        barrier.arrivals.clear();
        barrier.arrived = 0;
        self.active_barriers &= !(1 << id);
    }

    fn park_warp(&mut self, env: &Env, t: u32) {
        self.state[t as usize] = State::AtWarp;
        let warp = (t / 32) as usize;
        let lane = t % 32;
        self.warp_parked[warp] |= 1 << lane;
        if let Some((kind, group)) = self.eager_group(env, warp, lane) {
            self.resolve(env, warp, kind, group);
        }
    }

    fn lane_wait(&self, env: &Env, warp: usize, lane: u32) -> Option<(WarpKind, u32, LaneOp)> {
        if self.warp_parked[warp] & (1 << lane) == 0 {
            return None;
        }
        match env.rt_slot(warp as u32 * 32 + lane).wait.get() {
            Wait::Warp { kind, site, op } => Some((kind, site, op)),
            _ => None,
        }
    }

    /// The group `lane` can complete with right now: every lane its mask
    /// (transitively) names is parked at the same instruction.
    fn eager_group(&self, env: &Env, warp: usize, lane: u32) -> Option<(WarpKind, u32)> {
        let (kind, site, op) = self.lane_wait(env, warp, lane)?;
        let live = self.warp_live[warp];
        let same = |other: u32| matches!(self.lane_wait(env, warp, other), Some((k, s, _)) if k == kind && s == site);
        if kind == WarpKind::ActiveMask {
            // Who is active is only known once every live lane got here.
            return lanes(live).all(same).then_some((kind, live));
        }
        let mut group = 1u32 << lane;
        let mut need = (op.mask & live) | group;
        if need & !self.warp_parked[warp] != 0 {
            // Some lane it needs has not reached a collective yet.
            return None;
        }
        loop {
            let missing = need & !group;
            if missing == 0 {
                return Some((kind, group));
            }
            for other in lanes(missing) {
                let (_, _, other_op) = self.lane_wait(env, warp, other).filter(|_| same(other))?;
                need |= other_op.mask & live;
            }
            group |= missing;
        }
    }

    fn resolve(&mut self, env: &Env, warp: usize, kind: WarpKind, group: u32) {
        let mut ops = [LaneOp::default(); 32];
        for lane in lanes(group) {
            // Straight from the slot: every lane of the group is parked at
            // a collective.
            if let Wait::Warp { op, .. } = env.rt_slot(warp as u32 * 32 + lane).wait.get() {
                ops[lane as usize] = op;
            }
        }
        let results = if kind == WarpKind::Gather {
            if self.snapshots.len() <= warp {
                self.snapshots.resize_with(warp + 1, Vec::new);
            }
            let bytes = lanes(group).next().map_or(0, |l| ops[l as usize].b as usize);
            let snap = &mut self.snapshots[warp];
            // SAFETY: each lane of the group is parked inside
            // `__anycuda_warp_gather`, whose source bytes live on its stack.
            unsafe { warp::gather(group, &ops, bytes, snap) };
            [snap.as_ptr() as u64; 32]
        } else {
            warp::compute(kind, group, &ops)
        };
        for lane in lanes(group) {
            let t = warp as u32 * 32 + lane;
            env.rt_slot(t).result.set(results[lane as usize]);
            self.state[t as usize] = State::Ready;
            self.run.push_back(t);
        }
        self.warp_parked[warp] &= !group;
    }

    /// Nothing can run: per warp, complete the lowest waiting instruction
    /// that can be completed. Returns whether anything was.
    fn resolve_stalled_warps(&mut self, env: &Env) -> bool {
        let mut progress = false;
        for warp in 0..self.warp_parked.len() {
            let parked = self.warp_parked[warp];
            if parked == 0 {
                continue;
            }
            let mut sites: Vec<(u32, WarpKind)> =
                lanes(parked).filter_map(|lane| self.lane_wait(env, warp, lane).map(|(kind, site, _)| (site, kind))).collect();
            sites.sort_unstable();
            sites.dedup();
            let live = self.warp_live[warp];
            for (site, kind) in sites {
                let mut kind_parked = 0u32;
                let mut group = 0u32;
                for lane in lanes(parked) {
                    if let Some((k, s, _)) = self.lane_wait(env, warp, lane) {
                        if k == kind {
                            kind_parked |= 1 << lane;
                            if s == site {
                                group |= 1 << lane;
                            }
                        }
                    }
                }
                if kind != WarpKind::ActiveMask {
                    let mask_of =
                        |set: u32| lanes(set).fold(0u32, |acc, lane| acc | self.lane_wait(env, warp, lane).map_or(0, |(_, _, op)| op.mask));
                    let mut need = (mask_of(group) & live) | group;
                    let mut complete = true;
                    loop {
                        let missing = need & !group;
                        if missing == 0 {
                            break;
                        }
                        if missing & !kind_parked != 0 {
                            complete = false;
                            break;
                        }
                        group |= missing;
                        need |= mask_of(missing) & live;
                    }
                    if !complete {
                        continue;
                    }
                }
                self.resolve(env, warp, kind, group);
                progress = true;
                break;
            }
        }
        progress
    }

    fn describe_deadlock(&self, env: &Env) -> String {
        let mut text = String::new();
        for (id, barrier) in self.barriers.iter().enumerate() {
            if barrier.arrived == 0 {
                continue;
            }
            let expected = if barrier.count == 0 { self.live } else { barrier.count };
            let _ = write!(
                text,
                "barrier {id}: {} of {expected} threads arrived (waiting: threads {}); ",
                barrier.arrived,
                ranges(&barrier.waiters)
            );
        }
        for (warp, &parked) in self.warp_parked.iter().enumerate() {
            if parked == 0 {
                continue;
            }
            let mut groups: Vec<(u32, WarpKind, u32, u32)> = Vec::new();
            for lane in lanes(parked) {
                if let Some((kind, site, op)) = self.lane_wait(env, warp, lane) {
                    match groups.iter_mut().find(|g| g.0 == site && g.1 == kind) {
                        Some(group) => {
                            group.2 |= 1 << lane;
                            group.3 |= op.mask;
                        }
                        None => groups.push((site, kind, 1 << lane, op.mask)),
                    }
                }
            }
            for (site, kind, group, mask) in groups {
                let _ = write!(text, "warp {warp}: lanes {group:#010x} wait at {} (site {site}", kind.name());
                if kind != WarpKind::ActiveMask {
                    let _ = write!(text, ", mask {mask:#010x}");
                }
                let _ = write!(text, ")");
                let missing = mask & self.warp_live[warp] & !parked;
                for lane in lanes(missing) {
                    if let State::AtBarrier(id) = self.state[warp * 32 + lane as usize] {
                        let _ = write!(text, ", lane {lane} is at barrier {id}");
                    }
                }
                let _ = write!(text, "; ");
            }
        }
        let exited = self.state.iter().filter(|&&s| s == State::Exited).count();
        let _ = write!(text, "{exited} threads exited");
        text
    }
}

impl Env<'_> {
    fn rt_slot(&self, t: u32) -> &Slot {
        // SAFETY: `slots` points to the scheduler's slot array, which has
        // an entry for every thread of the block and outlives the block.
        unsafe { &*self.rt.slots.get().add(t as usize) }
    }
}

/// "0-31,40,42-43" for a list of thread indices.
fn ranges(threads: &[u32]) -> String {
    let mut sorted = threads.to_vec();
    sorted.sort_unstable();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}
