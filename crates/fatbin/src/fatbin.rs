//! The fatbin container (magic 0xBA55ED50) and its entries.
//!
//! Layout, little endian, as nvcc 13.5's fatbinary writes it (checked on its
//! output; the integration tests keep checking):
//!
//! - Header, 16 bytes: u32 magic, u16 version (1), u16 header size (16),
//!   u64 size of the entries that follow.
//! - Each entry: a header of `header size` bytes, then `payload size` bytes
//!   (padded to 8); the next entry follows.
//!
//! | offset | field |
//! |---|---|
//! | 0x00 | u16 kind: 1 PTX, 2 ELF, 8 LTO IR, 0x100 concatenated |
//! | 0x02 | u16 0x0101 |
//! | 0x04 | u32 header size (member of a concatenated entry: payload start in the container's data) |
//! | 0x08 | u64 payload size, padded |
//! | 0x10 | u32 compressed size, 0 when raw |
//! | 0x14 | u32 offset in the header of the options descriptor (u32 offset, u32 length of a NUL-terminated string) or, for a concatenated entry, of its member table; 0 if none |
//! | 0x18 | u32 PTX ISA version, `major << 16 \| minor` (ELF: 0x10008) |
//! | 0x1c | u32 arch, 86 for sm_86 |
//! | 0x20 | u32 offset, u32 length of a NUL-terminated identifier (the source name; `-rdc`, `-G`) |
//! | 0x28 | u64 flags: 0x1 64-bit, 0x2 debug (`-G`), 0x10 Linux, 0x2000 LZ4, 0x8000 Zstandard, 0x10_0000 `a` arch, 0x20_0000 `f` family |
//! | 0x30 | u64 (0; LTO IR entries put a hash here) |
//! | 0x38 | u64 uncompressed size (0 for raw entries) |
//!
//! PTX headers are 0x50 bytes: an empty options descriptor at 0x40 points to
//! an empty string at 0x48. ELF headers are 0x40. A concatenated entry
//! (`nvcc --concat`) compresses its members' payloads as one stream; its
//! member table is u32 count, u32 table size (these 8 bytes included), then
//! one entry header per member, each laid out as above.

use std::borrow::Cow;
use std::fmt;

use crate::decompress::{self, Codec, Stored, MAX_DECOMPRESSED_SIZE};
use crate::error::{Error, Result};
use crate::read;
use crate::select::{self, Policy, Ptx};

/// Magic number at the start of a fatbin.
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// Size of the fixed fatbin header: magic, version, header size, entries size.
pub const FATBIN_HEADER_SIZE: usize = 16;
/// Fixed part of every entry header; kind-specific data (name, JIT options,
/// the member table of a concatenated entry) may follow up to `header_size`.
pub const ENTRY_HEADER_MIN: usize = 0x40;

const WHAT_ENTRY: &str = "entry header";

/// What an entry holds, from the u16 at entry offset 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    /// PTX text (kind 1), NUL-terminated, possibly compressed.
    Ptx,
    /// An ELF cubin with SASS (kind 2).
    Elf,
    /// NVVM IR for link-time optimisation (kind 8, `code=lto_XX`). Listed only;
    /// nvcc stores it with an extra flag (0x10000) and its payload is not a
    /// plain Zstandard frame, so [`Entry::data`] may fail on it.
    LtoIr,
    /// Several members sharing one compressed payload (kind 0x100, nvcc
    /// `--concat`). Its members follow it in [`Fatbin::entries`].
    Concat,
    /// Anything else; kept so a listing can show it, never fatal.
    Unknown(u16),
}

impl EntryKind {
    pub fn from_raw(raw: u16) -> Self {
        match raw {
            1 => EntryKind::Ptx,
            2 => EntryKind::Elf,
            8 => EntryKind::LtoIr,
            0x100 => EntryKind::Concat,
            other => EntryKind::Unknown(other),
        }
    }

