//! Tools written in JavaScript with the JavaScript guest SDK
//! (guest-sdks/javascript), built by `scripts/build-javascript-tools` into
//! `<target>/javascript-tools/`, served by the real binary: the plain
//! `sha256` and the multi-round `clear_done` (a confirmation by form, the
//! titles shown carried in the sealed state) to completion over HTTP and
//! stdio, proof that no module-level state survives from one round to the
//! next, and the resources, prompt (with a question) and completions of
//! `js_notes`, which behave exactly as Python's `py_notes`, and the MCP App
//! (its `_meta.ui` on the wire) and served skill of `js_bar_chart`, as
//! Python's `py_bar_chart`, and the log of a crash naming the author's lines
//! (the test app `js_crash`). The servers share a cache of compiled components (see
//! `airlock_e2e::language_tools`).

use airlock_e2e::flows::{assert_form, drive};
use std::time::{Duration, Instant};

use airlock_e2e::language_tools::{
    COMPILE_TIMEOUT, JAVASCRIPT, apps, assert_answer_ends_in_error, assert_error_result,
    assert_retries_run_fresh, notes, sha256,
};
use airlock_e2e::mcp::{complete, elicit, input_request_keys, is_error, text};
use airlock_e2e::{Airlock, McpClient, ToolCall, language_over_both_transports, no_caps, raw_http};
use serde_json::{Value, json};

/// The plain sample's component.
const HASH: &str = "js_hash";
/// The multi-round sample's component.
const CLEAR_DONE: &str = "js_clear_done";
/// The prompts, resources and completions sample's component.
const NOTES: &str = "js_notes";
/// The MCP App sample's component.
const BAR_CHART: &str = "js_bar_chart";
/// The test app whose `divide` crashes in its `app.js` or in the `ratio.js`
/// it imports (guest-sdks/javascript/tests/apps/js_crash).
const CRASH: &str = "js_crash";

/// `airlock inspect` tells an operator what the component needs: its size,
/// its initial memory (the interpreter's heap snapshot) and compile time.
#[test]
fn inspect_reports_size_memory_and_compile_time() {
    JAVASCRIPT.assert_inspect_reports_footprint(HASH);
}

