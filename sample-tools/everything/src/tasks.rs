//! The tools of the `tasks-*` scenarios (MCP's tasks extension, SEP-2663).
//!
//! A call's first round always runs as a plain call. A tool that may run as
//! a task returns `continue-as-task` there, but only when the client
//! declared the extension on that request; Airlock then answers with the
//! task and runs the next round in the background (`call.is_task()`). The
//! tools with optional task support run the very same rounds as plain
//! multi-round calls for a client without tasks.

use std::thread::sleep;
use std::time::Duration;

use airlock_guest::serde_json::Value;
use airlock_guest::{Call, Error, InputRequired, Outcome, json};
use serde::{Deserialize, Serialize};

use crate::mrtr::{answered_name, string_form};

/// How long `failing_job` works before it fails.
const FAILING_JOB_WORK: Duration = Duration::from_secs(1);

/// The JSON-RPC error `protocol_error_job` ends with: internal error.
const INTERNAL_ERROR: i32 = -32603;

/// `Some(continue-as-task)` when this is the first round of a call from a
/// client that can use tasks: the rest runs as a task, from a round whose
/// arguments are the same and whose state is empty.
fn start_task(call: &Call) -> Option<Outcome> {
    (!call.is_task() && call.client().can_use_tasks()).then_some(Outcome::ContinueAsTask(None))
}

#[derive(Deserialize)]
struct Name {
    name: String,
}

/// `greet {name}`: never a task, `Hello, <name>!`.
pub fn greet(call: &Call) -> Result<Outcome, Error> {
    let Name { name } = call.args()?;
    Ok(Outcome::text(format!("Hello, {name}!")))
}

#[derive(Deserialize)]
struct Compute {
    seconds: f64,
    label: String,
}

/// `slow_compute {seconds, label}`: works `seconds` seconds, then reports
/// it; as a task when the client can use tasks and there is work to do.
pub fn slow_compute(call: &Call) -> Result<Outcome, Error> {
    let Compute { seconds, label } = call.args()?;
    let work = Duration::try_from_secs_f64(seconds)
        .map_err(|_| Error::new("seconds must be a finite number of seconds, at least 0"))?;
    if !work.is_zero()
        && let Some(task) = start_task(call)
    {
        return Ok(task);
    }
    sleep(work);
    Ok(Outcome::text(format!(
        "Computed {label:?} in {seconds} second(s)"
    )))
}

/// `failing_job` (task required): works about a second in its task, then
/// completes with an `isError` result; a failure of the work is a result,
/// not a failed task.
pub fn failing_job(call: &Call) -> Outcome {
    if !call.is_task() {
        return Outcome::ContinueAsTask(None);
    }
    sleep(FAILING_JOB_WORK);
    Outcome::error("failing_job failed, as it always does")
}

/// `protocol_error_job`: ends with JSON-RPC error -32603, in its task (the
/// task is `failed`) or, for a client without tasks, as the response.
pub fn protocol_error_job(call: &Call) -> Outcome {
    start_task(call)
        .unwrap_or_else(|| Outcome::failed(INTERNAL_ERROR, "protocol_error_job failed on purpose"))
}

#[derive(Deserialize)]
struct Filename {
    filename: String,
}

/// The answer to `confirm_delete`'s question.
#[derive(Deserialize)]
struct Confirm {
    confirm: bool,
}

/// `confirm_delete {filename}`: asks the user to confirm (form `confirm`,
/// `{confirm: boolean}`), then completes `Deleted <filename>` if they
/// accepted with `true`, `Kept <filename>` otherwise. Deletes nothing.
pub fn confirm_delete(call: &Call) -> Result<Outcome, Error> {
    let Filename { filename } = call.args()?;
    if let Some(task) = start_task(call) {
        return Ok(task);
    }
    let Some(answer) = call.elicitation("confirm") else {
        let form = json!({
            "type": "object",
            "properties": {
                "confirm": { "type": "boolean", "description": "Delete the file?" }
            },
            "required": ["confirm"]
        });
        return Ok(InputRequired::new()
            .elicit_form("confirm", format!("Delete {filename}?"), form)
            .into());
    };
    let confirmed = answer
        .accepted_content::<Confirm>()
        .is_some_and(|form| form.confirm);
    let verb = if confirmed { "Deleted" } else { "Kept" };
    Ok(Outcome::text(format!("{verb} {filename}")))
}

/// The accepted string `field` of the form answered under `key`, or
/// `(no answer)` for anything else (declined, cancelled, another shape).
fn form_field(call: &Call, key: &str, field: &str) -> String {
    call.elicitation(key)
        .and_then(|answer| answer.accepted_content::<Value>())
        .and_then(|content| content.get(field)?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "(no answer)".to_owned())
}

