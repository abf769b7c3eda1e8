//! The on-disk cache of compiled modules.
//!
//! An entry is keyed by a hash of everything that determines the object:
//! the PTX text, the target (triple, CPU and its features), the compiler's
//! source revision and the options. Loading an entry costs one file read
//! and one hash check. A truncated, corrupt or foreign file is detected and
//! treated as a miss, so it is rebuilt and overwritten.
//!
//! Location: `$ANYCUDA_CACHE_DIR`, else `$XDG_CACHE_HOME/anycuda/kernels`,
//! else `~/.cache/anycuda/kernels`. `ANYCUDA_CACHE_DIR=off` disables it.

use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"ANYCUDA\0";
/// 2: the entry holds the module description before the object, so a
/// load from the cache does not parse the PTX again. 4: kernels' warp
/// frame sizes.
const FORMAT: u32 = 4;
/// magic, format, key, object length, object hash.
const HEADER: usize = 8 + 4 + 32 + 8 + 32;

pub const CACHE_DIR_ENV: &str = "ANYCUDA_CACHE_DIR";

/// The cache directory, or `None` when caching is off or no home is known.
pub fn default_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_ENV) {
        Some(v) if v == "off" || v.is_empty() => return None,
        Some(v) => return Some(PathBuf::from(v)),
        None => {}
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("anycuda").join("kernels"))
}

/// The key of a compilation.
pub fn key(ptx: &str, target_fingerprint: &str, options: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for part in [
        b"anycuda-cpu-object".as_slice(),
        compiler::SOURCE_REVISION.as_bytes(),
        target_fingerprint.as_bytes(),
        options.as_bytes(),
        ptx.as_bytes(),
    ] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    *h.finalize().as_bytes()
}

fn path_for(dir: &Path, key: &[u8; 32]) -> PathBuf {
    dir.join(format!("{}.obj", blake3::Hash::from(*key).to_hex()))
}

/// The cached object for `key`, if a valid entry exists.
pub fn load(dir: &Path, key: &[u8; 32]) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path_for(dir, key)).ok()?;
    decode(&bytes, key)
}

/// A cached module: its description and its object.
pub struct Entry {
    pub info: compiler::ModuleInfo,
    /// The SM number of the PTX's `.target` (0 when absent).
    pub target_sm: u32,
    pub object: Vec<u8>,
}

pub fn load_entry(dir: &Path, key: &[u8; 32]) -> Option<Entry> {
    let payload = load(dir, key)?;
    let mut r = Reader { b: &payload, at: 0 };
    let target_sm = r.u32()?;
    let info = read_info(&mut r)?;
    let object = r.b.get(r.at..)?.to_vec();
    Some(Entry { info, target_sm, object })
}

pub fn store_entry(dir: &Path, key: &[u8; 32], entry: &Entry) -> std::io::Result<()> {
    let mut w = Vec::with_capacity(entry.object.len() + 1024);
    w.extend_from_slice(&entry.target_sm.to_le_bytes());
    write_info(&mut w, &entry.info);
    w.extend_from_slice(&entry.object);
    store(dir, key, &w)
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.bytes(n)?.to_vec()).ok()
    }
    fn dims(&mut self) -> Option<Option<[u32; 3]>> {
        Some(match self.u32()? {
            0 => None,
            _ => Some([self.u32()?, self.u32()?, self.u32()?]),
        })
    }
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    w.extend_from_slice(&(s.len() as u32).to_le_bytes());
    w.extend_from_slice(s.as_bytes());
}

