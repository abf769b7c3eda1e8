//! PTX semantics lowered to LLVM IR, and from there to target code.
//!
//! The entry point is [`compile`]: a parsed PTX module and a [`Target`] in,
//! a relocatable object and a description of every kernel out. What the
//! host-CPU object expects from its runtime is specified in [`cpu_abi`].

mod affine;
mod arith;
mod async_copy;
mod convert;
pub mod cpu_abi;
mod ir;
pub mod layout;
mod lower;
mod matrix;
mod memory;
mod shared_index;
pub mod softfloat;
mod sync;
mod targets;
mod warp;

use thiserror::Error;

pub use layout::{describe, describe_with_options};

/// Choices that change the code a compile produces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Which kernels run as warps (32 lanes per call over LLVM vectors, see
    /// `warp.rs`) rather than one thread per call.
    pub warp: WarpMode,
    /// For tests: the lane classification that stands behind a lane-affine
    /// register's run-time bit (see `affine.rs`), and the general version
    /// of a region lowered twice for its affine registers, trap instead of
    /// running, so a test can show that a kernel's addresses all took the
    /// affine path. Never set for programs.
    pub strict_affine: bool,
}

/// Where warp mode is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarpMode {
    /// Never: every kernel runs one thread per call.
    Off,
    /// For kernels whose threads wait for each other (barriers, warp
    /// collectives, spin loops), which thread mode runs as one coroutine
    /// per thread. Kernels without waiting run whole blocks as a loop over
    /// threads, which LLVM vectorises as well and with less overhead.
    WhereThreadsWait,
    /// For every kernel warp mode can lower (tests of the warp lowering).
    Always,
}

impl Default for Options {
    /// From the environment variable `ANYCUDA_WARP`: `0` (off), `all`
    /// (always); otherwise where threads wait.
    fn default() -> Options {
        let warp = match std::env::var("ANYCUDA_WARP").as_deref() {
            Ok("0") => WarpMode::Off,
            Ok("all") => WarpMode::Always,
            _ => WarpMode::WhereThreadsWait,
        };
        Options { warp, strict_affine: false }
    }
}

impl Options {
    /// A short string identifying the options, for cache keys.
    pub fn fingerprint(&self) -> String {
        let w = match self.warp {
            WarpMode::Off => "off",
            WarpMode::WhereThreadsWait => "wait",
            WarpMode::Always => "all",
        };
        let strict = if self.strict_affine { ",strict-affine" } else { "" };
        format!("warp={w}{strict}")
    }
}

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
    /// Threads run by one call of the `thread` function: 1 (thread mode,
    /// its arguments are the thread's x, y, z) or 32 (warp mode: a
    /// `cpu_abi::WarpFn` of the warp index in the block and its frame).
    pub lanes: u32,
    /// Bytes of the frame each warp of a warp-mode kernel saves its state
    /// in when it suspends (`cpu_abi::WarpFn`); 0 in thread mode.
    pub frame_bytes: u32,
}

/// A module-scope variable (`.global` or `.const`) the driver can look up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalInfo {
    pub name: String,
    pub size: u64,
    pub constant: bool,
    /// `.attribute(.managed)`
    pub managed: bool,
}

/// Identifies the compiler's code generation: a hash of the sources that
/// decide what code is generated. Caches of compiled code key on it.
pub const SOURCE_REVISION: &str = env!("ANYCUDA_COMPILER_REVISION");

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
    /// An AMD GPU (`amdgcn-amd-amdhsa`), by HIP architecture name
    /// (`gfx1100`, `gfx90a`, or a target-id such as `gfx90a:xnack-`); the
    /// object is a linked code object for `hipModuleLoadData`.
    Amdgpu { arch: String },
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

/// A compiled module: a relocatable object for the target and what it holds.
#[derive(Clone, Debug)]
pub struct CompiledModule {
    pub object: Vec<u8>,
    pub info: ModuleInfo,
}

/// Lowers a module to LLVM IR text (before optimisation), for inspection
/// and golden tests. `src` is the module's source text, for error positions.
pub fn emit_ir(module: &ptx::ast::Module, src: &str) -> Result<String, CompileError> {
    let mut cx = lower::ModuleCx::new(module, src, &Target::HostCpu, &Options::default());
    cx.lower_module()
}

/// Compiles a parsed module for `target`. `src` is the module's source text
/// (for error positions).
pub fn compile(module: &ptx::ast::Module, src: &str, target: &Target) -> Result<CompiledModule, CompileError> {
    compile_with_options(module, src, target, &Options::default())
}

