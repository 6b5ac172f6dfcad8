//! Multi-round requests (MRTR): the work-items flow, the sealed
//! `requestState` and what it is bound to, the round limit, and the
//! capability gate (-32021) in front of every input request.

use airlock::protocol::ProtocolSettings;
use airlock_e2e::flows::{drive, work_item_declined, work_item_duplicate};
use airlock_e2e::mcp::{
    ToolCall, all_caps, assert_state_rejected, complete, elicit, error_code, error_message,
    input_request, input_required, is_error, request_state, retry_params, roots, sampled, text,
    with_meta,
};
use airlock_e2e::{McpClient, code};
use serde_json::{Value, json};

use crate::support::{BOB, Host, Setup};

/// The characters of base64url, in order.
const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn confirm(action: &str) -> ToolCall {
    ToolCall::new("confirm", json!({ "action": action }))
}

fn yes() -> Value {
    json!({"confirm": elicit("accept", Some(json!({"ok": true})))})
}

/// Round 1 of `confirm {action}`; its requestState.
#[track_caller]
fn first_round(client: &dyn McpClient, action: &str) -> String {
    request_state(input_required(&client.call(&confirm(action))))
}

/// Round 2 of `confirm {action}` with `state`.
fn second_round(client: &dyn McpClient, action: &str, state: &str) -> Value {
    client.call(&confirm(action).responses(yes()).state(state))
}

#[track_caller]
fn assert_confirmed(response: &Value, action: &str) {
    let result = complete(response);
    assert!(!is_error(result), "{response}");
    assert_eq!(
        text(result).trim(),
        format!("confirmed {action}"),
        "{response}"
    );
}

#[test]
fn the_work_item_flow_asks_two_questions_over_http() {
    let host = Host::start(&["work-items"]);
    let http = host.http();
    work_item_duplicate(&http);
    work_item_declined(&http);
}

#[test]
fn the_work_item_flow_asks_two_questions_over_stdio() {
    let host = Host::start(&["work-items"]);
    let stdio = host.stdio();
    work_item_duplicate(&stdio);
    work_item_declined(&stdio);
}

#[test]
fn every_altered_character_of_a_request_state_is_refused() {
    let host = Host::start(&["deploy"]);
    let http = host.http();
    let token = first_round(&http, "tamper");
    assert!(token.bytes().all(|b| BASE64URL.contains(&b)), "{token}");
    for (i, original) in token.bytes().enumerate() {
        let at = BASE64URL.iter().position(|&b| b == original).unwrap_or(0);
        let mut altered = token.clone().into_bytes();
        altered[i] = BASE64URL[(at + 1) % 64];
        let altered = String::from_utf8(altered).expect("ASCII");
        assert_state_rejected(&second_round(&http, "tamper", &altered));
    }
    assert_confirmed(&second_round(&http, "tamper", &token), "tamper");
}

#[test]
fn a_malformed_request_state_is_refused() {
    let host = Host::start(&["deploy"]);
    let http = host.http();
    let token = first_round(&http, "shape");
    for bad in [
        token[..token.len() - 1].to_owned(),
        token[..token.len() / 2].to_owned(),
        format!("{token}AAAA"),
        format!("A{token}"),
        token.replace('-', "+").replace('_', "/"),
        String::new(),
        "!!!!".to_owned(),
    ] {
        if bad != token {
            assert_state_rejected(&second_round(&http, "shape", &bad));
        }
    }
    for bad in [json!(5), json!({"state": token}), json!([token])] {
        let response = http.call(&confirm("shape").responses(yes()).state(bad.clone()));
        assert_eq!(
            error_code(&response),
            code::INVALID_PARAMS,
            "{bad}: {response}"
        );
    }
    assert_confirmed(&second_round(&http, "shape", &token), "shape");
}

#[test]
fn a_request_state_from_another_principal_is_refused() {
    let host = Host::start(&["deploy"]);
    let alice = host.http();
    let bob = host.http_as(BOB);
    let state = first_round(&alice, "as alice");
    assert_state_rejected(&second_round(&bob, "as alice", &state));
    let state_of_bob = first_round(&bob, "as bob");
    assert_state_rejected(&second_round(&alice, "as bob", &state_of_bob));
    // The stdio process is a principal of its own.
    let stdio = host.stdio();
    assert_state_rejected(&second_round(&stdio, "as alice", &state));
    let state_of_stdio = first_round(&stdio, "on stdio");
    assert_state_rejected(&second_round(&alice, "on stdio", &state_of_stdio));
    // Each still works for whoever it was minted for.
    assert_confirmed(&second_round(&alice, "as alice", &state), "as alice");
    assert_confirmed(&second_round(&bob, "as bob", &state_of_bob), "as bob");
    assert_confirmed(
        &second_round(&stdio, "on stdio", &state_of_stdio),
        "on stdio",
    );
}

