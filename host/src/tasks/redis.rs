//! Tasks in Redis, shared by a fleet of hosts: any host answers for any
//! task, and a round whose host died is claimed again by another.
//!
//! Everything lives under the prefix `airlock:tasks:`:
//! - `task:{id}`, a hash: the record as JSON (`record`), and beside it the
//!   fields the scripts read and write: `version`, `attempts`, the lease
//!   (`holder`, `until`), `expires`, `runnable` (`1` when a round is due)
//!   and `queued` (its member of `due`). A claim changes only those fields,
//!   so the scripts never rewrite JSON; reading a task lays them over the
//!   JSON record. Redis deletes the hash itself when the task expires
//!   (`PEXPIREAT`).
//! - `owner:{owner}`, a sorted set of the owner's active task ids scored by
//!   expiry, to count them; it expires with their last active task.
//! - `due`, the due queue: a sorted set of the tasks whose round is due,
//!   scored by when the round became claimable (when it became due, or the
//!   end of its lease), each member the task id behind 16 hex digits of its
//!   arrival number (`arrivals` counts them), so that rounds due at the same
//!   millisecond sort in the order they arrived, and a claim reads the
//!   oldest entries up to now.
//! - `expiry`, a sorted set of every task id scored by expiry, to count the
//!   tasks; `sizes`, a hash of each task's bytes; `bytes`, their sum.
//!   Expired tasks leave them when a task is created or grows, and on
//!   `sweep`.
//!
//! Creating, replacing and claiming are each one Lua script, atomic in
//! Redis, bounds included. The scripts touch several keys, so the store
//! needs one Redis (or a primary with replicas), not a Redis Cluster.

use std::sync::LazyLock;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::{AsyncCommands, Client, RedisError, RedisResult, Script};
use tokio::sync::broadcast;

use super::store::{
    Bound, EVENT_BUFFER, Lease, StoreError, StoreLimits, TaskEvent, TaskRecord, TaskStore, now_ms,
};
use crate::redis_url;

/// The key of a task's hash, without its id.
const TASK_KEY: &str = "airlock:tasks:task:";
/// The key of an owner's index, without the owner.
const OWNER_KEY: &str = "airlock:tasks:owner:";
/// The due queue.
const DUE_KEY: &str = "airlock:tasks:due";
/// How many rounds have joined the due queue.
const ARRIVALS_KEY: &str = "airlock:tasks:arrivals";
/// Every task, by expiry.
const EXPIRY_KEY: &str = "airlock:tasks:expiry";
/// Each task's bytes.
const SIZES_KEY: &str = "airlock:tasks:sizes";
/// The bytes of all tasks.
const BYTES_KEY: &str = "airlock:tasks:bytes";
/// Where events are published.
///
/// Plain pub/sub rather than keyspace notifications: it needs no server
/// configuration (`notify-keyspace-events` is off by default, and managed
/// Redis often forbids changing it), and the events are typed
/// [`TaskEvent`]s, not bare key names.
const CHANNEL: &str = "airlock:tasks:events";

/// How long to wait for Redis to connect or answer before failing.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The longest pause between two attempts to subscribe again.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The functions the scripts share.
///
/// `queue` puts task `id` (hash `task`) in its place in the due queue: where
/// it is while its due time `from` is unchanged, at the back of the rounds
/// due at `from` otherwise, out of the queue when `from` is nil.
///
/// `prune` forgets the tasks that expired at or before `now` from the
/// expiry index and the byte count.
const QUEUE_LUA: &str = r"
local function queue(due, arrivals, task, id, from)
  local member = redis.call('HGET', task, 'queued')
  if member then
    if from and tonumber(redis.call('ZSCORE', due, member)) == from then return end
    redis.call('ZREM', due, member)
  end
  if not from then
    redis.call('HDEL', task, 'queued')
    return
  end
  member = string.format('%016x', redis.call('INCR', arrivals)) .. id
  redis.call('ZADD', due, from, member)
  redis.call('HSET', task, 'queued', member)
end

local function prune(expiry, sizes, bytes, now)
  local expired = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
  for _, id in ipairs(expired) do
    local size = redis.call('HGET', sizes, id)
    if size then
      redis.call('DECRBY', bytes, size)
      redis.call('HDEL', sizes, id)
    end
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', expiry, '-inf', now) end
end
";

