//! The checks and argument handling of the BLAS entry points (one function
//! per family; the C symbols in `abi.rs` only convert their arguments).
//! Everything the cuBLAS documentation lists as `CUBLAS_STATUS_INVALID_VALUE`
//! is checked here, in its order, before any work is queued.
// The pointer arguments are the C ABI's, checked before they are read.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::c_void;

use crate::backend::{
    self, Batch, Compute, Dgmm, Geam, Gemm, Gemv, Ger, Level1, Lu, LuOp, Mat, Out, OutType, RankK, RankKind, Trsm, Vector,
};
use crate::handle::{self, check_device, HandleT};
use crate::status::{check, Error, Result};
use crate::types::{self, matrix_extent, vector_extent, vector_start, DType, Fill, Op, Side};

/// How a gemm call finds its batch's matrices.
#[derive(Debug, Clone, Copy)]
pub enum BatchArg {
    One,
    Strided { count: i64, a: i64, b: i64, c: i64 },
    Pointers { count: i64 },
}

/// One operand as passed.
#[derive(Debug, Clone, Copy)]
pub struct Operand {
    pub ptr: *const c_void,
    pub dtype: DType,
    pub ld: i64,
}

#[derive(Debug, Clone, Copy)]
pub struct GemmArgs {
    pub ta: i32,
    pub tb: i32,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub alpha: *const c_void,
    pub a: Operand,
    pub b: Operand,
    pub beta: *const c_void,
    pub c: Operand,
    pub compute: Compute,
    /// The type of alpha and beta.
    pub scale: DType,
    pub batch: BatchArg,
}

/// Checks a strided batch: every matrix of it must lie in device memory.
pub fn check_strided(ptr: u64, extent: u64, stride_bytes: i64, count: i64, what: &str) -> Result<()> {
    if extent == 0 || count == 0 {
        return Ok(());
    }
    let last = (count - 1) as i128 * stride_bytes as i128;
    let (lo, hi) = (last.min(0), last.max(0));
    let start = ptr as i128 + lo;
    if start < 0 {
        return Err(Error::invalid(format!("the batch of {what} starts below address 0")));
    }
    let span = (hi - lo) as u64 + extent;
    check_device(start as u64, span, what)
}

pub fn gemm(h: HandleT, g: GemmArgs) -> Result<()> {
    handle::with(h, |hd| {
        let ta = Op::from_c(g.ta, "transa")?;
        let tb = Op::from_c(g.tb, "transb")?;
        check(g.m >= 0 && g.n >= 0 && g.k >= 0, || format!("m = {}, n = {}, k = {}: negative", g.m, g.n, g.k))?;
        let (ar, ac) = if ta == Op::N { (g.m, g.k) } else { (g.k, g.m) };
        let (br, bc) = if tb == Op::N { (g.k, g.n) } else { (g.n, g.k) };
        check(g.a.ld >= ar.max(1), || format!("lda = {} < max(1, {ar})", g.a.ld))?;
        check(g.b.ld >= br.max(1), || format!("ldb = {} < max(1, {br})", g.b.ld))?;
        check(g.c.ld >= g.m.max(1), || format!("ldc = {} < max(1, m = {})", g.c.ld, g.m))?;
        let count = match g.batch {
            BatchArg::One => 1,
            BatchArg::Strided { count, .. } | BatchArg::Pointers { count } => count,
        };
        check(count >= 0, || format!("batchCount = {count} < 0"))?;
        if g.alpha.is_null() || g.beta.is_null() {
            return Err(Error::invalid("alpha or beta is NULL"));
        }
        if g.m == 0 || g.n == 0 || count == 0 {
            return Ok(());
        }
        // SAFETY: host-mode scalars are the caller's readable pointers.
        let alpha = unsafe { hd.scalar(g.alpha, g.scale, "alpha")? };
        let beta = unsafe { hd.scalar(g.beta, g.scale, "beta")? };
        let reads_ab = g.k > 0;
        let ea = if reads_ab { matrix_extent(ar, ac, g.a.ld, g.a.dtype.size()) } else { 0 };
        let eb = if reads_ab { matrix_extent(br, bc, g.b.ld, g.b.dtype.size()) } else { 0 };
        let ec = matrix_extent(g.m, g.n, g.c.ld, g.c.dtype.size());
        let batch = match g.batch {
            BatchArg::One => {
                check_device(g.a.ptr as u64, ea, "A")?;
                check_device(g.b.ptr as u64, eb, "B")?;
                check_device(g.c.ptr as u64, ec, "C")?;
                Batch::One
            }
            BatchArg::Strided { count, a, b, c } => {
                check_strided(g.a.ptr as u64, ea, a.saturating_mul(g.a.dtype.size() as i64), count, "A")?;
                check_strided(g.b.ptr as u64, eb, b.saturating_mul(g.b.dtype.size() as i64), count, "B")?;
                check_strided(g.c.ptr as u64, ec, c.saturating_mul(g.c.dtype.size() as i64), count, "C")?;
                Batch::Strided { count, a, b, c }
            }
            BatchArg::Pointers { count } => {
                for (p, what) in [(g.a.ptr, "Aarray"), (g.b.ptr, "Barray"), (g.c.ptr, "Carray")] {
                    check_device(p as u64, 8 * count as u64, what)?;
                }
                Batch::Pointers { count, a: g.a.ptr as u64, b: g.b.ptr as u64, c: g.c.ptr as u64 }
            }
        };
        let call = Gemm {
            ta,
            tb,
            m: g.m,
            n: g.n,
            k: g.k,
            alpha,
            beta,
            a: Mat { ptr: g.a.ptr as u64, ld: g.a.ld, dtype: g.a.dtype },
            b: Mat { ptr: g.b.ptr as u64, ld: g.b.ld, dtype: g.b.dtype },
            c: Mat { ptr: g.c.ptr as u64, ld: g.c.ld, dtype: g.c.dtype },
            compute: g.compute,
            batch,
        };
        hd.backend.gemm(hd.queue()?, call)
    })
}

