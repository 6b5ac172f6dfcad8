//! 2025-era clients (MCP 2025-11-25, 2025-06-18, 2025-03-26) against the
//! real binary, on the wire they speak, written by hand: `initialize` opens
//! a session named by `Mcp-Session-Id`; the session's methods (`ping`,
//! `logging/setLevel`, `resources/subscribe`); GET for the session's own
//! stream, DELETE to end it; the bridge, which turns a component's
//! `input_required` into real `elicitation/create`,
//! `sampling/createMessage` and `roots/list` requests on the call's stream,
//! answered by POSTed responses; and what a client can get wrong (unknown
//! or repeated answers, no answer, cancelling, ending the session mid-call)
//! and the session table's bounds. Over stdio the same session lives on
//! stdin and stdout, beside stateless 2026-07-28 requests.
//!
//! Nothing waits a fixed time: streams are read with deadlines, and
//! background effects (reloads, expiry) are awaited with `wait_until`.

use std::time::{Duration, Instant};

use airlock_e2e::legacy::{
    Endpoint, INTERNAL_ERROR, LEGACY_VERSION, RESOURCE_NOT_FOUND, SESSION_HEADER,
    SESSION_NOT_FOUND, Session, assert_legacy_result, assert_stream_ends, expect_server_request,
    initialize_params, is_response_to, legacy_caps, read_response,
};
use airlock_e2e::mcp::{
    ToolCall, all_caps, elicit, error_code, error_message, no_caps, request, roots, sampled, text,
};
use airlock_e2e::stdio::STDIO_TIMEOUT;
use airlock_e2e::{
    Airlock, HttpServer, McpClient, Next, Reply, SseStream, StdioServer, ToolsDir, code, wait_until,
};
use serde_json::{Value, json};

/// How promptly a stream must end once its call is over (cancelled, its
/// session ended), far below the answer timeout of the tests that check it.
const PROMPTLY: Duration = Duration::from_secs(10);

/// The answer timeout of tests that must not reach it.
const LONG_ANSWER_TIMEOUT: &str = "60s";

fn serve(components: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(components)).start_http()
}

fn serve_with(components: &[&str], args: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(components))
        .args(args)
        .start_http()
}

fn endpoint(server: &HttpServer) -> Endpoint {
    Endpoint::new(server.url())
}

/// `tools/call` params of a 2025-era client: no `_meta`.
fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// Starts `test_elicitation` in `session` and reads the server's
/// `elicitation/create`; returns the call's id, its stream and the id of
/// the server's request.
#[track_caller]
fn start_elicitation(session: &Session, message: &str) -> (Value, SseStream, Value) {
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
fn accept_elicitation(session: &Session, asked: &Value, response: &str) {
    let reply = session.respond(asked, elicit("accept", Some(json!({"response": response}))));
    assert_eq!(
        reply.status,
        202,
        "an awaited answer is 202: {}",
        reply.text()
    );
    assert!(reply.body.is_empty(), "a 202 has no body: {}", reply.text());
}

/// Asserts the final message of a stream is the result of `test_elicitation`
/// reporting `response`, then that the stream ends.
#[track_caller]
fn assert_elicitation_result(stream: &mut SseStream, call: &Value, response: &str) {
    let (before, done) = read_response(stream, call);
    assert!(before.is_empty(), "nothing else came first: {before:?}");
    let result = &done["result"];
    assert_legacy_result(result);
    assert_eq!(
        text(result),
        format!("User response: action=accept, content={{\"response\":\"{response}\"}}"),
        "the result reflects the answer: {done}"
    );
    assert_stream_ends(stream, PROMPTLY);
}

/// `ping` in the session succeeds with `{}`.
#[track_caller]
fn assert_ping(session: &Session) {
    assert_eq!(session.result("ping", json!({})), json!({}));
}

/// Asserts a reply is the 404 of an unknown session (-32001).
#[track_caller]
fn assert_session_not_found(reply: &Reply, what: &str) {
    assert_eq!(reply.status, 404, "{what}: {}", reply.text());
    assert_eq!(
        reply.json()["error"]["code"],
        SESSION_NOT_FOUND,
        "{what}: {}",
        reply.text()
    );
}

// ---------------------------------------------------------------------------
// Opening sessions
// ---------------------------------------------------------------------------

#[test]
fn initialize_opens_a_session_named_by_a_fresh_id() {
    let server = serve(&["hash"]);
    let endpoint = endpoint(&server);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let reply = endpoint.initialize(initialize_params(LEGACY_VERSION, legacy_caps()));
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.media_type().as_deref(), Some("application/json"));
        let body = reply.json();
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["id"], 0, "{body}");
        let result = &body["result"];
        assert_eq!(result["protocolVersion"], LEGACY_VERSION, "{body}");
        assert!(result["capabilities"]["tools"].is_object(), "{body}");
        assert!(result["serverInfo"]["name"].is_string(), "{body}");
        assert!(result["serverInfo"]["version"].is_string(), "{body}");
        let members: Vec<&String> = result.as_object().expect("an object").keys().collect();
        assert!(
            members.iter().all(|m| [
                "protocolVersion",
                "capabilities",
                "serverInfo",
                "instructions"
            ]
            .contains(&m.as_str())),
            "initialize answers protocolVersion, capabilities, serverInfo only: {body}"
        );
        assert_legacy_result(result);
        let id = reply
            .header(SESSION_HEADER)
            .unwrap_or_else(|| panic!("no Mcp-Session-Id: {:?}", reply.headers))
            .to_string();
        assert!(id.len() >= 32, "a session id of {} chars: {id}", id.len());
        assert!(
            id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "a session id is visible ASCII: {id:?}"
        );
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "every session gets its own id");
    for id in &ids {
        assert_ping(&endpoint.session(id));
    }
}

