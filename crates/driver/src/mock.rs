//! A backend in host memory whose kernels are Rust closures, for tests and
//! for running the driver before a real backend is plugged in.
//!
//! Memory is ordinary host memory (device addresses are host addresses, as
//! on the CPU backend); every copy is checked against the live allocations
//! so a driver bug that lets a bad range through fails loudly. Modules are
//! read with a small PTX scanner that finds entries, their parameter
//! layouts, `.reqntid`/`.maxntid`, static shared memory and module
//! variables — enough for the driver's logic, nothing more. A kernel runs
//! the closure registered under its name; an unregistered kernel fails its
//! launch with a message saying so.
//!
//! Its queues ([`MockQueue`]) are as asynchronous as a GPU's can be: an
//! enqueued copy, memset, launch or event record is checked at once and
//! runs only when the driver synchronises the queue, so a driver that
//! counted work complete before its queue ran it, or ran host work before
//! the device work ahead of it, gives wrong results in the tests. Every
//! operation a queue runs is logged ([`MockBackend::queue_log`]) with the
//! queue it ran on.

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::*;
use crate::handle::lock;
use crate::props::DeviceProps;

/// One launch, as a mock kernel sees it.
#[derive(Debug)]
pub struct MockLaunch<'a> {
    pub desc: &'a KernelDesc,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
    pub params: &'a [u8],
    pub cooperative: bool,
}

