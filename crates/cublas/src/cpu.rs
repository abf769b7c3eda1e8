//! The CPU implementation: device memory is host memory, so the work is
//! host code queued on the stream (`cuLaunchHostFunc`). Matrix products
//! run on the `gemm` crate on all cores (rayon); 16-bit matrices are
//! widened to f32 first and the result rounded once. Level-1/2 operations
//! and the triangular solves are plain loops (level-2 products also go
//! through `gemm`).

use gemm::Parallelism;
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
pub(crate) fn in_device_memory(ptr: u64, bytes: u64) -> bool {
    if bytes == 0 {
        return true;
    }
    let Ok(d) = driver() else { return false };
    match d.range(ptr) {
        Some((start, size)) => ptr >= start && ptr - start <= size && bytes <= size - (ptr - start),
        None => false,
    }
}

/// How a product uses the cores: rayon's pool, or (a pool of one thread)
/// the calling thread alone, which saves handing the work to the pool's
/// one worker and waiting for it.
pub(crate) fn par() -> Parallelism {
    if rayon::current_num_threads() > 1 {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    }
}

/// Multiply-adds from which a call moves to one of rayon's workers before
/// it starts (see [`on_worker_if_large`]).
pub(crate) const FAN_OUT_WORK: i64 = 1 << 20;

/// Runs a call of `work` multiply-adds: a large one on a pool of several
/// threads on one of rayon's workers, where each of its fan-outs (the
/// conversions, the products, the rounding, the panels) is not a separate
/// hand-off from the stream's thread with its wake-up (tens of
/// microseconds on a busy machine, a quarter of a 256 x 256 x 256 HGEMM);
/// a small one, which fans out to nothing, and everything on a pool of one
/// thread on the calling thread (the hand-off would be its largest cost).
pub(crate) fn on_worker_if_large(work: i64, f: impl FnOnce() + Send) {
    if work >= FAN_OUT_WORK && rayon::current_num_threads() > 1 {
        rayon::scope(|_| f());
    } else {
        f();
    }
}

/// Runs `f(0..n)`, on rayon's pool when it has several threads, else on
/// the calling thread in order: with a pool of one thread, a parallel
/// loop started from outside the pool (the stream's thread) would hand the
/// whole loop to the pool's one worker and wait for it, a wake-up that
/// costs tens of microseconds, and far more on a loaded machine.
pub(crate) fn for_each_index(n: i64, f: impl Fn(i64) + Send + Sync) {
    if rayon::current_num_threads() > 1 {
        (0..n).into_par_iter().for_each(f);
    } else {
        (0..n).for_each(f);
    }
}

/// Products at most this many multiply-adds run one per thread when a
/// batch has several (instead of each on all threads).
pub(crate) const SMALL_PRODUCT: i64 = 1 << 18;

/// Element strides `(row, column)` of `op(X)` for `X` stored column-major
/// with leading dimension `ld`.
fn strides(op: Op, ld: i64) -> (isize, isize) {
    if op == Op::N {
        (1, ld as isize)
    } else {
        (ld as isize, 1)
    }
}

/// Reads entry `i` of a pointer array in device memory.
///
/// # Safety
/// The array must hold at least `i + 1` entries.
pub(crate) unsafe fn entry(array: u64, i: i64) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::read_unaligned((array + 8 * i as u64) as *const u64) }
}

/// Rows of the diagonal blocks of a triangular solve: each is solved by
/// substitution, and the rows it feeds are updated by one matrix product.
const TRSM_BLOCK: i64 = 64;

/// The triangular matrix of a left solve, `op(A)` as the solve sees it:
/// element `(i, j)` at `p + i rs + j cs` (conjugated when `conj`).
#[derive(Clone, Copy)]
struct Tri<T> {
    p: *const T,
    rs: isize,
    cs: isize,
    conj: bool,
    lower: bool,
    unit: bool,
}

// SAFETY: the tasks using it only read A.
unsafe impl<T> Send for Tri<T> {}
unsafe impl<T> Sync for Tri<T> {}

/// A raw pointer rayon's tasks may share (each task touches its own
/// columns of B).
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: the tasks using it write disjoint elements.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The pointer (a method, so that closures capture the whole wrapper).
    fn get(self) -> *mut T {
        self.0
    }
}

