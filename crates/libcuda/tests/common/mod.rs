//! Loading the built libcuda.so for the integration tests.
//!
//! Cargo builds the package's cdylib (`libcuda.so`, crate type `cdylib`)
//! before it runs integration tests, into the same `deps` directory as the
//! test executables (and a copy one level up); the tests find it next to
//! their own executable, so whatever `CARGO_TARGET_DIR` is, they load the
//! library of this very build.
#![allow(dead_code)]

use std::ffi::{c_void, CString};
use std::path::PathBuf;

/// The built `libcuda.so`.
pub fn lib_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for dir in [deps.clone(), deps.parent().map(|p| p.to_path_buf()).unwrap_or_default()] {
        let p = dir.join("libcuda.so");
        if p.exists() {
            return p;
        }
    }
    panic!("libcuda.so not found next to {}; build the crate first", exe.display());
}

/// A dlopen()ed libcuda.so.
pub struct Lib {
    handle: *mut c_void,
}

// The handle is only used for dlsym, which is thread-safe.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

impl Lib {
    /// The library on the mock backend: these tests drive the driver API
    /// with the mock backend's named kernels (fills, copies, sleeps,
    /// faults); real kernels have their own tests ([`Lib::open_cpu`]).
    pub fn open() -> Lib {
        choose_backend(Some("mock"));
        Lib::load()
    }

    /// The library as programs get it: the CPU backend, compiling real PTX.
    pub fn open_cpu() -> Lib {
        choose_backend(Some("cpu"));
        Lib::load()
    }

    /// The library on the HIP backend (tests set `ANYCUDA_HIP_LIBRARY` to
    /// the HIP runtime's test double before).
    pub fn open_hip() -> Lib {
        choose_backend(Some("hip"));
        Lib::load()
    }

    fn load() -> Lib {
        let path = CString::new(lib_path().to_string_lossy().as_bytes()).expect("path");
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!handle.is_null(), "dlopen({}) failed", lib_path().display());
        Lib { handle }
    }

    /// The address of `name`, or NULL.
    pub fn addr(&self, name: &str) -> *mut c_void {
        let n = CString::new(name).expect("name");
        unsafe { libc::dlsym(self.handle, n.as_ptr()) }
    }

    /// `name` as a function of type `F` (a `unsafe extern "C" fn` type).
    pub fn f<F: Copy>(&self, name: &str) -> F {
        let p = self.addr(name);
        assert!(!p.is_null(), "{name} is not exported");
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        unsafe { std::mem::transmute_copy(&p) }
    }
}

/// The library reads `ANYCUDA_BACKEND` once, when its driver is first
/// used, and a test executable loads it once: so one test executable (one
/// file of `tests/`) uses one backend, and mixing them is a mistake in the
/// test, reported here rather than as confusing results.
fn choose_backend(backend: Option<&'static str>) {
    static CHOSEN: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    let chosen = *CHOSEN.get_or_init(|| {
        match backend {
            Some(b) => std::env::set_var("ANYCUDA_BACKEND", b),
            None => std::env::remove_var("ANYCUDA_BACKEND"),
        }
        backend
    });
    assert_eq!(chosen, backend, "one test executable opens the library with one backend; put these tests in their own file");
}

/// Declares typed entry points: `api!(lib; cuInit: fn(u32); ...)`, each
/// returning the CUresult as `u32`.
#[macro_export]
macro_rules! api {
    ($lib:expr; $($name:ident : fn($($t:ty),*);)*) => {
        $(
            #[allow(non_snake_case, unused_variables)]
            let $name: unsafe extern "C" fn($($t),*) -> u32 = $lib.f(stringify!($name));
        )*
    };
}

// CUresult values the tests compare against.
pub const SUCCESS: u32 = 0;
pub const INVALID_VALUE: u32 = 1;
pub const OUT_OF_MEMORY: u32 = 2;
pub const NOT_INITIALIZED: u32 = 3;
pub const INVALID_DEVICE: u32 = 101;
pub const INVALID_IMAGE: u32 = 200;
pub const INVALID_CONTEXT: u32 = 201;
pub const NO_BINARY_FOR_GPU: u32 = 209;
pub const INVALID_PTX: u32 = 218;
pub const FILE_NOT_FOUND: u32 = 301;
pub const INVALID_HANDLE: u32 = 400;
pub const NOT_FOUND: u32 = 500;
pub const NOT_READY: u32 = 600;
pub const ILLEGAL_ADDRESS: u32 = 700;
pub const LAUNCH_OUT_OF_RESOURCES: u32 = 701;
pub const LAUNCH_FAILED: u32 = 719;
pub const CONTEXT_IS_DESTROYED: u32 = 709;
pub const COOPERATIVE_LAUNCH_TOO_LARGE: u32 = 720;
pub const HOST_MEMORY_ALREADY_REGISTERED: u32 = 712;
pub const HOST_MEMORY_NOT_REGISTERED: u32 = 713;
pub const NOT_SUPPORTED: u32 = 801;
pub const UNSUPPORTED_LIMIT: u32 = 215;

pub type Ptr = *mut c_void;

/// PTX whose kernels the mock backend implements (see
/// `driver::mock::MockBackend::with_builtins`), NUL-terminated.
pub const MOCK_PTX: &str = concat!(
    ".version 8.6\n.target sm_80\n.address_size 64\n",
    ".global .align 4 .u32 counter;\n",
    ".visible .entry mock_fill_u32(.param .u64 p, .param .u32 v, .param .u32 n) { ret; }\n",
    ".visible .entry mock_copy_u32(.param .u64 d, .param .u64 s, .param .u32 n) { ret; }\n",
    ".visible .entry mock_fault() { ret; }\n",
    ".visible .entry mock_sleep(.param .u32 ms) { ret; }\n",
    ".visible .entry limited() .maxntid 64 { ret; }\n",
    "\0"
);
