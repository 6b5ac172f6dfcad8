//! Where tasks live between rounds: one [`TaskStore`] trait, and the
//! stores behind it (in memory here; on disk in [`embedded`](super::embedded);
//! shared by a fleet in [`redis`](super::redis)).
//!
//! A store holds [`TaskRecord`]s and nothing else of a host: any host that
//! shares the store can answer `tasks/get`, apply `tasks/update`, cancel a
//! task or run its next round. Writes are compare-and-swap on the record's
//! [`version`](TaskRecord::version), so two hosts never overwrite each
//! other's change unseen. A round is run by whoever [claims](TaskStore::claim)
//! it: the claim is a lease, renewed while the round runs; if its host dies,
//! the lease expires and another host claims the round again.
//!
//! Due rounds are claimed first come, first served: in the order they became
//! due ([`TaskRecord::claimable_from`]: when the task was created, answered
//! or checkpointed, or when the lease of a round whose host died ran out),
//! and among rounds that became due in the same millisecond, in the order
//! the store learnt of them. A round that checkpoints goes to the back of
//! the queue, so no task (and no caller) keeps the running slots while
//! other rounds wait.
//!
//! Every store is bounded ([`StoreLimits`]): the active tasks of one owner,
//! and the tasks and bytes of all owners together.
//!
//! The guest's state and the client's answers travel in
//! [`TaskRecord::sealed`], sealed with the key ring
//! ([`payload`](super::payload)): a store never holds a component's state
//! in the clear.

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

/// Where a task stands (SEP-2663).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Rounds are running, or due.
    Working,
    /// Waiting for the client's answers (`tasks/update`).
    InputRequired,
    /// Ended with a result (`isError` results included).
    Completed,
    /// Ended with a JSON-RPC error.
    Failed,
    /// Cancelled by its owner.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// Whether the task still runs or waits for its client (not ended): what
    /// an owner's quota counts.
    pub fn is_active(self) -> bool {
        !self.is_terminal()
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// Who runs a task's current round, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The host running it (an id of the process).
    pub holder: String,
    /// When the lease ends unless renewed, in Unix milliseconds.
    pub until_ms: u64,
}

/// One task, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id: at least 128 random bits.
    pub id: String,
    /// The principal that created it; nobody else may read or touch it.
    pub owner: String,
    /// The tool whose call it is.
    pub tool: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A human-readable word on the status.
    pub status_message: Option<String>,
    /// When it was created, in Unix milliseconds.
    pub created_at_ms: u64,
    /// When it last changed, in Unix milliseconds.
    pub updated_at_ms: u64,
    /// When it is gone, in Unix milliseconds (its `ttlMs` after creation).
    pub expires_at_ms: u64,
    /// How often the client should poll, in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// How many rounds have run.
    pub round: u32,
    /// How many times the current round was started (a lease that expired
    /// means its host died while running it).
    pub attempts: u32,
    /// The call's arguments, the guest's state and the answers so far,
    /// sealed with the key ring ([`payload`](super::payload)).
    pub sealed: Vec<u8>,
    /// The pending input requests, a JSON object (when `input_required`).
    pub input_requests: Option<String>,
    /// The result (when `completed`) or the JSON-RPC error (when `failed`),
    /// as JSON.
    pub outcome: Option<String>,
    /// Whether a round is due (the task is `working` and no round runs).
    pub runnable: bool,
    /// When the current round became due, in Unix milliseconds: set when
    /// the task is created, answered or checkpointed (0 in records stored
    /// before this field existed).
    #[serde(default)]
    pub due_since_ms: u64,
    /// Who runs the current round, if one runs.
    pub lease: Option<Lease>,
    /// Bumped by every write; a write applies only to the version it read.
    pub version: u64,
}

