//! `summarize`: a tool that borrows the client's model (sampling).
//!
//! Round 1 asks the client to run a completion (key `summary`): a system
//! prompt, the text in a user message, at most 200 tokens. Round 2 returns
//! the model's answer and names the model that wrote it.
//!
//! The tool asks even when the client did not declare `sampling`: it cannot
//! work without a model, and Airlock answers such a request with the MCP
//! error -32021 that tells the client which capability is missing. A tool
//! with a fallback would check
//! [`Inputs::client`](airlock_guest::Inputs::client) first. See README.md.

use airlock_guest::{
    Call, CallResult, Error, InputRequired, ModelPreferences, Outcome, SamplingRequest, Tool,
    Tools, json,
};
use serde::{Deserialize, Serialize};

/// Enough for a short paragraph.
const MAX_TOKENS: u32 = 200;

const SYSTEM_PROMPT: &str = "You summarize text. Answer with the summary only: \
                             at most three sentences, in the language of the text.";

struct Summarize;

impl Tools for Summarize {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new(
                "summarize",
                "Summarizes a text in at most three sentences, using the client's model.",
            )
            .title("Summarize")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The text to summarize." }
                },
                "required": ["text"]
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "summary": { "type": "string" },
                    "model": { "type": "string" }
                },
                "required": ["summary", "model"]
            }))
            .read_only(),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "summarize" => summarize(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(Summarize);

#[derive(Deserialize)]
struct Args {
    text: String,
}

/// The structured content of the result.
#[derive(Serialize)]
struct Summary<'a> {
    summary: &'a str,
    model: &'a str,
}

fn summarize(call: &Call) -> Result<Outcome, Error> {
    let Args { text } = call.args()?;

    // Round 2: the model answered.
    if let Some(reply) = call.sampling("summary") {
        let summary = reply.text();
        let summary = summary.trim();
        if summary.is_empty() {
            return Err(Error::new(format!(
                "The model {} returned no text to use as a summary.",
                reply.model
            )));
        }
        let model = reply.model.as_str();
        return Ok(CallResult::text(summary)
            .with_text(format!("(Summary written by {model}.)"))
            .with_structured(&Summary { summary, model })
            .into());
    }

    // Round 1: ask the client's model. The arguments come back with the
    // retry, so there is no state to carry.
    let request = SamplingRequest::new(MAX_TOKENS)
        .system_prompt(SYSTEM_PROMPT)
        .user(format!("Summarize this text:\n\n{text}"))
        // Summaries need neither the largest nor the slowest model.
        .model_preferences(
            ModelPreferences::new()
                .speed_priority(0.8)
                .intelligence_priority(0.4),
        )
        .temperature(0.3);
    Ok(InputRequired::new().sample("summary", request).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::SamplingResponse;

    #[test]
    fn asks_the_model_then_returns_its_text() {
        let call = Call::new("summarize", r#"{"text":"A long story."}"#);
        let outcome = Summarize::call(call.clone());
        let asked = outcome.input_required().expect("a sampling request");
        assert!(asked.requested("summary").is_some());

        let reply = SamplingResponse::text_reply("test-model", "A story.");
        let outcome = Summarize::call(call.retry(asked, [("summary", reply.into())]));
        let result = outcome.result().unwrap();
        assert_eq!(
            result.text_content(),
            "A story.\n(Summary written by test-model.)"
        );
    }
}
