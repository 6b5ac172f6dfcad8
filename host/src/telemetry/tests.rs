//! Request spans as the conventions name them, whose trace they join, and
//! how a reply's outcome is read.

use axum::http::{HeaderMap, HeaderValue};
use opentelemetry::trace::{SpanKind, TraceContextExt, TracerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Map, Value, json};

use super::propagation::parent;
use super::request::start;
use super::*;

const META_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const HEADER_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn params(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

fn http_with(traceparent: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", HeaderValue::from_str(traceparent).unwrap());
    headers
}

/// The trace headers of `headers`, as [`Via::http`] copies them when
/// traces are on.
fn via_http(headers: &HeaderMap) -> Via {
    Via::Http(TraceHeaders::from_headers(headers))
}

/// The hex ids of the span a parent context holds.
fn ids(context: &opentelemetry::Context) -> (String, String) {
    let span = context.span();
    let span = span.span_context();
    (span.trace_id().to_string(), span.span_id().to_string())
}

#[test]
fn meta_is_the_parent_and_the_header_a_link() {
    let params = params(json!({"_meta": {"traceparent": META_PARENT}}));
    let found = parent(&params, &via_http(&http_with(HEADER_PARENT)));
    assert_eq!(
        ids(&found.context),
        (
            "4bf92f3577b34da6a3ce929d0e0e4736".to_owned(),
            "00f067aa0ba902b7".to_owned()
        )
    );
    assert_eq!(found.links.len(), 1);
    assert_eq!(
        found.links[0].span_context.span_id().to_string(),
        "b7ad6b7169203331"
    );
}

#[test]
fn the_header_is_the_parent_without_meta_and_bad_values_are_ignored() {
    let none = params(json!({}));
    let found = parent(&none, &via_http(&http_with(HEADER_PARENT)));
    assert_eq!(ids(&found.context).1, "b7ad6b7169203331");
    assert!(found.links.is_empty());

    // A malformed `_meta` value gives way to the header; malformed both: a
    // new trace.
    let bad = params(json!({"_meta": {"traceparent": "00-zz-01"}}));
    let found = parent(&bad, &via_http(&http_with(HEADER_PARENT)));
    assert_eq!(ids(&found.context).1, "b7ad6b7169203331");
    let found = parent(&bad, &via_http(&http_with("garbage")));
    assert!(!found.context.has_active_span());
    let not_a_string = params(json!({"_meta": {"traceparent": 7}}));
    assert!(!parent(&not_a_string, &Via::Stdio).context.has_active_span());
    // The same context in both: a parent, no link to itself.
    let same = params(json!({"_meta": {"traceparent": HEADER_PARENT}}));
    assert!(
        parent(&same, &via_http(&http_with(HEADER_PARENT)))
            .links
            .is_empty()
    );
}

/// The one span `start` makes for `incoming`, ended.
fn span_of(incoming: &Incoming<'_>) -> SpanData {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("test");
    start(&tracer, incoming).span().end();
    let mut spans = exporter.get_finished_spans().expect("the spans");
    assert_eq!(spans.len(), 1);
    spans.remove(0)
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|pair| pair.key.as_str() == key)
        .map(|pair| pair.value.to_string())
}

