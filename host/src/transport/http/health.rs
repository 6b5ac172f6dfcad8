//! Health probes and the drain that precedes a shutdown.
//!
//! - `GET /healthz`: the process is alive and its event loop answers; always
//!   200 `{"status":"ok"}`.
//! - `GET /readyz`: 200 `{"status":"ok"}` when the server should get new
//!   requests: the first load of the tools directory is done, the server is
//!   not draining or shutting down, and the task store answers within the
//!   readiness timeout. Otherwise 503
//!   `{"status":"not ready","reasons":[…]}`. (The server listens before its
//!   components are compiled and serves what has loaded so far, so
//!   `loading components` is a reason until the first load is done.)
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
    /// The health of `server`, whose task store must answer `/readyz`
    /// within `readiness_timeout`, and which is not ready before `loaded`
    /// turns true (the first load of its tools directory is done).
    pub fn new(
        server: Arc<Server>,
        readiness_timeout: Duration,
        loaded: watch::Receiver<bool>,
    ) -> Self {
        Self {
            server,
            readiness_timeout,
            draining: watch::Sender::new(false),
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
    async fn not_ready(&self) -> Vec<&'static str> {
        let mut reasons = Vec::new();
        if !*self.loaded.borrow() {
            reasons.push("loading components");
        }
        if self.is_draining() || *self.server.shutting_down().borrow() {
            reasons.push("shutting down");
        }
        if let Some(tasks) = self.server.tasks() {
            let store = tasks.store();
            match tokio::time::timeout(self.readiness_timeout, store.check()).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::warn!(%error, "not ready: the task store does not answer");
                    reasons.push("task store unreachable");
                }
                Err(_) => {
                    tracing::warn!(
                        store = %store.describe(),
                        timeout_ms = self.readiness_timeout.as_millis(),
                        "not ready: the task store did not answer in time (--readiness-timeout)"
                    );
                    reasons.push("task store unreachable");
                }
            }
        }
        reasons
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
    let reasons = health.not_ready().await;
    if reasons.is_empty() {
        status_response(StatusCode::OK, json!({"status": "ok"}))
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
