//! Barriers, block scheduling, shared memory and inter-block waiting.

mod common;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use backend_cpu::exec::runtime::*;
use backend_cpu::{BlockCtx, ExecutorConfig, LaunchError, LaunchOptions};
use common::*;
use compiler::cpu_abi::bar_red;

fn opts() -> LaunchOptions {
    LaunchOptions::default()
}

unsafe fn atomic<'a>(p: *mut u32) -> &'a AtomicU32 {
    unsafe { &*(p as *const AtomicU32) }
}

// ---- barriers -----------------------------------------------------------------

unsafe extern "C" fn barrier_loop_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let errors = arg(p, 0) as *mut u32;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let n = cx.nthreads;
        let shared = cx.shared.cast::<u32>();
        for iteration in 0..100u32 {
            shared.add(t as usize).write_volatile(iteration * 7 + t + block_linear(cx));
            __anycuda_barrier(c, t, 0, 0, 1);
            let neighbour = (t + 1) % n;
            if shared.add(neighbour as usize).read_volatile() != iteration * 7 + neighbour + block_linear(cx) {
                atomic(errors).fetch_add(1, Ordering::Relaxed);
            }
            __anycuda_barrier(c, t, 0, 0, 2);
        }
    }
}

#[test]
fn barriers_inside_loops() {
    let (exec, _) = executor();
    let mut errors = vec![0u32];
    let mut kernel = scheduled(barrier_loop_kernel);
    kernel.info.static_shared_bytes = 256 * 4;
    kernel.info.dynamic_shared_offset = 256 * 4;
    let p = params(&[addr(&mut errors)]);
    unsafe { exec.launch(&kernel, [4, 1, 1], [256, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(errors[0], 0);
}

unsafe extern "C" fn named_barrier_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let shared = cx.shared.cast::<u32>();
        let warp = t / 32;
        // Warps 0-1 and 2-3 synchronise in pairs on barriers 1 and 2.
        let id = 1 + warp / 2;
        for round in 0..20u32 {
            shared.add(t as usize).write_volatile(round + t);
            __anycuda_barrier(c, t, id, 64, 10 + id);
            let partner = t ^ 32;
            if shared.add(partner as usize).read_volatile() != round + partner {
                atomic(out).fetch_add(1, Ordering::Relaxed);
            }
            __anycuda_barrier(c, t, id, 64, 20 + id);
        }
        // Producer/consumer: warp 0 writes and arrives, warps 1-3 wait on
        // barrier 3 for all 128 threads.
        if warp == 0 {
            shared.add(200 + t as usize).write_volatile(5000 + t);
            __anycuda_barrier_arrive(c, t, 3, 128, 30);
        } else {
            __anycuda_barrier(c, t, 3, 128, 31);
            let produced = shared.add(200 + (t % 32) as usize).read_volatile();
            if produced != 5000 + t % 32 {
                atomic(out.add(1)).fetch_add(1, Ordering::Relaxed);
            }
            atomic(out.add(2)).fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[test]
fn barriers_with_thread_counts_and_arrive() {
    let (exec, _) = executor();
    let mut out = vec![0u32; 3];
    let mut kernel = scheduled(named_barrier_kernel);
    kernel.info.static_shared_bytes = 1024;
    kernel.info.dynamic_shared_offset = 1024;
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&kernel, [2, 1, 1], [128, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(out, [0, 0, 2 * 96]);
}

unsafe extern "C" fn bar_red_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        let popc = __anycuda_barrier_red(c, t, 0, 0, bar_red::POPC, t.is_multiple_of(3) as u32, 1);
        let all = __anycuda_barrier_red(c, t, 1, 0, bar_red::AND, (t < 1000) as u32, 2);
        let all_false = __anycuda_barrier_red(c, t, 0, 0, bar_red::AND, (t != 17) as u32, 3);
        let any = __anycuda_barrier_red(c, t, 2, 0, bar_red::OR, (t == 99) as u32, 4);
        let none = __anycuda_barrier_red(c, t, 0, 0, bar_red::OR, 0, 5);
        let base = t as usize * 5;
        *out.add(base) = popc;
        *out.add(base + 1) = all;
        *out.add(base + 2) = all_false;
        *out.add(base + 3) = any;
        *out.add(base + 4) = none;
    }
}

#[test]
fn bar_red_popc_and_or() {
    let (exec, _) = executor();
    let n = 160usize;
    let mut out = vec![9u32; n * 5];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(bar_red_kernel), [1, 1, 1], [n as u32, 1, 1], 0, &p, &opts()) }.unwrap();
    let popc = (0..n).filter(|t| t % 3 == 0).count() as u32;
    for t in 0..n {
        assert_eq!(&out[t * 5..t * 5 + 5], &[popc, 1, 0, 1, 0], "thread {t}");
    }
}

unsafe extern "C" fn exit_then_barrier_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        if t % 2 == 1 {
            // Half exit through the runtime, a quarter by returning.
            if t % 4 == 1 {
                __anycuda_exit(c, t);
            }
            return;
        }
        for _ in 0..10 {
            __anycuda_barrier(c, t, 0, 0, 1);
            atomic(out).fetch_add(1, Ordering::Relaxed);
        }
        __anycuda_barrier(c, t, 0, 0, 2);
    }
}

