//! Single-use `requestState`: remembering which token ids have been redeemed.
//!
//! Every token carries a random 128-bit id ([`TokenId`]). In single-use mode
//! [`StateSealer::open`](super::StateSealer::open) asks a
//! [`RedemptionStore`] to record the id once the token has authenticated and
//! matched its binding; the first redemption succeeds, any later one is a
//! replay ([`StateError::Replayed`](super::StateError::Replayed)). Because
//! the store is consulted last, a forged, altered, expired or misapplied
//! token never consumes an id: only the genuine request can spend it.
//!
//! # The contract of a store
//!
//! [`RedemptionStore::redeem`] must be an atomic test-and-set: of any number
//! of concurrent calls with one id (on one process or across a fleet), at
//! most one returns [`Redemption::First`]. The id must be remembered at
//! least until `expires_at` (unix seconds); after that the token can no
//! longer be opened anyway (its expiry is sealed inside it), so the store may
//! forget it. When the store cannot answer for sure (full, unreachable,
//! timed out) it returns a [`StoreError`]: the sealer then refuses the token
//! (fail closed) and the client is told to retry later, since the id was
//! not recorded.
//!
//! The call is synchronous and happens on the request path, once per
//! retried round (never on a first round). An implementation that does
//! network I/O runs on a Tokio worker thread of a multi-threaded runtime:
//! wrap the blocking round-trip in `tokio::task::block_in_place` and give it
//! a tight timeout, as [`RedisRedemptions`] does.
//!
//! # A fleet: sharing the record
//!
//! [`InMemoryRedemptions`], the default, remembers ids in this process only.
//! Behind a load balancer a replay sent to another process would be accepted
//! there once more, so a fleet that needs single use must share the record:
//! [`RedisRedemptions`] (`--single-use-store redis://...`) keeps it in Redis,
//! one `SET NX EXAT` per redemption (see [`redis`]). Another
//! shared store plugs in the same way, through
//! [`StateSealer::with_redemption_store`](super::StateSealer::with_redemption_store).
//!
//! Token ids come from the sealer's random generator and are only read from
//! tokens that authenticated, so a client cannot choose them: they are safe
//! as keys without further hashing.
//!
//! # The in-memory store
//!
//! [`InMemoryRedemptions`] keeps `id → expires_at` in 64 shards, each a
//! mutex around a hash map, picked by a byte of the (random) id, so
//! concurrent redemptions rarely contend. Memory is bounded twice over:
//!
//! * Entries are dropped once their token has expired. A shard tracks its
//!   earliest expiry and sweeps itself (lazily, on the next redemption that
//!   touches it) once that moment has passed, so sweeping costs nothing
//!   while nothing has expired and at most one pass per shard per second.
//! * The number of live entries is capped ([`InMemoryRedemptions::new`];
//!   `--single-use-capacity`, 1,000,000 by default: 25 bytes of hash table
//!   per slot, under 60 MB when full). At the cap the store first sweeps
//!   every shard; if all entries are still live it refuses the redemption
//!   with [`StoreError::Full`] rather than forget a live id. Forgetting (an LRU, say) would silently
//!   let the forgotten token be replayed, which is the one thing this mode
//!   exists to prevent; refusing is loud (a warning in the log, an error to
//!   the client that says to retry later), keeps the guarantee, and heals
//!   by itself as tokens expire, within one TTL. Size the cap above the
//!   peak rate of retried rounds times the TTL.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::token::TOKEN_ID_LEN;

pub mod redis;

pub use self::redis::{REDEEM_TIMEOUT, RedisRedemptions};

/// Default cap on live entries of [`InMemoryRedemptions`].
pub const DEFAULT_REDEMPTION_CAPACITY: usize = 1_000_000;

/// The random 128-bit id every token carries. Shown in hex; safe to log
/// (it is not a secret: opening a token needs the whole token and the key).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenId([u8; TOKEN_ID_LEN]);

impl TokenId {
    /// Wraps 16 id bytes.
    pub fn from_bytes(bytes: [u8; TOKEN_ID_LEN]) -> TokenId {
        TokenId(bytes)
    }

    /// The 16 id bytes.
    pub fn as_bytes(&self) -> &[u8; TOKEN_ID_LEN] {
        &self.0
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenId({self})")
    }
}

/// What a store knew about an id when asked to redeem it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redemption {
    /// Not seen before: now recorded. The token may be used.
    First,
    /// Already redeemed: a replay. The token must be refused.
    Replay,
}

/// Why a store could not say whether an id was redeemed. The sealer fails
/// closed: the token is refused, and was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store holds its maximum number of live ids.
    #[error(
        "the single-use record is full ({capacity} live token ids); raise --single-use-capacity or lower --state-ttl"
    )]
    Full {
        /// The cap on live ids.
        capacity: usize,
    },
    /// A shared store could not be reached or did not answer in time.
    #[error("the single-use record is unavailable: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// [`StoreError::Unavailable`] from any error, for `map_err`.
    pub fn unavailable(error: impl fmt::Display) -> StoreError {
        StoreError::Unavailable(error.to_string())
    }
}

