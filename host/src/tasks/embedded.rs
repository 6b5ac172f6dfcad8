//! Tasks in a file on this host's disk: they survive a restart of the host,
//! and one host uses the file at a time (the file is locked while open).
//!
//! The file is a [`redb`] database. Every write is a transaction committed
//! to disk before it returns. Records are stored as JSON (serde_json): a
//! self-describing format, so a file written before a field was added to
//! [`TaskRecord`] still reads after (a compact binary format such as postcard
//! would not), and the file can be inspected with ordinary tools.
//!
//! Beside the records, indexes spare `create`, `claim` and `sweep` a walk
//! over every task:
//! - by owner: each owner's active tasks, `(expires_at_ms, id)`, to count
//!   them;
//! - the due queue: `(claimable_from_ms, arrival, id)` of every task whose
//!   round is due, where `claimable_from_ms` is when the round became due
//!   (or the end of its lease) and `arrival` counts the rounds that joined
//!   the queue, so a claim at `now` reads the oldest entries up to `now`;
//!   beside it, each queued task's key;
//! - by expiry: `(expires_at_ms, id)`, to forget expired tasks;
//! - counters: the rounds that joined the queue, and the bytes of the tasks
//!   stored (their number is the length of the records' table).
//!
//! A file of an earlier layout is indexed anew when opened.
//!
//! Events stay in this process ([`broadcast`]), like [`MemoryStore`]'s:
//! there is no other host to tell.
//!
//! [`MemoryStore`]: super::MemoryStore

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use futures_util::future::BoxFuture;
use redb::{
    Database, MultimapTable, MultimapTableDefinition, ReadableDatabase, ReadableMultimapTable,
    ReadableTable, ReadableTableMetadata, Table, TableDefinition, WriteTransaction,
};
use tokio::sync::broadcast;

use super::store::{
    LocalEvents, QueueKey, StoreError, StoreLimits, TaskEvent, TaskRecord, TaskStore, grows,
    now_ms, queue_key,
};

/// id → the record, as JSON.
const TASKS: TableDefinition<&str, &[u8]> = TableDefinition::new("tasks");
/// owner → `(expires_at_ms, id)` of each of their active tasks.
const OWNERS: MultimapTableDefinition<&str, (u64, &str)> = MultimapTableDefinition::new("owners");
/// `(claimable_from_ms, arrival, id)` of each task whose round is due.
const QUEUE: TableDefinition<(u64, u64, &str), ()> = TableDefinition::new("queue");
/// id → its key in [`QUEUE`].
const QUEUED: TableDefinition<&str, (u64, u64)> = TableDefinition::new("queued");
/// `(expires_at_ms, id)` of each task.
const EXPIRY: TableDefinition<(u64, &str), ()> = TableDefinition::new("expiry");
/// The counters ([`ARRIVALS`], [`BYTES`]) and the layout ([`LAYOUT`]).
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// The due index of the first layout: `(claimable_from_ms, id)`.
const FIRST_LAYOUT_DUE: TableDefinition<(u64, &str), ()> = TableDefinition::new("due");

/// How many rounds have joined the due queue.
const ARRIVALS: &str = "arrivals";
/// The bytes ([`TaskRecord::stored_bytes`]) of the stored tasks.
const BYTES: &str = "bytes";
/// Which layout of the indexes the file has.
const LAYOUT: &str = "layout";
/// This layout: active tasks by owner, the due queue in order of arrival,
/// the counters.
const CURRENT_LAYOUT: u64 = 2;

/// Tasks in a file, for one host that keeps its tasks across restarts.
pub struct EmbeddedStore {
    database: Arc<Database>,
    path: PathBuf,
    events: LocalEvents,
}

