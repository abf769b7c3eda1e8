//! The trace log: off by default (this library lives inside other people's
//! processes), enabled with `ANYCUDA_LOG=<level>`.

use std::collections::HashSet;
use std::fmt::Debug;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};

use cuda_types::CUresult;
use driver::Error;

/// Log levels, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off = 0,
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
}

impl Level {
    pub fn parse(s: &str) -> Level {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "info" => Level::Info,
            "debug" | "1" | "on" => Level::Debug,
            "trace" | "all" => Level::Trace,
            _ => Level::Off,
        }
    }
}

struct Sink {
    level: Level,
    file: Option<Mutex<std::fs::File>>,
    /// The descriptor written to (the file's, or stderr's), for a forked
    /// child, where a lock another thread of the parent held stays locked.
    fd: i32,
}

fn sink() -> &'static Sink {
    static SINK: OnceLock<Sink> = OnceLock::new();
    SINK.get_or_init(|| {
        let level = std::env::var("ANYCUDA_LOG").map(|v| Level::parse(&v)).unwrap_or(Level::Off);
        let file = std::env::var_os("ANYCUDA_LOG_FILE")
            .and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok().map(Mutex::new));
        let fd = file.as_ref().map_or(2, |f: &Mutex<std::fs::File>| {
            use std::os::fd::AsRawFd;
            f.lock().map_or(2, |f| f.as_raw_fd())
        });
        Sink { level, file, fd }
    })
}

/// Whether messages of `level` are written.
pub fn enabled(level: Level) -> bool {
    level != Level::Off && level <= sink().level
}

/// Writes one line to the log.
pub fn log(level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let line = format!("[anycuda {:?}] {msg}\n", level);
    if crate::fork::forked() {
        // No locks in a forked child: one write(2) of the whole line.
        // SAFETY: writes the line's bytes to an open descriptor.
        let _ = unsafe { libc::write(sink().fd, line.as_ptr().cast(), line.len()) };
        return;
    }
    match &sink().file {
        Some(f) => {
            let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
            let _ = f.write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }
}

/// Runs an API function's body: catches panics, maps the error, logs.
pub fn call(name: &'static str, args: &[(&str, &dyn Debug)], f: impl FnOnce() -> Result<(), Error>) -> CUresult {
    if let Some(code) = crate::fork::refuse(name) {
        if enabled(Level::Debug) {
            log(Level::Debug, &crate::fork::reason(name));
        }
        return code;
    }
    let r = catch_unwind(AssertUnwindSafe(f));
    let (code, err) = match r {
        Ok(Ok(())) => (CUresult::CUDA_SUCCESS, None),
        Ok(Err(e)) => (crate::errors::code(&e), Some(e.to_string())),
        Err(p) => {
            let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default();
            (CUresult::CUDA_ERROR_UNKNOWN, Some(format!("internal error (panic): {what}")))
        }
    };
    let level = if err.is_some() { Level::Debug } else { Level::Trace };
    if enabled(level) {
        let a: Vec<String> = args.iter().map(|(n, v)| format!("{n}={v:?}")).collect();
        let mut line = format!("{name}({}) -> {code:?}", a.join(", "));
        if let Some(e) = err {
            line.push_str(": ");
            line.push_str(&e);
        }
        log(level, &line);
    }
    code
}

/// The body of every unimplemented export.
pub fn unimplemented(name: &'static str) -> CUresult {
    if let Some(code) = crate::fork::refuse(name) {
        return code;
    }
    static SEEN: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let first = {
        let mut s = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        s.get_or_insert_with(HashSet::new).insert(name)
    };
    if first {
        log(Level::Warn, &format!("{name} is not implemented (CUDA_ERROR_NOT_SUPPORTED)"));
    } else {
        log(Level::Trace, &format!("{name}() -> CUDA_ERROR_NOT_SUPPORTED (unimplemented)"));
    }
    CUresult::CUDA_ERROR_NOT_SUPPORTED
}
