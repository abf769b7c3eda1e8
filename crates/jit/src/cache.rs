//! The on-disk cache of compiled code.
//!
//! An entry is a file named by its key, a hash of everything that
//! determines its content (the PTX text, the target and its features, the
//! compiler's source revision, the options, the compile unit). Loading an
//! entry costs one open, one read and one keyed hash.
//!
//! Trust. The cache holds code this process will run, so it is used only
//! when nobody else can write to it, as `~/.nv/ComputeCache` and ccache
//! expect of theirs:
//! * the directory is created `0700`; a directory (or any entry, or the
//!   secret below) that is not owned by the effective user, is writable by
//!   group or others, or is a symbolic link is refused with a log line, and
//!   the process compiles without the cache (a refused entry is a miss);
//! * entries are opened with `O_NOFOLLOW`;
//! * new entries are written to a temporary file created with `O_EXCL |
//!   O_NOFOLLOW`, mode `0600`, under a random name, then renamed into
//!   place, so concurrent processes never see a partial entry and a planted
//!   link is never followed;
//! * an entry carries its key and a MAC of key and content under a random
//!   secret kept in the directory (`.secret`, `0600`): an entry copied over
//!   another's name, or edited, fails the check and is a miss.
//!
//! Size. Past a limit (`ANYCUDA_CACHE_SIZE`, default 4 GiB) the least
//! recently used entries are removed; a hit refreshes its entry's time.
//!
//! Location: `$ANYCUDA_CACHE_DIR`, else `$XDG_CACHE_HOME/anycuda/kernels`,
//! else `~/.cache/anycuda/kernels`. `ANYCUDA_CACHE_DIR=off` disables it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const MAGIC: &[u8; 8] = b"ANYCUDA\0";
/// 5: entries are MACed under the directory's secret and hold one compile
/// unit (a kernel, the variables, a whole module or a module's
/// description). 6: kernel descriptions carry their privatisation
/// condition. 7: stores-in-loops conditions carry the further stores
/// through the same address. 8: module descriptions say which kernels
/// compile apart; the variables' unit is the shared unit. 9: a compiled
/// unit's entry starts with the CPU time its compile took. 10: the fast
/// tier's warp-mode code comes from an optimising code generator (entries
/// of 9 hold code up to nine times slower). 11: kernel descriptions say
/// whether the kernel calls device `malloc`/`free` or `printf`. 12: on
/// hosts without AVX-512, directed rounding no longer switches the rounding
/// mode (entries of 11 hold code up to 50 times slower); kernels whose
/// loads read the bytes a store run once writes through the same register
/// run thread by thread under that store's condition; and warp-mode
/// gather and scatter fallbacks call shared helpers there. 13: warp mode
/// keeps warp-uniform registers as scalars, and kernels that wait for
/// each other have no block function. 14: f32 results only NaN-blind
/// readers see skip their canonicalisation, and f16 and bf16 arithmetic and
/// conversions to f16, bf16 and f32 round without the software routine (entries of
/// 13 hold llama.cpp's attention kernels about a fifth slower). 15: 32-bit
/// divisions by a divisor every thread shares multiply by its reciprocal,
/// warp mode computes arithmetic of uniform registers as scalars, and
/// `.ftz` operations do not flush registers that hold no subnormal (entries
/// of 14 hold llama.cpp's KV-cache copy with a `div` per index and its
/// matrix-vector kernels about a tenth slower). 16: `ex2`, `lg2`, `sin`,
/// `cos` and `tanh` (`.approx`, f32) are vector code in warp mode (entries
/// of 15 call libm once per lane: a softmax step 2.3 times, a `tanh` step
/// five times slower). 17: a kernel's description says whether a loop of
/// it may spin on memory (`KernelInfo::spin_waits`; entries of 16 would
/// read "no" for every kernel, and runners would then hold unstarted
/// blocks of kernels whose blocks wait for each other). 18: at a barrier
/// every lane of the warp reaches together, a warp saves only the
/// registers live there (entries of 17 save and restore every register
/// live into any block: llama.cpp's matrix-vector kernels take about 1.8
/// times as long per launch), and the optimised tier runs kernels without
/// loops that divide by 64-bit values as warps (`warp::divides_by_wide_registers`;
/// entries of 17 run llama.cpp's KV-cache copy thread by thread, about 2.5
/// times slower). 19: 16-bit float NaN tests and compares are made on the
/// values' bits where the host has no 16-bit compare (entries of 18 hold
/// code comparing 32 lanes one at a time: llama.cpp's f16 matrix-vector
/// kernels about 3.3 times slower). 20: a warp's byte-indexed privatised
/// adds skip the per-lane flag test once every window entry is taken
/// (entries of 19 test each lane: a byte histogram about 1.3 times slower).
/// 21: warps of a block take turns in grid-stride loops (entries of 20
/// run each warp's loop to its end: a grid-stride reduction about 1.3
/// times slower). 22: kernels that never wait take turns too, in their
/// block function (entries of 21 do not: an element-wise grid-stride
/// update about 1.2 times slower). 23: warp code reads lane masks back
/// from the frame as an integer's bits and gathers and scatters lane by
/// lane without a branch per lane where the host has no such instruction
/// (entries of 22 on AVX2 hosts: a barrier stencil about 1.35 times and
/// a bitonic sort about 1.3 times slower). 24: on such hosts warp code
/// computes its lane masks as 32-bit lanes (`targets::wide_masks`;
/// entries of 23: the barrier stencil about 1.2 times slower). 25: and
/// tests whether any or every lane is set on those lanes (entries of 24
/// pack them to bytes first: the stencil about 1.1 times slower). 26:
/// fields, shifts and uniform flips of the lane (`tid & 31`, `tid >> 5`,
/// `i ^ j`) are lane-affine, straight-line runs of accesses are lowered
/// twice, and unguarded writes in convergent blocks select no lanes
/// (entries of 25 look at the lanes of each access: a warp-synchronous
/// scan about 1.1 times slower). 27: packed 16-bit `add`/`sub`/`mul`/
/// `neg`/`abs` compute both halves in one operation, and 16-bit results
/// read only by operations blind to NaN payloads keep the host's NaN
/// (entries of 26 unpack and repack each pair: llama.cpp's f16 flash
/// attention kernels carry about a third more code). 28: uniform writes in
/// convergent blocks keep no old value, and frame-resident addresses
/// classify their lanes only where their affine bit fails (entries of 27:
/// llama.cpp's f16 matrix-vector kernel about 1.04 times slower). 29:
/// forward branches on uniform predicates in convergent blocks go on
/// directly (entries of 28 test each lane: that kernel's fixed cost per
/// block about 1.05 times higher). 30: and set the next block of the
/// executing lanes only (entries of 29 also moved lanes waiting at a
/// block that only returns: wrong results). 31: fast-tier warp code keeps
/// registers read across blocks in the frame, warp-mode `dp4a` is two
/// pairwise multiply-adds and `prmt` two byte shuffles (entries of 30
/// compiled slower and hold frames of the old layout's size). 32: a
/// fast-tier unit's entry lists the helpers it calls but does not define,
/// and helpers have entries of their own (`Jit::helper_object`). 33:
/// module descriptions say whether kernels compiled apart read the
/// module's variables through the shared unit's table
/// (`compiler::Partition::variable_table`; entries of 32 would send AMD
/// kernels that name variables to the shared unit's code object).
const FORMAT: u32 = 33;
/// magic, format, key, payload length, MAC.
const HEADER: usize = 8 + 4 + 32 + 8 + 32;
const SECRET: &str = ".secret";

