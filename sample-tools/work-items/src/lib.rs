//! `update_work_item`: a tool whose business rules need answers from the user.
//!
//! Like a work tracker with custom rules, resolving a work item needs a
//! resolution, and resolving it as a duplicate needs the item it duplicates.
//! When the model leaves those out, the tool asks the user, one question per
//! round:
//!
//! 1. `State` becomes `Resolved` without a `Resolution`: ask for it (form,
//!    key `resolution`).
//! 2. The resolution is `Duplicate` without a `Duplicate Of`: ask for it
//!    (form, key `duplicate_of`), carrying the first answer in the state.
//! 3. Otherwise apply the update and summarize it.
//!
//! Declining or cancelling a question cancels the update. See README.md.

use airlock_guest::serde_json::{Map, Value};
use airlock_guest::{Call, CallResult, Error, InputRequired, Outcome, Tool, Tools, json};
use serde::{Deserialize, Serialize};

/// The resolutions the form offers.
const RESOLUTIONS: [&str; 5] = [
    "Fixed",
    "Won't Fix",
    "Duplicate",
    "As Designed",
    "Cannot Reproduce",
];

struct WorkItems;

impl Tools for WorkItems {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new(
                "update_work_item",
                "Updates fields of a work item, e.g. {\"State\": \"Resolved\"}. \
                 Resolving needs a Resolution, and a Duplicate resolution needs \
                 Duplicate Of (the id of the original item); the user is asked \
                 for whichever is missing.",
            )
            .title("Update work item")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "workItemId": {
                        "type": "integer",
                        "description": "The id of the work item to update."
                    },
                    "fields": {
                        "type": "object",
                        "description": "Field name to new value, e.g. \
                                        {\"State\": \"Resolved\", \"Resolution\": \"Fixed\"}.",
                        "minProperties": 1
                    }
                },
                "required": ["workItemId", "fields"]
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "workItemId": { "type": "integer" },
                    "fields": { "type": "object" }
                },
                "required": ["workItemId", "fields"]
            }))
            .destructive(false)
            .idempotent(),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "update_work_item" => update_work_item(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(WorkItems);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateArgs {
    work_item_id: i64,
    fields: Map<String, Value>,
}

/// What the user answered in earlier rounds. It travels in the call's state,
/// because every round runs in a fresh instance.
#[derive(Default, Serialize, Deserialize)]
struct Answers {
    resolution: Option<String>,
    duplicate_of: Option<i64>,
}

/// The form answering the `resolution` question.
#[derive(Deserialize)]
struct ResolutionForm {
    resolution: String,
}

/// The form answering the `duplicate_of` question.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DuplicateOfForm {
    duplicate_of: i64,
}

/// The result's structured content: the item and every field set.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Updated {
    work_item_id: i64,
    fields: Map<String, Value>,
}

fn update_work_item(call: &Call) -> Result<Outcome, Error> {
    let UpdateArgs {
        work_item_id: id,
        mut fields,
    } = call.args()?;
    if fields.is_empty() {
        return Err(Error::new("nothing to update: `fields` is empty"));
    }

    // Start from what earlier rounds learned, then add this round's answers.
    let mut answers: Answers = call.state().unwrap_or_default();
    if let Some(answer) = call.elicitation("resolution") {
        if !answer.is_accepted() {
            return Err(cancelled(id, "Resolution"));
        }
        // An answer outside the list is ignored, so the question comes again.
        answers.resolution = answer
            .accepted_content::<ResolutionForm>()
            .map(|form| form.resolution)
            .filter(|r| RESOLUTIONS.contains(&r.as_str()));
    }
    if let Some(answer) = call.elicitation("duplicate_of") {
        if !answer.is_accepted() {
            return Err(cancelled(id, "Duplicate Of"));
        }
        answers.duplicate_of = answer
            .accepted_content::<DuplicateOfForm>()
            .map(|form| form.duplicate_of);
    }

    // Rule 1: resolving needs a resolution.
    let resolving = fields.get("State").and_then(Value::as_str) == Some("Resolved");
    let resolution = match fields.get("Resolution").and_then(Value::as_str) {
        Some(given) => Some(given.to_owned()),
        None => answers.resolution.clone(),
    };
    if resolving && resolution.is_none() {
        return Ok(InputRequired::new()
            .elicit_form(
                "resolution",
                format!("Work item {id} is being resolved. What is the resolution?"),
                json!({
                    "type": "object",
                    "properties": {
                        "resolution": {
                            "type": "string",
                            "title": "Resolution",
                            "enum": RESOLUTIONS
                        }
                    },
                    "required": ["resolution"]
                }),
            )
            .state(&answers)
            .into());
    }

    // Rule 2: a duplicate needs the item it duplicates.
    if resolution.as_deref() == Some("Duplicate") && !fields.contains_key("Duplicate Of") {
        match answers.duplicate_of {
            Some(original) => {
                fields.insert("Duplicate Of".into(), original.into());
            }
            None => {
                return Ok(InputRequired::new()
                    .elicit_form(
                        "duplicate_of",
                        format!("Work item {id} is a duplicate. Of which work item?"),
                        json!({
                            "type": "object",
                            "properties": {
                                "duplicateOf": {
                                    "type": "integer",
                                    "title": "Duplicate Of",
                                    "minimum": 1
                                }
                            },
                            "required": ["duplicateOf"]
                        }),
                    )
                    // Carries the resolution answered in the first round.
                    .state(&answers)
                    .into());
            }
        }
    }
    if let Some(resolution) = resolution {
        fields
            .entry("Resolution")
            .or_insert_with(|| resolution.into());
    }

    // A real tool would call the tracker's API here.
    let summary = summarize(id, &fields);
    Ok(CallResult::text(summary)
        .with_structured(&Updated {
            work_item_id: id,
            fields,
        })
        .into())
}

