//! `tools/call`: one round of a tool, as a [`RoundMethod`].
//!
//! The arguments are an object (or absent), and the `x-mcp-header`
//! parameters a tool declares must match their `Mcp-Param-*` headers. A
//! tool that fails to run (trap, timeout, memory, bad or oversized output)
//! gives a complete result with `isError`, which the model can read; only
//! protocol problems are JSON-RPC errors.
//!
//! Arguments that do not match the tool's input schema are an input
//! validation error (SEP-1303): an `isError` result naming the first
//! violations, so that the model can correct its call, given before
//! anything runs (no instance is made). Every round of a multi-round call
//! carries the same arguments and is checked again; a task's later rounds
//! run on the arguments of the call that started it, checked then. Heavy
//! arguments are checked off the thread serving requests
//! ([`HeavyChecks`](crate::registry::input_schema::HeavyChecks)).

use serde_json::{Value, json};

use super::answer::{Answer, Complete};
use super::catalog::Catalog;
use super::context::{ProtocolSettings, Services};
use super::envelope::{self, MirroredHeaders, RequestMeta, TASKS_EXTENSION};
use super::jsonrpc::{Request, RpcError};
use super::mrtr::{RoundMethod, Settled, Target};
use super::outcome::Outcome;
use super::param_headers;
use super::wire;
use crate::registry::ToolEntry;
use crate::runtime::{CallError, EventSink, Runtime, wit};

/// One round of `tools/call`: the tool.
pub(super) struct ToolCall {
    entry: ToolEntry,
}

impl ToolCall {
    /// A round of the tool of `entry`.
    pub(super) fn of(entry: ToolEntry) -> ToolCall {
        ToolCall { entry }
    }
}

/// The JSON-RPC error a component ended a call with, if its message fits
/// in `limit` bytes.
fn guest_error(error: &wit::ProtocolError, limit: usize) -> Result<RpcError, String> {
    if error.message.len() > limit {
        return Err(CallError::OutputTooLarge { limit }.to_string());
    }
    Ok(RpcError::new(error.code, error.message.clone()).with_outcome(Outcome::Failed))
}

/// What a call without arguments is bound to: no members.
static NO_ARGUMENTS: Value = Value::Null;

/// The arguments object of a call (checked by `prepare`), or `null`.
fn call_arguments(request: &Request) -> &Value {
    match request.params.get("arguments") {
        Some(arguments @ Value::Object(_)) => arguments,
        _ => &NO_ARGUMENTS,
    }
}

impl RoundMethod for ToolCall {
    const METHOD: &'static str = "tools/call";
    const KIND: &'static str = "Tool";
    const NAMED_BY: &'static str = "name";
    type Outcome = wit::CallOutcome;

    fn prepare(
        catalog: &Catalog,
        settings: &ProtocolSettings,
        name: &str,
        request: &Request,
        meta: &RequestMeta,
        headers: Option<&MirroredHeaders<'_>>,
    ) -> Result<Self, Answer> {
        let arguments = match request.params.get("arguments") {
            None | Some(Value::Null | Value::Object(_)) => call_arguments(request),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: arguments must be an object",
                )
                .into());
            }
        };
        if let (Some(annotated), Some(all)) =
            (catalog.param_headers.get(name), headers.and_then(|h| h.all))
        {
            param_headers::check(annotated, arguments, |header| {
                all.get(header)
                    .map(|v| v.to_str().map(str::trim).unwrap_or("\u{fffd}"))
            })?;
        }
        let entry = catalog
            .registry
            .find(name)
            .ok_or_else(|| super::access::unknown_tool(name))?;
        let tool = entry.item();
        if tool.listed.task_support == wit::TaskSupport::Required && !meta.capabilities.tasks {
            return Err(envelope::missing_capability(
                format!(
                    "Tool '{name}' runs only as a task: declare the {TASKS_EXTENSION} extension \
                     in _meta clientCapabilities.extensions"
                ),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            )
            .into());
        }
        let checked = settings.heavy_checks.run(arguments, || {
            tool.check_arguments(arguments, &settings.violations)
        });
        if let Err(violations) = checked {
            tracing::debug!(tool = name, %violations, "arguments refused");
            return Err(error_result(
                format!(
                    "Tool '{name}' was not run: its arguments do not match its input schema: \
                     {violations}"
                ),
                Outcome::Invalid,
            ));
        }
        Ok(ToolCall::of(entry.clone()))
    }

    fn arguments<'r>(&self, request: &'r Request) -> &'r Value {
        call_arguments(request)
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
        request: &Request,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit::CallOutcome, CallError> {
        let arguments = match call_arguments(request) {
            Value::Null => "{}".to_owned(),
            arguments => arguments.to_string(),
        };
        self.entry.call(runtime, &arguments, round, events).await
    }

    fn settle(
        &self,
        services: Services<'_>,
        _name: &str,
        outcome: wit::CallOutcome,
        limit: usize,
    ) -> Settled {
        let max_json_depth = services.runtime.limits().max_json_depth;
        match outcome {
            wit::CallOutcome::Complete(result) => {
                match wire::call_result(&result, max_json_depth) {
                    Ok(encoded) if result.is_error => {
                        Settled::encode(&encoded, limit).with_outcome(Outcome::Failed)
                    }
                    Ok(encoded) => Settled::encode(&encoded, limit),
                    Err(error) => {
                        Settled::Failed(format!("it returned an invalid outcome: {}", error.0))
                    }
                }
            }
            wit::CallOutcome::InputRequired(input) => Settled::InputRequired(input),
            wit::CallOutcome::ContinueAsTask(_)
                if self.entry.item().listed.task_support == wit::TaskSupport::Never =>
            {
                Settled::Failed(
                    "it asked to continue as a task, but it lists its task support as `never`"
                        .to_owned(),
                )
            }
            wit::CallOutcome::ContinueAsTask(state) => Settled::Task(state),
            wit::CallOutcome::Failed(error) => match guest_error(&error, limit) {
                Ok(error) => Settled::Answer(Answer::Error(error)),
                Err(why) => Settled::Failed(why),
            },
        }
    }

    fn failure(&self, target: Target<'_>, why: String) -> Answer {
        error_result(
            format!("Tool '{}' failed: {why}", target.name),
            Outcome::Failed,
        )
    }
}

/// A complete `isError` result whose one text block is `text`, ending its
/// request with `outcome`: what the model reads of a tool that failed
/// ([`Outcome::Failed`]), or of a call it must correct
/// ([`Outcome::Invalid`]).
fn error_result(text: String, outcome: Outcome) -> Answer {
    let result = wit::CallResult {
        content: vec![wit::ContentBlock::Text(wit::TextContent {
            text,
            annotations: None,
        })],
        structured_content: None,
        is_error: true,
    };
    // The host's own text: no JSON text of a guest to bound.
    let max_depth = crate::guest_json::MAX_DEPTH_CEILING;
    match wire::call_result(&result, max_depth).map(|result| serde_json::to_string(&result)) {
        Ok(Ok(members)) => Answer::Complete(Complete::new(members).with_outcome(outcome)),
        _ => Answer::Error(RpcError::internal("cannot encode a failure result")),
    }
}
