//! Element types, operations and scalars as the API passes them.

use half::{bf16, f16};
use num_complex::{Complex32, Complex64};

use crate::status::{Error, Result};

/// `cudaDataType` values this library computes with.
pub const CUDA_R_32F: i32 = 0;
pub const CUDA_R_64F: i32 = 1;
pub const CUDA_R_16F: i32 = 2;
pub const CUDA_R_8I: i32 = 3;
pub const CUDA_C_32F: i32 = 4;
pub const CUDA_C_64F: i32 = 5;
pub const CUDA_C_16F: i32 = 6;
pub const CUDA_R_32I: i32 = 10;
pub const CUDA_R_16BF: i32 = 14;
pub const CUDA_C_16BF: i32 = 15;

/// Element type of a matrix or vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F16,
    BF16,
    F32,
    F64,
    C32,
    C64,
    /// 8-bit integers (the inputs of integer products).
    I8,
    /// 32-bit integers (their accumulator, output and scalars).
    I32,
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::I8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::C32 => 8,
            DType::C64 => 16,
        }
    }

    pub fn is_complex(self) -> bool {
        matches!(self, DType::C32 | DType::C64)
    }

    /// From a `cudaDataType`; other types are not supported (yet).
    pub fn from_cuda(t: i32) -> Result<DType> {
        Ok(match t {
            CUDA_R_16F => DType::F16,
            CUDA_R_16BF => DType::BF16,
            CUDA_R_32F => DType::F32,
            CUDA_R_64F => DType::F64,
            CUDA_C_32F => DType::C32,
            CUDA_C_64F => DType::C64,
            CUDA_R_8I => DType::I8,
            CUDA_R_32I => DType::I32,
            CUDA_C_16F | CUDA_C_16BF => {
                return Err(Error::unsupported(format!("data type {} is not supported by anycuda's cuBLAS yet", cuda_type_name(t))))
            }
            // The other cudaDataType values: 4-, 6- and 8-bit floats,
            // unsigned and complex integers, 16-bit and 64-bit integers.
            7..=9 | 11..=13 | 16..=34 => {
                return Err(Error::unsupported(format!("data type {} is not supported by anycuda's cuBLAS yet", cuda_type_name(t))))
            }
            _ => return Err(Error::invalid(format!("unknown cudaDataType {t}"))),
        })
    }

    pub fn cuda(self) -> i32 {
        match self {
            DType::F16 => CUDA_R_16F,
            DType::BF16 => CUDA_R_16BF,
            DType::F32 => CUDA_R_32F,
            DType::F64 => CUDA_R_64F,
            DType::C32 => CUDA_C_32F,
            DType::C64 => CUDA_C_64F,
            DType::I8 => CUDA_R_8I,
            DType::I32 => CUDA_R_32I,
        }
    }

    /// Reads element `i` of an array at `p` as a complex double (exact for
    /// every type).
    ///
    /// # Safety
    /// `p + i * size` must be readable.
    pub unsafe fn read(self, p: u64, i: isize) -> Complex64 {
        let a = (p as isize + i * self.size() as isize) as usize;
        // SAFETY: the caller's promise; unaligned reads allow any address.
        unsafe {
            match self {
                DType::F16 => Complex64::new(std::ptr::read_unaligned(a as *const f16).to_f64(), 0.0),
                DType::BF16 => Complex64::new(std::ptr::read_unaligned(a as *const bf16).to_f64(), 0.0),
                DType::F32 => Complex64::new(std::ptr::read_unaligned(a as *const f32) as f64, 0.0),
                DType::F64 => Complex64::new(std::ptr::read_unaligned(a as *const f64), 0.0),
                DType::C32 => {
                    let c = std::ptr::read_unaligned(a as *const Complex32);
                    Complex64::new(c.re as f64, c.im as f64)
                }
                DType::C64 => std::ptr::read_unaligned(a as *const Complex64),
                DType::I8 => Complex64::new(std::ptr::read_unaligned(a as *const i8) as f64, 0.0),
                DType::I32 => Complex64::new(std::ptr::read_unaligned(a as *const i32) as f64, 0.0),
            }
        }
    }

    /// Writes `v` (rounded to nearest even; integers rounded to nearest
    /// and saturated) as element `i` of `p`.
    ///
    /// # Safety
    /// `p + i * size` must be writable.
    pub unsafe fn write(self, p: u64, i: isize, v: Complex64) {
        let a = (p as isize + i * self.size() as isize) as usize;
        // SAFETY: the caller's promise.
        unsafe {
            match self {
                DType::F16 => std::ptr::write_unaligned(a as *mut f16, f16::from_f64(v.re)),
                DType::BF16 => std::ptr::write_unaligned(a as *mut bf16, bf16::from_f64(v.re)),
                DType::F32 => std::ptr::write_unaligned(a as *mut f32, v.re as f32),
                DType::F64 => std::ptr::write_unaligned(a as *mut f64, v.re),
                DType::C32 => std::ptr::write_unaligned(a as *mut Complex32, Complex32::new(v.re as f32, v.im as f32)),
                DType::C64 => std::ptr::write_unaligned(a as *mut Complex64, v),
                DType::I8 => std::ptr::write_unaligned(a as *mut i8, v.re.round_ties_even() as i8),
                DType::I32 => std::ptr::write_unaligned(a as *mut i32, v.re.round_ties_even() as i32),
            }
        }
    }
}

