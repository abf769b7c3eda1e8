//! Where compile time goes: each phase of [`crate::compile`] adds the CPU
//! time the compiling thread spent in it to a per-thread account, which
//! [`take`] reads and resets. CPU time rather than wall time: a compile is
//! one thread's work, and on a shared machine the wall time of the same
//! work varied threefold between runs while the thread's CPU time did not.
//! Costs two clock reads per phase; always on, so benchmarks measure the
//! code the driver runs.

use std::cell::RefCell;
use std::time::Duration;

/// The phases of a compile, in pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Target checks and the PTX analyses of the lowering (layout, liveness, affine).
    Analyse,
    /// Lowering PTX to LLVM IR (text).
    Lower,
    /// LLVM reading the IR text into a module.
    ParseIr,
    /// LLVM's verifier.
    Verify,
    /// The optimisation pipeline.
    Optimize,
    /// Instruction selection, register allocation and object emission.
    Codegen,
    /// Linking (AMDGPU code objects).
    Link,
}

impl Phase {
    pub const ALL: [Phase; 7] = [Phase::Analyse, Phase::Lower, Phase::ParseIr, Phase::Verify, Phase::Optimize, Phase::Codegen, Phase::Link];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Analyse => "analyse",
            Phase::Lower => "lower",
            Phase::ParseIr => "parse IR",
            Phase::Verify => "verify",
            Phase::Optimize => "optimize",
            Phase::Codegen => "codegen",
            Phase::Link => "link",
        }
    }
}

/// Time per phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Profile {
    pub times: [Duration; 7],
}

impl Profile {
    pub fn get(&self, p: Phase) -> Duration {
        self.times[p as usize]
    }

    pub fn total(&self) -> Duration {
        self.times.iter().sum()
    }

    pub fn add(&mut self, other: &Profile) {
        for (a, b) in self.times.iter_mut().zip(other.times) {
            *a += b;
        }
    }
}

thread_local! {
    static ACCOUNT: RefCell<Profile> = RefCell::new(Profile::default());
}

/// Runs `f`, adding its time to `phase`.
pub(crate) fn time<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    let t = thread_cpu_time();
    let r = f();
    let d = thread_cpu_time().saturating_sub(t);
    ACCOUNT.with(|a| a.borrow_mut().times[phase as usize] += d);
    r
}

/// The time this thread's compiles spent in each phase since the last call.
pub fn take() -> Profile {
    ACCOUNT.with(|a| std::mem::take(&mut *a.borrow_mut()))
}

/// CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; the clock id is a constant the
    // kernel knows. On failure `ts` stays zero.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}
