//! The `ptxas` stand-in: takes ptxas's command line, and where ptxas would
//! write a cubin for the GPU named, writes the PTX (NUL-terminated, the
//! container the driver loads in place of a cubin). Triton runs it when
//! `TRITON_PTXAS_PATH` points to it (`anycuda run` sets that).
//!
//! `--version` answers in ptxas's format (`Cuda compilation tools, release
//! X.Y, VX.Y.0`), with the CUDA version anycuda's driver reports
//! (`ANYCUDA_DRIVER_VERSION`, default 13.5), since programs (Triton) pick
//! the PTX ISA version they emit from it.

use std::path::PathBuf;

/// What a command line asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub version: bool,
    pub help: bool,
    pub arch: Option<String>,
    pub output: Option<PathBuf>,
    pub inputs: Vec<PathBuf>,
    pub verbose: bool,
    /// `--input-as-string`: PTX given on the command line.
    pub strings: Vec<String>,
}

/// Options without a value.
const FLAGS: &[&str] = &[
    "-v",
    "--verbose",
    "-lineinfo",
    "--generate-line-info",
    "-g",
    "--device-debug",
    "-c",
    "--compile-only",
    "-w",
    "--disable-warnings",
    "-warn-spills",
    "--warn-on-spills",
    "-warn-lmem-usage",
    "--warn-on-local-memory-usage",
    "-warn-double-usage",
    "--warn-on-double-precision-use",
    "--return-at-end",
    "-ret-end",
    "--preserve-relocs",
    "-preserve-relocs",
    "--dont-merge-basicblocks",
    "-no-bb-merge",
    "--extensible-whole-program",
    "-ewp",
    "--compile-as-tools-patch",
    "-astoolspatch",
    "--suppress-stack-size-warning",
    "-suppress-stack-size-warning",
    "--suppress-async-bulk-multicast-advisory-warning",
    "--disable-optimizer-constants",
    "-disable-optimizer-consts",
    "--sp-bounds-check",
    "-sp-bounds-check",
    "--position-independent-code",
    "-pic",
    "--fmad",
    "-fmad",
    "--allow-expensive-optimizations",
    "-allow-expensive-optimizations",
    "--make-errors-visible-at-exit",
    "-make-errors-visible-at-exit",
    "--warning-as-error",
    "-Werror",
    "--device-function-maxrregcount",
];

/// Options taking a value (`-o FILE`, `-o=FILE`, `--output-file FILE`).
const VALUED: &[&str] = &[
    "-o",
    "--output-file",
    "-arch",
    "--gpu-name",
    "-m",
    "--machine",
    "-maxrregcount",
    "--maxrregcount",
    "-O",
    "--opt-level",
    "-e",
    "--entry",
    "--def-load-cache",
    "-dlcm",
    "--def-store-cache",
    "-dscm",
    "--fmad",
    "-fmad",
    "--allow-expensive-optimizations",
    "-allow-expensive-optimizations",
    "-split-compile",
    "--split-compile",
    "--input-as-string",
    "-ias",
    "-minnctapersm",
    "--minnctapersm",
    "-maxntid",
    "--maxntid",
    "--register-usage-level",
    "-regUsageLevel",
    "--regUsageLevel",
    "--generate-line-info",
    "-Xptxas",
    "--options-file",
    "-optf",
];

/// Parses ptxas's arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Command, String> {
    let mut c = Command::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') || a == "-" {
            c.inputs.push(PathBuf::from(a));
            continue;
        }
        match a.as_str() {
            "--version" | "-V" => {
                c.version = true;
                continue;
            }
            "--help" | "-h" => {
                c.help = true;
                continue;
            }
            _ => {}
        }
        // `-O3` and the like: a one-letter option with its value attached.
        if let Some(level) = a.strip_prefix("-O") {
            if !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
        }
        let (name, attached) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        if FLAGS.contains(&name) && attached.is_none() {
            if matches!(name, "-v" | "--verbose") {
                c.verbose = true;
            }
            continue;
        }
        if !VALUED.contains(&name) {
            return Err(format!("Unknown option '{a}'"));
        }
        let value = match attached {
            Some(v) => v,
            None => {
                let Some(v) = args.get(i) else { return Err(format!("Missing value for option '{name}'")) };
                i += 1;
                v.clone()
            }
        };
        match name {
            "-o" | "--output-file" => c.output = Some(PathBuf::from(value)),
            "-arch" | "--gpu-name" => c.arch = Some(value),
            "--input-as-string" | "-ias" => c.strings.push(value),
            _ => {}
        }
    }
    Ok(c)
}

