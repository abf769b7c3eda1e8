//! The CPU implementation: device memory is host memory, so the work is
//! host code queued on the stream (`cuLaunchHostFunc`). Matrix products
//! run on the `gemm` crate on all cores (rayon); 16-bit matrices are
//! widened to f32 first and the result rounded once. Level-1/2 operations
//! and the triangular solves are plain loops (level-2 products also go
//! through `gemm`).

use gemm::Parallelism;
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use crate::backend::*;
use crate::cuda::driver;
use crate::log::error;
use crate::status::{Error, Result};
use crate::types::{matrix_extent, DType, Fill, Op, Side};

/// The CPU backend.
pub struct Cpu;

/// An element type of the arithmetic.
pub trait Elem:
    Copy
    + Send
    + Sync
    + 'static
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    const DTYPE: DType;
    fn zero() -> Self;
    fn one() -> Self;
    fn from_c64(v: Complex64) -> Self;
    fn to_c64(self) -> Complex64;
    fn conj(self) -> Self;
}

macro_rules! real_elem {
    ($t:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn from_c64(v: Complex64) -> Self {
                v.re as $t
            }
            fn to_c64(self) -> Complex64 {
                Complex64::new(self as f64, 0.0)
            }
            fn conj(self) -> Self {
                self
            }
        }
    };
}
real_elem!(f32, DType::F32);
real_elem!(f64, DType::F64);

macro_rules! complex_elem {
    ($t:ty, $f:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            fn zero() -> Self {
                <$t>::new(0.0, 0.0)
            }
            fn one() -> Self {
                <$t>::new(1.0, 0.0)
            }
            fn from_c64(v: Complex64) -> Self {
                <$t>::new(v.re as $f, v.im as $f)
            }
            fn to_c64(self) -> Complex64 {
                Complex64::new(self.re as f64, self.im as f64)
            }
            fn conj(self) -> Self {
                <$t>::new(self.re, -self.im)
            }
        }
    };
}
complex_elem!(Complex32, f32, DType::C32);
complex_elem!(Complex64, f64, DType::C64);

/// Whether `[ptr, ptr + bytes)` lies in one allocation the driver knows.
fn in_device_memory(ptr: u64, bytes: u64) -> bool {
    if bytes == 0 {
        return true;
    }
    let Ok(d) = driver() else { return false };
    match d.range(ptr) {
        Some((start, size)) => ptr >= start && ptr - start <= size && bytes <= size - (ptr - start),
        None => false,
    }
}

fn par() -> Parallelism {
    Parallelism::Rayon(0)
}

/// Products at most this many multiply-adds run one per thread when a
/// batch has several (instead of each on all threads).
const SMALL_PRODUCT: i64 = 1 << 18;

/// Element strides `(row, column)` of `op(X)` for `X` stored column-major
/// with leading dimension `ld`.
fn strides(op: Op, ld: i64) -> (isize, isize) {
    if op == Op::N {
        (1, ld as isize)
    } else {
        (ld as isize, 1)
    }
}

/// `C = alpha op(A) op(B) + beta C` on one product whose operands all have
/// the arithmetic's element type.
///
/// # Safety
/// The operands must be valid for their shapes.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_typed<T: Elem>(call: &Gemm, a: u64, b: u64, c: u64, alpha: T, beta: T, beta_zero: bool, par: Parallelism) {
    let (m, n, k) = (call.m as usize, call.n as usize, call.k as usize);
    let (a_rs, a_cs) = strides(call.ta, call.a.ld);
    let (b_rs, b_cs) = strides(call.tb, call.b.ld);
    // SAFETY: the caller's promise; gemm computes dst = g_alpha dst +
    // g_beta lhs rhs and reads dst only when asked to.
    unsafe {
        gemm::gemm::<T>(
            m,
            n,
            k,
            c as *mut T,
            call.c.ld as isize,
            1,
            !beta_zero,
            a as *const T,
            a_cs,
            a_rs,
            b as *const T,
            b_cs,
            b_rs,
            beta,
            alpha,
            false,
            call.ta == Op::C,
            call.tb == Op::C,
            par,
        )
    }
}

/// `C = beta C` (`beta == 0` writes zeros without reading C).
///
/// # Safety
/// C must be valid for `m x n` with its leading dimension.
unsafe fn scale_c(call: &Gemm, c: u64, beta: Complex64) {
    let dt = call.c.dtype;
    for j in 0..call.n {
        for i in 0..call.m {
            let idx = (i + j * call.c.ld) as isize;
            // SAFETY: within C, per the caller.
            unsafe {
                let v = if beta == Complex64::new(0.0, 0.0) { beta } else { beta * dt.read(c, idx) };
                dt.write(c, idx, v);
            }
        }
    }
}

