//! How big a guest's answer is, for the output-size limit.
//!
//! The size of an outcome is the sum of the lengths of every string, byte
//! list and JSON text in it: the payload the guest chose to produce, before
//! any wire encoding (base64 adds a third to binary data; JSON escaping adds
//! a little to text). Fixed-size fields (numbers, flags, enums) do not
//! count. The guest's memory cap already bounds how much the host can be
//! made to copy out of a guest; this limit bounds what reaches the client.

use super::bindings::{wit, wit_completions, wit_prompts, wit_resources};

/// The payload size of a value returned by a guest.
pub trait OutputSize {
    /// Sum of the lengths of all strings, byte lists and JSON texts in `self`.
    fn output_size(&self) -> usize;
}

fn opt_str(s: &Option<String>) -> usize {
    s.as_ref().map_or(0, String::len)
}

fn all<T: OutputSize>(items: &[T]) -> usize {
    items.iter().map(OutputSize::output_size).sum()
}

impl<T: OutputSize> OutputSize for Option<T> {
    fn output_size(&self) -> usize {
        self.as_ref().map_or(0, OutputSize::output_size)
    }
}

impl OutputSize for wit::CallOutcome {
    fn output_size(&self) -> usize {
        match self {
            wit::CallOutcome::Complete(result) => result.output_size(),
            wit::CallOutcome::InputRequired(required) => required.output_size(),
        }
    }
}

impl OutputSize for wit::CallResult {
    fn output_size(&self) -> usize {
        all(&self.content) + opt_str(&self.structured_content)
    }
}

impl OutputSize for wit::Annotations {
    fn output_size(&self) -> usize {
        opt_str(&self.last_modified)
    }
}

impl OutputSize for wit::TextContent {
    fn output_size(&self) -> usize {
        self.text.len() + self.annotations.output_size()
    }
}

impl OutputSize for wit::MediaContent {
    fn output_size(&self) -> usize {
        self.data.len() + self.mime_type.len() + self.annotations.output_size()
    }
}

impl OutputSize for wit::ResourceLink {
    fn output_size(&self) -> usize {
        self.uri.len()
            + self.name.len()
            + opt_str(&self.title)
            + opt_str(&self.description)
            + opt_str(&self.mime_type)
            + self.annotations.output_size()
    }
}

impl OutputSize for wit::EmbeddedResource {
    fn output_size(&self) -> usize {
        self.contents.output_size() + self.annotations.output_size()
    }
}

impl OutputSize for wit::ContentBlock {
    fn output_size(&self) -> usize {
        match self {
            wit::ContentBlock::Text(c) => c.output_size(),
            wit::ContentBlock::Image(c) | wit::ContentBlock::Audio(c) => c.output_size(),
            wit::ContentBlock::ResourceLink(c) => c.output_size(),
            wit::ContentBlock::EmbeddedResource(c) => c.output_size(),
        }
    }
}

impl OutputSize for wit::InputRequired {
    fn output_size(&self) -> usize {
        let requests: usize = self
            .requests
            .iter()
            .map(|(key, request)| key.len() + request.output_size())
            .sum();
        requests + self.state.as_ref().map_or(0, Vec::len)
    }
}

impl OutputSize for wit::InputRequest {
    fn output_size(&self) -> usize {
        match self {
            wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(form)) => {
                form.message.len() + form.requested_schema.len()
            }
            wit::InputRequest::Elicitation(wit::ElicitationRequest::Url(url)) => {
                url.message.len() + url.url.len()
            }
            wit::InputRequest::Sampling(sampling) => sampling.output_size(),
            wit::InputRequest::Roots => 0,
        }
    }
}

impl OutputSize for wit::SamplingRequest {
    fn output_size(&self) -> usize {
        let hints = self.model_preferences.as_ref().map_or(0, |prefs| {
            prefs.hints.iter().map(|hint| opt_str(&hint.name)).sum()
        });
        all(&self.messages)
            + opt_str(&self.system_prompt)
            + hints
            + self.stop_sequences.iter().map(String::len).sum::<usize>()
            + opt_str(&self.metadata)
            + all(&self.tools)
    }
}

impl OutputSize for wit::SamplingMessage {
    fn output_size(&self) -> usize {
        all(&self.content)
    }
}

impl OutputSize for wit::SamplingContent {
    fn output_size(&self) -> usize {
        match self {
            wit::SamplingContent::Text(c) => c.output_size(),
            wit::SamplingContent::Image(c) | wit::SamplingContent::Audio(c) => c.output_size(),
            wit::SamplingContent::ToolUse(u) => u.id.len() + u.name.len() + u.input.len(),
            wit::SamplingContent::ToolResult(r) => {
                r.tool_use_id.len() + all(&r.content) + opt_str(&r.structured_content)
            }
        }
    }
}

impl OutputSize for wit::Tool {
    fn output_size(&self) -> usize {
        self.name.len()
            + opt_str(&self.title)
            + self.description.len()
            + self.input_schema.len()
            + opt_str(&self.output_schema)
            + self.annotations.as_ref().map_or(0, |a| opt_str(&a.title))
    }
}

impl OutputSize for wit_prompts::PromptOutcome {
    fn output_size(&self) -> usize {
        match self {
            wit_prompts::PromptOutcome::Complete(result) => {
                opt_str(&result.description)
                    + result
                        .messages
                        .iter()
                        .map(|m| m.content.output_size())
                        .sum::<usize>()
            }
            wit_prompts::PromptOutcome::InputRequired(required) => required.output_size(),
            wit_prompts::PromptOutcome::InvalidArguments(message) => message.len(),
        }
    }
}

impl OutputSize for wit::ResourceContents {
    fn output_size(&self) -> usize {
        let body = match &self.body {
            wit::ResourceBody::Text(text) => text.len(),
            wit::ResourceBody::Blob(blob) => blob.len(),
        };
        self.uri.len() + opt_str(&self.mime_type) + body
    }
}

impl OutputSize for wit_resources::ReadOutcome {
    fn output_size(&self) -> usize {
        match self {
            wit_resources::ReadOutcome::Complete(contents) => all(contents),
            wit_resources::ReadOutcome::InputRequired(required) => required.output_size(),
            wit_resources::ReadOutcome::NotFound => 0,
        }
    }
}

impl OutputSize for wit_completions::Completion {
    fn output_size(&self) -> usize {
        self.values.iter().map(String::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> wit::ContentBlock {
        wit::ContentBlock::Text(wit::TextContent {
            text: s.into(),
            annotations: None,
        })
    }

    #[test]
    fn counts_strings_bytes_and_json() {
        let outcome = wit::CallOutcome::Complete(wit::CallResult {
            content: vec![
                text("hello"),
                wit::ContentBlock::Image(wit::MediaContent {
                    data: vec![0; 100],
                    mime_type: "image/png".into(),
                    annotations: Some(wit::Annotations {
                        audience: vec![wit::Role::User],
                        priority: Some(1.0),
                        last_modified: Some("2026".into()),
                    }),
                }),
            ],
            structured_content: Some("{\"a\":1}".into()),
            is_error: false,
        });
        assert_eq!(outcome.output_size(), 5 + 100 + 9 + 4 + 7);

        let required = wit::CallOutcome::InputRequired(wit::InputRequired {
            requests: vec![(
                "key".into(),
                wit::InputRequest::Elicitation(wit::ElicitationRequest::Url(wit::UrlElicitation {
                    message: "go".into(),
                    url: "https://x".into(),
                })),
            )],
            state: Some(vec![1, 2, 3]),
        });
        assert_eq!(required.output_size(), 3 + 2 + 9 + 3);
    }
}
