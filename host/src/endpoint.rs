//! The endpoint: what stands between the transports and the two protocol
//! eras.
//!
//! A transport frames messages (the body of an HTTP POST, a line on stdin),
//! decodes them and hands each to [`Endpoint::receive`] with the [`Peer`]
//! it came from; it then does what the [`Outcome`] says, in its own terms
//! (a status and a JSON body or an SSE stream; lines on stdout). Everything
//! else is decided here, once for both transports:
//!
//! - **what a message is**: a request, a notification, or the client's
//!   response to a request Airlock sent it;
//! - **its era**: an `initialize` without the 2026-07-28 envelope opens a
//!   2025-era session; a request of a session is served by the
//!   [`legacy`](crate::legacy) adapter, unless it carries the 2026-07-28
//!   envelope itself; every other request goes to the 2026-07-28
//!   [`Server`];
//! - **the sessions**: HTTP's table (sessions named by `Mcp-Session-Id`,
//!   bounded, ended when idle) and the stdio process's one session;
//! - **the client's responses**, delivered to the requests of Airlock that
//!   await them;
//! - **cancellation**: `notifications/cancelled` stops the request it names
//!   through its peer's [`InFlight`] registry (the stdio process's, or a
//!   session's; a 2026-07-28 request over HTTP is cancelled by closing its
//!   connection).
//!
//! Serving 2025-era clients is `legacy/` and the session branches here.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::http::HeaderMap;
use serde_json::json;

use crate::access::Caller;
use crate::legacy::{self, Changes, Full, Legacy, Session, Sessions};
use crate::protocol::envelope::{self, MirroredHeaders};
use crate::protocol::in_flight::{InFlight, Registered};
use crate::protocol::jsonrpc::{Incoming, Notification, Request, Response, RpcError};
use crate::protocol::subscriptions::ListViews;
use crate::protocol::{Notifier, Reply, RequestContext, Server};
use crate::telemetry::Via;

/// Routes every message of every transport to the era that serves it.
pub struct Endpoint {
    server: Arc<Server>,
    legacy: Arc<Legacy>,
    sessions: Sessions,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// Where a message came from.
#[derive(Debug)]
pub enum Peer {
    /// One HTTP request.
    Http(HttpRequest),
    /// The stdio process.
    Process(Arc<Process>),
}

impl Peer {
    /// Who sent the message.
    pub fn caller(&self) -> &Caller {
        match self {
            Peer::Http(http) => &http.caller,
            Peer::Process(process) => &process.caller,
        }
    }
}

/// What the endpoint needs of one HTTP request besides its body.
#[derive(Debug)]
pub struct HttpRequest {
    /// Who admission found the caller to be.
    pub caller: Arc<Caller>,
    /// Its headers: the ones that mirror the body, `Mcp-Param-*`, the
    /// trace context.
    pub headers: HeaderMap,
    /// The session its `Mcp-Session-Id` names, if it has that header (a
    /// value that is not visible ASCII names no session: leave it empty).
    pub session: Option<String>,
}

/// The stdio process as a peer: one caller, the session an `initialize`
/// made of the process, and its requests in flight (both eras).
pub struct Process {
    caller: Caller,
    session: OnceLock<Arc<Session>>,
    in_flight: Arc<InFlight>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("principal", &self.caller.principal)
            .field("session", &self.session.get().map(|session| session.id()))
            .field("in_flight", &self.in_flight.len())
            .finish()
    }
}

impl Process {
    /// The process of `caller` (who runs it), without a session yet.
    pub fn new(caller: Caller) -> Self {
        Process {
            caller,
            session: OnceLock::new(),
            in_flight: Arc::default(),
        }
    }

    /// The input ended: requests waiting for the client's answers fail at
    /// once (the answers can no longer come) and the session's stream ends;
    /// running requests finish.
    pub fn close(&self) {
        if let Some(session) = self.session.get() {
            session.stop_waiting();
        }
    }
}

