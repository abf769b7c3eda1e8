//! Checked mode (`Options::memcheck`) in the IR: every access of global,
//! shared, local and generic memory is tested, parameter space is not, and
//! unchecked compiles carry none of it.

use compiler::{Options, Tier, WarpMode};

const SRC: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .shared .align 4 .b8 tile[128];
    .local .align 4 .b8 scratch[16];
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, tile;
    add.u32 %r4, %r3, %r2;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    ld.shared.v2.u32 {%r5, %r6}, [%r3];
    st.local.u32 [scratch+4], %r5;
    ld.global.u32 %r7, [%rd1];
    atom.global.add.u32 %r7, [%rd1], %r6;
    st.u32 [%rd1+4], %r7;
    ret;
}
"#;

fn opts(memcheck: bool) -> Options {
    Options { tier: Tier::Optimized, warp: WarpMode::Auto, strict_affine: false, memcheck }
}

fn ir(memcheck: bool) -> String {
    ir_with(memcheck, WarpMode::Auto)
}

fn ir_with(memcheck: bool, warp: WarpMode) -> String {
    let module = ptx::parse(SRC).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    compiler::emit_ir_with_options(&module, SRC, &Options { warp, ..opts(memcheck) }).expect("compiles")
}

fn calls(ir: &str) -> Vec<&str> {
    ir.lines().filter(|l| l.contains("call void @__anycuda_memcheck(")).collect()
}

#[test]
fn every_access_but_parameters_is_checked_once_with_its_size_direction_and_space() {
    use compiler::cpu_abi::memcheck as mc;
    let ir = ir_with(true, WarpMode::Off);
    let calls = calls(&ir);
    let info = |size: u32, dir: u32, space: u32| format!("i32 {}", size | dir | space << mc::SPACE_SHIFT);
    let want = [
        info(4, mc::WRITE, mc::SHARED),
        info(8, mc::READ, mc::SHARED),
        info(4, mc::WRITE, mc::LOCAL),
        info(4, mc::READ, mc::GLOBAL),
        info(4, mc::READ | mc::WRITE, mc::GLOBAL),
        info(4, mc::WRITE, mc::GENERIC),
    ];
    assert_eq!(calls.len(), want.len(), "{calls:#?}");
    for (call, w) in calls.iter().zip(&want) {
        assert!(call.contains(&format!("{w},")), "`{w}` expected in {call}");
    }
    // The place string names the function and the PTX line of the store.
    let line = SRC.lines().position(|l| l.contains("st.u32 [%rd1+4]")).expect("the store") + 1;
    assert!(ir.contains(&format!("c\"k (PTX line {line})\\00\"")), "no place for line {line}");
    // The inline test against the cached range comes first.
    assert!(ir.contains("call i1 @llvm.expect.i1"));
}

#[test]
fn unchecked_code_has_no_checks_and_a_different_cache_key() {
    for warp in [WarpMode::Off, WarpMode::Auto] {
        let ir = ir_with(false, warp);
        assert!(calls(&ir).is_empty() && !ir.contains("__anycuda_memcheck") && !ir.contains("mcmiss") && !ir.contains("__anycuda_mcplace"));
    }
    assert_ne!(opts(true).fingerprint(), opts(false).fingerprint());
    assert!(opts(true).fingerprint().contains("memcheck"));
}

#[test]
fn checked_kernels_keep_their_mode_and_warps_check_every_lane() {
    let module = ptx::parse(SRC).expect("parses");
    let target = compiler::Target::HostCpu;
    let modes = compiler::kernel_modes(&module, SRC, &target, &opts(true), compiler::Unit::Module);
    assert!(modes[0].warp, "a kernel with a barrier runs as warps, checked or not");
    let ir = ir(true);
    // In warp mode every access goes to the warp's check (thread mode's
    // function is not there: the kernel has only its warp version).
    let warp_calls = ir.lines().filter(|l| l.contains("call void @__anycuda_memcheck_warp(")).count();
    assert_eq!(warp_calls, 6, "{ir}");
    assert!(ir.contains("call i1 @llvm.vector.reduce.or.v32i1"));
}
