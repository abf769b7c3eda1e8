//! CPython, loaded at run time: the process's own interpreter when it has
//! one running (a Python program that loaded the library), else Debian's
//! `libpython3.11.so.1.0` (or `ANYCUDA_HIP_EMULATED_PYTHON`), opened with
//! `RTLD_GLOBAL` so that the extension modules the standard library loads
//! (`_ctypes`, which are not linked against libpython) find its symbols.
//!
//! Only a handful of the C API's functions are used: the interpreter runs
//! source text, and data goes in and out through memory the Rust side owns
//! (the Python side reads and writes it with `ctypes`).

use std::ffi::{c_char, c_int, CString};

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};

type GilState = c_int;

pub struct Python {
    /// Keeps the library loaded (the process's own image needs nothing).
    _lib: Option<Library>,
    gil_ensure: unsafe extern "C" fn() -> GilState,
    gil_release: unsafe extern "C" fn(GilState),
    run_string: unsafe extern "C" fn(*const c_char) -> c_int,
}

const DEFAULT_LIBRARY: &str = "libpython3.11.so.1.0";

impl Python {
    /// Finds or starts an interpreter.
    pub fn start() -> Result<Python, String> {
        // SAFETY: looking up symbols of the process's global scope.
        let this = Library::this();
        // SAFETY: Py_IsInitialized has this signature in every CPython 3.
        let running = unsafe { this.get::<unsafe extern "C" fn() -> c_int>(b"Py_IsInitialized\0") }.ok().map(|f| *f);
        if let Some(is_initialized) = running {
            // SAFETY: the interpreter's own query, callable at any time.
            if unsafe { is_initialized() } != 0 {
                // SAFETY: the process's interpreter, already running.
                return unsafe { Python::bind(None, &this) };
            }
        }
        let name = std::env::var("ANYCUDA_HIP_EMULATED_PYTHON").unwrap_or_else(|_| DEFAULT_LIBRARY.to_string());
        // SAFETY: loading libpython runs no code of ours; its initialisers are CPython's.
        let lib = unsafe { Library::open(Some(&name), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| format!("cannot load {name}: {e}"))?;
        // SAFETY: the C API's signatures (CPython 3.8 and later).
        unsafe {
            let is_initialized = *lib.get::<unsafe extern "C" fn() -> c_int>(b"Py_IsInitialized\0").map_err(|e| format!("{name}: {e}"))?;
            if is_initialized() == 0 {
                // The interpreter serves the library: the user's Python
                // settings (PYTHONPATH, PYTHONHOME, the user site) stay out.
                for flag in [&b"Py_IgnoreEnvironmentFlag\0"[..], b"Py_NoUserSiteDirectory\0", b"Py_DontWriteBytecodeFlag\0"] {
                    if let Ok(p) = lib.get::<*mut c_int>(flag) {
                        **p = 1;
                    }
                }
                let init = *lib.get::<unsafe extern "C" fn(c_int)>(b"Py_InitializeEx\0").map_err(|e| format!("{name}: {e}"))?;
                let save = *lib
                    .get::<unsafe extern "C" fn() -> *mut std::ffi::c_void>(b"PyEval_SaveThread\0")
                    .map_err(|e| format!("{name}: {e}"))?;
                // No signal handlers: the process is not a Python program.
                init(0);
                if is_initialized() == 0 {
                    return Err(format!("{name}: Py_InitializeEx failed"));
                }
                // Release the GIL taken by initialisation; every call takes it.
                save();
            }
            let py = Python::bind(None, &lib)?;
            Ok(Python { _lib: Some(lib), ..py })
        }
    }

    /// # Safety
    /// `lib` must be a CPython 3 library (or the process, holding one).
    unsafe fn bind(keep: Option<Library>, lib: &Library) -> Result<Python, String> {
        // SAFETY: the C API's signatures.
        unsafe {
            Ok(Python {
                _lib: keep,
                gil_ensure: *lib.get(b"PyGILState_Ensure\0").map_err(|e| format!("PyGILState_Ensure: {e}"))?,
                gil_release: *lib.get(b"PyGILState_Release\0").map_err(|e| format!("PyGILState_Release: {e}"))?,
                run_string: *lib.get(b"PyRun_SimpleString\0").map_err(|e| format!("PyRun_SimpleString: {e}"))?,
            })
        }
    }

    /// Runs `code` in `__main__` holding the GIL; false when it raised (the
    /// interpreter has printed the traceback to stderr).
    pub fn run(&self, code: &str) -> bool {
        let Ok(code) = CString::new(code) else { return false };
        // SAFETY: the interpreter is initialised; the GIL is held around the call.
        unsafe {
            let g = (self.gil_ensure)();
            let rc = (self.run_string)(code.as_ptr());
            (self.gil_release)(g);
            rc == 0
        }
    }
}
