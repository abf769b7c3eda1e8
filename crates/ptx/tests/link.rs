//! The PTX linker: symbol resolution, weak and common definitions, errors,
//! local renaming, versions and archives.

use ptx::ast::{FunctionKind, Item, Linkage, Module, Operand, Statement};
use ptx::{link, LinkError, LinkInput, LinkOptions, Linked};

const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

fn run(srcs: &[(&str, &str, bool)], provided: &[&str]) -> Result<Linked, LinkError> {
    let modules: Vec<Module> = srcs.iter().map(|(n, s, _)| ptx::parse(s).unwrap_or_else(|e| panic!("{n}: {e:?}"))).collect();
    let inputs: Vec<LinkInput> =
        srcs.iter().zip(&modules).map(|((name, _, lazy), module)| LinkInput { name, module, lazy: *lazy }).collect();
    link(&inputs, &LinkOptions { provided })
}

fn ok(srcs: &[(&str, &str)]) -> Linked {
    let v: Vec<(&str, &str, bool)> = srcs.iter().map(|(n, s)| (*n, *s, false)).collect();
    let l = run(&v, &[]).unwrap_or_else(|e| panic!("link failed: {e}"));
    // The linked text is one valid module.
    ptx::parse(&l.ptx).unwrap_or_else(|e| panic!("linked PTX does not parse: {e:?}\n{}", l.ptx));
    l
}

fn err(srcs: &[(&str, &str)]) -> String {
    let v: Vec<(&str, &str, bool)> = srcs.iter().map(|(n, s)| (*n, *s, false)).collect();
    match run(&v, &[]) {
        Ok(l) => panic!("link succeeded:\n{}", l.ptx),
        Err(e) => e.to_string(),
    }
}

/// The function `name` with a body, in the parsed link output.
fn body_text(ptx_text: &str, name: &str) -> String {
    let m = ptx::parse(ptx_text).expect("parses");
    let bodies: Vec<_> = m.functions().filter(|f| f.name == name && f.body.is_some()).collect();
    assert_eq!(bodies.len(), 1, "{name} defined {} times in\n{ptx_text}", bodies.len());
    // Print a module holding only that function's text region.
    let start = ptx_text.find(&format!("{name}(")).expect("name present");
    ptx_text[start..].to_string()
}

fn func(body: &str, name: &str, linkage: &str) -> String {
    format!("{linkage} .func (.param .b32 r) {name}(.param .b32 x)\n{{\n.reg .b32 %r<2>;\nld.param.b32 %r0, [x];\n{body}\nst.param.b32 [r], %r1;\nret;\n}}\n")
}

fn caller(kernel: &str, callee: &str) -> String {
    format!(
        ".visible .entry {kernel}(.param .u64 p)\n{{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd0, [p];\nmov.b32 %r0, 5;\n\
         {{\n.param .b32 a;\n.param .b32 b;\nst.param.b32 [a], %r0;\ncall (b), {callee}, (a);\nld.param.b32 %r1, [b];\n}}\n\
         st.global.b32 [%rd0], %r1;\nret;\n}}\n"
    )
}

fn extern_decl(name: &str) -> String {
    format!(".extern .func (.param .b32 r) {name}(.param .b32 x);\n")
}