/// `cublasComputeType_t` values.
pub mod compute_type {
    pub const C16F: i32 = 64;
    pub const C16F_PEDANTIC: i32 = 65;
    pub const C32F: i32 = 68;
    pub const C32F_PEDANTIC: i32 = 69;
    pub const C64F: i32 = 70;
    pub const C64F_PEDANTIC: i32 = 71;
    pub const C32I: i32 = 72;
    pub const C32I_PEDANTIC: i32 = 73;
    pub const C32F_FAST_16F: i32 = 74;
    pub const C32F_FAST_16BF: i32 = 75;
    pub const C32F_FAST_TF32: i32 = 77;
    pub const C32F_EMULATED_16BFX9: i32 = 78;
    pub const C64F_EMULATED_FIXEDPOINT: i32 = 79;
}

/// The arithmetic and scale type of a `cublasGemmEx`-style call, after
/// cuBLAS's table of supported type combinations.
pub fn ex_types(compute: i32, a: i32, b: i32, c: i32) -> Result<(Compute, DType, [DType; 3])> {
    use compute_type::*;
    let name = |t| types::cuda_type_name(t);
    let combo = || format!("A {}, B {}, C {} with compute type {compute}", name(a), name(b), name(c));
    if a != b {
        return Err(Error::unsupported(format!("{}: A and B must have the same type", combo())));
    }
    let (ad, cd) = match (DType::from_cuda(a), DType::from_cuda(c)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return Err(Error::new(e.status, format!("{}: {}", combo(), e.why))),
    };
    use DType::*;
    let r = match compute {
        C16F | C16F_PEDANTIC => match (ad, cd) {
            (F16, F16) => (Compute::F32, F16),
            _ => return Err(Error::unsupported(format!("{}: 16-bit compute needs f16 A, B and C", combo()))),
        },
        C32F | C32F_PEDANTIC => match (ad, cd) {
            (F16, F16) | (BF16, BF16) | (F16, F32) | (BF16, F32) | (F32, F32) | (I8, F32) => (Compute::F32, F32),
            (C32, C32) => (Compute::C32, C32),
            _ => return Err(Error::unsupported(format!("{}: not a combination cuBLAS supports", combo()))),
        },
        C32F_FAST_16F | C32F_FAST_16BF | C32F_FAST_TF32 | C32F_EMULATED_16BFX9 => match (ad, cd) {
            (F32, F32) => (Compute::F32, F32),
            (C32, C32) => (Compute::C32, C32),
            _ => return Err(Error::unsupported(format!("{}: the fast/emulated f32 compute types take f32 or c32 matrices", combo()))),
        },
        C64F | C64F_PEDANTIC | C64F_EMULATED_FIXEDPOINT => match (ad, cd) {
            (F64, F64) => (Compute::F64, F64),
            (C64, C64) => (Compute::C64, C64),
            _ => return Err(Error::unsupported(format!("{}: 64-bit compute takes f64 or c64 matrices", combo()))),
        },
        C32I | C32I_PEDANTIC => match (ad, cd) {
            (I8, I32) => (Compute::I32, I32),
            _ => return Err(Error::unsupported(format!("{}: 32-bit integer compute takes 8-bit integer A and B, 32-bit C", combo()))),
        },
        _ => return Err(Error::invalid(format!("computeType {compute} is not a cublasComputeType_t"))),
    };
    Ok((r.0, r.1, [ad, ad, cd]))
}

