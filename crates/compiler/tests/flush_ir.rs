//! How `.ftz` operands are flushed, read from the LLVM IR the compiler
//! emits.

fn ir(src: &str) -> String {
    let module = ptx::parse(src).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    compiler::emit_ir(&module, src).expect("compiles")
}

/// A loaded scale multiplied into four values, as llama.cpp's quantised
/// kernels do, and the integer dot products they scale converted to f32.
/// `{X}` is placed between the second and the third use of the scale.
const SCALED: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<8>;
.reg .f32 %f<16>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.f32 %f1, [%rd3];
ld.global.u32 %r2, [%rd3+4];
cvt.rn.f32.s32 %f2, %r2;
mul.ftz.f32 %f3, %f1, %f2;
mul.ftz.f32 %f4, %f1, %f3;
{X}
mul.ftz.f32 %f5, %f1, %f4;
mul.ftz.f32 %f6, %f1, %f5;
st.global.f32 [%rd3], %f6;
ret;
}
"#;

/// The flush sequence's test for a subnormal (magnitude below 2^-126),
/// once per flushed value, scalar or vector.
fn flushes(text: &str) -> usize {
    text.lines().filter(|l| l.contains(" = icmp ult ") && l.contains("i32 8388608")).count()
}

#[test]
fn a_register_read_by_several_ftz_operations_is_flushed_once_per_block_and_value() {
    // The scale once; the conversion never (an integer is not subnormal);
    // each of the four results once.
    let text = ir(&SCALED.replace("{X}", ""));
    assert_eq!(flushes(&text), 1 + 4, "{text}");
    // Rewritten between the uses (a copy, which emits no label): flushed
    // again for the last two.
    let text = ir(&SCALED.replace("{X}", "mov.f32 %f1, %f3;"));
    assert_eq!(flushes(&text), 2 + 4, "{text}");
    // A label between the uses starts another block: flushed again there.
    let text = ir(&SCALED.replace("{X}", "bra.uni L1;\nL1:"));
    assert_eq!(flushes(&text), 2 + 4, "{text}");
}
