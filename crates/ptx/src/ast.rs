//! The typed syntax tree of a PTX module.
//!
//! Nodes are small and flat: names borrow from the source text, identifiers
//! are resolved to dense ids while parsing (registers, variables, labels,
//! module symbols), and each function body keeps its instructions' modifiers
//! and operands in two arenas that instructions index by range. Source
//! positions live in side tables, so two trees with different layouts of the
//! same program compare equal.

pub use crate::keywords::{CacheOp, CmpOp, Flag, Opcode, Rounding, Scope, Semantics, StateSpace, Type};

/// A byte range of the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start, end: other.end.max(self.end) }
    }
}

/// Index of a module-level symbol (function or variable).
pub type SymbolId = u32;
/// Index into [`Function::vars`].
pub type VarId = u32;
/// Index into [`Body::regs`]: one distinct register.
pub type RegId = u32;
/// Index into [`Body::labels`].
pub type LabelId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Target<'a> {
    /// Every comma-separated word of `.target`, e.g. `sm_90a`, `texmode_independent`, `debug`.
    pub words: Vec<&'a str>,
}

impl Target<'_> {
    /// The SM number of the first `sm_NN` word (90 for `sm_90a`).
    pub fn sm(&self) -> Option<u32> {
        self.words.iter().find_map(|w| {
            let digits = w.strip_prefix("sm_")?;
            let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
            digits[..end].parse().ok()
        })
    }
    pub fn has(&self, word: &str) -> bool {
        self.words.contains(&word)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Module<'a> {
    pub version: Version,
    pub target: Target<'a>,
    /// 32 or 64; PTX defaults to 32 when the directive is absent.
    pub address_size: u32,
    pub items: Vec<Item<'a>>,
    /// Module-level names: every function and variable, in declaration order.
    pub symbols: Vec<Symbol<'a>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Variable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    pub name: &'a str,
    pub kind: SymbolKind,
    /// The item that declares it; for a function declared several times, the
    /// one with a body if there is one, else the last declaration.
    pub item: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item<'a> {
    Function(Box<Function<'a>>),
    Variable(Variable<'a>),
    /// `.file N "name" [, timestamp, size]`
    File {
        index: u32,
        name: &'a str,
        extra: Vec<u64>,
    },
    /// `.section .debug_xxx { ... }`, kept as text.
    Section {
        name: &'a str,
        body: &'a str,
    },
    /// `.pragma "..."` at module level.
    Pragma(&'a str),
    /// `.alias alias, aliasee;`
    Alias {
        alias: SymbolId,
        target: SymbolId,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    Visible,
    Extern,
    Weak,
    Common,
}

impl Linkage {
    pub fn as_str(self) -> &'static str {
        match self {
            Linkage::Visible => "visible",
            Linkage::Extern => "extern",
            Linkage::Weak => "weak",
            Linkage::Common => "common",
        }
    }
}

/// A variable declared at module level.
#[derive(Clone, Debug, PartialEq)]
pub struct Variable<'a> {
    pub symbol: SymbolId,
    pub decl: VarDecl<'a>,
    /// Declared inside a function body (a `.global` or `.const` variable
    /// there is statically allocated like a module-level one, but its name
    /// is visible only in its block): the function's body declares it too
    /// (`Statement::Decl`), and its name does not enter the module's names.
    pub in_function: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl<'a> {
    pub name: &'a str,
    pub linkage: Option<Linkage>,
    pub space: StateSpace,
    pub ty: Type,
    /// 0 for a scalar, else 2, 4 or 8 (`.v4 .f32`).
    pub vector: u8,
    pub align: Option<u32>,
    /// Array dimensions; `None` in a dimension means `[]` (size from the initializer or extern).
    pub dims: Vec<Option<u64>>,
    /// `%r<N>`: N registers `%r0`..`%r{N-1}` share this declaration.
    pub count: Option<u32>,
    /// `.ptr [.space] [.align N]` on kernel parameters.
    pub ptr: Option<PtrAttr>,
    /// `.attribute(.managed)` and similar.
    pub attributes: Vec<&'a str>,
    pub init: Option<Initializer>,
}

impl VarDecl<'_> {
    /// Element count of the array (product of dimensions), 1 for a scalar;
    /// `None` when a dimension is unsized.
    pub fn elements(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |acc, d| d.and_then(|d| acc.checked_mul(d)))
    }
    /// Size in bytes of one element (vectors included).
    pub fn element_size(&self) -> u64 {
        self.ty.size() as u64 * (self.vector.max(1) as u64)
    }
    /// Total size in bytes, when known.
    pub fn size(&self) -> Option<u64> {
        self.elements()?.checked_mul(self.element_size())
    }
    /// Alignment in bytes: the declared one or the natural one.
    pub fn alignment(&self) -> u64 {
        self.align.map(|a| a as u64).unwrap_or_else(|| self.element_size().max(1))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PtrAttr {
    pub space: Option<StateSpace>,
    pub align: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Initializer {
    Int(i64),
    /// A float written in hexadecimal (`0f...`) or decimal, stored as f32 bits.
    F32(u32),
    F64(u64),
    /// A symbol's address plus a byte offset, or `generic(sym)+off`.
    Symbol {
        symbol: SymbolId,
        offset: i64,
        generic: bool,
    },
    List(Vec<Initializer>),
    /// `name = value` in the initializer of a `.samplerref` or `.texref`
    /// (`{ filter_mode = linear, addr_mode_0 = clamp_to_edge }`).
    Field {
        name: Flag,
        value: Box<Initializer>,
    },
    /// A word value of a field (`linear`, `clamp_to_edge`).
    Word(Flag),
    /// `0xFF00(generic(sym)+4)`: the bits of an address under a mask, one
    /// byte of a pointer in a byte array (LLVM writes packed aggregates so).
    Mask {
        mask: u64,
        value: Box<Initializer>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    Entry,
    Func,
}

/// Performance-tuning and cluster directives of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PerfDirective {
    Maxntid(Vec<u32>),
    Reqntid(Vec<u32>),
    Minnctapersm(u32),
    Maxnctapersm(u32),
    Maxnreg(u32),
    Noreturn,
    Explicitcluster,
    Reqnctapercluster(Vec<u32>),
    Maxclusterrank(u32),
    AbiPreserve(u32),
    AbiPreserveControl(u32),
    Pragma(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function<'a> {
    pub name: &'a str,
    pub symbol: SymbolId,
    pub kind: FunctionKind,
    pub linkage: Option<Linkage>,
    /// Indices into `vars` of the return parameters, then of the parameters.
    pub returns: Vec<VarId>,
    pub params: Vec<VarId>,
    pub directives: Vec<PerfDirective>,
    /// Every variable of the function: parameters first, then everything the
    /// body declares (registers, `.local`, `.shared`, `.param` in call blocks).
    pub vars: Vec<VarDecl<'a>>,
    pub body: Option<Body<'a>>,
}

impl<'a> Function<'a> {
    pub fn var(&self, id: VarId) -> &VarDecl<'a> {
        &self.vars[id as usize]
    }
}

/// One distinct register: a plain `.reg` variable or one member of `%r<N>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reg {
    pub var: VarId,
    /// The index within `%r<N>`, if the declaration is parameterised.
    pub index: Option<u32>,
    /// For a vector-typed register (`.reg .v4 .f32 %v`), one of its
    /// elements (`%v.x` is element 0): each element is a register of its
    /// own, and the vector as a whole is the list of its elements
    /// (`Operand::Vector`).
    pub element: Option<u8>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Body<'a> {
    pub statements: Vec<Statement>,
    pub regs: Vec<Reg>,
    pub labels: Vec<&'a str>,
    pub mods: Vec<Modifier>,
    pub operands: Vec<Operand>,
    /// Names of `.callprototype` declarations and `.loc` extras.
    pub prototypes: Vec<Prototype>,
    pub strings: Vec<&'a str>,
    /// The source position of each statement (not part of equality).
    pub spans: SpanTable,
}

/// Spans of statements, kept out of structural equality.
#[derive(Clone, Debug, Default)]
pub struct SpanTable(pub Vec<Span>);

impl PartialEq for SpanTable {
    fn eq(&self, _: &SpanTable) -> bool {
        true
    }
}

impl<'a> Body<'a> {
    pub fn mods(&self, inst: &Instruction) -> &[Modifier] {
        &self.mods[inst.mods.range()]
    }
    pub fn args(&self, inst: &Instruction) -> &[Operand] {
        &self.operands[inst.args.range()]
    }
    pub fn list(&self, range: ListRange) -> &[Operand] {
        &self.operands[range.range()]
    }
    pub fn span(&self, statement: usize) -> Span {
        self.spans.0.get(statement).copied().unwrap_or_default()
    }
}

/// A range of an arena: `start..start+len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct ListRange {
    pub start: u32,
    pub len: u32,
}

impl ListRange {
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    Instruction(Instruction),
    Label(LabelId),
    /// A variable declared at this point (registers, locals, call-block params...).
    Decl(VarId),
    BlockOpen,
    BlockClose,
    /// `.loc file line column [, extra text]`; `extra` indexes `Body::strings`.
    Loc {
        file: u32,
        line: u32,
        column: u32,
        extra: Option<u32>,
    },
    /// `.pragma "..."`; the string indexes `Body::strings`.
    Pragma(u32),
    /// `label: .branchtargets a, b, c;` (labels) or `.calltargets f, g;` (symbols).
    BranchTargets {
        label: LabelId,
        targets: ListRange,
    },
    CallTargets {
        label: LabelId,
        targets: ListRange,
    },
    /// `label: .callprototype ...;` (indexes `Body::prototypes`).
    CallPrototype {
        label: LabelId,
        proto: u32,
    },
}

/// The signature named by a `.callprototype`.
#[derive(Clone, Debug, PartialEq)]
pub struct Prototype {
    pub returns: Vec<ProtoParam>,
    pub params: Vec<ProtoParam>,
    pub noreturn: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProtoParam {
    pub space: StateSpace,
    pub ty: Type,
    pub align: Option<u32>,
    pub dims: Vec<Option<u64>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guard {
    pub reg: RegId,
    pub negate: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    pub guard: Option<Guard>,
    pub op: Opcode,
    pub mods: ListRange,
    pub args: ListRange,
}

/// `.m16n8k16` and the like.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub m: u16,
    pub n: u16,
    pub k: u16,
}

/// One `.word` after an opcode, classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Modifier {
    Type(Type),
    Round(Rounding),
    Space(StateSpace),
    Scope(Scope),
    Sem(Semantics),
    Cache(CacheOp),
    Cmp(CmpOp),
    /// `.v2`, `.v4`, `.v8`
    Vec(u8),
    Flag(Flag),
    Shape(Shape),
}

/// Special (read-only, predefined) registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    Tid,
    Ntid,
    Laneid,
    Warpid,
    Nwarpid,
    Ctaid,
    Nctaid,
    Smid,
    Nsmid,
    Gridid,
    LanemaskEq,
    LanemaskLe,
    LanemaskLt,
    LanemaskGe,
    LanemaskGt,
    Clock,
    ClockHi,
    Clock64,
    Globaltimer,
    GlobaltimerLo,
    GlobaltimerHi,
    TotalSmemSize,
    AggrSmemSize,
    DynamicSmemSize,
    IsExplicitCluster,
    Clusterid,
    Nclusterid,
    ClusterCtaid,
    ClusterNctaid,
    ClusterCtarank,
    ClusterNctarank,
    CurrentGraphExec,
    /// `%pm0`..`%pm7`
    Pm(u8),
    /// `%pm0_64`..`%pm7_64`
    Pm64(u8),
    /// `%envreg0`..`%envreg31`
    Envreg(u8),
    ReservedSmemOffsetBegin,
    ReservedSmemOffsetEnd,
    ReservedSmemOffsetCap,
    ReservedSmemOffset0,
    ReservedSmemOffset1,
}

