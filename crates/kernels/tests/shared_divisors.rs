//! Divisions by a divisor every thread shares (`arith.rs`,
//! `quotient_by_reciprocal`): thread by thread in the optimised tier (a
//! block-invariant divisor, `uniform::block_invariant`) and in warp mode
//! (a uniform register), the quotient comes from a reciprocal computed once.
//! Checked against the PTX rules in every mode and tier, for `div`/`rem`
//! `.u32`/`.s32` by a parameter, by a value of the parameter and the block
//! index, and by `%ntid.x`, over divisors and dividends at the edges (0, 1,
//! -1, powers of two, 2^31, 2^32 - 1, multiples of the divisor and their
//! neighbours) and random ones.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry d(.param .u64 pin, .param .u64 pout, .param .u32 pd, .param .u32 pn)
{
.reg .b32 %r<32>;
.reg .b64 %rd<16>;
.reg .pred %p<4>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
ld.param.u32 %r0, [pd];
ld.param.u32 %r1, [pn];
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %ntid.x;
mov.u32 %r4, %tid.x;
mad.lo.u32 %r5, %r2, %r3, %r4;
setp.ge.u32 %p0, %r5, %r1;
@%p0 bra DONE;
mul.wide.u32 %rd2, %r5, 4;
add.u64 %rd3, %rd0, %rd2;
ld.global.u32 %r6, [%rd3];
div.u32 %r7, %r6, %r0;
rem.u32 %r8, %r6, %r0;
div.s32 %r9, %r6, %r0;
rem.s32 %r10, %r6, %r0;
xor.b32 %r11, %r0, %r2;
div.u32 %r12, %r6, %r11;
rem.s32 %r13, %r6, %r11;
div.u32 %r14, %r5, %r3;
rem.u32 %r15, %r5, %r3;
div.s32 %r16, %r6, %r11;
mul.wide.u32 %rd4, %r5, 40;
add.u64 %rd5, %rd1, %rd4;
st.global.u32 [%rd5], %r7;
st.global.u32 [%rd5+4], %r8;
st.global.u32 [%rd5+8], %r9;
st.global.u32 [%rd5+12], %r10;
st.global.u32 [%rd5+16], %r12;
st.global.u32 [%rd5+20], %r13;
st.global.u32 [%rd5+24], %r14;
st.global.u32 [%rd5+28], %r15;
st.global.u32 [%rd5+32], %r16;
st.global.u32 [%rd5+36], %r11;
DONE:
ret;
}
"#;

const OUTS: usize = 10;

fn div_u(x: u32, d: u32) -> u32 {
    x.checked_div(d).unwrap_or(u32::MAX)
}

fn rem_u(x: u32, d: u32) -> u32 {
    x.checked_rem(d).unwrap_or(x)
}

/// PTX `div.s32`: by zero, -1 for a non-negative dividend and 1 for a
/// negative one; `i32::MIN / -1` wraps.
fn div_s(x: u32, d: u32) -> u32 {
    let (x, d) = (x as i32, d as i32);
    (if d == 0 {
        if x >= 0 {
            -1
        } else {
            1
        }
    } else {
        x.wrapping_div(d)
    }) as u32
}

fn rem_s(x: u32, d: u32) -> u32 {
    let (x, d) = (x as i32, d as i32);
    (if d == 0 { x } else { x.wrapping_rem(d) }) as u32
}

/// What thread `i` of blocks of `ntid` writes, dividing `x` by `d`.
fn model(x: u32, d: u32, i: usize, ntid: usize) -> [u32; OUTS] {
    let (c, i) = ((i / ntid) as u32, i as u32);
    let e = d ^ c;
    let n = ntid as u32;
    [div_u(x, d), rem_u(x, d), div_s(x, d), rem_s(x, d), div_u(x, e), rem_s(x, e), i / n, i % n, div_s(x, e), e]
}

/// Dividends around the divisor `d` and at the edges of 32 bits, then
/// random ones.
fn dividends(d: u32, n: usize, seed: u64) -> Vec<u32> {
    let mut v = vec![0, 1, 2, u32::MAX, u32::MAX - 1, 0x8000_0000, 0x7fff_ffff, 0x8000_0001, d, d.wrapping_sub(1), d.wrapping_add(1)];
    let sd = (d as i32).unsigned_abs();
    for q in [2u32, 3, 1000, 65_535] {
        let m = sd.wrapping_mul(q);
        v.extend([m, m.wrapping_sub(1), m.wrapping_add(1), m.wrapping_neg(), m.wrapping_neg().wrapping_sub(1)]);
    }
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Small, mid-sized and full-width values alike.
        v.push(match v.len() % 3 {
            0 => (x as u32) >> 20,
            1 => (x as u32) >> 8,
            _ => x as u32,
        });
    }
    v.truncate(n);
    v
}

const DIVISORS: [u32; 18] = [
    1,
    2,
    3,
    7,
    10,
    641,
    65_536,
    65_537,
    0x7fff_ffff,
    0x8000_0000,
    0x8000_0001,
    0xffff_fffe,
    0xffff_ffff,
    0,
    0x1234_5678,
    0xfff0_0001,
    5,
    0xffff_fff9,
];

/// [`DIVISORS`], and every power of two from 4 with its neighbours: the
/// reciprocal `ceil(2^64 / d)` is exact at a power of two and rounds up
/// the most just above one.
fn divisors() -> Vec<u32> {
    let mut v = DIVISORS.to_vec();
    for k in 2..32 {
        let p = 1u32 << k;
        v.extend([p - 1, p, p + 1]);
    }
    v
}

#[test]
fn quotients_by_a_shared_divisor_follow_the_ptx_rules_in_every_mode() {
    let exec = Executor::global();
    // 200 threads in blocks of 64: the last block is 56 threads short, its
    // second warp 24 lanes short.
    let (n, ntid) = (200usize, 64usize);
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
            let k = p.kernel("d").expect("kernel `d`");
            for (j, d) in divisors().into_iter().enumerate() {
                let mut input = dividends(d, n, j as u64 + 1);
                let mut out = vec![0xcdcd_cdcdu32; n * OUTS];
                launch(
                    exec,
                    k,
                    [n.div_ceil(ntid) as u32, 1, 1],
                    [ntid as u32, 1, 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out)), Arg::U32(d), Arg::U32(n as u32)],
                )
                .expect("arguments")
                .expect("launch");
                for (i, &x) in input.iter().enumerate() {
                    let (got, want) = (&out[i * OUTS..(i + 1) * OUTS], model(x, d, i, ntid));
                    assert_eq!(got, want, "thread {i}: {x:#x} by {d:#x} ({warp:?}, {tier:?})");
                }
            }
        }
    }
}

#[test]
fn shared_divisors_take_the_reciprocal_where_it_is_computed_once() {
    let module = ptx::parse(KERNEL).expect("parses");
    let ir = |warp, tier| {
        compiler::emit_ir_with_options(&module, KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false }).expect("lowers")
    };
    let calls = |text: &str| text.matches("call i64 @__anycuda_reciprocal_u32(").count();
    // Thread by thread, optimised: all nine divisions (LLVM hoists the
    // reciprocals out of the loop over the block's threads).
    assert_eq!(calls(&ir(WarpMode::Off, Tier::Optimized)), 9);
    // The fast tier hoists nothing: a reciprocal per thread would cost more
    // than the division.
    assert_eq!(calls(&ir(WarpMode::Off, Tier::Fast)), 0);
    // Warp mode: one reciprocal per warp instruction, in either tier.
    assert!(calls(&ir(WarpMode::Always, Tier::Fast)) >= 9);
}
