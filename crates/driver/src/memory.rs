//! Memory: allocations and what the driver knows about every address,
//! copies in all their forms, memsets, pointer attributes, pools.
//!
//! The driver keeps its own table of every range it handed out, keyed by
//! address, so that pointer attributes, `cuMemGetAddressRange` and the
//! range checks of copies work without asking the backend. Host-accessible
//! memory (page-locked, registered, managed) is copied with plain host
//! memory operations; device memory goes through the backend.
//!
//! Host pointers a caller passes are trusted as NVIDIA's driver trusts
//! them: functions taking them are `unsafe` and say so.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cuda_types::CUpointer_attribute as PA;

use crate::backend::{Backend, BackendQueue, DevicePtr, HostSrc, MemsetValue, VmmAccess};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::handle::lock;
use crate::stream::Stream;
use crate::Driver;

/// What kind of memory an allocation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AllocKind {
    Device,
    /// `cuMemHostAlloc` / `cuMemAllocHost`.
    Host {
        flags: u32,
    },
    /// `cuMemHostRegister`.
    Registered {
        flags: u32,
    },
    Managed {
        flags: u32,
    },
    /// `cuMemAllocAsync` / `cuMemAllocFromPoolAsync`.
    Pool {
        pool: u64,
    },
    /// A module variable, owned by its module (or library).
    Global {
        owner: u64,
    },
    /// A mapping of the virtual memory API (`cuMemMap`): one entry per
    /// mapping, with the allocation handle mapped and the access devices
    /// have (the most any device has).
    Vmm {
        handle: u64,
        access: VmmAccess,
    },
    /// The memory of a graph's memory allocation node (owned by the graph
    /// and its executable graph, see `crate::graph::GraphMem`).
    GraphMem,
    /// Another process's memory, mapped by `cuIpcOpenMemHandle`.
    Ipc,
}

#[derive(Debug)]
pub(crate) struct Allocation {
    pub kind: AllocKind,
    pub ctx: u64,
    pub device: usize,
    pub size: usize,
    /// Where the device sees it.
    pub device_base: u64,
    /// Where the host can touch it, if it can.
    pub host_base: Option<usize>,
    pub buffer_id: u64,
    pub sync_memops: Mutex<bool>,
}

impl Allocation {
    fn host_accessible(&self) -> bool {
        self.host_base.is_some()
    }
}

/// One key of the table: an allocation seen through one of its addresses.
#[derive(Debug, Clone)]
struct View {
    alloc: Arc<Allocation>,
    /// True when keyed by the host address of host memory whose device
    /// address differs.
    host_view: bool,
}

#[derive(Default)]
pub(crate) struct MemTable {
    map: Mutex<BTreeMap<u64, View>>,
    next_buffer_id: AtomicU64,
}

impl MemTable {
    fn insert(&self, a: Allocation) -> Arc<Allocation> {
        let a = Arc::new(a);
        let mut m = lock(&self.map);
        m.insert(a.device_base, View { alloc: a.clone(), host_view: false });
        if let Some(h) = a.host_base {
            if h as u64 != a.device_base {
                m.insert(h as u64, View { alloc: a.clone(), host_view: true });
            }
        }
        a
    }

    /// The allocation containing `addr`, the base of the view it was found
    /// through and whether that is the host view.
    fn find(&self, addr: u64) -> Option<(Arc<Allocation>, u64, bool)> {
        let m = lock(&self.map);
        let (base, v) = m.range(..=addr).next_back()?;
        (addr - base < v.alloc.size as u64).then(|| (v.alloc.clone(), *base, v.host_view))
    }

    /// Removes the allocation that starts at `addr` (either view).
    fn remove_at(&self, addr: u64, pred: impl Fn(&Allocation) -> bool) -> Option<Arc<Allocation>> {
        let mut m = lock(&self.map);
        let v = m.get(&addr)?;
        if !pred(&v.alloc) {
            return None;
        }
        let a = v.alloc.clone();
        m.remove(&a.device_base);
        if let Some(h) = a.host_base {
            m.remove(&(h as u64));
        }
        Some(a)
    }

    fn remove_where(&self, pred: impl Fn(&Allocation) -> bool) -> Vec<Arc<Allocation>> {
        let mut m = lock(&self.map);
        let keys: Vec<u64> = m.iter().filter(|(_, v)| !v.host_view && pred(&v.alloc)).map(|(k, _)| *k).collect();
        let mut out = Vec::new();
        for k in keys {
            if let Some(v) = m.remove(&k) {
                if let Some(h) = v.alloc.host_base {
                    m.remove(&(h as u64));
                }
                out.push(v.alloc);
            }
        }
        out
    }

    fn buffer_id(&self) -> u64 {
        self.next_buffer_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Records (or updates the access of) the mapping at `addr`. Mappings
    /// belong to no context: they outlive context teardown, as the
    /// reservations and allocations they join do.
    pub(crate) fn insert_vmm(&self, addr: u64, size: usize, device: usize, handle: u64, access: VmmAccess) {
        let mut m = lock(&self.map);
        let buffer_id = m.get(&addr).map(|v| v.alloc.buffer_id).unwrap_or_else(|| self.buffer_id());
        let a = Arc::new(Allocation {
            kind: AllocKind::Vmm { handle, access },
            ctx: 0,
            device,
            size,
            device_base: addr,
            host_base: None,
            buffer_id,
            sync_memops: Mutex::new(false),
        });
        m.insert(addr, View { alloc: a, host_view: false });
    }

    /// Records the memory of an allocation node.
    pub(crate) fn insert_graph_mem(&self, addr: u64, size: usize, device: usize) {
        self.insert(Allocation {
            kind: AllocKind::GraphMem,
            ctx: 0,
            device,
            size,
            device_base: addr,
            host_base: None,
            buffer_id: self.buffer_id(),
            sync_memops: Mutex::new(false),
        });
    }

    /// Forgets the memory of an allocation node.
    pub(crate) fn remove_graph_mem(&self, addr: u64) {
        self.remove_at(addr, |a| a.kind == AllocKind::GraphMem);
    }

    /// Forgets the mapping at `addr`.
    pub(crate) fn remove_vmm(&self, addr: u64) {
        let mut m = lock(&self.map);
        if m.get(&addr).is_some_and(|v| matches!(v.alloc.kind, AllocKind::Vmm { .. })) {
            m.remove(&addr);
        }
    }

    /// The end of the run of accessible mappings that starts with the one
    /// at `base` and continues with mappings that begin where the previous
    /// one ends.
    fn vmm_run_end(&self, base: u64, need: VmmAccess, until: u64) -> u64 {
        let m = lock(&self.map);
        let mut end = base;
        while end < until {
            match m.get(&end) {
                Some(v) => match v.alloc.kind {
                    AllocKind::Vmm { access, .. } if access >= need => end += v.alloc.size as u64,
                    _ => break,
                },
                None => break,
            }
        }
        end
    }
}

/// An address resolved for copying: device memory (through the backend) or
/// host-accessible memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolved {
    Device(u64),
    Host(usize),
}

impl Resolved {
    fn offset(self, by: usize) -> Resolved {
        match self {
            Resolved::Device(a) => Resolved::Device(a + by as u64),
            Resolved::Host(a) => Resolved::Host(a + by),
        }
    }
}

pub(crate) fn backend_err(e: crate::backend::BackendError) -> Error {
    match e {
        crate::backend::BackendError::OutOfMemory(n) => Error::OutOfMemory(format!("{n} bytes")),
        crate::backend::BackendError::Exhausted { why, .. } => Error::OutOfMemory(why),
        crate::backend::BackendError::InvalidAddress { .. } => Error::InvalidValue(e.to_string()),
        crate::backend::BackendError::NotSupported(m) => Error::NotSupported(m),
        crate::backend::BackendError::InvalidHandle(m) => Error::handle(m),
        crate::backend::BackendError::Other(m) => Error::Unknown(m),
    }
}

