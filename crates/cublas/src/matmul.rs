//! cuBLASLt's descriptors (matrix layouts, matmul descriptors, search
//! preferences, algorithms) and the checks that turn a `cublasLtMatmul`
//! configuration into a backend [`Matmul`](crate::backend::Matmul).
//!
//! Each descriptor is a plain `#[repr(C)]` record no larger than NVIDIA's
//! opaque type of the same name, so that it can live in memory the library
//! allocated (`...Create`) or in the caller's (`...Init`). It begins with a
//! tag that marks it initialised (cleared by `...Destroy`) and says whether
//! the library owns its memory. Attributes are stored as given (a size
//! check only, as NVIDIA's `...SetAttribute`); a configuration is checked
//! as a whole when a heuristic query, an algorithm check or a matmul uses
//! it, where what anycuda does not implement fails with
//! `CUBLAS_STATUS_NOT_SUPPORTED` and a log line naming it.
// The descriptor pointers are the C ABI's, read without faulting (or
// refused) before use.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::mem::{offset_of, size_of};

use crate::backend::{Activation, Compute};
use crate::blas::compute_type::*;
use crate::handle::read_user;
use crate::status::{Error, Result};
use crate::types::{self, DType, Op};

/// Tags of initialised descriptors ("anycLtL", "anycLtD", "anycLtP",
/// "anycLtA", "anycLtT"), with the low byte 1 where the library owns the
/// memory.
pub const LAYOUT_TAG: u64 = 0x4c74_4c63_796e_6100;
pub const DESC_TAG: u64 = 0x4474_4c63_796e_6100;
pub const PREF_TAG: u64 = 0x5074_4c63_796e_6100;
pub const ALGO_TAG: u64 = 0x4174_4c63_796e_6100;
pub const TRANSFORM_TAG: u64 = 0x5474_4c63_796e_6100;
pub const OWNED: u64 = 1;

/// A descriptor record: its tag is its first field.
pub trait Record: Copy {
    const TAG: u64;
    const NAME: &'static str;
    /// The size of NVIDIA's opaque type in the newest headers, in 8-byte
    /// words (what `...Create` allocates, so that code copying the opaque
    /// type reads only memory that is there). The record itself fits the
    /// smallest size any supported header gives the type (CUDA 12's).
    const WORDS: usize;
    fn tag(&self) -> u64;
    fn set_tag(&mut self, tag: u64);
    /// `(offset, size)` of an attribute's storage.
    fn field(attr: i32) -> Option<(usize, usize)>;
    /// The size of an attribute that is not stored because anycuda
    /// supports only its default, zero: setting zero is accepted, anything
    /// else is `NOT_SUPPORTED`, and it reads as zero.
    fn fixed(_attr: i32) -> Option<usize> {
        None
    }
}

/// Where an attribute lives: stored at an offset, or fixed at zero.
enum Slot {
    Stored(usize, usize),
    Zero(usize),
}

fn slot<T: Record>(attr: i32) -> Result<Slot> {
    if let Some((off, len)) = T::field(attr) {
        return Ok(Slot::Stored(off, len));
    }
    match T::fixed(attr) {
        Some(len) => Ok(Slot::Zero(len)),
        None => Err(Error::invalid(format!("{attr} is not an attribute of a {}", T::NAME))),
    }
}

/// A copy of the initialised descriptor at `p`, or `INVALID_VALUE`.
pub fn read<T: Record>(p: *const T, what: &str) -> Result<T> {
    if p.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    // SAFETY: descriptors are plain data; the pointer is the caller's, read
    // without faulting where the kernel allows it.
    match unsafe { read_user(p) } {
        Some(v) if v.tag() & !OWNED == T::TAG => Ok(v),
        Some(_) => Err(Error::invalid(format!("{what} ({p:p}) is not an initialised {} (never created, or destroyed)", T::NAME))),
        None => Err(Error::invalid(format!("{what} ({p:p}) is not readable memory"))),
    }
}

/// `...Create`: a new descriptor in memory of NVIDIA's opaque size.
pub fn create<T: Record>(mut v: T) -> *mut T {
    v.set_tag(T::TAG | OWNED);
    let words = vec![0u64; T::WORDS].into_boxed_slice();
    let p = Box::into_raw(words).cast::<T>();
    // SAFETY: the allocation holds WORDS words, at least size_of::<T>()
    // bytes, 8-aligned (checked by `record!`).
    unsafe { p.write(v) };
    p
}

