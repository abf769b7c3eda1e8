//! What warp mode makes of memory accesses, read from the LLVM IR it emits.

fn ir(src: &str) -> String {
    let module = ptx::parse(src).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    compiler::emit_ir(&module, src).expect("compiles")
}

/// The warp function of kernel `k` in a module's IR.
fn warp_function(text: &str) -> String {
    let start = text.find("define i32 @\"__anycuda_thread.k\"").expect("the warp function");
    let end = text[start..].find("\n}\n").map_or(text.len(), |e| start + e);
    text[start..end].to_string()
}

/// The module's IR in `tier`, every kernel in warp mode.
fn warp_ir_in(src: &str, tier: compiler::Tier) -> String {
    let module = ptx::parse(src).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
    let opts = compiler::Options { tier, warp: compiler::WarpMode::Always, strict_affine: false, memcheck: false };
    compiler::emit_ir_with_options(&module, src, &opts).expect("compiles")
}

/// A block-wide barrier (warp mode), a global load before a loop, and in the
/// loop a global load that strides by 16 KiB and a shared load.
const GRID_STRIDE: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<12>;
.reg .b64 %rd<8>;
.reg .pred %q<3>;
.shared .align 4 .b8 s[1024];
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.u32 %r3, [%rd3];
mov.u32 %r4, s;
shl.b32 %r5, %r2, 2;
add.s32 %r6, %r4, %r5;
st.shared.u32 [%r6], %r3;
bar.sync 0;
mov.u32 %r7, 0;
mov.u32 %r8, %r2;
LOOP:
mul.wide.u32 %rd4, %r8, 4;
add.s64 %rd5, %rd1, %rd4;
ld.global.u32 %r9, [%rd5];
ld.shared.u32 %r10, [%r6];
add.s32 %r7, %r7, %r9;
add.s32 %r7, %r7, %r10;
add.s32 %r8, %r8, 4096;
setp.lt.u32 %q1, %r8, %r1;
@%q1 bra LOOP;
st.global.u32 [%rd3], %r7;
ret;
}
"#;

#[test]
fn a_strided_global_load_in_a_loop_is_prefetched_ahead_in_optimised_code_and_nothing_else_is() {
    let text = ir(GRID_STRIDE);
    // 32 lanes x 4 bytes: two 64-byte lines, and the next warp's two, for
    // the loop's global load only (the load before the loop and the shared
    // load get none).
    assert_eq!(text.matches("call void @llvm.prefetch.p0(").count(), 4, "{text}");
    // The distance comes from lane 0's last address, kept per load site.
    assert_eq!(text.lines().filter(|l| l.contains("%pf.slot") && l.contains("alloca i64")).count(), 1, "{text}");
    // Fewer iterations ahead when the stride is whole 4 KiB pages (every
    // line in one set of the level-1 cache).
    assert!(text.contains(", 4095\n"), "{text}");
    // (8 and 16 iterations: a shift of the stride by 3 or 4.)
    assert!(text.contains("i64 3, i64 4"), "{text}");
    // The fast tier's code, which runs a kernel's first launches only,
    // prefetches nothing (`FnLower::stride_prefetches`).
    let fast = warp_ir_in(GRID_STRIDE, compiler::Tier::Fast);
    assert!(!fast.contains("@llvm.prefetch") && !fast.contains("%pf.slot"), "{fast}");
    assert!(warp_ir_in(GRID_STRIDE, compiler::Tier::Optimized).contains("@llvm.prefetch"));
}

#[test]
fn without_a_loop_nothing_is_prefetched() {
    let straight = GRID_STRIDE.replace("@%q1 bra LOOP;", "");
    let text = ir(&straight);
    assert!(!text.contains("@llvm.prefetch"), "{text}");
}

#[test]
fn a_plain_barrier_goes_on_with_the_next_warp_and_a_counted_one_returns() {
    // Branches to the chaining tail, which goes on with the next warp: from
    // a finishing warp, and from the kernel's one `bar.sync 0`.
    let text = ir(GRID_STRIDE);
    assert_eq!(text.matches("br label %chain\n").count(), 2, "{text}");
    let counted = GRID_STRIDE.replace("bar.sync 0;", "bar.sync 0, 64;");
    let text = ir(&counted);
    assert_eq!(text.matches("br label %chain\n").count(), 1, "{text}");
    let named = GRID_STRIDE.replace("bar.sync 0;", "bar.sync 1;");
    let text = ir(&named);
    assert_eq!(text.matches("br label %chain\n").count(), 1, "{text}");
}

