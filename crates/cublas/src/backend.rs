//! The seam between the API (argument checks, handles, pointer modes,
//! stream order) and the machine that computes. Every call arrives here
//! checked, with raw device addresses, dimensions and scalars; a backend
//! queues the work on the stream and returns.
//!
//! [`crate::cpu::Cpu`] computes on the host (device memory is host memory on
//! anycuda's CPU device). An AMD backend would implement the same trait by
//! forwarding each call to hipBLAS/rocBLAS (opened with `dlopen`) on the
//! HIP stream behind the CUDA stream.

use crate::cuda::CUstream;
use crate::status::Result;
use crate::types::{DType, Fill, Op, Scalar, Side};

/// Where work goes: the handle's stream.
#[derive(Debug, Clone, Copy)]
pub struct Queue {
    pub stream: usize,
}

impl Queue {
    pub fn stream(self) -> CUstream {
        self.stream as CUstream
    }
}

/// A column-major matrix operand.
#[derive(Debug, Clone, Copy)]
pub struct Mat {
    pub ptr: u64,
    pub ld: i64,
    pub dtype: DType,
}

/// How many products a call makes, and where each one's matrices are.
#[derive(Debug, Clone, Copy)]
pub enum Batch {
    One,
    /// Matrix `i` of each operand is at its pointer plus `i` strides
    /// (elements).
    Strided {
        count: i64,
        a: i64,
        b: i64,
        c: i64,
    },
    /// Matrix `i` of each operand is at the address in entry `i` of an
    /// array in device memory (read when the work runs).
    Pointers {
        count: i64,
        a: u64,
        b: u64,
        c: u64,
    },
}

impl Batch {
    pub fn count(self) -> i64 {
        match self {
            Batch::One => 1,
            Batch::Strided { count, .. } | Batch::Pointers { count, .. } => count,
        }
    }
}

/// The arithmetic a product uses (16-bit inputs are widened to f32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    F32,
    F64,
    C32,
    C64,
}

/// `C = alpha op(A) op(B) + beta C`, for each matrix of the batch.
#[derive(Debug, Clone, Copy)]
pub struct Gemm {
    pub ta: Op,
    pub tb: Op,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub a: Mat,
    pub b: Mat,
    pub c: Mat,
    pub compute: Compute,
    pub batch: Batch,
}

/// `op(A) X = alpha B` (left) or `X op(A) = alpha B` (right), `X`
/// overwriting `B`, `A` triangular.
#[derive(Debug, Clone, Copy)]
pub struct Trsm {
    pub side: Side,
    pub fill: Fill,
    pub trans: Op,
    pub unit: bool,
    pub m: i64,
    pub n: i64,
    pub alpha: Scalar,
    pub a: Mat,
    pub b: Mat,
    /// `Batch::Pointers` (with `c` unused) or `Batch::One`.
    pub batch: Batch,
}

/// A strided vector: element `i` at `ptr + i * inc` (BLAS's convention
/// for negative increments is applied by the caller: `ptr` is element 0).
#[derive(Debug, Clone, Copy)]
pub struct Vector {
    pub ptr: u64,
    pub inc: i64,
    pub dtype: DType,
}

/// Where a reduction's result goes.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    pub ptr: u64,
    pub dtype: OutType,
}

/// A result's type: a floating-point value or a 1-based index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutType {
    Value(DType),
    Index32,
    Index64,
}

/// The level-1 operations, on `n` elements.
#[derive(Debug, Clone, Copy)]
pub enum Level1 {
    Axpy {
        alpha: Scalar,
        x: Vector,
        y: Vector,
    },
    Scal {
        alpha: Scalar,
        x: Vector,
    },
    Copy {
        x: Vector,
        y: Vector,
    },
    Swap {
        x: Vector,
        y: Vector,
    },
    Dot {
        x: Vector,
        y: Vector,
        conj: bool,
        out: Out,
    },
    Nrm2 {
        x: Vector,
        out: Out,
    },
    Asum {
        x: Vector,
        out: Out,
    },
    /// `iamax` (`min` false) or `iamin`.
    Iamax {
        x: Vector,
        min: bool,
        out: Out,
    },
}

/// `y = alpha op(A) x + beta y`, `A` being `m x n`.
#[derive(Debug, Clone, Copy)]
pub struct Gemv {
    pub trans: Op,
    pub m: i64,
    pub n: i64,
    pub alpha: Scalar,
    pub a: Mat,
    pub x: Vector,
    pub beta: Scalar,
    pub y: Vector,
}

/// `A = alpha x y^T + A` (`y^H` when `conj`), `A` being `m x n`.
#[derive(Debug, Clone, Copy)]
pub struct Ger {
    pub m: i64,
    pub n: i64,
    pub alpha: Scalar,
    pub x: Vector,
    pub y: Vector,
    pub a: Mat,
    pub conj: bool,
}

/// A machine that runs BLAS work in stream order.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    fn gemm(&self, q: Queue, call: Gemm) -> Result<()>;
    fn trsm(&self, q: Queue, call: Trsm) -> Result<()>;
    fn level1(&self, q: Queue, n: i64, call: Level1) -> Result<()>;
    fn gemv(&self, q: Queue, call: Gemv) -> Result<()>;
    fn ger(&self, q: Queue, call: Ger) -> Result<()>;
}
