//! Modules, libraries, linking, functions and kernels.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::Mutex;

use cuda_types::*;
use driver::{Error, JitLog, ModuleOptions, ModuleSource};

use crate::util::{api, cstr, drv, set_opt, Out};

/// Where a load's JIT logs go: the caller's buffers and the option slots
/// that receive the sizes and the wall time.
#[derive(Debug, Clone, Copy, Default)]
struct LogTarget {
    values: usize,
    info: Option<(usize, usize, usize)>,
    error: Option<(usize, usize, usize)>,
    wall_time: Option<usize>,
}

#[derive(Default)]
struct Jit {
    options: ModuleOptions,
    target: LogTarget,
    /// Options accepted without effect, said in the info log.
    notes: Vec<String>,
}

impl Jit {
    fn note(&mut self, what: String) {
        tracing::info!("JIT option {what}");
        self.notes.push(format!("anycuda: JIT option {what}"));
    }
}

/// Reads JIT options (`cuModuleLoadDataEx`, `cuLinkCreate`, `cuLinkAddData`,
/// `cuLibraryLoadData`). Each value is the option's value itself, cast to
/// a pointer, except the log buffers. Options anycuda cannot honour are
/// accepted where CUDA accepts them, with a line in the info log; option
/// numbers CUDA does not know and out-of-range values are
/// `CUDA_ERROR_INVALID_VALUE`.
unsafe fn parse_jit(n: c_uint, options: *const CUjit_option, values: *mut *mut c_void) -> Result<Jit, Error> {
    let mut j = Jit::default();
    if n == 0 {
        return Ok(j);
    }
    if options.is_null() || values.is_null() {
        return Err(Error::InvalidValue("JIT options or values are NULL".into()));
    }
    j.target.values = values as usize;
    let (mut info_buf, mut info_size, mut err_buf, mut err_size) = (None, None, None, None);
    let mut symbol_count = 0usize;
    for i in 0..n as usize {
        let opt = options.add(i).read_unaligned();
        let v = values.add(i).read_unaligned() as usize;
        use CUjit_option as O;
        match opt {
            O::CU_JIT_MAX_REGISTERS => j.options.max_registers = Some(v as u32),
            O::CU_JIT_THREADS_PER_BLOCK => j.options.threads_per_block = Some(v as u32),
            O::CU_JIT_WALL_TIME => j.target.wall_time = Some(i),
            O::CU_JIT_INFO_LOG_BUFFER => info_buf = Some(v),
            O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES => info_size = Some((v, i)),
            O::CU_JIT_ERROR_LOG_BUFFER => err_buf = Some(v),
            O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES => err_size = Some((v, i)),
            O::CU_JIT_OPTIMIZATION_LEVEL => {
                if v > 4 {
                    return Err(Error::InvalidValue(format!("optimization level {v}")));
                }
                j.options.optimization_level = Some(v as u32);
            }
            O::CU_JIT_TARGET_FROM_CUCONTEXT => {}
            O::CU_JIT_TARGET => {
                let t = CUjit_target(v as u32);
                if t.name().is_none() {
                    return Err(Error::InvalidValue(format!("unknown CU_JIT_TARGET {v}")));
                }
                j.note(format!("CU_JIT_TARGET {t:?} accepted: code is compiled for the context's device"));
            }
            O::CU_JIT_FALLBACK_STRATEGY => {
                if v > CUjit_fallback::CU_PREFER_BINARY.0 as usize {
                    return Err(Error::InvalidValue(format!("unknown CU_JIT_FALLBACK_STRATEGY {v}")));
                }
                if v == CUjit_fallback::CU_PREFER_BINARY.0 as usize {
                    j.note("CU_JIT_FALLBACK_STRATEGY CU_PREFER_BINARY accepted: anycuda always compiles PTX".into());
                }
            }
            O::CU_JIT_GENERATE_DEBUG_INFO => j.options.generate_debug_info = v != 0,
            O::CU_JIT_GENERATE_LINE_INFO => j.options.generate_line_info = v != 0,
            O::CU_JIT_LOG_VERBOSE => j.options.verbose = v != 0,
            O::CU_JIT_CACHE_MODE => {
                if v > CUjit_cacheMode::CU_JIT_CACHE_OPTION_CA.0 as usize {
                    return Err(Error::InvalidValue(format!("unknown CU_JIT_CACHE_MODE {v}")));
                }
                j.note(format!("CU_JIT_CACHE_MODE {v} accepted with no effect (no hardware caches to steer)"));
            }
            O::CU_JIT_FTZ => j.options.ftz = Some(v != 0),
            O::CU_JIT_PREC_DIV => j.options.prec_div = Some(v != 0),
            O::CU_JIT_PREC_SQRT => j.options.prec_sqrt = Some(v != 0),
            O::CU_JIT_FMA => j.options.fma = Some(v != 0),
            O::CU_JIT_GLOBAL_SYMBOL_COUNT => symbol_count = v as u32 as usize,
            O::CU_JIT_GLOBAL_SYMBOL_NAMES | O::CU_JIT_GLOBAL_SYMBOL_ADDRESSES => {}
            O::CU_JIT_LTO => {
                if v != 0 {
                    j.note("CU_JIT_LTO accepted with no effect: anycuda links PTX, not LTO IR".into());
                }
            }
            o if o.0 < O::CU_JIT_NUM_OPTIONS.0 => j.note(format!("{o:?} accepted with no effect")),
            o => return Err(Error::InvalidValue(format!("unknown JIT option {}", o.0))),
        }
    }
    if symbol_count > 0 {
        // Relocating device symbols to host addresses would make device
        // code read host memory under those names; ignoring it would give
        // wrong results.
        return Err(Error::NotSupported(format!(
            "CU_JIT_GLOBAL_SYMBOL_NAMES/ADDRESSES ({symbol_count} symbol(s) to relocate to host addresses)"
        )));
    }
    if let (Some(b), Some((s, i))) = (info_buf, info_size) {
        j.target.info = Some((b, s, i));
    }
    if let (Some(b), Some((s, i))) = (err_buf, err_size) {
        j.target.error = Some((b, s, i));
    }
    Ok(j)
}