/// A load through `p + 4 * tid.x`, a load through an address read from
/// memory, and a store through the first address again (after a barrier,
/// which makes the kernel a warp-mode one).
const AFFINE: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<4>;
.reg .b64 %rd<6>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
bar.sync 0;
ld.global.u32 %r2, [%rd3];
mul.wide.u32 %rd4, %r2, 4;
add.s64 %rd5, %rd1, %rd4;
ld.global.u32 %r3, [%rd5];
st.global.u32 [%rd3], %r3;
ret;
}
"#;

#[test]
fn a_lane_affine_address_skips_looking_at_the_lanes_while_its_bit_holds() {
    let text = ir(AFFINE);
    // One branch on the affine bit, for %rd3 (its store reuses it); none for
    // the address read from memory, whose lanes are looked at.
    let bit_branches = text.matches(", label %aff").count() - text.matches(", label %affh").count();
    assert_eq!(bit_branches, 1, "{text}");
    // Then lane 16's address: from lane 0's in a warp affine as a whole,
    // else from the lanes (rows of a half warp).
    assert_eq!(text.matches("br i1 %aff.whole, ").count(), 1, "{text}");
    assert_eq!(text.matches("phi i32 [1, %aff").count(), 1, "consecutive when the bit holds:\n{text}");
    // Both loads keep the run-time look at the lanes for when it does not.
    assert_eq!(text.matches("call i1 @llvm.vector.reduce.and.v32i1").count(), 4, "{text}");
}

#[test]
fn contiguous_accesses_of_a_whole_warp_are_plain_vector_accesses() {
    let text = ir(AFFINE);
    // Each of the two loads and the store tests once whether every lane
    // executes ...
    let tests: Vec<&str> = text.lines().filter(|l| l.contains(" = icmp eq i32 ") && l.ends_with(", -1")).collect();
    assert_eq!(tests.len(), 3, "{text}");
    // ... and then loads each half with one plain load (no separate path
    // for halves side by side: LLVM splits a whole warp's load into the
    // same register loads), ...
    let whole = text.lines().filter(|l| l.contains(" = load <32 x i32>, ptr %") && l.ends_with(", align 4")).count();
    assert_eq!(whole, 0, "{text}");
    assert_eq!(text.matches(" = load <16 x i32>, ptr %").count(), 4, "{text}");
    assert_eq!(text.matches("store <16 x i32> %part").count(), 2, "{text}");
    // ... keeping the masked forms for warps with lanes that do not.
    assert_eq!(text.matches(" = call <16 x i32> @llvm.masked.load.v16i32.p0(").count(), 4, "{text}");
    assert_eq!(text.matches("call void @llvm.masked.store.v16i32.p0(").count(), 2, "{text}");
}

/// `atomicAdd(&bins[data[i]], 1)` for bytes, as nvcc writes it.
const BYTE_BINS: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b16 %rs<3>;
.reg .b32 %r<8>;
.reg .b64 %rd<6>;
.shared .align 4 .b8 bins[1024];
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mov.u32 %r2, bins;
bar.sync 0;
cvt.u64.u32 %rd2, %r1;
add.s64 %rd3, %rd1, %rd2;
ld.global.u8 %rs1, [%rd3];
mul.wide.u16 %r3, %rs1, 4;
add.s32 %r4, %r2, %r3;
atom.shared.add.u32 %r5, [%r4], 1;
ret;
}
"#;

