//! Multi Round-Trip Requests (SEP-2322), shared by `tools/call`,
//! `prompts/get` and `resources/read`.
//!
//! A round starts from the request alone: the client's `inputResponses`,
//! and the sealed `requestState` opened against this caller and this very
//! request (method, name or URI, arguments). The component runs in a fresh
//! instance; if it asks for input, its requests are checked against the
//! capabilities the client declared on this request and returned in an
//! `input_required` result with a newly sealed state. Nothing is remembered
//! between rounds, so any Airlock process holding the keys can serve any
//! round, and a component replaced between two rounds serves the next one
//! with the same state (the state is bound to the name, not to a build).
//!
//! While a component runs, its `progress` and `log` reports become
//! notifications on the request's stream when the client asked for them.

use std::future::Future;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value, json};

use super::dispatch::{Notifier, Server};
use super::envelope::{self, ClientCapabilities, LogLevel, RequestMeta};
use super::jsonrpc::{self, RpcError};
use super::wire;
use crate::runtime::{self, CallError, EventSink, GuestEvent, wit};
use crate::state::Binding;

/// What a multi-round request is about, for its messages and its state.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target<'a> {
    /// `Tool`, `Prompt` or `Resource`, for messages.
    pub(super) kind: &'static str,
    /// The tool or prompt name, or the resource URI.
    pub(super) name: &'a str,
}

impl Server {
    /// Opens the round a request carries: its answers, and the state of the
    /// previous round (checked against `binding`) if it has one.
    pub(super) fn open_round<'a>(
        &self,
        params: &Map<String, Value>,
        target: Target<'_>,
        binding: &dyn Fn() -> Binding<'a>,
        meta: &RequestMeta,
    ) -> Result<wit::Round, RpcError> {
        let responses = match params.get("inputResponses") {
            None => Vec::new(),
            Some(value) => wire::input_responses(value)
                .map_err(|e| RpcError::invalid_params(format!("Invalid params: {e}")))?,
        };
        let (number, state) = match params.get("requestState") {
            None => (1, None),
            Some(Value::String(token)) => {
                let binding = binding();
                let opened = self.sealer.open(token, &binding).map_err(|e| {
                    if !e.is_client_error() {
                        // Single-use mode could not record the token: fail closed.
                        tracing::warn!(kind = target.kind, name = target.name, principal = binding.principal, reason = %e, "requestState not checked");
                        return RpcError::internal(e.client_message());
                    }
                    tracing::info!(kind = target.kind, name = target.name, principal = binding.principal, reason = %e, "requestState refused");
                    RpcError::invalid_params(e.client_message())
                })?;
                if opened.round >= self.settings.max_rounds {
                    return Err(RpcError::invalid_params(format!(
                        "{} '{}' did not finish within {} rounds; start the request again",
                        target.kind, target.name, self.settings.max_rounds
                    )));
                }
                (opened.round + 1, opened.guest_state)
            }
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: requestState must be a string",
                ));
            }
        };
        Ok(wit::Round {
            number,
            responses,
            state,
            client: capabilities(&meta.capabilities),
        })
    }

    /// Turns a component's request for input into an `input_required`
    /// result with a newly sealed state. `Ok(Err(problem))` when the
    /// component's request is malformed (the caller reports it its own way);
    /// `Err` when the client lacks a capability it would need.
    pub(super) fn input_required<'i>(
        &self,
        target: Target<'_>,
        meta: &RequestMeta,
        binding: &Binding<'_>,
        round: u32,
        input: &'i wit::InputRequired,
    ) -> Result<Result<InputRequiredResult<'i>, String>, RpcError> {
        if input.requests.is_empty() && input.state.is_none() {
            return Ok(Err(
                "asked for input without any request or state".to_owned()
            ));
        }
        let mut keys = std::collections::HashSet::new();
        for (key, _) in &input.requests {
            if key.is_empty() || !keys.insert(key.as_str()) {
                return Ok(Err(format!(
                    "input request key {key:?} is empty or repeated"
                )));
            }
        }
        check_capabilities(target, &input.requests, &meta.capabilities)?;
        let requests = match input
            .requests
            .iter()
            .map(|(key, request)| wire::input_request(request).map(|r| (key.as_str(), r)))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(requests) => requests,
            Err(error) => return Ok(Err(error.0)),
        };
        let token = match self.sealer.seal(binding, round, input.state.as_deref()) {
            Ok(token) => token,
            Err(error) => return Ok(Err(error.to_string())),
        };
        Ok(Ok(InputRequiredResult {
            result_type: "input_required",
            input_requests: (!requests.is_empty()).then_some(KeyedRequests(requests)),
            request_state: token,
        }))
    }
}

