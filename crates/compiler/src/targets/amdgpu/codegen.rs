//! LLVM IR to an AMD code object: address-space fix-ups, optimisation,
//! object emission and linking with `ld.lld` into the shared object HIP's
//! `hipModuleLoadData` takes.

use super::Arch;
use crate::profile::{time, Phase};
use crate::{CompileError, Tier};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::context::Context;
use inkwell::llvm_sys;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{FlagBehavior, Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::types::BasicTypeEnum;
use inkwell::values::{InstructionOpcode, Operand};
use inkwell::{AddressSpace, OptimizationLevel};
use std::cell::RefCell;
use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const TRIPLE: &str = "amdgcn-amd-amdhsa";
/// Code object version 5 (ROCm 5.2 and later).
const CODE_OBJECT_VERSION: u64 = 500;
const GLOBAL: u16 = 1;

fn llvm_error(e: impl std::fmt::Display) -> CompileError {
    CompileError::Llvm(e.to_string())
}

fn init() -> Result<(), CompileError> {
    // After the host target: registrations must not overlap.
    crate::targets::host::init()?;
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| Target::initialize_amd_gpu(&InitializationConfig::default()));
    Ok(())
}

fn machine(arch: &Arch, level: OptimizationLevel) -> Result<TargetMachine, CompileError> {
    init()?;
    let triple = TargetTriple::create(TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| llvm_error(format!("{TRIPLE}: {e}")))?;
    target
        .create_target_machine(&triple, &arch.processor, &arch.llvm_features(), level, RelocMode::PIC, CodeModel::Default)
        .ok_or_else(|| llvm_error(format!("no target machine for {TRIPLE} {}", arch.processor)))
}

/// What the code of [`object`] depends on besides the PTX.
pub fn fingerprint(arch: &Arch) -> String {
    let (major, minor, patch) = inkwell::support::get_llvm_version();
    format!(
        "{TRIPLE}|{}|{}|wave{}|cov{CODE_OBJECT_VERSION}|llvm {major}.{minor}.{patch}|anycuda-compiler {}",
        arch.processor,
        arch.features,
        arch.wave_size(),
        env!("CARGO_PKG_VERSION")
    )
}

/// Errors LLVM reports through the context while compiling. Without a
/// handler LLVM prints them and exits the process.
#[derive(Default)]
struct Diagnostics(RefCell<Vec<String>>);

extern "C" fn on_diagnostic(info: llvm_sys::prelude::LLVMDiagnosticInfoRef, data: *mut c_void) {
    // SAFETY: LLVM passes a live diagnostic, and `data` is the `Diagnostics`
    // that `compile_module` keeps alive for as long as the context exists.
    unsafe {
        use llvm_sys::core::{LLVMDisposeMessage, LLVMGetDiagInfoDescription, LLVMGetDiagInfoSeverity};
        if LLVMGetDiagInfoSeverity(info) != llvm_sys::LLVMDiagnosticSeverity::LLVMDSError || data.is_null() {
            return;
        }
        let msg = LLVMGetDiagInfoDescription(info);
        if msg.is_null() {
            return;
        }
        let text = CStr::from_ptr(msg).to_string_lossy().into_owned();
        LLVMDisposeMessage(msg);
        let diags = &*(data as *const Diagnostics);
        if let Ok(mut list) = diags.0.try_borrow_mut() {
            list.push(text);
        }
    }
}

impl Diagnostics {
    fn check(&self, stage: &str) -> Result<(), CompileError> {
        let list = self.0.borrow();
        if list.is_empty() {
            Ok(())
        } else {
            Err(CompileError::Llvm(format!("{stage}: {}", list.join("; "))))
        }
    }
}

/// Compiles lowered IR for `arch` into a linked code object.
pub fn object(ir: &str, arch: &Arch, tier: Tier) -> Result<Vec<u8>, CompileError> {
    let relocatable = compile_module(ir, arch, tier)?;
    time(Phase::Link, || link(&relocatable))
}

