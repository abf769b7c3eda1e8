//! Warp-level matrix instructions (`mma.sync`, `wmma`, `ldmatrix`,
//! `stmatrix`, `movmatrix`) against a reference model written here from
//! the PTX ISA's text: the fragment layouts of "Matrix Fragments for
//! mma.mMnNkK" (each lane's row and column of each element), and the
//! arithmetic the compiler documents where the ISA leaves it open (each
//! element of D is C's element plus the products in increasing k, one f32
//! fused multiply-add each; an f16 D is that sum rounded once; integers are
//! exact, then clamped with `.satfinite` or wrapped). Random fragments run
//! in thread mode (one coroutine per thread, the exchange a runtime
//! collective) and in warp mode (vectors and shuffles), compared bit for
//! bit with the model.

use backend_cpu::Executor;
use half::{bf16, f16};
use kernels::{as_bytes, launch, Arg, Program};
use std::fmt::Write;

fn exec() -> &'static Executor {
    Executor::global()
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.u32() % n
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum E {
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
    fn bits(self) -> u32 {
        match self {
            E::F16 | E::Bf16 => 16,
            E::Tf32 | E::F32 | E::S32 => 32,
            E::F64 => 64,
            E::S8 | E::U8 => 8,
            E::S4 | E::U4 => 4,
            E::B1 => 1,
        }
    }
    fn reg_bits(self) -> u32 {
        if self == E::F64 {
            64
        } else {
            32
        }
    }
    fn ptx(self) -> &'static str {
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
enum Op {
    A,
    B,
    C,
}

/// (batch, row, column) of element `i` of `lane`'s fragment, as the PTX
/// ISA's "Matrix Fragments" sections give them.
fn isa_position(shape: (u32, u32, u32), op: Op, e: E, row_major: bool, lane: u32, i: u32) -> (u32, u32, u32) {
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
fn elements(shape: (u32, u32, u32), op: Op, e: E) -> u32 {
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
struct Variant {
    shape: (u32, u32, u32),
    d: E,
    a: E,
    b: E,
    c: E,
    row_a: bool,
    row_b: bool,
    satfinite: bool,
    bit_and: bool,
}

impl Variant {
    fn regs(&self, op: Op) -> u32 {
        let e = match op {
            Op::A => self.a,
            Op::B => self.b,
            Op::C => self.c,
        };
        elements(self.shape, op, e) * e.bits() / e.reg_bits()
    }
    fn d_regs(&self) -> u32 {
        elements(self.shape, Op::C, self.d) * self.d.bits() / self.d.reg_bits()
    }
    fn text(&self) -> String {
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

fn variant(shape: (u32, u32, u32), d: E, a: E, b: E, c: E) -> Variant {
    Variant { shape, d, a, b, c, row_a: true, row_b: false, satfinite: false, bit_and: false }
}

fn all_variants() -> Vec<Variant> {
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
fn random_reg(rng: &mut Rng, e: E) -> u64 {
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
fn element(regs: &[u64], e: E, i: u32) -> u64 {
    let bits = e.bits();
    let per = e.reg_bits() / bits;
    let r = regs[(i / per) as usize];
    let sh = (i % per) * bits;
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    (r >> sh) & mask
}

fn as_f32(bits: u64, e: E) -> f32 {
    match e {
        E::F16 => f16::from_bits(bits as u16).to_f32(),
        E::Bf16 => bf16::from_bits(bits as u16).to_f32(),
        // tf32: the upper 19 bits of the register.
        E::Tf32 => f32::from_bits(bits as u32 & 0xffff_e000),
        _ => f32::from_bits(bits as u32),
    }
}

fn as_int(bits: u64, e: E) -> i64 {
    match e {
        E::S8 => bits as u8 as i8 as i64,
        E::S4 => (((bits as u8) << 4) as i8 >> 4) as i64,
        E::S32 => bits as u32 as i32 as i64,
        _ => bits as i64,
    }
}

/// The model: D's registers for every lane from every lane's A, B and C.
fn reference(v: &Variant, a: &[Vec<u64>], b: &[Vec<u64>], c: &[Vec<u64>]) -> Vec<Vec<u64>> {
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
fn mma_module(variants: &[Variant]) -> String {
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

fn mode(warp: bool) -> compiler::Options {
    compiler::Options {
        warp: if warp { compiler::WarpMode::Always } else { compiler::WarpMode::Off },
        strict_affine: false,
        memcheck: false,
        tier: compiler::Tier::Optimized,
    }
}

#[test]
fn mma_every_shape_and_type_matches_the_isa_model_in_both_modes() {
    let variants = all_variants();
    let src = mma_module(&variants);
    for warp in [false, true] {
        let p = Program::from_source_with(&src, &mode(warp)).expect("compiles");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for (idx, v) in variants.iter().enumerate() {
            let k = p.kernel(&format!("v{idx}")).expect("kernel");
            assert_eq!(k.info.lanes, if warp { 32 } else { 1 }, "mode of {}", v.text());
            for round in 0..3 {
                // Two warps: each computes its own product.
                let warps = 2;
                let (na, nb, nc, nd) = (v.regs(Op::A), v.regs(Op::B), v.regs(Op::C), v.d_regs());
                let mut input = Vec::new();
                let mut regs: Vec<[Vec<Vec<u64>>; 3]> = Vec::new();
                for _ in 0..warps {
                    let mut w: [Vec<Vec<u64>>; 3] = [Vec::new(), Vec::new(), Vec::new()];
                    for _lane in 0..32 {
                        for (slot, (n, e)) in [(na, v.a), (nb, v.b), (nc, v.c)].into_iter().enumerate() {
                            let r: Vec<u64> = (0..n).map(|_| random_reg(&mut rng, e)).collect();
                            input.extend_from_slice(&r);
                            w[slot].push(r);
                        }
                    }
                    regs.push(w);
                }
                let mut out = vec![0u64; warps * 32 * nd as usize];
                launch(
                    exec(),
                    k,
                    [1, 1, 1],
                    [warps as u32 * 32, 1, 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))],
                )
                .expect("params")
                .expect("launch");
                for (w, [a, b, c]) in regs.iter().enumerate() {
                    let want = reference(v, a, b, c);
                    for lane in 0..32 {
                        for j in 0..nd as usize {
                            let got = out[(w * 32 + lane) * nd as usize + j];
                            let mask = if v.d.reg_bits() == 64 { u64::MAX } else { 0xffff_ffff };
                            assert_eq!(
                                got & mask,
                                want[lane][j],
                                "{} (warp mode {warp}, round {round}): warp {w} lane {lane} d{j}",
                                v.text()
                            );
                        }
                    }
                }
            }
        }
    }
}

// ---- ldmatrix, stmatrix, movmatrix, cp.async, mbarrier (ptx/matrix.ptx) ----------------

fn program(warp: bool) -> Program {
    Program::from_file_with("matrix.ptx", &mode(warp)).expect("compiles")
}

/// Element (r, c) of 8x8 b16 matrix `m` of a warp's input, as the kernel
/// lays it out: row r of matrix m is lane (8m + r)'s 16 bytes.
fn in_elem(input: &[u16], warp: usize, m: usize, r: usize, c: usize) -> u32 {
    u32::from(input[(warp * 32 + m * 8 + r) * 8 + c])
}

#[test]
fn ldmatrix_stmatrix_movmatrix_follow_the_isa_layouts() {
    for warp in [false, true] {
        let p = program(warp);
        let k = p.kernel("ldst_matrix").expect("kernel");
        let mut rng = Rng(77);
        let warps = 2usize;
        let n = warps * 32;
        let mut input: Vec<u16> = (0..n * 8).map(|_| rng.u32() as u16).collect();
        let mut out = vec![0u32; n * 12 + n * 8];
        launch(exec(), k, [1, 1, 1], [n as u32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for w in 0..warps {
            for l in 0..32usize {
                let o = &out[(w * 32 + l) * 12..(w * 32 + l + 1) * 12];
                // "Each thread in a warp loads fragments of a row ... A group of
                // four threads loads an entire row": row l/4, columns 2(l%4), +1.
                let plain = |m: usize| in_elem(&input, w, m, l / 4, 2 * (l % 4)) | in_elem(&input, w, m, l / 4, 2 * (l % 4) + 1) << 16;
                // .trans: the matrix loaded column-major.
                let trans = |m: usize| in_elem(&input, w, m, 2 * (l % 4), l / 4) | in_elem(&input, w, m, 2 * (l % 4) + 1, l / 4) << 16;
                for m in 0..4 {
                    assert_eq!(o[m], plain(m), "ldmatrix.x4 warp mode {warp}: warp {w} lane {l} matrix {m}");
                    assert_eq!(o[4 + m], trans(m), "ldmatrix.x4.trans warp mode {warp}: warp {w} lane {l} matrix {m}");
                }
                assert_eq!([o[8], o[9], o[10]], [plain(0), plain(1), plain(0)], "ldmatrix .x2/.x1 warp mode {warp}: lane {l}");
                // movmatrix of matrix 0's fragment: the transpose's fragment.
                assert_eq!(o[11], trans(0), "movmatrix warp mode {warp}: warp {w} lane {l}");
            }
            // stmatrix .x4 of the transposed fragments stores the transposes;
            // stmatrix .x4.trans of the plain ones stores them transposed too.
            let stored = &out[n * 12..];
            for m in 0..4 {
                for r in 0..8 {
                    for c in 0..8 {
                        let row = w * 32 + m * 8 + r;
                        let word = |area: usize| stored[row * 8 + area * 4 + c / 2] >> (16 * (c % 2)) & 0xffff;
                        let want = in_elem(&input, w, m, c, r);
                        assert_eq!(word(0), want, "stmatrix warp mode {warp}: warp {w} matrix {m} ({r},{c})");
                        assert_eq!(word(1), want, "stmatrix.trans warp mode {warp}: warp {w} matrix {m} ({r},{c})");
                    }
                }
            }
        }
    }
}

#[test]
fn cp_async_copies_sizes_zero_fill_and_ignore_src() {
    for warp in [false, true] {
        let p = program(warp);
        let k = p.kernel("cp_async_sizes").expect("kernel");
        let n = 128usize;
        let mut input: Vec<u8> = (0..n * 32).map(|i| (i * 7 + 1) as u8).collect();
        let mut out = vec![0u8; n * 32];
        launch(exec(), k, [1, 1, 1], [n as u32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut input)), Arg::Buf(as_bytes(&mut out))])
            .expect("params")
            .expect("launch");
        for t in 0..n {
            let src = &input[t * 32..t * 32 + 32];
            let got = &out[t * 32..t * 32 + 32];
            let mut want = [0u8; 32];
            // 4 bytes, src-size t % 5 (at most the copy size).
            let k4 = (t % 5).min(4);
            want[..k4].copy_from_slice(&src[..k4]);
            // bytes 4..8 are not written: the fill pattern stays.
            want[4..8].copy_from_slice(&0xdead_beefu32.to_le_bytes());
            // 8 bytes, ignore-src for odd threads.
            if t % 2 == 0 {
                want[8..16].copy_from_slice(&src[8..16]);
            }
            // 16 bytes, src-size t % 17.
            let k16 = t % 17;
            want[16..16 + k16].copy_from_slice(&src[16..16 + k16]);
            assert_eq!(got, &want[..], "thread {t}, warp mode {warp}");
        }
    }
}

#[test]
fn mbarrier_phases_parity_pending_counts_and_transactions() {
    for warp in [false, true] {
        let p = program(warp);
        let k = p.kernel("mbar_phases").expect("kernel");
        for n in [32usize, 128, 96] {
            let mut out = vec![u32::MAX; 2 * n + 4];
            launch(exec(), k, [2, 1, 1], [n as u32, 1, 1], 0, &mut [Arg::Buf(as_bytes(&mut out))]).expect("params").expect("launch");
            for t in 0..n {
                assert_eq!(out[t], ((t + 32) % n) as u32 * 3, "phase 0, thread {t} of {n}, warp mode {warp}");
                assert_eq!(out[n + t], ((t + 64) % n) as u32 * 5, "phase 1, thread {t} of {n}, warp mode {warp}");
            }
            assert_eq!(&out[2 * n..], &[5, 0, 1, 2], "pending count, tx wait before/after, count after drop; warp mode {warp}");
        }
    }
}

// ---- wmma: loads, products and stores through memory ---------------------------------

struct Wmma {
    shape: (u32, u32, u32),
    ab: E,
    acc: E,
    row_a: bool,
    row_b: bool,
    row_c: bool,
}

impl Wmma {
    fn regs(&self, op: Op) -> u32 {
        use E::*;
        let (m, n, k) = self.shape;
        match (op, self.ab) {
            (Op::C, _) => match self.acc {
                F16 => 4,
                F64 => 2,
                _ if (m, n) == (8, 8) => 2,
                _ => 8,
            },
            (_, F16) => 8,
            (_, F64 | S4 | U4 | B1) => 1,
            (Op::A, e) => m * k * e.bits() / 32 / 32,
            (Op::B, e) => k * n * e.bits() / 32 / 32,
        }
    }
}

/// Element `i` (in elements of `bits` bits) of a little-endian byte array.
fn mem_elem(bytes: &[u8], i: usize, bits: u32) -> u64 {
    let bit = i * bits as usize;
    let mut v = 0u64;
    for b in 0..bits as usize {
        let at = bit + b;
        v |= u64::from(bytes[at / 8] >> (at % 8) & 1) << b;
    }
    v
}

#[test]
fn wmma_loads_products_and_stores_match_the_model_in_both_modes() {
    use E::*;
    let cases = [
        Wmma { shape: (16, 16, 16), ab: F16, acc: F32, row_a: true, row_b: false, row_c: true },
        Wmma { shape: (32, 8, 16), ab: F16, acc: F16, row_a: false, row_b: true, row_c: false },
        Wmma { shape: (8, 32, 16), ab: F16, acc: F32, row_a: false, row_b: false, row_c: true },
        Wmma { shape: (16, 16, 16), ab: Bf16, acc: F32, row_a: true, row_b: true, row_c: false },
        Wmma { shape: (8, 32, 16), ab: Bf16, acc: F32, row_a: true, row_b: false, row_c: true },
        Wmma { shape: (16, 16, 8), ab: Tf32, acc: F32, row_a: false, row_b: true, row_c: true },
        Wmma { shape: (16, 16, 16), ab: S8, acc: S32, row_a: true, row_b: false, row_c: true },
        Wmma { shape: (32, 8, 16), ab: U8, acc: S32, row_a: false, row_b: false, row_c: false },
        Wmma { shape: (8, 8, 4), ab: F64, acc: F64, row_a: true, row_b: true, row_c: false },
        Wmma { shape: (8, 8, 32), ab: S4, acc: S32, row_a: true, row_b: false, row_c: true },
        Wmma { shape: (8, 8, 32), ab: U4, acc: S32, row_a: true, row_b: false, row_c: false },
        Wmma { shape: (8, 8, 128), ab: B1, acc: S32, row_a: true, row_b: false, row_c: true },
    ];
    // Leading dimensions: the default plus a pad (in elements), for A, B, C.
    let lds = |w: &Wmma| -> (u32, u32, u32) {
        let (m, n, k) = w.shape;
        let pad = if w.ab.bits() < 8 { 256 / w.ab.bits() } else { 8 };
        let a = if w.row_a { k } else { m } + pad;
        let b = if w.row_b { n } else { k } + pad;
        let c = if w.row_c { n } else { m } + 8;
        (a, b, c)
    };
    let mut src = String::from(".version 8.0\n.target sm_90\n.address_size 64\n");
    for (idx, w) in cases.iter().enumerate() {
        let (m, n, k) = w.shape;
        let (na, nb, nc) = (w.regs(Op::A), w.regs(Op::B), w.regs(Op::C));
        let rt = |e: E| if e == F64 { "b64" } else { "b32" };
        let (lda, ldb, ldc) = lds(w);
        let lay = |r: bool| if r { "row" } else { "col" };
        let list = |name: &str, n: u32| (0..n).map(|j| format!("%{name}{j}")).collect::<Vec<_>>().join(", ");
        let shape = format!("m{m}n{n}k{k}");
        let mma = match w.ab {
            F16 => format!("wmma.mma.sync.aligned.{}.{}.{shape}.{}.{}", lay(w.row_a), lay(w.row_b), w.acc.ptx(), w.acc.ptx()),
            B1 => format!("wmma.mma.xor.popc.sync.aligned.row.col.{shape}.s32.b1.b1.s32"),
            e => format!(
                "wmma.mma.sync.aligned.{}.{}.{shape}.{}.{}.{}.{}",
                lay(w.row_a),
                lay(w.row_b),
                w.acc.ptx(),
                e.ptx(),
                e.ptx(),
                w.acc.ptx()
            ),
        };
        let _ = write!(
            src,
            ".visible .entry w{idx}(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{{\n\
             .reg .{ra} %a<{na}>;\n.reg .{ra} %b<{nb}>;\n.reg .{rc} %c<{nc}>;\n.reg .{rc} %d<{nc}>;\n.reg .u64 %p<4>;\n\
             ld.param.u64 %p0, [pa];\nld.param.u64 %p1, [pb];\nld.param.u64 %p2, [pc];\nld.param.u64 %p3, [pd];\n\
             wmma.load.a.sync.aligned.{la}.{shape}.global.{t} {{{al}}}, [%p0], {lda};\n\
             wmma.load.b.sync.aligned.{lb}.{shape}.global.{t} {{{bl}}}, [%p1], {ldb};\n\
             wmma.load.c.sync.aligned.{lc}.{shape}.global.{ct} {{{cl}}}, [%p2], {ldc};\n\
             {mma} {{{dl}}}, {{{al}}}, {{{bl}}}, {{{cl}}};\n\
             wmma.store.d.sync.aligned.{lc}.{shape}.{ct} [%p3], {{{dl}}}, {ldc};\nret;\n}}\n",
            ra = rt(w.ab),
            rc = rt(w.acc),
            la = lay(w.row_a),
            lb = lay(w.row_b),
            lc = lay(w.row_c),
            t = w.ab.ptx(),
            ct = w.acc.ptx(),
            al = list("a", na),
            bl = list("b", nb),
            cl = list("c", nc),
            dl = list("d", nc),
        );
    }
    for warp in [false, true] {
        let p = Program::from_source_with(&src, &mode(warp)).expect("compiles");
        let mut rng = Rng(4242);
        for (idx, w) in cases.iter().enumerate() {
            let (m, n, k) = w.shape;
            let (m, n, k) = (m as usize, n as usize, k as usize);
            let (lda, ldb, ldc) = lds(w);
            let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
            let (abits, cbits) = (w.ab.bits(), w.acc.bits());
            let a_len = lda * if w.row_a { m } else { k };
            let b_len = ldb * if w.row_b { k } else { n };
            let c_len = ldc * if w.row_c { m } else { n };
            let bytes = |len: usize, bits: u32| len * bits as usize / 8;
            // Random elements as `random_reg` makes them (registers of one type).
            let fill = |rng: &mut Rng, len: usize, e: E| -> Vec<u8> {
                let mut out = Vec::new();
                while out.len() < len {
                    out.extend_from_slice(&random_reg(rng, e).to_le_bytes()[..(e.reg_bits() / 8) as usize]);
                }
                out.truncate(len);
                out
            };
            let mut ab = fill(&mut rng, bytes(a_len, abits), w.ab);
            let mut bb = fill(&mut rng, bytes(b_len, abits), w.ab);
            let cb = fill(&mut rng, bytes(c_len, cbits), w.acc);
            let mut db = cb.clone();
            let kernel = p.kernel(&format!("w{idx}")).expect("kernel");
            launch(
                exec(),
                kernel,
                [1, 1, 1],
                [32, 1, 1],
                0,
                &mut [Arg::Buf(&mut ab), Arg::Buf(&mut bb), Arg::Buf(&mut cb.clone()), Arg::Buf(&mut db)],
            )
            .expect("params")
            .expect("launch");
            let at = |r: usize, c: usize| mem_elem(&ab, if w.row_a { r * lda + c } else { c * lda + r }, abits);
            let bt = |r: usize, c: usize| mem_elem(&bb, if w.row_b { r * ldb + c } else { c * ldb + r }, abits);
            let ci = |r: usize, c: usize| if w.row_c { r * ldc + c } else { c * ldc + r };
            for r in 0..m {
                for c in 0..n {
                    let cv = mem_elem(&cb, ci(r, c), cbits);
                    let want = match w.ab {
                        F16 | Bf16 | Tf32 => {
                            let mut acc = as_f32(cv, w.acc);
                            for x in 0..k {
                                acc = as_f32(at(r, x), w.ab).mul_add(as_f32(bt(x, c), w.ab), acc);
                            }
                            if w.acc == F16 {
                                u64::from(f16::from_f32(acc).to_bits())
                            } else {
                                u64::from(acc.to_bits())
                            }
                        }
                        F64 => {
                            let mut acc = f64::from_bits(cv);
                            for x in 0..k {
                                acc = f64::from_bits(at(r, x)).mul_add(f64::from_bits(bt(x, c)), acc);
                            }
                            acc.to_bits()
                        }
                        B1 => {
                            let mut acc = as_int(cv, S32);
                            for x in 0..k {
                                acc += (at(r, x) ^ bt(x, c)) as i64;
                            }
                            u64::from(acc as u32)
                        }
                        e => {
                            let mut acc = as_int(cv, S32);
                            for x in 0..k {
                                acc += as_int(at(r, x), e) * as_int(bt(x, c), e);
                            }
                            u64::from(acc as u32)
                        }
                    };
                    let got = mem_elem(&db, ci(r, c), cbits);
                    assert_eq!(got, want, "w{idx} {:?} {:?} (warp mode {warp}): D[{r}][{c}]", w.shape, w.ab);
                }
            }
            // Padding between the rows (columns) of D is left alone.
            for r in 0..if w.row_c { m } else { n } {
                for pad in if w.row_c { n } else { m }..ldc {
                    assert_eq!(mem_elem(&db, r * ldc + pad, cbits), mem_elem(&cb, r * ldc + pad, cbits), "w{idx}: padding");
                }
            }
        }
    }
}
