//! Hand-written modules, one per instruction family (`tests/syntax/*.ptx`),
//! exercise every syntax form of the PTX ISA that the front end reads: each
//! parses and round-trips. The checks below pin down how the forms that
//! need more than a modifier word land in the tree.

use ptx::ast::*;
use std::path::PathBuf;

fn syntax_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/syntax")
}

fn load(name: &str) -> String {
    let path = syntax_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn round_trip(src: &str) -> Module<'_> {
    let module = ptx::parse(src).unwrap_or_else(|d| panic!("{d}"));
    let printed = ptx::print(&module);
    let again = ptx::parse(&printed).unwrap_or_else(|d| panic!("printed module: {d}\n{printed}"));
    assert_eq!(module, again, "does not round-trip; printed:\n{printed}");
    module
}

#[test]
fn every_family_module_parses_and_round_trips() {
    let mut names: Vec<_> = std::fs::read_dir(syntax_dir())
        .expect("tests/syntax")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    for path in names {
        let src = std::fs::read_to_string(&path).expect("readable");
        let module = ptx::parse(&src).unwrap_or_else(|d| panic!("{}:\n{d}", path.display()));
        let instructions: usize = module
            .functions()
            .filter_map(|f| f.body.as_ref())
            .map(|b| b.statements.iter().filter(|s| matches!(s, Statement::Instruction(_))).count())
            .sum();
        assert!(instructions > 0, "{}", path.display());
        let printed = ptx::print(&module);
        let again = ptx::parse(&printed).unwrap_or_else(|d| panic!("{} (printed): {d}\n{printed}", path.display()));
        assert_eq!(module, again, "{} does not round-trip", path.display());
    }
}

/// The instructions of the first function named `name`, with their body.
fn function<'m, 'a>(m: &'m Module<'a>, name: &str) -> (&'m Function<'a>, &'m Body<'a>) {
    let f = m.functions().find(|f| f.name == name && f.body.is_some()).expect("function");
    (f, f.body.as_ref().expect("body"))
}

fn instructions<'b>(b: &'b Body) -> impl Iterator<Item = &'b Instruction> {
    b.statements.iter().filter_map(|s| match s {
        Statement::Instruction(i) => Some(i),
        _ => None,
    })
}

#[test]
fn labels_are_scoped_by_block() {
    let src = load("module.ptx");
    let m = round_trip(&src);
    let (_, b) = function(&m, "scoped_labels");
    // Two inline blocks define WAIT and DONE each, and OUTER exists twice.
    let count = |n: &str| b.labels.iter().filter(|l| **l == n).count();
    assert_eq!((count("WAIT"), count("DONE"), count("OUTER")), (2, 2, 2));
    // Each `bra` goes to the definition of its own block.
    let defined_at: Vec<(usize, LabelId)> =
        b.statements.iter().enumerate().filter_map(|(k, s)| if let Statement::Label(l) = s { Some((k, *l)) } else { None }).collect();
    let bras: Vec<LabelId> = instructions(b)
        .filter(|i| i.op == Opcode::Bra)
        .map(|i| match b.args(i)[0] {
            Operand::Label(l) => l,
            ref o => panic!("{o:?}"),
        })
        .collect();
    let ids: Vec<LabelId> = defined_at.iter().map(|d| d.1).collect();
    // labels in order: WAIT, DONE (block 1), WAIT, DONE (block 2), OUTER (inner), OUTER (function)
    assert_eq!(bras, vec![ids[1], ids[0], ids[3], ids[2], ids[5], ids[4], ids[4]]);
}

#[test]
fn forward_label_uses_resolve() {
    let src = load("module.ptx");
    let m = round_trip(&src);
    let (_, b) = function(&m, "kernel");
    let call = instructions(b).filter(|i| i.op == Opcode::Call).nth(1).expect("indirect call");
    let Operand::Label(proto) = *b.args(call).last().expect("prototype") else { panic!() };
    assert_eq!(b.labels[proto as usize], "proto_1");
    assert!(b.statements.iter().any(|s| matches!(s, Statement::CallPrototype { label, .. } if *label == proto)));
}

