use std::collections::{BTreeSet, HashSet};

use cuda_types::symbols::*;
use cuda_types::CUdriverProcAddressQueryResult;

/// One recorded `cuGetProcAddress` request and the symbol NVIDIA's driver
/// answered it with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Lookup {
    name: String,
    version: u32,
    per_thread: bool,
    symbol: String,
}

/// Parses `name: 2000->sym, 7000/f2->sym_ptsz` lines.
fn parse_line(line: &str) -> Vec<Lookup> {
    let (name, rest) = line.split_once(": ").unwrap_or_else(|| panic!("bad line {line:?}"));
    rest.split(", ")
        .map(|e| {
            let (req, symbol) = e.split_once("->").unwrap_or_else(|| panic!("bad entry {e:?}"));
            let (ver, per_thread) = match req.strip_suffix("/f2") {
                Some(v) => (v, true),
                None => (req, false),
            };
            Lookup {
                name: name.to_string(),
                version: ver.parse().unwrap_or_else(|_| panic!("bad version {req:?}")),
                per_thread,
                symbol: symbol.to_string(),
            }
        })
        .collect()
}

/// The code blocks of the section starting at `heading`, as lookup lines
/// grouped by the plain-text line that precedes them in the block.
fn blocks_after<'a>(doc: &'a str, heading: &str) -> Vec<(&'a str, Vec<&'a str>)> {
    let start = doc.find(heading).unwrap_or_else(|| panic!("{heading} missing"));
    let section = &doc[start..];
    let end = section[heading.len()..].find("\n## ").map_or(section.len(), |e| e + heading.len());
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut in_code = false;
    for line in section[..end].lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            if in_code {
                groups.push(("", Vec::new()));
            }
            continue;
        }
        if !in_code || line.trim().is_empty() {
            continue;
        }
        if line.ends_with(':') {
            groups.push((line, Vec::new()));
        } else {
            groups.last_mut().unwrap().1.push(line);
        }
    }
    groups
}

fn recorded() -> (Vec<Lookup>, Vec<Lookup>) {
    let doc = include_str!("data/cudart-lookups.md");
    let a = blocks_after(doc, "## Appendix A.");
    let cuda135: Vec<Lookup> = a.iter().flat_map(|(_, lines)| lines.iter().flat_map(|l| parse_line(l))).collect();
    let b = blocks_after(doc, "## Appendix B.");
    let group = |title: &str| -> BTreeSet<Lookup> {
        let (_, lines) = b.iter().find(|(t, _)| *t == title).unwrap_or_else(|| panic!("{title} missing"));
        lines.iter().flat_map(|l| parse_line(l)).collect()
    };
    let only_129 = group("Requested by 12.9 but not by 13.5:");
    let only_135 = group("Requested by 13.5 but not by 12.9:");
    for l in &only_135 {
        assert!(cuda135.contains(l), "{l:?} listed as 13.5-only but not in appendix A");
    }
    let mut cuda129: Vec<Lookup> = cuda135.iter().filter(|l| !only_135.contains(l)).cloned().collect();
    cuda129.extend(only_129);
    (cuda135, cuda129)
}

#[test]
fn recorded_lookups_parse_to_the_documented_counts() {
    let (cuda135, cuda129) = recorded();
    let names = |v: &[Lookup]| v.iter().map(|l| l.name.clone()).collect::<HashSet<_>>().len();
    // cudart-lookups.md: 13.5 makes 480 lookups of 377 names after the
    // probe; 12.9 makes 418 of 333 names, 69 with flags 2.
    assert_eq!((cuda135.len(), names(&cuda135)), (480, 377));
    assert_eq!((cuda129.len(), names(&cuda129)), (418, 333));
    assert_eq!(cuda129.iter().filter(|l| l.per_thread).count(), 69);
}

fn check(lookups: &[Lookup], runtime: &str) {
    let mut wrong = Vec::new();
    for l in lookups {
        let got = resolve(&l.name, l.version, l.per_thread);
        if got.symbol() != Some(l.symbol.as_str()) {
            wrong.push(format!("{}@{}{}: want {}, got {:?}", l.name, l.version, if l.per_thread { "/f2" } else { "" }, l.symbol, got));
        }
        if let Resolution::Found { per_thread, .. } = got {
            assert_eq!(per_thread, l.symbol.ends_with("_ptds") || l.symbol.ends_with("_ptsz"), "{l:?}");
        }
    }
    assert!(wrong.is_empty(), "cudart {runtime}: {} of {} lookups resolve wrongly:\n{}", wrong.len(), lookups.len(), wrong.join("\n"));
}

