//! `prompts/list` and `prompts/get` (with Multi Round-Trip Requests).
//!
//! Unlike a tool, a prompt has no `isError` result: an unknown prompt, a
//! missing required argument or arguments the component refuses are -32602,
//! and a component that fails to run is -32603.

use serde_json::{Map, Value};

use super::catalog::Catalog;
use super::dispatch::{Notifier, Reply, RequestContext, Server, required_str};
use super::envelope::{self, RequestMeta};
use super::jsonrpc::{Request, RpcError};
use super::mrtr::{self, Target};
use super::wire;
use crate::runtime::{events::truncate, wit_prompts};
use crate::state::Binding;

const METHOD: &str = "prompts/get";

/// Longest message of a component's `invalid-arguments` that reaches the
/// client.
const MAX_REFUSAL_BYTES: usize = 1024;

impl Server {
    /// Runs one round of `prompts/get`.
    pub(super) async fn get_prompt(
        &self,
        request: &Request,
        catalog: &Catalog,
        meta: &RequestMeta,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Result<Reply, RpcError> {
        let params = &request.params;
        let name = required_str(params, "name")?;
        envelope::check_name_header(context.headers.as_ref(), name)?;
        let no_arguments = Map::new();
        let given = match params.get("arguments") {
            None | Some(Value::Null) => &no_arguments,
            Some(Value::Object(arguments)) => arguments,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: arguments must be an object of strings",
                ));
            }
        };
        let mut arguments = Vec::with_capacity(given.len());
        for (key, value) in given {
            let Value::String(value) = value else {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: argument '{key}' must be a string"
                )));
            };
            arguments.push((key.clone(), value.clone()));
        }
        let entry = catalog
            .registry
            .find_prompt(name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: {name}")))?;
        if let Some(missing) = entry
            .item()
            .arguments
            .iter()
            .find(|a| a.required && !given.contains_key(&a.name))
        {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: prompt '{name}' needs argument '{}'",
                missing.name
            )));
        }
        let target = Target {
            kind: "Prompt",
            name,
        };
        let arguments_value = Value::Object(given.clone());
        let binding = || Binding {
            principal: context.principal,
            method: METHOD,
            target: name,
            arguments_digest: crate::state::digest_arguments(&arguments_value),
        };
        let round = self.open_round(params, target, &binding, meta)?;
        let number = round.number;
        let outcome = mrtr::with_events(meta, notifier, name, |events| {
            entry.get(&self.runtime, &arguments, &round, events)
        })
        .await;
        let failed = |why: String| {
            tracing::warn!(prompt = name, file = %entry.source().display(), why, "prompt failed");
            RpcError::internal(format!("Prompt '{name}' failed: {why}"))
        };
        match outcome.map_err(|error| mrtr::call_failure(error, failed))? {
            wit_prompts::PromptOutcome::Complete(result) => self
                .reply_within(
                    &request.id,
                    wire::prompt_result(&result),
                    entry.max_output_bytes(),
                )
                .map_err(|error| failed(error.to_string())),
            wit_prompts::PromptOutcome::InvalidArguments(why) => Err(RpcError::invalid_params(
                format!("Invalid params: {}", truncate(why, MAX_REFUSAL_BYTES)),
            )),
            wit_prompts::PromptOutcome::InputRequired(input) => {
                let result = self.input_required_or_failure(
                    target,
                    meta,
                    &binding(),
                    number,
                    &input,
                    failed,
                )?;
                self.reply_within(&request.id, result, entry.max_output_bytes())
                    .map_err(|error| failed(error.to_string()))
            }
        }
    }
}