/// A record of redeemed token ids, shared by every process that must refuse
/// each other's replays. See the [module documentation](self) for the
/// contract and for plugging in a shared store.
pub trait RedemptionStore: Send + Sync {
    /// Atomically records `token_id` as redeemed, to be remembered until
    /// `expires_at` (unix seconds, the token's own expiry), and says whether
    /// it was new. `now` is the time of the check (unix seconds), for
    /// stores that sweep by their own clock.
    fn redeem(
        &self,
        token_id: &TokenId,
        expires_at: u64,
        now: u64,
    ) -> Result<Redemption, StoreError>;
}

/// The default store: redeemed ids of this process, in memory, forgotten
/// when their token expires, at most a fixed number at once. See the
/// [module documentation](self).
pub struct InMemoryRedemptions {
    shards: Box<[Mutex<Shard>]>,
    live: AtomicUsize,
    capacity: usize,
}

/// Number of shards (a power of two).
const SHARDS: usize = 64;

/// Token ids are uniformly random and never chosen by a client (they are
/// read only from authenticated tokens), so their first 8 bytes are already
/// a good hash; no need for SipHash.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // `[u8; 16]` hashes as its bytes (arrays write no length prefix).
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }
}

type IdMap = HashMap<[u8; TOKEN_ID_LEN], u64, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct Shard {
    /// id → expires_at.
    ids: IdMap,
    /// The earliest `expires_at` in `ids` (`u64::MAX` when empty): nothing
    /// needs sweeping before then.
    earliest: u64,
}

impl Shard {
    /// Drops the ids whose token has expired, if any may have; returns how
    /// many were dropped.
    fn sweep(&mut self, now: u64) -> usize {
        if self.ids.is_empty() || now < self.earliest {
            return 0;
        }
        let before = self.ids.len();
        let mut earliest = u64::MAX;
        self.ids.retain(|_, &mut expires_at| {
            let live = expires_at > now;
            if live {
                earliest = earliest.min(expires_at);
            }
            live
        });
        self.earliest = earliest;
        // Give memory back after a burst.
        if self.ids.capacity() > 1024 && self.ids.capacity() > 4 * self.ids.len() {
            self.ids.shrink_to(2 * self.ids.len());
        }
        before - self.ids.len()
    }
}

impl InMemoryRedemptions {
    /// A store that holds at most `capacity` live ids (at least one).
    pub fn new(capacity: usize) -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    ids: IdMap::default(),
                    earliest: u64::MAX,
                })
            })
            .collect();
        InMemoryRedemptions {
            shards,
            live: AtomicUsize::new(0),
            capacity: capacity.max(1),
        }
    }

    /// The cap on live ids.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many ids are held (live ones, plus expired ones not swept yet).
    pub fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Whether no id is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every id whose token has expired by `now`, in every shard.
    pub fn sweep(&self, now: u64) {
        for shard in self.shards.iter() {
            let dropped = lock(shard).sweep(now);
            self.live.fetch_sub(dropped, Ordering::Relaxed);
        }
    }

    fn shard(&self, id: &TokenId) -> &Mutex<Shard> {
        // Byte 15: independent of the bytes the hasher uses first.
        &self.shards[usize::from(id.0[TOKEN_ID_LEN - 1]) % SHARDS]
    }

    /// Takes one slot of the capacity, if one is free.
    fn reserve(&self) -> bool {
        self.live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.capacity).then_some(n + 1)
            })
            .is_ok()
    }
}

impl Default for InMemoryRedemptions {
    /// [`DEFAULT_REDEMPTION_CAPACITY`].
    fn default() -> Self {
        InMemoryRedemptions::new(DEFAULT_REDEMPTION_CAPACITY)
    }
}

impl fmt::Debug for InMemoryRedemptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryRedemptions")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl RedemptionStore for InMemoryRedemptions {
    fn redeem(
        &self,
        token_id: &TokenId,
        expires_at: u64,
        now: u64,
    ) -> Result<Redemption, StoreError> {
        for attempt in 0..2 {
            {
                let mut shard = lock(self.shard(token_id));
                let dropped = shard.sweep(now);
                self.live.fetch_sub(dropped, Ordering::Relaxed);
                if shard.ids.contains_key(&token_id.0) {
                    return Ok(Redemption::Replay);
                }
                if self.reserve() {
                    shard.ids.insert(token_id.0, expires_at);
                    shard.earliest = shard.earliest.min(expires_at);
                    return Ok(Redemption::First);
                }
            }
            // Full: sweep every shard (without holding this one, so two
            // full-path callers cannot deadlock), then try once more. The
            // id may have been redeemed meanwhile; the retry sees it.
            if attempt == 0 {
                self.sweep(now);
            }
        }
        Err(StoreError::Full {
            capacity: self.capacity,
        })
    }
}