#[test]
fn extern_function_and_variable_resolve_against_another_input() {
    let a = format!(
        "{HEAD}.extern .global .align 4 .b32 counter;\n{}\
         .visible .entry k(.param .u64 p)\n{{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd0, [p];\nmov.b32 %r0, 5;\n\
         {{\n.param .b32 a;\n.param .b32 b;\nst.param.b32 [a], %r0;\ncall (b), scale, (a);\nld.param.b32 %r1, [b];\n}}\n\
         st.global.b32 [%rd0], %r1;\nst.global.b32 [counter], %r1;\nret;\n}}\n",
        extern_decl("scale")
    );
    let b = format!("{HEAD}.visible .global .align 4 .b32 counter = 7;\n{}", func("mul.lo.s32 %r1, %r0, 3;", "scale", ".visible"));
    let l = ok(&[("a.ptx", &a), ("b.ptx", &b)]);
    let m = ptx::parse(&l.ptx).expect("parses");
    assert_eq!(l.included, vec![0, 1]);
    // One definition each; the kernel's call and store name them.
    let scale = m.symbol_by_name("scale").expect("scale");
    let f = m.function(scale).expect("a function");
    assert!(f.body.is_some() && f.linkage == Some(Linkage::Visible));
    let counter = m.symbol_by_name("counter").expect("counter");
    let v = m.variable(counter).expect("a variable");
    assert_eq!(v.decl.linkage, Some(Linkage::Visible));
    assert!(v.decl.init.is_some(), "the definition (with its initializer) is the one kept");
    let k = m.kernels().next().expect("kernel");
    let body = k.body.as_ref().expect("body");
    assert!(body.operands.contains(&Operand::Global(scale)));
    assert!(body.operands.contains(&Operand::AddrGlobal(counter, 0)));
    assert_eq!(m.symbols.iter().filter(|s| s.name == "scale").count(), 1);
}

#[test]
fn definition_first_then_reference_also_links() {
    let b = format!("{HEAD}{}", func("mul.lo.s32 %r1, %r0, 3;", "scale", ".visible"));
    let a = format!("{HEAD}{}{}", extern_decl("scale"), caller("k", "scale"));
    let l = ok(&[("b.ptx", &b), ("a.ptx", &a)]);
    // The later declaration adds nothing once the definition is out.
    assert_eq!(l.ptx.matches("scale(").count(), 1, "{}", l.ptx);
    body_text(&l.ptx, "scale");
}

#[test]
fn first_weak_definition_is_kept_among_weak_ones() {
    let a = format!("{HEAD}{}{}", func("mov.b32 %r1, 111;", "pick", ".weak"), caller("ka", "pick"));
    let b = format!("{HEAD}{}{}", func("mov.b32 %r1, 222;", "pick", ".weak"), caller("kb", "pick"));
    let l = ok(&[("a.ptx", &a), ("b.ptx", &b)]);
    let t = body_text(&l.ptx, "pick");
    assert!(t.contains("111") && !l.ptx.contains("222"), "{}", l.ptx);
    assert!(l.log.iter().any(|s| s.contains("weak definition in 'b.ptx' is dropped")), "{:?}", l.log);
}

#[test]
fn strong_definition_overrides_an_earlier_weak_one() {
    let a = format!("{HEAD}{}{}", func("mov.b32 %r1, 111;", "pick", ".weak"), caller("ka", "pick"));
    let b = format!("{HEAD}{}{}", func("mov.b32 %r1, 222;", "pick", ".visible"), caller("kb", "pick"));
    let l = ok(&[("a.ptx", &a), ("b.ptx", &b)]);
    body_text(&l.ptx, "pick");
    assert!(l.ptx.contains("222") && !l.ptx.contains("111"), "{}", l.ptx);
    // The weak definition became a declaration ahead of its caller.
    let m = ptx::parse(&l.ptx).expect("parses");
    let decl = m.functions().find(|f| f.name == "pick" && f.body.is_none()).expect("a declaration is left");
    assert_eq!(decl.linkage, Some(Linkage::Extern));
}

#[test]
fn weak_variables_and_common_variables() {
    let a = format!("{HEAD}.weak .global .align 4 .b32 w = 1;\n.common .global .align 4 .b32 c[2];\n");
    let b = format!("{HEAD}.weak .global .align 4 .b32 w = 2;\n.common .global .align 4 .b32 c[8];\n");
    let l = ok(&[("a.ptx", &a), ("b.ptx", &b)]);
    let m = ptx::parse(&l.ptx).expect("parses");
    let vars: Vec<_> = m.variables().filter(|v| v.decl.linkage != Some(Linkage::Extern)).collect();
    let w: Vec<_> = vars.iter().filter(|v| v.decl.name == "w").collect();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].decl.init, Some(ptx::ast::Initializer::Int(1)));
    let c: Vec<_> = vars.iter().filter(|v| v.decl.name == "c").collect();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].decl.dims, vec![Some(8)], "the largest common variable wins");
}

