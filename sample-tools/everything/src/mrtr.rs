//! The multi-round tools of the `input-required-result-*` scenarios
//! (SEP-2322). Every round runs in a fresh instance: a tool rebuilds what it
//! knows from this round's answers and the state it returned last round.

use airlock_guest::serde_json::Value;
use airlock_guest::{Call, InputRequired, Outcome, SamplingRequest, json};
use serde::{Deserialize, Serialize};

/// A form with one required string property `property`.
pub fn string_form(property: &str) -> Value {
    json!({
        "type": "object",
        "properties": { property: { "type": "string" } },
        "required": [property]
    })
}

/// The confirmation form: `{ok: boolean}`.
fn confirm_form() -> Value {
    json!({
        "type": "object",
        "properties": { "ok": { "type": "boolean" } },
        "required": ["ok"]
    })
}

#[derive(Deserialize)]
struct NameForm {
    name: String,
}

#[derive(Deserialize)]
struct ColorForm {
    color: String,
}

#[derive(Deserialize)]
struct ConfirmForm {
    ok: bool,
}

/// The user's name, if the elicitation under `key` is an accepted form with
/// a string `name`.
pub fn answered_name(call: &Call, key: &str) -> Option<String> {
    call.elicitation(key)?
        .accepted_content::<NameForm>()
        .map(|form| form.name)
}

/// Whether the elicitation under `confirm` is an accepted `{ok: true}`.
fn confirmed(call: &Call) -> bool {
    call.elicitation("confirm")
        .and_then(|answer| answer.accepted_content::<ConfirmForm>())
        .is_some_and(|form| form.ok)
}

/// `test_input_required_result_elicitation`: greets the user once
/// `user_name` holds an accepted form with a name. No state: any other
/// answer (or none, or only unrelated keys) asks again.
pub fn elicitation(call: &Call) -> Outcome {
    match answered_name(call, "user_name") {
        Some(name) => Outcome::text(format!("Hello, {name}!")),
        None => InputRequired::new()
            .elicit_form("user_name", "What is your name?", string_form("name"))
            .into(),
    }
}

/// `test_input_required_result_sampling`: asks the model under
/// `sample_request`.
pub fn sampling(call: &Call) -> Outcome {
    match call.sampling("sample_request") {
        Some(reply) => Outcome::text(format!("Sampling result: {}", reply.text())),
        None => InputRequired::new()
            .sample(
                "sample_request",
                SamplingRequest::new(100).user("What is the capital of France?"),
            )
            .into(),
    }
}

/// `test_input_required_result_list_roots`: asks for the roots under
/// `roots_request`.
pub fn list_roots(call: &Call) -> Outcome {
    match call.roots("roots_request") {
        Some(roots) => Outcome::text(format!("Found {} root(s)", roots.len())),
        None => InputRequired::new().list_roots("roots_request").into(),
    }
}

/// The state of the confirmation tools: which tool wrote it.
#[derive(Serialize, Deserialize, PartialEq)]
struct Confirmation {
    kind: String,
}

/// Asks for `confirm` with a state naming `kind`, and completes with `done`
/// once the state is back and the answer is `{ok: true}`.
fn confirmation(call: &Call, kind: &str, done: &str) -> Outcome {
    let state_ok = call
        .state::<Confirmation>()
        .is_some_and(|state| state.kind == kind);
    if state_ok && call.elicitation("confirm").is_some() {
        return if confirmed(call) {
            Outcome::text(done)
        } else {
            Outcome::error("Not confirmed")
        };
    }
    InputRequired::new()
        .elicit_form("confirm", "Please confirm", confirm_form())
        .state(&Confirmation {
            kind: kind.to_owned(),
        })
        .into()
}

/// `test_input_required_result_request_state`: the answer completes only
/// with the state of round 1.
pub fn request_state(call: &Call) -> Outcome {
    confirmation(call, "request-state", "state-ok: requestState validated")
}

/// `test_input_required_result_tampered_state`: like `request_state`; the
/// host rejects a tampered state before the tool runs.
pub fn tampered_state(call: &Call) -> Outcome {
    confirmation(call, "tamper-test", "integrity-ok: state verified")
}

/// What `test_input_required_result_multiple_inputs` has learned so far.
#[derive(Default, Serialize, Deserialize)]
struct Gathered {
    name: Option<String>,
    greeting: Option<String>,
    roots: Option<usize>,
}

