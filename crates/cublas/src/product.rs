//! The CPU matrix products behind every GEMM and cuBLASLt matmul:
//! `D = epilogue(alpha op(A) op(B) + beta C)` for matrices of any layout
//! (row and column strides), on the `gemm` crate (all cores through
//! rayon).
//!
//! A product runs in its arithmetic's type `T` (f32, f64, c32, c64).
//! Operands already of type `T` are used where they lie; others (16-bit
//! floats, 8-bit integers) are converted into contiguous copies first. The
//! result is accumulated in `D` itself when `D` has type `T`, otherwise in
//! a column-major buffer that is rounded once into `D` at the end, after
//! the epilogue (bias, activation) ran on the full-precision values.
//! Integer products (8-bit inputs, 32-bit accumulation) are computed
//! exactly in floating point (f32 while `k <= 1024`, f64 beyond: every
//! partial sum is an integer the type represents) and combined with the
//! integer alpha and beta in wrapping 32-bit arithmetic.

use gemm::Parallelism;
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use crate::backend::{Activation, Compute, Epilogue, Matmul, MatmulBatch, View};
use crate::cpu::{entry, for_each_index, in_device_memory, par, Elem, SMALL_PRODUCT};
use crate::log::error;
use crate::types::{DType, Op};

/// An arithmetic type: conversions from and to the stored element types,
/// and the epilogue.
pub trait Acc: Elem {
    /// Converts `dst.len()` elements of type `dtype` at `src`, `inc`
    /// elements apart, into `dst`.
    ///
    /// # Safety
    /// The source elements must be readable.
    unsafe fn load(dtype: DType, src: u64, inc: isize, dst: &mut [Self]) {
        for (i, v) in dst.iter_mut().enumerate() {
            // SAFETY: the caller's promise.
            *v = Self::from_c64(unsafe { dtype.read(src, i as isize * inc) });
        }
    }

    /// Rounds `src` into `src.len()` elements of type `dtype` at `dst`,
    /// `inc` elements apart.
    ///
    /// # Safety
    /// The destination elements must be writable.
    unsafe fn store(src: &[Self], dtype: DType, dst: u64, inc: isize) {
        for (i, v) in src.iter().enumerate() {
            // SAFETY: the caller's promise.
            unsafe { dtype.write(dst, i as isize * inc, v.to_c64()) };
        }
    }

    /// Applies the epilogue to the `m x n` matrix at `dst` (element
    /// `(i, j)` at `dst + i rs + j cs`). Real types only: a matmul with an
    /// epilogue on complex matrices is refused when it is called.
    ///
    /// # Safety
    /// `dst`, and the bias and aux matrix the epilogue names at `bias` and
    /// `aux`, must be valid for the shape.
    #[allow(clippy::too_many_arguments)]
    unsafe fn epilogue(_dst: *mut Self, _m: i64, _n: i64, _rs: isize, _cs: isize, _e: &Epilogue, _bias: u64, _aux: u64) {
        error!("internal error: an epilogue on complex matrices reached the CPU product; the epilogue was not applied");
    }
}

impl Acc for f32 {
    unsafe fn load(dtype: DType, src: u64, inc: isize, dst: &mut [f32]) {
        use half::slice::HalfFloatSliceExt;
        let n = dst.len();
        // SAFETY (all arms): the caller's promise.
        unsafe {
            match (dtype, inc) {
                (DType::F16, 1) => widen_f16(std::slice::from_raw_parts(src as *const f16, n), dst),
                (DType::BF16, 1) => std::slice::from_raw_parts(src as *const bf16, n).convert_to_f32_slice(dst),
                (DType::F32, 1) => dst.copy_from_slice(std::slice::from_raw_parts(src as *const f32, n)),
                (DType::I8, 1) => {
                    for (d, s) in dst.iter_mut().zip(std::slice::from_raw_parts(src as *const i8, n)) {
                        *d = *s as f32;
                    }
                }
                _ => {
                    for (i, v) in dst.iter_mut().enumerate() {
                        *v = dtype.read(src, i as isize * inc).re as f32;
                    }
                }
            }
        }
    }

    unsafe fn store(src: &[f32], dtype: DType, dst: u64, inc: isize) {
        use half::slice::HalfFloatSliceExt;
        let n = src.len();
        // SAFETY (all arms): the caller's promise.
        unsafe {
            match (dtype, inc) {
                (DType::F16, 1) => narrow_f16(src, std::slice::from_raw_parts_mut(dst as *mut f16, n)),
                (DType::BF16, 1) => std::slice::from_raw_parts_mut(dst as *mut bf16, n).convert_from_f32_slice(src),
                (DType::F32, 1) => std::slice::from_raw_parts_mut(dst as *mut f32, n).copy_from_slice(src),
                // Rounding from f32, not through f64 (which could round
                // twice on the way to a 16-bit type).
                (DType::F16, _) => {
                    for (i, v) in src.iter().enumerate() {
                        std::ptr::write_unaligned((dst as *mut f16).offset(i as isize * inc), f16::from_f32(*v));
                    }
                }
                (DType::BF16, _) => {
                    for (i, v) in src.iter().enumerate() {
                        std::ptr::write_unaligned((dst as *mut bf16).offset(i as isize * inc), bf16::from_f32(*v));
                    }
                }
                _ => {
                    for (i, v) in src.iter().enumerate() {
                        dtype.write(dst, i as isize * inc, Complex64::new(*v as f64, 0.0));
                    }
                }
            }
        }
    }

    unsafe fn epilogue(dst: *mut f32, m: i64, n: i64, rs: isize, cs: isize, e: &Epilogue, bias: u64, aux: u64) {
        // SAFETY: the caller's promise.
        unsafe { real_epilogue(dst, m, n, rs, cs, e, bias, aux, gelu_f32) }
    }
}

impl Acc for f64 {
    unsafe fn epilogue(dst: *mut f64, m: i64, n: i64, rs: isize, cs: isize, e: &Epilogue, bias: u64, aux: u64) {
        // SAFETY: the caller's promise.
        unsafe { real_epilogue(dst, m, n, rs, cs, e, bias, aux, gelu_f64) }
    }
}
impl Acc for Complex32 {}
impl Acc for Complex64 {}

/// Widens f16 to f32: eight at a time with F16C where the CPU has it
/// (about 2.5 times the `half` crate's slice conversion here), else by
/// the `half` crate.
fn widen_f16(src: &[f16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if f16c() {
        // SAFETY: the CPU has F16C and AVX (checked); equal lengths.
        unsafe { widen_f16c(src, dst) };
        return;
    }
    use half::slice::HalfFloatSliceExt;
    src.convert_to_f32_slice(dst);
}

/// Rounds f32 to f16 (to nearest, ties to even): eight at a time with
/// F16C where the CPU has it, else by the `half` crate.
fn narrow_f16(src: &[f32], dst: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    if f16c() {
        // SAFETY: the CPU has F16C and AVX (checked); equal lengths.
        unsafe { narrow_f16c(src, dst) };
        return;
    }
    use half::slice::HalfFloatSliceExt;
    dst.convert_from_f32_slice(src);
}

/// # Safety
/// The CPU must have AVX and F16C; `dst` at least as long as `src`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn widen_f16c(src: &[f16], dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len());
    let whole = n / 8 * 8;
    let mut i = 0;
    // SAFETY (block): i + 8 <= n for each vector.
    unsafe {
        while i < whole {
            let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            i += 8;
        }
    }
    for j in whole..n {
        dst[j] = src[j].to_f32();
    }
}

