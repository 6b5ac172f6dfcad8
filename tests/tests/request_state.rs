//! `requestState` is sealed: altered, foreign, expired or misapplied tokens
//! are refused with -32602, and any process holding the same key ring can
//! continue a call (the fleet property).

use std::path::Path;
use std::thread::sleep;
use std::time::Duration;

use airlock_e2e::mcp::{
    ToolCall, assert_state_rejected, complete, elicit, error_code, input_required, is_error,
    request_state, text,
};
use airlock_e2e::{Airlock, Http, HttpServer, McpClient, ToolsDir, code, run_airlock};
use base64::Engine;
use serde_json::{Value, json};

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn confirm_call(action: &str) -> ToolCall {
    ToolCall::new("confirm", json!({ "action": action }))
}

fn yes() -> Value {
    json!({"confirm": elicit("accept", Some(json!({"ok": true})))})
}

/// Round 1 of `confirm {action}` on `client`; returns its requestState.
fn first_round(client: &dyn McpClient, action: &str) -> String {
    let response = client.call(&confirm_call(action));
    request_state(input_required(&response))
}

/// Round 2 of `confirm {action}` with `state`.
fn second_round(client: &dyn McpClient, action: &str, state: &str) -> Value {
    client.call(&confirm_call(action).responses(yes()).state(state))
}

#[track_caller]
fn assert_accepted(response: &Value, action: &str) {
    let r = complete(response);
    assert!(!is_error(r), "{response}");
    assert_eq!(text(r).trim(), format!("confirmed {action}"), "{response}");
}

fn serve_deploy() -> HttpServer {
    Airlock::new(&ToolsDir::with(&["deploy"])).start_http()
}

#[test]
fn every_altered_character_is_rejected() {
    let server = serve_deploy();
    let client = server.client();
    let token = first_round(&client, "tamper");
    assert!(
        token.bytes().all(|b| BASE64URL.contains(&b)),
        "requestState should be base64url text: {token}"
    );
    for (i, original) in token.bytes().enumerate() {
        let pos = BASE64URL.iter().position(|&b| b == original).unwrap_or(0);
        let replacement = BASE64URL[(pos + 1) % 64];
        let mut altered = token.clone().into_bytes();
        altered[i] = replacement;
        let altered = String::from_utf8(altered).unwrap();
        let response = second_round(&client, "tamper", &altered);
        assert!(
            response.get("error").is_some(),
            "requestState altered at position {i} of {} ({} -> {}) was accepted: {response}",
            token.len(),
            original as char,
            replacement as char
        );
        assert_state_rejected(&response);
    }
    // The genuine token still works.
    assert_accepted(&second_round(&client, "tamper", &token), "tamper");
}

#[test]
fn malformed_tokens_are_rejected() {
    let server = serve_deploy();
    let client = server.client();
    let token = first_round(&client, "shape");
    let cases = [
        token[..token.len() - 1].to_string(),
        token[..token.len() / 2].to_string(),
        format!("{token}A"),
        format!("{token}AAAA"),
        format!("A{token}"),
        token.replace('-', "+").replace('_', "/"),
        String::new(),
        "!!!!".to_string(),
        "AAAA".to_string(),
        "eyJ0b29sIjoiY29uZmlybSJ9".to_string(),
    ];
    for bad in cases {
        if bad == token {
            continue;
        }
        let response = second_round(&client, "shape", &bad);
        assert!(
            response.get("error").is_some(),
            "{bad:?} accepted: {response}"
        );
        assert_state_rejected(&response);
    }
    // Not a string at all.
    for bad in [json!(5), json!({"state": token}), json!([token])] {
        let call = confirm_call("shape").responses(yes()).state(bad.clone());
        let response = client.call(&call);
        assert_eq!(
            error_code(&response),
            code::INVALID_PARAMS,
            "{bad}: {response}"
        );
    }
    assert_accepted(&second_round(&client, "shape", &token), "shape");
}

#[test]
fn tokens_are_bound_to_the_principal() {
    let tools = ToolsDir::with(&["deploy"]);
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "alice-secret-token alice\nbob-secret-token bob\n").unwrap();
    let server = Airlock::new(&tools)
        .arg("--tokens-file")
        .arg(&tokens)
        .start_http();
    let alice = server.client_with_token("alice-secret-token");
    let bob = server.client_with_token("bob-secret-token");
    let state = first_round(&alice, "as alice");
    assert_state_rejected(&second_round(&bob, "as alice", &state));
    assert_accepted(&second_round(&alice, "as alice", &state), "as alice");
    // And the other way round.
    let state = first_round(&bob, "as bob");
    assert_state_rejected(&second_round(&alice, "as bob", &state));
    assert_accepted(&second_round(&bob, "as bob", &state), "as bob");
}

