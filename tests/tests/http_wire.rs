//! Streamable HTTP wire behaviour: envelope checks, status codes, error
//! codes, id echo, DNS-rebinding and auth checks, JSON vs SSE responses.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use airlock_e2e::http::{Headers, raw_http, read_raw_reply};
use airlock_e2e::mcp::{
    META_CAPS, META_SERVER_INFO, META_VERSION, PROTOCOL_VERSION, ToolCall, all_caps, complete,
    is_error, request, text, with_meta,
};
use airlock_e2e::{Airlock, HttpServer, SAMPLE_TOOLS, SAMPLES, ToolsDir, code, no_caps};
use serde_json::{Value, json};

fn serve(components: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(components)).start_http()
}

fn sha256_call(text: &str) -> Value {
    ToolCall::new("sha256", json!({ "text": text })).params()
}

#[test]
fn discover_describes_the_server() {
    let server = serve(&["hash"]);
    let http = server.client();
    let (id, reply) = http.send("server/discover", with_meta(json!({}), no_caps()));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.media_type().as_deref(), Some("application/json"));
    let body = reply.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], id);
    let r = &body["result"];
    assert_eq!(r["resultType"], "complete", "{body}");
    assert_eq!(r["supportedVersions"], json!([PROTOCOL_VERSION]), "{body}");
    assert!(r["capabilities"]["tools"].is_object(), "{body}");
    assert!(r["ttlMs"].is_u64(), "ttlMs is required: {body}");
    assert!(
        r["cacheScope"].is_string(),
        "cacheScope is required: {body}"
    );
    let info = &r["_meta"][META_SERVER_INFO];
    assert_eq!(info["name"], "airlock", "{body}");
    assert!(
        info["version"].as_str().is_some_and(|v| !v.is_empty()),
        "{body}"
    );
}

#[test]
fn tools_list_lists_every_sample_tool() {
    let server = serve(SAMPLES);
    let (_, reply) = server
        .client()
        .send("tools/list", with_meta(json!({}), no_caps()));
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    let r = &body["result"];
    assert_eq!(r["resultType"], "complete", "{body}");
    assert!(r["ttlMs"].is_u64(), "{body}");
    assert!(r["cacheScope"].is_string(), "{body}");
    let tools = r["tools"].as_array().expect("tools array");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, SAMPLE_TOOLS, "{body}");
    for tool in tools {
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{tool}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
}

#[test]
fn sha256_answers_as_plain_json() {
    let server = serve(&["hash"]);
    let (id, reply) = server.client().send("tools/call", sha256_call(""));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.media_type().as_deref(), Some("application/json"));
    let body = reply.json();
    assert_eq!(body["id"], id);
    let r = complete(&body);
    assert!(!is_error(r), "{body}");
    assert_eq!(
        text(r).trim(),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn errors_echo_string_and_number_ids() {
    let server = serve(&["hash"]);
    let http = server.client();
    for id in [json!("req-é-1"), json!(0), json!(9_007_199_254_740_991_i64)] {
        // Unknown tool (200), unknown method (404), missing _meta (400).
        let unknown_tool = ToolCall::new("no_such_tool", json!({})).params();
        let mut h = http.headers_for("tools/call", &unknown_tool);
        h.set("Mcp-Name", "no_such_tool");
        let reply = http.post_json(&h, &request(id.clone(), "tools/call", unknown_tool));
        reply.assert_error(200, code::INVALID_PARAMS, Some(&id));

        let params = with_meta(json!({}), no_caps());
        let h = http.headers_for("unknown/method", &params);
        let reply = http.post_json(&h, &request(id.clone(), "unknown/method", params));
        reply.assert_error(404, code::METHOD_NOT_FOUND, Some(&id));

        let h = http.headers_for("tools/list", &json!({}));
        let reply = http.post_json(&h, &request(id.clone(), "tools/list", json!({})));
        reply.assert_error(400, code::INVALID_PARAMS, Some(&id));
    }
}

#[test]
fn missing_meta_fields_are_invalid_params() {
    let server = serve(&["hash"]);
    let http = server.client();
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
            let body = reply.assert_error(400, code::INVALID_PARAMS, Some(&id));
            assert!(body["error"]["message"].is_string(), "{params}: {body}");
        }
    }
    // No params at all.
    let h = http.headers_for("server/discover", &json!({}));
    let reply = http.post_json(
        &h,
        &json!({"jsonrpc": "2.0", "id": "np", "method": "server/discover"}),
    );
    reply.assert_error(400, code::INVALID_PARAMS, Some(&json!("np")));
}