impl SpecialReg {
    /// Whether the register has `.x/.y/.z` components.
    pub fn is_vector(self) -> bool {
        use SpecialReg::*;
        matches!(self, Tid | Ntid | Ctaid | Nctaid | Clusterid | Nclusterid | ClusterCtaid | ClusterNctaid)
    }

    pub fn from_name(name: &str) -> Option<SpecialReg> {
        use SpecialReg::*;
        let name = name.strip_prefix('%')?;
        Some(match name {
            "tid" => Tid,
            "ntid" => Ntid,
            "laneid" => Laneid,
            "warpid" => Warpid,
            "nwarpid" => Nwarpid,
            "ctaid" => Ctaid,
            "nctaid" => Nctaid,
            "smid" => Smid,
            "nsmid" => Nsmid,
            "gridid" => Gridid,
            "lanemask_eq" => LanemaskEq,
            "lanemask_le" => LanemaskLe,
            "lanemask_lt" => LanemaskLt,
            "lanemask_ge" => LanemaskGe,
            "lanemask_gt" => LanemaskGt,
            "clock" => Clock,
            "clock_hi" => ClockHi,
            "clock64" => Clock64,
            "globaltimer" => Globaltimer,
            "globaltimer_lo" => GlobaltimerLo,
            "globaltimer_hi" => GlobaltimerHi,
            "total_smem_size" => TotalSmemSize,
            "aggr_smem_size" => AggrSmemSize,
            "dynamic_smem_size" => DynamicSmemSize,
            "is_explicit_cluster" => IsExplicitCluster,
            "clusterid" => Clusterid,
            "nclusterid" => Nclusterid,
            "cluster_ctaid" => ClusterCtaid,
            "cluster_nctaid" => ClusterNctaid,
            "cluster_ctarank" => ClusterCtarank,
            "cluster_nctarank" => ClusterNctarank,
            "current_graph_exec" => CurrentGraphExec,
            "reserved_smem_offset_begin" => ReservedSmemOffsetBegin,
            "reserved_smem_offset_end" => ReservedSmemOffsetEnd,
            "reserved_smem_offset_cap" => ReservedSmemOffsetCap,
            "reserved_smem_offset_0" => ReservedSmemOffset0,
            "reserved_smem_offset_1" => ReservedSmemOffset1,
            _ => {
                let numbered = |prefix: &str, max: u8| -> Option<u8> {
                    let n: u8 = name.strip_prefix(prefix)?.parse().ok()?;
                    (n <= max).then_some(n)
                };
                if let Some(rest) = name.strip_suffix("_64") {
                    let n: u8 = rest.strip_prefix("pm")?.parse().ok()?;
                    return (n <= 7).then_some(Pm64(n));
                }
                if let Some(n) = numbered("pm", 7) {
                    Pm(n)
                } else {
                    Envreg(numbered("envreg", 31)?)
                }
            }
        })
    }

