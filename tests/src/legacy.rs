//! A 2025-era MCP client written by hand, for the legacy-session tests.
//!
//! On that wire `initialize` opens a session and the server names it in
//! the `Mcp-Session-Id` response header, which every later message
//! carries. A request's response may be an SSE stream on which the server
//! sends requests of its own (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`); the client answers each with a
//! separate POST of a JSON-RPC response. GET opens the session's
//! standalone stream, DELETE ends the session.
//!
//! Request streams are read with [`SseStream`]; the GET stream, which no
//! POST opens, with [`SessionStream`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{HTTP_TIMEOUT, Headers, Http, Reply, raw_http};
use crate::mcp::request;
use crate::sse::{EVENT_TIMEOUT, Events, Next, SseStream};

/// The newest 2025-era revision, which sessions negotiate by default.
pub const LEGACY_VERSION: &str = "2025-11-25";

/// The header naming a session.
pub const SESSION_HEADER: &str = "Mcp-Session-Id";

/// JSON-RPC code of the 404 for an unknown or ended session.
pub const SESSION_NOT_FOUND: i64 = -32001;

/// JSON-RPC code of a 2025-era "resource not found".
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// JSON-RPC internal error (how a bridged call fails).
pub const INTERNAL_ERROR: i64 = -32603;

/// Members of 2026-07-28 results that a 2025-era result must not carry.
pub const MODERN_ONLY: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// Every client capability a 2025-era client can declare.
pub fn legacy_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}})
}

/// `initialize` params asking for `version` and declaring `caps`, without
/// `_meta` (which is what makes it a 2025-era `initialize`).
pub fn initialize_params(version: &str, caps: Value) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": caps,
        "clientInfo": {"name": "airlock-e2e-legacy", "version": "1.0.0"},
    })
}

/// Asserts a result has none of the 2026-07-28 stamping (`resultType`,
/// `ttlMs`, `cacheScope`, Airlock's `_meta` server identity).
#[track_caller]
pub fn assert_legacy_result(result: &Value) {
    assert!(result.is_object(), "a result is an object: {result}");
    for member in MODERN_ONLY {
        assert!(
            result.get(member).is_none(),
            "a 2025-era result has no `{member}`: {result}"
        );
    }
    assert!(
        result["_meta"]
            .get("io.modelcontextprotocol/serverInfo")
            .is_none(),
        "a 2025-era result has no _meta serverInfo: {result}"
    );
}

/// Asserts `event` is a JSON-RPC request of the server for `method` with an
/// integer id; returns the id and the params.
#[track_caller]
pub fn expect_server_request(event: &Value, method: &str) -> (Value, Value) {
    assert_eq!(event["jsonrpc"], "2.0", "{event}");
    assert_eq!(
        event["method"], method,
        "expected a {method} request: {event}"
    );
    let id = event
        .get("id")
        .filter(|id| id.is_u64() || id.is_i64())
        .unwrap_or_else(|| panic!("a server request needs an integer id: {event}"))
        .clone();
    (id, event.get("params").cloned().unwrap_or(Value::Null))
}

/// Whether `event` is the response to request `id` (a result or an error).
pub fn is_response_to(event: &Value, id: &Value) -> bool {
    event.get("id") == Some(id) && (event.get("result").is_some() || event.get("error").is_some())
}

/// Reads a request's stream until the response to `id`; returns what came
/// before it (notifications, requests of the server) and the response.
/// Panics if the stream ends or stalls first.
#[track_caller]
pub fn read_response(stream: &mut impl Events, id: &Value) -> (Vec<Value>, Value) {
    let mut before = Vec::new();
    loop {
        let event = stream.expect_event(&format!("the response to {id}"));
        if is_response_to(&event, id) {
            return (before, event);
        }
        before.push(event);
    }
}

/// Asserts the stream ends within `timeout` without another event.
#[track_caller]
pub fn assert_stream_ends(stream: &mut impl Events, timeout: Duration) {
    match stream.next_event(timeout) {
        Next::Ended => {}
        other => panic!(
            "expected the stream to end within {timeout:?}, got {other:?}; events so far: {:?}",
            stream.seen()
        ),
    }
}

