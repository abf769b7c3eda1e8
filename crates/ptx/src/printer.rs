//! Writes a module back as PTX text that parses to the same tree.

use crate::ast::*;
use std::fmt::Write;

pub fn print(m: &Module) -> String {
    let mut out = String::new();
    let _ = write_module(&mut out, m);
    out
}

fn write_module(o: &mut String, m: &Module) -> std::fmt::Result {
    writeln!(o, ".version {}.{}", m.version.major, m.version.minor)?;
    if !m.target.words.is_empty() {
        writeln!(o, ".target {}", m.target.words.join(", "))?;
    }
    writeln!(o, ".address_size {}", m.address_size)?;
    for item in &m.items {
        writeln!(o)?;
        match item {
            Item::Function(f) => write_function(o, m, f)?,
            // A variable declared in a function body is printed there.
            Item::Variable(v) if v.in_function => {}
            Item::Variable(v) => {
                write_decl(o, m, &v.decl)?;
                o.push_str(";\n");
            }
            Item::File { index, name, extra } => {
                write!(o, ".file {index} \"{name}\"")?;
                for e in extra {
                    write!(o, ", {e}")?;
                }
                o.push('\n');
            }
            Item::Section { name, body } => writeln!(o, ".section {name} {{{body}}}")?,
            Item::Pragma(p) => writeln!(o, ".pragma \"{p}\";")?,
            Item::Alias { alias, target } => writeln!(o, ".alias {}, {};", m.symbol(*alias).name, m.symbol(*target).name)?,
        }
    }
    Ok(())
}

fn write_decl(o: &mut String, m: &Module, d: &VarDecl) -> std::fmt::Result {
    if let Some(l) = d.linkage {
        write!(o, ".{} ", l.as_str())?;
    }
    write!(o, ".{}", d.space)?;
    if !d.attributes.is_empty() {
        o.push_str(" .attribute(");
        for (i, a) in d.attributes.iter().enumerate() {
            if i > 0 {
                o.push_str(", ");
            }
            write!(o, ".{a}")?;
        }
        o.push(')');
    }
    if let Some(a) = d.align {
        write!(o, " .align {a}")?;
    }
    if d.vector != 0 {
        write!(o, " .v{}", d.vector)?;
    }
    write!(o, " .{}", d.ty)?;
    if let Some(p) = d.ptr {
        o.push_str(" .ptr");
        if let Some(s) = p.space {
            write!(o, " .{s}")?;
        }
        if let Some(a) = p.align {
            write!(o, " .align {a}")?;
        }
    }
    write!(o, " {}", d.name)?;
    if let Some(c) = d.count {
        write!(o, "<{c}>")?;
    }
    for dim in &d.dims {
        match dim {
            Some(n) => write!(o, "[{n}]")?,
            None => o.push_str("[]"),
        }
    }
    if let Some(init) = &d.init {
        o.push_str(" = ");
        write_init(o, m, init)?;
    }
    Ok(())
}

fn write_init(o: &mut String, m: &Module, i: &Initializer) -> std::fmt::Result {
    match i {
        Initializer::Int(v) => write!(o, "{v}"),
        Initializer::F32(b) => write!(o, "0f{b:08X}"),
        Initializer::F64(b) => write!(o, "0d{b:016X}"),
        Initializer::Symbol { symbol, offset, generic } => {
            let name = m.symbol(*symbol).name;
            if *generic {
                write!(o, "generic({name})")?;
            } else {
                o.push_str(name);
            }
            write_offset(o, *offset)
        }
        Initializer::List(items) => {
            o.push('{');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    o.push_str(", ");
                }
                write_init(o, m, item)?;
            }
            o.push('}');
            Ok(())
        }
        Initializer::Field { name, value } => {
            write!(o, "{name} = ")?;
            write_init(o, m, value)
        }
        Initializer::Word(w) => write!(o, "{w}"),
        Initializer::Mask { mask, value } => {
            write!(o, "0x{mask:X}(")?;
            write_init(o, m, value)?;
            o.push(')');
            Ok(())
        }
    }
}