/// A stored `rows x cols` 16-bit (or f32) matrix as contiguous f32
/// (leading dimension `rows`).
///
/// # Safety
/// The matrix must be readable.
unsafe fn widen(ptr: u64, dtype: DType, rows: i64, cols: i64, ld: i64) -> Vec<f32> {
    let (r, c) = (rows as usize, cols as usize);
    let mut out = vec![0f32; r * c];
    out.par_chunks_mut(r.max(1)).enumerate().for_each(|(j, col)| {
        let src = ptr + (j as u64) * (ld as u64) * dtype.size() as u64;
        // SAFETY: column j of the matrix, `r` elements.
        unsafe {
            match dtype {
                DType::F16 => half::slice::HalfFloatSliceExt::convert_to_f32_slice(std::slice::from_raw_parts(src as *const f16, r), col),
                DType::BF16 => half::slice::HalfFloatSliceExt::convert_to_f32_slice(std::slice::from_raw_parts(src as *const bf16, r), col),
                _ => col.copy_from_slice(std::slice::from_raw_parts(src as *const f32, r)),
            }
        }
    });
    out
}

/// Writes a contiguous f32 `rows x cols` matrix into a stored 16-bit one,
/// rounding to nearest even.
///
/// # Safety
/// The destination must be writable.
unsafe fn narrow(buf: &[f32], ptr: u64, dtype: DType, rows: i64, cols: i64, ld: i64) {
    let r = rows as usize;
    buf.par_chunks(r.max(1)).enumerate().take(cols as usize).for_each(|(j, col)| {
        let dst = ptr + (j as u64) * (ld as u64) * dtype.size() as u64;
        // SAFETY: column j of the destination, `r` elements.
        unsafe {
            match dtype {
                DType::F16 => {
                    half::slice::HalfFloatSliceExt::convert_from_f32_slice(std::slice::from_raw_parts_mut(dst as *mut f16, r), col)
                }
                DType::BF16 => {
                    half::slice::HalfFloatSliceExt::convert_from_f32_slice(std::slice::from_raw_parts_mut(dst as *mut bf16, r), col)
                }
                _ => std::slice::from_raw_parts_mut(dst as *mut f32, r).copy_from_slice(col),
            }
        }
    });
}

/// One product of a call, at the given operand addresses.
///
/// # Safety
/// The operands must be valid for the call's shapes.
unsafe fn gemm_one(call: &Gemm, a: u64, b: u64, c: u64, alpha: Complex64, beta: Complex64, par: Parallelism) {
    if call.m == 0 || call.n == 0 {
        return;
    }
    let zero = Complex64::new(0.0, 0.0);
    if call.k == 0 || alpha == zero {
        // SAFETY: the caller's promise.
        unsafe { scale_c(call, c, beta) };
        return;
    }
    let beta_zero = beta == zero;
    // SAFETY (all arms): the caller's promise; converted copies are
    // contiguous with leading dimension = rows.
    unsafe {
        match call.compute {
            Compute::F64 => gemm_typed::<f64>(call, a, b, c, alpha.re, beta.re, beta_zero, par),
            Compute::C32 => gemm_typed::<Complex32>(call, a, b, c, Complex32::from_c64(alpha), Complex32::from_c64(beta), beta_zero, par),
            Compute::C64 => gemm_typed::<Complex64>(call, a, b, c, alpha, beta, beta_zero, par),
            Compute::F32 => {
                let (al, be) = (alpha.re as f32, beta.re as f32);
                if call.a.dtype == DType::F32 && call.b.dtype == DType::F32 && call.c.dtype == DType::F32 {
                    return gemm_typed::<f32>(call, a, b, c, al, be, beta_zero, par);
                }
                // Widen what is not f32 into contiguous copies.
                let (ar, ac) = if call.ta == Op::N { (call.m, call.k) } else { (call.k, call.m) };
                let (br, bc) = if call.tb == Op::N { (call.k, call.n) } else { (call.n, call.k) };
                let wa;
                let (pa, lda) = if call.a.dtype == DType::F32 {
                    (a, call.a.ld)
                } else {
                    wa = widen(a, call.a.dtype, ar, ac, call.a.ld);
                    (wa.as_ptr() as u64, ar)
                };
                let wb;
                let (pb, ldb) = if call.b.dtype == DType::F32 {
                    (b, call.b.ld)
                } else {
                    wb = widen(b, call.b.dtype, br, bc, call.b.ld);
                    (wb.as_ptr() as u64, br)
                };
                let mut sub = *call;
                sub.a = Mat { ptr: pa, ld: lda, dtype: DType::F32 };
                sub.b = Mat { ptr: pb, ld: ldb, dtype: DType::F32 };
                if call.c.dtype == DType::F32 {
                    gemm_typed::<f32>(&sub, pa, pb, c, al, be, beta_zero, par);
                } else {
                    let mut wc =
                        if beta_zero { vec![0f32; (call.m * call.n) as usize] } else { widen(c, call.c.dtype, call.m, call.n, call.c.ld) };
                    sub.c = Mat { ptr: wc.as_mut_ptr() as u64, ld: call.m, dtype: DType::F32 };
                    gemm_typed::<f32>(&sub, pa, pb, wc.as_mut_ptr() as u64, al, be, beta_zero, par);
                    narrow(&wc, c, call.c.dtype, call.m, call.n, call.c.ld);
                }
            }
        }
    }
}

