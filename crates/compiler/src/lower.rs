//! PTX functions to LLVM IR text: the module frame, operands, control flow
//! and calls. Instruction families live in the sibling modules.

use crate::cpu_abi::{offsets, KernelSymbols};
use crate::ir::{self, global_name, Ty, V};
use crate::layout::{self, is_dynamic_shared, Analysis, ItemId};
use crate::CompileError;
use ptx::ast::*;
use ptx::LineIndex;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

pub type Res<T> = Result<T, CompileError>;

/// Module-wide lowering state.
pub struct ModuleCx<'m> {
    pub target: crate::Target,
    /// How the target runs threads (asked by the lowering instead of the target).
    pub facts: crate::targets::TargetFacts,
    pub opts: crate::Options,
    pub m: &'m Module<'m>,
    /// The module's text, and its line index, made at the first error or
    /// source place asked for: over a module of llama.cpp's (up to 10 MB
    /// of PTX) making it took milliseconds for each kernel compiled.
    src: &'m str,
    lines: std::cell::OnceCell<LineIndex<'m>>,
    pub a: std::borrow::Cow<'m, Analysis>,
    /// Helper function definitions, by name (emitted once).
    pub helpers: BTreeMap<String, String>,
    /// External declarations (intrinsics, runtime), by name.
    pub decls: BTreeMap<String, String>,
    /// Constant `i32` tables (matrix fragment maps), by content: the name
    /// of the one global holding each. A kernel's many `mma` of one shape
    /// share their table (llama.cpp's mmq kernels: 256 tables of 33 KB
    /// each became one).
    pub tables: std::collections::HashMap<Vec<u32>, String>,
    /// Thread mode's `mma` fragment tables by the instruction's form
    /// (shape, types, layouts, combination): the same form always builds
    /// the same table, which took a sixth of the compile of llama.cpp's
    /// thread-by-thread `mul_mat_q` kernels (hundreds of `mma` each) to
    /// rebuild and look up by content.
    pub mma_tables: std::collections::HashMap<String, String>,
    /// Each `mma` form's lane plan on targets whose lanes read each
    /// other's registers (`matrix::lane_plan`), `None` where it has none.
    pub mma_plans: std::collections::HashMap<String, Option<std::rc::Rc<crate::matrix::LanePlan>>>,
    /// Instruction ids for warp collectives and barriers, in program order.
    pub next_site: u32,
    /// Loops kept rolled: each gets a loop id `!N` (`N` from 1) saying
    /// "do not unroll", defined at the end of the module.
    pub rolled_loops: u32,
    /// The unit being compiled, and the functions it defines (all of them
    /// for a whole module).
    pub unit: crate::Unit,
    pub defined: Option<std::collections::HashSet<ItemId>>,
    /// Each kernel's privatised atomics (`privatise::plan_for`), by the
    /// kernel's item, computed on first use.
    pub private_sites: std::collections::HashMap<ItemId, crate::privatise::Sites>,
    /// The helpers the unit calls but does not define (`shared_helpers`),
    /// set by [`Self::lower_module`].
    pub linked_helpers: Vec<crate::HelperCode>,
}

impl<'m> ModuleCx<'m> {
    pub fn declare(&mut self, name: &str, decl: &str) {
        self.decls.entry(name.to_string()).or_insert_with(|| decl.to_string());
    }

    /// Declares a runtime function, as the table in `cpu_abi` says.
    pub fn declare_runtime(&mut self, f: &crate::cpu_abi::RuntimeFn) {
        self.declare(f.name, &f.declaration());
    }

    /// Whether statement `stmt` of function `item` is an atomic that
    /// gathers in the private table (`privatise.rs`).
    pub fn privatised(&mut self, item: ItemId, f: &Function, stmt: usize) -> bool {
        let (m, target, opts) = (self.m, &self.target, &self.opts);
        self.private_sites.entry(item).or_insert_with(|| crate::privatise::sites_for(m, f, target, opts)).sites.contains(&stmt)
    }

    /// The form of a privatised atomic's address whose index a load just
    /// before reads (`privatise::LoadedIndex`), if it has one.
    pub fn private_loaded(&mut self, item: ItemId, f: &Function, stmt: usize) -> Option<crate::privatise::LoadedIndex> {
        let (m, target, opts) = (self.m, &self.target, &self.opts);
        let sites = self.private_sites.entry(item).or_insert_with(|| crate::privatise::sites_for(m, f, target, opts));
        sites.loaded.iter().find(|(at, _)| *at == stmt).map(|(_, l)| *l)
    }

    /// Adds a helper function (its full `define` text) if not yet present.
    pub fn helper(&mut self, name: &str, make: impl FnOnce() -> String) {
        if !self.helpers.contains_key(name) {
            let text = make();
            self.helpers.insert(name.to_string(), text);
        }
    }
}

/// Where a function's variable lives.
#[derive(Clone, Debug)]
pub enum VarLoc {
    /// Memory at this pointer value (parameters).
    Ptr(String),
    /// A `.local` variable: memory at this pointer value, whose local-space
    /// address is its offset from the thread's local window (`%lbase`).
    Local(String),
    /// Offset in the block's shared window.
    Shared(u32),
    /// The dynamic part of the shared window.
    DynShared,
}

pub struct FnLower<'c, 'm> {
    pub cx: &'c mut ModuleCx<'m>,
    pub item: ItemId,
    pub f: &'m Function<'m>,
    pub b: &'m Body<'m>,
    pub kernel: bool,
    pub out: ir::Body,
    pub regs: Vec<String>,
    pub reg_tys: Vec<Ty>,
    pub vars: HashMap<VarId, VarLoc>,
    pub labels: Vec<String>,
    pub carry: Option<String>,
    pub stmt: usize,
    pub exit_label: String,
    /// Pointer-typed copies of 64-bit registers that hold addresses: memory
    /// accesses go through them, so that LLVM sees base pointers plus offsets
    /// (and can analyse and vectorise address arithmetic) instead of
    /// integers cast to pointers.
    pub shadows: Vec<Option<String>>,
    /// The pointer value the next register write should give its shadow.
    pub next_shadow: Option<V>,
    /// Warp mode (see `warp.rs`): the lanes that execute the current
    /// instruction, as a `<32 x i1>` value.
    pub warp: Option<crate::warp::WarpState>,
    /// Registers whose NaN payloads nothing observes (see
    /// `arith::nan_blind_registers`).
    pub nan_blind: Vec<crate::arith::NanReaders>,
    /// Registers that never hold an f32 subnormal (see
    /// `arith::flushed_registers`).
    pub flushed: Vec<bool>,
    /// Thread-by-thread host code of the optimised tier: the kernel's
    /// block-invariant registers (`uniform::block_invariant`), whose
    /// divisions' reciprocals LLVM hoists out of the thread loop; empty
    /// otherwise.
    pub invariant: Vec<bool>,
    /// Checked mode: per state space, the function's `[low, length]` cache
    /// of the last range an access was found in (see `memcheck.rs`).
    /// (Index 5: the lanes' addresses of a warp-mode check.)
    pub memcheck_caches: [Option<String>; 6],
    /// Checked mode: the block context's cache slot the next checked
    /// instruction uses.
    pub memcheck_slot: usize,
    /// Thread by thread: the statements before which the warp's lanes meet
    /// (`meet::meeting_points`; empty when they need not).
    pub meetings: Vec<bool>,
    /// The bitcasts emitted so far: each result's name and its operand. A
    /// bitcast back to the operand's type is the operand (see
    /// [`FnLower::cast_bits`]).
    pub bitcasts: HashMap<String, V>,
    /// The flushed values of `.ftz` operands read so far, by register,
    /// lanes and type: the IR block each was computed in and the value.
    /// Valid in that block while the register keeps its value
    /// ([`FnLower::memo_flush`]).
    pub flushes: HashMap<(RegId, u32, Ty), (u32, V)>,
    /// Stack buffers of the warp-level matrix instruction being lowered
    /// (its lanes' snapshot, `matrix::gather_lanes`), with their sizes:
    /// live from that instruction's gather to its end, where the lowering
    /// marks them dead (`llvm.lifetime.end`), so that the code generator
    /// gives every instruction's buffers the same stack slot.
    pub matrix_buffers: Vec<(String, u64)>,
}

pub fn reg_ty(t: Type) -> Ty {
    if t == Type::Pred {
        Ty::I1
    } else {
        Ty::int(t.bits())
    }
}

/// The LLVM type an instruction type operates on.
pub fn op_ty(t: Type) -> Ty {
    match t {
        Type::F16 => Ty::Half,
        Type::Bf16 => Ty::Bfloat,
        Type::F32 | Type::Tf32 => Ty::Float,
        Type::F64 => Ty::Double,
        other => reg_ty(other),
    }
}

fn func_symbol(name: &str) -> String {
    format!("__anycuda_func.{name}")
}

/// The IR parameter list every non-kernel function takes before its own.
/// `%lbase` is the thread's local window: local-space addresses are offsets
/// from it (they may be held in 32-bit registers), generic ones are host
/// addresses.
const FUNC_PREFIX: &str = "ptr %ctx, i32 %tid.x, i32 %tid.y, i32 %tid.z, i64 %lbase";

impl<'m> ModuleCx<'m> {
    pub fn new(m: &'m Module<'m>, src: &'m str, target: &crate::Target, opts: &crate::Options) -> ModuleCx<'m> {
        ModuleCx {
            target: target.clone(),
            facts: target.facts(),
            opts: opts.clone(),
            m,
            src,
            lines: std::cell::OnceCell::new(),
            a: std::borrow::Cow::Owned(Analysis::new(m)),
            helpers: BTreeMap::new(),
            decls: BTreeMap::new(),
            tables: std::collections::HashMap::new(),
            mma_tables: std::collections::HashMap::new(),
            mma_plans: std::collections::HashMap::new(),
            next_site: 0,
            rolled_loops: 0,
            unit: crate::Unit::Module,
            defined: None,
            private_sites: std::collections::HashMap::new(),
            linked_helpers: Vec::new(),
        }
    }

    /// The lowering of `m` with an analysis of it made before (see
    /// [`crate::ModuleAnalysis`]).
    pub fn with_analysis(m: &'m Module<'m>, src: &'m str, target: &crate::Target, opts: &crate::Options, a: &'m Analysis) -> ModuleCx<'m> {
        ModuleCx {
            target: target.clone(),
            facts: target.facts(),
            opts: opts.clone(),
            m,
            src,
            lines: std::cell::OnceCell::new(),
            a: std::borrow::Cow::Borrowed(a),
            helpers: BTreeMap::new(),
            decls: BTreeMap::new(),
            tables: std::collections::HashMap::new(),
            mma_tables: std::collections::HashMap::new(),
            mma_plans: std::collections::HashMap::new(),
            next_site: 0,
            rolled_loops: 0,
            unit: crate::Unit::Module,
            defined: None,
            private_sites: std::collections::HashMap::new(),
            linked_helpers: Vec::new(),
        }
    }

    /// Restricts the lowering to one unit of the module.
    pub fn select_unit(&mut self, unit: crate::Unit) -> Res<()> {
        self.unit = unit;
        if unit == crate::Unit::Module {
            self.defined = None;
            return Ok(());
        }
        if let crate::Unit::Kernel(k) = unit {
            let is_kernel =
                matches!(self.m.items.get(k as usize), Some(Item::Function(f)) if f.kind == FunctionKind::Entry && f.body.is_some());
            if !is_kernel {
                return Err(CompileError::Invalid {
                    function: String::new(),
                    what: format!("item {k} is not a kernel"),
                    line: 0,
                    column: 0,
                });
            }
        }
        match self.a.unit_functions(self.m, unit, self.facts.links_units) {
            Some(set) => {
                self.defined = Some(set);
                Ok(())
            }
            None => Err(CompileError::Invalid {
                function: String::new(),
                what: "the module takes a kernel's address: it compiles as one unit".into(),
                line: 0,
                column: 0,
            }),
        }
    }

