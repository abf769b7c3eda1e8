//! The log of anycuda's NVRTC and nvJitLink, with the driver's settings:
//! `ANYCUDA_LOG=<level>` (off by default: these libraries live inside
//! other people's processes) and `ANYCUDA_LOG_FILE`.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

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
}

fn sink() -> &'static Sink {
    static SINK: OnceLock<Sink> = OnceLock::new();
    SINK.get_or_init(|| {
        let level = std::env::var("ANYCUDA_LOG").map(|v| Level::parse(&v)).unwrap_or(Level::Off);
        // Never through a symbolic link, as the driver opens it: whoever
        // can write the log's directory must not make this library append
        // to another file.
        let file = std::env::var_os("ANYCUDA_LOG_FILE").and_then(|p| {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(p)
                .ok()
                .map(Mutex::new)
        });
        Sink { level, file }
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
    let line = format!("[anycuda nvrtc {level:?}] {msg}\n");
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

macro_rules! debug {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Debug, &format!($($t)*)) };
}
macro_rules! error {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Error, &format!($($t)*)) };
}
macro_rules! trace {
    ($($t:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Trace) {
            $crate::log::log($crate::log::Level::Trace, &format!($($t)*))
        }
    };
}
pub(crate) use {debug, error, trace};