/// Writes a task's hash and its index entries (shared by `create` and
/// `replace`). KEYS: the task, its owner's index, the due queue, the
/// arrivals, the expiry index, the sizes, the bytes. ARGV: id, record JSON,
/// expires, attempts, lease holder and until ('' when none), claimable from
/// ('' when no round is due), active ('1' or '0'), bytes.
const STORE_LUA: &str = r"
local function store(version)
  redis.call('HSET', KEYS[1], 'record', ARGV[2], 'version', version,
    'expires', ARGV[3], 'attempts', ARGV[4], 'runnable', ARGV[7] == '' and '0' or '1')
  if ARGV[5] == '' then
    redis.call('HDEL', KEYS[1], 'holder', 'until')
  else
    redis.call('HSET', KEYS[1], 'holder', ARGV[5], 'until', ARGV[6])
  end
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
  if ARGV[8] == '1' then
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
  else
    redis.call('ZREM', KEYS[2], ARGV[1])
  end
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIREAT', KEYS[2], last[2]) end
  redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
  local old = redis.call('HGET', KEYS[6], ARGV[1]) or 0
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[9])
  redis.call('INCRBY', KEYS[7], ARGV[9] - old)
  queue(KEYS[3], KEYS[4], KEYS[1], ARGV[1], ARGV[7] ~= '' and tonumber(ARGV[7]) or nil)
end
";

/// Creates a task within the bounds. ARGV beyond `store`'s: now, the most
/// active tasks an owner may have, the most tasks, the most bytes. `ok` if
/// created, or if it exists already (ids are random: it is this create,
/// repeated after a dropped connection); else the bound that refused it:
/// `active`, `tasks` or `bytes`.
static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{QUEUE_LUA}{STORE_LUA}
if redis.call('EXISTS', KEYS[1]) == 1 then return 'ok' end
prune(KEYS[5], KEYS[6], KEYS[7], ARGV[10])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[10])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[11]) then return 'active' end
if redis.call('ZCARD', KEYS[5]) >= tonumber(ARGV[12]) then return 'tasks' end
local stored = tonumber(redis.call('GET', KEYS[7]) or '0')
if stored + tonumber(ARGV[9]) > tonumber(ARGV[13]) then return 'bytes' end
store(1)
return 'ok'"
    ))
});

/// Writes a task if its stored version is the one read, and, if it makes
/// an active task larger, within the byte bound. ARGV beyond `store`'s: the version read, the
/// version to write, now, the most bytes. `ok` if written, or if this very
/// write is stored already (repeated after a dropped connection); `stale`
/// if the version differs; `bytes` if the bound refused it.
static REPLACE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{QUEUE_LUA}{STORE_LUA}
local stored = redis.call('HMGET', KEYS[1], 'version', 'record')
if stored[1] == ARGV[11] and stored[2] == ARGV[2] then return 'ok' end
if stored[1] ~= ARGV[10] then return 'stale' end
local old = tonumber(redis.call('HGET', KEYS[6], ARGV[1]) or '0')
local new = tonumber(ARGV[9])
if new > old and ARGV[8] == '1' then
  prune(KEYS[5], KEYS[6], KEYS[7], ARGV[12])
  local total = tonumber(redis.call('GET', KEYS[7]) or '0')
  if total - old + new > tonumber(ARGV[13]) then return 'bytes' end
end
store(ARGV[11])
return 'ok'"
    ))
});

/// Claims the round that has waited longest. KEYS: the due queue, the
/// arrivals. ARGV: now, holder, lease until, the task key prefix. The
/// record's JSON, version and attempts, or nil. Every entry read is
/// claimed, leaves the queue, or goes back to it past now, so the walk
/// ends. An entry of the first layout (a bare id, unnumbered) is queued
/// anew.
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{QUEUE_LUA}
local now = tonumber(ARGV[1])
while true do
  local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 16)
  if #members == 0 then return false end
  for _, member in ipairs(members) do
    local id = string.sub(member, 17)
    local key = ARGV[4] .. id
    local task = redis.call('HMGET', key, 'queued', 'runnable', 'expires', 'until')
    if task[1] ~= member then
      redis.call('ZREM', KEYS[1], member)
      local first = ARGV[4] .. member
      if redis.call('HGET', first, 'runnable') == '1' then
        queue(KEYS[1], KEYS[2], first, member, tonumber(redis.call('HGET', first, 'until') or '0'))
      end
    elseif task[2] ~= '1' or tonumber(task[3]) <= now then
      queue(KEYS[1], KEYS[2], key, id, nil)
    elseif task[4] and tonumber(task[4]) > now then
      queue(KEYS[1], KEYS[2], key, id, tonumber(task[4]))
    else
      redis.call('HSET', key, 'holder', ARGV[2], 'until', ARGV[3])
      redis.call('HINCRBY', key, 'attempts', 1)
      redis.call('HINCRBY', key, 'version', 1)
      queue(KEYS[1], KEYS[2], key, id, tonumber(ARGV[3]))
      return redis.call('HMGET', key, 'record', 'version', 'attempts')
    end
  end