    /// The module's line index, made at its first use.
    pub fn lines(&self) -> &LineIndex<'m> {
        self.lines.get_or_init(|| LineIndex::new(self.src))
    }

    fn error_at(&self, f: &Function, span: Span, what: String, unsupported: bool) -> CompileError {
        let (line, column) = self.lines().line_col(span.start);
        let function = f.name.to_string();
        if unsupported {
            CompileError::Unsupported { function, what, line, column }
        } else {
            CompileError::Invalid { function, what, line, column }
        }
    }

    /// Whether the unit calls its out-of-line helpers from a library the
    /// process compiles once (`shared_helpers`): the host's fast tier.
    fn shares_helpers(&self) -> bool {
        self.target == crate::Target::HostCpu && self.opts.tier == crate::Tier::Fast
    }

    /// The metadata attachment of a loop's back branch that keeps the loop
    /// rolled (a new loop id).
    pub fn rolled_loop(&mut self) -> String {
        self.rolled_loops += 1;
        format!(", !llvm.loop !{}", self.rolled_loops)
    }

    /// The whole module as IR text.
    pub fn lower_module(&mut self) -> Res<String> {
        let code = self.target.code_target()?;
        let mut globals = String::new();
        for v in self.m.variables() {
            if matches!(self.unit, crate::Unit::Kernel(_)) {
                // Where units cannot link, a kernel's unit reads the
                // variables' addresses from the table (`variable_address`).
                if self.facts.links_units {
                    self.declare_variable(v, &mut globals);
                }
            } else {
                self.emit_variable(v, &mut globals)?;
            }
        }
        if self.unit == crate::Unit::Shared && layout::has_variable_table(self.m, self.facts.links_units) {
            self.emit_variable_table(&mut globals);
        }
        let mut funcs = String::new();
        for (idx, item) in self.m.items.iter().enumerate() {
            let Item::Function(f) = item else { continue };
            // Only the item a symbol resolves to is defined (prototypes are not).
            let Some(body) = &f.body else { continue };
            if self.defined.as_ref().is_some_and(|d| !d.contains(&(idx as ItemId))) {
                continue;
            }
            let choice = (f.kind == FunctionKind::Entry)
                .then(|| layout::mode_choice(self.m, &self.a, &self.target, &self.opts, idx as ItemId, f))
                .flatten();
            let warp = choice.as_ref().is_some_and(|c| c.warp);
            let mut fl = FnLower::new(self, idx as ItemId, f, body);
            if let Some(c) = &choice {
                fl.meetings.clone_from(&c.meetings);
            }
            let text = if warp { fl.lower_warp()? } else { fl.lower()? };
            funcs.push_str(&text);
            if f.kind == FunctionKind::Entry {
                let mut kernel = layout::describe_kernel(self.m, &self.a, idx as ItemId, f);
                if let Some(choice) = &choice {
                    layout::apply_mode(&self.a, idx as ItemId, f, choice, self.opts.tier, &mut kernel);
                }
                // A unit of one kernel leaves the lockstep version to a
                // compile of its own, made only for a launch that needs it
                // (`KernelInfo::lockstep_guard`): most launches never do,
                // and it took four times the thread version's compile.
                let embedded = !matches!(self.unit, crate::Unit::Kernel(_));
                match choice.and_then(|c| c.guarded).filter(|_| embedded) {
                    Some(conditions) => {
                        // The warp version, under a name of its own, for the
                        // blocks whose launch does not meet the conditions.
                        let mut fl = FnLower::new(self, idx as ItemId, f, body);
                        let text = fl.lower_warp()?;
                        let thread = global_name(&KernelSymbols::thread(f.name));
                        let fallback = global_name(&KernelSymbols::lockstep(f.name));
                        funcs.push_str(&text.replacen(&format!("define i32 {thread}("), &format!("define internal i32 {fallback}("), 1));
                        let frame_bytes = crate::warp::frame_layout(&self.a, idx as ItemId, f, self.opts.tier).bytes;
                        let check = self.condition_ir(f, &conditions);
                        funcs.push_str(&guarded_block_function(&kernel.name, kernel.param_bytes, frame_bytes, &check));
                    }
                    None => funcs.push_str(&code.kernel_entries(&kernel)?),
                }
            }
        }
        let mut out = String::new();
        out.push_str(&globals);
        out.push('\n');
        for d in self.decls.values() {
            out.push_str(d);
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&funcs);
        if self.shares_helpers() {
            let (kept, linked) = crate::shared_helpers::split(&self.helpers, &self.decls);
            out.push_str(&kept);
            self.linked_helpers = linked;
        } else {
            for h in self.helpers.values() {
                out.push_str(h);
                out.push('\n');
            }
        }
        out.push_str(&code.runtime_library(&self.decls)?);
        out.push('\n');
        out.push_str(crate::shared_helpers::ATTRIBUTE_GROUPS);
        if self.rolled_loops > 0 {
            out.push_str("!0 = !{!\"llvm.loop.unroll.disable\"}\n");
            for n in 1..=self.rolled_loops {
                let _ = writeln!(out, "!{n} = distinct !{{!{n}, !0}}");
            }
        }
        Ok(out)
    }

    /// IR lines computing `%ok`, whether a block's launch meets the
    /// conditions of a guarded kernel (`lockstep::Conditions`), from
    /// `%params` and `%ctx`.
    fn condition_ir(&self, f: &Function, c: &crate::lockstep::Conditions) -> String {
        let mut s = String::from("  %ok.0 = add i1 0, 1\n");
        let mut last = "%ok.0".to_string();
        let mut k = 0;
        let mut and = |s: &mut String, v: &str| {
            k += 1;
            let _ = writeln!(s, "  %ok.{k} = and i1 {last}, {v}");
            last = format!("%ok.{k}");
        };
        // Stores in loops (`lockstep::Injective`) are checked before a
        // launch of a one-kernel unit only: a whole module runs such a
        // kernel's lockstep version.
        if !c.injective.is_empty() {
            and(&mut s, "0");
        }
        if c.one_dimensional {
            let _ = writeln!(s, "  %c.pny = getelementptr i8, ptr %ctx, i64 4\n  %c.ny = load i32, ptr %c.pny, align 4");
            let _ = writeln!(s, "  %c.pnz = getelementptr i8, ptr %ctx, i64 8\n  %c.nz = load i32, ptr %c.pnz, align 4");
            let _ = writeln!(s, "  %c.y1 = icmp eq i32 %c.ny, 1\n  %c.z1 = icmp eq i32 %c.nz, 1\n  %c.oned = and i1 %c.y1, %c.z1");
            and(&mut s, "%c.oned");
        }
        let (params, _) = layout::param_layout(f, &f.params);
        let base = |s: &mut String, name: &str, b: crate::lockstep::Base| match b {
            crate::lockstep::Base::None => {
                let _ = writeln!(s, "  {name} = add i64 0, 0");
            }
            crate::lockstep::Base::Param(v) => {
                let off = f.params.iter().position(|&p| p == v).and_then(|i| params.get(i)).map_or(0, |p| p.offset);
                let _ = writeln!(s, "  {name}.p = getelementptr i8, ptr %params, i64 {off}\n  {name} = load i64, ptr {name}.p, align 8");
            }
            crate::lockstep::Base::Symbol(sym) => {
                let g = global_name(&KernelSymbols::global(self.m.symbol(sym).name));
                let _ = writeln!(s, "  {name} = ptrtoint ptr {g} to i64");
            }
        };
        for (i, ap) in c.apart.iter().enumerate() {
            base(&mut s, &format!("%c.a{i}"), ap.a);
            base(&mut s, &format!("%c.b{i}"), ap.b);
            let _ = writeln!(s, "  %c.ao{i} = add i64 %c.a{i}, {}\n  %c.bo{i} = add i64 %c.b{i}, {}", ap.a_offset, ap.b_offset);
            let _ = writeln!(s, "  %c.d{i} = sub i64 %c.ao{i}, %c.bo{i}\n  %c.nd{i} = sub i64 0, %c.d{i}");
            let _ = writeln!(s, "  %c.neg{i} = icmp slt i64 %c.d{i}, 0\n  %c.abs{i} = select i1 %c.neg{i}, i64 %c.nd{i}, i64 %c.d{i}");
            // |d| at least `min` from 0 and from `wrap` (`Apart::holds`).
            let _ = writeln!(s, "  %c.far{i} = icmp uge i64 %c.abs{i}, {}", ap.min);
            let _ = writeln!(s, "  %c.above{i} = icmp uge i64 %c.abs{i}, {w}\n  %c.up{i} = sub i64 %c.abs{i}, {w}", w = ap.wrap);
            let _ = writeln!(
                s,
                "  %c.down{i} = sub i64 {w}, %c.abs{i}\n  %c.gap{i} = select i1 %c.above{i}, i64 %c.up{i}, i64 %c.down{i}",
                w = ap.wrap
            );
            let _ = writeln!(s, "  %c.nowrap{i} = icmp uge i64 %c.gap{i}, {}\n  %c.apart{i} = and i1 %c.far{i}, %c.nowrap{i}", ap.min);
            if ap.equal {
                let _ = writeln!(s, "  %c.same{i} = icmp eq i64 %c.d{i}, 0\n  %c.ok{i} = or i1 %c.same{i}, %c.apart{i}");
            } else {
                let _ = writeln!(s, "  %c.ok{i} = or i1 0, %c.apart{i}");
            }
            and(&mut s, &format!("%c.ok{i}"));
        }
        for (i, d) in c.disjoint.iter().enumerate() {
            // `lockstep::Disjoint::holds`: each access's bytes over the
            // launch, in exact (128-bit) arithmetic, must be bounded and
            // one range must end where or before the other starts.
            let mut checks = Vec::new();
            let (a0, a1) = self.span_ir(f, &mut s, &format!("%c.x{i}a"), &d.a, &mut checks);
            let (b0, b1) = self.span_ir(f, &mut s, &format!("%c.x{i}b"), &d.b, &mut checks);
            let _ = writeln!(s, "  %c.x{i}.ab = icmp sle i128 {a1}, {b0}\n  %c.x{i}.ba = icmp sle i128 {b1}, {a0}");
            let _ = writeln!(s, "  %c.x{i}.sep = or i1 %c.x{i}.ab, %c.x{i}.ba");
            checks.push(format!("%c.x{i}.sep"));
            for v in checks {
                and(&mut s, &v);
            }
        }
        let _ = writeln!(s, "  %ok = or i1 0, {last}");
        s
    }

    /// IR computing the bytes `[start, end)` (128-bit values, returned by
    /// name) an access may touch over the launch
    /// (`lockstep::Span::launch_bytes`), from `%params` and `%ctx`; the
    /// names of the `i1` values that must all hold for the range to be
    /// exact go to `checks`.
    fn span_ir(
        &self,
        f: &Function,
        s: &mut String,
        name: &str,
        sp: &crate::lockstep::Span<crate::lockstep::Base, VarId>,
        checks: &mut Vec<String>,
    ) -> (String, String) {
        let (params, _) = layout::param_layout(f, &f.params);
        let _ = match sp.base {
            crate::lockstep::Base::None => writeln!(s, "  {name}.base = add i128 0, 0"),
            crate::lockstep::Base::Param(v) => {
                let off = f.params.iter().position(|&p| p == v).and_then(|i| params.get(i)).map_or(0, |p| p.offset);
                writeln!(
                    s,
                    "  {name}.bp = getelementptr i8, ptr %params, i64 {off}\n  {name}.b64 = load i64, ptr {name}.bp, align 8\n  \
                     {name}.base = zext i64 {name}.b64 to i128"
                )
            }
            crate::lockstep::Base::Symbol(sym) => {
                let g = global_name(&KernelSymbols::global(self.m.symbol(sym).name));
                writeln!(s, "  {name}.b64 = ptrtoint ptr {g} to i64\n  {name}.base = zext i64 {name}.b64 to i128")
            }
        };
        let _ = writeln!(s, "  {name}.start = add i128 {name}.base, {}", sp.offset);
        let (lo, hi) = match &sp.index {
            None => (format!("{name}.start"), format!("{name}.start")),
            Some(ix) => {
                let (lo, hi) = self.value_ir(f, s, &format!("{name}.i"), &ix.value, checks);
                // The exact value is the register's only where it fits the widening.
                let (min, max) = if ix.wide {
                    (i64::MIN, i64::MAX)
                } else if ix.signed {
                    (-(1i64 << 31), (1i64 << 31) - 1)
                } else {
                    (0, (1i64 << 32) - 1)
                };
                let _ = writeln!(s, "  {name}.f0 = icmp sge i128 {lo}, {min}\n  {name}.f1 = icmp sle i128 {hi}, {max}");
                checks.push(format!("{name}.f0"));
                checks.push(format!("{name}.f1"));
                // An early exit's bound on the index (`SpanIndex::below`).
                let hi = match &ix.below {
                    Some((bound, inclusive)) => {
                        let (_, top) = self.value_ir(f, s, &format!("{name}.u"), bound, checks);
                        let _ = writeln!(
                            s,
                            "  {name}.top = sub i128 {top}, {}\n  {name}.c0 = icmp slt i128 {hi}, {name}.top\n  \
                             {name}.h0 = select i1 {name}.c0, i128 {hi}, i128 {name}.top\n  {name}.c1 = icmp sgt i128 {name}.h0, {lo}\n  \
                             {name}.h1 = select i1 {name}.c1, i128 {name}.h0, i128 {lo}",
                            if *inclusive { 0 } else { 1 }
                        );
                        format!("{name}.h1")
                    }
                    None => hi,
                };
                let (first, last) = if ix.scale >= 0 { (lo, hi) } else { (hi, lo) };
                let _ = writeln!(
                    s,
                    "  {name}.s0 = mul i128 {first}, {sc}\n  {name}.s1 = mul i128 {last}, {sc}\n  \
                     {name}.lo = add i128 {name}.start, {name}.s0\n  {name}.hi = add i128 {name}.start, {name}.s1",
                    sc = ix.scale
                );
                (format!("{name}.lo"), format!("{name}.hi"))
            }
        };
        let _ = writeln!(s, "  {name}.end = add i128 {hi}, {}", sp.bytes);
        let _ = writeln!(s, "  {name}.g0 = icmp sge i128 {lo}, 0\n  {name}.g1 = icmp sle i128 {name}.end, 18446744073709551616");
        checks.push(format!("{name}.g0"));
        checks.push(format!("{name}.g1"));
        (lo, format!("{name}.end"))
    }

    /// IR computing the smallest and largest exact values (128-bit, by
    /// name) of a launch value's computation (`lockstep::value_range`);
    /// the bounds checks go to `checks`.
    fn value_ir(
        &self,
        f: &Function,
        s: &mut String,
        name: &str,
        ops: &[crate::lockstep::Op<VarId>],
        checks: &mut Vec<String>,
    ) -> (String, String) {
        use crate::lockstep::{Launch, Op, RANGE_BOUND};
        let (params, _) = layout::param_layout(f, &f.params);
        let ctx = |field: usize, d: u8| field + 4 * usize::from(d);
        let ntid = std::mem::offset_of!(crate::cpu_abi::BlockCtx, ntid);
        let nctaid = std::mem::offset_of!(crate::cpu_abi::BlockCtx, nctaid);
        let mut stack: Vec<(String, String)> = Vec::new();
        for (k, op) in ops.iter().enumerate() {
            let v = format!("{name}.v{k}");
            let entry = match op {
                Op::Const(c) => (c.to_string(), c.to_string()),
                // Whole-module units do not evaluate these at a block's
                // start: the condition fails and the block runs its
                // lockstep version (units of one kernel, what the JIT
                // compiles, check them before the launch, `LaunchGuard`).
                Op::Wide { .. } | Op::MulHi | Op::Shr | Op::Rem | Op::Under | Op::Div | Op::Mod | Op::Either | Op::Min => {
                    checks.push("0".into());
                    return ("0".into(), "0".into());
                }
                Op::Param { at, signed } | Op::Field { at, signed, .. } => {
                    let field = match op {
                        Op::Field { field, .. } => *field,
                        _ => 0,
                    };
                    let off = f.params.iter().position(|p| p == at).and_then(|i| params.get(i)).map_or(0, |p| p.offset) + field;
                    let ext = if *signed { "sext" } else { "zext" };
                    let _ = writeln!(
                        s,
                        "  {v}.p = getelementptr i8, ptr %params, i64 {off}\n  {v}.w = load i32, ptr {v}.p, align 4\n  \
                         {v} = {ext} i32 {v}.w to i128"
                    );
                    (v.clone(), v.clone())
                }
                Op::Special(l, d) => {
                    let field = match l {
                        Launch::Tid | Launch::Ntid => ntid,
                        Launch::Ctaid | Launch::Nctaid => nctaid,
                    };
                    let _ = writeln!(
                        s,
                        "  {v}.p = getelementptr i8, ptr %ctx, i64 {}\n  {v}.w = load i32, ptr {v}.p, align 4\n  \
                         {v}.n = zext i32 {v}.w to i128\n  {v}.m = sub i128 {v}.n, 1",
                        ctx(field, *d)
                    );
                    match l {
                        Launch::Tid | Launch::Ctaid => ("0".to_string(), format!("{v}.m")),
                        Launch::Ntid | Launch::Nctaid => (format!("{v}.n"), format!("{v}.n")),
                    }
                }
                Op::Add | Op::Sub | Op::Mul => {
                    let (Some((y0, y1)), Some((x0, x1))) = (stack.pop(), stack.pop()) else {
                        checks.push("0".into());
                        return ("0".into(), "0".into());
                    };
                    match op {
                        Op::Add => {
                            let _ = writeln!(s, "  {v}.lo = add i128 {x0}, {y0}\n  {v}.hi = add i128 {x1}, {y1}");
                        }
                        Op::Sub => {
                            let _ = writeln!(s, "  {v}.lo = sub i128 {x0}, {y1}\n  {v}.hi = sub i128 {x1}, {y0}");
                        }
                        _ => {
                            let _ = writeln!(
                                s,
                                "  {v}.p0 = mul i128 {x0}, {y0}\n  {v}.p1 = mul i128 {x0}, {y1}\n  \
                                 {v}.p2 = mul i128 {x1}, {y0}\n  {v}.p3 = mul i128 {x1}, {y1}"
                            );
                            for (out, pred) in [("lo", "slt"), ("hi", "sgt")] {
                                let _ = writeln!(
                                    s,
                                    "  {v}.{out}c0 = icmp {pred} i128 {v}.p0, {v}.p1\n  \
                                     {v}.{out}m0 = select i1 {v}.{out}c0, i128 {v}.p0, i128 {v}.p1\n  \
                                     {v}.{out}c1 = icmp {pred} i128 {v}.p2, {v}.p3\n  \
                                     {v}.{out}m1 = select i1 {v}.{out}c1, i128 {v}.p2, i128 {v}.p3\n  \
                                     {v}.{out}c2 = icmp {pred} i128 {v}.{out}m0, {v}.{out}m1\n  \
                                     {v}.{out} = select i1 {v}.{out}c2, i128 {v}.{out}m0, i128 {v}.{out}m1"
                                );
                            }
                        }
                    }
                    (format!("{v}.lo"), format!("{v}.hi"))
                }
            };
            // Within the bound at every step (`lockstep::value_range`).
            let _ = writeln!(
                s,
                "  {v}.in0 = icmp sge i128 {}, {}\n  {v}.in1 = icmp sle i128 {}, {}",
                entry.0, -RANGE_BOUND, entry.1, RANGE_BOUND
            );
            checks.push(format!("{v}.in0"));
            checks.push(format!("{v}.in1"));
            stack.push(entry);
        }
        match (stack.pop(), stack.is_empty()) {
            (Some(v), true) => v,
            _ => {
                checks.push("0".into());
                ("0".into(), "0".into())
            }
        }
    }

    /// A module variable another unit of the module defines.
    fn declare_variable(&mut self, v: &Variable, out: &mut String) {
        if matches!(v.decl.space, StateSpace::Global | StateSpace::Const) {
            let name = global_name(&KernelSymbols::global(v.decl.name));
            let _ = writeln!(out, "{name} = external global i8, align {}", v.decl.alignment());
        }
    }

    fn emit_variable(&mut self, v: &Variable, out: &mut String) -> Res<()> {
        let d = &v.decl;
        if !matches!(d.space, StateSpace::Global | StateSpace::Const) {
            // Shared variables live in each block's window.
            return Ok(());
        }
        let name = global_name(&KernelSymbols::global(d.name));
        if d.linkage == Some(Linkage::Extern) {
            let _ = writeln!(out, "{name} = external global i8");
            return Ok(());
        }
        let size = match d.size() {
            Some(s) => s,
            None => {
                // `[]` with an initializer: the initializer gives the length.
                let n = d.init.as_ref().map_or(0, count_initializers);
                n as u64 * d.element_size()
            }
        };
        let mut bytes = vec![0u8; size as usize];
        let mut relocs: Vec<(u64, SymbolId, i64)> = Vec::new();
        let mut masked: Vec<MaskedByte> = Vec::new();
        if let Some(init) = &d.init {
            let mut pos = 0u64;
            self.flatten_init(d, init, &mut bytes, &mut relocs, &mut masked, &mut pos)?;
        }
        pointers_from_masked_bytes(d, &masked, &mut relocs)?;
        let align = d.alignment();
        // `.const` is read-only for kernels only: the host writes it
        // (cudaMemcpyToSymbol), so it lives in writable memory.
        let _ = write!(out, "{name} = global ");
        if relocs.is_empty() {
            let _ = writeln!(out, "[{} x i8] {}, align {align}", bytes.len(), ir::c_bytes(&bytes));
        } else {
            // A packed struct of byte runs and pointers.
            let mut fields = Vec::new();
            let mut types = Vec::new();
            let mut at = 0u64;
            relocs.sort_by_key(|r| r.0);
            for (off, sym, add) in &relocs {
                if *off > at {
                    let run = &bytes[at as usize..*off as usize];
                    types.push(format!("[{} x i8]", run.len()));
                    fields.push(format!("[{} x i8] {}", run.len(), ir::c_bytes(run)));
                }
                let target = self.symbol_address_const(*sym)?;
                types.push("ptr".into());
                if *add == 0 {
                    fields.push(format!("ptr {target}"));
                } else {
                    fields.push(format!("ptr getelementptr (i8, ptr {target}, i64 {add})"));
                }
                at = off + 8;
            }
            if at < bytes.len() as u64 {
                let run = &bytes[at as usize..];
                types.push(format!("[{} x i8]", run.len()));
                fields.push(format!("[{} x i8] {}", run.len(), ir::c_bytes(run)));
            }
            let _ = writeln!(out, "<{{ {} }}> <{{ {} }}>, align {align}", types.join(", "), fields.join(", "));
        }
        Ok(())
    }

    /// The shared unit's table of the module's variable addresses
    /// ([`KernelSymbols::VARIABLE_TABLE`], `BlockCtx::variables`), in
    /// constant memory, for the kernels compiled apart where units cannot
    /// link: the code object's loader fills it in.
    fn emit_variable_table(&self, out: &mut String) {
        let entries: Vec<String> =
            layout::table_variables(self.m).map(|v| format!("ptr {}", global_name(&KernelSymbols::global(v.decl.name)))).collect();
        let _ = writeln!(
            out,
            "{} = addrspace(4) constant [{} x ptr] [{}], align 8",
            global_name(KernelSymbols::VARIABLE_TABLE),
            entries.len(),
            entries.join(", ")
        );
    }

    /// The constant address of a module symbol, for initializers.
    fn symbol_address_const(&self, sym: SymbolId) -> Res<String> {
        let s = self.m.symbol(sym);
        match s.kind {
            SymbolKind::Function if self.m.function(sym).is_some_and(|f| f.kind == FunctionKind::Entry) => {
                Ok(global_name(&KernelSymbols::thread(s.name)))
            }
            SymbolKind::Function => Ok(global_name(&func_symbol(s.name))),
            SymbolKind::Variable => Ok(global_name(&KernelSymbols::global(s.name))),
        }
    }

    fn flatten_init(
        &self,
        d: &VarDecl,
        init: &Initializer,
        bytes: &mut [u8],
        relocs: &mut Vec<(u64, SymbolId, i64)>,
        masked: &mut Vec<MaskedByte>,
        pos: &mut u64,
    ) -> Res<()> {
        let esize = d.ty.size() as u64;
        match init {
            Initializer::List(items) => {
                for i in items {
                    self.flatten_init(d, i, bytes, relocs, masked, pos)?;
                }
            }
            Initializer::Mask { mask, value } => match (**value).clone() {
                Initializer::Symbol { symbol, offset, .. } if esize == 1 => {
                    masked.push(MaskedByte { pos: *pos, mask: *mask, symbol, offset });
                    *pos += 1;
                }
                _ => return Err(unsupported_init(d, "a masked initializer other than one byte of an address")),
            },
            Initializer::Field { .. } | Initializer::Word(_) => {
                return Err(unsupported_init(d, "a sampler or texture reference initializer"));
            }
            Initializer::Symbol { symbol, offset, .. } => {
                if esize != 8 {
                    return Err(CompileError::Unsupported {
                        function: d.name.to_string(),
                        what: "an address stored in an element smaller than 64 bits".into(),
                        line: 0,
                        column: 0,
                    });
                }
                if *pos + 8 <= bytes.len() as u64 {
                    relocs.push((*pos, *symbol, *offset));
                }
                *pos += 8;
            }
            scalar => {
                let bits: u64 = match (scalar, d.ty) {
                    (Initializer::Int(v), t) if t.is_float() => float_from_f64(t, *v as f64),
                    (Initializer::Int(v), _) => *v as u64,
                    (Initializer::F32(b), Type::F64) => (f32::from_bits(*b) as f64).to_bits(),
                    (Initializer::F32(b), _) => *b as u64,
                    (Initializer::F64(b), t) if t.is_float() => float_from_f64(t, f64::from_bits(*b)),
                    (Initializer::F64(b), _) => *b,
                    _ => 0,
                };
                let start = *pos as usize;
                for k in 0..esize as usize {
                    if let Some(slot) = bytes.get_mut(start + k) {
                        *slot = (bits >> (8 * k)) as u8;
                    }
                }
                *pos += esize;
            }
        }
        Ok(())
    }
}

