//! Blocks of kernels whose warps wait for each other run one at a time per
//! runner and are reported finished a few at a time
//! (`backend_cpu::exec::warps`): every launch ends, whole, with any number
//! of blocks, and a trap in the middle of a runner's unreported blocks
//! fails the launch without losing count of them (the launch would never
//! end), after which the next launch runs every block.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

/// Each block sums its 64 threads' indices through shared memory and a
/// barrier; thread 0 writes the sum. The block whose index is `trap` traps
/// after the barrier.
const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry s(.param .u64 pout, .param .u32 ptrap)
{
.reg .b32 %r<16>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
.shared .align 4 .b8 sh[256];
ld.param.u64 %rd0, [pout];
ld.param.u32 %r0, [ptrap];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %tid.x;
mov.u32 %r3, %ntid.x;
mad.lo.u32 %r4, %r1, %r3, %r2;
shl.b32 %r5, %r2, 2;
mov.u32 %r6, sh;
add.u32 %r7, %r6, %r5;
st.shared.u32 [%r7], %r4;
bar.sync 0;
setp.eq.u32 %p0, %r1, %r0;
@%p0 trap;
setp.ne.u32 %p1, %r2, 0;
@%p1 bra DONE;
mov.u32 %r8, 0;
mov.u32 %r9, 0;
LOOP:
shl.b32 %r10, %r9, 2;
add.u32 %r11, %r6, %r10;
ld.shared.u32 %r12, [%r11];
add.u32 %r8, %r8, %r12;
add.u32 %r9, %r9, 1;
setp.lt.u32 %p2, %r9, %r3;
@%p2 bra LOOP;
mul.wide.u32 %rd1, %r1, 4;
add.u64 %rd2, %rd0, %rd1;
st.global.u32 [%rd2], %r8;
DONE:
ret;
}
"#;

#[test]
fn every_block_of_a_waiting_kernel_finishes_and_a_trap_ends_its_launch() {
    let exec = Executor::global();
    let p = Program::from_source_with(KERNEL, &Options { warp: WarpMode::Always, tier: Tier::Fast, strict_affine: false, memcheck: false })
        .expect("compiles");
    let k = p.kernel("s").expect("kernel `s`");
    assert_eq!(k.info.lanes, 32);
    let ntid = 64u32;
    let sum = |b: u32| (0..ntid).map(|t| b * ntid + t).sum::<u32>();
    // Block counts below, at and above multiples of the report batch.
    for blocks in [1u32, 7, 15, 16, 17, 33, 100] {
        let mut out = vec![0u32; blocks as usize];
        launch(exec, k, [blocks, 1, 1], [ntid, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out)), Arg::U32(u32::MAX)])
            .expect("arguments")
            .unwrap_or_else(|e| panic!("{blocks} blocks: {e}"));
        let want: Vec<u32> = (0..blocks).map(sum).collect();
        assert_eq!(out, want, "{blocks} blocks");
    }
    // A trap in block 37 of 100: the launch fails (and ends).
    let mut out = vec![0u32; 100];
    let r = launch(exec, k, [100, 1, 1], [ntid, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out)), Arg::U32(37)]).expect("arguments");
    assert!(r.is_err(), "the trap fails the launch");
    // The next launch runs every block.
    let mut out = vec![0u32; 90];
    launch(exec, k, [90, 1, 1], [ntid, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out)), Arg::U32(u32::MAX)])
        .expect("arguments")
        .expect("the launch after a failed one");
    assert_eq!(out, (0..90).map(sum).collect::<Vec<_>>());
}
