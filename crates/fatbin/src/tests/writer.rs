//! A small fatbin writer for tests, laying entries out the way nvcc 13's
//! fatbinary does (see the layout notes in fatbin.rs): 8-byte padding, name and
//! options after the fixed header, codec flags, member tables.

use crate::Codec;

pub const PTX_9_5: u32 = 0x0009_0005;
const FLAGS_BASE: u64 = 0x11; // 64-bit, Linux host

#[derive(Debug, Clone)]
pub struct TestEntry {
    pub kind: u16,
    pub arch: u32,
    pub version: u32,
    pub flags: u64,
    /// Decoded payload (for PTX: the text plus its NUL).
    pub payload: Vec<u8>,
    pub codec: Option<Codec>,
    pub name: Option<String>,
    /// `Some("")` writes an empty options descriptor, as nvcc does for PTX.
    pub options: Option<String>,
}

pub fn ptx(arch: u32, text: &str) -> TestEntry {
    let mut payload = text.as_bytes().to_vec();
    payload.push(0);
    TestEntry { kind: 1, arch, version: PTX_9_5, flags: FLAGS_BASE, payload, codec: None, name: None, options: Some(String::new()) }
}

pub fn elf(arch: u32, bytes: &[u8]) -> TestEntry {
    TestEntry { kind: 2, arch, version: 0x0001_0008, flags: FLAGS_BASE, payload: bytes.to_vec(), codec: None, name: None, options: None }
}

impl TestEntry {
    pub fn lz4(mut self) -> Self {
        self.codec = Some(Codec::Lz4);
        self
    }
    pub fn zstd(mut self) -> Self {
        self.codec = Some(Codec::Zstd);
        self
    }
    pub fn flag(mut self, bit: u64) -> Self {
        self.flags |= bit;
        self
    }
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }
    pub fn options(mut self, opts: &str) -> Self {
        self.options = Some(opts.to_string());
        self
    }
}

/// What goes into the fatbin: plain entries or a `--concat` container.
#[derive(Debug, Clone)]
pub enum Item {
    Entry(TestEntry),
    Concat { members: Vec<TestEntry>, codec: Codec },
}

impl From<TestEntry> for Item {
    fn from(e: TestEntry) -> Self {
        Item::Entry(e)
    }
}

pub fn pad8(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(8) {
        v.push(0);
    }
}

pub fn compress(codec: Codec, data: &[u8]) -> Vec<u8> {
    match codec {
        Codec::Lz4 => lz4_flex::block::compress(data),
        Codec::Zstd => ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest),
    }
}

fn codec_flag(codec: Option<Codec>) -> u64 {
    match codec {
        None => 0,
        Some(Codec::Lz4) => 0x2000,
        Some(Codec::Zstd) => 0x8000,
    }
}

struct Fixed {
    kind: u16,
    size_or_start: u32,
    payload_size: u64,
    compressed_size: u32,
    version: u32,
    arch: u32,
    flags: u64,
    uncompressed_size: u64,
}

/// Header bytes: fixed part, then name, options descriptor and options;
/// `ext` is the extension data for a concat container (its member table).
fn header(f: &Fixed, name: Option<&str>, options: Option<&str>, ext: Option<&[u8]>) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut name_off = 0u32;
    let mut name_len = 0u32;
    if let Some(n) = name {
        name_off = 0x40;
        name_len = n.len() as u32;
        tail.extend_from_slice(n.as_bytes());
        tail.push(0);
        pad8(&mut tail);
    }
    let mut ext_off = 0u32;
    if let Some(o) = options {
        ext_off = 0x40 + tail.len() as u32;
        let str_off = ext_off + 8;
        tail.extend_from_slice(&str_off.to_le_bytes());
        tail.extend_from_slice(&(o.len() as u32).to_le_bytes());
        tail.extend_from_slice(o.as_bytes());
        tail.push(0);
        pad8(&mut tail);
    }
    if let Some(x) = ext {
        ext_off = 0x40 + tail.len() as u32;
        tail.extend_from_slice(x);
        pad8(&mut tail);
    }
    let size_or_start = if f.kind == 0x100 || f.size_or_start == u32::MAX { 0x40 + tail.len() as u32 } else { f.size_or_start };
    let mut h = Vec::with_capacity(0x40 + tail.len());
    h.extend_from_slice(&f.kind.to_le_bytes());
    h.extend_from_slice(&0x0101u16.to_le_bytes());
    h.extend_from_slice(&size_or_start.to_le_bytes());
    h.extend_from_slice(&f.payload_size.to_le_bytes());
    h.extend_from_slice(&f.compressed_size.to_le_bytes());
    h.extend_from_slice(&ext_off.to_le_bytes());
    h.extend_from_slice(&f.version.to_le_bytes());
    h.extend_from_slice(&f.arch.to_le_bytes());
    h.extend_from_slice(&name_off.to_le_bytes());
    h.extend_from_slice(&name_len.to_le_bytes());
    h.extend_from_slice(&f.flags.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes());
    h.extend_from_slice(&f.uncompressed_size.to_le_bytes());
    assert_eq!(h.len(), 0x40);
    h.extend_from_slice(&tail);
    h
}

