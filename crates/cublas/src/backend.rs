//! The seam between the API (argument checks, handles, pointer modes,
//! stream order) and the machine that computes. Every call arrives here
//! checked, with raw device addresses, dimensions and scalars; a backend
//! queues the work on the stream and returns.
//!
//! [`crate::cpu::Cpu`] computes on the host (device memory is host memory on
//! anycuda's CPU device). An AMD backend would implement the same trait by
//! forwarding each call to hipBLAS/rocBLAS (opened with `dlopen`) on the
//! HIP stream behind the CUDA stream.

use crate::cuda::{CUstream, Written};
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
    /// 8-bit integer inputs, 32-bit integer accumulation, scalars and
    /// output (`CUBLAS_COMPUTE_32I`).
    I32,
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

/// A stored matrix of any layout: element `(i, j)` is at
/// `ptr + (i * rs + j * cs) * size` (column-major: `rs = 1, cs = ld`;
/// row-major: `rs = ld, cs = 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub ptr: u64,
    pub rs: i64,
    pub cs: i64,
    pub dtype: DType,
}

impl View {
    pub fn col_major(ptr: u64, ld: i64, dtype: DType) -> View {
        View { ptr, rs: 1, cs: ld, dtype }
    }

    /// The bytes a `rows x cols` matrix of this layout spans (0 when
    /// empty).
    pub fn extent(&self, rows: i64, cols: i64) -> u64 {
        if rows <= 0 || cols <= 0 {
            return 0;
        }
        ((rows - 1) as u64 * self.rs as u64 + (cols - 1) as u64 * self.cs as u64 + 1) * self.dtype.size() as u64
    }

    /// The same layout at another address.
    pub fn at(self, ptr: u64) -> View {
        View { ptr, ..self }
    }
}

/// The point-wise function a matmul epilogue applies last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU in its tanh form: `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    Gelu,
}

/// A bias vector (one element per row of the result, packed), added to
/// every column before the activation.
#[derive(Debug, Clone, Copy)]
pub struct Bias {
    pub ptr: u64,
    pub dtype: DType,
    /// Elements from one batch entry's vector to the next.
    pub stride: i64,
}

/// Where an epilogue also stores the activation's input (`*_AUX`
/// epilogues): an `m x n` column-major matrix.
#[derive(Debug, Clone, Copy)]
pub struct Aux {
    pub ptr: u64,
    pub ld: i64,
    pub dtype: DType,
    /// Elements from one batch entry's matrix to the next.
    pub stride: i64,
}

/// What a matmul does to `alpha op(A) op(B) + beta C` before storing it:
/// add a bias, keep the sum, apply an activation.
#[derive(Debug, Clone, Copy)]
pub struct Epilogue {
    pub act: Activation,
    pub bias: Option<Bias>,
    pub aux: Option<Aux>,
}

impl Epilogue {
    pub const NONE: Epilogue = Epilogue { act: Activation::None, bias: None, aux: None };

    pub fn is_none(&self) -> bool {
        self.act == Activation::None && self.bias.is_none() && self.aux.is_none()
    }
}

/// Where each product of a matmul batch finds its matrices.
#[derive(Debug, Clone, Copy)]
pub enum MatmulBatch {
    /// Matrix `i` of each operand at its view's address plus `i` strides
    /// (elements).
    Strided { count: i64, a: i64, b: i64, c: i64, d: i64 },
    /// Matrix `i` of each operand at the address in entry `i` of an array
    /// in device memory (read when the work runs).
    Pointers { count: i64, a: u64, b: u64, c: u64, d: u64 },
}

impl MatmulBatch {
    pub fn count(self) -> i64 {
        match self {
            MatmulBatch::Strided { count, .. } | MatmulBatch::Pointers { count, .. } => count,
        }
    }
}

/// `D = epilogue(alpha op(A) op(B) + beta C)` for each product of the
/// batch (cuBLASLt's matmul; cuBLAS's GEMMs are the case `C = D`,
/// column-major, no epilogue). `C` is not read when `beta == 0`; `A` and
/// `B` are not read when `alpha == 0` or `k == 0`.
#[derive(Debug, Clone, Copy)]
pub struct Matmul {
    pub ta: Op,
    pub tb: Op,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub a: View,
    pub b: View,
    pub c: View,
    pub d: View,
    pub compute: Compute,
    pub batch: MatmulBatch,
    pub epilogue: Epilogue,
}

impl Matmul {
    /// The stored shapes `(rows, cols)` of A and B.
    pub fn stored_shapes(&self) -> ((i64, i64), (i64, i64)) {
        let a = if self.ta == Op::N { (self.m, self.k) } else { (self.k, self.m) };
        let b = if self.tb == Op::N { (self.k, self.n) } else { (self.n, self.k) };
        (a, b)
    }

