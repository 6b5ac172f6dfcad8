//! One legacy session: what its `initialize` declared, what it set since
//! (log level, resource subscriptions), the requests Airlock sent its client
//! and awaits answers to, and the requests of the client still running.
//!
//! Nothing here outlives the session: closing it fails every awaited
//! answer, cancels every running request and ends its standalone stream.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Map, Value, json};
use tokio::sync::{oneshot, watch};

use crate::protocol::Notifier;
use crate::protocol::envelope::{self, LogLevel};
use crate::protocol::in_flight::InFlight;
use crate::protocol::jsonrpc::{self, Response};

/// Why a request Airlock sent to the client got no usable answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AskError {
    /// The client answered with a JSON-RPC error (the `error` object).
    Refused(Value),
    /// No answer within the configured time.
    TimedOut(Duration),
    /// The session ended, or the stream to the client closed, first.
    Gone,
}

/// A legacy (`initialize`) session.
pub struct Session {
    id: String,
    principal: String,
    version: &'static str,
    capabilities: Value,
    log_level: Mutex<Option<LogLevel>>,
    subscribed: Mutex<BTreeSet<String>>,
    next_request: AtomicU64,
    awaited: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    in_flight: Arc<InFlight>,
    /// When the client last did something (a message, a request or the
    /// stream ended).
    last_active: Mutex<Instant>,
    closed: watch::Sender<bool>,
    stream_open: AtomicBool,
}

impl Session {
    /// A new session of `principal` that negotiated `version` and declared
    /// `capabilities` (the `initialize` object), with a fresh unguessable id.
    pub fn new(principal: &str, version: &'static str, capabilities: Value) -> Self {
        let mut bytes = [0u8; 24];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
            .expect("the system random source works");
        Session {
            // URL-safe Base64: visible ASCII only, as Mcp-Session-Id requires.
            id: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
            principal: principal.to_owned(),
            version,
            capabilities,
            log_level: Mutex::new(None),
            subscribed: Mutex::default(),
            next_request: AtomicU64::new(0),
            awaited: Mutex::default(),
            in_flight: Arc::default(),
            last_active: Mutex::new(Instant::now()),
            closed: watch::Sender::new(false),
            stream_open: AtomicBool::new(false),
        }
    }

