//! The nvJitLink C ABI (`libnvJitLink.so.13`).
//!
//! A link handle is anycuda's: it keeps the PTX inputs itself (NVIDIA's
//! nvJitLink links PTX only into machine code: its `-ptx` output needs
//! every input to be LTO-IR) and hands LTO-IR to NVIDIA's nvJitLink,
//! created with the caller's options plus `-ptx`. `nvJitLinkComplete`
//! links NVIDIA's PTX output (from the LTO-IR, if any) with the PTX inputs
//! ([`crate::ptxlink`]); the linked PTX is what both
//! `nvJitLinkGetLinkedPtx` and `nvJitLinkGetLinkedCubin` return (the
//! container of [`crate::ptx_container`], which the driver loads).
//!
//! Inputs: PTX, LTO-IR, fatbins (their PTX, or the whole fatbin to NVIDIA
//! when it holds none, as for LTO-IR fatbins), host objects (the PTX of
//! the fatbins `nvcc -dc` embeds), libraries (`ar` archives of such
//! objects, as CUDA's `libcudadevrt.a`: a member's PTX is linked only when
//! it defines something still undefined; members without PTX are left out
//! with a line in the info log) and `NVJITLINK_INPUT_ANY` (told apart by
//! their content). Machine code (cubins, objects holding only machine
//! code) cannot run on anycuda: such inputs fail with
//! `NVJITLINK_ERROR_INVALID_INPUT` and a message in the error log. Links of
//! PTX alone work without NVIDIA's library.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use crate::log::{debug, error, trace};
use crate::real::{Real, Spec};

pub type Result = c_int;
pub const SUCCESS: Result = 0;
pub const ERROR_UNRECOGNIZED_OPTION: Result = 1;
pub const ERROR_MISSING_ARCH: Result = 2;
pub const ERROR_INVALID_INPUT: Result = 3;
pub const ERROR_PTX_COMPILE: Result = 4;
pub const ERROR_INTERNAL: Result = 6;
pub const ERROR_NULL_INPUT: Result = 9;

pub const INPUT_CUBIN: c_int = 1;
pub const INPUT_PTX: c_int = 2;
pub const INPUT_LTOIR: c_int = 3;
pub const INPUT_FATBIN: c_int = 4;
pub const INPUT_OBJECT: c_int = 5;
pub const INPUT_LIBRARY: c_int = 6;
pub const INPUT_INDEX: c_int = 7;
pub const INPUT_ANY: c_int = 10;

pub const SPEC: Spec = Spec {
    soname: "libnvJitLink.so.13",
    env: "ANYCUDA_NVJITLINK_LIBRARY",
    marker: "__nvJitLinkAPI",
    what: "nvJitLink 13",
    wheel_dirs: &["nvidia/cu13/lib"],
};

fn real() -> Option<&'static Real> {
    static CELL: OnceLock<Option<Real>> = OnceLock::new();
    crate::real::load_once(&CELL, &SPEC, nvJitLinkVersion as *const c_void)
}

unsafe fn function<T: Copy>(name: &str) -> Option<T> {
    // SAFETY: the caller's `T` is the function's C type.
    real().and_then(|r| unsafe { r.get::<T>(name) })
}

type Handle = *mut c_void;

/// A link in progress.
struct Link {
    /// NVIDIA's handle, when its library is there.
    real: Option<Handle>,
    /// `sm_XX` or `compute_XX` of `-arch`, its number.
    arch: u32,
    ptx: Vec<(String, String)>,
    /// Archive members' PTX, linked when needed.
    lazy: Vec<(String, String)>,
    /// Inputs handed to NVIDIA's nvJitLink.
    real_inputs: usize,
    linked: Option<Vec<u8>>,
    error_log: String,
    info_log: String,
}

fn arch_number(value: &str) -> Option<u32> {
    let rest = value.strip_prefix("sm_").or_else(|| value.strip_prefix("compute_"))?;
    rest.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok()
}