impl MockLaunch<'_> {
    fn param_bytes(&self, i: usize, n: usize) -> [u8; 8] {
        let mut b = [0u8; 8];
        if let Some(p) = self.desc.params.get(i) {
            let o = p.offset as usize;
            if let Some(src) = self.params.get(o..o + n.min(p.size as usize)) {
                b[..src.len()].copy_from_slice(src);
            }
        }
        b
    }

    /// Parameter `i` as a 64-bit value (pointers).
    pub fn u64(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.param_bytes(i, 8))
    }

    /// Parameter `i` as a 32-bit value.
    pub fn u32(&self, i: usize) -> u32 {
        let b = self.param_bytes(i, 4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

/// A mock kernel.
pub type MockKernel = Arc<dyn Fn(&MockLaunch<'_>) -> Result<(), LaunchFault> + Send + Sync>;

/// See the [module documentation](self).
pub struct MockBackend {
    devices: Vec<DeviceProps>,
    /// Every live range: address -> (size, layout it was allocated with,
    /// if the mock owns it).
    ranges: Arc<Mutex<Ranges>>,
    kernels: Mutex<HashMap<String, MockKernel>>,
    allocated: AtomicU64,
    vmm: Arc<Mutex<MockVmm>>,
    /// Launches run so far (by every module).
    pub launches: Arc<AtomicU64>,
    /// Modules loaded so far.
    pub loads: AtomicU64,
    /// Every operation the backend's queues ran, in order.
    pub queue_log: Arc<Mutex<Vec<QueuedOp>>>,
    /// Queues created so far (the id of the next).
    queues: AtomicU64,
    /// Every change of peer access the driver asked for: (enabled, device, peer).
    pub peer_log: Arc<Mutex<Vec<(bool, usize, usize)>>>,
}

type Ranges = BTreeMap<usize, (usize, Option<Layout>)>;

impl std::fmt::Debug for MockBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockBackend").field("devices", &self.devices.len()).finish()
    }
}

impl MockBackend {
    /// `devices` devices described as the host CPU.
    pub fn new(devices: usize) -> MockBackend {
        MockBackend {
            devices: (0..devices)
                .map(|d| {
                    let mut p = DeviceProps::host_cpu(d as u32);
                    p.virtual_memory_management = true;
                    p
                })
                .collect(),
            ranges: Arc::new(Mutex::new(BTreeMap::new())),
            kernels: Mutex::new(HashMap::new()),
            allocated: AtomicU64::new(0),
            vmm: Arc::new(Mutex::new(MockVmm { next_addr: MOCK_VMM_BASE, next_mem: 1, ..MockVmm::default() })),
            launches: Arc::new(AtomicU64::new(0)),
            loads: AtomicU64::new(0),
            queue_log: Arc::new(Mutex::new(Vec::new())),
            queues: AtomicU64::new(0),
            peer_log: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// With the built-in kernels the C-level tests use:
    /// - `mock_fill_u32(u32 *p, u32 value, u32 n)`: `p[0..n] = value`;
    /// - `mock_fault()`: an illegal address fault;
    /// - `mock_sleep(u32 ms)`: sleeps, to observe asynchrony;
    /// - `mock_copy_u32(u32 *dst, const u32 *src, u32 n)`.
    pub fn with_builtins(devices: usize) -> MockBackend {
        let m = MockBackend::new(devices);
        m.register_kernel("mock_fill_u32", |l| {
            let (p, v, n) = (l.u64(0) as *mut u32, l.u32(1), l.u32(2) as usize);
            // SAFETY: mock device memory is host memory; the test passes a
            // live allocation of n words.
            unsafe { std::slice::from_raw_parts_mut(p, n) }.fill(v);
            Ok(())
        });
        m.register_kernel("mock_copy_u32", |l| {
            let (d, s, n) = (l.u64(0) as *mut u32, l.u64(1) as *const u32, l.u32(2) as usize);
            // SAFETY: as above.
            unsafe { std::ptr::copy(s, d, n) };
            Ok(())
        });
        m.register_kernel("mock_fault", |_| {
            Err(LaunchFault::IllegalAddress { address: 0xdead_0000, detail: "mock_fault reads an unmapped address".into() })
        });
        m.register_kernel("mock_sleep", |l| {
            std::thread::sleep(std::time::Duration::from_millis(l.u32(0) as u64));
            Ok(())
        });
        m
    }

    /// Makes kernels named `name` run `f`.
    pub fn register_kernel(&self, name: &str, f: impl Fn(&MockLaunch<'_>) -> Result<(), LaunchFault> + Send + Sync + 'static) {
        lock(&self.kernels).insert(name.to_string(), Arc::new(f));
    }

    /// Bytes currently allocated through this backend.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    fn alloc_raw(&self, size: usize) -> Result<usize, BackendError> {
        let layout = Layout::from_size_align(size.max(1), 256).map_err(|_| BackendError::OutOfMemory(size))?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(BackendError::OutOfMemory(size));
        }
        lock(&self.ranges).insert(p as usize, (size, Some(layout)));
        self.allocated.fetch_add(size as u64, Ordering::Relaxed);
        Ok(p as usize)
    }

    fn free_raw(&self, addr: usize) -> Result<(), BackendError> {
        let (size, layout) = lock(&self.ranges).remove(&addr).ok_or(BackendError::InvalidAddress { addr: addr as u64, len: 0 })?;
        if let Some(l) = layout {
            // SAFETY: allocated by alloc_raw with this layout.
            unsafe { std::alloc::dealloc(addr as *mut u8, l) };
            self.allocated.fetch_sub(size as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    fn host_pieces(&self, addr: u64, len: usize, write: bool) -> Result<Vec<(*mut u8, usize)>, BackendError> {
        host_pieces(&self.ranges, &self.vmm, addr, len, write)
    }
}

fn check_range(ranges: &Mutex<Ranges>, addr: u64, len: usize) -> Result<(), BackendError> {
    {
        let r = lock(ranges);
        let bad = BackendError::InvalidAddress { addr, len };
        let (base, (size, _)) = r.range(..=addr as usize).next_back().ok_or(bad.clone())?;
        if addr as usize - base + len > *size {
            return Err(bad);
        }
        Ok(())
    }
}

/// The host memory behind `len` bytes at device address `addr`: one
/// piece for ordinary allocations, one per mapping crossed for virtual
/// memory (which lives at made-up addresses and is reached only through
/// this translation). Fails unless every byte is allocated, or mapped
/// with the access asked for.
fn host_pieces(
    ranges: &Mutex<Ranges>,
    vmm: &Mutex<MockVmm>,
    addr: u64,
    len: usize,
    write: bool,
) -> Result<Vec<(*mut u8, usize)>, BackendError> {
    {
        if len == 0 {
            return Ok(Vec::new());
        }
        if check_range(ranges, addr, len).is_ok() {
            return Ok(vec![(addr as *mut u8, len)]);
        }
        let bad = BackendError::InvalidAddress { addr, len };
        let v = lock(vmm);
        let need = if write { VmmAccess::ReadWrite } else { VmmAccess::Read };
        let mut pieces = Vec::new();
        let (mut cur, end) = (addr, addr.checked_add(len as u64).ok_or(bad.clone())?);
        while cur < end {
            let (&base, m) = v.maps.range(..=cur).next_back().ok_or(bad.clone())?;
            if cur - base >= m.size as u64 || m.access < need {
                return Err(bad);
            }
            let (ptr, _) = v.phys.get(&m.mem).map(|p| (p.ptr, p.size)).ok_or(bad.clone())?;
            let n = ((base + m.size as u64).min(end) - cur) as usize;
            pieces.push(((ptr + m.offset + (cur - base) as usize) as *mut u8, n));
            cur += n as u64;
        }
        Ok(pieces)
    }
}

/// The mock's virtual memory granularity (NVIDIA GPUs report 2 MiB).
pub const MOCK_VMM_GRANULARITY: usize = 2 << 20;

/// Where the mock's virtual memory reservations start: far above the heap
/// and below the mmap area of a 47-bit address space, so made-up addresses
/// never meet real ones.
const MOCK_VMM_BASE: u64 = 0x3000_0000_0000;

#[derive(Default)]
struct MockVmm {
    next_addr: u64,
    next_mem: u64,
    reservations: BTreeMap<u64, usize>,
    phys: HashMap<u64, MockPhys>,
    maps: BTreeMap<u64, MockMap>,
}

struct MockPhys {
    ptr: usize,
    size: usize,
    layout: Layout,
}

struct MockMap {
    size: usize,
    mem: u64,
    offset: usize,
    access: VmmAccess,
}

impl Drop for MockBackend {
    fn drop(&mut self) {
        for (_, p) in std::mem::take(&mut lock(&self.vmm).phys) {
            // SAFETY: allocated by vmm_create with this layout.
            unsafe { std::alloc::dealloc(p.ptr as *mut u8, p.layout) };
        }
        let ranges = std::mem::take(&mut *lock(&self.ranges));
        for (addr, (_, layout)) in ranges {
            if let Some(l) = layout {
                // SAFETY: allocated by alloc_raw with this layout.
                unsafe { std::alloc::dealloc(addr as *mut u8, l) };
            }
        }
    }
}

impl Backend for MockBackend {
    fn name(&self) -> &str {
        "mock"
    }

    fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn device_props(&self, device: usize) -> DeviceProps {
        self.devices.get(device).cloned().unwrap_or_else(|| DeviceProps::host_cpu(device as u32))
    }

    fn mem_info(&self, device: usize) -> (u64, u64) {
        let total = self.device_props(device).total_mem;
        (total.saturating_sub(self.allocated_bytes()), total)
    }

    fn alloc(&self, _device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.alloc_raw(size).map(|p| p as u64)
    }

    fn can_access_peer(&self, device: usize, peer: usize) -> bool {
        device != peer
    }

    fn enable_peer_access(&self, device: usize, peer: usize) -> Result<(), BackendError> {
        lock(&self.peer_log).push((true, device, peer));
        Ok(())
    }

    fn disable_peer_access(&self, device: usize, peer: usize) -> Result<(), BackendError> {
        lock(&self.peer_log).push((false, device, peer));
        Ok(())
    }

    fn free(&self, _device: usize, ptr: DevicePtr) -> Result<(), BackendError> {
        self.free_raw(ptr as usize)
    }

    fn alloc_host(&self, size: usize, _flags: u32) -> Result<HostAllocation, BackendError> {
        let p = self.alloc_raw(size)?;
        Ok(HostAllocation { host: p, device: p as u64 })
    }

    fn free_host(&self, host: HostAddr) -> Result<(), BackendError> {
        self.free_raw(host)
    }

    fn register_host(&self, host: HostAddr, size: usize, _flags: u32) -> Result<DevicePtr, BackendError> {
        lock(&self.ranges).insert(host, (size, None));
        Ok(host as u64)
    }

    fn unregister_host(&self, host: HostAddr) -> Result<(), BackendError> {
        self.free_raw(host)
    }

    fn alloc_managed(&self, _device: usize, size: usize) -> Result<DevicePtr, BackendError> {
        self.alloc_raw(size).map(|p| p as u64)
    }

    fn free_managed(&self, ptr: DevicePtr) -> Result<(), BackendError> {
        self.free_raw(ptr as usize)
    }

    fn copy_htod(&self, dst: DevicePtr, src: &[u8]) -> Result<(), BackendError> {
        let mut at = 0;
        for (p, n) in self.host_pieces(dst, src.len(), true)? {
            // SAFETY: checked to lie in a live mock allocation or mapping.
            unsafe { std::ptr::copy(src.as_ptr().add(at), p, n) };
            at += n;
        }
        Ok(())
    }

    fn copy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<(), BackendError> {
        let mut at = 0;
        for (p, n) in self.host_pieces(src, dst.len(), false)? {
            // SAFETY: as above.
            unsafe { std::ptr::copy(p, dst.as_mut_ptr().add(at), n) };
            at += n;
        }
        Ok(())
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        let d = self.host_pieces(dst, len, true)?;
        let s = self.host_pieces(src, len, false)?;
        if let ([(d, _)], [(s, _)]) = (d.as_slice(), s.as_slice()) {
            // SAFETY: as above; may overlap.
            unsafe { std::ptr::copy(*s, *d, len) };
            return Ok(());
        }
        let mut staged = vec![0u8; len];
        self.copy_dtoh(&mut staged, src)?;
        self.copy_htod(dst, &staged)
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        let n = count * value.element_size();
        for (p, n) in self.host_pieces(dst, n, true)? {
            // SAFETY: as above; pieces split at mapping boundaries, which
            // are multiples of every element size.
            value.fill(unsafe { std::slice::from_raw_parts_mut(p, n) });
        }
        Ok(())
    }

    fn create_queue(&self, device: usize, _priority: i32) -> Result<Option<Arc<dyn BackendQueue>>, BackendError> {
        let id = self.queues.fetch_add(1, Ordering::Relaxed);
        Ok(Some(Arc::new(MockQueue {
            id,
            device,
            ranges: self.ranges.clone(),
            vmm: self.vmm.clone(),
            pending: Mutex::new(VecDeque::new()),
            fault: Mutex::new(None),
            log: self.queue_log.clone(),
        })))
    }

    fn load_module(&self, _device: usize, ptx: &str, options: &ModuleOptions) -> Result<Arc<dyn BackendModule>, ModuleError> {
        self.loads.fetch_add(1, Ordering::Relaxed);
        let scan = scan_ptx(ptx).map_err(ModuleError::invalid_ptx)?;
        let mut globals = Vec::new();
        for g in scan.globals {
            let address =
                self.alloc_raw(g.size.max(1)).map_err(|e| ModuleError { kind: ModuleErrorKind::OutOfMemory, log: e.to_string() })? as u64;
            globals.push(GlobalDesc { address, ..g });
        }
        let kernels = lock(&self.kernels);
        let impls = scan.kernels.iter().map(|k| kernels.get(&k.name).cloned()).collect();
        Ok(Arc::new(MockModule {
            backend_ranges: self as *const MockBackend as usize,
            kernels: scan
                .kernels
                .into_iter()
                .map(|mut k| {
                    k.binary_version = options.target;
                    k
                })
                .collect(),
            impls,
            globals,
            launches: self.launches.clone(),
        }))
    }

    fn vmm_granularity(&self, _device: usize) -> usize {
        MOCK_VMM_GRANULARITY
    }

    fn vmm_reserve(&self, size: usize, align: usize, hint: DevicePtr) -> Result<DevicePtr, BackendError> {
        let mut v = lock(&self.vmm);
        let free = |v: &MockVmm, a: u64| {
            let end = a + size as u64;
            let before = v.reservations.range(..end).next_back().is_none_or(|(&b, &n)| b + n as u64 <= a);
            a >= MOCK_VMM_BASE && before
        };
        let addr = if hint != 0 && hint.is_multiple_of(align as u64) && free(&v, hint) {
            hint
        } else {
            let a = v.next_addr.next_multiple_of(align as u64);
            v.next_addr = a + size as u64;
            a
        };
        v.reservations.insert(addr, size);
        Ok(addr)
    }

    fn vmm_unreserve(&self, addr: DevicePtr, size: usize) -> Result<(), BackendError> {
        let mut v = lock(&self.vmm);
        match v.reservations.get(&addr) {
            Some(&n) if n == size => {
                v.reservations.remove(&addr);
                Ok(())
            }
            _ => Err(BackendError::InvalidAddress { addr, len: size }),
        }
    }

    fn vmm_create(&self, _device: usize, size: usize) -> Result<u64, BackendError> {
        let layout = Layout::from_size_align(size.max(1), 4096).map_err(|_| BackendError::OutOfMemory(size))?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(BackendError::OutOfMemory(size));
        }
        self.allocated.fetch_add(size as u64, Ordering::Relaxed);
        let mut v = lock(&self.vmm);
        let id = v.next_mem;
        v.next_mem += 1;
        v.phys.insert(id, MockPhys { ptr: p as usize, size, layout });
        Ok(id)
    }

    fn vmm_release(&self, mem: u64) -> Result<(), BackendError> {
        let mut v = lock(&self.vmm);
        if v.maps.values().any(|m| m.mem == mem) {
            return Err(BackendError::Other(format!("mock: physical allocation {mem} released while mapped")));
        }
        let p = v.phys.remove(&mem).ok_or(BackendError::Other(format!("mock: no physical allocation {mem}")))?;
        // SAFETY: allocated by vmm_create with this layout; nothing maps it.
        unsafe { std::alloc::dealloc(p.ptr as *mut u8, p.layout) };
        self.allocated.fetch_sub(p.size as u64, Ordering::Relaxed);
        Ok(())
    }

    fn vmm_map(&self, addr: DevicePtr, size: usize, mem: u64, offset: usize) -> Result<(), BackendError> {
        let mut v = lock(&self.vmm);
        let bad = BackendError::InvalidAddress { addr, len: size };
        let reserved = v.reservations.range(..=addr).next_back().is_some_and(|(&b, &n)| addr + size as u64 <= b + n as u64);
        let overlaps = v.maps.range(..addr + size as u64).next_back().is_some_and(|(&b, m)| b + m.size as u64 > addr);
        let fits = v.phys.get(&mem).is_some_and(|p| offset + size <= p.size);
        if !reserved || overlaps || !fits {
            return Err(bad);
        }
        v.maps.insert(addr, MockMap { size, mem, offset, access: VmmAccess::None });
        Ok(())
    }

    fn vmm_unmap(&self, addr: DevicePtr, size: usize) -> Result<(), BackendError> {
        let mut v = lock(&self.vmm);
        match v.maps.get(&addr) {
            Some(m) if m.size == size => {
                v.maps.remove(&addr);
                Ok(())
            }
            _ => Err(BackendError::InvalidAddress { addr, len: size }),
        }
    }

    fn vmm_set_access(&self, addr: DevicePtr, size: usize, access: VmmAccess) -> Result<(), BackendError> {
        let mut v = lock(&self.vmm);
        let end = addr + size as u64;
        let mut covered = addr;
        for (&b, m) in v.maps.range_mut(addr..end) {
            if b != covered {
                break;
            }
            m.access = access;
            covered = b + m.size as u64;
        }
        if covered != end {
            return Err(BackendError::InvalidAddress { addr, len: size });
        }
        Ok(())
    }
}

struct MockModule {
    // The globals' memory stays with the backend (freed when it drops), so
    // the module only remembers where it came from for debugging.
    #[allow(dead_code)]
    backend_ranges: usize,
    kernels: Vec<KernelDesc>,
    impls: Vec<Option<MockKernel>>,
    globals: Vec<GlobalDesc>,
    launches: Arc<AtomicU64>,
}

impl BackendModule for MockModule {
    fn kernels(&self) -> &[KernelDesc] {
        &self.kernels
    }

    fn globals(&self) -> &[GlobalDesc] {
        &self.globals
    }

    fn info_log(&self) -> String {
        let missing: Vec<&str> = self.kernels.iter().zip(&self.impls).filter(|(_, i)| i.is_none()).map(|(k, _)| k.name.as_str()).collect();
        if missing.is_empty() {
            String::new()
        } else {
            format!("mock backend: no implementation for {}", missing.join(", "))
        }
    }

    fn launch(&self, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        self.launches.fetch_add(1, Ordering::Relaxed);
        let desc = self.kernels.get(kernel).ok_or_else(|| LaunchFault::Failed(format!("no kernel {kernel}")))?;
        let Some(Some(f)) = self.impls.get(kernel) else {
            return Err(LaunchFault::Failed(format!("the mock backend has no implementation of kernel {}", desc.name)));
        };
        f(&MockLaunch {
            desc,
            grid: launch.grid,
            block: launch.block,
            dynamic_shared_bytes: launch.dynamic_shared_bytes,
            params: launch.params,
            cooperative: launch.cooperative,
        })
    }
}

/// One operation a mock queue ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedOp {
    /// The queue's id: queues are numbered from 0 in creation order (each
    /// context's legacy stream, then streams as they are created).
    pub queue: u64,
    /// `htod`, `dtoh`, `dtod`, `memset`, `record`, or `launch <kernel>`.
    pub what: String,
}

/// Work waiting in a mock queue; `true` when an earlier operation of the
/// queue faulted (only event records still run then).
type Deferred = Box<dyn FnOnce(bool) -> Result<(), LaunchFault> + Send>;

/// A queue of the mock backend: see the [module documentation](self).
pub struct MockQueue {
    id: u64,
    device: usize,
    ranges: Arc<Mutex<Ranges>>,
    vmm: Arc<Mutex<MockVmm>>,
    pending: Mutex<VecDeque<(String, Deferred)>>,
    fault: Mutex<Option<LaunchFault>>,
    log: Arc<Mutex<Vec<QueuedOp>>>,
}

/// Host memory pieces as plain addresses, so deferred work is `Send`.
fn addrs(pieces: Vec<(*mut u8, usize)>) -> Vec<(usize, usize)> {
    pieces.into_iter().map(|(p, n)| (p as usize, n)).collect()
}

impl MockQueue {
    /// The queue's id (see [`QueuedOp::queue`]).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The device the queue belongs to.
    pub fn device(&self) -> usize {
        self.device
    }

    fn pieces(&self, addr: u64, len: usize, write: bool) -> Result<Vec<(usize, usize)>, BackendError> {
        host_pieces(&self.ranges, &self.vmm, addr, len, write).map(addrs)
    }

    fn defer(&self, what: impl Into<String>, f: impl FnOnce(bool) -> Result<(), LaunchFault> + Send + 'static) {
        lock(&self.pending).push_back((what.into(), Box::new(f)));
    }
}

/// Copies `src` into the pieces of a destination.
///
/// # Safety
/// The pieces are live memory of the lengths they say, `src` as long as
/// their total.
unsafe fn scatter(src: *const u8, pieces: &[(usize, usize)]) {
    let mut at = 0;
    for &(p, n) in pieces {
        // SAFETY: the caller's contract; may overlap (device to device).
        unsafe { std::ptr::copy(src.add(at), p as *mut u8, n) };
        at += n;
    }
}

/// Copies the pieces of a source into `dst`.
///
/// # Safety
/// As for [`scatter`].
unsafe fn gather(dst: *mut u8, pieces: &[(usize, usize)]) {
    let mut at = 0;
    for &(p, n) in pieces {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy(p as *const u8, dst.add(at), n) };
        at += n;
    }
}

/// The event of a [`MockQueue`]: completes when the queue runs it.
pub struct MockEvent {
    at: Arc<Mutex<Option<std::time::Instant>>>,
}

impl BackendEvent for MockEvent {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn query(&self) -> bool {
        lock(&self.at).is_some()
    }

    fn elapsed_ms(&self, end: &dyn BackendEvent) -> Option<f32> {
        let end = end.as_any().downcast_ref::<MockEvent>()?;
        let (a, b) = ((*lock(&self.at))?, (*lock(&end.at))?);
        let ms = if b >= a { b.duration_since(a).as_secs_f64() * 1e3 } else { -(a.duration_since(b).as_secs_f64() * 1e3) };
        Some(ms as f32)
    }
}

// The deferred operations touch memory the driver keeps alive until the
// queue has run them: device memory is freed only after its stream's
// work, borrowed host sources and destinations are page-locked memory the
// application keeps, owned sources travel with the operation.
impl BackendQueue for MockQueue {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn copy_htod(&self, dst: DevicePtr, src: HostSrc) -> Result<(), BackendError> {
        let d = self.pieces(dst, src.len(), true)?;
        self.defer("htod", move |skip| {
            if !skip {
                // SAFETY: see above.
                unsafe { scatter(src.as_ptr(), &d) };
            }
            Ok(())
        });
        Ok(())
    }

    fn copy_dtoh(&self, dst: HostAddr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        let s = self.pieces(src, len, false)?;
        self.defer("dtoh", move |skip| {
            if !skip {
                // SAFETY: see above.
                unsafe { gather(dst as *mut u8, &s) };
            }
            Ok(())
        });
        Ok(())
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        let d = self.pieces(dst, len, true)?;
        let s = self.pieces(src, len, false)?;
        self.defer("dtod", move |skip| {
            if !skip {
                let mut staged = vec![0u8; len];
                // SAFETY: see above.
                unsafe {
                    gather(staged.as_mut_ptr(), &s);
                    scatter(staged.as_ptr(), &d);
                }
            }
            Ok(())
        });
        Ok(())
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        let d = self.pieces(dst, count * value.element_size(), true)?;
        self.defer("memset", move |skip| {
            if !skip {
                for (p, n) in d {
                    // SAFETY: see above; pieces split at mapping
                    // boundaries, multiples of every element size.
                    value.fill(unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) });
                }
            }
            Ok(())
        });
        Ok(())
    }

    fn launch(&self, module: &Arc<dyn BackendModule>, kernel: usize, launch: &LaunchParams<'_>) -> Result<(), LaunchFault> {
        let name = module.kernels().get(kernel).map_or_else(|| format!("#{kernel}"), |k| k.name.clone());
        let (module, params) = (module.clone(), launch.params.to_vec());
        let (grid, block, dynamic_shared_bytes, cooperative) = (launch.grid, launch.block, launch.dynamic_shared_bytes, launch.cooperative);
        let (pending_launch_limit, heap_limit, printf_fifo_size) =
            (launch.pending_launch_limit, launch.heap_limit, launch.printf_fifo_size);
        self.defer(format!("launch {name}"), move |skip| {
            if skip {
                return Ok(());
            }
            let launch = LaunchParams {
                grid,
                block,
                dynamic_shared_bytes,
                params: &params,
                cooperative,
                pending_launch_limit,
                heap_limit,
                printf_fifo_size,
            };
            module.launch(kernel, &launch)
        });
        Ok(())
    }

    fn record(&self) -> Result<Arc<dyn BackendEvent>, BackendError> {
        let ev = Arc::new(MockEvent { at: Arc::new(Mutex::new(None)) });
        let e2 = ev.clone();
        self.defer("record", move |_| {
            *lock(&e2.at) = Some(std::time::Instant::now());
            Ok(())
        });
        Ok(ev)
    }

    fn waits_on_device(&self) -> bool {
        true
    }

    /// A `wait` operation: when the queue runs it, it blocks until the
    /// other queue has run the record (at most 10 s, then a deadlock fault).
    fn wait_event(&self, event: &dyn BackendEvent) -> Result<bool, BackendError> {
        let Some(event) = event.as_any().downcast_ref::<MockEvent>() else { return Ok(false) };
        let at = event.at.clone();
        self.defer("wait", move |_| {
            let start = std::time::Instant::now();
            while lock(&at).is_none() {
                if start.elapsed() > std::time::Duration::from_secs(10) {
                    return Err(LaunchFault::Deadlock("a mock queue waited 10 s for an event".into()));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Ok(())
        });
        Ok(true)
    }

    fn query(&self) -> bool {
        lock(&self.pending).is_empty()
    }

    fn synchronize(&self) -> Result<(), LaunchFault> {
        loop {
            let Some((what, op)) = lock(&self.pending).pop_front() else { break };
            let skip = lock(&self.fault).is_some();
            if !skip || what == "record" {
                lock(&self.log).push(QueuedOp { queue: self.id, what });
            }
            if let Err(f) = op(skip) {
                lock(&self.fault).get_or_insert(f);
            }
        }
        match lock(&self.fault).take() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }
}

/// What [`scan_ptx`] finds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtxScan {
    pub kernels: Vec<KernelDesc>,
    /// Addresses are 0 (the backend assigns them).
    pub globals: Vec<GlobalDesc>,
}

fn type_size(t: &str) -> Option<u32> {
    Some(match t {
        ".b8" | ".u8" | ".s8" | ".pred" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn tokenize(src: &str) -> Vec<String> {
    let mut toks = Vec::new();
    let mut cur = String::new();
    for c in src.chars() {
        if c.is_whitespace() || "(){},;[]=".contains(c) {
            if !cur.is_empty() {
                toks.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                toks.push(c.to_string());
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        toks.push(cur);
    }
    toks
}

/// A declaration's (name, total size, alignment) from tokens such as
/// `.align 4 .b8 name [ 16 ]`, up to `;`, `,`, `)` or `=`.
fn declaration(toks: &[String], i: &mut usize) -> Option<(String, u32, u32)> {
    let mut elem = None;
    let mut align = None;
    let mut name = None;
    let mut count = 1u32;
    while let Some(t) = toks.get(*i) {
        match t.as_str() {
            ";" | "," | ")" | "=" | "{" => break,
            ".align" => {
                *i += 1;
                align = toks.get(*i).and_then(|a| a.parse().ok());
            }
            "[" => {
                *i += 1;
                let n: u32 = toks.get(*i).and_then(|a| a.parse().ok()).unwrap_or(0);
                count = count.saturating_mul(n);
                while toks.get(*i).is_some_and(|t| t != "]") {
                    *i += 1;
                }
            }
            t if type_size(t).is_some() => elem = type_size(t),
            t if !t.starts_with('.') => name = Some(t.to_string()),
            _ => {}
        }
        *i += 1;
    }
    let e = elem?;
    Some((name?, e.saturating_mul(count), align.unwrap_or(e)))
}

fn dims(toks: &[String], i: &mut usize) -> [u32; 3] {
    let mut d = [1u32; 3];
    let mut k = 0;
    while k < 3 {
        match toks.get(*i + 1).and_then(|t| t.parse().ok()) {
            Some(v) => {
                d[k] = v;
                k += 1;
                *i += 1;
                if toks.get(*i + 1).map(String::as_str) == Some(",") {
                    *i += 1;
                } else {
                    break;
                }
            }
            None => break,
        }
    }
    d
}

/// Finds kernels and module variables in PTX text (see the module docs).
pub fn scan_ptx(ptx: &str) -> Result<PtxScan, String> {
    let toks = tokenize(&strip_comments(ptx));
    if !toks.iter().any(|t| t == ".version") {
        return Err("not PTX: no .version directive".into());
    }
    let mut scan = PtxScan::default();
    let mut ptx_version = 0;
    let mut target = 0;
    let mut depth = 0usize;
    let mut current: Option<usize> = None;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    current = None;
                }
            }
            ".version" => {
                if let Some((a, b)) = toks.get(i + 1).and_then(|v| v.split_once('.')) {
                    ptx_version = a.parse::<u32>().unwrap_or(0) * 10 + b.parse::<u32>().unwrap_or(0);
                }
            }
            ".target" => {
                target = toks.get(i + 1).and_then(|v| v.trim_start_matches("sm_").trim_end_matches(['a', 'f']).parse().ok()).unwrap_or(0);
            }
            ".entry" if depth == 0 => {
                let name = toks.get(i + 1).cloned().ok_or("entry without a name")?;
                let mut k = KernelDesc::simple(&name);
                k.ptx_version = ptx_version;
                k.binary_version = target;
                i += 2;
                if toks.get(i).map(String::as_str) == Some("(") {
                    i += 1;
                    let mut offset = 0u32;
                    while i < toks.len() && toks[i] != ")" {
                        if toks[i] == ".param" {
                            i += 1;
                            let (_, size, align) = declaration(&toks, &mut i).ok_or_else(|| format!("bad parameter of {name}"))?;
                            let align = align.max(1);
                            offset = offset.next_multiple_of(align);
                            k.params.push(ParamDesc { offset, size, align });
                            offset += size;
                        } else {
                            i += 1;
                        }
                    }
                    k.param_bytes = offset;
                }
                // Performance directives up to the body.
                while i < toks.len() && toks[i] != "{" && toks[i] != ";" {
                    match toks[i].as_str() {
                        ".reqntid" => k.reqntid = Some(dims(&toks, &mut i)),
                        ".maxntid" => k.maxntid = Some(dims(&toks, &mut i)),
                        ".minnctapersm" => {
                            k.min_blocks_per_sm = toks.get(i + 1).and_then(|v| v.parse().ok());
                        }
                        _ => {}
                    }
                    i += 1;
                }
                scan.kernels.push(k);
                current = Some(scan.kernels.len() - 1);
                continue;
            }
            ".shared" if depth > 0 => {
                if let (Some(c), Some(prev)) = (current, i.checked_sub(1).and_then(|p| toks.get(p))) {
                    if prev != ".extern" {
                        let mut j = i + 1;
                        if let Some((_, size, align)) = declaration(&toks, &mut j) {
                            let k = &mut scan.kernels[c];
                            k.static_shared_bytes = k.static_shared_bytes.next_multiple_of(align.max(1)) + size;
                        }
                    }
                }
            }
            ".global" | ".const" if depth == 0 => {
                let prev = i.checked_sub(1).and_then(|p| toks.get(p)).map(String::as_str);
                if prev != Some(".extern") {
                    let managed = toks[i + 1..].iter().take(6).any(|t| t.contains(".managed"));
                    let mut j = i + 1;
                    if toks.get(j).map(String::as_str) == Some(".attribute") {
                        while j < toks.len() && toks[j] != ")" {
                            j += 1;
                        }
                        j += 1;
                    }
                    if let Some((name, size, _)) = declaration(&toks, &mut j) {
                        scan.globals.push(GlobalDesc { name, address: 0, size: size as usize, constant: t == ".const", managed });
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
//
// Generated by NVIDIA NVVM Compiler
.version 8.6
.target sm_86
.address_size 64
.global .align 4 .u32 counter;
.global .align 8 .b8 table[64];
.const .align 4 .f32 coeffs[4] = {1.0, 2.0, 3.0, 4.0};
.global .attribute(.managed) .align 4 .u32 flag;

.visible .entry _Z3addPfS_i(
    .param .u64 _Z3addPfS_i_param_0,
    .param .u64 _Z3addPfS_i_param_1,
    .param .u32 _Z3addPfS_i_param_2
)
.reqntid 128, 1, 1
{
    .shared .align 4 .b8 buf[1024];
    .extern .shared .align 16 .b8 dyn[];
    ret;
}
.visible .entry k2(.param .align 16 .b8 k2_param_0[24], .param .u8 p1)
.maxntid 256
{ ret; }
"#;

    #[test]
    fn scans_kernels_and_globals() {
        let s = scan_ptx(PTX).unwrap_or_default();
        assert_eq!(s.kernels.len(), 2);
        let a = &s.kernels[0];
        assert_eq!(a.name, "_Z3addPfS_i");
        assert_eq!(a.params.iter().map(|p| (p.offset, p.size)).collect::<Vec<_>>(), vec![(0, 8), (8, 8), (16, 4)]);
        assert_eq!(a.param_bytes, 20);
        assert_eq!(a.reqntid, Some([128, 1, 1]));
        assert_eq!(a.static_shared_bytes, 1024);
        assert_eq!(a.ptx_version, 86);
        let b = &s.kernels[1];
        assert_eq!(b.params.iter().map(|p| (p.offset, p.size, p.align)).collect::<Vec<_>>(), vec![(0, 24, 16), (24, 1, 1)]);
        assert_eq!(b.maxntid, Some([256, 1, 1]));
        let g: Vec<(&str, usize, bool, bool)> = s.globals.iter().map(|g| (g.name.as_str(), g.size, g.constant, g.managed)).collect();
        assert_eq!(
            g,
            vec![("counter", 4, false, false), ("table", 64, false, false), ("coeffs", 16, true, false), ("flag", 4, false, true)]
        );
    }

    #[test]
    fn rejects_non_ptx() {
        assert!(scan_ptx("hello").is_err());
    }
}
