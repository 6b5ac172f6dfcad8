//! Streamable HTTP (MCP 2026-07-28, and 2025-era sessions) on axum: the
//! framing of messages and their answers. What a message means, and which
//! protocol era serves it, is the [`Endpoint`]'s to decide.
//!
//! One path, `/mcp`: POST, plus GET and DELETE for sessions; its server card
//! on GET `/mcp/server-card` ([`server_card`]); and, when configured, the
//! OAuth protected-resource metadata (RFC 9728) on GET
//! `/.well-known/oauth-protected-resource[/mcp]`. The last two are served
//! without a token.
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
//! Legacy clients (MCP 2025-era) share the path, and the
//! [`endpoint`](crate::endpoint) decides which era a message is: the session
//! an `initialize` opens is named in the reply's `Mcp-Session-Id`, and a
//! request with that header is the session's (an unknown, ended or expired id, or another principal's, gets
//! 404). A session's POSTs may carry the client's responses to requests
//! Airlock sent it (202); GET opens the session's standalone stream; DELETE
//! ends it.
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
use http_body_util::LengthLimitError;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use self::admission::admitted;
use crate::access::Caller;
use crate::auth::metadata::WELL_KNOWN_PATH;
use crate::endpoint::{BoxedReply, Call, Delivery, Endpoint, HttpRequest, Outcome, Peer};
use crate::protocol::Reply;
use crate::protocol::jsonrpc::{self, RpcError};

pub mod admission;
pub mod connections;
pub mod health;
pub mod self_wake;
pub mod server_card;

pub use admission::Admission;
pub use connections::{BodyTimeout, ConnectionLimits};
pub use health::{Health, health_routes};
pub use server_card::{CardSettings, ServerCard};

/// Settings of the HTTP transport.
#[derive(Debug)]
pub struct HttpSettings {
    /// Who may reach the endpoint: hosts, origins, authentication, body
    /// limit (see [`admission`]).
    pub admission: Admission,
    /// Connection timeouts and cap.
    pub limits: ConnectionLimits,
    /// What the probes report; drained when shutting down.
    pub health: Arc<Health>,
    /// The server card served at [`server_card::PATH`].
    pub card: Arc<ServerCard>,
}

/// The host names a local server accepts by default.
pub const LOCAL_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

struct App {
    endpoint: Arc<Endpoint>,
    /// The body limit admission applies, for the 413's message.
    max_body_bytes: usize,
}

/// Serves `/mcp` and the probes on `listener`; once `shutdown` completes,
/// drains, shuts `endpoint` down and finishes the requests in flight (see
/// the module docs).
pub async fn serve(
    endpoint: Arc<Endpoint>,
    settings: HttpSettings,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let HttpSettings {
        admission,
        limits,
        health,
        card,
    } = settings;
    let expiry = {
        let endpoint = endpoint.clone();
        tokio::spawn(async move { endpoint.expire_idle_sessions().await })
    };
    let router = router(endpoint.clone(), admission, card).merge(health_routes(health.clone()));
    let shutdown = {
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
            expiry.abort();
            endpoint.shut_down();
        }
    };
    connections::serve(listener, router, limits, health.draining(), shutdown).await
}