/// `ptxas --version`'s answer for a driver version (`13050` for 13.5).
pub fn version_text(driver_version: i32) -> String {
    let (major, minor) = (driver_version / 1000, driver_version % 1000 / 10);
    format!(
        "ptxas: anycuda's stand-in for NVIDIA's PTX assembler (writes PTX, which anycuda's driver compiles)\n\
         Cuda compilation tools, release {major}.{minor}, V{major}.{minor}.0\n\
         Build anycuda_{major}.{minor}\n"
    )
}

/// The driver version anycuda reports (`ANYCUDA_DRIVER_VERSION`, else
/// 13.5), as the driver reads it.
pub fn driver_version() -> i32 {
    std::env::var("ANYCUDA_DRIVER_VERSION").ok().and_then(|v| v.trim().parse::<i32>().ok()).filter(|v| *v >= 2000).unwrap_or(13050)
}

/// Whether `text` looks like PTX (a `.version` and a `.target`), and the
/// message saying why not.
pub fn check_ptx(text: &str) -> Result<(), String> {
    let has = |d: &str| text.lines().any(|l| l.trim_start().starts_with(d));
    if !has(".version") {
        return Err("no .version directive: not PTX".into());
    }
    if !has(".target") {
        return Err("no .target directive: not PTX".into());
    }
    Ok(())
}

/// Runs the stand-in; the exit status.
pub fn main(args: &[String]) -> i32 {
    let c = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ptxas fatal   : {e}");
            return 1;
        }
    };
    if c.version {
        print!("{}", version_text(driver_version()));
        return 0;
    }
    if c.help {
        println!("Usage  : ptxas [options] <ptx file>,...\n\nanycuda's ptxas writes its PTX input, NUL-terminated, to the output file (-o, default elf.o): anycuda's driver loads it where a cubin is expected.");
        return 0;
    }
    let mut texts = Vec::new();
    for s in &c.strings {
        texts.push(("<string>".to_string(), s.clone()));
    }
    for p in &c.inputs {
        let r = if p.as_os_str() == "-" { std::io::read_to_string(std::io::stdin()) } else { std::fs::read_to_string(p) };
        match r {
            Ok(t) => texts.push((p.display().to_string(), t)),
            Err(e) => {
                eprintln!("ptxas fatal   : Unable to read input file '{}': {e}", p.display());
                return 1;
            }
        }
    }
    if texts.is_empty() {
        eprintln!("ptxas fatal   : No input files specified; use option --help for more information");
        return 1;
    }
    for (name, t) in &texts {
        if let Err(e) = check_ptx(t) {
            eprintln!("ptxas fatal   : {name}: {e}");
            return 1;
        }
    }
    let ptx = match crate::ptxlink::link(&texts, &[]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ptxas fatal   : {e}");
            return 1;
        }
    };
    let out = c.output.clone().unwrap_or_else(|| PathBuf::from("elf.o"));
    if let Err(e) = std::fs::write(&out, crate::ptx_container(&ptx)) {
        eprintln!("ptxas fatal   : Could not open output file '{}': {e}", out.display());
        return 1;
    }
    if c.verbose {
        eprintln!(
            "ptxas info    : anycuda: wrote the PTX for {} to '{}' (compiled by anycuda's driver when loaded)",
            c.arch.as_deref().unwrap_or("the default architecture"),
            out.display()
        );
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn triton_command_line() {
        let c = parse(&args(&["-lineinfo", "-v", "--fmad=false", "--gpu-name=sm_90a", "kernels/k.ptx", "-o", "kernels/k.ptx.o"])).unwrap();
        assert_eq!(c.arch.as_deref(), Some("sm_90a"));
        assert_eq!(c.output, Some(PathBuf::from("kernels/k.ptx.o")));
        assert_eq!(c.inputs, vec![PathBuf::from("kernels/k.ptx")]);
        assert!(c.verbose);
        let c = parse(&args(&["-arch=sm_80", "-O3", "--opt-level", "2", "-maxrregcount=64", "k.ptx", "--output-file=k.cubin"])).unwrap();
        assert_eq!(c.arch.as_deref(), Some("sm_80"));
        assert_eq!(c.output, Some(PathBuf::from("k.cubin")));
        assert_eq!(c.inputs, vec![PathBuf::from("k.ptx")]);
    }

    #[test]
    fn unknown_options_and_missing_values_are_errors() {
        assert_eq!(parse(&args(&["--frobnicate", "k.ptx"])).unwrap_err(), "Unknown option '--frobnicate'");
        assert!(parse(&args(&["k.ptx", "-o"])).unwrap_err().contains("Missing value"));
    }

    #[test]
    fn version_is_parsed_as_tritons_regex_does() {
        let t = version_text(13050);
        let line = t.lines().find(|l| l.contains("release ")).unwrap();
        let v = line.split("release ").nth(1).unwrap().split(',').next().unwrap();
        assert_eq!(v, "13.5");
        assert!(version_text(12080).contains("release 12.8, V12.8.0"));
        assert!(parse(&args(&["--version"])).unwrap().version);
    }
}
