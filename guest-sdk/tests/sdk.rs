//! Host-side tests of the SDK's plain-Rust parts, through a small tool.

use airlock_guest::types::{
    ElicitationRequest, IncludeContext, InputRequest, InputResponse, ToolChoice,
};
use airlock_guest::{
    Call, CallResult, ElicitationResponse, EmbeddedResource, Error, InputRequired, Outcome,
    ResourceLink, Root, SamplingRequest, SamplingResponse, Tool, Tools, json,
};
use serde::{Deserialize, Serialize};

struct Sample;

#[derive(Deserialize)]
struct Args {
    word: String,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Progress {
    seen: Vec<String>,
}

#[derive(Deserialize)]
struct Confirm {
    ok: bool,
}

impl Tools for Sample {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new("echo", "Echoes a word after confirmation.")
                .title("Echo")
                .input_schema(json!({
                    "type": "object",
                    "properties": { "word": { "type": "string" } },
                    "required": ["word"]
                }))
                .read_only()
                .idempotent(),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "echo" => echo(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

fn echo(call: &Call) -> Result<Outcome, Error> {
    let args: Args = call.args()?;
    match call.elicitation("confirm") {
        None => Ok(InputRequired::new()
            .elicit_form(
                "confirm",
                format!("Echo {}?", args.word),
                json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
            )
            .state(&Progress {
                seen: vec![args.word],
            })
            .into()),
        Some(answer) => match answer.accepted_content::<Confirm>() {
            Some(Confirm { ok: true }) => {
                let state: Progress = call.state().ok_or("state lost")?;
                Ok(Outcome::json(&state))
            }
            _ => Err(Error::new("not confirmed")),
        },
    }
}

airlock_guest::export!(Sample);

#[test]
fn tool_builder_sets_schema_and_hints() {
    let tools = Sample::list();
    let tool = &tools[0];
    assert_eq!(tool.name, "echo");
    assert_eq!(tool.title.as_deref(), Some("Echo"));
    let schema: serde_json::Value = serde_json::from_str(&tool.input_schema).unwrap();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"][0], "word");
    let hints = tool.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.idempotent_hint, Some(true));
    assert_eq!(hints.destructive_hint, None);

    let bare = Tool::new("bare", "No arguments.");
    let schema: serde_json::Value = serde_json::from_str(&bare.input_schema).unwrap();
    assert_eq!(
        schema,
        json!({"type": "object", "properties": {}, "required": []})
    );
}

#[test]
fn bad_arguments_become_an_error_result() {
    let outcome = Sample::call(Call::new("echo", r#"{"word": 3}"#));
    let result = outcome.result().expect("complete");
    assert!(result.is_error);
    assert!(result.text_content().starts_with("invalid arguments: "));
}

#[test]
fn unknown_tool_is_an_error_result() {
    let outcome = Sample::call(Call::new("nope", "{}"));
    assert_eq!(outcome, Outcome::error("unknown tool `nope`"));
}

#[test]
fn two_rounds_with_state_and_elicitation() {
    let first = Call::new("echo", r#"{"word": "hi"}"#);
    let outcome = Sample::call(first.clone());
    let asked = outcome.input_required().expect("input required");
    assert_eq!(asked.requests.len(), 1);
    match asked.requested("confirm") {
        Some(InputRequest::Elicitation(ElicitationRequest::Form(form))) => {
            assert_eq!(form.message, "Echo hi?");
        }
        other => panic!("unexpected request {other:?}"),
    }
    assert_eq!(asked.state.as_deref(), Some(&br#"{"seen":["hi"]}"#[..]));

    let accepted = first.retry(
        asked,
        [(
            "confirm",
            ElicitationResponse::accept(json!({"ok": true})).into(),
        )],
    );
    assert_eq!(accepted.round(), 2);
    let result = Sample::call(accepted);
    let result = result.result().expect("complete");
    assert!(!result.is_error);
    assert_eq!(result.text_content(), r#"{"seen":["hi"]}"#);
    assert_eq!(
        result.structured_content.as_deref(),
        Some(r#"{"seen":["hi"]}"#)
    );

    for answer in [
        ElicitationResponse::decline(),
        ElicitationResponse::cancel(),
        ElicitationResponse::accept(json!({"ok": false})),
    ] {
        let retry = first.retry(asked, [("confirm", answer.into())]);
        assert_eq!(Sample::call(retry), Outcome::error("not confirmed"));
    }
}

#[test]
fn answers_of_the_wrong_kind_are_ignored() {
    let call = Call::new("x", "{}").retry(
        &InputRequired::new(),
        [
            ("a", InputResponse::from(vec![Root::new("file:///w", None)])),
            ("b", SamplingResponse::text_reply("m", "hello").into()),
        ],
    );
    assert!(call.elicitation("a").is_none());
    assert_eq!(call.roots("a").map(<[Root]>::len), Some(1));
    assert!(call.roots("b").is_none());
    assert_eq!(
        call.sampling("b").map(SamplingResponse::text).as_deref(),
        Some("hello")
    );
    assert!(call.response("c").is_none());
    assert!(call.state::<Progress>().is_none());
}

#[test]
fn continuation_carries_state_only() {
    let outcome = Outcome::continue_with(&vec![1, 2, 3]);
    let asked = outcome.input_required().unwrap();
    assert!(asked.requests.is_empty());
    let next = Call::new("x", "{}").retry(asked, Vec::<(String, InputResponse)>::new());
    assert_eq!(next.state::<Vec<u32>>(), Some(vec![1, 2, 3]));
    assert_eq!(next.state_bytes(), Some(&b"[1,2,3]"[..]));
}

#[test]
fn sampling_builder_and_capabilities() {
    let request = SamplingRequest::new(200)
        .system_prompt("Be brief.")
        .user("Summarize this.")
        .model_hint("claude")
        .temperature(0.2)
        .stop_sequence("END")
        .metadata(json!({"k": 1}))
        .tool(Tool::new("lookup", "Looks things up."))
        .tool_choice(ToolChoice::Auto);
    assert_eq!(request.max_tokens, 200);
    assert_eq!(request.messages.len(), 1);
    assert_eq!(request.model_preferences.as_ref().unwrap().hints.len(), 1);
    assert_eq!(request.metadata.as_deref(), Some(r#"{"k":1}"#));

    let asked = InputRequired::new()
        .sample("with_tools", request)
        .sample("plain", SamplingRequest::new(10).user("hi"))
        .sample(
            "context",
            SamplingRequest::new(10).include_context(IncludeContext::ThisServer),
        )
        .elicit_url("url", "Sign in", "https://example.com")
        .list_roots("roots");
    assert_eq!(asked.requests.len(), 5);

    let mut client = airlock_guest::types::ClientCapabilities {
        sampling: true,
        ..Default::default()
    };
    let kept = asked.clone().retain_supported(&client);
    let keys: Vec<&str> = kept.requests.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["plain"]);

    client.sampling_tools = true;
    client.roots = true;
    assert!(client.can_sample_with_tools());
    assert!(!client.can_sample_with_context());
    let kept = asked.retain_supported(&client);
    let keys: Vec<&str> = kept.requests.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["with_tools", "plain", "roots"]);
}

#[test]
fn same_key_replaces_the_request() {
    let asked = InputRequired::new()
        .list_roots("k")
        .elicit_url("k", "m", "https://x");
    assert_eq!(asked.requests.len(), 1);
    assert!(matches!(
        asked.requested("k"),
        Some(InputRequest::Elicitation(ElicitationRequest::Url(_)))
    ));
}

#[test]
fn rich_results() {
    let result = CallResult::text("a")
        .with_image(vec![1, 2], "image/png")
        .with_audio(vec![3], "audio/wav")
        .with_resource_link(ResourceLink::new("file:///a", "a").mime_type("text/plain"))
        .with_resource(EmbeddedResource::text("file:///b", "b").mime_type("text/plain"))
        .with_text("c")
        .with_structured(&json!({"n": 1}));
    assert_eq!(result.content.len(), 6);
    assert_eq!(result.text_content(), "a\nc");
    assert_eq!(result.structured_content.as_deref(), Some(r#"{"n":1}"#));
    assert!(!result.is_error);
}

#[test]
fn results_convert_from_either_side() {
    let ok: Result<Outcome, Error> = Ok(Outcome::text("fine"));
    let err: Result<Outcome, Error> = Err(Error::new("broken"));
    assert_eq!(Outcome::from(ok), Outcome::text("fine"));
    assert_eq!(Outcome::from(err), Outcome::error("broken"));
}
