//! Helpers compiled once per process instead of once per unit.
//!
//! The lowering writes code that many sites would repeat as `noinline`
//! helper functions (warp mode's access helpers `__anycuda_wld_shaped_*`,
//! `__anycuda_wst_shaped_*`, its lane-by-lane gathers and scatters...),
//! once per unit. In the host's fast tier each
//! unit compiled its own copy again: on llama.cpp's PTX that was about a
//! tenth of a warp-mode unit's code generation (`llc -O1`, AVX-512 host:
//! 3 to 25 % of sixteen units between 60 and 130 ms, 20 % of a quantised
//! matrix-vector kernel's 82 ms). [`split`] instead leaves a declaration in
//! the unit and hands each such helper back as a module of its own
//! ([`crate::HelperCode`]), which the loader compiles once and links
//! every unit that calls it against.
//!
//! Only the fast tier shares helpers: its pipeline has no interprocedural
//! pass, so a caller is compiled the same against a declaration as against
//! the internal definition (the same attributes), while the optimised
//! pipeline would infer facts from a definition (what memory a helper
//! touches) that a declaration hides.

use crate::HelperCode;
use std::collections::{BTreeMap, BTreeSet};

/// The attribute groups every module of the lowering ends with (a
/// helper's text may name them).
pub(crate) const ATTRIBUTE_GROUPS: &str =
    "attributes #0 = { nounwind }\nattributes #1 = { nounwind strictfp }\nattributes #2 = { alwaysinline nounwind }\n";

/// The names `text` refers to with `@` (functions and globals); `None`
/// when one is quoted (`@"..."`: kernel symbols and variables, never a
/// helper's business).
fn references(text: &str) -> Option<BTreeSet<&str>> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find('@') {
        let start = i + at + 1;
        if bytes.get(start) == Some(&b'"') {
            return None;
        }
        let end = text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-')))
            .map_or(text.len(), |n| start + n);
        if end > start {
            out.insert(&text[start..end]);
        }
        i = end.max(start);
    }
    Some(out)
}

/// Whether a helper's text may be copied into another module: a function
/// or variable of internal linkage, with no metadata (whose numbers are
/// the unit's).
fn copyable(text: &str) -> bool {
    let head = text.lines().next().unwrap_or("");
    let internal = head.starts_with("define internal ") || head.contains(" = internal ") || head.contains(" = private ");
    internal && !text.contains('!')
}

/// Whether a helper is compiled apart: an out-of-line function.
fn shareable_kind(text: &str) -> bool {
    let head = text.lines().next().unwrap_or("");
    head.starts_with("define internal ") && head.ends_with('{') && head.contains(" noinline")
}

/// The declaration a unit keeps of the helper function defined by `text`
/// (its header without `internal` and the body's brace).
fn declaration(text: &str) -> String {
    let head = text.lines().next().unwrap_or("");
    let head = head.strip_prefix("define internal ").unwrap_or(head);
    format!("declare {}\n", head.trim_end_matches('{').trim_end())
}

