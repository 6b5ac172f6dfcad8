//! Tasks in Redis, shared by a fleet of hosts: any host answers for any
//! task, and a round whose host died is claimed again by another.
//!
//! Everything lives under the prefix `airlock:tasks:`:
//! - `task:{id}`, a hash: the record as JSON (`record`), and beside it the
//!   fields the scripts read and write: `version`, `attempts`, the lease
//!   (`holder`, `until`), `expires` and `runnable` (`1` when a round is
//!   due). A claim changes only those fields, so the scripts never rewrite
//!   JSON; reading a task lays them over the JSON record. Redis deletes the
//!   hash itself when the task expires (`PEXPIREAT`).
//! - `owner:{owner}`, a sorted set of the owner's task ids scored by
//!   expiry, to count their live tasks; it expires with their last task.
//! - `due`, a sorted set of the ids whose round is due, scored by when they
//!   may be claimed (the end of their lease, 0 when unleased), so a claim
//!   reads only the entries up to now.
//!
//! Creating, replacing and claiming are each one Lua script, atomic in
//! Redis. The scripts touch several keys, so the store needs one Redis
//! (or a primary with replicas), not a Redis Cluster.

use std::sync::LazyLock;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::{AsyncCommands, Client, RedisError, RedisResult, Script};
use tokio::sync::broadcast;

use super::store::{EVENT_BUFFER, Lease, StoreError, TaskEvent, TaskRecord, TaskStore, now_ms};

/// The key of a task's hash, without its id.
const TASK_KEY: &str = "airlock:tasks:task:";
/// The key of an owner's index, without the owner.
const OWNER_KEY: &str = "airlock:tasks:owner:";
/// The index of the tasks whose round is due.
const DUE_KEY: &str = "airlock:tasks:due";
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

/// Writes a task's hash and its index entries (shared by `create` and
/// `replace`). KEYS: the task, its owner's index, the due index. ARGV: id,
/// record JSON, expires, attempts, lease holder and until ('' when none),
/// claimable from ('' when no round is due).
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
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[2], last[2])
  if ARGV[7] == '' then
    redis.call('ZREM', KEYS[3], ARGV[1])
  else
    redis.call('ZADD', KEYS[3], ARGV[7], ARGV[1])
  end
end
";

/// Creates a task unless its owner has too many. ARGV beyond `store`'s:
/// now, the most live tasks an owner may have. 1 if created, or if it
/// exists already (ids are random: it is this create, repeated after a
/// dropped connection).
static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{STORE_LUA}
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[8])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[9]) then return 0 end
store(1)
return 1"
    ))
});

/// Writes a task if its stored version is the one read. ARGV beyond
/// `store`'s: the version read, the version to write. 1 if written, or if
/// this very write is stored already (repeated after a dropped connection).
static REPLACE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{STORE_LUA}
local stored = redis.call('HMGET', KEYS[1], 'version', 'record')
if stored[1] == ARGV[9] and stored[2] == ARGV[2] then return 1 end
if stored[1] ~= ARGV[8] then return 0 end
store(ARGV[9])
return 1"
    ))
});

/// Claims the first due round. KEYS: the due index. ARGV: now, holder,
/// lease until, the task key prefix. The record's JSON, version and
/// attempts, or nil. Every entry read either is claimed or leaves the range
/// up to now, so the walk ends.
static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local now = tonumber(ARGV[1])
while true do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 16)
  if #ids == 0 then return false end
  for _, id in ipairs(ids) do
    local key = ARGV[4] .. id
    local task = redis.call('HMGET', key, 'runnable', 'expires', 'until')
    if task[1] ~= '1' or tonumber(task[2]) <= now then
      redis.call('ZREM', KEYS[1], id)
    elseif task[3] and tonumber(task[3]) > now then
      redis.call('ZADD', KEYS[1], task[3], id)
    else
      redis.call('HSET', key, 'holder', ARGV[2], 'until', ARGV[3])
      redis.call('HINCRBY', key, 'attempts', 1)
      redis.call('HINCRBY', key, 'version', 1)
      redis.call('ZADD', KEYS[1], ARGV[3], id)
      return redis.call('HMGET', key, 'record', 'version', 'attempts')
    end
  end
end",
    )
});

/// How many due entries `sweep` reads per script (each script blocks Redis
/// while it runs).
const SWEEP_PAGE: u64 = 256;

