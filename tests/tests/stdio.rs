//! The stdio transport: one JSON-RPC message per line, concurrent requests,
//! only JSON-RPC on stdout, cancellation, and a clean exit on EOF.

use std::time::Duration;

use airlock_e2e::mcp::{
    META_CAPS, META_VERSION, PROTOCOL_VERSION, ToolCall, all_caps, complete, error_code, is_error,
    request, text, with_meta,
};
use airlock_e2e::{
    Airlock, McpClient, SAMPLE_TOOLS, SAMPLES, StdioServer, ToolsDir, code, no_caps,
};
use serde_json::{Value, json};

const ANSWERED_WITHIN: Duration = Duration::from_secs(30);

fn serve(components: &[&str]) -> StdioServer {
    Airlock::new(&ToolsDir::with(components)).start_stdio()
}

fn tool_request(server: &StdioServer, name: &str, args: Value) -> Value {
    server.send_request("tools/call", ToolCall::new(name, args).params())
}

#[test]
fn discover_and_list_over_stdio() {
    let server = serve(SAMPLES);
    let response = server.rpc("server/discover", json!({}), no_caps());
    let r = complete(&response);
    assert_eq!(r["supportedVersions"], json!([PROTOCOL_VERSION]));
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "airlock"
    );
    let response = server.rpc("tools/list", json!({}), no_caps());
    let r = complete(&response);
    let mut names: Vec<&str> = r["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, SAMPLE_TOOLS);
}

#[test]
fn requests_are_served_concurrently() {
    let server = serve(&["probe", "hash"]);
    let slow = tool_request(&server, "sleep", json!({"ms": 5000}));
    let quick = tool_request(&server, "sha256", json!({"text": "abc"}));
    let response = server.response(&quick);
    assert!(!is_error(complete(&response)), "{response}");
    assert!(
        !server.has_response(&slow),
        "sha256 should not wait behind a 5 s sleep"
    );
    let response = server.response(&slow);
    assert!(!is_error(complete(&response)), "{response}");
}

#[test]
fn many_requests_in_flight_are_all_answered_once() {
    let server = serve(&["probe", "hash"]);
    let mut ids = Vec::new();
    for i in 0..24 {
        let id = if i % 2 == 0 {
            tool_request(&server, "sha256", json!({ "text": format!("n{i}") }))
        } else {
            tool_request(&server, "count", json!({}))
        };
        ids.push((i, id));
    }
    for (i, id) in &ids {
        let response = server.response(id);
        let r = complete(&response);
        if i % 2 == 1 {
            assert_eq!(text(r).trim(), "1", "{response}");
        } else {
            assert_eq!(text(r).trim().len(), 64, "{response}");
        }
    }
    server.close_stdin();
    assert!(server.read_to_eof(ANSWERED_WITHIN));
    let responses = server
        .lines()
        .iter()
        .filter(|l| l.contains("\"result\"") || l.contains("\"error\""))
        .count();
    assert_eq!(responses, ids.len(), "one response per request");
}

#[test]
fn stdout_carries_only_json_rpc() {
    let server = serve(&["probe", "hash"]);
    // A mix: success, progress and logs, guest failure, protocol errors.
    let call = ToolCall::new("progress", json!({"steps": 3}))
        .progress_token("p")
        .log_level("debug");
    let ids = [
        server.send_request("tools/call", call.params()),
        tool_request(&server, "sha256", json!({"text": "x"})),
        tool_request(&server, "trap", json!({})),
        tool_request(&server, "no_such_tool", json!({})),
        server.send_request("unknown/method", with_meta(json!({}), no_caps())),
    ];
    server.send_line("{not json");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for id in &ids {
        server.response(id);
    }
    server.close_stdin();
    assert!(
        server.read_to_eof(ANSWERED_WITHIN),
        "stdout should close on exit"
    );
    let lines = server.lines();
    assert!(lines.len() > ids.len(), "{lines:?}");
    for line in &lines {
        assert!(line.ends_with('\n'), "one message per line: {line:?}");
        let message: Value = serde_json::from_str(line.trim_end())
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        assert!(
            !line.trim_end().contains('\n'),
            "messages must not span lines: {line:?}"
        );
    }
    assert_eq!(
        server.wait_exit(ANSWERED_WITHIN).map(|s| s.success()),
        Some(true)
    );
}

#[test]
fn eof_lets_in_flight_calls_finish_then_exits_zero() {
    let server = serve(&["probe"]);
    let id = tool_request(&server, "sleep", json!({"ms": 1500}));
    server.close_stdin();
    let response = server.response(&id);
    assert!(!is_error(complete(&response)), "{response}");
    let status = server
        .wait_exit(ANSWERED_WITHIN)
        .expect("airlock should exit after stdin EOF");
    assert!(status.success(), "exit status {status}");
}

#[test]
fn eof_with_nothing_in_flight_exits_zero() {
    let server = serve(&["hash"]);
    server.close_stdin();
    let status = server
        .wait_exit(ANSWERED_WITHIN)
        .expect("airlock should exit after stdin EOF");
    assert!(status.success(), "exit status {status}");
    assert!(server.lines().is_empty(), "{:?}", server.lines());
}

#[test]
fn a_cancelled_request_gets_no_response() {
    let server = serve(&["probe", "hash"]);
    let doomed = json!("sleep-to-cancel");
    let call = ToolCall::new("sleep", json!({"ms": 3000}));
    server.send(&request(doomed.clone(), "tools/call", call.params()));
    server.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": doomed, "reason": "e2e"}
    }));
    let other = tool_request(&server, "sha256", json!({"text": "still here"}));
    complete(&server.response(&other));
    // EOF: the server finishes what is in flight (nothing, once cancelled).
    server.close_stdin();
    assert!(
        server.read_to_eof(ANSWERED_WITHIN),
        "the server should exit"
    );
    let status = server.wait_exit(ANSWERED_WITHIN).expect("exit");
    assert!(status.success(), "exit status {status}");
    let lines = server.lines();
    assert!(
        !lines.iter().any(|l| l.contains("sleep-to-cancel")),
        "nothing may be sent for a cancelled request: {lines:?}"
    );
}