    pub fn name(self) -> String {
        use SpecialReg::*;
        let s = match self {
            Tid => "tid",
            Ntid => "ntid",
            Laneid => "laneid",
            Warpid => "warpid",
            Nwarpid => "nwarpid",
            Ctaid => "ctaid",
            Nctaid => "nctaid",
            Smid => "smid",
            Nsmid => "nsmid",
            Gridid => "gridid",
            LanemaskEq => "lanemask_eq",
            LanemaskLe => "lanemask_le",
            LanemaskLt => "lanemask_lt",
            LanemaskGe => "lanemask_ge",
            LanemaskGt => "lanemask_gt",
            Clock => "clock",
            ClockHi => "clock_hi",
            Clock64 => "clock64",
            Globaltimer => "globaltimer",
            GlobaltimerLo => "globaltimer_lo",
            GlobaltimerHi => "globaltimer_hi",
            TotalSmemSize => "total_smem_size",
            AggrSmemSize => "aggr_smem_size",
            DynamicSmemSize => "dynamic_smem_size",
            IsExplicitCluster => "is_explicit_cluster",
            Clusterid => "clusterid",
            Nclusterid => "nclusterid",
            ClusterCtaid => "cluster_ctaid",
            ClusterNctaid => "cluster_nctaid",
            ClusterCtarank => "cluster_ctarank",
            ClusterNctarank => "cluster_nctarank",
            CurrentGraphExec => "current_graph_exec",
            ReservedSmemOffsetBegin => "reserved_smem_offset_begin",
            ReservedSmemOffsetEnd => "reserved_smem_offset_end",
            ReservedSmemOffsetCap => "reserved_smem_offset_cap",
            ReservedSmemOffset0 => "reserved_smem_offset_0",
            ReservedSmemOffset1 => "reserved_smem_offset_1",
            Pm(n) => return format!("%pm{n}"),
            Pm64(n) => return format!("%pm{n}_64"),
            Envreg(n) => return format!("%envreg{n}"),
        };
        format!("%{s}")
    }
}

