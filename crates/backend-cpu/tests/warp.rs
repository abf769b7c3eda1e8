//! Warp collectives on the scheduled path, checked against CUDA's
//! documented intrinsic semantics and the PTX ISA.

mod common;

use backend_cpu::exec::runtime::*;
use backend_cpu::{BlockCtx, LaunchOptions};
use common::*;
use compiler::cpu_abi::{matching, redux, shfl, vote};

const FULL: u32 = u32::MAX;

// ---- shfl -------------------------------------------------------------------

/// (mode, b, c) per case, as CUDA's intrinsics encode them.
fn shfl_cases() -> Vec<[u32; 3]> {
    let mut cases = Vec::new();
    for width in [32u32, 16, 8, 4, 2, 1] {
        let seg = (32 - width) << 8;
        for delta in [0u32, 1, 2, 3, 5, 8, 16, 31] {
            cases.push([shfl::IDX, delta, seg | 0x1f]);
            cases.push([shfl::UP, delta, seg]);
            cases.push([shfl::DOWN, delta, seg | 0x1f]);
            cases.push([shfl::BFLY, delta, seg | 0x1f]);
        }
    }
    // Clamps that are not a segment width (raw PTX).
    for (mode, b, c) in [(shfl::IDX, 20, 7), (shfl::IDX, 6, 7), (shfl::DOWN, 3, 9), (shfl::UP, 3, 0x0805), (shfl::BFLY, 5, 0x0803)] {
        cases.push([mode, b, c]);
    }
    cases
}

/// CUDA Programming Guide semantics of __shfl*_sync for segment widths;
/// PTX pseudo-code written out by hand for the raw clamp cases.
fn expected_source(lane: u32, [mode, b, c]: [u32; 3]) -> (u32, bool) {
    let segmask = (c >> 8) & 31;
    let width = 32 - segmask;
    let clamp_is_width = (mode == shfl::UP && c & 0x1f == 0) || (mode != shfl::UP && c & 0x1f == 0x1f);
    if width.is_power_of_two() && clamp_is_width {
        let start = lane / width * width;
        let b = b & 31;
        return match mode {
            shfl::IDX => (start + b % width, true),
            shfl::UP => {
                if lane - start >= b {
                    (lane - b, true)
                } else {
                    (lane, false)
                }
            }
            shfl::DOWN => {
                if lane - start + b < width {
                    (lane + b, true)
                } else {
                    (lane, false)
                }
            }
            _ => {
                let j = lane ^ b;
                if j < start + width {
                    (j, true)
                } else {
                    (lane, false)
                }
            }
        };
    }
    match (mode, b, c) {
        // idx 20, clamp 7, no segments: lanes above the clamp are out of range.
        (shfl::IDX, 20, 7) => (lane, false),
        (shfl::IDX, 6, 7) => (6, true),
        // down 3 with clamp 9: j = lane + 3 must stay <= 9.
        (shfl::DOWN, 3, 9) => {
            if lane + 3 <= 9 {
                (lane + 3, true)
            } else {
                (lane, false)
            }
        }
        // up 3 with segmask 8, clamp 5: maxLane = (lane & 8) | (5 & !8).
        (shfl::UP, 3, 0x0805) => {
            let max_lane = (lane & 8) | 5;
            if lane as i32 - 3 >= max_lane as i32 {
                (lane - 3, true)
            } else {
                (lane, false)
            }
        }
        // bfly 5 with segmask 8, clamp 3: maxLane = (lane & 8) | 3.
        (shfl::BFLY, 5, 0x0803) => {
            let max_lane = (lane & 8) | 3;
            if lane ^ 5 <= max_lane {
                (lane ^ 5, true)
            } else {
                (lane, false)
            }
        }
        _ => unreachable!(),
    }
}

unsafe extern "C" fn shfl_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let cases = arg(p, 0) as *const [u32; 3];
        let ncases = arg(p, 1) as usize;
        let out = arg(p, 2) as *mut u64;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        for i in 0..ncases {
            let [mode, b, cc] = *cases.add(i);
            let value = t * 1000 + i as u32;
            let r = __anycuda_shfl(c, t, mode, value, b, cc, FULL, 10 + i as u32);
            *out.add(i * cx.nthreads as usize + t as usize) = r;
        }
    }
}

