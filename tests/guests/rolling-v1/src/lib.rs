//! Test-only guest for Airlock's hot-reload tests: version 1 of `order`.
//!
//! Round 1 asks for `size` (form elicitation, key `size`) and carries
//! `{"asked": "size"}` as its state; the retry completes with
//! `v1: size=<size>`. Version 2 (`rolling-v2`) asks for a colour too, and
//! must accept this version's state after a hot swap. Never deploy it.

use airlock_guest::{Call, Error, InputRequired, Outcome, Tool, Tools, json};
use serde::{Deserialize, Serialize};

/// The description of `order`; version 2 has another one, so a test can
/// tell which version is being served.
const DESCRIPTION: &str = "Orders a shirt (v1): asks for the size.";

struct Order;

#[derive(Deserialize)]
struct SizeForm {
    size: String,
}

#[derive(Serialize)]
struct State {
    asked: &'static str,
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

fn order(call: &Call) -> Result<Outcome, Error> {
    let size = call
        .elicitation("size")
        .and_then(|answer| answer.accepted_content::<SizeForm>());
    match size {
        Some(SizeForm { size }) => Ok(Outcome::text(format!("v1: size={size}"))),
        None => Ok(InputRequired::new()
            .elicit_form(
                "size",
                "Which size?",
                json!({
                    "type": "object",
                    "properties": { "size": { "type": "string" } },
                    "required": ["size"]
                }),
            )
            .state(&State { asked: "size" })
            .into()),
    }
}

airlock_guest::export!(Order);
