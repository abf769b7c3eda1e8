//! Code generation targets: what each target adds around the
//! target-neutral lowering, behind one trait.
//!
//! The lowering of a kernel body is the same for every target: a `thread`
//! function taking `(params, ctx, tid.x, tid.y, tid.z)` that reads block
//! facts from a [`crate::cpu_abi::BlockCtx`] and calls the runtime functions
//! of [`crate::cpu_abi::runtime`]. A [`CodeTarget`] supplies
//! * the facts the lowering asks about how the target runs threads
//!   ([`TargetFacts`]: the lowering never matches on the target itself),
//! * the checks of what the target cannot run at all,
//! * the kernel entry points around the `thread` function,
//! * the runtime functions, as definitions in the module or as external
//!   symbols its loader resolves,
//! * object emission and the fingerprint that keys cached code.
//!
//! [`crate::Target`] is the plain description callers pass around (and
//! caches key on); [`crate::Target::code_target`] resolves it to its
//! implementation: [`host::HostTarget`] (the CPU the compiler runs on,
//! which emulates CUDA's threads: thread mode, warp mode, coroutines) and
//! [`amdgpu::AmdgpuTarget`] (AMD GPUs, whose hardware runs the warps).
//! Another target (NVPTX, SPIR-V) is another implementation of the trait
//! and its facts; no lowering code changes for it unless it needs a fact
//! that does not exist yet.

pub mod amdgpu;
pub mod host;
pub mod wide_masks;

use crate::{CompileError, KernelInfo, Target, Tier};
use std::collections::BTreeMap;

/// What the target-neutral lowering needs to know about how a target runs
/// a kernel. Each fact has one owner, the target that states it; the
/// lowering asks for the fact by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetFacts {
    /// The compiled code runs a CUDA block's threads itself (a loop over
    /// threads, 32-lane vectors, coroutines), so it chooses an execution
    /// mode per kernel (warp mode, the lockstep analysis). False where
    /// the hardware runs warps.
    pub emulates_threads: bool,
    /// A block's threads take turns on one OS thread and switch only
    /// inside runtime calls: no other thread of the block runs between two
    /// instructions, so a plain read-modify-write of shared memory is
    /// atomic for the block, and shared memory is the block's alone.
    pub block_on_one_thread: bool,
    /// A module may compile as separate units (one per kernel, one for the
    /// variables) that the loader links: the units see each other's
    /// variables by symbol. Otherwise only a module without variables
    /// splits (each kernel's unit then stands alone).
    pub links_units: bool,
    /// Checked mode (`ANYCUDA_MEMCHECK`: bounds, initialisation and race
    /// checks against shadow memory) is implemented.
    pub checked_mode: bool,
    /// Add-only global atomics may be privatised per worker (a table in the
    /// block context, applied when a block ends; `privatise.rs`).
    pub private_adds: bool,
    /// Arrays in a function's frame indexed at run time are cheap (the host
    /// stack), so loops over them beat unrolled code for compile time. On
    /// GPUs such arrays live in scratch memory.
    pub cheap_frame_arrays: bool,
    /// Software prefetch of lanes' next addresses in warp-mode loops pays.
    pub prefetch: bool,
    /// The runtime's warp gather (`__anycuda_warp_gather`) has a buffer of
    /// its own; otherwise the caller passes room for 32 lanes.
    pub runtime_gather_buffer: bool,
    /// A float clamp (minimum and maximum) of -0 to [0, 1] gives +0 as PTX's
    /// `.sat` wants; otherwise `.sat` is lowered with integer compares
    /// (AMD's clamp modifier leaves what it does with -0 undocumented).
    pub float_clamp_saturates: bool,
    /// Directed-rounding float arithmetic (`add.rm.f32`...) as single
    /// instructions with the rounding mode embedded (AVX-512), instead of
    /// a change of the floating-point environment.
    pub embedded_rounding: bool,
    /// Setting the rounding mode costs about as little as an arithmetic
    /// instruction (AMD: a field of the `MODE` register), so directed
    /// rounding without embedded rounding sets it around the operation.
    /// Otherwise (x86: `ldmxcsr` and `fldcw` serialise the pipeline)
    /// scalar directed rounding is computed in round-to-nearest arithmetic
    /// corrected by the sign of the exact error (`crate::directed`).
    pub cheap_rounding_mode_switch: bool,
    /// Masked gathers and scatters of 32 lanes compile to a few vector
    /// instructions (AVX-512's, with mask registers), so a warp-mode
    /// access's fallback for addresses of no regular shape stays inline.
    /// Otherwise LLVM expands each into 32 tests, branches and scalar
    /// accesses, and the fallbacks call one shared helper per type: inline,
    /// such fallbacks made most of a 200 KB stencil kernel.
    pub inline_gathers: bool,
    /// Barriers for part of a block (a thread count) and arrivals that do
    /// not wait (`bar.arrive`).
    pub partial_barriers: bool,
    /// Device `printf` writes records (format, arguments, the strings of
    /// `%s`) to a buffer the host decodes after the launch, so the layout
    /// of its arguments must be known when the kernel is compiled: the
    /// format must be a constant string. Otherwise `printf` formats on the
    /// host during the launch, reading the kernel's memory.
    pub printf_records: bool,
    /// `exit` in a called function returns to its caller after setting the
    /// context's `exited` flag, and every call that may reach such an
    /// `exit` checks the flag and returns in turn: the thread ends when
    /// the kernel returns. Otherwise `exit` calls the runtime, which ends
    /// the thread where it is (the host's threads are coroutines). On AMD
    /// GPUs the only instruction that ends execution inside a function,
    /// `s_endpgm`, ends the whole wavefront, lanes that did not exit too.
    pub exit_returns: bool,
    /// `llvm.exp2`, `llvm.log2`, `llvm.sin` and `llvm.cos` of f32 are
    /// instructions within the error PTX allows their `.approx`
    /// instructions (AMD's `v_exp_f32`, `v_log_f32`, `v_sin_f32`,
    /// `v_cos_f32`). Otherwise (x86) they are calls of libm, one per lane
    /// in warp mode, and the lowering computes them itself
    /// (`FnLower::exp2_f32`, `log2_f32`, `sin_f32`, `cos_f32`), and
    /// `tanh.approx` too (`tanh_f32`; elsewhere libm's `tanhf`).
    pub native_approx_math: bool,
    /// 16-bit float comparisons are instructions (AMD's `v_cmp_*_f16`).
    /// Otherwise (x86 without AVX512-FP16) LLVM makes a comparison of 32
    /// f16 lanes 32 conversions and scalar compares, and the lowering
    /// tests and compares the values' bits instead
    /// (`FnLower::is_nan_16`, `fcmp_16_bits`).
    pub half_compares: bool,
    /// Bits of the widest vector instruction that multiplies 16-bit
    /// integers pairwise and adds each pair into a 32-bit lane (x86
    /// `pmaddwd`: 512 with AVX-512BW, 256 with AVX2, 128 with SSE2), for
    /// warp-mode `dp4a`; 0 where there is none. Its intrinsic is
    /// [`pair_dot_intrinsic`].
    pub pair_dot_bits: u32,
    /// Bits of the widest vector instruction that picks each byte of its
    /// result from the 16 bytes of the same 128-bit lane of its operand
    /// by an index byte (x86 `pshufb`: 512 with AVX-512BW, 256 with AVX2,
    /// 128 with SSSE3), for warp-mode `prmt`; 0 where there is none. Its
    /// intrinsic is [`byte_shuffle_intrinsic`].
    pub byte_shuffle_bits: u32,
}

