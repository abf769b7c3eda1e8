//! Memory: device, pinned host, registered host and managed allocations
//! are all host memory (device pointers are host addresses, which is what
//! lets the emulator run kernels in-process). The double keeps the ranges
//! so that frees, copies and memsets are checked as a driver checks them.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::{BTreeMap, HashMap};

use crate::device::TOTAL_MEMORY;
use crate::error::{fail, Result, HOST_MEMORY_ALREADY_REGISTERED, HOST_MEMORY_NOT_REGISTERED, INVALID_VALUE, OUT_OF_MEMORY};

/// The byte new device memory holds (`hipMalloc` does not clear it).
pub const UNINITIALISED: u8 = 0xA5;

/// Alignment of every allocation (HIP guarantees at least 256 bytes).
pub const ALIGN: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `hipMalloc`
    Device,
    /// `hipHostMalloc`
    Host,
    /// `hipHostRegister`: the caller's memory.
    Registered,
    /// `hipMallocManaged`
    Managed,
    /// A loaded code object's image (its variables are device memory, which
    /// `hipModuleGetGlobal` hands out and programs copy to and from).
    Module,
}

struct Range {
    size: usize,
    kind: Kind,
    /// The device of device memory (`hipMalloc` on the current device);
    /// `None` for memory every device reaches (host, managed, modules).
    device: Option<i32>,
    /// The device whose memory it counts against, if any.
    counted: Option<i32>,
    /// The layout it was allocated with; `None` for registered memory.
    layout: Option<Layout>,
}

#[derive(Default)]
pub struct Memory {
    ranges: BTreeMap<usize, Range>,
    /// Bytes of device and managed memory in use, per device (managed
    /// memory counts on the device current when it was allocated).
    used: HashMap<i32, usize>,
}

impl Memory {
    /// Bytes of `device`'s memory not in use (`hipMemGetInfo`).
    pub fn free_bytes(&self, device: i32) -> usize {
        TOTAL_MEMORY - self.used.get(&device).copied().unwrap_or(0)
    }

    /// A new zeroed allocation of `size` bytes (never 0) made while
    /// `device` is current.
    pub fn allocate(&mut self, size: usize, kind: Kind, device: i32) -> Result<usize> {
        debug_assert!(size > 0 && kind != Kind::Registered);
        let counted = matches!(kind, Kind::Device | Kind::Managed);
        let free = self.free_bytes(device);
        if counted && size > free {
            fail!(OUT_OF_MEMORY, "{size} bytes requested, {free} of device {device}'s {TOTAL_MEMORY} free");
        }
        let Ok(layout) = Layout::from_size_align(size.next_multiple_of(ALIGN), ALIGN) else {
            fail!(OUT_OF_MEMORY, "{size} bytes cannot be allocated");
        };
        // SAFETY: the layout's size is not zero.
        let p = unsafe { alloc_zeroed(layout) };
        if p.is_null() {
            fail!(OUT_OF_MEMORY, "the host could not allocate {size} bytes");
        }
        if kind == Kind::Device {
            // `hipMalloc` does not clear memory: new device memory holds a
            // pattern, so that code relying on zeroed memory fails here.
            // SAFETY: `layout.size()` bytes were just allocated at `p`.
            unsafe { std::ptr::write_bytes(p, UNINITIALISED, layout.size()) };
        }
        if counted {
            *self.used.entry(device).or_insert(0) += size;
        }
        let owner = (kind == Kind::Device).then_some(device);
        self.ranges.insert(p as usize, Range { size, kind, device: owner, counted: counted.then_some(device), layout: Some(layout) });
        Ok(p as usize)
    }

    /// Frees the allocation starting at `addr`, which must be of one of `kinds`.
    pub fn free(&mut self, addr: usize, kinds: &[Kind], what: &str) -> Result<()> {
        match self.ranges.get(&addr) {
            Some(r) if kinds.contains(&r.kind) => {}
            Some(r) => fail!(INVALID_VALUE, "{what}({addr:#x}): the pointer is {:?} memory", r.kind),
            None => fail!(INVALID_VALUE, "{what}({addr:#x}): not the start of an allocation"),
        }
        let Some(r) = self.ranges.remove(&addr) else { return Ok(()) };
        if let Some(d) = r.counted {
            if let Some(u) = self.used.get_mut(&d) {
                *u -= r.size;
            }
        }
        if let Some(layout) = r.layout {
            // SAFETY: allocated by `allocate` with this layout and removed
            // from the table, so freed once.
            unsafe { dealloc(addr as *mut u8, layout) };
        }
        Ok(())
    }

    /// `hipHostRegister`: the range must not overlap a known one.
    pub fn register(&mut self, addr: usize, size: usize) -> Result<()> {
        let end = addr.saturating_add(size);
        if let Some((&start, r)) = self.ranges.range(..end).next_back() {
            if start + r.size > addr {
                fail!(HOST_MEMORY_ALREADY_REGISTERED, "[{addr:#x}, {end:#x}) overlaps {:?} memory at {start:#x}", r.kind);
            }
        }
        self.ranges.insert(addr, Range { size, kind: Kind::Registered, device: None, counted: None, layout: None });
        Ok(())
    }