impl TaskRecord {
    /// The task as its audit records name it.
    pub fn audited(&self) -> crate::audit::AuditedTask<'_> {
        crate::audit::AuditedTask {
            id: &self.id,
            owner: &self.owner,
            tool: &self.tool,
            round: self.round,
        }
    }

    /// The bytes the record costs, for the per-task limit and the store's:
    /// everything a client or a component chose.
    pub fn payload_bytes(&self) -> usize {
        self.sealed.len()
            + self.input_requests.as_ref().map_or(0, String::len)
            + self.outcome.as_ref().map_or(0, String::len)
            + self.status_message.as_ref().map_or(0, String::len)
    }

    /// [`payload_bytes`](Self::payload_bytes) as the stores count it.
    pub fn stored_bytes(&self) -> u64 {
        u64::try_from(self.payload_bytes()).unwrap_or(u64::MAX)
    }

    /// The record as claimed by `holder` until `until_ms`: leased, one more
    /// attempt of its round, one more version.
    pub fn claimed(&self, holder: &str, until_ms: u64) -> TaskRecord {
        let mut task = self.clone();
        task.lease = Some(Lease {
            holder: holder.to_owned(),
            until_ms,
        });
        task.attempts += 1;
        task.version += 1;
        task
    }

    /// Whether a host may claim its next round at `now_ms`: due by then
    /// (unleased, or its lease has run out), and not expired.
    pub fn claimable(&self, now_ms: u64) -> bool {
        self.expires_at_ms > now_ms && self.claimable_from().is_some_and(|from| from <= now_ms)
    }

    /// When its next round became (or becomes) claimable, if one is due:
    /// when its lease ends, or, unleased, when the round became due. Stores
    /// claim due rounds in this order.
    pub fn claimable_from(&self) -> Option<u64> {
        (self.runnable && self.status == TaskStatus::Working).then(|| {
            self.lease
                .as_ref()
                .map_or(self.due_since_ms, |lease| lease.until_ms)
        })
    }
}

/// Something every host sharing a store should hear at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskEvent {
    /// The task changed (status, requests, result): for `notifications/tasks`.
    Changed(String),
    /// The task was cancelled: whoever runs its round stops it.
    Cancelled(String),
    /// A round became due: idle hosts look for work.
    Runnable,
}

/// What a store may hold. A task is created only within every bound; a
/// write that makes an active task larger, only within the byte bound.
/// Shrinking a task and ending it are always allowed: a task's result may
/// take the store past its byte bound, by at most what the rounds running
/// at that moment store, and new tasks are refused until enough expire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Most [active](TaskStatus::is_active) tasks one owner may have.
    pub active_per_owner: u64,
    /// Most tasks the store holds, ended ones included, until they expire.
    pub tasks: u64,
    /// Most bytes ([`TaskRecord::stored_bytes`]) its unexpired tasks hold
    /// together.
    pub bytes: u64,
}

impl StoreLimits {
    /// No bound at all.
    pub const NONE: StoreLimits = StoreLimits {
        active_per_owner: u64::MAX,
        tasks: u64::MAX,
        bytes: u64::MAX,
    };

    /// Whether a task of `bytes` may be created in a store holding `tasks`
    /// tasks of `stored_bytes`, its owner having `active` active tasks.
    pub(crate) fn admit(
        &self,
        active: u64,
        tasks: u64,
        stored_bytes: u64,
        bytes: u64,
    ) -> Result<(), Bound> {
        if active >= self.active_per_owner {
            return Err(Bound::ActivePerOwner(self.active_per_owner));
        }
        if tasks >= self.tasks {
            return Err(Bound::Tasks(self.tasks));
        }
        if stored_bytes.saturating_add(bytes) > self.bytes {
            return Err(Bound::Bytes(self.bytes));
        }
        Ok(())
    }

    /// Whether a task may grow from `old` to `new` bytes in a store holding
    /// `stored_bytes` (its `old` included).
    pub(crate) fn allow_growth(&self, stored_bytes: u64, old: u64, new: u64) -> Result<(), Bound> {
        let after = stored_bytes.saturating_sub(old).saturating_add(new);
        if new > old && after > self.bytes {
            return Err(Bound::Bytes(self.bytes));
        }
        Ok(())
    }
}

/// Whether writing `record` in place of a stored copy of `old` bytes must
/// stay within the byte bound ([`StoreLimits::allow_growth`]): when it makes
/// an active task larger.
pub(crate) fn grows(old: u64, record: &TaskRecord) -> bool {
    record.status.is_active() && record.stored_bytes() > old
}

