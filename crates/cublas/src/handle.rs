//! `cublasHandle_t`: a context's library state (stream, pointer mode, math
//! mode, workspace), and the entry-point wrapper every function runs in.

use std::collections::HashSet;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::backend::{Backend, Queue};
use crate::cpu::Cpu;
use crate::cuda::{self, driver};
use crate::log::{debug, trace};
use crate::status::{self, Error, Result, Status};
use crate::types::{DType, Scalar};

pub type HandleT = *mut c_void;

pub const POINTER_MODE_HOST: i32 = 0;
pub const POINTER_MODE_DEVICE: i32 = 1;

/// What `cublasSet*` changes.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub stream: usize,
    pub pointer_mode: i32,
    pub math_mode: i32,
    pub atomics_mode: i32,
    pub workspace: (usize, usize),
    pub sm_count_target: i32,
    pub emulation_strategy: i32,
}

/// What every handle of the library begins with. NVIDIA documents that a
/// `cublasHandle_t` may be used as a `cublasLtHandle_t` (PyTorch does so):
/// the cuBLASLt entry points, which live in another shared object with its
/// own handle table, recognise a cuBLAS handle by this header.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub magic: u64,
    pub ctx: usize,
    pub device: i32,
}

/// `Header::magic` of a live cuBLAS handle ("anycBLAS").
pub const BLAS_MAGIC: u64 = 0x5341_4c42_6379_6e61;

#[repr(C)]
pub struct Handle {
    pub magic: u64,
    pub ctx: usize,
    pub device: i32,
    pub settings: Mutex<Settings>,
    pub backend: &'static dyn Backend,
}

impl Handle {
    pub fn settings(&self) -> Settings {
        *self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn update(&self) -> MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The queue of the handle's stream, with the handle's context made
    /// current on this thread if none is.
    pub fn queue(&self) -> Result<Queue> {
        driver()?.ensure_current(self.ctx as cuda::CUcontext)?;
        Ok(Queue { stream: self.settings().stream })
    }

    /// A scalar argument under the handle's pointer mode: a host value read
    /// now, or a device address checked now and read when the work runs.
    ///
    /// # Safety
    /// In host mode `p` must be readable.
    pub unsafe fn scalar(&self, p: *const c_void, dtype: DType, what: &str) -> Result<Scalar> {
        if p.is_null() {
            return Err(Error::invalid(format!("{what} is NULL")));
        }
        if self.settings().pointer_mode == POINTER_MODE_DEVICE {
            check_device(p as u64, dtype.size() as u64, what)?;
            Ok(Scalar::Device { ptr: p as u64, dtype })
        } else {
            // SAFETY: the caller's promise.
            Ok(Scalar::Value(unsafe { dtype.read(p as u64, 0) }))
        }
    }

    pub fn device_mode(&self) -> bool {
        self.settings().pointer_mode == POINTER_MODE_DEVICE
    }
}

/// Fails unless `[ptr, ptr + bytes)` lies in driver memory (device,
/// managed or page-locked host memory): one allocation, or allocations
/// mapped side by side without a gap (virtual memory management: a pool
/// that maps physical chunks one after another into a reservation, as
/// llama.cpp's does, hands out buffers that span several). A kernel on a
/// GPU would fault on anything else, and on the CPU it would bring the
/// process down.
pub fn check_device(ptr: u64, bytes: u64, what: &str) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    if ptr == 0 {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    let end = ptr.checked_add(bytes).ok_or_else(|| Error::invalid(format!("{what} ({bytes} bytes at {ptr:#x}) wraps around")))?;
    let d = driver()?;
    let mut at = ptr;
    loop {
        match d.range(at) {
            Some((start, size)) if at >= start && at - start < size => {
                let stop = start.saturating_add(size);
                if end <= stop {
                    return Ok(());
                }
                // The rest must be the allocation mapped right after it.
                at = stop;
            }
            Some((start, size)) if at == ptr => {
                return Err(Error::invalid(format!("{what} ({bytes} bytes at {ptr:#x}) overruns its {size}-byte allocation at {start:#x}")))
            }
            None if at == ptr => return Err(Error::invalid(format!("{what} at {ptr:#x} is not device memory"))),
            _ => {
                return Err(Error::invalid(format!(
                    "{what} ({bytes} bytes at {ptr:#x}) overruns its allocation: nothing is mapped at {at:#x}"
                )))
            }
        }
    }
}

fn live() -> MutexGuard<'static, HashSet<usize>> {
    static LIVE: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    LIVE.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// The backend for the device: the CPU implementation wherever device
/// memory is host memory the host can address (anycuda's CPU device).
pub fn backend_for(device: i32) -> Result<&'static dyn Backend> {
    let d = driver()?;
    let integrated = d.attribute(cuda::ATTR_INTEGRATED, device)?;
    let pageable = d.attribute(cuda::ATTR_PAGEABLE_MEMORY_ACCESS, device)?;
    if integrated == 1 && pageable == 1 {
        static CPU: Cpu = Cpu;
        return Ok(&CPU);
    }
    Err(Error::not_initialized(format!(
        "device {device} keeps its memory apart from the host (integrated={integrated}, pageable memory access={pageable}); anycuda's cuBLAS computes only on its CPU device so far"
    )))
}

