//! `anycuda run`: puts anycuda's `libcuda.so.1` first on the program's
//! library path and replaces this process with the program.
//!
//! The dynamic loader finds `libcuda.so.1` by file name, and cudart dlopens
//! exactly that name, so the program needs a directory whose
//! `libcuda.so.1` is anycuda's library. Pointing `LD_LIBRARY_PATH` at
//! cargo's output directory would not do: the file there is `libcuda.so`,
//! and the directory holds every other build artefact. So `run` keeps a
//! directory of its own per library (keyed by the library's path) holding
//! only `libcuda.so.1` and `libcuda.so` symlinks, under the user's cache
//! directory. The same directory links anycuda's cuBLAS and cuBLASLt under
//! NVIDIA's names (`libcublas.so.13`, `libcublas.so.12`, `libcublasLt.so.13`,
//! `libcublasLt.so.12`) when they were built beside the driver, so programs
//! linked against NVIDIA's cuBLAS load anycuda's.
//!
//! Python programs find NVIDIA's run-time compilers differently: the
//! `cuda-pathfinder` package (behind `cuda-bindings`, numba-cuda, CuPy)
//! opens NVRTC and nvJitLink from NVIDIA's wheels by full path, unless a
//! library of that soname is already loaded in the process. So `run` also
//! preloads (`LD_PRELOAD`) anycuda's NVRTC 13 and 12 and nvJitLink 13:
//! their symbols carry the version of their soname, as NVIDIA's do, so a
//! program linked against one version never binds to the other; they load
//! NVIDIA's library only when a call needs it.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Names the library explicitly: a file, or a directory holding one.
pub const LIBRARY_ENV: &str = "ANYCUDA_LIBRARY";

/// anycuda's own failure (env(1)'s convention).
const EXIT_ANYCUDA: u8 = 125;
const EXIT_CANNOT_EXECUTE: u8 = 126;
const EXIT_NOT_FOUND: u8 = 127;

/// `memcheck`: the value of `ANYCUDA_MEMCHECK` to set (checked mode and
/// its tools), or None.
pub fn run(log: Option<&str>, log_file: Option<&Path>, memcheck: Option<&str>, command: &[OsString]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("anycuda run: no program given (usage: anycuda run [--log LEVEL] -- PROGRAM [ARGS...])");
        return ExitCode::from(2);
    };
    let lib = match find_library() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("anycuda run: {e}");
            return ExitCode::from(EXIT_ANYCUDA);
        }
    };
    let dir = match link_dir(&lib) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("anycuda run: {e}");
            return ExitCode::from(EXIT_ANYCUDA);
        }
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    cmd.env("LD_LIBRARY_PATH", prepend_path(&dir, std::env::var_os("LD_LIBRARY_PATH").as_deref()));
    if let Some(preload) = preload_list(&dir, std::env::var_os("LD_PRELOAD").as_deref()) {
        cmd.env("LD_PRELOAD", preload);
    }
    if let Some(level) = log {
        cmd.env("ANYCUDA_LOG", level);
    }
    if let Some(file) = log_file {
        cmd.env("ANYCUDA_LOG_FILE", file);
    }
    if let Some(tools) = memcheck {
        cmd.env("ANYCUDA_MEMCHECK", tools);
    }
    // Triton runs `ptxas` for its cubins: anycuda's writes PTX instead.
    if let Some(ptxas) = find_ptxas() {
        cmd.env(PTXAS_ENV, ptxas);
    }
    // Only returns on failure.
    let e = cmd.exec();
    let name = Path::new(program).display();
    match e.kind() {
        io::ErrorKind::NotFound => {
            if has_separator(program) {
                eprintln!("anycuda run: {name}: no such file");
            } else {
                eprintln!("anycuda run: {name}: command not found");
            }
            ExitCode::from(EXIT_NOT_FOUND)
        }
        io::ErrorKind::PermissionDenied => {
            eprintln!("anycuda run: {name}: permission denied");
            ExitCode::from(EXIT_CANNOT_EXECUTE)
        }
        _ => {
            eprintln!("anycuda run: {name}: cannot execute: {e}");
            ExitCode::from(EXIT_CANNOT_EXECUTE)
        }
    }
}

/// Where Triton looks for `ptxas`.
pub const PTXAS_ENV: &str = "TRITON_PTXAS_PATH";

