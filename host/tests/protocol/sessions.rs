//! 2025-era sessions: `initialize` opens one named by `Mcp-Session-Id`;
//! version negotiation; the session's own methods; results in the 2025
//! shape; ids that name no session of the caller; the standalone stream
//! (GET) and what it carries; DELETE; the bridge, which asks the client on
//! the call's stream and takes its answers by POST; and the stdio process
//! as a session beside stateless requests.

use std::time::Duration;

use airlock::legacy::BridgeSettings;
use airlock_e2e::legacy::{
    INTERNAL_ERROR, LEGACY_VERSION, RESOURCE_NOT_FOUND, SESSION_HEADER, SESSION_NOT_FOUND,
    assert_legacy_result, assert_stream_ends, expect_server_request, initialize_params,
    is_response_to, legacy_caps, read_response,
};
use airlock_e2e::mcp::{
    ToolCall, all_caps, elicit, error_code, error_message, no_caps, request, roots, sampled, text,
};
use airlock_e2e::sse::Events;
use airlock_e2e::{McpClient, Next, Reply, code, wait_until};
use serde_json::{Value, json};

use crate::support::{BOB, HANG_GUARD, Host, Session, Setup, Stream};

/// `tools/call` params of a 2025-era client: no `_meta`.
fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// Starts `test_elicitation` in `session` and reads the server's
/// `elicitation/create`; returns the call's id, its stream and the id of
/// the server's request.
#[track_caller]
pub fn start_elicitation(session: &Session<'_>, message: &str) -> (Value, Stream, Value) {
    let (call, mut stream) = session.stream(
        "tools/call",
        call_params("test_elicitation", json!({"message": message})),
    );
    let event = stream.expect_event("elicitation/create");
    let (asked, params) = expect_server_request(&event, "elicitation/create");
    assert_eq!(params["message"], message, "{event}");
    (call, stream, asked)
}

/// Answers an `elicitation/create` with `response`, expecting 202.
#[track_caller]
pub fn accept_elicitation(session: &Session<'_>, asked: &Value, response: &str) {
    let reply = session.respond(asked, elicit("accept", Some(json!({"response": response}))));
    assert_eq!(
        reply.status,
        202,
        "an awaited answer is 202: {}",
        reply.text()
    );
    assert!(reply.body.is_empty(), "a 202 has no body: {}", reply.text());
}

/// Asserts the stream's last message is `test_elicitation`'s result
/// reporting `response`, and that the stream then ends.
#[track_caller]
pub fn assert_elicitation_result(stream: &mut Stream, call: &Value, response: &str) {
    let (before, done) = read_response(stream, call);
    assert!(before.is_empty(), "nothing else came first: {before:?}");
    assert_legacy_result(&done["result"]);
    assert_eq!(
        text(&done["result"]),
        format!("User response: action=accept, content={{\"response\":\"{response}\"}}"),
        "{done}"
    );
    assert_stream_ends(stream, HANG_GUARD);
}

/// `ping` in the session succeeds with `{}`.
#[track_caller]
pub fn assert_ping(session: &Session<'_>) {
    assert_eq!(session.result("ping", json!({})), json!({}));
}

/// Asserts a reply is the 404 of an unknown session (-32001).
#[track_caller]
pub fn assert_session_not_found(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 404, "{what}: {}", reply.text());
    assert_eq!(
        reply.json()["error"]["code"],
        SESSION_NOT_FOUND,
        "{what}: {}",
        reply.text()
    );
}

/// The reply to a GET that must be refused.
#[track_caller]
fn refused_get(session: &Session<'_>) -> Reply {
    match session.get() {
        Ok(stream) => panic!(
            "the GET should be refused, got a stream: {:?}",
            stream.header("content-type")
        ),
        Err(reply) => reply,
    }
}

