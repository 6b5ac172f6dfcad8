//! Traces over OTLP (`--otlp-endpoint`): the real binary exports its spans
//! to a small OTLP/HTTP receiver of the test's own, and the spans are read
//! back: names and attributes as the OpenTelemetry conventions for MCP say,
//! the caller's trace continued (from `params._meta` and from the HTTP
//! `traceparent` header), the steps of a call as children, errors marked,
//! the last spans flushed on shutdown (and abandoned after the export
//! timeout when the collector does not take them), and nothing sent without
//! the option.

use std::time::Duration;

use airlock_e2e::flows::assert_form;
use airlock_e2e::legacy::{Endpoint, expect_server_request, read_response};
use airlock_e2e::mcp::{complete, elicit, input_required, is_error, text};
use airlock_e2e::otlp::ReceivedSpan;
use airlock_e2e::{Airlock, McpClient, OtlpReceiver, SilentCollector, ToolCall, ToolsDir};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use serde_json::{Value, json};

/// How long a server may take to exit once asked to.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// A caller's trace context: its trace id and span id, in hex.
struct Caller {
    trace_id: String,
    span_id: String,
}

impl Caller {
    /// A fresh trace context, as a client's own span would have.
    fn new() -> Caller {
        let hex = |bytes: usize| -> String {
            (0..bytes)
                .map(|_| format!("{:02x}", fastrand::u8(..)))
                .collect()
        };
        Caller {
            trace_id: hex(16),
            span_id: hex(8),
        }
    }

    /// Its W3C `traceparent`, sampled.
    fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace_id, self.span_id)
    }
}

/// `airlock serve` on `components`, exporting to `receiver` with a short
/// batch delay (the SDK's `OTEL_BSP_SCHEDULE_DELAY`, in milliseconds).
fn traced(components: &[&str], receiver: &OtlpReceiver) -> Airlock {
    Airlock::new(&ToolsDir::with(components))
        .args(["--otlp-endpoint", receiver.endpoint()])
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
}

/// A `tools/call` of `name` whose `_meta` carries `caller`'s context.
fn call_in(caller: &Caller, name: &str, arguments: Value) -> ToolCall {
    let mut call = ToolCall::new(name, arguments);
    call.extra_meta
        .insert("traceparent".into(), json!(caller.traceparent()));
    call.extra_meta
        .insert("tracestate".into(), json!("vendor=opaque"));
    call
}

/// Waits for the SERVER span named `name` in `caller`'s trace.
#[track_caller]
fn server_span(receiver: &OtlpReceiver, caller: &Caller, name: &str) -> ReceivedSpan {
    receiver.wait_for_span(&format!("the server span {name:?}"), |span| {
        span.name == name && span.trace_id == caller.trace_id && span.kind == SpanKind::Server
    })
}

/// Asserts `span` has attribute `key` = `value`.
#[track_caller]
fn assert_attribute(span: &ReceivedSpan, key: &str, value: &str) {
    assert_eq!(
        span.attribute(key),
        Some(value),
        "{key} of {}: {:?}",
        span.name,
        span.attributes
    );
}

/// `sha256` called with a trace context in `_meta` over `client`: one
/// SERVER span in the caller's trace, under the caller's span, with the
/// conventions' attributes, and the instance and the guest's call as its
/// children. `transport` is the `network.transport` it must say.
fn a_call_continues_the_callers_trace(
    client: &dyn McpClient,
    receiver: &OtlpReceiver,
    transport: &str,
) {
    let caller = Caller::new();
    let exchange = client.exchange(
        "tools/call",
        call_in(&caller, "sha256", json!({"text": "abc"})).params(),
    );
    assert!(!is_error(complete(&exchange.response)), "{exchange:?}");
    let id = exchange.response["id"].to_string();

    let span = server_span(receiver, &caller, "tools/call sha256");
    assert_eq!(
        span.parent_span_id, caller.span_id,
        "the caller's span is the parent"
    );
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "sha256"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", id.as_str()),
        ("mcp.protocol.version", "2026-07-28"),
        ("network.transport", transport),
    ] {
        assert_attribute(&span, key, value);
    }
    assert_eq!(span.attribute("error.type"), None, "{:?}", span.attributes);
    assert_eq!(span.error, None, "a successful call has no error status");
    assert_eq!(
        span.resource.get("service.name").map(String::as_str),
        Some("airlock")
    );
    assert!(
        span.resource.contains_key("service.instance.id"),
        "{:?}",
        span.resource
    );

    let children = receiver.wait_for_children(&span, &["instantiate", "guest call"]);
    for child in &children {
        assert_eq!(child.kind, SpanKind::Internal, "{child:?}");
        assert_eq!(child.error, None, "{child:?}");
    }
}

