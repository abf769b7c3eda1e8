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
mod devrt;
mod directed;
mod forwarding;
mod ir;
pub mod layout;
pub mod lockstep;
mod lower;
mod matrix;
mod meet;
mod memcheck;
mod memory;
pub mod printf;
pub mod privatise;
pub mod profile;
mod shared_helpers;
mod shared_index;
pub mod softfloat;
mod sync;
pub mod targets;
mod texture;
mod uniform;
mod video;
mod warp;

use thiserror::Error;

pub use layout::{describe, describe_with_options};
pub use targets::{CodeTarget, TargetFacts};

/// Choices that change the code a compile produces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// How much the code generator works for faster code (host target;
    /// AMDGPU code is always optimised).
    pub tier: Tier,
    /// Which kernels run as warps (32 lanes per call over LLVM vectors, see
    /// `warp.rs`) rather than one thread per call.
    pub warp: WarpMode,
    /// For tests: the lane classification that stands behind a lane-affine
    /// register's run-time bit (see `affine.rs`), and the general version
    /// of a region lowered twice for its affine registers, trap instead of
    /// running, so a test can show that a kernel's addresses all took the
    /// affine path (optimised tier: the fast tier's access helpers
    /// classify lanes without trapping). Never set for programs.
    pub strict_affine: bool,
    /// Checked mode (`ANYCUDA_MEMCHECK=1`, host target only): every load,
    /// store, atomic and asynchronous or matrix copy of a kernel is checked
    /// against the live allocations, the block's shared window and the
    /// thread's local memory before it happens (see `memcheck.rs`); kernels
    /// run thread by thread. Off, the code is exactly the unchecked code.
    pub memcheck: bool,
}

/// Optimisation tiers: the same semantics, different compile and run times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Scalar replacement, early common-subexpression elimination and CFG
    /// simplification, then LLVM's fast instruction selector: about a tenth of the compile
    /// time of [`Tier::Optimized`] (nvcc corpus, median per kernel: 14 ms
    /// against 125 ms of CPU time), code two to ten times slower (the
    /// kernel benchmarks). Units with warp-mode code get LLVM's `Less` code
    /// generator instead (`targets::host`): about a fifth of the optimised
    /// compile time, code about as fast. For a kernel's first launches.
    Fast,
    /// LLVM's `default<O2>` pipeline and full instruction selection.
    Optimized,
}

/// What one compile produces from a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Every kernel, function and variable.
    Module,
    /// What a module cut into units ([`partition`]) loads with it: the
    /// `.global`/`.const` variables, with their initializers, the
    /// functions those point to, and the kernels that do not compile apart
    /// (none on the host; on AMDGPU those that name a variable), with
    /// what they reach.
    Shared,
    /// One kernel (its item index in `Module::items`) and the functions it
    /// reaches; the module's variables are external symbols, defined by the
    /// `Shared` unit loaded beside it.
    Kernel(u32),
}

/// Where warp mode is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarpMode {
    /// Never: every kernel runs one thread per call.
    Off,
    /// The default: every kernel whose results could differ from a GPU's
    /// when its threads run one after another, as far as warp mode can
    /// lower it: kernels whose threads wait for each other (barriers, warp
    /// collectives, spin loops), and kernels whose lanes may observe each
    /// other's memory effects (`lockstep`: shared memory, global memory a
    /// lane stores and another may read or overwrite). Only kernels the
    /// lockstep analysis proves independent run whole blocks as a loop
    /// over threads (the fast path).
    Auto,
    /// Only for kernels whose threads wait for each other, as before the
    /// lockstep analysis (`ANYCUDA_WARP=wait`): faster for kernels that
    /// exchange nothing between the lanes of a warp without synchronising,
    /// wrong for warp-synchronous code.
    WhereThreadsWait,
    /// For every kernel warp mode can lower (tests of the warp lowering).
    Always,
}