/// Copies `len` bytes between two resolved locations.
///
/// Host locations must be valid for the copy (the caller's contract with
/// the driver API).
pub(crate) fn copy_resolved(backend: &dyn Backend, dst: Resolved, src: Resolved, len: usize) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    match (dst, src) {
        (Resolved::Device(d), Resolved::Device(s)) => backend.copy_dtod(d, s, len).map_err(backend_err),
        (Resolved::Device(d), Resolved::Host(s)) => {
            // SAFETY: host source valid for len bytes (API contract).
            let src = unsafe { std::slice::from_raw_parts(s as *const u8, len) };
            backend.copy_htod(d, src).map_err(backend_err)
        }
        (Resolved::Host(d), Resolved::Device(s)) => {
            // SAFETY: host destination valid for len bytes (API contract).
            let dst = unsafe { std::slice::from_raw_parts_mut(d as *mut u8, len) };
            backend.copy_dtoh(dst, s).map_err(backend_err)
        }
        (Resolved::Host(d), Resolved::Host(s)) => {
            // SAFETY: both valid for len bytes (API contract); may overlap.
            unsafe { std::ptr::copy(s as *const u8, d as *mut u8, len) };
            Ok(())
        }
    }
}

pub(crate) fn copy_to_host(backend: &dyn Backend, dst: &mut [u8], src: Resolved) -> Result<()> {
    copy_resolved(backend, Resolved::Host(dst.as_mut_ptr() as usize), src, dst.len())
}

/// Enqueues a copy of `len` bytes between two resolved locations on a
/// stream's queue. A host source is read, and a host destination written,
/// when the queue runs the copy: the caller keeps them valid until then
/// (page-locked memory by CUDA's rules; pageable memory is staged or
/// copied synchronously by the driver). A copy between two host locations
/// waits for the queue's earlier work and copies on the calling thread.
pub(crate) fn enqueue_copy(queue: &dyn BackendQueue, dst: Resolved, src: Resolved, len: usize) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    match (dst, src) {
        (Resolved::Device(d), Resolved::Device(s)) => queue.copy_dtod(d, s, len).map_err(backend_err),
        (Resolved::Device(d), Resolved::Host(s)) => queue.copy_htod(d, HostSrc::Borrowed { addr: s, len }).map_err(backend_err),
        (Resolved::Host(d), Resolved::Device(s)) => queue.copy_dtoh(d, s, len).map_err(backend_err),
        (Resolved::Host(d), Resolved::Host(s)) => {
            queue.synchronize().map_err(Error::Fault)?;
            // SAFETY: both valid for len bytes (API contract); may overlap.
            unsafe { std::ptr::copy(s as *const u8, d as *mut u8, len) };
            Ok(())
        }
    }
}

/// Enqueues a copy of bytes the queue then owns (a snapshot of pageable
/// memory, a value) to `dst`.
pub(crate) fn enqueue_owned(queue: &dyn BackendQueue, dst: Resolved, src: Vec<u8>) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    match dst {
        Resolved::Device(d) => queue.copy_htod(d, HostSrc::Owned(src)).map_err(backend_err),
        Resolved::Host(h) => {
            queue.synchronize().map_err(Error::Fault)?;
            // SAFETY: host-accessible memory, range-checked by the caller.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), h as *mut u8, src.len()) };
            Ok(())
        }
    }
}

fn memset_resolved(queue: &dyn BackendQueue, dst: Resolved, value: MemsetValue, count: usize) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    match dst {
        Resolved::Device(d) => queue.memset(d, value, count).map_err(backend_err),
        Resolved::Host(h) => {
            queue.synchronize().map_err(Error::Fault)?;
            let n = count * value.element_size();
            // SAFETY: host-accessible memory of the driver's own table,
            // range-checked by the caller.
            let s = unsafe { std::slice::from_raw_parts_mut(h as *mut u8, n) };
            value.fill(s);
            Ok(())
        }
    }
}

/// A checked copy, ready to run on a stream.
#[derive(Debug, Clone)]
pub(crate) struct CopyPlan {
    pub dst: Resolved,
    pub src: Resolved,
    width: usize,
    total: usize,
    /// (destination, source) offsets of each row; empty when the whole
    /// copy is one contiguous block.
    rows: Vec<(usize, usize)>,
}

impl CopyPlan {
    /// Enqueues the copy (row by row) on a stream's queue.
    pub(crate) fn enqueue(&self, queue: &dyn BackendQueue) -> Result<()> {
        if self.rows.is_empty() {
            return enqueue_copy(queue, self.dst, self.src, self.total);
        }
        for (d, s) in &self.rows {
            enqueue_copy(queue, self.dst.offset(*d), self.src.offset(*s), self.width)?;
        }
        Ok(())
    }
}

/// A checked memset, ready to run on a stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemsetPlan {
    dst: Resolved,
    pitch: usize,
    row: usize,
    value: MemsetValue,
    width: usize,
    height: usize,
}

impl MemsetPlan {
    /// Enqueues the memset (row by row) on a stream's queue.
    pub(crate) fn enqueue(&self, queue: &dyn BackendQueue) -> Result<()> {
        if self.height == 1 || self.pitch == self.row {
            return memset_resolved(queue, self.dst, self.value, self.width * self.height);
        }
        for y in 0..self.height {
            memset_resolved(queue, self.dst.offset(y * self.pitch), self.value, self.width)?;
        }
        Ok(())
    }
}

/// The memory type a pointer reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryType {
    Host,
    Device,
}

/// Everything `cuPointerGetAttribute` can say about a known address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointerInfo {
    pub ctx: u64,
    pub device: usize,
    pub memory_type: MemoryType,
    pub is_managed: bool,
    /// The address as the device sees it.
    pub device_pointer: u64,
    /// The address as the host sees it, if it can.
    pub host_pointer: Option<u64>,
    /// The allocation's start, in the address space `ptr` was given in.
    pub range_start: u64,
    pub range_size: u64,
    pub buffer_id: u64,
    pub pool: Option<u64>,
    pub legacy_ipc_capable: bool,
    pub sync_memops: bool,
    /// `CUmemAccess_flags` devices have (read-write except for virtual
    /// memory mappings, which say what `cuMemSetAccess` granted).
    pub access_flags: u32,
    /// `CUmemAllocationHandleType` bits the memory can be exported as.
    pub allowed_handle_types: u64,
}

/// A pointer attribute's value, by C type: 32-bit values (`unsigned int`,
/// `int`, enums, booleans) and 64-bit ones (pointers, handles, sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointerAttribute {
    U32(u32),
    I32(i32),
    U64(u64),
}

impl PointerAttribute {
    /// The size in bytes the C caller's buffer has for `attr`; `None` for
    /// attributes this driver does not know.
    pub fn size_of(attr: PA) -> Option<usize> {
        Some(match attr {
            PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE
            | PA::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
            | PA::CU_POINTER_ATTRIBUTE_IS_MANAGED
            | PA::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
            | PA::CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE
            | PA::CU_POINTER_ATTRIBUTE_MAPPED
            | PA::CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE
            | PA::CU_POINTER_ATTRIBUTE_ACCESS_FLAGS
            | PA::CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE
            | PA::CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL => 4,
            PA::CU_POINTER_ATTRIBUTE_CONTEXT
            | PA::CU_POINTER_ATTRIBUTE_DEVICE_POINTER
            | PA::CU_POINTER_ATTRIBUTE_HOST_POINTER
            | PA::CU_POINTER_ATTRIBUTE_BUFFER_ID
            | PA::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
            | PA::CU_POINTER_ATTRIBUTE_RANGE_SIZE
            | PA::CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES
            | PA::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE
            | PA::CU_POINTER_ATTRIBUTE_MAPPING_SIZE
            | PA::CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR
            | PA::CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID => 8,
            _ => return None,
        })
    }