/// `...Init_internal`: a descriptor in the caller's `size` bytes at `p`.
///
/// # Safety
/// `p` must be writable for `size` bytes.
pub unsafe fn init<T: Record>(p: *mut T, size: usize, mut v: T) -> Result<()> {
    if p.is_null() {
        return Err(Error::invalid("the descriptor is NULL"));
    }
    if size < size_of::<T>() {
        return Err(Error::new(crate::status::ALLOC_FAILED, format!("{size} bytes are too few for a {}", T::NAME)));
    }
    v.set_tag(T::TAG);
    // SAFETY: the caller's promise.
    unsafe { std::ptr::write_unaligned(p, v) };
    Ok(())
}

/// `...Destroy`: marks the descriptor destroyed and frees it when the
/// library allocated it. NULL is accepted.
///
/// # Safety
/// `p` must be NULL or a descriptor (anything else is refused when it is
/// readable, as it then carries no tag).
pub unsafe fn destroy<T: Record>(p: *mut T) -> Result<()> {
    if p.is_null() {
        return Ok(());
    }
    let mut v = read(p.cast_const(), "the descriptor")?;
    let owned = v.tag() & OWNED != 0;
    v.set_tag(0);
    // SAFETY: an initialised descriptor: the caller's memory or `create`'s.
    unsafe {
        std::ptr::write_unaligned(p, v);
        if owned {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.cast::<u64>(), T::WORDS)));
        }
    }
    Ok(())
}

/// `...SetAttribute`: `size` must be the attribute's.
///
/// # Safety
/// `p` must be writable when it holds a descriptor; `buf` readable for
/// `size` bytes.
pub unsafe fn set_attribute<T: Record>(p: *mut T, attr: i32, buf: *const u8, size: usize) -> Result<()> {
    let mut v = read(p.cast_const(), "the descriptor")?;
    let slot = slot::<T>(attr)?;
    if buf.is_null() {
        return Err(Error::invalid("buf is NULL"));
    }
    let len = match slot {
        Slot::Stored(_, len) | Slot::Zero(len) => len,
    };
    if size != len {
        return Err(Error::invalid(format!("attribute {attr} of a {} takes {len} bytes, not {size}", T::NAME)));
    }
    match slot {
        // SAFETY: `off + len` lies inside `T` (the field table); `buf`
        // holds `len` bytes, the caller's promise; then the descriptor is
        // written back whole.
        Slot::Stored(off, len) => unsafe {
            std::ptr::copy_nonoverlapping(buf, (&mut v as *mut T).cast::<u8>().add(off), len);
            std::ptr::write_unaligned(p, v);
        },
        Slot::Zero(len) => {
            // SAFETY: `len` bytes, the caller's promise.
            if unsafe { std::slice::from_raw_parts(buf, len) }.iter().any(|&b| b != 0) {
                return Err(Error::unsupported(format!(
                    "attribute {attr} of a {} (grouped batches) is not supported by anycuda's cuBLASLt yet; only its default is",
                    T::NAME
                )));
            }
        }
    }
    Ok(())
}

/// `...GetAttribute`: with `size == 0`, only the size the attribute needs
/// (in `written`).
///
/// # Safety
/// `buf` must be writable for `size` bytes and `written` NULL or writable.
pub unsafe fn get_attribute<T: Record>(p: *const T, attr: i32, buf: *mut u8, size: usize, written: *mut usize) -> Result<()> {
    let v = read(p, "the descriptor")?;
    let slot = slot::<T>(attr)?;
    let len = match slot {
        Slot::Stored(_, len) | Slot::Zero(len) => len,
    };
    // SAFETY (block): the caller's promises; `off + len` lies inside `T`.
    unsafe {
        if size == 0 {
            if written.is_null() {
                return Err(Error::invalid("sizeInBytes is 0 and sizeWritten is NULL"));
            }
            *written = len;
            return Ok(());
        }
        if buf.is_null() {
            return Err(Error::invalid("buf is NULL"));
        }
        if size != len {
            return Err(Error::invalid(format!("attribute {attr} of a {} takes {len} bytes, not {size}", T::NAME)));
        }
        match slot {
            Slot::Stored(off, len) => std::ptr::copy_nonoverlapping((&v as *const T).cast::<u8>().add(off), buf, len),
            Slot::Zero(len) => std::ptr::write_bytes(buf, 0, len),
        }
        if !written.is_null() {
            *written = len;
        }
    }
    Ok(())
}

