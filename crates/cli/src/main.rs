//! `anycuda`: the command-line face of anycuda.
//!
//! - `anycuda run [--log LEVEL] -- PROGRAM [ARGS...]` runs a program with
//!   anycuda's `libcuda.so.1` in place of NVIDIA's driver ([`run`]).
//! - `anycuda memcheck [--tool TOOL] [--log LEVEL] -- PROGRAM [ARGS...]`
//!   runs it in checked mode (`ANYCUDA_MEMCHECK=1`): every memory access of
//!   its kernels is checked, and the first bad one is reported on stderr
//!   and fails the launch with `cudaErrorIllegalAddress`; `--tool
//!   initcheck` and `--tool racecheck` add compute-sanitizer's reads of
//!   uninitialised device memory and shared-memory hazards (reported, the
//!   launch goes on).
//! - `anycuda info` lists the devices as CUDA programs see them ([`info`]).
//! - `anycuda ptx FILE...` parses and compiles PTX, reporting each kernel
//!   ([`ptxcheck`]).
//! - `anycuda extract [--list] [--out DIR] FILE...` writes the PTX (and
//!   cubins) a program's fatbins carry, so the PTX lines anycuda's
//!   diagnostics name can be read ([`extract`]).
//!
//! Exit codes of anycuda's own failures follow env(1): 125 when anycuda
//! itself fails (no library found), 126 when the program cannot be
//! executed, 127 when it does not exist; otherwise the program's own
//! status, since `run` replaces this process with it.

mod extract;
mod info;
mod ptxcheck;
mod run;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "anycuda", version, about = "Run CUDA programs without NVIDIA's driver")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The levels `ANYCUDA_LOG` understands (see libcuda's `trace` module).
const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

#[derive(Subcommand)]
enum Command {
    /// Run a program with anycuda as its CUDA driver (libcuda.so.1).
    ///
    /// The library is found next to this executable (cargo's target/<profile>
    /// or its deps/ directory), in ../lib (an installed layout), or where
    /// ANYCUDA_LIBRARY points.
    Run {
        /// Log driver API calls (sets ANYCUDA_LOG): off, error, warn, info,
        /// debug (failing calls with the reason) or trace (every call).
        #[arg(long, value_name = "LEVEL", value_parser = LOG_LEVELS)]
        log: Option<String>,
        /// Write the log to this file instead of stderr (sets ANYCUDA_LOG_FILE).
        #[arg(long, value_name = "FILE")]
        log_file: Option<PathBuf>,
        /// The program and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM [ARGS]")]
        command: Vec<OsString>,
    },
    /// Run a program as `run` does, in checked mode (sets ANYCUDA_MEMCHECK=1):
    /// every load, store and atomic of its kernels is checked against the
    /// live allocations, the block's shared memory and the thread's local
    /// memory; the first bad access is reported on stderr (kernel, block,
    /// thread, address, size, PTX line) and fails the launch with
    /// cudaErrorIllegalAddress, as compute-sanitizer's memcheck does.
    ///
    /// `--tool initcheck` also reports kernel reads of device memory nothing
    /// wrote since it was allocated (`initcheck-host`: and device-to-host
    /// copies of such bytes);
    /// `--tool racecheck` reports shared-memory hazards: a byte written by
    /// one thread and read or written by another with no barrier between
    /// them (`__syncwarp` orders the threads of a warp; atomics do not race
    /// with atomics). Both report once per place and launch and let the
    /// launch go on, as compute-sanitizer does; they cost only when chosen.
    Memcheck {
        /// The checks to run besides memcheck's bounds checks (sets
        /// ANYCUDA_MEMCHECK to them): memcheck, initcheck, initcheck-host
        /// (initcheck that also reports device-to-host copies of unwritten
        /// bytes), racecheck; several may be given (`--tool
        /// initcheck,racecheck`).
        #[arg(long, value_name = "TOOL", value_delimiter = ',', value_parser = ["memcheck", "initcheck", "initcheck-host", "racecheck"])]
        tool: Vec<String>,
        /// As for `run`.
        #[arg(long, value_name = "LEVEL", value_parser = LOG_LEVELS)]
        log: Option<String>,
        /// As for `run`.
        #[arg(long, value_name = "FILE")]
        log_file: Option<PathBuf>,
        /// The program and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM [ARGS]")]
        command: Vec<OsString>,
    },
    /// Print the devices as CUDA sees them, the driver version, the kernel
    /// cache and the backend.
    Info,
    /// Check PTX files: parse each module, compile every kernel and report
    /// its status, parameters, shared memory and compile time.
    Ptx {
        /// Write the LLVM IR of each module to stdout (the report then goes
        /// to stderr).
        #[arg(long)]
        emit_ir: bool,
        /// Write the compiled object of each module to DIR, named after the
        /// PTX file (`FILE.o`), for a disassembler or profiler. (In the fast
        /// tier it calls the helpers a process compiles once, such as warp
        /// mode's access helpers, without defining them.)
        #[arg(long, value_name = "DIR")]
        emit_obj: Option<PathBuf>,
        /// Compile for an AMD GPU (`gfx1100`, `gfx90a`...) instead of the host.
        #[arg(long, value_name = "ARCH")]
        target: Option<String>,
        /// The JIT tier to compile as: `opt` (the optimised code, the
        /// default) or `fast` (the code a kernel's first launches run).
        #[arg(long, value_name = "TIER")]
        tier: Option<String>,
        /// PTX files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write the device code of executables, shared libraries, objects,
    /// archives or fatbins: each PTX entry as FILE.N.sm_XX.ptx (N numbers
    /// the file's fatbins from 1), each cubin as FILE.N.sm_XX.cubin, one
    /// path per line on stdout. The PTX line numbers in anycuda's
    /// diagnostics (memcheck, racecheck, compile errors) are lines of
    /// these files.
    Extract {
        /// List the entries (fatbin, kind, architecture, PTX ISA version,
        /// size, file name) instead of writing them.
        #[arg(long)]
        list: bool,
        /// Directory to write into (created if missing; default: the
        /// current directory).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Files to read.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { log, log_file, command } => run::run(log.as_deref(), log_file.as_deref(), None, &command),
        Command::Memcheck { tool, log, log_file, command } => {
            let tools = if tool.is_empty() { "1".to_string() } else { tool.join(",") };
            run::run(log.as_deref(), log_file.as_deref(), Some(&tools), &command)
        }
        Command::Info => info::info(),
        Command::Ptx { emit_ir, emit_obj, target, tier, files } => {
            ptxcheck::check(&files, emit_ir, emit_obj.as_deref(), target.as_deref(), tier.as_deref())
        }
        Command::Extract { list, out, files } => extract::extract(&files, out.as_deref(), list),
    }
}