/// `test_input_required_result_multiple_inputs`: asks for a name
/// (`user_name`), a greeting from the model (`greeting`) and the roots
/// (`client_roots`) at once, carrying what it has in the state, and asks
/// again for whatever is still missing.
pub fn multiple_inputs(call: &Call) -> Outcome {
    let mut gathered: Gathered = call.state().unwrap_or_default();
    if let Some(name) = answered_name(call, "user_name") {
        gathered.name = Some(name);
    }
    if let Some(reply) = call.sampling("greeting") {
        gathered.greeting = Some(reply.text());
    }
    if let Some(roots) = call.roots("client_roots") {
        gathered.roots = Some(roots.len());
    }
    if let Gathered {
        name: Some(name),
        greeting: Some(greeting),
        roots: Some(roots),
    } = &gathered
    {
        return Outcome::text(format!(
            "Name: {name}; Greeting: {greeting}; Roots: {roots}"
        ));
    }

    let mut asked = InputRequired::new();
    if gathered.name.is_none() {
        asked = asked.elicit_form("user_name", "What is your name?", string_form("name"));
    }
    if gathered.greeting.is_none() {
        asked = asked.sample(
            "greeting",
            SamplingRequest::new(50).user("Generate a greeting"),
        );
    }
    if gathered.roots.is_none() {
        asked = asked.list_roots("client_roots");
    }
    asked.state(&gathered).into()
}