impl Server {
    /// A component's request for input on a method with no `isError`
    /// result (prompts, reads): a malformed request for input goes through
    /// `failed`, like any other failure of the component.
    pub(super) fn input_required_or_failure<'i>(
        &self,
        target: Target<'_>,
        meta: &RequestMeta,
        binding: &Binding<'_>,
        round: u32,
        input: &'i wit::InputRequired,
        failed: impl FnOnce(String) -> RpcError,
    ) -> Result<InputRequiredResult<'i>, RpcError> {
        self.input_required(target, meta, binding, round, input)?
            .map_err(|problem| failed(format!("it returned an invalid outcome: {problem}")))
    }
}

/// A failed component call on a method with no `isError` result (prompts,
/// reads): busy stays busy, anything else goes through `failed`.
pub(super) fn call_failure(error: CallError, failed: impl FnOnce(String) -> RpcError) -> RpcError {
    match error {
        CallError::Busy { .. } => busy(&error),
        error => failed(error.to_string()),
    }
}

/// The error for a call refused because the server is at its limits: not a
/// failure of the component the model should read, but a temporary server
/// condition (HTTP 503).
pub(super) fn busy(error: &CallError) -> RpcError {
    RpcError::internal(format!("Server busy: {error}")).with_status(503)
}

/// Runs `run` (a component call), forwarding its progress and log events as
/// notifications when the client asked for them on this request; `label`
/// names the logger of log messages.
pub(super) async fn with_events<T, Fut>(
    meta: &RequestMeta,
    notifier: Option<&Notifier>,
    label: &str,
    run: impl FnOnce(Option<EventSink>) -> Fut,
) -> T
where
    Fut: Future<Output = T>,
{
    let Some(out) = notifier.filter(|_| meta.wants_notifications()) else {
        return run(None).await;
    };
    let (events, mut received) = tokio::sync::mpsc::channel(32);
    let call = run(Some(events));
    let forward = async {
        while let Some(event) = received.recv().await {
            if let Some(message) = notification(event, meta, label) {
                // A closed channel means the client went away; the call
                // itself is cancelled by the transport.
                let _ = out.send(message).await;
            }
        }
    };
    let (outcome, ()) = tokio::join!(call, forward);
    outcome
}

/// `InputRequiredResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InputRequiredResult<'a> {
    result_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_requests: Option<KeyedRequests<'a>>,
    request_state: String,
}

/// Input requests as a JSON object, in the order the tool gave them.
struct KeyedRequests<'a>(Vec<(&'a str, wire::InputRequest<'a>)>);

impl Serialize for KeyedRequests<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, request) in &self.0 {
            map.serialize_entry(key, request)?;
        }
        map.end()
    }
}

fn capabilities(caps: &ClientCapabilities) -> wit::ClientCapabilities {
    wit::ClientCapabilities {
        elicitation_form: caps.elicitation_form,
        elicitation_url: caps.elicitation_url,
        sampling: caps.sampling,
        sampling_tools: caps.sampling_tools,
        sampling_context: caps.sampling_context,
        roots: caps.roots,
    }
}

/// Refuses input requests the client did not declare it can answer, with
/// -32021 naming every capability that is missing.
fn check_capabilities(
    target: Target<'_>,
    requests: &[(String, wit::InputRequest)],
    caps: &ClientCapabilities,
) -> Result<(), RpcError> {
    let mut required = Map::new();
    let mut need = |capability: &str, sub: Option<&str>| {
        let entry = required.entry(capability).or_insert_with(|| json!({}));
        if let (Some(sub), Some(object)) = (sub, entry.as_object_mut()) {
            object.insert(sub.to_owned(), json!({}));
        }
    };
    for (_, request) in requests {
        match request {
            wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(_))
                if !caps.elicitation_form =>
            {
                need("elicitation", caps.elicitation_url.then_some("form"));
            }
            wit::InputRequest::Elicitation(wit::ElicitationRequest::Url(_))
                if !caps.elicitation_url =>
            {
                need("elicitation", Some("url"));
            }
            wit::InputRequest::Sampling(sampling) => {
                if !caps.sampling {
                    need("sampling", None);
                }
                if (!sampling.tools.is_empty() || sampling.tool_choice.is_some())
                    && !caps.sampling_tools
                {
                    need("sampling", Some("tools"));
                }
                let wants_context = matches!(
                    sampling.include_context,
                    Some(wit::IncludeContext::ThisServer | wit::IncludeContext::AllServers)
                );
                if wants_context && !caps.sampling_context {
                    need("sampling", Some("context"));
                }
            }
            wit::InputRequest::Roots if !caps.roots => need("roots", None),
            _ => {}
        }
    }
    if required.is_empty() {
        return Ok(());
    }
    let names = required.keys().cloned().collect::<Vec<_>>().join(", ");
    Err(envelope::missing_capability(
        format!(
            "{} '{}' needs the client capability {names}; declare it in _meta clientCapabilities",
            target.kind, target.name
        ),
        Value::Object(required),
    ))
}

