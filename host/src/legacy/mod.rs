//! Serving 2025-era clients (MCP 2025-11-25, 2025-06-18, 2025-03-26) beside
//! 2026-07-28 ones, on the same endpoint or stdio process.
//!
//! An adapter over the 2026-07-28 [`Server`]: it holds the server, calls
//! its typed entry point ([`Server::answer`]) and reads nothing else of it
//! but its public face, and nothing in the server knows of it, so serving
//! older clients goes away with this folder (and the session branches of
//! the [`endpoint`](crate::endpoint), which decides a message's era).
//!
//! An `initialize` request opens a [`Session`]: the scope of what the
//! client declared (capabilities) and set (log level, resource
//! subscriptions). The session's requests are served by the 2026-07-28
//! pipeline through the [`bridge`], which turns a component's
//! `input_required` into real server-to-client requests. Methods only older
//! revisions have (`ping`, `logging/setLevel`, `resources/subscribe`,
//! `resources/unsubscribe`) are answered here, and only in a session.
//! Changes the client should hear outside any request (list changes,
//! updates of subscribed resources) go to the session's standalone stream:
//! the GET stream on HTTP, stdout on stdio.

mod bridge;
mod session;
mod sessions;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

pub use session::{AskError, Session, StreamGuard};
pub use sessions::{Full, Sessions};

use crate::access::Caller;
use crate::protocol::envelope::{self, LogLevel};
use crate::protocol::jsonrpc::{self, Request, RpcError, required_str};
use crate::protocol::subscriptions::{
    Audience as _, ListViews, MAX_RESOURCE_SUBSCRIPTIONS, ServerChange,
};
use crate::protocol::{Notifier, Reply, Server, check_uri_length};
use crate::telemetry::{self, Outcome, Via};

/// The revisions a legacy session may negotiate, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Limits of the bridge.
#[derive(Debug, Clone)]
pub struct BridgeSettings {
    /// Most times one request runs its component before it is refused.
    pub max_rounds: u32,
    /// How long the client has to answer one request of the server.
    pub answer_timeout: Duration,
}

impl Default for BridgeSettings {
    fn default() -> Self {
        Self {
            max_rounds: 10,
            answer_timeout: Duration::from_secs(300),
        }
    }
}

/// Whether a request carries the 2026-07-28 envelope (its `_meta` names a
/// protocol version), which makes it a modern request wherever it arrives.
pub fn carries_modern_envelope(params: &Map<String, Value>) -> bool {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.contains_key(envelope::META_PROTOCOL_VERSION))
}

/// Whether a request opens a legacy session: an `initialize` without the
/// 2026-07-28 envelope.
pub fn is_legacy_initialize(request: &Request) -> bool {
    request.method == "initialize" && !carries_modern_envelope(&request.params)
}

/// The adapter that serves 2025-era sessions over a [`Server`]: it holds
/// the server and the bridge's limits, and uses nothing of the server but
/// its public face (the typed entry point, its capabilities and info, and
/// its change feed).
pub struct Legacy {
    server: Arc<Server>,
    bridge: BridgeSettings,
}

impl std::fmt::Debug for Legacy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Legacy")
            .field("bridge", &self.bridge)
            .finish_non_exhaustive()
    }
}

impl Legacy {
    /// The adapter for `server`, bridging with `bridge`'s limits.
    pub fn new(server: Arc<Server>, bridge: BridgeSettings) -> Legacy {
        Legacy { server, bridge }
    }

