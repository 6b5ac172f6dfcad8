//! How many items a guest's outcome holds, for the per-outcome limits.
//!
//! What a component returns is bounded three ways:
//!
//! - its size in the guest: the instance's memory cap bounds what the host
//!   copies out of it (the host's copy is at most a small multiple of it);
//! - its item counts, checked here as soon as the call returns: content
//!   blocks anywhere in it (a result's, prompt messages, resource contents,
//!   the messages of sampling requests) and input requests, against
//!   [`OutcomeLimits`];
//! - its encoded size: the protocol layer encodes the reply into a buffer
//!   that refuses to grow past the component's output limit, so the host
//!   never allocates a larger reply than the limit, whatever the outcome's
//!   shape (see `protocol::jsonrpc::encode_result_within`).

use super::bindings::{wit, wit_completions, wit_prompts, wit_resources};
use super::error::CallError;

/// The most items one outcome may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutcomeLimits {
    /// Content blocks (and resource contents), counted everywhere in the
    /// outcome.
    pub content_blocks: usize,
    /// Input requests of an `input_required` outcome.
    pub input_requests: usize,
}

/// The items of one outcome.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Content blocks and resource contents.
    pub content_blocks: usize,
    /// Input requests.
    pub input_requests: usize,
}

impl Counts {
    /// Refuses counts over `limits`, naming what is over.
    pub fn check(&self, limits: &OutcomeLimits) -> Result<(), CallError> {
        if self.content_blocks > limits.content_blocks {
            return Err(CallError::TooManyItems {
                what: "content blocks",
                limit: limits.content_blocks,
            });
        }
        if self.input_requests > limits.input_requests {
            return Err(CallError::TooManyItems {
                what: "input requests",
                limit: limits.input_requests,
            });
        }
        Ok(())
    }
}

/// A value returned by a guest whose items are counted.
pub trait Outcome {
    /// Adds the items of `self` to `counts`.
    fn count(&self, counts: &mut Counts);

    /// The items of `self`.
    fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        self.count(&mut counts);
        counts
    }
}

impl Outcome for wit::CallOutcome {
    fn count(&self, counts: &mut Counts) {
        match self {
            wit::CallOutcome::Complete(result) => counts.content_blocks += result.content.len(),
            wit::CallOutcome::InputRequired(required) => required.count(counts),
            wit::CallOutcome::ContinueAsTask(_) | wit::CallOutcome::Failed(_) => {}
        }
    }
}

impl Outcome for wit::InputRequired {
    fn count(&self, counts: &mut Counts) {
        counts.input_requests += self.requests.len();
        for (_, request) in &self.requests {
            if let wit::InputRequest::Sampling(sampling) = request {
                for message in &sampling.messages {
                    counts.content_blocks += message.content.len();
                    for content in &message.content {
                        if let wit::SamplingContent::ToolResult(result) = content {
                            counts.content_blocks += result.content.len();
                        }
                    }
                }
            }
        }
    }
}

impl Outcome for wit_prompts::PromptOutcome {
    fn count(&self, counts: &mut Counts) {
        match self {
            wit_prompts::PromptOutcome::Complete(result) => {
                counts.content_blocks += result.messages.len();
            }
            wit_prompts::PromptOutcome::InputRequired(required) => required.count(counts),
            wit_prompts::PromptOutcome::InvalidArguments(_) => {}
        }
    }
}

impl Outcome for wit_resources::ReadOutcome {
    fn count(&self, counts: &mut Counts) {
        match self {
            wit_resources::ReadOutcome::Complete(contents) => {
                counts.content_blocks += contents.len();
            }
            wit_resources::ReadOutcome::InputRequired(required) => required.count(counts),
            wit_resources::ReadOutcome::NotFound => {}
        }
    }
}

impl Outcome for wit_completions::Completion {
    /// Completions carry no content: the wire keeps at most 100 values
    /// and the encoded size is bounded like any other reply.
    fn count(&self, _counts: &mut Counts) {}
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

    fn sampling(blocks: usize) -> wit::InputRequest {
        wit::InputRequest::Sampling(wit::SamplingRequest {
            messages: vec![wit::SamplingMessage {
                role: wit::Role::User,
                content: (0..blocks)
                    .map(|_| {
                        wit::SamplingContent::Text(wit::TextContent {
                            text: String::new(),
                            annotations: None,
                        })
                    })
                    .collect(),
            }],
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            max_tokens: 1,
            stop_sequences: Vec::new(),
            metadata: None,
            tools: Vec::new(),
            tool_choice: None,
        })
    }

    #[test]
    fn every_block_and_request_counts() {
        let complete = wit::CallOutcome::Complete(wit::CallResult {
            content: vec![text(""), text("a"), text("")],
            structured_content: None,
            is_error: false,
        });
        assert_eq!(
            complete.counts(),
            Counts {
                content_blocks: 3,
                input_requests: 0
            }
        );
        let required = wit::CallOutcome::InputRequired(wit::InputRequired {
            requests: vec![
                ("a".into(), wit::InputRequest::Roots),
                ("b".into(), sampling(5)),
            ],
            state: None,
        });
        assert_eq!(
            required.counts(),
            Counts {
                content_blocks: 5,
                input_requests: 2
            }
        );
    }

    #[test]
    fn counts_over_the_limits_are_named() {
        let limits = OutcomeLimits {
            content_blocks: 2,
            input_requests: 1,
        };
        let blocks = Counts {
            content_blocks: 3,
            input_requests: 0,
        };
        let requests = Counts {
            content_blocks: 0,
            input_requests: 2,
        };
        assert!(
            blocks
                .check(&limits)
                .unwrap_err()
                .to_string()
                .contains("content blocks")
        );
        assert!(
            requests
                .check(&limits)
                .unwrap_err()
                .to_string()
                .contains("input requests")
        );
        assert!(Counts::default().check(&limits).is_ok());
    }
}
