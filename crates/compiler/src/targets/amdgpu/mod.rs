//! AMD GPUs (`amdgcn-amd-amdhsa`): kernels HIP can load as a code object.
//!
//! A kernel becomes an `amdgpu_kernel` named like the PTX kernel whose only
//! argument is the PTX parameter buffer, passed by reference in the kernarg
//! segment: the kernarg segment *is* the packed parameter buffer, so HIP's
//! `extra` launch form can hand over the buffer the driver already built.
//! The entry builds a [`BlockCtx`](crate::cpu_abi::BlockCtx) in private
//! memory from the dispatch packet and the work-item/work-group ids and
//! calls the target-neutral `thread` function, which LLVM inlines.
//!
//! A PTX warp is 32 lanes. On wave32 processors (gfx10 and later) it is a
//! whole wavefront; on wave64 processors (gfx9) it is half of one: lanes
//! 0-31 of a wavefront are one warp, lanes 32-63 the next, which matches
//! CUDA's numbering since work-items fill wavefronts in linear order.

mod codegen;
mod runtime;

pub use codegen::{fingerprint, object};
pub use runtime::{defines, runtime_library};

use super::{CodeTarget, TargetFacts};
use crate::cpu_abi::{offsets, BlockCtx, KernelSymbols};
use crate::ir::global_name;
use crate::{CompileError, KernelInfo, Tier};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How AMD GPUs run a kernel: the hardware runs the warps (a workgroup's
/// wavefronts), shared memory is LDS that every wavefront of the workgroup
/// reaches at once, and a code object is one unit.
pub const FACTS: TargetFacts = TargetFacts {
    emulates_threads: false,
    block_on_one_thread: false,
    links_units: false,
    checked_mode: false,
    private_adds: false,
    cheap_frame_arrays: false,
    prefetch: false,
    runtime_gather_buffer: false,
    float_clamp_saturates: false,
    embedded_rounding: false,
    cheap_rounding_mode_switch: true,
    inline_gathers: true,
    // The workgroup's one barrier waits for every wavefront, and on wave64
    // two CUDA warps share a wavefront.
    partial_barriers: false,
    printf_records: true,
    exit_returns: true,
    native_approx_math: true,
    half_compares: true,
    pair_dot_bits: 0,
    byte_shuffle_bits: 0,
};

/// An AMD processor as a [`CodeTarget`].
pub struct AmdgpuTarget {
    pub arch: Arch,
}

impl CodeTarget for AmdgpuTarget {
    fn facts(&self) -> TargetFacts {
        FACTS
    }

    fn fingerprint(&self) -> String {
        fingerprint(&self.arch)
    }

    fn check_module(&self, module: &ptx::ast::Module, src: &str) -> Result<(), CompileError> {
        check_module(module, src)
    }

    fn kernel_entries(&self, kernel: &KernelInfo) -> Result<String, CompileError> {
        Ok(kernel_entry(kernel))
    }

    fn runtime_library(&self, decls: &BTreeMap<String, String>) -> Result<String, CompileError> {
        runtime_library(&self.arch, decls)
    }

    /// Swaps the lowering's directed-rounding helpers for AMD's and drops
    /// the declarations of the runtime functions the library defines.
    fn finish_ir(&self, ir: String, decls: &BTreeMap<String, String>, helpers: &BTreeMap<String, String>) -> String {
        let mut ir = ir;
        for (name, text) in helpers {
            if let Some(own) = crate::directed::amdgpu_replacement(name) {
                ir = ir.replacen(text.as_str(), &own, 1);
            }
        }
        let defined: std::collections::HashSet<&str> =
            decls.iter().filter(|(name, _)| defines(name)).map(|(_, decl)| decl.as_str()).collect();
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

    /// The fast tier optimises less than the optimised one
    /// (`codegen::tier_plan`).
    fn object(&self, ir: &str, tier: Tier, _warp_code: bool) -> Result<Vec<u8>, CompileError> {
        object(ir, &self.arch, tier)
    }
}

/// Processor generations that differ in what the runtime library uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// GCN 5 / CDNA: wave64 only, `s_memtime`/`s_memrealtime`.
    Gfx9,
    /// RDNA 1/2: wave32, `s_memtime`/`s_memrealtime`.
    Gfx10,
    /// RDNA 3: wave32, no `s_memtime`; the real-time clock through `s_sendmsg_rtn`.
    Gfx11,
    /// RDNA 4: wave32, 64-bit shader cycle counter.
    Gfx12,
}

/// A processor, from a HIP architecture name such as `gfx1100` or the
/// target-id form `gfx90a:sramecc+:xnack-`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arch {
    pub processor: String,
    /// LLVM feature string (`+sramecc,-xnack`), from the target-id.
    pub features: String,
    pub family: Family,
    pub wave64: bool,
}

