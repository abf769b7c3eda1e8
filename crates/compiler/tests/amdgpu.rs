//! The AMDGPU target: modules become code objects HIP can load, whose
//! metadata lists every kernel with the PTX parameter buffer as its
//! kernarg segment, with no undefined symbols left.

use compiler::{compile, emit_target_ir, CompileError, CompiledModule, Target};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn amdgpu(arch: &str) -> Target {
    Target::Amdgpu { arch: arch.into() }
}

/// `llvm-readelf` of LLVM 19 (the version the code objects are built with).
fn readelf() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(prefix) = std::env::var_os("LLVM_SYS_191_PREFIX") {
        candidates.push(Path::new(&prefix).join("bin").join("llvm-readelf"));
    }
    candidates.push("llvm-readelf-19".into());
    candidates.push("/usr/lib/llvm-19/bin/llvm-readelf".into());
    candidates.push("llvm-readelf".into());
    for c in &candidates {
        if Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()) {
            return c.clone();
        }
    }
    panic!("no llvm-readelf found (tried {candidates:?})");
}

/// Runs `llvm-readelf args` on a code object written to a temporary file.
fn read_elf(object: &[u8], tag: &str, args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("anycuda-amdgpu-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{tag}.hsaco"));
    std::fs::write(&path, object).expect("write code object");
    let out = Command::new(readelf()).args(args).arg(&path).output().expect("llvm-readelf runs");
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "llvm-readelf {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A kernel as the AMDGPU metadata note describes it.
#[derive(Debug, Default)]
struct NoteKernel {
    name: String,
    kernarg_segment_size: Option<u32>,
    wavefront_size: Option<u32>,
}

/// Metadata of a code object: its kernels and the `amdhsa.target` line.
struct Notes {
    kernels: Vec<NoteKernel>,
    target: String,
}

/// Reads the YAML form of `NT_AMDGPU_METADATA` that `llvm-readelf --notes`
/// prints: kernels are the items of `amdhsa.kernels`, and their own keys
/// are indented by four spaces (deeper ones belong to `.args`).
fn parse_notes(text: &str) -> Notes {
    let mut kernels: Vec<NoteKernel> = Vec::new();
    let mut in_kernels = false;
    let mut target = String::new();
    for line in text.lines() {
        if !line.starts_with(' ') {
            in_kernels = line.starts_with("amdhsa.kernels:");
            if let Some(t) = line.strip_prefix("amdhsa.target:") {
                target = t.trim().trim_matches('\'').to_string();
            }
            continue;
        }
        if !in_kernels {
            continue;
        }
        let key_line = if let Some(rest) = line.strip_prefix("  - ") {
            kernels.push(NoteKernel::default());
            format!("    {rest}")
        } else {
            line.to_string()
        };
        let Some(kv) = key_line.strip_prefix("    .") else { continue };
        let Some((key, value)) = kv.split_once(':') else { continue };
        let value = value.trim().trim_matches('\'').trim_matches('"');
        let Some(k) = kernels.last_mut() else { continue };
        match key {
            "name" => k.name = value.to_string(),
            "kernarg_segment_size" => k.kernarg_segment_size = value.parse().ok(),
            "wavefront_size" => k.wavefront_size = value.parse().ok(),
            _ => {}
        }
    }
    Notes { kernels, target }
}

/// Dynamic symbols that are undefined (the null symbol aside).
fn undefined_symbols(dyn_syms: &str) -> Vec<String> {
    dyn_syms
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // Num: Value Size Type Bind Vis Ndx Name
            (cols.len() >= 7 && cols[0].ends_with(':') && cols[0] != "0:" && cols[6] == "UND")
                .then(|| cols.get(7).copied().unwrap_or("?").to_string())
        })
        .collect()
}

/// Checks a code object against the kernels `compile` described; returns
/// the problems found.
fn check_code_object(tag: &str, arch: &str, compiled: &CompiledModule) -> Vec<String> {
    let mut problems = Vec::new();
    let wave = if arch.starts_with("gfx9") { 64 } else { 32 };
    let notes = parse_notes(&read_elf(&compiled.object, tag, &["--notes"]));
    if notes.target != format!("amdgcn-amd-amdhsa--{arch}") {
        problems.push(format!("{tag}: amdhsa.target is `{}`", notes.target));
    }
    if notes.kernels.len() != compiled.info.kernels.len() {
        problems.push(format!("{tag}: {} kernels in the metadata, {} in the module", notes.kernels.len(), compiled.info.kernels.len()));
    }
    for k in &compiled.info.kernels {
        let Some(n) = notes.kernels.iter().find(|n| n.name == k.name) else {
            problems.push(format!("{tag}: kernel `{}` missing from the metadata", k.name));
            continue;
        };
        // The parameters, then the printf record buffer's and the heap's
        // addresses where the launcher puts them.
        let expected = compiler::targets::amdgpu::kernarg_tail(k.param_bytes as usize).bytes as u32;
        if n.kernarg_segment_size != Some(expected) {
            problems.push(format!(
                "{tag}: `{}` has .kernarg_segment_size {:?}, its parameters take {} bytes and the printf buffer's, heap's and grid-sync workspace's addresses 24",
                k.name, n.kernarg_segment_size, k.param_bytes
            ));
        }
        if n.wavefront_size != Some(wave) {
            problems.push(format!("{tag}: `{}` has .wavefront_size {:?}, expected {wave}", k.name, n.wavefront_size));
        }
    }
    let undefined = undefined_symbols(&read_elf(&compiled.object, tag, &["--dyn-syms"]));
    if !undefined.is_empty() {
        problems.push(format!("{tag}: undefined symbols {undefined:?}"));
    }
    problems
}

