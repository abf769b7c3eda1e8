//! Linking several PTX modules into one, as NVIDIA's device linker does for
//! relocatable device code (`cuLinkComplete`, the JIT link of an
//! `nvcc -rdc=true` program).
//!
//! The result is one module the single-module pipeline compiles:
//!
//! - `.extern` declarations (`.extern .func`, `.extern .global/.const/.shared`)
//!   are resolved by name against the `.visible`, `.weak` or `.common`
//!   definitions of the other inputs. A strong (`.visible`) definition wins
//!   over weak ones; of several weak definitions the first is kept; of
//!   several `.common` variables the largest. Two strong definitions of one
//!   name and a reference nothing defines are errors. Names the caller
//!   provides itself (`printf`'s `vprintf`, `malloc`, ...) and unsized
//!   `.extern .shared` arrays (dynamic shared memory) need no definition.
//! - Module-local symbols (no linkage directive) of different inputs never
//!   merge: one whose name another input also uses is renamed.
//! - Lazy inputs (the members of an archive) are linked only when they define
//!   a name still undefined, repeatedly, as a static linker treats `ar`
//!   archives.
//! - The `.version` is the highest of the inputs', the `.target` that of the
//!   input with the highest `sm_NN`; inputs of different `.address_size`
//!   cannot be linked.
//!
//! `.file` numbers are renumbered so the inputs' line information stays
//! apart; `.section` debug data is dropped when several inputs are linked
//! (its labels would collide).

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::ast::*;

/// One module to link.
#[derive(Clone, Copy, Debug)]
pub struct LinkInput<'s, 'a> {
    /// The name errors and the log use (a file name, "input 2", an archive
    /// member as `lib.a:member.o`).
    pub name: &'s str,
    pub module: &'s Module<'a>,
    /// Linked only when it defines a name the others leave undefined.
    pub lazy: bool,
}

/// Functions the CUDA driver supplies to every module: PTX calls them
/// without defining them (`printf`, `malloc`, `free`, `assert`, and the
/// device runtime's functions that anycuda's compiler lowers to runtime
/// calls: [`DEVICE_RUNTIME_PROVIDED`]).
pub const DRIVER_FUNCTIONS: &[&str] = &[
    "vprintf",
    "malloc",
    "free",
    "__assertfail",
    "__cudaCDP2GetParameterBuffer",
    "cudaGetParameterBuffer",
    "__cudaCDP2GetParameterBufferV2",
    "cudaGetParameterBufferV2",
    "__cudaCDP2LaunchDevice",
    "cudaLaunchDevice",
    "__cudaCDP2LaunchDevice_ptsz",
    "cudaLaunchDevice_ptsz",
    "__cudaCDP2LaunchDeviceV2",
    "cudaLaunchDeviceV2",
    "__cudaCDP2LaunchDeviceV2_ptsz",
    "cudaLaunchDeviceV2_ptsz",
    "__cudaCDP2StreamCreateWithFlags",
    "cudaStreamCreateWithFlags",
    "__cudaCDP2StreamDestroy",
    "cudaStreamDestroy",
    "__cudaCDP2StreamWaitEvent",
    "cudaStreamWaitEvent",
    "__cudaCDP2StreamWaitEvent_ptsz",
    "cudaStreamWaitEvent_ptsz",
    "__cudaCDP2EventCreateWithFlags",
    "cudaEventCreateWithFlags",
    "__cudaCDP2EventRecord",
    "cudaEventRecord",
    "__cudaCDP2EventRecord_ptsz",
    "cudaEventRecord_ptsz",
    "__cudaCDP2EventRecordWithFlags",
    "cudaEventRecordWithFlags",
    "__cudaCDP2EventRecordWithFlags_ptsz",
    "cudaEventRecordWithFlags_ptsz",
    "__cudaCDP2EventDestroy",
    "cudaEventDestroy",
    "__cudaCDP2GetLastError",
    "cudaGetLastError",
    "__cudaCDP2PeekAtLastError",
    "cudaPeekAtLastError",
    "__cudaCDP2GetErrorString",
    "cudaGetErrorString",
    "__cudaCDP2GetErrorName",
    "cudaGetErrorName",
    "__cudaCDP2Malloc",
    "cudaMalloc",
    "__cudaCDP2Free",
    "cudaFree",
    "__cudaCDP2GetDevice",
    "cudaGetDevice",
    "__cudaCDP2GetDeviceCount",
    "cudaGetDeviceCount",
    "__cudaCDP2DeviceGetAttribute",
    "cudaDeviceGetAttribute",
    "__cudaCDP2DeviceGetLimit",
    "cudaDeviceGetLimit",
    "__cudaCDP2FuncGetAttributes",
    "cudaFuncGetAttributes",
    "__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "__cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "__cudaCDP2RuntimeGetVersion",
    "cudaRuntimeGetVersion",
    "__cudaCDP2MemcpyAsync",
    "cudaMemcpyAsync",
    "__cudaCDP2MemcpyAsync_ptsz",
    "cudaMemcpyAsync_ptsz",
    "__cudaCDP2Memcpy2DAsync",
    "cudaMemcpy2DAsync",
    "__cudaCDP2Memcpy2DAsync_ptsz",
    "cudaMemcpy2DAsync_ptsz",
    "__cudaCDP2MemsetAsync",
    "cudaMemsetAsync",
    "__cudaCDP2MemsetAsync_ptsz",
    "cudaMemsetAsync_ptsz",
    "__cudaCDP2Memset2DAsync",
    "cudaMemset2DAsync",
    "__cudaCDP2Memset2DAsync_ptsz",
    "cudaMemset2DAsync_ptsz",
    "__cudaCDP2Memcpy3DAsync",
    "cudaMemcpy3DAsync",
    "__cudaCDP2Memcpy3DAsync_ptsz",
    "cudaMemcpy3DAsync_ptsz",
    "__cudaCDP2Memset3DAsync",
    "cudaMemset3DAsync",
    "__cudaCDP2Memset3DAsync_ptsz",
    "cudaMemset3DAsync_ptsz",
];