pub fn cuda_type_name(t: i32) -> String {
    const NAMES: [&str; 35] = [
        "CUDA_R_32F",
        "CUDA_R_64F",
        "CUDA_R_16F",
        "CUDA_R_8I",
        "CUDA_C_32F",
        "CUDA_C_64F",
        "CUDA_C_16F",
        "CUDA_C_8I",
        "CUDA_R_8U",
        "CUDA_C_8U",
        "CUDA_R_32I",
        "CUDA_C_32I",
        "CUDA_R_32U",
        "CUDA_C_32U",
        "CUDA_R_16BF",
        "CUDA_C_16BF",
        "CUDA_R_4I",
        "CUDA_C_4I",
        "CUDA_R_4U",
        "CUDA_C_4U",
        "CUDA_R_16I",
        "CUDA_C_16I",
        "CUDA_R_16U",
        "CUDA_C_16U",
        "CUDA_R_64I",
        "CUDA_C_64I",
        "CUDA_R_64U",
        "CUDA_C_64U",
        "CUDA_R_8F_E4M3",
        "CUDA_R_8F_E5M2",
        "CUDA_R_8F_UE8M0",
        "CUDA_R_6F_E2M3",
        "CUDA_R_6F_E3M2",
        "CUDA_R_4F_E2M1",
        "CUDA_R_8F_UE5M3",
    ];
    match usize::try_from(t).ok().and_then(|i| NAMES.get(i)) {
        Some(n) => n.to_string(),
        None => format!("cudaDataType {t}"),
    }
}

/// `cublasOperation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    N,
    T,
    C,
}

impl Op {
    pub fn from_c(v: i32, what: &str) -> Result<Op> {
        match v {
            0 => Ok(Op::N),
            1 => Ok(Op::T),
            2 => Ok(Op::C),
            _ => Err(Error::invalid(format!("{what} = {v} is not CUBLAS_OP_N, CUBLAS_OP_T or CUBLAS_OP_C"))),
        }
    }
    pub fn transposed(self) -> bool {
        self != Op::N
    }
}

/// `cublasFillMode_t` (lower or upper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    Lower,
    Upper,
}

impl Fill {
    pub fn from_c(v: i32) -> Result<Fill> {
        match v {
            0 => Ok(Fill::Lower),
            1 => Ok(Fill::Upper),
            _ => Err(Error::invalid(format!("uplo = {v} is not CUBLAS_FILL_MODE_LOWER or CUBLAS_FILL_MODE_UPPER"))),
        }
    }
}

/// `cublasSideMode_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    pub fn from_c(v: i32) -> Result<Side> {
        match v {
            0 => Ok(Side::Left),
            1 => Ok(Side::Right),
            _ => Err(Error::invalid(format!("side = {v} is not CUBLAS_SIDE_LEFT or CUBLAS_SIDE_RIGHT"))),
        }
    }
}

/// `cublasDiagType_t`: whether the diagonal is taken as ones.
pub fn unit_diag(v: i32) -> Result<bool> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::invalid(format!("diag = {v} is not CUBLAS_DIAG_NON_UNIT or CUBLAS_DIAG_UNIT"))),
    }
}

/// A scalar argument (alpha, beta): read when the call is made (host
/// pointer mode) or when the work runs, in stream order (device pointer
/// mode).
#[derive(Debug, Clone, Copy)]
pub enum Scalar {
    Value(Complex64),
    Device { ptr: u64, dtype: DType },
}

impl Scalar {
    /// The value; device scalars are read now.
    ///
    /// # Safety
    /// A device scalar's address must be readable (checked when the call
    /// was made).
    pub unsafe fn get(self) -> Complex64 {
        match self {
            Scalar::Value(v) => v,
            // SAFETY: the caller's promise.
            Scalar::Device { ptr, dtype } => unsafe { dtype.read(ptr, 0) },
        }
    }
}

/// The bytes a column-major `rows x cols` matrix with leading dimension
/// `ld` spans (0 when empty).
pub fn matrix_extent(rows: i64, cols: i64, ld: i64, size: usize) -> u64 {
    if rows <= 0 || cols <= 0 {
        return 0;
    }
    (((cols - 1) as u64) * ld as u64 + rows as u64) * size as u64
}

/// The bytes a vector of `n` elements `inc` apart spans (0 when empty).
pub fn vector_extent(n: i64, inc: i64, size: usize) -> u64 {
    if n <= 0 {
        return 0;
    }
    (((n - 1) as u64) * inc.unsigned_abs() + 1) * size as u64
}

/// BLAS's start of a vector with a negative increment: element 0 is the
/// last in memory.
pub fn vector_start(ptr: u64, n: i64, inc: i64, size: usize) -> u64 {
    if inc < 0 && n > 0 {
        ptr + ((n - 1) as u64) * inc.unsigned_abs() * size as u64
    } else {
        ptr
    }
}
