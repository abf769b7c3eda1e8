//! Every diagnostic path: the message, the position and the text found.

fn errors(body: &str) -> Vec<ptx::Diagnostic> {
    let src = format!(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n{body}\n}}\n");
    match ptx::parse(&src) {
        Ok(_) => panic!("expected errors for:\n{body}"),
        Err(d) => d.0,
    }
}

fn one(body: &str) -> ptx::Diagnostic {
    let mut e = errors(body);
    assert_eq!(e.len(), 1, "expected one error, got {e:?}");
    e.remove(0)
}

const REGS: &str = ".reg .b32 %r<4>; .reg .pred %p<2>;";

#[test]
fn bad_token() {
    let d = one(&format!("{REGS}\nadd.s32 %r1, %r2, #;"));
    assert_eq!((d.line, d.column), (7, 19));
    assert_eq!(d.found, "#");
    assert_eq!(d.message, "invalid token");
    assert_eq!(d.expected.as_deref(), Some("an operand"));
}

#[test]
fn unknown_opcode() {
    let d = one(&format!("{REGS}\n  frobnicate.u32 %r1, %r2;"));
    assert_eq!((d.line, d.column), (7, 3));
    assert_eq!(d.message, "unknown instruction `frobnicate`");
    assert_eq!(d.found, "frobnicate");
}

#[test]
fn bad_modifier() {
    let d = one(&format!("{REGS}\nadd.wobbly.s32 %r1, %r2, %r3;"));
    assert_eq!((d.line, d.column), (7, 4));
    assert_eq!(d.message, "unknown modifier `.wobbly` for `add`");
    assert_eq!(d.found, ".wobbly");
}

#[test]
fn rounding_on_integer_add() {
    let d = one(&format!("{REGS}\nadd.rn.s32 %r1, %r2, %r3;"));
    assert_eq!(d.message, "rounding modifier `.rn` is not valid for integer `add`");
    assert_eq!((d.line, d.column), (7, 1));
}

#[test]
fn missing_type() {
    let d = one(&format!("{REGS}\nadd %r1, %r2, %r3;"));
    assert_eq!(d.message, "`add` needs a type modifier such as `.u32`");
}

#[test]
fn wrong_operand_count() {
    let d = one(&format!("{REGS}\nadd.s32 %r1, %r2;"));
    assert_eq!(d.message, "wrong operand count: `add` takes 3 operands, found 2");
    assert_eq!((d.line, d.column), (7, 1));
    assert!(d.found.starts_with("add.s32 %r1, %r2;"), "{}", d.found);
}

#[test]
fn undeclared_register_and_out_of_range_member() {
    let e = errors(&format!("{REGS}\nmov.u32 %r1, %q9;\nmov.u32 %r4, 1;"));
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].message, "undeclared identifier `%q9`");
    assert_eq!((e[0].line, e[0].column), (7, 14));
    assert_eq!(e[1].message, "undeclared identifier `%r4`");
    assert_eq!((e[1].line, e[1].column), (8, 9));
}

#[test]
fn undefined_label() {
    let d = one(&format!("{REGS}\n@%p1 bra $L_nowhere;"));
    assert_eq!(d.message, "undefined label `$L_nowhere`");
    assert_eq!((d.line, d.column), (7, 10));
}

