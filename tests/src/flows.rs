//! The sample tools' multi-round flows, written once against [`McpClient`]
//! so each runs over HTTP and over stdio.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::client::McpClient;
use crate::mcp::{
    ToolCall, complete, elicit, input_request, input_request_keys, input_required, is_error,
    request_state, result, result_type, roots, sampled, text,
};

/// Most rounds a flow may take before the test calls it a loop.
pub const MAX_FLOW_ROUNDS: usize = 40;

/// What happened over the rounds of one call.
#[derive(Debug)]
pub struct Driven {
    /// Every response, first round first.
    pub responses: Vec<Value>,
    /// The requestState of each input_required round.
    pub states: Vec<String>,
}

impl Driven {
    /// The final response.
    pub fn last(&self) -> &Value {
        self.responses.last().expect("at least one round")
    }

    /// The final result, which must be complete.
    #[track_caller]
    pub fn complete(&self) -> &Value {
        complete(self.last())
    }
}

/// Calls `call` and, while the result is `input_required`, retries with the
/// answers `answer(round_result)` returns (`Value::Null` for none). Checks
/// that every round mints a requestState different from all earlier ones.
#[track_caller]
pub fn drive(
    client: &dyn McpClient,
    call: &ToolCall,
    mut answer: impl FnMut(&Value) -> Value,
) -> Driven {
    let mut responses = Vec::new();
    let mut states = Vec::new();
    let mut current = call.clone();
    loop {
        let response = client.call(&current);
        responses.push(response.clone());
        let Some(r) = response.get("result") else {
            break;
        };
        if result_type(r) != "input_required" {
            break;
        }
        input_required(&response);
        let state = request_state(r);
        assert!(
            !states.contains(&state),
            "round {} reused a requestState ({}): every round must mint a new one",
            responses.len(),
            client.transport()
        );
        states.push(state);
        assert!(
            responses.len() < MAX_FLOW_ROUNDS,
            "{} still input_required after {MAX_FLOW_ROUNDS} rounds: {response}",
            call.name
        );
        let responses_for_next = answer(r);
        current = call.retry(r, responses_for_next);
    }
    let unique: HashSet<&String> = states.iter().collect();
    assert_eq!(unique.len(), states.len(), "requestStates must all differ");
    Driven { responses, states }
}

/// Asserts an input request is a form elicitation asking for `property`
/// (with JSON Schema type `ty` when given); returns it.
#[track_caller]
pub fn assert_form(result: &Value, key: &str, property: &str, ty: Option<&str>) -> Value {
    let req = input_request(result, key);
    assert_eq!(req["method"], "elicitation/create", "{req}");
    let params = &req["params"];
    assert!(
        params.get("mode").is_none() || params["mode"] == "form",
        "expected a form elicitation: {req}"
    );
    assert!(
        params["message"].is_string(),
        "an elicitation needs a message: {req}"
    );
    let schema = &params["requestedSchema"];
    assert_eq!(
        schema["type"], "object",
        "requestedSchema must be an object schema: {req}"
    );
    let prop = schema["properties"]
        .get(property)
        .unwrap_or_else(|| panic!("requestedSchema lacks property `{property}`: {req}"));
    if let Some(ty) = ty {
        assert_eq!(prop["type"], ty, "property `{property}` type: {req}");
    }
    assert!(
        req.get("jsonrpc").is_none() && req.get("id").is_none(),
        "an input request has no jsonrpc/id: {req}"
    );
    req.clone()
}

