//! Streamable HTTP (MCP 2026-07-28) on axum.
//!
//! One endpoint, `/mcp`, POST only; plus, when configured, the OAuth
//! protected-resource metadata (RFC 9728) on GET
//! `/.well-known/oauth-protected-resource[/mcp]`, served without a token.
//! Before a body is decoded: the `Host` and `Origin` headers are checked
//! against an allow-list (DNS-rebinding protection), the bearer token is
//! checked when authentication is configured (tokens file, JWT), and the
//! body is read up to a size limit.
//!
//! A request that opted in to notifications (a progress token or a log
//! level) gets an SSE stream once its first notification exists; a request
//! that finishes before any notification gets a plain JSON reply, so its HTTP
//! status can still say what kind of error it was. Dropping the response
//! (the client went away) drops the call, which stops the guest.
//!
//! Connections are accepted by [`connections`]: header-read and idle
//! timeouts, a cap on open connections, graceful shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::Stream;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::auth::metadata::WELL_KNOWN_PATH;
use crate::auth::{Authenticator, Refusal};
use crate::protocol::envelope::{self, MirroredHeaders};
use crate::protocol::jsonrpc::{self, Incoming, RpcError};
use crate::protocol::{Notifier, Reply, RequestContext, Server};

pub mod connections;

pub use connections::ConnectionLimits;

/// Settings of the HTTP transport.
#[derive(Debug)]
pub struct HttpSettings {
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Host names accepted in `Host` and `Origin` (any port).
    pub allowed_hosts: Vec<String>,
    /// Extra exact origins accepted in `Origin`, e.g. `https://app.example.com`.
    pub allowed_origins: Vec<String>,
    /// Who may call; [`Authenticator::open`] serves everyone as
    /// [`crate::auth::ANONYMOUS`].
    pub auth: Authenticator,
    /// Connection timeouts and cap.
    pub limits: ConnectionLimits,
}

/// Connection options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectionOptions {
    /// Time a connection has to send a complete request line and headers, in milliseconds; slower
    /// connections are closed.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub http_header_timeout_ms: u64,
    /// How long a keep-alive connection with no request in progress stays open, in milliseconds.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub http_idle_timeout_ms: u64,
    /// Most HTTP connections open at once; further connections wait (unaccepted) until one closes.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
}

impl ConnectionOptions {
    /// The limits these options set.
    pub fn limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: Duration::from_millis(self.http_header_timeout_ms),
            idle_timeout: Duration::from_millis(self.http_idle_timeout_ms),
            max_connections: self.max_connections,
        }
    }
}

/// The host names a local server accepts by default.
pub const LOCAL_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

struct App {
    server: Arc<Server>,
    settings: HttpSettings,
}

/// Serves `/mcp` on `listener` until `shutdown` completes, then finishes
/// the requests in flight.
pub async fn serve(
    server: Arc<Server>,
    settings: HttpSettings,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = settings.limits;
    let has_metadata = settings.auth.metadata().is_some();
    let app = Arc::new(App { server, settings });
    let mut router = Router::new().route("/mcp", post(handle_post).fallback(method_not_allowed));
    if has_metadata {
        router = router.route(WELL_KNOWN_PATH, get(handle_metadata)).route(
            &format!("{WELL_KNOWN_PATH}/{{*rest}}"),
            get(handle_metadata),
        );
    }
    connections::serve(listener, router.with_state(app), limits, shutdown).await
}

/// The protected-resource metadata document (no token needed).
async fn handle_metadata(State(app): State<Arc<App>>, request: axum::extract::Request) -> Response {
    if let Err(message) = app.check_host_and_origin(request.headers()) {
        tracing::info!(%message, "request refused");
        return error_response(
            StatusCode::FORBIDDEN,
            None,
            &RpcError::invalid_request(message),
        );
    }
    match app.settings.auth.metadata() {
        Some(metadata) if metadata.serves(request.uri().path()) => {
            json_response(StatusCode::OK, metadata.document().to_vec())
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A 401 with its `WWW-Authenticate` challenge.
fn unauthorized(app: &App, refusal: Refusal) -> Response {
    tracing::debug!(reason = refusal.description(), "request not authenticated");
    let mut response = error_response(
        StatusCode::UNAUTHORIZED,
        None,
        &RpcError::invalid_request(format!("Unauthorized: {}", refusal.description())),
    );
    let challenge = HeaderValue::from_str(&app.settings.auth.challenge(refusal))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer realm=\"airlock\""));
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, challenge);
    response
}