#[test]
fn a_shared_atomic_on_loaded_bytes_loads_each_lanes_byte_itself() {
    let text = ir(BYTE_BINS);
    // A whole warp reading consecutive bytes: each lane's read-modify-write
    // loads its byte, and scales it, by itself ...
    assert_eq!(text.matches("call <32 x i32> @__anycuda_watom_add_i32_u_plain_ldui8_i16x4(").count(), 1, "{text}");
    let helper =
        text.split("define internal <32 x i32> @__anycuda_watom_add_i32_u_plain_ldui8_i16x4(").nth(1).unwrap_or_else(|| panic!("{text}"));
    let helper = helper.split("\n}\n").next().unwrap_or_default();
    assert_eq!(helper.matches(" = load i8, ptr %ql.").count(), 32, "{helper}");
    assert_eq!(helper.matches(", 2\n").count(), 32, "a shift by 2 per lane:\n{helper}");
    // ... any other warp loads the bytes as a vector first.
    assert_eq!(text.matches("call <32 x i32> @__anycuda_watom_add_i32_u_plain_i16x4(").count(), 1, "{text}");
    // The byte read again after the atomic: loaded once, as a vector.
    let again = BYTE_BINS.replace("ret;", "cvt.u32.u16 %r6, %rs1;\nst.global.u32 [%rd1], %r6;\nret;");
    let text = ir(&again);
    assert!(!text.contains("_ldui8_"), "{text}");
    assert_eq!(text.matches("call <32 x i32> @__anycuda_watom_add_i32_u_plain_i16x4(").count(), 1, "{text}");
}

#[test]
fn a_loop_that_every_lane_goes_round_again_jumps_back_with_its_mask() {
    let text = ir(GRID_STRIDE);
    // The loop's block takes its mask from the back edge instead of working
    // it out again from the lanes' next blocks.
    let phi = text.lines().find(|l| l.contains("= phi <32 x i1>") && l.contains(", %back")).unwrap_or_else(|| panic!("{text}"));
    assert!(phi.contains("%wm"), "{phi}");
    // Going round its own block leaves the lanes' next block alone: the
    // back edge's block stores nothing.
    let back = text.split("\nback").nth(1).unwrap_or_else(|| panic!("{text}"));
    let edge: String = back.lines().take_while(|l| !l.starts_with("split")).collect::<Vec<_>>().join("\n");
    assert!(!edge.contains("store"), "{edge}");
}

#[test]
fn shared_atomics_of_a_warp_read_the_lanes_offsets_from_the_stack() {
    // A 32-bit shared address register: each lane's read-modify-write takes
    // its offset with one scalar load (extracting it from a vector register
    // would cost two micro-ops).
    let src = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<6>;
.reg .b64 %rd<4>;
.shared .align 4 .b8 bins[1024];
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
cvt.u64.u32 %rd2, %r1;
add.s64 %rd3, %rd1, %rd2;
ld.global.u8 %r2, [%rd3];
shl.b32 %r3, %r2, 2;
mov.u32 %r4, bins;
add.s32 %r5, %r4, %r3;
bar.sync 0;
atom.shared.add.u32 %r1, [%r5], 1;
ret;
}
"#;
    let text = ir(src);
    let helper = text
        .split("\ndefine ")
        .find(|f| f.starts_with("internal <32 x i32> @__anycuda_watom_add_i32_u_plain_idx("))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(helper.matches("store volatile <32 x i32> %x").count(), 1, "{helper}");
    // 32 lanes on the converged path and 32 on the partial one.
    assert_eq!(helper.matches("load volatile i32").count(), 64, "{helper}");
    assert!(!helper.contains("extractelement <32 x i32> %x"), "{helper}");
}

/// A shared tile read four times per loop iteration through one register
/// (plus offsets) that the loop does not write, and a barrier in the loop.
const TILE_LOOP: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<16>;
.reg .b64 %rd<4>;
.reg .pred %q<3>;
.shared .align 4 .b8 tile[2048];
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mov.u32 %r4, tile;
shl.b32 %r5, %r2, 2;
add.s32 %r6, %r4, %r5;
mov.u32 %r7, 0;
mov.u32 %r8, 0;
LOOP:
st.shared.u32 [%r6], %r8;
bar.sync 0;
ld.shared.u32 %r9, [%r6];
ld.shared.u32 %r10, [%r6+128];
ld.shared.u32 %r11, [%r6+256];
ld.shared.u32 %r12, [%r6+384];
add.s32 %r7, %r7, %r9;
add.s32 %r7, %r7, %r10;
add.s32 %r7, %r7, %r11;
add.s32 %r7, %r7, %r12;
bar.sync 0;
add.s32 %r8, %r8, 1;
setp.lt.u32 %q1, %r8, %r1;
@%q1 bra LOOP;
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r7;
ret;
}
"#;

