//! The 2026-07-28 envelope: `_meta` on every request, the HTTP headers that
//! mirror the body, versions, unknown and removed methods, what is not a
//! request, and the HTTP status each error goes with.

use airlock_e2e::mcp::{
    META_CAPS, META_SERVER_INFO, META_VERSION, PROTOCOL_VERSION, ToolCall, all_caps, complete,
    error_code, is_error, request, text, with_meta,
};
use airlock_e2e::{Headers, McpClient, code, no_caps};
use serde_json::{Value, json};

use crate::support::{Host, Setup};

fn sha256_call(text: &str) -> Value {
    ToolCall::new("sha256", json!({ "text": text })).params()
}

/// The headers of a POST that are not about its body.
fn plain_headers() -> Headers {
    let mut headers = Headers::default();
    headers.set("Content-Type", "application/json");
    headers.set("Accept", "application/json, text/event-stream");
    headers.set("MCP-Protocol-Version", PROTOCOL_VERSION);
    headers
}

#[track_caller]
fn assert_discovered(response: &Value) {
    let result = complete(response);
    assert_eq!(
        result["supportedVersions"],
        json!([PROTOCOL_VERSION]),
        "{response}"
    );
    assert!(result["capabilities"]["tools"].is_object(), "{response}");
    assert!(result["ttlMs"].is_u64(), "ttlMs is required: {response}");
    assert!(
        result["cacheScope"].is_string(),
        "cacheScope is required: {response}"
    );
    assert_eq!(
        result["_meta"][META_SERVER_INFO]["name"], "airlock",
        "{response}"
    );
}

#[test]
fn discover_describes_the_server_over_both_transports() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let (id, reply) = http.send("server/discover", with_meta(json!({}), no_caps()));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.media_type().as_deref(), Some("application/json"));
    let body = reply.json();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], id, "{body}");
    assert_discovered(&body);
    assert_discovered(&host.stdio().rpc("server/discover", json!({}), no_caps()));
}

#[test]
fn every_request_needs_meta_with_a_version_and_capabilities() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let stdio = host.stdio();
    let cases = [
        json!({}),
        json!({"_meta": {}}),
        json!({"_meta": {META_CAPS: {}}}),
        json!({"_meta": {META_VERSION: PROTOCOL_VERSION}}),
        json!({"_meta": {META_VERSION: 20260728, META_CAPS: {}}}),
        json!({"_meta": {META_VERSION: PROTOCOL_VERSION, META_CAPS: "everything"}}),
        json!({"_meta": "2026-07-28"}),
    ];
    for params in cases {
        for method in ["server/discover", "tools/list"] {
            let (id, reply) = http.send(method, params.clone());
            reply.assert_error(400, code::INVALID_PARAMS, Some(&id));
            let response = stdio.exchange(method, params.clone()).response;
            assert_eq!(
                error_code(&response),
                code::INVALID_PARAMS,
                "{params}: {response}"
            );
        }
    }
    // No params at all.
    let headers = airlock_e2e::http::request_headers("server/discover", &json!({}));
    let reply = http.post_json(
        &headers,
        &json!({"jsonrpc": "2.0", "id": "np", "method": "server/discover"}),
    );
    reply.assert_error(400, code::INVALID_PARAMS, Some(&json!("np")));
}

#[test]
fn the_version_header_must_mirror_meta() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let params = with_meta(json!({}), no_caps());
    let (id, reply) = http.send_with("tools/list", params.clone(), |h| {
        h.remove("MCP-Protocol-Version");
    });
    reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    let (id, reply) = http.send_with("tools/list", params, |h| {
        h.set("MCP-Protocol-Version", "2025-11-25");
    });
    reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    // The header names the version, `_meta` one nobody speaks: the
    // mismatch is found first.
    let odd = json!({"_meta": {META_VERSION: "v999.0.0", META_CAPS: {}}});
    let (id, reply) = http.send("tools/list", odd);
    reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
}

#[test]
fn an_unsupported_version_is_refused_naming_the_supported_ones() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let stdio = host.stdio();
    for version in ["1900-01-01", "2025-06-18", "v999.0.0"] {
        let params = json!({"_meta": {META_VERSION: version, META_CAPS: {}}});
        let (id, reply) = http.send_with("server/discover", params.clone(), |h| {
            h.set("MCP-Protocol-Version", version);
        });
        let body = reply.assert_error(400, code::UNSUPPORTED_VERSION, Some(&id));
        let over_stdio = stdio.exchange("server/discover", params).response;
        assert_eq!(
            error_code(&over_stdio),
            code::UNSUPPORTED_VERSION,
            "{over_stdio}"
        );
        for response in [&body, &over_stdio] {
            let data = &response["error"]["data"];
            assert_eq!(data["requested"], version, "{response}");
            assert_eq!(data["supported"], json!([PROTOCOL_VERSION]), "{response}");
        }
    }
}