pub fn create() -> Result<HandleT> {
    let d = driver()?;
    let (ctx, device) = d.current_context()?;
    let backend = backend_for(device)?;
    let h = Box::new(Handle {
        magic: BLAS_MAGIC,
        ctx: ctx as usize,
        device,
        settings: Mutex::new(Settings {
            stream: 0,
            pointer_mode: POINTER_MODE_HOST,
            math_mode: 0,
            atomics_mode: 0,
            workspace: (0, 0),
            sm_count_target: 0,
            emulation_strategy: 0,
        }),
        backend,
    });
    let p = Box::into_raw(h);
    live().insert(p as usize);
    debug!("cublasCreate: handle {p:p} on device {device} ({} backend)", backend.name());
    Ok(p.cast())
}

pub fn destroy(h: HandleT) -> Result<()> {
    if !live().remove(&(h as usize)) {
        return Err(Error::not_initialized(format!("{h:p} is not a live cuBLAS handle")));
    }
    // SAFETY: created by `create`, removed from the live set exactly once.
    let mut handle = unsafe { Box::from_raw(h.cast::<Handle>()) };
    handle.magic = 0;
    // Work still queued keeps only copies of what it needs; wait for it
    // so that destroying a handle orders like NVIDIA's (which synchronizes).
    if let Ok(d) = driver() {
        let _ = d.ensure_current(handle.ctx as cuda::CUcontext);
        let _ = d.synchronize(handle.settings().stream as cuda::CUstream);
    }
    Ok(())
}

/// Copies a `T` from `p` without faulting: `None` when the memory is not
/// readable (`process_vm_readv` on this process; where that system call is
/// not allowed, a plain read, which is what NVIDIA's library does with the
/// handles and descriptors it is given).
///
/// # Safety
/// `T` must be plain data (any bytes are a value). Where the system call
/// is refused, `p` must be NULL or readable.
pub unsafe fn read_user<T: Copy>(p: *const T) -> Option<T> {
    if p.is_null() {
        return None;
    }
    let size = std::mem::size_of::<T>();
    let mut out = std::mem::MaybeUninit::<T>::uninit();
    let local = libc::iovec { iov_base: out.as_mut_ptr().cast(), iov_len: size };
    let remote = libc::iovec { iov_base: p as *mut c_void, iov_len: size };
    // SAFETY: the kernel checks the remote range; the local one is `out`.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == size as isize {
        // SAFETY: fully written by the kernel; T is plain data.
        return Some(unsafe { out.assume_init() });
    }
    let err = std::io::Error::last_os_error().raw_os_error();
    if n < 0 && matches!(err, Some(libc::EPERM) | Some(libc::ENOSYS)) {
        // SAFETY: the caller's promise for this case.
        return Some(unsafe { std::ptr::read_unaligned(p) });
    }
    None
}

/// Runs `f` with the live handle `h`.
pub fn with<T>(h: HandleT, f: impl FnOnce(&Handle) -> Result<T>) -> Result<T> {
    if h.is_null() || !live().contains(&(h as usize)) {
        return Err(Error::not_initialized(format!("{h:p} is not a live cuBLAS handle")));
    }
    // SAFETY: live handles point to boxed `Handle`s; the user must not
    // destroy a handle while using it from another thread (cuBLAS's rule).
    f(unsafe { &*h.cast::<Handle>() })
}

/// An entry point's body: catches panics, logs failures, returns the status.
pub fn api(name: &str, f: impl FnOnce() -> Result<()>) -> Status {
    let r = catch_unwind(AssertUnwindSafe(f));
    let status = match r {
        Ok(Ok(())) => status::SUCCESS,
        Ok(Err(e)) => {
            debug!("{name}: {e}");
            e.status
        }
        Err(_) => {
            debug!("{name}: internal error (panic)");
            status::INTERNAL_ERROR
        }
    };
    trace!("{name} -> {}", status::name(status));
    status
}
