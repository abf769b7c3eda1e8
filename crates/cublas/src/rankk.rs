//! The CPU rank-k updates (`syrk`, `herk`, `syr2k`, `her2k`, `syrkx`,
//! `herkx`): the named triangle of `C` is cut into panels of `PANEL` rows
//! or columns ([`panels`]). Each panel is one full block off the diagonal,
//! which one product of the `gemm` crate computes straight into `C` with
//! `beta`, and a triangle on the diagonal, split in halves recursively
//! (a full block between the halves) down to diagonal blocks of at most
//! `BLOCK` columns, which are computed whole into a scratch block and
//! merged into their part of the triangle. With several threads the
//! panels run in parallel, each product on one thread. The other triangle
//! is never touched, `C` is not read when `beta == 0`.

use gemm::Parallelism;
use num_complex::{Complex32, Complex64};
use rayon::prelude::*;

use crate::backend::{RankK, RankKind};
use crate::cpu::{par, Elem};
use crate::log::error;
use crate::types::{DType, Fill, Op};

/// Rows or columns of a panel. DSYRK 1024 x 1024 on the 2-vCPU
/// development machine (measured as in [`panels`]), panels of 96, 128, 192
/// and 256 were within the noise of each other (0.93-1.22x OpenBLAS, one
/// run of each); 128 leaves 8 panels at n = 1024, which two threads share
/// evenly.
const PANEL: i64 = 128;

/// Columns of the diagonal blocks, the only products that compute
/// elements outside the triangle (half of each block): `n BLOCK / 2`
/// wasted multiply-adds per `k`: 6% of the triangle's at n = 1024 (12%
/// with blocks of 128).
const BLOCK: i64 = 64;

/// A block of `C`: rows `r0..r0 + m`, columns `c0..c0 + nb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub r0: i64,
    pub m: i64,
    pub c0: i64,
    pub nb: i64,
}

/// One panel of a triangle: its full block off the diagonal (possibly
/// empty) and its part of the diagonal, the triangle of rows and columns
/// `j0..j1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Panel {
    pub off: Rect,
    pub j0: i64,
    pub j1: i64,
}

/// The panels of the lower (or upper) triangle of an `n x n` matrix, of
/// `PANEL` rows each when `by_rows`, else of `PANEL` columns, the one with
/// the largest block off the diagonal first.
///
/// Invariant: the blocks off the diagonal and the panels' diagonal
/// triangles (rows and columns `j0..j1`, `i >= j` for lower, `i <= j` for
/// upper) cover each element of the named triangle exactly once and no
/// element outside it.
///
/// Which way a panel runs decides which operand of its product is small:
/// a panel of rows multiplies its `PANEL` rows of `op(X)` by all the rows
/// before (lower) or after (upper) it, a panel of columns the other way
/// round. The `gemm` crate packs a left operand stored with its elements
/// along `k` adjacent (`op(X)` row-major: A transposed) by gathering, and
/// packs a right operand whose elements along `k` are not adjacent
/// (`op(Y)^T` for a column-major `op(Y)`: A not transposed); the other
/// operand it reads where it lies. The caller picks the way that leaves
/// the gathered operand the panel's own rows. DSYRK 1024 x 1024 as
/// panels of the `gemm` crate's products called directly, two threads,
/// against `cblas_dsyrk` in the same runs: A transposed 1.02-1.05x by rows
/// against 0.87-0.89x by columns; A not transposed 0.96-0.97x by columns
/// against 0.87-0.88x by rows.
pub(crate) fn panels(n: i64, lower: bool, by_rows: bool) -> Vec<Panel> {
    let mut out: Vec<Panel> = (0..(n.max(0) + PANEL - 1) / PANEL)
        .map(|p| {
            let (s0, s1) = (p * PANEL, ((p + 1) * PANEL).min(n));
            let off = match (lower, by_rows) {
                // Rows s0..s1, the columns left of the diagonal.
                (true, true) => Rect { r0: s0, m: s1 - s0, c0: 0, nb: s0 },
                // Columns s0..s1, the rows below the diagonal.
                (true, false) => Rect { r0: s1, m: n - s1, c0: s0, nb: s1 - s0 },
                // Rows s0..s1, the columns right of the diagonal.
                (false, true) => Rect { r0: s0, m: s1 - s0, c0: s1, nb: n - s1 },
                // Columns s0..s1, the rows above the diagonal.
                (false, false) => Rect { r0: 0, m: s0, c0: s0, nb: s1 - s0 },
            };
            Panel { off, j0: s0, j1: s1 }
        })
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.off.m * p.off.nb));
    out
}