#[test]
fn the_method_header_must_mirror_the_body() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let params = with_meta(json!({}), no_caps());
    let edits: [(&str, Option<&str>); 4] = [
        ("missing", None),
        ("another method", Some("server/discover")),
        ("another case", Some("Tools/List")),
        ("empty", Some("")),
    ];
    for (what, value) in edits {
        let (id, reply) = http.send_with("tools/list", params.clone(), |h| match value {
            None => {
                h.remove("Mcp-Method");
            }
            Some(value) => {
                h.set("Mcp-Method", value);
            }
        });
        assert_eq!(reply.status, 400, "{what}: {}", reply.text());
        reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    }
    // Whitespace around a header value is not part of it.
    let (_, reply) = http.send_with("tools/list", params, |h| {
        h.set("Mcp-Method", " tools/list ");
    });
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn the_name_header_must_mirror_the_tool() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let edits: [(&str, Option<&str>); 4] = [
        ("missing", None),
        ("another tool", Some("summarize")),
        ("another case", Some("SHA256")),
        ("empty", Some("")),
    ];
    for (what, value) in edits {
        let (id, reply) = http.send_with("tools/call", sha256_call("x"), |h| match value {
            None => {
                h.remove("Mcp-Name");
            }
            Some(value) => {
                h.set("Mcp-Name", value);
            }
        });
        assert_eq!(reply.status, 400, "{what}: {}", reply.text());
        reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    }
    // Base64 in the sentinel form names the same tool.
    let (_, reply) = http.send_with("tools/call", sha256_call("x"), |h| {
        h.set("Mcp-Name", "=?base64?c2hhMjU2?=");
    });
    complete(&reply.json());
}

#[test]
fn unknown_and_removed_methods_are_404() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/list",
        "tasks/result",
        "unknown/method",
        "tools/List",
    ] {
        let (id, reply) = http.send(method, with_meta(json!({}), all_caps()));
        reply.assert_error(404, code::METHOD_NOT_FOUND, Some(&id));
    }
}

#[test]
fn an_unknown_tool_is_invalid_params_with_200() {
    let host = Host::start(&["hash"]);
    let (id, reply) = host.http().send(
        "tools/call",
        ToolCall::new("sha512", json!({"text": "x"})).params(),
    );
    reply.assert_error(200, code::INVALID_PARAMS, Some(&id));
}

#[test]
fn errors_echo_string_and_number_ids() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    for id in [json!("req-é-1"), json!(0), json!(9_007_199_254_740_991_i64)] {
        let unknown_tool = ToolCall::new("no_such_tool", json!({})).params();
        let headers = airlock_e2e::http::request_headers("tools/call", &unknown_tool);
        let reply = http.post_json(&headers, &request(id.clone(), "tools/call", unknown_tool));
        reply.assert_error(200, code::INVALID_PARAMS, Some(&id));

        let params = with_meta(json!({}), no_caps());
        let headers = airlock_e2e::http::request_headers("unknown/method", &params);
        let reply = http.post_json(&headers, &request(id.clone(), "unknown/method", params));
        reply.assert_error(404, code::METHOD_NOT_FOUND, Some(&id));

        let headers = airlock_e2e::http::request_headers("tools/list", &json!({}));
        let reply = http.post_json(&headers, &request(id.clone(), "tools/list", json!({})));
        reply.assert_error(400, code::INVALID_PARAMS, Some(&id));
    }
}

#[test]
fn a_body_that_is_not_json_is_a_parse_error() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let mut not_utf8 = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":""#.to_vec();
    not_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28]);
    not_utf8.extend_from_slice(br#""}}"#);
    for body in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,"[..],
        b"not json at all",
        b"",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}}",
        b"{'jsonrpc':'2.0'}",
        &not_utf8,
    ] {
        let reply = http.post(&plain_headers(), body);
        reply.assert_error(400, code::PARSE_ERROR, None);
    }
}

#[test]
fn batches_and_messages_that_are_not_requests_are_invalid_requests() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let one = request(json!(1), "tools/list", with_meta(json!({}), no_caps()));
    for body in [json!([one.clone()]), json!([one.clone(), one]), json!([])] {
        http.post_json(&plain_headers(), &body)
            .assert_error(400, code::INVALID_REQUEST, None);
    }
    for body in [
        json!(42),
        json!("tools/list"),
        json!(null),
        json!({}),
        json!({"jsonrpc": "2.0", "id": 1}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 7}),
    ] {
        let reply = http.post_json(&plain_headers(), &body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert_eq!(
            reply.json()["error"]["code"],
            code::INVALID_REQUEST,
            "{body}: {}",
            reply.text()
        );
    }
    // A response outside any session answers nothing Airlock asked.
    let reply = http.post_json(
        &plain_headers(),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
    );
    reply.assert_error(400, code::INVALID_REQUEST, None);
}

