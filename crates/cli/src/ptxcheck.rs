//! `anycuda ptx`: parses PTX files and compiles every kernel, reporting each
//! one's status, parameters, shared memory and compile time.
//!
//! Each kernel is compiled on its own (the module with every other kernel's
//! body left out), so that one unsupported instruction does not hide the
//! state of the other kernels and each kernel's compile time is its own.
//! The whole module is compiled as well, as the driver does at module load,
//! and that result decides the module's status.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ptx::ast::{FunctionKind, Item, Module};

pub fn check(files: &[PathBuf], emit_ir: bool, emit_obj: Option<&Path>, target: Option<&str>, tier: Option<&str>) -> ExitCode {
    let tier = match tier {
        None | Some("opt") => compiler::Tier::Optimized,
        Some("fast") => compiler::Tier::Fast,
        Some(other) => {
            eprintln!("anycuda ptx: --tier {other}: one of `fast` (a kernel's first code) and `opt` (the optimised code)");
            return ExitCode::from(2);
        }
    };
    let opts = compiler::Options { tier, ..compiler::Options::default() };
    let target = match parse_target(target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("anycuda ptx: {e}");
            return ExitCode::from(2);
        }
    };
    // With --emit-ir, stdout carries only IR.
    let mut report: Box<dyn Write> = if emit_ir { Box::new(std::io::stderr()) } else { Box::new(std::io::stdout()) };
    let mut ok = true;
    for path in files {
        ok &= check_file(path, &target, &opts, emit_ir, emit_obj, &mut report);
    }
    let _ = report.flush();
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn parse_target(target: Option<&str>) -> Result<compiler::Target, String> {
    match target {
        None | Some("host") | Some("cpu") => Ok(compiler::Target::HostCpu),
        Some(arch) => {
            let t = compiler::Target::Amdgpu { arch: arch.to_string() };
            // The fingerprint is the compiler's one public judgement of a
            // processor name that needs no module.
            if compiler::target_fingerprint(&t).ends_with("|invalid") {
                return Err(format!(
                    "--target {arch}: not an AMDGPU processor this compiler knows (e.g. gfx1100, gfx90a); use `host` for the CPU"
                ));
            }
            Ok(t)
        }
    }
}

fn target_name(t: &compiler::Target) -> String {
    match t {
        compiler::Target::HostCpu => "the host".to_string(),
        compiler::Target::Amdgpu { arch } => arch.clone(),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Checks one file; false when it does not load as the driver would.
fn check_file(
    path: &Path,
    target: &compiler::Target,
    opts: &compiler::Options,
    emit_ir: bool,
    emit_obj: Option<&Path>,
    out: &mut dyn Write,
) -> bool {
    let shown = path.display();
    let src = match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => {
                let _ = writeln!(out, "{shown}: not UTF-8 text (byte {})", e.utf8_error().valid_up_to());
                return false;
            }
        },
        Err(e) => {
            let _ = writeln!(out, "{shown}: {e}");
            return false;
        }
    };
    let t = Instant::now();
    let module = match ptx::parse(&src) {
        Ok(m) => m,
        Err(diags) => {
            for d in &diags.0 {
                let _ = writeln!(out, "{shown}:{d}");
            }
            let _ = writeln!(out, "{shown}: does not parse ({} errors)", diags.0.len());
            return false;
        }
    };
    let parse_time = t.elapsed();
    let info = compiler::describe(&module);
    let functions = module.functions().filter(|f| f.kind == FunctionKind::Func && f.body.is_some()).count();
    let _ = writeln!(
        out,
        "{shown}: PTX {}.{} for {}, {} kernel(s), {functions} function(s); parsed in {}; compiling for {}",
        module.version.major,
        module.version.minor,
        module.target.words.join(", "),
        info.kernels.len(),
        ms(parse_time),
        target_name(target)
    );
    let mut ok = true;
    if emit_ir {
        let ir = match target {
            compiler::Target::HostCpu => compiler::emit_ir_with_options(&module, &src, opts),
            t => compiler::emit_target_ir(&module, &src, t),
        };
        match ir {
            Ok(ir) => {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "; anycuda: LLVM IR of {shown}");
                let _ = stdout.write_all(ir.as_bytes());
                let _ = stdout.flush();
            }
            Err(e) => {
                let _ = writeln!(out, "{shown}: no LLVM IR: {}", located(path, &e));
                ok = false;
            }
        }
    }
    let kernels: Vec<usize> = module
        .items
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, Item::Function(f) if f.kind == FunctionKind::Entry && f.body.is_some()))
        .map(|(idx, _)| idx)
        .collect();
    let results = compile_each(&module, &src, target, opts, &kernels);
    // What module load does, and what decides the module's status: one
    // compile of everything.
    let t = Instant::now();
    let whole = compile_guarded(&module, &src, target, opts);
    let whole_time = t.elapsed();
    let modes = compiler::kernel_modes(&module, &src, target, opts, compiler::Unit::Module);
    let mut kernels_ok = 0;
    for (&idx, (result, time)) in kernels.iter().zip(results) {
        let Item::Function(f) = &module.items[idx] else { continue };
        let status = match (&result, &whole) {
            (Ok(bytes), _) => {
                kernels_ok += 1;
                format!("ok ({}, {bytes} bytes of code)", ms(time))
            }
            // Leaving the other kernels out broke it (it takes one's
            // address): the module is what counts.
            (Err(e), Ok(_)) => {
                kernels_ok += 1;
                format!("ok with its module (on its own: {})", located(path, e))
            }
            (Err(e), Err(_)) => format!("error: {} (after {})", located(path, e), ms(time)),
        };
        let _ = writeln!(out, "  kernel {}: {status}", f.name);
        let _ = writeln!(out, "    parameters: {}", params(f, info.kernels.iter().find(|k| k.name == f.name)));
        if let Some(k) = info.kernels.iter().find(|k| k.name == f.name) {
            let mut notes = vec![format!("static shared memory: {} bytes", k.static_shared_bytes)];
            if k.local_bytes > 0 {
                notes.push(format!("local memory: {} bytes per thread", k.local_bytes));
            }
            if let Some([x, y, z]) = k.reqntid {
                notes.push(format!(".reqntid {x}, {y}, {z}"));
            }
            if let Some([x, y, z]) = k.maxntid {
                notes.push(format!(".maxntid {x}, {y}, {z}"));
            }
            if k.needs_scheduler {
                notes.push("threads wait for each other (barriers, warp operations or spin loops)".into());
            }
            let _ = writeln!(out, "    {}", notes.join("; "));
        }
        if let Some(m) = modes.iter().find(|m| m.name == f.name) {
            let _ = writeln!(out, "    runs {}", m.why);
        }
    }
    let n = info.kernels.len();
    if let (Some(dir), Ok(object)) = (emit_obj, &whole) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "module".into());
        let dest = dir.join(format!("{name}.o"));
        if let Err(e) = std::fs::write(&dest, object) {
            let _ = writeln!(out, "{}: {e}", dest.display());
            ok = false;
        }
    }
    match whole {
        Ok(object) => {
            let bytes = object.len();
            let _ = writeln!(
                out,
                "{shown}: ok: {kernels_ok} kernel(s) compile; the whole module in {} ({bytes} bytes of code)",
                ms(whole_time)
            );
        }
        Err(e) => {
            ok = false;
            let _ = writeln!(out, "{shown}: FAILED: {} of {n} kernel(s) do not compile; the module: {}", n - kernels_ok, located(path, &e));
        }
    }
    ok
}

