//! Telling apart the image forms the driver API accepts.

use std::ffi::{c_void, CStr};

use crate::error::{Error, Result};
use crate::fatbin::{fatbin_size, ArchVariant, Fatbin, FATBIN_HEADER_SIZE, FATBIN_MAGIC};
use crate::read;
use crate::select::{Policy, Ptx};

/// Magic of the fatbin wrapper (`__fatBinC_Wrapper_t`) that nvcc puts in
/// `.nvFatBinSegment` and cudart passes to `__cudaRegisterFatBinary`.
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// u32 magic, u32 version, u64 fatbin pointer, u64 auxiliary pointer.
pub const WRAPPER_SIZE: usize = 24;
/// `\x7fELF` read as a little-endian u32.
pub const ELF_MAGIC: u32 = 0x464C_457F;
/// e_machine of NVIDIA cubins.
pub const EM_CUDA: u16 = 190;
/// Section type without file contents (.bss-like): not part of the extent.
const SHT_NOBITS: u32 = 8;

/// A parsed fatbin wrapper. The fatbin it describes lives elsewhere in the
/// caller's memory, at `fatbin_address`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Wrapper {
    /// 1 for the wrapper of a whole program; 2 for the one nvcc emits for
    /// separately compiled (`-rdc`) code awaiting a device link.
    pub version: u32,
    pub fatbin_address: u64,
    /// Version 1: 0 (or a file name); version 2: the prelinked fatbins list.
    pub aux: u64,
}

impl Wrapper {
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let what = "fatbin wrapper";
        let magic = read::u32_at(bytes, 0, what)?;
        if magic != WRAPPER_MAGIC {
            return Err(Error::BadMagic { what, found: magic, expected: WRAPPER_MAGIC });
        }
        let version = read::u32_at(bytes, 4, what)?;
        if !(1..=2).contains(&version) {
            return Err(Error::UnsupportedVersion { what, version });
        }
        Ok(Wrapper { version, fatbin_address: read::u64_at(bytes, 8, what)?, aux: read::u64_at(bytes, 16, what)? })
    }
}

/// An ELF cubin (SASS), trimmed to the extent its headers describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cubin<'a> {
    bytes: &'a [u8],
    arch: Option<u32>,
}

impl<'a> Cubin<'a> {
    /// Checks that `bytes` starts with a 64-bit little-endian EM_CUDA ELF and
    /// keeps the part its section and program headers cover.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let (extent, arch) = elf_extent(|o, l| read::slice(bytes, o, l, "ELF image"))?;
        let bytes = read::slice(bytes, 0, extent, "ELF image")?;
        Ok(Cubin { bytes, arch })
    }
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The SASS arch from `e_flags` (86 for sm_86), when the layout of the
    /// flags is known for the cubin's ELF ABI version.
    pub fn arch(&self) -> Option<u32> {
        self.arch
    }
}

/// How far an ELF image extends: the furthest end of the ELF header, the
/// program and section header tables, and every segment and section with
/// file contents. `read(offset, len)` must return exactly those bytes.
fn elf_extent<'b>(mut read: impl FnMut(u64, u64) -> Result<&'b [u8]>) -> Result<(u64, Option<u32>)> {
    const WHAT: &str = "ELF header";
    let eh = read(0, 64)?;
    if read::u32_at(eh, 0, WHAT)? != ELF_MAGIC {
        return Err(Error::BadMagic { what: "ELF", found: read::u32_at(eh, 0, WHAT)?, expected: ELF_MAGIC });
    }
    if eh[4] != 2 {
        return Err(Error::NotCudaElf { reason: "not a 64-bit ELF" });
    }
    if eh[5] != 1 {
        return Err(Error::NotCudaElf { reason: "not little-endian" });
    }
    if read::u16_at(eh, 18, WHAT)? != EM_CUDA {
        return Err(Error::NotCudaElf { reason: "e_machine is not EM_CUDA (190)" });
    }
    let abi_version = eh[8];
    let e_flags = read::u32_at(eh, 0x30, WHAT)?;
    // ABI version 8 (CUDA 12.8+) moved the SM number up a byte.
    let arch = match abi_version {
        0..=7 => Some(e_flags & 0xff),
        8 => Some((e_flags >> 8) & 0xff),
        _ => None,
    }
    .filter(|&a| a != 0);

    let phoff = read::u64_at(eh, 0x20, WHAT)?;
    let shoff = read::u64_at(eh, 0x28, WHAT)?;
    let ehsize = u64::from(read::u16_at(eh, 0x34, WHAT)?);
    let phentsize = u64::from(read::u16_at(eh, 0x36, WHAT)?);
    let phnum = u64::from(read::u16_at(eh, 0x38, WHAT)?);
    let shentsize = u64::from(read::u16_at(eh, 0x3a, WHAT)?);
    let mut shnum = u64::from(read::u16_at(eh, 0x3c, WHAT)?);

    let mut end = ehsize.max(64);
    let mut extend = |off: u64, len: u64, what: &'static str| -> Result<()> {
        end = end.max(read::add(off, len, what, off)?);
        Ok(())
    };

    if phnum != 0 {
        if phentsize < 0x38 {
            return Err(Error::HeaderTooSmall { what: "ELF program header", offset: phoff, size: phentsize, min: 0x38 });
        }
        let len = phnum * phentsize; // u16 * u16: no overflow
        let table = read(phoff, len)?;
        extend(phoff, len, "ELF program headers")?;
        for i in 0..phnum {
            let at = i * phentsize;
            let off = read::u64_at(table, at + 8, "ELF program header")?;
            let filesz = read::u64_at(table, at + 0x20, "ELF program header")?;
            extend(off, filesz, "ELF segment")?;
        }
    }
    if shoff != 0 {
        if shentsize < 0x40 {
            return Err(Error::HeaderTooSmall { what: "ELF section header", offset: shoff, size: shentsize, min: 0x40 });
        }
        // With 0xff00 or more sections the count lives in section 0's sh_size.
        if shnum == 0 {
            let first = read(shoff, shentsize)?;
            shnum = read::u64_at(first, 0x20, "ELF section header")?;
        }
        let len = shnum.checked_mul(shentsize).ok_or(Error::Overflow { what: "ELF section headers", offset: shoff })?;
        let table = read(shoff, len)?;
        extend(shoff, len, "ELF section headers")?;
        for i in 0..shnum {
            let at = i * shentsize; // < len, which did not overflow
            let sh_type = read::u32_at(table, at + 4, "ELF section header")?;
            if sh_type != SHT_NOBITS {
                let off = read::u64_at(table, at + 0x18, "ELF section header")?;
                let size = read::u64_at(table, at + 0x20, "ELF section header")?;
                extend(off, size, "ELF section")?;
            }
        }
    }
    Ok((end, arch))
}

