//! `--single-use-state` across a fleet: hosts that share a key ring and a
//! Redis (`--single-use-store`) refuse each other's replays; hosts that keep
//! the record in memory do not; and while Redis is away, retried rounds are
//! refused (fail closed) with the reason in the server log.

use std::path::{Path, PathBuf};

use airlock_e2e::mcp::{
    ToolCall, assert_state_rejected, complete, elicit, error_code, error_message, input_required,
    is_error, request_state, text,
};
use airlock_e2e::{Airlock, HttpServer, McpClient, RedisServer, ToolsDir, run_airlock, wait_until};
use serde_json::{Value, json};

/// What every refused requestState tells the client, whatever the reason.
const RESTART_GUIDANCE: &str = "retry the original request without requestState and inputResponses";

/// A key file made by `airlock keygen`, for every host of a test.
fn shared_keys(dir: &Path) -> PathBuf {
    let (status, key, stderr) = run_airlock(&["keygen"]);
    assert!(status.success(), "airlock keygen failed: {stderr}");
    let file = dir.join("state-keys");
    std::fs::write(&file, key).unwrap();
    file
}

/// A host serving `deploy` with the shared keys in single-use mode, its
/// record in `store` (a Redis URL) or, without one, in its own memory.
fn host(tools: &ToolsDir, keys: &Path, store: Option<&str>) -> HttpServer {
    let mut airlock = Airlock::new(tools)
        .arg("--state-keys-file")
        .arg(keys)
        .arg("--single-use-state");
    if let Some(url) = store {
        airlock = airlock.args(["--single-use-store", url]);
    }
    airlock.start_http()
}

fn confirm(action: &str) -> ToolCall {
    ToolCall::new("confirm", json!({ "action": action }))
}

/// Round 1 of `confirm {action}`; returns its requestState.
fn first_round(client: &dyn McpClient, action: &str) -> String {
    request_state(input_required(&client.call(&confirm(action))))
}

/// Round 2 of `confirm {action}` with `state`.
fn second_round(client: &dyn McpClient, action: &str, state: &str) -> Value {
    let answers = json!({"confirm": elicit("accept", Some(json!({"ok": true})))});
    client.call(&confirm(action).responses(answers).state(state))
}

#[track_caller]
fn assert_accepted(response: &Value, action: &str) {
    let result = complete(response);
    assert!(!is_error(result), "{response}");
    assert_eq!(
        text(result).trim(),
        format!("confirmed {action}"),
        "{response}"
    );
}

/// A -32602 refusal with the one message of every invalid requestState.
#[track_caller]
fn assert_invalid_state(response: &Value) {
    assert_state_rejected(response);
    assert!(
        error_message(response).contains(RESTART_GUIDANCE),
        "{response}"
    );
}

#[test]
fn hosts_sharing_a_redis_refuse_each_others_replays() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let keys = shared_keys(dir.path());
    let tools = ToolsDir::with(&["deploy"]);
    let a = host(&tools, &keys, Some(&redis.url()));
    let b = host(&tools, &keys, Some(&redis.url()));
    for server in [&a, &b] {
        server.wait_for_log("each token opens once across every process sharing this Redis");
        server.wait_for_log(&redis.url());
    }

    // Opened on A, replayed on B: refused like any invalid state.
    let state = first_round(&a.client(), "ship");
    assert_accepted(&second_round(&a.client(), "ship", &state), "ship");
    assert_invalid_state(&second_round(&b.client(), "ship", &state));
    b.wait_for_log("already used (single-use mode)");
    // And the other way round, and on the host that opened it.
    let state = first_round(&a.client(), "roll back");
    assert_accepted(&second_round(&b.client(), "roll back", &state), "roll back");
    assert_invalid_state(&second_round(&a.client(), "roll back", &state));
    assert_invalid_state(&second_round(&b.client(), "roll back", &state));
    // The keys share nothing else: a fresh token still works anywhere.
    let state = first_round(&b.client(), "again");
    assert_accepted(&second_round(&a.client(), "again", &state), "again");
}

/// What `--single-use-store` is for: with the record in each host's memory,
/// a replay sent to another host is accepted there.
#[test]
fn hosts_keeping_the_record_in_memory_accept_a_replay_on_another_host() {
    let dir = tempfile::tempdir().unwrap();
    let keys = shared_keys(dir.path());
    let tools = ToolsDir::with(&["deploy"]);
    let a = host(&tools, &keys, None);
    let b = host(&tools, &keys, None);
    a.wait_for_log("a replay to another process is not refused");

    let state = first_round(&a.client(), "ship");
    assert_accepted(&second_round(&a.client(), "ship", &state), "ship");
    assert_invalid_state(&second_round(&a.client(), "ship", &state));
    assert_accepted(&second_round(&b.client(), "ship", &state), "ship");
}

#[test]
fn without_redis_retried_rounds_are_refused_and_the_log_says_why() {
    let mut redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let keys = shared_keys(dir.path());
    let tools = ToolsDir::with(&["deploy"]);
    let a = host(&tools, &keys, Some(&redis.url()));
    let b = host(&tools, &keys, Some(&redis.url()));

    let state = first_round(&a.client(), "ship");
    redis.kill();
    // First rounds need no record: they still run.
    let later = first_round(&a.client(), "later");
    // A retried round cannot be checked: refused, as the server's failure.
    for server in [&a, &b] {
        let refused = second_round(&server.client(), "ship", &state);
        assert_eq!(error_code(&refused), -32603, "{refused}");
        assert!(
            error_message(&refused).contains("retry this request later"),
            "{refused}"
        );
        server.wait_for_log("single-use record is unavailable");
        let log = server.stderr();
        let line = log
            .lines()
            .find(|line| line.contains("single-use record is unavailable"))
            .unwrap();
        assert!(
            line.contains("requestState not checked") && line.contains(&redis.url()),
            "the log should say which Redis failed: {line}"
        );
    }

    // Redis is back: the refused token was never spent, so it opens, once.
    redis.restart();
    let answered = wait_until("the retried round to be answered", || {
        let response = second_round(&b.client(), "ship", &state);
        if error_code_or_none(&response) == Some(-32603) {
            Err(response.to_string())
        } else {
            Ok(response)
        }
    });
    assert_accepted(&answered, "ship");
    assert_invalid_state(&second_round(&a.client(), "ship", &state));
    assert_accepted(&second_round(&a.client(), "later", &later), "later");
}

fn error_code_or_none(response: &Value) -> Option<i64> {
    response.get("error").map(|_| error_code(response))
}

#[test]
fn an_unreachable_store_stops_the_start_with_a_clear_error() {
    let redis = RedisServer::start();
    let url = redis.url().replace("redis://", "redis://airlock:hunter2@");
    let address = redis.url();
    drop(redis);
    let (status, stderr) = Airlock::new(&ToolsDir::with(&["deploy"]))
        .args(["--single-use-store", &url])
        .run_expecting_exit();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot connect to the single-use store")
            && stderr.contains(&address.replace("redis://", "redis://airlock@")),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
}
