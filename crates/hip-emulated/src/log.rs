//! The library's log, with the driver's settings: `ANYCUDA_LOG=<level>`
//! (off by default) and `ANYCUDA_LOG_FILE`.

pub use anycuda_log::{enabled, Level};

/// Writes one line to the log.
pub fn log(level: Level, msg: &str) {
    anycuda_log::write("hip-emulated", level, msg);
}

macro_rules! debug {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Debug, &format!($($t)*)) };
}
macro_rules! info {
    ($($t:tt)*) => { $crate::log::log($crate::log::Level::Info, &format!($($t)*)) };
}
macro_rules! trace {
    ($($t:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Trace) {
            $crate::log::log($crate::log::Level::Trace, &format!($($t)*))
        }
    };
}
pub(crate) use {debug, info, trace};
