//! Interprocess memory on the CPU device (`cuIpcGetMemHandle` /
//! `cuIpcOpenMemHandle`).
//!
//! Device memory is private anonymous memory. Exporting an allocation
//! moves it, in place, into a memory file (`memfd_create`): its contents
//! are copied into the file and the file is mapped over the allocation's
//! pages (`MAP_FIXED`, one `mmap` replacing the range), so the address and
//! the contents stay and the pages become shareable. Another process of
//! the same user opens the file through `/proc/<pid>/fd/<fd>` and maps it;
//! both then see the same pages. The file's name carries a random token
//! that the handle repeats, so a descriptor number reused for another file
//! is refused. Only allocations mapped on their own can move so: those of
//! at least [`crate::memory::HUGE_THRESHOLD`] bytes (smaller ones share
//! pages with other memory); PyTorch's and most programs' shared
//! allocations are that large.
//!
//! The payload (the backend's part of a handle): file descriptor (i32),
//! mapped length (u64), allocation size (u64), exporting pid (u32), token
//! (16 bytes).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use driver::backend::{BackendError, SharedCounters, IPC_PAYLOAD};

/// An exported allocation's memory file and its name's token.
struct Exported {
    file: OwnedFd,
    token: [u8; 16],
}

/// Allocations this process exported, by base address.
#[derive(Default)]
pub struct Exports {
    files: Mutex<HashMap<u64, Exported>>,
}

/// Other processes' memory mapped here: address -> mapped length.
#[derive(Default)]
pub struct Imports {
    maps: Mutex<HashMap<u64, usize>>,
}

struct Payload {
    fd: i32,
    len: usize,
    size: usize,
    pid: u32,
    token: [u8; 16],
}

impl Payload {
    fn encode(&self) -> [u8; IPC_PAYLOAD] {
        let mut b = [0u8; IPC_PAYLOAD];
        b[0..4].copy_from_slice(&self.fd.to_le_bytes());
        b[4..12].copy_from_slice(&(self.len as u64).to_le_bytes());
        b[12..20].copy_from_slice(&(self.size as u64).to_le_bytes());
        b[20..24].copy_from_slice(&self.pid.to_le_bytes());
        b[24..40].copy_from_slice(&self.token);
        b
    }

    fn decode(b: &[u8; IPC_PAYLOAD]) -> Payload {
        let u64_at = |i: usize| u64::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]]);
        let mut token = [0u8; 16];
        token.copy_from_slice(&b[24..40]);
        Payload {
            fd: i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            len: u64_at(4) as usize,
            size: u64_at(12) as usize,
            pid: u32::from_le_bytes([b[20], b[21], b[22], b[23]]),
            token,
        }
    }
}

/// The name prefixes of the memory files: exported allocations, and
/// interprocess events' counters (a handle of one kind never opens the
/// other).
const MEMORY: &str = "anycuda-ipc-";
const COUNTERS: &str = "anycuda-ipc-event-";

/// A new memory file of `len` bytes named `prefix` and a random token.
fn memory_file(prefix: &str, len: usize) -> Result<(OwnedFd, [u8; 16]), BackendError> {
    let mut token = [0u8; 16];
    // SAFETY: fills the 16 bytes of `token`.
    if unsafe { libc::getrandom(token.as_mut_ptr().cast(), token.len(), 0) } != token.len() as isize {
        return Err(os_error("getrandom"));
    }
    let name = std::ffi::CString::new(format!("{prefix}{}", hex(&token))).map_err(|e| BackendError::Other(e.to_string()))?;
    // SAFETY: creates a file; the descriptor is owned from here on.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: `raw` is a descriptor this function just opened.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: sizes the file this process owns.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(os_error("ftruncate"));
    }
    Ok((fd, token))
}

/// Opens the memory file another process exported (`p`, named `prefix`
/// and the payload's token) through `/proc/<pid>/fd/<fd>`.
fn open_exported(p: &Payload, prefix: &str) -> Result<std::fs::File, BackendError> {
    let path = format!("/proc/{}/fd/{}", p.pid, p.fd);
    let target = std::fs::read_link(&path)
        .map_err(|e| BackendError::InvalidHandle(format!("{path}: {e} (the exporting process has ended, or is another user's)")))?;
    if !target.to_string_lossy().contains(&format!("{prefix}{}", hex(&p.token))) {
        return Err(BackendError::InvalidHandle(format!("{path} is no longer the exported file (it is {})", target.display())));
    }
    let file =
        std::fs::OpenOptions::new().read(true).write(true).open(&path).map_err(|e| BackendError::InvalidHandle(format!("{path}: {e}")))?;
    let actual = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
    if actual < p.len {
        return Err(BackendError::InvalidHandle(format!("{path} holds {actual} bytes, the handle says {}", p.len)));
    }
    Ok(file)
}

