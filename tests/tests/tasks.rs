//! Tasks (MCP's tasks extension) end to end: the real binary serving the
//! `everything` sample's task tools, driven as a client drives them
//! (`tools/call` → `CreateTaskResult`, then `tasks/get`, `tasks/update`,
//! `tasks/cancel`), over HTTP and stdio, on one host with its file store
//! across a restart, and on hosts sharing Redis (a host that dies, one that
//! stops and hands its rounds back); the per-caller quota and the store's
//! bounds, and fair turns for tasks that checkpoint without end.

use std::time::{Duration, Instant};

use airlock_e2e::mcp::{complete, elicit, error_code, error_message, result_type, text};
use airlock_e2e::{
    Airlock, HttpServer, McpClient, RedisServer, ToolCall, ToolsDir, all_caps, code, wait_until,
};
use serde_json::{Value, json};

/// The extension's name.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Every capability, and the tasks extension.
fn tasks_caps() -> Value {
    let mut caps = all_caps();
    caps["extensions"] = json!({ TASKS: {} });
    caps
}

/// A call of `name` from a client that declared the tasks extension.
fn task_call(name: &str, arguments: Value) -> ToolCall {
    ToolCall::new(name, arguments).caps(tasks_caps())
}

/// Calls `name` and expects a `CreateTaskResult`; returns the task id.
#[track_caller]
fn create(client: &dyn McpClient, name: &str, arguments: Value) -> String {
    let response = client.call(&task_call(name, arguments));
    let result = &response["result"];
    assert_eq!(result_type(result), "task", "{response}");
    for absent in [
        "task",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "ttl",
        "pollInterval",
    ] {
        assert!(result.get(absent).is_none(), "{absent} in {response}");
    }
    assert!(
        result["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0),
        "{response}"
    );
    assert!(result["createdAt"].is_string() && result["lastUpdatedAt"].is_string());
    let id = result["taskId"].as_str().expect("a task id").to_owned();
    assert!(id.len() >= 32, "at least 128 random bits: {id}");
    id
}

/// `tasks/get`, `tasks/update` or `tasks/cancel` on `id` with more params.
fn task_request(client: &dyn McpClient, method: &str, id: &str, more: Value) -> Value {
    let mut params = json!({ "taskId": id });
    if let Value::Object(more) = more {
        params.as_object_mut().unwrap().extend(more);
    }
    client.rpc(method, params, tasks_caps())
}

/// The task as `tasks/get` shows it.
#[track_caller]
fn get(client: &dyn McpClient, id: &str) -> Value {
    let response = task_request(client, "tasks/get", id, json!({}));
    let task = complete(&response).clone();
    assert_eq!(task["taskId"], id, "{response}");
    assert!(task.get("requestState").is_none(), "{response}");
    task
}

/// Polls until the task has `status`; returns it.
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

/// An empty acknowledgement: no member but `resultType` (and the server's
/// `_meta`).
#[track_caller]
fn assert_acknowledged(response: &Value) {
    let mut result = complete(response).clone();
    result.as_object_mut().unwrap().remove("_meta");
    assert_eq!(result, json!({"resultType": "complete"}), "{response}");
}

/// The one text of a completed task's result.
fn result_text(task: &Value) -> String {
    assert_eq!(task["result"]["resultType"], "complete", "{task}");
    text(&task["result"])
}

/// The flows every transport must carry.
mod flows {
    use super::*;

    /// A task completes in the background; `tasks/get` sees it working,
    /// then completed with its result.
    pub fn runs_to_its_result(client: &dyn McpClient) {
        let id = create(
            client,
            "slow_compute",
            json!({"seconds": 1, "label": "sum"}),
        );
        let first = get(client, &id);
        assert!(
            ["working", "completed"].contains(&first["status"].as_str().unwrap()),
            "{first}"
        );
        let done = wait_status(client, &id, "completed");
        assert!(result_text(&done).contains("sum"), "{done}");
        assert!(
            done["result"]["_meta"]
                .get("io.modelcontextprotocol/related-task")
                .is_none()
        );
    }

    /// A task that asks for input waits for every answer; a partial answer
    /// leaves the rest pending, unknown keys are ignored.
    pub fn takes_partial_and_full_answers(client: &dyn McpClient) {
        let id = create(client, "multi_input", json!({}));
        let asking = wait_status(client, &id, "input_required");
        let keys: Vec<String> = asking["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys.len(), 2, "{asking}");
        for request in asking["inputRequests"].as_object().unwrap().values() {
            assert_eq!(request["method"], "elicitation/create", "{asking}");
        }
        let ack = task_request(
            client,
            "tasks/update",
            &id,
            json!({"inputResponses": {
                keys[0].clone(): elicit("accept", Some(json!({"name": "Ada", "color": "teal"}))),
                "unknown-key": {"ignored": true},
            }}),
        );
        assert_acknowledged(&ack);
        let still = get(client, &id);
        assert_eq!(still["status"], "input_required", "{still}");
        let left: Vec<&String> = still["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(
            left,
            vec![&keys[1]],
            "only the answered key is gone: {still}"
        );
        task_request(
            client,
            "tasks/update",
            &id,
            json!({"inputResponses": {
                keys[1].clone(): elicit("accept", Some(json!({"name": "Ada", "color": "teal"}))),
            }}),
        );
        let done = wait_status(client, &id, "completed");
        assert!(!result_text(&done).is_empty(), "{done}");
    }

    /// A tool error completes the task (with `isError`); a protocol error
    /// fails it with the error and no result.
    pub fn end_as_completed_or_failed(client: &dyn McpClient) {
        let id = create(client, "failing_job", json!({}));
        let done = wait_status(client, &id, "completed");
        assert_eq!(done["result"]["isError"], true, "{done}");
        let id = create(client, "protocol_error_job", json!({}));
        let failed = wait_status(client, &id, "failed");
        assert!(failed["error"]["code"].is_i64(), "{failed}");
        assert!(failed["error"]["message"].is_string(), "{failed}");
        assert!(failed.get("result").is_none(), "{failed}");
    }

    /// Input gathered with plain rounds first; then the call becomes a task
    /// whose result uses it.
    pub fn gather_input_before_the_task(client: &dyn McpClient) {
        let call = task_call("test_tool_with_task", json!({}));
        let asked = client.call(&call);
        let asked = &asked["result"];
        assert_eq!(result_type(asked), "input_required", "{asked}");
        assert!(asked.get("taskId").is_none());
        let retry = call.retry(
            asked,
            json!({"user_name": elicit("accept", Some(json!({"name": "Alice"})))}),
        );
        let response = client.call(&retry);
        let created = &response["result"];
        assert_eq!(result_type(created), "task", "{response}");
        assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
        let id = created["taskId"].as_str().unwrap();
        let done = wait_status(client, id, "completed");
        assert!(result_text(&done).contains("Alice"), "{done}");
    }

    /// Without the extension: no task, ever; a tool that requires tasks is
    /// refused with -32021 naming the extension; the tasks methods too.
    pub fn need_the_extension(client: &dyn McpClient) {
        let plain = client.call(&ToolCall::new(
            "slow_compute",
            json!({"seconds": 0, "label": "x"}),
        ));
        assert_eq!(result_type(complete(&plain)), "complete");
        let refused = client.call(&ToolCall::new("failing_job", json!({})));
        assert_eq!(error_code(&refused), code::MISSING_CAPABILITY, "{refused}");
        assert!(
            refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(),
            "{refused}"
        );
        let id = create(client, "slow_compute", json!({"seconds": 1, "label": "y"}));
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let response = client.rpc(
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
        for method in ["tasks/list", "tasks/result"] {
            let response = client.rpc(method, json!({"taskId": id}), tasks_caps());
            assert_eq!(
                error_code(&response),
                code::METHOD_NOT_FOUND,
                "{method}: {response}"
            );
        }
        let unknown = task_request(
            client,
            "tasks/get",
            "0123456789abcdef0123456789abcdef",
            json!({}),
        );
        assert_eq!(error_code(&unknown), code::INVALID_PARAMS, "{unknown}");
    }

    /// Cancelling ends the task as cancelled at once, and again is a no-op.
    pub fn cancel(client: &dyn McpClient) {
        let id = create(
            client,
            "slow_compute",
            json!({"seconds": 60, "label": "long"}),
        );
        wait_until("the round to start", || {
            let task = get(client, &id);
            (task["status"] == "working")
                .then_some(())
                .ok_or(task.to_string())
        });
        for _ in 0..2 {
            let ack = task_request(client, "tasks/cancel", &id, json!({}));
            assert_acknowledged(&ack);
            assert_eq!(get(client, &id)["status"], "cancelled");
        }
    }
}

airlock_e2e::over_both_transports! {
    a_task_runs_to_its_result: "everything" => flows::runs_to_its_result;
    a_task_takes_partial_and_full_answers: "everything" => flows::takes_partial_and_full_answers;
    tasks_end_as_completed_or_failed: "everything" => flows::end_as_completed_or_failed;
    input_is_gathered_before_the_task: "everything" => flows::gather_input_before_the_task;
    tasks_need_the_extension: "everything" => flows::need_the_extension;
    cancelling_a_task_ends_it: "everything" => flows::cancel;
}

/// The log filter of these tests' servers: the runner's lines of each
/// round, which the tests wait for, are debug lines.
const ROUND_LOGS: &str = "info,airlock::tasks::runner=debug";

/// A server on the `everything` sample with `args`.
fn serve(args: &[&str]) -> HttpServer {
    let tools = ToolsDir::with(&["everything"]);
    Airlock::new(&tools)
        .env("AIRLOCK_LOG", ROUND_LOGS)
        .args(args)
        .start_http()
}

#[test]
fn a_task_is_one_info_line_when_it_ends_and_its_rounds_are_debug_lines() {
    // The default log filter (info).
    let server = Airlock::new(&ToolsDir::with(&["everything"])).start_http();
    let client = server.client();
    let id = create(
        &client,
        "slow_compute",
        json!({"seconds": 0.1, "label": "quick"}),
    );
    wait_status(&client, &id, "completed");
    server.wait_for_log("task ended");
    let log = server.stderr();
    let ended: Vec<&str> = log.lines().filter(|l| l.contains("task ended")).collect();
    assert_eq!(ended.len(), 1, "{log}");
    assert!(
        ended[0].contains("INFO") && ended[0].contains(&id) && ended[0].contains("completed"),
        "{log}"
    );
    assert!(
        !log.contains("task round"),
        "a round is routine, logged at debug:\n{log}"
    );
}

#[test]
fn a_cancelled_round_stops_within_a_second() {
    let server = serve(&[]);
    let client = server.client();
    let id = create(
        &client,
        "slow_compute",
        json!({"seconds": 60, "label": "long"}),
    );
    server.wait_for_log("task round started");
    let cancelled = Instant::now();
    task_request(&client, "tasks/cancel", &id, json!({}));
    server.wait_for_log("task round stopped");
    let took = cancelled.elapsed();
    // A liveness bound, not a timing: the round would otherwise run 60 s.
    assert!(took < Duration::from_secs(10), "stopped after {took:?}");
    assert_eq!(get(&client, &id)["status"], "cancelled");
}

#[test]
fn another_principal_cannot_see_or_touch_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "alice-token-0123456789 alice\nbob-token-0123456789 bob\n",
    )
    .unwrap();
    let server = serve(&["--tokens-file", tokens.to_str().unwrap()]);
    let alice = server.client_with_token("alice-token-0123456789");
    let bob = server.client_with_token("bob-token-0123456789");
    let id = create(&alice, "confirm_delete", json!({"filename": "notes.txt"}));
    wait_status(&alice, &id, "input_required");
    let unknown = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let theirs = task_request(&bob, method, &id, json!({"inputResponses": {}}));
        let none = task_request(&bob, method, unknown, json!({"inputResponses": {}}));
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
fn listeners_hear_of_their_tasks() {
    let server = serve(&[]);
    let client = server.client();
    let id = create(
        &client,
        "slow_compute",
        json!({"seconds": 1, "label": "heard"}),
    );
    let mut stream = listen_to_task(&client, &id);
    let note = wait_until("notifications/tasks of the completed task", || {
        let event = stream.expect_event("a task notification");
        if event["method"] == "notifications/tasks" && event["params"]["status"] == "completed" {
            Ok(event)
        } else {
            Err(event.to_string())
        }
    });
    assert_eq!(note["params"]["taskId"], id.as_str());
    assert!(result_text(&note["params"]).contains("heard"), "{note}");
    // Without the extension, taskIds are refused.
    let refused = client.rpc(
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}}),
        all_caps(),
    );
    assert_eq!(error_code(&refused), code::MISSING_CAPABILITY, "{refused}");
}