#[test]
fn initialize_opens_a_session_named_by_a_fresh_id() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let reply = http.initialize(initialize_params(LEGACY_VERSION, legacy_caps()));
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.media_type().as_deref(), Some("application/json"));
        let body = reply.json();
        assert_eq!(body["id"], 0, "{body}");
        let result = &body["result"];
        assert_eq!(result["protocolVersion"], LEGACY_VERSION, "{body}");
        assert!(result["capabilities"]["tools"].is_object(), "{body}");
        assert!(result["serverInfo"]["name"].is_string(), "{body}");
        assert!(
            result.as_object().expect("an object").keys().all(|m| [
                "protocolVersion",
                "capabilities",
                "serverInfo",
                "instructions"
            ]
            .contains(&m.as_str())),
            "{body}"
        );
        assert!(
            result["capabilities"].get("extensions").is_none(),
            "a 2025 session negotiates no extension: {body}"
        );
        assert_legacy_result(result);
        let id = reply
            .header(SESSION_HEADER)
            .unwrap_or_else(|| panic!("no Mcp-Session-Id: {:?}", reply.headers))
            .to_owned();
        assert!(id.len() >= 32, "{id}");
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id:?}");
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "every session gets its own id");
    for id in &ids {
        assert_ping(&http.session(id));
    }
}

#[test]
fn initialize_echoes_a_2025_version_and_answers_its_newest_otherwise() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    for (asked, negotiated) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-01-01", "2025-11-25"),
    ] {
        let reply = http.initialize(initialize_params(asked, json!({})));
        assert_eq!(reply.status, 200, "{asked}: {}", reply.text());
        assert_eq!(
            reply.json()["result"]["protocolVersion"],
            negotiated,
            "{asked}"
        );
        assert!(reply.header(SESSION_HEADER).is_some(), "{asked}");
    }
    // No version, nothing to negotiate: no session.
    let reply = http.initialize(json!({"capabilities": {}, "clientInfo": {"name": "x"}}));
    reply.assert_error(400, code::INVALID_PARAMS, Some(&json!(0)));
    assert!(
        reply.header(SESSION_HEADER).is_none(),
        "{:?}",
        reply.headers
    );
    // With the 2026-07-28 envelope, `initialize` is no method at all.
    let (id, reply) = http.send(
        "initialize",
        airlock_e2e::mcp::with_meta(initialize_params(LEGACY_VERSION, json!({})), no_caps()),
    );
    reply.assert_error(404, code::METHOD_NOT_FOUND, Some(&id));
    assert!(
        reply.header(SESSION_HEADER).is_none(),
        "{:?}",
        reply.headers
    );
}

#[test]
fn the_session_answers_its_own_methods_with_http_200() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    assert_eq!(session.rpc("ping", json!({}))["result"], json!({}));
    assert_eq!(
        session.result("logging/setLevel", json!({"level": "info"})),
        json!({})
    );
    let loud = session.rpc("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(error_code(&loud), code::INVALID_PARAMS, "{loud}");
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        assert_eq!(session.result(method, json!({"uri": "a://b"})), json!({}));
        let no_uri = session.rpc(method, json!({}));
        assert_eq!(
            error_code(&no_uri),
            code::INVALID_PARAMS,
            "{method}: {no_uri}"
        );
    }
    let again = session.rpc(
        "initialize",
        initialize_params(LEGACY_VERSION, legacy_caps()),
    );
    assert_eq!(error_code(&again), code::INVALID_REQUEST, "{again}");
    for method in ["server/discover", "subscriptions/listen"] {
        let response = session.rpc(method, json!({}));
        assert_eq!(
            error_code(&response),
            code::METHOD_NOT_FOUND,
            "{method}: {response}"
        );
    }
    // Its requests need no MCP-Protocol-Version header.
    let mut headers = session.headers();
    headers.remove("MCP-Protocol-Version");
    let reply = http.post_json(&headers, &request(json!("p"), "ping", json!({})));
    assert_eq!(reply.json()["result"], json!({}), "{}", reply.text());
}

