//! The AMD ISA emulator, run in-process by an embedded CPython.
//!
//! The emulator and its harness live outside the repository
//! (`ANYCUDA_AMD_EMU`; by default `../shared/tools/amd-emu` beside the
//! repository this crate was built from). `driver.py`, embedded in the
//! library, is how the double drives it: it maps code objects with the
//! harness's loader, installs the handlers the compiled CUDA kernels need
//! (private memory, generic pointers into LDS and private memory, traps)
//! and runs launches work-group by work-group.

use std::ffi::c_char;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};

use crate::device::Arch;
use crate::python::Python;

/// How this library drives the emulator (see the file's own notes).
const DRIVER: &str = include_str!("driver.py");

/// The emulator's directory when `ANYCUDA_AMD_EMU` is not set: the shared
/// tools beside the repository.
const DEFAULT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/tools/amd-emu");

/// One launch as `driver.py`'s `Launch` reads it: 64-bit fields, in order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LaunchRecord {
    pub module: u64,
    pub entry: u64,
    pub kernel_object: u64,
    pub kernarg: u64,
    pub kernarg_size: u64,
    pub grid: [u64; 3],
    pub block: [u64; 3],
    pub group_fixed: u64,
    pub dynamic_lds: u64,
    pub private_stride: u64,
    pub rsrc1: u64,
    pub rsrc2: u64,
    pub properties: u64,
    pub wave64: u64,
    pub dispatch_id: u64,
    /// 1 for a cooperative launch: every work-group's wavefronts run
    /// interleaved, so that groups can wait for each other.
    pub cooperative: u64,
    /// Out: the instructions the wavefronts ran.
    pub steps: u64,
}

/// The emulator's thread: CPython and the emulator run on one thread of
/// their own (the emulator keeps per-thread state, such as its compile
/// cache's database connection), fed by a channel.
pub struct Emulator {
    requests: Mutex<mpsc::Sender<Request>>,
    arch: Arch,
}

/// A call of `driver.<function>(<args>)` and where to answer.
struct Request {
    function: String,
    args: String,
    reply: mpsc::Sender<Result<(), String>>,
}

/// Stack of the emulator's thread: the emulator's compiler recurses deeply.
const STACK_BYTES: usize = 256 << 20;

/// The emulator's directory.
pub fn directory() -> PathBuf {
    match std::env::var_os("ANYCUDA_AMD_EMU") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(DEFAULT_DIR),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Emulator {
    /// Starts the emulator's thread: the interpreter, `driver.py`, the emulator.
    pub fn start(arch: Arch) -> Result<Emulator, String> {
        let dir = directory();
        let dir = dir
            .canonicalize()
            .map_err(|e| format!("the AMD emulator is not at {} ({e}); set ANYCUDA_AMD_EMU to its directory", dir.display()))?;
        if !dir.join("run.py").is_file() {
            return Err(format!("{} has no run.py: not the AMD emulator (ANYCUDA_AMD_EMU)", dir.display()));
        }
        let (requests, inbox) = mpsc::channel::<Request>();
        let (started_tx, started) = mpsc::channel::<Result<(), String>>();
        std::thread::Builder::new()
            .name("anycuda-hip-emulator".into())
            .stack_size(STACK_BYTES)
            .spawn(move || {
                let py = match boot(&dir) {
                    Ok(py) => {
                        let _ = started_tx.send(Ok(()));
                        py
                    }
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        return;
                    }
                };
                for r in inbox {
                    let _ = r.reply.send(call(&py, &r.function, &r.args));
                }
            })
            .map_err(|e| format!("cannot start the emulator's thread: {e}"))?;
        started.recv().map_err(|_| "the emulator's thread ended while starting".to_string())??;
        Ok(Emulator { requests: Mutex::new(requests), arch })
    }

    /// Calls `driver.<function>(<args>)` on the emulator's thread and waits.
    fn call(&self, function: &str, args: String) -> Result<(), String> {
        let (reply, answer) = mpsc::channel();
        let request = Request { function: function.to_string(), args, reply };
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).send(request).map_err(|_| "the emulator's thread has ended".to_string())?;
        answer.recv().map_err(|_| "the emulator's thread has ended".to_string())?
    }

    /// Maps the code object in `path`; returns the image's base address.
    pub fn load(&self, handle: u64, path: &std::path::Path) -> Result<usize, String> {
        let mut base: u64 = 0;
        self.call(
            "load",
            format!(
                "{handle}, bytes.fromhex('{}'), '{}', {:#x}",
                hex(path.as_os_str().as_encoded_bytes()),
                self.arch.emulator_arch(),
                &mut base as *mut u64 as usize
            ),
        )?;
        if base == 0 {
            return Err("the emulator's loader returned no image".into());
        }
        Ok(base as usize)
    }

    pub fn unload(&self, handle: u64) -> Result<(), String> {
        self.call("unload", handle.to_string())
    }

    /// Runs a launch to its end.
    pub fn launch(&self, record: &mut LaunchRecord) -> Result<(), String> {
        self.call("launch", format!("{:#x}", record as *mut LaunchRecord as usize))
    }
}

/// Starts the interpreter on this thread and loads `driver.py` and the emulator.
fn boot(dir: &Path) -> Result<Python, String> {
    let py = Python::start()?;
    // A fresh namespace for the boot code: nothing lands in the
    // interpreter's __main__ (which may be the host program's).
    let boot = format!(
        "import sys, types, ctypes\n\
         m = types.ModuleType('anycuda_hip_emulated')\n\
         m.__file__ = 'anycuda-hip-emulated/driver.py'\n\
         exec(compile(ctypes.string_at({:#x}, {}).decode(), m.__file__, 'exec'), m.__dict__)\n\
         sys.modules['anycuda_hip_emulated'] = m\n",
        DRIVER.as_ptr() as usize,
        DRIVER.len()
    );
    let code = format!(
        "exec(__import__('ctypes').string_at({:#x}, {}).decode(), {{'__name__': '__anycuda_hip_emulated_boot__'}})",
        boot.as_ptr() as usize,
        boot.len()
    );
    if !py.run(&code) {
        return Err("the embedded Python could not load the emulator driver (traceback on stderr)".into());
    }
    call(&py, "init", &format!("bytes.fromhex('{}').decode()", hex(dir.as_os_str().as_encoded_bytes())))?;
    Ok(py)
}

/// Runs `driver.guarded(..., function, args)`; its exception becomes the error.
fn call(py: &Python, function: &str, args: &str) -> Result<(), String> {
    let mut status: i32 = -1;
    let mut message = [0 as c_char; 2048];
    let code = format!(
        "__import__('anycuda_hip_emulated').guarded({:#x}, {:#x}, {}, '{function}', {args})",
        &mut status as *mut i32 as usize,
        message.as_mut_ptr() as usize,
        message.len()
    );
    let ran = py.run(&code);
    let _ = std::io::stderr().flush();
    match (ran, status) {
        (true, 0) => Ok(()),
        (_, 1) => {
            // SAFETY: the driver wrote a NUL-terminated message into the buffer.
            let text = unsafe { std::ffi::CStr::from_ptr(message.as_ptr()) };
            Err(text.to_string_lossy().into_owned())
        }
        _ => Err(format!("the embedded Python failed to call {function} (traceback on stderr)")),
    }
}