impl Default for Options {
    /// From the environment variable `ANYCUDA_WARP`: `0` (off), `all`
    /// (always), `wait` (where threads wait); otherwise automatic.
    fn default() -> Options {
        let warp = match std::env::var("ANYCUDA_WARP").as_deref() {
            Ok("0") => WarpMode::Off,
            Ok("all") => WarpMode::Always,
            Ok("wait") => WarpMode::WhereThreadsWait,
            _ => WarpMode::Auto,
        };
        Options { tier: Tier::Optimized, warp, strict_affine: false, memcheck: memcheck_from_env() }
    }
}

impl Options {
    /// A short string identifying the options, for cache keys.
    pub fn fingerprint(&self) -> String {
        let w = match self.warp {
            WarpMode::Off => "off",
            WarpMode::Auto => "auto",
            WarpMode::WhereThreadsWait => "wait",
            WarpMode::Always => "all",
        };
        let strict = if self.strict_affine { ",strict-affine" } else { "" };
        let tier = match self.tier {
            Tier::Fast => "fast",
            Tier::Optimized => "opt",
        };
        let memcheck = if self.memcheck { ",memcheck" } else { "" };
        format!("warp={w}{strict}{memcheck},tier={tier}")
    }
}

/// Whether `ANYCUDA_MEMCHECK` asks for checked mode: set and neither empty,
/// `0`, `off`, `no` nor `false`.
pub fn memcheck_from_env() -> bool {
    std::env::var("ANYCUDA_MEMCHECK").is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "off" | "no" | "false"))
}

/// The shadow tools `ANYCUDA_MEMCHECK` asks for ([`cpu_abi::check_tools`]
/// bits; see [`check_tools_from`]).
pub fn check_tools_from_env() -> Result<u32, String> {
    check_tools_from(std::env::var("ANYCUDA_MEMCHECK").ok().as_deref().unwrap_or(""))
}

/// The shadow tools a value of `ANYCUDA_MEMCHECK` names: a comma-separated
/// list of `memcheck` (or `1`, `on`, `yes`, `true`: bounds checks alone,
/// which every checked run does), `initcheck`, `initcheck-host` (initcheck
/// that also reports device-to-host copies of unwritten bytes) and
/// `racecheck`. An unknown word is an error naming it.
pub fn check_tools_from(value: &str) -> Result<u32, String> {
    let mut tools = 0;
    for word in value.split(',').map(|w| w.trim().to_ascii_lowercase()) {
        match word.as_str() {
            "" | "0" | "off" | "no" | "false" | "1" | "on" | "yes" | "true" | "memcheck" => {}
            "initcheck" => tools |= cpu_abi::check_tools::INITCHECK,
            "initcheck-host" => tools |= cpu_abi::check_tools::INITCHECK | cpu_abi::check_tools::INITCHECK_HOST,
            "racecheck" => tools |= cpu_abi::check_tools::RACECHECK,
            other => return Err(format!("unknown checking tool `{other}` (memcheck, initcheck, initcheck-host, racecheck)")),
        }
    }
    Ok(tools)
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
    /// A loop of the kernel or of a function it may call may wait for
    /// memory another thread writes (`Facts::yield_points`: a spin lock, a
    /// flag, a grid-wide barrier), possibly another block's: a runner must
    /// not hold blocks it has not started while one of them runs. When
    /// false, no block waits for another.
    pub spin_waits: bool,
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
    /// A kernel compiled thread by thread (the fast path) that is exact
    /// only for launches meeting these conditions (`lockstep::Conditions`);
    /// any other launch must run the kernel's lockstep version, compiled
    /// on demand as the unit [`Unit::Kernel`] under
    /// [`WarpMode::Always`]. Set by units of one kernel only: a whole
    /// module carries each such kernel's lockstep version and checks the
    /// conditions in its block function.
    pub lockstep_guard: Option<LaunchGuard>,
    /// The kernel's add-only global atomics gather in a private table
    /// per runner (`cpu_abi::BlockCtx::private_adds`) for launches this
    /// condition holds for (`privatise::Guard::holds`); `None`: the
    /// kernel has none.
    pub privatise: Option<privatise::Guard>,
    /// The kernel or a function it may call calls device `malloc` or
    /// `free`: once it has been launched, the context's heap size is fixed
    /// (CUDA refuses `cudaLimitMallocHeapSize` then).
    pub calls_malloc: bool,
    /// The same for device `printf` (`vprintf`) and
    /// `cudaLimitPrintfFifoSize`.
    pub calls_printf: bool,
}