#[test]
fn barriers_after_some_threads_exited() {
    let (exec, _) = executor();
    let mut out = vec![0u32];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(exit_then_barrier_kernel), [3, 1, 1], [128, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(out[0], 3 * 64 * 10);
}

unsafe extern "C" fn big_block_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let shared = cx.shared.cast::<u32>();
        shared.add(t as usize).write_volatile(x | y << 8 | z << 16);
        __anycuda_barrier(c, t, 0, 0, 1);
        let other = cx.nthreads - 1 - t;
        let b = block_linear(cx);
        *out.add((b * cx.nthreads + t) as usize) = shared.add(other as usize).read_volatile() ^ b << 24;
    }
}

#[test]
fn three_dimensional_blocks_of_1024_threads() {
    let (exec, _) = executor();
    let block = [8u32, 16, 8];
    let n = 1024usize;
    let mut out = vec![0u32; 4 * n];
    let mut kernel = scheduled(big_block_kernel);
    kernel.info.static_shared_bytes = 4096;
    kernel.info.dynamic_shared_offset = 4096;
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&kernel, [2, 2, 1], block, 0, &p, &opts()) }.unwrap();
    for b in 0..4u32 {
        for t in 0..n as u32 {
            let other = n as u32 - 1 - t;
            let (x, y, z) = (other % 8, other / 8 % 16, other / 128);
            assert_eq!(out[(b * 1024 + t) as usize], (x | y << 8 | z << 16) ^ b << 24, "block {b} thread {t}");
        }
    }
}

unsafe extern "C" fn dynamic_shared_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let b = block_linear(cx);
        let dynamic = cx.shared.add(cx.dynamic_shared_offset as usize).cast::<u32>();
        // Static part: a marker written by thread 0.
        if t == 0 {
            cx.shared.cast::<u32>().write_volatile(0xabc0 + b);
        }
        dynamic.add(t as usize).write_volatile(b * 1000 + t);
        __anycuda_barrier(c, t, 0, 0, 1);
        if t == 0 {
            let mut sum = 0;
            for i in 0..cx.nthreads {
                sum += dynamic.add(i as usize).read_volatile();
            }
            *out.add(b as usize * 3) = sum;
            *out.add(b as usize * 3 + 1) = cx.shared.cast::<u32>().read_volatile();
            *out.add(b as usize * 3 + 2) = cx.dynamic_shared_bytes;
        }
    }
}