#[test]
fn initialize_echoes_a_2025_version_and_answers_its_newest_otherwise() {
    let server = serve(&["hash"]);
    let endpoint = endpoint(&server);
    for (asked, negotiated) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-01-01", "2025-11-25"),
    ] {
        let reply = endpoint.initialize(initialize_params(asked, json!({})));
        assert_eq!(reply.status, 200, "{asked}: {}", reply.text());
        assert_eq!(
            reply.json()["result"]["protocolVersion"],
            negotiated,
            "asked for {asked}: {}",
            reply.text()
        );
        assert!(reply.header(SESSION_HEADER).is_some(), "{asked}");
    }

    // Without a protocol version there is nothing to negotiate: no session.
    let reply = endpoint.initialize(json!({"capabilities": {}, "clientInfo": {"name": "x"}}));
    reply.assert_error(400, code::INVALID_PARAMS, Some(&json!(0)));
    assert!(
        reply.header(SESSION_HEADER).is_none(),
        "{:?}",
        reply.headers
    );
}

// ---------------------------------------------------------------------------
// The session's own methods, and results in the 2025 shape
// ---------------------------------------------------------------------------

#[test]
fn the_session_answers_its_own_methods_with_http_200() {
    let server = serve(&["hash"]);
    let session = endpoint(&server).open(legacy_caps());

    assert_eq!(session.rpc("ping", json!({}))["result"], json!({}));
    assert_eq!(
        session.result("logging/setLevel", json!({"level": "info"})),
        json!({})
    );
    let loud = session.rpc("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(error_code(&loud), code::INVALID_PARAMS, "{loud}");
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        assert_eq!(
            session.result(method, json!({"uri": "test://static-text"})),
            json!({}),
            "{method}"
        );
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
            "{method} is not part of a 2025 session: {response}"
        );
    }
    // The session is still fine after all that, and its requests need no
    // MCP-Protocol-Version header.
    assert_ping(&session);
    let mut headers = session.headers();
    headers.remove("MCP-Protocol-Version");
    let reply = endpoint(&server).post(&headers, &request(json!("p"), "ping", json!({})));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["result"], json!({}), "{}", reply.text());
}

#[test]
fn session_results_have_the_2025_shape_and_codes() {
    let server = serve(&["everything"]);
    let session = endpoint(&server).open(legacy_caps());

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
        read["contents"][0]["text"], "This is the content of the static text resource.",
        "{read}"
    );
    let called = session.result("tools/call", call_params("test_simple_text", json!({})));
    assert_legacy_result(&called);
    assert_eq!(text(&called), "This is a simple text response for testing.");

    // Resource not found keeps its 2025 code, and names the URI.
    let uri = "test://nonexistent-resource";
    let missing = session.rpc("resources/read", json!({"uri": uri}));
    assert_eq!(error_code(&missing), RESOURCE_NOT_FOUND, "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], uri, "{missing}");
    // The same read on the 2026-07-28 wire, on the same server: -32602.
    let modern = server
        .client()
        .rpc("resources/read", json!({"uri": uri}), no_caps());
    assert_eq!(error_code(&modern), code::INVALID_PARAMS, "{modern}");
}

// ---------------------------------------------------------------------------
// Session ids that name no session
// ---------------------------------------------------------------------------

#[test]
fn an_ended_or_unknown_session_is_404() {
    let server = serve(&["hash"]);
    let endpoint = endpoint(&server);

    let unknown = endpoint.session("no-such-session-0123456789abcdefghijkl");
    let (id, reply) = unknown.request("ping", json!({}));
    assert_session_not_found(&reply, "an unknown session");
    assert_eq!(reply.json()["id"], id, "the 404 echoes the request id");
    assert_session_not_found(&unknown.get(), "GET of an unknown session");
    assert_session_not_found(&unknown.delete(), "DELETE of an unknown session");

    let session = endpoint.open(legacy_caps());
    assert_ping(&session);
    let deleted = session.delete();
    assert_eq!(
        deleted.status,
        200,
        "DELETE ends the session: {}",
        deleted.text()
    );
    let (_, reply) = session.request("ping", json!({}));
    assert_session_not_found(&reply, "a request after DELETE");
    let (id, reply) = session.request("tools/list", json!({}));
    assert_session_not_found(&reply, "tools/list after DELETE");
    assert_eq!(reply.json()["id"], id, "the 404 echoes the request id");
    assert_session_not_found(
        &session.respond(&json!(0), json!({})),
        "an answer after DELETE",
    );
    assert_session_not_found(&session.get(), "GET after DELETE");
    assert_session_not_found(&session.delete(), "DELETE again");
}