fn hex(token: &[u8; 16]) -> String {
    token.iter().map(|b| format!("{b:02x}")).collect()
}

fn os_error(what: &str) -> BackendError {
    BackendError::Other(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// The length `memory::allocate` mapped for `size` bytes.
fn mapped_len(size: usize) -> usize {
    size.next_multiple_of(2 << 20)
}

impl Exports {
    /// Makes the allocation at `base` (`size` bytes, from
    /// `memory::allocate`) shareable; the same payload every time.
    pub fn export(&self, base: u64, size: usize) -> Result<[u8; IPC_PAYLOAD], BackendError> {
        if size < crate::memory::HUGE_THRESHOLD {
            return Err(BackendError::NotSupported(format!(
                "an interprocess handle for an allocation of {size} bytes: the CPU device shares allocations of at least {} bytes (smaller ones share pages with other memory)",
                crate::memory::HUGE_THRESHOLD
            )));
        }
        let len = mapped_len(size);
        // Other processes may write it from now on, where initcheck cannot
        // see: it counts as written.
        crate::memcheck::host_wrote(base, size as u64);
        let pid = std::process::id();
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = files.get(&base) {
            return Ok(Payload { fd: e.file.as_raw_fd(), len, size, pid, token: e.token }.encode());
        }
        let (fd, token) = memory_file(MEMORY, len)?;
        // SAFETY: a fresh shared mapping of the file; the allocation's `len`
        // bytes are this process's (memory::allocate mapped them on their
        // own); the file's mapping then replaces them at the same address.
        unsafe {
            let tmp = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0);
            if tmp == libc::MAP_FAILED {
                return Err(os_error("mmap"));
            }
            std::ptr::copy_nonoverlapping(base as *const u8, tmp.cast::<u8>(), len);
            libc::munmap(tmp, len);
            let at = libc::mmap(
                base as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd.as_raw_fd(),
                0,
            );
            if at != base as *mut libc::c_void {
                // MAP_FIXED failing leaves the old mapping in place.
                return Err(os_error("mmap over the allocation"));
            }
        }
        let payload = Payload { fd: fd.as_raw_fd(), len, size, pid, token };
        files.insert(base, Exported { file: fd, token });
        Ok(payload.encode())
    }

    /// Forgets the file of an allocation being freed (its pages go with the
    /// allocation's unmapping; importers keep theirs until they close).
    pub fn forget(&self, base: u64) {
        self.files.lock().unwrap_or_else(|e| e.into_inner()).remove(&base);
    }
}

impl Imports {
    /// Maps another process's exported allocation; returns its address
    /// and size.
    pub fn import(&self, payload: &[u8; IPC_PAYLOAD]) -> Result<(u64, usize), BackendError> {
        let p = Payload::decode(payload);
        if p.len == 0 || p.size > p.len || !p.len.is_multiple_of(2 << 20) {
            return Err(BackendError::InvalidHandle(format!("a malformed handle (length {}, size {})", p.len, p.size)));
        }
        let file = open_exported(&p, MEMORY)?;
        // SAFETY: a fresh shared mapping of the file, owned by this table.
        let at =
            unsafe { libc::mmap(std::ptr::null_mut(), p.len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if at == libc::MAP_FAILED {
            return Err(os_error("mmap of the exported memory"));
        }
        let addr = at as u64;
        crate::memcheck::track(addr, p.size as u64, crate::memcheck::Kind::Device);
        // Another process writes it: initcheck cannot see what it wrote.
        crate::memcheck::host_wrote(addr, p.size as u64);
        self.maps.lock().unwrap_or_else(|e| e.into_inner()).insert(addr, p.len);
        Ok((addr, p.size))
    }

    /// Unmaps what [`Imports::import`] mapped at `addr`.
    pub fn close(&self, addr: u64) -> Result<(), BackendError> {
        let len = self.maps.lock().unwrap_or_else(|e| e.into_inner()).remove(&addr).ok_or(BackendError::InvalidAddress { addr, len: 0 })?;
        crate::memcheck::untrack(addr);
        // SAFETY: `import` mapped exactly this, and the driver no longer
        // hands it out.
        unsafe { libc::munmap(addr as *mut libc::c_void, len) };
        Ok(())
    }
}

/// An interprocess event's counters: the first 16 bytes of a one-page
/// memory file, mapped shared in each process that has the event.
pub struct CounterPage {
    at: *mut libc::c_void,
    _file: OwnedFd,
}

// SAFETY: the page is only reached as atomics.
unsafe impl Send for CounterPage {}
// SAFETY: as above.
unsafe impl Sync for CounterPage {}

const PAGE: usize = 4096;

impl CounterPage {
    fn map(file: OwnedFd) -> Result<CounterPage, BackendError> {
        // SAFETY: a fresh shared mapping of the file, owned by the page.
        let at =
            unsafe { libc::mmap(std::ptr::null_mut(), PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if at == libc::MAP_FAILED {
            return Err(os_error("mmap of an event's counters"));
        }
        Ok(CounterPage { at, _file: file })
    }

    fn counter(&self, i: usize) -> &AtomicU64 {
        // SAFETY: the mapping is a page long and page-aligned, lives as
        // long as `self`, and every process reaches it only atomically.
        unsafe { &*self.at.cast::<AtomicU64>().add(i) }
    }

    /// New counters (zero) and the payload that opens them elsewhere.
    pub fn export() -> Result<(Arc<dyn SharedCounters>, [u8; IPC_PAYLOAD]), BackendError> {
        let (fd, token) = memory_file(COUNTERS, PAGE)?;
        let payload = Payload { fd: fd.as_raw_fd(), len: PAGE, size: 16, pid: std::process::id(), token }.encode();
        Ok((Arc::new(CounterPage::map(fd)?), payload))
    }

    /// Another process's counters.
    pub fn import(payload: &[u8; IPC_PAYLOAD]) -> Result<Arc<dyn SharedCounters>, BackendError> {
        let p = Payload::decode(payload);
        if p.len != PAGE || p.size != 16 {
            return Err(BackendError::InvalidHandle(format!("a malformed event handle (length {}, size {})", p.len, p.size)));
        }
        let file = open_exported(&p, COUNTERS)?;
        Ok(Arc::new(CounterPage::map(file.into())?))
    }
}

impl SharedCounters for CounterPage {
    fn recorded(&self) -> &AtomicU64 {
        self.counter(0)
    }
    fn completed(&self) -> &AtomicU64 {
        self.counter(1)
    }
}

impl Drop for CounterPage {
    fn drop(&mut self) {
        // SAFETY: `map` mapped exactly this; no reference outlives `self`.
        unsafe { libc::munmap(self.at, PAGE) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let p = Payload { fd: 17, len: 4 << 20, size: (4 << 20) - 3, pid: 4242, token: [7; 16] };
        let q = Payload::decode(&p.encode());
        assert_eq!((q.fd, q.len, q.size, q.pid, q.token), (17, 4 << 20, (4 << 20) - 3, 4242, [7; 16]));
    }

    #[test]
    fn counters_are_shared_through_the_payload_and_a_memory_handle_does_not_open_them() {
        use std::sync::atomic::Ordering::SeqCst;
        let (mine, payload) = CounterPage::export().expect("export");
        let theirs = CounterPage::import(&payload).expect("import");
        mine.recorded().fetch_add(3, SeqCst);
        theirs.completed().fetch_max(2, SeqCst);
        assert_eq!((theirs.recorded().load(SeqCst), mine.completed().load(SeqCst)), (3, 2));
        // The same descriptor read as an allocation's handle is refused.
        let mut p = Payload::decode(&payload);
        p.len = 2 << 20;
        p.size = 2 << 20;
        assert!(matches!(Imports::default().import(&p.encode()), Err(BackendError::InvalidHandle(m)) if m.contains("no longer")));
    }

    #[test]
    fn small_allocations_are_refused_and_a_dead_exporter_is_an_invalid_handle() {
        let e = Exports::default();
        assert!(matches!(e.export(0x1000, 4096), Err(BackendError::NotSupported(m)) if m.contains("at least")));
        // No process has this id (pid_max is below 2^22).
        let p = Payload { fd: 3, len: 2 << 20, size: 2 << 20, pid: 0x7fff_fff0, token: [1; 16] };
        assert!(matches!(Imports::default().import(&p.encode()), Err(BackendError::InvalidHandle(m)) if m.contains("has ended")));
    }
}
