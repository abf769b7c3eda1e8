//! Linking PTX modules into one PTX module, as nvJitLink does before it
//! generates machine code: the project's linker (`ptx::link`, the one
//! `cuLink*` uses) over the parsed modules. Functions the driver supplies
//! (`vprintf`, `malloc`, ..., and the device runtime's that the compiler
//! lowers) may stay undefined; CUDA's device runtime itself (libcudadevrt,
//! which numba-cuda adds to links) is left out unparsed, as `cuLink*`
//! leaves it out.

/// Links `modules` (name, PTX text, possibly NUL-terminated) and the
/// members of archives in `lazy` (each linked only when it defines
/// something still undefined, as a linker takes archive members) into one
/// PTX module; the error names what could not be linked.
pub fn link(modules: &[(String, String)], lazy: &[(String, String)]) -> Result<String, String> {
    match modules {
        [] => return Err("no PTX to link".into()),
        [(_, one)] if lazy.is_empty() => return Ok(one.trim_end_matches('\0').to_string()),
        _ => {}
    }
    let all: Vec<(&(String, String), bool)> = modules
        .iter()
        .map(|m| (m, false))
        .chain(lazy.iter().map(|m| (m, true)))
        .filter(|((_, text), _)| !ptx::is_device_runtime_text(text))
        .collect();
    let mut parsed = Vec::with_capacity(all.len());
    for ((name, text), _) in &all {
        parsed.push(ptx::parse(text.trim_end_matches('\0')).map_err(|e| format!("{name}: PTX syntax errors:\n{e}"))?);
    }
    let inputs: Vec<ptx::LinkInput> =
        all.iter().zip(&parsed).map(|(((name, _), lazy), module)| ptx::LinkInput { name, module, lazy: *lazy }).collect();
    ptx::link(&inputs, &ptx::LinkOptions { provided: ptx::DRIVER_FUNCTIONS }).map(|l| l.ptx).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stands for libcudadevrt: it defines the launch functions in terms of
    /// the driver's private calls (which nothing here defines).
    const DEVICE_RUNTIME: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b64 r) __cuda_syscall_private(.param .b64 p);
.weak .func (.param .b64 r) cudaGetParameterBufferV2(.param .b64 a)
{
    .param .b64 x;
    .param .b64 y;
    st.param.b64 [x], 0;
    call.uni (y), __cuda_syscall_private, (x);
    st.param.b64 [r], 0;
    ret;
}
.weak .func (.param .b32 r) cudaLaunchDeviceV2(.param .b64 a)
{
    st.param.b32 [r], 0;
    ret;
}
.visible .func (.param .b64 r) cudaCGGetRank(.param .b32 scope)
{
    st.param.b64 [r], 1;
    ret;
}
"#;

    #[test]
    fn the_device_runtime_is_left_out_and_its_missing_functions_named() {
        // Lazily (an archive member) or not, it is never taken in: a
        // caller of one of its other functions gets a link error naming it.
        for (eager, lazy) in [
            (vec![("devrt.a(x.o)".to_string(), DEVICE_RUNTIME.to_string())], vec![]),
            (vec![], vec![("devrt.a(x.o)".to_string(), DEVICE_RUNTIME.to_string())]),
        ] {
            let mut modules = vec![("a".to_string(), CALLER.to_string()), ("b".to_string(), CALLEE.to_string())];
            modules.extend(eager);
            assert!(link(&modules, &lazy).is_ok(), "left out, it leaves nothing undefined");
            let grid = CALLER.replace(".extern .global", ".extern .func (.param .b64 r) cudaCGGetRank(.param .b32 s);\n.extern .global");
            let grid = grid.replace(
                "\tret;\n}",
                "\t{ .param .b32 s; .param .b64 r; st.param.b32 [s], 1; call.uni (r), cudaCGGetRank, (s); }\n\tret;\n}",
            );
            modules[0].1 = grid;
            let e = link(&modules, &lazy).expect_err("cudaCGGetRank is not provided");
            assert!(e.contains("cudaCGGetRank") && !e.contains("__cuda_syscall_private"), "{e}");
        }
    }

    const CALLER: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.extern .func  (.param .b32 func_retval0) f
