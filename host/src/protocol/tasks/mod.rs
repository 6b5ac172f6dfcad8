//! MCP's tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) on the
//! wire: tool calls that go on after their request has been answered.
//!
//! A call becomes a task when its component, in a plain round, returns
//! `continue-as-task` and the client declared the extension on that
//! request. The task is then stored ([`create`], durable before the client
//! hears of it) and its rounds run in the background, by whichever host of
//! a fleet claims them from the shared store ([`crate::tasks`]); each round
//! runs in a fresh instance through the protocol's pipeline, like every
//! call ([`round`]).
//!
//! The client polls with `tasks/get`, answers a task's input requests with
//! `tasks/update` and stops it with `tasks/cancel`; a listen stream with
//! `taskIds` gets `notifications/tasks` ([`view`]). Every request about a
//! task is checked against the principal that created it: another principal
//! gets the same answer as for an id that does not exist.

mod round;
mod view;

use serde_json::{Map, Value, json};

use super::access::Gate;
use super::answer::Answer;
use super::context::Services;
use super::envelope::{self, ClientCapabilities, MirroredHeaders, RequestMeta, TASKS_EXTENSION};
use super::jsonrpc::{Request, RpcError, required_str};
use super::outcome::Outcome;
use super::wire;
use crate::metrics;
use crate::tasks::payload::TaskPayload;
use crate::tasks::runner::Failure;
use crate::tasks::{
    Bound, StoreError, TaskEvent, TaskRecord, TaskStatus, Tasks, WRITE_ATTEMPTS, millis, now_ms,
    random_id,
};
pub(super) use round::run as run_round;

/// What a call that goes on as a task starts from.
pub(super) struct TaskStart<'a> {
    /// The principal that made the call, and owns the task.
    pub(super) owner: &'a str,
    /// The tool.
    pub(super) tool: &'a str,
    /// The call's arguments (`null` for none).
    pub(super) arguments: &'a Value,
    /// The round that asked to go on as a task.
    pub(super) round: u32,
    /// The guest's state for the task's first round.
    pub(super) state: Option<&'a [u8]>,
    /// What the client declared on the request.
    pub(super) client: ClientCapabilities,
}

/// Stores a new task for `start` and answers with its `CreateTaskResult`,
/// once the task is durably stored (so `tasks/get` resolves it at once).
pub(super) async fn create(
    tasks: &Tasks,
    services: Services<'_>,
    start: TaskStart<'_>,
) -> Result<Answer, RpcError> {
    let id = random_id();
    let mut payload = TaskPayload {
        arguments: match start.arguments {
            Value::Null => "{}".to_owned(),
            arguments => arguments.to_string(),
        },
        state: None,
        pending: Vec::new(),
        answers: Map::new(),
        client: start.client,
    };
    payload.set_state(start.state);
    let sealed = payload
        .seal(services.sealer.keys(), &id, start.owner)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let now = now_ms();
    let record = TaskRecord {
        id: id.clone(),
        owner: start.owner.to_owned(),
        tool: start.tool.to_owned(),
        status: TaskStatus::Working,
        status_message: None,
        created_at_ms: now,
        updated_at_ms: now,
        expires_at_ms: now + millis(tasks.settings().ttl),
        poll_interval_ms: Some(millis(tasks.settings().poll_interval)),
        round: start.round,
        attempts: 0,
        sealed,
        input_requests: None,
        outcome: None,
        runnable: true,
        due_since_ms: now,
        lease: None,
        version: 0,
    };
    if record.payload_bytes() > tasks.settings().max_task_bytes {
        return Err(RpcError::invalid_params(format!(
            "Tool '{}' asked to go on as a task with more than the {} bytes a task may store",
            start.tool,
            tasks.settings().max_task_bytes
        )));
    }
    tasks
        .store()
        .create(record.clone(), tasks.settings().store_limits())
        .await
        .map_err(|error| store_error(error, start.owner))?;
    tracing::info!(task = %id, tool = start.tool, principal = start.owner, "task created");
    crate::audit::task(record.audited(), "created");
    metrics::task_created();
    tasks.announce(&id, true).await;
    Ok(Answer::Task(view::created(&record)))
}

/// `tasks/get`: the task as it stands, with its input requests, result
/// or error.
pub(super) async fn get(
    tasks: &Tasks,
    request: &Request,
    principal: &str,
    gate: &Gate<'_>,
) -> Result<Answer, RpcError> {
    let id = task_id(request)?;
    let record = owned(tasks, id, principal, gate).await?;
    Ok(Answer::complete(&view::detailed(&record)))
}