#[allow(clippy::too_many_arguments)]
pub fn trsm(
    h: HandleT,
    side: i32,
    uplo: i32,
    trans: i32,
    diag: i32,
    m: i64,
    n: i64,
    alpha: *const c_void,
    a: *const c_void,
    lda: i64,
    b: *mut c_void,
    ldb: i64,
    dtype: DType,
    batch: Option<i64>,
) -> Result<()> {
    handle::with(h, |hd| {
        let side = Side::from_c(side)?;
        let fill = Fill::from_c(uplo)?;
        let trans = Op::from_c(trans, "trans")?;
        let unit = types::unit_diag(diag)?;
        check(m >= 0 && n >= 0, || format!("m = {m}, n = {n}: negative"))?;
        let na = if side == Side::Left { m } else { n };
        check(lda >= na.max(1), || format!("lda = {lda} < max(1, {na})"))?;
        check(ldb >= m.max(1), || format!("ldb = {ldb} < max(1, m = {m})"))?;
        let count = batch.unwrap_or(1);
        check(count >= 0, || format!("batchCount = {count} < 0"))?;
        if alpha.is_null() {
            return Err(Error::invalid("alpha is NULL"));
        }
        if m == 0 || n == 0 || count == 0 {
            return Ok(());
        }
        // SAFETY: host-mode alpha is the caller's readable pointer.
        let alpha = unsafe { hd.scalar(alpha, dtype, "alpha")? };
        let bt = match batch {
            None => {
                check_device(a as u64, matrix_extent(na, na, lda, dtype.size()), "A")?;
                check_device(b as u64, matrix_extent(m, n, ldb, dtype.size()), "B")?;
                Batch::One
            }
            Some(count) => {
                check_device(a as u64, 8 * count as u64, "A array")?;
                check_device(b as u64, 8 * count as u64, "B array")?;
                Batch::Pointers { count, a: a as u64, b: b as u64, c: 0 }
            }
        };
        let call = Trsm {
            side,
            fill,
            trans,
            unit,
            m,
            n,
            alpha,
            a: Mat { ptr: a as u64, ld: lda, dtype },
            b: Mat { ptr: b as u64, ld: ldb, dtype },
            batch: bt,
        };
        hd.backend.trsm(hd.queue()?, call)
    })
}

fn vector(p: *const c_void, n: i64, inc: i64, dtype: DType, what: &str) -> Result<Vector> {
    check_device(vector_start(p as u64, n, inc, dtype.size()).min(p as u64), vector_extent(n, inc, dtype.size()), what)?;
    Ok(Vector { ptr: vector_start(p as u64, n, inc, dtype.size()), inc, dtype })
}

/// The level-1 operations. `alpha` is the scalar (axpy, scal) with its
/// type; `result` the reduction's destination.
pub enum L1 {
    Axpy,
    Scal,
    Copy,
    Swap,
    Dot { conj: bool },
    Nrm2,
    Asum,
    Iamax { min: bool, wide: bool },
}