/// A listen stream for task `id`, declaring the extension, positioned
/// after its acknowledgement.
fn listen_to_task(client: &airlock_e2e::Http, id: &str) -> airlock_e2e::SseStream {
    let params =
        airlock_e2e::mcp::with_meta(json!({"notifications": {"taskIds": [id]}}), tasks_caps());
    let (_, mut stream) = client.open_stream("subscriptions/listen", params);
    let ack = stream.expect_event("the acknowledgement");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "the acknowledgement echoes the task ids: {ack}"
    );
    stream
}

#[test]
fn tasks_expire_after_their_ttl_and_free_their_callers_room() {
    let server = serve(&["--task-ttl", "2s", "--max-tasks-per-principal", "1"]);
    let client = server.client();
    // Waiting for input: active until it expires.
    let id = create(&client, "confirm_delete", json!({"filename": "a.txt"}));
    let full = client.call(&task_call("confirm_delete", json!({"filename": "b.txt"})));
    assert!(
        error_message(&full).contains("Too many tasks"),
        "the second task is refused: {full}"
    );
    assert_eq!(get(&client, &id)["ttlMs"], 2000);
    wait_until("the task to expire", || {
        let response = task_request(&client, "tasks/get", &id, json!({}));
        (response["error"]["code"] == code::INVALID_PARAMS)
            .then_some(())
            .ok_or(response.to_string())
    });
    create(&client, "confirm_delete", json!({"filename": "c.txt"}));
}

