//! Running the PTX oracle's cases through the C ABI of the built library,
//! the way a driver-API program runs them: `cuModuleLoadData` of each
//! family's PTX text, `cuModuleGetFunction`, `cuMemAlloc`/`cuMemcpyHtoD`
//! of the inputs, outputs preset with `cuMemsetD8` (0xCD, as on the
//! hardware run), `cuLaunchKernel`, `cuCtxSynchronize`, `cuMemcpyDtoH`, and
//! the oracle's comparison. Shared by the test executables of each backend.
#![allow(dead_code)]

use crate::common::*;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;

type Dptr = u64;

/// The entry points used, resolved once.
#[allow(non_snake_case, clippy::type_complexity)]
pub struct Api {
    cuInit: unsafe extern "C" fn(u32) -> u32,
    cuDevicePrimaryCtxRetain: unsafe extern "C" fn(*mut Ptr, i32) -> u32,
    cuDevicePrimaryCtxReset_v2: unsafe extern "C" fn(i32) -> u32,
    cuCtxSetCurrent: unsafe extern "C" fn(Ptr) -> u32,
    cuCtxSynchronize: unsafe extern "C" fn() -> u32,
    cuModuleLoadData: unsafe extern "C" fn(*mut Ptr, *const c_void) -> u32,
    cuModuleLoadDataEx: unsafe extern "C" fn(*mut Ptr, *const c_void, u32, *const u32, *mut *mut c_void) -> u32,
    cuModuleUnload: unsafe extern "C" fn(Ptr) -> u32,
    cuModuleGetFunction: unsafe extern "C" fn(*mut Ptr, Ptr, *const c_char) -> u32,
    cuMemAlloc_v2: unsafe extern "C" fn(*mut Dptr, usize) -> u32,
    cuMemFree_v2: unsafe extern "C" fn(Dptr) -> u32,
    cuMemcpyHtoD_v2: unsafe extern "C" fn(Dptr, *const c_void, usize) -> u32,
    cuMemcpyDtoH_v2: unsafe extern "C" fn(*mut c_void, Dptr, usize) -> u32,
    cuMemsetD8_v2: unsafe extern "C" fn(Dptr, u8, usize) -> u32,
    cuLaunchKernel: unsafe extern "C" fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void) -> u32,
    cuGetErrorName: unsafe extern "C" fn(u32, *mut *const c_char) -> u32,
}

impl Api {
    pub fn new(l: &Lib) -> Api {
        Api {
            cuInit: l.f("cuInit"),
            cuDevicePrimaryCtxRetain: l.f("cuDevicePrimaryCtxRetain"),
            cuDevicePrimaryCtxReset_v2: l.f("cuDevicePrimaryCtxReset_v2"),
            cuCtxSetCurrent: l.f("cuCtxSetCurrent"),
            cuCtxSynchronize: l.f("cuCtxSynchronize"),
            cuModuleLoadData: l.f("cuModuleLoadData"),
            cuModuleLoadDataEx: l.f("cuModuleLoadDataEx"),
            cuModuleUnload: l.f("cuModuleUnload"),
            cuModuleGetFunction: l.f("cuModuleGetFunction"),
            cuMemAlloc_v2: l.f("cuMemAlloc_v2"),
            cuMemFree_v2: l.f("cuMemFree_v2"),
            cuMemcpyHtoD_v2: l.f("cuMemcpyHtoD_v2"),
            cuMemcpyDtoH_v2: l.f("cuMemcpyDtoH_v2"),
            cuMemsetD8_v2: l.f("cuMemsetD8_v2"),
            cuLaunchKernel: l.f("cuLaunchKernel"),
            cuGetErrorName: l.f("cuGetErrorName"),
        }
    }

    /// `Err` naming the call and its CUresult unless it succeeded.
    fn check(&self, what: &str, r: u32) -> Result<(), Failure> {
        if r == SUCCESS {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorName writes a static string or leaves NULL.
        let shown = unsafe {
            if (self.cuGetErrorName)(r, &mut name) == SUCCESS && !name.is_null() {
                CStr::from_ptr(name).to_string_lossy().into_owned()
            } else {
                format!("CUresult {r}")
            }
        };
        Err(Failure { msg: format!("{what}: {shown}"), sticky: matches!(r, ILLEGAL_ADDRESS | 714..=LAUNCH_FAILED) })
    }
}

/// Why a case failed; `sticky` when the context is unusable afterwards.
pub struct Failure {
    msg: String,
    sticky: bool,
}

impl From<String> for Failure {
    fn from(msg: String) -> Failure {
        Failure { msg, sticky: false }
    }
}

// CUjit_option values.
const CU_JIT_INFO_LOG_BUFFER: u32 = 3;
const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: u32 = 4;
const CU_JIT_ERROR_LOG_BUFFER: u32 = 5;
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: u32 = 6;
// The `extra` array's markers.
const CU_LAUNCH_PARAM_END: usize = 0;
const CU_LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
const CU_LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

pub struct Session<'a> {
    api: &'a Api,
}

