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
//! The guest's state and the client's answers travel in
//! [`TaskRecord::sealed`], sealed with the state keys: a store never holds a
//! component's state in the clear.

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
    /// sealed with the state keys.
    pub sealed: Vec<u8>,
    /// The pending input requests, a JSON object (when `input_required`).
    pub input_requests: Option<String>,
    /// The result (when `completed`) or the JSON-RPC error (when `failed`),
    /// as JSON.
    pub outcome: Option<String>,
    /// Whether a round is due (the task is `working` and no round runs).
    pub runnable: bool,
    /// Who runs the current round, if one runs.
    pub lease: Option<Lease>,
    /// Bumped by every write; a write applies only to the version it read.
    pub version: u64,
}

impl TaskRecord {
    /// The bytes the record costs, for the per-task limit: everything a
    /// client or a component chose.
    pub fn payload_bytes(&self) -> usize {
        self.sealed.len()
            + self.input_requests.as_ref().map_or(0, String::len)
            + self.outcome.as_ref().map_or(0, String::len)
            + self.status_message.as_ref().map_or(0, String::len)
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

    /// Whether a host may claim its next round at `now_ms`: due, not
    /// expired, and not leased (or its lease has run out).
    pub fn claimable(&self, now_ms: u64) -> bool {
        self.runnable
            && self.status == TaskStatus::Working
            && self.expires_at_ms > now_ms
            && self
                .lease
                .as_ref()
                .is_none_or(|lease| lease.until_ms <= now_ms)
    }

    /// When its next round may be claimed, if one is due: when its lease
    /// ends, or at once (0) if it has none. Stores index due tasks by it.
    pub fn claimable_from(&self) -> Option<u64> {
        (self.runnable && self.status == TaskStatus::Working)
            .then(|| self.lease.as_ref().map_or(0, |lease| lease.until_ms))
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

/// Why a store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The owner already has the most live tasks allowed.
    #[error("too many tasks: each caller may have at most {max} at once")]
    Full {
        /// The limit.
        max: usize,
    },
    /// The store cannot be reached, or failed.
    #[error("the task store failed: {0}")]
    Unavailable(String),
}

/// A place tasks live that every host sharing it sees alike.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task (version 1), unless its owner already has `max_per_owner`
    /// live tasks ([`StoreError::Full`]). Durable when it returns.
    fn create(
        &self,
        record: TaskRecord,
        max_per_owner: usize,
    ) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The task with this id, unless there is none or it has expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Writes `record` in place of the stored one if the stored one still
    /// has version `record.version`; the stored copy then has version
    /// `record.version + 1`. `Ok(false)` when someone wrote it meanwhile
    /// (or it is gone): read it again and decide again.
    fn replace<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Claims one task whose round is due ([`TaskRecord::claimable`] at
    /// `now_ms`) for `holder` until `until_ms`, counting one more attempt
    /// of its round; `None` when no round is due.
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

/// Tasks in this process's memory: for one process that need not keep its
/// tasks across a restart (stdio, tests).
#[derive(Default)]
pub struct MemoryStore {
    tasks: Mutex<HashMap<String, TaskRecord>>,
    events: LocalEvents,
}

impl MemoryStore {
    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
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
        max_per_owner: usize,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let now = now_ms();
        let mut tasks = self.tasks();
        let live = tasks
            .values()
            .filter(|t| t.owner == record.owner && t.expires_at_ms > now)
            .count();
        let result = if live >= max_per_owner {
            Err(StoreError::Full { max: max_per_owner })
        } else {
            record.version = 1;
            tasks.insert(record.id.clone(), record);
            Ok(())
        };
        Box::pin(std::future::ready(result))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let now = now_ms();
        let found = self
            .tasks()
            .get(id)
            .filter(|t| t.expires_at_ms > now)
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn replace<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut tasks = self.tasks();
        let applied = match tasks.get_mut(&record.id) {
            Some(stored) if stored.version == record.version => {
                *stored = record.clone();
                stored.version += 1;
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(applied)))
    }

    fn claim<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let mut tasks = self.tasks();
        let claimed = tasks
            .values_mut()
            .find(|t| t.claimable(now_ms))
            .map(|task| {
                *task = task.claimed(holder, until_ms);
                task.clone()
            });
        Box::pin(std::future::ready(Ok(claimed)))
    }

    fn publish(&self, event: TaskEvent) -> BoxFuture<'_, Result<(), StoreError>> {
        self.events.publish(event)
    }

