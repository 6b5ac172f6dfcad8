//! The SERVER span of one MCP request, as the OpenTelemetry conventions for
//! MCP name it and what they ask it to record.

use std::future::Future;

use opentelemetry::trace::{FutureExt, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::propagation::{self, Via};

/// Longest string value (or span name) recorded, in bytes: a client's tool
/// name or resource URI is cut there (at a character boundary).
pub const MAX_VALUE_LEN: usize = 1024;

/// What a request span records of the request it is about.
#[derive(Debug)]
pub struct Incoming<'a> {
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The JSON-RPC id.
    pub id: &'a Value,
    /// The params, `_meta` included.
    pub params: &'a Map<String, Value>,
    /// The MCP protocol version the request is served under, if known.
    pub protocol_version: Option<&'a str>,
    /// How it arrived.
    pub via: Via,
    /// The id of the 2025-era session it belongs to, on HTTP.
    pub session: Option<&'a str>,
    /// Whether the tool or prompt it names is served: only then is the name
    /// part of the span's name, so that names clients make up cannot make
    /// span names without bound (the attributes record them either way).
    pub target_served: bool,
}

/// How a request ended, as its span records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A result (or a request for input, or a task).
    Ok,
    /// A `tools/call` result with `isError: true`.
    ToolError,
    /// A JSON-RPC error.
    Error {
        /// Its code.
        code: i32,
        /// Its message.
        message: String,
    },
}

impl Outcome {
    /// The outcome an encoded JSON-RPC reply says (an empty body, a
    /// cancelled request's, is `Ok`).
    pub fn of_reply(method: &str, body: &[u8]) -> Outcome {
        #[derive(Deserialize)]
        struct Reply {
            error: Option<ErrorMember>,
            result: Option<ResultMember>,
        }
        #[derive(Deserialize)]
        struct ErrorMember {
            code: i32,
            #[serde(default)]
            message: String,
        }
        #[derive(Deserialize)]
        struct ResultMember {
            #[serde(default, rename = "isError")]
            is_error: bool,
        }
        match serde_json::from_slice::<Reply>(body) {
            Ok(Reply {
                error: Some(error), ..
            }) => Outcome::Error {
                code: error.code,
                message: error.message,
            },
            Ok(Reply {
                result: Some(result),
                ..
            }) if method == "tools/call" && result.is_error => Outcome::ToolError,
            _ => Outcome::Ok,
        }
    }
}

/// Runs the future `work` makes, the serving of one request, inside its
/// SERVER span when traces are exported, and records its `outcome`.
/// `incoming` is called only then: when traces are off this is one check
/// and `work` itself. (A maker, not a future: see
/// [`in_request_span`](crate::logging::in_request_span).)
///
/// A request served inside another's span (a round the bridge of a
/// 2025-era session runs for its client's request) gets no span of its
/// own: its steps belong to the span of the request that asked for it.
pub async fn serve<'a, W, O>(
    incoming: impl FnOnce() -> Incoming<'a>,
    work: impl FnOnce() -> W,
    outcome: O,
) -> W::Output
where
    W: Future,
    O: FnOnce(&W::Output) -> Outcome,
{
    let Some(tracer) = super::tracer() else {
        return work().await;
    };
    if Context::current().has_active_span() {
        return work().await;
    }
    let context = start(tracer, &incoming());
    let output = work().with_context(context.clone()).await;
    let span = context.span();
    if let Some((error_type, status_code, status)) = failure(outcome(&output)) {
        span.set_attribute(KeyValue::new("error.type", error_type));
        if let Some(code) = status_code {
            span.set_attribute(KeyValue::new("rpc.response.status_code", code));
        }
        span.set_status(status);
    }
    span.end();
    output
}

/// The `error.type`, `rpc.response.status_code` and status of a failed
/// outcome.
fn failure(outcome: Outcome) -> Option<(String, Option<String>, Status)> {
    match outcome {
        Outcome::Ok => None,
        Outcome::ToolError => Some((
            "tool_error".to_owned(),
            None,
            Status::error("the tool's result has isError"),
        )),
        Outcome::Error { code, message } => Some((
            code.to_string(),
            Some(code.to_string()),
            Status::error(bounded(&message).to_owned()),
        )),
    }
}

/// Starts the span of `incoming` under the caller's context, and returns
/// the context it makes current.
pub(super) fn start(tracer: &SdkTracer, incoming: &Incoming<'_>) -> Context {
    let parent = propagation::parent(incoming.params, &incoming.via);
    let method = bounded(incoming.method);
    let text = |key: &str| {
        incoming
            .params
            .get(key)
            .and_then(Value::as_str)
            .map(bounded)
    };
    let mut attributes = vec![KeyValue::new("mcp.method.name", method.to_owned())];
    let target = match incoming.method {
        "tools/call" => text("name").inspect(|name| {
            attributes.push(KeyValue::new("gen_ai.tool.name", name.to_string()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }),
        "prompts/get" => text("name").inspect(|name| {
            attributes.push(KeyValue::new("gen_ai.prompt.name", name.to_string()));
        }),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            if let Some(uri) = text("uri") {
                attributes.push(KeyValue::new("mcp.resource.uri", uri.to_owned()));
            }
            None
        }
        _ => None,
    };
    match incoming.id {
        Value::Null => {}
        Value::String(id) => {
            attributes.push(KeyValue::new("jsonrpc.request.id", bounded(id).to_owned()));
        }
        id => attributes.push(KeyValue::new("jsonrpc.request.id", id.to_string())),
    }
    if let Some(version) = incoming.protocol_version {
        attributes.push(KeyValue::new(
            "mcp.protocol.version",
            bounded(version).to_owned(),
        ));
    }
    if let Some(session) = incoming.session {
        attributes.push(KeyValue::new("mcp.session.id", session.to_owned()));
    }
    attributes.push(KeyValue::new(
        "network.transport",
        incoming.via.network_transport(),
    ));
    if let Via::Http(_) = incoming.via {
        attributes.push(KeyValue::new("network.protocol.name", "http"));
        attributes.push(KeyValue::new("network.protocol.version", "1.1"));
    }
    let name = match target {
        Some(target) if incoming.target_served => format!("{method} {target}"),
        _ => method.to_owned(),
    };
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_attributes(attributes)
        .with_links(parent.links)
        .start_with_context(tracer, &parent.context);
    parent.context.with_span(span)
}

/// `text` cut to at most [`MAX_VALUE_LEN`] bytes, at a character boundary.
fn bounded(text: &str) -> &str {
    if text.len() <= MAX_VALUE_LEN {
        return text;
    }
    let mut end = MAX_VALUE_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
