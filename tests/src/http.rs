//! An MCP client for Streamable HTTP (one POST per message), plus a raw
//! socket helper for requests an HTTP library will not send (forged `Host`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Exchange, McpClient};
use crate::mcp::{PROTOCOL_VERSION, request};
use crate::sse::SseStream;

/// How long one HTTP exchange may take before the test fails.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

/// Request headers, in order; names compare case-insensitively.
#[derive(Clone, Debug, Default)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// Sets `name` to `value`, replacing any earlier value.
    pub fn set(&mut self, name: &str, value: &str) -> &mut Self {
        self.remove(name);
        self.0.push((name.to_string(), value.to_string()));
        self
    }

    /// Removes `name`.
    pub fn remove(&mut self, name: &str) -> &mut Self {
        self.0.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP response, fully read.
#[derive(Clone, Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Response headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// The value of response header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The media type of the body, without parameters, lower-case.
    pub fn media_type(&self) -> Option<String> {
        self.header("content-type").map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
    }

    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.media_type().as_deref() == Some("text/event-stream")
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as one JSON document; panics (showing it) otherwise.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "expected a JSON body (status {}, content-type {:?}): {e}\n{}",
                self.status,
                self.header("content-type"),
                self.text()
            )
        })
    }

    /// The `data:` payloads of an SSE body, each parsed as JSON.
    #[track_caller]
    pub fn events(&self) -> Vec<Value> {
        parse_sse(&self.text())
    }

    /// The final JSON-RPC response: the JSON body, or the last SSE event.
    #[track_caller]
    pub fn message(&self) -> Value {
        if self.is_sse() {
            self.events()
                .pop()
                .unwrap_or_else(|| panic!("an SSE body with no event: {}", self.text()))
        } else {
            self.json()
        }
    }

    /// Asserts this is a JSON-RPC error with HTTP `status` and `code` that
    /// echoes `id` (`None`: carries no id, as when the id could not be read).
    /// Returns the JSON body.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: i64, id: Option<&Value>) -> Value {
        assert_eq!(
            self.status,
            status,
            "wrong HTTP status; body: {}",
            self.text()
        );
        let body = self.message();
        assert_eq!(
            body["error"]["code"].as_i64(),
            Some(code),
            "wrong JSON-RPC error (HTTP {}): {body}",
            self.status
        );
        assert!(
            body["error"]["message"].is_string(),
            "an error needs a message: {body}"
        );
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        match id {
            Some(id) => assert_eq!(
                body.get("id"),
                Some(id),
                "the error must echo the id: {body}"
            ),
            None => assert!(
                body.get("id").is_none(),
                "an error for a message whose id could not be read carries no id: {body}"
            ),
        }
        body
    }

    /// The SSE events before the final response (empty for a JSON body).
    #[track_caller]
    pub fn notifications(&self) -> Vec<Value> {
        if self.is_sse() {
            let mut events = self.events();
            events.pop();
            events
        } else {
            Vec::new()
        }
    }
}

/// Parses `text/event-stream` text into the JSON of each event's data.
#[track_caller]
pub fn parse_sse(text: &str) -> Vec<Value> {
    let text = text.replace("\r\n", "\n");
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let Some(payload) = crate::sse::event_data(block) else {
            continue;
        };
        events.push(
            serde_json::from_str(&payload)
                .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {payload}")),
        );
    }
    events
}

/// The headers a well-behaved 2026-07-28 client sends for `method` with
/// `params`: JSON or SSE accepted, the protocol version, `Mcp-Method`, and
/// `Mcp-Name` for the methods that mirror a name, URI or task id.
pub fn request_headers(method: &str, params: &Value) -> Headers {
    let mut h = Headers::default();
    h.set("Content-Type", "application/json");
    h.set("Accept", "application/json, text/event-stream");
    h.set("MCP-Protocol-Version", PROTOCOL_VERSION);
    h.set("Mcp-Method", method);
    // The methods that mirror a name (or URI) in `Mcp-Name`.
    let mirrored = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    match mirrored.and_then(|field| params.get(field)) {
        Some(Value::String(name)) => {
            h.set("Mcp-Name", name);
        }
        Some(other) => {
            h.set("Mcp-Name", &other.to_string());
        }
        None => {}
    }
    h
}

/// An MCP client over Streamable HTTP.
pub struct Http {
    url: String,
    agent: ureq::Agent,
    bearer: Option<String>,
    next_id: AtomicU64,
}

