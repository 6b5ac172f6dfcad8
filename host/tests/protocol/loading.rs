//! Serving while the components still load (`airlock serve` listens before
//! its first load is done): discovery and a 2025 `initialize` answer at
//! once, and discovery is not to be cached; every request whose answer
//! depends on the components waits for the load and then gets the whole
//! answer, never one from the registry still empty; past the load wait
//! (`--load-wait`) it is refused with a retryable error: HTTP 503 with
//! `Retry-After`, the reason in `data`, on each transport and in each era.

use std::time::Duration;

use airlock_e2e::McpClient;
use airlock_e2e::legacy::{LEGACY_VERSION, initialize_params};
use airlock_e2e::mcp::{complete, no_caps, with_meta};
use serde_json::{Value, json};

use crate::support::{HANG_GUARD, Host, Setup};

/// A host of `hash` and `deploy` whose components load only when the test
/// says so, with requests waiting up to `load_wait` for them.
fn loading_host(load_wait: Duration) -> Host {
    Host::start_with(
        &["hash", "deploy"],
        Setup {
            load_wait: Some(load_wait),
            ..Setup::default()
        },
    )
}

/// The tool names of a `tools/list` result, in order.
fn names(result: &Value) -> Vec<&str> {
    result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tools array: {result}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default())
        .collect()
}

/// Asserts that `error` is the retryable refusal of a server still
/// loading its components.
#[track_caller]
fn assert_still_loading(error: &Value) {
    assert_eq!(error["code"], -32603, "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Server not ready: its components are still loading")),
        "{error}"
    );
    assert_eq!(
        error["data"],
        json!({"reason": "loading", "retryAfterMs": 5000}),
        "{error}"
    );
}

#[test]
fn while_loading_discovery_answers_at_once_and_lists_wait_for_the_whole_set() {
    let host = loading_host(HANG_GUARD);
    let http = host.http();
    let discovered = http.rpc("server/discover", json!({}), no_caps());
    assert_eq!(
        complete(&discovered)["ttlMs"],
        0,
        "what a loading server discovers is not to be kept: {discovered}"
    );
    let opened = http.initialize(initialize_params(LEGACY_VERSION, json!({})));
    assert_eq!(opened.status, 200, "{}", opened.text());

    let listed = std::thread::scope(|scope| {
        let listed = scope.spawn(|| {
            host.http()
                .send("tools/list", with_meta(json!({}), no_caps()))
                .1
        });
        host.finish_loading();
        listed.join().expect("the list's thread")
    });
    assert_eq!(listed.status, 200, "{}", listed.text());
    let body = listed.json();
    let result = complete(&body);
    assert_eq!(names(result), ["deploy", "confirm", "sha256"], "{body}");
    assert_eq!(
        result["ttlMs"], 60_000,
        "a complete list is cacheable: {body}"
    );
    assert_eq!(result["cacheScope"], "public", "{body}");
}

#[test]
fn past_the_load_wait_what_needs_the_components_is_refused_retryably() {
    let host = loading_host(Duration::ZERO);
    let http = host.http();
    let requests = [
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "sha256", "arguments": {"text": "a"}}),
        ),
        ("prompts/list", json!({})),
        ("resources/read", json!({"uri": "file:///x"})),
        ("tasks/get", json!({"taskId": "t"})),
    ];
    for (method, params) in &requests {
        let (_, reply) = http.send(method, with_meta(params.clone(), no_caps()));
        assert_eq!(reply.status, 503, "{method}: {}", reply.text());
        assert_eq!(reply.header("retry-after"), Some("5"), "{method}");
        assert_still_loading(&reply.json()["error"]);
    }
    // Discovery does not need them.
    let discovered = http.rpc("server/discover", json!({}), no_caps());
    assert_eq!(complete(&discovered)["ttlMs"], 0, "{discovered}");

    // A 2025 session: initialize at once, its list refused in the body
    // (a session's errors are HTTP 200), with the same reason.
    let session = http.open_session(json!({}));
    let refused = session.rpc("tools/list", json!({}));
    assert_still_loading(&refused["error"]);

    host.finish_loading();
    let listed = http.rpc("tools/list", json!({}), no_caps());
    assert_eq!(names(complete(&listed)), ["deploy", "confirm", "sha256"]);
    assert_eq!(
        session.result("tools/list", json!({}))["tools"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

#[test]
fn over_stdio_a_list_waits_for_the_load_and_past_the_wait_is_refused() {
    let host = loading_host(Duration::ZERO);
    let stdio = host.stdio();
    let id = stdio.send_request("tools/list", with_meta(json!({}), no_caps()));
    assert_still_loading(&stdio.response(&id)["error"]);
    host.finish_loading();
    let id = stdio.send_request("tools/list", with_meta(json!({}), no_caps()));
    assert_eq!(
        names(complete(&stdio.response(&id))),
        ["deploy", "confirm", "sha256"]
    );
}