fn put_dims(w: &mut Vec<u8>, d: Option<[u32; 3]>) {
    match d {
        None => w.extend_from_slice(&0u32.to_le_bytes()),
        Some(d) => {
            w.extend_from_slice(&1u32.to_le_bytes());
            for x in d {
                w.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
}

fn write_info(w: &mut Vec<u8>, info: &compiler::ModuleInfo) {
    w.extend_from_slice(&(info.kernels.len() as u32).to_le_bytes());
    for k in &info.kernels {
        put_str(w, &k.name);
        w.extend_from_slice(&(k.params.len() as u32).to_le_bytes());
        for p in &k.params {
            for x in [p.offset, p.size, p.align] {
                w.extend_from_slice(&x.to_le_bytes());
            }
        }
        for x in
            [k.param_bytes, k.static_shared_bytes, k.dynamic_shared_offset, k.needs_scheduler as u32, k.local_bytes, k.lanes, k.frame_bytes]
        {
            w.extend_from_slice(&x.to_le_bytes());
        }
        put_dims(w, k.reqntid);
        put_dims(w, k.maxntid);
    }
    w.extend_from_slice(&(info.globals.len() as u32).to_le_bytes());
    for g in &info.globals {
        put_str(w, &g.name);
        w.extend_from_slice(&g.size.to_le_bytes());
        w.extend_from_slice(&(g.constant as u32 | (g.managed as u32) << 1).to_le_bytes());
    }
}

fn read_info(r: &mut Reader) -> Option<compiler::ModuleInfo> {
    let nk = r.u32()? as usize;
    let mut kernels = Vec::with_capacity(nk.min(1 << 16));
    for _ in 0..nk {
        let name = r.string()?;
        let np = r.u32()? as usize;
        let mut params = Vec::with_capacity(np.min(1 << 12));
        for _ in 0..np {
            params.push(compiler::ParamInfo { offset: r.u32()?, size: r.u32()?, align: r.u32()? });
        }
        let (param_bytes, static_shared_bytes, dynamic_shared_offset, needs, local_bytes, lanes, frame_bytes) =
            (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let reqntid = r.dims()?;
        let maxntid = r.dims()?;
        kernels.push(compiler::KernelInfo {
            name,
            params,
            param_bytes,
            static_shared_bytes,
            dynamic_shared_offset,
            needs_scheduler: needs != 0,
            reqntid,
            maxntid,
            local_bytes,
            lanes,
            frame_bytes,
        });
    }
    let ng = r.u32()? as usize;
    let mut globals = Vec::with_capacity(ng.min(1 << 16));
    for _ in 0..ng {
        let name = r.string()?;
        let size = r.u64()?;
        let flags = r.u32()?;
        globals.push(compiler::GlobalInfo { name, size, constant: flags & 1 != 0, managed: flags & 2 != 0 });
    }
    Some(compiler::ModuleInfo { kernels, globals })
}

fn decode(bytes: &[u8], key: &[u8; 32]) -> Option<Vec<u8>> {
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return None;
    }
    let format = u32::from_le_bytes(bytes[8..12].try_into().ok()?);
    if format != FORMAT || &bytes[12..44] != key {
        return None;
    }
    let len = u64::from_le_bytes(bytes[44..52].try_into().ok()?) as usize;
    let object = bytes.get(HEADER..)?;
    if object.len() != len || blake3::hash(object).as_bytes() != &bytes[52..84] {
        return None;
    }
    Some(object.to_vec())
}

fn encode(key: &[u8; 32], object: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + object.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&(object.len() as u64).to_le_bytes());
    out.extend_from_slice(blake3::hash(object).as_bytes());
    out.extend_from_slice(object);
    out
}

/// Stores an object. Failures are not errors for the caller (the cache is
/// an optimisation), only reported.
pub fn store(dir: &Path, key: &[u8; 32], object: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = path_for(dir, key);
    // Write to a private temporary name, then rename: concurrent processes
    // never see a partial entry.
    let tmp = dir.join(format!(".{}.{}.tmp", blake3::Hash::from(*key).to_hex(), std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&encode(key, object))?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("anycuda-cache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn stores_and_loads() {
        let dir = temp_dir("roundtrip");
        let k = key(".version 8.0", "x86_64|cpu|+avx", "O2");
        assert!(load(&dir, &k).is_none());
        store(&dir, &k, b"object bytes").expect("store");
        assert_eq!(load(&dir, &k).as_deref(), Some(&b"object bytes"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn entries_keep_the_module_description() {
        let dir = temp_dir("entry");
        let k = key("ptx", "t", "o");
        let info = compiler::ModuleInfo {
            kernels: vec![compiler::KernelInfo {
                name: "k".into(),
                params: vec![compiler::ParamInfo { offset: 0, size: 8, align: 8 }, compiler::ParamInfo { offset: 8, size: 4, align: 4 }],
                param_bytes: 12,
                static_shared_bytes: 1024,
                dynamic_shared_offset: 1024,
                needs_scheduler: true,
                reqntid: Some([128, 1, 1]),
                maxntid: None,
                local_bytes: 64,
                lanes: 32,
                frame_bytes: 1024,
            }],
            globals: vec![compiler::GlobalInfo { name: "g".into(), size: 16, constant: true, managed: false }],
        };
        store_entry(&dir, &k, &Entry { info: info.clone(), target_sm: 80, object: b"obj".to_vec() }).expect("store");
        let e = load_entry(&dir, &k).expect("entry");
        assert_eq!(e.info, info);
        assert_eq!(e.target_sm, 80);
        assert_eq!(e.object, b"obj");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keys_depend_on_every_input() {
        let k = key("a", "t", "o");
        assert_ne!(k, key("b", "t", "o"));
        assert_ne!(k, key("a", "u", "o"));
        assert_ne!(k, key("a", "t", "p"));
        // Length-prefixed parts: moving a byte between parts changes the key.
        assert_ne!(key("ab", "t", "o"), key("a", "bt", "o"));
    }

    #[test]
    fn corrupt_truncated_and_foreign_entries_are_misses() {
        let dir = temp_dir("corrupt");
        let k = key("ptx", "t", "o");
        store(&dir, &k, b"0123456789").expect("store");
        let path = path_for(&dir, &k);
        let good = std::fs::read(&path).expect("read");
        // Flip one byte of the object.
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        std::fs::write(&path, &bad).expect("write");
        assert!(load(&dir, &k).is_none(), "corrupt object");
        // Truncated.
        std::fs::write(&path, &good[..good.len() - 3]).expect("write");
        assert!(load(&dir, &k).is_none(), "truncated");
        // An entry for another key under this name.
        let other = key("other", "t", "o");
        std::fs::write(&path, encode(&other, b"0123456789")).expect("write");
        assert!(load(&dir, &k).is_none(), "foreign");
        // Not ours at all.
        std::fs::write(&path, b"garbage").expect("write");
        assert!(load(&dir, &k).is_none(), "garbage");
        // A rebuilt entry replaces it.
        store(&dir, &k, b"0123456789").expect("store");
        assert_eq!(load(&dir, &k).as_deref(), Some(&b"0123456789"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