    pub fn to_u64(self) -> u64 {
        match self {
            PointerAttribute::U32(v) => v as u64,
            PointerAttribute::I32(v) => v as u32 as u64,
            PointerAttribute::U64(v) => v,
        }
    }
}

/// One side of a strided copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemLoc {
    /// Host memory (`CU_MEMORYTYPE_HOST`).
    Host(usize),
    /// Device memory (`CU_MEMORYTYPE_DEVICE`).
    Device(u64),
    /// Either, decided from the address (`CU_MEMORYTYPE_UNIFIED`).
    Unified(u64),
    /// A CUDA array (`CU_MEMORYTYPE_ARRAY`): its handle.
    Array(u64),
}

/// A 2-D copy (`CUDA_MEMCPY2D`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memcpy2D {
    pub src: MemLoc,
    pub src_x: usize,
    pub src_y: usize,
    pub src_pitch: usize,
    pub dst: MemLoc,
    pub dst_x: usize,
    pub dst_y: usize,
    pub dst_pitch: usize,
    pub width: usize,
    pub height: usize,
}

/// A 3-D copy (`CUDA_MEMCPY3D`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memcpy3D {
    pub src: MemLoc,
    pub src_x: usize,
    pub src_y: usize,
    pub src_z: usize,
    pub src_lod: usize,
    pub src_pitch: usize,
    pub src_height: usize,
    pub dst: MemLoc,
    pub dst_x: usize,
    pub dst_y: usize,
    pub dst_z: usize,
    pub dst_lod: usize,
    pub dst_pitch: usize,
    pub dst_height: usize,
    pub width: usize,
    pub height: usize,
    pub depth: usize,
}

impl From<Memcpy2D> for Memcpy3D {
    fn from(c: Memcpy2D) -> Self {
        Memcpy3D {
            src: c.src,
            src_x: c.src_x,
            src_y: c.src_y,
            src_z: 0,
            src_lod: 0,
            src_pitch: c.src_pitch,
            src_height: c.src_y + c.height,
            dst: c.dst,
            dst_x: c.dst_x,
            dst_y: c.dst_y,
            dst_z: 0,
            dst_lod: 0,
            dst_pitch: c.dst_pitch,
            dst_height: c.dst_y + c.height,
            width: c.width,
            height: c.height,
            depth: 1,
        }
    }
}

/// Memory pools (`cuMemAllocAsync`'s default pool and `cuMemPoolCreate`).
pub struct MemPool {
    pub(crate) handle: u64,
    pub(crate) device: usize,
    attrs: Mutex<PoolAttrs>,
}

#[derive(Debug, Default)]
struct PoolAttrs {
    reuse_follow_event_dependencies: bool,
    reuse_allow_opportunistic: bool,
    reuse_allow_internal_dependencies: bool,
    release_threshold: u64,
    used_current: u64,
    used_high: u64,
}

/// A pool attribute (`CUmemPool_attribute`), by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolAttribute {
    /// An `int` attribute (the reuse flags).
    Int(i32),
    /// A `cuuint64_t` attribute (threshold, usage counters).
    U64(u64),
}

/// Whether a direction needs the host buffer snapshotted or the call made
/// synchronous: pageable (untracked) host memory cannot be touched after
/// the call returns.
fn is_pageable(table: &MemTable, loc: Resolved) -> bool {
    match loc {
        Resolved::Host(h) => table.find(h as u64).is_none(),
        Resolved::Device(_) => false,
    }
}

impl Driver {
    // ---- the table ----

    /// What the driver knows about `ptr`, if it lies in memory it manages.
    pub fn pointer_info(&self, ptr: u64) -> Option<PointerInfo> {
        let (a, base, host_view) = self.mem.find(ptr)?;
        let off = ptr - base;
        let sync_memops = *lock(&a.sync_memops);
        let (memory_type, is_managed, pool, ipc) = match a.kind {
            AllocKind::Device => (MemoryType::Device, false, None, true),
            AllocKind::Pool { pool } => (MemoryType::Device, false, Some(pool), false),
            AllocKind::Global { .. } => (MemoryType::Device, false, None, false),
            AllocKind::Managed { .. } => (MemoryType::Device, true, None, false),
            AllocKind::Host { .. } | AllocKind::Registered { .. } => (MemoryType::Host, false, None, false),
            AllocKind::Vmm { .. } | AllocKind::GraphMem | AllocKind::Ipc => (MemoryType::Device, false, None, false),
        };
        let (access_flags, allowed_handle_types) = match a.kind {
            AllocKind::Vmm { access, handle } => (crate::vmm::access_flags(access), self.vmm_handle_types(handle) as u64),
            _ => (3, 0),
        };
        Some(PointerInfo {
            ctx: a.ctx,
            device: a.device,
            memory_type,
            is_managed,
            device_pointer: a.device_base + off,
            host_pointer: a.host_base.map(|h| h as u64 + off),
            range_start: if host_view { base } else { a.device_base },
            range_size: a.size as u64,
            buffer_id: a.buffer_id,
            pool,
            legacy_ipc_capable: ipc,
            sync_memops,
            access_flags,
            allowed_handle_types,
        })
    }

    /// `cuPointerGetAttribute`.
    pub fn pointer_attribute(&self, attr: PA, ptr: u64) -> Result<PointerAttribute> {
        self.check_init()?;
        use PointerAttribute::*;
        if attr == PA::CU_POINTER_ATTRIBUTE_P2P_TOKENS {
            return Err(Error::NotSupported("P2P tokens".into()));
        }
        if PointerAttribute::size_of(attr).is_none() {
            return Err(Error::invalid(format!("unknown pointer attribute {}", attr.0)));
        }
        let i = self.pointer_info(ptr).ok_or_else(|| Error::invalid(format!("{ptr:#x} is not memory the driver manages")))?;
        Ok(match attr {
            PA::CU_POINTER_ATTRIBUTE_CONTEXT => U64(i.ctx),
            PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE => U32(match i.memory_type {
                MemoryType::Host => 1,
                MemoryType::Device => 2,
            }),
            PA::CU_POINTER_ATTRIBUTE_DEVICE_POINTER => U64(i.device_pointer),
            PA::CU_POINTER_ATTRIBUTE_HOST_POINTER => {
                U64(i.host_pointer.ok_or_else(|| Error::invalid("device memory has no host address"))?)
            }
            PA::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS => U32(i.sync_memops as u32),
            PA::CU_POINTER_ATTRIBUTE_BUFFER_ID => U64(i.buffer_id),
            PA::CU_POINTER_ATTRIBUTE_IS_MANAGED => U32(i.is_managed as u32),
            PA::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL => I32(i.device as i32),
            PA::CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE => U32(i.legacy_ipc_capable as u32),
            PA::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR => U64(i.range_start),
            PA::CU_POINTER_ATTRIBUTE_RANGE_SIZE => U64(i.range_size),
            PA::CU_POINTER_ATTRIBUTE_MAPPED => U32(1),
            PA::CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES => U64(i.allowed_handle_types),
            PA::CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE => U32(0),
            PA::CU_POINTER_ATTRIBUTE_ACCESS_FLAGS => U32(i.access_flags),
            PA::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE => U64(i.pool.unwrap_or(0)),
            PA::CU_POINTER_ATTRIBUTE_MAPPING_SIZE => U64(i.range_size),
            PA::CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR => U64(i.range_start),
            PA::CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID => U64(i.buffer_id),
            PA::CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE => U32(0),
            PA::CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL => U32(0),
            _ => return Err(Error::invalid(format!("unknown pointer attribute {}", attr.0))),
        })
    }

