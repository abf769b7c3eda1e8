//! PTX forms real programs emit that the compiler once refused or got
//! wrong: the carry chain of `sub.cc`/`subc`, video instructions,
//! `cvt.pack.sat`, vector-typed registers, `[reg+imm]` addresses and
//! variables declared inside function bodies, functions with several
//! return values, `.extern .shared` arrays declared in several functions,
//! and the cache-policy, scheduling and prefetch instructions. Each is
//! checked against a reference model written here from the PTX ISA's text,
//! on random and edge inputs, in thread mode and in warp mode.

use backend_cpu::{Executor, LoadedKernel};
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

fn exec() -> &'static Executor {
    Executor::global()
}

const HEADER: &str = ".version 8.5\n.target sm_90\n.address_size 64\n";

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
}

/// Random words with the edge values mixed in: 0, 1, all ones, the sign
/// bit, and values whose bytes and halves sit at their own edges.
fn words(n: usize, seed: u64) -> Vec<u32> {
    const EDGES: [u32; 14] = [
        0,
        1,
        2,
        0xffff_ffff,
        0x8000_0000,
        0x7fff_ffff,
        0x8000_8000,
        0x7fff_7fff,
        0x8080_8080,
        0x7f7f_7f7f,
        0xff00_ff00,
        0x00ff_00ff,
        0xffff_0000,
        0x0000_ffff,
    ];
    let mut r = Rng(seed | 1);
    (0..n)
        .map(|i| match r.u32() % 4 {
            0 => EDGES[(r.u32() as usize + i) % EDGES.len()],
            1 => {
                // Bytes from the edges.
                let b = [0u32, 1, 0x7f, 0x80, 0xff, 0xfe, 0x81];
                let mut w = 0;
                for k in 0..4 {
                    w |= b[r.u32() as usize % b.len()] << (8 * k);
                }
                w
            }
            _ => r.u32(),
        })
        .collect()
}

/// The configurations every kernel runs in: thread by thread and as warps,
/// both tiers.
fn modes() -> Vec<(WarpMode, Tier)> {
    let mut v = Vec::new();
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            v.push((warp, tier));
        }
    }
    v
}

fn program(src: &str, warp: WarpMode, tier: Tier) -> Program {
    match Program::from_source_with(src, &Options { warp, tier, strict_affine: false, memcheck: false }) {
        Ok(p) => p,
        Err(e) => panic!("does not compile ({warp:?}, {tier:?}): {e}\n{src}"),
    }
}

/// Runs `kernel(.u64 in, .u64 out, .u32 n)` over `n` threads (blocks of
/// 64), `ins` input words and `outs` output words per thread; the output
/// starts as 0xCDCDCDCD so an unwritten word shows.
fn run_with(k: &LoadedKernel, n: usize, input: &[u32], outs: usize, dynamic_shared: u32) -> Vec<u32> {
    let mut inp = input.to_vec();
    let mut out = vec![0xcdcd_cdcdu32; n * outs];
    let blocks = n.div_ceil(64) as u32;
    launch(
        exec(),
        k,
        [blocks, 1, 1],
        [64, 1, 1],
        dynamic_shared,
        &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out)), Arg::U32(n as u32)],
    )
    .expect("arguments")
    .expect("launch");
    out
}

/// Compiles `src` in every mode and checks `kernel` against `model`, which
/// maps one thread's input words to its output words. In warp mode the
/// kernel must really run as warps (`lanes == 32`).
fn check(src: &str, kernel: &str, ins: usize, outs: usize, n: usize, seed: u64, model: impl Fn(&[u32]) -> Vec<u32>) {
    check_shared(src, kernel, ins, outs, n, seed, 0, |_, a| model(a))
}

/// [`check`] with dynamic shared memory, and a model that also sees the
/// thread's index.
#[allow(clippy::too_many_arguments)]
fn check_shared(
    src: &str,
    kernel: &str,
    ins: usize,
    outs: usize,
    n: usize,
    seed: u64,
    dynamic_shared: u32,
    model: impl Fn(usize, &[u32]) -> Vec<u32>,
) {
    let input = words(n * ins, seed);
    let expected: Vec<u32> = input.chunks(ins).enumerate().flat_map(|(t, a)| model(t, a)).collect();
    assert_eq!(expected.len(), n * outs);
    for (warp, tier) in modes() {
        let p = program(src, warp, tier);
        let k = p.kernel(kernel).unwrap();
        // Kernels with calls stay in thread mode whatever is asked.
        let body = src.split(&format!(".entry {kernel}(")).nth(1).and_then(|b| b.split("\n}\n").next()).unwrap_or("");
        if warp == WarpMode::Always && !body.contains("call") {
            assert_eq!(k.info.lanes, 32, "`{kernel}` does not run as warps");
        } else if warp == WarpMode::Off {
            assert_eq!(k.info.lanes, 1);
        }
        let got = run_with(k, n, &input, outs, dynamic_shared);
        for t in 0..n {
            let (g, e) = (&got[t * outs..(t + 1) * outs], &expected[t * outs..(t + 1) * outs]);
            if g != e {
                panic!(
                    "`{kernel}` ({warp:?}, {tier:?}), thread {t}: inputs {:08x?}\n got      {g:08x?}\n expected {e:08x?}",
                    &input[t * ins..(t + 1) * ins]
                );
            }
        }
    }
}

/// A kernel body around `body`: `%a0..%a{ins-1}` hold the thread's input
/// words, `%o0..%o{outs-1}` are stored as its output words.
fn kernel(name: &str, ins: usize, outs: usize, decls: &str, body: &str) -> String {
    let mut s = format!(
        ".visible .entry {name}(.param .u64 pin, .param .u64 pout, .param .u32 pn)\n{{\n\
         .reg .b32 %a<{ins}>;\n.reg .b32 %o<{outs}>;\n.reg .b32 %t<4>;\n.reg .b64 %rd<8>;\n.reg .pred %pp;\n{decls}\n\
         ld.param.u64 %rd0, [pin];\nld.param.u64 %rd1, [pout];\nld.param.u32 %t0, [pn];\n\
         mov.u32 %t1, %ctaid.x;\nmov.u32 %t2, %ntid.x;\nmov.u32 %t3, %tid.x;\nmad.lo.u32 %t1, %t1, %t2, %t3;\n\
         setp.ge.u32 %pp, %t1, %t0;\n@%pp bra DONE;\n\
         mul.wide.u32 %rd2, %t1, {};\nadd.u64 %rd2, %rd0, %rd2;\nmul.wide.u32 %rd3, %t1, {};\nadd.u64 %rd3, %rd1, %rd3;\n",
        4 * ins,
        4 * outs
    );
    for i in 0..ins {
        s.push_str(&format!("ld.global.u32 %a{i}, [%rd2+{}];\n", 4 * i));
    }
    s.push_str(body);
    s.push('\n');
    for i in 0..outs {
        s.push_str(&format!("st.global.u32 [%rd3+{}], %o{i};\n", 4 * i));
    }
    s.push_str("DONE:\nret;\n}\n");
    s
}

