//! `prompts/get`: one round of a prompt, as a [`RoundMethod`].
//!
//! Unlike a tool, a prompt has no `isError` result: an unknown prompt, a
//! missing required argument or arguments the component refuses are -32602,
//! and a component that fails to run is -32603. Arguments that are not
//! strings, and a missing required one, are refused before anything runs.

use serde_json::Value;

use super::answer::Answer;
use super::catalog::Catalog;
use super::context::{ProtocolSettings, Services};
use super::envelope::{MirroredHeaders, RequestMeta};
use super::jsonrpc::{Request, RpcError};
use super::mrtr::{RoundMethod, Settled, Target};
use super::outcome::Outcome;
use super::wire;
use crate::registry::PromptEntry;
use crate::runtime::{CallError, EventSink, Runtime, events::truncate, wit, wit_prompts};

/// Longest refusal message forwarded from a component, in bytes.
const MAX_REFUSAL_BYTES: usize = 1024;

/// One round of `prompts/get`: the prompt and its string arguments.
pub(super) struct PromptGet {
    entry: PromptEntry,
    /// The arguments as the guest gets them.
    arguments: Vec<(String, String)>,
}

/// What a request without arguments is bound to.
static NO_ARGUMENTS: Value = Value::Null;

impl RoundMethod for PromptGet {
    const METHOD: &'static str = "prompts/get";
    const KIND: &'static str = "Prompt";
    const NAMED_BY: &'static str = "name";
    type Outcome = wit_prompts::PromptOutcome;

    fn prepare(
        catalog: &Catalog,
        _settings: &ProtocolSettings,
        name: &str,
        request: &Request,
        _meta: &RequestMeta,
        _headers: Option<&MirroredHeaders<'_>>,
    ) -> Result<Self, Answer> {
        let members = match request.params.get("arguments") {
            None | Some(Value::Null) => None,
            Some(Value::Object(members)) => Some(members),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: arguments must be an object of strings",
                )
                .into());
            }
        };
        let mut arguments = Vec::with_capacity(members.map_or(0, |m| m.len()));
        for (key, value) in members.into_iter().flatten() {
            let Value::String(value) = value else {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: argument '{key}' must be a string"
                ))
                .into());
            };
            arguments.push((key.clone(), value.clone()));
        }
        let entry = catalog
            .registry
            .find_prompt(name)
            .ok_or_else(|| super::access::unknown_prompt(name))?;
        if let Some(missing) = entry
            .item()
            .arguments
            .iter()
            .find(|a| a.required && !members.is_some_and(|m| m.contains_key(&a.name)))
        {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: prompt '{name}' needs argument '{}'",
                missing.name
            ))
            .into());
        }
        Ok(PromptGet {
            entry: entry.clone(),
            arguments,
        })
    }

    fn arguments<'r>(&self, request: &'r Request) -> &'r Value {
        match request.params.get("arguments") {
            Some(given @ Value::Object(_)) => given,
            _ => &NO_ARGUMENTS,
        }
    }

    fn source(&self) -> &std::path::Path {
        self.entry.source()
    }

    fn max_output_bytes(&self) -> usize {
        self.entry.max_output_bytes()
    }

    async fn run(
        &self,
        runtime: &Runtime,
        _name: &str,
        _request: &Request,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit_prompts::PromptOutcome, CallError> {
        self.entry
            .get(runtime, &self.arguments, round, events)
            .await
    }

    fn settle(
        &self,
        services: Services<'_>,
        _name: &str,
        outcome: wit_prompts::PromptOutcome,
        limit: usize,
    ) -> Settled {
        match outcome {
            wit_prompts::PromptOutcome::Complete(result) => {
                let max_json_depth = services.runtime.limits().max_json_depth;
                Settled::encode(&wire::prompt_result(&result, max_json_depth), limit)
            }
            wit_prompts::PromptOutcome::InvalidArguments(why) => {
                Settled::Answer(Answer::Error(RpcError::invalid_params(format!(
                    "Invalid params: {}",
                    truncate(why, MAX_REFUSAL_BYTES)
                ))))
            }
            wit_prompts::PromptOutcome::InputRequired(input) => Settled::InputRequired(input),
        }
    }

    fn failure(&self, target: Target<'_>, why: String) -> Answer {
        Answer::Error(
            RpcError::internal(format!("Prompt '{}' failed: {why}", target.name))
                .with_outcome(Outcome::Failed),
        )
    }
}