    /// `cuPointerSetAttribute`: only `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`.
    pub fn pointer_set_sync_memops(&self, ptr: u64, value: bool) -> Result<()> {
        self.check_init()?;
        let (a, _, _) = self.mem.find(ptr).ok_or_else(|| Error::invalid(format!("{ptr:#x} is not driver memory")))?;
        *lock(&a.sync_memops) = value;
        Ok(())
    }

    /// `cuMemGetAddressRange`: the allocation containing `ptr`.
    pub fn mem_get_address_range(&self, ptr: u64) -> Result<(u64, usize)> {
        self.current_ctx()?;
        let i = self.pointer_info(ptr).ok_or_else(|| Error::NotFound(format!("{ptr:#x} is not in any allocation")))?;
        Ok((i.range_start, i.range_size as usize))
    }

    /// A device-side argument: must lie, with `len` bytes, in one
    /// allocation.
    pub(crate) fn resolve_device(&self, addr: u64, len: usize) -> Result<Resolved> {
        self.resolve_device_for(addr, len, true)
    }

    /// [`Self::resolve_device`] for memory that is only read (a copy's
    /// source): read-only virtual memory mappings qualify.
    pub(crate) fn resolve_device_src(&self, addr: u64, len: usize) -> Result<Resolved> {
        self.resolve_device_for(addr, len, false)
    }

    fn resolve_device_for(&self, addr: u64, len: usize, write: bool) -> Result<Resolved> {
        let Some((a, base, host_view)) = self.mem.find(addr) else {
            if self.vmm_reserved(addr) {
                return Err(Error::invalid(format!("{addr:#x} is reserved address space with no memory mapped (cuMemMap)")));
            }
            return Err(Error::invalid(format!("{addr:#x} is not device memory")));
        };
        let off = (addr - base) as usize;
        if let AllocKind::Vmm { .. } = a.kind {
            let need = if write { VmmAccess::ReadWrite } else { VmmAccess::Read };
            let until = addr.checked_add(len as u64).ok_or_else(|| Error::invalid("range overflows"))?;
            let end = self.mem.vmm_run_end(base, need, until);
            if end < until {
                let why = if end == base { format!("{addr:#x}") } else { format!("{end:#x}, {} bytes in,", end - addr) };
                return Err(Error::invalid(format!(
                    "{len} bytes at {addr:#x}: the virtual memory at {why} is not mapped with {} access (cuMemMap, cuMemSetAccess)",
                    if write { "read-write" } else { "read" }
                )));
            }
            return Ok(Resolved::Device(addr));
        }
        if len > a.size - off {
            return Err(Error::invalid(format!("{len} bytes at {addr:#x} overrun the {}-byte allocation at {base:#x}", a.size)));
        }
        Ok(match a.host_base {
            Some(h) if a.host_accessible() => {
                let _ = host_view;
                Resolved::Host(h + off)
            }
            _ => Resolved::Device(a.device_base + off as u64),
        })
    }

    /// A unified-address argument (`cuMemcpy`, `CU_MEMORYTYPE_UNIFIED`):
    /// driver memory is checked like a device argument, anything else is
    /// pageable host memory.
    pub(crate) fn resolve_unified(&self, addr: u64, len: usize) -> Result<Resolved> {
        self.resolve_unified_for(addr, len, true)
    }

    fn resolve_unified_for(&self, addr: u64, len: usize, write: bool) -> Result<Resolved> {
        if self.mem.find(addr).is_some() || self.vmm_reserved(addr) {
            self.resolve_device_for(addr, len, write)
        } else if addr == 0 {
            Err(Error::invalid("NULL pointer"))
        } else {
            Ok(Resolved::Host(addr as usize))
        }
    }

    fn resolve_loc(&self, loc: MemLoc, len: usize, write: bool) -> Result<Resolved> {
        match loc {
            MemLoc::Host(0) => Err(Error::invalid("NULL host pointer")),
            MemLoc::Host(h) => Ok(Resolved::Host(h)),
            MemLoc::Device(d) => self.resolve_device_for(d, len, write),
            MemLoc::Unified(u) => self.resolve_unified_for(u, len, write),
            MemLoc::Array(h) => Err(Error::invalid(format!("array {h:#x} used where memory was expected"))),
        }
    }

    // ---- allocation ----

    fn record(&self, ctx: &Context, kind: AllocKind, size: usize, device_base: u64, host_base: Option<usize>) {
        self.mem.insert(Allocation {
            kind,
            ctx: ctx.handle,
            device: ctx.device,
            size,
            device_base,
            host_base,
            buffer_id: self.mem.buffer_id(),
            sync_memops: Mutex::new(false),
        });
    }

    /// Makes a module's variables known to the address table.
    pub(crate) fn record_globals(&self, ctx: u64, device: usize, owner: u64, globals: &[crate::backend::GlobalDesc]) {
        for g in globals.iter().filter(|g| g.size > 0 && g.address != 0) {
            self.mem.insert(Allocation {
                kind: AllocKind::Global { owner },
                ctx,
                device,
                size: g.size,
                device_base: g.address,
                host_base: None,
                buffer_id: self.mem.buffer_id(),
                sync_memops: Mutex::new(false),
            });
        }
    }

    pub(crate) fn forget_globals(&self, owner: u64) {
        self.mem.remove_where(|a| a.kind == AllocKind::Global { owner });
    }

    /// `cuMemAlloc`.
    pub fn mem_alloc(&self, size: usize) -> Result<u64> {
        let ctx = self.current_ctx()?;
        self.check_capture_safe("cuMemAlloc")?;
        if size == 0 {
            return Err(Error::invalid("cannot allocate 0 bytes"));
        }
        let p = self.backend.alloc(ctx.device, size).map_err(backend_err)?;
        self.record(&ctx, AllocKind::Device, size, p, None);
        Ok(p)
    }

    /// `cuMemAllocPitch`: returns (pointer, pitch).
    pub fn mem_alloc_pitch(&self, width: usize, height: usize, element_size: u32) -> Result<(u64, usize)> {
        if !matches!(element_size, 4 | 8 | 16) {
            return Err(Error::invalid(format!("element size {element_size} is not 4, 8 or 16")));
        }
        if width == 0 || height == 0 {
            return Err(Error::invalid("zero width or height"));
        }
        let ctx = self.current_ctx()?;
        self.check_capture_safe("cuMemAllocPitch")?;
        let align = 512usize;
        let pitch = width.checked_next_multiple_of(align).ok_or_else(|| Error::invalid("width too large"))?;
        let size = pitch.checked_mul(height).ok_or_else(|| Error::invalid("pitch * height overflows"))?;
        let p = self.backend.alloc(ctx.device, size).map_err(backend_err)?;
        self.record(&ctx, AllocKind::Device, size, p, None);
        Ok((p, pitch))
    }

