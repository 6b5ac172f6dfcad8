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
//! - the bytes a call reports are bounded too, by the component's output
//!   limit (`max_output_bytes`, the limit on its result): the log and
//!   progress messages and resource URIs of one call count against it
//!   together, and an event whose text does not fit in what is left is
//!   dropped and counted like one over the count. So one call adds at most
//!   that many bytes of guest text to the server log and to the
//!   notifications its client receives;
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
use super::deadline::DeadlineExceeded;

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
    /// Events the call may still report.
    remaining: usize,
    /// Bytes of messages and URIs the call may still report.
    remaining_bytes: usize,
    dropped: usize,
    last_progress: Option<f64>,
    /// The component file and the change channel; `None` while listing a
    /// component at load, when changes mean nothing yet.
    changes: Option<(Arc<Path>, ChangeSender)>,
}

impl EventState {
    /// The state of one call that may report `max_events` events carrying
    /// `max_bytes` bytes of messages and URIs in all.
    pub(crate) fn new(
        label: Arc<str>,
        deadline: Instant,
        sink: Option<EventSink>,
        max_events: usize,
        max_bytes: usize,
        changes: Option<(Arc<Path>, ChangeSender)>,
    ) -> EventState {
        EventState {
            label,
            deadline,
            sink,
            remaining: max_events,
            remaining_bytes: max_bytes,
            dropped: 0,
            last_progress: None,
            changes,
        }
    }

    /// Reports a change (its slot already taken), unless the channel is
    /// full.
    fn report(&mut self, change: impl FnOnce(Arc<Path>) -> Change) {
        let Some((component, sender)) = &self.changes else {
            return;
        };
        if sender.try_send(change(component.clone())).is_err() {
            self.dropped += 1;
            tracing::debug!(target: "airlock::runtime", tool = &*self.label, "dropped a change report (channel full)");
        }
    }

    /// The number of events dropped so far (over the count or byte limit,
    /// or progress that did not grow).
    pub(crate) fn dropped(&self) -> usize {
        self.dropped
    }

    /// Takes one event carrying `bytes` bytes of text out of the call's
    /// budget; false (and the event counted as dropped) if it does not fit.
    fn take_slot(&mut self, bytes: usize) -> bool {
        if self.remaining == 0 || bytes > self.remaining_bytes {
            self.dropped += 1;
            false
        } else {
            self.remaining -= 1;
            self.remaining_bytes -= bytes;
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

impl host_import::Host for EventState {
    async fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        let events = self;
        let message = truncate(message, MAX_EVENT_MESSAGE_BYTES);
        if !events.take_slot(message.len()) {
            return Ok(());
        }
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
        let events = self;
        let grows = progress.is_finite() && events.last_progress.is_none_or(|last| progress > last);
        if !grows {
            events.dropped += 1;
            return Ok(());
        }
        let message = message.map(|m| truncate(m, MAX_EVENT_MESSAGE_BYTES));
        if !events.take_slot(message.as_ref().map_or(0, String::len)) {
            return Ok(());
        }
        events.last_progress = Some(progress);
        let total = total.filter(|t| t.is_finite());
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
        let events = self;
        if !events.take_slot(0) {
            return Ok(());
        }
        tracing::debug!(target: "airlock::guest", tool = &*events.label, ?kind, "list changed");
        events.report(|component| Change::ListChanged { component, kind });
        Ok(())
    }

    async fn notify_resource_updated(&mut self, uri: String) -> wasmtime::Result<()> {
        let events = self;
        if uri.len() > MAX_EVENT_MESSAGE_BYTES {
            events.dropped += 1;
            return Ok(());
        }
        if !events.take_slot(uri.len()) {
            return Ok(());
        }
        tracing::debug!(target: "airlock::guest", tool = &*events.label, uri, "resource updated");
        events.report(|component| Change::ResourceUpdated { component, uri });
        Ok(())
    }
}

impl super::bindings::types_import::Host for EventState {}

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

    #[test]
    fn a_call_reports_at_most_its_events_and_bytes() {
        let mut events = EventState::new("tool".into(), Instant::now(), None, 4, 10, None);
        assert!(events.take_slot(6));
        assert!(!events.take_slot(5), "5 bytes do not fit in the 4 left");
        assert!(events.take_slot(4));
        assert!(!events.take_slot(1), "the bytes are spent");
        assert!(events.take_slot(0), "an event without text still fits");
        assert!(events.take_slot(0));
        assert!(!events.take_slot(0), "the events are spent");
        assert_eq!(events.dropped(), 3);
    }
}
