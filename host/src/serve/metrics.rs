//! The metrics listener (`--metrics-listen`): `GET /metrics` in the
//! OpenMetrics text format, on an address of its own, never on the MCP
//! listener. It has no authentication: bind it to a private address.
//!
//! Its connections are accepted as the MCP listener's are
//! ([`connections`]): the same header, body and idle timeouts, under a cap
//! of its own (`--metrics-max-connections`), so that connections to it can
//! never use up the descriptors MCP clients need. At that cap, the
//! connection waiting longest without a request is closed for each new one,
//! so connections held open idle cannot keep a scrape out.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::http::header;
use axum::routing::get;
use tokio::sync::watch;

use crate::metrics::{Metrics, SampledGauge, install};
use crate::protocol::Server;
use crate::runtime::Runtime;
use crate::transport::http::{ConnectionLimits, connections};

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The running metrics listener; stops when dropped.
#[derive(Debug)]
pub struct MetricsListener(tokio::task::JoinHandle<()>);

impl Drop for MetricsListener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The gauges read at each scrape: the instances running, the most that
/// may run and the calls waiting in `runtime`, and the components `server`
/// serves.
fn sampled_gauges(server: &Arc<Server>, runtime: &Arc<Runtime>) -> Vec<SampledGauge> {
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let (busy, queued, server) = (runtime.clone(), runtime.clone(), server.clone());
    let most = count(runtime.limits().max_concurrent_calls);
    vec![
        SampledGauge {
            name: "airlock_instances_busy",
            help: "Component instances running now (each holds a --max-concurrent-calls slot)",
            read: Box::new(move || count(busy.calls_running())),
        },
        SampledGauge {
            name: "airlock_instances_max",
            help: "Component instances that may run at once (--max-concurrent-calls)",
            read: Box::new(move || most),
        },
        SampledGauge {
            name: "airlock_calls_queued",
            help: "Calls waiting for a free slot now",
            read: Box::new(move || count(queued.calls_queued())),
        },
        SampledGauge {
            name: "airlock_components_loaded",
            help: "Components served now",
            read: Box::new(move || count(server.registry().component_count())),
        },
    ]
}

/// Where the metrics listener serves, and how many connections it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsListen {
    /// The address (port 0 picks a free port).
    pub address: SocketAddr,
    /// Most connections open at once on it.
    pub max_connections: u32,
}

/// What the metrics listener serves, and with which connection limits.
pub struct Serving<'a> {
    /// The server whose registry the gauges read.
    pub server: &'a Arc<Server>,
    /// The runtime whose slots the gauges read.
    pub runtime: &'a Arc<Runtime>,
    /// Routes served beside `/metrics` (the health probes).
    pub routes: Router,
    /// The MCP listener's limits: their timeouts apply here too (the cap is
    /// [`MetricsListen::max_connections`]).
    pub limits: ConnectionLimits,
    /// Whether the server drains: responses then close their connections.
    pub draining: watch::Receiver<bool>,
}

/// With `listen`, keeps the process's metrics from now on and serves them
/// there, with `serving.routes` beside `/metrics`; logs `metrics at
/// http://…/metrics` with the bound address. Without it, does nothing: no
/// metrics are kept.
pub async fn start(
    listen: Option<&MetricsListen>,
    serving: Serving<'_>,
) -> anyhow::Result<Option<MetricsListener>> {
    let Some(listen) = listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(listen.address)
        .await
        .with_context(|| format!("cannot listen on {} for metrics", listen.address))?;
    let bound = listener.local_addr()?;
    let metrics = install(Metrics::new(sampled_gauges(
        serving.server,
        serving.runtime,
    )));
    let app = serving.routes.merge(router(metrics));
    let limits = ConnectionLimits {
        max_connections: listen.max_connections,
        ..serving.limits
    };
    tracing::info!("metrics at http://{bound}/metrics");
    Ok(Some(MetricsListener(tokio::spawn(async move {
        // It serves until the listener is dropped, which aborts it.
        let served = connections::serve_with(
            listener,
            app,
            limits,
            "--metrics-max-connections",
            serving.draining,
            std::future::pending(),
        );
        if let Err(error) = served.await {
            tracing::error!(%error, "the metrics listener failed");
        }
    }))))
}

/// `GET /metrics` for `metrics`.
fn router(metrics: &'static Metrics) -> Router {
    Router::new().route(
        "/metrics",
        get(move || async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], metrics.render()) }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt as _;

    #[tokio::test]
    async fn metrics_are_served_as_openmetrics_text() {
        let metrics: &'static Metrics = Box::leak(Box::new(Metrics::new(Vec::new())));
        let response = router(metrics)
            .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            text.contains("airlock_calls_refused_busy_total 0\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
