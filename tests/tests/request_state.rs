//! `requestState` is sealed: altered, foreign, expired or misapplied tokens
//! are refused with -32602, and any process holding the same key ring can
//! continue a call (the fleet property).

use std::path::Path;
use std::thread::sleep;
use std::time::Duration;

use airlock_e2e::mcp::{
    ToolCall, all_caps, assert_state_rejected, complete, elicit, error_code, error_message,
    input_required, is_error, request_state, retry_params, text, with_meta,
};
use airlock_e2e::{Airlock, Http, HttpServer, McpClient, ToolsDir, code, run_airlock, wait_until};
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
        .args(["--state-ttl", "1s"])
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
    // No arguments at all do not match the input schema: an error result
    // saying so, given before the state is even opened.
    let mut empty = confirm_call("restart api")
        .responses(yes())
        .state(state.as_str());
    empty.arguments = json!({});
    let refused = client.call(&empty);
    let result = complete(&refused);
    assert!(is_error(result), "{refused}");
    assert!(
        text(result).contains(r#"(root): "action" is a required property"#),
        "{refused}"
    );
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

// ---------------------------------------------------------------------------
// requestState hardening: random mutations, methods, bounds, rotation,
// single use.
// ---------------------------------------------------------------------------

/// What every refused requestState tells the client, whatever the reason.
const RESTART_GUIDANCE: &str = "retry the original request without requestState and inputResponses";

/// Asserts a -32602 refusal of requestState with the restart guidance.
#[track_caller]
fn assert_invalid_state(response: &Value) {
    assert_state_rejected(response);
    let message = error_message(response);
    assert!(
        message.contains(RESTART_GUIDANCE),
        "the refusal should tell the client to restart: {response}"
    );
}

/// Waits until the server's log holds `needle` `times` times; returns the log.
#[track_caller]
fn wait_for_log(server: &HttpServer, needle: &str, times: usize) -> String {
    wait_until(&format!("{times} × {needle:?} in the server log"), || {
        let log = server.stderr();
        if log.matches(needle).count() >= times {
            Ok(log)
        } else {
            Err(log)
        }
    })
}

/// 1 to 4 distinct positions in `0..len`, picked by `rng`.
fn positions(rng: &mut fastrand::Rng, len: usize) -> Vec<usize> {
    let count = 1 + rng.usize(..4);
    rng.choose_multiple(0..len, count)
}

const URL_SAFE: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// `token` with 1–4 characters replaced by other base64url characters
/// (even indices of `i`), or decoded, 1–4 bytes XORed with nonzero masks,
/// and re-encoded (odd).
fn mutate(rng: &mut fastrand::Rng, token: &str, i: usize) -> String {
    let mutated = if i.is_multiple_of(2) {
        let mut text = token.as_bytes().to_vec();
        for pos in positions(rng, text.len()) {
            let old = text[pos];
            while text[pos] == old {
                text[pos] = BASE64URL[rng.usize(..64)];
            }
        }
        String::from_utf8(text).unwrap()
    } else {
        let mut bytes = URL_SAFE.decode(token).expect("a base64url token");
        for pos in positions(rng, bytes.len()) {
            bytes[pos] ^= 1 + rng.usize(..255) as u8;
        }
        URL_SAFE.encode(bytes)
    };
    assert_ne!(mutated, token);
    mutated
}

#[test]
fn hundreds_of_random_mutations_are_refused_by_the_server() {
    const MUTATIONS: usize = 400;
    let server = serve_deploy();
    let client = server.client();
    let token = first_round(&client, "fuzz");
    let mut rng = fastrand::Rng::with_seed(0x5eed_f00d_a171_0c0c);
    for i in 0..MUTATIONS {
        let mutated = mutate(&mut rng, &token, i);
        let response = second_round(&client, "fuzz", &mutated);
        assert!(
            response.get("error").is_some(),
            "mutation {i} ({mutated}) was accepted: {response}"
        );
        assert_invalid_state(&response);
    }
    // The genuine token is unharmed.
    assert_accepted(&second_round(&client, "fuzz", &token), "fuzz");
    // Every refusal is logged.
    wait_for_log(&server, "requestState refused", MUTATIONS);
}

#[test]
fn tokens_are_bound_to_the_method() {
    // tools/call, prompts/get and resources/read all carry requestState;
    // a token from one is refused by the others.
    let server = Airlock::new(&ToolsDir::with(&["everything"])).start_http();
    let client = server.client();
    let tool = ToolCall::new("test_input_required_result_request_state", json!({}));
    let tool_state = request_state(input_required(&client.call(&tool)));
    let prompt = with_meta(
        json!({"name": "test_input_required_result_prompt", "arguments": {}}),
        all_caps(),
    );
    let first = client.exchange("prompts/get", prompt.clone()).response;
    let prompt_asked = input_required(&first).clone();
    let prompt_state = request_state(&prompt_asked);
    let prompt_answer =
        json!({"user_context": elicit("accept", Some(json!({"context": "bound"})))});

    let read = |state: &str| {
        client.rpc(
            "resources/read",
            json!({"uri": "test://static-text", "requestState": state}),
            all_caps(),
        )
    };
    let get_prompt = |state: &str| {
        let mut params = prompt.clone();
        params["requestState"] = json!(state);
        params["inputResponses"] = prompt_answer.clone();
        client.exchange("prompts/get", params).response
    };
    let call_tool = |state: &str| client.call(&tool.clone().responses(yes()).state(state));

    // A tools/call token on prompts/get and resources/read.
    assert_invalid_state(&get_prompt(&tool_state));
    assert_invalid_state(&read(&tool_state));
    // A prompts/get token on tools/call and resources/read.
    assert_invalid_state(&call_tool(&prompt_state));
    assert_invalid_state(&read(&prompt_state));
    // A resources/read with a state it never minted.
    let garbage = URL_SAFE.encode([1u8; 120]);
    assert_invalid_state(&read(&garbage));

    // Each token still works where it was minted.
    let done = call_tool(&tool_state);
    let r = complete(&done);
    assert!(!is_error(r), "{done}");
    assert_eq!(text(r), "state-ok: requestState validated", "{done}");
    let done = client
        .exchange(
            "prompts/get",
            retry_params(&prompt, &prompt_asked, prompt_answer.clone()),
        )
        .response;
    let messages = complete(&done)["messages"].to_string();
    assert!(messages.contains("Prompt with context: bound"), "{done}");
    // The log names the mismatch.
    wait_for_log(&server, "the method differs", 4);
}

#[test]
fn oversized_tokens_are_refused_before_decoding() {
    // The token limit is 72 KiB of text (48 KiB of guest state, base64,
    // plus the envelope); anything longer is refused unread.
    const MAX_TOKEN_LEN: usize = 72 * 1024;
    let server = serve_deploy();
    let client = server.client();
    let token = first_round(&client, "big");
    for bad in [
        "A".repeat(MAX_TOKEN_LEN),
        "A".repeat(MAX_TOKEN_LEN + 1),
        format!("{token}{}", "A".repeat(MAX_TOKEN_LEN)),
        "A".repeat(1024 * 1024),
    ] {
        let response = second_round(&client, "big", &bad);
        assert_invalid_state(&response);
    }
    // The log says why.
    wait_for_log(&server, &format!("over the limit of {MAX_TOKEN_LEN}"), 3);
    assert_accepted(&second_round(&client, "big", &token), "big");
}

#[test]
fn the_round_limit_is_exact_and_sealed_in_the_token() {
    let server = Airlock::new(&ToolsDir::with(&["probe"]))
        .args(["--max-rounds", "3"])
        .start_http();
    let client = server.client();
    // Exactly 3 rounds: allowed.
    let call = ToolCall::new("count_rounds", json!({"rounds": 3}));
    let mut response = client.call(&call);
    for _ in 0..2 {
        let r = input_required(&response).clone();
        response = client.call(&call.retry(&r, Value::Null));
    }
    complete(&response);
    // 4 rounds: the 4th request is refused.
    let call = ToolCall::new("count_rounds", json!({"rounds": 4}));
    let mut response = client.call(&call);
    let mut states = Vec::new();
    for _ in 0..3 {
        let r = input_required(&response).clone();
        states.push(request_state(&r));
        response = client.call(&call.retry(&r, Value::Null));
    }
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert!(
        error_message(&response).contains("3 rounds"),
        "the refusal should name the limit: {response}"
    );
    // The round number is inside the sealed token: presenting the last
    // token again never resets it, and an earlier one only resumes from
    // its own round.
    let last = states.last().unwrap();
    let again = client.call(&call.clone().state(last.as_str()));
    assert_eq!(error_code(&again), code::INVALID_PARAMS, "{again}");
    let earlier = client.call(&call.clone().state(states[1].as_str()));
    input_required(&earlier);
}

/// The key id a token was sealed with (bytes 1..9 of the envelope).
fn key_id_of(token: &str) -> Vec<u8> {
    URL_SAFE.decode(token).expect("a base64url token")[1..9].to_vec()
}

#[test]
fn key_rotation_end_to_end_across_restarts() {
    // One process, restarted at each step of a rotation.
    let tools = ToolsDir::with(&["deploy"]);
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (keygen(), keygen());
    let keys = dir.path().join("state-keys");
    let start = |ring: &[&str]| {
        std::fs::write(&keys, ring.join("\n") + "\n").unwrap();
        Airlock::new(&tools)
            .arg("--state-keys-file")
            .arg(&keys)
            .start_http()
    };

    // 1. Only the old key.
    let server = start(&[&old]);
    let sealed_by_old = first_round(&server.client(), "rotate");
    drop(server);

    // 2. Overlap: the new key first (it seals), the old one second (it
    // still opens).
    let server = start(&[&new, &old]);
    let client = server.client();
    assert_accepted(&second_round(&client, "rotate", &sealed_by_old), "rotate");
    let sealed_by_new = first_round(&client, "rotate");
    assert_ne!(
        key_id_of(&sealed_by_new),
        key_id_of(&sealed_by_old),
        "after the rotation new tokens must be sealed with the new key"
    );
    assert_accepted(&second_round(&client, "rotate", &sealed_by_new), "rotate");
    drop(server);

    // 3. The old key removed: its tokens are refused, the new key's open.
    let server = start(&[&new]);
    let client = server.client();
    assert_invalid_state(&second_round(&client, "rotate", &sealed_by_old));
    assert_accepted(&second_round(&client, "rotate", &sealed_by_new), "rotate");
    // The log says the key is gone.
    wait_for_log(&server, "which is not in the key ring", 1);
}

#[test]
fn without_single_use_a_retry_with_the_same_token_works_twice() {
    let server = serve_deploy();
    let client = server.client();
    let state = first_round(&client, "retry");
    assert_accepted(&second_round(&client, "retry", &state), "retry");
    // The answer got lost, say; the client sends the same round again.
    assert_accepted(&second_round(&client, "retry", &state), "retry");
}

#[test]
fn single_use_state_opens_each_token_once() {
    let server = Airlock::new(&ToolsDir::with(&["deploy", "probe", "everything"]))
        .arg("--single-use-state")
        .start_http();
    let client = server.client();
    assert!(
        server.stderr().contains("single-use requestState"),
        "the server should say single use is on:\n{}",
        server.stderr()
    );

    // Refused presentations do not spend the token...
    let state = first_round(&client, "once");
    assert_invalid_state(&second_round(&client, "other", &state));
    let mut rng = fastrand::Rng::with_seed(42);
    for i in 0..20 {
        assert_invalid_state(&second_round(&client, "once", &mutate(&mut rng, &state, i)));
    }
    // ...the genuine one does: once.
    assert_accepted(&second_round(&client, "once", &state), "once");
    let replay = second_round(&client, "once", &state);
    assert_invalid_state(&replay);
    // The log tells a replay apart from other refusals.
    let log = wait_for_log(&server, "already used (single-use mode)", 1);
    assert_eq!(
        log.matches("already used").count(),
        1,
        "only the replay is a replay:\n{log}"
    );

    // A multi-round call still runs: each round has a fresh token.
    let call = ToolCall::new("count_rounds", json!({"rounds": 3}));
    let mut response = client.call(&call);
    let mut spent = Vec::new();
    for _ in 0..2 {
        let r = input_required(&response).clone();
        spent.push(r.clone());
        response = client.call(&call.retry(&r, Value::Null));
    }
    complete(&response);
    for r in &spent {
        assert_invalid_state(&client.call(&call.retry(r, Value::Null)));
    }

    // Prompts too.
    let prompt = with_meta(
        json!({"name": "test_input_required_result_prompt", "arguments": {}}),
        all_caps(),
    );
    let first = client.exchange("prompts/get", prompt.clone()).response;
    let asked = input_required(&first).clone();
    let answer = json!({"user_context": elicit("accept", Some(json!({"context": "x"})))});
    let retry = retry_params(&prompt, &asked, answer);
    complete(&client.exchange("prompts/get", retry.clone()).response);
    assert_invalid_state(&client.exchange("prompts/get", retry).response);
}

#[test]
fn a_full_single_use_record_fails_closed_until_tokens_expire() {
    let server = serve_single_use_with_capacity_one();
    let client = server.client();
    let first = first_round(&client, "one");
    let second = first_round(&client, "two");
    assert_accepted(&second_round(&client, "one", &first), "one");
    // The record is full of live ids: the second token is refused as the
    // server's failure, not spent, and not the client's fault.
    let refused = second_round(&client, "two", &second);
    assert_eq!(error_code(&refused), -32603, "{refused}");
    assert!(
        error_message(&refused).contains("retry this request later"),
        "{refused}"
    );
    wait_for_log(&server, "single-use record is full (1 live token ids)", 1);
    // Still no forgetting: the first token stays spent.
    assert_invalid_state(&second_round(&client, "one", &first));
    // Once the first token has expired its slot is free again.
    sleep(Duration::from_millis(3200));
    let third = first_round(&client, "three");
    assert_accepted(&second_round(&client, "three", &third), "three");
}

fn serve_single_use_with_capacity_one() -> HttpServer {
    Airlock::new(&ToolsDir::with(&["deploy"]))
        .args([
            "--single-use-state",
            "--single-use-capacity",
            "1",
            "--state-ttl",
            "3s",
        ])
        .start_http()
}
