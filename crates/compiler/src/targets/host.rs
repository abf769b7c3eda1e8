//! The host CPU: the machine the compiler runs on. Its code emulates
//! CUDA's threads (a block as a loop over threads, 32-lane warps as
//! vectors, coroutines where threads wait for each other; see the CPU
//! backend); its runtime functions are Rust functions the loader resolves.

use super::{CodeTarget, TargetFacts};
use crate::profile::{time, Phase};
use crate::{CompileError, KernelInfo, Tier};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};
use inkwell::OptimizationLevel;
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

/// The host CPU as a [`CodeTarget`].
pub struct HostTarget;

impl CodeTarget for HostTarget {
    fn facts(&self) -> TargetFacts {
        TargetFacts {
            emulates_threads: true,
            block_on_one_thread: true,
            links_units: true,
            checked_mode: true,
            private_adds: true,
            cheap_frame_arrays: true,
            prefetch: true,
            runtime_gather_buffer: true,
            float_clamp_saturates: true,
            embedded_rounding: host_has_avx512f(),
            cheap_rounding_mode_switch: false,
            inline_gathers: host_has_avx512f(),
            partial_barriers: true,
            printf_records: false,
            exit_returns: false,
            native_approx_math: false,
            half_compares: false,
            pair_dot_bits: host_pair_dot_bits(),
            byte_shuffle_bits: host_byte_shuffle_bits(),
        }
    }

    fn fingerprint(&self) -> String {
        host_fingerprint()
    }

    fn check_module(&self, _module: &ptx::ast::Module, _src: &str) -> Result<(), CompileError> {
        Ok(())
    }

    /// The CPU backend calls `thread` per coroutine, or `block` for a whole
    /// block (a loop over threads, or over warps in warp mode). A kernel
    /// whose threads wait for each other (`needs_scheduler`) always runs
    /// through the scheduler, which never calls `block`: it gets none. The
    /// block function inlines the thread function, so it doubled such a
    /// kernel's code and compile time (llama.cpp's `mul_mat_vec_f`: 154
    /// KB, the whole module's compile 1.17 s).
    fn kernel_entries(&self, kernel: &KernelInfo) -> Result<String, CompileError> {
        if kernel.needs_scheduler {
            return Ok(String::new());
        }
        Ok(if kernel.lanes > 1 {
            crate::lower::warp_block_function(&kernel.name, kernel.param_bytes, kernel.frame_bytes)
        } else {
            crate::lower::block_function(&kernel.name, kernel.param_bytes)
        })
    }

    /// The CPU backend resolves `__anycuda_*` when it loads the object.
    fn runtime_library(&self, _decls: &BTreeMap<String, String>) -> Result<String, CompileError> {
        Ok(String::new())
    }

    fn finish_ir(&self, ir: String, _decls: &BTreeMap<String, String>, _helpers: &BTreeMap<String, String>) -> String {
        ir
    }

    fn object(&self, ir: &str, tier: Tier, warp_code: bool) -> Result<Vec<u8>, CompileError> {
        host_object(ir, tier, warp_code)
    }
}

/// Registers the host target once; other targets initialise after it,
/// since LLVM's target registry is not safe to extend concurrently.
pub(crate) fn init() -> Result<(), CompileError> {
    static INIT: OnceLock<Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| {
        Target::initialize_native(&InitializationConfig::default())?;
        set_codegen_options();
        Ok(())
    })
    .clone()
    .map_err(CompileError::Llvm)
}

/// The code generator's command-line options anycuda sets, once per
/// process, before its first target machine.
///
/// `-disable-x86-domain-reassignment`: on AVX-512 hosts, from
/// `OptimizationLevel::Less` up, LLVM runs a pass that moves chains of
/// general-register operations on masks into mask registers. On warp-mode
/// units, whose masks are everywhere, it is slow: on llama.cpp's
/// `mul_mat_q_stream_k_fixup` (41 KB of code) it was 38 % of `llc -O1`'s
/// time (0.21 of 0.57 s) and changed no byte of the object (the same held
/// for a bf16 `mul_mat_f`, 133 KB). LLVM's options are process-wide; this
/// one only affects how fast AVX-512 mask code is made, so another user of
/// the same LLVM library in the process keeps correct code. The C entry
/// point reports parse errors to nowhere and never exits the process.
fn set_codegen_options() {
    const OPTIONS: [&std::ffi::CStr; 2] = [c"anycuda", c"-disable-x86-domain-reassignment"];
    let argv: Vec<*const std::ffi::c_char> = OPTIONS.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `argv` holds OPTIONS.len() pointers to NUL-terminated strings
    // that outlive the call; LLVM copies what it keeps.
    unsafe { inkwell::llvm_sys::support::LLVMParseCommandLineOptions(argv.len() as i32, argv.as_ptr(), c"".as_ptr()) };
}