/// The device runtime's functions among [`DRIVER_FUNCTIONS`] (the
/// compiler's `cpu_abi::devrt` table, whose tests check the two agree).
pub const DEVICE_RUNTIME_PROVIDED: &[&str] = DRIVER_FUNCTIONS.split_at(4).1;

#[derive(Clone, Copy, Debug, Default)]
pub struct LinkOptions<'s> {
    /// Functions that need no definition: the caller supplies them.
    pub provided: &'s [&'s str],
}

/// The linked module as PTX text, and what the linker did.
#[derive(Clone, Debug, PartialEq)]
pub struct Linked {
    pub ptx: String,
    /// Indices of the inputs that were linked (every eager one, and the lazy
    /// ones that were needed), in input order.
    pub included: Vec<usize>,
    /// One line per decision worth telling (weak definitions dropped, local
    /// names renamed, archive members pulled in).
    pub log: Vec<String>,
}

/// Why a link failed: one line per error, in nvlink's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkError {
    pub errors: Vec<String>,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "error   : {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LinkError {}

/// Device-runtime functions (`libcudadevrt`, dynamic parallelism). A
/// reference to one of them that nothing defines gets an error saying so.
const DEVICE_RUNTIME: &[&str] = &[
    "cudaGetParameterBuffer",
    "cudaGetParameterBufferV2",
    "cudaLaunchDevice",
    "cudaLaunchDeviceV2",
    "cudaDeviceSynchronize",
    "cudaStreamCreateWithFlags",
    "cudaStreamDestroy",
    "cudaEventCreateWithFlags",
    "cudaEventRecord",
    "cudaEventDestroy",
    "cudaGetLastError",
    "cudaPeekAtLastError",
    "cudaMalloc",
    "cudaFree",
    "cudaGetDevice",
    "cudaDeviceGetAttribute",
    "cudaCGGetIntrinsicHandle",
    "cudaCGSynchronize",
    "cudaCGSynchronizeGrid",
    "cudaCGGetSize",
    "cudaCGGetRank",
];

fn device_runtime(name: &str) -> bool {
    DEVICE_RUNTIME.contains(&name)
        || name.starts_with("__cudaCDP")
        || name.starts_with("cudaCDP")
        || name.starts_with("cnp")
        || name.starts_with("__cuda_syscall_")
}