#[test]
fn unterminated_block() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n.entry k()\n{\n.reg .b32 %r<2>;\n{\nmov.u32 %r1, 0;\n";
    let d = ptx::parse(src).expect_err("unterminated");
    let msgs: Vec<_> = d.0.iter().map(|d| (d.line, d.message.as_str())).collect();
    assert!(msgs.contains(&(7, "unterminated block")), "{msgs:?}");
    assert!(msgs.contains(&(4, "unterminated body of `k`")) || msgs.iter().any(|(_, m)| m.contains("unterminated")), "{msgs:?}");
    assert!(d.0.iter().any(|d| d.message == "unexpected end of input"), "{msgs:?}");
}

#[test]
fn unterminated_comment_and_string() {
    let d = ptx::parse(".version 8.0\n/* never closed").expect_err("open comment");
    assert_eq!(d.0[0].message, "invalid token");
    assert_eq!((d.0[0].line, d.0[0].column), (2, 1));
    let d = ptx::parse(".version 8.0\n.pragma \"open;\n").expect_err("open string");
    assert_eq!((d.0[0].line, d.0[0].column), (2, 9));
}

#[test]
fn every_error_of_a_module_is_reported() {
    let e = errors(&format!("{REGS}\nfoo.u32 %r1;\nadd.s32 %r1, %r2;\nmov.u32 %r1, %zz;\nmov.u32 %r1, 3;\nbar.zzz;"));
    let lines: Vec<u32> = e.iter().map(|d| d.line).collect();
    assert_eq!(lines, vec![7, 8, 9, 11], "{e:?}");
}

#[test]
fn errors_in_several_functions() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
               .entry a() { .reg .b32 %r; add.s32 %r, %r; }\n\
               .entry b() { .reg .b32 %r; sub.s32 %r, %r, %nope; }\n\
               .global .u32 g = ;\n";
    let d = ptx::parse(src).expect_err("errors");
    let lines: Vec<u32> = d.0.iter().map(|d| d.line).collect();
    assert_eq!(lines, vec![4, 5, 6], "{d}");
}

#[test]
fn display_names_position_found_and_expected() {
    let d = one(&format!("{REGS}\nadd.wobbly.s32 %r1, %r2, %r3;"));
    assert_eq!(d.to_string(), "7:4: unknown modifier `.wobbly` for `add` (found `.wobbly`, expected a PTX modifier)");
}

#[test]
fn duplicate_label_and_function() {
    let d = one(&format!("{REGS}\n$L1:\n$L1:\nret;"));
    assert_eq!(d.message, "label `$L1` is defined twice");
    let src = ".version 8.0\n.target sm_80\n.entry k() { ret; }\n.entry k() { ret; }\n";
    let d = ptx::parse(src).expect_err("twice");
    assert_eq!(d.0[0].message, "function `k` is defined twice");
    assert_eq!(d.0[0].line, 4);
}

#[test]
fn guard_must_be_a_predicate() {
    let d = one(&format!("{REGS}\n@%r1 bra $L;\n$L:\nret;"));
    assert_eq!(d.message, "`%r1` is not a declared predicate register");
    assert_eq!((d.line, d.column), (7, 2));
}

fn module_errors(src: &str) -> Vec<ptx::Diagnostic> {
    match ptx::parse(src) {
        Ok(_) => panic!("expected errors for:\n{src}"),
        Err(d) => d.0,
    }
}

#[test]
fn unknown_sampler_field_and_value() {
    let e = module_errors(".version 8.0\n.target sm_80\n.global .samplerref s = { filter_mode = blurry };\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].message, "unknown field value `blurry`");
    assert_eq!((e[0].line, e[0].column, e[0].found.as_str()), (3, 41, "blurry"));
    let e = module_errors(".version 8.0\n.target sm_80\n.global .samplerref s = { colour = linear };\n");
    assert_eq!(e[0].message, "unknown sampler or texture field `colour`");
    assert_eq!((e[0].line, e[0].column), (3, 27));
}

#[test]
fn negated_operand_must_be_a_register() {
    let src = ".version 8.0\n.target sm_80\n.global .u32 g;\n.entry k() { .reg .b32 %r<4>;\nvmad.s32.s32.s32 %r1, -g, %r2, %r3;\n}\n";
    let e = module_errors(src);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].message, "only a register can be negated");
    assert_eq!((e[0].line, e[0].column, e[0].found.as_str()), (5, 24, "g"));
}

#[test]
fn symbol_offset_must_be_constant() {
    let src = ".version 8.0\n.target sm_80\n.global .u32 g[4];\n.entry k() { .reg .b64 %rd<4>;\nmov.u64 %rd1, g+%rd2;\n}\n";
    let e = module_errors(src);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].message, "a symbol's offset is a constant");
    assert_eq!((e[0].line, e[0].column, e[0].found.as_str()), (5, 17, "%rd2"));
}

