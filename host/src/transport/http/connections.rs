//! The accept loop: HTTP/1.1 connections with a header-read timeout, a
//! request-body timeout, an idle timeout, a cap on open connections,
//! `TCP_NODELAY`, and graceful shutdown.
//!
//! `axum::serve` has none of these timeouts, and hyper's own
//! `header_read_timeout` also runs while a keep-alive connection sits idle
//! between requests, so it cannot tell the two apart. Here each connection
//! has a small state machine, fed by its socket reads and its requests:
//!
//! - **awaiting a head** (from accept, or from the first byte after an idle
//!   spell): the request line and headers must be complete within the header
//!   timeout, or the connection is closed. This is what stops a client that
//!   opens connections and trickles bytes (slowloris).
//! - **busy** (a request is being served, its response streamed): the
//!   request body must arrive whole within the body timeout, or reading it
//!   fails with [`BodyTimeout`] (the handler answers 408 and closes the
//!   connection), so a client that sends headers and then trickles its body
//!   does not hold a connection slot either. Past the body, no limit: calls
//!   have their own deadline and `subscriptions/listen` streams are meant to
//!   last.
//! - **idle** (keep-alive, no request in progress): closed after the idle
//!   timeout.
//!
//! At the connection cap, a new connection is admitted by closing the open
//! one that has waited longest without a request in progress (awaiting a
//! head or idle; see [`OpenConnections::reclaim_one`]): connections that
//! send nothing, or trickle a head, cannot keep a client with a request out,
//! however many a peer holds open. Only when every open connection has a
//! request in progress does a new one wait, in the listen backlog, until one
//! closes.

use std::any::Any;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use futures_util::FutureExt as _;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;

use super::self_wake::PollAgainOnSelfWake;
use crate::protocol::jsonrpc::{self, RpcError};

/// Limits on HTTP connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time a connection has to deliver a complete request head.
    pub header_timeout: Duration,
    /// Time a request has to deliver its whole body, from its head.
    pub body_timeout: Duration,
    /// How long a keep-alive connection may sit idle between requests.
    pub idle_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: u32,
    /// On shutdown, how long the server keeps serving (readiness already
    /// off, every response closing its connection) before it stops
    /// accepting: the time load balancers take to stop sending requests.
    pub drain_delay: Duration,
    /// Once it stops accepting, how long it waits for the requests in
    /// flight; those still running then are cut.
    pub shutdown_timeout: Duration,
    /// How long `/readyz` waits for the task store's answer.
    pub readiness_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            drain_delay: Duration::ZERO,
            shutdown_timeout: Duration::from_secs(30),
            readiness_timeout: Duration::from_secs(1),
        }
    }
}

/// How long to wait before accepting again after an accept error that is
/// not about one connection (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// On shutdown, how long a connection that has sent nothing yet may take
/// to bring its request before it is closed: long enough for a request a
/// proxy had already sent when it opened the connection, short enough that
/// a client holding connections open in reserve does not hold up the exit.
const SILENT_CONNECTION_GRACE: Duration = Duration::from_secs(1);

/// How often at most the "connection limit reached" warning is logged.
const FULL_WARNING_EVERY: Duration = Duration::from_secs(10);

/// [`serve_with`] for the MCP listener, whose cap is `--max-connections`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    draining: watch::Receiver<bool>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    serve_with(
        listener,
        router,
        limits,
        "--max-connections",
        draining,
        shutdown,
    )
    .await
}

