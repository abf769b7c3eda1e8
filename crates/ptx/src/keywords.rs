//! Closed vocabularies of PTX: opcodes, types, and every modifier word.
//!
//! Each vocabulary is an enum generated together with its spelling, so the
//! lexer's words map to typed values through one table and the printer maps
//! them back through the same one.

use std::collections::HashMap;
use std::sync::OnceLock;

/// A small, fast hasher for the parser's tables: keys are short names and
/// modifier words, hashed eight bytes at a time (multiply-rotate, in the
/// manner of rustc's FxHash). Not meant to resist adversarial collisions.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fnv(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Fnv {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl std::hash::Hasher for Fnv {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

pub(crate) type FnvBuild = std::hash::BuildHasherDefault<Fnv>;
pub(crate) type FnvMap<K, V> = HashMap<K, V, FnvBuild>;

/// Hash of a name or word: eight bytes at a time, with a final mix so that
/// the high bits the table probes with depend on every byte.
/// Hash of a name or word, and its first eight bytes (zero-padded) for a
/// one-word comparison.
#[inline]
fn hash_name(b: &[u8]) -> (u64, u64) {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (b.len() as u64).wrapping_mul(K);
    let mut head = None;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        head.get_or_insert(w);
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    let mut w = 0u64;
    if !rest.is_empty() {
        for (k, &c) in rest.iter().enumerate() {
            w |= (c as u64) << (8 * k);
        }
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    (h ^ (h >> 31), head.unwrap_or(w))
}

/// A name as a table key, with its hash and first eight bytes computed
/// once: most names and words fit in eight bytes, so most comparisons are
/// one word, without a byte loop or a library call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Name<'k> {
    s: &'k str,
    hash: u64,
    head: u64,
}

impl<'k> Name<'k> {
    #[inline]
    fn new(s: &'k str) -> Name<'k> {
        let (hash, head) = hash_name(s.as_bytes());
        Name { s, hash, head }
    }
}

impl PartialEq for Name<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.s.as_bytes(), other.s.as_bytes());
        self.head == other.head && a.len() == b.len() && (a.len() <= 8 || a.get(8..).zip(b.get(8..)).is_some_and(|(x, y)| x == y))
    }
}

impl Eq for Name<'_> {}

impl std::hash::Hash for Name<'_> {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

/// Passes a precomputed [`Name`] hash through.
#[derive(Default, Clone, Copy)]
pub(crate) struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0 = hash_name(bytes).0;
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }
}

/// A map from names (borrowed from the source or static) to small values.
pub(crate) struct NameMap<'k, V>(HashMap<Name<'k>, V, std::hash::BuildHasherDefault<PassThrough>>);

impl<'k, V: Copy> NameMap<'k, V> {
    pub fn new() -> Self {
        NameMap(HashMap::default())
    }
    #[inline]
    pub fn get(&self, name: &str) -> Option<V> {
        // The map is covariant in 'k, so a lookup key may live shorter.
        self.0.get(&Name::new(name)).copied()
    }
    #[inline]
    pub fn insert(&mut self, name: &'k str, v: V) -> Option<V> {
        self.0.insert(Name::new(name), v)
    }
    #[inline]
    pub fn remove(&mut self, name: &'k str) -> Option<V> {
        self.0.remove(&Name::new(name))
    }
    pub fn clear(&mut self) {
        // Clearing writes every control byte of the table's capacity.
        if !self.0.is_empty() {
            self.0.clear();
        }
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn or_insert(&mut self, name: &'k str, v: V) {
        self.0.entry(Name::new(name)).or_insert(v);
    }
}

impl<V: Copy> Default for NameMap<'_, V> {
    fn default() -> Self {
        NameMap::new()
    }
}