#[test]
fn a_tile_loop_is_lowered_twice_and_its_affine_version_switches_on_no_shape() {
    let text = ir(TILE_LOOP);
    let body = text.split("define i32 @\"__anycuda_thread.k\"").nth(1).expect("the warp function");
    let fast = body.find("\nvaff").expect("an affine version");
    let slow = body[fast..].find("\nvcls").map(|i| fast + i).expect("a general version");
    let join = body[slow..].find("\nvjoin").map(|i| slow + i).expect("a join");
    // A switch on a run-time value (the affine version's switches are on
    // constants, which LLVM folds away).
    let count = |s: &str| s.matches("switch i32 %").count();
    // The general version picks each load's way by the shape, the affine
    // version knows it.
    assert_eq!(count(&body[fast..slow]), 0, "{}", &body[fast..slow]);
    assert!(count(&body[slow..join]) >= 1, "{}", &body[slow..join]);
    assert_eq!(body.matches("\nvaff").count(), 1, "one region: the loads between the barriers");
}

/// A warp-synchronous step over shared memory, then a barrier; `{L}` and
/// `{S}` are the qualifiers of the shared loads and store, `{G}` those of
/// the global load.
const SHARED_STEP: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<12>;
.reg .b64 %rd<4>;
.shared .align 4 .b8 s[1024];
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mov.u32 %r2, s;
shl.b32 %r3, %r1, 2;
add.s32 %r4, %r2, %r3;
ld{L}.shared.u32 %r5, [%r4];
ld{L}.shared.u32 %r6, [%r4+4];
add.s32 %r7, %r5, %r6;
st{S}.shared.u32 [%r4], %r7;
bar.sync 0;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
ld{G}.global.u32 %r8, [%rd3];
st.global.u32 [%rd3], %r8;
ret;
}
"#;

fn shared_step(load: &str, store: &str, global: &str) -> String {
    ir(&SHARED_STEP.replace("{L}", load).replace("{S}", store).replace("{G}", global))
}

#[test]
fn volatile_and_scoped_shared_accesses_compile_as_plain_ones_in_warp_mode() {
    let plain = shared_step("", "", "");
    assert!(!plain.contains("__anycuda_wload") && !plain.contains("__anycuda_wstore"), "{plain}");
    for (load, store) in
        [(".volatile", ".volatile"), (".relaxed.cta", ".relaxed.cta"), (".acquire.cta", ".release.cta"), (".relaxed.gpu", ".volatile")]
    {
        assert_eq!(shared_step(load, store, ""), plain, "{load}/{store}");
    }
    // Global memory, which other blocks' threads access at the same time,
    // keeps its ordered lane-by-lane accesses.
    assert!(shared_step("", "", ".volatile").contains("__anycuda_wload"));
    assert!(shared_step("", "", ".relaxed.gpu").contains("__anycuda_wload"));
}

#[test]
fn arithmetic_of_uniform_registers_is_scalar_code_in_warp_mode() {
    let src = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .b32 %r<12>;
.reg .b64 %rd<8>;
.reg .pred %q<3>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %ctaid.x;
mul.lo.s32 %r3, %r1, %r2;
xor.b32 %r4, %r3, 1234567;
setp.gt.u32 %q1, %r4, 99;
@%q1 shl.b32 %r4, %r4, 3;
mov.u32 %r5, %tid.x;
add.s32 %r6, %r4, %r5;
mul.wide.u32 %rd2, %r5, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r6;
bar.sync 0;
ret;
}
"#;
    let text = ir(src);
    let warp = text.split("define ").skip(1).find(|f| f.contains("<32 x i32>")).expect("a warp function");
    // The uniform values are computed once, as scalars, not as 32 lanes of
    // which one is picked at run time.
    for op in ["xor <32 x i32>", "shl <32 x i32>", "icmp ugt <32 x i32>"] {
        assert!(!warp.contains(op), "{op} in:\n{warp}");
    }
    for op in ["mul i32 ", "xor i32 ", "shl i32 ", "icmp ugt i32 "] {
        assert!(warp.contains(op), "no scalar {op} in:\n{warp}");
    }
    // The lane-varying sum stays a vector.
    assert!(warp.contains("add <32 x i32>"), "{warp}");
}