    /// The cuBLAS GEMM `call` as a matmul.
    pub fn from_gemm(call: &Gemm) -> Matmul {
        let batch = match call.batch {
            Batch::One => MatmulBatch::Strided { count: 1, a: 0, b: 0, c: 0, d: 0 },
            Batch::Strided { count, a, b, c } => MatmulBatch::Strided { count, a, b, c, d: c },
            Batch::Pointers { count, a, b, c } => MatmulBatch::Pointers { count, a, b, c, d: c },
        };
        let c = View::col_major(call.c.ptr, call.c.ld, call.c.dtype);
        Matmul {
            ta: call.ta,
            tb: call.tb,
            m: call.m,
            n: call.n,
            k: call.k,
            alpha: call.alpha,
            beta: call.beta,
            a: View::col_major(call.a.ptr, call.a.ld, call.a.dtype),
            b: View::col_major(call.b.ptr, call.b.ld, call.b.dtype),
            c,
            d: c,
            compute: call.compute,
            batch,
            epilogue: Epilogue::NONE,
        }
    }
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

/// `C = alpha op(A) + beta op(B)`, all `m x n` after the operations.
/// `A` is not read when `alpha == 0`, `B` not when `beta == 0`. `C` may be
/// `A` (or `B`) itself when that operand is not transposed and has `C`'s
/// leading dimension.
#[derive(Debug, Clone, Copy)]
pub struct Geam {
    pub ta: Op,
    pub tb: Op,
    pub m: i64,
    pub n: i64,
    pub alpha: Scalar,
    pub a: Mat,
    pub beta: Scalar,
    pub b: Mat,
    pub c: Mat,
}

/// `C = A diag(x)` (`side` right: column `j` scaled by `x[j]`) or
/// `C = diag(x) A` (left: row `i` scaled by `x[i]`), `A` and `C` being
/// `m x n`; `x.inc` may be 0 (one scale for all). `C` may be `A` with the
/// same leading dimension.
#[derive(Debug, Clone, Copy)]
pub struct Dgmm {
    pub side: Side,
    pub m: i64,
    pub n: i64,
    pub a: Mat,
    pub x: Vector,
    pub c: Mat,
}

/// Which symmetric or Hermitian rank-k update (`op(X)` is `n x k`; only
/// the `fill` triangle of `C` is written):
/// - `Syrk`: `C = alpha op(A) op(A)^T + beta C`
/// - `Herk`: `C = alpha op(A) op(A)^H + beta C` (alpha, beta real)
/// - `Syr2k`: `C = alpha (op(A) op(B)^T + op(B) op(A)^T) + beta C`
/// - `Her2k`: `C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C`
///   (beta real)
/// - `Syrkx`: `C = alpha op(A) op(B)^T + beta C`
/// - `Herkx`: `C = alpha op(A) op(B)^H + beta C` (beta real)
///
/// The Hermitian ones leave the diagonal of `C` real (imaginary parts
/// zero), as BLAS does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankKind {
    Syrk,
    Herk,
    Syr2k,
    Her2k,
    Syrkx,
    Herkx,
}

impl RankKind {
    pub fn hermitian(self) -> bool {
        matches!(self, RankKind::Herk | RankKind::Her2k | RankKind::Herkx)
    }
    /// Whether the call passes a `B` (else `B` is `A`).
    pub fn has_b(self) -> bool {
        !matches!(self, RankKind::Syrk | RankKind::Herk)
    }
}

/// A rank-k update of the `n x n` matrix `C` (see [`RankKind`]); `op` is
/// `N` (`op(X) = X`, stored `n x k`) or `T`/`C` (stored `k x n`). `C` is
/// not read when `beta == 0`; `A` and `B` are not read when `alpha == 0`
/// or `k == 0`.
#[derive(Debug, Clone, Copy)]
pub struct RankK {
    pub kind: RankKind,
    pub fill: Fill,
    pub trans: Op,
    pub n: i64,
    pub k: i64,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub a: Mat,
    /// `A` again for `Syrk` and `Herk`.
    pub b: Mat,
    pub c: Mat,
}