/// Processors LLVM 19 knows that can run HIP code objects of version 5
/// (the generic targets need version 6).
const PROCESSORS: &[(&str, Family)] = &[
    ("gfx900", Family::Gfx9),
    ("gfx902", Family::Gfx9),
    ("gfx904", Family::Gfx9),
    ("gfx906", Family::Gfx9),
    ("gfx908", Family::Gfx9),
    ("gfx909", Family::Gfx9),
    ("gfx90a", Family::Gfx9),
    ("gfx90c", Family::Gfx9),
    ("gfx940", Family::Gfx9),
    ("gfx941", Family::Gfx9),
    ("gfx942", Family::Gfx9),
    ("gfx1010", Family::Gfx10),
    ("gfx1011", Family::Gfx10),
    ("gfx1012", Family::Gfx10),
    ("gfx1013", Family::Gfx10),
    ("gfx1030", Family::Gfx10),
    ("gfx1031", Family::Gfx10),
    ("gfx1032", Family::Gfx10),
    ("gfx1033", Family::Gfx10),
    ("gfx1034", Family::Gfx10),
    ("gfx1035", Family::Gfx10),
    ("gfx1036", Family::Gfx10),
    ("gfx1100", Family::Gfx11),
    ("gfx1101", Family::Gfx11),
    ("gfx1102", Family::Gfx11),
    ("gfx1103", Family::Gfx11),
    ("gfx1150", Family::Gfx11),
    ("gfx1151", Family::Gfx11),
    ("gfx1152", Family::Gfx11),
    ("gfx1200", Family::Gfx12),
    ("gfx1201", Family::Gfx12),
];

fn target_error(what: String) -> CompileError {
    CompileError::Unsupported { function: "<target>".into(), what, line: 0, column: 0 }
}

impl Arch {
    pub fn parse(name: &str) -> Result<Arch, CompileError> {
        let mut parts = name.split(':');
        let processor = parts.next().unwrap_or_default();
        let Some(&(_, family)) = PROCESSORS.iter().find(|(p, _)| *p == processor) else {
            let known: Vec<&str> = PROCESSORS.iter().map(|(p, _)| *p).collect();
            return Err(target_error(format!("AMDGPU processor `{processor}` (supported: {})", known.join(", "))));
        };
        let mut features = Vec::new();
        for f in parts {
            let (feature, on) = match f.strip_suffix('+') {
                Some(feat) => (feat, true),
                None => match f.strip_suffix('-') {
                    Some(feat) => (feat, false),
                    None => return Err(target_error(format!("AMDGPU target-id feature `{f}` (expected `sramecc+`, `xnack-`, ...)"))),
                },
            };
            if feature != "sramecc" && feature != "xnack" {
                return Err(target_error(format!("AMDGPU target-id feature `{feature}` (known: sramecc, xnack)")));
            }
            features.push(format!("{}{feature}", if on { '+' } else { '-' }));
        }
        Ok(Arch { processor: processor.to_string(), features: features.join(","), family, wave64: family == Family::Gfx9 })
    }

    pub fn wave_size(&self) -> u32 {
        if self.wave64 {
            64
        } else {
            32
        }
    }

    /// Features for the target machine: the target-id ones and the wave size.
    pub fn llvm_features(&self) -> String {
        let wave = if self.wave64 { "+wavefrontsize64" } else { "+wavefrontsize32" };
        if self.features.is_empty() {
            wave.to_string()
        } else {
            format!("{},{wave}", self.features)
        }
    }
}

/// Symbol of the LDS block holding a kernel's static shared variables.
fn lds_symbol(kernel: &str) -> String {
    format!("__anycuda_lds.{kernel}")
}

/// The zero-sized LDS array whose address LLVM puts after each kernel's
/// static LDS: the start of the dynamic shared memory of the launch.
pub const DYNAMIC_LDS: &str = "@__anycuda_amd.dynamic_lds";