/// The optimisation pipeline and code generation level of each tier. The
/// fast tier's code runs a kernel's first launches (the HIP backend asks
/// for its optimised code after the first, `jit::JitModule::promote`,
/// and switches to it when ready): the runtime library's
/// functions inlined (`always-inline`), the lowering's stack slots made
/// registers, its redundancies removed, flat accesses to global memory
/// made global ones; code generation at `Less`. On the nvcc corpus for
/// gfx1100 `default<O2>` was 45 % of the compile time and code
/// generation at `Default` 50 %.
fn tier_plan(tier: Tier) -> (&'static str, OptimizationLevel) {
    match tier {
        Tier::Fast => (
            "always-inline,function(sroa,early-cse,simplifycfg,infer-address-spaces,instcombine<no-verify-fixpoint>)",
            OptimizationLevel::Less,
        ),
        Tier::Optimized => ("default<O2>", OptimizationLevel::Default),
    }
}

fn compile_module(ir: &str, arch: &Arch, tier: Tier) -> Result<Vec<u8>, CompileError> {
    let (pipeline, level) = tier_plan(tier);
    let tm = machine(arch, level)?;
    let diags = Box::new(Diagnostics::default());
    let context = Context::create();
    // SAFETY: the handler only reads `diags`, which outlives `context`
    // (declared before it, so dropped after it).
    unsafe {
        llvm_sys::core::LLVMContextSetDiagnosticHandler(context.raw(), Some(on_diagnostic), &*diags as *const Diagnostics as *mut c_void);
    }
    let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "ptx");
    let module = time(Phase::ParseIr, || context.create_module_from_ir(buf)).map_err(llvm_error)?;
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    let version = context.i32_type().const_int(CODE_OBJECT_VERSION, false);
    module.add_basic_value_flag("amdhsa_code_object_version", FlagBehavior::Error, version);
    globals_to_global_space(&context, &module)?;
    allocas_to_private_space(&context, &module)?;
    prepare_functions(&context, &module);
    time(Phase::Verify, || module.verify()).map_err(llvm_error)?;
    diags.check("IR")?;
    time(Phase::Optimize, || module.run_passes(pipeline, &tm, PassBuilderOptions::create())).map_err(llvm_error)?;
    diags.check("optimisation")?;
    check_selectable(&module)?;
    let obj = time(Phase::Codegen, || tm.write_to_memory_buffer(&module, FileType::Object)).map_err(llvm_error)?;
    diags.check("code generation")?;
    Ok(obj.as_slice().to_vec())
}

/// The lowering puts module variables in the default address space, which
/// on AMDGPU is the flat one; variables of a code object live in the
/// global space, reached from flat pointers through a no-op cast.
fn globals_to_global_space<'ctx>(context: &'ctx Context, module: &Module<'ctx>) -> Result<(), CompileError> {
    let flat = context.ptr_type(AddressSpace::default());
    let globals: Vec<_> = module.get_globals().collect();
    for g in globals {
        if g.as_pointer_value().get_type().get_address_space() != AddressSpace::default() {
            continue;
        }
        let ty = BasicTypeEnum::try_from(g.get_value_type())
            .map_err(|_| llvm_error(format!("global {:?} has no storable type", g.get_name())))?;
        let name = g.get_name().to_string_lossy().into_owned();
        g.set_name("");
        let moved = module.add_global(ty, Some(AddressSpace::from(GLOBAL)), &name);
        if let Some(init) = g.get_initializer() {
            moved.set_initializer(&init);
        }
        moved.set_constant(g.is_constant());
        moved.set_linkage(g.get_linkage());
        moved.set_alignment(g.get_alignment());
        moved.set_unnamed_address(g.get_unnamed_address());
        g.as_pointer_value().replace_all_uses_with(moved.as_pointer_value().const_address_space_cast(flat));
        // SAFETY: every use now refers to `moved`.
        unsafe { g.delete() };
    }
    Ok(())
}

