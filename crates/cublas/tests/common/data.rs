//! Host-side matrices in every element type, and the reference product.
#![allow(dead_code)]

use half::{bf16, f16};
use num_complex::Complex64 as C64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum T {
    H,
    BF,
    S,
    D,
    C,
    Z,
    /// 8-bit and 32-bit integers.
    I8,
    I32,
}

impl T {
    pub fn size(self) -> usize {
        match self {
            T::I8 => 1,
            T::H | T::BF => 2,
            T::S | T::I32 => 4,
            T::D | T::C => 8,
            T::Z => 16,
        }
    }
    pub fn complex(self) -> bool {
        matches!(self, T::C | T::Z)
    }
    /// `cudaDataType`.
    pub fn cuda(self) -> i32 {
        match self {
            T::H => 2,
            T::BF => 14,
            T::S => 0,
            T::D => 1,
            T::C => 4,
            T::Z => 5,
            T::I8 => 3,
            T::I32 => 10,
        }
    }
    /// Unit roundoff of the type's storage.
    pub fn eps(self) -> f64 {
        match self {
            T::H => 2f64.powi(-11),
            T::BF => 2f64.powi(-8),
            T::S | T::C => 2f64.powi(-24),
            T::D | T::Z => 2f64.powi(-53),
            T::I8 | T::I32 => 0.0,
        }
    }
    pub fn encode(self, v: &[C64]) -> Vec<u8> {
        let mut out = Vec::with_capacity(v.len() * self.size());
        for x in v {
            match self {
                T::H => out.extend_from_slice(&f16::from_f64(x.re).to_le_bytes()),
                T::BF => out.extend_from_slice(&bf16::from_f64(x.re).to_le_bytes()),
                T::S => out.extend_from_slice(&(x.re as f32).to_le_bytes()),
                T::D => out.extend_from_slice(&x.re.to_le_bytes()),
                T::C => {
                    out.extend_from_slice(&(x.re as f32).to_le_bytes());
                    out.extend_from_slice(&(x.im as f32).to_le_bytes());
                }
                T::Z => {
                    out.extend_from_slice(&x.re.to_le_bytes());
                    out.extend_from_slice(&x.im.to_le_bytes());
                }
                T::I8 => out.push(x.re as i8 as u8),
                T::I32 => out.extend_from_slice(&(x.re as i32).to_le_bytes()),
            }
        }
        out
    }
    pub fn decode(self, b: &[u8]) -> Vec<C64> {
        b.chunks(self.size())
            .map(|c| match self {
                T::H => C64::new(f16::from_le_bytes([c[0], c[1]]).to_f64(), 0.0),
                T::BF => C64::new(bf16::from_le_bytes([c[0], c[1]]).to_f64(), 0.0),
                T::S => C64::new(f32::from_le_bytes(c.try_into().unwrap()) as f64, 0.0),
                T::D => C64::new(f64::from_le_bytes(c.try_into().unwrap()), 0.0),
                T::C => {
                    C64::new(f32::from_le_bytes(c[..4].try_into().unwrap()) as f64, f32::from_le_bytes(c[4..].try_into().unwrap()) as f64)
                }
                T::Z => C64::new(f64::from_le_bytes(c[..8].try_into().unwrap()), f64::from_le_bytes(c[8..].try_into().unwrap())),
                T::I8 => C64::new(c[0] as i8 as f64, 0.0),
                T::I32 => C64::new(i32::from_le_bytes(c.try_into().unwrap()) as f64, 0.0),
            })
            .collect()
    }
    /// `v` as stored in this type.
    pub fn round(self, v: C64) -> C64 {
        self.decode(&self.encode(&[v]))[0]
    }
    /// Random values, exactly representable in this type.
    pub fn random(self, n: usize, rng: &mut super::Rng) -> Vec<C64> {
        let scale = match self {
            T::I8 => 128.0,
            T::I32 => 1000.0,
            _ => 1.0,
        };
        (0..n)
            .map(|_| {
                let re = rng.next() * scale;
                let re = if scale > 1.0 { re.floor() } else { re };
                self.round(C64::new(re, if self.complex() { rng.next() } else { 0.0 }))
            })
            .collect()
    }
}

/// `cublasOperation_t`.
pub const OPS: [i32; 3] = [0, 1, 2];

/// Element (i, j) of op(X), X stored column-major with leading dimension ld.
pub fn op_at(x: &[C64], ld: usize, op: i32, i: usize, j: usize) -> C64 {
    match op {
        0 => x[i + j * ld],
        1 => x[j + i * ld],
        _ => x[j + i * ld].conj(),
    }
}

/// The reference product with f64 accumulation, and for each element the
/// bound of the error a correct implementation can make: accumulating `k`
/// products in arithmetic of unit roundoff `u` (f32 for 16-bit inputs)
/// errs by at most about `k u sum|a||b|` (the standard dot-product bound,
/// with a small constant for complex arithmetic), scaling by alpha and
/// adding beta C adds `u (|alpha ab| + |beta c|)`, and storing the result
/// rounds once more by `eps_out |result|`.
#[allow(clippy::too_many_arguments)]
pub fn reference(
    m: usize,
    n: usize,
    k: usize,
    alpha: C64,
    a: &[C64],
    lda: usize,
    ta: i32,
    b: &[C64],
    ldb: usize,
    tb: i32,
    beta: C64,
    c: &[C64],
    ldc: usize,
    u: f64,
    eps_out: f64,
) -> Vec<(C64, f64)> {
    let mut out = Vec::with_capacity(m * n);
    for j in 0..n {
        for i in 0..m {
            let mut s = C64::new(0.0, 0.0);
            let mut mag = 0.0;
            for p in 0..k {
                let x = op_at(a, lda, ta, i, p);
                let y = op_at(b, ldb, tb, p, j);
                s += x * y;
                mag += x.norm() * y.norm();
            }
            let cij = if beta == C64::new(0.0, 0.0) { C64::new(0.0, 0.0) } else { beta * c[i + j * ldc] };
            let r = alpha * s + cij;
            let tol = (2.0 * k as f64 + 4.0) * u * (alpha.norm() * mag + cij.norm()) + 2.0 * eps_out * r.norm() + 1e-300;
            out.push((r, tol));
        }
    }
    out
}
