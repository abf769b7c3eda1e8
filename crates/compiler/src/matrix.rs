//! Warp-level matrix instructions: `mma.sync`, `wmma.load`/`store`/`mma`,
//! `ldmatrix`, `stmatrix` and `movmatrix`.
//!
//! Every one of them is a warp collective over fragments: each lane holds
//! some elements of a matrix in its registers, at positions the PTX ISA
//! gives per lane ("Matrix Fragments for mma.m16n8k16", ...). The lowering
//! is the same in every mode and on every target once the fragments are
//! tables: for each element a lane produces, which lane and which register
//! element it reads. Only the exchange differs:
//!
//! * warp mode (every register a `<32 x T>` vector): a gather of lanes is a
//!   constant `shufflevector`, and the arithmetic runs on whole vectors, so
//!   an `mma` is a few dozen vector FMAs for the whole warp;
//! * thread mode (one thread per call): the lanes hand their fragment
//!   registers to `__anycuda_warp_gather`, a warp collective that returns a
//!   snapshot of all 32 lanes' registers (the CPU backend copies them once
//!   per warp; AMDGPU reads them with `ds_bpermute`), and each lane reads
//!   the elements it needs from the snapshot through constant tables
//!   indexed by its lane, then computes its own elements of the result: the
//!   warp computes the product once, each lane its share.
//!
//! Arithmetic (PTX ISA, `mma`, "Precision and rounding"): "Element-wise
//! multiplication of matrix A and B is performed with at least single
//! precision. When .ctype or .dtype is .f32, accumulation of the
//! intermediate values is performed with at least single precision. When
//! both .ctype and .dtype are specified as .f16, the accumulation is
//! performed with at least half precision. The accumulation order, rounding
//! and handling of subnormal inputs are unspecified." The order chosen
//! here, for every floating-point type: each element of D starts from its
//! element of C (converted to f32 exactly when C is f16) and adds the
//! products in increasing k, one f32 fused multiply-add each (round to
//! nearest even; f16, bf16 and tf32 products are exact in f32 and subnormal
//! inputs are kept), and an f16 result is the f32 sum rounded once to f16.
//! tf32 operands use the upper 19 bits of their register (the low 13 are
//! ignored, as `wgmma` states: "will truncate lower 13 bits of the 32-bit
//! input data before multiplication"). NaN results are NVIDIA's canonical
//! NaN. For `.f64`: "Precision of the element-wise multiplication and
//! addition operation is identical to that of .f64 precision fused
//! multiply-add", rounded as `.rn` (default), `.rz`, `.rm` or `.rp` says,
//! in the same order. Integers: "The integer mma operation is performed with
//! .s32 accumulators. The .satfinite qualifier indicates that on overflow,
//! the accumulated value is limited to the range MIN_INT32..MAX_INT32 ...
//! If .satfinite is not specified, the accumulated value is wrapped
//! instead": the exact sum of C and the products is clamped (`.satfinite`)
//! or wrapped to 32 bits. Single-bit: "computes the XOR, AND respectively
//! of a k-bit row of A with a k-bit column of B, then counts the number of
//! set bits in the result (popc). This result is added to the corresponding
//! element of C" (wrapping).
//!
//! `wmma` fragments: "The distribution of fragments loaded by the threads
//! in a warp is unspecified and is target architecture dependent". The
//! layout chosen here tiles each wmma matrix with the `mma` fragment of the
//! same type (`m16n8k16` for f16/bf16/s8/u8, `m16n8k8` for tf32, `m8n8k4`
//! for f64, `m8n8k32` for s4/u4, `m8n8k128` for b1; an 8-row matrix takes
//! the first eight rows of the 16-row fragment); tiles follow each other
//! in rows, then columns; a fragment with more registers than its tiles
//! fill (the f16 A and B fragments of eight registers) repeats them.
//! `wmma.load` writes every copy and `wmma.mma` reads the first.

use crate::ir::{Ty, V};
use crate::lower::{FnLower, Res};
use ptx::ast::*;
use std::collections::HashMap;
use std::fmt::Write;

/// Lanes of a warp.
const W: usize = 32;

/// Element formats of matrix fragments. `B1` elements are 32-bit words
/// of 32 single-bit elements (the multiply works on whole words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    F16,
    Bf16,
    Tf32,
    F32,
    F64,
    S8,
    U8,
    S4,
    U4,
    S32,
    B1,
}

impl Elem {
    pub fn bits(self) -> u32 {
        match self {
            Elem::F16 | Elem::Bf16 => 16,
            Elem::Tf32 | Elem::F32 | Elem::S32 | Elem::B1 => 32,
            Elem::F64 => 64,
            Elem::S8 | Elem::U8 => 8,
            Elem::S4 | Elem::U4 => 4,
        }
    }

    fn from_type(t: Type) -> Option<Elem> {
        Some(match t {
            Type::F16 => Elem::F16,
            Type::Bf16 => Elem::Bf16,
            Type::Tf32 => Elem::Tf32,
            Type::F32 => Elem::F32,
            Type::F64 => Elem::F64,
            Type::S8 => Elem::S8,
            Type::U8 => Elem::U8,
            Type::S4 => Elem::S4,
            Type::U4 => Elem::U4,
            Type::S32 => Elem::S32,
            Type::B1 => Elem::B1,
            _ => return None,
        })
    }

    fn is_float(self) -> bool {
        matches!(self, Elem::F16 | Elem::Bf16 | Elem::Tf32 | Elem::F32 | Elem::F64)
    }

    /// The type products and sums are computed in.
    fn compute_ty(self) -> Ty {
        match self {
            Elem::F64 => Ty::Double,
            e if e.is_float() => Ty::Float,
            _ => Ty::I64,
        }
    }
}

/// Where a fragment element lies: which of the warp's matrix products
/// (`mma.m8n8k4` with f16 computes four), its row and its column. For `B1`
/// the column of A and the row of B count 32-bit words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pos {
    pub batch: u8,
    pub row: u16,
    pub col: u16,
}

/// A fragment: `regs` registers of `per_reg` elements each, element `e`
/// (register `e / per_reg`, bits from `(e % per_reg) * bits`) of lane `l`
/// at `pos[e][l]`.
#[derive(Clone, Debug)]
pub struct Frag {
    pub elem: Elem,
    pub regs: u32,
    pub per_reg: u32,
    pub pos: Vec<[Pos; W]>,
}

impl Frag {
    fn new(elem: Elem, per_reg: u32, count: u32, at: impl Fn(u32, u32) -> Pos) -> Frag {
        let pos = (0..count).map(|i| std::array::from_fn(|l| at(l as u32, i))).collect();
        Frag { elem, regs: count / per_reg, per_reg, pos }
    }

    /// Register width in bits (32, or 64 for f64).
    pub fn reg_bits(&self) -> u32 {
        if self.elem == Elem::F64 {
            64
        } else {
            32
        }
    }

    /// The lane and element holding each position, the first copy where
    /// the fragment repeats itself.
    pub fn index(&self) -> HashMap<Pos, (u32, u32)> {
        let mut map = HashMap::new();
        for (e, lanes) in self.pos.iter().enumerate() {
            for (l, p) in lanes.iter().enumerate() {
                map.entry(*p).or_insert((l as u32, e as u32));
            }
        }
        map
    }

    /// The elements of the first `rows` rows, in whole registers.
    fn top_rows(&self, rows: u16) -> Option<Frag> {
        let mut pos = Vec::new();
        for r in 0..self.regs as usize {
            let chunk = &self.pos[r * self.per_reg as usize..(r + 1) * self.per_reg as usize];
            let inside = chunk.iter().all(|lanes| lanes.iter().all(|p| p.row < rows));
            let outside = chunk.iter().all(|lanes| lanes.iter().all(|p| p.row >= rows));
            if inside {
                pos.extend_from_slice(chunk);
            } else if !outside {
                return None;
            }
        }
        Some(Frag { elem: self.elem, regs: pos.len() as u32 / self.per_reg, per_reg: self.per_reg, pos })
    }

    fn shifted(&self, drow: u16, dcol: u16) -> Vec<[Pos; W]> {
        self.pos.iter().map(|lanes| lanes.map(|p| Pos { batch: p.batch, row: p.row + drow, col: p.col + dcol })).collect()
    }
}

fn at(row: u32, col: u32) -> Pos {
    Pos { batch: 0, row: row as u16, col: col as u16 }
}

/// Which matrix of `D = A * B + C` a fragment holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    A,
    B,
    C,
}

/// The accumulator fragment of the 16x8 shapes (`c0..c3`), `per_reg`
/// elements a register.
fn acc_16x8(elem: Elem, per_reg: u32) -> Frag {
    Frag::new(elem, per_reg, 4, |l, i| at((l >> 2) + 8 * (i >> 1), (l % 4) * 2 + (i & 1)))
}

/// The accumulator fragment of the 8x8 shapes other than f16 m8n8k4.
fn acc_8x8(elem: Elem) -> Frag {
    Frag::new(elem, 1, 2, |l, i| at(l >> 2, (l % 4) * 2 + i))
}

/// Fragments of `mma.sync` shapes, from the PTX ISA's "Matrix Fragments
/// for mma.mMnNkK" sections (`row_major` says the `.alayout`/`.blayout`
/// of the m8n8k4 f16 shape, the only one with a choice).
pub fn mma_fragment(shape: Shape, which: Which, elem: Elem, row_major: bool) -> Option<Frag> {
    use Elem::*;
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let gid = |l: u32| l >> 2;
    let tig = |l: u32| l % 4;
    let f = match (m, n, k, which, elem) {
        // m8n8k4 with f16: four products, one per quad pair (lanes 4q..4q+3
        // and 16+4q..16+4q+3); the high group holds rows (or columns) 4-7.
        (8, 8, 4, _, F16 | F32) if which != Which::C || elem == F16 || elem == F32 => {
            let batch = |l: u32| ((l / 4) % 4) as u8;
            let hi = |l: u32| if l >= 16 { 4 } else { 0 };
            let p = |l: u32, row: u32, col: u32| Pos { batch: batch(l), row: row as u16, col: col as u16 };
            match which {
                Which::A if elem == F16 => {
                    if row_major {
                        Frag::new(F16, 2, 4, |l, i| p(l, l % 4 + hi(l), i))
                    } else {
                        Frag::new(F16, 2, 4, |l, i| p(l, i % 4 + hi(l), l % 4))
                    }
                }
                Which::B if elem == F16 => {
                    if row_major {
                        Frag::new(F16, 2, 4, |l, i| p(l, l % 4, i + hi(l)))
                    } else {
                        Frag::new(F16, 2, 4, |l, i| p(l, i, l % 4 + hi(l)))
                    }
                }
                Which::C if elem == F16 => Frag::new(F16, 2, 8, |l, i| p(l, l % 4 + hi(l), i)),
                Which::C => Frag::new(F32, 1, 8, |l, i| p(l, (l & 1) + (i & 2) + hi(l), (i & 4) + (l & 2) + (i & 1))),
                _ => return None,
            }
        }
        (8, 8, 4, Which::A, F64) => Frag::new(F64, 1, 1, |l, _| at(l >> 2, l % 4)),
        (8, 8, 4, Which::B, F64) => Frag::new(F64, 1, 1, |l, _| at(l % 4, l >> 2)),
        (8, 8, 4, Which::C, F64) => acc_8x8(F64),
        (8, 8, 16, Which::A, S8 | U8) => Frag::new(elem, 4, 4, |l, i| at(gid(l), tig(l) * 4 + i)),
        (8, 8, 16, Which::B, S8 | U8) => Frag::new(elem, 4, 4, |l, i| at(tig(l) * 4 + i, gid(l))),
        (8, 8, 32, Which::A, S4 | U4) => Frag::new(elem, 8, 8, |l, i| at(gid(l), tig(l) * 8 + i)),
        (8, 8, 32, Which::B, S4 | U4) => Frag::new(elem, 8, 8, |l, i| at(tig(l) * 8 + i, gid(l))),
        (8, 8, 128, Which::A, B1) => Frag::new(B1, 1, 1, |l, _| at(gid(l), tig(l))),
        (8, 8, 128, Which::B, B1) => Frag::new(B1, 1, 1, |l, _| at(tig(l), gid(l))),
        (8, 8, 16 | 32 | 128, Which::C, S32) => acc_8x8(S32),
        (16, 8, 4, Which::A, Tf32 | F64) => Frag::new(elem, 1, 2, |l, i| at(gid(l) + 8 * i, tig(l))),
        (16, 8, 4, Which::B, Tf32 | F64) => Frag::new(elem, 1, 1, |l, _| at(tig(l), gid(l))),
        (16, 8, 8, Which::A, F16 | Bf16) => Frag::new(elem, 2, 4, |l, i| at(gid(l) + 8 * (i >> 1), tig(l) * 2 + (i & 1))),
        (16, 8, 8, Which::B, F16 | Bf16) => Frag::new(elem, 2, 2, |l, i| at(tig(l) * 2 + i, gid(l))),
        (16, 8, 8, Which::A, Tf32 | F64) => Frag::new(elem, 1, 4, |l, i| at(gid(l) + 8 * (i & 1), tig(l) + 4 * (i >> 1))),
        (16, 8, 8, Which::B, Tf32 | F64) => Frag::new(elem, 1, 2, |l, i| at(tig(l) + 4 * i, gid(l))),
        (16, 8, 16, Which::A, F16 | Bf16) => {
            Frag::new(elem, 2, 8, |l, i| at(gid(l) + 8 * ((i >> 1) & 1), tig(l) * 2 + (i & 1) + 8 * (i >> 2)))
        }
        (16, 8, 16, Which::B, F16 | Bf16) => Frag::new(elem, 2, 4, |l, i| at(tig(l) * 2 + (i & 1) + 8 * (i >> 1), gid(l))),
        (16, 8, 16, Which::A, F64) => Frag::new(F64, 1, 8, |l, i| at(gid(l) + 8 * (i % 2), 4 * (i / 2) + tig(l))),
        (16, 8, 16, Which::B, F64) => Frag::new(F64, 1, 4, |l, i| at(tig(l) + 4 * i, gid(l))),
        (16, 8, 16, Which::A, S8 | U8) => Frag::new(elem, 4, 8, |l, i| at(gid(l) + 8 * (i >> 2), tig(l) * 4 + (i & 3))),
        (16, 8, 16, Which::B, S8 | U8) => Frag::new(elem, 4, 4, |l, i| at(tig(l) * 4 + i, gid(l))),
        (16, 8, 32, Which::A, S8 | U8) => {
            Frag::new(elem, 4, 16, |l, i| at(gid(l) + 8 * ((i >> 2) & 1), tig(l) * 4 + (i & 3) + 16 * (i >> 3)))
        }
        (16, 8, 32, Which::B, S8 | U8) => Frag::new(elem, 4, 8, |l, i| at(tig(l) * 4 + (i & 3) + 16 * (i >> 2), gid(l))),
        (16, 8, 32, Which::A, S4 | U4) => Frag::new(elem, 8, 16, |l, i| at(gid(l) + 8 * (i >> 3), tig(l) * 8 + (i & 7))),
        (16, 8, 32, Which::B, S4 | U4) => Frag::new(elem, 8, 8, |l, i| at(tig(l) * 8 + i, gid(l))),
        (16, 8, 64, Which::A, S4 | U4) => {
            Frag::new(elem, 8, 32, |l, i| at(gid(l) + 8 * ((i >> 3) & 1), tig(l) * 8 + (i & 7) + 32 * (i >> 4)))
        }
        (16, 8, 64, Which::B, S4 | U4) => Frag::new(elem, 8, 16, |l, i| at(tig(l) * 8 + (i & 7) + 32 * (i >> 3), gid(l))),
        (16, 8, 128, Which::A, B1) => Frag::new(B1, 1, 2, |l, i| at(gid(l) + 8 * i, tig(l))),
        (16, 8, 128, Which::B, B1) => Frag::new(B1, 1, 1, |l, _| at(tig(l), gid(l))),
        // The ISA's column formula for a32..a63 reads `(threadID_in_group *
        // 32) + i`; the figure and every other shape take `i & 0x1F`.
        (16, 8, 256, Which::A, B1) => Frag::new(B1, 1, 4, |l, i| at(gid(l) + 8 * (i & 1), tig(l) + 4 * (i >> 1))),
        (16, 8, 256, Which::B, B1) => Frag::new(B1, 1, 2, |l, i| at(tig(l) + 4 * i, gid(l))),
        (16, 8, _, Which::C, F32 | S32 | F64) => acc_16x8(elem, 1),
        (16, 8, _, Which::C, F16) => acc_16x8(F16, 2),
        _ => return None,
    };
    Some(f)
}