#[test]
fn duplicate_strong_definitions_are_an_error() {
    let a = format!("{HEAD}{}", func("mov.b32 %r1, 1;", "f", ".visible"));
    let b = format!("{HEAD}{}", func("mov.b32 %r1, 2;", "f", ".visible"));
    let e = err(&[("a.ptx", &a), ("b.ptx", &b)]);
    assert_eq!(e, "error   : Multiple definition of 'f' in 'b.ptx', first defined in 'a.ptx'");
    let a = format!("{HEAD}.visible .global .b32 v;\n");
    let e = err(&[("a.ptx", &a), ("b.ptx", &a)]);
    assert!(e.contains("Multiple definition of 'v' in 'b.ptx'"), "{e}");
}

#[test]
fn unresolved_references_are_errors_unless_provided() {
    let a = format!("{HEAD}.extern .global .b32 missing_var;\n{}{}", extern_decl("missing"), caller("k", "missing"));
    let e = err(&[("a.ptx", &a)]);
    assert!(e.contains("error   : Undefined reference to 'missing' in 'a.ptx'"), "{e}");
    assert!(e.contains("Undefined reference to 'missing_var' in 'a.ptx'"), "{e}");
    // A function the caller supplies needs no definition.
    let b = format!("{HEAD}{}{}", extern_decl("vprintf"), caller("k", "vprintf"));
    assert!(run(&[("b.ptx", &b, false)], &["vprintf"]).is_ok());
    assert!(run(&[("b.ptx", &b, false)], &[]).is_err());
    // Device-runtime functions are named as such.
    let c = format!("{HEAD}{}{}", extern_decl("cudaGetParameterBufferV2"), caller("k", "cudaGetParameterBufferV2"));
    let e = err(&[("c.ptx", &c)]);
    assert!(e.contains("device runtime") && e.contains("dynamic parallelism"), "{e}");
}

#[test]
fn kind_mismatch_is_an_error() {
    let a = format!("{HEAD}.extern .global .b32 f;\n");
    let b = format!("{HEAD}{}", func("mov.b32 %r1, 1;", "f", ".visible"));
    let e = err(&[("a.ptx", &a), ("b.ptx", &b)]);
    assert!(e.contains("'f' is declared as a variable in 'a.ptx' but defined as a function in 'b.ptx'"), "{e}");
}

#[test]
fn local_symbols_of_different_inputs_are_renamed_not_merged() {
    let a = format!("{HEAD}.global .align 4 .b32 state = 10;\n{}{}", func("mov.b32 %r1, 111;", "helper", ""), caller("ka", "helper"));
    let b = format!("{HEAD}.global .align 4 .b32 state = 20;\n{}{}", func("mov.b32 %r1, 222;", "helper", ""), caller("kb", "helper"));
    let l = ok(&[("a.ptx", &a), ("b.ptx", &b)]);
    let m = ptx::parse(&l.ptx).expect("parses");
    let helpers: Vec<_> = m.functions().filter(|f| f.body.is_some() && f.kind == FunctionKind::Func).collect();
    assert_eq!(helpers.len(), 2);
    assert_eq!(helpers[0].name, "helper");
    assert_eq!(helpers[1].name, "helper_1");
    let states: Vec<_> = m.variables().map(|v| v.decl.name).collect();
    assert_eq!(states, vec!["state", "state_1"]);
    // Each kernel calls its own module's helper.
    let call_target = |k: &str| {
        let f = m.functions().find(|f| f.name == k).expect("kernel");
        let b = f.body.as_ref().expect("body");
        b.operands.iter().find_map(|o| match o {
            Operand::Global(s) => Some(m.symbol(*s).name),
            _ => None,
        })
    };
    assert_eq!(call_target("ka"), Some("helper"));
    assert_eq!(call_target("kb"), Some("helper_1"));
    assert!(l.log.iter().any(|s| s.contains("renamed to 'helper_1'")), "{:?}", l.log);
}

