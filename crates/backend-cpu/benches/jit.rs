//! What a program pays for kernels on the CPU backend, through the JIT: a
//! module of many kernels loaded and each kernel made ready to launch
//! (`Backend::load_module` + `BackendModule::prepare`), cold (compiled in
//! the fast tier) and warm (from the disk cache, in a fresh backend as a
//! second run of the program would be).
//!
//! `cargo bench -p anycuda-backend-cpu --bench jit [-- KERNELS]` (default
//! 2000 kernels, each a small element-wise kernel with its own constant).

use std::time::Instant;

use backend_cpu::CpuBackend;
use driver::backend::{Backend, ModuleOptions};

fn module(n: usize) -> String {
    let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n.global .align 4 .u32 calls;\n");
    for i in 0..n {
        s.push_str(&format!(
            ".visible .entry k{i}(.param .u64 p, .param .u32 n)\n{{\n.reg .pred %q;\n.reg .b32 %r<6>;\n.reg .f32 %f<3>;\n.reg .b64 %rd<4>;\n\
             ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n\
             mad.lo.s32 %r5, %r2, %r3, %r4;\nsetp.ge.u32 %q, %r5, %r1;\n@%q bra DONE;\nmul.wide.u32 %rd2, %r5, 4;\nadd.s64 %rd3, %rd1, %rd2;\n\
             ld.global.f32 %f1, [%rd3];\nfma.rn.f32 %f2, %f1, 0f3F800000, 0f{:08X};\nst.global.f32 [%rd3], %f2;\nDONE:\nret;\n}}\n",
            (i as f32).to_bits()
        ));
    }
    s
}

fn config(dir: &std::path::Path) -> jit::JitConfig {
    let mut c = jit::JitConfig::uncached(compiler::Tier::Fast);
    c.cache_dir = Some(dir.to_path_buf());
    c.cache_limit = jit::cache::DEFAULT_LIMIT;
    c
}

/// Seconds to load the module and prepare every kernel, and the JIT's counts.
fn run(dir: &std::path::Path, text: &str, kernels: usize) -> (f64, f64, jit::JitStats) {
    let backend = CpuBackend::with_jit(config(dir));
    let t = Instant::now();
    let m = backend.load_module(0, text, &ModuleOptions::default()).expect("load");
    let load = t.elapsed().as_secs_f64();
    for k in 0..kernels {
        m.prepare(k).expect("prepare");
    }
    (load, t.elapsed().as_secs_f64(), backend.jit_stats())
}

fn main() {
    let kernels: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(2000);
    let text = module(kernels);
    let dir = std::env::temp_dir().join(format!("anycuda-bench-jit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    println!("{kernels} kernels, {:.1} MB of PTX", text.len() as f64 / 1e6);
    let (load, all, s) = run(&dir, &text, kernels);
    println!(
        "cold: load {:.1} ms; load + every kernel {:.2} s, {:.2} ms per kernel ({} compiled, {} from the cache)",
        load * 1e3,
        all,
        all * 1e3 / kernels as f64,
        s.compiled,
        s.cache_hits
    );
    for round in 0..3 {
        let (load, all, s) = run(&dir, &text, kernels);
        println!(
            "warm {}: load {:.2} ms (described from the cache: {}); load + every kernel {:.1} ms, {:.3} ms per kernel ({} compiled, {} from the cache)",
            round + 1,
            load * 1e3,
            s.described_from_cache,
            all * 1e3,
            all * 1e3 / kernels as f64,
            s.compiled,
            s.cache_hits
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
