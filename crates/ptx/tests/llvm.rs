//! PTX from LLVM's NVPTX backend (what clang, Triton and other LLVM-based
//! tools emit): the hand-written IR modules in `tests/llvm/*.ll` go through
//! `llc -march=nvptx64` (LLVM 19, installed by `scripts/setup.sh`), and the
//! output parses and round-trips. The PTX is generated here, not committed.

use ptx::ast::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn llc() -> PathBuf {
    let mut candidates = Vec::new();
    if let Ok(prefix) = std::env::var("LLVM_SYS_191_PREFIX") {
        candidates.push(PathBuf::from(prefix).join("bin/llc"));
    }
    candidates.push(PathBuf::from("/usr/lib/llvm-19/bin/llc"));
    candidates.push(PathBuf::from("llc-19"));
    for c in &candidates {
        if Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()) {
            return c.clone();
        }
    }
    panic!("no LLVM 19 `llc` found (tried {candidates:?}); scripts/setup.sh installs llvm-19");
}

fn compile(llc: &Path, ll: &Path, cpu: &str, ptx_version: &str) -> String {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{}-{cpu}.ptx", ll.file_stem().and_then(|s| s.to_str()).unwrap_or("module")));
    let status = Command::new(llc)
        .args(["-march=nvptx64", &format!("-mcpu={cpu}"), &format!("-mattr=+{ptx_version}"), "-o"])
        .arg(&out)
        .arg(ll)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", llc.display()));
    assert!(status.status.success(), "llc failed on {}:\n{}", ll.display(), String::from_utf8_lossy(&status.stderr));
    std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()))
}

fn check(src: &str, what: &str) -> usize {
    let module = ptx::parse(src).unwrap_or_else(|d| panic!("{what}:\n{d}\n{src}"));
    let printed = ptx::print(&module);
    let again = ptx::parse(&printed).unwrap_or_else(|d| panic!("{what} (printed): {d}\n{printed}"));
    assert_eq!(module, again, "{what} does not round-trip");
    // A few forms only LLVM writes.
    if what.contains("kernels") {
        let masked = module
            .variables()
            .any(|v| matches!(&v.decl.init, Some(Initializer::List(items)) if items.iter().any(|i| matches!(i, Initializer::Mask { .. }))));
        assert!(masked, "{what}: the packed pointer initializer");
        let protos = module
            .functions()
            .filter_map(|f| f.body.as_ref())
            .flat_map(|b| b.statements.iter())
            .filter(|s| matches!(s, Statement::CallPrototype { .. }))
            .count();
        assert!(protos > 0, "{what}: the indirect call's prototype");
    }
    if what.contains("debug") {
        assert!(module.items.iter().any(|i| matches!(i, Item::Section { name: ".debug_info", .. })), "{what}");
        assert!(module.items.iter().any(|i| matches!(i, Item::File { .. })), "{what}");
    }
    module.functions().count()
}

#[test]
fn llc_output_parses_and_round_trips() {
    let llc = llc();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/llvm");
    let mut lls: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/llvm")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ll"))
        .collect();
    lls.sort();
    assert!(!lls.is_empty());
    for ll in &lls {
        let text = std::fs::read_to_string(ll).expect("readable");
        // `; cpus: sm_90a` limits a module to the targets it is written for.
        let cpus: Vec<&str> =
            text.lines().find_map(|l| l.strip_prefix("; cpus:")).map_or(vec!["sm_80", "sm_90a"], |c| c.split_whitespace().collect());
        for cpu in cpus {
            let ptx = if cpu.starts_with("sm_9") { "ptx85" } else { "ptx80" };
            let src = compile(&llc, ll, cpu, ptx);
            let what = format!("{} ({cpu})", ll.display());
            assert!(check(&src, &what) > 0, "{what}");
        }
    }
}
