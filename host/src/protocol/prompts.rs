//! `prompts/list` and `prompts/get` (with Multi Round-Trip Requests).
//!
//! Unlike a tool, a prompt has no `isError` result: an unknown prompt, a
//! missing required argument or arguments the component refuses are -32602,
//! and a component that fails to run is -32603.

use serde_json::{Map, Value};

use super::catalog::{Catalog, ListResult};
use super::dispatch::{Notifier, Reply, RequestContext, Server, required_str};
use super::envelope::{self, RequestMeta};
use super::jsonrpc::{Request, RpcError};
use super::mrtr::{self, Target};
use super::tools;
use super::wire;
use crate::runtime::{CallError, events::truncate, wit_prompts};
use crate::state::Binding;

const METHOD: &str = "prompts/get";

/// Longest message of a component's `invalid-arguments` that reaches the
/// client.
const MAX_REFUSAL_BYTES: usize = 1024;

impl Server {
    /// `prompts/list`: one page of every prompt.
    pub(super) fn list_prompts(
        &self,
        request: &Request,
        catalog: &Catalog,
    ) -> Result<Reply, RpcError> {
        let page = catalog.prompts.page(request.params.get("cursor"))?;
        Ok(self.reply(
            &request.id,
            ListResult {
                field: "prompts",
                page,
                ttl_ms: self.settings.list_ttl_ms,
            },
        ))
    }

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
        let outcome = outcome.map_err(|error| match error {
            CallError::Busy { .. } => tools::busy(&error),
            error => failed(error.to_string()),
        })?;
        match outcome {
            wit_prompts::PromptOutcome::Complete(result) => {
                Ok(self.reply(&request.id, wire::prompt_result(&result)))
            }
            wit_prompts::PromptOutcome::InvalidArguments(why) => Err(RpcError::invalid_params(
                format!("Invalid params: {}", truncate(why, MAX_REFUSAL_BYTES)),
            )),
            wit_prompts::PromptOutcome::InputRequired(input) => {
                match self.input_required(target, meta, &binding(), number, &input)? {
                    Ok(result) => Ok(self.reply(&request.id, result)),
                    Err(problem) => {
                        Err(failed(format!("it returned an invalid outcome: {problem}")))
                    }
                }
            }
        }
    }
}
