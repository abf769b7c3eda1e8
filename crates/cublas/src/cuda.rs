//! The CUDA driver, reached the way any library beside it reaches it: the
//! public driver API of the `libcuda.so.1` the process has loaded (anycuda's
//! own). Nothing here knows the driver's internals.
// Context and stream handles are opaque values handed to the driver.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use crate::status::{Error, Result};

pub type CUresult = c_int;
pub type CUcontext = *mut c_void;
pub type CUstream = *mut c_void;
pub type CUdevice = c_int;
pub type HostFn = unsafe extern "C" fn(*mut c_void);

pub const ATTR_MULTIPROCESSOR_COUNT: c_int = 16;
pub const ATTR_INTEGRATED: c_int = 18;
pub const ATTR_PAGEABLE_MEMORY_ACCESS: c_int = 88;
pub const POINTER_RANGE_START: c_int = 11;
pub const POINTER_RANGE_SIZE: c_int = 12;
pub const MEMORYTYPE_HOST: c_uint = 1;
pub const MEMORYTYPE_DEVICE: c_uint = 2;

/// `CUDA_MEMCPY2D`.
#[repr(C)]
pub struct Memcpy2D {
    pub src_x_in_bytes: usize,
    pub src_y: usize,
    pub src_memory_type: c_uint,
    pub src_host: *const c_void,
    pub src_device: u64,
    pub src_array: *mut c_void,
    pub src_pitch: usize,
    pub dst_x_in_bytes: usize,
    pub dst_y: usize,
    pub dst_memory_type: c_uint,
    pub dst_host: *mut c_void,
    pub dst_device: u64,
    pub dst_array: *mut c_void,
    pub dst_pitch: usize,
    pub width_in_bytes: usize,
    pub height: usize,
}

/// Where an operation wrote: the allocation holding an address, or those
/// holding each of the `count` addresses in a batch's pointer array.
#[derive(Debug, Clone, Copy)]
pub enum Written {
    At(u64),
    Each { array: u64, count: i64 },
}

/// The driver entry points this library uses.
pub struct Driver {
    pub init: unsafe extern "C" fn(c_uint) -> CUresult,
    pub ctx_get_current: unsafe extern "C" fn(*mut CUcontext) -> CUresult,
    pub ctx_set_current: unsafe extern "C" fn(CUcontext) -> CUresult,
    pub ctx_get_device: unsafe extern "C" fn(*mut CUdevice) -> CUresult,
    pub device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
    pub device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CUresult,
    pub primary_ctx_retain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult,
    pub launch_host_func: unsafe extern "C" fn(CUstream, Option<HostFn>, *mut c_void) -> CUresult,
    pub stream_is_capturing: unsafe extern "C" fn(CUstream, *mut c_uint) -> CUresult,
    pub stream_synchronize: unsafe extern "C" fn(CUstream) -> CUresult,
    pub pointer_get_attribute: unsafe extern "C" fn(*mut c_void, c_int, u64) -> CUresult,
    pub memcpy_2d: unsafe extern "C" fn(*const Memcpy2D) -> CUresult,
    pub memcpy_2d_async: unsafe extern "C" fn(*const Memcpy2D, CUstream) -> CUresult,
    pub get_error_name: unsafe extern "C" fn(CUresult, *mut *const std::ffi::c_char) -> CUresult,
    /// anycuda's memory-checker table, when the driver is anycuda's.
    pub checker: Option<Checker>,
}

/// The identifier of anycuda's memory-checker export table (libcuda's
/// `export_tables::CHECKER_TABLE_ID`).
const CHECKER_TABLE_ID: [u8; 16] = [0x3a, 0x5c, 0x0e, 0x91, 0x7d, 0x42, 0x4b, 0x1f, 0xa6, 0x28, 0xc4, 0x53, 0x9e, 0x0b, 0x71, 0xd2];