/// A warp-synchronous inclusive scan in `volatile` shared memory, as
/// pre-Volta CUDA code writes it: a zeroed half warp in front of the
/// warp's values, then five steps of a load a few lanes back and a store.
/// `{X}` is placed before the last step's load.
const WARP_SCAN: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<12>;
.reg .b64 %rd<4>;
.shared .align 16 .b32 s[64];
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
ld.global.u32 %r2, [%rd3];
mov.u32 %r3, s;
and.b32 %r4, %r1, 31;
shl.b32 %r5, %r4, 2;
add.s32 %r6, %r3, %r5;
mov.u32 %r7, 0;
st.volatile.shared.u32 [%r6], %r7;
st.volatile.shared.u32 [%r6+128], %r2;
ld.volatile.shared.u32 %r8, [%r6+124];
add.s32 %r2, %r2, %r8;
st.volatile.shared.u32 [%r6+128], %r2;
ld.volatile.shared.u32 %r8, [%r6+120];
add.s32 %r2, %r2, %r8;
st.volatile.shared.u32 [%r6+128], %r2;
ld.volatile.shared.u32 %r8, [%r6+112];
add.s32 %r2, %r2, %r8;
st.volatile.shared.u32 [%r6+128], %r2;
ld.volatile.shared.u32 %r8, [%r6+96];
add.s32 %r2, %r2, %r8;
st.volatile.shared.u32 [%r6+128], %r2;
{X}
ld.volatile.shared.u32 %r8, [%r6+64];
add.s32 %r2, %r2, %r8;
st.volatile.shared.u32 [%r6+128], %r2;
st.global.u32 [%rd3], %r2;
bar.sync 0;
ret;
}
"#;

