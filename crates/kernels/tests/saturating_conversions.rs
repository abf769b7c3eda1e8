//! Float-to-integer `cvt` saturates (NaN gives 0 for f32 sources and
//! results of up to 32 bits, the sign bit alone from f64 and into 64-bit
//! integers; out of range the nearest bound). On the host, vector code
//! and the fast tier's thread code write it as compares, selects and a
//! plain conversion of a value in range (`FnLower::float_to_int_saturating`:
//! x86 converted the intrinsic's 32 lanes one at a time, and the fast
//! selector has no rule for it). Every destination type from f32 and f64,
//! toward zero and to nearest even, over the values at and around each
//! bound, infinities, NaNs, signed zeros and subnormals, against Rust's
//! saturating casts; warp and thread mode, both tiers.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

/// The destination types, their PTX names and widths.
const DESTS: [(&str, u32, bool); 8] = [
    ("s8", 8, true),
    ("u8", 8, false),
    ("s16", 16, true),
    ("u16", 16, false),
    ("s32", 32, true),
    ("u32", 32, false),
    ("s64", 64, true),
    ("u64", 64, false),
];

/// One kernel: thread `i` converts `in[i]` (an f32 in the low half of a
/// 64-bit slot, or an f64) to every destination type with `rzi` and `rni`,
/// each result widened to 64 bits in `out[i * 16 + j]`.
fn kernel(src: &str) -> String {
    let (reg, load) = if src == "f32" { ("%f1", "ld.global.f32 %f1, [%rd3];") } else { ("%fd1", "ld.global.f64 %fd1, [%rd3];") };
    let mut body = String::new();
    let mut slot = 0;
    for (name, bits, signed) in DESTS {
        for rnd in ["rzi", "rni"] {
            let (dst, widen) = match bits {
                8 | 16 => ("%h1", format!("cvt.{}64.{name} %rd10, %h1;", if signed { "s" } else { "u" })),
                32 => ("%r9", format!("cvt.{}64.{name} %rd10, %r9;", if signed { "s" } else { "u" })),
                _ => ("%rd10", String::new()),
            };
            body += &format!("cvt.{rnd}.{name}.{src} {dst}, {reg};\n{widen}\nst.global.u64 [%rd5+{}], %rd10;\n", slot * 8);
            slot += 1;
        }
    }
    format!(
        r#".version 8.0
.target sm_80
.address_size 64
.visible .entry conv(.param .u64 pin, .param .u64 pout)
{{
.reg .b16 %h<2>;
.reg .b32 %r<10>;
.reg .f32 %f<2>;
.reg .f64 %fd<2>;
.reg .b64 %rd<11>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %ctaid.x;
mov.u32 %r1, %ntid.x;
mov.u32 %r2, %tid.x;
mad.lo.u32 %r3, %r0, %r1, %r2;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd3, %rd0, %rd2;
{load}
mul.wide.u32 %rd4, %r3, 128;
add.u64 %rd5, %rd1, %rd4;
{body}ret;
}}
"#
    )
}

/// What NVIDIA's `cvt.{rzi,rni}.<dest>.<src>` gives for `x`, as the
/// 64-bit extension of the destination (sign-extended for signed types).
fn expected(x: f64, from_f64: bool, bits: u32, signed: bool, nearest: bool) -> u64 {
    if x.is_nan() {
        return match (from_f64 || bits == 64, signed) {
            (false, _) => 0,
            (true, true) => (-(1i128 << (bits - 1))) as u64,
            (true, false) => 1u64 << (bits - 1),
        };
    }
    let r = if nearest { x.round_ties_even() } else { x.trunc() };
    match (bits, signed) {
        (8, true) => r as i8 as i64 as u64,
        (8, false) => r as u8 as u64,
        (16, true) => r as i16 as i64 as u64,
        (16, false) => r as u16 as u64,
        (32, true) => r as i32 as i64 as u64,
        (32, false) => r as u32 as u64,
        (64, true) => r as i64 as u64,
        _ => r as u64,
    }
}

