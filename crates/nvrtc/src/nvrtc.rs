//! The NVRTC C ABI: every function forwards to NVIDIA's library except
//! `nvrtcCompileProgram` (architecture options rewritten, see
//! [`crate::options`]), `nvrtcGetCUBINSize`/`nvrtcGetCUBIN` (the PTX of a
//! program compiled for a real architecture) and `nvrtcDestroyProgram`
//! (forgets that).
//!
//! The functions are generic over the library ([`Flavor`]): the shared
//! object crates instantiate them for `libnvrtc.so.13` and `.so.12`.
//!
//! LTO-IR (`-dlto`) is passed through unchanged: it is NVIDIA's input to
//! nvJitLink, and anycuda's nvJitLink turns it into PTX. OptiX IR, TileIR,
//! NVVM IR and the precompiled-header functions are NVIDIA's alone.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use crate::log::{debug, error, trace};
use crate::real::{Real, Spec};

pub type Result = c_int;
pub const NVRTC_SUCCESS: Result = 0;
pub const NVRTC_ERROR_PROGRAM_CREATION_FAILURE: Result = 2;
pub const NVRTC_ERROR_INVALID_INPUT: Result = 3;
pub const NVRTC_ERROR_INVALID_PROGRAM: Result = 4;
pub const NVRTC_ERROR_INVALID_OPTION: Result = 5;
pub const NVRTC_ERROR_INTERNAL_ERROR: Result = 11;

/// Which NVIDIA library a shared object stands for.
pub trait Flavor: 'static {
    const SPEC: Spec;
    /// NVIDIA's library, opened on first use (a `static` of the shared
    /// object's crate: each library has its own).
    fn cell() -> &'static OnceLock<Option<Real>>;
}

pub const SPEC_13: Spec = Spec {
    soname: "libnvrtc.so.13",
    env: "ANYCUDA_NVRTC_LIBRARY",
    marker: "__nvrtcCPEx",
    what: "NVRTC 13",
    wheel_dirs: &["nvidia/cu13/lib"],
};
pub const SPEC_12: Spec = Spec {
    soname: "libnvrtc.so.12",
    env: "ANYCUDA_NVRTC12_LIBRARY",
    marker: "__nvrtcCPEx",
    what: "NVRTC 12",
    wheel_dirs: &["nvidia/cuda_nvrtc/lib"],
};

fn real<F: Flavor>() -> Option<&'static Real> {
    crate::real::load_once(F::cell(), &F::SPEC, nvrtcVersion::<F> as *const c_void)
}

/// NVIDIA's function `name`, or the reason it cannot be had (logged).
unsafe fn function<F: Flavor, T: Copy>(name: &str) -> Option<T> {
    let r = real::<F>()?;
    // SAFETY: the caller's `T` is the function's C type.
    let f = unsafe { r.get::<T>(name) };
    if f.is_none() {
        error!("{name}: NVIDIA's {} at {} has no such function", F::SPEC.what, r.path.display());
    }
    f
}

/// The programs compiled for a real architecture: their handle and the
/// architecture asked for.
fn programs() -> &'static Mutex<HashMap<usize, String>> {
    static P: OnceLock<Mutex<HashMap<usize, String>>> = OnceLock::new();
    P.get_or_init(Default::default)
}

fn real_arch_of(prog: *mut c_void) -> Option<String> {
    programs().lock().unwrap_or_else(|e| e.into_inner()).get(&(prog as usize)).cloned()
}

macro_rules! forward {
    ($( fn $name:ident($($a:ident: $t:ty),*) -> $missing:expr; )*) => { $(
        pub unsafe extern "C" fn $name<F: Flavor>($($a: $t),*) -> Result {
            // SAFETY: the type is the function's C signature in nvrtc.h.
            match unsafe { function::<F, unsafe extern "C" fn($($t),*) -> Result>(stringify!($name)) } {
                // SAFETY: the caller's arguments, passed on unchanged.
                Some(f) => unsafe { f($($a),*) },
                None => $missing,
            }
        }
    )* };
}

