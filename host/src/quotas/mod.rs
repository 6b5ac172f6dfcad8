//! Admission by rate: token buckets per principal (`--rate-limit`), and per
//! principal and tool (a manifest's `[tools.NAME] rate-limit`).
//!
//! Each principal has a bucket of `burst` requests that refills at the
//! rate; a request takes one, and a request that finds its bucket empty is
//! refused with the time until the next one fits ([`Refused`]). A tool with
//! a rate limit has a bucket per principal of its own, taken by each of that
//! tool's calls. The buckets are governor's (GCRA): each is one timestamp.
//!
//! Principals are unbounded (JWT subjects), so the buckets are forgotten
//! once full again: [`Quotas::forget_idle`], run every
//! [`FORGET_IDLE_EVERY`] by [`Quotas::forget_idle_forever`], drops every
//! bucket that is indistinguishable from a new one. What stays is the
//! principals that made a request within the last refill time (at most
//! `burst / rate`) and one sweep.
//!
//! Buckets live in this process: a fleet of N hosts behind a load balancer
//! lets a principal up to N times the rate.

mod rate;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use governor::DefaultKeyedRateLimiter;
use governor::clock::Clock;

pub use self::rate::{Rate, RateLimit, deserialize_rate};

/// How often the buckets of principals that went quiet are forgotten.
pub const FORGET_IDLE_EVERY: Duration = Duration::from_secs(10);

/// The rate limits of a server and their buckets.
#[derive(Default)]
pub struct Quotas {
    /// Every request of a principal, if `--rate-limit` is set.
    per_principal: Option<Buckets>,
    /// The calls of a principal to one tool, by tool name, for the tools
    /// whose manifest sets a rate limit (made at the tool's first call).
    per_tool: Mutex<HashMap<String, Arc<Buckets>>>,
}

/// One limit's buckets, one per principal.
struct Buckets {
    limit: RateLimit,
    by_principal: DefaultKeyedRateLimiter<String>,
}

/// A request refused for its rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The tool whose limit refused it; `None`: the principal's own limit.
    pub tool: Option<String>,
    /// The limit.
    pub limit: RateLimit,
    /// When the next request of this principal fits.
    pub retry_after: Duration,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.retry_after_ms();
        match &self.tool {
            None => write!(
                f,
                "Too many requests: the limit is {} per caller; retry in {millis} ms",
                self.limit
            ),
            Some(tool) => write!(
                f,
                "Too many calls of tool {tool}: its limit is {} per caller; retry in {millis} ms",
                self.limit
            ),
        }
    }
}

impl Refused {
    /// [`Refused::retry_after`] in milliseconds, rounded up: at least 1.
    pub fn retry_after_ms(&self) -> u64 {
        let millis = self.retry_after.as_nanos().div_ceil(1_000_000);
        u64::try_from(millis).unwrap_or(u64::MAX).max(1)
    }
}

impl Buckets {
    fn new(limit: RateLimit) -> Buckets {
        Buckets {
            limit,
            by_principal: DefaultKeyedRateLimiter::keyed(limit.quota()),
        }
    }

    /// Takes one request from `principal`'s bucket, or says how long until
    /// one is there.
    fn take(&self, principal: &str) -> Result<(), Duration> {
        self.by_principal
            .check_key(&principal.to_owned())
            .map_err(|not_until| not_until.wait_time_from(self.by_principal.clock().now()))
    }

    /// Drops the buckets that are full again; true if none is left.
    fn forget_idle(&self) -> bool {
        self.by_principal.retain_recent();
        self.by_principal.shrink_to_fit();
        self.by_principal.is_empty()
    }
}

impl Quotas {
    /// Quotas with this limit on every principal's requests (none: only the
    /// tools' own limits apply).
    pub fn new(per_principal: Option<RateLimit>) -> Quotas {
        Quotas {
            per_principal: per_principal.map(Buckets::new),
            per_tool: Mutex::default(),
        }
    }

    /// Admits one request of `principal`, or refuses it for the
    /// principal's rate limit.
    pub fn admit(&self, principal: &str) -> Result<(), Refused> {
        let Some(buckets) = &self.per_principal else {
            return Ok(());
        };
        buckets.take(principal).map_err(|retry_after| Refused {
            tool: None,
            limit: buckets.limit,
            retry_after,
        })
    }