/// How D's elements combine A, B and C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Fused multiply-adds in increasing k; the rounding of `.f64`.
    Float(Rounding),
    /// The exact sum, clamped to 32 bits with `.satfinite`, else wrapped.
    Int { saturate: bool },
    /// popc of the AND (`and`) or XOR of 32-bit words, added.
    Bits { and: bool },
}

/// A warp's `D = A * B + C`: the fragments of the four matrices and the
/// product's depth (in 32-bit words for single-bit matrices).
#[derive(Clone, Debug)]
pub struct MatrixProduct {
    pub k: u32,
    pub a: Frag,
    pub b: Frag,
    pub c: Frag,
    pub d: Frag,
    pub combine: Combine,
}

/// The base fragment a wmma matrix is tiled with, and its tile size.
fn wmma_tile(which: Which, elem: Elem, acc: Elem) -> Option<(Frag, u16, u16)> {
    let s = |m, n, k| Shape { m, n, k };
    Some(match (which, elem) {
        (Which::A, Elem::F16 | Elem::Bf16 | Elem::S8 | Elem::U8) => (mma_fragment(s(16, 8, 16), Which::A, elem, true)?, 16, 16),
        (Which::B, Elem::F16 | Elem::Bf16 | Elem::S8 | Elem::U8) => (mma_fragment(s(16, 8, 16), Which::B, elem, true)?, 16, 8),
        (Which::A, Elem::Tf32) => (mma_fragment(s(16, 8, 8), Which::A, elem, true)?, 16, 8),
        (Which::B, Elem::Tf32) => (mma_fragment(s(16, 8, 8), Which::B, elem, true)?, 8, 8),
        (Which::A, Elem::F64) => (mma_fragment(s(8, 8, 4), which, elem, true)?, 8, 4),
        (Which::B, Elem::F64) => (mma_fragment(s(8, 8, 4), which, elem, true)?, 4, 8),
        (Which::A, Elem::S4 | Elem::U4) => (mma_fragment(s(8, 8, 32), which, elem, true)?, 8, 32),
        (Which::B, Elem::S4 | Elem::U4) => (mma_fragment(s(8, 8, 32), which, elem, true)?, 32, 8),
        (Which::A, Elem::B1) => (mma_fragment(s(8, 8, 128), which, elem, true)?, 8, 4),
        (Which::B, Elem::B1) => (mma_fragment(s(8, 8, 128), which, elem, true)?, 4, 8),
        (Which::C, _) => match (acc, elem) {
            (Elem::F64, _) => (acc_8x8(Elem::F64), 8, 8),
            (_, Elem::S4 | Elem::U4 | Elem::B1) => (acc_8x8(Elem::S32), 8, 8),
            (Elem::F16, _) => (acc_16x8(Elem::F16, 2), 16, 8),
            (a, _) => (acc_16x8(a, 1), 16, 8),
        },
        _ => return None,
    })
}

/// The fragment of one wmma matrix: `elem` is the element type of the
/// multiplicands, `acc` the accumulator's (for `Which::C`).
pub fn wmma_fragment(shape: Shape, which: Which, elem: Elem, acc: Elem) -> Option<Frag> {
    let (rows, cols) = match which {
        Which::A => (shape.m, shape.k),
        Which::B => (shape.k, shape.n),
        Which::C => (shape.m, shape.n),
    };
    // Single-bit columns (of A) and rows (of B) count words.
    let (rows, cols) = match (which, elem) {
        (Which::A, Elem::B1) => (rows, cols / 32),
        (Which::B, Elem::B1) => (rows / 32, cols),
        _ => (rows, cols),
    };
    let (tile, th, tw) = wmma_tile(which, elem, acc)?;
    let tile = if rows < th { tile.top_rows(rows)? } else { tile };
    let (th, tw) = (th.min(rows), tw);
    if rows % th != 0 || cols % tw != 0 {
        return None;
    }
    let mut pos = Vec::new();
    for tr in 0..rows / th {
        for tc in 0..cols / tw {
            pos.extend(tile.shifted(tr * th, tc * tw));
        }
    }
    let per_reg = tile.per_reg;
    let regs = wmma_registers(shape, which, elem, acc)?;
    let filled = pos.len() as u32 / per_reg;
    if filled == 0 || regs % filled != 0 {
        return None;
    }
    let once = pos.clone();
    while (pos.len() as u32) < regs * per_reg {
        pos.extend_from_slice(&once);
    }
    Some(Frag { elem: tile.elem, regs, per_reg, pos })
}

/// Registers of a wmma fragment ("Matrix Fragments for WMMA").
fn wmma_registers(shape: Shape, which: Which, elem: Elem, acc: Elem) -> Option<u32> {
    use Elem::*;
    let sh = (shape.m, shape.n, shape.k);
    Some(match (which, elem) {
        (Which::C, _) => match (acc, sh) {
            (F16, (16, 16, 16) | (32, 8, 16) | (8, 32, 16)) => 4,
            (F32 | S32, (16, 16, 16) | (32, 8, 16) | (8, 32, 16) | (16, 16, 8)) => 8,
            (F64, (8, 8, 4)) | (S32, (8, 8, 32) | (8, 8, 128)) => 2,
            _ => return None,
        },
        (_, F16) if matches!(sh, (16, 16, 16) | (32, 8, 16) | (8, 32, 16)) => 8,
        (Which::A, Bf16) => match sh {
            (16, 16, 16) => 4,
            (8, 32, 16) => 2,
            (32, 8, 16) => 8,
            _ => return None,
        },
        (Which::B, Bf16) => match sh {
            (16, 16, 16) => 4,
            (8, 32, 16) => 8,
            (32, 8, 16) => 2,
            _ => return None,
        },
        (Which::A, S8 | U8) => match sh {
            (16, 16, 16) => 2,
            (8, 32, 16) => 1,
            (32, 8, 16) => 4,
            _ => return None,
        },
        (Which::B, S8 | U8) => match sh {
            (16, 16, 16) => 2,
            (8, 32, 16) => 4,
            (32, 8, 16) => 1,
            _ => return None,
        },
        (_, Tf32) if sh == (16, 16, 8) => 4,
        (_, F64) if sh == (8, 8, 4) => 1,
        (_, S4 | U4) if sh == (8, 8, 32) => 1,
        (_, B1) if sh == (8, 8, 128) => 1,
        _ => return None,
    })
}

/// The default wmma stride: the leading dimension ("Matrix Storage for WMMA").
fn wmma_default_stride(shape: Shape, which: Which, row_major: bool) -> u32 {
    let (rows, cols) = match which {
        Which::A => (shape.m, shape.k),
        Which::B => (shape.k, shape.n),
        Which::C => (shape.m, shape.n),
    };
    u32::from(if row_major { cols } else { rows })
}

/// The product an `mma` or `wmma.mma` instruction computes, or why not.
fn product_spec(shape: Shape, types: [Type; 4], wmma: bool, row_major: [bool; 2], combine: Combine) -> Result<MatrixProduct, String> {
    let elem = |t: Type| Elem::from_type(t).ok_or_else(|| format!("matrix element type `.{t}`"));
    let [dt, at, bt, ct] = types;
    let (d, a, b, c) = (elem(dt)?, elem(at)?, elem(bt)?, elem(ct)?);
    let unsupported = || format!("shape .m{}n{}k{} with these types", shape.m, shape.n, shape.k);
    let frag = |which: Which, e: Elem| -> Result<Frag, String> {
        let f = if wmma {
            wmma_fragment(shape, which, if which == Which::C { a } else { e }, e)
        } else {
            let rm = match which {
                Which::A => row_major[0],
                Which::B => row_major[1],
                Which::C => true,
            };
            mma_fragment(shape, which, e, rm)
        };
        f.ok_or_else(unsupported)
    };
    let fa = frag(Which::A, a)?;
    let fb = frag(Which::B, b)?;
    let fc = frag(Which::C, c)?;
    let fd = frag(Which::C, d)?;
    let k = if a == Elem::B1 { u32::from(shape.k) / 32 } else { u32::from(shape.k) };
    let ok = match (a, b) {
        (Elem::F16, Elem::F16) => matches!(c, Elem::F16 | Elem::F32) && matches!(d, Elem::F16 | Elem::F32),
        (Elem::Bf16, Elem::Bf16) | (Elem::Tf32, Elem::Tf32) => c == Elem::F32 && d == Elem::F32,
        (Elem::F64, Elem::F64) => c == Elem::F64 && d == Elem::F64,
        (Elem::S8 | Elem::U8, Elem::S8 | Elem::U8) | (Elem::S4 | Elem::U4, Elem::S4 | Elem::U4) => c == Elem::S32 && d == Elem::S32,
        (Elem::B1, Elem::B1) => c == Elem::S32 && d == Elem::S32,
        _ => false,
    };
    if !ok {
        return Err(unsupported());
    }
    let combine = match (a, combine) {
        (Elem::B1, Combine::Bits { .. }) => combine,
        (Elem::B1, _) => return Err("single-bit mma without `.and.popc` or `.xor.popc`".into()),
        (_, Combine::Bits { .. }) => return Err("`.popc` on a non-single-bit mma".into()),
        (e, Combine::Int { .. }) if !e.is_float() => combine,
        (e, Combine::Float(_)) if e.is_float() => combine,
        (e, _) if e.is_float() => Combine::Float(Rounding::Rn),
        _ => Combine::Int { saturate: false },
    };
    Ok(MatrixProduct { k, a: fa, b: fb, c: fc, d: fd, combine })
}

