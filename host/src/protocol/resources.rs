//! `resources/list`, `resources/templates/list` and `resources/read` (with
//! Multi Round-Trip Requests).
//!
//! A read goes to the component that lists the URI, else to the one whose
//! template matches it first (see [`Registry`](crate::registry::Registry)).
//! A URI nobody serves, or one the component says does not exist, is -32602
//! with `data.uri` (SEP-2164), never an empty `contents`.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::catalog::Catalog;
use super::dispatch::{Notifier, Reply, RequestContext, Server, required_str};
use super::envelope::{self, RequestMeta};
use super::jsonrpc::{self, Request, RpcError};
use super::mrtr::{self, Target};
use super::wire;
use crate::registry::validate::MAX_URI_LEN;
use crate::runtime::wit_resources;
use crate::state::Binding;

const METHOD: &str = "resources/read";

/// `ReadResourceResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReadResult<'a> {
    result_type: &'static str,
    contents: Vec<wire::ResourceContents<'a>>,
    ttl_ms: u64,
    cache_scope: &'static str,
}

impl Server {
    /// Runs one round of `resources/read`.
    pub(super) async fn read_resource(
        &self,
        request: &Request,
        catalog: &Catalog,
        meta: &RequestMeta,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Result<Reply, RpcError> {
        let params = &request.params;
        let uri = required_str(params, "uri")?;
        envelope::check_name_header(context.headers.as_ref(), uri)?;
        check_uri_length(uri)?;
        let (component, template) = catalog
            .registry
            .resolve_resource(uri)
            .ok_or_else(|| not_found(uri))?;
        let target = Target {
            kind: "Resource",
            name: uri,
        };
        let no_arguments = Value::Object(Map::new());
        let binding = || Binding {
            principal: context.principal,
            method: METHOD,
            target: uri,
            arguments_digest: crate::state::digest_arguments(&no_arguments),
        };
        let round = self.open_round(params, target, &binding, meta)?;
        let number = round.number;
        let outcome = mrtr::with_events(meta, notifier, uri, |events| {
            component.read(&self.runtime, uri, template.as_ref(), &round, events)
        })
        .await;
        let failed = |why: String| {
            tracing::warn!(uri, file = %component.source().display(), why, "resource read failed");
            RpcError::internal(format!("Reading resource '{uri}' failed: {why}"))
        };
        match outcome.map_err(|error| mrtr::call_failure(error, failed))? {
            wit_resources::ReadOutcome::NotFound => Err(not_found(uri)),
            wit_resources::ReadOutcome::Complete(contents) if contents.is_empty() => {
                Err(failed("the component returned no contents".to_owned()))
            }
            wit_resources::ReadOutcome::Complete(contents) => self
                .reply_within(
                    &request.id,
                    ReadResult {
                        result_type: "complete",
                        contents: contents.iter().map(wire::resource_contents).collect(),
                        ttl_ms: self.settings.read_ttl_ms,
                        // Components cannot see who asks, but a read may still
                        // depend on the moment: never shared across callers.
                        cache_scope: "private",
                    },
                    component.max_output_bytes(),
                )
                .map_err(|error| failed(error.to_string())),
            wit_resources::ReadOutcome::InputRequired(input) => {
                let result = self.input_required_or_failure(
                    target,
                    meta,
                    &binding(),
                    number,
                    &input,
                    failed,
                )?;
                self.reply_within(&request.id, result, component.max_output_bytes())
                    .map_err(|error| failed(error.to_string()))
            }
        }
    }
}

/// Refuses a `uri` parameter longer than any URI a component may serve.
pub(super) fn check_uri_length(uri: &str) -> Result<(), RpcError> {
    if uri.len() > MAX_URI_LEN {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: uri is longer than {MAX_URI_LEN} bytes"
        )));
    }
    Ok(())
}

/// -32602 with `data.uri` (SEP-2164).
fn not_found(uri: &str) -> RpcError {
    RpcError::invalid_params(format!("Resource not found: {uri}")).with_data(json!({ "uri": uri }))
}

/// Whether an encoded `resources/read` error (the `error` object) is the
/// resource-not-found error, which older revisions coded differently.
pub(super) fn is_not_found(error: &Map<String, Value>) -> bool {
    error.get("code") == Some(&json!(jsonrpc::codes::INVALID_PARAMS))
        && error
            .get("data")
            .and_then(Value::as_object)
            .is_some_and(|data| data.contains_key("uri"))
}