    fn events(&self) -> broadcast::Receiver<TaskEvent> {
        self.events.subscribe()
    }

    fn sweep(&self, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        self.tasks().retain(|_, task| task.expires_at_ms > now_ms);
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
            lease: None,
            version: 0,
        }
    }

    /// Every check below, in turn.
    pub(crate) async fn all(store: &dyn TaskStore) {
        created_tasks_read_back_until_they_expire(store).await;
        writes_apply_only_to_the_version_read(store).await;
        one_claim_per_due_round_until_its_lease_runs_out(store).await;
        owners_are_limited(store).await;
        claims_pass_over_leased_and_expired_rounds(store).await;
        events_reach_subscribers(store).await;
        store.check().await.expect("the store answers");
    }

    async fn created_tasks_read_back_until_they_expire(store: &dyn TaskStore) {
        let mut short = task("c-short", "alice");
        short.expires_at_ms = now_ms() + 1;
        store.create(task("c-one", "alice"), 100).await.unwrap();
        store.create(short, 100).await.unwrap();
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
        store.create(task("w-one", "alice"), 100).await.unwrap();
        let mut first = store.get("w-one").await.unwrap().unwrap();
        let mut second = first.clone();
        first.status = TaskStatus::Cancelled;
        assert!(store.replace(&first).await.unwrap());
        second.status = TaskStatus::Completed;
        assert!(
            !store.replace(&second).await.unwrap(),
            "a stale write is refused"
        );
        let read = store.get("w-one").await.unwrap().unwrap();
        assert_eq!((read.status, read.version), (TaskStatus::Cancelled, 2));
        let mut gone = task("w-gone", "alice");
        gone.version = 1;
        assert!(!store.replace(&gone).await.unwrap(), "no such task");
    }

    /// Everything `holder` can claim at `now_ms` (other checks' tasks too).
    async fn claim_all(store: &dyn TaskStore, holder: &str, now_ms: u64) -> Vec<TaskRecord> {
        let mut claimed = Vec::new();
        while let Some(task) = store.claim(holder, now_ms, now_ms + 10_000).await.unwrap() {
            claimed.push(task);
        }
        claimed
    }

    async fn one_claim_per_due_round_until_its_lease_runs_out(store: &dyn TaskStore) {
        store.create(task("l-one", "bob"), 100).await.unwrap();
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
        assert!(store.replace(&done).await.unwrap());
        let much_later = later + 20_000;
        assert!(
            claim_all(store, "host-c", much_later)
                .await
                .iter()
                .all(|t| t.id != "l-one"),
            "a round that is not due is not claimed"
        );
    }

    async fn owners_are_limited(store: &dyn TaskStore) {
        store.create(task("o-1", "carol"), 2).await.unwrap();
        store.create(task("o-2", "carol"), 2).await.unwrap();
        let full = store.create(task("o-3", "carol"), 2).await.unwrap_err();
        assert!(matches!(full, StoreError::Full { max: 2 }), "{full}");
        store.create(task("o-4", "dave"), 2).await.unwrap();
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
        store.create(leased, 100).await.unwrap();
        store.create(task("p-c-due", "erin"), 100).await.unwrap();
        // Last: a store may prune an owner's expired tasks on create.
        store.create(expired, 100).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let claimed = claim_all(store, "host-b", now_ms()).await;
        let ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
        assert!(ids.contains(&"p-c-due"), "{ids:?}");
        assert!(
            !ids.contains(&"p-a-leased") && !ids.contains(&"p-b-expired"),
            "{ids:?}"
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
