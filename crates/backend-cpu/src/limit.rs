//! How much memory the CPU device has, and the accounting against it.
//!
//! The device's memory is the process's: device, pinned host and managed
//! allocations all come from RAM. Without a limit, `cuMemAlloc` would
//! succeed far past what the machine has and the program would meet the
//! kernel's OOM killer instead of `CUDA_ERROR_OUT_OF_MEMORY`. So the device
//! reports as its total memory the smallest of
//!
//! - the machine's physical memory (`MemTotal` in `/proc/meminfo`),
//! - the memory limit of the process's cgroup (v2 `memory.max`, v1
//!   `memory.limit_in_bytes`, the smallest along the hierarchy), and
//! - `ANYCUDA_DEVICE_MEMORY` when set (`8G`, `512M`, `1073741824`...; binary
//!   units), which may also be larger than the machine's memory,
//!
//! and every allocation made through the backend (device, pinned host,
//! managed, stream-ordered pools) is counted against it: one past it fails
//! with `CUDA_ERROR_OUT_OF_MEMORY`. The memory the system can still give
//! (`MemAvailable`, and the cgroup's limit less its non-reclaimable usage)
//! also bounds what `cuMemGetInfo` reports free, and an allocation of
//! [`SYSTEM_CHECK`] bytes or more that exceeds it fails too, since other
//! processes (and the program's own host memory) share the RAM.
//! Registered host memory (`cuMemHostRegister`) is the program's own and
//! is not counted; neither is the in-kernel `malloc` heap (bounded by its
//! own limit, 8 MiB by default).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable giving the device's memory size.
pub const ENV: &str = "ANYCUDA_DEVICE_MEMORY";

/// Allocations of this size or more are also checked against the memory
/// the system can still give (reading it costs a few microseconds).
pub const SYSTEM_CHECK: u64 = 16 << 20;

/// The device's memory: its size, where the size comes from, and what is
/// allocated.
#[derive(Debug)]
pub struct Budget {
    total: u64,
    source: String,
    used: AtomicU64,
    /// Whether to consult the system's available memory (off in tests that
    /// need exact figures).
    system: bool,
}

impl Budget {
    /// The size from the machine, its cgroup and the environment.
    pub fn from_system() -> Budget {
        let physical = meminfo_field(&read("/proc/meminfo").unwrap_or_default(), "MemTotal");
        let cgroup = cgroup_memory(Path::new("/sys/fs/cgroup"), &read("/proc/self/cgroup").unwrap_or_default());
        let env = std::env::var(ENV).ok();
        let parsed = env.as_deref().map(|v| (v, parse_size(v)));
        if let Some((v, None)) = parsed {
            tracing::warn!("{ENV}={v:?} is not a size (examples: 8G, 512M, 1073741824); ignored");
        }
        let (total, source) = choose(physical, cgroup.map(|c| c.limit), parsed.and_then(|(v, n)| Some((v, n?))));
        Budget { total, source, used: AtomicU64::new(0), system: true }
    }

    /// A budget of `total` bytes that ignores the system's state.
    pub fn fixed(total: u64) -> Budget {
        Budget { total, source: "fixed".into(), used: AtomicU64::new(0), system: false }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// What `cuMemGetInfo` reports free.
    pub fn free(&self) -> u64 {
        let left = self.total.saturating_sub(self.used());
        match self.system.then(system_available).flatten() {
            Some(avail) => left.min(avail),
            None => left,
        }
    }

    /// Counts `size` bytes as allocated, or says why they cannot be.
    pub fn reserve(&self, size: u64) -> Result<(), String> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let after = used
                .checked_add(size)
                .filter(|&a| a <= self.total)
                .ok_or_else(|| format!("{size} bytes requested, {used} of the device's {} bytes in use ({})", self.total, self.source))?;
            match self.used.compare_exchange_weak(used, after, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => used = now,
            }
        }
        if self.system && size >= SYSTEM_CHECK {
            if let Some(avail) = system_available() {
                if size > avail {
                    self.release(size);
                    return Err(format!("{size} bytes requested, the system has {avail} bytes available"));
                }
            }
        }
        Ok(())
    }

    /// Returns `size` bytes counted by [`Budget::reserve`].
    pub fn release(&self, size: u64) {
        self.used.fetch_sub(size, Ordering::Relaxed);
    }
}