#[test]
fn another_principals_session_is_404() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "tok-alice-0123456789 alice\ntok-bob-0123456789 bob\n",
    )
    .expect("write the tokens file");
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .arg("--tokens-file")
        .arg(&tokens)
        .start_http();
    let alice = Endpoint::new(server.url()).with_bearer("tok-alice-0123456789");
    let bob = Endpoint::new(server.url()).with_bearer("tok-bob-0123456789");

    // Without a token there is no session at all.
    let anonymous =
        Endpoint::new(server.url()).initialize(initialize_params(LEGACY_VERSION, legacy_caps()));
    assert_eq!(anonymous.status, 401, "{}", anonymous.text());

    let session = alice.open(legacy_caps());
    assert_ping(&session);
    let stolen = bob.session(session.id());
    let (_, reply) = stolen.request("ping", json!({}));
    assert_session_not_found(&reply, "bob using alice's session");
    assert_session_not_found(&stolen.get(), "bob's GET of alice's session");
    assert_session_not_found(
        &stolen.respond(&json!(0), json!({})),
        "bob answering in alice's session",
    );
    assert_session_not_found(&stolen.delete(), "bob's DELETE of alice's session");
    // Bob's attempts changed nothing for alice.
    assert_ping(&session);
    let bobs = bob.open(legacy_caps());
    assert_ping(&bobs);
    assert_ne!(bobs.id(), session.id());
}

#[test]
fn a_2025_request_without_a_session_is_400() {
    let server = serve(&["hash"]);
    let endpoint = endpoint(&server);
    for version in ["2025-11-25", "2025-06-18"] {
        let mut headers = endpoint.base_headers();
        headers.set("MCP-Protocol-Version", version);
        let reply = endpoint.post(&headers, &request(json!(7), "tools/list", json!({})));
        reply.assert_error(400, code::INVALID_REQUEST, Some(&json!(7)));
    }
    // A response outside any session answers nothing.
    let reply = endpoint.post(
        &endpoint.base_headers(),
        &json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
    );
    assert_eq!(reply.status, 400, "{}", reply.text());
}

// ---------------------------------------------------------------------------
// The session's standalone stream (GET)
// ---------------------------------------------------------------------------

#[test]
fn get_needs_a_session_and_opens_one_stream_at_a_time() {
    let server = serve(&["hash"]);
    let endpoint = endpoint(&server);

    let reply = endpoint.raw("GET", &[("Accept", "text/event-stream")]);
    assert_eq!(reply.status, 405, "GET without a session: {}", reply.text());

    let session = endpoint.open(legacy_caps());
    let reply = endpoint.raw(
        "GET",
        &[
            (SESSION_HEADER, session.id()),
            ("Accept", "application/json"),
        ],
    );
    assert_eq!(
        reply.status,
        406,
        "the session stream is SSE only: {}",
        reply.text()
    );

    let stream = session.listen();
    let second = session.get();
    assert_eq!(
        second.status,
        409,
        "a second concurrent GET: {}",
        second.text()
    );
    // The session works while its stream is open.
    assert_ping(&session);

    // Once the client closes its stream, it may open another.
    drop(stream);
    let mut stream = wait_until("a new GET once the first stream is closed", || {
        session
            .try_listen()
            .map_err(|status| format!("HTTP {status}"))
    });

    // Ending the session ends its stream.
    assert_eq!(session.delete().status, 200);
    match stream.next_event(PROMPTLY) {
        Next::Ended => {}
        other => panic!("the stream of an ended session should end, got {other:?}"),
    }
}

#[test]
fn the_session_stream_announces_tool_list_changes() {
    let tools = ToolsDir::with(&["hash"]);
    let server = Airlock::new(&tools)
        .args(["--reload-interval", "50ms"])
        .start_http();
    let session = endpoint(&server).open(legacy_caps());
    let mut stream = session.listen();

    tools.publish_as("deploy", "deploy.wasm");
    let note = stream.expect_event("notifications/tools/list_changed");
    assert_eq!(note["jsonrpc"], "2.0", "{note}");
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert!(note.get("id").is_none(), "a notification: {note}");

    let listed = session.result("tools/list", json!({}));
    assert!(
        listed["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "deploy")),
        "the new tool is served in the session: {listed}"
    );
}

#[test]
fn the_session_stream_carries_updates_of_subscribed_resources_only() {
    let server = serve(&["watcher"]);
    let session = endpoint(&server).open(legacy_caps());
    let touch = |uri: &str| {
        let result = session.result("tools/call", call_params("touch", json!({"uri": uri})));
        assert_eq!(text(&result), format!("touched {uri}"));
    };
    assert_eq!(
        session.result("resources/subscribe", json!({"uri": "watch://alpha"})),
        json!({})
    );
    let mut stream = session.listen();

    // Changes reach the stream in order: an update it must not get is
    // followed by one it must, and the latter must come first.
    touch("watch://beta");
    touch("watch://alpha");
    let note = stream.expect_event("resources/updated for watch://alpha");
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], "watch://alpha", "{note}");

    session.result("resources/unsubscribe", json!({"uri": "watch://alpha"}));
    session.result("resources/subscribe", json!({"uri": "watch://beta"}));
    touch("watch://alpha");
    touch("watch://beta");
    let note = stream.expect_event("resources/updated for watch://beta");
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(
        note["params"]["uri"], "watch://beta",
        "an unsubscribed URI is not announced: {note}"
    );

    // Another session's subscriptions are its own.
    let other = endpoint(&server).open(legacy_caps());
    let mut other_stream = other.listen();
    other.result("resources/subscribe", json!({"uri": "watch://alpha"}));
    touch("watch://beta");
    touch("watch://alpha");
    let note = other_stream.expect_event("resources/updated for watch://alpha");
    assert_eq!(note["params"]["uri"], "watch://alpha", "{note}");
    let note = stream.expect_event("resources/updated for watch://beta");
    assert_eq!(note["params"]["uri"], "watch://beta", "{note}");
}