/// # Safety
/// The CPU must have AVX and F16C; `dst` at least as long as `src`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn narrow_f16c(src: &[f32], dst: &mut [f16]) {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len());
    let whole = n / 8 * 8;
    let mut i = 0;
    // SAFETY (block): i + 8 <= n for each vector.
    unsafe {
        while i < whole {
            let v = _mm256_loadu_ps(src.as_ptr().add(i));
            _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v));
            i += 8;
        }
    }
    for j in whole..n {
        dst[j] = f16::from_f32(src[j]);
    }
}

/// GELU in its tanh form, cuBLASLt's: `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
fn gelu_f32(x: f32) -> f32 {
    const K: f32 = 0.797_884_6; // sqrt(2/pi)
    0.5 * x * (1.0 + (K * (x + 0.044715 * x * x * x)).tanh())
}

fn gelu_f64(x: f64) -> f64 {
    const K: f64 = 0.797_884_560_802_865_4; // sqrt(2/pi)
    0.5 * x * (1.0 + (K * (x + 0.044715 * x * x * x)).tanh())
}

/// A raw address that can cross to rayon's threads (each task touches its
/// own columns).
#[derive(Clone, Copy)]
struct Addr(usize);

/// The epilogue for real types: `x + bias[i]`, stored to the aux matrix
/// when asked, then the activation. ReLU keeps NaN (only values below zero
/// become zero).
#[allow(clippy::too_many_arguments)]
unsafe fn real_epilogue<T: Acc + PartialOrd>(
    dst: *mut T,
    m: i64,
    n: i64,
    rs: isize,
    cs: isize,
    e: &Epilogue,
    bias: u64,
    aux: u64,
    gelu: fn(T) -> T,
) {
    let mut b = Vec::new();
    if let Some(bv) = e.bias {
        b = vec![T::zero(); m as usize];
        // SAFETY: the bias vector (m packed elements) was checked.
        unsafe { T::load(bv.dtype, bias, 1, &mut b) };
    }
    let base = Addr(dst as usize);
    let act = |x: T| match e.act {
        Activation::None => x,
        Activation::Relu => {
            if x < T::zero() {
                T::zero()
            } else {
                x
            }
        }
        Activation::Gelu => gelu(x),
    };
    let column = |j: i64| {
        let col = (base.0 as *mut T).wrapping_offset(j as isize * cs);
        if rs == 1 {
            // A contiguous column: one simple loop per step, which the
            // compiler vectorises (all but GELU's tanh).
            // SAFETY: column j of the destination, m elements, the caller's
            // promise; columns are disjoint between tasks.
            let v = unsafe { std::slice::from_raw_parts_mut(col, m as usize) };
            if !b.is_empty() && e.aux.is_none() && e.act == Activation::Relu {
                // The fused linear layer's case in one loop.
                for (x, y) in v.iter_mut().zip(&b) {
                    let s = *x + *y;
                    *x = if s < T::zero() { T::zero() } else { s };
                }
                return;
            }
            if !b.is_empty() {
                for (x, y) in v.iter_mut().zip(&b) {
                    *x = *x + *y;
                }
            }
            if let Some(ax) = e.aux {
                for (i, x) in v.iter().enumerate() {
                    // SAFETY: element (i, j) of the aux matrix, checked.
                    unsafe { ax.dtype.write(aux, i as isize + (j * ax.ld) as isize, x.to_c64()) };
                }
            }
            match e.act {
                Activation::None => {}
                Activation::Relu => {
                    for x in v.iter_mut() {
                        if *x < T::zero() {
                            *x = T::zero();
                        }
                    }
                }
                Activation::Gelu => {
                    for x in v.iter_mut() {
                        *x = gelu(*x);
                    }
                }
            }
            return;
        }
        for i in 0..m {
            let p = col.wrapping_offset(i as isize * rs);
            // SAFETY: element (i, j) of the destination, the caller's
            // promise; columns are disjoint between tasks.
            unsafe {
                let mut x = *p;
                if !b.is_empty() {
                    x = x + b[i as usize];
                }
                if let Some(ax) = e.aux {
                    ax.dtype.write(aux, (i + j * ax.ld) as isize, x.to_c64());
                }
                *p = act(x);
            }
        }
    };
    if m * n >= 1 << 16 {
        for_each_index(n, column);
    } else {
        (0..n).for_each(column);
    }
}

/// A scratch buffer from the calling thread's pool. Products convert up
/// to three matrices; fresh allocations of that size would be new pages on
/// every call (mmap, a fault per page, munmap with its TLB shootdowns), a
/// cost that shows on small products. Each thread keeps the last few
/// buffers it returned, up to `POOL_BYTES` in all.
struct Scratch {
    words: Vec<u64>,
}

const POOL_BUFFERS: usize = 4;
const POOL_BYTES: usize = 256 << 20;

thread_local! {
    static POOL: std::cell::RefCell<Vec<Vec<u64>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Scratch {
    /// A buffer of at least `n` elements of `T` (contents unspecified but
    /// initialised: every bit pattern is a value of the arithmetic types).
    fn take<T: Acc>(n: usize) -> Scratch {
        const { assert!(std::mem::align_of::<T>() <= 8) };
        let words = (n * std::mem::size_of::<T>()).div_ceil(8).max(1);
        let reused = POOL
            .try_with(|p| {
                let mut p = p.borrow_mut();
                let i = p.iter().position(|v| v.len() >= words)?;
                Some(p.swap_remove(i))
            })
            .ok()
            .flatten();
        Scratch { words: reused.unwrap_or_else(|| vec![0u64; words]) }
    }

    fn slice<T: Acc>(&mut self, n: usize) -> &mut [T] {
        assert!(n * std::mem::size_of::<T>() <= self.words.len() * 8);
        // SAFETY: in bounds (checked), aligned (u64 storage, T's alignment
        // at most 8), and every bit pattern is a valid T.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<T>(), n) }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.words);
        let _ = POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            p.push(v);
            // Keep the largest few, within the byte budget.
            p.sort_by_key(|v| std::cmp::Reverse(v.len()));
            p.truncate(POOL_BUFFERS);
            while p.iter().map(|v| v.len() * 8).sum::<usize>() > POOL_BYTES {
                p.remove(0);
            }
        });
    }
}

/// A matrix in the arithmetic's type: where it is, its strides, and the
/// converted copy that holds it (if it was converted).
struct Operand<T> {
    ptr: *const T,
    rs: isize,
    cs: isize,
    _copy: Option<Scratch>,
    _t: std::marker::PhantomData<T>,
}

