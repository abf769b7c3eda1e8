//! Where a warp-mode load or store has addresses of no regular shape, its
//! fallback is a masked gather or scatter: inline on hosts with AVX-512
//! (a few instructions), a call of one shared helper per type elsewhere
//! (LLVM would expand each one inline into 32 tests, branches and scalar
//! accesses); the helper accesses every lane in lane order without a
//! branch, an idle lane through a slot of its own. Read from the LLVM IR.

const KERNEL: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 q)
{
.reg .b32 %r<8>;
.reg .b64 %rd<12>;
ld.param.u64 %rd1, [p];
ld.param.u64 %rd2, [q];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
ld.global.u32 %r2, [%rd4];
mul.wide.u32 %rd5, %r2, 4;
add.s64 %rd6, %rd1, %rd5;
ld.global.u32 %r3, [%rd6];
ld.global.u32 %r4, [%rd6+4];
add.s32 %r5, %r3, %r4;
st.global.u32 [%rd6], %r5;
st.global.u32 [%rd6+8], %r5;
ret;
}
"#;

fn calls(text: &str, callee: &str) -> usize {
    text.lines().filter(|l| l.contains(" call ") && l.contains(callee)).count()
}

/// The gather and scatter helpers of `t` elements each redirect idle
/// lanes to their own slot and then access all 32 lanes, without a
/// branch.
fn assert_lane_by_lane(text: &str, t: &str) {
    for helper in ["wgather", "wscatter"] {
        let name = format!("@__anycuda_{helper}_v32{t}_");
        let line = text.lines().find(|l| l.starts_with("define") && l.contains(&name)).expect("helper defined");
        let start = text.find(line).expect("the line is in the text");
        let body = &text[start..start + text[start..].find("\n}").expect("helper body ends")];
        assert!(body.contains("%q = select <32 x i1> %m, <32 x ptr> %p, <32 x ptr> %idle.w"), "{helper}: idle lanes redirected\n{body}");
        let accesses = body.lines().filter(|l| l.contains(&format!("load {t}, ptr %q")) || l.contains(&format!("store {t} %x"))).count();
        assert_eq!(accesses, 32, "{helper}: one access per lane\n{body}");
        assert!(!body.contains(" br "), "{helper}: no branch\n{body}");
    }
}

#[test]
fn irregular_warp_accesses_gather_inline_only_where_gathers_are_instructions() {
    let module = ptx::parse(KERNEL).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    let opts = compiler::Options { warp: compiler::WarpMode::Always, ..Default::default() };
    let text = compiler::emit_ir_with_options(&module, KERNEL, &opts).expect("compiles");
    let (gathers, scatters) = (calls(&text, "@llvm.masked.gather."), calls(&text, "@llvm.masked.scatter."));
    assert!(gathers >= 2 && scatters >= 1 || !compiler::host_has_avx512f(), "{text}");
    if compiler::host_has_avx512f() {
        assert_eq!(calls(&text, "@__anycuda_wgather_"), 0, "{text}");
        assert_eq!(calls(&text, "@__anycuda_wscatter_"), 0, "{text}");
        return;
    }
    // Lane by lane in each helper; every access calls a helper.
    assert!(text.contains("define internal <32 x i32> @__anycuda_wgather_v32i32_a4(<32 x ptr> %p, <32 x i1> %m) noinline"), "{text}");
    assert!(
        text.contains("define internal void @__anycuda_wscatter_v32i32_a4(<32 x i32> %v, <32 x ptr> %p, <32 x i1> %m) noinline"),
        "{text}"
    );
    assert_eq!((gathers, scatters), (0, 0), "{text}");
    assert_lane_by_lane(&text, "i32");
    assert!(calls(&text, "@__anycuda_wgather_v32i32_a4(") >= 3, "{text}");
    assert!(calls(&text, "@__anycuda_wscatter_v32i32_a4(") >= 2, "{text}");
}