// ---- the carry chain ---------------------------------------------------------

/// The condition code's carry flag as NVIDIA hardware keeps it: subtraction
/// is `a + !b + 1`, and CC.CF is that sum's carry out, so after `sub.cc`
/// it is 1 when there was no borrow. `subc` adds `!b + CF`. A chain of
/// `sub.cc`/`subc.cc`/`subc` so subtracts with borrow exactly as the ISA's
/// `d = a - (b + borrow)` says, and a carry set by subtraction and read by
/// `addc` (or the reverse) is the carry of that sum.
mod carry {
    pub fn add(a: u64, b: u64, cin: bool, bits: u32) -> (u64, bool) {
        let m = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let s = (a as u128) + (b as u128) + cin as u128;
        ((s as u64) & m, s >> bits != 0)
    }
    pub fn sub(a: u64, b: u64, cin: bool, bits: u32) -> (u64, bool) {
        let m = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        add(a, !b & m, cin, bits)
    }
}

#[test]
fn subtraction_carry_chains_32_bit() {
    let body = "
        sub.cc.u32 %o0, %a0, %a2;
        subc.cc.u32 %o1, %a1, %a3;
        addc.u32 %o2, 0, 0;
        sub.cc.u32 %t0, %a0, %a1;
        addc.u32 %o3, %a2, %a3;
        add.cc.u32 %t0, %a0, %a1;
        subc.u32 %o4, %a2, %a3;
        sub.cc.s32 %t0, %a1, %a0;
        subc.cc.s32 %o5, %a3, %a2;
        subc.u32 %o6, 0, 0;
        mad.lo.cc.u32 %t0, %a0, %a1, %a2;
        subc.u32 %o7, %a3, %a0;
    ";
    let src = format!("{HEADER}{}", kernel("k", 4, 8, "", body));
    check(&src, "k", 4, 8, 512, 11, |a| {
        let [a0, a1, a2, a3] = [a[0] as u64, a[1] as u64, a[2] as u64, a[3] as u64];
        let (o0, c) = carry::sub(a0, a2, true, 32);
        let (o1, c) = carry::sub(a1, a3, c, 32);
        let (o2, _) = carry::add(0, 0, c, 32);
        let (_, c) = carry::sub(a0, a1, true, 32);
        let (o3, _) = carry::add(a2, a3, c, 32);
        let (_, c) = carry::add(a0, a1, false, 32);
        let (o4, _) = carry::sub(a2, a3, c, 32);
        let (_, c) = carry::sub(a1, a0, true, 32);
        let (o5, c) = carry::sub(a3, a2, c, 32);
        let (o6, _) = carry::sub(0, 0, c, 32);
        let (_, c) = carry::add((a0 * a1) & 0xffff_ffff, a2, false, 32);
        let (o7, _) = carry::sub(a3, a0, c, 32);
        [o0, o1, o2, o3, o4, o5, o6, o7].iter().map(|&v| v as u32).collect()
    });
}

#[test]
fn subtraction_carry_chains_64_bit() {
    let body = "
        mov.b64 %rd4, {%a0, %a1};
        mov.b64 %rd5, {%a2, %a3};
        mov.b64 %rd6, {%a4, %a5};
        sub.cc.u64 %rd7, %rd4, %rd5;
        mov.b64 {%o0, %o1}, %rd7;
        subc.cc.u64 %rd7, %rd6, %rd4;
        mov.b64 {%o2, %o3}, %rd7;
        addc.u32 %o4, 0, 0;
        add.cc.u64 %rd7, %rd4, %rd6;
        subc.s64 %rd7, %rd5, %rd6;
        mov.b64 {%o5, %o6}, %rd7;
        sub.cc.s64 %rd7, %rd5, %rd4;
        addc.cc.u64 %rd7, %rd6, %rd5;
        addc.u32 %o7, 0, 0;
    ";
    let src = format!("{HEADER}{}", kernel("k", 6, 8, "", body));
    check(&src, "k", 6, 8, 512, 12, |a| {
        let w = |i: usize| a[i] as u64 | (a[i + 1] as u64) << 32;
        let (x, y, z) = (w(0), w(2), w(4));
        let (r0, c) = carry::sub(x, y, true, 64);
        let (r1, c) = carry::sub(z, x, c, 64);
        let (o4, _) = carry::add(0, 0, c, 32);
        let (_, c) = carry::add(x, z, false, 64);
        let (r2, _) = carry::sub(y, z, c, 64);
        let (_, c) = carry::sub(y, x, true, 64);
        let (_, c) = carry::add(z, y, c, 64);
        let (o7, _) = carry::add(0, 0, c, 32);
        vec![r0 as u32, (r0 >> 32) as u32, r1 as u32, (r1 >> 32) as u32, o4 as u32, r2 as u32, (r2 >> 32) as u32, o7 as u32]
    });
}

// ---- shared memory, variables and addresses ----------------------------------