/// Serves `router` on `listener` until `shutdown` completes; then stops
/// accepting, lets every open connection finish its requests in flight
/// (idle ones close at once), and returns when all are closed, or when the
/// shutdown timeout cuts those still busy. While `draining` is true (before
/// the shutdown), every response closes its connection, so that a load
/// balancer opens its next one to another server. `cap_option` names the
/// option that sets `limits.max_connections`, for the warning logged when
/// the cap is reached.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    cap_option: &'static str,
    draining: watch::Receiver<bool>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections as usize));
    let open = Arc::new(OpenConnections::default());
    let (stop, stopped) = watch::channel(false);
    let mut builder = http1::Builder::new();
    // No hyper timer: the timeouts are ours (see the module docs).
    builder.keep_alive(true).header_read_timeout(None);
    let serve_connection = |stream: TcpStream, permit: OwnedSemaphorePermit| {
        let activity = Arc::new(Activity::new(limits, open.clone()));
        let slot = Slot {
            _permit: permit,
            _listed: open.add(&activity),
        };
        let service = TrackedService {
            inner: TowerToHyperService::new(router.clone()),
            activity,
            draining: draining.clone(),
        };
        tokio::spawn(connection(
            stream,
            builder.clone(),
            service,
            stopped.clone(),
            slot,
        ));
    };
    let mut last_full_warning: Option<Instant> = None;
    // A connection accepted at the cap, not yet served when the shutdown came.
    let mut unserved = None;
    tokio::pin!(shutdown);
    'accepting: loop {
        let stream = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) if is_connection_error(&error) => continue,
                Err(error) => {
                    tracing::error!(%error, "cannot accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let permit = loop {
            if let Ok(permit) = permits.clone().try_acquire_owned() {
                break permit;
            }
            if last_full_warning.is_none_or(|at| at.elapsed() >= FULL_WARNING_EVERY) {
                last_full_warning = Some(Instant::now());
                tracing::warn!(
                    max = limits.max_connections,
                    "HTTP connection limit reached: each new connection closes the one waiting longest without a request, or waits while every one has a request in progress ({cap_option})"
                );
            }
            let reclaimed = open.reclaim_one();
            tokio::select! {
                biased;
                () = &mut shutdown => {
                    unserved = Some(stream);
                    break 'accepting;
                }
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(permit) => break permit,
                    Err(_) => break 'accepting,
                },
                // A request ended: its connection may be reclaimed now.
                () = open.request_ended.notified(), if !reclaimed => {}
            }
        };
        open.waiting.store(false, Ordering::Relaxed);
        serve_connection(stream, permit);
    }
    // Closing the listener resets the connections the kernel has already
    // established in its backlog, whose clients may have sent a request
    // (a proxy would then fail it): take them first, as far as the cap allows.
    for (stream, permit) in queued_connections(listener, unserved, &permits) {
        serve_connection(stream, permit);
    }
    let open = limits.max_connections as usize - permits.available_permits();
    if open > 0 {
        tracing::info!(open, "waiting for open connections to finish");
    }
    let _ = stop.send(true);
    // Every connection holds a permit until it closes.
    let all_closed = permits.acquire_many(limits.max_connections);
    if tokio::time::timeout(limits.shutdown_timeout, all_closed)
        .await
        .is_err()
    {
        let cut = limits.max_connections as usize - permits.available_permits();
        tracing::warn!(
            connections = cut,
            timeout_ms = limits.shutdown_timeout.as_millis(),
            "connections with requests in flight cut by the shutdown timeout (--shutdown-timeout)"
        );
    }
    Ok(())
}

/// `unserved` (accepted, not yet served), then every connection already
/// waiting in `listener`'s backlog, taken without waiting, as far as a
/// permit is free for each; then closes the listener.
fn queued_connections(
    listener: TcpListener,
    unserved: Option<TcpStream>,
    permits: &Arc<Semaphore>,
) -> Vec<(TcpStream, OwnedSemaphorePermit)> {
    let mut queued = Vec::new();
    if let Some(stream) = unserved {
        match permits.clone().try_acquire_owned() {
            Ok(permit) => queued.push((stream, permit)),
            Err(_) => return queued,
        }
    }
    // The std listener accepts without asking the runtime for readiness,
    // which it may not have seen yet.
    let Ok(listener) = listener.into_std() else {
        return queued;
    };
    while let Ok(permit) = permits.clone().try_acquire_owned() {
        let Ok((stream, _)) = listener.accept() else {
            break;
        };
        match stream
            .set_nonblocking(true)
            .and_then(|()| TcpStream::from_std(stream))
        {
            Ok(stream) => queued.push((stream, permit)),
            Err(error) => tracing::debug!(%error, "cannot take a queued connection"),
        }
    }
    queued
}

