//! `ex2.approx.ftz.f32`, `sin.approx.f32` and `tanh.approx.f32` in warp
//! mode (a softmax step: a butterfly shuffle, the max, `2^((x - max)
//! log2 e)`; a rotary step: the shuffle, `sin(x + y)`; the same with
//! `tanh`), 4M elements in blocks of 256, both tiers, against a host loop
//! doing the same arithmetic with `f32::exp2`/`sin`/`tanh` on all cores
//! (one thread per core) in the same run. `cargo bench -p anycuda-kernels --bench math`.

use backend_cpu::Executor;
use compiler::{Options, Tier, WarpMode};
use kernels::{as_bytes, launch, Arg, Program};

const KERNEL_TEMPLATE: &str = r#".version 8.5
.target sm_90
.address_size 64
.visible .entry s(.param .u64 pin, .param .u64 pout)
{
.reg .b32 %r<8>;
.reg .f32 %f<8>;
.reg .b64 %rd<8>;
.reg .pred %p<2>;
ld.param.u64 %rd0, [pin];
ld.param.u64 %rd1, [pout];
mov.u32 %r0, %ctaid.x;
mov.u32 %r1, %tid.x;
mad.lo.u32 %r2, %r0, 256, %r1;
mul.wide.u32 %rd2, %r2, 4;
add.u64 %rd3, %rd0, %rd2;
ld.global.f32 %f0, [%rd3];
mov.b32 %r3, %f0;
shfl.sync.bfly.b32 %r4|%p0, %r3, 16, 31, -1;
mov.b32 %f1, %r4;
max.f32 %f2, %f0, %f1;
sub.f32 %f3, %f0, %f2;
MATH
add.u64 %rd4, %rd1, %rd2;
st.global.f32 [%rd4], %f5;
ret;
}
"#;

/// The host loop's arithmetic per element: `f(x, x of lane ^ 16)`.
type HostFn = fn(f32, f32) -> f32;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let exec = Executor::global();
    let n = 1 << 22;
    let mut inp: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 * 0.1 - 5.0).collect();
    let mut out = vec![0f32; n];
    let mut host = vec![0f32; n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let cases: [(&str, &str, HostFn); 3] = [
        ("ex2 softmax step", "mul.f32 %f4, %f3, 0f3FB8AA3B;\nex2.approx.ftz.f32 %f5, %f4;", |x, y| {
            ((x - x.max(y)) * std::f32::consts::LOG2_E).exp2()
        }),
        ("sin rotary step", "add.f32 %f4, %f0, %f1;\nsin.approx.f32 %f5, %f4;", |x, y| (x + y).sin()),
        ("tanh step", "add.f32 %f4, %f0, %f1;\ntanh.approx.f32 %f5, %f4;", |x, y| (x + y).tanh()),
    ];
    for (what, math, host_f) in cases {
        let kernel = KERNEL_TEMPLATE.replace("MATH", math);
        for tier in [Tier::Fast, Tier::Optimized] {
            let p = Program::from_source_with(&kernel, &Options { warp: WarpMode::Auto, tier, strict_affine: false, memcheck: false })
                .expect("the kernel compiles");
            let k = p.kernel("s").expect("kernel `s`");
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for _ in 0..15 {
                let t = std::time::Instant::now();
                launch(
                    exec,
                    k,
                    [(n / 256) as u32, 1, 1],
                    [256, 1, 1],
                    0,
                    &mut [Arg::Buf(as_bytes(&mut inp)), Arg::Buf(as_bytes(&mut out))],
                )
                .expect("arguments")
                .expect("launch");
                ours.push(t.elapsed().as_secs_f64() * 1e3);
                let t = std::time::Instant::now();
                let per = n / threads;
                std::thread::scope(|s| {
                    for (o, x) in host.chunks_mut(per).zip(inp.chunks(per)) {
                        s.spawn(move || {
                            for (o, x) in o.chunks_mut(32).zip(x.chunks(32)) {
                                for (l, v) in o.iter_mut().enumerate() {
                                    *v = host_f(x[l], x[l ^ 16]);
                                }
                            }
                        });
                    }
                });
                theirs.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let (o, h) = (median(ours), median(theirs));
            println!("{what}, {n} elements, {tier:?}: anycuda {o:.2} ms, host loop {h:.2} ms, ratio {:.2}x", h / o);
        }
    }
}