#[test]
fn a_warp_scans_loads_of_its_own_stores_are_shuffles_of_the_stored_lanes() {
    // Every step's load reads lanes the two stores before it wrote: each
    // has a path that shuffles the stored vectors (taken at run time when
    // those stores were whole-warp and consecutive) beside the load.
    //
    // `%r6` (`s + 4 * (tid & 31)`) is lane-affine, so the run of accesses
    // after its last write is lowered twice (`lower_versioned`: once for
    // warps whose lanes are consecutive, once in general), each version
    // with its five forwarding paths.
    let text = ir(&WARP_SCAN.replace("{X}", ""));
    assert_eq!(text.lines().filter(|l| l.starts_with("vaff")).count(), 1, "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("fwd")).count(), 2 * 5, "{text}");
    // The fast tier lowers such runs outside loops once.
    let fast = warp_ir_in(&WARP_SCAN.replace("{X}", ""), compiler::Tier::Fast);
    assert_eq!(fast.lines().filter(|l| l.starts_with("vaff")).count(), 0, "{fast}");
    // The first step takes lane 0 from the zeroed half warp's last lane
    // (element 31 of the first store: 63 in a shuffle with it second) and
    // then, keeping lane 0, lanes 1-31 from the values' first 31 elements.
    let poison: String = (1..32).map(|_| ", i32 poison").collect();
    assert!(text.contains(&format!("<32 x i32> <i32 63{poison}>")), "{text}");
    let values: String = (32..63).map(|e| format!(", i32 {e}")).collect();
    assert!(text.contains(&format!("<32 x i32> <i32 0{values}>")), "{text}");
    // A store through another register may overwrite those bytes, and an
    // atomic may: the last load, after it, loads. (After the store through
    // `%r9`, written there, only the last step is lowered twice: four
    // forwarding paths in all; the atomic writes no address register, so
    // the whole scan is lowered twice: four in each version.)
    for (between, paths) in
        [("add.s32 %r9, %r6, 4;\nst.volatile.shared.u32 [%r9+128], %r7;", 4), ("atom.shared.exch.b32 %r10, [s+132], %r7;", 2 * 4)]
    {
        let text = ir(&WARP_SCAN.replace("{X}", between));
        assert_eq!(text.lines().filter(|l| l.starts_with("vaff")).count(), 1, "{between}\n{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("fwd")).count(), paths, "{between}\n{text}");
    }
    // An address register written between store and load: no forwarding
    // from what it addressed before.
    let text = ir(&WARP_SCAN.replace("{X}", "add.s32 %r6, %r6, 0;"));
    assert_eq!(text.lines().filter(|l| l.starts_with("fwd")).count(), 4, "{text}");
}

/// A warp-mode kernel loading and storing through a per-lane address: a
/// block-wide barrier, a load through an index loaded from memory, a
/// store beside it.
const LANE_ADDRESSES: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<4>;
.reg .b64 %rd<6>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.u32 %r2, [%rd3];
bar.sync 0;
mul.wide.u32 %rd4, %r2, 4;
add.u64 %rd5, %rd1, %rd4;
ld.global.u32 %r3, [%rd5];
st.global.u32 [%rd5+4096], %r3;
ret;
}
"#;

#[test]
fn the_fast_tier_chooses_an_accesss_path_in_a_shared_helper_and_the_optimised_tier_inline() {
    let ir_of = |tier| warp_ir_in(LANE_ADDRESSES, tier);
    let fast = ir_of(compiler::Tier::Fast);
    let kernel = warp_function(&fast);
    // Both global loads through a lane address and the store call the
    // helpers, which are defined once each; the kernel itself gathers and
    // scatters nothing. The first load's address is affine: its call
    // passes the consecutive shape when the warp holds the affine bit;
    // the others' addresses are not (their calls pass -1).
    assert_eq!(kernel.matches("call <32 x i32> @__anycuda_wld_shaped_i32_s4_n1(").count(), 2, "{fast}");
    assert_eq!(kernel.matches(", i32 1, i32 -1\n").count(), 1, "{kernel}");
    assert_eq!(kernel.matches(", i32 -1)\n").count(), 1, "{kernel}");
    assert_eq!(kernel.matches(", i32 -1, <32 x i32> %").count(), 1, "{kernel}");
    assert_eq!(kernel.matches("call void @__anycuda_wst_shaped_i32_s4_n1(").count(), 1, "{fast}");
    // The helpers are compiled once per process, not in the unit: it
    // declares them (see the next test).
    assert_eq!(fast.matches("declare <32 x i32> @__anycuda_wld_shaped_i32_s4_n1(").count(), 1, "{fast}");
    assert!(!fast.contains("define internal <32 x i32> @__anycuda_wld_shaped_"), "{fast}");
    assert!(!kernel.contains("@llvm.masked.gather") && !kernel.contains("@llvm.masked.scatter"), "{kernel}");
    let optimised = ir_of(compiler::Tier::Optimized);
    assert!(!optimised.contains("_shaped_"), "{optimised}");
    let kernel = warp_function(&optimised);
    // Inline where the host gathers in one instruction (AVX-512), else
    // through the shared lane-by-lane helpers.
    if compiler::host_has_avx512f() {
        assert!(kernel.contains("@llvm.masked.gather") && kernel.contains("@llvm.masked.scatter"), "{kernel}");
    } else {
        assert!(kernel.contains("@__anycuda_wgather_v32i32_a4(") && kernel.contains("@__anycuda_wscatter_v32i32_a4("), "{kernel}");
    }
}

#[test]
fn fast_tier_units_hand_back_the_helpers_they_call_and_each_compiles_alone() {
    let module = ptx::parse(LANE_ADDRESSES).expect("parses");
    let compile = |tier| {
        let opts = compiler::Options { tier, warp: compiler::WarpMode::Always, strict_affine: false, memcheck: false };
        compiler::compile_unit(&module, LANE_ADDRESSES, &compiler::Target::HostCpu, &opts, compiler::Unit::Module).expect("compiles")
    };
    let fast = compile(compiler::Tier::Fast);
    let mut names: Vec<&str> = fast.helpers.iter().map(|h| h.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["__anycuda_wld_shaped_i32_s4_n1", "__anycuda_wst_shaped_i32_s4_n1"], "{:?}", fast.helpers);
    let undefined = |object: &[u8], name: &str| {
        use object::{Object, ObjectSymbol};
        let file = object::File::parse(object).expect("an object");
        let found = file.symbols().find(|s| s.name() == Ok(name));
        found.map(|s| s.is_undefined())
    };
    for h in &fast.helpers {
        // The unit names it and leaves it undefined; its own module defines
        // it, and compiles alone to an object that does.
        assert_eq!(undefined(&fast.object, &h.name), Some(true), "{}", h.name);
        assert!(h.ir.contains("define <32 x") || h.ir.contains("define void @"), "{}", h.ir);
        let object = compiler::compile_helper(&compiler::Target::HostCpu, h).expect("the helper compiles");
        assert_eq!(undefined(&object, &h.name), Some(false), "{}", h.name);
    }
    // The optimised tier keeps its code inline and hands back nothing.
    assert!(compile(compiler::Tier::Optimized).helpers.is_empty());
}

/// A register written in the kernel's first block, which every lane runs,
/// and again in a block only some lanes run.
const CONVERGENT_WRITES: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .pred %q<2>;
.reg .b32 %r<4>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
add.s32 %r2, %r1, 7;
setp.lt.u32 %q1, %r1, 5;
@%q1 bra SKIP;
add.s32 %r2, %r2, 100;
SKIP:
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
bar.sync 0;
ret;
}
"#;