/// The per-caller quota counts the tasks that work or wait for input, not
/// the ended ones kept for reading; its refusal is the quota error naming
/// the limit, counted in the metrics and logged.
#[test]
fn the_task_quota_counts_active_tasks_and_refuses_as_a_quota() {
    let server = serve(&[
        "--max-tasks-per-principal",
        "2",
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let client = server.client();
    let waiting = create(&client, "confirm_delete", json!({"filename": "a.txt"}));
    wait_status(&client, &waiting, "input_required");
    let running = create(
        &client,
        "slow_compute",
        json!({"seconds": 60, "label": "long"}),
    );
    let (id, reply) = client.send(
        "tools/call",
        task_call("slow_compute", json!({"seconds": 1, "label": "third"})).params(),
    );
    let body = reply.assert_error(429, code::QUOTA_EXCEEDED, Some(&id));
    assert_eq!(
        body["error"]["data"],
        json!({"limit": "tasks-per-principal", "max": 2}),
        "{body}"
    );
    server.wait_for_log("task store bound reached: request refused");
    let metrics = server.scrape_metrics();
    assert!(
        metrics
            .lines()
            .any(|line| line == "airlock_limit_hits_total{kind=\"tasks_per_principal\"} 1"),
        "the refusal is counted:\n{metrics}"
    );
    // Ended tasks stay readable and leave room for new ones.
    task_request(&client, "tasks/cancel", &running, json!({}));
    let key = get(&client, &waiting)["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    task_request(
        &client,
        "tasks/update",
        &waiting,
        json!({"inputResponses": {key: elicit("accept", Some(json!({"confirm": false})))}}),
    );
    wait_status(&client, &waiting, "completed");
    for label in ["fourth", "fifth"] {
        create(
            &client,
            "slow_compute",
            json!({"seconds": 1, "label": label}),
        );
    }
    assert_eq!(get(&client, &running)["status"], "cancelled");
}

/// The store holds at most `--max-stored-tasks` tasks of all callers,
/// ended ones included; more are refused with the quota error.
#[test]
fn the_task_store_is_bounded_across_callers() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "alice-token-0123456789 alice\nbob-token-0123456789 bob\n",
    )
    .unwrap();
    let server = serve(&[
        "--tokens-file",
        tokens.to_str().unwrap(),
        "--max-stored-tasks",
        "2",
    ]);
    let alice = server.client_with_token("alice-token-0123456789");
    let bob = server.client_with_token("bob-token-0123456789");
    let done = create(
        &alice,
        "slow_compute",
        json!({"seconds": 0.1, "label": "a"}),
    );
    wait_status(&alice, &done, "completed");
    create(&bob, "confirm_delete", json!({"filename": "b.txt"}));
    let (id, reply) = bob.send(
        "tools/call",
        task_call("confirm_delete", json!({"filename": "c.txt"})).params(),
    );
    let body = reply.assert_error(429, code::QUOTA_EXCEEDED, Some(&id));
    assert_eq!(
        body["error"]["data"],
        json!({"limit": "task-store-tasks", "max": 2}),
        "{body}"
    );
}

