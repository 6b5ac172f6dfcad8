//! Why a call failed, in words a user can act on.

use std::time::Duration;

use crate::metrics::{self, Limit};

/// Why a guest call failed. Only that call fails; the host and every other
/// call carry on.
///
/// `Display` gives a short message fit for the client (and the model). The
/// `detail` fields hold wasmtime's own description, for the server log.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The call did not finish before its deadline (including any time spent
    /// waiting for a free slot when the host is at its concurrency limit).
    #[error("the tool did not finish within its {} time limit", human_duration(*limit))]
    Timeout {
        /// The time limit that was exceeded.
        limit: Duration,
    },
    /// The guest tried to grow its memory past the cap.
    #[error("the tool exceeded its {} memory limit", human_bytes(*limit))]
    OutOfMemory {
        /// The memory cap in bytes.
        limit: usize,
    },
    /// The server is at its limit of running and waiting calls; the call
    /// was refused without running.
    #[error("the server is busy ({running} calls running, {waiting} waiting); try again shortly")]
    Busy {
        /// The concurrency limit.
        running: usize,
        /// The queue limit.
        waiting: usize,
    },
    /// The guest used up its fuel (its manifest's `[limits] fuel`).
    #[error("the tool used up its fuel ({limit} units)")]
    OutOfFuel {
        /// The fuel it had.
        limit: u64,
    },
    /// The guest's outcome, encoded for the client, is larger than its
    /// output limit.
    #[error("the tool's output exceeds its {} output limit", human_bytes(*limit))]
    OutputTooLarge {
        /// The output limit in bytes.
        limit: usize,
    },
    /// The guest's outcome holds more items of one kind than an outcome
    /// may (see [`OutcomeLimits`](super::output::OutcomeLimits)).
    #[error("the tool returned more than {limit} {what}")]
    TooManyItems {
        /// What there are too many of (`content blocks`, `input requests`).
        what: &'static str,
        /// How many are allowed.
        limit: usize,
    },
    /// The guest tried to hold more host resources (open files, streams,
    /// pollables, HTTP fields...) at once than an instance may.
    #[error(
        "the tool held more than {limit} host resources (open files, streams, HTTP requests) at once"
    )]
    TooManyResources {
        /// The per-instance limit.
        limit: usize,
    },
    /// The guest called an import its manifest does not grant.
    #[error("the tool called {import}, which it is not granted: {reason}")]
    NotGranted {
        /// The import, as `interface#function`.
        import: String,
        /// What the manifest would have to grant.
        reason: &'static str,
    },
    /// The guest trapped: a panic, `unreachable`, a stack overflow, an
    /// out-of-bounds access...
    #[error("the tool crashed (wasm trap)")]
    Trapped {
        /// wasmtime's description of the trap, with the wasm backtrace.
        detail: String,
    },
    /// The component could not be instantiated.
    #[error("the tool could not be started")]
    Instantiate {
        /// wasmtime's description of the failure.
        detail: String,
    },
}

impl CallError {
    /// Counts the failure in the metrics: a refusal when busy, or the limit
    /// it ran into (other failures are not limits).
    pub fn count(&self) {
        let limit = match self {
            CallError::Busy { .. } => return metrics::refused_busy(),
            CallError::Timeout { .. } => Limit::Deadline,
            CallError::OutOfMemory { .. } => Limit::Memory,
            CallError::OutOfFuel { .. } => Limit::Fuel,
            CallError::OutputTooLarge { .. } | CallError::TooManyItems { .. } => Limit::Output,
            CallError::TooManyResources { .. } => Limit::Resources,
            CallError::NotGranted { .. }
            | CallError::Trapped { .. }
            | CallError::Instantiate { .. } => return,
        };
        metrics::limit_hit(limit);
    }
}

/// `10 s`, `250 ms`, or `1.5s` (for anything finer).
pub(crate) fn human_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else if d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{d:?}")
    }
}

/// `64 MiB`, `512 KiB`, or `1000 bytes`.
pub(crate) fn human_bytes(n: usize) -> String {
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    const GIB: usize = 1 << 30;
    match n {
        0 => "0 bytes".to_owned(),
        n if n.is_multiple_of(GIB) => format!("{} GiB", n / GIB),
        n if n.is_multiple_of(MIB) => format!("{} MiB", n / MIB),
        n if n.is_multiple_of(KIB) => format!("{} KiB", n / KIB),
        n => format!("{n} bytes"),
    }
}

/// The root cause first (e.g. "wasm trap: wasm `unreachable` instruction
/// executed"), then the context around it (e.g. the wasm backtrace).
pub(crate) fn describe(err: &wasmtime::Error) -> String {
    let causes: Vec<String> = err.chain().map(|cause| cause.to_string()).collect();
    match causes.split_last() {
        None => String::new(),
        Some((root, [])) => root.clone(),
        Some((root, context)) => format!("{root} ({})", context.join(": ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_user_facing() {
        let timeout = CallError::Timeout {
            limit: Duration::from_secs(10),
        };
        assert_eq!(
            timeout.to_string(),
            "the tool did not finish within its 10 s time limit"
        );
        let short = CallError::Timeout {
            limit: Duration::from_millis(250),
        };
        assert_eq!(
            short.to_string(),
            "the tool did not finish within its 250 ms time limit"
        );
        let oom = CallError::OutOfMemory { limit: 64 << 20 };
        assert_eq!(oom.to_string(), "the tool exceeded its 64 MiB memory limit");
        let big = CallError::OutputTooLarge { limit: 1 << 20 };
        assert_eq!(
            big.to_string(),
            "the tool's output exceeds its 1 MiB output limit"
        );
        let trap = CallError::Trapped {
            detail: "unreachable".into(),
        };
        assert_eq!(trap.to_string(), "the tool crashed (wasm trap)");
        assert_eq!(human_bytes(1000), "1000 bytes");
        assert_eq!(human_bytes(3 << 10), "3 KiB");
    }
}
