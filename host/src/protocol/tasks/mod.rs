//! MCP's tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): tool
//! calls that go on after their request has been answered.
//!
//! A call becomes a task when its component, in a plain round, returns
//! `continue-as-task` and the client declared the extension on that
//! request. The task is then stored ([`Tasks::create`], durable before the
//! client hears of it) and its rounds run in the background
//! ([`runner`]): each round in a fresh instance, like every call, by
//! whichever host of a fleet claims it from the shared
//! [`TaskStore`]. What the guest keeps between rounds (its state, the
//! client's answers) is sealed in the record ([`payload`]).
//!
//! The client polls with `tasks/get`, answers a task's input requests with
//! `tasks/update` and stops it with `tasks/cancel`; a listen stream with
//! `taskIds` gets `notifications/tasks`. Every request about a task is
//! checked against the principal that created it: another principal gets
//! the same answer as for an id that does not exist.

mod payload;
mod round;
mod runner;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, Semaphore, watch};

use super::answer::Answer;
use super::context::Services;
use super::envelope::{self, ClientCapabilities, MirroredHeaders, RequestMeta, TASKS_EXTENSION};
use super::jsonrpc::{Request, RpcError, required_str};
use super::wire;
use crate::metrics;
use crate::tasks::{
    Bound, StoreError, StoreLimits, TaskEvent, TaskRecord, TaskStatus, TaskStore, now_ms,
};
pub use payload::TaskPayload;
pub(super) use round::{RoundEnd, run as run_round};

/// The limits and timings of tasks.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// How long a task stays readable after it was created (`ttlMs`).
    pub ttl: Duration,
    /// How often clients are asked to poll (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// Most active tasks (working or waiting for input) one principal may
    /// have.
    pub max_per_principal: usize,
    /// Most tasks the store holds, of every principal, ended ones included,
    /// until they expire.
    pub max_stored_tasks: usize,
    /// Most bytes the store's tasks hold together (as counted for
    /// `max_task_bytes`).
    pub max_store_bytes: u64,
    /// Most task rounds this host runs at once.
    pub max_running: usize,
    /// Most bytes one task may store (its sealed state and answers, its
    /// input requests, its result).
    pub max_task_bytes: usize,
    /// How many times one round is started before the task fails (a round
    /// starts again when the host running it stopped).
    pub max_attempts: u32,
}

impl TaskSettings {
    /// The bounds of the store these settings give.
    pub fn store_limits(&self) -> StoreLimits {
        StoreLimits {
            active_per_owner: u64::try_from(self.max_per_principal).unwrap_or(u64::MAX),
            tasks: u64::try_from(self.max_stored_tasks).unwrap_or(u64::MAX),
            bytes: self.max_store_bytes,
        }
    }
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            max_per_principal: 1000,
            max_stored_tasks: 100_000,
            max_store_bytes: 512 << 20,
            max_running: 16,
            max_task_bytes: 1 << 20,
            max_attempts: 3,
        }
    }
}

/// The tasks of this server: the store they live in and the rounds this
/// host runs.
pub struct Tasks {
    store: Arc<dyn TaskStore>,
    settings: TaskSettings,
    /// This process, as the holder of the leases it takes.
    host: String,
    /// The rounds running here, by task id: notified to stop them.
    running: Mutex<HashMap<String, Arc<Notify>>>,
    /// One permit per round running here.
    slots: Arc<Semaphore>,
    /// Notified when a round ends here and frees its slot.
    freed: Notify,
    /// Turns `true` when this host stops claiming rounds (it shuts down).
    stopping: watch::Sender<bool>,
}

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

/// How many times a write that lost a race with another host's is tried
/// again, reading the task anew each time.
const WRITE_ATTEMPTS: usize = 8;

impl Tasks {
    /// Tasks kept in `store`.
    pub fn new(store: Arc<dyn TaskStore>, settings: TaskSettings) -> Tasks {
        let slots = Arc::new(Semaphore::new(settings.max_running.max(1)));
        Tasks {
            store,
            settings,
            host: random_id(),
            running: Mutex::default(),
            slots,
            freed: Notify::new(),
            stopping: watch::Sender::new(false),
        }
    }

    /// The store, for readiness checks and logs.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    /// Stores a new task for `start` and answers with its `CreateTaskResult`,
    /// once the task is durably stored (so `tasks/get` resolves it at once).
    pub(super) async fn create(
        &self,
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
        let sealed = payload::seal(services.sealer.keys(), &id, start.owner, &payload)
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
            expires_at_ms: now + millis(self.settings.ttl),
            poll_interval_ms: Some(millis(self.settings.poll_interval)),
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
        if record.payload_bytes() > self.settings.max_task_bytes {
            return Err(RpcError::invalid_params(format!(
                "Tool '{}' asked to go on as a task with more than the {} bytes a task may store",
                start.tool, self.settings.max_task_bytes
            )));
        }
        self.store
            .create(record.clone(), self.settings.store_limits())
            .await
            .map_err(|error| store_error(error, start.owner))?;
        tracing::info!(task = %id, tool = start.tool, principal = start.owner, "task created");
        crate::metrics::task_created();
        self.announce(&id, true).await;
        Ok(Answer::Task(view::created(&record)))
    }

    /// `tasks/get`: the task as it stands, with its input requests, result
    /// or error.
    pub(super) async fn get(&self, request: &Request, principal: &str) -> Result<Answer, RpcError> {
        let id = task_id(request)?;
        let record = self.owned(id, principal).await?;
        Ok(Answer::complete(&view::detailed(&record)))
    }