fn ptx_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("ptx directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    files.sort();
    files
}

/// Compiles every file for `arch`, checking each code object.
fn compile_all(files: &[PathBuf], arch: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for path in files {
        let mut src = std::fs::read_to_string(path).expect("read");
        if ptx::may_use_device_library(&src) {
            // As the driver loads it: linked with anycuda's device library.
            let alone = ptx::parse(&src).expect("parses");
            let input = ptx::LinkInput { name: "module", module: &alone, lazy: false };
            src = ptx::link(&[input], &ptx::LinkOptions { provided: ptx::DRIVER_FUNCTIONS }).expect("links").ptx;
        }
        let module = ptx::parse(&src).expect("parses");
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let tag = format!("{stem}-{arch}");
        match compile(&module, &src, &amdgpu(arch)) {
            Ok(c) => {
                if c.info.kernels.len() != module.kernels().count() {
                    problems.push(format!("{tag}: kernels described {}", c.info.kernels.len()));
                }
                problems.extend(check_code_object(&tag, arch, &c));
            }
            Err(e) => problems.push(format!("{tag}: {e}")),
        }
    }
    problems
}

#[test]
fn oracle_modules_become_code_objects_for_rdna3_and_cdna2() {
    let files = ptx_files(&repo().join("tests/ptx-oracle"));
    assert!(files.len() >= 8, "oracle modules: {files:?}");
    let start = std::time::Instant::now();
    // One architecture per thread: the two cores of CI both work.
    let problems: Vec<String> = std::thread::scope(|s| {
        let jobs: Vec<_> = ["gfx1100", "gfx90a"].iter().map(|arch| s.spawn(|| compile_all(&files, arch))).collect();
        jobs.into_iter().flat_map(|j| j.join().expect("compile thread")).collect()
    });
    eprintln!("{} oracle modules x 2 architectures in {:?}", files.len(), start.elapsed());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn project_modules_compile_for_every_processor_family() {
    // Barriers, exited threads, recursion, indirect calls; printf's module
    // and the named barriers of `barriers.ptx` and `warp_path.ptx`'s
    // `counted_deadlock` (refused on AMD GPUs) and `device_launch.ptx`'s
    // device-side launches (refused too) are the subjects of their own
    // tests.
    let files: Vec<PathBuf> = ptx_files(&repo().join("ptx"))
        .into_iter()
        .filter(|p| {
            p.file_stem().is_some_and(|s| !["errors", "barriers", "warp_path", "device_launch"].contains(&s.to_str().unwrap_or_default()))
        })
        .collect();
    let problems: Vec<String> = std::thread::scope(|s| {
        let jobs: Vec<_> = ["gfx942", "gfx1030", "gfx1201"].iter().map(|arch| s.spawn(|| compile_all(&files, arch))).collect();
        jobs.into_iter().flat_map(|j| j.join().expect("compile thread")).collect()
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every runtime function the AMDGPU library defines, in one module.
const RUNTIME_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.extern .func __assertfail(.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b64 char_size);
.global .align 1 .b8 msg[2] = {120, 0};

.func leave(.param .b32 code)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	ld.param.b32 %r1, [code];
	setp.eq.u32 %p1, %r1, 7;
	@%p1 exit;
	ret;
}

.visible .entry everything(.param .u64 out, .param .u32 n)
{
	.local .align 4 .b8 buf[16];
	.reg .pred %p<8>;
	.reg .b32 %r<32>;
	.reg .b64 %rd<16>;
	.reg .f32 %f<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	setp.lt.u32 %p1, %r2, %r1;
	bar.sync 0;
	bar.red.popc.u32 %r3, 0, %p1;
	bar.red.and.pred %p2, 0, %p1;
	bar.warp.sync -1;
	shfl.sync.idx.b32 %r4|%p3, %r2, 3, 31, -1;
	vote.sync.ballot.b32 %r5, %p1, -1;
	vote.sync.all.pred %p4, %p1, -1;
	match.any.sync.b64 %r6, %rd1, -1;
	match.all.sync.b32 %r7|%p5, %r2, -1;
	redux.sync.max.s32 %r8, %r2, -1;
	activemask.b32 %r9;
	mov.u64 %rd2, %clock64;
	mov.u64 %rd3, %globaltimer;
	nanosleep.u32 %r1;
	mov.u64 %rd4, buf;
	cvta.local.u64 %rd5, %rd4;
	isspacep.local %p6, %rd5;
	tanh.approx.f32 %f1, %f2;
	add.u32 %r10, %r3, %r4;
	add.u32 %r10, %r10, %r5;
	add.u32 %r10, %r10, %r6;
	add.u32 %r10, %r10, %r7;
	add.u32 %r10, %r10, %r8;
	add.u32 %r10, %r10, %r9;
	cvt.u32.u64 %r11, %rd2;
	add.u32 %r10, %r10, %r11;
	cvt.u32.u64 %r11, %rd3;
	add.u32 %r10, %r10, %r11;
	st.global.u32 [%rd1], %r10;
	st.global.f32 [%rd1+4], %f1;
	{
		.param .b32 a0;
		st.param.b32 [a0], %r2;
		call.uni leave, (a0);
	}
	@%p6 bra $Lok;
	trap;
$Lok:
	@%p2 bra $Lend;
	mov.u64 %rd6, msg;
	cvta.global.u64 %rd7, %rd6;
	{
		.param .b64 m0;
		st.param.b64 [m0], %rd7;
		.param .b64 m1;
		st.param.b64 [m1], %rd7;
		.param .b32 m2;
		st.param.b32 [m2], 1;
		.param .b64 m3;
		st.param.b64 [m3], %rd7;
		.param .b64 m4;
		st.param.b64 [m4], 1;
		call.uni __assertfail, (m0, m1, m2, m3, m4);
	}
$Lend:
	ret;
}
"#;

#[test]
fn every_runtime_function_compiles_for_every_processor_family() {
    let module = ptx::parse(RUNTIME_PTX).expect("parses");
    let ir = emit_target_ir(&module, RUNTIME_PTX, &amdgpu("gfx1100")).expect("lowers");
    for f in [
        "__anycuda_barrier",
        "__anycuda_barrier_red",
        "__anycuda_warp_sync",
        "__anycuda_shfl",
        "__anycuda_vote",
        "__anycuda_match",
        "__anycuda_redux",
        "__anycuda_activemask",
        "__anycuda_trap",
        "__anycuda_assertfail",
        "__anycuda_clock64",
        "__anycuda_globaltimer",
        "__anycuda_nanosleep",
        "__anycuda_is_local",
        "tanhf",
    ] {
        assert!(ir.contains(&format!(" @{f}(")), "the module does not use {f}");
        assert!(!ir.lines().any(|l| l.starts_with("declare") && l.contains(&format!(" @{f}("))), "{f} stays declared");
        assert!(ir.lines().any(|l| l.starts_with("define internal") && l.contains(&format!(" @{f}("))), "{f} is not defined");
    }
    // `exit` in a called function sets the context's flag and returns; the
    // kernel returns after a call that set it (one wavefront's lanes that
    // did not exit go on: the runtime's `s_endpgm` would end them too).
    assert!(!ir.contains("@__anycuda_exit("), "exit still calls the runtime");
    let exited = compiler::cpu_abi::offsets::EXITED;
    let leave = function_text(&ir, "leave");
    assert!(leave.contains(&format!("i64 {exited}")) && leave.contains("store i32 1, ptr"), "leave does not set the flag:\n{leave}");
    let kernel = function_text(&ir, "everything");
    let after_call = kernel.split_once("leave\"(").map(|(_, rest)| rest).unwrap_or_default();
    assert!(
        after_call.contains(&format!("i64 {exited}")) && after_call.contains("load i32, ptr") && after_call.contains("icmp ne i32"),
        "the kernel does not check the flag after calling leave:\n{kernel}"
    );
    // Each definition has the signature of the runtime table.
    let mut checked = 0;
    for f in compiler::cpu_abi::runtime::ALL {
        let Some(line) = ir.lines().find(|l| l.starts_with("define internal") && l.contains(&format!(" @{}(", f.name))) else { continue };
        checked += 1;
        let ret = line.trim_start_matches("define internal ").split_whitespace().next().unwrap_or_default();
        let inside = line.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(a, _)| a).unwrap_or_default();
        let params: Vec<&str> =
            inside.split(',').map(|p| p.split_whitespace().next().unwrap_or_default()).filter(|p| !p.is_empty()).collect();
        let want: Vec<&str> = f.params.iter().map(|p| p.llvm()).collect();
        assert_eq!((ret, params), (f.ret.llvm(), want), "AMDGPU's {} differs from the runtime table: {line}", f.name);
    }
    assert!(checked >= 15, "only {checked} runtime functions compared");
    let problems: Vec<String> = std::thread::scope(|s| {
        let jobs: Vec<_> = ["gfx90a", "gfx1030", "gfx1100", "gfx1201"]
            .iter()
            .map(|arch| {
                let module = &module;
                s.spawn(move || match compile(module, RUNTIME_PTX, &amdgpu(arch)) {
                    Ok(c) => check_code_object(&format!("runtime-{arch}"), arch, &c),
                    Err(e) => vec![format!("{arch}: {e}")],
                })
            })
            .collect();
        jobs.into_iter().flat_map(|j| j.join().expect("compile thread")).collect()
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

const TINY: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry tiny(.param .u64 out, .param .u32 v)
.reqntid 64, 2, 1
{
	.shared .align 4 .b32 cell[8];
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [v];
	mov.u32 %r2, %tid.y;
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %nctaid.x;
	add.u32 %r1, %r1, %r2;
	add.u32 %r1, %r1, %r3;
	add.u32 %r1, %r1, %r4;
	st.shared.u32 [cell], %r1;
	ld.shared.u32 %r5, [cell];
	st.global.u32 [%rd1], %r5;
	ret;
}
"#;

/// The entry wrapper, FileCheck style: these lines appear in this order.
#[test]
fn kernel_entry_builds_the_block_context_from_the_dispatch() {
    use compiler::cpu_abi::offsets;
    let module = ptx::parse(TINY).expect("parses");
    let ir = emit_target_ir(&module, TINY, &amdgpu("gfx1100")).expect("lowers");
    let expected = [
        "@\"__anycuda_lds.tiny\" = internal addrspace(3) global [32 x i8] poison, align 16".to_string(),
        "define amdgpu_kernel void @\"tiny\"(ptr addrspace(4) byref([12 x i8]) align 8 %kernarg, ptr addrspace(1) %printf.records, ptr addrspace(1) %heap, ptr addrspace(1) %grid.workspace, ptr addrspace(4) %variables) #0 \"amdgpu-flat-work-group-size\"=\"128,128\" \"amdgpu-no-implicitarg-ptr\" {".into(),
        format!("  %ctx.p = alloca [{} x i8], align 8, addrspace(5)", std::mem::size_of::<compiler::cpu_abi::BlockCtx>()),
        "  %ctx = addrspacecast ptr addrspace(5) %ctx.p to ptr".into(),
        "  %params = addrspacecast ptr addrspace(4) %kernarg to ptr".into(),
        format!("  %printf.f = getelementptr i8, ptr %ctx, i64 {}", offsets::PRINTF_RECORDS),
        "  %printf.g = addrspacecast ptr addrspace(1) %printf.records to ptr".into(),
        "  store ptr %printf.g, ptr %printf.f, align 8".into(),
        format!("  %heap.f = getelementptr i8, ptr %ctx, i64 {}", offsets::HEAP),
        "  %heap.g = addrspacecast ptr addrspace(1) %heap to ptr".into(),
        "  store ptr %heap.g, ptr %heap.f, align 8".into(),
        format!("  %variables.f = getelementptr i8, ptr %ctx, i64 {}", offsets::VARIABLES),
        "  store ptr addrspace(4) %variables, ptr %variables.f, align 8".into(),
        "  %gw = ptrtoint ptr addrspace(1) %grid.workspace to i64".into(),
        "  %gw.high = lshr i64 %gw, 32".into(),
        "  %envreg1.v = trunc i64 %gw.high to i32".into(),
        format!("  %envreg1.f = getelementptr i8, ptr %ctx, i64 {}", offsets::ENVREG + 4),
        "  store i32 %envreg1.v, ptr %envreg1.f, align 4".into(),
        "  %envreg2.v = trunc i64 %gw to i32".into(),
        format!("  %envreg2.f = getelementptr i8, ptr %ctx, i64 {}", offsets::ENVREG + 8),
        "  store i32 %envreg2.v, ptr %envreg2.f, align 4".into(),
        "  %dp = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()".into(),
        "  %tid.x = call i32 @llvm.amdgcn.workitem.id.x()".into(),
        "  %ctaid.x = call i32 @llvm.amdgcn.workgroup.id.x()".into(),
        "  %wg.x.p = getelementptr i8, ptr addrspace(4) %dp, i64 4".into(),
        "  %wg.x = load i16, ptr addrspace(4) %wg.x.p, align 2".into(),
        "  %grid.x.p = getelementptr i8, ptr addrspace(4) %dp, i64 12".into(),
        "  %nctaid.x = udiv i32 %grid.x.r, %ntid.x".into(),
        format!("  %ntid.x.f = getelementptr i8, ptr %ctx, i64 {}", offsets::NTID),
        format!("  %ctaid.x.f = getelementptr i8, ptr %ctx, i64 {}", offsets::CTAID),
        format!("  %nctaid.x.f = getelementptr i8, ptr %ctx, i64 {}", offsets::NCTAID),
        "  %tid.y = call i32 @llvm.amdgcn.workitem.id.y()".into(),
        "  %grid.y.p = getelementptr i8, ptr addrspace(4) %dp, i64 16".into(),
        "  %tid.z = call i32 @llvm.amdgcn.workitem.id.z()".into(),
        "  %grid.z.p = getelementptr i8, ptr addrspace(4) %dp, i64 20".into(),
        format!("  %shared.f = getelementptr i8, ptr %ctx, i64 {}", offsets::SHARED),
        "  store ptr addrspacecast (ptr addrspace(3) @\"__anycuda_lds.tiny\" to ptr), ptr %shared.f, align 8".into(),
        "  %group.p = getelementptr i8, ptr addrspace(4) %dp, i64 28".into(),
        "  %dyn.a = ptrtoint ptr addrspace(3) @__anycuda_amd.dynamic_lds to i32".into(),
        "  %gridid = call i64 @llvm.amdgcn.dispatch.id()".into(),
        "  call void @__anycuda_amd.prologue(i32 %lin)".into(),
        "  call void @\"__anycuda_thread.tiny\"(ptr %params, ptr %ctx, i32 %tid.x, i32 %tid.y, i32 %tid.z)".into(),
        "  ret void".into(),
    ];
    let lines: Vec<&str> = ir.lines().collect();
    let mut at = 0;
    for want in &expected {
        match lines[at..].iter().position(|l| l == want) {
            Some(p) => at += p + 1,
            None => panic!("missing (in this order) `{want}` in:\n{ir}"),
        }
    }
    for decl in ["declare i32 @llvm.amdgcn.workitem.id.x()", "declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()"] {
        assert_eq!(ir.lines().filter(|l| *l == decl).count(), 1, "{decl}");
    }
    let compiled = compile(&module, TINY, &amdgpu("gfx1100")).expect("compiles");
    let problems = check_code_object("tiny", "gfx1100", &compiled);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn expect_unsupported(src: &str, arch: &str, function: &str, needle: &str, line: u32) {
    let module = ptx::parse(src).expect("parses");
    match compile(&module, src, &amdgpu(arch)) {
        Err(CompileError::Unsupported { function: f, what, line: l, .. }) => {
            assert!(what.contains(needle), "`{what}` does not name {needle}");
            assert_eq!(f, function);
            assert_eq!(l, line, "{what}");
        }
        other => panic!("expected Unsupported naming {needle}, got {other:?}"),
    }
}

#[test]
fn printf_needs_a_constant_format_and_malloc_and_free_compile_on_amdgpu() {
    // printf with a module string as its format compiles (its records'
    // layout is known); the same call with the format from a kernel
    // parameter is refused at the call, naming why.
    let printf = std::fs::read_to_string(repo().join("ptx/errors.ptx")).expect("errors.ptx");
    let module = ptx::parse(&printf).expect("parses");
    for arch in ["gfx1100", "gfx90a"] {
        let compiled = compile(&module, &printf, &amdgpu(arch)).expect("printf with a constant format compiles");
        let problems = check_code_object("errors", arch, &compiled);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
    let from_param = printf
        .replace(".visible .entry print_lines()", ".visible .entry print_lines(.param .u64 format)")
        .replace("mov.u64 %rd7, fmt;", "ld.param.u64 %rd7, [format];");
    assert_ne!(from_param, printf);
    let call = from_param.lines().position(|l| l.contains("call.uni") && l.contains("vprintf")).expect("a vprintf call") as u32 + 1;
    for arch in ["gfx1100", "gfx90a"] {
        expect_unsupported(&from_param, arch, "print_lines", "not a constant string", call);
    }
    assert!(compile(&ptx::parse(&from_param).expect("parses"), &from_param, &Target::HostCpu).is_ok());
    let heap = r#"
.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b64 ret) malloc(.param .b64 size);
.extern .func free(.param .b64 p);
.visible .entry heap()
{
	.reg .b64 %rd<4>;
	{
		.param .b64 s0;
		st.param.b64 [s0], 64;
		.param .b64 r0;
		call.uni (r0), malloc, (s0);
		ld.param.b64 %rd1, [r0];
	}
	{
		.param .b64 p0;
		st.param.b64 [p0], %rd1;
		call.uni free, (p0);
	}
	ret;
}
"#;
    // Both run on the device's heap: the module's code defines them.
    let module = ptx::parse(heap).expect("parses");
    let ir = emit_target_ir(&module, heap, &amdgpu("gfx1100")).expect("lowers");
    for f in ["__anycuda_malloc", "__anycuda_free"] {
        assert!(ir.lines().any(|l| l.starts_with("define internal") && l.contains(&format!(" @{f}("))), "{f} is not defined");
    }
    for arch in ["gfx1100", "gfx90a"] {
        let compiled = compile(&module, heap, &amdgpu(arch)).expect("malloc and free compile");
        let problems = check_code_object("heap", arch, &compiled);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
    assert!(compile(&module, heap, &Target::HostCpu).is_ok());
}

#[test]
fn unknown_processors_and_target_ids_are_errors() {
    let module = ptx::parse(TINY).expect("parses");
    for arch in ["gfx9999", "sm_80", "", "gfx90a:bogus+", "gfx90a:xnack"] {
        match compile(&module, TINY, &amdgpu(arch)) {
            Err(CompileError::Unsupported { what, .. }) => assert!(what.contains("AMDGPU"), "{what}"),
            other => panic!("{arch}: {other:?}"),
        }
    }
    let c = compile(&module, TINY, &amdgpu("gfx90a:sramecc+:xnack-")).expect("target-id");
    let notes = parse_notes(&read_elf(&c.object, "target-id", &["--notes"]));
    assert_eq!(notes.target, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
}

#[test]
fn fingerprints_name_the_processor_and_llvm() {
    let a = compiler::target_fingerprint(&amdgpu("gfx1100"));
    let b = compiler::target_fingerprint(&amdgpu("gfx90a"));
    assert_ne!(a, b);
    assert!(a.contains("gfx1100") && a.contains("llvm 19.") && a.contains("wave32"), "{a}");
    assert!(b.contains("gfx90a") && b.contains("wave64"), "{b}");
    assert_ne!(a, compiler::target_fingerprint(&Target::HostCpu));
    assert_ne!(b, compiler::target_fingerprint(&amdgpu("gfx90a:xnack+")));
}

#[test]
fn odd_parameter_buffers_and_missing_symbols() {
    // One byte of parameters: the printf buffer's, the heap's and the
    // grid-sync workspace's addresses follow at 8.
    let byte = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry one_byte(.param .u8 b)
{
	ret;
}
.visible .entry nothing()
{
	ret;
}
"#;
    let module = ptx::parse(byte).expect("parses");
    let c = compile(&module, byte, &amdgpu("gfx1100")).expect("compiles");
    assert_eq!(c.info.kernels[0].param_bytes, 1);
    let problems = check_code_object("byte", "gfx1100", &c);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let notes = parse_notes(&read_elf(&c.object, "byte", &["--notes"]));
    let sizes: Vec<_> = notes.kernels.iter().map(|k| (k.name.as_str(), k.kernarg_segment_size)).collect();
    assert!(sizes.contains(&("one_byte", Some(40))) && sizes.contains(&("nothing", Some(32))), "{sizes:?}");

    // An extern variable nothing defines: a link error, not a crash.
    let ext = r#"
.version 8.0
.target sm_80
.address_size 64
.extern .global .align 4 .u32 elsewhere;
.visible .entry reads(.param .u64 out)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	ld.global.u32 %r1, [elsewhere];
	st.global.u32 [%rd1], %r1;
	ret;
}
"#;
    let module = ptx::parse(ext).expect("parses");
    match compile(&module, ext, &amdgpu("gfx1100")) {
        Err(CompileError::Llvm(msg)) => assert!(msg.contains("elsewhere"), "{msg}"),
        other => panic!("expected a link error, got {other:?}"),
    }
}

#[test]
fn matrix_and_async_copy_instructions_compile_for_rdna3_and_cdna2() {
    // mma, wmma, ldmatrix, stmatrix, movmatrix, cp.async and mbarrier: the
    // fragment exchange goes through ds_bpermute, the rest is plain ALU.
    let files = vec![repo().join("ptx/matrix.ptx")];
    let problems: Vec<String> = std::thread::scope(|s| {
        let jobs: Vec<_> = ["gfx1100", "gfx90a"].iter().map(|arch| s.spawn(|| compile_all(&files, arch))).collect();
        jobs.into_iter().flat_map(|j| j.join().expect("compile thread")).collect()
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // On a GPU the lanes read each other's registers: no snapshot of the
    // warp's registers, and each form of mma (here the mma and the wmma)
    // is one function that every instruction of that form calls.
    let src = std::fs::read_to_string(&files[0]).expect("module");
    let module = ptx::parse(&src).expect("parses");
    let ir = emit_target_ir(&module, &src, &amdgpu("gfx1100")).expect("lowers");
    assert!(!ir.contains("__anycuda_warp_gather"), "a lane snapshot in the AMD IR of the matrix module");
    let defined = ir.lines().filter(|l| l.starts_with("define internal") && l.contains("@__anycuda_mma_lanes.")).count();
    let calls = ir.lines().filter(|l| l.contains("call {") && l.contains("@__anycuda_mma_lanes.")).count();
    assert_eq!((defined, calls), (2, 2), "mma functions defined and called");
    // The host exchanges through its runtime (a snapshot, or warp mode's
    // vectors), never lane by lane.
    let host = compiler::emit_ir(&module, &src).expect("lowers");
    assert!(!host.contains("__anycuda_mma_lanes"));
}

/// `.sat` on AMDGPU clamps the bits with integer compares: LLVM folds the
/// float form into the clamp modifier, whose result for -0 AMD does not
/// document, and PTX wants +0 there. The host keeps float compares.
#[test]
fn saturation_on_amdgpu_never_depends_on_the_clamp_modifier() {
    const SAT: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\
        .visible .entry sat(.param .u64 p)\n{\n.reg .f32 %f<4>;\n.reg .f16 %h<3>;\n.reg .b64 %rd<2>;\n\
        ld.param.u64 %rd1, [p];\nld.global.f32 %f1, [%rd1];\ncvt.sat.f32.f32 %f2, %f1;\nadd.sat.f32 %f3, %f2, %f1;\n\
        st.global.f32 [%rd1], %f3;\nld.global.b16 %h1, [%rd1+8];\ncvt.sat.f16.f16 %h2, %h1;\nst.global.b16 [%rd1+8], %h2;\nret;\n}\n";
    let module = ptx::parse(SAT).expect("parses");
    let amd = emit_target_ir(&module, SAT, &amdgpu("gfx1100")).expect("lowers");
    let body = amd
        .split("define internal void @\"__anycuda_thread.sat\"")
        .nth(1)
        .or_else(|| amd.split("__anycuda_thread.sat").nth(1))
        .expect("kernel body");
    let body = body.split("\n}\n").next().unwrap_or_default();
    assert!(!body.contains("fcmp ogt") && !body.contains("fcmp olt"), "float clamp compare on AMDGPU:\n{body}");
    assert!(body.matches(", 1\n").count() >= 3 && body.contains("icmp slt i32"), "no integer clamp for each .sat:\n{body}");
    let host = compiler::emit_ir(&module, SAT).expect("lowers");
    // (A float compare, of one lane or, in warp mode, of a warp's vector.)
    assert!(host.contains("fcmp ogt float") || host.contains("fcmp ogt <32 x float>"), "the host's saturation changed:\n{host}");
    // And the code object builds.
    assert!(compile(&module, SAT, &amdgpu("gfx90a")).is_ok());
}

/// AMD GPUs have one barrier per workgroup that every wavefront must reach:
/// barriers for part of a block (a thread count), arrivals that do not
/// wait, and counted `bar.red` are refused, naming the form and the line;
/// barriers of the whole block compile, whatever their id.
#[test]
fn named_barriers_for_part_of_a_block_are_unsupported_on_amdgpu() {
    let kernel = |body: &str| {
        format!(
            ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n.reg .pred %p<2>;\n.reg .b32 %r<3>;\n\
             mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 64;\n{body}\nret;\n}}\n"
        )
    };
    for (body, needle) in [
        ("bar.sync 1, 64;", "a barrier with a thread count"),
        ("barrier.sync 0, 128;", "a barrier with a thread count"),
        ("bar.arrive 2, 64;", "bar.arrive"),
        ("bar.red.popc.u32 %r2, 1, 64, %p1;", "a barrier with a thread count"),
    ] {
        let src = kernel(body);
        let line = src.lines().position(|l| l == body).expect("the line") as u32 + 1;
        for arch in ["gfx1100", "gfx90a"] {
            expect_unsupported(&src, arch, "k", needle, line);
        }
    }
    // The project's modules with producer/consumer warps on named barriers.
    for file in ["ptx/barriers.ptx", "ptx/warp_path.ptx"] {
        let named = std::fs::read_to_string(repo().join(file)).expect("module");
        let module = ptx::parse(&named).expect("parses");
        match compile(&module, &named, &amdgpu("gfx90a")) {
            Err(CompileError::Unsupported { what, .. }) => assert!(what.contains("thread count") || what.contains("bar.arrive"), "{what}"),
            other => panic!("{file}: expected Unsupported, got {other:?}"),
        }
    }
    for body in ["bar.sync 0;", "bar.sync 3;", "barrier.sync 1;", "bar.red.popc.u32 %r2, 0, %p1;"] {
        let src = kernel(body);
        let module = ptx::parse(&src).expect("parses");
        for arch in ["gfx1100", "gfx90a"] {
            assert!(compile(&module, &src, &amdgpu(arch)).is_ok(), "{body} on {arch}");
        }
    }
}

#[test]
fn device_side_launches_are_unsupported_on_amdgpu() {
    let src = std::fs::read_to_string(repo().join("ptx/device_launch.ptx")).expect("device_launch.ptx");
    let call = src.lines().position(|l| l.contains("call.uni (r), cudaGetParameterBufferV2")).expect("a call") as u32 + 1;
    for arch in ["gfx1100", "gfx90a"] {
        expect_unsupported(&src, arch, "parent_v2", "cudaGetParameterBufferV2", call);
    }
}

/// The text of the functions of `ir` whose names contain `name`, one after
/// the other.
fn function_text(ir: &str, name: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in ir.lines() {
        if line.starts_with("define") {
            inside = line.split_once('(').is_some_and(|(head, _)| head.contains(name));
        }
        if inside {
            out.push_str(line);
            out.push('\n');
            if line == "}" {
                inside = false;
            }
        }
    }
    out
}

/// Two kernels that read a `.global` and a `.const` variable (one through
/// a function), and one that names none.
const VARIABLES: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.global .align 4 .u32 table[2] = {5, 9};
.const .align 4 .u32 bias = 1000;
.func (.reg .u32 r) first()
{
	ld.global.u32 r, [table];
	ret;
}
.visible .entry uses(.param .u64 out)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	ld.global.u32 %r1, [table+4];
	ld.const.u32 %r2, [bias];
	add.u32 %r3, %r1, %r2;
	st.global.u32 [%rd1], %r3;
	ret;
}
.visible .entry calls(.param .u64 out)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	call (%r1), first, ();
	st.global.u32 [%rd1], %r1;
	ret;
}
.visible .entry plain(.param .u64 out)
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	st.global.u32 [%rd1], 1;
	ret;
}
"#;

/// Where code objects cannot link, every kernel compiles apart and reads
/// the variables' addresses from the shared unit's table, whose entries
/// the loader fills in from relocations; a module whose variables the
/// table cannot serve (an initialiser taking a function's address) keeps
/// the kernels that name them in the shared unit.
#[test]
fn kernels_compiled_apart_read_variables_through_the_shared_units_table() {
    use compiler::{analyse, compile_unit, partition, Options, Unit};
    let target = amdgpu("gfx1100");
    let module = ptx::parse(VARIABLES).expect("parses");
    let items: Vec<u32> =
        ["uses", "calls", "plain"].iter().map(|k| module.symbol(module.symbol_by_name(k).expect("kernel")).item).collect();
    let p = partition(&module, &target, &analyse(&module)).expect("cut into units");
    assert_eq!(p.apart, items, "every kernel compiles apart");
    assert!(p.variable_table);
    // The shared unit defines the variables and the table, the table's two
    // entries relocated against them.
    let shared = compile_unit(&module, VARIABLES, &target, &Options::default(), Unit::Shared).expect("shared unit compiles");
    assert_eq!(shared.info.globals.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["table", "bias"]);
    let syms = read_elf(&shared.object, "shared", &["--dyn-syms"]);
    let defined = |name: &str| syms.lines().any(|l| l.ends_with(name) && !l.contains(" UND "));
    for name in ["__anycuda_variables", "__anycuda_global.table", "__anycuda_global.bias"] {
        assert!(defined(name), "{name} not defined by the shared unit:\n{syms}");
    }
    let table_size = syms.lines().find(|l| l.ends_with("__anycuda_variables")).and_then(|l| l.split_whitespace().nth(2));
    assert_eq!(table_size, Some("16"), "{syms}");
    let relocs = read_elf(&shared.object, "shared", &["--relocs"]);
    for name in ["__anycuda_global.table", "__anycuda_global.bias"] {
        assert!(relocs.lines().any(|l| l.contains("R_AMDGPU_ABS64") && l.contains(name)), "no relocation against {name}:\n{relocs}");
    }
    // Each kernel's code object names no variable: nothing undefined.
    for (k, name) in items.iter().zip(["uses", "calls", "plain"]) {
        let c = compile_unit(&module, VARIABLES, &target, &Options::default(), Unit::Kernel(*k)).expect("kernel compiles");
        let problems = check_code_object(name, "gfx1100", &c);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let undefined = undefined_symbols(&read_elf(&c.object, name, &["--dyn-syms"]));
        assert!(undefined.is_empty(), "{name}: {undefined:?}");
    }
    // The host's units link: no table there.
    assert!(!partition(&module, &Target::HostCpu, &analyse(&module)).expect("host units").variable_table);

    // With a function's address in an initialiser, the two kernels that
    // name variables stay with them.
    let src = format!("{VARIABLES}.global .align 8 .u64 handler = first;\n");
    let module = ptx::parse(&src).expect("parses");
    let p = partition(&module, &target, &analyse(&module)).expect("cut into units");
    assert_eq!(p.apart, items[2..], "only `plain` compiles apart");
    assert!(!p.variable_table);
    let shared = compile_unit(&module, &src, &target, &Options::default(), Unit::Shared).expect("shared unit compiles");
    let syms = read_elf(&shared.object, "shared-fn", &["--dyn-syms"]);
    assert!(!syms.contains("__anycuda_variables"), "{syms}");
}

/// Eight `mma` of form `form` one after the other, A's registers
/// `{%r2, ...}` and B's `{%r2, ...}` as `a` and `b` say, C and D `%f1..%f4`
/// (f32) or `%f1..%f8`.
fn eight_mma_of(form: &str, a: usize, b: usize, d: usize) -> String {
    let regs = |n: usize, r: &str| vec![r; n].join(", ");
    let f: Vec<String> = (1..=d).map(|i| format!("%f{i}")).collect();
    let f = f.join(", ");
    let mut s = String::from(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry chain(.param .u64 out)\n{\n\
         .reg .b32 %r<8>;\n.reg .f32 %f<9>;\n.reg .b64 %rd<2>;\n\
         ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmov.b32 %r2, 0x3c003c00;\n",
    );
    for i in 1..=d {
        s.push_str(&format!("mov.f32 %f{i}, 0f00000000;\n"));
    }
    for _ in 0..8 {
        s.push_str(&format!("{form} {{{f}}}, {{{}}}, {{{}}}, {{{f}}};\n", regs(a, "%r2"), regs(b, "%r2")));
    }
    s.push_str("st.global.f32 [%rd1], %f1;\nret;\n}\n");
    s
}

/// Eight `mma` one after the other, each a thread-mode lane snapshot on a
/// GPU (A, B and C of every lane: 10 slots of 8 bytes, 32 lanes): Volta's
/// m8n8k4 with column-major A and f32 accumulators, whose fragments have
/// no lane plan.
fn eight_mma() -> String {
    eight_mma_of("mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f32", 2, 2, 8)
}

/// The private segment size (scratch bytes per lane) of a code object.
fn scratch_per_lane(object: &[u8], what: &str) -> u32 {
    let notes = read_elf(object, what, &["--notes"]);
    notes
        .lines()
        .find_map(|l| l.trim().strip_prefix(".private_segment_fixed_size:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("private segment size in the metadata")
}

/// mma forms with a lane plan exchange registers lane to lane: no
/// snapshot in scratch memory (it took 2,640 bytes a lane), only the
/// call's frame for the registers the function saves (544 bytes for
/// gfx1100), and eight instructions of one form are eight calls of one
/// function.
#[test]
fn mma_with_a_lane_plan_needs_no_scratch_memory() {
    let src = eight_mma_of("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 4, 2, 4);
    let module = ptx::parse(&src).expect("parses");
    for arch in ["gfx1100", "gfx90a"] {
        let ir = emit_target_ir(&module, &src, &amdgpu(arch)).expect("lowers");
        assert_eq!(ir.lines().filter(|l| l.contains("call {") && l.contains("@__anycuda_mma_lanes.")).count(), 8, "{arch}");
        assert!(!ir.contains("__anycuda_warp_gather"), "{arch}");
        for tier in [compiler::Tier::Fast, compiler::Tier::Optimized] {
            let opts = compiler::Options { tier, ..Default::default() };
            let c = compiler::compile_with_options(&module, &src, &amdgpu(arch), &opts).expect("compiles");
            let scratch = scratch_per_lane(&c.object, "lane-mma");
            assert!(scratch < 1024, "{arch} {tier:?}: {scratch} bytes of scratch memory per lane");
        }
    }
}

/// Each matrix instruction's lane snapshot is live only while that
/// instruction runs, so all of them share one stack slot: the kernel's
/// scratch memory per lane is about one snapshot (3,080-3,176 bytes), not
/// eight (about 25 KB; before the lifetime markers one of llama.cpp's
/// `mul_mat_q` kernels needed 173,424 bytes and did not compile for
/// gfx90a).
#[test]
fn matrix_instructions_share_their_snapshots_stack_slot() {
    let src = eight_mma();
    let module = ptx::parse(&src).expect("parses");
    for arch in ["gfx1100", "gfx90a"] {
        for tier in [compiler::Tier::Fast, compiler::Tier::Optimized] {
            let opts = compiler::Options { tier, ..Default::default() };
            let c = compiler::compile_with_options(&module, &src, &amdgpu(arch), &opts).expect("compiles");
            let scratch = scratch_per_lane(&c.object, "eight-mma");
            assert!(scratch <= 4096, "{arch} {tier:?}: {scratch} bytes of scratch memory per lane");
        }
    }
}