/// anycuda's `ptxas`, beside this executable (cargo builds both into one
/// directory; an installation puts them in one `bin`).
fn find_ptxas() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.join("ptxas");
    p.is_file().then_some(p)
}

fn has_separator(program: &OsStr) -> bool {
    program.as_encoded_bytes().contains(&b'/')
}

fn prepend_path(dir: &Path, old: Option<&OsStr>) -> OsString {
    let mut v = dir.as_os_str().to_os_string();
    if let Some(old) = old.filter(|o| !o.is_empty()) {
        v.push(":");
        v.push(old);
    }
    v
}

/// The library `run` puts in place: `$ANYCUDA_LIBRARY`, else the one built
/// with this executable, else an installed one in `../lib`.
pub fn find_library() -> Result<PathBuf, String> {
    if let Some(v) = std::env::var_os(LIBRARY_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&v);
        let file = if p.is_dir() {
            ["libcuda.so.1", "libcuda.so"].iter().map(|n| p.join(n)).find(|c| c.is_file())
        } else {
            Some(p.clone()).filter(|c| c.is_file())
        };
        return file.ok_or_else(|| format!("{LIBRARY_ENV}={}: no libcuda.so.1 or libcuda.so there", p.display()));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the anycuda executable: {e}"))?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    // cargo puts the library next to the executable when the library crate
    // is itself built (`cargo build --workspace`), and only in deps/ when it
    // is built as this crate's dependency; either may be left from an older
    // build, so the newer one is the one of this build.
    let built = [dir.join("libcuda.so"), dir.join("deps").join("libcuda.so")]
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok().filter(|m| m.is_file())?.modified().ok()?, p)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p);
    if let Some(p) = built {
        return Ok(p);
    }
    let lib = dir.join("..").join("lib");
    let installed = [
        lib.join("anycuda").join("libcuda.so.1"),
        lib.join("anycuda").join("libcuda.so"),
        lib.join("libcuda.so.1"),
        lib.join("libcuda.so"),
    ];
    // ../lib of a system prefix may hold NVIDIA's driver: only a library
    // carrying anycuda's own strings qualifies.
    if let Some(p) = installed.iter().find(|p| p.is_file() && is_anycuda(p)) {
        return Ok(p.clone());
    }
    Err(format!(
        "cannot find anycuda's libcuda.so (looked for {}, {}, and libcuda.so.1 in {}); build it with `cargo build -p anycuda-libcuda` next to this executable, or set {LIBRARY_ENV} to its path",
        dir.join("libcuda.so").display(),
        dir.join("deps").join("libcuda.so").display(),
        lib.display()
    ))
}

/// Whether the file mentions `ANYCUDA_` (its environment variables), which
/// NVIDIA's library does not.
fn is_anycuda(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else { return false };
    let needle = b"ANYCUDA_";
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// The per-user base of the link directories.
fn base_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")));
    match cache {
        Some(c) => c.join("anycuda").join("run"),
        None => std::env::temp_dir().join(format!("anycuda-{}", current_uid())).join("run"),
    }
}

/// The real user id, as the owner of `/proc/self` shows it.
fn current_uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0)
}

fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The directory whose `libcuda.so.1` (and `libcuda.so`) link to `lib`.
///
/// Safe against concurrent invocations: directories are created with
/// "already exists" accepted, and a link that is missing or points
/// elsewhere is replaced by renaming a freshly made link over it, which is
/// atomic, so a program never sees a missing or half-made link.
pub fn link_dir(lib: &Path) -> Result<PathBuf, String> {
    let target = std::fs::canonicalize(lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    let base = base_dir();
    let dir = base.join(format!("{:016x}", fnv1a(target.as_os_str().as_encoded_bytes())));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Someone else's directory (a shared temporary directory) could hold
    // links to anything.
    let owner = std::fs::metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?.uid();
    if owner != current_uid() {
        return Err(format!("{} belongs to another user (uid {owner}); set XDG_CACHE_HOME", dir.display()));
    }
    for name in ["libcuda.so.1", "libcuda.so"] {
        ensure_link(&dir, name, &target).map_err(|e| format!("cannot create {}: {e}", dir.join(name).display()))?;
    }
    for (name, lib) in companion_libraries(&target) {
        ensure_link(&dir, name, &lib).map_err(|e| format!("cannot create {}: {e}", dir.join(name).display()))?;
    }
    Ok(dir)
}

/// The names NVIDIA's libraries beside the driver go by, and the files
/// cargo builds for anycuda's (in the driver's directory).
pub const COMPANIONS: &[(&str, &str)] = &[
    ("libcublas.so.13", "libcublas.so"),
    ("libcublas.so.12", "libcublas12.so"),
    ("libcublasLt.so.13", "libcublasLt.so"),
    ("libcublasLt.so.12", "libcublasLt12.so"),
    ("libnvrtc.so.13", "libnvrtc.so"),
    ("libnvrtc.so.12", "libnvrtc12.so"),
    ("libnvJitLink.so.13", "libnvjitlink.so"),
];

/// The companions `run` preloads (see the module's notes).
pub const PRELOADED: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvJitLink.so.13"];

/// `LD_PRELOAD` with the preloaded companions present in `dir` first, or
/// `None` when there are none.
fn preload_list(dir: &Path, old: Option<&OsStr>) -> Option<OsString> {
    let mut list = OsString::new();
    for name in PRELOADED.iter().map(|n| dir.join(n)).filter(|p| p.is_file()) {
        if !list.is_empty() {
            list.push(":");
        }
        list.push(name);
    }
    if list.is_empty() {
        return None;
    }
    if let Some(old) = old.filter(|o| !o.is_empty()) {
        list.push(":");
        list.push(old);
    }
    Some(list)
}

/// anycuda's libraries found beside the driver `lib` (the build directory,
/// or an installed `lib/anycuda`): `(NVIDIA's name, file)`.
fn companion_libraries(lib: &Path) -> Vec<(&'static str, PathBuf)> {
    let Some(dir) = lib.parent() else { return Vec::new() };
    COMPANIONS
        .iter()
        .filter_map(|(name, file)| {
            [dir.join(file), dir.join(name)]
                .into_iter()
                .find(|p| p.is_file())
                .and_then(|p| std::fs::canonicalize(p).ok())
                .map(|p| (*name, p))
        })
        .collect()
}

fn ensure_link(dir: &Path, name: &str, target: &Path) -> io::Result<()> {
    let link = dir.join(name);
    if std::fs::read_link(&link).is_ok_and(|t| t == target) {
        return Ok(());
    }
    // Unique among processes (pid) and among threads of this one (counter).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    std::fs::rename(&tmp, &link).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_path_is_prepended() {
        assert_eq!(prepend_path(Path::new("/a"), None), OsString::from("/a"));
        assert_eq!(prepend_path(Path::new("/a"), Some(OsStr::new(""))), OsString::from("/a"));
        assert_eq!(prepend_path(Path::new("/a"), Some(OsStr::new("/b:/c"))), OsString::from("/a:/b:/c"));
    }

    #[test]
    fn preloads_come_first_and_keep_the_users() {
        let dir = std::env::temp_dir().join(format!("anycuda-cli-preload-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(preload_list(&dir, Some(OsStr::new("/u.so"))), None);
        std::fs::write(dir.join("libnvJitLink.so.13"), b"x").unwrap();
        std::fs::write(dir.join("libnvrtc.so.13"), b"x").unwrap();
        let want = format!("{0}/libnvrtc.so.13:{0}/libnvJitLink.so.13", dir.display());
        assert_eq!(preload_list(&dir, None), Some(OsString::from(&want)));
        assert_eq!(preload_list(&dir, Some(OsStr::new(""))), Some(OsString::from(&want)));
        assert_eq!(preload_list(&dir, Some(OsStr::new("/u.so"))), Some(OsString::from(format!("{want}:/u.so"))));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn links_are_made_once_and_repaired() {
        let dir = std::env::temp_dir().join(format!("anycuda-cli-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.so");
        let b = dir.join("b.so");
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        ensure_link(&dir, "libcuda.so.1", &a).unwrap();
        ensure_link(&dir, "libcuda.so.1", &a).unwrap();
        assert_eq!(std::fs::read_link(dir.join("libcuda.so.1")).unwrap(), a);
        ensure_link(&dir, "libcuda.so.1", &b).unwrap();
        assert_eq!(std::fs::read_link(dir.join("libcuda.so.1")).unwrap(), b);
        // Concurrent makers all succeed and leave no temporary links.
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| ensure_link(&dir, "libcuda.so", &a).unwrap());
            }
        });
        let names: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