    /// `tasks/update`: the client's answers to the task's input requests.
    /// Answers to keys the task does not wait for are ignored; once every
    /// request is answered, the task's next round is due.
    pub(super) async fn update(
        &self,
        services: Services<'_>,
        request: &Request,
        principal: &str,
    ) -> Result<Answer, RpcError> {
        let id = task_id(request)?;
        let Some(Value::Object(responses)) = request.params.get("inputResponses") else {
            return Err(RpcError::invalid_params(
                "Invalid params: inputResponses must be an object",
            ));
        };
        for _ in 0..WRITE_ATTEMPTS {
            let mut record = self.owned(id, principal).await?;
            if record.status != TaskStatus::InputRequired {
                // Answers to requests the task no longer waits for.
                return Ok(acknowledged());
            }
            let keys = services.sealer.keys();
            let mut payload = payload::open(keys, id, principal, &record.sealed)
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
            record.sealed = payload::seal(keys, id, principal, &payload)
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
            if record.payload_bytes() > self.settings.max_task_bytes {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: the answers would make the task store more than {} bytes",
                    self.settings.max_task_bytes
                )));
            }
            if self
                .replace(&record)
                .await
                .map_err(|error| store_error(error, principal))?
            {
                self.announce(id, complete).await;
                return Ok(acknowledged());
            }
        }
        Err(busy_task(id))
    }

    /// `tasks/cancel`: ends the task as `cancelled`, and stops its round
    /// wherever it runs. Cancelling an ended task changes nothing.
    pub(super) async fn cancel(
        &self,
        request: &Request,
        principal: &str,
    ) -> Result<Answer, RpcError> {
        let id = task_id(request)?;
        for _ in 0..WRITE_ATTEMPTS {
            let mut record = self.owned(id, principal).await?;
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
            if self
                .replace(&record)
                .await
                .map_err(|error| store_error(error, principal))?
            {
                tracing::info!(task = %id, tool = %record.tool, "task cancelled");
                self.interrupt(id);
                if let Err(error) = self
                    .store
                    .publish(TaskEvent::Cancelled(id.to_owned()))
                    .await
                {
                    tracing::warn!(task = %id, %error, "cannot tell other hosts of a cancellation; they notice it when they next renew the round's lease");
                }
                self.announce(id, false).await;
                return Ok(acknowledged());
            }
        }
        Err(busy_task(id))
    }

    /// The `notifications/tasks` message for task `id`, if `principal` owns
    /// it and it still exists.
    pub(super) async fn notification(&self, id: &str, principal: &str) -> Option<Value> {
        let record = self.store.get(id).await.ok()??;
        (record.owner == principal).then(|| view::detailed(&record))
    }

    /// A receiver of what happens to tasks, on any host sharing the store.
    pub(super) fn events(&self) -> tokio::sync::broadcast::Receiver<TaskEvent> {
        self.store.events()
    }

    /// Writes `record` in place of the version it was read from, within
    /// the store's byte bound ([`TaskStore::replace`]).
    async fn replace(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        self.store
            .replace(record, self.settings.store_limits())
            .await
    }

    /// The task `id` if `principal` owns it; otherwise the error of an
    /// unknown id, so that nobody learns whether another's task exists.
    async fn owned(&self, id: &str, principal: &str) -> Result<TaskRecord, RpcError> {
        let found = self.store.get(id).await;
        match found.map_err(|error| store_error(error, principal))? {
            Some(record) if record.owner == principal => Ok(record),
            _ => Err(RpcError::invalid_params(format!(
                "Invalid params: unknown taskId {id:?}"
            ))),
        }
    }

    /// Tells listeners that task `id` changed and, when `due`, every host
    /// that a round is due. A failure is logged: hosts and pollers notice
    /// the change on their next look.
    async fn announce(&self, id: &str, due: bool) {
        let mut events = vec![TaskEvent::Changed(id.to_owned())];
        if due {
            events.push(TaskEvent::Runnable);
        }
        for event in events {
            if let Err(error) = self.store.publish(event).await {
                tracing::warn!(task = %id, %error, "cannot announce a task change");
            }
        }
    }

    /// Stops the round of task `id` if it runs on this host.
    fn interrupt(&self, id: &str) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(stop) = running.get(id) {
            stop.notify_one();
        }
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
    RpcError::internal(format!(
        "Task {id} is changing too often to update; try again"
    ))
    .with_status(503)
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
            RpcError::internal("The task store is unavailable; try again").with_status(503)
        }
    }
}

/// `error` as the JSON-RPC error object a failed task holds.
pub(super) fn error_object(error: &RpcError) -> Value {
    let mut object = json!({ "code": error.code, "message": error.message });
    if let Some(data) = &error.data {
        object["data"] = data.clone();
    }
    object
}

/// The quota refusal for a write `bound` refused, counted in
/// `airlock_limit_hits_total`: its `data` names the limit and its maximum.
pub(super) fn over_bound(bound: Bound) -> RpcError {
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
    RpcError::quota_exceeded(message).with_data(json!({ "limit": limit, "max": max }))
}

/// 128 random bits, as 32 hex digits: task ids and host ids.
fn random_id() -> String {
    let mut bytes = [0u8; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the operating system's random number generator works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A duration in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