/// `multi_input`: asks for a name (`name`) and a favorite color (`color`)
/// at once, and completes once both are answered.
pub fn multi_input(call: &Call) -> Outcome {
    if let Some(task) = start_task(call) {
        return task;
    }
    if call.response("name").is_some() && call.response("color").is_some() {
        return Outcome::text(format!(
            "Name: {}; color: {}",
            form_field(call, "name", "name"),
            form_field(call, "color", "color")
        ));
    }
    InputRequired::new()
        .elicit_form("name", "What is your name?", string_form("name"))
        .elicit_form(
            "color",
            "What is your favorite color?",
            string_form("color"),
        )
        .into()
}

/// The state `test_tool_with_task` carries into its task.
#[derive(Serialize, Deserialize)]
struct Greeting {
    name: String,
}

/// `test_tool_with_task` (task required): asks for the user's name with
/// plain MRTR (form `user_name`) before any task exists, goes on as a task
/// with the name, and greets them from the task.
pub fn with_task(call: &Call) -> Outcome {
    if call.is_task() {
        return match call.state::<Greeting>() {
            Some(Greeting { name }) => Outcome::text(format!("Hello, {name}! (from a task)")),
            None => Outcome::failed(INTERNAL_ERROR, "the task lost the name"),
        };
    }
    match answered_name(call, "user_name") {
        Some(name) => Outcome::continue_as_task(&Greeting { name }),
        None => InputRequired::new()
            .elicit_form("user_name", "What is your name?", string_form("name"))
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use airlock_guest::types::{
        ClientCapabilities, ElicitationRequest, InputRequest, InputResponse,
    };
    use airlock_guest::{ElicitationResponse, ProtocolError, TaskSupport, Tool};

    use super::*;
    use crate::tools::{call as run, list};

    /// A client that declared everything, tasks included.
    fn with_tasks(name: &str, arguments: Value) -> Call {
        Call::new(name, arguments.to_string()).with_client(ClientCapabilities::all())
    }

    /// A client that declared everything but tasks.
    fn without_tasks(name: &str, arguments: Value) -> Call {
        Call::new(name, arguments.to_string()).with_client(ClientCapabilities {
            tasks: false,
            ..ClientCapabilities::all()
        })
    }

    /// Runs the first round, which must go on as a task, and returns the
    /// first task round.
    fn first_task_round(call: &Call) -> Call {
        let first = run(call);
        assert_eq!(first, Outcome::ContinueAsTask(None), "{}", call.name());
        let task = call.task_round_after(&first).expect("a task round");
        assert!(task.is_task());
        task
    }

    fn keys(asked: &InputRequired) -> Vec<&str> {
        asked.requests.iter().map(|(k, _)| k.as_str()).collect()
    }

    fn form(asked: &InputRequired, key: &str) -> (String, Value) {
        match asked.requested(key) {
            Some(InputRequest::Elicitation(ElicitationRequest::Form(form))) => (
                form.message.clone(),
                airlock_guest::serde_json::from_str(&form.requested_schema).unwrap(),
            ),
            other => panic!("no form under {key}: {other:?}"),
        }
    }

    fn accept(content: Value) -> InputResponse {
        ElicitationResponse::accept(content).into()
    }

    fn listed(name: &str) -> Tool {
        list()
            .into_iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"))
    }

    #[test]
    fn task_tools_are_listed_with_their_task_support() {
        for (name, support) in [
            ("greet", TaskSupport::Never),
            ("slow_compute", TaskSupport::Optional),
            ("failing_job", TaskSupport::Required),
            ("protocol_error_job", TaskSupport::Optional),
            ("confirm_delete", TaskSupport::Optional),
            ("multi_input", TaskSupport::Optional),
            ("test_tool_with_task", TaskSupport::Required),
        ] {
            let tool = listed(name);
            assert_eq!(tool.task_support, support, "{name}");
            assert!(!tool.description.is_empty(), "{name}");
        }
        // The tools of the other scenarios never become tasks.
        assert_eq!(listed("test_simple_text").task_support, TaskSupport::Never);
    }

    #[test]
    fn greet_answers_at_once_even_for_a_client_with_tasks() {
        let call = with_tasks("greet", json!({"name": "sep-2243"}));
        assert_eq!(run(&call), Outcome::text("Hello, sep-2243!"));
        let bad = run(&with_tasks("greet", json!({})));
        assert!(bad.result().unwrap().is_error);
    }

    #[test]
    fn slow_compute_is_a_task_only_when_the_client_can_use_tasks_and_there_is_work() {
        let arguments = json!({"seconds": 0.01, "label": "pi"});
        let task = first_task_round(&with_tasks("slow_compute", arguments.clone()));
        let done = Outcome::text(r#"Computed "pi" in 0.01 second(s)"#);
        assert_eq!(run(&task), done);

        assert_eq!(run(&without_tasks("slow_compute", arguments)), done);
        assert_eq!(
            run(&with_tasks(
                "slow_compute",
                json!({"seconds": 0, "label": "now"})
            )),
            Outcome::text(r#"Computed "now" in 0 second(s)"#)
        );
        for seconds in [json!(-1), json!("ten")] {
            let bad = run(&with_tasks(
                "slow_compute",
                json!({"seconds": seconds, "label": "x"}),
            ));
            assert!(bad.result().unwrap().is_error, "{seconds}");
        }
    }

    #[test]
    fn failing_job_completes_its_task_with_an_error_result() {
        let task = first_task_round(&with_tasks("failing_job", json!({})));
        let outcome = run(&task);
        let result = outcome.result().expect("completed, not failed");
        assert!(result.is_error);
        assert!(!result.text_content().is_empty());
    }

    #[test]
    fn protocol_error_job_fails_with_a_json_rpc_error() {
        let expected = ProtocolError {
            code: -32603,
            message: "protocol_error_job failed on purpose".into(),
        };
        let task = first_task_round(&with_tasks("protocol_error_job", json!({})));
        assert_eq!(run(&task).failure(), Some(&expected));
        // Without tasks, the plain call fails the same way.
        let plain = run(&without_tasks("protocol_error_job", json!({})));
        assert_eq!(plain.failure(), Some(&expected));
    }

    #[test]
    fn confirm_delete_asks_in_its_task_and_completes_with_the_answer() {
        let call = with_tasks("confirm_delete", json!({"filename": "notes.txt"}));
        let task = first_task_round(&call);
        let asked = run(&task);
        let asked = asked.input_required().expect("asks to confirm");
        assert_eq!(keys(asked), ["confirm"]);
        let (message, schema) = form(asked, "confirm");
        assert_eq!(message, "Delete notes.txt?");
        assert_eq!(schema["properties"]["confirm"]["type"], "boolean");

        let answered = |answer: InputResponse| {
            let next = task.retry(asked, [("confirm", answer)]);
            assert!(next.is_task());
            run(&next)
        };
        assert_eq!(
            answered(accept(json!({"confirm": true}))),
            Outcome::text("Deleted notes.txt")
        );
        for refusal in [
            accept(json!({"confirm": false})),
            ElicitationResponse::decline().into(),
            ElicitationResponse::cancel().into(),
        ] {
            assert_eq!(answered(refusal), Outcome::text("Kept notes.txt"));
        }
    }

    #[test]
    fn confirm_delete_runs_as_a_plain_multi_round_call_without_tasks() {
        let call = without_tasks("confirm_delete", json!({"filename": "a.txt"}));
        let asked = run(&call);
        let asked = asked.input_required().expect("asks at once");
        let retry = call.retry(asked, [("confirm", accept(json!({"confirm": true})))]);
        assert!(!retry.is_task());
        assert_eq!(run(&retry), Outcome::text("Deleted a.txt"));
    }

    #[test]
    fn multi_input_asks_two_things_at_once_and_completes_with_both() {
        let task = first_task_round(&with_tasks("multi_input", json!({})));
        let asked = run(&task);
        let asked = asked.input_required().expect("asks");
        assert_eq!(keys(asked), ["name", "color"]);
        assert_eq!(form(asked, "color").0, "What is your favorite color?");

        let both = task.retry(
            asked,
            [
                ("name", accept(json!({"name": "Alice"}))),
                ("color", accept(json!({"color": "blue"}))),
            ],
        );
        assert_eq!(run(&both), Outcome::text("Name: Alice; color: blue"));

        // Any answers complete it; only one asks again for both.
        let odd = task.retry(
            asked,
            [
                ("name", accept(json!({"confirm": true}))),
                ("color", ElicitationResponse::decline().into()),
            ],
        );
        assert_eq!(
            run(&odd),
            Outcome::text("Name: (no answer); color: (no answer)")
        );
        let one = task.retry(asked, [("name", accept(json!({"name": "Alice"})))]);
        assert_eq!(keys(run(&one).input_required().unwrap()), ["name", "color"]);
    }

    #[test]
    fn test_tool_with_task_asks_before_the_task_and_greets_from_it() {
        let call = with_tasks("test_tool_with_task", json!({}));
        let asked = run(&call);
        let asked = asked.input_required().expect("plain MRTR first");
        assert_eq!(keys(asked), ["user_name"]);
        assert_eq!(form(asked, "user_name").0, "What is your name?");
        assert!(asked.state.is_none());

        let answered = call.retry(asked, [("user_name", accept(json!({"name": "Alice"})))]);
        assert!(!answered.is_task(), "still no task");
        let created = run(&answered);
        assert!(created.continues_as_task());
        let task = answered.task_round_after(&created).unwrap();
        assert_eq!(task.round(), 3);
        assert_eq!(run(&task), Outcome::text("Hello, Alice! (from a task)"));

        // A declined answer asks again; a task round without its state fails.
        let declined = call.retry(
            asked,
            [("user_name", ElicitationResponse::decline().into())],
        );
        assert!(run(&declined).input_required().is_some());
        let lost = call
            .task_round_after(&Outcome::ContinueAsTask(None))
            .unwrap();
        assert_eq!(run(&lost).failure().map(|error| error.code), Some(-32603));
    }
}
