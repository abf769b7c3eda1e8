//! What can be known about a module without generating code: parameter
//! layouts, the shared-memory layout, the call graph, and which kernels need
//! cooperative thread scheduling.

use crate::{GlobalInfo, KernelInfo, ModuleInfo, ParamInfo};
use ptx::ast::*;
use std::collections::{HashMap, HashSet};

/// Item index of a function in `Module::items`.
pub type ItemId = u32;

pub fn align_up(v: u64, a: u64) -> u64 {
    let a = a.max(1);
    v.div_ceil(a) * a
}

/// Offsets and sizes of a function's parameters in a packed buffer, each
/// aligned to its declared (or natural) alignment.
pub fn param_layout(f: &Function, ids: &[VarId]) -> (Vec<ParamInfo>, u32) {
    let mut offset = 0u64;
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        let d = f.var(id);
        let align = d.alignment().max(1);
        let size = d.size().unwrap_or(0);
        offset = align_up(offset, align);
        out.push(ParamInfo { offset: offset as u32, size: size as u32, align: align as u32 });
        offset += size;
    }
    (out, offset as u32)
}

fn is_shared(space: StateSpace) -> bool {
    matches!(space, StateSpace::Shared | StateSpace::SharedCta | StateSpace::SharedCluster)
}

/// A `.shared` variable whose size is given by the launch.
pub fn is_dynamic_shared(d: &VarDecl) -> bool {
    is_shared(d.space) && (d.linkage == Some(Linkage::Extern) || d.elements().is_none())
}

/// Facts about each function body.
#[derive(Default, Debug, Clone)]
pub struct FunctionFacts {
    pub callees: HashSet<ItemId>,
    pub indirect_calls: bool,
    pub address_taken: HashSet<ItemId>,
    pub module_shared: HashSet<SymbolId>,
    /// Names a module variable other than a `.shared` one (`.global`,
    /// `.const`, texture and surface references): code that must be in
    /// the unit defining the variables where units cannot link.
    pub names_variables: bool,
    /// Contains a barrier or warp collective, `exit` in a called function,
    /// or a loop that may spin on memory.
    pub waits: bool,
    /// Contains `exit` and is not a kernel: its callers may have to stop
    /// after the call (`TargetFacts::exit_returns`).
    pub exits: bool,
    /// Statement indices of branches closing a loop that may spin.
    pub yield_points: HashSet<usize>,
    /// Statement indices of branches closing a grid-stride loop
    /// (`grid_stride_loop`), each with the iterations a warp runs before
    /// the block's other warps take their turn in warp mode
    /// (`warp::TURN_BYTES` loaded per lane, divided by what an iteration
    /// loads: an unrolled loop turns after fewer iterations).
    pub turn_points: HashMap<usize, u32>,
}

#[derive(Debug, Clone)]
pub struct Analysis {
    pub facts: HashMap<ItemId, FunctionFacts>,
    pub address_taken: HashSet<ItemId>,
    /// Offsets of module-level shared variables shared by several functions.
    pub common_shared: HashMap<SymbolId, u32>,
    pub common_bytes: u32,
    /// Offsets of `.shared` variables declared inside functions.
    pub local_shared: HashMap<(ItemId, VarId), u32>,
    /// Per kernel: offsets of module-level shared variables only it uses.
    pub kernel_shared: HashMap<(ItemId, SymbolId), u32>,
    pub kernel_static_bytes: HashMap<ItemId, u32>,
    pub dynamic_align: u32,
}

fn function_item(m: &Module, sym: SymbolId) -> Option<ItemId> {
    let s = m.symbols.get(sym as usize)?;
    (s.kind == SymbolKind::Function).then_some(s.item)
}

