//! The CPU batched LU routines (`getrfBatched`, `getrsBatched`,
//! `getriBatched`, `matinvBatched`): small matrices, one per thread,
//! unblocked loops (these routines exist for batches of matrices too small
//! for blocking to pay). Pivoting is partial, by LAPACK's rule: the first
//! element of largest `|re| + |im|` in the column; pivots are 1-based row
//! numbers as LAPACK's.

use num_complex::{Complex32, Complex64};

use crate::backend::{Lu, LuOp};
use crate::cpu::{entry, for_each_index, in_device_memory, Elem};
use crate::log::error;
use crate::types::{matrix_extent, DType, Op};

/// A column-major matrix in memory: element `(i, j)` at `p + i + j ld`.
#[derive(Clone, Copy)]
struct M<T> {
    p: *mut T,
    ld: isize,
}

impl<T: Elem> M<T> {
    /// # Safety
    /// `(i, j)` lies in the matrix.
    unsafe fn get(&self, i: i64, j: i64) -> T {
        // SAFETY: the caller's promise.
        unsafe { *self.p.offset(i as isize + j as isize * self.ld) }
    }
    /// # Safety
    /// `(i, j)` lies in the matrix.
    unsafe fn set(&self, i: i64, j: i64, v: T) {
        // SAFETY: the caller's promise.
        unsafe { *self.p.offset(i as isize + j as isize * self.ld) = v }
    }
}

fn abs1<T: Elem>(v: T) -> f64 {
    let c = v.to_c64();
    c.re.abs() + c.im.abs()
}

fn is_zero<T: Elem>(v: T) -> bool {
    v.to_c64() == Complex64::new(0.0, 0.0)
}

/// Columns of a panel of the blocked factorisation, and the order from
/// which it is used (twice the panel): smaller matrices are factored by
/// the unblocked loop alone, whose rank-1 updates run at the speed of
/// the cache rather than of the arithmetic.
const LU_BLOCK: i64 = 32;