/// Errors about one connection (the peer gave up before it was accepted).
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

async fn connection(
    stream: TcpStream,
    builder: http1::Builder,
    service: TrackedService,
    mut stop: watch::Receiver<bool>,
    _slot: Slot,
) {
    // Replies and SSE events are written whole; Nagle's algorithm would only
    // hold them back waiting for ACKs.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "cannot set TCP_NODELAY");
    }
    let activity = service.activity.clone();
    let io = TokioIo::new(WatchedIo {
        inner: stream,
        activity: activity.clone(),
    });
    // Boxed: the wrapper polls what it holds through `Unpin`.
    let mut conn = PollAgainOnSelfWake::new(Box::pin(builder.serve_connection(io, service)));
    let mut stopping = false;
    // Set while a connection that has sent nothing is given its last chance.
    let mut silent_until: Option<Instant> = None;
    loop {
        tokio::select! {
            result = &mut conn => {
                if let Err(error) = result {
                    tracing::debug!(%error, "HTTP connection ended with an error");
                }
                return;
            }
            _ = stop.changed(), if !stopping => {
                // Finish the request in flight, if any, then close. hyper
                // would close a connection that has sent nothing yet at
                // once, though its request may be on the way: that one gets
                // `SILENT_CONNECTION_GRACE` to bring it (the drain's
                // `Connection: close` then ends it after the response).
                stopping = true;
                if activity.has_received() {
                    conn.get_mut().as_mut().graceful_shutdown();
                } else {
                    silent_until = Some(Instant::now() + SILENT_CONNECTION_GRACE);
                }
            }
            () = sleep_until_some(silent_until) => {
                if !activity.has_received() {
                    tracing::debug!("closing an HTTP connection that sent nothing before shutdown");
                    return;
                }
                silent_until = None;
                conn.get_mut().as_mut().graceful_shutdown();
            }
            why = activity.expired() => {
                tracing::debug!(why, "closing an HTTP connection");
                return;
            }
        }
    }
}

/// What a served connection holds until it closes: its place under the cap,
/// and its entry among the listener's open connections.
struct Slot {
    _permit: OwnedSemaphorePermit,
    _listed: Listed,
}

/// The open connections of one listener, each with its [`Activity`], so
/// that one may be closed to admit a new one at the cap.
#[derive(Default)]
struct OpenConnections {
    next_id: AtomicU64,
    by_id: Mutex<HashMap<u64, Weak<Activity>>>,
    /// Set while a new connection waits at the cap for one to be reclaimed.
    waiting: AtomicBool,
    /// Told, while [`OpenConnections::waiting`], that a request ended.
    request_ended: Notify,
}