/// `.extern .shared` arrays, whether declared at module scope or inside
/// any function's body, whatever their names, types and alignments, all
/// name the start of the one dynamic shared window, which follows the
/// static shared variables; a `.func` using one sees what the kernel wrote
/// through another.
#[test]
fn extern_shared_arrays_alias_the_dynamic_window() {
    let src = format!(
        "{HEADER}.extern .shared .align 16 .b8 module_dyn[];\n\
         .func (.reg .b32 r) peer(.reg .b32 i)\n{{\n.extern .shared .align 8 .b64 func_dyn[];\n.reg .b32 %x<3>;\n.reg .b64 %d<3>;\n\
         xor.b32 %x0, i, 1;\nmul.wide.u32 %d0, %x0, 4;\nmov.u64 %d1, func_dyn;\nadd.u64 %d1, %d1, %d0;\nld.shared.u32 %x1, [%d1];\n\
         mov.u64 %d2, module_dyn;\nadd.u64 %d2, %d2, %d0;\nld.shared.u32 %x2, [%d2+256];\nxor.b32 r, %x1, %x2;\nret;\n}}\n{}",
        kernel(
            "k",
            1,
            3,
            ".shared .align 4 .b32 fixed[3];\n.extern .shared .align 4 .b32 kernel_dyn[];\n.reg .b64 %sd<2>;",
            "mov.u32 %t0, %tid.x;\nmul.wide.u32 %sd0, %t0, 4;\nmov.u64 %sd1, kernel_dyn;\nadd.u64 %sd1, %sd1, %sd0;\n\
             st.shared.u32 [%sd1], %a0;\nnot.b32 %t2, %a0;\nst.shared.u32 [%sd1+256], %t2;\n\
             setp.eq.u32 %pp, %t0, 0;\n@%pp st.shared.u32 [fixed+8], 77;\nbar.sync 0;\n\
             call (%o0), peer, (%t0);\nld.shared.u32 %o1, [module_dyn];\nld.shared.u32 %o2, [fixed+8];\nmov.u32 %t1, fixed;\nmov.u32 %t3, kernel_dyn;\nsub.u32 %t1, %t3, %t1;\nadd.u32 %o2, %o2, %t1;",
        )
    );
    // A second kernel without calls (so it runs as warps too), with more
    // static shared memory and its own dynamic array of another type.
    let src = format!(
        "{src}{}",
        kernel(
            "k2",
            1,
            2,
            ".shared .align 8 .b64 big[5];\n.extern .shared .align 2 .b16 halves[];\n.reg .b64 %sd<2>;\n.reg .b32 %u;",
            "mov.u32 %t0, %tid.x;\nmul.wide.u32 %sd0, %t0, 4;\nmov.u64 %sd1, halves;\nadd.u64 %sd1, %sd1, %sd0;\n\
             st.shared.u32 [%sd1], %a0;\nst.shared.u64 [big+32], 5;\nbar.sync 0;\nxor.b32 %u, %t0, 1;\nmul.wide.u32 %sd0, %u, 4;\n\
             mov.u64 %sd1, module_dyn;\nadd.u64 %sd1, %sd1, %sd0;\nld.shared.u32 %o0, [%sd1];\n\
             mov.u32 %t1, big;\nmov.u32 %t3, module_dyn;\nsub.u32 %o1, %t3, %t1;",
        )
    );
    let n = 64;
    let input = words(n, 22);
    // The window follows `big`'s 40 bytes, aligned to 16.
    check_shared(&src, "k2", 1, 2, n, 22, 512, |t, _| vec![input[t ^ 1], 48]);
    // 64 threads, one block: the peer's word, thread 0's word, 77 plus the
    // distance from the static variable to the dynamic window (16: the
    // window is aligned to 16 bytes after 12 bytes of static memory).
    let input = words(n, 21);
    check_shared(&src, "k", 1, 3, n, 21, 512, |t, a| {
        let _ = a;
        let peer = input[t ^ 1];
        vec![peer ^ !peer, input[0], 77 + 16]
    });
}

// ---- functions -----------------------------------------------------------------

/// `.func` with several return values, `.reg` and `.param` ones, called
/// with `call (r1, r2, ...), f, (...)`, directly and from another
/// function.
#[test]
fn functions_with_several_return_values() {
    let src = format!(
        "{HEADER}.func (.reg .b32 s, .reg .b32 d, .reg .b64 w) two(.reg .b32 x, .reg .b32 y)\n{{\n\
         add.u32 s, x, y;\nsub.u32 d, x, y;\nmul.wide.u32 w, x, y;\nret;\n}}\n\
         .func (.param .b32 p, .param .b32 q) viaparam(.param .b32 x)\n{{\n.reg .b32 %v<3>;\n.reg .b64 %w;\n\
         ld.param.b32 %v0, [x];\ncall (%v1, %v2, %w), two, (%v0, 3);\nst.param.b32 [p], %v1;\nst.param.b32 [q], %v2;\nret;\n}}\n{}",
        kernel(
            "k",
            2,
            6,
            ".reg .b64 %w;\n.param .b32 pa;\n.param .b32 pb;\n.param .b32 px;",
            "call (%o0, %o1, %w), two, (%a0, %a1);\nmov.b64 {%o2, %o3}, %w;\n\
             st.param.b32 [px], %a1;\ncall (pa, pb), viaparam, (px);\nld.param.b32 %o4, [pa];\nld.param.b32 %o5, [pb];",
        )
    );
    check(&src, "k", 2, 6, 256, 31, |a| {
        let w = a[0] as u64 * a[1] as u64;
        vec![a[0].wrapping_add(a[1]), a[0].wrapping_sub(a[1]), w as u32, (w >> 32) as u32, a[1].wrapping_add(3), a[1].wrapping_sub(3)]
    });
}

