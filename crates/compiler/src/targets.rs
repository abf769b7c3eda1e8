//! Target descriptions: what each code generation target adds around the
//! target-neutral lowering.
//!
//! The lowering of a kernel body is the same for every target: a `thread`
//! function taking `(params, ctx, tid.x, tid.y, tid.z)` that reads block
//! facts from a [`crate::cpu_abi::BlockCtx`] and calls the runtime functions
//! of [`crate::cpu_abi::RUNTIME_SYMBOLS`]. A target supplies
//! * the kernel entry points around the `thread` function, and
//! * the runtime functions, either as definitions in the module or as
//!   external symbols its loader resolves.

use crate::{CompileError, KernelInfo, Target};
use std::collections::BTreeMap;

/// Entry points of one kernel for `target`.
pub fn kernel_entries(target: &Target, kernel: &KernelInfo) -> Result<String, CompileError> {
    match target {
        // The CPU backend calls `thread` per coroutine, or `block` for a whole block.
        Target::HostCpu => Ok(crate::lower::block_function(&kernel.name)),
    }
}

/// Definitions the module needs from the target's runtime library, given
/// the external declarations the lowering emitted.
pub fn runtime_library(target: &Target, _decls: &BTreeMap<String, String>) -> Result<String, CompileError> {
    match target {
        // The CPU backend resolves `__anycuda_*` when it loads the object.
        Target::HostCpu => Ok(String::new()),
    }
}