impl EmbeddedStore {
    /// Opens the task file at `path`, creating it (and its directory) if
    /// there is none. Refused while another store has it open, in this
    /// process or another.
    pub fn open(path: &Path) -> Result<EmbeddedStore, StoreError> {
        let failed = |error: &dyn std::fmt::Display| {
            StoreError::Unavailable(format!("the task file {}: {error}", path.display()))
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| failed(&e))?;
        }
        let database = Database::create(path).map_err(|error| match error {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Unavailable(format!(
                "the task file {} is in use by another airlock process \
                 (one host per task file; give each its own, or share tasks through Redis)",
                path.display()
            )),
            other => failed(&other),
        })?;
        // Every table exists from the start, so readers can open them.
        let prepare = || -> anyhow::Result<()> {
            let transaction = database.begin_write()?;
            let layout = transaction
                .open_table(META)?
                .get(LAYOUT)?
                .map(|v| v.value());
            if layout != Some(CURRENT_LAYOUT) {
                reindex(&transaction)?;
            }
            transaction.commit()?;
            Ok(())
        };
        prepare().map_err(|e| failed(&format_args!("{e:#}")))?;
        Ok(EmbeddedStore {
            database: Arc::new(database),
            path: path.to_owned(),
            events: LocalEvents::default(),
        })
    }

    /// Runs `work` on the database on a blocking thread.
    fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Database) -> anyhow::Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        let database = Arc::clone(&self.database);
        let path = self.path.clone();
        Box::pin(async move {
            let result = tokio::task::spawn_blocking(move || work(&database))
                .await
                .map_err(anyhow::Error::from)
                .and_then(|done| done);
            result.map_err(|e| {
                StoreError::Unavailable(format!("the task file {}: {e:#}", path.display()))
            })
        })
    }
}

/// Builds every index afresh from the records (a new file, or one of an
/// earlier layout).
fn reindex(transaction: &WriteTransaction) -> anyhow::Result<()> {
    transaction.delete_table(FIRST_LAYOUT_DUE)?;
    transaction.delete_multimap_table(OWNERS)?;
    transaction.delete_table(EXPIRY)?;
    transaction.delete_table(QUEUE)?;
    transaction.delete_table(QUEUED)?;
    transaction.delete_table(META)?;
    let mut tables = Tables::open(transaction)?;
    let mut records = Vec::new();
    for entry in tables.tasks.iter()? {
        let (id, json) = entry?;
        records.push(decode(id.value(), json.value())?);
    }
    for record in &records {
        tables.write(record, None)?;
    }
    tables.meta.insert(LAYOUT, CURRENT_LAYOUT)?;
    Ok(())
}

/// The first key past every index entry at or before `ms`.
fn after(ms: u64) -> (u64, &'static str) {
    (ms.saturating_add(1), "")
}

/// The records and their indexes, open in one write transaction.
struct Tables<'txn> {
    tasks: Table<'txn, &'static str, &'static [u8]>,
    owners: MultimapTable<'txn, &'static str, (u64, &'static str)>,
    queue: Table<'txn, (u64, u64, &'static str), ()>,
    queued: Table<'txn, &'static str, (u64, u64)>,
    expiry: Table<'txn, (u64, &'static str), ()>,
    meta: Table<'txn, &'static str, u64>,
    /// Whether anything was written (and is worth a commit).
    changed: bool,
}

impl<'txn> Tables<'txn> {
    fn open(transaction: &'txn WriteTransaction) -> Result<Self, redb::TableError> {
        Ok(Tables {
            tasks: transaction.open_table(TASKS)?,
            owners: transaction.open_multimap_table(OWNERS)?,
            queue: transaction.open_table(QUEUE)?,
            queued: transaction.open_table(QUEUED)?,
            expiry: transaction.open_table(EXPIRY)?,
            meta: transaction.open_table(META)?,
            changed: false,
        })
    }

    fn read(&self, id: &str) -> anyhow::Result<Option<TaskRecord>> {
        self.tasks
            .get(id)?
            .map(|json| decode(id, json.value()))
            .transpose()
    }

    fn counter(&self, name: &str) -> anyhow::Result<u64> {
        Ok(self.meta.get(name)?.map_or(0, |v| v.value()))
    }

    /// Stores `record` in place of `previous` (the stored copy, if any).
    fn write(&mut self, record: &TaskRecord, previous: Option<&TaskRecord>) -> anyhow::Result<()> {
        if let Some(previous) = previous {
            self.unindex(previous)?;
        }
        self.changed = true;
        let id = record.id.as_str();
        self.tasks
            .insert(id, serde_json::to_vec(record)?.as_slice())?;
        if record.status.is_active() {
            self.owners
                .insert(record.owner.as_str(), (record.expires_at_ms, id))?;
        }
        self.expiry.insert((record.expires_at_ms, id), ())?;
        let bytes = self.counter(BYTES)?.saturating_add(record.stored_bytes());
        self.meta.insert(BYTES, bytes)?;
        self.requeue(record)
    }