/// `v` with its imaginary part zeroed (the diagonal of a Hermitian result).
fn real_part<T: Elem>(v: T) -> T {
    T::from_c64(Complex64::new(v.to_c64().re, 0.0))
}

/// One operand of the products: `op(X)` (`n x k`), element `(i, p)` at
/// `ptr + i rs + p cs`.
#[derive(Clone, Copy)]
struct Factor<T> {
    ptr: *const T,
    rs: isize,
    cs: isize,
}

/// A checked rank-k update in its arithmetic's type, shared by the
/// panels' tasks.
struct Update<T> {
    c: *mut T,
    ldc: isize,
    k: usize,
    lower: bool,
    herm: bool,
    /// Whether the update has a product at all (`k > 0`, `alpha != 0`).
    product: bool,
    /// syr2k/her2k: a second term with the operands exchanged.
    two: bool,
    x: Factor<T>,
    y: Factor<T>,
    /// `op(X)` conjugated (op is the conjugate transpose).
    conj_left: bool,
    /// The right factor `op(Y)^T` (`op(Y)^H` when Hermitian) conjugated.
    conj_right: bool,
    alpha: T,
    /// her2k's second term takes conj(alpha).
    alpha2: T,
    beta: T,
    beta_zero: bool,
}

// SAFETY: the panels' tasks read A and B and write disjoint elements of C.
unsafe impl<T> Send for Update<T> {}
unsafe impl<T> Sync for Update<T> {}

impl<T: Elem> Update<T> {
    /// `dst = f dst + s L R` for rows `r0..r0 + m` of the left factor `l`
    /// and columns `c0..c0 + nb` of the right factor `r^T` (dst, `m x nb`
    /// with leading dimension `ldd`, read only when `read`).
    ///
    /// # Safety
    /// `dst` holds `m x nb`; the rows lie in the checked operands.
    #[allow(clippy::too_many_arguments)]
    unsafe fn term(&self, dst: *mut T, ldd: isize, read: bool, f: T, s: T, l: Factor<T>, r: Factor<T>, b: Rect, par: Parallelism) {
        // SAFETY: the caller's promise.
        unsafe {
            gemm::gemm::<T>(
                b.m as usize,
                b.nb as usize,
                self.k,
                dst,
                ldd,
                1,
                read,
                l.ptr.offset(b.r0 as isize * l.rs),
                l.cs,
                l.rs,
                // The right factor's element (p, j) is op(Y)(j, p): its row
                // stride is op(Y)'s column stride.
                r.ptr.offset(b.c0 as isize * r.rs),
                r.rs,
                r.cs,
                f,
                s,
                false,
                self.conj_left,
                self.conj_right,
                par,
            )
        }
    }

    /// The block `b` of C, all of it in the triangle.
    ///
    /// # Safety
    /// `b` lies in the checked C.
    unsafe fn block(&self, b: Rect, par: Parallelism) {
        if b.m <= 0 || b.nb <= 0 {
            return;
        }
        // SAFETY (block): a block of the checked C.
        unsafe {
            let dst = self.c.offset(b.r0 as isize + b.c0 as isize * self.ldc);
            if self.product {
                self.term(dst, self.ldc, !self.beta_zero, self.beta, self.alpha, self.x, self.y, b, par);
                if self.two {
                    self.term(dst, self.ldc, true, T::one(), self.alpha2, self.y, self.x, b, par);
                }
                return;
            }
            for j in 0..b.nb {
                for i in 0..b.m {
                    let e = dst.offset(i as isize + j as isize * self.ldc);
                    *e = if self.beta_zero { T::zero() } else { self.beta * *e };
                }
            }
        }
    }