/// `view`'s `rows x cols` matrix at its address as `T`: in place when it
/// has type `T`, else a converted contiguous copy that keeps its major
/// order (so that the conversions read memory in order).
///
/// # Safety
/// The matrix must be readable.
unsafe fn operand<T: Acc>(view: View, rows: i64, cols: i64, par: bool) -> Operand<T> {
    if view.dtype == T::DTYPE {
        return Operand {
            ptr: view.ptr as *const T,
            rs: view.rs as isize,
            cs: view.cs as isize,
            _copy: None,
            _t: std::marker::PhantomData,
        };
    }
    let (r, c) = (rows as usize, cols as usize);
    let mut scratch = Scratch::take::<T>(r * c);
    let copy = scratch.slice::<T>(r * c);
    // Rows of a row-major matrix, columns otherwise.
    let row_major = view.cs == 1 && view.rs != 1;
    let (lines, len, step, inc) = if row_major { (r, c, view.rs, 1) } else { (c, r, view.cs, view.rs as isize) };
    // SAFETY: the caller's promise: `lines` lines of `len` elements.
    unsafe { convert_lines(view.dtype, view.ptr, lines, len, step, inc, copy, par) };
    let (rs, cs) = if row_major { (c as isize, 1) } else { (1, r as isize) };
    let ptr = copy.as_ptr();
    Operand { ptr, rs, cs, _copy: Some(scratch), _t: std::marker::PhantomData }
}

/// Elements a conversion task takes at least (below this, one task).
const CONVERT_CHUNK: usize = 1 << 15;

/// Converts `lines` lines of `len` elements (line `l` at `src + l step`
/// elements, its elements `inc` apart) into the contiguous `out`. Lines
/// that follow each other without a gap are one run, converted in large
/// pieces: a conversion call per short column costs more than its work.
///
/// # Safety
/// The source lines must be readable.
#[allow(clippy::too_many_arguments)]
unsafe fn convert_lines<T: Acc>(dtype: DType, src: u64, lines: usize, len: usize, step: i64, inc: isize, out: &mut [T], par: bool) {
    let size = dtype.size() as u64;
    if inc == 1 && step == len as i64 {
        let convert = |(i, piece): (usize, &mut [T])| {
            let from = src.wrapping_add((i * CONVERT_CHUNK) as u64 * size);
            // SAFETY: a piece of the contiguous run, the caller's promise.
            unsafe { T::load(dtype, from, 1, piece) };
        };
        if par && out.len() > CONVERT_CHUNK {
            out.par_chunks_mut(CONVERT_CHUNK).enumerate().for_each(convert);
        } else {
            out.chunks_mut(CONVERT_CHUNK).enumerate().for_each(convert);
        }
        return;
    }
    let convert = |(l, line): (usize, &mut [T])| {
        let from = src.wrapping_add((l as u64).wrapping_mul(step as u64).wrapping_mul(size));
        // SAFETY: line `l`, `len` elements `inc` apart.
        unsafe { T::load(dtype, from, inc, line) };
    };
    debug_assert_eq!(out.len(), lines * len);
    if par && out.len() >= 1 << 16 {
        out.par_chunks_mut(len.max(1)).enumerate().for_each(convert);
    } else {
        out.chunks_mut(len.max(1)).enumerate().for_each(convert);
    }
}

/// The addresses of one product's operands.
#[derive(Debug, Clone, Copy)]
struct Addrs {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    bias: u64,
    aux: u64,
}

/// One product in arithmetic `T` (see the module's notes).
///
/// # Safety
/// Every operand must be valid for the call's shapes.
#[allow(clippy::too_many_arguments)]
unsafe fn product<T: Acc>(p: &Matmul, x: Addrs, alpha: T, beta: T, alpha_zero: bool, beta_zero: bool, par: Parallelism) {
    let (m, n, k) = (p.m, p.n, p.k);
    let parallel = !matches!(par, Parallelism::None);
    let dview = p.d.at(x.d);
    let cview = p.c.at(x.c);
    let direct = p.d.dtype == T::DTYPE;
    let in_place = x.c == x.d && p.c.rs == p.d.rs && p.c.cs == p.d.cs;
    // SAFETY (block): the caller's promise for every operand; converted
    // copies and the buffer are sized for their shapes.
    unsafe {
        let mn = (m * n) as usize;
        let mut scratch = if direct { None } else { Some(Scratch::take::<T>(mn)) };
        let (dst, drs, dcs): (*mut T, isize, isize) = match scratch.as_mut() {
            None => {
                if !beta_zero && !in_place {
                    // D starts as C (same type), then accumulates in place.
                    copy_matrix::<T>(cview, dview, m, n);
                }
                (x.d as *mut T, dview.rs as isize, dview.cs as isize)
            }
            Some(s) => {
                // With beta zero the buffer is written before it is read
                // (by the product, or with zeros below).
                let buf = s.slice::<T>(mn);
                if !beta_zero {
                    load_col_major(cview, m, n, buf);
                }
                (buf.as_mut_ptr(), 1, m as isize)
            }
        };
        if k > 0 && !alpha_zero && T::DTYPE == DType::F32 && skinny_row_major(p) {
            let ((_, _), (br, bc)) = p.stored_shapes();
            let b = operand::<T>(p.b.at(x.b), br, bc, parallel);
            let (b_rs, b_cs) = if p.tb == Op::N { (b.rs, b.cs) } else { (b.cs, b.rs) };
            // T is f32 here: the casts change nothing.
            let rhs = Rhs { ptr: b.ptr as *const f32, rs: b_rs, cs: b_cs };
            let out = Dst { ptr: dst as *mut f32, rs: drs, cs: dcs };
            let (al, be) = (alpha.to_c64().re as f32, beta.to_c64().re as f32);
            chunked_product(p, p.a.at(x.a), rhs, out, al, be, !beta_zero, par);
        } else if k > 0 && !alpha_zero {
            let ((ar, ac), (br, bc)) = p.stored_shapes();
            let a = if T::DTYPE == DType::F32 && transposed_f16_lhs(p) {
                transposed_operand::<T>(p, p.a.at(x.a), parallel)
            } else {
                operand::<T>(p.a.at(x.a), ar, ac, parallel)
            };
            let b = operand::<T>(p.b.at(x.b), br, bc, parallel);
            let (a_rs, a_cs) = if p.ta == Op::N { (a.rs, a.cs) } else { (a.cs, a.rs) };
            let (b_rs, b_cs) = if p.tb == Op::N { (b.rs, b.cs) } else { (b.cs, b.rs) };
            // gemm computes dst = g_alpha dst + g_beta lhs rhs, reading dst
            // only when asked to.
            gemm::gemm::<T>(
                m as usize,
                n as usize,
                k as usize,
                dst,
                dcs,
                drs,
                !beta_zero,
                a.ptr,
                a_cs,
                a_rs,
                b.ptr,
                b_cs,
                b_rs,
                beta,
                alpha,
                false,
                p.ta == Op::C,
                p.tb == Op::C,
                par,
            );
        } else {
            // No product: D = beta C (C never read when beta is zero).
            for j in 0..n {
                for i in 0..m {
                    let e = dst.offset(i as isize * drs + j as isize * dcs);
                    *e = if beta_zero { T::zero() } else { beta * *e };
                }
            }
        }
        if !p.epilogue.is_none() {
            T::epilogue(dst, m, n, drs, dcs, &p.epilogue, x.bias, x.aux);
        }
        if let Some(s) = scratch.as_mut() {
            store_col_major(s.slice::<T>(mn), dview, m, n, parallel);
        }
    }
}

