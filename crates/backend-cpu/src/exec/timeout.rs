//! Launch time limits (`ANYCUDA_LAUNCH_TIMEOUT`, in seconds).
//!
//! A GPU without a display has no watchdog, and neither has anycuda by
//! default: an infinite loop hangs its stream. With a limit, a launch that
//! runs longer fails with [`LaunchError::Timeout`] (the driver makes it
//! `CUDA_ERROR_LAUNCH_TIMEOUT`, sticky as on NVIDIA's driver). Kernel code
//! cannot be stopped at any instruction in general: it may be inside a
//! runtime function, libc or the allocator, holding a lock. So a launch is
//! ended in three ways, by a watchdog thread that wakes at its deadline:
//!
//! 1. It is marked failed: no more blocks are handed out, and every place
//!    where kernel code already returns to the executor ends its block
//!    there: yields of spin loops, `nanosleep`, barriers and warp
//!    collectives of scheduled threads, warps waiting for each other.
//! 2. Each thread running one of its blocks gets a signal (see
//!    `fault::interrupt_signal`). If it was interrupted in the kernel's own
//!    machine code (the module's code sections, `LoadedKernel::code`), the
//!    block's coroutine is abandoned as a fault abandons it: no unwinding,
//!    its stack reused, the floating-point state restored. That ends loops
//!    without any yield, which compile to a plain jump (`jmp .` for
//!    `for (;;) {}`).
//! 3. A thread interrupted elsewhere (in a runtime function, libc, libm)
//!    is left alone, and the watchdog sends the signal again every
//!    [`RETRY`] until the launch has ended: a loop that spends some time in
//!    its own code is caught there.
//!
//! Not interruptible: a kernel that never returns from a call outside its
//! own code (none of the runtime's functions block without yielding), and
//! kernels given to the executor as Rust functions (tests), which have no
//! code ranges and end only where they yield.
//!
//! Without a limit none of this exists: no watchdog, no signal handler, no
//! per-launch bookkeeping.

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::job::Job;
use super::LaunchError;

/// Environment variable with the launch time limit in seconds.
pub(crate) const ENV: &str = "ANYCUDA_LAUNCH_TIMEOUT";

/// How often a launch past its deadline is interrupted again until it ends.
pub(crate) const RETRY: Duration = Duration::from_millis(5);

/// The limit `ANYCUDA_LAUNCH_TIMEOUT` sets, if any.
pub(crate) fn from_env() -> Option<Duration> {
    let v = std::env::var(ENV).ok()?;
    let limit = parse(&v);
    if limit.is_none() && !matches!(v.trim(), "" | "0") {
        tracing::warn!("{ENV}={v:?} is not a number of seconds; launches have no time limit");
    }
    limit
}

/// Seconds, possibly fractional; 0 or nothing: no limit.
fn parse(s: &str) -> Option<Duration> {
    let secs: f64 = s.trim().parse().ok()?;
    (secs.is_finite() && secs > 0.0).then(|| Duration::try_from_secs_f64(secs).ok()).flatten()
}

struct Watchdog {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    jobs: Vec<Arc<Job>>,
    /// When the watchdog wakes next (`None`: only when notified), so that
    /// a launch wakes it only if its deadline comes first.
    wake_at: Option<Instant>,
}

fn watchdog() -> &'static Watchdog {
    static WATCHDOG: OnceLock<&'static Watchdog> = OnceLock::new();
    WATCHDOG.get_or_init(|| {
        let w: &'static Watchdog = Box::leak(Box::new(Watchdog { state: Mutex::new(State::default()), wake: Condvar::new() }));
        let spawned = std::thread::Builder::new().name("anycuda-watchdog".into()).stack_size(256 << 10).spawn(move || run(w));
        if let Err(error) = spawned {
            tracing::warn!("cannot start the launch watchdog: {error}; launches have no time limit");
        }
        w
    })
}

/// A launch under watch until dropped.
pub(crate) struct Watched {
    job: Arc<Job>,
}

/// Watches `job` (which has a deadline) until the returned guard is dropped.
pub(crate) fn watch(job: &Arc<Job>) -> Watched {
    let w = watchdog();
    let mut state = w.state.lock().unwrap_or_else(|p| p.into_inner());
    state.jobs.push(job.clone());
    // Launches share one limit, so a new deadline rarely comes first.
    if state.wake_at.is_none_or(|at| job.deadline.is_some_and(|d| d < at)) {
        state.wake_at = job.deadline;
        w.wake.notify_one();
    }
    Watched { job: job.clone() }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let w = watchdog();
        w.state.lock().unwrap_or_else(|p| p.into_inner()).jobs.retain(|j| !Arc::ptr_eq(j, &self.job));
    }
}

fn run(w: &'static Watchdog) {
    let mut state = w.state.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for job in state.jobs.iter() {
            let (Some(deadline), Some(limit)) = (job.deadline, job.timeout) else { continue };
            if now >= deadline {
                if !job.cancel.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::debug!(job = job.id, "launch past its time limit of {limit:?}: ending it");
                    job.fail(LaunchError::Timeout { limit });
                }
                job.interrupt_runners();
                next = Some(next.map_or(now + RETRY, |n| n.min(now + RETRY)));
            } else {
                next = Some(next.map_or(deadline, |n| n.min(deadline)));
            }
        }
        state.wake_at = next;
        state = match next {
            Some(at) => w.wake.wait_timeout(state, at.saturating_duration_since(Instant::now())).unwrap_or_else(|p| p.into_inner()).0,
            None => w.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(parse("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse(" 0.25 "), Some(Duration::from_millis(250)));
        for none in ["", "0", "-1", "abc", "inf", "NaN", "1e400"] {
            assert_eq!(parse(none), None, "{none:?}");
        }
    }
}
