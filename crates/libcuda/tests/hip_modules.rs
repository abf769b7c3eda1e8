//! Modules with variables on the HIP backend (emulated gfx1100): AMD code
//! objects cannot share variables, so the variables are one code object,
//! loaded with the module, and every kernel is a code object of its own,
//! compiled at its first launch, that reads the variables' addresses from
//! that object's variable table. Where the table cannot reach them all
//! (here: an initialiser that takes a function's address), the kernels
//! that name variables share the variables' code object instead. Both
//! kinds run, and the kernels see the variables the host writes.

mod common;
mod hip_emulated;
mod oracle_run;

use common::*;
use std::ffi::c_void;

/// `uses` reads the table and a constant (`out[i] = table[1] + bias +
/// i`), `lookup_first` calls a function that reads the table
/// (`out[i] = table[0]`), `plain` names no variable (`out[i] = v`).
const PTX: &str = concat!(
    ".version 7.0\n.target sm_70\n.address_size 64\n",
    ".global .align 4 .u32 table[2] = {5, 9};\n",
    ".const .align 4 .u32 bias = 1000;\n",
    ".func (.reg .u32 r) first()\n{\n  ld.global.u32 r, [table];\n  ret;\n}\n",
    ".visible .entry plain(.param .u64 p, .param .u32 v) {\n",
    "  .reg .b64 %rd<5>;\n  .reg .b32 %r<3>;\n",
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [v];\n",
    "  cvta.to.global.u64 %rd2, %rd1;\n",
    "  mov.u32 %r2, %tid.x;\n  mul.wide.u32 %rd3, %r2, 4;\n  add.s64 %rd4, %rd2, %rd3;\n",
    "  st.global.u32 [%rd4], %r1;\n  ret;\n}\n",
    ".visible .entry uses(.param .u64 p) {\n",
    "  .reg .b64 %rd<5>;\n  .reg .b32 %r<4>;\n",
    "  ld.param.u64 %rd1, [p];\n  ld.global.u32 %r1, [table+4];\n  ld.const.u32 %r3, [bias];\n  add.u32 %r1, %r1, %r3;\n",
    "  cvta.to.global.u64 %rd2, %rd1;\n",
    "  mov.u32 %r2, %tid.x;\n  add.u32 %r3, %r1, %r2;\n  mul.wide.u32 %rd3, %r2, 4;\n  add.s64 %rd4, %rd2, %rd3;\n",
    "  st.global.u32 [%rd4], %r3;\n  ret;\n}\n",
    ".visible .entry lookup_first(.param .u64 p) {\n",
    "  .reg .b64 %rd<5>;\n  .reg .b32 %r<3>;\n",
    "  ld.param.u64 %rd1, [p];\n  call (%r1), first, ();\n",
    "  cvta.to.global.u64 %rd2, %rd1;\n",
    "  mov.u32 %r2, %tid.x;\n  mul.wide.u32 %rd3, %r2, 4;\n  add.s64 %rd4, %rd2, %rd3;\n",
    "  st.global.u32 [%rd4], %r1;\n  ret;\n}\n"
);

/// A variable whose initialiser takes `first`'s address: the table cannot
/// serve this module (the function would be the shared unit's).
const FUNCTION_ADDRESS: &str = ".global .align 8 .u64 handler = first;\n";

const CU_JIT_INFO_LOG_BUFFER: i32 = 3;
const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: i32 = 4;

#[test]
fn every_kernel_compiles_apart_and_reads_the_variables_through_the_table() {
    run_module(
        &format!("{PTX}\0"),
        "the variables in one code object, read through its variable table; 3 kernel(s) each in a code object of its own",
    );
}

#[test]
fn kernels_that_name_variables_the_table_cannot_serve_share_the_variables_code_object() {
    run_module(
        &format!("{PTX}{FUNCTION_ADDRESS}\0"),
        "the variables and 2 kernel(s) in one code object, 1 kernel(s) each in a code object of its own",
    );
}

