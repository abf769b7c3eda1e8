//! Launch overhead, barrier and shuffle costs, module load time.
//!
//! `cargo bench -p anycuda-backend-cpu` prints one line per measurement.

use std::hint::black_box;
use std::time::{Duration, Instant};

use backend_cpu::exec::runtime::{__anycuda_barrier, __anycuda_shfl};
use backend_cpu::{BlockCtx, Executor, ExecutorConfig, KernelInfo, LaunchOptions, LoadedKernel};
use compiler::cpu_abi::{shfl, BlockFn, ThreadFn};

fn info(needs_scheduler: bool) -> KernelInfo {
    KernelInfo {
        name: "bench".into(),
        params: Vec::new(),
        param_bytes: 0,
        static_shared_bytes: 0,
        dynamic_shared_offset: 0,
        needs_scheduler,
        spin_waits: false,
        reqntid: None,
        maxntid: None,
        local_bytes: 0,
        lanes: 1,
        frame_bytes: 0,
        lockstep_guard: None,
        privatise: None,
        calls_malloc: false,
        calls_printf: false,
    }
}

fn kernel(thread: ThreadFn, block: Option<BlockFn>) -> LoadedKernel {
    LoadedKernel { thread, block, info: info(block.is_none()), code: Vec::new().into() }
}

unsafe extern "C" fn empty_thread(_p: *const u8, _c: *mut BlockCtx, x: u32, _y: u32, _z: u32) {
    black_box(x);
}

unsafe extern "C" fn empty_block(p: *const u8, c: *mut BlockCtx) {
    unsafe {
        for x in 0..(*c).nthreads {
            empty_thread(p, c, x, 0, 0);
        }
    }
}

const ROUNDS: u32 = 1000;

unsafe extern "C" fn barrier_thread(_p: *const u8, c: *mut BlockCtx, x: u32, _y: u32, _z: u32) {
    unsafe {
        for _ in 0..ROUNDS {
            __anycuda_barrier(c, x, 0, 0, 1);
        }
    }
}

unsafe extern "C" fn shfl_thread(_p: *const u8, c: *mut BlockCtx, x: u32, _y: u32, _z: u32) {
    unsafe {
        let mut v = x;
        for _ in 0..ROUNDS {
            v = __anycuda_shfl(c, x, shfl::DOWN, v, 1, 0x1f, u32::MAX, 1) as u32;
        }
        black_box(v);
    }
}

/// Median time per launch over `iterations`, after warming up.
fn time_launch(exec: &Executor, kernel: &LoadedKernel, grid: u32, block: u32, iterations: u32) -> Duration {
    let run = || unsafe { exec.launch(kernel, [grid, 1, 1], [block, 1, 1], 0, &[], &LaunchOptions::default()) }.unwrap();
    for _ in 0..iterations.min(20) {
        run();
    }
    let mut samples: Vec<Duration> = (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                run();
            }
            start.elapsed() / iterations
        })
        .collect();
    samples.sort();
    samples[2]
}