/// Whether `m` is CUDA's device runtime library (`libcudadevrt`, which nvcc
/// links into every `-rdc=true` program): it defines the device-side
/// launch functions. Linking it is only needed when code
/// calls into it, so callers link it lazily.
pub fn is_device_runtime(m: &Module) -> bool {
    ["cudaGetParameterBufferV2", "cudaLaunchDeviceV2"]
        .iter()
        .all(|n| m.symbol_by_name(n).and_then(|s| m.function(s)).is_some_and(|f| f.body.is_some()))
}

/// [`is_device_runtime`] on the PTX text, without parsing it: whether the
/// text defines (`.visible` or `.weak` `.func` with a body) both
/// `cudaGetParameterBufferV2` and `cudaLaunchDeviceV2`. libcudadevrt's PTX
/// is 763 KB, which takes 50 ms to parse, and the device runtime's
/// functions are lowered by the compiler ([`DEVICE_RUNTIME_PROVIDED`]), so
/// callers leave such an input out of a link without parsing it.
pub fn is_device_runtime_text(ptx: &str) -> bool {
    ["cudaGetParameterBufferV2", "cudaLaunchDeviceV2"].iter().all(|n| defines_function(ptx, n))
}

/// Whether `ptx` holds a definition of function `name`, judged from the
/// text around each occurrence of the name as a whole identifier followed
/// by `(`: the last linkage directive before it in its statement is
/// `.visible` or `.weak`, followed by `.func`, and a `{` comes before any
/// `;` after it.
fn defines_function(ptx: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%';
    let bytes = ptx.as_bytes();
    ptx.match_indices(name).any(|(at, _)| {
        let end = at + name.len();
        let before_ok = ptx[..at].chars().next_back().is_none_or(|c| !ident(c));
        let after = ptx[end..].trim_start();
        if !before_ok || !after.starts_with('(') || ptx[end..].chars().next().is_some_and(ident) {
            return false;
        }
        let start = bytes[..at].iter().rposition(|&b| b == b';' || b == b'}').map_or(0, |p| p + 1);
        let head = strip_comments(&ptx[start..at]);
        // The statement's words from its last linkage directive on.
        let words: Vec<&str> = head.split_whitespace().collect();
        let Some(l) = words.iter().rposition(|w| matches!(*w, ".visible" | ".weak" | ".extern")) else { return false };
        if words[l] == ".extern" || !words[l..].contains(&".func") {
            return false;
        }
        match (after.find('{'), after.find(';')) {
            (Some(b), Some(s)) => b < s,
            (Some(_), None) => true,
            _ => false,
        }
    })
}