/// One byte of a symbol's address in a byte array: `0xFF00(generic(x)+4)`.
struct MaskedByte {
    pos: u64,
    mask: u64,
    symbol: SymbolId,
    offset: i64,
}

fn unsupported_init(d: &VarDecl, what: &str) -> CompileError {
    CompileError::Unsupported { function: d.name.to_string(), what: format!("{what} (in `{}`)", d.name), line: 0, column: 0 }
}

/// LLVM writes a pointer inside a packed aggregate as eight masked bytes,
/// least significant first. Eight such bytes in a row naming the same
/// address are that pointer, stored unaligned; anything else is an error
/// rather than zeros.
fn pointers_from_masked_bytes(d: &VarDecl, masked: &[MaskedByte], relocs: &mut Vec<(u64, SymbolId, i64)>) -> Res<()> {
    for group in masked.chunks(8) {
        let first = &group[0];
        let whole = group.len() == 8
            && group.iter().enumerate().all(|(k, b)| {
                b.pos == first.pos + k as u64 && b.mask == 0xFFu64 << (8 * k) && b.symbol == first.symbol && b.offset == first.offset
            });
        if !whole {
            return Err(unsupported_init(d, "address bytes under a mask that do not form a whole 64-bit address"));
        }
        relocs.push((first.pos, first.symbol, first.offset));
    }
    Ok(())
}

fn count_initializers(i: &Initializer) -> usize {
    match i {
        Initializer::List(items) => items.iter().map(count_initializers).sum(),
        _ => 1,
    }
}

/// A float constant of a PTX type from an f64 value (round to nearest).
pub fn float_from_f64(t: Type, v: f64) -> u64 {
    match t {
        Type::F32 => (v as f32).to_bits() as u64,
        Type::F16 => crate::softfloat::f64_to_small(v.to_bits(), crate::softfloat::HALF, crate::softfloat::Mode::Rn),
        Type::Bf16 => crate::softfloat::f64_to_small(v.to_bits(), crate::softfloat::BF16, crate::softfloat::Mode::Rn),
        _ => v.to_bits(),
    }
}

/// The signature line of a kernel's block function.
fn block_function_header(block: &str, param_bytes: u32) -> String {
    let ctx_bytes = std::mem::size_of::<crate::cpu_abi::BlockCtx>();
    let param_bytes = param_bytes.max(1);
    format!("define void {block}(ptr noalias readonly align 16 dereferenceable({param_bytes}) %params, ptr noalias align 8 dereferenceable({ctx_bytes}) %ctx) #0 {{\n")
}

/// Block-function code calling `thread` for every thread of the block in
/// order (x fastest), entered from block `from`; it ends at `%done`.
fn every_thread(thread: &str, from: &str) -> String {
    format!(
        "  %nx = load i32, ptr %ctx, align 4
  %pny = getelementptr i8, ptr %ctx, i64 4
  %ny = load i32, ptr %pny, align 4
  %pnz = getelementptr i8, ptr %ctx, i64 8
  %nz = load i32, ptr %pnz, align 4
  %ez = icmp eq i32 %nz, 0
  br i1 %ez, label %done, label %zloop
zloop:
  %z = phi i32 [0, %{from}], [%z1, %zlatch]
  br label %yloop
yloop:
  %y = phi i32 [0, %zloop], [%y1, %ylatch]
  br label %xloop
xloop:
  %x = phi i32 [0, %yloop], [%x1, %xloop]
  call void {thread}(ptr %params, ptr %ctx, i32 %x, i32 %y, i32 %z)
  %x1 = add nuw i32 %x, 1
  %xc = icmp ult i32 %x1, %nx
  br i1 %xc, label %xloop, label %ylatch
ylatch:
  %y1 = add nuw i32 %y, 1
  %yc = icmp ult i32 %y1, %ny
  br i1 %yc, label %yloop, label %zlatch
zlatch:
  %z1 = add nuw i32 %z, 1
  %zc = icmp ult i32 %z1, %nz
  br i1 %zc, label %zloop, label %done
"
    )
}

