//! Arguments checked before anything runs: a `tools/call` whose arguments
//! do not match the tool's input schema is an `isError` result naming the
//! violations (SEP-1303), on every round of a multi-round call, before a
//! task is made, in a 2025 session too; a prompt missing a required
//! argument is -32602.

use airlock::protocol::ProtocolSettings;
use airlock::registry::input_schema::ViolationLimits;
use airlock_e2e::legacy::assert_legacy_result;
use airlock_e2e::mcp::{
    complete, elicit, error_code, error_message, input_required, is_error, request_state,
    result_type, text,
};
use airlock_e2e::{McpClient, ToolCall, all_caps, code, no_caps};
use serde_json::{Value, json};

use crate::support::{Host, Setup};

/// The sentence that starts every refusal of `tool`'s arguments.
fn refusal(tool: &str) -> String {
    format!("Tool '{tool}' was not run: its arguments do not match its input schema: ")
}

/// Checks that `response` is a complete `isError` result refusing `tool`'s
/// arguments, whose violations are exactly `violations`.
#[track_caller]
fn assert_refused(response: &Value, tool: &str, violations: &str) {
    let result = complete(response);
    assert!(is_error(result), "{response}");
    assert_eq!(
        text(result),
        format!("{}{violations}", refusal(tool)),
        "{response}"
    );
    assert_eq!(
        result["content"].as_array().map(Vec::len),
        Some(1),
        "one text block: {response}"
    );
    assert!(result.get("structuredContent").is_none(), "{response}");
}

/// One call of each kind of violation, and one whose arguments match.
fn each_kind_of_violation(client: &dyn McpClient) {
    let cases = [
        (
            "count_rounds",
            json!({}),
            r#"(root): "rounds" is a required property"#,
        ),
        (
            "count_rounds",
            Value::Null,
            r#"(root): "rounds" is a required property"#,
        ),
        (
            "count_rounds",
            json!({"rounds": "two"}),
            r#"/rounds: the value is not of type "integer""#,
        ),
        (
            "count_rounds",
            json!({"rounds": 0}),
            "/rounds: the value is less than the minimum of 1",
        ),
        (
            "ask",
            json!({"kind": "telepathy"}),
            r#"/kind: the value is not one of "form", "url" or 3 other candidates"#,
        ),
        (
            "json_schema_2020_12_tool",
            json!({"name": "x", "email": "x@example.com", "nickname": "y"}),
            "(root): Additional properties are not allowed ('nickname' was unexpected)",
        ),
        (
            "json_schema_2020_12_tool",
            json!({"email": "x@example.com", "address": {"city": 7}}),
            r#"/address/city: the value is not of type "string""#,
        ),
    ];
    for (tool, arguments, violations) in cases {
        let response = client.call(&ToolCall::new(tool, arguments));
        assert_refused(&response, tool, violations);
    }
    let response = client.call(&ToolCall::new(
        "json_schema_2020_12_tool",
        json!({"contactMethod": "phone", "phone": "555"}),
    ));
    assert!(!is_error(complete(&response)), "{response}");
    let response = client.call(&ToolCall::new("count_rounds", json!({"rounds": 1})));
    assert_eq!(text(complete(&response)), "1", "{response}");
}

#[test]
fn each_kind_of_violation_is_an_error_result_naming_its_place_over_http() {
    let host = Host::start(&["probe", "everything"]);
    each_kind_of_violation(&host.http());
}

#[test]
fn a_lower_limit_names_fewer_violations() {
    let tool = "json_schema_2020_12_tool";
    let two_wrongs = json!({"email": "x@example.com", "address": {"city": 7}, "nickname": "y"});
    let violations = |host: &Host| {
        let response = host.http().call(&ToolCall::new(tool, two_wrongs.clone()));
        let result = complete(&response);
        assert!(is_error(result), "{response}");
        text(result)
            .strip_prefix(refusal(tool).as_str())
            .unwrap_or_else(|| panic!("a refusal: {response}"))
            .to_owned()
    };
    let both = violations(&Host::start(&["everything"]));
    assert_eq!(both.matches("; ").count(), 1, "{both}");
    assert!(!both.ends_with("; and more"), "{both}");
    let setup = Setup {
        protocol: ProtocolSettings {
            violations: ViolationLimits {
                named: 1,
                bytes: 1024,
            },
            ..ProtocolSettings::default()
        },
        ..Setup::default()
    };
    let one = violations(&Host::start_with(&["everything"], setup));
    assert_eq!(
        one,
        format!("{}; and more", both.split("; ").next().unwrap())
    );
}

