//! Helpers for tests that launch kernels written in Rust against the
//! `cpu_abi` contract.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use backend_cpu::{BlockCtx, Executor, ExecutorConfig, KernelInfo, LoadedKernel, OutputSink};
use compiler::cpu_abi::{BlockFn, ThreadFn};

/// Collects device output instead of writing it to the process's stdout.
#[derive(Default)]
pub struct Capture {
    pub out: Mutex<Vec<u8>>,
    pub err: Mutex<Vec<u8>>,
}

impl OutputSink for Capture {
    fn stdout(&self, bytes: &[u8]) {
        self.out.lock().unwrap().extend_from_slice(bytes);
    }
    fn stderr(&self, bytes: &[u8]) {
        self.err.lock().unwrap().extend_from_slice(bytes);
    }
}

impl Capture {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().unwrap()).into_owned()
    }
}

pub fn executor_with(config: ExecutorConfig) -> (Executor, Arc<Capture>) {
    let capture = Arc::new(Capture::default());
    let config = ExecutorConfig { output: Some(capture.clone()), ..config };
    (Executor::new(config), capture)
}

pub fn executor() -> (Executor, Arc<Capture>) {
    executor_with(ExecutorConfig::default())
}

pub fn info(name: &str, needs_scheduler: bool) -> KernelInfo {
    KernelInfo {
        name: name.into(),
        params: Vec::new(),
        param_bytes: 0,
        static_shared_bytes: 0,
        dynamic_shared_offset: 0,
        needs_scheduler,
        spin_waits: true,
        reqntid: None,
        maxntid: None,
        local_bytes: 0,
        lanes: 1,
        frame_bytes: 0,
        lockstep_guard: None,
        privatise: None,
        calls_malloc: false,
        calls_printf: false,
    }
}

/// A kernel run on the scheduled path (one coroutine per thread).
pub fn scheduled(thread: ThreadFn) -> LoadedKernel {
    LoadedKernel { thread, block: None, info: info("scheduled", true), code: Vec::new().into() }
}

/// A kernel run on the fast path (whole blocks).
pub fn fast(thread: ThreadFn, block: BlockFn) -> LoadedKernel {
    LoadedKernel { thread, block: Some(block), info: info("fast", false), code: Vec::new().into() }
}

/// A parameter buffer of 8-byte slots.
pub fn params(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Slot `i` of a parameter buffer made by [`params`].
///
/// # Safety
/// `params` must hold at least `i + 1` slots.
pub unsafe fn arg(params: *const u8, i: usize) -> u64 {
    unsafe { params.cast::<u64>().add(i).read_unaligned() }
}

/// # Safety
/// `ctx` must be the kernel's context.
pub unsafe fn ctx<'a>(ctx: *mut BlockCtx) -> &'a BlockCtx {
    unsafe { &*ctx }
}

pub fn linear(ctx: &BlockCtx, x: u32, y: u32, z: u32) -> u32 {
    x + y * ctx.ntid[0] + z * ctx.ntid[0] * ctx.ntid[1]
}

pub fn block_linear(ctx: &BlockCtx) -> u32 {
    ctx.ctaid[0] + ctx.ctaid[1] * ctx.nctaid[0] + ctx.ctaid[2] * ctx.nctaid[0] * ctx.nctaid[1]
}

/// A `Vec` whose address goes into a parameter slot.
pub fn addr<T>(v: &mut [T]) -> u64 {
    v.as_mut_ptr() as u64
}
