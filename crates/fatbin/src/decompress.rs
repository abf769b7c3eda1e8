//! Payload decoding.
//!
//! Zstandard goes through `ruzstd`, a pure-Rust decoder: this code runs
//! inside other people's processes on bytes they hand us, so a memory-safe
//! decoder with no C build (no libzstd, no cc step for zstd-sys) is worth more
//! than the C library's speed; the payloads decoded are one PTX entry per
//! module load, kilobytes to a few megabytes. LZ4 uses `lz4_flex`'s safe block
//! decoder, because nvcc stores LZ4 as a raw block without a frame.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use crate::error::{Error, Result};
use crate::fatbin::Compression;

/// The largest decoded payload accepted. Well above any real entry; it keeps
/// a corrupt size field or a decompression bomb from exhausting memory.
pub const MAX_DECOMPRESSED_SIZE: u64 = 4 << 30;

/// An LZ4 sequence cannot expand by more than about 255 times its input
/// (each extra length byte adds at most 255 bytes of output).
const LZ4_MAX_RATIO: u64 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    Lz4,
    Zstd,
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Codec::Lz4 => "LZ4",
            Codec::Zstd => "Zstandard",
        })
    }
}

/// A payload as stored, with what its header says about it.
#[derive(Debug, Clone)]
pub(crate) struct Stored<'a> {
    /// Entry offset, for error messages.
    pub offset: u64,
    /// The stored bytes, padding included.
    pub bytes: &'a [u8],
    pub compression: Compression,
    pub compressed_size: u32,
    pub uncompressed_size: u64,
}

pub(crate) fn decode<'a>(s: &Stored<'a>) -> Result<Cow<'a, [u8]>> {
    let offset = s.offset;
    let usz = s.uncompressed_size;
    if usz > MAX_DECOMPRESSED_SIZE {
        return Err(Error::ImplausibleSize { offset, size: usz });
    }
    // Entry parsing checked compressed_size <= bytes.len().
    let input = s.bytes.get(..s.compressed_size as usize).unwrap_or(s.bytes);
    match s.compression {
        Compression::None => {
            if usz == 0 {
                return Ok(Cow::Borrowed(s.bytes));
            }
            match usize::try_from(usz).ok().and_then(|n| s.bytes.get(..n)) {
                Some(b) => Ok(Cow::Borrowed(b)),
                None => Err(Error::SizeMismatch { offset, what: "raw payload", expected: usz, actual: s.bytes.len() as u64 }),
            }
        }
        Compression::Lz4 => lz4(input, usz, offset).map(Cow::Owned),
        Compression::Zstd => zstd(input, usz, offset).map(Cow::Owned),
    }
}

fn lz4(input: &[u8], usz: u64, offset: u64) -> Result<Vec<u8>> {
    if usz == 0 {
        return Err(Error::MissingUncompressedSize { offset });
    }
    let bound = (input.len() as u64).saturating_mul(LZ4_MAX_RATIO).saturating_add(64);
    if usz > bound {
        return Err(Error::ImplausibleSize { offset, size: usz });
    }
    let n = usize::try_from(usz).map_err(|_| Error::ImplausibleSize { offset, size: usz })?;
    let mut out = vec![0u8; n];
    let n = lz4_flex::block::decompress_into(input, &mut out).map_err(|e| Error::Decompression {
        offset,
        codec: Codec::Lz4,
        message: e.to_string(),
    })?;
    if n as u64 != usz {
        return Err(Error::SizeMismatch { offset, what: "decompressed LZ4 payload", expected: usz, actual: n as u64 });
    }
    Ok(out)
}

/// Decodes every frame in `input` (nvcc writes one; more are legal), with
/// output capped at the declared size, or at [`MAX_DECOMPRESSED_SIZE`] when
/// the header leaves it 0 (the frame then carries it).
fn zstd(mut input: &[u8], usz: u64, offset: u64) -> Result<Vec<u8>> {
    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    use ruzstd::decoding::StreamingDecoder;

    let fail = |message: String| Error::Decompression { offset, codec: Codec::Zstd, message };
    let limit = if usz != 0 { usz } else { MAX_DECOMPRESSED_SIZE };
    let mut out = Vec::new();
    if input.is_empty() {
        return Err(fail("empty stream".into()));
    }
    while !input.is_empty() {
        let mut dec = match StreamingDecoder::new(&mut input) {
            Ok(d) => d,
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame { length, .. })) => {
                // Skippable frames hold metadata only.
                let len = usize::try_from(length).unwrap_or(usize::MAX);
                input = input.get(len..).ok_or_else(|| fail("skippable frame runs past the end".into()))?;
                continue;
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        let room = limit + 1 - out.len() as u64;
        (&mut dec).take(room).read_to_end(&mut out).map_err(|e| fail(e.to_string()))?;
        if out.len() as u64 > limit {
            return Err(if usz != 0 {
                Error::SizeMismatch { offset, what: "decompressed Zstandard payload", expected: usz, actual: out.len() as u64 }
            } else {
                Error::ImplausibleSize { offset, size: out.len() as u64 }
            });
        }
        if !dec.decoder.is_finished() {
            return Err(fail("frame ends early".into()));
        }
        if let (Some(stored), Some(computed)) = (dec.decoder.get_checksum_from_data(), dec.decoder.get_calculated_checksum()) {
            if stored != computed {
                return Err(fail(format!("checksum mismatch (frame {stored:#010x}, data {computed:#010x})")));
            }
        }
    }
    if usz != 0 && out.len() as u64 != usz {
        return Err(Error::SizeMismatch { offset, what: "decompressed Zstandard payload", expected: usz, actual: out.len() as u64 });
    }
    Ok(out)
}
