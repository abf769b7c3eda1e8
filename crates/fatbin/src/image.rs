//! Telling apart the image forms the driver API accepts.

use std::cell::Cell;
use std::ffi::{c_void, CStr};

use crate::error::{Error, Result};
use crate::fatbin::{fatbin_size, ArchVariant, EntryKind, Fatbin, ENTRY_HEADER_MIN, FATBIN_HEADER_SIZE, FATBIN_MAGIC};
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
/// PTX text behind a pointer is scanned for its NUL in runs, each checked
/// as a whole: the first ends at a multiple of `TEXT_RUN_MIN` bytes (a page
/// on common machines), each next one is twice as long, up to
/// `TEXT_RUN_MAX`, so a short text costs one check and a long one few.
const TEXT_RUN_MIN: usize = 4 << 10;
const TEXT_RUN_MAX: usize = 1 << 20;
/// A check asks about at least this many bytes (its answer is remembered,
/// see [`Remembered`]): neighbouring headers then cost one check.
const CHECK_AHEAD: usize = 8 << 10;

/// Which bytes of the caller's memory can be read without faulting.
///
/// The driver API passes module images as bare pointers; a truncated image
/// whose headers declare more bytes than the caller mapped would make any
/// reader fault. [`Image::from_ptr_checked`] asks this before it reads (or
/// borrows) a range, so such an image gives [`Error::Unreadable`] instead.
/// The crate itself has no way to ask the operating system; the caller
/// supplies the answer (the driver library asks the kernel, tests know
/// their buffers).
pub trait Readable {
    /// How many of the `len` bytes starting at address `addr` can be read,
    /// counted from `addr`: `len` when all of them can, less when a byte
    /// cannot (the first such byte's distance from `addr`, or less).
    fn readable_prefix(&self, addr: usize, len: usize) -> usize;
}

/// A [`Readable`] that remembers the readable range it learnt last (asking
/// for at least [`CHECK_AHEAD`] bytes each time), so that checks of nearby
/// ranges (the headers of a fatbin, one after the other) ask the caller's
/// `Readable`, which may be a system call, once.
struct Remembered<'m> {
    inner: &'m dyn Readable,
    known: Cell<(usize, usize)>,
}

impl Readable for Remembered<'_> {
    fn readable_prefix(&self, addr: usize, len: usize) -> usize {
        let (lo, hi) = self.known.get();
        if addr >= lo && addr < hi {
            let room = hi - addr;
            if room >= len {
                return len;
            }
        }
        let ask = len.max(CHECK_AHEAD).min(usize::MAX - addr);
        let got = self.inner.readable_prefix(addr, ask).min(ask);
        if got > 0 {
            self.known.set((addr, addr + got));
        }
        got.min(len)
    }
}