#[test]
fn a_request_state_for_another_tool_is_refused() {
    let host = Host::start(&["deploy"]);
    let http = host.http();
    let deploy = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    );
    // `confirm` and `deploy` both ask for {ok} under the key `confirm`.
    let state = first_round(&http, "deploy billing");
    assert_state_rejected(&http.call(&deploy.clone().responses(yes()).state(state.as_str())));
    let deploy_state = request_state(input_required(&http.call(&deploy)));
    assert_state_rejected(&second_round(&http, "deploy billing", &deploy_state));
}

#[test]
fn a_request_state_for_other_arguments_is_refused() {
    let host = Host::start(&["deploy"]);
    let http = host.http();
    let state = first_round(&http, "restart api");
    assert_state_rejected(&second_round(&http, "restart db", &state));
    assert_state_rejected(&second_round(&http, "restart api ", &state));
    // Arguments that no longer match the input schema are refused for
    // that before the state is opened (`arguments.rs`).
    let mut call = confirm("restart api")
        .responses(yes())
        .state(state.as_str());
    call.arguments = json!({"action": "restart api", "force": true});
    assert_state_rejected(&http.call(&call));
    assert_confirmed(&second_round(&http, "restart api", &state), "restart api");
}

#[test]
fn a_request_state_for_another_method_is_refused() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let tool = ToolCall::new("test_input_required_result_request_state", json!({}));
    let tool_state = request_state(input_required(&http.call(&tool)));
    let prompt = with_meta(
        json!({"name": "test_input_required_result_prompt", "arguments": {}}),
        all_caps(),
    );
    let asked = http.exchange("prompts/get", prompt.clone()).response;
    let asked = input_required(&asked).clone();
    let answer = json!({"user_context": elicit("accept", Some(json!({"context": "bound"})))});
    let prompt_with = |state: &str| {
        let mut params = prompt.clone();
        params["requestState"] = json!(state);
        params["inputResponses"] = answer.clone();
        http.exchange("prompts/get", params).response
    };
    assert_state_rejected(&prompt_with(&tool_state));
    assert_state_rejected(&http.call(&tool.clone().responses(yes()).state(request_state(&asked))));
    // Each token still works where it was minted.
    let done = http.call(&tool.responses(yes()).state(tool_state.as_str()));
    assert_eq!(
        text(complete(&done)),
        "state-ok: requestState validated",
        "{done}"
    );
    let done = http
        .exchange("prompts/get", retry_params(&prompt, &asked, answer.clone()))
        .response;
    assert!(
        complete(&done)["messages"]
            .to_string()
            .contains("Prompt with context: bound"),
        "{done}"
    );
}

#[test]
fn a_call_past_the_round_limit_is_refused_and_the_count_is_sealed() {
    let setup = Setup {
        protocol: ProtocolSettings {
            max_rounds: 3,
            ..ProtocolSettings::default()
        },
        ..Setup::default()
    };
    let host = Host::start_with(&["probe"], setup);
    let http = host.http();
    // Exactly three rounds: allowed.
    let call = ToolCall::new("count_rounds", json!({"rounds": 3}));
    let driven = drive(&http, &call, |_| Value::Null);
    complete(driven.last());
    assert_eq!(driven.states.len(), 2, "{driven:?}");
    // A fourth is refused, naming the limit.
    let call = ToolCall::new("count_rounds", json!({"rounds": 4}));
    let mut response = http.call(&call);
    let mut states = Vec::new();
    for _ in 0..3 {
        let asked = input_required(&response).clone();
        states.push(request_state(&asked));
        response = http.call(&call.retry(&asked, Value::Null));
    }
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert!(error_message(&response).contains("3 rounds"), "{response}");
    // The round number is sealed in the token: the last one never starts
    // over, an earlier one resumes from its own round.
    let again = http.call(&call.clone().state(states[2].as_str()));
    assert_eq!(error_code(&again), code::INVALID_PARAMS, "{again}");
    input_required(&http.call(&call.clone().state(states[1].as_str())));
}