/// Reads entry `i` of a pointer array in device memory.
///
/// # Safety
/// The array must hold at least `i + 1` entries.
unsafe fn entry(array: u64, i: i64) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::read_unaligned((array + 8 * i as u64) as *const u64) }
}

fn gemm_extents(call: &Gemm) -> (u64, u64, u64) {
    let (ar, ac) = if call.ta == Op::N { (call.m, call.k) } else { (call.k, call.m) };
    let (br, bc) = if call.tb == Op::N { (call.k, call.n) } else { (call.n, call.k) };
    let reads = call.k > 0;
    (
        if reads { matrix_extent(ar, ac, call.a.ld, call.a.dtype.size()) } else { 0 },
        if reads { matrix_extent(br, bc, call.b.ld, call.b.dtype.size()) } else { 0 },
        matrix_extent(call.m, call.n, call.c.ld, call.c.dtype.size()),
    )
}

fn run_gemm(call: Gemm) {
    // SAFETY (block): device scalars and every operand were checked to lie
    // in device memory when the call was made; pointer-array entries are
    // checked here, before use.
    unsafe {
        let alpha = call.alpha.get();
        let beta = call.beta.get();
        let count = call.batch.count();
        let small = call.m * call.n * call.k <= SMALL_PRODUCT && count > 1;
        let addr = |i: i64| -> Option<(u64, u64, u64)> {
            match call.batch {
                Batch::One => Some((call.a.ptr, call.b.ptr, call.c.ptr)),
                Batch::Strided { a, b, c, .. } => Some((
                    (call.a.ptr as i64 + i * a * call.a.dtype.size() as i64) as u64,
                    (call.b.ptr as i64 + i * b * call.b.dtype.size() as i64) as u64,
                    (call.c.ptr as i64 + i * c * call.c.dtype.size() as i64) as u64,
                )),
                Batch::Pointers { a, b, c, .. } => {
                    let (pa, pb, pc) = (entry(a, i), entry(b, i), entry(c, i));
                    let (ea, eb, ec) = gemm_extents(&call);
                    for (name, p, e) in [("A", pa, ea), ("B", pb, eb), ("C", pc, ec)] {
                        if !in_device_memory(p, e) {
                            error!("gemm batch entry {i}: matrix {name} at {p:#x} ({e} bytes) is not in device memory; the product was skipped");
                            return None;
                        }
                    }
                    Some((pa, pb, pc))
                }
            }
        };
        if small {
            (0..count).into_par_iter().for_each(|i| {
                if let Some((a, b, c)) = addr(i) {
                    gemm_one(&call, a, b, c, alpha, beta, Parallelism::None);
                }
            });
        } else {
            for i in 0..count {
                if let Some((a, b, c)) = addr(i) {
                    gemm_one(&call, a, b, c, alpha, beta, par());
                }
            }
        }
    }
}