unsafe fn link<'a>(h: Handle) -> Option<&'a mut Link> {
    // SAFETY: a handle nvJitLinkCreate made (the caller's contract).
    unsafe { h.cast::<Link>().as_mut() }
}

pub unsafe extern "C" fn nvJitLinkCreate(handle: *mut Handle, num_options: u32, options: *const *const c_char) -> Result {
    if handle.is_null() {
        return ERROR_NULL_INPUT;
    }
    let mut given = Vec::new();
    for i in 0..num_options as usize {
        // SAFETY: the caller passes `num_options` strings.
        let p = unsafe { *options.add(i) };
        if p.is_null() {
            return ERROR_NULL_INPUT;
        }
        // SAFETY: NUL-terminated.
        given.push(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
    }
    let arch = given.iter().rev().find_map(|o| o.strip_prefix("-arch=")).map(|v| v.to_string());
    let Some(arch_value) = arch else {
        debug!("nvJitLinkCreate: no -arch=sm_NN option");
        return ERROR_MISSING_ARCH;
    };
    let Some(arch) = arch_number(&arch_value) else {
        debug!("nvJitLinkCreate: unrecognised -arch={arch_value}");
        return ERROR_MISSING_ARCH;
    };
    let lto = given.iter().any(|o| o == "-lto");
    let mut real_handle = None;
    if let Some(create) =
        unsafe { function::<unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> Result>("__nvJitLinkCreate_13_0") }
    {
        let mut opts = given.clone();
        if lto && !opts.iter().any(|o| o == "-ptx") {
            opts.push("-ptx".into());
        }
        let c: Vec<CString> = opts.iter().filter_map(|o| CString::new(o.as_str()).ok()).collect();
        let p: Vec<*const c_char> = c.iter().map(|c| c.as_ptr()).collect();
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: nvJitLinkCreate with options that live across the call.
        let rc = unsafe { create(&mut h, p.len() as u32, p.as_ptr()) };
        if rc != SUCCESS {
            debug!("nvJitLinkCreate({given:?}): NVIDIA's nvJitLink refused the options: {rc}");
            return rc;
        }
        real_handle = Some(h);
    }
    trace!("nvJitLinkCreate({given:?}): links to PTX for {arch_value}");
    let l = Box::new(Link {
        real: real_handle,
        arch,
        ptx: Vec::new(),
        lazy: Vec::new(),
        real_inputs: 0,
        linked: None,
        error_log: String::new(),
        info_log: String::new(),
    });
    // SAFETY: checked non-null above.
    unsafe { *handle = Box::into_raw(l).cast() };
    SUCCESS
}

pub unsafe extern "C" fn nvJitLinkDestroy(handle: *mut Handle) -> Result {
    if handle.is_null() {
        return ERROR_NULL_INPUT;
    }
    // SAFETY: the slot the caller passes.
    let h = unsafe { *handle };
    if h.is_null() {
        return ERROR_NULL_INPUT;
    }
    // SAFETY: a handle made by nvJitLinkCreate, destroyed once.
    let mut l = unsafe { Box::from_raw(h.cast::<Link>()) };
    if let (Some(mut r), Some(destroy)) =
        (l.real.take(), unsafe { function::<unsafe extern "C" fn(*mut Handle) -> Result>("__nvJitLinkDestroy_13_0") })
    {
        // SAFETY: NVIDIA's handle, destroyed once.
        unsafe { destroy(&mut r) };
    }
    // SAFETY: the caller's slot.
    unsafe { *handle = std::ptr::null_mut() };
    SUCCESS
}

/// What an input of `NVJITLINK_INPUT_ANY` is.
fn classify(data: &[u8]) -> c_int {
    match data.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])) {
        Some(fatbin::FATBIN_MAGIC) => INPUT_FATBIN,
        Some(fatbin::ELF_MAGIC) => INPUT_CUBIN,
        _ if data.starts_with(b"!<arch>") => INPUT_LIBRARY,
        _ => {
            let text = data.split(|&b| b == 0).next().unwrap_or(&[]);
            let ptx = std::str::from_utf8(text).is_ok_and(|t| t.contains(".version") && t.contains(".target"));
            if ptx {
                INPUT_PTX
            } else {
                INPUT_LTOIR
            }
        }
    }
}