#[test]
fn protocol_version_header_must_match_meta() {
    let server = serve(&["hash"]);
    let http = server.client();
    let params = with_meta(json!({}), no_caps());
    // Missing header.
    let (id, reply) = http.send_with("tools/list", params.clone(), |h| {
        h.remove("MCP-Protocol-Version");
    });
    reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    // Header names another (real) version.
    let (id, reply) = http.send_with("tools/list", params, |h| {
        h.set("MCP-Protocol-Version", "2025-11-25");
    });
    reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    // Header right, _meta names a version nobody supports: mismatch first.
    let odd = json!({"_meta": {META_VERSION: "v999.0.0", META_CAPS: {}}});
    let (id, reply) = http.send("tools/list", odd);
    reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
}

#[test]
fn unsupported_version_names_the_supported_ones() {
    let server = serve(&["hash"]);
    let http = server.client();
    for version in ["1900-01-01", "2025-06-18", "v999.0.0"] {
        let params = json!({"_meta": {META_VERSION: version, META_CAPS: {}}});
        let (id, reply) = http.send_with("server/discover", params, |h| {
            h.set("MCP-Protocol-Version", version);
        });
        let body = reply.assert_error(400, code::UNSUPPORTED_VERSION, Some(&id));
        let data = &body["error"]["data"];
        assert_eq!(data["requested"], version, "{body}");
        assert_eq!(data["supported"], json!([PROTOCOL_VERSION]), "{body}");
    }
}

#[test]
fn mcp_method_header_is_checked() {
    let server = serve(&["hash"]);
    let http = server.client();
    let params = with_meta(json!({}), no_caps());
    let edits: [(&str, Option<&str>); 4] = [
        ("missing", None),
        ("other method", Some("server/discover")),
        ("other case", Some("Tools/List")),
        ("empty", Some("")),
    ];
    for (what, value) in edits {
        let (id, reply) = http.send_with("tools/list", params.clone(), |h| match value {
            None => {
                h.remove("Mcp-Method");
            }
            Some(v) => {
                h.set("Mcp-Method", v);
            }
        });
        assert_eq!(reply.status, 400, "{what}: {}", reply.text());
        reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    }
    // Surrounding whitespace is not part of a header value.
    let (_, reply) = http.send_with("tools/list", params, |h| {
        h.set("Mcp-Method", " tools/list ");
    });
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn unknown_and_removed_methods_are_404() {
    let server = serve(&["hash"]);
    let http = server.client();
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
fn mcp_name_header_is_checked() {
    let server = serve(&["hash"]);
    let http = server.client();
    let params = sha256_call("x");
    let edits: [(&str, Option<&str>); 4] = [
        ("missing", None),
        ("other tool", Some("summarize")),
        ("other case", Some("SHA256")),
        ("empty", Some("")),
    ];
    for (what, value) in edits {
        let (id, reply) = http.send_with("tools/call", params.clone(), |h| match value {
            None => {
                h.remove("Mcp-Name");
            }
            Some(v) => {
                h.set("Mcp-Name", v);
            }
        });
        assert_eq!(reply.status, 400, "{what}: {}", reply.text());
        reply.assert_error(400, code::HEADER_MISMATCH, Some(&id));
    }
}

#[test]
fn unknown_tool_is_invalid_params_with_200() {
    let server = serve(&["hash"]);
    let (id, reply) = server.client().send(
        "tools/call",
        ToolCall::new("sha512", json!({"text": "x"})).params(),
    );
    reply.assert_error(200, code::INVALID_PARAMS, Some(&id));
}

#[test]
fn malformed_json_is_a_parse_error() {
    let server = serve(&["hash"]);
    let http = server.client();
    let h = http.headers_for("tools/list", &json!({}));
    for body in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,"[..],
        b"not json at all",
        b"",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}}",
        b"{'jsonrpc':'2.0'}",
    ] {
        let reply = http.post(&h, body);
        reply.assert_error(400, code::PARSE_ERROR, None);
    }
}