/// Whether `op(A)` is an f16 matrix stored row-major (its k elements
/// adjacent: a transposed column-major A) that the CPU widens with F16C.
/// Such an A must be converted to f32 anyway; converted by the
/// transposition of the chunked products (F16C tiles) instead of row by
/// row, the copy is column-major, which the `gemm` crate packs as
/// contiguous runs rather than by gathering rows (HGEMM 1024 TN: the
/// product reads op(A) in the layout of its NN case).
fn transposed_f16_lhs(p: &Matmul) -> bool {
    let (rs, cs) = if p.ta == Op::N { (p.a.rs, p.a.cs) } else { (p.a.cs, p.a.rs) };
    p.a.dtype == DType::F16 && cs == 1 && rs != 1 && f16c()
}

/// `op(A)` (`m x k`, f16, `transposed_f16_lhs`) widened into a
/// column-major f32 copy, returned with the strides of the stored A that
/// the product's `op` turns into the copy's `(1, m)`. Blocks of 256 rows
/// of `op(A)` are converted in parallel when `par`.
///
/// # Safety
/// A must be readable for the call's shape; T is f32.
unsafe fn transposed_operand<T: Acc>(p: &Matmul, a: View, par: bool) -> Operand<T> {
    let (m, k) = (p.m as usize, p.k as usize);
    let row = if p.ta == Op::N { a.rs } else { a.cs } as isize;
    let mut scratch = Scratch::take::<f32>(m * k);
    let dst = Addr(scratch.slice::<f32>(m * k).as_mut_ptr() as usize);
    // Rows of op(A) per task: the copy's rows j0..j0 + BLOCK in every
    // column, disjoint between tasks.
    const BLOCK: usize = 256;
    let block = |b: i64| {
        let j0 = b as usize * BLOCK;
        let rows = BLOCK.min(m - j0);
        let src = (a.ptr as isize + j0 as isize * row * 2) as u64;
        // SAFETY: rows j0..j0 + rows of op(A) (the caller's promise) into
        // the same rows of the m x k copy.
        unsafe { transpose(src, DType::F16, row, k, rows, (dst.0 as *mut f32).add(j0), m) };
    };
    let blocks = m.div_ceil(BLOCK) as i64;
    if par && m * k >= 1 << 16 {
        for_each_index(blocks, block);
    } else {
        (0..blocks).for_each(block);
    }
    let (rs, cs) = if p.ta == Op::N { (1, m as isize) } else { (m as isize, 1) };
    let ptr = scratch.slice::<T>(m * k).as_ptr();
    Operand { ptr, rs, cs, _copy: Some(scratch), _t: std::marker::PhantomData }
}

/// Rows of `op(A)` one step of a chunked product converts (see
/// [`chunked_product`]): 128 rows of a `k = 1024` operand are 512 KiB of
/// f32, which stays in the core's L2 cache for the product that follows.
const CHUNK_ROWS: usize = 128;

/// Columns of the result one product of a chunked product computes (see
/// [`chunked_product`]). The `gemm` crate packs its left operand again
/// when a product has more than 8 NR columns (48 with its AVX-512 f32
/// kernels, NR = 6); a block of `op(A)` just transposed into column-major
/// is already in the layout its kernels read, so the columns go 48 at a
/// time. SGEMM 4096x64x1024 TN, one thread, share of the run's CPU samples
/// per sample of the crate's kernels (`perf record`, the `gemm` crate and
/// the transposition called directly): the packing 0.15 -> 0.
const PIECE_COLUMNS: usize = 48;

/// Whether an f32-arithmetic product runs chunked: `op(A)` stored
/// row-major (its elements along k adjacent: a transposed column-major A)
/// and few columns in the result. The `gemm` crate packs such a left
/// operand slowly (about 0.6x its speed on a column-major one when `n`
/// is 64); a column-major copy of all of `A` costs as much as the product,
/// but a copy of a block of rows made just before the block's product is
/// read back from cache.
fn skinny_row_major(p: &Matmul) -> bool {
    let (rs, cs) = if p.ta == Op::N { (p.a.rs, p.a.cs) } else { (p.a.cs, p.a.rs) };
    let real = matches!(p.a.dtype, DType::F32 | DType::F16 | DType::BF16);
    real && cs == 1 && rs != 1 && p.n <= 256 && p.m >= 2 * CHUNK_ROWS as i64 && p.k >= 8
}

/// The right operand of a chunked product (f32, any strides).
#[derive(Clone, Copy)]
struct Rhs {
    ptr: *const f32,
    rs: isize,
    cs: isize,
}

/// Where a chunked product accumulates (f32, any strides).
#[derive(Clone, Copy)]
struct Dst {
    ptr: *mut f32,
    rs: isize,
    cs: isize,
}

// SAFETY: the tasks of a chunked product read the operands and write
// disjoint rows of the destination.
unsafe impl Send for Rhs {}
unsafe impl Sync for Rhs {}
unsafe impl Send for Dst {}
unsafe impl Sync for Dst {}

/// `dst = alpha op(A) B + beta dst` (dst read only when `read_dst`), one
/// block of `CHUNK_ROWS` rows at a time: the block of `op(A)` (row-major,
/// f32, f16 or bf16) is converted into a column-major f32 copy by a
/// cache-blocked transposition, then multiplied by the `gemm` crate while
/// it is still in cache, `PIECE_COLUMNS` columns of the result at a time.
/// With several threads the blocks run in parallel, one product per
/// thread.
///
/// # Safety
/// Every operand must be valid for the call's shapes; `op(A)` is stored
/// with its k elements adjacent (`skinny_row_major`).
#[allow(clippy::too_many_arguments)]
unsafe fn chunked_product(p: &Matmul, a: View, b: Rhs, d: Dst, alpha: f32, beta: f32, read_dst: bool, par: Parallelism) {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    // op(A)'s row i starts `row` elements after row 0.
    let row = if p.ta == Op::N { a.rs } else { a.cs } as isize;
    let size = a.dtype.size() as isize;
    let chunks = m.div_ceil(CHUNK_ROWS);
    let one = |c: usize, par: Parallelism| {
        // The whole wrappers (Sync), not their pointer fields.
        let (b, d) = (b, d);
        let i0 = c * CHUNK_ROWS;
        let rows = CHUNK_ROWS.min(m - i0);
        let mut buf = Scratch::take::<f32>(rows * k);
        let buf = buf.slice::<f32>(rows * k);
        let src = (a.ptr as isize + i0 as isize * row * size) as u64;
        // SAFETY (block): rows i0..i0 + rows of op(A), and of the
        // destination, inside the checked operands.
        unsafe {
            if a.dtype == DType::F32 || (a.dtype == DType::F16 && f16c()) {
                transpose(src, a.dtype, row, k, rows, buf.as_mut_ptr(), rows);
            } else {
                // Widen each row (contiguous: the half crate's vector
                // conversion), then transpose.
                let mut wide = Scratch::take::<f32>(rows * k);
                let wide = wide.slice::<f32>(rows * k);
                for (r, line) in wide.chunks_mut(k).enumerate() {
                    f32::load(a.dtype, (src as isize + r as isize * row * size) as u64, 1, line);
                }
                transpose(wide.as_ptr() as u64, DType::F32, k as isize, k, rows, buf.as_mut_ptr(), rows);
            }
            let mut j0 = 0;
            while j0 < n {
                let cols = PIECE_COLUMNS.min(n - j0);
                gemm::gemm::<f32>(
                    rows,
                    cols,
                    k,
                    d.ptr.offset(i0 as isize * d.rs + j0 as isize * d.cs),
                    d.cs,
                    d.rs,
                    read_dst,
                    buf.as_ptr(),
                    rows as isize,
                    1,
                    b.ptr.offset(j0 as isize * b.cs),
                    b.cs,
                    b.rs,
                    beta,
                    alpha,
                    false,
                    false,
                    false,
                    par,
                );
                j0 += cols;
            }
        }
    };
    let threads = rayon::current_num_threads();
    if matches!(par, Parallelism::None) || threads == 1 {
        (0..chunks).for_each(|c| one(c, Parallelism::None));
    } else if chunks >= 2 * threads {
        (0..chunks).into_par_iter().for_each(|c| one(c, Parallelism::None));
    } else {
        (0..chunks).for_each(|c| one(c, par));
    }
}

