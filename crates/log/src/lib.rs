//! The log of anycuda's companion libraries (`libcublas`, `libnvrtc`,
//! the HIP test double), with the driver's settings: `ANYCUDA_LOG=<level>`
//! (off by default: these libraries live inside other people's
//! processes) and `ANYCUDA_LOG_FILE`. Each library is a shared object of
//! its own, so each has its own sink; lines name the library.

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
        // can write the log's directory must not make a library append to
        // another file.
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

/// Writes one line, `[anycuda <library> <level>] <msg>`, to the log file or
/// standard error, if `level` is enabled.
pub fn write(library: &str, level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let line = format!("[anycuda {library} {level:?}] {msg}\n");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        assert_eq!(Level::parse(" Warning "), Level::Warn);
        assert_eq!(Level::parse("1"), Level::Debug);
        assert_eq!(Level::parse("all"), Level::Trace);
        assert_eq!(Level::parse("nonsense"), Level::Off);
        assert!(Level::Error < Level::Trace);
    }
}
