//! The CPU rank-k updates (`syrk`, `herk`, `syr2k`, `her2k`, `syrkx`,
//! `herkx`): the named triangle of `C` is split in halves recursively,
//! each split leaving a full block below (or above) the diagonal, which
//! one product of the `gemm` crate computes straight into `C` with
//! `beta`, down to diagonal blocks of at most `BLOCK` columns, which are
//! computed whole into a scratch block and merged into their part of the
//! triangle. The other triangle is never touched, `C` is not read when
//! `beta == 0`.

use gemm::Parallelism;
use num_complex::{Complex32, Complex64};

use crate::backend::{RankK, RankKind};
use crate::cpu::{par, Elem};
use crate::log::error;
use crate::types::{DType, Fill, Op};

/// Columns of the diagonal blocks, the only products that compute
/// elements outside the triangle (half of each block).
const BLOCK: i64 = 128;

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
    // One product into `(dst, ldd)`: rows r0.. (m of them) of op(X) times
    // columns c0.. (nb) of op(Y)^T, `dst = f dst + s product` (dst read
    // only when `read`).
    #[allow(clippy::too_many_arguments)]
    let term = |dst: *mut T,
                ldd: isize,
                read: bool,
                f: T,
                r0: i64,
                m: usize,
                c0: i64,
                nb: usize,
                x: *const T,
                xrs: isize,
                xcs: isize,
                y: *const T,
                yrs: isize,
                ycs: isize,
                s: T| {
        // SAFETY: the rows and columns lie in the checked matrices; dst
        // holds m x nb.
        unsafe {
            gemm::gemm::<T>(
                m,
                nb,
                k as usize,
                dst,
                ldd,
                1,
                read,
                x.offset(r0 as isize * xrs),
                xcs,
                xrs,
                y.offset(c0 as isize * yrs),
                yrs,
                ycs,
                f,
                s,
                false,
                conj_op,
                conj_right,
                par,
            )
        }
    };
    let two = matches!(call.kind, RankKind::Syr2k | RankKind::Her2k);
    // `m x nb` at rows r0, columns c0 of C: all of it in the triangle.
    let block = |r0: i64, m: usize, c0: i64, nb: usize| {
        // SAFETY: a block of the checked C.
        let dst = unsafe { c.offset(r0 as isize + c0 as isize * ldc) };
        if product {
            // op(A) op(B)^T: rhs element (p, j) = op(B)(j, p), so its row
            // stride is op(B)'s column stride.
            term(dst, ldc, !beta_zero, be, r0, m, c0, nb, a, rs, cs, b, brs, bcs, al);
            if two {
                term(dst, ldc, true, T::one(), r0, m, c0, nb, b, brs, bcs, a, rs, cs, al2);
            }
        } else {
            for j in 0..nb {
                for i in 0..m {
                    // SAFETY: element (i, j) of the block.
                    unsafe {
                        let e = dst.offset(i as isize + j as isize * ldc);
                        *e = if beta_zero { T::zero() } else { be * *e };
                    }
                }
            }
        }
    };
    let mut w: Vec<T> = Vec::new();
    // The square diagonal block j0..j1: computed whole into a scratch
    // block, then merged into its part of the triangle with beta.
    let mut diagonal = |j0: i64, j1: i64| {
        let nb = (j1 - j0) as usize;
        if product {
            w.clear();
            w.resize(nb * nb, T::zero());
            term(w.as_mut_ptr(), nb as isize, false, T::one(), j0, nb, j0, nb, a, rs, cs, b, brs, bcs, al);
            if two {
                term(w.as_mut_ptr(), nb as isize, true, T::one(), j0, nb, j0, nb, b, brs, bcs, a, rs, cs, al2);
            }
        }
        for j in j0..j1 {
            let (i0, i1) = if lower { (j, j1) } else { (j0, j + 1) };
            for i in i0..i1 {
                // SAFETY: element (i, j) of the checked C.
                unsafe {
                    let e = c.offset(i as isize + j as isize * ldc);
                    let mut v = if product { w[(i - j0) as usize + (j - j0) as usize * nb] } else { T::zero() };
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
    };
    // The triangle in halves, recursively: each split leaves two smaller
    // triangles and one full block between them (a plain product straight
    // into C), down to diagonal blocks of at most BLOCK columns.
    let mut stack = vec![(0, n)];
    while let Some((j0, j1)) = stack.pop() {
        if j1 - j0 <= BLOCK {
            diagonal(j0, j1);
            continue;
        }
        let mid = j0 + ((j1 - j0) / 2 + BLOCK - 1) / BLOCK * BLOCK;
        let (h1, h2) = ((mid - j0) as usize, (j1 - mid) as usize);
        if lower {
            block(mid, h2, j0, h1);
        } else {
            block(j0, h1, mid, h2);
        }
        stack.push((j0, mid));
        stack.push((mid, j1));
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
