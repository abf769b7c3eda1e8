//! Device memory on the host: zeroed, aligned like CUDA's allocations, and
//! for large ones mapped in 2 MiB pages where the kernel allows it.
//!
//! A GPU maps its memory in large pages, so kernels that jump through it
//! (a grid-stride loop steps by the whole grid's width every iteration)
//! cost no more than streaming it. On the CPU, where a block's warps run
//! one after another, the same loop touches a new 4 KiB page at every
//! step: with 4 KiB pages nearly every access misses the TLB. Large
//! allocations are therefore mapped on their own, 2 MiB-aligned, with
//! `MADV_HUGEPAGE` before their first touch.

use std::alloc::Layout;

/// Allocations are aligned like CUDA's (`cudaMalloc` gives 256).
pub const ALIGN: usize = 256;

/// From this size on, an allocation is mapped on its own in huge pages.
pub const HUGE_THRESHOLD: usize = 2 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// How an allocation of `size` bytes was made, to release it the same way.
fn mapped(size: usize) -> bool {
    size >= HUGE_THRESHOLD
}

/// Allocates `size` zeroed bytes, aligned to [`ALIGN`]; None when the
/// memory is not there.
pub fn allocate(size: usize) -> Option<*mut u8> {
    let size = size.max(1);
    if mapped(size) {
        return map_huge(size);
    }
    let layout = Layout::from_size_align(size, ALIGN).ok()?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    (!p.is_null()).then_some(p)
}

/// Releases what [`allocate`] returned for the same `size`.
///
/// # Safety
/// `p` came from `allocate(size)` and is not used afterwards.
pub unsafe fn release(p: *mut u8, size: usize) {
    let size = size.max(1);
    if mapped(size) {
        // SAFETY: the caller's contract; `map_huge` mapped exactly this.
        unsafe { libc::munmap(p.cast(), size.next_multiple_of(HUGE_PAGE)) };
        return;
    }
    if let Ok(layout) = Layout::from_size_align(size, ALIGN) {
        // SAFETY: the caller's contract.
        unsafe { std::alloc::dealloc(p, layout) };
    }
}

/// Maps `size` bytes (rounded up to whole huge pages) at a 2 MiB boundary
/// and asks for huge pages. Fresh anonymous mappings read as zero.
fn map_huge(size: usize) -> Option<*mut u8> {
    let len = size.checked_next_multiple_of(HUGE_PAGE)?;
    let span = len.checked_add(HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping of `span` bytes; nothing else
    // refers to it until it is returned.
    unsafe {
        let base =
            libc::mmap(std::ptr::null_mut(), span, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        if base == libc::MAP_FAILED {
            return None;
        }
        // Keep the 2 MiB-aligned part, give back the rest.
        let start = (base as usize).next_multiple_of(HUGE_PAGE);
        let head = start - base as usize;
        if head > 0 {
            libc::munmap(base, head);
        }
        let tail = span - head - len;
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
        // Only a hint: without transparent huge pages the memory still works.
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        Some(start as *mut u8)
    }
}

/// An owned device allocation (benchmarks and tests hold their buffers in
/// the memory kernels see in a real program).
pub struct DeviceBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer owns its memory; access goes through &/&mut.
unsafe impl Send for DeviceBuffer {}
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    /// `len` zeroed bytes; None when the memory is not there.
    pub fn zeroed(len: usize) -> Option<DeviceBuffer> {
        let ptr = allocate(len)?;
        crate::memcheck::track(ptr as u64, len as u64, crate::memcheck::Kind::Device);
        // Zeroed: written, for initcheck.
        crate::memcheck::host_wrote(ptr as u64, len as u64);
        Some(DeviceBuffer { ptr, len })
    }

    /// A copy of `data`.
    pub fn from_bytes(data: &[u8]) -> Option<DeviceBuffer> {
        let mut b = DeviceBuffer::zeroed(data.len())?;
        b.as_mut_slice().copy_from_slice(data);
        Some(b)
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` initialised (zeroed or written) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        crate::memcheck::untrack(self.ptr as u64);
        // SAFETY: `ptr` came from `allocate(len)` and dies with the buffer.
        unsafe { release(self.ptr, self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_zeroed_aligned_and_writable_on_both_sides_of_the_threshold() {
        for size in [1, 1000, HUGE_THRESHOLD - 1, HUGE_THRESHOLD, HUGE_THRESHOLD * 3 + 12345] {
            let mut b = DeviceBuffer::zeroed(size).expect("memory");
            assert_eq!(b.as_slice().len(), size);
            assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0, "size {size}");
            assert!(b.as_slice().iter().all(|&x| x == 0), "size {size}");
            b.as_mut_slice().iter_mut().enumerate().for_each(|(i, x)| *x = i as u8);
            assert!(b.as_slice().iter().enumerate().all(|(i, &x)| x == i as u8));
        }
    }

    #[test]
    fn large_allocations_start_on_a_huge_page() {
        let b = DeviceBuffer::zeroed(HUGE_THRESHOLD + 1).expect("memory");
        assert_eq!(b.as_slice().as_ptr() as usize % HUGE_PAGE, 0);
    }

    #[test]
    fn impossible_sizes_are_none() {
        assert!(DeviceBuffer::zeroed(usize::MAX - 10).is_none());
        assert!(allocate(usize::MAX / 2).is_none());
    }
}
