//! The bridge: a legacy session's request served by the 2026-07-28
//! pipeline, with Airlock playing the client's part of multi-round
//! requests.
//!
//! The request gets the `_meta` its session implies (capabilities from
//! `initialize`, the log level last set) and goes through the same code as
//! a modern request. When the component answers `input_required`, each of
//! its input requests is sent to the client as a real `elicitation/create`,
//! `sampling/createMessage` or `roots/list` request on the request's own
//! stream; the answers and the sealed `requestState` are then sent back
//! through the pipeline as a retry, which runs the component in a fresh
//! instance, exactly as a modern client's retry would. A component cannot
//! tell the two eras apart. Results lose the 2026-07-28 stamping
//! (`resultType`, `ttlMs`, `cacheScope`) and errors take the legacy codes.

use serde_json::{Map, Value, json};

use super::session::{AskError, Session};
use crate::protocol::dispatch::{Notifier, Reply, RequestContext, Server};
use crate::protocol::jsonrpc::{self, Request, RpcError, codes};
use crate::protocol::resources;

/// Resource not found, as 2025-era revisions code it.
const LEGACY_RESOURCE_NOT_FOUND: i32 = -32002;

/// Members of 2026-07-28 results that older revisions do not have.
const MODERN_ONLY: &[&str] = &["resultType", "ttlMs", "cacheScope"];

impl Server {
    /// Serves a legacy session's request through the 2026-07-28 pipeline,
    /// asking the client for input through `notifier` for as many rounds
    /// as the component needs, up to the configured limit.
    pub(super) async fn bridge(
        &self,
        session: &Session,
        request: &Request,
        notifier: Option<&Notifier>,
    ) -> Reply {
        let mut params = request.params.clone();
        // A legacy client takes no part in rounds: whatever it put there is
        // not a round of ours.
        params.remove("inputResponses");
        params.remove("requestState");
        params.insert(
            "_meta".to_owned(),
            session.envelope(request.params.get("_meta")),
        );
        let context = RequestContext {
            principal: session.principal(),
            headers: None,
        };
        let limits = &self.settings.legacy;
        for round in 1..=limits.max_rounds {
            let modern = Request {
                id: request.id.clone(),
                method: request.method.clone(),
                params: params.clone(),
            };
            let reply = self.handle(&modern, context, notifier).await;
            let mut message: Map<String, Value> = match serde_json::from_slice(&reply.body) {
                Ok(message) => message,
                Err(_) => return reply,
            };
            let input = match message.get_mut("result") {
                Some(Value::Object(result)) => {
                    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                        strip_modern_members(result);
                        return encoded(&message);
                    }
                    InputRequired::take(result)
                }
                _ => {
                    if let Some(Value::Object(error)) = message.get_mut("error") {
                        legacy_error(&request.method, error, session.version());
                    }
                    return encoded(&message);
                }
            };
            if round == limits.max_rounds {
                break;
            }
            let mut answers = Map::new();
            for (key, asked) in input.requests {
                let Some(out) = notifier else {
                    return failure(
                        request,
                        "this request cannot receive server requests (send Accept: text/event-stream)",
                    );
                };
                let (method, params) = match outbound(asked, session.version()) {
                    Some(call) => call,
                    None => return failure(request, "the component asked for malformed input"),
                };
                match session
                    .ask(out, &method, &params, limits.answer_timeout)
                    .await
                {
                    Ok(answer) => {
                        answers.insert(key, answer);
                    }
                    Err(error) => return failure(request, &ask_failure(&method, &error)),
                }
            }
            tracing::debug!(session = %session.id(), method = %request.method, round, answers = answers.len(), "bridged a round");
            params.insert("inputResponses".to_owned(), Value::Object(answers));
            match input.state {
                Some(state) => params.insert("requestState".to_owned(), state),
                None => params.remove("requestState"),
            };
        }
        failure(
            request,
            &format!(
                "the request still needed input after {} rounds; start it again",
                limits.max_rounds
            ),
        )
    }
}

/// The input requests and state of an `input_required` result.
struct InputRequired {
    requests: Map<String, Value>,
    state: Option<Value>,
}

impl InputRequired {
    fn take(result: &mut Map<String, Value>) -> Self {
        let requests = match result.remove("inputRequests") {
            Some(Value::Object(requests)) => requests,
            _ => Map::new(),
        };
        InputRequired {
            requests,
            state: result.remove("requestState"),
        }
    }
}

/// The method and params to send the client for one input request, in the
/// shape of the session's revision (form elicitation had no `mode` before
/// 2025-11-25).
fn outbound(request: Value, version: &str) -> Option<(String, Value)> {
    let Value::Object(mut request) = request else {
        return None;
    };
    let method = request.remove("method")?.as_str()?.to_owned();
    let mut params = request.remove("params").unwrap_or_else(|| json!({}));
    if method == "elicitation/create"
        && version < "2025-11-25"
        && let Some(params) = params.as_object_mut()
        && params.get("mode").and_then(Value::as_str) == Some("form")
    {
        params.remove("mode");
    }
    Some((method, params))
}

