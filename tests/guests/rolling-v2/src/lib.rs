//! Test-only guest for Airlock's hot-reload tests: version 2 of `order`.
//!
//! Asks for `size` (key `size`), then, with the size known, for `color`
//! (key `color`), keeping the size in its state; completes with
//! `v2: size=<size> color=<color>`. A retry started on version 1 (whose
//! state is `{"asked": "size"}`, without a size) and answered with a size
//! continues here: only the colour is new, so only the colour is asked.
//! Never deploy it.

use airlock_guest::{Call, Error, InputRequired, Outcome, Tool, Tools, json};
use serde::{Deserialize, Serialize};

/// The description of `order`, different from version 1's.
const DESCRIPTION: &str = "Orders a shirt (v2): asks for the size, then the color.";

struct Order;

#[derive(Deserialize)]
struct SizeForm {
    size: String,
}

#[derive(Deserialize)]
struct ColorForm {
    color: String,
}

/// What earlier rounds learned. Unknown fields (version 1's `asked`) are
/// ignored.
#[derive(Default, Serialize, Deserialize)]
struct State {
    size: Option<String>,
}

impl Tools for Order {
    fn list() -> Vec<Tool> {
        vec![Tool::new("order", DESCRIPTION)]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "order" => order(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

/// A form asking for one string `property`.
fn form(property: &str) -> airlock_guest::serde_json::Value {
    json!({
        "type": "object",
        "properties": { property: { "type": "string" } },
        "required": [property]
    })
}

fn order(call: &Call) -> Result<Outcome, Error> {
    let state: State = call.state().unwrap_or_default();
    let size = call
        .elicitation("size")
        .and_then(|answer| answer.accepted_content::<SizeForm>())
        .map(|form| form.size)
        .or(state.size);
    let Some(size) = size else {
        return Ok(InputRequired::new()
            .elicit_form("size", "Which size?", form("size"))
            .into());
    };
    let color = call
        .elicitation("color")
        .and_then(|answer| answer.accepted_content::<ColorForm>());
    match color {
        Some(ColorForm { color }) => Ok(Outcome::text(format!("v2: size={size} color={color}"))),
        None => Ok(InputRequired::new()
            .elicit_form("color", "Which color?", form("color"))
            .state(&State { size: Some(size) })
            .into()),
    }
}

airlock_guest::export!(Order);
