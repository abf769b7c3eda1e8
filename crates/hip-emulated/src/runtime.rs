//! The runtime's state: the devices, memory, modules and kernels, streams,
//! events, peer access, each thread's current device and last error, and
//! the emulator (started by the first module load).
//!
//! Devices: one by default; `ANYCUDA_HIP_EMULATED_DEVICES` (1 to 8) asks
//! for more, all of the same processor. Their memory is one host address
//! space, so a kernel could reach every device's memory; the double checks
//! what a real runtime enforces with page tables at the places it can see
//! (a launch's arguments, see `api::hipModuleLaunchKernel`).

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use crate::code_object::{CodeObject, Descriptor, KernelMeta, Reloc};
use crate::device::Arch;
use crate::emulator::Emulator;
use crate::error::{self, fail, HipError, Result};
use crate::log::{self, debug, trace};
use crate::memory::Memory;

/// Private memory per work-item for kernels whose stack the compiler could
/// not bound (`USES_DYNAMIC_STACK`: recursion, indirect calls): the larger
/// of this and the kernel's fixed private segment size.
pub const DYNAMIC_STACK_BYTES: u64 = 8 << 10;

/// A loaded code object.
pub struct Module {
    /// The device current when it was loaded: its kernels run there.
    pub device: i32,
    pub base: usize,
    /// Bytes of the image from `base` (the highest section end).
    pub extent: usize,
    pub symbols: HashMap<String, (u64, u64)>,
    pub kernels: Vec<KernelMeta>,
}

/// A kernel of a loaded module.
pub struct Function {
    pub module: u64,
    pub meta: KernelMeta,
    pub desc: Descriptor,
    /// Address of the kernel descriptor and of the first instruction.
    pub kd: usize,
    pub entry: usize,
}

pub struct Stream {
    /// The device current when it was created.
    pub device: i32,
    pub flags: u32,
    pub priority: i32,
}

pub struct Event {
    pub flags: u32,
    pub recorded: Option<Instant>,
}

#[derive(Default)]
pub struct Objects {
    next: u64,
    pub modules: HashMap<u64, Arc<Module>>,
    pub functions: HashMap<u64, Arc<Function>>,
    pub streams: HashMap<u64, Stream>,
    pub events: HashMap<u64, Event>,
    /// Peer access enabled: (device, peer) for `hipDeviceEnablePeerAccess(peer)`
    /// called on `device`.
    pub peers: std::collections::HashSet<(i32, i32)>,
    /// Every operation enqueued, with its stream (see
    /// `api::anycuda_hip_emulated_trace`).
    pub trace: Vec<(u64, u64)>,
}

impl Objects {
    /// A fresh handle value: never 0, never reused, far from the special
    /// stream values (`hipStreamPerThread` is 2).
    pub fn handle(&mut self) -> u64 {
        self.next += 1;
        0x1000 + self.next * 0x10
    }
}

pub struct Runtime {
    /// The devices' processor, or why there is none (`hipErrorNoDevice`).
    pub arch: std::result::Result<Arch, String>,
    /// How many devices (at least 1 when `arch` is `Ok`).
    pub devices: i32,
    pub memory: Mutex<Memory>,
    pub objects: Mutex<Objects>,
    emulator: Mutex<Option<std::result::Result<Emulator, String>>>,
    dispatch_id: AtomicU64,
}

pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        let (arch, devices) = match (Arch::from_env(), device_count_from_env()) {
            (Ok(a), Ok(n)) => (Ok(a), n),
            (Err(e), _) | (_, Err(e)) => (Err(e), 0),
        };
        if let Err(e) = &arch {
            log::log(log::Level::Warn, &format!("no device: {e}"));
        }
        Runtime {
            arch,
            devices,
            memory: Mutex::new(Memory::default()),
            objects: Mutex::new(Objects::default()),
            emulator: Mutex::new(None),
            dispatch_id: AtomicU64::new(1),
        }
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Runtime {
    pub fn arch(&self) -> Result<Arch> {
        match &self.arch {
            Ok(a) => Ok(*a),
            Err(e) => fail!(error::NO_DEVICE, "{e}"),
        }
    }

    /// Checks a device ordinal.
    pub fn device(&self, ordinal: i32) -> Result<Arch> {
        let arch = self.arch()?;
        if !(0..self.devices).contains(&ordinal) {
            fail!(error::INVALID_DEVICE, "device {ordinal}: the emulated runtime has {} device(s)", self.devices);
        }
        Ok(arch)
    }

    pub fn memory(&self) -> MutexGuard<'_, Memory> {
        lock(&self.memory)
    }

    pub fn objects(&self) -> MutexGuard<'_, Objects> {
        lock(&self.objects)
    }

    /// Runs `f` with the emulator, starting it on first use.
    pub fn with_emulator<T>(&self, f: impl FnOnce(&Emulator) -> Result<T>) -> Result<T> {
        let arch = self.arch()?;
        let mut guard = lock(&self.emulator);
        if guard.is_none() {
            let started = Instant::now();
            let e = Emulator::start(arch);
            match &e {
                Ok(_) => log::info!("the AMD emulator started in {:.2?} ({})", started.elapsed(), arch.gcn_arch_name()),
                Err(why) => log::log(log::Level::Error, &format!("the AMD emulator did not start: {why}")),
            }
            *guard = Some(e);
        }
        match guard.as_ref() {
            Some(Ok(emu)) => f(emu),
            Some(Err(why)) => fail!(error::SHARED_OBJECT_INIT_FAILED, "the AMD emulator is not available: {why}"),
            None => fail!(error::SHARED_OBJECT_INIT_FAILED, "the AMD emulator is not available"),
        }
    }

    /// `hipModuleLoadData` after the image was copied: parses, maps,
    /// relocates and registers it.
    pub fn load_module(&self, bytes: Vec<u8>) -> Result<u64> {
        let arch = self.arch()?;
        let code = CodeObject::parse(bytes, arch)?;
        let extent = code.extent;
        let handle = self.objects().handle();
        let mut file = tempfile::Builder::new()
            .prefix("anycuda-hip-emulated-")
            .suffix(".hsaco")
            .tempfile()
            .map_err(|e| HipError::new(error::OPERATING_SYSTEM, format!("cannot create a temporary file: {e}")))?;
        std::io::Write::write_all(&mut file, &code.bytes)
            .map_err(|e| HipError::new(error::OPERATING_SYSTEM, format!("cannot write the code object: {e}")))?;
        let base = self.with_emulator(|emu| {
            emu.load(handle, file.path()).map_err(|why| HipError::new(error::INVALID_IMAGE, format!("the emulator's loader: {why}")))
        })?;
        drop(file);
        let result = (|| {
            // SAFETY: the loader mapped `extent` bytes at `base`; each
            // relocation is checked to lie inside.
            for r in &code.relocations {
                let (offset, value) = match *r {
                    Reloc::Relative { offset, addend } => (offset, (base as u64).wrapping_add_signed(addend)),
                    Reloc::Absolute { offset, value, addend } => (offset, (base as u64).wrapping_add(value).wrapping_add_signed(addend)),
                };
                if offset.saturating_add(8) > extent as u64 {
                    fail!(error::INVALID_IMAGE, "a relocation at {offset:#x} lies outside the image ({extent:#x} bytes)");
                }
                unsafe { ((base + offset as usize) as *mut u64).write_unaligned(value) };
            }
            Ok(())
        })();
        if let Err(e) = result {
            let _ = self.with_emulator(|emu| emu.unload(handle).map_err(|w| HipError::new(error::UNKNOWN, w)));
            return Err(e);
        }
        let module = Module { device: current_device(), base, extent, symbols: code.symbols, kernels: code.kernels };
        debug!("module {handle:#x}: {} kernel(s) mapped at {base:#x} ({extent} bytes)", module.kernels.len());
        self.memory().add_module(base, extent);
        self.objects().modules.insert(handle, Arc::new(module));
        Ok(handle)
    }

    pub fn unload_module(&self, handle: u64) -> Result<()> {
        {
            let mut o = self.objects();
            let Some(m) = o.modules.remove(&handle) else {
                fail!(error::INVALID_HANDLE, "module {handle:#x} is not loaded");
            };
            o.functions.retain(|_, f| f.module != handle);
            drop(o);
            self.memory().remove_module(m.base);
        }
        self.with_emulator(|emu| emu.unload(handle).map_err(|w| HipError::new(error::UNKNOWN, w)))
    }

    /// `hipModuleGetFunction`: the same handle for the same kernel.
    pub fn function(&self, module: u64, name: &str) -> Result<u64> {
        let mut o = self.objects();
        let Some(m) = o.modules.get(&module).cloned() else { fail!(error::INVALID_HANDLE, "module {module:#x} is not loaded") };
        if let Some((&h, _)) = o.functions.iter().find(|(_, f)| f.module == module && f.meta.name == name) {
            return Ok(h);
        }
        let Some(meta) = m.kernels.iter().find(|k| k.name == name) else {
            fail!(error::NOT_FOUND, "module {module:#x} has no kernel `{name}`");
        };
        let Some(&(kd_value, _)) = m.symbols.get(&meta.symbol) else {
            fail!(error::NOT_FOUND, "kernel `{name}` has no descriptor");
        };
        if kd_value as usize + 64 > m.extent {
            fail!(error::INVALID_IMAGE, "kernel `{name}`: descriptor outside the image");
        }
        let kd = m.base + kd_value as usize;
        let mut bytes = [0u8; 64];
        // SAFETY: 64 bytes inside the mapped image.
        unsafe { std::ptr::copy_nonoverlapping(kd as *const u8, bytes.as_mut_ptr(), 64) };
        let desc = Descriptor::parse(&bytes);
        let entry = (kd as i64).wrapping_add(desc.entry_offset) as usize;
        if entry < m.base || entry >= m.base + m.extent {
            fail!(error::INVALID_IMAGE, "kernel `{name}`: code entry outside the image");
        }
        let f = Function { module, meta: meta.clone(), desc, kd, entry };
        let h = o.handle();
        o.functions.insert(h, Arc::new(f));
        Ok(h)
    }

    pub fn next_dispatch_id(&self) -> u64 {
        self.dispatch_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// The most devices `ANYCUDA_HIP_EMULATED_DEVICES` may ask for.
pub const MAX_DEVICES: i32 = 8;

/// `ANYCUDA_HIP_EMULATED_DEVICES`: 1 when unset.
fn device_count_from_env() -> std::result::Result<i32, String> {
    match std::env::var("ANYCUDA_HIP_EMULATED_DEVICES") {
        Err(_) => Ok(1),
        Ok(v) => match v.trim().parse::<i32>() {
            Ok(n) if (1..=MAX_DEVICES).contains(&n) => Ok(n),
            _ => Err(format!("ANYCUDA_HIP_EMULATED_DEVICES={v}: the double emulates 1 to {MAX_DEVICES} devices")),
        },
    }
}

thread_local! {
    static LAST_ERROR: Cell<i32> = const { Cell::new(error::SUCCESS) };
    static CURRENT: Cell<i32> = const { Cell::new(0) };
}

/// The calling thread's current device (`hipSetDevice`; 0 at first).
pub fn current_device() -> i32 {
    CURRENT.with(Cell::get)
}

pub fn set_current_device(ordinal: i32) {
    CURRENT.with(|c| c.set(ordinal));
}

/// `hipGetLastError` (resets) and `hipPeekAtLastError`: the last error an
/// API call of this thread returned (ROCm 6 keeps it across later successes).
pub fn last_error(reset: bool) -> i32 {
    LAST_ERROR.with(|e| if reset { e.replace(error::SUCCESS) } else { e.get() })
}

/// Runs an API function's body: catches panics, records and logs errors.
pub fn call(name: &'static str, f: impl FnOnce() -> Result<()>) -> i32 {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            trace!("{name} -> hipSuccess");
            return error::SUCCESS;
        }
        Ok(Err(e)) => {
            debug!("{name} -> {}: {}", error::name(e.code).to_string_lossy(), e.why);
            e.code
        }
        Err(p) => {
            let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default();
            log::log(log::Level::Error, &format!("{name}: internal error (panic): {what}"));
            error::UNKNOWN
        }
    };
    LAST_ERROR.with(|e| e.set(code));
    code
}