/// Offsets in the HSA kernel dispatch packet (`hsa_kernel_dispatch_packet_t`).
mod packet {
    pub const WORKGROUP_SIZE: [u32; 3] = [4, 6, 8];
    pub const GRID_SIZE: [u32; 3] = [12, 16, 20];
    pub const GROUP_SEGMENT_SIZE: u32 = 28;
}

/// The launch bounds LLVM may assume, as `amdgpu-flat-work-group-size`.
fn flat_work_group_size(kernel: &KernelInfo) -> (u32, u32) {
    let product = |d: [u32; 3]| d.iter().fold(1u64, |a, &v| a * u64::from(v.max(1))).min(1024) as u32;
    match (kernel.reqntid, kernel.maxntid) {
        (Some(r), _) => {
            let n = product(r);
            (n, n)
        }
        (None, Some(m)) => (1, product(m)),
        (None, None) => (1, 1024),
    }
}

/// What a kernel's kernarg segment holds after the PTX parameters: the
/// addresses the launcher puts there, each 64 bits (null where the
/// kernel's module does not use it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernargTail {
    /// The device's printf record buffer (`BlockCtx::printf_records`).
    pub printf_records: usize,
    /// The device's heap (`BlockCtx::heap`).
    pub heap: usize,
    /// A cooperative launch's zeroed grid-sync workspace
    /// ([`crate::cpu_abi::GRID_SYNC_WORKSPACE`] bytes), which the entry
    /// puts in `%envreg1` (high half) and `%envreg2` (low half) as
    /// cooperative groups reads it.
    pub grid_workspace: usize,
    /// The module's variable table ([`KernelSymbols::VARIABLE_TABLE`] in
    /// its shared code object; `BlockCtx::variables`), through which the
    /// code of a kernel compiled apart reaches the module's variables.
    pub variables: usize,
    /// The kernarg segment's size.
    pub bytes: usize,
}

/// Where the [`KernargTail`] of a kernel with `param_bytes` of PTX
/// parameters lies: from the parameters' size rounded up to 8.
pub fn kernarg_tail(param_bytes: usize) -> KernargTail {
    let at = param_bytes.next_multiple_of(8);
    KernargTail { printf_records: at, heap: at + 8, grid_workspace: at + 16, variables: at + 24, bytes: at + 32 }
}