pub const CACHE_DIR_ENV: &str = "ANYCUDA_CACHE_DIR";
pub const CACHE_SIZE_ENV: &str = "ANYCUDA_CACHE_SIZE";
/// Default size limit.
pub const DEFAULT_LIMIT: u64 = 4 << 30;

/// The cache directory the environment asks for, or `None` when caching is
/// off or no home is known.
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

/// The size limit the environment asks for: a number of bytes with an
/// optional `K`, `M`, `G` or `T` suffix (powers of 1024).
pub fn limit_from_env() -> u64 {
    std::env::var(CACHE_SIZE_ENV).ok().and_then(|v| parse_size(&v)).unwrap_or(DEFAULT_LIMIT)
}

/// `"4G"` -> 4 GiB. `None` for anything else than digits and one suffix.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 10),
        (i, 'm' | 'M') => (&t[..i], 20),
        (i, 'g' | 'G') => (&t[..i], 30),
        (i, 't' | 'T') => (&t[..i], 40),
        _ => (t, 0),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(1u64 << shift)
}

/// The key of a compile: length-prefixed parts, hashed.
pub fn key(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"anycuda-kernel-cache");
    h.update(compiler::SOURCE_REVISION.as_bytes());
    for part in parts {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    *h.finalize().as_bytes()
}