/// How [`Image::from_ptr_checked`] may touch memory.
#[derive(Clone, Copy)]
enum Access<'m> {
    /// Every byte the headers describe is readable (the caller's contract).
    Trusted,
    /// Ranges are checked before they are read.
    Checked(&'m dyn Readable),
}

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
    /// than the caller owns cannot be detected here; use
    /// [`Image::from_ptr_checked`] for that.
    #[allow(unsafe_code)]
    pub unsafe fn from_ptr(image: *const c_void) -> Result<Self> {
        // SAFETY: the caller's contract is this function's.
        unsafe { Self::from_ptr_with(image, Access::Trusted) }
    }

    /// [`Image::from_ptr`] for a caller that cannot promise the image is
    /// whole: before any range is read or borrowed (the wrapper, the fatbin
    /// header, the whole size the header declares, each ELF header table
    /// and the ELF extent, each run of PTX text up to its NUL), `memory`
    /// is asked whether it is readable, and a range that is not gives
    /// [`Error::Unreadable`]. The sizes are the image's own: nothing past
    /// what its headers declare is read, and the declared sizes are checked
    /// against each other (a fatbin's entries must tile the size its header
    /// declares) by [`Fatbin::parse`] before any payload is decoded.
    ///
    /// # Safety
    /// `image` must be null or a pointer into the caller's address space,
    /// and every byte `memory` reports readable must stay readable and
    /// unchanged for `'a`.
    #[allow(unsafe_code)]
    pub unsafe fn from_ptr_checked(image: *const c_void, memory: &dyn Readable) -> Result<Self> {
        let remembered = Remembered { inner: memory, known: Cell::new((0, 0)) };
        // SAFETY: ranges are checked with `memory` (caller's contract).
        unsafe { Self::from_ptr_with(image, Access::Checked(&remembered)) }
    }

    /// # Safety
    /// As [`Image::from_ptr`] for `Access::Trusted`, as
    /// [`Image::from_ptr_checked`] otherwise.
    #[allow(unsafe_code)]
    unsafe fn from_ptr_with(image: *const c_void, mem: Access<'_>) -> Result<Self> {
        let p = image.cast::<u8>();
        if p.is_null() {
            return Err(Error::NullPointer { what: "image" });
        }
        // The first bytes are read one at a time so a PTX string shorter
        // than a magic number is not overrun.
        let avail = match mem {
            Access::Trusted => 4,
            Access::Checked(m) => m.readable_prefix(p as usize, 4).min(4),
        };
        let mut head = [0u8; 4];
        for (i, slot) in head.iter_mut().enumerate() {
            if i >= avail {
                return Err(Error::Unreadable { what: "image", offset: 0, needed: 4, readable: avail as u64 });
            }
            // SAFETY: bytes before the first NUL are part of the image
            // whatever its form (none of the magics contains a NUL), and
            // this one is readable (trusted or checked above).
            let b = unsafe { p.add(i).read() };
            if b == 0 {
                // SAFETY: a NUL within the first 4 bytes: a C string.
                return unsafe { ptx_at(p, mem) };
            }
            *slot = b;
        }
        match u32::from_le_bytes(head) {
            WRAPPER_MAGIC => {
                // SAFETY: a wrapper is 24 bytes (caller's contract or checked).
                let w = Wrapper::parse(unsafe { raw(p, 0, WRAPPER_SIZE as u64, mem, "fatbin wrapper")? })?;
                let addr = usize::try_from(w.fatbin_address).map_err(|_| Error::Overflow { what: "fatbin address", offset: 8 })?;
                if addr == 0 {
                    return Err(Error::NullPointer { what: "wrapper's fatbin" });
                }
                // SAFETY: the wrapper points to a fatbin (caller's contract
                // or checked).
                let fatbin = unsafe { fatbin_at(addr as *const u8, mem)? };
                Ok(Image::Fatbin { wrapper: Some(w), fatbin })
            }
            FATBIN_MAGIC => Ok(Image::Fatbin {
                wrapper: None,
                // SAFETY: as above.
                fatbin: unsafe { fatbin_at(p, mem)? },
            }),
            ELF_MAGIC => {
                // SAFETY: each read covers header bytes the ELF header (or a
                // header table it locates) describes.
                let (extent, _) = elf_extent(|o, l| unsafe { raw(p, o, l, mem, "ELF image") })?;
                // SAFETY: the extent is what the headers describe.
                let bytes = unsafe { raw(p, 0, extent, mem, "ELF image")? };
                Ok(Image::Cubin(Cubin::parse(bytes)?))
            }
            // SAFETY: not a binary form, so NUL-terminated text.
            _ => unsafe { ptx_at(p, mem) },
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

/// `len` bytes at `p + offset`, with the arithmetic checked and, under
/// `Access::Checked`, the bytes' readability.
///
/// # Safety
/// Under `Access::Trusted` those bytes must be readable for `'a`; under
/// `Access::Checked`, bytes the check reports readable must stay so.
#[allow(unsafe_code)]
unsafe fn raw<'a>(p: *const u8, offset: u64, len: u64, mem: Access<'_>, what: &'static str) -> Result<&'a [u8]> {
    let overflow = Error::Overflow { what: "image address range", offset };
    let off = usize::try_from(offset).map_err(|_| overflow.clone())?;
    let n = usize::try_from(len).map_err(|_| overflow.clone())?;
    let end = off.checked_add(n).ok_or(overflow.clone())?;
    if end > isize::MAX as usize || (p as usize).checked_add(end).is_none() {
        return Err(overflow);
    }
    if let Access::Checked(m) = mem {
        let got = m.readable_prefix(p as usize + off, n).min(n);
        if got < n {
            return Err(Error::Unreadable { what, offset, needed: len, readable: got as u64 });
        }
    }
    // SAFETY: in range of the address space (checked) and readable (caller
    // or checked).
    Ok(unsafe { std::slice::from_raw_parts(p.wrapping_add(off), n) })
}

/// # Safety
/// `p` must point to a fatbin readable for `'a` (`Access::Trusted`), or to
/// memory whose readability `mem` reports.
#[allow(unsafe_code)]
unsafe fn fatbin_at<'a>(p: *const u8, mem: Access<'_>) -> Result<Fatbin<'a>> {
    // SAFETY: every fatbin starts with its 16-byte header.
    let header = unsafe { raw(p, 0, FATBIN_HEADER_SIZE as u64, mem, "fatbin header")? };
    let total = fatbin_size(header)?;
    if let Access::Checked(m) = mem {
        // SAFETY: ranges are checked with `m` (caller's contract).
        unsafe { check_fatbin(p, total, m)? };
    }
    // SAFETY: the header declares this many bytes; under `Access::Checked`
    // every part of them this crate reads was found readable above.
    Fatbin::parse(unsafe { raw(p, 0, total, Access::Trusted, "fatbin")? })
}