end"
    ))
});

/// How many due entries `sweep` reads per script (each script blocks Redis
/// while it runs).
const SWEEP_PAGE: u64 = 256;

/// Forgets expired tasks from the counts (on the first page), and drops the
/// due entries of tasks that are gone, in one page of the due queue. KEYS:
/// the due queue, the expiry index, the sizes, the bytes. ARGV: the rank to
/// start at, how many to read, the task key prefix, now. How many were
/// kept, and how many read.
static SWEEP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{QUEUE_LUA}
if ARGV[1] == '0' then prune(KEYS[2], KEYS[3], KEYS[4], ARGV[4]) end
local members = redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[1] + ARGV[2] - 1)
local kept = 0
for _, member in ipairs(members) do
  local queued = redis.call('HGET', ARGV[3] .. string.sub(member, 17), 'queued')
  if queued == member or redis.call('EXISTS', ARGV[3] .. member) == 1 then
    kept = kept + 1
  else
    redis.call('ZREM', KEYS[1], member)
  end
end
return {{kept, #members}}"
    ))
});

/// Tasks in Redis, for a fleet of hosts that share them.
pub struct RedisStore {
    connection: ConnectionManager,
    description: String,
    events: broadcast::Sender<TaskEvent>,
    /// Forwards what is published into `events`; stopped with the store.
    listener: tokio::task::JoinHandle<()>,
}