/// An open cache directory that passed the trust checks.
pub struct Cache {
    dir: PathBuf,
    secret: [u8; 32],
    limit: u64,
    /// Bytes of entries in the directory as this process believes (scanned
    /// at the first store, then counted), `u64::MAX` until scanned.
    size: AtomicU64,
    evicting: Mutex<()>,
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// What a path is, as far as trusting it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Link,
    Other,
}

/// Why a path of kind `kind`, owned by `uid` with permission bits `mode`,
/// may not be trusted by a process running as `euid` that expects a
/// directory (`want_dir`) or a regular file; `None` if it may.
fn trust_problem(kind: Kind, uid: u32, mode: u32, euid: u32, want_dir: bool) -> Option<&'static str> {
    match (kind, want_dir) {
        (Kind::Link, _) => return Some("is a symbolic link"),
        (Kind::Dir, true) | (Kind::File, false) => {}
        (_, true) => return Some("is not a directory"),
        (_, false) => return Some("is not a regular file"),
    }
    if uid != euid {
        return Some("belongs to another user");
    }
    if mode & 0o022 != 0 {
        return Some("is writable by group or others");
    }
    None
}

fn untrusted(meta: &std::fs::Metadata, want_dir: bool) -> Option<&'static str> {
    let ft = meta.file_type();
    let kind = if ft.is_symlink() {
        Kind::Link
    } else if ft.is_dir() {
        Kind::Dir
    } else if ft.is_file() {
        Kind::File
    } else {
        Kind::Other
    };
    trust_problem(kind, meta.uid(), meta.mode(), euid(), want_dir)
}

fn random_bytes() -> [u8; 32] {
    let mut b = [0u8; 32];
    // SAFETY: `b` is a valid buffer of its length.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        // No entropy source: derive from what differs between calls (the
        // names only need to be unpredictable to other users, who cannot
        // see this process's clock and addresses to the nanosecond).
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut h = blake3::Hasher::new();
        h.update(&std::process::id().to_le_bytes());
        h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        h.update(format!("{:?}{:p}", std::time::SystemTime::now(), &b).as_bytes());
        b = *h.finalize().as_bytes();
    }
    b
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Opens a file for reading without following a final symbolic link, and
/// checks who may have written it.
fn open_trusted(path: &Path) -> std::io::Result<Option<File>> {
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)?;
    let meta = f.metadata()?;
    if let Some(why) = untrusted(&meta, false) {
        tracing::warn!("kernel cache: ignoring {}: it {why}", path.display());
        return Ok(None);
    }
    Ok(Some(f))
}

/// Creates `path` exclusively (never through a link), mode 0600.
fn create_exclusive(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)
}

impl Cache {
    /// Opens (creating it `0700` if missing) the cache at `dir`. `None`,
    /// with a log line saying why, when it cannot be trusted or used.
    pub fn open(dir: &Path, limit: u64) -> Option<Cache> {
        match Cache::try_open(dir, limit) {
            Ok(c) => Some(c),
            Err(why) => {
                tracing::warn!("kernel cache {} not used: {why}; kernels are compiled without it", dir.display());
                None
            }
        }
    }

