//! The device heap behind in-kernel `malloc`/`free`.
//!
//! CUDA gives kernels a heap of fixed size (`cudaLimitMallocHeapSize`,
//! 8 MiB by default) and `malloc` returns NULL once it is used up. Memory
//! comes from the host allocator; the heap only keeps the accounting, and
//! keeps it outside the blocks so that a kernel scribbling over its
//! allocations cannot corrupt it.

use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// CUDA's default `cudaLimitMallocHeapSize`.
pub const DEFAULT_HEAP_LIMIT: usize = 8 << 20;

/// Alignment of every block, as CUDA's device `malloc` guarantees.
const ALIGN: usize = 16;

pub struct DeviceHeap {
    limit: AtomicUsize,
    state: Mutex<HeapState>,
}

#[derive(Default)]
struct HeapState {
    used: usize,
    blocks: HashMap<usize, usize>,
}

impl DeviceHeap {
    pub fn new(limit: usize) -> DeviceHeap {
        DeviceHeap { limit: AtomicUsize::new(limit), state: Mutex::new(HeapState::default()) }
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Later allocations are checked against the new limit; existing ones
    /// stay valid.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// Bytes currently allocated (each block rounded up to 16 bytes).
    pub fn used(&self) -> usize {
        self.lock().used
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HeapState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A block of `size` bytes, or null when the heap limit would be
    /// exceeded. `malloc(0)` returns a unique minimal block like glibc.
    pub fn alloc(&self, size: u64) -> *mut u8 {
        let Ok(size) = usize::try_from(size) else { return std::ptr::null_mut() };
        let Some(rounded) = size.max(1).checked_next_multiple_of(ALIGN) else {
            return std::ptr::null_mut();
        };
        let Ok(layout) = Layout::from_size_align(rounded, ALIGN) else { return std::ptr::null_mut() };
        let mut state = self.lock();
        if state.used.saturating_add(rounded) > self.limit() {
            return std::ptr::null_mut();
        }
        // SAFETY: `layout` has a non-zero size.
        let block = unsafe { std::alloc::alloc(layout) };
        if !block.is_null() {
            state.used += rounded;
            state.blocks.insert(block as usize, rounded);
        }
        block
    }

    /// Frees a block from [`alloc`](Self::alloc); other pointers (including
    /// null and double frees) are ignored.
    pub fn free(&self, block: *mut u8) {
        let address = block as usize;
        let mut state = self.lock();
        if let Some(size) = state.blocks.remove(&address) {
            state.used -= size;
            // SAFETY: the table only holds live blocks from `alloc`, with
            // their sizes; this one was just removed from it.
            unsafe { std::alloc::dealloc(address as *mut u8, Layout::from_size_align_unchecked(size, ALIGN)) };
        }
    }
}

impl Drop for DeviceHeap {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        for (&block, &size) in &state.blocks {
            // SAFETY: every entry is a live block allocated with this layout.
            unsafe { std::alloc::dealloc(block as *mut u8, Layout::from_size_align_unchecked(size, ALIGN)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_enforced_and_free_returns_space() {
        let heap = DeviceHeap::new(1024);
        let a = heap.alloc(1000);
        assert!(!a.is_null());
        assert_eq!(a as usize % 16, 0);
        assert!(heap.alloc(100).is_null());
        heap.free(a);
        assert_eq!(heap.used(), 0);
        let b = heap.alloc(1024);
        assert!(!b.is_null());
        heap.free(std::ptr::null_mut());
        heap.free(b);
        heap.free(b);
        assert_eq!(heap.used(), 0);
        assert!(heap.alloc(u64::MAX).is_null());
    }
}
