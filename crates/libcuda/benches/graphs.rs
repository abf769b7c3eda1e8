//! CUDA graphs against the same work issued directly, through the built
//! `libcuda.so` (dlopen, C ABI, CPU backend), as a CUDA program pays it.
//!
//! One batch is 100 dependent launches of one kernel on a created stream,
//! then `cuStreamSynchronize`:
//! - directly: 100 `cuLaunchKernel` calls;
//! - as a graph: the same 100 launches captured once, instantiated, and each
//!   batch one `cuGraphLaunch`;
//! - as llama.cpp runs a token: capture the 100 launches again, update the
//!   executable graph with `cuGraphExecUpdate`, destroy the captured graph,
//!   launch.
//!
//! Two kernels: `inc` (one block of 32 threads, `p[tid] += 1`: the launch
//! overhead dominates) and `axpy` over 64 Ki floats (256 blocks of 256
//! threads: work dominates). The three forms alternate in rounds within one
//! run, so the figures share the machine's state; each is the median batch
//! time over all rounds. The results are checked after every batch.
//!
//! Prints a markdown table. Run with
//! `cargo bench -p anycuda-libcuda --bench graphs`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Lib, Ptr, SUCCESS};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

type Dptr = u64;

const PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry inc(.param .u64 p)
{
    .reg .u32 %r<3>;
    .reg .u64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    add.u32 %r2, %r2, 1;
    st.global.u32 [%rd3], %r2;
    ret;
}

.visible .entry axpy(.param .u64 px, .param .u64 py, .param .f32 a, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .u32 %r<6>;
    .reg .u64 %rd<7>;
    .reg .f32 %f<5>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [py];
    ld.param.f32 %f1, [a];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    ld.global.f32 %f3, [%rd5];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd5], %f4;
DONE:
    ret;
}
";

const KERNELS: usize = 100;
const N: usize = 65536;

#[allow(non_snake_case, clippy::type_complexity)]
struct Api {
    cuInit: unsafe extern "C" fn(u32) -> u32,
    cuDevicePrimaryCtxRetain: unsafe extern "C" fn(*mut Ptr, i32) -> u32,
    cuCtxSetCurrent: unsafe extern "C" fn(Ptr) -> u32,
    cuStreamCreate: unsafe extern "C" fn(*mut Ptr, u32) -> u32,
    cuStreamSynchronize: unsafe extern "C" fn(Ptr) -> u32,
    cuModuleLoadData: unsafe extern "C" fn(*mut Ptr, *const c_void) -> u32,
    cuModuleGetFunction: unsafe extern "C" fn(*mut Ptr, Ptr, *const std::ffi::c_char) -> u32,
    cuMemAlloc_v2: unsafe extern "C" fn(*mut Dptr, usize) -> u32,
    cuMemcpyHtoD_v2: unsafe extern "C" fn(Dptr, *const c_void, usize) -> u32,
    cuMemcpyDtoH_v2: unsafe extern "C" fn(*mut c_void, Dptr, usize) -> u32,
    cuLaunchKernel: unsafe extern "C" fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void) -> u32,
    cuStreamBeginCapture_v2: unsafe extern "C" fn(Ptr, u32) -> u32,
    cuStreamEndCapture: unsafe extern "C" fn(Ptr, *mut Ptr) -> u32,
    cuGraphInstantiateWithFlags: unsafe extern "C" fn(*mut Ptr, Ptr, u64) -> u32,
    cuGraphLaunch: unsafe extern "C" fn(Ptr, Ptr) -> u32,
    cuGraphExecUpdate_v2: unsafe extern "C" fn(Ptr, Ptr, *mut [u64; 3]) -> u32,
    cuGraphDestroy: unsafe extern "C" fn(Ptr) -> u32,
}

impl Api {
    fn new(l: &Lib) -> Api {
        Api {
            cuInit: l.f("cuInit"),
            cuDevicePrimaryCtxRetain: l.f("cuDevicePrimaryCtxRetain"),
            cuCtxSetCurrent: l.f("cuCtxSetCurrent"),
            cuStreamCreate: l.f("cuStreamCreate"),
            cuStreamSynchronize: l.f("cuStreamSynchronize"),
            cuModuleLoadData: l.f("cuModuleLoadData"),
            cuModuleGetFunction: l.f("cuModuleGetFunction"),
            cuMemAlloc_v2: l.f("cuMemAlloc_v2"),
            cuMemcpyHtoD_v2: l.f("cuMemcpyHtoD_v2"),
            cuMemcpyDtoH_v2: l.f("cuMemcpyDtoH_v2"),
            cuLaunchKernel: l.f("cuLaunchKernel"),
            cuStreamBeginCapture_v2: l.f("cuStreamBeginCapture_v2"),
            cuStreamEndCapture: l.f("cuStreamEndCapture"),
            cuGraphInstantiateWithFlags: l.f("cuGraphInstantiateWithFlags"),
            cuGraphLaunch: l.f("cuGraphLaunch"),
            cuGraphExecUpdate_v2: l.f("cuGraphExecUpdate_v2"),
            cuGraphDestroy: l.f("cuGraphDestroy"),
        }
    }
}