/// `sha256` of "abc".
pub fn sha256(client: &dyn McpClient) {
    let response = client.call(&ToolCall::new("sha256", json!({"text": "abc"})));
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
    assert_eq!(
        text(r).trim(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

/// `update_work_item` resolving as a duplicate: two elicitations, then done.
pub fn work_item_duplicate(client: &dyn McpClient) {
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": 4711, "fields": {"State": "Resolved"}}),
    );
    let mut asked = Vec::new();
    let driven = drive(client, &call, |r| {
        let keys = input_request_keys(r);
        asked.push(keys.clone());
        match keys.as_slice() {
            [k] if k == "resolution" => {
                assert_form(r, "resolution", "Resolution", None);
                json!({"resolution": elicit("accept", Some(json!({"Resolution": "Duplicate"})))})
            }
            [k] if k == "duplicate_of" => {
                assert_form(r, "duplicate_of", "Duplicate Of", Some("integer"));
                json!({"duplicate_of": elicit("accept", Some(json!({"Duplicate Of": 1234})))})
            }
            other => panic!("unexpected input requests {other:?}: {r}"),
        }
    });
    assert_eq!(
        asked,
        vec![
            vec!["resolution".to_string()],
            vec!["duplicate_of".to_string()]
        ],
        "{driven:?}"
    );
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    let summary = text(r);
    for needle in ["4711", "Resolved", "Duplicate", "1234"] {
        assert!(
            summary.contains(needle),
            "the summary should mention {needle}: {summary}"
        );
    }
}

/// `update_work_item` resolving as fixed: one elicitation, then done.
pub fn work_item_fixed(client: &dyn McpClient) {
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": 7, "fields": {"State": "Resolved"}}),
    );
    let driven = drive(client, &call, |r| {
        assert_eq!(input_request_keys(r), vec!["resolution".to_string()], "{r}");
        json!({"resolution": elicit("accept", Some(json!({"Resolution": "Fixed"})))})
    });
    assert_eq!(driven.states.len(), 1, "one question only: {driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert!(text(r).contains("Fixed"), "{}", driven.last());
}

/// `update_work_item` with the resolution given up front: no question.
pub fn work_item_no_question(client: &dyn McpClient) {
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": 8, "fields": {"State": "Resolved", "Resolution": "Fixed"}}),
    );
    let response = client.call(&call);
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
}

/// `deploy` to production, confirmed.
pub fn deploy_production_accepted(client: &dyn McpClient) {
    let call = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    );
    let driven = drive(client, &call, |r| {
        assert_eq!(input_request_keys(r), vec!["confirm".to_string()], "{r}");
        assert_form(r, "confirm", "ok", Some("boolean"));
        json!({"confirm": elicit("accept", Some(json!({"ok": true})))})
    });
    assert_eq!(driven.states.len(), 1, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    let t = text(r);
    assert!(t.contains("billing"), "{t}");
}

/// `deploy` to production, refused in each way: decline, cancel, ok false.
pub fn deploy_production_refused(client: &dyn McpClient) {
    let call = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    );
    for answer in [
        elicit("decline", None),
        elicit("cancel", None),
        elicit("accept", Some(json!({"ok": false}))),
    ] {
        let first = client.call(&call);
        let r = input_required(&first);
        let retry = call.retry(r, json!({"confirm": answer.clone()}));
        let response = client.call(&retry);
        let done = complete(&response);
        assert!(
            is_error(done),
            "answer {answer} must end the deploy with isError: {response}"
        );
    }
}

/// `deploy` to staging needs no confirmation.
pub fn deploy_staging(client: &dyn McpClient) {
    let response = client.call(&ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "staging"}),
    ));
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
}

