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

// ---------------------------------------------------------------------------
// Prompts, resources, completions and the shared round accessors
// ---------------------------------------------------------------------------

mod components {
    use airlock_guest::__private;
    use airlock_guest::notify::{self, ListKind};
    use airlock_guest::types::{
        ClientCapabilities, CompletionTarget, ContentBlock, ElicitationRequest, InputRequest,
        InputResponse, ResourceBody, Role, Round,
    };
    use airlock_guest::{
        Call, Completion, CompletionRequest, ElicitationResponse, EmbeddedResource, Error,
        InputRequired, Outcome, Prompt, PromptArgument, PromptMessage, PromptOutcome,
        PromptRequest, PromptResult, ReadOutcome, Resource, ResourceContents, ResourceLink,
        ResourceRead, ResourceTemplate, Root, SamplingResponse, json,
    };
    use serde::Deserialize;

    /// A round with one answer of each kind, state and some capabilities.
    fn busy_round() -> Round {
        Round {
            number: 3,
            responses: vec![
                (
                    "form".into(),
                    ElicitationResponse::accept(json!({"name": "Ada"})).into(),
                ),
                (
                    "model".into(),
                    SamplingResponse::text_reply("m", "hi").into(),
                ),
                (
                    "roots".into(),
                    vec![Root::new("file:///w", Some("w"))].into(),
                ),
            ],
            state: Some(br#"{"step":2}"#.to_vec()),
            client: ClientCapabilities {
                elicitation_form: true,
                roots: true,
                ..Default::default()
            },
            task: false,
        }
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Step {
        step: u32,
    }

    #[test]
    fn calls_prompts_and_reads_share_the_round_accessors() {
        let call = Call::from_parts("t".into(), "{}".into(), busy_round());
        let prompt = PromptRequest::from_parts("p".into(), Vec::new(), busy_round());
        let read = ResourceRead::from_parts("test://r".into(), None, busy_round());
        assert_eq!(call.inputs(), prompt.inputs());
        assert_eq!(prompt.inputs(), read.inputs());

        // The same accessors, through Deref, on all three.
        for inputs in [&*call, &*prompt, &*read] {
            assert_eq!(inputs.round(), 3);
            assert_eq!(inputs.round_info(), &busy_round());
            assert_eq!(inputs.state::<Step>(), Some(Step { step: 2 }));
            assert_eq!(inputs.state_bytes(), Some(&br#"{"step":2}"#[..]));
            assert!(inputs.elicitation("form").unwrap().is_accepted());
            assert!(inputs.elicitation("model").is_none());
            assert_eq!(inputs.sampling("model").unwrap().text(), "hi");
            assert_eq!(inputs.roots("roots").map(<[Root]>::len), Some(1));
            assert!(inputs.response("absent").is_none());
            assert!(inputs.client().can_elicit_form());
            assert!(!inputs.client().can_sample());
        }
        // Method syntax straight on the request types.
        assert_eq!(prompt.round(), 3);
        assert_eq!(
            read.client().can_list_roots(),
            call.client().can_list_roots()
        );
    }

    #[test]
    fn retries_work_the_same_for_prompts_and_reads() {
        let asked = InputRequired::new()
            .elicit_form("who", "Who?", json!({"type": "object"}))
            .state(&json!({"step": 1}));
        let answer = || {
            [(
                "who",
                InputResponse::from(ElicitationResponse::accept(json!({"name": "Ada"}))),
            )]
        };
        let prompt = PromptRequest::new("p")
            .with_argument("a", "1")
            .with_client(ClientCapabilities::all());
        let retried = prompt.retry(&asked, answer());
        assert_eq!(retried.round(), 2);
        assert_eq!(retried.name(), "p");
        assert_eq!(retried.argument("a"), Some("1"));
        assert_eq!(retried.state::<Step>(), Some(Step { step: 1 }));
        assert!(retried.elicitation("who").is_some());
        assert!(retried.client().can_sample());

        let read = ResourceRead::new("test://x").with_template("test://{id}", [("id", "x")]);
        let retried = read.retry(&asked, answer());
        assert_eq!(retried.round(), 2);
        assert_eq!(retried.uri(), "test://x");
        assert_eq!(retried.variable("id"), Some("x"));
        assert_eq!(retried.state_bytes(), asked.state.as_deref());

        let reset = retried.with_round(Round::default());
        assert_eq!(reset.round(), 1);
        assert!(reset.state_bytes().is_none());
    }

    #[test]
    fn input_required_converts_into_every_outcome() {
        let asked = InputRequired::new().list_roots("roots");
        assert_eq!(Outcome::from(asked.clone()).input_required(), Some(&asked));
        assert_eq!(
            PromptOutcome::from(asked.clone()).input_required(),
            Some(&asked)
        );
        assert_eq!(
            ReadOutcome::from(asked.clone()).input_required(),
            Some(&asked)
        );
        assert!(PromptOutcome::from(asked.clone()).result().is_none());
        assert!(ReadOutcome::from(asked).contents().is_none());
    }

    #[derive(Deserialize, Debug)]
    struct Greeting {
        name: String,
        #[serde(default)]
        style: Option<String>,
    }

    #[test]
    fn prompt_requests_give_their_arguments() {
        let request = PromptRequest::new("greet")
            .with_argument("name", "Ada")
            .with_argument("style", "formal");
        assert_eq!(request.name(), "greet");
        assert_eq!(request.argument("name"), Some("Ada"));
        assert_eq!(request.argument("nope"), None);
        assert_eq!(request.arguments().len(), 2);
        let args: Greeting = request.args().unwrap();
        assert_eq!(
            (args.name.as_str(), args.style.as_deref()),
            ("Ada", Some("formal"))
        );

        // A bad shape is a -32602 for the client, through `?` and `.into()`.
        let missing: Result<Greeting, Error> = PromptRequest::new("greet").args();
        let err = missing.unwrap_err();
        assert!(err.message().starts_with("invalid arguments: "));
        let outcome: PromptOutcome = Err::<PromptOutcome, Error>(err.clone()).into();
        assert_eq!(
            outcome,
            PromptOutcome::InvalidArguments(err.message().into())
        );
        let ok: PromptOutcome = Ok::<PromptOutcome, Error>(PromptOutcome::text("x")).into();
        assert_eq!(ok.result().unwrap().text_content(), "x");
    }

    #[test]
    fn prompt_builders() {
        let prompt = Prompt::new("review", "Reviews code.")
            .title("Review")
            .required_argument("code", "The code.")
            .argument("focus", "What to look at.")
            .with_argument(PromptArgument::new("lang").title("Language").required());
        assert_eq!(prompt.title.as_deref(), Some("Review"));
        let args: Vec<(&str, bool, Option<&str>)> = prompt
            .arguments
            .iter()
            .map(|a| (a.name.as_str(), a.required, a.description.as_deref()))
            .collect();
        assert_eq!(
            args,
            [
                ("code", true, Some("The code.")),
                ("focus", false, Some("What to look at.")),
                ("lang", true, None)
            ]
        );
        assert_eq!(prompt.arguments[2].title.as_deref(), Some("Language"));
        assert!(Prompt::new("bare", "No arguments.").arguments.is_empty());

        let result = PromptResult::new()
            .description("A review")
            .user("Review this:")
            .user(ResourceContents::text("file:///a.rs", "fn main() {}").mime_type("text/x-rust"))
            .user(ContentBlock::image(vec![1, 2], "image/png"))
            .user(ResourceLink::new("file:///b.rs", "b.rs"))
            .assistant(String::from("Looks fine."))
            .message(PromptMessage::assistant(EmbeddedResource::text(
                "file:///c",
                "c",
            )));
        assert_eq!(result.description.as_deref(), Some("A review"));
        assert_eq!(result.messages.len(), 6);
        assert_eq!(result.text_content(), "Review this:\nLooks fine.");
        let roles: Vec<Role> = result.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::User,
                Role::User,
                Role::User,
                Role::Assistant,
                Role::Assistant
            ]
        );
        match &result.messages[1].content {
            ContentBlock::EmbeddedResource(embedded) => {
                assert_eq!(embedded.contents.uri, "file:///a.rs");
                assert_eq!(embedded.contents.mime_type.as_deref(), Some("text/x-rust"));
                assert!(embedded.annotations.is_none());
            }
            other => panic!("unexpected content {other:?}"),
        }
        assert!(matches!(
            result.messages[3].content,
            ContentBlock::ResourceLink(_)
        ));

        assert_eq!(
            PromptOutcome::text("hi"),
            PromptOutcome::Complete(PromptResult {
                description: None,
                messages: vec![PromptMessage::user("hi")],
            })
        );
        assert_eq!(
            PromptOutcome::unknown_prompt("x"),
            PromptOutcome::InvalidArguments("unknown prompt `x`".into())
        );
    }

    #[test]
    fn resource_builders() {
        let resource = Resource::new("test://a", "a")
            .title("A")
            .description("The A.")
            .mime_type("text/plain")
            .size(12);
        assert_eq!(
            (
                resource.uri.as_str(),
                resource.name.as_str(),
                resource.title.as_deref(),
                resource.description.as_deref(),
                resource.mime_type.as_deref(),
                resource.size,
            ),
            (
                "test://a",
                "a",
                Some("A"),
                Some("The A."),
                Some("text/plain"),
                Some(12)
            )
        );
        let template = ResourceTemplate::new("test://n/{id}", "notes")
            .description("Notes.")
            .mime_type("text/markdown");
        assert_eq!(template.uri_template, "test://n/{id}");
        assert_eq!(template.mime_type.as_deref(), Some("text/markdown"));
        assert!(template.title.is_none());

        let text = ResourceContents::text("test://a", "hello").mime_type("text/plain");
        assert_eq!(text.as_text(), Some("hello"));
        assert_eq!(text.as_blob(), None);
        let blob = ResourceContents::blob("test://b", vec![0, 1]);
        assert_eq!(blob.body, ResourceBody::Blob(vec![0, 1]));
        assert_eq!(blob.as_blob(), Some(&[0u8, 1][..]));
        assert!(blob.mime_type.is_none());

        assert_eq!(
            ReadOutcome::from(text.clone()),
            ReadOutcome::Complete(vec![text.clone()])
        );
        assert_eq!(
            ReadOutcome::from(vec![text.clone(), blob.clone()])
                .contents()
                .map(<[_]>::len),
            Some(2)
        );
        assert!(ReadOutcome::from(None::<ResourceContents>).is_not_found());
        assert_eq!(
            ReadOutcome::from(Some(blob.clone())).contents(),
            Some(&[blob][..])
        );
    }

    #[test]
    fn resource_reads_give_uri_template_and_variables() {
        let listed = ResourceRead::new("test://a");
        assert_eq!(listed.uri(), "test://a");
        assert_eq!(listed.template(), None);
        assert_eq!(listed.variable("id"), None);
        assert!(listed.template_match().is_none());
        assert_eq!(listed.round(), 1);

        let matched = ResourceRead::new("test://n/7/x")
            .with_template("test://n/{id}/{part}", [("id", "7"), ("part", "x")]);
        assert_eq!(matched.template(), Some("test://n/{id}/{part}"));
        assert_eq!(matched.variable("id"), Some("7"));
        assert_eq!(matched.variable("part"), Some("x"));
        assert_eq!(matched.variable("other"), None);
        assert_eq!(matched.template_match().unwrap().variables.len(), 2);
    }

    #[test]
    fn completions_are_capped_and_filtered() {
        let many = Completion::new((0..150).map(|i| i.to_string()));
        assert_eq!(many.values.len(), airlock_guest::MAX_COMPLETION_VALUES);
        assert_eq!(many.values[99], "99");
        assert_eq!(many.total, Some(150));
        assert!(many.has_more);

        let exact = Completion::new((0..100).map(|i| i.to_string()));
        assert_eq!(
            (exact.values.len(), exact.total, exact.has_more),
            (100, Some(100), false)
        );

        let empty = Completion::default();
        assert_eq!(empty, Completion::empty());
        assert_eq!(
            (empty.values.len(), empty.total, empty.has_more),
            (0, Some(0), false)
        );

        let matched = Completion::matching(["Python", "perl", "Rust", "PHP"], "P");
        assert_eq!(matched.values, ["Python", "perl", "PHP"]);
        assert_eq!(Completion::matching(["a", "b"], "").values, ["a", "b"]);

        let request =
            CompletionRequest::for_prompt("review", "lang", "Py").with_context("code", "x");
        assert_eq!(request.prompt(), Some("review"));
        assert_eq!(request.template(), None);
        assert_eq!(request.argument(), "lang");
        assert_eq!(request.value(), "Py");
        assert_eq!(request.context_value("code"), Some("x"));
        assert_eq!(request.context_value("lang"), None);
        let request = CompletionRequest::for_template("test://n/{id}", "id", "");
        assert_eq!(
            request.target,
            CompletionTarget::ResourceTemplate("test://n/{id}".into())
        );
        assert_eq!(request.template(), Some("test://n/{id}"));
        assert_eq!(request.prompt(), None);
    }

    #[test]
    fn export_glue_builds_the_requests() {
        struct Echo;
        impl airlock_guest::Prompts for Echo {
            fn list() -> Vec<Prompt> {
                vec![Prompt::new("echo", "Echoes.")]
            }
            fn get(request: PromptRequest) -> PromptOutcome {
                PromptOutcome::text(format!(
                    "{} {} {}",
                    request.name(),
                    request.argument("a").unwrap_or("-"),
                    request.round()
                ))
            }
        }
        impl airlock_guest::Resources for Echo {
            fn read(read: ResourceRead) -> ReadOutcome {
                let text = format!("{:?} {:?}", read.template(), read.variable("id"));
                ResourceContents::text(read.uri(), text).into()
            }
        }
        let round = Round {
            number: 2,
            ..Round::default()
        };
        let outcome =
            __private::get_prompt::<Echo>("echo".into(), vec![("a".into(), "b".into())], round);
        assert_eq!(outcome.result().unwrap().text_content(), "echo b 2");
        // `Resources` lists nothing unless told.
        assert!(__private::list_resources::<Echo>().is_empty());
        assert!(__private::list_resource_templates::<Echo>().is_empty());
        let template = airlock_guest::types::TemplateMatch {
            uri_template: "test://{id}".into(),
            variables: vec![("id".into(), "7".into())],
        };
        let read =
            __private::read_resource::<Echo>("test://7".into(), Some(template), Round::default());
        assert_eq!(
            read.contents().unwrap()[0].as_text(),
            Some(r#"Some("test://{id}") Some("7")"#)
        );
    }

    #[test]
    fn notifications_off_wasm_only_print() {
        // Off WebAssembly these print to stderr; they must not need the host.
        notify::list_changed(ListKind::Tools);
        notify::list_changed(ListKind::Prompts);
        notify::list_changed(ListKind::Resources);
        notify::resource_updated("test://watched-resource");
        notify::resource_updated(String::from("test://other"));
    }

    #[test]
    fn prompt_input_required_round_trip() {
        // A prompt asking for a form, answered on the retry, like a tool.
        fn get(request: &PromptRequest) -> PromptOutcome {
            match request
                .elicitation("topic")
                .and_then(|a| a.accepted_content::<serde_json::Value>())
            {
                Some(form) => PromptOutcome::text(format!("About {}", form["topic"])),
                None => InputRequired::new()
                    .elicit_form("topic", "Which topic?", json!({"type": "object"}))
                    .into(),
            }
        }
        let first = PromptRequest::new("p");
        let outcome = get(&first);
        let asked = outcome.input_required().unwrap();
        assert!(matches!(
            asked.requested("topic"),
            Some(InputRequest::Elicitation(ElicitationRequest::Form(_)))
        ));
        let answer = ElicitationResponse::accept(json!({"topic": "tides"}));
        let done = get(&first.retry(asked, [("topic", answer.into())]));
        assert_eq!(done.result().unwrap().text_content(), r#"About "tides""#);
    }
}