macro_rules! record {
    ($t:ty, $tag:expr, $name:expr, $words:expr, $min_words:expr) => {
        const _: () = assert!(size_of::<$t>() <= $min_words * 8 && $min_words <= $words && std::mem::align_of::<$t>() <= 8);
        impl Record for $t {
            const TAG: u64 = $tag;
            const NAME: &'static str = $name;
            const WORDS: usize = $words;
            fn fixed(attr: i32) -> Option<usize> {
                Self::fixed_fields(attr)
            }
            fn tag(&self) -> u64 {
                self.tag
            }
            fn set_tag(&mut self, tag: u64) {
                self.tag = tag;
            }
            fn field(attr: i32) -> Option<(usize, usize)> {
                Self::fields(attr)
            }
        }
    };
}

/// The entry of a field in an attribute table: `(offset, size)`.
macro_rules! at {
    ($t:ty, $f:ident) => {{
        let v = std::mem::MaybeUninit::<$t>::uninit();
        // SAFETY: only the field's address is taken, nothing is read.
        let p = unsafe { std::ptr::addr_of!((*v.as_ptr()).$f) };
        (offset_of!($t, $f), pointee_size(p))
    }};
}

fn pointee_size<F>(_: *const F) -> usize {
    size_of::<F>()
}

// ---- cublasLtMatrixLayout_t ------------------------------------------------

/// `cublasLtMatrixLayoutOpaque_t` (NVIDIA's is 14 words).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub tag: u64,
    /// `cudaDataType` (`CUBLASLT_MATRIX_LAYOUT_TYPE`, uint32).
    pub dtype: u32,
    /// `cublasLtOrder_t`.
    pub order: i32,
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
    pub batch_count: i32,
    /// `cublasLtBatchMode_t`.
    pub batch_mode: u32,
    pub batch_stride: i64,
    pub plane_offset: i64,
}

impl Layout {
    pub fn new(dtype: u32, rows: u64, cols: u64, ld: i64) -> Layout {
        Layout { tag: LAYOUT_TAG, dtype, order: 0, rows, cols, ld, batch_count: 1, batch_mode: 0, batch_stride: 0, plane_offset: 0 }
    }

    fn fields(attr: i32) -> Option<(usize, usize)> {
        Some(match attr {
            0 => at!(Layout, dtype),
            1 => at!(Layout, order),
            2 => at!(Layout, rows),
            3 => at!(Layout, cols),
            4 => at!(Layout, ld),
            5 => at!(Layout, batch_count),
            6 => at!(Layout, batch_stride),
            7 => at!(Layout, plane_offset),
            8 => at!(Layout, batch_mode),
            _ => return None,
        })
    }

    /// The grouped-batch attributes (arrays of rows, columns, leading
    /// dimensions and their integer widths): only their defaults.
    fn fixed_fields(attr: i32) -> Option<usize> {
        match attr {
            9..=11 => Some(8),
            12 | 13 => Some(4),
            _ => None,
        }
    }
}
record!(Layout, LAYOUT_TAG, "cublasLtMatrixLayout_t", 14, 8);

// ---- cublasLtMatmulDesc_t --------------------------------------------------

/// `CUBLASLT_FILL_MODE_FULL` (cublasFillMode_t 2), the default.
pub const FILL_FULL: i32 = 2;

/// `cublasLtMatmulDescOpaque_t` (NVIDIA's is 32 words).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Desc {
    pub tag: u64,
    pub compute: i32,
    pub scale: i32,
    pub pointer_mode: i32,
    pub transa: i32,
    pub transb: i32,
    pub transc: i32,
    pub fill: i32,
    pub epilogue: u32,
    pub bias: u64,
    pub bias_stride: i64,
    pub aux: u64,
    pub aux_ld: i64,
    pub aux_stride: i64,
    pub alpha_vector_stride: i64,
    pub sm_count: i32,
    pub bias_dtype: i32,
    pub aux_dtype: i32,
    pub a_scale_mode: i32,
    pub a_scale: u64,
    pub b_scale: u64,
    pub c_scale: u64,
    pub d_scale: u64,
    pub amax_d: u64,
    pub aux_scale: u64,
    pub aux_amax: u64,
    pub d_out_scale: u64,
    pub emulation: u64,
    pub alpha_stride: i64,
    pub beta_stride: i64,
    pub b_scale_mode: i32,
    pub c_scale_mode: i32,
    pub d_scale_mode: i32,
    pub aux_scale_mode: i32,
    pub d_out_scale_mode: i32,
    pub batch_invariance: i32,
    pub fast_accum: i8,
}

impl Desc {
    fn fixed_fields(_attr: i32) -> Option<usize> {
        None
    }