    pub fn raw(self) -> u16 {
        match self {
            EntryKind::Ptx => 1,
            EntryKind::Elf => 2,
            EntryKind::LtoIr => 8,
            EntryKind::Concat => 0x100,
            EntryKind::Unknown(v) => v,
        }
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryKind::Ptx => f.write_str("PTX"),
            EntryKind::Elf => f.write_str("ELF"),
            EntryKind::LtoIr => f.write_str("LTO IR"),
            EntryKind::Concat => f.write_str("concatenated"),
            EntryKind::Unknown(v) => write!(f, "unknown kind {v:#x}"),
        }
    }
}

/// The u64 flags word of an entry header (entry offset 0x28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u64);

impl Flags {
    pub const ADDRESS_64: u64 = 0x1;
    /// Set by `nvcc -G`.
    pub const DEBUG: u64 = 0x2;
    pub const HOST_LINUX: u64 = 0x10;
    pub const COMPRESSED_LZ4: u64 = 0x2000;
    pub const COMPRESSED_ZSTD: u64 = 0x8000;
    /// `sm_XXa` / `compute_XXa`: runs only on exactly that architecture.
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    /// `sm_XXXf` / `compute_XXXf`: runs on the same major family, same or newer minor.
    pub const FAMILY_SPECIFIC: u64 = 0x20_0000;

    pub fn bits(self) -> u64 {
        self.0
    }
    pub fn contains(self, bit: u64) -> bool {
        self.0 & bit == bit
    }
    pub fn is_64bit(self) -> bool {
        self.contains(Self::ADDRESS_64)
    }
    pub fn has_debug_info(self) -> bool {
        self.contains(Self::DEBUG)
    }
    pub fn lz4(self) -> bool {
        self.contains(Self::COMPRESSED_LZ4)
    }
    pub fn zstd(self) -> bool {
        self.contains(Self::COMPRESSED_ZSTD)
    }
}

/// Which NVIDIA architecture flavour an entry is for (PTX ISA 8.0+/9.0+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArchVariant {
    /// `sm_90`: forward compatible (PTX JIT-compiles for any later arch).
    Generic,
    /// `sm_100f`: the same major family only.
    FamilySpecific,
    /// `sm_90a`: exactly this arch only.
    ArchSpecific,
}

impl ArchVariant {
    fn from_flags(flags: Flags) -> Self {
        if flags.contains(Flags::ARCH_SPECIFIC) {
            ArchVariant::ArchSpecific
        } else if flags.contains(Flags::FAMILY_SPECIFIC) {
            ArchVariant::FamilySpecific
        } else {
            ArchVariant::Generic
        }
    }

    pub fn suffix(self) -> &'static str {
        match self {
            ArchVariant::Generic => "",
            ArchVariant::FamilySpecific => "f",
            ArchVariant::ArchSpecific => "a",
        }
    }
}

/// PTX ISA version from entry offset 0x18 (`major << 16 | minor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PtxVersion {
    pub major: u16,
    pub minor: u16,
}

impl PtxVersion {
    pub fn from_raw(raw: u32) -> Self {
        PtxVersion { major: (raw >> 16) as u16, minor: raw as u16 }
    }
}

impl fmt::Display for PtxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

impl Compression {
    /// Compressed size 0 means raw whatever the flags say (nvcc sets no codec
    /// flag then, but a flag alone must not make us decode plain text).
    fn decide(flags: Flags, compressed_size: u32, offset: u64) -> Result<Self> {
        if compressed_size == 0 {
            return Ok(Compression::None);
        }
        match (flags.lz4(), flags.zstd()) {
            (true, true) => Err(Error::ConflictingCompression { offset, flags: flags.0 }),
            (true, false) => Ok(Compression::Lz4),
            (false, true) => Ok(Compression::Zstd),
            (false, false) => Err(Error::UnknownCompression { offset, flags: flags.0 }),
        }
    }

    pub fn codec(self) -> Option<Codec> {
        match self {
            Compression::None => None,
            Compression::Lz4 => Some(Codec::Lz4),
            Compression::Zstd => Some(Codec::Zstd),
        }
    }
}