/// Launch conditions of a kernel's thread-by-thread code, in terms a
/// backend can check before a launch (see [`KernelInfo::lockstep_guard`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchGuard {
    /// The block must have one dimension (`ntid.y == ntid.z == 1`).
    pub one_dimensional: bool,
    /// Pairs of base addresses that must stay apart (`lockstep::Apart`).
    pub apart: Vec<GuardApart>,
    /// Pairs of accesses whose bytes over the whole launch must not
    /// overlap (`lockstep::Disjoint`; 32-bit parameters by byte offset).
    pub disjoint: Vec<lockstep::Disjoint<GuardBase, u32>>,
    /// Stores in loops whose threads must write disjoint bytes
    /// (`lockstep::Injective`; 32-bit parameters by byte offset).
    pub injective: Vec<lockstep::Injective<GuardBase, u32>>,
}

/// `(a + a_offset) - (b + b_offset)` must be 0 (when `equal`), or at least
/// `min` in magnitude and at least `min` away from `wrap`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardApart {
    pub a: GuardBase,
    pub a_offset: i64,
    pub b: GuardBase,
    pub b_offset: i64,
    pub equal: bool,
    pub min: u64,
    pub wrap: u64,
}

/// Where a base address of a [`GuardApart`] comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GuardBase {
    /// Zero.
    None,
    /// The 64-bit kernel parameter at this byte offset of the buffer.
    Param(u32),
    /// The address of this module variable (PTX name).
    Global(String),
}

impl LaunchGuard {
    /// Whether a launch with parameter buffer `params` and a grid of
    /// `grid` blocks of `block` threads meets the conditions; `global`
    /// gives a module variable's address. Anything unknown (a parameter
    /// past the buffer, a variable not found, a range too large to bound)
    /// fails the check, which only costs speed.
    pub fn holds(&self, params: &[u8], grid: [u32; 3], block: [u32; 3], global: &dyn Fn(&str) -> Option<u64>) -> bool {
        if self.one_dimensional && (block[1] != 1 || block[2] != 1) {
            return false;
        }
        let base = |b: &GuardBase| -> Option<i64> {
            match b {
                GuardBase::None => Some(0),
                GuardBase::Param(off) => {
                    let at = *off as usize;
                    let bytes: [u8; 8] = params.get(at..at.checked_add(8)?)?.try_into().ok()?;
                    Some(u64::from_le_bytes(bytes) as i64)
                }
                GuardBase::Global(name) => global(name).map(|a| a as i64),
            }
        };
        let param32 = |at: &u32, field: u32, signed: bool| -> Option<i64> {
            let at = at.checked_add(field)? as usize;
            let bytes: [u8; 4] = params.get(at..at.checked_add(4)?)?.try_into().ok()?;
            Some(if signed { i64::from(i32::from_le_bytes(bytes)) } else { i64::from(u32::from_le_bytes(bytes)) })
        };
        let address = |b: &GuardBase| base(b).map(|a| a as u64);
        if !self.disjoint.iter().all(|d| d.holds(&address, &param32, grid, block)) {
            return false;
        }
        if !self.injective.iter().all(|d| d.holds(&address, &param32, grid, block)) {
            return false;
        }
        self.apart.iter().all(|ap| {
            let (Some(a), Some(b)) = (base(&ap.a), base(&ap.b)) else { return false };
            let d = a.wrapping_add(ap.a_offset).wrapping_sub(b.wrapping_add(ap.b_offset));
            lockstep::Apart {
                a: lockstep::Base::None,
                a_offset: 0,
                b: lockstep::Base::None,
                b_offset: 0,
                equal: ap.equal,
                min: ap.min,
                wrap: ap.wrap,
            }
            .holds(d)
        })
    }
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
    /// Functions the object calls but does not define: the host fast
    /// tier's out-of-line helpers (`noinline`: warp mode's access helpers
    /// and lane-by-lane gathers...), which every unit of a process
    /// shares instead of compiling its own copy. Whoever loads the object
    /// compiles each with [`compile_helper`] (once per process: the same
    /// [`HelperCode::ir`] is the same code) and resolves its name to it.
    /// Empty for other units.
    pub helpers: Vec<HelperCode>,
}