/// The `amdgpu_kernel` entry of one kernel.
pub fn kernel_entry(kernel: &KernelInfo) -> String {
    let name = global_name(&kernel.name);
    let thread = global_name(&KernelSymbols::thread(&kernel.name));
    let (min_wg, max_wg) = flat_work_group_size(kernel);
    let ctx_bytes = std::mem::size_of::<BlockCtx>();
    let mut s = String::new();

    // The static shared variables, laid out by the lowering as one window.
    let base = if kernel.static_shared_bytes > 0 {
        let lds = global_name(&lds_symbol(&kernel.name));
        let _ = writeln!(s, "{lds} = internal addrspace(3) global [{} x i8] poison, align 16", kernel.static_shared_bytes);
        lds
    } else {
        DYNAMIC_LDS.to_string()
    };

    // The PTX parameters, then the printf record buffer
    // (`BlockCtx::printf_records`), the heap (`BlockCtx::heap`), the
    // grid-sync workspace (`%envreg1`/`%envreg2`) and the module's variable
    // table (`BlockCtx::variables`), at the parameters' size rounded up to
    // 8 bytes (`kernarg_tail`).
    let tail = "ptr addrspace(1) %printf.records, ptr addrspace(1) %heap, ptr addrspace(1) %grid.workspace, ptr addrspace(4) %variables";
    let param = if kernel.param_bytes > 0 {
        let align = kernel.params.iter().map(|p| p.align).max().unwrap_or(1).clamp(4, 256);
        format!("ptr addrspace(4) byref([{} x i8]) align {align} %kernarg, {tail}", kernel.param_bytes)
    } else {
        tail.to_string()
    };
    let _ = writeln!(
        s,
        "define amdgpu_kernel void {name}({param}) #0 \"amdgpu-flat-work-group-size\"=\"{min_wg},{max_wg}\" \"amdgpu-no-implicitarg-ptr\" {{"
    );
    s.push_str("entry:\n");
    let _ = writeln!(s, "  %ctx.p = alloca [{ctx_bytes} x i8], align 8, addrspace(5)");
    s.push_str("  %ctx = addrspacecast ptr addrspace(5) %ctx.p to ptr\n");
    if kernel.param_bytes > 0 {
        s.push_str("  %params = addrspacecast ptr addrspace(4) %kernarg to ptr\n");
    }
    let _ = writeln!(s, "  call void @llvm.memset.p0.i64(ptr align 8 %ctx, i8 0, i64 {ctx_bytes}, i1 false)");
    let _ = writeln!(s, "  %printf.f = getelementptr i8, ptr %ctx, i64 {}", offsets::PRINTF_RECORDS);
    s.push_str("  %printf.g = addrspacecast ptr addrspace(1) %printf.records to ptr\n");
    s.push_str("  store ptr %printf.g, ptr %printf.f, align 8\n");
    let _ = writeln!(s, "  %heap.f = getelementptr i8, ptr %ctx, i64 {}", offsets::HEAP);
    s.push_str("  %heap.g = addrspacecast ptr addrspace(1) %heap to ptr\n");
    s.push_str("  store ptr %heap.g, ptr %heap.f, align 8\n");
    let _ = writeln!(s, "  %variables.f = getelementptr i8, ptr %ctx, i64 {}", offsets::VARIABLES);
    s.push_str("  store ptr addrspace(4) %variables, ptr %variables.f, align 8\n");
    s.push_str("  %gw = ptrtoint ptr addrspace(1) %grid.workspace to i64\n");
    s.push_str("  %gw.high = lshr i64 %gw, 32\n");
    for (reg, value) in [(1, "%gw.high"), (2, "%gw")] {
        let _ = writeln!(s, "  %envreg{reg}.v = trunc i64 {value} to i32");
        let _ = writeln!(s, "  %envreg{reg}.f = getelementptr i8, ptr %ctx, i64 {}", offsets::ENVREG + 4 * reg);
        let _ = writeln!(s, "  store i32 %envreg{reg}.v, ptr %envreg{reg}.f, align 4");
    }
    s.push_str("  %dp = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()\n");
    for (i, c) in ["x", "y", "z"].iter().enumerate() {
        let _ = writeln!(s, "  %tid.{c} = call i32 @llvm.amdgcn.workitem.id.{c}()");
        let _ = writeln!(s, "  %ctaid.{c} = call i32 @llvm.amdgcn.workgroup.id.{c}()");
        let _ = writeln!(s, "  %wg.{c}.p = getelementptr i8, ptr addrspace(4) %dp, i64 {}", packet::WORKGROUP_SIZE[i]);
        let _ = writeln!(s, "  %wg.{c} = load i16, ptr addrspace(4) %wg.{c}.p, align 2");
        let _ = writeln!(s, "  %ntid.{c} = zext i16 %wg.{c} to i32");
        let _ = writeln!(s, "  %grid.{c}.p = getelementptr i8, ptr addrspace(4) %dp, i64 {}", packet::GRID_SIZE[i]);
        let _ = writeln!(s, "  %grid.{c} = load i32, ptr addrspace(4) %grid.{c}.p, align 4");
        // The packet counts the grid in work-items; a partial last group still counts.
        let _ = writeln!(s, "  %ntid.{c}.m1 = add i32 %ntid.{c}, -1");
        let _ = writeln!(s, "  %grid.{c}.r = add i32 %grid.{c}, %ntid.{c}.m1");
        let _ = writeln!(s, "  %nctaid.{c} = udiv i32 %grid.{c}.r, %ntid.{c}");
        for (field, value) in [(offsets::NTID, "ntid"), (offsets::CTAID, "ctaid"), (offsets::NCTAID, "nctaid")] {
            let _ = writeln!(s, "  %{value}.{c}.f = getelementptr i8, ptr %ctx, i64 {}", field + 4 * i);
            let _ = writeln!(s, "  store i32 %{value}.{c}, ptr %{value}.{c}.f, align 4");
        }
    }
    s.push_str("  %plane = mul i32 %ntid.x, %ntid.y\n");
    s.push_str("  %nthreads = mul i32 %plane, %ntid.z\n");
    let _ = writeln!(s, "  %nthreads.f = getelementptr i8, ptr %ctx, i64 {}", offsets::NTHREADS);
    s.push_str("  store i32 %nthreads, ptr %nthreads.f, align 4\n");
    // Which compute unit runs a group is not visible portably: one "SM".
    let _ = writeln!(s, "  %nsmid.f = getelementptr i8, ptr %ctx, i64 {}", offsets::NSMID);
    s.push_str("  store i32 1, ptr %nsmid.f, align 4\n");
    let _ = writeln!(s, "  %shared.f = getelementptr i8, ptr %ctx, i64 {}", offsets::SHARED);
    let _ = writeln!(s, "  store ptr addrspacecast (ptr addrspace(3) {base} to ptr), ptr %shared.f, align 8");
    // The group segment of the dispatch is the static LDS plus the dynamic
    // shared memory the launch asked for; the dynamic part starts wherever
    // LLVM placed the zero-sized array.
    let _ = writeln!(s, "  %group.p = getelementptr i8, ptr addrspace(4) %dp, i64 {}", packet::GROUP_SEGMENT_SIZE);
    s.push_str("  %group = load i32, ptr addrspace(4) %group.p, align 4\n");
    let _ = writeln!(s, "  %base.a = ptrtoint ptr addrspace(3) {base} to i32");
    let _ = writeln!(s, "  %dyn.a = ptrtoint ptr addrspace(3) {DYNAMIC_LDS} to i32");
    s.push_str("  %window = call i32 @llvm.usub.sat.i32(i32 %group, i32 %base.a)\n");
    s.push_str("  %dyn.off = sub i32 %dyn.a, %base.a\n");
    s.push_str("  %dyn.bytes = call i32 @llvm.usub.sat.i32(i32 %group, i32 %dyn.a)\n");
    for (field, value) in
        [(offsets::SHARED_BYTES, "%window"), (offsets::DYNAMIC_SHARED_OFFSET, "%dyn.off"), (offsets::DYNAMIC_SHARED_BYTES, "%dyn.bytes")]
    {
        let _ = writeln!(s, "  %f.{field} = getelementptr i8, ptr %ctx, i64 {field}");
        let _ = writeln!(s, "  store i32 {value}, ptr %f.{field}, align 4");
    }
    s.push_str("  %gridid = call i64 @llvm.amdgcn.dispatch.id()\n");
    let _ = writeln!(s, "  %gridid.f = getelementptr i8, ptr %ctx, i64 {}", offsets::GRIDID);
    s.push_str("  store i64 %gridid, ptr %gridid.f, align 8\n");
    s.push_str("  %lin.y = mul i32 %tid.y, %ntid.x\n");
    s.push_str("  %lin.z = mul i32 %tid.z, %plane\n");
    s.push_str("  %lin.xy = add i32 %tid.x, %lin.y\n");
    s.push_str("  %lin = add i32 %lin.xy, %lin.z\n");
    s.push_str("  call void @__anycuda_amd.prologue(i32 %lin)\n");
    let params = if kernel.param_bytes > 0 { "%params" } else { "null" };
    let _ = writeln!(s, "  call void {thread}(ptr {params}, ptr %ctx, i32 %tid.x, i32 %tid.y, i32 %tid.z)");
    s.push_str("  ret void\n}\n\n");
    s
}

