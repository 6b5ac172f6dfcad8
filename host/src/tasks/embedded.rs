//! Tasks in a file on this host's disk: they survive a restart of the host,
//! and one host uses the file at a time (the file is locked while open).
//!
//! The file is a [`redb`] database. Every write is a transaction committed
//! to disk before it returns. Records are stored as JSON (serde_json): a
//! self-describing format, so a file written before a field was added to
//! [`TaskRecord`] still reads after (a compact binary format such as postcard
//! would not), and the file can be inspected with ordinary tools.
//!
//! Beside the records, three indexes spare `create`, `claim` and `sweep` a
//! walk over every task:
//! - by owner: each owner's `(expires_at_ms, id)`, to count their live tasks;
//! - due: `(claimable_from_ms, id)` of every task whose round is due, where
//!   `claimable_from_ms` is the end of its lease (0 when unleased), so a
//!   claim at `now` reads only the entries up to `now`;
//! - by expiry: `(expires_at_ms, id)`, for `sweep`.
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
    ReadableTable, Table, TableDefinition, WriteTransaction,
};
use tokio::sync::broadcast;

use super::store::{LocalEvents, StoreError, TaskEvent, TaskRecord, TaskStore, now_ms};

/// id → the record, as JSON.
const TASKS: TableDefinition<&str, &[u8]> = TableDefinition::new("tasks");
/// owner → `(expires_at_ms, id)` of each of their tasks.
const OWNERS: MultimapTableDefinition<&str, (u64, &str)> = MultimapTableDefinition::new("owners");
/// `(claimable_from_ms, id)` of each task whose round is due.
const DUE: TableDefinition<(u64, &str), ()> = TableDefinition::new("due");
/// `(expires_at_ms, id)` of each task.
const EXPIRY: TableDefinition<(u64, &str), ()> = TableDefinition::new("expiry");

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
        let create_tables = || -> anyhow::Result<()> {
            let transaction = database.begin_write()?;
            Tables::open(&transaction)?;
            transaction.commit()?;
            Ok(())
        };
        create_tables().map_err(|e| failed(&format_args!("{e:#}")))?;
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

/// The first key past every index entry at or before `ms`.
fn after(ms: u64) -> (u64, &'static str) {
    (ms.saturating_add(1), "")
}

/// The records and their indexes, open in one write transaction.
struct Tables<'txn> {
    tasks: Table<'txn, &'static str, &'static [u8]>,
    owners: MultimapTable<'txn, &'static str, (u64, &'static str)>,
    due: Table<'txn, (u64, &'static str), ()>,
    expiry: Table<'txn, (u64, &'static str), ()>,
    /// Whether anything was written (and is worth a commit).
    changed: bool,
}

impl<'txn> Tables<'txn> {
    fn open(transaction: &'txn WriteTransaction) -> Result<Self, redb::TableError> {
        Ok(Tables {
            tasks: transaction.open_table(TASKS)?,
            owners: transaction.open_multimap_table(OWNERS)?,
            due: transaction.open_table(DUE)?,
            expiry: transaction.open_table(EXPIRY)?,
            changed: false,
        })
    }

    fn read(&self, id: &str) -> anyhow::Result<Option<TaskRecord>> {
        self.tasks
            .get(id)?
            .map(|json| decode(id, json.value()))
            .transpose()
    }

    /// Stores `record` in place of `previous` (the stored copy, if any).
    fn write(&mut self, record: &TaskRecord, previous: Option<&TaskRecord>) -> anyhow::Result<()> {
        if let Some(previous) = previous {
            self.unindex(previous)?;
        }
        self.changed = true;
        self.tasks
            .insert(record.id.as_str(), serde_json::to_vec(record)?.as_slice())?;
        let id = record.id.as_str();
        self.owners
            .insert(record.owner.as_str(), (record.expires_at_ms, id))?;
        self.expiry.insert((record.expires_at_ms, id), ())?;
        if let Some(from) = record.claimable_from() {
            self.due.insert((from, id), ())?;
        }
        Ok(())
    }

    /// Deletes the task and its index entries.
    fn forget(&mut self, record: &TaskRecord) -> anyhow::Result<()> {
        self.tasks.remove(record.id.as_str())?;
        self.changed = true;
        self.unindex(record)
    }

