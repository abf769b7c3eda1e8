//! Device `printf` on HIP devices. Compiled code appends a record per call
//! (the format, the packed arguments, the `%s` strings) to a buffer of the
//! device (`compiler::cpu_abi::printf_records`), whose address every
//! kernel takes after its parameters; the host decodes the records and
//! writes their text to the process's standard output when it
//! synchronises with the device (a stream or the context), as CUDA
//! prints a kernel's output at synchronisation points. A failed assertion
//! writes its message (to standard error) the same way and flags the
//! buffer: the next synchronisation reports it (`CUDA_ERROR_ASSERT`). A
//! `trap` writes where it happened as a record for the error and flags
//! the buffer too: the next synchronisation fails the launch
//! (`CUDA_ERROR_LAUNCH_FAILED`) instead of the HSA runtime failing the
//! queue, which aborts the process.
//!
//! Only kernels of modules that may print, assert or trap get the
//! buffer (the others get a null address and cost nothing): a launch of
//! one marks the device pending. Emptying the buffer needs every kernel
//! that may still append to it finished: a synchronisation that finds the
//! device pending waits for the whole device, under a lock that such
//! launches take to enqueue (a kernel enqueued meanwhile waits for the
//! drain instead of writing into a buffer being reset).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use compiler::cpu_abi::printf_records as layout;

use driver::backend::LaunchFault;

use crate::api::{self, Hip};

/// Bytes of records a device's buffer holds at most: the buffer's
/// capacity is the context's `cudaLimitPrintfFifoSize` (1 MiB unless the
/// program sets it), capped where the header's `u32` offsets end. Records
/// that do not fit between two synchronisations are dropped, counted, and
/// reported in the log.
pub const MAX_CAPACITY: usize = (u32::MAX as usize) & !7;

/// A device's record buffer: its address and the bytes of records it
/// holds.
#[derive(Clone, Copy)]
struct Buffer {
    address: u64,
    capacity: usize,
}

/// The record buffers of a backend's devices, made at a device's first
/// launch that may print.
pub struct PrintfBuffers {
    hip: Arc<Hip>,
    buffers: Vec<Mutex<Option<Buffer>>>,
    /// Per device, a failed assertion or a trap not reported yet.
    faults: Vec<Mutex<Option<LaunchFault>>>,
    /// Per device, a kernel that may print was launched since the last
    /// drain.
    pending: Vec<AtomicBool>,
    /// Launches read, drains write (see the module notes).
    gate: RwLock<()>,
}

impl PrintfBuffers {
    pub fn new(hip: Arc<Hip>, devices: usize) -> PrintfBuffers {
        PrintfBuffers {
            hip,
            buffers: (0..devices).map(|_| Mutex::new(None)).collect(),
            faults: (0..devices).map(|_| Mutex::new(None)).collect(),
            pending: (0..devices).map(|_| AtomicBool::new(false)).collect(),
            gate: RwLock::new(()),
        }
    }

    /// For the launch of a kernel that may print on device `device` (the
    /// current HIP device) with the context's printf FIFO size `fifo`: the
    /// buffer's address, and the lock to hold while the launch is
    /// enqueued. The device is pending from now on.
    pub fn launching(&self, device: usize, fifo: u64) -> Result<(u64, RwLockReadGuard<'_, ()>), String> {
        let gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let capacity = usize::try_from(fifo).unwrap_or(MAX_CAPACITY).clamp(8, MAX_CAPACITY) & !7;
        let p = self.buffer(device, capacity)?;
        Ok((p, gate))
    }