#[test]
fn unguarded_writes_in_blocks_every_lane_runs_select_no_lanes() {
    // Block 0 is convergent: its writes reach every lane that reads
    // registers again, so they store the new vector as it is. Block 1
    // runs for some lanes only: its write keeps the other lanes' values.
    let text = ir(CONVERGENT_WRITES);
    // (Selects of a register value; the lanes' next block is selected
    // from constants.)
    let selects = |mask: &str| text.lines().filter(|l| l.contains(&format!("select <32 x i1> {mask}, <32 x i32> %"))).count();
    assert_eq!(selects("%wm0"), 0, "{text}");
    assert_eq!(selects("%wm1"), 1, "{text}");
}

/// Uniform registers (a parameter, a load from an address every lane
/// shares) written in the kernel's first block, which every lane runs.
const CONVERGENT_UNIFORM_WRITE: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .pred %q<2>;
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
ld.global.u32 %r3, [%rd1+4];
mov.u32 %r1, %tid.x;
bar.sync 0;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
ret;
}
"#;

#[test]
fn uniform_writes_in_blocks_every_lane_runs_keep_no_old_value() {
    // Some lane runs a convergent block, so the write takes the first
    // executing lane's value without a select against the register's old
    // value for a write by no lane (nor, for a frame-resident register, a
    // load of it).
    let text = warp_ir_in(CONVERGENT_UNIFORM_WRITE, compiler::Tier::Optimized);
    let kernel = warp_function(&text);
    let keeps_old = kernel
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            // `%x = select i1 %c, i64 %a, i64 %b` (of any scalar type)
            w.len() == 9 && w[2] == "select" && w[3] == "i1" && w[5] == w[7] && w[6].starts_with('%') && w[8].starts_with('%')
        })
        .count();
    assert_eq!(keeps_old, 0, "{kernel}");
    assert!(kernel.contains("@llvm.cttz.i32("), "the first executing lane's value: {kernel}");
}

/// A forward branch on a parameter's test in the kernel's first block,
/// which every lane runs, then one on the thread index.
const UNIFORM_BRANCH: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
.reg .pred %q<4>;
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r2, [n];
mov.u32 %r1, %tid.x;
setp.eq.s32 %q1, %r2, 0;
@%q1 bra DONE;
setp.lt.u32 %q2, %r1, %r2;
@%q2 bra DONE;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
DONE:
bar.sync 0;
ret;
}
"#;

#[test]
fn uniform_forward_branches_in_blocks_every_lane_runs_go_on_directly() {
    // The parameter's test branches on the predicate itself (to the next
    // block, or to the target unless other lanes wait); the thread index's
    // test looks at which lanes take it and which fall through.
    let text = warp_ir_in(UNIFORM_BRANCH, compiler::Tier::Fast);
    let kernel = warp_function(&text);
    let on_predicate = kernel.lines().filter(|l| l.trim_start().starts_with("br i1 %") && l.contains(", label %B1")).count();
    assert_eq!(on_predicate, 1, "{kernel}");
    assert_eq!(kernel.lines().filter(|l| l.starts_with("utaken")).count(), 1, "{kernel}");
    assert_eq!(kernel.lines().filter(|l| l.starts_with("jumps")).count(), 1, "{kernel}");
}

