//! Real nvcc output: fatbins in every compression mode, SASS-only builds,
//! `--concat` containers, and the wrapper of a host object.
//!
//! Needs the CUDA toolkit that `scripts/toolkit.sh` installs into
//! `$ANYCUDA_TOOLKIT` (default `${XDG_CACHE_HOME:-$HOME/.cache}/anycuda/toolkit`,
//! as in `scripts/env.sh`). Without it these tests fail and say so: the
//! project's test command installs it first. Everything nvcc writes goes under
//! cargo's target directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use fatbin::{Compression, Cubin, Entry, EntryKind, Error, Fatbin, Image, Policy, Wrapper, EM_CUDA};

const KERNEL: &str = r#"
extern "C" __global__ void add_one(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"#;

fn toolkit() -> PathBuf {
    let root = match std::env::var_os("ANYCUDA_TOOLKIT").filter(|v| !v.is_empty()) {
        Some(v) => PathBuf::from(v),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .expect("neither ANYCUDA_TOOLKIT, XDG_CACHE_HOME nor HOME is set");
            cache.join("anycuda/toolkit")
        }
    };
    let nvcc = root.join("bin/nvcc");
    assert!(
        nvcc.is_file(),
        "CUDA toolkit missing: no nvcc at {}. Run scripts/toolkit.sh (or scripts/setup.sh) \
         to install it, or point ANYCUDA_TOOLKIT at a toolkit root containing bin/nvcc.",
        nvcc.display()
    );
    root
}

/// A scratch directory under cargo's target dir, one per test.
fn workdir(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fatbin-nvcc").join(test);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.cu"), KERNEL).unwrap();
    d
}