/// The LLVM intrinsic of a [`TargetFacts::byte_shuffle_bits`] width: its
/// name and the byte count of its operands and result.
pub fn byte_shuffle_intrinsic(bits: u32) -> Option<(&'static str, u32)> {
    match bits {
        512 => Some(("llvm.x86.avx512.pshuf.b.512", 64)),
        256 => Some(("llvm.x86.avx2.pshuf.b", 32)),
        128 => Some(("llvm.x86.ssse3.pshuf.b.128", 16)),
        _ => None,
    }
}

/// The LLVM intrinsic of a [`TargetFacts::pair_dot_bits`] width: its
/// name and the element counts of its operands (i16) and result (i32).
pub fn pair_dot_intrinsic(bits: u32) -> Option<(&'static str, u32, u32)> {
    match bits {
        512 => Some(("llvm.x86.avx512.pmaddw.d.512", 32, 16)),
        256 => Some(("llvm.x86.avx2.pmadd.wd", 16, 8)),
        128 => Some(("llvm.x86.sse2.pmadd.wd", 8, 4)),
        _ => None,
    }
}

/// One code generation target (see the module notes).
pub trait CodeTarget {
    /// How the target runs threads, for the lowering.
    fn facts(&self) -> TargetFacts;

    /// Identifies the code a compile for this target produces (triple,
    /// processor, features): part of every cache key for compiled code.
    fn fingerprint(&self) -> String;

    /// Rejects, before lowering, what the target cannot run at all, naming
    /// the PTX construct and its position.
    fn check_module(&self, module: &ptx::ast::Module, src: &str) -> Result<(), CompileError>;

    /// Entry points of one kernel around its `thread` function.
    fn kernel_entries(&self, kernel: &KernelInfo) -> Result<String, CompileError>;

    /// Definitions the module needs from the target's runtime library,
    /// given the external declarations the lowering emitted.
    fn runtime_library(&self, decls: &BTreeMap<String, String>) -> Result<String, CompileError>;

    /// The lowered module text as the target's code generator takes it.
    ///
    /// The lowering declares every runtime function it calls; a target that
    /// defines some of them in [`CodeTarget::runtime_library`] must drop
    /// those declarations, since LLVM rejects a declaration followed by a
    /// definition of the same name. A target may also swap helper
    /// functions of the lowering (`helpers`: name to definition text) for
    /// its own.
    fn finish_ir(&self, ir: String, decls: &BTreeMap<String, String>, helpers: &BTreeMap<String, String>) -> String;

    /// Optimises `ir` for `tier` and emits the target's object: a
    /// relocatable object for the host's loader, a linked code object for
    /// HIP. `warp_code`: the unit has warp-mode functions (values of 32
    /// lanes), which a target may generate code for differently.
    fn object(&self, ir: &str, tier: Tier, warp_code: bool) -> Result<Vec<u8>, CompileError>;
}

impl Target {
    /// The implementation of this target; an error for an AMD processor
    /// name that is not one.
    pub fn code_target(&self) -> Result<Box<dyn CodeTarget>, CompileError> {
        match self {
            Target::HostCpu => Ok(Box::new(host::HostTarget)),
            Target::Amdgpu { arch } => Ok(Box::new(amdgpu::AmdgpuTarget { arch: amdgpu::Arch::parse(arch)? })),
        }
    }

    /// The target's [`TargetFacts`], without resolving its processor (the
    /// facts do not depend on it).
    pub fn facts(&self) -> TargetFacts {
        match self {
            Target::HostCpu => host::HostTarget.facts(),
            Target::Amdgpu { .. } => amdgpu::FACTS,
        }
    }
}
