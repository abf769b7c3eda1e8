//! Target descriptions: what each code generation target adds around the
//! target-neutral lowering.
//!
//! The lowering of a kernel body is the same for every target: a `thread`
//! function taking `(params, ctx, tid.x, tid.y, tid.z)` that reads block
//! facts from a [`crate::cpu_abi::BlockCtx`] and calls the runtime functions
//! of [`crate::cpu_abi::runtime`]. A target supplies
//! * the kernel entry points around the `thread` function, and
//! * the runtime functions, either as definitions in the module or as
//!   external symbols its loader resolves.

pub mod amdgpu;

use crate::{CompileError, KernelInfo, Target};
use std::collections::BTreeMap;

/// Entry points of one kernel for `target`.
pub fn kernel_entries(target: &Target, kernel: &KernelInfo) -> Result<String, CompileError> {
    match target {
        // The CPU backend calls `thread` per coroutine, or `block` for a whole block.
        Target::HostCpu if kernel.lanes > 1 => Ok(crate::lower::warp_block_function(&kernel.name, kernel.param_bytes, kernel.frame_bytes)),
        Target::HostCpu => Ok(crate::lower::block_function(&kernel.name, kernel.param_bytes)),
        Target::Amdgpu { .. } => Ok(amdgpu::kernel_entry(kernel)),
    }
}

/// Definitions the module needs from the target's runtime library, given
/// the external declarations the lowering emitted.
pub fn runtime_library(target: &Target, decls: &BTreeMap<String, String>) -> Result<String, CompileError> {
    match target {
        // The CPU backend resolves `__anycuda_*` when it loads the object.
        Target::HostCpu => Ok(String::new()),
        Target::Amdgpu { arch } => amdgpu::runtime_library(&amdgpu::Arch::parse(arch)?, decls),
    }
}

/// Rejects, before lowering, what the target cannot run at all, naming the
/// PTX construct and its position.
pub fn check_module(target: &Target, module: &ptx::ast::Module, src: &str) -> Result<(), CompileError> {
    match target {
        Target::HostCpu => Ok(()),
        Target::Amdgpu { arch } => {
            amdgpu::Arch::parse(arch)?;
            amdgpu::check_module(module, src)
        }
    }
}

/// The lowered module text as the target's code generator takes it.
///
/// The lowering declares every runtime function it calls; a target that
/// defines some of them in [`runtime_library`] must drop those
/// declarations, since LLVM rejects a declaration followed by a definition
/// of the same name. A target may also swap helper functions of the
/// lowering (`helpers`: name to definition text) for its own.
pub fn finish_ir(target: &Target, ir: String, decls: &BTreeMap<String, String>, helpers: &BTreeMap<String, String>) -> String {
    match target {
        Target::HostCpu => ir,
        Target::Amdgpu { .. } => {
            let mut ir = ir;
            for (name, text) in helpers {
                if let Some(own) = amdgpu::replacement(name) {
                    ir = ir.replacen(text.as_str(), &own, 1);
                }
            }
            let defined: std::collections::HashSet<&str> =
                decls.iter().filter(|(name, _)| amdgpu::defines(name)).map(|(_, decl)| decl.as_str()).collect();
            if defined.is_empty() {
                return ir;
            }
            let mut out = String::with_capacity(ir.len());
            for line in ir.split_inclusive('\n') {
                if !defined.contains(line.trim_end_matches('\n')) {
                    out.push_str(line);
                }
            }
            out
        }
    }
}