/// Runs nvcc on k.cu in `dir` with `args`, writing `out`; returns its bytes.
fn nvcc(dir: &Path, args: &[&str], out: &str) -> Vec<u8> {
    let root = toolkit();
    let output =
        Command::new(root.join("bin/nvcc")).current_dir(dir).args(args).args(["-o", out, "k.cu"]).output().expect("failed to run nvcc");
    assert!(
        output.status.success(),
        "nvcc {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read(dir.join(out)).unwrap()
}

fn fatbin_of(test: &str, args: &[&str]) -> Vec<u8> {
    let mut all = vec!["-fatbin"];
    all.extend_from_slice(args);
    nvcc(&workdir(test), &all, "k.fatbin")
}

/// The text matches the header: `.version` as recorded, `.target` as the
/// arch, and the kernel is there.
fn check_ptx(e: &Entry<'_>) -> String {
    assert_eq!(e.kind(), EntryKind::Ptx);
    let text = e.ptx_text().unwrap_or_else(|err| panic!("{}: {err}", e.arch_name()));
    let v = e.ptx_version().unwrap();
    let first = text.trim_start().lines().next().unwrap_or("");
    assert_eq!(first, format!(".version {v}"), "PTX must begin with its .version line");
    assert!(text.contains(&format!(".target sm_{}", e.arch())), "{text}");
    assert!(text.contains(".entry add_one"), "{text}");
    assert!(!text.ends_with('\0'));
    text.into_owned()
}

fn check_elf(e: &Entry<'_>) {
    assert_eq!(e.kind(), EntryKind::Elf);
    let data = e.data().unwrap();
    let cubin = Cubin::parse(&data).unwrap_or_else(|err| panic!("{}: {err}", e.arch_name()));
    assert_eq!(cubin.arch(), Some(e.arch()), "e_flags agree with the entry header");
    assert_eq!(u16::from_le_bytes([data[18], data[19]]), EM_CUDA);
}

const THREE_ARCHS: [&str; 6] = [
    "-gencode",
    "arch=compute_80,code=compute_80",
    "-gencode",
    "arch=compute_86,code=sm_86",
    "-gencode",
    "arch=compute_90,code=compute_90",
];

fn summary(fb: &Fatbin<'_>) -> Vec<(EntryKind, u32, Compression)> {
    fb.entries().iter().map(|e| (e.kind(), e.arch(), e.compression())).collect()
}

fn check_three_archs(img: &[u8], ptx_compression: Compression) -> Vec<String> {
    let fb = Fatbin::parse(img).unwrap();
    assert_eq!(fb.size(), img.len());
    let mut s = summary(&fb);
    s.sort_by_key(|&(k, a, _)| (a, k.raw()));
    assert_eq!(
        s,
        vec![(EntryKind::Ptx, 80, ptx_compression), (EntryKind::Elf, 86, Compression::None), (EntryKind::Ptx, 90, ptx_compression),]
    );
    for e in fb.entries() {
        assert!(e.flags().is_64bit());
        if e.kind() == EntryKind::Elf {
            check_elf(e);
        }
    }
    let sel = fb.select_ptx(86, Policy::Strict).unwrap();
    assert_eq!(sel.arch(), 80);
    assert_eq!(fb.select_ptx(90, Policy::Strict).unwrap().arch(), 90);
    assert_eq!(fb.select_ptx(75, Policy::Nearest).unwrap().arch(), 80);
    assert!(matches!(fb.select_ptx(75, Policy::Strict), Err(Error::NoCompatiblePtx { .. })));
    let image = Image::parse(img).unwrap();
    let ptx = image.ptx(86, Policy::Strict).unwrap();
    assert_eq!(ptx.arch, Some(80));
    let mut texts: Vec<_> = fb.ptx_entries().map(check_ptx).collect();
    texts.sort();
    assert_eq!(ptx.text, texts.iter().find(|t| t.contains("sm_80")).unwrap().as_str());
    texts
}

#[test]
fn zstd_lz4_and_uncompressed_builds_agree() {
    let zstd = fatbin_of("zstd", &THREE_ARCHS);
    let mut args = vec!["--compress-mode=speed"];
    args.extend_from_slice(&THREE_ARCHS);
    let lz4 = fatbin_of("lz4", &args);
    let mut args = vec!["--no-compress"];
    args.extend_from_slice(&THREE_ARCHS);
    let raw = fatbin_of("raw", &args);

    let t_zstd = check_three_archs(&zstd, Compression::Zstd);
    let t_lz4 = check_three_archs(&lz4, Compression::Lz4);
    let t_raw = check_three_archs(&raw, Compression::None);
    assert_eq!(t_zstd, t_raw, "decoded PTX equals the uncompressed build's");
    assert_eq!(t_lz4, t_raw);
}

#[test]
fn sass_only_build_has_no_ptx() {
    let img = fatbin_of("sass-only", &["-gencode", "arch=compute_86,code=sm_86", "-gencode", "arch=compute_75,code=sm_75"]);
    let fb = Fatbin::parse(&img).unwrap();
    assert!(fb.entries().iter().all(|e| e.kind() == EntryKind::Elf));
    fb.entries().iter().for_each(check_elf);
    for policy in [Policy::Strict, Policy::Nearest, Policy::Any] {
        assert_eq!(fb.select_ptx(86, policy).unwrap_err(), Error::NoPtx { archs: vec![75, 86] });
    }
    let err = Image::parse(&img).unwrap().ptx(86, Policy::Any).unwrap_err();
    assert!(err.to_string().contains("sm_75, sm_86"), "{err}");
}

#[test]
fn compressed_cubins() {
    let img = fatbin_of("compress-all", &["-Xfatbin", "-compress-all", "-gencode", "arch=compute_86,code=[sm_86,compute_86]"]);
    let fb = Fatbin::parse(&img).unwrap();
    let elf = fb.entries().iter().find(|e| e.kind() == EntryKind::Elf).unwrap();
    assert_ne!(elf.compression(), Compression::None);
    check_elf(elf);
    check_ptx(fb.select_ptx(86, Policy::Strict).unwrap());
}

#[test]
fn concat_containers() {
    for (test, mode) in [("concat-zstd", None), ("concat-lz4", Some("--compress-mode=speed"))] {
        let mut args: Vec<&str> = vec!["--concat"];
        args.extend(mode);
        args.extend_from_slice(&[
            "-gencode",
            "arch=compute_80,code=[compute_80,sm_80]",
            "-gencode",
            "arch=compute_86,code=sm_86",
            "-gencode",
            "arch=compute_90,code=compute_90",
        ]);
        let img = fatbin_of(test, &args);
        let fb = Fatbin::parse(&img).unwrap();
        let containers: Vec<_> = fb.entries().iter().filter(|e| e.kind() == EntryKind::Concat).collect();
        assert!(!containers.is_empty(), "{test}: nvcc --concat made no container: {:?}", summary(&fb));
        let mut ptx: Vec<_> = fb.ptx_entries().map(|e| e.arch()).collect();
        ptx.sort();
        assert_eq!(ptx, vec![80, 90], "{test}");
        assert_eq!(fb.sass_archs(), vec![80, 86], "{test}");
        for e in fb.entries() {
            match e.kind() {
                EntryKind::Ptx => {
                    check_ptx(e);
                }
                EntryKind::Elf => check_elf(e),
                _ => {}
            }
        }
        assert_eq!(fb.select_ptx(86, Policy::Strict).unwrap().arch(), 80);
        assert!(fb.select_ptx(86, Policy::Strict).unwrap().container().is_some());
    }
}

#[test]
fn debug_build_records_identifier_and_options() {
    let img = fatbin_of("debug", &["-G", "-rdc=true", "-gencode", "arch=compute_80,code=[compute_80,sm_80]"]);
    let fb = Fatbin::parse(&img).unwrap();
    for e in fb.entries() {
        assert!(e.flags().has_debug_info(), "{}", e.arch_name());
        assert_eq!(e.identifier(), Some("k.cu"));
    }
    let p = fb.select_ptx(80, Policy::Strict).unwrap();
    check_ptx(p);
    let opts = p.jit_options().expect("-G PTX carries JIT options");
    assert!(opts.split_whitespace().any(|o| o == "-g"), "{opts}");
}

/// The wrapper `.nvFatBinSegment` of a host object and the fatbin its
/// relocation points to.
fn wrapper_and_fatbin(obj: &[u8]) -> (Wrapper, String, Vec<u8>) {
    use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};
    let file = object::File::parse(obj).unwrap();
    let seg = file.section_by_name(".nvFatBinSegment").expect("no .nvFatBinSegment");
    let wrapper = Wrapper::parse(seg.data().unwrap()).unwrap();
    // In an unlinked object the pointer is a relocation against the
    // section holding the fatbin.
    let (_, reloc) = seg.relocations().find(|(off, _)| *off == 8).expect("no relocation for the fatbin pointer");
    let section = match reloc.target() {
        RelocationTarget::Symbol(i) => {
            let sym = file.symbol_by_index(i).unwrap();
            file.section_by_index(sym.section_index().unwrap()).unwrap()
        }
        RelocationTarget::Section(i) => file.section_by_index(i).unwrap(),
        other => panic!("unexpected relocation target {other:?}"),
    };
    let name = section.name().unwrap().to_string();
    let data = section.data().unwrap();
    let at = usize::try_from(reloc.addend()).unwrap();
    (wrapper, name, data[at..].to_vec())
}

