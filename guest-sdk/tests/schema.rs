//! Schemas derived from Rust types (feature `schemars`).

use airlock_guest::{Tool, json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn schema(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("a schema is JSON")
}

/// Terms to search for.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Search {
    /// What to look for.
    query: String,
    /// At most this many; 10 if left out.
    limit: Option<u32>,
    #[serde(default)]
    exact: bool,
}

#[test]
fn the_input_schema_is_what_the_type_deserializes_from() {
    let tool = Tool::new("search", "Searches.").input::<Search>();
    assert_eq!(
        schema(&tool.input_schema),
        json!({
            "type": "object",
            "description": "Terms to search for.",
            "properties": {
                "query": { "type": "string", "description": "What to look for." },
                "limit": {
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 0,
                    "description": "At most this many; 10 if left out."
                },
                "exact": { "type": "boolean", "default": false }
            },
            "required": ["query"]
        })
    );
}

#[derive(Deserialize, JsonSchema)]
#[schemars(title = "Search terms")]
#[allow(dead_code)]
struct Titled {
    query: String,
}

#[test]
fn a_chosen_title_is_kept() {
    let tool = Tool::new("search", "Searches.").input::<Titled>();
    assert_eq!(schema(&tool.input_schema)["title"], "Search terms");
}

#[derive(Serialize, JsonSchema)]
struct Hits {
    count: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    items: Vec<String>,
}

#[test]
fn the_output_schema_is_what_the_type_serializes_to() {
    let tool = Tool::new("search", "Searches.").output::<Hits>();
    let output = schema(tool.output_schema.as_deref().expect("an output schema"));
    assert_eq!(output["type"], "object");
    assert_eq!(output["required"], json!(["count"]));
    assert!(output.get("$schema").is_none() && output.get("title").is_none());
}