/// Removes what 2026-07-28 stamps on every result, including Airlock's own
/// `_meta` entry.
fn strip_modern_members(result: &mut Map<String, Value>) {
    for member in MODERN_ONLY {
        result.remove(*member);
    }
    if let Some(Value::Object(meta)) = result.get_mut("_meta") {
        meta.remove("io.modelcontextprotocol/serverInfo");
        if meta.is_empty() {
            result.remove("_meta");
        }
    }
}

/// Rewrites a 2026-07-28 error for a legacy client: resource-not-found
/// takes its old code, and a missing capability (a code older revisions do
/// not have) becomes an internal error that says what to declare.
fn legacy_error(method: &str, error: &mut Map<String, Value>, version: &str) {
    let code = error.get("code").and_then(Value::as_i64);
    if method == "resources/read" && resources::is_not_found(error) {
        error.insert("code".to_owned(), json!(LEGACY_RESOURCE_NOT_FOUND));
    } else if code == Some(i64::from(codes::MISSING_REQUIRED_CLIENT_CAPABILITY)) {
        let needed = error
            .get("data")
            .and_then(|d| d.get("requiredCapabilities"))
            .and_then(Value::as_object)
            .map(|caps| caps.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        error.insert("code".to_owned(), json!(codes::INTERNAL_ERROR));
        error.insert(
            "message".to_owned(),
            json!(format!(
                "This request needs the client capability {needed}, which the session did not declare in initialize (MCP {version})"
            )),
        );
    }
}

fn ask_failure(method: &str, error: &AskError) -> String {
    match error {
        AskError::Refused(error) => format!(
            "the client answered {method} with an error: {}",
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
        ),
        AskError::TimedOut(after) => format!(
            "the client did not answer {method} within {} ms",
            after.as_millis()
        ),
        AskError::Gone => format!("the session ended before the client answered {method}"),
    }
}

/// The internal error that ends a bridged request.
fn failure(request: &Request, why: &str) -> Reply {
    tracing::info!(method = %request.method, id = %request.id, why, "bridged request failed");
    Reply {
        body: jsonrpc::encode_error(
            Some(&request.id),
            &RpcError::internal(format!("{} failed: {why}", request.method)),
        ),
        http_status: 200,
    }
}

/// A legacy reply: always HTTP 200 (older clients read errors from the body).
fn encoded(message: &Map<String, Value>) -> Reply {
    Reply {
        body: serde_json::to_vec(message).expect("a decoded message encodes"),
        http_status: 200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_lose_the_modern_stamping() {
        let mut result = json!({
            "content": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "airlock"}}
        });
        strip_modern_members(result.as_object_mut().unwrap());
        assert_eq!(result, json!({"content": []}));
        let mut kept = json!({"_meta": {"io.modelcontextprotocol/serverInfo": {}, "x": 1}});
        strip_modern_members(kept.as_object_mut().unwrap());
        assert_eq!(kept, json!({"_meta": {"x": 1}}));
    }

    #[test]
    fn errors_take_the_legacy_codes() {
        let mut missing = json!({"code": -32602, "message": "Resource not found: a://b", "data": {"uri": "a://b"}});
        let error = missing.as_object_mut().unwrap();
        legacy_error("resources/read", error, "2025-11-25");
        assert_eq!(error["code"], -32002);
        let mut capability = json!({"code": -32021, "message": "m",
            "data": {"requiredCapabilities": {"sampling": {}}}});
        let error = capability.as_object_mut().unwrap();
        legacy_error("tools/call", error, "2025-06-18");
        assert_eq!(error["code"], codes::INTERNAL_ERROR);
        assert!(error["message"].as_str().unwrap().contains("sampling"));
        let mut other = json!({"code": -32602, "message": "Invalid params"});
        legacy_error("tools/call", other.as_object_mut().unwrap(), "2025-11-25");
        assert_eq!(other["code"], -32602);
    }

    #[test]
    fn form_elicitation_drops_its_mode_before_2025_11_25() {
        let asked = || {
            json!({"method": "elicitation/create",
                   "params": {"mode": "form", "message": "m", "requestedSchema": {}}})
        };
        let (_, old) = outbound(asked(), "2025-06-18").unwrap();
        assert_eq!(old, json!({"message": "m", "requestedSchema": {}}));
        let (method, new) = outbound(asked(), "2025-11-25").unwrap();
        assert_eq!(
            (method.as_str(), &new["mode"]),
            ("elicitation/create", &json!("form"))
        );
        assert!(outbound(json!([]), "2025-11-25").is_none());
    }
}