/// `text` without `//` line comments (the ones nvcc writes between
/// functions, such as `// .globl name`).
fn strip_comments(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Strength {
    Strong,
    Weak,
    /// `.common`: the largest wins.
    Common(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Defined here and visible to the others.
    Def(Strength),
    /// Defined here, seen by nobody else.
    Local,
    /// Declared here, defined elsewhere.
    Ref,
    /// An unsized `.extern .shared` array: the dynamic shared memory window.
    DynShared,
}

fn role(m: &Module, id: SymbolId) -> Role {
    let sym = m.symbol(id);
    match sym.kind {
        SymbolKind::Function => match m.function(id) {
            Some(f) if f.body.is_some() => match f.linkage {
                Some(Linkage::Weak) | Some(Linkage::Common) => Role::Def(Strength::Weak),
                Some(Linkage::Visible) | Some(Linkage::Extern) => Role::Def(Strength::Strong),
                None => Role::Local,
            },
            _ => Role::Ref,
        },
        SymbolKind::Variable => match m.variable(id) {
            Some(v) => match v.decl.linkage {
                Some(Linkage::Extern) if v.decl.space == StateSpace::Shared && v.decl.size().is_none() => Role::DynShared,
                Some(Linkage::Extern) => Role::Ref,
                Some(Linkage::Visible) => Role::Def(Strength::Strong),
                Some(Linkage::Weak) => Role::Def(Strength::Weak),
                Some(Linkage::Common) => Role::Def(Strength::Common(v.decl.size().unwrap_or(0))),
                None => Role::Local,
            },
            None => Role::Ref,
        },
    }
}

/// Which definition of a name the link keeps.
#[derive(Clone, Copy, Debug)]
struct Winner {
    input: usize,
    symbol: SymbolId,
    strength: Strength,
    kind: SymbolKind,
}

/// anycuda's device library: definitions, in PTX, of functions of CUDA's
/// device runtime (libcudadevrt) that are plain device code: the
/// cooperative-groups handle and grid barrier that numba-cuda's
/// `cg.this_grid().sync()` calls. [`link`] adds it when an input calls one
/// of [`DEVICE_LIBRARY_FUNCTIONS`] that no input defines.
pub const DEVICE_LIBRARY: &str = include_str!("device_library.ptx");

/// The functions [`DEVICE_LIBRARY`] defines.
pub const DEVICE_LIBRARY_FUNCTIONS: &[&str] = &["cudaCGGetIntrinsicHandle", "cudaCGSynchronize"];

/// The name of [`DEVICE_LIBRARY`] in link logs and errors.
const DEVICE_LIBRARY_NAME: &str = "anycuda's device library";

/// Whether PTX text may call a function of [`DEVICE_LIBRARY`] (judged from
/// the text, without parsing it): such a module must go through [`link`]
/// even when it is alone.
pub fn may_use_device_library(ptx: &str) -> bool {
    DEVICE_LIBRARY_FUNCTIONS.iter().any(|f| ptx.contains(f))
}

/// Links `inputs` into one module. When an input calls a function of
/// [`DEVICE_LIBRARY`] that no input defines, the library is linked too
/// (it is not one of [`Linked::included`], and it never raises the
/// result's `.version` or `.target`).
pub fn link(inputs: &[LinkInput<'_, '_>], options: &LinkOptions<'_>) -> Result<Linked, LinkError> {
    let calls_library = inputs.iter().any(|i| {
        DEVICE_LIBRARY_FUNCTIONS
            .iter()
            .any(|f| i.module.symbol_by_name(f).is_some_and(|s| i.module.function(s).is_some_and(|func| func.body.is_none())))
    });
    if !calls_library {
        return link_inputs(inputs, inputs.len(), options);
    }
    let library = match crate::parse(DEVICE_LIBRARY) {
        Ok(m) => m,
        Err(e) => return Err(LinkError { errors: vec![format!("{DEVICE_LIBRARY_NAME} does not parse: {e}")] }),
    };
    let mut all = inputs.to_vec();
    all.push(LinkInput { name: DEVICE_LIBRARY_NAME, module: &library, lazy: true });
    let mut linked = link_inputs(&all, inputs.len(), options)?;
    linked.included.retain(|&i| i < inputs.len());
    Ok(linked)
}

/// [`link`] of `inputs`, of which the first `user_inputs` are the caller's
/// (only they choose the `.version` and `.target`).
fn link_inputs(inputs: &[LinkInput<'_, '_>], user_inputs: usize, options: &LinkOptions<'_>) -> Result<Linked, LinkError> {
    let mut log = Vec::new();
    let roles: Vec<Vec<Role>> =
        inputs.iter().map(|i| (0..i.module.symbols.len() as SymbolId).map(|s| role(i.module, s)).collect()).collect();
    let included = select_inputs(inputs, &roles, options, &mut log);

    let mut errors = Vec::new();
    let Some(&first) = included.first() else {
        return Err(LinkError { errors: vec!["nothing to link: no input".into()] });
    };
    // Address size and the highest version and target.
    let address_size = inputs[first].module.address_size;
    for &i in &included {
        let m = inputs[i].module;
        if m.address_size != address_size {
            errors.push(format!(
                "Input '{}' has address size {} but '{}' has {}: modules of different address sizes cannot be linked",
                inputs[i].name, m.address_size, inputs[first].name, address_size
            ));
        }
    }
    let users = || included.iter().copied().filter(|&i| i < user_inputs);
    let version = users().map(|i| inputs[i].module.version).max_by_key(|v| (v.major, v.minor)).unwrap_or_default();
    let target_input = users().max_by_key(|&i| (inputs[i].module.target.sm().unwrap_or(0), std::cmp::Reverse(i))).unwrap_or(first);

    // Resolution of the names shared between inputs.
    let mut winners: HashMap<&str, Winner> = HashMap::new();
    for &i in &included {
        let m = inputs[i].module;
        for (s, role) in roles[i].iter().enumerate() {
            let Role::Def(strength) = *role else { continue };
            let sym = m.symbol(s as SymbolId);
            let new = Winner { input: i, symbol: s as SymbolId, strength, kind: sym.kind };
            let Some(w) = winners.get_mut(sym.name) else {
                winners.insert(sym.name, new);
                continue;
            };
            if w.kind != sym.kind {
                errors.push(format!(
                    "'{}' is a {} in '{}' but a {} in '{}'",
                    sym.name,
                    kind_name(sym.kind),
                    inputs[i].name,
                    kind_name(w.kind),
                    inputs[w.input].name
                ));
                continue;
            }
            match (w.strength, strength) {
                (Strength::Strong, Strength::Strong) => errors.push(format!(
                    "Multiple definition of '{}' in '{}', first defined in '{}'",
                    sym.name, inputs[i].name, inputs[w.input].name
                )),
                (Strength::Strong, _) => log.push(format!(
                    "'{}': the definition in '{}' is overridden by the one in '{}'",
                    sym.name, inputs[i].name, inputs[w.input].name
                )),
                (_, Strength::Strong) => {
                    log.push(format!(
                        "'{}': the definition in '{}' is overridden by the one in '{}'",
                        sym.name, inputs[w.input].name, inputs[i].name
                    ));
                    *w = new;
                }
                (Strength::Common(a), Strength::Common(b)) if b > a => {
                    log.push(format!(
                        "'{}': the common variable of '{}' ({b} bytes) replaces the smaller one of '{}'",
                        sym.name, inputs[i].name, inputs[w.input].name
                    ));
                    *w = new;
                }
                _ => log.push(format!(
                    "'{}': the weak definition in '{}' is dropped; the one in '{}' is kept",
                    sym.name, inputs[i].name, inputs[w.input].name
                )),
            }
        }
    }
    for &i in &included {
        let m = inputs[i].module;
        for (s, role) in roles[i].iter().enumerate() {
            if *role != Role::Ref {
                continue;
            }
            let sym = m.symbol(s as SymbolId);
            match winners.get(sym.name) {
                Some(w) if w.kind != sym.kind => errors.push(format!(
                    "'{}' is declared as a {} in '{}' but defined as a {} in '{}'",
                    sym.name,
                    kind_name(sym.kind),
                    inputs[i].name,
                    kind_name(w.kind),
                    inputs[w.input].name
                )),
                Some(_) => {}
                None if sym.kind == SymbolKind::Function && options.provided.contains(&sym.name) => {}
                None if device_runtime(sym.name) => errors.push(format!(
                    "Undefined reference to '{}' in '{}': it is a CUDA device runtime function (libcudadevrt, dynamic parallelism), which anycuda does not provide yet",
                    sym.name, inputs[i].name
                )),
                None => errors.push(format!("Undefined reference to '{}' in '{}'", sym.name, inputs[i].name)),
            }
        }
    }
    if !errors.is_empty() {
        return Err(LinkError { errors });
    }

    // Names: a module-local symbol keeps its name unless a global symbol or
    // an earlier input's local one has it.
    let mut taken: HashSet<&str> = HashSet::new();
    let mut global_names: HashSet<&str> = HashSet::new();
    for &i in &included {
        for (s, sym) in inputs[i].module.symbols.iter().enumerate() {
            taken.insert(sym.name);
            if roles[i][s] != Role::Local {
                global_names.insert(sym.name);
            }
        }
    }
    let mut claimed: HashSet<&str> = HashSet::new();
    let mut fresh: HashSet<String> = HashSet::new();
    let mut renamed: Vec<Vec<Option<String>>> = vec![Vec::new(); inputs.len()];
    for &i in &included {
        let m = inputs[i].module;
        renamed[i] = roles[i]
            .iter()
            .enumerate()
            .map(|(s, role)| {
                let name = m.symbol(s as SymbolId).name;
                if *role != Role::Local || (!global_names.contains(name) && claimed.insert(name)) {
                    return None;
                }
                let mut k = i;
                loop {
                    let candidate = format!("{name}_{k}");
                    if !taken.contains(candidate.as_str()) && !fresh.contains(&candidate) {
                        fresh.insert(candidate.clone());
                        log.push(format!("'{name}' of '{}' is local to it: renamed to '{candidate}'", inputs[i].name));
                        return Some(candidate);
                    }
                    k += inputs.len();
                }
            })
            .collect();
    }

    let mut merger = Merger {
        symbols: Vec::new(),
        globals: HashMap::new(),
        declared: HashSet::new(),
        defined: HashSet::new(),
        items: Vec::new(),
        def_item: HashMap::new(),
        decl_item: HashMap::new(),
        pragmas: HashSet::new(),
    };
    let several = included.len() > 1;
    let mut file_base = 0u32;
    // Per input: old symbol id -> merged id.
    let mut maps: Vec<Vec<SymbolId>> = vec![Vec::new(); inputs.len()];
    for &i in &included {
        let m = inputs[i].module;
        maps[i] = m
            .symbols
            .iter()
            .enumerate()
            .map(|(s, sym)| match &renamed[i][s] {
                Some(n) => merger.local(n.as_str(), sym.kind),
                None if roles[i][s] == Role::Local => merger.local(sym.name, sym.kind),
                None => merger.global(sym.name, sym.kind),
            })
            .collect();
    }
    // A definition the link replaced by another input's.
    let dropped = |i: usize, k: usize, s: SymbolId| {
        let m = inputs[i].module;
        matches!(roles[i][s as usize], Role::Def(_))
            && m.symbol(s).item as usize == k
            && winners.get(m.symbol(s).name).is_some_and(|w| (w.input, w.symbol) != (i, s))
    };

    // Module-level variables first, each after the variables its
    // initializer names: a variable is then defined before any function
    // uses it, and `.extern` declarations of variables another input
    // defines are not needed.
    let mut vars: Vec<(SymbolId, Variable)> = Vec::new();
    let mut fn_protos: Vec<SymbolId> = Vec::new();
    for &i in &included {
        let m = inputs[i].module;
        let map = &maps[i];
        for item in &m.items {
            match item {
                Item::File { index, name, extra } => merger.items.push(Item::File { index: index + file_base, name, extra: extra.clone() }),
                Item::Pragma(p) if merger.pragmas.insert(*p) => merger.items.push(Item::Pragma(p)),
                _ => {}
            }
        }
        for (k, item) in m.items.iter().enumerate() {
            let Item::Variable(v) = item else { continue };
            let orig = v.symbol;
            let id = map[orig as usize];
            let role = roles[i][orig as usize];
            let is_decl = matches!(role, Role::Ref | Role::DynShared) || m.symbol(orig).item as usize != k;
            // Declarations are only kept for names nothing defines
            // (dynamic shared memory), once.
            if dropped(i, k, orig) || (is_decl && (role != Role::DynShared || vars.iter().any(|(s, _)| *s == id))) {
                continue;
            }
            let mut v = v.clone();
            v.symbol = id;
            v.decl.name = merger.symbols[id as usize].name;
            if let Some(init) = &mut v.decl.init {
                remap_init(init, map);
                collect_functions(init, &merger.symbols, &mut fn_protos);
            }
            vars.push((id, v));
        }
        file_base += m.items.iter().filter_map(|it| if let Item::File { index, .. } = it { Some(*index) } else { None }).max().unwrap_or(0);
    }
    // Functions an initializer takes the address of are declared first.
    let mut proto_done: HashSet<SymbolId> = HashSet::new();
    for &i in &included {
        let m = inputs[i].module;
        for (k, item) in m.items.iter().enumerate() {
            let Item::Function(f) = item else { continue };
            let id = maps[i][f.symbol as usize];
            if !fn_protos.contains(&id) || proto_done.contains(&id) || f.body.is_some() && dropped(i, k, f.symbol) {
                continue;
            }
            proto_done.insert(id);
            let mut f = (**f).clone();
            f.symbol = id;
            f.name = merger.symbols[id as usize].name;
            f.body = None;
            if f.linkage.is_some() {
                f.linkage = Some(Linkage::Extern);
            }
            merger.push_decl(id, Item::Function(Box::new(f)));
        }
    }
    for (id, v) in order_variables(vars) {
        if v.decl.linkage == Some(Linkage::Extern) {
            merger.push_decl(id, Item::Variable(v));
        } else {
            merger.push_def(id, Item::Variable(v));
        }
    }

    // Then the functions, input by input.
    file_base = 0;
    for &i in &included {
        let m = inputs[i].module;
        let map = &maps[i];
        for (k, item) in m.items.iter().enumerate() {
            match item {
                Item::Function(f) => {
                    let dropped = dropped(i, k, f.symbol);
                    let id = map[f.symbol as usize];
                    let mut f = (**f).clone();
                    f.symbol = id;
                    f.name = merger.symbols[id as usize].name;
                    if dropped || f.body.is_none() {
                        if merger.declared.contains(&id) || merger.defined.contains(&id) {
                            continue;
                        }
                        if dropped {
                            f.body = None;
                            f.linkage = Some(Linkage::Extern);
                        }
                        merger.push_decl(id, Item::Function(Box::new(f)));
                        continue;
                    }
                    if let Some(body) = &mut f.body {
                        remap_body(body, map, file_base);
                    }
                    for v in &mut f.vars {
                        if let Some(init) = &mut v.init {
                            remap_init(init, map);
                        }
                    }
                    merger.push_def(id, Item::Function(Box::new(f)));
                }
                Item::Section { name, body } => {
                    if !several {
                        merger.items.push(Item::Section { name, body });
                    }
                }
                Item::Alias { alias, target } => {
                    merger.items.push(Item::Alias { alias: map[*alias as usize], target: map[*target as usize] });
                }
                Item::Variable(_) | Item::File { .. } | Item::Pragma(_) => {}
            }
        }
        file_base += m.items.iter().filter_map(|it| if let Item::File { index, .. } = it { Some(*index) } else { None }).max().unwrap_or(0);
    }
    if several && included.iter().any(|&i| inputs[i].module.items.iter().any(|it| matches!(it, Item::Section { .. }))) {
        log.push("debug sections (.section) of the inputs are dropped: their labels would collide".into());
    }
    for (id, sym) in merger.symbols.iter_mut().enumerate() {
        let id = id as SymbolId;
        if let Some(&k) = merger.def_item.get(&id).or_else(|| merger.decl_item.get(&id)) {
            sym.item = k;
        }
    }
    let merged =
        Module { version, target: inputs[target_input].module.target.clone(), address_size, items: merger.items, symbols: merger.symbols };
    Ok(Linked { ptx: crate::print(&merged), included, log })
}

fn kind_name(k: SymbolKind) -> &'static str {
    match k {
        SymbolKind::Function => "function",
        SymbolKind::Variable => "variable",
    }
}

/// The eager inputs, then the lazy ones that define something still
/// undefined, until none does.
fn select_inputs(inputs: &[LinkInput<'_, '_>], roles: &[Vec<Role>], options: &LinkOptions<'_>, log: &mut Vec<String>) -> Vec<usize> {
    let mut included: Vec<bool> = inputs.iter().map(|i| !i.lazy).collect();
    if !included.iter().any(|&b| b) && !inputs.is_empty() {
        // Only archives: the first member starts the link.
        included[0] = true;
    }
    loop {
        let mut defined: HashSet<&str> = HashSet::new();
        let mut wanted: Vec<&str> = Vec::new();
        for (i, inp) in inputs.iter().enumerate().filter(|(i, _)| included[*i]) {
            for (s, r) in roles[i].iter().enumerate() {
                let name = inp.module.symbol(s as SymbolId).name;
                match r {
                    Role::Def(_) => {
                        defined.insert(name);
                    }
                    Role::Ref => wanted.push(name),
                    _ => {}
                }
            }
        }
        wanted.retain(|n| !defined.contains(n) && !options.provided.contains(n));
        let pick = inputs.iter().enumerate().find_map(|(i, inp)| {
            if included[i] {
                return None;
            }
            roles[i].iter().enumerate().find_map(|(s, r)| {
                let name = inp.module.symbol(s as SymbolId).name;
                (matches!(r, Role::Def(_)) && wanted.contains(&name)).then_some((i, name))
            })
        });
        match pick {
            Some((i, name)) => {
                log.push(format!("'{}' is linked: it defines '{name}'", inputs[i].name));
                included[i] = true;
            }
            None => break,
        }
    }
    (0..inputs.len()).filter(|&i| included[i]).collect()
}

struct Merger<'a> {
    symbols: Vec<Symbol<'a>>,
    globals: HashMap<&'a str, SymbolId>,
    declared: HashSet<SymbolId>,
    defined: HashSet<SymbolId>,
    items: Vec<Item<'a>>,
    def_item: HashMap<SymbolId, u32>,
    decl_item: HashMap<SymbolId, u32>,
    pragmas: HashSet<&'a str>,
}