/// An instruction operand. Lists (vectors, call argument lists, texture
/// coordinates) index the same operand arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    Reg(RegId),
    /// `!%p` (a negated predicate source).
    NotReg(RegId),
    /// `%v.x`: a component of a vector register (0..3).
    RegComponent(RegId, u8),
    /// `%p|%q`: the two destinations of `setp`.
    PredPair(RegId, RegId),
    /// `%tid.x` (component 0..2, or 0 for scalar registers).
    Special(SpecialReg, u8),
    /// A non-register variable of the function (`.local`, `.shared`, `.param`).
    Var(VarId),
    /// A module-level variable or function.
    Global(SymbolId),
    Label(LabelId),
    Imm(i64),
    F32(u32),
    F64(u64),
    /// `[%rd+off]`
    AddrReg(RegId, i64),
    /// `[var+off]` for a function variable.
    AddrVar(VarId, i64),
    /// `[sym+off]` for a module variable.
    AddrGlobal(SymbolId, i64),
    /// `[imm]`
    AddrImm(i64),
    /// `{a, b, c, d}`
    Vector(ListRange),
    /// `(a, b)` in `call`.
    Paren(ListRange),
    /// `[tex, sampler, {coords}]` for texture and surface instructions.
    Bracket(ListRange),
    /// `_`
    Sink,
    /// `sym+off` as a value (`mov.u64 %rd1, arr+8;`): a module symbol's address plus a
    /// byte offset. A bare `sym` is [`Operand::Global`].
    GlobalOffset(SymbolId, i64),
    /// `var+off` as a value, for a function variable (`.local`, `.shared`, `.param`).
    VarOffset(VarId, i64),
    /// `_|%p`: a discarded value with a predicate destination (`elect.sync _|%p, -1;`).
    SinkPred(RegId),
    /// `{a, b, c, d}|%p`: a vector destination with a predicate (`tex`, `tld4`).
    VectorPred(ListRange, RegId),
    /// A video-instruction source or destination: a register with an
    /// optional byte/halfword selector (`%r1.b0`, `%r2.h10`, `%r3.b3210`)
    /// and, for `vmad`, a negation (`-%r1`).
    Video {
        reg: RegId,
        neg: bool,
        sel: Selector,
    },
}