#[test]
fn dynamic_shared_memory_is_per_block() {
    let (exec, _) = executor();
    let mut out = vec![0u32; 3 * 16];
    let mut kernel = scheduled(dynamic_shared_kernel);
    kernel.info.static_shared_bytes = 4;
    kernel.info.dynamic_shared_offset = 16;
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&kernel, [4, 4, 1], [96, 1, 1], 96 * 4, &p, &opts()) }.unwrap();
    for b in 0..16u32 {
        let sum: u32 = (0..96).map(|t| b * 1000 + t).sum();
        assert_eq!(&out[b as usize * 3..b as usize * 3 + 3], &[sum, 0xabc0 + b, 384], "block {b}");
    }
}

// ---- blocks waiting for each other --------------------------------------------

unsafe extern "C" fn flag_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let flag = arg(p, 0) as *mut u32;
        let out = arg(p, 1) as *mut u32;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let b = block_linear(cx);
        let last = cx.nctaid[0] - 1;
        if b == last {
            if t == 0 {
                atomic(flag).store(1, Ordering::Release);
            }
        } else {
            while atomic(flag).load(Ordering::Acquire) == 0 {
                __anycuda_yield(c, t);
            }
        }
        atomic(out).fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn blocks_spinning_on_a_flag_set_by_a_later_block() {
    let (exec, _) = executor();
    let mut flag = vec![0u32];
    let mut out = vec![0u32];
    let p = params(&[addr(&mut flag), addr(&mut out)]);
    let start = Instant::now();
    unsafe { exec.launch(&scheduled(flag_kernel), [40, 1, 1], [64, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(out[0], 40 * 64);
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
}

unsafe extern "C" fn flag_block_fn(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        let cx = ctx(c);
        for t in 0..cx.nthreads {
            flag_kernel(p, c, t, 0, 0);
        }
    }
}

#[test]
fn fast_path_blocks_spinning_on_a_flag() {
    let (exec, _) = executor();
    let mut flag = vec![0u32];
    let mut out = vec![0u32];
    let p = params(&[addr(&mut flag), addr(&mut out)]);
    unsafe { exec.launch(&fast(flag_kernel, flag_block_fn), [12, 1, 1], [1, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(out[0], 12);
}

unsafe extern "C" fn silent_spin_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        let flag = arg(p, 0) as *mut u32;
        let out = arg(p, 1) as *mut u32;
        let cx = ctx(c);
        if block_linear(cx) == cx.nctaid[0] - 1 {
            atomic(flag).store(1, Ordering::Release);
        } else {
            // No yield calls: the executor only sees that no block finishes.
            while atomic(flag).load(Ordering::Acquire) == 0 {
                std::hint::spin_loop();
            }
        }
        atomic(out).fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn blocks_spinning_without_yields_still_finish() {
    let (exec, _) = executor();
    let mut flag = vec![0u32];
    let mut out = vec![0u32];
    let p = params(&[addr(&mut flag), addr(&mut out)]);
    unsafe { exec.launch(&fast(flag_kernel, silent_spin_block), [8, 1, 1], [1, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(out[0], 8);
}

/// Grid-wide barrier through the cooperative workspace: a counter and a
/// generation word, like cooperative groups' grid.sync().
unsafe fn grid_sync(c: *mut BlockCtx, t: u32) {
    unsafe {
        let cx = ctx(c);
        let workspace = (u64::from(cx.envreg[1]) << 32 | u64::from(cx.envreg[2])) as *mut u32;
        __anycuda_barrier(c, t, 0, 0, 100);
        if t == 0 {
            let count = atomic(workspace);
            let generation = atomic(workspace.add(1));
            let seen = generation.load(Ordering::Acquire);
            let blocks = cx.nctaid[0] * cx.nctaid[1] * cx.nctaid[2];
            if count.fetch_add(1, Ordering::AcqRel) + 1 == blocks {
                count.store(0, Ordering::Relaxed);
                generation.store(seen + 1, Ordering::Release);
            } else {
                while generation.load(Ordering::Acquire) == seen {
                    __anycuda_yield(c, t);
                }
            }
        }
        __anycuda_barrier(c, t, 0, 0, 101);
    }
}

unsafe extern "C" fn cooperative_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let data = arg(p, 0) as *mut u32;
        let errors = arg(p, 1) as *mut u32;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let b = block_linear(cx);
        let blocks = cx.nctaid[0];
        for phase in 1..=5u32 {
            if t == 0 {
                atomic(data.add(b as usize)).store(phase * 100 + b, Ordering::Release);
            }
            grid_sync(c, t);
            // Every block sees every other block's value of this phase.
            let other = (b + t + 1) % blocks;
            if atomic(data.add(other as usize)).load(Ordering::Acquire) != phase * 100 + other {
                atomic(errors).fetch_add(1, Ordering::Relaxed);
            }
            grid_sync(c, t);
        }
    }
}

#[test]
fn cooperative_grid_sync_across_all_blocks() {
    let (exec, _) = executor();
    let blocks = 8usize;
    let mut data = vec![0u32; blocks];
    let mut errors = vec![0u32];
    let p = params(&[addr(&mut data), addr(&mut errors)]);
    let options = LaunchOptions { cooperative: true, ..LaunchOptions::default() };
    unsafe { exec.launch(&scheduled(cooperative_kernel), [blocks as u32, 1, 1], [64, 1, 1], 0, &p, &options) }.unwrap();
    assert_eq!(errors[0], 0);
}

// ---- failures -----------------------------------------------------------------

unsafe extern "C" fn deadlock_kernel(_p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let t = linear(ctx(c), x, y, z);
        if t < 16 {
            __anycuda_barrier(c, t, 0, 0, 1);
        } else {
            __anycuda_shfl(c, t, 0, t, 1, 0, u32::MAX, 2);
        }
    }
}

unsafe extern "C" fn counted_barrier_deadlock_kernel(_p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let t = linear(ctx(c), x, y, z);
        if t < 32 {
            __anycuda_barrier(c, t, 1, 64, 1);
        }
    }
}

#[test]
fn deadlocks_are_reported_quickly() {
    let (exec, _) = executor();
    let start = Instant::now();
    let error = unsafe { exec.launch(&scheduled(deadlock_kernel), [2, 1, 1], [32, 1, 1], 0, &[], &opts()) }.unwrap_err();
    let LaunchError::Deadlock { description, .. } = &error else { panic!("{error}") };
    assert!(description.contains("barrier 0"), "{description}");
    assert!(description.contains("shfl.sync"), "{description}");
    let error = unsafe { exec.launch(&scheduled(counted_barrier_deadlock_kernel), [1, 1, 1], [96, 1, 1], 0, &[], &opts()) }.unwrap_err();
    assert!(matches!(error, LaunchError::Deadlock { .. }), "{error}");
    assert!(start.elapsed() < Duration::from_secs(2));
}

unsafe extern "C" fn null_write_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        let b = block_linear(ctx(c));
        if b == 3 && t == 5 {
            std::ptr::write_volatile(std::ptr::null_mut::<u32>().add(2), 1);
        }
        atomic(out).fetch_add(1, Ordering::Relaxed);
    }
}

unsafe extern "C" fn null_write_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        for t in 0..ctx(c).nthreads {
            null_write_kernel(p, c, t, 0, 0);
        }
    }
}