    /// Answers `initialize`: the session it opens (for `principal`) and the
    /// reply, or the error reply when the request is malformed.
    pub fn initialize(
        &self,
        request: &Request,
        principal: &str,
    ) -> Result<(Session, Reply), Reply> {
        let fail = |error: RpcError| Reply {
            body: jsonrpc::encode_error(Some(&request.id), &error),
            http_status: 400,
            retry_after: None,
            challenge: None,
        };
        let requested = required_str(&request.params, "protocolVersion").map_err(fail)?;
        let capabilities = match request.params.get("capabilities") {
            None | Some(Value::Null) => json!({}),
            Some(capabilities @ Value::Object(_)) => capabilities.clone(),
            Some(_) => {
                return Err(fail(RpcError::invalid_params(
                    "Invalid params: capabilities must be an object",
                )));
            }
        };
        // The requested revision if it is one of ours, else our newest.
        let version = LEGACY_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .unwrap_or(&LEGACY_VERSIONS[0]);
        let client = request
            .params
            .get("clientInfo")
            .and_then(|info| info.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        let session = Session::new(principal, version, capabilities);
        tracing::info!(session = %session.id(), version, requested, client, "legacy session opened");
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": self.server.capabilities(),
            "serverInfo": self.server.server_info(),
        });
        if let Some(instructions) = &self.server.settings().instructions {
            result["instructions"] = json!(instructions);
        }
        let reply = Reply {
            body: jsonrpc::encode_result(&request.id, &result),
            http_status: 200,
            retry_after: None,
            challenge: None,
        };
        Ok((session, reply))
    }

    /// Answers one request of a legacy session, arrived `via`;
    /// server-to-client requests and notifications go through `notifier`,
    /// before the reply. With traces, the request has its span.
    pub async fn handle(
        &self,
        session: &Session,
        request: &Request,
        caller: &Caller,
        notifier: Option<&Notifier>,
        via: Via,
    ) -> Reply {
        let incoming = || telemetry::Incoming {
            method: &request.method,
            id: &request.id,
            params: &request.params,
            protocol_version: Some(session.version()),
            // The session id is on the wire (`Mcp-Session-Id`) on HTTP only.
            session: matches!(via, Via::Http(_)).then(|| session.id()),
            via,
            target_served: self.server.serves_named(&request.method, &request.params),
        };
        let handled = || self.handle_untraced(session, request, caller, notifier);
        telemetry::serve(incoming, handled, |reply| {
            Outcome::of_reply(&request.method, &reply.body)
        })
        .await
    }

    /// [`Legacy::handle`], without its span.
    async fn handle_untraced(
        &self,
        session: &Session,
        request: &Request,
        caller: &Caller,
        notifier: Option<&Notifier>,
    ) -> Reply {
        let answer = |outcome: Result<(), RpcError>| Reply {
            body: match outcome {
                Ok(()) => jsonrpc::encode_result(&request.id, &json!({})),
                Err(error) => jsonrpc::encode_error(Some(&request.id), &error),
            },
            http_status: 200,
            retry_after: None,
            challenge: None,
        };
        match request.method.as_str() {
            "ping" => answer(Ok(())),
            "logging/setLevel" => answer(set_level(session, &request.params)),
            "resources/subscribe" | "resources/unsubscribe" => answer(subscribe(
                session,
                &request.params,
                request.method == "resources/subscribe",
            )),
            "initialize" => answer(Err(RpcError::invalid_request(
                "Invalid Request: this session is already initialized",
            ))),
            method @ ("server/discover" | "subscriptions/listen") => {
                answer(Err(RpcError::method_not_found(method).with_data(json!({
                    "reason": format!("{method} is part of MCP {}, not of this session's MCP {}",
                        envelope::PROTOCOL_VERSION, session.version()),
                }))))
            }
            _ => self.bridge(session, request, caller, notifier).await,
        }
    }

    /// Sends a legacy session's client, through `out`, what it should hear
    /// outside any request: of the server's `changes`, the list changes
    /// that changed what its caller sees and the updates of the resources
    /// it subscribed to that its caller may read, both decided when each
    /// change comes, for the caller that opened the stream (see
    /// [`Audience`](crate::protocol::subscriptions::Audience)).
    /// `changes` is taken when the stream opens (before
    /// its client can know it is open), so no change made after that is
    /// missed, however late this first runs. Runs until the session closes,
    /// `out` closes or the server shuts down.
    pub async fn session_stream(&self, session: &Session, changes: Changes<'_>, out: &Notifier) {
        let Changes {
            mut changes,
            mut views,
            caller,
        } = changes;
        let audience = self.server.listener(caller);
        let mut shutdown = self.server.shutting_down();
        loop {
            let changes: Vec<ServerChange> = tokio::select! {
                change = changes.recv() => match change {
                    Ok(change) => vec![change],
                    // Missed some: every list may have changed.
                    Err(broadcast::error::RecvError::Lagged(_)) => ServerChange::ALL_LISTS.to_vec(),
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = shutdown.wait_for(|down| *down) => return,
                () = session.wait_closed() => return,
                () = out.closed() => return,
            };
            for change in changes {
                // Every list change; updates of subscribed resources only.
                if let ServerChange::ResourceUpdated(uri) = &change
                    && !session.is_subscribed(uri)
                {
                    continue;
                }
                if !audience.hears(&mut views, &change) {
                    continue;
                }
                let message = jsonrpc::encode_notification(change.method(), &change.params());
                if out.send(message).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The changes a session stream forwards: the server's, subscribed to
/// when the stream opened, with what its caller saw of each list then.
pub struct Changes<'a> {
    /// The server's changes.
    pub changes: broadcast::Receiver<ServerChange>,
    /// What the caller saw of each list when the stream opened.
    pub views: ListViews,
    /// Who opened the stream.
    pub caller: &'a Caller,
}

/// `resources/subscribe` (`on`) and `resources/unsubscribe`: any URI up to
/// the length limit (a resource may appear later), at most as many per
/// session as one `subscriptions/listen` may name. The answer never
/// depends on what the URI names, so a URI the caller may not see answers
/// as an unknown one does; the session stream filters the updates.
fn subscribe(session: &Session, params: &Map<String, Value>, on: bool) -> Result<(), RpcError> {
    let uri = required_str(params, "uri")?;
    check_uri_length(uri)?;
    if !session.subscribe(uri, on, MAX_RESOURCE_SUBSCRIPTIONS) {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: a session may subscribe to at most {MAX_RESOURCE_SUBSCRIPTIONS} resources"
        )));
    }
    Ok(())
}

