//! Reading a long-lived SSE response (`subscriptions/listen`) event by
//! event, as the server sends them, over a plain socket.
//!
//! An HTTP library reads a body to its end, which a listen stream never
//! reaches; this sends the POST itself and decodes the response
//! incrementally (chunked transfer encoding, then SSE frames), waiting at
//! most a given time for each event.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::http::{HTTP_TIMEOUT, Headers, Http};
use crate::mcp::{assert_subscription_note, listen_params};

/// How long a test waits for an event it expects.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// What [`SseStream::next_event`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// One event's `data`, parsed as JSON.
    Event(Value),
    /// Nothing arrived in time; the stream is still open.
    TimedOut,
    /// The server ended the response (or closed the connection).
    Ended,
}

/// One HTTP response read as a stream of SSE events. Dropping it closes
/// the connection (for a listen stream: the client goes away).
pub struct SseStream {
    socket: TcpStream,
    status: u16,
    headers: Vec<(String, String)>,
    chunked: bool,
    /// Received bytes not yet de-chunked.
    raw: Vec<u8>,
    /// Body bytes not yet cut into events.
    body: Vec<u8>,
    ended: bool,
    /// Every event returned so far, for failure messages.
    seen: Vec<Value>,
}

impl SseStream {
    /// POSTs `body` with `headers` to `url` (`http://host:port/path`) and
    /// reads the response head. Panics if no head arrives within
    /// [`HTTP_TIMEOUT`].
    pub fn open(url: &str, headers: &Headers, body: &Value) -> SseStream {
        let rest = url
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("not an http:// URL: {url}"));
        let (addr, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let socket = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        socket.set_nodelay(true).ok();
        let body = body.to_string();
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in &headers.0 {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut stream = SseStream {
            socket,
            status: 0,
            headers: Vec::new(),
            chunked: false,
            raw: Vec::new(),
            body: Vec::new(),
            ended: false,
            seen: Vec::new(),
        };
        stream
            .socket
            .write_all(format!("{head}{body}").as_bytes())
            .expect("write the request");
        stream.read_head();
        stream
    }

    fn read_head(&mut self) {
        let deadline = Instant::now() + HTTP_TIMEOUT;
        let split = loop {
            if let Some(at) = self.raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            assert!(
                self.receive(deadline),
                "no complete HTTP response head within {HTTP_TIMEOUT:?}; got: {}",
                String::from_utf8_lossy(&self.raw)
            );
        };
        let head = String::from_utf8_lossy(&self.raw[..split]).into_owned();
        self.raw.drain(..split + 4);
        let mut lines = head.lines();
        let status_line = lines.next().unwrap_or_default();
        self.status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line: {status_line}"));
        self.headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        self.chunked = self
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        self.decode();
    }

    /// Reads once from the socket, waiting until `deadline` at most.
    /// Returns false on timeout or end of stream.
    fn receive(&mut self, deadline: Instant) -> bool {
        let wait = deadline.saturating_duration_since(Instant::now());
        if wait.is_zero() || self.ended {
            return false;
        }
        self.socket
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .expect("set a read timeout");
        let mut buffer = [0u8; 16 * 1024];
        match self.socket.read(&mut buffer) {
            Ok(0) => {
                self.ended = true;
                false
            }
            Ok(n) => {
                self.raw.extend_from_slice(&buffer[..n]);
                true
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
            Err(e) if e.kind() == ErrorKind::Interrupted => true,
            // Reset or aborted: the server is gone.
            Err(_) => {
                self.ended = true;
                false
            }
        }
    }

    /// Moves what has arrived of the body from `raw` to `body`.
    fn decode(&mut self) {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return;
        }
        while let Some(eol) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let size_text = String::from_utf8_lossy(&self.raw[..eol]).into_owned();
            let size_text = size_text.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .unwrap_or_else(|_| panic!("bad chunk size line {size_text:?}"));
            if size == 0 {
                self.raw.clear();
                self.ended = true;
                return;
            }
            // The chunk and its trailing CRLF must be complete.
            if self.raw.len() < eol + 2 + size + 2 {
                return;
            }
            self.body
                .extend_from_slice(&self.raw[eol + 2..eol + 2 + size]);
            self.raw.drain(..eol + 2 + size + 2);
        }
    }

