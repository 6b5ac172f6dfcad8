//! `sha256`: the simplest kind of tool, one round and no questions.
//!
//! It answers with the lowercase hex SHA-256 digest of the text as its only
//! content. It is also the benchmark's hot path, so it does nothing else.
//! See README.md.

use airlock_guest::{Call, Outcome, RoutedTools, Tool, ToolRouter};
use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};

struct Hash;

impl RoutedTools for Hash {
    fn router() -> ToolRouter {
        ToolRouter::new().tool("sha256", sha256, |name| {
            Tool::new(
                name,
                "Returns the SHA-256 digest of a text (its UTF-8 bytes) as lowercase hex.",
            )
            .title("SHA-256")
            .input::<Args>()
            .read_only()
            .idempotent()
            .open_world(false)
        })
    }
}

airlock_guest::export!(Hash);

// The arguments of `sha256`; its input schema is derived from this type (a
// `///` comment here would become the schema's description).
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The text to hash.
    text: String,
}

fn sha256(Args { text }: Args, _: &Call) -> Outcome {
    let digest = Sha256::digest(text.as_bytes());
    Outcome::text(format!("{digest:x}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::{Tools, json};

    #[test]
    fn digest_of_abc() {
        let outcome = Hash::call(Call::new("sha256", r#"{"text":"abc"}"#));
        assert_eq!(
            outcome,
            Outcome::text("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
    }

    #[test]
    fn the_listed_schema_is_derived_from_the_arguments() {
        let tools = Hash::list();
        assert_eq!(tools.len(), 1);
        let schema: airlock_guest::serde_json::Value =
            airlock_guest::serde_json::from_str(&tools[0].input_schema).unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The text to hash." }
                },
                "required": ["text"]
            })
        );
    }

    #[test]
    fn bad_arguments_and_unknown_names_are_errors_for_the_model() {
        let bad = Hash::call(Call::new("sha256", r#"{"txt":"abc"}"#));
        let bad = bad.result().unwrap();
        assert!(bad.is_error);
        assert!(
            bad.text_content()
                .starts_with("invalid arguments: missing field `text`"),
            "{}",
            bad.text_content()
        );
        assert_eq!(
            Hash::call(Call::new("md5", r#"{"text":"abc"}"#)),
            Outcome::unknown_tool("md5")
        );
    }
}
