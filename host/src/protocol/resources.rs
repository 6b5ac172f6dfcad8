//! `resources/read`: one round of a read, as a [`RoundMethod`].
//!
//! A read goes to the component that lists the URI, else to the one whose
//! template matches it first (see [`Registry`](crate::registry::Registry)).
//! A URI nobody serves, or one the component says does not exist, is -32602
//! with `data.uri` (SEP-2164), never an empty `contents`.

use serde_json::Value;

use super::answer::Answer;
use super::catalog::Catalog;
use super::context::{ProtocolSettings, Services};
use super::envelope::{MirroredHeaders, RequestMeta};
use super::jsonrpc::{self, Request, RpcError};
use super::mrtr::{RoundMethod, Settled, Target};
use super::outcome::Outcome;
use super::wire;
use crate::registry::Served;
use crate::registry::validate::MAX_URI_LEN;
use crate::runtime::{CallError, EventSink, Runtime, wit, wit_resources};

/// One round of `resources/read`: the component that reads the URI, and
/// the template it matched, if any.
pub(super) struct ResourceRead {
    component: Served<()>,
    template: Option<wit_resources::TemplateMatch>,
}

/// What a read is bound to besides its URI: no arguments.
static NO_ARGUMENTS: Value = Value::Null;

impl RoundMethod for ResourceRead {
    const METHOD: &'static str = "resources/read";
    const KIND: &'static str = "Resource";
    const NAMED_BY: &'static str = "uri";
    type Outcome = wit_resources::ReadOutcome;

    fn prepare(
        catalog: &Catalog,
        _settings: &ProtocolSettings,
        uri: &str,
        _request: &Request,
        _meta: &RequestMeta,
        _headers: Option<&MirroredHeaders<'_>>,
    ) -> Result<Self, Answer> {
        check_uri_length(uri)?;
        let (component, template) = catalog
            .registry
            .resolve_resource(uri)
            .ok_or_else(|| super::access::resource_not_found(uri))?;
        Ok(ResourceRead {
            component,
            template,
        })
    }

    fn arguments<'r>(&self, _request: &'r Request) -> &'r Value {
        &NO_ARGUMENTS
    }

    fn source(&self) -> &std::path::Path {
        self.component.source()
    }

    fn max_output_bytes(&self) -> usize {
        self.component.max_output_bytes()
    }

    async fn run(
        &self,
        runtime: &Runtime,
        uri: &str,
        _request: &Request,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit_resources::ReadOutcome, CallError> {
        self.component
            .read(runtime, uri, self.template.as_ref(), round, events)
            .await
    }

    fn settle(
        &self,
        services: Services<'_>,
        uri: &str,
        outcome: wit_resources::ReadOutcome,
        limit: usize,
    ) -> Settled {
        match outcome {
            wit_resources::ReadOutcome::NotFound => {
                Settled::Answer(Answer::Error(super::access::resource_not_found(uri)))
            }
            wit_resources::ReadOutcome::Complete(contents) if contents.is_empty() => {
                Settled::Failed("the component returned no contents".to_owned())
            }
            wit_resources::ReadOutcome::Complete(contents) => {
                let max_json_depth = services.runtime.limits().max_json_depth;
                let result = wire::ReadResourceResult {
                    contents: contents
                        .iter()
                        .map(|c| wire::resource_contents(c, max_json_depth))
                        .collect(),
                };
                match Settled::encode(&result, limit) {
                    // Components cannot see who asks, but a read may still
                    // depend on the moment: never shared across callers.
                    Settled::Complete(complete) => {
                        Settled::Complete(complete.cached(services.settings.read_ttl_ms, "private"))
                    }
                    other => other,
                }
            }
            wit_resources::ReadOutcome::InputRequired(input) => Settled::InputRequired(input),
        }
    }

    fn failure(&self, target: Target<'_>, why: String) -> Answer {
        Answer::Error(
            RpcError::internal(format!("Reading resource '{}' failed: {why}", target.name))
                .with_outcome(Outcome::Failed),
        )
    }
}

/// Refuses a `uri` parameter longer than any URI a component may serve.
pub(crate) fn check_uri_length(uri: &str) -> Result<(), RpcError> {
    if uri.len() > MAX_URI_LEN {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: uri is longer than {MAX_URI_LEN} bytes"
        )));
    }
    Ok(())
}

/// Whether a `resources/read` error is the resource-not-found error, which
/// older revisions coded differently.
pub(crate) fn is_not_found(error: &RpcError) -> bool {
    error.code == jsonrpc::codes::INVALID_PARAMS
        && error
            .data
            .as_ref()
            .and_then(Value::as_object)
            .is_some_and(|data| data.contains_key("uri"))
}
