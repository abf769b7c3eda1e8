//! The CUDA fat binary container, as the driver receives it.
//!
//! A module image reaches `libcuda` as one of: a *fatbin wrapper* (magic
//! 0x466243b1, pointing to a fatbin), a *fatbin* (magic 0xBA55ED50: a header
//! and a list of entries, each PTX text or an ELF cubin for one
//! architecture, optionally LZ4- or Zstandard-compressed), a NUL-terminated
//! PTX text, or a bare ELF cubin. This crate tells them apart
//! ([`Image::parse`] for bytes, [`Image::from_ptr`] for a C pointer, and
//! [`Image::from_ptr_checked`] when the pointer's memory may be shorter than
//! the image's headers declare),
//! lists the entries ([`Fatbin::entries`]), decodes payloads
//! ([`Entry::data`], [`Entry::ptx_text`]) and picks the PTX to compile for a
//! device ([`Fatbin::select_ptx`] with a [`Policy`]).
//!
//! It knows nothing of PTX syntax or of the driver; every length and offset
//! in the input is checked, so malformed input gives an [`Error`], never a
//! panic. The only `unsafe` is [`Image::from_ptr`] and
//! [`Image::from_ptr_checked`], which have to trust the caller's pointer
//! (the second only as far as a [`Readable`] check says).
//!
//! ```
//! # fn load(bytes: &[u8]) -> Result<(), fatbin::Error> {
//! let image = fatbin::Image::parse(bytes)?;
//! let ptx = image.ptx(86, fatbin::Policy::Strict)?;
//! println!("compiling {} bytes of PTX for sm_{:?}", ptx.text.len(), ptx.arch);
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]
#![warn(missing_debug_implementations)]

mod decompress;
mod error;
mod fatbin;
mod host;
mod image;
mod read;
mod select;

#[cfg(test)]
mod tests;

pub use decompress::{Codec, MAX_DECOMPRESSED_SIZE};
pub use error::{Error, Result};
pub use fatbin::{
    fatbin_size, ArchVariant, Compression, Entry, EntryKind, Fatbin, Flags, PtxVersion, ENTRY_HEADER_MIN, FATBIN_HEADER_SIZE, FATBIN_MAGIC,
};
pub use host::{archive_members, host_object_fatbins, is_archive, FATBIN_SECTIONS};
pub use image::{Cubin, Image, Readable, Wrapper, ELF_MAGIC, EM_CUDA, WRAPPER_MAGIC, WRAPPER_SIZE};
pub use select::{runs_on, Policy, Ptx};
