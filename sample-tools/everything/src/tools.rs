//! The tools, in the fixed order `tools/list` serves them, and the ones that
//! finish in one round.

use std::thread::sleep;
use std::time::Duration;

use airlock_guest::notify::{self, ListKind};
use airlock_guest::serde_json::{Map, Value};
use airlock_guest::{
    Call, CallResult, EmbeddedResource, Error, InputRequired, Outcome, SamplingRequest,
    TaskSupport, Tool, json, log, progress,
};
use serde::Deserialize;

use crate::{legacy, media, mrtr, tasks};

/// The schema of a tool without arguments, as the suite expects it.
fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A tool without arguments.
fn plain(name: &str, description: &str) -> Tool {
    Tool::new(name, description).input_schema(no_arguments())
}

/// Every tool. `test_simple_text` comes first: `http-header-validation`
/// calls the first listed tool with no arguments.
pub fn list() -> Vec<Tool> {
    vec![
        plain("test_simple_text", "Tests simple text content response"),
        plain("test_image_content", "Tests image content response"),
        plain("test_audio_content", "Tests audio content response"),
        plain(
            "test_embedded_resource",
            "Tests embedded resource content response",
        ),
        plain(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
        ),
        plain(
            "test_error_handling",
            "Tests error response handling (returns isError: true)",
        ),
        plain(
            "test_tool_with_progress",
            "Tests progress notifications: reports 0, 50 and 100 of 100",
        ),
        plain(
            "test_missing_capability",
            "Needs the client's sampling capability; answers Success when it is declared",
        ),
        plain(
            "test_streaming_elicitation",
            "Tests that a streamed tool result carries no server-to-client requests",
        ),
        plain(
            "test_logging_tool",
            "Tests that log messages are sent only when the client asks for them",
        ),
        plain(
            "test_trigger_tool_change",
            "Reports that the tool list changed (notifications/tools/list_changed)",
        ),
        plain(
            "test_trigger_prompt_change",
            "Reports that the prompt list changed (notifications/prompts/list_changed)",
        ),
        plain(
            "test_input_required_result_elicitation",
            "MRTR: asks for the user's name (elicitation, key user_name) and greets them",
        ),
        plain(
            "test_input_required_result_sampling",
            "MRTR: asks the client's model a question (sampling, key sample_request)",
        ),
        plain(
            "test_input_required_result_list_roots",
            "MRTR: asks for the client's roots (key roots_request) and counts them",
        ),
        plain(
            "test_input_required_result_request_state",
            "MRTR: asks for a confirmation and carries requestState to the next round",
        ),
        plain(
            "test_input_required_result_multiple_inputs",
            "MRTR: asks for a name, a greeting from the model and the roots at once",
        ),
        plain(
            "test_input_required_result_multi_round",
            "MRTR: asks for a name, then a favorite color, over three rounds",
        ),
        plain(
            "test_input_required_result_tampered_state",
            "MRTR: asks for a confirmation with integrity-protected requestState",
        ),
        plain(
            "test_input_required_result_capabilities",
            "MRTR: asks only for what the client declared it can answer",
        ),
        Tool::new(
            "json_schema_2020_12_tool",
            "Tool whose input schema uses JSON Schema 2020-12 keywords",
        )
        .input_schema(json_schema_2020_12()),
        Tool::new(
            "test_custom_header",
            "Echoes a region that clients mirror in the Mcp-Param-Region header",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "region": {
                    "type": "string",
                    "description": "The region to run in",
                    "x-mcp-header": "Region"
                }
            },
            "required": ["region"]
        })),
        plain(
            "test_tool_with_logging",
            "Logs three info messages about 50 ms apart while it runs",
        ),
        Tool::new(
            "test_sampling",
            "Asks the client's model to answer a prompt (sampling)",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The prompt to send to the model"}
            },
            "required": ["prompt"]
        })),
        Tool::new(
            "test_elicitation",
            "Asks the user for a response (form elicitation)",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "The message to show the user"}
            },
            "required": ["message"]
        })),
        plain(
            "test_elicitation_sep1034_defaults",
            "Asks the user for a form whose fields have default values (SEP-1034)",
        ),
        plain(
            "test_elicitation_sep1330_enums",
            "Asks the user for a form with every kind of enum field (SEP-1330)",
        ),
        Tool::new("greet", "Greets someone by name, at once (never a task)").input_schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Whom to greet"}},
            "required": ["name"]
        })),
        Tool::new(
            "slow_compute",
            "Works for the given number of seconds; runs as a task when the client uses tasks",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "seconds": {"type": "number", "minimum": 0, "description": "How long to work"},
                "label": {"type": "string", "description": "A name for the computation"}
            },
            "required": ["seconds", "label"]
        }))
        .task_support(TaskSupport::Optional),
        plain(
            "failing_job",
            "Task only: works about a second, then completes with isError: true",
        )
        .task_support(TaskSupport::Required),
        plain(
            "protocol_error_job",
            "Fails with JSON-RPC error -32603 (in its task when the client uses tasks)",
        )
        .task_support(TaskSupport::Optional),
        Tool::new(
            "confirm_delete",
            "Asks the user to confirm deleting a file (as a task when the client uses tasks); deletes nothing",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {"filename": {"type": "string", "description": "The file to delete"}},
            "required": ["filename"]
        }))
        .task_support(TaskSupport::Optional),
        plain(
            "multi_input",
            "Asks for a name and a favorite color at once (as a task when the client uses tasks)",
        )
        .task_support(TaskSupport::Optional),
        plain(
            "test_tool_with_task",
            "Task only: asks for the user's name (MRTR, key user_name), then greets them from a task",
        )
        .task_support(TaskSupport::Required),
    ]
}