fn write_offset(o: &mut String, offset: i64) -> std::fmt::Result {
    if offset > 0 {
        write!(o, "+{offset}")
    } else if offset < 0 {
        write!(o, "-{}", (offset as i128).unsigned_abs())
    } else {
        Ok(())
    }
}

fn write_params(o: &mut String, m: &Module, f: &Function, ids: &[VarId]) -> std::fmt::Result {
    o.push('(');
    for (i, &v) in ids.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        write_decl(o, m, f.var(v))?;
    }
    o.push(')');
    Ok(())
}

fn write_function(o: &mut String, m: &Module, f: &Function) -> std::fmt::Result {
    if let Some(l) = f.linkage {
        write!(o, ".{} ", l.as_str())?;
    }
    match f.kind {
        FunctionKind::Entry => o.push_str(".entry "),
        FunctionKind::Func => {
            o.push_str(".func ");
            if !f.returns.is_empty() {
                write_params(o, m, f, &f.returns)?;
                o.push(' ');
            }
        }
    }
    o.push_str(f.name);
    write_params(o, m, f, &f.params)?;
    for d in &f.directives {
        o.push('\n');
        write_directive(o, d)?;
    }
    let Some(body) = &f.body else {
        o.push_str(";\n");
        return Ok(());
    };
    o.push_str("\n{\n");
    let mut depth = 1usize;
    for s in &body.statements {
        if matches!(s, Statement::BlockClose) {
            depth = depth.saturating_sub(1);
        }
        for _ in 0..depth {
            o.push('\t');
        }
        write_statement(o, m, f, body, s)?;
        o.push('\n');
        if matches!(s, Statement::BlockOpen) {
            depth += 1;
        }
    }
    o.push_str("}\n");
    Ok(())
}

fn write_directive(o: &mut String, d: &PerfDirective) -> std::fmt::Result {
    let list = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    match d {
        PerfDirective::Maxntid(v) => write!(o, ".maxntid {}", list(v)),
        PerfDirective::Reqntid(v) => write!(o, ".reqntid {}", list(v)),
        PerfDirective::Minnctapersm(n) => write!(o, ".minnctapersm {n}"),
        PerfDirective::Maxnctapersm(n) => write!(o, ".maxnctapersm {n}"),
        PerfDirective::Maxnreg(n) => write!(o, ".maxnreg {n}"),
        PerfDirective::Noreturn => write!(o, ".noreturn"),
        PerfDirective::Explicitcluster => write!(o, ".explicitcluster"),
        PerfDirective::Reqnctapercluster(v) => write!(o, ".reqnctapercluster {}", list(v)),
        PerfDirective::Maxclusterrank(n) => write!(o, ".maxclusterrank {n}"),
        PerfDirective::AbiPreserve(n) => write!(o, ".abi_preserve {n}"),
        PerfDirective::AbiPreserveControl(n) => write!(o, ".abi_preserve_control {n}"),
        PerfDirective::Pragma(v) => {
            let quoted: Vec<String> = v.iter().map(|s| format!("\"{s}\"")).collect();
            write!(o, ".pragma {};", quoted.join(", "))
        }
    }
}

/// The source name of a register.
pub fn reg_name(f: &Function, body: &Body, r: RegId) -> String {
    let reg = body.regs[r as usize];
    let name = f.var(reg.var).name;
    let base = match reg.index {
        Some(i) => format!("{name}{i}"),
        None => name.to_string(),
    };
    match reg.element {
        Some(e) => format!("{base}.{}", ["x", "y", "z", "w"].get(e as usize).copied().unwrap_or("x")),
        None => base,
    }
}

