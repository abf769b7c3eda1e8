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

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
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
    ranges: Mutex<BTreeMap<usize, (usize, Option<Layout>)>>,
    kernels: Mutex<HashMap<String, MockKernel>>,
    allocated: AtomicU64,
    /// Launches run so far.
    pub launches: AtomicU64,
    /// Modules loaded so far.
    pub loads: AtomicU64,
}

impl std::fmt::Debug for MockBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockBackend").field("devices", &self.devices.len()).finish()
    }
}

impl MockBackend {
    /// `devices` devices described as the host CPU.
    pub fn new(devices: usize) -> MockBackend {
        MockBackend {
            devices: (0..devices).map(|d| DeviceProps::host_cpu(d as u32)).collect(),
            ranges: Mutex::new(BTreeMap::new()),
            kernels: Mutex::new(HashMap::new()),
            allocated: AtomicU64::new(0),
            launches: AtomicU64::new(0),
            loads: AtomicU64::new(0),
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

    fn check(&self, addr: u64, len: usize) -> Result<(), BackendError> {
        let r = lock(&self.ranges);
        let bad = BackendError::InvalidAddress { addr, len };
        let (base, (size, _)) = r.range(..=addr as usize).next_back().ok_or(bad.clone())?;
        if addr as usize - base + len > *size {
            return Err(bad);
        }
        Ok(())
    }
}

impl Drop for MockBackend {
    fn drop(&mut self) {
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
        self.check(dst, src.len())?;
        // SAFETY: checked to lie in a live mock allocation.
        unsafe { std::ptr::copy(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }

    fn copy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<(), BackendError> {
        self.check(src, dst.len())?;
        // SAFETY: as above.
        unsafe { std::ptr::copy(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn copy_dtod(&self, dst: DevicePtr, src: DevicePtr, len: usize) -> Result<(), BackendError> {
        self.check(dst, len)?;
        self.check(src, len)?;
        // SAFETY: as above; may overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
        Ok(())
    }

    fn memset(&self, dst: DevicePtr, value: MemsetValue, count: usize) -> Result<(), BackendError> {
        let n = count * value.element_size();
        self.check(dst, n)?;
        // SAFETY: as above.
        value.fill(unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, n) });
        Ok(())
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
            launches: Arc::new(AtomicU64::new(0)),
        }))
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