/// Fills the caller's log buffers and output options.
unsafe fn write_logs(t: &LogTarget, log: &JitLog) {
    let values = t.values as *mut *mut c_void;
    if values.is_null() {
        return;
    }
    let put = |slot: Option<(usize, usize, usize)>, text: &str| {
        if let Some((buf, size, idx)) = slot {
            let mut written = 0;
            if buf != 0 && size > 0 {
                let n = text.len().min(size - 1);
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, n);
                *(buf as *mut u8).add(n) = 0;
                written = n + 1;
            }
            values.add(idx).write_unaligned(written as *mut c_void);
        }
    };
    put(t.info, &log.info);
    put(t.error, &log.error);
    if let Some(i) = t.wall_time {
        values.add(i).cast::<f32>().write_unaligned(log.wall_ms);
    }
}

fn image_error(e: fatbin::Error, name: &str) -> Error {
    match e {
        fatbin::Error::NullPointer { what } => Error::InvalidValue(format!("{what} is NULL")),
        fatbin::Error::Empty => Error::InvalidImage(format!("{name}: empty image")),
        e if name == "image" => Error::InvalidImage(e.to_string()),
        e => Error::InvalidImage(format!("{name}: {e}")),
    }
}

/// The info log starts with what the options said.
fn add_notes(log: &mut JitLog, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let mut info = notes.join("\n");
    if !log.info.is_empty() {
        info.push('\n');
        info.push_str(&log.info);
    }
    log.info = info;
}

/// Most prelinked fatbins a version-2 wrapper's list is read for.
const MAX_PRELINKED: usize = 1 << 16;