/// Solves one triangular system set (see [`Trsm`]).
///
/// # Safety
/// A and B must be valid for the call's shapes.
unsafe fn trsm_typed<T: Elem>(call: &Trsm, a: u64, b: u64, alpha: T) {
    let na = if call.side == Side::Left { call.m } else { call.n };
    let lda = call.a.ld;
    let ldb = call.b.ld;
    // op(A)[i][j]
    let get = |i: i64, j: i64| -> T {
        let ap = a as usize as *const T;
        // SAFETY: i, j < na, inside A.
        unsafe {
            match call.trans {
                Op::N => *ap.offset((i + j * lda) as isize),
                Op::T => *ap.offset((j + i * lda) as isize),
                Op::C => (*ap.offset((j + i * lda) as isize)).conj(),
            }
        }
    };
    let lower = (call.fill == Fill::Lower) != call.trans.transposed();
    let diag = |i: i64| if call.unit { T::one() } else { get(i, i) };
    let bp = b as usize;
    let _ = na;
    match call.side {
        Side::Left => {
            // Column by column: op(A) x = alpha b.
            (0..call.n).into_par_iter().for_each(|col| {
                let x = (bp as *mut T).wrapping_offset((col * ldb) as isize);
                // SAFETY: column `col` of B, m elements.
                let x = unsafe { std::slice::from_raw_parts_mut(x, call.m as usize) };
                for v in x.iter_mut() {
                    *v = alpha * *v;
                }
                let m = call.m;
                if lower {
                    for i in 0..m {
                        let mut s = x[i as usize];
                        for j in 0..i {
                            s = s - get(i, j) * x[j as usize];
                        }
                        x[i as usize] = s / diag(i);
                    }
                } else {
                    for i in (0..m).rev() {
                        let mut s = x[i as usize];
                        for j in i + 1..m {
                            s = s - get(i, j) * x[j as usize];
                        }
                        x[i as usize] = s / diag(i);
                    }
                }
            });
        }
        Side::Right => {
            // Row by row: x op(A) = alpha b.
            (0..call.m).into_par_iter().for_each(|row| {
                let at = |j: i64| (bp as *mut T).wrapping_offset((row + j * ldb) as isize);
                let n = call.n;
                let mut x: Vec<T> = (0..n).map(|j| alpha * unsafe { *at(j) }).collect();
                if !lower {
                    for j in 0..n {
                        let mut s = x[j as usize];
                        for i in 0..j {
                            s = s - x[i as usize] * get(i, j);
                        }
                        x[j as usize] = s / diag(j);
                    }
                } else {
                    for j in (0..n).rev() {
                        let mut s = x[j as usize];
                        for i in j + 1..n {
                            s = s - x[i as usize] * get(i, j);
                        }
                        x[j as usize] = s / diag(j);
                    }
                }
                for j in 0..n {
                    // SAFETY: element (row, j) of B; rows are disjoint
                    // between tasks.
                    unsafe { *at(j) = x[j as usize] };
                }
            });
        }
    }
}

fn run_trsm(call: Trsm) {
    // SAFETY: operands checked when the call was made; pointer-array
    // entries checked here.
    unsafe {
        let alpha = call.alpha.get();
        let na = if call.side == Side::Left { call.m } else { call.n };
        let one = |a: u64, b: u64| match call.a.dtype {
            DType::F32 => trsm_typed::<f32>(&call, a, b, f32::from_c64(alpha)),
            DType::F64 => trsm_typed::<f64>(&call, a, b, alpha.re),
            DType::C32 => trsm_typed::<Complex32>(&call, a, b, Complex32::from_c64(alpha)),
            DType::C64 => trsm_typed::<Complex64>(&call, a, b, alpha),
            other => error!("trsm on {other:?} is not supported"),
        };
        if call.m == 0 || call.n == 0 {
            return;
        }
        match call.batch {
            Batch::Pointers { count, a, b, .. } => {
                let ea = matrix_extent(na, na, call.a.ld, call.a.dtype.size());
                let eb = matrix_extent(call.m, call.n, call.b.ld, call.b.dtype.size());
                (0..count).into_par_iter().for_each(|i| {
                    let (pa, pb) = (entry(a, i), entry(b, i));
                    if !in_device_memory(pa, ea) || !in_device_memory(pb, eb) {
                        error!("trsm batch entry {i}: A at {pa:#x} or B at {pb:#x} is not in device memory; the solve was skipped");
                        return;
                    }
                    one(pa, pb);
                });
            }
            _ => one(call.a.ptr, call.b.ptr),
        }
    }
}

/// Element `i` of a vector.
fn at<T>(v: &Vector, i: i64) -> *mut T {
    (v.ptr as i64 + i * v.inc * v.dtype.size() as i64) as usize as *mut T
}

unsafe fn write_out(out: Out, v: Complex64, index: i64) {
    // SAFETY: the result location was checked when the call was made.
    unsafe {
        match out.dtype {
            OutType::Value(d) => d.write(out.ptr, 0, v),
            OutType::Index32 => std::ptr::write_unaligned(out.ptr as *mut i32, index as i32),
            OutType::Index64 => std::ptr::write_unaligned(out.ptr as *mut i64, index),
        }
    }
}

