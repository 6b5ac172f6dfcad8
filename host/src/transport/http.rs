//! Streamable HTTP (MCP 2026-07-28, and 2025-era sessions) on axum.
//!
//! One endpoint, `/mcp`: POST, plus GET and DELETE for sessions; and, when
//! configured, the OAuth protected-resource metadata (RFC 9728) on GET
//! `/.well-known/oauth-protected-resource[/mcp]`, served without a token.
//! Before a body is decoded: the `Host` and `Origin` headers are checked
//! against an allow-list (DNS-rebinding protection), the bearer token is
//! checked when authentication is configured (tokens file, JWT), and the
//! body is read up to a size limit (413 beyond it) and within the body
//! timeout (408, and the connection closes); a body that cannot be read (a
//! malformed chunked encoding, an early end) is a 400 parse error.
//!
//! A request that opted in to notifications (a progress token or a log
//! level) gets an SSE stream once its first notification exists; a request
//! that finishes before any notification gets a plain JSON reply, so its HTTP
//! status can still say what kind of error it was. Dropping the response
//! (the client went away) drops the call, which stops the guest.
//!
//! Legacy clients (MCP 2025-era, see [`legacy`](crate::legacy))
//! share the endpoint: an `initialize` without the 2026-07-28 envelope opens
//! a session and its reply carries `Mcp-Session-Id`; a request with that
//! header is the session's (an unknown, ended or expired id, or another
//! principal's, gets 404). A session's POSTs may carry the client's
//! responses to requests Airlock sent it (202); GET opens the session's
//! standalone stream; DELETE ends it. Idle sessions expire, and their number
//! is bounded.
//!
//! Connections are accepted by [`connections`]: header-read, body and idle
//! timeouts, a cap on open connections, graceful shutdown.
//!
//! Beside the endpoint, outside admission: the probes `/healthz` and
//! `/readyz` ([`health`]). Shutting down, the server first drains: readiness
//! turns off and every response closes its connection, for the drain delay;
//! then it stops accepting, closes idle connections and waits (at most the
//! shutdown timeout) for the requests in flight.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::Stream;
use futures_util::future::Abortable;
use http_body_util::LengthLimitError;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use self::admission::{Principal, admitted};
use crate::auth::metadata::WELL_KNOWN_PATH;
use crate::legacy::{self, Full, Legacy, Session, Sessions};
use crate::protocol::envelope::{self, MirroredHeaders};
use crate::protocol::jsonrpc::{self, Incoming, Request, RpcError};
use crate::protocol::{Notifier, Reply, RequestContext, Server};
use crate::telemetry::Via;

pub mod admission;
pub mod connections;
pub mod health;

pub use admission::Admission;
pub use connections::{BodyTimeout, ConnectionLimits};
pub use health::{Health, health_routes};

/// Settings of the HTTP transport.
#[derive(Debug)]
pub struct HttpSettings {
    /// Who may reach the endpoint: hosts, origins, authentication, body
    /// limit (see [`admission`]).
    pub admission: Admission,
    /// Connection timeouts and cap.
    pub limits: ConnectionLimits,
    /// The legacy sessions, with their bounds.
    pub sessions: Sessions,
    /// What serves them.
    pub legacy: Arc<Legacy>,
    /// What the probes report; drained when shutting down.
    pub health: Arc<Health>,
}

/// The host names a local server accepts by default.
pub const LOCAL_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

struct App {
    server: Arc<Server>,
    sessions: Sessions,
    legacy: Arc<Legacy>,
    /// The body limit admission applies, for the 413's message.
    max_body_bytes: usize,
}

