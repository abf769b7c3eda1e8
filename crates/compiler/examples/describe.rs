//! Prints each kernel's description (parameters, shared memory, mode).
fn main() {
    for path in std::env::args().skip(1) {
        let src = match std::fs::read_to_string(&path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        match ptx::parse(&src) {
            Ok(m) => {
                for k in compiler::describe(&m).kernels {
                    println!(
                        "{path}: {} lanes={} scheduler={} params={} shared={}",
                        k.name, k.lanes, k.needs_scheduler, k.param_bytes, k.static_shared_bytes
                    );
                }
            }
            Err(d) => eprintln!("{path}: {d}"),
        }
    }
}
