//! The project's own PTX programs (`ptx/`): what the oracle does not cover.

use backend_cpu::{Executor, ExecutorConfig, LaunchError, OutputSink};
use kernels::{as_bytes, launch, Arg, Program};
use std::sync::{Arc, Mutex};

fn exec() -> &'static Executor {
    Executor::global()
}

#[test]
fn barrier_inside_a_loop() {
    let p = Program::from_file("barriers.ptx").expect("compiles");
    let k = p.kernel("barrier_in_loop").expect("kernel");
    let (blocks, threads) = (3u32, 256u32);
    let mut out = vec![0u32; (blocks * threads) as usize];
    launch(exec(), k, [blocks, 1, 1], [threads, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
    for (i, v) in out.iter().enumerate() {
        let tid = i as u32 % threads;
        let right = (tid + 1) % threads;
        let want: u32 = (0..16).map(|r| r * 1000 + right).sum();
        assert_eq!(*v, want, "thread {i}");
    }
}

#[test]
fn barrier_rounds_of_whole_and_partial_blocks_in_both_modes() {
    // One warp, whole warps, and a last warp of 4 threads: in warp mode the
    // warps of a block go on one after another inside one call and the last
    // one's arrival completes the barrier there.
    for warp_mode in [true, false] {
        let opts = compiler::Options {
            warp: if warp_mode { compiler::WarpMode::Always } else { compiler::WarpMode::Off },
            strict_affine: false,
            memcheck: false,
            tier: compiler::Tier::Optimized,
        };
        let p = Program::from_file_with("barriers.ptx", &opts).expect("compiles");
        let k = p.kernel("barrier_in_loop").expect("kernel");
        for threads in [32u32, 96, 100, 256] {
            let mut out = vec![0u32; 2 * threads as usize];
            launch(exec(), k, [2, 1, 1], [threads, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
            for (i, v) in out.iter().enumerate() {
                let right = (i as u32 % threads + 1) % threads;
                let want: u32 = (0..16).map(|r| r * 1000 + right).sum();
                assert_eq!(*v, want, "thread {i} of blocks of {threads}, warp mode {warp_mode}");
            }
        }
        // A warp that leaves the loop early counts as arrived at the
        // barriers of the rounds after.
        let k = p.kernel("barrier_loop_with_leaver").expect("kernel");
        let mut out = vec![0u32; 129];
        launch(exec(), k, [1, 1, 1], [128, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        assert_eq!(out[128], 128, "every thread ended once, warp mode {warp_mode}");
        for (tid, v) in out[..128].iter().enumerate() {
            let tid = tid as u32;
            let nb = (tid + 32) % 128;
            let rounds = if tid / 32 == 2 { 6 } else { 16 };
            let want: u32 = (0..rounds).map(|r| if nb / 32 == 2 { r.min(5) } else { r } * 1000 + nb).sum();
            assert_eq!(*v, want, "thread {tid}, warp mode {warp_mode}");
        }
    }
}

#[test]
fn barrier_after_threads_exited() {
    let p = Program::from_file("barriers.ptx").expect("compiles");
    let k = p.kernel("barrier_after_exit").expect("kernel");
    let mut out = vec![u32::MAX; 128];
    launch(exec(), k, [1, 1, 1], [128, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))])
        .expect("params")
        .expect("launch completes although 28 threads never reach the barrier");
    for i in 0..100u32 {
        assert_eq!(out[i as usize], ((i + 1) % 100) * 7);
    }
    assert!(out[100..].iter().all(|&v| v == u32::MAX), "exited threads wrote nothing");
}

#[test]
fn named_barriers_with_thread_counts() {
    let p = Program::from_file("barriers.ptx").expect("compiles");
    let k = p.kernel("named_barriers").expect("kernel");
    let mut out = vec![0u32; 128];
    launch(exec(), k, [2, 1, 1], [128, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
    for i in 0..128u32 {
        assert_eq!(out[i as usize], (i ^ 32) + 5000);
    }
}

#[test]
fn three_dimensional_launch_with_1024_thread_blocks() {
    // Block shapes whose rows are and are not whole warps, in both modes
    // (warp mode computes each lane's ids from the warp's linear range).
    let shapes = [[16u32, 8, 8], [7, 5, 3], [3, 11, 31], [1, 1, 1024], [17, 3, 20], [64, 2, 8], [33, 31, 1]];
    for warp_mode in [false, true] {
        let p = warp_program("blocks.ptx", warp_mode);
        let k = p.kernel("ids_3d").expect("kernel");
        assert_eq!(k.info.lanes, if warp_mode { 32 } else { 1 }, "mode");
        for block in shapes {
            let grid = [2u32, 3, 2];
            let n = (grid.iter().product::<u32>() * block.iter().product::<u32>()) as usize;
            let mut out = vec![0u64; n];
            launch(exec(), k, grid, block, 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
            let mut i = 0;
            for bz in 0..grid[2] as u64 {
                for by in 0..grid[1] as u64 {
                    for bx in 0..grid[0] as u64 {
                        for tz in 0..block[2] as u64 {
                            for ty in 0..block[1] as u64 {
                                for tx in 0..block[0] as u64 {
                                    let want = bz << 40 | by << 32 | bx << 24 | tz << 16 | ty << 8 | tx;
                                    assert_eq!(out[i], want, "element {i}, block {block:?}, warp mode {warp_mode}");
                                    i += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn blocks_waiting_on_a_later_block_finish() {
    let p = Program::from_file("blocks.ptx").expect("compiles");
    let k = p.kernel("spin_on_last_block").expect("kernel");
    // Far more blocks than workers: block 0 spins until the last one runs.
    let blocks = 256u32;
    let mut flag = vec![0u32; 1];
    let mut out = vec![0u32; blocks as usize];
    launch(exec(), k, [blocks, 1, 1], [32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut flag)), Arg::Buf(as_bytes(&mut out))])
        .expect("params")
        .expect("launch");
    assert_eq!(out[0], 42, "block 0 saw the flag");
    assert_eq!(out[blocks as usize - 1], 42);
}

#[test]
fn dynamic_shared_memory_is_per_block() {
    let p = Program::from_file("blocks.ptx").expect("compiles");
    let k = p.kernel("dynamic_shared_reverse").expect("kernel");
    let (blocks, threads) = (4u32, 256u32);
    let mut input: Vec<u32> = (0..blocks * threads).map(|i| i * 3 + 1).collect();
    let mut out = vec![0u32; input.len()];
    let mut sizes = vec![0u32; blocks as usize];
    launch(
        exec(),
        k,
        [blocks, 1, 1],
        [threads, 1, 1],
        threads * 4,
        &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out)), Arg::Buf(as_bytes(&mut sizes))],
    )
    .expect("params")
    .expect("launch");
    for b in 0..blocks {
        for t in 0..threads {
            let i = (b * threads + t) as usize;
            let j = (b * threads + threads - 1 - t) as usize;
            assert_eq!(out[i], input[j]);
        }
        assert_eq!(sizes[b as usize], threads * 4, "%dynamic_smem_size");
    }
}

#[test]
fn deep_recursion() {
    let p = Program::from_file("calls.ptx").expect("compiles");
    let k = p.kernel("deep_recursion").expect("kernel");
    let mut depth: Vec<u32> = (0..64).map(|i| i * 31).collect();
    let mut out = vec![0u64; 64];
    launch(exec(), k, [1, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut depth)), Arg::Buf(as_bytes(&mut out))])
        .expect("params")
        .expect("launch");
    for (d, v) in depth.iter().zip(&out) {
        let d = *d as u64;
        assert_eq!(*v, d * (d + 1) / 2, "sum_to({d})");
    }
}

#[test]
fn local_arrays_through_generic_pointers_and_indirect_calls() {
    let p = Program::from_file("calls.ptx").expect("compiles");
    let k = p.kernel("local_and_indirect").expect("kernel");
    let mut key: Vec<u32> = (0..128).map(|i| i * 37 + 11).collect();
    let mut out = vec![0u32; 128];
    launch(exec(), k, [1, 1, 1], [128, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut key)), Arg::Buf(as_bytes(&mut out))])
        .expect("params")
        .expect("launch");
    for i in 0..128u32 {
        let v = i * 100 + (key[i as usize] % 64);
        let want = if i % 2 == 0 { v * 2 } else { v.wrapping_mul(v) };
        assert_eq!(out[i as usize], want, "thread {i}");
    }
}

#[derive(Default)]
struct Capture {
    out: Mutex<Vec<u8>>,
    err: Mutex<Vec<u8>>,
}

impl OutputSink for Capture {
    fn stdout(&self, bytes: &[u8]) {
        self.out.lock().map(|mut o| o.extend_from_slice(bytes)).unwrap_or(());
    }
    fn stderr(&self, bytes: &[u8]) {
        self.err.lock().map(|mut o| o.extend_from_slice(bytes)).unwrap_or(());
    }
}

fn capturing() -> (Executor, Arc<Capture>) {
    let cap = Arc::new(Capture::default());
    let exec = Executor::new(ExecutorConfig { output: Some(cap.clone()), ..ExecutorConfig::default() });
    (exec, cap)
}

#[test]
fn printf_output() {
    let p = Program::from_file("errors.ptx").expect("compiles");
    let (exec, cap) = capturing();
    launch(&exec, p.kernel("print_lines").expect("kernel"), [1, 1, 1], [32, 1, 1], 0, &mut []).expect("params").expect("launch");
    let text = String::from_utf8(cap.out.lock().expect("lock").clone()).expect("utf8");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["thread 0: 0.00 ok! abc0", "thread 1: 1.50 ok! abc1", "thread 2: 3.00 ok! abc2", "thread 3: 4.50 ok! abc3"]);
}

#[test]
fn trap_fails_the_launch() {
    let p = Program::from_file("errors.ptx").expect("compiles");
    let r = launch(exec(), p.kernel("trap_in_one_thread").expect("kernel"), [3, 1, 1], [64, 1, 1], 0, &mut []).expect("params");
    match r {
        Err(LaunchError::Trap { block, thread, place }) => {
            assert_eq!(block, [1, 0, 0]);
            assert_eq!(thread, [5, 0, 0]);
            // The error says where: the kernel and the PTX line of `trap`.
            assert_eq!(place, "trap_in_one_thread (PTX line 63)");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[test]
fn assert_fails_the_launch_with_its_message() {
    let p = Program::from_file("errors.ptx").expect("compiles");
    let (exec, cap) = capturing();
    let r = launch(&exec, p.kernel("failing_assert").expect("kernel"), [1, 1, 1], [32, 1, 1], 0, &mut []).expect("params");
    match r {
        Err(LaunchError::Assert { thread, message, .. }) => {
            assert_eq!(thread, [3, 0, 0]);
            assert!(message.contains("x > 0"), "{message}");
        }
        other => panic!("expected an assertion failure, got {other:?}"),
    }
    let err = String::from_utf8(cap.err.lock().expect("lock").clone()).expect("utf8");
    assert!(err.contains("k.cu:17: check: block: [0,0,0], thread: [3,0,0] Assertion `x > 0` failed."), "{err}");
}

#[test]
fn a_bad_address_fails_the_launch_and_the_process_lives_on() {
    let p = Program::from_file("errors.ptx").expect("compiles");
    let r = launch(exec(), p.kernel("null_store").expect("kernel"), [1, 1, 1], [32, 1, 1], 0, &mut []).expect("params");
    assert!(matches!(r, Err(LaunchError::IllegalAddress { .. })), "{r:?}");
    // The executor still runs kernels afterwards.
    let p2 = Program::from_file("barriers.ptx").expect("compiles");
    let mut out = vec![0u32; 128];
    launch(exec(), p2.kernel("named_barriers").expect("kernel"), [1, 1, 1], [128, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))])
        .expect("params")
        .expect("launch after a fault");
    assert_eq!(out[0], 32 + 5000);
}

#[test]
fn addresses_in_global_initializers() {
    let p = Program::from_file("initializers.ptx").expect("compiles");
    let k = p.kernel("read_initializers").expect("kernel");
    let mut out = vec![0u32; 4];
    launch(exec(), k, [1, 1, 1], [1, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
    assert_eq!(out, vec![0x12345678, 7, 0x0badf00d, 1 + 9]);
}

#[test]
fn a_partial_masked_address_is_an_error_not_zeros() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .global .align 4 .u32 w = 1;\n\
        .global .align 1 .b8 bytes[2] = {0xFF(generic(w)), 0xFF00(generic(w))};\n\
        .visible .entry k() { ret; }\n";
    let err = Program::from_source(src).err().expect("a partial address must not compile");
    assert!(err.contains("mask") && err.contains("bytes"), "{err}");
}

/// What `tile_collectives` (ptx/warp_groups.ptx) writes for lane `tid`.
fn tile_collectives_expected(input: &[u32], tid: usize) -> [u32; 12] {
    let warp = &input[tid / 32 * 32..tid / 32 * 32 + 32];
    let lane = tid % 32;
    let first = lane & !3;
    let tile: Vec<(usize, u32)> = (first..first + 4).map(|l| (l, warp[l])).collect();
    let v = warp[lane];
    let bits = |f: &dyn Fn(u32) -> bool| tile.iter().filter(|(_, x)| f(*x)).fold(0u32, |m, (l, _)| m | 1 << l);
    let same_hi = tile.iter().all(|(_, x)| x >> 3 == v >> 3);
    [
        tile.iter().any(|(_, x)| *x > 8) as u32,
        tile.iter().all(|(_, x)| *x > 2) as u32,
        bits(&|x| x & 1 == 1),
        tile.iter().map(|(_, x)| x).sum(),
        tile.iter().map(|(_, x)| *x as i32 - 5).min().unwrap_or(0) as u32,
        tile.iter().map(|(_, x)| *x).max().unwrap_or(0),
        tile.iter().fold(0, |m, (_, x)| m | 1 << x),
        bits(&|x| x & 1 == v & 1),
        if same_hi { 0xF << first } else { 0 },
        same_hi as u32,
        warp[..=lane].iter().sum(),
        if lane < 16 { warp[..16].iter().sum() } else { 0xdead },
    ]
}

#[test]
fn warp_collectives_over_tiles_in_both_modes() {
    let input: Vec<u32> = (0..96u32).map(|i| (i * 37 + i / 7) % 11).collect();
    for warp_mode in [true, false] {
        let opts = compiler::Options {
            warp: if warp_mode { compiler::WarpMode::Always } else { compiler::WarpMode::Off },
            strict_affine: false,
            memcheck: false,
            tier: compiler::Tier::Optimized,
        };
        let p = Program::from_file_with("warp_groups.ptx", &opts).expect("compiles");
        let k = p.kernel("tile_collectives").expect("kernel");
        assert_eq!(k.info.lanes, if warp_mode { 32 } else { 1 }, "mode");
        let mut out = vec![0u32; 96 * 12];
        let mut inp = input.clone();
        launch(exec(), k, [1, 1, 1], [96, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out)), Arg::Buf(as_bytes(&mut inp))])
            .expect("params")
            .expect("launch");
        for tid in 0..96 {
            let want = tile_collectives_expected(&input, tid);
            assert_eq!(&out[tid * 12..tid * 12 + 12], &want[..], "thread {tid}, warp mode {warp_mode}");
        }
    }
}

#[test]
fn shared_atomics_from_masked_lanes_in_both_modes() {
    let n = 100u32;
    let takers: Vec<u32> = (0..n).filter(|t| t % 3 != 0).collect();
    let sum64: u64 = takers.iter().map(|&t| u64::from(t) << 20).sum();
    let mut inc = 0u32;
    let mut dec = 0u32;
    for _ in &takers {
        inc = if inc >= 7 { 0 } else { inc + 1 };
        dec = if dec == 0 || dec > 9 { 9 } else { dec - 1 };
    }
    let want = [
        takers.iter().sum::<u32>(),
        takers.iter().map(|&t| 50 - t as i32).min().unwrap_or(0).min(1000) as u32,
        takers.iter().map(|&t| t * 3).max().unwrap_or(0),
        takers.iter().fold(u32::MAX, |m, &t| m & !(1 << (t % 32))),
        takers.iter().fold(0, |m, &t| m | 1 << (t % 32)),
        takers.iter().fold(0, |m, &t| m ^ t),
        inc,
        dec,
        (takers.iter().sum::<u32>() as f32).to_bits(),
        0,
        sum64 as u32,
        (sum64 >> 32) as u32,
    ];
    for warp_mode in [true, false] {
        let opts = compiler::Options {
            warp: if warp_mode { compiler::WarpMode::Always } else { compiler::WarpMode::Off },
            strict_affine: false,
            memcheck: false,
            tier: compiler::Tier::Optimized,
        };
        let p = Program::from_file_with("shared_atomics.ptx", &opts).expect("compiles");
        let k = p.kernel("shared_atomics").expect("kernel");
        assert_eq!(k.info.lanes, if warp_mode { 32 } else { 1 }, "mode");
        let mut out = vec![0u32; 3 * 12];
        launch(exec(), k, [3, 1, 1], [n, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        for b in 0..3 {
            assert_eq!(&out[b * 12..b * 12 + 12], &want[..], "block {b}, warp mode {warp_mode}");
        }
    }
}

#[test]
fn shared_atomics_of_whole_warps_on_shared_words_in_both_modes() {
    // 64 threads: two whole warps; 40: one whole warp and 8 lanes of another.
    for n in [64u32, 40] {
        let mut bins = [0u32; 5];
        for t in 0..n {
            bins[(7 * t % 5) as usize] += t;
        }
        for warp_mode in [true, false] {
            let opts = compiler::Options {
                warp: if warp_mode { compiler::WarpMode::Always } else { compiler::WarpMode::Off },
                strict_affine: false,
                memcheck: false,
                tier: compiler::Tier::Optimized,
            };
            let p = Program::from_file_with("shared_atomics.ptx", &opts).expect("compiles");
            let k = p.kernel("shared_counter").expect("kernel");
            let mut out = vec![u32::MAX; n as usize + 6];
            launch(exec(), k, [1, 1, 1], [n, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
            let mut olds = out[..n as usize].to_vec();
            olds.sort_unstable();
            assert_eq!(olds, (0..n).collect::<Vec<_>>(), "{n} threads, warp mode {warp_mode}");
            assert_eq!(out[n as usize], n, "{n} threads, warp mode {warp_mode}");
            assert_eq!(&out[n as usize + 1..], &bins[..], "{n} threads, warp mode {warp_mode}");
        }
    }
}

#[test]
fn nan_results_are_canonical_where_a_program_can_see_them() {
    let canonical = 0x7fff_ffffu32;
    let want = [
        canonical,
        canonical,
        canonical,
        canonical,
        11.0f32.to_bits(),
        canonical,
        canonical,
        3.0f32.to_bits(),
        0,
        1,
        canonical,
        canonical,
        canonical,
        canonical,
        3.0f32.to_bits(),
        canonical,
        canonical,
    ];
    let n = want.len();
    for payload in [0x7f80_0001u32, 0xffc1_2345, 0x7fa0_0000] {
        let mut input = [payload, f32::INFINITY.to_bits(), 2.0f32.to_bits(), 3.0f32.to_bits()];
        for warp_mode in [true, false] {
            let opts = compiler::Options {
                warp: if warp_mode { compiler::WarpMode::Always } else { compiler::WarpMode::Off },
                strict_affine: false,
                memcheck: false,
                tier: compiler::Tier::Optimized,
            };
            let p = Program::from_file_with("nan_chains.ptx", &opts).expect("compiles");
            let k = p.kernel("nan_chains").expect("kernel");
            let mut out = vec![0u32; 40 * n];
            launch(exec(), k, [1, 1, 1], [40, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
                .expect("params")
                .expect("launch");
            for t in 0..40 {
                assert_eq!(&out[t * n..t * n + n], &want[..], "thread {t}, payload {payload:#x}, warp mode {warp_mode}");
            }
        }
    }
}

/// A program in warp mode for every kernel, compiled so that any lane
/// comparison an affine bit should have spared traps.
fn strict_affine_program(file: &str) -> Program {
    let opts =
        compiler::Options { warp: compiler::WarpMode::Always, strict_affine: true, memcheck: false, tier: compiler::Tier::Optimized };
    Program::from_file_with(file, &opts).expect("compiles")
}

fn warp_program(file: &str, warp_mode: bool) -> Program {
    let opts = compiler::Options {
        warp: if warp_mode { compiler::WarpMode::Always } else { compiler::WarpMode::Off },
        strict_affine: false,
        memcheck: false,
        tier: compiler::Tier::Optimized,
    };
    Program::from_file_with(file, &opts).expect("compiles")
}

#[test]
fn registers_of_diverged_lanes_survive_a_barrier_in_both_modes() {
    for warp_mode in [true, false] {
        let p = warp_program("warp_path.ptx", warp_mode);
        let k = p.kernel("diverged_barrier").expect("kernel");
        assert_eq!(k.info.lanes, if warp_mode { 32 } else { 1 }, "mode");
        let mut out = vec![0u32; 96];
        launch(exec(), k, [2, 1, 1], [96, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        let want: Vec<u32> = (0..96).map(|t| if t % 2 == 0 { t * 5 } else { t * 3 }).collect();
        assert_eq!(out, want, "warp mode {warp_mode}");
    }
}

#[test]
fn failures_in_blocks_whose_warps_wait_end_the_launch() {
    let p = warp_program("warp_path.ptx", true);
    let r = launch(exec(), p.kernel("counted_deadlock").expect("kernel"), [1, 1, 1], [64, 1, 1], 0, &mut []).expect("params");
    match r {
        Err(LaunchError::Deadlock { description, .. }) => {
            assert!(description.contains("warp 0 waits at barrier 1 (1 of 2 warps arrived)"), "{description}")
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
    let r = launch(exec(), p.kernel("trap_after_barrier").expect("kernel"), [2, 1, 1], [64, 1, 1], 0, &mut []).expect("params");
    assert!(matches!(r, Err(LaunchError::Trap { block: [0, 0, 0], .. })), "{r:?}");
    let mut out = vec![0u32; 1];
    let r = launch(exec(), p.kernel("fault_after_barrier").expect("kernel"), [4, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))])
        .expect("params");
    assert!(matches!(r, Err(LaunchError::IllegalAddress { address: 8 })), "{r:?}");
    // The executor runs warp-path kernels afterwards.
    let k = p.kernel("diverged_barrier").expect("kernel");
    let mut out = vec![0u32; 64];
    launch(exec(), k, [1, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch after failures");
    assert_eq!(out[1], 3);
    assert_eq!(out[2], 10);
}

#[test]
fn guarded_writes_keep_the_other_lanes_values_in_both_modes() {
    for warp_mode in [true, false] {
        let p = warp_program("warp_path.ptx", warp_mode);
        let mut out = vec![0u32; 64];
        launch(exec(), p.kernel("guarded_write").expect("kernel"), [1, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        let want: Vec<u32> = (0..64).map(|t| if t % 2 == 0 { 100 + t } else { 100 }).collect();
        assert_eq!(out, want, "warp mode {warp_mode}");
    }
}

#[test]
fn local_arrays_keep_their_contents_across_barriers_in_both_modes() {
    for warp_mode in [true, false] {
        let p = warp_program("warp_path.ptx", warp_mode);
        let k = p.kernel("local_array_across_barrier").expect("kernel");
        let mut out = vec![0u32; 96];
        launch(exec(), k, [2, 1, 1], [96, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        let want: Vec<u32> = (0..96).map(|t| t * 100 + t % 16).collect();
        assert_eq!(out, want, "warp mode {warp_mode}");
    }
}

#[test]
fn address_shapes_of_registers_kept_across_barriers_are_each_warps_own() {
    // Consecutive lanes in warp 0, a permutation in warp 1, one address in
    // warp 2: each warp's loads after every barrier follow its own shape.
    let mut input: Vec<u32> = (0..96).map(|i| i * 11 + 3).collect();
    for warp_mode in [true, false] {
        let p = warp_program("warp_path.ptx", warp_mode);
        let k = p.kernel("shaped_across_barriers").expect("kernel");
        let mut out = vec![0u32; 96];
        launch(exec(), k, [2, 1, 1], [96, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for t in 0..96u32 {
            let (warp, lane) = (t / 32, t % 32);
            let idx = match warp {
                1 => lane * 7 % 32,
                2 => 5,
                _ => lane,
            };
            assert_eq!(out[t as usize], 4 * input[(warp * 32 + idx) as usize], "thread {t}, warp mode {warp_mode}");
        }
    }
}

#[test]
fn symbol_and_variable_offsets_as_values_and_elect_with_a_discarded_leader() {
    for warp_mode in [true, false] {
        let p = warp_program("operand_forms.ptx", warp_mode);
        let k = p.kernel("operand_forms").expect("kernel");
        let mut out = vec![0u32; 64 * 3];
        launch(exec(), k, [1, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        for t in 0..64 {
            let elected = u32::from(t % 32 == 0);
            assert_eq!(&out[t * 3..t * 3 + 3], &[33, 77, elected], "thread {t}, warp mode {warp_mode}");
        }
    }
}

#[test]
fn vector_loads_of_every_address_shape_in_both_modes() {
    let mut input: Vec<u32> = (0..512).map(|i| i * 3 + 1).collect();
    let want: Vec<u32> = (0..80u32)
        .flat_map(|t| {
            let u = ((t / 16) * 4) as usize;
            let s = (((t * 7) % 256) * 2) as usize;
            let c = (t * 4) as usize;
            let g = |k: usize| if t % 3 != 0 { input_value(c + 2 + k) } else { 0 };
            vec![
                input_value(c),
                input_value(c + 1),
                input_value(c + 2),
                input_value(c + 3),
                input_value(u),
                input_value(u + 1),
                input_value(u + 2),
                input_value(u + 3),
                input_value(s),
                input_value(s + 1),
                g(0),
                g(1),
                g(2),
                g(3),
            ]
        })
        .collect();
    for warp_mode in [true, false] {
        let p = warp_program("warp_path.ptx", warp_mode);
        let k = p.kernel("vector_loads").expect("kernel");
        let mut out = vec![0u32; 80 * 14];
        launch(exec(), k, [1, 1, 1], [80, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for t in 0..80 {
            assert_eq!(&out[t * 14..t * 14 + 14], &want[t * 14..t * 14 + 14], "thread {t}, warp mode {warp_mode}");
        }
    }
}

fn input_value(i: usize) -> u32 {
    i as u32 * 3 + 1
}

#[test]
fn vector_stores_to_consecutive_addresses_in_both_modes() {
    for warp_mode in [true, false] {
        let p = warp_program("warp_path.ptx", warp_mode);
        let k = p.kernel("vector_stores").expect("kernel");
        let mut a = vec![7u32; 80 * 4];
        let mut b = vec![7u64; 80 * 2];
        launch(exec(), k, [1, 1, 1], [80, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut a)), Arg::Buf(as_bytes(&mut b))])
            .expect("params")
            .expect("launch");
        for t in 0..80u32 {
            let i = t as usize;
            assert_eq!(&a[i * 4..i * 4 + 4], &[t, t + 1000, t + 2000, t + 3000], "thread {t}, warp mode {warp_mode}");
            let want = if t % 3 != 0 { [u64::from(t), u64::from(t) << 32] } else { [7, 7] };
            assert_eq!(&b[i * 2..i * 2 + 2], &want, "thread {t}, warp mode {warp_mode}");
        }
    }
}

// ---- lane-affine addresses (ptx/affine.ptx) ----

fn affine_input(n: u32) -> Vec<u32> {
    (0..n).map(|i| i * 7 + 1).collect()
}

#[test]
fn addresses_rewritten_by_some_lanes_are_looked_at_again_in_both_modes() {
    let mut input = affine_input(264);
    for warp_mode in [true, false] {
        let p = warp_program("affine.ptx", warp_mode);
        let mut out = vec![0u32; 128];
        let k = p.kernel("masked_rewrites").expect("kernel");
        launch(exec(), k, [1, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for t in 0..64u32 {
            let guarded = t + if t % 2 == 1 { 64 } else { 0 };
            let branched = t + if t % 2 == 0 { 128 } else { 0 };
            assert_eq!(out[t as usize], input[guarded as usize], "guarded write, thread {t}, warp mode {warp_mode}");
            assert_eq!(out[64 + t as usize], input[branched as usize], "branch, thread {t}, warp mode {warp_mode}");
        }
        // Lane 0 or lane 16 left before the others moved on: it no longer
        // gives the base of its half warp (in a block of one dimension and
        // in one of rows of 16).
        for (leaver, block) in [(0u32, [64, 1, 1]), (16, [64, 1, 1]), (0, [16, 4, 1]), (16, [16, 4, 1])] {
            let mut out = vec![u32::MAX; 64];
            let k = p.kernel("one_lane_left").expect("kernel");
            launch(exec(), k, [1, 1, 1], block, 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out)), Arg::U32(leaver)])
                .expect("params")
                .expect("launch");
            for t in 0..64usize {
                let want = if t as u32 % 32 == leaver { u32::MAX } else { input[t + 64] };
                assert_eq!(out[t], want, "thread {t}, lane {leaver} left, block {block:?}, warp mode {warp_mode}");
            }
        }
        // Three rounds of barriers: the register stays unknown across each.
        let mut out = vec![0u32; 64];
        let k = p.kernel("rewrites_across_barriers").expect("kernel");
        launch(exec(), k, [2, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for t in 0..64u32 {
            let want: u32 = (0..3).map(|j| input[(t + if t % 2 == 1 { 64 * (j + 1) } else { 0 } + j) as usize]).sum();
            assert_eq!(out[t as usize], want, "thread {t}, warp mode {warp_mode}");
        }
    }
}

#[test]
fn converged_grid_stride_loops_never_look_at_their_lanes() {
    // With the classification behind the affine bits trapping, a launch
    // that completes took the affine path at every load through the loop
    // index and the thread index. Blocks of whole warps, a last warp of 8
    // lanes (no upper half), of 16, of 24 (part of the upper half) and rows
    // of 16; n a multiple of the grid's threads, so lanes leave together.
    let programs = [(strict_affine_program("affine.ptx"), "strict warp mode"), (warp_program("affine.ptx", false), "thread mode")];
    for (p, mode) in &programs {
        let k = p.kernel("grid_stride_counts").expect("kernel");
        for block in [[64u32, 1, 1], [40, 1, 1], [48, 1, 1], [56, 1, 1], [16, 4, 1]] {
            let grid = 3u32;
            let n = grid * block[0] * block[1] * 37;
            let mut data: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(2654435761) >> 7) as u8 % 32).collect();
            let mut bins = vec![0u32; 32];
            launch(exec(), k, [grid, 1, 1], block, 0, &mut [Arg::U32(n), Arg::Buf(&mut data), Arg::Buf(as_bytes(&mut bins))])
                .expect("params")
                .unwrap_or_else(|e| panic!("block {block:?}, {mode}: {e:?}"));
            let mut want = vec![0u32; 32];
            data.iter().for_each(|&v| want[v as usize] += 1);
            assert_eq!(bins, want, "block {block:?}, {mode}");
        }
    }
}

#[test]
fn loop_bodies_lowered_twice_pick_the_version_their_registers_allow() {
    // Compiled strict, the general version (and any lane comparison)
    // traps: the launch whose registers hold their affine bits completes
    // only through the affine version, the first register assumed and the
    // second, which the loop rewrites, known per access (a guard false in
    // every lane keeps its bit). Moved addresses need the general version
    // or a lane comparison: compiled as usual, in both modes.
    let mut input = affine_input(256 + 128 + 64 + 2);
    let strict = strict_affine_program("affine.ptx");
    let all = [(false, false), (true, false), (false, true), (true, true)];
    let programs = [(&strict, &all[..1]), (&warp_program("affine.ptx", true), &all[..]), (&warp_program("affine.ptx", false), &all[..])];
    for (i, (p, cases)) in programs.into_iter().enumerate() {
        let k = p.kernel("region_sums").expect("kernel");
        for &(moved, shifted) in cases {
            let mut out = vec![0u32; 64];
            launch(
                exec(),
                k,
                [1, 1, 1],
                [64, 1, 1],
                0,
                &mut [
                    Arg::Buf(as_bytes(&mut input)),
                    Arg::Buf(as_bytes(&mut out)),
                    Arg::U32(u32::from(moved)),
                    Arg::U32(u32::from(shifted)),
                ],
            )
            .expect("params")
            .unwrap_or_else(|e| panic!("program {i}, moved {moved}, shifted {shifted}: {e:?}"));
            for t in 0..64usize {
                let a = t + if moved && t % 2 == 1 { 64 } else { 0 };
                let c = a + usize::from(shifted && t % 2 == 1);
                let want = 3 * (input[a] + input[a + 128] + input[c] + input[c + 1]);
                assert_eq!(out[t], want, "thread {t}, program {i}, moved {moved}, shifted {shifted}");
            }
        }
    }
}

#[test]
fn thread_ids_of_warps_that_span_two_rows_in_both_modes() {
    let mut input = affine_input(128);
    for warp_mode in [true, false] {
        let p = warp_program("affine.ptx", warp_mode);
        let k = p.kernel("rows_of_48").expect("kernel");
        let mut out = vec![0u32; 96];
        launch(exec(), k, [1, 1, 1], [48, 2, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for y in 0..2usize {
            for x in 0..48usize {
                assert_eq!(out[y * 48 + x], input[x] + input[100 + y], "thread ({x}, {y}), warp mode {warp_mode}");
            }
        }
    }
}

/// Address space nothing backs until it is touched (`MAP_NORESERVE`: no
/// machine needs 4 GiB of memory for a test that touches two pages).
struct Reserved {
    p: *mut u8,
    len: usize,
}

impl Reserved {
    fn new(len: usize) -> Reserved {
        // SAFETY: a fresh anonymous private mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        assert!(p != libc::MAP_FAILED, "{len} bytes of address space");
        Reserved { p: p.cast(), len }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, readable and writable, ours.
        unsafe { std::slice::from_raw_parts_mut(self.p, self.len) }
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe { libc::munmap(self.p.cast(), self.len) };
    }
}

#[test]
fn indices_that_wrap_between_lanes_are_widened_lane_by_lane_in_both_modes() {
    // 4 GiB of address space (touched in two places only): lanes 0-15 read
    // past 2^32, lanes 16-31 near the start.
    const FAR: usize = 1 << 32;
    let mut buf = Reserved::new(FAR + 4096);
    {
        let bytes = buf.as_mut_slice();
        for k in 0..16 {
            bytes[16 + k] = 17 + k as u8;
            bytes[FAR + k] = 100 + k as u8;
        }
    }
    let want: Vec<u32> = (0..32u32).map(|k| if k < 16 { 100 + k } else { k + 1 }).collect();
    let mut rows = Reserved::new(FAR + 4096);
    let half = 1usize << 31;
    {
        let bytes = rows.as_mut_slice();
        for x in 0..16 {
            bytes[half + x] = 1 + x as u8;
            bytes[x] = 50 + x as u8;
            bytes[FAR - 8 + x] = 150 + x as u8;
        }
    }
    // Row 1 of blocks of 16 x 2: its indices wrap inside the upper half warp.
    let rows_want: Vec<u32> = (0..32u32)
        .map(|t| {
            let (x, y) = (t % 16, t / 16);
            match (y, x) {
                (0, x) => 1 + x,
                (_, x) if x < 8 => 150 + x,
                (_, x) => 50 + x - 8,
            }
        })
        .collect();
    for warp_mode in [true, false] {
        let p = warp_program("affine.ptx", warp_mode);
        let k = p.kernel("wrapping_indices").expect("kernel");
        let mut out = vec![0u32; 96];
        launch(exec(), k, [1, 1, 1], [32, 1, 1], 0, &mut [Arg::Buf(buf.as_mut_slice()), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for (read, what) in ["signed", "unsigned", "mul.wide"].iter().enumerate() {
            assert_eq!(&out[read * 32..read * 32 + 32], &want[..], "{what} widening, warp mode {warp_mode}");
        }
        let k = p.kernel("wrapping_rows").expect("kernel");
        let mut out = vec![0u32; 32];
        let base = rows.as_mut_slice()[half..].as_mut_ptr() as u64;
        launch(exec(), k, [1, 1, 1], [16, 2, 1], 0, &mut [Arg::U64(base), Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        assert_eq!(out, rows_want, "rows of 16, warp mode {warp_mode}");
    }
}

#[test]
fn loops_that_lanes_leave_at_their_own_iteration_in_both_modes() {
    for warp_mode in [true, false] {
        let p = warp_program("warp_path.ptx", warp_mode);
        let k = p.kernel("loops_left_lane_by_lane").expect("kernel");
        let mut out = vec![0u32; 128];
        launch(exec(), k, [1, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        for t in 0..64u32 {
            let one: u32 = (0..t % 7 + 1).sum();
            let n = t % 5 + 2;
            let three: u32 = (0..n).sum::<u32>() + if t % 2 == 1 { 100 * n } else { 0 };
            assert_eq!(out[t as usize], one, "one-block loop, thread {t}, warp mode {warp_mode}");
            assert_eq!(out[64 + t as usize], three, "three-block loop, thread {t}, warp mode {warp_mode}");
        }
    }
}

/// `len` bytes that end where mapped memory ends: the page after them is
/// inaccessible, so an access past their end faults.
struct AtPageEnd {
    map: *mut u8,
    /// Bytes mapped before the inaccessible page.
    data: usize,
    page: usize,
    len: usize,
}

impl AtPageEnd {
    fn new(len: usize) -> AtPageEnd {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let data = len.div_ceil(page).max(1) * page;
        // SAFETY: a fresh anonymous private mapping whose last page is made
        // inaccessible.
        let map = unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                data + page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert!(p != libc::MAP_FAILED, "{} bytes of memory", data + page);
            assert_eq!(libc::mprotect(p.cast::<u8>().add(data).cast(), page, libc::PROT_NONE), 0, "guard page");
            p.cast::<u8>()
        };
        AtPageEnd { map, data, page, len }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the `len` bytes before the inaccessible page are mapped
        // and ours.
        unsafe { std::slice::from_raw_parts_mut(self.map.add(self.data - self.len), self.len) }
    }

    fn address(&mut self) -> u64 {
        self.as_mut_slice().as_mut_ptr() as u64
    }

    fn words(&mut self) -> Vec<u32> {
        self.as_mut_slice().chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
}

impl Drop for AtPageEnd {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe { libc::munmap(self.map.cast(), self.data + self.page) };
    }
}

#[test]
fn contiguous_accesses_of_partial_warps_touch_nothing_past_their_last_lane_in_both_modes() {
    // 40 threads' data, each array ending at an inaccessible page: a warp
    // with 8 lanes left (blocks of 64) or half warps (blocks of 16) must
    // neither read nor write past lane 7's element.
    const N: usize = 40;
    const UNTOUCHED: u32 = 0xdead_beef;
    let mut bytes = AtPageEnd::new(N);
    let mut words = AtPageEnd::new(4 * N);
    let mut pairs = AtPageEnd::new(8 * N);
    let mut out = AtPageEnd::new(4 * N);
    let mut quads = AtPageEnd::new(16 * N);
    for (i, b) in bytes.as_mut_slice().iter_mut().enumerate() {
        *b = (3 * i + 1) as u8;
    }
    let word = |i: usize| 1000 + 7 * i as u32;
    let pair = |i: usize| (11 * i as u32, 13 * i as u32 + 5);
    for (i, c) in words.as_mut_slice().chunks_exact_mut(4).enumerate() {
        c.copy_from_slice(&word(i).to_le_bytes());
    }
    for (i, c) in pairs.as_mut_slice().chunks_exact_mut(8).enumerate() {
        let (x, y) = pair(i);
        c[..4].copy_from_slice(&x.to_le_bytes());
        c[4..].copy_from_slice(&y.to_le_bytes());
    }
    let want: Vec<u32> = (0..N).map(|i| (3 * i as u32 + 1) + 2 * word(i) + pair(i).0 + pair(i).1).collect();
    let want_quads: Vec<u32> = want.iter().flat_map(|&s| [s, s + 1, s + 2, s + 3]).collect();
    for warp_mode in [true, false] {
        let p = warp_program("page_ends.ptx", warp_mode);
        let k = p.kernel("page_end_tails").expect("kernel");
        for (grid, block) in [(1u32, 64u32), (3, 16), (2, 32)] {
            out.as_mut_slice().fill(0);
            quads.as_mut_slice().fill(0);
            let mut spill = vec![UNTOUCHED; 64];
            let args = [bytes.address(), words.address(), pairs.address(), out.address()];
            let quads_at = quads.address();
            launch(
                exec(),
                k,
                [grid, 1, 1],
                [block, 1, 1],
                0,
                &mut [
                    Arg::U32(N as u32),
                    Arg::U64(args[0]),
                    Arg::U64(args[1]),
                    Arg::U64(args[2]),
                    Arg::U64(args[3]),
                    Arg::Buf(as_bytes(&mut spill)),
                    Arg::U64(quads_at),
                ],
            )
            .expect("params")
            .unwrap_or_else(|e| panic!("{grid} blocks of {block}, warp mode {warp_mode}: {e:?}"));
            let what = format!("{grid} blocks of {block}, warp mode {warp_mode}");
            assert_eq!(out.words(), want, "{what}");
            assert_eq!(&spill[..N], &want[..], "{what}");
            assert!(spill[N..].iter().all(|&v| v == UNTOUCHED), "stores past the last lane: {:x?}, {what}", &spill[N..]);
            assert_eq!(quads.words(), want_quads, "{what}");
        }
    }
}

/// Bytes of every value, with runs of one value (a warp's lanes hitting one
/// bin) every 1000 bytes.
fn histogram_input(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| if (i / 64) % 16 == 3 { 7 } else { ((i + seed).wrapping_mul(2_654_435_761) >> 13) as u8 }).collect()
}

fn histogram_of(values: impl Iterator<Item = u8>) -> Vec<u32> {
    let mut bins = vec![0u32; 256];
    for v in values {
        bins[v as usize] += 1;
    }
    bins
}

#[test]
fn shared_histograms_of_loaded_bytes_in_both_modes() {
    // Whole warps reading consecutive bytes (their atomics load the bytes
    // lane by lane), partial warps (48-thread blocks, the loop's last
    // round), warps whose bytes are 3 apart and warps whose bytes are
    // swapped in pairs (element i ^ 1; N is even) all count every byte.
    const N: usize = 5000;
    for warp_mode in [true, false] {
        let p = warp_program("shared_bins.ptx", warp_mode);
        for (kernel, step) in [("bytes", 1usize), ("strided_bytes", 3), ("swapped_bytes", 1)] {
            let k = p.kernel(kernel).expect("kernel");
            let mut data = histogram_input(N * step, step);
            let want = histogram_of(data.iter().step_by(step).copied());
            for (grid, block) in [(4u32, 256u32), (3, 96), (2, 48), (1, 1024)] {
                let mut out = vec![0u32; 256];
                launch(
                    exec(),
                    k,
                    [grid, 1, 1],
                    [block, 1, 1],
                    0,
                    &mut [Arg::U32(N as u32), Arg::Buf(&mut data), Arg::Buf(as_bytes(&mut out))],
                )
                .expect("params")
                .unwrap_or_else(|e| panic!("{kernel}, {grid} x {block}, warp mode {warp_mode}: {e:?}"));
                assert_eq!(out, want, "{kernel}, {grid} blocks of {block}, warp mode {warp_mode}");
            }
            // Blocks of 16 x 2: both rows count the same elements (each half
            // warp reads the bytes its row's first lane starts at) and both
            // add the block's bins to out.
            let mut out = vec![0u32; 256];
            launch(exec(), k, [2, 1, 1], [16, 2, 1], 0, &mut [Arg::U32(N as u32), Arg::Buf(&mut data), Arg::Buf(as_bytes(&mut out))])
                .expect("params")
                .unwrap_or_else(|e| panic!("{kernel}, rows of 16, warp mode {warp_mode}: {e:?}"));
            let four: Vec<u32> = want.iter().map(|&c| 4 * c).collect();
            assert_eq!(out, four, "{kernel}, 2 blocks of 16 x 2, warp mode {warp_mode}");
        }
    }
}

#[test]
fn shared_histograms_count_the_values_their_loads_read_in_both_modes() {
    // Masked words; bytes overwritten between their load and the atomic;
    // bytes read again after the atomic.
    const N: usize = 3000;
    let words: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_246_822_519).rotate_left(7)).collect();
    let kept = histogram_input(N, 11);
    let original = histogram_input(N, 5);
    for warp_mode in [true, false] {
        let p = warp_program("shared_bins.ptx", warp_mode);
        let k = p.kernel("words_and_stores").expect("kernel");
        for (grid, block) in [(3u32, 256u32), (2, 48)] {
            let (mut w, mut stored, mut kept_in) = (words.clone(), original.clone(), kept.clone());
            let mut out = vec![0u32; 3 * 256];
            let mut out2 = vec![0u32; N];
            launch(
                exec(),
                k,
                [grid, 1, 1],
                [block, 1, 1],
                0,
                &mut [
                    Arg::U32(N as u32),
                    Arg::Buf(as_bytes(&mut w)),
                    Arg::Buf(as_bytes(&mut out)),
                    Arg::Buf(&mut stored),
                    Arg::Buf(&mut kept_in),
                    Arg::Buf(as_bytes(&mut out2)),
                ],
            )
            .expect("params")
            .unwrap_or_else(|e| panic!("{grid} x {block}, warp mode {warp_mode}: {e:?}"));
            let what = format!("{grid} blocks of {block}, warp mode {warp_mode}");
            let column = |j: usize| out.iter().skip(j).step_by(3).copied().collect::<Vec<u32>>();
            assert_eq!(column(0), histogram_of(words.iter().map(|&x| x as u8)), "masked words, {what}");
            assert_eq!(column(1), histogram_of(original.iter().copied()), "bytes stored over, {what}");
            assert!(stored.iter().all(|&b| b == 200), "{what}");
            assert_eq!(column(2), histogram_of(kept.iter().copied()), "bytes read again, {what}");
            let sums: Vec<u32> = words.iter().zip(&kept).map(|(&x, &b)| x.wrapping_add(u32::from(b))).collect();
            assert_eq!(out2, sums, "{what}");
        }
    }
}

#[test]
fn shared_float_and_max_atomics_on_loaded_bytes_in_both_modes() {
    // The lanes' own operands (max with i + 1) and float additions go
    // through the atomics that load their bytes themselves too.
    const N: usize = 4000;
    let mut data = histogram_input(N, 3);
    let counts = histogram_of(data.iter().copied());
    let mut last = vec![0u32; 256];
    for (i, &b) in data.iter().enumerate() {
        last[b as usize] = last[b as usize].max(i as u32 + 1);
    }
    for warp_mode in [true, false] {
        let p = warp_program("shared_bins.ptx", warp_mode);
        let k = p.kernel("float_and_max_bytes").expect("kernel");
        for (grid, block) in [(4u32, 256u32), (2, 48)] {
            let mut out = vec![0u32; 512];
            launch(exec(), k, [grid, 1, 1], [block, 1, 1], 0, &mut [Arg::U32(N as u32), Arg::Buf(&mut data), Arg::Buf(as_bytes(&mut out))])
                .expect("params")
                .unwrap_or_else(|e| panic!("{grid} x {block}, warp mode {warp_mode}: {e:?}"));
            let what = format!("{grid} blocks of {block}, warp mode {warp_mode}");
            let floats: Vec<f32> = out.iter().step_by(2).map(|&x| f32::from_bits(x)).collect();
            let want: Vec<f32> = counts.iter().map(|&c| c as f32).collect();
            assert_eq!(floats, want, "float counts, {what}");
            let maxima: Vec<u32> = out.iter().skip(1).step_by(2).copied().collect();
            assert_eq!(maxima, last, "last index + 1 of each byte, {what}");
        }
    }
}

/// Runs `lane_fields` (ptx/affine.ptx) in one block of shape `block` and
/// checks every thread's word.
fn check_lane_fields(p: &Program, block: [u32; 3], off: u32, neighbour: bool, what: &str) {
    let k = p.kernel("lane_fields").expect("kernel");
    let n = (block[0] * block[1]) as usize;
    let mut input = affine_input(n as u32);
    let mut idx: Vec<u32> = (0..n as u32).map(|g| g % block[0] + off).collect();
    let mut out = vec![0u32; n];
    launch(
        exec(),
        k,
        [1, 1, 1],
        block,
        0,
        &mut [
            Arg::Buf(as_bytes(&mut input)),
            Arg::Buf(as_bytes(&mut idx)),
            Arg::Buf(as_bytes(&mut out)),
            Arg::U32(off),
            Arg::U32(u32::from(neighbour)),
        ],
    )
    .expect("params")
    .unwrap_or_else(|e| panic!("{what}, block {block:?}, offset {off}, neighbour {neighbour}: {e:?}"));
    for g in 0..n {
        let x = g % block[0] as usize;
        let want = input[g + usize::from(neighbour && x + 1 < block[0] as usize)];
        assert_eq!(out[g], want, "thread {g}, {what}, block {block:?}, offset {off}, neighbour {neighbour}");
    }
}

#[test]
fn lane_and_warp_fields_of_the_thread_index_are_affine_where_they_do_not_wrap() {
    // Compiled strict, any access whose lanes are looked at traps: warps
    // of one-dimensional blocks whose fields start at 0, and blocks of
    // half-warp rows whose fields start at 0 or 16 (each half on its own),
    // take the affine path only.
    let strict = strict_affine_program("affine.ptx");
    for block in [[64, 1, 1], [256, 1, 1], [96, 1, 1]] {
        check_lane_fields(&strict, block, 0, false, "strict");
    }
    for off in [0, 16] {
        check_lane_fields(&strict, [16, 4, 1], off, false, "strict");
    }
    // Fields that wrap inside a warp or a half (most offsets), rows of 48
    // (no affine form), a partial last warp, neighbours through the fields
    // of x + 1: compiled as usual, in both modes.
    for (p, what) in [(warp_program("affine.ptx", true), "warp mode"), (warp_program("affine.ptx", false), "thread mode")] {
        for block in [[64, 1, 1], [96, 1, 1], [40, 1, 1], [16, 4, 1], [48, 2, 1]] {
            for off in 0..32 {
                for neighbour in [false, true] {
                    check_lane_fields(&p, block, off, neighbour, what);
                }
            }
        }
    }
}

/// Runs `flipped_pairs` (ptx/affine.ptx) over `blocks` blocks of shape
/// `block` with `j` and checks every element.
fn check_flipped_pairs(p: &Program, blocks: u32, block: [u32; 3], j: u64, what: &str) {
    let k = p.kernel("flipped_pairs").expect("kernel");
    let n = 256usize;
    let mut input = affine_input(n as u32);
    let mut out = vec![0u32; n];
    launch(exec(), k, [blocks, 1, 1], block, 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out)), Arg::U64(j)])
        .expect("params")
        .unwrap_or_else(|e| panic!("{what}, block {block:?}, j {j}: {e:?}"));
    let width = block[0] as usize;
    for i in 0..blocks as usize * width {
        let t = i % width;
        let want = input[i ^ j as usize].wrapping_add(1000u32.wrapping_mul(input[t ^ j as usize]));
        assert_eq!(out[i], want, "element {i}, {what}, block {block:?}, j {j}");
    }
}

#[test]
fn indices_flipped_by_a_uniform_value_stay_affine_where_the_flip_leaves_the_lanes_apart() {
    // Compiled strict, any access whose lanes are looked at traps: flips
    // of whole warps' bits above the lane (j a multiple of 32) in
    // one-dimensional blocks, and of bits above a half warp's in blocks of
    // half-warp rows, take the affine path only.
    let strict = strict_affine_program("affine.ptx");
    for j in [0, 32, 64, 96, 128, 160] {
        check_flipped_pairs(&strict, 4, [64, 1, 1], j, "strict");
    }
    for j in [0, 16, 48, 80] {
        check_flipped_pairs(&strict, 4, [16, 2, 1], j, "strict");
    }
    // Every j below the size (flips inside a warp permute its lanes),
    // partial last warps and rows of 48: compiled as usual, in both modes.
    for (p, what) in [(warp_program("affine.ptx", true), "warp mode"), (warp_program("affine.ptx", false), "thread mode")] {
        for (blocks, block) in [(4, [64, 1, 1]), (2, [128, 1, 1]), (6, [40, 1, 1]), (4, [16, 2, 1]), (4, [48, 1, 1])] {
            for j in 0..64 {
                check_flipped_pairs(&p, blocks, block, j * 3 % 256, what);
            }
        }
    }
}