/// A helper function a compiled unit calls but does not define (see
/// [`CompiledModule::helpers`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HelperCode {
    /// Its symbol, as the unit's object names it.
    pub name: String,
    /// A whole LLVM IR module that defines it as its only visible symbol
    /// (with private copies of what it calls): everything its code
    /// depends on, so equal texts compile to interchangeable code.
    pub ir: String,
}

/// Compiles a helper a unit calls (see [`CompiledModule::helpers`]) to an
/// object that defines [`HelperCode::name`], with the optimised pipeline:
/// it is compiled once and runs under every unit that calls it.
pub fn compile_helper(target: &Target, helper: &HelperCode) -> Result<Vec<u8>, CompileError> {
    target.code_target()?.object(&helper.ir, Tier::Optimized, true)
}

/// Lowers a module to LLVM IR text (before optimisation), for inspection
/// and golden tests. `src` is the module's source text, for error positions.
pub fn emit_ir(module: &ptx::ast::Module, src: &str) -> Result<String, CompileError> {
    let mut cx = lower::ModuleCx::new(module, src, &Target::HostCpu, &Options::default());
    cx.lower_module()
}

/// [`emit_ir`] with explicit options.
pub fn emit_ir_with_options(module: &ptx::ast::Module, src: &str, opts: &Options) -> Result<String, CompileError> {
    let mut cx = lower::ModuleCx::new(module, src, &Target::HostCpu, opts);
    cx.lower_module()
}

/// Compiles a parsed module for `target`. `src` is the module's source text
/// (for error positions).
pub fn compile(module: &ptx::ast::Module, src: &str, target: &Target) -> Result<CompiledModule, CompileError> {
    compile_with_options(module, src, target, &Options::default())
}

/// [`compile`] with explicit options.
pub fn compile_with_options(module: &ptx::ast::Module, src: &str, target: &Target, opts: &Options) -> Result<CompiledModule, CompileError> {
    compile_unit(module, src, target, opts, Unit::Module)
}

/// How a module's code is cut into compile units for a target
/// ([`partition`]): the kernels compiled as units of their own
/// ([`Unit::Kernel`]), each at its first launch; the rest, variables
/// included, is the [`Unit::Shared`] unit, loaded with the module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Item indices of the kernels compiled apart, in module order.
    pub apart: Vec<u32>,
    /// The shared unit defines the variable table
    /// ([`cpu_abi::KernelSymbols::VARIABLE_TABLE`]): where units cannot
    /// link, kernels compiled apart read the module's variables through
    /// it, and whoever launches them passes its address
    /// (`cpu_abi::BlockCtx::variables`; on AMD GPUs the kernarg tail's
    /// `variables`).
    pub variable_table: bool,
}

