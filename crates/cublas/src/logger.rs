//! cuBLAS's own logger (`cublasLoggerConfigure`, `cublasSetLoggerCallback`,
//! and the `CUBLAS_LOGINFO_DBG`/`CUBLAS_LOGDEST_DBG` environment
//! variables): when on, every API call is reported, one message per call,
//! to stdout, stderr, a file and/or the user's callback.

use std::ffi::{c_char, CString};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::log::Level;

/// `void (*)(const char *msg)`.
pub type Callback = Option<unsafe extern "C" fn(*const c_char)>;

#[derive(Default)]
struct State {
    on: bool,
    stdout: bool,
    stderr: bool,
    file: Option<std::fs::File>,
    callback: Callback,
}

static ACTIVE: AtomicBool = AtomicBool::new(false);

fn state() -> &'static Mutex<State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE.get_or_init(|| {
        // NVIDIA's variables: CUBLAS_LOGINFO_DBG=1 turns logging on,
        // CUBLAS_LOGDEST_DBG names stdout, stderr or a file.
        let mut s = State::default();
        if std::env::var("CUBLAS_LOGINFO_DBG").is_ok_and(|v| v.trim() == "1") {
            s.on = true;
            match std::env::var("CUBLAS_LOGDEST_DBG").ok().as_deref().map(str::trim) {
                Some("stdout") => s.stdout = true,
                Some("stderr") | None | Some("") => s.stderr = true,
                Some(path) => s.file = std::fs::OpenOptions::new().create(true).append(true).open(path).ok(),
            }
        }
        ACTIVE.store(s.on || s.callback.is_some(), Ordering::Relaxed);
        Mutex::new(s)
    })
}

fn lock() -> std::sync::MutexGuard<'static, State> {
    state().lock().unwrap_or_else(|e| e.into_inner())
}

fn refresh(s: &State) {
    ACTIVE.store((s.on && (s.stdout || s.stderr || s.file.is_some())) || s.callback.is_some(), Ordering::Relaxed);
}

/// Whether anything listens (so callers can skip formatting messages).
pub fn active() -> bool {
    let _ = state();
    ACTIVE.load(Ordering::Relaxed)
}

/// `cublasLoggerConfigure`. A file that cannot be opened is an error.
pub fn configure(on: bool, stdout: bool, stderr: bool, file: Option<&str>) -> Result<(), String> {
    let mut s = lock();
    s.on = on;
    s.stdout = stdout;
    s.stderr = stderr;
    s.file = match file {
        Some(p) => {
            Some(std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| format!("cannot open log file {p}: {e}"))?)
        }
        None => None,
    };
    refresh(&s);
    Ok(())
}

pub fn set_callback(cb: Callback) {
    let mut s = lock();
    s.callback = cb;
    refresh(&s);
}

pub fn callback() -> Callback {
    lock().callback
}

/// Sends an API-call message (trace level) or a failure (debug and above)
/// to the configured destinations.
pub fn forward(level: Level, msg: &str) {
    if !active() || level == Level::Off {
        return;
    }
    let (line, cb) = {
        let mut s = lock();
        let line = format!("[cuBLAS] {msg}\n");
        if s.on {
            if s.stdout {
                let _ = std::io::stdout().write_all(line.as_bytes());
            }
            if s.stderr {
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
            if let Some(f) = s.file.as_mut() {
                let _ = f.write_all(line.as_bytes());
            }
        }
        (line, s.callback)
    };
    if let Some(cb) = cb {
        if let Ok(c) = CString::new(line.trim_end()) {
            // SAFETY: the user's callback, called as cuBLAS documents: with
            // a NUL-terminated message valid for the call.
            unsafe { cb(c.as_ptr()) };
        }
    }
}