    fn try_open(dir: &Path, limit: u64) -> Result<Cache, String> {
        if std::fs::symlink_metadata(dir).is_err() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| format!("cannot create it: {e}"))?;
        }
        let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
        if let Some(why) = untrusted(&meta, true) {
            return Err(format!("the directory {why}"));
        }
        let secret = Cache::secret(dir)?;
        Ok(Cache { dir: dir.to_path_buf(), secret, limit, size: AtomicU64::new(u64::MAX), evicting: Mutex::new(()) })
    }

    /// The directory's MAC secret, made on first use.
    fn secret(dir: &Path) -> Result<[u8; 32], String> {
        let path = dir.join(SECRET);
        for _ in 0..2 {
            match open_trusted(&path) {
                Ok(Some(mut f)) => {
                    let mut s = [0u8; 32];
                    f.read_exact(&mut s).map_err(|e| format!("{SECRET}: {e}"))?;
                    return Ok(s);
                }
                Ok(None) => return Err(format!("{SECRET} cannot be trusted")),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // Written under a temporary name and linked into place,
                    // so that a reader never sees a partial secret; the
                    // first of concurrent creators wins.
                    let s = random_bytes();
                    let tmp = dir.join(format!(".{}.tmp", hex(&random_bytes()[..12])));
                    let mut f = create_exclusive(&tmp).map_err(|e| format!("{SECRET}: {e}"))?;
                    let written = f.write_all(&s);
                    drop(f);
                    let linked = written.and_then(|_| std::fs::hard_link(&tmp, &path));
                    let _ = std::fs::remove_file(&tmp);
                    match linked {
                        Ok(()) => return Ok(s),
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(format!("{SECRET}: {e}")),
                    }
                }
                Err(e) => return Err(format!("{SECRET}: {e}")),
            }
        }
        Err(format!("{SECRET} could not be read"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_for(&self, key: &[u8; 32]) -> PathBuf {
        self.dir.join(format!("{}.bin", hex(key)))
    }

    fn mac(&self, key: &[u8; 32], payload: &[u8]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.secret);
        h.update(key);
        h.update(&(payload.len() as u64).to_le_bytes());
        h.update(payload);
        *h.finalize().as_bytes()
    }

    /// The payload stored under `key`, if a valid entry exists.
    pub fn load(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        let path = self.path_for(key);
        let mut f = match open_trusted(&path) {
            Ok(Some(f)) => f,
            Ok(None) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::debug!("kernel cache: {}: {e}", path.display());
                return None;
            }
        };
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).ok()?;
        let payload = self.decode(&bytes, key);
        if payload.is_none() {
            tracing::debug!("kernel cache: {} is corrupt or not this entry's; compiling again", path.display());
        } else {
            // Least recently used eviction goes by modification time.
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        payload
    }

    fn decode(&self, bytes: &[u8], key: &[u8; 32]) -> Option<Vec<u8>> {
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return None;
        }
        let format = u32::from_le_bytes(bytes[8..12].try_into().ok()?);
        if format != FORMAT || &bytes[12..44] != key {
            return None;
        }
        let len = u64::from_le_bytes(bytes[44..52].try_into().ok()?);
        let payload = bytes.get(HEADER..)?;
        if payload.len() as u64 != len || self.mac(key, payload) != bytes[52..84] {
            return None;
        }
        Some(payload.to_vec())
    }

    fn encode(&self, key: &[u8; 32], payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.mac(key, payload));
        out.extend_from_slice(payload);
        out
    }

    /// Stores a payload. Failures are not errors for the caller (the cache
    /// is an optimisation), only logged.
    pub fn store(&self, key: &[u8; 32], payload: &[u8]) {
        if let Err(e) = self.try_store(key, payload) {
            tracing::warn!("kernel cache {}: cannot store an entry: {e}", self.dir.display());
        }
    }

    fn try_store(&self, key: &[u8; 32], payload: &[u8]) -> std::io::Result<()> {
        let bytes = self.encode(key, payload);
        let tmp = self.dir.join(format!(".{}.tmp", hex(&random_bytes()[..12])));
        let written = create_exclusive(&tmp).and_then(|mut f| f.write_all(&bytes));
        let renamed = written.and_then(|_| std::fs::rename(&tmp, self.path_for(key)));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        renamed?;
        self.account(bytes.len() as u64);
        Ok(())
    }

    /// Counts a stored entry against the limit; evicts when past it.
    fn account(&self, bytes: u64) {
        let mut size = self.size.load(Ordering::Relaxed);
        if size == u64::MAX {
            size = self.scan().iter().map(|e| e.1).sum();
            self.size.store(size, Ordering::Relaxed);
        } else {
            size = self.size.fetch_add(bytes, Ordering::Relaxed).saturating_add(bytes);
        }
        if size > self.limit {
            self.evict();
        }
    }

    /// Entries: path, size, last use.
    fn scan(&self) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        rd.filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".bin"))
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                m.is_file().then(|| (e.path(), m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)))
            })
            .collect()
    }

    /// Removes the least recently used entries until the cache is at most
    /// 90 % of its limit.
    pub fn evict(&self) {
        let Ok(_one) = self.evicting.try_lock() else { return };
        let mut entries = self.scan();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        let goal = self.limit / 10 * 9;
        entries.sort_by_key(|e| e.2);
        let mut removed = 0usize;
        for (path, size, _) in entries {
            if total <= goal {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(size);
                removed += 1;
            }
        }
        self.size.store(total, Ordering::Relaxed);
        tracing::debug!("kernel cache: removed {removed} least recently used entries; {total} bytes left");
    }
}

#[cfg(test)]
mod tests;