#[test]
fn local_symbol_named_like_another_inputs_global_is_renamed() {
    let a = format!("{HEAD}{}{}", func("mov.b32 %r1, 1;", "f", ""), caller("ka", "f"));
    let b = format!("{HEAD}{}", func("mov.b32 %r1, 2;", "f", ".visible"));
    let c = format!("{HEAD}{}{}", extern_decl("f"), caller("kc", "f"));
    let l = ok(&[("a.ptx", &a), ("b.ptx", &b), ("c.ptx", &c)]);
    let m = ptx::parse(&l.ptx).expect("parses");
    let visible =
        m.functions().find(|f| f.kind == FunctionKind::Func && f.body.is_some() && f.linkage == Some(Linkage::Visible)).expect("global f");
    assert_eq!(visible.name, "f");
    assert!(m.functions().any(|f| f.name == "f_0" && f.body.is_some()), "{}", l.ptx);
}

#[test]
fn highest_version_and_target_are_taken() {
    let a = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .global .b32 x;\n";
    let b = ".version 8.3\n.target sm_86\n.address_size 64\n.visible .global .b32 y;\n";
    let c = ".version 7.8\n.target sm_75\n.address_size 64\n.visible .global .b32 z;\n";
    let l = ok(&[("a", a), ("b", b), ("c", c)]);
    let m = ptx::parse(&l.ptx).expect("parses");
    assert_eq!((m.version.major, m.version.minor), (8, 3));
    assert_eq!(m.target.sm(), Some(86));
}

#[test]
fn mismatched_address_sizes_are_refused() {
    let a = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .global .b32 x;\n";
    let b = ".version 8.0\n.target sm_80\n.address_size 32\n.visible .global .b32 y;\n";
    let e = err(&[("a", a), ("b", b)]);
    assert!(e.contains("'b' has address size 32 but 'a' has 64"), "{e}");
}

#[test]
fn archive_members_are_linked_only_when_needed() {
    let main = format!("{HEAD}{}{}", extern_decl("f"), caller("k", "f"));
    // f needs g from a later member; unused is never needed.
    let m1 = format!("{HEAD}{}{}", extern_decl("g"), func("mov.b32 %r1, 1;", "f", ".visible"));
    let m2 = format!("{HEAD}{}", func("mov.b32 %r1, 2;", "unused", ".visible"));
    let m3 = format!("{HEAD}{}", func("mov.b32 %r1, 3;", "g", ".visible"));
    let l = run(&[("main", &main, false), ("lib.a:m1", &m1, true), ("lib.a:m2", &m2, true), ("lib.a:m3", &m3, true)], &[]).expect("links");
    assert_eq!(l.included, vec![0, 1, 3]);
    assert!(!l.ptx.contains("unused"));
    assert!(l.log.iter().any(|s| s == "'lib.a:m3' is linked: it defines 'g'"), "{:?}", l.log);
    // A member whose names clash with nothing needed is not linked even with
    // a duplicate strong definition.
    let dup = format!("{HEAD}{}{}", func("mov.b32 %r1, 9;", "f", ".visible"), func("mov.b32 %r1, 9;", "g", ".visible"));
    let l = run(&[("main", &main, false), ("m1", &m1, false), ("m3", &m3, false), ("lib.a:dup", &dup, true)], &[]).expect("links");
    assert_eq!(l.included, vec![0, 1, 2]);
    // Without the member that defines g, the link fails.
    let e = run(&[("main", &main, false), ("lib.a:m1", &m1, true)], &[]).expect_err("g is undefined");
    assert!(e.to_string().contains("Undefined reference to 'g' in 'lib.a:m1'"), "{e}");
}

#[test]
fn dynamic_shared_arrays_of_several_inputs_are_one_window() {
    let k = |n: &str| {
        format!(
            "{HEAD}.extern .shared .align 16 .b8 smem[];\n.visible .entry {n}()\n{{\n.reg .b32 %r<2>;\nmov.b32 %r0, 1;\nst.shared.b32 [smem], %r0;\nret;\n}}\n"
        )
    };
    let l = ok(&[("a", &k("ka")), ("b", &k("kb"))]);
    let m = ptx::parse(&l.ptx).expect("parses");
    assert_eq!(m.variables().filter(|v| v.decl.name == "smem").count(), 1, "{}", l.ptx);
    assert_eq!(m.kernels().count(), 2);
}