    /// The device's buffer, made with `capacity` bytes of records at the
    /// first call, for a launch: the device is pending from now on. A
    /// buffer of another capacity is replaced when no launch since the last
    /// drain may use it (the device is not pending: the drain waited for
    /// the device, and launches that may print hold the gate the caller
    /// holds and mark the device pending under the slot's lock); otherwise
    /// it is kept until then.
    fn buffer(&self, device: usize, capacity: usize) -> Result<u64, String> {
        let (Some(slot), Some(pending)) = (self.buffers.get(device), self.pending.get(device)) else {
            return Err(format!("no HIP device {device}"));
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        let busy = pending.swap(true, Ordering::AcqRel);
        match *slot {
            Some(b) if b.capacity == capacity || busy => return Ok(b.address),
            Some(b) => {
                tracing::debug!("device printf: HIP device {device}'s buffer changes from {} to {capacity} bytes", b.capacity);
                // SAFETY: ours, and no kernel that may use it is running.
                unsafe { (self.hip.free)(b.address as *mut c_void) };
                *slot = None;
            }
            None => {}
        }
        let bytes = layout::RECORDS + capacity;
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let e = unsafe { (self.hip.malloc)(&mut p, bytes) };
        self.hip.check(e, "hipMalloc (the printf buffer)")?;
        let mut header = [0u8; layout::RECORDS];
        header[layout::CAPACITY..layout::CAPACITY + 4].copy_from_slice(&(capacity as u32).to_le_bytes());
        // SAFETY: `p` is `bytes` long.
        let e = unsafe { (self.hip.memcpy)(p, header.as_ptr().cast(), header.len(), api::MEMCPY_HOST_TO_DEVICE) };
        if let Err(why) = self.hip.check(e, "hipMemcpy (the printf buffer)") {
            // SAFETY: ours, unused.
            unsafe { (self.hip.free)(p) };
            return Err(why);
        }
        *slot = Some(Buffer { address: p as u64, capacity });
        Ok(p as u64)
    }

    /// Whether device `device` has a failed assertion or a trap to report.
    pub fn fault_pending(&self, device: usize) -> bool {
        self.faults.get(device).is_some_and(|a| a.lock().unwrap_or_else(|e| e.into_inner()).is_some())
    }

    /// Device `device`'s failed assertion or trap, reported once.
    pub fn take_fault(&self, device: usize) -> Result<(), LaunchFault> {
        self.faults.get(device).and_then(|f| f.lock().unwrap_or_else(|e| e.into_inner()).take()).map_or(Ok(()), Err)
    }

    /// Prints device `device`'s records, if it has a buffer and records,
    /// and empties the buffer; a failed assertion or a trap becomes pending
    /// ([`PrintfBuffers::take_fault`]).
    pub fn drain(&self, device: usize) {
        let Some(pending) = self.pending.get(device) else { return };
        if !pending.load(Ordering::Acquire) {
            return;
        }
        let Some(Buffer { address: p, capacity }) = self.buffers.get(device).and_then(|s| *s.lock().unwrap_or_else(|e| e.into_inner()))
        else {
            return;
        };
        let _gate = self.gate.write().unwrap_or_else(|e| e.into_inner());
        // SAFETY: plain calls.
        let e = unsafe {
            let e = (self.hip.set_device)(device as i32);
            if e == api::HIP_SUCCESS {
                (self.hip.device_synchronize)()
            } else {
                e
            }
        };
        if self.hip.check(e, "hipDeviceSynchronize (printf)").is_err() {
            // A fault: the stream's synchronisation reports it.
            return;
        }
        // Every kernel launched so far has finished, and none can start.
        pending.store(false, Ordering::Release);
        let Some([used, dropped, flags]) = self.header(p) else { return };
        if [used, dropped, flags] == [0, 0, 0] {
            return;
        }
        let len = (used as usize).min(capacity);
        let mut records = vec![0u8; len];
        // SAFETY: the buffer holds `capacity` bytes of records.
        let e = unsafe {
            (self.hip.memcpy)(records.as_mut_ptr().cast(), (p as usize + layout::RECORDS) as *const c_void, len, api::MEMCPY_DEVICE_TO_HOST)
        };
        if self.hip.check(e, "hipMemcpy (printf records)").is_err() {
            return;
        }
        let zeros = [0u8; layout::CAPACITY];
        // SAFETY: the header's first words: `USED`, `DROPPED`, `FLAGS`.
        let e = unsafe { (self.hip.memcpy)(p as *mut c_void, zeros.as_ptr().cast(), zeros.len(), api::MEMCPY_HOST_TO_DEVICE) };
        let _ = self.hip.check(e, "hipMemcpy (printf buffer reset)");
        drop(_gate);
        // Records whose reservation did not fit are counted as dropped;
        // the bytes reserved past the capacity are not records.
        let decoded = compiler::printf::decode_records(&records);
        write_c(Stream::Out, &decoded.stdout);
        write_c(Stream::Err, &decoded.stderr);
        let fault = if flags & layout::TRAPPED != 0 {
            let text = String::from_utf8_lossy(&decoded.faults);
            Some(LaunchFault::Trap(if text.is_empty() { "a thread executed trap".into() } else { text.into_owned() }))
        } else if flags & layout::ASSERTED != 0 {
            let text = String::from_utf8_lossy(&decoded.stderr);
            let message = text.lines().find(|l| l.contains("Assertion")).unwrap_or("a device assertion failed").to_string();
            Some(LaunchFault::Assert(message))
        } else {
            None
        };
        if let (Some(fault), Some(slot)) = (fault, self.faults.get(device)) {
            tracing::error!("HIP device {device}: {fault}");
            slot.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(fault);
        }
        if dropped > 0 {
            tracing::warn!(
                "device printf: {dropped} call(s) on HIP device {device} did not fit in the {capacity}-byte printf buffer (cudaLimitPrintfFifoSize) and were dropped"
            );
        }
        if !decoded.whole {
            tracing::error!("device printf: HIP device {device}'s printf buffer holds a malformed record; output after it is lost");
        }
    }

    /// `USED`, `DROPPED` and `FLAGS`.
    fn header(&self, p: u64) -> Option<[u32; 3]> {
        let mut h = [0u8; layout::CAPACITY];
        // SAFETY: the buffer's header.
        let e = unsafe { (self.hip.memcpy)(h.as_mut_ptr().cast(), p as *const c_void, h.len(), api::MEMCPY_DEVICE_TO_HOST) };
        self.hip.check(e, "hipMemcpy (printf buffer header)").ok()?;
        let word = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        Some([word(layout::USED), word(layout::DROPPED), word(layout::FLAGS)])
    }
}

impl Drop for PrintfBuffers {
    fn drop(&mut self) {
        for slot in &self.buffers {
            if let Some(b) = *slot.lock().unwrap_or_else(|e| e.into_inner()) {
                // SAFETY: ours; nothing runs once the backend goes.
                unsafe { (self.hip.free)(b.address as *mut c_void) };
            }
        }
    }
}

extern "C" {
    static mut stdout: *mut libc::FILE;
    static mut stderr: *mut libc::FILE;
}

enum Stream {
    Out,
    Err,
}

/// Writes through C's `stdout` or `stderr`, so that device output keeps
/// its place among the program's own output.
fn write_c(stream: Stream, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    // SAFETY: glibc's streams are valid for the life of the process;
    // fwrite locks them.
    unsafe {
        let file = match stream {
            Stream::Out => std::ptr::addr_of!(stdout).read(),
            Stream::Err => std::ptr::addr_of!(stderr).read(),
        };
        libc::fwrite(bytes.as_ptr().cast(), 1, bytes.len(), file);
        libc::fflush(file);
    }
}