    fn unindex(&mut self, record: &TaskRecord) -> anyhow::Result<()> {
        let id = record.id.as_str();
        self.owners
            .remove(record.owner.as_str(), (record.expires_at_ms, id))?;
        self.expiry.remove((record.expires_at_ms, id))?;
        if let Some(from) = record.claimable_from() {
            self.due.remove((from, id))?;
        }
        Ok(())
    }

    /// Deletes the owner's expired tasks and counts the live ones.
    fn live_tasks_of(&mut self, owner: &str, now_ms: u64) -> anyhow::Result<u64> {
        let entries = self.owners.get(owner)?;
        let total = entries.len();
        let mut expired = Vec::new();
        // In order of expiry: the expired ones come first.
        for entry in entries {
            let entry = entry?;
            let (expires_at_ms, id) = entry.value();
            if expires_at_ms > now_ms {
                break;
            }
            expired.push(id.to_owned());
        }
        for id in &expired {
            if let Some(record) = self.read(id)? {
                self.forget(&record)?;
            }
        }
        Ok(total - expired.len() as u64)
    }

    /// The first task claimable at `now_ms`, as stored.
    fn first_claimable(&self, now_ms: u64) -> anyhow::Result<Option<TaskRecord>> {
        for entry in self.due.range(..after(now_ms))? {
            let (key, _) = entry?;
            let (_, id) = key.value();
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
        max_per_owner: usize,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let now = now_ms();
        let created = self.run(move |database| {
            write(database, |tables| {
                let live = tables.live_tasks_of(&record.owner, now)?;
                if live >= max_per_owner as u64 {
                    // What was pruned is committed all the same.
                    return Ok(false);
                }
                record.version = 1;
                let previous = tables.read(&record.id)?;
                tables.write(&record, previous.as_ref())?;
                Ok(true)
            })
        });
        Box::pin(async move {
            match created.await? {
                true => Ok(()),
                false => Err(StoreError::Full { max: max_per_owner }),
            }
        })
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

    fn replace<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, Result<bool, StoreError>> {
        let mut record = record.clone();
        self.run(move |database| {
            write(database, |tables| {
                let Some(stored) = tables.read(&record.id)? else {
                    return Ok(false);
                };
                if stored.version != record.version {
                    return Ok(false);
                }
                record.version += 1;
                tables.write(&record, Some(&stored))?;
                Ok(true)
            })
        })
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
        self.run(move |database| {
            write(database, |tables| {
                let mut expired = Vec::new();
                for entry in tables.expiry.range(..after(now_ms))? {
                    let (key, _) = entry?;
                    expired.push(key.value().1.to_owned());
                }
                for id in &expired {
                    if let Some(record) = tables.read(id)? {
                        tables.forget(&record)?;
                    }
                }
                Ok(())
            })
        })
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
    use redb::ReadableTableMetadata;

    use super::super::store::{TaskStatus, contract};
    use super::*;

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
            .create(contract::task("kept", "alice"), 10)
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
            .create(contract::task("more", "alice"), 1)
            .await
            .unwrap_err();
        assert!(matches!(full, StoreError::Full { max: 1 }), "{full}");
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
            .create(contract::task("t", "alice"), 10)
            .await
            .unwrap();
        let mut waiting = store.get("t").await.unwrap().unwrap();
        waiting.status = TaskStatus::InputRequired;
        waiting.runnable = false;
        assert!(store.replace(&waiting).await.unwrap());
        assert_eq!(due_entries(&store), 0);
        let mut answered = store.get("t").await.unwrap().unwrap();
        answered.status = TaskStatus::Working;
        answered.runnable = true;
        assert!(store.replace(&answered).await.unwrap());
        assert_eq!(due_entries(&store), 1);
    }

    #[tokio::test]
    async fn expired_tasks_are_swept_with_their_index_entries() {
        let (_dir, path) = fresh();
        let store = EmbeddedStore::open(&path).unwrap();
        let mut short = contract::task("short", "alice");
        short.expires_at_ms = now_ms() + 1;
        store.create(short, 10).await.unwrap();
        store
            .create(contract::task("long", "alice"), 10)
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
            .create(contract::task("next", "alice"), 2)
            .await
            .unwrap();
    }

    fn task_entries(store: &EmbeddedStore) -> u64 {
        let transaction = store.database.begin_read().unwrap();
        transaction.open_table(TASKS).unwrap().len().unwrap()
    }

    fn due_entries(store: &EmbeddedStore) -> u64 {
        let transaction = store.database.begin_read().unwrap();
        transaction.open_table(DUE).unwrap().len().unwrap()
    }
}