/// Fields of the fixed 0x40-byte part of an entry header.
#[derive(Debug, Clone, Copy)]
struct RawHeader {
    kind: u16,
    /// Header size for top-level entries; payload offset inside the
    /// container's data for members of a concatenated entry.
    size_or_start: u32,
    payload_size: u64,
    compressed_size: u32,
    /// Offset inside the header of kind-specific data: the JIT options
    /// descriptor (u32 offset, u32 length) for code, the member table for a
    /// concatenated entry. 0 when absent.
    ext_offset: u32,
    version: u32,
    arch: u32,
    name_offset: u32,
    name_len: u32,
    flags: Flags,
    uncompressed_size: u64,
}

impl RawHeader {
    fn parse(h: &[u8]) -> Result<Self> {
        Ok(RawHeader {
            kind: read::u16_at(h, 0, WHAT_ENTRY)?,
            size_or_start: read::u32_at(h, 4, WHAT_ENTRY)?,
            payload_size: read::u64_at(h, 8, WHAT_ENTRY)?,
            compressed_size: read::u32_at(h, 0x10, WHAT_ENTRY)?,
            ext_offset: read::u32_at(h, 0x14, WHAT_ENTRY)?,
            version: read::u32_at(h, 0x18, WHAT_ENTRY)?,
            arch: read::u32_at(h, 0x1c, WHAT_ENTRY)?,
            name_offset: read::u32_at(h, 0x20, WHAT_ENTRY)?,
            name_len: read::u32_at(h, 0x24, WHAT_ENTRY)?,
            flags: Flags(read::u64_at(h, 0x28, WHAT_ENTRY)?),
            uncompressed_size: read::u64_at(h, 0x38, WHAT_ENTRY)?,
        })
    }

    /// The (offset, len) of the JIT options string inside the header, if the
    /// descriptor is there.
    fn options_range(&self, h: &[u8]) -> Option<(u64, u64)> {
        if self.ext_offset == 0 || matches!(EntryKind::from_raw(self.kind), EntryKind::Concat) {
            return None;
        }
        let d = u64::from(self.ext_offset);
        let off = read::u32_at(h, d, WHAT_ENTRY).ok()?;
        let len = read::u32_at(h, d + 4, WHAT_ENTRY).ok()?;
        Some((u64::from(off), u64::from(len)))
    }

    /// How many bytes fatbinary serialises for this header: the fixed part,
    /// then the NUL-terminated name, the options descriptor and the
    /// NUL-terminated options, padded to 8. Members of a concatenated entry
    /// do not record their header size, so this is how the table is walked.
    fn serialized_extent(&self, h: &[u8]) -> Option<u64> {
        let mut end = ENTRY_HEADER_MIN as u64;
        if self.name_len != 0 {
            end = end.max(u64::from(self.name_offset) + u64::from(self.name_len) + 1);
        }
        if self.ext_offset != 0 {
            end = end.max(u64::from(self.ext_offset) + 8);
            let (off, len) = self.options_range(h)?;
            end = end.max(off + len + 1);
        }
        end.checked_add(7).map(|e| e & !7)
    }
}

/// Where an entry's bytes come from.
#[derive(Debug, Clone)]
enum Store<'a> {
    /// The payload as stored in the fatbin (`payload_size` bytes).
    Direct(Stored<'a>),
    /// A member of a concatenated entry: `payload_size` bytes from `start`
    /// in the container's decoded data, then decoded by the member's own
    /// compression (none, in every nvcc output seen).
    Member { container: Stored<'a>, start: u64 },
}

/// One entry of a fatbin: a PTX text, an ELF cubin, a concatenated
/// container or its member, or something unknown.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    index: usize,
    offset: u64,
    kind: EntryKind,
    header: &'a [u8],
    header_size: u32,
    compression: Compression,
    container: Option<usize>,
    raw: RawHeader,
    store: Store<'a>,
}

