//! Loading the built `libamdhip64.so` as a program would (dlopen) and
//! driving it through its C API; compiling PTX with anycuda's compiler for
//! the emulated device's `gcnArchName`.
//!
//! One test executable serves one architecture (`ANYCUDA_HIP_EMULATED_ARCH`
//! is read when the library starts), so the emulator's start-up is paid
//! once per architecture; the tests of an executable share the library.
// `hipcall!` wraps its arguments in the call's unsafe block on purpose:
// every argument is a plain value or pointer handed to the C API.
#![allow(dead_code, clippy::macro_metavars_in_unsafe)]

pub mod cases;

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::null_mut;
use std::sync::OnceLock;

pub type P = *mut c_void;

/// The built `libamdhip64.so`, next to the test executable (cargo builds the
/// package's cdylib before its integration tests).
pub fn lib_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for dir in [deps.clone(), deps.parent().map(|p| p.to_path_buf()).unwrap_or_default()] {
        let p = dir.join("libamdhip64.so");
        if p.exists() {
            return p;
        }
    }
    panic!("libamdhip64.so not found next to {}; build the crate first", exe.display());
}

/// The dlopen()ed library and the device's architecture.
pub struct Hip {
    handle: P,
    /// `ANYCUDA_HIP_EMULATED_ARCH` of this executable.
    pub arch: &'static str,
    /// `gcnArchName`, which chooses the compiler's target.
    pub gcn_arch_name: String,
    /// The library's log file (`ANYCUDA_LOG_FILE`).
    pub log: PathBuf,
}

// dlsym is thread-safe; the library serialises its own state.
unsafe impl Send for Hip {}
unsafe impl Sync for Hip {}

/// Calls `hip.<name>` with the given signature.
#[macro_export]
macro_rules! hipcall {
    ($hip:expr, $name:ident : fn($($t:ty),*) ( $($a:expr),* )) => {{
        let f: unsafe extern "C" fn($($t),*) -> std::ffi::c_int = $hip.f(stringify!($name));
        #[allow(unused_unsafe)]
        unsafe { f($($a),*) }
    }};
}

/// The library for this executable's architecture, loaded once.
pub fn hip(arch: &'static str) -> &'static Hip {
    static HIP: OnceLock<Hip> = OnceLock::new();
    let h = HIP.get_or_init(|| {
        std::env::set_var("ANYCUDA_HIP_EMULATED_ARCH", arch);
        // The library's log, which tests read to see that failures say why.
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hip-emulated-{arch}-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        std::env::set_var("ANYCUDA_LOG", "debug");
        std::env::set_var("ANYCUDA_LOG_FILE", &log);
        let path = CString::new(lib_path().to_string_lossy().as_bytes()).expect("path");
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!handle.is_null(), "dlopen({}) failed", lib_path().display());
        let mut hip = Hip { handle, arch, gcn_arch_name: String::new(), log };
        assert_eq!(hipcall!(hip, hipInit: fn(c_uint)(0)), 0);
        let mut prop = vec![0u8; 4096];
        assert_eq!(hipcall!(hip, hipGetDevicePropertiesR0600: fn(*mut u8, c_int)(prop.as_mut_ptr(), 0)), 0);
        hip.gcn_arch_name = CStr::from_bytes_until_nul(&prop[1160..1416]).expect("gcnArchName").to_string_lossy().into_owned();
        hip
    });
    assert_eq!(h.arch, arch, "one architecture per test executable");
    h
}

pub const SUCCESS: c_int = 0;

impl Hip {
    pub fn addr(&self, name: &str) -> P {
        let n = CString::new(name).expect("name");
        unsafe { libc::dlsym(self.handle, n.as_ptr()) }
    }

