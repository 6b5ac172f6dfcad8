//! The server's log holds one line per event, and only the lines the server
//! writes.
//!
//! Much of what the host logs comes from outside: a guest's log and progress
//! messages, the URIs it reports, the tail of its stderr, tool names and
//! other strings a client sent. tracing-subscriber escapes ANSI escape
//! sequences in an event's message, but not line breaks, and nothing at all
//! in fields formatted with `%`. A newline in any of those strings would
//! start a line of its own that reads like one the server wrote.
//!
//! [`OneLinePerEvent`] closes this for every event at once: it wraps the
//! writer the `fmt` layer writes to and, within each formatted event,
//! escapes every control character except the event's own final newline
//! (`\n` as `\\n`, `\r` as `\\r`, `\t` as `\\t`, others as `\\u{..}`), and
//! the Unicode line and paragraph separators. ESC is escaped too, unless
//! colours are on and it starts a colour code (`ESC [ digits ; … m`), the
//! only sequences the `fmt` layer writes. A backslash is kept as it is: the
//! escaped form of a newline and a guest's literal `\n` look alike, but
//! neither starts a line.
//!
//! The `fmt` layer formats each event into a buffer and hands it to a fresh
//! writer in one `write_all`, so one [`Write::write`] call here is one event.
//!
//! With `--log-format json` ([`json`]) each line is one JSON object (JSON
//! escapes every control character itself), and every line logged while a
//! request is served carries, in `span`, the `request_id` and `trace_id` of
//! that request ([`in_request_span`]), so the log, the traces and the audit
//! trail join.

use std::borrow::Cow;
use std::future::Future;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::{Instrument, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// The format of the server log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, coloured on a terminal.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Whether requests get their span ([`in_request_span`]): only the JSON
/// log shows it, so the text log stays as it was.
static REQUEST_SPANS: AtomicBool = AtomicBool::new(false);

/// A subscriber writing one JSON object per event to `writer`: `timestamp`,
/// `level`, `target`, `fields` (the message among them), and `span`, the
/// fields of the request span the event belongs to. Turns request spans on.
pub fn json<W>(
    filter: tracing_subscriber::EnvFilter,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    REQUEST_SPANS.store(true, Ordering::Relaxed);
    tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
}

/// Runs the future `work` makes, the serving of request `id`, inside a span
/// that names its request id and, with traces, its trace id, when the log
/// shows them. Poll it inside the request's trace context.
///
/// It takes a maker, not a future, as every wrapper of a request's future
/// does: an `async fn` keeps a future it is given beside the one it awaits,
/// so each wrapper would double the size of the request's future, which is
/// then copied whole when boxed.
pub async fn in_request_span<F: Future>(
    id: &serde_json::Value,
    work: impl FnOnce() -> F,
) -> F::Output {
    if !REQUEST_SPANS.load(Ordering::Relaxed) {
        return work().await;
    }
    let id = match id {
        serde_json::Value::String(text) => Cow::Borrowed(text.as_str()),
        other => Cow::Owned(other.to_string()),
    };
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        trace_id = tracing::field::Empty
    );
    if let Some(trace) = crate::telemetry::current_trace_id() {
        span.record("trace_id", trace);
    }
    work().instrument(span).await
}

/// A [`MakeWriter`] whose writers keep every event on one line (see the
/// module doc). Wraps another `MakeWriter`, e.g. `std::io::stderr`.
#[derive(Debug, Clone)]
pub struct OneLinePerEvent<M> {
    inner: M,
    colours: bool,
}

impl<M> OneLinePerEvent<M> {
    /// Escapes what `inner`'s writers get; `colours` says whether the
    /// `fmt` layer writes colour codes (`with_ansi`), which are then kept.
    pub fn new(inner: M, colours: bool) -> OneLinePerEvent<M> {
        OneLinePerEvent { inner, colours }
    }