/// The batched LU routines (`cublas<t>getrfBatched` and its kin) on a batch
/// of `count` small `n x n` matrices, each found through an array of
/// pointers in device memory (read when the work runs). Pivot arrays
/// (`n` 1-based row indices per matrix, packed; 0 for none: no pivoting)
/// and info arrays (one `int` per matrix) are in device memory.
#[derive(Debug, Clone, Copy)]
pub enum LuOp {
    /// `P A = L U` in place; `info[i] = j` when `U(j, j)` (1-based) is the
    /// first exactly zero pivot.
    Getrf { a: u64, lda: i64, piv: u64, info: u64 },
    /// `op(A) X = B` in place of `B` (`n x nrhs`), `A` holding the factors.
    Getrs { trans: Op, nrhs: i64, a: u64, lda: i64, piv: u64, b: u64, ldb: i64 },
    /// `C = A^-1` from the factors in `A`; `info[i] = j` for a zero `U(j, j)`
    /// (then `C` is not written).
    Getri { a: u64, lda: i64, piv: u64, c: u64, ldc: i64, info: u64 },
    /// `Ainv = A^-1` by a pivoted factorisation of a copy of `A`.
    Matinv { a: u64, lda: i64, inv: u64, ldinv: i64, info: u64 },
}

#[derive(Debug, Clone, Copy)]
pub struct Lu {
    pub op: LuOp,
    pub n: i64,
    pub count: i64,
    pub dtype: DType,
}

/// A machine that runs BLAS work in stream order.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    fn gemm(&self, q: Queue, call: Gemm) -> Result<()>;
    /// cuBLASLt's matmul (layouts, separate C and D, epilogues).
    fn matmul(&self, q: Queue, call: Matmul) -> Result<()>;
    fn trsm(&self, q: Queue, call: Trsm) -> Result<()>;
    fn level1(&self, q: Queue, n: i64, call: Level1) -> Result<()>;
    fn gemv(&self, q: Queue, call: Gemv) -> Result<()>;
    fn ger(&self, q: Queue, call: Ger) -> Result<()>;
    fn geam(&self, q: Queue, call: Geam) -> Result<()>;
    fn dgmm(&self, q: Queue, call: Dgmm) -> Result<()>;
    fn rankk(&self, q: Queue, call: RankK) -> Result<()>;
    fn lu(&self, q: Queue, call: Lu) -> Result<()>;
}

/// What an operation writes, for the memory checker ([`Driver::wrote`]):
/// the one owner of that fact per call type.
///
/// [`Driver::wrote`]: crate::cuda::Driver::wrote
pub trait Outputs {
    fn outputs(&self) -> Vec<Written>;
}

impl Outputs for Matmul {
    fn outputs(&self) -> Vec<Written> {
        let mut out = match self.batch {
            MatmulBatch::Strided { .. } => vec![Written::At(self.d.ptr)],
            MatmulBatch::Pointers { count, d, .. } => vec![Written::Each { array: d, count }],
        };
        if let Some(aux) = self.epilogue.aux {
            out.push(Written::At(aux.ptr));
        }
        out
    }
}

impl Outputs for Trsm {
    fn outputs(&self) -> Vec<Written> {
        match self.batch {
            Batch::Pointers { count, b, .. } => vec![Written::Each { array: b, count }],
            Batch::One | Batch::Strided { .. } => vec![Written::At(self.b.ptr)],
        }
    }
}

impl Outputs for (i64, Level1) {
    fn outputs(&self) -> Vec<Written> {
        match self.1 {
            Level1::Axpy { y, .. } | Level1::Copy { y, .. } => vec![Written::At(y.ptr)],
            Level1::Scal { x, .. } => vec![Written::At(x.ptr)],
            Level1::Swap { x, y } => vec![Written::At(x.ptr), Written::At(y.ptr)],
            Level1::Dot { out, .. } | Level1::Nrm2 { out, .. } | Level1::Asum { out, .. } | Level1::Iamax { out, .. } => {
                vec![Written::At(out.ptr)]
            }
        }
    }
}

impl Outputs for Gemv {
    fn outputs(&self) -> Vec<Written> {
        vec![Written::At(self.y.ptr)]
    }
}

impl Outputs for Ger {
    fn outputs(&self) -> Vec<Written> {
        vec![Written::At(self.a.ptr)]
    }
}

impl Outputs for Geam {
    fn outputs(&self) -> Vec<Written> {
        vec![Written::At(self.c.ptr)]
    }
}

impl Outputs for Dgmm {
    fn outputs(&self) -> Vec<Written> {
        vec![Written::At(self.c.ptr)]
    }
}

impl Outputs for RankK {
    fn outputs(&self) -> Vec<Written> {
        vec![Written::At(self.c.ptr)]
    }
}

impl Outputs for Lu {
    fn outputs(&self) -> Vec<Written> {
        let each = |array| Written::Each { array, count: self.count };
        match self.op {
            LuOp::Getrf { a, piv, info, .. } => vec![each(a), Written::At(piv), Written::At(info)],
            LuOp::Getrs { b, .. } => vec![each(b)],
            LuOp::Getri { c, info, .. } => vec![each(c), Written::At(info)],
            LuOp::Matinv { inv, info, .. } => vec![each(inv), Written::At(info)],
        }
    }
}
