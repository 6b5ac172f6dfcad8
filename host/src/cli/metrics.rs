//! The metrics option of `airlock serve`.

use std::net::SocketAddr;

/// Metrics options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Metrics")]
pub struct MetricsOptions {
    /// Address to serve Prometheus metrics on (`GET /metrics`, OpenMetrics text), apart from the
    /// MCP listener and without authentication: bind it to a private address. Port 0 picks a free
    /// port. Off by default: without it no metrics are kept.
    #[arg(long, value_name = "ADDRESS")]
    pub metrics_listen: Option<SocketAddr>,
}
