//! Traces over OTLP (`--otlp-endpoint`): one SERVER span per MCP request,
//! named and attributed as the OpenTelemetry conventions for MCP say
//! ([`request`]), continuing the caller's trace ([`propagation`]), with a
//! child span for each step that costs: a fresh instance, the guest's
//! call, sealing and opening `requestState` ([`child`]). Spans are batched
//! and sent to a collector over OTLP/HTTP ([`export`]).
//!
//! Traces exist only when they are exported: [`install`] is called once,
//! at start-up, with `--otlp-endpoint`. Until then every function here is
//! one check of an empty [`OnceLock`] and nothing else: no span, attribute
//! or context is built and no future is wrapped, so a server without
//! traces pays (nearly) nothing for them.

mod child;
mod export;
mod export_failures;
mod propagation;
mod request;

use std::sync::OnceLock;

use opentelemetry_sdk::trace::SdkTracer;

pub use child::ChildSpan;
pub use export::{Exporting, TraceSettings, install};
pub use propagation::{TraceHeaders, Via};
pub use request::{Incoming, MAX_VALUE_LEN, Outcome, serve};

/// The tracer of this process, once traces are exported.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The tracer, if traces are exported.
fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get()
}

/// The trace id (hex) of the request being served, when traces are
/// exported and it has a span.
pub fn current_trace_id() -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    tracer()?;
    let context = opentelemetry::Context::current();
    let span = context.span();
    let span = span.span_context();
    span.is_valid().then(|| span.trace_id().to_string())
}

#[cfg(test)]
mod tests;