/// The prelinked fatbins of a version-2 fatbin wrapper (`nvcc -rdc=true`):
/// its auxiliary pointer is a NULL-terminated array of fatbin pointers, one
/// per translation unit. Every pointer and fatbin is checked readable first.
unsafe fn prelinked_fatbins(image: &fatbin::Image<'_>) -> Result<Vec<fatbin::Image<'static>>, Error> {
    let fatbin::Image::Fatbin { wrapper: Some(w), .. } = image else { return Ok(Vec::new()) };
    if w.version != 2 || w.aux == 0 {
        return Ok(Vec::new());
    }
    let mem = crate::readable::ProcessMemory;
    let mut parts = Vec::new();
    for k in 0..MAX_PRELINKED {
        let at = (w.aux as usize).checked_add(8 * k).ok_or_else(|| Error::InvalidImage("prelinked fatbin list overflows".into()))?;
        if fatbin::Readable::readable_prefix(&mem, at, 8) < 8 {
            return Err(Error::InvalidImage(format!("the prelinked fatbin list of the wrapper is unreadable at entry {k}")));
        }
        let p = (at as *const u64).read_unaligned();
        if p == 0 {
            return Ok(parts);
        }
        let img = fatbin::Image::from_ptr_checked(p as usize as *const c_void, &mem)
            .map_err(|e| image_error(e, &format!("prelinked fatbin {}", k + 1)))?;
        parts.push(img);
    }
    Err(Error::InvalidImage(format!("the prelinked fatbin list of the wrapper has no end within {MAX_PRELINKED} entries")))
}

/// Loads through `f` with the image behind `image`, writing the JIT logs
/// whatever the outcome.
unsafe fn with_image(
    image: *const c_void,
    jit: Jit,
    f: impl FnOnce(ModuleSource<'_>, ModuleOptions, &mut JitLog) -> Result<u64, Error>,
) -> Result<u64, Error> {
    let mut log = JitLog::default();
    // The image's memory is checked before each range its headers declare
    // is read, so a truncated image is an error rather than a fault.
    let r = match fatbin::Image::from_ptr_checked(image, &crate::readable::ProcessMemory) {
        Ok(img) => match prelinked_fatbins(&img) {
            Ok(parts) if parts.is_empty() => f(ModuleSource::Image(&img), jit.options, &mut log),
            Ok(parts) => f(ModuleSource::Prelinked { image: &img, parts: &parts }, jit.options, &mut log),
            Err(e) => {
                log.error = format!("anycuda: {e}");
                Err(e)
            }
        },
        Err(e) => {
            let e = image_error(e, "image");
            log.error = format!("anycuda: {e}");
            Err(e)
        }
    };
    add_notes(&mut log, &jit.notes);
    write_logs(&jit.target, &log);
    r
}

fn read_file(path: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::FileNotFound(path.to_string()),
        _ => Error::FileNotFound(format!("{path}: {e}")),
    })
}

unsafe fn with_file(
    path: &str,
    jit: Jit,
    f: impl FnOnce(ModuleSource<'_>, ModuleOptions, &mut JitLog) -> Result<u64, Error>,
) -> Result<u64, Error> {
    let bytes = read_file(path)?;
    let mut log = JitLog::default();
    let r = match fatbin::Image::parse(&bytes) {
        Ok(img) => f(ModuleSource::Image(&img), jit.options, &mut log),
        Err(e) => {
            let e = image_error(e, "image");
            log.error = format!("anycuda: {path}: {e}");
            Err(e)
        }
    };
    add_notes(&mut log, &jit.notes);
    write_logs(&jit.target, &log);
    r
}

fn module(h: u64) -> CUmodule {
    CUmodule::from_addr(h as usize)
}

fn m(h: CUmodule) -> u64 {
    h.addr() as u64
}

api! {
    fn cuModuleLoadData(module_: *mut CUmodule, image: *const c_void) {
        let out = Out::new(module_, "module")?;
        let d = drv()?;
        let h = with_image(image, Jit::default(), |s, o, l| d.module_load(s, o, l))?;
        out.set(module(h));
        Ok(())
    }
}

api! {
    fn cuModuleLoadFatBinary(module_: *mut CUmodule, fatCubin: *const c_void) {
        let out = Out::new(module_, "module")?;
        let d = drv()?;
        let h = with_image(fatCubin, Jit::default(), |s, o, l| d.module_load(s, o, l))?;
        out.set(module(h));
        Ok(())
    }
}

api! {
    fn cuModuleLoadDataEx(module_: *mut CUmodule, image: *const c_void, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void) {
        let out = Out::new(module_, "module")?;
        let jit = parse_jit(numOptions, options, optionValues)?;
        let d = drv()?;
        let h = with_image(image, jit, |s, o, l| d.module_load(s, o, l))?;
        out.set(module(h));
        Ok(())
    }
}

api! {
    fn cuModuleLoad(module_: *mut CUmodule, fname: *const c_char) {
        let out = Out::new(module_, "module")?;
        let path = cstr(fname, "fname")?;
        let d = drv()?;
        d.current_ctx()?;
        let h = with_file(path, Jit::default(), |s, o, l| d.module_load(s, o, l))?;
        out.set(module(h));
        Ok(())
    }
}

api! {
    fn cuModuleUnload(hmod: CUmodule) {
        drv()?.module_unload(m(hmod))
    }
}

api! {
    fn cuModuleGetLoadingMode(mode: *mut CUmoduleLoadingMode) {
        let out = Out::new(mode, "mode")?;
        let lazy = drv()?.module_loading_lazy()?;
        out.set(if lazy { CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING } else { CUmoduleLoadingMode::CU_MODULE_EAGER_LOADING });
        Ok(())
    }
}

api! {
    fn cuModuleGetFunction(hfunc: *mut CUfunction, hmod: CUmodule, name: *const c_char) {
        let out = Out::new(hfunc, "hfunc")?;
        let name = cstr(name, "name")?;
        out.set(CUfunction::from_addr(drv()?.module_get_function(m(hmod), name)? as usize));
        Ok(())
    }
}

api! {
    fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, hmod: CUmodule, name: *const c_char) {
        let name = cstr(name, "name")?;
        let (p, n) = drv()?.module_get_global(m(hmod), name)?;
        set_opt(dptr, p);
        set_opt(bytes, n);
        Ok(())
    }
}

