//! What a warp keeps across a barrier (warp mode, `warp::frame_layout`):
//! at a barrier every lane reaches together, the registers live there;
//! at one some lanes branch around, also what those lanes read where they
//! wait. Observed with a loop whose registers die before the barrier, a
//! value from before the loop read after it, a neighbour's value through
//! shared memory, and lanes that skip a second barrier and read values
//! computed before it (one of them between the barriers, so that it lives
//! on the warp's stack, which the block's other warps reuse while it
//! waits). Both tiers, blocks of four warps and a block whose
//! last warp is half live; checked against the same computation thread by
//! thread in Rust.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry b(.param .u64 pout, .param .u32 pk)
{
.reg .b32 %r<32>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
.shared .align 4 .b8 s[512];
ld.param.u64 %rd0, [pout];
ld.param.u32 %r1, [pk];
mov.u32 %r2, %tid.x;
mov.u32 %r20, %ntid.x;
mul.lo.u32 %r10, %r2, 7;
add.u32 %r10, %r10, %r1;
and.b32 %r4, %r2, 7;
mov.u32 %r3, 0;
mov.u32 %r5, 0;
LOOP:
mad.lo.u32 %r5, %r5, 3, %r3;
add.u32 %r5, %r5, %r1;
add.u32 %r3, %r3, 1;
setp.le.u32 %p1, %r3, %r4;
@%p1 bra LOOP;
mov.u32 %r6, s;
shl.b32 %r7, %r2, 2;
add.u32 %r8, %r6, %r7;
st.shared.u32 [%r8], %r5;
bar.sync 0;
add.u32 %r11, %r2, 1;
rem.u32 %r11, %r11, %r20;
shl.b32 %r12, %r11, 2;
add.u32 %r13, %r6, %r12;
ld.shared.u32 %r14, [%r13];
add.u32 %r15, %r14, %r10;
mul.wide.u32 %rd1, %r2, 8;
add.s64 %rd2, %rd0, %rd1;
st.global.u32 [%rd2], %r15;
mad.lo.u32 %r21, %r2, 5, %r14;
and.b32 %r16, %r2, 31;
setp.lt.u32 %p2, %r16, 12;
@%p2 bra SKIP;
bar.sync 0;
st.global.u32 [%rd2+4], %r14;
bra.uni END;
SKIP:
xor.b32 %r17, %r10, %r5;
add.u32 %r17, %r17, %r21;
st.global.u32 [%rd2+4], %r17;
END:
ret;
}
"#;

/// Each thread's two words, computed thread by thread.
fn expected(threads: u32, k: u32) -> Vec<u32> {
    let loop_value = |t: u32| {
        let mut v = 0u32;
        for i in 0..=(t & 7) {
            v = v.wrapping_mul(3).wrapping_add(i).wrapping_add(k);
        }
        v
    };
    let mut out = Vec::new();
    for t in 0..threads {
        let before = t.wrapping_mul(7).wrapping_add(k);
        let neighbour = loop_value((t + 1) % threads);
        out.push(neighbour.wrapping_add(before));
        let after_first = t.wrapping_mul(5).wrapping_add(neighbour);
        out.push(if t & 31 < 12 { (before ^ loop_value(t)).wrapping_add(after_first) } else { neighbour });
    }
    out
}

#[test]
fn registers_across_barriers_keep_every_lane_value_it_reads_later() {
    let exec = Executor::global();
    for tier in [Tier::Fast, Tier::Optimized] {
        let options = Options { warp: WarpMode::Always, tier, strict_affine: false, memcheck: false };
        let p = Program::from_source_with(KERNEL, &options).expect("compiles");
        let kernel = p.kernel("b").expect("kernel");
        assert_eq!(kernel.info.lanes, 32, "runs as warps");
        for threads in [128u32, 112] {
            let k = 0x9e37_79b9;
            let mut out = vec![0u32; 2 * threads as usize];
            launch(exec, kernel, [3, 1, 1], [threads, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out)), Arg::U32(k)])
                .expect("packs")
                .expect("runs");
            assert_eq!(out, expected(threads, k), "{tier:?}, {threads} threads");
        }
    }
}