#[test]
fn a_call_over_http_continues_the_callers_trace() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["hash"], &receiver).start_http();
    a_call_continues_the_callers_trace(&server.client(), &receiver, "tcp");
    let span = receiver.wait_for_span("the HTTP span", |span| span.kind == SpanKind::Server);
    assert_attribute(&span, "network.protocol.name", "http");
}

#[test]
fn a_call_over_stdio_continues_the_callers_trace() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["hash"], &receiver).start_stdio();
    a_call_continues_the_callers_trace(&server, &receiver, "pipe");
}

#[test]
fn a_multi_round_call_seals_in_round_one_and_opens_in_round_two() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["deploy"], &receiver).start_http();
    let client = server.client();
    let (first, second) = (Caller::new(), Caller::new());

    let call = call_in(&first, "confirm", json!({"action": "rotate the keys"}));
    let response = client.call(&call);
    let round = input_required(&response);
    assert_form(round, "confirm", "ok", Some("boolean"));
    let mut retry = call.retry(
        round,
        json!({"confirm": elicit("accept", Some(json!({"ok": true})))}),
    );
    retry
        .extra_meta
        .insert("traceparent".into(), json!(second.traceparent()));
    let done = client.call(&retry);
    assert_eq!(text(complete(&done)), "confirmed rotate the keys", "{done}");

    let round_one = server_span(&receiver, &first, "tools/call confirm");
    let names = |children: &[ReceivedSpan]| -> Vec<String> {
        children.iter().map(|child| child.name.clone()).collect()
    };
    let children = receiver.wait_for_children(&round_one, &["instantiate", "guest call", "seal"]);
    assert!(
        !names(&children).contains(&"open".to_owned()),
        "round one has no state to open: {:?}",
        names(&children)
    );
    let round_two = server_span(&receiver, &second, "tools/call confirm");
    let children = receiver.wait_for_children(&round_two, &["open", "instantiate", "guest call"]);
    assert!(
        !names(&children).contains(&"seal".to_owned()),
        "round two completes, with nothing to seal: {:?}",
        names(&children)
    );
}

#[test]
fn the_http_traceparent_header_is_the_parent_when_meta_has_none() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["hash"], &receiver).start_http();
    let caller = Caller::new();
    let params = ToolCall::new("sha256", json!({"text": "abc"})).params();
    let (_, reply) = server.client().send_with("tools/call", params, |headers| {
        headers.set("traceparent", &caller.traceparent());
    });
    assert_eq!(reply.status, 200, "{}", reply.text());

    let span = server_span(&receiver, &caller, "tools/call sha256");
    assert_eq!(span.parent_span_id, caller.span_id);
    assert!(span.links.is_empty(), "{:?}", span.links);
}

#[test]
fn meta_wins_over_the_http_header_which_becomes_a_link() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["hash"], &receiver).start_http();
    let (in_meta, in_header) = (Caller::new(), Caller::new());
    let params = call_in(&in_meta, "sha256", json!({"text": "abc"})).params();
    let (_, reply) = server.client().send_with("tools/call", params, |headers| {
        headers.set("traceparent", &in_header.traceparent());
    });
    assert_eq!(reply.status, 200, "{}", reply.text());

    let span = server_span(&receiver, &in_meta, "tools/call sha256");
    assert_eq!(span.parent_span_id, in_meta.span_id);
    assert_eq!(
        span.links,
        vec![(in_header.trace_id.clone(), in_header.span_id.clone())],
        "the HTTP request's context is linked"
    );
}

#[test]
fn a_malformed_traceparent_starts_a_new_trace() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["hash"], &receiver).start_http();
    let mut call = ToolCall::new("sha256", json!({"text": "malformed"}));
    call.extra_meta
        .insert("traceparent".into(), json!("00-not-a-trace-01"));
    let response = server.client().call(&call);
    assert!(!is_error(complete(&response)), "{response}");

    let span = receiver.wait_for_span("the span of the call", |span| {
        span.name == "tools/call sha256"
    });
    assert_eq!(span.parent_span_id, "", "a new trace has no parent");
    assert_eq!(span.trace_id.len(), 32, "{span:?}");
}

