//! The bridge: a legacy session's request served by the 2026-07-28
//! pipeline, with Airlock playing the client's part of multi-round
//! requests.
//!
//! The request gets the `_meta` its session implies (the capabilities it
//! declared in `initialize` that the bridge can serve, see
//! [`served_capabilities`]; the log level last set) and goes through the
//! same code as a modern request. When the component answers
//! `input_required`, each of its input requests is sent to the client as a
//! real `elicitation/create`, `sampling/createMessage` or `roots/list`
//! request on the request's own stream; the answers and the sealed
//! `requestState` are then sent back through the pipeline as a retry, which
//! runs the component in a fresh instance, exactly as a modern client's
//! retry would. A component cannot tell the two eras apart. Results lose the 2026-07-28 stamping
//! (`resultType`, `ttlMs`, `cacheScope`) and errors take the legacy codes.

use serde_json::{Map, Value};

use super::Legacy;
use super::session::{AskError, Session};
use crate::access::Caller;
use crate::protocol::answer::{Answer, Complete, InputRequest};
use crate::protocol::jsonrpc::{self, Request, RpcError, codes};
use crate::protocol::{Notifier, Reply, RequestContext, is_not_found};

/// Resource not found, as 2025-era revisions code it.
const LEGACY_RESOURCE_NOT_FOUND: i32 = -32002;

