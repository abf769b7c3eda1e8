//! Which kernels are small enough for warp mode, and what warp mode makes
//! of 32-bit integer division.

fn modes(src: &str) -> Vec<compiler::KernelMode> {
    let module = ptx::parse(src).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    compiler::kernel_modes(&module, src, &compiler::Target::HostCpu, &compiler::Options::default(), compiler::Unit::Module)
}

/// A kernel with a barrier (so it needs warp mode) and `blocks` blocks of straight-line
/// arithmetic, each writing `temps` fresh temporaries read only in that
/// block, one accumulator carried across blocks, and `loads` extra global
/// loads at the end.
fn kernel(blocks: usize, temps: usize, loads: usize) -> String {
    let regs = blocks * temps + loads + 8;
    let mut s = format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .f32 %f<{regs}>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n.reg .pred %q<4>;\n"
    );
    s += "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\ncvt.rn.f32.u32 %f0, %r1;\n";
    let mut f = 1;
    for b in 0..blocks {
        s += &format!("setp.gt.f32 %q1, %f0, {}.0;\n@%q1 bra L{b};\n", b + 7);
        s += &format!("mul.f32 %f{f}, %f0, 0f3F000000;\n");
        for _ in 1..temps {
            s += &format!("fma.rn.f32 %f{}, %f{f}, %f{f}, 0f3F800000;\n", f + 1);
            f += 1;
        }
        s += &format!("add.f32 %f0, %f0, %f{f};\nL{b}:\n");
        f += 1;
    }
    for l in 0..loads {
        s += &format!("ld.global.f32 %f{f}, [%rd3+{}];\nadd.f32 %f0, %f0, %f{f};\n", 4 * l);
        f += 1;
    }
    s += "st.global.f32 [%rd3], %f0;\nbar.sync 0;\nret;\n}\n";
    s
}

#[test]
fn a_big_kernel_of_block_local_arithmetic_runs_as_warps() {
    // 41 blocks x about 1,200 registers, far over 4,096; but only the
    // accumulator and the loop's values live across blocks (Bezier
    // surfaces with nvcc's inlined `powf` look so).
    let m = modes(&kernel(40, 30, 0));
    assert!(m[0].warp, "{}", m[0].why);
}

#[test]
fn a_small_kernel_with_many_accesses_runs_as_warps() {
    let m = modes(&kernel(2, 2, 40));
    assert!(m[0].warp, "{}", m[0].why);
}

#[test]
fn a_big_kernel_with_many_memory_accesses_stays_thread_by_thread() {
    let m = modes(&kernel(40, 30, 65));
    assert!(!m[0].warp, "{}", m[0].why);
    assert!(m[0].why.contains("blocks x registers"), "{}", m[0].why);
    assert!(m[0].why.contains("more than 64 memory accesses"), "{}", m[0].why);
    // With the store and the barrier, 63 loads make 65 accesses: too many;
    // 62 make 64.
    let m = modes(&kernel(40, 30, 63));
    assert!(!m[0].warp, "{}", m[0].why);
    let m = modes(&kernel(40, 30, 62));
    assert!(m[0].warp, "{}", m[0].why);
}

#[test]
fn a_big_kernel_with_many_registers_across_blocks_stays_thread_by_thread() {
    // Each block's temporaries are read again in the next block: 200
    // blocks, each with registers live across blocks.
    let mut src = kernel(200, 3, 0);
    // The first temporary of each block feeds the final sum, so all of
    // them live from their block to the end.
    let firsts: Vec<usize> = (0..200).map(|b| 1 + 3 * b).collect();
    let tail: String = firsts.iter().map(|f| format!("add.f32 %f0, %f0, %f{f};\n")).collect();
    src = src.replace("st.global.f32 [%rd3], %f0;", &format!("{tail}st.global.f32 [%rd3], %f0;"));
    let m = modes(&src);
    assert!(!m[0].warp, "{}", m[0].why);
}

fn ir(src: &str) -> String {
    let module = ptx::parse(src).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    compiler::emit_ir(&module, src).expect("compiles")
}

#[test]
fn warp_mode_divides_32_bit_integers_as_doubles_and_thread_mode_as_integers() {
    // Divisors that differ between lanes (a divisor the whole warp shares
    // takes its reciprocal instead: `tests/shared_divisors.rs` of the
    // kernels).
    let src = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<12>;
.reg .b64 %rd<8>;
.shared .align 4 .b8 s[1024];
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
add.u32 %r8, %r1, %r2;
rem.u32 %r3, %r2, %r8;
div.s32 %r4, %r2, %r8;
rem.s32 %r5, %r4, %r3;
div.u32 %r6, %r5, %r3;
add.s32 %r7, %r6, %r5;
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r7;
bar.sync 0;
ret;
}
"#;
    let ir = ir(src);
    let warp = ir.split("define ").skip(1).find(|f| f.contains("<32 x i32>")).expect("a warp function");
    for op in ["udiv <32 x i32>", "sdiv <32 x i32>", "urem <32 x i32>", "srem <32 x i32>"] {
        assert!(!warp.contains(op), "{op} in warp mode:\n{warp}");
    }
    let fdivs = warp.matches("fdiv <32 x double>").count();
    assert_eq!(fdivs, 4, "{fdivs} divisions in:\n{warp}");
    assert!(warp.contains("uitofp <32 x i32>") && warp.contains("fptoui <32 x double>"));
    assert!(warp.contains("sitofp <32 x i32>") && warp.contains("fptosi <32 x double>"));
    // Thread by thread, `div` is as fast as the conversions and division.
    let module = ptx::parse(src).expect("parses");
    let opts = compiler::Options { warp: compiler::WarpMode::Off, ..Default::default() };
    let thread = compiler::emit_ir_with_options(&module, src, &opts).expect("compiles");
    assert!(!thread.contains("<32 x i32>") && !thread.contains("fdiv double"), "{thread}");
    for op in ["udiv i32", "sdiv i32", "urem i32", "srem i32"] {
        assert!(thread.contains(op), "no {op} in thread mode:\n{thread}");
    }
}
