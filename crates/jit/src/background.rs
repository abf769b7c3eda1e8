//! Compiles that nobody waits for: a module's other kernels after its
//! first launch, and optimised code for kernels that run long.
//!
//! Speculative compiles run on one thread per core, each at the lowest
//! scheduling priority (nice 19), so the program's own threads and kernels
//! come first. Optimised recompiles of kernels that have run long run on a
//! thread of their own at the program's priority: at nice 19 they got
//! about 1.5 % of a core while the program kept every core busy, and a
//! Bezier surface whose optimised code is nine times faster ran its fast
//! code for a whole run of 100 launches (a 1.4 s compile). Such a compile
//! pays for itself (it starts once the kernel has run several times its
//! fast compile, `tier_up_threshold`). Jobs run in submission order within
//! their kind; a job holds its module weakly, so work for an unloaded
//! module is dropped.
//!
//! At process exit LLVM's static destructors run; a compile still running
//! then could touch destroyed state (seen: a tier-up compile crashing in
//! instruction selection while the program exited). An `atexit` handler
//! stops the threads from taking new jobs and waits for the ones running
//! to finish. Handlers run in the reverse order of their registration,
//! and LLVM registers many destructors lazily, for function-local statics
//! first used by a compile; so before registering the handler the pool
//! compiles a small module in every tier, which constructs what compiles
//! use, and registers afterwards: the handler then runs before those
//! destructors.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

/// Kinds of job, each run by workers of its own (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// A kernel of a launched module that was not launched yet.
    Speculative = 0,
    /// Optimised code for a kernel that has run long.
    TierUp = 1,
}

type Job = Box<dyn FnOnce() + Send>;

struct State {
    /// Queued jobs, by [`Priority`].
    queues: [VecDeque<Job>; 2],
    running: usize,
}

struct Pool {
    state: Mutex<State>,
    /// Per [`Priority`]: signalled when a job of that kind is queued.
    work: [Condvar; 2],
    idle: Condvar,
    stopping: AtomicBool,
}

static POOL: OnceLock<Pool> = OnceLock::new();

fn lock(p: &Pool) -> std::sync::MutexGuard<'_, State> {
    p.state.lock().unwrap_or_else(|e| e.into_inner())
}

fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = (0..threads)
            .map(|i| (format!("anycuda-jit-{i}"), Priority::Speculative))
            .chain(std::iter::once(("anycuda-jit-hot".to_string(), Priority::TierUp)));
        for (name, kind) in workers {
            let spawned = std::thread::Builder::new().name(name).spawn(move || worker(kind));
            if let Err(e) = spawned {
                tracing::warn!("cannot start a background compile thread: {e}");
            }
        }
        warm_up();
        // SAFETY: registering a plain extern "C" function.
        if unsafe { libc::atexit(stop_at_exit) } != 0 {
            tracing::warn!("cannot register the background compiles' exit handler");
        }
        Pool {
            state: Mutex::new(State { queues: [VecDeque::new(), VecDeque::new()], running: 0 }),
            work: [Condvar::new(), Condvar::new()],
            idle: Condvar::new(),
            stopping: AtomicBool::new(false),
        }
    })
}

/// A kernel with a barrier, a warp collective and floating point, so that
/// both lowering modes and the usual code generator paths run.
const WARM_UP: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\
.visible .entry warm(.param .u64 p)\n{\n.reg .f32 %f<3>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<3>;\n\
ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd1, %rd1, %rd2;\n\
ld.global.f32 %f1, [%rd1];\nshfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;\ncvt.rn.f32.s32 %f2, %r2;\n\
bar.sync 0;\nfma.rn.f32 %f1, %f1, %f2, %f1;\nst.global.f32 [%rd1], %f1;\nret;\n}\n";

/// Compiles [`WARM_UP`] in every tier (see the module documentation).
fn warm_up() {
    let Ok(module) = ptx::parse(WARM_UP) else { return };
    for tier in [compiler::Tier::Fast, compiler::Tier::Optimized] {
        let opts = compiler::Options { tier, ..compiler::Options::default() };
        let _ = compiler::compile_with_options(&module, WARM_UP, &compiler::Target::HostCpu, &opts);
    }
}

/// A worker for the jobs of one kind (see the module documentation).
fn worker(kind: Priority) {
    if kind == Priority::Speculative {
        // Lowest priority for this thread only (on Linux, a thread id names
        // one thread for setpriority).
        // SAFETY: plain system calls on the calling thread.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 19);
        }
    }
    let p = pool();
    loop {
        let job = {
            let mut st = lock(p);
            loop {
                if p.stopping.load(Ordering::Acquire) {
                    return;
                }
                if let Some(job) = st.queues[kind as usize].pop_front() {
                    st.running += 1;
                    break job;
                }
                st = p.work[kind as usize].wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        // A failing compile reports through its module; a panic must not
        // take the thread (and the running count) with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let mut st = lock(p);
        st.running -= 1;
        if st.running == 0 {
            p.idle.notify_all();
        }
    }
}

extern "C" fn stop_at_exit() {
    let Some(p) = POOL.get() else { return };
    p.stopping.store(true, Ordering::Release);
    let mut st = lock(p);
    st.queues.iter_mut().for_each(VecDeque::clear);
    p.work.iter().for_each(Condvar::notify_all);
    while st.running > 0 {
        st = p.idle.wait(st).unwrap_or_else(|e| e.into_inner());
    }
}

/// Queues a job.
pub fn submit(priority: Priority, job: impl FnOnce() + Send + 'static) {
    let p = pool();
    if p.stopping.load(Ordering::Acquire) {
        return;
    }
    lock(p).queues[priority as usize].push_back(Box::new(job));
    p.work[priority as usize].notify_one();
}

/// Runs `compile` on the calling thread as a compile the exit handler
/// waits for, like the pool's own jobs (a launch's compile thread racing a
/// background job may still run when the program exits); does nothing once
/// the process is exiting.
pub fn run_counted(compile: impl FnOnce()) {
    let p = pool();
    {
        let mut st = lock(p);
        if p.stopping.load(Ordering::Acquire) {
            return;
        }
        st.running += 1;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(compile));
    let mut st = lock(p);
    st.running -= 1;
    if st.running == 0 {
        p.idle.notify_all();
    }
}

/// Waits until no job is queued or running (for tests and benchmarks).
pub fn wait_idle() {
    let p = pool();
    let mut st = lock(p);
    while st.running > 0 || st.queues.iter().any(|q| !q.is_empty()) {
        let (s, _) = p.idle.wait_timeout(st, std::time::Duration::from_millis(10)).unwrap_or_else(|e| e.into_inner());
        st = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice_of_this_thread() -> i32 {
        // SAFETY: plain system calls on the calling thread.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        }
    }

    /// Speculative compiles run at nice 19; optimised recompiles at the
    /// program's own priority, so that a busy program does not starve them.
    #[test]
    fn recompiles_of_hot_kernels_run_at_the_programs_priority_speculative_ones_at_the_lowest() {
        let own = nice_of_this_thread();
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        for kind in [Priority::Speculative, Priority::TierUp] {
            let seen = seen.clone();
            submit(kind, move || seen.lock().unwrap_or_else(|e| e.into_inner()).push((kind, nice_of_this_thread())));
        }
        wait_idle();
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        seen.sort_by_key(|&(k, _)| k);
        assert_eq!(seen, vec![(Priority::Speculative, 19), (Priority::TierUp, own)]);
    }
}