/// Block-function code calling the warp function `warp` for every warp of
/// the block in order, each from a fresh frame (`%frame`), entered from
/// block `from`; a warp that suspends is called again at once. It ends at
/// `%done`.
fn every_warp(warp: &str, from: &str) -> String {
    let suspended = crate::cpu_abi::warp_frame::SUSPENDED;
    format!(
        "  %pn = getelementptr i8, ptr %ctx, i64 {nthreads}
  %n = load i32, ptr %pn, align 4
  %n31 = add i32 %n, 31
  %nw = lshr i32 %n31, 5
  %none = icmp eq i32 %nw, 0
  br i1 %none, label %done, label %wloop
wloop:
  %w = phi i32 [0, %{from}], [%w1, %wnext]
  store i32 0, ptr %frame, align 64
  br label %wcall
wcall:
  %r = call i32 {warp}(ptr %params, ptr %ctx, i32 %w, ptr %frame)
  %again = icmp eq i32 %r, {suspended}
  br i1 %again, label %wcall, label %wnext
wnext:
  %w1 = add nuw i32 %w, 1
  %more = icmp ult i32 %w1, %nw
  br i1 %more, label %wloop, label %done
",
        nthreads = offsets::NTHREADS
    )
}

/// The frame of the warps a block function runs, on its stack.
fn warp_frame_alloca(frame_bytes: u32) -> String {
    let frame_bytes = frame_bytes.max(crate::cpu_abi::warp_frame::HEADER_BYTES);
    format!("  %frame = alloca [{frame_bytes} x i8], align 64\n")
}

const BLOCK_FUNCTION_END: &str = "done:\n  ret void\n}\n";

/// Largest warp frame for which the fast path keeps a frame per warp on
/// its stack (see [`warp_block_function`]): 32 warps of 64 KiB are 2 MiB
/// of the 16 MiB block stack (`ExecutorConfig::block_stack_size`).
const TURN_FRAME_LIMIT: u32 = 64 << 10;

/// The fast-path function of a warp-mode kernel: every warp of the block
/// in order. Fast-path kernels have no barriers, but a warp may suspend
/// (`nanosleep`, or a turn in a grid-stride loop,
/// `cpu_abi::warp_frame::TURN`): it keeps its frame and the next warp
/// starts in a new one; once every warp has started, the suspended ones
/// are called again in turn, in their frames, until all have finished.
/// A warp that finishes leaves its frame to the next, so a kernel whose
/// warps never suspend uses one frame, as before. Frames above
/// [`TURN_FRAME_LIMIT`] (local memory lives there) keep one frame and
/// call a suspended warp again at once. The call that resumes a warp is
/// not inlined: LLVM inlined the thread function at both calls, so a
/// grid-stride kernel's code was three copies of it (`saxpy` on an AVX2
/// host: a 34 KB thread function, a 65 KB block function); a resumed warp
/// runs at least a turn's iterations per call.
pub fn warp_block_function(kernel: &str, param_bytes: u32, frame_bytes: u32) -> String {
    let thread = global_name(&KernelSymbols::thread(kernel));
    let block = global_name(&KernelSymbols::block(kernel));
    let header = block_function_header(&block, param_bytes);
    if frame_bytes > TURN_FRAME_LIMIT {
        return format!("{header}entry:\n{}{}{BLOCK_FUNCTION_END}", warp_frame_alloca(frame_bytes), every_warp(&thread, "entry"));
    }
    let stride = u64::from(frame_bytes.max(crate::cpu_abi::warp_frame::HEADER_BYTES).div_ceil(64) * 64);
    let suspended = crate::cpu_abi::warp_frame::SUSPENDED;
    format!(
        "{header}entry:
  %slot.of = alloca [32 x i32], align 4
  %pn = getelementptr i8, ptr %ctx, i64 {nthreads}
  %n = load i32, ptr %pn, align 4
  %n31 = add i32 %n, 31
  %nw = lshr i32 %n31, 5
  %none = icmp eq i32 %nw, 0
  br i1 %none, label %done, label %init
init:
  %nw64 = zext i32 %nw to i64
  %bytes = mul i64 %nw64, {stride}
  %frames = alloca i8, i64 %bytes, align 64
  br label %first
first:
  %w = phi i32 [0, %init], [%w1, %first.next]
  %used = phi i32 [0, %init], [%used1, %first.next]
  %pending = phi i64 [0, %init], [%pending1, %first.next]
  %used64 = zext i32 %used to i64
  %off = mul i64 %used64, {stride}
  %fr = getelementptr i8, ptr %frames, i64 %off
  store i32 0, ptr %fr, align 64
  %r = call i32 {thread}(ptr %params, ptr %ctx, i32 %w, ptr %fr)
  %susp = icmp eq i32 %r, {suspended}
  br i1 %susp, label %first.keep, label %first.next
first.keep:
  %sp = getelementptr [32 x i32], ptr %slot.of, i64 0, i32 %w
  store i32 %used, ptr %sp, align 4
  %w64 = zext i32 %w to i64
  %bit = shl i64 1, %w64
  %pk = or i64 %pending, %bit
  %uk = add i32 %used, 1
  br label %first.next
first.next:
  %pending1 = phi i64 [%pending, %first], [%pk, %first.keep]
  %used1 = phi i32 [%used, %first], [%uk, %first.keep]
  %w1 = add nuw i32 %w, 1
  %more = icmp ult i32 %w1, %nw
  br i1 %more, label %first, label %rounds
rounds:
  %left = phi i64 [%pending1, %first.next], [%left1, %round.next]
  %any = icmp ne i64 %left, 0
  br i1 %any, label %round, label %done
round:
  %v = phi i32 [0, %rounds], [%v1, %round.step]
  %still = phi i64 [%left, %rounds], [%still1, %round.step]
  %v64 = zext i32 %v to i64
  %vbit = shl i64 1, %v64
  %vp = and i64 %still, %vbit
  %waiting = icmp ne i64 %vp, 0
  br i1 %waiting, label %round.call, label %round.step
round.call:
  %vsp = getelementptr [32 x i32], ptr %slot.of, i64 0, i32 %v
  %vslot = load i32, ptr %vsp, align 4
  %vslot64 = zext i32 %vslot to i64
  %voff = mul i64 %vslot64, {stride}
  %vfr = getelementptr i8, ptr %frames, i64 %voff
  %vr = call i32 {thread}(ptr %params, ptr %ctx, i32 %v, ptr %vfr) noinline
  %vsusp = icmp eq i32 %vr, {suspended}
  %vclear = xor i64 %still, %vbit
  %vnext = select i1 %vsusp, i64 %still, i64 %vclear
  br label %round.step
round.step:
  %still1 = phi i64 [%still, %round], [%vnext, %round.call]
  %v1 = add nuw i32 %v, 1
  %vmore = icmp ult i32 %v1, %nw
  br i1 %vmore, label %round, label %round.next
round.next:
  %left1 = phi i64 [%still1, %round.step]
  br label %rounds
{BLOCK_FUNCTION_END}",
        nthreads = offsets::NTHREADS
    )
}

/// The fast-path function running every thread of a block in order.
pub fn block_function(kernel: &str, param_bytes: u32) -> String {
    let thread = global_name(&KernelSymbols::thread(kernel));
    let block = global_name(&KernelSymbols::block(kernel));
    let header = block_function_header(&block, param_bytes);
    format!("{header}entry:\n{}{BLOCK_FUNCTION_END}", every_thread(&thread, "entry"))
}

/// The block function of a guarded kernel (`warp::ModeChoice::guarded`):
/// `check` computes `%ok`, whether the launch meets the conditions under
/// which running thread by thread is exact; if it does, every thread of
/// the block in order (the fast path), else the block's warps one after
/// another through the kernel's warp version (`KernelSymbols::lockstep`),
/// whose frame lives on the stack (the kernel never suspends).
pub fn guarded_block_function(kernel: &str, param_bytes: u32, frame_bytes: u32, check: &str) -> String {
    let thread = global_name(&KernelSymbols::thread(kernel));
    let warp = global_name(&KernelSymbols::lockstep(kernel));
    let block = global_name(&KernelSymbols::block(kernel));
    let header = block_function_header(&block, param_bytes);
    format!(
        "{header}entry:\n{}{check}  br i1 %ok, label %threads, label %warps\nthreads:\n{}warps:\n{}{BLOCK_FUNCTION_END}",
        warp_frame_alloca(frame_bytes),
        every_thread(&thread, "threads"),
        every_warp(&warp, "warps")
    )
}

impl<'c, 'm> FnLower<'c, 'm> {
    pub fn new(cx: &'c mut ModuleCx<'m>, item: ItemId, f: &'m Function<'m>, b: &'m Body<'m>) -> Self {
        let invariant = if cx.target == crate::Target::HostCpu && cx.opts.tier == crate::Tier::Optimized {
            crate::uniform::block_invariant(f, b)
        } else {
            Vec::new()
        };
        FnLower {
            cx,
            item,
            f,
            b,
            kernel: f.kind == FunctionKind::Entry,
            out: ir::Body::default(),
            regs: Vec::new(),
            reg_tys: Vec::new(),
            vars: HashMap::new(),
            labels: Vec::new(),
            carry: None,
            stmt: 0,
            exit_label: String::new(),
            shadows: Vec::new(),
            next_shadow: None,
            warp: None,
            nan_blind: crate::arith::nan_blind_registers(f, b),
            flushed: crate::arith::flushed_registers(f, b),
            invariant,
            memcheck_caches: Default::default(),
            memcheck_slot: 0,
            meetings: Vec::new(),
            bitcasts: HashMap::new(),
            flushes: HashMap::new(),
            matrix_buffers: Vec::new(),
        }
    }

    /// `v` reinterpreted as `to` (same width): its operand where `v` is
    /// itself a bitcast from `to`. Registers live in integer slots, so an
    /// f32 operand was read as `bitcast (load i32)`, and flushed, stored
    /// or compared as bits through a second bitcast back: a sixth of the
    /// IR of llama.cpp's thread-by-thread `mul_mat_q` was bitcasts.
    pub fn cast_bits(&mut self, v: &V, to: Ty) -> V {
        if v.ty == to {
            return v.clone();
        }
        if let Some(src) = self.bitcasts.get(&v.s) {
            if src.ty == to && src.lanes == v.lanes {
                return src.clone();
            }
        }
        let r = self.out.def(to, format_args!("bitcast {v} to {to}"));
        self.bitcasts.insert(r.s.clone(), v.clone());
        r
    }

    // ---- errors ---------------------------------------------------------

    pub fn span(&self) -> Span {
        self.b.span(self.stmt)
    }

    pub fn unsupported<T>(&self, what: impl Into<String>) -> Res<T> {
        Err(self.cx.error_at(self.f, self.span(), what.into(), true))
    }

    pub fn invalid<T>(&self, what: impl Into<String>) -> Res<T> {
        Err(self.cx.error_at(self.f, self.span(), what.into(), false))
    }

    /// The instruction as written, for error messages.
    pub fn describe(&self, inst: &Instruction) -> String {
        let mut s = inst.op.as_str().to_string();
        for m in self.b.mods(inst) {
            let mut t = String::new();
            let _ = ptx_modifier(&mut t, m);
            s.push_str(&t);
        }
        s
    }

    // ---- frame ------------------------------------------------------------

    fn signature(&self) -> String {
        if self.kernel {
            // Parameters are read-only. (`noalias` is on the block function
            // instead: on this one, inlined into the block's thread loop, it
            // would become scope declarations inside the loop that keep
            // parameter loads from leaving it.)
            let (_, param_bytes) = layout::param_layout(self.f, &self.f.params);
            format!(
                "define void {}(ptr readonly align 16 dereferenceable({}) %params, ptr align 8 dereferenceable({}) %ctx, i32 %tid.x, i32 %tid.y, i32 %tid.z) #2",
                global_name(&KernelSymbols::thread(self.f.name)),
                param_bytes.max(1),
                std::mem::size_of::<crate::cpu_abi::BlockCtx>()
            )
        } else {
            let mut s = format!("define internal void {}({FUNC_PREFIX}", global_name(&func_symbol(self.f.name)));
            for (i, _) in self.f.returns.iter().enumerate() {
                let _ = write!(s, ", ptr %ret{i}");
            }
            for (i, _) in self.f.params.iter().enumerate() {
                let _ = write!(s, ", ptr %arg{i}");
            }
            s.push_str(") #0");
            s
        }
    }

