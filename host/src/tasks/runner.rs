//! The background work of tasks on one host: claim due rounds from the
//! store, run them, keep their leases, stop them when cancelled, and write
//! back what they made of their task.
//!
//! Every host sharing a store runs this. A round is claimed with a lease
//! ([`LEASE`]) that the host renews while the round runs; if the host dies,
//! the lease runs out and another host claims the round again (up to
//! `max_attempts` starts). A round is stopped when its task is cancelled:
//! at once through the store's events, or at the next renewal
//! ([`CHECK_EVERY`]) if an event was lost. A round's outcome is written
//! only if the task is still this host's to run.
//!
//! When the host is told to shut down, it stops claiming at once and hands
//! the rounds running here back to the store ([`Tasks::stop_claiming`]):
//! each is stopped and made due again, without counting the attempt, for
//! another host (or this one, restarted) to run while this one drains.
//!
//! In the log, the end of a task is one `info` line (`task ended`); each
//! round's start and end are `debug` lines, shown with
//! `AIRLOCK_LOG=info,airlock::tasks::runner=debug`.
//!
//! The runner knows records, leases and sealed bytes, never a task's
//! plaintext nor the wire: it runs a round, and words a failure, through
//! [`TaskRounds`], which the server gives it.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{Notify, OwnedSemaphorePermit, broadcast, watch};

use super::store::{Bound, Lease, StoreError, TaskEvent, TaskRecord, TaskStatus, now_ms};
use super::{Tasks, WRITE_ATTEMPTS, millis};

/// What the runner asks of the server whose tasks it runs.
pub trait TaskRounds: Send + Sync + 'static {
    /// Runs the next round of `record` (claimed by this host) to its end:
    /// what it made of the task.
    fn run_round<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, RoundEnd>;

    /// The error a task fails with when the runner fails it (a JSON-RPC
    /// error object, as [`RoundEnd::Failed`] holds).
    fn failure(&self, why: &Failure) -> Value;
}

/// How a round leaves its task.
#[derive(Debug)]
pub enum RoundEnd {
    /// The task is done: this result (an `isError` result included).
    Completed(Value),
    /// The task failed with this JSON-RPC error (`{code, message}`).
    Failed(Value),
    /// The task waits for the client's answers to these requests (the wire's
    /// `inputRequests`), then runs its next round with this payload.
    InputRequired {
        /// The requests, by their task-unique keys.
        requests: Value,
        /// The payload for the next round, sealed
        /// ([`payload`](super::payload)): the tool's keys pending.
        sealed: Vec<u8>,
    },
    /// The round stored a checkpoint: the next round is due at once, with
    /// this payload, sealed.
    Checkpoint(Vec<u8>),
    /// The round could not start (the server is at its limits): run it again
    /// later, as it was.
    Deferred,
}

impl RoundEnd {
    /// How the round ended, as a label value of `airlock_task_rounds_total`.
    pub fn outcome(&self) -> &'static str {
        match self {
            RoundEnd::Completed(_) => "completed",
            RoundEnd::Failed(_) => "failed",
            RoundEnd::InputRequired { .. } => "input_required",
            RoundEnd::Checkpoint(_) => "checkpoint",
            RoundEnd::Deferred => "deferred",
        }
    }
}

/// Why the runner fails a task, whatever its round made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// Its round was started this many times without finishing: the hosts
    /// running it stopped.
    #[error(
        "The task's round was started {0} times without finishing (its hosts stopped); giving up"
    )]
    GaveUp(u32),
    /// What its round made of it would store more than this many bytes.
    #[error("The task would store more than the {0} bytes a task may hold")]
    TooLarge(usize),
    /// What its round made of it does not fit in the store: over this
    /// bound.
    #[error("{0}")]
    StoreFull(Bound),
}

/// How long a claimed round is this host's without renewal.
pub const LEASE: Duration = Duration::from_secs(10);

/// How often a running round's task is read again (to renew its lease and
/// to notice a cancellation whose event was lost).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How often the store is searched for due rounds without an event saying so
/// (a round whose host died is due when its lease runs out).
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How often expired tasks are swept from stores that do not expire them.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

