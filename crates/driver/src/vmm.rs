//! The virtual memory management API: address reservations, physical
//! allocations with handles, mappings between them, and access rights
//! (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`...).
//!
//! The driver checks every argument against CUDA's rules and keeps the
//! state: which ranges are reserved, which physical allocations exist and
//! how many handles and mappings keep each alive, what is mapped where
//! with which access. The backend provides the address space and the
//! memory ([`crate::Backend::vmm_reserve`] and friends).
//!
//! Each mapping is also an entry of the driver's address table (kind
//! `Vmm`), so copies, memsets, pointer attributes and address ranges treat
//! mapped memory as device memory. A range may cross several mappings
//! that lie side by side (an allocator that grows a pool by mapping more
//! memory at its end hands out buffers that straddle them); every byte of
//! it must be mapped and accessible, else the operation fails before the
//! backend touches anything. A physical allocation is freed when its last
//! handle is released and its last mapping unmapped, whichever comes last.

use std::collections::{BTreeMap, HashMap};

use crate::backend::{DevicePtr, VmmAccess};
use crate::error::{Error, Result};
use crate::handle::{lock, new_handle, HandleKind};
use crate::Driver;

/// Where a physical allocation lives (`CUmemLocation`, device locations
/// only: the host kinds are not supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VmmProp {
    /// `CUmemAllocationType`: only `CU_MEM_ALLOCATION_TYPE_PINNED` (1).
    pub alloc_type: u32,
    /// `CUmemAllocationHandleType` bits requested for export.
    pub handle_types: u32,
    /// `CUmemLocationType`: only `CU_MEM_LOCATION_TYPE_DEVICE` (1).
    pub location_type: u32,
    /// The device ordinal.
    pub device: i32,
    /// `allocFlags.gpuDirectRDMACapable`.
    pub gpu_direct_rdma: u8,
    /// `allocFlags.usage`.
    pub usage: u16,
}

const ALLOCATION_TYPE_PINNED: u32 = 1;
/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
pub const HANDLE_TYPE_POSIX_FD: u32 = 1;
const LOCATION_TYPE_DEVICE: u32 = 1;
/// The host page size reservations are counted in.
const PAGE: usize = 4096;

/// `CUmemAccess_flags` to an access level.
pub fn access_from_flags(flags: u32) -> Option<VmmAccess> {
    match flags {
        0 => Some(VmmAccess::None),
        1 => Some(VmmAccess::Read),
        3 => Some(VmmAccess::ReadWrite),
        _ => None,
    }
}

/// An access level as `CUmemAccess_flags`.
pub fn access_flags(a: VmmAccess) -> u32 {
    match a {
        VmmAccess::None => 0,
        VmmAccess::Read => 1,
        VmmAccess::ReadWrite => 3,
    }
}

struct PhysAlloc {
    /// The backend's id of the memory.
    mem: u64,
    size: usize,
    prop: VmmProp,
    /// Handles the application holds (`cuMemCreate`,
    /// `cuMemRetainAllocationHandle`) minus `cuMemRelease`s.
    refs: u32,
    /// Live mappings of it.
    mappings: u32,
}

struct Mapping {
    size: usize,
    handle: u64,
    /// Access per device ordinal.
    access: Vec<VmmAccess>,
}

impl Mapping {
    /// What the backend is told: the most any device may do (the address
    /// space is one for all devices).
    fn effective(&self) -> VmmAccess {
        self.access.iter().copied().max().unwrap_or(VmmAccess::None)
    }
}

/// The virtual memory state of a driver.
#[derive(Default)]
pub(crate) struct VmmState {
    /// Start -> size.
    reservations: BTreeMap<u64, usize>,
    allocs: HashMap<u64, PhysAlloc>,
    /// Start -> mapping.
    mappings: BTreeMap<u64, Mapping>,
}

impl VmmState {
    /// Whether `addr` lies in a reservation (mapped or not).
    pub(crate) fn reserved(&self, addr: u64) -> bool {
        self.reservations.range(..=addr).next_back().is_some_and(|(&b, &n)| addr - b < n as u64)
    }