/// A byte load and a byte store by part of a warp (`@%p1 ld.global.u8`,
/// lanes 0-19).
const PARTIAL_BYTES: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 q)
{
.reg .pred %p<2>;
.reg .b32 %r<8>;
.reg .b64 %rd<12>;
ld.param.u64 %rd1, [p];
ld.param.u64 %rd2, [q];
mov.u32 %r1, %tid.x;
cvt.u64.u32 %rd3, %r1;
add.s64 %rd4, %rd1, %rd3;
mov.u32 %r2, 0;
setp.lt.u32 %p1, %r1, 20;
@%p1 ld.global.u8 %r2, [%rd4];
bar.sync 0;
mul.wide.u32 %rd5, %r1, 4;
add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r2;
@%p1 st.global.u8 [%rd4+64], %r2;
ret;
}
"#;

#[test]
fn masked_byte_accesses_share_helpers_where_the_target_has_no_byte_masks() {
    let module = ptx::parse(PARTIAL_BYTES).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    let opts = compiler::Options { warp: compiler::WarpMode::Always, ..Default::default() };
    let text = compiler::emit_ir_with_options(&module, PARTIAL_BYTES, &opts).expect("compiles");
    if compiler::host_has_avx512f() {
        assert_eq!(calls(&text, "@__anycuda_wmaskload_"), 0, "{text}");
        assert!(calls(&text, "@llvm.masked.load.v16i8.p0(") >= 2, "{text}");
        assert!(calls(&text, "@llvm.masked.store.v16i8.p0(") >= 2, "{text}");
        return;
    }
    assert!(text.contains("define internal <16 x i8> @__anycuda_wmaskload_v16i8_a1(ptr %p, <16 x i1> %m) noinline"), "{text}");
    // The page check before the unmasked load; the masked load only in
    // the helper.
    assert!(text.contains("%in = and i64 %a, 4095") && text.contains("%fits = icmp ule i64 %end, 4096"), "{text}");
    assert_eq!(calls(&text, "@llvm.masked.load.v16i8.p0("), 1, "{text}");
    assert_eq!(calls(&text, "@__anycuda_wmaskload_v16i8_a1("), 2, "{text}");
    // Stores are never widened: the masked store, in one helper.
    assert_eq!(calls(&text, "@llvm.masked.store.v16i8.p0("), 1, "{text}");
    assert_eq!(calls(&text, "@__anycuda_wmaskstore_v16i8_a1("), 2, "{text}");
}

/// The kernel above with 16-bit elements (`ld.global.u16`/`st.global.u16`
/// by loaded indices).
const KERNEL_U16: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 q)
{
.reg .b16 %h<4>;
.reg .b32 %r<8>;
.reg .b64 %rd<12>;
ld.param.u64 %rd1, [p];
ld.param.u64 %rd2, [q];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
ld.global.u32 %r2, [%rd4];
mul.wide.u32 %rd5, %r2, 2;
add.s64 %rd6, %rd1, %rd5;
ld.global.u16 %h1, [%rd6];
ld.global.u16 %h2, [%rd6+2];
add.s16 %h3, %h1, %h2;
st.global.u16 [%rd6], %h3;
st.global.u16 [%rd6+4], %h3;
ret;
}
"#;

#[test]
fn irregular_16_bit_warp_accesses_share_helpers_on_every_host() {
    // No x86 processor gathers or scatters 16-bit elements: inline, LLVM
    // would expand each access into 32 tests, branches and scalar accesses.
    let module = ptx::parse(KERNEL_U16).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    let opts = compiler::Options { warp: compiler::WarpMode::Always, ..Default::default() };
    let text = compiler::emit_ir_with_options(&module, KERNEL_U16, &opts).expect("compiles");
    assert!(text.contains("define internal <32 x i16> @__anycuda_wgather_v32i16_a2(<32 x ptr> %p, <32 x i1> %m) noinline"), "{text}");
    assert!(
        text.contains("define internal void @__anycuda_wscatter_v32i16_a2(<32 x i16> %v, <32 x ptr> %p, <32 x i1> %m) noinline"),
        "{text}"
    );
    // Lane by lane in each helper; every irregular access calls one.
    let (gathers, scatters) = (calls(&text, "@llvm.masked.gather.v32i16."), calls(&text, "@llvm.masked.scatter.v32i16."));
    assert_eq!((gathers, scatters), (0, 0), "{text}");
    assert_lane_by_lane(&text, "i16");
    assert!(calls(&text, "@__anycuda_wgather_v32i16_a2(") >= 2, "{text}");
    assert!(calls(&text, "@__anycuda_wscatter_v32i16_a2(") >= 2, "{text}");
}
