//! PTX semantics lowered to LLVM IR, and from there to target code.
//!
//! The entry point is [`compile`]: a parsed PTX module and a [`Target`] in,
//! a relocatable object and a description of every kernel out. What the
//! host-CPU object expects from its runtime is specified in [`cpu_abi`].

pub mod cpu_abi;

use thiserror::Error;

/// Where a kernel parameter lives in the parameter buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub offset: u32,
    pub size: u32,
    pub align: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The PTX name (the mangled C++ name for nvcc output).
    pub name: String,
    pub params: Vec<ParamInfo>,
    /// Size of the whole parameter buffer.
    pub param_bytes: u32,
    /// Static shared memory of the kernel, in bytes (the dynamic part starts
    /// at `dynamic_shared_offset`, this rounded up to the dynamic arrays' alignment).
    pub static_shared_bytes: u32,
    pub dynamic_shared_offset: u32,
    /// Threads may wait for each other (barriers, warp collectives, `exit`
    /// inside a called function, loops that may spin on memory): the
    /// backend must run them as cooperatively scheduled coroutines. When
    /// false, the `block` function runs the whole block.
    pub needs_scheduler: bool,
    /// `.reqntid` / `.maxntid` (missing dimensions are 1).
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    /// Largest `.local` frame of the kernel's own body, for attribute queries.
    pub local_bytes: u32,
}

/// A module-scope variable (`.global` or `.const`) the driver can look up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalInfo {
    pub name: String,
    pub size: u64,
    pub constant: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    pub kernels: Vec<KernelInfo>,
    pub globals: Vec<GlobalInfo>,
}

/// Code generation targets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The machine the compiler runs on.
    HostCpu,
}

/// Why a module cannot be compiled. Each error names the offending PTX
/// construct and its position.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CompileError {
    #[error("{line}:{column}: unsupported: {what} (in `{function}`)")]
    Unsupported { function: String, what: String, line: u32, column: u32 },
    #[error("{line}:{column}: invalid PTX: {what} (in `{function}`)")]
    Invalid { function: String, what: String, line: u32, column: u32 },
    #[error("LLVM: {0}")]
    Llvm(String),
}
