//! Host-side tests of the SDK's support for tasks (MCP's tasks extension),
//! through a small tool that goes on as a task.

use airlock_guest::types::{CallOutcome, ClientCapabilities, InputResponse, Round};
use airlock_guest::{
    Call, ElicitationResponse, InputRequired, Outcome, ProtocolError, RoutedTools, TaskSupport,
    Tool, ToolRouter, json,
};
use serde::{Deserialize, Serialize};

struct Jobs;

impl RoutedTools for Jobs {
    fn router() -> ToolRouter {
        ToolRouter::new()
            .tool("count", count, |name| {
                Tool::new(name, "Counts to `to`, one step per task round.")
                    .task_support(TaskSupport::Optional)
            })
            .tool(
                "plain",
                |_: serde_json::Value, _: &Call| Outcome::text("done"),
                |name| Tool::new(name, "Never a task."),
            )
    }
}

airlock_guest::export!(Jobs);

#[derive(Deserialize)]
struct To {
    to: u32,
}

/// The state of `count` from task round to task round.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Counted {
    at: u32,
}

/// Goes on as a task when it can (otherwise counts at once), then counts
/// one step per task round. Past 3 it asks the user whether to go on, and
/// a refusal fails the task with a JSON-RPC error.
fn count(To { to }: To, call: &Call) -> Outcome {
    if !call.is_task() {
        return if call.client().can_use_tasks() {
            Outcome::continue_as_task(&Counted { at: 0 })
        } else {
            Outcome::text(format!("counted to {to} at once"))
        };
    }
    let Some(Counted { at }) = call.state() else {
        return Outcome::failed(-32603, "lost the count");
    };
    if at == 3 {
        match call.elicitation("go_on") {
            None => {
                return InputRequired::new()
                    .elicit_form("go_on", "Go on past 3?", json!({"type": "object"}))
                    .state(&Counted { at })
                    .into();
            }
            Some(answer) if !answer.is_accepted() => {
                return Outcome::failed(-32000, "stopped at 3");
            }
            Some(_) => {}
        }
    }
    if at == to {
        return Outcome::text(format!("counted to {to} in a task"));
    }
    Outcome::continue_as_task(&Counted { at: at + 1 })
}

fn with_tasks() -> ClientCapabilities {
    ClientCapabilities {
        tasks: true,
        ..Default::default()
    }
}

#[test]
fn task_support_is_never_unless_the_builder_says_otherwise() {
    assert_eq!(Tool::new("t", "d").task_support, TaskSupport::Never);
    let listed = Jobs::router().list();
    assert_eq!(listed[0].task_support, TaskSupport::Optional);
    assert_eq!(listed[1].task_support, TaskSupport::Never);
    let required = Tool::new("t", "d").task_support(TaskSupport::Required);
    assert_eq!(required.task_support, TaskSupport::Required);
}

#[test]
fn clients_use_tasks_only_when_they_declare_them() {
    assert!(!ClientCapabilities::default().can_use_tasks());
    assert!(ClientCapabilities::all().can_use_tasks());
    assert!(with_tasks().can_use_tasks());
    let call = Call::new("count", "{}");
    assert!(!call.is_task());
    assert!(!Round::default().task);
}

