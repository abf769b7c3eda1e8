//! Warp mode keeps a register that nothing writes once a warp can have
//! suspended in the warp's frame, with the shape of its lanes as an
//! address (`FnLower::store_resident_shapes`): an access after a barrier
//! reads it there unless the register's affine bit says the lanes are
//! consecutive. Each write classifies the lanes only where the bit fails,
//! so a write that is not affine must replace the shape an earlier, affine
//! write left: here the address `in + 4 * tid` is written, then `in + 4 *
//! (tid ^ j)` (affine as a whole warp only when `j` flips no lane bit), and
//! read after a barrier. Checked in both modes and tiers for flips inside
//! and outside the warp.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout, .param .u32 pj)
{
.reg .b32 %r<16>;
.reg .b64 %rd<16>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
ld.param.u32 %r9, [pj];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd3, %r0, 4;
add.u64 %rd4, %rd0, %rd3;
ld.global.u32 %r1, [%rd4];
xor.b32 %r5, %r0, %r9;
mul.wide.u32 %rd6, %r5, 4;
add.u64 %rd4, %rd0, %rd6;
bar.sync 0;
ld.global.u32 %r3, [%rd4];
mul.lo.u32 %r4, %r1, 1000;
add.u32 %r4, %r4, %r3;
add.u64 %rd7, %rd1, %rd3;
st.global.u32 [%rd7], %r4;
ret;
}
"#;

#[test]
fn an_address_kept_in_the_frame_reads_its_last_value_after_a_barrier() {
    let exec = Executor::global();
    let n = 128usize;
    let input: Vec<u32> = (0..n as u32).map(|i| i * 7 + 3).collect();
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
            let k = p.kernel("k").expect("kernel `k`");
            // Flips of lanes inside a warp (the second address is not
            // consecutive), of whole warps, and none.
            for j in [1u32, 5, 31, 32, 64, 0] {
                let mut inp = input.clone();
                let mut out = vec![0u32; n];
                launch(
                    exec,
                    k,
                    [1, 1, 1],
                    [n as u32, 1, 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out)), Arg::U32(j)],
                )
                .expect("arguments")
                .expect("launch");
                for t in 0..n {
                    let want = input[t].wrapping_mul(1000).wrapping_add(input[t ^ j as usize]);
                    assert_eq!(out[t], want, "thread {t}, j {j} ({warp:?}, {tier:?})");
                }
            }
        }
    }
}
