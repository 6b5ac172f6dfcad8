//! `tools/list` and `tools/call`.
//!
//! A call round: read the arguments, check the `x-mcp-header` parameters,
//! open the round (see [`mrtr`](super::mrtr)), run the tool in a fresh
//! instance, then return its complete result or its `input_required`.
//! A tool that fails to run (trap, timeout, memory, bad output) gives a
//! complete result with `isError`, which the model can read; only protocol
//! problems are JSON-RPC errors.

use serde_json::{Map, Value};

use super::catalog::Catalog;
use super::dispatch::{Notifier, Reply, RequestContext, Server, required_str};
use super::envelope::{self, RequestMeta};
use super::jsonrpc::{self, Request, RpcError};
use super::mrtr::{self, Target};
use super::param_headers;
use super::wire;
use crate::registry::ToolEntry;
use crate::runtime::{CallError, wit};
use crate::state::Binding;

const METHOD: &str = "tools/call";

impl Server {
    /// Runs one round of `tools/call`.
    pub(super) async fn call_tool(
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
        let no_arguments = Value::Object(Map::new());
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => &no_arguments,
            Some(arguments @ Value::Object(_)) => arguments,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: arguments must be an object",
                ));
            }
        };
        if let (Some(annotated), Some(all)) = (
            catalog.param_headers.get(name),
            context.headers.as_ref().and_then(|h| h.all),
        ) {
            param_headers::check(annotated, arguments, |header| {
                all.get(header)
                    .map(|v| v.to_str().map(str::trim).unwrap_or("\u{fffd}"))
            })?;
        }
        let entry = catalog
            .registry
            .find(name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")))?;
        let target = Target { kind: "Tool", name };
        // Needed to open the state and again to seal the next one, and on a
        // plain call not at all: computed once, when first needed.
        let digest = std::sync::OnceLock::new();
        let binding = || Binding {
            principal: context.principal,
            method: METHOD,
            target: name,
            arguments_digest: *digest.get_or_init(|| crate::state::digest_arguments(arguments)),
        };
        let round = self.open_round(params, target, &binding, meta)?;
        let number = round.number;
        let started = std::time::Instant::now();
        let arguments_json = arguments.to_string();
        let outcome = mrtr::with_events(meta, notifier, name, |events| {
            entry.call(&self.runtime, &arguments_json, &round, events)
        })
        .await;
        tracing::debug!(
            tool = name,
            round = number,
            elapsed_us = started.elapsed().as_micros() as u64,
            "tool call"
        );
        match outcome {
            Err(error @ CallError::Busy { .. }) => Err(mrtr::busy(&error)),
            Err(error) => {
                tracing::warn!(tool = name, file = %entry.source().display(), %error, "tool call failed");
                Ok(self.tool_failure(&request.id, name, &error.to_string()))
            }
            Ok(wit::CallOutcome::Complete(result)) => match wire::call_result(&result) {
                Ok(result) => Ok(self.tool_reply(&request.id, entry, result)),
                Err(error) => Ok(self.invalid_outcome(&request.id, entry, &error.0)),
            },
            Ok(wit::CallOutcome::InputRequired(input)) => {
                match self.input_required(target, meta, &binding(), number, &input)? {
                    Ok(result) => Ok(self.tool_reply(&request.id, entry, result)),
                    Err(problem) => Ok(self.invalid_outcome(&request.id, entry, &problem)),
                }
            }
        }
    }

    /// A tool's result, or its failure if the result encodes larger than
    /// the tool's output limit.
    fn tool_reply(&self, id: &Value, entry: &ToolEntry, result: impl serde::Serialize) -> Reply {
        self.reply_within(id, result, entry.max_output_bytes())
            .unwrap_or_else(|error| {
                tracing::warn!(tool = %entry.key(), file = %entry.source().display(), %error, "tool call failed");
                self.tool_failure(id, entry.key(), &error.to_string())
            })
    }

    /// A complete result with `isError`, for a tool that failed to run.
    fn tool_failure(&self, id: &Value, tool: &str, why: &str) -> Reply {
        let result = wit::CallResult {
            content: vec![wit::ContentBlock::Text(wit::TextContent {
                text: format!("Tool '{tool}' failed: {why}"),
                annotations: None,
            })],
            structured_content: None,
            is_error: true,
        };
        match wire::call_result(&result) {
            Ok(result) => self.reply(id, result),
            Err(_) => {
                let error = RpcError::internal("cannot encode a failure result");
                Reply {
                    body: jsonrpc::encode_error(Some(id), &error),
                    http_status: error.http_status,
                }
            }
        }
    }

    fn invalid_outcome(&self, id: &Value, entry: &ToolEntry, problem: &str) -> Reply {
        tracing::warn!(tool = %entry.key(), file = %entry.source().display(), problem, "tool returned an invalid outcome");
        self.tool_failure(
            id,
            entry.key(),
            &format!("it returned an invalid outcome: {problem}"),
        )
    }
}