#[test]
fn tokens_expire() {
    let tools = ToolsDir::with(&["deploy"]);
    let short = Airlock::new(&tools)
        .args(["--state-ttl-secs", "1"])
        .start_http();
    let long = Airlock::new(&tools).start_http();
    let short_state = first_round(&short.client(), "later");
    let long_state = first_round(&long.client(), "later");
    sleep(Duration::from_millis(2500));
    assert_state_rejected(&second_round(&short.client(), "later", &short_state));
    // Control: the same wait does not hurt a token within its lifetime.
    assert_accepted(&second_round(&long.client(), "later", &long_state), "later");
}

#[test]
fn tokens_are_bound_to_the_tool() {
    let server = serve_deploy();
    let client = server.client();
    // `confirm` and `deploy` both ask under the key `confirm` for {ok}.
    let state = first_round(&client, "deploy billing");
    let deploy = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    )
    .responses(yes())
    .state(state.as_str());
    assert_state_rejected(&client.call(&deploy));
    // And a deploy token does not open `confirm`.
    let first = client.call(&ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    ));
    let deploy_state = request_state(input_required(&first));
    assert_state_rejected(&second_round(&client, "deploy billing", &deploy_state));
}

#[test]
fn tokens_are_bound_to_the_arguments() {
    let server = serve_deploy();
    let client = server.client();
    let state = first_round(&client, "restart api");
    assert_state_rejected(&second_round(&client, "restart db", &state));
    assert_state_rejected(&second_round(&client, "restart api ", &state));
    let extra = confirm_call("restart api");
    let mut extra = extra.responses(yes()).state(state.as_str());
    extra.arguments = json!({"action": "restart api", "force": true});
    assert_state_rejected(&client.call(&extra));
    let mut empty = confirm_call("restart api")
        .responses(yes())
        .state(state.as_str());
    empty.arguments = json!({});
    assert_state_rejected(&client.call(&empty));
    assert_accepted(&second_round(&client, "restart api", &state), "restart api");
}

#[test]
fn argument_key_order_does_not_matter() {
    // The same arguments with their keys in another order are the same
    // request: serialize by hand to control the order on the wire.
    let server = Airlock::new(&ToolsDir::with(&["deploy"])).start_http();
    let http = server.client();
    let first = http.call(&ToolCall::new(
        "deploy",
        json!({"environment": "production", "service": "billing"}),
    ));
    let state = request_state(input_required(&first));
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"reordered","method":"tools/call","params":{{"name":"deploy","arguments":{{"service":"billing","environment":"production"}},"inputResponses":{{"confirm":{{"action":"accept","content":{{"ok":true}}}}}},"requestState":"{state}","_meta":{meta}}}}}"#
    );
    let mut h = http.headers_for("tools/call", &json!({"name": "deploy"}));
    h.set("Mcp-Name", "deploy");
    let reply = http.post(&h, body.as_bytes());
    let response = reply.json();
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
}

#[test]
fn input_responses_must_be_objects() {
    let server = serve_deploy();
    let client = server.client();
    let state = first_round(&client, "shape responses");
    for bad in [
        json!(12345),
        json!("accept"),
        json!([{"action": "accept"}]),
        json!(true),
        json!({"confirm": 12345}),
        json!({"confirm": "accept"}),
        json!({"confirm": [1, 2]}),
    ] {
        let call = confirm_call("shape responses")
            .responses(bad.clone())
            .state(state.as_str());
        let response = client.call(&call);
        assert_eq!(
            error_code(&response),
            code::INVALID_PARAMS,
            "inputResponses {bad}: {response}"
        );
    }
    // Also on a first round.
    let response = client.call(&confirm_call("first").responses(json!(12345)));
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert_accepted(
        &second_round(&client, "shape responses", &state),
        "shape responses",
    );
}

#[test]
fn rounds_are_limited() {
    let server = Airlock::new(&ToolsDir::with(&["probe"]))
        .args(["--max-rounds", "3"])
        .start_http();
    let client = server.client();
    // Within the limit: completes.
    let call = ToolCall::new("count_rounds", json!({"rounds": 2}));
    let first = client.call(&call);
    let r = input_required(&first);
    let done = client.call(&call.retry(r, Value::Null));
    complete(&done);
    // Beyond it: refused before round 10.
    let call = ToolCall::new("count_rounds", json!({"rounds": 10}));
    let mut response = client.call(&call);
    for _ in 0..4 {
        let Some(r) = response.get("result") else {
            break;
        };
        assert_eq!(r["resultType"], "input_required", "{response}");
        response = client.call(&call.retry(r, Value::Null));
    }
    assert_eq!(
        error_code(&response),
        code::INVALID_PARAMS,
        "a call past --max-rounds 3 must be refused: {response}"
    );
}