/// Splits a unit's helpers (`helpers`: name to definition text, `decls`:
/// its external declarations) into what the unit's text keeps (the
/// definitions of the helpers not shared, declarations of those shared)
/// and the shared helpers' own modules.
///
/// Invariants: a helper is shared exactly when it is a `noinline` function
/// whose text, and that of every helper it calls or reads (transitively),
/// refers to nothing but declarations of `decls` and helpers that may be
/// copied ([`copyable`]); its module holds its definition (external
/// linkage, the only one), copies of those helpers, the declarations they
/// name and the attribute groups, in a deterministic order, so equal
/// modules are the same code.
pub(crate) fn split(helpers: &BTreeMap<String, String>, decls: &BTreeMap<String, String>) -> (String, Vec<HelperCode>) {
    // Which helpers are self-contained: the greatest set whose members
    // refer only to declarations and members (a fixed point from all).
    let refs: BTreeMap<&str, Option<BTreeSet<&str>>> = helpers.iter().map(|(n, t)| (n.as_str(), references(t))).collect();
    let mut contained: BTreeSet<&str> = helpers.iter().filter(|(_, t)| copyable(t)).map(|(n, _)| n.as_str()).collect();
    loop {
        let next: BTreeSet<&str> = contained
            .iter()
            .copied()
            .filter(|n| refs[n].as_ref().is_some_and(|r| r.iter().all(|x| x == n || decls.contains_key(*x) || contained.contains(x))))
            .collect();
        if next.len() == contained.len() {
            break;
        }
        contained = next;
    }
    let mut unit = String::new();
    let mut shared = Vec::new();
    for (name, text) in helpers {
        if !(contained.contains(name.as_str()) && shareable_kind(text)) {
            unit.push_str(text);
            unit.push('\n');
            continue;
        }
        unit.push_str(&declaration(text));
        // The helpers it reaches, then the declarations they all name.
        let mut reached = BTreeSet::from([name.as_str()]);
        let mut work = vec![name.as_str()];
        while let Some(n) = work.pop() {
            for r in refs[n].iter().flatten() {
                if helpers.contains_key(*r) && reached.insert(r) {
                    work.push(r);
                }
            }
        }
        let mut ir = String::new();
        let named: BTreeSet<&str> = reached.iter().flat_map(|n| refs[n].iter().flatten().copied()).collect();
        for d in named.iter().filter_map(|n| decls.get(*n)) {
            ir.push_str(d);
            ir.push('\n');
        }
        for n in &reached {
            let t = &helpers[*n];
            if *n == name.as_str() {
                ir.push_str("define ");
                ir.push_str(t.strip_prefix("define internal ").unwrap_or(t));
            } else {
                ir.push_str(t);
            }
            ir.push('\n');
        }
        ir.push_str(ATTRIBUTE_GROUPS);
        shared.push(HelperCode { name: name.clone(), ir });
    }
    (unit, shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
    }

    #[test]
    fn a_self_contained_noinline_helper_is_declared_and_handed_back_with_what_it_calls() {
        let helpers = map(&[
            ("h", "define internal i32 @h(i32 %x) noinline nounwind {\nentry:\n  %y = call i32 @g(i32 %x)\n  %z = call i32 @llvm.abs.i32(i32 %y, i1 0)\n  ret i32 %z\n}\n"),
            ("g", "define internal i32 @g(i32 %x) nounwind {\nentry:\n  ret i32 %x\n}\n"),
        ]);
        let decls = map(&[("llvm.abs.i32", "declare i32 @llvm.abs.i32(i32, i1)"), ("other", "declare void @other()")]);
        let (unit, shared) = split(&helpers, &decls);
        // `g` is not out of line: the unit keeps its definition (and so
        // may inline it); `h` becomes a declaration.
        assert!(unit.contains("define internal i32 @g("), "{unit}");
        assert!(unit.contains("declare i32 @h(i32 %x) noinline nounwind\n"), "{unit}");
        assert!(!unit.contains("define internal i32 @h("), "{unit}");
        assert_eq!(shared.len(), 1);
        assert_eq!(shared[0].name, "h");
        let ir = &shared[0].ir;
        assert!(ir.contains("define i32 @h(i32 %x) noinline nounwind {"), "{ir}");
        assert!(ir.contains("define internal i32 @g("), "{ir}");
        assert!(ir.contains("declare i32 @llvm.abs.i32(i32, i1)"), "{ir}");
        assert!(!ir.contains("@other"), "only the declarations it names: {ir}");
    }

    #[test]
    fn helpers_that_reach_unit_symbols_or_metadata_stay_in_the_unit() {
        let helpers = map(&[
            ("reads_var", "define internal void @reads_var() noinline {\nentry:\n  %v = load i32, ptr @\"var\"\n  ret void\n}\n"),
            ("calls_it", "define internal void @calls_it() noinline {\nentry:\n  call void @reads_var()\n  ret void\n}\n"),
            ("loops", "define internal void @loops() noinline {\nentry:\n  br label %entry, !llvm.loop !1\n}\n"),
            ("undeclared", "define internal void @undeclared() noinline {\nentry:\n  call void @nowhere()\n  ret void\n}\n"),
        ]);
        let (unit, shared) = split(&helpers, &BTreeMap::new());
        assert!(shared.is_empty(), "{shared:?}");
        for n in ["reads_var", "calls_it", "loops", "undeclared"] {
            assert!(unit.contains(&format!("define internal void @{n}(")), "{n}: {unit}");
        }
    }

    #[test]
    fn references_read_bare_names_and_refuse_quoted_ones() {
        let r = references("call <4 x i32> @llvm.masked.load.v4i32.p0(ptr %p) ; @x.1$y").expect("bare names");
        assert_eq!(r.into_iter().collect::<Vec<_>>(), vec!["llvm.masked.load.v4i32.p0", "x.1$y"]);
        assert!(references("load i32, ptr @\"k\"").is_none());
    }
}