/// `confirm` asks, then reports `confirmed <action>`.
pub fn confirm(client: &dyn McpClient) {
    let call = ToolCall::new("confirm", json!({"action": "rotate the keys"}));
    let driven = drive(client, &call, |r| {
        assert_form(r, "confirm", "ok", Some("boolean"));
        json!({"confirm": elicit("accept", Some(json!({"ok": true})))})
    });
    assert_eq!(driven.states.len(), 1, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert_eq!(text(r).trim(), "confirmed rotate the keys");
}

/// `summarize` samples the client's model and returns its text.
pub fn summarize(client: &dyn McpClient) {
    let input = "The quick brown fox jumps over the lazy dog. ".repeat(5);
    let call = ToolCall::new("summarize", json!({"text": input}));
    let driven = drive(client, &call, |r| {
        let req = input_request(r, "summary");
        assert_eq!(req["method"], "sampling/createMessage", "{req}");
        let params = &req["params"];
        assert!(params["maxTokens"].is_u64(), "maxTokens is required: {req}");
        let messages = params["messages"].as_array().expect("messages array");
        assert!(!messages.is_empty(), "{req}");
        assert!(
            req.to_string().contains("quick brown fox"),
            "the prompt should carry the text: {req}"
        );
        json!({"summary": sampled("A fox jumps over a dog, five times.")})
    });
    assert_eq!(driven.states.len(), 1, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert!(
        text(r).contains("A fox jumps over a dog, five times."),
        "{}",
        driven.last()
    );
}

/// `list_roots` asks for the roots and reports them.
pub fn list_roots(client: &dyn McpClient) {
    let call = ToolCall::new("list_roots", json!({}));
    let driven = drive(client, &call, |r| {
        let req = input_request(r, "roots");
        assert_eq!(req["method"], "roots/list", "{req}");
        json!({"roots": roots(&[
            ("file:///home/ada/project", "project"),
            ("file:///srv/data", "data"),
        ])})
    });
    assert_eq!(driven.states.len(), 1, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    let t = text(r);
    assert!(t.contains("file:///home/ada/project"), "{t}");
    assert!(t.contains("file:///srv/data"), "{t}");
}

/// `build_report` continues with state-only rounds until done.
pub fn build_report(client: &dyn McpClient) {
    let items: Vec<String> = (1..=7).map(|i| format!("item-{i}")).collect();
    let call = ToolCall::new("build_report", json!({"items": items, "sliceSize": 2}));
    let driven = drive(client, &call, |r| {
        assert!(
            input_request_keys(r).is_empty(),
            "build_report asks the client for nothing: {r}"
        );
        Value::Null
    });
    assert!(
        driven.states.len() >= 3,
        "7 items in slices of 2 need at least 3 continuations: {driven:?}"
    );
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    let t = text(r);
    for item in &items {
        assert!(t.contains(item.as_str()), "the report lacks {item}: {t}");
    }
}

/// The probe's `ask` for each kind of input request, answered.
pub fn probe_ask(client: &dyn McpClient) {
    let cases: [(&str, &str, Value); 5] = [
        (
            "form",
            "elicitation/create",
            elicit("accept", Some(json!({"answer": "forty-two"}))),
        ),
        ("url", "elicitation/create", elicit("accept", None)),
        (
            "sampling",
            "sampling/createMessage",
            sampled("sampled-answer"),
        ),
        (
            "sampling_tools",
            "sampling/createMessage",
            sampled("sampled-with-tools"),
        ),
        ("roots", "roots/list", roots(&[("file:///tmp/r1", "r1")])),
    ];
    for (kind, method, answer) in cases {
        let call = ToolCall::new("ask", json!({"kind": kind}));
        let first = client.call(&call);
        let r = input_required(&first);
        let req = input_request(r, "answer");
        assert_eq!(req["method"], method, "kind {kind}: {req}");
        if kind == "url" {
            assert_eq!(req["params"]["mode"], "url", "{req}");
            assert!(req["params"]["url"].is_string(), "{req}");
        }
        if kind == "sampling_tools" {
            assert!(
                req["params"]["tools"]
                    .as_array()
                    .is_some_and(|t| !t.is_empty()),
                "sampling_tools should offer tools: {req}"
            );
        }
        let response = client.call(&call.retry(r, json!({"answer": answer})));
        let done = result(&response);
        assert_eq!(result_type(done), "complete", "kind {kind}: {response}");
        assert!(!is_error(done), "kind {kind}: {response}");
    }
}