/// [`compile`] with explicit options.
pub fn compile_with_options(module: &ptx::ast::Module, src: &str, target: &Target, opts: &Options) -> Result<CompiledModule, CompileError> {
    targets::check_module(target, module, src)?;
    let mut cx = lower::ModuleCx::new(module, src, target, opts);
    let ir = cx.lower_module()?;
    let ir = targets::finish_ir(target, ir, &cx.decls, &cx.helpers);
    let info = layout::describe_for(module, &cx.a, target, opts);
    let object = match target {
        Target::HostCpu => codegen::host_object(&ir)?,
        Target::Amdgpu { arch } => targets::amdgpu::object(&ir, &targets::amdgpu::Arch::parse(arch)?)?,
    };
    Ok(CompiledModule { object, info })
}

/// The LLVM IR text [`compile`] hands to the code generator of `target`
/// (before optimisation), for inspection and golden tests.
pub fn emit_target_ir(module: &ptx::ast::Module, src: &str, target: &Target) -> Result<String, CompileError> {
    targets::check_module(target, module, src)?;
    let mut cx = lower::ModuleCx::new(module, src, target, &Options::default());
    let ir = cx.lower_module()?;
    Ok(targets::finish_ir(target, ir, &cx.decls, &cx.helpers))
}

/// Identifies the code a [`compile`] call produces for `target` on this
/// machine: part of any cache key for compiled code.
pub fn target_fingerprint(target: &Target) -> String {
    match target {
        Target::HostCpu => codegen::host_fingerprint(),
        Target::Amdgpu { arch } => match targets::amdgpu::Arch::parse(arch) {
            Ok(a) => targets::amdgpu::fingerprint(&a),
            // Nothing compiles for an unknown processor; the name alone keys it.
            Err(_) => format!("amdgcn-amd-amdhsa|{arch}|invalid"),
        },
    }
}

mod codegen {
    use crate::CompileError;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::passes::PassBuilderOptions;
    use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};
    use inkwell::OptimizationLevel;
    use std::sync::OnceLock;

    /// Registers the host target once; other targets initialise after it,
    /// since LLVM's target registry is not safe to extend concurrently.
    pub(crate) fn init() -> Result<(), CompileError> {
        static INIT: OnceLock<Result<(), String>> = OnceLock::new();
        INIT.get_or_init(|| Target::initialize_native(&InitializationConfig::default())).clone().map_err(CompileError::Llvm)
    }

    fn host_machine() -> Result<TargetMachine, CompileError> {
        init()?;
        let triple = TargetMachine::get_default_triple();
        let target = Target::from_triple(&triple).map_err(|e| CompileError::Llvm(e.to_string()))?;
        let cpu = TargetMachine::get_host_cpu_name();
        let features = TargetMachine::get_host_cpu_features();
        target
            .create_target_machine(
                &triple,
                &cpu.to_string_lossy(),
                &features.to_string_lossy(),
                OptimizationLevel::Default,
                RelocMode::PIC,
                CodeModel::Default,
            )
            .ok_or_else(|| CompileError::Llvm(format!("no target machine for {}", triple.as_str().to_string_lossy())))
    }

    pub fn host_fingerprint() -> String {
        let triple = TargetMachine::get_default_triple();
        format!(
            "{}|{}|{}",
            triple.as_str().to_string_lossy(),
            TargetMachine::get_host_cpu_name().to_string_lossy(),
            TargetMachine::get_host_cpu_features().to_string_lossy()
        )
    }

    pub fn host_object(ir: &str) -> Result<Vec<u8>, CompileError> {
        let tm = host_machine()?;
        let context = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "ptx");
        let module = context.create_module_from_ir(buf).map_err(|e| CompileError::Llvm(e.to_string()))?;
        module.set_triple(&tm.get_triple());
        module.set_data_layout(&tm.get_target_data().get_data_layout());
        module.verify().map_err(|e| CompileError::Llvm(e.to_string()))?;
        module.run_passes("default<O2>", &tm, PassBuilderOptions::create()).map_err(|e| CompileError::Llvm(e.to_string()))?;
        let obj = tm.write_to_memory_buffer(&module, FileType::Object).map_err(|e| CompileError::Llvm(e.to_string()))?;
        Ok(obj.as_slice().to_vec())
    }
}