api! {
    fn cuModuleGetFunctionCount(count: *mut c_uint, mod_: CUmodule) {
        let out = Out::new(count, "count")?;
        out.set(drv()?.module_function_count(m(mod_))?);
        Ok(())
    }
}

api! {
    fn cuModuleEnumerateFunctions(functions: *mut CUfunction, numFunctions: c_uint, mod_: CUmodule) {
        if functions.is_null() {
            return Err(Error::InvalidValue("functions is NULL".into()));
        }
        let all = drv()?.module_functions(m(mod_))?;
        for (i, f) in all.iter().take(numFunctions as usize).enumerate() {
            functions.add(i).write_unaligned(CUfunction::from_addr(*f as usize));
        }
        Ok(())
    }
}

// ---- libraries ----

unsafe fn check_library_options(n: c_uint, options: *const CUlibraryOption, values: *mut *mut c_void) -> Result<(), Error> {
    if n == 0 {
        return Ok(());
    }
    if options.is_null() || values.is_null() {
        return Err(Error::InvalidValue("library options or values are NULL".into()));
    }
    for i in 0..n as usize {
        let o = options.add(i).read_unaligned();
        // Both known options are accepted: the image is always copied, so
        // CU_LIBRARY_BINARY_IS_PRESERVED changes nothing, and the host
        // function table only serves cuLibraryGetUnifiedFunction.
        if o.0 >= CUlibraryOption::CU_LIBRARY_NUM_OPTIONS.0 {
            return Err(Error::InvalidValue(format!("unknown library option {}", o.0)));
        }
    }
    Ok(())
}

fn library(h: u64) -> CUlibrary {
    CUlibrary::from_addr(h as usize)
}

fn l(h: CUlibrary) -> u64 {
    h.addr() as u64
}

fn k(h: CUkernel) -> u64 {
    h.addr() as u64
}

api! {
    fn cuLibraryLoadData(library_: *mut CUlibrary, code: *const c_void, jitOptions: *mut CUjit_option, jitOptionsValues: *mut *mut c_void, numJitOptions: c_uint, libraryOptions: *mut CUlibraryOption, libraryOptionValues: *mut *mut c_void, numLibraryOptions: c_uint) {
        let out = Out::new(library_, "library")?;
        let jit = parse_jit(numJitOptions, jitOptions, jitOptionsValues)?;
        check_library_options(numLibraryOptions, libraryOptions, libraryOptionValues)?;
        let d = drv()?;
        let h = with_image(code, jit, |s, o, lg| d.library_load(s, o, lg))?;
        out.set(library(h));
        Ok(())
    }
}

api! {
    fn cuLibraryLoadFromFile(library_: *mut CUlibrary, fileName: *const c_char, jitOptions: *mut CUjit_option, jitOptionsValues: *mut *mut c_void, numJitOptions: c_uint, libraryOptions: *mut CUlibraryOption, libraryOptionValues: *mut *mut c_void, numLibraryOptions: c_uint) {
        let out = Out::new(library_, "library")?;
        let path = cstr(fileName, "fileName")?;
        let jit = parse_jit(numJitOptions, jitOptions, jitOptionsValues)?;
        check_library_options(numLibraryOptions, libraryOptions, libraryOptionValues)?;
        let d = drv()?;
        let h = with_file(path, jit, |s, o, lg| d.library_load(s, o, lg))?;
        out.set(library(h));
        Ok(())
    }
}