fn keygen() -> String {
    let (status, stdout, stderr) = run_airlock(&["keygen"]);
    assert!(status.success(), "airlock keygen failed: {stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "keygen prints one line: {stdout:?}");
    lines[0].trim().to_string()
}

#[test]
fn keygen_prints_a_fresh_32_byte_key() {
    let a = keygen();
    let b = keygen();
    assert_ne!(a, b, "two keys must differ");
    for key in [&a, &b] {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(key.trim_end_matches('='))
            .unwrap_or_else(|e| panic!("{key:?} is not base64url: {e}"));
        assert_eq!(bytes.len(), 32, "{key:?}");
    }
}

fn keys_file(dir: &Path, name: &str, keys: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, keys.join("\n") + "\n").unwrap();
    path
}

/// Round 1 on `a`, round 2 on `b`.
fn across(a: &Http, b: &Http, action: &str) -> Value {
    let state = first_round(a, action);
    second_round(b, action, &state)
}

#[test]
fn another_process_without_shared_keys_rejects_the_token() {
    let tools = ToolsDir::with(&["deploy"]);
    let a = Airlock::new(&tools).start_http();
    let b = Airlock::new(&tools).start_http();
    assert_state_rejected(&across(&a.client(), &b.client(), "fleet"));
    assert_state_rejected(&across(&b.client(), &a.client(), "fleet"));
    assert_accepted(&across(&a.client(), &a.client(), "fleet"), "fleet");
    let warned = a.stderr().to_ascii_lowercase();
    assert!(
        warned.contains("warn") && warned.contains("key"),
        "without state keys the server should warn at startup:\n{}",
        a.stderr()
    );
}

#[test]
fn processes_sharing_a_keys_file_continue_each_others_calls() {
    let tools = ToolsDir::with(&["deploy"]);
    let dir = tempfile::tempdir().unwrap();
    let key = keygen();
    let file = keys_file(dir.path(), "keys", &[&key]);
    let a = Airlock::new(&tools)
        .arg("--state-keys-file")
        .arg(&file)
        .start_http();
    let b = Airlock::new(&tools)
        .arg("--state-keys-file")
        .arg(&file)
        .start_http();
    assert_accepted(&across(&a.client(), &b.client(), "fleet A"), "fleet A");
    assert_accepted(&across(&b.client(), &a.client(), "fleet B"), "fleet B");
    // A third process with other keys cannot.
    let other = keys_file(dir.path(), "other", &[&keygen()]);
    let c = Airlock::new(&tools)
        .arg("--state-keys-file")
        .arg(&other)
        .start_http();
    assert_state_rejected(&across(&a.client(), &c.client(), "fleet C"));
}

#[test]
fn processes_sharing_env_keys_continue_each_others_calls() {
    let tools = ToolsDir::with(&["deploy"]);
    let keys = format!("{},{}", keygen(), keygen());
    let a = Airlock::new(&tools)
        .env("AIRLOCK_STATE_KEYS", &keys)
        .start_http();
    let b = Airlock::new(&tools)
        .env("AIRLOCK_STATE_KEYS", &keys)
        .start_http();
    assert_accepted(&across(&a.client(), &b.client(), "env fleet"), "env fleet");
}

#[test]
fn a_rotated_key_ring_still_opens_old_tokens() {
    let tools = ToolsDir::with(&["deploy"]);
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (keygen(), keygen());
    let old_ring = keys_file(dir.path(), "old", &[&old]);
    let new_ring = keys_file(dir.path(), "new", &[&new, &old]);
    let a = Airlock::new(&tools)
        .arg("--state-keys-file")
        .arg(&old_ring)
        .start_http();
    let b = Airlock::new(&tools)
        .arg("--state-keys-file")
        .arg(&new_ring)
        .start_http();
    // Sealed with the old key, opened by the new ring.
    assert_accepted(&across(&a.client(), &b.client(), "rotate"), "rotate");
    // The new ring seals with the new key, which the old ring lacks.
    assert_state_rejected(&across(&b.client(), &a.client(), "rotate"));
}