impl Link {
    fn fail(&mut self, code: Result, msg: String) -> Result {
        debug!("{msg}");
        self.error_log.push_str(&msg);
        self.error_log.push('\n');
        code
    }

    fn add_real(&mut self, kind: c_int, data: &[u8], name: &CStr) -> Result {
        let (Some(h), Some(add)) = (self.real, unsafe {
            function::<unsafe extern "C" fn(Handle, c_int, *const c_void, usize, *const c_char) -> Result>("__nvJitLinkAddData_13_0")
        }) else {
            return self.fail(
                ERROR_INVALID_INPUT,
                format!(
                    "anycuda: input {} is LTO-IR (or holds no PTX), which only NVIDIA's nvJitLink can link, and {} could not be loaded (see {})",
                    name.to_string_lossy(),
                    SPEC.soname,
                    SPEC.env
                ),
            );
        };
        // SAFETY: the caller's bytes, passed on.
        let rc = unsafe { add(h, kind, data.as_ptr().cast(), data.len(), name.as_ptr()) };
        if rc == SUCCESS {
            self.real_inputs += 1;
        }
        rc
    }

    fn add(&mut self, kind: c_int, data: &[u8], name: &CStr) -> Result {
        let label = name.to_string_lossy().into_owned();
        let kind = if kind == INPUT_ANY { classify(data) } else { kind };
        match kind {
            INPUT_PTX => {
                let text = data.split(|&b| b == 0).next().unwrap_or(&[]);
                match std::str::from_utf8(text) {
                    Ok(t) => {
                        self.ptx.push((label, t.to_string()));
                        SUCCESS
                    }
                    Err(e) => self.fail(ERROR_INVALID_INPUT, format!("anycuda: input {label}: the PTX is not text ({e})")),
                }
            }
            INPUT_LTOIR => self.add_real(kind, data, name),
            INPUT_FATBIN => match fatbin::Fatbin::parse(data) {
                Ok(f) => match f.extract_ptx(self.arch, fatbin::Policy::Nearest) {
                    Ok(p) => {
                        self.ptx.push((label, p.text.into_owned()));
                        SUCCESS
                    }
                    Err(_) => self.add_real(kind, data, name),
                },
                Err(e) => self.fail(ERROR_INVALID_INPUT, format!("anycuda: input {label}: not a fatbin ({e})")),
            },
            INPUT_OBJECT if fatbin::host_object_fatbins(data).is_ok() => match self.object_ptx(data) {
                Ok(texts) if !texts.is_empty() => {
                    self.ptx.extend(texts.into_iter().map(|t| (label.clone(), t)));
                    SUCCESS
                }
                Ok(_) => self.fail(ERROR_INVALID_INPUT, format!("anycuda: input {label}: its device code holds no PTX for sm_{}", self.arch)),
                Err(e) => self.fail(ERROR_INVALID_INPUT, format!("anycuda: input {label}: {e}")),
            },
            INPUT_LIBRARY if fatbin::is_archive(data) => self.add_library(data, &label),
            INPUT_CUBIN | INPUT_OBJECT | INPUT_LIBRARY | INPUT_INDEX => self.fail(
                ERROR_INVALID_INPUT,
                format!("anycuda: input {label} is NVIDIA machine code (input type {kind}); anycuda runs PTX only: link PTX, LTO-IR or fatbins holding PTX"),
            ),
            _ => self.fail(ERROR_INVALID_INPUT, format!("anycuda: input {label}: unknown input type {kind}")),
        }
    }

    /// The PTX of each fatbin a host object embeds (none for fatbins
    /// without PTX for the target).
    fn object_ptx(&self, data: &[u8]) -> std::result::Result<Vec<String>, String> {
        let mut out = Vec::new();
        for bin in fatbin::host_object_fatbins(data).map_err(|e| e.to_string())? {
            let f = fatbin::Fatbin::parse(bin).map_err(|e| format!("not a fatbin ({e})"))?;
            if let Ok(p) = f.extract_ptx(self.arch, fatbin::Policy::Nearest) {
                out.push(p.text.into_owned());
            }
        }
        Ok(out)
    }