    pub fn lower(&mut self) -> Res<String> {
        self.exit_label = self.out.fresh_label("exit");
        // Registers: one alloca each (promoted to SSA by LLVM).
        for r in 0..self.b.regs.len() {
            // A vector-typed register's elements are registers of their own
            // (the parser resolves `%v.x` and `%v` to them): each has the
            // element type.
            let decl = self.f.var(self.b.regs[r].var);
            let ty = reg_ty(decl.ty);
            let a = self.out.alloca(ty.name(), (ty.bits().max(8) / 8) as u64);
            self.regs.push(a);
            self.reg_tys.push(ty);
        }
        if !self.kernel {
            // `.reg` parameters arrive in memory, as `.param` ones do: each
            // starts as the value its caller passed.
            for r in 0..self.b.regs.len() {
                let var = self.b.regs[r].var;
                if let Some(i) = self.f.params.iter().position(|&p| p == var) {
                    let ty = self.reg_tys[r];
                    let v = self.out.def(ty, format_args!("load {ty}, ptr %arg{i}"));
                    let slot = self.regs[r].clone();
                    self.out.op(format_args!("store {v}, ptr {slot}"));
                }
            }
        }
        let pointers = pointer_registers(self.b, &self.reg_tys);
        for (r, is_ptr) in pointers.into_iter().enumerate() {
            self.shadows.push(is_ptr.then(|| self.out.alloca("ptr", 8)));
            let _ = r;
        }
        self.place_variables()?;
        for i in 0..self.b.labels.len() {
            let l = self.out.fresh_label("L");
            let _ = i;
            self.labels.push(l);
        }
        // Entry values shared by the body.
        let lin = self.linear_tid_expr();
        self.out.text.push_str(&lin);
        if self.kernel {
            // The local window starts 2 GiB below this frame, so every
            // address on the thread's stack is a 32-bit offset from it.
            self.out.allocas.push_str("  %lanchor = alloca i8, align 1\n");
            self.out.text.push_str("  %lanchor.i = ptrtoint ptr %lanchor to i64\n  %lbase = sub i64 %lanchor.i, 2147483648\n");
        }
        for (i, s) in self.b.statements.iter().enumerate() {
            self.stmt = i;
            if self.meetings.get(i).copied().unwrap_or(false) {
                self.meet_lanes();
            }
            self.statement(s)?;
        }
        if !self.out.terminated {
            self.out.terminate(format_args!("br label %{}", self.exit_label));
        }
        let exit = self.exit_label.clone();
        self.out.label(&exit);
        if !self.kernel {
            // `.reg` results go back through the caller's pointers.
            for r in 0..self.b.regs.len() {
                let var = self.b.regs[r].var;
                if let Some(i) = self.f.returns.iter().position(|&p| p == var) {
                    let ty = self.reg_tys[r];
                    let slot = self.regs[r].clone();
                    let v = self.out.def(ty, format_args!("load {ty}, ptr {slot}"));
                    self.out.op(format_args!("store {v}, ptr %ret{i}"));
                }
            }
        }
        self.out.terminate(format_args!("ret void"));
        let mut text = self.signature();
        text.push_str(" {\nentry:\n");
        text.push_str(&self.out.allocas);
        text.push_str(&self.out.text);
        text.push_str("}\n\n");
        Ok(text)
    }

