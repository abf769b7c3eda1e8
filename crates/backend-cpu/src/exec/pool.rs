//! The worker pool, the launch driver and the stall monitor.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::job::Job;
use super::runtime::{CStdio, OutputSink};
use super::{fast, fault, local, sched, warps, ExecutorConfig, LaunchError};
use crate::heap::DeviceHeap;

/// How long an added worker waits for work before it leaves.
const EXTRA_WORKER_IDLE: Duration = Duration::from_secs(2);

/// How long the stall monitor keeps polling after the last launch it saw
/// before it sleeps until the next submission wakes it. While it polls,
/// submissions do not wake it: a program launching small kernels back to
/// back (llama.cpp's generation: 31 launches per token, thousands per
/// second) woke it at every launch, a thread switch each on a machine whose
/// cores run the blocks.
const MONITOR_LINGER: Duration = Duration::from_secs(1);

pub(crate) struct Shared {
    pub config: ExecutorConfig,
    pub nsmid: u32,
    pub heap: DeviceHeap,
    pub output: Arc<dyn OutputSink>,
    pub thread_stack_size: AtomicUsize,
    /// Device-side launches made and not yet started, device-wide
    /// (`cudaLimitDevRuntimePendingLaunchCount`).
    pub pending_launches: std::sync::atomic::AtomicU64,
    pool: Mutex<PoolState>,
    work: Condvar,
    monitor: Condvar,
}

#[derive(Default)]
struct PoolState {
    queue: VecDeque<Arc<Job>>,
    /// Worker threads alive (base and added).
    workers: usize,
    idle: usize,
    base_started: bool,
    monitor_started: bool,
    /// The monitor sleeps until a submission wakes it (it polls otherwise).
    monitor_asleep: bool,
    /// When the last launch was submitted.
    last_submit: Option<Instant>,
    next_worker: usize,
    shutdown: bool,
}