/// anycuda's memory-checker table: whether initcheck runs, and how to tell
/// it that this library wrote device memory from the host (so that a
/// kernel reading a BLAS result is not reported as reading unwritten
/// memory).
pub struct Checker {
    initcheck: unsafe extern "C" fn() -> c_int,
    host_wrote: unsafe extern "C" fn(u64, u64) -> CUresult,
}

impl Checker {
    /// The table from `cuGetExportTable`, or `None` (another driver).
    ///
    /// # Safety
    /// `get_export_table` is the driver's `cuGetExportTable`.
    unsafe fn open(get_export_table: unsafe extern "C" fn(*mut *const c_void, *const [u8; 16]) -> CUresult) -> Option<Checker> {
        let mut table: *const c_void = std::ptr::null();
        // SAFETY: out-pointer to a local, a 16-byte identifier.
        if unsafe { get_export_table(&mut table, &CHECKER_TABLE_ID) } != 0 || table.is_null() {
            return None;
        }
        let slots = table.cast::<*const c_void>();
        // SAFETY: anycuda's table has three pointer-sized slots: its size,
        // then the two functions of these types.
        unsafe {
            if (*slots as usize) < 3 * std::mem::size_of::<usize>() {
                return None;
            }
            Some(Checker {
                initcheck: std::mem::transmute::<*const c_void, unsafe extern "C" fn() -> c_int>(*slots.add(1)),
                host_wrote: std::mem::transmute::<*const c_void, unsafe extern "C" fn(u64, u64) -> CUresult>(*slots.add(2)),
            })
        }
    }
}

// SAFETY: plain function pointers into the driver, which is thread-safe.
unsafe impl Send for Driver {}
unsafe impl Sync for Driver {}

/// The process's driver, opened on first use.
pub fn driver() -> Result<&'static Driver> {
    static DRIVER: OnceLock<std::result::Result<Driver, String>> = OnceLock::new();
    DRIVER.get_or_init(open).as_ref().map_err(|e| Error::not_initialized(e.clone()))
}

// Each symbol's type is the field it initialises.
#[allow(clippy::missing_transmute_annotations)]
fn open() -> std::result::Result<Driver, String> {
    // SAFETY: dlopen/dlsym with NUL-terminated names; the library stays
    // loaded for the life of the process (never dlclosed).
    unsafe {
        let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        if h.is_null() {
            let e = libc::dlerror();
            let why = if e.is_null() { String::new() } else { CStr::from_ptr(e).to_string_lossy().into_owned() };
            return Err(format!("cannot load the CUDA driver libcuda.so.1: {why}"));
        }
        macro_rules! sym {
            ($name:literal) => {{
                let p = libc::dlsym(h, concat!($name, "\0").as_ptr().cast());
                if p.is_null() {
                    return Err(format!("the CUDA driver does not export {}", $name));
                }
                std::mem::transmute::<*mut c_void, _>(p)
            }};
        }
        Ok(Driver {
            init: sym!("cuInit"),
            ctx_get_current: sym!("cuCtxGetCurrent"),
            ctx_set_current: sym!("cuCtxSetCurrent"),
            ctx_get_device: sym!("cuCtxGetDevice"),
            device_get: sym!("cuDeviceGet"),
            device_get_attribute: sym!("cuDeviceGetAttribute"),
            primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain"),
            launch_host_func: sym!("cuLaunchHostFunc"),
            stream_is_capturing: sym!("cuStreamIsCapturing"),
            stream_synchronize: sym!("cuStreamSynchronize"),
            pointer_get_attribute: sym!("cuPointerGetAttribute"),
            memcpy_2d: sym!("cuMemcpy2D_v2"),
            memcpy_2d_async: sym!("cuMemcpy2DAsync_v2"),
            get_error_name: sym!("cuGetErrorName"),
            checker: Checker::open(sym!("cuGetExportTable")),
        })
    }
}

impl Driver {
    /// The name of a driver error (`CUDA_ERROR_...`).
    pub fn error_name(&self, r: CUresult) -> String {
        let mut p: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static string.
        if unsafe { (self.get_error_name)(r, &mut p) } == 0 && !p.is_null() {
            // SAFETY: NUL-terminated static string from the driver.
            return unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        }
        format!("CUresult {r}")
    }

