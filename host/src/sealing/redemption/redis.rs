//! Redeemed token ids in Redis, shared by a fleet: a token opened by one
//! process is refused by every other process that names the same Redis.
//!
//! One command is the whole test-and-set, atomic in Redis:
//!
//! ```text
//! SET airlock:redeemed:<token id in hex> 1 NX EXAT <expires_at + CLOCK_SKEW>
//!   → OK                 Redemption::First
//!   → nil (key exists)   Redemption::Replay
//!   → error or timeout   StoreError::Unavailable (the sealer refuses the token)
//! ```
//!
//! `EXAT` makes Redis drop the key by itself, so the record holds only the
//! live tokens. The key outlives its token by [`CLOCK_SKEW`]: the expiry is
//! read on Redis's clock but checked on each host's, and a host whose clock
//! is behind Redis's must not find the key gone while it still accepts the
//! token. One key per command, so a Redis Cluster works as well as one
//! Redis.
//!
//! # Why the call blocks
//!
//! [`RedemptionStore::redeem`] is synchronous, and so is
//! [`StateSealer::open`](crate::sealing::StateSealer::open), which calls it
//! from async request handlers. Making both async would change every
//! caller and test of `open` for the sake of this one store; instead the
//! call runs the async command to completion on the current Tokio runtime
//! inside [`tokio::task::block_in_place`], which hands the worker's other
//! tasks to another thread meanwhile. It happens once per retried round,
//! never on a first round, and is bounded by [`REDEEM_TIMEOUT`], so a stuck
//! Redis fails the round instead of holding it. `block_in_place` needs the
//! multi-threaded runtime `airlock serve` runs on; called anywhere else,
//! `redeem` fails (closed) instead of panicking.
//!
//! # Failing closed
//!
//! Whenever Redis does not answer `OK` or nil in time (unreachable,
//! restarting, an error, a timeout), `redeem` returns
//! [`StoreError::Unavailable`] naming Redis (without its password) and the
//! cause: the token is refused, the client is told to retry later, and the
//! server log says why. A `SET` whose answer was lost may still have
//! recorded the id, so the client's retry may then be refused as a replay:
//! it restarts the request, as after any lost answer in single-use mode.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::runtime::{Handle, RuntimeFlavor};

use super::{Redemption, RedemptionStore, StoreError, TokenId};
use crate::redis_url;
use crate::sealing::CLOCK_SKEW;

/// The key of a redeemed id, without the id (in hex).
const KEY_PREFIX: &str = "airlock:redeemed:";

/// How long a redemption may wait for Redis (to connect again, and to
/// answer) before the round is refused.
pub const REDEEM_TIMEOUT: Duration = Duration::from_secs(2);

/// How long connecting at start may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Redeemed token ids in Redis, for a fleet whose processes must refuse
/// each other's replays. See the [module documentation](self).
pub struct RedisRedemptions {
    connection: ConnectionManager,
    description: String,
}

impl RedisRedemptions {
    /// Connects to the Redis at `url` (`redis://[USER:PASSWORD@]HOST:PORT/DB`,
    /// or `rediss://` for TLS) and checks that it answers.
    pub async fn connect(url: &str) -> Result<RedisRedemptions, StoreError> {
        let description = redis_url::describe(url)
            .map_err(|why| StoreError::Unavailable(format!("the single-use store URL: {why}")))?;
        let failed = |what: &str, error: &dyn std::fmt::Display| {
            StoreError::Unavailable(format!("Redis at {description}: {what}: {error}"))
        };
        let client = redis_url::client(url).map_err(|e| failed("bad URL", &e))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(REDEEM_TIMEOUT))
            .set_number_of_retries(1);
        let connecting = async {
            let mut connection = client.get_connection_manager_with_config(config).await?;
            redis::cmd("PING")
                .query_async::<String>(&mut connection)
                .await?;
            Ok::<_, redis::RedisError>(connection)
        };
        let connection = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
            .await
            .map_err(|_| failed("cannot connect", &"timed out"))?
            .map_err(|e| failed("cannot connect", &e))?;
        Ok(RedisRedemptions {
            connection,
            description,
        })
    }

    /// The Redis it uses, without the password: for the log.
    pub fn describe(&self) -> &str {
        &self.description
    }

    fn failed(&self, error: impl std::fmt::Display) -> StoreError {
        StoreError::Unavailable(format!("Redis at {}: {error}", self.description))
    }
}