impl<'a> Entry<'a> {
    /// Position in [`Fatbin::entries`].
    pub fn index(&self) -> usize {
        self.index
    }
    /// Offset of this entry's header from the start of the fatbin (for a
    /// member: of its header inside the container's member table).
    pub fn offset(&self) -> u64 {
        self.offset
    }
    pub fn kind(&self) -> EntryKind {
        self.kind
    }
    /// The sm/compute number, e.g. 86 for `sm_86` / `compute_86`.
    pub fn arch(&self) -> u32 {
        self.raw.arch
    }
    pub fn arch_variant(&self) -> ArchVariant {
        ArchVariant::from_flags(self.raw.flags)
    }
    /// `compute_90a` for PTX, `sm_86` for SASS, `arch_NN` otherwise.
    pub fn arch_name(&self) -> String {
        let prefix = match self.kind {
            EntryKind::Ptx => "compute",
            EntryKind::Elf => "sm",
            EntryKind::LtoIr => "lto",
            _ => "arch",
        };
        format!("{prefix}_{}{}", self.raw.arch, self.arch_variant().suffix())
    }
    /// The PTX ISA version, for PTX entries.
    pub fn ptx_version(&self) -> Option<PtxVersion> {
        (self.kind == EntryKind::Ptx).then(|| PtxVersion::from_raw(self.raw.version))
    }
    /// The raw u32 at entry offset 0x18 (for ELF entries nvcc writes 0x10008).
    pub fn raw_version(&self) -> u32 {
        self.raw.version
    }
    pub fn flags(&self) -> Flags {
        self.raw.flags
    }
    /// Header bytes (the fixed part plus kind-specific data).
    pub fn header_bytes(&self) -> &'a [u8] {
        self.header
    }
    pub fn header_size(&self) -> u32 {
        self.header_size
    }
    /// Stored payload size including padding (the next entry starts after it).
    pub fn payload_size(&self) -> u64 {
        self.raw.payload_size
    }
    /// Size of the compressed stream, 0 when stored raw.
    pub fn compressed_size(&self) -> u32 {
        self.raw.compressed_size
    }
    /// Decoded size from the header; 0 when not recorded (raw entries).
    pub fn uncompressed_size(&self) -> u64 {
        self.raw.uncompressed_size
    }
    pub fn compression(&self) -> Compression {
        self.compression
    }
    /// For a member of a concatenated entry: the container's index.
    pub fn container(&self) -> Option<usize> {
        self.container
    }
    /// For a member: where its payload starts in the container's decoded data.
    pub fn member_start(&self) -> Option<u64> {
        match self.store {
            Store::Member { start, .. } => Some(start),
            Store::Direct(_) => None,
        }
    }

    /// The identifier nvcc records with `-rdc`/`-G` (the source file name).
    /// Informational: a malformed descriptor reads as `None` rather than
    /// failing an entry whose code is intact.
    pub fn identifier(&self) -> Option<&'a str> {
        if self.raw.name_len == 0 {
            return None;
        }
        let s = read::slice(self.header, u64::from(self.raw.name_offset), u64::from(self.raw.name_len), WHAT_ENTRY).ok()?;
        std::str::from_utf8(s).ok()
    }

    /// Options the JIT compiler should honour (`-g`, `-O1`,
    /// `--compile-only`...), as recorded by nvcc; `None` when absent or empty.
    /// Informational, like [`Entry::identifier`].
    pub fn jit_options(&self) -> Option<&'a str> {
        let (off, len) = self.raw.options_range(self.header)?;
        if len == 0 {
            return None;
        }
        let s = read::slice(self.header, off, len, WHAT_ENTRY).ok()?;
        let s = std::str::from_utf8(s).ok()?;
        let s = s.trim_end_matches('\0').trim();
        (!s.is_empty()).then_some(s)
    }

    /// The payload as stored (possibly compressed, with padding). `None` for
    /// members of a concatenated entry, whose bytes exist only decoded.
    pub fn stored_payload(&self) -> Option<&'a [u8]> {
        match &self.store {
            Store::Direct(s) => Some(s.bytes),
            Store::Member { .. } => None,
        }
    }

    /// The decoded payload. Raw payloads are borrowed (padding included
    /// unless the header records the exact size); compressed ones are
    /// decoded and checked against the recorded size.
    pub fn data(&self) -> Result<Cow<'a, [u8]>> {
        match &self.store {
            Store::Direct(s) => decompress::decode(s),
            Store::Member { container, start } => {
                let all = decompress::decode(container)?;
                let out_of_range = || Error::MemberOutOfRange {
                    offset: self.offset,
                    start: *start,
                    size: self.raw.payload_size,
                    available: all.len() as u64,
                };
                let end = start.checked_add(self.raw.payload_size).ok_or_else(out_of_range)?;
                if end > all.len() as u64 {
                    return Err(out_of_range());
                }
                let (s, e) = (*start as usize, end as usize);
                let member = Stored {
                    offset: self.offset,
                    bytes: &all[s..e],
                    compression: self.compression,
                    compressed_size: self.raw.compressed_size,
                    uncompressed_size: self.raw.uncompressed_size,
                };
                Ok(Cow::Owned(decompress::decode(&member)?.into_owned()))
            }
        }
    }

    /// The PTX text without its terminating NUL and padding. Leading blank
    /// lines are kept so line numbers in diagnostics match `cuobjdump -ptx`.
    pub fn ptx_text(&self) -> Result<Cow<'a, str>> {
        if self.kind != EntryKind::Ptx {
            return Err(Error::NotPtx { offset: self.offset, kind: self.kind });
        }
        Ok(match self.data()? {
            Cow::Borrowed(b) => Cow::Borrowed(text_until_nul(b)?),
            Cow::Owned(v) => Cow::Owned(text_until_nul(&v)?.to_owned()),
        })
    }
}

