//! Loading real objects (made with LLVM through inkwell) and running them.

mod common;

use std::time::Instant;

use backend_cpu::{load, LaunchError, LaunchOptions, LoadError, LoadedKernel};
use common::*;
use compiler::cpu_abi::{offsets, KernelSymbols};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};
use inkwell::OptimizationLevel;

/// Compiles LLVM IR text to a host object file.
fn object(ir: &str) -> Vec<u8> {
    Target::initialize_native(&InitializationConfig::default()).unwrap();
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test");
    let module = context.create_module_from_ir(buffer).unwrap();
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).unwrap();
    let machine = target
        .create_target_machine(
            &triple,
            &TargetMachine::get_host_cpu_name().to_string(),
            &TargetMachine::get_host_cpu_features().to_string(),
            OptimizationLevel::Default,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .unwrap();
    module.set_triple(&triple);
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    module.verify().unwrap();
    machine.write_to_memory_buffer(&module, FileType::Object).unwrap().as_slice().to_vec()
}

fn library_ir(counter: i32) -> String {
    format!(
        r#"
declare i64 @__anycuda_globaltimer(ptr)
declare float @sinf(float)
declare double @cbrt(double)

@"__anycuda_global.counter" = global i32 {counter}, align 4

define float @use_sin(float %x) {{
  %r = call float @sinf(float %x)
  ret float %r
}}

define double @use_cbrt(double %x) {{
  %r = call double @cbrt(double %x)
  ret double %r
}}

define i64 @timer() {{
  %t = call i64 @__anycuda_globaltimer(ptr null)
  ret i64 %t
}}

define i32 @read_counter() {{
  %v = load i32, ptr @"__anycuda_global.counter"
  ret i32 %v
}}
"#
    )
}

#[test]
fn objects_resolve_runtime_and_libm_symbols_and_expose_globals() {
    let module = load(&object(&library_ir(5))).unwrap();
    unsafe {
        let sin: extern "C" fn(f32) -> f32 = std::mem::transmute(module.symbol("use_sin").unwrap());
        assert_eq!(sin(0.5), 0.5f32.sin());
        let cbrt: extern "C" fn(f64) -> f64 = std::mem::transmute(module.symbol("use_cbrt").unwrap());
        assert!((cbrt(27.0) - 3.0).abs() < 1e-12);
        let timer: extern "C" fn() -> u64 = std::mem::transmute(module.symbol("timer").unwrap());
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        let t = timer();
        assert!(t.abs_diff(now) < 10_000_000_000, "{t} vs {now}");
        let read: extern "C" fn() -> i32 = std::mem::transmute(module.symbol("read_counter").unwrap());
        let counter = module.symbol(&KernelSymbols::global("counter")).unwrap() as *mut i32;
        assert_eq!(*counter, 5);
        *counter = 77;
        assert_eq!(read(), 77);
    }
    assert!(module.symbol("no_such_symbol").is_none());
}

#[test]
fn modules_may_define_the_same_names_and_unload() {
    let first = load(&object(&library_ir(1))).unwrap();
    let second = load(&object(&library_ir(2))).unwrap();
    let name = KernelSymbols::global("counter");
    let a = first.symbol(&name).unwrap();
    let b = second.symbol(&name).unwrap();
    assert_ne!(a, b);
    unsafe {
        assert_eq!(*(a as *const i32), 1);
        assert_eq!(*(b as *const i32), 2);
    }
    drop(first);
    // The second module is untouched by unloading the first.
    unsafe { assert_eq!(*(b as *const i32), 2) };
    let bytes = object(&library_ir(3));
    for _ in 0..200 {
        let again = load(&bytes).unwrap();
        unsafe { assert_eq!(*(again.symbol(&name).unwrap() as *const i32), 3) };
    }
}

#[test]
fn loading_a_small_object_is_cheap() {
    let bytes = object(&library_ir(9));
    drop(load(&bytes).unwrap());
    let rounds = 100;
    let start = Instant::now();
    for _ in 0..rounds {
        let module = load(&bytes).unwrap();
        assert!(module.symbol("use_sin").is_some());
    }
    let per_load = start.elapsed() / rounds;
    eprintln!("load + unload of a small object: {per_load:?}");
    // Well under a millisecond on any machine this runs on; the bound
    // leaves room for loaded CI machines and debug builds.
    assert!(per_load.as_micros() < 5000, "{per_load:?}");
}

#[test]
fn bad_objects_are_errors() {
    assert!(matches!(load(b"not an object"), Err(LoadError::InvalidObject(_))));
    let missing = object(
        r#"
declare i32 @anycuda_test_symbol_that_does_not_exist(i32)
define i32 @f(i32 %x) {
  %r = call i32 @anycuda_test_symbol_that_does_not_exist(i32 %x)
  ret i32 %r
}
"#,
    );
    match load(&missing) {
        Err(LoadError::Link(message)) => assert!(message.contains("anycuda_test_symbol_that_does_not_exist"), "{message}"),
        other => panic!("{other:?}"),
    }
    // A failed load leaves the loader usable.
    assert!(load(&object(&library_ir(4))).is_ok());
}

