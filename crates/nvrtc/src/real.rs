//! NVIDIA's library behind each of anycuda's: found where the program
//! would have found it, never anycuda's own file.
//!
//! The search: the file or directory the library's environment variable
//! names (`ANYCUDA_NVRTC_LIBRARY`, `ANYCUDA_NVRTC12_LIBRARY`,
//! `ANYCUDA_NVJITLINK_LIBRARY`), and only that when it is set; otherwise
//! the dynamic loader's own places for the soname: the directories of
//! `LD_LIBRARY_PATH`, then `$CUDA_HOME`/`$CUDA_PATH`, then the CUDA
//! toolkit's and the system's library directories; last, NVIDIA's Python
//! wheels (`nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib` for NVRTC 12) in the
//! `site-packages` directories the process has loaded extension modules
//! from: Python programs get the toolkit from wheels, beside the
//! `cuda-bindings` modules that call the library. A candidate is skipped
//! when it is the shared object this code runs in (anycuda's library sits
//! first on the search path under the same name) or when it lacks a symbol
//! only NVIDIA's library has.

use std::ffi::c_void;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::log::{debug, error};

/// One of NVIDIA's libraries.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The file name the dynamic loader looks for (`libnvrtc.so.13`).
    pub soname: &'static str,
    /// The environment variable that names the library (a file, or a
    /// directory holding `soname`).
    pub env: &'static str,
    /// A symbol NVIDIA's library exports and anycuda's does not.
    pub marker: &'static str,
    /// For messages: `NVRTC 13`.
    pub what: &'static str,
    /// Where NVIDIA's Python wheels put the library, relative to a
    /// `site-packages` directory.
    pub wheel_dirs: &'static [&'static str],
}

/// NVIDIA's library, open for this process's lifetime.
#[derive(Debug)]
pub struct Real {
    lib: libloading::Library,
    pub path: PathBuf,
}

impl Real {
    /// Finds and opens NVIDIA's library. `own` is any address inside the
    /// calling shared object (to skip its own file).
    pub fn load(spec: &Spec, own: *const c_void) -> Result<Real, String> {
        let own = own_file(own);
        let (candidates, from_env) = candidates(spec);
        if candidates.is_empty() {
            return Err(format!("{}: not set to a file or a directory holding {}", spec.env, spec.soname));
        }
        let mut tried = Vec::new();
        for c in candidates {
            if !c.is_file() {
                if from_env {
                    tried.push(format!("{} (no such file)", c.display()));
                }
                continue;
            }
            let canon = std::fs::canonicalize(&c).unwrap_or_else(|_| c.clone());
            if own.as_deref() == Some(canon.as_path()) {
                continue;
            }
            // SAFETY: opening NVIDIA's library runs its initialisers, as
            // the program's own dlopen would have.
            let lib = unsafe { libloading::os::unix::Library::open(Some(&c), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            match lib {
                Ok(lib) => {
                    // SAFETY: only the symbol's presence is checked.
                    let nvidia = unsafe { lib.get::<*const c_void>(spec.marker.as_bytes()) }.is_ok();
                    if nvidia {
                        debug!("{}: using NVIDIA's library {}", spec.what, c.display());
                        return Ok(Real { lib: lib.into(), path: c });
                    }
                    tried.push(format!("{} (not NVIDIA's: no {})", c.display(), spec.marker));
                }
                Err(e) => tried.push(format!("{} ({e})", c.display())),
            }
        }
        let hint =
            if from_env { String::new() } else { format!("; set {} to NVIDIA's {} (the file or its directory)", spec.env, spec.soname) };
        let tried = if tried.is_empty() { String::from("no candidate file found") } else { format!("tried {}", tried.join(", ")) };
        Err(format!("NVIDIA's {} ({}) not found: {tried}{hint}", spec.what, spec.soname))
    }

    /// The function `name` of NVIDIA's library.
    ///
    /// # Safety
    /// `T` must be the function pointer type of `name`.
    pub unsafe fn get<T: Copy>(&self, name: &str) -> Option<T> {
        // SAFETY: the caller names the symbol's type.
        unsafe { self.lib.get::<T>(name.as_bytes()).ok().map(|s| *s) }
    }
}

/// Opens the library once per process; logs the reason it cannot be had
/// (once) and returns `None` then.
pub fn load_once(cell: &'static std::sync::OnceLock<Option<Real>>, spec: &Spec, own: *const c_void) -> Option<&'static Real> {
    cell.get_or_init(|| match Real::load(spec, own) {
        Ok(r) => Some(r),
        Err(e) => {
            error!("{e}");
            None
        }
    })
    .as_ref()
}

/// The canonical path of the shared object holding `addr`.
fn own_file(addr: *const c_void) -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let p = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    std::fs::canonicalize(&p).ok().or(Some(p))
}

/// The files to try, in order, and whether they come from the environment
/// variable.
pub fn candidates(spec: &Spec) -> (Vec<PathBuf>, bool) {
    if let Some(v) = std::env::var_os(spec.env).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v);
        let file = if p.is_dir() { p.join(spec.soname) } else { p };
        return (vec![file], true);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&v).filter(|d| !d.as_os_str().is_empty()));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let root = PathBuf::from(v);
            dirs.push(root.join("lib64"));
            dirs.push(root.join("lib"));
        }
    }
    let arch = std::env::consts::ARCH;
    let target = if arch == "aarch64" { "sbsa-linux" } else { "x86_64-linux" };
    for d in [
        "/usr/local/cuda/lib64".to_string(),
        format!("/usr/local/cuda/targets/{target}/lib"),
        format!("/usr/lib/{arch}-linux-gnu"),
        format!("/lib/{arch}-linux-gnu"),
        "/usr/lib64".to_string(),
        "/usr/lib".to_string(),
    ] {
        dirs.push(PathBuf::from(d));
    }
    for site in python_site_dirs(&std::fs::read_to_string("/proc/self/maps").unwrap_or_default()) {
        dirs.extend(spec.wheel_dirs.iter().map(|w| site.join(w)));
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let f = d.join(spec.soname);
        if !files.contains(&f) {
            files.push(f);
        }
    }
    (files, false)
}

/// The `site-packages` (or Debian's `dist-packages`) directories that
/// objects mapped into the process (`/proc/self/maps` text) were loaded
/// from, in the order they first appear.
pub fn python_site_dirs(maps: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        // The path, the last field, may contain spaces; nothing before it
        // contains a slash.
        let Some(path) = line.find('/').map(|i| &line[i..]) else { continue };
        for marker in ["/site-packages/", "/dist-packages/"] {
            if let Some(i) = path.find(marker) {
                let dir = PathBuf::from(&path[..i + marker.len() - 1]);
                if !out.contains(&dir) {
                    out.push(dir);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_packages_of_loaded_modules() {
        let maps = "\
7f00-7f01 r--p 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6
7f02-7f03 r-xp 00001000 08:01 456                        /home/u/my env/lib/python3.11/site-packages/cuda/bindings/nvrtc.cpython-311-x86_64-linux-gnu.so
7f04-7f05 r--p 00000000 08:01 457 /home/u/my env/lib/python3.11/site-packages/numpy/core/x.so
7f06-7f07 rw-p 00000000 00:00 0 [heap]
7f08-7f09 r--p 00000000 08:01 458 /usr/lib/python3/dist-packages/y.so
7f0a-7f0b rw-p 00000000 00:00 0
";
        assert_eq!(
            python_site_dirs(maps),
            vec![PathBuf::from("/home/u/my env/lib/python3.11/site-packages"), PathBuf::from("/usr/lib/python3/dist-packages")]
        );
    }
}