#[test]
fn a_first_round_goes_on_as_a_task_only_for_a_client_with_tasks() {
    let router = Jobs::router();
    let without = Call::new("count", r#"{"to": 2}"#);
    assert_eq!(router.call(&without), Outcome::text("counted to 2 at once"));

    let with = without.with_client(with_tasks());
    let first = router.call(&with);
    assert!(first.continues_as_task());
    assert_eq!(
        first,
        Outcome::ContinueAsTask(Some(br#"{"at":0}"#.to_vec()))
    );
    assert!(first.result().is_none());
    assert!(first.input_required().is_none());
    assert!(first.failure().is_none());
}

#[test]
fn task_rounds_checkpoint_until_they_complete() {
    let router = Jobs::router();
    let mut call = Call::new("count", r#"{"to": 2}"#).with_client(with_tasks());
    let mut outcome = router.call(&call);
    let mut rounds = 1;
    while let Some(next) = call.task_round_after(&outcome) {
        assert!(next.is_task());
        assert_eq!(next.round(), call.round() + 1);
        assert!(
            next.client().can_use_tasks(),
            "the creating request's client"
        );
        assert_eq!(next.arguments_json(), r#"{"to": 2}"#);
        call = next;
        outcome = router.call(&call);
        rounds += 1;
    }
    assert_eq!(rounds, 4, "the first round, then at 0, 1 and 2");
    assert_eq!(call.state::<Counted>(), Some(Counted { at: 2 }));
    assert_eq!(outcome, Outcome::text("counted to 2 in a task"));
    // Nothing but `continue-as-task` leads to a task round.
    assert!(call.task_round_after(&outcome).is_none());
}

/// Walks `count` to the question it asks at 3, in a task round.
fn asked_at_three(router: &ToolRouter) -> (Call, InputRequired) {
    let mut call = Call::new("count", r#"{"to": 5}"#).with_client(with_tasks());
    let mut outcome = router.call(&call);
    while let Some(next) = call.task_round_after(&outcome) {
        call = next;
        outcome = router.call(&call);
    }
    let asked = outcome.input_required().expect("asks at 3").clone();
    assert_eq!(call.state::<Counted>(), Some(Counted { at: 3 }));
    (call, asked)
}

#[test]
fn a_task_round_asks_for_input_and_goes_on_with_the_answer() {
    let router = Jobs::router();
    let (call, asked) = asked_at_three(&router);
    let answered = call.retry(
        &asked,
        [(
            "go_on",
            InputResponse::from(ElicitationResponse::accept(json!({}))),
        )],
    );
    assert!(
        answered.is_task(),
        "a retry in a task is still a task round"
    );
    let outcome = router.call(&answered);
    assert_eq!(
        outcome,
        Outcome::continue_as_task_bytes(br#"{"at":4}"#.to_vec())
    );
}

#[test]
fn failed_ends_with_a_protocol_error() {
    let router = Jobs::router();
    let (call, asked) = asked_at_three(&router);
    let refused = call.retry(&asked, [("go_on", ElicitationResponse::decline().into())]);
    let outcome = router.call(&refused);
    let expected = ProtocolError {
        code: -32000,
        message: "stopped at 3".into(),
    };
    assert_eq!(outcome.failure(), Some(&expected));
    assert_eq!(outcome, Outcome::from(expected));
    assert!(outcome.result().is_none());
    assert!(!outcome.continues_as_task());

    // A task round without its state fails too.
    let lost = Call::new("count", r#"{"to": 5}"#).with_round(Round {
        task: true,
        ..Round::default()
    });
    assert_eq!(
        router.call(&lost).failure().map(|error| error.code),
        Some(-32603)
    );
}

#[test]
fn the_new_outcomes_cross_the_contract_unchanged() {
    let round = Round {
        client: with_tasks(),
        ..Round::default()
    };
    let first =
        airlock_guest::__private::call_tool::<Jobs>("count".into(), r#"{"to": 1}"#.into(), round);
    assert_eq!(
        first,
        CallOutcome::ContinueAsTask(Some(br#"{"at":0}"#.to_vec()))
    );

    for outcome in [
        Outcome::ContinueAsTask(None),
        Outcome::continue_as_task(&json!({"k": [1, 2]})),
        Outcome::failed(-32603, "broken"),
    ] {
        let crossed = CallOutcome::from(outcome.clone());
        assert_eq!(Outcome::from(crossed), outcome);
    }
    assert_eq!(
        CallOutcome::from(Outcome::failed(-32603, "broken")),
        CallOutcome::Failed(ProtocolError {
            code: -32603,
            message: "broken".into()
        })
    );
}