/// How a lane reads other lanes' fragment elements.
enum Exchange {
    /// Warp mode: the registers themselves, one vector per register.
    Vectors { a: Vec<V>, b: Vec<V>, c: Vec<V> },
    /// Thread mode: the snapshot of every lane's registers (`slots` i64
    /// slots per lane: A's, then B's, then C's) and this lane's index.
    Snapshot { snap: V, lane: V, slots: u32 },
    /// Thread mode where the hardware runs warps: a lane reads another
    /// lane's register with one instruction. `lane` is this lane's index;
    /// an `mma`'s registers (A's, B's, C's) are read as `plan` says.
    Lanes { lane: V, mma: Option<LaneOperands> },
}

/// An `mma`'s registers (A's, B's, C's) and its form's lane plan.
type LaneOperands = (Vec<V>, Vec<V>, Vec<V>, std::rc::Rc<LanePlan>);

/// Thread mode on hardware that runs warps (a lane reads another lane's
/// register with one instruction, AMD's `ds_bpermute`): where each lane
/// finds each operand element of its share of D, as lane reads of whole
/// registers. A read is `regs[which][reg]` of lane `lanes[l]` for lane
/// `l`; an operand is element `sub` of a read's register. The plan exists
/// when for every element of D and every k the register and the element
/// within it are the same in all lanes and only the lane differs, which
/// holds for every `mma` shape of the PTX ISA's fragment tables but
/// Volta's `m8n8k4` with f16 multiplicands in most of its layouts (those,
/// and `wmma` forms without a plan, keep the snapshot): then the
/// warp exchanges only the registers it multiplies (32 reads for
/// `m16n8k32` with 8-bit integers) instead of a snapshot of every lane's
/// registers, and the products need no table or scratch memory.
///
/// Invariant (checked by [`lane_plan`] and its tests): for element `e` of
/// D, lane `l` and depth `k`, `reads[a[e][k].read]` at lane `l` holds A's
/// element of D's row (and batch) at column `k` in element `a[e][k].sub`
/// of its register; likewise B's at row `k` and D's column, and C's at
/// D's position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LanePlan {
    pub reads: Vec<LaneRead>,
    /// Per element of D: C's source.
    pub c: Vec<LaneElement>,
    /// Per element of D, per k: A's and B's sources.
    pub a: Vec<Vec<LaneElement>>,
    pub b: Vec<Vec<LaneElement>>,
}

/// One register read from other lanes: `which` (0 A, 1 B, 2 C) and the
/// register, and for each lane the lane it reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaneRead {
    pub which: u8,
    pub reg: u32,
    pub lanes: [u8; W],
}

/// An operand element: a read and the element within its register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaneElement {
    pub read: usize,
    pub sub: u32,
}

impl LaneRead {
    /// Whether every lane reads its own register.
    pub fn is_own(&self) -> bool {
        self.lanes.iter().enumerate().all(|(l, &s)| s as usize == l)
    }
}

/// The lane plan of product `p`, or `None` when some operand element
/// lies in different registers (or elements of them) in different lanes.
pub fn lane_plan(p: &MatrixProduct) -> Option<LanePlan> {
    let mut plan = LanePlan { reads: Vec::new(), c: Vec::new(), a: Vec::new(), b: Vec::new() };
    let mut known: HashMap<LaneRead, usize> = HashMap::new();
    let idx = [p.a.index(), p.b.index(), p.c.index()];
    let frags = [&p.a, &p.b, &p.c];
    // The read and element holding `which`'s element at `at(lane)`.
    let mut source = |which: u8, at: &dyn Fn(usize) -> Pos, plan: &mut LanePlan| -> Option<LaneElement> {
        let f = frags[which as usize];
        let mut lanes = [0u8; W];
        let mut reg_sub = None;
        for (l, lane) in lanes.iter_mut().enumerate() {
            let &(sl, se) = idx[which as usize].get(&at(l))?;
            let rs = (se / f.per_reg, se % f.per_reg);
            if *reg_sub.get_or_insert(rs) != rs {
                return None;
            }
            *lane = sl as u8;
        }
        let (reg, sub) = reg_sub?;
        let read = LaneRead { which, reg, lanes };
        let n = plan.reads.len();
        let i = *known.entry(read.clone()).or_insert(n);
        if i == n {
            plan.reads.push(read);
        }
        Some(LaneElement { read: i, sub })
    };
    for lanes in &p.d.pos {
        let c = source(2, &|l| lanes[l], &mut plan)?;
        plan.c.push(c);
        let (mut av, mut bv) = (Vec::new(), Vec::new());
        for k in 0..p.k as u16 {
            av.push(source(0, &|l| Pos { batch: lanes[l].batch, row: lanes[l].row, col: k }, &mut plan)?);
            bv.push(source(1, &|l| Pos { batch: lanes[l].batch, row: k, col: lanes[l].col }, &mut plan)?);
        }
        plan.a.push(av);
        plan.b.push(bv);
    }
    Some(plan)
}

/// `lanes` as `((l & mask) >> shift) * mul + add` of the lane `l`, the
/// forms of the PTX ISA's fragment tables (group and thread in group),
/// or `None`.
pub fn lane_formula(values: &[u32; W]) -> Option<(u32, u32, u32, u32)> {
    let add = values[0];
    for mask in 0..W as u32 {
        for shift in 0..5 {
            for mul in 0..=64 {
                if values.iter().enumerate().all(|(l, &s)| (((l as u32 & mask) >> shift) * mul).checked_add(add) == Some(s)) {
                    return Some((mask, shift, mul, add));
                }
            }
        }
    }
    None
}

impl<'c, 'm> FnLower<'c, 'm> {
    /// Warp-level matrix instructions (see the module notes).
    pub fn matrix(&mut self, inst: &Instruction) -> Res<()> {
        let r = self.matrix_instruction(inst);
        // Its snapshot buffers are dead now.
        for (p, bytes) in std::mem::take(&mut self.matrix_buffers) {
            self.out.op(format_args!("call void @llvm.lifetime.end.p0(i64 {bytes}, ptr {p})"));
        }
        r
    }

    fn matrix_instruction(&mut self, inst: &Instruction) -> Res<()> {
        match inst.op {
            Opcode::Mma => self.mma(inst),
            Opcode::Wmma if inst.has(self.b, Flag::MmaOp) => self.mma(inst),
            Opcode::Wmma => self.wmma_memory(inst),
            Opcode::Ldmatrix => self.ldmatrix(inst),
            Opcode::Stmatrix => self.stmatrix(inst),
            Opcode::Movmatrix => self.movmatrix(inst),
            _ => self.unsupported(format!("instruction `{}`", self.describe(inst))),
        }
    }

    fn vector_operands(&self, op: &Operand) -> Vec<Operand> {
        match *op {
            Operand::Vector(l) => self.b.list(l).to_vec(),
            other => vec![other],
        }
    }

    /// Registers of a fragment operand, as integers of `bits` bits.
    fn fragment_values(&mut self, op: &Operand, regs: u32, bits: u32, what: &str) -> Res<Vec<V>> {
        let items = self.vector_operands(op);
        if items.len() as u32 != regs {
            return self.invalid(format!("{what} needs {regs} registers, {} given", items.len()));
        }
        let mut out = Vec::new();
        for it in &items {
            out.push(self.get(it, Ty::int(bits))?);
        }
        Ok(out)
    }

    fn mma(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let wmma = inst.op == Opcode::Wmma;
        let Some(shape) = inst.shape(b) else { return self.invalid("mma needs a shape") };
        let types: Vec<Type> = inst.types(b).collect();
        let types = match types.as_slice() {
            [d, a, bt, c] => [*d, *a, *bt, *c],
            // wmma.mma's f16 form names D and C only.
            [d, c] if wmma => [*d, Type::F16, Type::F16, *c],
            _ => return self.invalid(format!("`{}` needs its D, A, B and C types", self.describe(inst))),
        };
        let layouts: Vec<bool> = b
            .mods(inst)
            .iter()
            .filter_map(|m| match m {
                Modifier::Flag(Flag::Row) => Some(true),
                Modifier::Flag(Flag::Col) => Some(false),
                _ => None,
            })
            .collect();
        let row_major = [layouts.first().copied().unwrap_or(true), layouts.get(1).copied().unwrap_or(false)];
        let combine = if inst.has(b, Flag::Popc) {
            Combine::Bits { and: inst.has(b, Flag::And) }
        } else if types[1].is_float() || matches!(types[1], Type::Tf32) {
            Combine::Float(inst.rounding(b).unwrap_or(Rounding::Rn))
        } else {
            Combine::Int { saturate: inst.has(b, Flag::Satfinite) }
        };
        if matches!(combine, Combine::Float(r) if r != Rounding::Rn) && types[1] != Type::F64 {
            return self.invalid(format!("rounding `.{}` on a non-f64 mma", inst.rounding(b).map_or("", |r| r.as_str())));
        }
        let form = format!("{shape:?} {types:?} {wmma} {row_major:?} {combine:?}");
        let spec = match product_spec(shape, types, wmma, row_major, combine) {
            Ok(s) => s,
            Err(why) => return self.unsupported(format!("`{}`: {why}", self.describe(inst))),
        };
        let args = b.args(inst);
        if args.len() != 4 {
            return self.invalid("mma takes d, a, b, c");
        }
        let av = self.fragment_values(&args[1], spec.a.regs, spec.a.reg_bits(), "operand a")?;
        let bv = self.fragment_values(&args[2], spec.b.regs, spec.b.reg_bits(), "operand b")?;
        let cv = self.fragment_values(&args[3], spec.c.regs, spec.c.reg_bits(), "operand c")?;
        let dests = self.vector_operands(&args[0]);
        if dests.len() as u32 != spec.d.regs {
            return self.invalid(format!("operand d needs {} registers, {} given", spec.d.regs, dests.len()));
        }
        let plan = if self.lane_reads() {
            let cached = self.cx.mma_plans.get(&form).cloned();
            cached.unwrap_or_else(|| {
                let plan = lane_plan(&spec).map(std::rc::Rc::new);
                self.cx.mma_plans.insert(form.clone(), plan.clone());
                plan
            })
        } else {
            None
        };
        let x = if self.warp.is_some() {
            Exchange::Vectors { a: av, b: bv, c: cv }
        } else if let Some(plan) = plan {
            Exchange::Lanes { lane: self.lane_index(), mma: Some((av, bv, cv, plan)) }
        } else {
            let regs: Vec<V> = av.into_iter().chain(bv).chain(cv).collect();
            self.gather_lanes(&regs)?
        };
        let d = self.product(&spec, &x, &form)?;
        for (op, v) in dests.iter().zip(d) {
            self.set(op, v)?;
        }
        Ok(())
    }

    /// Thread mode on a target whose hardware runs warps: lanes read each
    /// other's registers directly (`shfl`), not through a snapshot.
    fn lane_reads(&self) -> bool {
        self.warp.is_none() && !self.cx.facts.emulates_threads
    }

    fn lane_index(&mut self) -> V {
        self.out.def(Ty::I32, format_args!("and i32 %lin, 31"))
    }

    /// How the lanes of a thread-mode ldmatrix or stmatrix read `regs` of
    /// other lanes.
    fn lane_exchange(&mut self, regs: &[V]) -> Res<Exchange> {
        if self.lane_reads() {
            Ok(Exchange::Lanes { lane: self.lane_index(), mma: None })
        } else {
            self.gather_lanes(regs)
        }
    }

    /// Thread mode: every lane's `regs` (zero-extended to 64-bit slots) in
    /// one snapshot, through the runtime's warp collective.
    fn gather_lanes(&mut self, regs: &[V]) -> Res<Exchange> {
        let slots = regs.len() as u32;
        let buf = self.out.alloca(&format!("[{slots} x i64]"), 8);
        self.matrix_buffer(&buf, u64::from(slots) * 8);
        for (i, r) in regs.iter().enumerate() {
            let w = self.convert(r.clone(), Ty::I64, false);
            let p = self.out.def(Ty::Ptr, format_args!("getelementptr i64, ptr {buf}, i64 {i}"));
            self.out.op(format_args!("store {w}, {p}, align 8"));
        }
        // Targets that gather into the caller's memory get room for 32 lanes.
        let scratch = if self.cx.facts.runtime_gather_buffer {
            "null".to_string()
        } else {
            let scratch = self.out.alloca(&format!("[{} x i64]", slots * W as u32), 8);
            self.matrix_buffer(&scratch, u64::from(slots) * 8 * W as u64);
            scratch
        };
        let site = self.cx.next_site;
        self.cx.next_site += 1;
        self.cx.declare_runtime(&crate::cpu_abi::runtime::WARP_GATHER);
        let snap = self.out.def(
            Ty::Ptr,
            format_args!("call ptr @__anycuda_warp_gather(ptr %ctx, i32 %lin, ptr {buf}, i32 {}, ptr {scratch}, i32 {site})", slots * 8),
        );
        let lane = self.out.def(Ty::I32, format_args!("and i32 %lin, 31"));
        Ok(Exchange::Snapshot { snap, lane, slots })
    }

