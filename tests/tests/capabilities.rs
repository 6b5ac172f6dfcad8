//! Input requests are only sent for capabilities the client declared on
//! this very request; otherwise the call fails with -32021 (HTTP 400).

use airlock_e2e::flows::drive;
use airlock_e2e::mcp::{ToolCall, complete, elicit, input_request, input_required};
use airlock_e2e::{Airlock, HttpServer, McpClient, ToolsDir, code};
use serde_json::{Value, json};

fn serve(components: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(components)).start_http()
}

/// Calls `ask {kind}` declaring `caps`; asserts 400 / -32021 and returns
/// `data.requiredCapabilities`.
#[track_caller]
fn refused(server: &HttpServer, kind: &str, caps: Value) -> Value {
    let call = ToolCall::new("ask", json!({ "kind": kind })).caps(caps.clone());
    let (id, reply) = server.client().send("tools/call", call.params());
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    let required = body["error"]["data"]["requiredCapabilities"].clone();
    assert!(
        required.is_object(),
        "requiredCapabilities must be a ClientCapabilities object (kind {kind}, caps {caps}): {body}"
    );
    required
}

#[test]
fn url_elicitation_needs_the_url_capability() {
    let server = serve(&["probe"]);
    let required = refused(&server, "url", json!({"elicitation": {}}));
    assert_eq!(required, json!({"elicitation": {"url": {}}}));
    let required = refused(&server, "url", json!({"elicitation": {"form": {}}}));
    assert_eq!(required, json!({"elicitation": {"url": {}}}));
}

#[test]
fn form_elicitation_needs_the_elicitation_capability() {
    let server = serve(&["probe"]);
    for caps in [json!({}), json!({"sampling": {}, "roots": {}})] {
        let required = refused(&server, "form", caps);
        assert!(required["elicitation"].is_object(), "{required}");
        assert!(
            required["elicitation"].get("url").is_none(),
            "a form needs no url mode: {required}"
        );
    }
}

#[test]
fn sampling_needs_the_sampling_capability() {
    let server = serve(&["probe"]);
    let required = refused(&server, "sampling", json!({"elicitation": {}, "roots": {}}));
    assert_eq!(required, json!({"sampling": {}}));
}

#[test]
fn sampling_with_tools_needs_sampling_tools() {
    let server = serve(&["probe"]);
    let required = refused(&server, "sampling_tools", json!({"sampling": {}}));
    assert_eq!(required, json!({"sampling": {"tools": {}}}));
}

#[test]
fn roots_need_the_roots_capability() {
    let server = serve(&["probe", "workspace"]);
    let required = refused(&server, "roots", json!({"elicitation": {}, "sampling": {}}));
    assert_eq!(required, json!({"roots": {}}));
    let (id, reply) = server.client().send(
        "tools/call",
        ToolCall::new("list_roots", json!({}))
            .caps(json!({}))
            .params(),
    );
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );
}

#[test]
fn sample_tools_are_gated_too() {
    let server = serve(&["deploy", "summarize"]);
    let http = server.client();
    let deploy = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    )
    .caps(json!({"sampling": {}}));
    let (id, reply) = http.send("tools/call", deploy.params());
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    assert!(
        body["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{body}"
    );
    let summarize =
        ToolCall::new("summarize", json!({"text": "hello"})).caps(json!({"elicitation": {}}));
    let (id, reply) = http.send("tools/call", summarize.params());
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
}

#[test]
fn exactly_the_declared_capability_is_enough() {
    let server = serve(&["probe"]);
    let client = server.client();
    let cases = [
        (
            "form",
            json!({"elicitation": {}}),
            elicit("accept", Some(json!({"answer": "x"}))),
        ),
        (
            "url",
            json!({"elicitation": {"url": {}}}),
            elicit("accept", None),
        ),
        (
            "sampling",
            json!({"sampling": {}}),
            airlock_e2e::mcp::sampled("s"),
        ),
        (
            "sampling_tools",
            json!({"sampling": {"tools": {}}}),
            airlock_e2e::mcp::sampled("t"),
        ),
        // Unknown members and extra fields are ignored.
        (
            "roots",
            json!({"roots": {"listChanged": true}, "experimental": {"x": {}}}),
            airlock_e2e::mcp::roots(&[("file:///r", "r")]),
        ),
    ];
    for (kind, caps, answer) in cases {
        let call = ToolCall::new("ask", json!({ "kind": kind })).caps(caps);
        let driven = drive(&client, &call, |r| {
            input_request(r, "answer");
            json!({ "answer": answer.clone() })
        });
        complete(driven.last());
    }
}

#[test]
fn capabilities_are_checked_on_every_round() {
    // Round 1 declares elicitation; the retry does not, and the tool needs
    // to ask again: the host must not rely on the earlier declaration.
    let server = serve(&["work_items"]);
    let client = server.client();
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": 99, "fields": {"State": "Resolved"}}),
    )
    .caps(json!({"elicitation": {}}));
    let first = client.call(&call);
    let r = input_required(&first);
    input_request(r, "resolution");
    let retry = call
        .retry(
            r,
            json!({"resolution": elicit("accept", Some(json!({"resolution": "Duplicate"})))}),
        )
        .caps(json!({}));
    let (id, reply) = client.send("tools/call", retry.params());
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    assert!(
        body["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{body}"
    );
}