unsafe extern "C" fn count_kernel(p: *const u8, c: *mut BlockCtx, _x: u32, _y: u32, _z: u32) {
    unsafe {
        let _ = c;
        atomic(arg(p, 0) as *mut u32).fetch_add(1, Ordering::Relaxed);
    }
}

unsafe extern "C" fn count_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        for t in 0..ctx(c).nthreads {
            count_kernel(p, c, t, 0, 0);
        }
    }
}

#[test]
fn null_pointer_writes_fail_the_launch_and_the_executor_lives_on() {
    let (exec, _) = executor();
    let mut out = vec![0u32];
    let p = params(&[addr(&mut out)]);
    for kernel in [scheduled(null_write_kernel), fast(null_write_kernel, null_write_block)] {
        for _ in 0..3 {
            let error = unsafe { exec.launch(&kernel, [16, 1, 1], [32, 1, 1], 0, &p, &opts()) }.unwrap_err();
            assert_eq!(error, LaunchError::IllegalAddress { address: 8 });
            out[0] = 0;
            let good = [scheduled(count_kernel), fast(count_kernel, count_block)];
            for good in &good {
                unsafe { exec.launch(good, [16, 1, 1], [32, 1, 1], 0, &p, &opts()) }.unwrap();
            }
            assert_eq!(out[0], 2 * 16 * 32);
        }
    }
}