/// A module image in any form the driver API accepts.
#[derive(Debug, Clone)]
pub enum Image<'a> {
    /// A fatbin, reached directly or (from a pointer) through a wrapper.
    Fatbin { wrapper: Option<Wrapper>, fatbin: Fatbin<'a> },
    /// PTX source, without its terminating NUL.
    Ptx(&'a str),
    /// An ELF cubin: SASS only, which our backends cannot run.
    Cubin(Cubin<'a>),
}

impl<'a> Image<'a> {
    /// Classifies a byte image: a fatbin, an ELF cubin, or PTX text (read up
    /// to its first NUL, or the end of `bytes`). A fatbin wrapper cannot be
    /// followed from bytes alone and yields [`Error::UnresolvedWrapper`];
    /// parse it with [`Wrapper::parse`] and pass the fatbin it points to.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        if bytes.is_empty() {
            return Err(Error::Empty);
        }
        match read::u32_at(bytes, 0, "image").ok() {
            Some(WRAPPER_MAGIC) => {
                let w = Wrapper::parse(bytes)?;
                Err(Error::UnresolvedWrapper { version: w.version, fatbin_address: w.fatbin_address })
            }
            Some(FATBIN_MAGIC) => Ok(Image::Fatbin { wrapper: None, fatbin: Fatbin::parse(bytes)? }),
            Some(ELF_MAGIC) => Ok(Image::Cubin(Cubin::parse(bytes)?)),
            _ => Ok(Image::Ptx(classify_text(bytes)?)),
        }
    }

    /// Classifies the image behind a pointer received from a C caller
    /// (`cuModuleLoadData`, `cuModuleLoadFatBinary`, `cuLibraryLoadData`...),
    /// which passes no length. The length comes from the headers:
    /// - a fatbin wrapper (24 bytes) gives the fatbin's address, whose 16-byte
    ///   header gives its total size;
    /// - a fatbin is read as its header declares;
    /// - an ELF cubin extends to the end of its furthest section, segment or
    ///   header table, read from its ELF header and header tables;
    /// - anything else is taken to be PTX text and read up to its NUL.
    ///
    /// Only those header bytes are read before the size is known, and never
    /// more than the size: the first bytes are read one at a time so a PTX
    /// string shorter than a magic number is not overrun.
    ///
    /// # Safety
    /// `image` must be null (an error) or point to one of the forms above,
    /// with every byte its headers describe readable and unchanged for `'a`
    /// (a wrapper's fatbin pointer included), and PTX text NUL-terminated —
    /// the same contract NVIDIA's driver has. Headers that claim more memory
    /// than the caller owns cannot be detected here.
    #[allow(unsafe_code)]
    pub unsafe fn from_ptr(image: *const c_void) -> Result<Self> {
        let p = image.cast::<u8>();
        if p.is_null() {
            return Err(Error::NullPointer { what: "image" });
        }
        let mut head = [0u8; 4];
        for (i, slot) in head.iter_mut().enumerate() {
            // SAFETY: bytes before the first NUL are part of the image
            // whatever its form; none of the magics contains a NUL.
            let b = unsafe { p.add(i).read() };
            if b == 0 {
                // SAFETY: a NUL within the first 4 bytes: a C string.
                return unsafe { ptx_at(p) };
            }
            *slot = b;
        }
        match u32::from_le_bytes(head) {
            WRAPPER_MAGIC => {
                // SAFETY: a wrapper is 24 bytes (caller's contract).
                let w = Wrapper::parse(unsafe { raw(p, 0, WRAPPER_SIZE as u64)? })?;
                let addr = usize::try_from(w.fatbin_address).map_err(|_| Error::Overflow { what: "fatbin address", offset: 8 })?;
                if addr == 0 {
                    return Err(Error::NullPointer { what: "wrapper's fatbin" });
                }
                // SAFETY: the wrapper points to a fatbin (caller's contract).
                let fatbin = unsafe { fatbin_at(addr as *const u8)? };
                Ok(Image::Fatbin { wrapper: Some(w), fatbin })
            }
            FATBIN_MAGIC => Ok(Image::Fatbin {
                wrapper: None,
                // SAFETY: as above.
                fatbin: unsafe { fatbin_at(p)? },
            }),
            ELF_MAGIC => {
                // SAFETY: each read covers header bytes the ELF header (or a
                // header table it locates) describes.
                let (extent, _) = elf_extent(|o, l| unsafe { raw(p, o, l) })?;
                // SAFETY: the extent is what the headers describe.
                let bytes = unsafe { raw(p, 0, extent)? };
                Ok(Image::Cubin(Cubin::parse(bytes)?))
            }
            // SAFETY: not a binary form, so NUL-terminated text.
            _ => unsafe { ptx_at(p) },
        }
    }

    /// The fatbin, if this image is one.
    pub fn fatbin(&self) -> Option<&Fatbin<'a>> {
        match self {
            Image::Fatbin { fatbin, .. } => Some(fatbin),
            _ => None,
        }
    }

    /// The PTX to compile for a device of compute capability `target`.
    /// Bare PTX text is returned as is; a cubin gives [`Error::NoPtx`].
    pub fn ptx(&self, target: u32, policy: Policy) -> Result<Ptx<'a>> {
        match self {
            Image::Fatbin { fatbin, .. } => fatbin.extract_ptx(target, policy),
            Image::Ptx(text) => Ok(Ptx { text: (*text).into(), arch: None, variant: ArchVariant::Generic, version: None, entry: None }),
            Image::Cubin(c) => Err(Error::NoPtx { archs: c.arch().into_iter().collect() }),
        }
    }
}