#[test]
fn wrong_param_types_are_invalid_params() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    for arguments in [json!(["abc"]), json!("abc"), json!(5)] {
        let params = with_meta(
            json!({"name": "sha256", "arguments": arguments}),
            all_caps(),
        );
        let (id, reply) = http.send("tools/call", params);
        reply.assert_error(200, code::INVALID_PARAMS, Some(&id));
    }
    // Params that are not an object: a 400 naming the id, either code.
    let headers = airlock_e2e::http::request_headers("tools/list", &json!({}));
    let reply = http.post_json(
        &headers,
        &request(json!("arr"), "tools/list", json!([1, 2])),
    );
    let body = reply.json();
    assert_eq!(reply.status, 400, "{body}");
    assert_eq!(body["id"], "arr", "{body}");
    assert!(
        [code::INVALID_PARAMS, code::INVALID_REQUEST]
            .contains(&body["error"]["code"].as_i64().unwrap_or(0)),
        "{body}"
    );
}

#[test]
fn notifications_are_accepted_with_202_and_an_empty_body() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    for note in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 1, "reason": "test"}}),
    ] {
        let reply = http.post_json(&plain_headers(), &note);
        assert_eq!(reply.status, 202, "{note}: {}", reply.text());
        assert!(reply.body.is_empty(), "{}", reply.text());
    }
}

#[test]
fn get_and_delete_without_a_session_are_405() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let mut accept = Headers::default();
    accept.set("Accept", "text/event-stream");
    let refused = http
        .get(&accept)
        .err()
        .expect("no stream without a session");
    assert_eq!(refused.status, 405, "{}", refused.text());
    assert_eq!(refused.header("allow"), Some("POST"));
    assert_eq!(http.delete(&Headers::default()).status, 405);
}

#[test]
fn a_body_over_the_limit_is_413_and_the_next_is_served() {
    let setup = Setup {
        max_body_bytes: 4096,
        ..Setup::default()
    };
    let host = Host::start_with(&["hash"], setup);
    let http = host.http();
    let (_, reply) = http.send("tools/call", sha256_call(&"a".repeat(3 * 1024)));
    complete(&reply.json());
    let (_, reply) = http.send("tools/call", sha256_call(&"a".repeat(16 * 1024)));
    reply.assert_error(413, code::INVALID_REQUEST, None);
    let (_, reply) = http.send("tools/call", sha256_call("abc"));
    complete(&reply.json());
}

fn progress_call(steps: u64) -> ToolCall {
    ToolCall::new("progress", json!({ "steps": steps }))
}

#[test]
fn a_stream_opens_only_when_there_is_something_to_stream() {
    let host = Host::start(&["probe"]);
    let http = host.http();
    // No progress token, no log level: plain JSON.
    let (_, plain) = http.send("tools/call", progress_call(3).params());
    assert_eq!(plain.media_type().as_deref(), Some("application/json"));
    complete(&plain.json());
    // Opted in, but nothing at that level: still plain JSON.
    let (_, quiet) = http.send("tools/call", progress_call(3).log_level("warning").params());
    assert_eq!(quiet.media_type().as_deref(), Some("application/json"));
    complete(&quiet.json());
    // Something to say: SSE, the response last.
    let call = progress_call(3).progress_token("tok-7").log_level("info");
    let (id, chatty) = http.send("tools/call", call.params());
    assert!(chatty.is_sse(), "{:?}", chatty.header("content-type"));
    let events = chatty.events();
    let (last, notes) = events.split_last().expect("events");
    assert_eq!(last["id"], id, "the response is the last event: {events:?}");
    assert!(!is_error(complete(last)), "{last}");
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{notes:?}");
    for (i, note) in progress.iter().enumerate() {
        assert_eq!(note["params"]["progressToken"], "tok-7", "{note}");
        assert_eq!(note["params"]["progress"].as_f64(), Some((i + 1) as f64));
    }
    let logs = notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 3, "{notes:?}");
}

#[test]
fn stdio_answers_every_envelope_error_and_goes_on() {
    let host = Host::start(&["hash"]);
    let stdio = host.stdio();
    // Not JSON: a parse error without an id.
    stdio.write("{\"jsonrpc\":\"2.0\",\"id\":1,\n");
    let response = stdio.response(&Value::Null);
    assert_eq!(error_code(&response), code::PARSE_ERROR, "{response}");
    assert!(response.get("id").is_none_or(Value::is_null), "{response}");
    // A batch: invalid request.
    stdio.send(&json!([request(
        json!(5),
        "tools/list",
        with_meta(json!({}), no_caps())
    )]));
    let response = stdio.response(&Value::Null);
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
            with_meta(json!({"name": "nope", "arguments": {}}), all_caps()),
            code::INVALID_PARAMS,
        ),
    ];
    for (method, params, expected) in cases {
        let id = stdio.send_request(method, params.clone());
        let response = stdio.response(&id);
        assert_eq!(
            error_code(&response),
            expected,
            "{method} {params}: {response}"
        );
        assert_eq!(response["id"], id, "{response}");
    }
    // Still serving, and only JSON-RPC was written.
    let response = stdio.call(&ToolCall::new("sha256", json!({"text": "abc"})));
    assert_eq!(
        text(complete(&response)).trim(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    for line in stdio.finish() {
        let message: Value = serde_json::from_str(&line).expect("JSON lines");
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}