#[test]
fn session_results_have_the_2025_shape_and_codes() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let tools = session.result("tools/list", json!({}));
    assert_legacy_result(&tools);
    assert!(
        tools["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "test_elicitation")),
        "{tools}"
    );
    for (method, field) in [
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let result = session.result(method, json!({}));
        assert_legacy_result(&result);
        assert!(result[field].is_array(), "{method}: {result}");
    }
    let read = session.result("resources/read", json!({"uri": "test://static-text"}));
    assert_legacy_result(&read);
    assert_eq!(
        read["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    let called = session.result("tools/call", call_params("test_simple_text", json!({})));
    assert_legacy_result(&called);
    assert_eq!(text(&called), "This is a simple text response for testing.");
    // A missing resource keeps its 2025 code, and names the URI; on the
    // 2026-07-28 wire of the same server it is invalid params.
    let uri = "test://nonexistent-resource";
    let missing = session.rpc("resources/read", json!({"uri": uri}));
    assert_eq!(error_code(&missing), RESOURCE_NOT_FOUND, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], uri, "{missing}");
    let modern = http.rpc("resources/read", json!({"uri": uri}), no_caps());
    assert_eq!(error_code(&modern), code::INVALID_PARAMS, "{modern}");
}

#[test]
fn an_unknown_or_ended_session_is_404() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let unknown = http.session("no-such-session-0123456789abcdefghijkl");
    let (id, reply) = unknown.request("ping", json!({}));
    assert_session_not_found(&reply, "an unknown session");
    assert_eq!(reply.json()["id"], id, "the 404 echoes the request id");
    assert_session_not_found(&refused_get(&unknown), "GET of an unknown session");
    assert_session_not_found(&unknown.delete(), "DELETE of an unknown session");

    let session = http.open_session(legacy_caps());
    assert_ping(&session);
    let deleted = session.delete();
    assert_eq!(
        deleted.status,
        200,
        "DELETE ends the session: {}",
        deleted.text()
    );
    let (id, reply) = session.request("tools/list", json!({}));
    assert_session_not_found(&reply, "a request after DELETE");
    assert_eq!(reply.json()["id"], id);
    assert_session_not_found(
        &session.respond(&json!(0), json!({})),
        "an answer after DELETE",
    );
    assert_session_not_found(
        &session.notify("notifications/initialized", json!({})),
        "a notification after DELETE",
    );
    assert_session_not_found(&refused_get(&session), "GET after DELETE");
    assert_session_not_found(&session.delete(), "DELETE again");
}

#[test]
fn another_principals_session_is_404_and_left_alone() {
    let host = Host::start(&["hash"]);
    let alice = host.http();
    let bob = host.http_as(BOB);
    let session = alice.open_session(legacy_caps());
    let stolen = bob.session(session.id());
    let (_, reply) = stolen.request("ping", json!({}));
    assert_session_not_found(&reply, "bob using alice's session");
    assert_session_not_found(&refused_get(&stolen), "bob's GET of alice's session");
    assert_session_not_found(
        &stolen.respond(&json!(0), json!({})),
        "bob answering in alice's session",
    );
    assert_session_not_found(&stolen.delete(), "bob's DELETE of alice's session");
    assert_ping(&session);
    let bobs = bob.open_session(legacy_caps());
    assert_ne!(bobs.id(), session.id());
    assert_ping(&bobs);
}

#[test]
fn a_2025_request_without_a_session_is_400() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    for version in ["2025-11-25", "2025-06-18"] {
        let mut headers = http.legacy_headers();
        headers.set("MCP-Protocol-Version", version);
        let reply = http.post_json(&headers, &request(json!(7), "tools/list", json!({})));
        let body = reply.assert_error(400, code::INVALID_REQUEST, Some(&json!(7)));
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("initialize")),
            "{body}"
        );
    }
    let reply = http.post_json(
        &http.legacy_headers(),
        &json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
    );
    assert_eq!(reply.status, 400, "{}", reply.text());
}