(
	.param .b32 f_param_0
)
;
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.extern .global .align 4 .u32 scale;
.extern .shared .align 4 .b8 sm[];
.global .align 1 .b8 $str[3] = {104, 105, 0};

.visible .entry k(
	.param .u64 k_param_0
)
{
	ret;
}
"#;

    const CALLEE: &str = r#"
.version 8.5
.target sm_86
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.visible .global .align 4 .u32 scale = 3;
.extern .shared .align 4 .b8 sm[];
.global .align 1 .b8 $str[3] = {104, 111, 0};

.visible .func  (.param .b32 func_retval0) f(
	.param .b32 f_param_0
)
{
	.local .align 8 .b8 __local_depot0[8];
	.reg .b64 %rd<2>;
	.loc 1 5 3
	mov.u64 %rd1, $str;
	ret;
}
"#;

    fn count(hay: &str, needle: &str) -> usize {
        hay.matches(needle).count()
    }

    #[test]
    fn externs_resolve_against_definitions() {
        let out = link(&[("a".into(), CALLER.into()), ("b".into(), CALLEE.into())], &[]).unwrap();
        assert!(out.contains(".version 8.5\n.target sm_86\n.address_size 64\n"), "{out}");
        assert!(ptx::parse(&out).is_ok(), "the linked module parses: {out}");
        // f and scale: defined once, by the second module.
        assert_eq!(count(&out, ".visible .func (.param .b32 func_retval0) f(.param .b32 f_param_0)\n{"), 1, "{out}");
        assert_eq!(count(&out, ".visible .global .align 4 .u32 scale = 3;"), 1, "{out}");
        assert_eq!(count(&out, ".extern .global .align 4 .u32 scale"), 0, "{out}");
        // vprintf: the driver supplies it; declared once.
        assert_eq!(count(&out, ") vprintf("), 1, "{out}");
        // sm: once.
        assert_eq!(count(&out, ".extern .shared .align 4 .b8 sm[];"), 1, "{out}");
        // $str: the second module's is renamed, its uses with it.
        assert_eq!(count(&out, ".global .align 1 .b8 $str[3] = {104, 105, 0};"), 1, "{out}");
        assert!(!out.contains("$str[3] = {104, 111, 0}"), "{out}");
        assert!(!out.contains("mov.u64 %rd1, $str;"), "{out}");
        assert!(out.contains(".local .align 8 .b8 __local_depot0[8];"), "{out}");
    }

    #[test]
    fn duplicate_visible_definitions_are_an_error() {
        let e = link(&[("a".into(), CALLEE.into()), ("b".into(), CALLEE.into())], &[]).unwrap_err();
        assert!(e.contains("Multiple definition of 'scale'") && e.contains("Multiple definition of 'f'"), "{e}");
    }

    #[test]
    fn weak_definitions_are_kept_once() {
        let weak = ".version 8.0\n.target sm_80\n.address_size 64\n.weak .func g()\n{\n\tret;\n}\n";
        let out = link(&[("a".into(), weak.into()), ("b".into(), weak.into())], &[]).unwrap();
        assert_eq!(count(&out, ".weak .func g()"), 1, "{out}");
    }

    #[test]
    fn one_module_is_returned_as_is() {
        assert_eq!(link(&[("a".into(), format!("{CALLER}\0"))], &[]).unwrap(), CALLER);
    }

    #[test]
    fn address_sizes_must_agree() {
        let a = ".version 8.0\n.target sm_80\n.address_size 64\n";
        let b = ".version 8.0\n.target sm_80\n.address_size 32\n";
        let e = link(&[("a".into(), a.into()), ("b".into(), b.into())], &[]).unwrap_err();
        assert!(e.contains("address"), "{e}");
    }
}
