//! Loading the built libcuda.so, libcublas and libcublasLt for the
//! integration tests.
//!
//! Cargo builds the dev-dependencies' cdylibs (`libcuda.so`,
//! `libcublas.so`) into the `deps` directory of the test executables (and a
//! copy one level up). The driver is loaded first, by path: its soname is
//! `libcuda.so.1`, so libcublas's own `dlopen("libcuda.so.1")` finds it.
#![allow(dead_code)]

pub mod data;

use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

pub fn built(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for dir in [deps.clone(), deps.parent().map(|p| p.to_path_buf()).unwrap_or_default()] {
        let p = dir.join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} not found next to {}; build the workspace first", exe.display());
}

pub struct Lib(*mut c_void);
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

impl Lib {
    pub fn open_path(path: PathBuf) -> Lib {
        Lib::open(path)
    }
    fn open(path: PathBuf) -> Lib {
        let c = CString::new(path.to_string_lossy().as_bytes()).expect("path");
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        assert!(!h.is_null(), "dlopen({}) failed: {:?}", path.display(), unsafe { std::ffi::CStr::from_ptr(libc::dlerror()) });
        Lib(h)
    }
    pub fn addr(&self, name: &str) -> *mut c_void {
        let n = CString::new(name).expect("name");
        unsafe { libc::dlsym(self.0, n.as_ptr()) }
    }
    /// `name` as a function of type `F`.
    pub fn f<F: Copy>(&self, name: &str) -> F {
        let p = self.addr(name);
        assert!(!p.is_null(), "{name} is not exported");
        unsafe { std::mem::transmute_copy(&p) }
    }
}

pub struct Env {
    pub cuda: Lib,
    pub blas: Lib,
    pub lt: Lib,
}

/// The driver (CPU backend) and libcublas.so, loaded once per test
/// executable, with device 0's primary context current on the first
/// thread; [`Env::bind`] makes it current on others.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    let e = ENV.get_or_init(|| {
        std::env::set_var("ANYCUDA_BACKEND", "cpu");
        let cuda = Lib::open(built("libcuda.so"));
        let blas = Lib::open(built("libcublas.so"));
        let lt = Lib::open(built("libcublasLt.so"));
        let e = Env { cuda, blas, lt };
        unsafe {
            let init: unsafe extern "C" fn(u32) -> i32 = e.cuda.f("cuInit");
            assert_eq!(init(0), 0);
        }
        e
    });
    e.bind();
    e
}

impl Env {
    pub fn ctx(&self) -> *mut c_void {
        static CTX: OnceLock<usize> = OnceLock::new();
        *CTX.get_or_init(|| unsafe {
            let retain: unsafe extern "C" fn(*mut *mut c_void, i32) -> i32 = self.cuda.f("cuDevicePrimaryCtxRetain");
            let mut c = std::ptr::null_mut();
            assert_eq!(retain(&mut c, 0), 0);
            c as usize
        }) as *mut c_void
    }
    pub fn bind(&self) {
        unsafe {
            let set: unsafe extern "C" fn(*mut c_void) -> i32 = self.cuda.f("cuCtxSetCurrent");
            assert_eq!(set(self.ctx()), 0);
        }
    }
    pub fn alloc(&self, bytes: usize) -> u64 {
        unsafe {
            let f: unsafe extern "C" fn(*mut u64, usize) -> i32 = self.cuda.f("cuMemAlloc_v2");
            let mut p = 0u64;
            assert_eq!(f(&mut p, bytes.max(1)), 0, "cuMemAlloc({bytes})");
            p
        }
    }
    pub fn free(&self, p: u64) {
        unsafe {
            let f: unsafe extern "C" fn(u64) -> i32 = self.cuda.f("cuMemFree_v2");
            assert_eq!(f(p), 0);
        }
    }
    pub fn upload<T: Copy>(&self, data: &[T]) -> u64 {
        let bytes = std::mem::size_of_val(data);
        let p = self.alloc(bytes);
        unsafe {
            let f: unsafe extern "C" fn(u64, *const c_void, usize) -> i32 = self.cuda.f("cuMemcpyHtoD_v2");
            assert_eq!(f(p, data.as_ptr().cast(), bytes), 0);
        }
        p
    }
    pub fn download<T: Copy + Default>(&self, p: u64, n: usize) -> Vec<T> {
        let mut v = vec![T::default(); n];
        unsafe {
            let f: unsafe extern "C" fn(*mut c_void, u64, usize) -> i32 = self.cuda.f("cuMemcpyDtoH_v2");
            assert_eq!(f(v.as_mut_ptr().cast(), p, std::mem::size_of_val(&v[..])), 0);
        }
        v
    }
    pub fn sync(&self) {
        unsafe {
            let f: unsafe extern "C" fn() -> i32 = self.cuda.f("cuCtxSynchronize");
            assert_eq!(f(), 0);
        }
    }
    pub fn handle(&self) -> *mut c_void {
        unsafe {
            let f: unsafe extern "C" fn(*mut *mut c_void) -> i32 = self.blas.f("cublasCreate_v2");
            let mut h = std::ptr::null_mut();
            assert_eq!(f(&mut h), 0);
            h
        }
    }
    pub fn destroy(&self, h: *mut c_void) {
        unsafe {
            let f: unsafe extern "C" fn(*mut c_void) -> i32 = self.blas.f("cublasDestroy_v2");
            assert_eq!(f(h), 0);
        }
    }
    pub fn pointer_mode(&self, h: *mut c_void, device: bool) {
        unsafe {
            let f: unsafe extern "C" fn(*mut c_void, i32) -> i32 = self.blas.f("cublasSetPointerMode_v2");
            assert_eq!(f(h, device as i32), 0);
        }
    }
}

/// A small deterministic generator (xorshift), values in [-1, 1).
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}
