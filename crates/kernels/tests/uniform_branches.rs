//! Warp mode's forward branches on a uniform predicate in a convergent
//! block (`FnLower::warp_branch_uniform`): every executing lane goes the
//! same way, but not every live lane executes the block: lanes that left
//! for a block that only returns (`if (i >= n) return;`) are live and
//! must stay there. Here lanes past `n` leave first; the others then
//! branch on a parameter, store on both ways, and meet again. Checked in
//! both modes and tiers for every `n` around the warp's edges and both
//! values of the parameter: lanes past `n` store nothing.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pout, .param .u32 pn, .param .u32 pflag)
{
.reg .pred %p<4>;
.reg .b32 %r<8>;
.reg .b64 %rd<8>;
ld.param.u64 %rd0, [pout];
ld.param.u32 %r1, [pn];
ld.param.u32 %r2, [pflag];
mov.u32 %r0, %tid.x;
setp.ge.u32 %p0, %r0, %r1;
@%p0 bra DONE;
mul.wide.u32 %rd1, %r0, 4;
add.u64 %rd2, %rd0, %rd1;
setp.eq.u32 %p1, %r2, 0;
@%p1 bra OTHER;
st.global.u32 [%rd2], 1;
bra.uni JOIN;
OTHER:
st.global.u32 [%rd2], 2;
JOIN:
ld.global.u32 %r3, [%rd2];
add.u32 %r3, %r3, 10;
st.global.u32 [%rd2], %r3;
DONE:
ret;
}
"#;

#[test]
fn lanes_that_left_for_the_end_stay_there_across_a_uniform_branch() {
    let exec = Executor::global();
    let threads = 64usize;
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
            let k = p.kernel("k").expect("kernel `k`");
            for n in [0u32, 1, 5, 31, 32, 33, 50, 64] {
                for flag in [0u32, 1] {
                    let mut out = vec![0u32; threads];
                    launch(exec, k, [1, 1, 1], [threads as u32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out)), Arg::U32(n), Arg::U32(flag)])
                        .expect("arguments")
                        .expect("launch");
                    for (t, &x) in out.iter().enumerate() {
                        let want = if (t as u32) < n {
                            if flag == 0 {
                                12
                            } else {
                                11
                            }
                        } else {
                            0
                        };
                        assert_eq!(x, want, "thread {t}, n {n}, flag {flag} ({warp:?}, {tier:?})");
                    }
                }
            }
        }
    }
}
