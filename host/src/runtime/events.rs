//! The `airlock:mcp/host` imports: what a guest may tell the host while a
//! call runs (`log`, `progress`, `notify-list-changed`,
//! `notify-resource-updated`).
//!
//! Every report is written to the server log (target `airlock::guest`) and,
//! when the caller passed an [`EventSink`], forwarded as a [`GuestEvent`] so
//! the protocol layer can turn it into an MCP notification. Guests are
//! untrusted, so:
//!
//! - each message is cut to [`MAX_EVENT_MESSAGE_BYTES`];
//! - a call may report at most `max_events_per_call` events, later ones are
//!   dropped (and counted in one log line at the end of the call);
//! - progress that does not strictly grow, or is not a finite number, is
//!   dropped, as the WIT contract says;
//! - the sink is a bounded channel: a guest that reports faster than the
//!   client reads waits (asynchronously), but never past its deadline. If the
//!   receiver is gone, events are silently discarded;
//! - change reports ([`Change`]) go to the runtime's change channel, also
//!   bounded: when it is full they are dropped (with a log line), never
//!   waited for, and they count against the same per-call budget.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc::error::TrySendError;

use super::bindings::{ListKind, LogLevel, host_import};
use super::call::{CallState, DeadlineExceeded};

/// Longest message (in bytes) forwarded from a guest's `log` or `progress`;
/// longer ones are cut at a character boundary and end with `…`.
pub const MAX_EVENT_MESSAGE_BYTES: usize = 8 << 10;

/// Something a guest reported while a call was running.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestEvent {
    /// A `log` call from the guest.
    Log {
        /// Severity as the guest gave it.
        level: LogLevel,
        /// The message, at most [`MAX_EVENT_MESSAGE_BYTES`].
        message: String,
    },
    /// A `progress` call from the guest; `progress` strictly grows from one
    /// event to the next within a call.
    Progress {
        /// Progress so far (finite, strictly greater than the previous one).
        progress: f64,
        /// Expected final value, if the guest knows it (finite).
        total: Option<f64>,
        /// A human-readable status, at most [`MAX_EVENT_MESSAGE_BYTES`].
        message: Option<String>,
    },
}

/// Where a call's [`GuestEvent`]s go. Bounded: a full channel makes the
/// guest wait, up to its deadline.
pub type EventSink = tokio::sync::mpsc::Sender<GuestEvent>;

/// A change a guest reported about what its component serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `notify-list-changed`: the component's list of `kind` changed.
    ListChanged {
        /// The component file that reported it.
        component: Arc<Path>,
        /// Which list.
        kind: ListKind,
    },
    /// `notify-resource-updated`: the resource at `uri` changed.
    ResourceUpdated {
        /// The component file that reported it.
        component: Arc<Path>,
        /// The resource, at most [`MAX_EVENT_MESSAGE_BYTES`] long.
        uri: String,
    },
}

/// Where guests' [`Change`]s go (see [`Runtime::take_changes`](super::Runtime::take_changes)).
pub(crate) type ChangeSender = tokio::sync::mpsc::Sender<Change>;

/// Per-call state behind the host imports.
pub(crate) struct EventState {
    /// The tool (or, while loading, the component file) for log lines.
    label: Arc<str>,
    deadline: Instant,
    sink: Option<EventSink>,
    remaining: usize,
    dropped: usize,
    last_progress: Option<f64>,
    /// The component file and the change channel; `None` while listing a
    /// component at load, when changes mean nothing yet.
    changes: Option<(Arc<Path>, ChangeSender)>,
}

impl EventState {
    pub(crate) fn new(
        label: Arc<str>,
        deadline: Instant,
        sink: Option<EventSink>,
        max_events: usize,
        changes: Option<(Arc<Path>, ChangeSender)>,
    ) -> EventState {
        EventState {
            label,
            deadline,
            sink,
            remaining: max_events,
            dropped: 0,
            last_progress: None,
            changes,
        }
    }

    /// Reports a change, unless the budget is spent or the channel is full.
    fn report(&mut self, change: impl FnOnce(Arc<Path>) -> Change) {
        if !self.take_slot() {
            return;
        }
        let Some((component, sender)) = &self.changes else {
            return;
        };
        if sender.try_send(change(component.clone())).is_err() {
            self.dropped += 1;
            tracing::debug!(target: "airlock::runtime", tool = &*self.label, "dropped a change report (channel full)");
        }
    }

