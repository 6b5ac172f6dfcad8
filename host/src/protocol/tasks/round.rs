//! One round of a task: the tool's call export in a fresh instance, with the
//! task's sealed state and the client's answers, and what its outcome
//! makes of the task.

use serde_json::{Map, Value, json};

use super::view;
use crate::protocol::answer::Answer;
use crate::protocol::catalog::Catalog;
use crate::protocol::context::Services;
use crate::protocol::envelope::ClientCapabilities;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::mrtr::{self, RoundMethod, Settled, Target};
use crate::protocol::tools::ToolCall;
use crate::protocol::wire;
use crate::runtime::{CallError, wit};
use crate::sealing::KeyRing;
use crate::tasks::TaskRecord;
use crate::tasks::payload::TaskPayload;
use crate::tasks::runner::RoundEnd;

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
    let opened =
        TaskPayload::<ClientCapabilities>::open(keys, &record.id, &record.owner, &record.sealed);
    let mut payload = match opened {
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
            checkpoint(keys, record, &payload)
        }
        Settled::InputRequired(input) => {
            payload.set_state(input.state.as_deref());
            if input.requests.is_empty() {
                // Only a new state: a checkpoint under another name.
                return checkpoint(keys, record, &payload);
            }
            let max_json_depth = services.runtime.limits().max_json_depth;
            let client = &payload.client;
            let requests =
                match mrtr::encode_requests(target, &input.requests, client, limit, max_json_depth)
                {
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
            match seal(keys, record, &payload) {
                Ok(sealed) => RoundEnd::InputRequired {
                    requests: Value::Object(wire_requests),
                    sealed,
                },
                Err(error) => failed(&error),
            }
        }
    }
}

/// The task's next round is due at once, with `payload`.
fn checkpoint(
    keys: &KeyRing,
    record: &TaskRecord,
    payload: &TaskPayload<ClientCapabilities>,
) -> RoundEnd {
    match seal(keys, record, payload) {
        Ok(sealed) => RoundEnd::Checkpoint(sealed),
        Err(error) => failed(&error),
    }
}

/// `payload` sealed for the task of `record`; failing, the task's error.
fn seal(
    keys: &KeyRing,
    record: &TaskRecord,
    payload: &TaskPayload<ClientCapabilities>,
) -> Result<Vec<u8>, RpcError> {
    payload
        .seal(keys, &record.id, &record.owner)
        .map_err(|error| RpcError::internal(error.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::payload::tests::VECTOR_JSON;

    #[test]
    fn a_stored_payload_reads_as_it_was_written_and_writes_alike() {
        let mut expected = TaskPayload {
            arguments: r#"{"seconds":2}"#.to_owned(),
            state: None,
            pending: vec!["again".to_owned()],
            answers: Map::from_iter([(
                "confirm".to_owned(),
                json!({"action": "accept", "content": {"ok": true}}),
            )]),
            client: ClientCapabilities {
                elicitation_form: true,
                roots: true,
                tasks: true,
                ..ClientCapabilities::default()
            },
        };
        expected.set_state(Some(b"guest state \0\xff"));
        let read: TaskPayload<ClientCapabilities> = serde_json::from_str(VECTOR_JSON).unwrap();
        assert_eq!(read, expected);
        assert_eq!(read.state_bytes().unwrap(), b"guest state \0\xff");
        assert_eq!(serde_json::to_string(&read).unwrap(), VECTOR_JSON);
    }
}