unsafe extern "C" fn fault_while_others_wait_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let flag = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        if block_linear(ctx(c)) == 5 && t == 0 {
            std::ptr::write_volatile(0x18 as *mut u32, 1);
        }
        // Everyone else waits for a flag that the faulting block would
        // have set.
        while atomic(flag).load(Ordering::Acquire) == 0 {
            __anycuda_yield(c, t);
        }
    }
}

unsafe extern "C" fn fault_while_others_wait_block(p: *const u8, c: *mut BlockCtx) {
    unsafe { fault_while_others_wait_kernel(p, c, 0, 0, 0) }
}

#[test]
fn a_fault_cancels_blocks_that_wait_for_the_faulting_one() {
    let (exec, _) = executor();
    let mut flag = vec![0u32];
    let p = params(&[addr(&mut flag)]);
    let kernels = [scheduled(fault_while_others_wait_kernel), fast(fault_while_others_wait_kernel, fault_while_others_wait_block)];
    for kernel in kernels {
        let block = if kernel.block.is_some() { 1 } else { 32 };
        let error = unsafe { exec.launch(&kernel, [12, 1, 1], [block, 1, 1], 0, &p, &opts()) }.unwrap_err();
        assert_eq!(error, LaunchError::IllegalAddress { address: 0x18 });
    }
}

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64, buffer: &mut [u8; 512]) -> u64 {
    let mut local = [0u8; 512];
    local[(depth % 512) as usize] = buffer[(depth * 7 % 512) as usize].wrapping_add(1);
    let next = recurse(depth + 1, std::hint::black_box(&mut local));
    next + u64::from(local[3])
}

unsafe extern "C" fn recursion_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let t = linear(ctx(c), x, y, z);
        if t == 7 {
            let mut buffer = [0u8; 512];
            *(arg(p, 0) as *mut u64) = recurse(0, &mut buffer);
        }
    }
}

unsafe extern "C" fn recursion_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        for t in 0..ctx(c).nthreads {
            recursion_kernel(p, c, t, 0, 0);
        }
    }
}

#[test]
fn infinite_recursion_is_an_error() {
    let (exec, _) = executor_with(ExecutorConfig { block_stack_size: 1 << 20, ..ExecutorConfig::default() });
    let mut out = vec![0u64];
    let p = params(&[addr(&mut out)]);
    for kernel in [scheduled(recursion_kernel), fast(recursion_kernel, recursion_block)] {
        let error = unsafe { exec.launch(&kernel, [2, 1, 1], [32, 1, 1], 0, &p, &opts()) }.unwrap_err();
        assert!(matches!(error, LaunchError::StackOverflow { .. }), "{error}");
    }
    let mut count = vec![0u32];
    let p = params(&[addr(&mut count)]);
    unsafe { exec.launch(&scheduled(count_kernel), [2, 1, 1], [32, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(count[0], 64);
}

unsafe extern "C" fn trap_kernel(_p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let t = linear(ctx(c), x, y, z);
        if block_linear(ctx(c)) == 1 && t == 33 {
            __anycuda_trap(c, t, c"k (PTX line 7)".as_ptr());
        }
    }
}

unsafe extern "C" fn trap_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        for t in 0..ctx(c).nthreads {
            trap_kernel(p, c, t % 32, t / 32, 0);
        }
    }
}