impl<T: Elem> Tri<T> {
    /// Element (i, j).
    ///
    /// # Safety
    /// (i, j) must lie in the matrix.
    unsafe fn at(&self, i: i64, j: i64) -> T {
        // SAFETY: the caller's promise.
        let v = unsafe { *self.p.offset(i as isize * self.rs + j as isize * self.cs) };
        if self.conj {
            v.conj()
        } else {
            v
        }
    }
}

/// Solves `op(A) X = alpha B` in place of the `m x n` matrix B (element
/// `(i, j)` at `b + i brs + j bcs`), recursively: the rows split in two
/// halves, the first half (the top one for a lower A) is solved, one
/// product (the `gemm` crate, all cores) removes its contribution from the
/// other half, which is then solved. Most of the work is thus in products
/// with a large inner dimension; blocks of at most `TRSM_BLOCK` rows are
/// solved by substitution.
///
/// # Safety
/// A (m x m) and B must be valid for their shapes.
#[allow(clippy::too_many_arguments)]
unsafe fn solve_left<T: Elem>(t: Tri<T>, m: i64, n: i64, b: *mut T, brs: isize, bcs: isize, alpha: T, par: Parallelism) {
    let bp = Shared(b);
    // SAFETY (block): elements of B, the caller's promise; columns are
    // disjoint between tasks.
    unsafe {
        let scale = |j: i64| {
            for i in 0..m {
                let e = bp.get().offset(i as isize * brs + j as isize * bcs);
                *e = alpha * *e;
            }
        };
        for_each_index(n, scale);
        solve_rows(t, 0, m, n, b, brs, bcs, par);
    }
}

/// Solves rows `k0..k1` of a left solve (see [`solve_left`]), their right
/// side already free of the other rows' contributions.
///
/// # Safety
/// As [`solve_left`].
#[allow(clippy::too_many_arguments)]
unsafe fn solve_rows<T: Elem>(t: Tri<T>, k0: i64, k1: i64, n: i64, b: *mut T, brs: isize, bcs: isize, par: Parallelism) {
    // SAFETY (block): rows k0..k1 of A and B, the caller's promise.
    unsafe {
        if k1 - k0 <= TRSM_BLOCK {
            substitute(t, k0, k1, n, b, brs, bcs, par);
            return;
        }
        // Halves of a multiple of the block (products of full blocks).
        let half = (k1 - k0 + 1) / 2;
        let mid = k0 + (half + TRSM_BLOCK - 1) / TRSM_BLOCK * TRSM_BLOCK;
        let mid = mid.min(k1 - 1);
        // The half solved first, and the one it feeds.
        let ((f0, f1), (r0, r1)) = if t.lower { ((k0, mid), (mid, k1)) } else { ((mid, k1), (k0, mid)) };
        solve_rows(t, f0, f1, n, b, brs, bcs, par);
        // B[r] -= op(A)[r, f] X[f].
        gemm::gemm::<T>(
            (r1 - r0) as usize,
            n as usize,
            (f1 - f0) as usize,
            b.offset(r0 as isize * brs),
            bcs,
            brs,
            true,
            t.p.offset(r0 as isize * t.rs + f0 as isize * t.cs),
            t.cs,
            t.rs,
            b.offset(f0 as isize * brs),
            bcs,
            brs,
            T::one(),
            T::zero() - T::one(),
            false,
            t.conj,
            false,
            par,
        );
        solve_rows(t, r0, r1, n, b, brs, bcs, par);
    }
}

/// Right-hand sides from which a diagonal block is solved by its inverse
/// and a product rather than by substitution column by column.
const INVERSE_MIN_COLUMNS: i64 = 16;

