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
//! bit with the model (`mma_model`, which the emulated AMD GPU tests of
//! `libcuda` share).

mod mma_model;

use backend_cpu::Executor;
use half::f16;
use kernels::{as_bytes, launch, Arg, Program};
use mma_model::*;
use std::fmt::Write;

fn exec() -> &'static Executor {
    Executor::global()
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
                let nd = v.d_regs();
                let (mut input, regs) = random_fragments(&mut rng, v, warps);
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