#[test]
fn trap_fails_the_launch() {
    let (exec, _) = executor();
    for kernel in [scheduled(trap_kernel), fast(trap_kernel, trap_block)] {
        let error = unsafe { exec.launch(&kernel, [3, 1, 1], [32, 2, 1], 0, &[], &opts()) }.unwrap_err();
        assert_eq!(error, LaunchError::Trap { block: [1, 0, 0], thread: [1, 1, 0], place: "k (PTX line 7)".into() });
    }
}

unsafe extern "C" fn assert_kernel(_p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let t = linear(ctx(c), x, y, z);
        if block_linear(ctx(c)) == 2 && t == 3 {
            __anycuda_assertfail(c, t, c"x < 3".as_ptr(), c"kernel.cu".as_ptr(), 42, c"void k(int*)".as_ptr(), 1);
        }
    }
}

#[test]
fn assert_prints_like_cuda_and_fails() {
    let (exec, capture) = executor();
    let error = unsafe { exec.launch(&scheduled(assert_kernel), [4, 1, 1], [4, 2, 1], 0, &[], &opts()) }.unwrap_err();
    assert_eq!(error, LaunchError::Assert { block: [2, 0, 0], thread: [3, 0, 0], message: "x < 3".into() });
    assert_eq!(capture.stderr(), "kernel.cu:42: void k(int*): block: [2,0,0], thread: [3,0,0] Assertion `x < 3` failed.\n");
}

// ---- device heap --------------------------------------------------------------

unsafe extern "C" fn malloc_kernel(p: *const u8, c: *mut BlockCtx, _x: u32, _y: u32, _z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u64;
        let mut blocks = [std::ptr::null_mut(); 64];
        let mut count = 0;
        while count < 64 {
            let block = __anycuda_malloc(c, 1 << 20);
            if block.is_null() {
                break;
            }
            // The memory is usable.
            block.cast::<u8>().write_bytes(count as u8, 1 << 20);
            blocks[count] = block;
            count += 1;
        }
        *out = count as u64;
        for block in &blocks[..count] {
            __anycuda_free(c, *block);
        }
        *out.add(1) = !__anycuda_malloc(c, 8 << 20).is_null() as u64;
    }
}

#[test]
fn device_malloc_up_to_the_heap_limit() {
    let (exec, _) = executor();
    let mut out = vec![0u64; 2];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(malloc_kernel), [1, 1, 1], [1, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(out, [8, 1]);
    exec.heap().set_limit(3 << 20);
    // The 8 MiB block from the first launch is still allocated.
    assert_eq!(exec.heap().used(), 8 << 20);
}

// ---- fast path ------------------------------------------------------------------

unsafe extern "C" fn index_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u64;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let b = block_linear(cx);
        let slot = (b * cx.nthreads + t) as usize;
        *out.add(slot) = u64::from(b) << 32 | u64::from(t) | u64::from(cx.smid < cx.nsmid) << 63;
        if __anycuda_is_local(c, t, &slot as *const usize as u64) == 0 {
            *out.add(slot) = 0;
        }
        if __anycuda_is_local(c, t, out as u64) != 0 {
            *out.add(slot) = 1;
        }
    }
}

unsafe extern "C" fn index_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        let cx = ctx(c);
        for z in 0..cx.ntid[2] {
            for y in 0..cx.ntid[1] {
                for x in 0..cx.ntid[0] {
                    index_kernel(p, c, x, y, z);
                }
            }
        }
    }
}