    /// The number of events dropped so far (over the limit, or progress
    /// that did not grow).
    pub(crate) fn dropped(&self) -> usize {
        self.dropped
    }

    /// Takes one slot of the per-call event budget; false if none is left.
    fn take_slot(&mut self) -> bool {
        if self.remaining == 0 {
            self.dropped += 1;
            false
        } else {
            self.remaining -= 1;
            true
        }
    }

    async fn send(&mut self, event: GuestEvent) -> wasmtime::Result<()> {
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        // Fast path without a timer; wait (bounded by the deadline) only if full.
        let event = match sink.try_send(event) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed(_)) => {
                self.sink = None;
                return Ok(());
            }
            Err(TrySendError::Full(event)) => event,
        };
        match tokio::time::timeout_at(self.deadline.into(), sink.send(event)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_closed)) => {
                self.sink = None;
                Ok(())
            }
            Err(_elapsed) => Err(wasmtime::Error::new(DeadlineExceeded)),
        }
    }
}

/// The RFC 5424 name of a level, as MCP spells it.
pub fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Notice => "notice",
        LogLevel::Warning => "warning",
        LogLevel::Error => "error",
        LogLevel::Critical => "critical",
        LogLevel::Alert => "alert",
        LogLevel::Emergency => "emergency",
    }
}

/// Cuts `s` to at most `max` bytes at a character boundary, marking the cut.
pub(crate) fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        const MARK: &str = "…";
        let mut end = max.saturating_sub(MARK.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str(MARK);
    }
    s
}

impl host_import::Host for CallState {
    async fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        let events = &mut self.events;
        if !events.take_slot() {
            return Ok(());
        }
        let message = truncate(message, MAX_EVENT_MESSAGE_BYTES);
        let tool = &*events.label;
        let name = level_name(level);
        match level {
            LogLevel::Debug => {
                tracing::debug!(target: "airlock::guest", tool, level = name, "{message}")
            }
            LogLevel::Info | LogLevel::Notice => {
                tracing::info!(target: "airlock::guest", tool, level = name, "{message}")
            }
            LogLevel::Warning => {
                tracing::warn!(target: "airlock::guest", tool, level = name, "{message}")
            }
            LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
                tracing::error!(target: "airlock::guest", tool, level = name, "{message}")
            }
        }
        events.send(GuestEvent::Log { level, message }).await
    }

    async fn progress(
        &mut self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> wasmtime::Result<()> {
        let events = &mut self.events;
        let grows = progress.is_finite() && events.last_progress.is_none_or(|last| progress > last);
        if !grows {
            events.dropped += 1;
            return Ok(());
        }
        if !events.take_slot() {
            return Ok(());
        }
        events.last_progress = Some(progress);
        let total = total.filter(|t| t.is_finite());
        let message = message.map(|m| truncate(m, MAX_EVENT_MESSAGE_BYTES));
        tracing::trace!(target: "airlock::guest", tool = &*events.label, progress, total, "progress");
        events
            .send(GuestEvent::Progress {
                progress,
                total,
                message,
            })
            .await
    }

    async fn notify_list_changed(&mut self, kind: ListKind) -> wasmtime::Result<()> {
        tracing::debug!(target: "airlock::guest", tool = &*self.events.label, ?kind, "list changed");
        self.events
            .report(|component| Change::ListChanged { component, kind });
        Ok(())
    }

    async fn notify_resource_updated(&mut self, uri: String) -> wasmtime::Result<()> {
        if uri.len() > MAX_EVENT_MESSAGE_BYTES {
            self.events.dropped += 1;
            return Ok(());
        }
        tracing::debug!(target: "airlock::guest", tool = &*self.events.label, uri, "resource updated");
        self.events
            .report(|component| Change::ResourceUpdated { component, uri });
        Ok(())
    }
}

impl super::bindings::types_import::Host for CallState {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_at_char_boundary() {
        assert_eq!(truncate("short".into(), 8), "short");
        let cut = truncate("ééééé".into(), 8); // 10 bytes
        assert!(cut.len() <= 8, "{cut}");
        assert!(cut.ends_with('…'));
        assert!(cut.starts_with('é'));
        let long = truncate("x".repeat(20_000), MAX_EVENT_MESSAGE_BYTES);
        assert_eq!(long.len(), MAX_EVENT_MESSAGE_BYTES);
    }
}
