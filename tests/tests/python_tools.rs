//! Tools written in Python with the Python guest SDK (guest-sdks/python),
//! built by `scripts/build-python-tools` into `<target>/python-tools/`, served
//! by the real binary: the plain `sha256` and the multi-round `column_stats`
//! flows to completion over HTTP and stdio, proof that no module-level state
//! survives from one round to the next, and the resources, prompt (with a
//! question) and completions of `py_notes`, and the MCP App (its `_meta.ui`
//! on the wire) and served skill of `py_bar_chart`. The servers share a cache
//! of compiled components (see `airlock_e2e::language_tools`).

use airlock_e2e::flows::{assert_form, drive};
use airlock_e2e::language_tools::{
    PYTHON, apps, assert_answer_ends_in_error, assert_error_result, assert_retries_run_fresh,
    notes, sha256,
};
use airlock_e2e::mcp::{complete, elicit, input_request_keys, input_required, is_error, text};
use airlock_e2e::{McpClient, ToolCall, language_over_both_transports, no_caps};
use serde_json::{Value, json};

/// The plain sample's component.
const HASH: &str = "py_hash";
/// The multi-round sample's component.
const COLUMN_STATS: &str = "py_column_stats";
/// The prompts, resources and completions sample's component.
const NOTES: &str = "py_notes";
/// The MCP App sample's component.
const BAR_CHART: &str = "py_bar_chart";

/// A table with two numeric columns (`pop`, with an empty cell, and `area`).
const TABLE: &str = "city,pop,area\nAlpha,10,2.5\nBeta,20,3\nGamma,,4\n";

/// `airlock inspect` tells an operator what the component needs: its size,
/// its initial memory (the interpreter's heap snapshot) and compile time.
#[test]
fn inspect_reports_size_memory_and_compile_time() {
    PYTHON.assert_inspect_reports_footprint(HASH);
}

language_over_both_transports! {
    PYTHON;
    sha256: HASH => sha256;
    lists_its_tool: COLUMN_STATS => lists_column_stats;
    column_chosen_by_the_user: COLUMN_STATS => column_chosen_by_the_user;
    column_given_by_the_model: COLUMN_STATS => column_given_by_the_model;
    answer_outside_the_offer_asks_again: COLUMN_STATS => answer_outside_the_offer_asks_again;
    question_declined: COLUMN_STATS => question_declined;
    client_without_forms_gets_the_choices: COLUMN_STATS => client_without_forms;
    retries_run_in_fresh_instances: COLUMN_STATS => retries_run_in_fresh_instances;
    notes_lists_resources_and_templates: NOTES => notes::lists;
    notes_reads_resources: NOTES => notes::reads;
    notes_prompt_asks_for_the_style: NOTES => notes::prompt_asks;
    notes_prompt_with_every_argument: NOTES => notes::prompt_direct;
    notes_prompt_refuses_an_unknown_note: NOTES => notes::prompt_unknown_note;
    notes_completes_ids: NOTES => notes::completes;
    bar_chart_app_and_skill_on_the_wire: BAR_CHART => apps::bar_chart;
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
    let declined = json!({ "column": elicit("decline", None) });
    assert_answer_ends_in_error(
        client,
        &first_round(),
        declined,
        "cancelled: no column was chosen",
    );
}

/// A client that cannot show forms is told the choices instead of asked.
fn client_without_forms(client: &dyn McpClient) {
    assert_error_result(
        &client.call(&first_round().caps(no_caps())),
        "say which column: `column` is one of pop, area",
    );
}

/// A first call made twice and its second round sent three times all run
/// in fresh instances; so do three calls that name the column at once.
fn retries_run_in_fresh_instances(client: &dyn McpClient) {
    assert_retries_run_fresh(client, &first_round(), choose("area"), assert_area_stats);
    let direct = ToolCall::new("column_stats", json!({ "csv": TABLE, "column": "area" }));
    for _ in 0..3 {
        assert_area_stats(&client.call(&direct));
    }
}
