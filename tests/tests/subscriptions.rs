//! `subscriptions/listen`: long-lived streams of change notifications, each
//! tagged with the listen request's id. Over HTTP the response is an SSE
//! stream read event by event as it arrives (`airlock_e2e::sse`); over
//! stdio the notifications are lines of their own.
//!
//! Negative cases never wait for silence: a stream that must not get a
//! change is shown the next change it does want, and its next event must be
//! that one (changes reach every stream in the order they happen).

use airlock_e2e::mcp::{
    META_SUBSCRIPTION_ID, assert_subscription_note, complete, error_code, listen_params, request,
    with_meta,
};
use airlock_e2e::sse::EVENT_TIMEOUT;
use airlock_e2e::watcher::touch;
use airlock_e2e::{
    Airlock, Http, HttpServer, McpClient, Next, SseStream, ToolCall, ToolsDir, code, listen,
};
use serde_json::json;

const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
const PROMPTS_CHANGED: &str = "notifications/prompts/list_changed";
const RESOURCE_UPDATED: &str = "notifications/resources/updated";

fn serve(components: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(components)).start_http()
}

/// Calls a tool of no arguments and checks it completed.
#[track_caller]
fn call_plain(client: &dyn McpClient, tool: &str) {
    let response = client.call(&ToolCall::new(tool, json!({})));
    complete(&response);
}

#[test]
fn listen_is_acknowledged_first_with_its_id_and_filter() {
    let server = serve(&["everything"]);
    // `listen` checks the status, the SSE body and the acknowledgement.
    let (id, _tools) = listen(&server.client(), json!({"toolsListChanged": true}));
    assert!(id.is_u64(), "{id}");

    // A string id is echoed as it is, and so is a filter of several kinds.
    let http = server.client();
    let filter = json!({
        "promptsListChanged": true,
        "resourcesListChanged": true,
        "resourceSubscriptions": ["test://watched-resource"],
    });
    let id = json!("listen-é-1");
    let params = listen_params(filter.clone());
    let mut stream = SseStream::open(
        http.url(),
        &http.headers_for("subscriptions/listen", &params),
        &request(id.clone(), "subscriptions/listen", params),
    );
    assert_eq!(stream.status(), 200);
    let ack = stream.expect_event("the acknowledgement");
    let echoed = assert_subscription_note(&ack, "notifications/subscriptions/acknowledged", &id);
    assert_eq!(echoed["notifications"], filter, "{ack}");
}

