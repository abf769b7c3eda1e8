//! `anycuda`: the command-line face of anycuda.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "anycuda", version, about = "Run CUDA programs without NVIDIA's driver")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check PTX files: parse every module and report each kernel.
    Ptx {
        /// PTX files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Ptx { files } => check_ptx(&files),
    }
}

fn check_ptx(files: &[PathBuf]) -> ExitCode {
    let mut ok = true;
    for path in files {
        let src = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                ok = false;
                continue;
            }
        };
        match ptx::parse(&src) {
            Ok(module) => {
                let target = module.target.words.join(", ");
                println!(
                    "{}: PTX {}.{} for {target}, {} kernels, {} functions",
                    path.display(),
                    module.version.major,
                    module.version.minor,
                    module.kernels().count(),
                    module.functions().filter(|f| f.body.is_some()).count(),
                );
                for f in module.functions().filter(|f| f.body.is_some()) {
                    let kind = match f.kind {
                        ptx::ast::FunctionKind::Entry => "kernel",
                        ptx::ast::FunctionKind::Func => "function",
                    };
                    let instructions = f.body.as_ref().map_or(0, |b| {
                        b.statements.iter().filter(|s| matches!(s, ptx::ast::Statement::Instruction(_))).count()
                    });
                    println!("  {kind} {}: {} parameters, {instructions} instructions: ok", f.name, f.params.len());
                }
            }
            Err(diags) => {
                ok = false;
                for d in diags.0 {
                    eprintln!("{}:{d}", path.display());
                }
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
