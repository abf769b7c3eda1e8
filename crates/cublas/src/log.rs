//! The library's log, with the driver's settings: `ANYCUDA_LOG=<level>`
//! (off by default: this library lives inside other people's processes)
//! and `ANYCUDA_LOG_FILE`.

pub use anycuda_log::{enabled, Level};

/// Writes one line to the log (and to the cuBLAS logger, when configured).
pub fn log(level: Level, msg: &str) {
    crate::logger::forward(level, msg);
    anycuda_log::write("cublas", level, msg);
}

macro_rules! debug {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Debug, &format!($($t)*)) };
}
macro_rules! error {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Error, &format!($($t)*)) };
}
macro_rules! trace {
    ($($t:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Trace) || $crate::logger::active() {
            $crate::log::log($crate::log::Level::Trace, &format!($($t)*))
        }
    };
}
pub(crate) use {debug, error, trace};