/// The text up to (not including) the first NUL: the JIT reads PTX as a C
/// string, so whatever follows the NUL (padding) is not part of it.
pub(crate) fn text_until_nul(b: &[u8]) -> Result<&str> {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..n]).map_err(|e| Error::PtxNotUtf8 { position: e.valid_up_to() as u64 })
}

/// A parsed fatbin borrowing its bytes.
#[derive(Debug, Clone)]
pub struct Fatbin<'a> {
    bytes: &'a [u8],
    version: u16,
    header_size: u16,
    entries: Vec<Entry<'a>>,
}

/// Total size (header plus entries) a fatbin header declares, after checking
/// magic, version and header size. Needs only the first 16 bytes.
pub fn fatbin_size(header: &[u8]) -> Result<u64> {
    let magic = read::u32_at(header, 0, "fatbin header")?;
    if magic != FATBIN_MAGIC {
        return Err(Error::BadMagic { what: "fatbin", found: magic, expected: FATBIN_MAGIC });
    }
    let version = read::u16_at(header, 4, "fatbin header")?;
    if version != 1 {
        return Err(Error::UnsupportedVersion { what: "fatbin", version: u32::from(version) });
    }
    let header_size = read::u16_at(header, 6, "fatbin header")?;
    if usize::from(header_size) < FATBIN_HEADER_SIZE {
        return Err(Error::HeaderTooSmall {
            what: "fatbin header",
            offset: 0,
            size: u64::from(header_size),
            min: FATBIN_HEADER_SIZE as u64,
        });
    }
    let size = read::u64_at(header, 8, "fatbin header")?;
    read::add(u64::from(header_size), size, "fatbin size", 0)
}

impl<'a> Fatbin<'a> {
    /// Parses the fatbin at the start of `bytes`; bytes after the size the
    /// header declares are ignored (an `.nv_fatbin` section holds one fatbin
    /// per translation unit back to back).
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let total = fatbin_size(bytes)?;
        let fat = read::slice(bytes, 0, total, "fatbin")?;
        let version = read::u16_at(fat, 4, "fatbin header")?;
        let header_size = read::u16_at(fat, 6, "fatbin header")?;

