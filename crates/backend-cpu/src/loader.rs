//! Loading compiled modules (ELF relocatable objects) into the process.
//!
//! One LLVM ORC `LLJIT` per process links objects in memory. Each loaded
//! module gets a JITDylib of its own, so two modules may define the same
//! names and a module can be unloaded (its code and data freed) without
//! touching the others. A JITDylib sees the runtime functions of
//! [`crate::exec`] as absolute symbols and resolves everything else
//! (libc, libm, compiler-rt helpers from libgcc) from the process.
//!
//! The C API of ORC has no way to delete a JITDylib, so unloaded ones are
//! cleared and kept for the next load instead of leaking one per module.

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::{Condvar, Mutex, OnceLock};

use llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use llvm_sys::orc2::lljit::{
    LLVMOrcCreateLLJIT, LLVMOrcLLJITAddObjectFile, LLVMOrcLLJITGetExecutionSession, LLVMOrcLLJITGetGlobalPrefix, LLVMOrcLLJITRef,
};
use llvm_sys::orc2::{
    LLVMJITEvaluatedSymbol, LLVMJITSymbolFlags, LLVMJITSymbolGenericFlags, LLVMOrcAbsoluteSymbols, LLVMOrcCJITDylibSearchOrderElement,
    LLVMOrcCLookupSetElement, LLVMOrcCSymbolMapPair, LLVMOrcCSymbolMapPairs, LLVMOrcCreateDynamicLibrarySearchGeneratorForPath,
    LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess, LLVMOrcDisposeMaterializationUnit, LLVMOrcExecutionSessionCreateBareJITDylib,
    LLVMOrcExecutionSessionIntern, LLVMOrcExecutionSessionLookup, LLVMOrcExecutionSessionRef, LLVMOrcExecutionSessionSetErrorReporter,
    LLVMOrcJITDylibAddGenerator, LLVMOrcJITDylibClear, LLVMOrcJITDylibDefine, LLVMOrcJITDylibLookupFlags, LLVMOrcJITDylibRef,
    LLVMOrcLookupKind, LLVMOrcSymbolLookupFlags, LLVMOrcSymbolStringPoolEntryStr,
};
use object::{Object, ObjectSymbol};
use thiserror::Error;

/// Why a module could not be loaded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LoadError {
    #[error("cannot create the LLVM JIT: {0}")]
    Jit(String),
    #[error("not a valid object file: {0}")]
    InvalidObject(String),
    #[error("linking the module failed: {0}")]
    Link(String),
    #[error("cannot link the helper `{0}`: {1}")]
    Helper(String, String),
}

/// A module linked into the process. Dropping it unloads the module; code
/// from it must not run any more by then.
pub struct LoadedModule {
    dylib: LLVMOrcJITDylibRef,
    symbols: HashMap<String, usize>,
    /// Where the module's machine code lies: one range per executable
    /// section whose place could be found (see [`code_ranges`]).
    code: Vec<(usize, usize)>,
}

// SAFETY: the JITDylib handle is only used under the global JIT lock (in
// `Drop`); the symbol table is plain data.
unsafe impl Send for LoadedModule {}
// SAFETY: `&LoadedModule` only reads the symbol table.
unsafe impl Sync for LoadedModule {}

impl std::fmt::Debug for LoadedModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedModule").field("symbols", &self.symbols.len()).finish()
    }
}

impl LoadedModule {
    /// The address of a symbol the object defines (function or variable).
    pub fn symbol(&self, name: &str) -> Option<usize> {
        self.symbols.get(name).copied()
    }

    /// Every symbol the object defines, with its address.
    pub fn symbols(&self) -> impl Iterator<Item = (&str, usize)> {
        self.symbols.iter().map(|(name, address)| (name.as_str(), *address))
    }

    /// The address ranges (start, end) of the module's machine code: the
    /// kernel code a launch timeout may interrupt.
    pub fn code_ranges(&self) -> &[(usize, usize)] {
        &self.code
    }
}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        let Ok(jit) = global_jit() else { return };
        let mut jit = lock(jit);
        // SAFETY: `dylib` belongs to this JIT and nothing else uses it; the
        // lock serialises ORC calls.
        let cleared = unsafe { take_error(LLVMOrcJITDylibClear(self.dylib)) };
        match cleared {
            Ok(()) => jit.free_dylibs.push(self.dylib),
            Err(message) => {
                // A JITDylib in an unknown state is not reused: leaking it is
                // safer than handing its leftovers to the next module.
                tracing::warn!("unloading a module failed: {message}");
            }
        }
    }
}