    /// The `Mcp-Session-Id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Who opened the session; only they may use it.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The negotiated protocol version.
    pub fn version(&self) -> &'static str {
        self.version
    }

    /// Sets the level from which log messages are sent (`logging/setLevel`).
    pub(super) fn set_log_level(&self, level: LogLevel) {
        *lock(&self.log_level) = Some(level);
    }

    /// Adds (`true`) or removes a resource subscription; false when adding
    /// would pass `max` subscriptions.
    pub(super) fn subscribe(&self, uri: &str, on: bool, max: usize) -> bool {
        let mut subscribed = lock(&self.subscribed);
        if !on {
            subscribed.remove(uri);
        } else if subscribed.len() < max || subscribed.contains(uri) {
            subscribed.insert(uri.to_owned());
        } else {
            return false;
        }
        true
    }

    /// Whether the client subscribed to a resource covering `uri`.
    pub(super) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscribed)
            .iter()
            .any(|subscribed| crate::protocol::subscriptions::covers(subscribed, uri))
    }

    /// The capabilities the client declared in `initialize`.
    pub(super) fn declared_capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// The 2026-07-28 `_meta` a request of this session is served with: the
    /// request's own `_meta` (its progress token) plus the client
    /// `capabilities` it is served with (the bridge decides them from what
    /// the session declared) and the log level the session set.
    pub(super) fn envelope(&self, own: Option<&Value>, capabilities: Value) -> Value {
        let mut meta = own
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(Map::new);
        meta.insert(
            envelope::META_PROTOCOL_VERSION.to_owned(),
            json!(envelope::PROTOCOL_VERSION),
        );
        meta.insert(envelope::META_CLIENT_CAPABILITIES.to_owned(), capabilities);
        match *lock(&self.log_level) {
            Some(level) => meta.insert(envelope::META_LOG_LEVEL.to_owned(), json!(level.as_str())),
            None => meta.remove(envelope::META_LOG_LEVEL),
        };
        Value::Object(meta)
    }

    /// Sends `method` to the client through `out` and waits up to `timeout`
    /// for its answer. The wait is forgotten however it ends (answer,
    /// timeout, session closed, or this future dropped).
    pub async fn ask(
        &self,
        out: &Notifier,
        method: &str,
        params: &str,
        timeout: Duration,
    ) -> Result<Value, AskError> {
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let key = Value::from(id).to_string();
        let (answer, answered) = oneshot::channel();
        lock(&self.awaited).insert(key.clone(), answer);
        let _waiting = crate::metrics::bridged_request_waiting();
        let _forget = Forget {
            session: self,
            key: &key,
        };
        // Checked after registering: a close in between clears the entry.
        if *self.closed.borrow() {
            return Err(AskError::Gone);
        }
        if out
            .send(jsonrpc::encode_raw_request(id, method, params))
            .await
            .is_err()
        {
            return Err(AskError::Gone);
        }
        tracing::debug!(session = %self.id, request = id, method, "asked the client");
        match tokio::time::timeout(timeout, answered).await {
            Err(_) => {
                // Tell the client to stop asking its user: no answer counts now.
                let cancelled = json!({
                    "requestId": id,
                    "reason": format!("no answer within {} ms", timeout.as_millis()),
                });
                let _ = out.try_send(jsonrpc::encode_notification(
                    "notifications/cancelled",
                    &cancelled,
                ));
                Err(AskError::TimedOut(timeout))
            }
            Ok(Err(_)) => Err(AskError::Gone),
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(AskError::Refused(error)),
        }
    }

    /// Delivers the client's answer to the request it names. False when no
    /// request with that id is awaited (unknown, already answered, or given
    /// up on).
    pub fn answer(&self, response: Response) -> bool {
        let waiting = lock(&self.awaited).remove(&response.id.to_string());
        match waiting {
            Some(waiting) => waiting.send(response.outcome).is_ok(),
            None => false,
        }
    }

    /// The session's requests in flight, which `notifications/cancelled`
    /// stops; the session is not idle while one runs.
    pub fn in_flight(&self) -> &Arc<InFlight> {
        &self.in_flight
    }

    /// Marks the standalone stream open; `None` if one already is.
    pub fn open_stream(self: &Arc<Self>) -> Option<StreamGuard> {
        if self.stream_open.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(StreamGuard {
            session: self.clone(),
        })
    }

    /// How long the session has been idle: `None` while a request runs or
    /// its stream is open.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.stream_open.load(Ordering::Acquire) {
            return None;
        }
        let requests_idle = self.in_flight.idle_for()?;
        Some(lock(&self.last_active).elapsed().min(requests_idle))
    }

    /// Notes that the client did something (a message arrived).
    pub fn touch(&self) {
        *lock(&self.last_active) = Instant::now();
    }

    /// Ends the session: awaited answers fail, running requests stop, the
    /// standalone stream ends.
    pub fn close(&self) {
        self.stop_waiting();
        self.in_flight.close();
    }

    /// Ends the session but lets running requests finish (the server is
    /// shutting down, or the client closed stdin): awaited answers fail at
    /// once, since they can no longer come, and the standalone stream ends.
    pub fn stop_waiting(&self) {
        self.closed.send_replace(true);
        lock(&self.awaited).clear();
    }

    /// Resolves once the session is closed.
    pub(super) async fn wait_closed(&self) {
        let mut closed = self.closed.subscribe();
        let _ = closed.wait_for(|closed| *closed).await;
    }

    /// How many answers are awaited (for tests of leaks).
    #[cfg(test)]
    fn awaited_count(&self) -> usize {
        lock(&self.awaited).len()
    }
}

