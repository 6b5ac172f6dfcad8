//! The stdio transport: one JSON-RPC message per line on stdin and stdout.
//!
//! Requests run concurrently and may be answered in any order. A single
//! writer task owns stdout, so concurrent replies never interleave within a
//! line; logs go to stderr only. `notifications/cancelled` stops an in-flight
//! request, which then gets no reply. On end of input Airlock stops reading,
//! ends `subscriptions/listen` streams (with their final result), lets
//! in-flight requests finish (each is bounded by the call deadline), writes
//! their replies and exits.
//!
//! An `initialize` makes the process a legacy session (see
//! [`legacy`](crate::legacy)): from then on, requests without the
//! 2026-07-28 envelope are served as that session's, the client's responses
//! on stdin answer the requests Airlock sent it, and list changes are
//! written to stdout as they happen. Requests with the envelope stay
//! modern. At end of input the session closes, so requests waiting for the
//! client's answers fail at once instead of waiting for their timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use crate::auth;
use crate::legacy::{self, Legacy, Session};
use crate::protocol::jsonrpc::{self, Incoming, RpcError};
use crate::protocol::{RequestContext, Server};
use crate::telemetry::Via;

/// Serves on this process's stdin and stdout until stdin closes.
pub async fn serve(
    server: Arc<Server>,
    legacy: Arc<Legacy>,
    max_line_bytes: usize,
) -> std::io::Result<()> {
    serve_streams(
        server,
        legacy,
        max_line_bytes,
        BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
    )
    .await
}

/// Serves on any line-oriented byte streams (stdin and stdout in production).
pub async fn serve_streams(
    server: Arc<Server>,
    legacy: Arc<Legacy>,
    max_line_bytes: usize,
    mut input: impl AsyncBufRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let (out, lines) = mpsc::channel::<Vec<u8>>(256);
    let writer = tokio::spawn(write_lines(output, lines));
    let in_flight: Arc<Mutex<HashMap<String, AbortHandle>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let mut session: Option<Arc<Session>> = None;
    loop {
        let line = match read_line(&mut input, max_line_bytes).await? {
            Line::End => break,
            Line::TooLong => {
                let error = RpcError::invalid_request(format!(
                    "Message exceeds the {max_line_bytes}-byte limit"
                ));
                let _ = out.send(jsonrpc::encode_error(None, &error)).await;
                continue;
            }
            Line::Message(line) => line,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match jsonrpc::decode(&line) {
            Err(e) => {
                let _ = out
                    .send(jsonrpc::encode_error(e.id.as_ref(), &e.error))
                    .await;
            }
            Ok(Incoming::Response(response)) => match &session {
                Some(session) => {
                    let id = response.id.clone();
                    if !session.answer(response) {
                        tracing::info!(%id, "ignoring a response to no awaited request (unknown, answered before, or given up on)");
                    }
                }
                None => tracing::debug!(
                    "ignoring a JSON-RPC response: no legacy session, so no request was sent"
                ),
            },
            Ok(Incoming::Request(request)) if legacy::is_legacy_initialize(&request) => {
                let reply = match (&session, legacy.initialize(&request, auth::STDIO)) {
                    (Some(_), _) => jsonrpc::encode_error(
                        Some(&request.id),
                        &RpcError::invalid_request(
                            "Invalid Request: this process is already initialized",
                        ),
                    ),
                    (None, Err(reply)) => reply.body,
                    (None, Ok((opened, reply))) => {
                        let opened = Arc::new(opened);
                        session = Some(opened.clone());
                        let (legacy, out) = (legacy.clone(), out.clone());
                        // After the reply below is queued: the stream's first
                        // message cannot overtake it.
                        let _ = out.send(reply.body).await;
                        tasks.spawn(async move { legacy.session_stream(&opened, &out).await });
                        continue;
                    }
                };
                let _ = out.send(reply).await;
            }
            Ok(Incoming::Notification(note)) => {
                if let Some(session) = &session {
                    legacy.notification(session, &note);
                }
                if note.method == "notifications/cancelled"
                    && let Some(id) = note.params.get("requestId")
                    && let Some(task) = in_flight
                        .lock()
                        .expect("in-flight map")
                        .remove(&id.to_string())
                {
                    tracing::debug!(request = %id, "request cancelled by the client");
                    task.abort();
                }
            }
            Ok(Incoming::Request(request)) => {
                let key = request.id.to_string();
                let (server, out, registry) = (server.clone(), out.clone(), in_flight.clone());
                let adapter = legacy.clone();
                let finished_key = key.clone();
                let session = session
                    .clone()
                    .filter(|_| !legacy::carries_modern_envelope(&request.params));
                let handle = tasks.spawn(async move {
                    let reply = match session {
                        Some(session) => {
                            adapter
                                .handle(&session, &request, Some(&out), Via::Stdio)
                                .await
                        }
                        None => {
                            let context = RequestContext {
                                principal: auth::STDIO,
                                headers: None,
                            };
                            server.handle(&request, context, Some(&out)).await
                        }
                    };
                    // Unregister before replying: once the reply is queued a
                    // late cancellation must not abort anything.
                    registry
                        .lock()
                        .expect("in-flight map")
                        .remove(&finished_key);
                    if !reply.body.is_empty() {
                        let _ = out.send(reply.body).await;
                    }
                });
                in_flight.lock().expect("in-flight map").insert(key, handle);
            }
        }
        // Reap finished tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
    }
    server.shut_down();
    if let Some(session) = &session {
        session.stop_waiting();
    }
    while tasks.join_next().await.is_some() {}
    drop(out);
    writer.await.map_err(std::io::Error::other)?
}

async fn write_lines(
    mut output: impl AsyncWrite + Unpin,
    mut lines: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(mut line) = lines.recv().await {
        line.push(b'\n');
        output.write_all(&line).await?;
        // Flush when no more lines are queued: batches bursts, never delays.
        if lines.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await
}

enum Line {
    Message(Vec<u8>),
    TooLong,
    End,
}

/// Reads one `\n`-terminated line of at most `max` bytes. A longer line is
/// skipped to its end and reported as [`Line::TooLong`].
async fn read_line(input: &mut (impl AsyncBufRead + Unpin), max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Message(line),
            });
        }
        let (chunk, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(end) => (&buffer[..end], true),
            None => (buffer, false),
        };
        if !too_long && line.len() + chunk.len() <= max {
            line.extend_from_slice(chunk);
        } else {
            too_long = true;
            line = Vec::new();
        }
        let consumed = chunk.len() + usize::from(done);
        input.consume(consumed);
        if done {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Message(line)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, max).await.unwrap() {
                Line::End => return out,
                Line::TooLong => out.push("<too long>".into()),
                Line::Message(m) => out.push(String::from_utf8(m).unwrap()),
            }
        }
    }

    #[tokio::test]
    async fn reads_bounded_lines() {
        assert_eq!(
            lines(b"ab\ncdef\n\nlast", 4).await,
            ["ab", "cdef", "", "last"]
        );
        assert_eq!(lines(b"abcdefgh\nok\n", 4).await, ["<too long>", "ok"]);
        assert_eq!(lines(b"abcdefgh", 4).await, ["<too long>"]);
    }
}