/// Links `object` (an ELF relocatable object for the host) into the
/// process and resolves every symbol it defines.
pub fn load(object: &[u8]) -> Result<LoadedModule, LoadError> {
    load_with(object, &[])
}

/// [`load`], with `extra` symbols (name, address) defined beside the
/// runtime's: how the unit of one kernel finds the variables another
/// unit of its module defines.
pub fn load_with(object: &[u8], extra: &[(String, usize)]) -> Result<LoadedModule, LoadError> {
    let defined = defined_symbols(object)?;
    let names: Vec<String> = defined.iter().map(|(name, _)| name.clone()).collect();
    let jit = global_jit()?;
    let mut jit = lock(jit);
    let dylib = jit.take_dylib(extra)?;
    lock(&SESSION_ERRORS).clear();
    match jit.add_and_resolve(dylib, object, &names).map_err(with_session_errors) {
        Ok(symbols) => {
            if std::env::var_os("ANYCUDA_PERF_MAP").is_some() {
                write_perf_map(&defined, &symbols);
            }
            let code = code_ranges(object, &symbols);
            Ok(LoadedModule { dylib, symbols, code })
        }
        Err(error) => {
            // SAFETY: as in `Drop`; a failed link may leave partial state,
            // which `clear` removes.
            if unsafe { take_error(LLVMOrcJITDylibClear(dylib)) }.is_ok() {
                jit.free_dylibs.push(dylib);
            }
            Err(error)
        }
    }
}

/// [`load_with`] for an object that calls helpers it does not define
/// (`compiler::CompiledModule::helpers`): each is compiled by `compile`
/// and linked once per process (see [`linked_helpers`]), and the object's
/// references resolve to it. The helpers' code counts as the module's
/// ([`LoadedModule::code_ranges`]): kernel code runs in it.
pub fn load_linked(
    object: &[u8],
    helpers: &[compiler::HelperCode],
    extra: &[(String, usize)],
    compile: &dyn Fn(&compiler::HelperCode) -> Result<Vec<u8>, String>,
) -> Result<LoadedModule, LoadError> {
    let mut symbols = extra.to_vec();
    let mut code = Vec::new();
    for helper in helpers {
        let (address, ranges) = link_helper(helper, compile)?;
        symbols.push((helper.name.clone(), address));
        code.extend(ranges);
    }
    let mut module = load_with(object, &symbols)?;
    module.code.extend(code);
    Ok(module)
}

/// [`load_linked`] for a compile's result, its helpers compiled here (no
/// cache): for callers that compile for the host themselves.
pub fn load_compiled(compiled: &compiler::CompiledModule, extra: &[(String, usize)]) -> Result<LoadedModule, LoadError> {
    let compile = |h: &compiler::HelperCode| compiler::compile_helper(&compiler::Target::HostCpu, h).map_err(|e| e.to_string());
    load_linked(&compiled.object, &compiled.helpers, extra, &compile)
}

/// A helper linked into the process.
struct LinkedHelper {
    module: LoadedModule,
    address: usize,
}

type HelperSlot = std::sync::Arc<OnceLock<Result<LinkedHelper, LoadError>>>;

/// The helpers linked so far, by the hash of their module's text (equal
/// texts are the same code). They stay linked until the process exits:
/// a process links a few dozen at most (one per access type, size and
/// alignment its kernels use), each a few kilobytes of code.
static HELPERS: OnceLock<Mutex<HashMap<[u8; 32], HelperSlot>>> = OnceLock::new();

/// How many distinct helpers this process has linked.
pub fn linked_helpers() -> usize {
    HELPERS.get().map_or(0, |h| lock(h).values().filter(|s| matches!(s.get(), Some(Ok(_)))).count())
}

