//! 16-bit float comparisons and NaN tests are made on the values' bits
//! where the target has no 16-bit float compare (x86 without
//! AVX512-FP16: LLVM compared 32 lanes one at a time):
//! `FnLower::fcmp_16_bits`, `is_nan_16`. Every `setp` predicate of f16
//! and bf16 over every pair of special and ordinary values (signed
//! zeros, infinities, NaNs with several payloads, subnormals, the
//! largest finite values, neighbours), and `cvt.f32.f16`/`.bf16`
//! (the canonical NaN for any NaN), against IEEE comparisons of the
//! values widened to f32; warp and thread mode, both tiers.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use half::{bf16, f16};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry cmp(.param .u64 pin, .param .u64 pout)
{
.reg .pred %p<4>;
.reg .b32 %r<16>;
.reg .b16 %h<8>;
.reg .f32 %f<4>;
.reg .b64 %rd<8>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %ctaid.x;
mov.u32 %r1, %ntid.x;
mov.u32 %r2, %tid.x;
mad.lo.u32 %r3, %r0, %r1, %r2;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd3, %rd0, %rd2;
ld.global.v4.b16 {%h0, %h1, %h2, %h3}, [%rd3];
mov.u32 %r10, 0;
setp.eq.f16 %p1, %h0, %h1;
selp.u32 %r5, 1, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.ne.f16 %p1, %h0, %h1;
selp.u32 %r5, 2, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.lt.f16 %p1, %h0, %h1;
selp.u32 %r5, 4, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.le.f16 %p1, %h0, %h1;
selp.u32 %r5, 8, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.gt.f16 %p1, %h0, %h1;
selp.u32 %r5, 16, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.ge.f16 %p1, %h0, %h1;
selp.u32 %r5, 32, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.equ.f16 %p1, %h0, %h1;
selp.u32 %r5, 64, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.neu.f16 %p1, %h0, %h1;
selp.u32 %r5, 128, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.ltu.f16 %p1, %h0, %h1;
selp.u32 %r5, 256, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.leu.f16 %p1, %h0, %h1;
selp.u32 %r5, 512, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.gtu.f16 %p1, %h0, %h1;
selp.u32 %r5, 1024, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.geu.f16 %p1, %h0, %h1;
selp.u32 %r5, 2048, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.num.f16 %p1, %h0, %h1;
selp.u32 %r5, 4096, 0, %p1;
or.b32 %r10, %r10, %r5;
setp.nan.f16 %p1, %h0, %h1;
selp.u32 %r5, 8192, 0, %p1;
or.b32 %r10, %r10, %r5;
mov.u32 %r11, 0;
setp.eq.bf16 %p1, %h2, %h3;
selp.u32 %r5, 1, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.ne.bf16 %p1, %h2, %h3;
selp.u32 %r5, 2, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.lt.bf16 %p1, %h2, %h3;
selp.u32 %r5, 4, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.le.bf16 %p1, %h2, %h3;
selp.u32 %r5, 8, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.gt.bf16 %p1, %h2, %h3;
selp.u32 %r5, 16, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.ge.bf16 %p1, %h2, %h3;
selp.u32 %r5, 32, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.equ.bf16 %p1, %h2, %h3;
selp.u32 %r5, 64, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.neu.bf16 %p1, %h2, %h3;
selp.u32 %r5, 128, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.ltu.bf16 %p1, %h2, %h3;
selp.u32 %r5, 256, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.leu.bf16 %p1, %h2, %h3;
selp.u32 %r5, 512, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.gtu.bf16 %p1, %h2, %h3;
selp.u32 %r5, 1024, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.geu.bf16 %p1, %h2, %h3;
selp.u32 %r5, 2048, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.num.bf16 %p1, %h2, %h3;
selp.u32 %r5, 4096, 0, %p1;
or.b32 %r11, %r11, %r5;
setp.nan.bf16 %p1, %h2, %h3;
selp.u32 %r5, 8192, 0, %p1;
or.b32 %r11, %r11, %r5;
cvt.f32.f16 %f0, %h0;
cvt.f32.bf16 %f1, %h2;
mul.wide.u32 %rd4, %r3, 16;
add.u64 %rd5, %rd1, %rd4;
st.global.v4.b32 [%rd5], {%r10, %r11, %f0, %f1};
ret;
}
"#;