/// The bound of a store that refused a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The owner has [`StoreLimits::active_per_owner`] active tasks.
    ActivePerOwner(u64),
    /// The store holds [`StoreLimits::tasks`] tasks.
    Tasks(u64),
    /// The store's tasks would hold more than [`StoreLimits::bytes`].
    Bytes(u64),
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::ActivePerOwner(max) => {
                write!(f, "the owner has {max} active tasks, the most allowed")
            }
            Bound::Tasks(max) => write!(f, "the store holds {max} tasks, the most allowed"),
            Bound::Bytes(max) => write!(f, "the store's tasks would hold more than {max} bytes"),
        }
    }
}

/// Why a store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A bound of the store was reached: nothing was written.
    #[error("the task store is full: {0}")]
    Full(Bound),
    /// The store cannot be reached, or failed.
    #[error("the task store failed: {0}")]
    Unavailable(String),
}

/// A place tasks live that every host sharing it sees alike.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task (version 1), unless that would break one of
    /// `limits` ([`StoreError::Full`]). Durable when it returns.
    fn create(
        &self,
        record: TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The task with this id, unless there is none or it has expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Writes `record` in place of the stored one if the stored one still
    /// has version `record.version`; the stored copy then has version
    /// `record.version + 1`. `Ok(false)` when someone wrote it meanwhile
    /// (or it is gone): read it again and decide again. A record larger than
    /// the stored one is refused ([`StoreError::Full`]) if the store would
    /// then hold more than `limits.bytes`.
    fn replace<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Claims the task whose round has been due the longest (the earliest
    /// [`TaskRecord::claimable_from`], then the first to arrive) among those
    /// [claimable](TaskRecord::claimable) at `now_ms`, for `holder` until
    /// `until_ms`, counting one more attempt of its round; `None` when no
    /// round is due.
    fn claim<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Tells every host sharing the store.
    fn publish(&self, event: TaskEvent) -> BoxFuture<'_, Result<(), StoreError>>;

    /// What is published, by any host, from now on.
    fn events(&self) -> broadcast::Receiver<TaskEvent>;

    /// Forgets tasks that expired before `now_ms` (stores that do not expire
    /// records by themselves).
    fn sweep(&self, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Whether the store answers (for readiness).
    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>>;

    /// What the store is, for the log (`memory`, a path, a URL without
    /// credentials).
    fn describe(&self) -> String;
}

/// How many events may wait for a slow receiver; one that lags learns it
/// missed some and looks again.
pub const EVENT_BUFFER: usize = 1024;

/// Events heard in this process only: for stores one host uses alone.
pub struct LocalEvents(broadcast::Sender<TaskEvent>);

impl Default for LocalEvents {
    fn default() -> Self {
        LocalEvents(broadcast::channel(EVENT_BUFFER).0)
    }
}

impl LocalEvents {
    /// Tells every receiver; having none is not an error (nobody waits).
    pub fn publish(&self, event: TaskEvent) -> BoxFuture<'static, Result<(), StoreError>> {
        let _ = self.0.send(event);
        Box::pin(std::future::ready(Ok(())))
    }

    /// What is published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<TaskEvent> {
        self.0.subscribe()
    }
}

/// A due round's place in a store's queue: when it became claimable
/// ([`TaskRecord::claimable_from`]), then how many rounds had joined the
/// queue before it.
pub(crate) type QueueKey = (u64, u64);

/// Where `record` stands in the due queue, given where its stored copy stood
/// (`previous`): in the same place while its due time is unchanged, else at
/// the back of those due at that time (`arrive` gives its arrival number);
/// `None` when no round of it is due.
pub(crate) fn queue_key(
    record: &TaskRecord,
    previous: Option<QueueKey>,
    arrive: impl FnOnce() -> u64,
) -> Option<QueueKey> {
    let from = record.claimable_from()?;
    match previous {
        Some(key) if key.0 == from => Some(key),
        _ => Some((from, arrive())),
    }
}

/// Tasks in this process's memory: for one process that need not keep its
/// tasks across a restart (stdio, tests).
#[derive(Default)]
pub struct MemoryStore {
    tasks: Mutex<MemoryTasks>,
    events: LocalEvents,
}