/// Host features LLVM must not use: with them it converts `float` to
/// `bfloat` with `VCVTNEPS2BF16`, which treats subnormal inputs as zero
/// and flushes subnormal results, where PTX keeps bf16 subnormals (a
/// bf16 value that crosses a basic block is held as a float and
/// converted back so: checked mode's access checks split blocks, and
/// `neg.bf16` of 0x0001 gave 0x8000).
const OFF: [&str; 2] = ["avx512bf16", "avxneconvert"];

/// The host processor's features, less [`OFF`]. Asked of LLVM once per
/// process: the answer does not change, and asking (cpuid and LLVM's
/// tables, with the processor's name) was a seventh of the compile time of
/// a small kernel.
fn host_features() -> &'static str {
    static FEATURES: OnceLock<String> = OnceLock::new();
    FEATURES.get_or_init(|| {
        TargetMachine::get_host_cpu_features()
            .to_string_lossy()
            .split(',')
            .map(|f| match f.strip_prefix('+') {
                Some(name) if OFF.contains(&name) => format!("-{name}"),
                _ => f.to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// The host processor's name, as LLVM knows it (once per process).
fn host_cpu() -> &'static str {
    static CPU: OnceLock<String> = OnceLock::new();
    CPU.get_or_init(|| TargetMachine::get_host_cpu_name().to_string_lossy().into_owned())
}

/// The code generator's optimisation level for a unit.
///
/// The fast tier generates code without optimisation (LLVM's fast
/// instruction selector and register allocator), except for units with
/// warp-mode code: there every PTX register is a 32-lane vector (two to
/// four AVX-512 registers) and the fast register allocator spills and
/// reloads them around every instruction. Measured (release build, one
/// kernel, fast IR pipeline, 2-vCPU AVX-512 machine): llama.cpp's
/// `mul_mat_vec_f` as warps compiled in 100 ms and ran 13.5 µs per block
/// of 128 threads at `None`, in 178 ms and 1.55 µs per block at `Less`
/// (the optimised tier: 945 ms, 1.64 µs); its fused variant 407 ms and
/// 56.7 µs against 752 ms and 4.2 µs. Thread-by-thread code gains little
/// (66.7 against 64.4 µs per block) for 2.6 times the compile time (27
/// against 70 ms), so it keeps `None`.
fn codegen_level(tier: Tier, warp_code: bool) -> OptimizationLevel {
    match (tier, warp_code) {
        (Tier::Fast, false) => OptimizationLevel::None,
        (Tier::Fast, true) => OptimizationLevel::Less,
        (Tier::Optimized, _) => OptimizationLevel::Default,
    }
}

fn host_machine(level: OptimizationLevel) -> Result<TargetMachine, CompileError> {
    init()?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(|e| CompileError::Llvm(e.to_string()))?;
    target
        .create_target_machine(&triple, host_cpu(), host_features(), level, RelocMode::PIC, CodeModel::Default)
        .ok_or_else(|| CompileError::Llvm(format!("no target machine for {}", triple.as_str().to_string_lossy())))
}

/// A target machine of the pool (see [`MACHINES`]) and its level.
struct PooledMachine(OptimizationLevel, TargetMachine);

// SAFETY: an LLVM target machine has no affinity to the thread that made
// it, and the pool hands each one to a single compile at a time.
unsafe impl Send for PooledMachine {}

/// The target machines no compile is using, by code generation level.
/// Making one (the subtarget's tables) cost as much as compiling a small
/// kernel, so a compile takes one from here and puts it back: there are at
/// most as many as compiles ever ran at once. A static is never dropped,
/// so no machine is destroyed at process exit, when LLVM's own static
/// state goes away (a per-thread cache would destroy its machines when a
/// compile thread ends, which may be during the exit).
static MACHINES: Mutex<Vec<PooledMachine>> = Mutex::new(Vec::new());

/// Runs `compile` with a target machine for `level` from the pool.
fn with_machine<T>(level: OptimizationLevel, compile: impl FnOnce(&TargetMachine) -> Result<T, CompileError>) -> Result<T, CompileError> {
    let pool = || MACHINES.lock().unwrap_or_else(|e| e.into_inner());
    let pooled = {
        let mut machines = pool();
        machines.iter().position(|m| m.0 == level).map(|i| machines.swap_remove(i))
    };
    let machine = match pooled {
        Some(m) => m,
        None => PooledMachine(level, host_machine(level)?),
    };
    let result = compile(&machine.1);
    pool().push(machine);
    result
}

/// Whether the host processor has AVX-512F, whose arithmetic
/// instructions carry their own rounding mode (`{rd-sae}`): directed
/// rounding then needs no change of the floating-point environment.
/// Part of the fingerprint (the host's features), so cached code
/// follows it.
pub fn host_has_avx512f() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| host_features().split(',').any(|f| f == "+avx512f"))
}

/// The widest of `forms` (a feature and the width it gives, widest
/// first) the host has; 0 for none.
fn host_widest(forms: &[(&str, u32)]) -> u32 {
    let has = |name: &str| host_features().split(',').any(|f| f.strip_prefix('+') == Some(name));
    forms.iter().find(|(feature, _)| has(feature)).map_or(0, |&(_, bits)| bits)
}

/// [`TargetFacts::pair_dot_bits`] of the host: `pmaddwd`'s widest form
/// among its features (part of the fingerprint, as they are).
fn host_pair_dot_bits() -> u32 {
    static BITS: OnceLock<u32> = OnceLock::new();
    *BITS.get_or_init(|| host_widest(&[("avx512bw", 512), ("avx2", 256), ("sse2", 128)]))
}

/// [`TargetFacts::byte_shuffle_bits`] of the host: `pshufb`'s widest
/// form among its features.
fn host_byte_shuffle_bits() -> u32 {
    static BITS: OnceLock<u32> = OnceLock::new();
    *BITS.get_or_init(|| host_widest(&[("avx512bw", 512), ("avx2", 256), ("ssse3", 128)]))
}

pub fn host_fingerprint() -> String {
    let triple = TargetMachine::get_default_triple();
    format!("{}|{}|{}", triple.as_str().to_string_lossy(), host_cpu(), host_features())
}

/// The optimisation pipeline of each tier (see [`Tier`]).
///
/// The fast tier's is scalar replacement (the PTX registers live in
/// allocas until then), early CSE (the same address, shared-window base
/// or flag computed twice) and CFG simplification. Instruction combining
/// was its costliest pass: on llama.cpp's thread-by-thread `mul_mat_q`
/// (5,700 lines of PTX, 74,000 of IR) two thirds of the pipeline's 175 ms,
/// and without it the kernel compiles in 214 ms instead of 386 ms with
/// less code (273 KB against 311 KB: early CSE removes what the code
/// generator would otherwise keep). Warp-mode units, whose time is code
/// generation, compile in the same time either way (AVX-512 host).
pub fn pipeline(tier: Tier) -> &'static str {
    match tier {
        Tier::Fast => "function(sroa,early-cse,simplifycfg)",
        Tier::Optimized => "default<O2>",
    }
}