fn set_level(session: &Session, params: &Map<String, Value>) -> Result<(), RpcError> {
    let name = required_str(params, "level")?;
    let level = LogLevel::from_name(name).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "Invalid params: unknown log level '{name}' (debug, info, notice, warning, error, critical, alert, emergency)"
        ))
    })?;
    session.set_log_level(level);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, params: Value) -> Request {
        Request {
            id: json!(1),
            method: method.into(),
            params: params.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn only_initialize_without_the_modern_envelope_opens_a_session() {
        assert!(is_legacy_initialize(&request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "_meta": {"progressToken": 1}})
        )));
        assert!(!is_legacy_initialize(&request(
            "initialize",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        )));
        assert!(!is_legacy_initialize(&request("tools/list", json!({}))));
    }

    #[test]
    fn subscriptions_are_bounded() {
        let session = Session::new("p", "2025-11-25", json!({}));
        let params = |uri: &str| json!({ "uri": uri }).as_object().cloned().unwrap();
        for i in 0..MAX_RESOURCE_SUBSCRIPTIONS {
            subscribe(&session, &params(&format!("a://{i}")), true).unwrap();
        }
        assert!(subscribe(&session, &params("a://one-more"), true).is_err());
        subscribe(&session, &params("a://0"), true).unwrap();
        subscribe(&session, &params("a://0"), false).unwrap();
        subscribe(&session, &params("a://one-more"), true).unwrap();
        assert!(session.is_subscribed("a://one-more"));
        assert!(!session.is_subscribed("a://0"));
        let long = format!("a://{}", "x".repeat(crate::registry::validate::MAX_URI_LEN));
        assert!(subscribe(&session, &params(&long), true).is_err());
        assert!(subscribe(&session, &Map::new(), true).is_err());
    }

    #[test]
    fn log_levels_are_checked() {
        let session = Session::new("p", "2025-11-25", json!({}));
        assert!(set_level(&session, json!({"level": "debug"}).as_object().unwrap()).is_ok());
        let error = set_level(&session, json!({"level": "loud"}).as_object().unwrap()).unwrap_err();
        assert_eq!(error.code, jsonrpc::codes::INVALID_PARAMS);
        assert!(set_level(&session, &Map::new()).is_err());
    }
}