/// |re| + |im|, BLAS's magnitude for `asum` and `iamax`.
fn abs1(v: Complex64) -> f64 {
    v.re.abs() + v.im.abs()
}

unsafe fn level1_typed<T: Elem>(n: i64, call: Level1) {
    // SAFETY (block): every vector was checked when the call was made.
    unsafe {
        match call {
            Level1::Axpy { alpha, x, y } => {
                let a = T::from_c64(alpha.get());
                for i in 0..n {
                    *at::<T>(&y, i) = *at::<T>(&y, i) + a * *at::<T>(&x, i);
                }
            }
            Level1::Scal { alpha, x } => {
                let a = alpha.get();
                if x.inc <= 0 {
                    return;
                }
                if x.dtype.is_complex() || a.im == 0.0 {
                    let a = T::from_c64(a);
                    for i in 0..n {
                        *at::<T>(&x, i) = a * *at::<T>(&x, i);
                    }
                }
            }
            Level1::Copy { x, y } => {
                for i in 0..n {
                    *at::<T>(&y, i) = *at::<T>(&x, i);
                }
            }
            Level1::Swap { x, y } => {
                for i in 0..n {
                    std::ptr::swap(at::<T>(&x, i), at::<T>(&y, i));
                }
            }
            Level1::Dot { x, y, conj, out } => {
                let mut s = Complex64::new(0.0, 0.0);
                for i in 0..n {
                    let xv = (*at::<T>(&x, i)).to_c64();
                    let xv = if conj { xv.conj() } else { xv };
                    s += xv * (*at::<T>(&y, i)).to_c64();
                }
                write_out(out, s, 0);
            }
            Level1::Nrm2 { x, out } => {
                let mut r = 0.0;
                if n > 0 && x.inc > 0 {
                    // Scaled sum of squares: no overflow or underflow in
                    // between.
                    let (mut scale, mut ssq) = (0.0f64, 1.0f64);
                    for i in 0..n {
                        let v = (*at::<T>(&x, i)).to_c64();
                        for c in [v.re, v.im] {
                            if c != 0.0 {
                                let a = c.abs();
                                if scale < a {
                                    ssq = 1.0 + ssq * (scale / a) * (scale / a);
                                    scale = a;
                                } else {
                                    ssq += (a / scale) * (a / scale);
                                }
                            } else if c.is_nan() {
                                scale = f64::NAN;
                            }
                        }
                    }
                    r = scale * ssq.sqrt();
                }
                write_out(out, Complex64::new(r, 0.0), 0);
            }
            Level1::Asum { x, out } => {
                let mut s = 0.0;
                if x.inc > 0 {
                    for i in 0..n {
                        s += abs1((*at::<T>(&x, i)).to_c64());
                    }
                }
                write_out(out, Complex64::new(s, 0.0), 0);
            }
            Level1::Iamax { x, min, out } => {
                let mut best = 0i64;
                if n > 0 && x.inc > 0 {
                    let mut bv = abs1((*at::<T>(&x, 0)).to_c64());
                    best = 1;
                    for i in 1..n {
                        let v = abs1((*at::<T>(&x, i)).to_c64());
                        let better = if min { v < bv } else { v > bv };
                        if better || (bv.is_nan() && !v.is_nan()) {
                            bv = v;
                            best = i + 1;
                        }
                    }
                }
                write_out(out, Complex64::new(0.0, 0.0), best);
            }
        }
    }
}

fn level1_dtype(call: &Level1) -> DType {
    match call {
        Level1::Axpy { x, .. }
        | Level1::Scal { x, .. }
        | Level1::Copy { x, .. }
        | Level1::Swap { x, .. }
        | Level1::Dot { x, .. }
        | Level1::Nrm2 { x, .. }
        | Level1::Asum { x, .. }
        | Level1::Iamax { x, .. } => x.dtype,
    }
}

fn run_level1(n: i64, call: Level1) {
    // SAFETY: checked when the call was made.
    unsafe {
        match level1_dtype(&call) {
            DType::F32 => level1_typed::<f32>(n, call),
            DType::F64 => level1_typed::<f64>(n, call),
            DType::C32 => level1_typed::<Complex32>(n, call),
            DType::C64 => level1_typed::<Complex64>(n, call),
            other => error!("level-1 operation on {other:?} is not supported"),
        }
    }
}