#[allow(clippy::too_many_arguments)]
pub fn level1(
    h: HandleT,
    op: L1,
    n: i64,
    alpha: Option<(*const c_void, DType)>,
    x: *const c_void,
    incx: i64,
    y: *const c_void,
    incy: i64,
    dtype: DType,
    result: *mut c_void,
) -> Result<()> {
    handle::with(h, |hd| {
        let reduction = matches!(op, L1::Dot { .. } | L1::Nrm2 | L1::Asum | L1::Iamax { .. });
        if reduction && result.is_null() {
            return Err(Error::invalid("result is NULL"));
        }
        if let Some((p, _)) = alpha {
            if p.is_null() {
                return Err(Error::invalid("alpha is NULL"));
            }
        }
        let out_type = match op {
            L1::Iamax { wide: false, .. } => OutType::Index32,
            L1::Iamax { wide: true, .. } => OutType::Index64,
            L1::Nrm2 | L1::Asum => OutType::Value(match dtype {
                DType::C32 => DType::F32,
                DType::C64 => DType::F64,
                d => d,
            }),
            _ => OutType::Value(dtype),
        };
        let out_size = match out_type {
            OutType::Value(d) => d.size(),
            OutType::Index32 => 4,
            OutType::Index64 => 8,
        } as u64;
        let device = hd.device_mode();
        let q = hd.queue()?;
        if n <= 0 || (matches!(op, L1::Nrm2 | L1::Asum | L1::Iamax { .. } | L1::Scal) && incx <= 0) {
            // Nothing to do; reductions give 0.
            if reduction {
                let out = Out { ptr: result as u64, dtype: out_type };
                if device {
                    check_device(result as u64, out_size, "result")?;
                    return hd.backend.level1(q, 0, level1_call(&op, None, x_stub(dtype), x_stub(dtype), out));
                }
                // SAFETY: a host result pointer, written as cuBLAS does.
                unsafe { std::ptr::write_bytes(result.cast::<u8>(), 0, out_size as usize) };
            }
            return Ok(());
        }
        let alpha = match alpha {
            // SAFETY: host-mode alpha is the caller's readable pointer.
            Some((p, t)) => Some(unsafe { hd.scalar(p, t, "alpha")? }),
            None => None,
        };
        let xv = vector(x, n, incx, dtype, "x")?;
        let yv = if matches!(op, L1::Axpy | L1::Copy | L1::Swap | L1::Dot { .. }) { vector(y, n, incy, dtype, "y")? } else { xv };
        let out = Out { ptr: result as u64, dtype: out_type };
        if reduction && device {
            check_device(result as u64, out_size, "result")?;
        }
        hd.backend.level1(q, n, level1_call(&op, alpha, xv, yv, out))?;
        if reduction && !device {
            // A host result is there when the call returns.
            crate::cuda::driver()?.synchronize(q.stream())?;
        }
        Ok(())
    })
}

fn x_stub(dtype: DType) -> Vector {
    Vector { ptr: 0, inc: 1, dtype }
}

fn level1_call(op: &L1, alpha: Option<types::Scalar>, x: Vector, y: Vector, out: Out) -> Level1 {
    let alpha = alpha.unwrap_or(types::Scalar::Value(num_complex::Complex64::new(0.0, 0.0)));
    match *op {
        L1::Axpy => Level1::Axpy { alpha, x, y },
        L1::Scal => Level1::Scal { alpha, x },
        L1::Copy => Level1::Copy { x, y },
        L1::Swap => Level1::Swap { x, y },
        L1::Dot { conj } => Level1::Dot { x, y, conj, out },
        L1::Nrm2 => Level1::Nrm2 { x, out },
        L1::Asum => Level1::Asum { x, out },
        L1::Iamax { min, .. } => Level1::Iamax { x, min, out },
    }
}

