//! A small OpenTelemetry collector for the trace tests: it takes OTLP over
//! HTTP (`POST /v1/traces`, an `ExportTraceServiceRequest` in protobuf),
//! decodes each export and keeps its spans, for the tests to look at; and
//! one that never answers ([`SilentCollector`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode as SpanStatus;
use prost::Message;
use tokio::sync::oneshot;

use crate::wait_until;

/// One span as it was received.
#[derive(Clone, Debug)]
pub struct ReceivedSpan {
    /// Its name.
    pub name: String,
    /// Its trace id, in lowercase hex.
    pub trace_id: String,
    /// Its own id, in lowercase hex.
    pub span_id: String,
    /// Its parent's id, in lowercase hex; empty for a root span.
    pub parent_span_id: String,
    /// Its kind.
    pub kind: SpanKind,
    /// Its attributes, every value as text (`42`, `true`, `tool_error`).
    pub attributes: BTreeMap<String, String>,
    /// `Some(description)` when its status is ERROR.
    pub error: Option<String>,
    /// The spans it links to, as (trace id, span id) in lowercase hex.
    pub links: Vec<(String, String)>,
    /// The attributes of the resource (the process) that sent it.
    pub resource: BTreeMap<String, String>,
}

impl ReceivedSpan {
    /// The value of attribute `key`, if it has one.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// What the receiver got so far.
#[derive(Debug, Default)]
struct Received {
    /// Export requests, whatever they held.
    exports: usize,
    /// Every span of every export, in arrival order.
    spans: Vec<ReceivedSpan>,
}

/// An OTLP/HTTP receiver on a free port of 127.0.0.1; stops when dropped.
pub struct OtlpReceiver {
    endpoint: String,
    received: Arc<Mutex<Received>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Default for OtlpReceiver {
    fn default() -> Self {
        Self::start()
    }
}

impl OtlpReceiver {
    /// Starts listening.
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the OTLP receiver");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener for tokio");
        let endpoint = format!("http://{}", listener.local_addr().expect("its address"));
        let received = Arc::new(Mutex::new(Received::default()));
        let (stop, stopped) = oneshot::channel::<()>();
        let app = Router::new()
            .route("/v1/traces", post(export))
            .with_state(received.clone());
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
                .expect("a tokio runtime for the OTLP receiver");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)
                    .expect("the OTLP receiver's listener on tokio");
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .expect("the OTLP receiver runs");
            });
        });
        Self {
            endpoint,
            received,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The base URL to give `--otlp-endpoint`: `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// How many export requests arrived.
    pub fn exports(&self) -> usize {
        self.received.lock().unwrap().exports
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received.lock().unwrap().spans.clone()
    }

    /// Waits for a span that `matches` (`what` says which, for the failure
    /// message) and returns it.
    #[track_caller]
    pub fn wait_for_span(
        &self,
        what: &str,
        matches: impl Fn(&ReceivedSpan) -> bool,
    ) -> ReceivedSpan {
        wait_until(what, || {
            let spans = self.spans();
            spans
                .iter()
                .find(|span| matches(span))
                .cloned()
                .ok_or_else(|| format!("{} spans: {:?}", spans.len(), names(&spans)))
        })
    }

    /// Waits until `parent` has a child span of each of `names`, and
    /// returns all its children.
    #[track_caller]
    pub fn wait_for_children(&self, parent: &ReceivedSpan, names: &[&str]) -> Vec<ReceivedSpan> {
        wait_until(&format!("children {names:?} of {}", parent.name), || {
            let children: Vec<ReceivedSpan> = self
                .spans()
                .into_iter()
                .filter(|span| {
                    span.trace_id == parent.trace_id && span.parent_span_id == parent.span_id
                })
                .collect();
            if names
                .iter()
                .all(|name| children.iter().any(|child| child.name == *name))
            {
                Ok(children)
            } else {
                Err(format!("children so far: {:?}", self::names(&children)))
            }
        })
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A collector that takes connections and never answers: every export to
/// it waits until the exporter gives up. Stops when dropped.
pub struct SilentCollector {
    endpoint: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SilentCollector {
    /// Starts listening on a free port of 127.0.0.1.
    pub fn start() -> Self {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind the silent collector");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let endpoint = format!("http://{}", listener.local_addr().expect("its address"));
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = thread::spawn(move || {
            // Held open, never read from nor written to.
            let mut held = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Self {
            endpoint,
            stop,
            thread: Some(thread),
        }
    }

    /// The base URL to give `--otlp-endpoint`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for SilentCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The names of `spans`, for messages.
fn names(spans: &[ReceivedSpan]) -> Vec<&str> {
    spans.iter().map(|span| span.name.as_str()).collect()
}

/// `POST /v1/traces`: decodes the export, keeps its spans, and answers
/// with an empty `ExportTraceServiceResponse` (full success).
async fn export(
    State(received): State<Arc<Mutex<Received>>>,
    body: Bytes,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], Vec<u8>) {
    let protobuf = [(header::CONTENT_TYPE, "application/x-protobuf")];
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, protobuf, Vec::new());
    };
    let mut received = received.lock().unwrap();
    received.exports += 1;
    for resource_spans in request.resource_spans {
        let resource = attributes(
            resource_spans
                .resource
                .map(|resource| resource.attributes)
                .unwrap_or_default(),
        );
        for scope_spans in resource_spans.scope_spans {
            for span in scope_spans.spans {
                let error = span
                    .status
                    .filter(|status| status.code == SpanStatus::Error as i32)
                    .map(|status| status.message);
                received.spans.push(ReceivedSpan {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    kind: SpanKind::try_from(span.kind).unwrap_or(SpanKind::Unspecified),
                    attributes: attributes(span.attributes),
                    error,
                    links: span
                        .links
                        .iter()
                        .map(|link| (hex(&link.trace_id), hex(&link.span_id)))
                        .collect(),
                    resource: resource.clone(),
                });
            }
        }
    }
    (StatusCode::OK, protobuf, Vec::new())
}

/// Attributes as text.
fn attributes(list: Vec<KeyValue>) -> BTreeMap<String, String> {
    list.into_iter()
        .map(|pair| (pair.key, pair.value.map(text).unwrap_or_default()))
        .collect()
}

/// A value as text.
fn text(value: AnyValue) -> String {
    match value.value {
        Some(any_value::Value::StringValue(text)) => text,
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(any_value::Value::IntValue(number)) => number.to_string(),
        Some(any_value::Value::DoubleValue(number)) => number.to_string(),
        other => format!("{other:?}"),
    }
}

/// Bytes in lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
