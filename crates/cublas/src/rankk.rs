//! The CPU rank-k updates (`syrk`, `herk`, `syr2k`, `her2k`, `syrkx`,
//! `herkx`): the products run on the `gemm` crate one block of columns
//! at a time, each block computing only the rows its part of the named
//! triangle needs (about half the work of the full square), into a
//! scratch block that is then merged into that triangle of `C` with
//! `beta`. The other triangle is never touched, `C` is not read when
//! `beta == 0`.

use gemm::Parallelism;
use num_complex::{Complex32, Complex64};

use crate::backend::{RankK, RankKind};
use crate::cpu::{par, Elem};
use crate::log::error;
use crate::types::{DType, Fill, Op};

/// Columns of `C` one product computes.
const BLOCK: i64 = 192;

/// `v` with its imaginary part zeroed (the diagonal of a Hermitian result).
fn real_part<T: Elem>(v: T) -> T {
    T::from_c64(Complex64::new(v.to_c64().re, 0.0))
}

/// # Safety
/// The operands were checked for the call's shapes when it was made.
unsafe fn rankk_typed<T: Elem>(call: &RankK, par: Parallelism) {
    let zero = Complex64::new(0.0, 0.0);
    let one = Complex64::new(1.0, 0.0);
    // SAFETY (block): device scalars checked when the call was made.
    let (alpha, beta) = unsafe { (call.alpha.get(), call.beta.get()) };
    let (n, k) = (call.n, call.k);
    let herm = call.kind.hermitian();
    let product = k > 0 && alpha != zero;
    if !product && beta == one {
        // BLAS's quick return: C is left exactly as it is.
        return;
    }
    let c = call.c.ptr as *mut T;
    let ldc = call.c.ld as isize;
    let lower = call.fill == Fill::Lower;
    // op(X) (n x k): element (i, p) at x + i rs + p cs; conjugated when
    // op is the conjugate transpose.
    let (rs, cs): (isize, isize) = if call.trans == Op::N { (1, call.a.ld as isize) } else { (call.a.ld as isize, 1) };
    let (brs, bcs): (isize, isize) = if call.trans == Op::N { (1, call.b.ld as isize) } else { (call.b.ld as isize, 1) };
    let conj_op = call.trans == Op::C;
    // The right factor is op(Y)^T (op(Y)^H when Hermitian): element (p, j)
    // is op(Y)(j, p), conjugated once more when Hermitian.
    let conj_right = conj_op != herm;
    let (a, b) = (call.a.ptr as *const T, call.b.ptr as *const T);
    let al = T::from_c64(alpha);
    // her2k's second term takes conj(alpha).
    let al2 = T::from_c64(if herm { alpha.conj() } else { alpha });
    let be = T::from_c64(beta);
    let beta_zero = beta == zero;
    let mut w: Vec<T> = Vec::new();
    let mut j0 = 0;
    while j0 < n {
        let j1 = (j0 + BLOCK).min(n);
        let nb = (j1 - j0) as usize;
        // Rows of the triangle in columns j0..j1.
        let (r0, r1) = if lower { (j0, n) } else { (0, j1) };
        let rows = (r1 - r0) as usize;
        if product {
            w.clear();
            w.resize(rows * nb, T::zero());
            // SAFETY: the rows r0..r1 of op(X) and the columns j0..j1 of
            // op(Y)^T lie in the checked matrices; w is rows x nb.
            unsafe {
                let term = |x: *const T, xrs: isize, xcs: isize, y: *const T, yrs: isize, ycs: isize, s: T, acc: bool, w: &mut [T]| {
                    gemm::gemm::<T>(
                        rows,
                        nb,
                        k as usize,
                        w.as_mut_ptr(),
                        rows as isize,
                        1,
                        acc,
                        x.offset(r0 as isize * xrs),
                        xcs,
                        xrs,
                        y.offset(j0 as isize * yrs),
                        yrs,
                        ycs,
                        T::one(),
                        s,
                        false,
                        conj_op,
                        conj_right,
                        par,
                    )
                };
                // op(A) op(B)^T: rhs element (p, j) = op(B)(j, p), so its
                // row stride is op(B)'s column stride.
                term(a, rs, cs, b, brs, bcs, al, false, &mut w);
                if matches!(call.kind, RankKind::Syr2k | RankKind::Her2k) {
                    term(b, brs, bcs, a, rs, cs, al2, true, &mut w);
                }
            }
        }
        for j in j0..j1 {
            let (i0, i1) = if lower { (j, n) } else { (0, j + 1) };
            for i in i0..i1 {
                // SAFETY: element (i, j) of the checked C.
                unsafe {
                    let e = c.offset(i as isize + j as isize * ldc);
                    let mut v = if product { w[(i - r0) as usize + (j - j0) as usize * rows] } else { T::zero() };
                    if !beta_zero {
                        v = v + be * *e;
                    }
                    if herm && i == j {
                        v = real_part(v);
                    }
                    *e = v;
                }
            }
        }
        j0 = j1;
    }
}

/// Runs a checked rank-k update.
pub fn run(call: RankK) {
    if call.n == 0 {
        return;
    }
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