#[test]
fn symbol_plus_offset_values() {
    let src = load("module.ptx");
    let m = round_trip(&src);
    let (f, b) = function(&m, "kernel");
    let movs: Vec<Operand> = instructions(b).filter(|i| i.op == Opcode::Mov).map(|i| b.args(i)[1]).collect();
    let depot = f.vars.iter().position(|v| v.name == "__local_depot0").expect("depot") as VarId;
    let table = m.symbol_by_name("table").expect("table");
    let str_ = m.symbol_by_name("str").expect("str");
    assert_eq!(movs[0], Operand::Var(depot));
    assert_eq!(movs[1], Operand::VarOffset(depot, 16));
    assert_eq!(movs[2], Operand::GlobalOffset(table, 4));
    assert_eq!(movs[3], Operand::Global(str_));
    assert_eq!(movs[7], Operand::Imm(32), "WARP_SZ");
}

#[test]
fn sampler_initializer_fields() {
    let src = load("module.ptx");
    let m = round_trip(&src);
    let samp = m.variable(m.symbol_by_name("samp_a").expect("samp_a")).expect("variable");
    let Some(Initializer::List(fields)) = &samp.decl.init else { panic!("{:?}", samp.decl.init) };
    assert_eq!(fields[0], Initializer::Field { name: Flag::FilterMode, value: Box::new(Initializer::Word(Flag::Linear)) });
    assert_eq!(fields[4], Initializer::Field { name: Flag::ForceUnnormalizedCoords, value: Box::new(Initializer::Int(1)) });
    let warps = m.variable(m.symbol_by_name("warps").expect("warps")).expect("variable");
    assert_eq!(warps.decl.init, Some(Initializer::Int(64)));
    let expr = m.variable(m.symbol_by_name("expr").expect("expr")).expect("variable");
    assert_eq!(expr.decl.init, Some(Initializer::Int(8)));
}

#[test]
fn shadowing_register_in_a_block() {
    let src = load("module.ptx");
    let m = round_trip(&src);
    let (f, b) = function(&m, "kernel");
    let inner: Vec<&Instruction> = instructions(b).filter(|i| i.op == Opcode::Mov && matches!(b.args(i)[1], Operand::Imm(5))).collect();
    let Operand::Reg(r) = b.args(inner[0])[0] else { panic!() };
    // The block's own `%r1`, not member 1 of `%r<20>`.
    assert_eq!(b.regs[r as usize].index, None);
    assert_eq!(f.var(b.regs[r as usize].var).name, "%r1");
}

#[test]
fn vector_with_predicate_and_unified_address() {
    let src = load("texture.ptx");
    let m = round_trip(&src);
    let (_, b) = function(&m, "texture");
    let tex = instructions(b).find(|i| i.op == Opcode::Tex && matches!(b.args(i)[0], Operand::VectorPred(..)));
    assert!(tex.is_some());
    let src = load("memory.ptx");
    let m = round_trip(&src);
    let (_, b) = function(&m, "memory");
    let unified: Vec<&Instruction> = instructions(b).filter(|i| i.has(b, Flag::Unified)).collect();
    assert_eq!(unified.len(), 2);
    let printed = ptx::print(&m);
    assert!(printed.contains("ld.global.u32 %r1, [%rd1].unified;"), "{printed}");
}

#[test]
fn video_selectors_and_negation() {
    let src = load("video.ptx");
    let m = round_trip(&src);
    let (_, b) = function(&m, "video");
    let vmad = instructions(b).find(|i| i.op == Opcode::Vmad).expect("vmad");
    let args = b.args(vmad);
    let Operand::Video { neg: true, sel, .. } = args[1] else { panic!("{:?}", args[1]) };
    assert_eq!((sel.unit, sel.lanes()), (SelUnit::Half, &[0u8][..]));
    assert!(matches!(args[3], Operand::Video { neg: true, sel, .. } if sel.is_none()));
    let vadd4 = instructions(b).find(|i| i.op == Opcode::Vadd4).expect("vadd4");
    let Operand::Video { sel, .. } = b.args(vadd4)[1] else { panic!() };
    assert_eq!(sel.lanes(), &[7, 6, 5, 4]);
}