    fn add_library(&mut self, data: &[u8], label: &str) -> Result {
        let members = match fatbin::archive_members(data) {
            Ok(m) => m,
            Err(e) => return self.fail(ERROR_INVALID_INPUT, format!("anycuda: input {label}: not an archive ({e})")),
        };
        for (member, bytes) in members {
            match self.object_ptx(bytes) {
                Ok(texts) if !texts.is_empty() => self.lazy.extend(texts.into_iter().map(|t| (format!("{label}({member})"), t))),
                Ok(_) => self.info_log.push_str(&format!("anycuda: {label}({member}) left out: no PTX for sm_{}\n", self.arch)),
                Err(e) => self.info_log.push_str(&format!("anycuda: {label}({member}) left out: {e}\n")),
            }
        }
        SUCCESS
    }

    fn complete(&mut self) -> Result {
        let mut modules = Vec::new();
        if self.real_inputs > 0 {
            let h = self.real.unwrap_or(std::ptr::null_mut());
            type Complete = unsafe extern "C" fn(Handle) -> Result;
            type Size = unsafe extern "C" fn(Handle, *mut usize) -> Result;
            type Get = unsafe extern "C" fn(Handle, *mut c_char) -> Result;
            // SAFETY: nvJitLink.h's C signatures.
            let found = unsafe {
                (
                    function::<Complete>("__nvJitLinkComplete_13_0"),
                    function::<Size>("__nvJitLinkGetLinkedPtxSize_13_0"),
                    function::<Get>("__nvJitLinkGetLinkedPtx_13_0"),
                )
            };
            let (Some(complete), Some(size), Some(get)) = found else {
                return self.fail(ERROR_INTERNAL, "anycuda: NVIDIA's nvJitLink lacks the functions to link LTO-IR to PTX".into());
            };
            // SAFETY: NVIDIA's handle.
            let rc = unsafe { complete(h) };
            if rc != SUCCESS {
                return rc;
            }
            let mut n = 0usize;
            // SAFETY: NVIDIA's handle, a size slot.
            let rc = unsafe { size(h, &mut n) };
            if rc != SUCCESS {
                return self.fail(rc, format!("anycuda: NVIDIA's nvJitLink made no PTX of the LTO-IR inputs (error {rc}); pass -lto"));
            }
            let mut buf = vec![0u8; n];
            // SAFETY: a buffer of the size reported.
            let rc = unsafe { get(h, buf.as_mut_ptr().cast()) };
            if rc != SUCCESS {
                return rc;
            }
            let text = String::from_utf8_lossy(buf.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
            modules.push(("LTO-IR inputs".to_string(), text));
        }
        modules.extend(self.ptx.iter().cloned());
        match crate::ptxlink::link(&modules, &self.lazy) {
            Ok(ptx) => {
                self.info_log.push_str(&format!("anycuda: linked {} PTX module(s) for sm_{} into PTX\n", modules.len(), self.arch));
                self.linked = Some(crate::ptx_container(&ptx));
                SUCCESS
            }
            Err(e) => self.fail(ERROR_PTX_COMPILE, format!("anycuda: cannot link the PTX: {e}")),
        }
    }
}

pub unsafe extern "C" fn nvJitLinkAddData(handle: Handle, kind: c_int, data: *const c_void, size: usize, name: *const c_char) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    if data.is_null() {
        return ERROR_NULL_INPUT;
    }
    // SAFETY: `size` readable bytes at `data` (the caller's contract).
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    let name = if name.is_null() { c"(unnamed)" } else { unsafe { CStr::from_ptr(name) } };
    l.add(kind, bytes, name)
}