#[test]
fn file_numbers_stay_apart() {
    let k = |n: &str, file: &str| format!("{HEAD}.file 1 \"{file}\"\n.visible .entry {n}()\n{{\n.loc 1 7 3\nret;\n}}\n");
    let l = ok(&[("a", &k("ka", "a.cu")), ("b", &k("kb", "b.cu"))]);
    let m = ptx::parse(&l.ptx).expect("parses");
    let files: Vec<_> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::File { index, name, .. } => Some((*index, *name)),
            _ => None,
        })
        .collect();
    assert_eq!(files, vec![(1, "a.cu"), (2, "b.cu")]);
    let kb = m.functions().find(|f| f.name == "kb").expect("kb");
    assert!(kb.body.as_ref().expect("body").statements.iter().any(|s| matches!(s, Statement::Loc { file: 2, line: 7, .. })));
}

#[test]
fn nothing_to_link_is_an_error() {
    let e = run(&[], &[]).expect_err("no inputs");
    assert!(e.to_string().contains("nothing to link"));
}

#[test]
fn the_device_runtime_is_recognised_by_its_definitions() {
    let devrt = format!(
        "{HEAD}{}{}",
        func("mov.b32 %r1, 0;", "cudaGetParameterBufferV2", ".visible"),
        func("mov.b32 %r1, 0;", "cudaLaunchDeviceV2", ".visible")
    );
    let m = ptx::parse(&devrt).expect("parses");
    assert!(ptx::is_device_runtime(&m));
    // A caller declaring them is not the runtime.
    let user = format!("{HEAD}{}{}", extern_decl("cudaGetParameterBufferV2"), extern_decl("cudaLaunchDeviceV2"));
    assert!(!ptx::is_device_runtime(&ptx::parse(&user).expect("parses")));
    // Linked lazily, it joins only when called into.
    let kernel = format!("{HEAD}.visible .entry k() {{ ret; }}\n");
    let l = run(&[("k", &kernel, false), ("devrt", &devrt, true)], &[]).expect("links");
    assert_eq!(l.included, vec![0]);
    let launcher = format!("{HEAD}{}{}", extern_decl("cudaLaunchDeviceV2"), caller("k", "cudaLaunchDeviceV2"));
    let l = run(&[("k", &launcher, false), ("devrt", &devrt, true)], &[]).expect("links");
    assert_eq!(l.included, vec![0, 1]);
}

#[test]
fn the_device_runtime_is_recognised_from_its_text() {
    let devrt = format!(
        "{HEAD}// .globl cudaGetParameterBufferV2\n{}\n// .globl cudaLaunchDeviceV2\n{}",
        func("mov.b32 %r1, 0;", "cudaGetParameterBufferV2", ".visible"),
        func("mov.b32 %r1, 0;", "cudaLaunchDeviceV2", ".weak")
    );
    assert!(ptx::is_device_runtime_text(&devrt));
    // What the text test says, parsing says too.
    assert!(ptx::is_device_runtime(&ptx::parse(&devrt).expect("parses")));
    // Declarations, calls and other names are not definitions.
    let user = format!(
        "{HEAD}{}{}{}",
        extern_decl("cudaGetParameterBufferV2"),
        extern_decl("cudaLaunchDeviceV2"),
        caller("k", "cudaLaunchDeviceV2")
    );
    assert!(!ptx::is_device_runtime_text(&user));
    // Only one of the two defined.
    let half = format!("{HEAD}{}{}", func("mov.b32 %r1, 0;", "cudaGetParameterBufferV2", ".visible"), extern_decl("cudaLaunchDeviceV2"));
    assert!(!ptx::is_device_runtime_text(&half));
    // A longer name that contains the runtime's is another function.
    let longer = format!(
        "{HEAD}{}{}",
        func("mov.b32 %r1, 0;", "my_cudaGetParameterBufferV2", ".visible"),
        func("mov.b32 %r1, 0;", "cudaLaunchDeviceV2x", ".visible")
    );
    assert!(!ptx::is_device_runtime_text(&longer));
    // A prototype without a body (`.visible` but ended by `;`).
    let proto = format!(
        "{HEAD}.visible .func (.param .b32 r) cudaGetParameterBufferV2(.param .b32 x);\n\
         .visible .func (.param .b32 r) cudaLaunchDeviceV2(.param .b32 x);\n"
    );
    assert!(!ptx::is_device_runtime_text(&proto));
}