#[test]
fn non_utf8_body_is_a_parse_error() {
    let server = serve(&["hash"]);
    let http = server.client();
    let h = http.headers_for("tools/list", &json!({}));
    let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":""#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28]);
    body.extend_from_slice(br#""}}"#);
    let reply = http.post(&h, &body);
    reply.assert_error(400, code::PARSE_ERROR, None);
}

#[test]
fn batches_are_invalid_requests() {
    let server = serve(&["hash"]);
    let http = server.client();
    let h = http.headers_for("tools/list", &json!({}));
    let one = request(json!(1), "tools/list", with_meta(json!({}), no_caps()));
    for body in [json!([one.clone()]), json!([one.clone(), one]), json!([])] {
        let reply = http.post_json(&h, &body);
        reply.assert_error(400, code::INVALID_REQUEST, None);
    }
}

#[test]
fn non_request_objects_are_invalid_requests() {
    let server = serve(&["hash"]);
    let http = server.client();
    let h = http.headers_for("tools/list", &json!({}));
    for body in [
        json!(42),
        json!("tools/list"),
        json!(null),
        json!(true),
        json!({}),
        json!({"jsonrpc": "2.0", "id": 1}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 7}),
    ] {
        let reply = http.post_json(&h, &body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        let answer = reply.json();
        assert_eq!(
            answer["error"]["code"],
            code::INVALID_REQUEST,
            "{body}: {answer}"
        );
    }
}

#[test]
fn wrong_param_types_are_invalid_params() {
    let server = serve(&["hash"]);
    let http = server.client();
    // arguments must be an object.
    for arguments in [json!(["abc"]), json!("abc"), json!(5)] {
        let params = with_meta(
            json!({"name": "sha256", "arguments": arguments}),
            all_caps(),
        );
        let (id, reply) = http.send("tools/call", params);
        reply.assert_error(200, code::INVALID_PARAMS, Some(&id));
    }
    // params itself must be an object: an array has no _meta (-32602), and
    // MCP params are never positional (-32600); either is a 400 with the id.
    let h = http.headers_for("tools/list", &json!({}));
    let reply = http.post_json(&h, &request(json!("arr"), "tools/list", json!([1, 2])));
    let body = reply.message();
    assert_eq!(reply.status, 400, "{body}");
    assert_eq!(body["id"], "arr", "{body}");
    assert!(
        [code::INVALID_PARAMS, code::INVALID_REQUEST]
            .contains(&body["error"]["code"].as_i64().unwrap_or(0)),
        "{body}"
    );
    // name must be a string. The header can't match a number's text either,
    // so either check may answer first; both must be errors echoing the id.
    let params = with_meta(json!({"name": 5, "arguments": {}}), all_caps());
    let (id, reply) = http.send_with("tools/call", params, |h| {
        h.set("Mcp-Name", "5");
    });
    let body = reply.message();
    assert_eq!(body["id"], id, "{body}");
    match body["error"]["code"].as_i64() {
        Some(code::INVALID_PARAMS) => assert!(
            reply.status == 200 || reply.status == 400,
            "{}",
            reply.status
        ),
        Some(code::HEADER_MISMATCH) => assert_eq!(reply.status, 400),
        _ => panic!("a numeric tool name must be rejected: {body}"),
    }
}

#[test]
fn oversized_body_is_413() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--max-body", "4KiB"])
        .start_http();
    let http = server.client();
    // Under the limit: served.
    let (_, reply) = http.send("tools/call", sha256_call(&"a".repeat(3 * 1024)));
    assert_eq!(reply.status, 200, "{}", reply.text());
    complete(&reply.json());
    // Over the limit: 413 with an id-less -32600.
    let (_, reply) = http.send("tools/call", sha256_call(&"a".repeat(16 * 1024)));
    assert_eq!(reply.status, 413, "{}", reply.text());
    reply.assert_error(413, code::INVALID_REQUEST, None);
    // And the server still serves.
    let (_, reply) = http.send("tools/call", sha256_call("abc"));
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn get_and_delete_are_405() {
    let server = serve(&["hash"]);
    let http = server.client();
    assert_eq!(http.get().status, 405);
    assert_eq!(http.delete().status, 405);
}

#[test]
fn foreign_origins_are_403() {
    let server = serve(&["hash"]);
    let http = server.client();
    let params = with_meta(json!({}), no_caps());
    for origin in [
        "http://evil.example.com",
        "https://localhost.evil.example.com",
        "http://127.0.0.1.evil.example.com:8080",
        "null",
    ] {
        let (_, reply) = http.send_with("tools/list", params.clone(), |h| {
            h.set("Origin", origin);
        });
        assert_eq!(reply.status, 403, "Origin {origin}: {}", reply.text());
    }
    for origin in [
        "http://localhost:3000",
        "http://localhost",
        "http://127.0.0.1:8080",
        "http://[::1]:9999",
    ] {
        let (_, reply) = http.send_with("tools/list", params.clone(), |h| {
            h.set("Origin", origin);
        });
        assert_eq!(reply.status, 200, "Origin {origin}: {}", reply.text());
    }
}

#[test]
fn allowed_origin_flag_admits_that_origin() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--allowed-origin", "https://app.example.com"])
        .start_http();
    let http = server.client();
    let params = with_meta(json!({}), no_caps());
    let (_, reply) = http.send_with("tools/list", params.clone(), |h| {
        h.set("Origin", "https://app.example.com");
    });
    assert_eq!(reply.status, 200, "{}", reply.text());
    let (_, reply) = http.send_with("tools/list", params, |h| {
        h.set("Origin", "https://evil.example.com");
    });
    assert_eq!(reply.status, 403, "{}", reply.text());
}

