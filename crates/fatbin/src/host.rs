//! Device code inside host objects and `ar` archives: what `nvcc -c` and
//! `nvcc -dc` (`-rdc=true`) leave in a `.o`, and what `ar` makes of several.
//!
//! A host ELF object carries its fatbins in the `.nv_fatbin` section (whole
//! programs) or `__nv_relfatbin` (relocatable device code), one per
//! translation unit, back to back.

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection};

use crate::error::{Error, Result};
use crate::fatbin::{fatbin_size, FATBIN_MAGIC};
use crate::read;

/// Sections of a host object that hold fatbins.
pub const FATBIN_SECTIONS: [&str; 2] = ["__nv_relfatbin", ".nv_fatbin"];

/// The fatbins a host ELF object embeds, in section order; each slice spans
/// exactly one fatbin. An object without any gives [`Error::Object`].
pub fn host_object_fatbins(bytes: &[u8]) -> Result<Vec<&[u8]>> {
    let file = object::File::parse(bytes).map_err(|e| Error::Object(format!("not a host object: {e}")))?;
    let mut out = Vec::new();
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        if !FATBIN_SECTIONS.contains(&name) {
            continue;
        }
        let data = section.data().map_err(|e| Error::Object(format!("section {name}: {e}")))?;
        let mut off = 0u64;
        while (off as usize) < data.len() {
            let rest = &data[off as usize..];
            // Fatbins are 8-byte aligned in the section; zero padding may follow one.
            if read::u32_at(rest, 0, "fatbin").ok() != Some(FATBIN_MAGIC) {
                if rest.iter().all(|&b| b == 0) {
                    break;
                }
                return Err(Error::Object(format!("section {name}: no fatbin at offset {off}")));
            }
            let size = fatbin_size(rest)?;
            out.push(read::slice(rest, 0, size, "fatbin")?);
            off = read::add(off, size.next_multiple_of(8), "fatbin", off)?;
        }
    }
    if out.is_empty() {
        return Err(Error::Object(format!(
            "the object holds no device code (no {} section): compile it with nvcc -dc or -rdc=true",
            FATBIN_SECTIONS.join(" or ")
        )));
    }
    Ok(out)
}

/// Whether `bytes` start like an `ar` archive.
pub fn is_archive(bytes: &[u8]) -> bool {
    bytes.starts_with(b"!<arch>\n") || bytes.starts_with(b"!<thin>\n")
}

/// The members of an `ar` archive, as (name, contents), in archive order;
/// the symbol table and long-name table are left out.
pub fn archive_members(bytes: &[u8]) -> Result<Vec<(String, &[u8])>> {
    let archive = ArchiveFile::parse(bytes).map_err(|e| Error::Object(format!("not an ar archive: {e}")))?;
    let mut out = Vec::new();
    for member in archive.members() {
        let member = member.map_err(|e| Error::Object(format!("archive member: {e}")))?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let data = member.data(bytes).map_err(|e| Error::Object(format!("archive member {name}: {e}")))?;
        out.push((name, data));
    }
    Ok(out)
}