/// Which unit a video selector picks: bytes (`.b`) or halfwords (`.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelUnit {
    Byte,
    Half,
}

/// `.b0`, `.h1`, `.h10`, `.b3210`: the lane digits as written, left to
/// right (at most four; `len == 0` means no selector).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    pub unit: SelUnit,
    pub len: u8,
    pub lanes: [u8; 4],
}

impl Selector {
    pub const NONE: Selector = Selector { unit: SelUnit::Byte, len: 0, lanes: [0; 4] };

    /// Reads the word after the dot (`b0`, `h10`, `b3210`).
    pub fn from_word(word: &str) -> Option<Selector> {
        let b = word.as_bytes();
        let (unit, max) = match b.first()? {
            b'b' => (SelUnit::Byte, b'7'),
            b'h' => (SelUnit::Half, b'3'),
            _ => return None,
        };
        let digits = &b[1..];
        if digits.is_empty() || digits.len() > 4 || !digits.iter().all(|d| (b'0'..=max).contains(d)) {
            return None;
        }
        let mut lanes = [0u8; 4];
        for (l, d) in lanes.iter_mut().zip(digits) {
            *l = d - b'0';
        }
        Some(Selector { unit, len: digits.len() as u8, lanes })
    }

    pub fn is_none(&self) -> bool {
        self.len == 0
    }

    pub fn lanes(&self) -> &[u8] {
        &self.lanes[..self.len as usize]
    }
}

/// Where an address operand points and the byte offset added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrBase {
    Reg(RegId),
    Var(VarId),
    Global(SymbolId),
    None,
}

impl Operand {
    pub fn address(&self) -> Option<(AddrBase, i64)> {
        match *self {
            Operand::AddrReg(r, o) => Some((AddrBase::Reg(r), o)),
            Operand::AddrVar(v, o) => Some((AddrBase::Var(v), o)),
            Operand::AddrGlobal(s, o) => Some((AddrBase::Global(s), o)),
            Operand::AddrImm(o) => Some((AddrBase::None, o)),
            _ => None,
        }
    }
}

impl Instruction {
    fn find<T>(&self, body: &Body, f: impl Fn(&Modifier) -> Option<T>) -> Option<T> {
        body.mods(self).iter().find_map(f)
    }