    pub fn new(compute: i32, scale: i32) -> Desc {
        Desc {
            tag: DESC_TAG,
            compute,
            scale,
            pointer_mode: 0,
            transa: 0,
            transb: 0,
            transc: 0,
            fill: FILL_FULL,
            epilogue: EPILOGUE_DEFAULT,
            bias: 0,
            bias_stride: 0,
            aux: 0,
            aux_ld: 0,
            aux_stride: 0,
            alpha_vector_stride: 0,
            sm_count: 0,
            bias_dtype: -1,
            aux_dtype: -1,
            a_scale_mode: 0,
            a_scale: 0,
            b_scale: 0,
            c_scale: 0,
            d_scale: 0,
            amax_d: 0,
            aux_scale: 0,
            aux_amax: 0,
            d_out_scale: 0,
            emulation: 0,
            alpha_stride: 0,
            beta_stride: 0,
            b_scale_mode: 0,
            c_scale_mode: 0,
            d_scale_mode: 0,
            aux_scale_mode: 0,
            d_out_scale_mode: 0,
            batch_invariance: 0x8000,
            fast_accum: 0,
        }
    }

    fn fields(attr: i32) -> Option<(usize, usize)> {
        Some(match attr {
            0 => at!(Desc, compute),
            1 => at!(Desc, scale),
            2 => at!(Desc, pointer_mode),
            3 => at!(Desc, transa),
            4 => at!(Desc, transb),
            5 => at!(Desc, transc),
            6 => at!(Desc, fill),
            7 => at!(Desc, epilogue),
            8 => at!(Desc, bias),
            10 => at!(Desc, bias_stride),
            11 => at!(Desc, aux),
            12 => at!(Desc, aux_ld),
            13 => at!(Desc, aux_stride),
            14 => at!(Desc, alpha_vector_stride),
            15 => at!(Desc, sm_count),
            17 => at!(Desc, a_scale),
            18 => at!(Desc, b_scale),
            19 => at!(Desc, c_scale),
            20 => at!(Desc, d_scale),
            21 => at!(Desc, amax_d),
            22 => at!(Desc, aux_dtype),
            23 => at!(Desc, aux_scale),
            24 => at!(Desc, aux_amax),
            25 => at!(Desc, fast_accum),
            26 => at!(Desc, bias_dtype),
            31 => at!(Desc, a_scale_mode),
            32 => at!(Desc, b_scale_mode),
            33 => at!(Desc, c_scale_mode),
            34 => at!(Desc, d_scale_mode),
            35 => at!(Desc, aux_scale_mode),
            36 => at!(Desc, d_out_scale),
            37 => at!(Desc, d_out_scale_mode),
            38 => at!(Desc, emulation),
            39 => at!(Desc, alpha_stride),
            40 => at!(Desc, beta_stride),
            41 => at!(Desc, batch_invariance),
            _ => return None,
        })
    }
}
record!(Desc, DESC_TAG, "cublasLtMatmulDesc_t", 32, 32);

// ---- cublasLtMatmulPreference_t --------------------------------------------

/// `cublasLtMatmulPreferenceOpaque_t` (NVIDIA's is 12 words).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Pref {
    pub tag: u64,
    pub search_mode: u32,
    pub reduction_mask: u32,
    pub max_workspace: u64,
    pub align_a: u32,
    pub align_b: u32,
    pub align_c: u32,
    pub align_d: u32,
    pub max_waves: f32,
    pub grouped_k: u32,
    pub impl_mask: u64,
    pub grouped_rows: u32,
    pub grouped_cols: u32,
}

impl Pref {
    fn fixed_fields(_attr: i32) -> Option<usize> {
        None
    }

    pub fn new() -> Pref {
        Pref {
            tag: PREF_TAG,
            search_mode: 0,
            reduction_mask: 7,
            max_workspace: 0,
            align_a: 256,
            align_b: 256,
            align_c: 256,
            align_d: 256,
            max_waves: 0.0,
            grouped_k: 0,
            impl_mask: u64::MAX,
            grouped_rows: 0,
            grouped_cols: 0,
        }
    }

    fn fields(attr: i32) -> Option<(usize, usize)> {
        Some(match attr {
            0 => at!(Pref, search_mode),
            1 => at!(Pref, max_workspace),
            3 => at!(Pref, reduction_mask),
            5 => at!(Pref, align_a),
            6 => at!(Pref, align_b),
            7 => at!(Pref, align_c),
            8 => at!(Pref, align_d),
            9 => at!(Pref, max_waves),
            12 => at!(Pref, impl_mask),
            13 => at!(Pref, grouped_k),
            14 => at!(Pref, grouped_rows),
            15 => at!(Pref, grouped_cols),
            _ => return None,
        })
    }
}