/// How `module` compiles for `target`: cut into units ([`Partition`]),
/// or `None` for one unit of the whole module. The host's loader links
/// the units of a module together, so there every kernel compiles
/// apart. AMD code objects cannot see each other's variables: there a
/// kernel compiled apart reaches them through the shared unit's table of
/// their addresses ([`Partition::variable_table`]), and where the module's
/// variables cannot all be reached so (texture references, `.extern`
/// variables, initialisers that take a function's address:
/// `layout::variables_by_table`) a kernel that names a variable (itself
/// or in a function it reaches) compiles in the shared unit, with the
/// variables. A module in which something takes a kernel's address must
/// define that kernel once, and compiles whole (see
/// `layout::Analysis::unit_functions`).
pub fn partition(module: &ptx::ast::Module, target: &Target, a: &ModuleAnalysis) -> Option<Partition> {
    let links_units = target.facts().links_units;
    let (shared, _) = a.0.shared_unit(module, links_units)?;
    let variable_table = layout::has_variable_table(module, links_units);
    let apart = module
        .items
        .iter()
        .enumerate()
        .filter(|(i, it)| {
            matches!(it, ptx::ast::Item::Function(f) if f.kind == ptx::ast::FunctionKind::Entry && f.body.is_some())
                && !shared.contains(&(*i as u32))
        })
        .map(|(i, _)| i as u32)
        .collect();
    Some(Partition { apart, variable_table })
}

/// What the compiler learns about a whole module before lowering any of
/// it (call graph, shared-memory layout, which functions wait): the same
/// for every unit of the module, so a caller compiling several units of
/// one module makes it once ([`analyse`]) and passes it to each compile.
/// On llama.cpp's PTX, analysing a 12 MB module again for each of its 317
/// kernels was a quarter of the fast tier's compile time.
pub struct ModuleAnalysis(layout::Analysis);

/// Analyses `module` (see [`ModuleAnalysis`]).
pub fn analyse(module: &ptx::ast::Module) -> ModuleAnalysis {
    ModuleAnalysis(layout::Analysis::new(module))
}

/// [`describe_with_options`] with an analysis made before.
pub fn describe_analysed(module: &ptx::ast::Module, a: &ModuleAnalysis, target: &Target, opts: &Options) -> ModuleInfo {
    layout::describe_for(module, &a.0, target, opts)
}

/// How one kernel runs, and why (see [`kernel_modes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMode {
    pub name: String,
    /// As 32-lane warps; else one thread per call.
    pub warp: bool,
    /// Whether the mode gives the results of converged warps in lockstep.
    pub exact: bool,
    /// The reason, with source positions.
    pub why: String,
}

/// The execution mode of each kernel a unit defines, with the reason
/// (`lockstep` for the rule): what the JIT logs when it compiles them.
/// `src` is the module's text.
pub fn kernel_modes(module: &ptx::ast::Module, src: &str, target: &Target, opts: &Options, unit: Unit) -> Vec<KernelMode> {
    let a = layout::Analysis::new(module);
    let defined = a.unit_functions(module, unit, target.facts().links_units).unwrap_or_default();
    let mut out = Vec::new();
    for (i, item) in module.items.iter().enumerate() {
        let ptx::ast::Item::Function(f) = item else { continue };
        if f.kind != ptx::ast::FunctionKind::Entry || f.body.is_none() || !defined.contains(&(i as u32)) {
            continue;
        }
        let c = warp::choose_mode(module, src, &a, target, opts, i as u32, f);
        out.push(KernelMode { name: f.name.to_string(), warp: c.warp, exact: c.exact, why: c.why });
    }
    out
}

/// Compiles one unit of a module. The object of a `Kernel` unit refers to
/// the module's variables by their symbols; the `Shared` unit of the
/// same module defines them. Only [`Unit::Module`] is valid when
/// [`partition`] is `None`.
pub fn compile_unit(
    module: &ptx::ast::Module,
    src: &str,
    target: &Target,
    opts: &Options,
    unit: Unit,
) -> Result<CompiledModule, CompileError> {
    let a = profile::time(profile::Phase::Analyse, || analyse(module));
    compile_unit_analysed(module, src, target, opts, unit, &a)
}