async fn method_not_allowed() -> Response {
    let mut response = error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        &RpcError::invalid_request(
            "Method not allowed: this endpoint accepts POST only (MCP 2026-07-28)",
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
    json_response(
        StatusCode::from_u16(reply.http_status).unwrap_or(StatusCode::OK),
        reply.body,
    )
}

/// The host part of `host[:port]` (keeps the brackets of an IPv6 literal).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

impl App {
    fn host_allowed(&self, host: &str) -> bool {
        let host = host_name(host);
        self.settings
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }

    /// DNS-rebinding protection: `Host` must name an allowed host, and an
    /// `Origin`, when present, must be an allowed host or an allowed origin.
    fn check_host_and_origin(&self, headers: &HeaderMap) -> Result<(), String> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !self.host_allowed(host) {
            return Err(format!(
                "Host '{host}' is not allowed; start airlock with --allowed-host to accept it"
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
            let exact = self.settings.allowed_origins.iter().any(|o| o == origin);
            if !exact && !self.host_allowed(authority) {
                return Err(format!(
                    "Origin '{origin}' is not allowed; start airlock with --allowed-origin to accept it"
                ));
            }
        }
        Ok(())
    }

    fn principal(&self, headers: &HeaderMap) -> Result<String, Refusal> {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok());
        self.settings.auth.authenticate(authorization)
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
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

async fn handle_post(State(app): State<Arc<App>>, request: axum::extract::Request) -> Response {
    // Taken apart rather than extracted: the `HeaderMap` extractor clones
    // every header of every request.
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if let Err(message) = app.check_host_and_origin(&headers) {
        tracing::info!(%message, "request refused");
        return error_response(
            StatusCode::FORBIDDEN,
            None,
            &RpcError::invalid_request(message),
        );
    }
    let principal = match app.principal(&headers) {
        Ok(principal) => principal,
        Err(refusal) => return unauthorized(&app, refusal),
    };
    if let Some(content_type) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        && !content_type
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("application/json")
    {
        return error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            &RpcError::invalid_request(format!(
                "Unsupported Content-Type '{content_type}': send application/json"
            )),
        );
    }
    let limit = app.settings.max_body_bytes;
    let too_large = || {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            &RpcError::invalid_request(format!("Request body exceeds the {limit}-byte limit")),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return too_large();
    }
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => return too_large(),
    };
    let request = match jsonrpc::decode(&bytes) {
        Ok(Incoming::Request(request)) => request,
        Ok(Incoming::Notification(_)) => return StatusCode::ACCEPTED.into_response(),
        Ok(Incoming::Response) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                None,
                &RpcError::invalid_request(
                    "Invalid Request: this server sends no requests, so it takes no responses",
                ),
            );
        }
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.id.as_ref(), &e.error),
    };
    // A listen request is a long-lived stream from its first message; other
    // requests stream only if they asked for notifications.
    let listening = request.method == "subscriptions/listen";
    let streaming = accepts_event_stream(&headers)
        && (listening || envelope::opts_in_to_notifications(&request.params));
    let server = app.server.clone();
    let run = move |notifier: Option<Notifier>| async move {
        let mirrored = MirroredHeaders {
            protocol_version: header_str(&headers, "mcp-protocol-version"),
            method: header_str(&headers, "mcp-method"),
            name: header_str(&headers, "mcp-name"),
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
        // Run on its own task so an idle worker can take it; aborted if the
        // client goes away (this future is dropped).
        let mut task = AbortOnDrop(tokio::spawn(run(None)));
        match (&mut task.0).await {
            Ok(reply) => reply_response(reply),
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }
}

/// A task that is aborted when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often an idle long-lived stream (`subscriptions/listen`) gets an SSE
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
    let keep_alive = keep_alive.map(|period| {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Box::pin(ticks)
    });
    let stream = EventStream {
        call: Some(call),
        notes,
        reply: None,
        first,
        keep_alive,
    };
    sse_response(stream)
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
        Poll::Ready(self.reply.take().map(|reply| Ok(event(reply))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_drop_the_port() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("[::1]:3000"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
    }
}