// ---------------------------------------------------------------------------
// The bridge
// ---------------------------------------------------------------------------

#[test]
fn a_bridged_elicitation_is_asked_on_the_call_stream_and_answered_by_post() {
    let server = serve(&["everything"]);
    let session = endpoint(&server).open(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Who are you?");
    let request = &stream.seen()[0];
    let params = &request["params"];
    assert_eq!(
        params["mode"], "form",
        "2025-11-25 forms name their mode: {request}"
    );
    assert_eq!(
        params["requestedSchema"]["properties"]["response"]["type"], "string",
        "{request}"
    );
    accept_elicitation(&session, &asked, "Ada");
    assert_elicitation_result(&mut stream, &call, "Ada");
    assert_ping(&session);
}

#[test]
fn a_work_item_takes_two_bridged_questions_in_a_2025_06_18_session() {
    let server = serve(&["work_items"]);
    let session = endpoint(&server).open_version("2025-06-18", json!({"elicitation": {}}));
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
        "forms have no mode before 2025-11-25: {event}"
    );
    assert!(
        params["requestedSchema"]["properties"]["resolution"].is_object(),
        "{event}"
    );
    let reply = session.respond(
        &first,
        elicit("accept", Some(json!({"resolution": "Duplicate"}))),
    );
    assert_eq!(reply.status, 202, "{}", reply.text());

    let event = stream.expect_event("the duplicate-of question");
    let (second, params) = expect_server_request(&event, "elicitation/create");
    assert_ne!(first, second, "every server request has its own id");
    assert!(
        params["requestedSchema"]["properties"]["duplicateOf"].is_object(),
        "{event}"
    );
    let reply = session.respond(
        &second,
        elicit("accept", Some(json!({"duplicateOf": 1234}))),
    );
    assert_eq!(reply.status, 202, "{}", reply.text());

    let (_, done) = read_response(&mut stream, &call);
    let result = &done["result"];
    assert_legacy_result(result);
    assert_eq!(
        text(result),
        "Updated work item 4711: State = Resolved, Resolution = Duplicate, Duplicate Of = 1234",
        "{done}"
    );
    assert_eq!(
        result["structuredContent"]["fields"]["Duplicate Of"], 1234,
        "{done}"
    );
    assert_stream_ends(&mut stream, PROMPTLY);
}

#[test]
fn elicitation_sampling_and_roots_are_each_asked_and_answered() {
    let server = serve(&["everything"]);
    let session = endpoint(&server).open(legacy_caps());
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
        let method = event["method"].as_str().unwrap_or_default().to_string();
        let (id, params) = expect_server_request(&event, &method);
        let answer = match method.as_str() {
            "elicitation/create" => elicit("accept", Some(json!({"name": "Alice"}))),
            "sampling/createMessage" => {
                assert_eq!(params["maxTokens"], 50, "{event}");
                assert!(params["messages"].is_array(), "{event}");
                sampled("Hello there!")
            }
            "roots/list" => roots(&[("file:///test/root", "Test Root")]),
            other => panic!("unexpected server request {other}: {event}"),
        };
        asked_methods.push(method);
        let reply = session.respond(&id, answer);
        assert_eq!(reply.status, 202, "{}", reply.text());
    };
    asked_methods.sort();
    assert_eq!(
        asked_methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"],
        "each kind asked once"
    );
    assert_legacy_result(&done["result"]);
    assert_eq!(
        text(&done["result"]),
        "Name: Alice; Greeting: Hello there!; Roots: 1",
        "{done}"
    );
    assert_stream_ends(&mut stream, PROMPTLY);

    // Plain sampling, answered with the model's text.
    let (call, mut stream) = session.stream(
        "tools/call",
        call_params("test_sampling", json!({"prompt": "Say hi"})),
    );
    let event = stream.expect_event("sampling/createMessage");
    let (id, params) = expect_server_request(&event, "sampling/createMessage");
    assert_eq!(params["maxTokens"], 100, "{event}");
    assert_eq!(
        params["messages"][0]["content"]["text"], "Say hi",
        "{event}"
    );
    assert_eq!(session.respond(&id, sampled("Hi!")).status, 202);
    let (_, done) = read_response(&mut stream, &call);
    assert_eq!(text(&done["result"]), "LLM response: Hi!", "{done}");
}

/// Seven items for `build_report`: three rounds in slices of three.
fn report_items() -> Value {
    json!(["one", "two words", "three", "four", "five", "six", "seven"])
}

