//! How directed rounding (`.rm`, `.rp`, `.rz` on float arithmetic) is
//! lowered for the host, read from the LLVM IR: on a processor with AVX-512F
//! as instructions that carry the rounding mode; elsewhere scalars are
//! rounded to nearest and corrected by the sign of the exact error, and
//! vectors (and what has no such form) switch the rounding mode around the
//! operation. (The results are checked against the
//! hardware by the oracle's tests, in thread and warp mode.)

const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .f32 %f<10>;
.reg .f64 %fd<6>;
.reg .b32 %r<3>;
.reg .b64 %rd<6>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 8;
add.s64 %rd3, %rd1, %rd2;
ld.global.f32 %f1, [%rd3];
ld.global.f32 %f2, [%rd3+4];
add.rm.f32 %f3, %f1, %f2;
sub.rp.f32 %f4, %f3, %f1;
mul.rz.f32 %f5, %f4, %f2;
fma.rm.f32 %f6, %f5, %f1, %f2;
div.rp.f32 %f7, %f6, %f2;
sqrt.rm.f32 %f8, %f7;
cvt.f64.f32 %fd1, %f8;
add.rp.f64 %fd2, %fd1, %fd1;
mul.rm.f64 %fd3, %fd2, %fd1;
fma.rz.f64 %fd4, %fd3, %fd2, %fd1;
st.global.f64 [%rd3], %fd4;
ret;
}
"#;

fn ir(warp: compiler::WarpMode) -> String {
    let module = ptx::parse(KERNEL).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    let opts = compiler::Options { warp, ..Default::default() };
    compiler::emit_ir_with_options(&module, KERNEL, &opts).expect("compiles")
}

#[test]
fn directed_rounding_is_one_instruction_on_hosts_with_avx512() {
    for warp in [compiler::WarpMode::Off, compiler::WarpMode::Always] {
        let text = ir(warp);
        if !compiler::host_has_avx512f() {
            if warp == compiler::WarpMode::Off {
                // Scalars: rounded to nearest and corrected, except the
                // f64 fma, which keeps the mode switch (toward zero: 0).
                for helper in [
                    "float @__anycuda_fadd_f32_rm(",
                    "float @__anycuda_fsub_f32_rp(",
                    "float @__anycuda_fmul_f32_rz(",
                    "float @__anycuda_fma_f32_rm(",
                    "float @__anycuda_fdiv_f32_rp(",
                    "float @__anycuda_sqrt_f32_rm(",
                    "double @__anycuda_fadd_f64_rp(",
                    "double @__anycuda_fmul_f64_rm(",
                ] {
                    assert!(text.contains(&format!("define internal {helper}")), "{helper}: {text}");
                }
                assert!(!text.contains("@llvm.set.rounding(i32 3)"), "{text}");
                assert!(!text.contains("@llvm.set.rounding(i32 2)"), "{text}");
                assert!(text.contains("@llvm.set.rounding(i32 0)"), "{text}");
            } else {
                // 32-lane vectors switch the mode once per operation.
                assert!(text.contains("@llvm.set.rounding(i32 3)"), "{text}");
            }
            continue;
        }
        assert!(!text.contains("@llvm.set.rounding"), "{warp:?}: {text}");
        if warp == compiler::WarpMode::Off {
            // Scalar forms; the immediate is the direction | no exceptions
            // (9: down, 10: up, 11: toward zero).
            for call in [
                "@llvm.x86.avx512.mask.add.ss.round(",
                "@llvm.x86.avx512.mask.sub.ss.round(",
                "@llvm.x86.avx512.mask.mul.ss.round(",
                "@llvm.x86.avx512.vfmadd.f32(",
                "@llvm.x86.avx512.mask.div.ss.round(",
                "@llvm.x86.avx512.mask.sqrt.ss(",
                "@llvm.x86.avx512.mask.add.sd.round(",
                "@llvm.x86.avx512.mask.mul.sd.round(",
                "@llvm.x86.avx512.vfmadd.f64(",
            ] {
                assert_eq!(
                    text.matches(&format!("call <4 x float> {call}")).count()
                        + text.matches(&format!("call <2 x double> {call}")).count()
                        + text.matches(&format!("call float {call}")).count()
                        + text.matches(&format!("call double {call}")).count(),
                    1,
                    "{call}: {text}"
                );
            }
            assert!(text.contains("@llvm.x86.avx512.mask.add.ss.round(<4 x float> %"), "{text}");
            assert!(text.contains("i8 -1, i32 9)"), "{text}");
            assert!(text.contains("i8 -1, i32 10)"), "{text}");
            assert!(text.contains("i32 11)"), "{text}");
        } else {
            // 32 lanes: two 16-float or four 8-double pieces per operation.
            assert_eq!(text.matches("call <16 x float> @llvm.x86.avx512.add.ps.512(").count(), 2, "{text}");
            assert_eq!(text.matches("call <16 x float> @llvm.x86.avx512.sqrt.ps.512(").count(), 2, "{text}");
            assert_eq!(text.matches("call <16 x float> @llvm.x86.avx512.vfmadd.ps.512(").count(), 2, "{text}");
            assert_eq!(text.matches("call <8 x double> @llvm.x86.avx512.mul.pd.512(").count(), 4, "{text}");
            assert_eq!(text.matches("call <8 x double> @llvm.x86.avx512.vfmadd.pd.512(").count(), 4, "{text}");
        }
    }
}