fn raw_discover(addr: &str, host: &str) -> u16 {
    let body = request(json!(1), "server/discover", with_meta(json!({}), no_caps())).to_string();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    raw_http(addr, req.as_bytes()).status
}

#[test]
fn foreign_hosts_are_403() {
    let server = serve(&["hash"]);
    let addr = server.addr();
    let port = server.port();
    for host in [
        "evil.example.com".to_string(),
        format!("evil.example.com:{port}"),
        format!("localhost.evil.example.com:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
    ] {
        assert_eq!(raw_discover(&addr, &host), 403, "Host {host}");
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".to_string(),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(raw_discover(&addr, &host), 200, "Host {host}");
    }
}

#[test]
fn allowed_host_flag_admits_that_host() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--allowed-host", "airlock.internal"])
        .start_http();
    let addr = server.addr();
    let port = server.port();
    assert_eq!(raw_discover(&addr, "airlock.internal"), 200);
    assert_eq!(
        raw_discover(&addr, &format!("airlock.internal:{port}")),
        200
    );
    assert_eq!(
        raw_discover(&addr, &format!("evil.example.com:{port}")),
        403
    );
}

#[test]
fn notifications_are_accepted_with_202() {
    let server = serve(&["hash"]);
    let http = server.client();
    let mut h = Headers::default();
    h.set("Content-Type", "application/json");
    h.set("Accept", "application/json, text/event-stream");
    h.set("MCP-Protocol-Version", PROTOCOL_VERSION);
    for note in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 1, "reason": "test"}}),
    ] {
        let reply = http.post_json(&h, &note);
        assert_eq!(reply.status, 202, "{note}: {}", reply.text());
        assert!(
            reply.body.is_empty(),
            "a 202 has an empty body: {}",
            reply.text()
        );
    }
}