/// The address and code ranges of the helper `helper`, linked at its
/// first use (compiled by `compile`); a thread asking for one another
/// thread is linking waits for it.
fn link_helper(
    helper: &compiler::HelperCode,
    compile: &dyn Fn(&compiler::HelperCode) -> Result<Vec<u8>, String>,
) -> Result<(usize, Vec<(usize, usize)>), LoadError> {
    let key = *blake3::hash(helper.ir.as_bytes()).as_bytes();
    let slot = lock(HELPERS.get_or_init(Default::default)).entry(key).or_default().clone();
    slot.get_or_init(|| {
        let object = compile(helper).map_err(|e| LoadError::Helper(helper.name.clone(), e))?;
        let module = load(&object)?;
        let address =
            module.symbol(&helper.name).ok_or_else(|| LoadError::Helper(helper.name.clone(), "its object does not define it".into()))?;
        Ok(LinkedHelper { module, address })
    });
    match slot.get() {
        Some(Ok(linked)) => Ok((linked.address, linked.module.code_ranges().to_vec())),
        Some(Err(e)) => Err(e.clone()),
        None => Err(LoadError::Helper(helper.name.clone(), "not linked".into())),
    }
}

/// Appends the functions of a loaded module to `perf-PID.map` in the
/// temporary directory, the file through which `perf` names code it finds
/// in no ELF file. Failing to write it changes nothing else.
fn write_perf_map(defined: &[(String, u64)], symbols: &HashMap<String, usize>) {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("perf-{}.map", std::process::id()));
    let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) else { return };
    let _ = file.write_all(perf_map_lines(defined, symbols).as_bytes());
}

/// `START SIZE NAME` in hex, one line per defined symbol with a size.
fn perf_map_lines(defined: &[(String, u64)], symbols: &HashMap<String, usize>) -> String {
    let mut text = String::new();
    for (name, size) in defined {
        if let (Some(address), true) = (symbols.get(name), *size > 0) {
            text.push_str(&format!("{address:x} {size:x} {name}\n"));
        }
    }
    text
}

/// The linked place of each executable section of `object`: the JIT keeps
/// a section's bytes together (one block per ELF section), so a global
/// symbol's address less its offset in the section is the section's start.
/// Sections without a global symbol, or whose symbols disagree, are left
/// out.
fn code_ranges(object: &[u8], symbols: &HashMap<String, usize>) -> Vec<(usize, usize)> {
    use object::{ObjectSection, SectionIndex, SectionKind, SymbolSection};
    let Ok(file) = object::File::parse(object) else { return Vec::new() };
    let mut starts: HashMap<SectionIndex, Option<usize>> = HashMap::new();
    for symbol in file.symbols() {
        let SymbolSection::Section(index) = symbol.section() else { continue };
        let Some(&address) = symbol.name().ok().and_then(|n| symbols.get(n)) else { continue };
        let Some(start) = address.checked_sub(symbol.address() as usize) else { continue };
        let entry = starts.entry(index).or_insert(Some(start));
        if *entry != Some(start) {
            *entry = None;
        }
    }
    let mut ranges = Vec::new();
    for section in file.sections() {
        if section.kind() != SectionKind::Text || section.size() == 0 {
            continue;
        }
        if let Some(Some(start)) = starts.get(&section.index()) {
            ranges.push((*start, start + section.size() as usize));
        } else {
            tracing::debug!("code section {:?} of a module has no known place", section.name().unwrap_or("?"));
        }
    }
    ranges
}