    /// Cuts the next complete event with data out of `body`, skipping
    /// comments (keep-alives).
    fn take_event(&mut self) -> Option<Value> {
        loop {
            let (at, separator) = [b"\n\n".as_slice(), b"\r\n\r\n".as_slice()]
                .iter()
                .filter_map(|sep| {
                    self.body
                        .windows(sep.len())
                        .position(|w| w == *sep)
                        .map(|at| (at, sep.len()))
                })
                .min()?;
            let block = String::from_utf8_lossy(&self.body[..at]).into_owned();
            self.body.drain(..at + separator);
            let Some(payload) = event_data(&block) else {
                continue;
            };
            let event: Value = serde_json::from_str(&payload)
                .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {payload}"));
            self.seen.push(event.clone());
            return Some(event);
        }
    }

    /// The next event, waiting at most `timeout` for it.
    pub fn next_event(&mut self, timeout: Duration) -> Next {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(event) = self.take_event() {
                return Next::Event(event);
            }
            if self.ended {
                return Next::Ended;
            }
            if !self.receive(deadline) {
                if self.ended {
                    continue;
                }
                if Instant::now() >= deadline {
                    return Next::TimedOut;
                }
            }
            self.decode();
        }
    }

    /// The next event; panics, naming `what` was expected, if none arrives
    /// within [`EVENT_TIMEOUT`] or the stream ends.
    #[track_caller]
    pub fn expect_event(&mut self, what: &str) -> Value {
        match self.next_event(EVENT_TIMEOUT) {
            Next::Event(event) => event,
            other => panic!(
                "expected {what} on the SSE stream, got {other:?} after {EVENT_TIMEOUT:?}; events so far: {:?}",
                self.seen
            ),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The value of response header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every event returned so far.
    pub fn seen(&self) -> &[Value] {
        &self.seen
    }
}

/// A response read event by event as the server sends them, whatever
/// carries it (a socket here, an in-process body in the host's protocol
/// tests), so that what reads one is written once.
pub trait Events {
    /// The next event, waiting at most `timeout` for it.
    fn next_event(&mut self, timeout: Duration) -> Next;

    /// Every event returned so far, for failure messages.
    fn seen(&self) -> &[Value];

    /// The next event; panics, naming `what` was expected, if none arrives
    /// within [`EVENT_TIMEOUT`] or the stream ends.
    #[track_caller]
    fn expect_event(&mut self, what: &str) -> Value {
        match self.next_event(EVENT_TIMEOUT) {
            Next::Event(event) => event,
            other => panic!(
                "expected {what} on the stream, got {other:?} after {EVENT_TIMEOUT:?}; events so far: {:?}",
                self.seen()
            ),
        }
    }
}

impl Events for SseStream {
    fn next_event(&mut self, timeout: Duration) -> Next {
        SseStream::next_event(self, timeout)
    }

    fn seen(&self) -> &[Value] {
        SseStream::seen(self)
    }
}

/// Opens a `subscriptions/listen` stream for `notifications` (a filter with
/// only `true` flags and URIs, so the acknowledgement echoes it exactly)
/// and checks its start: HTTP 200, an SSE body, and first the
/// acknowledgement tagged with the request id. Returns the id and the
/// stream, positioned after the acknowledgement.
#[track_caller]
pub fn listen(http: &Http, notifications: Value) -> (Value, SseStream) {
    let (id, mut stream) =
        http.open_stream("subscriptions/listen", listen_params(notifications.clone()));
    assert_eq!(stream.status(), 200, "a listen stream is HTTP 200");
    assert_eq!(
        stream
            .header("content-type")
            .map(|v| v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase())
            .as_deref(),
        Some("text/event-stream"),
        "a listen stream is an SSE body"
    );
    let ack = stream.expect_event("the acknowledgement");
    let params = assert_subscription_note(&ack, "notifications/subscriptions/acknowledged", &id);
    assert_eq!(
        params["notifications"], notifications,
        "the acknowledgement echoes the filter: {ack}"
    );
    (id, stream)
}

/// The data of one SSE event block (its `data:` lines joined), or `None`
/// for a block without data (a comment, such as a keep-alive).
pub fn event_data(block: &str) -> Option<String> {
    let data: Vec<&str> = block
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    (!data.is_empty()).then(|| data.join("\n"))
}