/// Whether the CPU converts f16 to f32 in vectors (F16C, with AVX).
fn f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("f16c");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Transposes the column-major `rows x cols` matrix at `src` (f32, or f16
/// widened on the way; leading dimension `lds`) into the column-major
/// f32 `cols x rows` matrix at `dst` (leading dimension `ldd`), in 8 x 8
/// tiles (AVX, and F16C for f16, where the CPU has them), in strips of 8
/// source columns each walked from its first row to its last: eight
/// sequential streams, which the hardware prefetchers follow. In 64 x 64
/// blocks (64 streams at a time) the transposition of SGEMM
/// 4096x64x1024 TN's blocks took 0.83 CPU samples per sample of the
/// product's kernels, in strips 0.54-0.63 (one thread, `perf record`, the
/// `gemm` crate and the transposition called directly).
///
/// # Safety
/// Both matrices must be valid for their shapes; `dtype` is F32 or F16.
unsafe fn transpose(src: u64, dtype: DType, lds: isize, rows: usize, cols: usize, dst: *mut f32, ldd: usize) {
    const STRIP: usize = 8;
    #[cfg(target_arch = "x86_64")]
    let vector = std::arch::is_x86_feature_detected!("avx") && (dtype == DType::F32 || f16c());
    #[cfg(not(target_arch = "x86_64"))]
    let vector = false;
    let ldd = ldd as isize;
    let size = dtype.size() as isize;
    let at = |i: usize, j: usize| (src as isize + (i as isize + j as isize * lds) * size) as u64;
    // SAFETY: an element of the source, the caller's promise.
    let read = |i: usize, j: usize| unsafe {
        match dtype {
            DType::F16 => f16::from_bits(std::ptr::read_unaligned(at(i, j) as *const u16)).to_f32(),
            _ => std::ptr::read_unaligned(at(i, j) as *const f32),
        }
    };
    for j0 in (0..cols).step_by(STRIP) {
        let j1 = (j0 + STRIP).min(cols);
        {
            let (i0, i1) = (0, rows);
            // SAFETY (block): elements inside both matrices.
            unsafe {
                let mut j = j0;
                while j < j1 {
                    let mut i = i0;
                    let full = vector && j + 8 <= j1;
                    if full {
                        while i + 8 <= i1 {
                            let d = dst.offset(j as isize + i as isize * ldd);
                            #[cfg(target_arch = "x86_64")]
                            match dtype {
                                DType::F16 => tile8_f16(at(i, j) as *const u16, lds, d, ldd),
                                _ => tile8(at(i, j) as *const f32, lds, d, ldd),
                            }
                            i += 8;
                        }
                    }
                    // The edges (and CPUs without the vectors), element by
                    // element.
                    let jn = if full { j + 8 } else { j + 1 };
                    for jj in j..jn {
                        for ii in i..i1 {
                            *dst.offset(jj as isize + ii as isize * ldd) = read(ii, jj);
                        }
                    }
                    j = jn;
                }
            }
        }
    }
}

/// [`tile8`] from f16: each column of eight halves is widened (F16C) as
/// it is loaded.
///
/// # Safety
/// The CPU must have AVX and F16C; both tiles must be valid.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn tile8_f16(src: *const u16, lds: isize, dst: *mut f32, ldd: isize) {
    use std::arch::x86_64::*;
    let mut wide = [0f32; 64];
    // SAFETY (block): the caller's promise; `wide` holds 8 x 8.
    unsafe {
        for c in 0..8 {
            let h = _mm_loadu_si128(src.offset(c * lds) as *const __m128i);
            _mm256_storeu_ps(wide.as_mut_ptr().offset(c * 8), _mm256_cvtph_ps(h));
        }
        tile8(wide.as_ptr(), 8, dst, ldd);
    }
}