/// `y = alpha op(A) x + beta y` as a product with one column.
fn run_gemv(call: Gemv) {
    // SAFETY: checked when the call was made.
    unsafe {
        let alpha = call.alpha.get();
        let beta = call.beta.get();
        let (rows, inner) = if call.trans == Op::N { (call.m, call.n) } else { (call.n, call.m) };
        if rows == 0 {
            return;
        }
        let zero = Complex64::new(0.0, 0.0);
        let dt = call.y.dtype;
        if inner == 0 || alpha == zero {
            for i in 0..rows {
                let p = at::<u8>(&call.y, i) as u64;
                let v = if beta == zero { zero } else { beta * dt.read(p, 0) };
                dt.write(p, 0, v);
            }
            return;
        }
        let (a_rs, a_cs) = strides(call.trans, call.a.ld);
        let conj = call.trans == Op::C;
        macro_rules! go {
            ($t:ty) => {
                gemm::gemm::<$t>(
                    rows as usize,
                    1,
                    inner as usize,
                    call.y.ptr as *mut $t,
                    0,
                    call.y.inc as isize,
                    beta != zero,
                    call.a.ptr as *const $t,
                    a_cs,
                    a_rs,
                    call.x.ptr as *const $t,
                    0,
                    call.x.inc as isize,
                    <$t>::from_c64(beta),
                    <$t>::from_c64(alpha),
                    false,
                    conj,
                    false,
                    par(),
                )
            };
        }
        match dt {
            DType::F32 => go!(f32),
            DType::F64 => go!(f64),
            DType::C32 => go!(Complex32),
            DType::C64 => go!(Complex64),
            other => error!("gemv on {other:?} is not supported"),
        }
    }
}

/// `A = alpha x y^T + A` as a product with inner dimension 1.
fn run_ger(call: Ger) {
    // SAFETY: checked when the call was made.
    unsafe {
        let alpha = call.alpha.get();
        if call.m == 0 || call.n == 0 || alpha == Complex64::new(0.0, 0.0) {
            return;
        }
        macro_rules! go {
            ($t:ty) => {
                gemm::gemm::<$t>(
                    call.m as usize,
                    call.n as usize,
                    1,
                    call.a.ptr as *mut $t,
                    call.a.ld as isize,
                    1,
                    true,
                    call.x.ptr as *const $t,
                    0,
                    call.x.inc as isize,
                    call.y.ptr as *const $t,
                    call.y.inc as isize,
                    0,
                    <$t>::one(),
                    <$t>::from_c64(alpha),
                    false,
                    false,
                    call.conj,
                    par(),
                )
            };
        }
        match call.a.dtype {
            DType::F32 => go!(f32),
            DType::F64 => go!(f64),
            DType::C32 => go!(Complex32),
            DType::C64 => go!(Complex64),
            other => error!("ger on {other:?} is not supported"),
        }
    }
}

fn enqueue(q: Queue, work: impl FnOnce() + Send + 'static) -> Result<()> {
    driver()?.enqueue(q.stream(), Box::new(work))
}

impl Backend for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn gemm(&self, q: Queue, call: Gemm) -> Result<()> {
        let supported = match call.compute {
            Compute::F32 => [call.a.dtype, call.b.dtype, call.c.dtype].iter().all(|d| matches!(d, DType::F16 | DType::BF16 | DType::F32)),
            c => {
                let want = match c {
                    Compute::F64 => DType::F64,
                    Compute::C32 => DType::C32,
                    _ => DType::C64,
                };
                [call.a.dtype, call.b.dtype, call.c.dtype].iter().all(|d| *d == want)
            }
        };
        if !supported {
            return Err(Error::unsupported(format!(
                "no CPU product for A {:?}, B {:?}, C {:?} with {:?} arithmetic",
                call.a.dtype, call.b.dtype, call.c.dtype, call.compute
            )));
        }
        enqueue(q, move || run_gemm(call))
    }

    fn trsm(&self, q: Queue, call: Trsm) -> Result<()> {
        enqueue(q, move || run_trsm(call))
    }

    fn level1(&self, q: Queue, n: i64, call: Level1) -> Result<()> {
        enqueue(q, move || run_level1(n, call))
    }

    fn gemv(&self, q: Queue, call: Gemv) -> Result<()> {
        enqueue(q, move || run_gemv(call))
    }

    fn ger(&self, q: Queue, call: Ger) -> Result<()> {
        enqueue(q, move || run_ger(call))
    }
}