macro_rules! vocabulary {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The spelling in PTX source (without a leading dot).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// Instruction opcodes: the first word of an instruction. Words that
    /// follow it (`.sync`, `.async`, `.bulk`...) are modifiers.
    Opcode {
        Abs = "abs", Activemask = "activemask", Add = "add", Addc = "addc",
        Alloca = "alloca", And = "and", Applypriority = "applypriority",
        Atom = "atom", Bar = "bar", Barrier = "barrier", Bfe = "bfe", Bfi = "bfi",
        Bfind = "bfind", Bmsk = "bmsk", Bra = "bra", Brev = "brev", Brkpt = "brkpt",
        Brx = "brx", Call = "call", Clusterlaunchcontrol = "clusterlaunchcontrol",
        Clz = "clz", Cnot = "cnot", Copysign = "copysign", Cos = "cos", Cp = "cp",
        Createpolicy = "createpolicy", Cvt = "cvt", Cvta = "cvta", Discard = "discard",
        Div = "div", Dp2a = "dp2a", Dp4a = "dp4a", Elect = "elect", Ex2 = "ex2",
        Exit = "exit", Fence = "fence", Fma = "fma", Fns = "fns", Getctarank = "getctarank",
        Griddepcontrol = "griddepcontrol", Isspacep = "isspacep", Istypep = "istypep",
        Ld = "ld", Ldmatrix = "ldmatrix", Ldu = "ldu", Lg2 = "lg2", Lop3 = "lop3",
        Mad = "mad", Mad24 = "mad24", Madc = "madc", Mapa = "mapa", Match = "match",
        Max = "max", Mbarrier = "mbarrier", Membar = "membar", Min = "min", Mma = "mma",
        Mov = "mov", Movmatrix = "movmatrix", Mul = "mul", Mul24 = "mul24",
        Multimem = "multimem", Nanosleep = "nanosleep", Neg = "neg", Not = "not",
        Or = "or", Pmevent = "pmevent", Popc = "popc", Prefetch = "prefetch",
        Prefetchu = "prefetchu", Prmt = "prmt", Rcp = "rcp", Red = "red", Redux = "redux",
        Rem = "rem", Ret = "ret", Rsqrt = "rsqrt", Sad = "sad", Selp = "selp", Set = "set",
        Setmaxnreg = "setmaxnreg", Setp = "setp", Shf = "shf", Shfl = "shfl", Shl = "shl",
        Shr = "shr", Sin = "sin", Slct = "slct", Sqrt = "sqrt", St = "st",
        Stackrestore = "stackrestore", Stacksave = "stacksave", Stmatrix = "stmatrix",
        Sub = "sub", Subc = "subc", Suld = "suld", Suq = "suq", Sured = "sured",
        Sust = "sust", Szext = "szext", Tanh = "tanh", Tcgen05 = "tcgen05",
        Tensormap = "tensormap", Testp = "testp", Tex = "tex", Tld4 = "tld4", Trap = "trap",
        Txq = "txq", Vabsdiff = "vabsdiff", Vabsdiff2 = "vabsdiff2", Vabsdiff4 = "vabsdiff4",
        Vadd = "vadd", Vadd2 = "vadd2", Vadd4 = "vadd4", Vavrg2 = "vavrg2", Vavrg4 = "vavrg4",
        Vmad = "vmad", Vmax = "vmax", Vmax2 = "vmax2", Vmax4 = "vmax4", Vmin = "vmin",
        Vmin2 = "vmin2", Vmin4 = "vmin4", Vote = "vote", Vset = "vset", Vset2 = "vset2",
        Vset4 = "vset4", Vshl = "vshl", Vshr = "vshr", Vsub = "vsub", Vsub2 = "vsub2",
        Vsub4 = "vsub4", Wgmma = "wgmma", Wmma = "wmma", Xor = "xor",
    }
}

vocabulary! {
    /// Fundamental and special types.
    Type {
        Pred = "pred", B8 = "b8", B16 = "b16", B32 = "b32", B64 = "b64", B128 = "b128",
        U8 = "u8", U16 = "u16", U32 = "u32", U64 = "u64",
        S8 = "s8", S16 = "s16", S32 = "s32", S64 = "s64",
        F16 = "f16", F16x2 = "f16x2", Bf16 = "bf16", Bf16x2 = "bf16x2", Tf32 = "tf32",
        F32 = "f32", F32x2 = "f32x2", F64 = "f64",
        E4m3 = "e4m3", E5m2 = "e5m2", E4m3x2 = "e4m3x2", E5m2x2 = "e5m2x2",
        E4m3x4 = "e4m3x4", E5m2x4 = "e5m2x4",
        E2m1 = "e2m1", E2m1x2 = "e2m1x2", E2m1x4 = "e2m1x4", E3m2 = "e3m2", E3m2x2 = "e3m2x2",
        E2m3 = "e2m3", E2m3x2 = "e2m3x2", E2m3x4 = "e2m3x4", E3m2x4 = "e3m2x4",
        Ue8m0 = "ue8m0", Ue8m0x2 = "ue8m0x2",
        Ue4m3 = "ue4m3", B1 = "b1", U4 = "u4", S4 = "s4", U2 = "u2", S2 = "s2",
        S16x2 = "s16x2", U16x2 = "u16x2", B1024 = "b1024",
        // Packed matrix element formats of `ldmatrix` and `tcgen05.cp`.
        B8x16 = "b8x16", B6x16P32 = "b6x16_p32", B4x16P64 = "b4x16_p64",
        Texref = "texref", Samplerref = "samplerref", Surfref = "surfref",
    }
}