impl Tasks {
    /// Runs this host's share of the tasks, each round through `rounds`,
    /// until `shutdown` turns `true` (or [`Tasks::stop_claiming`]).
    pub async fn run(
        self: Arc<Self>,
        rounds: Arc<dyn TaskRounds>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut events = self.store.events();
        let mut stopping = self.stopping.subscribe();
        let mut look = tokio::time::interval(LOOK_EVERY);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_sweep = std::time::Instant::now();
        tracing::info!(store = %self.store.describe(), host = %self.host, "running tasks");
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(TaskEvent::Cancelled(id)) => {
                        self.interrupt(&id);
                        continue;
                    }
                    Ok(TaskEvent::Changed(_)) => continue,
                    Ok(TaskEvent::Runnable) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = look.tick() => {}
                () = self.freed.notified() => {}
                _ = shutdown.wait_for(|down| *down) => return,
                _ = stopping.wait_for(|stopping| *stopping) => return,
            }
            self.start_due_rounds(&rounds).await;
            if last_sweep.elapsed() >= SWEEP_EVERY {
                last_sweep = std::time::Instant::now();
                if let Err(error) = self.store.sweep(now_ms()).await {
                    tracing::warn!(%error, "cannot sweep expired tasks");
                }
            }
        }
    }

    /// Claims due rounds while this host has room for them and is not
    /// stopping, and starts each.
    async fn start_due_rounds(self: &Arc<Self>, rounds: &Arc<dyn TaskRounds>) {
        loop {
            if *self.stopping.borrow() {
                return;
            }
            let Ok(permit) = self.slots.clone().try_acquire_owned() else {
                return;
            };
            let now = now_ms();
            let until = now + millis(LEASE);
            match self.store.claim(&self.host, now, until).await {
                Ok(Some(record)) => {
                    let tasks = self.clone();
                    let rounds = rounds.clone();
                    tokio::spawn(async move { tasks.run_round(&*rounds, record, permit).await });
                }
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "cannot look for due task rounds");
                    return;
                }
            }
        }
    }

    /// Runs one claimed round to its end, or until its task is cancelled or
    /// its lease lost.
    async fn run_round(
        &self,
        rounds: &dyn TaskRounds,
        record: TaskRecord,
        permit: OwnedSemaphorePermit,
    ) {
        self.run_claimed(rounds, record).await;
        // A slot is free: look for the next due round now, not at the next tick.
        drop(permit);
        self.freed.notify_one();
    }

    /// [`run_round`](Self::run_round), while its slot is held.
    async fn run_claimed(&self, rounds: &dyn TaskRounds, record: TaskRecord) {
        let id = record.id.clone();
        if record.attempts > self.settings.max_attempts {
            let gave_up = Failure::GaveUp(self.settings.max_attempts);
            let end = RoundEnd::Failed(rounds.failure(&gave_up));
            self.finish(rounds, record, end).await;
            return;
        }
        let stop = Arc::new(Notify::new());
        // Under the lock `stop_claiming` takes: a round claimed as the host
        // began to stop is either in `running` when it stops them all, or
        // handed back here.
        let started = {
            let mut running = self
                .running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let stopping = *self.stopping.borrow();
            if !stopping {
                running.insert(id.clone(), stop.clone());
            }
            !stopping
        };
        if !started {
            self.give_back(&id).await;
            return;
        }
        tracing::debug!(task = %id, tool = %record.tool, round = record.round + 1, attempt = record.attempts, "task round started");
        let mut held = record.clone();
        let outcome = tokio::select! {
            end = rounds.run_round(&record) => Some(end),
            () = stop.notified() => None,
            () = self.keep_lease(&mut held) => None,
        };
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
        match outcome {
            Some(end) => self.finish(rounds, held, end).await,
            None if *self.stopping.borrow() => self.give_back(&id).await,
            None => {
                tracing::info!(task = %id, "task round stopped: the task was cancelled or is no longer this host's")
            }
        }
    }

    /// Renews `held`'s lease while it is this host's and still working;
    /// returns when it is not (cancelled, ended, taken over).
    async fn keep_lease(&self, held: &mut TaskRecord) {
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            let current = match self.store.get(&held.id).await {
                Ok(Some(current)) => current,
                Ok(None) => return,
                // The store is away: keep running; the write at the end
                // decides whether the outcome still counts.
                Err(_) => continue,
            };
            if !self.holds(&current) {
                return;
            }
            let mut renewed = current;
            renewed.lease = Some(Lease {
                holder: self.host.clone(),
                until_ms: now_ms() + millis(LEASE),
            });
            if let Ok(true) = self.replace(&renewed).await {
                renewed.version += 1;
                *held = renewed;
            }
        }
    }

    /// Stops claiming rounds, and stops the rounds running here: each hands
    /// itself back to the store, due again without counting the attempt.
    /// Called as soon as the server is told to shut down, so that other
    /// hosts run those rounds while this one drains its requests.
    pub fn stop_claiming(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.stopping.send_replace(true) {
            return;
        }
        tracing::info!(
            rounds = running.len(),
            "shutting down: claiming no more task rounds, handing back those running here"
        );
        for stop in running.values() {
            stop.notify_one();
        }
    }

    /// [`stop_claiming`](Self::stop_claiming), then waits until every round
    /// of this host has been handed back or has ended. Called when the
    /// server has shut down.
    pub async fn hand_back(&self) {
        self.stop_claiming();
        let slots = u32::try_from(self.settings.max_running.max(1)).unwrap_or(u32::MAX);
        // Every round holds a slot until it is written back.
        drop(self.slots.acquire_many(slots).await);
    }

    /// Hands the round of task `id`, stopped, back to the store: due again
    /// at its place in the queue, without counting the attempt this host
    /// made, and announced to every host.
    async fn give_back(&self, id: &str) {
        for _ in 0..WRITE_ATTEMPTS {
            let mut current = match self.store.get(id).await {
                Ok(Some(current)) if self.holds(&current) => current,
                // Ended, cancelled or taken over meanwhile: nothing to hand back.
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(task = %id, %error, "cannot hand a task round back; it runs again once its lease runs out");
                    return;
                }
            };
            current.lease = None;
            current.attempts = current.attempts.saturating_sub(1);
            match self.replace(&current).await {
                Ok(true) => {
                    tracing::info!(task = %id, round = current.round + 1, "task round handed back: this host is shutting down");
                    crate::audit::task(current.audited(), "handed_back");
                    self.announce(id, true).await;
                    return;
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(task = %id, %error, "cannot hand a task round back; it runs again once its lease runs out");
                    return;
                }
            }
        }
    }

    /// Whether `record` is still working under this host's lease.
    fn holds(&self, record: &TaskRecord) -> bool {
        record.status == TaskStatus::Working
            && record
                .lease
                .as_ref()
                .is_some_and(|lease| lease.holder == self.host)
    }

    /// Writes what a round made of its task, if the task is still this
    /// host's; tells listeners and, when a round is due, every host. A
    /// round whose outcome would take the store past its byte bound fails
    /// its task with the quota error instead.
    async fn finish(&self, rounds: &dyn TaskRounds, held: TaskRecord, mut end: RoundEnd) {
        let id = held.id.clone();
        for _ in 0..WRITE_ATTEMPTS {
            let current = match self.store.get(&id).await {
                Ok(Some(current)) => current,
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(task = %id, %error, "cannot write a task round's outcome; another host runs the round again");
                    return;
                }
            };
            if !self.holds(&current) {
                return;
            }
            let mut next = current;
            let due = match self.apply(&mut next, &end) {
                Ok(due) => due,
                Err(failure) => {
                    fail(&mut next, &rounds.failure(&failure));
                    false
                }
            };
            next.lease = None;
            next.updated_at_ms = now_ms();
            match self.replace(&next).await {
                Ok(true) => {
                    // Rounds are routine; the end of the task is news.
                    if next.status.is_terminal() {
                        tracing::info!(task = %id, tool = %next.tool, status = next.status.as_str(), "task ended");
                    }
                    tracing::debug!(task = %id, status = next.status.as_str(), "task round ended");
                    crate::audit::task(next.audited(), next.status.as_str());
                    self.announce(&id, due).await;
                    return;
                }
                Ok(false) => {}
                Err(StoreError::Full(bound)) => {
                    tracing::warn!(task = %id, %bound, "a task round's outcome does not fit in the task store; the task fails");
                    // Ending a task is never refused.
                    end = RoundEnd::Failed(rounds.failure(&Failure::StoreFull(bound)));
                }
                Err(error) => {
                    tracing::warn!(task = %id, %error, "cannot write a task round's outcome; another host runs the round again");
                    return;
                }
            }
        }
    }

    /// Changes `record` as `end` says; `Ok(true)` when its next round is
    /// due at once; `Err` when the task cannot keep it (too large).
    fn apply(&self, record: &mut TaskRecord, end: &RoundEnd) -> Result<bool, Failure> {
        let due = match end {
            RoundEnd::Completed(result) => {
                record.status = TaskStatus::Completed;
                record.outcome = Some(result.to_string());
                record.runnable = false;
                // Its state is never needed again.
                record.sealed = Vec::new();
                false
            }
            RoundEnd::Failed(error) => {
                fail(record, error);
                false
            }
            RoundEnd::InputRequired { requests, sealed } => {
                record.sealed = sealed.clone();
                record.round += 1;
                record.attempts = 0;
                record.status = TaskStatus::InputRequired;
                record.input_requests = Some(requests.to_string());
                record.runnable = false;
                false
            }
            RoundEnd::Checkpoint(sealed) => {
                record.sealed = sealed.clone();
                record.round += 1;
                record.attempts = 0;
                record.runnable = true;
                // The back of the due queue: rounds that waited go first.
                record.due_since_ms = now_ms();
                true
            }
            RoundEnd::Deferred => {
                // Not an attempt: the round never started. Still due at its
                // place in the queue, but left for the next look rather than
                // claimed again at once.
                record.attempts = record.attempts.saturating_sub(1);
                false
            }
        };
        if record.payload_bytes() > self.settings.max_task_bytes {
            return Err(Failure::TooLarge(self.settings.max_task_bytes));
        }
        Ok(due)
    }
}

/// Ends `record` as failed with `error` (a JSON-RPC error object); its state
/// is never needed again.
fn fail(record: &mut TaskRecord, error: &serde_json::Value) {
    record.status = TaskStatus::Failed;
    record.outcome = Some(error.to_string());
    record.input_requests = None;
    record.runnable = false;
    record.sealed = Vec::new();
}