/// Locks a shard. A panic while holding the lock cannot leave the map
/// half-updated (every update is one call), so a poisoned lock is used as is.
fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// SplitMix64: a bijection, so distinct inputs give distinct outputs.
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A distinct id for each `n`, random-looking like real ids.
    fn id(n: u64) -> TokenId {
        let mut bytes = [0u8; TOKEN_ID_LEN];
        bytes[..8].copy_from_slice(&mix(n).to_le_bytes());
        bytes[8..].copy_from_slice(&mix(!n).to_le_bytes());
        TokenId(bytes)
    }

    #[test]
    fn first_redemption_wins_and_replays_are_refused() {
        let store = InMemoryRedemptions::new(10);
        assert_eq!(store.redeem(&id(1), 200, 100), Ok(Redemption::First));
        assert_eq!(store.redeem(&id(1), 200, 100), Ok(Redemption::Replay));
        assert_eq!(store.redeem(&id(1), 200, 199), Ok(Redemption::Replay));
        assert_eq!(store.redeem(&id(2), 200, 100), Ok(Redemption::First));
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn expired_ids_are_forgotten() {
        let store = InMemoryRedemptions::new(10);
        assert_eq!(store.redeem(&id(1), 200, 100), Ok(Redemption::First));
        assert_eq!(store.redeem(&id(2), 300, 100), Ok(Redemption::First));
        store.sweep(199);
        assert_eq!(store.len(), 2);
        store.sweep(200);
        assert_eq!(store.len(), 1);
        // The token of id 1 has expired: the sealer would refuse it before
        // asking, and the store no longer spends memory on it.
        assert_eq!(store.redeem(&id(1), 200, 250), Ok(Redemption::First));
        assert_eq!(store.redeem(&id(2), 300, 250), Ok(Redemption::Replay));
        store.sweep(u64::MAX);
        assert!(store.is_empty());
    }

    #[test]
    fn a_full_store_refuses_rather_than_forgets() {
        let store = InMemoryRedemptions::new(3);
        for n in 0..3 {
            assert_eq!(store.redeem(&id(n), 1000, 100), Ok(Redemption::First));
        }
        assert_eq!(
            store.redeem(&id(3), 1000, 100),
            Err(StoreError::Full { capacity: 3 })
        );
        // Refused, not recorded; the live ids are all still known.
        for n in 0..3 {
            assert_eq!(store.redeem(&id(n), 1000, 100), Ok(Redemption::Replay));
        }
        assert_eq!(store.len(), 3);
        // Once they expire, room is made on demand.
        assert_eq!(store.redeem(&id(3), 2000, 1000), Ok(Redemption::First));
        assert_eq!(store.len(), 1);
        assert!(
            StoreError::Full { capacity: 3 }
                .to_string()
                .contains("full")
        );
    }

    #[test]
    fn capacity_is_at_least_one_and_default_is_a_million() {
        assert_eq!(InMemoryRedemptions::new(0).capacity(), 1);
        assert_eq!(InMemoryRedemptions::default().capacity(), 1_000_000);
        let shown = format!("{:?}", InMemoryRedemptions::new(5));
        assert!(shown.contains("capacity: 5"), "{shown}");
    }

    #[test]
    fn many_ids_across_shards_and_sweeps() {
        let store = InMemoryRedemptions::new(100_000);
        for n in 0..50_000u64 {
            // Half expire at 150, half at 250.
            let expires = if n.is_multiple_of(2) { 150 } else { 250 };
            assert_eq!(store.redeem(&id(n), expires, 100), Ok(Redemption::First));
        }
        assert_eq!(store.len(), 50_000);
        // A redemption after 150 sweeps only its own shard; a full sweep
        // drops the rest of the expired half.
        assert_eq!(store.redeem(&id(1), 250, 200), Ok(Redemption::Replay));
        store.sweep(200);
        assert_eq!(store.len(), 25_000);
        for n in (1..50_000u64).step_by(2) {
            assert_eq!(store.redeem(&id(n), 250, 200), Ok(Redemption::Replay));
        }
        store.sweep(250);
        assert!(store.is_empty());
    }

    #[test]
    fn concurrent_redemptions_of_one_id_succeed_once() {
        let store = Arc::new(InMemoryRedemptions::new(1000));
        for round in 0..50u64 {
            let firsts: usize = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        let store = Arc::clone(&store);
                        s.spawn(move || store.redeem(&id(round), 1000, 1))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .filter(|r| *r == Ok(Redemption::First))
                    .count()
            });
            assert_eq!(firsts, 1, "round {round}");
        }
    }

    #[test]
    fn concurrent_fill_never_exceeds_the_capacity() {
        let store = Arc::new(InMemoryRedemptions::new(1000));
        let firsts: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4u64)
                .map(|t| {
                    let store = Arc::clone(&store);
                    s.spawn(move || {
                        (0..600u64)
                            .filter(|n| {
                                store.redeem(&id(t * 10_000 + n), 1000, 1) == Ok(Redemption::First)
                            })
                            .count()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(firsts, 1000);
        assert_eq!(store.len(), 1000);
    }

    #[test]
    fn token_ids_show_in_hex() {
        let id = TokenId::from_bytes([0xab; 16]);
        assert_eq!(id.to_string(), "ab".repeat(16));
        assert_eq!(format!("{id:?}"), format!("TokenId({})", "ab".repeat(16)));
        assert_eq!(id.as_bytes(), &[0xab; 16]);
    }
}
