//! Quota options: the rate limit on each principal's requests, and the
//! most 2025-era sessions one principal may hold.

use std::num::NonZeroU32;

use crate::quotas::{Rate, RateLimit};

/// Quota options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Quotas (per caller)")]
pub struct QuotaOptions {
    /// How many requests each caller (principal) may send: `50/s`, `600/min`, `5/10s`. Every
    /// JSON-RPC request counts, each round of a multi-round call included; notifications, a
    /// session's ping and the health probes do not. Beyond it, requests get a JSON-RPC error
    /// (-31429) and, over HTTP, 429 with Retry-After. Counted by each process on its own. Off by
    /// default.
    #[arg(long, value_name = "RATE")]
    pub rate_limit: Option<Rate>,
    /// How many requests a caller may send at once after a quiet time, within --rate-limit
    /// [default: one period's worth, e.g. 50 for 50/s].
    #[arg(long, value_name = "N", requires = "rate_limit",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_burst: Option<u32>,
    /// Most HTTP sessions of 2025-era clients one caller may have open; its next initialize is
    /// refused (HTTP 429) until it ends one (DELETE) or one expires. 0: no limit but
    /// --max-sessions.
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..))]
    pub max_sessions_per_principal: u32,
}

impl QuotaOptions {
    /// The rate limit on each principal's requests, if set.
    pub fn rate_limit(&self) -> Option<RateLimit> {
        let burst = self.rate_limit_burst.and_then(NonZeroU32::new);
        self.rate_limit.map(|rate| RateLimit::new(rate, burst))
    }

    /// The most sessions one principal may hold, if limited.
    pub fn max_sessions_per_principal(&self) -> Option<usize> {
        (self.max_sessions_per_principal > 0).then_some(self.max_sessions_per_principal as usize)
    }
}