#[test]
fn predicate_after_pipe_must_be_declared() {
    let d = one(&format!("{REGS}\nsetp.eq.s32 %p1|%q, %r1, %r2;"));
    assert_eq!(d.message, "`%q` is not a declared register");
    assert_eq!((d.line, d.column), (7, 17));
    let d = one(&format!("{REGS}\nelect.sync _|%nope, -1;"));
    assert_eq!(d.message, "`%nope` is not a declared register");
}

#[test]
fn labels_in_sibling_blocks_are_distinct_but_not_in_one_block() {
    // The same name in two blocks is two labels; twice in one block is an error.
    let src = ".version 8.0\n.target sm_80\n.entry k() {\n{ L: bra L; }\n{ L: bra L; }\n{ L:\nL: ret; }\n}\n";
    let e = module_errors(src);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].message, "label `L` is defined twice");
    assert_eq!((e[0].line, e[0].column), (7, 1));
    // A use in a block does not see a label defined only in a sibling block.
    let src = ".version 8.0\n.target sm_80\n.entry k() {\n{ L: ret; }\n{ bra L; }\n}\n";
    let e = module_errors(src);
    assert_eq!(e[0].message, "undefined label `L`");
    assert_eq!((e[0].line, e[0].column), (5, 7));
}

#[test]
fn unterminated_section() {
    let e = module_errors(".version 8.0\n.target sm_80\n.section .debug_info {\n.b8 1 // }\n");
    assert_eq!(e[0].message, "unterminated `.section`");
    assert_eq!((e[0].line, e[0].column, e[0].found.as_str()), (3, 22, "{"));
}

#[test]
fn bad_mask_initializer() {
    let e = module_errors(".version 8.0\n.target sm_80\n.global .u32 g;\n.global .u8 b[2] = {0xFF(generic(g), 0};\n");
    assert_eq!(e[0].message, "unexpected token");
    assert_eq!(e[0].expected.as_deref(), Some("`)`"));
    assert_eq!((e[0].line, e[0].column, e[0].found.as_str()), (4, 36, ","));
}

#[test]
fn nesting_too_deep() {
    // Blocks, parentheses and braces nest at most 64 levels; deeper input
    // is an error (the parser recurses on nesting), not a stack overflow.
    let d = one(&format!("{REGS}\nmov.u32 %r1, {}1{};", "(".repeat(100_000), ")".repeat(100_000)));
    assert_eq!(d.message, "nesting deeper than 64 levels");
    assert_eq!((d.line, d.found.as_str()), (7, "("));
    let d = one(&format!("{REGS}\n{}{}", "{".repeat(100_000), "}".repeat(100_000)));
    assert_eq!(d.message, "nesting deeper than 64 levels");
    assert_eq!((d.line, d.column), (7, 65));
    let e = module_errors(&format!(".version 8.0\n.target sm_80\n.global .u32 g[1] = {}1{};\n", "{".repeat(1000), "}".repeat(1000)));
    assert_eq!(e[0].message, "nesting deeper than 64 levels");
    // Real nesting is fine.
    let src = format!(
        ".version 8.0\n.target sm_80\n.entry k() {{ .reg .b32 %r;\n{}mov.u32 %r, {}1{};{}\n}}\n",
        "{".repeat(20),
        "(".repeat(20),
        ")".repeat(20),
        "}".repeat(20)
    );
    ptx::parse(&src).expect("20 levels parse");
}

#[test]
fn function_scoped_global_sharing_a_module_name() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n.global .b32 g;\n.visible .entry k()\n{\n  .global .b32 g;\nret;\n}\n";
    let d = match ptx::parse(src) {
        Ok(_) => panic!("accepted"),
        Err(d) => d.0,
    };
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].line, d[0].column), (7, 3));
    assert!(d[0].message.contains("`g`, a variable declared inside a function body, shares its name"), "{}", d[0].message);
}

#[test]
fn vector_register_element_out_of_range() {
    let d = one(".reg .v2 .u32 %w;\n.reg .b32 %r;\nmov.u32 %r, %w.z;");
    assert_eq!((d.line, d.column), (8, 15));
    assert_eq!(d.message, "`%w` has 2 elements");
    assert_eq!(d.expected.as_deref(), Some("`.x` or `.y`"));
}
