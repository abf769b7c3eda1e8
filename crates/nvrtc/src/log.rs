//! The log of anycuda's NVRTC and nvJitLink, with the driver's settings:
//! `ANYCUDA_LOG=<level>` (off by default: these libraries live inside
//! other people's processes) and `ANYCUDA_LOG_FILE`.

pub use anycuda_log::{enabled, Level};

/// Writes one line to the log.
pub fn log(level: Level, msg: &str) {
    anycuda_log::write("nvrtc", level, msg);
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