/// Loads `ptx` (NUL-terminated), checks that the info log says `layout`,
/// and runs its kernels before and after the host writes the variables.
fn run_module(ptx: &str, layout: &str) {
    let lib = hip_emulated::library("gfx1100");
    assert!(hip_emulated::device_name(lib).contains("emulated"));
    api!(lib;
        cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32);
        cuCtxSetCurrent: fn(Ptr);
        cuModuleLoadDataEx: fn(*mut Ptr, *const c_void, u32, *mut i32, *mut *mut c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const std::ffi::c_char);
        cuModuleGetGlobal_v2: fn(*mut u64, *mut usize, Ptr, *const std::ffi::c_char);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuMemcpyHtoD_v2: fn(u64, *const c_void, usize);
        cuCtxSynchronize: fn();
    );
    let null = std::ptr::null_mut::<c_void>();
    let (mut ctx, mut module) = (null, null);
    let (mut plain, mut uses, mut lookup) = (null, null, null);
    let mut out = 0u64;
    let mut info = vec![0u8; 4096];
    let mut options = [CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES];
    let mut values = [info.as_mut_ptr().cast::<c_void>(), info.len() as *mut c_void];
    // SAFETY: driver calls with valid out-pointers and buffers of the
    // sizes given.
    unsafe {
        assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(ctx), SUCCESS);
        let e = cuModuleLoadDataEx(&mut module, ptx.as_ptr().cast(), 2, options.as_mut_ptr(), values.as_mut_ptr());
        assert_eq!(e, SUCCESS);
        let log = std::ffi::CStr::from_bytes_until_nul(&info).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(log.contains(layout), "info log: {log}");
        assert_eq!(cuModuleGetFunction(&mut plain, module, c"plain".as_ptr()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut uses, module, c"uses".as_ptr()), SUCCESS);
        assert_eq!(cuModuleGetFunction(&mut lookup, module, c"lookup_first".as_ptr()), SUCCESS);
        assert_eq!(cuMemAlloc_v2(&mut out, 256), SUCCESS);
        let run = |f: Ptr, v: Option<u32>| -> Vec<u32> {
            let mut p = out;
            let mut v = v.unwrap_or(0);
            let mut args = [(&mut p as *mut u64).cast::<c_void>(), (&mut v as *mut u32).cast::<c_void>()];
            assert_eq!(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, null, args.as_mut_ptr(), std::ptr::null_mut()), SUCCESS);
            assert_eq!(cuCtxSynchronize(), SUCCESS);
            let mut back = vec![0u32; 64];
            assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), out, 256), SUCCESS);
            back
        };
        assert_eq!(run(plain, Some(0x5eed)), vec![0x5eed; 64]);
        assert_eq!(run(uses, None), (1009..1073).collect::<Vec<u32>>());
        assert_eq!(run(lookup, None), vec![5; 64]);
        // The kernels see what the host writes into the variables: they
        // read the module's variables, not copies of their own.
        let (mut table, mut size) = (0u64, 0usize);
        assert_eq!(cuModuleGetGlobal_v2(&mut table, &mut size, module, c"table".as_ptr()), SUCCESS);
        assert_eq!(size, 8);
        let new = [100u32, 200];
        assert_eq!(cuMemcpyHtoD_v2(table, new.as_ptr().cast(), 8), SUCCESS);
        let (mut bias, mut bias_size) = (0u64, 0usize);
        assert_eq!(cuModuleGetGlobal_v2(&mut bias, &mut bias_size, module, c"bias".as_ptr()), SUCCESS);
        assert_eq!(bias_size, 4);
        assert_eq!(cuMemcpyHtoD_v2(bias, [7u32].as_ptr().cast(), 4), SUCCESS);
        assert_eq!(run(uses, None), (207..271).collect::<Vec<u32>>());
        assert_eq!(run(lookup, None), vec![100; 64]);
        assert_eq!(run(plain, Some(3)), vec![3; 64]);
    }
}