#[test]
fn protocol_errors_over_stdio() {
    let server = serve(&["hash"]);
    // Not JSON: -32700 with no id.
    server.send_line(r#"{"jsonrpc":"2.0","id":1,"#);
    let response = server.response(&Value::Null);
    assert_eq!(error_code(&response), code::PARSE_ERROR, "{response}");
    assert!(
        response.get("id").is_none() || response["id"].is_null(),
        "{response}"
    );
    // Batch: -32600.
    server.send(&json!([request(
        json!(5),
        "tools/list",
        with_meta(json!({}), no_caps())
    )]));
    let response = server.response(&Value::Null);
    assert_eq!(error_code(&response), code::INVALID_REQUEST, "{response}");

    let cases: Vec<(&str, Value, i64)> = vec![
        (
            "initialize",
            with_meta(json!({}), no_caps()),
            code::METHOD_NOT_FOUND,
        ),
        (
            "ping",
            with_meta(json!({}), no_caps()),
            code::METHOD_NOT_FOUND,
        ),
        (
            "unknown/method",
            with_meta(json!({}), no_caps()),
            code::METHOD_NOT_FOUND,
        ),
        ("tools/list", json!({}), code::INVALID_PARAMS),
        (
            "tools/list",
            json!({"_meta": {META_VERSION: PROTOCOL_VERSION}}),
            code::INVALID_PARAMS,
        ),
        (
            "tools/list",
            json!({"_meta": {META_CAPS: {}}}),
            code::INVALID_PARAMS,
        ),
        (
            "tools/call",
            with_meta(json!({"name": 5, "arguments": {}}), all_caps()),
            code::INVALID_PARAMS,
        ),
        (
            "tools/call",
            with_meta(json!({"arguments": {}}), all_caps()),
            code::INVALID_PARAMS,
        ),
        (
            "tools/call",
            with_meta(json!({"name": "sha256", "arguments": ["x"]}), all_caps()),
            code::INVALID_PARAMS,
        ),
        (
            "tools/call",
            with_meta(json!({"name": "nope", "arguments": {}}), all_caps()),
            code::INVALID_PARAMS,
        ),
    ];
    for (method, params, expected) in cases {
        let id = server.send_request(method, params.clone());
        let response = server.response(&id);
        assert_eq!(
            error_code(&response),
            expected,
            "{method} {params}: {response}"
        );
        assert_eq!(response["id"], id);
    }
    // Unsupported version: -32022 with data.
    let id = server.send_request(
        "server/discover",
        json!({"_meta": {META_VERSION: "1900-01-01", META_CAPS: {}}}),
    );
    let response = server.response(&id);
    assert_eq!(
        error_code(&response),
        code::UNSUPPORTED_VERSION,
        "{response}"
    );
    assert_eq!(response["error"]["data"]["requested"], "1900-01-01");
    assert_eq!(
        response["error"]["data"]["supported"],
        json!([PROTOCOL_VERSION])
    );
    // Still serving.
    let response = server.call(&ToolCall::new("sha256", json!({"text": "abc"})));
    complete(&response);
}

#[test]
fn progress_and_logs_come_before_the_response() {
    let server = serve(&["probe"]);
    let call = ToolCall::new("progress", json!({"steps": 3}))
        .progress_token(42)
        .log_level("info");
    let exchange = server.exchange("tools/call", call.params());
    complete(&exchange.response);
    let progress: Vec<&Value> = exchange
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    let logs = exchange
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .count();
    assert_eq!(progress.len(), 3, "{:?}", exchange.notifications);
    assert_eq!(logs, 3, "{:?}", exchange.notifications);
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["params"]["progressToken"], 42);
        assert_eq!(p["params"]["progress"].as_f64(), Some((i + 1) as f64));
    }
    // Without logLevel: progress only.
    let call = ToolCall::new("progress", json!({"steps": 2})).progress_token("q");
    let exchange = server.exchange("tools/call", call.params());
    assert!(
        exchange
            .notifications
            .iter()
            .all(|n| n["method"] == "notifications/progress"),
        "{:?}",
        exchange.notifications
    );
    assert_eq!(exchange.notifications.len(), 2);
}

#[test]
fn capability_gating_over_stdio() {
    let server = serve(&["probe"]);
    let response =
        server.call(&ToolCall::new("ask", json!({"kind": "url"})).caps(json!({"elicitation": {}})));
    assert_eq!(
        error_code(&response),
        code::MISSING_CAPABILITY,
        "{response}"
    );
    assert_eq!(
        response["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"url": {}}})
    );
}

#[test]
fn a_tampered_token_is_rejected_over_stdio() {
    let server = serve(&["deploy"]);
    let call = ToolCall::new("confirm", json!({"action": "x"}));
    let first = server.call(&call);
    let r = airlock_e2e::mcp::input_required(&first);
    let state = airlock_e2e::mcp::request_state(r);
    let mut altered = state.clone().into_bytes();
    let mid = altered.len() / 2;
    altered[mid] = if altered[mid] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let response = server.call(
        &call
            .clone()
            .responses(answer.clone())
            .state(altered.as_str()),
    );
    airlock_e2e::mcp::assert_state_rejected(&response);
    let response = server.call(&call.responses(answer).state(state.as_str()));
    assert_eq!(text(complete(&response)).trim(), "confirmed x");
}