/// `[reg+imm]` with positive, negative and hexadecimal offsets on 64- and
/// 32-bit registers in the global, local and shared spaces, `[var+imm]` on
/// local, shared, module and function-scoped variables, and `.global` and
/// `.const` variables declared inside a function body (statically
/// allocated, initialised, and visible only there).
#[test]
fn register_and_variable_offsets_in_every_space() {
    let decls = ".local .align 8 .b32 loc[8];\n.shared .align 4 .b32 sh[128];\n\
                 .const .align 4 .b32 fc[4] = {10, 20, 30, 40};\n.global .align 4 .b32 fg[2] = {7, 9};\n\
                 .reg .b64 %l, %rc, %rg, %g4;\n.reg .b32 %l32, %s, %x, %y;";
    let body = "
        st.local.u32 [loc+4], %a0;
        mov.u64 %l, loc;
        add.u64 %l, %l, 12;
        st.local.u32 [%l+-4], %a1;
        mov.u32 %l32, loc;
        st.local.u32 [%l32+0xc], %a2;
        ld.local.u32 %o0, [loc+8];
        ld.local.u32 %o1, [%l+0];
        ld.local.u32 %o2, [%l32+4];
        ld.global.u32 %o3, [%rd2+0xc];
        add.u64 %g4, %rd2, 16;
        ld.global.u32 %o4, [%g4+-12];
        mov.u32 %s, sh;
        mov.u32 %x, %tid.x;
        mad.lo.u32 %s, %x, 8, %s;
        st.shared.u32 [%s+4], %a3;
        ld.shared.u32 %y, [%s+0x4];
        ld.shared.u32 %x, [sh+4];
        add.u32 %o5, %y, 0;
        ld.const.u32 %x, [fc+8];
        mov.u64 %rc, fc;
        ld.const.u32 %y, [%rc+12];
        add.u32 %o6, %x, %y;
        ld.global.u32 %x, [fg+4];
        mov.u64 %rg, fg;
        ld.global.u32 %y, [%rg+0];
        ld.global.u32 %o8, [gv+8];
        mad.lo.u32 %o7, %x, 16, %y;
    ";
    let src = format!("{HEADER}.global .align 4 .b32 gv[4] = {{1, 2, 3, 4}};\n{}", kernel("k", 4, 9, decls, body));
    check(&src, "k", 4, 9, 256, 41, |a| vec![a[1], a[2], a[0], a[3], a[1], a[3], 70, 9 * 16 + 7, 3]);
}

/// A function-scoped `.global` is one variable for every thread and every
/// caller (not a copy per thread or per function compiled), and functions
/// may each have one of the same type under different names.
#[test]
fn function_scoped_globals_are_shared_by_all_threads() {
    let src = format!(
        "{HEADER}.func (.reg .b32 r) count(.reg .b32 x)\n{{\n.global .align 4 .u32 counter;\natom.global.add.u32 r, [counter], x;\nret;\n}}\n\
         .func (.reg .b32 r) peek()\n{{\n.global .align 4 .u32 other = 5;\nld.global.u32 r, [other];\nret;\n}}\n{}",
        kernel("k", 1, 2, "", "call (%o0), count, (1);\ncall (%o1), peek, ();")
    );
    let p = program(&src, WarpMode::Off, Tier::Optimized);
    let k = p.kernel("k").unwrap();
    let n = 200;
    let out = run_with(k, n, &words(n, 5), 2, 0);
    let mut seen: Vec<u32> = out.chunks(2).map(|c| c[0]).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..n as u32).collect::<Vec<_>>(), "each thread saw the counter once");
    assert!(out.chunks(2).all(|c| c[1] == 5));
    // A second launch continues from where the first left the variable.
    let out = run_with(k, 1, &[0], 2, 0);
    assert_eq!(out, [n as u32, 5]);
}

// ---- cvt.pack ------------------------------------------------------------------

/// `cvt.pack.sat.<t>.s32.b32` (PTX ISA, "cvt.pack"): `a` and `b` clamped
/// to `t`'s range; `b` in the low bits, `a` above it, then (narrower than
/// 16 bits) `c`'s low bits above both.
fn pack_model(bits: u32, signed: bool, a: u32, b: u32, c: Option<u32>) -> u32 {
    let (lo, hi) = if signed { (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1) } else { (0, (1i64 << bits) - 1) };
    let sat = |x: u32| ((x as i32 as i64).clamp(lo, hi) as u32) & ((1u32 << bits) - 1);
    let mut d = sat(b) | sat(a) << bits;
    if let Some(c) = c {
        d |= c << (2 * bits);
    }
    d
}

#[test]
fn cvt_pack_saturates_and_packs() {
    let forms = [
        ("u16", 16, false),
        ("s16", 16, true),
        ("u8", 8, false),
        ("s8", 8, true),
        ("u4", 4, false),
        ("s4", 4, true),
        ("u2", 2, false),
        ("s2", 2, true),
    ];
    let mut body = String::new();
    for (i, (t, bits, _)) in forms.iter().enumerate() {
        if *bits == 16 {
            body.push_str(&format!("cvt.pack.sat.{t}.s32.b32 %o{i}, %a0, %a1;\n"));
        } else {
            body.push_str(&format!("cvt.pack.sat.{t}.s32.b32 %o{i}, %a0, %a1, %a2;\n"));
        }
    }
    // Small magnitudes too, where the narrow types do not saturate.
    body.push_str("shr.s32 %t0, %a0, 26;\nshr.s32 %t1, %a1, 27;\ncvt.pack.sat.s8.s32.b32 %o8, %t0, %t1, %a2;\ncvt.pack.sat.u4.s32.b32 %o9, %t1, %t0, %a2;\n");
    let src = format!("{HEADER}{}", kernel("k", 3, 10, "", &body));
    check(&src, "k", 3, 10, 512, 51, |a| {
        let mut v: Vec<u32> =
            forms.iter().map(|&(_, bits, signed)| pack_model(bits, signed, a[0], a[1], (bits < 16).then_some(a[2]))).collect();
        let (s0, s1) = (((a[0] as i32) >> 26) as u32, ((a[1] as i32) >> 27) as u32);
        v.push(pack_model(8, true, s0, s1, Some(a[2])));
        v.push(pack_model(4, false, s1, s0, Some(a[2])));
        v
    });
    // A worked case: a = -257, b = 257, c = -130436883.
    let (a, b, c) = ((-257i32) as u32, 257u32, (-130_436_883i32) as u32);
    assert_eq!(pack_model(8, false, a, b, Some(c)), 0xb0ed_00ff);
    assert_eq!(pack_model(8, true, a, b, Some(c)), 0xb0ed_807f);
}

// ---- video instructions ------------------------------------------------------------
//
// The models below follow the PTX ISA's pseudocode ("Scalar Video
// Instructions", "SIMD Video Instructions", `vmad`) with exact 128-bit
// integers.

/// A scalar selector: `None` (the word), `Some((false, k))` byte k,
/// `Some((true, k))` halfword k.
type Sel = Option<(bool, u8)>;

fn sel_text(s: Sel) -> String {
    match s {
        None => String::new(),
        Some((false, k)) => format!(".b{k}"),
        Some((true, k)) => format!(".h{k}"),
    }
}