    /// The mappings that exactly cover `[addr, addr + size)`, side by
    /// side, in address order.
    fn whole_mappings(&self, addr: u64, size: usize, what: &str) -> Result<Vec<u64>> {
        let end = addr.checked_add(size as u64).ok_or_else(|| Error::invalid(format!("{what}: range overflows")))?;
        let mut starts = Vec::new();
        let mut cur = addr;
        for (&b, m) in self.mappings.range(addr..end) {
            if b != cur {
                break;
            }
            starts.push(b);
            cur = b + m.size as u64;
        }
        if size == 0 || cur != end {
            return Err(Error::invalid(format!(
                "{what}: [{addr:#x}, {end:#x}) is not a range of whole mappings (it must start where a mapping starts \
                 and end where one ends, with no unmapped gap)"
            )));
        }
        Ok(starts)
    }
}

impl Driver {
    /// The granularity of `device`, if its backend implements the API.
    fn vmm_granularity_of(&self, device: i32) -> Result<usize> {
        let p = self.device_props(device)?;
        if !p.virtual_memory_management {
            return Err(Error::NotSupported(format!("virtual memory management on device {device} ({})", self.backend.name())));
        }
        Ok(self.backend.vmm_granularity(device as usize))
    }

    fn check_prop(&self, prop: &VmmProp) -> Result<usize> {
        if prop.alloc_type != ALLOCATION_TYPE_PINNED {
            return Err(Error::invalid(format!("allocation type {} is not CU_MEM_ALLOCATION_TYPE_PINNED", prop.alloc_type)));
        }
        if prop.location_type != LOCATION_TYPE_DEVICE {
            return Err(Error::NotSupported(format!(
                "memory location type {} (only CU_MEM_LOCATION_TYPE_DEVICE is supported)",
                prop.location_type
            )));
        }
        let gran = self.vmm_granularity_of(prop.device)?;
        let fd_ok = self.device_props(prop.device)?.vmm_posix_fd;
        if prop.handle_types & !HANDLE_TYPE_POSIX_FD != 0 || (prop.handle_types == HANDLE_TYPE_POSIX_FD && !fd_ok) {
            return Err(Error::NotSupported(format!(
                "shareable handle types {:#x} (this backend offers {})",
                prop.handle_types,
                if fd_ok { "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR" } else { "none" }
            )));
        }
        Ok(gran)
    }

    /// `cuMemGetAllocationGranularity`; `option` 0 is the minimum, 1 the
    /// recommended granularity (the same here).
    pub fn mem_get_allocation_granularity(&self, prop: &VmmProp, option: u32) -> Result<usize> {
        self.check_init()?;
        if option > 1 {
            return Err(Error::invalid(format!("unknown granularity option {option}")));
        }
        self.check_prop(prop)
    }

    /// The granularity every device agrees on, for reservations (which
    /// belong to no device).
    fn any_vmm_granularity(&self) -> Result<usize> {
        let n = self.device_count()?;
        (0..n)
            .filter_map(|d| self.vmm_granularity_of(d).ok())
            .max()
            .ok_or_else(|| Error::NotSupported(format!("virtual memory management ({} backend)", self.backend.name())))
    }

    /// `cuMemAddressReserve`.
    pub fn mem_address_reserve(&self, size: usize, alignment: usize, hint: u64, flags: u64) -> Result<u64> {
        self.check_init()?;
        let gran = self.any_vmm_granularity()?;
        if flags != 0 {
            return Err(Error::invalid(format!("cuMemAddressReserve flags must be 0, got {flags:#x}")));
        }
        if size == 0 || !size.is_multiple_of(PAGE) {
            return Err(Error::invalid(format!("reservation size {size:#x} is not a positive multiple of the page size ({PAGE})")));
        }
        if alignment != 0 && !alignment.is_power_of_two() {
            return Err(Error::invalid(format!("alignment {alignment:#x} is not a power of two")));
        }
        if !hint.is_multiple_of(PAGE as u64) {
            return Err(Error::invalid(format!("address hint {hint:#x} is not a multiple of the page size ({PAGE})")));
        }
        let align = alignment.max(gran);
        let addr = self.backend.vmm_reserve(size, align, hint).map_err(crate::memory::backend_err)?;
        lock(&self.vmm).reservations.insert(addr, size);
        Ok(addr)
    }