/// Global symbols the object defines (the ones `symbol` can find), with
/// their sizes.
fn defined_symbols(object: &[u8]) -> Result<Vec<(String, u64)>, LoadError> {
    let file = object::File::parse(object).map_err(|e| LoadError::InvalidObject(e.to_string()))?;
    let mut names = Vec::new();
    for symbol in file.symbols() {
        if !symbol.is_definition() || !symbol.is_global() {
            continue;
        }
        if let Ok(name) = symbol.name() {
            if !name.is_empty() {
                names.push((name.to_owned(), symbol.size()));
            }
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

struct Jit {
    // The LLJIT is never disposed: it lives as long as the process, like
    // the code it links.
    #[allow(dead_code)]
    jit: LLVMOrcLLJITRef,
    session: LLVMOrcExecutionSessionRef,
    prefix: c_char,
    free_dylibs: Vec<LLVMOrcJITDylibRef>,
    created: u64,
}

// SAFETY: ORC objects may be used from any thread; the mutex around `Jit`
// serialises all our calls into them.
unsafe impl Send for Jit {}

static JIT: OnceLock<Result<Mutex<Jit>, LoadError>> = OnceLock::new();

fn global_jit() -> Result<&'static Mutex<Jit>, LoadError> {
    JIT.get_or_init(|| Jit::create().map(Mutex::new)).as_ref().map_err(Clone::clone)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave ORC half-updated in a way
    // the next caller could repair, but refusing all later loads would be
    // worse; carry on with the inner value.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Turns an `LLVMErrorRef` into a `Result`, consuming the error.
///
/// # Safety
/// `error` must be null or an unconsumed LLVM error.
unsafe fn take_error(error: LLVMErrorRef) -> Result<(), String> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: `error` is a live error; getting its message consumes it, and
    // the message is disposed of after copying.
    unsafe {
        let message = LLVMGetErrorMessage(error);
        let text = CStr::from_ptr(message).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(message);
        Err(text)
    }
}

/// Errors ORC reports out of band (the cause of a failed materialisation,
/// such as the names of missing symbols), collected while a load holds the
/// JIT lock so that it can quote them.
static SESSION_ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());

extern "C" fn report_session_error(_ctx: *mut c_void, error: LLVMErrorRef) {
    // SAFETY: ORC hands over ownership of the error.
    if let Err(message) = unsafe { take_error(error) } {
        tracing::debug!("LLVM JIT: {message}");
        let mut errors = lock(&SESSION_ERRORS);
        if errors.len() < 16 {
            errors.push(message);
        }
    }
}

/// Adds the out-of-band causes to a link error.
fn with_session_errors(error: LoadError) -> LoadError {
    let causes = std::mem::take(&mut *lock(&SESSION_ERRORS));
    match error {
        LoadError::Link(message) if !causes.is_empty() => LoadError::Link(format!("{}: {message}", causes.join("; "))),
        other => other,
    }
}

impl Jit {
    fn create() -> Result<Jit, LoadError> {
        // SAFETY: target initialisation is idempotent; the builder argument
        // may be null (defaults); on success we own the LLJIT.
        unsafe {
            if llvm_sys::target::LLVM_InitializeNativeTarget() != 0 {
                return Err(LoadError::Jit("the host target is not available in LLVM".into()));
            }
            let _ = llvm_sys::target::LLVM_InitializeNativeAsmPrinter();
            let mut jit: LLVMOrcLLJITRef = std::ptr::null_mut();
            take_error(LLVMOrcCreateLLJIT(&mut jit, std::ptr::null_mut())).map_err(LoadError::Jit)?;
            let session = LLVMOrcLLJITGetExecutionSession(jit);
            LLVMOrcExecutionSessionSetErrorReporter(session, report_session_error, std::ptr::null_mut());
            let prefix = LLVMOrcLLJITGetGlobalPrefix(jit);
            Ok(Jit { jit, session, prefix, free_dylibs: Vec::new(), created: 0 })
        }
    }

    /// A cleared JITDylib with the runtime symbols and process symbol search.
    fn take_dylib(&mut self, extra: &[(String, usize)]) -> Result<LLVMOrcJITDylibRef, LoadError> {
        let dylib = match self.free_dylibs.pop() {
            Some(dylib) => dylib,
            None => self.new_dylib()?,
        };
        // The runtime symbols go in again on every use: `clear` removed them
        // together with the previous module.
        if let Err(error) = self.define_runtime_symbols(dylib, extra) {
            self.free_dylibs.push(dylib);
            return Err(error);
        }
        Ok(dylib)
    }

    fn new_dylib(&mut self) -> Result<LLVMOrcJITDylibRef, LoadError> {
        self.created += 1;
        let name = CString::new(format!("anycuda.module.{}", self.created)).unwrap_or_default();
        // SAFETY: the session is live; names are unique so creation cannot
        // clash; generators are handed over to the JITDylib.
        unsafe {
            let dylib = LLVMOrcExecutionSessionCreateBareJITDylib(self.session, name.as_ptr());
            if dylib.is_null() {
                return Err(LoadError::Jit("cannot create a JITDylib".into()));
            }
            let mut generator = std::ptr::null_mut();
            take_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&mut generator, self.prefix, None, std::ptr::null_mut()))
                .map_err(LoadError::Jit)?;
            LLVMOrcJITDylibAddGenerator(dylib, generator);
            // Compiled code may call libm and compiler-rt helpers that the
            // host program itself never linked (and so are not in the
            // process's global scope).
            for library in [c"libm.so.6", c"libgcc_s.so.1"] {
                let mut generator = std::ptr::null_mut();
                let made = take_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForPath(
                    &mut generator,
                    library.as_ptr(),
                    self.prefix,
                    None,
                    std::ptr::null_mut(),
                ));
                match made {
                    Ok(()) => LLVMOrcJITDylibAddGenerator(dylib, generator),
                    Err(message) => tracing::debug!("{}: {message}", library.to_string_lossy()),
                }
            }
            Ok(dylib)
        }
    }

    fn intern(&self, name: &str) -> Result<llvm_sys::orc2::LLVMOrcSymbolStringPoolEntryRef, LoadError> {
        let mut mangled = Vec::with_capacity(name.len() + 2);
        if self.prefix != 0 {
            mangled.push(self.prefix as u8);
        }
        mangled.extend_from_slice(name.as_bytes());
        let c = CString::new(mangled).map_err(|_| LoadError::InvalidObject(format!("symbol name {name:?} contains NUL")))?;
        // SAFETY: the session is live and `c` a valid C string; the entry is
        // returned retained.
        Ok(unsafe { LLVMOrcExecutionSessionIntern(self.session, c.as_ptr()) })
    }

    fn define_runtime_symbols(&self, dylib: LLVMOrcJITDylibRef, extra: &[(String, usize)]) -> Result<(), LoadError> {
        let flags = || LLVMJITSymbolFlags {
            GenericFlags: LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsExported as u8
                | LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsCallable as u8,
            TargetFlags: 0,
        };
        let mut pairs = Vec::new();
        for (name, address) in crate::exec::runtime::symbols()
            .iter()
            .chain(compiler_helpers().iter())
            .map(|(n, a)| (*n, *a))
            .chain(extra.iter().map(|(n, a)| (n.as_str(), *a)))
        {
            pairs.push(LLVMOrcCSymbolMapPair {
                Name: self.intern(name)?,
                Sym: LLVMJITEvaluatedSymbol { Address: address as u64, Flags: flags() },
            });
        }
        // SAFETY: `AbsoluteSymbols` takes ownership of the retained names;
        // `Define` takes the unit on success, and we dispose of it on error.
        unsafe {
            let unit = LLVMOrcAbsoluteSymbols(pairs.as_mut_ptr(), pairs.len());
            let defined = take_error(LLVMOrcJITDylibDefine(dylib, unit));
            if defined.is_err() {
                LLVMOrcDisposeMaterializationUnit(unit);
            }
            defined.map_err(LoadError::Jit)
        }
    }

    fn add_and_resolve(&mut self, dylib: LLVMOrcJITDylibRef, object: &[u8], names: &[String]) -> Result<HashMap<String, usize>, LoadError> {
        // SAFETY: the buffer copy is handed to ORC, which owns it from then
        // on whatever the outcome.
        unsafe {
            let buffer =
                llvm_sys::core::LLVMCreateMemoryBufferWithMemoryRangeCopy(object.as_ptr().cast(), object.len(), c"anycuda-module".as_ptr());
            take_error(LLVMOrcLLJITAddObjectFile(self.jit, dylib, buffer)).map_err(LoadError::Link)?;
        }
        if names.is_empty() {
            return Ok(HashMap::new());
        }
        // Looking every definition up links the object now, so that a
        // missing symbol fails the load rather than a later launch.
        let mut set = Vec::with_capacity(names.len());
        for name in names {
            set.push(LLVMOrcCLookupSetElement {
                Name: self.intern(name)?,
                LookupFlags: LLVMOrcSymbolLookupFlags::LLVMOrcSymbolLookupFlagsRequiredSymbol,
            });
        }
        let mut order = [LLVMOrcCJITDylibSearchOrderElement {
            JD: dylib,
            JDLookupFlags: LLVMOrcJITDylibLookupFlags::LLVMOrcJITDylibLookupFlagsMatchAllSymbols,
        }];
        let reply = Box::new(LookupReply { state: Mutex::new(None), done: Condvar::new() });
        // SAFETY: the lookup takes ownership of the interned names; `reply`
        // outlives the callback because we wait for it below.
        unsafe {
            LLVMOrcExecutionSessionLookup(
                self.session,
                LLVMOrcLookupKind::LLVMOrcLookupKindStatic,
                order.as_mut_ptr(),
                order.len(),
                set.as_mut_ptr(),
                set.len(),
                lookup_done,
                (&*reply as *const LookupReply).cast_mut().cast(),
            );
        }
        let mut state = lock(&reply.state);
        loop {
            if let Some(result) = state.take() {
                return result.map(|found| {
                    let prefix_len = usize::from(self.prefix != 0);
                    found.into_iter().map(|(name, address)| (name.get(prefix_len..).unwrap_or_default().to_owned(), address)).collect()
                });
            }
            state = reply.done.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

type LookupResult = Result<Vec<(String, usize)>, LoadError>;

struct LookupReply {
    state: Mutex<Option<LookupResult>>,
    done: Condvar,
}

extern "C" fn lookup_done(error: LLVMErrorRef, pairs: LLVMOrcCSymbolMapPairs, count: usize, ctx: *mut c_void) {
    // SAFETY: `ctx` is the `LookupReply` that `add_and_resolve` keeps alive
    // until this callback has stored a result; on success `pairs` holds
    // `count` entries whose names live for the duration of the call.
    unsafe {
        let reply = &*(ctx as *const LookupReply);
        let result = match take_error(error) {
            Err(message) => Err(LoadError::Link(message)),
            Ok(()) => {
                let mut found = Vec::with_capacity(count);
                for i in 0..count {
                    let pair = &*pairs.add(i);
                    let name = CStr::from_ptr(LLVMOrcSymbolStringPoolEntryStr(pair.Name));
                    found.push((name.to_string_lossy().into_owned(), pair.Sym.Address as usize));
                }
                Ok(found)
            }
        };
        *lock(&reply.state) = Some(result);
        reply.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_map_lines_name_each_sized_symbol_at_its_address() {
        let defined = vec![("k".to_string(), 0x40u64), ("empty".to_string(), 0), ("unresolved".to_string(), 8)];
        let symbols = HashMap::from([("k".to_string(), 0x7f00_1000usize), ("empty".to_string(), 0x7f00_2000)]);
        assert_eq!(perf_map_lines(&defined, &symbols), "7f001000 40 k\n");
    }
}

/// Helpers LLVM's code generator calls that the host's libgcc may lack
/// (GCC 12's has no bf16 conversions): `float` to `bfloat`, which LLVM
/// calls for a bf16 value it held as a float.
fn compiler_helpers() -> [(&'static str, usize); 1] {
    [("__truncsfbf2", truncsfbf2 as extern "C" fn(f32) -> f32 as usize)]
}

/// `__truncsfbf2`: `x` rounded to bf16 (to nearest even; subnormals kept;
/// a NaN stays a quiet NaN with its sign). The bf16 is returned in the low
/// 16 bits of the float register, where the caller reads a `bfloat`.
extern "C" fn truncsfbf2(x: f32) -> f32 {
    f32::from_bits(u32::from(bf16_bits(x)))
}

fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

#[cfg(test)]
mod helper_tests {
    #[test]
    fn float_to_bf16_rounds_to_nearest_even_and_keeps_subnormals() {
        let bits = |x: f32| super::bf16_bits(x);
        assert_eq!(bits(1.0), 0x3f80);
        assert_eq!(bits(f32::from_bits(0x3f80_8000)), 0x3f80, "a tie rounds to even (down)");
        assert_eq!(bits(f32::from_bits(0x3f81_8000)), 0x3f82, "a tie rounds to even (up)");
        assert_eq!(bits(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(bits(f32::from_bits(0x0001_0000)), 0x0001, "the smallest bf16 subnormal");
        assert_eq!(bits(f32::from_bits(0x8001_0000)), 0x8001);
        assert_eq!(bits(f32::from_bits(0x0000_8000)), 0x0000, "half the smallest subnormal ties to even zero");
        assert_eq!(bits(f32::from_bits(0x7f7f_ffff)), 0x7f80, "past the largest bf16: infinity");
        assert_eq!(bits(f32::INFINITY), 0x7f80);
        assert_eq!(bits(f32::from_bits(0xff80_0001)) & 0xffc0, 0xffc0, "a NaN stays a quiet NaN with its sign");
    }
}