pub fn host_object(ir: &str, tier: Tier, warp_code: bool) -> Result<Vec<u8>, CompileError> {
    with_machine(codegen_level(tier, warp_code), |tm| {
        let context = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "ptx");
        let llvm = |e: inkwell::support::LLVMString| CompileError::Llvm(e.to_string());
        let module = time(Phase::ParseIr, || context.create_module_from_ir(buf)).map_err(llvm)?;
        module.set_triple(&tm.get_triple());
        module.set_data_layout(&tm.get_target_data().get_data_layout());
        time(Phase::Verify, || module.verify()).map_err(llvm)?;
        time(Phase::Optimize, || module.run_passes(pipeline(tier), tm, PassBuilderOptions::create())).map_err(llvm)?;
        if warp_code && !host_has_avx512f() {
            time(Phase::Optimize, || super::wide_masks::widen_masks(&context, &module));
            // The rewrite works through LLVM's C API: IR it left invalid
            // fails the compile with a clear error instead of reaching the
            // code generator.
            time(Phase::Verify, || module.verify())
                .map_err(|e| CompileError::Llvm(format!("the lane-mask rewrite left invalid IR (a bug in anycuda): {e}")))?;
        }
        let obj = time(Phase::Codegen, || tm.write_to_memory_buffer(&module, FileType::Object)).map_err(llvm)?;
        Ok(obj.as_slice().to_vec())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_warp_code_gets_the_optimising_code_generator_in_the_fast_tier() {
        assert_eq!(codegen_level(Tier::Fast, false), OptimizationLevel::None);
        assert_eq!(codegen_level(Tier::Fast, true), OptimizationLevel::Less);
        assert_eq!(codegen_level(Tier::Optimized, false), OptimizationLevel::Default);
        assert_eq!(codegen_level(Tier::Optimized, true), OptimizationLevel::Default);
    }
}