api! {
    fn cuLibraryUnload(library_: CUlibrary) {
        drv()?.library_unload(l(library_))
    }
}

api! {
    fn cuLibraryGetKernel(pKernel: *mut CUkernel, library_: CUlibrary, name: *const c_char) {
        let out = Out::new(pKernel, "pKernel")?;
        let name = cstr(name, "name")?;
        out.set(CUkernel::from_addr(drv()?.library_get_kernel(l(library_), name)? as usize));
        Ok(())
    }
}

api! {
    fn cuLibraryGetKernelCount(count: *mut c_uint, lib: CUlibrary) {
        let out = Out::new(count, "count")?;
        out.set(drv()?.library_kernel_count(l(lib))?);
        Ok(())
    }
}

api! {
    fn cuLibraryEnumerateKernels(kernels: *mut CUkernel, numKernels: c_uint, lib: CUlibrary) {
        if kernels.is_null() {
            return Err(Error::InvalidValue("kernels is NULL".into()));
        }
        let all = drv()?.library_kernels(l(lib))?;
        for (i, kh) in all.iter().take(numKernels as usize).enumerate() {
            kernels.add(i).write_unaligned(CUkernel::from_addr(*kh as usize));
        }
        Ok(())
    }
}

api! {
    fn cuLibraryGetModule(pMod: *mut CUmodule, library_: CUlibrary) {
        let out = Out::new(pMod, "pMod")?;
        out.set(module(drv()?.library_get_module(l(library_))?));
        Ok(())
    }
}

api! {
    fn cuLibraryGetGlobal(dptr: *mut CUdeviceptr, bytes: *mut usize, library_: CUlibrary, name: *const c_char) {
        let name = cstr(name, "name")?;
        let (p, n) = drv()?.library_get_global(l(library_), name, false)?;
        set_opt(dptr, p);
        set_opt(bytes, n);
        Ok(())
    }
}

api! {
    fn cuLibraryGetManaged(dptr: *mut CUdeviceptr, bytes: *mut usize, library_: CUlibrary, name: *const c_char) {
        let name = cstr(name, "name")?;
        let (p, n) = drv()?.library_get_global(l(library_), name, true)?;
        set_opt(dptr, p);
        set_opt(bytes, n);
        Ok(())
    }
}

api! {
    fn cuLibraryGetUnifiedFunction(fptr: *mut *mut c_void, library_: CUlibrary, symbol: *const c_char) {
        let out = Out::new(fptr, "fptr")?;
        let name = cstr(symbol, "symbol")?;
        drv()?.library_kernel_count(l(library_))?;
        out.set(std::ptr::null_mut());
        Err(Error::NotFound(format!("no unified function {name:?}")))
    }
}

api! {
    fn cuKernelGetFunction(pFunc: *mut CUfunction, kernel: CUkernel) {
        let out = Out::new(pFunc, "pFunc")?;
        out.set(CUfunction::from_addr(drv()?.kernel_get_function(k(kernel))? as usize));
        Ok(())
    }
}

api! {
    fn cuKernelGetLibrary(pLib: *mut CUlibrary, kernel: CUkernel) {
        let out = Out::new(pLib, "pLib")?;
        out.set(library(drv()?.kernel_get_library(k(kernel))?));
        Ok(())
    }
}

/// Names handed to C stay valid for the life of the process.
fn interned_name(h: u64, name: String) -> *const c_char {
    static NAMES: Mutex<Option<HashMap<u64, CString>>> = Mutex::new(None);
    let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    map.entry(h).or_insert_with(|| CString::new(name).unwrap_or_default()).as_ptr()
}

api! {
    fn cuKernelGetName(name: *mut *const c_char, hfunc: CUkernel) {
        let out = Out::new(name, "name")?;
        let n = drv()?.func_get_name(k(hfunc))?;
        out.set(interned_name(k(hfunc), n));
        Ok(())
    }
}

