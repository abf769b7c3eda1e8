//! Lane masks in warp mode: a predicate that differs from lane to lane
//! kept across barriers (saved in the warp's frame as the bits of an
//! integer, read back as a mask), and gathers and scatters under such a
//! mask, whose idle lanes hold addresses nothing may touch (a page that
//! is never mapped): 32-, 16- and 64-bit elements, the targets' shared
//! lane-by-lane helpers and the inline forms. Both tiers, blocks of four
//! warps and a block whose last warp is half live; checked against the
//! same computation thread by thread in Rust.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry m(.param .u64 pin, .param .u64 pout, .param .u64 pbad)
{
.reg .b16 %rs<4>;
.reg .b32 %r<24>;
.reg .b64 %rd<24>;
.reg .pred %p<4>;
.shared .align 4 .b8 s[1024];
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
ld.param.u64 %rd9, [pbad];
mov.u32 %r1, %tid.x;
mov.u32 %r20, %ntid.x;
mul.lo.u32 %r2, %r1, 7;
rem.u32 %r3, %r2, 5;
setp.lt.u32 %p1, %r3, 2;
shl.b32 %r4, %r1, 2;
mov.u32 %r5, s;
add.u32 %r6, %r5, %r4;
st.shared.u32 [%r6], %r2;
bar.sync 0;
add.u32 %r13, %r1, 1;
rem.u32 %r13, %r13, %r20;
shl.b32 %r14, %r13, 2;
add.u32 %r15, %r5, %r14;
ld.shared.u32 %r10, [%r15];
xor.b32 %r7, %r1, 5;
mul.wide.u32 %rd2, %r7, 4;
add.s64 %rd3, %rd0, %rd2;
selp.b64 %rd4, %rd3, %rd9, %p1;
mov.u32 %r8, 0;
@%p1 ld.global.u32 %r8, [%rd4];
xor.b32 %r16, %r1, 3;
mul.wide.u32 %rd12, %r16, 2;
add.s64 %rd13, %rd0, %rd12;
selp.b64 %rd14, %rd13, %rd9, %p1;
mov.u16 %rs1, 0;
@%p1 ld.global.u16 %rs1, [%rd14];
cvt.u32.u16 %r17, %rs1;
add.u32 %r11, %r8, %r10;
add.u32 %r11, %r11, %r17;
xor.b32 %r9, %r1, 9;
mul.wide.u32 %rd5, %r9, 4;
add.s64 %rd6, %rd1, %rd5;
selp.b64 %rd7, %rd6, %rd9, %p1;
@%p1 st.global.u32 [%rd7], %r11;
bar.sync 0;
xor.b32 %r18, %r1, 6;
mul.wide.u32 %rd15, %r18, 8;
add.s64 %rd16, %rd1, 8192;
add.s64 %rd16, %rd16, %rd15;
selp.b64 %rd17, %rd16, %rd9, %p1;
mul.wide.u32 %rd18, %r11, 65537;
@%p1 st.global.u64 [%rd17], %rd18;
selp.u32 %r12, 1, 0, %p1;
mul.wide.u32 %rd8, %r1, 4;
add.s64 %rd10, %rd1, %rd8;
st.global.u32 [%rd10+4096], %r12;
ret;
}
"#;

const UNTOUCHED: u32 = 0xabab_abab;
const OUT_WORDS: usize = 2048 + 2 * 128;

fn expected(input: &[u32], threads: usize) -> Vec<u32> {
    let half = |i: usize| (input[i / 2] >> (16 * (i % 2))) & 0xffff;
    let mut out = vec![UNTOUCHED; OUT_WORDS];
    for t in 0..threads {
        let active = (t * 7) % 5 < 2;
        out[1024 + t] = active as u32;
        if active {
            let shared = ((t + 1) % threads * 7) as u32;
            let v = input[t ^ 5].wrapping_add(shared).wrapping_add(half(t ^ 3));
            out[t ^ 9] = v;
            let wide = (v as u64) * 65537;
            out[2048 + (t ^ 6) * 2] = wide as u32;
            out[2048 + (t ^ 6) * 2 + 1] = (wide >> 32) as u32;
        }
    }
    out
}

#[test]
fn masks_survive_barriers_and_idle_lanes_touch_no_memory() {
    let exec = Executor::global();
    // An address in the first page, which is never mapped: an idle lane
    // that loaded or stored through it would fault the launch.
    let bad = 64u64;
    let input: Vec<u32> = (0..1024u32).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    for tier in [Tier::Fast, Tier::Optimized] {
        let options = Options { warp: WarpMode::Always, tier, strict_affine: false, memcheck: false };
        let p = kernels::Program::from_source_with(KERNEL, &options).expect("compiles");
        let kernel = p.kernel("m").expect("kernel");
        assert_eq!(kernel.info.lanes, 32, "runs as warps");
        for threads in [128usize, 112] {
            let mut inp = input.clone();
            let mut out = vec![UNTOUCHED; OUT_WORDS];
            launch(
                exec,
                kernel,
                [2, 1, 1],
                [threads as u32, 1, 1],
                0,
                &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out)), Arg::U64(bad)],
            )
            .expect("packs")
            .expect("runs");
            assert_eq!(out, expected(&input, threads), "{tier:?}, {threads} threads");
        }
    }
}