/// Serves `/mcp` and the probes on `listener`; once `shutdown` completes,
/// drains, shuts `server` down and finishes the requests in flight (see the
/// module docs).
pub async fn serve(
    server: Arc<Server>,
    settings: HttpSettings,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let HttpSettings {
        admission,
        limits,
        sessions,
        legacy,
        health,
    } = settings;
    let admission = Arc::new(admission);
    let app = Arc::new(App {
        server,
        sessions,
        legacy,
        max_body_bytes: admission.max_body_bytes,
    });
    let expiry = tokio::spawn(expire_sessions(app.clone()));
    let shutdown = {
        let app = app.clone();
        let health = health.clone();
        async move {
            shutdown.await;
            health.drain();
            if !limits.drain_delay.is_zero() {
                tracing::info!(
                    delay_ms = limits.drain_delay.as_millis(),
                    "draining: /readyz answers 503, requests are still served (--shutdown-drain-delay)"
                );
                tokio::time::sleep(limits.drain_delay).await;
            }
            tracing::info!("shutting down: finishing the requests in flight");
            app.server.shut_down();
            expiry.abort();
            app.sessions.end_all();
        }
    };
    let mcp = Router::new().route(
        "/mcp",
        post(handle_post)
            .get(handle_get)
            .delete(handle_delete)
            .fallback(method_not_allowed),
    );
    let mut public = Router::new();
    if let Some(metadata) = admission.auth.metadata().cloned() {
        let metadata = Arc::new(metadata);
        let document = move |request: axum::extract::Request| {
            let metadata = metadata.clone();
            async move {
                if metadata.serves(request.uri().path()) {
                    json_response(StatusCode::OK, metadata.document().to_vec())
                } else {
                    StatusCode::NOT_FOUND.into_response()
                }
            }
        };
        public = public
            .route(WELL_KNOWN_PATH, get(document.clone()))
            .route(&format!("{WELL_KNOWN_PATH}/{{*rest}}"), get(document));
    }
    let router = admitted(admission, mcp, public)
        .with_state(app)
        .merge(health_routes(health.clone()));
    connections::serve(listener, router, limits, health.draining(), shutdown).await
}

/// Ends idle sessions, checking a few times per idle timeout.
async fn expire_sessions(app: Arc<App>) {
    let sessions = &app.sessions;
    let period =
        (sessions.idle_timeout() / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        sessions.expire();
    }
}

async fn method_not_allowed() -> Response {
    let mut response = error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        &RpcError::invalid_request(
            "Method not allowed: this endpoint accepts POST (MCP 2026-07-28); GET and DELETE need \
             the Mcp-Session-Id of a session opened with initialize",
        ),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

fn error_response(
    status: StatusCode,
    id: Option<&serde_json::Value>,
    error: &RpcError,
) -> Response {
    json_response(status, jsonrpc::encode_error(id, error))
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

fn reply_response(reply: Reply) -> Response {
    if reply.body.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let mut response = json_response(
        StatusCode::from_u16(reply.http_status).unwrap_or(StatusCode::OK),
        reply.body,
    );
    if let Some(after) = reply.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(whole_seconds(after)));
    }
    response
}

/// A `Retry-After` value: whole seconds, rounded up, at least 1.
fn whole_seconds(after: Duration) -> u64 {
    let seconds = after.as_nanos().div_ceil(1_000_000_000);
    u64::try_from(seconds).unwrap_or(u64::MAX).max(1)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    // A value with bytes outside visible ASCII can never match a body value
    // (those travel Base64-encoded), so it is read as a value that mismatches.
    headers
        .get(name)
        .map(|v| v.to_str().map(str::trim).unwrap_or("\u{fffd}"))
}

fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream") || v.contains("*/*"))
}

impl App {
    /// The session a request names in `Mcp-Session-Id`: `Ok(None)` when it
    /// names none, `Err` when it is not an open session of `principal` (see
    /// [`session_not_found`]).
    fn session(&self, headers: &HeaderMap, principal: &str) -> Result<Option<Arc<Session>>, ()> {
        let Some(id) = headers.get(&SESSION_HEADER) else {
            return Ok(None);
        };
        id.to_str()
            .ok()
            .and_then(|id| self.sessions.get(id, principal))
            .map(Some)
            .ok_or(())
    }
}

/// The 413 for a body over `limit` bytes.
fn body_too_large(limit: usize) -> Response {
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        &RpcError::invalid_request(format!("Request body exceeds the {limit}-byte limit")),
    )
}

/// The reply to a request whose body could not be read whole: over the
/// size `limit` (413), too slow ([`BodyTimeout`], 408), or unreadable, like
/// a malformed chunked encoding or an early end (400, parse error). The
/// last two also close the connection: the rest of the request can no
/// longer be told from the next one.
fn unread_body(error: &(dyn std::error::Error + 'static), limit: usize) -> Response {
    let causes = || std::iter::successors(Some(error), |e| e.source());
    if causes().any(|e| e.is::<LengthLimitError>()) {
        return body_too_large(limit);
    }
    let mut response = match causes().find_map(|e| e.downcast_ref::<BodyTimeout>()) {
        Some(timeout) => {
            tracing::info!("request refused: {timeout} (--http-body-timeout)");
            error_response(
                StatusCode::REQUEST_TIMEOUT,
                None,
                &RpcError::invalid_request(format!("Request Timeout: {timeout}")),
            )
        }
        None => {
            let cause = causes().last().unwrap_or(error);
            tracing::info!(%cause, "request refused: unreadable body");
            error_response(
                StatusCode::BAD_REQUEST,
                None,
                &RpcError::parse_error(format!(
                    "Parse error: the request body could not be read ({cause})"
                )),
            )
        }
    };
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The principal admission found for `request` (see [`admission`]), taken
/// out of it.
fn admitted_principal(request: &mut axum::extract::Request) -> Option<String> {
    request
        .extensions_mut()
        .remove::<Principal>()
        .map(|Principal(principal)| principal)
}

/// What a handler answers if a request reached it without admission: a
/// bug, refused rather than served as nobody.
fn not_admitted() -> Response {
    tracing::error!("a request reached a handler without admission");
    error_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        &RpcError::internal("the request was not admitted"),
    )
}

/// The header that names a legacy session.
static SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// The headers that mirror a request's body (MCP 2026-07-28), named once
/// rather than parsed from text at every lookup.
static PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
static METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
static NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// The 404 for a session id that names no open session, echoing the id of
/// the request it answers, if any.
fn session_not_found(id: Option<&serde_json::Value>) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        id,
        &RpcError::new(
            SESSION_NOT_FOUND,
            "Session not found: it ended or expired; send initialize to start a new one",
        ),
    )
}

/// JSON-RPC code of [`session_not_found`], as 2025-era servers use it.
const SESSION_NOT_FOUND: i32 = -32001;

/// GET with a session id: the session's standalone stream (list changes,
/// resource updates). Without one, 405: the 2026-07-28 wire has no GET.
async fn handle_get(State(app): State<Arc<App>>, mut request: axum::extract::Request) -> Response {
    let Some(principal) = admitted_principal(&mut request) else {
        return not_admitted();
    };
    let headers = request.headers();
    let session = match app.session(headers, &principal) {
        Ok(Some(session)) => session,
        Ok(None) => return method_not_allowed().await,
        Err(()) => return session_not_found(None),
    };
    if !accepts_event_stream(headers) {
        return error_response(
            StatusCode::NOT_ACCEPTABLE,
            None,
            &RpcError::invalid_request("Not Acceptable: the session stream is text/event-stream"),
        );
    }
    let Some(open) = session.open_stream() else {
        return error_response(
            StatusCode::CONFLICT,
            None,
            &RpcError::invalid_request("Conflict: this session's stream is already open"),
        );
    };
    let legacy = app.legacy.clone();
    event_stream(
        move |notifier: Option<Notifier>| async move {
            let _open = open;
            if let Some(out) = notifier {
                legacy.session_stream(&session, &out).await;
            }
            Reply::none()
        },
        Some(KEEP_ALIVE),
    )
}

/// DELETE with a session id ends the session.
async fn handle_delete(
    State(app): State<Arc<App>>,
    mut request: axum::extract::Request,
) -> Response {
    let Some(principal) = admitted_principal(&mut request) else {
        return not_admitted();
    };
    let headers = request.headers();
    let Some(id) = headers.get(&SESSION_HEADER) else {
        return method_not_allowed().await;
    };
    match id.to_str() {
        Ok(id) if app.sessions.end(id, &principal) => {
            tracing::info!(session = %id, "legacy session ended by the client");
            StatusCode::OK.into_response()
        }
        _ => session_not_found(None),
    }
}

async fn handle_post(State(app): State<Arc<App>>, mut request: axum::extract::Request) -> Response {
    // Taken apart rather than extracted: the `HeaderMap` extractor clones
    // every header of every request.
    let Some(principal) = admitted_principal(&mut request) else {
        return not_admitted();
    };
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    // Admission bounded the body to the limit already.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => return unread_body(&*error.into_inner(), app.max_body_bytes),
    };
    let message = match jsonrpc::decode(&bytes) {
        Ok(message) => message,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.id.as_ref(), &e.error),
    };
    let session = match app.session(&headers, &principal) {
        Ok(session) => session,
        Err(()) => return session_not_found(message.request_id()),
    };
    if let Some(session) = session {
        return session_post(&app, session, &headers, message).await;
    }
    let request = match message {
        Incoming::Request(request) => request,
        Incoming::Notification(_) => return StatusCode::ACCEPTED.into_response(),
        Incoming::Response(_) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                None,
                &RpcError::invalid_request(
                    "Invalid Request: a response belongs to a session; send it with its Mcp-Session-Id",
                ),
            );
        }
    };
    if legacy::is_legacy_initialize(&request) {
        return open_session(&app, &request, &principal);
    }
    if let Some(version) = header_str(&headers, &PROTOCOL_VERSION_HEADER)
        && legacy::LEGACY_VERSIONS.contains(&version)
        && !legacy::carries_modern_envelope(&request.params)
    {
        return error_response(
            StatusCode::BAD_REQUEST,
            Some(&request.id),
            &RpcError::invalid_request(format!(
                "Bad Request: MCP {version} requests need the Mcp-Session-Id that initialize returned; send initialize first"
            )),
        );
    }
    // A listen request is a long-lived stream from its first message; other
    // requests stream only if they asked for notifications.
    let listening = request.method == "subscriptions/listen";
    let streaming = accepts_event_stream(&headers)
        && (listening || envelope::opts_in_to_notifications(&request.params));
    let server = app.server.clone();
    let run = move |notifier: Option<Notifier>| async move {
        let mirrored = MirroredHeaders {
            protocol_version: header_str(&headers, &PROTOCOL_VERSION_HEADER),
            method: header_str(&headers, &METHOD_HEADER),
            name: header_str(&headers, &NAME_HEADER),
            all: Some(&headers),
        };
        let context = RequestContext {
            principal: &principal,
            headers: Some(mirrored),
        };
        server.handle(&request, context, notifier.as_ref()).await
    };
    if streaming {
        let keep_alive = listening.then_some(KEEP_ALIVE);
        stream_or_reply(run, keep_alive).await
    } else {
        reply_response(run(None).await)
    }
}

/// `initialize` without a session: opens one, and names it in the reply.
fn open_session(app: &App, request: &Request, principal: &str) -> Response {
    let (session, reply) = match app.legacy.initialize(request, principal) {
        Ok(opened) => opened,
        Err(reply) => return reply_response(reply),
    };
    let id = HeaderValue::from_str(session.id()).expect("session ids are visible ASCII");
    if let Err(full) = app.sessions.insert(Arc::new(session)) {
        let error = match full {
            Full::Table { max } => {
                tracing::warn!(max, "initialize refused: too many sessions");
                RpcError::internal(format!(
                    "Server busy: {max} sessions are open, the most allowed; try again later"
                ))
                .with_status(503)
            }
            Full::Principal { max } => {
                tracing::info!(
                    max,
                    principal,
                    "initialize refused: the caller's sessions are at --max-sessions-per-principal"
                );
                RpcError::quota_exceeded(format!(
                    "Too many sessions: a caller may have at most {max} open; end one (DELETE) \
                     or let one expire, then initialize again"
                ))
                .with_data(serde_json::json!({ "limit": "sessions-per-principal", "max": max }))
            }
        };
        let status = StatusCode::from_u16(error.http_status).unwrap_or(StatusCode::OK);
        return error_response(status, Some(&request.id), &error);
    }
    let mut response = reply_response(reply);
    response.headers_mut().insert(SESSION_HEADER.clone(), id);
    response
}

/// A POST of a legacy session: the client's answer to a request Airlock
/// sent it, a notification, or a request (streamed, so that Airlock can send
/// its own requests before the reply, and cancellable).
async fn session_post(
    app: &App,
    session: Arc<Session>,
    headers: &HeaderMap,
    message: Incoming,
) -> Response {
    let request = match message {
        Incoming::Response(response) => {
            let id = response.id.clone();
            if session.answer(response) {
                return StatusCode::ACCEPTED.into_response();
            }
            tracing::info!(session = %session.id(), %id, "response to no awaited request refused");
            return error_response(
                StatusCode::BAD_REQUEST,
                None,
                &RpcError::invalid_request(format!(
                    "Invalid Request: no request with id {id} awaits an answer in this session \
                     (unknown, answered before, or timed out)"
                )),
            );
        }
        Incoming::Notification(notification) => {
            app.legacy.notification(&session, &notification);
            return StatusCode::ACCEPTED.into_response();
        }
        Incoming::Request(request) => request,
    };
    let legacy = app.legacy.clone();
    let via = Via::http(Some(headers));
    let run = move |notifier: Option<Notifier>| async move {
        let (registration, _tracked) = session.track(&request.id);
        let serve = legacy.handle(&session, &request, notifier.as_ref(), via);
        Abortable::new(serve, registration)
            .await
            .unwrap_or_else(|_cancelled| Reply::none())
    };
    if accepts_event_stream(headers) {
        // Kept alive: the stream may wait minutes for a person to answer.
        stream_or_reply(run, Some(KEEP_ALIVE)).await
    } else {
        reply_response(run(None).await)
    }
}

/// How often an idle long-lived stream (`subscriptions/listen`, a session's
/// stream, a session's request waiting for the client's answer) gets an SSE
/// comment, so that proxies and clients do not take it for dead.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// Answers with JSON if the call finishes before its first notification,
/// otherwise with an SSE stream of the notifications and then the reply.
/// With `keep_alive`, an idle stream gets a comment line that often.
async fn stream_or_reply<F>(
    call: impl FnOnce(Option<Notifier>) -> F,
    keep_alive: Option<std::time::Duration>,
) -> Response
where
    F: Future<Output = Reply> + Send + 'static,
{
    let (notifier, mut notes) = mpsc::channel(64);
    let mut call: Pin<Box<dyn Future<Output = Reply> + Send>> = Box::pin(call(Some(notifier)));
    let first = tokio::select! {
        biased;
        note = notes.recv() => note,
        reply = &mut call => match notes.try_recv() {
            Err(_) => return reply_response(reply),
            Ok(first) => {
                let stream = EventStream { call: None, notes, reply: Some(reply.body), first: Some(first), keep_alive: None };
                return sse_response(stream);
            }
        },
    };
    sse_response(EventStream::new(call, notes, first, keep_alive))
}

/// Answers with an SSE stream at once (headers first), carrying the call's
/// notifications and then its reply.
fn event_stream<F>(
    call: impl FnOnce(Option<Notifier>) -> F,
    keep_alive: Option<std::time::Duration>,
) -> Response
where
    F: Future<Output = Reply> + Send + 'static,
{
    let (notifier, notes) = mpsc::channel(64);
    sse_response(EventStream::new(
        Box::pin(call(Some(notifier))),
        notes,
        None,
        keep_alive,
    ))
}

fn sse_response(stream: EventStream) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The SSE body: drives the call, yields its notifications as they come,
/// then its reply, then ends.
struct EventStream {
    call: Option<Pin<Box<dyn Future<Output = Reply> + Send>>>,
    notes: mpsc::Receiver<Vec<u8>>,
    reply: Option<Vec<u8>>,
    first: Option<Vec<u8>>,
    keep_alive: Option<Pin<Box<tokio::time::Interval>>>,
}

impl EventStream {
    fn new(
        call: Pin<Box<dyn Future<Output = Reply> + Send>>,
        notes: mpsc::Receiver<Vec<u8>>,
        first: Option<Vec<u8>>,
        keep_alive: Option<std::time::Duration>,
    ) -> Self {
        let keep_alive = keep_alive.map(|period| {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            Box::pin(ticks)
        });
        EventStream {
            call: Some(call),
            notes,
            reply: None,
            first,
            keep_alive,
        }
    }
}

fn event(message: Vec<u8>) -> Bytes {
    let mut frame = Vec::with_capacity(message.len() + 8);
    frame.extend_from_slice(b"data: ");
    frame.extend_from_slice(&message);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

impl Stream for EventStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(event(first))));
        }
        if let Some(call) = self.call.as_mut()
            && let Poll::Ready(reply) = call.as_mut().poll(cx)
        {
            self.call = None;
            self.reply = Some(reply.body);
        }
        if self.call.is_some() {
            if let Poll::Ready(Some(note)) = self.notes.poll_recv(cx) {
                return Poll::Ready(Some(Ok(event(note))));
            }
            if let Some(ticks) = self.keep_alive.as_mut()
                && ticks.as_mut().poll_tick(cx).is_ready()
            {
                return Poll::Ready(Some(Ok(Bytes::from_static(b":\n\n"))));
            }
            return Poll::Pending;
        }
        if let Ok(note) = self.notes.try_recv() {
            return Poll::Ready(Some(Ok(event(note))));
        }
        // An empty reply (a cancelled request, an ended session stream) ends
        // the stream without a message.
        Poll::Ready(
            self.reply
                .take()
                .filter(|reply| !reply.is_empty())
                .map(|reply| Ok(event(reply))),
        )
    }
}