api! {
    fn cuFuncGetName(name: *mut *const c_char, hfunc: CUfunction) {
        let out = Out::new(name, "name")?;
        let h = hfunc.addr() as u64;
        let n = drv()?.func_get_name(h)?;
        out.set(interned_name(h, n));
        Ok(())
    }
}

unsafe fn param_info(f: u64, index: usize, offset: *mut usize, size: *mut usize) -> Result<(), Error> {
    let out = Out::new(offset, "paramOffset")?;
    let (o, s) = drv()?.func_param_info(f, index)?;
    out.set(o);
    set_opt(size, s);
    Ok(())
}

api! {
    fn cuKernelGetParamInfo(kernel: CUkernel, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize) {
        param_info(k(kernel), paramIndex, paramOffset, paramSize)
    }
}

api! {
    fn cuFuncGetParamInfo(func: CUfunction, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize) {
        param_info(func.addr() as u64, paramIndex, paramOffset, paramSize)
    }
}

api! {
    fn cuKernelGetParamCount(kernel: CUkernel, paramCount: *mut usize) {
        let out = Out::new(paramCount, "paramCount")?;
        out.set(drv()?.func_desc(k(kernel))?.params.len());
        Ok(())
    }
}

api! {
    fn cuFuncGetParamCount(func: CUfunction, paramCount: *mut usize) {
        let out = Out::new(paramCount, "paramCount")?;
        out.set(drv()?.func_desc(func.addr() as u64)?.params.len());
        Ok(())
    }
}

api! {
    fn cuFuncGetModule(hmod: *mut CUmodule, hfunc: CUfunction) {
        let out = Out::new(hmod, "hmod")?;
        out.set(module(drv()?.func_get_module(hfunc.addr() as u64)?));
        Ok(())
    }
}

api! {
    fn cuFuncIsLoaded(state: *mut CUfunctionLoadingState, function: CUfunction) {
        let out = Out::new(state, "state")?;
        drv()?.func_desc(function.addr() as u64)?;
        out.set(CUfunctionLoadingState::CU_FUNCTION_LOADING_STATE_LOADED);
        Ok(())
    }
}

api! {
    fn cuFuncLoad(function: CUfunction) {
        drv()?.func_desc(function.addr() as u64).map(|_| ())
    }
}

api! {
    fn cuFuncGetAttribute(pi: *mut c_int, attrib: CUfunction_attribute, hfunc: CUfunction) {
        let out = Out::new(pi, "pi")?;
        out.set(drv()?.func_get_attribute(hfunc.addr() as u64, attrib)?);
        Ok(())
    }
}

api! {
    fn cuFuncSetAttribute(hfunc: CUfunction, attrib: CUfunction_attribute, value: c_int) {
        drv()?.func_set_attribute(hfunc.addr() as u64, attrib, value)
    }
}

api! {
    fn cuFuncSetCacheConfig(hfunc: CUfunction, config: CUfunc_cache) {
        drv()?.func_set_cache_config(hfunc.addr() as u64, config.0)
    }
}

api! {
    fn cuFuncSetSharedMemConfig(hfunc: CUfunction, config: CUsharedconfig) {
        drv()?.func_set_shared_mem_config(hfunc.addr() as u64, config.0)
    }
}

api! {
    fn cuKernelGetAttribute(pi: *mut c_int, attrib: CUfunction_attribute, kernel: CUkernel, dev: CUdevice) {
        let out = Out::new(pi, "pi")?;
        let d = drv()?;
        d.device_props(dev)?;
        out.set(d.func_get_attribute(k(kernel), attrib)?);
        Ok(())
    }
}

api! {
    fn cuKernelSetAttribute(attrib: CUfunction_attribute, val: c_int, kernel: CUkernel, dev: CUdevice) {
        let d = drv()?;
        d.device_props(dev)?;
        d.func_set_attribute(k(kernel), attrib, val)
    }
}

api! {
    fn cuKernelSetCacheConfig(kernel: CUkernel, config: CUfunc_cache, dev: CUdevice) {
        let d = drv()?;
        d.device_props(dev)?;
        d.func_set_cache_config(k(kernel), config.0)
    }
}

// ---- linking ----

/// Where each link state's logs go, and what its options said.
type LinkLogs = HashMap<u64, (LogTarget, Vec<String>)>;
static LINK_LOGS: Mutex<Option<LinkLogs>> = Mutex::new(None);

