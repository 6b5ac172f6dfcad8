//! Tasks (MCP's tasks extension, SEP-2663): tool calls that run on after
//! their request has been answered, round after round, each in a fresh
//! instance, with the state between rounds kept in a [`TaskStore`] instead
//! of a sealed token.
//!
//! This module is where tasks live and how this host runs them, without the
//! wire: the stores ([`store`], [`embedded`], [`redis`]), what a task keeps
//! of its guest, sealed ([`payload`]), the [`Tasks`] of this host (their
//! store, settings, and the rounds running here) and the background work
//! that runs their rounds ([`runner`]). The methods clients call
//! (`tasks/get`, `tasks/update`, `tasks/cancel`) and one round through the
//! protocol's pipeline are the protocol's (`protocol/tasks`); the runner
//! reaches the rounds through [`runner::TaskRounds`], which the server
//! implements.

pub mod embedded;
pub mod payload;
pub mod redis;
pub mod runner;
pub mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ring::rand::{SecureRandom, SystemRandom};
use tokio::sync::{Notify, Semaphore, broadcast, watch};

pub use embedded::EmbeddedStore;
pub use redis::RedisStore;
pub use store::{
    Bound, Lease, MemoryStore, StoreError, StoreLimits, TaskEvent, TaskRecord, TaskStatus,
    TaskStore, now_ms,
};

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

/// The tasks of this host: the store they live in and the rounds this host
/// runs.
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

/// How many times a write that lost a race with another host's is tried
/// again, reading the task anew each time.
pub(crate) const WRITE_ATTEMPTS: usize = 8;

impl Tasks {
    /// Tasks kept in `store`. Start [`Tasks::run`] to run their rounds.
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

    /// The limits and timings of these tasks.
    pub fn settings(&self) -> &TaskSettings {
        &self.settings
    }

    /// A receiver of what happens to tasks, on any host sharing the store.
    pub fn events(&self) -> broadcast::Receiver<TaskEvent> {
        self.store.events()
    }

    /// Writes `record` in place of the version it was read from, within
    /// the store's byte bound ([`TaskStore::replace`]).
    pub(crate) async fn replace(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        self.store
            .replace(record, self.settings.store_limits())
            .await
    }

    /// Tells listeners that task `id` changed and, when `due`, every host
    /// that a round is due. A failure is logged: hosts and pollers notice
    /// the change on their next look.
    pub(crate) async fn announce(&self, id: &str, due: bool) {
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
    pub(crate) fn interrupt(&self, id: &str) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(stop) = running.get(id) {
            stop.notify_one();
        }
    }
}

/// 128 random bits, as 32 hex digits: task ids and host ids.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the operating system's random number generator works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A duration in whole milliseconds.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