impl Type {
    /// Size in bytes of a value of this type (predicates count 1).
    pub fn size(self) -> u32 {
        use Type::*;
        match self {
            Pred | B8 | U8 | S8 | E4m3 | E5m2 | E2m1 | E3m2 | E2m3 | Ue8m0 | Ue4m3 | B1 | U4 | S4 | U2 | S2 => 1,
            B16 | U16 | S16 | F16 | Bf16 | E4m3x2 | E5m2x2 | E2m1x2 | E3m2x2 | E2m3x2 | Ue8m0x2 | E2m1x4 => 2,
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 | Tf32 | E4m3x4 | E5m2x4 | E2m3x4 | E3m2x4 | S16x2 | U16x2 => 4,
            B64 | U64 | S64 | F64 | F32x2 | Texref | Samplerref | Surfref => 8,
            B128 | B8x16 | B6x16P32 | B4x16P64 => 16,
            B1024 => 128,
        }
    }

    pub fn bits(self) -> u32 {
        self.size() * 8
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Type::S8 | Type::S16 | Type::S32 | Type::S64)
    }

    pub fn is_float(self) -> bool {
        matches!(self, Type::F16 | Type::Bf16 | Type::F32 | Type::F64 | Type::Tf32)
    }

    pub fn is_integer(self) -> bool {
        use Type::*;
        matches!(self, B8 | B16 | B32 | B64 | B128 | U8 | U16 | U32 | U64 | S8 | S16 | S32 | S64)
    }
}

vocabulary! {
    /// Rounding modifiers, for floats (`.rn`) and for float-to-integer
    /// rounding in `cvt` (`.rni`).
    Rounding {
        Rn = "rn", Rz = "rz", Rm = "rm", Rp = "rp", Rna = "rna", Rs = "rs",
        Rni = "rni", Rzi = "rzi", Rmi = "rmi", Rpi = "rpi",
    }
}

vocabulary! {
    /// State spaces, including the `::` sub-spaces.
    StateSpace {
        Reg = "reg", Sreg = "sreg", Const = "const", Global = "global", Local = "local",
        Param = "param", ParamEntry = "param::entry", ParamFunc = "param::func",
        Shared = "shared", SharedCta = "shared::cta", SharedCluster = "shared::cluster",
        Tex = "tex",
    }
}

vocabulary! {
    Scope { Cta = "cta", Cluster = "cluster", Gpu = "gpu", Sys = "sys" }
}

vocabulary! {
    /// Memory-ordering semantics.
    Semantics {
        Weak = "weak", Relaxed = "relaxed", Acquire = "acquire", Release = "release",
        AcqRel = "acq_rel", Sc = "sc", Volatile = "volatile", Mmio = "mmio",
    }
}

vocabulary! {
    CacheOp { Ca = "ca", Cg = "cg", Cs = "cs", Lu = "lu", Cv = "cv", Wb = "wb", Wt = "wt" }
}

vocabulary! {
    CmpOp {
        Eq = "eq", Ne = "ne", Lt = "lt", Le = "le", Gt = "gt", Ge = "ge",
        Lo = "lo", Ls = "ls", Hi = "hi", Hs = "hs",
        Equ = "equ", Neu = "neu", Ltu = "ltu", Leu = "leu", Gtu = "gtu", Geu = "geu",
        Num = "num", Nan = "nan",
    }
}