fn link_target(h: u64) -> (LogTarget, Vec<String>) {
    let g = LINK_LOGS.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref().and_then(|m| m.get(&h).cloned()).unwrap_or_default()
}

unsafe fn link_create(
    numOptions: c_uint,
    options: *mut CUjit_option,
    optionValues: *mut *mut c_void,
    stateOut: *mut CUlinkState,
) -> Result<(), Error> {
    let out = Out::new(stateOut, "stateOut")?;
    let jit = parse_jit(numOptions, options, optionValues)?;
    let h = drv()?.link_create(jit.options)?;
    LINK_LOGS.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert(h, (jit.target, jit.notes));
    out.set(CUlinkState::from_addr(h as usize));
    Ok(())
}

fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(&fatbin::ELF_MAGIC.to_le_bytes())
}

/// A CUDA device ELF (a cubin or a relocatable device object) rather than a
/// host object.
fn is_device_elf(bytes: &[u8]) -> bool {
    is_elf(bytes) && bytes.get(18..20) == Some(&fatbin::EM_CUDA.to_le_bytes()[..])
}

/// Adds the fatbins a host object embeds; `lazy` for archive members.
fn link_add_object(h: u64, bytes: &[u8], name: &str, lazy: bool, log: &mut JitLog) -> Result<(), Error> {
    let d = drv()?;
    if is_device_elf(bytes) {
        let img = fatbin::Image::parse(bytes).map_err(|e| image_error(e, name))?;
        return d.link_add(h, ModuleSource::Image(&img), name, lazy, log);
    }
    let fatbins = fatbin::host_object_fatbins(bytes).map_err(|e| image_error(e, name))?;
    let many = fatbins.len() > 1;
    for (k, fb) in fatbins.iter().enumerate() {
        let part = if many { format!("{name}#{}", k + 1) } else { name.to_string() };
        let img = fatbin::Image::parse(fb).map_err(|e| image_error(e, &part))?;
        let mut one = JitLog::default();
        let r = d.link_add(h, ModuleSource::Image(&img), &part, lazy, &mut one);
        merge_log(log, one);
        r?;
    }
    Ok(())
}

fn merge_log(into: &mut JitLog, from: JitLog) {
    for (a, b) in [(&mut into.info, from.info), (&mut into.error, from.error)] {
        if !b.is_empty() {
            if !a.is_empty() {
                a.push('\n');
            }
            a.push_str(&b);
        }
    }
}

/// Adds an `ar` archive: its members' device code, each linked only when it
/// defines a symbol the link still needs. Members that are not host objects
/// with device code are left out, with a line in the info log.
fn link_add_library(h: u64, bytes: &[u8], name: &str, log: &mut JitLog) -> Result<(), Error> {
    if !fatbin::is_archive(bytes) {
        return Err(Error::InvalidImage(format!("{name}: not an ar archive")));
    }
    let members = fatbin::archive_members(bytes).map_err(|e| image_error(e, name))?;
    for (member, data) in members {
        let full = format!("{name}:{member}");
        if !is_elf(data) {
            merge_log(log, JitLog { info: format!("anycuda: {full} left out of the link: not an ELF object"), ..JitLog::default() });
            continue;
        }
        if !is_device_elf(data) && fatbin::host_object_fatbins(data).is_err() {
            merge_log(log, JitLog { info: format!("anycuda: {full} left out of the link: no device code"), ..JitLog::default() });
            continue;
        }
        link_add_object(h, data, &full, true, log)?;
    }
    Ok(())
}

