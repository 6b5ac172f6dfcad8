//! Tools written in Python with the Python guest SDK (guest-sdks/python),
//! built by `scripts/build-python-tools` into `<target>/python-tools/`, served
//! by the real binary: the plain `py_sha256` and the multi-round
//! `column_stats` flows to completion over HTTP and stdio, proof that no
//! module-level state survives from one round to the next, and the
//! resources, prompt (with a question) and completions of `py_notes`.
//!
//! A Python component is large (a CPython interpreter with a pre-initialised
//! heap, ~18 MB) and takes tens of seconds to compile, so these servers use
//! an on-disk cache of compiled components shared by every test (and kept
//! between runs) in `<target>/python-tools/cache`, warmed once per component.

use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;

use airlock_e2e::everything::{completion_params, prompt_params};
use airlock_e2e::flows::{assert_form, drive};
use airlock_e2e::mcp::{
    complete, elicit, error_code, error_message, input_request_keys, input_required, is_error,
    retry_params, text,
};
use airlock_e2e::paths::target_dir;
use airlock_e2e::{Airlock, McpClient, ToolCall, ToolsDir, all_caps, code, no_caps};
use ring::digest;
use serde_json::{Value, json};

/// The plain sample's component.
const HASH: &str = "py_hash";
/// The multi-round sample's component.
const COLUMN_STATS: &str = "py_column_stats";
/// The prompts, resources and completions sample's component.
const NOTES: &str = "py_notes";

/// A table with two numeric columns (`pop`, with an empty cell, and `area`).
const TABLE: &str = "city,pop,area\nAlpha,10,2.5\nBeta,20,3\nGamma,,4\n";

/// Where `scripts/build-python-tools` puts the components.
fn python_tools_dir() -> PathBuf {
    target_dir().join("python-tools")
}

/// The cache of compiled components these tests share.
fn cache_dir() -> PathBuf {
    python_tools_dir().join("cache")
}

/// A tools directory holding the built Python component `name`.
fn tools_with(name: &str) -> ToolsDir {
    let built = python_tools_dir().join(format!("{name}.wasm"));
    let bytes = fs::read(&built).unwrap_or_else(|e| {
        panic!(
            "the Python component {} is missing ({e}): run scripts/build-python-tools",
            built.display()
        )
    });
    let tools = ToolsDir::new();
    tools.add_bytes(&format!("{name}.wasm"), &bytes);
    tools
}

/// `airlock serve` on `tools`, with the shared cache of compiled components
/// (and tasks in memory: the cache directory is shared by parallel servers).
fn server(tools: &ToolsDir) -> Airlock {
    Airlock::new(tools)
        .with_cache()
        .arg("--cache-dir")
        .arg(cache_dir())
        .args(["--task-store", "memory"])
}

/// Components whose compiled artifact is known to be in the cache.
static WARMED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// A server for component `name`, compiled once per test run at most: the
/// first test to need it starts a server that fills the cache while the
/// others wait, so parallel tests do not each spend a core compiling.
fn python_server(name: &'static str) -> Airlock {
    let tools = tools_with(name);
    let mut warmed = WARMED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if warmed.is_empty() {
        prune_cache();
    }
    if !warmed.contains(&name) {
        drop(server(&tools).start_http());
        warmed.push(name);
    }
    server(&tools)
}