impl RedisStore {
    /// Connects to the Redis at `url` (`redis://[USER:PASSWORD@]HOST:PORT/DB`,
    /// or `rediss://` for TLS) and subscribes to the task events.
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let description = describe(url)?;
        let failed = |what: &str, error: RedisError| {
            StoreError::Unavailable(format!("Redis at {description}: {what}: {error}"))
        };
        let client = redis_url::client(url).map_err(|e| failed("bad URL", e))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(2);
        let connection = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| failed("cannot connect", e))?;
        let subscription = subscribe(&client)
            .await
            .map_err(|e| failed("cannot subscribe to task events", e))?;
        let events = broadcast::channel(EVENT_BUFFER).0;
        let listener = tokio::spawn(forward_events(
            client,
            subscription,
            events.clone(),
            description.clone(),
        ));
        Ok(RedisStore {
            connection,
            description,
            events,
            listener,
        })
    }

    fn failed(&self, what: &str, error: impl std::fmt::Display) -> StoreError {
        StoreError::Unavailable(format!("Redis at {}: {what}: {error}", self.description))
    }

    /// Sends a request (`what`, for the error), and sends it once more if
    /// the connection had dropped: the connection manager connects again
    /// after such a failure, but does not repeat the request. Every request
    /// of this store may be repeated: reads, events (hints), sweeping;
    /// `create` and `replace` recognise their own earlier write; a claim
    /// whose answer was lost keeps its task until the lease runs out.
    async fn request<T, F>(
        &self,
        what: &str,
        request: impl Fn(ConnectionManager) -> F,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = RedisResult<T>>,
    {
        match request(self.connection.clone()).await {
            Err(error) if error.is_connection_dropped() => request(self.connection.clone()).await,
            done => done,
        }
        .map_err(|e| self.failed(what, e))
    }

    /// Runs `create` or `replace`'s script for `record`, stored with version
    /// `version`; `extra` are the script's own arguments. What the script
    /// answers (`ok`, or why not).
    async fn store(
        &self,
        script: &Script,
        record: &TaskRecord,
        version: u64,
        extra: &[u64],
    ) -> Result<String, StoreError> {
        let mut stored = record.clone();
        stored.version = version;
        let json = serde_json::to_string(&stored).map_err(|e| self.failed("encoding", e))?;
        let (holder, until) = match &record.lease {
            Some(lease) => (lease.holder.as_str(), lease.until_ms.to_string()),
            None => ("", String::new()),
        };
        let claimable_from = record
            .claimable_from()
            .map_or_else(String::new, |ms| ms.to_string());
        let mut invocation = script.prepare_invoke();
        invocation
            .key(format!("{TASK_KEY}{}", record.id))
            .key(format!("{OWNER_KEY}{}", record.owner))
            .key(DUE_KEY)
            .key(ARRIVALS_KEY)
            .key(EXPIRY_KEY)
            .key(SIZES_KEY)
            .key(BYTES_KEY)
            .arg(&record.id)
            .arg(json)
            .arg(record.expires_at_ms)
            .arg(record.attempts)
            .arg(holder)
            .arg(until)
            .arg(claimable_from)
            .arg(if record.status.is_active() { "1" } else { "0" })
            .arg(record.stored_bytes());
        for arg in extra {
            invocation.arg(arg);
        }
        self.request("writing a task", |mut c| {
            let invocation = &invocation;
            async move { invocation.invoke_async(&mut c).await }
        })
        .await
    }

    /// The record from its JSON and the fields a claim changes.
    fn assemble(
        &self,
        json: &str,
        version: u64,
        attempts: u32,
        lease: Option<Lease>,
    ) -> Result<TaskRecord, StoreError> {
        let mut record: TaskRecord =
            serde_json::from_str(json).map_err(|e| self.failed("unreadable task record", e))?;
        record.version = version;
        record.attempts = attempts;
        record.lease = lease;
        Ok(record)
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// `url` without its password, or why it is refused (the URL itself is
/// never echoed: it may hold a password).
fn describe(url: &str) -> Result<String, StoreError> {
    redis_url::describe(url)
        .map_err(|why| StoreError::Unavailable(format!("the task store URL: {why}")))
}

/// A subscription to the event channel.
async fn subscribe(client: &Client) -> Result<PubSub, RedisError> {
    let connecting = async {
        let mut subscription = client.get_async_pubsub().await?;
        subscription.subscribe(CHANNEL).await?;
        Ok(subscription)
    };
    tokio::time::timeout(TIMEOUT, connecting)
        .await
        .unwrap_or_else(|_| Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()))
}

/// Hands every event published, by any host, to `events`. When Redis goes
/// away, subscribes again with growing pauses, then sends
/// [`TaskEvent::Runnable`] so hosts look for work again. Events published
/// during the outage are lost: hosts find the changes by polling the store
/// (`tasks/get`, and the periodic claim).
async fn forward_events(
    client: Client,
    subscription: PubSub,
    events: broadcast::Sender<TaskEvent>,
    description: String,
) {
    let mut messages = subscription.into_on_message();
    loop {
        while let Some(message) = messages.next().await {
            match serde_json::from_slice(message.get_payload_bytes()) {
                // No receivers is not an error: nobody is waiting.
                Ok(event) => drop(events.send(event)),
                Err(error) => tracing::warn!(
                    store = %description,
                    "ignored a task event that does not read: {error}"
                ),
            }
        }
        tracing::warn!(
            store = %description,
            "lost the subscription to task events; subscribing again"
        );
        let mut pause = Duration::from_millis(100);
        messages = loop {
            tokio::time::sleep(pause).await;
            match subscribe(&client).await {
                Ok(subscription) => break subscription.into_on_message(),
                Err(_) => pause = (pause * 2).min(MAX_BACKOFF),
            }
        };
        tracing::info!(store = %description, "subscribed to task events again");
        let _ = events.send(TaskEvent::Runnable);
    }
}

impl TaskStore for RedisStore {
    fn create(
        &self,
        record: TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let bounds = [
                now_ms(),
                limits.active_per_owner,
                limits.tasks,
                limits.bytes,
            ];
            match self.store(&CREATE, &record, 1, &bounds).await?.as_str() {
                "ok" => Ok(()),
                "active" => Err(StoreError::Full(Bound::ActivePerOwner(
                    limits.active_per_owner,
                ))),
                "tasks" => Err(StoreError::Full(Bound::Tasks(limits.tasks))),
                "bytes" => Err(StoreError::Full(Bound::Bytes(limits.bytes))),
                other => {
                    Err(self.failed("creating a task", format!("unexpected answer {other:?}")))
                }
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            type Fields = (
                Option<String>,
                Option<u64>,
                Option<u32>,
                Option<String>,
                Option<u64>,
            );
            let key = format!("{TASK_KEY}{id}");
            let (json, version, attempts, holder, until): Fields = self
                .request("reading a task", |mut c| {
                    let key = &key;
                    async move {
                        c.hmget(key, &["record", "version", "attempts", "holder", "until"])
                            .await
                    }
                })
                .await?;
            let (Some(json), Some(version), Some(attempts)) = (json, version, attempts) else {
                return Ok(None);
            };
            let lease = holder
                .zip(until)
                .map(|(holder, until_ms)| Lease { holder, until_ms });
            let record = self.assemble(&json, version, attempts, lease)?;
            Ok(Some(record).filter(|r| r.expires_at_ms > now_ms()))
        })
    }

    fn replace<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: StoreLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let read = record.version;
            let extra = [read, read + 1, now_ms(), limits.bytes];
            match self
                .store(&REPLACE, record, read + 1, &extra)
                .await?
                .as_str()
            {
                "ok" => Ok(true),
                "stale" => Ok(false),
                "bytes" => Err(StoreError::Full(Bound::Bytes(limits.bytes))),
                other => Err(self.failed("writing a task", format!("unexpected answer {other:?}"))),
            }
        })
    }

    fn claim<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let mut invocation = CLAIM.prepare_invoke();
            invocation
                .key(DUE_KEY)
                .key(ARRIVALS_KEY)
                .arg(now_ms)
                .arg(holder)
                .arg(until_ms)
                .arg(TASK_KEY);
            let claimed: Option<(String, u64, u32)> = self
                .request("claiming a round", |mut c| {
                    let invocation = &invocation;
                    async move { invocation.invoke_async(&mut c).await }
                })
                .await?;
            claimed
                .map(|(json, version, attempts)| {
                    let lease = Lease {
                        holder: holder.to_owned(),
                        until_ms,
                    };
                    self.assemble(&json, version, attempts, Some(lease))
                })
                .transpose()
        })
    }

    fn publish(&self, event: TaskEvent) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(&event).map_err(|e| self.failed("encoding", e))?;
            let _receivers: u64 = self
                .request("publishing an event", |mut c| {
                    let json = &json;
                    async move { c.publish(CHANNEL, json).await }
                })
                .await?;
            Ok(())
        })
    }

    fn events(&self) -> broadcast::Receiver<TaskEvent> {
        self.events.subscribe()
    }

    /// Redis expires the records itself; this forgets expired tasks from
    /// the counts and drops the due entries of tasks that are gone, a page
    /// at a time (owners' indexes are pruned when they create a task, and
    /// expire with their last active task).
    fn sweep(&self, now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let mut start = 0;
            loop {
                let mut invocation = SWEEP.prepare_invoke();
                invocation
                    .key(DUE_KEY)
                    .key(EXPIRY_KEY)
                    .key(SIZES_KEY)
                    .key(BYTES_KEY)
                    .arg(start)
                    .arg(SWEEP_PAGE)
                    .arg(TASK_KEY)
                    .arg(now_ms);
                let (kept, read): (u64, u64) = self
                    .request("sweeping the due index", |mut c| {
                        let invocation = &invocation;
                        async move { invocation.invoke_async(&mut c).await }
                    })
                    .await?;
                if read < SWEEP_PAGE {
                    return Ok(());
                }
                start += kept;
            }
        })
    }

    fn check(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            self.request("PING", |mut c| async move {
                redis::cmd("PING").query_async::<String>(&mut c).await
            })
            .await
            .map(drop)
        })
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

