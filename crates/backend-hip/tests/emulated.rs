//! The backend's queues on the HIP runtime's test double
//! (`crates/hip-emulated`, which the workspace builds as `libamdhip64.so`
//! beside the tests): the double traces the HIP stream of every operation.

use std::path::PathBuf;

use backend_hip::{HipBackend, HipQueue};
use driver::backend::{BackendQueue, HostEvent};
use driver::Backend;

/// The double's trace operation of `hipStreamWaitEvent`
/// (`crates/hip-emulated/src/api.rs`, `op::WAIT`).
const WAIT: u64 = 5;

fn double() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for dir in [deps.clone(), deps.parent().map(|p| p.to_path_buf()).unwrap_or_default()] {
        let p = dir.join("libamdhip64.so");
        if p.exists() {
            return p;
        }
    }
    panic!("libamdhip64.so (crates/hip-emulated) not found beside {}: build the workspace", exe.display());
}

fn trace(lib: &libloading::Library) -> Vec<(u64, u64)> {
    // SAFETY: the double's trace function, of this signature.
    let f = unsafe { lib.get::<unsafe extern "C" fn(*mut u64, usize) -> usize>(b"anycuda_hip_emulated_trace\0") }.expect("trace");
    // SAFETY: NULL with capacity 0, then room for n pairs.
    let n = unsafe { f(std::ptr::null_mut(), 0) };
    let mut buf = vec![0u64; 2 * n];
    let n = unsafe { f(buf.as_mut_ptr(), n) }.min(n);
    buf[..2 * n].chunks_exact(2).map(|c| (c[0], c[1])).collect()
}

#[test]
fn a_queue_waits_for_another_queues_record_on_the_device() {
    std::env::set_var("ANYCUDA_HIP_LIBRARY", double());
    std::env::set_var("ANYCUDA_CACHE_DIR", "off");
    let backend = HipBackend::start().expect("the backend starts on the double");
    let q1 = backend.create_queue(0, 0).expect("a queue").expect("a HIP queue");
    let q2 = backend.create_queue(0, 0).expect("a queue").expect("a HIP queue");
    let stream = |q: &dyn BackendQueue| q.as_any().downcast_ref::<HipQueue>().expect("a HIP queue").stream() as u64;
    let event = q1.record().expect("a record");
    assert!(q2.waits_on_device());
    assert_eq!(q2.wait_event(&*event).ok(), Some(true), "the HIP queue did not wait on the device");
    // SAFETY: the library the backend loaded (found again, not re-run).
    let lib = unsafe { libloading::Library::new(double()) }.expect("the double");
    let ops = trace(&lib);
    assert_eq!(ops.last(), Some(&(stream(&*q2), WAIT)), "the wait is not on the waiting queue's HIP stream: {ops:x?}");
    assert_ne!(stream(&*q1), stream(&*q2));
    // An event of another backend is the host's to wait for.
    let host = HostEvent { at: std::time::Instant::now() };
    assert_eq!(q2.wait_event(&host).ok(), Some(false));
    assert_eq!(trace(&lib).len(), ops.len(), "a wait was enqueued for a foreign event");
    assert!(q2.synchronize().is_ok());
}

/// The double's trace operation of `hipModuleLoadData` (`op::MODULE_LOAD`).
const MODULE_LOAD: u64 = 7;

/// A kernel compiled apart runs its fast code first; the optimised code,
/// compiled in the background after that launch (GPU launches are not
/// timed), replaces it once ready: one more code object loaded, once, and
/// the same results.
#[test]
fn a_kernel_moves_to_its_optimised_code_once_it_is_compiled() {
    use driver::backend::{LaunchParams, ModuleOptions};
    std::env::set_var("ANYCUDA_HIP_LIBRARY", double());
    std::env::set_var("ANYCUDA_CACHE_DIR", "off");
    std::env::set_var("ANYCUDA_HIP_EMULATED_ARCH", "gfx1100");
    let backend = HipBackend::start().expect("the backend starts on the double");
    const PTX: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\
        .visible .entry scale(.param .u64 out, .param .u32 k)\n{\n.reg .b32 %r<5>;\n.reg .b64 %rd<4>;\n\
        ld.param.u64 %rd1, [out];\nld.param.u32 %r1, [k];\nmov.u32 %r2, %tid.x;\nmul.lo.u32 %r3, %r2, %r1;\n\
        mul.wide.u32 %rd2, %r2, 4;\nadd.u64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r3;\nret;\n}\n";
    let module = backend.load_module(0, PTX, &ModuleOptions { target: 80, ..Default::default() }).expect("the module loads");
    let out = backend.alloc(0, 64 * 4).expect("alloc");
    // SAFETY: the library the backend loaded (found again, not re-run).
    let lib = unsafe { libloading::Library::new(double()) }.expect("the double");
    let loads = || trace(&lib).iter().filter(|&&(_, op)| op == MODULE_LOAD).count();
    let before = loads();
    let run = |k: u32| {
        let mut params = out.to_le_bytes().to_vec();
        params.extend_from_slice(&k.to_le_bytes());
        let launch = LaunchParams {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            dynamic_shared_bytes: 0,
            params: &params,
            cooperative: false,
            pending_launch_limit: 2048,
            heap_limit: 8 << 20,
            printf_fifo_size: 1 << 20,
        };
        module.launch(0, &launch).expect("the launch succeeds");
        let mut bytes = vec![0u8; 64 * 4];
        backend.copy_dtoh(&mut bytes, out).expect("copy");
        let got: Vec<u32> = bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(got, (0..64).map(|t| t * k).collect::<Vec<u32>>());
    };
    run(3);
    assert_eq!(loads() - before, 1, "the first launch loads the kernel's fast code");
    jit::wait_for_background_compiles();
    run(5);
    assert_eq!(loads() - before, 2, "the next launch loads the optimised code");
    run(7);
    assert_eq!(loads() - before, 2, "and keeps it");
}