/// Tasks that checkpoint round after round take their turn with the
/// others: with two running slots busy with ten endless tasks of two
/// callers, the quick tasks of five other callers all run, while the
/// endless ones still go on.
#[test]
fn tasks_that_checkpoint_without_end_do_not_starve_other_callers() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    let callers = ["hog-a", "hog-b", "q-1", "q-2", "q-3", "q-4", "q-5"];
    let lines: String = callers
        .iter()
        .map(|name| format!("{name}-token-0123456789 {name}\n"))
        .collect();
    std::fs::write(&tokens, lines).unwrap();
    let tools = ToolsDir::with(&["report"]);
    let server = Airlock::new(&tools)
        .env("AIRLOCK_LOG", ROUND_LOGS)
        .args(["--tokens-file", tokens.to_str().unwrap()])
        .args(["--max-running-tasks", "2"])
        .start_http();
    let client = |name: &str| server.client_with_token(&format!("{name}-token-0123456789"));
    // One round per item: thousands of checkpoints each.
    let endless = json!({"items": vec!["x"; 10_000], "sliceSize": 1});
    let mut hogs = Vec::new();
    for hog in ["hog-a", "hog-b"] {
        for _ in 0..5 {
            hogs.push((hog, create(&client(hog), "build_report", endless.clone())));
        }
    }
    wait_until("the endless tasks to checkpoint", || {
        let ended = server.stderr().matches("task round ended").count();
        (ended >= 20).then_some(()).ok_or(format!("{ended} rounds"))
    });
    let quick: Vec<(&str, String)> = callers[2..]
        .iter()
        .map(|&name| {
            let id = create(&client(name), "build_report", json!({"items": ["quick"]}));
            (name, id)
        })
        .collect();
    for (name, id) in &quick {
        let done = wait_status(&client(name), id, "completed");
        assert!(result_text(&done).contains("quick"), "{done}");
    }
    for (hog, id) in &hogs {
        assert_eq!(get(&client(hog), id)["status"], "working", "{hog}'s task");
    }
}

