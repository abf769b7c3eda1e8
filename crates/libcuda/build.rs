// Two jobs:
// 1. The library is loaded as libcuda.so.1 (cudart dlopens exactly that
//    name), so that is its soname whatever the file is called.
// 2. Find the functions the `api_*` modules implement (each an `api!`
//    invocation whose first line names it) and write the `maybe_stub!`
//    macro that keeps the generated stubs from clashing with them.
use std::fmt::Write as _;
use std::path::Path;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
    println!("cargo:rerun-if-changed=build.rs");
    let src = Path::new("src");
    let mut names: Vec<String> = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(src).map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    for path in files {
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut after_api = false;
        for line in text.lines() {
            let t = line.trim();
            if after_api {
                if let Some(rest) = t.strip_prefix("fn ") {
                    let head = rest.split('(').next().unwrap_or("");
                    let head = head.split('[').next().unwrap_or("");
                    for n in head.split('/') {
                        let n = n.trim();
                        if !n.is_empty() {
                            names.push(n.to_string());
                        }
                    }
                }
                after_api = false;
            }
            if t == "api! {" {
                after_api = true;
            }
        }
    }
    names.sort();
    names.dedup();
    let mut out = String::from("macro_rules! maybe_stub {\n");
    for n in &names {
        let _ = writeln!(out, "    ({n}) => {{}};");
    }
    out.push_str("    ($sym:ident) => { stub!($sym); };\n}\n");
    out.push_str("/// The implemented symbols.\npub const IMPLEMENTED: &[&str] = &[\n");
    for n in &names {
        let _ = writeln!(out, "    \"{n}\",");
    }
    out.push_str("];\n");
    let dir = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let _ = std::fs::write(Path::new(&dir).join("implemented.rs"), out);
}
