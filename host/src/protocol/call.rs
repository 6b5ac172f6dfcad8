//! `tools/call` with Multi Round-Trip Requests (SEP-2322).
//!
//! One round: read the arguments and the client's answers, open the sealed
//! `requestState` (if any) against this caller and this request, run the tool
//! in a fresh instance, then either return its complete result or turn its
//! input requests into an `input_required` result with a newly sealed state.
//! Nothing is remembered between rounds: all a retry needs is in the request.

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value, json};

use super::dispatch::{Notifier, Reply, RequestContext, Server, required_str};
use super::envelope::{self, ClientCapabilities, LogLevel, RequestMeta};
use super::jsonrpc::{self, Request, RpcError};
use super::param_headers;
use super::wire;
use crate::registry::ToolEntry;
use crate::runtime::{self, CallError, GuestEvent, wit};
use crate::state::Binding;

const METHOD: &str = "tools/call";

impl Server {
    /// Runs one round of `tools/call`.
    pub(super) async fn call_tool(
        &self,
        request: &Request,
        meta: &RequestMeta,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Result<Reply, RpcError> {
        let params = &request.params;
        let name = required_str(params, "name")?;
        envelope::check_name_header(context.headers.as_ref(), name)?;
        let no_arguments = Value::Object(Map::new());
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => &no_arguments,
            Some(arguments @ Value::Object(_)) => arguments,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: arguments must be an object",
                ));
            }
        };
        if let (Some(annotated), Some(all)) = (
            self.param_headers.get(name),
            context.headers.as_ref().and_then(|h| h.all),
        ) {
            param_headers::check(annotated, arguments, |header| {
                all.get(header)
                    .map(|v| v.to_str().map(str::trim).unwrap_or("\u{fffd}"))
            })?;
        }
        let entry = self
            .registry
            .find(name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")))?;
        let responses = match params.get("inputResponses") {
            None => Vec::new(),
            Some(value) => wire::input_responses(value)
                .map_err(|e| RpcError::invalid_params(format!("Invalid params: {e}")))?,
        };
        // Needed to open the state and again to seal the next one: computed once.
        let digest = std::sync::OnceLock::new();
        let binding = || Binding {
            principal: context.principal,
            method: METHOD,
            target: name,
            arguments_digest: *digest.get_or_init(|| crate::state::digest_arguments(arguments)),
        };
        let (number, state) = match params.get("requestState") {
            None => (1, None),
            Some(Value::String(token)) => {
                let opened = self
                    .sealer
                    .open(token, &binding())
                    .map_err(|e| {
                        tracing::info!(tool = name, principal = context.principal, reason = %e, "requestState refused");
                        RpcError::invalid_params(e.client_message())
                    })?;
                if opened.round >= self.settings.max_rounds {
                    return Err(RpcError::invalid_params(format!(
                        "Tool '{name}' did not finish within {} rounds; start the call again",
                        self.settings.max_rounds
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
        let round = wit::Round {
            number,
            responses,
            state,
            client: capabilities(&meta.capabilities),
        };
        let started = std::time::Instant::now();
        let outcome = self
            .run(entry, &arguments.to_string(), round, meta, notifier)
            .await;
        tracing::debug!(
            tool = name,
            round = number,
            elapsed_us = started.elapsed().as_micros() as u64,
            "tool call"
        );
        match outcome {
            Err(error) => {
                tracing::warn!(tool = name, file = %entry.source().display(), %error, "tool call failed");
                Ok(self.tool_failure(&request.id, name, &error.to_string()))
            }
            Ok(wit::CallOutcome::Complete(result)) => match wire::call_result(&result) {
                Ok(result) => Ok(self.reply(&request.id, result)),
                Err(error) => Ok(self.invalid_outcome(&request.id, entry, &error.0)),
            },
            Ok(wit::CallOutcome::InputRequired(input)) => {
                self.input_required(request, entry, meta, &binding(), number, &input)
            }
        }
    }

    /// Runs the tool, forwarding its progress and log events as notifications
    /// when the client asked for them on this request.
    async fn run(
        &self,
        entry: &ToolEntry,
        arguments: &str,
        round: wit::Round,
        meta: &RequestMeta,
        notifier: Option<&Notifier>,
    ) -> Result<wit::CallOutcome, CallError> {
        let Some(out) = notifier.filter(|_| meta.wants_notifications()) else {
            return entry.call(&self.runtime, arguments, round, None).await;
        };
        let (events, mut received) = tokio::sync::mpsc::channel(32);
        let call = entry.call(&self.runtime, arguments, round, Some(events));
        let forward = async {
            while let Some(event) = received.recv().await {
                if let Some(message) = notification(event, meta, &entry.tool.name) {
                    // A closed channel means the client went away; the call
                    // itself is cancelled by the transport.
                    let _ = out.send(message).await;
                }
            }
        };
        let (outcome, ()) = tokio::join!(call, forward);
        outcome
    }

    fn input_required(
        &self,
        request: &Request,
        entry: &ToolEntry,
        meta: &RequestMeta,
        binding: &Binding<'_>,
        round: u32,
        input: &wit::InputRequired,
    ) -> Result<Reply, RpcError> {
        if input.requests.is_empty() && input.state.is_none() {
            return Ok(self.invalid_outcome(
                &request.id,
                entry,
                "asked for input without any request or state",
            ));
        }
        let mut keys = std::collections::HashSet::new();
        for (key, _) in &input.requests {
            if key.is_empty() || !keys.insert(key.as_str()) {
                return Ok(self.invalid_outcome(
                    &request.id,
                    entry,
                    &format!("input request key {key:?} is empty or repeated"),
                ));
            }
        }
        check_capabilities(&entry.tool.name, &input.requests, &meta.capabilities)?;
        let requests = match input
            .requests
            .iter()
            .map(|(key, request)| wire::input_request(request).map(|r| (key.as_str(), r)))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(requests) => requests,
            Err(error) => return Ok(self.invalid_outcome(&request.id, entry, &error.0)),
        };
        let token = match self.sealer.seal(binding, round, input.state.as_deref()) {
            Ok(token) => token,
            Err(error) => return Ok(self.invalid_outcome(&request.id, entry, &error.to_string())),
        };
        Ok(self.reply(
            &request.id,
            InputRequiredResult {
                result_type: "input_required",
                input_requests: (!requests.is_empty()).then_some(KeyedRequests(requests)),
                request_state: token,
            },
        ))
    }

    /// A complete result with `isError`, for a tool that failed to run.
    fn tool_failure(&self, id: &Value, tool: &str, why: &str) -> Reply {
        let result = wit::CallResult {
            content: vec![wit::ContentBlock::Text(wit::TextContent {
                text: format!("Tool '{tool}' failed: {why}"),
                annotations: None,
            })],
            structured_content: None,
            is_error: true,
        };
        match wire::call_result(&result) {
            Ok(result) => self.reply(id, result),
            Err(_) => unreachable_reply(id),
        }
    }

    fn invalid_outcome(&self, id: &Value, entry: &ToolEntry, problem: &str) -> Reply {
        tracing::warn!(tool = %entry.tool.name, file = %entry.source().display(), problem, "tool returned an invalid outcome");
        self.tool_failure(
            id,
            &entry.tool.name,
            &format!("it returned an invalid outcome: {problem}"),
        )
    }
}

fn unreachable_reply(id: &Value) -> Reply {
    let error = RpcError::internal("cannot encode a failure result");
    Reply {
        body: jsonrpc::encode_error(Some(id), &error),
        http_status: error.http_status,
    }
}

/// `InputRequiredResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InputRequiredResult<'a> {
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
    tool: &str,
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
            "Tool '{tool}' needs the client capability {names}; declare it in _meta clientCapabilities"
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
        check_capabilities("t", &keyed, &caps).err().map(|e| {
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
