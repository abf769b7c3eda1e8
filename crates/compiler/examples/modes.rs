//! Prints each kernel's execution mode and the lockstep analysis' reason
//! (`cargo run -p anycuda-compiler --example modes -- FILE.ptx...`); with
//! `--summary`, only the count of kernels per mode for each file.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let summary = args.iter().any(|a| a == "--summary");
    let target = compiler::Target::HostCpu;
    let opts = compiler::Options::default();
    for path in args.iter().filter(|a| !a.starts_with("--")) {
        let src = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let module = match ptx::parse(&src) {
            Ok(m) => m,
            Err(d) => {
                eprintln!("{path}: {d}");
                continue;
            }
        };
        let modes = compiler::kernel_modes(&module, &src, &target, &opts, compiler::Unit::Module);
        let warps = modes.iter().filter(|k| k.warp).count();
        if summary {
            println!("{path}: {} kernels, {warps} as warps", modes.len());
            continue;
        }
        for k in modes {
            println!("{path}: {} [{}] {}", k.name, if k.warp { "warp" } else { "thread" }, k.why);
        }
    }
}