unsafe fn link_add(state: CUlinkState, typ: CUjitInputType, bytes: &[u8], name: &str, jit: Jit) -> Result<(), Error> {
    let d = drv()?;
    let h = state.addr() as u64;
    let mut log = JitLog::default();
    use CUjitInputType as T;
    let r = match typ {
        T::CU_JIT_INPUT_PTX | T::CU_JIT_INPUT_FATBINARY | T::CU_JIT_INPUT_CUBIN => match fatbin::Image::parse(bytes) {
            Ok(img) => d.link_add(h, ModuleSource::Image(&img), name, false, &mut log),
            Err(e) => Err(image_error(e, name)),
        },
        T::CU_JIT_INPUT_OBJECT => link_add_object(h, bytes, name, false, &mut log),
        T::CU_JIT_INPUT_LIBRARY => link_add_library(h, bytes, name, &mut log),
        T::CU_JIT_INPUT_NVVM => Err(Error::NotSupported(format!(
            "{name}: NVVM IR (CU_JIT_INPUT_NVVM, link-time optimization) cannot be linked; anycuda links PTX (build with -rdc=true instead of -dlto)"
        ))),
        t => Err(Error::InvalidValue(format!("unknown input type {}", t.0))),
    };
    if let Err(e) = &r {
        if log.error.is_empty() {
            log.error = format!("anycuda: {name}: {e}");
        }
    }
    let (target, _) = link_target(h);
    write_logs(&target, &log);
    // Log buffers given to this call itself get the same logs.
    add_notes(&mut log, &jit.notes);
    write_logs(&jit.target, &log);
    r
}

api! {
    fn cuLinkCreate_v2(numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void, stateOut: *mut CUlinkState) {
        link_create(numOptions, options, optionValues, stateOut)
    }
}

api! {
    fn cuLinkCreate(numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void, stateOut: *mut CUlinkState) {
        link_create(numOptions, options, optionValues, stateOut)
    }
}

unsafe fn link_add_data(
    state: CUlinkState,
    typ: CUjitInputType,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    numOptions: c_uint,
    options: *mut CUjit_option,
    optionValues: *mut *mut c_void,
) -> Result<(), Error> {
    if data.is_null() || size == 0 {
        return Err(Error::InvalidValue("no data".into()));
    }
    let jit = parse_jit(numOptions, options, optionValues)?;
    let name = if name.is_null() { "input" } else { cstr(name, "name")? };
    // The caller's size is checked against its memory before any of it is
    // read, as module images are (`readable`).
    let readable = fatbin::Readable::readable_prefix(&crate::readable::ProcessMemory, data as usize, size);
    if readable < size {
        return Err(Error::InvalidValue(format!("{name}: {size} bytes of data given, only {readable} readable")));
    }
    let bytes = std::slice::from_raw_parts(data as *const u8, size);
    link_add(state, typ, bytes, name, jit)
}

api! {
    fn cuLinkAddData_v2(state: CUlinkState, typ: CUjitInputType, data: *mut c_void, size: usize, name: *const c_char, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void) {
        link_add_data(state, typ, data, size, name, numOptions, options, optionValues)
    }
}

api! {
    fn cuLinkAddData(state: CUlinkState, typ: CUjitInputType, data: *mut c_void, size: usize, name: *const c_char, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void) {
        link_add_data(state, typ, data, size, name, numOptions, options, optionValues)
    }
}

unsafe fn link_add_file(
    state: CUlinkState,
    typ: CUjitInputType,
    path: *const c_char,
    numOptions: c_uint,
    options: *mut CUjit_option,
    optionValues: *mut *mut c_void,
) -> Result<(), Error> {
    let p = cstr(path, "path")?;
    let jit = parse_jit(numOptions, options, optionValues)?;
    let bytes = read_file(p)?;
    link_add(state, typ, &bytes, p, jit)
}

api! {
    fn cuLinkAddFile_v2(state: CUlinkState, typ: CUjitInputType, path: *const c_char, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void) {
        link_add_file(state, typ, path, numOptions, options, optionValues)
    }
}

api! {
    fn cuLinkAddFile(state: CUlinkState, typ: CUjitInputType, path: *const c_char, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void) {
        link_add_file(state, typ, path, numOptions, options, optionValues)
    }
}

api! {
    fn cuLinkComplete(state: CUlinkState, cubinOut: *mut *mut c_void, sizeOut: *mut usize) {
        let out = Out::new(cubinOut, "cubinOut")?;
        let h = state.addr() as u64;
        let mut log = JitLog::default();
        let r = drv()?.link_complete(h, &mut log);
        let (target, notes) = link_target(h);
        add_notes(&mut log, &notes);
        write_logs(&target, &log);
        let (p, n) = r?;
        out.set(p as *mut c_void);
        set_opt(sizeOut, n);
        Ok(())
    }
}

api! {
    fn cuLinkDestroy(state: CUlinkState) {
        let h = state.addr() as u64;
        drv()?.link_destroy(h)?;
        if let Some(m) = LINK_LOGS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            m.remove(&h);
        }
        Ok(())
    }
}
