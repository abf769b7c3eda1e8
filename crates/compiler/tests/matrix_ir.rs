//! What thread mode makes of warp matrix instructions, read from the LLVM
//! IR it emits.

/// Two `mma` of one product (s8 into s32, m16n8k16) and one of another
/// (f16 into f32), thread by thread.
const THREE_MMA: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<40>;
.reg .f32 %f<12>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.u32 %r2, [%rd3];
mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%r10, %r11, %r12, %r13}, {%r2, %r2}, {%r2}, {%r2, %r2, %r2, %r2};
mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%r14, %r15, %r16, %r17}, {%r10, %r11}, {%r12}, {%r10, %r11, %r12, %r13};
mov.b32 %f1, %r2;
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f2, %f3, %f4, %f5}, {%r2, %r2, %r2, %r2}, {%r2, %r2}, {%f1, %f1, %f1, %f1};
add.u32 %r20, %r14, %r17;
mov.b32 %r21, %f5;
add.u32 %r22, %r20, %r21;
st.global.u32 [%rd3], %r22;
ret;
}
"#;

#[test]
fn thread_mode_mma_calls_one_shared_helper_per_product() {
    let module = ptx::parse(THREE_MMA).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    for tier in [compiler::Tier::Fast, compiler::Tier::Optimized] {
        let opts = compiler::Options { tier, warp: compiler::WarpMode::Off, strict_affine: false, memcheck: false };
        let text = compiler::emit_ir_with_options(&module, THREE_MMA, &opts).expect("compiles");
        let helpers: Vec<&str> = text.lines().filter(|l| l.starts_with("define internal void @__anycuda_mma.")).collect();
        assert_eq!(helpers.len(), 2, "{tier:?}: one helper per product:\n{text}");
        let name = |l: &str| l.trim_start_matches("define internal void @").split('(').next().unwrap_or("").to_string();
        let (s8, f16) = (
            name(helpers.iter().find(|l| l.contains("S8")).expect("the s8 product's")),
            name(helpers.iter().find(|l| l.contains("F16")).expect("the f16 product's")),
        );
        assert_eq!(text.matches(&format!("call void @{s8}(")).count(), 2, "{tier:?}:\n{text}");
        assert_eq!(text.matches(&format!("call void @{f16}(")).count(), 1, "{tier:?}:\n{text}");
    }
}
