//! The C symbols of libcublas. Each function only converts its arguments
//! and calls the checked implementation in `blas.rs`/`handle.rs`; the
//! shared objects export them (with NVIDIA's symbol versions) after
//! `exports/cublas.txt`. `_64` variants take 64-bit sizes.
// The pointer arguments are the C ABI's; each is checked as cuBLAS checks
// it before it is read.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_char, c_int, c_void};

use crate::backend::Compute;
use crate::blas::{self, BatchArg, GemmArgs, Operand, L1};
use crate::handle::{self, api, HandleT};
use crate::status::{self, Error, Status};
use crate::types::{DType, CUDA_R_16F};

type P = *const c_void;
type PM = *mut c_void;

// ---- handle and settings --------------------------------------------------

pub unsafe extern "C" fn cublasCreate_v2(out: *mut HandleT) -> Status {
    api("cublasCreate_v2", || {
        if out.is_null() {
            return Err(Error::invalid("handle is NULL"));
        }
        let h = handle::create()?;
        // SAFETY: checked non-NULL; the caller's out-pointer.
        unsafe { *out = h };
        Ok(())
    })
}

pub unsafe extern "C" fn cublasDestroy_v2(h: HandleT) -> Status {
    api("cublasDestroy_v2", || handle::destroy(h))
}

pub unsafe extern "C" fn cublasSetStream_v2(h: HandleT, stream: PM) -> Status {
    api("cublasSetStream_v2", || {
        handle::with(h, |hd| {
            let mut s = hd.update();
            s.stream = stream as usize;
            // NVIDIA's resets the workspace to the default one on a stream
            // change.
            s.workspace = (0, 0);
            Ok(())
        })
    })
}

/// `cublasGetError` (legacy API): the error of this thread's last legacy
/// call, then `CUBLAS_STATUS_SUCCESS` until the next failing one. The
/// legacy routines are not implemented (see [`crate::unsupported`]).
pub unsafe extern "C" fn cublasGetError() -> Status {
    crate::unsupported::take_legacy_error()
}

pub unsafe extern "C" fn cublasGetStream_v2(h: HandleT, out: *mut PM) -> Status {
    api("cublasGetStream_v2", || {
        handle::with(h, |hd| {
            if out.is_null() {
                return Err(Error::invalid("streamId is NULL"));
            }
            // SAFETY: checked non-NULL.
            unsafe { *out = hd.settings().stream as PM };
            Ok(())
        })
    })
}

pub unsafe extern "C" fn cublasSetWorkspace_v2(h: HandleT, ws: PM, size: usize) -> Status {
    api("cublasSetWorkspace_v2", || {
        handle::with(h, |hd| {
            if ws.is_null() && size != 0 {
                return Err(Error::invalid("workspace is NULL with a non-zero size"));
            }
            if !(ws as usize).is_multiple_of(256) {
                return Err(Error::invalid(format!("workspace {ws:p} is not 256-byte aligned")));
            }
            hd.update().workspace = (ws as usize, size);
            Ok(())
        })
    })
}

macro_rules! get_set_i32 {
    ($get:ident, $set:ident, $field:ident, $valid:expr) => {
        pub unsafe extern "C" fn $get(h: HandleT, out: *mut c_int) -> Status {
            api(stringify!($get), || {
                handle::with(h, |hd| {
                    if out.is_null() {
                        return Err(Error::invalid("mode is NULL"));
                    }
                    // SAFETY: checked non-NULL.
                    unsafe { *out = hd.settings().$field };
                    Ok(())
                })
            })
        }
        pub unsafe extern "C" fn $set(h: HandleT, v: c_int) -> Status {
            api(stringify!($set), || {
                handle::with(h, |hd| {
                    let valid: fn(i32) -> bool = $valid;
                    if !valid(v) {
                        return Err(Error::invalid(format!("{v} is not a valid value")));
                    }
                    hd.update().$field = v;
                    Ok(())
                })
            })
        }
    };
}

get_set_i32!(cublasGetPointerMode_v2, cublasSetPointerMode_v2, pointer_mode, |v| v == 0 || v == 1);
get_set_i32!(cublasGetAtomicsMode, cublasSetAtomicsMode, atomics_mode, |v| v == 0 || v == 1);
// The math mode: a base mode (0..=4, 8) plus the
// DISALLOW_REDUCED_PRECISION_REDUCTION flag (16).
get_set_i32!(cublasGetMathMode, cublasSetMathMode, math_mode, |v| matches!(v & !16, 0..=4 | 8));
get_set_i32!(cublasGetSmCountTarget, cublasSetSmCountTarget, sm_count_target, |v| v >= 0);
get_set_i32!(cublasGetEmulationStrategy, cublasSetEmulationStrategy, emulation_strategy, |v| (0..=2).contains(&v));

// ---- version, status strings, logger --------------------------------------

/// The cuBLAS release a library answers for (`cublasGetVersion`,
/// `cublasGetProperty`) and the CUDA runtime it was made for.
#[derive(Debug, Clone, Copy)]
pub struct Release {
    pub major: i32,
    pub minor: i32,
    pub patch: i32,
    pub cudart: usize,
}

/// The releases whose headers the two shared objects match.
pub const RELEASE_13: Release = Release { major: 13, minor: 10, patch: 0, cudart: 13050 };
pub const RELEASE_12: Release = Release { major: 12, minor: 9, patch: 1, cudart: 12090 };

impl Release {
    pub fn version(self) -> i32 {
        self.major * 10000 + self.minor * 100 + self.patch
    }
}

pub fn get_version(h: HandleT, out: *mut c_int, r: Release) -> Status {
    api("cublasGetVersion_v2", || {
        // NVIDIA's answers with or without a handle.
        if !h.is_null() {
            handle::with(h, |_| Ok(()))?;
        }
        if out.is_null() {
            return Err(Error::invalid("version is NULL"));
        }
        // SAFETY: checked non-NULL.
        unsafe { *out = r.version() };
        Ok(())
    })
}

pub fn get_property(kind: c_int, out: *mut c_int, r: Release) -> Status {
    api("cublasGetProperty", || {
        if out.is_null() {
            return Err(Error::invalid("value is NULL"));
        }
        let v = match kind {
            0 => r.major,
            1 => r.minor,
            2 => r.patch,
            _ => return Err(Error::invalid(format!("{kind} is not a libraryPropertyType"))),
        };
        // SAFETY: checked non-NULL.
        unsafe { *out = v };
        Ok(())
    })
}

macro_rules! cstr_fn {
    ($name:ident, $f:path) => {
        pub unsafe extern "C" fn $name(s: Status) -> *const c_char {
            static NAMES: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();
            let names = NAMES.get_or_init(|| {
                let mut v: Vec<std::ffi::CString> =
                    status::STATUSES.iter().map(|e| std::ffi::CString::new($f(e.0)).unwrap_or_default()).collect();
                v.push(std::ffi::CString::new($f(-1)).unwrap_or_default());
                v
            });
            let i = status::STATUSES.iter().position(|e| e.0 == s).unwrap_or(status::STATUSES.len());
            names[i].as_ptr()
        }
    };
}
cstr_fn!(cublasGetStatusName, status::name);
cstr_fn!(cublasGetStatusString, status::description);

pub unsafe extern "C" fn cublasLoggerConfigure(on: c_int, stdout: c_int, stderr: c_int, file: *const c_char) -> Status {
    api("cublasLoggerConfigure", || {
        let file = if file.is_null() {
            None
        } else {
            // SAFETY: a NUL-terminated name from the caller.
            Some(unsafe { std::ffi::CStr::from_ptr(file) }.to_string_lossy().into_owned())
        };
        crate::logger::configure(on != 0, stdout != 0, stderr != 0, file.as_deref()).map_err(Error::invalid)
    })
}