/// The options of a host keeping its tasks in `store` (a file path or a
/// Redis URL), with a key ring of one key in `dir` shared by every host
/// made from the same `dir`.
fn shared_store_args(dir: &std::path::Path, store: &str) -> Vec<String> {
    let keys = dir.join("state.keys");
    if !keys.exists() {
        let (status, key, _) = airlock_e2e::run_airlock(&["keygen"]);
        assert!(status.success());
        std::fs::write(&keys, key).unwrap();
    }
    vec![
        "--task-store".to_owned(),
        store.to_owned(),
        "--state-keys-file".to_owned(),
        keys.to_str().unwrap().to_owned(),
    ]
}

/// A host keeping its tasks in the file `tasks.redb` of `dir`, with `more`
/// options.
fn serve_on_file(dir: &std::path::Path, more: &[&str]) -> HttpServer {
    let store = dir.join("tasks.redb");
    let mut args = shared_store_args(dir, store.to_str().unwrap());
    args.extend(more.iter().map(|arg| (*arg).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serve(&args)
}

#[test]
fn a_task_survives_a_restart_of_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = serve_on_file(dir.path(), &[]);
    let client = first.client();
    let waiting = create(&client, "confirm_delete", json!({"filename": "plan.txt"}));
    wait_status(&client, &waiting, "input_required");
    let running = create(
        &client,
        "slow_compute",
        json!({"seconds": 3, "label": "kept"}),
    );
    first.wait_for_log("task round started");
    first.kill();
    let second = serve_on_file(dir.path(), &[]);
    let client = second.client();
    let asking = get(&client, &waiting);
    let key = asking["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    task_request(
        &client,
        "tasks/update",
        &waiting,
        json!({"inputResponses": {key: elicit("accept", Some(json!({"confirm": true})))}}),
    );
    let done = wait_status(&client, &waiting, "completed");
    assert!(result_text(&done).contains("plan.txt"), "{done}");
    // The round the killed host was running starts again here once its
    // lease runs out.
    let done = wait_status(&client, &running, "completed");
    assert!(result_text(&done).contains("kept"), "{done}");
}

/// Three hosts with one key ring, sharing tasks through one Redis.
fn fleet(redis: &RedisServer, dir: &std::path::Path) -> Vec<HttpServer> {
    let args = shared_store_args(dir, &redis.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (0..3).map(|_| serve(&args)).collect()
}

/// Which of `hosts` started a round of task `id` (waits for one to).
fn running_host(hosts: &[HttpServer], id: &str) -> usize {
    wait_until("a host to start the round", || {
        hosts
            .iter()
            .position(|host| {
                host.stderr()
                    .lines()
                    .any(|line| line.contains("task round started") && line.contains(id))
            })
            .ok_or_else(|| "no host yet".to_owned())
    })
}

#[test]
fn a_fleet_on_redis_shares_its_tasks() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let hosts = fleet(&redis, dir.path());
    let clients: Vec<_> = hosts.iter().map(HttpServer::client).collect();
    // Created on one host, answered on another, read on the third.
    let id = create(
        &clients[0],
        "confirm_delete",
        json!({"filename": "shared.txt"}),
    );
    let asking = wait_status(&clients[1], &id, "input_required");
    let key = asking["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    task_request(
        &clients[1],
        "tasks/update",
        &id,
        json!({"inputResponses": {key: elicit("accept", Some(json!({"confirm": true})))}}),
    );
    let done = wait_status(&clients[2], &id, "completed");
    assert!(result_text(&done).contains("shared.txt"), "{done}");
    // Cancelled on one host while its round runs on whichever claimed it.
    let id = create(
        &clients[0],
        "slow_compute",
        json!({"seconds": 60, "label": "long"}),
    );
    let runner = running_host(&hosts, &id);
    let canceller = (runner + 1) % hosts.len();
    task_request(&clients[canceller], "tasks/cancel", &id, json!({}));
    hosts[runner].wait_for_log("task round stopped");
    assert_eq!(get(&clients[runner], &id)["status"], "cancelled");
}

#[test]
fn a_fleet_loses_no_task_when_a_host_dies() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut hosts = fleet(&redis, dir.path());
    let client = hosts[0].client();
    let id = create(
        &client,
        "slow_compute",
        json!({"seconds": 4, "label": "survivor"}),
    );
    let runner = running_host(&hosts, &id);
    hosts[runner].kill();
    let survivor = hosts[(runner + 1) % hosts.len()].client();
    let done = wait_status(&survivor, &id, "completed");
    assert!(result_text(&done).contains("survivor"), "{done}");
}