/// What a transport does with a message.
pub enum Outcome {
    /// Nothing to answer: a notification, or the client's response to a
    /// request of Airlock (HTTP: 202).
    Accepted,
    /// An answer now: an error, or a result that needed no work.
    Reply(Reply),
    /// A message refused that JSON-RPC gives no reply to (a response that
    /// answers nothing): HTTP answers with this error, stdio only logs.
    Refused(Reply),
    /// `initialize` opened a session: its reply, and the session's id (HTTP
    /// names it in `Mcp-Session-Id`).
    Opened {
        /// The session's id.
        session: String,
        /// `initialize`'s result.
        reply: Reply,
    },
    /// A session ended at the client's request (HTTP DELETE: 200).
    Ended,
    /// Work to run, whose reply comes when it ends.
    Run(Call),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Accepted => f.write_str("Accepted"),
            Outcome::Reply(reply) => f.debug_tuple("Reply").field(reply).finish(),
            Outcome::Refused(reply) => f.debug_tuple("Refused").field(reply).finish(),
            Outcome::Opened { session, .. } => {
                f.debug_struct("Opened").field("session", session).finish()
            }
            Outcome::Ended => f.write_str("Ended"),
            Outcome::Run(call) => f.debug_tuple("Run").field(&call.delivery).finish(),
        }
    }
}

/// A request's work: run it with a [`Notifier`] where its messages before
/// the reply can go (notifications, Airlock's requests to the client), or
/// without one where they cannot.
pub struct Call {
    /// How what it sends reaches the client.
    pub delivery: Delivery,
    run: Box<dyn FnOnce(Option<Notifier>) -> BoxedReply + Send>,
}

/// The reply a [`Call`] ends with (empty when it was cancelled).
pub type BoxedReply = Pin<Box<dyn Future<Output = Reply> + Send>>;

impl Call {
    fn new<F>(delivery: Delivery, run: impl FnOnce(Option<Notifier>) -> F + Send + 'static) -> Call
    where
        F: Future<Output = Reply> + Send + 'static,
    {
        Call {
            delivery,
            run: Box::new(move |notifier| Box::pin(run(notifier))),
        }
    }

    /// Runs the call; with `notifier`, what it sends before its reply goes
    /// there, in order.
    pub fn run(self, notifier: Option<Notifier>) -> BoxedReply {
        (self.run)(notifier)
    }
}

/// How a [`Call`]'s messages reach the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// It sends nothing before its reply.
    Reply,
    /// It may send messages before its reply: HTTP streams them (SSE) when
    /// the client accepts a stream, otherwise it is run without them.
    /// `long_lived`: it may stay quiet for long (a listen stream, a wait
    /// for the client's answer), so an idle stream gets keep-alives.
    MayStream {
        /// Whether keep-alives are needed.
        long_lived: bool,
    },
    /// It is a stream from the start (a session's standalone stream): the
    /// client must accept one.
    Stream,
}

/// The JSON-RPC code of an unknown session, as 2025-era servers answer it.
const SESSION_NOT_FOUND: i32 = -32001;

impl Endpoint {
    /// The endpoint over `server`, serving 2025-era sessions with `legacy`
    /// (over HTTP, in the table `sessions`).
    pub fn new(server: Arc<Server>, legacy: Arc<Legacy>, sessions: Sessions) -> Endpoint {
        Endpoint {
            server,
            legacy,
            sessions,
        }
    }

    /// What to do with `message`, which came from `peer`.
    pub fn receive(&self, peer: Peer, message: Incoming) -> Outcome {
        let session = match self.session_of(&peer) {
            Ok(session) => session,
            Err(unknown) => return Outcome::Reply(Reply::error(message.request_id(), &unknown)),
        };
        match message {
            Incoming::Response(response) => answered(session.as_deref(), response),
            Incoming::Notification(notification) => {
                if let Some(in_flight) = in_flight(&peer, session.as_ref()) {
                    cancel(in_flight, &notification);
                }
                Outcome::Accepted
            }
            Incoming::Request(request) => match session {
                Some(session) if !legacy::carries_modern_envelope(&request.params) => {
                    self.session_request(peer, session, request)
                }
                None if legacy::is_legacy_initialize(&request) => self.open_session(peer, &request),
                _ => self.request(peer, request),
            },
        }
    }

    /// The standalone stream of `peer`'s session: what its client should
    /// hear outside any request (list changes, updates of the resources it
    /// subscribed to). HTTP opens it with GET, stdio right after
    /// `initialize`.
    pub fn open_stream(&self, peer: Peer) -> Outcome {
        let session = match self.session_of(&peer) {
            Ok(Some(session)) => session,
            Ok(None) => return Outcome::Reply(Reply::error(None, &session_not_found())),
            Err(unknown) => return Outcome::Reply(Reply::error(None, &unknown)),
        };
        let Some(open) = session.open_stream() else {
            return Outcome::Reply(Reply::error(
                None,
                &RpcError::invalid_request("Conflict: this session's stream is already open")
                    .with_status(409),
            ));
        };
        // Subscribed now, not when the transport first runs the stream
        // (stdio spawns it, HTTP polls it after sending the head): a change
        // made once the client may know the stream is open reaches it.
        let changes = self.server.changes();
        let caller = peer.caller().clone();
        let views = ListViews::new(&self.server.listener(&caller));
        let legacy = self.legacy.clone();
        Outcome::Run(Call::new(Delivery::Stream, move |notifier| async move {
            let _open = open;
            if let Some(out) = notifier {
                let changes = Changes {
                    changes,
                    views,
                    caller: &caller,
                };
                legacy.session_stream(&session, changes, &out).await;
            }
            Reply::none()
        }))
    }

