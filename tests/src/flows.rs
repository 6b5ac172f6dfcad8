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
                let req = assert_form(r, "resolution", "resolution", Some("string"));
                let prop = &req["params"]["requestedSchema"]["properties"]["resolution"];
                assert_eq!(prop["title"], "Resolution", "{req}");
                assert!(
                    prop["enum"]
                        .as_array()
                        .is_some_and(|e| e.contains(&json!("Duplicate"))),
                    "{req}"
                );
                json!({"resolution": elicit("accept", Some(json!({"resolution": "Duplicate"})))})
            }
            [k] if k == "duplicate_of" => {
                let req = assert_form(r, "duplicate_of", "duplicateOf", Some("integer"));
                let prop = &req["params"]["requestedSchema"]["properties"]["duplicateOf"];
                assert_eq!(prop["title"], "Duplicate Of", "{req}");
                json!({"duplicate_of": elicit("accept", Some(json!({"duplicateOf": 1234})))})
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
    assert_eq!(
        text(r),
        "Updated work item 4711: State = Resolved, Resolution = Duplicate, Duplicate Of = 1234"
    );
    assert_eq!(
        r["structuredContent"],
        json!({"workItemId": 4711, "fields": {
            "State": "Resolved", "Resolution": "Duplicate", "Duplicate Of": 1234
        }}),
        "{}",
        driven.last()
    );
}

/// `update_work_item` resolving as fixed: one elicitation, then done.
pub fn work_item_fixed(client: &dyn McpClient) {
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": 7, "fields": {"State": "Resolved"}}),
    );
    let driven = drive(client, &call, |r| {
        assert_eq!(input_request_keys(r), vec!["resolution".to_string()], "{r}");
        json!({"resolution": elicit("accept", Some(json!({"resolution": "Fixed"})))})
    });
    assert_eq!(driven.states.len(), 1, "one question only: {driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert_eq!(
        text(r),
        "Updated work item 7: State = Resolved, Resolution = Fixed"
    );
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
    assert_eq!(
        text(r),
        "Updated work item 8: State = Resolved, Resolution = Fixed"
    );
}

/// `update_work_item` whose question is declined: cancelled, as an error.
pub fn work_item_declined(client: &dyn McpClient) {
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": 9, "fields": {"State": "Resolved"}}),
    );
    let first = client.call(&call);
    let r = input_required(&first);
    let response = client.call(&call.retry(r, json!({"resolution": elicit("decline", None)})));
    let done = complete(&response);
    assert!(is_error(done), "{response}");
    assert_eq!(
        text(done),
        "Update of work item 9 cancelled: no Resolution was given."
    );
}