    /// `cuMemFree`. Waits for the device to finish with the memory, as
    /// NVIDIA's driver does.
    pub fn mem_free(&self, ptr: u64) -> Result<()> {
        let ctx = self.current_ctx()?;
        if ptr == 0 {
            return Ok(());
        }
        if crate::callback::in_callback() {
            let owner = self.pointer_info(ptr).and_then(|i| self.contexts.get(i.ctx));
            crate::callback::check_context(owner.as_deref().unwrap_or(&ctx), "cuMemFree")?;
        }
        self.check_capture_safe("cuMemFree")?;
        if let Some(m) = self.graph_mem_at(ptr) {
            // An allocation node's memory stays with its graph; freeing it
            // ends this launch's allocation.
            let _ = ctx.synchronize();
            m.live.store(false, std::sync::atomic::Ordering::Release);
            return Ok(());
        }
        let a = self
            .mem
            .remove_at(ptr, |a| {
                matches!(a.kind, AllocKind::Device | AllocKind::Managed { .. } | AllocKind::Pool { .. }) && a.device_base == ptr
            })
            .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not the start of a device allocation")))?;
        let owner = self.contexts.get(a.ctx);
        let _ = owner.as_deref().unwrap_or(&ctx).synchronize();
        self.release(&a)
    }

    fn release(&self, a: &Allocation) -> Result<()> {
        match a.kind {
            AllocKind::Device | AllocKind::Pool { .. } => self.backend.free(a.device, a.device_base).map_err(backend_err),
            AllocKind::Managed { .. } => self.backend.free_managed(a.device_base).map_err(backend_err),
            AllocKind::Host { .. } => self.backend.free_host(a.host_base.unwrap_or(0)).map_err(backend_err),
            AllocKind::Registered { .. } => self.backend.unregister_host(a.host_base.unwrap_or(0)).map_err(backend_err),
            // Mappings are undone by cuMemUnmap (crate::vmm).
            // Graph memory goes with its graph (Driver::collect_graph_mem).
            AllocKind::Global { .. } | AllocKind::Vmm { .. } | AllocKind::GraphMem => Ok(()),
            AllocKind::Ipc => self.backend.ipc_close(a.device_base).map_err(backend_err),
        }
    }

    /// The allocation holding `ptr`.
    pub(crate) fn mem_allocation(&self, ptr: u64) -> Option<Arc<Allocation>> {
        self.mem.find(ptr).map(|(a, _, _)| a)
    }

    /// Records another process's memory mapped at `ptr`.
    pub(crate) fn record_ipc(&self, ctx: &Context, size: usize, ptr: u64) {
        self.record(ctx, AllocKind::Ipc, size, ptr, None);
    }

    /// Forgets and unmaps the other process's memory mapped at `ptr`.
    pub(crate) fn release_ipc(&self, ptr: u64) -> Result<()> {
        match self.mem.remove_at(ptr, |a| a.kind == AllocKind::Ipc) {
            Some(a) => self.release(&a),
            None => Err(Error::invalid(format!("{ptr:#x} is not interprocess memory"))),
        }
    }

    /// Frees everything a context owns (at its destruction).
    pub(crate) fn free_memory_of(&self, ctx: u64) {
        for a in self.mem.remove_where(|a| a.ctx == ctx) {
            let _ = self.release(&a);
        }
    }

    /// `cuMemHostAlloc` (and `cuMemAllocHost` with flags 0).
    pub fn mem_host_alloc(&self, size: usize, flags: u32) -> Result<usize> {
        if flags & !0x7 != 0 {
            return Err(Error::invalid(format!("unknown host alloc flags {flags:#x}")));
        }
        let ctx = self.current_ctx()?;
        if size == 0 {
            return Err(Error::invalid("cannot allocate 0 bytes"));
        }
        self.check_capture_safe("cuMemHostAlloc")?;
        let h = self.backend.alloc_host(size, flags).map_err(backend_err)?;
        self.record(&ctx, AllocKind::Host { flags }, size, h.device, Some(h.host));
        Ok(h.host)
    }

    /// `cuMemFreeHost`.
    pub fn mem_free_host(&self, ptr: usize) -> Result<()> {
        let ctx = self.current_ctx()?;
        crate::callback::check_context(&ctx, "cuMemFreeHost")?;
        self.check_capture_safe("cuMemFreeHost")?;
        let a = self
            .mem
            .remove_at(ptr as u64, |a| matches!(a.kind, AllocKind::Host { .. }) && a.host_base == Some(ptr))
            .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not page-locked host memory")))?;
        let _ = ctx.synchronize();
        self.release(&a)
    }

    /// `cuMemHostGetDevicePointer` (flags must be 0).
    pub fn mem_host_get_device_pointer(&self, ptr: usize, flags: u32) -> Result<u64> {
        if flags != 0 {
            return Err(Error::invalid("flags must be 0"));
        }
        self.current_ctx()?;
        let i = self.pointer_info(ptr as u64).filter(|i| i.memory_type == MemoryType::Host);
        i.map(|i| i.device_pointer).ok_or_else(|| Error::invalid(format!("{ptr:#x} is not page-locked host memory")))
    }

    /// `cuMemHostGetFlags`.
    pub fn mem_host_get_flags(&self, ptr: usize) -> Result<u32> {
        self.current_ctx()?;
        match self.mem.find(ptr as u64) {
            Some((a, _, _)) => match a.kind {
                AllocKind::Host { flags } | AllocKind::Registered { flags } => Ok(flags),
                _ => Err(Error::invalid("not page-locked host memory")),
            },
            None => Err(Error::invalid(format!("{ptr:#x} is not page-locked host memory"))),
        }
    }

    /// `cuMemHostRegister`.
    pub fn mem_host_register(&self, ptr: usize, size: usize, flags: u32) -> Result<()> {
        if flags & !0xf != 0 {
            return Err(Error::invalid(format!("unknown host register flags {flags:#x}")));
        }
        if ptr == 0 || size == 0 {
            return Err(Error::invalid("NULL pointer or zero size"));
        }
        let ctx = self.current_ctx()?;
        self.check_capture_safe("cuMemHostRegister")?;
        let end = ptr.checked_add(size).ok_or_else(|| Error::invalid("range overflows"))?;
        // Any overlap with a known range is a double registration.
        let overlaps = self.mem.find(ptr as u64).is_some() || self.mem.find((end - 1) as u64).is_some() || {
            let m = lock(&self.mem.map);
            m.range(ptr as u64..end as u64).next().is_some()
        };
        if overlaps {
            return Err(Error::HostMemoryAlreadyRegistered);
        }
        let d = self.backend.register_host(ptr, size, flags).map_err(backend_err)?;
        self.record(&ctx, AllocKind::Registered { flags }, size, d, Some(ptr));
        Ok(())
    }

    /// `cuMemHostUnregister`.
    pub fn mem_host_unregister(&self, ptr: usize) -> Result<()> {
        self.current_ctx()?;
        self.check_capture_safe("cuMemHostUnregister")?;
        let a = self
            .mem
            .remove_at(ptr as u64, |a| matches!(a.kind, AllocKind::Registered { .. }) && a.host_base == Some(ptr))
            .ok_or(Error::HostMemoryNotRegistered)?;
        self.release(&a)
    }

    /// `cuMemAllocManaged` (flags: `CU_MEM_ATTACH_GLOBAL` or `_HOST`).
    pub fn mem_alloc_managed(&self, size: usize, flags: u32) -> Result<u64> {
        if flags != 1 && flags != 2 {
            return Err(Error::invalid(format!("managed memory flags {flags:#x}")));
        }
        let ctx = self.current_ctx()?;
        if size == 0 {
            return Err(Error::invalid("cannot allocate 0 bytes"));
        }
        if !self.device_props(ctx.device as i32)?.managed_memory {
            return Err(Error::NotSupported("managed memory".into()));
        }
        self.check_capture_safe("cuMemAllocManaged")?;
        let p = self.backend.alloc_managed(ctx.device, size).map_err(backend_err)?;
        self.record(&ctx, AllocKind::Managed { flags }, size, p, Some(p as usize));
        Ok(p)
    }