impl Default for Pref {
    fn default() -> Pref {
        Pref::new()
    }
}
record!(Pref, PREF_TAG, "cublasLtMatmulPreference_t", 12, 8);

// ---- cublasLtMatmulAlgo_t --------------------------------------------------

/// The one algorithm (id 0): the CPU product. Its configuration
/// attributes hold their defaults, the only values it supports.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Algo {
    pub tag: u64,
    pub id: i32,
    pub tile: u32,
    pub splitk: i32,
    pub reduction: u32,
    pub swizzle: u32,
    pub custom: u32,
    pub stages: u32,
    pub inner: u16,
    pub cluster: u16,
    /// The compute type it was made for.
    pub compute: i32,
    pub reserved: [u32; 5],
}

impl Algo {
    fn fixed_fields(_attr: i32) -> Option<usize> {
        None
    }

    pub fn new(compute: i32) -> Algo {
        Algo {
            tag: ALGO_TAG,
            id: 0,
            tile: 0,
            splitk: 1,
            reduction: 0,
            swizzle: 0,
            custom: 0,
            stages: 0,
            inner: 0,
            cluster: 0,
            compute,
            reserved: [0; 5],
        }
    }

    fn fields(attr: i32) -> Option<(usize, usize)> {
        Some(match attr {
            0 => at!(Algo, id),
            1 => at!(Algo, tile),
            2 => at!(Algo, splitk),
            3 => at!(Algo, reduction),
            4 => at!(Algo, swizzle),
            5 => at!(Algo, custom),
            6 => at!(Algo, stages),
            7 => at!(Algo, inner),
            8 => at!(Algo, cluster),
            _ => return None,
        })
    }

    /// Fails unless the configuration is the one the algorithm supports.
    pub fn check(&self) -> Result<()> {
        let default = Algo::new(self.compute);
        let pairs = [
            ("tile id", self.tile as i64, default.tile as i64),
            ("split-k count", self.splitk as i64, default.splitk as i64),
            ("reduction scheme", self.reduction as i64, default.reduction as i64),
            ("CTA swizzling", self.swizzle as i64, default.swizzle as i64),
            ("custom option", self.custom as i64, default.custom as i64),
            ("stages id", self.stages as i64, default.stages as i64),
            ("inner shape id", self.inner as i64, default.inner as i64),
            ("cluster shape id", self.cluster as i64, default.cluster as i64),
        ];
        if self.id != 0 {
            return Err(Error::invalid(format!("algorithm id {} is not one of anycuda's (only 0)", self.id)));
        }
        for (what, got, want) in pairs {
            if got != want {
                return Err(Error::invalid(format!("algorithm 0 supports only {what} {want}, not {got}")));
            }
        }
        Ok(())
    }
}
record!(Algo, ALGO_TAG, "cublasLtMatmulAlgo_t", 8, 8);

// ---- cublasLtMatrixTransformDesc_t -----------------------------------------

/// `cublasLtMatrixTransformDescOpaque_t` (NVIDIA's is 8 words).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TransformDesc {
    pub tag: u64,
    pub scale: i32,
    pub pointer_mode: i32,
    pub transa: i32,
    pub transb: i32,
}

impl TransformDesc {
    fn fixed_fields(_attr: i32) -> Option<usize> {
        None
    }

    pub fn new(scale: i32) -> TransformDesc {
        TransformDesc { tag: TRANSFORM_TAG, scale, pointer_mode: 0, transa: 0, transb: 0 }
    }

    fn fields(attr: i32) -> Option<(usize, usize)> {
        Some(match attr {
            0 => at!(TransformDesc, scale),
            1 => at!(TransformDesc, pointer_mode),
            2 => at!(TransformDesc, transa),
            3 => at!(TransformDesc, transb),
            _ => return None,
        })
    }
}
record!(TransformDesc, TRANSFORM_TAG, "cublasLtMatrixTransformDesc_t", 8, 8);

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeuristicResult {
    pub algo: Algo,
    pub workspace_size: usize,
    pub state: i32,
    pub waves_count: f32,
    pub reserved: [i32; 4],
}

// ---- epilogues and the configuration check ---------------------------------

pub const EPILOGUE_DEFAULT: u32 = 1;
const EPILOGUE_RELU: u32 = 2;
const EPILOGUE_BIAS: u32 = 4;
const EPILOGUE_GELU: u32 = 32;
const EPILOGUE_AUX: u32 = 128;