/// Walks the entries of the fatbin at `p`, `total` bytes as its header
/// declares, checking before each read that the bytes are readable: each
/// entry's header, the payloads this crate decodes (PTX and concatenated
/// containers), and the fatbin's last byte. The entries' sizes are checked
/// against each other on the way: each header at least its fixed part, each
/// payload within the declared total, the entries ending exactly there.
/// ELF, LTO IR and unknown payloads are listed, never read, so they are not
/// touched here (checking a whole fatbin costs about a microsecond per
/// 4 KiB page through `process_vm_readv`, and most of a large fatbin is
/// SASS nobody reads).
///
/// # Safety
/// `p` must be a pointer into the caller's address space (its readability
/// is what `m` reports).
#[allow(unsafe_code)]
unsafe fn check_fatbin(p: *const u8, total: u64, m: &dyn Readable) -> Result<()> {
    let mem = Access::Checked(m);
    // SAFETY (each `raw` below): checked with `m`.
    let header = unsafe { raw(p, 0, FATBIN_HEADER_SIZE as u64, mem, "fatbin header")? };
    let mut off = u64::from(read::u16_at(header, 6, "fatbin header")?);
    while off < total {
        let h = unsafe { raw(p, off, ENTRY_HEADER_MIN as u64, mem, "entry header")? };
        let kind = EntryKind::from_raw(read::u16_at(h, 0, "entry header")?);
        let size = u64::from(read::u32_at(h, 4, "entry header")?);
        let payload = read::u64_at(h, 8, "entry header")?;
        if size < ENTRY_HEADER_MIN as u64 {
            return Err(Error::HeaderTooSmall { what: "entry header", offset: off, size, min: ENTRY_HEADER_MIN as u64 });
        }
        let payload_at = read::add(off, size, "entry payload", off)?;
        let next = read::add(payload_at, payload, "entry payload", off)?;
        if next > total {
            return Err(Error::Truncated { what: "entry payload", offset: off, needed: next - off, available: total - off });
        }
        unsafe { raw(p, off, size, mem, "entry header")? };
        if matches!(kind, EntryKind::Ptx | EntryKind::Concat) {
            unsafe { raw(p, payload_at, payload, mem, "entry payload")? };
        }
        off = next;
    }
    if total > 0 {
        unsafe { raw(p, total - 1, 1, mem, "fatbin")? };
    }
    Ok(())
}

/// # Safety
/// `p` must point to a NUL-terminated string readable for `'a`
/// (`Access::Trusted`), or to memory whose readability `mem` reports.
#[allow(unsafe_code)]
unsafe fn ptx_at<'a>(p: *const u8, mem: Access<'_>) -> Result<Image<'a>> {
    let m = match mem {
        // SAFETY: NUL-terminated (caller).
        Access::Trusted => return Ok(Image::Ptx(classify_text(unsafe { CStr::from_ptr(p.cast()) }.to_bytes())?)),
        Access::Checked(m) => m,
    };
    // Runs end at multiples of their length, so a run never spans more
    // pages than it must; each is checked before it is scanned.
    let mut len = 0usize;
    let mut run_len = TEXT_RUN_MIN;
    loop {
        let addr = (p as usize).checked_add(len).ok_or(Error::Overflow { what: "PTX text", offset: len as u64 })?;
        let want = run_len - addr % run_len;
        run_len = (run_len * 2).min(TEXT_RUN_MAX);
        let got = m.readable_prefix(addr, want).min(want);
        // SAFETY: `got` bytes from `addr` are readable (checked).
        let run = unsafe { std::slice::from_raw_parts(addr as *const u8, got) };
        if let Some(i) = run.iter().position(|&b| b == 0) {
            len += i;
            break;
        }
        len += got;
        if got < want {
            return Err(Error::Unreadable { what: "PTX text (no terminating NUL)", offset: len as u64, needed: 1, readable: 0 });
        }
    }
    // SAFETY: the `len` bytes scanned above are readable.
    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
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