const PREDICATES: [&str; 14] = ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"];

/// Predicate `p` of PTX's `setp` on two values.
fn holds(p: &str, a: f32, b: f32) -> bool {
    let unordered = a.is_nan() || b.is_nan();
    match p {
        "eq" => a == b,
        "ne" => !unordered && a != b,
        "lt" => a < b,
        "le" => a <= b,
        "gt" => a > b,
        "ge" => a >= b,
        "equ" => unordered || a == b,
        "neu" => a != b,
        "ltu" => unordered || a < b,
        "leu" => unordered || a <= b,
        "gtu" => unordered || a > b,
        "geu" => unordered || a >= b,
        "num" => !unordered,
        _ => unordered,
    }
}

/// The bits of the 16-bit values compared: both formats' special values.
fn values() -> Vec<u16> {
    vec![
        0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7c01, 0x7e00, 0xfe00,
        0x7fff, 0xffff, 0x7f80, 0xff80, 0x7f81, 0x7fc0, 0x0080, 0x007f, 0x3f80, 0xbf80, 0x4049, 0xc049, 0x7f7f, 0xff7f, 0x1234, 0x9234,
    ]
}

#[test]
fn sixteen_bit_compares_and_nan_tests_match_ieee_in_every_mode() {
    let exec = Executor::global();
    let vals = values();
    // Each thread: (a, b) as f16 and as bf16.
    let mut pairs: Vec<[u16; 4]> = Vec::new();
    for &a in &vals {
        for &b in &vals {
            pairs.push([a, b, a, b]);
        }
    }
    while !pairs.len().is_multiple_of(128) {
        pairs.push([0x3c00, 0x7e00, 0x3f80, 0x7fc0]);
    }
    for warp in [WarpMode::Off, WarpMode::Always] {
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(KERNEL, &Options { warp, tier, strict_affine: false, memcheck: false })
                .unwrap_or_else(|e| panic!("compiles ({warp:?}, {tier:?}): {e}"));
            let k = p.kernel("cmp").expect("kernel `cmp`");
            let mut inp = pairs.clone();
            let mut out = vec![[0xcdcd_cdcdu32; 4]; pairs.len()];
            launch(
                exec,
                k,
                [(pairs.len() / 128) as u32, 1, 1],
                [128, 1, 1],
                0,
                &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))],
            )
            .expect("arguments")
            .expect("launch");
            for (pair, got) in pairs.iter().zip(&out) {
                let (ha, hb) = (f16::from_bits(pair[0]).to_f32(), f16::from_bits(pair[1]).to_f32());
                let (ba, bb) = (bf16::from_bits(pair[2]).to_f32(), bf16::from_bits(pair[3]).to_f32());
                for (i, p) in PREDICATES.iter().enumerate() {
                    let what = |t: &str| format!("setp.{p}.{t} {:#06x}, {:#06x} ({warp:?}, {tier:?})", pair[0], pair[1]);
                    assert_eq!(got[0] >> i & 1 == 1, holds(p, ha, hb), "{}", what("f16"));
                    assert_eq!(got[1] >> i & 1 == 1, holds(p, ba, bb), "{}", what("bf16"));
                }
                let canonical = |x: f32| if x.is_nan() { 0x7fff_ffff } else { x.to_bits() };
                assert_eq!(got[2], canonical(ha), "cvt.f32.f16 {:#06x} ({warp:?}, {tier:?})", pair[0]);
                assert_eq!(got[3], canonical(ba), "cvt.f32.bf16 {:#06x} ({warp:?}, {tier:?})", pair[2]);
            }
        }
    }
}