    // ---- copies ----

    /// Runs a copy on `stream`: synchronously for the synchronous API and
    /// whenever pageable host memory is the destination; asynchronously
    /// otherwise, with pageable sources snapshotted first.
    fn copy_on_stream(&self, stream: u64, ptds: bool, asynchronous: bool, dst: Resolved, src: Resolved, len: usize) -> Result<()> {
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        if !asynchronous {
            self.check_capture_safe("a synchronous copy")?;
        }
        if asynchronous {
            if let Some(cap) = self.capturing(&s) {
                // Host addresses stay unified so that a launch of the graph
                // checks them again (pinned memory may have been freed).
                let loc = |r: Resolved| match r {
                    Resolved::Device(d) => MemLoc::Device(d),
                    Resolved::Host(h) => MemLoc::Unified(h as u64),
                };
                let copy = Memcpy3D::from(Memcpy2D {
                    src: loc(src),
                    src_x: 0,
                    src_y: 0,
                    src_pitch: len,
                    dst: loc(dst),
                    dst_x: 0,
                    dst_y: 0,
                    dst_pitch: len,
                    width: len,
                    height: 1,
                });
                let node = crate::graph::MemcpyNode { ctx: ctx.handle, copy };
                return self.capture_node(&s, &cap, crate::graph::NodeParams::Memcpy(node)).map(|_| ());
            }
        }
        if !asynchronous || is_pageable(&self.mem, dst) {
            return self.run_sync(&ctx, &s, Box::new(move |q| enqueue_copy(q, dst, src, len)));
        }
        if is_pageable(&self.mem, src) {
            // As CUDA stages pageable memory: the call returns once the
            // source can be reused; the queue owns the snapshot until the
            // copy has completed.
            let mut staged = vec![0u8; len];
            copy_to_host(&*self.backend, &mut staged, src)?;
            return self.run_async(&ctx, &s, Box::new(move |q| enqueue_owned(q, dst, staged)));
        }
        self.run_async(&ctx, &s, Box::new(move |q| enqueue_copy(q, dst, src, len)))
    }

    /// `cuMemcpyHtoD[Async]`.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes (until the copy completes,
    /// for page-locked memory and asynchronous copies).
    pub unsafe fn memcpy_htod(&self, dst: u64, src: usize, len: usize, stream: u64, ptds: bool, asynchronous: bool) -> Result<()> {
        self.current_ctx()?;
        if len == 0 {
            return Ok(());
        }
        if src == 0 {
            return Err(Error::invalid("NULL host pointer"));
        }
        let d = self.resolve_device(dst, len)?;
        self.copy_on_stream(stream, ptds, asynchronous, d, Resolved::Host(src), len)
    }

    /// `cuMemcpyDtoH[Async]`.
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes until the copy completes.
    pub unsafe fn memcpy_dtoh(&self, dst: usize, src: u64, len: usize, stream: u64, ptds: bool, asynchronous: bool) -> Result<()> {
        self.current_ctx()?;
        if len == 0 {
            return Ok(());
        }
        if dst == 0 {
            return Err(Error::invalid("NULL host pointer"));
        }
        let s = self.resolve_device_src(src, len)?;
        self.copy_on_stream(stream, ptds, asynchronous, Resolved::Host(dst), s, len)
    }

    /// `cuMemcpyDtoD[Async]`.
    pub fn memcpy_dtod(&self, dst: u64, src: u64, len: usize, stream: u64, ptds: bool, asynchronous: bool) -> Result<()> {
        self.current_ctx()?;
        if len == 0 {
            return Ok(());
        }
        let d = self.resolve_device(dst, len)?;
        let s = self.resolve_device_src(src, len)?;
        // SAFETY: both sides are driver memory.
        self.copy_on_stream(stream, ptds, asynchronous, d, s, len)
    }

    /// `cuMemcpy[Async]`: both addresses unified.
    ///
    /// # Safety
    /// Addresses outside driver memory are host memory the caller owns,
    /// valid for `len` bytes until the copy completes.
    pub unsafe fn memcpy(&self, dst: u64, src: u64, len: usize, stream: u64, ptds: bool, asynchronous: bool) -> Result<()> {
        self.current_ctx()?;
        if len == 0 {
            return Ok(());
        }
        let d = self.resolve_unified(dst, len)?;
        let s = self.resolve_unified_for(src, len, false)?;
        self.copy_on_stream(stream, ptds, asynchronous, d, s, len)
    }

    /// `cuMemcpyPeer[Async]`: contexts are checked, then it is a unified
    /// copy (all devices share one address space).
    pub fn memcpy_peer(
        &self,
        dst: u64,
        dst_ctx: u64,
        src: u64,
        src_ctx: u64,
        len: usize,
        stream: u64,
        ptds: bool,
        asynchronous: bool,
    ) -> Result<()> {
        self.check_init()?;
        if dst_ctx == 0 || src_ctx == 0 {
            return Err(Error::InvalidContext);
        }
        self.ctx_by_handle(dst_ctx)?;
        self.ctx_by_handle(src_ctx)?;
        self.memcpy_dtod(dst, src, len, stream, ptds, asynchronous)
    }

    /// `cuMemcpy2D[Async]`, `cuMemcpy2DUnaligned`.
    ///
    /// # Safety
    /// Host sides must be valid for the rows they describe.
    pub unsafe fn memcpy_2d(&self, c: &Memcpy2D, stream: u64, ptds: bool, asynchronous: bool) -> Result<()> {
        let short = |loc: MemLoc, pitch: usize, x: usize| !matches!(loc, MemLoc::Array(_)) && pitch < c.width + x;
        if c.height > 1 && (short(c.src, c.src_pitch, c.src_x) || short(c.dst, c.dst_pitch, c.dst_x)) {
            return Err(Error::invalid("pitch smaller than the row"));
        }
        self.memcpy_3d(&Memcpy3D::from(*c), stream, ptds, asynchronous)
    }

    /// `cuMemcpy3D[Async]`.
    ///
    /// # Safety
    /// Host sides must be valid for the rows they describe.
    pub unsafe fn memcpy_3d(&self, c: &Memcpy3D, stream: u64, ptds: bool, asynchronous: bool) -> Result<()> {
        self.current_ctx()?;
        let Some(plan) = self.plan_copy(c)? else {
            return Ok(());
        };
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        if !asynchronous {
            self.check_capture_safe("a synchronous copy")?;
        }
        if asynchronous {
            if let Some(cap) = self.capturing(&s) {
                let node = crate::graph::MemcpyNode { ctx: ctx.handle, copy: *c };
                return self.capture_node(&s, &cap, crate::graph::NodeParams::Memcpy(node)).map(|_| ());
            }
        }
        let pageable = is_pageable(&self.mem, plan.dst) || is_pageable(&self.mem, plan.src);
        let work = move |q: &dyn BackendQueue| plan.enqueue(q);
        if asynchronous && !pageable {
            self.run_async(&ctx, &s, Box::new(work))
        } else {
            self.run_sync(&ctx, &s, Box::new(work))
        }
    }