    /// `%lin` = x + y*ntid.x + z*ntid.x*ntid.y, and `%params` for functions.
    fn linear_tid_expr(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "  %ntid.x = load i32, ptr %ctx, align 4");
        let _ = writeln!(s, "  %ntid.y.p = getelementptr i8, ptr %ctx, i64 4");
        let _ = writeln!(s, "  %ntid.y = load i32, ptr %ntid.y.p, align 4");
        let _ = writeln!(s, "  %lin.y = mul i32 %tid.y, %ntid.x");
        let _ = writeln!(s, "  %lin.xy = add i32 %tid.x, %lin.y");
        let _ = writeln!(s, "  %plane = mul i32 %ntid.x, %ntid.y");
        let _ = writeln!(s, "  %lin.z = mul i32 %tid.z, %plane");
        let _ = writeln!(s, "  %lin = add i32 %lin.xy, %lin.z");
        s
    }

    fn place_variables(&mut self) -> Res<()> {
        for (vid, d) in self.f.vars.iter().enumerate() {
            let vid = vid as VarId;
            // `.global`/`.const` variables declared in the body are module
            // variables (the parser resolves their names to those).
            if matches!(d.space, StateSpace::Reg | StateSpace::Global | StateSpace::Const) {
                continue;
            }
            let loc = if let Some(i) = self.f.params.iter().position(|&p| p == vid) {
                if self.kernel {
                    let (layout, _) = layout::param_layout(self.f, &self.f.params);
                    let name = self.out.fresh("param");
                    let _ = writeln!(self.out.allocas, "  {name} = getelementptr i8, ptr %params, i64 {}", layout[i].offset);
                    VarLoc::Ptr(name)
                } else {
                    VarLoc::Ptr(format!("%arg{i}"))
                }
            } else if let Some(i) = self.f.returns.iter().position(|&p| p == vid) {
                VarLoc::Ptr(format!("%ret{i}"))
            } else if matches!(d.space, StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster) {
                if is_dynamic_shared(d) {
                    VarLoc::DynShared
                } else {
                    match self.cx.a.local_shared.get(&(self.item, vid)) {
                        Some(&o) => VarLoc::Shared(o),
                        None => return self.invalid(format!("shared variable `{}` has no size", d.name)),
                    }
                }
            } else if matches!(d.space, StateSpace::Local | StateSpace::Param) {
                let size = match d.size() {
                    Some(s) => s.max(1),
                    None => return self.invalid(format!("variable `{}` has no size", d.name)),
                };
                let a = self.out.alloca(&format!("[{size} x i8]"), d.alignment().max(8));
                if d.space == StateSpace::Local {
                    VarLoc::Local(a)
                } else {
                    VarLoc::Ptr(a)
                }
            } else {
                self.stmt = 0;
                return self.unsupported(format!("a `.{}` variable inside a function (`{}`)", d.space, d.name));
            };
            self.vars.insert(vid, loc);
        }
        Ok(())
    }

    // ---- statements ---------------------------------------------------------

    fn ensure_block(&mut self) {
        if self.out.terminated {
            let l = self.out.fresh_label("dead");
            self.out.label(&l);
        }
    }

    fn statement(&mut self, s: &Statement) -> Res<()> {
        match s {
            Statement::Label(l) => {
                let name = self.labels[*l as usize].clone();
                if !self.out.terminated {
                    self.out.terminate(format_args!("br label %{name}"));
                }
                self.out.label(&name);
            }
            Statement::Instruction(inst) => {
                self.ensure_block();
                self.instruction(inst)?;
            }
            // Declarations were placed up front; the rest carries no code.
            _ => {}
        }
        Ok(())
    }

    fn instruction(&mut self, inst: &Instruction) -> Res<()> {
        let r = self.guarded_instruction(inst);
        self.forget_written_flushes(inst);
        r
    }

    fn guarded_instruction(&mut self, inst: &Instruction) -> Res<()> {
        self.next_shadow = None;
        let Some(g) = inst.guard else {
            return self.dispatch(inst);
        };
        if self.reg_tys[g.reg as usize] != Ty::I1 {
            return self.invalid("a guard must be a predicate register");
        }
        let p = self.load_reg(g.reg);
        if inst.op == Opcode::Bra {
            // A predicated branch is a conditional branch.
            let target = self.branch_target(inst)?;
            let fall = self.out.fresh_label("fall");
            let (t, f) = if g.negate { (&fall, &target) } else { (&target, &fall) };
            self.maybe_yield(inst)?;
            self.out.terminate(format_args!("br {p}, label %{t}, label %{f}"));
            self.out.label(&fall);
            return Ok(());
        }
        let then = self.out.fresh_label("then");
        let join = self.out.fresh_label("join");
        let (t, f) = if g.negate { (&join, &then) } else { (&then, &join) };
        self.out.terminate(format_args!("br {p}, label %{t}, label %{f}"));
        self.out.label(&then);
        self.dispatch(inst)?;
        if !self.out.terminated {
            self.out.terminate(format_args!("br label %{join}"));
        }
        self.out.label(&join);
        Ok(())
    }

    /// The lowering shared by both modes (warp mode routes control flow,
    /// memory and collectives itself and sends the rest here).
    pub fn dispatch_shared(&mut self, inst: &Instruction) -> Res<()> {
        self.dispatch(inst)
    }

    fn dispatch(&mut self, inst: &Instruction) -> Res<()> {
        use Opcode::*;
        match inst.op {
            Bra => {
                let target = self.branch_target(inst)?;
                self.maybe_yield(inst)?;
                self.out.terminate(format_args!("br label %{target}"));
                Ok(())
            }
            Brx => self.brx(inst),
            Call => self.call(inst),
            Ret => {
                self.out.terminate(format_args!("br label %{}", self.exit_label.clone()));
                Ok(())
            }
            Exit => {
                if self.kernel {
                    self.out.terminate(format_args!("br label %{}", self.exit_label.clone()));
                } else if self.cx.facts.exit_returns {
                    let flag = self.out.def(Ty::Ptr, format_args!("getelementptr i8, ptr %ctx, i64 {}", crate::cpu_abi::offsets::EXITED));
                    self.out.op(format_args!("store i32 1, {flag}, align 4"));
                    self.out.terminate(format_args!("br label %{}", self.exit_label.clone()));
                } else {
                    self.runtime_noreturn(&crate::cpu_abi::runtime::EXIT, "ptr %ctx, i32 %lin");
                }
                Ok(())
            }
            Trap | Brkpt => {
                let place = self.source_place();
                self.runtime_noreturn(&crate::cpu_abi::runtime::TRAP, &format!("ptr %ctx, i32 %lin, ptr {place}"));
                Ok(())
            }
            Mov => self.mov(inst),
            Ld | Ldu => self.ld(inst),
            St => self.st(inst),
            Cvta => self.cvta(inst),
            Isspacep => self.isspacep(inst),
            Prefetch | Prefetchu | Applypriority | Discard | Pmevent | Griddepcontrol => Ok(()),
            Membar | Fence => {
                if inst.op == Fence && (inst.has(self.b, Flag::Proxy) || inst.has(self.b, Flag::MbarrierInit)) {
                    // Proxy fences order memory views the CPU does not have.
                    return Ok(());
                }
                self.out.op(format_args!("fence seq_cst"));
                Ok(())
            }
            Createpolicy => {
                let args = self.b.args(inst);
                self.set(&args[0], V::int(Ty::I64, 0))
            }
            Nanosleep => {
                let args = self.b.args(inst);
                let ns = self.get(&args[0], Ty::I32)?;
                self.cx.declare_runtime(&crate::cpu_abi::runtime::NANOSLEEP);
                self.out.op(format_args!("call void @__anycuda_nanosleep(ptr %ctx, {ns})"));
                Ok(())
            }
            Atom | Red => self.atom(inst),
            Cvt => self.cvt(inst),
            Setp | Set => self.setp(inst),
            Selp => self.selp(inst),
            Slct => self.slct(inst),
            Bar | Barrier => self.barrier(inst),
            Shfl => self.shfl(inst),
            Vote => self.vote(inst),
            Match => self.match_sync(inst),
            Redux => self.redux(inst),
            Activemask => self.activemask(inst),
            Elect => self.elect(inst),
            Alloca => self.alloca_inst(inst),
            Mma | Wmma | Ldmatrix | Stmatrix | Movmatrix => self.matrix(inst),
            Cp | Mbarrier => self.async_copy(inst),
            Tex | Tld4 => self.tex(inst),
            Suld => self.suld(inst),
            Sust => self.sust(inst),
            Sured => self.sured(inst),
            Istypep => self.istypep(inst),
            Txq | Suq => self.txq(inst),
            Vadd | Vsub | Vabsdiff | Vmin | Vmax | Vshl | Vshr | Vmad | Vset | Vadd2 | Vsub2 | Vavrg2 | Vabsdiff2 | Vmin2 | Vmax2
            | Vset2 | Vadd4 | Vsub4 | Vavrg4 | Vabsdiff4 | Vmin4 | Vmax4 | Vset4 => self.video(inst),
            Stacksave | Stackrestore => self.unsupported(format!("`{}`", self.describe(inst))),
            Add | Sub | Mul | Mad | Fma | Div | Rem | Abs | Neg | Min | Max | Addc | Subc | Madc | Mul24 | Mad24 | Sad | Popc | Clz
            | Bfind | Brev | Bfe | Bfi | Fns | Szext | Bmsk | Dp4a | Dp2a | And | Or | Xor | Not | Cnot | Lop3 | Shf | Shl | Shr | Prmt
            | Copysign | Rcp | Sqrt | Rsqrt | Sin | Cos | Lg2 | Ex2 | Tanh | Testp => self.arith(inst),
            _ => self.unsupported(format!("instruction `{}`", self.describe(inst))),
        }
    }

    // ---- registers and operands ---------------------------------------------------

    pub fn load_reg(&mut self, r: RegId) -> V {
        if self.uniform_reg(r) {
            // One scalar for the warp, broadcast (LLVM folds the broadcast
            // into scalar operations where every operand is one).
            let v = self.load_uniform_reg(r);
            return self.vec(v);
        }
        let ty = self.reg_tys[r as usize];
        if let Some(offset) = self.warp.as_ref().and_then(|w| w.resident_slot(r)) {
            let q = self.frame_ptr(offset);
            return self.load_frame_value(ty, &q);
        }
        let p = self.regs[r as usize].clone();
        self.out.def(ty, format_args!("load {ty}, ptr {p}"))
    }

    /// Calls a scalar helper function; in warp mode, through a vector
    /// wrapper that applies it to each lane.
    pub fn call_helper(&mut self, name: &str, ret: Ty, params: &[Ty], args: &[&V]) -> V {
        let n = ir::lanes();
        let list: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        if n == 1 {
            return self.out.def(ret, format_args!("call {} @{name}({})", ret.name(), list.join(", ")));
        }
        let wrapper = format!("{name}.v{n}");
        let params = params.to_vec();
        let scalar_name = name.to_string();
        self.cx.helper(&wrapper, || vector_wrapper(&scalar_name, &wrapper, ret, &params, n));
        self.out.def(ret, format_args!("call {ret} @\"{wrapper}\"({})", list.join(", ")))
    }

    /// The pointer shadow of a register, loaded, if it has one.
    pub fn shadow(&mut self, r: RegId) -> Option<V> {
        let slot = self.shadows.get(r as usize).cloned().flatten()?;
        Some(self.out.def(Ty::Ptr, format_args!("load ptr, ptr {slot}")))
    }

    /// The pointer shadow of a register operand, if it has one.
    pub fn operand_shadow(&mut self, op: &Operand) -> Option<V> {
        match *op {
            Operand::Reg(r) => self.shadow(r),
            _ => None,
        }
    }

    /// Whether a destination operand keeps a pointer shadow.
    pub fn has_shadow(&self, op: &Operand) -> bool {
        matches!(*op, Operand::Reg(r) if self.shadows.get(r as usize).is_some_and(|s| s.is_some()))
    }

    /// Defines, once per module, the internal noinline function `name`
    /// (`params`: its parameter list, `ret` its return type) whose body
    /// `body` writes through `self.out` as lowering code writes any other
    /// (the function's own allocas and labels; `body` ends it with its
    /// `ret`). Lowering emits the same code as a call instead of inline
    /// where many sites would repeat it (warp mode's fast-tier accesses,
    /// thread mode's `mma` products).
    pub(crate) fn define_helper(&mut self, name: &str, ret: &str, params: &str, body: impl FnOnce(&mut Self)) {
        self.define_function(name, ret, params, "noinline nounwind", body);
    }

    /// [`Self::define_helper`] for a pure function of its operands that
    /// the optimised pipeline may inline (the fast one has no inliner, so
    /// its code calls it).
    pub(crate) fn define_pure_helper(&mut self, name: &str, ret: &str, params: &str, body: impl FnOnce(&mut Self)) {
        self.define_function(name, ret, params, "nounwind willreturn memory(none)", body);
    }

    fn define_function(&mut self, name: &str, ret: &str, params: &str, attrs: &str, body: impl FnOnce(&mut Self)) {
        if self.cx.helpers.contains_key(name) {
            return;
        }
        // The body's value names start again from the first: the memo of
        // the kernel's bitcasts, keyed by name, must neither answer in it
        // nor keep its entries.
        let saved = std::mem::take(&mut self.out);
        let casts = std::mem::take(&mut self.bitcasts);
        body(self);
        self.bitcasts = casts;
        let done = std::mem::replace(&mut self.out, saved);
        let text = format!("define internal {ret} @{name}({params}) {attrs} {{\nentry:\n{}{}}}\n", done.allocas, done.text);
        self.cx.helper(name, || text);
    }

    pub fn store_reg(&mut self, r: RegId, v: V) {
        self.forget_flushes(r);
        if let Some(w) = self.warp.as_mut() {
            w.forget_shapes(r);
        }
        if let Some(offset) = self.warp.as_ref().and_then(|w| w.resident_slot(r)) {
            let q = self.frame_ptr(offset);
            self.out.op(format_args!("store {v}, ptr {q}, align 64"));
            self.store_resident_shapes(r, &v);
            return;
        }
        let p = self.regs[r as usize].clone();
        self.out.op(format_args!("store {v}, ptr {p}"));
    }

    /// Converts `v` to `to`: same-width bitcasts, integer truncation or
    /// extension (sign extension when `signed`).
    pub fn convert(&mut self, v: V, to: Ty, signed: bool) -> V {
        let v = self.vec(v);
        if v.ty == to {
            return v;
        }
        let mut v = v;
        if v.ty == Ty::Ptr {
            v = self.out.def(Ty::I64, format_args!("ptrtoint {v} to {}", Ty::I64));
            if to == Ty::I64 {
                return v;
            }
        }
        if v.ty.is_float() {
            let it = v.ty.as_int();
            v = self.cast_bits(&v, it);
        }
        let target_int = to.as_int();
        if v.ty != target_int {
            if to == Ty::Ptr {
                // handled below
            }
            let op = if v.ty.bits() > target_int.bits() {
                "trunc"
            } else if signed {
                "sext"
            } else {
                "zext"
            };
            if v.ty == Ty::I1 && target_int != Ty::I1 {
                v = self.out.def(target_int, format_args!("zext {v} to {target_int}"));
            } else if target_int == Ty::I1 {
                v = self.out.def(Ty::I1, format_args!("trunc {v} to {}", Ty::I1));
            } else {
                v = self.out.def(target_int, format_args!("{op} {v} to {target_int}"));
            }
        }
        if to.is_float() {
            v = self.cast_bits(&v, to);
        } else if to == Ty::Ptr {
            v = self.out.def(Ty::Ptr, format_args!("inttoptr {v} to {}", Ty::Ptr));
        }
        v
    }

    /// Reads an operand as a value of type `ty`.
    pub fn get(&mut self, op: &Operand, ty: Ty) -> Res<V> {
        self.get_ext(op, ty, false)
    }

    /// Reads an operand; a narrower register is sign-extended when `signed`.
    pub fn get_ext(&mut self, op: &Operand, ty: Ty, signed: bool) -> Res<V> {
        match *op {
            Operand::Reg(r) => {
                let v = self.load_reg(r);
                Ok(self.convert(v, ty, signed))
            }
            Operand::NotReg(r) => {
                let v = self.load_reg(r);
                let v = self.convert(v, Ty::I1, false);
                let n = self.bin("xor", &v, &V::int(Ty::I1, 1));
                Ok(self.convert(n, ty, false))
            }
            Operand::Imm(i) => Ok(self.imm(i, ty)),
            Operand::F32(bits) => Ok(match ty {
                Ty::Float => V::f32(bits),
                Ty::Double => V::f64((f32::from_bits(bits) as f64).to_bits()),
                Ty::Half => V::half(crate::softfloat::f64_to_small(
                    (f32::from_bits(bits) as f64).to_bits(),
                    crate::softfloat::HALF,
                    crate::softfloat::Mode::Rn,
                ) as u16),
                Ty::Bfloat => V::bfloat(crate::softfloat::f64_to_small(
                    (f32::from_bits(bits) as f64).to_bits(),
                    crate::softfloat::BF16,
                    crate::softfloat::Mode::Rn,
                ) as u16),
                t => V::int(t, bits as i128),
            }),
            Operand::F64(bits) => Ok(match ty {
                Ty::Double => V::f64(bits),
                Ty::Float => V::f32((f64::from_bits(bits) as f32).to_bits()),
                Ty::Half => V::half(crate::softfloat::f64_to_small(bits, crate::softfloat::HALF, crate::softfloat::Mode::Rn) as u16),
                Ty::Bfloat => V::bfloat(crate::softfloat::f64_to_small(bits, crate::softfloat::BF16, crate::softfloat::Mode::Rn) as u16),
                t => V::int(t, bits as i128),
            }),
            Operand::Special(s, c) => {
                let v = self.special(s, c)?;
                Ok(self.convert(v, ty, false))
            }
            Operand::Var(v) => {
                let a = self.var_address_value(v)?;
                Ok(self.convert(a, ty, false))
            }
            Operand::Global(s) => {
                let a = self.symbol_address_value(s)?;
                Ok(self.convert(a, ty, false))
            }
            // `sym+off` and `var+off` as values: the address plus the offset.
            Operand::GlobalOffset(s, off) => {
                let a = self.symbol_address_value(s)?;
                let a = self.convert(a, Ty::I64, false);
                let a = self.bin("add", &a, &V::int(Ty::I64, off as i128));
                Ok(self.convert(a, ty, false))
            }
            Operand::VarOffset(v, off) => {
                let a = self.var_address_value(v)?;
                let a = self.convert(a, Ty::I64, false);
                let a = self.bin("add", &a, &V::int(Ty::I64, off as i128));
                Ok(self.convert(a, ty, false))
            }
            Operand::Vector(l) => {
                // `{a, b}` as one wide value: elements packed low to high.
                let elems = self.b.list(l);
                let n = elems.len() as u32;
                if n == 0 || !ty.bits().is_multiple_of(n) {
                    return self.invalid("vector operand does not match the instruction type");
                }
                let ebits = ty.bits() / n;
                let wide = Ty::int(ty.bits());
                let mut acc = V::int(wide, 0);
                for (k, e) in elems.iter().enumerate() {
                    let v = self.get(e, Ty::int(ebits))?;
                    let z = self.out.def(wide, format_args!("zext {v} to {wide}"));
                    let sh = self.bin("shl", &z, &V::int(wide, (ebits as usize * k) as i128));
                    acc = self.bin("or", &acc, &sh);
                }
                Ok(self.convert(acc, ty, false))
            }
            _ => self.invalid("unexpected operand form"),
        }
    }

    pub fn imm(&mut self, i: i64, ty: Ty) -> V {
        match ty {
            Ty::Float => V::f32((i as f32).to_bits()),
            Ty::Double => V::f64((i as f64).to_bits()),
            Ty::Half => {
                V::half(crate::softfloat::f64_to_small((i as f64).to_bits(), crate::softfloat::HALF, crate::softfloat::Mode::Rn) as u16)
            }
            Ty::Bfloat => {
                V::bfloat(crate::softfloat::f64_to_small((i as f64).to_bits(), crate::softfloat::BF16, crate::softfloat::Mode::Rn) as u16)
            }
            Ty::Ptr => V::new(Ty::Ptr, if i == 0 { "null".to_string() } else { format!("inttoptr (i64 {i} to ptr)") }),
            t => V::int(t, i as i128),
        }
    }

    /// Writes `v` to a destination operand, converting to the register's type.
    pub fn set(&mut self, op: &Operand, v: V) -> Res<()> {
        self.set_ext(op, v, false)
    }

    pub fn set_ext(&mut self, op: &Operand, v: V, signed: bool) -> Res<()> {
        match *op {
            Operand::Reg(r) if self.uniform_reg(r) => {
                let ty = self.reg_tys[r as usize];
                let v = self.convert(v, ty, signed);
                let mask = self.warp.as_ref().map(|w| w.mask.clone()).unwrap_or_else(|| V::int(Ty::I1, 1));
                self.store_uniform_reg(r, v, &mask);
                Ok(())
            }
            Operand::Reg(r) => {
                let ty = self.reg_tys[r as usize];
                let v = self.convert(v, ty, signed);
                // Unguarded writes of registers local to their block, and
                // all unguarded writes in convergent blocks, reach every
                // lane that can read the register again: no select.
                let masked = self
                    .warp
                    .as_ref()
                    .filter(|w| w.guarded || !(w.block_local.get(r as usize).copied().unwrap_or(false) || w.block_convergent()));
                let mask = masked.map(|w| w.mask.clone());
                if self.warp.is_some() {
                    self.affine_written(r, mask.as_ref());
                }
                let v = match mask {
                    // Only the executing lanes change their registers
                    // (unless no lane can need the old value).
                    Some(mask) => {
                        let old = self.load_reg(r);
                        self.out.def(ty, format_args!("select {mask}, {v}, {old}"))
                    }
                    None => v,
                };
                if let Some(Some(shadow)) = self.shadows.get(r as usize).cloned() {
                    let p = match self.next_shadow.take() {
                        Some(p) => p,
                        None => self.out.def(Ty::Ptr, format_args!("inttoptr {v} to ptr")),
                    };
                    self.out.op(format_args!("store {p}, ptr {shadow}"));
                }
                self.store_reg(r, v);
                Ok(())
            }
            Operand::Sink => Ok(()),
            Operand::Vector(l) => {
                // `{a, b}` as the halves of one wide value.
                let elems: Vec<Operand> = self.b.list(l).to_vec();
                let n = elems.len() as u32;
                let wide = v.ty.as_int();
                if n == 0 || !wide.bits().is_multiple_of(n) {
                    return self.invalid("vector operand does not match the instruction type");
                }
                let ebits = wide.bits() / n;
                let w = self.convert(v, wide, false);
                for (k, e) in elems.iter().enumerate() {
                    let sh = self.bin("lshr", &w, &V::int(wide, (ebits as usize * k) as i128));
                    let part = self.trunc(&sh, Ty::int(ebits));
                    self.set(e, part)?;
                }
                Ok(())
            }
            _ => self.invalid("destination must be a register"),
        }
    }

    /// A field of the block context: uniform, a scalar in every mode.
    pub fn ctx_field(&mut self, offset: usize, ty: Ty) -> V {
        let p = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr %ctx, i64 {offset}"));
        self.out.def_scalar(ty, format_args!("load {}, {p}, align 4", ty.name()))
    }

    /// In warp mode, a scalar (uniform) value broadcast to every lane;
    /// anything else unchanged.
    pub fn vec(&mut self, v: V) -> V {
        let n = ir::lanes();
        if n == 1 || v.lanes == n {
            return v;
        }
        let t = v.ty.name();
        let i = self.out.def(v.ty, format_args!("insertelement <{n} x {t}> poison, {t} {}, i32 0", v.s));
        self.out.def(v.ty, format_args!("shufflevector <{n} x {t}> {}, <{n} x {t}> poison, <{n} x i32> zeroinitializer", i.s))
    }

    fn special(&mut self, s: SpecialReg, c: u8) -> Res<V> {
        use SpecialReg::*;
        if self.warp.is_some() {
            if let Some(v) = self.warp_special(s, c) {
                return Ok(v);
            }
        }
        let c = c as usize;
        Ok(match s {
            Tid => V::new(Ty::I32, ["%tid.x", "%tid.y", "%tid.z"][c]),
            Ntid => match c {
                0 => V::scalar(Ty::I32, "%ntid.x"),
                1 => V::scalar(Ty::I32, "%ntid.y"),
                _ => self.ctx_field(offsets::NTID + 8, Ty::I32),
            },
            Ctaid => self.ctx_field(offsets::CTAID + 4 * c, Ty::I32),
            Nctaid => self.ctx_field(offsets::NCTAID + 4 * c, Ty::I32),
            Laneid => self.out.def(Ty::I32, format_args!("and i32 %lin, 31")),
            Warpid => self.out.def(Ty::I32, format_args!("lshr i32 %lin, 5")),
            Nwarpid => {
                let n = self.ctx_field(offsets::NTHREADS, Ty::I32);
                let a = self.out.def_scalar(Ty::I32, format_args!("add {n}, 31"));
                self.out.def_scalar(Ty::I32, format_args!("lshr {a}, 5"))
            }
            LanemaskEq | LanemaskLe | LanemaskLt | LanemaskGe | LanemaskGt => {
                let lane = self.out.def(Ty::I32, format_args!("and i32 %lin, 31"));
                let bit = self.out.def(Ty::I32, format_args!("shl i32 1, {}", lane.s));
                match s {
                    LanemaskEq => bit,
                    LanemaskLt => self.out.def(Ty::I32, format_args!("sub {bit}, 1")),
                    LanemaskLe => {
                        let lt = self.out.def(Ty::I32, format_args!("sub {bit}, 1"));
                        self.out.def(Ty::I32, format_args!("or {lt}, {}", bit.s))
                    }
                    LanemaskGe => self.out.def(Ty::I32, format_args!("sub i32 0, {}", bit.s)),
                    _ => {
                        let ge = self.out.def(Ty::I32, format_args!("sub i32 0, {}", bit.s));
                        self.out.def(Ty::I32, format_args!("xor {ge}, {}", bit.s))
                    }
                }
            }
            Smid => self.ctx_field(offsets::SMID, Ty::I32),
            Nsmid => self.ctx_field(offsets::NSMID, Ty::I32),
            Gridid => self.ctx_field(offsets::GRIDID, Ty::I64),
            Envreg(n) => self.ctx_field(offsets::ENVREG + 4 * n as usize, Ty::I32),
            DynamicSmemSize => self.ctx_field(offsets::DYNAMIC_SHARED_BYTES, Ty::I32),
            TotalSmemSize | AggrSmemSize => self.ctx_field(offsets::SHARED_BYTES, Ty::I32),
            Clock | ClockHi | Clock64 => {
                self.cx.declare_runtime(&crate::cpu_abi::runtime::CLOCK64);
                let t = self.out.def_scalar(Ty::I64, format_args!("call i64 @__anycuda_clock64(ptr %ctx)"));
                match s {
                    Clock => self.out.def_scalar(Ty::I32, format_args!("trunc {t} to i32")),
                    ClockHi => {
                        let h = self.out.def_scalar(Ty::I64, format_args!("lshr {t}, 32"));
                        self.out.def_scalar(Ty::I32, format_args!("trunc {h} to i32"))
                    }
                    _ => t,
                }
            }
            Globaltimer | GlobaltimerLo | GlobaltimerHi => {
                self.cx.declare_runtime(&crate::cpu_abi::runtime::GLOBALTIMER);
                let t = self.out.def_scalar(Ty::I64, format_args!("call i64 @__anycuda_globaltimer(ptr %ctx)"));
                match s {
                    GlobaltimerLo => self.out.def_scalar(Ty::I32, format_args!("trunc {t} to i32")),
                    GlobaltimerHi => {
                        let h = self.out.def_scalar(Ty::I64, format_args!("lshr {t}, 32"));
                        self.out.def_scalar(Ty::I32, format_args!("trunc {h} to i32"))
                    }
                    _ => t,
                }
            }
            // A single block is a cluster of one on the CPU.
            IsExplicitCluster => V::int(Ty::I32, 0),
            ClusterCtarank => V::int(Ty::I32, 0),
            ClusterNctarank => V::int(Ty::I32, 1),
            ClusterCtaid => V::int(Ty::I32, 0),
            ClusterNctaid => V::int(Ty::I32, 1),
            Clusterid => self.ctx_field(offsets::CTAID + 4 * c, Ty::I32),
            Nclusterid => self.ctx_field(offsets::NCTAID + 4 * c, Ty::I32),
            Pm(_) | Pm64(_) => V::int(Ty::I64, 0),
            CurrentGraphExec => V::int(Ty::I64, 0),
            ReservedSmemOffsetBegin | ReservedSmemOffsetEnd | ReservedSmemOffsetCap | ReservedSmemOffset0 | ReservedSmemOffset1 => {
                V::int(Ty::I32, 0)
            }
        })
    }

    // ---- addresses -------------------------------------------------------------

    /// The address of a function variable as a value in its own space
    /// (a real address for local/param, an offset for shared).
    pub fn var_address_value(&mut self, v: VarId) -> Res<V> {
        match self.vars.get(&v).cloned() {
            Some(VarLoc::Ptr(p)) => Ok(V::scalar(Ty::Ptr, p)),
            Some(VarLoc::Local(p)) => {
                if self.warp.is_some() {
                    return self.warp_local_address(&p, v);
                }
                let a = self.out.def(Ty::I64, format_args!("ptrtoint ptr {p} to i64"));
                Ok(self.out.def(Ty::I64, format_args!("sub {a}, %lbase")))
            }
            Some(VarLoc::Shared(o)) => Ok(V::scalar(Ty::I64, o.to_string())),
            Some(VarLoc::DynShared) => {
                let o = self.ctx_field(offsets::DYNAMIC_SHARED_OFFSET, Ty::I32);
                Ok(self.out.def_scalar(Ty::I64, format_args!("zext {o} to i64")))
            }
            None => self.invalid(format!("`{}` is not addressable", self.f.var(v).name)),
        }
    }

    /// The address of a module symbol in its own space: a real address for
    /// globals and functions, a window offset for shared variables.
    pub fn symbol_address_value(&mut self, s: SymbolId) -> Res<V> {
        let sym = *self.cx.m.symbol(s);
        match sym.kind {
            SymbolKind::Function => {
                let f = self.cx.m.function(s);
                if f.is_some_and(|f| f.body.is_none()) {
                    return self.unsupported(format!("the address of external function `{}`", sym.name));
                }
                if f.is_some_and(|f| f.kind == FunctionKind::Entry) {
                    // A kernel's address identifies it (device-side launches
                    // pass it to the device runtime, which finds the kernel
                    // by it); its thread function stands for it.
                    return Ok(V::scalar(Ty::Ptr, global_name(&KernelSymbols::thread(sym.name))));
                }
                Ok(V::scalar(Ty::Ptr, global_name(&func_symbol(sym.name))))
            }
            SymbolKind::Variable => {
                let Some(v) = self.cx.m.variable(s) else {
                    return self.invalid(format!("`{}` is not a variable", sym.name));
                };
                match v.decl.space {
                    StateSpace::Global | StateSpace::Const => self.variable_address(s),
                    StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster => {
                        if is_dynamic_shared(&v.decl) {
                            let o = self.ctx_field(offsets::DYNAMIC_SHARED_OFFSET, Ty::I32);
                            return Ok(self.out.def_scalar(Ty::I64, format_args!("zext {o} to i64")));
                        }
                        let off = self.cx.a.kernel_shared.get(&(self.item, s)).or_else(|| self.cx.a.common_shared.get(&s)).copied();
                        match off {
                            Some(o) => Ok(V::scalar(Ty::I64, o.to_string())),
                            None => self.invalid(format!("shared variable `{}` has no layout", sym.name)),
                        }
                    }
                    other => self.unsupported(format!("a module variable in `.{other}`")),
                }
            }
        }
    }

    /// The address of a `.global`/`.const` module variable: its symbol,
    /// or, in a kernel's unit where units cannot link (its variables are
    /// the shared unit's), its entry of the variable table
    /// (`BlockCtx::variables`, constant memory: loads of it may be
    /// combined across stores).
    fn variable_address(&mut self, s: SymbolId) -> Res<V> {
        let name = self.cx.m.symbol(s).name;
        if self.cx.facts.links_units || !matches!(self.cx.unit, crate::Unit::Kernel(_)) {
            return Ok(V::scalar(Ty::Ptr, global_name(&KernelSymbols::global(name))));
        }
        let Some(index) = layout::table_variables(self.cx.m).position(|v| v.symbol == s) else {
            return self.invalid(format!("variable `{name}` is not in the module's variable table"));
        };
        let table = self.ctx_field(offsets::VARIABLES, Ty::I64);
        let table = self.out.def_scalar(Ty::Ptr, format_args!("inttoptr {table} to ptr addrspace(4)"));
        let entry = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr addrspace(4) {}, i64 {}", table.s, index * 8));
        Ok(self.out.def_scalar(Ty::Ptr, format_args!("load ptr, ptr addrspace(4) {}, align 8", entry.s)))
    }

    /// The shared window's base pointer.
    pub fn shared_base(&mut self) -> V {
        let p = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i8, ptr %ctx, i64 {}", offsets::SHARED));
        self.out.def_scalar(Ty::Ptr, format_args!("load ptr, {p}, align 8"))
    }

    /// A pointer for an address operand accessed in `space` (None = generic).
    pub fn address(&mut self, op: &Operand, space: Option<StateSpace>) -> Res<V> {
        let Some((base, off)) = op.address() else {
            return self.invalid("expected an address `[...]`");
        };
        let shared = matches!(space, Some(StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster));
        let local = space == Some(StateSpace::Local);
        if let AddrBase::Var(v) = base {
            if let Some(VarLoc::Local(p)) = self.vars.get(&v).cloned() {
                return Ok(if off == 0 {
                    V::new(Ty::Ptr, p)
                } else {
                    self.out.def(Ty::Ptr, format_args!("getelementptr i8, ptr {p}, i64 {off}"))
                });
            }
        }
        let value: V = match base {
            AddrBase::Reg(r) if local => {
                let v = self.load_reg(r);
                let v64 = self.convert(v, Ty::I64, false);
                let o = self.out.def(Ty::I64, format_args!("add {v64}, {off}"));
                let a = self.out.def(Ty::I64, format_args!("add {o}, %lbase"));
                return Ok(self.out.def(Ty::Ptr, format_args!("inttoptr {a} to ptr")));
            }
            AddrBase::None if local => {
                let a = self.out.def(Ty::I64, format_args!("add i64 %lbase, {off}"));
                return Ok(self.out.def(Ty::Ptr, format_args!("inttoptr {a} to ptr")));
            }
            AddrBase::Reg(r) if !shared && self.has_shadow(&Operand::Reg(r)) => {
                let p = self.shadow(r).unwrap_or_else(V::null_ptr);
                if off == 0 {
                    return Ok(p);
                }
                return Ok(self.out.def(Ty::Ptr, format_args!("getelementptr i8, {p}, i64 {off}")));
            }
            AddrBase::Reg(r) => {
                let v = self.load_reg(r);
                let v = if v.ty == Ty::I64 || v.ty == Ty::I32 { v } else { self.convert(v, Ty::I64, false) };
                if shared {
                    let v64 = self.convert(v, Ty::I64, false);
                    let o = self.out.def(Ty::I64, format_args!("add {v64}, {off}"));
                    let base = self.shared_base();
                    return Ok(self.out.def(Ty::Ptr, format_args!("getelementptr i8, {base}, {o}")));
                }
                let v64 = self.convert(v, Ty::I64, false);
                let a = self.out.def(Ty::I64, format_args!("add {v64}, {off}"));
                return Ok(self.out.def(Ty::Ptr, format_args!("inttoptr {a} to ptr")));
            }
            AddrBase::Var(v) => self.var_address_value(v)?,
            AddrBase::Global(s) => self.symbol_address_value(s)?,
            AddrBase::None => {
                if shared {
                    let base = self.shared_base();
                    return Ok(self.out.def(Ty::Ptr, format_args!("getelementptr i8, {base}, i64 {off}")));
                }
                return Ok(self.out.def(Ty::Ptr, format_args!("inttoptr i64 {off} to ptr")));
            }
        };
        if value.ty == Ty::Ptr {
            if off == 0 {
                return Ok(value);
            }
            return Ok(self.out.def(Ty::Ptr, format_args!("getelementptr i8, {value}, i64 {off}")));
        }
        // A shared-window offset.
        let o = self.out.def(Ty::I64, format_args!("add {value}, {off}"));
        if shared || space.is_none() || matches!(space, Some(StateSpace::Shared)) {
            let base = self.shared_base();
            return Ok(self.out.def(Ty::Ptr, format_args!("getelementptr i8, {base}, {o}")));
        }
        Ok(self.out.def(Ty::Ptr, format_args!("inttoptr {o} to ptr")))
    }

    // ---- control flow -------------------------------------------------------------

    fn branch_target(&mut self, inst: &Instruction) -> Res<String> {
        match self.b.args(inst).first() {
            Some(Operand::Label(l)) => Ok(self.labels[*l as usize].clone()),
            _ => self.unsupported("an indirect branch through a register"),
        }
    }

    /// Lets other threads of the block run at the back edge of a loop that
    /// may be waiting for them.
    fn maybe_yield(&mut self, _inst: &Instruction) -> Res<()> {
        let spins = self.cx.a.facts.get(&self.item).is_some_and(|f| f.yield_points.contains(&self.stmt));
        if spins {
            self.cx.declare_runtime(&crate::cpu_abi::runtime::YIELD);
            self.out.op(format_args!("call void @__anycuda_yield(ptr %ctx, i32 %lin)"));
        }
        Ok(())
    }

    fn runtime_noreturn(&mut self, f: &crate::cpu_abi::RuntimeFn, args: &str) {
        self.cx.declare_runtime(f);
        self.out.op(format_args!("call {} @{}({args})", f.ret.llvm(), f.name));
        self.out.terminate(format_args!("unreachable"));
    }

    fn brx(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let idx = self.get(&args[0], Ty::I32)?;
        let Operand::Label(table) = args[1] else {
            return self.invalid("brx.idx needs a `.branchtargets` label");
        };
        let targets = self.b.statements.iter().find_map(|s| match s {
            Statement::BranchTargets { label, targets } if *label == table => Some(*targets),
            _ => None,
        });
        let Some(targets) = targets else {
            return self.invalid("brx.idx label is not a `.branchtargets` list");
        };
        let bad = self.out.fresh_label("brxbad");
        let mut cases = String::new();
        for (k, t) in self.b.list(targets).iter().enumerate() {
            if let Operand::Label(l) = t {
                let _ = write!(cases, " i32 {k}, label %{}", self.labels[*l as usize]);
            }
        }
        self.out.terminate(format_args!("switch {idx}, label %{bad} [{cases} ]"));
        self.out.label(&bad);
        let place = self.source_place();
        self.runtime_noreturn(&crate::cpu_abi::runtime::TRAP, &format!("ptr %ctx, i32 %lin, ptr {place}"));
        Ok(())
    }

    fn alloca_inst(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let size = self.get(&args[1], Ty::I64)?;
        let p = self.out.def(Ty::Ptr, format_args!("alloca i8, {size}, align 16"));
        self.set(&args[0], p)
    }

    fn call(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let mut lists = Vec::new();
        let mut callee = None;
        for a in args {
            match a {
                Operand::Paren(l) => lists.push((*l, callee.is_some())),
                other if callee.is_none() => callee = Some(*other),
                _ => {}
            }
        }
        let Some(callee) = callee else {
            return self.invalid("call without a target");
        };
        let rets: Vec<Operand> = lists.iter().find(|(_, after)| !after).map(|(l, _)| self.b.list(*l).to_vec()).unwrap_or_default();
        let params: Vec<Operand> = lists.iter().find(|(_, after)| *after).map(|(l, _)| self.b.list(*l).to_vec()).unwrap_or_default();

        // Builtins provided by the runtime.
        if let Operand::Global(s) = callee {
            let sym = *self.cx.m.symbol(s);
            let defined = self.cx.m.function(s).is_some_and(|f| f.body.is_some());
            if !defined {
                return self.builtin_call(sym.name, &rets, &params);
            }
        }
        let target_fn: Option<&Function> = match callee {
            Operand::Global(s) => self.cx.m.function(s),
            _ => None,
        };
        let mut call_args = String::from("ptr %ctx, i32 %tid.x, i32 %tid.y, i32 %tid.z, i64 %lbase");
        let mut writebacks = Vec::new();
        for (k, r) in rets.iter().enumerate() {
            let decl_size = target_fn.and_then(|f| f.returns.get(k).map(|&v| f.var(v)));
            let p = self.param_pointer(r, decl_size, &mut writebacks)?;
            let _ = write!(call_args, ", ptr {p}");
        }
        for (k, a) in params.iter().enumerate() {
            let decl = target_fn.and_then(|f| f.params.get(k).map(|&v| f.var(v)));
            let p = self.param_pointer(a, decl, &mut Vec::new())?;
            let _ = write!(call_args, ", ptr {p}");
        }
        match callee {
            Operand::Global(s) => {
                let name = global_name(&func_symbol(self.cx.m.symbol(s).name));
                if let Some(f) = target_fn {
                    if f.returns.len() != rets.len() || f.params.len() != params.len() {
                        return self.invalid(format!(
                            "call of `{}` with {} results and {} arguments; it has {} and {}",
                            f.name,
                            rets.len(),
                            params.len(),
                            f.returns.len(),
                            f.params.len()
                        ));
                    }
                }
                self.out.op(format_args!("call void {name}({call_args})"));
            }
            Operand::Reg(_) => {
                let fp = self.get(&callee, Ty::Ptr)?;
                self.out.op(format_args!("call void {}({call_args})", fp.s));
            }
            _ => return self.invalid("call target must be a function or a register"),
        }
        if self.cx.facts.exit_returns {
            let callee_item = match callee {
                Operand::Global(s) => Some(self.cx.m.symbol(s).item),
                _ => None,
            };
            if self.cx.a.call_may_exit(callee_item) {
                // The callee's `exit` returned with the flag set: this
                // thread ends here too.
                let flag = self.out.def(Ty::Ptr, format_args!("getelementptr i8, ptr %ctx, i64 {}", crate::cpu_abi::offsets::EXITED));
                let exited = self.out.def(Ty::I32, format_args!("load i32, {flag}, align 4"));
                let stop = self.out.def(Ty::I1, format_args!("icmp ne {exited}, 0"));
                let go_on = self.out.fresh_label("called");
                self.out.terminate(format_args!("br {stop}, label %{}, label %{go_on}", self.exit_label.clone()));
                self.out.label(&go_on);
            }
        }
        for (op, ptr, ty) in writebacks {
            let v = self.out.def(ty, format_args!("load {ty}, ptr {ptr}"));
            self.set(&op, v)?;
        }
        Ok(())
    }

    /// A pointer to pass for a call argument or result: a `.param`
    /// variable's storage, or a temporary holding a register or immediate.
    fn param_pointer(&mut self, op: &Operand, decl: Option<&VarDecl>, writeback: &mut Vec<(Operand, String, Ty)>) -> Res<String> {
        match *op {
            Operand::Var(v) => match self.vars.get(&v).cloned() {
                Some(VarLoc::Ptr(p)) | Some(VarLoc::Local(p)) => Ok(p),
                _ => self.invalid("call arguments must be `.param` variables, registers or constants"),
            },
            _ => {
                let ty = match (decl, op) {
                    (Some(d), _) => reg_ty(d.ty),
                    (None, Operand::Reg(r)) => self.reg_tys[*r as usize],
                    _ => Ty::I64,
                };
                let a = self.out.alloca(ty.name(), 8);
                if matches!(op, Operand::Reg(_) | Operand::Imm(_) | Operand::F32(_) | Operand::F64(_)) {
                    let v = self.get(op, ty)?;
                    self.out.op(format_args!("store {v}, ptr {a}"));
                }
                if matches!(op, Operand::Reg(_)) {
                    writeback.push((*op, a.clone(), ty));
                }
                Ok(a)
            }
        }
    }

    /// Reads a call's `.param` argument `k` as `ty`.
    pub(crate) fn param_arg(&mut self, params: &[Operand], k: usize, ty: Ty) -> Res<V> {
        let Some(op) = params.get(k) else {
            return self.invalid("missing call argument");
        };
        match *op {
            Operand::Var(v) => match self.vars.get(&v).cloned() {
                Some(VarLoc::Ptr(p)) => Ok(self.out.def(ty, format_args!("load {ty}, ptr {p}, align 1"))),
                _ => self.invalid("call arguments must be `.param` variables"),
            },
            other => self.get(&other, ty),
        }
    }

    pub(crate) fn param_result(&mut self, rets: &[Operand], v: V) -> Res<()> {
        let Some(op) = rets.first() else { return Ok(()) };
        match *op {
            Operand::Var(var) => match self.vars.get(&var).cloned() {
                Some(VarLoc::Ptr(p)) => {
                    self.out.op(format_args!("store {v}, ptr {p}, align 1"));
                    Ok(())
                }
                _ => self.invalid("call results must be `.param` variables"),
            },
            other => self.set(&other, v),
        }
    }

    fn builtin_call(&mut self, name: &str, rets: &[Operand], params: &[Operand]) -> Res<()> {
        match name {
            "vprintf" => {
                let fmt = self.param_arg(params, 0, Ty::Ptr)?;
                let buf = self.param_arg(params, 1, Ty::Ptr)?;
                let format = params.first().and_then(|p| crate::printf::constant_string(self.cx.m, self.b, self.stmt, p));
                let layout = match format {
                    Some(format) => {
                        let l = crate::printf::layout(&format);
                        let mut table = vec![l.bytes, l.count, l.strings.len() as u32];
                        table.extend(&l.strings);
                        self.constant_table(&table)
                    }
                    None if self.cx.facts.printf_records => {
                        return self.unsupported(
                            "device printf with a format that is not a constant string: on this target the layout of printf's \
                             arguments must be known when the kernel is compiled",
                        )
                    }
                    None => "null".to_string(),
                };
                self.cx.declare_runtime(&crate::cpu_abi::runtime::VPRINTF);
                let r = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_vprintf(ptr %ctx, i32 %lin, {fmt}, {buf}, ptr {layout})"));
                self.param_result(rets, r)
            }
            "malloc" => {
                let size = self.param_arg(params, 0, Ty::I64)?;
                self.cx.declare_runtime(&crate::cpu_abi::runtime::MALLOC);
                let r = self.out.def(Ty::Ptr, format_args!("call ptr @__anycuda_malloc(ptr %ctx, {size})"));
                let r = self.convert(r, Ty::I64, false);
                self.param_result(rets, r)
            }
            "free" => {
                let p = self.param_arg(params, 0, Ty::Ptr)?;
                self.cx.declare_runtime(&crate::cpu_abi::runtime::FREE);
                self.out.op(format_args!("call void @__anycuda_free(ptr %ctx, {p})"));
                Ok(())
            }
            "__assertfail" => {
                let msg = self.param_arg(params, 0, Ty::Ptr)?;
                let file = self.param_arg(params, 1, Ty::Ptr)?;
                let line = self.param_arg(params, 2, Ty::I32)?;
                let func = self.param_arg(params, 3, Ty::Ptr)?;
                let cs = self.param_arg(params, 4, Ty::I64)?;
                self.cx.declare_runtime(&crate::cpu_abi::runtime::ASSERTFAIL);
                self.out.op(format_args!("call void @__anycuda_assertfail(ptr %ctx, i32 %lin, {msg}, {file}, {line}, {func}, {cs})"));
                self.out.terminate(format_args!("unreachable"));
                Ok(())
            }
            other if crate::devrt::DEVICE_SYNCHRONIZE.contains(&other) => self.unsupported(format!(
                "device-side `cudaDeviceSynchronize` (`{other}`): CUDA 12 removed it (dynamic parallelism 2 has no device-side wait for child grids)"
            )),
            other => match crate::cpu_abi::devrt::lookup(other) {
                Some(f) => self.device_runtime_call(f, rets, params),
                None => self.unsupported(format!("call to external function `{other}` (no definition in the module)")),
            },
        }
    }
}