/// `Updated work item 42: State = Resolved, Resolution = Duplicate, Duplicate Of = 17`:
/// the other fields first (by name), then `Resolution`, then `Duplicate Of`.
fn summarize(id: i64, fields: &Map<String, Value>) -> String {
    let mut names: Vec<&String> = fields.keys().collect();
    // The fields the rules are about go last, in the order they are asked.
    let answered = |name: &str| match name {
        "Resolution" => 1,
        "Duplicate Of" => 2,
        _ => 0,
    };
    names.sort_by_key(|name| answered(name));
    let changes: Vec<String> = names
        .into_iter()
        .map(|name| match &fields[name] {
            Value::String(text) => format!("{name} = {text}"),
            other => format!("{name} = {other}"),
        })
        .collect();
    format!("Updated work item {id}: {}", changes.join(", "))
}

fn cancelled(id: i64, field: &str) -> Error {
    Error::new(format!(
        "Update of work item {id} cancelled: no {field} was given."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::ElicitationResponse;

    fn start(arguments: Value) -> (Call, InputRequired) {
        let call = Call::new("update_work_item", arguments.to_string());
        let asked = WorkItems::call(call.clone())
            .input_required()
            .cloned()
            .expect("a question");
        (call, asked)
    }

    #[test]
    fn resolved_duplicate_asks_twice_then_updates() {
        let (call, asked) = start(json!({"workItemId": 42, "fields": {"State": "Resolved"}}));
        assert!(asked.requested("resolution").is_some());

        let answer = ElicitationResponse::accept(json!({"resolution": "Duplicate"}));
        let call = call.retry(&asked, [("resolution", answer.into())]);
        let outcome = WorkItems::call(call.clone());
        let asked = outcome.input_required().expect("second question");
        assert!(asked.requested("duplicate_of").is_some());

        let answer = ElicitationResponse::accept(json!({"duplicateOf": 17}));
        let outcome = WorkItems::call(call.retry(asked, [("duplicate_of", answer.into())]));
        let result = outcome.result().expect("complete");
        assert!(!result.is_error);
        assert_eq!(
            result.text_content(),
            "Updated work item 42: State = Resolved, Resolution = Duplicate, Duplicate Of = 17"
        );
        let structured: Value =
            airlock_guest::serde_json::from_str(result.structured_content.as_deref().unwrap())
                .unwrap();
        assert_eq!(structured["fields"]["Duplicate Of"], 17);
    }

    #[test]
    fn given_resolution_needs_no_question() {
        let call = Call::new(
            "update_work_item",
            json!({"workItemId": 7, "fields": {"State": "Resolved", "Resolution": "Fixed"}})
                .to_string(),
        );
        let outcome = WorkItems::call(call);
        assert_eq!(
            outcome.result().unwrap().text_content(),
            "Updated work item 7: State = Resolved, Resolution = Fixed"
        );
    }

    #[test]
    fn decline_cancels() {
        let (call, asked) = start(json!({"workItemId": 42, "fields": {"State": "Resolved"}}));
        let call = call.retry(
            &asked,
            [("resolution", ElicitationResponse::decline().into())],
        );
        assert_eq!(
            WorkItems::call(call),
            Outcome::error("Update of work item 42 cancelled: no Resolution was given.")
        );
    }
}