/// Fails on the first call of a runtime function AMDGPU code cannot have
/// yet, at its position.
pub fn check_module(module: &ptx::ast::Module, src: &str) -> Result<(), CompileError> {
    use ptx::ast::{Opcode, Operand, Statement};
    let mut lines = None;
    for f in module.functions() {
        let Some(body) = &f.body else { continue };
        for (i, st) in body.statements.iter().enumerate() {
            let Statement::Instruction(inst) = st else { continue };
            if inst.op != Opcode::Call {
                continue;
            }
            let Some(Operand::Global(callee)) = body.args(inst).iter().find(|a| !matches!(a, Operand::Paren(_))) else {
                continue;
            };
            if module.function(*callee).is_some_and(|g| g.body.is_some()) {
                continue;
            }
            let name = module.symbol(*callee).name;
            let device_runtime = (crate::cpu_abi::devrt::lookup(name).is_some() || crate::devrt::DEVICE_SYNCHRONIZE.contains(&name))
                .then(|| format!("`{name}`: the CUDA device runtime (kernels launching kernels, dynamic parallelism) is not supported on AMDGPU: HIP cannot launch from the device"));
            if let Some(why) = device_runtime {
                let index = lines.get_or_insert_with(|| ptx::LineIndex::new(src));
                let (line, column) = index.line_col(body.span(i).start);
                return Err(CompileError::Unsupported { function: f.name.to_string(), what: why, line, column });
            }
        }
    }
    Ok(())
}
