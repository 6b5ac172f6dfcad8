//! The tools of the 2025-11-25 leg that ask the client for something
//! (`tools-call-sampling`, `tools-call-elicitation`,
//! `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`).
//!
//! On that wire the server sends real `sampling/createMessage` and
//! `elicitation/create` requests. Here they are plain MRTR tools: round 1
//! returns the request, round 2 completes with the answer, and Airlock
//! bridges the two for clients of the older revision.

use airlock_guest::serde_json::Value;
use airlock_guest::types::ElicitationAction;
use airlock_guest::{
    Call, ElicitationResponse, Error, InputRequired, Outcome, SamplingRequest, json,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct PromptArgs {
    prompt: String,
}

/// `test_sampling {prompt}`: asks the client's model the prompt (key
/// `sampling`, 100 tokens), then returns its reply.
pub fn sampling(call: &Call) -> Result<Outcome, Error> {
    let PromptArgs { prompt } = call.args()?;
    Ok(match call.sampling("sampling") {
        Some(reply) => Outcome::text(format!("LLM response: {}", reply.text())),
        None => InputRequired::new()
            .sample("sampling", SamplingRequest::new(100).user(prompt))
            .into(),
    })
}

#[derive(Deserialize)]
struct MessageArgs {
    message: Option<String>,
}

/// `test_elicitation {message}`: asks the user for a `response` with the
/// given message (key `elicitation`), then reports the answer.
pub fn elicitation(call: &Call) -> Result<Outcome, Error> {
    let MessageArgs { message } = call.args()?;
    let message = message.unwrap_or_else(|| "Please provide your information".to_owned());
    let schema = json!({
        "type": "object",
        "properties": {
            "response": { "type": "string", "description": "User's response" }
        },
        "required": ["response"]
    });
    Ok(ask_or_report(call, "User response", &message, schema))
}

/// `test_elicitation_sep1034_defaults`: a form whose fields all have
/// defaults (SEP-1034).
pub fn defaults(call: &Call) -> Outcome {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        }
    });
    ask_or_report(
        call,
        "Elicitation completed",
        "Please review and update the form fields with defaults",
        schema,
    )
}

/// `test_elicitation_sep1330_enums`: a form with every kind of enum
/// (SEP-1330): untitled and titled single choice, the legacy `enumNames`,
/// untitled and titled multiple choice.
pub fn enums(call: &Call) -> Outcome {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ]
                }
            }
        }
    });
    ask_or_report(
        call,
        "Elicitation completed",
        "Please select options from the enum fields",
        schema,
    )
}

/// Asks for the form under key `elicitation` in round 1; reports the answer
/// as `<label>: action=<action>, content=<json>` once there is one.
fn ask_or_report(call: &Call, label: &str, message: &str, schema: Value) -> Outcome {
    match call.elicitation("elicitation") {
        Some(answer) => Outcome::text(format!("{label}: {}", describe(answer))),
        None => InputRequired::new()
            .elicit_form("elicitation", message, schema)
            .into(),
    }
}

