//! Logging and progress, over the host's `log` and `progress` imports.
//!
//! Airlock writes every message to its own log, and forwards it to the client
//! (`notifications/message`) when the client asked for that level on this
//! request. Outside WebAssembly (unit tests on the build machine) messages
//! go to stderr instead.
//!
//! ```no_run
//! use airlock_guest::log;
//!
//! log::info("fetching the work item");
//! log::warn(format!("retrying after {} ms", 250));
//! ```

pub use crate::bindings::host::LogLevel as Level;

/// Logs `message` at `level`.
pub fn log(level: Level, message: impl AsRef<str>) {
    imp::log(level, message.as_ref());
}

/// Logs at `debug` level.
pub fn debug(message: impl AsRef<str>) {
    log(Level::Debug, message);
}

/// Logs at `info` level.
pub fn info(message: impl AsRef<str>) {
    log(Level::Info, message);
}

/// Logs at `notice` level.
pub fn notice(message: impl AsRef<str>) {
    log(Level::Notice, message);
}

/// Logs at `warning` level.
pub fn warn(message: impl AsRef<str>) {
    log(Level::Warning, message);
}

/// Logs at `error` level.
pub fn error(message: impl AsRef<str>) {
    log(Level::Error, message);
}

/// Reports progress of the current call: `progress` so far, out of `total`
/// if known, with an optional message.
///
/// Sent to the client as `notifications/progress` when it asked for progress.
/// `progress` must grow with each report; reports that do not are dropped.
///
/// ```no_run
/// airlock_guest::progress(3.0, Some(10.0), Some("3 of 10 items"));
/// ```
pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
    imp::progress(progress, total, message);
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::Level;
    use crate::bindings::host;

    pub fn log(level: Level, message: &str) {
        host::log(level, message);
    }

    pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
        host::progress(progress, total, message);
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::Level;

    pub fn log(level: Level, message: &str) {
        eprintln!("[{level:?}] {message}");
    }

    pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
        let total = total.map(|t| format!("/{t}")).unwrap_or_default();
        eprintln!("[progress {progress}{total}] {}", message.unwrap_or(""));
    }
}
