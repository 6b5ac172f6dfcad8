//! Multi Round-Trip Requests (SEP-2322): the one round engine of
//! `tools/call`, `prompts/get` and `resources/read` ([`Server::run_round`];
//! each method is a [`RoundMethod`]).
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
//! The state is bound ([`Binding`]) to the caller, the method, the name or
//! URI and the arguments, made here once per round, and only when a state is
//! opened or sealed. What a component returns is bounded as it is encoded:
//! a result, and the input requests of one round together, never exceed the
//! component's output limit.
//!
//! While a component runs, its `progress` and `log` reports become
//! notifications on the request's stream when the client asked for them.

use std::future::Future;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::answer::{Answer, Complete, InputRequest, InputRequired};
use super::catalog::Catalog;
use super::context::{Notifier, ProtocolSettings, RequestContext, Services};
use super::envelope::{self, ClientCapabilities, LogLevel, MirroredHeaders, RequestMeta};
use super::jsonrpc::{self, EncodeError, Request, RpcError, required_str};
use super::outcome::Outcome;
use super::tasks::{self, TaskStart};
use super::wire;
use crate::runtime::{self, CallError, EventSink, GuestEvent, Runtime, wit};
use crate::sealing::Binding;
use crate::telemetry::ChildSpan;

/// What a multi-round request is about, for its messages.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target<'a> {
    /// `Tool`, `Prompt` or `Resource`, for messages.
    pub(super) kind: &'static str,
    /// The tool or prompt name, or the resource URI.
    pub(super) name: &'a str,
}

/// A method served in rounds: what `tools/call`, `prompts/get` and
/// `resources/read` each do their own way. The rest of a round (the name and
/// its header, the state binding, opening the round, running the component
/// with its events forwarded, gating and sealing its input requests,
/// bounding what it returns) is [`run_round`]'s, once for all.
pub(super) trait RoundMethod: Sized + Send + Sync {
    /// The JSON-RPC method; part of what the state is bound to.
    const METHOD: &'static str;
    /// `Tool`, `Prompt` or `Resource`, for messages.
    const KIND: &'static str;
    /// The request parameter that names the target: `name` or `uri`.
    const NAMED_BY: &'static str;
    /// What the component returns.
    type Outcome: Send;

    /// Reads the request's own parameters and finds what serves `name`
    /// (`settings`: how the server answers);
    /// refuses a client that lacks what the target requires (`meta`), and
    /// arguments the target does not accept. A refusal is the answer the
    /// request gets instead of a round: an error, or for a tool whose
    /// arguments do not match its input schema, an `isError` result the
    /// model can read. Nothing runs before it.
    fn prepare(
        catalog: &Catalog,
        settings: &ProtocolSettings,
        name: &str,
        request: &Request,
        meta: &RequestMeta,
        headers: Option<&MirroredHeaders<'_>>,
    ) -> Result<Self, Answer>;

