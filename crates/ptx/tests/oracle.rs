//! Every module of the hardware oracle parses, prints and parses back to the
//! same tree.

use std::path::PathBuf;

fn oracle_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ptx-oracle")
}

#[test]
fn oracle_modules_parse_and_round_trip() {
    let mut files: Vec<_> = std::fs::read_dir(oracle_dir())
        .expect("tests/ptx-oracle exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 8, "the oracle has eight family modules");
    let mut kernels = 0;
    for path in files {
        let src = std::fs::read_to_string(&path).expect("readable PTX");
        let module = ptx::parse(&src).unwrap_or_else(|d| panic!("{}: {d}", path.display()));
        kernels += module.kernels().count();
        let printed = ptx::print(&module);
        let again = ptx::parse(&printed).unwrap_or_else(|d| panic!("{} (printed): {d}\n{printed}", path.display()));
        assert_eq!(module, again, "{} does not round-trip", path.display());
    }
    assert_eq!(kernels, 847, "one kernel per oracle case");
}