/// Solves the diagonal block `d` (`kb x kb`, column-major, op(A) as the
/// solve sees it) for rows `k0..k0 + kb` of B by its inverse: the inverse
/// is found by substitution on the identity's columns (kb^3/3 operations),
/// then one product (the `gemm` crate) applies it to all `n` columns, at
/// the product's speed rather than that of short substitution loops.
///
/// # Safety
/// As [`solve_left`].
#[allow(clippy::too_many_arguments)]
unsafe fn inverse_solve<T: Elem>(t: Tri<T>, d: &[T], kb: usize, k0: i64, n: i64, b: *mut T, brs: isize, bcs: isize, par: Parallelism) {
    let mut inv = vec![T::zero(); kb * kb];
    for (j, x) in inv.chunks_mut(kb).enumerate() {
        x[j] = T::one();
        // Column j of the inverse: zero above j (lower) or below (upper).
        if t.lower {
            for i in j..kb {
                if !t.unit {
                    x[i] = x[i] / d[i + i * kb];
                }
                let xi = x[i];
                for (v, a) in x[i + 1..].iter_mut().zip(&d[i * kb + i + 1..(i + 1) * kb]) {
                    *v = *v - *a * xi;
                }
            }
        } else {
            for i in (0..=j).rev() {
                if !t.unit {
                    x[i] = x[i] / d[i + i * kb];
                }
                let xi = x[i];
                for (v, a) in x[..i].iter_mut().zip(&d[i * kb..i * kb + i]) {
                    *v = *v - *a * xi;
                }
            }
        }
    }
    // The block of B, copied (column-major), then B = inverse x copy.
    let n_us = n as usize;
    let mut copy = vec![T::zero(); kb * n_us];
    // SAFETY (block): rows k0..k0 + kb of B, the caller's promise.
    unsafe {
        let first = b.offset(k0 as isize * brs);
        for (j, col) in copy.chunks_mut(kb).enumerate() {
            for (i, v) in col.iter_mut().enumerate() {
                *v = *first.offset(i as isize * brs + j as isize * bcs);
            }
        }
        gemm::gemm::<T>(
            kb,
            n_us,
            kb,
            first,
            bcs,
            brs,
            false,
            inv.as_ptr(),
            kb as isize,
            1,
            copy.as_ptr(),
            kb as isize,
            1,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            par,
        );
    }
}

/// Substitution on the diagonal block of rows `k0..k1`, column by column
/// of B (in parallel), on a contiguous copy of the block (conjugated as
/// op(A) is) so that each step is one vectorisable update of a contiguous
/// column.
///
/// # Safety
/// As [`solve_left`].
#[allow(clippy::too_many_arguments)]
unsafe fn substitute<T: Elem>(t: Tri<T>, k0: i64, k1: i64, n: i64, b: *mut T, brs: isize, bcs: isize, par: Parallelism) {
    let bp = Shared(b);
    let kb = (k1 - k0) as usize;
    let mut d = vec![T::zero(); kb * kb];
    // SAFETY (block): the diagonal block of A and rows k0..k1 of B, the
    // caller's promise; columns of B are disjoint between tasks.
    unsafe {
        for (jj, col) in d.chunks_mut(kb).enumerate() {
            for (ii, v) in col.iter_mut().enumerate() {
                *v = t.at(k0 + ii as i64, k0 + jj as i64);
            }
        }
        if n >= INVERSE_MIN_COLUMNS {
            inverse_solve(t, &d, kb, k0, n, b, brs, bcs, par);
            return;
        }
        let d = &d;
        let column = |j: i64| {
            let first = bp.get().offset(k0 as isize * brs + j as isize * bcs);
            let mut gathered = Vec::new();
            let x: &mut [T] = if brs == 1 {
                std::slice::from_raw_parts_mut(first, kb)
            } else {
                gathered.extend((0..kb).map(|i| *first.offset(i as isize * brs)));
                &mut gathered
            };
            if t.lower {
                for i in 0..kb {
                    if !t.unit {
                        x[i] = x[i] / d[i + i * kb];
                    }
                    let xi = x[i];
                    for (v, a) in x[i + 1..].iter_mut().zip(&d[i * kb + i + 1..(i + 1) * kb]) {
                        *v = *v - *a * xi;
                    }
                }
            } else {
                for i in (0..kb).rev() {
                    if !t.unit {
                        x[i] = x[i] / d[i + i * kb];
                    }
                    let xi = x[i];
                    for (v, a) in x[..i].iter_mut().zip(&d[i * kb..i * kb + i]) {
                        *v = *v - *a * xi;
                    }
                }
            }
            if brs != 1 {
                for (i, v) in gathered.iter().enumerate() {
                    *first.offset(i as isize * brs) = *v;
                }
            }
        };
        if n > 1 {
            for_each_index(n, column);
        } else {
            column(0);
        }
    }
}