pub unsafe extern "C" fn cublasSetLoggerCallback(cb: crate::logger::Callback) -> Status {
    api("cublasSetLoggerCallback", || {
        crate::logger::set_callback(cb);
        Ok(())
    })
}

pub unsafe extern "C" fn cublasGetLoggerCallback(out: *mut crate::logger::Callback) -> Status {
    api("cublasGetLoggerCallback", || {
        if out.is_null() {
            return Err(Error::invalid("userCallback is NULL"));
        }
        // SAFETY: checked non-NULL.
        unsafe { *out = crate::logger::callback() };
        Ok(())
    })
}

// ---- host <-> device copies ------------------------------------------------

fn copy_2d(
    rows: i64,
    cols: i64,
    elem: i64,
    src: P,
    lds: i64,
    dst: PM,
    ldd: i64,
    to_device: bool,
    stream: Option<PM>,
) -> crate::status::Result<()> {
    use crate::cuda::{driver, Memcpy2D, MEMORYTYPE_DEVICE, MEMORYTYPE_HOST};
    if rows < 0 || cols < 0 || elem <= 0 || lds < rows.max(1) || ldd < rows.max(1) {
        return Err(Error::invalid(format!("rows = {rows}, cols = {cols}, elemSize = {elem}, lda = {lds}, ldb = {ldd}")));
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let (st, dt) = if to_device { (MEMORYTYPE_HOST, MEMORYTYPE_DEVICE) } else { (MEMORYTYPE_DEVICE, MEMORYTYPE_HOST) };
    let p = Memcpy2D {
        src_x_in_bytes: 0,
        src_y: 0,
        src_memory_type: st,
        src_host: src,
        src_device: src as u64,
        src_array: std::ptr::null_mut(),
        src_pitch: (lds * elem) as usize,
        dst_x_in_bytes: 0,
        dst_y: 0,
        dst_memory_type: dt,
        dst_host: dst,
        dst_device: dst as u64,
        dst_array: std::ptr::null_mut(),
        dst_pitch: (ldd * elem) as usize,
        width_in_bytes: (rows * elem) as usize,
        height: cols as usize,
    };
    let d = driver()?;
    // The copy needs a context, as cudaMemcpy2D would make one current.
    let _ = d.current_context()?;
    // SAFETY: a complete descriptor; the driver checks the addresses.
    let r = unsafe {
        match stream {
            Some(s) => (d.memcpy_2d_async)(&p, s),
            None => (d.memcpy_2d)(&p),
        }
    };
    d.check(r, status::MAPPING_ERROR, "cuMemcpy2D")
}

macro_rules! matrix_copy {
    ($name:ident, $name64:ident, $to_dev:expr) => {
        pub unsafe extern "C" fn $name(rows: c_int, cols: c_int, elem: c_int, a: P, lda: c_int, b: PM, ldb: c_int) -> Status {
            api(stringify!($name), || copy_2d(rows as i64, cols as i64, elem as i64, a, lda as i64, b, ldb as i64, $to_dev, None))
        }
        pub unsafe extern "C" fn $name64(rows: i64, cols: i64, elem: i64, a: P, lda: i64, b: PM, ldb: i64) -> Status {
            api(stringify!($name64), || copy_2d(rows, cols, elem, a, lda, b, ldb, $to_dev, None))
        }
    };
}
matrix_copy!(cublasSetMatrix, cublasSetMatrix_64, true);
matrix_copy!(cublasGetMatrix, cublasGetMatrix_64, false);

macro_rules! matrix_copy_async {
    ($name:ident, $name64:ident, $to_dev:expr) => {
        pub unsafe extern "C" fn $name(rows: c_int, cols: c_int, elem: c_int, a: P, lda: c_int, b: PM, ldb: c_int, s: PM) -> Status {
            api(stringify!($name), || copy_2d(rows as i64, cols as i64, elem as i64, a, lda as i64, b, ldb as i64, $to_dev, Some(s)))
        }
        pub unsafe extern "C" fn $name64(rows: i64, cols: i64, elem: i64, a: P, lda: i64, b: PM, ldb: i64, s: PM) -> Status {
            api(stringify!($name64), || copy_2d(rows, cols, elem, a, lda, b, ldb, $to_dev, Some(s)))
        }
    };
}
matrix_copy_async!(cublasSetMatrixAsync, cublasSetMatrixAsync_64, true);
matrix_copy_async!(cublasGetMatrixAsync, cublasGetMatrixAsync_64, false);

/// A vector copy is a matrix copy of 1-element rows `inc` apart.
fn vector_copy(n: i64, elem: i64, x: P, incx: i64, y: PM, incy: i64, to_device: bool, stream: Option<PM>) -> crate::status::Result<()> {
    if incx <= 0 || incy <= 0 || elem <= 0 || n < 0 {
        return Err(Error::invalid(format!("n = {n}, elemSize = {elem}, incx = {incx}, incy = {incy}")));
    }
    copy_2d(1, n, elem, x, incx, y, incy, to_device, stream)
}

macro_rules! vector_copy_fns {
    ($name:ident, $name64:ident, $to_dev:expr) => {
        pub unsafe extern "C" fn $name(n: c_int, elem: c_int, x: P, incx: c_int, y: PM, incy: c_int) -> Status {
            api(stringify!($name), || vector_copy(n as i64, elem as i64, x, incx as i64, y, incy as i64, $to_dev, None))
        }
        pub unsafe extern "C" fn $name64(n: i64, elem: i64, x: P, incx: i64, y: PM, incy: i64) -> Status {
            api(stringify!($name64), || vector_copy(n, elem, x, incx, y, incy, $to_dev, None))
        }
    };
}
vector_copy_fns!(cublasSetVector, cublasSetVector_64, true);
vector_copy_fns!(cublasGetVector, cublasGetVector_64, false);

macro_rules! vector_copy_async_fns {
    ($name:ident, $name64:ident, $to_dev:expr) => {
        pub unsafe extern "C" fn $name(n: c_int, elem: c_int, x: P, incx: c_int, y: PM, incy: c_int, s: PM) -> Status {
            api(stringify!($name), || vector_copy(n as i64, elem as i64, x, incx as i64, y, incy as i64, $to_dev, Some(s)))
        }
        pub unsafe extern "C" fn $name64(n: i64, elem: i64, x: P, incx: i64, y: PM, incy: i64, s: PM) -> Status {
            api(stringify!($name64), || vector_copy(n, elem, x, incx, y, incy, $to_dev, Some(s)))
        }
    };
}
vector_copy_async_fns!(cublasSetVectorAsync, cublasSetVectorAsync_64, true);
vector_copy_async_fns!(cublasGetVectorAsync, cublasGetVectorAsync_64, false);

// ---- GEMM ------------------------------------------------------------------

fn op(ptr: P, dtype: DType, ld: i64) -> Operand {
    Operand { ptr, dtype, ld }
}

/// The typed products: `cublas<t>gemm`, `<t>gemmBatched`,
/// `<t>gemmStridedBatched`, each also as `_64`.
macro_rules! typed_gemm {
    ($gemm:ident, $gemm64:ident, $batched:ident, $batched64:ident, $strided:ident, $strided64:ident, $dt:expr, $compute:expr) => {
        pub unsafe extern "C" fn $gemm(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            b: P,
            ldb: c_int,
            beta: P,
            c: PM,
            ldc: c_int,
        ) -> Status {
            api(stringify!($gemm), || {
                blas::gemm(
                    h,
                    GemmArgs {
                        ta,
                        tb,
                        m: m as i64,
                        n: n as i64,
                        k: k as i64,
                        alpha,
                        a: op(a, $dt, lda as i64),
                        b: op(b, $dt, ldb as i64),
                        beta,
                        c: op(c, $dt, ldc as i64),
                        compute: $compute,
                        scale: $dt,
                        batch: BatchArg::One,
                    },
                )
            })
        }
        pub unsafe extern "C" fn $gemm64(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: i64,
            n: i64,
            k: i64,
            alpha: P,
            a: P,
            lda: i64,
            b: P,
            ldb: i64,
            beta: P,
            c: PM,
            ldc: i64,
        ) -> Status {
            api(stringify!($gemm64), || {
                blas::gemm(
                    h,
                    GemmArgs {
                        ta,
                        tb,
                        m,
                        n,
                        k,
                        alpha,
                        a: op(a, $dt, lda),
                        b: op(b, $dt, ldb),
                        beta,
                        c: op(c, $dt, ldc),
                        compute: $compute,
                        scale: $dt,
                        batch: BatchArg::One,
                    },
                )
            })
        }
        pub unsafe extern "C" fn $batched(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            b: P,
            ldb: c_int,
            beta: P,
            c: PM,
            ldc: c_int,
            count: c_int,
        ) -> Status {
            api(stringify!($batched), || {
                blas::gemm(
                    h,
                    GemmArgs {
                        ta,
                        tb,
                        m: m as i64,
                        n: n as i64,
                        k: k as i64,
                        alpha,
                        a: op(a, $dt, lda as i64),
                        b: op(b, $dt, ldb as i64),
                        beta,
                        c: op(c, $dt, ldc as i64),
                        compute: $compute,
                        scale: $dt,
                        batch: BatchArg::Pointers { count: count as i64 },
                    },
                )
            })
        }
        pub unsafe extern "C" fn $batched64(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: i64,
            n: i64,
            k: i64,
            alpha: P,
            a: P,
            lda: i64,
            b: P,
            ldb: i64,
            beta: P,
            c: PM,
            ldc: i64,
            count: i64,
        ) -> Status {
            api(stringify!($batched64), || {
                blas::gemm(
                    h,
                    GemmArgs {
                        ta,
                        tb,
                        m,
                        n,
                        k,
                        alpha,
                        a: op(a, $dt, lda),
                        b: op(b, $dt, ldb),
                        beta,
                        c: op(c, $dt, ldc),
                        compute: $compute,
                        scale: $dt,
                        batch: BatchArg::Pointers { count },
                    },
                )
            })
        }
        pub unsafe extern "C" fn $strided(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            sa: i64,
            b: P,
            ldb: c_int,
            sb: i64,
            beta: P,
            c: PM,
            ldc: c_int,
            sc: i64,
            count: c_int,
        ) -> Status {
            api(stringify!($strided), || {
                blas::gemm(
                    h,
                    GemmArgs {
                        ta,
                        tb,
                        m: m as i64,
                        n: n as i64,
                        k: k as i64,
                        alpha,
                        a: op(a, $dt, lda as i64),
                        b: op(b, $dt, ldb as i64),
                        beta,
                        c: op(c, $dt, ldc as i64),
                        compute: $compute,
                        scale: $dt,
                        batch: BatchArg::Strided { count: count as i64, a: sa, b: sb, c: sc },
                    },
                )
            })
        }
        pub unsafe extern "C" fn $strided64(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: i64,
            n: i64,
            k: i64,
            alpha: P,
            a: P,
            lda: i64,
            sa: i64,
            b: P,
            ldb: i64,
            sb: i64,
            beta: P,
            c: PM,
            ldc: i64,
            sc: i64,
            count: i64,
        ) -> Status {
            api(stringify!($strided64), || {
                blas::gemm(
                    h,
                    GemmArgs {
                        ta,
                        tb,
                        m,
                        n,
                        k,
                        alpha,
                        a: op(a, $dt, lda),
                        b: op(b, $dt, ldb),
                        beta,
                        c: op(c, $dt, ldc),
                        compute: $compute,
                        scale: $dt,
                        batch: BatchArg::Strided { count, a: sa, b: sb, c: sc },
                    },
                )
            })
        }
    };
}

typed_gemm!(
    cublasSgemm_v2,
    cublasSgemm_v2_64,
    cublasSgemmBatched,
    cublasSgemmBatched_64,
    cublasSgemmStridedBatched,
    cublasSgemmStridedBatched_64,
    DType::F32,
    Compute::F32
);
typed_gemm!(
    cublasDgemm_v2,
    cublasDgemm_v2_64,
    cublasDgemmBatched,
    cublasDgemmBatched_64,
    cublasDgemmStridedBatched,
    cublasDgemmStridedBatched_64,
    DType::F64,
    Compute::F64
);
typed_gemm!(
    cublasCgemm_v2,
    cublasCgemm_v2_64,
    cublasCgemmBatched,
    cublasCgemmBatched_64,
    cublasCgemmStridedBatched,
    cublasCgemmStridedBatched_64,
    DType::C32,
    Compute::C32
);
typed_gemm!(
    cublasZgemm_v2,
    cublasZgemm_v2_64,
    cublasZgemmBatched,
    cublasZgemmBatched_64,
    cublasZgemmStridedBatched,
    cublasZgemmStridedBatched_64,
    DType::C64,
    Compute::C64
);
// Hgemm: f16 matrices and f16 alpha/beta (CUBLAS_COMPUTE_16F), computed in
// f32 and rounded once.
typed_gemm!(
    cublasHgemm,
    cublasHgemm_64,
    cublasHgemmBatched,
    cublasHgemmBatched_64,
    cublasHgemmStridedBatched,
    cublasHgemmStridedBatched_64,
    DType::F16,
    Compute::F32
);

fn ex_args(
    ta: c_int,
    tb: c_int,
    m: i64,
    n: i64,
    k: i64,
    alpha: P,
    a: P,
    at: c_int,
    lda: i64,
    b: P,
    bt: c_int,
    ldb: i64,
    beta: P,
    c: P,
    ct: c_int,
    ldc: i64,
    compute: c_int,
    batch: BatchArg,
) -> crate::status::Result<GemmArgs> {
    let (kind, scale, [ad, bd, cd]) = blas::ex_types(compute, at, bt, ct)?;
    Ok(GemmArgs { ta, tb, m, n, k, alpha, a: op(a, ad, lda), b: op(b, bd, ldb), beta, c: op(c, cd, ldc), compute: kind, scale, batch })
}

/// Checks `cublasGemmAlgo_t`: the default, the numbered algorithms and
/// their tensor-op twins (all compute the same here).
fn check_algo(algo: c_int) -> crate::status::Result<()> {
    if algo == -1 || (0..=23).contains(&algo) || (99..=115).contains(&algo) || algo == 999 {
        Ok(())
    } else {
        Err(Error::invalid(format!("algo = {algo} is not a cublasGemmAlgo_t")))
    }
}

/// `handle`, then the NULL-handle check before any other (as cuBLAS).
fn with_handle_first(h: HandleT) -> crate::status::Result<()> {
    handle::with(h, |_| Ok(()))
}

/// The body of the `cublasGemm*Ex` family; the 32-bit forms widen their
/// sizes and counts.
fn gemm_ex(
    name: &str,
    h: HandleT,
    ta: c_int,
    tb: c_int,
    [m, n, k]: [i64; 3],
    alpha: P,
    (a, at, lda): (P, c_int, i64),
    (b, bt, ldb): (P, c_int, i64),
    beta: P,
    (c, ct, ldc): (PM, c_int, i64),
    compute: c_int,
    algo: c_int,
    batch: BatchArg,
) -> Status {
    api(name, || {
        with_handle_first(h)?;
        check_algo(algo)?;
        blas::gemm(h, ex_args(ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute, batch)?)
    })
}

pub unsafe extern "C" fn cublasGemmEx(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: P,
    a: P,
    at: c_int,
    lda: c_int,
    b: P,
    bt: c_int,
    ldb: c_int,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: c_int,
    compute: c_int,
    algo: c_int,
) -> Status {
    let sizes = [m.into(), n.into(), k.into()];
    gemm_ex(
        "cublasGemmEx",
        h,
        ta,
        tb,
        sizes,
        alpha,
        (a, at, lda.into()),
        (b, bt, ldb.into()),
        beta,
        (c, ct, ldc.into()),
        compute,
        algo,
        BatchArg::One,
    )
}

pub unsafe extern "C" fn cublasGemmEx_64(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: i64,
    n: i64,
    k: i64,
    alpha: P,
    a: P,
    at: c_int,
    lda: i64,
    b: P,
    bt: c_int,
    ldb: i64,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: i64,
    compute: c_int,
    algo: c_int,
) -> Status {
    gemm_ex("cublasGemmEx_64", h, ta, tb, [m, n, k], alpha, (a, at, lda), (b, bt, ldb), beta, (c, ct, ldc), compute, algo, BatchArg::One)
}

pub unsafe extern "C" fn cublasGemmBatchedEx(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: P,
    a: P,
    at: c_int,
    lda: c_int,
    b: P,
    bt: c_int,
    ldb: c_int,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: c_int,
    count: c_int,
    compute: c_int,
    algo: c_int,
) -> Status {
    let sizes = [m.into(), n.into(), k.into()];
    let batch = BatchArg::Pointers { count: count.into() };
    gemm_ex(
        "cublasGemmBatchedEx",
        h,
        ta,
        tb,
        sizes,
        alpha,
        (a, at, lda.into()),
        (b, bt, ldb.into()),
        beta,
        (c, ct, ldc.into()),
        compute,
        algo,
        batch,
    )
}

pub unsafe extern "C" fn cublasGemmBatchedEx_64(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: i64,
    n: i64,
    k: i64,
    alpha: P,
    a: P,
    at: c_int,
    lda: i64,
    b: P,
    bt: c_int,
    ldb: i64,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: i64,
    count: i64,
    compute: c_int,
    algo: c_int,
) -> Status {
    let batch = BatchArg::Pointers { count };
    gemm_ex("cublasGemmBatchedEx_64", h, ta, tb, [m, n, k], alpha, (a, at, lda), (b, bt, ldb), beta, (c, ct, ldc), compute, algo, batch)
}

pub unsafe extern "C" fn cublasGemmStridedBatchedEx(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: P,
    a: P,
    at: c_int,
    lda: c_int,
    sa: i64,
    b: P,
    bt: c_int,
    ldb: c_int,
    sb: i64,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: c_int,
    sc: i64,
    count: c_int,
    compute: c_int,
    algo: c_int,
) -> Status {
    let sizes = [m.into(), n.into(), k.into()];
    let batch = BatchArg::Strided { count: count.into(), a: sa, b: sb, c: sc };
    let name = "cublasGemmStridedBatchedEx";
    gemm_ex(name, h, ta, tb, sizes, alpha, (a, at, lda.into()), (b, bt, ldb.into()), beta, (c, ct, ldc.into()), compute, algo, batch)
}

pub unsafe extern "C" fn cublasGemmStridedBatchedEx_64(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: i64,
    n: i64,
    k: i64,
    alpha: P,
    a: P,
    at: c_int,
    lda: i64,
    sa: i64,
    b: P,
    bt: c_int,
    ldb: i64,
    sb: i64,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: i64,
    sc: i64,
    count: i64,
    compute: c_int,
    algo: c_int,
) -> Status {
    let batch = BatchArg::Strided { count, a: sa, b: sb, c: sc };
    gemm_ex(
        "cublasGemmStridedBatchedEx_64",
        h,
        ta,
        tb,
        [m, n, k],
        alpha,
        (a, at, lda),
        (b, bt, ldb),
        beta,
        (c, ct, ldc),
        compute,
        algo,
        batch,
    )
}

/// `cublasSgemmEx`: 16-bit or f32 matrices, f32 arithmetic and scalars.
fn sgemm_ex_args(
    ta: c_int,
    tb: c_int,
    m: i64,
    n: i64,
    k: i64,
    alpha: P,
    a: P,
    at: c_int,
    lda: i64,
    b: P,
    bt: c_int,
    ldb: i64,
    beta: P,
    c: P,
    ct: c_int,
    ldc: i64,
) -> crate::status::Result<GemmArgs> {
    let (kind, scale, [ad, bd, cd]) = blas::ex_types(blas::compute_type::C32F, at, bt, ct)?;
    if kind != Compute::F32 {
        return Err(Error::unsupported("cublasSgemmEx takes real matrices"));
    }
    Ok(GemmArgs {
        ta,
        tb,
        m,
        n,
        k,
        alpha,
        a: op(a, ad, lda),
        b: op(b, bd, ldb),
        beta,
        c: op(c, cd, ldc),
        compute: kind,
        scale,
        batch: BatchArg::One,
    })
}

pub unsafe extern "C" fn cublasSgemmEx(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: P,
    a: P,
    at: c_int,
    lda: c_int,
    b: P,
    bt: c_int,
    ldb: c_int,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: c_int,
) -> Status {
    api("cublasSgemmEx", || {
        with_handle_first(h)?;
        blas::gemm(
            h,
            sgemm_ex_args(ta, tb, m as i64, n as i64, k as i64, alpha, a, at, lda as i64, b, bt, ldb as i64, beta, c, ct, ldc as i64)?,
        )
    })
}

pub unsafe extern "C" fn cublasSgemmEx_64(
    h: HandleT,
    ta: c_int,
    tb: c_int,
    m: i64,
    n: i64,
    k: i64,
    alpha: P,
    a: P,
    at: c_int,
    lda: i64,
    b: P,
    bt: c_int,
    ldb: i64,
    beta: P,
    c: PM,
    ct: c_int,
    ldc: i64,
) -> Status {
    api("cublasSgemmEx_64", || {
        with_handle_first(h)?;
        blas::gemm(h, sgemm_ex_args(ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc)?)
    })
}

const _: i32 = CUDA_R_16F;

// ---- TRSM ------------------------------------------------------------------

macro_rules! typed_trsm {
    ($trsm:ident, $trsm64:ident, $batched:ident, $batched64:ident, $dt:expr) => {
        pub unsafe extern "C" fn $trsm(
            h: HandleT,
            side: c_int,
            uplo: c_int,
            trans: c_int,
            diag: c_int,
            m: c_int,
            n: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            b: PM,
            ldb: c_int,
        ) -> Status {
            api(stringify!($trsm), || {
                blas::trsm(h, side, uplo, trans, diag, m as i64, n as i64, alpha, a, lda as i64, b, ldb as i64, $dt, None)
            })
        }
        pub unsafe extern "C" fn $trsm64(
            h: HandleT,
            side: c_int,
            uplo: c_int,
            trans: c_int,
            diag: c_int,
            m: i64,
            n: i64,
            alpha: P,
            a: P,
            lda: i64,
            b: PM,
            ldb: i64,
        ) -> Status {
            api(stringify!($trsm64), || blas::trsm(h, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb, $dt, None))
        }
        pub unsafe extern "C" fn $batched(
            h: HandleT,
            side: c_int,
            uplo: c_int,
            trans: c_int,
            diag: c_int,
            m: c_int,
            n: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            b: PM,
            ldb: c_int,
            count: c_int,
        ) -> Status {
            api(stringify!($batched), || {
                blas::trsm(h, side, uplo, trans, diag, m as i64, n as i64, alpha, a, lda as i64, b, ldb as i64, $dt, Some(count as i64))
            })
        }
        pub unsafe extern "C" fn $batched64(
            h: HandleT,
            side: c_int,
            uplo: c_int,
            trans: c_int,
            diag: c_int,
            m: i64,
            n: i64,
            alpha: P,
            a: P,
            lda: i64,
            b: PM,
            ldb: i64,
            count: i64,
        ) -> Status {
            api(stringify!($batched64), || blas::trsm(h, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb, $dt, Some(count)))
        }
    };
}
typed_trsm!(cublasStrsm_v2, cublasStrsm_v2_64, cublasStrsmBatched, cublasStrsmBatched_64, DType::F32);
typed_trsm!(cublasDtrsm_v2, cublasDtrsm_v2_64, cublasDtrsmBatched, cublasDtrsmBatched_64, DType::F64);
typed_trsm!(cublasCtrsm_v2, cublasCtrsm_v2_64, cublasCtrsmBatched, cublasCtrsmBatched_64, DType::C32);
typed_trsm!(cublasZtrsm_v2, cublasZtrsm_v2_64, cublasZtrsmBatched, cublasZtrsmBatched_64, DType::C64);

// ---- level 1 ---------------------------------------------------------------

macro_rules! axpy {
    ($name:ident, $name64:ident, $dt:expr) => {
        pub unsafe extern "C" fn $name(h: HandleT, n: c_int, alpha: P, x: P, incx: c_int, y: PM, incy: c_int) -> Status {
            api(stringify!($name), || {
                blas::level1(h, L1::Axpy, n as i64, Some((alpha, $dt)), x, incx as i64, y, incy as i64, $dt, std::ptr::null_mut())
            })
        }
        pub unsafe extern "C" fn $name64(h: HandleT, n: i64, alpha: P, x: P, incx: i64, y: PM, incy: i64) -> Status {
            api(stringify!($name64), || blas::level1(h, L1::Axpy, n, Some((alpha, $dt)), x, incx, y, incy, $dt, std::ptr::null_mut()))
        }
    };
}
axpy!(cublasSaxpy_v2, cublasSaxpy_v2_64, DType::F32);
axpy!(cublasDaxpy_v2, cublasDaxpy_v2_64, DType::F64);
axpy!(cublasCaxpy_v2, cublasCaxpy_v2_64, DType::C32);
axpy!(cublasZaxpy_v2, cublasZaxpy_v2_64, DType::C64);

macro_rules! scal {
    ($name:ident, $name64:ident, $dt:expr, $alpha_dt:expr) => {
        pub unsafe extern "C" fn $name(h: HandleT, n: c_int, alpha: P, x: PM, incx: c_int) -> Status {
            api(stringify!($name), || {
                blas::level1(
                    h,
                    L1::Scal,
                    n as i64,
                    Some((alpha, $alpha_dt)),
                    x,
                    incx as i64,
                    std::ptr::null(),
                    1,
                    $dt,
                    std::ptr::null_mut(),
                )
            })
        }
        pub unsafe extern "C" fn $name64(h: HandleT, n: i64, alpha: P, x: PM, incx: i64) -> Status {
            api(stringify!($name64), || {
                blas::level1(h, L1::Scal, n, Some((alpha, $alpha_dt)), x, incx, std::ptr::null(), 1, $dt, std::ptr::null_mut())
            })
        }
    };
}
scal!(cublasSscal_v2, cublasSscal_v2_64, DType::F32, DType::F32);
scal!(cublasDscal_v2, cublasDscal_v2_64, DType::F64, DType::F64);
scal!(cublasCscal_v2, cublasCscal_v2_64, DType::C32, DType::C32);
scal!(cublasZscal_v2, cublasZscal_v2_64, DType::C64, DType::C64);
scal!(cublasCsscal_v2, cublasCsscal_v2_64, DType::C32, DType::F32);
scal!(cublasZdscal_v2, cublasZdscal_v2_64, DType::C64, DType::F64);

macro_rules! two_vectors {
    ($name:ident, $name64:ident, $op:expr, $dt:expr) => {
        pub unsafe extern "C" fn $name(h: HandleT, n: c_int, x: P, incx: c_int, y: PM, incy: c_int) -> Status {
            api(stringify!($name), || blas::level1(h, $op, n as i64, None, x, incx as i64, y, incy as i64, $dt, std::ptr::null_mut()))
        }
        pub unsafe extern "C" fn $name64(h: HandleT, n: i64, x: P, incx: i64, y: PM, incy: i64) -> Status {
            api(stringify!($name64), || blas::level1(h, $op, n, None, x, incx, y, incy, $dt, std::ptr::null_mut()))
        }
    };
}
two_vectors!(cublasScopy_v2, cublasScopy_v2_64, L1::Copy, DType::F32);
two_vectors!(cublasDcopy_v2, cublasDcopy_v2_64, L1::Copy, DType::F64);
two_vectors!(cublasCcopy_v2, cublasCcopy_v2_64, L1::Copy, DType::C32);
two_vectors!(cublasZcopy_v2, cublasZcopy_v2_64, L1::Copy, DType::C64);
two_vectors!(cublasSswap_v2, cublasSswap_v2_64, L1::Swap, DType::F32);
two_vectors!(cublasDswap_v2, cublasDswap_v2_64, L1::Swap, DType::F64);
two_vectors!(cublasCswap_v2, cublasCswap_v2_64, L1::Swap, DType::C32);
two_vectors!(cublasZswap_v2, cublasZswap_v2_64, L1::Swap, DType::C64);

macro_rules! dot {
    ($name:ident, $name64:ident, $conj:expr, $dt:expr) => {
        pub unsafe extern "C" fn $name(h: HandleT, n: c_int, x: P, incx: c_int, y: P, incy: c_int, result: PM) -> Status {
            api(stringify!($name), || blas::level1(h, L1::Dot { conj: $conj }, n as i64, None, x, incx as i64, y, incy as i64, $dt, result))
        }
        pub unsafe extern "C" fn $name64(h: HandleT, n: i64, x: P, incx: i64, y: P, incy: i64, result: PM) -> Status {
            api(stringify!($name64), || blas::level1(h, L1::Dot { conj: $conj }, n, None, x, incx, y, incy, $dt, result))
        }
    };
}
dot!(cublasSdot_v2, cublasSdot_v2_64, false, DType::F32);
dot!(cublasDdot_v2, cublasDdot_v2_64, false, DType::F64);
dot!(cublasCdotu_v2, cublasCdotu_v2_64, false, DType::C32);
dot!(cublasCdotc_v2, cublasCdotc_v2_64, true, DType::C32);
dot!(cublasZdotu_v2, cublasZdotu_v2_64, false, DType::C64);
dot!(cublasZdotc_v2, cublasZdotc_v2_64, true, DType::C64);

macro_rules! reduce {
    ($name:ident, $name64:ident, $op:expr, $op64:expr, $dt:expr) => {
        pub unsafe extern "C" fn $name(h: HandleT, n: c_int, x: P, incx: c_int, result: PM) -> Status {
            api(stringify!($name), || blas::level1(h, $op, n as i64, None, x, incx as i64, std::ptr::null(), 1, $dt, result))
        }
        pub unsafe extern "C" fn $name64(h: HandleT, n: i64, x: P, incx: i64, result: PM) -> Status {
            api(stringify!($name64), || blas::level1(h, $op64, n, None, x, incx, std::ptr::null(), 1, $dt, result))
        }
    };
}
reduce!(cublasSnrm2_v2, cublasSnrm2_v2_64, L1::Nrm2, L1::Nrm2, DType::F32);
reduce!(cublasDnrm2_v2, cublasDnrm2_v2_64, L1::Nrm2, L1::Nrm2, DType::F64);
reduce!(cublasScnrm2_v2, cublasScnrm2_v2_64, L1::Nrm2, L1::Nrm2, DType::C32);
reduce!(cublasDznrm2_v2, cublasDznrm2_v2_64, L1::Nrm2, L1::Nrm2, DType::C64);
reduce!(cublasSasum_v2, cublasSasum_v2_64, L1::Asum, L1::Asum, DType::F32);
reduce!(cublasDasum_v2, cublasDasum_v2_64, L1::Asum, L1::Asum, DType::F64);
reduce!(cublasScasum_v2, cublasScasum_v2_64, L1::Asum, L1::Asum, DType::C32);
reduce!(cublasDzasum_v2, cublasDzasum_v2_64, L1::Asum, L1::Asum, DType::C64);
reduce!(cublasIsamax_v2, cublasIsamax_v2_64, L1::Iamax { min: false, wide: false }, L1::Iamax { min: false, wide: true }, DType::F32);
reduce!(cublasIdamax_v2, cublasIdamax_v2_64, L1::Iamax { min: false, wide: false }, L1::Iamax { min: false, wide: true }, DType::F64);
reduce!(cublasIcamax_v2, cublasIcamax_v2_64, L1::Iamax { min: false, wide: false }, L1::Iamax { min: false, wide: true }, DType::C32);
reduce!(cublasIzamax_v2, cublasIzamax_v2_64, L1::Iamax { min: false, wide: false }, L1::Iamax { min: false, wide: true }, DType::C64);
reduce!(cublasIsamin_v2, cublasIsamin_v2_64, L1::Iamax { min: true, wide: false }, L1::Iamax { min: true, wide: true }, DType::F32);
reduce!(cublasIdamin_v2, cublasIdamin_v2_64, L1::Iamax { min: true, wide: false }, L1::Iamax { min: true, wide: true }, DType::F64);
reduce!(cublasIcamin_v2, cublasIcamin_v2_64, L1::Iamax { min: true, wide: false }, L1::Iamax { min: true, wide: true }, DType::C32);
reduce!(cublasIzamin_v2, cublasIzamin_v2_64, L1::Iamax { min: true, wide: false }, L1::Iamax { min: true, wide: true }, DType::C64);

// ---- level 1, mixed precision (...Ex) --------------------------------------

/// The execution type cuBLAS's `...Ex` level-1 tables give vectors of
/// type `t` (16-bit floats execute in f32).
fn l1_exec(t: DType) -> Option<DType> {
    match t {
        DType::F16 | DType::BF16 | DType::F32 => Some(DType::F32),
        DType::F64 | DType::C32 | DType::C64 => Some(t),
        DType::I8 | DType::I32 => None,
    }
}

/// Checks an `...Ex` call's types against cuBLAS's table: x (and y) of one
/// floating type, the execution type that type takes, and `others` (scalar
/// or result types) as the table requires. Returns x's type.
/// A further type an `...Ex` call passes: its name, its `cudaDataType`,
/// and the type it must be, given x's.
type TypeRule<'a> = (&'a str, c_int, fn(DType) -> DType);