pub unsafe extern "C" fn nvJitLinkAddFile(handle: Handle, kind: c_int, file: *const c_char) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    if file.is_null() {
        return ERROR_NULL_INPUT;
    }
    // SAFETY: NUL-terminated file name.
    let name = unsafe { CStr::from_ptr(file) };
    let path = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    match std::fs::read(&path) {
        Ok(bytes) => l.add(kind, &bytes, name),
        Err(e) => l.fail(ERROR_INVALID_INPUT, format!("anycuda: cannot read {}: {e}", path.display())),
    }
}

pub unsafe extern "C" fn nvJitLinkComplete(handle: Handle) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    l.complete()
}

unsafe fn linked_size(handle: Handle, size: *mut usize) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    if size.is_null() {
        return ERROR_NULL_INPUT;
    }
    match &l.linked {
        Some(v) => {
            // SAFETY: the caller's size slot.
            unsafe { *size = v.len() };
            SUCCESS
        }
        None => ERROR_INVALID_INPUT,
    }
}

unsafe fn linked_copy(handle: Handle, out: *mut c_void) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    if out.is_null() {
        return ERROR_NULL_INPUT;
    }
    match &l.linked {
        Some(v) => {
            // SAFETY: the caller's buffer holds the size reported.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out.cast::<u8>(), v.len()) };
            SUCCESS
        }
        None => ERROR_INVALID_INPUT,
    }
}

pub unsafe extern "C" fn nvJitLinkGetLinkedCubinSize(handle: Handle, size: *mut usize) -> Result {
    // SAFETY: forwarded.
    unsafe { linked_size(handle, size) }
}

pub unsafe extern "C" fn nvJitLinkGetLinkedCubin(handle: Handle, cubin: *mut c_void) -> Result {
    // SAFETY: forwarded.
    unsafe { linked_copy(handle, cubin) }
}

pub unsafe extern "C" fn nvJitLinkGetLinkedPtxSize(handle: Handle, size: *mut usize) -> Result {
    // SAFETY: forwarded.
    unsafe { linked_size(handle, size) }
}

pub unsafe extern "C" fn nvJitLinkGetLinkedPtx(handle: Handle, ptx: *mut c_char) -> Result {
    // SAFETY: forwarded.
    unsafe { linked_copy(handle, ptx.cast()) }
}

/// LTO-IR output (`-lto -ltoir`... as NVIDIA's nvJitLink makes it).
unsafe fn real_call2(handle: Handle, name: &str, arg: *mut c_void) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    let Some(h) = l.real else { return ERROR_INVALID_INPUT };
    match unsafe { function::<unsafe extern "C" fn(Handle, *mut c_void) -> Result>(name) } {
        // SAFETY: NVIDIA's handle and the caller's argument.
        Some(f) => unsafe { f(h, arg) },
        None => ERROR_INTERNAL,
    }
}

pub unsafe extern "C" fn nvJitLinkGetLinkedLTOIRSize(handle: Handle, size: *mut usize) -> Result {
    // SAFETY: forwarded.
    unsafe { real_call2(handle, "__nvJitLinkGetLinkedLTOIRSize_13_0", size.cast()) }
}

pub unsafe extern "C" fn nvJitLinkGetLinkedLTOIR(handle: Handle, out: *mut c_char) -> Result {
    // SAFETY: forwarded.
    unsafe { real_call2(handle, "__nvJitLinkGetLinkedLTOIR_13_0", out.cast()) }
}

