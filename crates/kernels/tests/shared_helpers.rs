//! The fast tier's units call their out-of-line helpers (warp mode's
//! access helpers here) from objects the process links once: two
//! different modules that load and store through lane addresses run
//! correctly, and the second links no helper of its own.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

/// `out[i] = f(in[idx[i]])`, with the load and store through addresses
/// read from memory (not affine: they go through the helpers), after a
/// barrier. `{OP}` makes two modules of different code.
const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pidx, .param .u64 pout)
{
.reg .b32 %r<8>;
.reg .b64 %rd<12>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pidx];
ld.param.u64 %rd2, [pout];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd3, %r0, 4;
add.u64 %rd4, %rd1, %rd3;
ld.global.u32 %r1, [%rd4];
bar.sync 0;
mul.wide.u32 %rd5, %r1, 4;
add.u64 %rd6, %rd0, %rd5;
ld.global.u32 %r2, [%rd6];
{OP}
add.u64 %rd7, %rd2, %rd5;
st.global.u32 [%rd7], %r3;
ret;
}
"#;

fn run(op: &str, f: impl Fn(u32) -> u32) {
    let src = KERNEL.replace("{OP}", op);
    let opts = Options { warp: WarpMode::Always, tier: Tier::Fast, strict_affine: false, memcheck: false };
    let p = Program::from_source_with(&src, &opts).unwrap_or_else(|e| panic!("compiles ({op}): {e}"));
    let k = p.kernel("k").expect("kernel `k`");
    let n = 64usize;
    let mut input: Vec<u32> = (0..n as u32).map(|i| i * 13 + 5).collect();
    // A permutation, so that every lane stores somewhere of its own.
    let mut idx: Vec<u32> = (0..n as u32).map(|i| (i * 37 + 11) % n as u32).collect();
    let mut out = vec![0u32; n];
    launch(
        Executor::global(),
        k,
        [1, 1, 1],
        [n as u32, 1, 1],
        0,
        &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut idx)), Arg::Buf(as_bytes(&mut out))],
    )
    .expect("packs")
    .expect("runs");
    for i in 0..n {
        let j = idx[i] as usize;
        assert_eq!(out[j], f(input[j]), "{op}: element {j}");
    }
}

#[test]
fn two_modules_share_the_helpers_the_process_linked_once() {
    assert_eq!(backend_cpu::loader::linked_helpers(), 0, "nothing linked yet");
    run("add.u32 %r3, %r2, 7;", |x| x + 7);
    let first = backend_cpu::loader::linked_helpers();
    // A load and a store through lane addresses: their two helpers.
    assert_eq!(first, 2, "the first module links its helpers");
    run("mul.lo.u32 %r3, %r2, 3;", |x| x * 3);
    assert_eq!(backend_cpu::loader::linked_helpers(), first, "the second module links none of its own");
}