/// What a [`MemoryStore`] holds.
#[derive(Default)]
struct MemoryTasks {
    /// Each task, with its place in the due queue.
    by_id: HashMap<String, (TaskRecord, Option<QueueKey>)>,
    /// How many rounds have joined the due queue.
    arrivals: u64,
}

impl MemoryTasks {
    /// Stores `record`, keeping its place in the due queue while its due
    /// time is unchanged.
    fn put(&mut self, record: TaskRecord) {
        let previous = self.by_id.get(&record.id).and_then(|(_, key)| *key);
        let key = queue_key(&record, previous, || {
            self.arrivals += 1;
            self.arrivals
        });
        self.by_id.insert(record.id.clone(), (record, key));
    }

    /// The bytes of the tasks that have not expired at `now_ms`.
    fn live_bytes(&self, now_ms: u64) -> u64 {
        self.by_id
            .values()
            .filter(|(task, _)| task.expires_at_ms > now_ms)
            .map(|(task, _)| task.stored_bytes())
            .fold(0, u64::saturating_add)
    }
}

impl MemoryStore {
    fn tasks(&self) -> std::sync::MutexGuard<'_, MemoryTasks> {
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The current time, in Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl TaskStore for MemoryStore {
    fn create(
        &self,
        mut record: TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let now = now_ms();
        let mut tasks = self.tasks();
        tasks.by_id.retain(|_, (task, _)| task.expires_at_ms > now);
        let active = tasks
            .by_id
            .values()
            .filter(|(task, _)| task.owner == record.owner && task.status.is_active())
            .count();
        let admitted = limits
            .admit(
                active as u64,
                tasks.by_id.len() as u64,
                tasks.live_bytes(now),
                record.stored_bytes(),
            )
            .map(|()| {
                record.version = 1;
                tasks.put(record);
            })
            .map_err(StoreError::Full);
        Box::pin(std::future::ready(admitted))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let now = now_ms();
        let found = self
            .tasks()
            .by_id
            .get(id)
            .map(|(task, _)| task)
            .filter(|t| t.expires_at_ms > now)
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn replace<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut tasks = self.tasks();
        let stored = match tasks.by_id.get(&record.id) {
            Some((stored, _)) if stored.version == record.version => stored.stored_bytes(),
            _ => return Box::pin(std::future::ready(Ok(false))),
        };
        let allowed = if grows(stored, record) {
            limits.allow_growth(tasks.live_bytes(now_ms()), stored, record.stored_bytes())
        } else {
            Ok(())
        };
        let applied = allowed
            .map(|()| {
                let mut next = record.clone();
                next.version += 1;
                tasks.put(next);
                true
            })
            .map_err(StoreError::Full);
        Box::pin(std::future::ready(applied))
    }

    fn claim<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let mut tasks = self.tasks();
        let first = tasks
            .by_id
            .values()
            .filter(|(task, _)| task.claimable(now_ms))
            .filter_map(|(task, key)| key.map(|key| (key, task)))
            .min_by_key(|(key, _)| *key)
            .map(|(_, task)| task.claimed(holder, until_ms));
        if let Some(claimed) = &first {
            tasks.put(claimed.clone());
        }
        Box::pin(std::future::ready(Ok(first)))
    }

    fn publish(&self, event: TaskEvent) -> BoxFuture<'_, Result<(), StoreError>> {
        self.events.publish(event)
    }

    fn events(&self) -> broadcast::Receiver<TaskEvent> {
        self.events.subscribe()
    }

    fn sweep(&self, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        self.tasks()
            .by_id
            .retain(|_, (task, _)| task.expires_at_ms > now_ms);
        Box::pin(std::future::ready(Ok(())))
    }

    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn describe(&self) -> String {
        "memory (tasks end with this process)".to_owned()
    }
}

/// The behaviour every [`TaskStore`] must have, as tests any store runs
/// (each implementation calls them on a fresh, empty store).
#[cfg(test)]
pub(crate) mod contract {
    use super::*;