#[test]
fn each_kind_of_violation_is_an_error_result_naming_its_place_over_stdio() {
    let host = Host::start(&["probe", "everything"]);
    each_kind_of_violation(&host.stdio());
}

#[test]
fn every_round_of_a_multi_round_call_is_checked() {
    let host = Host::start(&["deploy"]);
    let http = host.http();
    let call = ToolCall::new("confirm", json!({"action": "restart"}));
    let first = http.call(&call);
    let state = request_state(input_required(&first));
    let yes = json!({"confirm": elicit("accept", Some(json!({"ok": true})))});
    // A retry whose arguments no longer match is refused for them, before
    // its state is opened.
    for (arguments, violations) in [
        (json!({}), r#"(root): "action" is a required property"#),
        (
            json!({"action": ["restart"]}),
            r#"/action: the value is not of type "string""#,
        ),
    ] {
        let retry = ToolCall::new("confirm", arguments)
            .responses(yes.clone())
            .state(state.as_str());
        assert_refused(&http.call(&retry), "confirm", violations);
    }
    let done = http.call(&call.responses(yes).state(state.as_str()));
    assert_eq!(text(complete(&done)).trim(), "confirmed restart", "{done}");
}

#[test]
fn no_task_is_made_from_arguments_that_do_not_match() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let mut caps = all_caps();
    caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    let call = ToolCall::new("slow_compute", json!({"seconds": -1, "label": "x"})).caps(caps);
    let response = http.call(&call);
    assert_eq!(result_type(&response["result"]), "complete", "{response}");
    assert_refused(
        &response,
        "slow_compute",
        "/seconds: the value is less than the minimum of 0",
    );
}

#[test]
fn a_2025_session_gets_the_same_error_result() {
    let host = Host::start(&["probe"]);
    let http = host.http();
    let session = http.open_session(json!({}));
    let result = session.result(
        "tools/call",
        json!({"name": "count_rounds", "arguments": {"rounds": 0}}),
    );
    assert_legacy_result(&result);
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        text(&result),
        format!(
            "{}/rounds: the value is less than the minimum of 1",
            refusal("count_rounds")
        ),
        "{result}"
    );
}

/// `prompts/get` of `test_prompt_with_arguments` with `arguments`.
fn get_prompt(client: &dyn McpClient, arguments: Value) -> Value {
    client.rpc(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": arguments}),
        no_caps(),
    )
}

fn prompt_arguments(client: &dyn McpClient) {
    let missing = get_prompt(client, json!({"arg1": "a"}));
    assert_eq!(error_code(&missing), code::INVALID_PARAMS, "{missing}");
    assert_eq!(
        error_message(&missing),
        "Invalid params: prompt 'test_prompt_with_arguments' needs argument 'arg2'"
    );
    let not_text = get_prompt(client, json!({"arg1": "a", "arg2": 2}));
    assert_eq!(error_code(&not_text), code::INVALID_PARAMS, "{not_text}");
    let given = get_prompt(client, json!({"arg1": "a", "arg2": "b"}));
    let messages = &complete(&given)["messages"];
    assert!(
        messages.to_string().contains("arg2='b'"),
        "the prompt runs once its arguments are given: {given}"
    );
}

#[test]
fn a_prompt_missing_a_required_argument_is_invalid_params_over_both_transports() {
    let host = Host::start(&["everything"]);
    prompt_arguments(&host.http());
    prompt_arguments(&host.stdio());
}
