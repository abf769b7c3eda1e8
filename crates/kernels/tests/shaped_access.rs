//! Warp-mode loads and stores through per-lane addresses whose shape only
//! the run time knows (an index loaded from memory): consecutive lanes,
//! consecutive half warps apart, half warps of one address, one address
//! for the whole warp, and scattered lanes; whole warps, a guard that
//! leaves lanes out and guards that leave a whole half warp out; 8-, 16- and 32-bit elements and two- and
//! four-component vectors; and accesses through affine addresses (the
//! thread index), whole and guarded. The optimised tier chooses each
//! access's path inline, the fast tier in a shared helper per type (told
//! the shape when the address is affine); both must give what the model
//! written here gives.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry shaped(.param .u64 pidx, .param .u64 pperm, .param .u64 pin, .param .u64 pout, .param .u64 pregs)
{
.reg .b32 %r<24>;
.reg .b64 %rd<24>;
.reg .pred %p<2>;
.reg .b16 %h<2>;
ld.param.u64 %rd0, [pidx];
ld.param.u64 %rd1, [pperm];
ld.param.u64 %rd2, [pin];
ld.param.u64 %rd3, [pout];
ld.param.u64 %rd4, [pregs];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd5, %r0, 4;
add.u64 %rd6, %rd0, %rd5;
ld.global.u32 %r1, [%rd6];
add.u64 %rd7, %rd1, %rd5;
ld.global.u32 %r2, [%rd7];
rem.u32 %r3, %r0, 3;
setp.ne.u32 %p0, %r3, 0;
mul.wide.u32 %rd8, %r1, 4;
add.u64 %rd9, %rd2, %rd8;
ld.global.u32 %r4, [%rd9];
mov.u32 %r5, 99;
@%p0 ld.global.u32 %r5, [%rd9+256];
mul.wide.u32 %rd10, %r1, 8;
add.u64 %rd11, %rd2, %rd10;
ld.global.v2.u32 {%r6, %r7}, [%rd11];
mul.wide.u32 %rd12, %r1, 16;
add.u64 %rd13, %rd2, %rd12;
ld.global.v4.u32 {%r8, %r9, %r10, %r11}, [%rd13];
mul.wide.u32 %rd14, %r1, 2;
add.u64 %rd15, %rd2, %rd14;
ld.global.u16 %h0, [%rd15];
cvt.u32.u16 %r12, %h0;
cvt.u64.u32 %rd16, %r1;
add.u64 %rd17, %rd2, %rd16;
ld.global.u8 %r13, [%rd17];
mul.wide.u32 %rd18, %r2, 4;
add.u64 %rd19, %rd3, %rd18;
add.u32 %r14, %r4, 1;
st.global.u32 [%rd19], %r14;
@%p0 st.global.u32 [%rd19+512], %r5;
mul.wide.u32 %rd20, %r2, 8;
add.u64 %rd21, %rd3, %rd20;
st.global.v2.u32 [%rd21+1024], {%r7, %r6};
mul.wide.u32 %rd22, %r2, 2;
add.u64 %rd23, %rd3, %rd22;
cvt.u16.u32 %h1, %r4;
st.global.u16 [%rd23+2048], %h1;
mul.wide.u32 %rd20, %r2, 16;
add.u64 %rd21, %rd3, %rd20;
st.global.v4.u32 [%rd21+4096], {%r11, %r10, %r9, %r8};
mul.wide.u32 %rd22, %r0, 56;
add.u64 %rd23, %rd4, %rd22;
st.global.v4.u32 [%rd23], {%r4, %r5, %r6, %r7};
st.global.v4.u32 [%rd23+16], {%r8, %r9, %r10, %r11};
st.global.v2.u32 [%rd23+32], {%r12, %r13};
mov.u32 %r15, 5;
@%p0 ld.global.u32 %r15, [%rd7];
st.global.v2.u32 [%rd23+40], {%r15, %r1};
add.u64 %rd20, %rd3, %rd5;
@%p0 st.global.u32 [%rd20+5120], %r4;
and.b32 %r16, %r0, 16;
setp.ne.u32 %p1, %r16, 0;
mov.u32 %r17, 77;
@%p1 ld.global.u32 %r17, [%rd9+128];
mov.u32 %r18, 88;
@!%p1 ld.global.u32 %r18, [%rd9+384];
st.global.v2.u32 [%rd23+48], {%r17, %r18};
ret;
}
"#;