    /// `cuMemAddressFree`: the whole reservation, with nothing mapped in it.
    pub fn mem_address_free(&self, ptr: u64, size: usize) -> Result<()> {
        self.check_init()?;
        let mut v = lock(&self.vmm);
        match v.reservations.get(&ptr) {
            Some(&n) if n == size => {}
            Some(&n) => return Err(Error::invalid(format!("the reservation at {ptr:#x} has {n:#x} bytes, not {size:#x}"))),
            None => return Err(Error::invalid(format!("{ptr:#x} is not the start of an address reservation"))),
        }
        let end = ptr + size as u64;
        if let Some((&m, _)) = v.mappings.range(ptr..end).next() {
            return Err(Error::invalid(format!(
                "the reservation at {ptr:#x} still has memory mapped at {m:#x}; unmap it with cuMemUnmap first"
            )));
        }
        self.backend.vmm_unreserve(ptr, size).map_err(crate::memory::backend_err)?;
        v.reservations.remove(&ptr);
        Ok(())
    }

    /// `cuMemCreate`: a physical allocation; returns its handle.
    pub fn mem_create(&self, size: usize, prop: &VmmProp, flags: u64) -> Result<u64> {
        self.check_init()?;
        let gran = self.check_prop(prop)?;
        if flags != 0 {
            return Err(Error::invalid(format!("cuMemCreate flags must be 0, got {flags:#x}")));
        }
        if size == 0 || !size.is_multiple_of(gran) {
            return Err(Error::invalid(format!("size {size:#x} is not a positive multiple of the granularity ({gran:#x})")));
        }
        let mem = self.backend.vmm_create(prop.device as usize, size).map_err(crate::memory::backend_err)?;
        let h = new_handle(HandleKind::MemHandle);
        lock(&self.vmm).allocs.insert(h, PhysAlloc { mem, size, prop: *prop, refs: 1, mappings: 0 });
        Ok(h)
    }

    /// Frees the memory of `handle` if nothing holds it any more.
    fn vmm_collect(&self, v: &mut VmmState, handle: u64) -> Result<()> {
        let Some(a) = v.allocs.get(&handle) else { return Ok(()) };
        if a.refs == 0 && a.mappings == 0 {
            let mem = a.mem;
            v.allocs.remove(&handle);
            self.backend.vmm_release(mem).map_err(crate::memory::backend_err)?;
        }
        Ok(())
    }

    /// `cuMemRelease`: drops one handle; the memory goes once it is also
    /// unmapped everywhere.
    pub fn mem_release(&self, handle: u64) -> Result<()> {
        self.check_init()?;
        let mut v = lock(&self.vmm);
        match v.allocs.get_mut(&handle) {
            Some(a) if a.refs > 0 => a.refs -= 1,
            _ => return Err(Error::invalid(format!("{handle:#x} is not a live allocation handle"))),
        }
        self.vmm_collect(&mut v, handle)
    }

    /// `cuMemMap`.
    pub fn mem_map(&self, ptr: u64, size: usize, offset: usize, handle: u64, flags: u64) -> Result<()> {
        self.check_init()?;
        if flags != 0 {
            return Err(Error::invalid(format!("cuMemMap flags must be 0, got {flags:#x}")));
        }
        let mut v = lock(&self.vmm);
        let (mem, alloc_size, device) = match v.allocs.get(&handle) {
            Some(a) if a.refs > 0 => (a.mem, a.size, a.prop.device),
            _ => return Err(Error::invalid(format!("{handle:#x} is not a live allocation handle"))),
        };
        let gran = self.vmm_granularity_of(device)?;
        for (what, x) in [("address", ptr as usize), ("size", size), ("offset", offset)] {
            if !x.is_multiple_of(gran) {
                return Err(Error::invalid(format!("mapping {what} {x:#x} is not a multiple of the granularity ({gran:#x})")));
            }
        }
        if size == 0 || offset.checked_add(size).is_none_or(|e| e > alloc_size) {
            return Err(Error::invalid(format!("mapping {size:#x} bytes from offset {offset:#x} of a {alloc_size:#x}-byte allocation")));
        }
        let end = ptr.checked_add(size as u64).ok_or_else(|| Error::invalid("mapping range overflows"))?;
        let in_one = v.reservations.range(..=ptr).next_back().is_some_and(|(&b, &n)| end <= b + n as u64);
        if !in_one {
            return Err(Error::invalid(format!("[{ptr:#x}, {end:#x}) does not lie within one address reservation (cuMemAddressReserve)")));
        }
        if let Some((&m, _)) = v.mappings.range(..end).next_back().filter(|(&b, m)| b + m.size as u64 > ptr) {
            return Err(Error::invalid(format!("[{ptr:#x}, {end:#x}) overlaps memory already mapped at {m:#x}")));
        }
        self.backend.vmm_map(ptr, size, mem, offset).map_err(crate::memory::backend_err)?;
        let devices = self.device_count()? as usize;
        v.mappings.insert(ptr, Mapping { size, handle, access: vec![VmmAccess::None; devices] });
        if let Some(a) = v.allocs.get_mut(&handle) {
            a.mappings += 1;
        }
        self.mem.insert_vmm(ptr, size, device as usize, handle, VmmAccess::None);
        Ok(())
    }