impl std::fmt::Debug for RedisRedemptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRedemptions")
            .field("redis", &self.description)
            .finish()
    }
}

impl RedemptionStore for RedisRedemptions {
    fn redeem(
        &self,
        token_id: &TokenId,
        expires_at: u64,
        _now: u64,
    ) -> Result<Redemption, StoreError> {
        let runtime = Handle::try_current()
            .ok()
            .filter(|runtime| runtime.runtime_flavor() == RuntimeFlavor::MultiThread)
            .ok_or_else(|| self.failed("redeem must run on a multi-threaded Tokio runtime"))?;
        let mut command = redis::cmd("SET");
        command
            .arg(format!("{KEY_PREFIX}{token_id}"))
            .arg(1)
            .arg("NX")
            .arg("EXAT")
            .arg(expires_at.saturating_add(CLOCK_SKEW.as_secs()));
        let mut connection = self.connection.clone();
        let answer = tokio::task::block_in_place(|| {
            runtime.block_on(tokio::time::timeout(
                REDEEM_TIMEOUT,
                command.query_async::<Option<String>>(&mut connection),
            ))
        });
        match answer {
            Ok(Ok(Some(_))) => Ok(Redemption::First),
            Ok(Ok(None)) => Ok(Redemption::Replay),
            Ok(Err(error)) => Err(self.failed(format_args!("SET NX failed: {error}"))),
            Err(_) => Err(self.failed(format_args!(
                "SET NX failed: timed out (no answer within {REDEEM_TIMEOUT:?})"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use airlock_e2e::RedisServer;
    use redis::{AsyncCommands, Client};
    use serde_json::json;

    use super::*;
    use crate::sealing::{
        Binding, DEFAULT_TTL, KeyRing, STATE_UNRECORDED_MESSAGE, StateError, StateLimits,
        StateSealer,
    };

    fn id(byte: u8) -> TokenId {
        TokenId::from_bytes([byte; 16])
    }

    fn unix_now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    /// A plain connection to look at what the store wrote.
    async fn inspect(server: &RedisServer) -> redis::aio::MultiplexedConnection {
        Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_id_is_first_and_every_later_redemption_a_replay_on_any_host() {
        let server = RedisServer::start();
        let host_a = RedisRedemptions::connect(&server.url()).await.unwrap();
        let host_b = RedisRedemptions::connect(&server.url()).await.unwrap();
        let later = unix_now() + 600;
        assert_eq!(host_a.redeem(&id(1), later, 0), Ok(Redemption::First));
        assert_eq!(host_a.redeem(&id(1), later, 0), Ok(Redemption::Replay));
        assert_eq!(host_b.redeem(&id(1), later, 0), Ok(Redemption::Replay));
        assert_eq!(host_b.redeem(&id(2), later, 0), Ok(Redemption::First));
        assert_eq!(host_a.redeem(&id(2), later, 0), Ok(Redemption::Replay));
        let key = format!("{KEY_PREFIX}{}", "01".repeat(16));
        let exists: bool = inspect(&server).await.exists(&key).await.unwrap();
        assert!(exists, "{key} should hold the redeemed id");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_redemptions_of_one_id_across_hosts_succeed_once() {
        let server = RedisServer::start();
        let hosts = [
            Arc::new(RedisRedemptions::connect(&server.url()).await.unwrap()),
            Arc::new(RedisRedemptions::connect(&server.url()).await.unwrap()),
        ];
        let later = unix_now() + 600;
        for round in 0..20u8 {
            let attempts: Vec<_> = (0..8)
                .map(|n| {
                    let host = Arc::clone(&hosts[n % 2]);
                    tokio::spawn(async move { host.redeem(&id(round), later, 0) })
                })
                .collect();
            let mut firsts = 0;
            for attempt in attempts {
                if attempt.await.unwrap() == Ok(Redemption::First) {
                    firsts += 1;
                }
            }
            assert_eq!(firsts, 1, "round {round}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_key_expires_with_its_token_plus_the_clock_skew() {
        let server = RedisServer::start();
        let store = RedisRedemptions::connect(&server.url()).await.unwrap();
        let mut look = inspect(&server).await;
        let expires_at = unix_now() + 600;
        assert_eq!(store.redeem(&id(3), expires_at, 0), Ok(Redemption::First));
        let key = format!("{KEY_PREFIX}{}", id(3));
        let expire_time: u64 = redis::cmd("EXPIRETIME")
            .arg(&key)
            .query_async(&mut look)
            .await
            .unwrap();
        assert_eq!(expire_time, expires_at + CLOCK_SKEW.as_secs());

        // Long expired (beyond the skew): Redis keeps nothing.
        let past = unix_now() - CLOCK_SKEW.as_secs() - 10;
        assert_eq!(store.redeem(&id(4), past, 0), Ok(Redemption::First));
        let kept: bool = look.exists(format!("{KEY_PREFIX}{}", id(4))).await.unwrap();
        assert!(!kept, "a key whose time is past must not be kept");

        // Due to go in a second or two: replayed until then, forgotten after.
        let soon = unix_now() + 2 - CLOCK_SKEW.as_secs();
        assert_eq!(store.redeem(&id(5), soon, 0), Ok(Redemption::First));
        assert_eq!(store.redeem(&id(5), soon, 0), Ok(Redemption::Replay));
        tokio::time::sleep(Duration::from_millis(3100)).await;
        assert_eq!(store.redeem(&id(5), soon, 0), Ok(Redemption::First));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_redis_fails_closed_and_says_where() {
        let mut server = RedisServer::start();
        let url = server.url();
        let store = RedisRedemptions::connect(&url).await.unwrap();
        server.kill();
        let started = Instant::now();
        let error = store.redeem(&id(6), unix_now() + 600, 0).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a dead Redis must fail the redemption, not hang it"
        );
        let StoreError::Unavailable(why) = &error else {
            panic!("{error:?}");
        };
        assert!(why.contains(&url), "{why}");

        // The sealer refuses the token then, as the server's failure.
        let sealer = StateSealer::new(
            KeyRing::from_keys(&[[0x44; 32]]).unwrap(),
            DEFAULT_TTL,
            StateLimits::default(),
        )
        .with_redemption_store(Arc::new(store));
        let args = json!({"a": 1});
        let binding = Binding::new("alice", "tools/call", "deploy", &args);
        let token = sealer.seal(&binding, 1, None).unwrap();
        let refused = sealer.open(&token, &binding).unwrap_err();
        assert!(matches!(refused, StateError::Unrecorded(_)), "{refused:?}");
        assert_eq!(refused.client_message(), STATE_UNRECORDED_MESSAGE);
        assert!(refused.to_string().contains(&url), "{refused}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stuck_redis_fails_the_redemption_within_the_timeout() {
        let server = RedisServer::start();
        let store = RedisRedemptions::connect(&server.url()).await.unwrap();
        let _: () = redis::cmd("CLIENT")
            .arg(&["PAUSE", "10000", "WRITE"][..])
            .query_async(&mut inspect(&server).await)
            .await
            .unwrap();
        let started = Instant::now();
        let error = store.redeem(&id(7), unix_now() + 600, 0).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(9),
            "the wait must end before Redis resumes"
        );
        assert!(error.to_string().contains("timed out"), "{error}");
    }

    #[tokio::test]
    async fn without_a_multi_threaded_runtime_redeem_fails_closed_instead_of_panicking() {
        let server = RedisServer::start();
        let store = RedisRedemptions::connect(&server.url()).await.unwrap();
        let error = store.redeem(&id(8), unix_now() + 600, 0).unwrap_err();
        assert!(error.to_string().contains("multi-threaded"), "{error}");
        let outside = std::thread::spawn(move || store.redeem(&id(8), unix_now() + 600, 0));
        assert!(outside.join().unwrap().is_err());
    }

    #[tokio::test]
    async fn unreachable_or_foreign_urls_fail_at_connect_without_the_password() {
        let server = RedisServer::start();
        let unreachable = server.url().replace("redis://", "redis://user:secret@");
        drop(server);
        let error = RedisRedemptions::connect(&unreachable)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("127.0.0.1") && error.contains("cannot connect"),
            "{error}"
        );
        assert!(!error.contains("secret"), "{error}");
        let foreign = RedisRedemptions::connect("valkeys://user:secret@cache.internal:6380/0")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            foreign.contains("rediss://") && !foreign.contains("secret"),
            "{foreign}"
        );
    }
}
