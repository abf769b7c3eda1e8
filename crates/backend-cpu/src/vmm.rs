//! The virtual memory API on the host: reservations are address space
//! without memory, physical allocations are shareable memory objects, and
//! a mapping puts (part of) one into a reservation.
//!
//! - A reservation is an anonymous `PROT_NONE`, `MAP_NORESERVE` mapping:
//!   tens of GiB of it cost neither memory nor commit charge, and any
//!   access to a part without memory mapped faults, as on a GPU.
//! - A physical allocation is a `memfd` of its size. Its pages come into
//!   existence when first touched (reading zeros until written) and go
//!   back to the system when the file is closed and no mapping holds it,
//!   so unmapping and releasing really frees the memory.
//! - A mapping is a `MAP_SHARED | MAP_FIXED` mapping of the file over the
//!   reservation; several mappings of one allocation, at different
//!   addresses, see the same bytes. It starts `PROT_NONE` ("no access",
//!   as CUDA's mappings start) until `cuMemSetAccess` `mprotect`s it.
//!   Unmapping maps the reservation's `PROT_NONE` placeholder back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use driver::backend::{BackendError, DevicePtr, VmmAccess};

/// The granularity of allocations and mappings: one huge page, what
/// NVIDIA's GPUs report too.
pub const GRANULARITY: usize = 2 << 20;

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Reserves `size` bytes of address space aligned to `align`, at `hint`
/// when that range is free.
pub fn reserve(size: usize, align: usize, hint: DevicePtr) -> Result<DevicePtr, BackendError> {
    let prot = libc::PROT_NONE;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    if hint != 0 && hint.is_multiple_of(align as u64) {
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping;
        // the new one belongs to nobody yet.
        let p = unsafe { libc::mmap(hint as *mut libc::c_void, size, prot, flags | libc::MAP_FIXED_NOREPLACE, -1, 0) };
        if p as u64 == hint {
            return Ok(hint);
        }
        if p != libc::MAP_FAILED {
            // A kernel that ignores the flag treats the address as a hint.
            // SAFETY: the mapping just made, unused.
            unsafe { libc::munmap(p, size) };
        }
    }
    let span = size.checked_add(align).ok_or(BackendError::OutOfMemory(size))?;
    // SAFETY: a fresh anonymous mapping nothing else refers to.
    let base = unsafe { libc::mmap(std::ptr::null_mut(), span, prot, flags, -1, 0) };
    if base == libc::MAP_FAILED {
        return Err(BackendError::OutOfMemory(size));
    }
    let start = (base as usize).next_multiple_of(align);
    let head = start - base as usize;
    let tail = span - head - size;
    // SAFETY: trimming parts of the mapping just made.
    unsafe {
        if head > 0 {
            libc::munmap(base, head);
        }
        if tail > 0 {
            libc::munmap((start + size) as *mut libc::c_void, tail);
        }
    }
    Ok(start as DevicePtr)
}

/// Gives a reservation back.
pub fn unreserve(addr: DevicePtr, size: usize) -> Result<(), BackendError> {
    // SAFETY: the driver passes a reservation made by `reserve`, with
    // nothing mapped in it any more.
    if unsafe { libc::munmap(addr as *mut libc::c_void, size) } != 0 {
        return Err(BackendError::Other(os_error("munmap of a reservation")));
    }
    Ok(())
}

/// Puts the reservation's placeholder back over a mapping.
pub fn unmap(addr: DevicePtr, size: usize) -> Result<(), BackendError> {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED;
    // SAFETY: the driver passes exactly one mapping made by `map`, inside a
    // reservation; replacing it is what unmapping means.
    let p = unsafe { libc::mmap(addr as *mut libc::c_void, size, libc::PROT_NONE, flags, -1, 0) };
    if p as u64 != addr {
        return Err(BackendError::Other(os_error("restoring the reservation over an unmapped range")));
    }
    Ok(())
}

/// Sets what kernels and copies may do with mapped memory.
pub fn set_access(addr: DevicePtr, size: usize, access: VmmAccess) -> Result<(), BackendError> {
    let prot = match access {
        VmmAccess::None => libc::PROT_NONE,
        VmmAccess::Read => libc::PROT_READ,
        VmmAccess::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
    };
    // SAFETY: the driver passes whole mappings made by `map`.
    if unsafe { libc::mprotect(addr as *mut libc::c_void, size, prot) } != 0 {
        return Err(BackendError::Other(os_error("mprotect of mapped memory")));
    }
    Ok(())
}

