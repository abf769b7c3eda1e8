//! Arrays, texture and surface objects through the C ABI on the CPU
//! backend, with PTX written for the forms nvcc's C++ does not reach
//! (`tld4` of other components, `txq`/`suq`, vector and 8/64-bit `suld`,
//! integer coordinates on layered arrays, the clamp modes, `txq.level`),
//! mipmapped textures (`tex.level`, `tex.grad`, `tex.base`), formatted
//! stores (`sust.p`) and reductions (`sured.b`, `sured.p`), `istypep`, the legacy
//! array copies, and the error paths: an out-of-range `sust.trap`, a
//! destroyed texture object, and instructions anycuda refuses, named in
//! the error.
//!
//! Its own test executable: the library reads its backend once per process.

mod common;
use common::*;
use cuda_types::{
    CUarray_format, CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY_DESCRIPTOR, CUDA_RESOURCE_DESC, CUDA_RESOURCE_VIEW_DESC, CUDA_TEXTURE_DESC,
};
use std::ffi::c_void;
use std::ptr::null_mut;

const PTX: &str = concat!(
    ".version 8.6\n.target sm_80\n.address_size 64\n",
    // tld4 of the green and alpha components at (x, y)
    ".visible .entry gather_ga(.param .u64 t, .param .u64 out, .param .f32 x, .param .f32 y) {\n",
    " .reg .b64 %rd<3>; .reg .f32 %f<12>;\n",
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out]; ld.param.f32 %f1, [x]; ld.param.f32 %f2, [y];\n",
    " tld4.g.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1, %f2}];\n",
    " tld4.a.2d.v4.f32.f32 {%f7, %f8, %f9, %f10}, [%rd1, {%f1, %f2}];\n",
    " st.global.v4.f32 [%rd2], {%f3, %f4, %f5, %f6};\n",
    " st.global.v4.f32 [%rd2+16], {%f7, %f8, %f9, %f10};\n",
    " ret;\n}\n",
    // txq on a texture, suq on a surface
    ".visible .entry queries(.param .u64 t, .param .u64 s, .param .u64 out) {\n",
    " .reg .b64 %rd<4>; .reg .b32 %r<12>;\n",
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [s]; ld.param.u64 %rd3, [out];\n",
    " txq.width.b32 %r1, [%rd1]; txq.height.b32 %r2, [%rd1]; txq.array_size.b32 %r3, [%rd1];\n",
    " txq.normalized_coords.b32 %r4, [%rd1]; txq.filter_mode.b32 %r5, [%rd1]; txq.num_mipmap_levels.b32 %r6, [%rd1];\n",
    " suq.width.b32 %r7, [%rd2]; suq.height.b32 %r8, [%rd2]; suq.depth.b32 %r9, [%rd2];\n",
    " st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};\n",
    " st.global.v4.u32 [%rd3+16], {%r5, %r6, %r7, %r8};\n",
    " st.global.u32 [%rd3+32], %r9;\n",
    " txq.addr_mode_0.b32 %r9, [%rd1]; txq.addr_mode_1.b32 %r10, [%rd1]; txq.addr_mode_2.b32 %r11, [%rd1];\n",
    " st.global.v2.u32 [%rd3+36], {%r9, %r10};\n",
    " st.global.u32 [%rd3+44], %r11;\n",
    " ret;\n}\n",
    // integer coordinates on a 1-D layered array: layer 1, texels -1, 2, 9 (clamped)
    ".visible .entry int_coords(.param .u64 t, .param .u64 out) {\n",
    " .reg .b64 %rd<3>; .reg .b32 %r<16>;\n",
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out];\n",
    " mov.u32 %r1, 1; mov.u32 %r2, -1; mov.u32 %r3, 2; mov.u32 %r4, 9;\n",
    " tex.a1d.v4.u32.s32 {%r5, %r6, %r7, %r8}, [%rd1, {%r1, %r2}];\n",
    " tex.a1d.v4.u32.s32 {%r9, %r10, %r11, %r12}, [%rd1, {%r1, %r3}];\n",
    " tex.a1d.v4.u32.s32 {%r13, %r14, %r15, %r8}, [%rd1, {%r1, %r4}];\n",
    " st.global.v4.u32 [%rd2], {%r5, %r9, %r13, %r12};\n",
    " ret;\n}\n",
    // suld of 8-bit vectors and 64-bit pairs in each boundary mode
    ".visible .entry surface_loads(.param .u64 s8, .param .u64 s64, .param .u64 out) {\n",
    " .reg .b64 %rd<8>; .reg .b32 %r<16>; .reg .b16 %h<8>;\n",
    " ld.param.u64 %rd1, [s8]; ld.param.u64 %rd2, [s64]; ld.param.u64 %rd3, [out];\n",
    " mov.u32 %r1, 4; mov.u32 %r2, 1; mov.u32 %r3, 400; mov.u32 %r4, 77;\n",
    " suld.b.2d.v4.b8.trap {%h1, %h2, %h3, %h4}, [%rd1, {%r1, %r2}];\n",
    " st.global.v4.u8 [%rd3], {%h1, %h2, %h3, %h4};\n",
    " suld.b.2d.v4.b8.clamp {%h1, %h2, %h3, %h4}, [%rd1, {%r3, %r4}];\n",
    " st.global.v4.u8 [%rd3+4], {%h1, %h2, %h3, %h4};\n",
    " suld.b.2d.v4.b8.zero {%h1, %h2, %h3, %h4}, [%rd1, {%r3, %r2}];\n",
    " st.global.v4.u8 [%rd3+8], {%h1, %h2, %h3, %h4};\n",
    " mov.u32 %r5, 16;\n",
    " suld.b.1d.v2.b64.trap {%rd4, %rd5}, [%rd2, {%r5}];\n",
    " st.global.v2.u64 [%rd3+16], {%rd4, %rd5};\n",
    " sust.b.1d.v2.b64.clamp [%rd2, {%r3}], {%rd5, %rd4};\n",
    " ret;\n}\n",
    // a store out of range in the trap mode
    ".visible .entry store_trap(.param .u64 s) {\n",
    " .reg .b64 %rd<2>; .reg .b32 %r<3>; .reg .b16 %h<2>;\n",
    " ld.param.u64 %rd1, [s]; mov.u32 %r1, 4000; mov.b16 %h1, 7;\n",
    " sust.b.1d.b16.trap [%rd1, {%r1}], %h1;\n",
    " ret;\n}\n",
    // a 2-D fetch through a handle
    ".visible .entry fetch(.param .u64 t, .param .u64 out) {\n",
    " .reg .b64 %rd<3>; .reg .f32 %f<8>;\n",
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out];\n",
    " mov.f32 %f1, 0f3F000000;\n",
    " tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];\n",
    " st.global.f32 [%rd2], %f2;\n",
    " ret;\n}\n",
    // module-scope texture and surface references
    ".global .texref tref;\n.global .surfref sref;\n",
    ".visible .entry by_ref(.param .u64 out) {\n",
    " .reg .b64 %rd<3>; .reg .b32 %r<8>;\n",
    " ld.param.u64 %rd1, [out]; mov.u32 %r1, 3;\n",
    " tex.1d.v4.s32.s32 {%r2, %r3, %r4, %r5}, [tref, {%r1}];\n",
    " st.global.u32 [%rd1], %r2;\n",
    " txq.width.b32 %r6, [tref];\n",
    " st.global.u32 [%rd1+4], %r6;\n",
    " mov.u32 %r1, 4;\n",
    " suld.b.1d.b32.trap {%r2}, [sref, {%r1}];\n",
    " st.global.u32 [%rd1+8], %r2;\n",
    " ret;\n}\n",
    // mipmaps: explicit levels, gradients, the base level, level queries
    ".visible .entry mips(.param .u64 t, .param .u64 out) {\n",
    " .reg .b64 %rd<3>; .reg .f32 %f<12>; .reg .b32 %r<4>;\n",
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out]; mov.f32 %f1, 0f3F000000; mov.f32 %f6, 0f3F800000;\n",
    " tex.level.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}], %f6;\n",
    " st.global.f32 [%rd2], %f2;\n",
    " tex.level.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}], 0f40000000;\n",
    " st.global.f32 [%rd2+4], %f2;\n",
    " mov.f32 %f7, 0f3E000000; mov.f32 %f8, 0f00000000;\n",
    " tex.grad.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}], {%f7, %f8}, {%f8, %f1};\n",
    " st.global.f32 [%rd2+8], %f2;\n",
    " tex.base.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];\n",
    " st.global.f32 [%rd2+12], %f2;\n",
    " mov.u32 %r1, 1; mov.u32 %r2, 2;\n",
    " txq.level.width.b32 %r3, [%rd1], %r1;\n",
    " st.global.u32 [%rd2+16], %r3;\n",
    " txq.level.height.b32 %r3, [%rd1], %r2;\n",
    " st.global.u32 [%rd2+20], %r3;\n",
    " ret;\n}\n",
    // istypep of four values as texture, sampler and surface
    ".visible .entry types(.param .u64 vals, .param .u64 out) {\n",
    " .reg .b64 %rd<8>; .reg .b32 %r<4>; .reg .pred %p<4>;\n",
    " ld.param.u64 %rd1, [vals]; ld.param.u64 %rd2, [out]; mov.u32 %r3, %tid.x;\n",
    " mul.wide.u32 %rd3, %r3, 8; add.s64 %rd4, %rd1, %rd3; ld.global.u64 %rd5, [%rd4];\n",
    " istypep.texref %p1, %rd5; istypep.samplerref %p2, %rd5; istypep.surfref %p3, %rd5;\n",
    " selp.u32 %r1, 1, 0, %p1; selp.u32 %r2, 2, 0, %p2; add.u32 %r1, %r1, %r2; selp.u32 %r2, 4, 0, %p3; add.u32 %r1, %r1, %r2;\n",
    " mul.wide.u32 %rd6, %r3, 4; add.s64 %rd7, %rd2, %rd6; st.global.u32 [%rd7], %r1;\n",
    " ret;\n}\n",
    // refused forms
    ".visible .entry offsets(.param .u64 t, .param .u64 out) {\n",
    " .reg .b64 %rd<3>; .reg .f32 %f<8>; .reg .b32 %r<2>;\n",
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out]; mov.f32 %f1, 0f3F000000; mov.u32 %r1, 1;\n",
    " tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}], {%r1, %r1};\n",
    " st.global.f32 [%rd2], %f2;\n",
    " ret;\n}\n",
    // formatted stores: element 1 of a 1-D surface; two of its channels
    ".visible .entry formatted(.param .u64 s) {\n",
    " .reg .b64 %rd<2>; .reg .b32 %r<4>;\n",
    " ld.param.u64 %rd1, [s]; mov.u32 %r1, 1; mov.u32 %r2, 7; mov.u32 %r3, 8;\n",
    " sust.p.1d.v2.b32.trap [%rd1, {%r1}], {%r2, %r3};\n",
    " ret;\n}\n",
    // reductions by every thread: a u32 surface (bytes 0, 4, 8, 12), an
    // s32 one through .p (element 1), a packed u8 one (a u32 at row 1,
    // which is not 4-byte aligned)
    ".visible .entry reductions(.param .u64 s, .param .u64 si, .param .u64 s8) {\n",
    " .reg .b64 %rd<4>; .reg .b32 %r<8>;\n",
    " ld.param.u64 %rd1, [s]; ld.param.u64 %rd2, [si]; ld.param.u64 %rd3, [s8];\n",
    " mov.u32 %r1, 0; mov.u32 %r2, 5; mov.u32 %r3, -3; mov.u32 %r4, 240; mov.u32 %r5, 3840;\n",
    " sured.b.add.1d.u32.trap [%rd1, {%r1}], %r2;\n",
    " mov.u32 %r1, 4;\n",
    " sured.b.min.1d.s32.trap [%rd1, {%r1}], %r3;\n",
    " mov.u32 %r1, 8;\n",
    " sured.b.max.1d.u32.trap [%rd1, {%r1}], %r3;\n",
    " mov.u32 %r1, 12;\n",
    " sured.b.and.1d.b32.trap [%rd1, {%r1}], %r4;\n",
    " mov.u32 %r1, 3;\n",
    " sured.p.or.1d.b32.trap [%rd1, {%r1}], %r5;\n",
    " mov.u32 %r1, 1;\n",
    " sured.p.min.1d.b32.trap [%rd2, {%r1}], %r3;\n",
    " mov.u32 %r1, 0; mov.u32 %r6, 1;\n",
    " sured.b.add.2d.u32.trap [%rd3, {%r1, %r6}], %r6;\n",
    " ret;\n}\n",
    // a formatted store into 8-bit channels: refused when it runs
    ".visible .entry formatted_narrow(.param .u64 s) {\n",
    " .reg .b64 %rd<2>; .reg .b32 %r<3>;\n",
    " ld.param.u64 %rd1, [s]; mov.u32 %r1, 0;\n",
    " sust.p.1d.v4.b32.trap [%rd1, {%r1}], {%r1, %r1, %r1, %r1};\n",
    " ret;\n}\n",
    "\0"
);