/// The epilogue a descriptor asks for: activation, bias, aux output.
pub fn epilogue(e: u32) -> Result<(Activation, bool, bool)> {
    Ok(match e {
        EPILOGUE_DEFAULT => (Activation::None, false, false),
        EPILOGUE_RELU => (Activation::Relu, false, false),
        EPILOGUE_BIAS => (Activation::None, true, false),
        6 => (Activation::Relu, true, false),
        EPILOGUE_GELU => (Activation::Gelu, false, false),
        36 => (Activation::Gelu, true, false),
        160 => (Activation::Gelu, false, true),
        164 => (Activation::Gelu, true, true),
        130 | 134 => {
            return Err(Error::unsupported(format!(
                "epilogue {e} (CUBLASLT_EPILOGUE_RELU_AUX*, a ReLU bit mask) is not supported by anycuda's cuBLASLt yet"
            )))
        }
        136 | 152 | 192 | 208 | 256 | 512 => {
            return Err(Error::unsupported(format!(
                "epilogue {e} (a gradient: DRELU, DGELU, BGRADA/B) is not supported by anycuda's cuBLASLt yet"
            )))
        }
        _ => return Err(Error::invalid(format!("{e} is not a cublasLtEpilogue_t"))),
    })
}

/// The bits of `CUBLASLT_ALGO_CAP_EPILOGUE_MASK`: the epilogues above.
pub const EPILOGUE_MASK: u32 = EPILOGUE_DEFAULT | EPILOGUE_RELU | EPILOGUE_BIAS | EPILOGUE_GELU | EPILOGUE_AUX;

/// The arithmetic of a compute type, scale type and matrix types, after
/// cuBLASLt's table of supported combinations.
pub fn types(compute: i32, scale: i32, a: i32, b: i32, c: i32, d: i32) -> Result<(Compute, DType, [DType; 4])> {
    let name = types::cuda_type_name;
    let combo = || format!("compute type {compute}, scale {}, A {}, B {}, C {}, D {}", name(scale), name(a), name(b), name(c), name(d));
    let ty = |t: i32| DType::from_cuda(t).map_err(|e| Error::new(e.status, format!("{}: {}", combo(), e.why)));
    let (sd, ad, bd, cd, dd) = (ty(scale)?, ty(a)?, ty(b)?, ty(c)?, ty(d)?);
    if ad != bd {
        return Err(Error::unsupported(format!("{}: A and B must have the same type", combo())));
    }
    if cd != dd {
        return Err(Error::unsupported(format!("{}: C and D must have the same type", combo())));
    }
    use DType::*;
    let arith = match compute {
        C16F | C16F_PEDANTIC => match (sd, ad, dd) {
            (F16, F16, F16) => Some(Compute::F32),
            _ => None,
        },
        C32F | C32F_PEDANTIC => match (sd, ad, dd) {
            (F32, F16, F16 | F32) | (F32, BF16, BF16 | F32) | (F32, F32, F32) | (F32, I8, F32) => Some(Compute::F32),
            (C32, C32, C32) => Some(Compute::C32),
            _ => None,
        },
        C32F_FAST_16F | C32F_FAST_16BF | C32F_FAST_TF32 | C32F_EMULATED_16BFX9 => match (sd, ad, dd) {
            (F32, F32, F32) => Some(Compute::F32),
            (C32, C32, C32) => Some(Compute::C32),
            _ => None,
        },
        C64F | C64F_PEDANTIC | C64F_EMULATED_FIXEDPOINT => match (sd, ad, dd) {
            (F64, F64, F64) => Some(Compute::F64),
            (C64, C64, C64) => Some(Compute::C64),
            _ => None,
        },
        C32I | C32I_PEDANTIC => match (sd, ad, dd) {
            (I32, I8, I32) => Some(Compute::I32),
            _ => None,
        },
        _ => return Err(Error::invalid(format!("computeType {compute} is not a cublasComputeType_t"))),
    };
    match arith {
        Some(k) => Ok((k, sd, [ad, bd, cd, dd])),
        None => Err(Error::unsupported(format!("{}: not a combination anycuda's cuBLASLt supports", combo()))),
    }
}

/// A layout, checked: its shape and element strides.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub dtype: DType,
    pub rows: i64,
    pub cols: i64,
    /// Element strides of rows and columns.
    pub rs: i64,
    pub cs: i64,
    pub count: i64,
    pub stride: i64,
}