    /// The arguments of `request` the state is bound to (`null` for none:
    /// the same as `{}`).
    fn arguments<'r>(&self, request: &'r Request) -> &'r Value;

    /// The component file serving the request, for log lines.
    fn source(&self) -> &std::path::Path;

    /// The largest reply the component may produce, encoded, in bytes.
    fn max_output_bytes(&self) -> usize;

    /// Runs one round of `request` (for `name`) in a fresh instance.
    fn run(
        &self,
        runtime: &Runtime,
        name: &str,
        request: &Request,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> impl Future<Output = Result<Self::Outcome, CallError>> + Send;

    /// What the component's outcome comes to; `limit` bounds an encoded
    /// result ([`Settled::encode`]).
    fn settle(
        &self,
        services: Services<'_>,
        name: &str,
        outcome: Self::Outcome,
        limit: usize,
    ) -> Settled;

    /// The answer for a component that failed to give a usable outcome
    /// (`why` says how): an `isError` result for tools, an error for the
    /// methods that have none.
    fn failure(&self, target: Target<'_>, why: String) -> Answer;
}

/// What a component's outcome comes to.
pub(super) enum Settled {
    /// A complete result, encoded.
    Complete(Complete),
    /// A request for input, to be gated and sealed.
    InputRequired(wit::InputRequired),
    /// An answer of the method's own (invalid arguments, not found, an
    /// error the component chose).
    Answer(Answer),
    /// The component asks to run the rest of the call as a task, from a
    /// round that starts with this state.
    Task(Option<Vec<u8>>),
    /// An outcome that cannot be sent (invalid, or over the output limit).
    Failed(String),
}

impl Settled {
    /// `result` as a complete result, if it encodes within `limit` bytes.
    pub(super) fn encode(result: &impl Serialize, limit: usize) -> Settled {
        match jsonrpc::encode_within(result, limit) {
            Ok(members) => Settled::Complete(Complete::new(members)),
            Err(error) => Settled::Failed(output_failure(error)),
        }
    }

    /// The same outcome, where a complete result ends its request with
    /// `outcome` (a tool's `isError` result).
    pub(super) fn with_outcome(self, outcome: Outcome) -> Settled {
        match self {
            Settled::Complete(complete) => Settled::Complete(complete.with_outcome(outcome)),
            other => other,
        }
    }
}

/// Why an encoding failed, in the words of the call error it amounts to.
pub(super) fn output_failure(error: EncodeError) -> String {
    match error {
        EncodeError::TooLarge { limit } => {
            crate::metrics::limit_hit(crate::metrics::Limit::Output);
            CallError::OutputTooLarge { limit }.to_string()
        }
        EncodeError::Invalid(why) => format!("it returned an invalid outcome: {why}"),
    }
}

/// Runs one round of method `M`.
pub(super) async fn run_round<M: RoundMethod>(
    services: Services<'_>,
    request: &Request,
    catalog: &Catalog,
    meta: &RequestMeta,
    context: RequestContext<'_>,
    notifier: Option<&Notifier>,
) -> Result<Answer, RpcError> {
    let name = required_str(&request.params, M::NAMED_BY)?;
    envelope::check_name_header(context.headers.as_ref(), name)?;
    let method = match M::prepare(
        catalog,
        services.settings,
        name,
        request,
        meta,
        context.headers.as_ref(),
    ) {
        Ok(method) => method,
        Err(Answer::Error(error)) => return Err(error),
        Err(refusal) => return Ok(refusal),
    };
    crate::audit::component(method.source());
    let target = Target {
        kind: M::KIND,
        name,
    };
    // Needed to open the state and again to seal the next one, and on a
    // first round that completes not at all: made once, when first needed.
    let binding = OnceLock::new();
    let binding = || {
        *binding.get_or_init(|| {
            Binding::new(
                context.principal,
                M::METHOD,
                name,
                method.arguments(request),
            )
        })
    };
    let round = open_round(services, &request.params, target, &binding, meta)?;
    let number = round.number;
    crate::audit::round(number);
    let started = std::time::Instant::now();
    let outcome = with_events(meta, notifier, name, |events| {
        method.run(services.runtime, name, request, &round, events)
    })
    .await;
    tracing::debug!(
        kind = M::KIND,
        name,
        round = number,
        elapsed_us = started.elapsed().as_micros() as u64,
        "round"
    );
    let outcome = match outcome {
        Err(error @ CallError::Busy { .. }) => return Err(busy(&error)),
        Err(error) => return Ok(failed(&method, target, error.to_string())),
        Ok(outcome) => outcome,
    };
    let limit = method.max_output_bytes();
    Ok(match method.settle(services, name, outcome, limit) {
        Settled::Complete(complete) => {
            crate::metrics::request_completed(number);
            Answer::Complete(complete)
        }
        Settled::Answer(answer) => answer,
        Settled::Failed(why) => failed(&method, target, why),
        Settled::InputRequired(input) => {
            match input_required(services, target, meta, &binding(), number, &input, limit)? {
                Ok(required) => Answer::InputRequired(required),
                Err(why) => failed(&method, target, why),
            }
        }
        Settled::Task(state) => {
            let start = TaskStart {
                owner: context.principal,
                tool: name,
                arguments: method.arguments(request),
                round: number,
                state: state.as_deref(),
                client: meta.capabilities,
            };
            match services.tasks {
                Some(running) if meta.capabilities.tasks => {
                    tasks::create(running, services, start).await?
                }
                _ => failed(
                    &method,
                    target,
                    "it asked to continue as a task, but the client did not declare the tasks \
                     extension on this request"
                        .to_owned(),
                ),
            }
        }
    })
}

/// Opens the round a request carries: its answers, and the state of the
/// previous round (checked against `binding`) if it has one.
fn open_round<'b>(
    services: Services<'_>,
    params: &Map<String, Value>,
    target: Target<'_>,
    binding: &dyn Fn() -> Binding<'b>,
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
            let opening = ChildSpan::start("open");
            let opened = services.sealer.open(token, &binding);
            opening.end(&opened);
            let opened = opened.map_err(|e| {
                    crate::metrics::state_refused(e.reason());
                    crate::audit::state_refused(e.reason());
                    if !e.is_client_error() {
                        // Single-use mode could not record the token: fail closed.
                        tracing::warn!(kind = target.kind, name = target.name, principal = binding.principal, reason = %e, "requestState not checked");
                        return RpcError::internal(e.client_message());
                    }
                    tracing::info!(kind = target.kind, name = target.name, principal = binding.principal, reason = %e, "requestState refused");
                    RpcError::invalid_params(e.client_message())
                })?;
            if opened.round >= services.settings.max_rounds {
                crate::audit::limit("max-rounds");
                return Err(RpcError::invalid_params(format!(
                    "{} '{}' did not finish within {} rounds; start the request again",
                    target.kind, target.name, services.settings.max_rounds
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
        task: false,
    })
}

/// Turns a component's request for input into an `input_required`
/// answer with a newly sealed state, its requests encoded within `limit`
/// bytes in all. `Ok(Err(problem))` when the component's request cannot be
/// sent (the caller reports it as the component's failure); `Err` when the
/// client lacks a capability it would need.
fn input_required(
    services: Services<'_>,
    target: Target<'_>,
    meta: &RequestMeta,
    binding: &Binding<'_>,
    round: u32,
    input: &wit::InputRequired,
    limit: usize,
) -> Result<Result<InputRequired, String>, RpcError> {
    if input.requests.is_empty() && input.state.is_none() {
        return Ok(Err(
            "it returned an invalid outcome: asked for input without any request or state"
                .to_owned(),
        ));
    }
    let max_json_depth = services.runtime.limits().max_json_depth;
    let caps = &meta.capabilities;
    let requests = match encode_requests(target, &input.requests, caps, limit, max_json_depth)? {
        Ok(requests) => requests,
        Err(why) => return Ok(Err(why)),
    };
    let sealing = ChildSpan::start("seal");
    let sealed = services.sealer.seal(binding, round, input.state.as_deref());
    sealing.end(&sealed);
    let request_state = match sealed {
        Ok(token) => token,
        Err(error) => {
            crate::metrics::state_refused(error.reason());
            return Ok(Err(error.to_string()));
        }
    };
    Ok(Ok(InputRequired {
        requests,
        request_state,
    }))
}

/// A component's input requests, checked (keys unique and not empty, the
/// capabilities they need declared in `caps`) and encoded within `limit`
/// bytes in all, their JSON texts at most `max_json_depth` deep.
/// `Ok(Err(problem))` when they cannot be sent (the component's failure);
/// `Err` when the client lacks a capability.
pub(super) fn encode_requests(
    target: Target<'_>,
    input: &[(String, wit::InputRequest)],
    caps: &ClientCapabilities,
    limit: usize,
    max_json_depth: usize,
) -> Result<Result<Vec<InputRequest>, String>, RpcError> {
    let mut keys = std::collections::HashSet::new();
    for (key, _) in input {
        if key.is_empty() || !keys.insert(key.as_str()) {
            return Ok(Err(format!(
                "it returned an invalid outcome: input request key {key:?} is empty or repeated"
            )));
        }
    }
    check_capabilities(target, input, caps)?;
    let mut budget = limit;
    let mut requests = Vec::with_capacity(input.len());
    for (key, request) in input {
        let request = match wire::input_request(request, max_json_depth) {
            Ok(request) => request,
            Err(error) => {
                return Ok(Err(format!("it returned an invalid outcome: {}", error.0)));
            }
        };
        let method = request.method();
        let params = match jsonrpc::encode_within(&request.params(), budget) {
            Ok(params) => params,
            // Over what is left of the limit: the round's requests
            // together are over the limit itself.
            Err(EncodeError::TooLarge { .. }) => {
                return Ok(Err(output_failure(EncodeError::TooLarge { limit })));
            }
            Err(error) => return Ok(Err(output_failure(error))),
        };
        budget = budget.saturating_sub(params.len() + key.len() + method.len());
        requests.push(InputRequest {
            key: key.clone(),
            method,
            params,
        });
    }
    Ok(Ok(requests))
}

/// The answer for a component that failed, and its log line.
pub(super) fn failed<M: RoundMethod>(method: &M, target: Target<'_>, why: String) -> Answer {
    tracing::warn!(
        kind = target.kind,
        name = target.name,
        file = %method.source().display(),
        why,
        "the component failed"
    );
    method.failure(target, why)
}

/// The error for a call refused because the server is at its limits: not a
/// failure of the component the model should read, but a temporary server
/// condition (HTTP 503).
pub(super) fn busy(error: &CallError) -> RpcError {
    crate::audit::limit("busy");
    RpcError::unavailable(format!("Server busy: {error}"))
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

/// What the component is told of the client's capabilities.
pub(super) fn capabilities(caps: &ClientCapabilities) -> wit::ClientCapabilities {
    wit::ClientCapabilities {
        elicitation_form: caps.elicitation_form,
        elicitation_url: caps.elicitation_url,
        sampling: caps.sampling,
        sampling_tools: caps.sampling_tools,
        sampling_context: caps.sampling_context,
        roots: caps.roots,
        tasks: caps.tasks,
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