/// Benchmarks stop at the first failing call: numbers of a broken run mean nothing.
fn ok(what: &str, r: u32) {
    if r != SUCCESS {
        eprintln!("graph bench: {what} returned CUresult {r}");
        std::process::exit(1);
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{model}, {cpus} logical CPUs")
}

/// One kernel and its launch: function, grid, block, argument pointers.
struct Work {
    f: Ptr,
    grid: u32,
    block: u32,
    args: Vec<*mut c_void>,
}

impl Work {
    fn launch_all(&self, api: &Api, s: Ptr) {
        for _ in 0..KERNELS {
            let mut args = self.args.clone();
            // SAFETY: one pointer per kernel parameter, to live values.
            ok("cuLaunchKernel", unsafe {
                (api.cuLaunchKernel)(self.f, self.grid, 1, 1, self.block, 1, 1, 0, s, args.as_mut_ptr(), null_mut())
            });
        }
    }

    fn capture(&self, api: &Api, s: Ptr) -> Ptr {
        let mut g = null_mut();
        // SAFETY: a created stream; relaxed mode, as llama.cpp captures.
        ok("cuStreamBeginCapture", unsafe { (api.cuStreamBeginCapture_v2)(s, 2) });
        self.launch_all(api, s);
        // SAFETY: the stream began capturing above.
        ok("cuStreamEndCapture", unsafe { (api.cuStreamEndCapture)(s, &mut g) });
        g
    }
}

/// Median batch times (direct, graph, capture + update + launch) over
/// `rounds` alternating rounds of `per_round` batches each; `check` runs
/// after every batch.
fn compare(api: &Api, s: Ptr, w: &Work, rounds: usize, per_round: usize, mut check: impl FnMut()) -> [Duration; 3] {
    let sync = || {
        // SAFETY: a created stream.
        ok("cuStreamSynchronize", unsafe { (api.cuStreamSynchronize)(s) });
    };
    let g = w.capture(api, s);
    let mut exec = null_mut();
    // SAFETY: a captured graph.
    ok("cuGraphInstantiate", unsafe { (api.cuGraphInstantiateWithFlags)(&mut exec, g, 0) });
    // SAFETY: destroyed once; the executable graph keeps its own copy.
    ok("cuGraphDestroy", unsafe { (api.cuGraphDestroy)(g) });
    let mut times: [Vec<Duration>; 3] = Default::default();
    let batch = |form: usize| {
        let t = Instant::now();
        match form {
            0 => w.launch_all(api, s),
            1 => {
                // SAFETY: a live executable graph and stream.
                ok("cuGraphLaunch", unsafe { (api.cuGraphLaunch)(exec, s) });
            }
            _ => {
                let g = w.capture(api, s);
                let mut info = [0u64; 3];
                // SAFETY: a live executable graph and a graph of the same shape.
                unsafe {
                    ok("cuGraphExecUpdate", (api.cuGraphExecUpdate_v2)(exec, g, &mut info));
                    ok("cuGraphDestroy", (api.cuGraphDestroy)(g));
                    ok("cuGraphLaunch", (api.cuGraphLaunch)(exec, s));
                }
            }
        }
        sync();
        t.elapsed()
    };
    for form in 0..3 {
        batch(form);
        check();
    }
    for _ in 0..rounds {
        for (form, v) in times.iter_mut().enumerate() {
            for _ in 0..per_round {
                v.push(batch(form));
                check();
            }
        }
    }
    times.map(median)
}

fn main() {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("graph-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    std::env::set_var("ANYCUDA_CACHE_DIR", &cache);
    std::env::remove_var("ANYCUDA_LOG");
    let lib = Lib::open_cpu();
    let api = Api::new(&lib);
    let (mut ctx, mut module, mut s) = (null_mut(), null_mut(), null_mut());
    let text = CString::new(PTX).unwrap_or_default();
    let (mut inc, mut axpy) = (null_mut(), null_mut());
    let (mut p, mut x, mut y): (Dptr, Dptr, Dptr) = (0, 0, 0);
    // SAFETY: plain driver calls with valid out-pointers and NUL-terminated strings.
    unsafe {
        ok("cuInit", (api.cuInit)(0));
        ok("cuDevicePrimaryCtxRetain", (api.cuDevicePrimaryCtxRetain)(&mut ctx, 0));
        ok("cuCtxSetCurrent", (api.cuCtxSetCurrent)(ctx));
        ok("cuStreamCreate", (api.cuStreamCreate)(&mut s, 1));
        ok("cuModuleLoadData", (api.cuModuleLoadData)(&mut module, text.as_ptr().cast()));
        ok("cuModuleGetFunction", (api.cuModuleGetFunction)(&mut inc, module, c"inc".as_ptr()));
        ok("cuModuleGetFunction", (api.cuModuleGetFunction)(&mut axpy, module, c"axpy".as_ptr()));
        ok("cuMemAlloc", (api.cuMemAlloc_v2)(&mut p, 32 * 4));
        ok("cuMemAlloc", (api.cuMemAlloc_v2)(&mut x, N * 4));
        ok("cuMemAlloc", (api.cuMemAlloc_v2)(&mut y, N * 4));
        let zeros = vec![0u32; N];
        let ones = vec![1.0f32; N];
        ok("cuMemcpyHtoD", (api.cuMemcpyHtoD_v2)(p, zeros.as_ptr().cast(), 32 * 4));
        ok("cuMemcpyHtoD", (api.cuMemcpyHtoD_v2)(x, ones.as_ptr().cast(), N * 4));
        ok("cuMemcpyHtoD", (api.cuMemcpyHtoD_v2)(y, zeros.as_ptr().cast(), N * 4));
    }
    let read = |at: Dptr, n: usize| -> Vec<u32> {
        let mut v = vec![0u32; n];
        // SAFETY: a buffer of n words, a device range of n words.
        ok("cuMemcpyDtoH", unsafe { (api.cuMemcpyDtoH_v2)(v.as_mut_ptr().cast(), at, n * 4) });
        v
    };

    let mut rows = Vec::new();
    let w = Work { f: inc, grid: 1, block: 32, args: vec![(&p as *const Dptr).cast_mut().cast()] };
    let mut expect = 0u32;
    let t = compare(&api, s, &w, 20, 10, || {
        expect += KERNELS as u32;
        let v = read(p, 32);
        if v.iter().any(|&e| e != expect) {
            eprintln!("graph bench: inc gave {:?}, expected {expect}", &v[..4]);
            std::process::exit(1);
        }
    });
    rows.push(("`inc`, 1 block of 32 threads", t));

    let a = 0.5f32;
    let n = N as u32;
    let w = Work {
        f: axpy,
        grid: (N / 256) as u32,
        block: 256,
        args: vec![
            (&x as *const Dptr).cast_mut().cast(),
            (&y as *const Dptr).cast_mut().cast(),
            (&a as *const f32).cast_mut().cast(),
            (&n as *const u32).cast_mut().cast(),
        ],
    };
    let mut batches = 0u32;
    let t = compare(&api, s, &w, 10, 5, || {
        batches += 1;
        let v = f32::from_bits(read(y, 1)[0]);
        let want = batches as f32 * KERNELS as f32 * 0.5;
        if (v - want).abs() > 1e-3 * want {
            eprintln!("graph bench: axpy gave {v}, expected {want}");
            std::process::exit(1);
        }
    });
    rows.push(("`axpy`, 64 Ki floats (256 blocks of 256 threads)", t));

    println!("## CUDA graphs against direct launches (libcuda.so through the C ABI, CPU backend)\n");
    println!("Machine: {}\n", machine());
    println!("One batch: {KERNELS} dependent launches on one stream, then `cuStreamSynchronize` (median batch time).\n");
    println!("| kernel | direct `cuLaunchKernel` | `cuGraphLaunch` | direct / graph | capture + `cuGraphExecUpdate` + launch |");
    println!("|---|---:|---:|---:|---:|");
    for (k, [direct, graph, update]) in rows {
        println!("| {k} | {} | {} | {:.2}x | {} |", us(direct), us(graph), direct.as_secs_f64() / graph.as_secs_f64(), us(update));
    }
    let _ = std::fs::remove_dir_all(&cache);
}