vocabulary! {
    /// Every other modifier word. Words that also name an opcode or a
    /// comparison (`.and`, `.min`, `.lo`, `.hi`) are parsed by context.
    /// The list follows the syntax sections of the PTX ISA 9.x instruction
    /// set, family by family.
    Flag {
        // arithmetic
        Ftz = "ftz", Sat = "sat", Approx = "approx", Full = "full", Wide = "wide", Cc = "cc",
        Relu = "relu", NaN = "NaN", Xorsign = "xorsign", AbsMod = "abs", Oob = "oob",
        Satfinite = "satfinite", Shiftamt = "shiftamt", Clamp = "clamp", Wrap = "wrap",
        L = "l", R = "r", Uni = "uni", Noftz = "noftz", Scale = "scale",
        // integer halves (`mul.lo` / `mul.hi`) are flags; `.hi`/`.lo` as comparisons
        // are resolved in setp/set context.
        LoHalf = "lo", HiHalf = "hi",
        // boolean and reduction operations (setp combine, atom/red/redux/bar.red/vote)
        And = "and", Or = "or", Xor = "xor", Popc = "popc", AddOp = "add", Inc = "inc",
        Dec = "dec", Exch = "exch", Cas = "cas", MinOp = "min", MaxOp = "max",
        SubOp = "sub",
        // prmt modes
        F4e = "f4e", B4e = "b4e", Rc8 = "rc8", Ecl = "ecl", Ecr = "ecr", Rc16 = "rc16",
        // shfl / vote / match / activemask
        Up = "up", Down = "down", Bfly = "bfly", Idx = "idx", All = "all", Any = "any",
        Ballot = "ballot", Sync = "sync", Aligned = "aligned",
        // barriers
        Arrive = "arrive", Red = "red", Wait = "wait", Warp = "warp",
        // cvta, isspacep, conversions
        To = "to", Unified = "unified", Nc = "nc", Generic = "generic", Pack = "pack",
        // texture / surface
        D1 = "1d", D2 = "2d", D3 = "3d", A1d = "a1d", A2d = "a2d", Cube = "cube",
        Acube = "acube", D2ms = "2dms", A2dms = "a2dms", Base = "base", Level = "level",
        Grad = "grad", Trap = "trap", Zero = "zero", Bfmt = "b", Pfmt = "p", G = "g",
        WidthQ = "width", HeightQ = "height", DepthQ = "depth",
        ChannelDataType = "channel_data_type", ChannelOrder = "channel_order",
        NormalizedCoords = "normalized_coords", FilterMode = "filter_mode",
        AddrMode0 = "addr_mode_0", AddrMode1 = "addr_mode_1", AddrMode2 = "addr_mode_2",
        ArraySize = "array_size", NumMipmapLevels = "num_mipmap_levels",
        NumSamples = "num_samples", ForceUnnormalizedCoords = "force_unnormalized_coords",
        MemoryLayout = "memory_layout",
        // sampler and texture initializer values (`filter_mode = linear`)
        Nearest = "nearest", Linear = "linear", Mirror = "mirror", ClampOgl = "clamp_ogl",
        ClampToEdge = "clamp_to_edge", ClampToBorder = "clamp_to_border",
        // memory hints
        L1EvictNormal = "L1::evict_normal", L1EvictUnchanged = "L1::evict_unchanged",
        L1EvictFirst = "L1::evict_first", L1EvictLast = "L1::evict_last",
        L1NoAllocate = "L1::no_allocate", L2EvictNormal = "L2::evict_normal",
        L2EvictFirst = "L2::evict_first", L2EvictLast = "L2::evict_last",
        L2EvictUnchanged = "L2::evict_unchanged",
        L2CacheHint = "L2::cache_hint", L2B64 = "L2::64B", L2B128 = "L2::128B",
        L2B256 = "L2::256B", L1 = "L1", L2 = "L2", Fractional = "fractional", Range = "range",
        CvtOp = "cvt",
        LevelEvictPriority = "level::eviction_priority", LevelPrefetchSize = "level::prefetch_size",
        LevelCacheHint = "level::cache_hint",
        // async copies, bulk copies, tensors, mbarrier
        Async = "async", Bulk = "bulk", Tensor = "tensor", Reduce = "reduce",
        CommitGroup = "commit_group", WaitGroup = "wait_group", WaitAll = "wait_all",
        Read = "read", MbarrierCompleteTxBytes = "mbarrier::complete_tx::bytes",
        MbarrierArriveOne = "mbarrier::arrive::one", Mbarrier = "mbarrier", Noinc = "noinc",
        BulkGroup = "bulk_group", CompleteTx = "complete_tx", ExpectTx = "expect_tx",
        Bytes = "bytes", TryWait = "try_wait", TestWait = "test_wait", Init = "init",
        Inval = "inval", ArriveDrop = "arrive_drop", PendingCount = "pending_count",
        Parity = "parity", NoComplete = "noComplete", MulticastCluster = "multicast::cluster",
        MulticastClusterAll = "multicast::cluster::all",
        Tile = "tile", Im2col = "im2col", Im2colW = "im2col::w", Im2colW128 = "im2col::w::128",
        Im2colNoOffs = "im2col_no_offs", Gather4 = "gather4",
        Scatter4 = "scatter4", TileGather4 = "tile::gather4", TileScatter4 = "tile::scatter4",
        D4 = "4d", D5 = "5d", Prefetch = "prefetch",
        CpMask = "cp_mask", Ignore = "ignore",
        // fences and proxies
        Proxy = "proxy", Alias = "alias", Tensormap = "tensormap", ProxyKind = "proxykind",
        Cp = "cp", Fenceproxy = "fenceproxy", CpFenceproxy = "cp_fenceproxy", Replace = "replace",
        SyncRestrict = "sync_restrict", MbarrierInit = "mbarrier_init",
        ToProxyKind = "to_proxykind", Gl = "gl", AsyncGeneric = "async::generic",
        TensormapGeneric = "tensormap::generic",
        SyncRestrictSharedCluster = "sync_restrict::shared::cluster",
        SyncRestrictSharedCta = "sync_restrict::shared::cta",
        // tensormap.replace fields
        GlobalAddress = "global_address", Rank = "rank", BoxDim = "box_dim",
        GlobalDim = "global_dim", GlobalStride = "global_stride",
        ElementStride = "element_stride", Elemtype = "elemtype",
        InterleaveLayout = "interleave_layout", SwizzleMode = "swizzle_mode",
        SwizzleAtomicity = "swizzle_atomicity", FillMode = "fill_mode",
        // warp matrix
        Load = "load", Store = "store", MmaOp = "mma", MmaAsync = "mma_async", Sp = "sp",
        SpOrderedMetadata = "sp::ordered_metadata", Row = "row", Col = "col", A = "a",
        C = "c", D = "d", Trans = "trans", X1 = "x1", X2 = "x2", X4 = "x4",
        X8 = "x8", X16 = "x16", X32 = "x32", X64 = "x64", X128 = "x128", Num = "num",
        Fence = "fence", Kind = "kind", BlockScale = "block_scale",
        KindF16 = "kind::f16", KindTf32 = "kind::tf32", KindF8f6f4 = "kind::f8f6f4",
        KindI8 = "kind::i8", KindMxf8f6f4 = "kind::mxf8f6f4", KindMxf4 = "kind::mxf4",
        KindMxf4nvf4 = "kind::mxf4nvf4",
        ScaleVec1X = "scale_vec::1X", ScaleVec2X = "scale_vec::2X", ScaleVec4X = "scale_vec::4X",
        Block16 = "block16", Block32 = "block32",
        // tcgen05 and cluster launch control
        Alloc = "alloc", Dealloc = "dealloc", RelinquishAllocPermit = "relinquish_alloc_permit",
        Shift = "shift", Commit = "commit", Ws = "ws", CtaGroup1 = "cta_group::1",
        CtaGroup2 = "cta_group::2", TryCancel = "try_cancel", QueryCancel = "query_cancel",
        IsCanceled = "is_canceled", GetFirstCtaid = "get_first_ctaid",
        GetFirstCtaidX = "get_first_ctaid::x", GetFirstCtaidY = "get_first_ctaid::y",
        GetFirstCtaidZ = "get_first_ctaid::z",
        BeforeThreadSync = "before_thread_sync", AfterThreadSync = "after_thread_sync",
        FenceBeforeThreadSync = "fence::before_thread_sync",
        FenceAfterThreadSync = "fence::after_thread_sync",
        LdOp = "ld", StOp = "st", WaitLd = "wait::ld", WaitSt = "wait::st", Ashift = "ashift",
        Pack16b = "pack::16b", Unpack16b = "unpack::16b",
        Shape16x64b = "16x64b", Shape16x128b = "16x128b", Shape16x256b = "16x256b",
        Shape32x32b = "32x32b", Shape16x32bx2 = "16x32bx2", Shape128x256b = "128x256b",
        Shape4x256b = "4x256b", Shape128x128b = "128x128b", Shape64x128b = "64x128b",
        Shape32x128b = "32x128b",
        Warpx2_02_13 = "warpx2::02_13", Warpx2_01_23 = "warpx2::01_23", Warpx4 = "warpx4",
        CollectorAFill = "collector::a::fill", CollectorAUse = "collector::a::use",
        CollectorALastuse = "collector::a::lastuse", CollectorADiscard = "collector::a::discard",
        CollectorB0Fill = "collector::b0::fill", CollectorB0Use = "collector::b0::use",
        CollectorB0Lastuse = "collector::b0::lastuse",
        CollectorB0Discard = "collector::b0::discard",
        CollectorB1Fill = "collector::b1::fill", CollectorB1Use = "collector::b1::use",
        CollectorB1Lastuse = "collector::b1::lastuse",
        CollectorB1Discard = "collector::b1::discard",
        CollectorB2Fill = "collector::b2::fill", CollectorB2Use = "collector::b2::use",
        CollectorB2Lastuse = "collector::b2::lastuse",
        CollectorB2Discard = "collector::b2::discard",
        CollectorB3Fill = "collector::b3::fill", CollectorB3Use = "collector::b3::use",
        CollectorB3Lastuse = "collector::b3::lastuse",
        CollectorB3Discard = "collector::b3::discard",
        // multimem
        AccF32 = "acc::f32", AccF16 = "acc::f16",
        // video instructions
        Shr7 = "shr7", Shr15 = "shr15", Po = "po",
        // misc
        LaunchDependents = "launch_dependents", Mask = "mask",
        Readonly = "readonly", Noreturn = "noreturn", Multicast = "multicast",
        Partial = "partial", LdReduce = "ld_reduce",
        Uniform = "uniform", NonUniform = "non_uniform",
        Ceil = "ceil", Floor = "floor",
        // testp
        Finite = "finite", Infinite = "infinite", Number = "number", Notanumber = "notanumber",
        Normal = "normal", Subnormal = "subnormal",
    }
}