    /// `cuMemUnmap`: one or more whole mappings side by side. Waits for
    /// the device work in flight first (it may use the memory).
    pub fn mem_unmap(&self, ptr: u64, size: usize) -> Result<()> {
        self.check_init()?;
        lock(&self.vmm).whole_mappings(ptr, size, "cuMemUnmap")?;
        for c in self.contexts.values() {
            let _ = c.synchronize();
        }
        let mut v = lock(&self.vmm);
        let starts = v.whole_mappings(ptr, size, "cuMemUnmap")?;
        for b in starts {
            let Some(m) = v.mappings.get(&b) else { continue };
            let (msize, handle) = (m.size, m.handle);
            self.backend.vmm_unmap(b, msize).map_err(crate::memory::backend_err)?;
            v.mappings.remove(&b);
            self.mem.remove_vmm(b);
            if let Some(a) = v.allocs.get_mut(&handle) {
                a.mappings = a.mappings.saturating_sub(1);
            }
            self.vmm_collect(&mut v, handle)?;
        }
        Ok(())
    }

    /// `cuMemSetAccess`: `descs` are (device, `CUmemAccess_flags`) pairs
    /// for device locations.
    pub fn mem_set_access(&self, ptr: u64, size: usize, descs: &[(u32, i32, u32)]) -> Result<()> {
        self.check_init()?;
        if descs.is_empty() {
            return Err(Error::invalid("no access descriptors"));
        }
        let n = self.device_count()?;
        let mut wanted = Vec::new();
        for &(ty, dev, flags) in descs {
            if ty != LOCATION_TYPE_DEVICE {
                return Err(Error::NotSupported(format!("access for location type {ty} (only devices)")));
            }
            if dev < 0 || dev >= n {
                return Err(Error::InvalidDevice(dev as i64));
            }
            let a = access_from_flags(flags).ok_or_else(|| Error::invalid(format!("unknown access flags {flags:#x}")))?;
            wanted.push((dev as usize, a));
        }
        let mut v = lock(&self.vmm);
        let starts = v.whole_mappings(ptr, size, "cuMemSetAccess")?;
        for b in starts {
            let Some(m) = v.mappings.get_mut(&b) else { continue };
            for &(d, a) in &wanted {
                if let Some(slot) = m.access.get_mut(d) {
                    *slot = a;
                }
            }
            let (eff, msize, handle) = (m.effective(), m.size, m.handle);
            self.backend.vmm_set_access(b, msize, eff).map_err(crate::memory::backend_err)?;
            let device = v.allocs.get(&handle).map(|a| a.prop.device as usize).unwrap_or(0);
            self.mem.insert_vmm(b, msize, device, handle, eff);
        }
        Ok(())
    }

    /// `cuMemGetAccess` for a device location.
    pub fn mem_get_access(&self, location_type: u32, device: i32, ptr: u64) -> Result<u32> {
        self.check_init()?;
        if location_type != LOCATION_TYPE_DEVICE {
            return Err(Error::invalid(format!("location type {location_type} is not a device")));
        }
        if device < 0 || device >= self.device_count()? {
            return Err(Error::InvalidDevice(device as i64));
        }
        let v = lock(&self.vmm);
        let (_, m) = v
            .mappings
            .range(..=ptr)
            .next_back()
            .filter(|(&b, m)| ptr - b < m.size as u64)
            .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not mapped memory")))?;
        Ok(access_flags(m.access.get(device as usize).copied().unwrap_or_default()))
    }