#[test]
fn spans_are_named_and_attributed_as_the_conventions_say() {
    let call = params(json!({"name": "sha256", "_meta": {"traceparent": META_PARENT}}));
    let span = span_of(&Incoming {
        method: "tools/call",
        id: &json!(7),
        params: &call,
        protocol_version: Some("2026-07-28"),
        via: Via::Stdio,
        session: None,
        target_served: true,
    });
    assert_eq!(span.name, "tools/call sha256");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.parent_span_id.to_string(), "00f067aa0ba902b7");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "sha256"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "7"),
        ("mcp.protocol.version", "2026-07-28"),
        ("network.transport", "pipe"),
    ] {
        assert_eq!(attribute(&span, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(attribute(&span, "network.protocol.name"), None);

    let prompt = params(json!({"name": "greet"}));
    let span = span_of(&Incoming {
        method: "prompts/get",
        id: &json!("a"),
        params: &prompt,
        protocol_version: Some("2025-11-25"),
        via: Via::Http(TraceHeaders::default()),
        session: Some("s-1"),
        target_served: true,
    });
    assert_eq!(span.name, "prompts/get greet");
    assert_eq!(
        attribute(&span, "gen_ai.prompt.name").as_deref(),
        Some("greet")
    );
    assert_eq!(attribute(&span, "gen_ai.operation.name"), None);
    assert_eq!(attribute(&span, "jsonrpc.request.id").as_deref(), Some("a"));
    assert_eq!(attribute(&span, "mcp.session.id").as_deref(), Some("s-1"));
    assert_eq!(
        attribute(&span, "network.transport").as_deref(),
        Some("tcp")
    );
    assert_eq!(
        attribute(&span, "network.protocol.name").as_deref(),
        Some("http")
    );

    let read = params(json!({"uri": "file:///a"}));
    let span = span_of(&Incoming {
        method: "resources/read",
        id: &Value::Null,
        params: &read,
        protocol_version: None,
        via: Via::Stdio,
        session: None,
        target_served: true,
    });
    assert_eq!(span.name, "resources/read", "no URI in the name");
    assert_eq!(
        attribute(&span, "mcp.resource.uri").as_deref(),
        Some("file:///a")
    );
    assert_eq!(attribute(&span, "jsonrpc.request.id"), None);
}

#[test]
fn a_name_nothing_serves_stays_out_of_the_span_name() {
    let call = params(json!({"name": "made-up-by-the-client"}));
    let span = span_of(&Incoming {
        method: "tools/call",
        id: &json!(1),
        params: &call,
        protocol_version: None,
        via: Via::Stdio,
        session: None,
        target_served: false,
    });
    assert_eq!(span.name, "tools/call");
    assert_eq!(
        attribute(&span, "gen_ai.tool.name").as_deref(),
        Some("made-up-by-the-client")
    );
}

#[test]
fn a_clients_long_name_is_cut() {
    let long = "é".repeat(MAX_VALUE_LEN);
    let call = params(json!({ "name": long }));
    let span = span_of(&Incoming {
        method: "tools/call",
        id: &json!(1),
        params: &call,
        protocol_version: None,
        via: Via::Stdio,
        session: None,
        target_served: true,
    });
    let tool = attribute(&span, "gen_ai.tool.name").expect("the tool");
    assert_eq!(tool.len(), MAX_VALUE_LEN, "cut at a character boundary");
    assert!(span.name.len() <= "tools/call ".len() + MAX_VALUE_LEN);
}

#[test]
fn replies_say_their_outcome() {
    let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool"}}"#;
    assert_eq!(
        Outcome::of_reply("tools/call", error),
        Outcome::Error {
            code: -32602,
            message: "Unknown tool".to_owned()
        }
    );
    let failed = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#;
    assert_eq!(Outcome::of_reply("tools/call", failed), Outcome::ToolError);
    assert_eq!(
        Outcome::of_reply("prompts/get", failed),
        Outcome::Ok,
        "isError means a tool error only for tools/call"
    );
    let fine = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
    assert_eq!(Outcome::of_reply("tools/call", fine), Outcome::Ok);
    assert_eq!(Outcome::of_reply("tools/call", b""), Outcome::Ok);
}

#[test]
fn when_off_nothing_is_made() {
    // This process exports no traces (nothing here installs them).
    assert!(tracer().is_none());
    assert!(matches!(
        Via::http(Some(&http_with(HEADER_PARENT))),
        Via::Http(headers) if headers == TraceHeaders::default()
    ));
    let step = ChildSpan::start("instantiate");
    assert!(step.0.is_none(), "no span without traces");
    step.end(&Ok::<(), String>(()));
}

#[test]
fn the_trace_holds_the_request_once() {
    let (params, id) = (Map::new(), json!(1));
    let incoming = || Incoming {
        method: "tools/call",
        id: &id,
        params: &params,
        protocol_version: None,
        via: Via::Stdio,
        session: None,
        target_served: true,
    };
    let traced = serve(incoming, || crate::held_once::four_kib(()), |_| Outcome::Ok);
    crate::held_once::assert_held_once(&traced);
}
