//! Health probes and the drain that precedes a shutdown.
//!
//! - `GET /healthz`: the process is alive and its event loop answers; always
//!   200 `{"status":"ok"}`.
//! - `GET /readyz`: 200 `{"status":"ok"}` when the server should get new
//!   requests: the first load of the tools directory is done and the
//!   server is not draining or shutting down. Otherwise 503
//!   `{"status":"not ready","reasons":[…]}`. (The server listens before its
//!   components are compiled and serves what has loaded so far, so
//!   `loading components` is a reason until the first load is done.)
//!
//! A shared dependency that is down does not make the server unready: every
//! host of a fleet shares it, so all of them would leave the load balancer
//! at once although the calls that do not need it (every plain tool call)
//! still work. The task store is asked at each `/readyz` (within the
//! readiness timeout); when it does not answer, the answer stays 200 and
//! says `"degraded":["task store unreachable"]`, the gauge
//! `airlock_dependency_up{dependency="task_store"}` turns 0, and one `warn`
//! line says so (one `info` line when it is back); task calls meanwhile get
//! the store's error.
//!
//! Both are outside the Host and Origin allow-list and authentication: an
//! orchestrator probes the pod's address with no token. They reveal nothing
//! beyond `ok` and the reasons above.
//!
//! [`Health::drain`] turns readiness off (the first step of a graceful
//! shutdown, so that load balancers stop sending new requests); from then on
//! every response says `Connection: close` (see [`Health::draining`]), so
//! clients do not keep connections to a server about to close them.
//!
//! [`health_routes`] is a router of its own, for any listener to mount.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde_json::json;
use tokio::sync::watch;

use crate::protocol::Server;

/// What the health routes look at: the server, and whether it drains.
pub struct Health {
    server: Arc<Server>,
    /// How long `/readyz` waits for the task store's answer.
    readiness_timeout: Duration,
    draining: watch::Sender<bool>,
    /// Whether the task store answered when last asked (to log changes).
    task_store_up: AtomicBool,
    /// Whether the first load of the tools directory is done.
    loaded: watch::Receiver<bool>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("readiness_timeout", &self.readiness_timeout)
            .field("draining", &self.is_draining())
            .finish_non_exhaustive()
    }
}

impl Health {
    /// The health of `server`, whose task store `/readyz` waits for at most
    /// `readiness_timeout` before reporting it degraded, and which is not
    /// ready before `loaded` turns true (the first load of its tools
    /// directory is done).
    pub fn new(
        server: Arc<Server>,
        readiness_timeout: Duration,
        loaded: watch::Receiver<bool>,
    ) -> Self {
        Self {
            server,
            readiness_timeout,
            draining: watch::Sender::new(false),
            task_store_up: AtomicBool::new(true),
            loaded,
        }
    }

    /// Turns readiness off for good: the server is about to shut down.
    pub fn drain(&self) {
        self.draining.send_replace(true);
    }

    /// Whether [`Health::drain`] was called.
    pub fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Watches [`Health::is_draining`]: the connections close after each
    /// response once it turns true.
    pub fn draining(&self) -> watch::Receiver<bool> {
        self.draining.subscribe()
    }

    /// Why the server should not get new requests now; empty when ready.
    fn not_ready(&self) -> Vec<&'static str> {
        let mut reasons = Vec::new();
        if !*self.loaded.borrow() {
            reasons.push("loading components");
        }
        if self.is_draining() || *self.server.shutting_down().borrow() {
            reasons.push("shutting down");
        }
        reasons
    }

    /// The shared dependencies that do not answer now: the server stays
    /// ready without them (see the module's documentation), and says so in
    /// the metrics and the log.
    async fn degraded(&self) -> Vec<&'static str> {
        let Some(tasks) = self.server.tasks() else {
            return Vec::new();
        };
        let store = tasks.store();
        let failure = match tokio::time::timeout(self.readiness_timeout, store.check()).await {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error.to_string()),
            Err(_) => Some(format!(
                "no answer within {} ms (--readiness-timeout)",
                self.readiness_timeout.as_millis()
            )),
        };
        crate::metrics::dependency_up("task_store", failure.is_none());
        let was_up = self
            .task_store_up
            .swap(failure.is_none(), Ordering::Relaxed);
        match &failure {
            Some(error) if was_up => tracing::warn!(
                store = %store.describe(),
                %error,
                "degraded: the task store does not answer; plain calls are still served, task calls fail until it is back"
            ),
            None if !was_up => {
                tracing::info!(store = %store.describe(), "the task store answers again");
            }
            _ => {}
        }
        failure.map_or_else(Vec::new, |_| vec!["task store unreachable"])
    }
}

/// `GET /healthz` and `GET /readyz` for `health`, outside any admission.
pub fn health_routes(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn healthz() -> Response {
    status_response(StatusCode::OK, json!({"status": "ok"}))
}

async fn readyz(State(health): State<Arc<Health>>) -> Response {
    let reasons = health.not_ready();
    let degraded = health.degraded().await;
    if reasons.is_empty() && degraded.is_empty() {
        status_response(StatusCode::OK, json!({"status": "ok"}))
    } else if reasons.is_empty() {
        status_response(
            StatusCode::OK,
            json!({"status": "ok", "degraded": degraded}),
        )
    } else {
        status_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "not ready", "reasons": reasons}),
        )
    }
}

fn status_response(status: StatusCode, body: serde_json::Value) -> Response {
    super::json_response(status, body.to_string().into_bytes())
}
