//! `anycuda extract`: the device code a CUDA program carries, as files.
//!
//! nvcc puts each translation unit's device code in a fatbin inside the
//! host executable, shared library, object or archive (`.nv_fatbin`, or
//! `__nv_relfatbin` with `-rdc`). anycuda compiles the PTX entries of those
//! fatbins, and its diagnostics (`anycuda ptx`, memcheck and racecheck
//! reports, compile errors) give `line:column` in that PTX: this command
//! writes it out so the lines can be read, as `cuobjdump -xptx` does on
//! NVIDIA's side. Each entry is written as `<file>.<fatbin>.<arch>.ptx`
//! (PTX) or `.cubin` (SASS), the fatbins numbered from 1 in the order the
//! file holds them; `--list` prints the entries instead.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fatbin::{EntryKind, Fatbin, Image};

pub fn extract(files: &[PathBuf], out: Option<&Path>, list: bool) -> ExitCode {
    let out = out.unwrap_or(Path::new("."));
    if !list {
        if let Err(e) = std::fs::create_dir_all(out) {
            eprintln!("anycuda extract: cannot create {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    }
    let mut ok = true;
    for path in files {
        if let Err(e) = extract_file(path, out, list) {
            eprintln!("anycuda extract: {}: {e}", path.display());
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The fatbins of one file, each with the name its entries are written under
/// (`<file>` or, for an archive member, `<file>.<member>`).
fn fatbins_of<'a>(name: &str, bytes: &'a [u8]) -> Result<Vec<(String, &'a [u8])>, String> {
    if fatbin::is_archive(bytes) {
        let mut all = Vec::new();
        for (member, data) in fatbin::archive_members(bytes).map_err(|e| e.to_string())? {
            // Members without device code (host-only objects) are normal.
            if let Ok(found) = fatbin::host_object_fatbins(data) {
                let member = Path::new(&member).file_name().map_or(member.clone(), |m| m.to_string_lossy().into_owned());
                all.extend(found.into_iter().map(|f| (format!("{name}.{member}"), f)));
            }
        }
        if all.is_empty() {
            return Err("no member of the archive holds device code".to_string());
        }
        return Ok(all);
    }
    let magic = bytes.first_chunk::<4>().map(|m| u32::from_le_bytes(*m));
    if magic == Some(fatbin::FATBIN_MAGIC) {
        return Ok(vec![(name.to_string(), bytes)]);
    }
    if magic == Some(fatbin::ELF_MAGIC) {
        if let Ok(Image::Cubin(_)) = Image::parse(bytes) {
            return Err("a cubin holds SASS only: there is no PTX to extract".to_string());
        }
        let found = fatbin::host_object_fatbins(bytes).map_err(|e| e.to_string())?;
        return Ok(found.into_iter().map(|f| (name.to_string(), f)).collect());
    }
    Err("not a fatbin, an ELF executable, shared library or object, or an ar archive".to_string())
}

fn extract_file(path: &Path, out: &Path, list: bool) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let name = path.file_name().map_or_else(|| "device-code".to_string(), |n| n.to_string_lossy().into_owned());
    let fatbins = fatbins_of(&name, &bytes)?;
    for (number, (stem, bytes)) in fatbins.iter().enumerate() {
        let number = number + 1;
        let fatbin = Fatbin::parse(bytes).map_err(|e| format!("fatbin {number}: {e}"))?;
        for entry in fatbin.entries() {
            let kind = entry.kind();
            let suffix = match kind {
                EntryKind::Ptx => "ptx",
                EntryKind::Elf => "cubin",
                // A concatenated container's members follow it and are
                // written themselves; LTO IR has no plain payload.
                _ => {
                    if list {
                        println!("{name}: fatbin {number}: {kind} {}", entry.arch_name());
                    }
                    continue;
                }
            };
            let file = format!("{stem}.{number}.{}.{suffix}", entry.arch_name().replace("compute_", "sm_"));
            let data: Cow<[u8]> = match kind {
                EntryKind::Ptx => match entry.ptx_text().map_err(|e| format!("fatbin {number}, {file}: {e}"))? {
                    Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
                    Cow::Owned(s) => Cow::Owned(s.into_bytes()),
                },
                _ => entry.data().map_err(|e| format!("fatbin {number}, {file}: {e}"))?,
            };
            if list {
                let version = entry.ptx_version().map(|v| format!(" (PTX ISA {}.{})", v.major, v.minor)).unwrap_or_default();
                println!("{name}: fatbin {number}: {kind} {}{version}, {} bytes: {file}", entry.arch_name(), data.len());
            } else {
                let dest = out.join(&file);
                std::fs::write(&dest, &data).map_err(|e| format!("{}: {e}", dest.display()))?;
                println!("{}", dest.display());
            }
        }
    }
    Ok(())
}