#[test]
fn get_needs_a_session_and_opens_one_stream_at_a_time() {
    let host = Host::start(&["hash"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let mut json_only = airlock_e2e::Headers::default();
    json_only.set(SESSION_HEADER, session.id());
    json_only.set("Accept", "application/json");
    let reply = http
        .get(&json_only)
        .err()
        .expect("the session stream is SSE only");
    assert_eq!(reply.status, 406, "{}", reply.text());

    let stream = session.listen();
    let second = refused_get(&session);
    assert_eq!(second.status, 409, "a second GET: {}", second.text());
    assert_ping(&session);

    // Once the client closes its stream, it may open another.
    drop(stream);
    let mut stream = wait_until("a new GET once the first stream is closed", || {
        session
            .get()
            .map_err(|reply| format!("HTTP {}", reply.status))
    });
    // Ending the session ends its stream.
    assert_eq!(session.delete().status, 200);
    assert_eq!(stream.next_event(HANG_GUARD), Next::Ended);
}

#[test]
fn the_session_stream_announces_list_changes() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let mut stream = session.listen();
    let changed = session.result(
        "tools/call",
        call_params("test_trigger_tool_change", json!({})),
    );
    assert_legacy_result(&changed);
    let note = stream.expect_event("notifications/tools/list_changed");
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert!(note.get("id").is_none(), "a notification: {note}");
}

#[test]
fn the_session_stream_carries_updates_of_subscribed_resources_only() {
    let host = Host::start(&["watcher"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let touch = |uri: &str| {
        let result = session.result("tools/call", call_params("touch", json!({"uri": uri})));
        assert_eq!(text(&result), format!("touched {uri}"));
    };
    session.result("resources/subscribe", json!({"uri": "watch://alpha"}));
    let mut stream = session.listen();
    // Changes come in order: the one it must not get goes first.
    touch("watch://beta");
    touch("watch://alpha");
    let note = stream.expect_event("resources/updated of watch://alpha");
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], "watch://alpha", "{note}");

    session.result("resources/unsubscribe", json!({"uri": "watch://alpha"}));
    session.result("resources/subscribe", json!({"uri": "watch://beta"}));
    touch("watch://alpha");
    touch("watch://beta");
    let note = stream.expect_event("resources/updated of watch://beta");
    assert_eq!(note["params"]["uri"], "watch://beta", "{note}");

    // Another session's subscriptions are its own.
    let other = http.open_session(legacy_caps());
    let mut other_stream = other.listen();
    other.result("resources/subscribe", json!({"uri": "watch://alpha"}));
    touch("watch://beta");
    touch("watch://alpha");
    let note = other_stream.expect_event("resources/updated of watch://alpha");
    assert_eq!(note["params"]["uri"], "watch://alpha", "{note}");
    let note = stream.expect_event("resources/updated of watch://beta");
    assert_eq!(note["params"]["uri"], "watch://beta", "{note}");
}

#[test]
fn a_bridged_elicitation_is_asked_on_the_call_stream_and_answered_by_post() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Who are you?");
    let params = &stream.seen()[0]["params"];
    assert_eq!(params["mode"], "form", "2025-11-25 forms name their mode");
    assert_eq!(
        params["requestedSchema"]["properties"]["response"]["type"],
        "string"
    );
    accept_elicitation(&session, &asked, "Ada");
    assert_elicitation_result(&mut stream, &call, "Ada");
    assert_ping(&session);
}

#[test]
fn a_work_item_takes_two_bridged_questions_in_a_2025_06_18_session() {
    let host = Host::start(&["work-items"]);
    let http = host.http();
    let session = http.open_session_version("2025-06-18", json!({"elicitation": {}}));
    assert_eq!(session.version(), "2025-06-18");
    let (call, mut stream) = session.stream(
        "tools/call",
        call_params(
            "update_work_item",
            json!({"workItemId": 4711, "fields": {"State": "Resolved"}}),
        ),
    );
    let event = stream.expect_event("the resolution question");
    let (first, params) = expect_server_request(&event, "elicitation/create");
    assert!(
        params.get("mode").is_none(),
        "no mode before 2025-11-25: {event}"
    );
    assert!(params["requestedSchema"]["properties"]["resolution"].is_object());
    let reply = session.respond(
        &first,
        elicit("accept", Some(json!({"resolution": "Duplicate"}))),
    );
    assert_eq!(reply.status, 202, "{}", reply.text());
    let event = stream.expect_event("the duplicate-of question");
    let (second, params) = expect_server_request(&event, "elicitation/create");
    assert_ne!(first, second, "every server request has its own id");
    assert!(params["requestedSchema"]["properties"]["duplicateOf"].is_object());
    let reply = session.respond(
        &second,
        elicit("accept", Some(json!({"duplicateOf": 1234}))),
    );
    assert_eq!(reply.status, 202, "{}", reply.text());
    let (_, done) = read_response(&mut stream, &call);
    assert_legacy_result(&done["result"]);
    assert_eq!(
        text(&done["result"]),
        "Updated work item 4711: State = Resolved, Resolution = Duplicate, Duplicate Of = 1234"
    );
    assert_stream_ends(&mut stream, HANG_GUARD);
}