    /// `name` as a function of type `F` (an `unsafe extern "C" fn` type).
    pub fn f<F: Copy>(&self, name: &str) -> F {
        let p = self.addr(name);
        assert!(!p.is_null(), "{name} is not exported");
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<P>());
        unsafe { std::mem::transmute_copy(&p) }
    }

    /// Whether the library's log has a line containing all of `words`.
    pub fn logged(&self, words: &[&str]) -> bool {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().any(|l| words.iter().all(|w| l.contains(w)))
    }

    pub fn error_name(&self, e: c_int) -> String {
        let f: unsafe extern "C" fn(c_int) -> *const c_char = self.f("hipGetErrorName");
        unsafe { CStr::from_ptr(f(e)) }.to_string_lossy().into_owned()
    }

    /// Panics with the error's name unless `e` is hipSuccess.
    pub fn check(&self, e: c_int, what: &str) {
        assert_eq!(e, SUCCESS, "{what}: {}", self.error_name(e));
    }

    pub fn wave_size(&self) -> usize {
        if self.arch == "gfx90a" {
            64
        } else {
            32
        }
    }

    /// A device buffer holding `data`.
    pub fn upload<T: Copy>(&self, data: &[T]) -> Dev {
        let bytes = std::mem::size_of_val(data);
        let d = self.alloc(bytes);
        self.check(
            hipcall!(self, hipMemcpy: fn(P, *const c_void, usize, c_int)(d.ptr, data.as_ptr() as *const c_void, bytes, 1)),
            "hipMemcpy HtoD",
        );
        d
    }

    /// A zeroed device buffer of `bytes` bytes.
    pub fn alloc(&self, bytes: usize) -> Dev {
        let mut p = null_mut();
        self.check(hipcall!(self, hipMalloc: fn(*mut P, usize)(&mut p, bytes)), "hipMalloc");
        self.check(hipcall!(self, hipMemsetD8: fn(P, u8, usize)(p, 0, bytes)), "hipMemsetD8");
        Dev { ptr: p, bytes }
    }

    /// `count` elements of a device buffer.
    pub fn download<T: Copy + Default>(&self, d: &Dev, count: usize) -> Vec<T> {
        let mut v = vec![T::default(); count];
        let bytes = std::mem::size_of_val(&v[..]);
        assert!(bytes <= d.bytes);
        self.check(
            hipcall!(self, hipMemcpy: fn(*mut c_void, P, usize, c_int)(v.as_mut_ptr() as *mut c_void, d.ptr, bytes, 2)),
            "hipMemcpy DtoH",
        );
        v
    }

    pub fn free(&self, d: Dev) {
        self.check(hipcall!(self, hipFree: fn(P)(d.ptr)), "hipFree");
    }

    /// Compiles PTX with anycuda's compiler for the device and loads it.
    pub fn load_ptx(&self, src: &str) -> Module {
        let object = compile(src, &self.gcn_arch_name);
        self.load_object(&object)
    }

    pub fn load_object(&self, object: &[u8]) -> Module {
        let mut m = null_mut();
        self.check(
            hipcall!(self, hipModuleLoadData: fn(*mut P, *const c_void)(&mut m, object.as_ptr() as *const c_void)),
            "hipModuleLoadData",
        );
        Module { handle: m }
    }

    pub fn function(&self, m: &Module, name: &str) -> P {
        let n = CString::new(name).expect("name");
        let mut f = null_mut();
        self.check(hipcall!(self, hipModuleGetFunction: fn(*mut P, P, *const c_char)(&mut f, m.handle, n.as_ptr())), name);
        f
    }

    /// Launches with the packed parameter buffer (`extra` form), followed,
    /// as anycuda's AMD kernels take them, by null printf buffer, heap,
    /// grid-sync workspace and variable table addresses
    /// (`amdgpu::kernarg_tail`).
    pub fn launch(&self, f: P, grid: [u32; 3], block: [u32; 3], shared: u32, args: &Args) -> c_int {
        let mut bytes = args.bytes.clone();
        bytes.resize(compiler::targets::amdgpu::kernarg_tail(bytes.len()).bytes, 0);
        let mut size = bytes.len();
        let mut extra: [P; 5] = [1 as P, bytes.as_ptr() as P, 2 as P, &mut size as *mut usize as P, 3 as P];
        hipcall!(self, hipModuleLaunchKernel: fn(P, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, P, *mut P, *mut P)(
            f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, null_mut(), null_mut(), extra.as_mut_ptr()
        ))
    }

    /// [`Hip::launch`], which must succeed.
    pub fn run(&self, f: P, grid: [u32; 3], block: [u32; 3], shared: u32, args: &Args) {
        let e = self.launch(f, grid, block, shared, args);
        self.check(e, "hipModuleLaunchKernel");
    }

    pub fn unload(&self, m: Module) {
        self.check(hipcall!(self, hipModuleUnload: fn(P)(m.handle)), "hipModuleUnload");
    }
}

pub struct Dev {
    pub ptr: P,
    pub bytes: usize,
}

pub struct Module {
    pub handle: P,
}

/// A kernel's packed parameter buffer (the PTX parameter layout: each
/// parameter at its natural alignment).
#[derive(Default)]
pub struct Args {
    pub bytes: Vec<u8>,
}

impl Args {
    pub fn new() -> Args {
        Args::default()
    }

    fn push(mut self, v: &[u8]) -> Args {
        let align = v.len();
        while !self.bytes.len().is_multiple_of(align) {
            self.bytes.push(0);
        }
        self.bytes.extend_from_slice(v);
        self
    }

    pub fn ptr(self, d: &Dev) -> Args {
        self.push(&(d.ptr as u64).to_le_bytes())
    }

    pub fn u32(self, v: u32) -> Args {
        self.push(&v.to_le_bytes())
    }

    pub fn u64(self, v: u64) -> Args {
        self.push(&v.to_le_bytes())
    }
}

/// PTX -> AMD code object for `gcn_arch_name`.
pub fn compile(src: &str, gcn_arch_name: &str) -> Vec<u8> {
    let module = ptx::parse(src).unwrap_or_else(|e| panic!("PTX does not parse: {e}"));
    let target = compiler::Target::Amdgpu { arch: gcn_arch_name.to_string() };
    compiler::compile(&module, src, &target).unwrap_or_else(|e| panic!("does not compile for {gcn_arch_name}: {e}")).object
}

/// Defines one `#[test]` per case of [`cases`] for `arch`.
#[macro_export]
macro_rules! every_case {
    ($arch:literal) => {
        $crate::every_case!($arch;
            device_and_properties, memory_and_errors, streams_and_events,
            vector_add, tiled_matmul, warp_ops, atomics, atomics_64, grid_3d, local_array,
            dynamic_shared, calls, f64_ops, trig_approx, cvt_sat_edges, clamp_bit_on_edges, hidden_arguments, globals, trap_fails_the_launch);
    };
    ($arch:literal; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                common::cases::$case(common::hip($arch));
            }
        )*
    };
}
