//! `sha256`: the simplest kind of tool, one round and no questions.
//!
//! It answers with the lowercase hex SHA-256 digest of the text as its only
//! content. It is also the benchmark's hot path, so it does nothing else.
//! See README.md.

use airlock_guest::{Call, Error, Outcome, Tool, Tools, json};
use serde::Deserialize;
use sha2::{Digest, Sha256};

struct Hash;

impl Tools for Hash {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new(
                "sha256",
                "Returns the SHA-256 digest of a text (its UTF-8 bytes) as lowercase hex.",
            )
            .title("SHA-256")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The text to hash." }
                },
                "required": ["text"]
            }))
            .read_only()
            .idempotent()
            .open_world(false),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "sha256" => sha256(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(Hash);

#[derive(Deserialize)]
struct Args {
    text: String,
}

fn sha256(call: &Call) -> Result<Outcome, Error> {
    let Args { text } = call.args()?;
    let digest = Sha256::digest(text.as_bytes());
    Ok(Outcome::text(format!("{digest:x}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_abc() {
        let outcome = Hash::call(Call::new("sha256", r#"{"text":"abc"}"#));
        assert_eq!(
            outcome,
            Outcome::text("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
    }
}
