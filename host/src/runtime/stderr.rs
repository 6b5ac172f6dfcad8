//! A guest's stderr, kept as a small bounded tail in memory.
//!
//! A Rust guest that panics prints the panic message to stderr and then
//! traps; the trap alone says little ("wasm `unreachable` instruction
//! executed"). Every call therefore gets its own [`StderrTail`]: it keeps
//! the last [`STDERR_TAIL_BYTES`] bytes written and silently discards older
//! ones, so a chatty guest can neither grow host memory nor fail its own
//! writes. When a call fails, the tail goes into the server's log line,
//! its line breaks escaped like everything logged (see [`crate::logging`]).

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// How many of the most recent stderr bytes a call keeps.
pub const STDERR_TAIL_BYTES: usize = 2048;

/// The last [`STDERR_TAIL_BYTES`] bytes a guest wrote to stderr. Cloning
/// shares the buffer.
#[derive(Clone, Default)]
pub struct StderrTail {
    buffer: Arc<Mutex<VecDeque<u8>>>,
}

impl StderrTail {
    /// An empty tail.
    pub fn new() -> StderrTail {
        StderrTail::default()
    }

    /// The captured text (lossy UTF-8, trimmed), or `None` if the guest
    /// wrote nothing but whitespace.
    pub fn text(&self) -> Option<String> {
        let buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = buffer.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }

    fn push(&self, bytes: &[u8]) {
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = &bytes[bytes.len().saturating_sub(STDERR_TAIL_BYTES)..];
        let overflow = (buffer.len() + bytes.len()).saturating_sub(STDERR_TAIL_BYTES);
        buffer.drain(..overflow);
        buffer.extend(bytes);
    }
}

impl std::fmt::Debug for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StderrTail").finish_non_exhaustive()
    }
}

impl AsyncWrite for StderrTail {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrTail {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_tail() {
        let tail = StderrTail::new();
        assert_eq!(tail.text(), None);
        tail.push(b"  \n");
        assert_eq!(tail.text(), None);
        tail.push(&vec![b'a'; STDERR_TAIL_BYTES]);
        tail.push(b"panicked at src/lib.rs:1:1\n");
        let text = tail.text().unwrap();
        assert_eq!(text.len(), STDERR_TAIL_BYTES - 1); // trailing newline trimmed
        assert!(text.ends_with("panicked at src/lib.rs:1:1"));
        tail.push(&vec![b'b'; 3 * STDERR_TAIL_BYTES]);
        assert_eq!(tail.text().unwrap(), "b".repeat(STDERR_TAIL_BYTES));
    }
}