/// `partSelectSignExtend`.
fn part(x: u32, sel: Sel, signed: bool) -> i128 {
    match sel {
        None if signed => x as i32 as i128,
        None => x as i128,
        Some((half, k)) => {
            let bits = if half { 16 } else { 8 };
            let v = (x >> (k as u32 * bits)) & ((1u32 << bits) - 1);
            if signed {
                ((v << (32 - bits)) as i32 >> (32 - bits)) as i128
            } else {
                v as i128
            }
        }
    }
}

fn clamp_to(v: i128, signed: bool, bits: u32) -> i128 {
    let (lo, hi) = if signed { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
    v.clamp(lo, hi)
}

#[derive(Clone, Copy, Debug)]
struct Scalar {
    op: &'static str,
    /// vset's comparison, vshl/vshr's mode.
    modifier: &'static str,
    d: bool,
    a: bool,
    b: bool,
    sat: bool,
    asel: Sel,
    bsel: Sel,
    dsel: Sel,
    secop: &'static str,
}

impl Scalar {
    fn text(&self, dest: &str, a: &str, b: &str, c: &str) -> String {
        let t = |s: bool| if s { ".s32" } else { ".u32" };
        let types = match self.op {
            "vset" => format!("{}{}", t(self.a), t(self.b)),
            _ => format!("{}{}{}", t(self.d), t(self.a), t(self.b)),
        };
        let mut s = format!("{}{types}", self.op);
        if self.sat {
            s.push_str(".sat");
        }
        if !self.modifier.is_empty() {
            s.push_str(&format!(".{}", self.modifier));
        }
        if !self.secop.is_empty() {
            s.push_str(&format!(".{}", self.secop));
        }
        s.push_str(&format!(" {dest}{}, {a}{}, {b}{}", sel_text(self.dsel), sel_text(self.asel), sel_text(self.bsel)));
        if self.dsel.is_some() || !self.secop.is_empty() {
            s.push_str(&format!(", {c}"));
        }
        s.push(';');
        s
    }

    fn model(&self, a: u32, b: u32, c: u32) -> u32 {
        let dsigned = self.d && self.op != "vset";
        let ta = part(a, self.asel, self.a);
        let tb = part(b, self.bsel, self.b && !matches!(self.op, "vshl" | "vshr"));
        let tmp: i128 = match self.op {
            "vadd" => ta + tb,
            "vsub" => ta - tb,
            "vabsdiff" => (ta - tb).abs(),
            "vmin" => ta.min(tb),
            "vmax" => ta.max(tb),
            "vset" => {
                let r = match self.modifier {
                    "eq" => ta == tb,
                    "ne" => ta != tb,
                    "lt" => ta < tb,
                    "le" => ta <= tb,
                    "gt" => ta > tb,
                    _ => ta >= tb,
                };
                r as i128
            }
            _ => {
                let n = if self.modifier == "clamp" { tb.min(32) } else { tb & 0x1f };
                if self.op == "vshl" {
                    ta << n
                } else {
                    ta >> n
                }
            }
        };
        // optSaturate: the merged part's range, else the word's.
        let tmp = if self.sat {
            let bits = match self.dsel {
                Some((false, _)) => 8,
                Some((true, _)) => 16,
                None => 32,
            };
            clamp_to(tmp, dsigned, bits)
        } else {
            tmp
        };
        // The `.s33` intermediate.
        let tmp = ((tmp << 95) >> 95) as i64;
        let cx = if dsigned { c as i32 as i64 } else { c as i64 };
        match (self.dsel, self.secop) {
            (Some((half, k)), _) => {
                let bits = if half { 16 } else { 8 };
                let field = ((1u64 << bits) - 1) as u32;
                let shift = k as u32 * bits;
                ((tmp as u32 & field) << shift) | (c & !(field << shift))
            }
            (None, "add") => (tmp + cx) as u32,
            (None, "min") => tmp.min(cx) as u32,
            (None, "max") => tmp.max(cx) as u32,
            _ => tmp as u32,
        }
    }
}

fn scalar_forms(seed: u64) -> Vec<Scalar> {
    let mut r = Rng(seed);
    let mut forms = Vec::new();
    let sels: [Sel; 7] = [None, Some((false, 0)), Some((false, 1)), Some((false, 2)), Some((false, 3)), Some((true, 0)), Some((true, 1))];
    let ops: [(&str, &[&str]); 8] = [
        ("vadd", &[""]),
        ("vsub", &[""]),
        ("vabsdiff", &[""]),
        ("vmin", &[""]),
        ("vmax", &[""]),
        ("vshl", &["clamp", "wrap"]),
        ("vshr", &["clamp", "wrap"]),
        ("vset", &["eq", "ne", "lt", "le", "gt", "ge"]),
    ];
    for (op, mods) in ops {
        for types in 0..8u32 {
            for k in 0..2 {
                let (d, a, b) = (types & 4 != 0, types & 2 != 0, types & 1 != 0);
                let b = b && !matches!(op, "vshl" | "vshr");
                let variant = (k + r.u32() as usize) % 5;
                let (dsel, secop) = match variant {
                    0 => (None, ""),
                    1 => (None, "add"),
                    2 => (None, "min"),
                    3 => (None, "max"),
                    _ => (sels[1 + r.u32() as usize % 6], ""),
                };
                forms.push(Scalar {
                    op,
                    modifier: mods[r.u32() as usize % mods.len()],
                    d,
                    a,
                    b,
                    sat: op != "vset" && r.u32().is_multiple_of(2),
                    asel: sels[r.u32() as usize % 7],
                    bsel: sels[r.u32() as usize % 7],
                    dsel,
                    secop,
                });
            }
        }
    }
    forms
}

#[test]
fn scalar_video_instructions_match_the_isa() {
    let forms = scalar_forms(77);
    let mut body = String::new();
    for (i, f) in forms.iter().enumerate() {
        body.push_str(&f.text(&format!("%o{i}"), "%a0", "%a1", "%a2"));
        body.push('\n');
    }
    let src = format!("{HEADER}{}", kernel("k", 3, forms.len(), "", &body));
    check(&src, "k", 3, forms.len(), 192, 61, |a| forms.iter().map(|f| f.model(a[0], a[1], a[2])).collect());
}

/// Small shift amounts (random words shift by their own low bits with
/// `.wrap` only) and equal operands (every comparison's edge).
#[test]
fn scalar_video_shifts_and_comparisons_at_their_edges() {
    let mut forms = Vec::new();
    for op in ["vshl", "vshr"] {
        for m in ["clamp", "wrap"] {
            for types in 0..4u32 {
                for (sat, dsel) in [(false, None), (true, None), (true, Some((false, 2))), (false, Some((true, 1)))] {
                    forms.push(Scalar {
                        op,
                        modifier: m,
                        d: types & 2 != 0,
                        a: types & 1 != 0,
                        b: false,
                        sat,
                        asel: None,
                        bsel: Some((false, 0)),
                        dsel,
                        secop: "",
                    });
                }
            }
        }
    }
    for cmp in ["eq", "ne", "lt", "le", "gt", "ge"] {
        for types in 0..8u32 {
            forms.push(Scalar {
                op: "vset",
                modifier: cmp,
                d: false,
                a: types & 2 != 0,
                b: types & 1 != 0,
                sat: false,
                asel: None,
                bsel: None,
                dsel: None,
                secop: if types & 4 != 0 { "add" } else { "" },
            });
        }
    }
    let mut body = String::new();
    for (i, f) in forms.iter().enumerate() {
        // Shifts by the low byte of b (0..255, clamped or wrapped); vset
        // compares a with b, and with itself.
        let b = if f.op == "vset" && i % 2 == 0 { "%a0" } else { "%a1" };
        body.push_str(&f.text(&format!("%o{i}"), "%a0", b, "%a2"));
        body.push('\n');
    }
    let src = format!("{HEADER}{}", kernel("k", 3, forms.len(), "", &body));
    let n = 256;
    check(&src, "k", 3, forms.len(), n, 62, |a| {
        forms.iter().enumerate().map(|(i, f)| f.model(a[0], if f.op == "vset" && i % 2 == 0 { a[0] } else { a[1] }, a[2])).collect()
    });
}

#[derive(Clone, Copy, Debug)]
struct Vmad {
    a: bool,
    b: bool,
    asel: Sel,
    bsel: Sel,
    na: bool,
    nb: bool,
    nc: bool,
    po: bool,
    sat: bool,
    shift: u32,
}

impl Vmad {
    fn text(&self, i: usize) -> String {
        let t = |s: bool| if s { ".s32" } else { ".u32" };
        let signed = self.a || self.b || self.na ^ self.nb || self.nc;
        let mut s = format!("vmad{}{}{}", t(signed), t(self.a), t(self.b));
        if self.po {
            s.push_str(".po");
        }
        if self.sat {
            s.push_str(".sat");
        }
        if self.shift > 0 {
            s.push_str(&format!(".shr{}", self.shift));
        }
        let n = |x: bool| if x { "-" } else { "" };
        format!("{s} %o{i}, {}%a0{}, {}%a1{}, {}%a2;", n(self.na), sel_text(self.asel), n(self.nb), sel_text(self.bsel), n(self.nc))
    }

    /// The ISA's `vmad` pseudocode.
    fn model(&self, a: u32, b: u32, c: u32) -> u32 {
        let ta = part(a, self.asel, self.a);
        let tb = part(b, self.bsel, self.b);
        let signed = self.a || self.b || self.na ^ self.nb || self.nc;
        let mut tmp = ta * tb;
        let mut c = c;
        let lsb = if self.po {
            1
        } else if self.na ^ self.nb {
            tmp = !tmp;
            1
        } else if self.nc {
            c = !c;
            1
        } else {
            0
        };
        let c128 = if signed { c as i32 as i128 } else { c as i128 };
        let tmp = tmp + c128 + lsb;
        let r = match self.shift {
            0 => tmp,
            s if signed => tmp >> s,
            s => ((tmp as u128) >> s) as i128,
        };
        let r = r as u64;
        let r = if self.sat {
            if signed {
                (r as i64).clamp(i32::MIN as i64, i32::MAX as i64) as u64
            } else {
                r.min(u32::MAX as u64)
            }
        } else {
            r
        };
        r as u32
    }
}

#[test]
fn vmad_matches_the_isa() {
    let sels: [Sel; 4] = [None, Some((false, 1)), Some((true, 0)), Some((true, 1))];
    let mut forms = Vec::new();
    let mut r = Rng(91);
    for types in 0..4u32 {
        for neg in 0..5u32 {
            for k in 0..3 {
                let (na, nb, nc, po) = match neg {
                    0 => (false, false, false, false),
                    1 => (true, false, false, false),
                    2 => (false, true, false, false),
                    3 => (false, false, true, false),
                    _ => (false, false, false, true),
                };
                forms.push(Vmad {
                    a: types & 2 != 0,
                    b: types & 1 != 0,
                    asel: sels[r.u32() as usize % 4],
                    bsel: sels[r.u32() as usize % 4],
                    na,
                    nb,
                    nc,
                    po,
                    sat: k != 1,
                    shift: [0, 7, 15][(k + r.u32() as usize) % 3],
                });
            }
        }
    }
    let body: String = forms.iter().enumerate().map(|(i, f)| f.text(i) + "\n").collect();
    let src = format!("{HEADER}{}", kernel("k", 3, forms.len(), "", &body));
    check(&src, "k", 3, forms.len(), 192, 92, |a| forms.iter().map(|f| f.model(a[0], a[1], a[2])).collect());
}

#[derive(Clone, Copy, Debug)]
struct Simd {
    op: &'static str,
    lanes: u32,
    cmp: &'static str,
    d: bool,
    a: bool,
    b: bool,
    sat: bool,
    add: bool,
    /// Lane digits as written (highest first); empty for the default.
    asel: [u8; 4],
    bsel: [u8; 4],
    default_sel: bool,
    mask: u32,
}

impl Simd {
    fn text(&self, i: usize) -> String {
        let t = |s: bool| if s { ".s32" } else { ".u32" };
        let unit = if self.lanes == 2 { "h" } else { "b" };
        let set = self.op.starts_with("vset");
        let mut s = if set {
            format!("{}{}{}.{}", self.op, t(self.a), t(self.b), self.cmp)
        } else {
            format!("{}{}{}{}", self.op, t(self.d), t(self.a), t(self.b))
        };
        if self.sat {
            s.push_str(".sat");
        }
        if self.add {
            s.push_str(".add");
        }
        let full = (1u32 << self.lanes) - 1;
        let mask = if self.mask == full {
            String::new()
        } else {
            format!(".{unit}{}", (0..self.lanes).rev().filter(|l| self.mask & (1 << l) != 0).map(|l| l.to_string()).collect::<String>())
        };
        let sel = |d: &[u8; 4]| {
            if self.default_sel {
                String::new()
            } else {
                format!(".{unit}{}", d[..self.lanes as usize].iter().map(|x| x.to_string()).collect::<String>())
            }
        };
        format!("{s} %o{i}{mask}, %a0{}, %a1{}, %a2;", sel(&self.asel), sel(&self.bsel))
    }

    /// The ISA's SIMD pseudocode.
    fn model(&self, a: u32, b: u32, c: u32) -> u32 {
        let n = self.lanes as usize;
        let w = 32 / self.lanes;
        let pool = a as u64 | (b as u64) << 32;
        let field = (1u64 << w) - 1;
        let ext = |k: u8, signed: bool| -> i64 {
            let v = (pool >> (k as u32 * w)) & field;
            if signed && v >> (w - 1) != 0 {
                v as i64 - (1i64 << w)
            } else {
                v as i64
            }
        };
        // Lane i's digits: as written, highest lane first.
        let (asel, bsel): (Vec<u8>, Vec<u8>) = if self.default_sel {
            ((0..n as u8).collect(), (n as u8..2 * n as u8).collect())
        } else {
            (self.asel[..n].iter().rev().copied().collect(), self.bsel[..n].iter().rev().copied().collect())
        };
        let mut d: u32 = if self.add { c } else { 0 };
        for i in 0..n {
            let va = ext(asel[i], self.a);
            let vb = ext(bsel[i], self.b);
            let mut t = match self.op.trim_end_matches(['2', '4']) {
                "vadd" => va + vb,
                "vsub" => va - vb,
                "vavrg" => {
                    if va + vb >= 0 {
                        (va + vb + 1) >> 1
                    } else {
                        (va + vb) >> 1
                    }
                }
                "vabsdiff" => (va - vb).abs(),
                "vmin" => va.min(vb),
                "vmax" => va.max(vb),
                _ => {
                    (match self.cmp {
                        "eq" => va == vb,
                        "ne" => va != vb,
                        "lt" => va < vb,
                        "le" => va <= vb,
                        "gt" => va > vb,
                        _ => va >= vb,
                    }) as i64
                }
            };
            if self.sat {
                t = clamp_to(t as i128, self.d, w) as i64;
            }
            let on = self.mask & (1 << i) != 0;
            if self.add {
                if on {
                    d = d.wrapping_add(t as u32);
                }
            } else {
                let lane = if on { (t as u64 & field) as u32 } else { ((c as u64 >> (i as u32 * w)) & field) as u32 };
                d |= lane << (i as u32 * w);
            }
        }
        d
    }
}

#[test]
fn simd_video_instructions_match_the_isa() {
    let mut r = Rng(101);
    let mut forms = Vec::new();
    for lanes in [2u32, 4] {
        for op in ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset"] {
            for k in 0..6u32 {
                let set = op == "vset";
                let add = k % 3 == 1;
                let sat = !set && !add && k % 3 == 2;
                let mut asel = [0u8; 4];
                let mut bsel = [0u8; 4];
                for x in asel.iter_mut().chain(bsel.iter_mut()) {
                    *x = (r.u32() % (2 * lanes)) as u8;
                }
                let full = (1u32 << lanes) - 1;
                let mask = if k < 2 { full } else { 1 + r.u32() % full };
                forms.push(Simd {
                    op: if lanes == 2 {
                        ["vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vset2"]
                    } else {
                        ["vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4", "vset4"]
                    }[["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset"].iter().position(|o| *o == op).unwrap()],
                    lanes,
                    cmp: ["eq", "ne", "lt", "le", "gt", "ge"][(k as usize + r.u32() as usize) % 6],
                    d: r.u32().is_multiple_of(2),
                    a: r.u32().is_multiple_of(2),
                    b: r.u32().is_multiple_of(2),
                    sat,
                    add,
                    asel,
                    bsel,
                    default_sel: k == 0,
                    mask,
                });
            }
        }
    }
    let body: String = forms.iter().enumerate().map(|(i, f)| f.text(i) + "\n").collect();
    let src = format!("{HEADER}{}", kernel("k", 3, forms.len(), "", &body));
    check(&src, "k", 3, forms.len(), 192, 102, |a| forms.iter().map(|f| f.model(a[0], a[1], a[2])).collect());
}