    /// The square diagonal block `j0..j1`: computed whole into the scratch
    /// `w`, then merged into its part of the triangle with beta.
    ///
    /// # Safety
    /// `j0..j1` lies in the checked C.
    unsafe fn diagonal(&self, j0: i64, j1: i64, w: &mut Vec<T>, par: Parallelism) {
        let nb = (j1 - j0) as usize;
        let whole = Rect { r0: j0, m: j1 - j0, c0: j0, nb: j1 - j0 };
        // SAFETY (block): the scratch holds nb x nb; the elements lie in
        // the checked C.
        unsafe {
            if self.product {
                w.clear();
                w.resize(nb * nb, T::zero());
                self.term(w.as_mut_ptr(), nb as isize, false, T::one(), self.alpha, self.x, self.y, whole, par);
                if self.two {
                    self.term(w.as_mut_ptr(), nb as isize, true, T::one(), self.alpha2, self.y, self.x, whole, par);
                }
            }
            for j in j0..j1 {
                let (i0, i1) = if self.lower { (j, j1) } else { (j0, j + 1) };
                for i in i0..i1 {
                    let e = self.c.offset(i as isize + j as isize * self.ldc);
                    let mut v = if self.product { w[(i - j0) as usize + (j - j0) as usize * nb] } else { T::zero() };
                    if !self.beta_zero {
                        v = v + self.beta * *e;
                    }
                    if self.herm && i == j {
                        v = real_part(v);
                    }
                    *e = v;
                }
            }
        }
    }

    /// The triangle of rows and columns `j0..j1` in halves, recursively:
    /// each split leaves two smaller triangles and one full block between
    /// them (a plain product straight into C), down to diagonal blocks of
    /// at most BLOCK columns.
    ///
    /// # Safety
    /// `j0..j1` lies in the checked C.
    unsafe fn triangle(&self, j0: i64, j1: i64, par: Parallelism) {
        let mut w: Vec<T> = Vec::new();
        let mut stack = vec![(j0, j1)];
        while let Some((j0, j1)) = stack.pop() {
            if j1 - j0 <= BLOCK {
                // SAFETY: a part of j0..j1, the caller's promise.
                unsafe { self.diagonal(j0, j1, &mut w, par) };
                continue;
            }
            let mid = j0 + ((j1 - j0) / 2 + BLOCK - 1) / BLOCK * BLOCK;
            let (h1, h2) = (mid - j0, j1 - mid);
            let between = if self.lower { Rect { r0: mid, m: h2, c0: j0, nb: h1 } } else { Rect { r0: j0, m: h1, c0: mid, nb: h2 } };
            // SAFETY: a part of j0..j1, the caller's promise.
            unsafe { self.block(between, par) };
            stack.push((j0, mid));
            stack.push((mid, j1));
        }
    }

    /// One panel: its block off the diagonal, then its triangle.
    ///
    /// # Safety
    /// The panel lies in the checked C.
    unsafe fn panel(&self, p: &Panel, par: Parallelism) {
        // SAFETY: the caller's promise.
        unsafe {
            self.block(p.off, par);
            self.triangle(p.j0, p.j1, par);
        }
    }
}