    /// Ends `peer`'s session at its client's request (HTTP DELETE).
    pub fn end_session(&self, peer: Peer) -> Outcome {
        let ended = match &peer {
            Peer::Http(HttpRequest {
                caller,
                session: Some(id),
                ..
            }) => self.sessions.end(id, &caller.principal).then_some(id),
            _ => None,
        };
        match ended {
            Some(id) => {
                tracing::info!(session = %id, "legacy session ended by the client");
                Outcome::Ended
            }
            None => Outcome::Reply(Reply::error(None, &session_not_found())),
        }
    }

    /// Ends sessions left idle too long, a few times per idle timeout,
    /// forever.
    pub async fn expire_idle_sessions(&self) {
        let period = (self.sessions.idle_timeout() / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(60));
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            self.sessions.expire();
        }
    }

    /// Shuts down: listen streams end (with their final result), every
    /// session ends, and requests still running finish.
    pub fn shut_down(&self) {
        self.server.shut_down();
        self.sessions.end_all();
    }

    /// The session `peer` speaks in: `Ok(None)` when none, `Err` when an
    /// HTTP request names a session that is not open, or is another
    /// principal's (told apart from nothing, so nobody learns whether
    /// another's session exists).
    fn session_of(&self, peer: &Peer) -> Result<Option<Arc<Session>>, RpcError> {
        match peer {
            Peer::Http(HttpRequest { session: None, .. }) => Ok(None),
            Peer::Http(HttpRequest {
                caller,
                session: Some(id),
                ..
            }) => self
                .sessions
                .get(id, &caller.principal)
                .map(Some)
                .ok_or_else(session_not_found),
            Peer::Process(process) => Ok(process.session.get().cloned()),
        }
    }

    /// `initialize` without a session: opens one for `peer`.
    fn open_session(&self, peer: Peer, request: &Request) -> Outcome {
        let principal = &peer.caller().principal;
        let (session, reply) = match self.legacy.initialize(request, principal) {
            Ok(opened) => opened,
            Err(reply) => return Outcome::Reply(reply),
        };
        let session = Arc::new(session);
        let kept = match &peer {
            Peer::Http(_) => self
                .sessions
                .insert(session.clone())
                .map_err(|full| refused_session(full, principal)),
            Peer::Process(process) => {
                let _ = process.session.set(session.clone());
                Ok(())
            }
        };
        match kept {
            Ok(()) => Outcome::Opened {
                session: session.id().to_owned(),
                reply,
            },
            Err(error) => Outcome::Reply(Reply::error(Some(&request.id), &error)),
        }
    }

    /// A request of a 2025-era session, served through the bridge. It may
    /// send the client requests of its own, and wait long for the answers.
    fn session_request(&self, peer: Peer, session: Arc<Session>, request: Request) -> Outcome {
        let legacy = self.legacy.clone();
        let via = match &peer {
            Peer::Http(http) => Via::http(Some(&http.headers)),
            Peer::Process(_) => Via::Stdio,
        };
        let registered = in_flight(&peer, Some(&session)).map(|r| r.register(&request.id));
        let delivery = Delivery::MayStream { long_lived: true };
        Outcome::Run(Call::new(delivery, move |notifier| async move {
            let caller = peer.caller();
            let serve = || legacy.handle(&session, &request, caller, notifier.as_ref(), via);
            within(registered, serve).await
        }))
    }

    /// A request outside any session: a 2026-07-28 request.
    fn request(&self, peer: Peer, request: Request) -> Outcome {
        if let Peer::Http(http) = &peer
            && let Some(version) = MirroredHeaders::read(&http.headers).protocol_version
            && legacy::LEGACY_VERSIONS.contains(&version)
            && !legacy::carries_modern_envelope(&request.params)
        {
            return Outcome::Reply(Reply::error(
                Some(&request.id),
                &RpcError::invalid_request(format!(
                    "Bad Request: MCP {version} requests need the Mcp-Session-Id that initialize returned; send initialize first"
                )),
            ));
        }
        // A listen request is a long-lived stream from its first message;
        // other requests send messages only if they asked for notifications.
        let delivery = if request.method == "subscriptions/listen" {
            Delivery::MayStream { long_lived: true }
        } else if envelope::opts_in_to_notifications(&request.params) {
            Delivery::MayStream { long_lived: false }
        } else {
            Delivery::Reply
        };
        let server = self.server.clone();
        let registered = in_flight(&peer, None).map(|r| r.register(&request.id));
        Outcome::Run(Call::new(delivery, move |notifier| async move {
            let headers = match &peer {
                Peer::Http(http) => Some(MirroredHeaders::read(&http.headers)),
                Peer::Process(_) => None,
            };
            let caller = peer.caller();
            let context = RequestContext {
                principal: &caller.principal,
                caller,
                headers,
            };
            let serve = || server.handle(&request, context, notifier.as_ref());
            within(registered, serve).await
        }))
    }
}