/// [`compile_unit`] with an analysis of the module made before.
pub fn compile_unit_analysed(
    module: &ptx::ast::Module,
    src: &str,
    target: &Target,
    opts: &Options,
    unit: Unit,
    analysis: &ModuleAnalysis,
) -> Result<CompiledModule, CompileError> {
    use profile::{time, Phase};
    let code = target.code_target()?;
    time(Phase::Analyse, || code.check_module(module, src))?;
    let mut cx = time(Phase::Analyse, || lower::ModuleCx::with_analysis(module, src, target, opts, &analysis.0));
    time(Phase::Analyse, || cx.select_unit(unit))?;
    let ir = time(Phase::Lower, || cx.lower_module())?;
    let ir = time(Phase::Lower, || code.finish_ir(ir, &cx.decls, &cx.helpers));
    let info = time(Phase::Analyse, || layout::describe_unit(module, &cx.a, target, opts, unit));
    let warp_code = info.kernels.iter().any(|k| k.lanes > 1);
    let object = code.object(&ir, opts.tier, warp_code)?;
    Ok(CompiledModule { object, info, helpers: std::mem::take(&mut cx.linked_helpers) })
}

/// The LLVM IR text [`compile`] hands to the code generator of `target`
/// (before optimisation), for inspection and golden tests.
pub fn emit_target_ir(module: &ptx::ast::Module, src: &str, target: &Target) -> Result<String, CompileError> {
    let code = target.code_target()?;
    code.check_module(module, src)?;
    let mut cx = lower::ModuleCx::new(module, src, target, &Options::default());
    let ir = cx.lower_module()?;
    Ok(code.finish_ir(ir, &cx.decls, &cx.helpers))
}

/// Whether the host processor has AVX-512F: directed-rounding arithmetic
/// (`add.rm.f32`...) for the host is then one instruction with the
/// rounding mode embedded instead of a switch of the rounding mode.
pub fn host_has_avx512f() -> bool {
    targets::host::host_has_avx512f()
}

/// Identifies the code a [`compile`] call produces for `target` on this
/// machine: part of any cache key for compiled code.
pub fn target_fingerprint(target: &Target) -> String {
    match (target.code_target(), target) {
        (Ok(code), _) => code.fingerprint(),
        // Nothing compiles for an unknown processor; the name alone keys it.
        (Err(_), Target::Amdgpu { arch }) => format!("amdgcn-amd-amdhsa|{arch}|invalid"),
        (Err(e), Target::HostCpu) => format!("host|invalid|{e}"),
    }
}

#[cfg(test)]
mod launch_guard_tests {
    use super::*;

    fn params(x: u64, y: u64) -> Vec<u8> {
        let mut p = x.to_le_bytes().to_vec();
        p.extend_from_slice(&y.to_le_bytes());
        p
    }