/// `tasks/update`: the client's answers to the task's input requests.
/// Answers to keys the task does not wait for are ignored; once every
/// request is answered, the task's next round is due.
pub(super) async fn update(
    tasks: &Tasks,
    services: Services<'_>,
    request: &Request,
    principal: &str,
    gate: &Gate<'_>,
) -> Result<Answer, RpcError> {
    let id = task_id(request)?;
    let Some(Value::Object(responses)) = request.params.get("inputResponses") else {
        return Err(RpcError::invalid_params(
            "Invalid params: inputResponses must be an object",
        ));
    };
    for _ in 0..WRITE_ATTEMPTS {
        let mut record = owned(tasks, id, principal, gate).await?;
        if record.status != TaskStatus::InputRequired {
            // Answers to requests the task no longer waits for.
            return Ok(acknowledged());
        }
        let keys = services.sealer.keys();
        let mut payload =
            TaskPayload::<ClientCapabilities>::open(keys, id, principal, &record.sealed)
                .map_err(|e| RpcError::internal(e.to_string()))?;
        let prefix = view::key_prefix(record.round);
        let mut asked: Map<String, Value> = record
            .input_requests
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        let mut accepted = false;
        for (wire_key, response) in responses {
            let Some(key) = wire_key.strip_prefix(&prefix) else {
                continue;
            };
            let Some(at) = payload.pending.iter().position(|k| k == key) else {
                continue;
            };
            let one = Value::Object(Map::from_iter([(key.to_owned(), response.clone())]));
            wire::input_responses(&one)
                .map_err(|e| RpcError::invalid_params(format!("Invalid params: {e}")))?;
            payload.pending.remove(at);
            payload.answers.insert(key.to_owned(), response.clone());
            asked.remove(wire_key);
            accepted = true;
        }
        if !accepted {
            return Ok(acknowledged());
        }
        let complete = payload.pending.is_empty();
        record.sealed = payload
            .seal(keys, id, principal)
            .map_err(|e| RpcError::internal(e.to_string()))?;
        if complete {
            record.status = TaskStatus::Working;
            record.input_requests = None;
            record.runnable = true;
            record.due_since_ms = now_ms();
        } else {
            record.input_requests = Some(Value::Object(asked).to_string());
        }
        record.updated_at_ms = now_ms();
        if record.payload_bytes() > tasks.settings().max_task_bytes {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: the answers would make the task store more than {} bytes",
                tasks.settings().max_task_bytes
            )));
        }
        if tasks
            .replace(&record)
            .await
            .map_err(|error| store_error(error, principal))?
        {
            tasks.announce(id, complete).await;
            return Ok(acknowledged());
        }
    }
    Err(busy_task(id))
}

/// `tasks/cancel`: ends the task as `cancelled`, and stops its round
/// wherever it runs. Cancelling an ended task changes nothing.
pub(super) async fn cancel(
    tasks: &Tasks,
    request: &Request,
    principal: &str,
    gate: &Gate<'_>,
) -> Result<Answer, RpcError> {
    let id = task_id(request)?;
    for _ in 0..WRITE_ATTEMPTS {
        let mut record = owned(tasks, id, principal, gate).await?;
        if record.status.is_terminal() {
            return Ok(acknowledged());
        }
        record.status = TaskStatus::Cancelled;
        record.status_message = Some("Cancelled by the client".to_owned());
        record.runnable = false;
        record.lease = None;
        record.input_requests = None;
        // Its state is never needed again.
        record.sealed = Vec::new();
        record.updated_at_ms = now_ms();
        if tasks
            .replace(&record)
            .await
            .map_err(|error| store_error(error, principal))?
        {
            tracing::info!(task = %id, tool = %record.tool, "task cancelled");
            crate::audit::task(record.audited(), "cancelled");
            tasks.interrupt(id);
            if let Err(error) = tasks
                .store()
                .publish(TaskEvent::Cancelled(id.to_owned()))
                .await
            {
                tracing::warn!(task = %id, %error, "cannot tell other hosts of a cancellation; they notice it when they next renew the round's lease");
            }
            tasks.announce(id, false).await;
            return Ok(acknowledged());
        }
    }
    Err(busy_task(id))
}

/// The `notifications/tasks` message for task `id`, if `principal` owns
/// it, it still exists, and the listener may use its tool now.
pub(super) async fn notification(
    tasks: &Tasks,
    id: &str,
    principal: &str,
    may_use_tool: &(dyn Fn(&str) -> bool + Send + Sync),
) -> Option<Value> {
    let record = tasks.store().get(id).await.ok()??;
    (record.owner == principal && may_use_tool(&record.tool)).then(|| view::detailed(&record))
}