#[test]
fn state_only_rounds_run_again_without_asking_the_client() {
    let server = serve_with(&["report"], &[]);
    let session = endpoint(&server).open(legacy_caps());
    let (call, mut stream) = session.stream(
        "tools/call",
        json!({
            "name": "build_report",
            "arguments": {"items": report_items(), "sliceSize": 3},
            "_meta": {"progressToken": "report"},
        }),
    );
    let (before, done) = read_response(&mut stream, &call);
    // One progress report per round, and no request of the server.
    let progress: Vec<&Value> = before.iter().map(|e| &e["params"]["progress"]).collect();
    assert_eq!(
        progress,
        [&json!(3.0), &json!(6.0), &json!(7.0)],
        "{before:?}"
    );
    assert!(
        before
            .iter()
            .all(|e| e["method"] == "notifications/progress" && e.get("id").is_none()),
        "{before:?}"
    );
    let result = &done["result"];
    assert_legacy_result(result);
    assert!(
        text(result).starts_with("Report on 7 items:\n1. \"one\": 3 characters, 1 word"),
        "{result}"
    );
    assert_eq!(
        result["structuredContent"]["lines"]
            .as_array()
            .map(Vec::len),
        Some(7)
    );
}

/// The client capabilities the MCP Inspector (CLI 2.12) declares in its
/// 2025-11-25 `initialize`: the 2026-07-28 tasks extension, which the 2025
/// wire does not have.
fn inspector_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// `build_report` answered, in a session that declared [`inspector_caps`],
/// as a client without tasks gets it: the whole report, in the 2025 shape.
#[track_caller]
fn assert_whole_report(result: &Value) {
    assert_legacy_result(result);
    assert!(
        result.get("taskId").is_none() && result.get("status").is_none(),
        "a task in a 2025 session: {result}"
    );
    assert!(text(result).starts_with("Report on 7 items:"), "{result}");
    assert_eq!(
        result["structuredContent"]["lines"]
            .as_array()
            .map(Vec::len),
        Some(7),
        "{result}"
    );
}

#[test]
fn a_session_declaring_the_2026_tasks_extension_gets_state_only_rounds() {
    let server = serve_with(&["report"], &[]);
    let session = endpoint(&server).open(inspector_caps());
    let result = session.result(
        "tools/call",
        call_params(
            "build_report",
            json!({"items": report_items(), "sliceSize": 3}),
        ),
    );
    assert_whole_report(&result);
}

#[test]
fn a_stdio_session_declaring_the_2026_tasks_extension_gets_state_only_rounds() {
    let server = Airlock::new(&ToolsDir::with(&["report"])).start_stdio();
    stdio_initialize(&server, inspector_caps());
    let id = server.send_request(
        "tools/call",
        call_params(
            "build_report",
            json!({"items": report_items(), "sliceSize": 3}),
        ),
    );
    let response = server.response(&id);
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("build_report should succeed: {response}"));
    assert_whole_report(result);
}

#[test]
fn a_request_past_the_round_limit_fails_clearly() {
    let server = serve_with(&["report"], &["--max-bridged-rounds", "2"]);
    let session = endpoint(&server).open(legacy_caps());
    let arguments = |items: Value| json!({"name": "build_report", "arguments": {"items": items, "sliceSize": 3}});
    let refused = session.rpc("tools/call", arguments(report_items()));
    assert_eq!(error_code(&refused), INTERNAL_ERROR, "{refused}");
    assert!(
        error_message(&refused).contains("still needed input after 2 rounds"),
        "{refused}"
    );
    // Six items take two rounds: within the limit.
    let done = session.result(
        "tools/call",
        arguments(json!(["a", "b", "c", "d", "e", "f"])),
    );
    assert!(text(&done).starts_with("Report on 6 items:"), "{done}");
}

