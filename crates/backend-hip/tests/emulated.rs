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