fn shape(l: &Layout, dtype: DType, what: &str) -> Result<Shape> {
    let rows = i64::try_from(l.rows).map_err(|_| Error::invalid(format!("{what}: {} rows", l.rows)))?;
    let cols = i64::try_from(l.cols).map_err(|_| Error::invalid(format!("{what}: {} columns", l.cols)))?;
    let (rs, cs, need) = match l.order {
        0 => (1, l.ld, rows),
        1 => (l.ld, 1, cols),
        2..=4 => {
            return Err(Error::unsupported(format!(
                "{what}: memory order {} (a tiled CUBLASLT_ORDER_COL32* order) is not supported by anycuda's cuBLASLt yet",
                l.order
            )))
        }
        o => return Err(Error::invalid(format!("{what}: {o} is not a cublasLtOrder_t"))),
    };
    if l.ld < need.max(1) {
        return Err(Error::invalid(format!(
            "{what}: leading dimension {} < max(1, {need}) for a {rows} x {cols} {} matrix",
            l.ld,
            if l.order == 0 { "column-major" } else { "row-major" }
        )));
    }
    if l.batch_count < 1 {
        return Err(Error::invalid(format!("{what}: batch count {} < 1", l.batch_count)));
    }
    match l.batch_mode {
        0 => {}
        1 | 2 => {
            return Err(Error::unsupported(format!(
                "{what}: batch mode {} (pointer-array or grouped batches) is not supported by anycuda's cuBLASLt yet",
                l.batch_mode
            )))
        }
        m => return Err(Error::invalid(format!("{what}: {m} is not a cublasLtBatchMode_t"))),
    }
    if l.plane_offset != 0 {
        return Err(Error::unsupported(format!("{what}: planar complex layouts are not supported by anycuda's cuBLASLt yet")));
    }
    Ok(Shape { dtype, rows, cols, rs, cs, count: l.batch_count as i64, stride: l.batch_stride })
}

/// A checked matmul configuration: everything but addresses and scalars.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub ta: Op,
    pub tb: Op,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub compute: Compute,
    pub scale: DType,
    pub device_scalars: bool,
    pub a: Shape,
    pub b: Shape,
    pub c: Shape,
    pub d: Shape,
    pub act: Activation,
    /// The bias vector's type, when the epilogue adds one.
    pub bias: Option<DType>,
    /// The aux matrix's type, when the epilogue stores one.
    pub aux: Option<DType>,
}

fn op(v: i32, what: &str) -> Result<Op> {
    Op::from_c(v, what)
}