/// Solves one triangular system set (see [`Trsm`]). A right solve
/// `X op(A) = alpha B` is the left solve `op(A)^T X^T = alpha B^T`: the
/// same memory with rows and columns exchanged.
///
/// # Safety
/// A and B must be valid for the call's shapes.
unsafe fn trsm_typed<T: Elem>(call: &Trsm, a: u64, b: u64, alpha: T, par: Parallelism) {
    let lda = call.a.ld as isize;
    let ldb = call.b.ld as isize;
    // op(A): strides and which triangle it is.
    let (rs, cs) = if call.trans == Op::N { (1, lda) } else { (lda, 1) };
    let lower = (call.fill == Fill::Lower) != call.trans.transposed();
    let conj = call.trans == Op::C;
    let (p, unit) = (a as usize as *const T, call.unit);
    // SAFETY: the caller's promise.
    unsafe {
        match call.side {
            Side::Left => solve_left(Tri { p, rs, cs, conj, lower, unit }, call.m, call.n, b as usize as *mut T, 1, ldb, alpha, par),
            Side::Right => {
                solve_left(Tri { p, rs: cs, cs: rs, conj, lower: !lower, unit }, call.n, call.m, b as usize as *mut T, ldb, 1, alpha, par)
            }
        }
    }
}

fn run_trsm(call: Trsm) {
    // SAFETY: operands checked when the call was made; pointer-array
    // entries checked here.
    unsafe {
        let alpha = call.alpha.get();
        let na = if call.side == Side::Left { call.m } else { call.n };
        let one = |a: u64, b: u64, par: Parallelism| match call.a.dtype {
            DType::F32 => trsm_typed::<f32>(&call, a, b, f32::from_c64(alpha), par),
            DType::F64 => trsm_typed::<f64>(&call, a, b, alpha.re, par),
            DType::C32 => trsm_typed::<Complex32>(&call, a, b, Complex32::from_c64(alpha), par),
            DType::C64 => trsm_typed::<Complex64>(&call, a, b, alpha, par),
            other => error!("trsm on {other:?} is not supported"),
        };
        if call.m == 0 || call.n == 0 {
            return;
        }
        match call.batch {
            Batch::Pointers { count, a, b, .. } => {
                let ea = matrix_extent(na, na, call.a.ld, call.a.dtype.size());
                let eb = matrix_extent(call.m, call.n, call.b.ld, call.b.dtype.size());
                for_each_index(count, |i| {
                    let (pa, pb) = (entry(a, i), entry(b, i));
                    if !in_device_memory(pa, ea) || !in_device_memory(pb, eb) {
                        error!("trsm batch entry {i}: A at {pa:#x} or B at {pb:#x} is not in device memory; the solve was skipped");
                        return;
                    }
                    // Solves of a batch run one per thread.
                    one(pa, pb, Parallelism::None);
                });
            }
            _ => one(call.a.ptr, call.b.ptr, par()),
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
            DType::F16 | DType::BF16 => level1_widened(n, call),
            other => error!("level-1 operation on {other:?} is not supported"),
        }
    }
}

/// Element `i` of a vector, read exactly as a complex double.
///
/// # Safety
/// The element must be readable.
unsafe fn get(v: &Vector, i: i64) -> Complex64 {
    // SAFETY: the caller's promise.
    unsafe { v.dtype.read(v.ptr, (i * v.inc) as isize) }
}