/// `http://host:port/path` → (`host:port`, `/path`).
fn split_url(url: &str) -> (&str, &str) {
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("not an http:// URL: {url}"));
    match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    }
}

/// Where a client connects, and as whom.
#[derive(Clone, Debug)]
pub struct Endpoint {
    url: String,
    bearer: Option<String>,
}

impl Endpoint {
    /// The MCP endpoint `url`, anonymous.
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_string(),
            bearer: None,
        }
    }

    /// Sends `Authorization: Bearer <token>` on every message.
    pub fn with_bearer(mut self, token: &str) -> Self {
        self.bearer = Some(token.to_string());
        self
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn http(&self) -> Http {
        let http = Http::new(&self.url);
        match &self.bearer {
            Some(token) => http.with_bearer(token),
            None => http,
        }
    }

    /// The headers of every POST: JSON body, JSON or SSE accepted, the
    /// bearer token if any.
    pub fn base_headers(&self) -> Headers {
        let mut headers = Headers::default();
        headers.set("Content-Type", "application/json");
        headers.set("Accept", "application/json, text/event-stream");
        if let Some(token) = &self.bearer {
            headers.set("Authorization", &format!("Bearer {token}"));
        }
        headers
    }

    /// POSTs `body` with exactly `headers` (plus the bearer token).
    pub fn post(&self, headers: &Headers, body: &Value) -> Reply {
        self.http().post_json(headers, body)
    }

    /// POSTs `initialize` with `params` outside any session.
    pub fn initialize(&self, params: Value) -> Reply {
        self.post(
            &self.base_headers(),
            &request(json!(0), "initialize", params),
        )
    }

    /// Opens a session of [`LEGACY_VERSION`] declaring `caps`.
    #[track_caller]
    pub fn open(&self, caps: Value) -> Session {
        self.open_version(LEGACY_VERSION, caps)
    }

    /// Opens a session asking for `version` and declaring `caps`; checks
    /// the reply is HTTP 200 with a result and a session id.
    #[track_caller]
    pub fn open_version(&self, version: &str, caps: Value) -> Session {
        let reply = self.initialize(initialize_params(version, caps));
        assert_eq!(reply.status, 200, "initialize: {}", reply.text());
        let body = reply.json();
        let negotiated = body["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_else(|| panic!("initialize needs a protocolVersion: {body}"));
        let id = reply
            .header(SESSION_HEADER)
            .unwrap_or_else(|| panic!("initialize must name the session: {body}"));
        let mut session = self.session(id);
        session.version = negotiated.to_string();
        session
    }

    /// A handle on the session `id` without opening it (one that ended, is
    /// another principal's, or never existed).
    pub fn session(&self, id: &str) -> Session {
        Session {
            endpoint: self.clone(),
            id: id.to_string(),
            version: LEGACY_VERSION.to_string(),
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends `method` (GET, DELETE) with `headers` on its own connection and
    /// reads the whole reply. Only for replies that end (not a 200 GET).
    pub fn raw(&self, method: &str, headers: &[(&str, &str)]) -> Reply {
        raw_http(
            split_url(&self.url).0,
            self.raw_head(method, headers, true).as_bytes(),
        )
    }

    fn raw_head(&self, method: &str, headers: &[(&str, &str)], close: bool) -> String {
        let (addr, path) = split_url(&self.url);
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
        if close {
            head.push_str("Connection: close\r\n");
        }
        if let Some(token) = &self.bearer {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head
    }
}

/// One legacy session (or a handle on a session id, open or not).
#[derive(Debug)]
pub struct Session {
    endpoint: Endpoint,
    id: String,
    version: String,
    next_id: AtomicU64,
}

impl Session {
    /// The `Mcp-Session-Id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The negotiated protocol version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// A fresh request id (unique within this handle).
    pub fn next_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The headers of the session's POSTs: the base ones, the session id
    /// and the negotiated protocol version.
    pub fn headers(&self) -> Headers {
        let mut headers = self.endpoint.base_headers();
        headers.set(SESSION_HEADER, &self.id);
        headers.set("MCP-Protocol-Version", &self.version);
        headers
    }

    /// POSTs one message in the session and reads the whole reply.
    pub fn post(&self, message: &Value) -> Reply {
        self.endpoint.post(&self.headers(), message)
    }

    /// Sends request `method` with `params` (as given: no `_meta` unless
    /// they carry one); returns the id used and the whole reply.
    pub fn request(&self, method: &str, params: Value) -> (Value, Reply) {
        let id = self.next_id();
        let reply = self.post(&request(id.clone(), method, params));
        (id, reply)
    }

    /// Sends request `method` and returns its JSON-RPC response, checking
    /// HTTP 200 (legacy replies are 200 even for errors) and the echoed id.
    #[track_caller]
    pub fn rpc(&self, method: &str, params: Value) -> Value {
        let (id, reply) = self.request(method, params);
        assert_eq!(
            reply.status,
            200,
            "{method} in a session is HTTP 200: {}",
            reply.text()
        );
        let message = reply.message();
        assert_eq!(message.get("id"), Some(&id), "{method}: {message}");
        assert_eq!(message["jsonrpc"], "2.0", "{method}: {message}");
        message
    }

    /// The `result` of request `method`; panics on an error.
    #[track_caller]
    pub fn result(&self, method: &str, params: Value) -> Value {
        let message = self.rpc(method, params);
        message
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should succeed: {message}"))
    }

    /// Sends request `method` and opens its reply as an SSE stream read
    /// event by event (the server's requests arrive before the response);
    /// checks HTTP 200 and `text/event-stream`.
    #[track_caller]
    pub fn stream(&self, method: &str, params: Value) -> (Value, SseStream) {
        let id = self.next_id();
        let stream = SseStream::open(
            self.endpoint.url(),
            &self.headers(),
            &request(id.clone(), method, params),
        );
        assert_eq!(stream.status(), 200, "{method} stream status");
        assert!(
            stream
                .header("content-type")
                .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream")),
            "{method} should answer with an SSE stream, got content-type {:?}",
            stream.header("content-type")
        );
        (id, stream)
    }

    /// POSTs the client's result for the server's request `id`.
    pub fn respond(&self, id: &Value, result: Value) -> Reply {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// POSTs the client's error for the server's request `id`.
    pub fn respond_error(&self, id: &Value, code: i64, message: &str) -> Reply {
        self.post(&json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
        }))
    }

    /// POSTs notification `method` with `params`.
    pub fn notify(&self, method: &str, params: Value) -> Reply {
        self.post(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// GET with the session id (`Accept: text/event-stream`), for replies
    /// that end (404, 405, 409); a 200 stream would hold this until
    /// [`HTTP_TIMEOUT`], use [`Session::listen`].
    pub fn get(&self) -> Reply {
        self.endpoint.raw(
            "GET",
            &[(SESSION_HEADER, &self.id), ("Accept", "text/event-stream")],
        )
    }

    /// Opens the session's standalone stream (GET); the HTTP status if it
    /// is not 200.
    pub fn try_listen(&self) -> Result<SessionStream, u16> {
        let head = self.endpoint.raw_head(
            "GET",
            &[
                (SESSION_HEADER, &self.id),
                ("Accept", "text/event-stream"),
                ("MCP-Protocol-Version", &self.version),
            ],
            false,
        );
        let stream = SessionStream::open(split_url(self.endpoint.url()).0, &head);
        match stream.status {
            200 => Ok(stream),
            status => Err(status),
        }
    }

    /// Opens the session's standalone stream (GET); checks HTTP 200 and
    /// `text/event-stream`.
    #[track_caller]
    pub fn listen(&self) -> SessionStream {
        let stream = self
            .try_listen()
            .unwrap_or_else(|status| panic!("the session stream is HTTP 200, got {status}"));
        assert!(
            stream
                .content_type
                .to_ascii_lowercase()
                .starts_with("text/event-stream"),
            "the session stream is SSE, got content-type {:?}",
            stream.content_type
        );
        stream
    }

    /// DELETE with the session id.
    pub fn delete(&self) -> Reply {
        self.endpoint.raw("DELETE", &[(SESSION_HEADER, &self.id)])
    }
}

/// A GET response read as SSE events as they arrive, on a thread of its
/// own; dropping it closes the connection.
pub struct SessionStream {
    status: u16,
    content_type: String,
    socket: TcpStream,
    events: Receiver<Value>,
    seen: Vec<Value>,
}

impl SessionStream {
    /// Sends `head` (a complete GET request) to `addr` and reads the
    /// response head; the body is read on a thread.
    #[track_caller]
    fn open(addr: &str, head: &str) -> Self {
        let mut socket = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        socket.set_nodelay(true).ok();
        socket
            .set_read_timeout(Some(HTTP_TIMEOUT))
            .expect("set a read timeout");
        socket.write_all(head.as_bytes()).expect("write the GET");
        let mut reader = BufReader::new(socket.try_clone().expect("clone the socket"));
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .expect("read the HTTP status line");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line: {line:?}"));
        let (mut content_type, mut chunked) = (String::new(), false);
        loop {
            line.clear();
            reader.read_line(&mut line).expect("read a header line");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
                if name == "content-type" {
                    content_type = value.to_string();
                } else if name == "transfer-encoding" {
                    chunked = value.to_ascii_lowercase().contains("chunked");
                }
            }
        }
        // The body may be idle for long; dropping the stream shuts the
        // socket down, which ends the reader.
        socket
            .set_read_timeout(None)
            .expect("clear the read timeout");
        let (sender, events) = channel();
        thread::spawn(move || read_body(reader, chunked, &sender));
        Self {
            status,
            content_type,
            socket,
            events,
            seen: Vec::new(),
        }
    }

    /// The next event, waiting at most `timeout`.
    pub fn next_event(&mut self, timeout: Duration) -> Next {
        match self.events.recv_timeout(timeout) {
            Ok(event) => {
                self.seen.push(event.clone());
                Next::Event(event)
            }
            Err(RecvTimeoutError::Timeout) => Next::TimedOut,
            Err(RecvTimeoutError::Disconnected) => Next::Ended,
        }
    }

    /// The next event; panics, naming `what` was expected, if none arrives
    /// within [`EVENT_TIMEOUT`] or the stream ends.
    #[track_caller]
    pub fn expect_event(&mut self, what: &str) -> Value {
        match self.next_event(EVENT_TIMEOUT) {
            Next::Event(event) => event,
            other => panic!(
                "expected {what} on the session stream, got {other:?}; events so far: {:?}",
                self.seen
            ),
        }
    }
}

impl Drop for SessionStream {
    fn drop(&mut self) {
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// Reads an SSE body (chunked or not) to its end, sending each event's
/// data as JSON (or as a JSON string when it is not JSON).
fn read_body(mut reader: BufReader<TcpStream>, chunked: bool, events: &Sender<Value>) {
    let mut body: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 8 * 1024];
    loop {
        let received = if chunked {
            read_chunk(&mut reader)
        } else {
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => None,
                Ok(n) => Some(buffer[..n].to_vec()),
            }
        };
        let Some(bytes) = received else { return };
        body.extend_from_slice(&bytes);
        while let Some(at) = body.windows(2).position(|w| w == b"\n\n") {
            let block = String::from_utf8_lossy(&body[..at]).replace('\r', "");
            body.drain(..at + 2);
            let Some(payload) = crate::sse::event_data(&block) else {
                continue; // a comment (keep-alive)
            };
            let event = serde_json::from_str(&payload).unwrap_or(Value::String(payload));
            if events.send(event).is_err() {
                return;
            }
        }
    }
}

/// One chunk of a chunked body; `None` at its end or on an error.
fn read_chunk(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
    let size_text = line.trim().split(';').next().unwrap_or("").trim();
    let size = usize::from_str_radix(size_text, 16)
        .ok()
        .filter(|n| *n > 0)?;
    let mut chunk = vec![0u8; size + 2];
    reader.read_exact(&mut chunk).ok()?;
    chunk.truncate(size);
    Some(chunk)
}