#[test]
fn sampling_and_roots_are_asked_and_answered_too() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let (call, mut stream) = session.stream(
        "tools/call",
        call_params("test_input_required_result_multiple_inputs", json!({})),
    );
    let mut asked_methods = Vec::new();
    let done = loop {
        let event = stream.expect_event("a server request or the result");
        if is_response_to(&event, &call) {
            break event;
        }
        let method = event["method"].as_str().unwrap_or_default().to_owned();
        let (id, _) = expect_server_request(&event, &method);
        let answer = match method.as_str() {
            "elicitation/create" => elicit("accept", Some(json!({"name": "Alice"}))),
            "sampling/createMessage" => sampled("Hello there!"),
            "roots/list" => roots(&[("file:///test/root", "Test Root")]),
            other => panic!("unexpected server request {other}: {event}"),
        };
        asked_methods.push(method);
        assert_eq!(session.respond(&id, answer).status, 202);
    };
    asked_methods.sort();
    assert_eq!(
        asked_methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );
    assert_eq!(
        text(&done["result"]),
        "Name: Alice; Greeting: Hello there!; Roots: 1",
        "{done}"
    );
}

#[test]
fn an_answer_to_no_awaited_request_is_400_and_the_call_goes_on() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Name?");
    for wrong in [json!(4242), json!("not-an-id"), json!(-1)] {
        let reply = session.respond(&wrong, elicit("accept", Some(json!({"response": "x"}))));
        reply.assert_error(400, code::INVALID_REQUEST, None);
    }
    assert_ping(&session);
    accept_elicitation(&session, &asked, "Grace");
    assert_elicitation_result(&mut stream, &call, "Grace");
    // Answered once; a second answer awaits nothing.
    let twice = session.respond(&asked, elicit("accept", Some(json!({"response": "again"}))));
    assert_eq!(twice.status, 400, "{}", twice.text());
}

#[test]
fn a_request_the_client_refuses_fails_the_call() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Name?");
    let reply = session.respond_error(&asked, -32000, "user closed the dialog");
    assert_eq!(reply.status, 202, "{}", reply.text());
    let (_, done) = read_response(&mut stream, &call);
    assert_eq!(error_code(&done), INTERNAL_ERROR, "{done}");
    assert!(
        error_message(&done).contains("user closed the dialog"),
        "{done}"
    );
    assert_stream_ends(&mut stream, HANG_GUARD);
    assert_ping(&session);
}

#[test]
fn an_unanswered_request_times_out_and_the_session_goes_on() {
    let setup = Setup {
        bridge: BridgeSettings {
            answer_timeout: Duration::from_millis(500),
            ..BridgeSettings::default()
        },
        ..Setup::default()
    };
    let host = Host::start_with(&["everything"], setup);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Anyone?");
    let (before, done) = read_response(&mut stream, &call);
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["method"], "notifications/cancelled", "{before:?}");
    assert_eq!(before[0]["params"]["requestId"], asked, "{before:?}");
    assert_eq!(error_code(&done), INTERNAL_ERROR, "{done}");
    let message = error_message(&done);
    assert!(
        message.contains("did not answer") && message.contains("500 ms"),
        "{done}"
    );
    let late = session.respond(&asked, elicit("accept", Some(json!({"response": "me"}))));
    assert_eq!(late.status, 400, "{}", late.text());
    assert_ping(&session);
}

#[test]
fn a_capability_the_session_did_not_declare_fails_without_asking() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(json!({"elicitation": {}}));
    let (id, reply) = session.request(
        "tools/call",
        call_params("test_sampling", json!({"prompt": "p"})),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.notifications().is_empty(), "{}", reply.text());
    let response = reply.message();
    assert_eq!(response["id"], id, "{response}");
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert!(error_message(&response).contains("sampling"), "{response}");
}