/// The state of `test_input_required_result_multi_round`.
#[derive(Serialize, Deserialize)]
struct Step {
    round: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

/// `test_input_required_result_multi_round`: the name (`step1`), then the
/// favorite color (`step2`), then the result. A missing or unexpected state
/// or answer starts over at step 1.
pub fn multi_round(call: &Call) -> Outcome {
    match call.state::<Step>() {
        Some(Step { round: 1, .. }) => {
            if let Some(name) = answered_name(call, "step1") {
                return ask_color(name);
            }
        }
        Some(Step {
            round: 2,
            name: Some(name),
        }) => {
            let color = call
                .elicitation("step2")
                .and_then(|answer| answer.accepted_content::<ColorForm>());
            if let Some(ColorForm { color }) = color {
                return Outcome::text(format!("Multi-round complete for {name} who likes {color}"));
            }
        }
        _ => {}
    }
    InputRequired::new()
        .elicit_form("step1", "Step 1: What is your name?", string_form("name"))
        .state(&Step {
            round: 1,
            name: None,
        })
        .into()
}

fn ask_color(name: String) -> Outcome {
    InputRequired::new()
        .elicit_form(
            "step2",
            "Step 2: What is your favorite color?",
            string_form("color"),
        )
        .state(&Step {
            round: 2,
            name: Some(name),
        })
        .into()
}

/// `test_input_required_result_capabilities`: asks only for what the client
/// declared: a form (`elicit_input`) if it can elicit, a completion
/// (`sample_input`) if it can sample. Completes once any of them is
/// answered, or at once when the client declared neither.
pub fn capabilities(call: &Call) -> Outcome {
    let mut received = Vec::new();
    if call.elicitation("elicit_input").is_some() {
        received.push("elicit_input");
    }
    if call.sampling("sample_input").is_some() {
        received.push("sample_input");
    }
    if !received.is_empty() {
        return Outcome::text(format!("capabilities-ok: received {}", received.join(", ")));
    }

    let client = call.client();
    let mut asked = InputRequired::new();
    if client.can_elicit_form() {
        asked = asked.elicit_form("elicit_input", "Please provide input", string_form("input"));
    }
    if client.can_sample() {
        asked = asked.sample(
            "sample_input",
            SamplingRequest::new(50).user("Sample request"),
        );
    }
    if asked.requests.is_empty() {
        return Outcome::text("No supported capabilities declared");
    }
    asked
        .state(&Confirmation {
            kind: "capabilities-test".to_owned(),
        })
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::types::{
        ClientCapabilities, ElicitationRequest, InputRequest, InputResponse,
    };
    use airlock_guest::{ElicitationResponse, Root, SamplingResponse};

    fn first(name: &str) -> (Call, InputRequired) {
        let call = Call::new(name, "{}").with_client(ClientCapabilities::all());
        let asked = crate::tools::call(&call)
            .input_required()
            .cloned()
            .unwrap_or_else(|| panic!("{name} did not ask"));
        (call, asked)
    }

    fn keys(asked: &InputRequired) -> Vec<&str> {
        asked.requests.iter().map(|(k, _)| k.as_str()).collect()
    }

    fn form_message(asked: &InputRequired, key: &str) -> String {
        match asked.requested(key) {
            Some(InputRequest::Elicitation(ElicitationRequest::Form(form))) => form.message.clone(),
            other => panic!("no form under {key}: {other:?}"),
        }
    }

    fn accept(content: Value) -> InputResponse {
        ElicitationResponse::accept(content).into()
    }

    fn run(call: Call) -> Outcome {
        crate::tools::call(&call)
    }

    #[test]
    fn elicitation_asks_without_state_and_greets_a_valid_answer() {
        let (call, asked) = first("test_input_required_result_elicitation");
        assert_eq!(keys(&asked), ["user_name"]);
        assert_eq!(form_message(&asked, "user_name"), "What is your name?");
        assert!(asked.state.is_none());

        // The answer alone completes it: no requestState needed, extra keys ignored.
        let answered = call.retry(
            &asked,
            [
                ("user_name", accept(json!({"name": "Alice"}))),
                ("unknown_extra_key", accept(json!({"foo": "bar"}))),
                ("another_unexpected", accept(json!({"baz": 123}))),
            ],
        );
        assert_eq!(run(answered), Outcome::text("Hello, Alice!"));
    }

    #[test]
    fn elicitation_asks_again_for_anything_but_a_valid_answer() {
        let (call, asked) = first("test_input_required_result_elicitation");
        let wrong: [(&str, InputResponse); 6] = [
            ("wrong_key", accept(json!({"data": "wrong"}))),
            ("user_name", accept(json!({"data": "wrong"}))),
            ("user_name", accept(json!({"name": 12345}))),
            ("user_name", ElicitationResponse::decline().into()),
            ("user_name", ElicitationResponse::cancel().into()),
            (
                "user_name",
                SamplingResponse::text_reply("m", "Alice").into(),
            ),
        ];
        for answer in wrong {
            let retry = call.retry(&asked, [answer]);
            let again = run(retry);
            let again = again.input_required().expect("asked again");
            assert_eq!(keys(again), ["user_name"]);
        }
    }

    #[test]
    fn sampling_and_roots_complete_with_the_answers() {
        let (call, asked) = first("test_input_required_result_sampling");
        assert_eq!(keys(&asked), ["sample_request"]);
        let reply = SamplingResponse::text_reply("test-model", "The capital of France is Paris.");
        assert_eq!(
            run(call.retry(&asked, [("sample_request", reply.into())])),
            Outcome::text("Sampling result: The capital of France is Paris.")
        );

        let (call, asked) = first("test_input_required_result_list_roots");
        assert_eq!(asked.requested("roots_request"), Some(&InputRequest::Roots));
        let roots = vec![Root::new("file:///test/root", Some("Test Root"))];
        assert_eq!(
            run(call.retry(&asked, [("roots_request", roots.into())])),
            Outcome::text("Found 1 root(s)")
        );
    }

    #[test]
    fn request_state_completes_only_with_its_state() {
        for (tool, done) in [
            (
                "test_input_required_result_request_state",
                "state-ok: requestState validated",
            ),
            (
                "test_input_required_result_tampered_state",
                "integrity-ok: state verified",
            ),
        ] {
            let (call, asked) = first(tool);
            assert_eq!(keys(&asked), ["confirm"]);
            assert_eq!(form_message(&asked, "confirm"), "Please confirm");
            assert!(asked.state.is_some());

            let ok = accept(json!({"ok": true}));
            assert_eq!(
                run(call.retry(&asked, [("confirm", ok.clone())])),
                Outcome::text(done)
            );
            // Without the state, it asks again.
            let stateless = call.retry(&InputRequired::new(), [("confirm", ok)]);
            assert!(run(stateless).input_required().is_some());
            // A refusal ends it.
            let refused = call.retry(&asked, [("confirm", accept(json!({"ok": false})))]);
            assert!(run(refused).result().unwrap().is_error);
        }
    }

    #[test]
    fn multiple_inputs_asks_three_things_and_keeps_partial_answers() {
        let (call, asked) = first("test_input_required_result_multiple_inputs");
        assert_eq!(keys(&asked), ["user_name", "greeting", "client_roots"]);
        assert!(asked.state.is_some());
        assert!(matches!(
            asked.requested("greeting"),
            Some(InputRequest::Sampling(request)) if request.max_tokens == 50
        ));

        let name = ("user_name", accept(json!({"name": "Alice"})));
        let greeting = (
            "greeting",
            SamplingResponse::text_reply("test-model", "Hello there!").into(),
        );
        let roots = (
            "client_roots",
            vec![Root::new("file:///test/root", Some("Test Root"))].into(),
        );
        let all = call.retry(&asked, [name.clone(), greeting.clone(), roots.clone()]);
        assert_eq!(
            run(all),
            Outcome::text("Name: Alice; Greeting: Hello there!; Roots: 1")
        );

        // Partial answers: ask for the rest, remember what came.
        let partial = call.retry(&asked, [name]);
        let second = run(partial.clone());
        let second = second.input_required().expect("asks for the rest");
        assert_eq!(keys(second), ["greeting", "client_roots"]);
        let rest = partial.retry(second, [greeting, roots]);
        assert_eq!(
            run(rest),
            Outcome::text("Name: Alice; Greeting: Hello there!; Roots: 1")
        );
    }

    #[test]
    fn multi_round_walks_three_rounds() {
        let (call, asked) = first("test_input_required_result_multi_round");
        assert_eq!(keys(&asked), ["step1"]);
        assert_eq!(form_message(&asked, "step1"), "Step 1: What is your name?");
        assert_eq!(asked.state.as_deref(), Some(&br#"{"round":1}"#[..]));

        let call = call.retry(&asked, [("step1", accept(json!({"name": "Alice"})))]);
        let second = run(call.clone());
        let second = second.input_required().expect("step 2");
        assert_eq!(keys(second), ["step2"]);
        assert_eq!(
            form_message(second, "step2"),
            "Step 2: What is your favorite color?"
        );
        assert_ne!(second.state, asked.state);

        let call = call.retry(second, [("step2", accept(json!({"color": "blue"})))]);
        assert_eq!(
            run(call),
            Outcome::text("Multi-round complete for Alice who likes blue")
        );
    }

    #[test]
    fn multi_round_restarts_on_a_wrong_or_missing_state() {
        let (call, asked) = first("test_input_required_result_multi_round");
        let restarts = [
            // An answer to step 2 without any state.
            call.retry(
                &InputRequired::new(),
                [("step2", accept(json!({"color": "blue"})))],
            ),
            // A state of another shape.
            call.retry(
                &InputRequired::new().state(&json!({"round": "two"})),
                [("step1", accept(json!({"name": "Alice"})))],
            ),
            // Round 2 without the name.
            call.retry(
                &InputRequired::new().state(&json!({"round": 2})),
                [("step2", accept(json!({"color": "blue"})))],
            ),
            // Round 1 state without the step 1 answer.
            call.retry(&asked, [("step2", accept(json!({"color": "blue"})))]),
            // Round 3 does not exist.
            call.retry(
                &InputRequired::new().state(&json!({"round": 3, "name": "Alice"})),
                [("step2", accept(json!({"color": "blue"})))],
            ),
        ];
        for retry in restarts {
            let again = run(retry);
            let again = again.input_required().expect("restarted");
            assert_eq!(keys(again), ["step1"]);
            assert_eq!(again.state, asked.state);
        }
    }

    #[test]
    fn capabilities_shape_the_requests() {
        let tool = "test_input_required_result_capabilities";
        let with = |client: ClientCapabilities| run(Call::new(tool, "{}").with_client(client));

        assert_eq!(
            with(ClientCapabilities::default()),
            Outcome::text("No supported capabilities declared")
        );

        let sampling_only = with(ClientCapabilities {
            sampling: true,
            ..Default::default()
        });
        let asked = sampling_only.input_required().expect("asks");
        assert_eq!(keys(asked), ["sample_input"]);
        assert!(asked.state.is_some());

        let form_only = with(ClientCapabilities {
            elicitation_form: true,
            ..Default::default()
        });
        assert_eq!(keys(form_only.input_required().unwrap()), ["elicit_input"]);

        let both = with(ClientCapabilities::all());
        let asked = both.input_required().unwrap().clone();
        assert_eq!(keys(&asked), ["elicit_input", "sample_input"]);

        let call = Call::new(tool, "{}").with_client(ClientCapabilities::all());
        let answered = call.retry(
            &asked,
            [
                ("elicit_input", accept(json!({"input": "x"}))),
                (
                    "sample_input",
                    SamplingResponse::text_reply("m", "y").into(),
                ),
            ],
        );
        assert_eq!(
            run(answered),
            Outcome::text("capabilities-ok: received elicit_input, sample_input")
        );
        let one = call.retry(
            &asked,
            [(
                "sample_input",
                SamplingResponse::text_reply("m", "y").into(),
            )],
        );
        assert_eq!(
            run(one),
            Outcome::text("capabilities-ok: received sample_input")
        );
    }
}