/// `len` bytes at `p + offset`, with the arithmetic checked.
///
/// # Safety
/// Those bytes must be readable for `'a`.
#[allow(unsafe_code)]
unsafe fn raw<'a>(p: *const u8, offset: u64, len: u64) -> Result<&'a [u8]> {
    let overflow = Error::Overflow { what: "image address range", offset };
    let off = usize::try_from(offset).map_err(|_| overflow.clone())?;
    let n = usize::try_from(len).map_err(|_| overflow.clone())?;
    let end = off.checked_add(n).ok_or(overflow.clone())?;
    if end > isize::MAX as usize || (p as usize).checked_add(end).is_none() {
        return Err(overflow);
    }
    // SAFETY: in range of the address space (checked) and readable (caller).
    Ok(unsafe { std::slice::from_raw_parts(p.wrapping_add(off), n) })
}

/// # Safety
/// `p` must point to a fatbin readable for `'a`.
#[allow(unsafe_code)]
unsafe fn fatbin_at<'a>(p: *const u8) -> Result<Fatbin<'a>> {
    // SAFETY: every fatbin starts with its 16-byte header.
    let header = unsafe { raw(p, 0, FATBIN_HEADER_SIZE as u64)? };
    let total = fatbin_size(header)?;
    // SAFETY: the header declares this many bytes.
    Fatbin::parse(unsafe { raw(p, 0, total)? })
}

/// # Safety
/// `p` must point to a NUL-terminated string readable for `'a`.
#[allow(unsafe_code)]
unsafe fn ptx_at<'a>(p: *const u8) -> Result<Image<'a>> {
    // SAFETY: NUL-terminated (caller).
    let bytes = unsafe { CStr::from_ptr(p.cast()) }.to_bytes();
    Ok(Image::Ptx(classify_text(bytes)?))
}

/// Text up to the first NUL, if it looks like text at all: a non-ASCII first
/// byte or control bytes other than whitespace mean some binary this crate
/// does not know.
fn classify_text(bytes: &[u8]) -> Result<&str> {
    let n = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    let t = &bytes[..n];
    if t.is_empty() {
        return Err(Error::Empty);
    }
    let unknown = || Error::UnknownFormat { head: bytes[..bytes.len().min(8)].to_vec() };
    // PTX begins with whitespace, a comment or a directive: ASCII.
    let binary = !t[0].is_ascii() || t.iter().any(|&c| (c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)) || c == 0x7f);
    if binary {
        return Err(unknown());
    }
    std::str::from_utf8(t).map_err(|e| Error::PtxNotUtf8 { position: e.valid_up_to() as u64 })
}