    /// Checks a 3-D copy and resolves both sides; `None` when it copies
    /// nothing.
    pub(crate) fn plan_copy(&self, c: &Memcpy3D) -> Result<Option<CopyPlan>> {
        if c.src_lod != 0 || c.dst_lod != 0 {
            return Err(Error::invalid("LOD must be 0"));
        }
        if c.width == 0 || c.height == 0 || c.depth == 0 {
            return Ok(None);
        }
        // An array side: its own pitch and height, and its memory.
        let mut c = *c;
        let mut arrays = [None, None];
        if let MemLoc::Array(h) = c.src {
            let (base, pitch, rows) = self.array_extent(h, c.src_x, c.src_y, c.src_z, c.width, c.height, c.depth)?;
            (c.src_pitch, c.src_height, arrays[0]) = (pitch, rows, Some(base));
        }
        if let MemLoc::Array(h) = c.dst {
            let (base, pitch, rows) = self.array_extent(h, c.dst_x, c.dst_y, c.dst_z, c.width, c.height, c.depth)?;
            (c.dst_pitch, c.dst_height, arrays[1]) = (pitch, rows, Some(base));
        }
        let c = &c;
        let rows = c.height > 1 || c.depth > 1;
        if rows && (c.src_pitch < c.src_x + c.width || c.dst_pitch < c.dst_x + c.width) {
            return Err(Error::invalid("pitch smaller than the row"));
        }
        if c.depth > 1 && (c.src_height < c.src_y + c.height || c.dst_height < c.dst_y + c.height) {
            return Err(Error::invalid("height smaller than the copied rows"));
        }
        // Offsets of the first and one past the last byte touched.
        let extent = |x: usize, y: usize, z: usize, pitch: usize, h: usize| -> Result<(usize, usize)> {
            let slice = pitch.checked_mul(h).ok_or_else(|| Error::invalid("overflow"))?;
            let start = z
                .checked_mul(slice)
                .and_then(|v| v.checked_add(y.checked_mul(pitch)?))
                .and_then(|v| v.checked_add(x))
                .ok_or_else(|| Error::invalid("overflow"))?;
            let last = (c.depth - 1)
                .checked_mul(slice)
                .and_then(|v| v.checked_add((c.height - 1).checked_mul(pitch)?))
                .and_then(|v| v.checked_add(start + c.width))
                .ok_or_else(|| Error::invalid("overflow"))?;
            Ok((start, last))
        };
        let (s0, s1) = extent(c.src_x, c.src_y, c.src_z, c.src_pitch, c.src_height)?;
        let (d0, d1) = extent(c.dst_x, c.dst_y, c.dst_z, c.dst_pitch, c.dst_height)?;
        let offset_loc = |l: MemLoc, by: usize| match l {
            MemLoc::Host(h) if h != 0 => MemLoc::Host(h + by),
            MemLoc::Device(d) => MemLoc::Device(d + by as u64),
            MemLoc::Unified(u) => MemLoc::Unified(u + by as u64),
            other => other,
        };
        let src = match arrays[0] {
            Some(base) => Resolved::Device(base + s0 as u64),
            None => self.resolve_loc(offset_loc(c.src, s0), s1 - s0, false)?,
        };
        let dst = match arrays[1] {
            Some(base) => Resolved::Device(base + d0 as u64),
            None => self.resolve_loc(offset_loc(c.dst, d0), d1 - d0, true)?,
        };
        let contiguous =
            c.src_pitch == c.width && c.dst_pitch == c.width && (c.depth == 1 || (c.src_height == c.height && c.dst_height == c.height));
        let mut rows = Vec::new();
        if !contiguous {
            rows.reserve(c.height * c.depth);
            for z in 0..c.depth {
                for y in 0..c.height {
                    rows.push((z * c.dst_pitch * c.dst_height + y * c.dst_pitch, z * c.src_pitch * c.src_height + y * c.src_pitch));
                }
            }
        }
        Ok(Some(CopyPlan { dst, src, width: c.width, total: c.width * c.height * c.depth, rows }))
    }

    // ---- memset ----

    /// `cuMemsetD8/16/32[Async]`.
    pub fn memset(&self, dst: u64, value: MemsetValue, count: usize, stream: u64, ptds: bool, asynchronous: bool) -> Result<()> {
        self.memset_2d(dst, 0, value, count, 1, stream, ptds, asynchronous)
    }

    /// `cuMemsetD2D8/16/32[Async]`: `width` elements in each of `height`
    /// rows `pitch` bytes apart.
    #[allow(clippy::too_many_arguments)]
    pub fn memset_2d(
        &self,
        dst: u64,
        pitch: usize,
        value: MemsetValue,
        width: usize,
        height: usize,
        stream: u64,
        ptds: bool,
        asynchronous: bool,
    ) -> Result<()> {
        self.current_ctx()?;
        let Some(plan) = self.plan_memset(dst, pitch, value, width, height)? else {
            return Ok(());
        };
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        if !asynchronous {
            self.check_capture_safe("a synchronous memset")?;
        }
        if asynchronous {
            if let Some(cap) = self.capturing(&s) {
                let node = crate::graph::MemsetNode { ctx: ctx.handle, dst, pitch, value, width, height };
                return self.capture_node(&s, &cap, crate::graph::NodeParams::Memset(node)).map(|_| ());
            }
        }
        let work = move |q: &dyn BackendQueue| plan.enqueue(q);
        if asynchronous {
            self.run_async(&ctx, &s, Box::new(work))
        } else {
            self.run_sync(&ctx, &s, Box::new(work))
        }
    }

    /// Checks a 2-D memset and resolves its destination; `None` when it
    /// sets nothing.
    pub(crate) fn plan_memset(
        &self,
        dst: u64,
        pitch: usize,
        value: MemsetValue,
        width: usize,
        height: usize,
    ) -> Result<Option<MemsetPlan>> {
        let es = value.element_size();
        if !dst.is_multiple_of(es as u64) {
            return Err(Error::invalid(format!("{dst:#x} is not aligned to {es} bytes")));
        }
        if width == 0 || height == 0 {
            return Ok(None);
        }
        let row = width.checked_mul(es).ok_or_else(|| Error::invalid("size overflows"))?;
        if height > 1 && pitch < row {
            return Err(Error::invalid("pitch smaller than the row"));
        }
        let span = (height - 1).checked_mul(pitch).and_then(|v| v.checked_add(row)).ok_or_else(|| Error::invalid("size overflows"))?;
        let dst = self.resolve_device(dst, span)?;
        Ok(Some(MemsetPlan { dst, pitch, row, value, width, height }))
    }

    // ---- pools and stream-ordered allocation ----

    pub(crate) fn create_pool_internal(&self, device: usize) -> u64 {
        self.pools
            .insert_with(|h| MemPool {
                handle: h,
                device,
                attrs: Mutex::new(PoolAttrs {
                    reuse_follow_event_dependencies: true,
                    reuse_allow_opportunistic: true,
                    reuse_allow_internal_dependencies: true,
                    ..PoolAttrs::default()
                }),
            })
            .handle
    }

    pub(crate) fn pool(&self, h: u64) -> Result<Arc<MemPool>> {
        self.pools.get(h).ok_or_else(|| Error::handle(format!("{h:#x} is not a memory pool")))
    }

    /// `cuDeviceGetDefaultMemPool`.
    pub fn device_default_mem_pool(&self, dev: i32) -> Result<u64> {
        self.device_props(dev)?;
        self.default_pools.get().and_then(|p| p.get(dev as usize).copied()).ok_or(Error::InvalidDevice(dev as i64))
    }

    /// `cuDeviceGetMemPool`: the pool `cuMemAllocAsync` uses.
    pub fn device_get_mem_pool(&self, dev: i32) -> Result<u64> {
        self.device_props(dev)?;
        lock(&self.current_pools).get(dev as usize).copied().ok_or(Error::InvalidDevice(dev as i64))
    }