/// A kernel's code size or compile error, and the compile time.
type KernelResult = (Result<usize, compiler::CompileError>, Duration);

/// Compiles each kernel of `kernels` (item indices) on its own, on all
/// cores: the size of its code or the error, and the time it took.
fn compile_each(module: &Module, src: &str, target: &compiler::Target, opts: &compiler::Options, kernels: &[usize]) -> Vec<KernelResult> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<KernelResult>>> = kernels.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(kernels.len()).max(1);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&idx) = kernels.get(i) else { break };
                let alone = only_kernel(module, idx);
                let t = Instant::now();
                let r = compile_guarded(&alone, src, target, opts).map(|o| o.len());
                let time = t.elapsed();
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some((r, time));
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| (Err(compiler::CompileError::Llvm("the compiler thread failed".into())), Duration::ZERO))
        })
        .collect()
}

/// The size of the compiled code. A compiler bug (a panic) must not take
/// the report of the other kernels and files with it.
fn compile_guarded(
    module: &Module,
    src: &str,
    target: &compiler::Target,
    opts: &compiler::Options,
) -> Result<Vec<u8>, compiler::CompileError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compiler::compile_with_options(module, src, target, opts)))
        .unwrap_or_else(|_| Err(compiler::CompileError::Llvm("the compiler panicked (a bug in anycuda)".into())))
        .map(|c| c.object)
}

/// The error with the file in front of its `line:column`, as compilers
/// write positions.
fn located(path: &Path, e: &compiler::CompileError) -> String {
    match e {
        compiler::CompileError::Llvm(_) => e.to_string(),
        _ => format!("{}:{e}", path.display()),
    }
}

/// The module with the bodies of all kernels but item `keep` left out; the
/// compiler skips body-less entries, and nothing can call a kernel.
fn only_kernel<'a>(m: &Module<'a>, keep: usize) -> Module<'a> {
    let mut alone = m.clone();
    for (idx, item) in alone.items.iter_mut().enumerate() {
        if let Item::Function(f) = item {
            if idx != keep && f.kind == FunctionKind::Entry {
                f.body = None;
            }
        }
    }
    alone
}

fn params(f: &ptx::ast::Function, info: Option<&compiler::KernelInfo>) -> String {
    if f.params.is_empty() {
        return "none".into();
    }
    let list: Vec<String> = f
        .params
        .iter()
        .map(|&id| {
            let v = f.var(id);
            let vector = if v.vector > 0 { format!(".v{} ", v.vector) } else { String::new() };
            let dims: String = v.dims.iter().map(|d| d.map_or("[]".to_string(), |n| format!("[{n}]"))).collect();
            format!("{vector}.{} {}{dims}", v.ty, v.name)
        })
        .collect();
    match info {
        Some(k) => format!("{} ({} bytes)", list.join(", "), k.param_bytes),
        None => list.join(", "),
    }
}