#[test]
fn device_runtime_functions_the_driver_provides_need_no_definition() {
    for name in [
        "__cudaCDP2LaunchDeviceV2",
        "__cudaCDP2GetParameterBufferV2",
        "cudaLaunchDevice",
        "__cudaCDP2StreamCreateWithFlags",
        "__cudaCDP2Memcpy2DAsync",
        "__cudaCDP2Memcpy3DAsync",
        "__cudaCDP2Memset3DAsync_ptsz",
    ] {
        assert!(ptx::DEVICE_RUNTIME_PROVIDED.contains(&name), "{name}");
        let launcher = format!("{HEAD}{}{}", extern_decl(name), caller("k", name));
        let l = run(&[("k", &launcher, false)], ptx::DRIVER_FUNCTIONS).expect("links");
        assert_eq!(l.included, vec![0]);
    }
    // One anycuda does not provide is an error naming it.
    let name = "__cudaCDP2DeviceGetCacheConfig";
    let launcher = format!("{HEAD}{}{}", extern_decl(name), caller("k", name));
    let e = run(&[("k", &launcher, false)], ptx::DRIVER_FUNCTIONS).expect_err("undefined");
    assert!(e.to_string().contains(name) && e.to_string().contains("device runtime"), "{e}");
}

#[test]
fn the_device_library_is_linked_only_for_a_module_that_calls_it() {
    // numba-cuda's grid barrier: the cooperative-groups calls, declared.
    let grid = ".version 6.4\n.target sm_60\n.address_size 64\n\
         .extern .func (.param .b64 h) cudaCGGetIntrinsicHandle(.param .b32 s);\n\
         .extern .func (.param .b32 r) cudaCGSynchronize(.param .b64 h, .param .b32 f);\n\
         .visible .entry k()\n{\n.reg .b64 %rd<2>;\n.reg .b32 %r<2>;\n\
         {\n.param .b32 s;\n.param .b64 h;\nst.param.b32 [s], 1;\ncall.uni (h), cudaCGGetIntrinsicHandle, (s);\nld.param.b64 %rd0, [h];\n}\n\
         {\n.param .b64 h;\n.param .b32 f;\n.param .b32 r;\nst.param.b64 [h], %rd0;\nst.param.b32 [f], 0;\n\
         call.uni (r), cudaCGSynchronize, (h, f);\nld.param.b32 %r0, [r];\n}\nret;\n}\n"
    .to_string();
    assert!(ptx::may_use_device_library(&grid));
    let l = run(&[("grid", &grid, false)], ptx::DRIVER_FUNCTIONS).expect("links");
    // The library is not one of the caller's inputs, and does not raise the
    // module's version or target.
    assert_eq!(l.included, vec![0]);
    let m = ptx::parse(&l.ptx).expect("linked PTX parses");
    assert_eq!((m.version.major, m.version.minor), (6, 4));
    assert_eq!(m.target.sm(), Some(60));
    for name in ptx::DEVICE_LIBRARY_FUNCTIONS {
        let f = m.symbol_by_name(name).and_then(|s| m.function(s)).expect(name);
        assert!(f.body.is_some(), "{name} is defined by the link");
    }
    // A module that calls neither is linked without it.
    let plain = format!("{HEAD}{}{}", func("mov.b32 %r1, 1;", "f", ".visible"), caller("k", "f"));
    assert!(!ptx::may_use_device_library(&plain));
    let l = run(&[("plain", &plain, false)], &[]).expect("links");
    let m = ptx::parse(&l.ptx).expect("linked PTX parses");
    assert!(ptx::DEVICE_LIBRARY_FUNCTIONS.iter().all(|n| m.symbol_by_name(n).is_none()));
    // The library's own text is one valid module.
    ptx::parse(ptx::DEVICE_LIBRARY).expect("the device library parses");
}
