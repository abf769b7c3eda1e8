//! The C symbols of libcublasLt: handles, the descriptors of
//! `matmul.rs`, the heuristic query and algorithm functions, and
//! `cublasLtMatmul`, which queues its product on the backend like every
//! cuBLAS GEMM (on the stream the call names).
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]

use std::collections::HashSet;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::abi::Release;
use crate::backend::{Aux, Backend, Bias, Epilogue, Matmul, MatmulBatch, Queue, View};
use crate::blas::check_strided;
use crate::cuda::{self, driver};
use crate::handle::{api, backend_for, check_device, read_user, Header, BLAS_MAGIC};
use crate::log::debug;
use crate::matmul::{self as mm, Algo, Desc, HeuristicResult, Layout, Plan, Pref, Record};
use crate::status::{self, Error, Result, Status};
use crate::types::Scalar;

type P = *const c_void;
type PM = *mut c_void;
pub type LtHandleT = *mut c_void;

pub fn get_property(kind: c_int, out: *mut c_int, r: Release) -> Status {
    api("cublasLtGetProperty", || {
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

// ---- handles ---------------------------------------------------------------

/// A cuBLASLt handle: the context it was created in. It begins like a
/// cuBLAS handle (`Header`), with its own tag.
#[repr(C)]
pub struct LtHandle {
    pub header: Header,
    pub backend: &'static dyn Backend,
}

/// `Header::magic` of a live cuBLASLt handle ("anycBLt\0").
const LT_MAGIC: u64 = 0x0074_4c42_6379_6e61;

fn live() -> MutexGuard<'static, HashSet<usize>> {
    static LIVE: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    LIVE.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// What a call needs of its handle.
struct Target {
    ctx: usize,
    backend: &'static dyn Backend,
}

/// A live cuBLASLt handle, or a live cuBLAS handle used as one (NVIDIA
/// allows the cast; the cuBLAS handle belongs to libcublas, whose handle
/// table this library cannot see, so it is recognised by its header).
fn resolve(h: LtHandleT) -> Result<Target> {
    if h.is_null() {
        return Err(Error::not_initialized("the cuBLASLt handle is NULL"));
    }
    if live().contains(&(h as usize)) {
        // SAFETY: a live handle made by `cublasLtCreate`.
        let lt = unsafe { &*h.cast::<LtHandle>() };
        return Ok(Target { ctx: lt.header.ctx, backend: lt.backend });
    }
    // SAFETY: a header is plain data; the pointer is the caller's, read
    // without faulting where the kernel allows it.
    match unsafe { read_user(h.cast_const().cast::<Header>()) } {
        Some(hd) if hd.magic == BLAS_MAGIC => Ok(Target { ctx: hd.ctx, backend: backend_for(hd.device)? }),
        _ => Err(Error::not_initialized(format!("{h:p} is not a live cuBLASLt (or cuBLAS) handle"))),
    }
}

pub unsafe extern "C" fn cublasLtCreate(out: *mut LtHandleT) -> Status {
    api("cublasLtCreate", || {
        if out.is_null() {
            return Err(Error::invalid("lightHandle is NULL"));
        }
        let d = driver()?;
        let (ctx, device) = d.current_context()?;
        let backend = backend_for(device)?;
        let h = Box::into_raw(Box::new(LtHandle { header: Header { magic: LT_MAGIC, ctx: ctx as usize, device }, backend }));
        live().insert(h as usize);
        debug!("cublasLtCreate: handle {h:p} on device {device} ({} backend)", backend.name());
        // SAFETY: checked non-NULL; the caller's out-pointer.
        unsafe { *out = h.cast() };
        Ok(())
    })
}

pub unsafe extern "C" fn cublasLtDestroy(h: LtHandleT) -> Status {
    api("cublasLtDestroy", || {
        if !live().remove(&(h as usize)) {
            return Err(Error::not_initialized(format!("{h:p} is not a live cuBLASLt handle")));
        }
        // SAFETY: made by `cublasLtCreate`, removed from the live set once.
        let mut lt = unsafe { Box::from_raw(h.cast::<LtHandle>()) };
        lt.header.magic = 0;
        Ok(())
    })
}

pub unsafe extern "C" fn cublasLtGetStatusName(s: Status) -> *const c_char {
    // SAFETY: returns a static string.
    unsafe { crate::abi::cublasGetStatusName(s) }
}

pub unsafe extern "C" fn cublasLtGetStatusString(s: Status) -> *const c_char {
    // SAFETY: returns a static string.
    unsafe { crate::abi::cublasGetStatusString(s) }
}

/// The heuristics cache's capacity: remembered and reported (anycuda's
/// heuristic has one answer and keeps no cache).
static CACHE_CAPACITY: AtomicUsize = AtomicUsize::new(8192);

pub unsafe extern "C" fn cublasLtHeuristicsCacheGetCapacity(out: *mut usize) -> Status {
    api("cublasLtHeuristicsCacheGetCapacity", || {
        if out.is_null() {
            return Err(Error::invalid("capacity is NULL"));
        }
        // SAFETY: checked non-NULL.
        unsafe { *out = CACHE_CAPACITY.load(Ordering::Relaxed) };
        Ok(())
    })
}

pub unsafe extern "C" fn cublasLtHeuristicsCacheSetCapacity(capacity: usize) -> Status {
    api("cublasLtHeuristicsCacheSetCapacity", || {
        CACHE_CAPACITY.store(capacity, Ordering::Relaxed);
        Ok(())
    })
}

// ---- descriptors -----------------------------------------------------------

/// `...Create` and `...Destroy` of a descriptor type.
fn create_into<T: Record>(out: *mut *mut T, v: T, name: &str) -> Status {
    api(name, || {
        if out.is_null() {
            return Err(Error::invalid("the descriptor's out-pointer is NULL"));
        }
        // SAFETY: checked non-NULL.
        unsafe { *out = mm::create(v) };
        Ok(())
    })
}

macro_rules! descriptor_fns {
    ($t:ty, $destroy:ident, $set:ident, $get:ident) => {
        pub unsafe extern "C" fn $destroy(p: *mut $t) -> Status {
            // SAFETY: checked by `destroy`.
            api(stringify!($destroy), || unsafe { mm::destroy(p) })
        }
        pub unsafe extern "C" fn $set(p: *mut $t, attr: c_int, buf: P, size: usize) -> Status {
            // SAFETY: the caller's buffer of `size` bytes.
            api(stringify!($set), || unsafe { mm::set_attribute(p, attr, buf.cast(), size) })
        }
        pub unsafe extern "C" fn $get(p: *const $t, attr: c_int, buf: PM, size: usize, written: *mut usize) -> Status {
            // SAFETY: the caller's buffer of `size` bytes.
            api(stringify!($get), || unsafe { mm::get_attribute(p, attr, buf.cast(), size, written) })
        }
    };
}

descriptor_fns!(Layout, cublasLtMatrixLayoutDestroy, cublasLtMatrixLayoutSetAttribute, cublasLtMatrixLayoutGetAttribute);
descriptor_fns!(Desc, cublasLtMatmulDescDestroy, cublasLtMatmulDescSetAttribute, cublasLtMatmulDescGetAttribute);
descriptor_fns!(Pref, cublasLtMatmulPreferenceDestroy, cublasLtMatmulPreferenceSetAttribute, cublasLtMatmulPreferenceGetAttribute);

pub unsafe extern "C" fn cublasLtMatrixLayoutCreate(out: *mut *mut Layout, dtype: c_int, rows: u64, cols: u64, ld: i64) -> Status {
    create_into(out, Layout::new(dtype as u32, rows, cols, ld), "cublasLtMatrixLayoutCreate")
}

pub unsafe extern "C" fn cublasLtMatrixLayoutInit_internal(
    p: *mut Layout,
    size: usize,
    dtype: c_int,
    rows: u64,
    cols: u64,
    ld: i64,
) -> Status {
    // SAFETY: the caller's `size` bytes.
    api("cublasLtMatrixLayoutInit_internal", || unsafe { mm::init(p, size, Layout::new(dtype as u32, rows, cols, ld)) })
}

pub unsafe extern "C" fn cublasLtMatmulDescCreate(out: *mut *mut Desc, compute: c_int, scale: c_int) -> Status {
    create_into(out, Desc::new(compute, scale), "cublasLtMatmulDescCreate")
}

pub unsafe extern "C" fn cublasLtMatmulDescInit_internal(p: *mut Desc, size: usize, compute: c_int, scale: c_int) -> Status {
    // SAFETY: the caller's `size` bytes.
    api("cublasLtMatmulDescInit_internal", || unsafe { mm::init(p, size, Desc::new(compute, scale)) })
}

pub unsafe extern "C" fn cublasLtMatmulPreferenceCreate(out: *mut *mut Pref) -> Status {
    create_into(out, Pref::new(), "cublasLtMatmulPreferenceCreate")
}

pub unsafe extern "C" fn cublasLtMatmulPreferenceInit_internal(p: *mut Pref, size: usize) -> Status {
    // SAFETY: the caller's `size` bytes.
    api("cublasLtMatmulPreferenceInit_internal", || unsafe { mm::init(p, size, Pref::new()) })
}

// ---- algorithms and the heuristic query ------------------------------------

/// The checked configuration of the four layouts and the descriptor.
fn configuration(desc: *const Desc, a: *const Layout, b: *const Layout, c: *const Layout, d: *const Layout) -> Result<(Desc, Plan)> {
    let desc = mm::read(desc, "computeDesc")?;
    let la = mm::read(a, "Adesc")?;
    let lb = mm::read(b, "Bdesc")?;
    let lc = mm::read(c, "Cdesc")?;
    let ld = mm::read(d, "Ddesc")?;
    let plan = mm::plan(&desc, &la, &lb, &lc, &ld)?;
    Ok((desc, plan))
}

fn result_for(compute: i32) -> HeuristicResult {
    HeuristicResult { algo: Algo::new(compute), workspace_size: 0, state: status::SUCCESS, waves_count: 1.0, reserved: [0; 4] }
}

pub unsafe extern "C" fn cublasLtMatmulAlgoGetHeuristic(
    h: LtHandleT,
    desc: *const Desc,
    a: *const Layout,
    b: *const Layout,
    c: *const Layout,
    d: *const Layout,
    pref: *const Pref,
    requested: c_int,
    results: *mut HeuristicResult,
    count: *mut c_int,
) -> Status {
    api("cublasLtMatmulAlgoGetHeuristic", || {
        resolve(h)?;
        if count.is_null() || results.is_null() {
            return Err(Error::invalid("heuristicResultsArray or returnAlgoCount is NULL"));
        }
        // SAFETY: checked non-NULL.
        unsafe { *count = 0 };
        if requested <= 0 {
            return Err(Error::invalid(format!("requestedAlgoCount = {requested} < 1")));
        }
        mm::read(pref, "preference")?;
        let (desc, _) = configuration(desc, a, b, c, d)?;
        // One algorithm applies to every supported configuration and needs
        // no workspace, so every preference admits it.
        // SAFETY: at least one entry, the caller's array.
        unsafe {
            std::ptr::write_unaligned(results, result_for(desc.compute));
            *count = 1;
        }
        Ok(())
    })
}

pub unsafe extern "C" fn cublasLtMatmulAlgoGetIds(
    h: LtHandleT,
    compute: c_int,
    scale: c_int,
    at: c_int,
    bt: c_int,
    ct: c_int,
    dt: c_int,
    requested: c_int,
    ids: *mut c_int,
    count: *mut c_int,
) -> Status {
    api("cublasLtMatmulAlgoGetIds", || {
        resolve(h)?;
        if count.is_null() || (requested > 0 && ids.is_null()) {
            return Err(Error::invalid("algoIdsArray or returnAlgoCount is NULL"));
        }
        if requested <= 0 {
            return Err(Error::invalid(format!("requestedAlgoCount = {requested} < 1")));
        }
        mm::types(compute, scale, at, bt, ct, dt)?;
        // SAFETY: checked non-NULL, room for at least one id.
        unsafe {
            *ids = 0;
            *count = 1;
        }
        Ok(())
    })
}

pub unsafe extern "C" fn cublasLtMatmulAlgoInit(
    h: LtHandleT,
    compute: c_int,
    scale: c_int,
    at: c_int,
    bt: c_int,
    ct: c_int,
    dt: c_int,
    id: c_int,
    algo: *mut Algo,
) -> Status {
    api("cublasLtMatmulAlgoInit", || {
        resolve(h)?;
        if algo.is_null() {
            return Err(Error::invalid("algo is NULL"));
        }
        mm::types(compute, scale, at, bt, ct, dt)?;
        if id != 0 {
            return Err(Error::invalid(format!("algoId {id} is not one of anycuda's (cublasLtMatmulAlgoGetIds gives 0)")));
        }
        // SAFETY: checked non-NULL; the caller's cublasLtMatmulAlgo_t.
        unsafe { std::ptr::write_unaligned(algo, Algo::new(compute)) };
        Ok(())
    })
}

pub unsafe extern "C" fn cublasLtMatmulAlgoCheck(
    h: LtHandleT,
    desc: *const Desc,
    a: *const Layout,
    b: *const Layout,
    c: *const Layout,
    d: *const Layout,
    algo: *const Algo,
    result: *mut HeuristicResult,
) -> Status {
    api("cublasLtMatmulAlgoCheck", || {
        resolve(h)?;
        if result.is_null() {
            return Err(Error::invalid("result is NULL"));
        }
        let al = mm::read(algo, "algo")?;
        al.check()?;
        configuration(desc, a, b, c, d)?;
        let mut r = result_for(al.compute);
        r.algo = al;
        // SAFETY: checked non-NULL.
        unsafe { std::ptr::write_unaligned(result, r) };
        Ok(())
    })
}

pub unsafe extern "C" fn cublasLtMatmulAlgoConfigSetAttribute(algo: *mut Algo, attr: c_int, buf: P, size: usize) -> Status {
    api("cublasLtMatmulAlgoConfigSetAttribute", || {
        if attr == 0 {
            return Err(Error::invalid("CUBLASLT_ALGO_CONFIG_ID is read-only (set by cublasLtMatmulAlgoInit)"));
        }
        // SAFETY: the caller's buffer of `size` bytes.
        unsafe { mm::set_attribute(algo, attr, buf.cast(), size) }
    })
}

pub unsafe extern "C" fn cublasLtMatmulAlgoConfigGetAttribute(
    algo: *const Algo,
    attr: c_int,
    buf: PM,
    size: usize,
    written: *mut usize,
) -> Status {
    // SAFETY: the caller's buffer of `size` bytes.
    api("cublasLtMatmulAlgoConfigGetAttribute", || unsafe { mm::get_attribute(algo, attr, buf.cast(), size, written) })
}

/// Writes an attribute value as `...GetAttribute` does; an array may go to
/// a larger buffer.
///
/// # Safety
/// `buf` must be writable for `size` bytes, `written` NULL or writable.
unsafe fn put(bytes: &[u8], array: bool, buf: PM, size: usize, written: *mut usize) -> Result<()> {
    // SAFETY (block): the caller's promises.
    unsafe {
        if size == 0 {
            if written.is_null() {
                return Err(Error::invalid("sizeInBytes is 0 and sizeWritten is NULL"));
            }
            *written = bytes.len();
            return Ok(());
        }
        if buf.is_null() {
            return Err(Error::invalid("buf is NULL"));
        }
        if size != bytes.len() && !(array && size > bytes.len()) {
            return Err(Error::invalid(format!("the attribute takes {} bytes, not {size}", bytes.len())));
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len());
        if !written.is_null() {
            *written = bytes.len();
        }
    }
    Ok(())
}

pub unsafe extern "C" fn cublasLtMatmulAlgoCapGetAttribute(
    algo: *const Algo,
    attr: c_int,
    buf: PM,
    size: usize,
    written: *mut usize,
) -> Status {
    api("cublasLtMatmulAlgoCapGetAttribute", || {
        let al = mm::read(algo, "algo")?;
        let i32b = |v: i32| v.to_ne_bytes().to_vec();
        let u32b = |v: u32| v.to_ne_bytes().to_vec();
        use crate::blas::compute_type::*;
        // CUBLASLT_NUMERICAL_IMPL_FLAGS: fused multiply-adds, accumulator
        // and input types of the compute type.
        let numerics: u64 = 0x1
            | match al.compute {
                C16F | C16F_PEDANTIC => (0x02 << 8) | (0x01 << 16),
                C64F | C64F_PEDANTIC | C64F_EMULATED_FIXEDPOINT => (0x04 << 8) | (0x10 << 16),
                C32I | C32I_PEDANTIC => (0x08 << 8) | (0x20 << 16),
                _ => (0x02 << 8) | (0x08 << 16),
            };
        let (bytes, array) = match attr {
            0 => (i32b(0), false),                          // SPLITK_SUPPORT
            1 => (u32b(0), false),                          // REDUCTION_SCHEME_MASK
            2 => (u32b(0), false),                          // CTA_SWIZZLING_SUPPORT
            3 => (i32b(1), false),                          // STRIDED_BATCH_SUPPORT
            4 => (i32b(1), false),                          // OUT_OF_PLACE_RESULT_SUPPORT
            5 => (i32b(0), false),                          // UPLO_SUPPORT
            6 => (u32b(0), true),                           // TILE_IDS: TILE_UNDEFINED
            7 => (i32b(0), false),                          // CUSTOM_OPTION_MAX
            10 => (i32b(0), false),                         // CUSTOM_MEMORY_ORDER: COL and ROW only
            11 => (u32b(1 | 2), false),                     // POINTER_MODE_MASK: host, device
            12 => (u32b(mm::EPILOGUE_MASK), false),         // EPILOGUE_MASK
            13 => (u32b(0), true),                          // STAGES_IDS: STAGES_UNDEFINED
            14 => (i32b(0), false),                         // LD_NEGATIVE
            15 => (numerics.to_ne_bytes().to_vec(), false), // NUMERICAL_IMPL_FLAGS
            16..=19 => (u32b(1), false),                    // MIN_ALIGNMENT_A..D_BYTES
            21..=23 => (i32b(0), false),                    // POINTER_ARRAY_BATCH, EMULATION, GROUPED
            _ => return Err(Error::invalid(format!("{attr} is not a cublasLtMatmulAlgoCapAttributes_t"))),
        };
        // SAFETY: the caller's buffer of `size` bytes.
        unsafe { put(&bytes, array, buf, size, written) }
    })
}

// ---- the matmul ------------------------------------------------------------

fn view(ptr: u64, s: &mm::Shape) -> View {
    View { ptr, rs: s.rs, cs: s.cs, dtype: s.dtype }
}

pub unsafe extern "C" fn cublasLtMatmul(
    h: LtHandleT,
    desc: *const Desc,
    alpha: P,
    a: P,
    adesc: *const Layout,
    b: P,
    bdesc: *const Layout,
    beta: P,
    c: P,
    cdesc: *const Layout,
    d: PM,
    ddesc: *const Layout,
    algo: *const Algo,
    workspace: PM,
    workspace_size: usize,
    stream: PM,
) -> Status {
    api("cublasLtMatmul", || {
        let t = resolve(h)?;
        let (dsc, p) = configuration(desc, adesc, bdesc, cdesc, ddesc)?;
        if !algo.is_null() {
            mm::read(algo, "algo")?.check()?;
        }
        if alpha.is_null() || beta.is_null() {
            return Err(Error::invalid("alpha or beta is NULL"));
        }
        if workspace.is_null() && workspace_size != 0 {
            return Err(Error::invalid(format!("workspace is NULL with workspaceSizeInBytes = {workspace_size}")));
        }
        let (a, b, c, d) = (a as u64, b as u64, c as u64, d as u64);
        if c == d && c != 0 && (p.c.rs, p.c.cs) != (p.d.rs, p.d.cs) {
            return Err(Error::invalid("C and D are the same matrix (in place) but Cdesc and Ddesc differ in order or leading dimension"));
        }
        if p.m == 0 || p.n == 0 {
            return Ok(());
        }
        let drv = driver()?;
        drv.ensure_current(t.ctx as cuda::CUcontext)?;
        let scalar = |ptr: P, what: &str| -> Result<Scalar> {
            if p.device_scalars {
                check_device(ptr as u64, p.scale.size() as u64, what)?;
                Ok(Scalar::Device { ptr: ptr as u64, dtype: p.scale })
            } else {
                // SAFETY: a host scalar, the caller's readable pointer.
                Ok(Scalar::Value(unsafe { p.scale.read(ptr as u64, 0) }))
            }
        };
        let (alpha, beta) = (scalar(alpha, "alpha")?, scalar(beta, "beta")?);
        let zero = num_complex::Complex64::new(0.0, 0.0);
        let host_zero = |s: Scalar| matches!(s, Scalar::Value(v) if v == zero);
        let count = p.d.count;
        let check = |ptr: u64, s: &mm::Shape, what: &str| {
            let v = view(ptr, s);
            check_strided(ptr, v.extent(s.rows, s.cols), s.stride.saturating_mul(s.dtype.size() as i64), count, what)
        };
        if p.k > 0 && !host_zero(alpha) {
            check(a, &p.a, "A")?;
            check(b, &p.b, "B")?;
        }
        if !host_zero(beta) {
            if c == 0 {
                return Err(Error::invalid("C is NULL but beta is not a host zero"));
            }
            check(c, &p.c, "C")?;
        }
        check(d, &p.d, "D")?;
        let bias = match p.bias {
            Some(dtype) => {
                let size = dtype.size() as i64;
                check_strided(dsc.bias, p.m as u64 * size as u64, dsc.bias_stride.saturating_mul(size), count, "bias")?;
                Some(Bias { ptr: dsc.bias, dtype, stride: dsc.bias_stride })
            }
            None => None,
        };
        let aux = match p.aux {
            Some(dtype) => {
                let v = View::col_major(dsc.aux, dsc.aux_ld, dtype);
                check_strided(dsc.aux, v.extent(p.m, p.n), dsc.aux_stride.saturating_mul(dtype.size() as i64), count, "aux matrix")?;
                Some(Aux { ptr: dsc.aux, ld: dsc.aux_ld, dtype, stride: dsc.aux_stride })
            }
            None => None,
        };
        let call = Matmul {
            ta: p.ta,
            tb: p.tb,
            m: p.m,
            n: p.n,
            k: p.k,
            alpha,
            beta,
            a: view(a, &p.a),
            b: view(b, &p.b),
            c: view(c, &p.c),
            d: view(d, &p.d),
            compute: p.compute,
            batch: MatmulBatch::Strided { count, a: p.a.stride, b: p.b.stride, c: p.c.stride, d: p.d.stride },
            epilogue: Epilogue { act: p.act, bias, aux },
        };
        t.backend.matmul(Queue { stream: stream as usize }, call)
    })
}