impl Session<'_> {
    pub fn start(api: &Api) -> Session<'_> {
        let mut ctx = null_mut();
        // SAFETY: plain driver calls with valid out-pointers.
        unsafe {
            assert_eq!((api.cuInit)(0), SUCCESS, "cuInit");
            assert_eq!((api.cuDevicePrimaryCtxRetain)(&mut ctx, 0), SUCCESS, "cuDevicePrimaryCtxRetain");
            assert_eq!((api.cuCtxSetCurrent)(ctx), SUCCESS, "cuCtxSetCurrent");
        }
        Session { api }
    }

    /// After a fault the primary context is dead until it is reset; the
    /// remaining cases then run on a fresh one (with their modules loaded
    /// again), so one faulting kernel is reported as one failure.
    fn reset(&mut self) {
        // SAFETY: as in `start`.
        unsafe {
            assert_eq!((self.api.cuDevicePrimaryCtxReset_v2)(0), SUCCESS, "cuDevicePrimaryCtxReset");
            let mut ctx = null_mut();
            assert_eq!((self.api.cuDevicePrimaryCtxRetain)(&mut ctx, 0), SUCCESS, "cuDevicePrimaryCtxRetain");
            assert_eq!((self.api.cuCtxSetCurrent)(ctx), SUCCESS, "cuCtxSetCurrent");
        }
    }

    /// Loads a family's PTX: `cuModuleLoadData` when `info` is false,
    /// else `cuModuleLoadDataEx` returning the info log as well.
    fn load(&self, family: &str, info: bool) -> Result<(Ptr, String), String> {
        let src = oracle::module_source(family)?;
        let text = CString::new(src).map_err(|e| format!("{family}.ptx: {e}"))?;
        let mut module = null_mut();
        let mut info_log = vec![0u8; 4096];
        let mut error_log = vec![0u8; 16384];
        let opts = [CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut vals: [*mut c_void; 4] =
            [info_log.as_mut_ptr().cast(), info_log.len() as Ptr, error_log.as_mut_ptr().cast(), error_log.len() as Ptr];
        // SAFETY: NUL-terminated text, option arrays of equal length.
        let r = unsafe {
            if info {
                (self.api.cuModuleLoadDataEx)(&mut module, text.as_ptr().cast(), opts.len() as u32, opts.as_ptr(), vals.as_mut_ptr())
            } else {
                (self.api.cuModuleLoadData)(&mut module, text.as_ptr().cast())
            }
        };
        let c = |b: &[u8]| CStr::from_bytes_until_nul(b).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if r != SUCCESS {
            let mut why = self.api.check("cuModuleLoadData", r).err().map(|f| f.msg).unwrap_or_default();
            if !info {
                // Once more with the error log, to say why.
                let mut again = null_mut();
                // SAFETY: as above.
                unsafe {
                    (self.api.cuModuleLoadDataEx)(&mut again, text.as_ptr().cast(), opts.len() as u32, opts.as_ptr(), vals.as_mut_ptr())
                };
            }
            why.push_str(&format!(": {}", c(&error_log)));
            return Err(why);
        }
        Ok((module, c(&info_log)))
    }

    fn function(&self, module: Ptr, name: &str) -> Result<Ptr, Failure> {
        let n = CString::new(name).map_err(|e| e.to_string())?;
        let mut f = null_mut();
        // SAFETY: valid module handle and name.
        self.api.check("cuModuleGetFunction", unsafe { (self.api.cuModuleGetFunction)(&mut f, module, n.as_ptr()) })?;
        Ok(f)
    }

    /// Runs one case; `extra` passes its parameters in the `extra` buffer.
    fn run(&self, case: &oracle::Case, f: Ptr, extra: bool) -> Result<(), Failure> {
        let launch = case.launch()?;
        let mut ptrs: Vec<Dptr> = Vec::new();
        let result = self.run_with(&launch, f, extra, &mut ptrs);
        for p in ptrs {
            // SAFETY: each was allocated by cuMemAlloc and is freed once.
            let r = unsafe { (self.api.cuMemFree_v2)(p) };
            if result.is_ok() {
                self.api.check("cuMemFree", r)?;
            }
        }
        case.check(&result?).map_err(Failure::from)
    }

    fn run_with(&self, launch: &oracle::Launch, f: Ptr, extra: bool, ptrs: &mut Vec<Dptr>) -> Result<Vec<Vec<u8>>, Failure> {
        let api = self.api;
        for b in &launch.buffers {
            let mut p = 0;
            // Room past the end, so that a kernel indexing one element too
            // far shows up as a mismatch rather than a corrupted heap.
            // SAFETY: out-pointer is valid.
            api.check("cuMemAlloc", unsafe { (api.cuMemAlloc_v2)(&mut p, b.len() + 64) })?;
            ptrs.push(p);
            // Uniform contents (the 0xCD of outputs, zeroed buffers) go in
            // as the memset the hardware run used; data as a copy.
            match b.first() {
                Some(&v) if b.iter().all(|&x| x == v) => {
                    api.check("cuMemsetD8", unsafe { (api.cuMemsetD8_v2)(p, v, b.len()) })?;
                }
                Some(_) => {
                    api.check("cuMemcpyHtoD", unsafe { (api.cuMemcpyHtoD_v2)(p, b.as_ptr().cast(), b.len()) })?;
                }
                None => {}
            }
        }
        // The values, each at its natural alignment: pointers then the
        // 32-bit element count, as the oracle's kernels declare them.
        let mut values: Vec<Vec<u8>> = Vec::new();
        for a in &launch.args {
            values.push(match a {
                oracle::Arg::Buffer(i) => ptrs[*i].to_le_bytes().to_vec(),
                oracle::Arg::U32(v) => v.to_le_bytes().to_vec(),
            });
        }
        let [gx, gy, gz] = launch.grid;
        let [bx, by, bz] = launch.block;
        let r = if extra {
            let mut buf: Vec<u8> = Vec::new();
            for v in &values {
                while !buf.len().is_multiple_of(v.len()) {
                    buf.push(0);
                }
                buf.extend_from_slice(v);
            }
            let mut size = buf.len();
            let mut extra: [*mut c_void; 5] = [
                CU_LAUNCH_PARAM_BUFFER_POINTER as Ptr,
                buf.as_mut_ptr().cast(),
                CU_LAUNCH_PARAM_BUFFER_SIZE as Ptr,
                (&mut size as *mut usize).cast(),
                CU_LAUNCH_PARAM_END as Ptr,
            ];
            // SAFETY: the buffer and its size outlive the call.
            unsafe { (api.cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, launch.shared, null_mut(), null_mut(), extra.as_mut_ptr()) }
        } else {
            let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
            // SAFETY: one pointer per kernel parameter, each to its value.
            unsafe { (api.cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, launch.shared, null_mut(), params.as_mut_ptr(), null_mut()) }
        };
        api.check(if extra { "cuLaunchKernel (extra)" } else { "cuLaunchKernel (kernelParams)" }, r)?;
        // SAFETY: no arguments.
        api.check("cuCtxSynchronize", unsafe { (api.cuCtxSynchronize)() })?;
        let mut results = Vec::new();
        for &i in &launch.outputs {
            let mut out = vec![0u8; launch.buffers[i].len()];
            // SAFETY: the buffer has at least this many bytes.
            api.check("cuMemcpyDtoH", unsafe { (api.cuMemcpyDtoH_v2)(out.as_mut_ptr().cast(), ptrs[i], out.len()) })?;
            results.push(out);
        }
        Ok(results)
    }
}