    fn wrap<W>(&self, inner: W) -> OneLineWriter<W> {
        OneLineWriter {
            inner,
            colours: self.colours,
        }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for OneLinePerEvent<M> {
    type Writer = OneLineWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        self.wrap(self.inner.make_writer())
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        self.wrap(self.inner.make_writer_for(meta))
    }
}

/// The writer of one event: escapes it (see the module doc) and writes it
/// to the wrapped writer in one `write_all`.
#[derive(Debug)]
pub struct OneLineWriter<W> {
    inner: W,
    colours: bool,
}

impl<W: Write> Write for OneLineWriter<W> {
    /// Takes `buf` as one whole event: only a newline that ends it is kept.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let event = String::from_utf8_lossy(buf);
        self.inner
            .write_all(escape_event(&event, self.colours).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `event` with every control character and line separator escaped, except
/// a final newline and, if `colours`, the ESC of each colour code.
fn escape_event(event: &str, colours: bool) -> Cow<'_, str> {
    let (body, end) = match event.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (event, ""),
    };
    let mut escaped: Option<String> = None;
    let mut copied = 0;
    for (at, c) in body.char_indices() {
        let kept = !breaks_the_line(c) || (colours && is_colour_code(&body[at..]));
        if kept {
            continue;
        }
        let out = escaped.get_or_insert_with(|| String::with_capacity(event.len() + 16));
        out.push_str(&body[copied..at]);
        out.extend(c.escape_debug());
        copied = at + c.len_utf8();
    }
    match escaped {
        None => Cow::Borrowed(event),
        Some(mut out) => {
            out.push_str(&body[copied..]);
            out.push_str(end);
            Cow::Owned(out)
        }
    }
}

/// A character that could end a line, move the cursor or start a terminal
/// sequence: a C0 or C1 control (ESC included) or a Unicode line or
/// paragraph separator.
fn breaks_the_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Whether `s` starts with a colour code (SGR): `ESC [`, digits and
/// semicolons, `m`.
fn is_colour_code(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("\u{1b}[") else {
        return false;
    };
    let parameters = rest
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    rest[parameters..].starts_with('m')
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Writes `event` through a [`OneLineWriter`] and returns what came out.
    fn written(event: &str, colours: bool) -> String {
        let mut writer = OneLinePerEvent::new(Vec::<u8>::new, colours).make_writer();
        writer.write_all(event.as_bytes()).unwrap();
        String::from_utf8(writer.inner).unwrap()
    }

    #[test]
    fn the_span_holds_the_request_once() {
        let id = serde_json::json!(1);
        let span = in_request_span(&id, || crate::held_once::four_kib(()));
        crate::held_once::assert_held_once(&span);
    }

    #[test]
    fn line_breaks_are_escaped_and_the_final_newline_kept() {
        assert_eq!(written("a\nb\rc\td\n", false), "a\\nb\\rc\\td\n");
        assert_eq!(written("no newline\r", false), "no newline\\r");
        assert_eq!(written("\n\n", false), "\\n\n");
    }

    #[test]
    fn a_forged_line_stays_inside_the_event() {
        let event = "2026-01-01T00:00:00Z  INFO airlock::guest: hi\n\
                     2026-01-01T00:00:01Z  INFO airlock: forged\r\n";
        let out = written(event, false);
        assert_eq!(out.matches('\n').count(), 1, "{out:?}");
        assert!(out.ends_with('\n'), "{out:?}");
        assert!(
            out.contains("hi\\n2026-01-01T00:00:01Z  INFO airlock: forged\\r\n"),
            "{out:?}"
        );
    }

    #[test]
    fn other_controls_and_separators_are_escaped() {
        let out = written(
            "\0\u{7}\u{1b}[2J\u{7f}\u{85}\u{9b}\u{2028}\u{2029}\n",
            false,
        );
        assert_eq!(
            out,
            "\\0\\u{7}\\u{1b}[2J\\u{7f}\\u{85}\\u{9b}\\u{2028}\\u{2029}\n"
        );
    }

    #[test]
    fn multi_byte_text_is_kept_intact() {
        let event = "é ✓ 日本語 🦀 \\n stays\n";
        assert_eq!(written(event, false), event);
        assert!(matches!(escape_event(event, false), Cow::Borrowed(_)));
        assert_eq!(written("日\n本\n", false), "日\\n本\n");
    }

    #[test]
    fn colour_codes_are_kept_only_when_colours_are_on() {
        let coloured = "\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m hi\n";
        assert_eq!(written(coloured, true), coloured);
        assert_eq!(
            written(coloured, false),
            "\\u{1b}[2m2026\\u{1b}[0m \\u{1b}[32m INFO\\u{1b}[0m hi\n"
        );
        // Anything but a colour code is escaped even with colours on.
        assert_eq!(
            written("\u{1b}[2J\u{1b}]0;title\u{7}\u{1b}[\n", true),
            "\\u{1b}[2J\\u{1b}]0;title\\u{7}\\u{1b}[\n"
        );
    }

    /// A writer that appends to a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_lines_carry_the_request_id() {
        let captured = Captured::default();
        let sink = captured.clone();
        let filter = tracing_subscriber::EnvFilter::new("info");
        let subscriber = json(filter, move || sink.clone());
        tracing::subscriber::with_default(subscriber, || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            runtime.block_on(in_request_span(&serde_json::json!("req-7"), || async {
                tracing::info!(tool = "echo", "inside\nthe request");
            }));
            tracing::info!("outside");
        });
        let out = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert_eq!(lines[0]["level"], "INFO");
        assert_eq!(lines[0]["fields"]["message"], "inside\nthe request");
        assert_eq!(lines[0]["fields"]["tool"], "echo");
        assert_eq!(lines[0]["span"]["request_id"], "req-7");
        assert!(lines[1].get("span").is_none(), "{out}");
    }

    #[test]
    fn every_event_of_the_fmt_layer_is_one_line() {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(OneLinePerEvent::new(move || sink.clone(), false))
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let from_outside = "a\nFAKE forged\r";
            tracing::info!(uri = %from_outside, name = from_outside, "said: {from_outside}");
            tracing::warn!("second\u{2028}event");
        });
        let out = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines.iter().all(|l| !l.starts_with("FAKE")), "{out}");
        assert!(lines[0].contains("said: a\\nFAKE forged\\r"), "{out}");
        assert!(lines[0].contains("uri=a\\nFAKE forged\\r"), "{out}");
        assert!(lines[1].contains("second\\u{2028}event"), "{out}");
        assert!(!out.contains('\r'), "{out:?}");
    }
}