fn write_statement(o: &mut String, m: &Module, f: &Function, b: &Body, s: &Statement) -> std::fmt::Result {
    match s {
        Statement::Instruction(i) => write_instruction(o, m, f, b, i),
        Statement::Label(l) => write!(o, "{}:", b.labels[*l as usize]),
        Statement::Decl(v) => {
            write_decl(o, m, f.var(*v))?;
            o.push(';');
            Ok(())
        }
        Statement::BlockOpen => write!(o, "{{"),
        Statement::BlockClose => write!(o, "}}"),
        Statement::Loc { file, line, column, extra } => {
            write!(o, ".loc {file} {line} {column}")?;
            if let Some(e) = extra {
                write!(o, " {}", b.strings[*e as usize])?;
            }
            Ok(())
        }
        Statement::Pragma(p) => write!(o, ".pragma \"{}\";", b.strings[*p as usize]),
        Statement::BranchTargets { label, targets } | Statement::CallTargets { label, targets } => {
            let kw = if matches!(s, Statement::BranchTargets { .. }) { "branchtargets" } else { "calltargets" };
            write!(o, "{}: .{kw} ", b.labels[*label as usize])?;
            write_list(o, m, f, b, b.list(*targets))?;
            o.push(';');
            Ok(())
        }
        Statement::CallPrototype { label, proto } => {
            let p = &b.prototypes[*proto as usize];
            write!(o, "{}: .callprototype ", b.labels[*label as usize])?;
            if !p.returns.is_empty() {
                write_proto_params(o, &p.returns)?;
                o.push(' ');
            }
            o.push('_');
            o.push(' ');
            write_proto_params(o, &p.params)?;
            if p.noreturn {
                o.push_str(" .noreturn");
            }
            o.push(';');
            Ok(())
        }
    }
}

fn write_proto_params(o: &mut String, ps: &[ProtoParam]) -> std::fmt::Result {
    o.push('(');
    for (i, p) in ps.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        write!(o, ".{}", p.space)?;
        if let Some(a) = p.align {
            write!(o, " .align {a}")?;
        }
        write!(o, " .{} _", p.ty)?;
        for d in &p.dims {
            match d {
                Some(n) => write!(o, "[{n}]")?,
                None => o.push_str("[]"),
            }
        }
    }
    o.push(')');
    Ok(())
}

fn write_instruction(o: &mut String, m: &Module, f: &Function, b: &Body, i: &Instruction) -> std::fmt::Result {
    if let Some(g) = i.guard {
        write!(o, "@{}{} ", if g.negate { "!" } else { "" }, reg_name(f, b, g.reg))?;
    }
    o.push_str(i.op.as_str());
    let mut mods = b.mods(i);
    let args = b.args(i);
    // `ld ... d, [a].unified` writes `.unified` after the address; the parser
    // keeps it as the last modifier.
    let unified_after = i.op == Opcode::Ld && args.len() >= 2 && mods.last() == Some(&Modifier::Flag(Flag::Unified));
    if unified_after {
        mods = &mods[..mods.len() - 1];
    }
    for md in mods {
        write_modifier(o, md)?;
    }
    if !args.is_empty() {
        o.push(' ');
        for (k, op) in args.iter().enumerate() {
            if k > 0 {
                o.push_str(", ");
            }
            write_operand(o, m, f, b, op)?;
            if unified_after && k == 1 {
                o.push_str(".unified");
            }
        }
    }
    o.push(';');
    Ok(())
}

pub fn write_modifier(o: &mut String, md: &Modifier) -> std::fmt::Result {
    match md {
        Modifier::Type(t) => write!(o, ".{t}"),
        Modifier::Round(r) => write!(o, ".{r}"),
        Modifier::Space(s) => write!(o, ".{s}"),
        Modifier::Scope(s) => write!(o, ".{s}"),
        Modifier::Sem(s) => write!(o, ".{s}"),
        Modifier::Cache(c) => write!(o, ".{c}"),
        Modifier::Cmp(c) => write!(o, ".{c}"),
        Modifier::Vec(n) => write!(o, ".v{n}"),
        Modifier::Flag(fl) => write!(o, ".{fl}"),
        Modifier::Shape(s) => {
            write!(o, ".m{}n{}", s.m, s.n)?;
            if s.k != 0 {
                write!(o, "k{}", s.k)?;
            }
            Ok(())
        }
    }
}