impl Http {
    /// A client for the endpoint `url`.
    pub fn new(url: &str) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            // Error statuses are answers to assert on, not failures.
            .http_status_as_error(false)
            // Straight to 127.0.0.1, whatever proxy the environment names.
            .proxy(None)
            .timeout_global(Some(HTTP_TIMEOUT))
            .build()
            .into();
        Self {
            url: url.to_string(),
            agent,
            bearer: None,
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends `Authorization: Bearer <token>` on every request.
    pub fn with_bearer(mut self, token: &str) -> Self {
        self.bearer = Some(token.to_string());
        self
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A fresh numeric request id.
    pub fn next_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The headers a well-behaved client sends for `method` with `params`
    /// (see [`request_headers`]).
    pub fn headers_for(&self, method: &str, params: &Value) -> Headers {
        request_headers(method, params)
    }

    /// Sends request `method` with `params` and reads the response as a
    /// stream of SSE events, as they arrive (for `subscriptions/listen`);
    /// returns the id used and the open stream.
    pub fn open_stream(&self, method: &str, params: Value) -> (Value, SseStream) {
        let id = self.next_id();
        let mut headers = self.headers_for(method, &params);
        if let Some(token) = &self.bearer {
            headers.set("Authorization", &format!("Bearer {token}"));
        }
        let body = request(id.clone(), method, params);
        (id, SseStream::open(&self.url, &headers, &body))
    }

    /// POSTs `body` with exactly `headers` (plus the bearer token, if any).
    pub fn post(&self, headers: &Headers, body: &[u8]) -> Reply {
        let mut req = self.agent.post(&self.url);
        for (name, value) in &headers.0 {
            req = req.header(name.as_str(), value.as_str());
        }
        if let Some(token) = &self.bearer
            && headers.get("authorization").is_none()
        {
            req = req.header("Authorization", format!("Bearer {token}"));
        }
        let response = req
            .send(body)
            .unwrap_or_else(|e| panic!("POST {} failed: {e}", self.url));
        read_reply(response)
    }

    /// POSTs a JSON document with exactly `headers`.
    pub fn post_json(&self, headers: &Headers, body: &Value) -> Reply {
        self.post(headers, body.to_string().as_bytes())
    }

    /// Sends request `method` with `params` (which must already carry `_meta`
    /// if wanted) and the right headers; returns the id used and the reply.
    pub fn send(&self, method: &str, params: Value) -> (Value, Reply) {
        self.send_with(method, params, |_| {})
    }

    /// Like [`Http::send`], letting `edit` change the headers first.
    pub fn send_with(
        &self,
        method: &str,
        params: Value,
        edit: impl FnOnce(&mut Headers),
    ) -> (Value, Reply) {
        let id = self.next_id();
        let mut headers = self.headers_for(method, &params);
        edit(&mut headers);
        let body = request(id.clone(), method, params);
        (id, self.post_json(&headers, &body))
    }

    /// A GET on the endpoint.
    pub fn get(&self) -> Reply {
        let response = self
            .agent
            .get(&self.url)
            .header("Accept", "text/event-stream")
            .call()
            .unwrap_or_else(|e| panic!("GET {} failed: {e}", self.url));
        read_reply(response)
    }

    /// A DELETE on the endpoint.
    pub fn delete(&self) -> Reply {
        let response = self
            .agent
            .delete(&self.url)
            .call()
            .unwrap_or_else(|e| panic!("DELETE {} failed: {e}", self.url));
        read_reply(response)
    }
}

fn read_reply(mut response: ureq::http::Response<ureq::Body>) -> Reply {
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = response
        .body_mut()
        .with_config()
        .limit(256 * 1024 * 1024)
        .read_to_vec()
        .unwrap_or_else(|e| panic!("reading the response body failed: {e}"));
    Reply {
        status,
        headers,
        body,
    }
}

impl McpClient for Http {
    fn exchange(&self, method: &str, params: Value) -> Exchange {
        let (id, reply) = self.send(method, params);
        let response = reply.message();
        assert_eq!(
            response.get("id"),
            Some(&id),
            "the response must echo the request id (status {}): {response}",
            reply.status
        );
        Exchange {
            status: Some(reply.status),
            media_type: reply.media_type(),
            notifications: reply.notifications(),
            response,
        }
    }

    fn transport(&self) -> &'static str {
        "http"
    }
}

/// Sends `request` (a complete HTTP/1.1 request; it should say
/// `Connection: close`) over a plain socket to `addr` and returns the reply.
/// For requests an HTTP library would correct, like a forged `Host`.
pub fn raw_http(addr: &str, request: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream.write_all(request).expect("write the raw request");
    read_raw_reply(stream)
}

/// Reads the reply on `stream` until the server closes the connection (at
/// most [`HTTP_TIMEOUT`]). For requests written by hand, e.g. several kept
/// open at once.
pub fn read_raw_reply(mut stream: TcpStream) -> Reply {
    stream.set_read_timeout(Some(HTTP_TIMEOUT)).unwrap();
    let mut bytes = Vec::new();
    // The server may reset the connection after answering; keep what came.
    let _ = stream.read_to_end(&mut bytes);
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in: {}", String::from_utf8_lossy(&bytes)));
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let mut raw_body = bytes[split + 4..].to_vec();
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line: {status_line}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        raw_body = dechunk(&raw_body);
    }
    Reply {
        status,
        headers,
        body: raw_body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            break;
        };
        data = &data[eol + 2..];
        if size == 0 || data.len() < size {
            out.extend_from_slice(&data[..size.min(data.len())]);
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or_default();
    }
    out
}
