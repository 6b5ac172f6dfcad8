//! `build_report`: long work split into slices, one slice per round.
//!
//! A call must finish within its deadline, and Airlock runs every round in a
//! fresh instance. So the tool does a few items per round and carries its
//! progress so far to the next round, which picks up where the last one
//! stopped; the final round returns the whole report. Each round also
//! reports progress, and logs which items it described.
//!
//! For a client that uses tasks (MCP's tasks extension), the first round
//! goes on as a task at once, and each task round does one slice and
//! checkpoints its progress with `continue-as-task`: the client polls the
//! task while Airlock runs the slices in the background. For any other
//! client, each round returns a *state-only* input-required result (no
//! questions, just the progress), and the client calls again at once. See
//! README.md.

use airlock_guest::{
    Call, CallResult, Error, Outcome, TaskSupport, Tool, Tools, json, log, progress,
};
use serde::{Deserialize, Serialize};

/// Items per round when the call does not say.
const DEFAULT_SLICE_SIZE: usize = 3;

struct Report;

impl Tools for Report {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new(
                "build_report",
                "Builds a report with one line per item (its length and word \
                 count), a few items per round.",
            )
            .title("Build report")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "The items to report on."
                    },
                    "sliceSize": {
                        "type": "integer",
                        "minimum": 1,
                        "default": DEFAULT_SLICE_SIZE,
                        "description": "How many items to process per round."
                    }
                },
                "required": ["items"]
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "items": { "type": "integer" },
                    "lines": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["items", "lines"]
            }))
            .read_only()
            .task_support(TaskSupport::Optional),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "build_report" => build_report(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(Report);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    items: Vec<String>,
    #[serde(default = "default_slice_size")]
    slice_size: usize,
}

fn default_slice_size() -> usize {
    DEFAULT_SLICE_SIZE
}

/// The report so far: carried from round to round in the state, and the
/// structured content of the final result. `lines.len()` is the number of
/// items done.
#[derive(Default, Serialize, Deserialize)]
struct Progress {
    items: usize,
    lines: Vec<String>,
}

fn build_report(call: &Call) -> Result<Outcome, Error> {
    let Args { items, slice_size } = call.args()?;
    if slice_size == 0 {
        return Err(Error::new("sliceSize must be at least 1"));
    }
    if !call.is_task() && call.client().can_use_tasks() {
        // Do every slice in the background, in a task.
        return Ok(Outcome::continue_as_task(&Progress::default()));
    }

    // Resume from last round's state; the first round starts empty.
    let mut report: Progress = call.state().unwrap_or_default();
    report.items = items.len();

    // Do one slice of the work.
    let start = report.lines.len().min(items.len());
    let end = (start + slice_size).min(items.len());
    for (index, item) in items.iter().enumerate().take(end).skip(start) {
        report.lines.push(describe(index + 1, item));
    }
    let done = report.lines.len();
    log::info(format!(
        "described items {}-{end} of {}",
        start + 1,
        items.len()
    ));
    progress(
        done as f64,
        Some(items.len() as f64),
        Some(&format!("{done} of {} items", items.len())),
    );

    if done < items.len() {
        // Not finished: a checkpoint in a task, otherwise ask to be called
        // again; either way with the report so far.
        return Ok(if call.is_task() {
            Outcome::continue_as_task(&report)
        } else {
            Outcome::continue_with(&report)
        });
    }
    let mut text = format!("Report on {}:", count(report.items, "item"));
    for line in &report.lines {
        text.push('\n');
        text.push_str(line);
    }
    Ok(CallResult::text(text).with_structured(&report).into())
}

/// One line of the report: `2. "two words": 9 characters, 2 words`.
fn describe(number: usize, item: &str) -> String {
    let characters = count(item.chars().count(), "character");
    let words = count(item.split_whitespace().count(), "word");
    format!("{number}. {item:?}: {characters}, {words}")
}

/// `1 word`, `2 words`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::types::{ClientCapabilities, InputResponse};

    const ARGUMENTS: &str = r#"{"items":["a","b c","d","e","f"],"sliceSize":2}"#;

    const REPORT: &str = "Report on 5 items:\n\
                          1. \"a\": 1 character, 1 word\n\
                          2. \"b c\": 3 characters, 2 words\n\
                          3. \"d\": 1 character, 1 word\n\
                          4. \"e\": 1 character, 1 word\n\
                          5. \"f\": 1 character, 1 word";

    #[test]
    fn runs_in_slices() {
        let mut call = Call::new("build_report", ARGUMENTS);
        let mut rounds = 0;
        let result = loop {
            rounds += 1;
            match Report::call(call.clone()) {
                Outcome::Complete(result) => break result,
                Outcome::InputRequired(asked) => {
                    assert!(asked.requests.is_empty(), "state only");
                    call = call.retry(&asked, Vec::<(String, InputResponse)>::new());
                }
                other => panic!("not a task, yet {other:?}"),
            }
        };
        assert_eq!(rounds, 3);
        assert_eq!(result.text_content(), REPORT);
    }

    #[test]
    fn runs_its_slices_in_a_task_when_the_client_uses_tasks() {
        let mut call = Call::new("build_report", ARGUMENTS).with_client(ClientCapabilities {
            tasks: true,
            ..Default::default()
        });
        let first = Report::call(call.clone());
        assert_eq!(first, Outcome::continue_as_task(&Progress::default()));
        let mut outcome = first;
        // How many items each task round found done when it started.
        let mut resumed_at = Vec::new();
        while let Some(next) = call.task_round_after(&outcome) {
            call = next;
            resumed_at.push(call.state::<Progress>().unwrap().lines.len());
            outcome = Report::call(call.clone());
            assert!(outcome.input_required().is_none(), "a task asks nothing");
        }
        assert_eq!(resumed_at, [0, 2, 4]);
        assert!(call.is_task());
        assert_eq!(outcome.result().unwrap().text_content(), REPORT);
    }
}
