//! The metrics options of `airlock serve`.

use std::net::SocketAddr;

use crate::serve::metrics::MetricsListen;

/// Metrics options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Metrics")]
pub struct MetricsOptions {
    /// Address to serve Prometheus metrics on (`GET /metrics`, OpenMetrics text), apart from the
    /// MCP listener and without authentication: bind it to a private address. Port 0 picks a free
    /// port. Off by default: without it no metrics are kept. Its connections have the MCP
    /// listener's header, body and idle timeouts (--http-*-timeout).
    #[arg(long, value_name = "ADDRESS")]
    pub metrics_listen: Option<SocketAddr>,
    /// Most connections open at once on the metrics listener, a cap of its own beside
    /// --max-connections, so scrapers and probes can never take the descriptors MCP clients need.
    /// At the cap, a new connection closes the one that has waited longest without a request in
    /// progress, so idle connections cannot keep a scrape out.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "metrics_listen",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub metrics_max_connections: u32,
}

impl MetricsOptions {
    /// Where metrics are served, if anywhere.
    pub fn listen(&self) -> Option<MetricsListen> {
        self.metrics_listen.map(|address| MetricsListen {
            address,
            max_connections: self.metrics_max_connections,
        })
    }
}