#[test]
fn a_request_past_the_bridged_round_limit_fails_clearly() {
    let setup = Setup {
        bridge: BridgeSettings {
            max_rounds: 2,
            ..BridgeSettings::default()
        },
        ..Setup::default()
    };
    let host = Host::start_with(&["report"], setup);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let report =
        |items: Value| call_params("build_report", json!({"items": items, "sliceSize": 3}));
    let refused = session.rpc(
        "tools/call",
        report(json!([
            "one", "two", "three", "four", "five", "six", "seven"
        ])),
    );
    assert_eq!(error_code(&refused), INTERNAL_ERROR, "{refused}");
    assert!(
        error_message(&refused).contains("still needed input after 2 rounds"),
        "{refused}"
    );
    let done = session.result("tools/call", report(json!(["a", "b", "c", "d", "e", "f"])));
    assert!(text(&done).starts_with("Report on 6 items:"), "{done}");
}

#[test]
fn a_full_session_table_refuses_initialize_with_503() {
    let setup = Setup {
        max_sessions: 2,
        ..Setup::default()
    };
    let host = Host::start_with(&["hash"], setup);
    let http = host.http();
    let first = http.open_session(legacy_caps());
    let second = http.open_session(legacy_caps());
    // Both busy: their streams are open.
    let first_stream = first.listen();
    let _second_stream = second.listen();
    let refused = http.initialize(initialize_params(LEGACY_VERSION, legacy_caps()));
    refused.assert_error(503, INTERNAL_ERROR, Some(&json!(0)));
    assert!(refused.header(SESSION_HEADER).is_none());
    assert_ping(&first);
    // 2026-07-28 requests need no session.
    let modern = http.call(&ToolCall::new("sha256", json!({"text": "abc"})));
    assert!(modern.get("result").is_some(), "{modern}");
    // Once the first is idle, a new session takes its place.
    drop(first_stream);
    let third = wait_until("room for a third session", || {
        let reply = http.initialize(initialize_params(LEGACY_VERSION, legacy_caps()));
        match reply.header(SESSION_HEADER) {
            Some(id) if reply.status == 200 => Ok(id.to_owned()),
            _ => Err(format!("initialize got {}", reply.status)),
        }
    });
    assert_ping(&http.session(&third));
    assert_ping(&second);
    assert_session_not_found(
        &first.post(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"})),
        "the idle session made room",
    );
}

/// Sends `initialize` on stdio; returns the result.
#[track_caller]
fn stdio_initialize(stdio: &crate::support::Stdio, caps: Value) -> Value {
    let id = stdio.send_request("initialize", initialize_params(LEGACY_VERSION, caps));
    let response = stdio.response(&id);
    response
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("initialize should succeed: {response}"))
}

#[test]
fn the_stdio_process_is_a_session_beside_stateless_requests() {
    let host = Host::start(&["hash"]);
    let stdio = host.stdio();
    let result = stdio_initialize(&stdio, legacy_caps());
    assert_eq!(result["protocolVersion"], LEGACY_VERSION, "{result}");
    assert_legacy_result(&result);
    let id = stdio.send_request("ping", json!({}));
    assert_eq!(stdio.response(&id)["result"], json!({}));
    // Without `_meta`, a request is the session's: the 2025 shape.
    let id = stdio.send_request("tools/list", json!({}));
    let legacy = stdio.response(&id);
    assert_legacy_result(&legacy["result"]);
    assert_eq!(legacy["result"]["tools"][0]["name"], "sha256", "{legacy}");
    // With the 2026-07-28 envelope, it is served statelessly.
    let modern = stdio.rpc("tools/list", json!({}), no_caps());
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    let id = stdio.send_request("server/discover", json!({}));
    let in_session = stdio.response(&id);
    assert_eq!(
        error_code(&in_session),
        code::METHOD_NOT_FOUND,
        "{in_session}"
    );
    // One process, one session.
    let id = stdio.send_request(
        "initialize",
        initialize_params(LEGACY_VERSION, legacy_caps()),
    );
    let again = stdio.response(&id);
    assert_eq!(error_code(&again), code::INVALID_REQUEST, "{again}");
}