forward! {
    fn nvrtcVersion(major: *mut c_int, minor: *mut c_int) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetNumSupportedArchs(n: *mut c_int) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetSupportedArchs(archs: *mut c_int) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcCreateProgram(prog: *mut *mut c_void, src: *const c_char, name: *const c_char, num_headers: c_int, headers: *const *const c_char, include_names: *const *const c_char) -> NVRTC_ERROR_PROGRAM_CREATION_FAILURE;
    fn nvrtcGetPTXSize(prog: *mut c_void, size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetPTX(prog: *mut c_void, ptx: *mut c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetLTOIRSize(prog: *mut c_void, size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetLTOIR(prog: *mut c_void, out: *mut c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetOptiXIRSize(prog: *mut c_void, size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetOptiXIR(prog: *mut c_void, out: *mut c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetNVVMSize(prog: *mut c_void, size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetNVVM(prog: *mut c_void, out: *mut c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetTileIRSize(prog: *mut c_void, size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetTileIR(prog: *mut c_void, out: *mut c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetProgramLogSize(prog: *mut c_void, size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetProgramLog(prog: *mut c_void, log: *mut c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcAddNameExpression(prog: *mut c_void, name: *const c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetLoweredName(prog: *mut c_void, name: *const c_char, lowered: *mut *const c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetPCHHeapSize(size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcSetPCHHeapSize(size: usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetPCHCreateStatus(prog: *mut c_void) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetPCHHeapSizeRequired(prog: *mut c_void, size: *mut usize) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcSetFlowCallback(prog: *mut c_void, callback: *mut c_void, payload: *mut c_void) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcGetBundledHeadersInfo(info: *mut c_void, error_log: *mut *const c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcInstallBundledHeaders(path: *const c_char, flags: u32, error_log: *mut *const c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
    fn nvrtcRemoveBundledHeaders(path: *const c_char, error_log: *mut *const c_char) -> NVRTC_ERROR_INTERNAL_ERROR;
}

/// NVRTC's names for its result codes (`nvrtcGetErrorString`), used when
/// NVIDIA's library cannot be loaded.
const NAMES: [&CStr; 19] = [
    c"NVRTC_SUCCESS",
    c"NVRTC_ERROR_OUT_OF_MEMORY",
    c"NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
    c"NVRTC_ERROR_INVALID_INPUT",
    c"NVRTC_ERROR_INVALID_PROGRAM",
    c"NVRTC_ERROR_INVALID_OPTION",
    c"NVRTC_ERROR_COMPILATION",
    c"NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
    c"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
    c"NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
    c"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
    c"NVRTC_ERROR_INTERNAL_ERROR",
    c"NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
    c"NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED",
    c"NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED",
    c"NVRTC_ERROR_PCH_CREATE",
    c"NVRTC_ERROR_CANCELLED",
    c"NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED",
    c"NVRTC_ERROR_BUSY",
];

pub unsafe extern "C" fn nvrtcGetErrorString<F: Flavor>(result: Result) -> *const c_char {
    type T = unsafe extern "C" fn(Result) -> *const c_char;
    // SAFETY: nvrtcGetErrorString's C signature.
    if let Some(f) = unsafe { function::<F, T>("nvrtcGetErrorString") } {
        // SAFETY: takes any value.
        return unsafe { f(result) };
    }
    usize::try_from(result).ok().and_then(|i| NAMES.get(i)).copied().unwrap_or(c"NVRTC_ERROR unknown").as_ptr()
}

pub unsafe extern "C" fn nvrtcCompileProgram<F: Flavor>(prog: *mut c_void, num_options: c_int, options: *const *const c_char) -> Result {
    type T = unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char) -> Result;
    // SAFETY: nvrtcCompileProgram's C signature.
    let Some(f) = (unsafe { function::<F, T>("nvrtcCompileProgram") }) else {
        return NVRTC_ERROR_INTERNAL_ERROR;
    };
    let n = usize::try_from(num_options).unwrap_or(0);
    if n > 0 && options.is_null() {
        // NVIDIA's answer to a null option list.
        // SAFETY: passed on unchanged.
        return unsafe { f(prog, num_options, options) };
    }
    let mut given = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: the caller passes `num_options` option strings.
        let p = unsafe { *options.add(i) };
        if p.is_null() {
            // SAFETY: passed on unchanged: NVIDIA reports the null option.
            return unsafe { f(prog, num_options, options) };
        }
        // SAFETY: a NUL-terminated option string.
        let Ok(s) = unsafe { CStr::from_ptr(p) }.to_str() else {
            debug!("nvrtcCompileProgram: option {i} is not UTF-8");
            return NVRTC_ERROR_INVALID_OPTION;
        };
        given.push(s.to_string());
    }
    let r = crate::options::rewrite(&given, &crate::options::native_compute_capability);
    let c_opts: Vec<std::ffi::CString> = r.options.iter().filter_map(|o| std::ffi::CString::new(o.as_str()).ok()).collect();
    let ptrs: Vec<*const c_char> = c_opts.iter().map(|c| c.as_ptr()).collect();
    let count = c_int::try_from(ptrs.len()).unwrap_or(c_int::MAX);
    // SAFETY: the program handle passed on; the option strings live
    // across the call.
    let rc = unsafe { f(prog, count, if ptrs.is_empty() { std::ptr::null() } else { ptrs.as_ptr() }) };
    let mut table = programs().lock().unwrap_or_else(|e| e.into_inner());
    match (&r.real_arch, &r.virtual_arch) {
        (Some(real), Some(virt)) if !r.lto => {
            debug!("nvrtcCompileProgram: {real} asked for; compiled for {virt} (PTX), which nvrtcGetCUBIN returns (result {rc})");
            table.insert(prog as usize, real.clone());
        }
        _ => {
            table.remove(&(prog as usize));
            trace!("nvrtcCompileProgram({:?}) -> {rc}", r.options);
        }
    }
    rc
}

pub unsafe extern "C" fn nvrtcGetCUBINSize<F: Flavor>(prog: *mut c_void, size: *mut usize) -> Result {
    if real_arch_of(prog).is_some() {
        // The container is NVRTC's PTX string, NUL included, as
        // nvrtcGetPTXSize counts it.
        // SAFETY: forwarded with the caller's arguments.
        return unsafe { nvrtcGetPTXSize::<F>(prog, size) };
    }
    type T = unsafe extern "C" fn(*mut c_void, *mut usize) -> Result;
    // SAFETY: nvrtcGetCUBINSize's C signature.
    match unsafe { function::<F, T>("nvrtcGetCUBINSize") } {
        // SAFETY: the caller's arguments.
        Some(f) => unsafe { f(prog, size) },
        None => NVRTC_ERROR_INTERNAL_ERROR,
    }
}

pub unsafe extern "C" fn nvrtcGetCUBIN<F: Flavor>(prog: *mut c_void, cubin: *mut c_char) -> Result {
    if let Some(arch) = real_arch_of(prog) {
        trace!("nvrtcGetCUBIN: the PTX compiled in place of {arch} machine code");
        // SAFETY: forwarded with the caller's arguments.
        return unsafe { nvrtcGetPTX::<F>(prog, cubin) };
    }
    type T = unsafe extern "C" fn(*mut c_void, *mut c_char) -> Result;
    // SAFETY: nvrtcGetCUBIN's C signature.
    match unsafe { function::<F, T>("nvrtcGetCUBIN") } {
        // SAFETY: the caller's arguments.
        Some(f) => unsafe { f(prog, cubin) },
        None => NVRTC_ERROR_INTERNAL_ERROR,
    }
}

pub unsafe extern "C" fn nvrtcDestroyProgram<F: Flavor>(prog: *mut *mut c_void) -> Result {
    if !prog.is_null() {
        // SAFETY: the caller's program handle slot.
        let h = unsafe { *prog };
        programs().lock().unwrap_or_else(|e| e.into_inner()).remove(&(h as usize));
    }
    type T = unsafe extern "C" fn(*mut *mut c_void) -> Result;
    // SAFETY: nvrtcDestroyProgram's C signature.
    match unsafe { function::<F, T>("nvrtcDestroyProgram") } {
        // SAFETY: the caller's argument.
        Some(f) => unsafe { f(prog) },
        None => NVRTC_ERROR_INVALID_PROGRAM,
    }
}
