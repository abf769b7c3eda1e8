//! Kernels compile at their first launch: a module loads without compiling,
//! a kernel that cannot be compiled fails its own launch (not sticky), and
//! the module's other kernels keep working.

mod common;
use common::*;
use std::ffi::c_void;
use std::ptr::null_mut;

const PTX: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\
.visible .entry store7(.param .u64 p)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n\
ld.param.u64 %rd1, [p];\nmov.u32 %r1, 7;\nst.global.u32 [%rd1], %r1;\nret;\n}\n\
.visible .entry texture(.param .u64 p)\n{\n.reg .b32 %r<2>;\n\
tex.1d.v4.s32.s32 {%r1, %r1, %r1, %r1}, [p, {%r1}];\nret;\n}\n\0";

#[test]
fn an_uncompilable_kernel_fails_its_launch_and_nothing_else() {
    let lib = Lib::open_cpu();
    api!(lib;
        cuInit: fn(u32);
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
        cuCtxSetCurrent: fn(Ptr);
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const std::ffi::c_char);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuCtxSynchronize: fn();
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
    );
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut ctx = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(ctx), SUCCESS);
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, PTX.as_ptr().cast()), SUCCESS, "the load compiles nothing, so it succeeds");
        let (mut good, mut bad) = (null_mut(), null_mut());
        assert_eq!(cuModuleGetFunction(&mut good, m, c"store7".as_ptr()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut bad, m, c"texture".as_ptr()), SUCCESS);
        let mut buf = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut buf, 4), SUCCESS);
        let mut params: [*mut c_void; 1] = [(&mut buf as *mut u64).cast()];
        assert_eq!(cuLaunchKernel(bad, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), INVALID_PTX);
        // Not sticky: the context and the module's other kernel work.
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        assert_eq!(cuLaunchKernel(good, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut v = 0u32;
        assert_eq!(cuMemcpyDtoH_v2((&mut v as *mut u32).cast(), buf, 4), SUCCESS);
        assert_eq!(v, 7);
        // Asking again gives the same answer.
        assert_eq!(cuLaunchKernel(bad, 1, 1, 1, 1, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), INVALID_PTX);
    }
}