impl<'a> Merger<'a> {
    fn local(&mut self, name: &'a str, kind: SymbolKind) -> SymbolId {
        let id = self.symbols.len() as SymbolId;
        self.symbols.push(Symbol { name, kind, item: 0 });
        id
    }
    fn global(&mut self, name: &'a str, kind: SymbolKind) -> SymbolId {
        if let Some(&id) = self.globals.get(name) {
            return id;
        }
        let id = self.local(name, kind);
        self.globals.insert(name, id);
        id
    }
    fn push_decl(&mut self, id: SymbolId, item: Item<'a>) {
        self.declared.insert(id);
        self.decl_item.entry(id).or_insert(self.items.len() as u32);
        self.items.push(item);
    }
    fn push_def(&mut self, id: SymbolId, item: Item<'a>) {
        self.defined.insert(id);
        self.def_item.insert(id, self.items.len() as u32);
        self.items.push(item);
    }
}

/// Functions whose address an initializer takes.
fn collect_functions(init: &Initializer, symbols: &[Symbol], out: &mut Vec<SymbolId>) {
    match init {
        Initializer::Symbol { symbol, .. }
            if symbols.get(*symbol as usize).is_some_and(|s| s.kind == SymbolKind::Function) && !out.contains(symbol) =>
        {
            out.push(*symbol)
        }
        Initializer::List(items) => items.iter().for_each(|i| collect_functions(i, symbols, out)),
        Initializer::Field { value, .. } | Initializer::Mask { value, .. } => collect_functions(value, symbols, out),
        _ => {}
    }
}

