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
//! An `initialize` makes the process a legacy session (see the
//! [`Endpoint`], which decides each message's era): the client's
//! responses on stdin answer the requests Airlock sent it, and the
//! session's standalone stream (list changes) is stdout. At end of input
//! the session closes, so requests waiting for the client's answers fail at
//! once instead of waiting for their timeout.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::access::Caller;
use crate::endpoint::{Endpoint, Outcome, Peer, Process};
use crate::protocol::Notifier;
use crate::protocol::jsonrpc::{self, RpcError};

/// Serves on this process's stdin and stdout until stdin closes.
pub async fn serve(endpoint: Arc<Endpoint>, max_line_bytes: usize) -> std::io::Result<()> {
    serve_streams(
        endpoint,
        max_line_bytes,
        BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
    )
    .await
}

/// Serves on any line-oriented byte streams (stdin and stdout in production).
pub async fn serve_streams(
    endpoint: Arc<Endpoint>,
    max_line_bytes: usize,
    mut input: impl AsyncBufRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let (out, lines) = mpsc::channel::<Vec<u8>>(256);
    let writer = tokio::spawn(write_lines(output, lines));
    let process = Arc::new(Process::new(Caller::stdio()));
    let mut calls = JoinSet::new();
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
        let message = match jsonrpc::decode(&line) {
            Ok(message) => message,
            Err(e) => {
                let _ = out
                    .send(jsonrpc::encode_error(e.id.as_ref(), &e.error))
                    .await;
                continue;
            }
        };
        match endpoint.receive(Peer::Process(process.clone()), message) {
            // A refused response gets no reply in JSON-RPC; the endpoint logged it.
            Outcome::Accepted | Outcome::Ended | Outcome::Refused(_) => {}
            Outcome::Reply(reply) => {
                let _ = out.send(reply.body).await;
            }
            Outcome::Opened { reply, .. } => {
                // The reply first: the stream's first message cannot overtake it.
                let _ = out.send(reply.body).await;
                let stream = endpoint.open_stream(Peer::Process(process.clone()));
                run(&mut calls, stream, &out);
            }
            outcome @ Outcome::Run(_) => run(&mut calls, outcome, &out),
        }
        // Reap finished calls so the set does not grow without bound.
        while calls.try_join_next().is_some() {}
    }
    endpoint.shut_down();
    process.close();
    while calls.join_next().await.is_some() {}
    drop(out);
    writer.await.map_err(std::io::Error::other)?
}

/// Starts the call an outcome holds, writing what it sends and then its
/// reply (none when it was cancelled) to `out`.
fn run(calls: &mut JoinSet<()>, outcome: Outcome, out: &Notifier) {
    let Outcome::Run(call) = outcome else {
        return;
    };
    let out = out.clone();
    calls.spawn(async move {
        let reply = call.run(Some(out.clone())).await;
        if !reply.body.is_empty() {
            let _ = out.send(reply.body).await;
        }
    });
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