struct Physical {
    fd: libc::c_int,
    size: usize,
    /// Imported from a descriptor: its memory is the exporter's, counted
    /// where it was created.
    imported: bool,
}

/// The physical allocations of one backend.
#[derive(Default)]
pub struct VirtualMemory {
    allocs: Mutex<HashMap<u64, Physical>>,
    next: AtomicU64,
    bytes: AtomicU64,
}

impl VirtualMemory {
    fn allocs(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Physical>> {
        self.allocs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes of physical allocations alive (imports not counted).
    pub fn physical_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// A new allocation of `size` bytes (pages appear when touched).
    pub fn create(&self, size: usize) -> Result<u64, BackendError> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"anycuda-vmm".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(BackendError::Other(os_error("memfd_create")));
        }
        let len = libc::off_t::try_from(size).map_err(|_| BackendError::OutOfMemory(size))?;
        // SAFETY: a file descriptor this function owns.
        if unsafe { libc::ftruncate(fd, len) } != 0 {
            let e = os_error("sizing a physical allocation");
            // SAFETY: as above.
            unsafe { libc::close(fd) };
            return Err(BackendError::Other(e));
        }
        Ok(self.insert(fd, size, false))
    }

    fn insert(&self, fd: libc::c_int, size: usize, imported: bool) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.allocs().insert(id, Physical { fd, size, imported });
        if !imported {
            self.bytes.fetch_add(size as u64, Ordering::Relaxed);
        }
        id
    }

    /// A new descriptor of an allocation's file, for another process (or
    /// this one) to import; the caller owns it.
    pub fn export_fd(&self, mem: u64) -> Result<i32, BackendError> {
        let fd = self.allocs().get(&mem).map(|p| p.fd).ok_or_else(|| BackendError::Other(format!("no physical allocation {mem}")))?;
        // SAFETY: duplicating a descriptor this value owns.
        let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if d < 0 {
            return Err(BackendError::Other(os_error("duplicating an allocation's descriptor")));
        }
        Ok(d)
    }

    /// An allocation sharing the memory of `fd` (an exported allocation);
    /// `fd` stays the caller's. Returns its id and size.
    pub fn import_fd(&self, fd: i32) -> Result<(u64, usize), BackendError> {
        // SAFETY: fstat writes into a local struct; a bad descriptor fails.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(BackendError::InvalidAddress { addr: fd as u64, len: 0 });
        }
        let size = usize::try_from(st.st_size).unwrap_or(0);
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || size == 0 {
            return Err(BackendError::InvalidAddress { addr: fd as u64, len: size });
        }
        // SAFETY: as in export_fd; the duplicate is this value's from now on.
        let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if d < 0 {
            return Err(BackendError::Other(os_error("duplicating an imported descriptor")));
        }
        Ok((self.insert(d, size, true), size))
    }

    /// Closes an allocation's file: its pages are freed once no mapping
    /// or other descriptor holds them. Returns the bytes it counted (0 for
    /// an import).
    pub fn release(&self, mem: u64) -> Result<usize, BackendError> {
        let p = self.allocs().remove(&mem).ok_or_else(|| BackendError::Other(format!("no physical allocation {mem}")))?;
        // SAFETY: the descriptor this allocation owned.
        unsafe { libc::close(p.fd) };
        if p.imported {
            return Ok(0);
        }
        self.bytes.fetch_sub(p.size as u64, Ordering::Relaxed);
        Ok(p.size)
    }

    /// Maps `size` bytes of `mem` from `offset` over the reserved range at
    /// `addr`, without access.
    pub fn map(&self, addr: DevicePtr, size: usize, mem: u64, offset: usize) -> Result<(), BackendError> {
        let fd = self.allocs().get(&mem).map(|p| p.fd).ok_or_else(|| BackendError::Other(format!("no physical allocation {mem}")))?;
        let off = libc::off_t::try_from(offset).map_err(|_| BackendError::InvalidAddress { addr, len: size })?;
        // SAFETY: the driver passes a reserved, unmapped range inside one
        // reservation; MAP_FIXED replaces only that placeholder.
        let p = unsafe { libc::mmap(addr as *mut libc::c_void, size, libc::PROT_NONE, libc::MAP_SHARED | libc::MAP_FIXED, fd, off) };
        if p as u64 != addr {
            let e = os_error("mapping physical memory");
            let _ = unmap(addr, size);
            return Err(BackendError::Other(e));
        }
        Ok(())
    }
}

