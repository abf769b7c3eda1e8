//! How runners claim the blocks of a warp-mode launch: in runs of several
//! blocks when no block can wait for another (`KernelInfo::spin_waits`
//! false), one at a time when a loop may spin on memory, so that a block
//! never waits for one its own runner holds but has not started.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

/// Block 0 spins until block 1 sets the flag (block 1 comes right after
/// it, so a run claimed with block 0 holds it); every block records what
/// it read. A barrier first, as kernels run as warps have.
const WAITING: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry wait_for_next(.param .u64 flag, .param .u64 out)
{
.reg .pred %p<4>;
.reg .b32 %r<8>;
.reg .b64 %rd<6>;
ld.param.u64 %rd1, [flag];
ld.param.u64 %rd2, [out];
mov.u32 %r1, %ctaid.x;
mov.u32 %r3, %tid.x;
bar.sync 0;
setp.ne.u32 %p1, %r3, 0;
@%p1 bra DONE;
setp.ne.u32 %p2, %r1, 1;
@%p2 bra CHECK0;
st.volatile.global.u32 [%rd1], 42;
bra.uni RECORD;
CHECK0:
setp.ne.u32 %p3, %r1, 0;
@%p3 bra RECORD;
SPIN:
ld.volatile.global.u32 %r5, [%rd1];
setp.ne.u32 %p3, %r5, 42;
@%p3 bra SPIN;
RECORD:
ld.volatile.global.u32 %r6, [%rd1];
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r6;
DONE:
ret;
}
"#;

/// The same without the wait: each block's thread 0 writes its block index.
const PLAIN: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry plain(.param .u64 out)
{
.reg .pred %p<2>;
.reg .b32 %r<4>;
.reg .b64 %rd<6>;
ld.param.u64 %rd2, [out];
mov.u32 %r1, %ctaid.x;
mov.u32 %r3, %tid.x;
bar.sync 0;
setp.ne.u32 %p1, %r3, 0;
@%p1 bra DONE;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r1;
DONE:
ret;
}
"#;

fn program(src: &str, tier: Tier) -> Program {
    Program::from_source_with(src, &Options { warp: WarpMode::Always, tier, strict_affine: false, memcheck: false })
        .unwrap_or_else(|e| panic!("compiles ({tier:?}): {e}"))
}

#[test]
fn a_block_that_waits_for_the_next_one_finishes_and_plain_blocks_all_run() {
    let exec = Executor::global();
    // Far more blocks than runners: runs of several blocks would be claimed.
    let blocks = 512u32;
    for tier in [Tier::Fast, Tier::Optimized] {
        let p = program(WAITING, tier);
        let k = p.kernel("wait_for_next").expect("kernel");
        assert_eq!(k.info.lanes, 32, "runs as warps");
        assert!(k.info.spin_waits, "its loop spins on memory");
        let mut flag = vec![0u32; 1];
        let mut out = vec![0u32; blocks as usize];
        launch(exec, k, [blocks, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut flag)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        assert_eq!((out[0], out[1]), (42, 42), "block 0 saw block 1's flag ({tier:?})");

        let p = program(PLAIN, tier);
        let k = p.kernel("plain").expect("kernel");
        assert!(!k.info.spin_waits, "no loop");
        let mut out = vec![u32::MAX; blocks as usize];
        launch(exec, k, [blocks, 1, 1], [64, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
        assert!(out.iter().enumerate().all(|(i, &v)| v == i as u32), "every block ran once ({tier:?})");
    }
}