/// Writes a modifier the way PTX spells it.
fn ptx_modifier(o: &mut String, m: &Modifier) -> std::fmt::Result {
    match m {
        Modifier::Type(t) => write!(o, ".{t}"),
        Modifier::Round(r) => write!(o, ".{r}"),
        Modifier::Space(s) => write!(o, ".{s}"),
        Modifier::Scope(s) => write!(o, ".{s}"),
        Modifier::Sem(s) => write!(o, ".{s}"),
        Modifier::Cache(c) => write!(o, ".{c}"),
        Modifier::Cmp(c) => write!(o, ".{c}"),
        Modifier::Vec(n) => write!(o, ".v{n}"),
        Modifier::Flag(f) => write!(o, ".{f}"),
        Modifier::Shape(s) if s.k == 0 => write!(o, ".m{}n{}", s.m, s.n),
        Modifier::Shape(s) => write!(o, ".m{}n{}k{}", s.m, s.n, s.k),
    }
}

/// 64-bit registers that may hold addresses: loaded 64-bit values,
/// converted addresses, symbol addresses, and sums or differences involving
/// one of those.
pub fn pointer_registers(b: &Body, tys: &[Ty]) -> Vec<bool> {
    let mut ptr = vec![false; tys.len()];
    let is64 = |r: RegId| tys.get(r as usize) == Some(&Ty::I64);
    let reg_ptr = |ptr: &[bool], o: &Operand| matches!(*o, Operand::Reg(r) if ptr.get(r as usize) == Some(&true));
    loop {
        let mut changed = false;
        for s in &b.statements {
            let Statement::Instruction(i) = s else { continue };
            let args = b.args(i);
            let Some(Operand::Reg(d)) = args.first().copied() else { continue };
            if !is64(d) || ptr[d as usize] {
                continue;
            }
            let yes = match i.op {
                Opcode::Ld | Opcode::Ldu => i.ty(b).is_some_and(|t| t.bits() == 64),
                Opcode::Cvta => true,
                Opcode::Mov => args.get(1).is_some_and(|a| matches!(a, Operand::Global(_) | Operand::Var(_)) || reg_ptr(&ptr, a)),
                Opcode::Add | Opcode::Sub => args[1..].iter().any(|a| reg_ptr(&ptr, a)),
                _ => false,
            };
            if yes {
                ptr[d as usize] = true;
                changed = true;
            }
        }
        if !changed {
            return ptr;
        }
    }
}