/// NVIDIA's log (when it has a handle) followed by anycuda's.
unsafe fn log_text(l: &Link, error: bool) -> Vec<u8> {
    let mut v = Vec::new();
    if let Some(h) = l.real {
        let (size_name, get_name) = if error {
            ("__nvJitLinkGetErrorLogSize_13_0", "__nvJitLinkGetErrorLog_13_0")
        } else {
            ("__nvJitLinkGetInfoLogSize_13_0", "__nvJitLinkGetInfoLog_13_0")
        };
        let (size, get) = unsafe {
            (
                function::<unsafe extern "C" fn(Handle, *mut usize) -> Result>(size_name),
                function::<unsafe extern "C" fn(Handle, *mut c_char) -> Result>(get_name),
            )
        };
        if let (Some(size), Some(get)) = (size, get) {
            let mut n = 0;
            // SAFETY: NVIDIA's handle.
            if unsafe { size(h, &mut n) } == SUCCESS && n > 0 {
                let mut buf = vec![0u8; n];
                // SAFETY: a buffer of the size reported.
                if unsafe { get(h, buf.as_mut_ptr().cast()) } == SUCCESS {
                    v.extend(buf.split(|&b| b == 0).next().unwrap_or(&[]));
                }
            }
        }
    }
    v.extend_from_slice(if error { l.error_log.as_bytes() } else { l.info_log.as_bytes() });
    v.push(0);
    v
}

unsafe fn log_size(handle: Handle, size: *mut usize, error: bool) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    if size.is_null() {
        return ERROR_NULL_INPUT;
    }
    // SAFETY: the caller's size slot.
    unsafe { *size = log_text(l, error).len() };
    SUCCESS
}

unsafe fn log_copy(handle: Handle, out: *mut c_char, error: bool) -> Result {
    // SAFETY: the caller's handle.
    let Some(l) = (unsafe { link(handle) }) else { return ERROR_NULL_INPUT };
    if out.is_null() {
        return ERROR_NULL_INPUT;
    }
    let v = unsafe { log_text(l, error) };
    // SAFETY: the caller's buffer holds the size reported.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out.cast::<u8>(), v.len()) };
    SUCCESS
}

pub unsafe extern "C" fn nvJitLinkGetErrorLogSize(handle: Handle, size: *mut usize) -> Result {
    // SAFETY: forwarded.
    unsafe { log_size(handle, size, true) }
}

pub unsafe extern "C" fn nvJitLinkGetErrorLog(handle: Handle, log: *mut c_char) -> Result {
    // SAFETY: forwarded.
    unsafe { log_copy(handle, log, true) }
}

pub unsafe extern "C" fn nvJitLinkGetInfoLogSize(handle: Handle, size: *mut usize) -> Result {
    // SAFETY: forwarded.
    unsafe { log_size(handle, size, false) }
}

pub unsafe extern "C" fn nvJitLinkGetInfoLog(handle: Handle, log: *mut c_char) -> Result {
    // SAFETY: forwarded.
    unsafe { log_copy(handle, log, false) }
}

/// The version of NVIDIA's library, or of the API anycuda's implements
/// (13.5) without it.
pub unsafe extern "C" fn nvJitLinkVersion(major: *mut u32, minor: *mut u32) -> Result {
    if major.is_null() || minor.is_null() {
        return ERROR_NULL_INPUT;
    }
    if let Some(f) = unsafe { function::<unsafe extern "C" fn(*mut u32, *mut u32) -> Result>("nvJitLinkVersion") } {
        // SAFETY: the caller's slots.
        return unsafe { f(major, minor) };
    }
    error!("nvJitLinkVersion: NVIDIA's nvJitLink is not available; reporting 13.5");
    // SAFETY: checked non-null.
    unsafe {
        *major = 13;
        *minor = 5;
    }
    SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_told_apart() {
        assert_eq!(classify(b".version 8.0\n.target sm_80\n"), INPUT_PTX);
        assert_eq!(classify(&[0x7f, b'E', b'L', b'F', 2, 1]), INPUT_CUBIN);
        assert_eq!(classify(&0xBA55_ED50u32.to_le_bytes()), INPUT_FATBIN);
        assert_eq!(classify(b"!<arch>\n"), INPUT_LIBRARY);
        assert_eq!(classify(&[0x7f, 0x4e, 0x43, 0xed, 1, 2]), INPUT_LTOIR);
    }

    #[test]
    fn arch_numbers() {
        assert_eq!(arch_number("sm_80"), Some(80));
        assert_eq!(arch_number("sm_90a"), Some(90));
        assert_eq!(arch_number("compute_75"), Some(75));
        assert_eq!(arch_number("lto_80"), None);
    }
}