impl Legacy {
    /// Serves a legacy session's request through the 2026-07-28 pipeline,
    /// asking the client for input through `notifier` for as many rounds
    /// as the component needs, up to the configured limit.
    pub(super) async fn bridge(
        &self,
        session: &Session,
        request: &Request,
        caller: &Caller,
        notifier: Option<&Notifier>,
    ) -> Reply {
        let mut params = request.params.clone();
        // A legacy client takes no part in rounds: whatever it put there is
        // not a round of ours.
        params.remove("inputResponses");
        params.remove("requestState");
        params.insert(
            "_meta".to_owned(),
            session.envelope(
                request.params.get("_meta"),
                served_capabilities(session.declared_capabilities()),
            ),
        );
        // Bound to the session's principal; authorized as the caller of
        // this very request (its token may have changed since initialize).
        let context = RequestContext {
            principal: session.principal(),
            caller,
            headers: None,
        };
        let limits = &self.bridge;
        for round in 1..=limits.max_rounds {
            let modern = Request {
                id: request.id.clone(),
                method: request.method.clone(),
                params: params.clone(),
            };
            let input = match self.server.answer(&modern, context, notifier).await {
                Answer::Complete(complete) => return result(&request.id, &complete),
                Answer::Error(mut error) => {
                    legacy_error(&request.method, &mut error, session.version());
                    return error_reply(&request.id, &error);
                }
                Answer::InputRequired(input) => input,
                // Not declared by `served_capabilities`: never a task here.
                Answer::Task(_) => {
                    return failure(request, "tasks are served on the 2026-07-28 wire only");
                }
            };
            if round == limits.max_rounds {
                break;
            }
            let mut answers = Map::new();
            for asked in input.requests {
                let Some(out) = notifier else {
                    return failure(
                        request,
                        "this request cannot receive server requests (send Accept: text/event-stream)",
                    );
                };
                let params = outbound_params(&asked, session.version());
                match session
                    .ask(out, asked.method, &params, limits.answer_timeout)
                    .await
                {
                    Ok(answer) => {
                        answers.insert(asked.key, answer);
                    }
                    Err(error) => return failure(request, &ask_failure(asked.method, &error)),
                }
            }
            tracing::debug!(session = %session.id(), method = %request.method, round, answers = answers.len(), "bridged a round");
            params.insert("inputResponses".to_owned(), Value::Object(answers));
            params.insert(
                "requestState".to_owned(),
                Value::String(input.request_state),
            );
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

/// The members of client capabilities the bridge serves: the input
/// requests it sends the client as real requests.
const SERVED_CAPABILITIES: [&str; 3] = ["elicitation", "roots", "sampling"];

/// What the 2026-07-28 pipeline is told a session's client can do: of the
/// capabilities it declared in `initialize`, those the bridge serves
/// ([`SERVED_CAPABILITIES`]), and nothing else.
///
/// In particular no extension: a 2025 session negotiates none (the
/// `initialize` reply advertises none), and the 2026-07-28 ones do not
/// exist on the 2025 wire. A client that declares the tasks extension
/// there anyway (some do) would otherwise have its calls answered with a
/// `CreateTaskResult` and `tasks/get` polling it cannot make; its calls run
/// to their result in state-only rounds instead, as a client without tasks
/// gets them. (The experimental tasks of 2025-11-25, `capabilities.tasks`
/// with `tasks/result`, are another protocol, which the bridge does not
/// serve: the `initialize` reply does not advertise them either.)
fn served_capabilities(declared: &Value) -> Value {
    let served = declared
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| SERVED_CAPABILITIES.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    Value::Object(served)
}

/// The params to send the client for one input request, in the shape of
/// the session's revision: form elicitation had no `mode` before
/// 2025-11-25.
fn outbound_params<'r>(asked: &'r InputRequest, version: &str) -> std::borrow::Cow<'r, str> {
    if asked.method != "elicitation/create" || version >= "2025-11-25" {
        return std::borrow::Cow::Borrowed(&asked.params);
    }
    match serde_json::from_str::<Map<String, Value>>(&asked.params) {
        Ok(mut params) if params.get("mode").and_then(Value::as_str) == Some("form") => {
            params.remove("mode");
            std::borrow::Cow::Owned(Value::Object(params).to_string())
        }
        _ => std::borrow::Cow::Borrowed(&asked.params),
    }
}

/// A 2026-07-28 error rewritten for a legacy client: resource-not-found
/// takes its old code, and a missing capability (a code older revisions do
/// not have) becomes invalid params (the request asks for what the session
/// cannot do; the server did not fail) that say what to declare.
fn legacy_error(method: &str, error: &mut RpcError, version: &str) {
    if method == "resources/read" && is_not_found(error) {
        error.code = LEGACY_RESOURCE_NOT_FOUND;
    } else if error.code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY {
        let needed = error
            .data
            .as_ref()
            .and_then(|d| d.get("requiredCapabilities"))
            .and_then(Value::as_object)
            .map(|caps| caps.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        *error = RpcError::invalid_params(format!(
            "This request needs the client capability {needed}, which the session did not declare in initialize (MCP {version})"
        ));
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
    error_reply(
        &request.id,
        &RpcError::internal(format!("{} failed: {why}", request.method)),
    )
}

/// A legacy error reply: always HTTP 200 (older clients read errors from the
/// body).
fn error_reply(id: &Value, error: &RpcError) -> Reply {
    // Every error of a session is a 200, but a refusal a stronger token
    // would avoid: its 403 and challenge let the client step up.
    if error.code == codes::ACCESS_DENIED {
        return Reply::error(Some(id), error);
    }
    Reply {
        body: jsonrpc::encode_error(Some(id), error),
        http_status: 200,
        retry_after: None,
        challenge: None,
    }
}

/// A legacy result: the result's own members, without what 2026-07-28
/// stamps on results (`resultType`, `ttlMs`, `cacheScope`, Airlock's
/// `_meta`).
fn result(id: &Value, complete: &Complete) -> Reply {
    Reply {
        body: jsonrpc::encode_raw_result(id, &complete.members),
        http_status: 200,
        retry_after: None,
        challenge: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_keep_only_their_own_members() {
        let mut complete = Complete::new(r#"{"content":[]}"#.to_owned()).cached(0, "public");
        complete.meta.insert("x".into(), json!(1));
        let reply = result(&json!(3), &complete);
        let message: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(
            message,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}})
        );
        assert_eq!(reply.http_status, 200);
    }

    #[test]
    fn errors_take_the_legacy_codes() {
        let mut missing = RpcError::invalid_params("Resource not found: a://b")
            .with_data(json!({"uri": "a://b"}));
        legacy_error("resources/read", &mut missing, "2025-11-25");
        assert_eq!(missing.code, -32002);
        let mut capability = RpcError::new(codes::MISSING_REQUIRED_CLIENT_CAPABILITY, "m")
            .with_data(json!({"requiredCapabilities": {"sampling": {}}}));
        legacy_error("tools/call", &mut capability, "2025-06-18");
        assert_eq!(capability.code, codes::INVALID_PARAMS);
        assert!(capability.message.contains("sampling"));
        let mut other = RpcError::invalid_params("Invalid params");
        legacy_error("tools/call", &mut other, "2025-11-25");
        assert_eq!(other.code, -32602);
        assert_eq!(
            error_reply(&json!(1), &other).http_status,
            200,
            "older clients read errors from the body"
        );
    }

    #[test]
    fn the_pipeline_is_told_only_what_the_bridge_serves() {
        let declared = json!({
            "elicitation": {"form": {}},
            "sampling": {"tools": {}},
            "roots": {"listChanged": true},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
            "tasks": {"requests": {"tools": {"call": {}}}},
            "experimental": {"x": {}},
        });
        assert_eq!(
            served_capabilities(&declared),
            json!({
                "elicitation": {"form": {}},
                "sampling": {"tools": {}},
                "roots": {"listChanged": true},
            })
        );
        let inspector = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        assert_eq!(served_capabilities(&inspector), json!({}));
        assert_eq!(served_capabilities(&json!({})), json!({}));
    }

    #[test]
    fn form_elicitation_drops_its_mode_before_2025_11_25() {
        let asked = InputRequest {
            key: "k".into(),
            method: "elicitation/create",
            params: r#"{"mode":"form","message":"m","requestedSchema":{}}"#.into(),
        };
        let old: Value = serde_json::from_str(&outbound_params(&asked, "2025-06-18")).unwrap();
        assert_eq!(old, json!({"message": "m", "requestedSchema": {}}));
        assert_eq!(outbound_params(&asked, "2025-11-25"), asked.params);
        let roots = InputRequest {
            key: "r".into(),
            method: "roots/list",
            params: "{}".into(),
        };
        assert_eq!(outbound_params(&roots, "2025-03-26"), "{}");
    }
}