/// `define <n x R> @wrapper(<n x A>...)` applying the scalar `@name` to each lane.
fn vector_wrapper(name: &str, wrapper: &str, ret: Ty, params: &[Ty], n: u32) -> String {
    let vt = |t: Ty| format!("<{n} x {}>", t.name());
    let mut s = format!("define internal {} @\"{wrapper}\"(", vt(ret));
    let ps: Vec<String> = params.iter().enumerate().map(|(i, t)| format!("{} %a{i}", vt(*t))).collect();
    s.push_str(&ps.join(", "));
    s.push_str(") #0 {\nentry:\n");
    let mut acc = "poison".to_string();
    for lane in 0..n {
        let mut args = Vec::new();
        for (i, t) in params.iter().enumerate() {
            let _ = writeln!(s, "  %a{i}.{lane} = extractelement {} %a{i}, i32 {lane}", vt(*t));
            args.push(format!("{} %a{i}.{lane}", t.name()));
        }
        let _ = writeln!(s, "  %r.{lane} = call {} @{name}({})", ret.name(), args.join(", "));
        let _ = writeln!(s, "  %v.{lane} = insertelement {} {acc}, {} %r.{lane}, i32 {lane}", vt(ret), ret.name());
        acc = format!("%v.{lane}");
    }
    let _ = writeln!(s, "  ret {} {acc}\n}}", vt(ret));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_function_inlines_the_thread_function_at_the_first_call_only() {
        let text = warp_block_function("k", 16, 1024);
        let thread = global_name(&KernelSymbols::thread("k"));
        let calls: Vec<&str> = text.lines().filter(|l| l.contains(&format!("call i32 {thread}("))).collect();
        assert_eq!(calls.len(), 2, "a first call and a resume call:\n{text}");
        assert!(!calls[0].ends_with("noinline"), "the first call may be inlined: {}", calls[0]);
        assert!(calls[1].ends_with(") noinline"), "the resume call is not inlined: {}", calls[1]);
    }
}
