//! Failed exports of spans, told in the log by bursts: a collector that is
//! down fails every batch, and one line per batch would bury the log. The
//! first failure of a burst is one `warn` line at once; the failures after
//! it are counted, and told in one summary line at most once per
//! [`REPORT_EVERY`], when an export succeeds again, or at shutdown.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// The least time between two lines about failed exports.
pub const REPORT_EVERY: Duration = Duration::from_secs(60);

/// What to say of one more failed export, or of the failures not told yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The first failure of a burst: say it.
    First,
    /// `failed` more exports failed since the last line: say how many.
    More {
        /// How many, this one included.
        failed: u64,
    },
}

/// The failures since the last line, and when that line was.
#[derive(Debug)]
pub struct Failures {
    every: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When the last line was said, if one was within a burst.
    last_line: Option<Instant>,
    /// Failures not told yet.
    untold: u64,
}

impl Failures {
    /// Books that say at most one line per `every`.
    pub fn new(every: Duration) -> Failures {
        Failures {
            every,
            state: Mutex::new(State::default()),
        }
    }

    /// One more export failed at `now`: what to say of it, if anything.
    pub fn failed(&self, now: Instant) -> Option<Report> {
        let mut state = self.lock();
        let due = state
            .last_line
            .is_none_or(|last| now.saturating_duration_since(last) >= self.every);
        if !due {
            state.untold += 1;
            return None;
        }
        state.last_line = Some(now);
        match std::mem::take(&mut state.untold) {
            0 => Some(Report::First),
            untold => Some(Report::More { failed: untold + 1 }),
        }
    }

    /// An export succeeded at `now`: the burst is over. Returns the
    /// failures not told yet, to say now (0: none).
    pub fn succeeded(&self, now: Instant) -> u64 {
        let mut state = self.lock();
        let untold = std::mem::take(&mut state.untold);
        // The next failure starts a new burst, within the same bound of
        // one line per interval.
        if untold > 0 {
            state.last_line = Some(now);
        }
        untold
    }

    /// The failures not told yet (at shutdown), forgotten once returned.
    pub fn untold(&self) -> u64 {
        std::mem::take(&mut self.lock().untold)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// An exporter that tells its failures through [`Failures`] instead of
/// handing them to the batch processor (which would log each one).
#[derive(Debug)]
pub struct Reporting<E> {
    inner: E,
    failures: std::sync::Arc<Failures>,
}

impl<E> Reporting<E> {
    /// `inner`, its failures told through `failures`.
    pub fn new(inner: E, failures: std::sync::Arc<Failures>) -> Reporting<E> {
        Reporting { inner, failures }
    }
}

impl<E: SpanExporter> SpanExporter for Reporting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        match self.inner.export(batch).await {
            Ok(()) => {
                let untold = self.failures.succeeded(Instant::now());
                if untold > 0 {
                    tracing::warn!(
                        failed = untold,
                        "{untold} more exports of traces failed; the collector takes them again"
                    );
                }
            }
            Err(error) => match self.failures.failed(Instant::now()) {
                Some(Report::First) => tracing::warn!(
                    %error,
                    spans,
                    "exporting traces failed; the spans are dropped (further failures are \
                     counted, and told at most once a minute)"
                ),
                Some(Report::More { failed }) => tracing::warn!(
                    %error,
                    failed,
                    "{failed} more exports of traces failed; their spans are dropped"
                ),
                None => {}
            },
        }
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_one_line_then_one_count_per_interval() {
        let failures = Failures::new(Duration::from_secs(60));
        let start = Instant::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        assert_eq!(failures.failed(at(0)), Some(Report::First));
        for second in 1..60 {
            assert_eq!(failures.failed(at(second)), None, "at {second} s");
        }
        assert_eq!(
            failures.failed(at(60)),
            Some(Report::More { failed: 60 }),
            "59 untold and this one"
        );
        assert_eq!(failures.failed(at(61)), None);
        assert_eq!(failures.failed(at(119)), None);
        assert_eq!(failures.untold(), 2, "told at shutdown");
        assert_eq!(failures.untold(), 0, "and only once");
    }

    #[test]
    fn a_failure_after_a_quiet_interval_starts_a_new_burst() {
        let failures = Failures::new(Duration::from_secs(60));
        let start = Instant::now();
        assert_eq!(failures.failed(start), Some(Report::First));
        assert_eq!(
            failures.failed(start + Duration::from_secs(600)),
            Some(Report::First)
        );
    }

    #[test]
    fn a_success_tells_the_untold_failures_once() {
        let failures = Failures::new(Duration::from_secs(60));
        let start = Instant::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        assert_eq!(failures.succeeded(at(0)), 0);
        assert_eq!(failures.failed(at(0)), Some(Report::First));
        assert_eq!(failures.failed(at(1)), None);
        assert_eq!(failures.failed(at(2)), None);
        assert_eq!(failures.succeeded(at(3)), 2);
        assert_eq!(failures.succeeded(at(4)), 0);
        // A line was said at 3 s: the next burst waits its turn.
        assert_eq!(failures.failed(at(5)), None);
        assert_eq!(failures.untold(), 1);
    }
}