    /// `cuDeviceSetMemPool`.
    pub fn device_set_mem_pool(&self, dev: i32, pool: u64) -> Result<()> {
        self.device_props(dev)?;
        let p = self.pool(pool)?;
        if p.device != dev as usize {
            return Err(Error::invalid("the pool belongs to another device"));
        }
        if let Some(slot) = lock(&self.current_pools).get_mut(dev as usize) {
            *slot = pool;
        }
        Ok(())
    }

    /// `cuMemPoolCreate` for device memory of `dev`.
    pub fn mem_pool_create(&self, dev: i32) -> Result<u64> {
        self.device_props(dev)?;
        Ok(self.create_pool_internal(dev as usize))
    }

    /// `cuMemPoolDestroy`; default pools cannot be destroyed.
    pub fn mem_pool_destroy(&self, pool: u64) -> Result<()> {
        self.check_init()?;
        self.pool(pool)?;
        if self.default_pools.get().is_some_and(|d| d.contains(&pool)) {
            return Err(Error::invalid("a device's default pool cannot be destroyed"));
        }
        for slot in lock(&self.current_pools).iter_mut() {
            if *slot == pool {
                *slot = 0;
            }
        }
        let dp = self.default_pools.get().cloned().unwrap_or_default();
        for (i, slot) in lock(&self.current_pools).iter_mut().enumerate() {
            if *slot == 0 {
                *slot = dp.get(i).copied().unwrap_or(0);
            }
        }
        self.pools.remove(pool);
        for a in self.mem.remove_where(|a| a.kind == AllocKind::Pool { pool }) {
            let _ = self.release(&a);
        }
        Ok(())
    }

    /// `cuMemPoolTrimTo`: nothing is cached, so nothing to trim.
    pub fn mem_pool_trim(&self, pool: u64, _keep: usize) -> Result<()> {
        self.check_init()?;
        self.pool(pool).map(|_| ())
    }

    pub fn mem_pool_get_attribute(&self, pool: u64, attr: u32) -> Result<PoolAttribute> {
        self.check_init()?;
        let p = self.pool(pool)?;
        let a = lock(&p.attrs);
        Ok(match attr {
            1 => PoolAttribute::Int(a.reuse_follow_event_dependencies as i32),
            2 => PoolAttribute::Int(a.reuse_allow_opportunistic as i32),
            3 => PoolAttribute::Int(a.reuse_allow_internal_dependencies as i32),
            4 => PoolAttribute::U64(a.release_threshold),
            5 | 7 => PoolAttribute::U64(a.used_current),
            6 | 8 => PoolAttribute::U64(a.used_high),
            _ => return Err(Error::invalid(format!("unknown pool attribute {attr}"))),
        })
    }

    pub fn mem_pool_set_attribute(&self, pool: u64, attr: u32, value: u64) -> Result<()> {
        self.check_init()?;
        let p = self.pool(pool)?;
        let mut a = lock(&p.attrs);
        match attr {
            1 => a.reuse_follow_event_dependencies = value != 0,
            2 => a.reuse_allow_opportunistic = value != 0,
            3 => a.reuse_allow_internal_dependencies = value != 0,
            4 => a.release_threshold = value,
            // The high-water marks may only be reset to 0.
            6 | 8 if value == 0 => a.used_high = a.used_current,
            _ => return Err(Error::invalid(format!("pool attribute {attr} cannot be set to {value}"))),
        }
        Ok(())
    }

    /// `cuMemAllocAsync` / `cuMemAllocFromPoolAsync`: the memory is
    /// allocated at once (earlier than stream order requires, which no
    /// program can tell apart).
    pub fn mem_alloc_async(&self, size: usize, pool: Option<u64>, stream: u64, ptds: bool) -> Result<u64> {
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        if size == 0 {
            return Err(Error::invalid("cannot allocate 0 bytes"));
        }
        let pool = match pool {
            Some(p) => p,
            None => self.device_get_mem_pool(ctx.device as i32)?,
        };
        let pl = self.pool(pool)?;
        if let Some(cap) = self.capturing(&s) {
            // A memory allocation node: its address is fixed from now on.
            let spec = crate::graph::MemAllocSpec {
                alloc_type: 1,
                handle_types: 0,
                location_type: 1,
                device: pl.device as i32,
                access: Vec::new(),
                bytesize: size,
            };
            let m = self.mem_alloc_node(&spec)?;
            let addr = m.addr;
            self.capture_node(&s, &cap, crate::graph::NodeParams::MemAlloc(m))?;
            self.collect_graph_mem();
            return Ok(addr);
        }
        let p = self.backend.alloc(pl.device, size).map_err(backend_err)?;
        self.record(&ctx, AllocKind::Pool { pool }, size, p, None);
        let mut a = lock(&pl.attrs);
        a.used_current += size as u64;
        a.used_high = a.used_high.max(a.used_current);
        Ok(p)
    }

    /// `cuMemFreeAsync`: the pointer is invalid at once; the memory is
    /// released in stream order.
    pub fn mem_free_async(&self, ptr: u64, stream: u64, ptds: bool) -> Result<()> {
        let (ctx, s) = self.resolve_stream(stream, ptds)?;
        if let Some(cap) = self.capturing(&s) {
            if self.graph_mem_at(ptr).is_none() {
                return Err(Error::invalid(format!(
                    "{ptr:#x} was not allocated in a graph: only graph allocations can be freed during stream capture"
                )));
            }
            self.capture_node(&s, &cap, crate::graph::NodeParams::MemFree(ptr))?;
            return Ok(());
        }
        if let Some(m) = self.graph_mem_at(ptr) {
            // Graph memory stays with its graph; this ends the allocation
            // of the graph's last launch.
            m.live.store(false, std::sync::atomic::Ordering::Release);
            return Ok(());
        }
        let a = self
            .mem
            .remove_at(ptr, |a| matches!(a.kind, AllocKind::Device | AllocKind::Pool { .. }) && a.device_base == ptr)
            .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not the start of a device allocation")))?;
        if let AllocKind::Pool { pool } = a.kind {
            if let Some(pl) = self.pools.get(pool) {
                let mut at = lock(&pl.attrs);
                at.used_current = at.used_current.saturating_sub(a.size as u64);
            }
        }
        let backend = self.backend.clone();
        let a2 = a.clone();
        // Host work: the stream's earlier work, which may use the memory,
        // has completed when it runs.
        self.submit_host(&ctx, &s, Box::new(move |_, _| backend.free(a2.device, a2.device_base).map_err(backend_err)))?;
        Ok(())
    }

    /// `cuMemPrefetchAsync` / `cuMemAdvise`: managed memory is always
    /// resident, so these only check their arguments.
    pub fn mem_check_managed_range(&self, ptr: u64, len: usize) -> Result<()> {
        self.current_ctx()?;
        match self.mem.find(ptr) {
            Some((a, base, _)) if matches!(a.kind, AllocKind::Managed { .. }) => {
                if (ptr - base) as usize + len > a.size {
                    return Err(Error::invalid("range overruns the allocation"));
                }
                Ok(())
            }
            Some(_) => Err(Error::invalid("not managed memory")),
            None => Err(Error::invalid("not managed memory")),
        }
    }

    /// For tests and the C layer: whether an address is pageable host
    /// memory as far as the driver can tell.
    pub fn is_driver_memory(&self, ptr: u64) -> bool {
        self.mem.find(ptr).is_some()
    }

    #[allow(dead_code)]
    pub(crate) fn stream_of(&self, stream: u64, ptds: bool) -> Result<Arc<Stream>> {
        Ok(self.resolve_stream(stream, ptds)?.1)
    }

    /// Reads device memory (for module globals and tests).
    pub fn read_device(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()> {
        let s = self.resolve_device_src(src, dst.len())?;
        copy_to_host(&*self.backend, dst, s)
    }
}
