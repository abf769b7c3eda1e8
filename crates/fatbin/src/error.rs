use crate::Codec;

/// Everything that can go wrong while reading a CUDA image.
///
/// Offsets are byte offsets from the start of the structure being read (the
/// fatbin header for fatbin errors, the image start for ELF errors); entry
/// offsets name the entry header's position so a dump can be matched to the
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input holds no bytes at all (or a PTX string that is just its NUL).
    #[error("empty image")]
    Empty,

    #[error("bad {what} magic {found:#010x} (expected {expected:#010x})")]
    BadMagic { what: &'static str, found: u32, expected: u32 },

    /// Not a fatbin, fatbin wrapper, CUDA ELF or PTX text.
    #[error("unrecognised image format (first bytes {head:02x?})")]
    UnknownFormat { head: Vec<u8> },

    #[error("truncated {what}: {needed} bytes needed at offset {offset}, {available} available")]
    Truncated { what: &'static str, offset: u64, needed: u64, available: u64 },

    /// Behind a pointer, a range the image's headers declare cannot be read
    /// (see [`crate::Readable`]): the image is truncated or its sizes are
    /// corrupt.
    #[error("{what}: {needed} bytes declared at offset {offset} of the image, only {readable} readable (truncated image?)")]
    Unreadable { what: &'static str, offset: u64, needed: u64, readable: u64 },

    #[error("unsupported {what} version {version}")]
    UnsupportedVersion { what: &'static str, version: u32 },

    /// A header declares itself smaller than its fixed fields.
    #[error("{what} at offset {offset} declares header size {size}, below the minimum {min}")]
    HeaderTooSmall { what: &'static str, offset: u64, size: u64, min: u64 },

    /// Offset or size arithmetic left the 64-bit (or address) range.
    #[error("size overflow in {what} at offset {offset}")]
    Overflow { what: &'static str, offset: u64 },

    #[error("entry at offset {offset}: compressed size {compressed} exceeds payload size {payload}")]
    CompressedTooLarge { offset: u64, compressed: u64, payload: u64 },

    #[error("entry at offset {offset}: flags {flags:#x} name both LZ4 and Zstandard")]
    ConflictingCompression { offset: u64, flags: u64 },

    #[error("entry at offset {offset}: compressed size is set but flags {flags:#x} name no codec")]
    UnknownCompression { offset: u64, flags: u64 },

    /// LZ4 blocks do not record their decoded size; the entry header must.
    #[error("entry at offset {offset}: LZ4 payload without an uncompressed size")]
    MissingUncompressedSize { offset: u64 },

    /// The declared uncompressed size is larger than the codec can possibly
    /// produce from the stored bytes, or larger than [`crate::MAX_DECOMPRESSED_SIZE`].
    #[error("entry at offset {offset}: declared uncompressed size {size} is implausible")]
    ImplausibleSize { offset: u64, size: u64 },

    #[error("entry at offset {offset}: {codec} decompression failed: {message}")]
    Decompression { offset: u64, codec: Codec, message: String },

    #[error("entry at offset {offset}: {what} is {actual} bytes, header says {expected}")]
    SizeMismatch { offset: u64, what: &'static str, expected: u64, actual: u64 },

    /// The member table of a concatenated entry (nvcc `--concat`) is malformed.
    #[error("concatenated entry at offset {offset}: {reason}")]
    BadConcatTable { offset: u64, reason: &'static str },

    /// A concatenated member's range lies outside its container's data.
    #[error("member at offset {offset}: range {start}+{size} exceeds container data of {available} bytes")]
    MemberOutOfRange { offset: u64, start: u64, size: u64, available: u64 },

    #[error("entry at offset {offset} is {kind}, not PTX")]
    NotPtx { offset: u64, kind: crate::EntryKind },

    #[error("PTX text is not valid UTF-8 at byte {position}")]
    PtxNotUtf8 { position: u64 },

    /// The fatbin holds no PTX at all; `archs` lists the SASS (ELF) archs that
    /// are present, so the message can say what the binary was built for.
    /// The driver reports this as `CUDA_ERROR_NO_BINARY_FOR_GPU`.
    #[error("no PTX in the fatbin (SASS only, for {})", fmt_archs(.archs))]
    NoPtx { archs: Vec<u32> },

    /// PTX exists, but none the policy accepts for this target.
    #[error("no PTX usable for sm_{target} under {policy:?} policy (PTX present for {})", fmt_archs(.ptx_archs))]
    NoCompatiblePtx { target: u32, policy: crate::Policy, ptx_archs: Vec<u32> },

    /// A fatbin wrapper was given as bytes; its fatbin is elsewhere in memory
    /// and only [`crate::Image::from_ptr`] may follow the pointer.
    #[error("fatbin wrapper (version {version}) points to {fatbin_address:#x}; resolve it first")]
    UnresolvedWrapper { version: u32, fatbin_address: u64 },

    /// A host object or `ar` archive that cannot be read, or that carries no
    /// device code.
    #[error("{0}")]
    Object(String),

    #[error("null {what} pointer")]
    NullPointer { what: &'static str },

    /// An ELF image that is not a 64-bit little-endian CUDA (EM_CUDA = 190) object.
    #[error("ELF image is not a CUDA cubin ({reason})")]
    NotCudaElf { reason: &'static str },
}

fn fmt_archs(archs: &[u32]) -> String {
    if archs.is_empty() {
        return "no architecture".to_string();
    }
    archs.iter().map(|a| format!("sm_{a}")).collect::<Vec<_>>().join(", ")
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