/// A kernel `k(int *out)`: out[ctaid.x * ntid.x + x] = ctaid.x * 1000 + x,
/// with both entry points, and a scheduled kernel `rev(int *out, int *bad)`
/// that reverses each block through shared memory across a barrier, then
/// loads from `bad`.
fn kernel_ir() -> String {
    let ntid = offsets::NTID;
    let ctaid = offsets::CTAID;
    let shared = offsets::SHARED;
    format!(
        r#"
declare void @__anycuda_barrier(ptr, i32, i32, i32, i32)

define void @"__anycuda_thread.k"(ptr %params, ptr %ctx, i32 %x, i32 %y, i32 %z) {{
  %out = load ptr, ptr %params
  %ctaid_p = getelementptr i8, ptr %ctx, i64 {ctaid}
  %ctaid = load i32, ptr %ctaid_p
  %ntid_p = getelementptr i8, ptr %ctx, i64 {ntid}
  %ntid = load i32, ptr %ntid_p
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %x
  %v0 = mul i32 %ctaid, 1000
  %v = add i32 %v0, %x
  %i64 = zext i32 %i to i64
  %p = getelementptr i32, ptr %out, i64 %i64
  store i32 %v, ptr %p
  ret void
}}

define void @"__anycuda_block.k"(ptr %params, ptr %ctx) {{
entry:
  %ntid_p = getelementptr i8, ptr %ctx, i64 {ntid}
  %ntid = load i32, ptr %ntid_p
  br label %loop
loop:
  %x = phi i32 [ 0, %entry ], [ %next, %loop ]
  call void @"__anycuda_thread.k"(ptr %params, ptr %ctx, i32 %x, i32 0, i32 0)
  %next = add i32 %x, 1
  %more = icmp ult i32 %next, %ntid
  br i1 %more, label %loop, label %done
done:
  ret void
}}

define void @"__anycuda_thread.rev"(ptr %params, ptr %ctx, i32 %x, i32 %y, i32 %z) {{
  %out = load ptr, ptr %params
  %shared_pp = getelementptr i8, ptr %ctx, i64 {shared}
  %shared = load ptr, ptr %shared_pp
  %ntid_p = getelementptr i8, ptr %ctx, i64 {ntid}
  %ntid = load i32, ptr %ntid_p
  %x64 = zext i32 %x to i64
  %mine = getelementptr i32, ptr %shared, i64 %x64
  %v = mul i32 %x, 3
  store volatile i32 %v, ptr %mine
  call void @__anycuda_barrier(ptr %ctx, i32 %x, i32 0, i32 0, i32 1)
  %last = sub i32 %ntid, 1
  %other = sub i32 %last, %x
  %o64 = zext i32 %other to i64
  %theirs = getelementptr i32, ptr %shared, i64 %o64
  %w = load volatile i32, ptr %theirs
  %dst = getelementptr i32, ptr %out, i64 %x64
  store i32 %w, ptr %dst
  %bad_p = getelementptr i8, ptr %params, i64 8
  %bad = load ptr, ptr %bad_p
  %is_last = icmp eq i32 %x, %last
  br i1 %is_last, label %fault, label %done
fault:
  %boom = load volatile i32, ptr %bad
  store i32 %boom, ptr %out
  br label %done
done:
  ret void
}}
"#
    )
}

#[test]
fn kernels_from_a_real_object_run_on_both_paths() {
    let module = load(&object(&kernel_ir())).unwrap();
    let (exec, _) = executor();
    let mut info = info("k", false);
    info.param_bytes = 8;
    let fast_kernel = unsafe { LoadedKernel::from_module(&module, info.clone()) }.unwrap();
    assert!(fast_kernel.block.is_some());
    info.needs_scheduler = true;
    let scheduled_kernel = unsafe { LoadedKernel::from_module(&module, info) }.unwrap();
    assert!(scheduled_kernel.block.is_none());
    for kernel in [&fast_kernel, &scheduled_kernel] {
        let mut out = vec![0u32; 10 * 64];
        let p = params(&[addr(&mut out)]);
        unsafe { exec.launch(kernel, [10, 1, 1], [64, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
        for (i, &v) in out.iter().enumerate() {
            assert_eq!(v as usize, i / 64 * 1000 + i % 64);
        }
    }

    let mut rev = common::info("rev", true);
    rev.param_bytes = 16;
    rev.static_shared_bytes = 4 * 128;
    rev.dynamic_shared_offset = 4 * 128;
    let rev = unsafe { LoadedKernel::from_module(&module, rev) }.unwrap();
    let mut out = vec![0u32; 128];
    let mut good = vec![0u32; 1];
    let p = params(&[addr(&mut out), addr(&mut good)]);
    unsafe { exec.launch(&rev, [1, 1, 1], [128, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap();
    for (x, &v) in out.iter().enumerate().skip(1) {
        assert_eq!(v as usize, (127 - x) * 3);
    }
    // The same kernel faulting inside JIT code, after suspending at the
    // barrier.
    let p = params(&[addr(&mut out), 0x10]);
    let error = unsafe { exec.launch(&rev, [2, 1, 1], [128, 1, 1], 0, &p, &LaunchOptions::default()) }.unwrap_err();
    assert_eq!(error, LaunchError::IllegalAddress { address: 0x10 });
}