        let mut entries = Vec::new();
        let mut off = u64::from(header_size);
        while off < total {
            let base = read::slice(fat, off, ENTRY_HEADER_MIN as u64, WHAT_ENTRY)?;
            let raw = RawHeader::parse(base)?;
            let hs = u64::from(raw.size_or_start);
            if hs < ENTRY_HEADER_MIN as u64 {
                return Err(Error::HeaderTooSmall { what: WHAT_ENTRY, offset: off, size: hs, min: ENTRY_HEADER_MIN as u64 });
            }
            let header = read::slice(fat, off, hs, WHAT_ENTRY)?;
            let payload_at = read::add(off, hs, "entry payload", off)?;
            let payload = read::slice(fat, payload_at, raw.payload_size, "entry payload")?;
            let next = read::add(payload_at, raw.payload_size, "entry payload", off)?;

            let entry = make_entry(entries.len(), off, header, raw, payload)?;
            let is_concat = entry.kind == EntryKind::Concat;
            let container = entry.store.clone();
            let index = entry.index;
            entries.push(entry);
            if is_concat {
                let Store::Direct(stored) = container else { unreachable!("top-level entries are direct") };
                parse_members(&mut entries, index, off, header, &raw, stored)?;
            }
            off = next;
        }
        Ok(Fatbin { bytes: fat, version, header_size, entries })
    }

    /// Exactly the bytes this fatbin spans.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// Header plus entries, in bytes.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }
    pub fn version(&self) -> u16 {
        self.version
    }
    pub fn header_size(&self) -> u16 {
        self.header_size
    }
    /// All entries in file order; a concatenated entry is followed by its
    /// members (which have [`Entry::container`] set).
    pub fn entries(&self) -> &[Entry<'a>] {
        &self.entries
    }
    /// PTX entries, members of concatenated entries included.
    pub fn ptx_entries(&self) -> impl Iterator<Item = &Entry<'a>> {
        self.entries.iter().filter(|e| e.kind == EntryKind::Ptx)
    }
    /// Sorted, deduplicated archs of the ELF (SASS) entries.
    pub fn sass_archs(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.entries.iter().filter(|e| e.kind == EntryKind::Elf).map(Entry::arch).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The PTX entry `policy` picks for a device of compute capability
    /// `target` (86 for sm_86). See [`Policy`].
    pub fn select_ptx(&self, target: u32, policy: Policy) -> Result<&Entry<'a>> {
        select::select(self, target, policy)
    }

    /// [`Fatbin::select_ptx`], then the entry's text.
    pub fn extract_ptx(&self, target: u32, policy: Policy) -> Result<Ptx<'a>> {
        let e = self.select_ptx(target, policy)?;
        Ok(Ptx { text: e.ptx_text()?, arch: Some(e.arch()), variant: e.arch_variant(), version: e.ptx_version(), entry: Some(e.index) })
    }
}

/// Checks an entry header's sizes against each other before anything of
/// its payload is read: the compressed stream lies within the payload, a
/// raw payload holds the size it records, and no decoded size exceeds
/// [`MAX_DECOMPRESSED_SIZE`].
fn check_sizes(raw: &RawHeader, offset: u64) -> Result<Compression> {
    if u64::from(raw.compressed_size) > raw.payload_size {
        return Err(Error::CompressedTooLarge { offset, compressed: u64::from(raw.compressed_size), payload: raw.payload_size });
    }
    let compression = Compression::decide(raw.flags, raw.compressed_size, offset)?;
    if raw.uncompressed_size > MAX_DECOMPRESSED_SIZE {
        return Err(Error::ImplausibleSize { offset, size: raw.uncompressed_size });
    }
    if compression == Compression::None && raw.uncompressed_size > raw.payload_size {
        return Err(Error::SizeMismatch { offset, what: "raw payload", expected: raw.uncompressed_size, actual: raw.payload_size });
    }
    Ok(compression)
}

fn make_entry<'a>(index: usize, offset: u64, header: &'a [u8], raw: RawHeader, payload: &'a [u8]) -> Result<Entry<'a>> {
    let compression = check_sizes(&raw, offset)?;
    Ok(Entry {
        index,
        offset,
        kind: EntryKind::from_raw(raw.kind),
        header,
        header_size: raw.size_or_start,
        compression,
        container: None,
        raw,
        store: Store::Direct(Stored {
            offset,
            bytes: payload,
            compression,
            compressed_size: raw.compressed_size,
            uncompressed_size: raw.uncompressed_size,
        }),
    })
}