/// The task `id` if `principal` owns it and may use its tool now (`gate`);
/// otherwise the error of an unknown id, so that nobody learns whether
/// another's task exists (or the access refusal of its tool, when the
/// caller may see the tool).
async fn owned(
    tasks: &Tasks,
    id: &str,
    principal: &str,
    gate: &Gate<'_>,
) -> Result<TaskRecord, RpcError> {
    let found = tasks.store().get(id).await;
    let unknown = || {
        RpcError::invalid_params(format!("Invalid params: unknown taskId {id:?}"))
            .with_outcome(Outcome::Unknown)
    };
    match found.map_err(|error| store_error(error, principal))? {
        Some(record) if record.owner == principal => {
            gate.tool(&record.tool, unknown)?;
            Ok(record)
        }
        _ => Err(unknown()),
    }
}

/// Checks a tasks method's envelope: the extension declared on this very
/// request, and (on HTTP) the `Mcp-Name` header naming the task.
pub(super) fn check_request(
    request: &Request,
    meta: &RequestMeta,
    headers: Option<&MirroredHeaders<'_>>,
) -> Result<(), RpcError> {
    if !meta.capabilities.tasks {
        return Err(extension_required(&request.method));
    }
    envelope::check_name_header(headers, task_id(request)?)
}

/// -32021 for a request that needs the tasks extension declared.
pub(super) fn extension_required(what: &str) -> RpcError {
    envelope::missing_capability(
        format!(
            "{what} needs the {TASKS_EXTENSION} extension: declare it in _meta clientCapabilities.extensions"
        ),
        json!({ "extensions": { TASKS_EXTENSION: {} } }),
    )
}

/// `params.taskId`.
fn task_id(request: &Request) -> Result<&str, RpcError> {
    required_str(&request.params, "taskId")
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel`.
fn acknowledged() -> Answer {
    Answer::complete(&json!({}))
}

/// The error for a task that other writers kept changing under us.
fn busy_task(id: &str) -> RpcError {
    RpcError::unavailable(format!(
        "Task {id} is changing too often to update; try again"
    ))
}

/// A store's failure, as `principal` sees it: a bound of the store is a
/// quota refusal (-31429, counted and logged), anything else a failure of
/// the store.
fn store_error(error: StoreError, principal: &str) -> RpcError {
    match error {
        StoreError::Full(bound) => {
            tracing::info!(principal, %bound, "task store bound reached: request refused");
            over_bound(bound)
        }
        StoreError::Unavailable(why) => {
            tracing::warn!(why, "the task store failed");
            RpcError::unavailable("The task store is unavailable; try again")
        }
    }
}

/// `error` as the JSON-RPC error object a failed task holds.
fn error_object(error: &RpcError) -> Value {
    let mut object = json!({ "code": error.code, "message": error.message });
    if let Some(data) = &error.data {
        object["data"] = data.clone();
    }
    object
}

/// The error a task fails with when the runner fails it: over a bound of
/// the store, the quota refusal ([`over_bound`]); otherwise an internal
/// error saying why.
pub(super) fn failure(why: &Failure) -> Value {
    let error = match why {
        Failure::StoreFull(bound) => over_bound(*bound),
        Failure::GaveUp(_) | Failure::TooLarge(_) => RpcError::internal(why.to_string()),
    };
    error_object(&error)
}

/// The quota refusal for a write `bound` refused, counted in
/// `airlock_limit_hits_total`: its `data` names the limit and its maximum.
fn over_bound(bound: Bound) -> RpcError {
    let (kind, limit, max, message) = match bound {
        Bound::ActivePerOwner(max) => (
            metrics::Limit::TasksPerPrincipal,
            "tasks-per-principal",
            max,
            format!(
                "Too many tasks: a caller may have at most {max} working or waiting for input; \
                 wait for one to end, or cancel one"
            ),
        ),
        Bound::Tasks(max) => (
            metrics::Limit::TaskStore,
            "task-store-tasks",
            max,
            format!(
                "The task store is full: it holds at most {max} tasks until they expire; \
                 try again later"
            ),
        ),
        Bound::Bytes(max) => (
            metrics::Limit::TaskStore,
            "task-store-bytes",
            max,
            format!(
                "The task store is full: its tasks may hold at most {max} bytes until they \
                 expire; try again later"
            ),
        ),
    };
    metrics::limit_hit(kind);
    crate::audit::over_quota(limit);
    RpcError::quota_exceeded(message).with_data(json!({ "limit": limit, "max": max }))
}
