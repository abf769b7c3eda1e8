//! anycuda's log, shared by the driver (`libcuda`) and its companion
//! libraries (`libcublas`, `libnvrtc`, the HIP test double):
//! `ANYCUDA_LOG=<level>` (off by default: these libraries live inside
//! other people's processes) and `ANYCUDA_LOG_FILE`. Each library is a
//! shared object of its own, so each has its own sink; the companion
//! libraries' lines name the library.

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
    /// The descriptor written to (the file's, or standard error's), for
    /// [`write_line_unlocked`].
    fd: i32,
}

fn sink() -> &'static Sink {
    static SINK: OnceLock<Sink> = OnceLock::new();
    SINK.get_or_init(|| {
        let level = std::env::var("ANYCUDA_LOG").map(|v| Level::parse(&v)).unwrap_or(Level::Off);
        // Never through a symbolic link: whoever can write the log's
        // directory must not make a library append to another file.
        let file = std::env::var_os("ANYCUDA_LOG_FILE").and_then(|p| {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new().create(true).append(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(p).ok()
        });
        let fd = file.as_ref().map_or(2, |f| {
            use std::os::fd::AsRawFd;
            f.as_raw_fd()
        });
        Sink { level, file: file.map(Mutex::new), fd }
    })
}

/// The level `ANYCUDA_LOG` selects.
pub fn level() -> Level {
    sink().level
}

/// Whether messages of `level` are written.
pub fn enabled(level: Level) -> bool {
    level != Level::Off && level <= sink().level
}

/// Writes `line` (which ends with a newline) to the log file or standard
/// error.
pub fn write_line(line: &str) {
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

/// [`write_line`] without taking a lock, as one `write(2)`: for a forked
/// child, where a lock another thread of the parent held stays locked.
pub fn write_line_unlocked(line: &str) {
    // SAFETY: writes the line's bytes to a descriptor the sink keeps open.
    let _ = unsafe { libc::write(sink().fd, line.as_ptr().cast(), line.len()) };
}

/// Writes one line, `[anycuda <library> <level>] <msg>`, if `level` is
/// enabled.
pub fn write(library: &str, level: Level, msg: &str) {
    if enabled(level) {
        write_line(&format!("[anycuda {library} {level:?}] {msg}\n"));
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
