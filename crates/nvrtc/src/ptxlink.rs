//! Linking PTX modules into one PTX module, as nvJitLink and the CUDA
//! driver's linker do before they generate machine code.
//!
//! PTX compiled with `-rdc=true` (separate compilation) declares what other
//! modules define with `.extern`. Linking resolves those against the
//! `.visible`/`.weak`/`.common` definitions of the other modules and makes
//! one module of them:
//!
//! - a function declared `.extern` and defined elsewhere keeps its
//!   declaration, with the definition's linkage (a forward declaration,
//!   so calls before the definition resolve); one defined nowhere (such as
//!   `vprintf`, which the driver provides) stays `.extern`, once;
//! - a variable declared `.extern` and defined elsewhere has the
//!   definition moved to the place of its first declaration;
//! - `.weak` (and `.common`) definitions: the first one is kept, unless a
//!   `.visible` one exists; two `.visible` definitions of one name are an
//!   error, as for any linker;
//! - names without linkage (internal: `static` functions, string
//!   constants such as `$str`) are private to their module: a clash with a
//!   name of another module is resolved by renaming the later module's;
//! - `.extern .shared` arrays (dynamic shared memory) are declared once
//!   per name;
//! - the `.version` is the highest, the `.target` the highest
//!   architecture's; `.address_size` must agree.
//!
//! Debug information (`.file`, `.loc`, `.section`) is dropped when several
//! modules are linked: its file numbers would clash.

use std::collections::{HashMap, HashSet};

/// One top-level statement of a module.
#[derive(Debug, Clone)]
struct Item {
    text: String,
    kind: Kind,
    linkage: Linkage,
    name: Option<String>,
    /// A function with a body, or a variable not `.extern`.
    definition: bool,
    shared: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Function,
    Variable,
    /// `.file`, `.section`, `.pragma` and the like.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linkage {
    None,
    Extern,
    Visible,
    Weak,
    Common,
}