/// Drops the due entries of tasks that are gone, in one page of the due
/// index. KEYS: the due index. ARGV: the rank to start at, how many to
/// read, the task key prefix. How many were kept, and how many read.
static SWEEP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ids = redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[1] + ARGV[2] - 1)
local kept = 0
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[3] .. id) == 0 then
    redis.call('ZREM', KEYS[1], id)
  else
    kept = kept + 1
  end
end
return {kept, #ids}",
    )
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
    /// Connects to the Redis at `url` (`redis://[USER:PASSWORD@]HOST:PORT/DB`)
    /// and subscribes to the task events. `rediss://` (TLS) is refused: this
    /// build has no TLS client for Redis.
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let description = describe(url)?;
        let failed = |what: &str, error: RedisError| {
            StoreError::Unavailable(format!("Redis at {description}: {what}: {error}"))
        };
        let client = Client::open(url).map_err(|e| failed("bad URL", e))?;
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
    /// `version`; `extra` are the script's own arguments.
    async fn store(
        &self,
        script: &Script,
        record: &TaskRecord,
        version: u64,
        extra: [u64; 2],
    ) -> Result<bool, StoreError> {
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
            .arg(&record.id)
            .arg(json)
            .arg(record.expires_at_ms)
            .arg(record.attempts)
            .arg(holder)
            .arg(until)
            .arg(claimable_from)
            .arg(extra[0])
            .arg(extra[1]);
        let written: u8 = self
            .request("writing a task", |mut c| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut c).await }
            })
            .await?;
        Ok(written == 1)
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
    describe_url(url).map_err(|why| StoreError::Unavailable(format!("the task store URL: {why}")))
}

/// A Redis URL without its password, for logs and errors, or why this
/// build refuses it (the URL itself is never echoed: it may hold a
/// password). Shared by every store in Redis.
pub(crate) fn describe_url(url: &str) -> Result<String, &'static str> {
    let mut parsed =
        redis::parse_redis_url(url).ok_or("not a Redis URL (expected redis://HOST:PORT/DB)")?;
    match parsed.scheme() {
        "redis" => {}
        "rediss" | "valkeys" => {
            return Err(
                "TLS (rediss://) is not supported; reach Redis over a private network \
                 or through a TLS tunnel, with redis://",
            );
        }
        _ => return Err("only redis://HOST:PORT/DB URLs are supported"),
    }
    if parsed.password().is_some() {
        let _ = parsed.set_password(None);
    }
    Ok(parsed.to_string())
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
        max_per_owner: usize,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let limit = u64::try_from(max_per_owner).unwrap_or(u64::MAX);
            match self.store(&CREATE, &record, 1, [now_ms(), limit]).await? {
                true => Ok(()),
                false => Err(StoreError::Full { max: max_per_owner }),
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

    fn replace<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let read = record.version;
            self.store(&REPLACE, record, read + 1, [read, read + 1])
                .await
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

    /// Redis expires the records itself; this drops the due entries of
    /// tasks that are gone, a page at a time (owners' indexes are pruned
    /// when they create a task, and expire with their last task).
    fn sweep(&self, _now_ms: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let mut start = 0;
            loop {
                let mut invocation = SWEEP.prepare_invoke();
                invocation
                    .key(DUE_KEY)
                    .arg(start)
                    .arg(SWEEP_PAGE)
                    .arg(TASK_KEY);
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
            .create(contract::task("shared", "alice"), 10)
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
            .create(contract::task("t", "alice"), 10)
            .await
            .unwrap();
        let mut waiting = store.get("t").await.unwrap().unwrap();
        waiting.status = TaskStatus::InputRequired;
        waiting.runnable = false;
        assert!(store.replace(&waiting).await.unwrap());
        assert_eq!(due_entries(&server).await, 0);

        let mut short = contract::task("short", "alice");
        short.expires_at_ms = now_ms() + 50;
        store.create(short, 10).await.unwrap();
        assert_eq!(due_entries(&server).await, 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
        store.sweep(now_ms()).await.unwrap();
        assert_eq!(due_entries(&server).await, 0, "the expired task's entry");
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
    async fn urls_are_described_without_their_password_and_tls_is_refused() {
        let described = describe("redis://user:secret@cache.internal:6380/2").unwrap();
        assert_eq!(described, "redis://user@cache.internal:6380/2");
        let refused = describe("rediss://user:secret@cache.internal:6380/2")
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("TLS") && !refused.contains("secret"),
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