/// The total and a description of where it comes from.
fn choose(physical: Option<u64>, cgroup: Option<u64>, env: Option<(&str, u64)>) -> (u64, String) {
    if let Some((v, n)) = env {
        return (n, format!("{ENV}={v}"));
    }
    match (physical, cgroup) {
        (Some(p), Some(c)) if c < p => (c, "the cgroup's memory limit".into()),
        (Some(p), _) => (p, "the machine's memory".into()),
        (None, Some(c)) => (c, "the cgroup's memory limit".into()),
        (None, None) => (8 << 30, "a default: the machine's memory is unknown".into()),
    }
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// A `Name:   123 kB` field of `/proc/meminfo`, in bytes.
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(name))?;
    let kb: u64 = line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()?;
    kb.checked_mul(1024)
}

/// `8G`, `512M`, `64k`, `1T`, `1073741824`, optionally with `B`/`iB`
/// (`8GiB`, `8GB`: binary units either way).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..digits].parse().ok()?;
    let unit = s[digits..].trim().to_ascii_lowercase();
    let unit = unit.strip_suffix("ib").or_else(|| unit.strip_suffix('b')).unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift).filter(|&b| b > 0)
}

/// A cgroup's memory limit and what it uses that cannot simply be
/// reclaimed (its usage less inactive file pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CgroupMemory {
    limit: u64,
    usage: Option<u64>,
}

/// The tightest memory limit of the process's cgroup and its ancestors,
/// from `/proc/self/cgroup`'s text and the cgroup file system at `root`.
fn cgroup_memory(root: &Path, proc_self_cgroup: &str) -> Option<CgroupMemory> {
    let mut best: Option<CgroupMemory> = None;
    let mut consider = |c: CgroupMemory| {
        if best.is_none_or(|b| c.limit < b.limit) {
            best = Some(c);
        }
    };
    for line in proc_self_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        let rel = path.trim_start_matches('/');
        if controllers.is_empty() {
            // v2: one unified hierarchy.
            for dir in ancestors(root, rel) {
                if let Some(limit) = read(dir.join("memory.max")).and_then(|t| t.trim().parse::<u64>().ok()) {
                    let usage = read(dir.join("memory.current")).and_then(|t| t.trim().parse::<u64>().ok());
                    let inactive = read(dir.join("memory.stat")).and_then(|t| stat_field(&t, "inactive_file"));
                    consider(CgroupMemory { limit, usage: usage.map(|u| u.saturating_sub(inactive.unwrap_or(0))) });
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            // v1: the memory controller's own hierarchy. "No limit" is a
            // huge number (a page-rounded i64::MAX).
            for dir in ancestors(&root.join("memory"), rel) {
                if let Some(limit) = read(dir.join("memory.limit_in_bytes")).and_then(|t| t.trim().parse::<u64>().ok()) {
                    if limit >= 1 << 60 {
                        continue;
                    }
                    let usage = read(dir.join("memory.usage_in_bytes")).and_then(|t| t.trim().parse::<u64>().ok());
                    let inactive = read(dir.join("memory.stat")).and_then(|t| stat_field(&t, "total_inactive_file"));
                    consider(CgroupMemory { limit, usage: usage.map(|u| u.saturating_sub(inactive.unwrap_or(0))) });
                }
            }
        }
    }
    best
}

/// `root/rel` and each of its ancestors up to `root` (inside a cgroup
/// namespace the path is `/` and the files are at `root` itself).
fn ancestors(root: &Path, rel: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut p = PathBuf::from(rel);
    loop {
        out.push(root.join(&p));
        if !p.pop() {
            break;
        }
    }
    if out.last().map(|l| l.as_path()) != Some(root) {
        out.push(root.to_path_buf());
    }
    out
}

/// A `name value` line of a cgroup `memory.stat`.
fn stat_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next() == Some(name)).then(|| f.next()?.parse().ok()).flatten()
    })
}

