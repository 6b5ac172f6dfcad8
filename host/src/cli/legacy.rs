//! Options of 2025-era sessions (clients that open with `initialize`) and
//! of the bridge that serves them.

use std::time::Duration;

use super::values;
use crate::legacy::BridgeSettings;

/// Legacy-session options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Older clients (2025 sessions)")]
pub struct LegacyOptions {
    /// Most times a legacy client's request may run its component (each run that asks for input
    /// sends the client its requests, then runs the component again).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_bridged_rounds: u32,
    /// How long a legacy client has to answer an elicitation, sampling or roots request; then its
    /// request fails.
    #[arg(long, value_name = "DURATION", default_value = "5m",
          value_parser = values::duration(Duration::from_millis(1)))]
    pub client_answer_timeout: Duration,
    /// How long an HTTP session may stay idle (no request running, no stream open) before it
    /// ends.
    #[arg(long, value_name = "DURATION", default_value = "30m",
          value_parser = values::duration(Duration::from_secs(1)))]
    pub session_idle_timeout: Duration,
    /// Most HTTP sessions open at once; when full, the session idle the longest ends to make room,
    /// and if every session is in use, initialize is refused (HTTP 503).
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,
}

impl LegacyOptions {
    /// The bridge limits these options set.
    pub fn bridge(&self) -> BridgeSettings {
        BridgeSettings {
            max_rounds: self.max_bridged_rounds,
            answer_timeout: self.client_answer_timeout,
        }
    }
}