    /// A working task of `owner`, due for its first round, expiring in an hour.
    pub(crate) fn task(id: &str, owner: &str) -> TaskRecord {
        let now = now_ms();
        TaskRecord {
            id: id.to_owned(),
            owner: owner.to_owned(),
            tool: "slow".to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            expires_at_ms: now + 3_600_000,
            poll_interval_ms: Some(500),
            round: 0,
            attempts: 0,
            sealed: vec![1, 2, 3],
            input_requests: None,
            outcome: None,
            runnable: true,
            due_since_ms: now,
            lease: None,
            version: 0,
        }
    }

    /// Limits no check below reaches but the one it tests.
    const ROOMY: StoreLimits = StoreLimits {
        active_per_owner: 100,
        ..StoreLimits::NONE
    };

    /// Every check below, in turn.
    pub(crate) async fn all(store: &dyn TaskStore) {
        // First: it counts every task in the store.
        the_store_is_bounded_in_tasks_and_bytes(store).await;
        created_tasks_read_back_until_they_expire(store).await;
        writes_apply_only_to_the_version_read(store).await;
        one_claim_per_due_round_until_its_lease_runs_out(store).await;
        owners_are_limited_in_active_tasks(store).await;
        claims_pass_over_leased_and_expired_rounds(store).await;
        due_rounds_are_claimed_first_come_first_served(store).await;
        events_reach_subscribers(store).await;
        store.check().await.expect("the store answers");
    }

    /// A task of `bytes` sealed bytes that expires in `ttl_ms`.
    fn sized(id: &str, bytes: usize, ttl_ms: u64) -> TaskRecord {
        let mut record = task(id, id);
        record.sealed = vec![7; bytes];
        record.expires_at_ms = now_ms() + ttl_ms;
        record
    }

