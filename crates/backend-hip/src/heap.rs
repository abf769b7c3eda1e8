//! The device heap behind in-kernel `malloc`/`free` on HIP devices.
//! Compiled code allocates and frees on it by itself
//! (`compiler::cpu_abi::device_heap`: size classes, lock-free free lists);
//! the host makes it, with an arena of the context's
//! `cudaLimitMallocHeapSize`, at the first launch of a kernel that may
//! call `malloc` or `free` (`KernelDesc::calls_malloc`, from the module's
//! call graph), and passes its address to every such kernel after its
//! parameters (`amdgpu::kernarg_tail`; other kernels get null). The driver
//! refuses a new heap size once such a kernel has been launched, as CUDA
//! does, so the heap's size is the context's limit.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use compiler::cpu_abi::device_heap as layout;

use crate::api::{self, Hip};

/// A device's heap: its address and the arena's size.
#[derive(Clone, Copy)]
struct Heap {
    address: u64,
    arena: u64,
}

/// The heaps of a backend's devices.
pub struct DeviceHeaps {
    hip: Arc<Hip>,
    heaps: Vec<Mutex<Option<Heap>>>,
}

impl DeviceHeaps {
    pub fn new(hip: Arc<Hip>, devices: usize) -> DeviceHeaps {
        DeviceHeaps { hip, heaps: (0..devices).map(|_| Mutex::new(None)).collect() }
    }

    /// Device `device`'s heap (the current HIP device), made with an arena
    /// of `limit` bytes at the first call. CUDA fixes the heap's size at
    /// the first launch that may use it; a later limit is ignored, and the
    /// log says so.
    pub fn heap(&self, device: usize, limit: u64) -> Result<u64, String> {
        let slot = self.heaps.get(device).ok_or_else(|| format!("no HIP device {device}"))?;
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = *slot {
            if h.arena != limit {
                tracing::debug!(
                    "device malloc: HIP device {device}'s heap keeps its {} bytes (cudaLimitMallocHeapSize is now {limit}): it was made at an earlier launch",
                    h.arena
                );
            }
            return Ok(h.address);
        }
        let arena = limit.clamp(layout::BLOCK_HEADER as u64, layout::MAX_REQUEST);
        let bytes = usize::try_from(arena).map_err(|_| format!("a device heap of {arena} bytes"))? + layout::ARENA;
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let e = unsafe { (self.hip.malloc)(&mut p, bytes) };
        self.hip.check(e, "hipMalloc (the device heap)")?;
        // The header: the first 16 bytes of the arena are never handed out
        // (a list head of 0 is an empty list); every list is empty.
        let mut header = vec![0u8; layout::ARENA];
        header[layout::BUMP..layout::BUMP + 8].copy_from_slice(&(layout::BLOCK_HEADER as u64).to_le_bytes());
        header[layout::ARENA_BYTES..layout::ARENA_BYTES + 8].copy_from_slice(&arena.to_le_bytes());
        // SAFETY: `p` is `bytes` long, more than the header.
        let e = unsafe { (self.hip.memcpy)(p, header.as_ptr().cast(), header.len(), api::MEMCPY_HOST_TO_DEVICE) };
        if let Err(why) = self.hip.check(e, "hipMemcpy (the device heap's header)") {
            // SAFETY: ours, unused.
            unsafe { (self.hip.free)(p) };
            return Err(why);
        }
        tracing::debug!("device malloc: HIP device {device} has a heap of {arena} bytes");
        *slot = Some(Heap { address: p as u64, arena });
        Ok(p as u64)
    }
}

impl Drop for DeviceHeaps {
    fn drop(&mut self) {
        for slot in &self.heaps {
            if let Some(h) = *slot.lock().unwrap_or_else(|e| e.into_inner()) {
                // SAFETY: ours; nothing runs once the backend goes.
                unsafe { (self.hip.free)(h.address as *mut c_void) };
            }
        }
    }
}
