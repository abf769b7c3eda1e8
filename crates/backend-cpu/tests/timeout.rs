//! Launch time limits with kernels written in Rust: these have no code
//! ranges (they are not the compiler's output), so they end only where they
//! return to the executor (yields), and code outside a module's code is
//! never interrupted. (Compiled kernels, interrupted in their own loops, are
//! tested through the driver API in the libcuda crate.)

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use backend_cpu::exec::runtime::*;
use backend_cpu::{BlockCtx, ExecutorConfig, LaunchError, LaunchOptions};
use common::*;

const LIMIT: Duration = Duration::from_millis(200);

fn limited() -> backend_cpu::Executor {
    executor_with(ExecutorConfig { launch_timeout: Some(LIMIT), ..ExecutorConfig::default() }).0
}

unsafe fn atomic<'a>(p: *mut u32) -> &'a AtomicU32 {
    unsafe { &*(p as *const AtomicU32) }
}

/// Waits, yielding, for a flag nobody sets.
unsafe extern "C" fn wait_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let flag = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        while atomic(flag).load(Ordering::Acquire) == 0 {
            __anycuda_yield(c, t);
        }
    }
}

unsafe extern "C" fn wait_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        for t in 0..ctx(c).nthreads {
            wait_kernel(p, c, t, 0, 0);
        }
    }
}

fn assert_timeout(r: Result<(), LaunchError>, took: Duration, what: &str) {
    assert_eq!(r, Err(LaunchError::Timeout { limit: LIMIT }), "{what}");
    assert!(took >= LIMIT.mul_f32(0.9) && took < LIMIT + Duration::from_secs(5), "{what}: ended after {took:?}");
}

#[test]
fn yielding_kernels_end_at_the_limit() {
    let exec = limited();
    assert_eq!(exec.launch_timeout(), Some(LIMIT));
    let mut flag = vec![0u32];
    let p = params(&[addr(&mut flag)]);
    let t = Instant::now();
    let r = unsafe { exec.launch(&scheduled(wait_kernel), [6, 1, 1], [64, 1, 1], 0, &p, &LaunchOptions::default()) };
    assert_timeout(r, t.elapsed(), "scheduled threads");
    let t = Instant::now();
    let r = unsafe { exec.launch(&fast(wait_kernel, wait_block), [6, 1, 1], [4, 1, 1], 0, &p, &LaunchOptions::default()) };
    assert_timeout(r, t.elapsed(), "whole blocks");
    // The executor goes on.
    flag[0] = 1;
    unsafe { exec.launch(&scheduled(wait_kernel), [2, 1, 1], [32, 1, 1], 0, &p, &LaunchOptions::default()) }
        .expect("a launch within the limit");
}

/// Spins for `arg(1)` milliseconds without yielding, then writes 1.
unsafe extern "C" fn busy_block(p: *const u8, _c: *mut BlockCtx) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let until = Instant::now() + Duration::from_millis(arg(p, 1));
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        atomic(out).store(1, Ordering::Release);
    }
}

unsafe extern "C" fn busy_thread(p: *const u8, c: *mut BlockCtx, _x: u32, _y: u32, _z: u32) {
    unsafe { busy_block(p, c) }
}

#[test]
fn code_outside_a_module_is_never_interrupted() {
    let exec = limited();
    let mut out = vec![0u32];
    let p = params(&[addr(&mut out), 600]);
    let t = Instant::now();
    let r = unsafe { exec.launch(&fast(busy_thread, busy_block), [1, 1, 1], [1, 1, 1], 0, &p, &LaunchOptions::default()) };
    // The block ran to its end (its store happened), then the launch
    // reported the time limit it exceeded.
    assert_eq!(r, Err(LaunchError::Timeout { limit: LIMIT }));
    assert_eq!(out[0], 1);
    assert!(t.elapsed() >= Duration::from_millis(600));
}

#[test]
fn without_a_limit_nothing_ends_early() {
    let (exec, _) = executor();
    assert_eq!(exec.launch_timeout(), None);
    let mut out = vec![0u32];
    let p = params(&[addr(&mut out), 400]);
    unsafe { exec.launch(&fast(busy_thread, busy_block), [1, 1, 1], [1, 1, 1], 0, &p, &LaunchOptions::default()) }.expect("no limit");
    assert_eq!(out[0], 1);
}