#[test]
fn errors_and_tool_errors_set_error_type() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["deploy"], &receiver).start_http();
    let client = server.client();

    let unknown = Caller::new();
    let response = client.call(&call_in(&unknown, "no-such-tool", json!({})));
    assert!(response.get("error").is_some(), "{response}");
    // A name the client made up stays out of the span's name (which would
    // otherwise be unbounded), and is recorded as an attribute.
    let span = server_span(&receiver, &unknown, "tools/call");
    assert_attribute(&span, "gen_ai.tool.name", "no-such-tool");
    assert_attribute(&span, "error.type", "-32602");
    assert_attribute(&span, "rpc.response.status_code", "-32602");
    let message = response["error"]["message"].as_str().expect("a message");
    assert_eq!(span.error.as_deref(), Some(message), "the status says why");

    let declined = Caller::new();
    let call = call_in(
        &declined,
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    );
    let round = client.call(&call);
    let mut retry = call.retry(
        input_required(&round),
        json!({"confirm": elicit("decline", None)}),
    );
    retry.extra_meta.clear();
    let declined_again = Caller::new();
    retry
        .extra_meta
        .insert("traceparent".into(), json!(declined_again.traceparent()));
    let done = client.call(&retry);
    assert!(is_error(complete(&done)), "{done}");
    let span = server_span(&receiver, &declined_again, "tools/call deploy");
    assert_attribute(&span, "error.type", "tool_error");
    assert!(span.error.is_some(), "a tool error is an error status");
    assert_eq!(span.attribute("rpc.response.status_code"), None);
}

#[test]
fn a_legacy_request_is_one_span_with_its_bridged_rounds() {
    let receiver = OtlpReceiver::start();
    let server = traced(&["deploy"], &receiver).start_http();
    let session = Endpoint::new(server.url()).open(json!({"elicitation": {}}));
    let caller = Caller::new();
    let (call, mut stream) = session.stream(
        "tools/call",
        json!({
            "name": "confirm",
            "arguments": {"action": "ship it"},
            "_meta": {"traceparent": caller.traceparent()},
        }),
    );
    let event = stream.expect_event("elicitation/create");
    let (asked, _) = expect_server_request(&event, "elicitation/create");
    let reply = session.respond(&asked, elicit("accept", Some(json!({"ok": true}))));
    assert_eq!(reply.status, 202, "{}", reply.text());
    let (_, done) = read_response(&mut stream, &call);
    assert_eq!(text(&done["result"]), "confirmed ship it", "{done}");

    let span = server_span(&receiver, &caller, "tools/call confirm");
    assert_eq!(span.parent_span_id, caller.span_id);
    assert_attribute(&span, "mcp.session.id", session.id());
    assert_attribute(&span, "mcp.protocol.version", session.version());
    assert_attribute(&span, "jsonrpc.request.id", &call.to_string());
    let children = receiver.wait_for_children(&span, &["seal", "open"]);
    let instances = children
        .iter()
        .filter(|child| child.name == "instantiate")
        .count();
    assert_eq!(instances, 2, "a fresh instance per round, in one span");
    let servers = receiver
        .spans()
        .into_iter()
        .filter(|other| other.trace_id == caller.trace_id && other.kind == SpanKind::Server)
        .count();
    assert_eq!(servers, 1, "the bridged rounds have no spans of their own");
}

#[test]
fn the_last_spans_are_flushed_on_shutdown() {
    let receiver = OtlpReceiver::start();
    // A batch delay no test waits for: only the flush can send the span.
    let mut server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--otlp-endpoint", receiver.endpoint()])
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .start_http();
    let caller = Caller::new();
    let response = server
        .client()
        .call(&call_in(&caller, "sha256", json!({"text": "abc"})));
    assert!(!is_error(complete(&response)), "{response}");
    server.terminate();
    assert!(
        server.wait_exit(EXIT_TIMEOUT).is_some(),
        "the server exits on SIGTERM"
    );
    let spans = receiver.spans();
    assert!(
        spans
            .iter()
            .any(|span| span.name == "tools/call sha256" && span.trace_id == caller.trace_id),
        "the span was flushed before the process ended: {spans:?}"
    );
}