#[test]
fn stdio_bridges_elicitation_on_its_input_and_ignores_unknown_answers() {
    let host = Host::start(&["work-items"]);
    let stdio = host.stdio();
    stdio_initialize(&stdio, json!({"elicitation": {}}));
    let arguments = json!({"workItemId": 7, "fields": {"State": "Resolved"}});
    let call = stdio.send_request(
        "tools/call",
        call_params("update_work_item", arguments.clone()),
    );
    let (first, params) = expect_server_request(
        &stdio.next_message("elicitation/create"),
        "elicitation/create",
    );
    assert!(
        params["requestedSchema"]["properties"]["resolution"].is_object(),
        "{params}"
    );
    // An answer to nothing: no output at all, and the process goes on.
    let lines_before = stdio.lines().len();
    stdio.send(&json!({"jsonrpc": "2.0", "id": 9999, "result": {"action": "cancel"}}));
    let ping = stdio.send_request("ping", json!({}));
    assert_eq!(stdio.response(&ping)["result"], json!({}));
    assert_eq!(stdio.lines().len(), lines_before + 1, "{:?}", stdio.lines());
    // The 2026-07-28 wire in the same process gets MRTR, not a request.
    let modern = stdio.call(&ToolCall::new("update_work_item", arguments).caps(all_caps()));
    assert_eq!(modern["result"]["resultType"], "input_required", "{modern}");
    stdio.send(&json!({"jsonrpc": "2.0", "id": first,
        "result": elicit("accept", Some(json!({"resolution": "Fixed"})))}));
    let done = stdio.response(&call);
    assert_legacy_result(&done["result"]);
    assert_eq!(
        text(&done["result"]),
        "Updated work item 7: State = Resolved, Resolution = Fixed",
        "{done}"
    );
}

#[test]
fn a_response_outside_any_session_is_refused_by_the_endpoint() {
    use std::sync::Arc;

    use airlock::endpoint::{HttpRequest, Outcome, Peer, Process};
    use airlock::protocol::jsonrpc;

    let host = Host::start(&["hash"]);
    let response = br#"{"jsonrpc":"2.0","id":0,"result":{}}"#;
    let peers = [
        Peer::Process(Arc::new(Process::new(airlock::access::Caller::stdio()))),
        Peer::Http(HttpRequest {
            caller: Arc::new(airlock::access::Caller::new(
                "token:alice",
                airlock::access::Source::Token,
            )),
            headers: Default::default(),
            session: None,
        }),
    ];
    for peer in peers {
        let message = jsonrpc::decode(response).expect("a response");
        match host.endpoint().receive(peer, message) {
            Outcome::Refused(reply) => {
                let body: Value = serde_json::from_slice(&reply.body).expect("JSON");
                assert_eq!(body["error"]["code"], code::INVALID_REQUEST, "{body}");
                assert_eq!(reply.http_status, 400, "{body}");
            }
            other => panic!("a response answering nothing must be refused, got {other:?}"),
        }
    }
}

#[test]
fn the_session_stream_carries_every_change_from_when_it_opened() {
    use std::task::Poll;

    use airlock::endpoint::{HttpRequest, Outcome, Peer};

    let host = Host::start(&["watcher"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    for uri in ["watch://alpha", "watch://beta"] {
        session.result("resources/subscribe", json!({ "uri": uri }));
    }
    let peer = Peer::Http(HttpRequest {
        caller: std::sync::Arc::new(airlock::access::Caller::new(
            "token:alice",
            airlock::access::Source::Token,
        )),
        headers: Default::default(),
        session: Some(session.id().to_owned()),
    });
    let Outcome::Run(call) = host.endpoint().open_stream(peer) else {
        panic!("the session's stream should open");
    };
    // Open, not yet running (a transport may start it later: stdio spawns
    // it, HTTP polls it once the head is out): a change now must reach it.
    host.server().resource_updated("watch://alpha");
    let first = host.block_on(async {
        let (out, mut notes) = tokio::sync::mpsc::channel(8);
        let mut stream = call.run(Some(out));
        // Running, and waiting for the next change.
        std::future::poll_fn(|cx| {
            assert!(stream.as_mut().poll(cx).is_pending(), "the stream ended");
            Poll::Ready(())
        })
        .await;
        host.server().resource_updated("watch://beta");
        let note = tokio::select! {
            _ = stream => panic!("the stream ended"),
            note = notes.recv() => note.expect("a notification"),
        };
        serde_json::from_slice::<Value>(&note).expect("JSON")
    });
    assert_eq!(
        first["params"]["uri"], "watch://alpha",
        "the change made once the stream was open comes first: {first}"
    );
}
