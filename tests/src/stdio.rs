//! An MCP client for the stdio transport: one JSON message per line.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Exchange, McpClient};
use crate::mcp::request;
use crate::server::Proc;

/// How long the tests wait for one stdio response.
pub const STDIO_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Inbox {
    /// Responses not yet claimed, by the JSON text of their id.
    responses: HashMap<String, Value>,
    /// Notifications not yet claimed, in arrival order.
    notifications: Vec<Value>,
    /// Every stdout line, in order, as received.
    lines: Vec<String>,
    /// stdout reached end of file.
    eof: bool,
}

/// `airlock serve --stdio` with its stdin and stdout piped; killed on drop.
pub struct StdioServer {
    proc: Mutex<Proc>,
    stdin: Mutex<Option<ChildStdin>>,
    lines: Mutex<Receiver<String>>,
    inbox: Mutex<Inbox>,
    next_id: AtomicU64,
}

impl StdioServer {
    pub(crate) fn new(mut proc: Proc) -> Self {
        let stdin = proc.take_stdin().expect("stdin is piped");
        let stdout = proc.take_stdout().expect("stdout is piped");
        let (tx, rx) = channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line).into_owned();
                        if tx.send(text).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Self {
            proc: Mutex::new(proc),
            stdin: Mutex::new(Some(stdin)),
            lines: Mutex::new(rx),
            inbox: Mutex::new(Inbox::default()),
            next_id: AtomicU64::new(1),
        }
    }

    /// A fresh numeric request id.
    pub fn next_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Writes one line (a newline is added).
    pub fn send_line(&self, line: &str) {
        let mut guard = self.stdin.lock().unwrap();
        let stdin = guard.as_mut().expect("stdin is already closed");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("write to the server's stdin");
    }

    /// Writes one JSON message.
    pub fn send(&self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Sends request `method` with `params` under a fresh id; returns the id.
    pub fn send_request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        self.send(&request(id.clone(), method, params));
        id
    }

    /// Closes stdin (EOF for the server).
    pub fn close_stdin(&self) {
        self.stdin.lock().unwrap().take();
    }

    /// Reads at most one line, waiting until `deadline`. Returns false on
    /// timeout or end of file.
    fn pump(&self, inbox: &mut MutexGuard<'_, Inbox>, deadline: Instant) -> bool {
        if inbox.eof {
            return false;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let received = self.lines.lock().unwrap().recv_timeout(wait);
        match received {
            Ok(line) => {
                inbox.lines.push(line.clone());
                // Non-JSON lines stay in `lines` for the tests to find.
                if let Ok(message) = serde_json::from_str::<Value>(&line) {
                    let is_response =
                        message.get("result").is_some() || message.get("error").is_some();
                    if is_response {
                        let key = message.get("id").unwrap_or(&Value::Null).to_string();
                        inbox.responses.insert(key, message);
                    } else {
                        inbox.notifications.push(message);
                    }
                }
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                inbox.eof = true;
                false
            }
        }
    }

    /// Waits for the response to `id`, at most `timeout`; `None` if none came.
    pub fn try_response(&self, id: &Value, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let key = id.to_string();
        let mut inbox = self.inbox.lock().unwrap();
        loop {
            if let Some(found) = inbox.responses.remove(&key) {
                return Some(found);
            }
            if !self.pump(&mut inbox, deadline) && (inbox.eof || Instant::now() >= deadline) {
                return inbox.responses.remove(&key);
            }
        }
    }

    /// Waits for the response to `id`; panics after [`STDIO_TIMEOUT`].
    #[track_caller]
    pub fn response(&self, id: &Value) -> Value {
        self.try_response(id, STDIO_TIMEOUT).unwrap_or_else(|| {
            panic!(
                "no response to id {id} within {STDIO_TIMEOUT:?}; stdout so far:\n{}\nstderr:\n{}",
                self.lines().join(""),
                self.stderr()
            )
        })
    }

    /// The oldest notification not yet taken, waiting at most `timeout` for
    /// one; `None` if none came. Notifications not bound to a request (those
    /// of a `subscriptions/listen` stream) arrive here in order.
    pub fn next_notification(&self, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let mut inbox = self.inbox.lock().unwrap();
        loop {
            if !inbox.notifications.is_empty() {
                return Some(inbox.notifications.remove(0));
            }
            if !self.pump(&mut inbox, deadline) && (inbox.eof || Instant::now() >= deadline) {
                return None;
            }
        }
    }

    /// Takes the notifications received so far.
    pub fn take_notifications(&self) -> Vec<Value> {
        std::mem::take(&mut self.inbox.lock().unwrap().notifications)
    }

    /// Reads stdout until end of file or `timeout`; returns whether EOF came.
    pub fn read_to_eof(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut inbox = self.inbox.lock().unwrap();
        while !inbox.eof && Instant::now() < deadline {
            self.pump(&mut inbox, deadline);
        }
        inbox.eof
    }

    /// Every stdout line received so far (each with its newline).
    pub fn lines(&self) -> Vec<String> {
        self.inbox.lock().unwrap().lines.clone()
    }

    /// Whether a response to `id` has been received (and not yet claimed).
    pub fn has_response(&self, id: &Value) -> bool {
        self.inbox
            .lock()
            .unwrap()
            .responses
            .contains_key(&id.to_string())
    }

    /// Waits for the process to exit, at most `timeout`.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        self.proc.lock().unwrap().wait_timeout(timeout)
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.proc.lock().unwrap().stderr()
    }
}

impl McpClient for StdioServer {
    fn exchange(&self, method: &str, params: Value) -> Exchange {
        self.take_notifications();
        let id = self.send_request(method, params);
        let response = self.response(&id);
        assert_eq!(
            response.get("id"),
            Some(&id),
            "the response must echo the request id: {response}"
        );
        Exchange {
            status: None,
            media_type: None,
            notifications: self.take_notifications(),
            response,
        }
    }

    fn transport(&self) -> &'static str {
        "stdio"
    }
}