fn main() {
    // `cargo bench -- NAME` runs the measurements whose title contains NAME.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let want = |title: &str| filter.as_deref().is_none_or(|f| title.contains(f));
    let exec = Executor::new(ExecutorConfig::default());
    println!("workers (nsmid): {}", exec.multiprocessors());

    let fast = kernel(empty_thread, Some(empty_block));
    let scheduled = kernel(empty_thread, None);
    for (name, k) in [("fast", &fast), ("scheduled", &scheduled)] {
        if !want(&format!("empty {name}")) {
            continue;
        }
        let small = time_launch(&exec, k, 1, 32, 2000);
        println!("empty launch, {name} path, 1 block x 32 threads: {:.2} us", small.as_secs_f64() * 1e6);
        let few = time_launch(&exec, k, 8, 32, 500);
        println!("empty launch, {name} path, 8 blocks x 32 threads: {:.2} us", few.as_secs_f64() * 1e6);
        let large = time_launch(&exec, k, 1000, 256, 20);
        println!(
            "empty launch, {name} path, 1000 blocks x 256 threads: {:.1} us ({:.1} ns per thread)",
            large.as_secs_f64() * 1e6,
            large.as_secs_f64() * 1e9 / 256_000.0
        );
    }

    if want("time limit") {
        // The bookkeeping of a launch time limit (watchdog registration,
        // runner list): the same empty launches on an executor with a 60 s
        // limit, alternating with the unlimited one.
        let limited = Executor::new(ExecutorConfig { launch_timeout: Some(Duration::from_secs(60)), ..ExecutorConfig::default() });
        for (grid, iterations) in [(1u32, 2000u32), (8, 500)] {
            let (mut without, mut with) = (Vec::new(), Vec::new());
            for _ in 0..3 {
                without.push(time_launch(&exec, &fast, grid, 32, iterations));
                with.push(time_launch(&limited, &fast, grid, 32, iterations));
            }
            without.sort();
            with.sort();
            println!(
                "empty launch, fast path, {grid} block(s) x 32 threads, time limit: {:.2} us without, {:.2} us with a 60 s limit ({:.2}x)",
                without[1].as_secs_f64() * 1e6,
                with[1].as_secs_f64() * 1e6,
                with[1].as_secs_f64() / without[1].as_secs_f64()
            );
        }
    }

    for threads in [32u32, 256, 1024] {
        if !want("barrier") {
            continue;
        }
        let empty = time_launch(&exec, &scheduled, 1, threads, 20);
        let barrier = time_launch(&exec, &kernel(barrier_thread, None), 1, threads, 3);
        let per = (barrier.saturating_sub(empty)).as_secs_f64() * 1e9 / f64::from(threads * ROUNDS);
        println!("barrier, block of {threads}: {per:.1} ns per thread per barrier");
    }
    for threads in [32u32, 256] {
        if !want("shfl") {
            continue;
        }
        let empty = time_launch(&exec, &scheduled, 1, threads, 20);
        let shuffle = time_launch(&exec, &kernel(shfl_thread, None), 1, threads, 3);
        let per = (shuffle.saturating_sub(empty)).as_secs_f64() * 1e9 / f64::from(threads * ROUNDS);
        println!("shfl.sync.down, block of {threads}: {per:.1} ns per thread per shuffle");
    }
    if want("load") {
        bench_load();
    }
    // Many blocks in parallel: barrier throughput with all workers busy.
    if !want("parallel barrier") {
        return;
    }
    let empty = time_launch(&exec, &scheduled, 64, 256, 5);
    let barrier = time_launch(&exec, &kernel(barrier_thread, None), 64, 256, 1);
    let per = (barrier.saturating_sub(empty)).as_secs_f64() * 1e9 / (64.0 * 256.0 * f64::from(ROUNDS));
    println!("barrier, 64 blocks of 256 on all workers: {per:.1} ns per thread per barrier (wall time)");
}

/// A small module: a kernel with both entry points, a global, calls into
/// the runtime and libm.
const MODULE_IR: &str = r#"
declare i64 @__anycuda_globaltimer(ptr)
declare float @sinf(float)
@"__anycuda_global.table" = global [64 x i32] zeroinitializer, align 16

define void @"__anycuda_thread.k"(ptr %params, ptr %ctx, i32 %x, i32 %y, i32 %z) {
  %out = load ptr, ptr %params
  %t = call i64 @__anycuda_globaltimer(ptr %ctx)
  %f = uitofp i32 %x to float
  %s = call float @sinf(float %f)
  %i = zext i32 %x to i64
  %p = getelementptr float, ptr %out, i64 %i
  store float %s, ptr %p
  %g = getelementptr i32, ptr @"__anycuda_global.table", i64 %i
  %t32 = trunc i64 %t to i32
  store i32 %t32, ptr %g
  ret void
}

define void @"__anycuda_block.k"(ptr %params, ptr %ctx) {
entry:
  %n = load i32, ptr %ctx
  br label %loop
loop:
  %x = phi i32 [ 0, %entry ], [ %next, %loop ]
  call void @"__anycuda_thread.k"(ptr %params, ptr %ctx, i32 %x, i32 0, i32 0)
  %next = add i32 %x, 1
  %more = icmp ult i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
"#;

fn bench_load() {
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};
    use inkwell::OptimizationLevel;

    Target::initialize_native(&InitializationConfig::default()).unwrap();
    let context = Context::create();
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(MODULE_IR.as_bytes(), "bench")).unwrap();
    let triple = TargetMachine::get_default_triple();
    let machine = Target::from_triple(&triple)
        .unwrap()
        .create_target_machine(&triple, "", "", OptimizationLevel::Default, RelocMode::PIC, CodeModel::Default)
        .unwrap();
    module.set_triple(&triple);
    let object = machine.write_to_memory_buffer(&module, FileType::Object).unwrap().as_slice().to_vec();
    drop(backend_cpu::load(&object).unwrap());
    let rounds = 500;
    let start = Instant::now();
    for _ in 0..rounds {
        let loaded = backend_cpu::load(&object).unwrap();
        black_box(loaded.symbol("__anycuda_thread.k"));
    }
    let per = start.elapsed() / rounds;
    println!("load + unload of a {}-byte object: {:.1} us", object.len(), per.as_secs_f64() * 1e6);
}