impl OpenConnections {
    fn by_id(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Weak<Activity>>> {
        self.by_id
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lists `activity` until the returned entry is dropped.
    fn add(self: &Arc<Self>, activity: &Arc<Activity>) -> Listed {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.by_id().insert(id, Arc::downgrade(activity));
        Listed {
            open: self.clone(),
            id,
        }
    }

    /// Closes the connection that has waited longest without a request in
    /// progress (for its head, or idle), and says whether there was one.
    /// The longest waiting goes first: a connection just accepted has had
    /// the least time to send its request. Until a connection is admitted
    /// (see [`OpenConnections::waiting`]), the end of any request is told
    /// through [`OpenConnections::request_ended`].
    fn reclaim_one(&self) -> bool {
        self.waiting.store(true, Ordering::Relaxed);
        let mut candidates: Vec<(Instant, Arc<Activity>)> = self
            .by_id()
            .values()
            .filter_map(Weak::upgrade)
            .filter_map(|activity| Some((activity.waiting_since()?, activity)))
            .collect();
        candidates.sort_unstable_by_key(|(since, _)| *since);
        // One may have begun a request since it was looked at: then the next.
        candidates
            .into_iter()
            .any(|(_, activity)| activity.reclaim())
    }
}

/// A connection's entry in [`OpenConnections`], removed when dropped.
struct Listed {
    open: Arc<OpenConnections>,
    id: u64,
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.open.by_id().remove(&self.id);
    }
}

/// Completes at `at`, or never when there is no instant.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a complete request head since this instant.
    Head(Instant),
    /// This many requests are being served (their responses not yet done).
    Busy(usize),
    /// Nothing in progress since this instant.
    Idle(Instant),
    /// Closed to admit a new connection at the cap (see
    /// [`OpenConnections::reclaim_one`]) at this instant; it stays so.
    Reclaimed(Instant),
}

/// The timeout state machine of one connection (see the module docs).
///
/// A phase change only records the new phase: it wakes nobody, so a request
/// costs its connection no extra poll. The watchdog ([`Activity::expired`])
/// looks at the phase on its own schedule instead, which still honours
/// every deadline (see there).
struct Activity {
    limits: ConnectionLimits,
    /// The listener's open connections, told when a request ends.
    open: Arc<OpenConnections>,
    phase: Mutex<Phase>,
    /// Mirrors `phase == Idle` so reads skip the lock in the common case.
    idle: AtomicBool,
    /// Whether any byte has arrived on the connection.
    received: AtomicBool,
    /// Wakes the watchdog when the connection is reclaimed.
    reclaimed: Notify,
}

impl Activity {
    fn new(limits: ConnectionLimits, open: Arc<OpenConnections>) -> Self {
        Self {
            limits,
            open,
            phase: Mutex::new(Phase::Head(Instant::now())),
            idle: AtomicBool::new(false),
            received: AtomicBool::new(false),
            reclaimed: Notify::new(),
        }
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether any byte has arrived.
    fn has_received(&self) -> bool {
        self.received.load(Ordering::Relaxed)
    }

    /// Bytes arrived: an idle connection starts receiving a request head.
    fn on_read(&self) {
        self.received.store(true, Ordering::Relaxed);
        if !self.idle.load(Ordering::Relaxed) {
            return;
        }
        let mut phase = self.phase();
        if let Phase::Idle(_) = *phase {
            *phase = Phase::Head(Instant::now());
            self.idle.store(false, Ordering::Relaxed);
        }
    }

    /// A request head was parsed; the returned guard marks its end when the
    /// response is done (or dropped).
    fn begin(self: &Arc<Self>) -> RequestGuard {
        let mut phase = self.phase();
        *phase = match *phase {
            Phase::Busy(n) => Phase::Busy(n + 1),
            Phase::Head(_) | Phase::Idle(_) => Phase::Busy(1),
            Phase::Reclaimed(at) => Phase::Reclaimed(at),
        };
        self.idle.store(false, Ordering::Relaxed);
        RequestGuard(self.clone())
    }

    fn end(&self) {
        let mut phase = self.phase();
        *phase = match *phase {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            Phase::Reclaimed(at) => Phase::Reclaimed(at),
            _ => {
                self.idle.store(true, Ordering::Relaxed);
                Phase::Idle(Instant::now())
            }
        };
        let now_waiting = matches!(*phase, Phase::Idle(_));
        drop(phase);
        // Read after the phase changed: an accept loop waiting at the cap
        // that saw this connection busy had set the flag before it looked.
        if now_waiting && self.open.waiting.load(Ordering::Relaxed) {
            self.open.request_ended.notify_one();
        }
    }

    /// When the current phase times out, and why.
    fn deadline(&self) -> Option<(Instant, &'static str)> {
        match *self.phase() {
            Phase::Head(since) => Some((
                since + self.limits.header_timeout,
                "no complete request head within the header timeout",
            )),
            Phase::Idle(since) => Some((since + self.limits.idle_timeout, "idle timeout")),
            Phase::Busy(_) => None,
            Phase::Reclaimed(at) => {
                Some((at, "closed to admit a new connection at the connection cap"))
            }
        }
    }

    /// Since when the connection has waited for a request (for its head, or
    /// idle); `None` while one is in progress.
    fn waiting_since(&self) -> Option<Instant> {
        match *self.phase() {
            Phase::Head(since) | Phase::Idle(since) => Some(since),
            Phase::Busy(_) | Phase::Reclaimed(_) => None,
        }
    }

    /// Closes the connection unless a request is in progress on it; whether
    /// it did.
    fn reclaim(&self) -> bool {
        let mut phase = self.phase();
        if !matches!(*phase, Phase::Head(_) | Phase::Idle(_)) {
            return false;
        }
        *phase = Phase::Reclaimed(Instant::now());
        self.idle.store(false, Ordering::Relaxed);
        drop(phase);
        self.reclaimed.notify_one();
        true
    }

    /// Completes when the connection has timed out or was reclaimed, with
    /// the reason.
    ///
    /// It wakes at the current phase's deadline, or sooner: never more than
    /// the shorter of the two timeouts ahead. A phase that begins later sets
    /// its deadline at least that far from its start, so no deadline can
    /// fall before the next wake-up, and none is missed.
    async fn expired(&self) -> &'static str {
        let step = self.limits.header_timeout.min(self.limits.idle_timeout);
        loop {
            let now = Instant::now();
            let wake = match self.deadline() {
                Some((at, why)) if at <= now => return why,
                Some((at, _)) => at.min(now + step),
                None => now + step,
            };
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {}
                () = self.reclaimed.notified() => {}
            }
        }
    }
}