/// Checks a matmul configuration as `cublasLtMatmul` and the heuristic
/// query do: types, shapes, leading dimensions, batches, epilogue and the
/// attributes anycuda does not implement.
pub fn plan(desc: &Desc, a: &Layout, b: &Layout, c: &Layout, d: &Layout) -> Result<Plan> {
    let (compute, scale, [at, bt, ct, dt]) =
        types(desc.compute, desc.scale, a.dtype as i32, b.dtype as i32, c.dtype as i32, d.dtype as i32)?;
    let ta = op(desc.transa, "CUBLASLT_MATMUL_DESC_TRANSA")?;
    let tb = op(desc.transb, "CUBLASLT_MATMUL_DESC_TRANSB")?;
    if op(desc.transc, "CUBLASLT_MATMUL_DESC_TRANSC")? != Op::N {
        return Err(Error::unsupported("CUBLASLT_MATMUL_DESC_TRANSC other than CUBLAS_OP_N is not supported"));
    }
    match desc.fill {
        FILL_FULL => {}
        0 | 1 => return Err(Error::unsupported("a triangular CUBLASLT_MATMUL_DESC_FILL_MODE is not supported by anycuda's cuBLASLt yet")),
        f => return Err(Error::invalid(format!("{f} is not a cublasFillMode_t"))),
    }
    let device_scalars = match desc.pointer_mode {
        0 => false,
        1 => true,
        2..=4 => {
            return Err(Error::unsupported(format!(
                "pointer mode {} (alpha as a device vector) is not supported by anycuda's cuBLASLt yet",
                desc.pointer_mode
            )))
        }
        p => return Err(Error::invalid(format!("{p} is not a cublasLtPointerMode_t"))),
    };
    let unsupported_pointers = [
        ("CUBLASLT_MATMUL_DESC_A_SCALE_POINTER", desc.a_scale),
        ("CUBLASLT_MATMUL_DESC_B_SCALE_POINTER", desc.b_scale),
        ("CUBLASLT_MATMUL_DESC_C_SCALE_POINTER", desc.c_scale),
        ("CUBLASLT_MATMUL_DESC_D_SCALE_POINTER", desc.d_scale),
        ("CUBLASLT_MATMUL_DESC_AMAX_D_POINTER", desc.amax_d),
        ("CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER", desc.aux_scale),
        ("CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER", desc.aux_amax),
        ("CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER", desc.d_out_scale),
    ];
    for (what, p) in unsupported_pointers {
        if p != 0 {
            return Err(Error::unsupported(format!(
                "{what} (matrix scaling, for 8-bit floats) is not supported by anycuda's cuBLASLt yet"
            )));
        }
    }
    let modes = [desc.a_scale_mode, desc.b_scale_mode, desc.c_scale_mode, desc.d_scale_mode, desc.aux_scale_mode, desc.d_out_scale_mode];
    if modes.iter().any(|&m| m != 0) {
        return Err(Error::unsupported("a matrix scaling mode other than CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F is not supported"));
    }
    if desc.alpha_stride != 0 || desc.beta_stride != 0 {
        return Err(Error::unsupported("per-batch alpha and beta (CUBLASLT_MATMUL_DESC_ALPHA/BETA_BATCH_STRIDE) are not supported"));
    }

    let sa = shape(a, at, "Adesc")?;
    let sb = shape(b, bt, "Bdesc")?;
    let sc = shape(c, ct, "Cdesc")?;
    let sd = shape(d, dt, "Ddesc")?;
    let (m, n) = (sd.rows, sd.cols);
    let k = if ta == Op::N { sa.cols } else { sa.rows };
    let want_a = if ta == Op::N { (m, k) } else { (k, m) };
    let want_b = if tb == Op::N { (k, n) } else { (n, k) };
    if (sa.rows, sa.cols) != want_a {
        return Err(Error::invalid(format!("A is {} x {}; op(A) must have D's {m} rows", sa.rows, sa.cols)));
    }
    if (sb.rows, sb.cols) != want_b {
        return Err(Error::invalid(format!("B is {} x {}; op(B) must be {k} x {n} (k from A, n from D)", sb.rows, sb.cols)));
    }
    if (sc.rows, sc.cols) != (m, n) {
        return Err(Error::invalid(format!("C is {} x {}, D {m} x {n}", sc.rows, sc.cols)));
    }
    let count = sd.count;
    for (s, what) in [(&sa, "A"), (&sb, "B"), (&sc, "C")] {
        if s.count != count {
            return Err(Error::invalid(format!("{what} has batch count {}, D {count}", s.count)));
        }
    }

    let (act, has_bias, has_aux) = epilogue(desc.epilogue)?;
    let real = matches!(compute, Compute::F32 | Compute::F64);
    if desc.epilogue != EPILOGUE_DEFAULT && !real {
        return Err(Error::unsupported(format!("epilogue {} on {compute:?} arithmetic is not supported", desc.epilogue)));
    }
    let side_type = |t: i32, what: &str| -> Result<DType> {
        let t = if t == -1 { dt } else { DType::from_cuda(t).map_err(|e| Error::new(e.status, format!("{what}: {}", e.why)))? };
        let ok = match compute {
            Compute::F32 => matches!(t, DType::F16 | DType::BF16 | DType::F32),
            _ => t == DType::F64,
        };
        if !ok {
            return Err(Error::unsupported(format!("{what} {t:?} with {compute:?} arithmetic is not supported")));
        }
        Ok(t)
    };
    let bias = if has_bias {
        if desc.bias == 0 {
            return Err(Error::invalid("the epilogue adds a bias but CUBLASLT_MATMUL_DESC_BIAS_POINTER is NULL"));
        }
        Some(side_type(desc.bias_dtype, "bias type")?)
    } else {
        None
    };
    let aux = if has_aux {
        if desc.aux == 0 {
            return Err(Error::invalid("the epilogue stores its input but CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER is NULL"));
        }
        if desc.aux_ld < m.max(1) || desc.aux_ld % 8 != 0 {
            return Err(Error::invalid(format!(
                "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD {} must be a multiple of 8, at least {m}",
                desc.aux_ld
            )));
        }
        if desc.aux_stride % 8 != 0 {
            return Err(Error::invalid(format!(
                "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE {} is not a multiple of 8",
                desc.aux_stride
            )));
        }
        Some(side_type(desc.aux_dtype, "aux type")?)
    } else {
        None
    };
    Ok(Plan { ta, tb, m, n, k, compute, scale, device_scalars, a: sa, b: sb, c: sc, d: sd, act, bias, aux })
}