// ---- vector-typed registers ------------------------------------------------------------

/// `.reg .v2`/`.v4` registers of several types: whole vectors as the
/// operands of `ld`, `st` and `mov` (also packed into and out of a 64-bit
/// register), elements as sources and destinations (`.x`..`.w` and
/// `.r`..`.a`), in parameterised declarations.
#[test]
fn vector_registers_as_wholes_and_elements() {
    let decls =
        ".reg .v4 .u32 %v<2>;\n.reg .v2 .u32 %w;\n.reg .v2 .b64 %q;\n.reg .v4 .f32 %fv;\n.reg .v2 .u16 %h;\n.reg .b64 %p64;\n.reg .f32 %f;";
    let body = "
        ld.global.v4.u32 %v0, [%rd2];
        add.u32 %v1.x, %v0.y, %v0.z;
        mov.u32 %v1.y, %v0.w;
        sub.u32 %v1.z, %v0.r, %v0.a;
        mov.u32 %v1.w, %v0.g;
        mov.v4.u32 %v0, %v1;
        st.global.v4.u32 [%rd3], %v0;
        mov.b64 %p64, {%v0.x, %v0.w};
        mov.b64 %w, %p64;
        st.global.v2.u32 [%rd3+16], %w;
        ld.global.v2.u64 %q, [%rd2];
        add.u64 %p64, %q.x, %q.y;
        mov.b64 {%o6, %o7}, %p64;
        cvt.rn.f32.u32 %fv.x, %a0;
        cvt.rn.f32.u32 %fv.y, %a1;
        add.f32 %fv.z, %fv.x, %fv.y;
        mov.f32 %fv.w, 0f3F800000;
        mov.b32 %f, %fv.w;
        cvt.rzi.u32.f32 %o8, %fv.z;
        mov.b32 %o9, %f;
        mov.b32 {%h.y, %h.x}, %a3;
        mov.b32 %o10, %h;
        {
            .reg .v2 .u32 %w;
            mov.v2.u32 %w, {%a2, %a1};
            mov.u32 %o11, %w.x;
        }
    ";
    // The first six words come from the stores above, not from `%o`.
    let src = format!(
        "{HEADER}{}",
        kernel("k", 4, 12, decls, body)
            .replace("st.global.u32 [%rd3+0], %o0;\n", "")
            .replace("st.global.u32 [%rd3+4], %o1;\n", "")
            .replace("st.global.u32 [%rd3+8], %o2;\n", "")
            .replace("st.global.u32 [%rd3+12], %o3;\n", "")
            .replace("st.global.u32 [%rd3+16], %o4;\n", "")
            .replace("st.global.u32 [%rd3+20], %o5;\n", "")
    );
    check(&src, "k", 4, 12, 256, 111, |a| {
        let v1 = [a[1].wrapping_add(a[2]), a[3], a[0].wrapping_sub(a[3]), a[1]];
        let q = (a[0] as u64 | (a[1] as u64) << 32).wrapping_add(a[2] as u64 | (a[3] as u64) << 32);
        let fx = a[0] as f32;
        let fy = a[1] as f32;
        let fz = fx + fy;
        vec![v1[0], v1[1], v1[2], v1[3], v1[0], v1[3], q as u32, (q >> 32) as u32, fz as u32, 1.0f32.to_bits(), a[3].rotate_left(16), a[2]]
    });
}