#[test]
fn a_capability_the_session_did_not_declare_fails_without_asking() {
    let server = serve(&["everything"]);
    let endpoint = endpoint(&server);

    let session = endpoint.open(json!({"elicitation": {}}));
    let (id, reply) = session.request(
        "tools/call",
        call_params("test_sampling", json!({"prompt": "p"})),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(
        reply.notifications().is_empty(),
        "no server request for an undeclared capability: {}",
        reply.text()
    );
    let response = reply.message();
    assert_eq!(response["id"], id, "{response}");
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert!(
        error_message(&response).contains("sampling"),
        "the error names the capability: {response}"
    );

    let bare = endpoint.open(json!({}));
    let (_, reply) = bare.request(
        "tools/call",
        call_params("test_elicitation", json!({"message": "m"})),
    );
    assert!(reply.notifications().is_empty(), "{}", reply.text());
    let response = reply.message();
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert!(
        error_message(&response).contains("elicitation"),
        "the error names the capability: {response}"
    );
}

#[test]
fn log_messages_follow_the_sessions_level() {
    let server = serve(&["everything"]);
    let endpoint = endpoint(&server);
    let tool = || call_params("test_tool_with_logging", json!({}));

    // No level set: no messages, a plain JSON reply.
    let quiet = endpoint.open(legacy_caps());
    let (_, reply) = quiet.request("tools/call", tool());
    assert!(
        reply.notifications().is_empty(),
        "no log messages without logging/setLevel: {}",
        reply.text()
    );
    assert_eq!(
        text(&reply.message()["result"]),
        "Tool with logging completed"
    );

    let chatty = endpoint.open(legacy_caps());
    chatty.result("logging/setLevel", json!({"level": "debug"}));
    let (id, reply) = chatty.request("tools/call", tool());
    assert!(reply.is_sse(), "messages stream: {}", reply.text());
    let events = reply.events();
    let (last, notes) = events.split_last().expect("events");
    assert!(is_response_to(last, &id), "the result comes last: {last}");
    assert_legacy_result(&last["result"]);
    assert_eq!(notes.len(), 3, "three info messages: {events:?}");
    for note in notes {
        assert_eq!(note["method"], "notifications/message", "{note}");
        assert_eq!(note["params"]["level"], "info", "{note}");
        assert!(note.get("id").is_none(), "{note}");
    }
    assert_eq!(notes[0]["params"]["data"], "Tool execution started");

    // Above the tool's level: nothing again.
    chatty.result("logging/setLevel", json!({"level": "error"}));
    let (_, reply) = chatty.request("tools/call", tool());
    assert!(reply.notifications().is_empty(), "{}", reply.text());
}

#[test]
fn a_progress_token_gets_progress_notifications() {
    let server = serve(&["everything"]);
    let session = endpoint(&server).open(legacy_caps());
    let (id, reply) = session.request(
        "tools/call",
        json!({
            "name": "test_tool_with_progress",
            "arguments": {},
            "_meta": {"progressToken": "legacy-progress-1"},
        }),
    );
    assert!(reply.is_sse(), "progress streams: {}", reply.text());
    let events = reply.events();
    let (last, notes) = events.split_last().expect("events");
    assert!(is_response_to(last, &id), "{last}");
    assert_eq!(text(&last["result"]), "Progress complete");
    assert_legacy_result(&last["result"]);
    let progress: Vec<&Value> = notes.iter().map(|n| &n["params"]["progress"]).collect();
    assert_eq!(
        progress,
        [&json!(0.0), &json!(50.0), &json!(100.0)],
        "{notes:?}"
    );
    for note in notes {
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(
            note["params"]["progressToken"], "legacy-progress-1",
            "{note}"
        );
        assert_eq!(note["params"]["total"], 100.0, "{note}");
    }
}

// ---------------------------------------------------------------------------
// What a client can get wrong
// ---------------------------------------------------------------------------

#[test]
fn an_answer_to_no_awaited_request_is_400_and_the_call_goes_on() {
    let server = serve(&["everything"]);
    let session = endpoint(&server).open(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Name?");

    for wrong in [json!(4242), json!("not-an-id"), json!(-1)] {
        let reply = session.respond(&wrong, elicit("accept", Some(json!({"response": "x"}))));
        assert_eq!(
            reply.status,
            400,
            "an answer with id {wrong}: {}",
            reply.text()
        );
        assert_eq!(
            reply.json()["error"]["code"],
            code::INVALID_REQUEST,
            "{}",
            reply.text()
        );
    }
    // The awaited request is still awaited, and the session still serves.
    assert_ping(&session);
    accept_elicitation(&session, &asked, "Grace");
    assert_elicitation_result(&mut stream, &call, "Grace");
}

#[test]
fn answering_the_same_request_twice_is_400_the_second_time() {
    let server = serve(&["everything"]);
    let session = endpoint(&server).open(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Name?");
    accept_elicitation(&session, &asked, "first");
    let twice = session.respond(
        &asked,
        elicit("accept", Some(json!({"response": "second"}))),
    );
    assert_eq!(twice.status, 400, "a second answer: {}", twice.text());
    // Only the first answer counts.
    assert_elicitation_result(&mut stream, &call, "first");
    assert_ping(&session);
}

#[test]
fn a_request_the_client_refuses_fails_the_call() {
    let server = serve(&["everything"]);
    let session = endpoint(&server).open(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Name?");
    let reply = session.respond_error(&asked, -32000, "user closed the dialog");
    assert_eq!(reply.status, 202, "{}", reply.text());
    let (_, done) = read_response(&mut stream, &call);
    assert_eq!(error_code(&done), INTERNAL_ERROR, "{done}");
    assert!(
        error_message(&done).contains("user closed the dialog"),
        "the error carries the client's message: {done}"
    );
    assert_stream_ends(&mut stream, PROMPTLY);
    assert_ping(&session);
}

#[test]
fn an_unanswered_request_times_out_and_the_session_goes_on() {
    let server = serve_with(&["everything"], &["--client-answer-timeout", "500ms"]);
    let session = endpoint(&server).open(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Anyone?");
    let (before, done) = read_response(&mut stream, &call);
    // The client is told to stop asking, then the call fails.
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["method"], "notifications/cancelled", "{before:?}");
    assert_eq!(before[0]["params"]["requestId"], asked, "{before:?}");
    assert_eq!(error_code(&done), INTERNAL_ERROR, "{done}");
    let message = error_message(&done);
    assert!(
        message.contains("did not answer") && message.contains("500 ms"),
        "the error says the client did not answer within 500 ms: {done}"
    );
    assert_stream_ends(&mut stream, PROMPTLY);

    // Too late: nothing awaits that answer any more.
    let late = session.respond(&asked, elicit("accept", Some(json!({"response": "me"}))));
    assert_eq!(late.status, 400, "a late answer: {}", late.text());
    assert_ping(&session);

    // And the next call works (answered in time).
    let (call, mut stream, asked) = start_elicitation(&session, "Now?");
    accept_elicitation(&session, &asked, "now");
    assert_elicitation_result(&mut stream, &call, "now");
}

#[test]
fn deleting_a_session_mid_call_ends_only_its_call() {
    let server = serve_with(
        &["everything"],
        &["--client-answer-timeout", LONG_ANSWER_TIMEOUT],
    );
    let endpoint = endpoint(&server);
    let bystander = endpoint.open(legacy_caps());
    let (other_call, mut other_stream, other_asked) = start_elicitation(&bystander, "Still there?");

    let doomed = endpoint.open(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&doomed, "Going?");
    let started = Instant::now();
    assert_eq!(doomed.delete().status, 200);
    loop {
        match stream.next_event(PROMPTLY) {
            Next::Ended => break,
            Next::Event(event) if is_response_to(&event, &call) => {
                assert!(
                    event.get("error").is_some(),
                    "a call of an ended session cannot succeed: {event}"
                );
            }
            other => panic!("the call should end with its session, got {other:?}"),
        }
    }
    assert!(
        started.elapsed() < PROMPTLY,
        "the stream ended after {:?}",
        started.elapsed()
    );
    let late = doomed.respond(&asked, elicit("accept", Some(json!({"response": "late"}))));
    assert_session_not_found(&late, "an answer after DELETE");

    // The other session's call is untouched.
    assert_ping(&bystander);
    accept_elicitation(&bystander, &other_asked, "yes");
    assert_elicitation_result(&mut other_stream, &other_call, "yes");
}

#[test]
fn a_cancelled_call_ends_without_a_result_and_the_session_goes_on() {
    let server = serve_with(
        &["everything"],
        &["--client-answer-timeout", LONG_ANSWER_TIMEOUT],
    );
    let session = endpoint(&server).open(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Cancel me");
    let started = Instant::now();
    let reply = session.notify(
        "notifications/cancelled",
        json!({"requestId": call, "reason": "changed my mind"}),
    );
    assert_eq!(reply.status, 202, "{}", reply.text());
    assert_stream_ends(&mut stream, PROMPTLY);
    assert!(started.elapsed() < PROMPTLY);

    // Nothing awaits the cancelled call's question any more.
    let late = session.respond(&asked, elicit("accept", Some(json!({"response": "x"}))));
    assert_eq!(late.status, 400, "{}", late.text());
    assert_ping(&session);
    let (call, mut stream, asked) = start_elicitation(&session, "Again");
    accept_elicitation(&session, &asked, "again");
    assert_elicitation_result(&mut stream, &call, "again");
}

#[test]
fn a_full_session_table_refuses_initialize_with_503() {
    let server = serve_with(
        &["hash"],
        &["--max-sessions", "2", "--session-idle-timeout", "3600s"],
    );
    let endpoint = endpoint(&server);
    let first = endpoint.open(legacy_caps());
    let second = endpoint.open(legacy_caps());
    // Both in use: their streams are open.
    let first_stream = first.listen();
    let _second_stream = second.listen();

    let refused = endpoint.initialize(initialize_params(LEGACY_VERSION, legacy_caps()));
    refused.assert_error(503, INTERNAL_ERROR, Some(&json!(0)));
    assert!(
        refused.header(SESSION_HEADER).is_none(),
        "{:?}",
        refused.headers
    );
    // The open sessions are unaffected, and 2026-07-28 requests need none.
    assert_ping(&first);
    assert_ping(&second);
    let modern = server
        .client()
        .call(&ToolCall::new("sha256", json!({"text": "abc"})));
    assert!(modern.get("result").is_some(), "{modern}");

    // Once the first is idle (its stream closed), a new session takes its
    // place: the idle one ends, the busy one stays.
    drop(first_stream);
    let third = wait_until("room for a third session", || {
        let reply = endpoint.initialize(initialize_params(LEGACY_VERSION, legacy_caps()));
        match reply.header(SESSION_HEADER) {
            Some(id) if reply.status == 200 => Ok(endpoint.session(id)),
            _ => Err(format!("initialize got {}", reply.status)),
        }
    });
    assert_ping(&third);
    assert_ping(&second);
    assert_session_not_found(
        &first.post(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"})),
        "the idle session made room",
    );
}

#[test]
fn idle_sessions_expire_and_busy_ones_do_not() {
    let server = serve_with(&["hash"], &["--session-idle-timeout", "1s"]);
    let endpoint = endpoint(&server);
    // Busy: its stream stays open.
    let busy = endpoint.open(legacy_caps());
    let _stream = busy.listen();
    let idle = endpoint.open(legacy_caps());

    // Every request touches a session, so the idle one is watched through
    // the server's log, not polled.
    wait_until("the idle session to expire", || {
        let log = server.stderr();
        log.lines()
            .any(|line| line.contains("session expired") && line.contains(idle.id()))
            .then_some(())
            .ok_or_else(|| "no expiry logged yet".to_string())
    });
    let (_, reply) = idle.request("ping", json!({}));
    assert_session_not_found(&reply, "an expired session");
    assert!(
        !server
            .stderr()
            .lines()
            .any(|line| line.contains("session expired") && line.contains(busy.id())),
        "a session with an open stream is not idle"
    );
    assert_ping(&busy);
}

// ---------------------------------------------------------------------------
// stdio
// ---------------------------------------------------------------------------

/// Sends `initialize` on stdin; returns the result.
#[track_caller]
fn stdio_initialize(server: &StdioServer, caps: Value) -> Value {
    let id = server.send_request("initialize", initialize_params(LEGACY_VERSION, caps));
    let response = server.response(&id);
    response
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("initialize should succeed: {response}"))
}

/// The next server request on stdout (a line with a method and an id).
#[track_caller]
fn stdio_server_request(server: &StdioServer, method: &str) -> (Value, Value) {
    let event = server.next_notification(STDIO_TIMEOUT).unwrap_or_else(|| {
        panic!(
            "no {method} request on stdout; stderr:\n{}",
            server.stderr()
        )
    });
    expect_server_request(&event, method)
}

#[test]
fn stdio_initialize_makes_a_session_beside_stateless_requests() {
    let server = Airlock::new(&ToolsDir::with(&["hash"])).start_stdio();
    let result = stdio_initialize(&server, legacy_caps());
    assert_eq!(result["protocolVersion"], LEGACY_VERSION, "{result}");
    assert!(result["serverInfo"]["name"].is_string(), "{result}");
    assert_legacy_result(&result);

    let id = server.send_request("ping", json!({}));
    assert_eq!(server.response(&id)["result"], json!({}));

    // A request without `_meta` is the session's: the 2025 shape.
    let id = server.send_request("tools/list", json!({}));
    let legacy = server.response(&id);
    assert_legacy_result(&legacy["result"]);
    assert_eq!(legacy["result"]["tools"][0]["name"], "sha256", "{legacy}");
    let id = server.send_request("tools/call", call_params("sha256", json!({"text": "abc"})));
    let called = server.response(&id);
    assert_legacy_result(&called["result"]);

    // One with the 2026-07-28 envelope is served statelessly, as before.
    let modern = server.rpc("tools/list", json!({}), no_caps());
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    let discover = server.rpc("server/discover", json!({}), no_caps());
    assert!(discover.get("result").is_some(), "{discover}");
    let id = server.send_request("server/discover", json!({}));
    let in_session = server.response(&id);
    assert_eq!(
        error_code(&in_session),
        code::METHOD_NOT_FOUND,
        "{in_session}"
    );

    // One process, one session.
    let id = server.send_request(
        "initialize",
        initialize_params(LEGACY_VERSION, legacy_caps()),
    );
    let again = server.response(&id);
    assert_eq!(error_code(&again), code::INVALID_REQUEST, "{again}");
}

#[test]
fn stdio_bridges_elicitation_on_stdin_and_ignores_unknown_answers() {
    let server = Airlock::new(&ToolsDir::with(&["work_items"])).start_stdio();
    stdio_initialize(&server, json!({"elicitation": {}}));
    let arguments = json!({"workItemId": 7, "fields": {"State": "Resolved"}});
    let call = server.send_request(
        "tools/call",
        call_params("update_work_item", arguments.clone()),
    );
    let (first, params) = stdio_server_request(&server, "elicitation/create");
    assert!(
        params["requestedSchema"]["properties"]["resolution"].is_object(),
        "{params}"
    );

    // An answer to nothing: no output at all, and the process goes on.
    let lines_before = server.lines().len();
    server.send(&json!({"jsonrpc": "2.0", "id": 9999, "result": {"action": "cancel"}}));
    let ping = server.send_request("ping", json!({}));
    assert_eq!(server.response(&ping)["result"], json!({}));
    let lines = server.lines();
    assert_eq!(
        lines.len(),
        lines_before + 1,
        "only the ping's response was written: {:?}",
        &lines[lines_before..]
    );

    // The 2026-07-28 wire in the same process gets MRTR, not a request.
    let modern = server.call(&ToolCall::new("update_work_item", arguments).caps(all_caps()));
    assert_eq!(modern["result"]["resultType"], "input_required", "{modern}");

    server.send(&json!({"jsonrpc": "2.0", "id": first,
        "result": elicit("accept", Some(json!({"resolution": "Fixed"})))}));
    let done = server.response(&call);
    assert_legacy_result(&done["result"]);
    assert_eq!(
        text(&done["result"]),
        "Updated work item 7: State = Resolved, Resolution = Fixed",
        "{done}"
    );
    // Answered twice: ignored as well.
    server.send(&json!({"jsonrpc": "2.0", "id": first, "result": elicit("decline", None)}));
    let ping = server.send_request("ping", json!({}));
    assert_eq!(server.response(&ping)["result"], json!({}));
}

#[test]
fn stdio_exits_promptly_when_stdin_closes_during_a_bridged_call() {
    let server = Airlock::new(&ToolsDir::with(&["everything"]))
        .args(["--client-answer-timeout", LONG_ANSWER_TIMEOUT])
        .start_stdio();
    stdio_initialize(&server, legacy_caps());
    let call = server.send_request(
        "tools/call",
        call_params("test_elicitation", json!({"message": "Bye?"})),
    );
    stdio_server_request(&server, "elicitation/create");

    let started = Instant::now();
    server.close_stdin();
    assert!(
        server.read_to_eof(PROMPTLY),
        "stdout should close; stderr:\n{}",
        server.stderr()
    );
    let status = server
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|| panic!("airlock still runs; stderr:\n{}", server.stderr()));
    assert!(
        started.elapsed() < PROMPTLY,
        "exit took {:?}",
        started.elapsed()
    );
    assert!(status.success(), "{status}; stderr:\n{}", server.stderr());
    if let Some(response) = server.try_response(&call, Duration::ZERO) {
        assert!(
            response.get("error").is_some(),
            "an unanswered call cannot succeed: {response}"
        );
    }
}
