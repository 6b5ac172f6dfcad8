//! HTTP connection options: timeouts, the cap on open connections, the
//! graceful shutdown and the readiness probe.

use std::time::Duration;

use super::values;
use crate::transport::http::ConnectionLimits;

/// The shortest connection timeout accepted.
const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// HTTP connection options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "HTTP connections")]
pub struct ConnectionOptions {
    /// Time a connection has to send a complete request line and headers; slower connections are
    /// closed.
    #[arg(long, value_name = "DURATION", default_value = "10s",
          value_parser = values::duration(MIN_TIMEOUT))]
    pub http_header_timeout: Duration,
    /// Time a request has to send its whole body once its headers are in; a slower request gets
    /// 408 and its connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "30s",
          value_parser = values::duration(MIN_TIMEOUT))]
    pub http_body_timeout: Duration,
    /// How long a keep-alive connection with no request in progress stays open.
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = values::duration(MIN_TIMEOUT))]
    pub http_idle_timeout: Duration,
    /// Most HTTP connections open at once. At the cap, a new connection closes the one that has
    /// waited longest without a request in progress (awaiting its head, or idle); it waits
    /// (unaccepted) only while every open connection has a request in progress.
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// On SIGTERM or Ctrl-C, how long to keep serving with /readyz answering 503 (and every
    /// response closing its connection) before no longer accepting connections: the time load
    /// balancers take to stop sending requests here (a few seconds in Kubernetes).
    #[arg(long, value_name = "DURATION", default_value = "0s",
          value_parser = values::duration(Duration::ZERO))]
    pub shutdown_drain_delay: Duration,
    /// After the drain delay, how long the requests in flight have to finish; those still running
    /// are then cut, and the server exits.
    #[arg(long, value_name = "DURATION", default_value = "30s",
          value_parser = values::duration(Duration::ZERO))]
    pub shutdown_timeout: Duration,
    /// How long /readyz waits for the task store to answer before reporting it degraded (the
    /// server stays ready: plain calls do not need the store).
    #[arg(long, value_name = "DURATION", default_value = "1s",
          value_parser = values::duration(MIN_TIMEOUT))]
    pub readiness_timeout: Duration,
}

impl ConnectionOptions {
    /// The limits these options set.
    pub fn limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: self.http_header_timeout,
            body_timeout: self.http_body_timeout,
            idle_timeout: self.http_idle_timeout,
            max_connections: self.max_connections,
            drain_delay: self.shutdown_drain_delay,
            shutdown_timeout: self.shutdown_timeout,
            readiness_timeout: self.readiness_timeout,
        }
    }
}