#[test]
fn shfl_all_modes_widths_and_clamps() {
    let (exec, _) = executor();
    let cases = shfl_cases();
    let n = 64usize;
    let mut out = vec![0u64; cases.len() * n];
    let p = params(&[cases.as_ptr() as u64, cases.len() as u64, addr(&mut out)]);
    unsafe { exec.launch(&scheduled(shfl_kernel), [2, 1, 1], [n as u32, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    for (i, &case) in cases.iter().enumerate() {
        for t in 0..n as u32 {
            let lane = t % 32;
            let (source, pred) = expected_source(lane, case);
            let want = u64::from((t - lane + source) * 1000 + i as u32) | (u64::from(pred) << 32);
            assert_eq!(out[i * n + t as usize], want, "case {case:?} thread {t}");
        }
    }
}

unsafe extern "C" fn shfl_halves_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u64;
        let t = linear(ctx(c), x, y, z);
        // Each half of the warp shuffles among itself, at different
        // instructions; lane 3 of the low half reads lane 20, which is not
        // in its group, and gets its own value.
        let r = if t < 16 {
            let src = if t == 3 { 20 } else { 15 - t };
            __anycuda_shfl(c, t, shfl::IDX, t + 100, src, 0x1f, 0xffff, 1)
        } else {
            __anycuda_shfl(c, t, shfl::IDX, t + 100, 47 - t, 0x1f, 0xffff_0000, 2)
        };
        *out.add(t as usize) = r & 0xffff_ffff;
    }
}

#[test]
fn shfl_in_divergent_halves() {
    let (exec, _) = executor();
    let mut out = vec![0u64; 32];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(shfl_halves_kernel), [1, 1, 1], [32, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    for t in 0..32u64 {
        let want = match t {
            3 => 103,
            0..16 => 115 - t,
            _ => 147 - t,
        };
        assert_eq!(out[t as usize], want, "lane {t}");
    }
}

// ---- vote -------------------------------------------------------------------

fn pred_of(t: u32, case: u32) -> bool {
    match case {
        0 => t.is_multiple_of(3),
        1 => true,
        2 => false,
        3 => t < 20,
        _ => t.wrapping_mul(2654435761u32) >> 31 == 1,
    }
}

/// Lanes vote among groups: the whole warp, halves, or groups of 8.
fn mask_of(lane: u32, grouping: u32) -> u32 {
    match grouping {
        0 => FULL,
        1 => 0xffff << (lane / 16 * 16),
        _ => 0xff << (lane / 8 * 8),
    }
}

unsafe extern "C" fn vote_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let cx = ctx(c);
        let t = linear(cx, x, y, z);
        let lane = t % 32;
        let mut k = 0usize;
        for grouping in 0..3 {
            for case in 0..5 {
                for mode in [vote::ALL, vote::ANY, vote::UNI, vote::BALLOT] {
                    let r = __anycuda_vote(c, t, mode, pred_of(t, case) as u32, mask_of(lane, grouping), k as u32);
                    *out.add(k * cx.nthreads as usize + t as usize) = r;
                    k += 1;
                }
            }
        }
    }
}

#[test]
fn vote_all_any_uni_ballot_with_partial_masks() {
    let (exec, _) = executor();
    // 48 threads: the second warp has only 16 lanes.
    let n = 48usize;
    let mut out = vec![0u32; 60 * n];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(vote_kernel), [1, 1, 1], [n as u32, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    let mut k = 0;
    for grouping in 0..3 {
        for case in 0..5 {
            for mode in [vote::ALL, vote::ANY, vote::UNI, vote::BALLOT] {
                for t in 0..n as u32 {
                    let lane = t % 32;
                    let base = t - lane;
                    let existing = if base == 32 { 0xffff } else { FULL };
                    let members = mask_of(lane, grouping) & existing;
                    let ballot = (0..32).filter(|&l| members & (1 << l) != 0 && pred_of(base + l, case)).fold(0u32, |a, l| a | (1 << l));
                    let want = match mode {
                        vote::ALL => (ballot == members) as u32,
                        vote::ANY => (ballot != 0) as u32,
                        vote::UNI => (ballot == 0 || ballot == members) as u32,
                        _ => ballot,
                    };
                    assert_eq!(out[k * n + t as usize], want, "grouping {grouping} case {case} mode {mode} thread {t}");
                }
                k += 1;
            }
        }
    }
}

// ---- match ------------------------------------------------------------------

unsafe extern "C" fn match_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u64;
        let t = linear(ctx(c), x, y, z);
        let v32 = u64::from(t % 4);
        let v64 = u64::from(t / 8) << 40 | 7;
        *out.add(t as usize) = __anycuda_match(c, t, matching::ANY, v32, FULL, 1);
        *out.add(32 + t as usize) = __anycuda_match(c, t, matching::ANY, v64, FULL, 2);
        *out.add(64 + t as usize) = __anycuda_match(c, t, matching::ALL, v64, 0xff << (t / 8 * 8), 3);
        *out.add(96 + t as usize) = __anycuda_match(c, t, matching::ALL, v32, FULL, 4);
        *out.add(128 + t as usize) = __anycuda_match(c, t, matching::ANY, v64, 0xffff << (t / 16 * 16), 5);
    }
}