    /// Puts `record` in its place in the due queue: where it was while its
    /// due time is unchanged, at the back of those due then otherwise, or
    /// out of the queue when no round of it is due.
    fn requeue(&mut self, record: &TaskRecord) -> anyhow::Result<()> {
        let id = record.id.as_str();
        let previous: Option<QueueKey> = self.queued.get(id)?.map(|key| key.value());
        let arrivals = self.counter(ARRIVALS)?;
        let key = queue_key(record, previous, || arrivals + 1);
        if key == previous {
            return Ok(());
        }
        if let Some((from, arrival)) = previous {
            self.queue.remove((from, arrival, id))?;
        }
        match key {
            Some((from, arrival)) => {
                self.queue.insert((from, arrival, id), ())?;
                self.queued.insert(id, (from, arrival))?;
                self.meta.insert(ARRIVALS, arrival.max(arrivals))?;
            }
            None => {
                self.queued.remove(id)?;
            }
        }
        Ok(())
    }

    /// Deletes the task and its index entries.
    fn forget(&mut self, record: &TaskRecord) -> anyhow::Result<()> {
        self.tasks.remove(record.id.as_str())?;
        self.changed = true;
        self.unindex(record)?;
        if let Some((from, arrival)) = self.queued.remove(record.id.as_str())?.map(|k| k.value()) {
            self.queue.remove((from, arrival, record.id.as_str()))?;
        }
        Ok(())
    }

    /// Removes what `record` adds to the owners' and expiry indexes and to
    /// the byte count (its place in the queue is kept: see `requeue`).
    fn unindex(&mut self, record: &TaskRecord) -> anyhow::Result<()> {
        let id = record.id.as_str();
        self.owners
            .remove(record.owner.as_str(), (record.expires_at_ms, id))?;
        self.expiry.remove((record.expires_at_ms, id))?;
        let bytes = self.counter(BYTES)?.saturating_sub(record.stored_bytes());
        self.meta.insert(BYTES, bytes)?;
        Ok(())
    }

    /// Deletes the tasks that expired at or before `now_ms`.
    fn prune(&mut self, now_ms: u64) -> anyhow::Result<()> {
        let mut expired = Vec::new();
        for entry in self.expiry.range(..after(now_ms))? {
            let (key, _) = entry?;
            expired.push(key.value().1.to_owned());
        }
        for id in &expired {
            if let Some(record) = self.read(id)? {
                self.forget(&record)?;
            }
        }
        Ok(())
    }

    /// The task whose round has waited longest among those claimable at
    /// `now_ms`, as stored.
    fn first_claimable(&self, now_ms: u64) -> anyhow::Result<Option<TaskRecord>> {
        for entry in self.queue.range(..(now_ms.saturating_add(1), 0, ""))? {
            let (key, _) = entry?;
            let (_, _, id) = key.value();
            // Tasks that expired but were not swept yet are passed over.
            if let Some(record) = self.read(id)?.filter(|r| r.claimable(now_ms)) {
                return Ok(Some(record));
            }
        }
        Ok(None)
    }
}

fn decode(id: &str, json: &[u8]) -> anyhow::Result<TaskRecord> {
    serde_json::from_slice(json).with_context(|| format!("the record of task {id} is unreadable"))
}

/// Runs `work` in a write transaction, committed (durably) if it wrote
/// anything, abandoned otherwise (a commit costs a flush to disk).
fn write<T>(
    database: &Database,
    work: impl FnOnce(&mut Tables) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let transaction = database.begin_write()?;
    let (result, changed) = {
        let mut tables = Tables::open(&transaction)?;
        let result = work(&mut tables)?;
        (result, tables.changed)
    };
    if changed {
        transaction.commit()?;
    } else {
        transaction.abort()?;
    }
    Ok(result)
}

impl TaskStore for EmbeddedStore {
    fn create(
        &self,
        mut record: TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let now = now_ms();
        let created = self.run(move |database| {
            write(database, |tables| {
                // What is pruned is committed even if the task is refused.
                tables.prune(now)?;
                let admitted = limits.admit(
                    tables.owners.get(record.owner.as_str())?.len(),
                    tables.tasks.len()?,
                    tables.counter(BYTES)?,
                    record.stored_bytes(),
                );
                if admitted.is_ok() {
                    record.version = 1;
                    let previous = tables.read(&record.id)?;
                    tables.write(&record, previous.as_ref())?;
                }
                Ok(admitted)
            })
        });
        Box::pin(async move { created.await?.map_err(StoreError::Full) })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let id = id.to_owned();
        let now = now_ms();
        self.run(move |database| {
            let transaction = database.begin_read()?;
            let tasks = transaction.open_table(TASKS)?;
            let record = tasks
                .get(id.as_str())?
                .map(|json| decode(&id, json.value()))
                .transpose()?;
            Ok(record.filter(|r| r.expires_at_ms > now))
        })
    }

