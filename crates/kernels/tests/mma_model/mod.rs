//! The PTX ISA's `mma` fragments and arithmetic as a reference model
//! (shared by the CPU tests of `matrix.rs` and the emulated AMD GPU tests
//! of `libcuda`): each lane's row and column of each fragment element
//! ("Matrix Fragments for mma.mMnNkK"), random fragments, the product the
//! compiler documents where the ISA leaves it open, and a module with one
//! kernel per variant.
#![allow(dead_code)]

use half::{bf16, f16};
use std::fmt::Write;

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
    pub fn below(&mut self, n: u32) -> u32 {
        self.u32() % n
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum E {
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

impl E {
    pub fn bits(self) -> u32 {
        match self {
            E::F16 | E::Bf16 => 16,
            E::Tf32 | E::F32 | E::S32 => 32,
            E::F64 => 64,
            E::S8 | E::U8 => 8,
            E::S4 | E::U4 => 4,
            E::B1 => 1,
        }
    }
    pub fn reg_bits(self) -> u32 {
        if self == E::F64 {
            64
        } else {
            32
        }
    }
    pub fn ptx(self) -> &'static str {
        match self {
            E::F16 => "f16",
            E::Bf16 => "bf16",
            E::Tf32 => "tf32",
            E::F32 => "f32",
            E::F64 => "f64",
            E::S8 => "s8",
            E::U8 => "u8",
            E::S4 => "s4",
            E::U4 => "u4",
            E::S32 => "s32",
            E::B1 => "b1",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    A,
    B,
    C,
}

/// (batch, row, column) of element `i` of `lane`'s fragment, as the PTX
/// ISA's "Matrix Fragments" sections give them.
pub fn isa_position(shape: (u32, u32, u32), op: Op, e: E, row_major: bool, lane: u32, i: u32) -> (u32, u32, u32) {
    let group_id = lane >> 2;
    let thread_in_group = lane % 4;
    let (m, n, k) = shape;
    match (m, n, k) {
        (8, 8, 4) if e != E::F64 => {
            // Four products: lanes 0-3 and 16-19, 4-7 and 20-23, ...
            let batch = (lane % 16) / 4;
            let high = lane >= 16;
            let (r, c) = match op {
                Op::A if row_major => (if high { lane % 4 + 4 } else { lane % 4 }, i),
                Op::A => (if high { i % 4 + 4 } else { i % 4 }, lane % 4),
                Op::B if row_major => (lane % 4, if high { i + 4 } else { i }),
                Op::B => (i, if high { lane % 4 + 4 } else { lane % 4 }),
                Op::C if e == E::F16 => (if high { lane % 4 + 4 } else { lane % 4 }, i),
                Op::C => {
                    let x = (lane & 1) + (i & 2);
                    (if high { x + 4 } else { x }, (i & 4) + (lane & 2) + (i & 1))
                }
            };
            (batch, r, c)
        }
        (8, 8, 4) => match op {
            Op::A => (0, lane >> 2, lane % 4),
            Op::B => (0, lane % 4, lane >> 2),
            Op::C => (0, group_id, thread_in_group * 2 + (i & 1)),
        },
        (8, 8, _) => {
            // m8n8k16 (8-bit), m8n8k32 (4-bit), m8n8k128 (1-bit): a row
            // (column) of k/4 elements per thread group.
            let per = k / 4;
            match op {
                Op::A => (0, group_id, thread_in_group * per + i),
                Op::B => (0, thread_in_group * per + i, group_id),
                Op::C => (0, group_id, thread_in_group * 2 + i),
            }
        }
        (16, 8, _) => {
            let c_pos = (0, if i < 2 { group_id } else { group_id + 8 }, thread_in_group * 2 + (i & 1));
            match (k, op, e) {
                (_, Op::C, _) => c_pos,
                (4, Op::A, _) => (0, if i == 0 { group_id } else { group_id + 8 }, thread_in_group),
                (4, Op::B, _) => (0, thread_in_group, group_id),
                (8, Op::A, E::F16 | E::Bf16) => (0, if i < 2 { group_id } else { group_id + 8 }, thread_in_group * 2 + (i & 1)),
                (8, Op::B, E::F16 | E::Bf16) => (0, thread_in_group * 2 + i, group_id),
                (8, Op::A, _) => (
                    0,
                    if i.is_multiple_of(2) { group_id } else { group_id + 8 },
                    if i < 2 { thread_in_group } else { thread_in_group + 4 },
                ),
                (8, Op::B, _) => (0, if i == 0 { thread_in_group } else { thread_in_group + 4 }, group_id),
                (16, Op::A, E::F16 | E::Bf16) => {
                    let row = if i < 2 || (4..6).contains(&i) { group_id } else { group_id + 8 };
                    let col = thread_in_group * 2 + (i & 1) + if i >= 4 { 8 } else { 0 };
                    (0, row, col)
                }
                (16, Op::B, E::F16 | E::Bf16) => (0, thread_in_group * 2 + (i & 1) + if i >= 2 { 8 } else { 0 }, group_id),
                (16, Op::A, E::F64) => {
                    let (row, col) =
                        if i.is_multiple_of(2) { (group_id, i * 2 + thread_in_group) } else { (group_id + 8, i * 2 - 2 + thread_in_group) };
                    (0, row, col)
                }
                (16, Op::B, E::F64) => (0, thread_in_group + i * 4, group_id),
                (16, Op::A, _) => (0, if i < 4 { group_id } else { group_id + 8 }, thread_in_group * 4 + (i & 3)),
                (16, Op::B, _) => (0, thread_in_group * 4 + i, group_id),
                (32, Op::A, E::S4 | E::U4) => (0, if i < 8 { group_id } else { group_id + 8 }, thread_in_group * 8 + (i & 7)),
                (32, Op::B, E::S4 | E::U4) => (0, thread_in_group * 8 + (i & 7), group_id),
                (32, Op::A, _) => {
                    let row = if i < 4 || (8..12).contains(&i) { group_id } else { group_id + 8 };
                    (0, row, thread_in_group * 4 + (i & 3) + if i >= 8 { 16 } else { 0 })
                }
                (32, Op::B, _) => (0, thread_in_group * 4 + (i & 3) + if i >= 4 { 16 } else { 0 }, group_id),
                (64, Op::A, _) => {
                    let row = if i < 8 || (16..24).contains(&i) { group_id } else { group_id + 8 };
                    (0, row, thread_in_group * 8 + (i & 7) + if i >= 16 { 32 } else { 0 })
                }
                (64, Op::B, _) => (0, thread_in_group * 8 + (i & 7) + if i >= 8 { 32 } else { 0 }, group_id),
                (128, Op::A, _) => (0, if i < 32 { group_id } else { group_id + 8 }, thread_in_group * 32 + (i & 0x1f)),
                (128, Op::B, _) => (0, thread_in_group * 32 + i, group_id),
                (256, Op::A, _) => {
                    let row = if i < 32 || (64..96).contains(&i) { group_id } else { group_id + 8 };
                    (0, row, thread_in_group * 32 + (i & 0x1f) + if i >= 64 { 128 } else { 0 })
                }
                (256, Op::B, _) => (0, thread_in_group * 32 + (i & 0x1f) + if i >= 32 { 128 } else { 0 }, group_id),
                _ => panic!("no layout for {shape:?} {op:?} {e:?}"),
            }
        }
        _ => panic!("no layout for {shape:?}"),
    }
}

/// Elements per lane of a fragment.
pub fn elements(shape: (u32, u32, u32), op: Op, e: E) -> u32 {
    let (m, n, k) = shape;
    let batches = if (m, n, k) == (8, 8, 4) && e != E::F64 { 4 } else { 1 };
    let total = match op {
        Op::A => m * k,
        Op::B => k * n,
        Op::C => m * n,
    } * batches;
    let per_lane = total / 32;
    // m8n8k4 f16: every lane of a quad pair holds a whole row (column) of 4.
    if (m, n, k) == (8, 8, 4) && e != E::F64 && op != Op::C {
        return 4;
    }
    per_lane
}

#[derive(Clone, Debug)]
pub struct Variant {
    pub shape: (u32, u32, u32),
    pub d: E,
    pub a: E,
    pub b: E,
    pub c: E,
    pub row_a: bool,
    pub row_b: bool,
    pub satfinite: bool,
    pub bit_and: bool,
}

impl Variant {
    pub fn regs(&self, op: Op) -> u32 {
        let e = match op {
            Op::A => self.a,
            Op::B => self.b,
            Op::C => self.c,
        };
        elements(self.shape, op, e) * e.bits() / e.reg_bits()
    }
    pub fn d_regs(&self) -> u32 {
        elements(self.shape, Op::C, self.d) * self.d.bits() / self.d.reg_bits()
    }
    pub fn text(&self) -> String {
        let (m, n, k) = self.shape;
        let lay = |r: bool| if r { "row" } else { "col" };
        let mut s = format!("mma.sync.aligned.m{m}n{n}k{k}.{}.{}", lay(self.row_a), lay(self.row_b));
        if self.satfinite {
            s.push_str(".satfinite");
        }
        let _ = write!(s, ".{}.{}.{}.{}", self.d.ptx(), self.a.ptx(), self.b.ptx(), self.c.ptx());
        if self.a == E::B1 {
            s.push_str(if self.bit_and { ".and.popc" } else { ".xor.popc" });
        }
        s
    }
}

pub fn variant(shape: (u32, u32, u32), d: E, a: E, b: E, c: E) -> Variant {
    Variant { shape, d, a, b, c, row_a: true, row_b: false, satfinite: false, bit_and: false }
}

pub fn all_variants() -> Vec<Variant> {
    use E::*;
    let mut v = Vec::new();
    for row_a in [true, false] {
        for row_b in [true, false] {
            for (d, c) in [(F16, F16), (F32, F16), (F32, F32)] {
                v.push(Variant { row_a, row_b, ..variant((8, 8, 4), d, F16, F16, c) });
            }
        }
    }
    for (d, c) in [(F16, F16), (F32, F32)] {
        v.push(variant((16, 8, 8), d, F16, F16, c));
        v.push(variant((16, 8, 16), d, F16, F16, c));
    }
    v.push(variant((16, 8, 8), F32, Bf16, Bf16, F32));
    v.push(variant((16, 8, 16), F32, Bf16, Bf16, F32));
    v.push(variant((16, 8, 4), F32, Tf32, Tf32, F32));
    v.push(variant((16, 8, 8), F32, Tf32, Tf32, F32));
    for shape in [(8, 8, 4), (16, 8, 4), (16, 8, 8), (16, 8, 16)] {
        v.push(variant(shape, F64, F64, F64, F64));
    }
    for sat in [false, true] {
        for (a, b) in [(S8, S8), (U8, U8), (S8, U8), (U8, S8)] {
            for shape in [(8, 8, 16), (16, 8, 16), (16, 8, 32)] {
                v.push(Variant { satfinite: sat, ..variant(shape, S32, a, b, S32) });
            }
        }
        for (a, b) in [(S4, S4), (U4, U4), (S4, U4)] {
            for shape in [(8, 8, 32), (16, 8, 32), (16, 8, 64)] {
                v.push(Variant { satfinite: sat, ..variant(shape, S32, a, b, S32) });
            }
        }
    }
    for bit_and in [false, true] {
        for shape in [(8, 8, 128), (16, 8, 128), (16, 8, 256)] {
            v.push(Variant { bit_and, ..variant(shape, S32, B1, B1, S32) });
        }
    }
    v
}

/// A random register of a fragment of `e` elements.
pub fn random_reg(rng: &mut Rng, e: E) -> u64 {
    let f16v = |rng: &mut Rng| -> u64 {
        // Exponents -6..6, sometimes zero or subnormal.
        let sign = u64::from(rng.below(2)) << 15;
        let r = rng.below(16);
        let bits = if r == 0 {
            0
        } else if r == 1 {
            u64::from(rng.below(0x400))
        } else {
            u64::from(rng.below(13) + 9) << 10 | u64::from(rng.below(0x400))
        };
        sign | bits
    };
    match e {
        E::F16 => f16v(rng) | f16v(rng) << 16,
        E::Bf16 => {
            let one = |rng: &mut Rng| u64::from(rng.below(2)) << 15 | u64::from(rng.below(13) + 121) << 7 | u64::from(rng.below(0x80));
            one(rng) | one(rng) << 16
        }
        E::Tf32 | E::F32 => {
            // Moderate values, with random low bits (tf32 ignores 13 of them).
            u64::from(rng.below(2)) << 31 | u64::from(rng.below(25) + 115) << 23 | u64::from(rng.u32() & 0x7f_ffff)
        }
        E::F64 => {
            let exp = u64::from(rng.below(41) + 1003);
            u64::from(rng.below(2)) << 63 | exp << 52 | (rng.next() & ((1 << 52) - 1))
        }
        E::S32 => {
            // Near the limits now and then, to show saturation.
            match rng.below(4) {
                0 => u64::from(0x7fff_ff00u32 + rng.below(0x100)),
                1 => u64::from(0x8000_0000u32 + rng.below(0x100)),
                _ => u64::from(rng.u32()),
            }
        }
        _ => u64::from(rng.u32()),
    }
}

/// Element `i` of a lane's registers (`regs`, `e` elements).
/// One warp's A, B and C registers, lane by lane.
pub type WarpFragments = [Vec<Vec<u64>>; 3];

/// Random fragments for `warps` warps of variant `v`: the kernel's input
/// (each lane's A, B and C registers in turn, 8-byte slots, as
/// [`mma_module`] loads them) and, per warp, each matrix's registers lane
/// by lane.
pub fn random_fragments(rng: &mut Rng, v: &Variant, warps: usize) -> (Vec<u64>, Vec<WarpFragments>) {
    let (na, nb, nc) = (v.regs(Op::A), v.regs(Op::B), v.regs(Op::C));
    let mut input = Vec::new();
    let mut regs = Vec::new();
    for _ in 0..warps {
        let mut w: WarpFragments = Default::default();
        for _lane in 0..32 {
            for (slot, (n, e)) in [(na, v.a), (nb, v.b), (nc, v.c)].into_iter().enumerate() {
                let r: Vec<u64> = (0..n).map(|_| random_reg(rng, e)).collect();
                input.extend_from_slice(&r);
                w[slot].push(r);
            }
        }
        regs.push(w);
    }
    (input, regs)
}

pub fn element(regs: &[u64], e: E, i: u32) -> u64 {
    let bits = e.bits();
    let per = e.reg_bits() / bits;
    let r = regs[(i / per) as usize];
    let sh = (i % per) * bits;
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    (r >> sh) & mask
}

pub fn as_f32(bits: u64, e: E) -> f32 {
    match e {
        E::F16 => f16::from_bits(bits as u16).to_f32(),
        E::Bf16 => bf16::from_bits(bits as u16).to_f32(),
        // tf32: the upper 19 bits of the register.
        E::Tf32 => f32::from_bits(bits as u32 & 0xffff_e000),
        _ => f32::from_bits(bits as u32),
    }
}

pub fn as_int(bits: u64, e: E) -> i64 {
    match e {
        E::S8 => bits as u8 as i8 as i64,
        E::S4 => (((bits as u8) << 4) as i8 >> 4) as i64,
        E::S32 => bits as u32 as i32 as i64,
        _ => bits as i64,
    }
}

/// The model: D's registers for every lane from every lane's A, B and C.
pub fn reference(v: &Variant, a: &[Vec<u64>], b: &[Vec<u64>], c: &[Vec<u64>]) -> Vec<Vec<u64>> {
    use std::collections::HashMap;
    let (_, _, k) = v.shape;
    let matrix = |op: Op, e: E, row_major: bool, regs: &[Vec<u64>]| -> HashMap<(u32, u32, u32), u64> {
        let mut m = HashMap::new();
        for lane in 0..32 {
            for i in 0..elements(v.shape, op, e) {
                m.insert(isa_position(v.shape, op, e, row_major, lane, i), element(&regs[lane as usize], e, i));
            }
        }
        m
    };
    let am = matrix(Op::A, v.a, v.row_a, a);
    let bm = matrix(Op::B, v.b, v.row_b, b);
    let cm = matrix(Op::C, v.c, true, c);
    let nd = elements(v.shape, Op::C, v.d);
    let per = v.d.reg_bits() / v.d.bits();
    let mut out = vec![vec![0u64; v.d_regs() as usize]; 32];
    for lane in 0..32u32 {
        for i in 0..nd {
            let (batch, row, col) = isa_position(v.shape, Op::C, v.d, true, lane, i);
            let cbits = cm[&(batch, row, col)];
            let bits: u64 = match v.a {
                E::F16 | E::Bf16 | E::Tf32 => {
                    let mut acc = as_f32(cbits, v.c);
                    for kk in 0..k {
                        let x = as_f32(am[&(batch, row, kk)], v.a);
                        let y = as_f32(bm[&(batch, kk, col)], v.b);
                        acc = x.mul_add(y, acc);
                    }
                    if v.d == E::F16 {
                        let h = f16::from_f32(acc);
                        if h.is_nan() {
                            0x7fff
                        } else {
                            u64::from(h.to_bits())
                        }
                    } else if acc.is_nan() {
                        0x7fff_ffff
                    } else {
                        u64::from(acc.to_bits())
                    }
                }
                E::F64 => {
                    let mut acc = f64::from_bits(cbits);
                    for kk in 0..k {
                        acc = f64::from_bits(am[&(batch, row, kk)]).mul_add(f64::from_bits(bm[&(batch, kk, col)]), acc);
                    }
                    acc.to_bits()
                }
                E::B1 => {
                    let mut acc = as_int(cbits, E::S32);
                    for kk in 0..k {
                        let (x, y) = (am[&(batch, row, kk)], bm[&(batch, kk, col)]);
                        acc += i64::from(if v.bit_and { x & y } else { x ^ y } as u8);
                    }
                    u64::from(acc as u32)
                }
                _ => {
                    let mut acc = as_int(cbits, E::S32);
                    for kk in 0..k {
                        acc += as_int(am[&(batch, row, kk)], v.a) * as_int(bm[&(batch, kk, col)], v.b);
                    }
                    let acc = if v.satfinite { acc.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) } else { acc };
                    u64::from(acc as u32)
                }
            };
            let r = (i / per) as usize;
            out[lane as usize][r] |= bits << ((i % per) * v.d.bits());
        }
    }
    out
}

/// One kernel per variant: each lane loads its A, B and C registers
/// (8-byte slots), runs the mma and stores D.
pub fn mma_module(variants: &[Variant]) -> String {
    let mut s = String::from(".version 8.0\n.target sm_90\n.address_size 64\n");
    for (idx, v) in variants.iter().enumerate() {
        let (na, nb, nc, nd) = (v.regs(Op::A), v.regs(Op::B), v.regs(Op::C), v.d_regs());
        let slots = na + nb + nc;
        let t = |e: E| if e.reg_bits() == 64 { "b64" } else { "b32" };
        let _ = writeln!(s, ".visible .entry v{idx}(.param .u64 pin, .param .u64 pout) {{");
        let _ = writeln!(
            s,
            "  .reg .{} %a<{na}>;\n  .reg .{} %b<{nb}>;\n  .reg .{} %c<{nc}>;\n  .reg .{} %d<{nd}>;",
            t(v.a),
            t(v.b),
            t(v.c),
            t(v.d)
        );
        s.push_str("  .reg .u32 %t;\n  .reg .u64 %pi, %po, %o;\n");
        s.push_str("  ld.param.u64 %pi, [pin];\n  ld.param.u64 %po, [pout];\n  mov.u32 %t, %tid.x;\n");
        let _ = writeln!(s, "  mul.wide.u32 %o, %t, {};\n  add.u64 %pi, %pi, %o;", slots * 8);
        let _ = writeln!(s, "  mul.wide.u32 %o, %t, {};\n  add.u64 %po, %po, %o;", nd * 8);
        let mut slot = 0;
        for (name, n, e) in [("a", na, v.a), ("b", nb, v.b), ("c", nc, v.c)] {
            for j in 0..n {
                let _ = writeln!(s, "  ld.global.{} %{name}{j}, [%pi+{}];", t(e), slot * 8);
                slot += 1;
            }
        }
        let list = |name: &str, n: u32| (0..n).map(|j| format!("%{name}{j}")).collect::<Vec<_>>().join(", ");
        let _ = writeln!(s, "  {} {{{}}}, {{{}}}, {{{}}}, {{{}}};", v.text(), list("d", nd), list("a", na), list("b", nb), list("c", nc));
        for j in 0..nd {
            let _ = writeln!(s, "  st.global.{} [%po+{}], %d{j};", t(v.d), j * 8);
        }
        s.push_str("  ret;\n}\n");
    }
    s
}