#[test]
fn the_acknowledgement_echoes_only_what_is_honoured() {
    let server = serve(&["everything"]);
    let (id, mut stream) = server.client().open_stream(
        "subscriptions/listen",
        listen_params(json!({"toolsListChanged": true, "promptsListChanged": false})),
    );
    let ack = stream.expect_event("the acknowledgement");
    let echoed = assert_subscription_note(&ack, "notifications/subscriptions/acknowledged", &id);
    assert_eq!(
        echoed["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );
}

#[test]
fn a_tool_change_reaches_every_tools_listener_tagged_with_its_own_id() {
    let server = serve(&["everything"]);
    let http = server.client();
    let (first_id, mut first) = listen(&http, json!({"toolsListChanged": true}));
    let (second_id, mut second) = listen(&http, json!({"toolsListChanged": true}));
    assert_ne!(first_id, second_id);

    // On another connection.
    call_plain(&Http::new(server.url()), "test_trigger_tool_change");

    let note = first.expect_event("tools/list_changed");
    assert_subscription_note(&note, TOOLS_CHANGED, &first_id);
    let note = second.expect_event("tools/list_changed");
    assert_subscription_note(&note, TOOLS_CHANGED, &second_id);
}

#[test]
fn each_stream_gets_only_the_lists_it_asked_for() {
    let server = serve(&["everything"]);
    let http = server.client();
    let (tools_id, mut tools) = listen(&http, json!({"toolsListChanged": true}));
    let (prompts_id, mut prompts) = listen(&http, json!({"promptsListChanged": true}));

    call_plain(&http, "test_trigger_tool_change");
    let note = tools.expect_event("tools/list_changed");
    assert_subscription_note(&note, TOOLS_CHANGED, &tools_id);

    // The prompts stream skipped the tool change: the first thing it gets
    // is the prompt change that came after it.
    call_plain(&http, "test_trigger_prompt_change");
    let note = prompts.expect_event("prompts/list_changed");
    assert_subscription_note(&note, PROMPTS_CHANGED, &prompts_id);

    // And the tools stream skipped the prompt change.
    call_plain(&http, "test_trigger_tool_change");
    let note = tools.expect_event("tools/list_changed");
    assert_subscription_note(&note, TOOLS_CHANGED, &tools_id);
}

#[test]
fn resource_updates_reach_only_the_subscribed_uri() {
    let server = serve(&["watcher"]);
    let http = server.client();
    let (id, mut stream) = listen(&http, json!({"resourceSubscriptions": ["watch://alpha"]}));

    // Neither another resource nor one whose URI merely starts the same.
    touch(&http, "watch://beta");
    touch(&http, "watch://alphabet");
    touch(&http, "watch://alpha");
    let note = stream.expect_event("resources/updated for watch://alpha");
    let params = assert_subscription_note(&note, RESOURCE_UPDATED, &id);
    assert_eq!(params["uri"], "watch://alpha", "{note}");

    // A stream for list changes gets no resource updates.
    let (list_id, mut lists) = listen(
        &http,
        json!({"resourcesListChanged": true, "resourceSubscriptions": ["watch://beta"]}),
    );
    touch(&http, "watch://alpha");
    touch(&http, "watch://beta");
    let note = lists.expect_event("resources/updated for watch://beta");
    let params = assert_subscription_note(&note, RESOURCE_UPDATED, &list_id);
    assert_eq!(params["uri"], "watch://beta", "{note}");
    let note = stream.expect_event("resources/updated for watch://alpha");
    assert_eq!(note["params"]["uri"], "watch://alpha", "{note}");
}

#[test]
fn a_component_cannot_announce_resources_it_does_not_serve() {
    let server = serve(&["watcher"]);
    let http = server.client();
    let (id, mut stream) = listen(
        &http,
        json!({"resourceSubscriptions": ["watch://unlisted", "watch://alpha"]}),
    );
    // The watcher lists watch://alpha and watch://beta only.
    touch(&http, "watch://unlisted");
    touch(&http, "watch://alpha");
    let note = stream.expect_event("resources/updated for watch://alpha");
    let params = assert_subscription_note(&note, RESOURCE_UPDATED, &id);
    assert_eq!(params["uri"], "watch://alpha", "{note}");
}

#[test]
fn a_malformed_filter_is_invalid_params() {
    let server = serve(&["everything"]);
    let http = server.client();
    let cases = [
        ("no notifications", json!({})),
        (
            "notifications not an object",
            json!({"notifications": true}),
        ),
        (
            "a flag that is not a boolean",
            json!({"notifications": {"toolsListChanged": "yes"}}),
        ),
        (
            "a subscription that is not a string",
            json!({"notifications": {"resourceSubscriptions": [1]}}),
        ),
        (
            "subscriptions that are not a list",
            json!({"notifications": {"resourceSubscriptions": "test://static-text"}}),
        ),
    ];
    for (what, params) in cases {
        let params = with_meta(params, json!({}));
        let (id, reply) = http.send("subscriptions/listen", params);
        let body = reply.message();
        assert_eq!(
            error_code(&body),
            code::INVALID_PARAMS,
            "{what} must be -32602: {body}"
        );
        assert_eq!(body["id"], id, "{body}");
    }
}

#[test]
fn listen_needs_an_event_stream() {
    let server = serve(&["everything"]);
    let (id, reply) = server.client().send_with(
        "subscriptions/listen",
        listen_params(json!({"toolsListChanged": true})),
        |headers| {
            headers.set("Accept", "application/json");
        },
    );
    reply.assert_error(400, code::INVALID_REQUEST, Some(&id));
}

#[test]
fn stdio_listen_is_acknowledged_then_forwards_changes() {
    let server = Airlock::new(&ToolsDir::with(&["everything"])).start_stdio();
    let id = server.send_request(
        "subscriptions/listen",
        listen_params(json!({"toolsListChanged": true})),
    );
    let ack = server
        .next_notification(EVENT_TIMEOUT)
        .expect("the acknowledgement");
    let echoed = assert_subscription_note(&ack, "notifications/subscriptions/acknowledged", &id);
    assert_eq!(echoed["notifications"], json!({"toolsListChanged": true}));

    let call = server.send_request(
        "tools/call",
        ToolCall::new("test_trigger_tool_change", json!({})).params(),
    );
    complete(&server.response(&call));
    let note = server
        .next_notification(EVENT_TIMEOUT)
        .expect("tools/list_changed");
    assert_subscription_note(&note, TOOLS_CHANGED, &id);
    assert!(
        !server.has_response(&id),
        "the listen request stays open while the client is connected"
    );
}

#[test]
fn stdio_listen_ends_with_its_result_when_input_closes() {
    let server = Airlock::new(&ToolsDir::with(&["everything"])).start_stdio();
    let id = server.send_request(
        "subscriptions/listen",
        listen_params(json!({"promptsListChanged": true})),
    );
    let ack = server
        .next_notification(EVENT_TIMEOUT)
        .expect("the acknowledgement");
    assert_subscription_note(&ack, "notifications/subscriptions/acknowledged", &id);

    server.close_stdin();
    let done = server.response(&id);
    let result = complete(&done);
    assert_eq!(
        result["_meta"][META_SUBSCRIPTION_ID], id,
        "the final result carries the subscription id: {done}"
    );
    assert!(
        server.wait_exit(EVENT_TIMEOUT).is_some(),
        "the server exits once its streams have ended"
    );
}

#[test]
fn http_listen_ends_with_its_result_when_the_server_shuts_down() {
    let mut server = serve(&["everything"]);
    let (id, mut stream) = listen(&server.client(), json!({"toolsListChanged": true}));

    server.terminate();
    let done = stream.expect_event("the final SubscriptionsListenResult");
    assert_eq!(
        done["id"], id,
        "the stream ends with the listen response: {done}"
    );
    let result = complete(&done);
    assert_eq!(
        result["_meta"][META_SUBSCRIPTION_ID], id,
        "the final result carries the subscription id: {done}"
    );
    assert_eq!(stream.next_event(EVENT_TIMEOUT), Next::Ended);
    assert!(
        server.wait_exit(EVENT_TIMEOUT).is_some(),
        "the server exits once its streams have ended; stderr:\n{}",
        server.stderr()
    );
}