    /// Marks the stack buffer `p` (`bytes` long) live from here to the end
    /// of the matrix instruction being lowered ([`Self::matrix`]). Without
    /// the markers every instruction's buffers had a stack slot of their
    /// own: one of llama.cpp's `mul_mat_q` kernels needed 173,424 bytes of
    /// scratch memory per lane on AMD GPUs, more than gfx90a allows.
    fn matrix_buffer(&mut self, p: &str, bytes: u64) {
        for (name, decl) in [
            ("llvm.lifetime.start.p0", "declare void @llvm.lifetime.start.p0(i64 immarg, ptr nocapture)"),
            ("llvm.lifetime.end.p0", "declare void @llvm.lifetime.end.p0(i64 immarg, ptr nocapture)"),
        ] {
            self.cx.declare(name, decl);
        }
        self.out.op(format_args!("call void @llvm.lifetime.start.p0(i64 {bytes}, ptr {p})"));
        self.matrix_buffers.push((p.to_string(), bytes));
    }

    /// The raw bits of element `e` of a register value.
    fn element_bits(&mut self, reg: &V, e: u32, f: &Frag) -> V {
        let bits = f.elem.bits();
        let sub = e % f.per_reg;
        let wide = reg.ty;
        let v = if sub == 0 { reg.clone() } else { self.bin("lshr", reg, &V::int(wide, i128::from(sub * bits))) };
        let t = Ty::int(bits.max(8));
        let v = self.trunc(&v, t);
        if bits == 4 {
            self.bin("and", &v, &V::int(Ty::I8, 0xf))
        } else {
            v
        }
    }

    /// Raw element bits as the value products are computed with.
    fn element_value(&mut self, raw: &V, elem: Elem) -> V {
        match elem {
            Elem::F16 => {
                let h = self.bitcast(raw, Ty::Half);
                self.out.def(Ty::Float, format_args!("fpext {h} to {}", Ty::Float))
            }
            Elem::Bf16 => {
                let h = self.bitcast(raw, Ty::Bfloat);
                self.out.def(Ty::Float, format_args!("fpext {h} to {}", Ty::Float))
            }
            Elem::Tf32 => {
                let m = self.bin("and", raw, &V::int(Ty::I32, 0xffff_e000u32 as i128));
                self.bitcast(&m, Ty::Float)
            }
            Elem::F32 => self.bitcast(raw, Ty::Float),
            Elem::F64 => self.bitcast(raw, Ty::Double),
            Elem::S8 | Elem::S32 => self.sext(raw, Ty::I64),
            Elem::S4 => {
                let s = self.bin("shl", raw, &V::int(Ty::I8, 4));
                let s = self.bin("ashr", &s, &V::int(Ty::I8, 4));
                self.sext(&s, Ty::I64)
            }
            Elem::U8 | Elem::U4 | Elem::B1 => self.zext(raw, Ty::I64),
        }
    }

    /// The registers of D. `form`: the instruction's form, which decides
    /// `p` (the key of thread mode's fragment table).
    fn product(&mut self, p: &MatrixProduct, x: &Exchange, form: &str) -> Res<Vec<V>> {
        let cty = p.a.elem.compute_ty();
        let nd = p.d.pos.len();
        let mut results: Vec<V> = Vec::with_capacity(nd);
        match x {
            Exchange::Vectors { a, b, c } => {
                results = self.warp_product(p, a, b, c)?;
            }
            Exchange::Lanes { mma: Some((a, b, c, plan)), .. } => {
                return self.lane_product(p, [a, b, c], plan, form);
            }
            Exchange::Lanes { mma: None, .. } => return self.invalid("mma without its lane plan"),
            Exchange::Snapshot { snap, lane, slots } => {
                let kk = p.k as usize;
                let tab = match self.cx.mma_tables.get(form) {
                    Some(tab) => tab.clone(),
                    None => {
                        let table = self.snapshot_table(p, *slots)?;
                        let tab = self.constant_table(&table);
                        self.cx.mma_tables.insert(form.to_string(), tab.clone());
                        tab
                    }
                };
                let per_e = (1 + 2 * kk) * W;
                if self.cx.facts.cheap_frame_arrays {
                    // One loop nest for all of D's elements (the element
                    // index picks the table's rows), in a helper shared by
                    // every `mma` of the same product and table: a call
                    // per `mma`. Inline, the nest of each of the 512 `mma`
                    // of llama.cpp's largest thread-by-thread `mul_mat_q`
                    // kernel was 120 lines of IR, a third of its 180,000;
                    // unrolled (before the nest) the elements took many
                    // times as long again.
                    let out = self.out.alloca(&format!("[{nd} x {cty}]"), 8);
                    let name = format!(
                        "__anycuda_mma.{}.{cty}.{:?}.{:?}.{:?}.{:?}.{}",
                        tab.trim_start_matches('@').trim_matches('"'),
                        p.a.elem,
                        p.b.elem,
                        p.c.elem,
                        p.combine,
                        p.k
                    )
                    .replace(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '_', "_");
                    self.define_helper(&name, "void", "ptr %snap, i32 %lane, ptr %out", |this| {
                        let (snap_p, lane_p) = (V::scalar(Ty::Ptr, "%snap"), V::scalar(Ty::I32, "%lane"));
                        let (epre, ebody, edone) = (this.out.fresh_label("epre"), this.out.fresh_label("e"), this.out.fresh_label("edone"));
                        this.out.terminate(format_args!("br label %{epre}"));
                        this.out.label(&epre);
                        this.out.terminate(format_args!("br label %{ebody}"));
                        this.out.label(&ebody);
                        let enext = this.out.fresh("en");
                        let latch = this.out.fresh_label("elatch");
                        let e = this.out.def(Ty::I32, format_args!("phi i32 [0, %{epre}], [{enext}, %{latch}]"));
                        let base = this.bin("mul", &e, &V::int(Ty::I32, per_e as i128));
                        let acc = this.snapshot_dot(p, &snap_p, &tab, &lane_p, &base, cty);
                        this.out.terminate(format_args!("br label %{latch}"));
                        this.out.label(&latch);
                        let ei = this.zext(&e, Ty::I64);
                        let slot = this.out.def(Ty::Ptr, format_args!("getelementptr {cty}, ptr %out, {ei}"));
                        this.out.op(format_args!("store {acc}, {slot}"));
                        this.out.op(format_args!("{enext} = add i32 {}, 1", e.s));
                        let emore = this.out.def(Ty::I1, format_args!("icmp ult i32 {enext}, {nd}"));
                        this.out.terminate(format_args!("br {emore}, label %{ebody}, label %{edone}"));
                        this.out.label(&edone);
                        this.out.terminate(format_args!("ret void"));
                    });
                    self.out.op(format_args!("call void @{name}({snap}, {lane}, ptr {out})"));
                    for e in 0..nd {
                        let slot = self.out.def(Ty::Ptr, format_args!("getelementptr {cty}, ptr {out}, i64 {e}"));
                        results.push(self.out.def(cty, format_args!("load {cty}, {slot}")));
                    }
                } else {
                    // On a GPU each element's loop on its own, with
                    // constant table rows: D's elements stay in registers
                    // (an array indexed by a loop variable would be
                    // dynamically indexed registers, `v_movrel*`, or
                    // scratch memory).
                    for e in 0..nd {
                        let base = V::int(Ty::I32, (e * per_e) as i128);
                        results.push(self.snapshot_dot(p, snap, &tab, lane, &base, cty));
                    }
                }
            }
        }
        self.d_registers(p, &results)
    }

    /// D's registers from its elements.
    fn d_registers(&mut self, p: &MatrixProduct, results: &[V]) -> Res<Vec<V>> {
        let rbits = p.d.reg_bits();
        let rty = Ty::int(rbits);
        let mut regs = Vec::new();
        for r in 0..p.d.regs {
            let mut acc: Option<V> = None;
            for s in 0..p.d.per_reg {
                let e = (r * p.d.per_reg + s) as usize;
                let raw = self.finish(p, &results[e])?;
                let w = self.zext(&raw, rty);
                let w = if s == 0 { w } else { self.bin("shl", &w, &V::int(rty, i128::from(s * p.d.elem.bits()))) };
                acc = Some(match acc {
                    None => w,
                    Some(a) => self.bin("or", &a, &w),
                });
            }
            regs.push(acc.unwrap_or_else(|| V::int(rty, 0)));
        }
        Ok(regs)
    }

