//! The prompts of the fixture, one of them multi-round.

use airlock_guest::{
    ContentBlock, InputRequired, Prompt, PromptOutcome, PromptRequest, PromptResult,
    ResourceContents,
};
use serde::Deserialize;

use crate::media;
use crate::mrtr::string_form;

/// Every prompt, each with a description.
pub fn list() -> Vec<Prompt> {
    vec![
        Prompt::new("test_simple_prompt", "A simple prompt without arguments")
            .title("Simple Test Prompt"),
        Prompt::new(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
        )
        .title("Prompt With Arguments")
        .required_argument("arg1", "First test argument")
        .required_argument("arg2", "Second test argument"),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that includes an embedded resource",
        )
        .title("Prompt With Embedded Resource")
        .required_argument("resourceUri", "URI of the resource to embed"),
        Prompt::new("test_prompt_with_image", "A prompt that includes an image")
            .title("Prompt With Image"),
        Prompt::new(
            "test_input_required_result_prompt",
            "A prompt that first asks the user what context to use (MRTR)",
        )
        .title("Prompt With Input Required"),
    ]
}

/// Renders one round of a prompt.
pub fn get(request: &PromptRequest) -> PromptOutcome {
    match request.name() {
        "test_simple_prompt" => PromptOutcome::text("This is a simple prompt for testing."),
        "test_prompt_with_arguments" => {
            let arg1 = request.argument("arg1").unwrap_or_default();
            let arg2 = request.argument("arg2").unwrap_or_default();
            PromptOutcome::text(format!(
                "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
            ))
        }
        "test_prompt_with_embedded_resource" => match request.argument("resourceUri") {
            Some(uri) => PromptResult::new()
                .user(
                    ResourceContents::text(uri, "Embedded resource content for testing.")
                        .mime_type("text/plain"),
                )
                .user("Please process the embedded resource above.")
                .into(),
            None => PromptOutcome::invalid_arguments("resourceUri is required"),
        },
        "test_prompt_with_image" => PromptResult::new()
            .user(ContentBlock::image(media::png(), "image/png"))
            .user("Please analyze the image above.")
            .into(),
        "test_input_required_result_prompt" => with_context(request),
        other => PromptOutcome::unknown_prompt(other),
    }
}

#[derive(Deserialize)]
struct ContextForm {
    context: String,
}

/// `test_input_required_result_prompt`: asks for the context under
/// `user_context` until an accepted form carries one.
fn with_context(request: &PromptRequest) -> PromptOutcome {
    let context = request
        .elicitation("user_context")
        .and_then(|answer| answer.accepted_content::<ContextForm>());
    match context {
        Some(ContextForm { context }) => {
            PromptOutcome::text(format!("Prompt with context: {context}"))
        }
        None => InputRequired::new()
            .elicit_form(
                "user_context",
                "What context should the prompt use?",
                string_form("context"),
            )
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Everything;
    use airlock_guest::types::{ElicitationRequest, InputRequest, ResourceBody, Role};
    use airlock_guest::{ElicitationResponse, Prompts, json};

    fn complete(request: PromptRequest) -> PromptResult {
        <Everything as Prompts>::get(request)
            .result()
            .cloned()
            .expect("complete")
    }

    #[test]
    fn prompts_are_listed_with_descriptions_and_arguments() {
        let prompts = <Everything as Prompts>::list();
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "test_simple_prompt",
                "test_prompt_with_arguments",
                "test_prompt_with_embedded_resource",
                "test_prompt_with_image",
                "test_input_required_result_prompt",
            ]
        );
        assert!(prompts.iter().all(|p| !p.description.is_empty()));
        let with_args = &prompts[1];
        let args: Vec<(&str, bool)> = with_args
            .arguments
            .iter()
            .map(|a| (a.name.as_str(), a.required))
            .collect();
        assert_eq!(args, [("arg1", true), ("arg2", true)]);
        assert!(prompts[0].arguments.is_empty());
    }

    #[test]
    fn simple_and_argument_prompts() {
        let simple = complete(PromptRequest::new("test_simple_prompt"));
        assert_eq!(simple.messages.len(), 1);
        assert_eq!(simple.messages[0].role, Role::User);
        assert_eq!(
            simple.text_content(),
            "This is a simple prompt for testing."
        );

        let with_args = complete(
            PromptRequest::new("test_prompt_with_arguments")
                .with_argument("arg1", "testValue1")
                .with_argument("arg2", "testValue2"),
        );
        assert_eq!(
            with_args.text_content(),
            "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
        );
    }

    #[test]
    fn embedded_resource_and_image_prompts() {
        let embedded = complete(
            PromptRequest::new("test_prompt_with_embedded_resource")
                .with_argument("resourceUri", "test://example-resource"),
        );
        assert_eq!(embedded.messages.len(), 2);
        match &embedded.messages[0].content {
            ContentBlock::EmbeddedResource(resource) => {
                assert_eq!(resource.contents.uri, "test://example-resource");
                assert_eq!(resource.contents.mime_type.as_deref(), Some("text/plain"));
                assert_eq!(
                    resource.contents.body,
                    ResourceBody::Text("Embedded resource content for testing.".into())
                );
            }
            other => panic!("unexpected content {other:?}"),
        }
        assert_eq!(
            embedded.text_content(),
            "Please process the embedded resource above."
        );

        let image = complete(PromptRequest::new("test_prompt_with_image"));
        assert_eq!(
            image.messages[0].content,
            ContentBlock::image(media::png(), "image/png")
        );
        assert_eq!(image.text_content(), "Please analyze the image above.");
    }

    #[test]
    fn input_required_prompt_takes_two_rounds() {
        let first = PromptRequest::new("test_input_required_result_prompt");
        let outcome = <Everything as Prompts>::get(first.clone());
        let asked = outcome.input_required().expect("asks for context");
        match asked.requested("user_context") {
            Some(InputRequest::Elicitation(ElicitationRequest::Form(form))) => {
                assert_eq!(form.message, "What context should the prompt use?");
            }
            other => panic!("unexpected request {other:?}"),
        }

        let answer = ElicitationResponse::accept(json!({"context": "test context"}));
        let second = first.retry(asked, [("user_context", answer.into())]);
        assert_eq!(second.round(), 2);
        assert_eq!(
            complete(second).text_content(),
            "Prompt with context: test context"
        );

        let declined = first.retry(
            asked,
            [("user_context", ElicitationResponse::decline().into())],
        );
        assert!(
            <Everything as Prompts>::get(declined)
                .input_required()
                .is_some()
        );
    }

    #[test]
    fn unknown_prompt_is_invalid() {
        assert_eq!(
            get(&PromptRequest::new("nope")),
            PromptOutcome::InvalidArguments("unknown prompt `nope`".into())
        );
    }
}