/// Reads the member table of a concatenated entry (nvcc 13 `--concat`):
/// at the header's extension offset, u32 member count and u32 table size
/// (including these 8 bytes), then one entry header per member whose size
/// field holds the member's start in the container's decoded data.
fn parse_members<'a>(
    entries: &mut Vec<Entry<'a>>,
    container: usize,
    offset: u64,
    header: &'a [u8],
    raw: &RawHeader,
    stored: Stored<'a>,
) -> Result<()> {
    let bad = |reason| Error::BadConcatTable { offset, reason };
    if raw.ext_offset == 0 {
        return Err(bad("no member table"));
    }
    let t = u64::from(raw.ext_offset);
    let count = read::u32_at(header, t, "concat member table")?;
    let table_size = u64::from(read::u32_at(header, t + 4, "concat member table")?);
    if table_size < 8 {
        return Err(bad("member table smaller than its own header"));
    }
    let table = read::slice(header, t, table_size, "concat member table")?;
    let body = &table[8..];
    if count == 0 {
        return if body.is_empty() { Ok(()) } else { Err(bad("members listed without a count")) };
    }
    // Each member header is at least the fixed part, so the count is bounded
    // by the table (this also bounds the Vec growth below).
    if u64::from(count) > body.len() as u64 / ENTRY_HEADER_MIN as u64 {
        return Err(bad("member count exceeds the table"));
    }

    let ranges = member_ranges(body, count).ok_or_else(|| bad("member headers do not tile the table"))?;
    let body_at = offset + t + 8;
    for (start, len) in ranges {
        let h = &body[start..start + len];
        let m = RawHeader::parse(h)?;
        let moff = body_at + start as u64;
        let compression = check_sizes(&m, moff)?;
        let mstart = u64::from(m.size_or_start);
        // When the container records its decoded size, check the member
        // range now so a bad table fails at load, not at first use.
        let decoded = if stored.compression == Compression::None { stored.bytes.len() as u64 } else { stored.uncompressed_size };
        if decoded != 0 && mstart.checked_add(m.payload_size).is_none_or(|end| end > decoded) {
            return Err(Error::MemberOutOfRange { offset: moff, start: mstart, size: m.payload_size, available: decoded });
        }
        entries.push(Entry {
            index: entries.len(),
            offset: moff,
            kind: EntryKind::from_raw(m.kind),
            header: h,
            header_size: len as u32,
            compression,
            container: Some(container),
            raw: m,
            store: Store::Member { container: stored.clone(), start: mstart },
        });
    }
    Ok(())
}

/// Splits the member table body into one header per member. Member headers
/// carry no size of their own: walk by each header's serialised extent and
/// accept it when the walk ends exactly at the table's end; failing that,
/// accept equal shares (every nvcc table seen has uniform members).
fn member_ranges(body: &[u8], count: u32) -> Option<Vec<(usize, usize)>> {
    let walk = || -> Option<Vec<(usize, usize)>> {
        let mut out = Vec::with_capacity(count as usize);
        let mut at = 0usize;
        for _ in 0..count {
            let rest = body.get(at..)?;
            let fixed = rest.get(..ENTRY_HEADER_MIN)?;
            let raw = RawHeader::parse(fixed).ok()?;
            // The descriptor and strings may sit beyond the fixed part.
            let ext = usize::try_from(raw.serialized_extent(rest)?).ok()?;
            if ext > rest.len() {
                return None;
            }
            out.push((at, ext));
            at += ext;
        }
        (at == body.len()).then_some(out)
    };
    if let Some(v) = walk() {
        return Some(v);
    }
    let n = count as usize;
    if !body.len().is_multiple_of(n) || body.len() / n < ENTRY_HEADER_MIN {
        return None;
    }
    let each = body.len() / n;
    Some((0..n).map(|i| (i * each, each)).collect())
}