/// Transposes one 8 x 8 tile: eight columns of eight floats at `src`
/// (`lds` apart) become eight at `dst` (`ldd` apart), by the usual
/// unpack / shuffle / lane-permute sequence.
///
/// # Safety
/// The CPU must have AVX; both tiles must be valid.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn tile8(src: *const f32, lds: isize, dst: *mut f32, ldd: isize) {
    use std::arch::x86_64::*;
    // SAFETY (block): the caller's promise.
    unsafe {
        let r = |c: isize| _mm256_loadu_ps(src.offset(c * lds));
        let (r0, r1, r2, r3, r4, r5, r6, r7) = (r(0), r(1), r(2), r(3), r(4), r(5), r(6), r(7));
        let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
        let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
        let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
        let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
        let (u0, u1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
        let (u2, u3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
        let (u4, u5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
        let (u6, u7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
        let w = |c: isize, v| _mm256_storeu_ps(dst.offset(c * ldd), v);
        w(0, _mm256_permute2f128_ps::<0x20>(u0, u4));
        w(1, _mm256_permute2f128_ps::<0x20>(u1, u5));
        w(2, _mm256_permute2f128_ps::<0x20>(u2, u6));
        w(3, _mm256_permute2f128_ps::<0x20>(u3, u7));
        w(4, _mm256_permute2f128_ps::<0x31>(u0, u4));
        w(5, _mm256_permute2f128_ps::<0x31>(u1, u5));
        w(6, _mm256_permute2f128_ps::<0x31>(u2, u6));
        w(7, _mm256_permute2f128_ps::<0x31>(u3, u7));
    }
}

/// Copies an `m x n` matrix between two layouts of the same type.
///
/// # Safety
/// Both must be valid for the shape.
unsafe fn copy_matrix<T: Copy>(src: View, dst: View, m: i64, n: i64) {
    for j in 0..n {
        for i in 0..m {
            // SAFETY: element (i, j) of each, the caller's promise.
            unsafe {
                let s = (src.ptr as *const T).offset((i * src.rs + j * src.cs) as isize);
                let d = (dst.ptr as *mut T).offset((i * dst.rs + j * dst.cs) as isize);
                *d = *s;
            }
        }
    }
}

/// Converts `view`'s `m x n` matrix into the column-major `out`.
///
/// # Safety
/// The matrix must be readable.
unsafe fn load_col_major<T: Acc>(view: View, m: i64, n: i64, out: &mut [T]) {
    // SAFETY: the caller's promise: n columns of m elements.
    unsafe { convert_lines(view.dtype, view.ptr, n as usize, m as usize, view.cs, view.rs as isize, out, true) };
}

/// Rounds the column-major `buf` into `view`'s `m x n` matrix.
///
/// # Safety
/// The matrix must be writable.
unsafe fn store_col_major<T: Acc>(buf: &[T], view: View, m: i64, n: i64, par: bool) {
    let base = view.ptr;
    let size = view.dtype.size() as u64;
    if view.rs == 1 && view.cs == m {
        // One contiguous run, stored in large pieces.
        let store = |(i, piece): (usize, &[T])| {
            let dst = base.wrapping_add((i * CONVERT_CHUNK) as u64 * size);
            // SAFETY: a piece of the contiguous destination; pieces are
            // disjoint.
            unsafe { T::store(piece, view.dtype, dst, 1) };
        };
        if par && buf.len() > CONVERT_CHUNK {
            buf.par_chunks(CONVERT_CHUNK).enumerate().for_each(store);
        } else {
            buf.chunks(CONVERT_CHUNK).enumerate().for_each(store);
        }
        return;
    }
    let store = |(j, col): (usize, &[T])| {
        let dst = base.wrapping_add((j as u64).wrapping_mul(view.cs as u64).wrapping_mul(size));
        // SAFETY: column j, m elements rs apart; columns are disjoint.
        unsafe { T::store(col, view.dtype, dst, view.rs as isize) };
    };
    let chunk = m.max(1) as usize;
    if par && m * n >= 1 << 16 {
        buf.par_chunks(chunk).enumerate().take(n as usize).for_each(store);
    } else {
        buf.chunks(chunk).enumerate().take(n as usize).for_each(store);
    }
}

/// An integer product: `D = alpha P + beta C` in wrapping 32-bit
/// arithmetic, `P = op(A) op(B)` computed exactly in `T`.
///
/// # Safety
/// Every operand must be valid for the call's shapes.
unsafe fn integer_product<T: Acc + Into<f64>>(p: &Matmul, x: Addrs, alpha: i32, beta: i32, par: Parallelism) {
    let (m, n, k) = (p.m, p.n, p.k);
    let mut scratch = Scratch::take::<T>((m * n) as usize);
    let prod = scratch.slice::<T>((m * n) as usize);
    // SAFETY (block): the caller's promise.
    unsafe {
        if k == 0 || alpha == 0 {
            prod.fill(T::zero());
        } else {
            let ((ar, ac), (br, bc)) = p.stored_shapes();
            let parallel = !matches!(par, Parallelism::None);
            let a = operand::<T>(p.a.at(x.a), ar, ac, parallel);
            let b = operand::<T>(p.b.at(x.b), br, bc, parallel);
            let (a_rs, a_cs) = if p.ta == Op::N { (a.rs, a.cs) } else { (a.cs, a.rs) };
            let (b_rs, b_cs) = if p.tb == Op::N { (b.rs, b.cs) } else { (b.cs, b.rs) };
            gemm::gemm::<T>(
                m as usize,
                n as usize,
                k as usize,
                prod.as_mut_ptr(),
                m as isize,
                1,
                false,
                a.ptr,
                a_cs,
                a_rs,
                b.ptr,
                b_cs,
                b_rs,
                T::zero(),
                T::one(),
                false,
                false,
                false,
                par,
            );
        }
        let (c, d) = (p.c.at(x.c), p.d.at(x.d));
        for j in 0..n {
            for i in 0..m {
                // Exact integers: the wrap to 32 bits is the accumulator's.
                let acc = Into::<f64>::into(prod[(i + j * m) as usize]) as i64 as i32;
                let mut v = alpha.wrapping_mul(acc);
                if beta != 0 {
                    let cv = std::ptr::read_unaligned((c.ptr as *const i32).offset((i * c.rs + j * c.cs) as isize));
                    v = v.wrapping_add(beta.wrapping_mul(cv));
                }
                std::ptr::write_unaligned((d.ptr as *mut i32).offset((i * d.rs + j * d.cs) as isize), v);
            }
        }
    }
}

/// One product of a matmul in its arithmetic.
///
/// # Safety
/// Every operand must be valid for the call's shapes.
unsafe fn dispatch(p: &Matmul, x: Addrs, alpha: Complex64, beta: Complex64, par: Parallelism) {
    if p.m == 0 || p.n == 0 {
        return;
    }
    let zero = Complex64::new(0.0, 0.0);
    let (az, bz) = (alpha == zero, beta == zero);
    // SAFETY (all arms): the caller's promise.
    unsafe {
        match p.compute {
            Compute::F32 => product::<f32>(p, x, alpha.re as f32, beta.re as f32, az, bz, par),
            Compute::F64 => product::<f64>(p, x, alpha.re, beta.re, az, bz, par),
            Compute::C32 => product::<Complex32>(p, x, Complex32::from_c64(alpha), Complex32::from_c64(beta), az, bz, par),
            Compute::C64 => product::<Complex64>(p, x, alpha, beta, az, bz, par),
            Compute::I32 => {
                let (al, be) = (alpha.re as i32, beta.re as i32);
                // |a b| <= 2^14: sums of up to 1024 products stay below 2^24.
                if p.k <= 1024 {
                    integer_product::<f32>(p, x, al, be, par)
                } else {
                    integer_product::<f64>(p, x, al, be, par)
                }
            }
        }
    }
}

/// Runs a checked matmul: every product of its batch, small ones one per
/// thread, large ones each on all threads.
pub fn run(call: Matmul) {
    let work = call.m.saturating_mul(call.n).saturating_mul(call.k.max(1)).saturating_mul(call.batch.count());
    crate::cpu::on_worker_if_large(work, || run_here(call));
}

fn run_here(call: Matmul) {
    // SAFETY (block): device scalars and every operand were checked to lie
    // in device memory when the call was made; pointer-array entries are
    // checked here, before use.
    unsafe {
        let alpha = call.alpha.get();
        let beta = call.beta.get();
        let count = call.batch.count();
        let small = call.m * call.n * call.k.max(1) <= SMALL_PRODUCT && count > 1;
        let ((ar, ac), (br, bc)) = call.stored_shapes();
        let reads_ab = call.k > 0 && alpha != Complex64::new(0.0, 0.0);
        let reads_c = beta != Complex64::new(0.0, 0.0);
        let bias = call.epilogue.bias;
        let aux = call.epilogue.aux;
        let addr = |i: i64| -> Option<Addrs> {
            let step =
                |v: &View, stride: i64| (v.ptr as i64).wrapping_add(i.wrapping_mul(stride).wrapping_mul(v.dtype.size() as i64)) as u64;
            let (a, b, c, d) = match call.batch {
                MatmulBatch::Strided { a, b, c, d, .. } => (step(&call.a, a), step(&call.b, b), step(&call.c, c), step(&call.d, d)),
                MatmulBatch::Pointers { a, b, c, d, .. } => {
                    let (pa, pb, pc, pd) = (entry(a, i), entry(b, i), entry(c, i), entry(d, i));
                    let checks = [
                        ("A", pa, if reads_ab { call.a.extent(ar, ac) } else { 0 }),
                        ("B", pb, if reads_ab { call.b.extent(br, bc) } else { 0 }),
                        ("C", pc, if reads_c { call.c.extent(call.m, call.n) } else { 0 }),
                        ("D", pd, call.d.extent(call.m, call.n)),
                    ];
                    for (name, p, e) in checks {
                        if !in_device_memory(p, e) {
                            error!("batch entry {i}: matrix {name} at {p:#x} ({e} bytes) is not in device memory; the product was skipped");
                            return None;
                        }
                    }
                    (pa, pb, pc, pd)
                }
            };
            let bias = bias.map_or(0, |b| (b.ptr as i64).wrapping_add(i.wrapping_mul(b.stride).wrapping_mul(b.dtype.size() as i64)) as u64);
            let aux = aux.map_or(0, |x| (x.ptr as i64).wrapping_add(i.wrapping_mul(x.stride).wrapping_mul(x.dtype.size() as i64)) as u64);
            Some(Addrs { a, b, c, d, bias, aux })
        };
        if small {
            for_each_index(count, |i| {
                if let Some(x) = addr(i) {
                    dispatch(&call, x, alpha, beta, Parallelism::None);
                }
            });
        } else {
            let panels = in_panels(&call);
            for i in 0..count {
                if let Some(x) = addr(i) {
                    if panels {
                        dispatch_in_panels(&call, x, alpha, beta);
                    } else {
                        dispatch(&call, x, alpha, beta, par());
                    }
                }
            }
        }
    }
}

/// Products of more multiply-adds than this run on all threads through
/// the `gemm` crate's own parallel product; smaller ones from
/// [`crate::cpu::FAN_OUT_WORK`] on as column panels (see
/// [`dispatch_in_panels`]). Measured with two threads against OpenBLAS
/// (2-vCPU machine, alternating rounds, two runs each, median ratio):
/// 256x256x256 HGEMM 0.86/0.89 -> 1.08/1.02, Lt+bias 1.11/1.01 ->
/// 1.17/1.24, SGEMM and DGEMM unchanged (1.2-1.3); split at 512 and 1024
/// the products were no faster (SGEMM 1024 1.07-1.10 either way, HGEMM
/// 1024 TN 0.88-0.89 -> 0.82-0.83).
const PANEL_WORK: i64 = 1 << 26;

/// Whether `p`, one product of a call, runs as column panels, one per
/// thread of the pool.
fn in_panels(p: &Matmul) -> bool {
    let threads = rayon::current_num_threads() as i64;
    let work = p.m.saturating_mul(p.n).saturating_mul(p.k.max(1));
    threads > 1 && (crate::cpu::FAN_OUT_WORK..=PANEL_WORK).contains(&work) && p.n >= 2 * threads
}

/// One product as column panels of D, one per thread of the pool, each a
/// product of its own on one thread (this one and the pool's workers).
/// The `gemm` crate's parallel product hands its work to the pool's
/// threads in several steps, and a 256x256x256 product is short enough
/// (about 100 microseconds on two cores) for each wake-up of a sleeping
/// worker to show; as panels, one hand-off per extra thread, and a 16-bit
/// operand is converted panel by panel on the thread that multiplies it.
/// A panel's columns of `op(B)`, C, D and the epilogue's output are the
/// whole product's from its first column on; A and the bias are shared.
///
/// # Safety
/// As for [`dispatch`].
unsafe fn dispatch_in_panels(p: &Matmul, x: Addrs, alpha: Complex64, beta: Complex64) {
    let parts = rayon::current_num_threads() as i64;
    let width = (p.n + parts - 1) / parts;
    let panel = |j0: i64| {
        let n = width.min(p.n - j0);
        let step = |ptr: u64, stride: i64, size: usize| (ptr as i64).wrapping_add(j0 * stride * size as i64) as u64;
        let b_stride = if p.tb == Op::N { p.b.cs } else { p.b.rs };
        let xs = Addrs {
            a: x.a,
            b: step(x.b, b_stride, p.b.dtype.size()),
            c: step(x.c, p.c.cs, p.c.dtype.size()),
            d: step(x.d, p.d.cs, p.d.dtype.size()),
            bias: x.bias,
            aux: p.epilogue.aux.map_or(x.aux, |a| step(x.aux, a.ld, a.dtype.size())),
        };
        let mut q = *p;
        q.n = n;
        // SAFETY: the caller's promise; a panel lies inside the product.
        unsafe { dispatch(&q, xs, alpha, beta, Parallelism::None) };
    };
    rayon::in_place_scope(|s| {
        for j in 1..parts {
            let j0 = j * width;
            if j0 < p.n {
                let panel = &panel;
                s.spawn(move |_| panel(j0));
            }
        }
        panel(0);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 value widens to the f32 the `half` crate gives (NaN to a
    /// NaN), in a slice whose length leaves a tail after the vectors.
    #[test]
    fn f16_widening_is_exact() {
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).chain([f16::ONE; 3]).collect();
        let mut got = vec![0f32; all.len()];
        widen_f16(&all, &mut got);
        for (h, g) in all.iter().zip(&got) {
            let want = h.to_f32();
            assert!(want.to_bits() == g.to_bits() || (want.is_nan() && g.is_nan()), "{h:?}: {g} vs {want}");
        }
    }

    /// f32 values round to the f16 the `half` crate gives (to nearest,
    /// ties to even; overflow to infinity; subnormals; NaN stays NaN).
    #[test]
    fn f16_rounding_matches_round_to_nearest_even() {
        let mut v: Vec<f32> = Vec::new();
        // Every f16 value, and the midpoints and quarter points between
        // neighbours (the ties and the cases either side of them).
        for bits in 0..0x7c00u16 {
            let a = f16::from_bits(bits).to_f32();
            let b = f16::from_bits(bits + 1).to_f32();
            for x in [a, (a + b) / 2.0, a + (b - a) * 0.25, a + (b - a) * 0.75] {
                v.push(x);
                v.push(-x);
            }
        }
        v.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 65519.0, 65520.0, 1e-8, -1e-8, 3.0e-5, f32::MAX, 1.0]);
        let mut got = vec![f16::ZERO; v.len()];
        narrow_f16(&v, &mut got);
        for (x, g) in v.iter().zip(&got) {
            let want = f16::from_f32(*x);
            assert!(want.to_bits() == g.to_bits() || (want.is_nan() && g.is_nan()), "{x}: {g:?} vs {want:?}");
        }
    }

    /// A product run as column panels (three threads: panels of 4, 4 and
    /// 2 columns) against a plain f64 loop: every transposition of A and
    /// B, leading dimensions past the rows, C apart from D with its own
    /// leading dimension, f16 operands, and an epilogue with a bias, a
    /// ReLU and its input kept in an aux matrix.
    #[test]
    fn a_product_in_column_panels_is_the_whole_product() {
        use crate::backend::{Aux, Bias};
        use crate::types::Scalar;
        let (m, n, k) = (37i64, 10i64, 19i64);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("a pool of three threads");
        for (ta, tb, half, epilogue) in [
            (Op::N, Op::N, false, false),
            (Op::T, Op::N, false, false),
            (Op::N, Op::T, false, true),
            (Op::T, Op::T, true, false),
            (Op::N, Op::N, true, true),
        ] {
            let dtype = if half { DType::F16 } else { DType::F32 };
            let (ar, ac) = if ta == Op::N { (m, k) } else { (k, m) };
            let (br, bc) = if tb == Op::N { (k, n) } else { (n, k) };
            let (lda, ldb, ldc, ldd, ldx) = (ar + 3, br + 2, m + 1, m + 4, m + 5);
            let value = |i: i64, salt: i64| (((i * 37 + salt * 11) % 29) as f32 - 14.0) / 8.0;
            let store = |v: &[f32]| -> Vec<u8> {
                if half {
                    v.iter().flat_map(|x| f16::from_f32(*x).to_bits().to_le_bytes()).collect()
                } else {
                    v.iter().flat_map(|x| x.to_le_bytes()).collect()
                }
            };
            let load = |b: &[u8], i: usize| -> f32 {
                if half {
                    f16::from_bits(u16::from_le_bytes([b[2 * i], b[2 * i + 1]])).to_f32()
                } else {
                    f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
                }
            };
            let a = store(&(0..lda * ac).map(|i| value(i, 1)).collect::<Vec<_>>());
            let b = store(&(0..ldb * bc).map(|i| value(i, 2)).collect::<Vec<_>>());
            let c = store(&(0..ldc * n).map(|i| value(i, 3)).collect::<Vec<_>>());
            let mut d = store(&vec![f32::NAN; (ldd * n) as usize]);
            let bias: Vec<f32> = (0..m).map(|i| value(i, 4)).collect();
            let mut aux = vec![f32::NAN; (ldx * n) as usize];
            let (alpha, beta) = (0.75, -0.5);
            let ep = if epilogue {
                Epilogue {
                    act: Activation::Relu,
                    bias: Some(Bias { ptr: bias.as_ptr() as u64, dtype: DType::F32, stride: 0 }),
                    aux: Some(Aux { ptr: aux.as_mut_ptr() as u64, ld: ldx, dtype: DType::F32, stride: 0 }),
                }
            } else {
                Epilogue::NONE
            };
            let call = Matmul {
                ta,
                tb,
                m,
                n,
                k,
                alpha: Scalar::Value(Complex64::new(alpha, 0.0)),
                beta: Scalar::Value(Complex64::new(beta, 0.0)),
                a: View::col_major(a.as_ptr() as u64, lda, dtype),
                b: View::col_major(b.as_ptr() as u64, ldb, dtype),
                c: View::col_major(c.as_ptr() as u64, ldc, dtype),
                d: View::col_major(d.as_mut_ptr() as u64, ldd, dtype),
                compute: Compute::F32,
                batch: MatmulBatch::Strided { count: 1, a: 0, b: 0, c: 0, d: 0 },
                epilogue: ep,
            };
            let x =
                Addrs { a: call.a.ptr, b: call.b.ptr, c: call.c.ptr, d: call.d.ptr, bias: bias.as_ptr() as u64, aux: aux.as_ptr() as u64 };
            pool.install(|| {
                assert!(rayon::current_num_threads() == 3);
                // SAFETY: every matrix above holds its shape.
                unsafe { dispatch_in_panels(&call, x, Complex64::new(alpha, 0.0), Complex64::new(beta, 0.0)) }
            });
            let at = |i: i64, l: i64| if ta == Op::N { load(&a, (i + l * lda) as usize) } else { load(&a, (l + i * lda) as usize) };
            let bt = |l: i64, j: i64| if tb == Op::N { load(&b, (l + j * ldb) as usize) } else { load(&b, (j + l * ldb) as usize) };
            for j in 0..n {
                for i in 0..m {
                    let dot: f64 = (0..k).map(|l| f64::from(at(i, l)) * f64::from(bt(l, j))).sum();
                    let mut want = alpha * dot + beta * f64::from(load(&c, (i + j * ldc) as usize));
                    if epilogue {
                        want += f64::from(bias[i as usize]);
                        let kept = f64::from(aux[(i + j * ldx) as usize]);
                        assert!((kept - want).abs() <= 1e-4 * (1.0 + want.abs()), "{ta:?}{tb:?} aux ({i}, {j}): {kept} vs {want}");
                        want = want.max(0.0);
                    }
                    let got = f64::from(load(&d, (i + j * ldd) as usize));
                    let tol = if half { 2e-3 } else { 1e-4 } * (1.0 + want.abs());
                    assert!((got - want).abs() <= tol, "{ta:?}{tb:?} half {half} ({i}, {j}): {got} vs {want}");
                }
            }
        }
    }

    /// The blocked transposition against element-by-element indexing,
    /// for shapes with partial tiles and blocks at every edge, from f32
    /// and from f16.
    #[test]
    fn transposition_of_every_shape() {
        for (rows, cols, lds, ldd) in
            [(1, 1, 1, 1), (8, 8, 8, 8), (37, 130, 40, 131), (130, 37, 133, 37), (64, 72, 64, 80), (9, 200, 9, 203)]
        {
            let src: Vec<f32> = (0..lds * cols).map(|i| i as f32 * 0.5 - 3.0).collect();
            let half: Vec<f16> = src.iter().map(|x| f16::from_f32(*x)).collect();
            for dtype in [DType::F32, DType::F16] {
                let mut dst = vec![f32::NAN; ldd * rows];
                let p = if dtype == DType::F32 { src.as_ptr() as u64 } else { half.as_ptr() as u64 };
                // SAFETY: both matrices hold their shapes.
                unsafe { transpose(p, dtype, lds as isize, rows, cols, dst.as_mut_ptr(), ldd) };
                for i in 0..rows {
                    for j in 0..cols {
                        let want = if dtype == DType::F32 { src[i + j * lds] } else { half[i + j * lds].to_f32() };
                        assert_eq!(dst[j + i * ldd], want, "{dtype:?} {rows}x{cols}: ({i}, {j})");
                    }
                    for j in cols..ldd {
                        assert!(dst[j + i * ldd].is_nan(), "{dtype:?} {rows}x{cols}: padding ({j}, {i}) written");
                    }
                }
            }
        }
    }
}
