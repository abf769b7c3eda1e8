//! Thread-by-thread code of the host's fast tier goes through LLVM's fast
//! instruction selector, which has no rule for some intrinsics and for
//! `half`: one of them sends the rest of its basic block through
//! SelectionDAG. That code widens f16 through an out-of-line helper (shared
//! by the process) and writes `fabs` and integer `min` with operations the
//! selector has rules for; the optimised tier and warp mode keep them.

const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b16 %h<2>;
.reg .b32 %r<4>;
.reg .f32 %f<8>;
.reg .b64 %rd<2>;
ld.param.u64 %rd1, [p];
ld.global.f32 %f1, [%rd1];
ld.global.f32 %f2, [%rd1+4];
ld.global.u16 %h1, [%rd1+8];
ld.global.u32 %r1, [%rd1+12];
fma.rn.f32 %f3, %f1, %f2, %f1;
abs.f32 %f4, %f3;
cvt.f32.f16 %f5, %h1;
add.f32 %f6, %f4, %f5;
min.u32 %r2, %r1, 77;
st.global.f32 [%rd1+16], %f6;
st.global.u32 [%rd1+20], %r2;
ret;
}
"#;

fn ir(tier: compiler::Tier, warp: compiler::WarpMode) -> String {
    let module = ptx::parse(KERNEL).expect("parses");
    let opts = compiler::Options { tier, warp, strict_affine: false, memcheck: false };
    compiler::emit_ir_with_options(&module, KERNEL, &opts).expect("compiles")
}

/// The kernel's thread function.
fn thread_function(text: &str) -> &str {
    let start = text.find("@\"__anycuda_thread.k\"(").expect("the thread function");
    let end = text[start..].find("\n}\n").map_or(text.len(), |e| start + e);
    &text[start..end]
}

#[test]
fn fast_tier_thread_code_keeps_clear_of_what_the_fast_selector_misses() {
    let fast = ir(compiler::Tier::Fast, compiler::WarpMode::Off);
    let f = thread_function(&fast);
    // The f16 widening through a helper (the `half` the register's bits
    // were read as is left unused: the fast pipeline's early CSE removes
    // it); `abs` and `min` as a few operations the selector has rules for.
    assert!(f.contains("call float @__anycuda_fi.h2f(i16 "), "{f}");
    for direct in ["@llvm.fabs.f32(", "@llvm.umin.i32(", "fpext half"] {
        assert!(!f.contains(direct), "{direct}: {f}");
    }
    assert!(f.contains(", 2147483647") && f.contains("icmp ult i32 "), "{f}");
    // `fma` stays inline (see `FnLower::fast_isel_code`).
    assert!(f.contains("@llvm.fma.f32("), "{f}");
    // The helper is out of line (shared by the process's units).
    assert!(fast.contains("declare float @__anycuda_fi.h2f(i16 %h) noinline nounwind"), "{fast}");
    let module = ptx::parse(KERNEL).expect("parses");
    let opts = compiler::Options { tier: compiler::Tier::Fast, warp: compiler::WarpMode::Off, strict_affine: false, memcheck: false };
    let unit = compiler::compile_unit(&module, KERNEL, &compiler::Target::HostCpu, &opts, compiler::Unit::Module).expect("compiles");
    let h2f = unit.helpers.iter().find(|h| h.name == "__anycuda_fi.h2f").expect("the widening helper");
    assert!(h2f.ir.contains("fpext half %x to float"), "{}", h2f.ir);
    // Elsewhere the intrinsics stay inline.
    for (tier, warp) in [(compiler::Tier::Optimized, compiler::WarpMode::Off), (compiler::Tier::Fast, compiler::WarpMode::Always)] {
        let text = ir(tier, warp);
        assert!(!text.contains("@__anycuda_fi."), "{tier:?} {warp:?}: {text}");
        assert!(text.contains("@llvm.fabs.") && text.contains("fpext "), "{tier:?} {warp:?}: {text}");
    }
}
