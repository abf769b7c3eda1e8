//! Every oracle module lowers to valid LLVM IR and compiles for the host.

use std::path::PathBuf;

fn oracle_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ptx-oracle")
}

#[test]
fn oracle_modules_compile_for_the_host() {
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(oracle_dir()).expect("oracle dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "ptx") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("read");
        let module = ptx::parse(&src).expect("parses");
        match compiler::compile(&module, &src, &compiler::Target::HostCpu) {
            Ok(c) => {
                assert!(c.object.len() > 64, "{}: empty object", path.display());
                assert_eq!(c.info.kernels.len(), module.kernels().count());
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