/// `action=accept, content={…}`, or just the action when there is no
/// content.
fn describe(answer: &ElicitationResponse) -> String {
    let action = match answer.action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Decline => "decline",
        ElicitationAction::Cancel => "cancel",
    };
    match &answer.content {
        Some(content) => format!("action={action}, content={content}"),
        None => format!("action={action}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::types::{ElicitationRequest, InputRequest};
    use airlock_guest::{SamplingResponse, serde_json};

    fn requested_schema(outcome: &Outcome) -> (String, Value) {
        match outcome
            .input_required()
            .and_then(|a| a.requested("elicitation"))
        {
            Some(InputRequest::Elicitation(ElicitationRequest::Form(form))) => (
                form.message.clone(),
                serde_json::from_str(&form.requested_schema).unwrap(),
            ),
            other => panic!("no form: {other:?}"),
        }
    }

    #[test]
    fn sampling_sends_the_prompt_and_returns_the_reply() {
        let call = Call::new("test_sampling", r#"{"prompt": "Test prompt for sampling"}"#);
        let outcome = sampling(&call).unwrap();
        let asked = outcome.input_required().expect("asks the model");
        match asked.requested("sampling") {
            Some(InputRequest::Sampling(request)) => {
                assert_eq!(request.max_tokens, 100);
                assert_eq!(
                    request,
                    &SamplingRequest::new(100).user("Test prompt for sampling")
                );
            }
            other => panic!("unexpected request {other:?}"),
        }
        let reply = SamplingResponse::text_reply("test-model", "A reply.");
        let done = sampling(&call.retry(asked, [("sampling", reply.into())])).unwrap();
        assert_eq!(done, Outcome::text("LLM response: A reply."));

        assert!(sampling(&Call::new("test_sampling", "{}")).is_err());
    }

    #[test]
    fn elicitation_uses_the_message_and_reports_the_answer() {
        let call = Call::new(
            "test_elicitation",
            r#"{"message": "Please provide your information"}"#,
        );
        let outcome = elicitation(&call).unwrap();
        let (message, schema) = requested_schema(&outcome);
        assert_eq!(message, "Please provide your information");
        assert_eq!(schema["required"], json!(["response"]));

        let asked = outcome.input_required().unwrap();
        let accepted = call.retry(
            asked,
            [(
                "elicitation",
                ElicitationResponse::accept(json!({"response": "yes"})).into(),
            )],
        );
        assert_eq!(
            elicitation(&accepted).unwrap(),
            Outcome::text(r#"User response: action=accept, content={"response":"yes"}"#)
        );
        let declined = call.retry(
            asked,
            [("elicitation", ElicitationResponse::decline().into())],
        );
        assert_eq!(
            elicitation(&declined).unwrap(),
            Outcome::text("User response: action=decline")
        );
    }

    #[test]
    fn sep1034_fields_have_defaults() {
        let (message, schema) = requested_schema(&defaults(&Call::new("x", "{}")));
        assert_eq!(
            message,
            "Please review and update the form fields with defaults"
        );
        let p = &schema["properties"];
        assert_eq!(p["name"]["type"], "string");
        assert_eq!(p["name"]["default"], "John Doe");
        assert_eq!(p["age"]["type"], "integer");
        assert_eq!(p["age"]["default"], 30);
        assert_eq!(p["score"]["type"], "number");
        assert_eq!(p["score"]["default"], 95.5);
        assert_eq!(
            p["status"]["enum"],
            json!(["active", "inactive", "pending"])
        );
        assert_eq!(p["status"]["default"], "active");
        assert_eq!(p["verified"]["type"], "boolean");
        assert_eq!(p["verified"]["default"], true);
    }

    #[test]
    fn sep1330_has_every_kind_of_enum() {
        let (message, schema) = requested_schema(&enums(&Call::new("x", "{}")));
        assert_eq!(message, "Please select options from the enum fields");
        let p = &schema["properties"];

        let untitled = &p["untitledSingle"];
        assert_eq!(untitled["enum"], json!(["option1", "option2", "option3"]));
        assert!(untitled.get("oneOf").is_none() && untitled.get("enumNames").is_none());

        let titled = &p["titledSingle"];
        assert!(titled.get("enum").is_none());
        let one_of = titled["oneOf"].as_array().unwrap();
        assert_eq!(one_of.len(), 3);
        assert!(
            one_of
                .iter()
                .all(|o| o["const"].is_string() && o["title"].is_string())
        );

        let legacy = &p["legacyEnum"];
        assert_eq!(
            legacy["enum"].as_array().unwrap().len(),
            legacy["enumNames"].as_array().unwrap().len()
        );

        let multi = &p["untitledMulti"];
        assert_eq!(multi["type"], "array");
        assert_eq!(multi["items"]["type"], "string");
        assert!(multi["items"]["enum"].is_array());
        assert_eq!(
            (multi["minItems"].clone(), multi["maxItems"].clone()),
            (json!(1), json!(3))
        );

        let titled_multi = &p["titledMulti"];
        assert_eq!(titled_multi["type"], "array");
        let any_of = titled_multi["items"]["anyOf"].as_array().unwrap();
        assert!(
            any_of
                .iter()
                .all(|o| o["const"].is_string() && o["title"].is_string())
        );
    }
}