/// The exact input schema `json-schema-2020-12` looks for.
pub fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"}
                }
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {
            "properties": {"contactMethod": {"const": "phone"}},
            "required": ["contactMethod"]
        },
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// Runs one round of a call.
pub fn call(call: &Call) -> Outcome {
    match call.name() {
        "test_simple_text" => Outcome::text("This is a simple text response for testing."),
        "test_image_content" => CallResult::new()
            .with_image(media::png(), "image/png")
            .into(),
        "test_audio_content" => CallResult::new()
            .with_audio(media::wav(), "audio/wav")
            .into(),
        "test_embedded_resource" => CallResult::new()
            .with_resource(
                EmbeddedResource::text(
                    "test://embedded-resource",
                    "This is an embedded resource content.",
                )
                .mime_type("text/plain"),
            )
            .into(),
        "test_multiple_content_types" => CallResult::text("Multiple content types test:")
            .with_image(media::png(), "image/png")
            .with_resource(
                EmbeddedResource::text(
                    "test://mixed-content-resource",
                    r#"{"test":"data","value":123}"#,
                )
                .mime_type("application/json"),
            )
            .into(),
        "test_error_handling" => {
            Outcome::error("This tool intentionally returns an error for testing")
        }
        "test_tool_with_progress" => with_progress(),
        "test_missing_capability" => missing_capability(call),
        "test_streaming_elicitation" => Outcome::text("Streaming complete"),
        "test_logging_tool" => {
            log::debug("test_logging_tool evaluated");
            Outcome::text("Logging evaluated")
        }
        "test_trigger_tool_change" => {
            notify::list_changed(ListKind::Tools);
            Outcome::text("Mutation triggered")
        }
        "test_trigger_prompt_change" => {
            notify::list_changed(ListKind::Prompts);
            Outcome::text("Mutation triggered")
        }
        "test_input_required_result_elicitation" => mrtr::elicitation(call),
        "test_input_required_result_sampling" => mrtr::sampling(call),
        "test_input_required_result_list_roots" => mrtr::list_roots(call),
        "test_input_required_result_request_state" => mrtr::request_state(call),
        "test_input_required_result_multiple_inputs" => mrtr::multiple_inputs(call),
        "test_input_required_result_multi_round" => mrtr::multi_round(call),
        "test_input_required_result_tampered_state" => mrtr::tampered_state(call),
        "test_input_required_result_capabilities" => mrtr::capabilities(call),
        "json_schema_2020_12_tool" => json_schema_tool(call).into(),
        "test_custom_header" => custom_header(call).into(),
        "test_tool_with_logging" => with_logging(),
        "test_sampling" => legacy::sampling(call).into(),
        "test_elicitation" => legacy::elicitation(call).into(),
        "test_elicitation_sep1034_defaults" => legacy::defaults(call),
        "test_elicitation_sep1330_enums" => legacy::enums(call),
        "greet" => tasks::greet(call).into(),
        "slow_compute" => tasks::slow_compute(call).into(),
        "failing_job" => tasks::failing_job(call),
        "protocol_error_job" => tasks::protocol_error_job(call),
        "confirm_delete" => tasks::confirm_delete(call).into(),
        "multi_input" => tasks::multi_input(call),
        "test_tool_with_task" => tasks::with_task(call),
        other => Outcome::unknown_tool(other),
    }
}