#[test]
fn input_responses_must_be_objects() {
    let host = Host::start(&["deploy"]);
    let http = host.http();
    let state = first_round(&http, "shape responses");
    for bad in [
        json!(12345),
        json!("accept"),
        json!([{"action": "accept"}]),
        json!({"confirm": 12345}),
        json!({"confirm": [1, 2]}),
    ] {
        let call = confirm("shape responses")
            .responses(bad.clone())
            .state(state.as_str());
        let response = http.call(&call);
        assert_eq!(
            error_code(&response),
            code::INVALID_PARAMS,
            "{bad}: {response}"
        );
    }
    let response = http.call(&confirm("first").responses(json!(12345)));
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert_confirmed(
        &second_round(&http, "shape responses", &state),
        "shape responses",
    );
}

/// Calls `ask {kind}` declaring `caps` over HTTP; asserts 400 and -32021,
/// and returns `data.requiredCapabilities`.
#[track_caller]
fn refused(host: &Host, kind: &str, caps: Value) -> Value {
    let call = ToolCall::new("ask", json!({ "kind": kind })).caps(caps);
    let (id, reply) = host.http().send("tools/call", call.params());
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    body["error"]["data"]["requiredCapabilities"].clone()
}

#[test]
fn an_input_request_needs_the_capability_the_client_declared() {
    let host = Host::start(&["probe", "summarize", "deploy"]);
    assert_eq!(
        refused(&host, "url", json!({"elicitation": {}})),
        json!({"elicitation": {"url": {}}})
    );
    assert_eq!(
        refused(&host, "url", json!({"elicitation": {"form": {}}})),
        json!({"elicitation": {"url": {}}})
    );
    let form = refused(&host, "form", json!({"sampling": {}, "roots": {}}));
    assert!(form["elicitation"].is_object(), "{form}");
    assert!(form["elicitation"].get("url").is_none(), "{form}");
    assert_eq!(
        refused(&host, "sampling", json!({"elicitation": {}, "roots": {}})),
        json!({"sampling": {}})
    );
    assert_eq!(
        refused(&host, "sampling_tools", json!({"sampling": {}})),
        json!({"sampling": {"tools": {}}})
    );
    assert_eq!(
        refused(&host, "roots", json!({"elicitation": {}, "sampling": {}})),
        json!({"roots": {}})
    );
    // The sample tools too.
    let http = host.http();
    let summarize = ToolCall::new("summarize", json!({"text": "hello"})).caps(json!({}));
    let (id, reply) = http.send("tools/call", summarize.params());
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    assert_eq!(
        body["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    // And over stdio.
    let deploy = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    )
    .caps(json!({"sampling": {}}));
    let response = host.stdio().call(&deploy);
    assert_eq!(
        error_code(&response),
        code::MISSING_CAPABILITY,
        "{response}"
    );
    assert!(
        response["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{response}"
    );
}

#[test]
fn exactly_the_declared_capability_is_enough() {
    let host = Host::start(&["probe"]);
    let http = host.http();
    let cases = [
        (
            "form",
            json!({"elicitation": {}}),
            elicit("accept", Some(json!({"answer": "x"}))),
        ),
        (
            "url",
            json!({"elicitation": {"url": {}}}),
            elicit("accept", None),
        ),
        ("sampling", json!({"sampling": {}}), sampled("s")),
        (
            "sampling_tools",
            json!({"sampling": {"tools": {}}}),
            sampled("t"),
        ),
        (
            "roots",
            json!({"roots": {"listChanged": true}, "experimental": {"x": {}}}),
            roots(&[("file:///r", "r")]),
        ),
    ];
    for (kind, caps, answer) in cases {
        let call = ToolCall::new("ask", json!({ "kind": kind })).caps(caps);
        let driven = drive(&http, &call, |asked| {
            input_request(asked, "answer");
            json!({ "answer": answer.clone() })
        });
        assert!(!is_error(driven.complete()), "{kind}: {}", driven.last());
    }
}

#[test]
fn capabilities_are_checked_again_on_every_round() {
    let host = Host::start(&["work-items"]);
    let http = host.http();
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": 99, "fields": {"State": "Resolved"}}),
    )
    .caps(json!({"elicitation": {}}));
    let first = http.call(&call);
    let asked = input_required(&first);
    input_request(asked, "resolution");
    let answer = json!({"resolution": elicit("accept", Some(json!({"resolution": "Duplicate"})))});
    let retry = call.retry(asked, answer).caps(json!({}));
    let (id, reply) = http.send("tools/call", retry.params());
    let body = reply.assert_error(400, code::MISSING_CAPABILITY, Some(&id));
    assert!(
        body["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{body}"
    );
}