type Dptr = u64;
const FLOAT: CUarray_format = CUarray_format::CU_AD_FORMAT_FLOAT;

#[test]
fn texture_and_surface_instructions_and_errors() {
    let l = Lib::open_cpu();
    api!(l;
        cuInit: fn(u32);
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
        cuDevicePrimaryCtxReset_v2: fn(i32);
        cuCtxSetCurrent: fn(Ptr);
        cuCtxSynchronize: fn();
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const i8);
        cuMemAlloc_v2: fn(*mut Dptr, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, Dptr, usize);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuArrayCreate_v2: fn(*mut Ptr, *const CUDA_ARRAY_DESCRIPTOR);
        cuArray3DCreate_v2: fn(*mut Ptr, *const CUDA_ARRAY3D_DESCRIPTOR);
        cuArrayGetDescriptor_v2: fn(*mut CUDA_ARRAY_DESCRIPTOR, Ptr);
        cuArray3DGetDescriptor_v2: fn(*mut CUDA_ARRAY3D_DESCRIPTOR, Ptr);
        cuArrayDestroy: fn(Ptr);
        cuArrayGetSparseProperties: fn(*mut c_void, Ptr);
        cuArrayGetMemoryRequirements: fn(*mut c_void, Ptr, i32);
        cuMipmappedArrayCreate: fn(*mut Ptr, *const CUDA_ARRAY3D_DESCRIPTOR, u32);
        cuMipmappedArrayGetLevel: fn(*mut Ptr, Ptr, u32);
        cuMipmappedArrayDestroy: fn(Ptr);
        cuMemcpyHtoA_v2: fn(Ptr, usize, *const c_void, usize);
        cuMemcpyAtoH_v2: fn(*mut c_void, Ptr, usize, usize);
        cuMemcpyAtoA_v2: fn(Ptr, usize, Ptr, usize, usize);
        cuMemcpyAtoD_v2: fn(Dptr, Ptr, usize, usize);
        cuMemcpyDtoA_v2: fn(Ptr, usize, Dptr, usize);
        cuTexObjectCreate: fn(*mut u64, *const CUDA_RESOURCE_DESC, *const CUDA_TEXTURE_DESC, *const CUDA_RESOURCE_VIEW_DESC);
        cuTexObjectDestroy: fn(u64);
        cuTexObjectGetResourceDesc: fn(*mut CUDA_RESOURCE_DESC, u64);
        cuTexObjectGetTextureDesc: fn(*mut CUDA_TEXTURE_DESC, u64);
        cuTexObjectGetResourceViewDesc: fn(*mut CUDA_RESOURCE_VIEW_DESC, u64);
        cuSurfObjectCreate: fn(*mut u64, *const CUDA_RESOURCE_DESC);
        cuSurfObjectDestroy: fn(u64);
        cuModuleGetTexRef: fn(*mut Ptr, Ptr, *const i8);
        cuModuleGetSurfRef: fn(*mut Ptr, Ptr, *const i8);
        cuTexRefSetFormat: fn(Ptr, CUarray_format, i32);
        cuTexRefSetAddress_v2: fn(*mut usize, Ptr, Dptr, usize);
        cuTexRefSetFlags: fn(Ptr, u32);
        cuTexRefGetAddress_v2: fn(*mut Dptr, Ptr);
        cuTexRefGetFormat: fn(*mut CUarray_format, *mut i32, Ptr);
        cuTexRefSetArray: fn(Ptr, Ptr, u32);
        cuSurfRefSetArray: fn(Ptr, Ptr, u32);
        cuTexRefSetMipmappedArray: fn(Ptr, Ptr, u32);
        cuTexRefSetMipmapFilterMode: fn(Ptr, u32);
        cuTexRefSetMipmapLevelBias: fn(Ptr, f32);
        cuTexRefSetMipmapLevelClamp: fn(Ptr, f32, f32);
        cuTexRefSetMaxAnisotropy: fn(Ptr, u32);
        cuTexRefGetMipmapFilterMode: fn(*mut u32, Ptr);
        cuTexRefGetMipmapLevelBias: fn(*mut f32, Ptr);
        cuTexRefGetMipmapLevelClamp: fn(*mut f32, *mut f32, Ptr);
        cuTexRefGetMaxAnisotropy: fn(*mut i32, Ptr);
        cuTexRefGetMipmappedArray: fn(*mut Ptr, Ptr);
        cuTexRefCreate: fn(*mut Ptr);
        cuTexRefDestroy: fn(Ptr);
        cuTexRefGetArray: fn(*mut Ptr, Ptr);
        cuMemcpyHtoD_v2: fn(Dptr, *const c_void, usize);
    );
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut ctx: Ptr = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(ctx), SUCCESS);
        let mut m: Ptr = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, PTX.as_ptr().cast()), SUCCESS);
        let func = |name: &str| {
            let mut f: Ptr = null_mut();
            let n = std::ffi::CString::new(name).expect("name");
            assert_eq!(cuModuleGetFunction(&mut f, m, n.as_ptr()), SUCCESS, "{name}");
            f
        };
        let launch = |f: Ptr, args: &mut [*mut c_void]| cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut());
        let alloc = |n: usize| {
            let mut p: Dptr = 0;
            assert_eq!(cuMemAlloc_v2(&mut p, n), SUCCESS);
            p
        };
        let array_res = |a: Ptr| {
            let mut r = CUDA_RESOURCE_DESC::default();
            r.res[0] = a as u64;
            r
        };

        // 3 x 2 float4 array: tld4 of green and alpha.
        let mut a4: Ptr = null_mut();
        let d4 = CUDA_ARRAY_DESCRIPTOR { Width: 3, Height: 2, Format: FLOAT, NumChannels: 4 };
        assert_eq!(cuArrayCreate_v2(&mut a4, &d4), SUCCESS);
        let mut got = CUDA_ARRAY_DESCRIPTOR::default();
        assert_eq!(cuArrayGetDescriptor_v2(&mut got, a4), SUCCESS);
        assert_eq!(got, d4);
        let texels: Vec<f32> = (0..24).map(|i| i as f32).collect();
        cuda_copy_3d_to_array(&l, a4, texels.as_ptr().cast(), 48, 2, 1);
        let mut d3: CUDA_ARRAY3D_DESCRIPTOR = std::mem::zeroed();
        assert_eq!(cuArray3DGetDescriptor_v2(&mut d3, a4), SUCCESS);
        assert_eq!((d3.Width, d3.Height, d3.Depth, d3.NumChannels), (3, 2, 0, 4));
        // The legacy 1-D copies address the first row.
        let other: Vec<f32> = (100..112).map(|i| i as f32).collect();
        assert_eq!(cuMemcpyHtoA_v2(a4, 16, other.as_ptr().cast(), 16), SUCCESS);
        assert_eq!(cuMemcpyHtoA_v2(a4, 0, texels.as_ptr().cast(), 96), INVALID_VALUE, "past the first row");
        let stage = alloc(48);
        cuda_copy_htod(&l, stage, &other);
        let mut row: Ptr = null_mut();
        assert_eq!(cuArrayCreate_v2(&mut row, &CUDA_ARRAY_DESCRIPTOR { Width: 3, Height: 0, Format: FLOAT, NumChannels: 4 }), SUCCESS);
        assert_eq!(cuMemcpyDtoA_v2(row, 0, stage, 48), SUCCESS);
        let dev = alloc(96);
        let mut back = [0f32; 12];
        assert_eq!(cuMemcpyAtoD_v2(dev, row, 32, 16), SUCCESS);
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), dev, 16), SUCCESS);
        assert_eq!(&back[..4], &other[8..12], "AtoD from an offset");
        assert_eq!(cuMemcpyAtoA_v2(a4, 32, row, 32, 16), SUCCESS);
        assert_eq!(cuMemcpyAtoA_v2(a4, 32, row, 32, 32), INVALID_VALUE, "past the end of both");
        assert_eq!(cuMemcpyAtoH_v2(back.as_mut_ptr().cast(), a4, 0, 48), SUCCESS);
        let mut image = texels.clone();
        image[4..8].copy_from_slice(&other[..4]);
        image[8..12].copy_from_slice(&other[8..12]);
        assert_eq!(&back[..], &image[..12], "row 0 after HtoA and AtoA");

        let td = CUDA_TEXTURE_DESC { addressMode: [1, 1, 1], ..Default::default() };
        let mut t: u64 = 0;
        assert_eq!(cuTexObjectCreate(&mut t, &array_res(a4), &td, std::ptr::null()), SUCCESS);
        let out = alloc(64);
        let (mut x, mut y) = (1.2f32, 0.7f32);
        let (mut tp, mut op) = (t, out);
        let mut args =
            [(&mut tp as *mut u64).cast(), (&mut op as *mut u64).cast(), (&mut x as *mut f32).cast(), (&mut y as *mut f32).cast()];
        assert_eq!(launch(func("gather_ga"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut g = [0f32; 8];
        assert_eq!(cuMemcpyDtoH_v2(g.as_mut_ptr().cast(), out, 32), SUCCESS);
        // The footprint of (1.2, 0.7): texels i = 0..1, j = 0..1.
        let at = |i: usize, j: usize, c: usize| image[j * 12 + i * 4 + c];
        assert_eq!(g, [at(0, 1, 1), at(1, 1, 1), at(1, 0, 1), at(0, 0, 1), at(0, 1, 3), at(1, 1, 3), at(1, 0, 3), at(0, 0, 3)]);
        let mut rd = CUDA_RESOURCE_DESC::default();
        assert_eq!(cuTexObjectGetResourceDesc(&mut rd, t), SUCCESS);
        assert_eq!((rd.resType, rd.res[0]), (0, a4 as u64));
        let mut tdesc = CUDA_TEXTURE_DESC::default();
        assert_eq!(cuTexObjectGetTextureDesc(&mut tdesc, t), SUCCESS);
        assert_eq!(tdesc, td);
        let mut view: CUDA_RESOURCE_VIEW_DESC = std::mem::zeroed();
        assert_eq!(cuTexObjectGetResourceViewDesc(&mut view, t), INVALID_VALUE, "created without a view");

        // Queries: a 2-D layered linear-filtered texture with normalised
        // coordinates, and a 3-D surface.
        let mut al: Ptr = null_mut();
        let dl = CUDA_ARRAY3D_DESCRIPTOR { Width: 5, Height: 4, Depth: 3, Format: FLOAT, NumChannels: 1, Flags: 1 };
        assert_eq!(cuArray3DCreate_v2(&mut al, &dl), SUCCESS);
        let mut tl: u64 = 0;
        // Address modes mirror, border, clamp: the ISA's enumeration
        // { wrap, mirror, clamp_ogl, clamp_to_edge, clamp_to_border } says
        // 1, 4, 3 to txq.addr_mode_0..2.
        let tdl = CUDA_TEXTURE_DESC { addressMode: [2, 3, 1], filterMode: 1, flags: 2, ..Default::default() };
        assert_eq!(cuTexObjectCreate(&mut tl, &array_res(al), &tdl, std::ptr::null()), SUCCESS);
        let mut a3: Ptr = null_mut();
        let ds = CUDA_ARRAY3D_DESCRIPTOR {
            Width: 7,
            Height: 6,
            Depth: 2,
            Format: CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
            NumChannels: 4,
            Flags: 2,
        };
        assert_eq!(cuArray3DCreate_v2(&mut a3, &ds), SUCCESS);
        let mut s3: u64 = 0;
        assert_eq!(cuSurfObjectCreate(&mut s3, &array_res(a3)), SUCCESS);
        let (mut tq, mut sq, mut oq) = (tl, s3, out);
        let mut args = [(&mut tq as *mut u64).cast(), (&mut sq as *mut u64).cast(), (&mut oq as *mut u64).cast()];
        assert_eq!(launch(func("queries"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut q = [0u32; 12];
        assert_eq!(cuMemcpyDtoH_v2(q.as_mut_ptr().cast(), out, 48), SUCCESS);
        assert_eq!(q, [5, 4, 3, 1, 1, 1, 7, 6, 2, 1, 4, 3]);

        // Integer coordinates on a 1-D layered u32 array.
        let mut a1l: Ptr = null_mut();
        let d1l = CUDA_ARRAY3D_DESCRIPTOR {
            Width: 4,
            Height: 0,
            Depth: 2,
            Format: CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32,
            NumChannels: 1,
            Flags: 1,
        };
        assert_eq!(cuArray3DCreate_v2(&mut a1l, &d1l), SUCCESS);
        let vals: [u32; 8] = [10, 11, 12, 13, 20, 21, 22, 23];
        cuda_copy_3d_to_array(&l, a1l, vals.as_ptr().cast(), 16, 1, 2);
        let mut t1: u64 = 0;
        let tdi = CUDA_TEXTURE_DESC { addressMode: [1, 1, 1], flags: 1, ..Default::default() };
        assert_eq!(cuTexObjectCreate(&mut t1, &array_res(a1l), &tdi, std::ptr::null()), SUCCESS);
        let (mut ti, mut oi) = (t1, out);
        let mut args = [(&mut ti as *mut u64).cast(), (&mut oi as *mut u64).cast()];
        assert_eq!(launch(func("int_coords"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut iv = [0u32; 4];
        assert_eq!(cuMemcpyDtoH_v2(iv.as_mut_ptr().cast(), out, 16), SUCCESS);
        assert_eq!(iv, [20, 22, 23, 1], "clamped texels of layer 1; a missing alpha reads 1");

        // Surface loads: uchar4 2-D surface (the 3-D one's first slice is
        // not used), and a 1-D surface of 16-byte elements.
        let mut a8: Ptr = null_mut();
        let d8 = CUDA_ARRAY3D_DESCRIPTOR {
            Width: 3,
            Height: 2,
            Depth: 0,
            Format: CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
            NumChannels: 4,
            Flags: 2,
        };
        assert_eq!(cuArray3DCreate_v2(&mut a8, &d8), SUCCESS);
        let bytes: Vec<u8> = (0..24).map(|i| i as u8 * 3).collect();
        cuda_copy_3d_to_array(&l, a8, bytes.as_ptr().cast(), 12, 2, 1);
        let mut a64: Ptr = null_mut();
        let d64 = CUDA_ARRAY3D_DESCRIPTOR {
            Width: 4,
            Height: 0,
            Depth: 0,
            Format: CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32,
            NumChannels: 4,
            Flags: 2,
        };
        assert_eq!(cuArray3DCreate_v2(&mut a64, &d64), SUCCESS);
        let words: Vec<u64> = (0..8).map(|i| 0x1111_0000_0000_0000 * (i + 1) + i).collect();
        assert_eq!(cuMemcpyHtoA_v2(a64, 0, words.as_ptr().cast(), 64), SUCCESS);
        let (mut s8, mut s64) = (0u64, 0u64);
        assert_eq!(cuSurfObjectCreate(&mut s8, &array_res(a8)), SUCCESS);
        assert_eq!(cuSurfObjectCreate(&mut s64, &array_res(a64)), SUCCESS);
        let (mut p8, mut p64, mut po) = (s8, s64, out);
        let mut args = [(&mut p8 as *mut u64).cast(), (&mut p64 as *mut u64).cast(), (&mut po as *mut u64).cast()];
        assert_eq!(launch(func("surface_loads"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut sl = [0u8; 32];
        assert_eq!(cuMemcpyDtoH_v2(sl.as_mut_ptr().cast(), out, 32), SUCCESS);
        assert_eq!(&sl[0..4], &bytes[16..20], "element (1, 1)");
        assert_eq!(&sl[4..8], &bytes[20..24], "clamped to (2, 1)");
        assert_eq!(&sl[8..12], &[0, 0, 0, 0], "zero mode");
        let pair = [u64::from_le_bytes(sl[16..24].try_into().expect("8")), u64::from_le_bytes(sl[24..32].try_into().expect("8"))];
        assert_eq!(pair, [words[2], words[3]], "the second 16-byte element");
        let mut w = [0u64; 8];
        assert_eq!(cuMemcpyAtoH_v2(w.as_mut_ptr().cast(), a64, 0, 64), SUCCESS);
        assert_eq!(&w[6..8], &[words[3], words[2]], "a clamped store lands on the last element");

        // Texture and array queries that answer as the driver does.
        let mut buf = [0u8; 64];
        assert_eq!(cuArrayGetSparseProperties(buf.as_mut_ptr().cast(), a4), INVALID_VALUE);
        assert_eq!(cuArrayGetMemoryRequirements(buf.as_mut_ptr().cast(), a4, 0), INVALID_VALUE);
        let mut mip: Ptr = null_mut();
        let dm = CUDA_ARRAY3D_DESCRIPTOR { Width: 8, Height: 8, Depth: 0, Format: FLOAT, NumChannels: 1, Flags: 0 };
        assert_eq!(cuMipmappedArrayCreate(&mut mip, &dm, 4), SUCCESS);
        let mut lvl: Ptr = null_mut();
        assert_eq!(cuMipmappedArrayGetLevel(&mut lvl, mip, 3), SUCCESS);
        let mut dl3: CUDA_ARRAY3D_DESCRIPTOR = std::mem::zeroed();
        assert_eq!(cuArray3DGetDescriptor_v2(&mut dl3, lvl), SUCCESS);
        assert_eq!((dl3.Width, dl3.Height), (1, 1));
        assert_eq!(cuMipmappedArrayGetLevel(&mut lvl, mip, 4), INVALID_VALUE);
        assert_eq!(cuMipmappedArrayDestroy(mip), SUCCESS);
        // Mipmaps: an 8 x 4 float texture of three levels whose texels are
        // 100, 200 and 300 by level, point-filtered between levels.
        let dm = CUDA_ARRAY3D_DESCRIPTOR { Width: 8, Height: 4, Depth: 0, Format: FLOAT, NumChannels: 1, Flags: 0 };
        assert_eq!(cuMipmappedArrayCreate(&mut mip, &dm, 3), SUCCESS);
        for (level, (w, h)) in [(8usize, 4usize), (4, 2), (2, 1)].into_iter().enumerate() {
            assert_eq!(cuMipmappedArrayGetLevel(&mut lvl, mip, level as u32), SUCCESS);
            let v = vec![100.0f32 * (level + 1) as f32; w * h];
            cuda_copy_3d_to_array(&l, lvl, v.as_ptr().cast(), 4 * w, h, 1);
        }
        let mut mr = CUDA_RESOURCE_DESC { resType: 1, ..Default::default() };
        mr.res[0] = mip as u64;
        let tdm = CUDA_TEXTURE_DESC { addressMode: [1, 1, 1], flags: 2, maxMipmapLevelClamp: 2.0, ..Default::default() };
        let mut tm: u64 = 0;
        assert_eq!(cuTexObjectCreate(&mut tm, &mr, &tdm, std::ptr::null()), SUCCESS);
        let (mut tmp, mut om) = (tm, out);
        let mut args = [(&mut tmp as *mut u64).cast(), (&mut om as *mut u64).cast()];
        assert_eq!(launch(func("mips"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut mv = [0u32; 6];
        assert_eq!(cuMemcpyDtoH_v2(mv.as_mut_ptr().cast(), out, 24), SUCCESS);
        let fv: Vec<f32> = mv[..4].iter().map(|b| f32::from_bits(*b)).collect();
        // grad: 1/8 of 8 texels along x, 1/2 of 4 along y: rho 2, level 1.
        assert_eq!(fv, [200.0, 300.0, 200.0, 100.0], "tex.level 1, tex.level 2, tex.grad, tex.base");
        assert_eq!(&mv[4..], &[4, 1], "txq.level: width of level 1, height of level 2");
        assert_eq!(cuTexObjectDestroy(tm), SUCCESS);
        assert_eq!(cuMipmappedArrayDestroy(mip), SUCCESS);
        // Texture and surface references: linear memory bound before its
        // format is set, read as integers; a 1-D surface.
        let mut r: Ptr = null_mut();
        assert_eq!(cuModuleGetTexRef(&mut r, m, c"nosuch".as_ptr()), NOT_FOUND);
        assert_eq!(cuModuleGetTexRef(&mut r, m, c"tref".as_ptr()), SUCCESS);
        let mut r2: Ptr = null_mut();
        assert_eq!(cuModuleGetTexRef(&mut r2, m, c"tref".as_ptr()), SUCCESS);
        assert_eq!(r, r2, "one reference per variable");
        let ints: Vec<i32> = (0..64).map(|i| i * 3 - 50).collect();
        let lin = alloc(256);
        assert_eq!(cuMemcpyHtoD_v2(lin, ints.as_ptr().cast(), 256), SUCCESS);
        let mut offset = 99usize;
        assert_eq!(cuTexRefSetAddress_v2(&mut offset, r, lin + 8, 200), SUCCESS);
        assert_eq!(offset, 8, "the offset from the aligned start");
        assert_eq!(cuTexRefSetFormat(r, CUarray_format::CU_AD_FORMAT_SIGNED_INT32, 1), SUCCESS);
        assert_eq!(cuTexRefSetFlags(r, 1), SUCCESS);
        let mut got_ptr: Dptr = 0;
        assert_eq!(cuTexRefGetAddress_v2(&mut got_ptr, r), SUCCESS);
        assert_eq!(got_ptr, lin);
        let (mut f, mut n) = (CUarray_format(0), 0i32);
        assert_eq!(cuTexRefGetFormat(&mut f, &mut n, r), SUCCESS);
        assert_eq!((f, n), (CUarray_format::CU_AD_FORMAT_SIGNED_INT32, 1));
        let mut sr: Ptr = null_mut();
        assert_eq!(cuModuleGetSurfRef(&mut sr, m, c"sref".as_ptr()), SUCCESS);
        assert_eq!(cuSurfRefSetArray(sr, a4, 0), INVALID_VALUE, "not a load/store array");
        assert_eq!(cuSurfRefSetArray(sr, a1l, 0), INVALID_VALUE, "not a load/store array");
        assert_eq!(cuSurfRefSetArray(sr, a64, 0), SUCCESS);
        let mut ro = out;
        let mut args = [(&mut ro as *mut u64).cast()];
        assert_eq!(launch(func("by_ref"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut rv = [0u32; 3];
        assert_eq!(cuMemcpyDtoH_v2(rv.as_mut_ptr().cast(), out, 12), SUCCESS);
        assert_eq!(rv, [ints[3] as u32, 52, (words[0] >> 32) as u32], "texel 3, width 208/4, surface word 1");
        // Rebinding to an array takes effect for later launches.
        assert_eq!(cuTexRefSetArray(r, a1l, 0), INVALID_VALUE, "flags must be CU_TRSA_OVERRIDE_FORMAT");
        assert_eq!(cuTexRefSetArray(r, a1l, 1), SUCCESS);
        assert_eq!(launch(func("by_ref"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        assert_eq!(cuMemcpyDtoH_v2(rv.as_mut_ptr().cast(), out, 8), SUCCESS);
        assert_eq!(&rv[..2], &[13, 4], "texel 3 of layer 0 of the 1-D layered array, width 4");
        // A reference's mipmap state reads back as set.
        assert_eq!(cuMipmappedArrayCreate(&mut mip, &dm, 2), SUCCESS);
        assert_eq!(cuTexRefSetMipmappedArray(r, mip, 1), SUCCESS);
        assert_eq!(cuTexRefSetMipmapFilterMode(r, 1), SUCCESS);
        assert_eq!(cuTexRefSetMipmapFilterMode(r, 2), INVALID_VALUE);
        assert_eq!(cuTexRefSetMipmapLevelBias(r, 0.25), SUCCESS);
        assert_eq!(cuTexRefSetMipmapLevelClamp(r, 0.5, 1.0), SUCCESS);
        assert_eq!(cuTexRefSetMaxAnisotropy(r, 4), SUCCESS);
        let (mut fm, mut bias, mut lo, mut hi, mut aniso, mut bound) = (0u32, 0f32, 0f32, 0f32, 0i32, null_mut());
        assert_eq!(cuTexRefGetMipmapFilterMode(&mut fm, r), SUCCESS);
        assert_eq!(cuTexRefGetMipmapLevelBias(&mut bias, r), SUCCESS);
        assert_eq!(cuTexRefGetMipmapLevelClamp(&mut lo, &mut hi, r), SUCCESS);
        assert_eq!(cuTexRefGetMaxAnisotropy(&mut aniso, r), SUCCESS);
        assert_eq!(cuTexRefGetMipmappedArray(&mut bound, r), SUCCESS);
        assert_eq!((fm, bias, lo, hi, aniso, bound), (1, 0.25, 0.5, 1.0, 4, mip));
        assert_eq!(cuTexRefSetArray(r, a1l, 1), SUCCESS);
        assert_eq!(cuTexRefGetMipmappedArray(&mut bound, r), INVALID_VALUE, "bound to an array now");
        assert_eq!(cuMipmappedArrayDestroy(mip), SUCCESS);
        // A reference of no module: set, queried and destroyed as CUDA
        // documents; a module's reference is not destroyed this way.
        let mut own: Ptr = null_mut();
        assert_eq!(cuTexRefCreate(std::ptr::null_mut()), INVALID_VALUE);
        assert_eq!(cuTexRefCreate(&mut own), SUCCESS);
        assert!(!own.is_null() && own != r);
        assert_eq!(cuTexRefGetArray(&mut bound, own), INVALID_VALUE, "bound to nothing yet");
        assert_eq!(cuTexRefSetArray(own, a1l, 1), SUCCESS);
        assert_eq!(cuTexRefSetMipmapLevelBias(own, 1.5), SUCCESS);
        assert_eq!(cuTexRefGetArray(&mut bound, own), SUCCESS);
        assert_eq!(bound, a1l);
        assert_eq!(cuTexRefGetMipmapLevelBias(&mut bias, own), SUCCESS);
        assert_eq!(bias, 1.5);
        assert_eq!(cuTexRefDestroy(r), INVALID_VALUE, "a module's reference");
        assert_eq!(cuTexRefDestroy(own), SUCCESS);
        assert_eq!(cuTexRefDestroy(own), INVALID_HANDLE, "destroyed already");
        assert_eq!(cuTexRefSetArray(own, a1l, 1), INVALID_HANDLE);
        // The module's reference still works.
        assert_eq!(cuTexRefGetArray(&mut bound, r), SUCCESS);
        assert_eq!(bound, a1l);

        // Formatted stores: element 1 of the 1-D u32 x 4 surface, its
        // first two channels.
        let mut sp = s64;
        let mut args = [(&mut sp as *mut u64).cast()];
        assert_eq!(launch(func("formatted"), &mut args), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut w32 = [0u32; 16];
        assert_eq!(cuMemcpyAtoH_v2(w32.as_mut_ptr().cast(), a64, 0, 64), SUCCESS);
        let before: Vec<u32> = w.iter().flat_map(|v| [*v as u32, (*v >> 32) as u32]).collect();
        assert_eq!(&w32[4..8], &[7, 8, before[6], before[7]], "channels 0 and 1 written, 2 and 3 kept");
        assert_eq!(&w32[..4], &before[..4]);

        // Reductions from 64 threads.
        let ldst = |format: CUarray_format, width: usize, height: usize| {
            let mut a: Ptr = null_mut();
            let d = CUDA_ARRAY3D_DESCRIPTOR { Width: width, Height: height, Depth: 0, Format: format, NumChannels: 1, Flags: 2 };
            assert_eq!(cuArray3DCreate_v2(&mut a, &d), SUCCESS);
            let mut s = 0u64;
            assert_eq!(cuSurfObjectCreate(&mut s, &array_res(a)), SUCCESS);
            (a, s)
        };
        let (au, su) = ldst(CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32, 4, 0);
        let (ai, si) = ldst(CUarray_format::CU_AD_FORMAT_SIGNED_INT32, 4, 0);
        let (ab, sb) = ldst(CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8, 5, 2);
        let init_u: [u32; 4] = [100, 2, 7, 0x1234_5678];
        let init_i: [i32; 4] = [9, 5, 9, 9];
        assert_eq!(cuMemcpyHtoA_v2(au, 0, init_u.as_ptr().cast(), 16), SUCCESS);
        assert_eq!(cuMemcpyHtoA_v2(ai, 0, init_i.as_ptr().cast(), 16), SUCCESS);
        let init_b: [u8; 10] = [0, 1, 2, 3, 4, 250, 255, 1, 0, 9];
        cuda_copy_3d_to_array(&l, ab, init_b.as_ptr().cast(), 5, 2, 1);
        let (mut pu, mut pi, mut pb) = (su, si, sb);
        let mut args = [(&mut pu as *mut u64).cast(), (&mut pi as *mut u64).cast(), (&mut pb as *mut u64).cast()];
        let f = func("reductions");
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut ru = [0u32; 4];
        let mut ri = [0i32; 4];
        let mut rb = [0u8; 10];
        assert_eq!(cuMemcpyAtoH_v2(ru.as_mut_ptr().cast(), au, 0, 16), SUCCESS);
        assert_eq!(cuMemcpyAtoH_v2(ri.as_mut_ptr().cast(), ai, 0, 16), SUCCESS);
        cuda_copy_3d_from_array(&l, rb.as_mut_ptr().cast(), ab, 5, 2);
        assert_eq!(
            ru,
            [100 + 64 * 5, (-3i32) as u32, 0xffff_fffd, 0x1234_5678 & 0xf0 | 0xf00],
            "add, signed min, unsigned max, and then or"
        );
        assert_eq!(ri, [9, -3, 9, 9], ".p reads the s32 format's values as signed");
        let row1 = u32::from_le_bytes([250, 255, 1, 0]) + 64;
        let mut want_b = init_b;
        want_b[5..9].copy_from_slice(&row1.to_le_bytes());
        assert_eq!(rb, want_b, "64 adds of 1 to the unaligned u32 at row 1");

        // istypep: a texture handle, a surface handle, a device pointer, a
        // pointer into the texture's descriptor, null, and a value that is
        // no address at all.
        let plain = alloc(64);
        let vals: [u64; 6] = [t, s8, plain, t + 8, 0, 0x1234_5678_9abc_def0];
        let dvals = alloc(48);
        cuda_copy_htod(&l, dvals, &vals);
        let (mut pv, mut po) = (dvals, out);
        let mut args = [(&mut pv as *mut u64).cast(), (&mut po as *mut u64).cast()];
        assert_eq!(cuLaunchKernel(func("types"), 1, 1, 1, 6, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut kinds = [9u32; 6];
        assert_eq!(cuMemcpyDtoH_v2(kinds.as_mut_ptr().cast(), out, 24), SUCCESS);
        assert_eq!(kinds, [1, 4, 0, 0, 0, 0], "texref, surfref, then nothing (CUDA has no sampler objects)");

        // Refused instructions fail their launch with INVALID_PTX.
        let (mut tt, mut oo) = (t, out);
        let mut args = [(&mut tt as *mut u64).cast(), (&mut oo as *mut u64).cast()];
        assert_eq!(launch(func("offsets"), &mut args), INVALID_PTX, "texel offsets");

        // A destroyed texture object: the launch fails (sticky).
        let (mut tf, mut of) = (t, out);
        assert_eq!(cuTexObjectDestroy(t), SUCCESS);
        assert_eq!(cuTexObjectDestroy(t), INVALID_VALUE, "destroyed twice");
        let mut args = [(&mut tf as *mut u64).cast(), (&mut of as *mut u64).cast()];
        let launched = launch(func("fetch"), &mut args);
        let synced = cuCtxSynchronize();
        assert!(launched == ILLEGAL_ADDRESS || synced == ILLEGAL_ADDRESS, "a destroyed texture: launch {launched}, sync {synced}");
        assert_eq!(cuDevicePrimaryCtxReset_v2(0), SUCCESS);

        // Out of range in the trap mode: an illegal address.
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(ctx), SUCCESS);
        let mut m2: Ptr = null_mut();
        assert_eq!(cuModuleLoadData(&mut m2, PTX.as_ptr().cast()), SUCCESS);
        let mut f: Ptr = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, m2, c"store_trap".as_ptr()), SUCCESS);
        let mut a16: Ptr = null_mut();
        let d16 = CUDA_ARRAY3D_DESCRIPTOR {
            Width: 8,
            Height: 0,
            Depth: 0,
            Format: CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16,
            NumChannels: 1,
            Flags: 2,
        };
        assert_eq!(cuArray3DCreate_v2(&mut a16, &d16), SUCCESS);
        let mut s16 = 0u64;
        assert_eq!(cuSurfObjectCreate(&mut s16, &array_res(a16)), SUCCESS);
        let mut args = [(&mut s16 as *mut u64).cast::<c_void>()];
        let launched = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut());
        let synced = cuCtxSynchronize();
        assert!(launched == ILLEGAL_ADDRESS || synced == ILLEGAL_ADDRESS, "sust.trap out of range: launch {launched}, sync {synced}");
        assert_eq!(cuDevicePrimaryCtxReset_v2(0), SUCCESS);

        // A formatted store the engine cannot convert: the launch fails.
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(ctx), SUCCESS);
        assert_eq!(cuModuleLoadData(&mut m2, PTX.as_ptr().cast()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut f, m2, c"formatted_narrow".as_ptr()), SUCCESS);
        assert_eq!(cuArray3DCreate_v2(&mut a16, &d16), SUCCESS);
        assert_eq!(cuSurfObjectCreate(&mut s16, &array_res(a16)), SUCCESS);
        let mut args = [(&mut s16 as *mut u64).cast::<c_void>()];
        let launched = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut());
        let synced = cuCtxSynchronize();
        assert!(launched == LAUNCH_FAILED || synced == LAUNCH_FAILED, "sust.p into 16-bit channels: launch {launched}, sync {synced}");
        assert_eq!(cuDevicePrimaryCtxReset_v2(0), SUCCESS);
        let _ = (cuArrayDestroy, cuSurfObjectDestroy);
    }
}

/// A 2-D array's `height` rows of `row` bytes into host memory, with
/// `cuMemcpy3D`.
fn cuda_copy_3d_from_array(l: &Lib, dst: *mut c_void, array: Ptr, row: usize, height: usize) {
    api!(l; cuMemcpy3D_v2: fn(*const cuda_types::CUDA_MEMCPY3D););
    let mut c: cuda_types::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    c.srcMemoryType = cuda_types::CUmemorytype::CU_MEMORYTYPE_ARRAY;
    c.srcArray = cuda_types::CUarray(array.cast());
    c.dstMemoryType = cuda_types::CUmemorytype::CU_MEMORYTYPE_HOST;
    c.dstHost = dst;
    c.dstPitch = row;
    c.dstHeight = height;
    c.WidthInBytes = row;
    c.Height = height;
    c.Depth = 1;
    unsafe { assert_eq!(cuMemcpy3D_v2(&c), SUCCESS) };
}

/// `cuMemcpyHtoD` through the library.
fn cuda_copy_htod<T>(l: &Lib, dst: Dptr, src: &[T]) {
    api!(l; cuMemcpyHtoD_v2: fn(Dptr, *const c_void, usize););
    unsafe { assert_eq!(cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), std::mem::size_of_val(src)), SUCCESS) };
}

/// A host block of `depth` slices of `height` rows of `row` bytes into an
/// array, with `cuMemcpy3D`.
fn cuda_copy_3d_to_array(l: &Lib, array: Ptr, src: *const c_void, row: usize, height: usize, depth: usize) {
    api!(l; cuMemcpy3D_v2: fn(*const cuda_types::CUDA_MEMCPY3D););
    let mut c: cuda_types::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    c.srcMemoryType = cuda_types::CUmemorytype::CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = row;
    c.srcHeight = height;
    c.dstMemoryType = cuda_types::CUmemorytype::CU_MEMORYTYPE_ARRAY;
    c.dstArray = cuda_types::CUarray(array.cast());
    c.WidthInBytes = row;
    c.Height = height;
    c.Depth = depth;
    unsafe { assert_eq!(cuMemcpy3D_v2(&c), SUCCESS) };
}