    /// `cuMemGetAllocationPropertiesFromHandle`.
    pub fn mem_allocation_properties(&self, handle: u64) -> Result<VmmProp> {
        self.check_init()?;
        lock(&self.vmm)
            .allocs
            .get(&handle)
            .map(|a| a.prop)
            .ok_or_else(|| Error::invalid(format!("{handle:#x} is not an allocation handle")))
    }

    /// `cuMemRetainAllocationHandle`: the handle mapped at `addr` (any
    /// address in the mapping), with one more reference.
    pub fn mem_retain_allocation_handle(&self, addr: u64) -> Result<u64> {
        self.check_init()?;
        let mut v = lock(&self.vmm);
        let handle = v
            .mappings
            .range(..=addr)
            .next_back()
            .filter(|(&b, m)| addr - b < m.size as u64)
            .map(|(_, m)| m.handle)
            .ok_or_else(|| Error::invalid(format!("{addr:#x} is not mapped memory")))?;
        if let Some(a) = v.allocs.get_mut(&handle) {
            a.refs += 1;
        }
        Ok(handle)
    }

    /// `cuMemExportToShareableHandle`: a file descriptor sharing the
    /// allocation, which must have been created with
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` requested.
    pub fn mem_export_to_shareable_handle(&self, handle: u64, handle_type: u32, flags: u64) -> Result<i32> {
        self.check_init()?;
        if flags != 0 {
            return Err(Error::invalid(format!("cuMemExportToShareableHandle flags must be 0, got {flags:#x}")));
        }
        if handle_type != HANDLE_TYPE_POSIX_FD {
            return Err(Error::NotSupported(format!("exporting as handle type {handle_type:#x} (POSIX file descriptors only)")));
        }
        let v = lock(&self.vmm);
        let a = v
            .allocs
            .get(&handle)
            .filter(|a| a.refs > 0)
            .ok_or_else(|| Error::invalid(format!("{handle:#x} is not a live allocation handle")))?;
        if a.prop.handle_types & HANDLE_TYPE_POSIX_FD == 0 {
            return Err(Error::invalid(
                "the allocation was not created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in requestedHandleTypes",
            ));
        }
        self.backend.vmm_export_fd(a.mem).map_err(crate::memory::backend_err)
    }

    /// `cuMemImportFromShareableHandle` of a POSIX file descriptor: a new
    /// handle to the memory it shares (on device 0).
    pub fn mem_import_from_shareable_handle(&self, fd: i32, handle_type: u32) -> Result<u64> {
        self.check_init()?;
        if handle_type != HANDLE_TYPE_POSIX_FD {
            return Err(Error::NotSupported(format!("importing handle type {handle_type:#x} (POSIX file descriptors only)")));
        }
        let device = 0;
        let gran = self.vmm_granularity_of(device)?;
        if !self.device_props(device)?.vmm_posix_fd {
            return Err(Error::NotSupported(format!("shareable handles ({} backend)", self.backend.name())));
        }
        if fd < 0 {
            return Err(Error::invalid(format!("{fd} is not a file descriptor")));
        }
        let (mem, size) = self.backend.vmm_import_fd(device as usize, fd).map_err(crate::memory::backend_err)?;
        if !size.is_multiple_of(gran) {
            let _ = self.backend.vmm_release(mem);
            return Err(Error::invalid(format!("the shared memory's size {size:#x} is not a multiple of the granularity {gran:#x}")));
        }
        let prop = VmmProp {
            alloc_type: ALLOCATION_TYPE_PINNED,
            handle_types: HANDLE_TYPE_POSIX_FD,
            location_type: LOCATION_TYPE_DEVICE,
            device,
            ..VmmProp::default()
        };
        let h = new_handle(HandleKind::MemHandle);
        lock(&self.vmm).allocs.insert(h, PhysAlloc { mem, size, prop, refs: 1, mappings: 0 });
        Ok(h)
    }

    /// The shareable handle types of the allocation mapped at `addr`.
    pub(crate) fn vmm_handle_types(&self, handle: u64) -> u32 {
        lock(&self.vmm).allocs.get(&handle).map(|a| a.prop.handle_types).unwrap_or(0)
    }

    /// Whether `addr` lies in an address reservation (for telling an
    /// unmapped reserved address from pageable host memory).
    pub(crate) fn vmm_reserved(&self, addr: DevicePtr) -> bool {
        lock(&self.vmm).reserved(addr)
    }
}