impl Linkage {
    fn directive(self) -> &'static str {
        match self {
            Linkage::None => "",
            Linkage::Extern => ".extern",
            Linkage::Visible => ".visible",
            Linkage::Weak => ".weak",
            Linkage::Common => ".common",
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Module {
    version: Option<(u32, u32)>,
    target: Option<String>,
    address_size: Option<String>,
    items: Vec<Item>,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// Skips a comment or string starting at `i`; returns the index after it,
/// or `None` when there is none at `i`.
fn skip_comment(b: &[u8], i: usize) -> Option<usize> {
    if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
        let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
        return Some(end);
    }
    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
        let end = b[i + 2..].windows(2).position(|w| w == b"*/").map_or(b.len(), |p| i + 2 + p + 2);
        return Some(end);
    }
    if b[i] == b'"' {
        let mut j = i + 1;
        while j < b.len() && b[j] != b'"' {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        return Some((j + 1).min(b.len()));
    }
    None
}

/// The words of `text` outside comments: directives (`.func`),
/// identifiers, numbers and single punctuation characters.
fn words(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if let Some(j) = skip_comment(b, i) {
            i = j;
            continue;
        }
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'.' || is_ident_start(c) || c.is_ascii_digit() {
            let s = i;
            i += 1;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            out.push(&text[s..i]);
        } else {
            out.push(&text[i..i + 1]);
            i += 1;
        }
    }
    out
}

/// Splits a module into its header directives and top-level items.
fn parse(text: &str) -> Result<Module, String> {
    let b = text.as_bytes();
    let mut m = Module::default();
    let mut i = 0;
    while i < b.len() {
        if let Some(j) = skip_comment(b, i) {
            i = j;
            continue;
        }
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let line_end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
        let first = words(&text[i..line_end]).first().copied().unwrap_or("");
        if matches!(first, ".version" | ".target" | ".address_size") {
            let line = text[i..line_end].split("//").next().unwrap_or("").trim();
            let value = line[first.len()..].trim().to_string();
            match first {
                ".version" => {
                    let (a, c) = value.split_once('.').ok_or_else(|| format!("bad .version {value}"))?;
                    m.version = Some((
                        a.trim().parse().map_err(|_| format!("bad .version {value}"))?,
                        c.trim().parse().map_err(|_| format!("bad .version {value}"))?,
                    ));
                }
                ".target" => m.target = Some(value),
                _ => m.address_size = Some(value),
            }
            i = line_end;
            continue;
        }
        if first == ".file" {
            m.items.push(Item {
                text: text[i..line_end].to_string(),
                kind: Kind::Other,
                linkage: Linkage::None,
                name: Some(".file".into()),
                definition: false,
                shared: false,
            });
            i = line_end;
            continue;
        }
        // A statement: up to `;` at depth 0, or the `}` closing a body
        // (not an initializer's `= {...}`, which a `;` follows).
        let mut depth = 0usize;
        let mut saw_eq = false;
        let mut end = None;
        while i < b.len() {
            if let Some(j) = skip_comment(b, i) {
                i = j;
                continue;
            }
            match b[i] {
                b'{' | b'(' | b'[' => depth += 1,
                b'}' | b')' | b']' => {
                    depth = depth.checked_sub(1).ok_or_else(|| format!("unbalanced '{}' at byte {i}", b[i] as char))?;
                    if depth == 0 && b[i] == b'}' && !saw_eq {
                        end = Some(i + 1);
                    }
                }
                b'=' if depth == 0 => saw_eq = true,
                b';' if depth == 0 => end = Some(i + 1),
                _ => {}
            }
            i += 1;
            if end.is_some() {
                break;
            }
        }
        let end = end.ok_or_else(|| format!("unterminated statement at byte {start}"))?;
        m.items.push(item(&text[start..end]));
    }
    Ok(m)
}

fn item(text: &str) -> Item {
    let w = words(text);
    let head: Vec<&str> = w.iter().copied().take_while(|t| !matches!(*t, "{" | ";" | "=")).collect();
    let linkage = if head.contains(&".extern") {
        Linkage::Extern
    } else if head.contains(&".visible") {
        Linkage::Visible
    } else if head.contains(&".weak") {
        Linkage::Weak
    } else if head.contains(&".common") {
        Linkage::Common
    } else {
        Linkage::None
    };
    let body = text.trim_end().ends_with('}');
    if let Some(p) = head.iter().position(|t| *t == ".func" || *t == ".entry") {
        // `.func (.param ...) name (...)`: skip the return parameters.
        let mut k = p + 1;
        if head[p] == ".func" && head.get(k) == Some(&"(") {
            let mut depth = 0;
            while k < head.len() {
                match head[k] {
                    "(" => depth += 1,
                    ")" => {
                        depth -= 1;
                        if depth == 0 {
                            k += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
        }
        let name = head.get(k).filter(|t| is_ident_start(t.as_bytes()[0])).map(|s| s.to_string());
        return Item { text: text.to_string(), kind: Kind::Function, linkage, name, definition: body, shared: false };
    }
    const SPACES: [&str; 6] = [".global", ".const", ".shared", ".local", ".tex", ".param"];
    if head.iter().any(|t| SPACES.contains(t)) {
        let mut depth = 0;
        let mut name = None;
        for t in &head {
            match *t {
                "(" => depth += 1,
                ")" => depth -= 1,
                _ if depth == 0 && is_ident_start(t.as_bytes()[0]) => {
                    name = Some(t.to_string());
                    break;
                }
                _ => {}
            }
        }
        let shared = head.contains(&".shared");
        return Item { text: text.to_string(), kind: Kind::Variable, linkage, name, definition: linkage != Linkage::Extern, shared };
    }
    Item { text: text.to_string(), kind: Kind::Other, linkage, name: head.first().map(|s| s.to_string()), definition: false, shared: false }
}

/// Renames whole identifiers of `text` after `map`.
fn rename(text: &str, map: &HashMap<String, String>) -> String {
    if map.is_empty() {
        return text.to_string();
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if let Some(j) = skip_comment(b, i) {
            out.push_str(&text[i..j]);
            i = j;
            continue;
        }
        let c = b[i];
        if is_ident_start(c) || c == b'.' || c.is_ascii_digit() {
            let s = i;
            i += 1;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let w = &text[s..i];
            match map.get(w) {
                Some(n) if c != b'.' => out.push_str(n),
                _ => out.push_str(w),
            }
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn target_arch(target: &str) -> u32 {
    target
        .split(',')
        .filter_map(|t| t.trim().strip_prefix("sm_"))
        .filter_map(|t| t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok())
        .max()
        .unwrap_or(0)
}

/// Links `modules` (name, PTX text) into one PTX module; the error names
/// what could not be linked.
pub fn link(modules: &[(String, String)]) -> Result<String, String> {
    match modules {
        [] => return Err("no PTX to link".into()),
        [(_, one)] => return Ok(one.trim_end_matches('\0').to_string()),
        _ => {}
    }
    let mut parsed = Vec::with_capacity(modules.len());
    for (name, text) in modules {
        parsed.push(parse(text.trim_end_matches('\0')).map_err(|e| format!("{name}: {e}"))?);
    }
    // Names with linkage, defined: the chosen definition (module, item).
    let mut defs: HashMap<String, (usize, usize, Linkage)> = HashMap::new();
    for (mi, m) in parsed.iter().enumerate() {
        for (ii, it) in m.items.iter().enumerate() {
            let Some(name) = &it.name else { continue };
            if !it.definition || it.kind == Kind::Other || matches!(it.linkage, Linkage::None | Linkage::Extern) {
                continue;
            }
            match defs.get(name) {
                None => {
                    defs.insert(name.clone(), (mi, ii, it.linkage));
                }
                Some(&(pm, _, Linkage::Visible)) if it.linkage == Linkage::Visible => {
                    return Err(format!("multiple definition of '{name}' (in {} and {})", modules[pm].0, modules[mi].0));
                }
                Some(&(_, _, prev)) if prev != Linkage::Visible && it.linkage == Linkage::Visible => {
                    defs.insert(name.clone(), (mi, ii, it.linkage));
                }
                Some(_) => {}
            }
        }
    }
    // Internal names clashing with any name of an earlier module, or with
    // a name with linkage anywhere, are renamed.
    let mut taken: HashSet<String> = defs.keys().cloned().collect();
    for m in &parsed {
        for it in &m.items {
            if let (Some(n), Linkage::Extern) = (&it.name, it.linkage) {
                taken.insert(n.clone());
            }
        }
    }
    for (mi, m) in parsed.iter_mut().enumerate() {
        let mut map = HashMap::new();
        for it in &m.items {
            let Some(n) = &it.name else { continue };
            if it.linkage != Linkage::None || it.kind == Kind::Other {
                continue;
            }
            if taken.contains(n) {
                let mut k = 0;
                let new = loop {
                    let c = format!("{n}_m{mi}_{k}");
                    if !taken.contains(&c) {
                        break c;
                    }
                    k += 1;
                };
                map.insert(n.clone(), new);
            }
        }
        for it in &m.items {
            if let (Some(n), Linkage::None, false) = (&it.name, it.linkage, it.kind == Kind::Other) {
                taken.insert(map.get(n).cloned().unwrap_or_else(|| n.clone()));
            }
        }
        if !map.is_empty() {
            for it in &mut m.items {
                it.text = rename(&it.text, &map);
                if let Some(n) = &it.name {
                    if let Some(new) = map.get(n) {
                        it.name = Some(new.clone());
                    }
                }
            }
        }
    }
    // Header.
    let version = parsed.iter().filter_map(|m| m.version).max().ok_or("no .version directive")?;
    let target = parsed.iter().filter_map(|m| m.target.as_deref()).max_by_key(|t| target_arch(t)).ok_or("no .target directive")?;
    let sizes: HashSet<&str> = parsed.iter().filter_map(|m| m.address_size.as_deref()).collect();
    if sizes.len() > 1 {
        return Err(format!("modules disagree on .address_size ({})", sizes.into_iter().collect::<Vec<_>>().join(", ")));
    }
    let mut out = format!(
        "//\n// Linked by anycuda from {} PTX modules\n//\n\n.version {}.{}\n.target {target}\n",
        modules.len(),
        version.0,
        version.1
    );
    if let Some(s) = sizes.into_iter().next() {
        out.push_str(&format!(".address_size {s}\n"));
    }
    let mut emitted_defs: HashSet<String> = HashSet::new();
    let mut declared: HashSet<String> = HashSet::new();
    for (mi, m) in parsed.iter().enumerate() {
        for (ii, it) in m.items.iter().enumerate() {
            if it.kind == Kind::Other {
                let debug = matches!(it.name.as_deref(), Some(".file" | ".section"));
                if !debug {
                    out.push('\n');
                    out.push_str(&it.text);
                    out.push('\n');
                }
                continue;
            }
            let Some(name) = it.name.clone() else {
                out.push('\n');
                out.push_str(&it.text);
                out.push('\n');
                continue;
            };
            let text = match (it.kind, it.linkage, it.definition) {
                (_, Linkage::Extern, _) if it.shared => {
                    if !declared.insert(name.clone()) {
                        continue;
                    }
                    it.text.clone()
                }
                (Kind::Function, Linkage::Extern, _) => {
                    if emitted_defs.contains(&name) || !declared.insert(name.clone()) {
                        continue;
                    }
                    match defs.get(&name) {
                        Some(&(_, _, l)) => it.text.replacen(".extern", l.directive(), 1),
                        None => it.text.clone(),
                    }
                }
                (Kind::Variable, Linkage::Extern, _) => match defs.get(&name) {
                    Some(&(dm, di, _)) => {
                        if !emitted_defs.insert(name.clone()) {
                            continue;
                        }
                        parsed[dm].items[di].text.clone()
                    }
                    None => {
                        if !declared.insert(name.clone()) {
                            continue;
                        }
                        it.text.clone()
                    }
                },
                (_, Linkage::Visible | Linkage::Weak | Linkage::Common, true) => {
                    if defs.get(&name).map(|&(dm, di, _)| (dm, di)) != Some((mi, ii)) || !emitted_defs.insert(name.clone()) {
                        continue;
                    }
                    it.text.clone()
                }
                (Kind::Function, Linkage::Visible | Linkage::Weak | Linkage::Common, false) => {
                    // A forward declaration of a function with linkage.
                    if emitted_defs.contains(&name) || !declared.insert(name.clone()) {
                        continue;
                    }
                    it.text.clone()
                }
                _ => it.text.clone(),
            };
            out.push('\n');
            out.push_str(&strip_debug(&text));
            out.push('\n');
        }
    }
    Ok(out)
}

/// `text` without its `.loc` lines (their file numbers are per module).
fn strip_debug(text: &str) -> String {
    let is_loc = |l: &str| l.trim_start().strip_prefix(".loc").is_some_and(|r| r.starts_with(char::is_whitespace));
    if !text.lines().any(is_loc) {
        return text.to_string();
    }
    text.lines().filter(|l| !is_loc(l)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let out = link(&[("a".into(), CALLER.into()), ("b".into(), CALLEE.into())]).unwrap();
        assert!(out.contains(".version 8.5\n.target sm_86\n.address_size 64\n"), "{out}");
        // f: forward-declared with the definition's linkage, then defined.
        assert_eq!(count(&out, ".extern .func  (.param .b32 func_retval0) f\n"), 0, "{out}");
        assert_eq!(count(&out, ".visible .func  (.param .b32 func_retval0) f"), 2, "{out}");
        // vprintf: defined nowhere, declared once.
        assert_eq!(count(&out, ".extern .func  (.param .b32 func_retval0) vprintf"), 1, "{out}");
        // scale: the definition took the declaration's place.
        assert_eq!(count(&out, "scale"), 1, "{out}");
        let def = out.find(".visible .global .align 4 .u32 scale = 3;").unwrap();
        assert!(def < out.find(".visible .entry k").unwrap(), "{out}");
        // sm: once.
        assert_eq!(count(&out, ".extern .shared .align 4 .b8 sm[];"), 1, "{out}");
        // $str: the second module's is renamed, its uses with it.
        assert_eq!(count(&out, ".global .align 1 .b8 $str[3] = {104, 105, 0};"), 1, "{out}");
        assert_eq!(count(&out, ".global .align 1 .b8 $str_m1_0[3] = {104, 111, 0};"), 1, "{out}");
        assert!(out.contains("mov.u64 %rd1, $str_m1_0;"), "{out}");
        // Local variables stay; line information goes.
        assert!(out.contains(".local .align 8 .b8 __local_depot0[8];"), "{out}");
        assert!(!out.contains(".loc 1"), "{out}");
    }

    #[test]
    fn duplicate_visible_definitions_are_an_error() {
        let e = link(&[("a".into(), CALLEE.into()), ("b".into(), CALLEE.into())]).unwrap_err();
        assert!(e.contains("multiple definition of 'scale'") || e.contains("multiple definition of 'f'"), "{e}");
    }

    #[test]
    fn weak_definitions_are_kept_once() {
        let weak = ".version 8.0\n.target sm_80\n.address_size 64\n.weak .func g()\n{\n\tret;\n}\n";
        let out = link(&[("a".into(), weak.into()), ("b".into(), weak.into())]).unwrap();
        assert_eq!(count(&out, ".weak .func g()"), 1, "{out}");
    }

    #[test]
    fn one_module_is_returned_as_is() {
        assert_eq!(link(&[("a".into(), format!("{CALLER}\0"))]).unwrap(), CALLER);
    }

    #[test]
    fn address_sizes_must_agree() {
        let a = ".version 8.0\n.target sm_80\n.address_size 64\n";
        let b = ".version 8.0\n.target sm_80\n.address_size 32\n";
        assert!(link(&[("a".into(), a.into()), ("b".into(), b.into())]).unwrap_err().contains(".address_size"));
    }
}
