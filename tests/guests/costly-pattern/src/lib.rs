//! Test-only guest for Airlock's tests of what checking arguments costs.
//!
//! - `tagged` takes a `text` whose schema `pattern`, [`COSTLY_PATTERN`],
//!   is matched in linear time but at a high cost per character of a long
//!   string of `a`s and `b`s in random order: its automaton keeps many
//!   states alive at once. A client holds the host's attention for seconds
//!   with one call of a few megabytes that the host must refuse.
//! - `plain` takes anything and answers `ok`: what another caller calls
//!   meanwhile.
//!
//! Never deploy it.

use airlock_guest::{Call, Outcome, Tool, Tools, json};

/// An `a` followed by 24 `a`s or `b`s and a digit, anywhere in the text.
const COSTLY_PATTERN: &str = r"a[ab]{24}\d";

struct CostlyPattern;

impl Tools for CostlyPattern {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new("tagged", "Accepts a text that holds a tag.").input_schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "pattern": COSTLY_PATTERN}},
                "required": ["text"]
            })),
            Tool::new("plain", "Answers `ok`.").input_schema(json!({"type": "object"})),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "tagged" | "plain" => Outcome::text("ok"),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(CostlyPattern);
