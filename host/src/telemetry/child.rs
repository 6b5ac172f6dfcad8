//! The steps of a request worth seeing in a trace (a fresh instance, the
//! guest's call, sealing and opening `requestState`), as children of the
//! request's span.

use std::fmt::Display;

use opentelemetry::Context;
use opentelemetry::trace::{Span, Status, TraceContextExt, Tracer};

/// One step of a request, timed as a child of the request's span. Empty
/// (nothing is built) when traces are off, or when the step runs outside
/// any request's span (loading a component, a task's round in the
/// background). Dropped without [`ChildSpan::end`] (the request was
/// cancelled), it ends as it is.
#[derive(Debug)]
#[must_use = "a step's span ends with `end`"]
pub struct ChildSpan(pub(super) Option<opentelemetry_sdk::trace::Span>);

impl ChildSpan {
    /// Starts the step `name` under the current request's span.
    pub fn start(name: &'static str) -> ChildSpan {
        let Some(tracer) = super::tracer() else {
            return ChildSpan(None);
        };
        let context = Context::current();
        if !context.has_active_span() {
            return ChildSpan(None);
        }
        ChildSpan(Some(tracer.start_with_context(name, &context)))
    }

    /// Ends the step; an `Err` marks it failed, with the error as the
    /// status description.
    pub fn end<T, E: Display>(self, result: &Result<T, E>) {
        if let Some(mut span) = self.0 {
            if let Err(error) = result {
                span.set_status(Status::error(error.to_string()));
            }
            span.end();
        }
    }
}
