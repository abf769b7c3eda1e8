//! `ptx::parse` on arbitrary text: it must return a module or diagnostics,
//! never panic; a module must print to PTX that parses to the same tree.
//!
//!   cd crates/ptx/fuzz && cargo +nightly fuzz run parse -- -dict=ptx.dict
//!
//! (seed `corpus/parse/` with `tests/syntax/*.ptx` and `tests/ptx-oracle/*.ptx`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    match ptx::parse(src) {
        Ok(module) => {
            let printed = ptx::print(&module);
            match ptx::parse(&printed) {
                Ok(again) => assert!(again == module, "printed module parses to a different tree:\n{printed}"),
                Err(d) => panic!("printed module does not parse: {d}\n{printed}"),
            }
        }
        Err(diags) => {
            assert!(!diags.0.is_empty());
            for d in &diags.0 {
                assert!(d.span.start as usize <= src.len() && d.span.start <= d.span.end, "{d:?}");
                assert!(d.line > 0 && d.column > 0, "{d:?}");
                let _ = d.to_string();
            }
        }
    }
});