#[test]
fn every_thread_of_every_block_runs_once_on_both_paths() {
    let (exec, _) = executor();
    let grid = [5u32, 3, 2];
    let block = [4u32, 2, 3];
    let total = 30 * 24;
    for kernel in [scheduled(index_kernel), fast(index_kernel, index_block)] {
        let mut out = vec![0u64; total];
        let p = params(&[addr(&mut out)]);
        unsafe { exec.launch(&kernel, grid, block, 0, &p, &opts()) }.unwrap();
        for b in 0..30u64 {
            for t in 0..24u64 {
                assert_eq!(out[(b * 24 + t) as usize], b << 32 | t | 1 << 63);
            }
        }
    }
}

#[test]
fn invalid_configurations_are_rejected() {
    let (exec, _) = executor();
    let kernel = scheduled(count_kernel);
    let bad = |grid, block| unsafe { exec.launch(&kernel, grid, block, 0, &[0; 8], &opts()) }.unwrap_err();
    assert!(matches!(bad([0, 1, 1], [1, 1, 1]), LaunchError::InvalidConfiguration(_)));
    assert!(matches!(bad([1, 1, 1], [1025, 1, 1]), LaunchError::InvalidConfiguration(_)));
    let mut kernel = scheduled(count_kernel);
    kernel.info.param_bytes = 16;
    let error = unsafe { exec.launch(&kernel, [1, 1, 1], [1, 1, 1], 0, &[0; 8], &opts()) }.unwrap_err();
    assert!(matches!(error, LaunchError::InvalidConfiguration(_)));
}

#[test]
fn many_launches_from_several_threads() {
    let (exec, _) = executor();
    let counter = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let mut out = vec![0u32];
                let p = params(&[addr(&mut out)]);
                for i in 0..50u32 {
                    let kernel = if i % 2 == 0 { scheduled(count_kernel) } else { fast(count_kernel, count_block) };
                    unsafe { exec.launch(&kernel, [1 + i % 7, 1, 1], [32, 1, 1], 0, &p, &opts()) }.unwrap();
                }
                counter.fetch_add(u64::from(out[0]), Ordering::Relaxed);
            });
        }
    });
    let per_thread: u64 = (0..50u64).map(|i| (1 + i % 7) * 32).sum();
    assert_eq!(counter.load(Ordering::Relaxed), 4 * per_thread);
}

unsafe extern "C" fn timer_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u64;
        let t = linear(ctx(c), x, y, z);
        if t != 0 {
            return;
        }
        let c0 = __anycuda_clock64(c);
        let g0 = __anycuda_globaltimer(c);
        __anycuda_nanosleep(c, 200_000);
        let c1 = __anycuda_clock64(c);
        let g1 = __anycuda_globaltimer(c);
        *out = c1.wrapping_sub(c0);
        *out.add(1) = g1.wrapping_sub(g0);
        *out.add(2) = g1;
    }
}

#[test]
fn clocks_advance_and_nanosleep_sleeps() {
    let (exec, _) = executor();
    let mut out = vec![0u64; 3];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&fast(timer_kernel, count_block_timer), [1, 1, 1], [2, 1, 1], 0, &p, &opts()) }.unwrap();
    assert!(out[0] > 0 && out[0] < 1 << 40, "clock64 delta {}", out[0]);
    assert!(out[1] >= 100_000, "globaltimer delta {} ns", out[1]);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    assert!(out[2].abs_diff(now) < 5_000_000_000);
}

unsafe extern "C" fn count_block_timer(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        for t in 0..ctx(c).nthreads {
            timer_kernel(p, c, t, 0, 0);
        }
    }
}