/// Runs every oracle case through the library: `passes` times (the first
/// on an empty kernel cache; when `warm_from_cache`, later passes must load
/// their modules from the cache). Returns the passing runs and the failures.
pub fn run_cases(api: &Api, oracle: &oracle::Oracle, passes: &[&str], warm_from_cache: bool) -> (usize, Vec<String>) {
    let mut session = Session::start(api);
    let mut failures: Vec<String> = Vec::new();
    let mut passed = 0;
    for (n, pass) in passes.iter().enumerate() {
        let warm = n > 0;
        let mut modules: HashMap<String, Result<Ptr, String>> = HashMap::new();
        for (i, case) in oracle.cases.iter().enumerate() {
            let module = modules.entry(case.family.clone()).or_insert_with(|| {
                let (m, info) = session.load(&case.family, warm)?;
                if warm && warm_from_cache && !info.contains("from the cache") {
                    return Err(format!("loaded again, but not from the cache (info log: {info:?})"));
                }
                Ok(m)
            });
            let extra = (i % 2 == 1) != warm;
            let result = match module {
                Err(e) => Err(Failure::from(format!("module does not load: {e}"))),
                Ok(m) => session.function(*m, &case.kernel).and_then(|f| session.run(case, f, extra)),
            };
            match result {
                Ok(()) => passed += 1,
                Err(e) => {
                    let form = if extra { "extra" } else { "kernelParams" };
                    failures.push(format!("{}/{} ({pass} module, {form}): {}", case.family, case.kernel, e.msg));
                    if e.sticky {
                        session.reset();
                        modules.clear();
                    }
                }
            }
        }
        for (family, m) in modules {
            if let Ok(m) = m {
                // SAFETY: a module loaded above, unloaded once.
                let r = unsafe { (api.cuModuleUnload)(m) };
                if r != SUCCESS {
                    failures.push(format!("{family}: cuModuleUnload returned {r}"));
                }
            }
        }
    }
    (passed, failures)
}