/// Factors `a` (`n x n`) in place; writes the 1-based pivots to `piv` when
/// there is one. Returns LAPACK's info: 0, or the 1-based index of the
/// first exactly zero pivot (the factorisation goes on past it, leaving
/// that column of L unscaled, as LAPACK's).
///
/// From `2 LU_BLOCK` columns on, the factorisation is blocked (LAPACK's
/// right-looking order): a panel of `LU_BLOCK` columns is factored by the
/// unblocked loop (its row exchanges applied to whole rows), the rows of U
/// right of it are solved with the panel's unit lower triangle (its
/// inverse, applied by one product), and the
/// rest of the matrix is updated by one product (the `gemm` crate). The
/// product uses a copy of the panel's L in which the columns of zero
/// pivots are zero: the unblocked loop skips their updates, and so does
/// the blocked one.
///
/// # Safety
/// `a` holds `n x n` elements; `piv`, when not null, `n` ints.
unsafe fn getrf<T: Elem>(a: M<T>, n: i64, piv: *mut i32) -> i32 {
    let mut info = 0;
    // SAFETY (block): the caller's promise.
    unsafe {
        if n < 2 * LU_BLOCK {
            panel(a, n, 0, n, piv, &mut info);
            return info;
        }
        let (mut l, mut inv, mut u12): (Vec<T>, Vec<T>, Vec<T>) = (Vec::new(), Vec::new(), Vec::new());
        let mut j0 = 0;
        while j0 < n {
            let j1 = (j0 + LU_BLOCK).min(n);
            panel(a, n, j0, j1, piv, &mut info);
            if j1 == n {
                break;
            }
            // The panel's L (rows j0..n, unit diagonal), column-major.
            let (rows, jb) = ((n - j0) as usize, (j1 - j0) as usize);
            l.clear();
            l.resize(rows * jb, T::zero());
            for (c, col) in l.chunks_mut(rows).enumerate() {
                let j = j0 + c as i64;
                // A zero pivot (the panel leaves U's diagonal as it found
                // it at step j): no updates from this column.
                if is_zero(a.get(j, j)) {
                    continue;
                }
                col[c] = T::one();
                for (r, v) in col.iter_mut().enumerate().skip(c + 1) {
                    *v = a.get(j0 + r as i64, j);
                }
            }
            // U12 = L11^-1 A12: the inverse of the unit lower L11 by
            // substitution on the identity's columns (jb^3/3 operations),
            // then one product from a copy of A12 (substitution column by
            // column runs loops of at most jb elements).
            let cols = (n - j1) as usize;
            inv.clear();
            inv.resize(jb * jb, T::zero());
            for (c, x) in inv.chunks_mut(jb).enumerate() {
                x[c] = T::one();
                for i in c..jb {
                    let xi = x[i];
                    for (v, y) in x[i + 1..].iter_mut().zip(&l[i * rows + i + 1..i * rows + jb]) {
                        *v = *v - *y * xi;
                    }
                }
            }
            u12.clear();
            u12.reserve(jb * cols);
            for c in j1..n {
                u12.extend_from_slice(std::slice::from_raw_parts(a.p.offset(j0 as isize + c as isize * a.ld), jb));
            }
            gemm::gemm::<T>(
                jb,
                cols,
                jb,
                a.p.offset(j0 as isize + j1 as isize * a.ld),
                a.ld,
                1,
                false,
                inv.as_ptr(),
                jb as isize,
                1,
                u12.as_ptr(),
                jb as isize,
                1,
                T::zero(),
                T::one(),
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
            // A22 -= L21 U12.
            let m2 = (n - j1) as usize;
            gemm::gemm::<T>(
                m2,
                m2,
                jb,
                a.p.offset(j1 as isize + j1 as isize * a.ld),
                a.ld,
                1,
                true,
                l.as_ptr().add(jb),
                rows as isize,
                1,
                a.p.offset(j0 as isize + j1 as isize * a.ld),
                a.ld,
                1,
                T::one(),
                T::zero() - T::one(),
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
            j0 = j1;
        }
    }
    info
}

/// The unblocked factorisation of columns `j0..j1` (rows `j0..n`), their
/// row exchanges applied to whole rows, their updates to these columns
/// only; `info` takes the first zero pivot's 1-based index.
///
/// # Safety
/// As [`getrf`].
unsafe fn panel<T: Elem>(a: M<T>, n: i64, j0: i64, j1: i64, piv: *mut i32, info: &mut i32) {
    // SAFETY (block): indices inside the matrix and pivot array.
    unsafe {
        for j in j0..j1 {
            if !piv.is_null() {
                let mut p = j;
                let mut best = abs1(a.get(j, j));
                for i in j + 1..n {
                    let v = abs1(a.get(i, j));
                    if v > best {
                        best = v;
                        p = i;
                    }
                }
                *piv.offset(j as isize) = (p + 1) as i32;
                if p != j {
                    for c in 0..n {
                        let t = a.get(j, c);
                        a.set(j, c, a.get(p, c));
                        a.set(p, c, t);
                    }
                }
            }
            let d = a.get(j, j);
            if is_zero(d) {
                if *info == 0 {
                    *info = (j + 1) as i32;
                }
                continue;
            }
            let below = (n - j - 1) as usize;
            // Column j below the diagonal, and the same rows of column c
            // (c > j): disjoint runs (ld >= n), as slices so that the
            // updates vectorise.
            let l = std::slice::from_raw_parts_mut(a.p.offset((j + 1) as isize + j as isize * a.ld), below);
            for v in l.iter_mut() {
                *v = *v / d;
            }
            let l: &[T] = l;
            for c in j + 1..j1 {
                let t = a.get(j, c);
                if is_zero(t) {
                    continue;
                }
                let col = std::slice::from_raw_parts_mut(a.p.offset((j + 1) as isize + c as isize * a.ld), below);
                for (v, x) in col.iter_mut().zip(l) {
                    *v = *v - *x * t;
                }
            }
        }
    }
}

/// Whether `piv` holds a valid pivot sequence for an `n x n`
/// factorisation (row `j` swapped with a row `>= j`).
///
/// # Safety
/// `piv` holds `n` ints.
unsafe fn pivots_valid(piv: *const i32, n: i64) -> bool {
    (0..n).all(|j| {
        // SAFETY: the caller's promise.
        let p = unsafe { *piv.offset(j as isize) } as i64;
        p > j && p <= n
    })
}

/// Solves `op(A) X = B` for `B` (`n x nrhs`) with the factors in `a`.
///
/// # Safety
/// The matrices hold their shapes; `piv` (when not null) is valid.
unsafe fn getrs<T: Elem>(trans: Op, a: M<T>, n: i64, piv: *const i32, b: M<T>, nrhs: i64) {
    // SAFETY (block): indices inside the matrices.
    unsafe {
        let conj = trans == Op::C;
        let at = |i: i64, j: i64| {
            let v = a.get(i, j);
            if conj {
                v.conj()
            } else {
                v
            }
        };
        let swap = |j: i64| {
            let p = *piv.offset(j as isize) as i64 - 1;
            if p != j {
                for c in 0..nrhs {
                    let t = b.get(j, c);
                    b.set(j, c, b.get(p, c));
                    b.set(p, c, t);
                }
            }
        };
        if trans == Op::N {
            if !piv.is_null() {
                (0..n).for_each(swap);
            }
            for c in 0..nrhs {
                // L y = P b (unit lower), then U x = y.
                for j in 0..n {
                    let x = b.get(j, c);
                    for i in j + 1..n {
                        b.set(i, c, b.get(i, c) - a.get(i, j) * x);
                    }
                }
                for j in (0..n).rev() {
                    let x = b.get(j, c) / a.get(j, j);
                    b.set(j, c, x);
                    for i in 0..j {
                        b.set(i, c, b.get(i, c) - a.get(i, j) * x);
                    }
                }
            }
        } else {
            for c in 0..nrhs {
                // op(U) y = b (lower: element (i, j) of op(U) is op(U(j, i))),
                // then op(L) z = y (unit upper), then x = P^T z.
                for i in 0..n {
                    let mut s = b.get(i, c);
                    for j in 0..i {
                        s = s - at(j, i) * b.get(j, c);
                    }
                    b.set(i, c, s / at(i, i));
                }
                for i in (0..n).rev() {
                    let mut s = b.get(i, c);
                    for j in i + 1..n {
                        s = s - at(j, i) * b.get(j, c);
                    }
                    b.set(i, c, s);
                }
            }
            if !piv.is_null() {
                (0..n).rev().for_each(swap);
            }
        }
    }
}

/// `c = A^-1` from the factors in `a` (no zero on U's diagonal).
///
/// # Safety
/// As [`getrs`].
unsafe fn inverse<T: Elem>(a: M<T>, n: i64, piv: *const i32, c: M<T>) {
    // SAFETY (block): indices inside the matrices.
    unsafe {
        for j in 0..n {
            for i in 0..n {
                c.set(i, j, if i == j { T::one() } else { T::zero() });
            }
        }
        getrs(Op::N, a, n, piv, c, n);
    }
}

/// The first zero on U's diagonal (1-based), or 0.
///
/// # Safety
/// `a` holds `n x n` elements.
unsafe fn zero_pivot<T: Elem>(a: M<T>, n: i64) -> i32 {
    // SAFETY: diagonal elements.
    (0..n).find(|&j| is_zero(unsafe { a.get(j, j) })).map_or(0, |j| (j + 1) as i32)
}

/// # Safety
/// The arrays were checked when the call was made; their entries are
/// checked here.
unsafe fn one<T: Elem>(call: &Lu, i: i64) {
    let n = call.n;
    let size = call.dtype.size();
    let ext = |ld: i64, cols: i64| matrix_extent(n, cols, ld, size);
    let piv_of = |piv: u64| if piv == 0 { 0 } else { piv + 4 * (i * n) as u64 };
    let info_at = |info: u64| (info + 4 * i as u64) as *mut i32;
    let matrix = |array: u64, ld: i64, cols: i64, what: &str| -> Option<M<T>> {
        // SAFETY: the pointer array holds `count` entries (checked).
        let p = unsafe { entry(array, i) };
        if !in_device_memory(p, ext(ld, cols)) {
            error!("batch entry {i}: matrix {what} at {p:#x} ({} bytes) is not in device memory; it was skipped", ext(ld, cols));
            return None;
        }
        Some(M { p: p as *mut T, ld: ld as isize })
    };
    // SAFETY (block): every matrix checked above; pivot and info arrays
    // checked when the call was made.
    unsafe {
        match call.op {
            LuOp::Getrf { a, lda, piv, info } => {
                let Some(m) = matrix(a, lda, n, "A") else { return };
                *info_at(info) = getrf(m, n, piv_of(piv) as *mut i32);
            }
            LuOp::Getrs { trans, nrhs, a, lda, piv, b, ldb } => {
                let (Some(ma), Some(mb)) = (matrix(a, lda, n, "A"), matrix(b, ldb, nrhs, "B")) else { return };
                let p = piv_of(piv) as *const i32;
                if !p.is_null() && !pivots_valid(p, n) {
                    error!("batch entry {i}: the pivot array is not a factorisation's (a pivot outside j..n); the solve was skipped");
                    return;
                }
                getrs(trans, ma, n, p, mb, nrhs);
            }
            LuOp::Getri { a, lda, piv, c, ldc, info } => {
                let (Some(ma), Some(mc)) = (matrix(a, lda, n, "A"), matrix(c, ldc, n, "C")) else { return };
                let p = piv_of(piv) as *const i32;
                let z = zero_pivot(ma, n);
                *info_at(info) = z;
                if z != 0 {
                    return;
                }
                if !p.is_null() && !pivots_valid(p, n) {
                    error!("batch entry {i}: the pivot array is not a factorisation's (a pivot outside j..n); the inversion was skipped");
                    return;
                }
                inverse(ma, n, p, mc);
            }
            LuOp::Matinv { a, lda, inv, ldinv, info } => {
                let (Some(ma), Some(mi)) = (matrix(a, lda, n, "A"), matrix(inv, ldinv, n, "Ainv")) else { return };
                let mut copy = vec![T::zero(); (n * n) as usize];
                let lu = M { p: copy.as_mut_ptr(), ld: n as isize };
                for j in 0..n {
                    for r in 0..n {
                        lu.set(r, j, ma.get(r, j));
                    }
                }
                let mut piv = vec![0i32; n as usize];
                let z = getrf(lu, n, piv.as_mut_ptr());
                *info_at(info) = z;
                if z == 0 {
                    inverse(lu, n, piv.as_ptr(), mi);
                }
            }
        }
    }
}

/// Runs a checked batched LU call, one matrix per thread.
pub fn run(call: Lu) {
    let each = |i: i64| {
        // SAFETY: checked when the call was made (entries here).
        unsafe {
            match call.dtype {
                DType::F32 => one::<f32>(&call, i),
                DType::F64 => one::<f64>(&call, i),
                DType::C32 => one::<Complex32>(&call, i),
                DType::C64 => one::<Complex64>(&call, i),
                other => error!("batched LU on {other:?} is not supported"),
            }
        }
    };
    for_each_index(call.count, each);
}