/// The client's `response` to a request of Airlock: delivered to the
/// request that awaits it, if any.
fn answered(session: Option<&Session>, response: Response) -> Outcome {
    let Some(session) = session else {
        tracing::debug!(id = %response.id, "response refused: no session, so no request was sent");
        return Outcome::Refused(Reply::error(
            None,
            &RpcError::invalid_request(
                "Invalid Request: a response belongs to a session; send it with its Mcp-Session-Id",
            ),
        ));
    };
    let id = response.id.clone();
    if session.answer(response) {
        return Outcome::Accepted;
    }
    tracing::info!(session = %session.id(), %id, "response to no awaited request refused (unknown, answered before, or given up on)");
    Outcome::Refused(Reply::error(
        None,
        &RpcError::invalid_request(format!(
            "Invalid Request: no request with id {id} awaits an answer in this session \
             (unknown, answered before, or timed out)"
        )),
    ))
}

/// The registry of requests in flight that a request from `peer` in
/// `session` joins, which `notifications/cancelled` stops: the stdio
/// process's (for both eras), a session's over HTTP; none for a 2026-07-28
/// request over HTTP, which its connection scopes.
fn in_flight<'a>(peer: &'a Peer, session: Option<&'a Arc<Session>>) -> Option<&'a Arc<InFlight>> {
    match peer {
        Peer::Process(process) => Some(&process.in_flight),
        Peer::Http(_) => session.map(|session| session.in_flight()),
    }
}

/// Takes a notification of the client: `notifications/cancelled` stops
/// the request it names; the others need nothing.
fn cancel(in_flight: &InFlight, notification: &Notification) {
    if notification.method == "notifications/cancelled"
        && let Some(id) = notification.params.get("requestId")
    {
        in_flight.cancel(id);
    }
}

/// Runs the future `serve` makes as the request `registered` names, if any:
/// a cancelled request gets no reply ([`Reply::none`]). (A maker, not a
/// future: see [`in_request_span`](crate::logging::in_request_span).)
async fn within<F: Future<Output = Reply>>(
    registered: Option<Registered>,
    serve: impl FnOnce() -> F,
) -> Reply {
    match registered {
        None => serve().await,
        Some(registered) => registered.run(serve()).await.unwrap_or_else(Reply::none),
    }
}

/// The error for a session id that names no open session of the caller.
fn session_not_found() -> RpcError {
    RpcError::new(
        SESSION_NOT_FOUND,
        "Session not found: it ended or expired; send initialize to start a new one",
    )
    .with_status(404)
}

/// The error for an `initialize` whose session the table cannot take.
fn refused_session(full: Full, principal: &str) -> RpcError {
    match full {
        Full::Table { max } => {
            tracing::warn!(max, "initialize refused: too many sessions");
            RpcError::unavailable(format!(
                "Server busy: {max} sessions are open, the most allowed; try again later"
            ))
        }
        Full::Principal { max } => {
            tracing::info!(
                max,
                principal,
                "initialize refused: the caller's sessions are at --max-sessions-per-principal"
            );
            crate::audit::session_over_quota(principal, "sessions-per-principal");
            RpcError::quota_exceeded(format!(
                "Too many sessions: a caller may have at most {max} open; end one (DELETE) \
                 or let one expire, then initialize again"
            ))
            .with_data(json!({ "limit": "sessions-per-principal", "max": max }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_request_is_held_once() {
        let in_flight = Arc::new(InFlight::default());
        let registered = Some(in_flight.register(&serde_json::json!(1)));
        let served = within(registered, || crate::held_once::four_kib(Reply::none()));
        crate::held_once::assert_held_once(&served);
    }
}