#[test]
fn a_host_that_stops_hands_its_rounds_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = serve_on_file(dir.path(), &[]);
    let id = create(
        &first.client(),
        "slow_compute",
        json!({"seconds": 2, "label": "handed"}),
    );
    first.wait_for_log("task round started");
    first.terminate();
    assert!(first.wait_exit(Duration::from_secs(30)).is_some());
    assert!(
        first.stderr().contains("task round handed back"),
        "{}",
        first.stderr()
    );
    let second = serve_on_file(dir.path(), &[]);
    let done = wait_status(&second.client(), &id, "completed");
    assert!(result_text(&done).contains("handed"), "{done}");
    // Handed back, the round starts again as its first attempt (a round
    // whose lease ran out would count a second one).
    assert!(
        second
            .stderr()
            .lines()
            .any(|line| line.contains("task round started") && line.contains("attempt=1")),
        "{}",
        second.stderr()
    );
}

/// SIGTERM: the host stops claiming and hands its running round back at
/// once, not after draining; another host sharing the store runs it as its
/// first attempt while the first still drains, and runs the rounds due
/// meanwhile.
#[test]
fn a_stopping_host_hands_its_rounds_back_as_it_starts_draining() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let shared = shared_store_args(dir.path(), &redis.url());
    let mut args: Vec<&str> = shared.iter().map(String::as_str).collect();
    let second = serve(&args);
    // The second host is busy, so that the first claims the round.
    let blockers: Vec<String> = (0..16)
        .map(|_| {
            create(
                &second.client(),
                "slow_compute",
                json!({"seconds": 120, "label": "blocker"}),
            )
        })
        .collect();
    wait_until("the second host to run its own rounds", || {
        let started = second.stderr().matches("task round started").count();
        (started >= 16)
            .then_some(())
            .ok_or(format!("{started} started"))
    });
    args.extend(["--shutdown-drain-delay", "120s"]);
    let mut first = serve(&args);
    let id = create(
        &first.client(),
        "slow_compute",
        json!({"seconds": 120, "label": "handed"}),
    );
    let started_on = |host: &HttpServer, id: &str| {
        host.stderr()
            .lines()
            .find(|line| line.contains("task round started") && line.contains(id))
            .map(str::to_owned)
    };
    wait_until("the first host to start the round", || {
        started_on(&first, &id).ok_or_else(|| "not yet".to_owned())
    });
    assert!(
        started_on(&first, &id).is_some_and(|line| line.contains("attempt=1")),
        "{}",
        first.stderr()
    );
    // Make room on the second host, then stop the first.
    for blocker in &blockers {
        task_request(&second.client(), "tasks/cancel", blocker, json!({}));
    }
    first.terminate();
    first.wait_for_log("draining");
    wait_until("the round to be handed back", || {
        first
            .stderr()
            .lines()
            .any(|line| line.contains("task round handed back") && line.contains(&id))
            .then_some(())
            .ok_or_else(|| first.stderr())
    });
    let taken = wait_until("the second host to take the round", || {
        started_on(&second, &id).ok_or_else(|| "not yet".to_owned())
    });
    assert!(taken.contains("attempt=1"), "no attempt spent: {taken}");
    // Rounds that become due now run on the second host only.
    let later = create(
        &second.client(),
        "slow_compute",
        json!({"seconds": 0.1, "label": "later"}),
    );
    wait_status(&second.client(), &later, "completed");
    assert!(started_on(&first, &later).is_none(), "{}", first.stderr());
    assert!(first.is_running(), "still draining: {}", first.stderr());
    first.kill();
}

#[test]
fn a_task_over_its_byte_limit_is_refused() {
    let server = serve(&["--max-task-bytes", "4KiB"]);
    let client = server.client();
    let long = "x".repeat(8 << 10);
    let refused = client.call(&task_call("confirm_delete", json!({"filename": long})));
    assert!(
        error_message(&refused).contains("4096 bytes"),
        "the limit is named: {refused}"
    );
    create(&client, "confirm_delete", json!({"filename": "small.txt"}));
}

#[test]
fn a_round_that_keeps_losing_its_host_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let once = ["--max-task-attempts", "1"];
    let mut first = serve_on_file(dir.path(), &once);
    let id = create(
        &first.client(),
        "slow_compute",
        json!({"seconds": 30, "label": "doomed"}),
    );
    first.wait_for_log("task round started");
    first.kill();
    let second = serve_on_file(dir.path(), &once);
    let failed = wait_status(&second.client(), &id, "failed");
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("started 1 times without finishing")),
        "{failed}"
    );
}