    /// Fails with `status` when a driver call did.
    pub fn check(&self, r: CUresult, status: crate::status::Status, what: &str) -> Result<()> {
        if r == 0 {
            Ok(())
        } else {
            Err(Error::new(status, format!("{what} failed: {}", self.error_name(r))))
        }
    }

    /// The calling thread's context, making the primary context of device 0
    /// current first when there is none (what the CUDA runtime does on a
    /// thread's first call).
    pub fn current_context(&self) -> Result<(CUcontext, CUdevice)> {
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointers to locals.
        unsafe {
            let r = (self.ctx_get_current)(&mut ctx);
            if r != 0 || ctx.is_null() {
                self.check((self.init)(0), crate::status::NOT_INITIALIZED, "cuInit")?;
                let mut dev: CUdevice = 0;
                self.check((self.device_get)(&mut dev, 0), crate::status::NOT_INITIALIZED, "cuDeviceGet(0)")?;
                self.check((self.primary_ctx_retain)(&mut ctx, dev), crate::status::NOT_INITIALIZED, "cuDevicePrimaryCtxRetain")?;
                self.check((self.ctx_set_current)(ctx), crate::status::NOT_INITIALIZED, "cuCtxSetCurrent")?;
            }
            let mut dev: CUdevice = 0;
            self.check((self.ctx_get_device)(&mut dev), crate::status::NOT_INITIALIZED, "cuCtxGetDevice")?;
            Ok((ctx, dev))
        }
    }

    /// Makes `ctx` current on this thread when no context is.
    pub fn ensure_current(&self, ctx: CUcontext) -> Result<()> {
        let mut cur: CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; `ctx` came from the driver.
        unsafe {
            if (self.ctx_get_current)(&mut cur) != 0 || cur.is_null() {
                self.check((self.ctx_set_current)(ctx), crate::status::NOT_INITIALIZED, "cuCtxSetCurrent")?;
            }
        }
        Ok(())
    }

    pub fn attribute(&self, attr: c_int, dev: CUdevice) -> Result<i32> {
        let mut v: c_int = 0;
        // SAFETY: out-pointer to a local.
        self.check(unsafe { (self.device_get_attribute)(&mut v, attr, dev) }, crate::status::NOT_INITIALIZED, "cuDeviceGetAttribute")?;
        Ok(v)
    }

    /// The allocation holding `ptr`: `(start, size)`, or `None` when the
    /// driver knows no memory there.
    pub fn range(&self, ptr: u64) -> Option<(u64, u64)> {
        let mut start: u64 = 0;
        let mut size: u64 = 0;
        // SAFETY: out-pointers to 8-byte locals, as both attributes need.
        unsafe {
            if (self.pointer_get_attribute)((&mut start as *mut u64).cast(), POINTER_RANGE_START, ptr) != 0 {
                return None;
            }
            if (self.pointer_get_attribute)((&mut size as *mut u64).cast(), POINTER_RANGE_SIZE, ptr) != 0 {
                return None;
            }
        }
        Some((start, size))
    }

    /// Runs `work` on `stream` in stream order.
    pub fn enqueue(&self, stream: CUstream, work: Box<dyn FnOnce() + Send>) -> Result<()> {
        let boxed: Box<Box<dyn FnOnce() + Send>> = Box::new(work);
        let data = Box::into_raw(boxed);
        // SAFETY: `trampoline` takes back the box exactly once; when the
        // launch fails the driver never calls it and the box is freed here.
        let r = unsafe { (self.launch_host_func)(stream, Some(trampoline), data.cast()) };
        if r != 0 {
            // SAFETY: not handed to the driver.
            drop(unsafe { Box::from_raw(data) });
            return self.check(r, crate::status::EXECUTION_FAILED, "cuLaunchHostFunc");
        }
        Ok(())
    }