fn values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -1.5,
        -2.5,
        0.49999997,
        -0.9999999,
        1e-40,
        -1e-40,
        1e30,
        -1e30,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ];
    for bits in [8, 16, 32, 64] {
        let p = 2f64.powi(bits);
        let h = 2f64.powi(bits - 1);
        for b in [p, h, -h] {
            // At, around and just inside each bound (in f32 and in f64).
            for d in [0.0, 0.5, -0.5, 1.0, -1.0, 256.0, -256.0, 4096.0, -4096.0] {
                v.push(b + d);
            }
            v.push(f64::from(f32::from_bits((b as f32).to_bits() - 1)));
            v.push(f64::from(f32::from_bits((b as f32).to_bits() + 1)));
        }
    }
    v
}

#[test]
fn float_to_integer_conversions_saturate_as_nvidia_in_every_mode() {
    let exec = Executor::global();
    let mut vals = values();
    while !vals.len().is_multiple_of(64) {
        vals.push(3.0);
    }
    for src in ["f32", "f64"] {
        let text = kernel(src);
        let mut inp: Vec<u64> = vals.iter().map(|&x| if src == "f32" { u64::from((x as f32).to_bits()) } else { x.to_bits() }).collect();
        for warp in [WarpMode::Off, WarpMode::Always] {
            for tier in [Tier::Fast, Tier::Optimized] {
                let opts = Options { warp, tier, strict_affine: false, memcheck: false };
                let p = Program::from_source_with(&text, &opts).unwrap_or_else(|e| panic!("compiles ({src}, {warp:?}, {tier:?}): {e}"));
                let k = p.kernel("conv").expect("kernel `conv`");
                let mut out = vec![0xcdcd_cdcd_cdcd_cdcdu64; vals.len() * 16];
                launch(
                    exec,
                    k,
                    [(vals.len() / 64) as u32, 1, 1],
                    [64, 1, 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))],
                )
                .expect("arguments")
                .expect("launch");
                for (i, &x) in vals.iter().enumerate() {
                    let x = if src == "f32" { f64::from(x as f32) } else { x };
                    for (j, (name, bits, signed)) in DESTS.iter().enumerate() {
                        for (n, rnd) in ["rzi", "rni"].iter().enumerate() {
                            let want = expected(x, src == "f64", *bits, *signed, n == 1);
                            let got = out[i * 16 + j * 2 + n];
                            assert_eq!(
                                got, want,
                                "cvt.{rnd}.{name}.{src} {x:e} ({:#x}): {got:#x}, want {want:#x} ({warp:?}, {tier:?})",
                                inp[i]
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The host's vector code converts all lanes at once: no saturating
/// intrinsic on lane vectors (x86 would convert them one at a time),
/// and none in the fast tier's thread code; the optimised tier's thread
/// code keeps the intrinsic (its code generator has a short scalar form).
#[test]
fn host_vector_and_fast_thread_code_avoid_the_saturating_intrinsic() {
    let text = kernel("f32");
    let module = ptx::parse(&text).expect("parses");
    let ir = |warp, tier| {
        compiler::emit_ir_with_options(&module, &text, &Options { warp, tier, strict_affine: false, memcheck: false }).expect("compiles")
    };
    for tier in [Tier::Fast, Tier::Optimized] {
        let warp_ir = ir(WarpMode::Always, tier);
        assert!(!warp_ir.contains(".sat.v32"), "{tier:?}: {warp_ir}");
        assert!(warp_ir.contains("fptosi <32 x float>") && warp_ir.contains("fptoui <32 x float>"), "{tier:?}: {warp_ir}");
    }
    let fast = ir(WarpMode::Off, Tier::Fast);
    assert!(!fast.contains("@llvm.fptosi.sat") && !fast.contains("@llvm.fptoui.sat"), "{fast}");
    let opt = ir(WarpMode::Off, Tier::Optimized);
    assert!(opt.contains("@llvm.fptosi.sat.i32.f32"), "{opt}");
}