#[test]
fn resolves_every_lookup_of_cudart_13_5() {
    check(&recorded().0, "13.5");
}

#[test]
fn resolves_every_lookup_of_cudart_12_9() {
    check(&recorded().1, "12.9");
}

#[test]
fn abi_symbols_are_unique_and_cover_the_recorded_lookups() {
    let mut seen = HashSet::new();
    for s in ABI_SYMBOLS {
        assert!(seen.insert(s.name), "{} listed twice", s.name);
    }
    let (cuda135, cuda129) = recorded();
    for l in cuda135.iter().chain(&cuda129) {
        assert!(seen.contains(l.symbol.as_str()), "{} is not exported", l.symbol);
    }
    // cudart dlsyms these by name before any lookup.
    for name in ["cuDriverGetVersion", "cuGetProcAddress_v2", "cuGetProcAddress", "cuInit", "cuGetExportTable"] {
        assert!(seen.contains(name), "{name}");
    }
}

#[test]
fn matches_nvidia_driver_555() {
    // Every answer of a real driver (for the functions it knows, up to
    // version 12050) agrees with `resolve`, per-thread refusals included.
    let data = include_str!("data/driver-555-proc-address.txt");
    let mut n = 0;
    for line in data.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [name, ver, flags, "->", status, symbol] = f[..] else { panic!("bad line {line:?}") };
        let got = resolve(name, ver.parse().unwrap(), flags == "2");
        assert_eq!(got.status().0, status.parse::<u32>().unwrap(), "{line}");
        assert_eq!(got.symbol().unwrap_or("-"), symbol, "{line}");
        n += 1;
    }
    assert_eq!(n, 3961);
}

#[test]
fn table_is_well_formed() {
    assert!(API_FUNCTIONS.windows(2).all(|w| w[0].name < w[1].name), "sorted by name, no repeats");
    let mut abi_count = 0;
    for f in API_FUNCTIONS {
        assert!(f.name.starts_with("cu"), "{}", f.name);
        assert!(!f.versions.is_empty(), "{}", f.name);
        assert!(f.versions.windows(2).all(|w| w[0].since < w[1].since), "{}", f.name);
        for v in f.versions {
            assert!(v.since >= 2000 && v.since <= cuda_types::CUDA_VERSION, "{}@{}", f.name, v.since);
            assert!(v.symbol.starts_with(f.name), "{}: {}", f.name, v.symbol);
            abi_count += 1;
            if let Some(pt) = v.per_thread {
                assert!(pt.since >= v.since, "{}", pt.symbol);
                assert!(pt.symbol == format!("{}_ptds", v.symbol) || pt.symbol == format!("{}_ptsz", v.symbol));
                abi_count += 1;
            }
        }
    }
    assert_eq!(abi_count, ABI_SYMBOLS.len());
    assert_eq!(API_FUNCTIONS.len(), 519);
    assert_eq!(ABI_SYMBOLS.len(), 726);
}