    /// Runs `work` on `stream` in stream order, also when the stream is
    /// being captured into a CUDA graph, whose every launch runs it again.
    ///
    /// A captured host function is called once per graph launch with the
    /// same argument, for as long as any graph or executable graph holds
    /// it, and nothing says when that ends; so captured work is kept for
    /// the process's life, once per distinct `key` (the operation and all
    /// its arguments): a program that captures the same work again and
    /// again (llama.cpp captures its graph for every token) adds nothing
    /// after the first capture.
    pub fn enqueue_replayable(
        &self,
        stream: CUstream,
        key: impl FnOnce() -> String,
        work: impl Fn() + Send + Sync + 'static,
    ) -> Result<()> {
        let mut status: c_uint = 0;
        // SAFETY: a stream handle the caller gave us; out-pointer to a local.
        let r = unsafe { (self.stream_is_capturing)(stream, &mut status) };
        if r != 0 || status == 0 {
            return self.enqueue(stream, Box::new(work));
        }
        let kept = captured(key(), work);
        // SAFETY: `replay` borrows the kept work, which is never freed.
        let r = unsafe { (self.launch_host_func)(stream, Some(replay), (kept as *const Replayable).cast_mut().cast()) };
        self.check(r, crate::status::EXECUTION_FAILED, "cuLaunchHostFunc")
    }

    /// Tells the memory checker's initcheck, when it runs, that the work
    /// just done wrote `outputs`: each output's whole allocation counts as
    /// written (the BLAS routines write their results' extents; marking the
    /// allocation also covers padding between columns, which can hide an
    /// unwritten read there but never reports a written byte).
    pub fn wrote(&self, outputs: impl FnOnce() -> Vec<Written>) {
        let Some(c) = &self.checker else { return };
        // SAFETY: anycuda's table functions take and return plain values.
        if unsafe { (c.initcheck)() } == 0 {
            return;
        }
        let outputs = outputs();
        let mark = |ptr: u64| {
            if let Some((start, size)) = self.range(ptr) {
                // SAFETY: as above.
                unsafe { (c.host_wrote)(start, size) };
            }
        };
        for o in outputs {
            match o {
                Written::At(ptr) => mark(ptr),
                Written::Each { array, count } => {
                    // The batch's pointer array is in device memory, which
                    // the CPU backend's library reads directly (as the
                    // work that just ran did).
                    for i in 0..count.max(0) as u64 {
                        // SAFETY: the work read the same entries.
                        let p = unsafe { std::ptr::read_unaligned((array + 8 * i) as *const u64) };
                        mark(p);
                    }
                }
            }
        }
    }

    pub fn synchronize(&self, stream: CUstream) -> Result<()> {
        // SAFETY: a stream handle the caller gave us.
        self.check(unsafe { (self.stream_synchronize)(stream) }, crate::status::EXECUTION_FAILED, "cuStreamSynchronize")
    }
}

unsafe extern "C" fn trampoline(data: *mut c_void) {
    // SAFETY: `data` is the box `enqueue` leaked, given back once.
    let work = unsafe { Box::from_raw(data.cast::<Box<dyn FnOnce() + Send>>()) };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_err() {
        crate::log::error!("internal error: a queued BLAS operation panicked; its results were not written");
    }
}

/// Work a graph may run any number of times.
type Replayable = Box<dyn Fn() + Send + Sync>;

/// The captured work for `key`: the first one given for it, kept for the
/// process's life.
fn captured(key: String, work: impl Fn() + Send + Sync + 'static) -> &'static Replayable {
    static KEPT: OnceLock<std::sync::Mutex<std::collections::HashMap<String, &'static Replayable>>> = OnceLock::new();
    let mut kept = KEPT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    kept.entry(key).or_insert_with(|| Box::leak(Box::new(Box::new(work) as Replayable)))
}

unsafe extern "C" fn replay(data: *mut c_void) {
    // SAFETY: `data` is a kept `Replayable`, never freed.
    let work = unsafe { &*data.cast::<Replayable>() };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_err() {
        crate::log::error!("internal error: a queued BLAS operation panicked; its results were not written");
    }
}