/// The pause between two progress reports or log messages.
const STEP: Duration = Duration::from_millis(50);

/// Reports 0, 50 and 100 of 100, about 50 ms apart. The host sends them as
/// `notifications/progress` with the request's token; the tool never sees
/// the token.
fn with_progress() -> Outcome {
    for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            sleep(STEP);
        }
        progress(
            done,
            Some(100.0),
            Some(&format!("Completed step {done} of 100")),
        );
    }
    Outcome::text("Progress complete")
}

/// Three info messages about 50 ms apart, then the result.
fn with_logging() -> Outcome {
    log::info("Tool execution started");
    sleep(STEP);
    log::info("Tool processing data");
    sleep(STEP);
    log::info("Tool execution completed");
    Outcome::text("Tool with logging completed")
}

/// `Success` when the client can sample; otherwise a sampling request, which
/// Airlock refuses with -32021 naming the missing `sampling` capability.
fn missing_capability(call: &Call) -> Outcome {
    if call.client().can_sample() {
        return Outcome::text("Success");
    }
    InputRequired::new()
        .sample(
            "capability_probe",
            SamplingRequest::new(10).user("Reply with one word."),
        )
        .into()
}

fn json_schema_tool(call: &Call) -> Result<Outcome, Error> {
    let arguments: Map<String, Value> = call.args()?;
    Ok(Outcome::text(format!(
        "json_schema_2020_12_tool received: {}",
        Value::Object(arguments)
    )))
}

#[derive(Deserialize)]
struct Region {
    region: String,
}