#[test]
fn bearer_token_is_required_with_a_tokens_file() {
    let tools = ToolsDir::with(&["hash"]);
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "# e2e tokens\n\ntok-alice-0123456789 alice\n#tok-ghost-0123456789 ghost\ntok-bob-0123456789 bob\n",
    )
    .unwrap();
    let server = Airlock::new(&tools)
        .arg("--tokens-file")
        .arg(&tokens)
        .start_http();
    let params = with_meta(json!({}), no_caps());

    let (_, reply) = server.client().send("tools/list", params.clone());
    assert_eq!(reply.status, 401, "{}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer"),
        "401 needs WWW-Authenticate: Bearer, got {challenge:?}"
    );
    for bad in [
        "tok-mallory",
        "#tok-ghost-0123456789",
        "tok-alice-012345678",
        "alice",
    ] {
        let (_, reply) = server
            .client_with_token(bad)
            .send("tools/list", params.clone());
        assert_eq!(reply.status, 401, "token {bad:?}: {}", reply.text());
    }
    let (_, reply) = server
        .client()
        .send_with("tools/list", params.clone(), |h| {
            h.set("Authorization", "Basic dG9rLWFsaWNlLTAxMjM0NTY3ODk6");
        });
    assert_eq!(reply.status, 401, "{}", reply.text());
    for good in ["tok-alice-0123456789", "tok-bob-0123456789"] {
        let (_, reply) = server
            .client_with_token(good)
            .send("tools/call", sha256_call("abc"));
        assert_eq!(reply.status, 200, "token {good}: {}", reply.text());
        complete(&reply.json());
    }
}

fn progress_call(steps: u64) -> ToolCall {
    ToolCall::new("progress", json!({ "steps": steps }))
}

