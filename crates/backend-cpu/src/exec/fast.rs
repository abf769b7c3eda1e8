//! The fast path: the compiled `block` function runs whole blocks, one
//! after the other, inside a single coroutine per runner and launch. The
//! coroutine exists only so that a fault, trap or assertion can abandon the
//! block without unwinding through JIT frames.

use std::sync::Arc;

use compiler::cpu_abi::BlockCtx;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::fault::{self, FpState, RunEnd, TrapSlot};
use super::job::Job;
use super::local::Local;
use super::runtime::BlockRt;
use super::LaunchError;

pub(crate) fn run(job: &Arc<Job>, local: &mut Local, smid: u32) {
    let Some(block_fn) = job.block_fn else {
        job.fail(LaunchError::Internal("fast path without a block function".into()));
        return;
    };
    let shared_len = job.shared_bytes as usize;
    run_in_coroutine(job, local, smid, move |rt, job, ctx, shared| {
        // Blocks come in small runs: one claim and one finish per run
        // rather than two contended atomics per block. Fast-path kernels
        // do not wait for other blocks (the compiler sends those to the
        // scheduled path), so a run never holds a block another one waits
        // for.
        while let Some(run) = job.claim_run() {
            rt.unfinished.set(run.end - run.start);
            for index in run.clone() {
                if job.failed() {
                    break;
                }
                let block = job.block_index(index);
                rt.block.set(block);
                // SAFETY: `ctx` is the runner's context and `shared` holds
                // `shared_len` bytes (`run_in_coroutine`); the block
                // function has the BlockFn contract.
                unsafe {
                    (*ctx).ctaid = block;
                    std::ptr::write_bytes(shared, 0, shared_len);
                    block_fn(job.params(), ctx);
                    super::local::flush_block_adds(ctx);
                }
            }
            rt.unfinished.set(0);
            job.finish_blocks(run.end - run.start);
        }
    });
}

/// Runs `body` inside one coroutine on a block stack, with the runner's
/// block runtime, context and shared-memory window (at least the job's
/// `shared_bytes`). A fault, trap or assertion abandons the coroutine
/// without unwinding through JIT frames; the launch then fails, and the
/// blocks `body` claimed but did not finish (`BlockRt::unfinished`) count
/// as finished.
pub(crate) fn run_in_coroutine<F>(job: &Arc<Job>, local: &mut Local, smid: u32, body: F)
where
    F: FnOnce(&BlockRt, &Job, *mut BlockCtx, *mut u8) + 'static,
{
    let shared_len = job.shared_bytes as usize;
    let Some(shared) = local.shared_window(shared_len) else {
        job.fail(LaunchError::OutOfResources(format!("{shared_len} bytes of shared memory")));
        return;
    };
    let stack = match local.take_fast_stack(job.shared.config.block_stack_size) {
        Ok(stack) => stack,
        Err(error) => {
            job.fail(LaunchError::OutOfResources(format!("block stack: {error}")));
            return;
        }
    };
    let limit = stack.lowest();
    let rt = BlockRt::new(job, false);
    rt.fast_stack.set((stack.usable_low(), stack.top()));
    let mut ctx = job.block_ctx(smid, shared, (&rt as *const BlockRt).cast_mut().cast());
    ctx.private_adds = local.private_adds(job.privatise);
    let ctx_ptr: *mut BlockCtx = &mut ctx;
    let rt_ptr: *const BlockRt = &rt;
    let job_ptr: *const Job = Arc::as_ptr(job);
    let mut coroutine: Coroutine<(), (), RunEnd, _> = Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| -> RunEnd {
        // SAFETY: `rt`, `ctx` and the job outlive the coroutine, which
        // finishes or is reset before this function returns; only this
        // thread touches `rt` and `ctx` meanwhile.
        let (rt, job) = unsafe { (&*rt_ptr, &*job_ptr) };
        rt.fast_yielder.set(yielder);
        body(rt, job, ctx_ptr, shared);
        Ok(())
    });
    let fp = FpState::save();
    let trap = TrapSlot::default();
    if job.deadline.is_some() {
        trap.watch(&job.cancel, &job.code);
    }
    let registration = fault::register(&trap);
    trap.arm(coroutine.trap_handler(), limit);
    let result = coroutine.resume(());
    trap.disarm();
    drop(registration);
    let error = match result {
        CoroutineResult::Return(Ok(())) => None,
        CoroutineResult::Return(Err(fault)) => Some(fault.into_error(rt.block.get(), job.timeout)),
        CoroutineResult::Yield(()) => {
            // A runtime call ended the block (trap, assertion, misuse,
            // deadlock).
            // SAFETY: the coroutine is suspended inside a runtime function
            // that owns nothing; the JIT frames below it need no cleanup.
            unsafe { coroutine.force_reset() };
            Some(rt.error.take().unwrap_or_else(|| LaunchError::Internal("block ended without a reason".into())))
        }
    };
    if let Some(error) = error {
        fp.restore();
        tracing::debug!(block = ?rt.block.get(), "block failed: {error}");
        job.fail(error);
        // The abandoned block never flushed its privatised adds.
        local.discard_private_adds();
        // The failed block and the rest of its run.
        job.finish_blocks(rt.unfinished.get());
    }
    local.put_fast_stack(coroutine.into_stack());
}