impl Drop for VirtualMemory {
    fn drop(&mut self) {
        for (_, p) in self.allocs().drain() {
            // SAFETY: descriptors this value owns.
            unsafe { libc::close(p.fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident shared memory of this process, in KiB.
    fn rss_shmem_kb() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        s.lines().find_map(|l| l.strip_prefix("RssShmem:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
    }

    fn vm_rss_kb() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        s.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
    }

    #[test]
    fn a_64_gib_reservation_costs_no_memory() {
        let before = vm_rss_kb();
        let size = 64usize << 30;
        let a = reserve(size, GRANULARITY, 0).expect("reserve 64 GiB");
        assert_eq!(a % GRANULARITY as u64, 0);
        assert!(vm_rss_kb() < before + 1024, "resident memory grew by {} KiB", vm_rss_kb() - before);
        unreserve(a, size).expect("unreserve");
    }

    #[test]
    fn one_allocation_at_two_addresses_shares_its_bytes_and_unmapping_releases() {
        let vm = VirtualMemory::default();
        let size = 8 * GRANULARITY;
        let r = reserve(2 * size, GRANULARITY, 0).expect("reserve");
        let mem = vm.create(size).expect("create");
        assert_eq!(vm.physical_bytes(), size as u64);
        let (a, b) = (r, r + size as u64);
        vm.map(a, size, mem, 0).expect("map a");
        vm.map(b, size, mem, 0).expect("map b");
        set_access(a, size, VmmAccess::ReadWrite).expect("access a");
        set_access(b, size, VmmAccess::Read).expect("access b");
        let shm0 = rss_shmem_kb();
        // SAFETY: both ranges are mapped with the access used.
        unsafe {
            let pa = std::slice::from_raw_parts_mut(a as *mut u8, size);
            for (i, x) in pa.iter_mut().enumerate() {
                *x = (i % 251) as u8;
            }
            let pb = std::slice::from_raw_parts(b as *const u8, size);
            assert!(pb.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8), "the second mapping sees the first one's writes");
        }
        let touched = rss_shmem_kb();
        assert!(touched >= shm0 + (size as u64 / 1024) * 9 / 10, "writing {size} bytes made {} KiB resident", touched - shm0);
        // The file's identity, to show it is closed after the release.
        let fd = vm.allocs().get(&mem).map(|p| p.fd).expect("fd");
        let inode = |fd: libc::c_int| {
            // SAFETY: fstat writes into a local struct; a closed descriptor
            // just fails.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
        };
        let file = inode(fd).expect("open allocation");
        unmap(a, size).expect("unmap a");
        unmap(b, size).expect("unmap b");
        assert!(rss_shmem_kb() + (size as u64 / 1024) * 9 / 10 <= touched, "unmapped pages are no longer resident here");
        assert_eq!(inode(fd), Some(file), "still held by its handle until released");
        vm.release(mem).expect("release");
        assert_eq!(vm.physical_bytes(), 0);
        // Neither a mapping nor a descriptor holds the file now: the kernel
        // frees its pages. (Another test may have reused the number.)
        assert_ne!(inode(fd), Some(file), "releasing closes the allocation's file");
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        assert!(!maps.lines().any(|l| l.starts_with(&format!("{a:x}-")) && l.contains("memfd")), "nothing maps it");
        // Mapped again at the same place: a fresh allocation reads zeros.
        let mem2 = vm.create(GRANULARITY).expect("create");
        vm.map(a, GRANULARITY, mem2, 0).expect("map again");
        set_access(a, GRANULARITY, VmmAccess::Read).expect("access");
        // SAFETY: mapped readable.
        assert!(unsafe { std::slice::from_raw_parts(a as *const u8, GRANULARITY) }.iter().all(|&x| x == 0));
        unmap(a, GRANULARITY).expect("unmap");
        vm.release(mem2).expect("release");
        unreserve(r, 2 * size).expect("unreserve");
    }

    #[test]
    fn physical_memory_counts_against_the_device_and_reservations_do_not() {
        use driver::Backend;
        let g = GRANULARITY as u64;
        let b = crate::CpuBackend::with_budget(crate::limit::Budget::fixed(8 * g));
        let free0 = b.mem_info(0).0;
        let r = b.vmm_reserve(64 << 30, GRANULARITY, 0).expect("reserve");
        assert_eq!(b.mem_info(0).0, free0, "a reservation is not memory");
        let m = b.vmm_create(0, 4 * GRANULARITY).expect("fits");
        assert_eq!(b.mem_info(0).0, free0 - 4 * g);
        assert!(matches!(b.vmm_create(0, 8 * GRANULARITY), Err(BackendError::Exhausted { .. })), "past the device's memory");
        let fd = b.vmm_export_fd(m).expect("export");
        let (imported, _) = b.vmm_import_fd(0, fd).expect("import");
        // SAFETY: the exported descriptor is ours.
        unsafe { libc::close(fd) };
        assert_eq!(b.mem_info(0).0, free0 - 4 * g, "an import is the exporter's memory, counted once");
        b.vmm_release(imported).expect("release the import");
        assert_eq!(b.mem_info(0).0, free0 - 4 * g);
        b.vmm_release(m).expect("release");
        assert_eq!(b.mem_info(0).0, free0);
        b.vmm_unreserve(r, 64 << 30).expect("unreserve");
    }

    #[test]
    fn an_exported_descriptor_imports_as_the_same_memory() {
        let vm = VirtualMemory::default();
        let mem = vm.create(GRANULARITY).expect("create");
        let fd = vm.export_fd(mem).expect("export");
        let (imported, size) = vm.import_fd(fd).expect("import");
        assert_eq!(size, GRANULARITY);
        // SAFETY: the exported descriptor is ours to close; the import
        // holds its own.
        unsafe { libc::close(fd) };
        let r = reserve(2 * GRANULARITY, GRANULARITY, 0).expect("reserve");
        vm.map(r, GRANULARITY, mem, 0).expect("map");
        vm.map(r + GRANULARITY as u64, GRANULARITY, imported, 0).expect("map the import");
        set_access(r, 2 * GRANULARITY, VmmAccess::ReadWrite).expect("access");
        // SAFETY: both mapped read-write.
        unsafe {
            (r as *mut u64).write(0x1234_5678_9abc_def0);
            assert_eq!(((r + GRANULARITY as u64) as *const u64).read(), 0x1234_5678_9abc_def0);
        }
        assert!(vm.import_fd(-1).is_err(), "not a descriptor");
        for a in [r, r + GRANULARITY as u64] {
            unmap(a, GRANULARITY).expect("unmap");
        }
        vm.release(mem).expect("release");
        vm.release(imported).expect("release");
        unreserve(r, 2 * GRANULARITY).expect("free");
    }

    #[test]
    fn a_hint_is_used_when_free_and_a_mapping_starts_inaccessible() {
        let r = reserve(4 * GRANULARITY, GRANULARITY, 0).expect("reserve");
        unreserve(r, 4 * GRANULARITY).expect("free");
        let again = reserve(4 * GRANULARITY, GRANULARITY, r).expect("reserve at the hint");
        assert_eq!(again, r);
        let other = reserve(GRANULARITY, GRANULARITY, r).expect("hint taken: elsewhere");
        assert_ne!(other, r);
        let vm = VirtualMemory::default();
        let mem = vm.create(GRANULARITY).expect("create");
        vm.map(r, GRANULARITY, mem, 0).expect("map");
        // PROT_NONE until set_access: mincore reports the range mapped, and
        // mprotect-free access would fault (not exercised here: the test
        // process has no fault handler), so check the protection instead.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let line = maps.lines().find(|l| l.starts_with(&format!("{r:x}-"))).unwrap_or("").to_string();
        assert!(line.contains("---s"), "a fresh mapping is shared and inaccessible: {line}");
        set_access(r, GRANULARITY, VmmAccess::ReadWrite).expect("access");
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let line = maps.lines().find(|l| l.starts_with(&format!("{r:x}-"))).unwrap_or("").to_string();
        assert!(line.contains("rw-s"), "{line}");
        unmap(r, GRANULARITY).expect("unmap");
        vm.release(mem).expect("release");
        unreserve(r, 4 * GRANULARITY).expect("free");
        unreserve(other, GRANULARITY).expect("free");
    }
}