/// # Safety
/// The operands were checked for the call's shapes when it was made.
unsafe fn rankk_typed<T: Elem>(call: &RankK, par: Parallelism) {
    let zero = Complex64::new(0.0, 0.0);
    let one = Complex64::new(1.0, 0.0);
    // SAFETY (block): device scalars checked when the call was made.
    let (alpha, beta) = unsafe { (call.alpha.get(), call.beta.get()) };
    let herm = call.kind.hermitian();
    let product = call.k > 0 && alpha != zero;
    if !product && beta == one {
        // BLAS's quick return: C is left exactly as it is.
        return;
    }
    // op(X) (n x k): element (i, p) at x + i rs + p cs; conjugated when
    // op is the conjugate transpose.
    let factor = |ptr: u64, ld: i64| {
        let (rs, cs) = if call.trans == Op::N { (1, ld as isize) } else { (ld as isize, 1) };
        Factor { ptr: ptr as *const T, rs, cs }
    };
    let conj_left = call.trans == Op::C;
    let u = Update {
        c: call.c.ptr as *mut T,
        ldc: call.c.ld as isize,
        k: call.k as usize,
        lower: call.fill == Fill::Lower,
        herm,
        product,
        two: matches!(call.kind, RankKind::Syr2k | RankKind::Her2k),
        x: factor(call.a.ptr, call.a.ld),
        y: factor(call.b.ptr, call.b.ld),
        conj_left,
        // The right factor is op(Y)^T (op(Y)^H when Hermitian): element
        // (p, j) is op(Y)(j, p), conjugated once more when Hermitian.
        conj_right: conj_left != herm,
        alpha: T::from_c64(alpha),
        alpha2: T::from_c64(if herm { alpha.conj() } else { alpha }),
        beta: T::from_c64(beta),
        beta_zero: beta == zero,
    };
    // Panels of rows when op(A)'s rows are its stored columns (A
    // transposed), else of columns (see `panels`).
    let list = panels(call.n, u.lower, call.trans != Op::N);
    let threads = rayon::current_num_threads();
    // SAFETY (block): the panels cover the checked triangle.
    unsafe {
        if threads > 1 && list.len() >= 2 * threads {
            // At least two panels a thread: the largest go first, and the
            // last, smallest ones even out what is left.
            let u = &u;
            list.par_iter().with_max_len(1).for_each(|p| u.panel(p, Parallelism::None));
        } else {
            for p in &list {
                u.panel(p, par);
            }
        }
    }
}

/// Runs a checked rank-k update.
pub fn run(call: RankK) {
    if call.n == 0 {
        return;
    }
    let work = call.n.saturating_mul(call.n).saturating_mul(call.k.max(1));
    crate::cpu::on_worker_if_large(work, || run_here(call));
}

fn run_here(call: RankK) {
    // SAFETY: the operands were checked when the call was made.
    unsafe {
        match call.c.dtype {
            DType::F32 => rankk_typed::<f32>(&call, par()),
            DType::F64 => rankk_typed::<f64>(&call, par()),
            DType::C32 => rankk_typed::<Complex32>(&call, par()),
            DType::C64 => rankk_typed::<Complex64>(&call, par()),
            other => error!("rank-k update on {other:?} is not supported"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of the named triangle is covered once by the panels'
    /// blocks and diagonal triangles, nothing outside it is, and the
    /// largest blocks come first: for sizes below, at and around whole
    /// panels, both triangles, both ways.
    #[test]
    fn panels_cover_the_triangle_once() {
        for n in [0i64, 1, 5, 63, 64, 65, 127, 128, 129, 255, 256, 300, 513, 1024] {
            for lower in [true, false] {
                for by_rows in [true, false] {
                    let list = panels(n, lower, by_rows);
                    let what = format!("n={n} lower={lower} by_rows={by_rows}");
                    let nu = n as usize;
                    let mut count = vec![0u32; nu * nu];
                    for p in &list {
                        let b = p.off;
                        for j in b.c0..b.c0 + b.nb {
                            for i in b.r0..b.r0 + b.m {
                                count[i as usize + j as usize * nu] += 1;
                            }
                        }
                        for j in p.j0..p.j1 {
                            for i in p.j0..p.j1 {
                                if (lower && i >= j) || (!lower && i <= j) {
                                    count[i as usize + j as usize * nu] += 1;
                                }
                            }
                        }
                    }
                    for j in 0..nu {
                        for i in 0..nu {
                            let inside = if lower { i >= j } else { i <= j };
                            assert_eq!(count[i + j * nu], u32::from(inside), "{what}: ({i}, {j})");
                        }
                    }
                    let work: Vec<i64> = list.iter().map(|p| p.off.m * p.off.nb).collect();
                    assert!(work.windows(2).all(|w| w[0] >= w[1]), "{what}: not largest first: {work:?}");
                    assert_eq!(list.len() as i64, (n + PANEL - 1) / PANEL, "{what}");
                }
            }
        }
    }
}