/// Forgets an awaited answer when the wait ends, however it ends.
struct Forget<'a> {
    session: &'a Session,
    key: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.session.awaited).remove(self.key);
    }
}

/// The open standalone stream of a session; marks it closed on drop.
pub struct StreamGuard {
    session: Arc<Session>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.session.touch();
        self.session.stream_open.store(false, Ordering::Release);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::{Incoming, decode};

    fn session() -> Session {
        Session::new("p", "2025-11-25", json!({"elicitation": {}}))
    }

    fn response(bytes: &[u8]) -> Response {
        match decode(bytes).unwrap() {
            Incoming::Response(r) => r,
            other => panic!("not a response: {other:?}"),
        }
    }

    #[tokio::test]
    async fn answers_reach_the_asker_once() {
        let session = session();
        let (out, mut sent) = tokio::sync::mpsc::channel(4);
        let params = "{}";
        let ask = session.ask(&out, "roots/list", params, Duration::from_secs(5));
        let answer = async {
            let request: Value = serde_json::from_slice(&sent.recv().await.unwrap()).unwrap();
            assert_eq!(request["method"], "roots/list");
            assert!(!session.answer(response(br#"{"jsonrpc":"2.0","id":99,"result":{}}"#)));
            let id = request["id"].as_u64().unwrap();
            let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"roots":[]}}}}"#);
            assert!(session.answer(response(reply.as_bytes())));
            assert!(
                !session.answer(response(reply.as_bytes())),
                "answered twice"
            );
        };
        let (asked, ()) = tokio::join!(ask, answer);
        assert_eq!(asked, Ok(json!({"roots": []})));
        assert_eq!(session.awaited_count(), 0);
    }

    #[tokio::test]
    async fn unanswered_requests_time_out_or_end_with_the_session() {
        let session = session();
        let (out, mut sent) = tokio::sync::mpsc::channel(4);
        let timeout = Duration::from_millis(20);
        let params = "{}";
        assert_eq!(
            session.ask(&out, "roots/list", params, timeout).await,
            Err(AskError::TimedOut(timeout))
        );
        let asked: Value = serde_json::from_slice(&sent.recv().await.unwrap()).unwrap();
        let cancelled: Value = serde_json::from_slice(&sent.recv().await.unwrap()).unwrap();
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], asked["id"]);
        assert_eq!(session.awaited_count(), 0);
        let ask = session.ask(&out, "roots/list", params, Duration::from_secs(5));
        let close = async {
            tokio::task::yield_now().await;
            session.close();
        };
        let (asked, ()) = tokio::join!(ask, close);
        assert_eq!(asked, Err(AskError::Gone));
        assert_eq!(session.awaited_count(), 0);
    }

    #[test]
    fn ids_are_visible_ascii_and_differ() {
        let (a, b) = (session(), session());
        assert_ne!(a.id(), b.id());
        assert!(a.id().bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert!(a.id().len() >= 32);
    }

    #[test]
    fn busy_sessions_are_not_idle() {
        let session = Arc::new(session());
        assert!(session.idle_for().is_some());
        let busy = session.in_flight().register(&json!(1));
        assert!(session.idle_for().is_none());
        drop(busy);
        let stream = session.open_stream().unwrap();
        assert!(session.open_stream().is_none(), "one stream at a time");
        assert!(session.idle_for().is_none());
        drop(stream);
        assert!(session.idle_for().is_some());
        assert!(session.open_stream().is_some());
    }

    #[test]
    fn the_envelope_carries_what_the_session_set() {
        let session = session();
        session.set_log_level(LogLevel::Debug);
        let meta = session.envelope(
            Some(&json!({"progressToken": 5})),
            session.declared_capabilities().clone(),
        );
        assert_eq!(meta["progressToken"], 5);
        assert_eq!(meta[envelope::META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(
            meta[envelope::META_CLIENT_CAPABILITIES],
            json!({"elicitation": {}})
        );
        assert_eq!(meta[envelope::META_LOG_LEVEL], "debug");
    }
}