/// A component that takes tens of seconds to compile does not keep the
/// server from answering: it listens at once, answers discovery (not to be
/// cached meanwhile), and `/readyz` says it is loading; once the load is
/// done it is ready and serves the tool. The log names the component while
/// it compiles.
#[test]
fn answers_and_is_not_ready_while_a_large_component_compiles() {
    let tools = JAVASCRIPT.tools_with(HASH);
    // Without the compile cache (the default of these servers): it compiles now.
    let server = Airlock::new(&tools)
        .start_within(COMPILE_TIMEOUT)
        .start_http_loading();
    let client = server.client();
    let discovered = client.rpc("server/discover", json!({}), no_caps());
    assert!(
        complete(&discovered)["capabilities"]["tools"].is_object(),
        "{discovered}"
    );
    assert_eq!(complete(&discovered)["ttlMs"], 0, "{discovered}");
    let ready = raw_http(
        &server.addr(),
        b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(ready.status, 503, "{}", ready.text());
    assert_eq!(
        ready.json(),
        json!({"status": "not ready", "reasons": ["loading components"]})
    );
    // The log line may reach the pipe a moment after the port opened.
    airlock_e2e::wait_until("the log to say `compiling`", || {
        let stderr = server.stderr();
        if stderr.contains("compiling") {
            Ok(())
        } else {
            Err(stderr)
        }
    });
    let deadline = Instant::now() + COMPILE_TIMEOUT;
    loop {
        let ready = raw_http(
            &server.addr(),
            b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        );
        if ready.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not ready after {COMPILE_TIMEOUT:?}: {}",
            ready.text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(client.tool_names(), ["sha256"]);
    sha256(&client);
    assert!(
        server.stderr().contains("loaded component (compiled in "),
        "{}",
        server.stderr()
    );
}

/// A crash is logged with its stack naming the author's own files, lines and
/// columns (`app.js`, the `ratio.js` it imports, the SDK's files), not lines
/// of the bundle the build made of them; the client gets an error result
/// saying the tool crashed.
#[test]
fn a_crash_is_logged_with_the_authors_lines() {
    let server = JAVASCRIPT
        .server(CRASH)
        .args(["--log-format", "json"])
        .start_http();
    let client = server.client();
    let crashes = [
        (
            json!({"here": true}),
            "RangeError: crashed in app.js\nStack:\n  quotient@app.js:18:11\n  @app.js:13:20\n  \
             callTool@airlock-guest/src/tools.js:",
        ),
        (
            json!({"a": 1, "b": 0}),
            "RangeError: division by zero in ratio.js\nStack:\n  ratio@ratio.js:5:11\n  \
             quotient@app.js:20:10\n  @app.js:13:20\n  callTool@airlock-guest/src/tools.js:",
        ),
    ];
    for (count, (arguments, report)) in crashes.into_iter().enumerate() {
        assert_error_result(
            &client.call(&ToolCall::new("divide", arguments)),
            "Tool 'divide' failed: the tool crashed (wasm trap)",
        );
        let line = server.wait_for_log_lines(&["call failed", "divide"], count + 1);
        let line: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let stderr = line["fields"]["stderr"].as_str().unwrap_or_default();
        assert!(stderr.starts_with(report), "{line}");
        assert!(!stderr.contains("bundle.js"), "{line}");
    }
    let fine = client.call(&ToolCall::new("divide", json!({"a": 1, "b": 4})));
    assert_eq!(text(complete(&fine)), "0.25", "{fine}");
}

language_over_both_transports! {
    JAVASCRIPT;
    sha256: HASH => sha256;
    lists_its_tool: CLEAR_DONE => lists_clear_done;
    clears_after_confirmation: CLEAR_DONE => clears_after_confirmation;
    nothing_finished_asks_nothing: CLEAR_DONE => nothing_finished;
    answering_no_clears_nothing: CLEAR_DONE => answering_no;
    question_declined: CLEAR_DONE => question_declined;
    client_without_forms_is_refused: CLEAR_DONE => client_without_forms;
    retries_run_in_fresh_instances: CLEAR_DONE => retries_run_in_fresh_instances;
    notes_lists_resources_and_templates: NOTES => notes::lists;
    notes_reads_resources: NOTES => notes::reads;
    notes_prompt_asks_for_the_style: NOTES => notes::prompt_asks;
    notes_prompt_with_every_argument: NOTES => notes::prompt_direct;
    notes_prompt_refuses_an_unknown_note: NOTES => notes::prompt_unknown_note;
    notes_completes_ids: NOTES => notes::completes;
    bar_chart_app_and_skill_on_the_wire: BAR_CHART => apps::bar_chart;
}

/// `tools/list` shows what `tool(...)` declared.
fn lists_clear_done(client: &dyn McpClient) {
    let tools = client.list_all("tools/list", "tools");
    assert_eq!(tools.len(), 1, "{tools:?}");
    let tool = &tools[0];
    assert_eq!(tool["name"], "clear_done", "{tool}");
    assert_eq!(tool["title"], "Clear finished tasks", "{tool}");
    assert_eq!(tool["inputSchema"]["required"], json!(["tasks"]), "{tool}");
    assert_eq!(tool["annotations"]["destructiveHint"], true, "{tool}");
    assert_eq!(tool["annotations"]["openWorldHint"], false, "{tool}");
}

/// A list with two finished tasks of four.
fn task_list() -> Value {
    json!([
        {"title": "write docs", "done": true},
        {"title": "fix bug", "done": false},
        {"title": "review", "done": true},
        {"title": "release", "done": false},
    ])
}

/// What a declined or refused confirmation ends with.
const CANCELLED: &str = "cancelled: nothing was cleared";

/// The first call: the question naming the finished tasks.
fn first_round() -> ToolCall {
    ToolCall::new("clear_done", json!({ "tasks": task_list() }))
}

/// An elicitation answer to the confirmation.
fn confirm(yes: bool) -> Value {
    json!({ "confirm": elicit("accept", Some(json!({ "confirm": yes }))) })
}

/// Checks a complete, successful `clear_done` result that cleared the two
/// finished tasks.
#[track_caller]
fn assert_cleared(response: &Value) {
    let r = complete(response);
    assert!(!is_error(r), "{response}");
    assert_eq!(text(r), "cleared 2, 2 remain", "{response}");
    let outcome = &r["structuredContent"];
    assert_eq!(
        outcome["cleared"],
        json!(["write docs", "review"]),
        "{response}"
    );
    assert_eq!(
        outcome["remaining"],
        json!([{"title": "fix bug", "done": false}, {"title": "release", "done": false}]),
        "{response}"
    );
    assert_eq!(
        outcome["callsInThisInstance"], 1,
        "a module-level counter must start afresh in every round: {response}"
    );
}

/// Asked to confirm, the user says yes: two rounds, one question.
fn clears_after_confirmation(client: &dyn McpClient) {
    let mut questions = 0;
    let driven = drive(client, &first_round(), |r| {
        questions += 1;
        assert_eq!(input_request_keys(r), vec!["confirm".to_string()], "{r}");
        let req = assert_form(r, "confirm", "confirm", Some("boolean"));
        assert_eq!(
            req["params"]["message"], "Clear 2 finished tasks: write docs, review?",
            "{req}"
        );
        confirm(true)
    });
    assert_eq!(questions, 1, "{driven:?}");
    assert_cleared(driven.last());
}

/// With nothing finished nobody is asked and nothing changes.
fn nothing_finished(client: &dyn McpClient) {
    let tasks = json!([{"title": "fix bug", "done": false}]);
    let response = client.call(&ToolCall::new("clear_done", json!({ "tasks": tasks })));
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
    assert_eq!(text(r), "cleared 0, 1 remain", "{response}");
    assert_eq!(r["structuredContent"]["remaining"], tasks, "{response}");
}

/// Answering the form with "no" ends the call with an error result.
fn answering_no(client: &dyn McpClient) {
    assert_answer_ends_in_error(client, &first_round(), confirm(false), CANCELLED);
}

/// Declining the question ends the call with an error result.
fn question_declined(client: &dyn McpClient) {
    let declined = json!({ "confirm": elicit("decline", None) });
    assert_answer_ends_in_error(client, &first_round(), declined, CANCELLED);
}

/// A client that cannot show forms is refused: nothing is cleared unasked.
fn client_without_forms(client: &dyn McpClient) {
    assert_error_result(
        &client.call(&first_round().caps(no_caps())),
        "cannot ask for confirmation: this client shows no forms (would clear write docs, review)",
    );
}

/// A first call made twice and its second round sent three times all run
/// in fresh instances.
fn retries_run_in_fresh_instances(client: &dyn McpClient) {
    assert_retries_run_fresh(client, &first_round(), confirm(true), assert_cleared);
}
