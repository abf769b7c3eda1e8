//! Bounds-checked little-endian field access. Every read of untrusted bytes
//! in this crate goes through here, so a bad offset is an error, never a panic.

use crate::error::{Error, Result};

/// `bytes[offset..offset + len]`, or `Truncated` naming `what`.
pub(crate) fn slice<'a>(bytes: &'a [u8], offset: u64, len: u64, what: &'static str) -> Result<&'a [u8]> {
    let truncated = || Error::Truncated { what, offset, needed: len, available: (bytes.len() as u64).saturating_sub(offset) };
    let end = offset.checked_add(len).ok_or(Error::Overflow { what, offset })?;
    if end > bytes.len() as u64 {
        return Err(truncated());
    }
    // Both fit in usize now: they are <= bytes.len().
    Ok(&bytes[offset as usize..end as usize])
}

pub(crate) fn u16_at(bytes: &[u8], offset: u64, what: &'static str) -> Result<u16> {
    let s = slice(bytes, offset, 2, what)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

pub(crate) fn u32_at(bytes: &[u8], offset: u64, what: &'static str) -> Result<u32> {
    let s = slice(bytes, offset, 4, what)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

pub(crate) fn u64_at(bytes: &[u8], offset: u64, what: &'static str) -> Result<u64> {
    let s = slice(bytes, offset, 8, what)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Ok(u64::from_le_bytes(a))
}

pub(crate) fn add(a: u64, b: u64, what: &'static str, offset: u64) -> Result<u64> {
    a.checked_add(b).ok_or(Error::Overflow { what, offset })
}