#[test]
fn host_object_wrapper() {
    let dir = workdir("host-object");
    for (args, out, section) in [(vec!["-c"], "k.o", ".nv_fatbin"), (vec!["-c", "-rdc=true"], "k-rdc.o", "__nv_relfatbin")] {
        let mut all = args.clone();
        all.extend_from_slice(&["-gencode", "arch=compute_80,code=[compute_80,sm_86]"]);
        let obj = nvcc(&dir, &all, out);
        let (wrapper, name, fat) = wrapper_and_fatbin(&obj);
        assert_eq!(wrapper.version, 1, "{out}");
        assert_eq!(name, section, "{out}");
        let fb = Fatbin::parse(&fat).unwrap();
        check_ptx(fb.select_ptx(86, Policy::Strict).unwrap());
        assert_eq!(fb.sass_archs(), vec![86]);

        // What the driver gets from cudart: a pointer to a wrapper that
        // points to the fatbin. Rebuild that in memory.
        let mut w = [0u8; 24];
        w[..8].copy_from_slice(&obj_wrapper_head(&wrapper));
        w[8..16].copy_from_slice(&(fat.as_ptr() as u64).to_le_bytes());
        // SAFETY: `w` and `fat` are live, well-formed and outlive `image`.
        #[allow(unsafe_code)]
        let image = unsafe { Image::from_ptr(w.as_ptr().cast()) }.unwrap();
        match &image {
            Image::Fatbin { wrapper: Some(wr), fatbin } => {
                assert_eq!(wr.fatbin_address, fat.as_ptr() as u64);
                assert_eq!(fatbin.size(), fb.size());
            }
            other => panic!("{other:?}"),
        }
        let ptx = image.ptx(86, Policy::Strict).unwrap();
        assert!(ptx.text.contains(".entry add_one"));
        // The fatbin pointer alone works too (cuModuleLoadFatBinary).
        // SAFETY: as above.
        #[allow(unsafe_code)]
        let direct = unsafe { Image::from_ptr(fat.as_ptr().cast()) }.unwrap();
        assert_eq!(direct.ptx(86, Policy::Strict).unwrap().text, ptx.text);
    }
}

fn obj_wrapper_head(w: &Wrapper) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[..4].copy_from_slice(&fatbin::WRAPPER_MAGIC.to_le_bytes());
    h[4..].copy_from_slice(&w.version.to_le_bytes());
    h
}

#[test]
fn ptx_file_and_cubin_file() {
    let dir = workdir("ptx-cubin");
    let ptx = nvcc(&dir, &["-ptx", "-arch=compute_80"], "k.ptx");
    // A .ptx file has no NUL; a C caller adds one.
    match Image::parse(&ptx).unwrap() {
        Image::Ptx(t) => assert!(t.contains(".entry add_one")),
        other => panic!("{other:?}"),
    }
    let mut c_string = ptx.clone();
    c_string.push(0);
    // SAFETY: NUL-terminated and alive.
    #[allow(unsafe_code)]
    let image = unsafe { Image::from_ptr(c_string.as_ptr().cast()) }.unwrap();
    assert!(matches!(image, Image::Ptx(t) if t.len() == ptx.len()));

    let cubin = nvcc(&dir, &["-cubin", "-arch=sm_86"], "k.cubin");
    match Image::parse(&cubin).unwrap() {
        Image::Cubin(c) => {
            assert_eq!(c.arch(), Some(86));
            assert_eq!(c.as_bytes().len(), cubin.len(), "extent covers the whole file");
        }
        other => panic!("{other:?}"),
    }
    // SAFETY: the file's bytes are alive and complete.
    #[allow(unsafe_code)]
    let image = unsafe { Image::from_ptr(cubin.as_ptr().cast()) }.unwrap();
    assert!(matches!(image, Image::Cubin(c) if c.as_bytes().len() == cubin.len()));
    assert_eq!(image.ptx(86, Policy::Strict).unwrap_err(), Error::NoPtx { archs: vec![86] });
}