unsafe extern "C" fn arrive_then_exit_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        if t < 32 {
            // Arrives at the block-wide barrier 2 and leaves: counted once,
            // as exited.
            __anycuda_barrier_arrive(c, t, 2, 0, 1);
            return;
        }
        let shared = ctx(c).shared.cast::<u32>();
        for round in 1..=3u32 {
            if t >= 64 {
                // Come late, so that a barrier released too early shows.
                for _ in 0..16 {
                    __anycuda_yield(c, t);
                }
            }
            shared.add(t as usize).write_volatile(round);
            __anycuda_barrier(c, t, 2, 0, 2);
            // Released only once all 64 waiting threads reached this round.
            if (32..96).any(|i| shared.add(i).read_volatile() < round) {
                atomic(out.add(1)).fetch_add(1, Ordering::Relaxed);
            }
            atomic(out).fetch_add(1, Ordering::Relaxed);
            __anycuda_barrier(c, t, 2, 0, 3);
        }
    }
}

#[test]
fn arrivals_of_threads_that_exit_count_once() {
    let (exec, _) = executor();
    let mut out = vec![0u32; 2];
    let p = params(&[addr(&mut out)]);
    let mut kernel = scheduled(arrive_then_exit_kernel);
    kernel.info.static_shared_bytes = 96 * 4;
    kernel.info.dynamic_shared_offset = 96 * 4;
    unsafe { exec.launch(&kernel, [2, 1, 1], [96, 1, 1], 0, &p, &opts()) }.unwrap();
    assert_eq!(out, [2 * 64 * 3, 0]);
}

// ---- threads per launch ---------------------------------------------------------

thread_local! {
    static THREAD_TAG: u8 = const { 0 };
}

/// Records, per block, the address of a thread-local: one per OS thread.
unsafe extern "C" fn thread_tag_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        let out = arg(p, 0) as *mut u64;
        let cx = ctx(c);
        let tag = THREAD_TAG.with(|t| t as *const u8 as u64);
        out.add(block_linear(cx) as usize).write(tag);
    }
}

unsafe extern "C" fn thread_tag_thread(_: *const u8, _: *mut BlockCtx, _: u32, _: u32, _: u32) {}

#[test]
fn one_worker_means_the_launching_thread_alone() {
    // `workers` counts the launching thread: with 1, no pool thread takes
    // blocks, so a single-core configuration really uses one core.
    let (exec, _) = executor_with(ExecutorConfig { workers: 1, ..ExecutorConfig::default() });
    let mut out = vec![0u64; 256];
    let p = params(&[addr(&mut out)]);
    for _ in 0..20 {
        unsafe { exec.launch(&fast(thread_tag_thread, thread_tag_block), [256, 1, 1], [32, 1, 1], 0, &p, &opts()) }.unwrap();
        let me = THREAD_TAG.with(|t| t as *const u8 as u64);
        assert!(out.iter().all(|&t| t == me), "a block ran on another thread");
    }
}

unsafe extern "C" fn late_fault_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        if block_linear(ctx(c)) == 9001 {
            std::ptr::write_volatile(0x10 as *mut u32, 1);
        }
        atomic(arg(p, 0) as *mut u32).fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_fault_inside_a_run_of_blocks_ends_the_launch_and_the_next_one_is_whole() {
    // 20,000 blocks are claimed in runs of several; a fault in the middle of
    // a run must still count the run's other blocks as done (or the launch
    // would never end), and the next launch must run every block.
    let (exec, _) = executor_with(ExecutorConfig { workers: 2, ..ExecutorConfig::default() });
    let mut out = vec![0u32];
    let p = params(&[addr(&mut out)]);
    for _ in 0..3 {
        let error = unsafe { exec.launch(&fast(count_kernel, late_fault_block), [20_000, 1, 1], [1, 1, 1], 0, &p, &opts()) }.unwrap_err();
        assert_eq!(error, LaunchError::IllegalAddress { address: 0x10 });
        assert!(out[0] < 20_000, "blocks after the fault were cancelled");
        out[0] = 0;
        unsafe { exec.launch(&fast(count_kernel, count_block), [20_000, 1, 1], [1, 1, 1], 0, &p, &opts()) }.unwrap();
        assert_eq!(out[0], 20_000);
        out[0] = 0;
    }
}
