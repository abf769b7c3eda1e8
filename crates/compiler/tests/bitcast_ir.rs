//! PTX registers live in integer slots, so f32 arithmetic reads its
//! operands as `bitcast (load i32)` and flushes, stores or compares its
//! results as bits. The lowering never casts a value back to the type it
//! was cast from: it uses the original. Read from the LLVM IR.

/// `.ftz` arithmetic (operands and results flushed), a comparison and
/// stores of f32 registers.
const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .pred %q<2>;
.reg .b32 %r<4>;
.reg .f32 %f<8>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.f32 %f1, [%rd3];
ld.global.f32 %f2, [%rd3+4];
fma.rn.ftz.f32 %f3, %f1, %f2, %f1;
mul.ftz.f32 %f4, %f3, %f2;
setp.lt.ftz.f32 %q1, %f4, %f1;
selp.f32 %f5, %f4, %f3, %q1;
mov.b32 %r2, %f5;
add.s32 %r3, %r2, 1;
st.global.u32 [%rd3], %r3;
st.global.f32 [%rd3+4], %f4;
ret;
}
"#;

/// Every `bitcast` of the IR as (result, operand, from type, to type).
fn bitcasts(text: &str) -> Vec<(String, String, String, String)> {
    text.lines()
        .filter_map(|l| {
            let (result, rest) = l.trim().split_once(" = bitcast ")?;
            let (from, to) = rest.split_once(" to ")?;
            let (from_ty, operand) = from.rsplit_once(' ')?;
            Some((result.to_string(), operand.to_string(), from_ty.to_string(), to.trim().to_string()))
        })
        .collect()
}

fn check(opts: &compiler::Options) {
    let module = ptx::parse(KERNEL).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    let text = compiler::emit_ir_with_options(&module, KERNEL, opts).expect("compiles");
    let casts = bitcasts(&text);
    assert!(casts.len() >= 3, "the f32 registers are read through bitcasts:\n{text}");
    for (result, operand, from, to) in &casts {
        if let Some(inner) = casts.iter().find(|c| &c.0 == operand) {
            assert!(
                !(inner.2 == *to && inner.3 == *from),
                "{result} casts {operand} back to {to}, the type {operand} was cast from ({}):\n{text}",
                inner.1
            );
        }
    }
}

#[test]
fn f32_registers_are_never_cast_back_to_the_bits_they_came_from() {
    check(&compiler::Options { warp: compiler::WarpMode::Off, ..Default::default() });
    check(&compiler::Options { warp: compiler::WarpMode::Always, ..Default::default() });
}