/// Stored payload (padded), compressed size and uncompressed size fields.
fn store(codec: Option<Codec>, data: &[u8]) -> (Vec<u8>, u32, u64) {
    match codec {
        None => {
            let mut v = data.to_vec();
            pad8(&mut v);
            (v, 0, 0)
        }
        Some(c) => {
            let mut v = compress(c, data);
            let csz = v.len() as u32;
            pad8(&mut v);
            (v, csz, data.len() as u64)
        }
    }
}

fn entry_bytes(e: &TestEntry) -> Vec<u8> {
    let (stored, csz, usz) = store(e.codec, &e.payload);
    let f = Fixed {
        kind: e.kind,
        size_or_start: u32::MAX,
        payload_size: stored.len() as u64,
        compressed_size: csz,
        version: e.version,
        arch: e.arch,
        flags: e.flags | codec_flag(e.codec),
        uncompressed_size: usz,
    };
    let mut out = header(&f, e.name.as_deref(), e.options.as_deref(), None);
    out.extend_from_slice(&stored);
    out
}

fn concat_bytes(members: &[TestEntry], codec: Codec) -> Vec<u8> {
    let mut blob = Vec::new();
    let mut table = Vec::new();
    table.extend_from_slice(&(members.len() as u32).to_le_bytes());
    table.extend_from_slice(&0u32.to_le_bytes()); // patched below
    for m in members {
        let start = blob.len() as u32;
        let mut p = m.payload.clone();
        pad8(&mut p);
        let f = Fixed {
            kind: m.kind,
            size_or_start: start,
            payload_size: p.len() as u64,
            compressed_size: 0,
            version: m.version,
            arch: m.arch,
            flags: m.flags,
            uncompressed_size: 0,
        };
        table.extend_from_slice(&header(&f, m.name.as_deref(), m.options.as_deref(), None));
        blob.extend_from_slice(&p);
    }
    let n = table.len() as u32;
    table[4..8].copy_from_slice(&n.to_le_bytes());
    let (stored, csz, usz) = store(Some(codec), &blob);
    let f = Fixed {
        kind: 0x100,
        size_or_start: 0,
        payload_size: stored.len() as u64,
        compressed_size: csz,
        version: 1,
        arch: 0,
        flags: FLAGS_BASE | codec_flag(Some(codec)),
        uncompressed_size: usz,
    };
    let mut out = header(&f, None, None, Some(&table));
    out.extend_from_slice(&stored);
    out
}

pub fn fatbin(items: &[Item]) -> Vec<u8> {
    let mut body = Vec::new();
    for it in items {
        match it {
            Item::Entry(e) => body.extend_from_slice(&entry_bytes(e)),
            Item::Concat { members, codec } => body.extend_from_slice(&concat_bytes(members, *codec)),
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(&crate::FATBIN_MAGIC.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

pub fn entries(list: Vec<TestEntry>) -> Vec<u8> {
    fatbin(&list.into_iter().map(Item::from).collect::<Vec<_>>())
}

pub fn wrapper(version: u32, fatbin_address: u64) -> [u8; 24] {
    let mut w = [0u8; 24];
    w[0..4].copy_from_slice(&crate::WRAPPER_MAGIC.to_le_bytes());
    w[4..8].copy_from_slice(&version.to_le_bytes());
    w[8..16].copy_from_slice(&fatbin_address.to_le_bytes());
    w
}

/// A minimal cubin-shaped ELF: header, one PROGBITS section of `text`, a
/// NOBITS section (must not count towards the extent), section headers last.
pub fn cubin(machine: u16, sm: u32, text: &[u8]) -> Vec<u8> {
    let data_off = 64u64;
    let mut sh_off = data_off + text.len() as u64;
    sh_off = (sh_off + 7) & !7;
    let mut v = vec![0u8; 64];
    v[0..4].copy_from_slice(b"\x7fELF");
    v[4] = 2; // 64-bit
    v[5] = 1; // little-endian
    v[6] = 1;
    v[7] = 0x41; // CUDA OS ABI
    v[8] = 8; // ABI version 8: SM number in e_flags bits 8..15
    v[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    v[18..20].copy_from_slice(&machine.to_le_bytes());
    v[20..24].copy_from_slice(&1u32.to_le_bytes());
    v[0x28..0x30].copy_from_slice(&sh_off.to_le_bytes());
    v[0x30..0x34].copy_from_slice(&(0x0600_0002 | (sm << 8)).to_le_bytes());
    v[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    v[0x36..0x38].copy_from_slice(&0x38u16.to_le_bytes());
    v[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    v[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
    v.extend_from_slice(text);
    pad8(&mut v);
    assert_eq!(v.len() as u64, sh_off);
    let section = |ty: u32, off: u64, size: u64| {
        let mut s = vec![0u8; 64];
        s[4..8].copy_from_slice(&ty.to_le_bytes());
        s[0x18..0x20].copy_from_slice(&off.to_le_bytes());
        s[0x20..0x28].copy_from_slice(&size.to_le_bytes());
        s
    };
    v.extend_from_slice(&section(0, 0, 0));
    v.extend_from_slice(&section(1, data_off, text.len() as u64));
    v.extend_from_slice(&section(8, 0x10_0000, 0x10_0000)); // NOBITS, far away
    v
}
