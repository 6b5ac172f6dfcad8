//! Prompts: their descriptions, one rendering request, and its outcome.

use serde::de::DeserializeOwned;

use crate::inputs::rounds;
use serde_json::{Map, Value};

use crate::types::{
    ContentBlock, EmbeddedResource, InputRequired, Prompt, PromptArgument, PromptMessage,
    PromptOutcome, PromptResult, ResourceContents, ResourceLink, Role, Round,
};
use crate::{Error, Inputs};

/// One round of a `prompts/get`: the prompt name, its arguments, and what
/// this round knows.
///
/// Like a [`Call`](crate::Call), it dereferences to [`Inputs`]:
/// `request.elicitation("key")`, `request.state::<S>()`, `request.client()`
/// work exactly as for tools.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptRequest {
    name: String,
    arguments: Vec<(String, String)>,
    inputs: Inputs,
}

rounds!(PromptRequest, "request");

impl PromptRequest {
    /// A first-round request for prompt `name` without arguments, from a
    /// client that declared no capabilities. For unit tests; add arguments
    /// with [`PromptRequest::with_argument`].
    pub fn new(name: impl Into<String>) -> Self {
        Self::from_parts(name.into(), Vec::new(), Round::default())
    }

    /// The same request with argument `name` set to `value`. For unit tests.
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments.push((name.into(), value.into()));
        self
    }

    /// A request from its three parts, as the host passes them.
    pub fn from_parts(name: String, arguments: Vec<(String, String)>, round: Round) -> Self {
        Self {
            name,
            arguments,
            inputs: Inputs::new(round),
        }
    }

    /// The name of the prompt.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The argument called `name`, if the client gave it. Required arguments
    /// are always there: the host refuses requests that lack one.
    pub fn argument(&self, name: &str) -> Option<&str> {
        self.arguments
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every argument the client gave, in its order.
    pub fn arguments(&self) -> &[(String, String)] {
        &self.arguments
    }

    /// The arguments as a JSON object of strings, deserialized into `T`.
    ///
    /// The error reads `invalid arguments: <reason>` and converts into
    /// [`PromptOutcome::InvalidArguments`] (a -32602 error for the client).
    pub fn args<T: DeserializeOwned>(&self) -> Result<T, Error> {
        let object: serde_json::Map<String, serde_json::Value> = self
            .arguments
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        serde_json::from_value(serde_json::Value::Object(object))
            .map_err(|err| Error::new(format!("invalid arguments: {err}")))
    }
}

impl Prompt {
    /// A prompt called `name` (1 to 64 characters of `A-Z a-z 0-9 _ - .`,
    /// unique across the server) that `description` explains. It takes no
    /// arguments until [`Prompt::argument`] or [`Prompt::required_argument`]
    /// add some.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            meta: None,
        }
    }

    /// Sets a human-readable name for display.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an optional argument.
    pub fn argument(self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.with_argument(PromptArgument::new(name).description(description))
    }

    /// Adds a required argument (the host refuses a request without it).
    pub fn required_argument(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        self.with_argument(
            PromptArgument::new(name)
                .description(description)
                .required(),
        )
    }

    /// Adds an argument built with [`PromptArgument::new`].
    pub fn with_argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }

    /// Sets its `_meta`, a JSON object sent as it is; replaces any set
    /// before.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(Value::Object(meta).to_string());
        self
    }
}

impl PromptArgument {
    /// An optional argument called `name`, without description.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            required: false,
        }
    }

    /// Sets a human-readable name for display.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Makes the argument required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
}

impl PromptMessage {
    /// A message from the user: text (`&str`, `String`) or any
    /// [`ContentBlock`], e.g. [`ContentBlock::image`] or an
    /// [`EmbeddedResource`].
    pub fn user(content: impl Into<ContentBlock>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// A message from the assistant (the model).
    pub fn assistant(content: impl Into<ContentBlock>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

impl Default for PromptResult {
    fn default() -> Self {
        Self::new()
    }
}

impl PromptResult {
    /// No messages yet; add them with [`PromptResult::user`],
    /// [`PromptResult::assistant`] or [`PromptResult::message`].
    pub fn new() -> Self {
        Self {
            description: None,
            messages: Vec::new(),
        }
    }

    /// Sets the description of this rendering.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds a user message (text or any content block).
    pub fn user(self, content: impl Into<ContentBlock>) -> Self {
        self.message(PromptMessage::user(content))
    }

    /// Adds an assistant message (text or any content block).
    pub fn assistant(self, content: impl Into<ContentBlock>) -> Self {
        self.message(PromptMessage::assistant(content))
    }

    /// Adds a message.
    pub fn message(mut self, message: PromptMessage) -> Self {
        self.messages.push(message);
        self
    }

    /// The text blocks of every message, joined by newlines. Handy in tests.
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self
            .messages
            .iter()
            .filter_map(|message| match &message.content {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

impl PromptOutcome {
    /// Completes with one user message of text.
    pub fn text(text: impl Into<String>) -> Self {
        let text: String = text.into();
        PromptResult::new().user(text).into()
    }

    /// Refuses the arguments: the client gets a -32602 error with `message`.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::InvalidArguments(message.into())
    }

    /// Refuses a prompt this component does not have.
    pub fn unknown_prompt(name: &str) -> Self {
        Self::invalid_arguments(format!("unknown prompt `{name}`"))
    }

    /// The rendered prompt, if this outcome completes the request.
    pub fn result(&self) -> Option<&PromptResult> {
        match self {
            Self::Complete(result) => Some(result),
            _ => None,
        }
    }

    /// What the prompt asks for, if this outcome asks for input.
    pub fn input_required(&self) -> Option<&InputRequired> {
        match self {
            Self::InputRequired(asked) => Some(asked),
            _ => None,
        }
    }
}

impl From<PromptResult> for PromptOutcome {
    fn from(result: PromptResult) -> Self {
        Self::Complete(result)
    }
}

impl From<InputRequired> for PromptOutcome {
    fn from(asked: InputRequired) -> Self {
        Self::InputRequired(asked)
    }
}

impl From<Error> for PromptOutcome {
    /// [`PromptOutcome::InvalidArguments`] with the error's message: a
    /// prompt has no `is_error` result, so the client gets a -32602 error.
    fn from(error: Error) -> Self {
        Self::invalid_arguments(error.message())
    }
}

impl<T: Into<PromptOutcome>, E: Into<PromptOutcome>> From<Result<T, E>> for PromptOutcome {
    /// Either side of the result, so that a prompt function may return
    /// `Result<PromptOutcome, Error>` and be dispatched with `.into()`.
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(done) => done.into(),
            Err(failed) => failed.into(),
        }
    }
}

// Content blocks from the things a prompt message usually carries.

impl From<&str> for ContentBlock {
    /// A text block.
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for ContentBlock {
    /// A text block.
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(resource: EmbeddedResource) -> Self {
        Self::EmbeddedResource(resource)
    }
}

impl From<ResourceContents> for ContentBlock {
    /// An embedded resource without annotations.
    fn from(contents: ResourceContents) -> Self {
        Self::EmbeddedResource(contents.into())
    }
}

impl From<ResourceLink> for ContentBlock {
    fn from(link: ResourceLink) -> Self {
        Self::ResourceLink(link)
    }
}
