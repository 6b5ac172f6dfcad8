//! Requests in flight, by id, so that `notifications/cancelled` can stop
//! the one it names.
//!
//! Each peer that may cancel its own requests has one registry: the stdio
//! process, and each 2025-era session on HTTP. (A 2026-07-28 request over
//! HTTP is cancelled by closing its connection, which drops it.) A request
//! is registered when it arrives ([`InFlight::register`]), before the next
//! message is read, so a cancellation right behind it finds it; it stays
//! registered until its run ([`Registered::run`]) ends. A cancelled request
//! stops where it is and gets no reply.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt as _;
use futures_util::future::{AbortHandle, AbortRegistration, Abortable};
use serde_json::Value;

/// The requests of one peer that are running now.
#[derive(Debug)]
pub struct InFlight {
    running: Mutex<Running>,
}

#[derive(Debug)]
struct Running {
    /// The registrations of the requests with each id, by the id as JSON
    /// text (`1` and `"1"` are different ids), each with the number that
    /// tells the runs of a reused id apart.
    by_id: HashMap<String, Vec<(u64, AbortHandle)>>,
    /// Numbers registrations.
    next: u64,
    /// Set by [`InFlight::close`]: nothing runs any more.
    closed: bool,
    /// When the last request ended (or the registry was made).
    idle_since: Instant,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            running: Mutex::new(Running {
                by_id: HashMap::new(),
                next: 0,
                closed: false,
                idle_since: Instant::now(),
            }),
        }
    }
}

/// A request registered in an [`InFlight`]; unregistered when dropped.
#[derive(Debug)]
pub struct Registered {
    in_flight: Arc<InFlight>,
    key: String,
    number: u64,
    abort: Option<AbortRegistration>,
}

impl InFlight {
    /// Registers the request `id`, which then runs with
    /// [`Registered::run`]. A request registered after [`InFlight::close`]
    /// is cancelled at once. If the client reuses the id of a request
    /// still running, a cancellation stops both.
    pub fn register(self: &Arc<Self>, id: &Value) -> Registered {
        let key = id.to_string();
        let (handle, abort) = AbortHandle::new_pair();
        let mut running = self.lock();
        if running.closed {
            handle.abort();
        }
        running.next += 1;
        let number = running.next;
        running
            .by_id
            .entry(key.clone())
            .or_default()
            .push((number, handle));
        Registered {
            in_flight: self.clone(),
            key,
            number,
            abort: Some(abort),
        }
    }

    /// Stops the running requests with this id; false when none runs.
    pub fn cancel(&self, id: &Value) -> bool {
        let cancelled = self.lock().by_id.remove(&id.to_string());
        let Some(cancelled) = cancelled else {
            return false;
        };
        tracing::debug!(request = %id, "request cancelled by the client");
        for (_, handle) in cancelled {
            handle.abort();
        }
        true
    }

    /// Stops every running request, and every one registered from now on.
    pub fn close(&self) {
        let mut running = self.lock();
        running.closed = true;
        for (_, handle) in running.by_id.drain().flat_map(|(_, runs)| runs) {
            handle.abort();
        }
    }

    /// How many requests are running.
    pub fn len(&self) -> usize {
        self.lock().by_id.values().map(Vec::len).sum()
    }

    /// Whether no request is running.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How long no request has been running: `None` while one is.
    pub fn idle_for(&self) -> Option<Duration> {
        let running = self.lock();
        running
            .by_id
            .is_empty()
            .then(|| running.idle_since.elapsed())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Registered {
    /// Runs `work` as the registered request, until it ends or is
    /// cancelled (`None`); then the request is no longer in flight.
    ///
    /// Not an `async fn`, which would keep `work` beside the future it
    /// awaits: `work` is most of a request's future, held here once.
    pub fn run<F: Future>(mut self, work: F) -> impl Future<Output = Option<F::Output>> {
        let abort = self.abort.take().expect("a registration runs once");
        Abortable::new(work, abort).map(move |outcome| {
            drop(self);
            outcome.ok()
        })
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut running = self.in_flight.lock();
        if let Some(runs) = running.by_id.get_mut(&self.key) {
            runs.retain(|(number, _)| *number != self.number);
            if runs.is_empty() {
                running.by_id.remove(&self.key);
            }
        }
        if running.by_id.is_empty() {
            running.idle_since = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_run_holds_the_request_once() {
        let in_flight = Arc::new(InFlight::default());
        let run = in_flight
            .register(&json!(1))
            .run(crate::held_once::four_kib(()));
        crate::held_once::assert_held_once(&run);
    }

    #[tokio::test]
    async fn a_request_is_cancellable_from_its_registration_to_the_end_of_its_run() {
        let in_flight = Arc::new(InFlight::default());
        let (a, b) = (json!(1), json!("1"));
        // Cancelled before it ever ran: it never does.
        let early = in_flight.register(&a);
        assert!(in_flight.cancel(&a));
        assert_eq!(early.run(async { 7 }).await, None);
        assert!(in_flight.is_empty());
        let first = in_flight.register(&a);
        let second = in_flight.register(&b);
        assert_eq!(in_flight.len(), 2, "the string id \"1\" is another request");
        assert!(in_flight.idle_for().is_none(), "busy");
        let first = tokio::spawn(first.run(std::future::pending::<()>()));
        assert!(in_flight.cancel(&a));
        assert_eq!(first.await.unwrap(), None, "cancelled while running");
        assert!(!in_flight.cancel(&a), "forgotten once cancelled");
        assert_eq!(in_flight.len(), 1);
        in_flight.close();
        assert_eq!(
            second.run(async { 7 }).await,
            None,
            "closing stops the rest"
        );
        assert_eq!(
            in_flight.register(&a).run(async { 7 }).await,
            None,
            "closed"
        );
        assert!(in_flight.idle_for().is_some(), "idle again");
    }

    #[tokio::test]
    async fn a_finished_request_is_forgotten_and_a_reused_id_cancels_every_run() {
        let in_flight = Arc::new(InFlight::default());
        let id = json!(5);
        assert_eq!(in_flight.register(&id).run(async { 7 }).await, Some(7));
        assert!(in_flight.is_empty());
        let first = in_flight.register(&id);
        // The same id again while the first runs: the shorter run ends and
        // leaves the first registered.
        assert_eq!(in_flight.register(&id).run(async { 1 }).await, Some(1));
        assert_eq!(in_flight.len(), 1);
        let second = in_flight.register(&id);
        assert!(in_flight.cancel(&id));
        let pending = std::future::pending::<()>;
        assert_eq!(
            tokio::join!(first.run(pending()), second.run(pending())),
            (None, None)
        );
        assert!(in_flight.is_empty());
    }
}