#[test]
fn sections_keep_their_text() {
    let src = load("module.ptx");
    let m = round_trip(&src);
    let sections: Vec<&str> = m.items.iter().filter_map(|i| if let Item::Section { name, .. } = i { Some(*name) } else { None }).collect();
    assert_eq!(sections, vec![".debug_abbrev", ".debug_info", ".debug_str", ".debug_macinfo"]);
}

/// `.global`/`.const` variables declared in a function body are module
/// variables that only the body names: references resolve to the module
/// symbol, the module keeps them once, and the printer writes them where
/// they were declared.
#[test]
fn function_scoped_globals_are_module_variables_named_in_their_body() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n\
               .reg .b32 %r;\n.global .align 4 .b32 fg[2] = {5, 6};\n.const .b32 fc;\nld.global.u32 %r, [fg+4];\nld.const.u32 %r, [fc];\nret;\n}\n";
    let m = round_trip(src);
    let vars: Vec<_> = m.variables().collect();
    assert_eq!(vars.len(), 2);
    assert!(vars.iter().all(|v| v.in_function));
    assert_eq!(m.symbol(vars[0].symbol).name, "fg");
    assert_eq!(vars[0].decl.space, StateSpace::Global);
    assert_eq!(vars[1].decl.space, StateSpace::Const);
    let f = m.kernels().next().unwrap();
    let b = f.body.as_ref().unwrap();
    let loads: Vec<Operand> = b
        .statements
        .iter()
        .filter_map(|s| match s {
            Statement::Instruction(i) if i.op == Opcode::Ld => Some(b.args(i)[1]),
            _ => None,
        })
        .collect();
    assert_eq!(loads, [Operand::AddrGlobal(vars[0].symbol, 4), Operand::AddrGlobal(vars[1].symbol, 0)]);
    // Outside the body the name means nothing.
    let outside = format!("{src}.visible .entry k2()\n{{\n.reg .b32 %r;\nld.global.u32 %r, [fg];\nret;\n}}\n");
    assert!(ptx::parse(&outside).is_err());
}

/// A vector-typed register's elements are registers of their own: `%v.y`
/// names element 1 (also as `%v.g`), and `%v` alone is the list of its
/// elements; both round-trip.
#[test]
fn vector_registers_resolve_to_their_elements() {
    let src = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n\
               .reg .v4 .f32 %v<2>;\n.reg .b64 %rd;\n.reg .f32 %f;\nld.global.v4.f32 %v1, [%rd];\nadd.f32 %f, %v1.y, %v1.g;\nret;\n}\n";
    let m = round_trip(src);
    let f = m.kernels().next().unwrap();
    let b = f.body.as_ref().unwrap();
    let insts: Vec<&Instruction> = b
        .statements
        .iter()
        .filter_map(|s| match s {
            Statement::Instruction(i) => Some(i),
            _ => None,
        })
        .collect();
    let Operand::Vector(l) = b.args(insts[0])[0] else { panic!("the whole register is a list") };
    let elems: Vec<Reg> = b.list(l).iter().map(|o| if let Operand::Reg(r) = o { b.regs[*r as usize] } else { panic!("{o:?}") }).collect();
    assert_eq!(elems.iter().map(|r| (r.index, r.element)).collect::<Vec<_>>(), (0..4).map(|e| (Some(1), Some(e))).collect::<Vec<_>>());
    let add = b.args(insts[1]);
    assert_eq!(add[1], add[2], "`.y` and `.g` are the same element");
    let Operand::Reg(y) = add[1] else { panic!() };
    assert_eq!(b.regs[y as usize].element, Some(1));
    assert!(ptx::print(&m).contains("%v1.y"));
}
