//! The caller's trace context: W3C `traceparent` and `tracestate`, from the
//! request's `params._meta` and from the HTTP request's headers, and which
//! of the two a span continues.
//!
//! `_meta` wins: it travels with the MCP message whatever carries it
//! (stdio, proxies, several HTTP requests for one MCP request), so it is
//! the parent. The HTTP header's context is the parent only when `_meta`
//! has none; when both are there and differ, the header's becomes a link of
//! the span, as the conventions for MCP ask. A malformed value is ignored:
//! the request starts a new trace, it never fails because of it.

use axum::http::{HeaderMap, HeaderValue};
use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{Link, SpanContext, TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};

/// The W3C trace context header (and `_meta` key) of the parent span.
const TRACEPARENT: &str = "traceparent";
/// The W3C vendor-specific trace state header (and `_meta` key).
const TRACESTATE: &str = "tracestate";

/// How a request reached Airlock, with the HTTP trace headers it carried:
/// what a request span records of its transport.
#[derive(Debug, Clone)]
pub enum Via {
    /// stdin and stdout of the process.
    Stdio,
    /// An HTTP request.
    Http(TraceHeaders),
}

impl Via {
    /// An HTTP request, with its `headers` when they are at hand: its trace
    /// headers are copied only when traces are exported (otherwise this is
    /// one check, and nothing).
    pub fn http(headers: Option<&HeaderMap>) -> Via {
        match headers.filter(|_| super::tracer().is_some()) {
            Some(headers) => Via::Http(TraceHeaders::from_headers(headers)),
            None => Via::Http(TraceHeaders::default()),
        }
    }

    /// `network.transport`: `tcp` for HTTP, `pipe` for stdio.
    pub(super) fn network_transport(&self) -> &'static str {
        match self {
            Via::Stdio => "pipe",
            Via::Http(_) => "tcp",
        }
    }
}

/// The W3C trace headers of one HTTP request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceHeaders {
    traceparent: Option<HeaderValue>,
    tracestate: Option<HeaderValue>,
}

impl TraceHeaders {
    /// The trace headers among `headers`.
    pub(super) fn from_headers(headers: &HeaderMap) -> TraceHeaders {
        TraceHeaders {
            traceparent: headers.get(TRACEPARENT).cloned(),
            tracestate: headers.get(TRACESTATE).cloned(),
        }
    }
}

impl Extractor for TraceHeaders {
    fn get(&self, key: &str) -> Option<&str> {
        let value = match key {
            TRACEPARENT => &self.traceparent,
            TRACESTATE => &self.tracestate,
            _ => &None,
        };
        value.as_ref().and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT, TRACESTATE]
    }
}

/// A request's `params._meta`, read as a carrier of trace context (string
/// members only).
struct MetaCarrier<'a>(Option<&'a Map<String, Value>>);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0?.get(key)?.as_str()
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .map(|meta| meta.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// Where a request span hangs: the context of its parent (empty for a new
/// trace), and the links it records.
pub(super) struct Parent {
    /// The parent's context.
    pub(super) context: Context,
    /// A link to the HTTP request's own context when `_meta` won over it.
    pub(super) links: Vec<Link>,
}

/// The parent of a request with these `params`, arrived `via`.
pub(super) fn parent(params: &Map<String, Value>, via: &Via) -> Parent {
    let meta = params.get("_meta").and_then(Value::as_object);
    let from_meta = extract(&MetaCarrier(meta));
    let from_header = match via {
        Via::Http(headers) => extract(headers),
        Via::Stdio => None,
    };
    match (from_meta, from_header) {
        (Some(meta), Some(header)) if meta != header => Parent {
            context: Context::new().with_remote_span_context(meta),
            links: vec![Link::with_context(header)],
        },
        (Some(parent), _) | (None, Some(parent)) => Parent {
            context: Context::new().with_remote_span_context(parent),
            links: Vec::new(),
        },
        (None, None) => Parent {
            context: Context::new(),
            links: Vec::new(),
        },
    }
}

/// The valid span context a carrier holds, if any.
fn extract(carrier: &dyn Extractor) -> Option<SpanContext> {
    carrier.get(TRACEPARENT)?;
    let context = TraceContextPropagator::new().extract_with_context(&Context::new(), carrier);
    let span = context.span().span_context().clone();
    span.is_valid().then_some(span)
}
