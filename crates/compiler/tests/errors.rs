//! Unsupported and invalid PTX is an error naming the instruction and its
//! position, never a crash and never silently dropped code.

use compiler::{compile, CompileError, Target};

fn compile_src(body: &str) -> Result<compiler::CompiledModule, CompileError> {
    let src = format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n.global .texref tex;\n\
         .extern .func (.param .b32 r) mystery(.param .b32 a);\n\
         .visible .entry k(.param .u64 p)\n{{\n.reg .b32 %r<8>;\n.reg .f32 %f<8>;\n.reg .b64 %rd<4>;\n.reg .pred %q<2>;\n{body}\nret;\n}}\n"
    );
    let module = ptx::parse(&src).unwrap_or_else(|d| panic!("test PTX must parse: {d}\n{src}"));
    compile(&module, &src, &Target::HostCpu)
}

fn unsupported(body: &str) -> (String, u32, u32) {
    match compile_src(body) {
        Err(CompileError::Unsupported { what, line, column, function }) => {
            assert_eq!(function, "k");
            (what, line, column)
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn texture_instruction_is_named_with_its_position() {
    // Texel offsets are not applied yet.
    let (what, line, column) = unsupported("mov.u32 %r1, 0;\n  tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex, {%f5, %f6}], {%r1, %r1};");
    assert!(what.contains("tex.2d.v4.f32.f32") && what.contains("offsets"), "{what}");
    assert_eq!((line, column), (13, 3));
}

#[test]
fn tensor_core_forms_not_implemented_are_named() {
    // sm_100's 8-bit ldmatrix, fp8 mma, Hopper's wgmma.
    let (what, line, _) = unsupported("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%rd1];");
    assert!(what.contains("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8"), "{what}");
    assert_eq!(line, 12);
    let (what, _, _) = unsupported(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};",
    );
    assert!(what.contains("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32") && what.contains("e4m3"), "{what}");
    let (what, _, _) = unsupported("wgmma.fence.sync.aligned;");
    assert!(what.contains("wgmma.fence.sync.aligned"), "{what}");
}

#[test]
fn call_to_a_function_without_definition_is_named() {
    let (what, line, _) = unsupported("{\n.param .b32 a0;\nst.param.b32 [a0], 1;\n.param .b32 r0;\ncall.uni (r0), mystery, (a0);\n}");
    assert!(what.contains("`mystery`"), "{what}");
    assert_eq!(line, 16);
}

#[test]
fn error_message_names_function_line_and_column() {
    let e = compile_src("wgmma.fence.sync.aligned;").expect_err("unsupported");
    assert_eq!(e.to_string(), "12:1: unsupported: instruction `wgmma.fence.sync.aligned` (in `k`)");
}

#[test]
fn a_module_with_an_unsupported_instruction_is_rejected_whole() {
    // One bad kernel among good ones still fails the module: nothing is dropped.
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
               .visible .entry good() { ret; }\n\
               .visible .entry bad() { .reg .b32 %r<2>; .reg .b64 %rd<2>; wgmma.fence.sync.aligned; ret; }\n";
    let module = ptx::parse(src).expect("parses");
    let e = compile(&module, src, &Target::HostCpu).expect_err("rejected");
    assert!(matches!(e, CompileError::Unsupported { ref function, .. } if function == "bad"), "{e}");
}

#[test]
fn a_kernel_address_compiles() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
               .visible .entry other() { ret; }\n\
               .global .align 8 .u64 table[1] = {other};\n\
               .visible .entry k(.param .u64 out) { .reg .b64 %rd<3>; ld.param.u64 %rd1, [out]; mov.u64 %rd2, other; st.global.u64 [%rd1], %rd2; ret; }\n";
    let module = ptx::parse(src).expect("parses");
    let c = compile(&module, src, &Target::HostCpu).expect("taking a kernel's address compiles");
    assert_eq!(c.info.kernels.len(), 2);
}

fn invalid(body: &str) -> (String, u32, u32) {
    match compile_src(body) {
        Err(CompileError::Invalid { what, line, column, function }) => {
            assert_eq!(function, "k");
            (what, line, column)
        }
        other => panic!("expected Invalid for `{body}`, got {other:?}"),
    }
}

/// Malformed video instructions and `cvt.pack` are invalid PTX, reported
/// with the instruction and its position.
#[test]
fn malformed_video_and_pack_forms_are_named_with_their_position() {
    let cases = [
        ("vadd.u32.u32.u32 %r1.b1, %r2, %r3;", "takes 4 operands"),
        ("vadd.u32.u32.u32.add %r1.b1, %r2, %r3, %r4;", "exclude each other"),
        ("vadd.u32.u32.u32 %r1, %r2.b5, %r3;", "selector"),
        ("vadd.u32.u32 %r1, %r2, %r3;", "three types"),
        ("vshl.u32.u32.u32 %r1, %r2, %r3;", ".clamp and .wrap"),
        ("vshr.u32.u32.s32.wrap %r1, %r2, %r3;", "shift amount"),
        ("vset.u32.u32.lo %r1, %r2, %r3;", "not .lo"),
        ("vadd.u32.u32.u32.add.min %r1, %r2, %r3, %r4;", "at most one"),
        ("vmad.s32.s32.s32.po %r1, -%r2, %r3, %r4;", ".po"),
        ("vmad.s32.s32.s32 %r1, -%r2, %r3, -%r4;", "either the product or `c`"),
        ("vadd2.u32.u32.u32.sat.add %r1, %r2, %r3, %r4;", ".sat"),
        ("vadd4.u32.u32.u32 %r1, %r2.h10, %r3, %r4;", "selectors"),
        ("vadd2.u32.u32.u32.max %r1, %r2, %r3, %r4;", ".add only"),
        ("vmin4.u32.u32.u32 %r1.h0, %r2, %r3, %r4;", "mask"),
        ("cvt.pack.sat.s8.s32.b32 %r1, %r2, %r3;", "takes 4 operands"),
        ("cvt.pack.s16.s32.b32 %r1, %r2, %r3;", "cvt.pack.sat"),
        ("cvt.pack.sat.f32.s32.b32 %r1, %r2, %r3;", "converts to"),
    ];
    for (body, expected) in cases {
        let (what, line, column) = invalid(body);
        assert!(what.contains(expected), "`{body}`: {what}");
        assert_eq!((line, column), (12, 1), "`{body}`");
    }
}

#[test]
fn device_side_cuda_device_synchronize_is_named() {
    // CDP1's device-side wait, removed in CUDA 12 (a compile error for
    // compute_90 there): the kernel's compile says so.
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
               .extern .func (.param .b32 r) cudaDeviceSynchronize();\n\
               .visible .entry k()\n{\n.reg .b32 %r<2>;\n{\n.param .b32 r0;\ncall.uni (r0), cudaDeviceSynchronize, ();\nld.param.b32 %r1, [r0];\n}\nret;\n}\n";
    let module = ptx::parse(src).expect("parses");
    match compile(&module, src, &Target::HostCpu) {
        Err(CompileError::Unsupported { what, line, .. }) => {
            assert!(what.contains("cudaDeviceSynchronize") && what.contains("CUDA 12"), "{what}");
            assert_eq!(line, 10);
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn device_runtime_table_agrees_with_the_linker() {
    // Every name the compiler lowers is one the linker lets stay undefined,
    // and the other way round.
    let mut lowered: Vec<String> = compiler::cpu_abi::devrt::ptx_names().collect();
    let mut provided: Vec<String> = ptx::DEVICE_RUNTIME_PROVIDED.iter().map(|s| s.to_string()).collect();
    lowered.sort();
    provided.sort();
    assert_eq!(lowered, provided);
    for name in &lowered {
        assert!(compiler::cpu_abi::devrt::lookup(name).is_some(), "{name}");
    }
    assert!(compiler::cpu_abi::devrt::lookup("__cudaCDP2DeviceGetCacheConfig").is_none());
}

#[test]
fn device_launches_compile_for_the_host() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx/device_launch.ptx")).expect("device_launch.ptx");
    let module = ptx::parse(&src).expect("parses");
    let ir = compiler::emit_ir(&module, &src).expect("lowers");
    // Each call is the one runtime function, with the operation's number.
    for op in [compiler::cpu_abi::devrt::Op::GetParameterBufferV2, compiler::cpu_abi::devrt::Op::LaunchDevice] {
        let call = format!("call i64 @__anycuda_devrt(ptr %ctx, i32 %lin, i32 {}, ", op as u32);
        assert!(ir.contains(&call), "no `{call}` in the IR");
    }
    assert!(compile(&module, &src, &Target::HostCpu).is_ok());
}