/// What the system can still give: `MemAvailable`, and the cgroup's limit
/// less its usage, whichever is smaller.
fn system_available() -> Option<u64> {
    let mem = meminfo_field(&read("/proc/meminfo")?, "MemAvailable");
    let cg = cgroup_memory(Path::new("/sys/fs/cgroup"), &read("/proc/self/cgroup").unwrap_or_default())
        .and_then(|c| Some(c.limit.saturating_sub(c.usage?)));
    match (mem, cg) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("8GiB"), Some(8 << 30));
        assert_eq!(parse_size("8gb"), Some(8 << 30));
        assert_eq!(parse_size(" 512M "), Some(512 << 20));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("2T"), Some(2 << 40));
        assert_eq!(parse_size("1073741824"), Some(1 << 30));
        for bad in ["", "G", "8X", "-1G", "0", "1.5G", "99999999999999999999", "20000000T"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn meminfo() {
        let t = "MemTotal:       32768000 kB\nMemFree:  100 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(meminfo_field(t, "MemTotal"), Some(32768000 * 1024));
        assert_eq!(meminfo_field(t, "MemAvailable"), Some(1024000));
        assert_eq!(meminfo_field(t, "Mem"), None);
    }

    #[test]
    fn the_smallest_limit_wins_and_is_named() {
        assert_eq!(choose(Some(64 << 30), None, None), (64 << 30, "the machine's memory".to_string()));
        assert_eq!(choose(Some(64 << 30), Some(4 << 30), None).0, 4 << 30);
        assert_eq!(choose(Some(4 << 30), Some(64 << 30), None).0, 4 << 30);
        let (n, why) = choose(Some(4 << 30), Some(2 << 30), Some(("16G", 16 << 30)));
        assert_eq!((n, why.as_str()), (16 << 30, "ANYCUDA_DEVICE_MEMORY=16G"), "the variable is the user's choice");
        assert_eq!(choose(None, None, None).0, 8 << 30);
    }

    fn write(p: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(p).expect("dir");
        std::fs::write(p.join(name), text).expect("write");
    }

    #[test]
    fn cgroup_v2_limits_along_the_hierarchy() {
        let root = std::env::temp_dir().join(format!("anycuda-cgroup-v2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let leaf = root.join("user.slice/app.scope");
        write(&leaf, "memory.max", "max\n");
        write(&leaf, "memory.current", "1000\n");
        write(&root.join("user.slice"), "memory.max", "4294967296\n");
        write(&root.join("user.slice"), "memory.current", "3000000000\n");
        write(&root.join("user.slice"), "memory.stat", "anon 1\ninactive_file 1000000000\nactive_file 5\n");
        let c = cgroup_memory(&root, "0::/user.slice/app.scope\n").expect("limit");
        assert_eq!(c, CgroupMemory { limit: 4 << 30, usage: Some(2_000_000_000) });
        // No limit anywhere.
        assert_eq!(cgroup_memory(&root, "0::/other\n"), None);
        // Inside a namespace: "/" and the files at the root.
        write(&root, "memory.max", "1073741824\n");
        assert_eq!(cgroup_memory(&root, "0::/\n").map(|c| c.limit), Some(1 << 30));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn cgroup_v1_memory_controller() {
        let root = std::env::temp_dir().join(format!("anycuda-cgroup-v1-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("memory/docker/abc");
        write(&dir, "memory.limit_in_bytes", "536870912\n");
        write(&dir, "memory.usage_in_bytes", "100000000\n");
        write(&dir, "memory.stat", "total_inactive_file 40000000\n");
        write(&root.join("memory"), "memory.limit_in_bytes", "9223372036854771712\n");
        let text = "12:cpu,cpuacct:/docker/abc\n11:memory:/docker/abc\n0::/\n";
        assert_eq!(cgroup_memory(&root, text), Some(CgroupMemory { limit: 512 << 20, usage: Some(60_000_000) }));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn reservations_stop_at_the_total() {
        let b = Budget::fixed(100);
        assert_eq!(b.reserve(60), Ok(()));
        assert_eq!(b.free(), 40);
        let e = b.reserve(41).unwrap_err();
        assert!(e.contains("41 bytes requested, 60 of the device's 100 bytes in use"), "{e}");
        assert_eq!(b.reserve(40), Ok(()));
        assert_eq!(b.free(), 0);
        assert!(b.reserve(1).is_err());
        b.release(60);
        assert_eq!((b.used(), b.free()), (40, 60));
        assert!(b.reserve(u64::MAX).is_err());
        assert_eq!(b.used(), 40);
    }

    #[test]
    fn concurrent_reservations_never_exceed_the_total() {
        let b = std::sync::Arc::new(Budget::fixed(1000));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || (0..1000).filter(|_| b.reserve(7).is_ok()).count())
            })
            .collect();
        let granted: usize = threads.into_iter().map(|t| t.join().expect("thread")).sum();
        assert_eq!(granted, 1000 / 7);
        assert_eq!(b.used(), (1000 / 7) * 7);
    }
}