    async fn the_store_is_bounded_in_tasks_and_bytes(store: &dyn TaskStore) {
        let limits = |tasks, bytes| StoreLimits {
            tasks,
            bytes,
            ..StoreLimits::NONE
        };
        let hour = 3_600_000;
        // A short-lived task counts until it expires, then frees its room.
        store
            .create(sized("b-short", 100, 1_500), limits(1, 100))
            .await
            .unwrap();
        let full = store
            .create(sized("b-one", 10, hour), limits(1, 1000))
            .await
            .unwrap_err();
        assert!(matches!(full, StoreError::Full(Bound::Tasks(1))), "{full}");
        let full = store
            .create(sized("b-one", 10, hour), limits(10, 109))
            .await
            .unwrap_err();
        assert!(
            matches!(full, StoreError::Full(Bound::Bytes(109))),
            "{full}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(1_600)).await;
        store
            .create(sized("b-one", 10, hour), limits(1, 10))
            .await
            .expect("the expired task no longer counts");
        // Tasks of every owner count.
        store
            .create(sized("b-two", 10, hour), limits(2, 20))
            .await
            .unwrap();
        let full = store
            .create(sized("b-three", 1, hour), limits(3, 20))
            .await
            .unwrap_err();
        assert!(matches!(full, StoreError::Full(Bound::Bytes(20))), "{full}");
        let full = store
            .create(sized("b-three", 1, hour), limits(2, 100))
            .await
            .unwrap_err();
        assert!(matches!(full, StoreError::Full(Bound::Tasks(2))), "{full}");
        // A task may not grow past the bound; it may always shrink.
        let mut grown = store.get("b-two").await.unwrap().unwrap();
        grown.sealed = vec![7; 11];
        let refused = store.replace(&grown, limits(2, 20)).await.unwrap_err();
        assert!(
            matches!(refused, StoreError::Full(Bound::Bytes(20))),
            "{refused}"
        );
        assert!(store.replace(&grown, limits(2, 21)).await.unwrap());
        let mut shrunk = store.get("b-two").await.unwrap().unwrap();
        shrunk.sealed = vec![7; 5];
        assert!(store.replace(&shrunk, limits(2, 1)).await.unwrap());
        // What it gave back is room for others.
        store
            .create(sized("b-three", 5, hour), limits(3, 20))
            .await
            .expect("room freed by the shrunk task");
        // Ending a task is never refused, though its result takes room.
        let mut ended = store.get("b-three").await.unwrap().unwrap();
        ended.status = TaskStatus::Completed;
        ended.runnable = false;
        ended.outcome = Some("r".repeat(10));
        assert!(store.replace(&ended, limits(3, 20)).await.unwrap());
        let full = store
            .create(sized("b-four", 0, hour), limits(4, 20))
            .await
            .unwrap_err();
        assert!(matches!(full, StoreError::Full(Bound::Bytes(20))), "{full}");
    }

    async fn created_tasks_read_back_until_they_expire(store: &dyn TaskStore) {
        let mut short = task("c-short", "alice");
        short.expires_at_ms = now_ms() + 1;
        store.create(task("c-one", "alice"), ROOMY).await.unwrap();
        store.create(short, ROOMY).await.unwrap();
        let read = store.get("c-one").await.unwrap().expect("created");
        assert_eq!(
            (read.version, read.sealed.as_slice()),
            (1, &[1u8, 2, 3][..])
        );
        assert!(store.get("c-none").await.unwrap().is_none());
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        assert!(store.get("c-short").await.unwrap().is_none(), "expired");
        store.sweep(now_ms()).await.unwrap();
        assert!(
            store.get("c-one").await.unwrap().is_some(),
            "sweep keeps live tasks"
        );
    }

    async fn writes_apply_only_to_the_version_read(store: &dyn TaskStore) {
        store.create(task("w-one", "alice"), ROOMY).await.unwrap();
        let mut first = store.get("w-one").await.unwrap().unwrap();
        let mut second = first.clone();
        first.status = TaskStatus::Cancelled;
        assert!(store.replace(&first, ROOMY).await.unwrap());
        second.status = TaskStatus::Completed;
        assert!(
            !store.replace(&second, ROOMY).await.unwrap(),
            "a stale write is refused"
        );
        let read = store.get("w-one").await.unwrap().unwrap();
        assert_eq!((read.status, read.version), (TaskStatus::Cancelled, 2));
        let mut gone = task("w-gone", "alice");
        gone.version = 1;
        assert!(!store.replace(&gone, ROOMY).await.unwrap(), "no such task");
    }

    /// Everything `holder` can claim at `now_ms` (other checks' tasks too),
    /// in the order claimed.
    async fn claim_all(store: &dyn TaskStore, holder: &str, now_ms: u64) -> Vec<TaskRecord> {
        let mut claimed = Vec::new();
        while let Some(task) = store.claim(holder, now_ms, now_ms + 10_000).await.unwrap() {
            claimed.push(task);
        }
        claimed
    }

    async fn one_claim_per_due_round_until_its_lease_runs_out(store: &dyn TaskStore) {
        store.create(task("l-one", "bob"), ROOMY).await.unwrap();
        let now = now_ms();
        let claimed = claim_all(store, "host-a", now).await;
        let mine = claimed.iter().find(|t| t.id == "l-one").expect("claimed");
        assert_eq!(mine.attempts, 1);
        assert_eq!(mine.lease.as_ref().unwrap().holder, "host-a");
        assert!(
            claim_all(store, "host-b", now).await.is_empty(),
            "a leased round is not claimed twice"
        );
        let later = now + 20_000;
        let again = claim_all(store, "host-b", later).await;
        let again = again
            .iter()
            .find(|t| t.id == "l-one")
            .expect("an expired lease is claimed again");
        assert_eq!(again.attempts, 2);
        let mut done = store.get("l-one").await.unwrap().unwrap();
        done.runnable = false;
        done.lease = None;
        assert!(store.replace(&done, ROOMY).await.unwrap());
        let much_later = later + 20_000;
        assert!(
            claim_all(store, "host-c", much_later)
                .await
                .iter()
                .all(|t| t.id != "l-one"),
            "a round that is not due is not claimed"
        );
    }

    async fn owners_are_limited_in_active_tasks(store: &dyn TaskStore) {
        let two = StoreLimits {
            active_per_owner: 2,
            ..StoreLimits::NONE
        };
        store.create(task("o-1", "carol"), two).await.unwrap();
        store.create(task("o-2", "carol"), two).await.unwrap();
        let full = store.create(task("o-3", "carol"), two).await.unwrap_err();
        assert!(
            matches!(full, StoreError::Full(Bound::ActivePerOwner(2))),
            "{full}"
        );
        store.create(task("o-4", "dave"), two).await.unwrap();
        // Waiting for input is active; an ended task, kept for reading, is not.
        let mut waiting = store.get("o-1").await.unwrap().unwrap();
        waiting.status = TaskStatus::InputRequired;
        waiting.runnable = false;
        assert!(store.replace(&waiting, two).await.unwrap());
        assert!(store.create(task("o-3", "carol"), two).await.is_err());
        let mut ended = store.get("o-2").await.unwrap().unwrap();
        ended.status = TaskStatus::Completed;
        ended.runnable = false;
        assert!(store.replace(&ended, two).await.unwrap());
        store
            .create(task("o-3", "carol"), two)
            .await
            .expect("an ended task leaves room");
        assert!(store.get("o-2").await.unwrap().is_some(), "still readable");
    }

    async fn claims_pass_over_leased_and_expired_rounds(store: &dyn TaskStore) {
        let now = now_ms();
        // Ids in this order, so a store walking its due tasks by id meets
        // the leased and the expired ones first.
        let mut leased = task("p-a-leased", "erin");
        leased.lease = Some(Lease {
            holder: "host-a".to_owned(),
            until_ms: now + 3_000_000,
        });
        let mut expired = task("p-b-expired", "erin");
        expired.expires_at_ms = now + 1;
        store.create(leased, ROOMY).await.unwrap();
        store.create(task("p-c-due", "erin"), ROOMY).await.unwrap();
        // Last: a store may prune expired tasks on create.
        store.create(expired, ROOMY).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let claimed = claim_all(store, "host-b", now_ms()).await;
        let ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
        assert!(ids.contains(&"p-c-due"), "{ids:?}");
        assert!(
            !ids.contains(&"p-a-leased") && !ids.contains(&"p-b-expired"),
            "{ids:?}"
        );
    }

    /// Rounds are claimed in the order they became due: a round whose host
    /// died (its lease ran out) before rounds that became due after that,
    /// and rounds due at the same time in the order they arrived, whatever
    /// their ids; a round that becomes due again (a checkpoint) goes to the
    /// back.
    async fn due_rounds_are_claimed_first_come_first_served(store: &dyn TaskStore) {
        // Hours ahead, when every other check's task has expired.
        let at = now_ms() + 5 * 3_600_000;
        let due = |id: &str, since: u64| {
            let mut record = task(id, "frank");
            record.due_since_ms = since;
            record.expires_at_ms = at + 3_600_000;
            record
        };
        // Claimed by a host that then dies: its lease runs out at `at`.
        store
            .create(due("q-orphan", at - 100), ROOMY)
            .await
            .unwrap();
        let orphan = store.claim("host-a", at - 100, at).await.unwrap();
        assert_eq!(orphan.expect("claimed").id, "q-orphan");
        // Due before the lease ran out, at the same time, and after (the
        // ids sort against the order of arrival).
        store
            .create(due("q-z-before", at - 1), ROOMY)
            .await
            .unwrap();
        store.create(due("q-y-same", at), ROOMY).await.unwrap();
        for (id, since) in [
            ("q-d-after", at + 1),
            ("q-c-after", at + 1),
            ("q-b-later", at + 2),
        ] {
            store.create(due(id, since), ROOMY).await.unwrap();
        }
        let first = store
            .claim("host-b", at + 10, at + 20)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.id, "q-z-before");
        // It checkpoints: due again, after every other round.
        let mut checkpointed = first;
        checkpointed.lease = None;
        checkpointed.due_since_ms = at + 15;
        assert!(store.replace(&checkpointed, ROOMY).await.unwrap());
        let order: Vec<String> = claim_all(store, "host-b", at + 100)
            .await
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(
            order,
            [
                "q-orphan",
                "q-y-same",
                "q-d-after",
                "q-c-after",
                "q-b-later",
                "q-z-before"
            ],
            "first come, first served"
        );
    }

    async fn events_reach_subscribers(store: &dyn TaskStore) {
        let mut events = store.events();
        store
            .publish(TaskEvent::Cancelled("e-one".to_owned()))
            .await
            .unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), events.recv())
            .await
            .expect("the event arrives")
            .unwrap();
        assert_eq!(got, TaskEvent::Cancelled("e-one".to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        contract::all(&MemoryStore::default()).await;
    }
}