/// Variables named by an initializer.
fn collect_variables(init: &Initializer, out: &mut Vec<SymbolId>) {
    match init {
        Initializer::Symbol { symbol, .. } => out.push(*symbol),
        Initializer::List(items) => items.iter().for_each(|i| collect_variables(i, out)),
        Initializer::Field { value, .. } | Initializer::Mask { value, .. } => collect_variables(value, out),
        _ => {}
    }
}

/// Orders variables so that each comes after those its initializer names
/// (keeping the given order otherwise; a cycle keeps the given order).
fn order_variables(vars: Vec<(SymbolId, Variable)>) -> Vec<(SymbolId, Variable)> {
    let index: HashMap<SymbolId, usize> = vars.iter().enumerate().map(|(k, (id, _))| (*id, k)).collect();
    let deps: Vec<Vec<usize>> = vars
        .iter()
        .map(|(_, v)| {
            let mut names = Vec::new();
            if let Some(init) = &v.decl.init {
                collect_variables(init, &mut names);
            }
            names.iter().filter_map(|n| index.get(n).copied()).collect()
        })
        .collect();
    // 0: not visited, 1: in progress, 2: done.
    let mut state = vec![0u8; vars.len()];
    let mut order = Vec::with_capacity(vars.len());
    fn visit(k: usize, deps: &[Vec<usize>], state: &mut [u8], order: &mut Vec<usize>) {
        if state[k] != 0 {
            return;
        }
        state[k] = 1;
        for &d in &deps[k] {
            visit(d, deps, state, order);
        }
        state[k] = 2;
        order.push(k);
    }
    for k in 0..vars.len() {
        visit(k, &deps, &mut state, &mut order);
    }
    let mut slots: Vec<Option<(SymbolId, Variable)>> = vars.into_iter().map(Some).collect();
    order.into_iter().filter_map(|k| slots[k].take()).collect()
}

fn remap_body(body: &mut Body, map: &[SymbolId], file_base: u32) {
    let m = |s: SymbolId| map.get(s as usize).copied().unwrap_or(s);
    for op in &mut body.operands {
        match op {
            Operand::Global(s) => *s = m(*s),
            Operand::AddrGlobal(s, _) | Operand::GlobalOffset(s, _) => *s = m(*s),
            _ => {}
        }
    }
    if file_base != 0 {
        for st in &mut body.statements {
            if let Statement::Loc { file, .. } = st {
                *file += file_base;
            }
        }
    }
}

fn remap_init(init: &mut Initializer, map: &[SymbolId]) {
    match init {
        Initializer::Symbol { symbol, .. } => *symbol = map.get(*symbol as usize).copied().unwrap_or(*symbol),
        Initializer::List(items) => items.iter_mut().for_each(|i| remap_init(i, map)),
        Initializer::Field { value, .. } | Initializer::Mask { value, .. } => remap_init(value, map),
        _ => {}
    }
}