#[allow(clippy::too_many_arguments)]
pub fn gemv(
    h: HandleT,
    trans: i32,
    m: i64,
    n: i64,
    alpha: *const c_void,
    a: *const c_void,
    lda: i64,
    x: *const c_void,
    incx: i64,
    beta: *const c_void,
    y: *mut c_void,
    incy: i64,
    dtype: DType,
) -> Result<()> {
    handle::with(h, |hd| {
        let trans = Op::from_c(trans, "trans")?;
        check(m >= 0 && n >= 0, || format!("m = {m}, n = {n}: negative"))?;
        check(lda >= m.max(1), || format!("lda = {lda} < max(1, m = {m})"))?;
        check(incx != 0 && incy != 0, || format!("incx = {incx}, incy = {incy}: zero"))?;
        if alpha.is_null() || beta.is_null() {
            return Err(Error::invalid("alpha or beta is NULL"));
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        // SAFETY: host-mode scalars are the caller's readable pointers.
        let alpha = unsafe { hd.scalar(alpha, dtype, "alpha")? };
        let beta = unsafe { hd.scalar(beta, dtype, "beta")? };
        let (lx, ly) = if trans == Op::N { (n, m) } else { (m, n) };
        check_device(a as u64, matrix_extent(m, n, lda, dtype.size()), "A")?;
        let xv = vector(x, lx, incx, dtype, "x")?;
        let yv = vector(y, ly, incy, dtype, "y")?;
        let call = Gemv { trans, m, n, alpha, a: Mat { ptr: a as u64, ld: lda, dtype }, x: xv, beta, y: yv };
        hd.backend.gemv(hd.queue()?, call)
    })
}

#[allow(clippy::too_many_arguments)]
pub fn ger(
    h: HandleT,
    m: i64,
    n: i64,
    alpha: *const c_void,
    x: *const c_void,
    incx: i64,
    y: *const c_void,
    incy: i64,
    a: *mut c_void,
    lda: i64,
    dtype: DType,
    conj: bool,
) -> Result<()> {
    handle::with(h, |hd| {
        check(m >= 0 && n >= 0, || format!("m = {m}, n = {n}: negative"))?;
        check(incx != 0 && incy != 0, || format!("incx = {incx}, incy = {incy}: zero"))?;
        check(lda >= m.max(1), || format!("lda = {lda} < max(1, m = {m})"))?;
        if alpha.is_null() {
            return Err(Error::invalid("alpha is NULL"));
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        // SAFETY: host-mode alpha is the caller's readable pointer.
        let alpha = unsafe { hd.scalar(alpha, dtype, "alpha")? };
        check_device(a as u64, matrix_extent(m, n, lda, dtype.size()), "A")?;
        let xv = vector(x, m, incx, dtype, "x")?;
        let yv = vector(y, n, incy, dtype, "y")?;
        let call = Ger { m, n, alpha, x: xv, y: yv, a: Mat { ptr: a as u64, ld: lda, dtype }, conj };
        hd.backend.ger(hd.queue()?, call)
    })
}

/// Whether the byte ranges `[a, a + la)` and `[b, b + lb)` overlap.
fn overlap(a: u64, la: u64, b: u64, lb: u64) -> bool {
    la > 0 && lb > 0 && a < b.saturating_add(lb) && b < a.saturating_add(la)
}

/// `cublas<t>geam`: `C = alpha op(A) + beta op(B)`. In place only as the
/// documentation allows (`C` is `A` with `lda == ldc` and `transa` N, or
/// the same for `B`); any other overlap of `C` with an operand read is
/// `CUBLAS_STATUS_INVALID_VALUE`.
#[allow(clippy::too_many_arguments)]
pub fn geam(
    h: HandleT,
    transa: i32,
    transb: i32,
    m: i64,
    n: i64,
    alpha: *const c_void,
    a: *const c_void,
    lda: i64,
    beta: *const c_void,
    b: *const c_void,
    ldb: i64,
    c: *mut c_void,
    ldc: i64,
    dtype: DType,
) -> Result<()> {
    handle::with(h, |hd| {
        let ta = Op::from_c(transa, "transa")?;
        let tb = Op::from_c(transb, "transb")?;
        check(m >= 0 && n >= 0, || format!("m = {m}, n = {n}: negative"))?;
        let rows = |op: Op| if op == Op::N { m } else { n };
        check(lda >= rows(ta).max(1), || format!("lda = {lda} < max(1, {})", rows(ta)))?;
        check(ldb >= rows(tb).max(1), || format!("ldb = {ldb} < max(1, {})", rows(tb)))?;
        check(ldc >= m.max(1), || format!("ldc = {ldc} < max(1, m = {m})"))?;
        if alpha.is_null() || beta.is_null() {
            return Err(Error::invalid("alpha or beta is NULL"));
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        // SAFETY: host-mode scalars are the caller's readable pointers.
        let alpha = unsafe { hd.scalar(alpha, dtype, "alpha")? };
        let beta = unsafe { hd.scalar(beta, dtype, "beta")? };
        let stored = |op: Op| if op == Op::N { (m, n) } else { (n, m) };
        let size = dtype.size();
        let c_bytes = matrix_extent(m, n, ldc, size);
        check_device(c as u64, c_bytes, "C")?;
        for (p, ld, op, scalar, what) in [(a, lda, ta, alpha, "A"), (b, ldb, tb, beta, "B")] {
            // An operand a host scalar of 0 multiplies is not read (a
            // device scalar is only known when the work runs).
            if matches!(scalar, types::Scalar::Value(v) if v == num_complex::Complex64::new(0.0, 0.0)) {
                continue;
            }
            let (r, k) = stored(op);
            let bytes = matrix_extent(r, k, ld, size);
            check_device(p as u64, bytes, what)?;
            let in_place = p as u64 == c as u64 && ld == ldc && op == Op::N;
            check(in_place || !overlap(p as u64, bytes, c as u64, c_bytes), || {
                format!("C overlaps {what} other than in place ({what} = C, ld{} = ldc, not transposed)", what.to_lowercase())
            })?;
        }
        let mat = |p: *const c_void, ld: i64| Mat { ptr: p as u64, ld, dtype };
        let call = Geam { ta, tb, m, n, alpha, a: mat(a, lda), beta, b: mat(b, ldb), c: mat(c, ldc) };
        hd.backend.geam(hd.queue()?, call)
    })
}

/// `cublas<t>dgmm`: `C = A diag(x)` (right) or `diag(x) A` (left); `x`
/// has `n` (right) or `m` (left) elements `incx` apart (0: one element
/// for all; negative: from the end, as BLAS vectors). In place when
/// `C` is `A` with `lda == ldc`.
#[allow(clippy::too_many_arguments)]
pub fn dgmm(
    h: HandleT,
    mode: i32,
    m: i64,
    n: i64,
    a: *const c_void,
    lda: i64,
    x: *const c_void,
    incx: i64,
    c: *mut c_void,
    ldc: i64,
    dtype: DType,
) -> Result<()> {
    handle::with(h, |hd| {
        let side = Side::from_c(mode)?;
        check(m >= 0 && n >= 0, || format!("m = {m}, n = {n}: negative"))?;
        check(lda >= m.max(1), || format!("lda = {lda} < max(1, m = {m})"))?;
        check(ldc >= m.max(1), || format!("ldc = {ldc} < max(1, m = {m})"))?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        let size = dtype.size();
        let (a_bytes, c_bytes) = (matrix_extent(m, n, lda, size), matrix_extent(m, n, ldc, size));
        check_device(a as u64, a_bytes, "A")?;
        check_device(c as u64, c_bytes, "C")?;
        check((a as u64 == c as u64 && lda == ldc) || !overlap(a as u64, a_bytes, c as u64, c_bytes), || {
            "C overlaps A other than in place (A = C, lda = ldc)".to_string()
        })?;
        let len = if side == Side::Left { m } else { n };
        let xv = if incx == 0 {
            check_device(x as u64, size as u64, "x")?;
            Vector { ptr: x as u64, inc: 0, dtype }
        } else {
            vector(x, len, incx, dtype, "x")?
        };
        let mat = |p: *const c_void, ld: i64| Mat { ptr: p as u64, ld, dtype };
        hd.backend.dgmm(hd.queue()?, Dgmm { side, m, n, a: mat(a, lda), x: xv, c: mat(c, ldc) })
    })
}

/// The real type of a complex type's Hermitian scalars (itself for real
/// types).
fn real_type(t: DType) -> DType {
    match t {
        DType::C32 => DType::F32,
        DType::C64 => DType::F64,
        t => t,
    }
}

/// The rank-k updates: `cublas<t>syrk`, `herk`, `syr2k`, `her2k`, `syrkx`,
/// `herkx` (see [`RankKind`]). `b`/`ldb` are ignored for `syrk`/`herk`.
/// `trans` is N or T for the symmetric ones (C too on real types, where
/// it is T), N or C for the Hermitian ones.
#[allow(clippy::too_many_arguments)]
pub fn rankk(
    h: HandleT,
    kind: RankKind,
    uplo: i32,
    trans: i32,
    n: i64,
    k: i64,
    alpha: *const c_void,
    a: *const c_void,
    lda: i64,
    b: *const c_void,
    ldb: i64,
    beta: *const c_void,
    c: *mut c_void,
    ldc: i64,
    dtype: DType,
) -> Result<()> {
    handle::with(h, |hd| {
        let fill = Fill::from_c(uplo)?;
        let op = Op::from_c(trans, "trans")?;
        if dtype.is_complex() {
            if kind.hermitian() && op == Op::T {
                return Err(Error::invalid("trans = CUBLAS_OP_T: a Hermitian update takes CUBLAS_OP_N or CUBLAS_OP_C"));
            }
            if !kind.hermitian() && op == Op::C {
                return Err(Error::invalid("trans = CUBLAS_OP_C: a complex symmetric update takes CUBLAS_OP_N or CUBLAS_OP_T"));
            }
        }
        check(n >= 0 && k >= 0, || format!("n = {n}, k = {k}: negative"))?;
        let (rows, cols) = if op == Op::N { (n, k) } else { (k, n) };
        check(lda >= rows.max(1), || format!("lda = {lda} < max(1, {rows})"))?;
        if kind.has_b() {
            check(ldb >= rows.max(1), || format!("ldb = {ldb} < max(1, {rows})"))?;
        }
        check(ldc >= n.max(1), || format!("ldc = {ldc} < max(1, n = {n})"))?;
        if alpha.is_null() || beta.is_null() {
            return Err(Error::invalid("alpha or beta is NULL"));
        }
        if n == 0 {
            return Ok(());
        }
        // herk's alpha and every Hermitian beta are real; her2k's and
        // herkx's alpha complex.
        let alpha_t = if kind == RankKind::Herk { real_type(dtype) } else { dtype };
        let beta_t = if kind.hermitian() { real_type(dtype) } else { dtype };
        // SAFETY: host-mode scalars are the caller's readable pointers.
        let alpha = unsafe { hd.scalar(alpha, alpha_t, "alpha")? };
        let beta = unsafe { hd.scalar(beta, beta_t, "beta")? };
        let size = dtype.size();
        if k > 0 {
            check_device(a as u64, matrix_extent(rows, cols, lda, size), "A")?;
            if kind.has_b() {
                check_device(b as u64, matrix_extent(rows, cols, ldb, size), "B")?;
            }
        }
        check_device(c as u64, matrix_extent(n, n, ldc, size), "C")?;
        let a = Mat { ptr: a as u64, ld: lda, dtype };
        let b = if kind.has_b() { Mat { ptr: b as u64, ld: ldb, dtype } } else { a };
        let call = RankK { kind, fill, trans: op, n, k, alpha, beta, a, b, c: Mat { ptr: c as u64, ld: ldc, dtype } };
        hd.backend.rankk(hd.queue()?, call)
    })
}

/// What a batched LU call passes besides `n`, the batch size and the type
/// (pointers as given: arrays of device pointers, pivot and info arrays).
#[derive(Debug, Clone, Copy)]
pub enum LuArgs {
    Getrf { a: *const c_void, lda: i64, piv: *mut i32, info: *mut i32 },
    Getrs { trans: i32, nrhs: i64, a: *const c_void, lda: i64, piv: *const i32, b: *const c_void, ldb: i64, info: *mut i32 },
    Getri { a: *const c_void, lda: i64, piv: *const i32, c: *const c_void, ldc: i64, info: *mut i32 },
    Matinv { a: *const c_void, lda: i64, inv: *const c_void, ldinv: i64, info: *mut i32 },
}

/// The batched LU routines (`cublas<t>getrfBatched`, `getrsBatched`,
/// `getriBatched`, `matinvBatched`). `getrsBatched` reports a bad
/// argument in its host `info` too (`-i` for the i-th parameter, as
/// LAPACK), and 0 when the arguments are valid.
pub fn lu(h: HandleT, n: i64, batch: i64, dtype: DType, args: LuArgs) -> Result<()> {
    // getrsBatched's host info: 0, or minus the position of the bad
    // parameter (handle 1, trans 2, n 3, nrhs 4, Aarray 5, lda 6, devIpiv
    // 7, Barray 8, ldb 9, info 10, batchSize 11).
    let host_info = match args {
        LuArgs::Getrs { info, .. } => info,
        _ => std::ptr::null_mut(),
    };
    let set_info = |v: i32| {
        if !host_info.is_null() {
            // SAFETY: getrsBatched's info is the caller's host int.
            unsafe { *host_info = v };
        }
    };
    let bad = |pos: i32, why: String| {
        set_info(-pos);
        Err(Error::invalid(why))
    };
    handle::with(h, |hd| {
        let info_array = |info: *mut i32| -> Result<u64> {
            check_device(info as u64, 4 * batch as u64, "infoArray")?;
            Ok(info as u64)
        };
        let ptrs = |p: *const c_void, what: &str| -> Result<u64> {
            check_device(p as u64, 8 * batch as u64, what)?;
            Ok(p as u64)
        };
        let pivots = |p: *const i32| -> Result<u64> {
            if p.is_null() {
                return Ok(0);
            }
            check_device(p as u64, 4 * (n * batch) as u64, "PivotArray")?;
            Ok(p as u64)
        };
        let op = match args {
            LuArgs::Getrf { a, lda, piv, info } => {
                check(n >= 0, || format!("n = {n} < 0"))?;
                check(lda >= n.max(1), || format!("lda = {lda} < max(1, n = {n})"))?;
                check(batch >= 0, || format!("batchSize = {batch} < 0"))?;
                if n == 0 || batch == 0 {
                    return Ok(());
                }
                LuOp::Getrf { a: ptrs(a, "Aarray")?, lda, piv: pivots(piv)?, info: info_array(info)? }
            }
            LuArgs::Getrs { trans, nrhs, a, lda, piv, b, ldb, info } => {
                if info.is_null() {
                    return Err(Error::invalid("info is NULL"));
                }
                let Ok(trans) = Op::from_c(trans, "trans") else {
                    return bad(2, format!("trans = {trans} is not CUBLAS_OP_N, CUBLAS_OP_T or CUBLAS_OP_C"));
                };
                if n < 0 {
                    return bad(3, format!("n = {n} < 0"));
                }
                if nrhs < 0 {
                    return bad(4, format!("nrhs = {nrhs} < 0"));
                }
                if lda < n.max(1) {
                    return bad(6, format!("lda = {lda} < max(1, n = {n})"));
                }
                if ldb < n.max(1) {
                    return bad(9, format!("ldb = {ldb} < max(1, n = {n})"));
                }
                if batch < 0 {
                    return bad(11, format!("batchSize = {batch} < 0"));
                }
                set_info(0);
                if n == 0 || nrhs == 0 || batch == 0 {
                    return Ok(());
                }
                LuOp::Getrs { trans, nrhs, a: ptrs(a, "Aarray")?, lda, piv: pivots(piv)?, b: ptrs(b, "Barray")?, ldb }
            }
            LuArgs::Getri { a, lda, piv, c, ldc, info } => {
                check(n >= 0, || format!("n = {n} < 0"))?;
                check(lda >= n.max(1), || format!("lda = {lda} < max(1, n = {n})"))?;
                check(ldc >= n.max(1), || format!("ldc = {ldc} < max(1, n = {n})"))?;
                check(batch >= 0, || format!("batchSize = {batch} < 0"))?;
                if n == 0 || batch == 0 {
                    return Ok(());
                }
                LuOp::Getri { a: ptrs(a, "Aarray")?, lda, piv: pivots(piv)?, c: ptrs(c, "Carray")?, ldc, info: info_array(info)? }
            }
            LuArgs::Matinv { a, lda, inv, ldinv, info } => {
                check(n >= 0, || format!("n = {n} < 0"))?;
                check(n <= 32, || format!("n = {n}: matinvBatched takes matrices of at most 32 rows"))?;
                check(lda >= n.max(1), || format!("lda = {lda} < max(1, n = {n})"))?;
                check(ldinv >= n.max(1), || format!("lda_inv = {ldinv} < max(1, n = {n})"))?;
                check(batch >= 0, || format!("batchSize = {batch} < 0"))?;
                if n == 0 || batch == 0 {
                    return Ok(());
                }
                LuOp::Matinv { a: ptrs(a, "A")?, lda, inv: ptrs(inv, "Ainv")?, ldinv, info: info_array(info)? }
            }
        };
        hd.backend.lu(hd.queue()?, Lu { op, n, count: batch, dtype })
    })
}

pub use backend::Compute as ComputeKind;
