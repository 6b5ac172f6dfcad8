//! Tasks (the tasks extension): a call becomes a task when the client
//! declares the extension, `tasks/get` follows it, `tasks/update` answers
//! it, `tasks/cancel` ends it; another principal's task reads as unknown;
//! without the extension there is no task, and a 2025 session never gets
//! one.

use airlock_e2e::legacy::{assert_legacy_result, initialize_params};
use airlock_e2e::mcp::{complete, elicit, error_code, error_message, result_type, text};
use airlock_e2e::{McpClient, ToolCall, all_caps, code, wait_until};
use serde_json::{Value, json};

use crate::support::{BOB, Host};

/// The extension's name.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Every capability, and the tasks extension.
fn tasks_caps() -> Value {
    let mut caps = all_caps();
    caps["extensions"] = json!({ TASKS: {} });
    caps
}

/// Calls `name` declaring the extension; expects a `CreateTaskResult` and
/// returns the task's id.
#[track_caller]
fn create(client: &dyn McpClient, name: &str, arguments: Value) -> String {
    let response = client.call(&ToolCall::new(name, arguments).caps(tasks_caps()));
    let result = &response["result"];
    assert_eq!(result_type(result), "task", "{response}");
    for absent in ["result", "inputRequests", "requestState"] {
        assert!(result.get(absent).is_none(), "{absent} in {response}");
    }
    assert!(
        result["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0),
        "{response}"
    );
    let id = result["taskId"].as_str().expect("a task id").to_owned();
    assert!(id.len() >= 32, "at least 128 random bits: {id}");
    id
}

/// `method` (`tasks/get`, `tasks/update`, `tasks/cancel`) on task `id`,
/// with `more` params.
fn on_task(client: &dyn McpClient, method: &str, id: &str, more: Value) -> Value {
    let mut params = json!({ "taskId": id });
    if let Value::Object(more) = more {
        params.as_object_mut().expect("an object").extend(more);
    }
    client.rpc(method, params, tasks_caps())
}

/// The task as `tasks/get` shows it.
#[track_caller]
fn get(client: &dyn McpClient, id: &str) -> Value {
    let response = on_task(client, "tasks/get", id, json!({}));
    let task = complete(&response).clone();
    assert_eq!(task["taskId"], id, "{response}");
    task
}

/// Polls `tasks/get` until the task is `status`; returns it.
#[track_caller]
fn wait_status(client: &dyn McpClient, id: &str, status: &str) -> Value {
    wait_until(&format!("task {id} to be {status}"), || {
        let task = get(client, id);
        if task["status"] == status {
            Ok(task)
        } else {
            Err(task.to_string())
        }
    })
}

/// An empty acknowledgement: nothing but `resultType` (and `_meta`).
#[track_caller]
fn assert_acknowledged(response: &Value) {
    let mut result = complete(response).clone();
    result.as_object_mut().expect("an object").remove("_meta");
    assert_eq!(result, json!({"resultType": "complete"}), "{response}");
}

/// A task runs to its result, followed by `tasks/get`.
fn runs_to_its_result(client: &dyn McpClient) {
    let id = create(
        client,
        "slow_compute",
        json!({"seconds": 1, "label": "sum"}),
    );
    let first = get(client, &id);
    assert!(
        ["working", "completed"].contains(&first["status"].as_str().unwrap_or_default()),
        "{first}"
    );
    let done = wait_status(client, &id, "completed");
    assert!(text(&done["result"]).contains("sum"), "{done}");
}

#[test]
fn a_call_becomes_a_task_when_the_client_declares_the_extension() {
    let host = Host::start(&["everything"]);
    runs_to_its_result(&host.http());
}

#[test]
fn a_call_becomes_a_task_over_stdio_too() {
    let host = Host::start(&["everything"]);
    runs_to_its_result(&host.stdio());
}

#[test]
fn tasks_update_answers_what_a_task_asks_key_by_key() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let id = create(&http, "multi_input", json!({}));
    let asking = wait_status(&http, &id, "input_required");
    let keys: Vec<String> = asking["inputRequests"]
        .as_object()
        .expect("input requests")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{asking}");
    let answer = elicit("accept", Some(json!({"name": "Ada", "color": "teal"})));
    let ack = on_task(
        &http,
        "tasks/update",
        &id,
        json!({"inputResponses": {keys[0].clone(): answer.clone(), "unknown-key": {}}}),
    );
    assert_acknowledged(&ack);
    let still = get(&http, &id);
    assert_eq!(still["status"], "input_required", "{still}");
    let left: Vec<&String> = still["inputRequests"]
        .as_object()
        .expect("input requests")
        .keys()
        .collect();
    assert_eq!(
        left,
        vec![&keys[1]],
        "only the answered key is gone: {still}"
    );
    on_task(
        &http,
        "tasks/update",
        &id,
        json!({"inputResponses": {keys[1].clone(): answer}}),
    );
    let done = wait_status(&http, &id, "completed");
    assert!(!text(&done["result"]).is_empty(), "{done}");
}

