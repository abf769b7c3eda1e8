//! The trace log: off by default (this library lives inside other people's
//! processes), enabled with `ANYCUDA_LOG=<level>`.

use std::collections::HashSet;
use std::fmt::Debug;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use cuda_types::CUresult;
use driver::Error;

pub use anycuda_log::Level;

/// Installs the bridge from `tracing` once, when the log is on.
fn install_bridge() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let level = anycuda_log::level();
        if level != Level::Off {
            // Fails only if the process installed a subscriber of its own.
            let _ = tracing::subscriber::set_global_default(Bridge { level });
        }
    });
}

/// Forwards the `tracing` events of the crates below this one (the JIT,
/// the backends) to this log, at the level `ANYCUDA_LOG` selects. Spans
/// are not kept: events are written as they come, their fields after the
/// message.
struct Bridge {
    level: Level,
}

fn level_of(l: &tracing::Level) -> Level {
    match *l {
        tracing::Level::ERROR => Level::Error,
        tracing::Level::WARN => Level::Warn,
        tracing::Level::INFO => Level::Info,
        tracing::Level::DEBUG => Level::Debug,
        tracing::Level::TRACE => Level::Trace,
    }
}

impl tracing::Subscriber for Bridge {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        // The level is its own: installing the bridge asks this while
        // `install_bridge` runs.
        level_of(metadata.level()) <= self.level
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        use tracing::level_filters::LevelFilter;
        Some(match self.level {
            Level::Off => LevelFilter::OFF,
            Level::Error => LevelFilter::ERROR,
            Level::Warn => LevelFilter::WARN,
            Level::Info => LevelFilter::INFO,
            Level::Debug => LevelFilter::DEBUG,
            Level::Trace => LevelFilter::TRACE,
        })
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = Fields::default();
        event.record(&mut text);
        log(level_of(event.metadata().level()), &format!("{}{}", text.message, text.rest));
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = std::fmt::Write::write_fmt(&mut self.rest, format_args!(" {}={value}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn Debug) {
        if field.name() == "message" {
            let _ = std::fmt::Write::write_fmt(&mut self.message, format_args!("{value:?}"));
        } else {
            let _ = std::fmt::Write::write_fmt(&mut self.rest, format_args!(" {}={value:?}", field.name()));
        }
    }
}

/// Whether messages of `level` are written.
pub fn enabled(level: Level) -> bool {
    install_bridge();
    anycuda_log::enabled(level)
}

/// Writes one line to the log.
pub fn log(level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let line = format!("[anycuda {:?}] {msg}\n", level);
    if crate::fork::forked() {
        // No locks in a forked child.
        anycuda_log::write_line_unlocked(&line);
    } else {
        anycuda_log::write_line(&line);
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