/// Makes spans that `endpoint` will not take, then stops the server:
/// SIGTERM must end it within a bound of its export timeout (1 s), with one
/// line saying the final export was abandoned.
fn shutdown_abandons_the_final_export_after_the_timeout(endpoint: &str) {
    let mut server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--otlp-endpoint", endpoint])
        // Through its variable, which a build without the option (run with
        // AIRLOCK_E2E_BIN) ignores instead of refusing to start.
        .env("AIRLOCK_OTLP_TIMEOUT", "1s")
        // An export per span and none on a timer: every span is an export
        // of its own, and most are still queued at shutdown.
        .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .start_http();
    let client = server.client();
    for _ in 0..20 {
        let response = client.call(&ToolCall::new("sha256", json!({"text": "abc"})));
        assert!(!is_error(complete(&response)), "{response}");
    }
    server.terminate();
    if server.wait_exit(SHUTDOWN_BOUND).is_none() {
        server.kill();
        panic!(
            "still running {SHUTDOWN_BOUND:?} after SIGTERM with a 1 s export timeout; stderr:\n{}",
            server.stderr()
        );
    }
    let stderr = server.stderr();
    let abandoned = stderr
        .lines()
        .filter(|line| line.contains("final export of traces abandoned"))
        .count();
    assert_eq!(abandoned, 1, "one line says so:\n{stderr}");
}

/// How long a server with a 1 s export timeout may take to exit: generous,
/// for a busy machine.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(20);

#[test]
fn shutdown_does_not_wait_past_the_export_timeout_for_a_silent_collector() {
    let collector = SilentCollector::start();
    shutdown_abandons_the_final_export_after_the_timeout(collector.endpoint());
}

#[test]
fn shutdown_does_not_wait_past_the_export_timeout_for_an_unreachable_collector() {
    // A port nothing listens on: every connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    shutdown_abandons_the_final_export_after_the_timeout(&format!("http://127.0.0.1:{port}"));
}

#[test]
fn failed_exports_are_one_warning_per_burst_not_one_per_batch() {
    // A port nothing listens on: every export fails.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let mut server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--otlp-endpoint", &format!("http://127.0.0.1:{port}")])
        .env("AIRLOCK_OTLP_TIMEOUT", "1s")
        // An export per span, at once.
        .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .start_http();
    let client = server.client();
    let call = || {
        let response = client.call(&ToolCall::new("sha256", json!({"text": "abc"})));
        assert!(!is_error(complete(&response)), "{response}");
    };
    call();
    server.wait_for_log("exporting traces failed");
    for _ in 0..5 {
        call();
    }
    // The shutdown exports what is still queued: every batch has been
    // tried once the process has exited. The failures after the first are
    // counted, not logged one by one.
    server.terminate();
    if server.wait_exit(SHUTDOWN_BOUND).is_none() {
        server.kill();
        panic!("still running after SIGTERM:\n{}", server.stderr());
    }
    let log = server.stderr();
    assert_eq!(log.matches("exporting traces failed").count(), 1, "{log}");
    assert!(
        !log.contains("opentelemetry_sdk") && !log.contains("opentelemetry-otlp"),
        "no line per failed batch:\n{log}"
    );
}

#[test]
fn without_an_endpoint_nothing_is_sent() {
    let receiver = OtlpReceiver::start();
    // OpenTelemetry's own variables name the receiver: they must not turn
    // traces on by themselves.
    let mut server = Airlock::new(&ToolsDir::with(&["hash"]))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint())
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .start_http();
    let caller = Caller::new();
    let response = server
        .client()
        .call(&call_in(&caller, "sha256", json!({"text": "abc"})));
    assert!(!is_error(complete(&response)), "{response}");
    server.terminate();
    assert!(server.wait_exit(EXIT_TIMEOUT).is_some());
    assert_eq!(receiver.exports(), 0, "{:?}", receiver.spans());
}

#[test]
fn bad_endpoints_and_ratios_are_refused_at_start() {
    for (args, expected) in [
        (
            &["--otlp-endpoint", "https://collector:4318"][..],
            "https is not supported",
        ),
        (&["--otlp-endpoint", "collector:4318"], "http://HOST:PORT"),
        (
            &[
                "--otlp-endpoint",
                "http://127.0.0.1:4318",
                "--otlp-sample-ratio",
                "2",
            ],
            "from 0 to 1",
        ),
        (&["--otlp-sample-ratio", "0.5"], "--otlp-endpoint"),
    ] {
        let (status, stderr) = Airlock::new(&ToolsDir::new())
            .args(args)
            .run_expecting_exit();
        assert!(!status.success(), "{args:?} must be refused");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