/// Level-1 operations on 16-bit vectors (the `...Ex` functions): elements
/// are read exactly, combined in f64 (at least the f32 execution type
/// cuBLAS documents) and rounded once into the vector's type.
///
/// # Safety
/// The vectors were checked when the call was made.
unsafe fn level1_widened(n: i64, call: Level1) {
    let zero = Complex64::new(0.0, 0.0);
    // SAFETY (block): the caller's promise.
    unsafe {
        match call {
            Level1::Axpy { alpha, x, y } => {
                let a = alpha.get();
                for i in 0..n {
                    y.dtype.write(y.ptr, (i * y.inc) as isize, a * get(&x, i) + get(&y, i));
                }
            }
            Level1::Scal { alpha, x } => {
                let a = alpha.get();
                for i in 0..n {
                    x.dtype.write(x.ptr, (i * x.inc) as isize, a * get(&x, i));
                }
            }
            Level1::Copy { x, y } => {
                for i in 0..n {
                    y.dtype.write(y.ptr, (i * y.inc) as isize, get(&x, i));
                }
            }
            Level1::Swap { x, y } => {
                for i in 0..n {
                    let (a, b) = (get(&x, i), get(&y, i));
                    x.dtype.write(x.ptr, (i * x.inc) as isize, b);
                    y.dtype.write(y.ptr, (i * y.inc) as isize, a);
                }
            }
            Level1::Dot { x, y, conj, out } => {
                let mut s = zero;
                for i in 0..n {
                    let a = get(&x, i);
                    s += if conj { a.conj() } else { a } * get(&y, i);
                }
                write_out(out, s, 0);
            }
            Level1::Nrm2 { x, out } => {
                // 16-bit values squared cannot overflow or underflow f64.
                let s: f64 = (0..n).map(|i| get(&x, i).norm_sqr()).sum();
                write_out(out, Complex64::new(s.sqrt(), 0.0), 0);
            }
            Level1::Asum { x, out } => {
                let s: f64 = (0..n).map(|i| abs1(get(&x, i))).sum();
                write_out(out, Complex64::new(s, 0.0), 0);
            }
            Level1::Iamax { x, min, out } => {
                let mut best = 0i64;
                if n > 0 {
                    let mut bv = abs1(get(&x, 0));
                    best = 1;
                    for i in 1..n {
                        let v = abs1(get(&x, i));
                        if (if min { v < bv } else { v > bv }) || (bv.is_nan() && !v.is_nan()) {
                            bv = v;
                            best = i + 1;
                        }
                    }
                }
                write_out(out, zero, best);
            }
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

/// Element `(i, j)` of `op(M)`, `M` stored column-major with `ld`.
///
/// # Safety
/// `(i, j)` lies inside `op(M)`, which the call's checks put in device
/// memory.
unsafe fn op_at<T: Elem>(m: &Mat, op: Op, i: i64, j: i64) -> T {
    let (r, c) = if op == Op::N { (i, j) } else { (j, i) };
    // SAFETY: the caller's promise.
    let v = unsafe { *(m.ptr as *const T).offset((r + c * m.ld) as isize) };
    if op == Op::C {
        v.conj()
    } else {
        v
    }
}

/// `C = alpha op(A) + beta op(B)`, column by column on all cores. Each
/// element of `C` is computed from the same elements of `A` and `B` only,
/// so `C` aliasing an untransposed `A` or `B` with its leading dimension
/// reads every element before writing it.
unsafe fn geam_typed<T: Elem>(call: &Geam) {
    let alpha = T::from_c64(call.alpha.get());
    let beta = T::from_c64(call.beta.get());
    let zero = Complex64::new(0.0, 0.0);
    let (use_a, use_b) = (call.alpha.get() != zero, call.beta.get() != zero);
    let c = Shared(call.c.ptr as *mut T);
    for_each_index(call.n, |j| {
        for i in 0..call.m {
            // SAFETY: inside the checked matrices.
            unsafe {
                let mut v = T::zero();
                if use_a {
                    v = alpha * op_at::<T>(&call.a, call.ta, i, j);
                }
                if use_b {
                    v = v + beta * op_at::<T>(&call.b, call.tb, i, j);
                }
                *c.get().offset((i + j * call.c.ld) as isize) = v;
            }
        }
    });
}

fn run_geam(call: Geam) {
    // SAFETY: checked when the call was made.
    unsafe {
        match call.c.dtype {
            DType::F32 => geam_typed::<f32>(&call),
            DType::F64 => geam_typed::<f64>(&call),
            DType::C32 => geam_typed::<Complex32>(&call),
            DType::C64 => geam_typed::<Complex64>(&call),
            other => error!("geam on {other:?} is not supported"),
        }
    }
}

/// `C = A diag(x)` or `diag(x) A`, column by column on all cores.
unsafe fn dgmm_typed<T: Elem>(call: &Dgmm) {
    let c = Shared(call.c.ptr as *mut T);
    let x = Shared(call.x.ptr as *mut T);
    for_each_index(call.n, |j| {
        for i in 0..call.m {
            // SAFETY: inside the checked matrices and vector.
            unsafe {
                let k = if call.side == Side::Left { i } else { j };
                let s = *x.get().offset((k * call.x.inc) as isize);
                let a = *(call.a.ptr as *const T).offset((i + j * call.a.ld) as isize);
                *c.get().offset((i + j * call.c.ld) as isize) = a * s;
            }
        }
    });
}

fn run_dgmm(call: Dgmm) {
    // SAFETY: checked when the call was made.
    unsafe {
        match call.c.dtype {
            DType::F32 => dgmm_typed::<f32>(&call),
            DType::F64 => dgmm_typed::<f64>(&call),
            DType::C32 => dgmm_typed::<Complex32>(&call),
            DType::C64 => dgmm_typed::<Complex64>(&call),
            other => error!("dgmm on {other:?} is not supported"),
        }
    }
}

/// Queues `run(call)` on the handle's stream; replayable when the stream
/// is being captured into a graph (the work's key, the operation and its
/// arguments, is only formatted then).
/// After the work, the memory checker's initcheck (when it runs) is told
/// what the call wrote.
fn enqueue<T: Copy + std::fmt::Debug + Send + Sync + Outputs + 'static>(q: Queue, run: fn(T), call: T) -> Result<()> {
    let driver = driver()?;
    driver.enqueue_replayable(
        q.stream(),
        || format!("{:#x} {call:?}", run as usize),
        move || {
            run(call);
            driver.wrote(|| call.outputs());
        },
    )
}

impl Backend for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn gemm(&self, q: Queue, call: Gemm) -> Result<()> {
        self.matmul(q, Matmul::from_gemm(&call))
    }

    fn matmul(&self, q: Queue, call: Matmul) -> Result<()> {
        let (a, b, c, d) = (call.a.dtype, call.b.dtype, call.c.dtype, call.d.dtype);
        let real = |t: DType| matches!(t, DType::F16 | DType::BF16 | DType::F32);
        let supported = c == d
            && match call.compute {
                Compute::F32 => (real(a) || a == DType::I8) && (real(b) || b == DType::I8) && real(d),
                Compute::F64 => [a, b, d].iter().all(|t| *t == DType::F64),
                Compute::C32 => [a, b, d].iter().all(|t| *t == DType::C32),
                Compute::C64 => [a, b, d].iter().all(|t| *t == DType::C64),
                Compute::I32 => a == DType::I8 && b == DType::I8 && d == DType::I32 && call.epilogue.is_none(),
            }
            && (call.epilogue.is_none() || matches!(call.compute, Compute::F32 | Compute::F64));
        if !supported {
            return Err(Error::unsupported(format!(
                "no CPU product for A {a:?}, B {b:?}, C {c:?}, D {d:?} with {:?} arithmetic{}",
                call.compute,
                if call.epilogue.is_none() { "" } else { " and an epilogue" }
            )));
        }
        enqueue(q, crate::product::run, call)
    }

    fn trsm(&self, q: Queue, call: Trsm) -> Result<()> {
        enqueue(q, run_trsm, call)
    }

    fn level1(&self, q: Queue, n: i64, call: Level1) -> Result<()> {
        enqueue(q, |(n, call)| run_level1(n, call), (n, call))
    }

    fn gemv(&self, q: Queue, call: Gemv) -> Result<()> {
        enqueue(q, run_gemv, call)
    }

    fn ger(&self, q: Queue, call: Ger) -> Result<()> {
        enqueue(q, run_ger, call)
    }

    fn geam(&self, q: Queue, call: Geam) -> Result<()> {
        enqueue(q, run_geam, call)
    }

    fn dgmm(&self, q: Queue, call: Dgmm) -> Result<()> {
        enqueue(q, run_dgmm, call)
    }

    fn rankk(&self, q: Queue, call: RankK) -> Result<()> {
        enqueue(q, crate::rankk::run, call)
    }

    fn lu(&self, q: Queue, call: Lu) -> Result<()> {
        enqueue(q, crate::lu::run, call)
    }
}