// ---- scheduling, cache policy and prefetch instructions ------------------------------

/// `elect.sync d|p, membermask` gives every participating lane the leader
/// (the lowest lane of the member mask) and sets `p` in the leader only;
/// `griddepcontrol`, `nanosleep`, `prefetch`, `prefetchu`,
/// `applypriority` and `discard` have no effect a program can see here
/// (`discard` leaves the data unspecified; the CPU keeps it), and a
/// `createpolicy` value is accepted by loads and stores with
/// `.L2::cache_hint`, which then access memory as without it.
#[test]
fn elect_cache_policies_and_hints() {
    let body = "
        griddepcontrol.wait;
        mov.u32 %t0, %laneid;
        and.b32 %t1, %t0, 3;
        setp.ne.u32 %pp, %t1, 1;
        mov.u32 %o0, 99;
        mov.u32 %o1, 7;
        @%pp bra SKIP;
        activemask.b32 %t2;
        elect.sync %o0|%pp, %t2;
        selp.u32 %o1, 1, 0, %pp;
    SKIP:
        elect.sync _|%pp, 0xffffffff;
        selp.u32 %o2, 1, 0, %pp;
        nanosleep.u32 20;
        prefetch.global.L2 [%rd2];
        prefetch.global.L2::evict_last [%rd2];
        prefetchu.L1 [%rd2];
        applypriority.global.L2::evict_normal [%rd2], 128;
        createpolicy.fractional.L2::evict_last.b64 %rd4, 1.0;
        createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %rd5, 0.5;
        createpolicy.range.L2::evict_last.L2::evict_first.b64 %rd6, [%rd2], 64, 128;
        ld.global.L2::cache_hint.u32 %o3, [%rd2+4], %rd4;
        ld.global.L2::cache_hint.u32 %o4, [%rd2], %rd6;
        st.global.L2::cache_hint.u32 [%rd2+4], %a0, %rd5;
        ld.global.u32 %o5, [%rd2+4];
        discard.global.L2 [%rd2], 128;
        griddepcontrol.launch_dependents;
    ";
    let src = format!("{HEADER}{}", kernel("k", 2, 6, "", body));
    // Lanes 1, 5, 9, ... elect among themselves (leader: lane 1); then the
    // whole warp elects lane 0.
    check_shared(&src, "k", 2, 6, 128, 121, 0, |t, a| {
        let lane = (t % 32) as u32;
        let (o0, o1) = if lane % 4 == 1 { (1, (lane == 1) as u32) } else { (99, 7) };
        vec![o0, o1, (lane == 0) as u32, a[1], a[0], a[0]]
    });
}