/// Marks the end of a request when dropped.
struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Reading a request body failed: it did not arrive whole within the body
/// timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimeout(pub Duration);

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} ms",
            self.0.as_millis()
        )
    }
}

impl std::error::Error for BodyTimeout {}

/// A request body that fails with [`BodyTimeout`] unless it ends by its
/// deadline. The timer is armed only once the body has to be waited for:
/// most bodies arrive with their headers, and pay nothing for it.
struct TimedBody {
    body: Incoming,
    timeout: Duration,
    /// `None` for a body that was empty from the start.
    deadline: Option<Instant>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl TimedBody {
    fn new(body: Incoming, timeout: Duration) -> Self {
        let deadline = (!http_body::Body::is_end_stream(&body)).then(|| Instant::now() + timeout);
        Self {
            body,
            timeout,
            deadline,
            timer: None,
        }
    }
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|result| result.map_err(Into::into)));
        }
        let Some(deadline) = self.deadline else {
            return Poll::Pending;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(BodyTimeout(self.timeout).into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The router, with each request tracked from its head to the end of its
/// response body, its body read within the body timeout, its response
/// closing the connection while the server drains, and a panic while it is
/// answered turned into a 500 (see [`panicked`]).
#[derive(Clone)]
struct TrackedService {
    inner: TowerToHyperService<Router>,
    activity: Arc<Activity>,
    draining: watch::Receiver<bool>,
}

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<TrackedBody>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for TrackedService {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let guard = self.activity.begin();
        let body_timeout = self.activity.limits.body_timeout;
        let response = self
            .inner
            .call(request.map(|body| TimedBody::new(body, body_timeout)));
        let draining = self.draining.clone();
        // A request runs on its connection's task: unwinding past here
        // would end the connection without an answer. A combinator, not an
        // `async` block, which would hold the router's future twice.
        Box::pin(
            AssertUnwindSafe(response)
                .catch_unwind()
                .map(move |caught| {
                    let mut response = match caught {
                        Ok(response) => response?,
                        Err(panic) => panicked(&*panic),
                    };
                    if *draining.borrow() {
                        response
                            .headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    }
                    Ok(response.map(|body| TrackedBody {
                        body,
                        _guard: guard,
                    }))
                }),
        )
    }
}

/// A response body that ends its request when it is dropped (sent or not).
struct TrackedBody {
    body: Body,
    _guard: RequestGuard,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The answer to a request whose handler panicked: a bug in Airlock (a
/// guest's trap is a result, not a panic). It is logged, and the client gets
/// a 500 with a JSON-RPC internal error instead of a closed connection, which
/// stays open for its next request. The request's id is not known here, so
/// the error's is null. A panic after an event stream has begun still ends
/// that stream: its status has been sent.
fn panicked(panic: &(dyn Any + Send)) -> Response<Body> {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    tracing::error!(
        panic = message,
        "answering a request failed on a bug in the server: answered 500"
    );
    let error = RpcError::internal(
        "Internal error: the server failed while answering this request; its log says why",
    );
    let mut response = Response::new(Body::from(jsonrpc::encode_error(None, &error)));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The socket, reporting reads to the connection's [`Activity`].
struct WatchedIo {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.on_read();
        }
        result
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Duration = Duration::from_millis(100);
    const IDLE: Duration = Duration::from_millis(400);
    /// Slack for a loaded machine: a timeout fires no earlier than its
    /// deadline and not much later.
    const SLACK: Duration = Duration::from_secs(5);

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: HEADER,
            body_timeout: IDLE,
            idle_timeout: IDLE,
            max_connections: 4,
            ..ConnectionLimits::default()
        }
    }

    fn activity() -> Arc<Activity> {
        Arc::new(Activity::new(limits(), Arc::default()))
    }

    fn watchdog(activity: &Arc<Activity>) -> tokio::task::JoinHandle<&'static str> {
        let activity = activity.clone();
        tokio::spawn(async move { activity.expired().await })
    }

    #[tokio::test]
    async fn a_new_connection_must_send_its_head_in_time() {
        let activity = activity();
        let start = Instant::now();
        assert_eq!(
            activity.expired().await,
            "no complete request head within the header timeout"
        );
        assert!(start.elapsed() >= HEADER);
        assert!(start.elapsed() < HEADER + SLACK);
    }

    #[tokio::test]
    async fn busy_connections_never_time_out_and_idle_ones_do() {
        let activity = activity();
        let guard = activity.begin();
        let watchdog = watchdog(&activity);
        tokio::time::sleep(IDLE * 3).await;
        assert!(!watchdog.is_finished(), "a busy connection timed out");
        let idle_since = Instant::now();
        drop(guard);
        assert_eq!(watchdog.await.unwrap(), "idle timeout");
        assert!(idle_since.elapsed() >= IDLE);
        assert!(idle_since.elapsed() < IDLE + SLACK);
    }

    #[tokio::test]
    async fn the_header_timeout_starts_with_the_first_byte_after_idling() {
        let activity = activity();
        drop(activity.begin());
        let watchdog = watchdog(&activity);
        // Idle for longer than the header timeout, then a byte arrives.
        tokio::time::sleep(HEADER * 2).await;
        assert!(!watchdog.is_finished(), "idle time counted as header time");
        activity.on_read();
        let first_byte = Instant::now();
        assert_eq!(
            watchdog.await.unwrap(),
            "no complete request head within the header timeout"
        );
        assert!(first_byte.elapsed() >= HEADER);
        assert!(first_byte.elapsed() < HEADER + SLACK);
    }

    /// Reads one response (head and a `content-length` body) off `stream`:
    /// its status line and its body.
    async fn read_response(stream: &mut tokio::io::BufReader<TcpStream>) -> (String, String) {
        use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
        let mut status = String::new();
        let read = stream.read_line(&mut status).await.unwrap();
        assert!(read > 0, "the connection closed without a response");
        let mut length = 0;
        loop {
            let mut line = String::new();
            let read = stream.read_line(&mut line).await.unwrap();
            assert!(read > 0, "the connection closed within a response head");
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        stream.read_exact(&mut body).await.unwrap();
        (
            status.trim_end().to_owned(),
            String::from_utf8(body).unwrap(),
        )
    }

    #[tokio::test]
    async fn a_panicking_handler_gets_a_500_and_its_connection_serves_on() {
        use tokio::io::AsyncWriteExt as _;
        let router = Router::new()
            .route(
                "/bug",
                axum::routing::get(|| async {
                    panic!("a bug in a handler");
                    #[allow(unreachable_code)]
                    "unreachable"
                }),
            )
            .route("/fine", axum::routing::get(|| async { "fine" }));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (_draining, not_draining) = watch::channel(false);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            router,
            ConnectionLimits::default(),
            not_draining,
            async {
                let _ = stopped.await;
            },
        ));
        let mut stream = tokio::io::BufReader::new(TcpStream::connect(address).await.unwrap());
        stream
            .get_mut()
            .write_all(b"GET /bug HTTP/1.1\r\nhost: test\r\n\r\n")
            .await
            .unwrap();
        let (status, body) = read_response(&mut stream).await;
        assert_eq!(status, "HTTP/1.1 500 Internal Server Error");
        let error: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["code"], -32603, "{body}");
        assert!(error["id"].is_null(), "{body}");
        // The same connection answers the next request.
        stream
            .get_mut()
            .write_all(b"GET /fine HTTP/1.1\r\nhost: test\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(
            read_response(&mut stream).await,
            ("HTTP/1.1 200 OK".to_owned(), "fine".to_owned())
        );
        drop(stream);
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn overlapping_requests_keep_the_connection_busy() {
        let activity = activity();
        let first = activity.begin();
        let second = activity.begin();
        drop(first);
        assert!(activity.deadline().is_none());
        drop(second);
        assert_eq!(
            activity.deadline().map(|(_, why)| why),
            Some("idle timeout")
        );
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_waiting_connection_is_reclaimed_never_a_busy_one() {
        let open = Arc::new(OpenConnections::default());
        // No connection times out during the test.
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(600),
            ..limits()
        };
        let connect = || {
            let activity = Arc::new(Activity::new(limits, open.clone()));
            let listed = open.add(&activity);
            (activity, listed)
        };
        // Opened in this order: busy (the oldest), awaiting its head, idle.
        let (busy, _busy) = connect();
        let request = busy.begin();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let (silent, _silent) = connect();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let (idle, _idle) = connect();
        drop(idle.begin());
        let closes = |activity: &Arc<Activity>| watchdog(activity);
        let (silent_closes, idle_closes) = (closes(&silent), closes(&idle));
        const RECLAIMED: &str = "closed to admit a new connection at the connection cap";

        assert!(open.reclaim_one());
        assert_eq!(silent_closes.await.unwrap(), RECLAIMED);
        assert!(!idle_closes.is_finished(), "more than one was reclaimed");
        assert!(open.reclaim_one());
        assert_eq!(idle_closes.await.unwrap(), RECLAIMED);
        assert!(!open.reclaim_one(), "a busy connection was reclaimed");
        assert!(busy.deadline().is_none());

        // A request ending while a new connection waits is told, and its
        // connection can then be reclaimed.
        drop(request);
        tokio::time::timeout(SLACK, open.request_ended.notified())
            .await
            .expect("the end of a request is told to the waiting accept loop");
        assert!(open.reclaim_one());
    }

    #[tokio::test]
    async fn a_listed_connection_is_forgotten_when_it_closes() {
        let open = Arc::new(OpenConnections::default());
        let activity = Arc::new(Activity::new(limits(), open.clone()));
        drop(open.add(&activity));
        assert!(open.by_id().is_empty());
        assert!(!open.reclaim_one());
    }
}