impl Shared {
    pub(crate) fn new(config: ExecutorConfig) -> Arc<Shared> {
        let workers = if config.workers == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { config.workers };
        let output = config.output.clone().unwrap_or_else(|| Arc::new(CStdio));
        Arc::new(Shared {
            nsmid: workers.clamp(1, u32::MAX as usize) as u32,
            heap: DeviceHeap::new(config.heap_limit),
            output,
            thread_stack_size: AtomicUsize::new(config.thread_stack_size),
            pending_launches: std::sync::atomic::AtomicU64::new(0),
            config,
            pool: Mutex::new(PoolState::default()),
            work: Condvar::new(),
            monitor: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn max_workers(&self) -> usize {
        self.config.max_workers.max(self.nsmid as usize)
    }

    /// Starts up to `count` more workers; returns how many started.
    fn spawn_workers(self: &Arc<Self>, state: &mut PoolState, count: usize, extra: bool) -> usize {
        let mut started = 0;
        while started < count && state.workers < self.max_workers() {
            let id = state.next_worker;
            let shared = self.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("anycuda-cpu-{id}"))
                .stack_size(1 << 20)
                .spawn(move || worker_main(shared, id, extra));
            match spawned {
                Ok(_) => {
                    state.next_worker += 1;
                    state.workers += 1;
                    started += 1;
                }
                Err(error) => {
                    tracing::warn!("cannot start a worker thread: {error}");
                    break;
                }
            }
        }
        started
    }

    fn start_monitor(self: &Arc<Self>, state: &mut PoolState) {
        if state.monitor_started {
            return;
        }
        let shared = Arc::downgrade(self);
        let spawned =
            std::thread::Builder::new().name("anycuda-cpu-monitor".into()).stack_size(256 << 10).spawn(move || monitor_main(shared));
        match spawned {
            Ok(_) => state.monitor_started = true,
            Err(error) => tracing::warn!("cannot start the monitor thread: {error}"),
        }
    }

    fn submit(self: &Arc<Self>, job: &Arc<Job>) {
        let mut state = self.lock();
        if !state.base_started {
            state.base_started = true;
            // The launching thread runs blocks too: with it, `nsmid` threads
            // run a launch, one per core by default (not one more).
            let base = (self.nsmid as usize).saturating_sub(1);
            self.spawn_workers(&mut state, base, false);
        }
        self.start_monitor(&mut state);
        state.queue.push_back(job.clone());
        state.last_submit = Some(Instant::now());
        // The launching thread runs blocks too, so one block fewer needs a
        // worker.
        let helpers = usize::try_from(job.nblocks - 1).unwrap_or(usize::MAX);
        if job.cooperative {
            // Every block must be able to run at once: grid-wide barriers
            // wait for all of them.
            let missing = helpers.saturating_sub(state.idle);
            self.spawn_workers(&mut state, missing, true);
            self.work.notify_all();
        } else if helpers >= state.idle {
            self.work.notify_all();
        } else {
            for _ in 0..helpers {
                self.work.notify_one();
            }
        }
        if state.monitor_asleep {
            state.monitor_asleep = false;
            self.monitor.notify_one();
        }
    }

    fn retire(&self, job: &Arc<Job>) {
        let mut state = self.lock();
        state.queue.retain(|queued| !Arc::ptr_eq(queued, job));
    }
}

impl Shared {
    /// Lets every worker and the monitor leave once idle.
    pub(crate) fn shutdown(&self) {
        let mut state = self.lock();
        state.shutdown = true;
        self.work.notify_all();
        self.monitor.notify_all();
    }
}

/// Executes a launch: queue it for the pool when it has several blocks, run
/// blocks on this thread as well, then wait for the rest.
pub(crate) fn run_launch(shared: &Arc<Shared>, job: Arc<Job>) -> Result<(), LaunchError> {
    let _watched = job.deadline.is_some().then(|| super::timeout::watch(&job));
    let pooled = job.nblocks > 1;
    if pooled {
        shared.submit(&job);
    }
    run_blocks(&job, caller_smid(shared.nsmid));
    if pooled {
        shared.retire(&job);
    }
    job.wait();
    if job.printed.load(Ordering::Relaxed) {
        shared.output.flush();
    }
    match job.take_error() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// `%smid` for blocks run by a launching thread: spread callers over the
/// multiprocessor numbers.
fn caller_smid(nsmid: u32) -> u32 {
    use std::cell::Cell;
    thread_local! { static SMID: Cell<Option<u32>> = const { Cell::new(None) }; }
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    SMID.with(|smid| {
        let value = smid.get().unwrap_or_else(|| {
            let value = (NEXT.fetch_add(1, Ordering::Relaxed) % nsmid.max(1) as usize) as u32;
            smid.set(Some(value));
            value
        });
        value % nsmid.max(1)
    })
}

/// Claims and runs blocks of `job` until none are left.
fn run_blocks(job: &Arc<Job>, smid: u32) {
    fault::prepare_thread();
    let _runner = job.deadline.is_some().then(|| job.runner());
    let ran = local::with_local(|local| {
        if job.block_fn.is_some() {
            fast::run(job, local, smid);
        } else if job.lanes > 1 {
            warps::run(job, local, smid);
        } else {
            sched::run(job, local, smid);
        }
    });
    if ran.is_none() {
        job.fail(LaunchError::Internal("a worker thread tried to run two launches at once".into()));
    }
}

fn worker_main(shared: Arc<Shared>, id: usize, extra: bool) {
    let smid = (id % shared.nsmid.max(1) as usize) as u32;
    loop {
        let job = {
            let mut state = shared.lock();
            loop {
                if state.shutdown {
                    state.workers -= 1;
                    return;
                }
                state.queue.retain(|job| job.has_unclaimed());
                // Cooperative launches first: their running blocks wait for
                // the ones not yet started.
                let pick = state.queue.iter().find(|job| job.cooperative).or(state.queue.front()).cloned();
                if let Some(job) = pick {
                    break job;
                }
                state.idle += 1;
                if extra {
                    let (guard, timeout) = shared.work.wait_timeout(state, EXTRA_WORKER_IDLE).unwrap_or_else(|p| p.into_inner());
                    state = guard;
                    state.idle -= 1;
                    if timeout.timed_out() && !state.queue.iter().any(|job| job.has_unclaimed()) {
                        state.workers -= 1;
                        return;
                    }
                } else {
                    state = shared.work.wait(state).unwrap_or_else(|p| p.into_inner());
                    state.idle -= 1;
                }
            }
        };
        run_blocks(&job, smid);
    }
}

/// Watches queued launches; when one has unclaimed blocks but no block
/// finished for a while, its running blocks are probably waiting for the
/// unclaimed ones, so more workers are started (doubling each time).
fn monitor_main(shared: std::sync::Weak<Shared>) {
    struct Seen {
        finished: u64,
        yields: u64,
        since: Instant,
        spinning: bool,
    }
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    loop {
        let Some(shared) = shared.upgrade() else { return };
        let stall = shared.config.stall_timeout.max(Duration::from_millis(1));
        let mut state = shared.lock();
        if state.shutdown {
            return;
        }
        let waiting = state.queue.iter().any(|job| job.has_unclaimed());
        if !waiting {
            seen.clear();
            // Soon after a launch, poll at the stall checks' pace (a launch
            // submitted meanwhile is seen within half a stall period); once
            // launches have stopped for a while, sleep until one comes.
            let asleep = state.last_submit.is_none_or(|t| t.elapsed() >= MONITOR_LINGER);
            state.monitor_asleep = asleep;
            let wait = if asleep { Duration::from_secs(1) } else { stall / 2 };
            let (mut guard, _) = shared.monitor.wait_timeout(state, wait).unwrap_or_else(|p| p.into_inner());
            guard.monitor_asleep = false;
            drop(guard);
            continue;
        }
        let (guard, _) = shared.monitor.wait_timeout(state, stall / 2).unwrap_or_else(|p| p.into_inner());
        state = guard;
        let now = Instant::now();
        let mut grow = false;
        let mut cap = shared.nsmid as usize;
        let jobs: Vec<Arc<Job>> = state.queue.iter().filter(|job| job.has_unclaimed()).cloned().collect();
        seen.retain(|id, _| jobs.iter().any(|job| job.id == *id));
        for job in &jobs {
            let finished = job.finished_blocks();
            let yields = job.yields.load(Ordering::Relaxed);
            let entry = seen.entry(job.id).or_insert(Seen { finished, yields, since: now, spinning: false });
            if entry.finished != finished {
                entry.finished = finished;
                entry.since = now;
                entry.spinning = false;
            }
            if entry.yields != yields {
                entry.yields = yields;
                entry.spinning = true;
            }
            // Blocks visibly spinning get help after one stall period;
            // blocks that might just be long get more time.
            let limit = if entry.spinning { stall } else { stall * 10 };
            if now.duration_since(entry.since) >= limit {
                entry.since = now;
                grow = true;
                // Each thread of a scheduled block holds two memory mappings:
                // stay well inside the kernel's limit (vm.max_map_count, 65530
                // by default).
                let maps_per_worker = if job.block_fn.is_some() { 8 } else { 2 * job.units as usize + 8 };
                cap = cap.max(shared.max_workers().min(32_000 / maps_per_worker.max(1)));
            }
        }
        if grow && state.workers < cap {
            let count = state.workers.max(1).min(cap - state.workers);
            let started = shared.spawn_workers(&mut state, count, true);
            tracing::debug!(started, total = state.workers, "blocks are waiting for each other: adding workers");
            shared.work.notify_all();
        }
    }
}