#[test]
fn match_any_and_all_on_32_and_64_bit_values() {
    let (exec, _) = executor();
    let mut out = vec![0u64; 160];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(match_kernel), [1, 1, 1], [32, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    for t in 0..32usize {
        assert_eq!(out[t], 0x1111_1111u64 << (t % 4), "any32 lane {t}");
        assert_eq!(out[32 + t], 0xffu64 << (t / 8 * 8), "any64 lane {t}");
        assert_eq!(out[64 + t], (0xffu64 << (t / 8 * 8)) | 1 << 32, "all64 lane {t}");
        assert_eq!(out[96 + t], 0, "all32 lane {t}");
        assert_eq!(out[128 + t], 0xffu64 << (t / 8 * 8), "any64 in halves lane {t}");
    }
}

// ---- redux ------------------------------------------------------------------

unsafe extern "C" fn redux_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        let value = (t as i32 * 7 - 50) as u32 ^ (t << 20);
        for op in 0..8 {
            let mask = if op % 2 == 0 { FULL } else { 0xffff << (t / 16 * 16) };
            *out.add(op as usize * 32 + t as usize) = __anycuda_redux(c, t, op, value, mask, op);
        }
    }
}

#[test]
fn redux_all_operations() {
    let (exec, _) = executor();
    let mut out = vec![0u32; 8 * 32];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(redux_kernel), [1, 1, 1], [32, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    let value = |t: u32| (t as i32 * 7 - 50) as u32 ^ (t << 20);
    for op in 0..8u32 {
        for t in 0..32u32 {
            let lanes: Vec<u32> = if op % 2 == 0 { (0..32).collect() } else { (t / 16 * 16..t / 16 * 16 + 16).collect() };
            let vals = lanes.iter().map(|&l| value(l));
            let want = match op {
                redux::ADD => vals.fold(0u32, |a, v| a.wrapping_add(v)),
                redux::MIN_U32 => vals.min().unwrap(),
                redux::MAX_U32 => vals.max().unwrap(),
                redux::MIN_S32 => vals.map(|v| v as i32).min().unwrap() as u32,
                redux::MAX_S32 => vals.map(|v| v as i32).max().unwrap() as u32,
                redux::AND => vals.fold(FULL, |a, v| a & v),
                redux::OR => vals.fold(0, |a, v| a | v),
                _ => vals.fold(0, |a, v| a ^ v),
            };
            assert_eq!(out[(op * 32 + t) as usize], want, "op {op} lane {t}");
        }
    }
}

// ---- activemask -------------------------------------------------------------

unsafe extern "C" fn activemask_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let out = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        let lane = t % 32;
        let diverged = if lane < 10 { __anycuda_activemask(c, t, 1) } else { __anycuda_activemask(c, t, 2) };
        // Reconverged.
        let converged = __anycuda_activemask(c, t, 3);
        // Lanes 0..4 leave; the rest ask again.
        if lane < 5 {
            *out.add(t as usize) = diverged;
            *out.add(64 + t as usize) = converged;
            return;
        }
        let after_exit = __anycuda_activemask(c, t, 4);
        *out.add(t as usize) = diverged;
        *out.add(64 + t as usize) = converged;
        *out.add(128 + t as usize) = after_exit;
    }
}

#[test]
fn activemask_under_divergence_and_exit() {
    let (exec, _) = executor();
    let mut out = vec![0u32; 192];
    let p = params(&[addr(&mut out)]);
    unsafe { exec.launch(&scheduled(activemask_kernel), [1, 1, 1], [64, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    for t in 0..64usize {
        let lane = t % 32;
        assert_eq!(out[t], if lane < 10 { 0x3ff } else { !0x3ff }, "diverged lane {t}");
        assert_eq!(out[64 + t], FULL, "converged lane {t}");
        if lane >= 5 {
            assert_eq!(out[128 + t], !0x1f, "after exit lane {t}");
        }
    }
}

unsafe extern "C" fn warp_sync_kernel(p: *const u8, c: *mut BlockCtx, x: u32, y: u32, z: u32) {
    unsafe {
        let shared = ctx(c).shared.cast::<u32>();
        let out = arg(p, 0) as *mut u32;
        let t = linear(ctx(c), x, y, z);
        for round in 0..10u32 {
            shared.add(t as usize).write_volatile(round * 100 + t);
            __anycuda_warp_sync(c, t, FULL, 1);
            let other = shared.add((t ^ 1) as usize).read_volatile();
            if other != round * 100 + (t ^ 1) {
                *out.add(t as usize) += 1;
            }
            __anycuda_warp_sync(c, t, FULL, 2);
        }
    }
}

#[test]
fn warp_sync_orders_shared_memory() {
    let (exec, _) = executor();
    let mut out = vec![0u32; 32];
    let p = params(&[addr(&mut out)]);
    let mut kernel = scheduled(warp_sync_kernel);
    kernel.info.static_shared_bytes = 128;
    kernel.info.dynamic_shared_offset = 128;
    unsafe { exec.launch(&kernel, [3, 1, 1], [32, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    assert!(out.iter().all(|&e| e == 0), "{out:?}");
}