    /// Thread mode on hardware that runs warps: D's registers from a call
    /// of one function per form of `mma` ([`Self::lane_product_body`]).
    /// Inline, the straight-line products of the 128 `mma` of one of
    /// llama.cpp's `mul_mat_q` kernels took 74 s to compile for gfx1100
    /// (register allocation 34 s, scheduling 10 s of it); the loops over
    /// a snapshot they replace, 7.8 s.
    fn lane_product(&mut self, p: &MatrixProduct, regs: [&Vec<V>; 3], plan: &LanePlan, form: &str) -> Res<Vec<V>> {
        let mut name = String::from("__anycuda_mma_lanes.");
        for word in form.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
            if !name.ends_with('.') {
                name.push('_');
            }
            name.push_str(word);
        }
        let dty = Ty::int(p.d.reg_bits());
        let ret = format!("{{ {} }}", vec![dty.name(); p.d.regs as usize].join(", "));
        let mut params = vec!["ptr %ctx".to_string(), "i32 %lin".to_string()];
        let mut args = vec!["ptr %ctx".to_string(), "i32 %lin".to_string()];
        let mut formals: [Vec<V>; 3] = Default::default();
        for (which, rs) in regs.iter().enumerate() {
            for (i, r) in rs.iter().enumerate() {
                let formal = V::scalar(r.ty, format!("%m{which}.{i}"));
                params.push(format!("{formal}"));
                args.push(format!("{r}"));
                formals[which].push(formal);
            }
        }
        let mut failed = None;
        self.define_helper(&name, &ret, &params.join(", "), |this| {
            let lane = this.lane_index();
            let results = this.lane_product_body(p, &lane, [&formals[0], &formals[1], &formals[2]], plan);
            match this.d_registers(p, &results) {
                Ok(d) => {
                    let mut agg = "undef".to_string();
                    for (i, r) in d.iter().enumerate() {
                        let next = this.out.fresh("d");
                        this.out.op(format_args!("{next} = insertvalue {ret} {agg}, {r}, {i}"));
                        agg = next;
                    }
                    this.out.terminate(format_args!("ret {ret} {agg}"));
                }
                Err(e) => {
                    failed = Some(e);
                    this.out.terminate(format_args!("unreachable"));
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        let call = self.out.fresh("mma");
        self.out.op(format_args!("{call} = call {ret} @{name}({})", args.join(", ")));
        let mut d = Vec::with_capacity(p.d.regs as usize);
        for i in 0..p.d.regs {
            d.push(self.out.def(dty, format_args!("extractvalue {ret} {call}, {i}")));
        }
        Ok(d)
    }

    /// [`Self::lane_product`]'s function: each register [`LanePlan`]
    /// names read from its lanes once (`shfl.sync.idx` semantics, every
    /// lane taking part), then each element of D as C's element plus the
    /// products in increasing k, straight-line. Integer products add in 32
    /// bits: wrapped (no `.satfinite`), the low 32 bits of the exact sum;
    /// with `.satfinite` the products' sum is exact in 32 bits (at most 32
    /// products of 8-bit or 64 of 4-bit elements, below 2^21 in
    /// magnitude) and C joins it in 64 bits before the clamp.
    fn lane_product_body(&mut self, p: &MatrixProduct, lane: &V, regs: [&Vec<V>; 3], plan: &LanePlan) -> Vec<V> {
        let cty = p.a.elem.compute_ty();
        let (int, wraps) = match p.combine {
            Combine::Int { saturate } => (true, !saturate),
            _ => (false, false),
        };
        let mut got = Vec::with_capacity(plan.reads.len());
        for r in &plan.reads {
            let v = regs[r.which as usize][r.reg as usize].clone();
            got.push(if r.is_own() { v } else { self.read_lanes(&v, &r.lanes, lane) });
        }
        let frags = [&p.a, &p.b, &p.c];
        let mut values: HashMap<(u8, LaneElement), V> = HashMap::new();
        let mut value = |this: &mut Self, which: u8, o: LaneElement| -> V {
            if let Some(v) = values.get(&(which, o)) {
                return v.clone();
            }
            let f = frags[which as usize];
            let raw = this.element_bits(&got[o.read], o.sub, f);
            let v = this.element_value(&raw, f.elem);
            let v = this.as_compute(&v, cty);
            let v = if int && (which != 2 || wraps) { this.trunc(&v, Ty::I32) } else { v };
            values.insert((which, o), v.clone());
            v
        };
        let mut results = Vec::with_capacity(plan.c.len());
        for e in 0..plan.c.len() {
            let c = value(self, 2, plan.c[e]);
            if int && !wraps {
                let mut sum = V::int(Ty::I32, 0);
                for k in 0..p.k as usize {
                    let a = value(self, 0, plan.a[e][k]);
                    let b = value(self, 1, plan.b[e][k]);
                    sum = self.accumulate(p.combine, &sum, &a, &b, Ty::I32);
                }
                let sum = self.sext(&sum, Ty::I64);
                results.push(self.bin("add", &c, &sum));
                continue;
            }
            let mut acc = c;
            for k in 0..p.k as usize {
                let a = value(self, 0, plan.a[e][k]);
                let b = value(self, 1, plan.b[e][k]);
                acc = self.accumulate(p.combine, &acc, &a, &b, if int { Ty::I32 } else { cty });
            }
            results.push(acc);
        }
        results
    }

    /// Register `v` (32 or 64 bits) of lane `lanes[l]`, in lane `l`.
    fn read_lanes(&mut self, v: &V, lanes: &[u8; W], lane: &V) -> V {
        let src = self.lane_value(lane, &lanes.map(u32::from));
        self.cx.declare_runtime(&crate::cpu_abi::runtime::SHFL);
        let read = |this: &mut Self, w: &V| -> V {
            let site = this.cx.next_site;
            this.cx.next_site += 1;
            let r = this.out.def(
                Ty::I64,
                format_args!(
                    "call i64 @__anycuda_shfl(ptr %ctx, i32 %lin, i32 {}, {w}, {src}, i32 31, i32 -1, i32 {site})",
                    crate::cpu_abi::shfl::IDX
                ),
            );
            this.trunc(&r, Ty::I32)
        };
        if v.ty == Ty::I64 {
            let lo = self.trunc(v, Ty::I32);
            let hi = self.bin("lshr", v, &V::int(Ty::I64, 32));
            let hi = self.trunc(&hi, Ty::I32);
            let (lo, hi) = (read(self, &lo), read(self, &hi));
            let lo = self.zext(&lo, Ty::I64);
            let hi = self.zext(&hi, Ty::I64);
            let hi = self.bin("shl", &hi, &V::int(Ty::I64, 32));
            self.bin("or", &hi, &lo)
        } else {
            read(self, v)
        }
    }

    /// `values[lane]` (32 values): arithmetic on the lane index where
    /// [`lane_formula`] finds a form, else a constant table.
    fn lane_value(&mut self, lane: &V, values: &[u32; W]) -> V {
        match lane_formula(values) {
            Some((mask, shift, mul, add)) => {
                let x = self.bin("and", lane, &V::int(Ty::I32, i128::from(mask)));
                let x = self.bin("lshr", &x, &V::int(Ty::I32, i128::from(shift)));
                let x = self.bin("mul", &x, &V::int(Ty::I32, i128::from(mul)));
                self.bin("add", &x, &V::int(Ty::I32, i128::from(add)))
            }
            None => self.lane_row(lane, &|l| values[l] as usize),
        }
    }

    /// Thread mode's fragment table of product `p`: per D element, C's
    /// source, then A's and B's for each k, as bit offsets in a snapshot
    /// of `slots` 64-bit slots per lane, for each lane.
    fn snapshot_table(&mut self, p: &MatrixProduct, slots: u32) -> Res<Vec<u32>> {
        let ai = p.a.index();
        let bi = p.b.index();
        let ci = p.c.index();
        let nd = p.d.pos.len();
        // Where each lane's elements come from, for each element of D.
        let source = |idx: &HashMap<Pos, (u32, u32)>, pos: Pos| idx.get(&pos).copied();
        let (na, nb) = (p.a.regs, p.b.regs);
        let kk = p.k as usize;
        let mut table: Vec<u32> = Vec::with_capacity(nd * (1 + 2 * kk) * W);
        let bit = |base: u32, f: &Frag, (sl, se): (u32, u32)| -> u32 {
            (sl * slots + base + se / f.per_reg) * 64 + (se % f.per_reg) * f.elem.bits()
        };
        for e in 0..nd {
            let dpos = p.d.pos[e];
            for l in 0..W {
                let Some(s) = source(&ci, dpos[l]) else { return self.invalid("mma fragments do not cover C") };
                table.push(bit(na + nb, &p.c, s));
            }
            for k in 0..kk {
                for l in 0..W {
                    let pos = dpos[l];
                    let pa = Pos { batch: pos.batch, row: pos.row, col: k as u16 };
                    let Some(s) = source(&ai, pa) else { return self.invalid("mma fragments do not cover A") };
                    table.push(bit(0, &p.a, s));
                }
                for l in 0..W {
                    let pos = dpos[l];
                    let pb = Pos { batch: pos.batch, row: k as u16, col: pos.col };
                    let Some(s) = source(&bi, pb) else { return self.invalid("mma fragments do not cover B") };
                    table.push(bit(na, &p.b, s));
                }
            }
        }
        Ok(table)
    }

    /// Warp mode: the whole warp's product as one small matrix product.
    /// Each fragment element vector (converted once) is stored whole; the
    /// rows of B are gathered from those with constant indices, the rows
    /// of C through a table; each row of D (one loop over the rows) is its
    /// row of C plus the products in increasing k as vectors across the
    /// row (`<N x T>` fused multiply-adds of a broadcast A element and a
    /// row of B); D's fragment elements are gathered back per lane.
    fn warp_product(&mut self, p: &MatrixProduct, a: &[V], b: &[V], c: &[V]) -> Res<Vec<V>> {
        let cty = p.a.elem.compute_ty();
        let t = cty.name();
        let batches = p.d.pos.iter().flat_map(|l| l.iter().map(|q| q.batch)).max().unwrap_or(0) as usize + 1;
        let rows = p.d.pos.iter().flat_map(|l| l.iter().map(|q| q.row)).max().unwrap_or(0) as usize + 1;
        let cols = p.d.pos.iter().flat_map(|l| l.iter().map(|q| q.col)).max().unwrap_or(0) as usize + 1;
        let k = p.k as usize;
        let mut cache: HashMap<(u8, u32), V> = HashMap::new();
        // Element vectors, stored whole: element e of lane l at e * 32 + l.
        let mut staged = Vec::new();
        for (which, f, regs, target) in [(0u8, &p.a, a, p.a.elem), (1, &p.b, b, p.b.elem), (2, &p.c, c, p.d.elem)] {
            let buf = self.out.alloca(&format!("[{} x {t}]", f.pos.len() * W), 64);
            for e in 0..f.pos.len() {
                let v = self.fragment_element(&mut cache, which, regs, f, e as u32, target);
                let ptr = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr {t}, ptr {buf}, i64 {}", e * W));
                self.out.op(format_args!("store {v}, {ptr}"));
            }
            staged.push((buf, f.index()));
        }
        let slot = |idx: &HashMap<Pos, (u32, u32)>, q: Pos| -> Option<usize> { idx.get(&q).map(|&(l, e)| e as usize * W + l as usize) };
        // B's rows (k by k) in a buffer; A's elements through a table.
        let bbuf = self.out.alloca(&format!("[{} x {t}]", batches * k * cols), 64);
        let mut atab = Vec::with_capacity(batches * rows * k);
        for bt in 0..batches {
            for kk in 0..k {
                let mut idx = Vec::with_capacity(cols);
                for j in 0..cols {
                    let q = Pos { batch: bt as u8, row: kk as u16, col: j as u16 };
                    let Some(i) = slot(&staged[1].1, q) else { return self.invalid("mma fragments do not cover B") };
                    idx.push(i);
                }
                let row = self.gather_const(&staged[1].0, cty, &idx);
                let ptr = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr {t}, ptr {bbuf}, i64 {}", (bt * k + kk) * cols));
                self.out.op(format_args!("store <{cols} x {t}> {row}, {ptr}"));
            }
            for r in 0..rows {
                for kk in 0..k {
                    let q = Pos { batch: bt as u8, row: r as u16, col: kk as u16 };
                    let Some(i) = slot(&staged[0].1, q) else { return self.invalid("mma fragments do not cover A") };
                    atab.push(i as u32);
                }
            }
        }
        let atab = self.constant_table(&atab);
        let dbuf = self.out.alloca(&format!("[{} x {t}]", batches * rows * cols), 64);
        let vt = format!("<{cols} x {t}>");
        // C's elements of every row of D, row after row, through a table.
        let mut ctab = Vec::with_capacity(batches * rows * cols);
        for r in 0..batches * rows {
            let (bt, row) = (r / rows, r % rows);
            for j in 0..cols {
                let q = Pos { batch: bt as u8, row: row as u16, col: j as u16 };
                let Some(i) = slot(&staged[2].1, q) else { return self.invalid("mma fragments do not cover C") };
                ctab.push(i as u32);
            }
        }
        let ctab = self.constant_table(&ctab);
        // One loop over the rows of D around one over k: a loop per row
        // made llama.cpp's bf16 `mul_mat_f` (16 products of 16 rows) 256
        // loops, and its code generation time grows with the blocks.
        let (rpre, rbody, pre, body, done, rdone) = (
            self.out.fresh_label("wrpre"),
            self.out.fresh_label("wr"),
            self.out.fresh_label("wkpre"),
            self.out.fresh_label("wk"),
            self.out.fresh_label("wkdone"),
            self.out.fresh_label("wrdone"),
        );
        self.out.terminate(format_args!("br label %{rpre}"));
        self.out.label(&rpre);
        self.out.terminate(format_args!("br label %{rbody}"));
        self.out.label(&rbody);
        let (rr, rn) = (self.out.fresh("r"), self.out.fresh("rn"));
        self.out.op(format_args!("{rr} = phi i64 [0, %{rpre}], [{rn}, %{done}]"));
        let ci = self.out.def_scalar(Ty::I64, format_args!("mul i64 {rr}, {cols}"));
        let cp = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr i32, ptr {ctab}, {ci}"));
        let cidx = self.out.fresh("cidx");
        self.out.op(format_args!("{cidx} = load <{cols} x i32>, {cp}, align 4"));
        let cptrs = self.out.fresh("cptrs");
        self.out.op(format_args!("{cptrs} = getelementptr {t}, ptr {}, <{cols} x i32> {cidx}", staged[2].0));
        let g = format!("llvm.masked.gather.v{cols}{}.v{cols}p0", cty.scalar_suffix());
        self.cx.declare(&g, &format!("declare {vt} @{g}(<{cols} x ptr>, i32, <{cols} x i1>, {vt})"));
        let acc0 = self.out.fresh("acc0");
        self.out.op(format_args!(
            "{acc0} = call {vt} @{g}(<{cols} x ptr> {cptrs}, i32 {}, <{cols} x i1> splat (i1 true), {vt} poison)",
            cty.bits() / 8
        ));
        // The batch of row r: B's rows of that batch.
        let bt = self.out.def_scalar(Ty::I64, format_args!("udiv i64 {rr}, {rows}"));
        let bbase = self.out.def_scalar(Ty::I64, format_args!("mul i64 {}, {}", bt.s, k * cols));
        let abase = self.out.def_scalar(Ty::I64, format_args!("mul i64 {rr}, {k}"));
        self.out.terminate(format_args!("br label %{pre}"));
        self.out.label(&pre);
        self.out.terminate(format_args!("br label %{body}"));
        self.out.label(&body);
        let (kn, accn, kk, acc) = (self.out.fresh("kn"), self.out.fresh("accn"), self.out.fresh("k"), self.out.fresh("acc"));
        self.out.op(format_args!("{kk} = phi i64 [0, %{pre}], [{kn}, %{body}]"));
        self.out.op(format_args!("{acc} = phi {vt} [{acc0}, %{pre}], [{accn}, %{body}]"));
        let (ti, tp, ai, ap, ax, ins, asp) = (
            self.out.fresh("ti"),
            self.out.fresh("tp"),
            self.out.fresh("ai"),
            self.out.fresh("ap"),
            self.out.fresh("ax"),
            self.out.fresh("ins"),
            self.out.fresh("asp"),
        );
        self.out.op(format_args!("{ti} = add i64 {kk}, {}", abase.s));
        self.out.op(format_args!("{tp} = getelementptr i32, ptr {atab}, i64 {ti}"));
        self.out.op(format_args!("{ai} = load i32, ptr {tp}, align 4"));
        self.out.op(format_args!("{ap} = getelementptr {t}, ptr {}, i32 {ai}", staged[0].0));
        self.out.op(format_args!("{ax} = load {t}, ptr {ap}"));
        self.out.op(format_args!("{ins} = insertelement {vt} poison, {t} {ax}, i32 0"));
        self.out.op(format_args!("{asp} = shufflevector {vt} {ins}, {vt} poison, <{cols} x i32> zeroinitializer"));
        let (bi, bi2, bp, brow) = (self.out.fresh("bi"), self.out.fresh("bi"), self.out.fresh("bp"), self.out.fresh("brow"));
        self.out.op(format_args!("{bi} = mul i64 {kk}, {cols}"));
        self.out.op(format_args!("{bi2} = add i64 {bi}, {}", bbase.s));
        self.out.op(format_args!("{bp} = getelementptr {t}, ptr {bbuf}, i64 {bi2}"));
        self.out.op(format_args!("{brow} = load {vt}, ptr {bp}, align 4"));
        match p.combine {
            Combine::Float(rd) if cty == Ty::Double && rd != Rounding::Rn => {
                let f = self.directed_row_fma(cols, rd);
                self.out.op(format_args!("{accn} = call {vt} @{f}({vt} {asp}, {vt} {brow}, {vt} {acc})"));
            }
            Combine::Float(_) => {
                let f = format!("llvm.fma.v{cols}{}", cty.scalar_suffix());
                self.cx.declare(&f, &format!("declare {vt} @{f}({vt}, {vt}, {vt})"));
                self.out.op(format_args!("{accn} = call {vt} @{f}({vt} {asp}, {vt} {brow}, {vt} {acc})"));
            }
            Combine::Int { .. } => {
                let m = self.out.fresh("m");
                self.out.op(format_args!("{m} = mul {vt} {asp}, {brow}"));
                self.out.op(format_args!("{accn} = add {vt} {acc}, {m}"));
            }
            Combine::Bits { and } => {
                let (x, n) = (self.out.fresh("x"), self.out.fresh("n"));
                self.out.op(format_args!("{x} = {} {vt} {asp}, {brow}", if and { "and" } else { "xor" }));
                let f = format!("llvm.ctpop.v{cols}i64");
                self.cx.declare(&f, &format!("declare {vt} @{f}({vt})"));
                self.out.op(format_args!("{n} = call {vt} @{f}({vt} {x})"));
                self.out.op(format_args!("{accn} = add {vt} {acc}, {n}"));
            }
        }
        self.out.op(format_args!("{kn} = add i64 {kk}, 1"));
        let more = self.out.fresh("more");
        self.out.op(format_args!("{more} = icmp ult i64 {kn}, {k}"));
        self.out.terminate(format_args!("br i1 {more}, label %{body}, label %{done}"));
        self.out.label(&done);
        let rowp = self.out.def_scalar(Ty::Ptr, format_args!("getelementptr {t}, ptr {dbuf}, {ci}"));
        self.out.op(format_args!("store {vt} {accn}, {rowp}, align 4"));
        self.out.op(format_args!("{rn} = add i64 {rr}, 1"));
        let rmore = self.out.fresh("rmore");
        self.out.op(format_args!("{rmore} = icmp ult i64 {rn}, {}", batches * rows));
        self.out.terminate(format_args!("br i1 {rmore}, label %{rbody}, label %{rdone}"));
        self.out.label(&rdone);
        // D's elements per lane.
        let mut results = Vec::new();
        for lanes in &p.d.pos {
            let idx: Vec<usize> = lanes.iter().map(|q| (q.batch as usize * rows + q.row as usize) * cols + q.col as usize).collect();
            let v = self.gather_const(&dbuf, cty, &idx);
            results.push(V::new(cty, v));
        }
        Ok(results)
    }

    /// `<n x ty>` loaded from `base` at the constant element indices `idx`.
    fn gather_const(&mut self, base: &str, ty: Ty, idx: &[usize]) -> String {
        let n = idx.len();
        let t = ty.name();
        let list: Vec<String> = idx.iter().map(|i| format!("i64 {i}")).collect();
        let ptrs = self.out.fresh("gp");
        self.out.op(format_args!("{ptrs} = getelementptr {t}, ptr {base}, <{n} x i64> <{}>", list.join(", ")));
        let sfx = ty.scalar_suffix();
        let g = format!("llvm.masked.gather.v{n}{sfx}.v{n}p0");
        self.cx.declare(&g, &format!("declare <{n} x {t}> @{g}(<{n} x ptr>, i32, <{n} x i1>, <{n} x {t}>)"));
        let v = self.out.fresh("g");
        let align = ty.bits() / 8;
        self.out.op(format_args!(
            "{v} = call <{n} x {t}> @{g}(<{n} x ptr> {ptrs}, i32 {align}, <{n} x i1> splat (i1 true), <{n} x {t}> poison)"
        ));
        v
    }

    /// A `<n x double>` fused multiply-add in a directed rounding mode.
    fn directed_row_fma(&mut self, n: usize, r: Rounding) -> String {
        let rm = match r {
            Rounding::Rz => 0,
            Rounding::Rp => 2,
            Rounding::Rm => 3,
            _ => 1,
        };
        let name = format!("__anycuda_fma_v{n}f64_{r}");
        let intr = format!("llvm.experimental.constrained.fma.v{n}f64");
        let vt = format!("<{n} x double>");
        self.cx.declare(&intr, &format!("declare {vt} @{intr}({vt}, {vt}, {vt}, metadata, metadata)"));
        self.cx.declare("llvm.set.rounding", "declare void @llvm.set.rounding(i32)");
        let text = format!(
            "define internal {vt} @{name}({vt} %a, {vt} %b, {vt} %c) #1 {{\n  call void @llvm.set.rounding(i32 {rm}) #1\n  %r = call {vt} @{intr}({vt} %a, {vt} %b, {vt} %c, metadata !\"round.dynamic\", metadata !\"fpexcept.ignore\") #1\n  call void @llvm.set.rounding(i32 1) #1\n  ret {vt} %r\n}}\n"
        );
        self.cx.helper(&name, || text);
        name
    }

    /// A fragment element as a compute value, per register vector (warp
    /// mode), converted once.
    fn fragment_element(&mut self, cache: &mut HashMap<(u8, u32), V>, which: u8, regs: &[V], f: &Frag, e: u32, target: Elem) -> V {
        if let Some(v) = cache.get(&(which, e)) {
            return v.clone();
        }
        let raw = self.element_bits(&regs[(e / f.per_reg) as usize], e, f);
        let v = self.element_value(&raw, f.elem);
        let v = if which == 2 { self.as_compute(&v, target_compute(target, f.elem)) } else { v };
        cache.insert((which, e), v.clone());
        v
    }

    fn as_compute(&mut self, v: &V, cty: Ty) -> V {
        if v.ty == cty {
            return v.clone();
        }
        if v.ty == Ty::Float && cty == Ty::Double {
            return self.out.def(Ty::Double, format_args!("fpext {v} to {}", Ty::Double));
        }
        v.clone()
    }

    /// One step of the product: `acc + a * b` as `combine` says.
    fn accumulate(&mut self, combine: Combine, acc: &V, a: &V, b: &V, cty: Ty) -> V {
        match combine {
            Combine::Float(r) => {
                if cty == Ty::Double && r != Rounding::Rn {
                    return self.rounded("fma", &[a, b, acc], r);
                }
                self.call3(&format!("llvm.fma.{}", cty.scalar_suffix()), a, b, acc)
            }
            Combine::Int { .. } => {
                let m = self.bin("mul", a, b);
                self.bin("add", acc, &m)
            }
            Combine::Bits { and } => {
                let a32 = self.trunc(a, Ty::I32);
                let b32 = self.trunc(b, Ty::I32);
                let x = self.bin(if and { "and" } else { "xor" }, &a32, &b32);
                let n = self.call1("llvm.ctpop.i32", &x);
                let n = self.zext(&n, Ty::I64);
                self.bin("add", acc, &n)
            }
        }
    }

    /// A D element's bits from its computed value.
    fn finish(&mut self, p: &MatrixProduct, v: &V) -> Res<V> {
        Ok(match p.d.elem {
            Elem::F32 => {
                let c = self.canonical_nan(v);
                self.bitcast(&c, Ty::I32)
            }
            Elem::F16 => {
                let h = self.out.def(Ty::Half, format_args!("fptrunc {v} to {}", Ty::Half));
                let h = self.canonical_nan(&h);
                self.bitcast(&h, Ty::I16)
            }
            Elem::F64 => self.bitcast(v, Ty::I64),
            Elem::S32 => {
                let v = if matches!(p.combine, Combine::Int { saturate: true }) {
                    let lo = self.call2("llvm.smax.i64", v, &V::int(Ty::I64, i128::from(i32::MIN)));
                    self.call2("llvm.smin.i64", &lo, &V::int(Ty::I64, i128::from(i32::MAX)))
                } else {
                    v.clone()
                };
                self.trunc(&v, Ty::I32)
            }
            other => return self.invalid(format!("a D matrix of {other:?} elements")),
        })
    }

    /// A module constant holding `table`; returns its address.
    pub(crate) fn constant_table(&mut self, table: &[u32]) -> String {
        if let Some(name) = self.cx.tables.get(table) {
            return format!("@\"{name}\"");
        }
        let mut text = String::new();
        for (i, v) in table.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            let _ = write!(text, "i32 {}", *v as i32);
        }
        let name = format!("__anycuda_mtab.{}", self.cx.helpers.len());
        let def = format!("@\"{name}\" = internal unnamed_addr constant [{} x i32] [{text}], align 4", table.len());
        self.cx.helper(&name, || def);
        self.cx.tables.insert(table.to_vec(), name.clone());
        format!("@\"{name}\"")
    }

    /// Thread mode: one element of D, the table's rows from `base` on (C's
    /// source, then A's and B's for each k): C's element plus the products
    /// in increasing k, as a loop with the accumulator in a phi.
    fn snapshot_dot(&mut self, p: &MatrixProduct, snap: &V, tab: &str, lane: &V, base: &V, cty: Ty) -> V {
        let craw = self.snapshot_element(snap, tab, base, lane, p.c.elem.bits());
        let acc0 = self.element_value(&craw, p.c.elem);
        let acc0 = self.as_compute(&acc0, cty);
        let at0 = self.bin("add", base, &V::int(Ty::I32, W as i128));
        let (pre, body, done) = (self.out.fresh_label("kpre"), self.out.fresh_label("k"), self.out.fresh_label("kdone"));
        self.out.terminate(format_args!("br label %{pre}"));
        self.out.label(&pre);
        self.out.terminate(format_args!("br label %{body}"));
        self.out.label(&body);
        let (knext, accnext) = (self.out.fresh("kn"), self.out.fresh("accn"));
        let k = self.out.def(Ty::I32, format_args!("phi i32 [0, %{pre}], [{knext}, %{body}]"));
        let acc = self.out.def(cty, format_args!("phi {cty} [{}, %{pre}], [{accnext}, %{body}]", acc0.s));
        let at = self.bin("mul", &k, &V::int(Ty::I32, 2 * W as i128));
        let at = self.bin("add", &at, &at0);
        let araw = self.snapshot_element(snap, tab, &at, lane, p.a.elem.bits());
        let at_b = self.bin("add", &at, &V::int(Ty::I32, W as i128));
        let braw = self.snapshot_element(snap, tab, &at_b, lane, p.b.elem.bits());
        let av = self.element_value(&araw, p.a.elem);
        let bv = self.element_value(&braw, p.b.elem);
        let next = self.accumulate(p.combine, &acc, &av, &bv, cty);
        // The loop's new accumulator under the name the phi reads.
        self.out.op(format_args!("{accnext} = bitcast {next} to {}", next.ty));
        self.out.op(format_args!("{knext} = add i32 {}, 1", k.s));
        let more = self.out.def(Ty::I1, format_args!("icmp ult i32 {knext}, {}", p.k));
        // Where D's elements are unrolled (GPUs), each element's k loop stays
        // rolled: unrolled too, the tf32 m16n16k8 `wmma` kernel became one
        // block of 2,900 loads from the snapshot in scratch memory, whose
        // scheduling took 21.9 s for gfx1100 (the f16 one, whose k = 16
        // loops LLVM left rolled, 1.7 s).
        let rolled = if self.cx.facts.cheap_frame_arrays { String::new() } else { self.cx.rolled_loop() };
        self.out.terminate(format_args!("br {more}, label %{body}, label %{done}{rolled}"));
        self.out.label(&done);
        V::new(cty, accnext)
    }

    /// Thread mode: the `bits`-bit element whose bit offset in the
    /// snapshot is `table[index + lane]`.
    fn snapshot_element(&mut self, snap: &V, table: &str, index: &V, lane: &V, bits: u32) -> V {
        let i = self.bin("add", index, lane);
        let i64v = self.zext(&i, Ty::I64);
        let tp = self.out.def(Ty::Ptr, format_args!("getelementptr i32, ptr {table}, {i64v}"));
        let off = self.out.def(Ty::I32, format_args!("load i32, {tp}, align 4"));
        let slot = self.bin("lshr", &off, &V::int(Ty::I32, 6));
        let slot = self.zext(&slot, Ty::I64);
        let sp = self.out.def(Ty::Ptr, format_args!("getelementptr i64, {snap}, {slot}"));
        let word = self.out.def(Ty::I64, format_args!("load i64, {sp}, align 8"));
        let sh = self.bin("and", &off, &V::int(Ty::I32, 63));
        let sh = self.zext(&sh, Ty::I64);
        let v = self.bin("lshr", &word, &sh);
        let v = self.trunc(&v, Ty::int(bits.max(8)));
        if bits == 4 {
            self.bin("and", &v, &V::int(Ty::I8, 0xf))
        } else {
            v
        }
    }

    // ---- ldmatrix / stmatrix / movmatrix ------------------------------------------------

    /// `.x1`/`.x2`/`.x4`.
    fn matrix_count(&self, inst: &Instruction) -> Res<u32> {
        let b = self.b;
        Ok(if inst.has(b, Flag::X1) {
            1
        } else if inst.has(b, Flag::X2) {
            2
        } else if inst.has(b, Flag::X4) {
            4
        } else {
            return self.invalid(format!("`{}` needs .x1, .x2 or .x4", inst.op));
        })
    }

    /// The b16 8x8 forms sm_75 to sm_90 have; the m16n16/m8n16/b8 forms
    /// of sm_100 are not lowered.
    fn check_m8n8_b16(&self, inst: &Instruction) -> Res<()> {
        let shape = inst.shape(self.b);
        let ty = inst.ty(self.b);
        if shape != Some(Shape { m: 8, n: 8, k: 0 }) && shape.is_some() || ty != Some(Type::B16) {
            return self.unsupported(format!("`{}` (only the .m8n8 .b16 form is implemented)", self.describe(inst)));
        }
        Ok(())
    }

    /// Each lane's row address of a matrix instruction, as an i64 value
    /// (a pointer's bits).
    fn row_addresses(&mut self, inst: &Instruction, op: &Operand) -> Res<V> {
        let space = inst.space(self.b);
        let p = if self.warp.is_some() {
            let (p, uniform) = self.warp_address(op, space)?;
            if uniform {
                self.vec(p)
            } else {
                p
            }
        } else {
            self.address(op, space)?
        };
        Ok(self.out.def(Ty::I64, format_args!("ptrtoint {p} to {}", Ty::I64)))
    }

    /// Warp mode: `v`'s lanes rearranged (lane l takes lane `from[l]`).
    fn permute_const(&mut self, v: &V, from: impl Fn(usize) -> usize) -> V {
        let m: Vec<String> = (0..W).map(|l| format!("i32 {}", from(l))).collect();
        self.out.def(v.ty, format_args!("shufflevector {v}, {} poison, <{W} x i32> <{}>", v.type_name(), m.join(", ")))
    }

    /// A constant per-lane i64 vector.
    fn lane_consts(f: impl Fn(usize) -> i64) -> V {
        let items: Vec<String> = (0..W).map(|l| format!("i64 {}", f(l))).collect();
        V::new(Ty::I64, format!("<{}>", items.join(", ")))
    }

    /// Loads (or stores, with `value`) `ty` at `addr` (an i64 value in
    /// `space`) for the executing lanes; checked mode checks it first.
    fn lane_access(&mut self, addr: &V, ty: Ty, value: Option<&V>, space: Option<StateSpace>) -> V {
        let p = self.out.def(Ty::Ptr, format_args!("inttoptr {addr} to {}", Ty::Ptr));
        let size = ty.bits() / 8;
        let access = if value.is_some() { crate::memcheck::Access::Write } else { crate::memcheck::Access::Read };
        if self.warp.is_none() {
            self.check_access(&p, space, size, access);
        } else {
            self.check_lanes(&p, false, space, size, access);
        }
        if self.warp.is_none() {
            return match value {
                None => self.out.def(ty, format_args!("load {}, {p}, align {size}", ty.name())),
                Some(v) => {
                    self.out.op(format_args!("store {v}, {p}, align {size}"));
                    v.clone()
                }
            };
        }
        // Every lane: the instructions are `.aligned` (a warp whose lanes do
        // not all execute them is undefined behaviour), and an unmasked
        // gather or scatter needs no branch per lane where the target has
        // no instruction for it.
        let mask = format!("<{W} x i1> splat (i1 true)");
        let sfx = ty.suffix();
        match value {
            None => {
                let g = format!("llvm.masked.gather.{sfx}.v{W}p0");
                self.cx.declare(&g, &format!("declare {ty} @{g}(<{W} x ptr>, i32, <{W} x i1>, {ty})"));
                self.out.def(ty, format_args!("call {ty} @{g}({p}, i32 {size}, {mask}, {ty} poison)"))
            }
            Some(v) => {
                let s = format!("llvm.masked.scatter.{sfx}.v{W}p0");
                self.cx.declare(&s, &format!("declare void @{s}({ty}, <{W} x ptr>, i32, <{W} x i1>)"));
                self.out.op(format_args!("call void @{s}({v}, {p}, i32 {size}, {mask})"));
                v.clone()
            }
        }
    }

    /// The address of row `row(l)` of matrix `i` for each lane: the row
    /// addresses held by lanes `8i + row`.
    fn matrix_row(&mut self, x: &Exchange, addrs: &V, i: u32, row: impl Fn(usize) -> usize) -> V {
        match x {
            Exchange::Vectors { .. } => self.permute_const(addrs, |l| 8 * i as usize + row(l)),
            Exchange::Lanes { lane, .. } => {
                let lanes: [u8; W] = std::array::from_fn(|l| (8 * i as usize + row(l)) as u8);
                self.read_lanes(addrs, &lanes, lane)
            }
            Exchange::Snapshot { snap, lane, slots } => {
                // row(l) is one of the shapes below: a function of l's bits.
                let r = self.lane_row(lane, &row);
                let src = self.bin("add", &r, &V::int(Ty::I32, i128::from(8 * i)));
                let idx = self.bin("mul", &src, &V::int(Ty::I32, i128::from(*slots)));
                let idx = self.zext(&idx, Ty::I64);
                let sp = self.out.def(Ty::Ptr, format_args!("getelementptr i64, {snap}, {idx}"));
                self.out.def(Ty::I64, format_args!("load i64, {sp}, align 8"))
            }
        }
    }

    /// Thread mode: `row(lane)` through a 32-entry table.
    fn lane_row(&mut self, lane: &V, row: &dyn Fn(usize) -> usize) -> V {
        let table: Vec<u32> = (0..W).map(|l| row(l) as u32).collect();
        let tab = self.constant_table(&table);
        let l64 = self.zext(lane, Ty::I64);
        let p = self.out.def(Ty::Ptr, format_args!("getelementptr i32, ptr {tab}, {l64}"));
        self.out.def(Ty::I32, format_args!("load i32, {p}, align 4"))
    }

    /// A per-lane constant as a value of the mode (thread mode: a table).
    fn per_lane(&mut self, x: &Exchange, f: impl Fn(usize) -> i64) -> V {
        match x {
            Exchange::Vectors { .. } => Self::lane_consts(f),
            Exchange::Lanes { lane, .. } => {
                let r = self.lane_value(lane, &std::array::from_fn(|l| f(l) as u32));
                self.zext(&r, Ty::I64)
            }
            Exchange::Snapshot { lane, .. } => {
                let r = self.lane_row(lane, &|l| f(l) as usize);
                self.zext(&r, Ty::I64)
            }
        }
    }

    fn ldmatrix(&mut self, inst: &Instruction) -> Res<()> {
        let space = inst.space(self.b);
        self.check_m8n8_b16(inst)?;
        let n = self.matrix_count(inst)?;
        let trans = inst.has(self.b, Flag::Trans);
        let args = self.b.args(inst);
        let dests = self.vector_operands(&args[0]);
        if dests.len() as u32 != n {
            return self.invalid(format!("ldmatrix .x{n} needs {n} destination registers"));
        }
        let addrs = self.row_addresses(inst, &args[1])?;
        let x = if self.warp.is_some() {
            Exchange::Vectors { a: Vec::new(), b: Vec::new(), c: Vec::new() }
        } else {
            self.lane_exchange(std::slice::from_ref(&addrs))?
        };
        for i in 0..n {
            let v = if !trans {
                // Lane l: row l/4, columns 2(l%4) and 2(l%4)+1.
                let row = self.matrix_row(&x, &addrs, i, |l| l / 4);
                let off = self.per_lane(&x, |l| 4 * (l % 4) as i64);
                let a = self.bin("add", &row, &off);
                self.lane_access(&a, Ty::I32, None, space)
            } else {
                // Lane l: column l/4 of rows 2(l%4) and 2(l%4)+1.
                let off = self.per_lane(&x, |l| 2 * (l / 4) as i64);
                let r0 = self.matrix_row(&x, &addrs, i, |l| 2 * (l % 4));
                let r1 = self.matrix_row(&x, &addrs, i, |l| 2 * (l % 4) + 1);
                let a0 = self.bin("add", &r0, &off);
                let a1 = self.bin("add", &r1, &off);
                let lo = self.lane_access(&a0, Ty::I16, None, space);
                let hi = self.lane_access(&a1, Ty::I16, None, space);
                let lo = self.zext(&lo, Ty::I32);
                let hi = self.zext(&hi, Ty::I32);
                let hi = self.bin("shl", &hi, &V::int(Ty::I32, 16));
                self.bin("or", &lo, &hi)
            };
            self.set(&dests[i as usize], v)?;
        }
        Ok(())
    }

    fn stmatrix(&mut self, inst: &Instruction) -> Res<()> {
        let space = inst.space(self.b);
        self.check_m8n8_b16(inst)?;
        let n = self.matrix_count(inst)?;
        let trans = inst.has(self.b, Flag::Trans);
        let args = self.b.args(inst);
        let srcs = self.vector_operands(&args[1]);
        if srcs.len() as u32 != n {
            return self.invalid(format!("stmatrix .x{n} needs {n} source registers"));
        }
        let addrs = self.row_addresses(inst, &args[0])?;
        let mut vals = Vec::new();
        for s in &srcs {
            vals.push(self.get(s, Ty::I32)?);
        }
        let x = if self.warp.is_some() {
            Exchange::Vectors { a: Vec::new(), b: Vec::new(), c: Vec::new() }
        } else {
            self.lane_exchange(std::slice::from_ref(&addrs))?
        };
        for i in 0..n {
            let v = &vals[i as usize];
            if !trans {
                let row = self.matrix_row(&x, &addrs, i, |l| l / 4);
                let off = self.per_lane(&x, |l| 4 * (l % 4) as i64);
                let a = self.bin("add", &row, &off);
                self.lane_access(&a, Ty::I32, Some(v), space);
            } else {
                // Element (row l/4, column c) goes to row c of memory.
                let off = self.per_lane(&x, |l| 2 * (l / 4) as i64);
                let r0 = self.matrix_row(&x, &addrs, i, |l| 2 * (l % 4));
                let r1 = self.matrix_row(&x, &addrs, i, |l| 2 * (l % 4) + 1);
                let a0 = self.bin("add", &r0, &off);
                let a1 = self.bin("add", &r1, &off);
                let lo = self.trunc(v, Ty::I16);
                let hi = self.bin("lshr", v, &V::int(Ty::I32, 16));
                let hi = self.trunc(&hi, Ty::I16);
                self.lane_access(&a0, Ty::I16, Some(&lo), space);
                self.lane_access(&a1, Ty::I16, Some(&hi), space);
            }
        }
        Ok(())
    }

    /// `movmatrix.sync.aligned.m8n8.trans.b16 d, a`: lane l's `d` holds
    /// elements (2(l%4), l/4) and (2(l%4)+1, l/4) of the matrix whose
    /// element (r, c) is half c%2 of lane 4r + c/2's `a`.
    fn movmatrix(&mut self, inst: &Instruction) -> Res<()> {
        self.check_m8n8_b16(inst)?;
        if !inst.has(self.b, Flag::Trans) {
            return self.invalid("movmatrix needs .trans");
        }
        let args = self.b.args(inst);
        let a = self.get(&args[1], Ty::I32)?;
        let src = |l: usize, hi: usize| -> (usize, usize) {
            let (r, c) = (2 * (l % 4) + hi, l / 4);
            (4 * r + c / 2, c % 2)
        };
        let d = if self.warp.is_some() {
            let halves = self.out.def(Ty::I16, format_args!("bitcast {a} to <{} x i16>", 2 * W));
            let m: Vec<String> = (0..2 * W)
                .map(|j| {
                    let (sl, sub) = src(j / 2, j % 2);
                    format!("i32 {}", 2 * sl + sub)
                })
                .collect();
            let t = format!("<{} x i16>", 2 * W);
            let s = self.out.fresh("mv");
            self.out.op(format_args!("{s} = shufflevector {t} {}, {t} poison, <{} x i32> <{}>", halves.s, 2 * W, m.join(", ")));
            self.out.def(Ty::I32, format_args!("bitcast {t} {s} to {}", Ty::I32))
        } else if self.lane_reads() {
            // Half `sub` of lane `sl`'s register: the register read from
            // its lane, shifted by the half's bits.
            let lane = self.lane_index();
            let mut parts = Vec::new();
            for hi in 0..2 {
                let lanes: [u8; W] = std::array::from_fn(|l| src(l, hi).0 as u8);
                let shifts: [u32; W] = std::array::from_fn(|l| 16 * src(l, hi).1 as u32);
                let v = self.read_lanes(&a, &lanes, &lane);
                let sh = self.lane_value(&lane, &shifts);
                let v = self.bin("lshr", &v, &sh);
                parts.push(self.bin("and", &v, &V::int(Ty::I32, 0xffff)));
            }
            let hi = self.bin("shl", &parts[1], &V::int(Ty::I32, 16));
            self.bin("or", &parts[0], &hi)
        } else {
            let Exchange::Snapshot { snap, lane, .. } = self.gather_lanes(std::slice::from_ref(&a))? else {
                return self.invalid("movmatrix: no snapshot");
            };
            let mut parts = Vec::new();
            for hi in 0..2 {
                // Bit offset of the source half in the snapshot (one slot a lane).
                let table: Vec<u32> = (0..W)
                    .map(|l| {
                        let (sl, sub) = src(l, hi);
                        (sl * 64 + sub * 16) as u32
                    })
                    .collect();
                let tab = self.constant_table(&table);
                let v = self.snapshot_element(&snap, &tab, &V::int(Ty::I32, 0), &lane, 16);
                parts.push(self.zext(&v, Ty::I32));
            }
            let hi = self.bin("shl", &parts[1], &V::int(Ty::I32, 16));
            self.bin("or", &parts[0], &hi)
        };
        self.set(&args[0], d)
    }

    // ---- wmma.load / wmma.store ---------------------------------------------------------

    fn wmma_memory(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let store = inst.has(b, Flag::Store);
        if !store && !inst.has(b, Flag::Load) {
            return self.unsupported(format!("`{}`", self.describe(inst)));
        }
        let Some(shape) = inst.shape(b) else { return self.invalid("wmma needs a shape") };
        let which = if inst.has(b, Flag::A) {
            Which::A
        } else if inst.has(b, Flag::Bfmt) {
            Which::B
        } else if inst.has(b, Flag::C) || inst.has(b, Flag::D) {
            Which::C
        } else {
            return self.invalid("wmma.load needs .a, .b or .c");
        };
        let row_major = if inst.has(b, Flag::Row) {
            true
        } else if inst.has(b, Flag::Col) {
            false
        } else {
            return self.invalid("wmma.load/store needs .row or .col");
        };
        let Some(t) = inst.ty(b) else { return self.invalid("wmma.load/store needs a type") };
        let Some(elem) = Elem::from_type(t) else { return self.unsupported(format!("`{}`: element type `.{t}`", self.describe(inst))) };
        // An accumulator's type is its own; multiplicands' accumulators do
        // not matter here.
        let acc = elem;
        let mult = match (which, elem) {
            (Which::C, Elem::S32) => {
                // s32 accumulators tile like f32 for 8-bit inputs; the
                // m8n8 shapes (sub-byte and single-bit) have 8x8 tiles.
                if shape.m == 8 && shape.n == 8 {
                    Elem::S4
                } else {
                    Elem::S8
                }
            }
            (Which::C, Elem::F64) => Elem::F64,
            (Which::C, _) => Elem::F16,
            _ => elem,
        };
        let Some(f) = wmma_fragment(shape, which, mult, acc) else {
            return self.unsupported(format!("`{}`: this shape and type", self.describe(inst)));
        };
        let args = b.args(inst);
        let (addr_op, frag_op) = if store { (args[0], args[1]) } else { (args[1], args[0]) };
        let stride = match args.get(2) {
            Some(s) => self.get(s, Ty::I32)?,
            None => V::int(Ty::I32, i128::from(wmma_default_stride(shape, which, row_major))),
        };
        let space = inst.space(b);
        let base = if self.warp.is_some() {
            let (p, uniform) = self.warp_address(&addr_op, space)?;
            if uniform {
                self.vec(p)
            } else {
                p
            }
        } else {
            self.address(&addr_op, space)?
        };
        let base = self.out.def(Ty::I64, format_args!("ptrtoint {base} to {}", Ty::I64));
        let stride64 = self.sext(&stride, Ty::I64);
        let bits = f.elem.bits();
        // Per element: byte offset = (major * stride + minor) * bits / 8.
        let ety = Ty::int(bits.max(8));
        let rbits = f.reg_bits();
        let rty = Ty::int(rbits);
        let nregs = f.regs as usize;
        let regs_in: Vec<V> = if store { self.fragment_values(&frag_op, f.regs, rbits, "the fragment")? } else { Vec::new() };
        let dests = if store { Vec::new() } else { self.vector_operands(&frag_op) };
        if !store && dests.len() != nregs {
            return self.invalid(format!("the fragment needs {nregs} registers, {} given", dests.len()));
        }
        let per = f.per_reg as usize;
        // Registers whose elements are consecutive in memory in every lane
        // (sub-byte ones always are) move as whole registers.
        let coord = |p: Pos| -> (i64, i64) {
            // (major, minor): the leading dimension's index and the offset in it.
            if row_major {
                (i64::from(p.row), i64::from(p.col))
            } else {
                (i64::from(p.col), i64::from(p.row))
            }
        };
        // Single-bit words count 32 elements, one word per column step.
        let minor_scale = if f.elem == Elem::B1 { 32 } else { 1 };
        let x_lane = if self.warp.is_some() { None } else { Some(self.out.def(Ty::I32, format_args!("and i32 %lin, 31"))) };
        let mut written: HashMap<usize, V> = HashMap::new();
        for r in 0..nregs {
            let elems: Vec<usize> = (r * per..(r + 1) * per).collect();
            let whole = (0..W).all(|l| {
                let (m0, n0) = coord(f.pos[elems[0]][l]);
                elems.iter().enumerate().all(|(j, &e)| coord(f.pos[e][l]) == (m0, n0 + j as i64))
            });
            let offset_of = |s: &mut Self, e: usize| -> V {
                let (majors, minors): (Vec<i64>, Vec<i64>) = (0..W).map(|l| coord(f.pos[e][l])).unzip();
                let (mj, mn) = match &x_lane {
                    None => (Self::lane_consts(|l| majors[l]), Self::lane_consts(|l| minors[l] * minor_scale)),
                    Some(lane) => {
                        let mj = s.lane_row(lane, &|l| majors[l] as usize);
                        let mn = s.lane_row(lane, &|l| (minors[l] * minor_scale) as usize);
                        (s.zext(&mj, Ty::I64), s.zext(&mn, Ty::I64))
                    }
                };
                let o = s.bin("mul", &mj, &stride64);
                let o = s.bin("add", &o, &mn);
                // Single-bit words: their index counts bits.
                let o = s.bin("mul", &o, &V::int(Ty::I64, i128::from(if f.elem == Elem::B1 { 1 } else { bits })));
                let o = s.bin("lshr", &o, &V::int(Ty::I64, 3));
                s.bin("add", &base, &o)
            };
            if whole || bits < 8 {
                let a = offset_of(self, elems[0]);
                if store {
                    self.lane_access(&a, rty, Some(&regs_in[r]), space);
                } else {
                    let v = self.lane_access(&a, rty, None, space);
                    written.insert(r, v);
                }
                continue;
            }
            if store {
                for (j, &e) in elems.iter().enumerate() {
                    let a = offset_of(self, e);
                    let v =
                        if j == 0 { regs_in[r].clone() } else { self.bin("lshr", &regs_in[r], &V::int(rty, (j as u32 * bits) as i128)) };
                    let v = self.trunc(&v, ety);
                    self.lane_access(&a, ety, Some(&v), space);
                }
            } else {
                let mut acc: Option<V> = None;
                for (j, &e) in elems.iter().enumerate() {
                    let a = offset_of(self, e);
                    let v = self.lane_access(&a, ety, None, space);
                    let w = self.zext(&v, rty);
                    let w = if j == 0 { w } else { self.bin("shl", &w, &V::int(rty, (j as u32 * bits) as i128)) };
                    acc = Some(match acc {
                        None => w,
                        Some(p) => self.bin("or", &p, &w),
                    });
                }
                written.insert(r, acc.unwrap_or_else(|| V::int(rty, 0)));
            }
        }
        for (r, d) in dests.iter().enumerate() {
            if let Some(v) = written.remove(&r) {
                self.set(d, v)?;
            }
        }
        Ok(())
    }
}

/// The compute type C converts to for a given D element type.
fn target_compute(d: Elem, c: Elem) -> Ty {
    if d == Elem::F64 || c == Elem::F64 {
        Ty::Double
    } else if c.is_float() {
        Ty::Float
    } else {
        Ty::I64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every product `product_spec` accepts: shapes of mma and wmma, the
    /// element types, layouts and combinations.
    fn products() -> Vec<(String, bool, MatrixProduct)> {
        use Type::*;
        let shapes = [
            (8, 8, 4),
            (16, 8, 4),
            (16, 8, 8),
            (16, 8, 16),
            (16, 8, 32),
            (16, 8, 64),
            (16, 8, 128),
            (16, 8, 256),
            (8, 8, 16),
            (8, 8, 32),
            (8, 8, 128),
            (16, 16, 16),
            (32, 8, 16),
            (8, 32, 16),
            (16, 16, 8),
        ];
        let types: &[[Type; 4]] = &[
            [F16, F16, F16, F16],
            [F32, F16, F16, F16],
            [F32, F16, F16, F32],
            [F16, F16, F16, F32],
            [F32, Bf16, Bf16, F32],
            [F32, Tf32, Tf32, F32],
            [F64, F64, F64, F64],
            [S32, S8, S8, S32],
            [S32, U8, S8, S32],
            [S32, S4, U4, S32],
            [S32, B1, B1, S32],
        ];
        let mut out = Vec::new();
        for (m, n, k) in shapes {
            for t in types {
                for wmma in [false, true] {
                    for row_major in [[true, false], [false, true], [true, true], [false, false]] {
                        let combine = match t[1] {
                            B1 => Combine::Bits { and: false },
                            S8 | U8 | S4 | U4 => Combine::Int { saturate: true },
                            _ => Combine::Float(Rounding::Rn),
                        };
                        let shape = Shape { m, n, k };
                        if let Ok(p) = product_spec(shape, *t, wmma, row_major, combine) {
                            out.push((format!("m{m}n{n}k{k} {t:?} wmma {wmma} {row_major:?}"), wmma, p));
                        }
                    }
                }
            }
        }
        out
    }

    /// Where D's element `e` of lane `l` finds its operands, the plan's
    /// reads hold exactly the fragment elements the product needs: the
    /// lane plan's invariant, for every form, element, depth and lane.
    #[test]
    fn lane_plans_read_the_elements_each_product_needs() {
        let (mut mma, mut planned_wmma, mut unplanned_volta) = (0, 0, 0);
        for (form, wmma, p) in products() {
            let Some(plan) = lane_plan(&p) else {
                // Volta's m8n8k4 with f16 multiplicands: its f32
                // accumulators and column-major fragments hold an element
                // in different registers in different lanes.
                let volta = form.starts_with("m8n8k4 [") && p.a.elem == Elem::F16;
                assert!(wmma || volta, "{form}: no lane plan for an mma form");
                unplanned_volta += usize::from(volta && !wmma);
                continue;
            };
            if wmma {
                planned_wmma += 1;
            } else {
                mma += 1;
            }
            let frags = [&p.a, &p.b, &p.c];
            let holds = |o: LaneElement, l: usize| -> Pos {
                let r = &plan.reads[o.read];
                let f = frags[r.which as usize];
                f.pos[(r.reg * f.per_reg + o.sub) as usize][r.lanes[l] as usize]
            };
            assert_eq!(plan.c.len(), p.d.pos.len(), "{form}");
            for (e, lanes) in p.d.pos.iter().enumerate() {
                for (l, at) in lanes.iter().enumerate() {
                    assert_eq!(holds(plan.c[e], l), *at, "{form}: C of element {e}, lane {l}");
                    assert_eq!(plan.reads[plan.c[e].read].which, 2, "{form}");
                    for k in 0..p.k as u16 {
                        let a = holds(plan.a[e][k as usize], l);
                        let b = holds(plan.b[e][k as usize], l);
                        assert_eq!(a, Pos { batch: at.batch, row: at.row, col: k }, "{form}: A of element {e}, lane {l}, k {k}");
                        assert_eq!(b, Pos { batch: at.batch, row: k, col: at.col }, "{form}: B of element {e}, lane {l}, k {k}");
                        assert_eq!(plan.reads[plan.a[e][k as usize].read].which, 0, "{form}");
                        assert_eq!(plan.reads[plan.b[e][k as usize].read].which, 1, "{form}");
                    }
                }
            }
            // Each register read once per lane pattern.
            let distinct: std::collections::HashSet<&LaneRead> = plan.reads.iter().collect();
            assert_eq!(distinct.len(), plan.reads.len(), "{form}");
        }
        assert!(mma >= 40, "only {mma} mma forms");
        // (The row-major f16-accumulator form of m8n8k4 has a plan.)
        assert!(unplanned_volta < 16, "{unplanned_volta}");
        assert!(planned_wmma > 0, "no wmma form has a lane plan");
        // m16n8k32 with 8-bit integers: A's 4 registers from 4 lanes each
        // (2 row groups share the lanes), B's 2 from 4 lanes for 2 columns,
        // C in the lane itself: 32 reads.
        let p = product_spec(
            Shape { m: 16, n: 8, k: 32 },
            [Type::S32, Type::S8, Type::S8, Type::S32],
            false,
            [true, false],
            Combine::Int { saturate: false },
        )
        .expect("m16n8k32 s8");
        let plan = lane_plan(&p).expect("plan");
        let count = |w: u8, own: bool| plan.reads.iter().filter(|r| r.which == w && r.is_own() == own).count();
        assert_eq!((count(0, false), count(1, false), count(2, false), count(2, true)), (16, 16, 0, 4));
    }

    /// The lane arithmetic of the fragment tables, and none for a pattern
    /// of no such form.
    #[test]
    fn lane_formulas_reproduce_their_lanes() {
        let check = |values: [u32; W]| {
            let (mask, shift, mul, add) = lane_formula(&values).expect("a formula");
            for (l, v) in values.iter().enumerate() {
                assert_eq!(((l as u32 & mask) >> shift) * mul + add, *v, "lane {l}");
            }
        };
        check(std::array::from_fn(|l| (l as u32 & !3) + 2));
        check(std::array::from_fn(|l| (l as u32 % 4) * 8 + 5));
        check(std::array::from_fn(|l| l as u32 / 4));
        check([7; W]);
        let scrambled: [u32; W] = std::array::from_fn(|l| (l as u32 * 7 + 3) % 32);
        assert_eq!(lane_formula(&scrambled), None);
    }
}