/// Removes the cache's artifacts of components that are no longer built
/// (`<SHA-256 of the .wasm>-<engine>.cwasm`): every rebuild of a sample
/// would otherwise leave a ~40 MB file behind.
fn prune_cache() {
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let built: Vec<String> = fs::read_dir(python_tools_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm"))
        .filter_map(|path| fs::read(path).ok())
        .map(|bytes| hex(digest::digest(&digest::SHA256, &bytes).as_ref()))
        .collect();
    for entry in fs::read_dir(cache_dir()).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".cwasm") && !built.iter().any(|hash| name.starts_with(hash.as_str())) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Defines, for each `name: COMPONENT => flow;`, a test `http::name` and
/// a test `stdio::name` running `flow` against a server of that Python
/// component (`flow`: a function of this module).
macro_rules! python_over_both_transports {
    ($($name:ident: $component:expr => $flow:ident;)*) => {
        mod http {
            use super::*;
            $(
                #[test]
                fn $name() {
                    let server = python_server($component).start_http();
                    super::$flow(&server.client());
                }
            )*
        }
        mod stdio {
            use super::*;
            $(
                #[test]
                fn $name() {
                    let server = python_server($component).start_stdio();
                    super::$flow(&server);
                }
            )*
        }
    };
}

python_over_both_transports! {
    sha256: HASH => sha256;
    lists_its_tool: COLUMN_STATS => lists_column_stats;
    column_chosen_by_the_user: COLUMN_STATS => column_chosen_by_the_user;
    column_given_by_the_model: COLUMN_STATS => column_given_by_the_model;
    answer_outside_the_offer_asks_again: COLUMN_STATS => answer_outside_the_offer_asks_again;
    question_declined: COLUMN_STATS => question_declined;
    client_without_forms_gets_the_choices: COLUMN_STATS => client_without_forms;
    retries_run_in_fresh_instances: COLUMN_STATS => retries_run_in_fresh_instances;
    notes_lists_resources_and_templates: NOTES => notes_lists;
    notes_reads_resources: NOTES => notes_reads;
    notes_prompt_asks_for_the_style: NOTES => notes_prompt_asks;
    notes_prompt_with_every_argument: NOTES => notes_prompt_direct;
    notes_prompt_refuses_an_unknown_note: NOTES => notes_prompt_unknown_note;
    notes_completes_ids: NOTES => notes_completes;
}

/// `py_sha256` of "abc" (the known SHA-256 test vector) and of "".
fn sha256(client: &dyn McpClient) {
    for (input, digest) in [
        (
            "abc",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        (
            "",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
    ] {
        let response = client.call(&ToolCall::new("py_sha256", json!({ "text": input })));
        let r = complete(&response);
        assert!(!is_error(r), "{response}");
        assert_eq!(text(r), digest, "{response}");
    }
    let response = client.call(&ToolCall::new("py_sha256", json!({ "text": 7 })));
    let r = complete(&response);
    assert!(is_error(r), "a number is not text: {response}");
    assert_eq!(text(r), "`text` must be a string", "{response}");
}

/// `tools/list` shows what the decorator declared.
fn lists_column_stats(client: &dyn McpClient) {
    let tools = client.list_all("tools/list", "tools");
    assert_eq!(tools.len(), 1, "{tools:?}");
    let tool = &tools[0];
    assert_eq!(tool["name"], "column_stats", "{tool}");
    assert_eq!(tool["title"], "Column statistics", "{tool}");
    assert_eq!(tool["inputSchema"]["required"], json!(["csv"]), "{tool}");
    assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    assert_eq!(tool["annotations"]["openWorldHint"], false, "{tool}");
}

/// The first call, without a column: the form offering the numeric columns.
fn first_round() -> ToolCall {
    ToolCall::new("column_stats", json!({ "csv": TABLE }))
}

/// An elicitation answer choosing `column`.
fn choose(column: &str) -> Value {
    json!({ "column": elicit("accept", Some(json!({ "column": column }))) })
}

/// Checks a complete, successful `column_stats` result for `area`.
#[track_caller]
fn assert_area_stats(response: &Value) {
    let r = complete(response);
    assert!(!is_error(r), "{response}");
    assert_eq!(
        text(r),
        "area: count 3, sum 9.5, min 2.5, max 4, mean 3.16667",
        "{response}"
    );
    let stats = &r["structuredContent"];
    assert_eq!(stats["column"], "area", "{response}");
    assert_eq!(stats["count"], 3, "{response}");
    assert_eq!(stats["max"], 4.0, "{response}");
    assert_eq!(
        stats["callsInThisInstance"], 1,
        "a module-level counter must start afresh in every round: {response}"
    );
}

/// Asked which column, the user picks `area`: two rounds, one question.
fn column_chosen_by_the_user(client: &dyn McpClient) {
    let mut questions = 0;
    let driven = drive(client, &first_round(), |r| {
        questions += 1;
        assert_eq!(input_request_keys(r), vec!["column".to_string()], "{r}");
        let req = assert_form(r, "column", "column", Some("string"));
        assert_eq!(
            req["params"]["requestedSchema"]["properties"]["column"]["enum"],
            json!(["pop", "area"]),
            "only the numeric columns are offered: {req}"
        );
        choose("area")
    });
    assert_eq!(questions, 1, "{driven:?}");
    assert_area_stats(driven.last());
}

/// With a numeric `column` argument nobody is asked.
fn column_given_by_the_model(client: &dyn McpClient) {
    let response = client.call(&ToolCall::new(
        "column_stats",
        json!({ "csv": TABLE, "column": "pop" }),
    ));
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
    assert_eq!(
        text(r),
        "pop: count 2, sum 30, min 10, max 20, mean 15",
        "{response}"
    );
    assert_eq!(
        r["structuredContent"]["callsInThisInstance"], 1,
        "{response}"
    );
}

/// An answer that was not offered (a text column) brings the question back;
/// the state still carries the offer, and a right answer then completes.
fn answer_outside_the_offer_asks_again(client: &dyn McpClient) {
    let call = first_round();
    let first = client.call(&call);
    let r1 = input_required(&first);
    let second = client.call(&call.retry(r1, choose("city")));
    let r2 = input_required(&second);
    assert_eq!(
        input_request_keys(r2),
        vec!["column".to_string()],
        "{second}"
    );
    assert_area_stats(&client.call(&call.retry(r2, choose("area"))));
}

/// Declining the question ends the call with an error result.
fn question_declined(client: &dyn McpClient) {
    let call = first_round();
    let first = client.call(&call);
    let r1 = input_required(&first);
    let response = client.call(&call.retry(r1, json!({ "column": elicit("decline", None) })));
    let r = complete(&response);
    assert!(is_error(r), "{response}");
    assert_eq!(text(r), "cancelled: no column was chosen", "{response}");
}

/// A client that cannot show forms is told the choices instead of asked.
fn client_without_forms(client: &dyn McpClient) {
    let response = client.call(&first_round().caps(no_caps()));
    let r = complete(&response);
    assert!(is_error(r), "{response}");
    assert_eq!(
        text(r),
        "say which column: `column` is one of pop, area",
        "{response}"
    );
}

/// The same second round sent three times (a client retrying it) and the
/// same first call made twice: every one runs in a fresh instance, so the
/// module-level counter the tool increments reads 1 each time.
fn retries_run_in_fresh_instances(client: &dyn McpClient) {
    let call = first_round();
    for _ in 0..2 {
        let again = client.call(&call);
        input_required(&again);
    }
    let first = client.call(&call);
    let second_round = call.retry(input_required(&first), choose("area"));
    for _ in 0..3 {
        assert_area_stats(&client.call(&second_round));
    }
    let direct = ToolCall::new("column_stats", json!({ "csv": TABLE, "column": "area" }));
    for _ in 0..3 {
        assert_area_stats(&client.call(&direct));
    }
}

/// The contents of a `resources/read` of `uri`: its one part.
#[track_caller]
fn read_one(client: &dyn McpClient, uri: &str) -> Value {
    let response = client.rpc("resources/read", json!({ "uri": uri }), no_caps());
    let parts = complete(&response)["contents"].clone();
    assert_eq!(
        parts.as_array().map(Vec::len),
        Some(1),
        "one part: {response}"
    );
    parts[0].clone()
}

/// The text of every message of a `prompts/get` result.
#[track_caller]
fn prompt_texts(response: &Value) -> Vec<String> {
    complete(response)["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("a prompt result has messages: {response}"))
        .iter()
        .map(|m| m["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The resource and the template the decorators declared, and no tools.
fn notes_lists(client: &dyn McpClient) {
    let resources = client.list_all("resources/list", "resources");
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0]["uri"], "notes://readme", "{resources:?}");
    assert_eq!(resources[0]["title"], "About the notebook", "{resources:?}");
    assert_eq!(resources[0]["mimeType"], "text/plain", "{resources:?}");
    let templates = client.list_all("resources/templates/list", "resourceTemplates");
    assert_eq!(templates.len(), 1, "{templates:?}");
    assert_eq!(
        templates[0]["uriTemplate"], "notes://note/{id}",
        "{templates:?}"
    );
    assert_eq!(templates[0]["name"], "note", "{templates:?}");
    let prompts = client.list_all("prompts/list", "prompts");
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0]["name"], "note_summary", "{prompts:?}");
    assert_eq!(
        prompts[0]["arguments"],
        json!([
            {"name": "id", "description": "The note's id.", "required": true},
            {"name": "style", "required": false}
        ]),
        "{prompts:?}"
    );
    assert!(client.tool_names().is_empty(), "py_notes has no tools");
}

/// A fixed resource and a templated one read as text; an unknown id is
/// not found (-32602).
fn notes_reads(client: &dyn McpClient) {
    assert_eq!(
        read_one(client, "notes://readme"),
        json!({
            "uri": "notes://readme",
            "mimeType": "text/plain",
            "text": "A notebook of 3 notes; read one at notes://note/{id}."
        })
    );
    assert_eq!(
        read_one(client, "notes://note/12"),
        json!({"uri": "notes://note/12", "mimeType": "text/plain", "text": "Call the plumber"})
    );
    let response = client.rpc(
        "resources/read",
        json!({ "uri": "notes://note/99" }),
        no_caps(),
    );
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
}

/// Without `style` the prompt asks for it; the retry (a fresh instance)
/// renders the prompt with the answer.
fn notes_prompt_asks(client: &dyn McpClient) {
    let params = prompt_params("note_summary", json!({ "id": "2" }), all_caps());
    let first = client.exchange("prompts/get", params.clone()).response;
    let asked = input_required(&first);
    let req = assert_form(asked, "style", "style", Some("string"));
    assert_eq!(
        req["params"]["requestedSchema"]["properties"]["style"]["enum"],
        json!(["brief", "detailed"]),
        "{first}"
    );
    let answer = json!({ "style": elicit("accept", Some(json!({ "style": "detailed" }))) });
    let second = client
        .exchange("prompts/get", retry_params(&params, asked, answer))
        .response;
    assert_eq!(
        complete(&second)["description"],
        "a detailed summary",
        "{second}"
    );
    assert_eq!(
        prompt_texts(&second),
        vec!["Summarise this note (detailed): Water the plants"],
        "{second}"
    );
}

/// With both arguments the prompt renders at once, as one user message.
fn notes_prompt_direct(client: &dyn McpClient) {
    let params = prompt_params(
        "note_summary",
        json!({ "id": "1", "style": "brief" }),
        no_caps(),
    );
    let response = client.exchange("prompts/get", params).response;
    assert_eq!(
        complete(&response)["messages"][0]["role"],
        "user",
        "{response}"
    );
    assert_eq!(
        prompt_texts(&response),
        vec!["Summarise this note (brief): Buy milk"],
        "{response}"
    );
}

/// `InvalidArguments` reaches the client as -32602 with its message.
fn notes_prompt_unknown_note(client: &dyn McpClient) {
    let params = prompt_params("note_summary", json!({ "id": "7" }), all_caps());
    let response = client.exchange("prompts/get", params).response;
    assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    assert!(
        error_message(&response).contains("no note with id '7'"),
        "{response}"
    );
}

/// The note id completes for the prompt and for the template.
fn notes_completes(client: &dyn McpClient) {
    for reference in [
        json!({"type": "ref/prompt", "name": "note_summary"}),
        json!({"type": "ref/resource", "uri": "notes://note/{id}"}),
    ] {
        let params = completion_params(reference.clone(), "id", "1");
        let response = client.exchange("completion/complete", params).response;
        let completion = &complete(&response)["completion"];
        assert_eq!(completion["values"], json!(["1", "12"]), "{response}");
        assert_eq!(completion["total"], 2, "{response}");
        assert_eq!(completion["hasMore"], false, "{response}");
    }
}