fn custom_header(call: &Call) -> Result<Outcome, Error> {
    let Region { region } = call.args()?;
    Ok(Outcome::text(format!("Region: {region}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Everything;
    use airlock_guest::types::{ClientCapabilities, MediaContent};
    use airlock_guest::types::{ContentBlock, InputRequest, ResourceBody};
    use airlock_guest::{Tools, serde_json};

    fn schema(tool: &Tool) -> Value {
        serde_json::from_str(&tool.input_schema).unwrap()
    }

    fn call_plain(name: &str) -> CallResult {
        <Everything as Tools>::call(Call::new(name, "{}"))
            .result()
            .cloned()
            .unwrap_or_else(|| panic!("{name} did not complete"))
    }

    #[test]
    fn tools_are_listed_in_a_fixed_order_with_descriptions() {
        let tools = <Everything as Tools>::list();
        assert_eq!(tools.len(), 34);
        assert_eq!(tools[0].name, "test_simple_text");
        assert_eq!(
            schema(&tools[0]),
            json!({"type": "object", "properties": {}})
        );
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            list().iter().map(|t| t.name.as_str()).collect::<Vec<_>>()
        );
        for (i, tool) in tools.iter().enumerate() {
            assert!(
                !tool.description.is_empty(),
                "{} has no description",
                tool.name
            );
            assert_eq!(schema(tool)["type"], "object", "{}", tool.name);
            assert!(
                !names[..i].contains(&tool.name.as_str()),
                "{} is listed twice",
                tool.name
            );
            assert!(tool.name.len() <= 64 && !tool.name.is_empty());
            assert!(
                tool.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            );
        }
        for name in [
            "test_missing_capability",
            "test_streaming_elicitation",
            "test_logging_tool",
            "test_trigger_tool_change",
            "test_trigger_prompt_change",
            "test_tool_with_logging",
            "test_sampling",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
        ] {
            assert!(names.contains(&name), "{name} is missing");
        }
        // Every listed tool is dispatched.
        for tool in &tools {
            let outcome = <Everything as Tools>::call(Call::new(&tool.name, "{}"));
            assert_ne!(
                outcome,
                Outcome::unknown_tool(&tool.name),
                "{} is not dispatched",
                tool.name
            );
        }
    }

    #[test]
    fn json_schema_tool_keeps_its_schema_exactly() {
        let tools = list();
        let tool = tools
            .iter()
            .find(|t| t.name == "json_schema_2020_12_tool")
            .unwrap();
        let expected: Value = serde_json::from_str(
            r##"{
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"}, "email": {"type": "string"}},
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }"##,
        )
        .unwrap();
        assert_eq!(schema(tool), expected);
        let outcome = call(&Call::new(
            "json_schema_2020_12_tool",
            r#"{"name": "x", "email": "x@example.com"}"#,
        ));
        assert!(
            outcome
                .result()
                .unwrap()
                .text_content()
                .contains("x@example.com")
        );
    }

    #[test]
    fn one_tool_mirrors_a_string_argument_in_a_header() {
        let tools = list();
        let mut annotated = Vec::new();
        for tool in &tools {
            let schema = schema(tool);
            for property in schema["properties"]
                .as_object()
                .into_iter()
                .flat_map(Map::values)
            {
                if property.get("x-mcp-header").is_some() {
                    annotated.push((tool.name.clone(), property.clone()));
                }
            }
        }
        assert_eq!(annotated.len(), 1);
        let (name, property) = &annotated[0];
        assert_eq!(name, "test_custom_header");
        assert_eq!(property["type"], "string");
        assert_eq!(property["x-mcp-header"], "Region");
        let outcome = call(&Call::new("test_custom_header", r#"{"region": "Hello"}"#));
        assert_eq!(outcome, Outcome::text("Region: Hello"));
    }

    #[test]
    fn content_tools() {
        assert_eq!(
            call_plain("test_simple_text").text_content(),
            "This is a simple text response for testing."
        );
        let png = media::png();
        assert_eq!(
            call_plain("test_image_content").content,
            [ContentBlock::image(png.clone(), "image/png")]
        );
        match &call_plain("test_audio_content").content[..] {
            [
                ContentBlock::Audio(MediaContent {
                    data, mime_type, ..
                }),
            ] => {
                assert_eq!(mime_type, "audio/wav");
                assert_eq!(data, &media::wav());
            }
            other => panic!("unexpected content {other:?}"),
        }
        match &call_plain("test_embedded_resource").content[..] {
            [ContentBlock::EmbeddedResource(resource)] => {
                assert_eq!(resource.contents.uri, "test://embedded-resource");
                assert_eq!(resource.contents.mime_type.as_deref(), Some("text/plain"));
                assert_eq!(
                    resource.contents.body,
                    ResourceBody::Text("This is an embedded resource content.".into())
                );
            }
            other => panic!("unexpected content {other:?}"),
        }
        let mixed = call_plain("test_multiple_content_types");
        assert_eq!(mixed.content.len(), 3);
        assert_eq!(mixed.text_content(), "Multiple content types test:");
        assert!(matches!(mixed.content[1], ContentBlock::Image(_)));
        match &mixed.content[2] {
            ContentBlock::EmbeddedResource(resource) => {
                assert_eq!(resource.contents.uri, "test://mixed-content-resource");
                assert_eq!(
                    resource.contents.mime_type.as_deref(),
                    Some("application/json")
                );
            }
            other => panic!("unexpected content {other:?}"),
        }
        let error = call_plain("test_error_handling");
        assert!(error.is_error);
        assert_eq!(
            error.text_content(),
            "This tool intentionally returns an error for testing"
        );
    }

    #[test]
    fn diagnostic_tools() {
        assert_eq!(
            call_plain("test_trigger_tool_change").text_content(),
            "Mutation triggered"
        );
        assert_eq!(
            call_plain("test_trigger_prompt_change").text_content(),
            "Mutation triggered"
        );
        assert!(!call_plain("test_streaming_elicitation").is_error);
        assert!(!call_plain("test_logging_tool").is_error);
        assert!(!call_plain("test_tool_with_progress").is_error);
        assert!(!call_plain("test_tool_with_logging").is_error);
    }

    #[test]
    fn missing_capability_asks_for_sampling_unless_declared() {
        let undeclared = call(&Call::new("test_missing_capability", "{}"));
        let asked = undeclared.input_required().expect("a sampling request");
        assert_eq!(asked.requests.len(), 1);
        assert!(matches!(asked.requests[0].1, InputRequest::Sampling(_)));

        let declared = Call::new("test_missing_capability", "{}").with_client(ClientCapabilities {
            sampling: true,
            ..Default::default()
        });
        assert_eq!(call(&declared), Outcome::text("Success"));
    }
}
