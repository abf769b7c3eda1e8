//! Compiler options that ask for machine code, rewritten to ask for PTX.
//!
//! NVRTC takes the architecture as `-arch=V`, `--gpu-architecture=V`, or
//! either name followed by the value as the next option. `V` may be a real
//! architecture (`sm_80`, `sm_90a`, `sm_100f`), a virtual one
//! (`compute_80`), or `native` (the device of the current process). A real
//! or native architecture becomes the virtual one of the same number and
//! suffix, so NVIDIA's compiler stops at PTX; the caller is told which
//! machine code was asked for ([`Rewritten::real_arch`]), to answer the
//! cubin queries with that PTX.

/// The options to pass on, and what they asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub options: Vec<String>,
    /// The real architecture asked for (`sm_80`), when one was: the last
    /// architecture option's, as NVRTC takes the last.
    pub real_arch: Option<String>,
    /// The virtual architecture compiled for instead (`compute_80`).
    pub virtual_arch: Option<String>,
    /// Whether LTO-IR was asked for (`-dlto`, `--dlink-time-opt`,
    /// `-gen-lto`): no PTX is made then, so the cubin queries go to NVIDIA.
    pub lto: bool,
}

/// The virtual architecture for an architecture value, or `None` when the
/// value asks for no machine code (already virtual, or unknown: left for
/// NVIDIA's compiler to judge). `native` needs the device's compute
/// capability (`major * 10 + minor`).
pub fn virtual_of(value: &str, native: &dyn Fn() -> Option<u32>) -> Option<String> {
    if value == "native" {
        let cc = native()?;
        return Some(format!("compute_{cc}"));
    }
    let rest = value.strip_prefix("sm_")?;
    let digits = rest.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!("compute_{rest}"))
}

const ARCH_NAMES: [&str; 2] = ["-arch", "--gpu-architecture"];

/// Rewrites NVRTC's options (see the module documentation).
pub fn rewrite(options: &[String], native: &dyn Fn() -> Option<u32>) -> Rewritten {
    let mut out = Vec::with_capacity(options.len());
    let mut real_arch = None;
    let mut virtual_arch = None;
    let mut lto = false;
    let mut i = 0;
    while i < options.len() {
        let o = &options[i];
        i += 1;
        if matches!(o.as_str(), "-dlto" | "--dlink-time-opt" | "-gen-lto") {
            lto = true;
        }
        // `NAME=VALUE`, or `NAME` then `VALUE`.
        let split = ARCH_NAMES.iter().find_map(|n| {
            if o == n {
                Some((*n, None))
            } else {
                o.strip_prefix(n).and_then(|r| r.strip_prefix('=')).map(|v| (*n, Some(v.to_string())))
            }
        });
        let Some((name, value)) = split else {
            out.push(o.clone());
            continue;
        };
        let (value, separate) = match value {
            Some(v) => (v, false),
            None if i < options.len() => {
                i += 1;
                (options[i - 1].clone(), true)
            }
            None => {
                out.push(o.clone());
                continue;
            }
        };
        match virtual_of(&value, native) {
            Some(v) => {
                real_arch = Some(value.clone());
                if separate {
                    out.push(name.to_string());
                    out.push(v.clone());
                } else {
                    out.push(format!("{name}={v}"));
                }
                virtual_arch = Some(v);
            }
            None => {
                if value.starts_with("compute_") {
                    real_arch = None;
                    virtual_arch = Some(value.clone());
                }
                if separate {
                    out.push(name.to_string());
                    out.push(value);
                } else {
                    out.push(o.clone());
                }
            }
        }
    }
    Rewritten { options: out, real_arch, virtual_arch, lto }
}