#[cfg(test)]
mod tests {
    use airlock_e2e::RedisServer as Server;

    use super::super::store::{TaskStatus, contract};
    use super::*;

    async fn next_event(events: &mut broadcast::Receiver<TaskEvent>) -> TaskEvent {
        tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("an event within 30 s")
            .unwrap()
    }

    async fn due_entries(server: &Server) -> u64 {
        let client = Client::open(server.url()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        connection.zcard(DUE_KEY).await.unwrap()
    }

    #[tokio::test]
    async fn the_redis_store_keeps_the_contract() {
        let server = Server::start();
        contract::all(&RedisStore::connect(&server.url()).await.unwrap()).await;
    }

    #[tokio::test]
    async fn hosts_sharing_a_redis_see_each_others_tasks_and_events() {
        let server = Server::start();
        let first = RedisStore::connect(&server.url()).await.unwrap();
        let second = RedisStore::connect(&server.url()).await.unwrap();
        let mut heard = second.events();
        first
            .create(contract::task("shared", "alice"), StoreLimits::NONE)
            .await
            .unwrap();
        first
            .publish(TaskEvent::Changed("shared".to_owned()))
            .await
            .unwrap();
        assert_eq!(
            next_event(&mut heard).await,
            TaskEvent::Changed("shared".to_owned())
        );
        let read = second.get("shared").await.unwrap().expect("seen by both");
        assert_eq!(read.version, 1);
        let claimed = second
            .claim("host-b", now_ms(), now_ms() + 10_000)
            .await
            .unwrap();
        assert_eq!(claimed.unwrap().id, "shared");
        assert!(
            first
                .claim("host-a", now_ms(), now_ms() + 10_000)
                .await
                .unwrap()
                .is_none(),
            "claimed once across the fleet"
        );
    }

    #[tokio::test]
    async fn tasks_no_longer_due_leave_the_due_index_and_gone_ones_are_swept() {
        let server = Server::start();
        let store = RedisStore::connect(&server.url()).await.unwrap();
        store
            .create(contract::task("t", "alice"), StoreLimits::NONE)
            .await
            .unwrap();
        let mut waiting = store.get("t").await.unwrap().unwrap();
        waiting.status = TaskStatus::InputRequired;
        waiting.runnable = false;
        assert!(store.replace(&waiting, StoreLimits::NONE).await.unwrap());
        assert_eq!(due_entries(&server).await, 0);

        let mut short = contract::task("short", "alice");
        short.expires_at_ms = now_ms() + 50;
        store.create(short, StoreLimits::NONE).await.unwrap();
        assert_eq!(due_entries(&server).await, 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
        store.sweep(now_ms()).await.unwrap();
        assert_eq!(due_entries(&server).await, 0, "the expired task's entry");
    }

    #[tokio::test]
    async fn rounds_queued_by_the_first_layout_are_still_claimed() {
        let server = Server::start();
        let store = RedisStore::connect(&server.url()).await.unwrap();
        // The first layout: no `queued` field, the bare id in `due`, scored 0.
        let record = contract::task("old", "alice");
        let client = Client::open(server.url()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = connection
            .hset_multiple(
                format!("{TASK_KEY}old"),
                &[
                    ("record", serde_json::to_string(&record).unwrap()),
                    ("version", "1".to_owned()),
                    ("expires", record.expires_at_ms.to_string()),
                    ("attempts", "0".to_owned()),
                    ("runnable", "1".to_owned()),
                ],
            )
            .await
            .unwrap();
        let _: () = connection.zadd(DUE_KEY, "old", 0).await.unwrap();
        store.sweep(now_ms()).await.unwrap();
        assert_eq!(due_entries(&server).await, 1, "kept by the sweep");
        let claimed = store
            .claim("host", now_ms(), now_ms() + 10_000)
            .await
            .unwrap();
        assert_eq!(claimed.expect("claimed").attempts, 1);
    }

    #[tokio::test]
    async fn events_resume_after_redis_comes_back_with_a_call_to_look_again() {
        let mut server = Server::start();
        let store = RedisStore::connect(&server.url()).await.unwrap();
        let mut heard = store.events();
        server.restart();
        assert_eq!(next_event(&mut heard).await, TaskEvent::Runnable);
        store
            .publish(TaskEvent::Cancelled("t".to_owned()))
            .await
            .unwrap();
        assert_eq!(
            next_event(&mut heard).await,
            TaskEvent::Cancelled("t".to_owned())
        );
    }

    #[tokio::test]
    async fn urls_are_described_without_their_password_and_other_schemes_are_refused() {
        let described = describe("redis://user:secret@cache.internal:6380/2").unwrap();
        assert_eq!(described, "redis://user@cache.internal:6380/2");
        let described = describe("rediss://:secret@cache.internal:6380/2").unwrap();
        assert_eq!(described, "rediss://cache.internal:6380/2");
        let refused = describe("valkeys://user:secret@cache.internal:6380/2")
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("rediss://") && !refused.contains("secret"),
            "{refused}"
        );
        let server = Server::start();
        let unreachable = server.url().replace("redis://", "redis://user:secret@");
        drop(server);
        let error = RedisStore::connect(&unreachable)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("127.0.0.1") && !error.contains("secret"),
            "{error}"
        );
    }
}