// ---- cluster barriers ------------------------------------------------------------

/// `barrier.cluster.arrive` and `barrier.cluster.wait` (sm_90): a cluster
/// is one block here, so the wait is a barrier of the whole block; threads
/// exchange words through shared memory across it, and across a
/// `bar.sync 0` after it. (Warp mode leaves kernels with cluster barriers
/// to thread mode, so every mode runs them thread by thread.)
#[test]
fn cluster_barriers_order_the_block() {
    let src = format!(
        "{HEADER}{}",
        kernel(
            "k",
            1,
            2,
            ".shared .align 4 .b32 words[64];\n.shared .align 4 .b32 more[64];\n.reg .b64 %sd<3>;\n.reg .b32 %u;",
            "mov.u32 %t0, %tid.x;\nmul.wide.u32 %sd0, %t0, 4;\nmov.u64 %sd1, words;\nadd.u64 %sd1, %sd1, %sd0;\n\
             st.shared.u32 [%sd1], %a0;\nbarrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n\
             xor.b32 %u, %t0, 1;\nmul.wide.u32 %sd2, %u, 4;\nmov.u64 %sd1, words;\nadd.u64 %sd1, %sd1, %sd2;\nld.shared.u32 %o0, [%sd1];\n\
             not.b32 %u, %a0;\nmov.u64 %sd1, more;\nadd.u64 %sd1, %sd1, %sd0;\nst.shared.u32 [%sd1], %u;\nbar.sync 0;\n\
             xor.b32 %u, %t0, 2;\nmul.wide.u32 %sd2, %u, 4;\nmov.u64 %sd1, more;\nadd.u64 %sd1, %sd1, %sd2;\nld.shared.u32 %o1, [%sd1];",
        )
    );
    let n = 64;
    let input = words(n, 31);
    let expected: Vec<u32> = (0..n).flat_map(|t| [input[t ^ 1], !input[t ^ 2]]).collect();
    for (warp, tier) in modes() {
        let p = program(&src, warp, tier);
        let got = run_with(p.kernel("k").expect("kernel"), n, &input, 2, 0);
        assert_eq!(got, expected, "({warp:?}, {tier:?})");
    }
}
