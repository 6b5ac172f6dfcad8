//! Test-only guest for Airlock's loading tests: one tool, `big_schema`,
//! whose input schema is [`SCHEMA_BYTES`] long (a description padded out).
//! Served as listed, one `tools/list` page would be that large, past the
//! server's output limit; the host must refuse the component at load,
//! naming the file and the tool. Never deploy it.

use airlock_guest::{Call, Outcome, Tool, Tools, json};

/// Bytes of the padding in the input schema: 8 MiB.
const SCHEMA_BYTES: usize = 8 << 20;

struct BigSchema;

impl Tools for BigSchema {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new("big_schema", "A tool whose input schema is 8 MiB.").input_schema(json!({
                "type": "object",
                "description": "x".repeat(SCHEMA_BYTES),
            })),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "big_schema" => Outcome::text("served anyway"),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(BigSchema);