    #[test]
    fn a_guard_holds_only_for_launches_that_keep_the_lanes_apart() {
        // y at offset 8 and x at offset 0: equal, or at least 128 bytes
        // apart and 128 bytes away from a 2^34 wrap.
        let apart =
            GuardApart { a: GuardBase::Param(8), a_offset: 0, b: GuardBase::Param(0), b_offset: 0, equal: true, min: 128, wrap: 1 << 34 };
        let g = LaunchGuard { one_dimensional: true, apart: vec![apart], disjoint: vec![], injective: vec![] };
        let none = |_: &str| None;
        assert!(g.holds(&params(0x1000, 0x1000), [1, 1, 1], [256, 1, 1], &none), "the same array");
        assert!(g.holds(&params(0x1000, 0x1080), [1, 1, 1], [256, 1, 1], &none), "128 bytes apart");
        assert!(g.holds(&params(0x1080, 0x1000), [1, 1, 1], [256, 1, 1], &none), "either order");
        assert!(!g.holds(&params(0x1000, 0x1004), [1, 1, 1], [32, 1, 1], &none), "one element apart");
        assert!(!g.holds(&params(0x1000, 0x107f), [1, 1, 1], [32, 1, 1], &none), "127 bytes apart");
        assert!(!g.holds(&params(0x1000, 0x1000 + (1 << 34) + 4), [1, 1, 1], [32, 1, 1], &none), "near the wrap");
        assert!(!g.holds(&params(0x1000, 0x1000), [1, 1, 1], [16, 2, 1], &none), "a 2-D block");
        assert!(!g.holds(&params(0x1000, 0x1000)[..12], [1, 1, 1], [32, 1, 1], &none), "a parameter past the buffer");
        // A variable's address, and offsets on both sides.
        let apart = GuardApart {
            a: GuardBase::Global("table".into()),
            a_offset: 64,
            b: GuardBase::Param(0),
            b_offset: -64,
            equal: false,
            min: 256,
            wrap: 0,
        };
        let g = LaunchGuard { one_dimensional: false, apart: vec![apart], disjoint: vec![], injective: vec![] };
        let at = |a: u64| move |n: &str| (n == "table").then_some(a);
        assert!(g.holds(&params(0x1000, 0), [1, 1, 1], [16, 2, 1], &at(0x1000 + 128)), "(t + 64) - (p - 64) = 256");
        assert!(!g.holds(&params(0x1000, 0), [1, 1, 1], [16, 2, 1], &at(0x1000 + 127)), "255 apart");
        assert!(!g.holds(&params(0x1000, 0), [1, 1, 1], [16, 2, 1], &at(0x1000 - 128)), "equal is not allowed");
        assert!(!g.holds(&params(0x1000, 0), [1, 1, 1], [16, 2, 1], &|_| None), "an unknown variable");
    }

    #[test]
    fn a_launch_range_guard_reads_the_grid_and_parameters() {
        use crate::lockstep::{Disjoint, Launch, Op, Span, SpanIndex};
        // Stores through the pointer at offset 0 and loads through the one
        // at 8, both at `ctaid.x * ntid.x + tid.x`, below the u32 at 16:
        // 8-byte stores and 4-byte loads.
        let index = vec![Op::Special(Launch::Ctaid, 0), Op::Special(Launch::Ntid, 0), Op::Mul, Op::Special(Launch::Tid, 0), Op::Add];
        let below = Some((vec![Op::Param { at: 16, signed: false }], false));
        let span = |at: u32, scale: i64| Span {
            base: GuardBase::Param(at),
            offset: 0,
            index: Some(SpanIndex { value: index.clone(), signed: true, wide: false, scale, below: below.clone() }),
            bytes: scale as u64,
        };
        let g = LaunchGuard {
            one_dimensional: false,
            apart: vec![],
            disjoint: vec![Disjoint { a: span(0, 8), b: span(8, 4) }],
            injective: vec![],
        };
        let mut p = params(0x10000, 0x10000 + 800);
        p.extend_from_slice(&100u32.to_le_bytes());
        let none = |_: &str| None;
        assert!(g.holds(&p, [4, 1, 1], [32, 1, 1], &none), "100 elements of 8 bytes end where the loads start");
        assert!(g.holds(&p, [40, 2, 1], [32, 2, 1], &none), "more threads, the same bound");
        assert!(!g.holds(&p[..16], [4, 1, 1], [32, 1, 1], &none), "the bound past the buffer");
        p[16..20].copy_from_slice(&101u32.to_le_bytes());
        assert!(!g.holds(&p, [4, 1, 1], [32, 1, 1], &none), "one element more overlaps");
        assert!(g.holds(&p, [3, 1, 1], [32, 1, 1], &none), "96 threads stay below the loads");
        assert!(!g.holds(&p, [0, 1, 1], [32, 1, 1], &none), "an empty grid is refused");
    }
}