fn l1_ex_types(what: &str, x: c_int, y: Option<c_int>, exec: c_int, others: &[TypeRule<'_>]) -> crate::status::Result<DType> {
    use crate::types::cuda_type_name as name;
    let xd = DType::from_cuda(x)?;
    let combo = || {
        let mut s = format!("{what}: x {}", name(x));
        if let Some(y) = y {
            s += &format!(", y {}", name(y));
        }
        for (n, t, _) in others {
            s += &format!(", {n} {}", name(*t));
        }
        s + &format!(", execution {}", name(exec))
    };
    let want_exec = l1_exec(xd).ok_or_else(|| Error::unsupported(format!("{}: integer vectors are not in cuBLAS's table", combo())))?;
    if y.is_some_and(|y| y != x) || exec != want_exec.cuda() || others.iter().any(|(_, t, f)| *t != f(xd).cuda()) {
        return Err(Error::unsupported(format!("{}: not a combination cuBLAS supports", combo())));
    }
    Ok(xd)
}

fn same(t: DType) -> DType {
    t
}

fn exec_of(t: DType) -> DType {
    l1_exec(t).unwrap_or(t)
}

/// The real type of a vector's norm.
fn real_of(t: DType) -> DType {
    match t {
        DType::C32 => DType::F32,
        DType::C64 => DType::F64,
        t => t,
    }
}

fn dot_ex(
    h: HandleT,
    n: i64,
    x: P,
    xt: c_int,
    incx: i64,
    y: P,
    yt: c_int,
    incy: i64,
    r: PM,
    rt: c_int,
    exec: c_int,
    conj: bool,
) -> crate::status::Result<()> {
    handle::with(h, |_| Ok(()))?;
    let t = l1_ex_types(if conj { "cublasDotcEx" } else { "cublasDotEx" }, xt, Some(yt), exec, &[("result", rt, same)])?;
    blas::level1(h, L1::Dot { conj }, n, None, x, incx, y, incy, t, r)
}

macro_rules! dot_ex_fns {
    ($name:ident, $name64:ident, $conj:expr) => {
        pub unsafe extern "C" fn $name(
            h: HandleT,
            n: c_int,
            x: P,
            xt: c_int,
            incx: c_int,
            y: P,
            yt: c_int,
            incy: c_int,
            r: PM,
            rt: c_int,
            exec: c_int,
        ) -> Status {
            api(stringify!($name), || dot_ex(h, n as i64, x, xt, incx as i64, y, yt, incy as i64, r, rt, exec, $conj))
        }
        pub unsafe extern "C" fn $name64(
            h: HandleT,
            n: i64,
            x: P,
            xt: c_int,
            incx: i64,
            y: P,
            yt: c_int,
            incy: i64,
            r: PM,
            rt: c_int,
            exec: c_int,
        ) -> Status {
            api(stringify!($name64), || dot_ex(h, n, x, xt, incx, y, yt, incy, r, rt, exec, $conj))
        }
    };
}
dot_ex_fns!(cublasDotEx, cublasDotEx_64, false);
dot_ex_fns!(cublasDotcEx, cublasDotcEx_64, true);

fn axpy_ex(
    h: HandleT,
    n: i64,
    alpha: P,
    at: c_int,
    x: P,
    xt: c_int,
    incx: i64,
    y: PM,
    yt: c_int,
    incy: i64,
    exec: c_int,
) -> crate::status::Result<()> {
    handle::with(h, |_| Ok(()))?;
    let t = l1_ex_types("cublasAxpyEx", xt, Some(yt), exec, &[("alpha", at, exec_of)])?;
    blas::level1(h, L1::Axpy, n, Some((alpha, exec_of(t))), x, incx, y, incy, t, std::ptr::null_mut())
}

pub unsafe extern "C" fn cublasAxpyEx(
    h: HandleT,
    n: c_int,
    alpha: P,
    at: c_int,
    x: P,
    xt: c_int,
    incx: c_int,
    y: PM,
    yt: c_int,
    incy: c_int,
    exec: c_int,
) -> Status {
    api("cublasAxpyEx", || axpy_ex(h, n as i64, alpha, at, x, xt, incx as i64, y, yt, incy as i64, exec))
}

pub unsafe extern "C" fn cublasAxpyEx_64(
    h: HandleT,
    n: i64,
    alpha: P,
    at: c_int,
    x: P,
    xt: c_int,
    incx: i64,
    y: PM,
    yt: c_int,
    incy: i64,
    exec: c_int,
) -> Status {
    api("cublasAxpyEx_64", || axpy_ex(h, n, alpha, at, x, xt, incx, y, yt, incy, exec))
}

fn nrm2_ex(h: HandleT, n: i64, x: P, xt: c_int, incx: i64, r: PM, rt: c_int, exec: c_int) -> crate::status::Result<()> {
    handle::with(h, |_| Ok(()))?;
    let t = l1_ex_types("cublasNrm2Ex", xt, None, exec, &[("result", rt, real_of)])?;
    blas::level1(h, L1::Nrm2, n, None, x, incx, std::ptr::null(), 1, t, r)
}

pub unsafe extern "C" fn cublasNrm2Ex(h: HandleT, n: c_int, x: P, xt: c_int, incx: c_int, r: PM, rt: c_int, exec: c_int) -> Status {
    api("cublasNrm2Ex", || nrm2_ex(h, n as i64, x, xt, incx as i64, r, rt, exec))
}

pub unsafe extern "C" fn cublasNrm2Ex_64(h: HandleT, n: i64, x: P, xt: c_int, incx: i64, r: PM, rt: c_int, exec: c_int) -> Status {
    api("cublasNrm2Ex_64", || nrm2_ex(h, n, x, xt, incx, r, rt, exec))
}

fn scal_ex(h: HandleT, n: i64, alpha: P, at: c_int, x: PM, xt: c_int, incx: i64, exec: c_int) -> crate::status::Result<()> {
    handle::with(h, |_| Ok(()))?;
    let t = l1_ex_types("cublasScalEx", xt, None, exec, &[("alpha", at, exec_of)])?;
    blas::level1(h, L1::Scal, n, Some((alpha, exec_of(t))), x, incx, std::ptr::null(), 1, t, std::ptr::null_mut())
}

pub unsafe extern "C" fn cublasScalEx(h: HandleT, n: c_int, alpha: P, at: c_int, x: PM, xt: c_int, incx: c_int, exec: c_int) -> Status {
    api("cublasScalEx", || scal_ex(h, n as i64, alpha, at, x, xt, incx as i64, exec))
}

pub unsafe extern "C" fn cublasScalEx_64(h: HandleT, n: i64, alpha: P, at: c_int, x: PM, xt: c_int, incx: i64, exec: c_int) -> Status {
    api("cublasScalEx_64", || scal_ex(h, n, alpha, at, x, xt, incx, exec))
}

// ---- geam, dgmm --------------------------------------------------------------

macro_rules! geam {
    ($name:ident, $name64:ident, $dt:expr) => {
        pub unsafe extern "C" fn $name(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: c_int,
            n: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            beta: P,
            b: P,
            ldb: c_int,
            c: PM,
            ldc: c_int,
        ) -> Status {
            let (m, n, lda, ldb, ldc) = (m.into(), n.into(), lda.into(), ldb.into(), ldc.into());
            api(stringify!($name), || blas::geam(h, ta, tb, m, n, alpha, a, lda, beta, b, ldb, c, ldc, $dt))
        }
        pub unsafe extern "C" fn $name64(
            h: HandleT,
            ta: c_int,
            tb: c_int,
            m: i64,
            n: i64,
            alpha: P,
            a: P,
            lda: i64,
            beta: P,
            b: P,
            ldb: i64,
            c: PM,
            ldc: i64,
        ) -> Status {
            api(stringify!($name64), || blas::geam(h, ta, tb, m, n, alpha, a, lda, beta, b, ldb, c, ldc, $dt))
        }
    };
}

geam!(cublasSgeam, cublasSgeam_64, DType::F32);
geam!(cublasDgeam, cublasDgeam_64, DType::F64);
geam!(cublasCgeam, cublasCgeam_64, DType::C32);
geam!(cublasZgeam, cublasZgeam_64, DType::C64);

macro_rules! dgmm {
    ($name:ident, $name64:ident, $dt:expr) => {
        pub unsafe extern "C" fn $name(
            h: HandleT,
            mode: c_int,
            m: c_int,
            n: c_int,
            a: P,
            lda: c_int,
            x: P,
            incx: c_int,
            c: PM,
            ldc: c_int,
        ) -> Status {
            let (m, n, lda, incx, ldc) = (m.into(), n.into(), lda.into(), incx.into(), ldc.into());
            api(stringify!($name), || blas::dgmm(h, mode, m, n, a, lda, x, incx, c, ldc, $dt))
        }
        pub unsafe extern "C" fn $name64(
            h: HandleT,
            mode: c_int,
            m: i64,
            n: i64,
            a: P,
            lda: i64,
            x: P,
            incx: i64,
            c: PM,
            ldc: i64,
        ) -> Status {
            api(stringify!($name64), || blas::dgmm(h, mode, m, n, a, lda, x, incx, c, ldc, $dt))
        }
    };
}

dgmm!(cublasSdgmm, cublasSdgmm_64, DType::F32);
dgmm!(cublasDdgmm, cublasDdgmm_64, DType::F64);
dgmm!(cublasCdgmm, cublasCdgmm_64, DType::C32);
dgmm!(cublasZdgmm, cublasZdgmm_64, DType::C64);

// ---- level 2 ---------------------------------------------------------------

macro_rules! gemv {
    ($name:ident, $name64:ident, $dt:expr) => {
        pub unsafe extern "C" fn $name(
            h: HandleT,
            trans: c_int,
            m: c_int,
            n: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            x: P,
            incx: c_int,
            beta: P,
            y: PM,
            incy: c_int,
        ) -> Status {
            api(stringify!($name), || {
                blas::gemv(h, trans, m as i64, n as i64, alpha, a, lda as i64, x, incx as i64, beta, y, incy as i64, $dt)
            })
        }
        pub unsafe extern "C" fn $name64(
            h: HandleT,
            trans: c_int,
            m: i64,
            n: i64,
            alpha: P,
            a: P,
            lda: i64,
            x: P,
            incx: i64,
            beta: P,
            y: PM,
            incy: i64,
        ) -> Status {
            api(stringify!($name64), || blas::gemv(h, trans, m, n, alpha, a, lda, x, incx, beta, y, incy, $dt))
        }
    };
}
gemv!(cublasSgemv_v2, cublasSgemv_v2_64, DType::F32);
gemv!(cublasDgemv_v2, cublasDgemv_v2_64, DType::F64);
gemv!(cublasCgemv_v2, cublasCgemv_v2_64, DType::C32);
gemv!(cublasZgemv_v2, cublasZgemv_v2_64, DType::C64);

macro_rules! ger {
    ($name:ident, $name64:ident, $dt:expr, $conj:expr) => {
        pub unsafe extern "C" fn $name(
            h: HandleT,
            m: c_int,
            n: c_int,
            alpha: P,
            x: P,
            incx: c_int,
            y: P,
            incy: c_int,
            a: PM,
            lda: c_int,
        ) -> Status {
            api(stringify!($name), || blas::ger(h, m as i64, n as i64, alpha, x, incx as i64, y, incy as i64, a, lda as i64, $dt, $conj))
        }
        pub unsafe extern "C" fn $name64(
            h: HandleT,
            m: i64,
            n: i64,
            alpha: P,
            x: P,
            incx: i64,
            y: P,
            incy: i64,
            a: PM,
            lda: i64,
        ) -> Status {
            api(stringify!($name64), || blas::ger(h, m, n, alpha, x, incx, y, incy, a, lda, $dt, $conj))
        }
    };
}
ger!(cublasSger_v2, cublasSger_v2_64, DType::F32, false);
ger!(cublasDger_v2, cublasDger_v2_64, DType::F64, false);
ger!(cublasCgeru_v2, cublasCgeru_v2_64, DType::C32, false);
ger!(cublasCgerc_v2, cublasCgerc_v2_64, DType::C32, true);
ger!(cublasZgeru_v2, cublasZgeru_v2_64, DType::C64, false);
ger!(cublasZgerc_v2, cublasZgerc_v2_64, DType::C64, true);

// ---- rank-k updates (syrk, herk, syr2k, her2k, syrkx, herkx) -------------

macro_rules! rankk_one {
    ($name:ident, $name64:ident, $kind:expr, $dt:expr) => {
        pub unsafe extern "C" fn $name(
            h: HandleT,
            uplo: c_int,
            trans: c_int,
            n: c_int,
            k: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            beta: P,
            c: PM,
            ldc: c_int,
        ) -> Status {
            api(stringify!($name), || {
                blas::rankk(h, $kind, uplo, trans, n as i64, k as i64, alpha, a, lda as i64, std::ptr::null(), 0, beta, c, ldc as i64, $dt)
            })
        }
        pub unsafe extern "C" fn $name64(
            h: HandleT,
            uplo: c_int,
            trans: c_int,
            n: i64,
            k: i64,
            alpha: P,
            a: P,
            lda: i64,
            beta: P,
            c: PM,
            ldc: i64,
        ) -> Status {
            api(stringify!($name64), || blas::rankk(h, $kind, uplo, trans, n, k, alpha, a, lda, std::ptr::null(), 0, beta, c, ldc, $dt))
        }
    };
}

macro_rules! rankk_two {
    ($name:ident, $name64:ident, $kind:expr, $dt:expr) => {
        pub unsafe extern "C" fn $name(
            h: HandleT,
            uplo: c_int,
            trans: c_int,
            n: c_int,
            k: c_int,
            alpha: P,
            a: P,
            lda: c_int,
            b: P,
            ldb: c_int,
            beta: P,
            c: PM,
            ldc: c_int,
        ) -> Status {
            api(stringify!($name), || {
                blas::rankk(h, $kind, uplo, trans, n as i64, k as i64, alpha, a, lda as i64, b, ldb as i64, beta, c, ldc as i64, $dt)
            })
        }
        pub unsafe extern "C" fn $name64(
            h: HandleT,
            uplo: c_int,
            trans: c_int,
            n: i64,
            k: i64,
            alpha: P,
            a: P,
            lda: i64,
            b: P,
            ldb: i64,
            beta: P,
            c: PM,
            ldc: i64,
        ) -> Status {
            api(stringify!($name64), || blas::rankk(h, $kind, uplo, trans, n, k, alpha, a, lda, b, ldb, beta, c, ldc, $dt))
        }
    };
}

use crate::backend::RankKind;
rankk_one!(cublasSsyrk_v2, cublasSsyrk_v2_64, RankKind::Syrk, DType::F32);
rankk_one!(cublasDsyrk_v2, cublasDsyrk_v2_64, RankKind::Syrk, DType::F64);
rankk_one!(cublasCsyrk_v2, cublasCsyrk_v2_64, RankKind::Syrk, DType::C32);
rankk_one!(cublasZsyrk_v2, cublasZsyrk_v2_64, RankKind::Syrk, DType::C64);
rankk_one!(cublasCherk_v2, cublasCherk_v2_64, RankKind::Herk, DType::C32);
rankk_one!(cublasZherk_v2, cublasZherk_v2_64, RankKind::Herk, DType::C64);
rankk_two!(cublasSsyr2k_v2, cublasSsyr2k_v2_64, RankKind::Syr2k, DType::F32);
rankk_two!(cublasDsyr2k_v2, cublasDsyr2k_v2_64, RankKind::Syr2k, DType::F64);
rankk_two!(cublasCsyr2k_v2, cublasCsyr2k_v2_64, RankKind::Syr2k, DType::C32);
rankk_two!(cublasZsyr2k_v2, cublasZsyr2k_v2_64, RankKind::Syr2k, DType::C64);
rankk_two!(cublasCher2k_v2, cublasCher2k_v2_64, RankKind::Her2k, DType::C32);
rankk_two!(cublasZher2k_v2, cublasZher2k_v2_64, RankKind::Her2k, DType::C64);
rankk_two!(cublasSsyrkx, cublasSsyrkx_64, RankKind::Syrkx, DType::F32);
rankk_two!(cublasDsyrkx, cublasDsyrkx_64, RankKind::Syrkx, DType::F64);
rankk_two!(cublasCsyrkx, cublasCsyrkx_64, RankKind::Syrkx, DType::C32);
rankk_two!(cublasZsyrkx, cublasZsyrkx_64, RankKind::Syrkx, DType::C64);
rankk_two!(cublasCherkx, cublasCherkx_64, RankKind::Herkx, DType::C32);
rankk_two!(cublasZherkx, cublasZherkx_64, RankKind::Herkx, DType::C64);

// ---- batched LU ------------------------------------------------------------

macro_rules! lu_batched {
    ($getrf:ident, $getrs:ident, $getri:ident, $matinv:ident, $dt:expr) => {
        pub unsafe extern "C" fn $getrf(h: HandleT, n: c_int, a: P, lda: c_int, piv: *mut c_int, info: *mut c_int, batch: c_int) -> Status {
            api(stringify!($getrf), || blas::lu(h, n as i64, batch as i64, $dt, blas::LuArgs::Getrf { a, lda: lda as i64, piv, info }))
        }
        pub unsafe extern "C" fn $getrs(
            h: HandleT,
            trans: c_int,
            n: c_int,
            nrhs: c_int,
            a: P,
            lda: c_int,
            piv: *const c_int,
            b: P,
            ldb: c_int,
            info: *mut c_int,
            batch: c_int,
        ) -> Status {
            api(stringify!($getrs), || {
                blas::lu(
                    h,
                    n as i64,
                    batch as i64,
                    $dt,
                    blas::LuArgs::Getrs { trans, nrhs: nrhs as i64, a, lda: lda as i64, piv, b, ldb: ldb as i64, info },
                )
            })
        }
        pub unsafe extern "C" fn $getri(
            h: HandleT,
            n: c_int,
            a: P,
            lda: c_int,
            piv: *const c_int,
            c: P,
            ldc: c_int,
            info: *mut c_int,
            batch: c_int,
        ) -> Status {
            api(stringify!($getri), || {
                blas::lu(h, n as i64, batch as i64, $dt, blas::LuArgs::Getri { a, lda: lda as i64, piv, c, ldc: ldc as i64, info })
            })
        }
        pub unsafe extern "C" fn $matinv(
            h: HandleT,
            n: c_int,
            a: P,
            lda: c_int,
            inv: P,
            ldinv: c_int,
            info: *mut c_int,
            batch: c_int,
        ) -> Status {
            api(stringify!($matinv), || {
                blas::lu(h, n as i64, batch as i64, $dt, blas::LuArgs::Matinv { a, lda: lda as i64, inv, ldinv: ldinv as i64, info })
            })
        }
    };
}
lu_batched!(cublasSgetrfBatched, cublasSgetrsBatched, cublasSgetriBatched, cublasSmatinvBatched, DType::F32);
lu_batched!(cublasDgetrfBatched, cublasDgetrsBatched, cublasDgetriBatched, cublasDmatinvBatched, DType::F64);
lu_batched!(cublasCgetrfBatched, cublasCgetrsBatched, cublasCgetriBatched, cublasCmatinvBatched, DType::C32);
lu_batched!(cublasZgetrfBatched, cublasZgetrsBatched, cublasZgetriBatched, cublasZmatinvBatched, DType::C64);