/// `deploy` to production, confirmed.
pub fn deploy_production_accepted(client: &dyn McpClient) {
    let call = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    );
    let driven = drive(client, &call, |r| {
        assert_eq!(input_request_keys(r), vec!["confirm".to_string()], "{r}");
        let req = assert_form(r, "confirm", "ok", Some("boolean"));
        assert_eq!(req["params"]["message"], "Deploy billing to production?");
        json!({"confirm": elicit("accept", Some(json!({"ok": true})))})
    });
    assert_eq!(driven.states.len(), 1, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert_eq!(text(r), "Deployed billing to production");
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
        assert_eq!(
            text(done),
            "Deployment of billing to production was not confirmed; nothing was deployed."
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
    assert_eq!(text(r), "Deployed billing to staging");
}

/// `confirm` asks until confirmed (a decline asks again), then reports
/// `confirmed <action>`.
pub fn confirm(client: &dyn McpClient) {
    let call = ToolCall::new("confirm", json!({"action": "rotate the keys"}));
    let mut answers = vec![
        elicit("accept", Some(json!({"ok": true}))),
        elicit("accept", Some(json!({"ok": false}))),
        elicit("decline", None),
    ];
    let driven = drive(client, &call, |r| {
        let req = assert_form(r, "confirm", "ok", Some("boolean"));
        assert_eq!(req["params"]["message"], "Confirm rotate the keys?");
        json!({"confirm": answers.pop().expect("asked too often")})
    });
    assert_eq!(driven.states.len(), 3, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert_eq!(text(r), "confirmed rotate the keys");
}

/// `summarize` samples the client's model and returns its text.
pub fn summarize(client: &dyn McpClient) {
    let input = "The quick brown fox jumps over the lazy dog. ".repeat(5);
    let call = ToolCall::new("summarize", json!({"text": input}));
    let driven = drive(client, &call, |r| {
        assert_eq!(input_request_keys(r), vec!["summary".to_string()], "{r}");
        let req = input_request(r, "summary");
        assert_eq!(req["method"], "sampling/createMessage", "{req}");
        let params = &req["params"];
        assert_eq!(params["maxTokens"], 200, "{req}");
        assert!(
            params["systemPrompt"]
                .as_str()
                .is_some_and(|p| p.starts_with("You summarize text.")),
            "{req}"
        );
        assert_eq!(params["temperature"].as_f64(), Some(0.3), "{req}");
        assert_eq!(
            params["modelPreferences"]["speedPriority"].as_f64(),
            Some(0.8),
            "{req}"
        );
        assert_eq!(
            params["modelPreferences"]["intelligencePriority"].as_f64(),
            Some(0.4),
            "{req}"
        );
        let messages = params["messages"].as_array().expect("messages array");
        assert_eq!(messages.len(), 1, "{req}");
        assert_eq!(messages[0]["role"], "user", "{req}");
        assert!(
            messages[0]["content"]
                .to_string()
                .contains("Summarize this text:"),
            "the prompt should carry the text: {req}"
        );
        assert!(params.get("tools").is_none(), "no tools: {req}");
        json!({"summary": sampled("A fox jumps over a dog, five times.")})
    });
    assert_eq!(driven.states.len(), 1, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert_eq!(
        text(r),
        "A fox jumps over a dog, five times.\n(Summary written by e2e-model-1.)"
    );
    assert_eq!(
        r["structuredContent"],
        json!({"summary": "A fox jumps over a dog, five times.", "model": "e2e-model-1"})
    );
}

/// `list_roots` asks for the roots and reports them.
pub fn list_roots(client: &dyn McpClient) {
    let call = ToolCall::new("list_roots", json!({}));
    let driven = drive(client, &call, |r| {
        assert_eq!(input_request_keys(r), vec!["roots".to_string()], "{r}");
        let req = input_request(r, "roots");
        assert_eq!(req["method"], "roots/list", "{req}");
        json!({"roots": {"roots": [
            {"uri": "file:///home/ada/project", "name": "project"},
            {"uri": "file:///srv/data"},
        ]}})
    });
    assert_eq!(driven.states.len(), 1, "{driven:?}");
    let r = driven.complete();
    assert!(!is_error(r), "{}", driven.last());
    assert_eq!(
        text(r),
        "The client exposes 2 roots:\n- project: file:///home/ada/project\n- file:///srv/data"
    );
}

/// `build_report` continues with state-only rounds until done, reporting
/// progress in every round when asked.
pub fn build_report(client: &dyn McpClient) {
    let items: Vec<String> = (1..=7).map(|i| format!("item {i}")).collect();
    let call = ToolCall::new("build_report", json!({"items": items, "sliceSize": 2}))
        .progress_token("report");
    let mut current = call.clone();
    let mut states: Vec<String> = Vec::new();
    let mut progress_seen = Vec::new();
    let done = loop {
        let exchange = client.exchange("tools/call", current.params());
        for note in &exchange.notifications {
            assert_eq!(note["method"], "notifications/progress", "{note}");
            assert_eq!(note["params"]["progressToken"], "report", "{note}");
            assert_eq!(note["params"]["total"].as_f64(), Some(7.0), "{note}");
            progress_seen.push((
                note["params"]["progress"].as_f64().unwrap_or(-1.0),
                note["params"]["message"].as_str().unwrap_or("").to_string(),
            ));
        }
        let r = result(&exchange.response);
        if result_type(r) == "complete" {
            break exchange.response;
        }
        input_required(&exchange.response);
        assert!(
            input_request_keys(r).is_empty(),
            "build_report asks the client for nothing: {r}"
        );
        let state = request_state(r);
        assert!(!states.contains(&state), "requestState reused");
        states.push(state);
        assert!(states.len() < MAX_FLOW_ROUNDS, "no end in sight");
        current = call.retry(r, Value::Null);
    };
    assert_eq!(states.len(), 3, "7 items in slices of 2: 4 rounds");
    assert_eq!(
        progress_seen,
        vec![
            (2.0, "2 of 7 items".to_string()),
            (4.0, "4 of 7 items".to_string()),
            (6.0, "6 of 7 items".to_string()),
            (7.0, "7 of 7 items".to_string()),
        ]
    );
    let r = complete(&done);
    assert!(!is_error(r), "{done}");
    let mut expected = "Report on 7 items:".to_string();
    for (i, item) in items.iter().enumerate() {
        expected.push_str(&format!("\n{}. \"{item}\": 6 characters, 2 words", i + 1));
    }
    assert_eq!(text(r), expected);
    assert_eq!(r["structuredContent"]["items"], 7, "{done}");
}

/// The probe's `ask` for each kind of input request: the request as sent on
/// the wire, and the answer as the guest received it.
pub fn probe_ask(client: &dyn McpClient) {
    // Form.
    let (req, done) = ask_and_answer(
        client,
        "form",
        elicit("accept", Some(json!({"name": "Ada"}))),
    );
    assert_eq!(
        req,
        json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Please enter a name.",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }
        }}),
    );
    assert_eq!(
        done["structuredContent"],
        json!({"kind": "elicitation", "action": "accept", "content": {"name": "Ada"}})
    );
    // URL.
    let (req, done) = ask_and_answer(client, "url", elicit("accept", None));
    assert_eq!(
        req,
        json!({"method": "elicitation/create", "params": {
            "mode": "url", "message": "Please sign in.", "url": "https://example.com/auth"
        }}),
    );
    assert_eq!(text(&done), "accept");
    // A declined form reaches the guest as a decline.
    let (_, done) = ask_and_answer(client, "form", elicit("decline", None));
    assert_eq!(done["structuredContent"]["action"], "decline", "{done}");
    // Sampling.
    let (req, done) = ask_and_answer(client, "sampling", sampled("sampled-answer"));
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["maxTokens"], 100, "{req}");
    assert_eq!(req["params"]["systemPrompt"], "Answer briefly.", "{req}");
    assert!(
        req["params"]["messages"][0]["content"]
            .to_string()
            .contains("Say hello."),
        "{req}"
    );
    assert_eq!(text(&done), "sampled-answer");
    assert_eq!(done["structuredContent"]["model"], "e2e-model-1", "{done}");
    assert_eq!(done["structuredContent"]["role"], "assistant", "{done}");
    assert_eq!(done["structuredContent"]["stopReason"], "endTurn", "{done}");
    // Sampling with tools, answered with a tool call.
    let tool_reply = json!({
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "call-1", "name": "get_weather",
                     "input": {"city": "Paris"}}],
        "model": "e2e-model-1",
        "stopReason": "toolUse",
    });
    let (req, done) = ask_and_answer(client, "sampling_tools", tool_reply);
    let tools = req["params"]["tools"].as_array().expect("tools offered");
    assert_eq!(tools.len(), 1, "{req}");
    assert_eq!(tools[0]["name"], "get_weather", "{req}");
    assert_eq!(tools[0]["inputSchema"]["type"], "object", "{req}");
    assert_eq!(req["params"]["toolChoice"]["mode"], "auto", "{req}");
    assert_eq!(text(&done), "tool_use get_weather");
    assert_eq!(
        done["structuredContent"]["toolUses"],
        json!([{"id": "call-1", "name": "get_weather", "input": {"city": "Paris"}}])
    );
    // Roots.
    let (req, done) = ask_and_answer(
        client,
        "roots",
        roots(&[("file:///tmp/r1", "r1"), ("file:///tmp/r2", "r2")]),
    );
    assert_eq!(req["method"], "roots/list", "{req}");
    assert_eq!(text(&done), "2");
    assert_eq!(
        done["structuredContent"]["roots"],
        json!([{"uri": "file:///tmp/r1", "name": "r1"}, {"uri": "file:///tmp/r2", "name": "r2"}])
    );
}

/// `ask {kind}` then the retry with `answer`; returns the input request and
/// the complete (non-error) result.
fn ask_and_answer(client: &dyn McpClient, kind: &str, answer: Value) -> (Value, Value) {
    let call = ToolCall::new("ask", json!({ "kind": kind }));
    let first = client.call(&call);
    let r = input_required(&first);
    assert_eq!(input_request_keys(r), vec!["answer".to_string()], "{r}");
    let req = input_request(r, "answer").clone();
    let response = client.call(&call.retry(r, json!({ "answer": answer })));
    let done = result(&response).clone();
    assert_eq!(result_type(&done), "complete", "kind {kind}: {response}");
    assert!(!is_error(&done), "kind {kind}: {response}");
    (req, done)
}