/// The `i` of the `step i` a notification is about.
fn step_of(note: &Value) -> u64 {
    match note["method"].as_str() {
        Some("notifications/progress") => note["params"]["progress"]
            .as_f64()
            .map(|p| p as u64)
            .unwrap_or_else(|| panic!("progress must be a number: {note}")),
        Some("notifications/message") => {
            let data = note["params"]["data"].to_string();
            let at = data
                .find("step ")
                .unwrap_or_else(|| panic!("log data should say `step i`: {note}"));
            data[at + 5..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or_else(|_| panic!("log data should say `step i`: {note}"))
        }
        _ => panic!("unexpected notification {note}"),
    }
}

#[test]
fn progress_and_logs_stream_as_sse_in_order() {
    let server = serve(&["probe"]);
    let http = server.client();
    let call = progress_call(4).progress_token("tok-7").log_level("info");
    let (id, reply) = http.send("tools/call", call.params());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(
        reply.is_sse(),
        "progressToken/logLevel need an SSE response, got {:?}",
        reply.header("content-type")
    );
    let events = reply.events();
    let last = events.last().expect("at least the response");
    assert_eq!(last["id"], id, "the response is the last event: {events:?}");
    let r = complete(last);
    assert!(!is_error(r), "{last}");
    let notes = &events[..events.len() - 1];
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    let logs: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .collect();
    assert_eq!(progress.len(), 4, "{events:#?}");
    assert_eq!(logs.len(), 4, "{events:#?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["jsonrpc"], "2.0");
        assert!(p.get("id").is_none(), "{p}");
        assert_eq!(p["params"]["progressToken"], "tok-7", "{p}");
        assert_eq!(
            p["params"]["progress"].as_f64(),
            Some((i + 1) as f64),
            "{p}"
        );
        assert_eq!(p["params"]["total"].as_f64(), Some(4.0), "{p}");
    }
    for (i, l) in logs.iter().enumerate() {
        assert_eq!(l["params"]["level"], "info", "{l}");
        assert!(l["params"]["logger"].is_string(), "{l}");
        assert_eq!(step_of(l), (i + 1) as u64, "{l}");
    }
    let steps: Vec<u64> = notes.iter().map(step_of).collect();
    assert!(
        steps.windows(2).all(|w| w[0] <= w[1]),
        "notifications must come in the order the guest sent them: {steps:?}"
    );
    assert!(notes.iter().all(|n| n["method"].is_string()), "{notes:?}");
}

#[test]
fn progress_alone_sends_no_log_messages() {
    let server = serve(&["probe"]);
    let (_, reply) = server
        .client()
        .send("tools/call", progress_call(3).progress_token(11).params());
    assert!(reply.is_sse(), "{:?}", reply.header("content-type"));
    let notes = reply.notifications();
    assert_eq!(notes.len(), 3, "{notes:#?}");
    for (i, n) in notes.iter().enumerate() {
        assert_eq!(
            n["method"], "notifications/progress",
            "no logs without logLevel: {n}"
        );
        assert_eq!(n["params"]["progressToken"], 11, "{n}");
        assert_eq!(n["params"]["progress"].as_f64(), Some((i + 1) as f64));
    }
    complete(&reply.message());
}

#[test]
fn log_level_filters_lower_levels() {
    let server = serve(&["probe"]);
    let http = server.client();
    // The probe logs at info: nothing at warning and above.
    let (id, reply) = http.send("tools/call", progress_call(3).log_level("warning").params());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.notifications(), Vec::<Value>::new());
    let response = reply.message();
    assert_eq!(response["id"], id);
    complete(&response);
    // debug includes info.
    let (_, reply) = http.send("tools/call", progress_call(2).log_level("debug").params());
    let logs = reply
        .notifications()
        .into_iter()
        .filter(|n| n["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 2, "{}", reply.text());
    // No progress notifications without a progressToken.
    assert!(
        reply
            .notifications()
            .iter()
            .all(|n| n["method"] != "notifications/progress"),
        "{}",
        reply.text()
    );
}

#[test]
fn a_stream_opens_only_when_there_is_something_to_stream() {
    // A request that opted in to notifications gets SSE once its first
    // notification exists; one that produced none gets plain JSON, so its
    // HTTP status still tells what kind of error it was.
    let server = serve(&["probe"]);
    let (_, quiet) = server
        .client()
        .send("tools/call", progress_call(3).log_level("warning").params());
    assert_eq!(quiet.media_type().as_deref(), Some("application/json"));
    complete(&quiet.json());
    let (_, chatty) = server
        .client()
        .send("tools/call", progress_call(3).log_level("info").params());
    assert!(
        chatty.is_sse(),
        "info logs should stream, got {:?}",
        chatty.header("content-type")
    );
    assert_eq!(chatty.notifications().len(), 3);
    complete(&chatty.message());
}

#[test]
fn no_progress_token_or_log_level_means_plain_json() {
    let server = serve(&["probe"]);
    let (_, reply) = server
        .client()
        .send("tools/call", progress_call(3).params());
    assert_eq!(reply.media_type().as_deref(), Some("application/json"));
    complete(&reply.json());
}

/// The head of a `tools/list` POST to `server`, without its body.
fn tools_list_head(server: &HttpServer, body_headers: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n\
         Mcp-Method: tools/list\r\n{body_headers}\r\n",
        server.addr()
    )
}

#[test]
fn malformed_chunked_body_is_a_parse_error() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--max-body", "4KiB"])
        .start_http();
    let body = request(json!(1), "tools/list", with_meta(json!({}), no_caps())).to_string();
    let head = tools_list_head(
        &server,
        "Transfer-Encoding: chunked\r\nConnection: close\r\n",
    );
    // A chunk size that is not hexadecimal, one with garbage after it, and a
    // chunk whose data overruns its size.
    for chunks in [
        format!("zz\r\n{body}\r\n0\r\n\r\n"),
        format!("{:x}!\r\n{body}\r\n0\r\n\r\n", body.len()),
        format!("2\r\n{body}\r\n0\r\n\r\n"),
    ] {
        let reply = raw_http(&server.addr(), format!("{head}{chunks}").as_bytes());
        let error = reply.assert_error(400, code::PARSE_ERROR, None);
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("body") && !message.contains("limit"),
            "{chunks:?}: {error}"
        );
    }
    // A well-formed chunked body is served, and one over the limit is 413.
    let good = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let reply = raw_http(&server.addr(), format!("{head}{good}").as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let big = "a".repeat(8 * 1024);
    let over = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    let reply = raw_http(&server.addr(), format!("{head}{over}").as_bytes());
    reply.assert_error(413, code::INVALID_REQUEST, None);
}