#[test]
fn tasks_cancel_ends_a_task_and_again_changes_nothing() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let id = create(
        &http,
        "slow_compute",
        json!({"seconds": 60, "label": "long"}),
    );
    wait_status(&http, &id, "working");
    for _ in 0..2 {
        assert_acknowledged(&on_task(&http, "tasks/cancel", &id, json!({})));
        assert_eq!(get(&http, &id)["status"], "cancelled");
    }
}

#[test]
fn another_principals_task_reads_as_unknown() {
    let host = Host::start(&["everything"]);
    let alice = host.http();
    let bob = host.http_as(BOB);
    let id = create(&alice, "confirm_delete", json!({"filename": "notes.txt"}));
    wait_status(&alice, &id, "input_required");
    let unknown = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let theirs = on_task(&bob, method, &id, json!({"inputResponses": {}}));
        let none = on_task(&bob, method, unknown, json!({"inputResponses": {}}));
        assert_eq!(
            error_code(&theirs),
            code::INVALID_PARAMS,
            "{method}: {theirs}"
        );
        assert_eq!(
            error_message(&theirs).replace(&id, "ID"),
            error_message(&none).replace(unknown, "ID"),
            "another's task reads like an unknown one"
        );
    }
    assert_eq!(
        get(&alice, &id)["status"],
        "input_required",
        "bob changed nothing"
    );
}

#[test]
fn without_the_extension_there_is_no_task() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let plain = http.call(&ToolCall::new(
        "slow_compute",
        json!({"seconds": 0, "label": "x"}),
    ));
    assert_eq!(result_type(complete(&plain)), "complete");
    // A tool that needs a task is refused, naming the extension.
    let refused = http.call(&ToolCall::new("failing_job", json!({})));
    assert_eq!(error_code(&refused), code::MISSING_CAPABILITY, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(),
        "{refused}"
    );
    let id = create(&http, "slow_compute", json!({"seconds": 1, "label": "y"}));
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let response = http.rpc(
            method,
            json!({"taskId": id, "inputResponses": {}}),
            all_caps(),
        );
        assert_eq!(
            error_code(&response),
            code::MISSING_CAPABILITY,
            "{method}: {response}"
        );
    }
}

/// What the MCP Inspector declares in a 2025-11-25 `initialize`: the
/// 2026-07-28 tasks extension, which the 2025 wire does not have.
fn inspector_caps() -> Value {
    json!({"extensions": { TASKS: {} }})
}

/// `build_report` of seven items in slices of three: three rounds.
fn report_call() -> Value {
    json!({"name": "build_report", "arguments": {
        "items": ["one", "two words", "three", "four", "five", "six", "seven"],
        "sliceSize": 3,
    }})
}

/// Asserts `result` is the whole report, in the 2025 shape: no task.
#[track_caller]
fn assert_whole_report(result: &Value) {
    assert_legacy_result(result);
    assert!(
        result.get("taskId").is_none() && result.get("status").is_none(),
        "a task in a 2025 session: {result}"
    );
    assert!(text(result).starts_with("Report on 7 items:"), "{result}");
}

#[test]
fn a_2025_session_never_gets_a_task() {
    let host = Host::start(&["report"]);
    let http = host.http();
    let session = http.open_session(inspector_caps());
    assert_whole_report(&session.result("tools/call", report_call()));
    let stdio = host.stdio();
    let init = stdio.send_request(
        "initialize",
        initialize_params("2025-11-25", inspector_caps()),
    );
    assert!(stdio.response(&init).get("result").is_some());
    let call = stdio.send_request("tools/call", report_call());
    let response = stdio.response(&call);
    assert_whole_report(
        response
            .get("result")
            .unwrap_or_else(|| panic!("build_report should succeed: {response}")),
    );
}
