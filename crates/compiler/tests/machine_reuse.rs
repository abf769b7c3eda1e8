//! Compiles take their LLVM target machines from a process-wide pool (one
//! per code generation level and compile running at once) and put them
//! back: a compile must come out the same whatever was compiled before it,
//! on whichever thread.

const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<6>;
.reg .f32 %f<4>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.f32 %f1, [%rd3];
mul.rn.ftz.f32 %f2, %f1, %f1;
shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
cvt.rn.f32.u32 %f3, %r2;
add.f32 %f3, %f3, %f2;
st.global.f32 [%rd3], %f3;
ret;
}
"#;

fn object(tier: compiler::Tier, warp: compiler::WarpMode) -> Vec<u8> {
    let module = ptx::parse(KERNEL).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    let opts = compiler::Options { tier, warp, ..Default::default() };
    compiler::compile_with_options(&module, KERNEL, &compiler::Target::HostCpu, &opts).expect("compiles").object
}

#[test]
fn compiles_do_not_depend_on_what_the_thread_compiled_before() {
    use compiler::{Tier, WarpMode};
    // Each level's first compile makes its machine (unless another test
    // made it); the second, after compiles at the other levels, reuses it.
    let first = [object(Tier::Fast, WarpMode::Off), object(Tier::Fast, WarpMode::Always), object(Tier::Optimized, WarpMode::Always)];
    let again = [object(Tier::Optimized, WarpMode::Always), object(Tier::Fast, WarpMode::Always), object(Tier::Fast, WarpMode::Off)];
    assert_eq!(first[0], again[2], "fast tier, thread by thread");
    assert_eq!(first[1], again[1], "fast tier, warp mode");
    assert_eq!(first[2], again[0], "optimised tier");
    // The three are different code (three levels, two modes).
    assert_ne!(first[0], first[1]);
    assert_ne!(first[1], first[2]);
    // And the same on a thread that compiled nothing before (a pooled
    // machine made on another thread).
    let fresh = std::thread::spawn(|| object(Tier::Fast, WarpMode::Always)).join().expect("compile thread");
    assert_eq!(fresh, first[1], "fast tier, warp mode, on a fresh thread");
}