    /// The types in modifier order (`cvt.f32.s32` gives `[F32, S32]`).
    pub fn types<'b>(&self, body: &'b Body) -> impl Iterator<Item = Type> + 'b {
        body.mods[self.mods.range()].iter().filter_map(|m| match m {
            Modifier::Type(t) => Some(*t),
            _ => None,
        })
    }
    /// The first type modifier.
    pub fn ty(&self, body: &Body) -> Option<Type> {
        self.types(body).next()
    }
    pub fn rounding(&self, body: &Body) -> Option<Rounding> {
        self.find(body, |m| if let Modifier::Round(r) = m { Some(*r) } else { None })
    }
    pub fn space(&self, body: &Body) -> Option<StateSpace> {
        self.find(body, |m| if let Modifier::Space(s) = m { Some(*s) } else { None })
    }
    pub fn spaces<'b>(&self, body: &'b Body) -> impl Iterator<Item = StateSpace> + 'b {
        body.mods[self.mods.range()].iter().filter_map(|m| match m {
            Modifier::Space(s) => Some(*s),
            _ => None,
        })
    }
    pub fn scope(&self, body: &Body) -> Option<Scope> {
        self.find(body, |m| if let Modifier::Scope(s) = m { Some(*s) } else { None })
    }
    pub fn semantics(&self, body: &Body) -> Option<Semantics> {
        self.find(body, |m| if let Modifier::Sem(s) = m { Some(*s) } else { None })
    }
    pub fn cache_op(&self, body: &Body) -> Option<CacheOp> {
        self.find(body, |m| if let Modifier::Cache(c) = m { Some(*c) } else { None })
    }
    // The comparison modifier; not `Ord::cmp`, which instructions do not have.
    #[allow(clippy::should_implement_trait)]
    pub fn cmp(&self, body: &Body) -> Option<CmpOp> {
        self.find(body, |m| if let Modifier::Cmp(c) = m { Some(*c) } else { None })
    }
    pub fn vector(&self, body: &Body) -> Option<u8> {
        self.find(body, |m| if let Modifier::Vec(v) = m { Some(*v) } else { None })
    }
    pub fn shape(&self, body: &Body) -> Option<Shape> {
        self.find(body, |m| if let Modifier::Shape(s) = m { Some(*s) } else { None })
    }
    pub fn has(&self, body: &Body, flag: Flag) -> bool {
        body.mods(self).contains(&Modifier::Flag(flag))
    }
    /// The flags in modifier order.
    pub fn flags<'b>(&self, body: &'b Body) -> impl Iterator<Item = Flag> + 'b {
        body.mods[self.mods.range()].iter().filter_map(|m| match m {
            Modifier::Flag(f) => Some(*f),
            _ => None,
        })
    }
}

impl<'a> Module<'a> {
    pub fn functions(&self) -> impl Iterator<Item = &Function<'a>> {
        self.items.iter().filter_map(|i| match i {
            Item::Function(f) => Some(&**f),
            _ => None,
        })
    }
    pub fn variables(&self) -> impl Iterator<Item = &Variable<'a>> {
        self.items.iter().filter_map(|i| match i {
            Item::Variable(v) => Some(v),
            _ => None,
        })
    }
    /// Kernels (`.entry`) that have a body.
    pub fn kernels(&self) -> impl Iterator<Item = &Function<'a>> {
        self.functions().filter(|f| f.kind == FunctionKind::Entry && f.body.is_some())
    }
    pub fn symbol(&self, id: SymbolId) -> &Symbol<'a> {
        &self.symbols[id as usize]
    }
    pub fn symbol_by_name(&self, name: &str) -> Option<SymbolId> {
        self.symbols.iter().position(|s| s.name == name).map(|i| i as SymbolId)
    }
    /// The function a symbol names (its definition when there is one).
    pub fn function(&self, id: SymbolId) -> Option<&Function<'a>> {
        match self.items.get(self.symbol(id).item as usize)? {
            Item::Function(f) => Some(f),
            _ => None,
        }
    }
    pub fn variable(&self, id: SymbolId) -> Option<&Variable<'a>> {
        match self.items.get(self.symbol(id).item as usize)? {
            Item::Variable(v) => Some(v),
            _ => None,
        }
    }
}