    fn replace<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut record = record.clone();
        let now = now_ms();
        let replaced = self.run(move |database| {
            write(database, |tables| {
                let Some(stored) = tables.read(&record.id)? else {
                    return Ok(Ok(false));
                };
                if stored.version != record.version {
                    return Ok(Ok(false));
                }
                let old = stored.stored_bytes();
                if grows(old, &record) {
                    tables.prune(now)?;
                    if tables.read(&record.id)?.is_none() {
                        // It had expired: gone now.
                        return Ok(Ok(false));
                    }
                    let stored_bytes = tables.counter(BYTES)?;
                    if let Err(bound) =
                        limits.allow_growth(stored_bytes, old, record.stored_bytes())
                    {
                        return Ok(Err(bound));
                    }
                }
                record.version += 1;
                tables.write(&record, Some(&stored))?;
                Ok(Ok(true))
            })
        });
        Box::pin(async move { replaced.await?.map_err(StoreError::Full) })
    }

    fn claim<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let holder = holder.to_owned();
        self.run(move |database| {
            write(database, |tables| {
                let Some(stored) = tables.first_claimable(now_ms)? else {
                    return Ok(None);
                };
                let task = stored.claimed(&holder, until_ms);
                tables.write(&task, Some(&stored))?;
                Ok(Some(task))
            })
        })
    }

    fn publish(&self, event: TaskEvent) -> BoxFuture<'_, Result<(), StoreError>> {
        self.events.publish(event)
    }

    fn events(&self) -> broadcast::Receiver<TaskEvent> {
        self.events.subscribe()
    }

    fn sweep(&self, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |database| write(database, |tables| tables.prune(now_ms)))
    }

    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(|database| {
            database.begin_read()?.open_table(TASKS)?;
            Ok(())
        })
    }

    fn describe(&self) -> String {
        format!("file {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::{Bound, TaskStatus, contract};
    use super::*;

    /// At most `active` active tasks per owner, and no other bound.
    fn limit(active: u64) -> StoreLimits {
        StoreLimits {
            active_per_owner: active,
            ..StoreLimits::NONE
        }
    }

    fn fresh() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("tasks.redb");
        (dir, path)
    }

    #[tokio::test]
    async fn the_embedded_store_keeps_the_contract() {
        let (_dir, path) = fresh();
        contract::all(&EmbeddedStore::open(&path).unwrap()).await;
    }

    #[tokio::test]
    async fn tasks_survive_reopening_the_file() {
        let (_dir, path) = fresh();
        let store = EmbeddedStore::open(&path).unwrap();
        store
            .create(contract::task("kept", "alice"), limit(10))
            .await
            .unwrap();
        let claimed = store
            .claim("host-a", now_ms(), now_ms() + 10_000)
            .await
            .unwrap();
        assert_eq!(claimed.unwrap().id, "kept");
        drop(store);

        let store = EmbeddedStore::open(&path).unwrap();
        let read = store
            .get("kept")
            .await
            .unwrap()
            .expect("kept across reopening");
        assert_eq!((read.version, read.attempts), (2, 1));
        assert_eq!(read.lease.unwrap().holder, "host-a");
        // The indexes were kept too: the owner's count, and the due round
        // once its lease runs out.
        let full = store
            .create(contract::task("more", "alice"), limit(1))
            .await
            .unwrap_err();
        assert!(
            matches!(full, StoreError::Full(Bound::ActivePerOwner(1))),
            "{full}"
        );
        let again = store
            .claim("host-b", now_ms() + 20_000, now_ms() + 30_000)
            .await
            .unwrap();
        assert_eq!(again.unwrap().attempts, 2);
    }

    /// Set in the child process of the test below: the path the parent holds.
    const HELD_FILE: &str = "AIRLOCK_TEST_HELD_TASK_FILE";

    #[test]
    fn a_file_in_use_is_refused_with_a_clear_error() {
        fn assert_refused(path: &Path) {
            let error = EmbeddedStore::open(path)
                .err()
                .expect("refused")
                .to_string();
            assert!(error.contains(&path.display().to_string()), "{error}");
            assert!(
                error.contains("in use by another airlock process"),
                "{error}"
            );
        }
        if let Some(held) = std::env::var_os(HELD_FILE) {
            // The child: the parent has the file open.
            assert_refused(Path::new(&held));
            return;
        }
        let (_dir, path) = fresh();
        let _held = EmbeddedStore::open(&path).unwrap();
        // In this process,
        assert_refused(&path);
        // and in another one (this test again, as the child above).
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tasks::embedded::tests::a_file_in_use_is_refused_with_a_clear_error",
            ])
            .env(HELD_FILE, &path)
            .output()
            .unwrap();
        let output = String::from_utf8_lossy(&child.stdout);
        assert!(child.status.success(), "{output}");
        assert!(
            output.contains("1 passed"),
            "the child ran the test: {output}"
        );
    }

    #[tokio::test]
    async fn tasks_no_longer_due_leave_the_due_index() {
        let (_dir, path) = fresh();
        let store = EmbeddedStore::open(&path).unwrap();
        store
            .create(contract::task("t", "alice"), limit(10))
            .await
            .unwrap();
        let mut waiting = store.get("t").await.unwrap().unwrap();
        waiting.status = TaskStatus::InputRequired;
        waiting.runnable = false;
        assert!(store.replace(&waiting, limit(10)).await.unwrap());
        assert_eq!(due_entries(&store), 0);
        let mut answered = store.get("t").await.unwrap().unwrap();
        answered.status = TaskStatus::Working;
        answered.runnable = true;
        assert!(store.replace(&answered, limit(10)).await.unwrap());
        assert_eq!(due_entries(&store), 1);
    }

    #[tokio::test]
    async fn expired_tasks_are_swept_with_their_index_entries() {
        let (_dir, path) = fresh();
        let store = EmbeddedStore::open(&path).unwrap();
        let mut short = contract::task("short", "alice");
        short.expires_at_ms = now_ms() + 1;
        store.create(short, limit(10)).await.unwrap();
        store
            .create(contract::task("long", "alice"), limit(10))
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        store.sweep(now_ms()).await.unwrap();
        assert_eq!(
            (task_entries(&store), due_entries(&store)),
            (1, 1),
            "only the live task is left"
        );
        // The owner's expired task no longer counts against them.
        store
            .create(contract::task("next", "alice"), limit(2))
            .await
            .unwrap();
    }

    fn task_entries(store: &EmbeddedStore) -> u64 {
        let transaction = store.database.begin_read().unwrap();
        transaction.open_table(TASKS).unwrap().len().unwrap()
    }

    fn due_entries(store: &EmbeddedStore) -> u64 {
        let transaction = store.database.begin_read().unwrap();
        transaction.open_table(QUEUE).unwrap().len().unwrap()
    }

    #[tokio::test]
    async fn a_file_of_the_first_layout_is_indexed_anew() {
        let (_dir, path) = fresh();
        let mut due = contract::task("due", "alice");
        due.due_since_ms = 0;
        let mut ended = contract::task("ended", "alice");
        ended.status = TaskStatus::Completed;
        ended.runnable = false;
        {
            // The first layout: records, owners (every unexpired task),
            // `due` by `(claimable_from_ms, id)`, expiry; no counters.
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let database = Database::create(&path).unwrap();
            let transaction = database.begin_write().unwrap();
            {
                let mut tasks = transaction.open_table(TASKS).unwrap();
                let mut owners = transaction.open_multimap_table(OWNERS).unwrap();
                let mut old_due = transaction.open_table(FIRST_LAYOUT_DUE).unwrap();
                let mut expiry = transaction.open_table(EXPIRY).unwrap();
                for record in [&due, &ended] {
                    let id = record.id.as_str();
                    let json = serde_json::to_vec(record).unwrap();
                    tasks.insert(id, json.as_slice()).unwrap();
                    owners.insert("alice", (record.expires_at_ms, id)).unwrap();
                    expiry.insert((record.expires_at_ms, id), ()).unwrap();
                }
                old_due.insert((0, "due"), ()).unwrap();
            }
            transaction.commit().unwrap();
        }
        let store = EmbeddedStore::open(&path).unwrap();
        // The ended task no longer counts against its owner,
        store
            .create(contract::task("new", "alice"), limit(2))
            .await
            .unwrap();
        // the due round is claimed (before the new one, due later),
        let claimed = store.claim("host", now_ms(), now_ms() + 10_000).await;
        assert_eq!(claimed.unwrap().unwrap().id, "due");
        // and the bytes stored are counted: three tasks of three bytes.
        let full = store
            .create(
                contract::task("more", "bob"),
                StoreLimits {
                    bytes: 11,
                    ..StoreLimits::NONE
                },
            )
            .await
            .unwrap_err();
        assert!(matches!(full, StoreError::Full(Bound::Bytes(11))), "{full}");
    }
}