/// Sorted-by-use lookup tables built once per process.
pub(crate) struct Tables {
    pub opcodes: NameMap<'static, Opcode>,
    pub types: NameMap<'static, Type>,
    pub spaces: NameMap<'static, StateSpace>,
    pub cmp_ops: NameMap<'static, CmpOp>,
    pub flags: NameMap<'static, Flag>,
    /// Every modifier word with its reading outside comparing instructions
    /// (where `.lo`/`.hi` are halves, not comparisons): one lookup per word.
    pub modifiers: NameMap<'static, crate::ast::Modifier>,
}

fn table<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> NameMap<'static, T> {
    let mut t = NameMap::new();
    for &v in all {
        t.insert(name(v), v);
    }
    t
}

pub(crate) fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| Tables {
        opcodes: table(Opcode::ALL, Opcode::as_str),
        types: table(Type::ALL, Type::as_str),
        spaces: table(StateSpace::ALL, StateSpace::as_str),
        cmp_ops: table(CmpOp::ALL, CmpOp::as_str),
        flags: table(Flag::ALL, Flag::as_str),
        modifiers: modifier_table(),
    })
}

fn modifier_table() -> NameMap<'static, crate::ast::Modifier> {
    use crate::ast::Modifier as M;
    let mut t = NameMap::new();
    // Earlier kinds win when a word has several readings.
    let mut add = |word: &'static str, m: M| t.or_insert(word, m);
    Type::ALL.iter().for_each(|&v| add(v.as_str(), M::Type(v)));
    Flag::ALL.iter().for_each(|&v| add(v.as_str(), M::Flag(v)));
    Rounding::ALL.iter().for_each(|&v| add(v.as_str(), M::Round(v)));
    StateSpace::ALL.iter().for_each(|&v| add(v.as_str(), M::Space(v)));
    Scope::ALL.iter().for_each(|&v| add(v.as_str(), M::Scope(v)));
    Semantics::ALL.iter().for_each(|&v| add(v.as_str(), M::Sem(v)));
    CacheOp::ALL.iter().for_each(|&v| add(v.as_str(), M::Cache(v)));
    add("v2", M::Vec(2));
    add("v4", M::Vec(4));
    add("v8", M::Vec(8));
    t
}

impl Opcode {
    pub fn from_word(word: &str) -> Option<Opcode> {
        tables().opcodes.get(word)
    }
}

impl Type {
    pub fn from_word(word: &str) -> Option<Type> {
        tables().types.get(word)
    }
}