const THREADS: usize = 64;
const REGS: usize = 14;
/// Words of output: the stores reach byte 5120 + 64 x 4.
const OUT_WORDS: usize = (5120 + THREADS * 4) / 4;

fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// What each thread's registers hold and what memory holds after a block of
/// 64 threads ran the kernel with load indices `idx` and store indices
/// `perm` (a permutation: no two lanes store to one place).
fn model(input: &[u8], idx: &[u32], perm: &[u32]) -> (Vec<u32>, Vec<u8>) {
    let mut out = vec![0xabu8; OUT_WORDS * 4];
    let mut regs = Vec::new();
    for t in 0..THREADS {
        let (j, k) = (idx[t] as usize, perm[t] as usize);
        let guard = t % 3 != 0;
        let r4 = word(input, j * 4);
        let r5 = if guard { word(input, j * 4 + 256) } else { 99 };
        let (r6, r7) = (word(input, j * 8), word(input, j * 8 + 4));
        let v4: Vec<u32> = (0..4).map(|c| word(input, j * 16 + c * 4)).collect();
        let r12 = u32::from(u16::from_le_bytes([input[j * 2], input[j * 2 + 1]]));
        let r13 = u32::from(input[j]);
        let mut put = |at: usize, v: u32| out[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(k * 4, r4.wrapping_add(1));
        if guard {
            put(k * 4 + 512, r5);
        }
        put(k * 8 + 1024, r7);
        put(k * 8 + 1028, r6);
        for c in 0..4 {
            put(k * 16 + 4096 + c * 4, v4[3 - c]);
        }
        if guard {
            put(t * 4 + 5120, r4);
        }
        out[k * 2 + 2048..k * 2 + 2050].copy_from_slice(&(r4 as u16).to_le_bytes());
        let r15 = if guard { perm[t] } else { 5 };
        // Loads by one half warp only (lanes 16-31, then lanes 0-15).
        let high = t & 16 != 0;
        let r17 = if high { word(input, j * 4 + 128) } else { 77 };
        let r18 = if high { 88 } else { word(input, j * 4 + 384) };
        regs.extend([r4, r5, r6, r7, v4[0], v4[1], v4[2], v4[3], r12, r13, r15, idx[t], r17, r18]);
    }
    (regs, out)
}

#[test]
fn loads_and_stores_of_every_run_time_shape_match_the_model_in_both_tiers() {
    let exec = Executor::global();
    let input: Vec<u8> = (0..2048u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let identity: Vec<u32> = (0..THREADS as u32).collect();
    // Each half warp consecutive, lane 16's half before lane 0's.
    let halves_swapped: Vec<u32> = (0..THREADS as u32).map(|t| (t & !31) | ((t + 16) & 31)).collect();
    let scattered: Vec<u32> = (0..THREADS as u32).map(|t| t ^ 5).collect();
    let halves_uniform: Vec<u32> = (0..THREADS as u32).map(|t| (t / 16) * 3).collect();
    let one_address = vec![7u32; THREADS];
    let cases = [
        ("identity", &identity, &identity),
        ("halves swapped", &halves_swapped, &halves_swapped),
        ("scattered", &scattered, &scattered),
        ("halves uniform", &halves_uniform, &scattered),
        ("one address", &one_address, &halves_swapped),
    ];
    for tier in [Tier::Fast, Tier::Optimized] {
        let p = Program::from_source_with(KERNEL, &Options { warp: WarpMode::Always, tier, strict_affine: false, memcheck: false })
            .unwrap_or_else(|e| panic!("compiles ({tier:?}): {e}"));
        let k = p.kernel("shaped").expect("kernel `shaped`");
        assert_eq!(k.info.lanes, 32, "{tier:?}");
        for (name, idx, perm) in cases {
            let (regs_expected, out_expected) = model(&input, idx, perm);
            let (mut idx, mut perm, mut inp) = (idx.clone(), perm.clone(), input.clone());
            let mut out = vec![0xabu8; OUT_WORDS * 4];
            let mut regs = vec![0u32; THREADS * REGS];
            launch(
                exec,
                k,
                [1, 1, 1],
                [THREADS as u32, 1, 1],
                0,
                &mut [
                    Arg::Buf(as_bytes(&mut idx)),
                    Arg::Buf(as_bytes(&mut perm)),
                    Arg::Buf(&mut inp),
                    Arg::Buf(&mut out),
                    Arg::Buf(as_bytes(&mut regs)),
                ],
            )
            .expect("arguments")
            .expect("launch");
            for t in 0..THREADS {
                assert_eq!(regs[t * REGS..(t + 1) * REGS], regs_expected[t * REGS..(t + 1) * REGS], "{tier:?}, {name}: thread {t}'s loads");
            }
            if let Some(at) = (0..out.len()).find(|&i| out[i] != out_expected[i]) {
                panic!("{tier:?}, {name}: stored byte {at} is {:#x}, expected {:#x}", out[at], out_expected[at]);
            }
        }
    }
}

/// Stores of several lanes to one place through an index loaded from
/// memory: every lane, the last lane alone, the first three lanes (two
/// components), and the odd lanes of the high half. Each warp writes its
/// own 16 slots of 8 bytes per store.
const ONE_PLACE: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry one_place(.param .u64 pidx, .param .u64 pout)
{
.reg .b32 %r<12>;
.reg .b64 %rd<12>;
.reg .pred %p<4>;
ld.param.u64 %rd0, [pidx];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %tid.x;
and.b32 %r1, %r0, 31;
shr.u32 %r2, %r0, 5;
mul.wide.u32 %rd2, %r0, 4;
add.u64 %rd3, %rd0, %rd2;
ld.global.u32 %r3, [%rd3];
shl.b32 %r4, %r2, 4;
add.u32 %r5, %r4, %r3;
mul.wide.u32 %rd4, %r5, 8;
add.u64 %rd5, %rd1, %rd4;
st.global.u32 [%rd5], %r0;
setp.eq.u32 %p0, %r1, 31;
@%p0 st.global.u32 [%rd5+1024], %r0;
setp.lt.u32 %p1, %r1, 3;
@%p1 st.global.v2.u32 [%rd5+2048], {%r0, %r1};
and.b32 %r6, %r1, 17;
setp.eq.u32 %p2, %r6, 17;
@%p2 st.global.u32 [%rd5+3072], %r0;
ret;
}
"#;

#[test]
fn stores_of_several_lanes_to_one_place_leave_the_last_lanes_value() {
    let exec = Executor::global();
    let halves_uniform: Vec<u32> = (0..THREADS as u32).map(|t| (t % 32 / 16) * 3).collect();
    let one_address = vec![7u32; THREADS];
    let scattered: Vec<u32> = (0..THREADS as u32).map(|t| ((t % 32) ^ 5) % 16).collect();
    let words = 4096 / 4;
    for tier in [Tier::Fast, Tier::Optimized] {
        let p = Program::from_source_with(ONE_PLACE, &Options { warp: WarpMode::Always, tier, strict_affine: false, memcheck: false })
            .unwrap_or_else(|e| panic!("compiles ({tier:?}): {e}"));
        let k = p.kernel("one_place").expect("kernel `one_place`");
        assert_eq!(k.info.lanes, 32, "{tier:?}");
        for (name, idx) in [("halves uniform", &halves_uniform), ("one address", &one_address), ("scattered", &scattered)] {
            // The model: each store instruction in turn, its lanes in order.
            let mut expected = vec![0xabab_ababu32; words];
            for warp in 0..THREADS / 32 {
                let at = |t: usize| (warp * 16 + idx[t] as usize) * 2;
                let lanes = || (warp * 32..warp * 32 + 32).map(|t| (t, t % 32));
                for (t, _) in lanes() {
                    expected[at(t)] = t as u32;
                }
                for (t, _) in lanes().filter(|&(_, l)| l == 31) {
                    expected[256 + at(t)] = t as u32;
                }
                for (t, l) in lanes().filter(|&(_, l)| l < 3) {
                    expected[512 + at(t)] = t as u32;
                    expected[512 + at(t) + 1] = l as u32;
                }
                for (t, _) in lanes().filter(|&(_, l)| l & 17 == 17) {
                    expected[768 + at(t)] = t as u32;
                }
            }
            let mut idx = idx.clone();
            let mut out = vec![0xabab_ababu32; words];
            launch(exec, k, [1, 1, 1], [THREADS as u32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut idx)), Arg::Buf(as_bytes(&mut out))])
                .expect("arguments")
                .expect("launch");
            if let Some(at) = (0..words).find(|&i| out[i] != expected[i]) {
                panic!("{tier:?}, {name}: word {at} is {:#x}, expected {:#x}", out[at], expected[at]);
            }
        }
    }
}
