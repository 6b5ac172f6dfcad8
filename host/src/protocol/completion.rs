//! `completion/complete`: argument suggestions for prompts and resource
//! templates, from the component that serves them.
//!
//! The host checks the reference before any component runs: an unknown
//! prompt or template, or an argument it does not declare, is -32602. A
//! component without the `completions` export suggests nothing.

use serde_json::{Map, Value};

use super::answer::{Answer, Complete};
use super::catalog::Catalog;
use super::jsonrpc::{self, Request, RpcError};
use super::mrtr;
use super::outcome::Outcome;
use super::wire;
use crate::runtime::wit_completions::{self, CompletionTarget};
use crate::runtime::{CallError, Runtime};

/// Answers `completion/complete`.
pub(super) async fn complete(
    runtime: &Runtime,
    request: &Request,
    catalog: &Catalog,
) -> Result<Answer, RpcError> {
    let params = &request.params;
    let target = parse_ref(params.get("ref"))?;
    let argument = params
        .get("argument")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::invalid_params("Invalid params: missing argument {name, value}")
        })?;
    let (Some(argument_name), Some(argument_value)) = (
        argument.get("name").and_then(Value::as_str),
        argument.get("value").and_then(Value::as_str),
    ) else {
        return Err(RpcError::invalid_params(
            "Invalid params: argument needs a string name and a string value",
        ));
    };
    let context = parse_context(params.get("context"))?;
    let registry = &catalog.registry;
    let empty = wit_completions::Completion {
        values: Vec::new(),
        total: Some(0),
        has_more: false,
    };
    let declared = match &target {
        CompletionTarget::Prompt(name) => registry
            .find_prompt(name)
            .ok_or_else(|| super::access::unknown_prompt(name))?
            .item()
            .arguments
            .iter()
            .any(|a| a.name == argument_name),
        CompletionTarget::ResourceTemplate(uri) => {
            match registry.templates().iter().find(|t| &**t.key() == uri) {
                Some(template) => template.item().variables().any(|v| v == argument_name),
                // A listed resource has nothing to complete.
                None if registry.resolve_resource(uri).is_some() => {
                    return Ok(Answer::complete(&wire::complete_result(&empty)));
                }
                None => return Err(super::access::unknown_template(uri)),
            }
        }
    };
    if !declared {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: {} has no argument '{argument_name}'",
            describe(&target)
        )));
    }
    let Some(component) = registry.completer(&target) else {
        return Err(RpcError::invalid_params(format!(
            "Unknown {}",
            describe(&target)
        )));
    };
    let completion_request = wit_completions::CompletionRequest {
        target,
        argument_name: argument_name.to_owned(),
        argument_value: argument_value.to_owned(),
        context,
    };
    match component.complete(runtime, &completion_request).await {
        None => Ok(Answer::complete(&wire::complete_result(&empty))),
        Some(Ok(completion)) => jsonrpc::encode_within(
            &wire::complete_result(&completion),
            component.max_output_bytes(),
        )
        .map(|members| Answer::Complete(Complete::new(members)))
        .map_err(|error| {
            RpcError::internal(format!(
                "Completing {} failed: {}",
                describe(&completion_request.target),
                mrtr::output_failure(error)
            ))
            .with_outcome(Outcome::Failed)
        }),
        Some(Err(error @ CallError::Busy { .. })) => Err(mrtr::busy(&error)),
        Some(Err(error)) => {
            tracing::warn!(file = %component.source().display(), %error, "completion failed");
            Err(RpcError::internal(format!(
                "Completing {} failed: {error}",
                describe(&completion_request.target)
            ))
            .with_outcome(Outcome::Failed))
        }
    }
}

fn describe(target: &CompletionTarget) -> String {
    match target {
        CompletionTarget::Prompt(name) => format!("prompt '{name}'"),
        CompletionTarget::ResourceTemplate(uri) => format!("resource template '{uri}'"),
    }
}

/// `ref`: `{"type": "ref/prompt", "name"}` or `{"type": "ref/resource", "uri"}`.
fn parse_ref(value: Option<&Value>) -> Result<CompletionTarget, RpcError> {
    let object = value
        .and_then(Value::as_object)
        .ok_or_else(|| RpcError::invalid_params("Invalid params: missing ref"))?;
    let field = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                RpcError::invalid_params(format!("Invalid params: ref needs a string {name}"))
            })
    };
    match object.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => Ok(CompletionTarget::Prompt(field("name")?)),
        Some("ref/resource") => Ok(CompletionTarget::ResourceTemplate(field("uri")?)),
        _ => Err(RpcError::invalid_params(
            "Invalid params: ref.type must be \"ref/prompt\" or \"ref/resource\"",
        )),
    }
}

/// `context.arguments`: the values of the other arguments, all strings.
fn parse_context(value: Option<&Value>) -> Result<Vec<(String, String)>, RpcError> {
    let no_arguments = Map::new();
    let arguments = match value.and_then(|c| c.get("arguments")) {
        None | Some(Value::Null) => &no_arguments,
        Some(Value::Object(arguments)) => arguments,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: context.arguments must be an object of strings",
            ));
        }
    };
    arguments
        .iter()
        .map(|(key, value)| match value {
            Value::String(value) => Ok((key.clone(), value.clone())),
            _ => Err(RpcError::invalid_params(format!(
                "Invalid params: context argument '{key}' must be a string"
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refs_and_contexts_are_checked() {
        assert!(matches!(
            parse_ref(Some(&json!({"type": "ref/prompt", "name": "p"}))),
            Ok(CompletionTarget::Prompt(name)) if name == "p"
        ));
        assert!(matches!(
            parse_ref(Some(&json!({"type": "ref/resource", "uri": "a://{x}"}))),
            Ok(CompletionTarget::ResourceTemplate(uri)) if uri == "a://{x}"
        ));
        for bad in [
            json!(null),
            json!({"type": "ref/tool", "name": "t"}),
            json!({"type": "ref/prompt"}),
        ] {
            assert_eq!(parse_ref(Some(&bad)).unwrap_err().code, -32602, "{bad}");
        }
        assert_eq!(
            parse_context(Some(&json!({"arguments": {"a": "1"}}))).unwrap(),
            vec![("a".to_owned(), "1".to_owned())]
        );
        assert!(parse_context(Some(&json!({"arguments": {"a": 1}}))).is_err());
        assert!(parse_context(None).unwrap().is_empty());
    }
}