fn body_facts(m: &Module, item: ItemId, f: &Function, b: &Body) -> FunctionFacts {
    let mut facts = FunctionFacts::default();
    let is_kernel = f.kind == FunctionKind::Entry;
    let mut label_at: HashMap<LabelId, usize> = HashMap::new();
    for (i, s) in b.statements.iter().enumerate() {
        if let Statement::Label(l) = s {
            label_at.insert(*l, i);
        }
    }
    let note_operand = |facts: &mut FunctionFacts, op: &Operand, in_call_target: bool| {
        let sym = match *op {
            Operand::Global(s) | Operand::AddrGlobal(s, _) => s,
            _ => return,
        };
        match m.symbols.get(sym as usize).map(|s| s.kind) {
            Some(SymbolKind::Function) if !in_call_target => {
                if let Some(it) = function_item(m, sym) {
                    facts.address_taken.insert(it);
                }
            }
            Some(SymbolKind::Variable) => {
                if let Some(v) = m.variable(sym) {
                    if !is_shared(v.decl.space) {
                        facts.names_variables = true;
                    } else if !is_dynamic_shared(&v.decl) {
                        facts.module_shared.insert(sym);
                    }
                }
            }
            _ => {}
        }
    };
    for (i, s) in b.statements.iter().enumerate() {
        match s {
            Statement::CallTargets { targets, .. } => {
                for op in b.list(*targets) {
                    note_operand(&mut facts, op, false);
                }
            }
            Statement::Instruction(inst) => {
                let args = b.args(inst);
                match inst.op {
                    Opcode::Call => {
                        let callee_pos = args.iter().position(|a| !matches!(a, Operand::Paren(_)));
                        for (k, a) in args.iter().enumerate() {
                            match a {
                                Operand::Paren(l) => {
                                    for op in b.list(*l) {
                                        note_operand(&mut facts, op, false);
                                    }
                                }
                                Operand::Global(sym) if Some(k) == callee_pos => {
                                    if let Some(it) = function_item(m, *sym) {
                                        facts.callees.insert(it);
                                    }
                                }
                                Operand::Reg(_) if Some(k) == callee_pos => facts.indirect_calls = true,
                                _ => {}
                            }
                        }
                    }
                    Opcode::Bar | Opcode::Barrier => {
                        // `barrier.cluster` waits across blocks of a cluster, which are
                        // not co-scheduled on the CPU; it is rejected when lowered.
                        facts.waits = true;
                    }
                    Opcode::Shfl | Opcode::Vote | Opcode::Match | Opcode::Redux | Opcode::Activemask | Opcode::Elect => facts.waits = true,
                    // Matrix collectives exchange the lanes' fragments; mbarriers
                    // make threads wait for each other.
                    Opcode::Mma | Opcode::Ldmatrix | Opcode::Stmatrix | Opcode::Movmatrix | Opcode::Mbarrier => facts.waits = true,
                    Opcode::Wmma if inst.has(b, Flag::MmaOp) => facts.waits = true,
                    Opcode::Cp if inst.has(b, Flag::Mbarrier) => facts.waits = true,
                    Opcode::Exit if !is_kernel => {
                        facts.waits = true;
                        facts.exits = true;
                    }
                    Opcode::Bra => {
                        if let Some(Operand::Label(l)) = args.first() {
                            if let Some(&start) = label_at.get(l) {
                                if start <= i && loop_may_spin(b, &b.statements[start..=i]) {
                                    facts.waits = true;
                                    facts.yield_points.insert(i);
                                }
                            }
                        }
                    }
                    _ => {}
                }
                // Every instruction's symbols but a call's (its target and
                // arguments are noted above): barriers and matrix
                // collectives name shared tiles and variables too.
                if inst.op != Opcode::Call {
                    for a in args {
                        note_operand(&mut facts, a, false);
                        if let Operand::Vector(l) | Operand::Bracket(l) = a {
                            for op in b.list(*l) {
                                note_operand(&mut facts, op, false);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    {
        // Each register's writes, built once for the function's loops.
        let mut defs = None;
        for (i, s) in b.statements.iter().enumerate() {
            let Statement::Instruction(inst) = s else { continue };
            if inst.op != Opcode::Bra || facts.yield_points.contains(&i) {
                continue;
            }
            let Some(Operand::Label(l)) = b.args(inst).first() else { continue };
            if let Some(&start) = label_at.get(l) {
                if start <= i {
                    let defs = defs.get_or_insert_with(|| register_writes(b));
                    if let Some(bytes) = grid_stride_loop(b, &b.statements[start..=i], defs) {
                        facts.turn_points.insert(i, crate::warp::TURN_BYTES.div_ceil(bytes).max(1));
                    }
                }
            }
        }
    }
    let _ = item;
    facts
}

/// A grid-stride loop (`for (i = global id; i < n; i += gridDim.x *
/// blockDim.x)`): the loop (`stmts`, from its label to its backward
/// branch) loads from global or generic memory, adds a register whose
/// value is computed from `%nctaid` (through moves, conversions,
/// multiplications and shifts: the grid's width), and has no barrier,
/// sleep or call of its own. A warp's consecutive iterations read far apart
/// while the block's other warps read the bytes in between; on the CPU a
/// warp running its whole loop before the next starts leaves the hardware
/// prefetchers little to follow (`benches/access-order/grid_stride.c`:
/// `reduce`'s loads take 1.5 times as long as with warps taking turns
/// every 8 iterations). Returns the bytes a lane loads per iteration.
pub(crate) fn grid_stride_loop<'b>(b: &'b Body, stmts: &[Statement], defs: &HashMap<RegId, Vec<&'b Instruction>>) -> Option<u32> {
    let insts = || {
        stmts.iter().filter_map(|s| match s {
            Statement::Instruction(i) => Some(i),
            _ => None,
        })
    };
    // Atomics: a loop of them is bound by their work, not its loads; with
    // a turn point the suite's `histogram` (a privatised add per byte)
    // took 18.5-21.5 ms against 16.1-16.7, turning or not.
    let stops = |i: &Instruction| {
        matches!(
            i.op,
            Opcode::Bar | Opcode::Barrier | Opcode::Nanosleep | Opcode::Call | Opcode::Exit | Opcode::Ret | Opcode::Atom | Opcode::Red
        )
    };
    if insts().any(stops) {
        return None;
    }
    let bytes: u32 = insts()
        .filter(|i| matches!(i.op, Opcode::Ld | Opcode::Ldu) && matches!(i.space(b), None | Some(StateSpace::Global)))
        .map(|i| i.ty(b).map_or(4, |t| t.size()).max(1) * u32::from(i.vector(b).unwrap_or(1).max(1)))
        .sum();
    if bytes == 0 {
        return None;
    }
    fn from_grid(b: &Body, defs: &HashMap<RegId, Vec<&Instruction>>, r: RegId, depth: u32) -> bool {
        let Some(ds) = defs.get(&r) else { return false };
        if depth == 0 || ds.len() != 1 {
            return false;
        }
        let i = ds[0];
        if !matches!(i.op, Opcode::Mov | Opcode::Cvt | Opcode::Mul | Opcode::Mul24 | Opcode::Shl | Opcode::Mad | Opcode::Mad24) {
            return false;
        }
        b.args(i).iter().skip(1).any(|a| match *a {
            Operand::Special(SpecialReg::Nctaid, _) => true,
            Operand::Reg(s) => from_grid(b, defs, s, depth - 1),
            _ => false,
        })
    }
    // An unrolled loop steps through a chain of registers (`a = i + s; b
    // = a + s; i = b + s`): any add of such a step counts.
    let steps = insts().any(|i| {
        let args = b.args(i);
        i.op == Opcode::Add && args.len() == 3 && args[1..].iter().any(|a| matches!(*a, Operand::Reg(s) if from_grid(b, defs, s, 6)))
    });
    steps.then_some(bytes)
}

/// The instructions writing each register (as their first operand) in
/// the whole body: what `grid_stride_loop` follows back.
fn register_writes<'b>(b: &'b Body) -> HashMap<RegId, Vec<&'b Instruction>> {
    let mut defs: HashMap<RegId, Vec<&Instruction>> = HashMap::new();
    for s in &b.statements {
        if let Statement::Instruction(i) = s {
            if let Some(Operand::Reg(r)) = b.args(i).first() {
                defs.entry(*r).or_default().push(i);
            }
        }
    }
    defs
}

/// Registers an operand reads.
fn operand_regs(b: &Body, op: &Operand, out: &mut Vec<RegId>) {
    match *op {
        Operand::Reg(r) | Operand::NotReg(r) | Operand::RegComponent(r, _) | Operand::AddrReg(r, _) | Operand::Video { reg: r, .. } => {
            out.push(r)
        }
        Operand::PredPair(p, q) => out.extend([p, q]),
        Operand::Vector(l) | Operand::Paren(l) | Operand::Bracket(l) => {
            for o in b.list(l) {
                operand_regs(b, o, out);
            }
        }
        _ => {}
    }
}

/// A loop may be waiting for another thread when one of its conditional
/// branches depends on memory another thread may write concurrently: a
/// volatile, relaxed or acquire load, or an atomic's result (a spin lock,
/// a flag). Loops that merely use atomics (a histogram) do not wait.
fn loop_may_spin(b: &Body, stmts: &[Statement]) -> bool {
    let mut tainted: HashSet<RegId> = HashSet::new();
    let mut regs = Vec::new();
    // Twice over the body, for values carried around the loop.
    for _ in 0..2 {
        for s in stmts {
            let Statement::Instruction(i) = s else { continue };
            let args = b.args(i);
            let Some((dest, srcs)) = args.split_first() else { continue };
            let from_memory = match i.op {
                Opcode::Ld => {
                    matches!(i.semantics(b), Some(Semantics::Volatile | Semantics::Acquire | Semantics::Relaxed | Semantics::Mmio))
                }
                Opcode::Atom | Opcode::Mbarrier => true,
                _ => false,
            };
            regs.clear();
            for src in srcs {
                operand_regs(b, src, &mut regs);
            }
            let reads_tainted = regs.iter().any(|r| tainted.contains(r));
            if from_memory || reads_tainted {
                if let Operand::Reg(_) | Operand::PredPair(..) | Operand::Vector(_) = dest {
                    regs.clear();
                    operand_regs(b, dest, &mut regs);
                    tainted.extend(regs.iter().copied());
                }
            }
        }
    }
    stmts.iter().any(|s| match s {
        Statement::Instruction(i) => match i.op {
            Opcode::Bra => i.guard.is_some_and(|g| tainted.contains(&g.reg)),
            // A back-off sleep in a loop is a wait.
            Opcode::Nanosleep => true,
            _ => false,
        },
        _ => false,
    })
}

impl Analysis {
    pub fn new(m: &Module) -> Analysis {
        let mut facts = HashMap::new();
        let mut address_taken = HashSet::new();
        for (idx, item) in m.items.iter().enumerate() {
            match item {
                Item::Function(f) => {
                    if let Some(b) = &f.body {
                        let ff = body_facts(m, idx as ItemId, f, b);
                        address_taken.extend(ff.address_taken.iter().copied());
                        facts.insert(idx as ItemId, ff);
                    }
                }
                Item::Variable(v) => collect_init_functions(m, v.decl.init.as_ref(), &mut address_taken),
                _ => {}
            }
        }
        let mut a = Analysis {
            facts,
            address_taken,
            common_shared: HashMap::new(),
            common_bytes: 0,
            local_shared: HashMap::new(),
            kernel_shared: HashMap::new(),
            kernel_static_bytes: HashMap::new(),
            dynamic_align: 16,
        };
        a.layout_shared(m);
        a
    }

    /// Functions reachable from `root` (including itself).
    pub fn reachable(&self, root: ItemId) -> Vec<ItemId> {
        let mut seen = HashSet::new();
        let mut stack = vec![root];
        let mut order = Vec::new();
        while let Some(f) = stack.pop() {
            if !seen.insert(f) {
                continue;
            }
            order.push(f);
            if let Some(ff) = self.facts.get(&f) {
                stack.extend(ff.callees.iter().copied());
                if ff.indirect_calls {
                    stack.extend(self.address_taken.iter().copied());
                }
            }
        }
        order.sort_unstable();
        order
    }

    /// The functions a compile unit defines (item indices, kernels
    /// included), and whether it can be compiled apart from the rest of the
    /// module. A kernel's unit holds the kernel and every function its code
    /// reaches: called, or whose address it takes (an indirect call can
    /// only jump to an address some code or initializer produced, and
    /// those define their own copies). The shared unit holds the functions
    /// the variables' initializers point to, the kernels that do not
    /// compile apart ([`Analysis::shared_unit`]: none where units link,
    /// `links_units`), and what those reach.
    ///
    /// Invariant: `None` when a unit would have to define a kernel other
    /// than its own (an initializer or another kernel takes a kernel's
    /// address): kernels are external symbols, defined once per module, so
    /// such a module compiles as one unit.
    pub fn unit_functions(&self, m: &Module, unit: crate::Unit, links_units: bool) -> Option<HashSet<ItemId>> {
        match unit {
            crate::Unit::Module => Some(
                m.items
                    .iter()
                    .enumerate()
                    .filter(|(_, it)| matches!(it, Item::Function(f) if f.body.is_some()))
                    .map(|(i, _)| i as ItemId)
                    .collect(),
            ),
            crate::Unit::Kernel(k) => self.defined_from(m, vec![k], &HashSet::from([k])),
            crate::Unit::Shared => self.shared_unit(m, links_units).map(|(_, defined)| defined),
        }
    }

    /// The shared unit: the kernels (with bodies) it holds rather than
    /// compiling them apart, in module order, and the functions it
    /// defines. Where units link (`links_units`) it holds no kernel; where
    /// they cannot, the kernels whose unit would name a module variable
    /// (`FunctionFacts::names_variables` of any function it defines), as
    /// the variables are defined in the shared unit only. `None` when the
    /// module cannot be cut into units: a kernel's unit, or the shared
    /// unit, would define another kernel (see [`Analysis::unit_functions`]).
    pub fn shared_unit(&self, m: &Module, links_units: bool) -> Option<(Vec<ItemId>, HashSet<ItemId>)> {
        let apart_with_variables = links_units || variables_by_table(m);
        let mut kernels = Vec::new();
        for (i, item) in m.items.iter().enumerate() {
            let Item::Function(f) = item else { continue };
            if f.kind != FunctionKind::Entry || f.body.is_none() {
                continue;
            }
            let k = i as ItemId;
            let defined = self.defined_from(m, vec![k], &HashSet::from([k]))?;
            if !apart_with_variables && defined.iter().any(|g| self.facts.get(g).is_some_and(|ff| ff.names_variables)) {
                kernels.push(k);
            }
        }
        let mut roots = HashSet::new();
        for v in m.variables() {
            collect_init_functions(m, v.decl.init.as_ref(), &mut roots);
        }
        let own: HashSet<ItemId> = kernels.iter().copied().collect();
        roots.extend(own.iter().copied());
        let defined = self.defined_from(m, roots.into_iter().collect(), &own)?;
        Some((kernels, defined))
    }

    /// The functions a unit with these roots defines: every function they
    /// reach (called, or whose address they take); `None` when that
    /// includes a kernel not in `own`.
    fn defined_from(&self, m: &Module, mut stack: Vec<ItemId>, own: &HashSet<ItemId>) -> Option<HashSet<ItemId>> {
        let is_kernel = |i: ItemId| matches!(m.items.get(i as usize), Some(Item::Function(f)) if f.kind == FunctionKind::Entry);
        let mut seen = HashSet::new();
        while let Some(f) = stack.pop() {
            if !seen.insert(f) {
                continue;
            }
            if is_kernel(f) && !own.contains(&f) {
                return None;
            }
            if let Some(ff) = self.facts.get(&f) {
                stack.extend(ff.callees.iter().copied());
                stack.extend(ff.address_taken.iter().copied());
            }
        }
        Some(seen)
    }

    /// A call of `callee` (an indirect one: `None`) may end the calling
    /// thread: it reaches a function that contains `exit`.
    pub fn call_may_exit(&self, callee: Option<ItemId>) -> bool {
        let exits = |f: &ItemId| self.facts.get(f).is_some_and(|ff| ff.exits);
        match callee {
            Some(f) => self.reachable(f).iter().any(exits),
            None => self.address_taken.iter().any(|&f| self.reachable(f).iter().any(exits)),
        }
    }

    pub fn needs_scheduler(&self, kernel: ItemId) -> bool {
        self.reachable(kernel).iter().any(|f| self.facts.get(f).is_some_and(|ff| ff.waits))
    }

    /// `KernelInfo::spin_waits`: a loop of the kernel or of a function it
    /// may call may spin on memory.
    pub fn spin_waits(&self, kernel: ItemId) -> bool {
        self.reachable(kernel).iter().any(|f| self.facts.get(f).is_some_and(|ff| !ff.yield_points.is_empty()))
    }

    fn layout_shared(&mut self, m: &Module) {
        let mut align_max = 16u64;
        // Module-level variables used by non-kernel functions go to a common
        // region at the start of every window, so a function compiled once
        // finds them at the same offset whichever kernel calls it.
        let mut common_syms: HashSet<SymbolId> = HashSet::new();
        for (idx, item) in m.items.iter().enumerate() {
            if let Item::Function(f) = item {
                if f.kind == FunctionKind::Func {
                    if let Some(ff) = self.facts.get(&(idx as ItemId)) {
                        common_syms.extend(ff.module_shared.iter().copied());
                    }
                }
            }
        }
        let mut offset = 0u64;
        for v in m.variables() {
            if is_dynamic_shared(&v.decl) {
                align_max = align_max.max(v.decl.alignment());
                continue;
            }
            if common_syms.contains(&v.symbol) {
                offset = align_up(offset, v.decl.alignment());
                self.common_shared.insert(v.symbol, offset as u32);
                offset += v.decl.size().unwrap_or(0);
            }
        }
        for (idx, item) in m.items.iter().enumerate() {
            if let Item::Function(f) = item {
                if f.kind == FunctionKind::Func {
                    for (vid, d) in f.vars.iter().enumerate() {
                        if is_shared(d.space) && !is_dynamic_shared(d) {
                            offset = align_up(offset, d.alignment());
                            self.local_shared.insert((idx as ItemId, vid as VarId), offset as u32);
                            offset += d.size().unwrap_or(0);
                        } else if is_dynamic_shared(d) {
                            align_max = align_max.max(d.alignment());
                        }
                    }
                }
            }
        }
        self.common_bytes = offset as u32;
        for (idx, item) in m.items.iter().enumerate() {
            let Item::Function(f) = item else { continue };
            if f.kind != FunctionKind::Entry || f.body.is_none() {
                continue;
            }
            let kid = idx as ItemId;
            let uses_common = self.reachable(kid).iter().any(|&g| {
                g != kid
                    && (self.facts.get(&g).is_some_and(|ff| !ff.module_shared.is_empty())
                        || self.local_shared.keys().any(|(it, _)| *it == g))
            }) || self.facts.get(&kid).is_some_and(|ff| ff.module_shared.iter().any(|s| common_syms.contains(s)));
            let mut off = if uses_common { self.common_bytes as u64 } else { 0 };
            if let Some(ff) = self.facts.get(&kid) {
                let mut own: Vec<SymbolId> = ff.module_shared.iter().copied().filter(|s| !common_syms.contains(s)).collect();
                own.sort_unstable();
                for s in own {
                    if let Some(v) = m.variable(s) {
                        off = align_up(off, v.decl.alignment());
                        self.kernel_shared.insert((kid, s), off as u32);
                        off += v.decl.size().unwrap_or(0);
                    }
                }
            }
            for (vid, d) in f.vars.iter().enumerate() {
                if is_shared(d.space) && !is_dynamic_shared(d) {
                    off = align_up(off, d.alignment());
                    self.local_shared.insert((kid, vid as VarId), off as u32);
                    off += d.size().unwrap_or(0);
                } else if is_dynamic_shared(d) {
                    align_max = align_max.max(d.alignment());
                }
            }
            self.kernel_static_bytes.insert(kid, off as u32);
        }
        self.dynamic_align = align_max.min(1 << 16) as u32;
    }

    pub fn dynamic_shared_offset(&self, kernel: ItemId) -> u32 {
        let s = self.kernel_static_bytes.get(&kernel).copied().unwrap_or(0) as u64;
        align_up(s, self.dynamic_align as u64) as u32
    }
}

/// Whether, where units cannot link, kernels compiled apart reach the
/// module's variables through the shared unit's variable table
/// (`cpu_abi::BlockCtx::variables`; [`table_variables`] in its order):
/// every variable other than `.shared` ones is plain `.global`/`.const`
/// data the module defines, and no initialiser takes a function's address
/// (the functions it names would live in the shared unit, and a call into
/// another code object is not something AMD's code objects can make).
/// Otherwise the kernels that name variables compile with them in the
/// shared unit.
pub fn variables_by_table(m: &Module) -> bool {
    let mut functions = HashSet::new();
    for v in m.variables() {
        if is_shared(v.decl.space) {
            continue;
        }
        if !is_table_entry(v) || matches!(v.decl.ty, Type::Texref | Type::Samplerref | Type::Surfref) {
            return false;
        }
        collect_init_functions(m, v.decl.init.as_ref(), &mut functions);
    }
    functions.is_empty()
}

/// Whether the shared unit of `m` defines the variable table
/// (`Partition::variable_table`): units cannot link, the table serves the
/// module ([`variables_by_table`]) and it has variables. The one place
/// that decides it: the partition reports it and the lowering emits the
/// table by it.
pub fn has_variable_table(m: &Module, links_units: bool) -> bool {
    !links_units && variables_by_table(m) && table_variables(m).next().is_some()
}

/// A variable of `ModuleInfo::globals` (and so of the variable table):
/// `.global`/`.const` data the module defines.
fn is_table_entry(v: &Variable) -> bool {
    matches!(v.decl.space, StateSpace::Global | StateSpace::Const) && v.decl.linkage != Some(Linkage::Extern)
}

/// The module's variables in `ModuleInfo::globals` order: the entries of
/// the variable table (`cpu_abi::BlockCtx::variables`).
pub fn table_variables<'m, 'a>(m: &'m Module<'a>) -> impl Iterator<Item = &'m Variable<'a>> {
    m.variables().filter(|v| is_table_entry(v))
}

fn collect_init_functions(m: &Module, init: Option<&Initializer>, out: &mut HashSet<ItemId>) {
    match init {
        Some(Initializer::Symbol { symbol, .. }) => {
            if let Some(it) = function_item(m, *symbol) {
                out.insert(it);
            }
        }
        Some(Initializer::List(items)) => {
            for i in items {
                collect_init_functions(m, Some(i), out);
            }
        }
        _ => {}
    }
}

fn dims3(v: &[u32]) -> [u32; 3] {
    [v.first().copied().unwrap_or(1), v.get(1).copied().unwrap_or(1), v.get(2).copied().unwrap_or(1)]
}

/// The size of a function's own `.local` variables (its frame).
pub fn local_bytes(f: &Function) -> u32 {
    let mut off = 0u64;
    for d in &f.vars {
        if d.space == StateSpace::Local {
            off = align_up(off, d.alignment()) + d.size().unwrap_or(0);
        }
    }
    off.min(u32::MAX as u64) as u32
}

/// Everything the driver needs to know about a module's kernels and
/// globals, computed from the syntax tree alone (no code generation).
pub fn describe(m: &Module) -> ModuleInfo {
    describe_with_options(m, &crate::Target::HostCpu, &crate::Options::default())
}

/// The description of a module compiled for `target` with `opts`.
pub fn describe_with_options(m: &Module, target: &crate::Target, opts: &crate::Options) -> ModuleInfo {
    let a = Analysis::new(m);
    describe_for(m, &a, target, opts)
}

/// The description of a module compiled for `target` (which decides how
/// many lanes a kernel's functions run).
pub fn describe_for(m: &Module, a: &Analysis, target: &crate::Target, opts: &crate::Options) -> ModuleInfo {
    let mut info = describe_with(m, a);
    for k in &mut info.kernels {
        set_lanes(m, a, target, opts, k);
    }
    info
}

/// A kernel's lane count, frame and privatisation as compiled for
/// `target` in a unit that carries both of its versions (a whole module,
/// the shared unit).
fn set_lanes(m: &Module, a: &Analysis, target: &crate::Target, opts: &crate::Options, k: &mut KernelInfo) {
    let item = m.symbol_by_name(&k.name).map(|s| m.symbol(s).item);
    if let Some(Item::Function(f)) = item.and_then(|i| m.items.get(i as usize)) {
        let item = item.unwrap_or(0);
        if let Some(choice) = mode_choice(m, a, target, opts, item, f) {
            apply_mode(a, item, f, &choice, opts.tier, k);
        }
        k.privatise = crate::privatise::plan_for(m, f, target, opts).map(|p| p.guard);
    }
}

/// How a kernel runs on a target that emulates threads (`None` on a GPU,
/// or with warp mode off: thread by thread as described).
pub(crate) fn mode_choice(
    m: &Module,
    a: &Analysis,
    target: &crate::Target,
    opts: &crate::Options,
    item: ItemId,
    f: &Function,
) -> Option<crate::warp::ModeChoice> {
    (target.facts().emulates_threads && opts.warp != crate::WarpMode::Off)
        .then(|| crate::warp::choose_mode(m, "", a, target, opts, item, f))
}

/// What a kernel's mode changes in its description: warp mode's lanes and
/// frame; a kernel run thread by thread whose lanes meet
/// (`ModeChoice::meetings`) suspends at the meetings, so it runs on the
/// thread scheduler.
pub(crate) fn apply_mode(
    a: &Analysis,
    item: ItemId,
    f: &Function,
    choice: &crate::warp::ModeChoice,
    tier: crate::Tier,
    info: &mut KernelInfo,
) {
    if choice.warp {
        info.lanes = crate::warp::W;
        info.frame_bytes = crate::warp::frame_layout(a, item, f, tier).bytes;
    }
    if !choice.meetings.is_empty() {
        info.needs_scheduler = true;
    }
}

/// The description of what one compile unit defines: its kernels (with
/// their lane counts for `target`) and, for the units that define
/// variables, the variables.
pub fn describe_unit(m: &Module, a: &Analysis, target: &crate::Target, opts: &crate::Options, unit: crate::Unit) -> ModuleInfo {
    match unit {
        crate::Unit::Module => describe_for(m, a, target, opts),
        crate::Unit::Shared => {
            let shared = a.shared_unit(m, target.facts().links_units).map(|(kernels, _)| kernels).unwrap_or_default();
            let mut info = describe_with(m, a);
            info.kernels.retain(|k| m.symbol_by_name(&k.name).is_some_and(|s| shared.contains(&m.symbol(s).item)));
            for k in &mut info.kernels {
                set_lanes(m, a, target, opts, k);
            }
            info
        }
        crate::Unit::Kernel(k) => {
            let mut kernels = Vec::new();
            if let Some(Item::Function(f)) = m.items.get(k as usize) {
                if f.kind == FunctionKind::Entry && f.body.is_some() {
                    let mut info = describe_kernel(m, a, k, f);
                    let choice = mode_choice(m, a, target, opts, k, f);
                    if let Some(choice) = &choice {
                        apply_mode(a, k, f, choice, opts.tier, &mut info);
                    }
                    info.lockstep_guard = choice.and_then(|c| c.guarded).map(|c| launch_guard(m, f, &c));
                    info.privatise = crate::privatise::plan_for(m, f, target, opts).map(|p| p.guard);
                    kernels.push(info);
                }
            }
            ModuleInfo { kernels, globals: Vec::new() }
        }
    }
}

pub fn describe_with(m: &Module, a: &Analysis) -> ModuleInfo {
    let mut kernels = Vec::new();
    for (idx, item) in m.items.iter().enumerate() {
        let Item::Function(f) = item else { continue };
        if f.kind != FunctionKind::Entry || f.body.is_none() {
            continue;
        }
        kernels.push(describe_kernel(m, a, idx as ItemId, f));
    }
    let globals = table_variables(m)
        .map(|v| GlobalInfo {
            name: v.decl.name.to_string(),
            size: v.decl.size().unwrap_or(0),
            constant: v.decl.space == StateSpace::Const,
            managed: v.decl.attributes.contains(&"managed"),
        })
        .collect();
    ModuleInfo { kernels, globals }
}

/// The conditions `c` of a kernel's thread-by-thread code as a backend
/// checks them before a launch (parameters by offset, variables by name).
pub fn launch_guard(m: &Module, f: &Function, c: &crate::lockstep::Conditions) -> crate::LaunchGuard {
    use crate::lockstep::Base;
    use crate::GuardBase;
    let (params, _) = param_layout(f, &f.params);
    let base = |b: Base| match b {
        Base::None => GuardBase::None,
        Base::Param(v) => GuardBase::Param(f.params.iter().position(|&p| p == v).and_then(|i| params.get(i)).map_or(0, |p| p.offset)),
        Base::Symbol(sym) => GuardBase::Global(m.symbol(sym).name.to_string()),
    };
    let param = |v: &VarId| f.params.iter().position(|p| p == v).and_then(|i| params.get(i)).map_or(u32::MAX, |p| p.offset);
    crate::LaunchGuard {
        disjoint: c.disjoint.iter().map(|d| d.map(&|b: &Base| base(*b), &param)).collect(),
        injective: c.injective.iter().map(|d| d.map(&|b: &Base| base(*b), &param)).collect(),
        one_dimensional: c.one_dimensional,
        apart: c
            .apart
            .iter()
            .map(|ap| crate::GuardApart {
                a: base(ap.a),
                a_offset: ap.a_offset,
                b: base(ap.b),
                b_offset: ap.b_offset,
                equal: ap.equal,
                min: ap.min,
                wrap: ap.wrap,
            })
            .collect(),
    }
}

/// The description of one kernel (`kid` is its item index).
pub fn describe_kernel(m: &Module, a: &Analysis, kid: ItemId, f: &Function) -> KernelInfo {
    {
        // The names of the functions the kernel may reach (one walk).
        let reached: Vec<&str> = a
            .reachable(kid)
            .iter()
            .filter_map(|&it| match m.items.get(it as usize) {
                Some(Item::Function(g)) => Some(g.name),
                _ => None,
            })
            .collect();
        let calls = |names: &[&str]| reached.iter().any(|r| names.contains(r));
        let (params, param_bytes) = param_layout(f, &f.params);
        let mut reqntid = None;
        let mut maxntid = None;
        for d in &f.directives {
            match d {
                PerfDirective::Reqntid(v) => reqntid = Some(dims3(v)),
                PerfDirective::Maxntid(v) => maxntid = Some(dims3(v)),
                _ => {}
            }
        }
        KernelInfo {
            name: f.name.to_string(),
            params,
            param_bytes,
            static_shared_bytes: a.kernel_static_bytes.get(&kid).copied().unwrap_or(0),
            dynamic_shared_offset: a.dynamic_shared_offset(kid),
            needs_scheduler: a.needs_scheduler(kid),
            spin_waits: a.spin_waits(kid),
            reqntid,
            maxntid,
            local_bytes: local_bytes(f),
            lanes: 1,
            frame_bytes: 0,
            lockstep_guard: None,
            privatise: None,
            calls_malloc: calls(&["malloc", "free", "__nv_aligned_device_malloc"]),
            calls_printf: calls(&["vprintf"]),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Which kernels may call device `malloc`/`free` or `printf`: through
    /// calls, several deep, and through function pointers.
    #[test]
    fn kernels_that_reach_malloc_or_printf_are_marked() {
        let src = r#"
.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b64 r) malloc(.param .b64 n);
.extern .func free(.param .b64 p);
.extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);
.func scratch()
{
	.reg .b64 %rd<3>;
	mov.u64 %rd1, 16;
	{
	.param .b64 n;
	st.param.b64 [n], %rd1;
	.param .b64 r;
	call.uni (r), malloc, (n);
	ld.param.b64 %rd2, [r];
	}
	ret;
}
.func outer()
{
	call.uni scratch, ();
	ret;
}
.func say()
{
	.reg .b64 %rd<2>;
	mov.u64 %rd1, 0;
	{
	.param .b64 f;
	st.param.b64 [f], %rd1;
	.param .b64 a;
	st.param.b64 [a], %rd1;
	.param .b32 r;
	call.uni (r), vprintf, (f, a);
	}
	ret;
}
.visible .entry deep() { call.uni outer, (); ret; }
.visible .entry plain() { ret; }
.visible .entry prints() { call.uni say, (); ret; }
.visible .entry through_pointer()
{
	.reg .b64 %rd<2>;
	mov.u64 %rd1, say;
	call.uni %rd1, ();
	ret;
}
"#;
        let m = ptx::parse(src).expect("parses");
        let info = super::describe(&m);
        let flags: Vec<(&str, bool, bool)> = info.kernels.iter().map(|k| (k.name.as_str(), k.calls_malloc, k.calls_printf)).collect();
        assert_eq!(
            flags,
            [("deep", true, false), ("plain", false, false), ("prints", false, true), ("through_pointer", false, true)],
            "(kernel, calls malloc, calls printf)"
        );
    }

    /// Grid-stride loops get turn points, with the iterations between
    /// turns set by the bytes a lane loads per iteration (a `.v4.u8` load
    /// counts 4); loops that do not step by the grid's width, hold a
    /// barrier or an atomic, or load nothing from global memory, do not.
    #[test]
    fn grid_stride_loops_are_turn_points() {
        let kernel = |name: &str, body: &str, tail: &str| {
            format!(
                ".visible .entry {name}(.param .u64 p, .param .u32 n)
{{
.reg .b32 %r<16>;
.reg .b64 %rd<16>;
.reg .f32 %f<8>;
.reg .pred %p<4>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
mov.u32 %r2, %nctaid.x;
mov.u32 %r3, %ntid.x;
mul.lo.u32 %r4, %r2, %r3;
mov.u32 %r5, %tid.x;
mov.f32 %f1, 0f00000000;
L:
{body}
setp.lt.u32 %p1, %r5, %r1;
@%p1 bra L;
{tail}
ret;
}}
"
            )
        };
        let load = "mul.wide.u32 %rd2, %r5, 4;\nadd.s64 %rd3, %rd1, %rd2;\nld.global.f32 %f2, [%rd3];\nadd.f32 %f1, %f1, %f2;\n";
        let unrolled = format!("{load}add.u32 %r6, %r5, %r4;\nmul.wide.u32 %rd4, %r6, 4;\nadd.s64 %rd5, %rd1, %rd4;\nld.global.f32 %f3, [%rd5];\nadd.f32 %f1, %f1, %f3;\nadd.u32 %r5, %r6, %r4;");
        let sync = "bar.sync 0;";
        let src = [
            ".version 8.0\n.target sm_80\n.address_size 64\n".to_string(),
            kernel("stride", &format!("{load}add.u32 %r5, %r5, %r4;"), sync),
            kernel("unrolled", &unrolled, sync),
            kernel("by_one", &format!("{load}add.u32 %r5, %r5, 1;"), sync),
            kernel("barrier_inside", &format!("{load}bar.sync 0;\nadd.u32 %r5, %r5, %r4;"), ""),
            kernel("shared_only", "ld.shared.f32 %f2, [0];\nadd.f32 %f1, %f1, %f2;\nadd.u32 %r5, %r5, %r4;", sync),
            kernel("atomics", &format!("{load}red.global.add.u32 [%rd1], 1;\nadd.u32 %r5, %r5, %r4;"), sync),
            kernel("never_waits", &format!("{load}add.u32 %r5, %r5, %r4;"), ""),
            kernel("vectors", &format!("{load}ld.global.v4.u8 {{%r8, %r9, %r10, %r11}}, [%rd3];\nadd.u32 %r5, %r5, %r4;"), ""),
        ]
        .concat();
        let m = ptx::parse(&src).expect("parses");
        let a = super::Analysis::new(&m);
        let turns: Vec<(&str, Vec<u32>)> = m
            .items
            .iter()
            .enumerate()
            .filter_map(|(item, it)| match it {
                ptx::ast::Item::Function(f) => {
                    let mut every: Vec<u32> =
                        a.facts.get(&(item as super::ItemId)).map(|ff| ff.turn_points.values().copied().collect()).unwrap_or_default();
                    every.sort();
                    Some((f.name, every))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            turns,
            [
                ("stride", vec![crate::warp::TURN_BYTES / 4]),
                ("unrolled", vec![crate::warp::TURN_BYTES / 8]),
                ("by_one", vec![]),
                ("barrier_inside", vec![]),
                ("shared_only", vec![]),
                ("atomics", vec![]),
                ("never_waits", vec![crate::warp::TURN_BYTES / 4]),
                ("vectors", vec![crate::warp::TURN_BYTES / 8]),
            ],
            "(kernel, iterations between turns at each turn point)"
        );
    }
}