    /// Admits one call of `principal` to `tool`, whose limit is `limit`, or
    /// refuses it. A tool whose limit changed (its manifest was reloaded)
    /// starts with new buckets.
    pub fn admit_call(&self, principal: &str, tool: &str, limit: RateLimit) -> Result<(), Refused> {
        let buckets = {
            let mut per_tool = self.per_tool.lock().unwrap_or_else(PoisonError::into_inner);
            match per_tool.get(tool) {
                Some(buckets) if buckets.limit == limit => buckets.clone(),
                _ => {
                    let buckets = Arc::new(Buckets::new(limit));
                    per_tool.insert(tool.to_owned(), buckets.clone());
                    buckets
                }
            }
        };
        buckets.take(principal).map_err(|retry_after| Refused {
            tool: Some(tool.to_owned()),
            limit,
            retry_after,
        })
    }

    /// Forgets every bucket that is full again (its principal has been
    /// quiet for the refill time), and the tools left with none.
    pub fn forget_idle(&self) {
        if let Some(buckets) = &self.per_principal {
            buckets.forget_idle();
        }
        self.per_tool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, buckets| !buckets.forget_idle());
    }

    /// Runs [`Quotas::forget_idle`] every [`FORGET_IDLE_EVERY`], until
    /// dropped.
    pub async fn forget_idle_forever(self: Arc<Self>) {
        let mut ticks = tokio::time::interval(FORGET_IDLE_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            self.forget_idle();
        }
    }

    /// How many principals have a bucket now, of every limit together.
    fn remembered(&self) -> usize {
        let per_principal = self
            .per_principal
            .as_ref()
            .map_or(0, |buckets| buckets.by_principal.len());
        let per_tool = self.per_tool.lock().unwrap_or_else(PoisonError::into_inner);
        per_principal
            + per_tool
                .values()
                .map(|buckets| buckets.by_principal.len())
                .sum::<usize>()
    }
}

impl fmt::Debug for Quotas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quotas")
            .field(
                "per_principal",
                &self.per_principal.as_ref().map(|buckets| buckets.limit),
            )
            .field("remembered", &self.remembered())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    fn limit(rate: &str, burst: u32) -> RateLimit {
        RateLimit::new(rate.parse().unwrap(), NonZeroU32::new(burst))
    }

    #[test]
    fn a_principal_gets_its_burst_then_waits_for_the_rate() {
        let quotas = Quotas::new(Some(limit("1/h", 2)));
        assert_eq!(quotas.admit("alice"), Ok(()));
        assert_eq!(quotas.admit("alice"), Ok(()));
        let refused = quotas.admit("alice").unwrap_err();
        assert_eq!(refused.tool, None);
        assert!(
            refused.retry_after > Duration::from_secs(3500)
                && refused.retry_after <= Duration::from_secs(3600),
            "{refused:?}"
        );
        assert!(
            refused
                .to_string()
                .starts_with("Too many requests: the limit is 1/h (burst 2) per caller; retry in "),
            "{refused}"
        );
        assert_eq!(quotas.admit("bob"), Ok(()), "another principal's bucket");
    }

    #[test]
    fn without_a_principal_limit_everything_is_admitted() {
        let quotas = Quotas::new(None);
        for _ in 0..1000 {
            assert_eq!(quotas.admit("alice"), Ok(()));
        }
    }

    #[test]
    fn a_tool_limit_is_per_principal_and_per_tool() {
        let quotas = Quotas::new(None);
        let once = limit("1/h", 1);
        assert_eq!(quotas.admit_call("alice", "a", once), Ok(()));
        let refused = quotas.admit_call("alice", "a", once).unwrap_err();
        assert_eq!(refused.tool.as_deref(), Some("a"));
        assert!(refused.to_string().starts_with(
            "Too many calls of tool a: its limit is 1/h (burst 1) per caller; retry in "
        ));
        assert_eq!(quotas.admit_call("bob", "a", once), Ok(()));
        assert_eq!(quotas.admit_call("alice", "b", once), Ok(()));
        assert_eq!(
            quotas.admit_call("alice", "a", limit("1/h", 2)),
            Ok(()),
            "a changed limit starts afresh"
        );
    }

    #[test]
    fn full_buckets_are_forgotten() {
        let quotas = Quotas::new(Some(limit("1000/s", 1)));
        let tool = limit("1000/s", 1);
        for principal in ["a", "b", "c"] {
            quotas.admit(principal).unwrap();
            quotas.admit_call(principal, "t", tool).unwrap();
        }
        assert_eq!(quotas.remembered(), 6);
        std::thread::sleep(Duration::from_millis(20));
        quotas.forget_idle();
        assert_eq!(quotas.remembered(), 0);
        assert!(quotas.per_tool.lock().unwrap().is_empty());
        let slow = Quotas::new(Some(limit("1/h", 1)));
        slow.admit("a").unwrap();
        slow.forget_idle();
        assert_eq!(slow.remembered(), 1, "an empty bucket is kept");
    }
}
