//! One round of a task: the tool's call export in a fresh instance, with the
//! task's sealed state and the client's answers, and what its outcome
//! makes of the task.

use serde_json::{Map, Value, json};

use super::payload::{self, TaskPayload};
use super::view;
use crate::protocol::answer::Answer;
use crate::protocol::catalog::Catalog;
use crate::protocol::context::Services;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::mrtr::{self, RoundMethod, Settled, Target};
use crate::protocol::tools::ToolCall;
use crate::protocol::wire;
use crate::runtime::{CallError, wit};
use crate::tasks::TaskRecord;

/// How a round leaves its task.
#[derive(Debug)]
pub(in crate::protocol) enum RoundEnd {
    /// The task is done: this result (an `isError` result included).
    Completed(Value),
    /// The task failed with this JSON-RPC error (`{code, message}`).
    Failed(Value),
    /// The task waits for the client's answers to these requests (the wire's
    /// `inputRequests`), then runs its next round with this payload.
    InputRequired {
        /// The requests, by their task-unique keys.
        requests: Value,
        /// The payload for the next round: the tool's keys pending.
        payload: TaskPayload,
    },
    /// The round stored a checkpoint: the next round is due at once, with
    /// this payload.
    Checkpoint(TaskPayload),
    /// The round could not start (the server is at its limits): run it again
    /// later, as it was.
    Deferred,
}

impl RoundEnd {
    /// How the round ended, as a label value of `airlock_task_rounds_total`.
    pub(in crate::protocol) fn outcome(&self) -> &'static str {
        match self {
            RoundEnd::Completed(_) => "completed",
            RoundEnd::Failed(_) => "failed",
            RoundEnd::InputRequired { .. } => "input_required",
            RoundEnd::Checkpoint(_) => "checkpoint",
            RoundEnd::Deferred => "deferred",
        }
    }
}

/// Runs the next round of `record` (claimed by this host).
pub(in crate::protocol) async fn run(
    services: Services<'_>,
    catalog: &Catalog,
    record: &TaskRecord,
) -> RoundEnd {
    let name = record.tool.as_str();
    let Some(entry) = catalog.registry.find(name) else {
        return failed(&RpcError::invalid_params(format!(
            "Tool '{name}' is no longer served, so its task cannot go on"
        )));
    };
    let keys = services.sealer.keys();
    let mut payload = match payload::open(keys, &record.id, &record.owner, &record.sealed) {
        Ok(payload) => payload,
        Err(error) => {
            tracing::warn!(task = %record.id, %error, "cannot open a task's state");
            return failed(&RpcError::internal(error.to_string()));
        }
    };
    let responses = match wire::input_responses(&Value::Object(payload.answers.clone())) {
        Ok(responses) => responses,
        Err(error) => return failed(&RpcError::invalid_params(error.to_string())),
    };
    let number = record.round + 1;
    let round = wit::Round {
        number,
        responses,
        state: payload.state_bytes(),
        client: mrtr::capabilities(&payload.client),
        task: true,
    };
    let call = ToolCall::of(entry.clone());
    let target = Target { kind: "Tool", name };
    let outcome = entry
        .call(services.runtime, &payload.arguments, &round, None)
        .await;
    let outcome = match outcome {
        Err(CallError::Busy { .. }) => return RoundEnd::Deferred,
        Err(error) => return completed(mrtr::failed(&call, target, error.to_string())),
        Ok(outcome) => outcome,
    };
    let limit = call.max_output_bytes();
    // The answers were for this round; the next starts without them.
    payload.answers = Map::new();
    payload.pending = Vec::new();
    match call.settle(services, name, outcome, limit) {
        Settled::Complete(complete) => completed(Answer::Complete(complete)),
        Settled::Answer(answer) => completed(answer),
        Settled::Failed(why) => completed(mrtr::failed(&call, target, why)),
        Settled::Task(state) => {
            payload.set_state(state.as_deref());
            RoundEnd::Checkpoint(payload)
        }
        Settled::InputRequired(input) => {
            payload.set_state(input.state.as_deref());
            if input.requests.is_empty() {
                // Only a new state: a checkpoint under another name.
                return RoundEnd::Checkpoint(payload);
            }
            let requests =
                match mrtr::encode_requests(target, &input.requests, &payload.client, limit) {
                    Err(error) => return failed(&error),
                    Ok(Err(why)) => return completed(mrtr::failed(&call, target, why)),
                    Ok(Ok(requests)) => requests,
                };
            let prefix = view::key_prefix(number);
            let mut wire_requests = Map::new();
            for request in requests {
                let params = serde_json::from_str::<Value>(&request.params).unwrap_or(Value::Null);
                wire_requests.insert(
                    format!("{prefix}{}", request.key),
                    json!({ "method": request.method, "params": params }),
                );
                payload.pending.push(request.key);
            }
            RoundEnd::InputRequired {
                requests: Value::Object(wire_requests),
                payload,
            }
        }
    }
}

/// The task ends as `answer` says: a result, or a JSON-RPC error.
fn completed(answer: Answer) -> RoundEnd {
    match answer {
        Answer::Complete(complete) => {
            let mut result =
                serde_json::from_str::<Map<String, Value>>(&complete.members).unwrap_or_default();
            result.insert("resultType".into(), json!("complete"));
            RoundEnd::Completed(Value::Object(result))
        }
        Answer::Error(error) => failed(&error),
        Answer::InputRequired(_) | Answer::Task(_) => failed(&RpcError::internal(
            "a task round gave an answer a task cannot hold",
        )),
    }
}

/// The task fails with `error`.
fn failed(error: &RpcError) -> RoundEnd {
    RoundEnd::Failed(super::error_object(error))
}