#[test]
fn resolve_examples() {
    let sym = |n, v, pt| resolve(n, v, pt).symbol();
    assert_eq!(sym("cuMemAlloc", 2000, false), Some("cuMemAlloc"));
    assert_eq!(sym("cuMemAlloc", 3020, false), Some("cuMemAlloc_v2"));
    assert_eq!(sym("cuMemAlloc", 13000, true), Some("cuMemAlloc_v2"), "no per-thread variants: flags ignored");
    assert_eq!(sym("cuCtxCreate", 11040, false), Some("cuCtxCreate_v3"));
    assert_eq!(sym("cuCtxCreate", 12050, false), Some("cuCtxCreate_v4"));
    assert_eq!(sym("cuDevicePrimaryCtxRelease", 7000, false), Some("cuDevicePrimaryCtxRelease"));
    assert_eq!(sym("cuDevicePrimaryCtxRelease", 11000, false), Some("cuDevicePrimaryCtxRelease_v2"));
    assert_eq!(sym("cuMemcpyHtoD", 13000, true), Some("cuMemcpyHtoD_v2_ptds"));
    assert_eq!(sym("cuStreamGetCaptureInfo", 12030, true), Some("cuStreamGetCaptureInfo_v3_ptsz"));
    assert_eq!(resolve("cuMemcpyHtoD", 3020, true), Resolution::VersionNotSufficient);
    assert_eq!(resolve("cuMemAllocAsync", 11010, false), Resolution::VersionNotSufficient);
    assert_eq!(resolve("", 0, false), Resolution::NotFound);
    assert_eq!(resolve("cuMemAlloc_v2", 13000, false), Resolution::NotFound, "ABI names are not API names");
    assert_eq!(resolve("cuNoSuchThing", 13000, false).status(), CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_eq!(
        resolve("cuLaunchKernel", 13000, false),
        Resolution::Found { symbol: "cuLaunchKernel", params: Some(11), per_thread: false }
    );
    let s = abi_symbol("cuLaunchKernel_ptsz").unwrap();
    assert_eq!((s.api, s.since, s.params, s.per_thread), ("cuLaunchKernel", 7000, Some(11), true));
    assert_eq!(abi_symbol("cuSubgridCreate").unwrap().params, None, "declared by no public header");
}

// The callback macros see the same table as the statics.
macro_rules! collect_flat {
    ([$tag:literal] $($sym:ident($n:tt))*) => {
        fn flat() -> (&'static str, Vec<(&'static str, String)>) {
            ($tag, vec![$((stringify!($sym), stringify!($n).to_string())),*])
        }
    };
}
cuda_types::for_each_abi_symbol!(collect_flat, "tagged");

macro_rules! collect_apis {
    ($( $api:ident { $( $ver:literal => $abi:ident ($n:tt) $(per_thread $ptver:literal => $ptabi:ident)? ),* $(,)? } )*) => {
        fn apis() -> Vec<(&'static str, Vec<(u32, &'static str)>)> {
            vec![$((stringify!($api), vec![$(($ver, stringify!($abi))),*])),*]
        }
    };
}
cuda_types::for_each_api!(collect_apis);

#[test]
fn macros_agree_with_the_statics() {
    let (tag, flat) = flat();
    assert_eq!(tag, "tagged");
    let from_static: Vec<(&str, String)> =
        ABI_SYMBOLS.iter().map(|s| (s.name, s.params.map_or("?".to_string(), |n| n.to_string()))).collect();
    assert_eq!(flat, from_static);
    let apis = apis();
    assert_eq!(apis.len(), API_FUNCTIONS.len());
    for ((name, versions), f) in apis.iter().zip(API_FUNCTIONS) {
        assert_eq!(*name, f.name);
        let want: Vec<(u32, &str)> = f.versions.iter().map(|v| (v.since, v.symbol)).collect();
        assert_eq!(*versions, want);
    }
}

#[test]
fn tool_table_is_current() {
    // The committed table must be what tools/cuda_symbols.py derives from
    // NVIDIA's headers. CUDA_INCLUDE_DIRS names the folders holding cuda.h,
    // cudaTypedefs.h and the interop and profiler headers; otherwise the
    // toolkit of scripts/toolkit.sh is used (scripts/test.sh installs it).
    let dirs = match std::env::var_os("CUDA_INCLUDE_DIRS") {
        Some(d) => std::env::split_paths(&d).collect::<Vec<_>>(),
        None => {
            let toolkit = std::env::var_os("ANYCUDA_TOOLKIT").map(std::path::PathBuf::from).unwrap_or_else(|| {
                let cache = std::env::var_os("XDG_CACHE_HOME")
                    .map(std::path::PathBuf::from)
                    .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
                cache.join("anycuda/toolkit")
            });
            let include = toolkit.join("include");
            assert!(include.join("cuda.h").exists(), "{}: no cuda.h; run scripts/toolkit.sh (or set CUDA_INCLUDE_DIRS)", include.display());
            vec![include]
        }
    };
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new("python3")
        .arg(format!("{root}/tools/cuda_symbols.py"))
        .arg("--check")
        .arg(format!("{root}/src/symbols.rs"))
        .args(&dirs)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed to check the table: {e}"));
    assert!(
        out.status.success(),
        "tools/cuda_symbols.py --check failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