/// Where the value stored by the write that produced the line containing
/// `op` goes: the pointer operand of the `store` of that value.
fn stored_to(f: &str, op: &str) -> String {
    let def = f.lines().find(|l| l.contains(op)).unwrap_or_else(|| panic!("no `{op}` in\n{f}"));
    let name = def.trim().split(" = ").next().expect("a definition").to_string();
    let store = f
        .lines()
        .find(|l| l.trim().starts_with("store ") && l.contains(&format!(" {name}, ptr ")))
        .unwrap_or_else(|| panic!("no store of {name} in\n{f}"));
    store.split(", ptr ").nth(1).expect("a pointer").split(',').next().expect("a pointer").trim().to_string()
}

#[test]
fn registers_read_across_blocks_live_in_the_frame_in_the_fast_tier_only() {
    // %r4 is written before a divergent branch and read after the join;
    // %r3 only in the block that writes it.
    let src = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
.reg .pred %q<2>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 8;
add.s64 %rd3, %rd1, %rd2;
ld.global.u32 %r2, [%rd3];
mul.lo.s32 %r4, %r2, 3;
and.b32 %r3, %r2, 1;
setp.eq.u32 %q1, %r3, 0;
@%q1 bra SKIP;
add.s32 %r5, %r4, 1;
st.global.u32 [%rd3], %r5;
SKIP:
st.global.u32 [%rd3+4], %r4;
ret;
}
"#;
    let frame_slot = |f: &str, p: &str| f.lines().any(|l| l.trim().starts_with(&format!("{p} = getelementptr i8, ptr %frame")));
    let fast = warp_function(&warp_ir_in(src, compiler::Tier::Fast));
    let product = stored_to(&fast, "splat (i32 3)");
    assert!(frame_slot(&fast, &product), "the fast tier keeps %r4 in the frame, not at {product}:\n{fast}");
    let masked = stored_to(&fast, "splat (i32 1)");
    assert!(!frame_slot(&fast, &masked), "%r3 is read in its own block only:\n{fast}");
    let opt = warp_function(&warp_ir_in(src, compiler::Tier::Optimized));
    let product = stored_to(&opt, "splat (i32 3)");
    assert!(product.starts_with("%a") && !frame_slot(&opt, &product), "the optimised tier keeps %r4 in a value, not at {product}:\n{opt}");
    // Each tier's unit states its own frame: the fast tier's holds %r4's
    // 128 bytes, the optimised tier's does not.
    let frame_bytes = |tier| {
        let module = ptx::parse(src).unwrap_or_else(|d| panic!("test PTX must parse: {d}"));
        let opts = compiler::Options { tier, warp: compiler::WarpMode::Always, strict_affine: false, memcheck: false };
        compiler::describe_with_options(&module, &compiler::Target::HostCpu, &opts).kernels[0].frame_bytes
    };
    let (fast, opt) = (frame_bytes(compiler::Tier::Fast), frame_bytes(compiler::Tier::Optimized));
    assert!(fast >= opt + 128, "fast-tier frame {fast} bytes, optimised {opt}");
}

/// A warp of `dp4a` and `prmt` with selectors from data (llama.cpp's
/// quantised matrix-vector kernels).
const BYTE_OPS: &str = r#".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<10>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 16;
add.s64 %rd3, %rd1, %rd2;
ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd3];
dp4a.s32.u32 %r6, %r2, %r3, %r4;
prmt.b32 %r7, %r2, %r3, %r5;
add.s32 %r8, %r6, %r7;
st.global.u32 [%rd3], %r8;
ret;
}
"#;

#[cfg(target_arch = "x86_64")]
#[test]
fn warp_mode_dp4a_and_prmt_are_x86_multiply_adds_and_byte_shuffles() {
    for tier in [compiler::Tier::Fast, compiler::Tier::Optimized] {
        let f = warp_function(&warp_ir_in(BYTE_OPS, tier));
        // `pmaddwd` and `pshufb` in some width (every x86-64 host has
        // SSE2; SSSE3 is assumed of any host this runs on).
        assert!(f.contains("@llvm.x86.") && f.contains(".pmadd"), "{f}");
        assert!(f.contains(".pshuf.b"), "{f}");
        // Neither byte extractions, products per byte, nor the 64-bit
        // shifts of both operands per result byte.
        // (The warp's thread indices are products of its own.)
        assert!(!f.lines().any(|l| l.trim_start().starts_with("%t") && l.contains(" = mul <32 x i32>")), "{f}");
        assert!(!f.contains("sext <32 x i8>") && !f.contains("lshr <32 x i64>"), "{f}");
    }
}