    /// A code object mapped at `[addr, addr + size)`; freed by unloading.
    pub fn add_module(&mut self, addr: usize, size: usize) {
        self.ranges.insert(addr, Range { size, kind: Kind::Module, device: None, counted: None, layout: None });
    }

    pub fn remove_module(&mut self, addr: usize) {
        if self.ranges.get(&addr).is_some_and(|r| r.kind == Kind::Module) {
            self.ranges.remove(&addr);
        }
    }

    pub fn unregister(&mut self, addr: usize) -> Result<()> {
        match self.ranges.get(&addr) {
            Some(r) if r.kind == Kind::Registered => {
                self.ranges.remove(&addr);
                Ok(())
            }
            _ => fail!(HOST_MEMORY_NOT_REGISTERED, "hipHostUnregister({addr:#x}): not the start of a registered range"),
        }
    }

    /// The allocation holding `addr`: its start, size and kind.
    pub fn find(&self, addr: usize) -> Option<(usize, usize, Kind)> {
        let (&start, r) = self.ranges.range(..=addr).next_back()?;
        (addr < start + r.size.max(1)).then_some((start, r.size, r.kind))
    }

    /// The device owning the device memory at `addr` (`None` for any other
    /// memory, or none).
    pub fn device_of(&self, addr: usize) -> Option<i32> {
        let (&start, r) = self.ranges.range(..=addr).next_back()?;
        (addr < start + r.size.max(1)).then_some(r.device).flatten()
    }

    /// Checks that `[addr, addr + len)` lies in one allocation the device can reach.
    pub fn check_device_range(&self, addr: usize, len: usize, what: &str) -> Result<()> {
        if addr == 0 {
            fail!(INVALID_VALUE, "{what}: NULL pointer");
        }
        let Some((start, size, _)) = self.find(addr) else {
            fail!(INVALID_VALUE, "{what}: {addr:#x} is not in memory the device can reach (not allocated, pinned or registered)");
        };
        if len > start + size - addr {
            fail!(INVALID_VALUE, "{what}: {len} bytes at {addr:#x} run past the end of the allocation [{start:#x}, +{size})");
        }
        Ok(())
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        for (addr, r) in std::mem::take(&mut self.ranges) {
            if let Some(layout) = r.layout {
                // SAFETY: allocated by `allocate` with this layout.
                unsafe { dealloc(addr as *mut u8, layout) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_counted_found_and_checked() {
        let mut m = Memory::default();
        let a = m.allocate(1000, Kind::Device, 0).expect("alloc");
        assert_eq!(a % ALIGN, 0);
        // SAFETY: 1000 bytes were just allocated at `a`.
        let fresh = unsafe { std::slice::from_raw_parts(a as *const u8, 1000) };
        assert!(fresh.iter().all(|&b| b == UNINITIALISED), "new device memory is not cleared");
        assert_eq!(m.free_bytes(0), TOTAL_MEMORY - 1000);
        assert_eq!(m.free_bytes(1), TOTAL_MEMORY, "another device's memory is its own");
        assert_eq!(m.device_of(a + 999), Some(0));
        let b = m.allocate(10, Kind::Device, 1).expect("alloc on device 1");
        assert_eq!(m.device_of(b), Some(1));
        assert_eq!(m.free_bytes(1), TOTAL_MEMORY - 10);
        let h = m.allocate(10, Kind::Host, 1).expect("host alloc");
        assert_eq!(m.device_of(h), None, "host memory belongs to no device");
        assert_eq!(m.free_bytes(1), TOTAL_MEMORY - 10, "host memory is not device memory");
        assert_eq!(m.find(a + 999), Some((a, 1000, Kind::Device)));
        assert!(m.check_device_range(a + 10, 990, "t").is_ok());
        assert_eq!(m.check_device_range(a + 10, 991, "t").map_err(|e| e.code), Err(INVALID_VALUE));
        assert_eq!(m.allocate(TOTAL_MEMORY, Kind::Device, 0).map_err(|e| e.code), Err(OUT_OF_MEMORY));
        assert_eq!(m.free(a + 1, &[Kind::Device], "hipFree").map_err(|e| e.code), Err(INVALID_VALUE));
        assert_eq!(m.free(a, &[Kind::Host], "hipHostFree").map_err(|e| e.code), Err(INVALID_VALUE));
        m.free(a, &[Kind::Device], "hipFree").expect("free");
        assert_eq!(m.free_bytes(0), TOTAL_MEMORY);
        m.free(b, &[Kind::Device], "hipFree").expect("free");
        assert_eq!(m.free_bytes(1), TOTAL_MEMORY);
        assert!(m.find(a).is_none());
    }

    #[test]
    fn registration_refuses_overlaps() {
        let mut m = Memory::default();
        let buf = vec![0u8; 4096];
        let p = buf.as_ptr() as usize;
        m.register(p, 4096).expect("register");
        assert_eq!(m.register(p + 100, 10).map_err(|e| e.code), Err(HOST_MEMORY_ALREADY_REGISTERED));
        assert_eq!(m.unregister(p + 1).map_err(|e| e.code), Err(HOST_MEMORY_NOT_REGISTERED));
        m.unregister(p).expect("unregister");
        assert_eq!(m.unregister(p).map_err(|e| e.code), Err(HOST_MEMORY_NOT_REGISTERED));
    }
}