/// The routes of `/mcp`, its server card (and the OAuth metadata, when
/// configured), every one behind `admission`: what [`serve`] serves,
/// without the probes and the listener, so that it can be driven
/// in-process too.
pub fn router(endpoint: Arc<Endpoint>, admission: Admission, card: Arc<ServerCard>) -> Router {
    let app = Arc::new(App {
        endpoint,
        max_body_bytes: admission.max_body_bytes,
    });
    let mcp = Router::new().route(
        "/mcp",
        post(handle_post)
            .get(handle_get)
            .delete(handle_delete)
            .fallback(method_not_allowed),
    );
    let mut public = Router::new().route(
        server_card::PATH,
        get(move |headers: HeaderMap| async move { card.respond(&headers) })
            .options(|| async { ServerCard::preflight() }),
    );
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
    admitted(Arc::new(admission), mcp, public).with_state(app)
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
    if let Some(challenge) = reply.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// A `Retry-After` value: whole seconds, rounded up, at least 1.
fn whole_seconds(after: Duration) -> u64 {
    let seconds = after.as_nanos().div_ceil(1_000_000_000);
    u64::try_from(seconds).unwrap_or(u64::MAX).max(1)
}

fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream") || v.contains("*/*"))
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

/// The caller admission found for `request` (see [`admission`]), taken
/// out of it.
fn admitted_caller(request: &mut axum::extract::Request) -> Option<Arc<Caller>> {
    request.extensions_mut().remove::<Arc<Caller>>()
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

/// The peer of an HTTP request: who admission found, the headers, and the
/// session `Mcp-Session-Id` names.
fn http_peer(caller: Arc<Caller>, headers: HeaderMap) -> Peer {
    // A value that is not visible ASCII names no session: left empty, it
    // matches none.
    let session = headers
        .get(&SESSION_HEADER)
        .map(|id| id.to_str().unwrap_or_default().to_owned());
    Peer::Http(HttpRequest {
        caller,
        headers,
        session,
    })
}

/// GET with a session id: the session's standalone stream (list changes,
/// resource updates). Without one, 405: the 2026-07-28 wire has no GET.
async fn handle_get(State(app): State<Arc<App>>, mut request: axum::extract::Request) -> Response {
    let Some(caller) = admitted_caller(&mut request) else {
        return not_admitted();
    };
    let headers = request.headers();
    if !headers.contains_key(&SESSION_HEADER) {
        return method_not_allowed().await;
    }
    let event_stream = accepts_event_stream(headers);
    let peer = http_peer(caller, headers.clone());
    respond(app.endpoint.open_stream(peer), event_stream).await
}

/// DELETE with a session id ends the session.
async fn handle_delete(
    State(app): State<Arc<App>>,
    mut request: axum::extract::Request,
) -> Response {
    let Some(caller) = admitted_caller(&mut request) else {
        return not_admitted();
    };
    let headers = request.headers();
    if !headers.contains_key(&SESSION_HEADER) {
        return method_not_allowed().await;
    }
    let peer = http_peer(caller, headers.clone());
    respond(app.endpoint.end_session(peer), false).await
}

async fn handle_post(State(app): State<Arc<App>>, mut request: axum::extract::Request) -> Response {
    // Taken apart rather than extracted: the `HeaderMap` extractor clones
    // every header of every request.
    let Some(caller) = admitted_caller(&mut request) else {
        return not_admitted();
    };
    let (parts, body) = request.into_parts();
    // Admission bounded the body to the limit already.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => return unread_body(&*error.into_inner(), app.max_body_bytes),
    };
    let message = match jsonrpc::decode(&bytes) {
        Ok(message) => message,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.id.as_ref(), &e.error),
    };
    let event_stream = accepts_event_stream(&parts.headers);
    let peer = http_peer(caller, parts.headers);
    respond(app.endpoint.receive(peer, message), event_stream).await
}

/// The response for what the endpoint made of a request; `event_stream`:
/// the client accepts an SSE stream.
async fn respond(outcome: Outcome, event_stream: bool) -> Response {
    match outcome {
        Outcome::Accepted => StatusCode::ACCEPTED.into_response(),
        Outcome::Ended => StatusCode::OK.into_response(),
        Outcome::Reply(reply) | Outcome::Refused(reply) => reply_response(reply),
        Outcome::Opened { session, reply } => {
            let mut response = reply_response(reply);
            let id = HeaderValue::from_str(&session).expect("session ids are visible ASCII");
            response.headers_mut().insert(SESSION_HEADER.clone(), id);
            response
        }
        Outcome::Run(call) => match call.delivery {
            Delivery::MayStream { long_lived } if event_stream => {
                stream_or_reply(call, long_lived.then_some(KEEP_ALIVE)).await
            }
            Delivery::Stream if event_stream => open_event_stream(call, Some(KEEP_ALIVE)),
            Delivery::Stream => error_response(
                StatusCode::NOT_ACCEPTABLE,
                None,
                &RpcError::invalid_request(
                    "Not Acceptable: the session stream is text/event-stream",
                ),
            ),
            Delivery::Reply | Delivery::MayStream { .. } => reply_response(call.run(None).await),
        },
    }
}

/// How often an idle long-lived stream (`subscriptions/listen`, a session's
/// stream, a session's request waiting for the client's answer) gets an SSE
/// comment, so that proxies and clients do not take it for dead.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// Answers with JSON if the call finishes before its first notification,
/// otherwise with an SSE stream of the notifications and then the reply.
/// With `keep_alive`, an idle stream gets a comment line that often.
async fn stream_or_reply(call: Call, keep_alive: Option<std::time::Duration>) -> Response {
    let (notifier, mut notes) = mpsc::channel(64);
    let mut call = call.run(Some(notifier));
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
fn open_event_stream(call: Call, keep_alive: Option<std::time::Duration>) -> Response {
    let (notifier, notes) = mpsc::channel(64);
    sse_response(EventStream::new(
        call.run(Some(notifier)),
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
    call: Option<BoxedReply>,
    notes: mpsc::Receiver<Vec<u8>>,
    reply: Option<Vec<u8>>,
    first: Option<Vec<u8>>,
    keep_alive: Option<Pin<Box<tokio::time::Interval>>>,
}

impl EventStream {
    fn new(
        call: BoxedReply,
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