/// Turns a guest event into the notification the client asked for, if any.
fn notification(event: GuestEvent, meta: &RequestMeta, tool: &str) -> Option<Vec<u8>> {
    match event {
        GuestEvent::Progress {
            progress,
            total,
            message,
        } => {
            let token = meta.progress_token.as_ref()?;
            let mut params = json!({ "progressToken": token, "progress": progress });
            if let Some(total) = total {
                params["total"] = json!(total);
            }
            if let Some(message) = message {
                params["message"] = json!(message);
            }
            Some(jsonrpc::encode_notification(
                "notifications/progress",
                &params,
            ))
        }
        GuestEvent::Log { level, message } => {
            let level = LogLevel::from_name(runtime::events::level_name(level))?;
            if level < meta.log_level? {
                return None;
            }
            let params = json!({ "level": level.as_str(), "logger": tool, "data": message });
            Some(jsonrpc::encode_notification(
                "notifications/message",
                &params,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> wit::InputRequest {
        wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(wit::FormElicitation {
            message: "m".into(),
            requested_schema: "{}".into(),
        }))
    }

    fn url() -> wit::InputRequest {
        wit::InputRequest::Elicitation(wit::ElicitationRequest::Url(wit::UrlElicitation {
            message: "m".into(),
            url: "https://example.com".into(),
        }))
    }

    fn required(requests: Vec<wit::InputRequest>, caps: ClientCapabilities) -> Option<Value> {
        let keyed: Vec<_> = requests
            .into_iter()
            .enumerate()
            .map(|(i, r)| (i.to_string(), r))
            .collect();
        check_capabilities(
            Target {
                kind: "Tool",
                name: "t",
            },
            &keyed,
            &caps,
        )
        .err()
        .map(|e| {
            assert_eq!(
                (e.code, e.http_status),
                (jsonrpc::codes::MISSING_REQUIRED_CLIENT_CAPABILITY, 400)
            );
            e.data.unwrap()["requiredCapabilities"].clone()
        })
    }

    #[test]
    fn undeclared_capabilities_are_named() {
        let none = ClientCapabilities::default();
        assert_eq!(
            required(vec![form(), wit::InputRequest::Roots], none),
            Some(json!({"elicitation": {}, "roots": {}}))
        );
        let form_only = ClientCapabilities {
            elicitation_form: true,
            ..none
        };
        assert_eq!(required(vec![form()], form_only), None);
        assert_eq!(
            required(vec![url()], form_only),
            Some(json!({"elicitation": {"url": {}}}))
        );
        let url_only = ClientCapabilities {
            elicitation_url: true,
            ..none
        };
        assert_eq!(
            required(vec![form()], url_only),
            Some(json!({"elicitation": {"form": {}}}))
        );
    }

    #[test]
    fn progress_and_log_notifications_follow_the_request_opt_ins() {
        let meta = |token: Option<Value>, level: Option<LogLevel>| RequestMeta {
            capabilities: ClientCapabilities::default(),
            progress_token: token,
            log_level: level,
        };
        let progress = || GuestEvent::Progress {
            progress: 1.0,
            total: Some(2.0),
            message: None,
        };
        let log = |level| GuestEvent::Log {
            level,
            message: "hello".into(),
        };
        assert!(notification(progress(), &meta(None, None), "t").is_none());
        let note: Value = serde_json::from_slice(
            &notification(progress(), &meta(Some(json!(7)), None), "t").unwrap(),
        )
        .unwrap();
        assert_eq!(
            note["params"],
            json!({"progressToken": 7, "progress": 1.0, "total": 2.0})
        );
        assert!(notification(log(runtime::LogLevel::Error), &meta(None, None), "t").is_none());
        assert!(
            notification(
                log(runtime::LogLevel::Info),
                &meta(None, Some(LogLevel::Warning)),
                "t"
            )
            .is_none()
        );
        let note: Value = serde_json::from_slice(
            &notification(
                log(runtime::LogLevel::Error),
                &meta(None, Some(LogLevel::Warning)),
                "t",
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            note["params"],
            json!({"level": "error", "logger": "t", "data": "hello"})
        );
    }
}