/// The lowering's allocas are in the default address space; AMDGPU keeps
/// stack objects in the private space. Each becomes a private alloca cast
/// to a flat pointer, which LLVM turns back into private accesses where it
/// can see them. Lifetime markers move to the private alloca itself: on
/// the flat cast the code generator ignores them, and every buffer they
/// bound kept a stack slot of its own.
fn allocas_to_private_space<'ctx>(context: &'ctx Context, module: &Module<'ctx>) -> Result<(), CompileError> {
    let flat = context.ptr_type(AddressSpace::default());
    let private_ptr = context.ptr_type(AddressSpace::from(5u16));
    let builder = context.create_builder();
    let lifetime = |name: &str| {
        inkwell::intrinsics::Intrinsic::find(name)
            .and_then(|i| i.get_declaration(module, &[private_ptr.into()]))
            .ok_or_else(|| llvm_error(format!("no intrinsic {name}")))
    };
    let (start, end) = (lifetime("llvm.lifetime.start")?, lifetime("llvm.lifetime.end")?);
    for f in module.get_functions() {
        for bb in f.get_basic_blocks() {
            let allocas: Vec<_> = bb
                .get_instructions()
                .filter(|i| i.get_opcode() == InstructionOpcode::Alloca)
                .filter(|i| matches!(i.get_type(), inkwell::types::AnyTypeEnum::PointerType(p) if p.get_address_space() == AddressSpace::default()))
                .collect();
            for a in allocas {
                let ty = a.get_allocated_type().map_err(llvm_error)?;
                let count = match a.get_operand(0) {
                    Some(Operand::Value(v)) if v.is_int_value() => v.into_int_value(),
                    _ => context.i32_type().const_int(1, false),
                };
                let align = a.get_alignment().map_err(llvm_error)?;
                let name = a.get_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                builder.position_before(&a);
                let private = builder.build_array_alloca(ty, count, "").map_err(llvm_error)?;
                if let Some(inst) = private.as_instruction() {
                    inst.set_alignment(align).map_err(llvm_error)?;
                }
                // The markers on the alloca, replaced by markers on the
                // private one.
                let mut markers = Vec::new();
                let mut u = a.get_first_use();
                while let Some(use_) = u {
                    if let inkwell::values::AnyValueEnum::InstructionValue(user) = use_.get_user() {
                        if user.get_opcode() == InstructionOpcode::Call {
                            let callee = match user.get_operand(user.get_num_operands().saturating_sub(1)) {
                                Some(Operand::Value(c)) => c.get_name().to_string_lossy().into_owned(),
                                _ => String::new(),
                            };
                            if let Some(kind) = ["llvm.lifetime.start", "llvm.lifetime.end"].iter().position(|n| callee.starts_with(n)) {
                                markers.push((user, kind));
                            }
                        }
                    }
                    u = use_.get_next_use();
                }
                for (call, kind) in markers {
                    let size = match call.get_operand(0) {
                        Some(Operand::Value(v)) if v.is_int_value() => v.into_int_value(),
                        _ => return Err(llvm_error("a lifetime marker without its size")),
                    };
                    builder.position_before(&call);
                    let f = if kind == 0 { start } else { end };
                    builder.build_call(f, &[size.into(), private.into()], "").map_err(llvm_error)?;
                    call.erase_from_basic_block();
                }
                builder.position_before(&a);
                let cast = builder.build_address_space_cast(private, flat, &name).map_err(llvm_error)?;
                let Some(cast) = cast.as_instruction() else {
                    return Err(llvm_error("alloca cast folded to a constant"));
                };
                a.replace_all_uses_with(&cast);
                a.erase_from_basic_block();
            }
        }
    }
    Ok(())
}

/// The `thread` functions are only called by their kernel's entry, which
/// inlines them: internal, they leave no copy behind. Every function may
/// contain cross-lane operations, so all start out `convergent`, as HIP
/// compiles them; LLVM drops the attribute where it can prove it useless.
fn prepare_functions<'ctx>(context: &'ctx Context, module: &Module<'ctx>) {
    let convergent = context.create_enum_attribute(Attribute::get_named_enum_kind_id("convergent"), 0);
    let thread_prefix = crate::cpu_abi::KernelSymbols::thread("");
    for f in module.get_functions() {
        if f.count_basic_blocks() == 0 {
            continue;
        }
        if f.get_name().to_bytes().starts_with(thread_prefix.as_bytes()) {
            f.set_linkage(Linkage::Internal);
        }
        f.add_attribute(AttributeLoc::Function, convergent);
    }
}