#[test]
fn bodies_that_never_finish_get_408_and_free_their_connection() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--http-body-timeout", "300ms"])
        .args(["--max-connections", "2"])
        .start_http();
    // Both connection slots: a head announcing 100 bytes, then only 10.
    let head = tools_list_head(&server, "Content-Length: 100\r\n");
    let slow: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr()).expect("connect");
            stream
                .write_all(format!("{head}{{\"jsonrpc\"").as_bytes())
                .expect("write a partial request");
            stream
        })
        .collect();
    for stream in slow {
        let start = Instant::now();
        let reply = read_raw_reply(stream);
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the connection stayed open after its reply: {}",
            reply.text()
        );
        let error = reply.assert_error(408, code::INVALID_REQUEST, None);
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("300 ms")),
            "{error}"
        );
        assert_eq!(reply.header("connection"), Some("close"), "{error}");
    }
    // The slots are free again: a normal request is served.
    let (_, reply) = server.client().send("tools/call", sha256_call("abc"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    complete(&reply.json());
}

/// docs/wire.md's commands, run as written (bash, curl and jq) against a
/// server of the samples they call: each answer is the one the page shows.
#[test]
fn the_wire_page_commands_run_as_written() {
    let page = std::fs::read_to_string(airlock_e2e::paths::workspace_root().join("docs/wire.md"))
        .expect("docs/wire.md");
    let mut script = String::from("set -euo pipefail\n");
    let mut in_shell = false;
    for line in page.lines() {
        match line {
            "```sh" => in_shell = true,
            "```" => in_shell = false,
            _ if in_shell => {
                script.push_str(line);
                script.push('\n');
            }
            _ => {}
        }
    }
    let server = serve(&["deploy", "report"]);
    let script = script.replace("http://127.0.0.1:8080/mcp", server.url());
    assert!(
        script.contains(server.url()),
        "the page names no sample server URL"
    );
    let dir = tempfile::tempdir().expect("a working directory");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .expect("run bash (the page's commands need bash, curl and jq)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let (responses, notifications): (Vec<&Value>, Vec<&Value>) =
        answers.iter().partition(|a| a.get("id").is_some());
    let results: Vec<&Value> = responses.iter().map(|a| &a["result"]).collect();
    assert_eq!(results.len(), 6, "{stdout}");
    assert_eq!(results[0]["resultType"], "input_required", "{stdout}");
    assert!(
        results[0]["inputRequests"]["confirm"].is_object(),
        "{stdout}"
    );
    assert_eq!(text(results[1]), "Deployed api to production", "{stdout}");
    assert_eq!(results[2]["resultType"], "task", "{stdout}");
    assert_eq!(results[3]["taskId"], results[2]["taskId"], "{stdout}");
    assert!(results[4].is_object(), "{stdout}");
    assert!(
        text(results[5]).starts_with("Report on 2 items:"),
        "{stdout}"
    );
    // The progress and log messages the last call asked for, before its
    // response.
    let methods: Vec<&Value> = notifications.iter().map(|n| &n["method"]).collect();
    assert_eq!(
        methods,
        ["notifications/message", "notifications/progress"],
        "{stdout}"
    );
    assert_eq!(
        notifications[0]["params"]["data"], "described items 1-2 of 2",
        "{stdout}"
    );
    assert_eq!(
        notifications[1]["params"]["progressToken"], "report-1",
        "{stdout}"
    );
}