fn write_list(o: &mut String, m: &Module, f: &Function, b: &Body, ops: &[Operand]) -> std::fmt::Result {
    for (k, op) in ops.iter().enumerate() {
        if k > 0 {
            o.push_str(", ");
        }
        write_operand(o, m, f, b, op)?;
    }
    Ok(())
}

fn write_operand(o: &mut String, m: &Module, f: &Function, b: &Body, op: &Operand) -> std::fmt::Result {
    match *op {
        Operand::Reg(r) => o.push_str(&reg_name(f, b, r)),
        Operand::NotReg(r) => write!(o, "!{}", reg_name(f, b, r))?,
        Operand::RegComponent(r, c) => write!(o, "{}.{}", reg_name(f, b, r), ["x", "y", "z", "w"][c as usize & 3])?,
        Operand::PredPair(p, q) => write!(o, "{}|{}", reg_name(f, b, p), reg_name(f, b, q))?,
        Operand::Special(s, c) => {
            o.push_str(&s.name());
            if s.is_vector() {
                write!(o, ".{}", ["x", "y", "z"][c as usize % 3])?;
            }
        }
        Operand::Var(v) => o.push_str(f.var(v).name),
        Operand::Global(s) => o.push_str(m.symbol(s).name),
        Operand::Label(l) => o.push_str(b.labels[l as usize]),
        Operand::Imm(v) => write!(o, "{v}")?,
        Operand::F32(bits) => write!(o, "0f{bits:08X}")?,
        Operand::F64(bits) => write!(o, "0d{bits:016X}")?,
        Operand::AddrReg(r, off) => {
            write!(o, "[{}", reg_name(f, b, r))?;
            write_offset(o, off)?;
            o.push(']');
        }
        Operand::AddrVar(v, off) => {
            write!(o, "[{}", f.var(v).name)?;
            write_offset(o, off)?;
            o.push(']');
        }
        Operand::AddrGlobal(s, off) => {
            write!(o, "[{}", m.symbol(s).name)?;
            write_offset(o, off)?;
            o.push(']');
        }
        Operand::AddrImm(v) => write!(o, "[{v}]")?,
        Operand::Vector(l) => {
            o.push('{');
            write_list(o, m, f, b, b.list(l))?;
            o.push('}');
        }
        Operand::Paren(l) => {
            o.push('(');
            write_list(o, m, f, b, b.list(l))?;
            o.push(')');
        }
        Operand::Bracket(l) => {
            o.push('[');
            write_list(o, m, f, b, b.list(l))?;
            o.push(']');
        }
        Operand::Sink => o.push('_'),
        Operand::GlobalOffset(s, off) => {
            o.push_str(m.symbol(s).name);
            write_offset(o, off)?;
        }
        Operand::VarOffset(v, off) => {
            o.push_str(f.var(v).name);
            write_offset(o, off)?;
        }
        Operand::SinkPred(p) => write!(o, "_|{}", reg_name(f, b, p))?,
        Operand::VectorPred(l, p) => {
            o.push('{');
            write_list(o, m, f, b, b.list(l))?;
            write!(o, "}}|{}", reg_name(f, b, p))?;
        }
        Operand::Video { reg, neg, sel } => {
            if neg {
                o.push('-');
            }
            o.push_str(&reg_name(f, b, reg));
            if !sel.is_none() {
                o.push_str(if sel.unit == SelUnit::Byte { ".b" } else { ".h" });
                for &l in sel.lanes() {
                    o.push((b'0' + l) as char);
                }
            }
        }
    }
    Ok(())
}