/// Whether LLVM 19 aborts the process (instead of reporting an error)
/// when asked to compile a call of intrinsic `name` for AMDGPU.
fn fatal_on_amdgpu(name: &str) -> bool {
    if let Some(op) = name.strip_prefix("llvm.experimental.constrained.") {
        let op = op.split('.').next().unwrap_or_default();
        return !matches!(op, "fadd" | "fsub" | "fmul" | "fma");
    }
    if (name.starts_with("llvm.sin.") || name.starts_with("llvm.cos.")) && name.contains("f64") {
        return true;
    }
    // Saturating conversions to integers wider than 64 bits need a libcall.
    for prefix in ["llvm.fptosi.sat.", "llvm.fptoui.sat."] {
        if let Some(rest) = name.strip_prefix(prefix) {
            let width = rest.trim_start_matches('v').split('.').next().unwrap_or_default();
            let bits = width.rsplit('i').next().and_then(|b| b.parse::<u32>().ok()).unwrap_or(0);
            return bits > 64;
        }
    }
    false
}

/// Refuses, with an error naming it, an intrinsic the AMDGPU code
/// generator would abort on, so that no input can end the host process.
fn check_selectable(module: &Module) -> Result<(), CompileError> {
    use inkwell::values::BasicValue;
    for f in module.get_functions() {
        if f.count_basic_blocks() != 0 {
            continue;
        }
        let name = f.get_name().to_string_lossy();
        if fatal_on_amdgpu(&name) && f.as_global_value().as_pointer_value().get_first_use().is_some() {
            return Err(CompileError::Unsupported {
                function: "<target>".into(),
                what: format!("`{name}`: LLVM 19 cannot compile it for AMDGPU"),
                line: 0,
                column: 0,
            });
        }
    }
    Ok(())
}

/// A directory under the system temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, CompileError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..64 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("anycuda-amdgpu-{}-{n}-{stamp}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(TempDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(llvm_error(format!("cannot create a directory in {}: {e}", base.display()))),
            }
        }
        Err(llvm_error(format!("cannot create a directory in {}: {last:?}", base.display())))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Linkers to try, best first: the one of the LLVM we build with, then
/// lld 19 and any lld on the path.
fn linkers() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(prefix) = std::env::var_os("LLVM_SYS_191_PREFIX") {
        v.push(Path::new(&prefix).join("bin").join("ld.lld"));
    }
    v.push("ld.lld-19".into());
    v.push("ld.lld".into());
    v
}

/// Links a relocatable AMDGPU object into a code object. Undefined symbols
/// are errors: nothing would resolve them when HIP loads the code object.
fn link(relocatable: &[u8]) -> Result<Vec<u8>, CompileError> {
    let dir = TempDir::new()?;
    let input = dir.0.join("module.o");
    let output = dir.0.join("module.hsaco");
    std::fs::write(&input, relocatable).map_err(|e| llvm_error(format!("writing {}: {e}", input.display())))?;
    let mut tried = Vec::new();
    for linker in linkers() {
        let run = std::process::Command::new(&linker).arg("-shared").arg("--no-undefined").arg("-o").arg(&output).arg(&input).output();
        match run {
            Ok(out) if out.status.success() => {
                return std::fs::read(&output).map_err(|e| llvm_error(format!("reading {}: {e}", output.display())));
            }
            Ok(out) => {
                return Err(llvm_error(format!(
                    "{} failed ({}): {}",
                    linker.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            Err(e) => tried.push(format!("{}: {e}", linker.display())),
        }
    }
    Err(llvm_error(format!(
        "no usable ld.lld to link the AMDGPU code object (install lld-19 or set LLVM_SYS_191_PREFIX); tried {}",
        tried.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::fatal_on_amdgpu;

    #[test]
    fn intrinsics_that_abort_llvm_are_known() {
        assert!(fatal_on_amdgpu("llvm.experimental.constrained.fdiv.f32"));
        assert!(fatal_on_amdgpu("llvm.experimental.constrained.sitofp.f64.i64"));
        assert!(!fatal_on_amdgpu("llvm.experimental.constrained.fadd.f64"));
        assert!(fatal_on_amdgpu("llvm.sin.f64"));
        assert!(!fatal_on_amdgpu("llvm.sin.f32"));
        assert!(fatal_on_amdgpu("llvm.fptosi.sat.i128.f64"));
        assert!(!fatal_on_amdgpu("llvm.fptosi.sat.i64.f64"));
        assert!(!fatal_on_amdgpu("llvm.fma.f64"));
    }
}