/// The compute capability of device 0 as the process's CUDA driver
/// (anycuda's, under `anycuda run`) reports it, for `-arch=native`.
pub fn native_compute_capability() -> Option<u32> {
    type Init = unsafe extern "C" fn(u32) -> i32;
    type DeviceGet = unsafe extern "C" fn(*mut i32, i32) -> i32;
    type Attribute = unsafe extern "C" fn(*mut i32, i32, i32) -> i32;
    const MAJOR: i32 = 75;
    const MINOR: i32 = 76;
    // SAFETY: the CUDA driver's documented entry points, with their C
    // signatures; the library stays loaded (the process uses it anyway).
    unsafe {
        let lib = libloading::Library::new("libcuda.so.1").ok()?;
        let init: Init = *lib.get::<Init>(b"cuInit\0").ok()?;
        let get: DeviceGet = *lib.get::<DeviceGet>(b"cuDeviceGet\0").ok()?;
        let attr: Attribute = *lib.get::<Attribute>(b"cuDeviceGetAttribute\0").ok()?;
        if init(0) != 0 {
            return None;
        }
        let mut dev = 0;
        if get(&mut dev, 0) != 0 {
            return None;
        }
        let (mut major, mut minor) = (0, 0);
        if attr(&mut major, MAJOR, dev) != 0 || attr(&mut minor, MINOR, dev) != 0 {
            return None;
        }
        std::mem::forget(lib);
        u32::try_from(major * 10 + minor).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn none() -> Option<u32> {
        None
    }

    #[test]
    fn real_architectures_become_virtual() {
        let r = rewrite(&strings(&["--gpu-architecture=sm_80", "-default-device"]), &none);
        assert_eq!(r.options, strings(&["--gpu-architecture=compute_80", "-default-device"]));
        assert_eq!(r.real_arch.as_deref(), Some("sm_80"));
        assert_eq!(r.virtual_arch.as_deref(), Some("compute_80"));
        let r = rewrite(&strings(&["-arch=sm_90a"]), &none);
        assert_eq!(r.options, strings(&["-arch=compute_90a"]));
        let r = rewrite(&strings(&["-arch", "sm_100f", "-lineinfo"]), &none);
        assert_eq!(r.options, strings(&["-arch", "compute_100f", "-lineinfo"]));
        assert_eq!(r.real_arch.as_deref(), Some("sm_100f"));
        let r = rewrite(&strings(&["--gpu-architecture", "sm_75"]), &none);
        assert_eq!(r.options, strings(&["--gpu-architecture", "compute_75"]));
    }

    #[test]
    fn virtual_and_unknown_values_pass_unchanged() {
        let r = rewrite(&strings(&["-arch=compute_80", "-rdc=true"]), &none);
        assert_eq!(r.options, strings(&["-arch=compute_80", "-rdc=true"]));
        assert_eq!(r.real_arch, None);
        let r = rewrite(&strings(&["-arch=sm_xyz", "--gpu-architecture"]), &none);
        assert_eq!(r.options, strings(&["-arch=sm_xyz", "--gpu-architecture"]));
        assert_eq!(r.real_arch, None);
        // An option merely starting like one is not one.
        let r = rewrite(&strings(&["-architecture=sm_80"]), &none);
        assert_eq!(r.options, strings(&["-architecture=sm_80"]));
    }

    #[test]
    fn the_last_architecture_wins() {
        let r = rewrite(&strings(&["-arch=sm_80", "-arch=compute_75"]), &none);
        assert_eq!(r.real_arch, None);
        assert_eq!(r.virtual_arch.as_deref(), Some("compute_75"));
        let r = rewrite(&strings(&["-arch=compute_75", "-arch=sm_86"]), &none);
        assert_eq!(r.real_arch.as_deref(), Some("sm_86"));
        assert_eq!(r.options, strings(&["-arch=compute_75", "-arch=compute_86"]));
    }

    #[test]
    fn native_uses_the_device() {
        let r = rewrite(&strings(&["-arch=native"]), &|| Some(86));
        assert_eq!(r.options, strings(&["-arch=compute_86"]));
        assert_eq!(r.real_arch.as_deref(), Some("native"));
        // No device: left for NVIDIA's compiler (which reports it).
        let r = rewrite(&strings(&["-arch=native"]), &none);
        assert_eq!(r.options, strings(&["-arch=native"]));
    }

    #[test]
    fn lto_is_noticed() {
        assert!(rewrite(&strings(&["-arch=sm_80", "-dlto"]), &none).lto);
        assert!(!rewrite(&strings(&["-arch=sm_80"]), &none).lto);
    }
}
